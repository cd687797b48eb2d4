//! The disruption controller (upstream `pkg/controller/disruption`): keeps each
//! PodDisruptionBudget's status current: `expectedPods` (the pods' controllers' scale for
//! `maxUnavailable` and percentage `minAvailable`, else the matching pods), `desiredHealthy`,
//! `currentHealthy` (ready pods not being deleted nor recently evicted), `disruptionsAllowed`,
//! the `DisruptionAllowed` condition, and `disruptedPods` entries dropped once their pod is
//! deleted or two minutes have passed (a `NotDeleted` event on a pod that outlived its entry).
//! It also resets a stale `DisruptionTarget=True` pod condition (set by an eviction whose pod
//! was never deleted) to False after two minutes, as upstream's syncStalePodDisruption.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler};
use crate::controllers::controller_utils::{controller_ref, is_pod_ready};
use crate::controllers::selector_matches;
use crate::events::{EventRecorder, object_reference};
use crate::informer::{Delta, Store, key_of, split_key};

/// Upstream's DeletionTimeout: how long an evicted pod may take to be deleted.
const DELETION_TIMEOUT: Duration = Duration::from_secs(2 * 60);
/// Upstream's DefaultStalePodDisruptionTimeout: how long a `DisruptionTarget=True` condition
/// may stay on a pod that is not being deleted.
const STALE_POD_DISRUPTION_TIMEOUT: Duration = Duration::from_secs(2 * 60);
/// Queue keys of pods whose stale `DisruptionTarget` condition is due to be reset.
const STALE_PREFIX: &str = "stale-pod:";

struct Disruption {
    client: Client,
    pdbs: Arc<Store<PodDisruptionBudget>>,
    pods: Arc<Store<Pod>>,
    replicasets: Arc<Store<ReplicaSet>>,
    deployments: Arc<Store<Deployment>>,
    statefulsets: Arc<Store<StatefulSet>>,
    rcs: Arc<Store<ReplicationController>>,
    recorder: EventRecorder,
}

pub fn start(ctx: ControllerContext) {
    let pdbs = ctx.factory.informer::<PodDisruptionBudget>();
    let pods = ctx.factory.informer::<Pod>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        pdbs.add_handler(move |d: &Delta<PodDisruptionBudget>| {
            queue.add(key_of(d.object().as_ref()));
        });
    }
    {
        let (queue, store) = (queue.clone(), pdbs.store());
        pods.add_handler(move |d: &Delta<Pod>| {
            let mut objs = vec![d.object().clone()];
            if let Delta::Updated { old, .. } = d {
                objs.push(old.clone());
            }
            if !matches!(d, Delta::Deleted(_))
                && let Some(wait) = stale_disruption_wait(d.object(), jiff::Timestamp::now())
            {
                queue.add_after(
                    format!("{STALE_PREFIX}{}", key_of(d.object().as_ref())),
                    wait,
                );
            }
            for pod in objs {
                let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
                for pdb in store.list_namespace(ns) {
                    if pdb_selects(&pdb, &pod) {
                        queue.add(key_of(pdb.as_ref()));
                    }
                }
            }
        });
    }
    let reconciler = Arc::new(Disruption {
        client: ctx.client.clone(),
        pdbs: pdbs.store(),
        pods: pods.store(),
        replicasets: ctx.factory.informer::<ReplicaSet>().store(),
        deployments: ctx.factory.informer::<Deployment>().store(),
        statefulsets: ctx.factory.informer::<StatefulSet>().store(),
        rcs: ctx.factory.informer::<ReplicationController>().store(),
        recorder: ctx.recorder.clone(),
    });
    let workers = ctx.workers("disruption", 1);
    ctx.run_workers(reconciler, queue, workers);
}

/// Whether the budget's selector picks the pod (a missing selector picks none; `{}` all).
fn pdb_selects(pdb: &PodDisruptionBudget, pod: &Pod) -> bool {
    let selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
    selector_matches(selector, pod.metadata.labels.as_ref())
}

/// Upstream's GetScaledValueFromIntOrPercent.
pub fn scaled_value(v: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match v {
        IntOrString::Int(i) => Ok(*i),
        IntOrString::String(s) => {
            let Some(p) = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) else {
                return Err(format!(
                    "invalid value for IntOrString: invalid value {s:?}"
                ));
            };
            let product = p * i64::from(total);
            let value = if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            };
            i32::try_from(value).map_err(|e| e.to_string())
        }
    }
}

/// `(expectedCount, desiredHealthy)` from the spec, the matching pods' count and (when asked
/// for) the controllers' total scale.
pub fn expected_and_desired(
    min_available: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    pod_count: i32,
    scale: impl FnOnce() -> Result<i32, String>,
) -> Result<(i32, i32), String> {
    if let Some(max) = max_unavailable {
        let expected = scale()?;
        let max = scaled_value(max, expected, true)?;
        return Ok((expected, (expected - max).max(0)));
    }
    match min_available {
        Some(IntOrString::Int(i)) => Ok((pod_count, *i)),
        Some(v) => {
            let expected = scale()?;
            Ok((expected, scaled_value(v, expected, true)?))
        }
        None => Ok((pod_count, 0)),
    }
}

/// Upstream's disruptionsAllowed arithmetic.
pub fn disruptions_allowed(current_healthy: i32, desired_healthy: i32, expected: i32) -> i32 {
    let allowed = current_healthy - desired_healthy;
    if expected <= 0 || allowed <= 0 {
        0
    } else {
        allowed
    }
}

impl Disruption {
    /// The scale of the workload controlling a pod through its controller reference chain:
    /// `(uid of the scaled controller, replicas)`.
    fn controller_scale(&self, ns: &str, r: &OwnerReference) -> Option<(String, i32)> {
        let group = r.api_version.split('/').next().unwrap_or_default();
        match (group, r.kind.as_str()) {
            ("apps", "ReplicaSet") => {
                let rs = self.replicasets.get_named(Some(ns), &r.name)?;
                if rs.metadata.uid.as_deref() != Some(r.uid.as_str()) {
                    return None;
                }
                if let Some(dr) = controller_ref(&rs.metadata).filter(|d| d.kind == "Deployment")
                    && let Some(d) = self.deployments.get_named(Some(ns), &dr.name)
                    && d.metadata.uid.as_deref() == Some(dr.uid.as_str())
                {
                    let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                    return Some((dr.uid.clone(), replicas));
                }
                Some((
                    r.uid.clone(),
                    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
                ))
            }
            ("apps", "StatefulSet") => {
                let s = self.statefulsets.get_named(Some(ns), &r.name)?;
                (s.metadata.uid.as_deref() == Some(r.uid.as_str())).then(|| {
                    (
                        r.uid.clone(),
                        s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
                    )
                })
            }
            ("v1", "ReplicationController") => {
                let rc = self.rcs.get_named(Some(ns), &r.name)?;
                (rc.metadata.uid.as_deref() == Some(r.uid.as_str())).then(|| {
                    (
                        r.uid.clone(),
                        rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
                    )
                })
            }
            ("apps", "Deployment") => {
                let d = self.deployments.get_named(Some(ns), &r.name)?;
                (d.metadata.uid.as_deref() == Some(r.uid.as_str())).then(|| {
                    (
                        r.uid.clone(),
                        d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
                    )
                })
            }
            _ => None,
        }
    }

    /// Upstream's getExpectedScale: the sum of the scales of the pods' controllers (each
    /// once); pods without a controller are not counted.
    fn expected_scale(&self, ns: &str, pods: &[Arc<Pod>]) -> Result<(i32, usize), String> {
        let mut scales: HashMap<String, i32> = HashMap::new();
        let mut unmanaged = 0;
        for pod in pods {
            let Some(r) = controller_ref(&pod.metadata) else {
                unmanaged += 1;
                continue;
            };
            if scales.contains_key(&r.uid) {
                continue;
            }
            match self.controller_scale(ns, r) {
                Some((uid, replicas)) => {
                    scales.insert(uid, replicas);
                }
                None => return Err(format!("found no controllers for pod {:?}", pod.name_any())),
            }
        }
        Ok((scales.values().sum(), unmanaged))
    }
}

/// Upstream's nonTerminatingPodHasStaleDisruptionCondition: a pod not being deleted nor
/// terminal with `DisruptionTarget=True` not set by the kubelet; how long until it is stale.
fn stale_disruption_wait(pod: &Pod, now: jiff::Timestamp) -> Option<Duration> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    if matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        return None;
    }
    let cond = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "DisruptionTarget")?;
    if cond.status != "True" || cond.reason.as_deref() == Some("TerminationByKubelet") {
        return None;
    }
    let since = cond.last_transition_time.as_ref().map_or(now, |t| t.0);
    let waited = Duration::try_from(now.duration_since(since)).unwrap_or_default();
    Some(STALE_POD_DISRUPTION_TIMEOUT.saturating_sub(waited))
}

impl Reconciler for Disruption {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        if let Some(pod_key) = key.strip_prefix(STALE_PREFIX) {
            return self.clear_stale_disruption(pod_key).await;
        }
        let Some(pdb) = self.pdbs.get(key) else {
            return Ok(Action::Done);
        };
        if pdb.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let (ns, name) = split_key(key);
        let ns = ns.unwrap_or_default();
        let pdb_ref = object_reference(pdb.as_ref());
        let spec = pdb.spec.clone().unwrap_or_default();
        let pods: Vec<Arc<Pod>> = self
            .pods
            .list_namespace(ns)
            .into_iter()
            .filter(|p| pdb_selects(&pdb, p))
            .collect();
        if pods.is_empty() {
            self.recorder
                .event(&pdb_ref, "Normal", "NoPods", "No matching pods found");
        }
        let pod_count = i32::try_from(pods.len()).unwrap_or(i32::MAX);
        let mut unmanaged = 0;
        let counted = expected_and_desired(
            spec.min_available.as_ref(),
            spec.max_unavailable.as_ref(),
            pod_count,
            || {
                let (scale, u) = self.expected_scale(ns, &pods)?;
                unmanaged = u;
                Ok(scale)
            },
        );
        let now = jiff::Timestamp::now();
        let generation = pdb.metadata.generation;
        let old = pdb.status.clone().unwrap_or_default();
        let (mut status, recheck) = match counted {
            Ok((expected, desired)) => {
                if unmanaged > 0 {
                    self.recorder.event(
                        &pdb_ref,
                        "Warning",
                        "UnmanagedPods",
                        &format!(
                            "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
                            go_selector(spec.selector.as_ref())
                        ),
                    );
                }
                let (disrupted, recheck, not_deleted) = disrupted_pods(&old, &pods, now);
                for pod in not_deleted {
                    // Upstream names the PDB as namespace/namespace; kept as it is.
                    self.recorder.event(
                        &object_reference(pod.as_ref()),
                        "Warning",
                        "NotDeleted",
                        &format!("Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't"),
                    );
                }
                let healthy = i32::try_from(
                    pods.iter()
                        .filter(|p| {
                            p.metadata.deletion_timestamp.is_none()
                                && !disrupted.contains_key(&p.name_any())
                                && is_pod_ready(p)
                        })
                        .count(),
                )
                .unwrap_or(i32::MAX);
                let status = PodDisruptionBudgetStatus {
                    current_healthy: healthy,
                    desired_healthy: desired,
                    expected_pods: expected,
                    disruptions_allowed: disruptions_allowed(healthy, desired, expected),
                    disrupted_pods: (!disrupted.is_empty()).then_some(disrupted),
                    observed_generation: generation,
                    conditions: old.conditions.clone(),
                };
                (status, recheck)
            }
            Err(e) => {
                self.recorder.event(
                    &pdb_ref,
                    "Warning",
                    "CalculateExpectedPodCountFailed",
                    &format!("Failed to calculate the number of expected pods: {e}"),
                );
                // Fail safe: no disruptions.
                let status = PodDisruptionBudgetStatus {
                    disruptions_allowed: 0,
                    observed_generation: generation,
                    ..old.clone()
                };
                let mut status = status;
                set_condition(&mut status, "False", "SyncFailed", &e, now);
                return self
                    .write(ns, name, &pdb, status, &old)
                    .await
                    .map(|_| Action::Done);
            }
        };
        if status.disruptions_allowed > 0 {
            set_condition(&mut status, "True", "SufficientPods", "", now);
        } else {
            set_condition(&mut status, "False", "InsufficientPods", "", now);
        }
        self.write(ns, name, &pdb, status, &old).await?;
        Ok(recheck.map_or(Action::Done, Action::RequeueAfter))
    }
}

impl Disruption {
    /// Resets a stale `DisruptionTarget` condition to False (no reason or message, a new
    /// transition time: upstream's UpdatePodCondition), or waits until it is stale.
    async fn clear_stale_disruption(&self, pod_key: &str) -> Result<Action, Error> {
        let Some(pod) = self.pods.get(pod_key) else {
            return Ok(Action::Done);
        };
        let now = jiff::Timestamp::now();
        let Some(wait) = stale_disruption_wait(&pod, now) else {
            return Ok(Action::Done);
        };
        if !wait.is_zero() {
            return Ok(Action::RequeueAfter(wait));
        }
        let mut updated = pod.as_ref().clone();
        let Some(cond) = updated
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|cs| cs.iter_mut().find(|c| c.type_ == "DisruptionTarget"))
        else {
            return Ok(Action::Done);
        };
        *cond = k8s_openapi::api::core::v1::PodCondition {
            type_: "DisruptionTarget".into(),
            status: "False".into(),
            last_transition_time: Some(Time(now)),
            observed_generation: cond.observed_generation,
            ..Default::default()
        };
        let api: Api<Pod> = Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        match api
            .replace_status(&pod.name_any(), &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(Action::Done),
            Err(e) if crate::controller::is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }

    async fn write(
        &self,
        ns: &str,
        name: &str,
        pdb: &PodDisruptionBudget,
        status: PodDisruptionBudgetStatus,
        old: &PodDisruptionBudgetStatus,
    ) -> Result<(), Error> {
        if serde_json::to_value(&status).ok() == serde_json::to_value(old).ok() {
            return Ok(());
        }
        let mut updated = pdb.clone();
        updated.status = Some(status);
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), ns);
        api.replace_status(name, &PostParams::default(), &updated)
            .await?;
        Ok(())
    }
}

/// A label selector as Go's `%v` prints the generated type.
fn go_selector(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> String {
    let Some(sel) = selector else {
        return "nil".into();
    };
    let labels: String = sel
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}: {v},"))
        .collect();
    let exprs: Vec<String> = sel
        .match_expressions
        .iter()
        .flatten()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}}",
                e.key,
                e.operator,
                e.values.clone().unwrap_or_default().join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{}}},}}",
        exprs.join(",")
    )
}

/// Upstream's buildDisruptedPodMap: entries whose pod still exists, is not being deleted, and
/// was evicted less than two minutes ago; when the earliest of them expires; and the pods
/// whose entry expired without their deletion.
fn disrupted_pods(
    status: &PodDisruptionBudgetStatus,
    pods: &[Arc<Pod>],
    now: jiff::Timestamp,
) -> (BTreeMap<String, Time>, Option<Duration>, Vec<Arc<Pod>>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<Duration> = None;
    let mut not_deleted = Vec::new();
    let Some(entries) = &status.disrupted_pods else {
        return (kept, None, not_deleted);
    };
    for (pod_name, at) in entries {
        let Some(pod) = pods.iter().find(|p| p.name_any() == *pod_name) else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let expires = at.0 + jiff::SignedDuration::try_from(DELETION_TIMEOUT).unwrap_or_default();
        if expires < now {
            not_deleted.push(pod.clone());
            continue;
        }
        kept.insert(pod_name.clone(), at.clone());
        let left = Duration::try_from(expires.duration_since(now)).unwrap_or_default();
        recheck = Some(recheck.map_or(left, |r| r.min(left)));
    }
    (kept, recheck, not_deleted)
}

/// Sets the `DisruptionAllowed` condition as meta.SetStatusCondition does (the transition
/// time moves only when the status changes).
fn set_condition(
    status: &mut PodDisruptionBudgetStatus,
    value: &str,
    reason: &str,
    message: &str,
    now: jiff::Timestamp,
) {
    let generation = status.observed_generation;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    match conditions
        .iter_mut()
        .find(|c| c.type_ == "DisruptionAllowed")
    {
        Some(c) => {
            if c.status != value {
                c.status = value.into();
                c.last_transition_time = Time(now);
            }
            c.reason = reason.into();
            c.message = message.into();
            c.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: "DisruptionAllowed".into(),
            status: value.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: generation,
            last_transition_time: Time(now),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn selectors_print_as_go_does() {
        let sel: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector =
            serde_json::from_value(serde_json::json!({"matchLabels": {"app": "consul"}}))
                .expect("sel");
        assert_eq!(
            go_selector(Some(&sel)),
            "&LabelSelector{MatchLabels:map[string]string{app: consul,},MatchExpressions:[]LabelSelectorRequirement{},}"
        );
    }

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled_value(&pct("50%"), 3, true), Ok(2));
        assert_eq!(scaled_value(&pct("50%"), 3, false), Ok(1));
        assert_eq!(scaled_value(&pct("0%"), 10, true), Ok(0));
        assert_eq!(scaled_value(&pct("100%"), 7, true), Ok(7));
        assert_eq!(scaled_value(&IntOrString::Int(4), 10, true), Ok(4));
        assert!(scaled_value(&pct("half"), 10, true).is_err());
    }

    #[test]
    fn expected_and_desired_as_upstream() {
        let scale = |n: i32| move || Ok(n);
        // minAvailable as a number: the pods that exist are expected.
        assert_eq!(
            expected_and_desired(Some(&IntOrString::Int(2)), None, 3, scale(5)),
            Ok((3, 2))
        );
        // minAvailable as a percentage: of the controllers' scale.
        assert_eq!(
            expected_and_desired(Some(&pct("50%")), None, 3, scale(5)),
            Ok((5, 3))
        );
        // maxUnavailable: scale minus the (rounded up) allowance, never below zero.
        assert_eq!(
            expected_and_desired(None, Some(&IntOrString::Int(1)), 3, scale(4)),
            Ok((4, 3))
        );
        assert_eq!(
            expected_and_desired(None, Some(&pct("30%")), 3, scale(10)),
            Ok((10, 7))
        );
        assert_eq!(
            expected_and_desired(None, Some(&IntOrString::Int(9)), 3, scale(4)),
            Ok((4, 0))
        );
        assert!(
            expected_and_desired(None, Some(&pct("10%")), 1, || Err(
                "found no controllers".into()
            ))
            .is_err()
        );
    }

    #[test]
    fn disruptions_allowed_never_negative() {
        assert_eq!(disruptions_allowed(3, 2, 3), 1);
        assert_eq!(disruptions_allowed(2, 2, 3), 0);
        assert_eq!(disruptions_allowed(1, 2, 3), 0);
        assert_eq!(
            disruptions_allowed(3, 0, 0),
            0,
            "no expected pods: no disruptions"
        );
    }

    #[test]
    fn disrupted_pods_expire_or_go_with_their_pod() {
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().expect("ts");
        let pod = |name: &str, deleting: bool| -> Arc<Pod> {
            Arc::new(
                serde_json::from_value(serde_json::json!({"metadata": {"name": name,
                    "deletionTimestamp": if deleting {Some("2026-01-01T00:09:00Z")} else {None}}}))
                .expect("pod"),
            )
        };
        let at = |s: &str| Time(s.parse().expect("ts"));
        let status = PodDisruptionBudgetStatus {
            disrupted_pods: Some(BTreeMap::from([
                ("fresh".to_string(), at("2026-01-01T00:09:30Z")),
                ("old".to_string(), at("2026-01-01T00:07:00Z")),
                ("deleting".to_string(), at("2026-01-01T00:09:30Z")),
                ("gone".to_string(), at("2026-01-01T00:09:30Z")),
            ])),
            ..Default::default()
        };
        let pods = vec![
            pod("fresh", false),
            pod("old", false),
            pod("deleting", true),
        ];
        let (kept, recheck, not_deleted) = disrupted_pods(&status, &pods, now);
        assert_eq!(
            kept.keys().cloned().collect::<Vec<_>>(),
            vec!["fresh".to_string()]
        );
        assert_eq!(recheck, Some(Duration::from_secs(90)));
        assert_eq!(
            not_deleted.iter().map(|p| p.name_any()).collect::<Vec<_>>(),
            ["old"]
        );
    }

    #[test]
    fn stale_disruption_target_conditions() {
        // upstream TestUpdatePodDisruptionCondition / nonTerminatingPodHasStaleDisruptionCondition
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().expect("ts");
        let pod = |phase: &str, status: &str, reason: &str, at: &str, deleting: bool| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "ns",
                    "deletionTimestamp": if deleting { Some("2026-01-01T00:09:00Z") } else { None }},
                "status": {"phase": phase, "conditions": [{"type": "DisruptionTarget",
                    "status": status, "reason": reason, "lastTransitionTime": at}]}
            }))
            .expect("pod")
        };
        let recent = "2026-01-01T00:09:30Z";
        let old = "2026-01-01T00:07:00Z";
        let cases = [
            (
                pod("Running", "True", "EvictionByEvictionAPI", recent, false),
                Some(90),
            ),
            (
                pod("Running", "True", "EvictionByEvictionAPI", old, false),
                Some(0),
            ),
            (
                pod("Pending", "True", "PreemptionByScheduler", old, false),
                Some(0),
            ),
            // Set by the kubelet, being deleted, terminal, or already False: never stale.
            (
                pod("Running", "True", "TerminationByKubelet", old, false),
                None,
            ),
            (
                pod("Running", "True", "EvictionByEvictionAPI", old, true),
                None,
            ),
            (
                pod("Failed", "True", "EvictionByEvictionAPI", old, false),
                None,
            ),
            (
                pod("Succeeded", "True", "EvictionByEvictionAPI", old, false),
                None,
            ),
            (pod("Running", "False", "", old, false), None),
        ];
        for (i, (p, want)) in cases.iter().enumerate() {
            assert_eq!(
                stale_disruption_wait(p, now),
                want.map(Duration::from_secs),
                "case {i}"
            );
        }
        let plain: Pod = serde_json::from_value(serde_json::json!({"metadata": {"name": "p"},
            "status": {"phase": "Running"}}))
        .expect("pod");
        assert_eq!(stale_disruption_wait(&plain, now), None);
    }
}
