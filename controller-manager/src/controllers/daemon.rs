//! The daemonset controller (upstream `pkg/controller/daemon`): one pod per eligible node
//! (nodeSelector, required node affinity, taints against the template's tolerations plus the
//! ones every daemon pod gets), each pinned to its node by a `matchFields metadata.name` node
//! affinity for the scheduler to bind; ControllerRevisions with `controller-revision-hash` and
//! `pod-template-generation` labels; RollingUpdate (`maxUnavailable`, `maxSurge`) and
//! OnDelete; failed pods deleted with backoff; status per node.

pub mod util;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use tokio::time::Instant;

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::controllers::controller_utils::{self, controller_ref, new_controller_ref};
use crate::controllers::history::{self, CONTROLLER_REVISION_HASH};
use crate::controllers::selector_matches;
use crate::events::{EventRecorder, NORMAL, WARNING, object_reference};
use crate::expectations::Expectations;
use crate::informer::{Delta, Store, key_of};

pub use util::{
    daemon_pod_template, fits_node_affinity, is_pod_updated, node_should_run_daemon_pod,
    pin_to_node, target_node_name, template_generation, tolerates,
};

/// Upstream's BurstReplicas: at most this many creates or deletes per sync.
const BURST_REPLICAS: usize = 250;
/// Upstream's failedPodsBackoff: 1 s doubling to 15 minutes.
const BACKOFF_INITIAL: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(15 * 60);

struct DaemonSetsController {
    client: Client,
    recorder: EventRecorder,
    sets: Arc<Store<DaemonSet>>,
    pods: Arc<Store<Pod>>,
    nodes: Arc<Store<Node>>,
    revisions: Arc<Store<ControllerRevision>>,
    expectations: Arc<Expectations>,
    /// Failed-pod deletions per `<ds uid>/<node>`: the current delay and when it was set.
    backoff: Mutex<HashMap<String, (Duration, Instant)>>,
}

pub fn start(ctx: ControllerContext) {
    let sets = ctx.factory.informer::<DaemonSet>();
    let pods = ctx.factory.informer::<Pod>();
    let nodes = ctx.factory.informer::<Node>();
    let revisions = ctx.factory.informer::<ControllerRevision>();
    let queue = ctx.queue();
    let expectations = Arc::new(Expectations::default());
    {
        let (queue, expectations) = (queue.clone(), expectations.clone());
        sets.add_handler(move |d: &Delta<DaemonSet>| {
            let key = key_of(d.object().as_ref());
            if matches!(d, Delta::Deleted(_)) {
                expectations.delete(&key);
            }
            queue.add(key);
        });
    }
    {
        let (queue, expectations, set_store) = (queue.clone(), expectations.clone(), sets.store());
        pods.add_handler(move |d: &Delta<Pod>| {
            let pod = d.object();
            let ns = pod.namespace().unwrap_or_default();
            let owner = |p: &Pod| {
                controller_ref(&p.metadata)
                    .filter(|r| r.kind == "DaemonSet")
                    .and_then(|r| {
                        set_store
                            .get_named(Some(&ns), &r.name)
                            .filter(|s| s.metadata.uid.as_deref() == Some(r.uid.as_str()))
                    })
                    .map(|s| key_of(s.as_ref()))
            };
            match d {
                Delta::Added(p) => {
                    if let Some(key) = owner(p) {
                        expectations.creation_observed(&key);
                        queue.add(key);
                    } else if controller_ref(&p.metadata).is_none() {
                        for key in matching_sets(&set_store, p) {
                            queue.add(key);
                        }
                    }
                }
                Delta::Updated { old, new } => {
                    let (a, b) = (owner(old), owner(new));
                    if a != b
                        && let Some(k) = a
                    {
                        queue.add(k);
                    }
                    if let Some(key) = b {
                        queue.add(key);
                    } else if controller_ref(&new.metadata).is_none() {
                        for key in matching_sets(&set_store, new) {
                            queue.add(key);
                        }
                    }
                }
                Delta::Deleted(p) => {
                    if let Some(key) = owner(p) {
                        expectations.deletion_observed(&key);
                        queue.add(key);
                    }
                }
            }
        });
    }
    {
        let (queue, set_store) = (queue.clone(), sets.store());
        nodes.add_handler(move |d: &Delta<Node>| {
            if let Delta::Updated { old, new } = d
                && !node_changed(old, new)
            {
                return;
            }
            for s in set_store.list() {
                queue.add(key_of(s.as_ref()));
            }
        });
    }
    let reconciler = Arc::new(DaemonSetsController {
        client: ctx.client.clone(),
        recorder: ctx.recorder.clone(),
        sets: sets.store(),
        pods: pods.store(),
        nodes: nodes.store(),
        revisions: revisions.store(),
        expectations,
        backoff: Mutex::new(HashMap::new()),
    });
    let workers = ctx.workers("daemonset", 2);
    ctx.run_workers(reconciler, queue, workers);
}

/// Whether a node update can change where daemon pods run (upstream's shouldIgnoreNodeUpdate
/// inverted): labels, taints, unschedulable, or the Ready condition.
fn node_changed(old: &Node, new: &Node) -> bool {
    let ready = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .map(|c| c.status.clone())
    };
    old.metadata.labels != new.metadata.labels
        || old.spec.as_ref().and_then(|s| s.taints.clone())
            != new.spec.as_ref().and_then(|s| s.taints.clone())
        || old.spec.as_ref().and_then(|s| s.unschedulable)
            != new.spec.as_ref().and_then(|s| s.unschedulable)
        || ready(old) != ready(new)
}

/// Daemon sets in the pod's namespace whose selector matches it.
fn matching_sets(sets: &Store<DaemonSet>, pod: &Pod) -> Vec<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    sets.list_namespace(&pod.namespace().unwrap_or_default())
        .iter()
        .filter(|s| {
            selector_matches(
                s.spec.as_ref().map(|sp| &sp.selector),
                pod.metadata.labels.as_ref(),
            )
        })
        .map(|s| key_of(s.as_ref()))
        .collect()
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn creation(pod: &Pod) -> Option<jiff::Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// Upstream's podByCreationTimestampAndPhase: older first, running before others.
fn sort_pods(pods: &mut [Pod]) {
    pods.sort_by(|a, b| {
        creation(a)
            .cmp(&creation(b))
            .then_with(|| (phase(b) == "Running").cmp(&(phase(a) == "Running")))
            .then_with(|| a.name_any().cmp(&b.name_any()))
    });
}

fn min_ready_seconds(ds: &DaemonSet) -> i32 {
    ds.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

fn available(pod: &Pod, mrs: i32) -> bool {
    controller_utils::is_pod_available(pod, mrs, jiff::Timestamp::now())
}

/// Upstream's GetScaledValueFromIntOrPercent, rounding up.
pub fn scaled(value: Option<&IntOrString>, total: i32) -> i32 {
    match value {
        None => 0,
        Some(IntOrString::Int(i)) => *i,
        Some(IntOrString::String(s)) => {
            match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
                Some(p) => {
                    let v = (p * i64::from(total) + 99) / 100;
                    i32::try_from(v).unwrap_or(i32::MAX)
                }
                None => s.parse().unwrap_or(0),
            }
        }
    }
}

/// The pods of a node that the rolling update looks at: the updated one and the old one
/// (upstream's findUpdatedPodsOnNode; `None` when there are several of either).
pub fn updated_and_old<'a>(
    pods: &'a [Pod],
    hash: &str,
    generation: Option<i64>,
) -> Option<(Option<&'a Pod>, Option<&'a Pod>)> {
    let (mut new, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let slot = if is_pod_updated(pod, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod);
    }
    Some((new, old))
}

/// What the rolling update decided: pods to delete and nodes to surge onto.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RollingPlan {
    pub delete: Vec<String>,
    pub create_on: Vec<String>,
}

/// Upstream's rollingUpdate for one sync. `node_pods` holds every node that should run a pod
/// (possibly with none) and every node that has daemon pods; `should_run` tells which nodes
/// should run one.
pub fn rolling_plan(
    node_pods: &BTreeMap<String, Vec<Pod>>,
    should_run: &HashSet<String>,
    hash: &str,
    generation: Option<i64>,
    max_surge: i32,
    max_unavailable: i32,
    mrs: i32,
) -> RollingPlan {
    let mut plan = RollingPlan::default();
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut replace = Vec::new();
        let mut candidates = Vec::new();
        for pods in node_pods.values() {
            let Some((new, old)) = updated_and_old(pods, hash, generation) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(n), None) => {
                    if !available(n, mrs) {
                        unavailable += 1;
                    }
                }
                (None, Some(o)) => {
                    if !available(o, mrs) {
                        replace.push(o.name_any());
                    } else if unavailable < max_unavailable {
                        candidates.push(o.name_any());
                    }
                }
            }
        }
        let remaining = usize::try_from((max_unavailable - unavailable).max(0)).unwrap_or(0);
        plan.delete = replace;
        plan.delete.extend(candidates.into_iter().take(remaining));
        return plan;
    }
    let mut surge = 0;
    let mut allowed_nodes = Vec::new();
    let mut candidate_nodes = Vec::new();
    for (node, pods) in node_pods {
        let Some((new, old)) = updated_and_old(pods, hash, generation) else {
            continue;
        };
        let Some(old) = old else {
            continue;
        };
        match new {
            None => {
                if !available(old, mrs) {
                    if !should_run.contains(node) {
                        plan.delete.push(old.name_any());
                        continue;
                    }
                    allowed_nodes.push(node.clone());
                } else if surge < max_surge {
                    candidate_nodes.push(node.clone());
                }
            }
            Some(new) => {
                if !available(new, mrs) {
                    surge += 1;
                    continue;
                }
                plan.delete.push(old.name_any());
            }
        }
    }
    let remaining = usize::try_from((max_surge - surge).max(0)).unwrap_or(0);
    plan.create_on = allowed_nodes;
    plan.create_on
        .extend(candidate_nodes.into_iter().take(remaining));
    plan
}

/// A status computed from the nodes and pods.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub desired: i32,
    pub current: i32,
    pub misscheduled: i32,
    pub ready: i32,
    pub available: i32,
    pub updated: i32,
}

impl Reconciler for DaemonSetsController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(ds) = self.sets.get(key) else {
            self.expectations.delete(key);
            return Ok(Action::Done);
        };
        let ds = ds.as_ref().clone();
        let Some(selector) = ds.spec.as_ref().map(|s| s.selector.clone()) else {
            return Ok(Action::Done);
        };
        if selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && selector
                .match_expressions
                .as_ref()
                .is_none_or(|m| m.is_empty())
        {
            self.recorder.event(
                &object_reference(&ds),
                WARNING,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            );
            return Ok(Action::Done);
        }
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let nodes = self.nodes.list();
        let pods = self.daemon_pods(&ds).await?;
        let cur = self.construct_history(&ds, &pods).await?;
        let hash = cur
            .0
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH))
            .cloned()
            .unwrap_or_default();
        if !self.expectations.satisfied(key) {
            self.update_status(&ds, &nodes, &pods, &hash, false).await?;
            return Ok(Action::Done);
        }
        let mut requeue: Option<Duration> = None;
        let result = self
            .manage(&ds, key, &nodes, &pods, &hash, &mut requeue)
            .await;
        if result.is_ok()
            && self.expectations.satisfied(key)
            && ds
                .spec
                .as_ref()
                .and_then(|s| s.update_strategy.as_ref())
                .and_then(|u| u.type_.as_deref())
                .unwrap_or("RollingUpdate")
                == "RollingUpdate"
        {
            self.rolling_update(&ds, key, &nodes, &pods, &hash).await?;
        }
        result?;
        self.cleanup_history(&ds, &pods, cur.1).await?;
        let counts = self.update_status(&ds, &nodes, &pods, &hash, true).await?;
        let mrs = min_ready_seconds(&ds);
        if mrs > 0 && counts.ready != counts.available {
            let d = Duration::from_secs(mrs.unsigned_abs().into());
            requeue = Some(requeue.map_or(d, |r| r.min(d)));
        }
        Ok(requeue.map_or(Action::Done, Action::RequeueAfter))
    }
}

impl DaemonSetsController {
    /// The pods the DaemonSet controls, adopting orphans its selector matches.
    async fn daemon_pods(&self, ds: &DaemonSet) -> Result<Vec<Pod>, Error> {
        let candidates = self
            .pods
            .list_namespace(&ds.namespace().unwrap_or_default());
        let claimed = controller_utils::claim(
            &self.client,
            &ds.metadata,
            &new_controller_ref(ds),
            ds.spec.as_ref().map(|s| &s.selector),
            candidates,
        )
        .await?;
        Ok(claimed.into_iter().map(|p| p.as_ref().clone()).collect())
    }

    /// Pods by the node they target, leaving out finished pods being deleted.
    fn node_to_pods(pods: &[Pod], include_deleted_terminal: bool) -> BTreeMap<String, Vec<Pod>> {
        let mut map: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
        for pod in pods {
            let terminal = matches!(phase(pod), "Succeeded" | "Failed");
            if !include_deleted_terminal && terminal && pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            if let Some(node) = target_node_name(pod) {
                map.entry(node).or_default().push(pod.clone());
            }
        }
        for list in map.values_mut() {
            sort_pods(list);
        }
        map
    }

    /// Upstream's manage: pods created on nodes that should run one and have none, surplus
    /// and misplaced pods deleted, failed pods deleted with backoff.
    async fn manage(
        &self,
        ds: &DaemonSet,
        key: &str,
        nodes: &[Arc<Node>],
        pods: &[Pod],
        hash: &str,
        requeue: &mut Option<Duration>,
    ) -> Result<(), Error> {
        let node_pods = Self::node_to_pods(pods, false);
        let mut create_on = Vec::new();
        let mut delete = Vec::new();
        let surge = self.allows_surge(ds);
        let mrs = min_ready_seconds(ds);
        for node in nodes {
            let name = node.name_any();
            let (should_run, should_continue) = node_should_run_daemon_pod(node, ds);
            let daemon_pods = node_pods.get(&name);
            let exists = daemon_pods.is_some_and(|p| !p.is_empty());
            if should_run && !exists {
                create_on.push(name);
                continue;
            }
            let Some(daemon_pods) = daemon_pods else {
                continue;
            };
            if !should_continue {
                delete.extend(
                    daemon_pods
                        .iter()
                        .filter(|p| p.metadata.deletion_timestamp.is_none())
                        .map(|p| p.name_any()),
                );
                continue;
            }
            let mut running = Vec::new();
            for pod in daemon_pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
            {
                match phase(pod) {
                    "Failed" => {
                        let bkey =
                            format!("{}/{name}", ds.metadata.uid.as_deref().unwrap_or_default());
                        if let Some(delay) = self.in_backoff(&bkey) {
                            *requeue = Some(requeue.map_or(delay, |r| r.min(delay)));
                            continue;
                        }
                        self.next_backoff(&bkey);
                        self.recorder.event(
                            &object_reference(ds),
                            WARNING,
                            "FailedDaemonPod",
                            &format!(
                                "Found failed daemon pod {}/{} on node {name}, will try to kill it",
                                pod.namespace().unwrap_or_default(),
                                pod.name_any()
                            ),
                        );
                        delete.push(pod.name_any());
                    }
                    "Succeeded" => delete.push(pod.name_any()),
                    _ => running.push(pod),
                }
            }
            if running.len() <= 1 {
                continue;
            }
            if !surge {
                // More than one: all but the oldest go.
                delete.extend(running[1..].iter().map(|p| p.name_any()));
                continue;
            }
            // With surge, an old ready pod and a new one not yet available may coexist.
            let (mut oldest_new, mut oldest_old) = (None, None);
            for pod in running {
                let is_new = pod
                    .labels()
                    .get(CONTROLLER_REVISION_HASH)
                    .map(String::as_str)
                    == Some(hash);
                let slot = if is_new {
                    &mut oldest_new
                } else {
                    &mut oldest_old
                };
                if slot.is_none() {
                    *slot = Some(pod);
                } else {
                    delete.push(pod.name_any());
                }
            }
            if let (Some(n), Some(o)) = (oldest_new, oldest_old)
                && (!controller_utils::is_pod_ready(o) || available(n, mrs))
            {
                delete.push(o.name_any());
            }
        }
        // Unscheduled pods aimed at nodes that no longer exist.
        let existing: HashSet<String> = nodes.iter().map(|n| n.name_any()).collect();
        for (node, list) in &node_pods {
            if !existing.contains(node) {
                delete.extend(
                    list.iter()
                        .filter(|p| {
                            p.spec
                                .as_ref()
                                .and_then(|s| s.node_name.as_deref())
                                .unwrap_or_default()
                                .is_empty()
                        })
                        .map(|p| p.name_any()),
                );
            }
        }
        self.sync_nodes(ds, key, delete, create_on, hash).await
    }

    fn allows_surge(&self, ds: &DaemonSet) -> bool {
        let ru = ds
            .spec
            .as_ref()
            .and_then(|s| s.update_strategy.as_ref())
            .filter(|u| u.type_.as_deref().unwrap_or("RollingUpdate") == "RollingUpdate")
            .and_then(|u| u.rolling_update.as_ref());
        // Any non-zero surge (a percentage may round to zero only with no nodes).
        ru.and_then(|r| r.max_surge.as_ref())
            .is_some_and(|s| scaled(Some(s), 1) != 0)
    }

    fn in_backoff(&self, key: &str) -> Option<Duration> {
        let b = self
            .backoff
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        b.get(key)
            .filter(|(d, at)| at.elapsed() < *d)
            .map(|(d, at)| d.saturating_sub(at.elapsed()))
    }

    fn next_backoff(&self, key: &str) {
        let mut b = self
            .backoff
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let entry = b.entry(key.to_string()).or_insert((Duration::ZERO, now));
        entry.0 = if entry.0.is_zero() || entry.1.elapsed() > 2 * BACKOFF_MAX {
            BACKOFF_INITIAL
        } else {
            (entry.0 * 2).min(BACKOFF_MAX)
        };
        entry.1 = now;
        if b.len() > 4096 {
            b.retain(|_, (_, at)| at.elapsed() < 2 * BACKOFF_MAX);
        }
    }

    /// Upstream's syncNodes: creates pinned pods and deletes pods, with expectations.
    async fn sync_nodes(
        &self,
        ds: &DaemonSet,
        key: &str,
        mut delete: Vec<String>,
        mut create_on: Vec<String>,
        hash: &str,
    ) -> Result<(), Error> {
        create_on.truncate(BURST_REPLICAS);
        delete.truncate(BURST_REPLICAS);
        if create_on.is_empty() && delete.is_empty() {
            return Ok(());
        }
        self.expectations.expect(
            key,
            i64::try_from(create_on.len()).unwrap_or(0),
            i64::try_from(delete.len()).unwrap_or(0),
        );
        let template = ds
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let template = daemon_pod_template(&template, template_generation(ds), hash);
        let ns = ds.namespace().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let mut errors = Vec::new();
        // Upstream's slow start: batches of 1, 2, 4, ... stop at the first failing batch.
        let mut batch = 1usize;
        let mut i = 0usize;
        while i < create_on.len() {
            let end = (i + batch).min(create_on.len());
            let creates = create_on[i..end].iter().map(|node| {
                let mut t = template.clone();
                if let Some(spec) = t.spec.as_mut() {
                    spec.affinity = Some(pin_to_node(spec.affinity.take(), node));
                }
                let pod = controller_utils::pod_from_template(
                    &t,
                    &ns,
                    Some(&ds.name_any()),
                    Some(new_controller_ref(ds)),
                );
                let api = api.clone();
                async move { api.create(&PostParams::default(), &pod).await }
            });
            let results = futures::future::join_all(creates).await;
            let mut failed = false;
            for r in results {
                match r {
                    Ok(pod) => self.recorder.event(
                        &object_reference(ds),
                        NORMAL,
                        "SuccessfulCreate",
                        &format!("Created pod: {}", pod.name_any()),
                    ),
                    Err(e) => {
                        self.expectations.creation_observed(key);
                        let msg = api_message(&e);
                        self.recorder.event(
                            &object_reference(ds),
                            WARNING,
                            "FailedCreate",
                            &format!("Error creating: {msg}"),
                        );
                        errors.push(msg);
                        failed = true;
                    }
                }
            }
            i = end;
            if failed {
                // The creates not attempted are not expected either.
                for _ in i..create_on.len() {
                    self.expectations.creation_observed(key);
                }
                break;
            }
            batch *= 2;
        }
        for name in delete {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => self.recorder.event(
                    &object_reference(ds),
                    NORMAL,
                    "SuccessfulDelete",
                    &format!("Deleted pod: {name}"),
                ),
                Err(e) => {
                    self.expectations.deletion_observed(key);
                    if !is_not_found(&e) {
                        let msg = api_message(&e);
                        self.recorder.event(
                            &object_reference(ds),
                            WARNING,
                            "FailedDelete",
                            &format!("Error deleting: {msg}"),
                        );
                        errors.push(msg);
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Other(errors.join("; ")))
        }
    }

    /// Upstream's rollingUpdate: old pods replaced within maxUnavailable, or new pods surged
    /// within maxSurge with the old ones removed once the new ones are available.
    async fn rolling_update(
        &self,
        ds: &DaemonSet,
        key: &str,
        nodes: &[Arc<Node>],
        pods: &[Pod],
        hash: &str,
    ) -> Result<(), Error> {
        let mut node_pods = Self::node_to_pods(pods, false);
        let mut should_run = HashSet::new();
        for node in nodes {
            if node_should_run_daemon_pod(node, ds).0 {
                should_run.insert(node.name_any());
                node_pods.entry(node.name_any()).or_default();
            }
        }
        let desired = i32::try_from(should_run.len()).unwrap_or(i32::MAX);
        let ru = ds
            .spec
            .as_ref()
            .and_then(|s| s.update_strategy.as_ref())
            .and_then(|u| u.rolling_update.as_ref());
        let mut max_unavailable = scaled(ru.and_then(|r| r.max_unavailable.as_ref()), desired);
        let max_surge = scaled(ru.and_then(|r| r.max_surge.as_ref()), desired);
        if desired > 0 && max_unavailable == 0 && max_surge == 0 {
            max_unavailable = 1;
        }
        let plan = rolling_plan(
            &node_pods,
            &should_run,
            hash,
            template_generation(ds),
            max_surge,
            max_unavailable,
            min_ready_seconds(ds),
        );
        self.sync_nodes(ds, key, plan.delete, plan.create_on, hash)
            .await
    }

    /// The revisions the DaemonSet controls (orphans its selector matches are adopted).
    async fn controlled_histories(
        &self,
        ds: &DaemonSet,
    ) -> Result<Vec<Arc<ControllerRevision>>, Error> {
        let candidates = self
            .revisions
            .list_namespace(&ds.namespace().unwrap_or_default());
        Ok(controller_utils::claim(
            &self.client,
            &ds.metadata,
            &new_controller_ref(ds),
            ds.spec.as_ref().map(|s| &s.selector),
            candidates,
        )
        .await?)
    }

    /// Upstream's constructHistory: the current revision (made or found, renumbered to be the
    /// newest) and the old ones.
    async fn construct_history(
        &self,
        ds: &DaemonSet,
        _pods: &[Pod],
    ) -> Result<(ControllerRevision, Vec<Arc<ControllerRevision>>), Error> {
        let ns = ds.namespace().unwrap_or_default();
        let api: Api<ControllerRevision> = Api::namespaced(self.client.clone(), &ns);
        let template = ds
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let data = history::template_patch(&template);
        let mut current = Vec::new();
        let mut old = Vec::new();
        for h in self.controlled_histories(ds).await? {
            let mut h = h;
            if !h.labels().contains_key(CONTROLLER_REVISION_HASH) {
                let mut r = h.as_ref().clone();
                let name = r.name_any();
                r.labels_mut().insert(CONTROLLER_REVISION_HASH.into(), name);
                h = Arc::new(
                    api.replace(&r.name_any(), &PostParams::default(), &r)
                        .await?,
                );
            }
            if *history::data_of(&h) == data {
                current.push(h);
            } else {
                old.push(h);
            }
        }
        let next = old.iter().map(|r| r.revision).max().unwrap_or(0) + 1;
        let cur = if current.is_empty() {
            self.snapshot(ds, &data, next).await?
        } else {
            // Duplicates: keep the newest.
            current.sort_by_key(|r| r.revision);
            let keep = current
                .pop()
                .map(|r| r.as_ref().clone())
                .unwrap_or_default();
            for dup in current {
                match api.delete(&dup.name_any(), &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if keep.revision < next {
                let mut r = keep;
                r.revision = next;
                api.replace(&r.name_any(), &PostParams::default(), &r)
                    .await?
            } else {
                keep
            }
        };
        Ok((cur, old))
    }

    /// Upstream's snapshot: a new revision named by the template hash; a name taken by other
    /// data bumps `status.collisionCount` and the sync is retried.
    async fn snapshot(
        &self,
        ds: &DaemonSet,
        data: &serde_json::Value,
        revision: i64,
    ) -> Result<ControllerRevision, Error> {
        let template = ds
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let collision = ds.status.as_ref().and_then(|s| s.collision_count);
        let hash = crate::controllers::controller_utils::compute_hash(&template, collision);
        let name = history::revision_name(&ds.name_any(), &hash);
        let mut labels = template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        labels.insert(CONTROLLER_REVISION_HASH.into(), hash);
        let r = ControllerRevision {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.clone()),
                namespace: ds.namespace(),
                labels: Some(labels),
                annotations: ds.metadata.annotations.clone(),
                owner_references: Some(vec![new_controller_ref(ds)]),
                ..Default::default()
            },
            data: Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(
                data.clone(),
            )),
            revision,
        };
        let api: Api<ControllerRevision> =
            Api::namespaced(self.client.clone(), &ds.namespace().unwrap_or_default());
        match api.create(&PostParams::default(), &r).await {
            Ok(r) => Ok(r),
            Err(e) if is_conflict(&e) => {
                let existing = api.get(&name).await?;
                let ours = controller_ref(&existing.metadata)
                    .is_some_and(|c| Some(c.uid.as_str()) == ds.metadata.uid.as_deref());
                if ours && history::data_of(&existing) == data {
                    return Ok(existing);
                }
                // A hash collision: bump the count and try again next sync.
                let sets: Api<DaemonSet> =
                    Api::namespaced(self.client.clone(), &ds.namespace().unwrap_or_default());
                let mut fresh = sets.get(&ds.name_any()).await?;
                let status = fresh.status.get_or_insert_with(Default::default);
                status.collision_count = Some(status.collision_count.unwrap_or(0) + 1);
                sets.replace_status(&ds.name_any(), &PostParams::default(), &fresh)
                    .await?;
                Err(Error::Other(format!(
                    "found a stale controller revision {name}; collision count raised"
                )))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Upstream's cleanupHistory: old revisions beyond `revisionHistoryLimit` that no pod
    /// uses are deleted, oldest first.
    async fn cleanup_history(
        &self,
        ds: &DaemonSet,
        pods: &[Pod],
        mut old: Vec<Arc<ControllerRevision>>,
    ) -> Result<(), Error> {
        let limit = ds
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10)
            .max(0);
        let mut to_kill = i64::try_from(old.len()).unwrap_or(0) - i64::from(limit);
        if to_kill <= 0 {
            return Ok(());
        }
        let live: HashSet<&str> = pods
            .iter()
            .filter_map(|p| p.labels().get(CONTROLLER_REVISION_HASH).map(String::as_str))
            .collect();
        old.sort_by_key(|r| r.revision);
        let api: Api<ControllerRevision> =
            Api::namespaced(self.client.clone(), &ds.namespace().unwrap_or_default());
        for r in old {
            if to_kill <= 0 {
                break;
            }
            if r.labels()
                .get(CONTROLLER_REVISION_HASH)
                .is_some_and(|h| live.contains(h.as_str()))
            {
                continue;
            }
            match api.delete(&r.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
            to_kill -= 1;
        }
        Ok(())
    }

    /// Upstream's updateDaemonSetStatus; the generation is observed only after a full sync.
    async fn update_status(
        &self,
        ds: &DaemonSet,
        nodes: &[Arc<Node>],
        pods: &[Pod],
        hash: &str,
        observe_generation: bool,
    ) -> Result<Counts, Error> {
        let counts = compute_counts(ds, nodes, pods, hash);
        let old = ds.status.clone().unwrap_or_default();
        let nz = |v: i32| (v != 0).then_some(v);
        let want = DaemonSetStatus {
            current_number_scheduled: counts.current,
            number_misscheduled: counts.misscheduled,
            desired_number_scheduled: counts.desired,
            number_ready: counts.ready,
            updated_number_scheduled: nz(counts.updated),
            number_available: nz(counts.available),
            number_unavailable: nz(counts.desired - counts.available),
            observed_generation: if observe_generation {
                ds.metadata.generation
            } else {
                old.observed_generation
            },
            collision_count: old.collision_count,
            conditions: old.conditions.clone(),
        };
        if want == old {
            return Ok(counts);
        }
        let api: Api<DaemonSet> =
            Api::namespaced(self.client.clone(), &ds.namespace().unwrap_or_default());
        let mut obj = ds.clone();
        for _ in 0..10 {
            let mut s = want.clone();
            if let Some(cur) = obj.status.as_ref() {
                s.collision_count = cur.collision_count;
            }
            obj.status = Some(s);
            match api
                .replace_status(&obj.name_any(), &PostParams::default(), &obj)
                .await
            {
                Ok(_) => return Ok(counts),
                Err(e) if is_conflict(&e) => match api.get_opt(&ds.name_any()).await? {
                    Some(fresh) if fresh.metadata.uid == ds.metadata.uid => obj = fresh,
                    _ => return Ok(counts),
                },
                Err(e) if is_not_found(&e) => return Ok(counts),
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Other("status update kept conflicting".into()))
    }
}

/// The status counts: per node that should run the pod, whether it has one, and the oldest
/// one's readiness, availability and revision; pods on other nodes are misscheduled.
pub fn compute_counts(ds: &DaemonSet, nodes: &[Arc<Node>], pods: &[Pod], hash: &str) -> Counts {
    let node_pods = DaemonSetsController::node_to_pods(pods, false);
    let generation = template_generation(ds);
    let mrs = min_ready_seconds(ds);
    let mut c = Counts::default();
    for node in nodes {
        let (should_run, _) = node_should_run_daemon_pod(node, ds);
        let list = node_pods.get(&node.name_any()).filter(|l| !l.is_empty());
        if should_run {
            c.desired += 1;
            let Some(list) = list else {
                continue;
            };
            c.current += 1;
            let pod = &list[0];
            if controller_utils::is_pod_ready(pod) {
                c.ready += 1;
                if available(pod, mrs) {
                    c.available += 1;
                }
            }
            if is_pod_updated(pod, hash, generation) {
                c.updated += 1;
            }
        } else if list.is_some() {
            c.misscheduled += 1;
        }
    }
    c
}

fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
