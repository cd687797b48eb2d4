//! The storage contract as one test suite, run against every backend (memory, sled, and etcd:
//! a real etcd per test, started on free loopback ports).
//!
//! Revisions are counted from the store's revision when the test starts (`Fixture::r`): the
//! local stores start at 0, a fresh etcd at 1.
#![allow(clippy::unwrap_used)]

mod etcd_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use k1s_storage::{
    Backend, CompactionPolicy, Error, EtcdStore, EventKind, ListOptions, LocalStore, Revision,
    Store, StoreConfig, Update,
};

/// A fresh store of one backend, with its temp dir kept alive.
struct Fixture {
    store: Arc<dyn Store>,
    /// The store's revision before the test wrote anything.
    base: u64,
    _dir: Option<tempfile::TempDir>,
    _etcd: Option<etcd_support::EtcdProcess>,
}

impl Fixture {
    /// The revision of the test's `n`th write.
    fn r(&self, n: u64) -> Revision {
        Revision(self.base + n)
    }
}

fn config(
    backend: &str,
    tune: impl FnOnce(&mut StoreConfig),
) -> (StoreConfig, Option<tempfile::TempDir>) {
    let (b, dir) = match backend {
        "memory" => (Backend::Memory, None),
        "image" => {
            let dir = tempfile::tempdir().unwrap();
            (Backend::Disk(dir.path().join("store")), Some(dir))
        }
        "sled" => {
            // A new store is an image store; a format-2 marker in an empty directory makes it sled.
            let dir = tempfile::tempdir().unwrap();
            let store = dir.path().join("store");
            std::fs::create_dir(&store).unwrap();
            std::fs::write(store.join("FORMAT"), "k1s-store 2\n").unwrap();
            (Backend::Disk(store), Some(dir))
        }
        // The etcd fixture maps this config's policy and limits onto its own.
        "etcd" => (Backend::Memory, None),
        other => panic!("unknown backend {other}"),
    };
    let mut cfg = StoreConfig::new(b);
    cfg.compaction.interval = None;
    tune(&mut cfg);
    (cfg, dir)
}

async fn fixture(backend: &str, tune: impl FnOnce(&mut StoreConfig)) -> Fixture {
    let (cfg, dir) = config(backend, tune);
    if backend == "etcd" {
        let etcd = etcd_support::EtcdProcess::start().await;
        let mut ecfg = etcd.config();
        ecfg.compaction = cfg.compaction;
        ecfg.watch_buffer = cfg.watch_buffer;
        ecfg.max_value_size = cfg.max_value_size;
        let store = EtcdStore::connect(ecfg).await.unwrap();
        return Fixture {
            base: store.current_revision().0,
            store: Arc::new(store),
            _dir: None,
            _etcd: Some(etcd),
        };
    }
    Fixture {
        store: Arc::new(LocalStore::open(cfg).unwrap()),
        base: 0,
        _dir: dir,
        _etcd: None,
    }
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn revisions_are_global_and_atomic(backend: &str) {
    let f = fixture(backend, |_| {}).await;
    let s = &f.store;
    assert_eq!(s.current_revision(), f.r(0));
    let a = s.create("/r/a", b("1")).await.unwrap();
    assert_eq!((a.create_revision, a.mod_revision), (f.r(1), f.r(1)));
    let a2 = s
        .update("/r/a", b("2"), Some(a.mod_revision))
        .await
        .unwrap();
    assert_eq!((a2.create_revision, a2.mod_revision), (f.r(1), f.r(2)));
    let got = s.get("/r/a").await.unwrap().unwrap();
    assert_eq!(got, a2);
    let d = s.delete("/r/a", None).await.unwrap();
    assert_eq!(d.revision, f.r(3));
    assert_eq!(d.prev, a2);
    assert_eq!(s.current_revision(), f.r(3));
    assert!(s.get("/r/a").await.unwrap().is_none());

    // Concurrent writers never share a revision, and the revision counts every write.
    let mut tasks = Vec::new();
    for i in 0..200 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            s.create(&format!("/r/k{i:03}"), b("v"))
                .await
                .unwrap()
                .mod_revision
        }));
    }
    let mut revs = Vec::new();
    for t in tasks {
        revs.push(t.await.unwrap());
    }
    revs.sort();
    revs.dedup();
    assert_eq!(revs.len(), 200);
    assert_eq!(s.current_revision(), f.r(203));
    assert_eq!(revs.first(), Some(&f.r(4)));
    assert_eq!(revs.last(), Some(&f.r(203)));
}

async fn preconditions_fail_cleanly(backend: &str) {
    let f = fixture(backend, |_| {}).await;
    let s = &f.store;
    let a = s.create("/p/a", b("1")).await.unwrap();
    assert!(matches!(
        s.create("/p/a", b("x")).await,
        Err(Error::AlreadyExists { .. })
    ));
    assert!(matches!(
        s.update("/p/missing", b("x"), None).await,
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        s.delete("/p/missing", None).await,
        Err(Error::NotFound { .. })
    ));
    let a2 = s.update("/p/a", b("2"), None).await.unwrap();
    match s.update("/p/a", b("3"), Some(a.mod_revision)).await {
        Err(Error::Conflict {
            expected, actual, ..
        }) => {
            assert_eq!((expected, actual), (a.mod_revision, a2.mod_revision));
        }
        other => panic!("expected conflict, got {other:?}"),
    }
    assert!(matches!(
        s.delete("/p/a", Some(a.mod_revision)).await,
        Err(Error::Conflict { .. })
    ));
    // Failed writes changed nothing and used no revision.
    assert_eq!(s.current_revision(), a2.mod_revision);
    assert_eq!(s.get("/p/a").await.unwrap().unwrap().value, b("2"));
    assert!(matches!(
        s.create("no-slash", b("x")).await,
        Err(Error::InvalidKey(_))
    ));
    let huge = Bytes::from(vec![0u8; 2 * 1024 * 1024]);
    assert!(matches!(
        s.create("/p/huge", huge).await,
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(s.current_revision(), a2.mod_revision);
}

async fn guaranteed_update_loses_nothing(backend: &str) {
    let f = fixture(backend, |_| {}).await;
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let s = f.store.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                s.guaranteed_update::<Error, _>("/counter", |cur| {
                    let n: u64 = cur
                        .map(|kv| std::str::from_utf8(&kv.value).unwrap().parse().unwrap())
                        .unwrap_or(0);
                    Ok(Update::Put(b(&(n + 1).to_string())))
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let v = f.store.get("/counter").await.unwrap().unwrap();
    assert_eq!(v.value, b("640"));
    // `Keep` writes nothing.
    let before = f.store.current_revision();
    f.store
        .guaranteed_update::<Error, _>("/counter", |_| Ok(Update::Keep))
        .await
        .unwrap();
    assert_eq!(f.store.current_revision(), before);
}

/// Collects `n` events from a watch, failing on errors or a stall.
async fn take(w: &mut k1s_storage::WatchStream, n: usize) -> Vec<(EventKind, u64, String)> {
    let mut out = Vec::new();
    while out.len() < n {
        let ev = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("watch stalled")
            .expect("watch ended")
            .unwrap();
        out.push((ev.kind, ev.revision.0, ev.key.clone()));
    }
    out
}

async fn watch_delivers_everything_once_in_order(backend: &str) {
    let f = fixture(backend, |_| {}).await;
    let s = &f.store;
    s.create("/w/a", b("1")).await.unwrap(); // rev 1
    s.create("/other/x", b("1")).await.unwrap(); // rev 2
    s.update("/w/a", b("2"), None).await.unwrap(); // rev 3
    // A watcher from the past sees history then live events; one from "now" sees only live ones.
    let mut from_start = s.watch("/w/", f.r(0)).await.unwrap();
    let mut from_two = s.watch("/w/", f.r(2)).await.unwrap();
    let mut from_now = s.watch("/w/", s.current_revision()).await.unwrap();
    let mut writers = Vec::new();
    for i in 0..50 {
        let s = s.clone();
        writers.push(tokio::spawn(async move {
            s.create(&format!("/w/k{i}"), b("v")).await.unwrap();
            s.delete(&format!("/w/k{i}"), None).await.unwrap();
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    let all = take(&mut from_start, 102).await;
    assert_eq!(all[0], (EventKind::Created, f.r(1).0, "/w/a".to_string()));
    assert_eq!(all[1], (EventKind::Modified, f.r(3).0, "/w/a".to_string()));
    let revs: Vec<u64> = all.iter().map(|e| e.1).collect();
    assert!(
        revs.windows(2).all(|w| w[0] < w[1]),
        "in revision order: {revs:?}"
    );
    assert!(all.iter().all(|e| e.2.starts_with("/w/")));
    let two = take(&mut from_two, 101).await;
    assert_eq!(two[..], all[1..]);
    let now = take(&mut from_now, 100).await;
    assert_eq!(now[..], all[2..]);
    // Per key, create comes before delete; delete events carry the last value.
    s.create("/w/z", b("last")).await.unwrap();
    let d = s.delete("/w/z", None).await.unwrap();
    let _ = take(&mut from_now, 1).await;
    let ev = from_now.next().await.unwrap().unwrap();
    assert_eq!(ev.kind, EventKind::Deleted);
    assert_eq!(ev.revision, d.revision);
    assert_eq!(ev.prev.as_ref().unwrap().value, b("last"));
    assert!(ev.current.is_none());
    // Nothing extra arrives.
    assert!(
        tokio::time::timeout(Duration::from_millis(100), from_two.next())
            .await
            .is_ok()
    );
    let extra = tokio::time::timeout(Duration::from_millis(100), from_start.next()).await;
    assert!(matches!(extra, Ok(Some(Ok(_)))), "the /w/z create");
}

async fn watch_replay_carries_each_changes_values(backend: &str) {
    // History replayed to a watch from the past carries, for every change, the value it left
    // and the value before it, however often a key changed and whatever happened later.
    let f = fixture(backend, |_| {}).await;
    let s = &f.store;
    s.create("/h/a", b("a1")).await.unwrap(); // 1
    s.update("/h/a", b("a2"), None).await.unwrap(); // 2
    s.create("/h/b", b("b1")).await.unwrap(); // 3
    s.update("/h/a", b("a3"), None).await.unwrap(); // 4
    s.delete("/h/b", None).await.unwrap(); // 5
    s.create("/h/b", b("b2")).await.unwrap(); // 6
    let mut w = s.watch("/h/", f.r(0)).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..6 {
        let ev = w.next().await.unwrap().unwrap();
        let value = |kv: &Option<k1s_storage::KeyValue>| {
            kv.as_ref()
                .map(|kv| String::from_utf8(kv.value.to_vec()).unwrap())
        };
        got.push((
            ev.revision.0 - f.base,
            ev.key.clone(),
            value(&ev.current),
            value(&ev.prev),
        ));
    }
    let some = |v: &str| Some(v.to_string());
    assert_eq!(
        got,
        vec![
            (1, "/h/a".into(), some("a1"), None),
            (2, "/h/a".into(), some("a2"), some("a1")),
            (3, "/h/b".into(), some("b1"), None),
            (4, "/h/a".into(), some("a3"), some("a2")),
            (5, "/h/b".into(), None, some("b1")),
            (6, "/h/b".into(), some("b2"), None),
        ]
    );
    // From the middle of the history, too.
    let mut from_three = s.watch("/h/", f.r(3)).await.unwrap();
    let ev = from_three.next().await.unwrap().unwrap();
    assert_eq!(ev.revision, f.r(4));
    assert_eq!(ev.current.as_ref().unwrap().mod_revision, f.r(4));
}

async fn watch_during_writes_has_no_gap(backend: &str) {
    // Watchers that start while writers run must still see every later event exactly once.
    let f = fixture(backend, |_| {}).await;
    let s = f.store.clone();
    let writer = tokio::spawn(async move {
        for i in 0..400 {
            s.create(&format!("/g/k{i:04}"), b("v")).await.unwrap();
        }
    });
    let mut watchers = Vec::new();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(3)).await;
        let start = f.store.current_revision();
        watchers.push((start, f.store.watch("/g/", start).await.unwrap()));
    }
    writer.await.unwrap();
    let last = f.store.current_revision().0;
    for (start, mut w) in watchers {
        let got = take(&mut w, (last - start.0) as usize).await;
        let revs: Vec<u64> = got.iter().map(|e| e.1).collect();
        let want: Vec<u64> = (start.0 + 1..=last).collect();
        assert_eq!(revs, want);
    }
}

async fn a_watched_write_is_readable(backend: &str) {
    // Whoever hears of a write can read it: a get right after an event finds that revision or a
    // newer one (a controller that reacts to an event by reading the object must not act on the
    // state before it).
    let f = fixture(backend, |_| {}).await;
    f.store.create("/r/k", b("0")).await.unwrap();
    let mut w = f
        .store
        .watch("/r/", f.store.current_revision())
        .await
        .unwrap();
    let s = f.store.clone();
    let writer = tokio::spawn(async move {
        for i in 1..=300 {
            s.update("/r/k", b(&i.to_string()), None).await.unwrap();
        }
    });
    for _ in 0..300 {
        let ev = w.next().await.unwrap().unwrap();
        let read = f.store.get("/r/k").await.unwrap().unwrap();
        assert!(
            read.mod_revision >= ev.revision,
            "event at {:?}, but a get then read {:?}",
            ev.revision,
            read.mod_revision
        );
    }
    writer.await.unwrap();
}

async fn slow_watcher_is_cut_off_without_blocking(backend: &str) {
    let f = fixture(backend, |c| c.watch_buffer = 16).await;
    let s = &f.store;
    let mut slow = s.watch("/s/", f.r(0)).await.unwrap();
    let mut fast = s.watch("/s/", f.r(0)).await.unwrap();
    // The fast watcher reports its progress; writers pace themselves on it (never on the slow
    // one), so only the slow watcher can fall behind, however loaded the machine is.
    let (progress_tx, mut progress) = tokio::sync::watch::channel(0u64);
    let reader = tokio::spawn(async move {
        for _ in 0..100 {
            let ev = fast.next().await.unwrap().unwrap();
            progress_tx.send_replace(ev.revision.0);
        }
        100
    });
    // The slow watcher reads nothing; 100 writes must still complete.
    tokio::time::timeout(Duration::from_secs(20), async {
        for i in 0..100u64 {
            s.create(&format!("/s/k{i:03}"), b("v")).await.unwrap();
            progress.wait_for(|r| *r > f.base + i).await.unwrap();
        }
    })
    .await
    .expect("writers were blocked by a slow watcher");
    assert_eq!(reader.await.unwrap(), 100);
    let mut delivered = Vec::new();
    let last = loop {
        match slow.next().await {
            Some(Ok(ev)) => delivered.push(ev.revision.0),
            Some(Err(Error::WatcherTooSlow { last_delivered })) => break last_delivered,
            other => panic!("expected a cut-off, got {other:?}"),
        }
    };
    assert!(delivered.len() < 100);
    assert_eq!(last.0, *delivered.last().unwrap_or(&f.base));
    // Resuming after the last delivered revision fills the gap exactly.
    let mut resumed = s.watch("/s/", last).await.unwrap();
    let rest = take(&mut resumed, 100 - delivered.len()).await;
    let mut all: Vec<u64> = delivered;
    all.extend(rest.iter().map(|e| e.1));
    assert_eq!(all, (f.base + 1..=f.base + 100).collect::<Vec<_>>());
}

async fn list_is_a_consistent_snapshot_with_paging(backend: &str) {
    let f = fixture(backend, |_| {}).await;
    let s = &f.store;
    let mut model = BTreeMap::new();
    for i in 0..100 {
        let k = format!("/l/k{i:03}");
        s.create(&k, b(&format!("v{i}"))).await.unwrap();
        model.insert(k, format!("v{i}"));
    }
    s.create("/m/outside", b("x")).await.unwrap();
    let snapshot = s.current_revision();
    // Writers churn while we page through the snapshot.
    let churn = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..100 {
                let k = format!("/l/k{i:03}");
                match i % 3 {
                    0 => drop(s.delete(&k, None).await.unwrap()),
                    1 => drop(s.update(&k, b("changed"), None).await.unwrap()),
                    _ => drop(s.create(&format!("/l/k{i:03}x"), b("new")).await.unwrap()),
                }
            }
        })
    };
    let mut seen = BTreeMap::new();
    let mut token = None;
    let mut first = true;
    loop {
        let opts = ListOptions {
            limit: 7,
            continue_token: token.take(),
            revision: if first { Some(snapshot) } else { None },
        };
        first = false;
        let page = s.list("/l/", opts).await.unwrap();
        assert_eq!(page.revision, snapshot);
        assert!(page.items.len() <= 7);
        for kv in page.items {
            assert!(kv.mod_revision <= snapshot);
            assert!(
                seen.insert(
                    kv.key.clone(),
                    String::from_utf8(kv.value.to_vec()).unwrap()
                )
                .is_none()
            );
        }
        match page.continue_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    churn.await.unwrap();
    assert_eq!(seen, model);
    // Each page that has a next one says how many keys follow it (remainingItemCount).
    let (mut listed, mut token) = (0, None);
    loop {
        let opts = ListOptions {
            limit: 7,
            continue_token: token.take(),
            revision: None,
        };
        let page = s.list("/l/", opts).await.unwrap();
        listed += page.items.len() as u64;
        match page.continue_token {
            Some(t) => {
                assert_eq!(page.remaining, Some(99 - listed), "after {listed}");
                token = Some(t);
            }
            None => {
                assert_eq!(page.remaining, None);
                break;
            }
        }
    }
    assert_eq!(listed, 99);
    // The latest list reflects the churn; an unlimited list has no token.
    let latest = s.list("/l/", ListOptions::default()).await.unwrap();
    assert!(latest.continue_token.is_none());
    assert_eq!(latest.items.len(), 100 - 34 + 33);
    assert_eq!(s.count("/l/").await.unwrap(), 99);
    // Bad tokens are distinct errors.
    let garbage = ListOptions {
        continue_token: Some("!!".into()),
        ..Default::default()
    };
    assert!(matches!(
        s.list("/l/", garbage).await,
        Err(Error::InvalidContinue(_))
    ));
    let future = ListOptions {
        revision: Some(f.r(10_000)),
        ..Default::default()
    };
    assert!(matches!(
        s.list("/l/", future).await,
        Err(Error::FutureRevision { .. })
    ));
}

async fn compaction_bounds_history(backend: &str) {
    let f = fixture(backend, |_| {}).await;
    let s = &f.store;
    for i in 0..50 {
        s.create(&format!("/c/k{i}"), b("v")).await.unwrap();
    }
    let page = s
        .list(
            "/c/",
            ListOptions {
                limit: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let token = page.continue_token.unwrap();
    let old = f.r(20);
    assert_eq!(
        s.list(
            "/c/",
            ListOptions {
                revision: Some(old),
                ..Default::default()
            }
        )
        .await
        .unwrap()
        .items
        .len(),
        20
    );
    for i in 0..10 {
        s.update(&format!("/c/k{i}"), b("again"), None)
            .await
            .unwrap();
    }
    s.compact(f.r(55)).await.unwrap();
    assert_eq!(s.compacted_revision(), f.r(55));
    assert!(matches!(
        s.watch("/c/", old).await,
        Err(Error::Compacted { .. })
    ));
    assert!(matches!(
        s.list(
            "/c/",
            ListOptions {
                revision: Some(old),
                ..Default::default()
            }
        )
        .await,
        Err(Error::Compacted { .. })
    ));
    let expired = ListOptions {
        limit: 10,
        continue_token: Some(token),
        ..Default::default()
    };
    let Err(Error::ContinueExpired { resume, .. }) = s.list("/c/", expired).await else {
        panic!("an expired token");
    };
    // The offered token goes on after the first page's last key, at the latest revision, and
    // its pages are consistent from there.
    let resumed = s
        .list(
            "/c/",
            ListOptions {
                limit: 10,
                continue_token: Some(resume),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(resumed.revision, s.current_revision());
    let first_page: Vec<String> = page.items.iter().map(|kv| kv.key.clone()).collect();
    assert!(
        resumed
            .items
            .iter()
            .all(|kv| kv.key > *first_page.last().unwrap())
    );
    assert_eq!(resumed.items.len(), 10);
    let rest = s
        .list(
            "/c/",
            ListOptions {
                limit: 100,
                continue_token: resumed.continue_token,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(rest.revision, resumed.revision);
    assert_eq!(rest.items.len(), 50 - 20);
    // History after the compaction point still works, and current data is untouched.
    let mut w = s.watch("/c/", f.r(55)).await.unwrap();
    assert_eq!(take(&mut w, 5).await.len(), 5);
    assert_eq!(
        s.list("/c/", ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        50
    );
    assert!(
        s.compact(f.r(10)).await.is_ok(),
        "compacting below the point is a no-op"
    );
    assert!(matches!(
        s.compact(f.r(1000)).await,
        Err(Error::FutureRevision { .. })
    ));
}

async fn background_compaction_keeps_policy(backend: &str) {
    let f = fixture(backend, |c| {
        c.compaction = CompactionPolicy {
            keep_revisions: 100,
            keep_for: None,
            interval: Some(Duration::from_millis(20)),
        };
    })
    .await;
    let s = &f.store;
    s.create("/bg/key", b("0")).await.unwrap();
    for i in 1..3000 {
        s.update("/bg/key", b(&i.to_string()), None).await.unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s.compacted_revision().0 + 100 < s.current_revision().0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "background compaction did not run"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(s.compacted_revision().0 + 100 >= s.current_revision().0 - 1);
    // Kept history is still readable.
    let from = Revision(s.current_revision().0 - 50);
    let mut w = s.watch("/bg/", from).await.unwrap();
    assert_eq!(take(&mut w, 50).await.len(), 50);

    // Time-based: with a zero keep window and no revision floor, everything old goes.
    let f = fixture(backend, |c| {
        c.compaction = CompactionPolicy {
            keep_revisions: 0,
            keep_for: Some(Duration::from_millis(0)),
            interval: Some(Duration::from_millis(20)),
        };
    })
    .await;
    for i in 0..20 {
        f.store.create(&format!("/t/{i}"), b("v")).await.unwrap();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while f.store.compacted_revision() < f.r(20) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "time-based compaction did not run"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        f.store
            .list("/t/", ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        20
    );
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name("memory").await }
            )*
        }
        mod image {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name("image").await }
            )*
        }
        mod sled {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name("sled").await }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name("etcd").await }
            )*
        }
    };
}

conformance!(
    revisions_are_global_and_atomic,
    preconditions_fail_cleanly,
    guaranteed_update_loses_nothing,
    watch_delivers_everything_once_in_order,
    watch_replay_carries_each_changes_values,
    watch_during_writes_has_no_gap,
    a_watched_write_is_readable,
    slow_watcher_is_cut_off_without_blocking,
    list_is_a_consistent_snapshot_with_paging,
    compaction_bounds_history,
    background_compaction_keeps_policy,
);
