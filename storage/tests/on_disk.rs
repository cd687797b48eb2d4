//! Disk-store properties: reopening keeps data and revisions, the format marker and its
//! upgrades, corruption reports.
#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use k1s_storage::{Backend, Error, ListOptions, LocalStore, Revision, Store, StoreConfig};

/// Runs `open` again while it is refused the store's file lock, for up to 10 s: a `sled::Db`
/// dropped a moment ago may still hold it (sled's flusher thread lets go on its next wake-up).
fn patiently<T, E: std::fmt::Display>(open: impl Fn() -> Result<T, E>) -> Result<T, E> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match open() {
            Err(e)
                if e.to_string().contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

fn open(dir: &std::path::Path) -> Result<LocalStore, Error> {
    patiently(|| LocalStore::open(StoreConfig::new(Backend::Disk(dir.to_path_buf()))))
}

/// Opens a new sled store (format 2) in `dir`: new stores are image stores, but a format
/// marker in an empty directory names the engine.
fn open_new_sled(dir: &std::path::Path) -> LocalStore {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("FORMAT"), b"k1s-store 2\n").unwrap();
    open(dir).unwrap()
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
    // Opening keeps the engine: a sled store gains the log (format 2); only `upgrade_store`
    // converts it to the image engine.
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("FORMAT")).unwrap(),
        "k1s-store 2\n"
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
        let s = open_new_sled(&dir);
        s.create("/x/good", Bytes::from("fine")).await.unwrap();
        s.create("/x/bad", Bytes::from("soon broken"))
            .await
            .unwrap();
        s.close();
    }
    {
        // Damage one stored record behind the store's back.
        let db = patiently(|| sled::open(dir.join("sled"))).unwrap();
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
        let s = open_new_sled(dir);
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
        // sled's open gives it a log (format 2), and holds the lock the probe sees.
        assert_eq!(k1s_storage::store_format(&dir).unwrap(), 2);
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
        let s = LocalStore::open_read_only(StoreConfig::new(Backend::Disk(dir.clone()))).unwrap();
        assert_eq!(s.current_revision(), Revision(5));
        assert_eq!(s.count("/f1/").await.unwrap(), 5);
        assert!(s.create("/f1/new", Bytes::from("v")).await.is_err());
        s.close();
    }
    assert_eq!(k1s_storage::store_format(&dir).unwrap(), 1);
    assert!(!dir.join("wal").exists());
}

#[tokio::test]
async fn a_sled_store_is_upgraded_to_an_image_store_with_its_history() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    {
        let s = open_new_sled(&dir);
        for i in 0..20 {
            s.create(&format!("/u/{i}"), Bytes::from(format!("v{i}")))
                .await
                .unwrap();
        }
        s.update("/u/0", Bytes::from("changed"), None)
            .await
            .unwrap();
        s.delete("/u/1", None).await.unwrap();
        s.close();
    }
    let config = StoreConfig::new(Backend::Disk(dir.clone()));
    k1s_storage::upgrade_store(&config).unwrap();
    assert_eq!(k1s_storage::store_format(&dir).unwrap(), 4);
    assert!(!dir.join("sled").exists());
    // A second upgrade has nothing to do.
    k1s_storage::upgrade_store(&config).unwrap();
    let s = open(&dir).unwrap();
    assert_eq!(s.current_revision(), Revision(22));
    assert_eq!(s.count("/u/").await.unwrap(), 19);
    assert_eq!(&s.get("/u/0").await.unwrap().unwrap().value[..], b"changed");
    let mut w = s.watch("/u/", Revision(0)).await.unwrap();
    for want in 1..=22 {
        assert_eq!(w.next().await.unwrap().unwrap().revision, Revision(want));
    }
}

/// A format-3 image store (a log of plain records only) opens as it is and is marked format 4
/// before its log may hold a compressed record, so older builds refuse it from then on.
#[tokio::test]
async fn a_format_3_store_opens_and_becomes_format_4() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let value = Bytes::from("x".repeat(600));
    {
        let s = open(&dir).unwrap();
        s.create("/f/a", value.clone()).await.unwrap();
        drop(s); // no clean close: the record is replayed from the log
    }
    std::fs::write(dir.join("FORMAT"), b"k1s-store 3\n").unwrap();
    {
        let s = open(&dir).unwrap();
        assert_eq!(k1s_storage::store_format(&dir).unwrap(), 4);
        assert_eq!(s.get("/f/a").await.unwrap().unwrap().value, value);
        s.create("/f/b", value.clone()).await.unwrap();
    }
    let s = open(&dir).unwrap();
    assert_eq!(s.count("/f/").await.unwrap(), 2);
}

#[tokio::test]
async fn a_damaged_image_is_refused_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    {
        let s = open(&dir).unwrap();
        s.create("/x/a", Bytes::from("value")).await.unwrap();
        s.close();
    }
    let image = std::fs::read_dir(dir.join("image"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "image"))
        .unwrap();
    let mut data = std::fs::read(&image).unwrap();
    let middle = data.len() / 2;
    data[middle] ^= 0x20;
    std::fs::write(&image, &data).unwrap();
    let err = open(&dir).err().unwrap();
    assert!(
        matches!(err, Error::Corrupt(ref m) if m.contains("checksum")),
        "{err}"
    );
}

/// A kill -9 while sled writes a snapshot leaves a partial `snap.<lsn>.generating`, which sled
/// 0.34 would read on the next open and refuse as corrupt: the store must open without it.
#[tokio::test]
async fn a_snapshot_sled_did_not_finish_is_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    {
        let s = open_new_sled(&dir);
        for i in 0..20 {
            s.create(&format!("/a/{i}"), Bytes::from("v"))
                .await
                .unwrap();
        }
        s.close();
    }
    let partial = dir.join("sled/snap.FFFFFFFFFFFFFFFF.generating");
    std::fs::write(&partial, b"half of a snapshot, cut by the kill").unwrap();
    let s = open(&dir).unwrap();
    assert!(!partial.exists());
    assert_eq!(s.current_revision(), Revision(20));
    let all = s.list("/a/", ListOptions::default()).await.unwrap();
    assert_eq!(all.items.len(), 20);
}
