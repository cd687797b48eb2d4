//! Cluster-default topology spreading: upstream's DefaultSelector over Services and owners, and
//! the system default constraints' scores (nodes without a zone label still scored).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{ReplicationController, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Value, json};

use super::podtopologyspread::{OwnerLookup, default_selector, score};
use super::tests::{app, cache_of, node, pod, zoned};
use crate::cache::NodeInfo;

#[derive(Default)]
struct Fake {
    services: Vec<Arc<Service>>,
    rcs: Vec<Arc<ReplicationController>>,
    rss: Vec<Arc<ReplicaSet>>,
    sss: Vec<Arc<StatefulSet>>,
}

fn named<K: kube::Resource>(items: &[Arc<K>], ns: &str, name: &str) -> Option<Arc<K>> {
    items
        .iter()
        .find(|o| {
            o.meta().namespace.as_deref() == Some(ns) && o.meta().name.as_deref() == Some(name)
        })
        .cloned()
}

impl OwnerLookup for Fake {
    fn services(&self, namespace: &str) -> Vec<Arc<Service>> {
        self.services
            .iter()
            .filter(|s| s.metadata.namespace.as_deref() == Some(namespace))
            .cloned()
            .collect()
    }
    fn replication_controller(&self, ns: &str, name: &str) -> Option<Arc<ReplicationController>> {
        named(&self.rcs, ns, name)
    }
    fn replica_set(&self, ns: &str, name: &str) -> Option<Arc<ReplicaSet>> {
        named(&self.rss, ns, name)
    }
    fn stateful_set(&self, ns: &str, name: &str) -> Option<Arc<StatefulSet>> {
        named(&self.sss, ns, name)
    }
}

fn obj<K: serde::de::DeserializeOwned>(v: Value) -> Arc<K> {
    Arc::new(serde_json::from_value(v).unwrap())
}

fn service(name: &str, ns: &str, selector: Option<Value>) -> Arc<Service> {
    let mut v = json!({"metadata": {"name": name, "namespace": ns}, "spec": {}});
    if let Some(s) = selector {
        v["spec"]["selector"] = s;
    }
    obj(v)
}

fn owned(kind: &str, api_version: &str, name: &str, controller: bool) -> Value {
    json!({"metadata": {"labels": {"app": "web", "tier": "fe"}, "ownerReferences": [{
        "apiVersion": api_version, "kind": kind, "name": name, "uid": "u", "controller": controller}]}})
}

fn sel(v: Value) -> LabelSelector {
    serde_json::from_value(v).unwrap()
}

#[test]
fn the_default_selector_combines_services_and_the_controller() {
    let fake = Fake {
        services: vec![
            service("web", "ns", Some(json!({"app": "web"}))),
            service("db", "ns", Some(json!({"app": "db"}))),
            // No selector: selects nothing, so it adds nothing.
            service("headless", "ns", None),
            service("elsewhere", "other", Some(json!({"tier": "fe"}))),
        ],
        rcs: vec![obj(json!({"metadata": {"name": "rc", "namespace": "ns"},
            "spec": {"selector": {"tier": "fe"}}}))],
        rss: vec![obj(json!({"metadata": {"name": "rs", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"tier": "fe"},
                "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}}}))],
        sss: vec![obj(json!({"metadata": {"name": "ss", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"tier": "fe"}}, "serviceName": "s",
                "template": {}}}))],
    };
    let rs_pod = pod("p", owned("ReplicaSet", "apps/v1", "rs", true));
    assert_eq!(
        default_selector(&rs_pod, &fake),
        Some(sel(json!({"matchLabels": {"app": "web", "tier": "fe"},
            "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})))
    );
    let rc_pod = pod("p", owned("ReplicationController", "v1", "rc", true));
    assert_eq!(
        default_selector(&rc_pod, &fake),
        Some(sel(json!({"matchLabels": {"app": "web", "tier": "fe"}})))
    );
    let ss_pod = pod("p", owned("StatefulSet", "apps/v1", "ss", true));
    assert_eq!(
        default_selector(&ss_pod, &fake),
        Some(sel(json!({"matchLabels": {"app": "web", "tier": "fe"}})))
    );
    // Owners that are not the controller, of other kinds, or gone add nothing: the Service is left.
    let only_service = Some(sel(json!({"matchLabels": {"app": "web"}})));
    for v in [
        owned("ReplicaSet", "apps/v1", "rs", false),
        owned("Deployment", "apps/v1", "rs", true),
        owned("ReplicaSet", "apps/v1", "gone", true),
        owned("ReplicaSet", "extensions/v1beta1", "rs", true),
    ] {
        assert_eq!(default_selector(&pod("p", v), &fake), only_service);
    }
    // Belonging to nothing: no default spreading.
    assert_eq!(default_selector(&app("p", "cache"), &fake), None);
    // Own constraints replace the defaults.
    let mut v = owned("ReplicaSet", "apps/v1", "rs", true);
    v["spec"] = json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
        "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]});
    assert_eq!(default_selector(&pod("p", v), &fake), None);
}

#[test]
fn the_system_defaults_spread_by_hostname_and_zone_and_score_zoneless_nodes() {
    let nodes = [
        node(
            "n1",
            json!({"metadata": {"labels": {"topology.kubernetes.io/zone": "a"}}}),
        ),
        node(
            "n2",
            json!({"metadata": {"labels": {"topology.kubernetes.io/zone": "b"}}}),
        ),
        node("n3", json!({})),
    ];
    let c = cache_of(
        &nodes,
        &[
            ("n1", app("w1", "web")),
            ("n1", app("w2", "web")),
            ("n2", app("d1", "db")),
        ],
    );
    let feasible: Vec<&NodeInfo> = c.node_infos().collect();
    let p = app("p", "web");
    let web = sel(json!({"matchLabels": {"app": "web"}}));
    // Weights ln(3 + 2) for 3 hosts and 3 zone values ("a", "b" and n3's missing one).
    // Raw: n1 = 2w + 2 + 2w + 4 = 12, n2 = 2 + 4 = 6, n3 = 2 (no zone term);
    // normalised 100 * (12 + 2 - s) / 12.
    assert_eq!(score(&c, &p, &feasible, Some(&web)).unwrap(), [16, 66, 100]);
    // Without a default selector the pod is not spread at all.
    assert_eq!(score(&c, &p, &feasible, None), None);
    // With own constraints, nodes missing the key are ignored (score 0).
    let own = pod(
        "p",
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
    );
    let s = score(&c, &own, &feasible, Some(&web)).unwrap();
    assert_eq!(s[2], 0, "{s:?}");
    assert!(s[1] > s[0], "{s:?}");
    // Three empty zoneless nodes: all equal.
    let bare = [zoned("x", None), zoned("y", None), zoned("z", None)];
    let c = cache_of(&bare, &[]);
    let feasible: Vec<&NodeInfo> = c.node_infos().collect();
    assert_eq!(
        score(&c, &p, &feasible, Some(&web)).unwrap(),
        [100, 100, 100]
    );
}

#[test]
fn default_spreading_places_a_replica_set_evenly() {
    // Three equal nodes: 6 replicas go 2/2/2, through the whole scoring.
    let nodes = [zoned("a", None), zoned("b", None), zoned("c", None)];
    let mut c = cache_of(&nodes, &[]);
    let web = sel(json!({"matchLabels": {"app": "web"}}));
    let none = |_: &str| None;
    let mut rng = super::tests::rng();
    // A big pod elsewhere makes node "a" the least allocated one without spreading.
    c.set_bound_pod(pod("big-b", super::tests::cpu("1")), "b");
    c.set_bound_pod(pod("big-c", super::tests::cpu("1")), "c");
    for i in 0..6 {
        let p = crate::cache::PodInfo::new(app(&format!("w{i}"), "web"));
        let n = crate::framework::find_node(&c, &p, &none, Some(&web), &mut rng).unwrap();
        c.assume(Arc::new(p), &n);
    }
    let per_node: Vec<usize> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            c.nodes[*n]
                .pods
                .iter()
                .filter(|p| p.key.starts_with("ns/w"))
                .count()
        })
        .collect();
    assert_eq!(per_node, [2, 2, 2]);
    // Without the defaults all six stack on the emptiest node.
    let mut c2 = cache_of(&nodes, &[]);
    c2.set_bound_pod(pod("big-b", super::tests::cpu("1")), "b");
    c2.set_bound_pod(pod("big-c", super::tests::cpu("1")), "c");
    for i in 0..6 {
        let p = crate::cache::PodInfo::new(app(&format!("w{i}"), "web"));
        let n = crate::framework::find_node(&c2, &p, &none, None, &mut rng).unwrap();
        c2.assume(Arc::new(p), &n);
    }
    assert_eq!(c2.nodes["a"].pods.len(), 6);
}
