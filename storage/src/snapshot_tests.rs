//! Unit tests of snapshots: round trip with revisions kept, consistency under writes, and
//! refusal of damaged, foreign or misplaced input.

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;

use super::*;
use crate::{Backend, LocalStore, StoreConfig};

fn memory() -> LocalStore {
    LocalStore::open(StoreConfig::new(Backend::Memory)).unwrap()
}

async fn save(store: &LocalStore) -> Vec<u8> {
    let store: Arc<dyn Store> = Arc::new(store.clone());
    let chunks: Vec<Bytes> = save_stream(store)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    chunks.concat()
}

async fn all(store: &dyn Store, at: Option<Revision>) -> Vec<KeyValue> {
    store
        .list(
            "/",
            ListOptions {
                revision: at,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .items
}

/// A store with more than a page of keys, some updated and some deleted.
async fn filled() -> LocalStore {
    let store = memory();
    for i in 0..1200 {
        store
            .create(&format!("/registry/k/{i:05}"), Bytes::from(format!("v{i}")))
            .await
            .unwrap();
    }
    for i in (0..1200).step_by(7) {
        let key = format!("/registry/k/{i:05}");
        store
            .update(&key, Bytes::from("changed"), None)
            .await
            .unwrap();
    }
    for i in (0..1200).step_by(11) {
        store
            .delete(&format!("/registry/k/{i:05}"), None)
            .await
            .unwrap();
    }
    store
}

#[tokio::test]
async fn round_trip_keeps_keys_values_and_revisions() {
    let store = filled().await;
    let bytes = save(&store).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.db");
    std::fs::write(&file, &bytes).unwrap();
    let info = verify(&file).unwrap();
    assert_eq!(info.revision, store.current_revision());
    let data = dir.path().join("data");
    assert_eq!(restore(&file, &data).unwrap(), info);
    assert!(!data.join(".store.restoring").exists());

    let restored = LocalStore::open(StoreConfig::new(Backend::Disk(data.join("store")))).unwrap();
    assert_eq!(restored.current_revision(), info.revision);
    let want = all(&store, None).await;
    assert_eq!(info.keys, want.len() as u64);
    assert_eq!(all(&restored, None).await, want);
    // Later writes continue after the snapshot's revision.
    let kv = restored
        .create("/registry/k/new", Bytes::from("x"))
        .await
        .unwrap();
    assert_eq!(kv.mod_revision, Revision(info.revision.0 + 1));
    // History before the snapshot is gone: a watch from before it is the compacted error.
    let old = Revision(info.revision.0 - 5);
    assert!(matches!(
        restored.watch("/", old).await.err(),
        Some(Error::Compacted { .. })
    ));
}

#[tokio::test]
async fn save_under_writes_is_the_list_at_its_revision() {
    let store = filled().await;
    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            for i in 0..400 {
                store
                    .create(&format!("/registry/w/{i:05}"), Bytes::from("w"))
                    .await
                    .unwrap();
            }
        })
    };
    let bytes = save(&store).await;
    writer.await.unwrap();
    let mut reader = SnapshotReader::new(bytes.as_slice()).unwrap();
    let mut got = Vec::new();
    while let Some(kv) = reader.next_record().unwrap() {
        got.push(kv);
    }
    assert_eq!(got, all(&store, Some(reader.revision())).await);
}

#[tokio::test]
async fn damaged_foreign_or_misplaced_input_is_refused_untouched() {
    let store = filled().await;
    let good = save(&store).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snap.db");
    let data = dir.path().join("data");
    let refuse = |bytes: &[u8], why: &str| {
        std::fs::write(&file, bytes).unwrap();
        let err = restore(&file, &data).expect_err(why);
        assert!(!data.exists(), "{why}: the data dir was created ({err})");
        err.to_string()
    };
    for at in [0, 9, 30, good.len() / 2, good.len() - 40, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        let msg = refuse(&bad, &format!("byte {at} flipped"));
        assert!(msg.contains("snapshot"), "{msg}");
    }
    for len in [
        0,
        5,
        20,
        21,
        good.len() / 3,
        good.len() - 33,
        good.len() - 1,
    ] {
        let msg = refuse(&good[..len], &format!("cut at {len}"));
        assert!(
            msg.contains("truncated") || msg.contains("shorter than its header"),
            "{msg}"
        );
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(refuse(&longer, "trailing byte").contains("follow its checksum"));
    assert!(refuse(b"SQLite format 3\0 and more bytes", "foreign").contains("not a k1s snapshot"));

    // A data dir that already holds a store is refused and left as it was.
    std::fs::write(&file, &good).unwrap();
    restore(&file, &data).unwrap();
    let before = std::fs::read_dir(data.join("store")).unwrap().count();
    let err = restore(&file, &data).unwrap_err().to_string();
    assert!(err.contains("already holds a store"), "{err}");
    assert_eq!(
        std::fs::read_dir(data.join("store")).unwrap().count(),
        before
    );
}
