//! Which pods a scale-down deletes first: upstream's ActivePodsWithRanks order (with the
//! default-on PodDeletionCost and LogarithmicScaleDown gates): unassigned < assigned, Pending <
//! Unknown < Running, not ready < ready, lower `controller.kubernetes.io/pod-deletion-cost`
//! first, more related pods on the same node first, ready for less time first, more restarts
//! first, newer first.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::controllers::controller_utils::{is_pod_ready, pod_condition};

const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

fn node_name(p: &Pod) -> &str {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

fn phase_ordinal(p: &Pod) -> u8 {
    match p.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

fn deletion_cost(p: &Pod) -> i64 {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST))
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(0, i64::from)
}

fn ready_time(p: &Pod) -> Option<jiff::Timestamp> {
    pod_condition(p, "Ready")
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

fn max_restarts(p: &Pod) -> i32 {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0)
}

/// Upstream's logarithmicRankDiff: compares floor(log2(age in ns)) of two times.
fn log_rank(t: jiff::Timestamp, now: jiff::Timestamp) -> i64 {
    let d = now.duration_since(t).as_nanos();
    if d > 0 { (d as f64).log2() as i64 } else { -1 }
}

/// `a` before `b` when a's time is later (newer) or missing: upstream's afterOrZero.
fn after_or_zero(a: Option<jiff::Timestamp>, b: Option<jiff::Timestamp>) -> bool {
    match (a, b) {
        (None, _) | (_, None) => a.is_none(),
        (Some(a), Some(b)) => a > b,
    }
}

/// Compares two times the LogarithmicScaleDown way: buckets of log2 age, ties by UID.
fn time_less(
    a: Option<jiff::Timestamp>,
    b: Option<jiff::Timestamp>,
    pa: &Pod,
    pb: &Pod,
    now: jiff::Timestamp,
) -> bool {
    match (a, b) {
        (Some(ta), Some(tb)) => {
            let diff = log_rank(ta, now) - log_rank(tb, now);
            if diff == 0 {
                pa.metadata.uid < pb.metadata.uid
            } else {
                diff < 0
            }
        }
        _ => after_or_zero(a, b),
    }
}

/// Whether pod `a` (with `rank_a` related pods on its node) should go before pod `b`.
fn less(a: &Pod, rank_a: usize, b: &Pod, rank_b: usize, now: jiff::Timestamp) -> bool {
    let (na, nb) = (node_name(a), node_name(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return na.is_empty();
    }
    if phase_ordinal(a) != phase_ordinal(b) {
        return phase_ordinal(a) < phase_ordinal(b);
    }
    if is_pod_ready(a) != is_pod_ready(b) {
        return !is_pod_ready(a);
    }
    if deletion_cost(a) != deletion_cost(b) {
        return deletion_cost(a) < deletion_cost(b);
    }
    if rank_a != rank_b {
        return rank_a > rank_b;
    }
    if is_pod_ready(a) && is_pod_ready(b) {
        let (ra, rb) = (ready_time(a), ready_time(b));
        if ra != rb {
            return time_less(ra, rb, a, b, now);
        }
    }
    if max_restarts(a) != max_restarts(b) {
        return max_restarts(a) > max_restarts(b);
    }
    let (ca, cb) = (
        a.metadata.creation_timestamp.as_ref().map(|t| t.0),
        b.metadata.creation_timestamp.as_ref().map(|t| t.0),
    );
    if ca != cb {
        return time_less(ca, cb, a, b, now);
    }
    false
}

/// The `diff` pods to delete: all of them when that is every pod, else the first `diff` in
/// upstream's rank order, where a pod's rank is how many `related` pods share its node.
pub fn pods_to_delete(
    pods: &[Arc<Pod>],
    related: &[Arc<Pod>],
    diff: usize,
    now: jiff::Timestamp,
) -> Vec<Arc<Pod>> {
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for p in related {
        let n = node_name(p);
        if !n.is_empty() {
            *on_node.entry(n).or_default() += 1;
        }
    }
    let mut ranked: Vec<(Arc<Pod>, usize)> = pods
        .iter()
        .map(|p| (p.clone(), on_node.get(node_name(p)).copied().unwrap_or(0)))
        .collect();
    if diff < ranked.len() {
        ranked = merge_sort(ranked, &|(a, ra), (b, rb)| less(a, *ra, b, *rb, now));
    }
    ranked.into_iter().take(diff).map(|(p, _)| p).collect()
}

/// A stable merge sort by a `less` that need not be a total order. Upstream's comparator is
/// not transitive (pods in one log2 age bucket compare by UID when their ready times differ
/// and by restarts when they are equal), which Go's sort tolerates and the standard library's
/// sorts may panic on.
fn merge_sort<T>(mut items: Vec<T>, less: &impl Fn(&T, &T) -> bool) -> Vec<T> {
    if items.len() <= 1 {
        return items;
    }
    let right = merge_sort(items.split_off(items.len() / 2), less);
    let left = merge_sort(items, less);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let next = if less(r, l) {
            right.next()
        } else {
            left.next()
        };
        out.extend(next);
    }
    out.extend(left);
    out.extend(right);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct P {
        name: &'static str,
        node: &'static str,
        phase: &'static str,
        ready_secs_ago: Option<i64>,
        restarts: i32,
        created_secs_ago: i64,
        cost: Option<&'static str>,
    }

    const BASE: P = P {
        name: "",
        node: "n1",
        phase: "Running",
        ready_secs_ago: Some(1000),
        restarts: 0,
        created_secs_ago: 2000,
        cost: None,
    };

    fn pod(p: P, now: jiff::Timestamp) -> Arc<Pod> {
        let ago = |s: i64| (now - jiff::SignedDuration::from_secs(s)).to_string();
        let conditions = p.ready_secs_ago.map(|s| {
            serde_json::json!([{"type": "Ready", "status": "True", "lastTransitionTime": ago(s)}])
        });
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": p.name, "uid": p.name, "creationTimestamp": ago(p.created_secs_ago),
                    "annotations": p.cost.map(|c| serde_json::json!({DELETION_COST: c}))},
                "spec": {"nodeName": p.node, "containers": []},
                "status": {"phase": p.phase, "conditions": conditions,
                    "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": p.restarts}]}
            }))
            .expect("pod"),
        )
    }

    fn order(pods: Vec<Arc<Pod>>, related: &[Arc<Pod>], now: jiff::Timestamp) -> Vec<String> {
        let n = pods.len();
        pods_to_delete(&pods, related, n - 1, now)
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn upstream_rank_order() {
        let now = jiff::Timestamp::now();
        // Each pair: the first goes before the second.
        let cases: Vec<(&str, P, P)> = vec![
            (
                "unassigned first",
                P {
                    name: "a",
                    node: "",
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
            (
                "pending before running",
                P {
                    name: "a",
                    phase: "Pending",
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
            (
                "unknown before running",
                P {
                    name: "a",
                    phase: "Unknown",
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
            (
                "not ready first",
                P {
                    name: "a",
                    ready_secs_ago: None,
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
            (
                "lower deletion cost first",
                P {
                    name: "a",
                    cost: Some("-5"),
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
            (
                "ready for less time first",
                P {
                    name: "a",
                    ready_secs_ago: Some(10),
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
            (
                "more restarts first",
                P {
                    name: "a",
                    restarts: 3,
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
            (
                "newer first",
                P {
                    name: "a",
                    created_secs_ago: 10,
                    ..BASE
                },
                P { name: "b", ..BASE },
            ),
        ];
        for (what, first, second) in cases {
            let pods = vec![pod(first, now), pod(second, now)];
            let reversed: Vec<_> = pods.iter().rev().cloned().collect();
            assert_eq!(order(pods, &[], now), vec!["a"], "{what}");
            assert_eq!(
                order(reversed, &[], now),
                vec!["a"],
                "{what} (reversed input)"
            );
        }
    }

    #[test]
    fn doubled_up_pods_go_first_and_same_log_bucket_ties_by_uid() {
        let now = jiff::Timestamp::now();
        let a = pod(
            P {
                name: "a",
                node: "busy",
                ..BASE
            },
            now,
        );
        let b = pod(
            P {
                name: "b",
                node: "quiet",
                ..BASE
            },
            now,
        );
        let extra = pod(
            P {
                name: "x",
                node: "busy",
                ..BASE
            },
            now,
        );
        let related = vec![a.clone(), b.clone(), extra];
        assert_eq!(order(vec![b.clone(), a.clone()], &related, now), vec!["a"]);
        // Ready 1000 s and 1001 s ago: same log2 bucket, so the UID decides.
        let c = pod(
            P {
                name: "c",
                ready_secs_ago: Some(1001),
                ..BASE
            },
            now,
        );
        let d = pod(P { name: "d", ..BASE }, now);
        assert_eq!(order(vec![d, c], &[], now), vec!["c"]);
    }

    #[test]
    fn deleting_every_pod_keeps_them_all() {
        let now = jiff::Timestamp::now();
        let pods = vec![
            pod(P { name: "a", ..BASE }, now),
            pod(P { name: "b", ..BASE }, now),
        ];
        assert_eq!(pods_to_delete(&pods, &[], 2, now).len(), 2);
        assert_eq!(pods_to_delete(&pods, &[], 0, now).len(), 0);
    }

    #[test]
    fn a_comparator_that_is_not_transitive_never_panics_the_sort() {
        // Ready times in one log2 bucket, often equal: upstream's Less is then not transitive
        // (UIDs decide for different times, restarts and creation for equal ones). A 1,000-pod
        // rollout hit this and the standard library's sort panicked in the worker.
        let now = jiff::Timestamp::now();
        let ago = |s: i64| (now - jiff::SignedDuration::from_secs(s)).to_string();
        let mut seed: u64 = 42;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % m
        };
        let pods: Vec<Arc<Pod>> = (0..600)
            .map(|i| {
                let uid = format!("{:08x}", next(u64::from(u32::MAX)));
                let ready = 700 + 100 * next(3) as i64;
                let created = 1500 + 500 * next(3) as i64;
                let restarts = next(3);
                Arc::new(
                    serde_json::from_value(serde_json::json!({
                        "metadata": {"name": format!("p{i}"), "uid": uid, "creationTimestamp": ago(created)},
                        "spec": {"nodeName": "n1", "containers": []},
                        "status": {"phase": "Running",
                            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ago(ready)}],
                            "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": restarts}]}
                    }))
                    .expect("pod"),
                )
            })
            .collect();
        let chosen = pods_to_delete(&pods, &pods, 250, now);
        assert_eq!(chosen.len(), 250);
        let names: std::collections::BTreeSet<_> =
            chosen.iter().map(|p| p.metadata.name.clone()).collect();
        assert_eq!(names.len(), 250, "each pod at most once");
    }
}
