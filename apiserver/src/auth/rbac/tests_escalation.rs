//! Tests of escalation prevention, aggregation and reconciliation.

use serde_json::{Value, json};

use super::tests::{allowed, authorizer_with, res, usr};
use super::*;

fn pr(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    PolicyRule {
        verbs: v(verbs),
        api_groups: v(groups),
        resources: v(resources),
        ..Default::default()
    }
}

fn granting_objects() -> Vec<Value> {
    vec![
        json!({
            "kind": "ClusterRole",
            "metadata": { "name": "pod-getter" },
            "rules": [
                { "apiGroups": [""], "resources": ["pods", "*/status"], "verbs": ["get"] },
                { "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"], "verbs": ["get"] },
                { "nonResourceURLs": ["/logs/*"], "verbs": ["get"] },
            ],
        }),
        json!({
            "kind": "RoleBinding",
            "metadata": { "name": "bob", "namespace": "dev" },
            "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "pod-getter" },
            "subjects": [{ "kind": "User", "name": "bob", "apiGroup": RBAC_GROUP }],
        }),
        json!({
            "kind": "ClusterRole",
            "metadata": { "name": "rbac-delegate" },
            "rules": [
                { "apiGroups": [RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["view"] },
                { "apiGroups": [RBAC_GROUP], "resources": ["roles", "clusterroles"], "verbs": ["escalate"] },
            ],
        }),
        json!({
            "kind": "RoleBinding",
            "metadata": { "name": "delegate", "namespace": "dev" },
            "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "rbac-delegate" },
            "subjects": [{ "kind": "User", "name": "dele", "apiGroup": RBAC_GROUP }],
        }),
        json!({ "kind": "ClusterRole", "metadata": { "name": "view" }, "rules": [
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"] },
        ] }),
    ]
}

#[test]
fn confirm_no_escalation_table() {
    let authz = authorizer_with(&granting_objects());
    let bob = usr("bob", &[]);
    let url = |u: &str, verbs: &[&str]| PolicyRule {
        non_resource_urls: vec![u.into()],
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..Default::default()
    };
    let named = |n: &str| PolicyRule {
        resource_names: vec![n.into()],
        ..pr(&[""], &["configmaps"], &["get"])
    };
    let cases: Vec<(&str, &str, Vec<PolicyRule>, bool)> = vec![
        ("held", "dev", vec![pr(&[""], &["pods"], &["get"])], true),
        ("nothing", "dev", vec![], true),
        (
            "*/status covers a subresource",
            "dev",
            vec![pr(&[""], &["pods/status", "nodes/status"], &["get"])],
            true,
        ),
        (
            "other namespace",
            "prod",
            vec![pr(&[""], &["pods"], &["get"])],
            false,
        ),
        (
            "cluster-wide",
            "",
            vec![pr(&[""], &["pods"], &["get"])],
            false,
        ),
        (
            "more verbs",
            "dev",
            vec![pr(&[""], &["pods"], &["get", "list"])],
            false,
        ),
        (
            "other group",
            "dev",
            vec![pr(&["apps"], &["pods"], &["get"])],
            false,
        ),
        (
            "* resource",
            "dev",
            vec![pr(&[""], &["*"], &["get"])],
            false,
        ),
        ("named held", "dev", vec![named("a")], true),
        ("named not held", "dev", vec![named("b")], false),
        (
            "unnamed needs unnamed",
            "dev",
            vec![pr(&[""], &["configmaps"], &["get"])],
            false,
        ),
        ("url prefix", "dev", vec![url("/logs/x", &["get"])], true),
        (
            "url outside prefix",
            "dev",
            vec![url("/metrics", &["get"])],
            false,
        ),
    ];
    for (name, ns, rules, ok) in cases {
        assert_eq!(
            authz.confirm_no_escalation(&bob, ns, &rules).is_ok(),
            ok,
            "{name}"
        );
    }
}

#[test]
fn escalation_message_like_upstream() {
    let authz = authorizer_with(&granting_objects());
    let err = authz
        .confirm_no_escalation(
            &usr("bob", &["devs"]),
            "dev",
            &[
                pr(
                    &["", "apps"],
                    &["pods", "deployments"],
                    &["get", "list", "watch"],
                ),
                PolicyRule {
                    non_resource_urls: vec!["/metrics".into()],
                    verbs: vec!["get".into()],
                    ..Default::default()
                },
            ],
        )
        .expect_err("escalation");
    assert_eq!(
        err,
        "user \"bob\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"deployments\"], Verbs:[\"get\" \"list\" \"watch\"]}\n\
         {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\" \"watch\"]}\n\
         {APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\" \"list\" \"watch\"]}\n\
         {APIGroups:[\"apps\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\" \"watch\"]}\n\
         {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
    );

    let broken = authorizer_with(&[json!({
        "kind": "ClusterRoleBinding",
        "metadata": { "name": "x" },
        "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "gone" },
        "subjects": [{ "kind": "User", "name": "u" }],
    })]);
    let err = broken
        .confirm_no_escalation(&usr("u", &[]), "", &[pr(&[""], &["pods"], &["get"])])
        .expect_err("escalation");
    assert!(
        err.ends_with(
            r#"; resolution errors: [clusterrole.rbac.authorization.k8s.io "gone" not found]"#
        ),
        "{err}"
    );
}

#[test]
fn covers_and_compaction() {
    let (ok, missing) = covers(
        &[pr(&["*"], &["*"], &["*"])],
        &[pr(&["x"], &["y/z"], &["w"])],
    );
    assert!(ok && missing.is_empty());
    let (ok, missing) = covers(
        &[pr(&[""], &["pods"], &["get"])],
        &[pr(&[""], &["pods"], &["get", "list", "watch"])],
    );
    assert!(!ok);
    assert_eq!(missing.len(), 2);
    assert_eq!(
        compact_rules(missing),
        vec![pr(&[""], &["pods"], &["list", "watch"])]
    );
    assert_eq!(
        breakdown_rule(&pr(&["a", "b"], &["r"], &["v1", "v2"])).len(),
        4
    );
}

#[test]
fn role_and_binding_writes() {
    let authz = authorizer_with(&granting_objects());
    let bob = usr("bob", &[]);
    let dele = usr("dele", &[]);
    let root = usr("root", &["system:masters"]);
    let role = |rules: Value| json!({ "kind": "Role", "metadata": { "name": "r", "namespace": "dev" }, "rules": rules });
    let small = role(json!([{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] }]));
    let big = role(json!([{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] }]));

    assert!(
        authz
            .check_role_write(&bob, "roles", "dev", &small, None)
            .is_ok()
    );
    let err = authz
        .check_role_write(&bob, "roles", "dev", &big, None)
        .expect_err("forbidden");
    assert!(
        err.contains(r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#),
        "{err}"
    );
    // The escalate verb and system:masters skip the check.
    assert!(
        authz
            .check_role_write(&dele, "roles", "dev", &big, None)
            .is_ok()
    );
    assert!(!authz.role_escalation_authorized(&dele, "roles", "prod", "r"));
    assert!(
        authz
            .check_role_write(&root, "roles", "dev", &big, None)
            .is_ok()
    );
    // An update changing only finalizers / ownerReferences is not checked.
    let mut gc_only = big.clone();
    gc_only["metadata"]["finalizers"] = json!(["x"]);
    assert!(
        authz
            .check_role_write(&bob, "roles", "dev", &gc_only, Some(&big))
            .is_ok()
    );

    // aggregationRule needs full authority.
    let aggregated = json!({
        "kind": "ClusterRole", "metadata": { "name": "agg" },
        "aggregationRule": { "clusterRoleSelectors": [{ "matchLabels": { "a": "b" } }] },
    });
    let pods_admin = authorizer_with(&[
        json!({ "kind": "ClusterRole", "metadata": { "name": "p" }, "rules": [
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["*"] },
        ] }),
        json!({ "kind": "ClusterRoleBinding", "metadata": { "name": "p" },
            "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "p" },
            "subjects": [{ "kind": "User", "name": "bob" }] }),
    ]);
    assert_eq!(
        pods_admin.check_role_write(&bob, "clusterroles", "", &aggregated, None),
        Err(AGGREGATION_RULE_FORBIDDEN.to_owned())
    );
    assert!(
        pods_admin
            .check_role_write(&root, "clusterroles", "", &aggregated, None)
            .is_ok()
    );

    // Bindings: bind verb, or holding every permission of the role.
    let rb = |role_kind: &str, role: &str| {
        json!({ "kind": "RoleBinding", "metadata": { "name": "x", "namespace": "dev" },
            "roleRef": { "apiGroup": RBAC_GROUP, "kind": role_kind, "name": role },
            "subjects": [{ "kind": "User", "name": "someone" }] })
    };
    assert!(
        authz
            .check_binding_write(&dele, "dev", &rb("ClusterRole", "view"), None)
            .is_ok()
    );
    assert!(
        authz
            .check_binding_write(&dele, "prod", &rb("ClusterRole", "view"), None)
            .is_err()
    );
    assert!(
        authz
            .check_binding_write(&bob, "dev", &rb("ClusterRole", "pod-getter"), None)
            .is_ok()
    );
    let err = authz
        .check_binding_write(&bob, "dev", &rb("ClusterRole", "view"), None)
        .expect_err("forbidden");
    assert!(err.contains(r#"Verbs:["list"]"#), "{err}");
    assert_eq!(
        authz.check_binding_write(&bob, "dev", &rb("Role", "nope"), None),
        Err(r#"role.rbac.authorization.k8s.io "nope" not found"#.to_owned())
    );
    assert!(
        authz
            .check_binding_write(&root, "dev", &rb("Role", "nope"), None)
            .is_ok()
    );
    assert!(allowed(
        &authz,
        &res(&dele, "escalate", RBAC_GROUP, "roles", "dev")
    ));
}

fn cr(name: &str, labels: Value, rules: Value, selectors: Option<Value>) -> Value {
    let mut v = json!({ "kind": "ClusterRole", "metadata": { "name": name, "labels": labels }, "rules": rules });
    if let Some(s) = selectors {
        v["aggregationRule"] = json!({ "clusterRoleSelectors": s });
    }
    v
}

#[test]
fn aggregation_unions_matching_roles() {
    let get = |r: &str| json!({ "apiGroups": [""], "resources": [r], "verbs": ["get"] });
    let roles = vec![
        cr(
            "top",
            json!({}),
            json!([get("stale")]),
            Some(json!([{ "matchLabels": { "to-top": "true" } }])),
        ),
        cr(
            "mid",
            json!({ "to-top": "true" }),
            json!([]),
            Some(json!([{ "matchLabels": { "to-mid": "true" } }])),
        ),
        cr(
            "a",
            json!({ "to-top": "true" }),
            json!([get("pods"), get("nodes")]),
            None,
        ),
        cr(
            "b",
            json!({ "to-mid": "true" }),
            json!([get("pods"), get("secrets")]),
            None,
        ),
        cr(
            "bad",
            json!({}),
            json!([]),
            Some(json!([{ "matchExpressions": [{ "key": "x", "operator": "Bogus" }] }])),
        ),
        cr("empty", json!({}), json!([get("x")]), Some(json!([]))),
    ];
    let got = aggregate(&roles);
    let rules = |name: &str| got.iter().find(|(n, _)| n == name).map(|(_, r)| r.clone());
    let names = |rs: Vec<PolicyRule>| {
        rs.into_iter()
            .map(|r| r.resources[0].clone())
            .collect::<Vec<_>>()
    };
    // top = a (pods, nodes) + mid (= b: pods, secrets), duplicates once, stale rule dropped.
    assert_eq!(
        names(rules("top").expect("top")),
        ["pods", "nodes", "secrets"]
    );
    assert_eq!(names(rules("mid").expect("mid")), ["pods", "secrets"]);
    assert_eq!(rules("bad"), None);
    assert_eq!(rules("empty"), Some(vec![]));
    assert_eq!(got.len(), 3);

    let updates = aggregation_updates(&roles);
    let updated: Vec<&str> = updates
        .iter()
        .filter_map(|u| u["metadata"]["name"].as_str())
        .collect();
    assert_eq!(updated, ["top", "mid", "empty"]);
    assert_eq!(updates[1]["rules"], json!([get("pods"), get("secrets")]));
}

#[test]
fn reconcile_roles() {
    let wanted = cr(
        "r",
        json!({ "kubernetes.io/bootstrapping": "rbac-defaults" }),
        json!([{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"] }]),
        None,
    );
    assert_eq!(
        reconcile_action(None, &wanted),
        ReconcileAction::Create(wanted.clone())
    );
    assert_eq!(reconcile(Some(&wanted), &wanted), None);

    // A user-tightened role gets the missing permission back; user additions stay.
    let mut existing = wanted.clone();
    existing["metadata"]["resourceVersion"] = json!("7");
    existing["metadata"]["labels"] = json!({ "mine": "yes" });
    existing["rules"] = json!([
        { "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] },
        { "apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"] },
    ]);
    let updated = reconcile(Some(&existing), &wanted).expect("update");
    assert_eq!(updated["metadata"]["resourceVersion"], "7");
    assert_eq!(
        updated["metadata"]["labels"],
        json!({ "mine": "yes", "kubernetes.io/bootstrapping": "rbac-defaults" })
    );
    assert_eq!(
        updated["rules"],
        json!([
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] },
            { "apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"] },
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["list"] },
        ])
    );
    assert_eq!(reconcile(Some(&updated), &wanted), None);

    // autoupdate=false protects it.
    existing["metadata"]["annotations"] = json!({ AUTOUPDATE_ANNOTATION: "false" });
    assert_eq!(
        reconcile_action(Some(&existing), &wanted),
        ReconcileAction::Protected
    );

    // Aggregation selectors: missing ones are added, extra ones kept.
    let agg = cr(
        "admin",
        json!({}),
        json!([]),
        Some(json!([{ "matchLabels": { "x": "true" } }])),
    );
    let mut have = agg.clone();
    have["aggregationRule"]["clusterRoleSelectors"] =
        json!([{ "matchLabels": { "mine": "true" } }]);
    have["rules"] = json!([{ "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] }]);
    let updated = reconcile(Some(&have), &agg).expect("update");
    assert_eq!(
        updated["aggregationRule"]["clusterRoleSelectors"],
        json!([{ "matchLabels": { "mine": "true" } }, { "matchLabels": { "x": "true" } }])
    );
    assert_eq!(updated["rules"], have["rules"]);
}

#[test]
fn reconcile_bindings() {
    let wanted = json!({
        "kind": "ClusterRoleBinding",
        "metadata": { "name": "b", "annotations": { AUTOUPDATE_ANNOTATION: "true" } },
        "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "r" },
        "subjects": [{ "apiGroup": RBAC_GROUP, "kind": "Group", "name": "g" }],
    });
    let mut existing = wanted.clone();
    existing["subjects"] = json!([{ "apiGroup": RBAC_GROUP, "kind": "User", "name": "mine" }]);
    let updated = reconcile(Some(&existing), &wanted).expect("update");
    assert_eq!(
        updated["subjects"],
        json!([
            { "apiGroup": RBAC_GROUP, "kind": "User", "name": "mine" },
            { "apiGroup": RBAC_GROUP, "kind": "Group", "name": "g" },
        ])
    );
    assert_eq!(reconcile(Some(&updated), &wanted), None);

    let mut other_ref = wanted.clone();
    other_ref["roleRef"]["name"] = json!("other");
    assert_eq!(
        reconcile_action(Some(&other_ref), &wanted),
        ReconcileAction::Recreate(wanted.clone())
    );
    other_ref["metadata"]["annotations"] = json!({ AUTOUPDATE_ANNOTATION: "false" });
    assert_eq!(
        reconcile_action(Some(&other_ref), &wanted),
        ReconcileAction::Protected
    );
}
