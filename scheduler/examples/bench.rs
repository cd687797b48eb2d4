//! Scheduler throughput: against a server started with `--nodes 0 --disable-scheduler`, creates
//! N nodes and M pending pods, then runs the scheduler in this process (over the kubeconfig) and
//! reports pods/s from the first bind to the last, as seen by a pod watch.
//!
//! `cargo run --release -p k1s-scheduler --example bench -- KUBECONFIG [NODES] [PODS]`

use std::time::Instant;

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .ok_or("usage: bench KUBECONFIG [NODES] [PODS]")?;
    let nodes: usize = args.get(2).map_or(Ok(100), |s| s.parse())?;
    let pods: usize = args.get(3).map_or(Ok(5000), |s| s.parse())?;
    let kc = kube::config::Kubeconfig::read_from(path)?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    let client = kube::Client::try_from(config)?;
    let node_api: Api<Node> = Api::all(client.clone());
    for i in 0..nodes {
        let name = format!("bench-node-{i}");
        let node: Node = serde_json::from_value(json!({"metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name}}}))?;
        node_api.create(&PostParams::default(), &node).await?;
        let res = json!({"cpu": "64", "memory": "256Gi", "pods": "110"});
        node_api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"capacity": res, "allocatable": res}})),
            )
            .await?;
    }
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let t = Instant::now();
    stream::iter(0..pods)
        .map(|i| {
            let api = pod_api.clone();
            async move {
                let pod: Pod =
                    serde_json::from_value(json!({"metadata": {"name": format!("bench-{i}")},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}))
                    .unwrap_or_default();
                api.create(&PostParams::default(), &pod).await
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    println!(
        "created {nodes} nodes and {pods} pods ({:.1}s for the pods)",
        t.elapsed().as_secs_f64()
    );
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let options = k1s_scheduler::Options {
        leader_elect: false,
        ..Default::default()
    };
    let sched = tokio::spawn(k1s_scheduler::run(client.clone(), options, shutdown));
    let started = Instant::now();
    let mut first: Option<Instant> = None;
    let mut bound = std::collections::HashSet::new();
    let mut events = watcher(pod_api, watcher::Config::default()).boxed();
    while let Some(ev) = events.try_next().await? {
        let objs = match ev {
            watcher::Event::Apply(p) | watcher::Event::InitApply(p) => vec![p],
            _ => vec![],
        };
        for p in objs {
            if p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                && bound.insert(p.metadata.name.clone().unwrap_or_default())
                && first.is_none()
            {
                first = Some(Instant::now());
            }
        }
        if bound.len() >= pods {
            break;
        }
    }
    let last = Instant::now();
    let first = first.unwrap_or(last);
    let span = last.duration_since(first).as_secs_f64();
    println!(
        "bound {} pods: first bind {:.2}s after start, first to last {:.2}s = {:.0} pods/s",
        bound.len(),
        first.duration_since(started).as_secs_f64(),
        span,
        bound.len() as f64 / span.max(1e-9)
    );
    let _ = stop.send(true);
    let _ = sched.await;
    Ok(())
}
