//! Flash wear guards for the stores on disk: bytes written per small write (a byte budget with a
//! wide margin, a regression guard rather than a benchmark) and the size of a fresh data
//! directory as set by `wal_file_bytes` (`k1s server --wal-size`).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use k1s_storage::{Backend, LocalStore, Store, StoreConfig};

/// `/proc/self/io` counts every thread of the process: the tests here take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The engines a new store can have.
#[derive(Clone, Copy, Debug)]
enum Engine {
    Image,
    Sled,
    SledCompressed,
}

fn open(dir: &Path, wal_file_bytes: u64) -> LocalStore {
    open_with(dir, wal_file_bytes, Engine::Image)
}

fn open_with(dir: &Path, wal_file_bytes: u64, engine: Engine) -> LocalStore {
    let mut config = StoreConfig::new(Backend::Disk(dir.to_path_buf()));
    config.wal_file_bytes = wal_file_bytes;
    match engine {
        Engine::Image => {}
        // A format marker in an empty directory names the engine.
        Engine::Sled => {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("FORMAT"), "k1s-store 2\n").unwrap();
        }
        Engine::SledCompressed => config.compress_new_store = true,
    }
    LocalStore::open(config).unwrap()
}

/// Bytes this process has caused to be written to storage, where the kernel reports it.
fn write_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits until the background thread has the next log file ready (a fresh store zero-fills two
/// files once, which is not what is measured).
fn wait_for_spare(dir: &Path) {
    let wal = dir.join("wal");
    for _ in 0..500 {
        let names: Vec<String> = std::fs::read_dir(&wal)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let logs = names.iter().filter(|n| n.ends_with(".log")).count();
        let spares = names.iter().filter(|n| n.ends_with(".spare")).count();
        let pending = names.iter().any(|n| n.ends_with(".tmp"));
        if logs == 1 && spares == 1 && !pending {
            // The spare is renamed into place before the older log goes; let that finish.
            std::thread::sleep(Duration::from_millis(200));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no spare log file appeared in {}", wal.display());
}

/// About what a 200-byte ConfigMap is once stored.
fn value(i: usize) -> Bytes {
    Bytes::from(format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"cm-{i}\",\
         \"namespace\":\"default\",\"uid\":\"0b8e5f5e-4a5e-4c1f-9a43-{i:012}\",\
         \"creationTimestamp\":\"2026-01-01T00:00:00Z\"}},\"data\":{{\"k\":\"{}\"}}}}",
        "x".repeat(200)
    ))
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// Bytes written per create by 1,000 sequential creates, then by 64 concurrent writers, on a
/// fresh store; `None` where the kernel does not report them.
async fn bytes_per_create(engine: Engine) -> Option<(u64, u64)> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let store = open_with(&dir, k1s_storage::DEFAULT_WAL_FILE_BYTES, engine);
    wait_for_spare(&dir);
    let before = write_bytes()?;
    const N: usize = 1000;
    for i in 0..N {
        store.create(&format!("/seq/{i}"), value(i)).await.unwrap();
    }
    let sequential = (write_bytes().unwrap() - before) / N as u64;

    // Concurrent writers share group commits, and with them the log's pages.
    let before = write_bytes().unwrap();
    let mut tasks = Vec::new();
    for w in 0..64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..N / 64 {
                store
                    .create(&format!("/par/{w}/{i}"), value(i))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let concurrent = (write_bytes().unwrap() - before) / (64 * (N / 64)) as u64;
    store.close();
    eprintln!(
        "{engine:?}: {sequential} bytes written per sequential create, \
         {concurrent} per create with 64 writers"
    );
    Some((sequential, concurrent))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn small_writes_stay_within_a_byte_budget() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some((sequential, concurrent)) = bytes_per_create(Engine::Image).await else {
        eprintln!("no /proc/self/io here: nothing to measure");
        return;
    };
    // The image engine: one log page per durable commit, images at most half again (issue 17's
    // goals: 8 KiB per sequential create, 1 KiB over the object with 64 writers; the value
    // here is about 0.4 KB).
    assert!(
        sequential <= 8 * 1024,
        "{sequential} bytes written per sequential create"
    );
    assert!(
        concurrent <= 2 * 1024,
        "{concurrent} bytes written per concurrent create"
    );
    // sled: one page per durable commit plus sled's share; before page-sized log writes this
    // was about 70 KB per create on ext4 with large folios.
    let (sequential, concurrent) = bytes_per_create(Engine::Sled).await.unwrap();
    assert!(
        sequential <= 16 * 1024,
        "{sequential} bytes written per sequential create, sled"
    );
    assert!(
        concurrent <= 12 * 1024,
        "{concurrent} bytes written per concurrent create, sled"
    );
    // With sled's compression (`k1s server --store-compression`) sled's share shrinks to a
    // fraction: about 4.1 KB and 1.1 KB here in session 14.
    let (sequential, concurrent) = bytes_per_create(Engine::SledCompressed).await.unwrap();
    assert!(
        sequential <= 8 * 1024,
        "{sequential} bytes written per sequential create, compressed"
    );
    assert!(
        concurrent <= 4 * 1024,
        "{concurrent} bytes written per concurrent create, compressed"
    );
}

#[tokio::test]
async fn the_log_file_size_sets_the_size_of_a_fresh_data_dir() {
    let _turn = ONE_AT_A_TIME.lock().await;
    for (wal_file_bytes, most) in [
        (k1s_storage::DEFAULT_WAL_FILE_BYTES, 16 << 20),
        (1 << 20, 3 << 20),
        (k1s_storage::MIN_WAL_FILE_BYTES, 1 << 20),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("store");
        let store = open(&dir, wal_file_bytes);
        store.create("/a", Bytes::from("v")).await.unwrap();
        wait_for_spare(&dir);
        let logs: Vec<u64> = std::fs::read_dir(dir.join("wal"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .collect();
        assert_eq!(logs, vec![wal_file_bytes; 2], "{wal_file_bytes}");
        let total = dir_bytes(&dir);
        assert!(
            total <= most,
            "a fresh store with {wal_file_bytes}-byte log files holds {total} bytes"
        );
        // It still takes writes past a log file's worth, and keeps them over a reopen.
        for i in 0..(wal_file_bytes as usize / 1000) {
            store.create(&format!("/b/{i}"), value(i)).await.unwrap();
        }
        store.close();
        drop(store);
        let store = open(&dir, wal_file_bytes);
        assert_eq!(store.count("/b/").await.unwrap(), wal_file_bytes / 1000);
        store.close();
    }
}
