//! DefaultPreemption's choices: PodDisruptionBudgets first (fewest violations, violating pods
//! reprieved first), then upstream's tie-breakers; eligibility on the nominated node.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::*;
use crate::plugins::tests::{cache_of, cpu, merge, node, pod, rng};
use crate::plugins::{prefilter, run_filters};

fn prio(name: &str, c: &str, p: i32, extra: Value) -> Arc<Pod> {
    let mut v = cpu(c);
    merge(&mut v, json!({"spec": {"priority": p}}));
    merge(&mut v, extra);
    pod(name, v)
}

fn labelled(app: &str) -> Value {
    json!({"metadata": {"labels": {"app": app}}})
}

fn started(at: &str) -> Value {
    json!({"status": {"startTime": at}})
}

fn small(name: &str) -> Arc<k8s_openapi::api::core::v1::Node> {
    node(
        name,
        json!({"status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "10"}}}),
    )
}

fn pdb(app: &str, allowed: i32, disrupted: &[&str]) -> Arc<PodDisruptionBudget> {
    let disrupted: serde_json::Map<String, Value> = disrupted
        .iter()
        .map(|n| (n.to_string(), json!("2026-11-27T10:00:00Z")))
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("pdb-{app}"), "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1,
                "expectedPods": 1, "disruptedPods": disrupted}
        }))
        .unwrap(),
    )
}

fn statuses(c: &Cache, p: &PodInfo) -> Vec<(String, Status)> {
    let none = |_: &str| None;
    let state = prefilter(c, p, &none);
    c.node_infos()
        .filter_map(|ni| {
            run_filters(&state, p, ni, None)
                .err()
                .map(|s| (ni.name().to_string(), s))
        })
        .collect()
}

fn run(c: &mut Cache, p: &PodInfo, pdbs: &[Arc<PodDisruptionBudget>]) -> Result<Plan, String> {
    let none = |_: &str| None;
    let st = statuses(c, p);
    preempt(c, p, &st, &none, pdbs, &mut rng())
}

fn keys(plan: &Plan) -> Vec<String> {
    plan.victims.iter().map(|v| v.key.clone()).collect()
}

#[test]
fn the_node_with_fewer_budget_violations_is_chosen() {
    let mut c = cache_of(
        &[small("n1"), small("n2")],
        &[
            ("n1", prio("a", "2", 1, labelled("a"))),
            ("n2", prio("b", "2", 1, labelled("b"))),
        ],
    );
    let p = PodInfo::new(prio("p", "1", 10, json!({})));
    // "a" is protected: n2 is chosen although everything else ties.
    let plan = run(&mut c, &p, &[pdb("a", 0, &[])]).unwrap();
    assert_eq!((plan.node.as_str(), plan.pdb_violations), ("n2", 0));
    assert_eq!(keys(&plan), ["ns/b"]);
    let plan = run(&mut c, &p, &[pdb("b", 0, &[])]).unwrap();
    assert_eq!(plan.node, "n1");
    // Both protected: one violation either way, and the node is still preempted.
    let plan = run(&mut c, &p, &[pdb("a", 0, &[]), pdb("b", 0, &[])]).unwrap();
    assert_eq!(plan.pdb_violations, 1);
    // A budget with room, or one that already counts the pod as disrupted, is no violation.
    for budget in [pdb("a", 1, &[]), pdb("a", 0, &["a"])] {
        let plan = run(&mut c, &p, &[budget, pdb("b", 0, &[])]).unwrap();
        assert_eq!((plan.node.as_str(), plan.pdb_violations), ("n1", 0));
    }
    // Another namespace's budget, or an empty selector, protects nothing.
    let mut other: PodDisruptionBudget = (*pdb("a", 0, &[])).clone();
    other.metadata.namespace = Some("elsewhere".into());
    let mut empty: PodDisruptionBudget = (*pdb("b", 0, &[])).clone();
    empty.spec.as_mut().unwrap().selector = Some(Default::default());
    let plan = run(&mut c, &p, &[Arc::new(other), Arc::new(empty)]).unwrap();
    assert_eq!(plan.pdb_violations, 0);
}

#[test]
fn budget_violating_pods_are_reprieved_first() {
    // One of the two must go. "x" is less important than "y", so without budgets it is the
    // victim; with "x" protected, "y" goes instead.
    let pods = [
        ("n1", prio("x", "1", 1, labelled("x"))),
        ("n1", prio("y", "1", 5, labelled("y"))),
    ];
    let p = PodInfo::new(prio("p", "1", 10, json!({})));
    let mut c = cache_of(&[small("n1")], &pods);
    assert_eq!(keys(&run(&mut c, &p, &[]).unwrap()), ["ns/x"]);
    let plan = run(&mut c, &p, &[pdb("x", 0, &[])]).unwrap();
    assert_eq!((keys(&plan), plan.pdb_violations), (vec!["ns/y".into()], 0));
    // When both must go, the victims are still listed most important first.
    let big = PodInfo::new(prio("p", "2", 10, json!({})));
    let plan = run(&mut c, &big, &[pdb("x", 0, &[])]).unwrap();
    assert_eq!(
        (keys(&plan), plan.pdb_violations),
        (vec!["ns/y".into(), "ns/x".into()], 1)
    );
    assert_eq!(c.nodes["n1"].pods.len(), 2, "the cache is restored");
}

#[test]
fn ties_are_broken_as_upstream() {
    let p = PodInfo::new(prio("p", "2", 10, json!({})));
    // Sum of priorities shifted by 2^31: two pods of -5 weigh more than one, although the
    // plain sum (-10) is lower.
    let mut c = cache_of(
        &[small("n1"), small("n2")],
        &[
            ("n1", prio("a1", "1", -5, json!({}))),
            ("n1", prio("a2", "1", -5, json!({}))),
            ("n2", prio("b", "2", -5, json!({}))),
        ],
    );
    assert_eq!(run(&mut c, &p, &[]).unwrap().node, "n2");
    // Equal otherwise: the node whose most important victims started last.
    let mut c = cache_of(
        &[small("n1"), small("n2")],
        &[
            ("n1", prio("old", "2", 1, started("2026-11-27T08:00:00Z"))),
            ("n2", prio("new", "2", 1, started("2026-11-27T09:00:00Z"))),
        ],
    );
    assert_eq!(run(&mut c, &p, &[]).unwrap().node, "n2");
    // Lowest highest-priority victim beats fewer victims.
    let mut c = cache_of(
        &[small("n1"), small("n2")],
        &[
            ("n1", prio("a1", "1", 1, json!({}))),
            ("n1", prio("a2", "1", 1, json!({}))),
            ("n2", prio("b", "2", 3, json!({}))),
        ],
    );
    let plan = run(&mut c, &p, &[]).unwrap();
    assert_eq!((plan.node.as_str(), plan.victims.len()), ("n1", 2));
}

#[test]
fn a_pod_waits_while_its_preemption_victims_terminate() {
    let terminating = |reason: &str| {
        prio(
            "v",
            "2",
            1,
            json!({"metadata": {"deletionTimestamp": "2026-11-27T10:00:00Z"},
                "status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": reason}]}}),
        )
    };
    let nominated = |name: &str| {
        PodInfo::new(prio(
            name,
            "1",
            10,
            json!({"status": {"nominatedNodeName": "n1"}}),
        ))
    };
    let mut c = cache_of(
        &[small("n1")],
        &[("n1", terminating("PreemptionByScheduler"))],
    );
    assert_eq!(
        run(&mut c, &nominated("p"), &[]).unwrap_err(),
        TERMINATING_ON_NOMINATED
    );
    // Terminating for another reason: preemption goes ahead.
    let mut c = cache_of(
        &[small("n1")],
        &[("n1", terminating("DeletionByTaintManager"))],
    );
    assert_eq!(run(&mut c, &nominated("p"), &[]).unwrap().node, "n1");
    // A nominated node that is gone does not hold the pod back.
    let mut c = cache_of(&[small("n2")], &[("n2", prio("w", "2", 1, json!({})))]);
    assert_eq!(run(&mut c, &nominated("p"), &[]).unwrap().node, "n2");
}

#[test]
fn lower_priority_nominations_on_the_chosen_node_are_cleared() {
    let mut c = cache_of(&[small("n1")], &[("n1", prio("v", "2", 1, json!({})))]);
    c.nominate(
        Arc::new(PodInfo::new(prio("lesser", "1", 5, json!({})))),
        "n1",
    );
    c.nominate(
        Arc::new(PodInfo::new(prio("greater", "1", 50, json!({})))),
        "n1",
    );
    let p = PodInfo::new(prio("p", "1", 10, json!({})));
    let plan = run(&mut c, &p, &[]).unwrap();
    let cleared: Vec<_> = plan
        .clear_nominations
        .iter()
        .map(|p| p.key.clone())
        .collect();
    assert_eq!(cleared, ["ns/lesser"]);
}
