//! The node lifecycle controller (upstream `pkg/controller/nodelifecycle`) with the taint
//! eviction controller (`pkg/controller/tainteviction`):
//! - a node whose Lease (or Ready heartbeat) has not moved for `--node-monitor-grace-period`
//!   gets its kubelet conditions set Unknown (`NodeStatusUnknown`, "Kubelet stopped posting node
//!   status.") and its pods marked not Ready;
//! - NoExecute taints `node.kubernetes.io/not-ready` / `unreachable` follow the Ready condition
//!   (rate-limited per zone, none while every zone is fully disrupted), and NoSchedule taints
//!   follow Ready, the pressure conditions and `spec.unschedulable` (TaintNodesByCondition);
//! - pods on a node with NoExecute taints they do not tolerate are deleted (at once, or when the
//!   shortest matching `tolerationSeconds` has passed since the taint was added), each with a
//!   `DisruptionTarget` condition and a `TaintManagerEviction` event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use tokio::time::Instant;

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::events::{EventRecorder, NORMAL, object_reference};
use crate::informer::{Store, pod_node_name_index};
use crate::workqueue::WorkQueue;

pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
const LEASE_NAMESPACE: &str = "kube-node-lease";
/// Upstream's `--node-monitor-period`.
const MONITOR_PERIOD: Duration = Duration::from_secs(5);
/// `--node-eviction-rate` 0.1 nodes/s, `--secondary-node-eviction-rate` 0.01,
/// `--large-cluster-size-threshold` 50, `--unhealthy-zone-threshold` 0.55.
const EVICTION_INTERVAL: Duration = Duration::from_secs(10);
const SECONDARY_EVICTION_INTERVAL: Duration = Duration::from_secs(100);
const LARGE_CLUSTER: usize = 50;
const UNHEALTHY_ZONE: f64 = 0.55;

/// NoSchedule taints for conditions (upstream's `nodeConditionToTaintKeyStatusMap`).
const CONDITION_TAINTS: [(&str, &str, &str); 5] = [
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    (
        "MemoryPressure",
        "True",
        "node.kubernetes.io/memory-pressure",
    ),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
];
const NETWORK_UNAVAILABLE: (&str, &str, &str) = (
    "NetworkUnavailable",
    "True",
    "node.kubernetes.io/network-unavailable",
);

/// What the controller saw of a node's heartbeats, by its own clock (upstream's
/// `nodeHealthData.probeTimestamp`, immune to clock skew).
struct Health {
    renew: Option<String>,
    heartbeat: Option<String>,
    probed: Instant,
}

struct NodeLifecycle {
    client: Client,
    nodes: Arc<Store<Node>>,
    leases: Arc<Store<Lease>>,
    pods: Arc<Store<Pod>>,
    recorder: EventRecorder,
    grace: Duration,
    health: Mutex<HashMap<String, Health>>,
    /// When each zone last got a NoExecute taint added (the eviction rate limiter).
    zone_tainted: Mutex<HashMap<String, Instant>>,
    /// Pods (by uid) seen on a NoExecute-tainted node, and since when: their tolerationSeconds
    /// count from there, as upstream's taint eviction queue.
    tainted_since: Mutex<HashMap<String, HashMap<String, Timestamp>>>,
}

pub fn start(ctx: ControllerContext) {
    let nodes = ctx.factory.informer::<Node>();
    let leases = ctx.factory.informer::<Lease>();
    let pods = ctx.factory.informer::<Pod>();
    pods.store().add_index("node", pod_node_name_index());
    let queue = ctx.queue();
    {
        let q = queue.clone();
        nodes.add_handler(move |d| q.add(crate::informer::key_of(d.object().as_ref())));
    }
    {
        let q = queue.clone();
        leases.add_handler(move |d| {
            let l = d.object();
            if l.metadata.namespace.as_deref() == Some(LEASE_NAMESPACE)
                && let Some(n) = &l.metadata.name
            {
                q.add(n.clone());
            }
        });
    }
    {
        // A pod arriving on (or changing tolerations on) a tainted node is looked at.
        let (q, node_store) = (queue.clone(), nodes.store());
        pods.add_handler(move |d| {
            let p = d.object();
            if let Some(n) = p.spec.as_ref().and_then(|s| s.node_name.as_deref())
                && node_store
                    .get(n)
                    .is_some_and(|n| !no_execute_taints(&n).is_empty())
            {
                q.add(n.to_string());
            }
        });
    }
    let controller = Arc::new(NodeLifecycle {
        client: ctx.client.clone(),
        nodes: nodes.store(),
        leases: leases.store(),
        pods: pods.store(),
        recorder: ctx.recorder.clone(),
        grace: ctx.options.node_monitor_grace_period,
        health: Mutex::new(HashMap::new()),
        zone_tainted: Mutex::new(HashMap::new()),
        tainted_since: Mutex::new(HashMap::new()),
    });
    // Every monitor period each node is looked at again (a silent Lease is noticed by time).
    let period = MONITOR_PERIOD.min(ctx.options.node_monitor_grace_period / 4);
    let period = period.max(Duration::from_millis(200));
    spawn_monitor(queue.clone(), nodes.store(), period, ctx.shutdown.clone());
    ctx.run_workers(controller, queue, ctx.workers("node-lifecycle", 1));
}

fn spawn_monitor(
    queue: WorkQueue,
    nodes: Arc<Store<Node>>,
    period: Duration,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                _ = tick.tick() => {}
            }
            for k in nodes.keys() {
                queue.add(k);
            }
        }
    });
}

fn conditions(node: &Node) -> &[NodeCondition] {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
}

fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    conditions(node).iter().find(|c| c.type_ == type_)
}

fn ready_status(node: &Node) -> &str {
    condition(node, "Ready").map_or("Unknown", |c| c.status.as_str())
}

fn taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
}

fn no_execute_taints(node: &Node) -> Vec<&Taint> {
    taints(node)
        .iter()
        .filter(|t| t.effect == "NoExecute")
        .collect()
}

fn zone(node: &Node) -> String {
    let labels = node.metadata.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).cloned().unwrap_or_default();
    // Upstream's zone key: region and zone joined (`:\0:`).
    format!(
        "{}:\u{0}:{}",
        get("topology.kubernetes.io/region"),
        get("topology.kubernetes.io/zone")
    )
}

/// The NoSchedule taint keys the node's conditions and spec call for (TaintNodesByCondition).
pub fn desired_no_schedule(node: &Node) -> Vec<&'static str> {
    let mut keys = Vec::new();
    let have = |t: &str, s: &str| condition(node, t).is_some_and(|c| c.status == s);
    for (t, s, key) in CONDITION_TAINTS {
        if have(t, s) {
            keys.push(key);
        }
    }
    if have(NETWORK_UNAVAILABLE.0, NETWORK_UNAVAILABLE.1) {
        keys.push(NETWORK_UNAVAILABLE.2);
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        keys.push(UNSCHEDULABLE);
    }
    keys
}

/// The NoExecute taint the Ready condition calls for.
pub fn desired_no_execute(node: &Node) -> Option<&'static str> {
    match ready_status(node) {
        "True" => None,
        "False" => Some(NOT_READY),
        _ => Some(UNREACHABLE),
    }
}

/// The node's taints with the controller-managed ones made as wanted (`no_execute`: the
/// NoExecute taint to hold, when tainting is allowed; `None` keeps whatever is there when
/// `keep_no_execute`).
pub fn reconcile_taints(
    node: &Node,
    no_execute: Option<&'static str>,
    keep_no_execute: bool,
    now: Timestamp,
) -> Vec<Taint> {
    let managed_no_schedule: Vec<&str> = CONDITION_TAINTS
        .iter()
        .map(|c| c.2)
        .chain([NETWORK_UNAVAILABLE.2, UNSCHEDULABLE])
        .collect();
    let want_ns = desired_no_schedule(node);
    let mut out: Vec<Taint> = Vec::new();
    for t in taints(node) {
        let managed_ns = t.effect == "NoSchedule" && managed_no_schedule.contains(&t.key.as_str());
        let managed_ne = t.effect == "NoExecute" && (t.key == NOT_READY || t.key == UNREACHABLE);
        if managed_ns && !want_ns.contains(&t.key.as_str()) {
            continue;
        }
        if managed_ne && !keep_no_execute && no_execute != Some(t.key.as_str()) {
            continue;
        }
        if out.iter().any(|o| o.key == t.key && o.effect == t.effect) {
            continue;
        }
        out.push(t.clone());
    }
    for key in want_ns {
        if !out.iter().any(|t| t.key == key && t.effect == "NoSchedule") {
            // Upstream's SwapNodeControllerTaint stamps every taint it adds.
            out.push(Taint {
                key: key.into(),
                effect: "NoSchedule".into(),
                time_added: Some(Time(now)),
                ..Default::default()
            });
        }
    }
    if let Some(key) = no_execute
        && !out.iter().any(|t| t.key == key && t.effect == "NoExecute")
    {
        out.push(Taint {
            key: key.into(),
            effect: "NoExecute".into(),
            time_added: Some(Time(now)),
            ..Default::default()
        });
    }
    out
}

/// Whether a toleration matches a taint (upstream `Toleration.ToleratesTaint`).
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

/// How long a pod may stay on a node with these NoExecute taints: `None` forever (every taint
/// tolerated without a limit), `Some(0)` not at all (a taint not tolerated), else the shortest
/// `tolerationSeconds` of the matching tolerations.
pub fn toleration_limit(pod: &Pod, taints: &[&Taint]) -> Option<i64> {
    if taints.is_empty() {
        return None;
    }
    let tolerations: &[Toleration] = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let mut limit: Option<i64> = None;
    for taint in taints {
        let matching: Vec<&Toleration> =
            tolerations.iter().filter(|t| tolerates(t, taint)).collect();
        if matching.is_empty() {
            return Some(0);
        }
        if let Some(secs) = matching.iter().filter_map(|t| t.toleration_seconds).min() {
            let secs = secs.max(0);
            limit = Some(limit.map_or(secs, |l| l.min(secs)));
        }
    }
    limit
}

/// Upstream's zone states from the Ready conditions of a zone's nodes.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum ZoneState {
    Normal,
    PartialDisruption,
    FullDisruption,
}

pub fn zone_state(ready: usize, not_ready: usize) -> ZoneState {
    let total = ready + not_ready;
    if ready == 0 && not_ready > 0 {
        ZoneState::FullDisruption
    } else if not_ready > 2 && total > 0 && not_ready as f64 / total as f64 >= UNHEALTHY_ZONE {
        ZoneState::PartialDisruption
    } else {
        ZoneState::Normal
    }
}

impl NodeLifecycle {
    /// Zone states over every node, and whether all zones are fully disrupted.
    fn zones(&self) -> (HashMap<String, (ZoneState, usize)>, bool) {
        let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
        for n in self.nodes.list() {
            let c = counts.entry(zone(&n)).or_default();
            if ready_status(&n) == "True" {
                c.0 += 1;
            } else {
                c.1 += 1;
            }
        }
        let states: HashMap<String, (ZoneState, usize)> = counts
            .into_iter()
            .map(|(z, (r, nr))| (z, (zone_state(r, nr), r + nr)))
            .collect();
        let all_down = !states.is_empty()
            && states
                .values()
                .all(|(s, _)| *s == ZoneState::FullDisruption);
        (states, all_down)
    }

    /// Whether the zone may have one more node tainted NoExecute now.
    fn may_taint(&self, zone: &str, state: ZoneState, size: usize) -> bool {
        let interval = match state {
            ZoneState::Normal => EVICTION_INTERVAL,
            ZoneState::PartialDisruption if size > LARGE_CLUSTER => SECONDARY_EVICTION_INTERVAL,
            _ => return false,
        };
        let mut last = self
            .zone_tainted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match last.get(zone) {
            Some(t) if t.elapsed() < interval => false,
            _ => {
                last.insert(zone.to_string(), Instant::now());
                true
            }
        }
    }

    /// Whether the node's heartbeats went silent for the grace period.
    fn stale(&self, name: &str, node: &Node) -> bool {
        let renew = self
            .leases
            .get_named(Some(LEASE_NAMESPACE), name)
            .and_then(|l| {
                l.spec
                    .as_ref()?
                    .renew_time
                    .as_ref()
                    .map(|t| t.0.to_string())
            });
        let heartbeat = condition(node, "Ready")
            .and_then(|c| c.last_heartbeat_time.as_ref())
            .map(|t| t.0.to_string());
        let mut health = self
            .health
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let h = health.entry(name.to_string()).or_insert_with(|| Health {
            renew: renew.clone(),
            heartbeat: heartbeat.clone(),
            probed: Instant::now(),
        });
        if h.renew != renew || h.heartbeat != heartbeat {
            h.renew = renew;
            h.heartbeat = heartbeat;
            h.probed = Instant::now();
        }
        h.probed.elapsed() >= self.grace
    }

    /// Sets the kubelet's conditions Unknown (upstream `tryUpdateNodeHealth`).
    async fn mark_unknown(&self, node: &Node, now: Timestamp) -> Result<Option<Node>, Error> {
        let mut updated = node.clone();
        let status = updated.status.get_or_insert_with(Default::default);
        let conds = status.conditions.get_or_insert_with(Vec::new);
        let mut changed = false;
        for type_ in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
            match conds.iter_mut().find(|c| c.type_ == type_) {
                Some(c) if c.status == "Unknown" => {}
                Some(c) => {
                    c.status = "Unknown".into();
                    c.reason = Some("NodeStatusUnknown".into());
                    c.message = Some("Kubelet stopped posting node status.".into());
                    c.last_transition_time = Some(Time(now));
                    changed = true;
                }
                None => {
                    conds.push(NodeCondition {
                        type_: type_.into(),
                        status: "Unknown".into(),
                        reason: Some("NodeStatusNeverUpdated".into()),
                        message: Some("Kubelet never posted node status.".into()),
                        last_heartbeat_time: node.metadata.creation_timestamp.clone(),
                        last_transition_time: Some(Time(now)),
                    });
                    changed = true;
                }
            }
        }
        if !changed {
            return Ok(None);
        }
        let api: Api<Node> = Api::all(self.client.clone());
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let stored = api
            .replace_status(name, &PostParams::default(), &updated)
            .await?;
        tracing::info!(
            node = name,
            "node stopped posting status; conditions set Unknown"
        );
        Ok(Some(stored))
    }

    /// Marks the node's pods not Ready (upstream `MarkPodsNotReady`).
    async fn mark_pods_not_ready(&self, name: &str, now: Timestamp) {
        for pod in self.pods.by_index("node", name) {
            let ready = pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
            if ready.is_none_or(|c| c.status != "True") {
                continue;
            }
            let mut updated = (*pod).clone();
            if let Some(c) = updated
                .status
                .as_mut()
                .and_then(|s| s.conditions.as_mut())
                .and_then(|c| c.iter_mut().find(|c| c.type_ == "Ready"))
            {
                c.status = "False".into();
                c.last_transition_time = Some(Time(now));
            }
            let api: Api<Pod> = Api::namespaced(
                self.client.clone(),
                pod.metadata.namespace.as_deref().unwrap_or_default(),
            );
            let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
            if let Err(e) = api
                .replace_status(pod_name, &PostParams::default(), &updated)
                .await
            {
                tracing::debug!(pod = pod_name, error = %e, "pod not marked not ready");
            }
        }
    }

    /// Evicts the node's pods that do not tolerate its NoExecute taints; returns the next
    /// eviction due.
    async fn evict(&self, node: &Node, now: Timestamp) -> Option<Timestamp> {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let taints = no_execute_taints(node);
        let mut next: Option<Timestamp> = None;
        let old = self
            .tainted_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(name)
            .unwrap_or_default();
        let mut seen = HashMap::new();
        let mut due_now = Vec::new();
        for pod in self.pods.by_index("node", name) {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let Some(limit) = toleration_limit(&pod, &taints) else {
                continue;
            };
            let since = old.get(&uid).copied().unwrap_or(now);
            seen.insert(uid, since);
            if pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let due = since + jiff::SignedDuration::from_secs(limit);
            if due > now {
                next = Some(next.map_or(due, |n| n.min(due)));
                continue;
            }
            due_now.push(pod);
        }
        if !seen.is_empty() {
            self.tainted_since
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name.to_string(), seen);
        }
        for pod in due_now {
            self.delete_pod(&pod, now).await;
        }
        next
    }

    async fn delete_pod(&self, pod: &Pod, now: Timestamp) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        self.recorder.event(
            &object_reference(pod),
            NORMAL,
            "TaintManagerEviction",
            &format!("Marking for deletion Pod {ns}/{name}"),
        );
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let terminal = matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        );
        if !terminal {
            let patch = serde_json::json!({
                "status": { "conditions": [{
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "DeletionByTaintManager",
                    "message": "Taint manager: deleting due to NoExecute taint",
                    "lastTransitionTime": Time(now),
                }]}
            });
            if let Err(e) = api
                .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
                && !is_not_found(&e)
            {
                tracing::debug!(pod = name, error = %e, "DisruptionTarget not added");
            }
        }
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(pod = %format!("{ns}/{name}"), "evicted by NoExecute taint"),
            Err(e) if is_not_found(&e) => {}
            Err(e) => tracing::debug!(pod = name, error = %e, "eviction failed"),
        }
    }
}

impl Reconciler for NodeLifecycle {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(node) = self.nodes.get(key) else {
            self.health
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(key);
            self.tainted_since
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(key);
            return Ok(Action::Done);
        };
        let now = Timestamp::now();
        let mut node = (*node).clone();
        if self.stale(key, &node)
            && let Some(updated) = self.mark_unknown(&node, now).await?
        {
            node = updated;
        }
        // A node that never reported Ready is left alone until it is marked Unknown (upstream's
        // processPod returns early without a Ready condition).
        if condition(&node, "Ready").is_some_and(|c| c.status != "True") {
            self.mark_pods_not_ready(key, now).await;
        }
        // NoExecute tainting: none while every zone is down (upstream's "master disruption").
        let (zones, all_down) = self.zones();
        let want_ne = desired_no_execute(&node);
        let has_ne = |k: &str| no_execute_taints(&node).iter().any(|t| t.key == k);
        let no_execute = match want_ne {
            _ if all_down => None,
            None => None,
            Some(k) if has_ne(k) => Some(k),
            Some(k) => {
                let z = zone(&node);
                let (state, size) = zones.get(&z).copied().unwrap_or((ZoneState::Normal, 1));
                if self.may_taint(&z, state, size) {
                    Some(k)
                } else {
                    // Wait for the rate limiter; keep what is there meanwhile.
                    None
                }
            }
        };
        let keep = !all_down && want_ne.is_some() && no_execute.is_none();
        let taints = reconcile_taints(&node, no_execute, keep, now);
        if taints != self::taints(&node) {
            let mut updated = node.clone();
            updated.spec.get_or_insert_with(Default::default).taints =
                (!taints.is_empty()).then_some(taints);
            let api: Api<Node> = Api::all(self.client.clone());
            node = api.replace(key, &PostParams::default(), &updated).await?;
        }
        let next = self.evict(&node, now).await;
        let mut after = MONITOR_PERIOD;
        if let Some(at) = next {
            let left = Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or_default();
            after = after.min(left.max(Duration::from_millis(100)));
        }
        if keep {
            after = after.min(EVICTION_INTERVAL);
        }
        // The periodic monitor looks again anyway; a due eviction sooner than that is queued.
        Ok(if next.is_some() || keep {
            Action::RequeueAfter(after)
        } else {
            Action::Done
        })
    }
}

#[cfg(test)]
mod tests;
