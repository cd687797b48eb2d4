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
            patterns.iter().find_map(|p| {
                let want = if p.status.is_empty() {
                    "True"
                } else {
                    p.status.as_str()
                };
                let has = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .into_iter()
                    .flatten()
                    .any(|c| c.type_ == p.type_ && c.status == want);
                has.then(|| {
                    format!(
                        "Pod {ns}/{name} has condition {} matching {} rule at index {index}",
                        p.type_, rule.action
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

/// The first terminated container (init containers first) with a non-zero exit code that the
/// requirement matches.
fn matching_container<'a>(
    pod: &'a Pod,
    req: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    let lists = [
        status.init_container_statuses.as_deref(),
        status.container_statuses.as_deref(),
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

/// When a failed pod finished: its last container's `finishedAt`, else its `Ready` or
/// `DisruptionTarget` condition's transition, else its deletion time.
pub fn finish_time(pod: &Pod) -> Option<jiff::Timestamp> {
    let status = pod.status.as_ref();
    let finished = status
        .into_iter()
        .flat_map(|s| {
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
        })
        .filter_map(|c| {
            c.state
                .as_ref()?
                .terminated
                .as_ref()?
                .finished_at
                .as_ref()
                .map(|t| t.0)
        })
        .max();
    if finished.is_some() {
        return finished;
    }
    let conditions = status.and_then(|s| s.conditions.as_ref());
    for t in ["DisruptionTarget", "Ready"] {
        if let Some(at) = conditions
            .into_iter()
            .flatten()
            .find(|c| c.type_ == t)
            .and_then(|c| c.last_transition_time.as_ref())
        {
            return Some(at.0);
        }
    }
    pod.metadata.deletion_timestamp.as_ref().map(|t| t.0)
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
