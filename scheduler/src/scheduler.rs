//! The running scheduler: informer handlers feed the cache and the queue; one loop pops pods and
//! runs the algorithm under the cache lock, assumes the chosen node and binds in the background
//! (`POST pods/{name}/binding`, many in flight), or records why the pod does not fit (the
//! PodScheduled condition via `pods/status`, a FailedScheduling event) and preempts. Events go
//! through events.k8s.io/v1 as kube-scheduler's (`reportingController` = the scheduler name).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k1s_controller_manager::SharedInformerFactory;
use k1s_controller_manager::events::{NORMAL, WARNING, object_reference};
use k1s_controller_manager::events_v1::{EventRecorderV1, truncate_note};
use k1s_controller_manager::informer::{Delta, Store, key_of};
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Binding, Namespace, Node, ObjectReference, PersistentVolumeClaim, Pod, ReplicationController,
    Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::Semaphore;

use crate::cache::{Cache, PodInfo};
use crate::framework::{self, NO_NODES, NoFit, Rng};
use crate::plugins::podtopologyspread::{OwnerLookup, default_selector};
use crate::plugins::volumebinding::{self, VolumeLookup};
use crate::preemption;
use crate::queue::{QueuedPod, SchedulingQueue};

/// Binds in flight at once.
const MAX_BINDS_IN_FLIGHT: usize = 256;

pub struct Scheduler {
    client: Client,
    scheduler_name: String,
    cache: Mutex<Cache>,
    pub queue: SchedulingQueue,
    pods: Arc<Store<Pod>>,
    namespaces: Arc<Store<Namespace>>,
    owners: Owners,
    pdbs: Arc<Store<PodDisruptionBudget>>,
    volumes: Volumes,
    recorder: EventRecorderV1,
    rng: Mutex<Rng>,
    binds: Arc<Semaphore>,
}

fn assigned(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

fn terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Pods an assigned pod's arrival may help: those with pod affinity or spread constraints.
fn cares_about_other_pods(pod: &Pod) -> bool {
    pod.spec.as_ref().is_some_and(|s| {
        s.affinity
            .as_ref()
            .is_some_and(|a| a.pod_affinity.is_some())
            || s.topology_spread_constraints
                .as_ref()
                .is_some_and(|t| !t.is_empty())
    })
}

fn node_changed_usefully(old: &Node, new: &Node) -> bool {
    old.metadata.labels != new.metadata.labels
        || old.spec.as_ref().map(|s| (&s.taints, s.unschedulable))
            != new.spec.as_ref().map(|s| (&s.taints, s.unschedulable))
        || old.status.as_ref().map(|s| &s.allocatable)
            != new.status.as_ref().map(|s| &s.allocatable)
}

/// The claims and classes VolumeBinding reads.
struct Volumes {
    claims: Arc<Store<PersistentVolumeClaim>>,
    classes: Arc<Store<StorageClass>>,
}

impl VolumeLookup for Volumes {
    fn claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims.get_named(Some(namespace), name)
    }
    fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
        self.classes.get_named(None, name)
    }
}

/// What default topology spreading looks pods' owners up in (upstream's listers).
struct Owners {
    services: Arc<Store<Service>>,
    rcs: Arc<Store<ReplicationController>>,
    replica_sets: Arc<Store<ReplicaSet>>,
    stateful_sets: Arc<Store<StatefulSet>>,
}

impl OwnerLookup for Owners {
    fn services(&self, namespace: &str) -> Vec<Arc<Service>> {
        self.services.list_namespace(namespace)
    }
    fn replication_controller(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<ReplicationController>> {
        self.rcs.get_named(Some(namespace), name)
    }
    fn replica_set(&self, namespace: &str, name: &str) -> Option<Arc<ReplicaSet>> {
        self.replica_sets.get_named(Some(namespace), name)
    }
    fn stateful_set(&self, namespace: &str, name: &str) -> Option<Arc<StatefulSet>> {
        self.stateful_sets.get_named(Some(namespace), name)
    }
}

impl Scheduler {
    /// Registers the informers and handlers on `factory` (not started yet).
    pub fn new(
        client: Client,
        factory: &SharedInformerFactory,
        scheduler_name: String,
        recorder: EventRecorderV1,
    ) -> Arc<Self> {
        let pods = factory.informer::<Pod>();
        let nodes = factory.informer::<Node>();
        let namespaces = factory.informer::<Namespace>();
        let owners = Owners {
            services: factory.informer::<Service>().store(),
            rcs: factory.informer::<ReplicationController>().store(),
            replica_sets: factory.informer::<ReplicaSet>().store(),
            stateful_sets: factory.informer::<StatefulSet>().store(),
        };
        let pdbs = factory.informer::<PodDisruptionBudget>().store();
        let claims = factory.informer::<PersistentVolumeClaim>();
        let classes = factory.informer::<StorageClass>();
        let volumes = Volumes {
            claims: claims.store(),
            classes: classes.store(),
        };
        let seed = jiff::Timestamp::now().as_nanosecond() as u64;
        let s = Arc::new(Scheduler {
            client,
            scheduler_name,
            cache: Mutex::new(Cache::default()),
            queue: SchedulingQueue::default(),
            pods: pods.store(),
            namespaces: namespaces.store(),
            owners,
            pdbs,
            volumes,
            recorder,
            rng: Mutex::new(Rng::new(seed)),
            binds: Arc::new(Semaphore::new(MAX_BINDS_IN_FLIGHT)),
        });
        let weak = Arc::downgrade(&s);
        nodes.add_handler(move |d| {
            if let Some(s) = weak.upgrade() {
                s.on_node(d);
            }
        });
        // A claim or class that appears or changes may let a waiting pod through VolumeBinding.
        let weak = Arc::downgrade(&s);
        claims.add_handler(move |d| {
            if let (Some(s), false) = (weak.upgrade(), matches!(d, Delta::Deleted(_))) {
                s.queue.move_unschedulable(|_| true);
            }
        });
        let weak = Arc::downgrade(&s);
        classes.add_handler(move |d| {
            if let (Some(s), false) = (weak.upgrade(), matches!(d, Delta::Deleted(_))) {
                s.queue.move_unschedulable(|_| true);
            }
        });
        let weak = Arc::downgrade(&s);
        pods.add_handler(move |d| {
            if let Some(s) = weak.upgrade() {
                s.on_pod(d);
            }
        });
        s
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn on_node(&self, d: &Delta<Node>) {
        match d {
            Delta::Added(n) => {
                self.cache().set_node(n.clone());
                self.queue.move_unschedulable(|_| true);
            }
            Delta::Updated { old, new } => {
                self.cache().set_node(new.clone());
                if node_changed_usefully(old, new) {
                    self.queue.move_unschedulable(|_| true);
                }
            }
            Delta::Deleted(n) => {
                if let Some(name) = n.metadata.name.as_deref() {
                    self.cache().remove_node(name);
                }
            }
        }
    }

    fn on_pod(&self, d: &Delta<Pod>) {
        let pod = d.object();
        let key = key_of(pod.as_ref());
        let gone = matches!(d, Delta::Deleted(_)) || terminal(pod);
        if gone {
            self.queue.remove(&key);
            let freed = {
                let mut c = self.cache();
                c.unnominate(&key);
                c.remove_pod(&key).is_some()
            };
            if freed {
                self.queue.move_unschedulable(|_| true);
            }
            return;
        }
        if let Some(node) = assigned(pod) {
            self.queue.remove(&key);
            let relabelled = match d {
                Delta::Updated { old, new } => old.metadata.labels != new.metadata.labels,
                _ => true,
            };
            {
                let mut c = self.cache();
                c.unnominate(&key);
                c.set_bound_pod(pod.clone(), node);
            }
            if relabelled {
                self.queue.move_unschedulable(cares_about_other_pods);
            }
            return;
        }
        let ours = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or("default-scheduler")
            == self.scheduler_name;
        if !ours || pod.metadata.deletion_timestamp.is_some() {
            self.queue.remove(&key);
            return;
        }
        let changed = match d {
            Delta::Updated { old, new } => {
                old.spec != new.spec
                    || old.metadata.labels != new.metadata.labels
                    || old.metadata.annotations != new.metadata.annotations
            }
            _ => true,
        };
        let nominated = pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.clone())
            .filter(|n| !n.is_empty());
        {
            let mut c = self.cache();
            // Assumed: its bind is in flight, and this is an older write (such as the
            // PodScheduled condition of an earlier attempt) landing first. Queued again, it
            // would be scheduled twice and, when the second bind fails, forgotten while bound,
            // so its node would be overcommitted (upstream's updatePodInSchedulingQueue skips
            // assumed pods for this reason).
            if c.is_assumed(&key) {
                return;
            }
            match nominated {
                Some(n) => c.nominate(Arc::new(PodInfo::new(pod.clone())), &n),
                None => c.unnominate(&key),
            }
        }
        self.queue.add_or_update(&key, pod.clone(), changed);
    }

    /// Pops and schedules until `shutdown`.
    pub async fn run(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let flusher = {
            let s = self.clone();
            let mut shutdown = shutdown.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(200));
                loop {
                    tokio::select! {
                        _ = shutdown.wait_for(|s| *s) => return,
                        _ = tick.tick() => s.queue.flush(),
                    }
                }
            })
        };
        loop {
            let p = tokio::select! {
                _ = shutdown.wait_for(|s| *s) => break,
                p = self.queue.pop() => p,
            };
            self.schedule_one(p).await;
        }
        flusher.abort();
    }

    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.namespaces.get(name)
    }

    async fn schedule_one(self: &Arc<Self>, qp: QueuedPod) {
        // The freshest copy; pods deleted, bound or no longer pending meanwhile are dropped.
        let Some(pod) = self.pods.get(&qp.key) else {
            self.queue.done(&qp.key);
            return;
        };
        if assigned(&pod).is_some() || pod.metadata.deletion_timestamp.is_some() || terminal(&pod) {
            self.queue.done(&qp.key);
            return;
        }
        // Upstream's skipPodSchedule: an assumed pod is already being bound.
        if self.cache().is_assumed(&qp.key) {
            self.queue.done(&qp.key);
            return;
        }
        let info = Arc::new(PodInfo::new(pod.clone()));
        let lookup = |n: &str| self.namespace(n);
        // Read outside the cache lock: informer stores only.
        let spread = default_selector(&pod, &self.owners);
        let held_back = volumebinding::prefilter(&pod, &self.volumes);
        let outcome = {
            let mut cache = self.cache();
            let nodes = cache.order.len();
            let mut rng = self
                .rng
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let found = match held_back {
                // Upstream looks for nodes first, then runs the PreFilter plugins.
                Err(why) if nodes > 0 => Err(NoFit::PreFilter(why)),
                _ => framework::find_node(&cache, &info, &lookup, spread.as_ref(), &mut rng),
            };
            match found {
                Ok(node) => {
                    let mut bound = (*pod).clone();
                    if let Some(spec) = bound.spec.as_mut() {
                        spec.node_name = Some(node.clone());
                    }
                    cache.assume(Arc::new(PodInfo::new(Arc::new(bound))), &node);
                    Ok(node)
                }
                Err(NoFit::NoNodes) => Err((NO_NODES.to_string(), None)),
                Err(NoFit::PreFilter(why)) => {
                    Err((framework::prefilter_error_message(nodes, &why), None))
                }
                Err(NoFit::Diagnosis(d)) => {
                    let n = d.statuses.len();
                    let pdbs = self.pdbs.list();
                    match preemption::preempt(
                        &mut cache,
                        &info,
                        &d.statuses,
                        &lookup,
                        &pdbs,
                        &mut rng,
                    ) {
                        Ok(plan) => {
                            cache.nominate(info.clone(), &plan.node);
                            Err((
                                framework::fit_error_message(n, &d.statuses, None),
                                Some(plan),
                            ))
                        }
                        Err(why) => Err((
                            framework::fit_error_message(
                                n,
                                &d.statuses,
                                Some(&format!("preemption: {why}")),
                            ),
                            None,
                        )),
                    }
                }
            }
        };
        match outcome {
            Ok(node) => {
                let Ok(permit) = self.binds.clone().acquire_owned().await else {
                    return;
                };
                let s = self.clone();
                tokio::spawn(async move {
                    s.bind(qp, pod, node).await;
                    drop(permit);
                });
            }
            Err((message, plan)) => {
                tracing::debug!(pod = %qp.key, %message, "unschedulable");
                self.queue.unschedulable(&qp);
                let s = self.clone();
                tokio::spawn(async move { s.record_failure(&pod, &message, plan).await });
            }
        }
    }

    async fn bind(&self, qp: QueuedPod, pod: Arc<Pod>, node: String) {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                uid: pod.metadata.uid.clone(),
                ..Default::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.clone()),
                ..Default::default()
            },
        };
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let result: Result<serde_json::Value, _> = api
            .create_subresource("binding", &name, &PostParams::default(), &binding)
            .await;
        match result {
            Ok(_) => {
                self.queue.done(&qp.key);
                self.recorder.eventf(
                    &object_reference(pod.as_ref()),
                    None,
                    NORMAL,
                    "Scheduled",
                    "Binding",
                    &format!("Successfully assigned {ns}/{name} to {node}"),
                );
            }
            Err(e) => {
                self.cache().forget(&qp.key);
                let gone = matches!(&e, kube::Error::Api(s) if s.code == 404);
                if gone {
                    self.queue.done(&qp.key);
                    return;
                }
                tracing::debug!(pod = %qp.key, error = %e, "binding rejected");
                self.queue.retry(&qp);
                // Upstream's note is the binder's error as the API server worded it.
                let note = match &e {
                    kube::Error::Api(s) => s.message.clone(),
                    other => other.to_string(),
                };
                self.recorder.eventf(
                    &object_reference(pod.as_ref()),
                    None,
                    WARNING,
                    "FailedScheduling",
                    "Scheduling",
                    &truncate_note(&note),
                );
            }
        }
    }

    /// The pod's PodScheduled=False condition and event; with a preemption plan, the nominated
    /// node and the victims' deletion.
    async fn record_failure(&self, pod: &Pod, message: &str, plan: Option<preemption::Plan>) {
        self.recorder.eventf(
            &object_reference(pod),
            None,
            WARNING,
            "FailedScheduling",
            "Scheduling",
            &truncate_note(message),
        );
        let existing = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
        let same = existing.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
                && c.message.as_deref() == Some(message)
        });
        let nominate = plan.as_ref().map(|p| p.node.clone()).filter(|n| {
            pod.status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                != Some(n.as_str())
        });
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        if !same || nominate.is_some() {
            let transition = existing
                .filter(|c| c.status == "False")
                .and_then(|c| c.last_transition_time.clone())
                .unwrap_or(Time(jiff::Timestamp::now()));
            let mut status = json!({"conditions": [{
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastProbeTime": null,
                "lastTransitionTime": transition,
            }]});
            if let Some(n) = &nominate {
                status["nominatedNodeName"] = json!(n);
            }
            let patch = json!({"status": status});
            if let Err(e) = api
                .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                tracing::debug!(pod = %name, error = %e, "pod condition not updated");
            }
        }
        let Some(plan) = plan else {
            return;
        };
        let preemptor = object_reference(pod);
        for victim in plan.victims {
            let v = &victim.pod;
            // Graceful deletion already under way: nothing to send (upstream skips it too).
            if v.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let vns = v.metadata.namespace.clone().unwrap_or_default();
            let vname = v.metadata.name.clone().unwrap_or_default();
            let vapi: Api<Pod> = Api::namespaced(self.client.clone(), &vns);
            let condition = json!({"status": {"conditions": [{
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": format!("{}: preempting to accommodate a higher priority pod", self.scheduler_name),
                "lastTransitionTime": Time(jiff::Timestamp::now()),
            }]}});
            let _ = vapi
                .patch_status(
                    &vname,
                    &PatchParams::default(),
                    &Patch::Strategic(&condition),
                )
                .await;
            match vapi.delete(&vname, &DeleteParams::default()).await {
                Ok(_) => self.recorder.eventf(
                    &object_reference(v.as_ref()),
                    Some(&preemptor),
                    NORMAL,
                    "Preempted",
                    "Preempting",
                    &format!(
                        "Preempted by pod {} on node {}",
                        pod.metadata.uid.as_deref().unwrap_or_default(),
                        plan.node
                    ),
                ),
                Err(e) => tracing::debug!(pod = %vname, error = %e, "victim not deleted"),
            }
        }
        // Lower-priority pods nominated there may no longer fit: they look elsewhere.
        for p in plan.clear_nominations {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), p.namespace());
            let name = p.pod.metadata.name.as_deref().unwrap_or_default();
            let patch = json!({"status": {"nominatedNodeName": null}});
            if let Err(e) = api
                .patch_status(name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                tracing::debug!(pod = %name, error = %e, "nomination not cleared");
            }
        }
    }
}
