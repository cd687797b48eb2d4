//! The replicaset controller (upstream `pkg/controller/replicaset`): a ReplicaSet (and, through
//! the same generic code, a ReplicationController) keeps `spec.replicas` active pods matching
//! its selector. It adopts matching orphans and releases pods that stop matching, creates in
//! slow-start batches (1, 2, 4, ... stopping on the first error) and deletes the lowest-ranked
//! pods (upstream's ActivePodsWithRanks), at most 500 at a time, with expectations so a lagging
//! cache never causes double creates or deletes, and writes `status` through `/status`.

pub mod ranking;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::api::{Api, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::controllers::controller_utils::{
    claim, controller_ref, is_pod_active, is_pod_available, is_pod_ready, new_controller_ref,
    pod_from_template,
};
use crate::controllers::selector_matches;
use crate::events::{EventRecorder, object_reference};
use crate::expectations::Expectations;
use crate::informer::{Delta, Store, key_of};
use crate::workqueue::WorkQueue;

/// Upstream's BurstReplicas: at most this many creates or deletes per sync.
pub const BURST_REPLICAS: usize = 500;
/// Upstream's SlowStartInitialBatchSize.
const SLOW_START_INITIAL_BATCH: usize = 1;

/// What the generic controller needs from a ReplicaSet or ReplicationController. Their status
/// has the same JSON shape, so status is read and written through `ReplicaSetStatus`.
pub trait ReplicaSetLike:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    fn spec_replicas(&self) -> i32;
    fn label_selector(&self) -> Option<LabelSelector>;
    fn pod_template(&self) -> Option<&PodTemplateSpec>;
    fn min_ready_seconds(&self) -> i32;
}

impl ReplicaSetLike for ReplicaSet {
    fn spec_replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }
    fn label_selector(&self) -> Option<LabelSelector> {
        self.spec.as_ref().map(|s| s.selector.clone())
    }
    fn pod_template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref()?.template.as_ref()
    }
    fn min_ready_seconds(&self) -> i32 {
        self.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }
}

/// The status of either kind, read through JSON (same shape).
pub fn status_of<K: ReplicaSetLike>(set: &K) -> ReplicaSetStatus {
    serde_json::to_value(set)
        .ok()
        .and_then(|v| v.get("status").cloned())
        .and_then(|s| serde_json::from_value(s).ok())
        .unwrap_or_default()
}

/// Expectations plus the UIDs of the pods a deletion was asked for, so that seeing one pod go
/// twice (deletion timestamp set, then removed) counts once (upstream's UIDTrackingControllerExpectations).
#[derive(Default)]
pub struct PodExpectations {
    counts: Expectations,
    deleting: Mutex<HashMap<String, HashSet<String>>>,
}

impl PodExpectations {
    fn deleting(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashSet<String>>> {
        self.deleting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    pub fn satisfied(&self, key: &str) -> bool {
        self.counts.satisfied(key)
    }
    pub fn expect_creations(&self, key: &str, n: usize) {
        self.counts.expect_creations(key, n as i64);
    }
    pub fn creation_observed(&self, key: &str) {
        self.counts.creation_observed(key);
    }
    pub fn expect_deletions(&self, key: &str, uids: Vec<String>) {
        self.counts.expect_deletions(key, uids.len() as i64);
        self.deleting()
            .insert(key.to_string(), uids.into_iter().collect());
    }
    /// A pod with `uid` was seen going (or its deletion failed).
    pub fn deletion_observed(&self, key: &str, uid: &str) {
        let mut deleting = self.deleting();
        if let Some(set) = deleting.get_mut(key)
            && set.remove(uid)
        {
            self.counts.deletion_observed(key);
        }
    }
    pub fn delete(&self, key: &str) {
        self.counts.delete(key);
        self.deleting().remove(key);
    }
}

struct Manager<K> {
    client: Client,
    sets: Arc<Store<K>>,
    pods: Arc<Store<Pod>>,
    expectations: Arc<PodExpectations>,
    recorder: EventRecorder,
}

pub fn start(ctx: ControllerContext) {
    start_generic::<ReplicaSet>(ctx, "replicaset");
}

/// Shared handlers of the set and pod informers, then workers (`--concurrent-<flag>-syncs`,
/// default 5).
pub fn start_generic<K: ReplicaSetLike>(ctx: ControllerContext, flag: &str) {
    let sets = ctx.factory.informer::<K>();
    let pods = ctx.factory.informer::<Pod>();
    let queue = ctx.queue();
    let expectations = Arc::new(PodExpectations::default());
    let set_store = sets.store();
    {
        let (queue, expectations) = (queue.clone(), expectations.clone());
        sets.add_handler(move |d: &Delta<K>| {
            let key = key_of(d.object().as_ref());
            if matches!(d, Delta::Deleted(_)) {
                expectations.delete(&key);
            }
            queue.add(key);
        });
    }
    {
        let (queue, expectations, set_store) =
            (queue.clone(), expectations.clone(), set_store.clone());
        pods.add_handler(move |d: &Delta<Pod>| {
            let h = PodHandler {
                queue: &queue,
                expectations: &expectations,
                sets: &set_store,
            };
            match d {
                Delta::Added(p) => h.added(p),
                Delta::Updated { old, new } => h.updated(old, new),
                Delta::Deleted(p) => h.deleted(p),
            }
        });
    }
    let manager = Arc::new(Manager {
        client: ctx.client.clone(),
        sets: set_store,
        pods: pods.store(),
        expectations,
        recorder: ctx.recorder.clone(),
    });
    let workers = ctx.workers(flag, 5);
    ctx.run_workers(manager, queue, workers);
}

struct PodHandler<'a, K> {
    queue: &'a WorkQueue,
    expectations: &'a PodExpectations,
    sets: &'a Store<K>,
}

impl<K: ReplicaSetLike> PodHandler<'_, K> {
    /// The set a controller reference points at, if it is of our kind and still the same UID.
    fn resolve(&self, pod: &Pod) -> Option<Arc<K>> {
        let r = controller_ref(&pod.metadata)?;
        if r.kind != K::kind(&()) {
            return None;
        }
        self.sets
            .get_named(pod.metadata.namespace.as_deref(), &r.name)
            .filter(|s| s.meta().uid.as_deref() == Some(r.uid.as_str()))
    }

    /// Every set in the pod's namespace whose selector matches it (for orphans).
    fn matching(&self, pod: &Pod) -> Vec<Arc<K>> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        self.sets
            .list_namespace(ns)
            .into_iter()
            .filter(|s| {
                let sel = s.label_selector();
                let empty = sel.as_ref().is_none_or(|l| {
                    l.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
                        && l.match_expressions.as_ref().is_none_or(Vec::is_empty)
                });
                !empty && selector_matches(sel.as_ref(), pod.metadata.labels.as_ref())
            })
            .collect()
    }

    fn added(&self, pod: &Pod) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.deleted(pod);
            return;
        }
        if controller_ref(&pod.metadata).is_some() {
            if let Some(set) = self.resolve(pod) {
                let key = key_of(set.as_ref());
                self.expectations.creation_observed(&key);
                self.queue.add(key);
            }
            return;
        }
        for set in self.matching(pod) {
            self.queue.add(key_of(set.as_ref()));
        }
    }

    fn updated(&self, old: &Pod, new: &Pod) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        let labels_changed = old.metadata.labels != new.metadata.labels;
        if new.metadata.deletion_timestamp.is_some() {
            self.deleted(new);
            if labels_changed {
                self.deleted(old);
            }
            return;
        }
        let (old_ref, new_ref) = (controller_ref(&old.metadata), controller_ref(&new.metadata));
        let ref_changed = old_ref != new_ref;
        if ref_changed
            && old_ref.is_some()
            && let Some(set) = self.resolve(old)
        {
            self.queue.add(key_of(set.as_ref()));
        }
        if new_ref.is_some() {
            if let Some(set) = self.resolve(new) {
                let key = key_of(set.as_ref());
                let min_ready = set.min_ready_seconds();
                if !is_pod_ready(old) && is_pod_ready(new) && min_ready > 0 {
                    // Available once ready for minReadySeconds: look again then.
                    self.queue.add_after(
                        key.clone(),
                        Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)),
                    );
                }
                self.queue.add(key);
            }
            return;
        }
        if labels_changed || ref_changed {
            for set in self.matching(new) {
                self.queue.add(key_of(set.as_ref()));
            }
        }
    }

    fn deleted(&self, pod: &Pod) {
        if let Some(set) = self.resolve(pod) {
            let key = key_of(set.as_ref());
            self.expectations
                .deletion_observed(&key, pod.metadata.uid.as_deref().unwrap_or_default());
            self.queue.add(key);
        }
    }
}

/// The API's message for an error (what upstream's `err.Error()` shows).
pub fn error_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// Upstream's slowStartBatch: runs `count` calls of `f` in batches of 1, 2, 4, ... and stops
/// after the first batch with an error. Returns the successes and the first error.
pub async fn slow_start_batch<F, Fut, E>(count: usize, initial: usize, f: F) -> (usize, Option<E>)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
{
    let mut remaining = count;
    let mut successes = 0;
    let mut batch = remaining.min(initial.max(1));
    while batch > 0 {
        let results = join_all((0..batch).map(|_| f())).await;
        let mut first_err = None;
        for r in results {
            match r {
                Ok(()) => successes += 1,
                Err(e) => {
                    if first_err.is_none() {
                        first_err = Some(e);
                    }
                }
            }
        }
        if first_err.is_some() {
            return (successes, first_err);
        }
        remaining -= batch;
        batch = remaining.min(2 * batch);
    }
    (successes, None)
}

impl<K: ReplicaSetLike> Manager<K> {
    async fn manage(&self, set: &K, key: &str, pods: &[Arc<Pod>]) -> Result<(), String> {
        let want = usize::try_from(set.spec_replicas()).unwrap_or(0);
        let ns = set.namespace().unwrap_or_default();
        let reference = object_reference(set);
        if pods.len() < want {
            let diff = (want - pods.len()).min(BURST_REPLICAS);
            let Some(template) = set.pod_template() else {
                return Err("unable to create pods: no template".into());
            };
            self.expectations.expect_creations(key, diff);
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
            let owner = new_controller_ref(set);
            let name = set.name_any();
            let (created, err) = slow_start_batch(diff, SLOW_START_INITIAL_BATCH, || {
                let pod = pod_from_template(template, &ns, Some(&name), Some(owner.clone()));
                let (api, recorder, reference) = (&api, &self.recorder, &reference);
                async move {
                    match api.create(&PostParams::default(), &pod).await {
                        Ok(p) => {
                            recorder.event(
                                reference,
                                "Normal",
                                "SuccessfulCreate",
                                &format!("Created pod: {}", p.name_any()),
                            );
                            Ok(())
                        }
                        Err(e) => {
                            let msg = error_message(&e);
                            // A terminating namespace refuses pods: nothing to report.
                            if msg.contains("because it is being terminated") {
                                return Ok(());
                            }
                            recorder.event(
                                reference,
                                "Warning",
                                "FailedCreate",
                                &format!("Error creating: {msg}"),
                            );
                            Err(msg)
                        }
                    }
                }
            })
            .await;
            // Pods never created (failed or skipped) will not be observed.
            for _ in created..diff {
                self.expectations.creation_observed(key);
            }
            return err.map_or(Ok(()), Err);
        }
        if pods.len() > want {
            let diff = (pods.len() - want).min(BURST_REPLICAS);
            let related = self.related_pods(set);
            let victims = ranking::pods_to_delete(pods, &related, diff, jiff::Timestamp::now());
            let uids = victims
                .iter()
                .map(|p| p.metadata.uid.clone().unwrap_or_default())
                .collect();
            self.expectations.expect_deletions(key, uids);
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
            let results = join_all(victims.iter().map(|pod| {
                let (api, reference) = (&api, &reference);
                async move {
                    let name = pod.name_any();
                    match api.delete(&name, &Default::default()).await {
                        Ok(_) => {
                            self.recorder.event(
                                reference,
                                "Normal",
                                "SuccessfulDelete",
                                &format!("Deleted pod: {name}"),
                            );
                            Ok(())
                        }
                        Err(e) => {
                            self.expectations.deletion_observed(
                                key,
                                pod.metadata.uid.as_deref().unwrap_or_default(),
                            );
                            if is_not_found(&e) {
                                return Ok(());
                            }
                            let msg = error_message(&e);
                            self.recorder.event(
                                reference,
                                "Warning",
                                "FailedDelete",
                                &format!("Error deleting: {msg}"),
                            );
                            Err(format!("unable to delete pods: {msg}"))
                        }
                    }
                }
            }))
            .await;
            if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Active pods of every set with the same controller as `set` (upstream's
    /// getIndirectlyRelatedPods), for ranking pods that share a node.
    fn related_pods(&self, set: &K) -> Vec<Arc<Pod>> {
        let ns = set.namespace().unwrap_or_default();
        let own_uid = set.meta().uid.clone().unwrap_or_default();
        let mut uids: HashSet<String> = HashSet::from([own_uid]);
        if let Some(owner) = controller_ref(set.meta()) {
            for other in self.sets.list_namespace(&ns) {
                if controller_ref(other.meta()).is_some_and(|r| r.uid == owner.uid) {
                    uids.insert(other.meta().uid.clone().unwrap_or_default());
                }
            }
        }
        self.pods
            .list_namespace(&ns)
            .into_iter()
            .filter(|p| is_pod_active(p))
            .filter(|p| controller_ref(&p.metadata).is_some_and(|r| uids.contains(&r.uid)))
            .collect()
    }

    /// Writes `status` through `/status` unless nothing changed (one retry on a fresh read, as
    /// upstream's statusUpdateRetries).
    async fn update_status(&self, set: &K, mut status: ReplicaSetStatus) -> Result<K, Error> {
        let generation = set.meta().generation.unwrap_or(0);
        let current = status_of(set);
        if current == status && current.observed_generation.unwrap_or(0) == generation {
            return Ok(set.clone());
        }
        status.observed_generation = Some(generation);
        let api: Api<K> =
            Api::namespaced(self.client.clone(), &set.namespace().unwrap_or_default());
        let mut target = set.clone();
        for attempt in 0..2 {
            let mut value =
                serde_json::to_value(&target).map_err(|e| Error::Other(e.to_string()))?;
            value["status"] =
                serde_json::to_value(&status).map_err(|e| Error::Other(e.to_string()))?;
            let body: K = serde_json::from_value(value).map_err(|e| Error::Other(e.to_string()))?;
            match api
                .replace_status(&set.name_any(), &PostParams::default(), &body)
                .await
            {
                Ok(updated) => return Ok(updated),
                Err(e) if attempt == 0 && !is_not_found(&e) => {
                    target = api.get(&set.name_any()).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Other("status update retries exhausted".into()))
    }
}

/// Upstream's calculateStatus: counts of the claimed active pods, and the `ReplicaFailure`
/// condition set (reason FailedCreate / FailedDelete) or cleared with the manage error.
pub fn calculate_status<K: ReplicaSetLike>(
    set: &K,
    pods: &[Arc<Pod>],
    manage_err: Option<&str>,
    now: jiff::Timestamp,
) -> ReplicaSetStatus {
    let mut status = status_of(set);
    let template_labels = set
        .pod_template()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let min_ready = set.min_ready_seconds();
    let (mut fully, mut ready, mut available) = (0, 0, 0);
    for pod in pods {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        if template_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
        {
            fully += 1;
        }
        if is_pod_ready(pod) {
            ready += 1;
            if is_pod_available(pod, min_ready, now) {
                available += 1;
            }
        }
    }
    let mut conditions = status.conditions.take().unwrap_or_default();
    let has_failure = conditions.iter().any(|c| c.type_ == "ReplicaFailure");
    match manage_err {
        Some(msg) if !has_failure => {
            let diff = pods.len() as i64 - i64::from(set.spec_replicas());
            let reason = match diff {
                d if d < 0 => "FailedCreate",
                d if d > 0 => "FailedDelete",
                _ => "",
            };
            conditions.push(ReplicaSetCondition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                reason: Some(reason.into()),
                message: Some(msg.into()),
                last_transition_time: Some(Time(now)),
            });
        }
        None if has_failure => conditions.retain(|c| c.type_ != "ReplicaFailure"),
        _ => {}
    }
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    let nonzero = |n: i32| (n != 0).then_some(n);
    status.replicas = pods.len() as i32;
    status.fully_labeled_replicas = nonzero(fully);
    status.ready_replicas = nonzero(ready);
    status.available_replicas = nonzero(available);
    status
}

impl<K: ReplicaSetLike> Reconciler for Manager<K> {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(set) = self.sets.get(key) else {
            self.expectations.delete(key);
            return Ok(Action::Done);
        };
        let needs_sync = self.expectations.satisfied(key);
        let ns = set.namespace().unwrap_or_default();
        let candidates: Vec<Arc<Pod>> = self
            .pods
            .list_namespace(&ns)
            .into_iter()
            .filter(|p| is_pod_active(p))
            .collect();
        let owner_ref = new_controller_ref(set.as_ref());
        let selector = set.label_selector();
        let pods = claim(
            &self.client,
            set.meta(),
            &owner_ref,
            selector.as_ref(),
            candidates,
        )
        .await?;
        let mut manage_err = None;
        if needs_sync && set.meta().deletion_timestamp.is_none() {
            manage_err = self.manage(&set, key, &pods).await.err();
        }
        let status = calculate_status(
            set.as_ref(),
            &pods,
            manage_err.as_deref(),
            jiff::Timestamp::now(),
        );
        let updated = self.update_status(&set, status).await?;
        if let Some(e) = manage_err {
            return Err(Error::Other(e));
        }
        let st = status_of(&updated);
        let min_ready = updated.min_ready_seconds();
        let replicas = updated.spec_replicas();
        if min_ready > 0
            && st.ready_replicas.unwrap_or(0) == replicas
            && st.available_replicas.unwrap_or(0) != replicas
        {
            return Ok(Action::RequeueAfter(Duration::from_secs(
                u64::try_from(min_ready).unwrap_or(0),
            )));
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn slow_start_doubles_batches_and_stops_on_the_first_error() {
        let calls = AtomicUsize::new(0);
        let (ok, err) = slow_start_batch(10, 1, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<(), ()>(()) }
        })
        .await;
        assert_eq!((ok, err), (10, None));
        assert_eq!(calls.load(Ordering::SeqCst), 10);

        // Fails from the 4th call on: batches 1, 2, then the batch of 4 has errors.
        let calls = AtomicUsize::new(0);
        let (ok, err) = slow_start_batch(10, 1, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move { if n >= 3 { Err("quota") } else { Ok(()) } }
        })
        .await;
        assert_eq!(ok, 3);
        assert_eq!(err, Some("quota"));
        assert_eq!(
            calls.load(Ordering::SeqCst),
            7,
            "1 + 2 + 4 calls, then stop"
        );
    }

    #[test]
    fn deletion_expectations_count_each_pod_once() {
        let e = PodExpectations::default();
        e.expect_deletions("ns/rs", vec!["a".into(), "b".into()]);
        e.deletion_observed("ns/rs", "a");
        e.deletion_observed("ns/rs", "a");
        assert!(
            !e.satisfied("ns/rs"),
            "pod a seen twice must not count for b"
        );
        e.deletion_observed("ns/rs", "zzz");
        assert!(!e.satisfied("ns/rs"));
        e.deletion_observed("ns/rs", "b");
        assert!(e.satisfied("ns/rs"));
    }

    fn rs(replicas: i32, min_ready: i32) -> ReplicaSet {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns", "generation": 2},
            "spec": {
                "replicas": replicas,
                "minReadySeconds": min_ready,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "tier": "fe"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
            }
        }))
        .expect("rs")
    }

    fn pod(
        labels: serde_json::Value,
        ready_secs_ago: Option<i64>,
        now: jiff::Timestamp,
    ) -> Arc<Pod> {
        let conditions = ready_secs_ago.map(|s| {
            serde_json::json!([{"type": "Ready", "status": "True",
                "lastTransitionTime": (now - jiff::SignedDuration::from_secs(s)).to_string()}])
        });
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "labels": labels},
                "status": {"phase": "Running", "conditions": conditions}
            }))
            .expect("pod"),
        )
    }

    #[test]
    fn status_counts_fully_labeled_ready_and_available_pods() {
        let now = jiff::Timestamp::now();
        let set = rs(3, 10);
        let pods = vec![
            pod(
                serde_json::json!({"app": "web", "tier": "fe"}),
                Some(20),
                now,
            ),
            pod(
                serde_json::json!({"app": "web", "tier": "fe"}),
                Some(5),
                now,
            ),
            pod(serde_json::json!({"app": "web"}), None, now),
        ];
        let s = calculate_status(&set, &pods, None, now);
        assert_eq!(s.replicas, 3);
        assert_eq!(s.fully_labeled_replicas, Some(2));
        assert_eq!(s.ready_replicas, Some(2));
        assert_eq!(
            s.available_replicas,
            Some(1),
            "ready for 5 s < minReadySeconds 10"
        );
        assert_eq!(s.conditions, None);
    }

    #[test]
    fn a_refused_create_sets_replica_failure_and_success_clears_it() {
        let now = jiff::Timestamp::now();
        let mut set = rs(3, 0);
        let s = calculate_status(&set, &[], Some("exceeded quota"), now);
        let c = &s.conditions.clone().expect("conditions")[0];
        assert_eq!(
            (
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.as_deref(),
                c.message.as_deref()
            ),
            (
                "ReplicaFailure",
                "True",
                Some("FailedCreate"),
                Some("exceeded quota")
            )
        );
        set.status = Some(s);
        let s = calculate_status(&set, &[], None, now);
        assert_eq!(s.conditions, None);
        let s = calculate_status(
            &rs(0, 0),
            &[pod(serde_json::json!({}), None, now)],
            Some("x"),
            now,
        );
        assert_eq!(
            s.conditions.expect("conditions")[0].reason.as_deref(),
            Some("FailedDelete")
        );
    }
}
