//! The pod garbage collector (upstream `pkg/controller/podgc`), every 20 s:
//! - terminated pods beyond `--terminated-pod-gc-threshold` are deleted, oldest first;
//! - pods bound to a node that no longer exists (still absent after a 40 s quarantine, checked
//!   live) are marked Failed with the `DisruptionTarget` condition and deleted at once;
//! - terminating pods on a NotReady node tainted `node.kubernetes.io/out-of-service`, and
//!   terminating pods never scheduled, are deleted at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use tokio::time::Instant;

use crate::ControllerContext;
use crate::controller::{Periodic, is_not_found};
use crate::informer::Store;

/// Upstream's gcCheckPeriod and quarantineTime.
const PERIOD: Duration = Duration::from_secs(20);
const QUARANTINE: Duration = Duration::from_secs(40);
const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

struct PodGc {
    client: Client,
    pods: Arc<Store<Pod>>,
    nodes: Arc<Store<Node>>,
    threshold: usize,
    /// Nodes seen missing, and since when.
    missing_since: HashMap<String, Instant>,
}

pub fn start(ctx: ControllerContext) {
    let pods = ctx.factory.informer::<Pod>();
    let nodes = ctx.factory.informer::<Node>();
    let gc = PodGc {
        client: ctx.client.clone(),
        pods: pods.store(),
        nodes: nodes.store(),
        threshold: ctx.options.terminated_pod_gc_threshold,
        missing_since: HashMap::new(),
    };
    ctx.run_every(ctx.options.pod_gc_period.unwrap_or(PERIOD), gc);
}

impl Periodic for PodGc {
    async fn pass(&mut self) {
        self.run().await;
    }
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

impl PodGc {
    async fn run(&mut self) {
        let pods = self.pods.list();
        if self.threshold > 0 {
            let mut terminated: Vec<&Arc<Pod>> = pods.iter().filter(|p| is_terminal(p)).collect();
            if terminated.len() > self.threshold {
                terminated.sort_by(|a, b| {
                    a.metadata
                        .creation_timestamp
                        .as_ref()
                        .map(|t| t.0)
                        .cmp(&b.metadata.creation_timestamp.as_ref().map(|t| t.0))
                });
                let excess = terminated.len() - self.threshold;
                for pod in terminated.into_iter().take(excess) {
                    self.delete(pod, None).await;
                }
            }
        }
        self.orphaned(&pods).await;
        for pod in &pods {
            if pod.metadata.deletion_timestamp.is_none() {
                continue;
            }
            let node_name = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            if node_name.is_empty() {
                self.delete(pod, Some(0)).await;
                continue;
            }
            let out_of_service = self.nodes.get(&node_name).is_some_and(|n| {
                !node_ready(&n)
                    && n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_some_and(|t| t.iter().any(|t| t.key == OUT_OF_SERVICE))
            });
            if out_of_service {
                self.mark_failed(pod, "DeletionByPodGC", "PodGC: node is out of service")
                    .await;
                self.delete(pod, Some(0)).await;
            }
        }
    }

    /// Pods on nodes that are gone: quarantined for 40 s, confirmed by a live read.
    async fn orphaned(&mut self, pods: &[Arc<Pod>]) {
        let mut on_missing: HashMap<String, Vec<&Arc<Pod>>> = HashMap::new();
        for pod in pods {
            let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
                continue;
            };
            if !node.is_empty() && self.nodes.get(&node).is_none() {
                on_missing.entry(node).or_default().push(pod);
            }
        }
        self.missing_since.retain(|n, _| on_missing.contains_key(n));
        let nodes: Api<Node> = Api::all(self.client.clone());
        for (node, pods) in on_missing {
            let since = *self
                .missing_since
                .entry(node.clone())
                .or_insert_with(Instant::now);
            if since.elapsed() < QUARANTINE {
                continue;
            }
            match nodes.get_opt(&node).await {
                Ok(None) => {}
                _ => continue,
            }
            for pod in pods {
                self.mark_failed(pod, "DeletionByPodGC", "PodGC: node no longer exists")
                    .await;
                self.delete(pod, Some(0)).await;
            }
        }
    }

    /// Upstream marks a pod it removes: phase Failed (unless terminal) and `DisruptionTarget`.
    async fn mark_failed(&self, pod: &Pod, reason: &str, message: &str) {
        let api: Api<Pod> = Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let mut status = serde_json::json!({
            "conditions": [{
                "type": "DisruptionTarget",
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": jiff::Timestamp::now().to_string(),
            }]
        });
        if !is_terminal(pod) {
            status["phase"] = "Failed".into();
        }
        let patch = serde_json::json!({ "status": status });
        let name = pod.metadata.name.clone().unwrap_or_default();
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
            && !is_not_found(&e)
        {
            tracing::debug!(error = %e, pod = %name, "pod GC: status not patched");
        }
    }

    async fn delete(&self, pod: &Pod, grace: Option<u32>) {
        let api: Api<Pod> = Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let params = DeleteParams {
            grace_period_seconds: grace,
            ..Default::default()
        };
        let name = pod.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &params).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => tracing::debug!(error = %e, pod = %name, "pod GC: not deleted"),
        }
    }
}
