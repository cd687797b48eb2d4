//! A Job's pod failure policy (upstream pod_failure_policy.go) and pod-failure backoff
//! (backoff_utils.go): which rule a failed pod matches, and how long to wait before replacing
//! failed pods.

use std::time::Duration;

use k8s_openapi::api::batch::v1::{PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

/// Upstream's DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff (1.33).
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(10);
pub const MAX_BACKOFF: Duration = Duration::from_secs(10 * 60);

/// What a failed pod's policy match means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Counts towards backoffLimit (no rule, or a `Count` rule).
    Count,
    /// Not counted (an `Ignore` rule).
    Ignore,
    /// Fails the whole job, with this condition message.
    FailJob(String),
    /// Fails the pod's index (backoffLimitPerIndex).
    FailIndex,
}

/// Matches a failed pod against the policy's rules in order, as upstream's
/// matchPodFailurePolicy.
pub fn evaluate(policy: Option<&PodFailurePolicy>, pod: &Pod) -> Outcome {
    let Some(policy) = policy else {
        return Outcome::Count;
    };
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    for (index, rule) in policy.rules.iter().enumerate() {
        let matched = if let Some(req) = &rule.on_exit_codes {
            matching_container(pod, req).map(|c| {
                let code = c
                    .state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .map(|t| t.exit_code)
                    .unwrap_or_default();
                format!(
                    "Container {} for pod {ns}/{name} failed with exit code {code} matching {} rule at index {index}",
                    c.name, rule.action
                )
            })
        } else if let Some(patterns) = &rule.on_pod_conditions {
            // The pod's conditions in order, each against every pattern (upstream's
            // matchOnPodConditions): the message names the first pod condition that matches.
            let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
            conditions.into_iter().flatten().find_map(|c| {
                patterns
                    .iter()
                    .any(|p| {
                        let want = if p.status.is_empty() {
                            "True"
                        } else {
                            p.status.as_str()
                        };
                        c.type_ == p.type_ && c.status == want
                    })
                    .then(|| {
                        format!(
                            "Pod {ns}/{name} has condition {} matching {} rule at index {index}",
                            c.type_, rule.action
                        )
                    })
            })
        } else {
            None
        };
        if let Some(message) = matched {
            return match rule.action.as_str() {
                "Ignore" => Outcome::Ignore,
                "FailJob" => Outcome::FailJob(message),
                "FailIndex" => Outcome::FailIndex,
                _ => Outcome::Count,
            };
        }
    }
    Outcome::Count
}

/// The first terminated container with a non-zero exit code that the requirement matches:
/// regular containers first, then init containers (upstream's matchOnExitCodes).
fn matching_container<'a>(
    pod: &'a Pod,
    req: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    let lists = [
        status.container_statuses.as_deref(),
        status.init_container_statuses.as_deref(),
    ];
    lists.into_iter().flatten().flatten().find(|c| {
        let Some(t) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) else {
            return false;
        };
        if t.exit_code == 0 {
            return false;
        }
        if req.container_name.as_deref().is_some_and(|n| n != c.name) {
            return false;
        }
        let listed = req.values.contains(&t.exit_code);
        match req.operator.as_str() {
            "In" => listed,
            "NotIn" => !listed,
            _ => false,
        }
    })
}

/// The delay before a replacement after `failures` consecutive failures (since the last
/// success): 10 s doubling, capped at 10 minutes; none without failures.
pub fn backoff(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let exp = (failures - 1).min(20);
    DEFAULT_BACKOFF
        .checked_mul(1u32 << exp)
        .unwrap_or(MAX_BACKOFF)
        .min(MAX_BACKOFF)
}

/// When a failed pod finished (upstream's getFinishedTime): the latest `finishedAt` when every
/// container has terminated, else when `Ready` turned False, else its deletion time less the
/// grace period, else its creation.
pub fn finish_time(pod: &Pod) -> Option<jiff::Timestamp> {
    let status = pod.status.as_ref();
    let containers = status.and_then(|s| s.container_statuses.as_deref());
    let mut finished: Option<jiff::Timestamp> = None;
    let mut all_terminated = true;
    for c in containers.into_iter().flatten() {
        match c
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.finished_at.as_ref())
        {
            Some(at) => finished = Some(finished.map_or(at.0, |f| f.max(at.0))),
            None => {
                all_terminated = false;
                break;
            }
        }
    }
    if all_terminated && let Some(at) = finished {
        return Some(at);
    }
    let ready_false = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .filter(|c| c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref());
    if let Some(at) = ready_false {
        return Some(at.0);
    }
    if let Some(deleted) = &pod.metadata.deletion_timestamp {
        let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        return Some(
            deleted
                .0
                .checked_sub(jiff::SignedDuration::from_secs(grace))
                .unwrap_or(deleted.0),
        );
    }
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_ten_seconds_to_ten_minutes() {
        let table = [
            (0, 0),
            (1, 10),
            (2, 20),
            (3, 40),
            (4, 80),
            (5, 160),
            (6, 320),
            (7, 600),
            (8, 600),
            (40, 600),
        ];
        for (failures, secs) in table {
            assert_eq!(backoff(failures), Duration::from_secs(secs), "{failures}");
        }
    }

    fn failed_pod(exit_codes: &[(&str, i32)], conditions: &[(&str, &str)]) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "ns", "name": "p"},
            "status": {
                "phase": "Failed",
                "conditions": conditions.iter().map(|(t, s)| serde_json::json!({"type": t, "status": s})).collect::<Vec<_>>(),
                "containerStatuses": exit_codes.iter().map(|(n, c)| serde_json::json!({
                    "name": n, "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": c}}
                })).collect::<Vec<_>>(),
            }
        }))
        .expect("pod")
    }

    fn policy(rules: serde_json::Value) -> PodFailurePolicy {
        serde_json::from_value(serde_json::json!({ "rules": rules })).expect("policy")
    }

    #[test]
    fn containers_before_init_containers_and_pod_conditions_in_pod_order() {
        let mut pod = failed_pod(&[("main", 3)], &[("B", "True"), ("A", "True")]);
        if let Some(s) = pod.status.as_mut() {
            s.init_container_statuses = Some(vec![
                serde_json::from_value(serde_json::json!({
                    "name": "init", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 3}}
                }))
                .expect("status"),
            ]);
        }
        let p = policy(serde_json::json!([
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
        ]));
        assert_eq!(
            evaluate(Some(&p), &pod),
            Outcome::FailJob(
                "Container main for pod ns/p failed with exit code 3 matching FailJob rule at index 0".into()
            )
        );
        let p = policy(serde_json::json!([
            {"action": "FailJob", "onPodConditions": [{"type": "A"}, {"type": "B"}]},
        ]));
        assert_eq!(
            evaluate(Some(&p), &pod),
            Outcome::FailJob("Pod ns/p has condition B matching FailJob rule at index 0".into())
        );
    }

    #[test]
    fn finish_time_as_upstream() {
        let pod = |json: serde_json::Value| -> Pod { serde_json::from_value(json).expect("pod") };
        let ts = |s: &str| s.parse::<jiff::Timestamp>().expect("ts");
        // All containers terminated: the latest finishedAt.
        let p = pod(
            serde_json::json!({"metadata": {}, "status": {"containerStatuses": [
                {"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:00:05Z"}}},
                {"name": "b", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-01-01T00:00:09Z"}}}
            ]}}),
        );
        assert_eq!(finish_time(&p), Some(ts("2026-01-01T00:00:09Z")));
        // One still running: Ready=False's transition.
        let p = pod(serde_json::json!({"metadata": {}, "status": {
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:01:00Z"}],
            "containerStatuses": [
            {"name": "a", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:00:05Z"}}},
            {"name": "b", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
             "state": {"running": {}}}
        ]}}));
        assert_eq!(finish_time(&p), Some(ts("2026-01-01T00:01:00Z")));
        // Deleted: deletion time less the grace period; else the creation time.
        let p = pod(serde_json::json!({"metadata": {
            "deletionTimestamp": "2026-01-01T00:02:00Z", "deletionGracePeriodSeconds": 30,
            "creationTimestamp": "2026-01-01T00:00:00Z"}}));
        assert_eq!(finish_time(&p), Some(ts("2026-01-01T00:01:30Z")));
        let p = pod(serde_json::json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}));
        assert_eq!(finish_time(&p), Some(ts("2026-01-01T00:00:00Z")));
    }

    #[test]
    fn rules_match_in_order() {
        let p = policy(serde_json::json!([
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}},
        ]));
        assert_eq!(
            evaluate(
                Some(&p),
                &failed_pod(&[("main", 1)], &[("DisruptionTarget", "True")])
            ),
            Outcome::Ignore
        );
        assert_eq!(
            evaluate(Some(&p), &failed_pod(&[("main", 42)], &[])),
            Outcome::FailJob(
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1".into()
            )
        );
        // Same code, other container: the FailJob rule names `main` only; NotIn [1,2] counts.
        assert_eq!(
            evaluate(Some(&p), &failed_pod(&[("side", 42)], &[])),
            Outcome::Count
        );
        assert_eq!(
            evaluate(Some(&p), &failed_pod(&[("main", 1)], &[])),
            Outcome::FailIndex
        );
        // Exit code 0 never matches; no rule matched counts.
        assert_eq!(
            evaluate(Some(&p), &failed_pod(&[("main", 0)], &[])),
            Outcome::Count
        );
        assert_eq!(
            evaluate(None, &failed_pod(&[("main", 42)], &[])),
            Outcome::Count
        );
        let cond = policy(serde_json::json!([
            {"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]},
        ]));
        assert_eq!(
            evaluate(Some(&cond), &failed_pod(&[], &[("ConfigIssue", "True")])),
            Outcome::FailJob(
                "Pod ns/p has condition ConfigIssue matching FailJob rule at index 0".into()
            )
        );
        assert_eq!(
            evaluate(Some(&cond), &failed_pod(&[], &[("ConfigIssue", "False")])),
            Outcome::Count
        );
    }
}
