//! Storage benchmark: durable create latency and throughput, watch fan-out latency, big lists.
//!
//! `cargo bench -p k1s-storage --bench store -- [seq|concurrent|fanout|list|snapshot|all] [--memory]`
//! Data goes to `target/bench-store` (a real disk, so fsync costs what it costs).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use k1s_storage::{Backend, ListOptions, LocalStore, Revision, Store, StoreConfig};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn fresh_store(memory: bool, name: &str) -> anyhow::Result<Arc<LocalStore>> {
    let backend = if memory {
        Backend::Memory
    } else {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/bench-store")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        Backend::Disk(dir)
    };
    let mut config = StoreConfig::new(backend);
    config.compaction.interval = None;
    Ok(Arc::new(LocalStore::open(config)?))
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

async fn sequential(memory: bool) -> anyhow::Result<()> {
    let store = fresh_store(memory, "seq")?;
    let value = Bytes::from(vec![b'x'; 1024]);
    let n = 2000;
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        store
            .create(&format!("/registry/pods/default/p{i}"), value.clone())
            .await?;
        lat.push(t.elapsed());
    }
    let total = start.elapsed();
    lat.sort();
    println!(
        "sequential durable creates (1 KiB): {n} in {:.2?}: {:.0}/s, p50 {:.2?}, p99 {:.2?}",
        total,
        n as f64 / total.as_secs_f64(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
    Ok(())
}

async fn concurrent(memory: bool) -> anyhow::Result<()> {
    let store = fresh_store(memory, "concurrent")?;
    let writers = 64;
    let per_writer = 500;
    let value = Bytes::from(vec![b'x'; 1024]);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per_writer);
            for i in 0..per_writer {
                let t = Instant::now();
                store
                    .create(&format!("/registry/pods/ns{w}/p{i}"), value.clone())
                    .await?;
                lat.push(t.elapsed());
            }
            anyhow::Ok(lat)
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await??);
    }
    let total = start.elapsed();
    lat.sort();
    let n = writers * per_writer;
    println!(
        "{writers} concurrent writers, durable creates (1 KiB): {n} in {:.2?}: {:.0}/s, p50 {:.2?}, p99 {:.2?}",
        total,
        n as f64 / total.as_secs_f64(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
    Ok(())
}

async fn fanout(memory: bool) -> anyhow::Result<()> {
    let store = fresh_store(memory, "fanout")?;
    let watchers = 1000;
    let writes = 10_000;
    let origin = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let mut w = store.watch("/registry/configmaps/", Revision(0)).await?;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(writes);
            while lat.len() < writes {
                match w.next().await {
                    Some(Ok(ev)) => {
                        let v = &ev
                            .current
                            .as_ref()
                            .map(|kv| kv.value.clone())
                            .unwrap_or_default();
                        let sent = u64::from_le_bytes(v[..8].try_into()?);
                        let now = origin.elapsed().as_nanos() as u64;
                        lat.push(Duration::from_nanos(now.saturating_sub(sent)));
                    }
                    other => anyhow::bail!("watch ended early: {other:?}"),
                }
            }
            anyhow::Ok(lat)
        }));
    }
    let start = Instant::now();
    let mut writers = Vec::new();
    for w in 0..16 {
        let store = store.clone();
        writers.push(tokio::spawn(async move {
            for i in 0..writes / 16 {
                let mut v = (origin.elapsed().as_nanos() as u64).to_le_bytes().to_vec();
                v.resize(256, b'x');
                store
                    .create(&format!("/registry/configmaps/ns{w}/c{i}"), Bytes::from(v))
                    .await?;
            }
            anyhow::Ok(())
        }));
    }
    for w in writers {
        w.await??;
    }
    let write_time = start.elapsed();
    let mut lat = Vec::with_capacity(watchers * writes);
    for t in tasks {
        lat.extend(t.await??);
    }
    let all_time = start.elapsed();
    lat.sort();
    println!(
        "watch fan-out: {watchers} watchers x {writes} writes ({} deliveries): writes took {:.2?}, all delivered after {:.2?}; delivery latency (issue -> receipt) p50 {:.2?}, p99 {:.2?}",
        lat.len(),
        write_time,
        all_time,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
    Ok(())
}

/// Creates `n` keys of 1,000 B under `/registry/secrets/default/` from 64 writers.
async fn fill(store: &Arc<LocalStore>, n: usize) -> anyhow::Result<()> {
    let value = Bytes::from(vec![b'x'; 1000]);
    let load = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..64 {
        let store = store.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            for i in (w..n).step_by(64) {
                store
                    .create(&format!("/registry/secrets/default/s{i:06}"), value.clone())
                    .await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    println!("loaded {n} keys of 1000 B in {:.2?}", load.elapsed());
    Ok(())
}

async fn list(memory: bool) -> anyhow::Result<()> {
    let store = fresh_store(memory, "list")?;
    let n = 100_000;
    fill(&store, n).await?;
    let before = peak_rss_kib();
    let t = Instant::now();
    let page = store
        .list("/registry/secrets/", ListOptions::default())
        .await?;
    let full = t.elapsed();
    let after = peak_rss_kib();
    anyhow::ensure!(page.items.len() == n, "listed {}", page.items.len());
    drop(page);
    let t = Instant::now();
    let mut token = None;
    let mut count = 0;
    loop {
        let page = store
            .list(
                "/registry/secrets/",
                ListOptions {
                    limit: 500,
                    continue_token: token.take(),
                    revision: None,
                },
            )
            .await?;
        count += page.items.len();
        match page.continue_token {
            Some(c) => token = Some(c),
            None => break,
        }
    }
    let paged = t.elapsed();
    anyhow::ensure!(count == n, "paged {count}");
    println!(
        "list {n} keys of 1000 B: one call {:.2?} (peak RSS {} MiB -> {} MiB); in pages of 500: {:.2?}",
        full,
        before / 1024,
        after / 1024,
        paged
    );
    Ok(())
}

/// Snapshot save (streamed to a file), verify and restore of 100,000 keys of 1,000 B.
async fn snapshot(memory: bool) -> anyhow::Result<()> {
    use futures::StreamExt;
    use std::io::Write;
    let store = fresh_store(memory, "snapshot")?;
    let n = 100_000;
    fill(&store, n).await?;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-store");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("snapshot.db");
    let restored = dir.join("snapshot-restored");
    let _ = std::fs::remove_dir_all(&restored);
    let t = Instant::now();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file)?);
    let shared: Arc<dyn Store> = store.clone();
    let mut stream = std::pin::pin!(k1s_storage::snapshot::save_stream(shared).await?);
    while let Some(chunk) = stream.next().await {
        out.write_all(&chunk?)?;
    }
    out.into_inner()?.sync_all()?;
    let save = t.elapsed();
    let size = std::fs::metadata(&file)?.len();
    let t = Instant::now();
    let info = k1s_storage::snapshot::verify(&file)?;
    let verify = t.elapsed();
    anyhow::ensure!(info.keys == n as u64, "snapshot holds {} keys", info.keys);
    let t = Instant::now();
    k1s_storage::snapshot::restore(&file, &restored)?;
    let restore = t.elapsed();
    println!(
        "snapshot of {n} keys of 1000 B ({} MiB): save {save:.2?}, verify {verify:.2?}, restore {restore:.2?}",
        size >> 20
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let memory = args.iter().any(|a| a == "--memory");
    let which = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(String::as_str)
        .unwrap_or("all");
    println!(
        "backend: {}",
        if memory { "memory" } else { "sled (durable)" }
    );
    if matches!(which, "seq" | "all") {
        sequential(memory).await?;
    }
    if matches!(which, "concurrent" | "all") {
        concurrent(memory).await?;
    }
    if matches!(which, "fanout" | "all") {
        fanout(memory).await?;
    }
    if matches!(which, "list" | "all") {
        list(memory).await?;
    }
    if matches!(which, "snapshot" | "all") {
        snapshot(memory).await?;
    }
    Ok(())
}
