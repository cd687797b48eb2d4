//! Tests of the bootstrap policy: contents, metadata, references, and what the default roles
//! allow once aggregated and loaded.

use std::collections::BTreeSet;

use serde_json::Value;

use super::tests::{allowed, authorizer_with, path, res, usr};
use super::*;
use crate::auth::{Decision, UserInfo};

fn key(obj: &Value) -> (String, String, String) {
    let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
    (
        s(&obj["kind"]),
        s(&obj["metadata"]["namespace"]),
        s(&obj["metadata"]["name"]),
    )
}

/// Every `system:controller:*` ClusterRole upstream kube-apiserver 1.33 bootstraps with its
/// default feature gates (its ClusterRoleBinding binds ServiceAccount kube-system/<name>).
const UPSTREAM_CONTROLLER_ROLES: [&str; 35] = [
    "attachdetach-controller",
    "certificate-controller",
    "clusterrole-aggregation-controller",
    "cronjob-controller",
    "daemon-set-controller",
    "deployment-controller",
    "disruption-controller",
    "endpoint-controller",
    "endpointslice-controller",
    "endpointslicemirroring-controller",
    "ephemeral-volume-controller",
    "expand-controller",
    "generic-garbage-collector",
    "horizontal-pod-autoscaler",
    "job-controller",
    "legacy-service-account-token-cleaner",
    "namespace-controller",
    "node-controller",
    "persistent-volume-binder",
    "pod-garbage-collector",
    "pv-protection-controller",
    "pvc-protection-controller",
    "replicaset-controller",
    "replication-controller",
    "resourcequota-controller",
    "root-ca-cert-publisher",
    "route-controller",
    "selinux-warning-controller",
    "service-account-controller",
    "service-cidrs-controller",
    "service-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
    "ttl-controller",
    "validatingadmissionpolicy-status-controller",
];

/// The bootstrap policy with aggregated rules filled in, as a running cluster has it.
fn aggregated_policy() -> Vec<Value> {
    let mut policy = bootstrap_policy();
    let cluster_roles: Vec<Value> = policy
        .iter()
        .filter(|o| o["kind"] == "ClusterRole")
        .cloned()
        .collect();
    for updated in aggregation_updates(&cluster_roles) {
        if let Some(slot) = policy.iter_mut().find(|o| key(o) == key(&updated)) {
            *slot = updated;
        }
    }
    policy
}

#[test]
fn contains_the_named_objects_with_bootstrap_metadata() {
    let policy = bootstrap_policy();
    let keys: BTreeSet<_> = policy.iter().map(key).collect();
    assert_eq!(keys.len(), policy.len(), "duplicate objects");
    let has =
        |kind: &str, ns: &str, name: &str| keys.contains(&(kind.into(), ns.into(), name.into()));
    for name in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:aggregate-to-admin",
        "system:aggregate-to-edit",
        "system:aggregate-to-view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:node-bootstrapper",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        "system:node",
        "system:node-proxier",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:monitoring",
        "system:auth-delegator",
    ] {
        assert!(has("ClusterRole", "", name), "ClusterRole {name}");
    }
    for controller in UPSTREAM_CONTROLLER_ROLES {
        let name = format!("system:controller:{controller}");
        assert!(has("ClusterRole", "", &name), "{name}");
        assert!(has("ClusterRoleBinding", "", &name), "{name} binding");
    }
    for name in [
        "cluster-admin",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:node-proxier",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:monitoring",
        "system:service-account-issuer-discovery",
    ] {
        assert!(
            has("ClusterRoleBinding", "", name),
            "ClusterRoleBinding {name}"
        );
    }
    for (ns, name) in [
        ("kube-system", "extension-apiserver-authentication-reader"),
        (
            "kube-system",
            "system::leader-locking-kube-controller-manager",
        ),
        ("kube-system", "system::leader-locking-kube-scheduler"),
        ("kube-system", "system:controller:bootstrap-signer"),
        ("kube-system", "system:controller:cloud-provider"),
        ("kube-system", "system:controller:token-cleaner"),
        ("kube-public", "system:controller:bootstrap-signer"),
    ] {
        assert!(has("Role", ns, name), "Role {ns}/{name}");
    }
    assert!(has(
        "RoleBinding",
        "kube-system",
        "system::extension-apiserver-authentication-reader"
    ));
    assert!(has(
        "RoleBinding",
        "kube-public",
        "system:controller:bootstrap-signer"
    ));

    for obj in &policy {
        assert_eq!(obj["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(
            obj["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults",
            "{obj}"
        );
        assert_eq!(
            obj["metadata"]["annotations"][AUTOUPDATE_ANNOTATION], "true",
            "{obj}"
        );
    }
}

/// One rule as `verbs groups resources [names]`, each list comma-joined (`""` is the core group).
fn rule_line(rule: &Value) -> String {
    let list = |field: &str| {
        rule[field]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|i| match i.as_str().unwrap_or("") {
                        "" => "\"\"",
                        s => s,
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    };
    let line = format!(
        "{} {} {}",
        list("verbs"),
        list("apiGroups"),
        list("resources")
    );
    match list("resourceNames") {
        names if names.is_empty() => line,
        names => format!("{line} {names}"),
    }
}

#[test]
fn controller_roles_are_upstreams_default_set() {
    let roles = controller_roles();
    let names: Vec<String> = roles
        .iter()
        .map(|r| r["metadata"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    let expected: Vec<String> = UPSTREAM_CONTROLLER_ROLES
        .iter()
        .map(|n| format!("{CONTROLLER_ROLE_PREFIX}{n}"))
        .collect();
    assert_eq!(names, expected);

    let bindings = controller_role_bindings();
    assert_eq!(bindings.len(), UPSTREAM_CONTROLLER_ROLES.len());
    for (binding, name) in bindings.iter().zip(UPSTREAM_CONTROLLER_ROLES) {
        let full = format!("{CONTROLLER_ROLE_PREFIX}{name}");
        assert_eq!(binding["metadata"]["name"], full.as_str());
        assert_eq!(
            binding["roleRef"],
            serde_json::json!({ "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": full })
        );
        assert_eq!(
            binding["subjects"],
            serde_json::json!([{ "kind": "ServiceAccount", "name": name, "namespace": "kube-system" }])
        );
    }

    let rules = |name: &str| -> Vec<String> {
        roles
            .iter()
            .find(|r| r["metadata"]["name"] == format!("{CONTROLLER_ROLE_PREFIX}{name}"))
            .and_then(|r| r["rules"].as_array())
            .map(|rs| rs.iter().map(rule_line).collect())
            .unwrap_or_default()
    };
    let events = "create,patch,update \"\",events.k8s.io events";
    // Upstream's testdata/controller-roles.yaml, rule for rule.
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "attachdetach-controller",
            vec![
                "list,watch \"\" persistentvolumeclaims,persistentvolumes",
                "get,list,watch \"\" nodes",
                "patch,update \"\" nodes/status",
                "list,watch \"\" pods",
                events,
                "create,delete,get,list,watch storage.k8s.io volumeattachments",
                "get,list,watch storage.k8s.io csidrivers",
                "get,list,watch storage.k8s.io csinodes",
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                "get,list,watch \"\" pods",
                "update \"\" pods/finalizers",
                "create,get,list,watch \"\" persistentvolumeclaims",
                events,
            ],
        ),
        (
            "expand-controller",
            vec![
                "get,list,patch,update,watch \"\" persistentvolumes",
                "patch,update \"\" persistentvolumeclaims/status",
                "get,list,watch \"\" persistentvolumeclaims",
                events,
                "get \"\" services",
            ],
        ),
        (
            "legacy-service-account-token-cleaner",
            vec![
                "get \"\" configmaps kube-apiserver-legacy-service-account-token-tracking",
                "delete,patch \"\" secrets",
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                "create,delete,get,list,update,watch \"\" persistentvolumes",
                "update \"\" persistentvolumes/status",
                "get,list,update,watch \"\" persistentvolumeclaims",
                "update \"\" persistentvolumeclaims/status",
                "create,delete,get,list,watch \"\" pods",
                "get,list,watch storage.k8s.io storageclasses",
                "list,watch \"\" nodes",
                events,
                "watch \"\" events",
                "get \"\" services",
            ],
        ),
        (
            "pvc-protection-controller",
            vec![
                "get,list,update,watch \"\" persistentvolumeclaims",
                "get,list,watch \"\" pods",
                events,
            ],
        ),
        (
            "route-controller",
            vec!["list,watch \"\" nodes", "patch \"\" nodes/status", events],
        ),
        (
            "selinux-warning-controller",
            vec![
                events,
                "get,list,watch \"\" persistentvolumes",
                "get,list,watch \"\" persistentvolumeclaims",
                "get,list,watch \"\" pods",
                "get,list,watch storage.k8s.io csidrivers",
            ],
        ),
        (
            "service-cidrs-controller",
            vec![
                "get,list,patch,update,watch networking.k8s.io servicecidrs",
                "patch,update networking.k8s.io servicecidrs/finalizers",
                "patch,update networking.k8s.io servicecidrs/status",
                "get,list,watch networking.k8s.io ipaddresses",
                events,
            ],
        ),
        (
            "service-controller",
            vec![
                "get,list,watch \"\" services",
                "patch,update \"\" services/status",
                "list,watch \"\" nodes",
                events,
            ],
        ),
        (
            "ttl-controller",
            vec!["list,patch,update,watch \"\" nodes", events],
        ),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                "get,list,watch admissionregistration.k8s.io validatingadmissionpolicies",
                "get,patch,update admissionregistration.k8s.io validatingadmissionpolicies/status",
                events,
            ],
        ),
    ];
    for (name, want) in cases {
        assert_eq!(rules(name), want, "{name}");
    }
}

#[test]
fn references_resolve_and_subjects_are_exact() {
    let policy = bootstrap_policy();
    let keys: BTreeSet<_> = policy.iter().map(key).collect();
    for obj in policy
        .iter()
        .filter(|o| o["kind"].as_str().is_some_and(|k| k.ends_with("Binding")))
    {
        let (kind, ns, _) = key(obj);
        let role_kind = obj["roleRef"]["kind"].as_str().unwrap_or("");
        let role_ns = if role_kind == "Role" {
            ns.clone()
        } else {
            String::new()
        };
        let target = (
            role_kind.to_owned(),
            role_ns,
            obj["roleRef"]["name"].as_str().unwrap_or("").to_owned(),
        );
        assert!(
            keys.contains(&target),
            "{kind} {obj} refers to a missing role"
        );
    }
    let crb = |name: &str| {
        policy
            .iter()
            .find(|o| o["kind"] == "ClusterRoleBinding" && o["metadata"]["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        crb("cluster-admin")["subjects"],
        serde_json::json!([{ "apiGroup": RBAC_GROUP, "kind": "Group", "name": "system:masters" }])
    );
    assert_eq!(
        crb("system:controller:deployment-controller")["subjects"],
        serde_json::json!([{ "kind": "ServiceAccount", "name": "deployment-controller", "namespace": "kube-system" }])
    );
    assert!(crb("system:node").get("subjects").is_none());
}

#[test]
fn default_roles_allow_what_upstream_allows() {
    let authz = authorizer_with(&aggregated_policy());
    let bind = |role: &str, ns: &str, user: &str| {
        serde_json::json!({
            "kind": "RoleBinding",
            "metadata": { "name": format!("{user}-{role}"), "namespace": ns },
            "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role },
            "subjects": [{ "apiGroup": RBAC_GROUP, "kind": "User", "name": user }],
        })
    };
    for (role, user) in [("view", "viewer"), ("edit", "editor"), ("admin", "boss")] {
        authz
            .cache()
            .apply("RoleBinding", &bind(role, "team", user))
            .expect("apply");
    }
    let viewer = usr("viewer", &[]);
    let editor = usr("editor", &[]);
    let boss = usr("boss", &[]);
    let anon = UserInfo::anonymous();
    let someone = usr("someone", &[]);
    let sched = usr("system:kube-scheduler", &[]);
    let deploy_ctrl = usr(
        "system:serviceaccount:kube-system:deployment-controller",
        &[],
    );
    let ns_ctrl = usr(
        "system:serviceaccount:kube-system:namespace-controller",
        &[],
    );
    let cases = vec![
        (
            "view lists pods",
            res(&viewer, "list", "", "pods", "team"),
            true,
        ),
        (
            "view reads deployments",
            res(&viewer, "get", "apps", "deployments", "team"),
            true,
        ),
        (
            "view no secrets",
            res(&viewer, "get", "", "secrets", "team"),
            false,
        ),
        (
            "view no writes",
            res(&viewer, "create", "", "pods", "team"),
            false,
        ),
        (
            "view only in its namespace",
            res(&viewer, "list", "", "pods", "other"),
            false,
        ),
        (
            "edit creates deployments",
            res(&editor, "create", "apps", "deployments", "team"),
            true,
        ),
        (
            "edit scales",
            res(&editor, "patch", "apps", "deployments/scale", "team"),
            true,
        ),
        (
            "edit reads secrets",
            res(&editor, "get", "", "secrets", "team"),
            true,
        ),
        (
            "edit execs",
            res(&editor, "create", "", "pods/exec", "team"),
            true,
        ),
        (
            "edit lists pods (from view)",
            res(&editor, "list", "", "pods", "team"),
            true,
        ),
        (
            "edit no rolebindings",
            res(&editor, "create", RBAC_GROUP, "rolebindings", "team"),
            false,
        ),
        (
            "admin rolebindings",
            res(&boss, "create", RBAC_GROUP, "rolebindings", "team"),
            true,
        ),
        (
            "admin deletes pods (from edit)",
            res(&boss, "delete", "", "pods", "team"),
            true,
        ),
        ("admin no nodes", res(&boss, "list", "", "nodes", ""), false),
        (
            "basic-user ssar",
            res(
                &someone,
                "create",
                "authorization.k8s.io",
                "selfsubjectaccessreviews",
                "",
            ),
            true,
        ),
        (
            "basic-user ssrr",
            res(
                &someone,
                "create",
                "authorization.k8s.io",
                "selfsubjectrulesreviews",
                "ns",
            ),
            true,
        ),
        (
            "basic-user no pods",
            res(&someone, "list", "", "pods", "default"),
            false,
        ),
        ("anonymous /healthz", path(&anon, "get", "/healthz"), true),
        ("anonymous /version", path(&anon, "get", "/version"), true),
        ("anonymous no discovery", path(&anon, "get", "/api"), false),
        (
            "anonymous no ssar",
            res(
                &anon,
                "create",
                "authorization.k8s.io",
                "selfsubjectaccessreviews",
                "",
            ),
            false,
        ),
        (
            "authenticated discovery",
            path(&someone, "get", "/apis/apps/v1"),
            true,
        ),
        (
            "authenticated no metrics",
            path(&someone, "get", "/metrics"),
            false,
        ),
        (
            "monitoring metrics",
            path(&usr("prom", &["system:monitoring"]), "get", "/metrics"),
            true,
        ),
        (
            "scheduler binds",
            res(&sched, "create", "", "pods/binding", "x"),
            true,
        ),
        (
            "scheduler leader lease",
            res(
                &sched,
                "update",
                "coordination.k8s.io",
                "leases",
                "kube-system",
            ),
            true,
        ),
        (
            "deployment-controller rs",
            res(&deploy_ctrl, "create", "apps", "replicasets", "x"),
            true,
        ),
        (
            "deployment-controller no secrets",
            res(&deploy_ctrl, "get", "", "secrets", "x"),
            false,
        ),
        (
            "namespace-controller deletecollection",
            res(&ns_ctrl, "deletecollection", "x.io", "things", "ns"),
            true,
        ),
        (
            "masters",
            res(&usr("root", &["system:masters"]), "delete", "", "nodes", ""),
            true,
        ),
    ];
    for (name, attrs, want) in cases {
        assert_eq!(allowed(&authz, &attrs), want, "{name}");
    }
    // Without the privileged-group shortcut, system:masters still gets in via cluster-admin.
    assert_eq!(
        authz.authorize_rbac(&res(&usr("root", &["system:masters"]), "delete", "", "nodes", "")),
        Decision::Allow(
            r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#
                .into()
        )
    );
}

#[test]
fn aggregation_of_admin_edit_view() {
    let policy = bootstrap_policy();
    let roles: Vec<&Value> = policy
        .iter()
        .filter(|o| o["kind"] == "ClusterRole")
        .collect();
    let got = aggregate(&roles);
    let rules = |n: &str| {
        got.iter()
            .find(|(name, _)| name == n)
            .map(|(_, r)| r.clone())
            .unwrap_or_default()
    };
    let (view, edit, admin) = (rules("view"), rules("edit"), rules("admin"));
    assert_eq!(got.len(), 3);
    assert!(!view.is_empty());
    assert!(covers(&edit, &view).0, "edit includes view");
    assert!(covers(&admin, &edit).0, "admin includes edit");
    assert!(!covers(&view, &edit).0);
    assert!(!covers(&edit, &admin).0);
    // A custom role labelled aggregate-to-view flows into all three.
    let mut with_custom = bootstrap_policy()
        .into_iter()
        .filter(|o| o["kind"] == "ClusterRole")
        .collect::<Vec<_>>();
    with_custom.push(serde_json::json!({
        "kind": "ClusterRole",
        "metadata": { "name": "crontabs-view", "labels": { "rbac.authorization.k8s.io/aggregate-to-view": "true" } },
        "rules": [{ "apiGroups": ["stable.example.com"], "resources": ["crontabs"], "verbs": ["get"] }],
    }));
    let got = aggregate(&with_custom);
    for (name, rules) in got {
        assert!(
            rules.iter().any(|r| r.resources == ["crontabs"]),
            "{name} lacks the custom rule"
        );
    }
}

#[test]
fn reconciling_the_policy_against_itself_is_a_no_op() {
    let policy = aggregated_policy();
    for obj in &policy {
        assert_eq!(reconcile(Some(obj), obj), None, "{obj}");
    }
    // And against the un-aggregated wanted objects: aggregated roles need nothing either.
    for (have, want) in policy.iter().zip(bootstrap_policy().iter()) {
        assert_eq!(reconcile(Some(have), want), None, "{want}");
    }
}

#[test]
fn kubeadm_objects_resolve() {
    let mut all = bootstrap_policy();
    all.extend(kubeadm_policy());
    let authz = authorizer_with(&all);
    let joiner = usr("system:bootstrap:abcdef", &[NODE_BOOTSTRAP_TOKEN_GROUP]);
    assert!(allowed(
        &authz,
        &res(
            &joiner,
            "create",
            "certificates.k8s.io",
            "certificatesigningrequests",
            ""
        )
    ));
    assert!(allowed(
        &authz,
        &res(
            &joiner,
            "create",
            "certificates.k8s.io",
            "certificatesigningrequests/nodeclient",
            ""
        )
    ));
    let cluster_info = crate::auth::Attributes {
        name: "cluster-info".into(),
        ..res(
            &UserInfo::anonymous(),
            "get",
            "",
            "configmaps",
            "kube-public",
        )
    };
    assert!(allowed(&authz, &cluster_info));
    assert!(allowed(
        &authz,
        &res(
            &usr("kubernetes-admin", &[CLUSTER_ADMINS_GROUP]),
            "delete",
            "",
            "nodes",
            ""
        )
    ));
}
