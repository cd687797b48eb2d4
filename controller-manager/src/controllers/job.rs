//! The job controller (upstream `pkg/controller/job`): runs a Job's pods to completion.
//! Pods are made from the template (Indexed jobs: one per completion index) and carry the
//! `batch.kubernetes.io/job-tracking` finalizer; a finished pod is first recorded in
//! `status.uncountedTerminatedPods`, then its finalizer is removed, then it moves into
//! `succeeded`/`failed` (or `completedIndexes`), so each pod is counted exactly once. Failures
//! go through the pod failure policy, `backoffLimit` (with exponential backoff before
//! replacements) and `activeDeadlineSeconds`; as in 1.33 the interim `FailureTarget` /
//! `SuccessCriteriaMet` condition comes first, and `Failed` / `Complete` once no pod is left
//! running.

mod indexed;
mod policy;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::controllers::controller_utils::{
    claim, controller_ref, is_pod_active, is_pod_ready, new_controller_ref, pod_from_template,
};
use crate::controllers::selector_matches;
use crate::events::{EventRecorder, object_reference};
use crate::expectations::Expectations;
use crate::informer::{Delta, MutationCache, Store, key_of, split_key};
use crate::workqueue::WorkQueue;

pub use indexed::COMPLETION_INDEX;

/// The finalizer that keeps a pod until the controller has counted it.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// `spec.managedBy` of jobs this controller manages (also the default when unset).
const MANAGED_BY: &str = "kubernetes.io/job-controller";
/// Upstream's MaxPodCreateDeletePerSync.
const MAX_CREATE_DELETE_PER_SYNC: usize = 500;
/// Keys of orphan pods (still carrying the finalizer, their job gone) in the queue.
const ORPHAN_PREFIX: &str = "orphan-pod:";

/// Failures since the last success, and when the last one happened (upstream's
/// backoffRecord).
#[derive(Debug, Clone, Copy, Default)]
struct BackoffRecord {
    failures: u32,
    last_failure: Option<jiff::Timestamp>,
}

struct JobController {
    client: Client,
    jobs: Arc<Store<Job>>,
    pods: Arc<Store<Pod>>,
    recorder: EventRecorder,
    expectations: Arc<Expectations>,
    /// Per job key: UIDs of pods whose finalizer removal was sent but not yet observed.
    finalizer_expectations: Arc<Mutex<HashMap<String, HashSet<String>>>>,
    backoff: Arc<Mutex<HashMap<String, BackoffRecord>>>,
    /// The job statuses this controller wrote, until the job informer has them: a sync must not
    /// count or create from a status older than its own last write.
    written: Arc<MutationCache<Job>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn has_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING_FINALIZER)
}

/// The key of the job controlling `pod`, if any.
fn job_key_of(pod: &Pod) -> Option<String> {
    let r = controller_ref(&pod.metadata)?;
    (r.kind == "Job" && r.api_version.starts_with("batch/")).then(|| {
        format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            r.name
        )
    })
}

pub fn start(ctx: ControllerContext) {
    let jobs = ctx.factory.informer::<Job>();
    let pods = ctx.factory.informer::<Pod>();
    let queue = ctx.queue();
    let expectations = Arc::new(Expectations::default());
    let finalizer_expectations: Arc<Mutex<HashMap<String, HashSet<String>>>> = Arc::default();
    let backoff: Arc<Mutex<HashMap<String, BackoffRecord>>> = Arc::default();
    let written: Arc<MutationCache<Job>> = Arc::default();
    {
        let (queue, expectations, backoff, written) = (
            queue.clone(),
            expectations.clone(),
            backoff.clone(),
            written.clone(),
        );
        jobs.add_handler(move |d: &Delta<Job>| {
            let key = key_of(d.object().as_ref());
            if let Delta::Deleted(_) = d {
                expectations.delete(&key);
                lock(&backoff).remove(&key);
                written.forget(&key);
            }
            queue.add(key);
        });
    }
    {
        let (queue, expectations, fin, job_store) = (
            queue.clone(),
            expectations.clone(),
            finalizer_expectations.clone(),
            jobs.store(),
        );
        pods.add_handler(move |d: &Delta<Pod>| {
            on_pod_delta(d, &queue, &expectations, &fin, &job_store);
        });
    }
    let reconciler = Arc::new(JobController {
        client: ctx.client.clone(),
        jobs: jobs.store(),
        pods: pods.store(),
        recorder: ctx.recorder.clone(),
        expectations,
        finalizer_expectations,
        backoff,
        written,
    });
    let workers = ctx.workers("job", 5);
    ctx.run_workers(reconciler, queue, workers);
}

fn on_pod_delta(
    d: &Delta<Pod>,
    queue: &WorkQueue,
    expectations: &Expectations,
    fin: &Mutex<HashMap<String, HashSet<String>>>,
    jobs: &Store<Job>,
) {
    let pod = d.object();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let key = job_key_of(pod);
    if let Some(key) = &key {
        match d {
            Delta::Added(p) if p.metadata.deletion_timestamp.is_none() => {
                expectations.creation_observed(key)
            }
            Delta::Deleted(_) => expectations.deletion_observed(key),
            Delta::Updated { old, new }
                if old.metadata.deletion_timestamp.is_none()
                    && new.metadata.deletion_timestamp.is_some() =>
            {
                expectations.deletion_observed(key);
            }
            _ => {}
        }
        if matches!(d, Delta::Deleted(_)) || !has_finalizer(pod) {
            let mut fin = lock(fin);
            if let Some(set) = fin.get_mut(key) {
                set.remove(&uid);
                if set.is_empty() {
                    fin.remove(key);
                }
            }
        }
        queue.add(key.clone());
    }
    if let Delta::Updated { old, .. } = d
        && let Some(old_key) = job_key_of(old)
        && Some(&old_key) != key.as_ref()
    {
        queue.add(old_key);
    }
    // A pod still holding the finalizer whose job is gone (or is another job now) is an
    // orphan: its finalizer has to go.
    if !matches!(d, Delta::Deleted(_)) && has_finalizer(pod) {
        let owner_uid = controller_ref(&pod.metadata).map(|r| r.uid.clone());
        let job_alive = key
            .as_deref()
            .and_then(|k| jobs.get(k))
            .is_some_and(|j| j.metadata.uid == owner_uid);
        if !job_alive {
            queue.add(format!("{ORPHAN_PREFIX}{}", key_of(pod.as_ref())));
        }
    }
}

/// Upstream's isPodFailed: a Failed pod, or (unless only failed pods are replaced) one being
/// deleted before it succeeded.
fn is_pod_failed(pod: &Pod, only_replace_failed: bool) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase == Some("Failed") {
        return true;
    }
    !only_replace_failed && pod.metadata.deletion_timestamp.is_some() && phase != Some("Succeeded")
}

fn pod_phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some() && !matches!(pod_phase(pod), "Succeeded" | "Failed")
}

fn condition_true<'a>(status: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_ && c.status == "True")
}

/// Whether the job has a true `Complete` or `Failed` condition.
pub fn is_finished(job: &Job) -> bool {
    job.status.as_ref().is_some_and(|s| {
        condition_true(s, "Complete").is_some() || condition_true(s, "Failed").is_some()
    })
}

fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> JobCondition {
    JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Upstream's ensureJobConditionStatus: sets the condition's status (adding it only when it
/// is to be true); returns whether anything changed.
fn ensure_condition(
    conditions: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) -> bool {
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status
            || c.reason.as_deref() != Some(reason)
            || c.message.as_deref() != Some(message)
        {
            *c = new_condition(type_, status, reason, message, now);
            return true;
        }
        return false;
    }
    if status == "True" {
        conditions.push(new_condition(type_, status, reason, message, now));
        return true;
    }
    false
}

/// Which pod to delete first when there are too many: unscheduled, then pending, then not
/// ready, then the newest (upstream's ActivePods ordering, reduced).
fn deletion_rank(pod: &Pod) -> (u8, u8, u8, std::cmp::Reverse<Option<jiff::Timestamp>>) {
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    (
        u8::from(scheduled),
        u8::from(pod_phase(pod) != "Pending"),
        u8::from(is_pod_ready(pod)),
        std::cmp::Reverse(pod.metadata.creation_timestamp.as_ref().map(|t| t.0)),
    )
}

/// Whether the (Indexed) job's success policy is met; the message names the rule.
fn success_policy_met(job: &Job, succeeded: &BTreeSet<i32>, completions: i32) -> Option<String> {
    let rules = &job.spec.as_ref()?.success_policy.as_ref()?.rules;
    for (i, rule) in rules.iter().enumerate() {
        let met = match (&rule.succeeded_indexes, rule.succeeded_count) {
            (Some(ix), count) => {
                let wanted = indexed::parse(Some(ix), completions);
                let hit = wanted.intersection(succeeded).count();
                match count {
                    Some(n) => hit >= usize::try_from(n).unwrap_or(usize::MAX),
                    None => !wanted.is_empty() && hit == wanted.len(),
                }
            }
            (None, Some(n)) => succeeded.len() >= usize::try_from(n).unwrap_or(usize::MAX),
            (None, None) => false,
        };
        if met {
            return Some(format!("Matched rules at index {i}"));
        }
    }
    None
}

/// The per-index failure counts (counted, ignored) a new pod of an index carries: those of the
/// failed pod it replaces plus that pod's own failure (upstream's getNewIndexFailureCounts).
fn next_failure_counts(job: &Job, replaced: Option<&Pod>) -> (i32, i32) {
    let Some(p) = replaced else {
        return (0, 0);
    };
    let failed = indexed::count_annotation(p, indexed::INDEX_FAILURE_COUNT);
    let ignored = indexed::count_annotation(p, indexed::INDEX_IGNORED_FAILURE_COUNT);
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    if policy.is_some() && policy::evaluate(policy, p) == policy::Outcome::Ignore {
        (failed, ignored.saturating_add(1))
    } else {
        (failed.saturating_add(1), ignored)
    }
}

/// Upstream's isIndexFailed: a failed pod fails its index when a `FailIndex` rule matches it,
/// or when its failure counts and the index's earlier counted failures exceed the limit.
fn is_index_failed(
    spec: &k8s_openapi::api::batch::v1::JobSpec,
    pod: &Pod,
    limit: i32,
    only_replace_failed: bool,
) -> bool {
    if !is_pod_failed(pod, only_replace_failed) {
        return false;
    }
    let counted = match spec.pod_failure_policy.as_ref() {
        Some(p) => match policy::evaluate(Some(p), pod) {
            policy::Outcome::FailIndex => return true,
            policy::Outcome::Ignore => false,
            _ => true,
        },
        None => true,
    };
    counted && indexed::count_annotation(pod, indexed::INDEX_FAILURE_COUNT) >= limit
}

/// Per index, the failed pod to keep (its finalizer) until the replacement is created: the one
/// with the most failures, the latest finished on a tie (upstream's
/// getPodsWithDelayedDeletionPerIndex). `failed` are the failed pods of pending indexes.
fn delayed_deletions<'a>(failed: impl Iterator<Item = &'a Arc<Pod>>) -> HashMap<i32, Arc<Pod>> {
    let absolute = |p: &Pod| {
        indexed::count_annotation(p, indexed::INDEX_FAILURE_COUNT).saturating_add(
            indexed::count_annotation(p, indexed::INDEX_IGNORED_FAILURE_COUNT),
        )
    };
    let mut out: HashMap<i32, Arc<Pod>> = HashMap::new();
    for p in failed {
        let Some(ix) = indexed::of_pod(p) else {
            continue;
        };
        let replace = match out.get(&ix) {
            Some(last) => {
                absolute(last) <= absolute(p) && policy::finish_time(p) >= policy::finish_time(last)
            }
            None => true,
        };
        if replace {
            out.insert(ix, p.clone());
        }
    }
    out
}

/// Of the pending indexes, those whose per-index backoff has passed, and (when none has) the
/// shortest wait (upstream's getPodCreationInfoForIndependentIndexes): after the index's n-th
/// failure (counted or ignored) the delay is 10 s doubling, from the failed pod's finish.
fn indexes_ready_now(
    pending: &[i32],
    delayed: &HashMap<i32, Arc<Pod>>,
    now: jiff::Timestamp,
) -> (Vec<i32>, Option<Duration>) {
    let mut ready = Vec::new();
    let mut shortest: Option<Duration> = None;
    for ix in pending {
        let left = delayed.get(ix).and_then(|p| {
            let failures = indexed::count_annotation(p, indexed::INDEX_FAILURE_COUNT)
                .saturating_add(indexed::count_annotation(
                    p,
                    indexed::INDEX_IGNORED_FAILURE_COUNT,
                ))
                .saturating_add(1);
            let at = policy::finish_time(p).unwrap_or(now);
            let delay = policy::backoff(u32::try_from(failures).unwrap_or(u32::MAX));
            let until = at
                .checked_add(jiff::SignedDuration::try_from(delay).ok()?)
                .ok()?;
            Duration::try_from(until.duration_since(now))
                .ok()
                .filter(|d| !d.is_zero())
        });
        match left {
            None => ready.push(*ix),
            Some(d) => shortest = Some(shortest.map_or(d, |s| s.min(d))),
        }
    }
    if ready.is_empty() {
        (ready, shortest)
    } else {
        (ready, None)
    }
}

/// The pods a job's template makes: finalizer, and for an Indexed job its index (annotation,
/// label, hostname, `JOB_COMPLETION_INDEX`) and `<job>-<index>-` names; with
/// `backoffLimitPerIndex`, the index's failure counts (`counts`).
fn pod_for(job: &Job, index: Option<i32>, counts: Option<(i32, i32)>) -> Option<Pod> {
    let spec = job.spec.as_ref()?;
    let name = job.name_any();
    let prefix = match index {
        Some(ix) => format!("{name}-{ix}"),
        None => name.clone(),
    };
    let mut pod = pod_from_template(
        &spec.template,
        job.metadata.namespace.as_deref().unwrap_or_default(),
        Some(&prefix),
        Some(new_controller_ref(job)),
    );
    let finalizers = pod.metadata.finalizers.get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == TRACKING_FINALIZER) {
        finalizers.push(TRACKING_FINALIZER.into());
    }
    if let Some(ix) = index {
        let annotations = pod
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(COMPLETION_INDEX.into(), ix.to_string());
        if let Some((failed, ignored)) = counts {
            annotations.insert(indexed::INDEX_FAILURE_COUNT.into(), failed.to_string());
            if ignored > 0 {
                annotations.insert(
                    indexed::INDEX_IGNORED_FAILURE_COUNT.into(),
                    ignored.to_string(),
                );
            }
        }
        pod.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(COMPLETION_INDEX.into(), ix.to_string());
        if let Some(ps) = pod.spec.as_mut() {
            if ps.hostname.as_deref().is_none_or(str::is_empty) {
                ps.hostname = Some(prefix.clone());
            }
            let env = EnvVar {
                name: "JOB_COMPLETION_INDEX".into(),
                value: None,
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: None,
                        // PodIndexLabel (GA in 1.32): the env var reads the label.
                        field_path: format!("metadata.labels['{COMPLETION_INDEX}']"),
                    }),
                    ..Default::default()
                }),
            };
            for c in ps
                .containers
                .iter_mut()
                .chain(ps.init_containers.iter_mut().flatten())
            {
                let vars = c.env.get_or_insert_with(Vec::new);
                if !vars.iter().any(|v| v.name == env.name) {
                    vars.push(env.clone());
                }
            }
        }
    }
    Some(pod)
}

impl Reconciler for JobController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        if let Some(pod_key) = key.strip_prefix(ORPHAN_PREFIX) {
            return self.release_orphan(pod_key).await;
        }
        let Some(job) = self.jobs.get(key) else {
            self.expectations.delete(key);
            return Ok(Action::Done);
        };
        let job = self.written.newest(job);
        let managed_by = job.spec.as_ref().and_then(|s| s.managed_by.as_deref());
        if managed_by.is_some_and(|m| m != MANAGED_BY) {
            return Ok(Action::Done);
        }
        if is_finished(&job) || job.metadata.deletion_timestamp.is_some() {
            let pods = self.pods_of(&job);
            self.strip_finalizers(
                key,
                pods.iter().filter(|p| has_finalizer(p)).cloned().collect(),
            )
            .await?;
            return Ok(Action::Done);
        }
        if !self.expectations.satisfied(key) {
            return Ok(Action::Done);
        }
        self.sync(key, job).await
    }
}

impl JobController {
    fn api(&self, ns: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), ns)
    }

    /// The job's pods in the cache: those it controls, and orphans its selector matches.
    fn pods_of(&self, job: &Job) -> Vec<Arc<Pod>> {
        let ns = job.metadata.namespace.as_deref().unwrap_or_default();
        let selector = job.spec.as_ref().and_then(|s| s.selector.as_ref());
        self.pods
            .list_namespace(ns)
            .into_iter()
            .filter(|p| match controller_ref(&p.metadata) {
                Some(r) => Some(&r.uid) == job.metadata.uid.as_ref(),
                None => selector_matches(selector, p.metadata.labels.as_ref()),
            })
            .collect()
    }

    /// Removes the tracking finalizer from an orphan pod (its job gone, checked live).
    async fn release_orphan(&self, pod_key: &str) -> Result<Action, Error> {
        let Some(pod) = self.pods.get(pod_key) else {
            return Ok(Action::Done);
        };
        if !has_finalizer(&pod) {
            return Ok(Action::Done);
        }
        if let Some(r) = controller_ref(&pod.metadata).filter(|r| r.kind == "Job") {
            let (ns, _) = split_key(pod_key);
            let jobs: Api<Job> = Api::namespaced(self.client.clone(), ns.unwrap_or_default());
            if let Some(live) = jobs.get_opt(&r.name).await?
                && live.metadata.uid.as_deref() == Some(r.uid.as_str())
                && !is_finished(&live)
                && live.metadata.deletion_timestamp.is_none()
            {
                // Its job is alive after all: the job's own sync counts it.
                return Ok(Action::Done);
            }
        }
        self.remove_finalizer(&pod).await?;
        Ok(Action::Done)
    }

    /// A JSON patch removing the finalizer, guarded by a test so a concurrent change fails.
    async fn remove_finalizer(&self, pod: &Pod) -> Result<(), kube::Error> {
        let Some(pos) = pod
            .metadata
            .finalizers
            .iter()
            .flatten()
            .position(|f| f == TRACKING_FINALIZER)
        else {
            return Ok(());
        };
        let patch: json_patch::Patch = match serde_json::from_value(serde_json::json!([
            {"op": "test", "path": "/metadata/uid", "value": pod.metadata.uid},
            {"op": "test", "path": format!("/metadata/finalizers/{pos}"), "value": TRACKING_FINALIZER},
            {"op": "remove", "path": format!("/metadata/finalizers/{pos}")},
        ])) {
            Ok(p) => p,
            Err(_) => return Ok(()),
        };
        let api = self.api(pod.metadata.namespace.as_deref().unwrap_or_default());
        match api
            .patch(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::<()>::Json(patch),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes the finalizer from `pods`, recording the expectation first; returns the UIDs
    /// whose removal succeeded (or whose pod is gone).
    async fn strip_finalizers(
        &self,
        key: &str,
        pods: Vec<Arc<Pod>>,
    ) -> Result<HashSet<String>, Error> {
        let mut done = HashSet::new();
        if pods.is_empty() {
            return Ok(done);
        }
        {
            let mut fin = lock(&self.finalizer_expectations);
            let set = fin.entry(key.to_string()).or_default();
            for p in &pods {
                set.insert(p.metadata.uid.clone().unwrap_or_default());
            }
        }
        let mut first_error = None;
        for p in pods {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            match self.remove_finalizer(&p).await {
                Ok(()) => {
                    done.insert(uid);
                }
                Err(e) => {
                    // Not removed: nothing to wait for.
                    if let Some(set) = lock(&self.finalizer_expectations).get_mut(key) {
                        set.remove(&uid);
                    }
                    if is_conflict(&e) || matches!(&e, kube::Error::Api(s) if s.code == 422) {
                        continue;
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) if done.is_empty() => Err(e.into()),
            _ => Ok(done),
        }
    }

    async fn write_status(&self, job: &Job, status: &JobStatus) -> Result<Job, Error> {
        let mut updated = job.clone();
        updated.status = Some(status.clone());
        let api: Api<Job> = Api::namespaced(
            self.client.clone(),
            job.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let written = api
            .replace_status(&job.name_any(), &PostParams::default(), &updated)
            .await?;
        self.written.mutated(written.clone());
        Ok(written)
    }

    async fn sync(&self, key: &str, job: Arc<Job>) -> Result<Action, Error> {
        let now = jiff::Timestamp::now();
        let Some(spec) = job.spec.clone() else {
            return Ok(Action::Done);
        };
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        let job_ref = object_reference(job.as_ref());
        let owner_ref = new_controller_ref(job.as_ref());
        // Read before the pods: a removal observed in between must not look uncounted.
        let expected_rm = lock(&self.finalizer_expectations)
            .get(key)
            .cloned()
            .unwrap_or_default();
        let candidates = self.pods_of(&job);
        let pods = claim(
            &self.client,
            &job.metadata,
            &owner_ref,
            spec.selector.as_ref(),
            candidates,
        )
        .await?;

        let old_status = job.status.clone().unwrap_or_default();
        let mut status = old_status.clone();
        let indexed = spec.completion_mode.as_deref() == Some("Indexed");
        let completions = spec.completions;
        let completions_n = completions.unwrap_or(0);
        let parallelism = spec.parallelism.unwrap_or(1).max(0);
        let backoff_limit = spec.backoff_limit.unwrap_or(6);
        let suspended = spec.suspend == Some(true);
        let only_replace_failed = spec.pod_replacement_policy.as_deref() == Some("Failed")
            || spec.pod_failure_policy.is_some();
        let mut conditions = status.conditions.take().unwrap_or_default();

        if status.start_time.is_none() && !suspended {
            status.start_time = Some(Time(now));
        }

        // Tracking: newly finished pods go to uncountedTerminatedPods first.
        let uncounted = status.uncounted_terminated_pods.take().unwrap_or_default();
        let mut unc_succ: BTreeSet<String> = uncounted
            .succeeded
            .unwrap_or_default()
            .into_iter()
            .collect();
        let mut unc_fail: BTreeSet<String> =
            uncounted.failed.unwrap_or_default().into_iter().collect();
        let mut succeeded_ix = indexed::parse(status.completed_indexes.as_deref(), completions_n);
        let mut succeeded = status.succeeded.unwrap_or(0);
        let mut failed = status.failed.unwrap_or(0);
        let by_uid: HashMap<String, &Arc<Pod>> = pods
            .iter()
            .map(|p| (p.metadata.uid.clone().unwrap_or_default(), p))
            .collect();
        // Uncounted pods whose finalizer is already gone are counted now.
        let gone = |uid: &String| {
            !expected_rm.contains(uid) && by_uid.get(uid).is_none_or(|p| !has_finalizer(p))
        };
        let moved_succ: Vec<String> = unc_succ.iter().filter(|u| gone(u)).cloned().collect();
        let moved_fail: Vec<String> = unc_fail.iter().filter(|u| gone(u)).cloned().collect();
        for u in &moved_succ {
            unc_succ.remove(u);
            succeeded += 1;
        }
        for u in &moved_fail {
            unc_fail.remove(u);
            failed += 1;
        }

        let mut interim = condition_true(&status_with(&conditions), "FailureTarget")
            .map(|c| {
                (
                    "FailureTarget",
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            })
            .or_else(|| {
                condition_true(&status_with(&conditions), "SuccessCriteriaMet").map(|c| {
                    (
                        "SuccessCriteriaMet",
                        c.reason.clone().unwrap_or_default(),
                        c.message.clone().unwrap_or_default(),
                    )
                })
            });
        let finishing = interim.is_some();
        // backoffLimitPerIndex: the failed indexes, and per pending index the failed pod whose
        // finalizer stays until its replacement (carrying the failure counts) exists.
        let per_index_limit = spec.backoff_limit_per_index.filter(|_| indexed);
        let (failed_ix, delayed) = match per_index_limit {
            Some(limit) => {
                let valid = |p: &Pod| indexed::of_pod(p).filter(|i| *i < completions_n);
                let mut failed_ix = indexed::parse(status.failed_indexes.as_deref(), completions_n);
                let mut done = succeeded_ix.clone();
                for p in pods.iter().filter(|p| has_finalizer(p)) {
                    let Some(ix) = valid(p) else { continue };
                    if pod_phase(p) == "Succeeded" {
                        done.insert(ix);
                    }
                    if is_index_failed(&spec, p, limit, only_replace_failed) {
                        failed_ix.insert(ix);
                    }
                }
                let active_ix: BTreeSet<i32> = pods
                    .iter()
                    .filter(|p| is_pod_active(p))
                    .filter_map(|p| indexed::of_pod(p))
                    .collect();
                let delayed = delayed_deletions(pods.iter().filter(|p| {
                    has_finalizer(p)
                        && !expected_rm.contains(p.metadata.uid.as_deref().unwrap_or_default())
                        && is_pod_failed(p, only_replace_failed)
                        && valid(p).is_some_and(|ix| {
                            !done.contains(&ix)
                                && !failed_ix.contains(&ix)
                                && !active_ix.contains(&ix)
                        })
                }));
                (failed_ix, delayed)
            }
            None => (BTreeSet::new(), HashMap::new()),
        };
        let mut delayed_failures = 0;
        let mut to_strip: Vec<Arc<Pod>> = Vec::new();
        let mut new_failures: Vec<Option<jiff::Timestamp>> = Vec::new();
        let mut new_success = false;
        for pod in &pods {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            if !has_finalizer(pod) || expected_rm.contains(&uid) {
                continue;
            }
            let phase = pod_phase(pod);
            let considered_failed = is_pod_failed(pod, only_replace_failed);
            if !(matches!(phase, "Succeeded" | "Failed") || considered_failed || finishing) {
                continue;
            }
            let ix = indexed::of_pod(pod);
            if !finishing
                && phase != "Succeeded"
                && ix
                    .and_then(|i| delayed.get(&i))
                    .is_some_and(|d| d.metadata.uid == pod.metadata.uid)
            {
                // Counted once its replacement exists (upstream's canRemoveFinalizer); until
                // then it still counts towards backoffLimit.
                if policy::evaluate(spec.pod_failure_policy.as_ref(), pod)
                    != policy::Outcome::Ignore
                {
                    delayed_failures += 1;
                }
                continue;
            }
            to_strip.push(pod.clone());
            if phase == "Succeeded" && !unc_fail.contains(&uid) {
                if indexed {
                    if let Some(ix) = ix.filter(|i| *i < completions_n)
                        && succeeded_ix.insert(ix)
                    {
                        new_success = true;
                    }
                } else if unc_succ.insert(uid) {
                    new_success = true;
                }
            } else if (considered_failed || (finishing && !unc_succ.contains(&uid)))
                && !unc_fail.contains(&uid)
                && (!indexed || ix.is_some_and(|i| i < completions_n))
            {
                let outcome = if phase == "Failed" {
                    policy::evaluate(spec.pod_failure_policy.as_ref(), pod)
                } else {
                    policy::Outcome::Count
                };
                match outcome {
                    policy::Outcome::Ignore => continue,
                    policy::Outcome::FailJob(message) if interim.is_none() => {
                        interim = Some(("FailureTarget", "PodFailurePolicy".into(), message));
                    }
                    _ => {}
                }
                unc_fail.insert(uid);
                new_failures.push(policy::finish_time(pod));
            }
        }
        // Backoff: consecutive failures since the last success.
        let record = {
            let mut backoff = lock(&self.backoff);
            let r = backoff.entry(key.to_string()).or_default();
            if new_success {
                r.failures = 0;
            }
            for at in &new_failures {
                r.failures = r.failures.saturating_add(1);
                let at = at.unwrap_or(now);
                r.last_failure = Some(r.last_failure.map_or(at, |l| l.max(at)));
            }
            *r
        };

        let total_failed =
            failed + i32::try_from(unc_fail.len()).unwrap_or(i32::MAX) + delayed_failures;
        let total_succeeded = if indexed {
            i32::try_from(succeeded_ix.len()).unwrap_or(i32::MAX)
        } else {
            succeeded + i32::try_from(unc_succ.len()).unwrap_or(i32::MAX)
        };
        let active_pods: Vec<Arc<Pod>> =
            pods.iter().filter(|p| is_pod_active(p)).cloned().collect();
        let terminating =
            i32::try_from(pods.iter().filter(|p| is_terminating(p)).count()).unwrap_or(0);
        let mut requeue: Option<Duration> = None;

        // Failure: backoffLimit (or OnFailure restarts), then the deadline.
        if interim.is_none() {
            let restarts: i32 = if spec
                .template
                .spec
                .as_ref()
                .and_then(|s| s.restart_policy.as_deref())
                == Some("OnFailure")
            {
                active_pods
                    .iter()
                    .filter_map(|p| p.status.as_ref())
                    .flat_map(|s| {
                        s.container_statuses
                            .iter()
                            .flatten()
                            .chain(s.init_container_statuses.iter().flatten())
                    })
                    .map(|c| c.restart_count)
                    .sum()
            } else {
                0
            };
            let past_restarts = restarts > 0 && (backoff_limit == 0 || restarts >= backoff_limit);
            let deadline_left = match (spec.active_deadline_seconds, &status.start_time) {
                (Some(secs), Some(start)) if !suspended => {
                    let end = start
                        .0
                        .checked_add(jiff::SignedDuration::from_secs(secs))
                        .unwrap_or(start.0);
                    Some(end.duration_since(now))
                }
                _ => None,
            };
            if total_failed > backoff_limit || past_restarts {
                interim = Some((
                    "FailureTarget",
                    "BackoffLimitExceeded".into(),
                    "Job has reached the specified backoff limit".into(),
                ));
            } else if deadline_left.is_some_and(|l| !l.is_positive()) {
                interim = Some((
                    "FailureTarget",
                    "DeadlineExceeded".into(),
                    "Job was active longer than specified deadline".into(),
                ));
            } else if let Some(l) = deadline_left {
                requeue = Duration::try_from(l).ok();
            }
        }
        if interim.is_none() && per_index_limit.is_some() {
            let n_failed = i32::try_from(failed_ix.len()).unwrap_or(i32::MAX);
            if spec.max_failed_indexes.is_some_and(|max| n_failed > max) {
                interim = Some((
                    "FailureTarget",
                    "MaxFailedIndexesExceeded".into(),
                    "Job has exceeded the specified maximal number of failed indexes".into(),
                ));
            } else if n_failed > 0 && n_failed.saturating_add(total_succeeded) >= completions_n {
                interim = Some((
                    "FailureTarget",
                    "FailedIndexes".into(),
                    "Job has failed indexes".into(),
                ));
            }
        }

        let mut active = i32::try_from(active_pods.len()).unwrap_or(i32::MAX);
        if interim.is_some() {
            // The job has failed or met its success criteria: nothing more runs.
            active -= self.delete_pods(key, &job, &job_ref, &active_pods).await;
        } else if suspended {
            active -= self.delete_pods(key, &job, &job_ref, &active_pods).await;
            if ensure_condition(
                &mut conditions,
                "Suspended",
                "True",
                "JobSuspended",
                "Job suspended",
                now,
            ) {
                self.recorder
                    .event(&job_ref, "Normal", "Suspended", "Job suspended");
            }
        } else {
            if ensure_condition(
                &mut conditions,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                now,
            ) {
                self.recorder
                    .event(&job_ref, "Normal", "Resumed", "Job resumed");
                status.start_time = Some(Time(now));
            }
            let want = if completions.is_none() {
                if total_succeeded > 0 {
                    active
                } else {
                    parallelism
                }
            } else {
                (completions_n - total_succeeded).clamp(0, parallelism)
            };
            // Indexed: pods whose index is invalid, done, or duplicated go first.
            let mut extra: Vec<Arc<Pod>> = Vec::new();
            let mut keep: Vec<Arc<Pod>> = Vec::new();
            if indexed {
                let mut seen = BTreeSet::new();
                for p in &active_pods {
                    match indexed::of_pod(p) {
                        Some(ix)
                            if ix < completions_n
                                && !succeeded_ix.contains(&ix)
                                && seen.insert(ix) =>
                        {
                            keep.push(p.clone())
                        }
                        _ => extra.push(p.clone()),
                    }
                }
            } else {
                keep = active_pods.clone();
            }
            let kept = i32::try_from(keep.len()).unwrap_or(i32::MAX);
            if kept > want {
                keep.sort_by_key(|p| deletion_rank(p));
                let n = usize::try_from(kept - want).unwrap_or(0);
                extra.extend(keep.iter().take(n).cloned());
            }
            if !extra.is_empty() {
                extra.truncate(MAX_CREATE_DELETE_PER_SYNC);
                active -= self.delete_pods(key, &job, &job_ref, &extra).await;
            } else {
                let occupied = active + if only_replace_failed { terminating } else { 0 };
                if occupied < want {
                    // Without backoffLimitPerIndex one backoff for the whole job; with it, each
                    // index waits after its own failures (below).
                    let wait = record
                        .last_failure
                        .filter(|_| per_index_limit.is_none())
                        .map(|at| {
                            let until = at
                                .checked_add(
                                    jiff::SignedDuration::try_from(policy::backoff(
                                        record.failures,
                                    ))
                                    .unwrap_or_default(),
                                )
                                .unwrap_or(at);
                            until.duration_since(now)
                        })
                        .filter(|l| l.is_positive());
                    if let Some(left) = wait {
                        let left = Duration::try_from(left).unwrap_or(Duration::from_secs(1));
                        requeue = Some(requeue.map_or(left, |r| r.min(left)));
                    } else {
                        let diff = usize::try_from(want - occupied)
                            .unwrap_or(0)
                            .min(MAX_CREATE_DELETE_PER_SYNC);
                        let mut counts = HashMap::new();
                        let indexes: Vec<Option<i32>> = if indexed {
                            let mut taken = succeeded_ix.clone();
                            taken.extend(failed_ix.iter().copied());
                            for p in pods.iter().filter(|p| {
                                is_pod_active(p) || (only_replace_failed && is_terminating(p))
                            }) {
                                if let Some(ix) = indexed::of_pod(p) {
                                    taken.insert(ix);
                                }
                            }
                            let mut pending = indexed::first_pending(&taken, diff, completions_n);
                            if per_index_limit.is_some() {
                                let (ready, left) = indexes_ready_now(&pending, &delayed, now);
                                if let Some(left) = left {
                                    requeue = Some(requeue.map_or(left, |r| r.min(left)));
                                }
                                pending = ready;
                                for ix in &pending {
                                    counts.insert(
                                        *ix,
                                        next_failure_counts(
                                            &job,
                                            delayed.get(ix).map(AsRef::as_ref),
                                        ),
                                    );
                                }
                            }
                            pending.into_iter().map(Some).collect()
                        } else {
                            vec![None; diff]
                        };
                        active += self
                            .create_pods(key, &job, &job_ref, &ns, indexes, &counts)
                            .await?;
                    }
                }
            }
            // Success: completions reached (or, without completions, one success and nothing
            // running), or the success policy.
            let complete = match completions {
                None => total_succeeded > 0 && active == 0,
                Some(c) => total_succeeded >= c && active == 0,
            };
            if indexed && let Some(message) = success_policy_met(&job, &succeeded_ix, completions_n)
            {
                interim = Some(("SuccessCriteriaMet", "SuccessPolicy".into(), message));
                active -= self.delete_pods(key, &job, &job_ref, &active_pods).await;
            } else if complete {
                interim = Some((
                    "SuccessCriteriaMet",
                    "CompletionsReached".into(),
                    "Reached expected number of succeeded pods".into(),
                ));
            }
        }
        if let Some((type_, reason, message)) = &interim {
            ensure_condition(&mut conditions, type_, "True", reason, message, now);
        }

        // First write: the uncounted pods (and interim condition) before any finalizer goes.
        let ready = i32::try_from(
            active_pods
                .iter()
                .filter(|p| is_pod_ready(p) && p.metadata.deletion_timestamp.is_none())
                .count(),
        )
        .unwrap_or(0);
        status.active = (active > 0).then_some(active);
        status.ready = Some(ready);
        status.terminating = Some(terminating);
        status.succeeded = (succeeded > 0).then_some(succeeded);
        status.failed = (failed > 0).then_some(failed);
        if indexed {
            let text = indexed::format(&succeeded_ix);
            status.completed_indexes = (!text.is_empty()).then_some(text);
            if per_index_limit.is_some() {
                // Present (possibly empty) whenever backoffLimitPerIndex is set, as upstream.
                status.failed_indexes = Some(indexed::format(&failed_ix));
            }
            status.succeeded = (total_succeeded > 0).then_some(total_succeeded);
        }
        status.uncounted_terminated_pods = Some(uncounted_of(&unc_succ, &unc_fail));
        status.conditions = (!conditions.is_empty()).then_some(conditions);
        let mut current = job.as_ref().clone();
        if !same(&status, &old_status) {
            current = self.write_status(&current, &status).await?;
        }

        // Finalizers go; the pods whose finalizer went are counted.
        let stripped = self.strip_finalizers(key, to_strip.clone()).await?;
        let mut changed = false;
        for uid in &stripped {
            if unc_succ.remove(uid) {
                if !indexed {
                    succeeded += 1;
                }
                changed = true;
            } else if unc_fail.remove(uid) {
                failed += 1;
                changed = true;
            }
        }
        let all_stripped = to_strip
            .iter()
            .all(|p| stripped.contains(p.metadata.uid.as_deref().unwrap_or_default()));
        let remaining_with_finalizer = pods.iter().any(|p| {
            has_finalizer(p) && !stripped.contains(p.metadata.uid.as_deref().unwrap_or_default())
        });
        let mut conditions = status.conditions.take().unwrap_or_default();
        if let Some((type_, reason, message)) = &interim
            && all_stripped
            && unc_succ.is_empty()
            && unc_fail.is_empty()
            && active == 0
            && terminating == 0
            && !remaining_with_finalizer
        {
            let (terminal, event_type, event_reason, event_message) = if *type_ == "FailureTarget" {
                ("Failed", "Warning", reason.clone(), message.clone())
            } else {
                (
                    "Complete",
                    "Normal",
                    "Completed".to_string(),
                    "Job completed".to_string(),
                )
            };
            conditions.push(new_condition(terminal, "True", reason, message, now));
            if terminal == "Complete" {
                status.completion_time = Some(Time(now));
            }
            self.recorder
                .event(&job_ref, event_type, &event_reason, &event_message);
            changed = true;
        }
        status.conditions = (!conditions.is_empty()).then_some(conditions);
        if changed {
            status.succeeded = if indexed {
                status.succeeded
            } else {
                (succeeded > 0).then_some(succeeded)
            };
            status.failed = (failed > 0).then_some(failed);
            status.uncounted_terminated_pods = Some(uncounted_of(&unc_succ, &unc_fail));
            self.write_status(&current, &status).await?;
        }
        if !all_stripped {
            return Err(Error::Other(
                "some tracking finalizers were not removed".into(),
            ));
        }
        Ok(requeue.map_or(Action::Done, Action::RequeueAfter))
    }

    /// Deletes pods (keeping their finalizers: they are counted once they terminate);
    /// returns how many deletions were issued.
    async fn delete_pods(
        &self,
        key: &str,
        job: &Job,
        job_ref: &k8s_openapi::api::core::v1::ObjectReference,
        pods: &[Arc<Pod>],
    ) -> i32 {
        if pods.is_empty() {
            return 0;
        }
        let _ = job;
        self.expectations
            .expect_deletions(key, i64::try_from(pods.len()).unwrap_or(i64::MAX));
        let mut deleted = 0;
        for p in pods {
            let api = self.api(p.metadata.namespace.as_deref().unwrap_or_default());
            match api.delete(&p.name_any(), &DeleteParams::default()).await {
                Ok(_) => {
                    deleted += 1;
                    self.recorder.event(
                        job_ref,
                        "Normal",
                        "SuccessfulDelete",
                        &format!("Deleted pod: {}", p.name_any()),
                    );
                }
                Err(e) => {
                    self.expectations.deletion_observed(key);
                    if !is_not_found(&e) {
                        self.recorder.event(
                            job_ref,
                            "Warning",
                            "FailedDelete",
                            &format!("Error deleting: {e}"),
                        );
                    }
                }
            }
        }
        deleted
    }

    /// Creates one pod per entry (its completion index for Indexed jobs) in slow-start
    /// batches; returns how many were created.
    async fn create_pods(
        &self,
        key: &str,
        job: &Job,
        job_ref: &k8s_openapi::api::core::v1::ObjectReference,
        ns: &str,
        indexes: Vec<Option<i32>>,
        counts: &HashMap<i32, (i32, i32)>,
    ) -> Result<i32, Error> {
        if indexes.is_empty() {
            return Ok(0);
        }
        self.expectations
            .expect_creations(key, i64::try_from(indexes.len()).unwrap_or(i64::MAX));
        let api = self.api(ns);
        let mut created = 0;
        let mut batch = 1usize;
        let mut rest = indexes.as_slice();
        let mut failure = None;
        while !rest.is_empty() {
            let (now, later) = rest.split_at(batch.min(rest.len()));
            rest = later;
            let results = futures::future::join_all(now.iter().map(|ix| {
                let api = api.clone();
                let pod = pod_for(job, *ix, ix.and_then(|i| counts.get(&i).copied()));
                async move {
                    match pod {
                        Some(pod) => api.create(&PostParams::default(), &pod).await.map(Some),
                        None => Ok(None),
                    }
                }
            }))
            .await;
            for r in results {
                match r {
                    Ok(Some(pod)) => {
                        created += 1;
                        self.recorder.event(
                            job_ref,
                            "Normal",
                            "SuccessfulCreate",
                            &format!("Created pod: {}", pod.name_any()),
                        );
                    }
                    Ok(None) => self.expectations.creation_observed(key),
                    Err(e) => {
                        self.expectations.creation_observed(key);
                        self.recorder.event(
                            job_ref,
                            "Warning",
                            "FailedCreate",
                            &format!("Error creating: {e}"),
                        );
                        failure.get_or_insert(e);
                    }
                }
            }
            if failure.is_some() {
                // Skip the rest, and lower the expectations they raised.
                for _ in rest {
                    self.expectations.creation_observed(key);
                }
                break;
            }
            batch *= 2;
        }
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(created),
        }
    }
}

fn status_with(conditions: &[JobCondition]) -> JobStatus {
    JobStatus {
        conditions: Some(conditions.to_vec()),
        ..Default::default()
    }
}

fn uncounted_of(succ: &BTreeSet<String>, fail: &BTreeSet<String>) -> UncountedTerminatedPods {
    UncountedTerminatedPods {
        succeeded: (!succ.is_empty()).then(|| succ.iter().cloned().collect()),
        failed: (!fail.is_empty()).then(|| fail.iter().cloned().collect()),
    }
}

fn same(a: &JobStatus, b: &JobStatus) -> bool {
    serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(json: serde_json::Value) -> Job {
        serde_json::from_value(json).expect("job")
    }

    #[test]
    fn indexed_pods_carry_their_index() {
        let j = job(serde_json::json!({
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u"},
            "spec": {
                "completionMode": "Indexed", "completions": 3,
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
            }
        }));
        let pod = pod_for(&j, Some(2), None).expect("pod");
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("pi-2-"));
        assert_eq!(
            pod.annotations().get(COMPLETION_INDEX).map(String::as_str),
            Some("2")
        );
        assert_eq!(
            pod.labels().get(COMPLETION_INDEX).map(String::as_str),
            Some("2")
        );
        let spec = pod.spec.expect("spec");
        assert_eq!(spec.hostname.as_deref(), Some("pi-2"));
        let env = spec.containers[0].env.as_ref().expect("env");
        assert_eq!(env[0].name, "JOB_COMPLETION_INDEX");
        assert_eq!(
            pod.metadata.finalizers,
            Some(vec![TRACKING_FINALIZER.to_string()])
        );
        let plain = pod_for(&j, None, None).expect("pod");
        assert_eq!(plain.metadata.generate_name.as_deref(), Some("pi-"));
        assert!(plain.annotations().get(COMPLETION_INDEX).is_none());
    }

    #[test]
    fn failed_pods_as_upstream_counts_them() {
        let pod = |phase: &str, deleting: bool| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "deletionTimestamp": if deleting { Some("2026-01-01T00:00:00Z") } else { None }},
                "status": {"phase": phase}
            }))
            .expect("pod")
        };
        assert!(is_pod_failed(&pod("Failed", false), false));
        assert!(is_pod_failed(&pod("Running", true), false));
        assert!(
            !is_pod_failed(&pod("Running", true), true),
            "podReplacementPolicy Failed waits"
        );
        assert!(!is_pod_failed(&pod("Succeeded", true), false));
        assert!(!is_pod_failed(&pod("Running", false), false));
    }

    #[test]
    fn success_policy_rules() {
        let j = job(serde_json::json!({
            "metadata": {"name": "pi"},
            "spec": {
                "completionMode": "Indexed", "completions": 5,
                "successPolicy": {"rules": [{"succeededIndexes": "0,1"}, {"succeededCount": 3}]},
                "template": {"spec": {"containers": []}}
            }
        }));
        let s = |v: &[i32]| v.iter().copied().collect::<BTreeSet<i32>>();
        assert_eq!(success_policy_met(&j, &s(&[0]), 5), None);
        assert_eq!(
            success_policy_met(&j, &s(&[0, 1]), 5).as_deref(),
            Some("Matched rules at index 0")
        );
        assert_eq!(
            success_policy_met(&j, &s(&[2, 3, 4]), 5).as_deref(),
            Some("Matched rules at index 1")
        );
    }

    /// A pod of an Indexed job: index, phase, failure-count annotations, finish time.
    fn ix_pod(
        uid: &str,
        ix: i32,
        phase: &str,
        counts: Option<(i32, i32)>,
        finished: &str,
    ) -> Arc<Pod> {
        let mut ann = serde_json::json!({ COMPLETION_INDEX: ix.to_string() });
        if let Some((f, i)) = counts {
            ann[indexed::INDEX_FAILURE_COUNT] = f.to_string().into();
            ann[indexed::INDEX_IGNORED_FAILURE_COUNT] = i.to_string().into();
        }
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": uid, "namespace": "ns", "uid": uid, "annotations": ann,
                    "finalizers": [TRACKING_FINALIZER]},
                "status": {"phase": phase, "containerStatuses": [{
                    "name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": if phase == "Failed" { 1 } else { 0 },
                        "finishedAt": finished}}
                }]}
            }))
            .expect("pod"),
        )
    }

    fn per_index_job(limit: i32, rules: serde_json::Value) -> Job {
        job(serde_json::json!({
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u"},
            "spec": {
                "completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": limit,
                "podFailurePolicy": if rules.is_null() { serde_json::Value::Null } else { serde_json::json!({"rules": rules}) },
                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}
            }
        }))
    }

    #[test]
    fn index_fails_once_its_failures_exceed_the_limit() {
        // upstream TestSyncJobWithJobBackoffLimitPerIndex: with backoffLimitPerIndex=1 the
        // first failure (count 0) is retried, the second (count 1) fails the index.
        let j = per_index_job(1, serde_json::Value::Null);
        let spec = j.spec.as_ref().expect("spec");
        let t = "2026-01-01T00:00:00Z";
        assert!(!is_index_failed(
            spec,
            &ix_pod("a", 0, "Failed", Some((0, 0)), t),
            1,
            false
        ));
        assert!(is_index_failed(
            spec,
            &ix_pod("b", 0, "Failed", Some((1, 0)), t),
            1,
            false
        ));
        // No annotation counts as 0; a running pod never fails its index.
        assert!(!is_index_failed(
            spec,
            &ix_pod("c", 0, "Failed", None, t),
            1,
            false
        ));
        assert!(!is_index_failed(
            spec,
            &ix_pod("d", 0, "Running", Some((5, 0)), t),
            1,
            false
        ));
        // backoffLimitPerIndex=0: the first failure fails the index.
        assert!(is_index_failed(
            spec,
            &ix_pod("e", 0, "Failed", Some((0, 0)), t),
            0,
            false
        ));
    }

    #[test]
    fn fail_index_and_ignore_rules() {
        let t = "2026-01-01T00:00:00Z";
        let fail_index = per_index_job(
            5,
            serde_json::json!([{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]),
        );
        let spec = fail_index.spec.as_ref().expect("spec");
        assert!(is_index_failed(
            spec,
            &ix_pod("a", 0, "Failed", Some((0, 0)), t),
            5,
            true
        ));
        let ignore = per_index_job(
            0,
            serde_json::json!([{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}]),
        );
        let spec = ignore.spec.as_ref().expect("spec");
        // An ignored failure never fails the index, whatever the counts.
        assert!(!is_index_failed(
            spec,
            &ix_pod("b", 0, "Failed", Some((3, 0)), t),
            0,
            true
        ));
        // ... and the replacement counts it as ignored.
        let failed = ix_pod("c", 0, "Failed", Some((0, 2)), t);
        assert_eq!(next_failure_counts(&ignore, Some(&failed)), (0, 3));
        let plain = per_index_job(2, serde_json::Value::Null);
        assert_eq!(next_failure_counts(&plain, Some(&failed)), (1, 2));
        assert_eq!(next_failure_counts(&plain, None), (0, 0));
        let pod = pod_for(&plain, Some(1), Some((1, 0))).expect("pod");
        let ann = pod.annotations();
        assert_eq!(
            ann.get(indexed::INDEX_FAILURE_COUNT).map(String::as_str),
            Some("1")
        );
        assert!(!ann.contains_key(indexed::INDEX_IGNORED_FAILURE_COUNT));
        let pod = pod_for(&plain, Some(1), Some((0, 2))).expect("pod");
        assert_eq!(
            pod.annotations()
                .get(indexed::INDEX_IGNORED_FAILURE_COUNT)
                .map(String::as_str),
            Some("2")
        );
    }

    #[test]
    fn the_latest_failed_pod_of_an_index_waits_for_its_replacement() {
        let a = ix_pod("a", 0, "Failed", Some((0, 0)), "2026-01-01T00:00:00Z");
        let b = ix_pod("b", 0, "Failed", Some((1, 0)), "2026-01-01T00:00:10Z");
        let c = ix_pod("c", 2, "Failed", Some((0, 1)), "2026-01-01T00:00:05Z");
        let d = ix_pod("d", 2, "Failed", Some((1, 0)), "2026-01-01T00:00:01Z");
        let pods = [a.clone(), b.clone(), c.clone(), d.clone()];
        let delayed = delayed_deletions(pods.iter());
        assert_eq!(delayed.len(), 2);
        assert_eq!(delayed[&0].metadata.uid.as_deref(), Some("b"));
        // Same absolute count, but d finished earlier: c stays.
        assert_eq!(delayed[&2].metadata.uid.as_deref(), Some("c"));
        let reversed = [b, a];
        assert_eq!(
            delayed_deletions(reversed.iter())[&0]
                .metadata
                .uid
                .as_deref(),
            Some("b")
        );
    }

    #[test]
    fn per_index_backoff_delays_only_the_failing_index() {
        let finished: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("ts");
        // Index 0's pod failed once before (count 1): its replacement waits 20 s.
        let failed = ix_pod("a", 0, "Failed", Some((1, 0)), "2026-01-01T00:00:00Z");
        let delayed: HashMap<i32, Arc<Pod>> = [(0, failed)].into_iter().collect();
        let at = |secs: i64| {
            finished
                .checked_add(jiff::SignedDuration::from_secs(secs))
                .expect("ts")
        };
        assert_eq!(
            indexes_ready_now(&[0, 1], &delayed, at(5)),
            (vec![1], None),
            "index 1 has no failure: created now"
        );
        assert_eq!(
            indexes_ready_now(&[0], &delayed, at(5)),
            (vec![], Some(Duration::from_secs(15)))
        );
        assert_eq!(indexes_ready_now(&[0], &delayed, at(20)), (vec![0], None));
    }

    #[test]
    fn conditions_only_appear_when_true() {
        let now = jiff::Timestamp::now();
        let mut c = Vec::new();
        assert!(!ensure_condition(
            &mut c,
            "Suspended",
            "False",
            "JobResumed",
            "Job resumed",
            now
        ));
        assert!(c.is_empty());
        assert!(ensure_condition(
            &mut c,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            now
        ));
        assert!(!ensure_condition(
            &mut c,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            now
        ));
        assert!(ensure_condition(
            &mut c,
            "Suspended",
            "False",
            "JobResumed",
            "Job resumed",
            now
        ));
        assert_eq!(c[0].status, "False");
    }
}
