//! Unit tests of the DaemonSet controller's pure parts: node eligibility (selectors, required
//! affinity, taints against tolerations), the pinning affinity, status counts and the rolling
//! update's plan.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};

use super::util::add_daemon_tolerations;
use super::*;

fn ds(extra_spec: serde_json::Value) -> DaemonSet {
    let mut spec = serde_json::json!({"containers": [{"name": "c", "image": "busybox"}]});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra_spec.as_object()) {
        s.extend(e.clone());
    }
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "agent", "namespace": "ns", "uid": "ds-uid",
                     "annotations": {"deprecated.daemonset.template.generation": "3"}},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec}
        }
    }))
    .expect("ds")
}

fn node(name: &str, labels: serde_json::Value, taints: serde_json::Value) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints}
    }))
    .expect("node")
}

fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: value.map(Into::into),
        effect: effect.into(),
        time_added: None,
    }
}

fn toleration(
    key: Option<&str>,
    op: Option<&str>,
    value: Option<&str>,
    effect: Option<&str>,
) -> Toleration {
    Toleration {
        key: key.map(Into::into),
        operator: op.map(Into::into),
        value: value.map(Into::into),
        effect: effect.map(Into::into),
        toleration_seconds: None,
    }
}

#[test]
fn tolerations_match_taints_as_upstream() {
    let t = taint("k", Some("v"), "NoSchedule");
    let cases = [
        (
            toleration(Some("k"), Some("Equal"), Some("v"), Some("NoSchedule")),
            true,
        ),
        (toleration(Some("k"), None, Some("v"), None), true),
        (
            toleration(Some("k"), Some("Equal"), Some("other"), None),
            false,
        ),
        (toleration(Some("k"), Some("Exists"), None, None), true),
        (
            toleration(Some("k"), Some("Exists"), None, Some("NoExecute")),
            false,
        ),
        (toleration(Some("other"), Some("Exists"), None, None), false),
        (toleration(None, Some("Exists"), None, None), true),
    ];
    for (tol, want) in cases {
        assert_eq!(tolerates(&tol, &t), want, "{tol:?}");
    }
}

#[test]
fn daemon_pods_get_the_default_tolerations_once() {
    let mut spec = k8s_openapi::api::core::v1::PodSpec::default();
    add_daemon_tolerations(&mut spec);
    add_daemon_tolerations(&mut spec);
    let keys: Vec<_> = spec
        .tolerations
        .iter()
        .flatten()
        .map(|t| {
            (
                t.key.clone().unwrap_or_default(),
                t.effect.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(keys.len(), 6);
    assert!(keys.contains(&("node.kubernetes.io/not-ready".into(), "NoExecute".into())));
    assert!(keys.contains(&(
        "node.kubernetes.io/unschedulable".into(),
        "NoSchedule".into()
    )));
    let mut host = k8s_openapi::api::core::v1::PodSpec {
        host_network: Some(true),
        ..Default::default()
    };
    add_daemon_tolerations(&mut host);
    assert!(
        host.tolerations
            .iter()
            .flatten()
            .any(|t| t.key.as_deref() == Some("node.kubernetes.io/network-unavailable"))
    );
}

#[test]
fn node_eligibility() {
    let plain = ds(serde_json::json!({}));
    let n = |labels, taints| node("n1", labels, taints);
    // No constraints: runs.
    assert_eq!(
        node_should_run_daemon_pod(&n(serde_json::json!({}), serde_json::json!([])), &plain),
        (true, true)
    );
    // A NoSchedule taint not tolerated: not scheduled, but a running pod may stay.
    let tainted = n(
        serde_json::json!({}),
        serde_json::json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
    );
    assert_eq!(node_should_run_daemon_pod(&tainted, &plain), (false, true));
    // A NoExecute taint not tolerated: nothing may run.
    let evicting = n(
        serde_json::json!({}),
        serde_json::json!([{"key": "dedicated", "effect": "NoExecute"}]),
    );
    assert_eq!(
        node_should_run_daemon_pod(&evicting, &plain),
        (false, false)
    );
    // Tolerated by the template.
    let tolerant =
        ds(serde_json::json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}));
    assert_eq!(
        node_should_run_daemon_pod(&tainted, &tolerant),
        (true, true)
    );
    assert_eq!(
        node_should_run_daemon_pod(&evicting, &tolerant),
        (true, true)
    );
    // Taints every daemon pod tolerates.
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ] {
        let t = n(
            serde_json::json!({}),
            serde_json::json!([{"key": key, "effect": effect}]),
        );
        assert_eq!(
            node_should_run_daemon_pod(&t, &plain),
            (true, true),
            "{key}"
        );
    }
    // network-unavailable only with host networking.
    let net = n(
        serde_json::json!({}),
        serde_json::json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
    );
    assert_eq!(node_should_run_daemon_pod(&net, &plain), (false, true));
    let hostnet = ds(serde_json::json!({"hostNetwork": true}));
    assert_eq!(node_should_run_daemon_pod(&net, &hostnet), (true, true));
    // PreferNoSchedule is ignored.
    let soft = n(
        serde_json::json!({}),
        serde_json::json!([{"key": "x", "effect": "PreferNoSchedule"}]),
    );
    assert_eq!(node_should_run_daemon_pod(&soft, &plain), (true, true));
    // nodeSelector.
    let sel = ds(serde_json::json!({"nodeSelector": {"disk": "ssd"}}));
    assert_eq!(
        node_should_run_daemon_pod(
            &n(serde_json::json!({"disk": "ssd"}), serde_json::json!([])),
            &sel
        ),
        (true, true)
    );
    assert_eq!(
        node_should_run_daemon_pod(
            &n(serde_json::json!({"disk": "hdd"}), serde_json::json!([])),
            &sel
        ),
        (false, false)
    );
    // Required node affinity: any term; expressions and fields.
    let aff = ds(
        serde_json::json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["special"]}]}
        ]}}}}),
    );
    assert!(
        node_should_run_daemon_pod(
            &n(serde_json::json!({"zone": "b"}), serde_json::json!([])),
            &aff
        )
        .0
    );
    assert!(
        !node_should_run_daemon_pod(
            &n(serde_json::json!({"zone": "c"}), serde_json::json!([])),
            &aff
        )
        .0
    );
    assert!(
        node_should_run_daemon_pod(
            &node("special", serde_json::json!({}), serde_json::json!([])),
            &aff
        )
        .0
    );
    let ops = ds(
        serde_json::json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}, {"key": "gpu", "operator": "DoesNotExist"}]}
        ]}}}}),
    );
    assert!(
        node_should_run_daemon_pod(
            &n(serde_json::json!({"cores": "8"}), serde_json::json!([])),
            &ops
        )
        .0
    );
    assert!(
        !node_should_run_daemon_pod(
            &n(serde_json::json!({"cores": "2"}), serde_json::json!([])),
            &ops
        )
        .0
    );
    assert!(
        !node_should_run_daemon_pod(
            &n(
                serde_json::json!({"cores": "8", "gpu": "1"}),
                serde_json::json!([])
            ),
            &ops
        )
        .0
    );
    // A template nodeName other than the node.
    let named = ds(serde_json::json!({"nodeName": "other"}));
    assert_eq!(
        node_should_run_daemon_pod(&n(serde_json::json!({}), serde_json::json!([])), &named),
        (false, false)
    );
}

#[test]
fn pods_are_pinned_to_their_node_and_labelled() {
    let d = ds(serde_json::json!({"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [{"key": "b", "operator": "Exists"}]}}]
    }}}));
    let t = daemon_pod_template(
        &d.spec.as_ref().expect("spec").template,
        template_generation(&d),
        "h1",
    );
    let labels = t
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    assert_eq!(
        labels.get("pod-template-generation").map(String::as_str),
        Some("3")
    );
    assert_eq!(
        labels.get("controller-revision-hash").map(String::as_str),
        Some("h1")
    );
    let aff = pin_to_node(t.spec.as_ref().and_then(|s| s.affinity.clone()), "n7");
    let na = aff.node_affinity.as_ref().expect("node affinity");
    let terms = &na
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .expect("required")
        .node_selector_terms;
    assert_eq!(terms.len(), 1);
    assert!(
        na.preferred_during_scheduling_ignored_during_execution
            .is_some(),
        "preferred kept"
    );
    let pod = Pod {
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            affinity: Some(aff),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(target_node_name(&pod).as_deref(), Some("n7"));
}

fn dpod(name: &str, node: &str, hash: &str, ready: bool) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "agent", "controller-revision-hash": hash}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
    }))
    .expect("pod")
}

#[test]
fn status_counts_per_node() {
    let d = ds(serde_json::json!({}));
    let nodes: Vec<Arc<Node>> = vec![
        Arc::new(node("a", serde_json::json!({}), serde_json::json!([]))),
        Arc::new(node("b", serde_json::json!({}), serde_json::json!([]))),
        Arc::new(node(
            "c",
            serde_json::json!({}),
            serde_json::json!([{"key": "x", "effect": "NoSchedule"}]),
        )),
    ];
    let pods = vec![dpod("p1", "a", "new", true), dpod("p2", "c", "old", false)];
    let c = compute_counts(&d, &nodes, &pods, "new");
    assert_eq!(
        c,
        Counts {
            desired: 2,
            current: 1,
            misscheduled: 1,
            ready: 1,
            available: 1,
            updated: 1
        }
    );
}

#[test]
fn rolling_plans() {
    let run: HashSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let mut np: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    np.insert("a".into(), vec![dpod("pa", "a", "old", true)]);
    np.insert("b".into(), vec![dpod("pb", "b", "old", true)]);
    np.insert("c".into(), vec![dpod("pc", "c", "old", false)]);
    // maxUnavailable 1: the unavailable old pod is replaced freely and one more is not
    // (the budget is spent by nothing unavailable yet, so one candidate goes too).
    let p = rolling_plan(&np, &run, "new", None, 0, 1, 0);
    assert_eq!(p.delete, vec!["pc".to_string(), "pa".to_string()]);
    assert!(p.create_on.is_empty());
    // A node already updating (new pod not ready) spends the budget.
    np.insert("c".into(), vec![dpod("pc2", "c", "new", false)]);
    let p = rolling_plan(&np, &run, "new", None, 0, 1, 0);
    assert!(p.delete.is_empty(), "{p:?}");
    let p = rolling_plan(&np, &run, "new", None, 0, 2, 0);
    assert_eq!(p.delete, vec!["pa".to_string()]);
    // Surge 1: a new pod is created beside an old one; the old one goes once the new is available.
    np.insert("c".into(), vec![dpod("pc", "c", "old", true)]);
    let p = rolling_plan(&np, &run, "new", None, 1, 0, 0);
    assert_eq!(p.create_on, vec!["a".to_string()]);
    assert!(p.delete.is_empty());
    np.insert(
        "a".into(),
        vec![dpod("pa", "a", "old", true), dpod("pa2", "a", "new", true)],
    );
    let p = rolling_plan(&np, &run, "new", None, 1, 0, 0);
    assert_eq!(p.delete, vec!["pa".to_string()]);
    assert_eq!(p.create_on, vec!["b".to_string()]);
}

#[test]
fn percentages_round_up() {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    assert_eq!(scaled(Some(&IntOrString::String("25%".into())), 3), 1);
    assert_eq!(scaled(Some(&IntOrString::String("50%".into())), 3), 2);
    assert_eq!(scaled(Some(&IntOrString::Int(2)), 3), 2);
    assert_eq!(scaled(None, 3), 0);
}
