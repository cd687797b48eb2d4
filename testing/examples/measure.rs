//! Figures for `k1s-testing`: `TestCluster::start()` to a usable client, a whole garbage
//! collection test (start, owner and dependent, delete, dependent gone), and the memory of
//! clusters running side by side. Run:
//! `cargo run --release -p k1s-testing --example measure [-- CLUSTERS]`.

use std::time::{Duration, Instant};

use k1s_testing::{TestCluster, wait_for_deletion};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, PostParams};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn object<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> anyhow::Result<T> {
    Ok(serde_json::from_value(v)?)
}

async fn gc_test() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await?;
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    let owner = cms
        .create(
            &PostParams::default(),
            &object(serde_json::json!({"metadata": {"name": "owner"}}))?,
        )
        .await?;
    let uid = owner.metadata.uid.unwrap_or_default();
    secrets
        .create(
            &PostParams::default(),
            &object(
                serde_json::json!({"metadata": {"name": "dependent", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
            )?,
        )
        .await?;
    cms.delete("owner", &DeleteParams::default()).await?;
    wait_for_deletion(&secrets, "dependent").await?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let clusters: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    const RUNS: usize = 20;

    // Warm up once (lazy statics, the first TLS config).
    drop(TestCluster::start().await?);

    let mut start = Vec::new();
    let mut usable = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let cluster = TestCluster::start().await?;
        start.push(t.elapsed());
        Api::<Namespace>::all(cluster.client())
            .get("default")
            .await?;
        usable.push(t.elapsed());
        cluster.shutdown().await;
    }
    println!(
        "TestCluster::start(): median {:?} (min {:?}); to the first answered request: median {:?} (min {:?}) over {RUNS} runs",
        median(start.clone()),
        start.iter().min().copied().unwrap_or_default(),
        median(usable.clone()),
        usable.iter().min().copied().unwrap_or_default()
    );

    let mut gc = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        gc_test().await?;
        gc.push(t.elapsed());
    }
    println!(
        "garbage-collection test (start, owner + dependent, delete owner, dependent gone, stop): median {:?} (max {:?}) over 10 runs",
        median(gc.clone()),
        gc.iter().max().copied().unwrap_or_default()
    );

    let before = rss_kib();
    let mut running = Vec::new();
    for _ in 0..clusters {
        let cluster = TestCluster::start().await?;
        Api::<Namespace>::all(cluster.client())
            .get("default")
            .await?;
        running.push(cluster);
    }
    // Let controllers and nodes settle (informers synced, node registered, leases written).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = rss_kib();
    let per = after.saturating_sub(before) / clusters.max(1) as u64;
    println!(
        "memory: {clusters} clusters side by side (1 node, all controllers, scheduler) add {} MiB RSS: {:.1} MiB each; about {} fit in 1 GiB",
        after.saturating_sub(before) / 1024,
        per as f64 / 1024.0,
        (1024 * 1024u64).checked_div(per).unwrap_or(0)
    );
    for c in running {
        c.shutdown().await;
    }
    Ok(())
}
