//! Unit tests of the node lifecycle decisions: condition taints, NoExecute taints, toleration
//! matching and limits, zone states.

use super::*;
use k8s_openapi::api::core::v1::{NodeSpec, NodeStatus, PodSpec};

fn node(conds: &[(&str, &str)], taints: Vec<Taint>, unschedulable: bool) -> Node {
    Node {
        spec: Some(NodeSpec {
            taints: (!taints.is_empty()).then_some(taints),
            unschedulable: unschedulable.then_some(true),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            conditions: Some(
                conds
                    .iter()
                    .map(|(t, s)| NodeCondition {
                        type_: (*t).into(),
                        status: (*s).into(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        ..Default::default()
    }
}

fn keys(taints: &[Taint]) -> Vec<String> {
    let mut k: Vec<String> = taints
        .iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect();
    k.sort();
    k
}

#[test]
fn condition_taints_follow_conditions() {
    let now = Timestamp::now();
    let cases: Vec<(&str, Node, Option<&'static str>, Vec<&str>)> = vec![
        (
            "healthy",
            node(&[("Ready", "True")], vec![], false),
            None,
            vec![],
        ),
        (
            "not ready",
            node(&[("Ready", "False")], vec![], false),
            Some(NOT_READY),
            vec![
                "node.kubernetes.io/not-ready:NoExecute",
                "node.kubernetes.io/not-ready:NoSchedule",
            ],
        ),
        (
            "unknown",
            node(&[("Ready", "Unknown")], vec![], false),
            Some(UNREACHABLE),
            vec![
                "node.kubernetes.io/unreachable:NoExecute",
                "node.kubernetes.io/unreachable:NoSchedule",
            ],
        ),
        (
            "pressure and cordon",
            node(
                &[
                    ("Ready", "True"),
                    ("MemoryPressure", "True"),
                    ("DiskPressure", "True"),
                    ("PIDPressure", "False"),
                ],
                vec![],
                true,
            ),
            None,
            vec![
                "node.kubernetes.io/disk-pressure:NoSchedule",
                "node.kubernetes.io/memory-pressure:NoSchedule",
                "node.kubernetes.io/unschedulable:NoSchedule",
            ],
        ),
        (
            "recovered: managed taints go, others stay",
            node(
                &[("Ready", "True")],
                vec![
                    taint(UNREACHABLE, "NoExecute"),
                    taint(UNREACHABLE, "NoSchedule"),
                    taint("example.com/mine", "NoExecute"),
                    taint(UNSCHEDULABLE, "NoSchedule"),
                ],
                false,
            ),
            None,
            vec!["example.com/mine:NoExecute"],
        ),
        (
            "ready false to unknown swaps the taint",
            node(
                &[("Ready", "Unknown")],
                vec![
                    taint(NOT_READY, "NoExecute"),
                    taint(NOT_READY, "NoSchedule"),
                ],
                false,
            ),
            Some(UNREACHABLE),
            vec![
                "node.kubernetes.io/unreachable:NoExecute",
                "node.kubernetes.io/unreachable:NoSchedule",
            ],
        ),
    ];
    for (name, n, want_ne, want) in cases {
        assert_eq!(desired_no_execute(&n), want_ne, "{name}");
        let got = reconcile_taints(&n, desired_no_execute(&n), false, now);
        assert_eq!(keys(&got), want, "{name}");
        let had = taints(&n);
        for t in got.iter().filter(|t| !had.contains(t)) {
            assert!(
                t.time_added.is_some(),
                "{name}: taints the controller adds carry timeAdded (SwapNodeControllerTaint)"
            );
        }
    }
    // Rate-limited: the NoExecute taint is neither added nor removed meanwhile.
    let n = node(&[("Ready", "Unknown")], vec![], false);
    assert_eq!(
        keys(&reconcile_taints(&n, None, true, now)),
        ["node.kubernetes.io/unreachable:NoSchedule"]
    );
    // Full disruption: NoExecute taints are lifted, NoSchedule ones stay.
    let n = node(
        &[("Ready", "Unknown")],
        vec![taint(UNREACHABLE, "NoExecute")],
        false,
    );
    assert_eq!(
        keys(&reconcile_taints(&n, None, false, now)),
        ["node.kubernetes.io/unreachable:NoSchedule"]
    );
}

fn toleration(key: &str, op: &str, value: &str, effect: &str, secs: Option<i64>) -> Toleration {
    Toleration {
        key: (!key.is_empty()).then(|| key.into()),
        operator: (!op.is_empty()).then(|| op.into()),
        value: (!value.is_empty()).then(|| value.into()),
        effect: (!effect.is_empty()).then(|| effect.into()),
        toleration_seconds: secs,
    }
}

#[test]
fn toleration_matching_as_upstream() {
    let mut t = taint("k", "NoExecute");
    t.value = Some("v".into());
    let cases = [
        (toleration("k", "Equal", "v", "NoExecute", None), true),
        (toleration("k", "", "v", "", None), true),
        (toleration("k", "Equal", "w", "NoExecute", None), false),
        (toleration("k", "Exists", "", "", None), true),
        (toleration("", "Exists", "", "", None), true),
        (toleration("", "Exists", "", "NoSchedule", None), false),
        (toleration("other", "Exists", "", "", None), false),
        (toleration("k", "Bogus", "v", "", None), false),
    ];
    for (tol, want) in cases {
        assert_eq!(tolerates(&tol, &t), want, "{tol:?}");
    }
}

#[test]
fn toleration_limits_decide_evictions() {
    let pod = |tols: Vec<Toleration>| Pod {
        spec: Some(PodSpec {
            tolerations: Some(tols),
            ..Default::default()
        }),
        ..Default::default()
    };
    let unreachable = taint(UNREACHABLE, "NoExecute");
    let custom = taint("example.com/x", "NoExecute");
    let both = [&unreachable, &custom];
    assert_eq!(
        toleration_limit(&pod(vec![]), &[]),
        None,
        "no taints: stays"
    );
    assert_eq!(
        toleration_limit(&pod(vec![]), &[&unreachable]),
        Some(0),
        "not tolerated: at once"
    );
    let defaults = vec![
        toleration(NOT_READY, "Exists", "", "NoExecute", Some(300)),
        toleration(UNREACHABLE, "Exists", "", "NoExecute", Some(300)),
    ];
    assert_eq!(
        toleration_limit(&pod(defaults.clone()), &[&unreachable]),
        Some(300)
    );
    assert_eq!(
        toleration_limit(&pod(defaults), &both),
        Some(0),
        "one taint not tolerated"
    );
    let forever = vec![toleration(UNREACHABLE, "Exists", "", "NoExecute", None)];
    assert_eq!(toleration_limit(&pod(forever), &[&unreachable]), None);
    let shortest = vec![
        toleration(UNREACHABLE, "Exists", "", "NoExecute", Some(30)),
        toleration("", "Exists", "", "", Some(10)),
    ];
    assert_eq!(toleration_limit(&pod(shortest), &both), Some(10));
    let negative = vec![toleration(UNREACHABLE, "Exists", "", "NoExecute", Some(-5))];
    assert_eq!(toleration_limit(&pod(negative), &[&unreachable]), Some(0));
}

#[test]
fn zone_states_as_upstream() {
    assert_eq!(zone_state(3, 0), ZoneState::Normal);
    assert_eq!(zone_state(0, 1), ZoneState::FullDisruption);
    assert_eq!(zone_state(1, 1), ZoneState::Normal);
    assert_eq!(
        zone_state(1, 2),
        ZoneState::Normal,
        "two down is never partial"
    );
    assert_eq!(zone_state(2, 3), ZoneState::PartialDisruption);
    assert_eq!(zone_state(10, 3), ZoneState::Normal);
    assert_eq!(zone_state(0, 0), ZoneState::Normal);
}
