//! sled-only properties: reopening keeps data and revisions, the format marker, corruption reports.
#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use k1s_storage::{Backend, Error, ListOptions, LocalStore, Revision, Store, StoreConfig};

fn open(dir: &std::path::Path) -> Result<LocalStore, Error> {
    LocalStore::open(StoreConfig::new(Backend::Sled(dir.to_path_buf())))
}

#[tokio::test]
async fn reopen_keeps_data_history_and_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    {
        let s = open(&dir).unwrap();
        for i in 0..10 {
            s.create(&format!("/a/{i}"), Bytes::from("v"))
                .await
                .unwrap();
        }
        s.delete("/a/3", None).await.unwrap();
        s.close();
    }
    let s = open(&dir).unwrap();
    assert_eq!(s.current_revision(), Revision(11));
    assert_eq!(
        s.list("/a/", ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        9
    );
    // History from before the restart is still watchable.
    let mut w = s.watch("/a/", Revision(0)).await.unwrap();
    for want in 1..=11 {
        assert_eq!(w.next().await.unwrap().unwrap().revision, Revision(want));
    }
    let kv = s.create("/a/new", Bytes::from("v")).await.unwrap();
    assert_eq!(kv.mod_revision, Revision(12));
}

#[test]
fn foreign_directory_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("somebody-elses.db"), b"data").unwrap();
    let err = open(tmp.path()).err().unwrap();
    assert!(
        matches!(err, Error::Format(ref m) if m.contains("not a k1s store")),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("somebody-elses.db")]);
}

#[test]
fn newer_format_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("FORMAT"), b"k1s-store 99\n").unwrap();
    let err = open(tmp.path()).err().unwrap();
    assert!(
        matches!(err, Error::Format(ref m) if m.contains("newer")),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    std::fs::write(tmp.path().join("FORMAT"), b"garbage").unwrap();
    assert!(matches!(open(tmp.path()), Err(Error::Format(_))));
}

#[tokio::test]
async fn format_1_is_upgraded_and_a_clean_close_leaves_no_log_to_replay() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("FORMAT"), b"k1s-store 1\n").unwrap();
    {
        let s = open(tmp.path()).unwrap();
        s.create("/u/a", Bytes::from("1")).await.unwrap();
        s.close();
    }
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("FORMAT")).unwrap(),
        format!("k1s-store {}\n", k1s_storage::FORMAT_VERSION)
    );
    // Only a prepared spare may remain in the log directory after a clean close.
    let logs: Vec<_> = std::fs::read_dir(tmp.path().join("wal"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert!(logs.is_empty(), "{logs:?}");
    let s = open(tmp.path()).unwrap();
    assert_eq!(
        s.get("/u/a").await.unwrap().unwrap().value,
        Bytes::from("1")
    );
}

#[tokio::test]
async fn corrupt_value_is_reported_not_panicked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    {
        let s = open(&dir).unwrap();
        s.create("/x/good", Bytes::from("fine")).await.unwrap();
        s.create("/x/bad", Bytes::from("soon broken"))
            .await
            .unwrap();
        s.close();
    }
    {
        // Damage one stored record behind the store's back.
        let db = sled::open(dir.join("sled")).unwrap();
        let mut raw = db.get(b"d/x/bad").unwrap().unwrap().to_vec();
        let last = raw.len() - 1;
        raw[last] ^= 0xff;
        db.insert(b"d/x/bad", raw).unwrap();
        db.insert(b"d/x/short", &b"\x01\x02"[..]).unwrap();
        db.flush().unwrap();
    }
    let s = open(&dir).unwrap();
    assert_eq!(&s.get("/x/good").await.unwrap().unwrap().value[..], b"fine");
    assert!(matches!(s.get("/x/bad").await, Err(Error::Corrupt(ref m)) if m.contains("/x/bad")));
    assert!(matches!(s.get("/x/short").await, Err(Error::Corrupt(_))));
    assert!(matches!(
        s.list("/x/", ListOptions::default()).await,
        Err(Error::Corrupt(_))
    ));
    assert!(matches!(
        s.update("/x/bad", Bytes::from("v"), None).await,
        Err(Error::Corrupt(_))
    ));
}
