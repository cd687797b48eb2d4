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

/// A store as format 1 left it: sled alone (no write-ahead log) under a `k1s-store 1` marker.
async fn format_1_store(dir: &std::path::Path, keys: usize) {
    {
        let s = open(dir).unwrap();
        for i in 0..keys {
            s.create(&format!("/f1/{i}"), Bytes::from("v"))
                .await
                .unwrap();
        }
        s.close();
    }
    std::fs::remove_dir_all(dir.join("wal")).unwrap();
    std::fs::write(dir.join("FORMAT"), b"k1s-store 1\n").unwrap();
}

#[tokio::test]
async fn format_probe_reads_the_marker_and_the_lock_without_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let err = k1s_storage::store_format(&missing).unwrap_err();
    assert!(err.to_string().contains("no k1s store"), "{err}");
    assert!(!missing.exists());
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("x.db"), b"x").unwrap();
    let err = k1s_storage::store_format(&foreign).unwrap_err();
    assert!(err.to_string().contains("not a k1s store"), "{err}");
    let newer = tmp.path().join("newer");
    std::fs::create_dir(&newer).unwrap();
    std::fs::write(newer.join("FORMAT"), b"k1s-store 99\n").unwrap();
    let err = k1s_storage::store_format(&newer).unwrap_err();
    assert!(err.to_string().contains("newer k1s"), "{err}");

    let dir = tmp.path().join("old");
    format_1_store(&dir, 3).await;
    assert_eq!(k1s_storage::store_format(&dir).unwrap(), 1);
    assert!(!k1s_storage::store_in_use(&dir).unwrap());
    assert!(!dir.join("wal").exists());
    {
        let s = open(&dir).unwrap();
        // The engine's open upgrades it, and holds the lock the probe sees.
        assert_eq!(
            k1s_storage::store_format(&dir).unwrap(),
            k1s_storage::FORMAT_VERSION
        );
        assert!(k1s_storage::store_in_use(&dir).unwrap());
        s.close();
    }
    assert!(!k1s_storage::store_in_use(&dir).unwrap());
}

#[tokio::test]
async fn read_only_open_reads_an_old_store_and_leaves_its_format() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    format_1_store(&dir, 5).await;
    {
        let s = LocalStore::open_read_only(StoreConfig::new(Backend::Sled(dir.clone()))).unwrap();
        assert_eq!(s.current_revision(), Revision(5));
        assert_eq!(s.count("/f1/").await.unwrap(), 5);
        assert!(s.create("/f1/new", Bytes::from("v")).await.is_err());
        s.close();
    }
    assert_eq!(k1s_storage::store_format(&dir).unwrap(), 1);
    assert!(!dir.join("wal").exists());
}
