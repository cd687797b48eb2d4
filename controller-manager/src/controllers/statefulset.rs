//! The statefulset controller (upstream `pkg/controller/statefulset`): pods with stable
//! identities `<set>-<ordinal>` (from `spec.ordinals.start`), created in order and each waiting
//! for its predecessors to be Running and Ready (`OrderedReady`) or all at once (`Parallel`),
//! scaled down from the highest ordinal; PVCs from `volumeClaimTemplates` with the retention
//! policy expressed as owner references; ControllerRevisions for rolling updates (with
//! `partition`) and `OnDelete`; status with current and update revisions.

mod pods;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::controllers::controller_utils::{self, controller_ref, new_controller_ref};
use crate::controllers::history;
use crate::controllers::selector_matches;
use crate::events::{EventRecorder, NORMAL, WARNING, object_reference};
use crate::informer::{Delta, Store, key_of};

pub use pods::{
    claim_name, get_ordinal, identity_matches, is_member_of, new_stateful_set_pod,
    parent_and_ordinal, pod_in_ordinal_range, start_ordinal, storage_matches,
};

/// The label naming the revision a pod was made from.
pub const REVISION_LABEL: &str = history::CONTROLLER_REVISION_HASH;

struct StatefulSetController {
    client: Client,
    recorder: EventRecorder,
    sets: Arc<Store<StatefulSet>>,
    pods: Arc<Store<Pod>>,
    revisions: Arc<Store<ControllerRevision>>,
    claims: Arc<Store<PersistentVolumeClaim>>,
}

pub fn start(ctx: ControllerContext) {
    let sets = ctx.factory.informer::<StatefulSet>();
    let pods = ctx.factory.informer::<Pod>();
    let revisions = ctx.factory.informer::<ControllerRevision>();
    let claims = ctx.factory.informer::<PersistentVolumeClaim>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        sets.add_handler(move |d: &Delta<StatefulSet>| queue.add(key_of(d.object().as_ref())));
    }
    {
        let queue = queue.clone();
        let set_store = sets.store();
        pods.add_handler(move |d: &Delta<Pod>| {
            let mut pods = vec![d.object().clone()];
            if let Delta::Updated { old, .. } = d {
                pods.push(old.clone());
            }
            for pod in pods {
                for key in sets_for_pod(&set_store, &pod) {
                    queue.add(key);
                }
            }
        });
    }
    let reconciler = Arc::new(StatefulSetController {
        client: ctx.client.clone(),
        recorder: ctx.recorder.clone(),
        sets: sets.store(),
        pods: pods.store(),
        revisions: revisions.store(),
        claims: claims.store(),
    });
    let workers = ctx.workers("statefulset", 5);
    ctx.run_workers(reconciler, queue, workers);
}

/// The sets a pod event concerns: its controller (when a StatefulSet), or for an orphan every
/// set in its namespace whose selector matches it (upstream's getStatefulSetsForPod).
fn sets_for_pod(sets: &Store<StatefulSet>, pod: &Pod) -> Vec<String> {
    let ns = pod.namespace().unwrap_or_default();
    if let Some(r) = controller_ref(&pod.metadata) {
        if r.kind != "StatefulSet" {
            return Vec::new();
        }
        return sets
            .get_named(Some(&ns), &r.name)
            .filter(|s| s.metadata.uid.as_deref() == Some(r.uid.as_str()))
            .map(|s| vec![key_of(s.as_ref())])
            .unwrap_or_default();
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    sets.list_namespace(&ns)
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

/// Whether the pod exists in the API (a pod made in memory for a missing ordinal does not).
fn is_created(pod: &Pod) -> bool {
    pod.metadata.uid.is_some() || !phase(pod).is_empty()
}

fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

fn is_running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && controller_utils::is_pod_ready(pod)
}

fn is_running_and_available(pod: &Pod, min_ready_seconds: i32) -> bool {
    phase(pod) == "Running"
        && controller_utils::is_pod_available(pod, min_ready_seconds, jiff::Timestamp::now())
}

fn is_healthy(pod: &Pod) -> bool {
    is_running_and_ready(pod) && !is_terminating(pod)
}

fn is_unavailable(pod: &Pod, min_ready_seconds: i32) -> bool {
    !is_healthy(pod) || !is_running_and_available(pod, min_ready_seconds)
}

/// The revision a pod was made from (its `controller-revision-hash` label).
pub fn pod_revision(pod: &Pod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .map(String::as_str)
        .unwrap_or_default()
}

fn replicas_of(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1)
        .max(0)
}

fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

fn allows_burst(set: &StatefulSet) -> bool {
    set.spec
        .as_ref()
        .and_then(|s| s.pod_management_policy.as_deref())
        == Some("Parallel")
}

fn strategy_type(set: &StatefulSet) -> &str {
    set.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        .unwrap_or("RollingUpdate")
}

/// `spec.updateStrategy.rollingUpdate.partition`, if a rolling update is configured.
fn partition(set: &StatefulSet) -> Option<i32> {
    set.spec
        .as_ref()?
        .update_strategy
        .as_ref()?
        .rolling_update
        .as_ref()
        .map(|r| r.partition.unwrap_or(0))
}

/// The set with the template of `revision` (upstream's ApplyRevision).
fn apply_revision(set: &StatefulSet, revision: &ControllerRevision) -> StatefulSet {
    let mut out = set.clone();
    if let (Some(spec), Some(t)) = (out.spec.as_mut(), history::template_of(revision)) {
        spec.template = t;
    }
    out
}

/// Counts of a status, as upstream's computeReplicaStatus.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub replicas: i32,
    pub ready: i32,
    pub available: i32,
    pub current: i32,
    pub updated: i32,
}

pub fn count_replicas<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
    min_ready_seconds: i32,
    current_revision: &str,
    update_revision: &str,
) -> Counts {
    let mut c = Counts::default();
    for pod in pods {
        if is_created(pod) {
            c.replicas += 1;
        }
        if is_running_and_ready(pod) {
            c.ready += 1;
            if is_running_and_available(pod, min_ready_seconds) {
                c.available += 1;
            }
        }
        if is_created(pod) && !is_terminating(pod) {
            let r = pod_revision(pod);
            if r == current_revision {
                c.current += 1;
            }
            if r == update_revision {
                c.updated += 1;
            }
        }
    }
    c
}

/// The status the controller computed in one sync.
#[derive(Debug, Clone, Default)]
struct Status {
    observed_generation: i64,
    counts: Counts,
    current_revision: String,
    update_revision: String,
    collision_count: i32,
}

impl Status {
    fn recount(&mut self, set: &StatefulSet, lists: &[&[Pod]]) {
        let mut c = Counts::default();
        for list in lists {
            let l = count_replicas(
                list.iter(),
                min_ready_seconds(set),
                &self.current_revision,
                &self.update_revision,
            );
            c.replicas += l.replicas;
            c.ready += l.ready;
            c.available += l.available;
            c.current += l.current;
            c.updated += l.updated;
        }
        self.counts = c;
    }

    /// The API status, with Go's omitempty zeros left out.
    fn to_api(
        &self,
        conditions: Option<Vec<k8s_openapi::api::apps::v1::StatefulSetCondition>>,
    ) -> StatefulSetStatus {
        let nz = |v: i32| (v != 0).then_some(v);
        StatefulSetStatus {
            observed_generation: (self.observed_generation != 0)
                .then_some(self.observed_generation),
            replicas: self.counts.replicas,
            ready_replicas: nz(self.counts.ready),
            available_replicas: Some(self.counts.available),
            current_replicas: nz(self.counts.current),
            updated_replicas: nz(self.counts.updated),
            current_revision: (!self.current_revision.is_empty())
                .then(|| self.current_revision.clone()),
            update_revision: (!self.update_revision.is_empty())
                .then(|| self.update_revision.clone()),
            collision_count: Some(self.collision_count),
            conditions,
        }
    }
}

/// What one pass over replicas or condemned pods asks for.
type Step = Result<bool, Error>;

impl Reconciler for StatefulSetController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(set) = self.sets.get(key) else {
            return Ok(Action::Done);
        };
        let set = set.as_ref().clone();
        let Some(selector) = set.spec.as_ref().map(|s| s.selector.clone()) else {
            return Ok(Action::Done);
        };
        if k1s_apimachinery::selector::LabelSelector::from_json(
            &serde_json::to_value(&selector).unwrap_or_default(),
        )
        .is_err()
        {
            // A non-transient error: not retried, as upstream.
            return Ok(Action::Done);
        }
        self.adopt_orphan_revisions(&set).await?;
        let pods = self.pods_for_set(&set).await?;
        let status = self.update_stateful_set(&set, pods).await?;
        let mrs = min_ready_seconds(&set);
        if mrs > 0 && status.counts.available != replicas_of(&set) {
            return Ok(Action::RequeueAfter(Duration::from_secs(
                mrs.unsigned_abs().into(),
            )));
        }
        Ok(Action::Done)
    }
}

impl StatefulSetController {
    fn set_ref(
        &self,
        set: &StatefulSet,
    ) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        new_controller_ref(set)
    }

    /// Revisions in the set's namespace matching its selector, controlled by it or by nothing.
    fn list_revisions(&self, set: &StatefulSet) -> Vec<Arc<ControllerRevision>> {
        let uid = set.metadata.uid.clone().unwrap_or_default();
        let selector = set.spec.as_ref().map(|s| &s.selector);
        self.revisions
            .list_namespace(&set.namespace().unwrap_or_default())
            .into_iter()
            .filter(|r| selector_matches(selector, r.metadata.labels.as_ref()))
            .filter(|r| controller_ref(&r.metadata).is_none_or(|c| c.uid == uid))
            .collect()
    }

    async fn adopt_orphan_revisions(&self, set: &StatefulSet) -> Result<(), Error> {
        let orphans: Vec<_> = self
            .list_revisions(set)
            .into_iter()
            .filter(|r| controller_ref(&r.metadata).is_none())
            .collect();
        if orphans.is_empty() || set.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        // Adopt only for the set as it is now (upstream re-reads it and checks its UID).
        let api: Api<StatefulSet> =
            Api::namespaced(self.client.clone(), &set.namespace().unwrap_or_default());
        let fresh = api.get(&set.name_any()).await?;
        if fresh.metadata.uid != set.metadata.uid || fresh.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let owner = self.set_ref(set);
        for r in orphans {
            match controller_utils::adopt(&self.client, r.as_ref(), &owner).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// The set's pods: members by name that its selector matches, adopting orphans and
    /// releasing pods it controls that no longer match (upstream's getPodsForStatefulSet).
    async fn pods_for_set(&self, set: &StatefulSet) -> Result<Vec<Pod>, Error> {
        let uid = set.metadata.uid.clone().unwrap_or_default();
        let mut candidates = Vec::new();
        for pod in self
            .pods
            .list_namespace(&set.namespace().unwrap_or_default())
        {
            if is_member_of(set, &pod) {
                candidates.push(pod);
            } else if controller_ref(&pod.metadata).is_some_and(|r| r.uid == uid) {
                controller_utils::release(&self.client, pod.as_ref(), &uid).await?;
            }
        }
        let owner = self.set_ref(set);
        let claimed = controller_utils::claim(
            &self.client,
            &set.metadata,
            &owner,
            set.spec.as_ref().map(|s| &s.selector),
            candidates,
        )
        .await?;
        Ok(claimed.into_iter().map(|p| p.as_ref().clone()).collect())
    }

    /// Upstream's UpdateStatefulSet: revisions, the pods, the status, then history truncation.
    async fn update_stateful_set(
        &self,
        set: &StatefulSet,
        pods: Vec<Pod>,
    ) -> Result<Status, Error> {
        let mut revisions = self.list_revisions(set);
        history::sort_revisions(&mut revisions);
        let (current, update, collision_count) = self.get_revisions(set, &revisions).await?;
        let (status, result) = self
            .update_pods(set, &current, &update, collision_count, &pods)
            .await;
        let status_result = self.update_status(set, status.clone()).await;
        result?;
        status_result?;
        self.truncate_history(set, &pods, &revisions, &current, &update)
            .await?;
        Ok(status)
    }

    /// Upstream's getStatefulSetRevisions: the current revision (by `status.currentRevision`)
    /// and the update revision (made from the set's template; an equal older one is reused,
    /// with its number raised when it is not the latest).
    async fn get_revisions(
        &self,
        set: &StatefulSet,
        revisions: &[Arc<ControllerRevision>],
    ) -> Result<(ControllerRevision, ControllerRevision, i32), Error> {
        let mut collision_count = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let template = set
            .spec
            .as_ref()
            .map(|s| s.template.clone())
            .unwrap_or_default();
        let mut candidate = history::new_revision(
            &set.name_any(),
            &set.namespace().unwrap_or_default(),
            self.set_ref(set),
            template.metadata.as_ref().and_then(|m| m.labels.as_ref()),
            history::template_patch(&template),
            history::next_revision(revisions),
            Some(collision_count),
        );
        // Upstream copies the set's annotations (kubectl's change-cause) onto the revision.
        if let Some(a) = set.metadata.annotations.as_ref() {
            candidate
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .extend(a.clone());
        }
        let equal = history::find_equal(revisions, &candidate);
        let update = match (equal.last(), revisions.last()) {
            (Some(eq), Some(last)) if history::equal_revision(last, eq) => last.as_ref().clone(),
            (Some(eq), _) => {
                // Rolling back to an earlier revision: it becomes the newest.
                let api: Api<ControllerRevision> =
                    Api::namespaced(self.client.clone(), &set.namespace().unwrap_or_default());
                let mut r = eq.as_ref().clone();
                r.revision = candidate.revision;
                match api.replace(&r.name_any(), &PostParams::default(), &r).await {
                    Ok(r) => r,
                    Err(e) => return Err(e.into()),
                }
            }
            (None, _) => {
                history::create_revision(
                    &self.client,
                    &set.name_any(),
                    candidate,
                    &mut collision_count,
                )
                .await?
            }
        };
        let current_name = set
            .status
            .as_ref()
            .and_then(|s| s.current_revision.clone())
            .unwrap_or_default();
        let current = revisions
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(current_name.as_str()))
            .map(|r| r.as_ref().clone())
            .unwrap_or_else(|| update.clone());
        Ok((current, update, collision_count))
    }

    /// Upstream's updateStatefulSet: create missing and recreate failed replicas, fix
    /// identities, scale down, then roll the update from the highest ordinal down to the
    /// partition. Returns the status and the first error.
    async fn update_pods(
        &self,
        set: &StatefulSet,
        current: &ControllerRevision,
        update: &ControllerRevision,
        collision_count: i32,
        pods: &[Pod],
    ) -> (Status, Result<(), Error>) {
        let current_set = apply_revision(set, current);
        let update_set = apply_revision(set, update);
        let current_name = current.name_any();
        let update_name = update.name_any();
        let mut status = Status {
            observed_generation: set.metadata.generation.unwrap_or(0),
            current_revision: current_name.clone(),
            update_revision: update_name.clone(),
            collision_count,
            ..Default::default()
        };
        status.recount(set, &[pods]);

        let start = start_ordinal(set);
        let count = replicas_of(set);
        let mut replicas: Vec<Option<Pod>> = vec![None; usize::try_from(count).unwrap_or(0)];
        let mut condemned: Vec<Pod> = Vec::new();
        for pod in pods {
            let ord = get_ordinal(pod);
            if pod_in_ordinal_range(pod, set) {
                if let Some(slot) = usize::try_from(ord - start)
                    .ok()
                    .and_then(|i| replicas.get_mut(i))
                {
                    *slot = Some(pod.clone());
                }
            } else if ord >= 0 {
                condemned.push(pod.clone());
            }
        }
        let mut replicas: Vec<Pod> = replicas
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                p.unwrap_or_else(|| {
                    new_versioned_pod(
                        &current_set,
                        &update_set,
                        &current_name,
                        &update_name,
                        start + i32::try_from(i).unwrap_or(0),
                    )
                })
            })
            .collect();
        condemned.sort_by_key(|p| std::cmp::Reverse(get_ordinal(p)));
        let mrs = min_ready_seconds(set);
        let first_unavailable: Option<String> = replicas
            .iter()
            .find(|p| is_unavailable(p, mrs))
            .or_else(|| condemned.iter().rev().find(|p| is_unavailable(p, mrs)))
            .map(|p| p.name_any());

        if set.metadata.deletion_timestamp.is_some() {
            return (status, Ok(()));
        }
        let monotonic = !allows_burst(set);

        // Replicas, in ordinal order.
        let mut first_err: Option<Error> = None;
        for i in 0..replicas.len() {
            match self
                .process_replica(
                    set,
                    &current_set,
                    &update_set,
                    &current_name,
                    &update_name,
                    monotonic,
                    &mut replicas,
                    i,
                )
                .await
            {
                Ok(true) if monotonic => {
                    status.recount(set, &[&replicas, &condemned]);
                    return (status, Ok(()));
                }
                Ok(_) => {}
                Err(e) => {
                    if monotonic {
                        status.recount(set, &[&replicas, &condemned]);
                        return (status, Err(e));
                    }
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            status.recount(set, &[&replicas, &condemned]);
            return (status, Err(e));
        }

        // Claims of condemned pods follow the retention policy.
        for pod in &condemned {
            let step: Step = async {
                if !self.claims_match_retention_policy(&update_set, pod) {
                    self.update_pod_claim_for_retention_policy(&update_set, pod)
                        .await?;
                }
                Ok(false)
            }
            .await;
            if let Err(e) = step {
                status.recount(set, &[&replicas, &condemned]);
                return (status, Err(e));
            }
        }

        // Scale down, from the highest ordinal.
        for pod in &condemned {
            match self
                .process_condemned(set, first_unavailable.as_deref(), monotonic, pod, mrs)
                .await
            {
                Ok(true) if monotonic => {
                    status.recount(set, &[&replicas, &condemned]);
                    return (status, Ok(()));
                }
                Ok(_) => {}
                Err(e) => {
                    if monotonic {
                        status.recount(set, &[&replicas, &condemned]);
                        return (status, Err(e));
                    }
                    first_err.get_or_insert(e);
                }
            }
        }
        status.recount(set, &[&replicas, &condemned]);
        if let Some(e) = first_err {
            return (status, Err(e));
        }
        if strategy_type(set) == "OnDelete" {
            return (status, Ok(()));
        }

        // The rolling update: delete the highest pod not at the update revision, one at a time.
        // (maxUnavailable needs the MaxUnavailableStatefulSet gate, off in 1.33: the API server
        // drops the field, so one pod at a time.)
        let update_min = partition(set).unwrap_or(0);
        if let UpdateStep::Delete(target) =
            next_update_step(&replicas, &update_name, update_min, mrs)
        {
            let r = self.delete_pod(set, &replicas[target]).await;
            status.counts.current -= 1;
            return (status, r);
        }
        (status, Ok(()))
    }

    /// Upstream's processReplica; `Ok(true)`: stop here (in monotonic mode).
    #[allow(clippy::too_many_arguments)]
    async fn process_replica(
        &self,
        set: &StatefulSet,
        _current_set: &StatefulSet,
        update_set: &StatefulSet,
        _current_name: &str,
        _update_name: &str,
        monotonic: bool,
        replicas: &mut [Pod],
        i: usize,
    ) -> Step {
        let pod = &replicas[i];
        let p = phase(pod);
        if is_created(pod) && (p == "Failed" || p == "Succeeded") {
            let (ns, name) = (set.namespace().unwrap_or_default(), set.name_any());
            if p == "Failed" {
                self.recorder.event(
                    &object_reference(set),
                    WARNING,
                    "RecreatingFailedPod",
                    &format!(
                        "StatefulSet {ns}/{name} is recreating failed Pod {}",
                        pod.name_any()
                    ),
                );
            } else {
                self.recorder.event(
                    &object_reference(set),
                    NORMAL,
                    "RecreatingTerminatedPod",
                    &format!(
                        "StatefulSet {ns}/{name} is recreating terminated Pod {}",
                        pod.name_any()
                    ),
                );
            }
            if !is_terminating(pod) {
                self.delete_pod(set, pod).await?;
            }
            // The new pod is made once the old one is gone.
            return Ok(true);
        }
        if !is_created(pod) {
            if self.pod_claim_is_stale(set, pod) {
                // A claim still owned by an earlier pod of this ordinal: wait for it to go.
                return Ok(true);
            }
            let created = self.create_pod(set, pod).await?;
            replicas[i] = created;
            if monotonic {
                return Ok(true);
            }
        }
        let pod = &replicas[i];
        if phase(pod) == "Pending" {
            self.create_missing_claims(set, pod).await?;
        }
        if is_terminating(pod) && monotonic {
            return Ok(true);
        }
        let mrs = min_ready_seconds(set);
        if !is_running_and_ready(pod) && monotonic {
            return Ok(true);
        }
        if !is_running_and_available(pod, mrs) && monotonic {
            return Ok(true);
        }
        let retention_match = self.claims_match_retention_policy(update_set, pod);
        if identity_matches(set, pod) && storage_matches(set, pod) && retention_match {
            return Ok(false);
        }
        self.update_stateful_pod(update_set, pod).await?;
        Ok(false)
    }

    async fn process_condemned(
        &self,
        set: &StatefulSet,
        first_unavailable: Option<&str>,
        monotonic: bool,
        pod: &Pod,
        mrs: i32,
    ) -> Step {
        if is_terminating(pod) {
            return Ok(monotonic);
        }
        let is_first = first_unavailable == Some(pod.name_any().as_str());
        if !is_running_and_ready(pod) && monotonic && !is_first {
            return Ok(true);
        }
        if !is_running_and_available(pod, mrs) && monotonic && !is_first {
            return Ok(true);
        }
        self.delete_pod(set, pod).await?;
        Ok(true)
    }

    fn record_pod_event(&self, verb: &str, set: &StatefulSet, pod: &Pod, err: Option<&Error>) {
        let title = title(verb);
        match err {
            None => self.recorder.event(
                &object_reference(set),
                NORMAL,
                &format!("Successful{title}"),
                &format!(
                    "{verb} Pod {} in StatefulSet {} successful",
                    pod.name_any(),
                    set.name_any()
                ),
            ),
            Some(e) => self.recorder.event(
                &object_reference(set),
                WARNING,
                &format!("Failed{title}"),
                &format!(
                    "{verb} Pod {} in StatefulSet {} failed error: {}",
                    pod.name_any(),
                    set.name_any(),
                    api_message(e)
                ),
            ),
        }
    }

    fn record_claim_event(
        &self,
        verb: &str,
        set: &StatefulSet,
        pod: &Pod,
        claim: &str,
        err: Option<&kube::Error>,
    ) {
        let title = title(verb);
        match err {
            None => self.recorder.event(
                &object_reference(set),
                NORMAL,
                &format!("Successful{title}"),
                &format!(
                    "{verb} Claim {claim} Pod {} in StatefulSet {} success",
                    pod.name_any(),
                    set.name_any()
                ),
            ),
            Some(e) => self.recorder.event(
                &object_reference(set),
                WARNING,
                &format!("Failed{title}"),
                &format!(
                    "{verb} Claim {claim} for Pod {} in StatefulSet {} failed error: {}",
                    pod.name_any(),
                    set.name_any(),
                    api_message(&Error::Other(e.to_string()))
                ),
            ),
        }
    }

    fn pod_api(&self, set: &StatefulSet) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &set.namespace().unwrap_or_default())
    }

    fn claim_api(&self, set: &StatefulSet) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), &set.namespace().unwrap_or_default())
    }

    /// Upstream's CreateStatefulPod: the claims first, then the pod, then the claims' owner
    /// references for the retention policy.
    async fn create_pod(&self, set: &StatefulSet, pod: &Pod) -> Result<Pod, Error> {
        if let Err(e) = self.create_claims(set, pod).await {
            self.record_pod_event("create", set, pod, Some(&e));
            return Err(e);
        }
        match self.pod_api(set).create(&PostParams::default(), pod).await {
            Ok(created) => {
                if let Err(e) = self
                    .update_pod_claim_for_retention_policy(set, &created)
                    .await
                {
                    self.record_pod_event("update", set, pod, Some(&e));
                    return Err(e);
                }
                self.record_pod_event("create", set, pod, None);
                Ok(created)
            }
            // Already there: the cache lags; the next sync sees it.
            Err(e) if is_conflict(&e) => Err(e.into()),
            Err(e) => {
                let e = Error::from(e);
                self.record_pod_event("create", set, pod, Some(&e));
                Err(e)
            }
        }
    }

    async fn delete_pod(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        match self
            .pod_api(set)
            .delete(&pod.name_any(), &DeleteParams::default())
            .await
        {
            Ok(_) => {
                self.record_pod_event("delete", set, pod, None);
                Ok(())
            }
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => {
                let e = Error::from(e);
                self.record_pod_event("delete", set, pod, Some(&e));
                Err(e)
            }
        }
    }

    /// Upstream's UpdateStatefulPod: identity, storage and claim owner references put right.
    async fn update_stateful_pod(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        let mut pod = pod.clone();
        for _ in 0..5 {
            let mut consistent = true;
            if !identity_matches(set, &pod) {
                pods::update_identity(set, &mut pod);
                consistent = false;
            }
            if !storage_matches(set, &pod) {
                pods::update_storage(set, &mut pod);
                consistent = false;
                if let Err(e) = self.create_claims(set, &pod).await {
                    self.record_pod_event("update", set, &pod, Some(&e));
                    return Err(e);
                }
            }
            if !self.claims_match_retention_policy(set, &pod) {
                if let Err(e) = self.update_pod_claim_for_retention_policy(set, &pod).await {
                    self.record_pod_event("update", set, &pod, Some(&e));
                    return Err(e);
                }
                consistent = false;
            }
            if consistent {
                return Ok(());
            }
            match self
                .pod_api(set)
                .replace(&pod.name_any(), &PostParams::default(), &pod)
                .await
            {
                Ok(_) => {
                    self.record_pod_event("update", set, &pod, None);
                    return Ok(());
                }
                Err(e) if is_conflict(&e) => {
                    // Retry on a fresh copy.
                    match self.pod_api(set).get_opt(&pod.name_any()).await? {
                        Some(fresh) => pod = fresh,
                        None => return Ok(()),
                    }
                }
                Err(e) => {
                    let e = Error::from(e);
                    self.record_pod_event("update", set, &pod, Some(&e));
                    return Err(e);
                }
            }
        }
        Err(Error::Other("pod update kept conflicting".into()))
    }

    fn claim(&self, set: &StatefulSet, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims
            .get_named(Some(&set.namespace().unwrap_or_default()), name)
    }

    /// Upstream's createPersistentVolumeClaims: every missing claim of the pod is created.
    async fn create_claims(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        let mut errors = Vec::new();
        for claim in pods::claims_for_pod(set, pod).into_values() {
            let name = claim.name_any();
            match self.claim(set, &name) {
                None => match self
                    .claim_api(set)
                    .create(&PostParams::default(), &claim)
                    .await
                {
                    Ok(_) => self.record_claim_event("create", set, pod, &name, None),
                    Err(e) if is_conflict(&e) => {
                        // Made meanwhile (the cache lags): fine unless it is being deleted.
                    }
                    Err(e) => {
                        self.record_claim_event("create", set, pod, &name, Some(&e));
                        errors.push(format!(
                            "failed to create PVC {name}: {}",
                            api_message(&Error::Kube(e))
                        ));
                    }
                },
                Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                    errors.push(format!("pvc {name} is being deleted"));
                }
                Some(_) => {}
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Other(errors.join(", ")))
        }
    }

    async fn create_missing_claims(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        self.create_claims(set, pod).await?;
        if let Err(e) = self.update_pod_claim_for_retention_policy(set, pod).await {
            self.record_pod_event("update", set, pod, Some(&e));
            return Err(e);
        }
        Ok(())
    }

    /// Upstream's PodClaimIsStale: with `whenScaled: Delete`, a claim owned by another pod of
    /// the same name (an earlier incarnation) is stale.
    fn pod_claim_is_stale(&self, set: &StatefulSet, pod: &Pod) -> bool {
        if pods::retention_policy(set).0 == "Retain" {
            return false;
        }
        pods::claims_for_pod(set, pod).values().any(|claim| {
            self.claim(set, &claim.name_any()).is_some_and(|existing| {
                existing.owner_references().iter().any(|r| {
                    r.kind == "Pod"
                        && r.name == pod.name_any()
                        && Some(r.uid.as_str()) != pod.metadata.uid.as_deref()
                })
            })
        })
    }

    /// Upstream's ClaimsMatchRetentionPolicy (claims not there yet match).
    fn claims_match_retention_policy(&self, set: &StatefulSet, pod: &Pod) -> bool {
        let ordinal = get_ordinal(pod);
        set.spec
            .as_ref()
            .and_then(|s| s.volume_claim_templates.as_ref())
            .into_iter()
            .flatten()
            .all(|t| {
                let name = claim_name(set, &t.name_any(), ordinal);
                self.claim(set, &name)
                    .is_none_or(|c| pods::claim_owner_up_to_date(&c, set, pod))
            })
    }

    /// Upstream's UpdatePodClaimForRetentionPolicy: owner references of each claim as the
    /// policy wants them.
    async fn update_pod_claim_for_retention_policy(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), Error> {
        let ordinal = get_ordinal(pod);
        let templates = set
            .spec
            .as_ref()
            .and_then(|s| s.volume_claim_templates.clone())
            .unwrap_or_default();
        for t in templates {
            let name = claim_name(set, &t.name_any(), ordinal);
            let Some(claim) = self.claim(set, &name) else {
                continue;
            };
            if pods::has_unexpected_controller(&claim, set, pod) {
                self.recorder.event(
                    &object_reference(set),
                    WARNING,
                    "ConflictingController",
                    &format!(
                        "PersistentVolumeClaim {name} has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim"
                    ),
                );
            }
            if !pods::claim_owner_up_to_date(&claim, set, pod) {
                let mut claim = claim.as_ref().clone();
                pods::update_claim_owner_refs(&mut claim, set, pod);
                self.claim_api(set)
                    .replace(&name, &PostParams::default(), &claim)
                    .await
                    .map_err(|e| {
                        Error::Other(format!(
                            "could not update claim {name} for delete policy ownerRefs: {e}"
                        ))
                    })?;
            }
        }
        Ok(())
    }

    /// Writes the status when it changed (a finished rolling update makes the update revision
    /// current first).
    async fn update_status(&self, set: &StatefulSet, mut status: Status) -> Result<(), Error> {
        if strategy_type(set) == "RollingUpdate"
            && status.counts.updated == status.counts.replicas
            && status.counts.ready == status.counts.replicas
        {
            status.counts.current = status.counts.updated;
            status.current_revision = status.update_revision.clone();
        }
        let conditions = set.status.as_ref().and_then(|s| s.conditions.clone());
        let want = status.to_api(conditions);
        let have = set.status.clone().unwrap_or_default();
        if normalized(&have) == normalized(&want) {
            return Ok(());
        }
        let api: Api<StatefulSet> =
            Api::namespaced(self.client.clone(), &set.namespace().unwrap_or_default());
        let mut obj = set.clone();
        for _ in 0..10 {
            obj.status = Some(want.clone());
            match api
                .replace_status(&obj.name_any(), &PostParams::default(), &obj)
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if is_conflict(&e) => match api.get_opt(&set.name_any()).await? {
                    Some(fresh) if fresh.metadata.uid == set.metadata.uid => obj = fresh,
                    _ => return Ok(()),
                },
                Err(e) if is_not_found(&e) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::Other("status update kept conflicting".into()))
    }

    /// Upstream's truncateHistory: revisions not used by a pod nor current nor update beyond
    /// `revisionHistoryLimit` are deleted, oldest first.
    async fn truncate_history(
        &self,
        set: &StatefulSet,
        pods: &[Pod],
        revisions: &[Arc<ControllerRevision>],
        current: &ControllerRevision,
        update: &ControllerRevision,
    ) -> Result<(), Error> {
        let mut live: HashSet<String> = pods.iter().map(|p| pod_revision(p).to_string()).collect();
        live.insert(current.name_any());
        live.insert(update.name_any());
        let old: Vec<_> = revisions
            .iter()
            .filter(|r| !live.contains(&r.name_any()))
            .collect();
        let limit = set
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10)
            .max(0);
        let limit = usize::try_from(limit).unwrap_or(0);
        if old.len() <= limit {
            return Ok(());
        }
        let api: Api<ControllerRevision> =
            Api::namespaced(self.client.clone(), &set.namespace().unwrap_or_default());
        for r in &old[..old.len() - limit] {
            match api.delete(&r.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// Status compared without the fields Go leaves out when zero.
fn normalized(s: &StatefulSetStatus) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.retain(|_, x| {
            !(x.is_null() || *x == serde_json::json!(0) || *x == serde_json::json!(""))
        });
    }
    v
}

fn title(verb: &str) -> String {
    let mut c = verb.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// An API error's message, as Go prints a StatusError.
fn api_message(e: &Error) -> String {
    match e {
        Error::Kube(kube::Error::Api(s)) => s.message.clone(),
        other => other.to_string(),
    }
}

/// What the rolling update does next.
#[derive(Debug, PartialEq, Eq)]
pub enum UpdateStep {
    /// Delete the replica at this index (it is recreated at the update revision).
    Delete(usize),
    /// A replica at or above the partition is updated but not yet available.
    Wait,
    /// Every replica at or above the partition is updated and available.
    Done,
}

/// Upstream's rolling update: from the highest index down to the partition, the first replica
/// not at the update revision (and not terminating) is deleted; an unavailable one waits.
pub fn next_update_step(
    replicas: &[Pod],
    update_revision: &str,
    partition: i32,
    mrs: i32,
) -> UpdateStep {
    let update_min = usize::try_from(partition).unwrap_or(0);
    for target in (update_min..replicas.len()).rev() {
        let pod = &replicas[target];
        if pod_revision(pod) != update_revision && !is_terminating(pod) {
            return UpdateStep::Delete(target);
        }
        if is_unavailable(pod, mrs) {
            return UpdateStep::Wait;
        }
    }
    UpdateStep::Done
}

/// Upstream's newVersionedStatefulSetPod: ordinals below the partition (or, without a
/// rolling-update config, below the current replicas) get the current revision.
fn new_versioned_pod(
    current_set: &StatefulSet,
    update_set: &StatefulSet,
    current_revision: &str,
    update_revision: &str,
    ordinal: i32,
) -> Pod {
    let start = start_ordinal(current_set);
    let rolling = strategy_type(current_set) == "RollingUpdate";
    let current_replicas = current_set
        .status
        .as_ref()
        .and_then(|s| s.current_replicas)
        .unwrap_or(0);
    let use_current = match partition(current_set) {
        None => rolling && ordinal < start + current_replicas,
        Some(p) => ordinal < start + p,
    };
    let (set, revision) = if use_current {
        (current_set, current_revision)
    } else {
        (update_set, update_revision)
    };
    let mut pod = new_stateful_set_pod(set, ordinal);
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(REVISION_LABEL.into(), revision.into());
    pod
}

#[cfg(test)]
mod tests;
