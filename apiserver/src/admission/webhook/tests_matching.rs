//! Table tests for rule, namespaceSelector and objectSelector matching.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::config::parse_configuration;
use super::matching::should_call;
use super::*;

fn attrs(op: Operation, group: &str, resource: &str, sub: &str, ns: &str) -> AdmissionAttributes {
    AdmissionAttributes {
        operation: op,
        group: group.into(),
        version: "v1".into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: ns.into(),
        namespace_labels: Some(BTreeMap::from([("env".to_string(), "prod".to_string())])),
        ..Default::default()
    }
}

fn rule(v: Value) -> Rule {
    let cfg = json!({"metadata": {"name": "c"}, "webhooks": [{"name": "w", "rules": [v],
        "clientConfig": {"url": "https://x"}}]});
    parse_configuration(&cfg, false, &[])
        .remove(0)
        .rules
        .remove(0)
}

#[test]
fn rules_table() {
    use Operation::*;
    let pods = json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]});
    let cases: Vec<(Value, AdmissionAttributes, bool)> = vec![
        (pods.clone(), attrs(Create, "", "pods", "", "ns"), true),
        (pods.clone(), attrs(Update, "", "pods", "", "ns"), false),
        (
            pods.clone(),
            attrs(Create, "", "pods", "status", "ns"),
            false,
        ),
        (pods.clone(), attrs(Create, "apps", "pods", "", "ns"), false),
        (pods.clone(), attrs(Create, "", "services", "", "ns"), false),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}),
            attrs(Delete, "apps", "deployments", "", "ns"),
            true,
        ),
        // `*` alone does not cover subresources; `*/*` does.
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}),
            attrs(Update, "", "pods", "status", "ns"),
            false,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}),
            attrs(Update, "", "pods", "status", "ns"),
            true,
        ),
        (
            json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"]}),
            attrs(Update, "", "pods", "status", "ns"),
            true,
        ),
        (
            json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/*"]}),
            attrs(Update, "", "pods", "ephemeralcontainers", "ns"),
            true,
        ),
        // As upstream's matcher: `pods/*` also matches pods itself (the sub part is a wildcard).
        (
            json!({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/*"]}),
            attrs(Update, "", "pods", "", "ns"),
            true,
        ),
        (
            json!({"operations": ["UPDATE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/scale"]}),
            attrs(Update, "apps", "deployments", "scale", "ns"),
            true,
        ),
        (
            json!({"operations": ["CONNECT"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/exec"]}),
            attrs(Connect, "", "pods", "exec", "ns"),
            true,
        ),
        (
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v2"], "resources": ["pods"]}),
            attrs(Create, "", "pods", "", "ns"),
            false,
        ),
        // Scope.
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
            attrs(Create, "", "pods", "", "ns"),
            true,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
            attrs(Create, "", "nodes", "", ""),
            false,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced"}),
            attrs(Update, "", "namespaces", "", "team-a"),
            false,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
            attrs(Update, "", "namespaces", "", "team-a"),
            true,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
            attrs(Create, "", "nodes", "", ""),
            true,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}),
            attrs(Create, "", "pods", "", "ns"),
            false,
        ),
        (
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Bogus"}),
            attrs(Create, "", "pods", "", "ns"),
            false,
        ),
    ];
    for (i, (r, a, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            rule_matches(&rule(r.clone()), &a),
            want,
            "case {i}: {r} vs {a:?}"
        );
    }
}

fn webhook(extra: Value) -> Webhook {
    let mut h = json!({"name": "w", "clientConfig": {"url": "https://x"},
        "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]});
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    parse_configuration(
        &json!({"metadata": {"name": "c"}, "webhooks": [h]}),
        false,
        &[],
    )
    .remove(0)
}

fn labeled(labels: Value) -> Value {
    json!({"metadata": {"name": "o", "labels": labels}})
}

#[test]
fn namespace_selector_table() {
    use Operation::*;
    let prod = webhook(json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}));
    let not_prod = webhook(json!({"namespaceSelector": {"matchExpressions": [
        {"key": "env", "operator": "NotIn", "values": ["prod"]}]}}));
    let obj = labeled(json!({}));
    // Namespaced object in a prod namespace.
    let a = attrs(Create, "", "pods", "", "ns");
    assert!(should_call(&prod, &a, &obj).unwrap());
    assert!(!should_call(&not_prod, &a, &obj).unwrap());
    // Cluster-scoped objects (not namespaces) are never exempted by a namespaceSelector.
    let node = attrs(Create, "", "nodes", "", "");
    assert!(should_call(&not_prod, &node, &obj).unwrap());
    // A namespace being created is judged by its own new labels.
    let ns_create = attrs(Create, "", "namespaces", "", "");
    assert!(should_call(&prod, &ns_create, &labeled(json!({"env": "prod"}))).unwrap());
    assert!(!should_call(&prod, &ns_create, &labeled(json!({"env": "dev"}))).unwrap());
    // Deleting a namespace uses the stored namespace's labels.
    let mut ns_delete = attrs(Delete, "", "namespaces", "", "team-a");
    ns_delete.namespace_labels = Some(BTreeMap::from([("env".into(), "dev".into())]));
    assert!(!should_call(&prod, &ns_delete, &Value::Null).unwrap());
    assert!(should_call(&not_prod, &ns_delete, &Value::Null).unwrap());
    // Unknown namespace: 404, but only for webhooks whose rules match.
    let mut missing = attrs(Create, "", "pods", "", "ghost");
    missing.namespace_labels = None;
    let err = should_call(&prod, &missing, &obj).unwrap_err();
    assert_eq!(err.code, 404);
    assert_eq!(err.message, r#"namespaces "ghost" not found"#);
    let pods_only = webhook(
        json!({"namespaceSelector": {"matchLabels": {"env": "prod"}},
        "rules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["services"]}]}),
    );
    assert!(!should_call(&pods_only, &missing, &obj).unwrap());
    // An empty selector never needs the labels.
    let everything = webhook(json!({}));
    assert!(should_call(&everything, &missing, &obj).unwrap());
    // A selector that does not parse is an internal error.
    let broken = webhook(
        json!({"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}),
    );
    assert_eq!(should_call(&broken, &a, &obj).unwrap_err().code, 500);
}

#[test]
fn object_selector_table() {
    use Operation::*;
    let sel = webhook(json!({"objectSelector": {"matchLabels": {"app": "web"}}}));
    let a = attrs(Create, "", "pods", "", "ns");
    assert!(should_call(&sel, &a, &labeled(json!({"app": "web"}))).unwrap());
    assert!(!should_call(&sel, &a, &labeled(json!({"app": "db"}))).unwrap());
    assert!(!should_call(&sel, &a, &json!({"metadata": {}})).unwrap());
    // Update: the old object matching is enough.
    let mut u = attrs(Update, "", "pods", "", "ns");
    u.old_object = Some(labeled(json!({"app": "web"})));
    assert!(should_call(&sel, &u, &labeled(json!({"app": "db"}))).unwrap());
    // Delete: no new object, the old one decides.
    let mut d = attrs(Delete, "", "pods", "", "ns");
    assert!(!should_call(&sel, &d, &Value::Null).unwrap());
    d.old_object = Some(labeled(json!({"app": "web"})));
    assert!(should_call(&sel, &d, &Value::Null).unwrap());
    // DoesNotExist matches objects without the label.
    let absent = webhook(
        json!({"objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}}),
    );
    assert!(should_call(&absent, &a, &labeled(json!({}))).unwrap());
    assert!(!should_call(&absent, &a, &labeled(json!({"skip": "true"}))).unwrap());
}

#[test]
fn operations_round_trip() {
    for op in [
        Operation::Create,
        Operation::Update,
        Operation::Delete,
        Operation::Connect,
    ] {
        assert_eq!(Operation::parse(op.as_str()), Some(op));
    }
    assert_eq!(Operation::parse("create"), None);
}

#[test]
fn equivalent_match_policy_maps_hpa_versions() {
    let hook = |policy: &str| {
        let cfg = json!({"metadata": {"name": "c"}, "webhooks": [{"name": "w", "matchPolicy": policy,
            "rules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v2"],
                       "resources": ["horizontalpodautoscalers"]}],
            "clientConfig": {"url": "https://x"}}]});
        parse_configuration(&cfg, false, &[]).remove(0)
    };
    let v1 = AdmissionAttributes {
        operation: Operation::Create,
        group: "autoscaling".into(),
        version: "v1".into(),
        kind: "HorizontalPodAutoscaler".into(),
        resource: "horizontalpodautoscalers".into(),
        namespace: "ns".into(),
        namespace_labels: Some(BTreeMap::new()),
        ..Default::default()
    };
    let obj = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"}, "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
    // Equivalent (the default): called through v2, with the object in v2 and the request's kind.
    let eq = super::matching::matched(&hook("Equivalent"), &v1, &obj)
        .unwrap()
        .expect("called")
        .expect("through an equivalent version");
    assert_eq!(
        (eq.version.as_str(), eq.request_version.as_deref()),
        ("v2", Some("v1"))
    );
    let converted = super::matching::in_version(&obj, &eq).unwrap();
    assert_eq!(converted["apiVersion"], "autoscaling/v2");
    assert_eq!(
        converted["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        50
    );
    let review = super::review::admission_review_request("u", &eq, &converted, "v1");
    assert_eq!(review["request"]["kind"]["version"], "v2");
    assert_eq!(review["request"]["requestKind"]["version"], "v1");
    // Exact: not called for the other version.
    assert!(
        super::matching::matched(&hook("Exact"), &v1, &obj)
            .unwrap()
            .is_none()
    );
    assert!(should_call(&hook("Equivalent"), &v1, &obj).unwrap());
}
