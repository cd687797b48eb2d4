//! Table tests of every filter and score on crafted nodes and pods (upstream's cases).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

use super::*;
use crate::cache::{Cache, PodInfo};

pub fn node(name: &str, extra: Value) -> Arc<Node> {
    let mut n = json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
    merge(&mut n, extra);
    Arc::new(serde_json::from_value(n).unwrap())
}

pub fn pod(name: &str, extra: Value) -> Arc<Pod> {
    let mut p = json!({"metadata": {"name": name, "namespace": "ns", "labels": {}},
        "spec": {"containers": [{"name": "c"}]}});
    merge(&mut p, extra);
    Arc::new(serde_json::from_value(p).unwrap())
}

pub fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

pub fn cpu(c: &str) -> Value {
    json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": c}}}]}})
}

fn info(p: Arc<Pod>) -> PodInfo {
    PodInfo::new(p)
}

fn ni(n: Arc<Node>, pods: &[Arc<Pod>]) -> NodeInfo {
    let mut ni = NodeInfo::new(n);
    for p in pods {
        ni.add_pod(Arc::new(PodInfo::new(p.clone())));
    }
    ni
}

fn reasons(v: Verdict) -> Vec<String> {
    match v {
        Ok(()) => vec![],
        Err(s) => s.reasons.iter().map(|r| r.to_string()).collect(),
    }
}

#[test]
fn node_resources_fit() {
    let n = node(
        "n",
        json!({"status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "3",
        "example.com/gpu": "1"}}}),
    );
    let busy = pod("busy", cpu("1500m"));
    let cases: Vec<(&str, Value, &[Arc<Pod>], Vec<&str>)> = vec![
        (
            "zero requests fit anywhere with room for a pod",
            json!({}),
            &[],
            vec![],
        ),
        ("fits", cpu("500m"), std::slice::from_ref(&busy), vec![]),
        (
            "insufficient cpu",
            cpu("600m"),
            std::slice::from_ref(&busy),
            vec!["Insufficient cpu"],
        ),
        (
            "init container bigger than app containers",
            json!({"spec": {"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]}}),
            &[],
            vec!["Insufficient cpu"],
        ),
        (
            "overhead counts",
            json!({"spec": {"overhead": {"cpu": "600m"}, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}),
            std::slice::from_ref(&busy),
            vec!["Insufficient cpu"],
        ),
        (
            "cpu and memory both",
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "2Gi"}}}]}}),
            &[],
            vec!["Insufficient cpu", "Insufficient memory"],
        ),
        (
            "extended resources",
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "2"}}}]}}),
            &[],
            vec!["Insufficient example.com/gpu"],
        ),
        (
            "unknown extended resource",
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"example.com/fpga": "1"}}}]}}),
            &[],
            vec!["Insufficient example.com/fpga"],
        ),
    ];
    for (what, p, existing, want) in cases {
        let got = reasons(fit(&info(pod("p", p)), &ni(n.clone(), existing), None));
        assert_eq!(got, want, "{what}");
    }
    // The pod count, even for a pod requesting nothing.
    let full = ni(
        n.clone(),
        &[
            pod("a", json!({})),
            pod("b", json!({})),
            pod("c", json!({})),
        ],
    );
    assert_eq!(
        reasons(fit(&info(pod("p", json!({}))), &full, None)),
        ["Too many pods"]
    );
    // Room held for a nominated pod.
    let held = crate::resources::Resources {
        milli_cpu: 1000,
        pods: 1,
        ..Default::default()
    };
    assert_eq!(
        reasons(fit(&info(pod("p", cpu("1500m"))), &ni(n, &[]), Some(&held))),
        ["Insufficient cpu"]
    );
}

#[test]
fn taints_and_unschedulable() {
    let tainted = node(
        "n",
        json!({"spec": {"taints": [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
        {"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]}}),
    );
    let p = |tol: Value| pod("p", json!({"spec": {"tolerations": tol}}));
    assert_eq!(
        reasons(taint_toleration(&p(json!([])), &tainted)),
        ["node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"]
    );
    let ok = [
        json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]),
        json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": ""}]),
        json!([{"operator": "Exists"}]),
    ];
    for t in ok {
        assert_eq!(taint_toleration(&p(t.clone()), &tainted), Ok(()), "{t}");
    }
    let bad = [
        json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "x"}]),
        json!([{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoExecute"}]),
    ];
    for t in bad {
        assert!(taint_toleration(&p(t.clone()), &tainted).is_err(), "{t}");
    }
    let noexec = node(
        "n",
        json!({"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]}}),
    );
    assert_eq!(
        reasons(taint_toleration(&p(json!([])), &noexec)),
        ["node(s) had untolerated taint {k: v}"]
    );
    // PreferNoSchedule only scores.
    assert_eq!(intolerable_prefer_no_schedule(&p(json!([])), &tainted), 1);
    assert_eq!(
        intolerable_prefer_no_schedule(
            &p(json!([{"key": "soft", "operator": "Exists", "effect": "PreferNoSchedule"}])),
            &tainted
        ),
        0
    );
    assert_eq!(
        intolerable_prefer_no_schedule(
            &p(json!([{"key": "soft", "operator": "Exists", "effect": "NoSchedule"}])),
            &tainted
        ),
        1
    );
    let cordoned = node("n", json!({"spec": {"unschedulable": true}}));
    assert_eq!(
        reasons(node_unschedulable(&p(json!([])), &cordoned)),
        ["node(s) were unschedulable"]
    );
    assert_eq!(
        node_unschedulable(
            &p(
                json!([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}])
            ),
            &cordoned
        ),
        Ok(())
    );
}

#[test]
fn node_name_affinity_and_ports() {
    let n = node(
        "n1",
        json!({"metadata": {"labels": {"zone": "a", "disk": "ssd"}}}),
    );
    assert_eq!(
        node_name(&pod("p", json!({"spec": {"nodeName": "n1"}})), &n),
        Ok(())
    );
    assert_eq!(
        reasons(node_name(
            &pod("p", json!({"spec": {"nodeName": "n2"}})),
            &n
        )),
        ["node(s) didn't match the requested node name"]
    );
    let aff = |a: Value| pod("p", json!({"spec": {"affinity": {"nodeAffinity": a}}}));
    let cases = [
        (
            pod("p", json!({"spec": {"nodeSelector": {"zone": "a"}}})),
            true,
        ),
        (
            pod("p", json!({"spec": {"nodeSelector": {"zone": "b"}}})),
            false,
        ),
        (
            aff(
                json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
            {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]}}),
            ),
            true,
        ),
        (
            aff(
                json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}),
            ),
            false,
        ),
        (
            aff(
                json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}),
            ),
            false,
        ),
    ];
    for (p, want) in cases {
        let got = node_affinity(&p, &n);
        assert_eq!(got.is_ok(), want, "{:?}", p.spec.as_ref().unwrap().affinity);
        if !want {
            assert_eq!(
                reasons(got),
                ["node(s) didn't match Pod's node affinity/selector"]
            );
        }
    }
    let preferred = aff(json!({"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"weight": 3, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}}]}));
    assert_eq!(node_affinity_score(&preferred, &n), 5);
    // Host ports.
    let hp = |port: i64, ip: &str, proto: &str| {
        pod(
            "p",
            json!({"spec": {"containers": [{"name": "c",
        "ports": [{"containerPort": 80, "hostPort": port, "hostIP": ip, "protocol": proto}]}]}}),
        )
    };
    let used = ni(n.clone(), &[hp(8080, "", "TCP")]);
    assert_eq!(
        reasons(node_ports(&info(hp(8080, "10.0.0.1", "TCP")), &used)),
        [ERR_NODE_PORTS]
    );
    assert_eq!(node_ports(&info(hp(8080, "", "UDP")), &used), Ok(()));
    assert_eq!(node_ports(&info(hp(8081, "", "TCP")), &used), Ok(()));
    let specific = ni(n, &[hp(8080, "10.0.0.1", "TCP")]);
    assert_eq!(
        node_ports(&info(hp(8080, "10.0.0.2", "TCP")), &specific),
        Ok(())
    );
}

#[test]
fn resource_scores() {
    // Upstream's LeastAllocated example: node 4000m / 10000 memory, pod 3000m / 5000.
    let n = node(
        "n",
        json!({"status": {"allocatable": {"cpu": "4", "memory": "10000", "pods": "10"}}}),
    );
    let p = info(pod(
        "p",
        json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "5000"}}}]}}),
    ));
    let empty = ni(n.clone(), &[]);
    assert_eq!(least_allocated(&p, &empty), (25 + 50) / 2);
    // Balanced: fractions 0.75 and 0.5 -> std 0.125 -> 87.
    assert_eq!(balanced_allocation(&p, &empty), Some(87));
    // Zero-request pods count the non-zero defaults for LeastAllocated and skip Balanced.
    let z = info(pod("z", json!({})));
    assert_eq!(z.non_zero_cpu, 100);
    assert_eq!(balanced_allocation(&z, &empty), None);
    let big = node(
        "b",
        json!({"status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}),
    );
    // (1000-100)*100/1000 = 90 ; (1Gi-200Mi)*100/1Gi = 80
    assert_eq!(least_allocated(&z, &ni(big, &[])), 85);
    // Over capacity scores 0.
    let tiny = node(
        "t",
        json!({"status": {"allocatable": {"cpu": "1", "memory": "1000", "pods": "10"}}}),
    );
    assert_eq!(least_allocated(&p, &ni(tiny, &[])), 0);
    let mut s = vec![0, 2, 4];
    default_normalize(&mut s, false);
    assert_eq!(s, [0, 50, 100]);
    let mut s = vec![0, 1, 2];
    default_normalize(&mut s, true);
    assert_eq!(s, [100, 50, 0]);
    let mut s = vec![0, 0];
    default_normalize(&mut s, true);
    assert_eq!(s, [100, 100]);
}

pub fn cache_of(nodes: &[Arc<Node>], pods: &[(&str, Arc<Pod>)]) -> Cache {
    let mut c = Cache::default();
    for n in nodes {
        c.set_node(n.clone());
    }
    for (n, p) in pods {
        c.set_bound_pod(p.clone(), n);
    }
    c
}

pub fn zoned(name: &str, zone: Option<&str>) -> Arc<Node> {
    match zone {
        Some(z) => node(name, json!({"metadata": {"labels": {"zone": z}}})),
        None => node(name, json!({})),
    }
}

pub fn app(name: &str, app: &str) -> Arc<Pod> {
    pod(name, json!({"metadata": {"labels": {"app": app}}}))
}

fn filter_all(c: &Cache, p: &Arc<Pod>) -> Vec<(String, Vec<String>)> {
    let pi = info(p.clone());
    let none = |_: &str| None;
    let state = prefilter(c, &pi, &none);
    c.node_infos()
        .map(|ni| {
            (
                ni.name().to_string(),
                reasons(run_filters(&state, &pi, ni, None)),
            )
        })
        .collect()
}

#[test]
fn pod_topology_spread_filter() {
    let nodes = [
        zoned("a1", Some("a")),
        zoned("a2", Some("a")),
        zoned("b1", Some("b")),
        zoned("x", None),
    ];
    let c = cache_of(
        &nodes,
        &[
            ("a1", app("e1", "web")),
            ("a2", app("e2", "web")),
            ("b1", app("e3", "db")),
        ],
    );
    let spread = |skew: i64, extra: Value| {
        let mut con = json!({"maxSkew": skew, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}});
        merge(&mut con, extra);
        pod(
            "p",
            json!({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [con]}}),
        )
    };
    let got = filter_all(&c, &spread(1, json!({})));
    assert_eq!(got[0].1, [podtopologyspread::ERR_CONSTRAINTS]);
    assert_eq!(got[1].1, [podtopologyspread::ERR_CONSTRAINTS]);
    assert!(got[2].1.is_empty());
    assert_eq!(got[3].1, [podtopologyspread::ERR_MISSING_LABEL]);
    // maxSkew 3 allows zone a.
    assert!(filter_all(&c, &spread(3, json!({})))[0].1.is_empty());
    // minDomains above the domain count: the global minimum is 0, so zone b (0 + 1) fits with
    // maxSkew 1 but zone a (2 + 1) does not.
    let got = filter_all(&c, &spread(2, json!({"minDomains": 3})));
    assert_eq!(got[0].1, [podtopologyspread::ERR_CONSTRAINTS]);
    assert!(got[2].1.is_empty());
    // Empty topology key values: a node lacking the key is unresolvable, not counted.
    let hostname = pod(
        "p",
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
    );
    let got = filter_all(&c, &hostname);
    assert_eq!(got[0].1, [podtopologyspread::ERR_CONSTRAINTS]);
    assert!(got[2].1.is_empty() && got[3].1.is_empty());
    // A pod not matching its own selector does not count itself.
    let other = pod(
        "p",
        json!({"spec": {"topologySpreadConstraints": [
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
    );
    assert!(filter_all(&c, &other)[0].1.is_empty());
}

#[test]
fn pod_topology_spread_score() {
    let nodes = [zoned("a1", Some("a")), zoned("b1", Some("b"))];
    let c = cache_of(
        &nodes,
        &[("a1", app("e1", "web")), ("a1", app("e2", "web"))],
    );
    let p = pod(
        "p",
        json!({"spec": {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
    );
    let feasible: Vec<&NodeInfo> = c.node_infos().collect();
    let s = podtopologyspread::score(&c, &p, &feasible, None).unwrap();
    assert!(s[1] > s[0], "{s:?}");
    assert_eq!(s[1], 100);
}

#[test]
fn inter_pod_affinity_filter() {
    let nodes = [
        zoned("a1", Some("a")),
        zoned("b1", Some("b")),
        zoned("x", None),
    ];
    let c = cache_of(&nodes, &[("a1", app("db", "db"))]);
    let with = |kind: &str, app: &str, key: &str| {
        pod(
            "p",
            json!({"metadata": {"labels": {"app": "web"}}, "spec": {"affinity": {kind: {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}}}),
        )
    };
    let got = filter_all(&c, &with("podAffinity", "db", "zone"));
    assert!(got[0].1.is_empty());
    assert_eq!(got[1].1, [interpodaffinity::ERR_AFFINITY]);
    assert_eq!(got[2].1, [interpodaffinity::ERR_AFFINITY]);
    let got = filter_all(&c, &with("podAntiAffinity", "db", "zone"));
    assert_eq!(got[0].1, [interpodaffinity::ERR_ANTI_AFFINITY]);
    assert!(got[1].1.is_empty() && got[2].1.is_empty());
    // The first pod of a group with affinity to itself may go anywhere with the key.
    let got = filter_all(&c, &with("podAffinity", "web", "zone"));
    assert!(got[0].1.is_empty() && got[1].1.is_empty());
    assert_eq!(got[2].1, [interpodaffinity::ERR_AFFINITY]);
    // Other namespaces' pods do not match unless named.
    let other_ns = pod(
        "p",
        json!({"spec": {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone", "namespaces": ["elsewhere"]}]}}}}),
    );
    assert!(filter_all(&c, &other_ns)[0].1.is_empty());
    // An existing pod's anti-affinity keeps the incoming pod out of its domain.
    let guard = pod(
        "guard",
        json!({"spec": {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}}}),
    );
    let c = cache_of(&nodes, &[("b1", guard)]);
    let got = filter_all(&c, &app("p", "web"));
    assert!(got[0].1.is_empty());
    assert_eq!(got[1].1, [interpodaffinity::ERR_EXISTING_ANTI_AFFINITY]);
    assert!(filter_all(&c, &app("p", "db"))[1].1.is_empty());
}

#[test]
fn inter_pod_affinity_score() {
    let nodes = [zoned("a1", Some("a")), zoned("b1", Some("b"))];
    let c = cache_of(&nodes, &[("a1", app("db", "db"))]);
    let p = pod(
        "p",
        json!({"spec": {"affinity": {"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm":
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}}]}}}}),
    );
    let feasible: Vec<&NodeInfo> = c.node_infos().collect();
    let none = |_: &str| None;
    assert_eq!(
        interpodaffinity::score(&c, &p, &feasible, &none).unwrap(),
        [100, 0]
    );
    let anti = pod(
        "p",
        json!({"spec": {"affinity": {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm":
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}}]}}}}),
    );
    assert_eq!(
        interpodaffinity::score(&c, &anti, &feasible, &none).unwrap(),
        [0, 100]
    );
}

#[test]
fn preemption_picks_lowest_priority_victims() {
    let n1 = node(
        "n1",
        json!({"status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "10"}}}),
    );
    let n2 = node(
        "n2",
        json!({"status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "10"}}}),
    );
    let prio = |name: &str, c: &str, p: i32| {
        let mut v = cpu(c);
        merge(&mut v, json!({"spec": {"priority": p}}));
        pod(name, v)
    };
    let mut c = cache_of(
        &[n1, n2],
        &[
            ("n1", prio("low", "1", 1)),
            ("n1", prio("mid", "1", 5)),
            ("n2", prio("high", "2", 50)),
        ],
    );
    let p = info(prio("p", "1", 10));
    let none = |_: &str| None;
    let state = prefilter(&c, &p, &none);
    let statuses: Vec<_> = c
        .node_infos()
        .map(|ni| {
            (
                ni.name().to_string(),
                run_filters(&state, &p, ni, None).unwrap_err(),
            )
        })
        .collect();
    let plan = crate::preemption::preempt(&mut c, &p, &statuses, &none, &[], &mut rng()).unwrap();
    assert_eq!(plan.node, "n1");
    let victims: Vec<_> = plan.victims.iter().map(|v| v.key.clone()).collect();
    assert_eq!(victims, ["ns/low"]);
    assert_eq!(c.nodes["n1"].pods.len(), 2, "the cache is restored");
    // Nothing of lower priority anywhere.
    let lowly = info(prio("q", "1", 0));
    let msg =
        crate::preemption::preempt(&mut c, &lowly, &statuses, &none, &[], &mut rng()).unwrap_err();
    assert_eq!(
        msg,
        "0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
    let mut never = (*prio("r", "1", 10)).clone();
    never.spec.as_mut().unwrap().preemption_policy = Some("Never".into());
    let msg = crate::preemption::preempt(
        &mut c,
        &info(Arc::new(never)),
        &statuses,
        &none,
        &[],
        &mut rng(),
    )
    .unwrap_err();
    assert_eq!(msg, crate::preemption::POLICY_NEVER);
}

pub fn rng() -> crate::framework::Rng {
    crate::framework::Rng::new(7)
}
