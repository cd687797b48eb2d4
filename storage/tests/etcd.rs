//! What is etcd's own in the etcd backend (the shared contract is in `conformance.rs`): watches
//! that survive etcd going away, one history shared by several stores (servers), compaction seen
//! by all of them, continue tokens carrying etcd's revision.
#![allow(clippy::unwrap_used)]

mod etcd_support;

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use etcd_support::EtcdProcess;
use k1s_storage::{Error, EventKind, ListOptions, Revision, Store, WatchStream};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn next(w: &mut WatchStream) -> (EventKind, u64, String) {
    let ev = tokio::time::timeout(Duration::from_secs(20), w.next())
        .await
        .expect("watch stalled")
        .expect("watch ended")
        .unwrap();
    (ev.kind, ev.revision.0, ev.key.clone())
}

/// Creates `key`, retrying while etcd comes back; a retry that finds the key there means the
/// first attempt committed.
async fn create_retrying(s: &dyn Store, key: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match s.create(key, b("v")).await {
            Ok(_) | Err(Error::AlreadyExists { .. }) => return,
            Err(e) => {
                assert!(tokio::time::Instant::now() < deadline, "create {key}: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_survives_etcd_restarts_without_loss_or_duplicates() {
    let mut etcd = EtcdProcess::start().await;
    let s = etcd.store().await;
    let mut w = s.watch("/r/", s.current_revision()).await.unwrap();
    for i in 0..20 {
        s.create(&format!("/r/a{i:02}"), b("v")).await.unwrap();
    }
    // Read part of it, then kill etcd under the watch (its stream breaks) and bring it back.
    let mut got = Vec::new();
    for _ in 0..10 {
        got.push(next(&mut w).await);
    }
    etcd.restart().await;
    for i in 0..20 {
        create_retrying(&s, &format!("/r/b{i:02}")).await;
    }
    while got.len() < 40 {
        got.push(next(&mut w).await);
    }
    let revs: Vec<u64> = got.iter().map(|e| e.1).collect();
    assert!(revs.windows(2).all(|p| p[0] < p[1]), "{revs:?}");
    let keys: Vec<&str> = got.iter().map(|e| e.2.as_str()).collect();
    let want: Vec<String> = (0..20)
        .map(|i| format!("/r/a{i:02}"))
        .chain((0..20).map(|i| format!("/r/b{i:02}")))
        .collect();
    assert_eq!(keys, want);
    assert!(got.iter().all(|e| e.0 == EventKind::Created));
    // Nothing more (no duplicate replay after the resume).
    assert!(
        tokio::time::timeout(Duration::from_millis(500), w.next())
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_on_one_etcd_share_history_conflicts_and_compaction() {
    let etcd = EtcdProcess::start().await;
    let a = etcd.store().await;
    let c = etcd.store().await;
    let start = c.current_revision();
    let mut watch_on_c = c.watch("/s/", start).await.unwrap();
    // A write through one server is a watch event on the other, at the same revision.
    let created = a.create("/s/k", b("1")).await.unwrap();
    assert_eq!(
        next(&mut watch_on_c).await,
        (EventKind::Created, created.mod_revision.0, "/s/k".into())
    );
    // Conflicts hold across servers: c updates from what a wrote; a's stale write fails.
    let updated = c
        .update("/s/k", b("2"), Some(created.mod_revision))
        .await
        .unwrap();
    assert_eq!(updated.create_revision, created.create_revision);
    match a.update("/s/k", b("3"), Some(created.mod_revision)).await {
        Err(Error::Conflict { actual, .. }) => assert_eq!(actual, updated.mod_revision),
        other => panic!("expected a conflict, got {other:?}"),
    }
    for i in 0..10 {
        a.create(&format!("/s/n{i}"), b("v")).await.unwrap();
    }
    let page = c
        .list(
            "/s/",
            ListOptions {
                limit: 3,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let token = page.continue_token.clone().unwrap();
    // The token carries etcd's revision (the one a raw etcd client reads now).
    let mut raw = etcd_client::Client::connect([&etcd.client_url], None)
        .await
        .unwrap();
    let etcd_rev = raw
        .get("/s/k", None)
        .await
        .unwrap()
        .header()
        .unwrap()
        .revision() as u64;
    assert_eq!(page.revision.0, etcd_rev);
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(json["rv"], etcd_rev);
    // One server compacts; the other gets the distinct errors (the API's 410) for history.
    a.create("/s/late", b("v")).await.unwrap();
    a.compact(Revision(etcd_rev + 1)).await.unwrap();
    assert!(matches!(
        c.watch("/s/", start).await,
        Err(Error::Compacted { .. })
    ));
    assert!(matches!(
        c.list(
            "/s/",
            ListOptions {
                revision: Some(start),
                ..Default::default()
            }
        )
        .await,
        Err(Error::Compacted { .. })
    ));
    assert!(matches!(
        c.list(
            "/s/",
            ListOptions {
                limit: 3,
                continue_token: Some(token),
                ..Default::default()
            }
        )
        .await,
        Err(Error::ContinueExpired { .. })
    ));
    // The watch that was already running is unaffected.
    assert_eq!(next(&mut watch_on_c).await.1, updated.mod_revision.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_sled_to_etcd_and_back() {
    use k1s_storage::{Backend, LocalStore, StoreConfig, copy_all};
    let dir = tempfile::tempdir().unwrap();
    let open_sled = |name: &str| {
        let mut cfg = StoreConfig::new(Backend::Disk(dir.path().join(name)));
        cfg.compaction.interval = None;
        LocalStore::open(cfg).unwrap()
    };
    let sled = open_sled("a");
    for i in 0..1234 {
        sled.create(&format!("/registry/x/k{i:05}"), b(&format!("v{i}")))
            .await
            .unwrap();
    }
    sled.update("/registry/x/k00007", b("changed"), None)
        .await
        .unwrap();
    sled.delete("/registry/x/k00008", None).await.unwrap();
    let etcd = EtcdProcess::start().await;
    let e = etcd.store().await;
    assert_eq!(copy_all(&sled, &e, "/").await.unwrap(), 1233);
    // A second copy into a non-empty target is refused and writes nothing.
    let before = e.current_revision();
    assert!(copy_all(&sled, &e, "/").await.is_err());
    assert_eq!(e.current_revision(), before);
    let back = open_sled("b");
    assert_eq!(copy_all(&e, &back, "/").await.unwrap(), 1233);
    let all = |s: LocalStore| async move {
        s.list("/", ListOptions::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|kv| (kv.key, kv.value))
            .collect::<Vec<_>>()
    };
    let (orig, round) = (all(sled).await, all(back).await);
    assert_eq!(orig.len(), 1233);
    assert_eq!(orig, round);
    assert_eq!(
        e.get("/registry/x/k00007").await.unwrap().unwrap().value,
        b("changed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unpaged_list_and_a_watch_larger_than_four_mebibytes() {
    let etcd = EtcdProcess::start().await;
    let s = etcd.store().await;
    let mut w = s.watch("/big/", Revision(0)).await.unwrap();
    // 48 values of 128 KiB: 6 MiB in one answer, over tonic's default 4 MiB limit.
    let value = "x".repeat(128 * 1024);
    for i in 0..48 {
        s.create(&format!("/big/k{i:02}"), b(&value)).await.unwrap();
    }
    let all = s.list("/big/", ListOptions::default()).await.unwrap();
    assert_eq!(all.items.len(), 48);
    assert!(all.items.iter().all(|kv| kv.value.len() == value.len()));
    for _ in 0..48 {
        assert_eq!(next(&mut w).await.0, EventKind::Created);
    }
}
