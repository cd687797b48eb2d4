//! The scheduler cache (upstream's internal/cache): nodes and the pods on them, bound or assumed.
//! A pod is assumed on its node the moment it is chosen, before the bind call returns, so a burst
//! of pods never overcommits a node; the informer's sight of the bound pod confirms it, a failed
//! bind forgets it. Each node keeps its pods' summed requests so filters and scores are O(1) per
//! node, and a generation (as upstream's NodeInfo) that changes with its pods, so counts over a
//! node's pods can be cached until it does (`MatchCounts`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::helpers::{HostPort, host_ports, priority};
use crate::resources::{Resources, allocatable, pod_requests};

/// A pod with what the plugins need of it, computed once.
#[derive(Debug)]
pub struct PodInfo {
    pub pod: Arc<Pod>,
    pub key: String,
    pub requests: Resources,
    /// cpu / memory with upstream's defaults for containers without requests (for scoring).
    pub non_zero_cpu: i64,
    pub non_zero_mem: i64,
    pub ports: Vec<HostPort>,
    pub priority: i32,
    /// Has required pod anti-affinity terms (checked against every incoming pod).
    pub required_anti_affinity: bool,
    /// Has any pod affinity or anti-affinity (scored symmetrically).
    pub any_affinity: bool,
}

impl PodInfo {
    pub fn new(pod: Arc<Pod>) -> Self {
        let key = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let spec = pod.spec.clone().unwrap_or_default();
        let requests = pod_requests(&spec, false);
        let nz = pod_requests(&spec, true);
        let affinity = spec.affinity.as_ref();
        let required_anti_affinity = affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_some_and(|t| !t.is_empty());
        let any_affinity =
            affinity.is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some());
        PodInfo {
            key,
            requests,
            non_zero_cpu: nz.milli_cpu,
            non_zero_mem: nz.memory,
            ports: host_ports(&pod),
            priority: priority(&pod),
            required_anti_affinity,
            any_affinity,
            pod,
        }
    }

    pub fn namespace(&self) -> &str {
        self.pod.metadata.namespace.as_deref().unwrap_or_default()
    }
}

/// One node and its pods.
#[derive(Debug, Default, Clone)]
pub struct NodeInfo {
    pub node: Option<Arc<Node>>,
    pub allocatable: Resources,
    /// Change only through `add_pod` / `remove_pod`, which move `generation`.
    pub pods: Vec<Arc<PodInfo>>,
    pub requested: Resources,
    pub non_zero_cpu: i64,
    pub non_zero_mem: i64,
    /// Unique across all NodeInfos of the process each time the pods change (0: never had any),
    /// so a (node name, generation) pair always names one set of pods.
    pub generation: u64,
}

/// Upstream's nextGeneration: one process-wide counter.
fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl NodeInfo {
    pub fn new(node: Arc<Node>) -> Self {
        NodeInfo {
            allocatable: allocatable(&node),
            node: Some(node),
            ..Default::default()
        }
    }

    pub fn add_pod(&mut self, p: Arc<PodInfo>) {
        self.requested.add(&p.requests);
        self.non_zero_cpu += p.non_zero_cpu;
        self.non_zero_mem += p.non_zero_mem;
        self.pods.push(p);
        self.generation = next_generation();
    }

    pub fn remove_pod(&mut self, key: &str) -> Option<Arc<PodInfo>> {
        let i = self.pods.iter().position(|p| p.key == key)?;
        let p = self.pods.swap_remove(i);
        self.requested.sub(&p.requests);
        self.non_zero_cpu -= p.non_zero_cpu;
        self.non_zero_mem -= p.non_zero_mem;
        self.generation = next_generation();
        Some(p)
    }

    pub fn name(&self) -> &str {
        self.node
            .as_ref()
            .and_then(|n| n.metadata.name.as_deref())
            .unwrap_or_default()
    }
}

/// Per-node counts of the pods a (namespace, label selector) matches, each valid while its node's
/// generation holds. Spreading counts every node's matching pods for every pod it scores; one
/// scheduling changes one node, so with this the others are not walked again (10,000 pods
/// would otherwise cost O(pods) per pod).
#[derive(Debug, Default)]
pub struct MatchCounts {
    /// (namespace + selector key) → node name → its count.
    counts: Mutex<HashMap<String, HashMap<String, NodeCount>>>,
}

/// A count and the node generation it was taken at.
#[derive(Debug, Clone, Copy)]
struct NodeCount {
    generation: u64,
    count: i64,
}

/// Past this many cached selectors the map starts over (selectors of deleted workloads go).
const MAX_CACHED_SELECTORS: usize = 4096;

impl MatchCounts {
    /// The count for `ni` under `key`, from the cache or from `count` (then remembered).
    pub fn get_or_count(&self, key: &str, ni: &NodeInfo, count: impl FnOnce() -> i64) -> i64 {
        let mut all = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cached) = all.get(key).and_then(|m| m.get(ni.name()))
            && cached.generation == ni.generation
        {
            return cached.count;
        }
        let n = count();
        if !all.contains_key(key) && all.len() >= MAX_CACHED_SELECTORS {
            all.clear();
        }
        all.entry(key.to_string()).or_default().insert(
            ni.name().to_string(),
            NodeCount {
                generation: ni.generation,
                count: n,
            },
        );
        n
    }
}

#[derive(Debug)]
struct PodState {
    node: String,
    assumed: bool,
}

/// Nodes by name, and where each known pod is.
#[derive(Debug, Default)]
pub struct Cache {
    pub nodes: HashMap<String, NodeInfo>,
    /// Node names in a stable order (the order nodes are evaluated in).
    pub order: Vec<String>,
    pods: HashMap<String, PodState>,
    /// How many cached pods have required anti-affinity / any pod affinity (plugins skip their
    /// cluster-wide pass when there are none).
    pub with_required_anti_affinity: usize,
    pub with_affinity: usize,
    /// Pending pods nominated to a node by preemption (`status.nominatedNodeName`): room is held
    /// for them against pods of lower priority.
    nominated: HashMap<String, (String, Arc<PodInfo>)>,
    /// Cached per-node selector counts (topology spreading).
    pub match_counts: MatchCounts,
}

impl Cache {
    pub fn set_node(&mut self, node: Arc<Node>) {
        let Some(name) = node.metadata.name.clone() else {
            return;
        };
        match self.nodes.get_mut(&name) {
            Some(info) => {
                if info.node.is_none() {
                    self.order.push(name.clone());
                }
                info.allocatable = allocatable(&node);
                info.node = Some(node);
            }
            None => {
                self.order.push(name.clone());
                self.nodes.insert(name, NodeInfo::new(node));
            }
        }
    }

    pub fn remove_node(&mut self, name: &str) {
        self.order.retain(|n| n != name);
        if let Some(info) = self.nodes.get_mut(name) {
            info.node = None;
            if info.pods.is_empty() {
                self.nodes.remove(name);
            }
        }
    }

    fn count(&mut self, p: &PodInfo, delta: isize) {
        if p.required_anti_affinity {
            self.with_required_anti_affinity = self
                .with_required_anti_affinity
                .saturating_add_signed(delta);
        }
        if p.any_affinity {
            self.with_affinity = self.with_affinity.saturating_add_signed(delta);
        }
    }

    fn insert(&mut self, node: &str, info: Arc<PodInfo>, assumed: bool) {
        self.count(&info, 1);
        self.pods.insert(
            info.key.clone(),
            PodState {
                node: node.to_string(),
                assumed,
            },
        );
        self.nodes
            .entry(node.to_string())
            .or_default()
            .add_pod(info);
    }

    /// Removes a pod wherever it is; returns it.
    pub fn remove_pod(&mut self, key: &str) -> Option<Arc<PodInfo>> {
        let state = self.pods.remove(key)?;
        let info = self.nodes.get_mut(&state.node)?;
        let p = info.remove_pod(key)?;
        if info.node.is_none() && info.pods.is_empty() {
            self.nodes.remove(&state.node);
        }
        self.count(&p, -1);
        Some(p)
    }

    /// A bound pod as the informer sees it (added or updated; confirms an assumed pod).
    pub fn set_bound_pod(&mut self, pod: Arc<Pod>, node: &str) {
        let info = Arc::new(PodInfo::new(pod));
        self.remove_pod(&info.key);
        self.insert(node, info, false);
    }

    /// Assumes `pod` on `node` until the bind is confirmed or forgotten.
    pub fn assume(&mut self, info: Arc<PodInfo>, node: &str) {
        self.remove_pod(&info.key);
        self.insert(node, info, true);
    }

    /// Forgets an assumed pod (its bind failed); a bound pod stays.
    pub fn forget(&mut self, key: &str) {
        if self.pods.get(key).is_some_and(|s| s.assumed) {
            self.remove_pod(key);
        }
    }

    /// Takes a pod off its node for a what-if (preemption); `put_back` restores it.
    pub fn take_pod(&mut self, key: &str) -> Option<(Arc<PodInfo>, String, bool)> {
        let state = self.pods.get(key)?;
        let (node, assumed) = (state.node.clone(), state.assumed);
        self.remove_pod(key).map(|p| (p, node, assumed))
    }

    pub fn put_back(&mut self, info: Arc<PodInfo>, node: &str, assumed: bool) {
        self.insert(node, info, assumed);
    }

    pub fn nominate(&mut self, info: Arc<PodInfo>, node: &str) {
        self.nominated
            .insert(info.key.clone(), (node.to_string(), info));
    }

    pub fn unnominate(&mut self, key: &str) {
        self.nominated.remove(key);
    }

    /// Pods of lower priority than `pod` nominated to `node` (upstream's
    /// getLowerPriorityNominatedPods).
    pub fn nominated_below(&self, node: &str, pod: &PodInfo) -> Vec<Arc<PodInfo>> {
        self.nominated
            .values()
            .filter(|(n, p)| n == node && p.key != pod.key && p.priority < pod.priority)
            .map(|(_, p)| p.clone())
            .collect()
    }

    pub fn nominated_node(&self, key: &str) -> Option<&str> {
        self.nominated.get(key).map(|(n, _)| n.as_str())
    }

    /// Room held on `node` for nominated pods other than `pod` of at least its priority.
    pub fn reserved_for(&self, node: &str, pod: &PodInfo) -> Option<Resources> {
        let mut out: Option<Resources> = None;
        for (key, (n, p)) in &self.nominated {
            if n == node && *key != pod.key && p.priority >= pod.priority {
                let r = out.get_or_insert_with(Resources::default);
                r.add(&p.requests);
                r.pods += 1;
            }
        }
        out
    }

    pub fn is_assumed(&self, key: &str) -> bool {
        self.pods.get(key).is_some_and(|s| s.assumed)
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Nodes that exist, in evaluation order.
    pub fn node_infos(&self) -> impl Iterator<Item = &NodeInfo> {
        self.order.iter().filter_map(|n| self.nodes.get(n))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, cpu: &str) -> Arc<Pod> {
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}))
            .unwrap(),
        )
    }

    #[test]
    fn assume_confirm_forget() {
        let mut c = Cache::default();
        c.set_node(Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "2", "pods": "110"}}}))
            .unwrap(),
        ));
        c.assume(Arc::new(PodInfo::new(pod("a", "1"))), "n1");
        assert_eq!(c.nodes["n1"].requested.milli_cpu, 1000);
        assert!(c.is_assumed("ns/a"));
        c.set_bound_pod(pod("a", "1"), "n1");
        assert!(!c.is_assumed("ns/a"));
        assert_eq!(
            c.nodes["n1"].requested.milli_cpu, 1000,
            "confirmed, not doubled"
        );
        c.forget("ns/a");
        assert_eq!(c.nodes["n1"].pods.len(), 1, "a bound pod is not forgotten");
        c.assume(Arc::new(PodInfo::new(pod("b", "500m"))), "n1");
        c.forget("ns/b");
        assert_eq!(c.nodes["n1"].requested.milli_cpu, 1000);
        c.remove_pod("ns/a");
        assert_eq!(c.nodes["n1"].requested.milli_cpu, 0);
        // A pod on a node not seen yet keeps a placeholder; the node is not offered.
        c.set_bound_pod(pod("x", "1"), "n2");
        assert_eq!(c.node_infos().count(), 1);
        c.remove_node("n1");
        assert_eq!(c.node_infos().count(), 0);
    }

    #[test]
    fn match_counts_hold_until_the_nodes_pods_change() {
        let mut c = Cache::default();
        c.set_node(Arc::new(
            serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap(),
        ));
        let calls = std::cell::Cell::new(0);
        let count = |c: &Cache| {
            c.match_counts.get_or_count("k", &c.nodes["n1"], || {
                calls.set(calls.get() + 1);
                c.nodes["n1"].pods.len() as i64
            })
        };
        assert_eq!(count(&c), 0);
        assert_eq!(count(&c), 0);
        assert_eq!(calls.get(), 1, "the second answer is cached");
        c.assume(Arc::new(PodInfo::new(pod("a", "1"))), "n1");
        assert_eq!(count(&c), 1, "a new pod moves the generation");
        c.forget("ns/a");
        assert_eq!(count(&c), 0, "so does a forgotten one");
        assert_eq!(calls.get(), 3);
        // Another NodeInfo of the same name never reuses a generation of this one.
        let mut other = NodeInfo::new(c.nodes["n1"].node.clone().unwrap());
        other.add_pod(Arc::new(PodInfo::new(pod("b", "1"))));
        other.add_pod(Arc::new(PodInfo::new(pod("c", "1"))));
        assert_ne!(other.generation, c.nodes["n1"].generation);
        assert_eq!(c.match_counts.get_or_count("k", &other, || 2), 2);
        assert_eq!(count(&c), 0);
    }
}
