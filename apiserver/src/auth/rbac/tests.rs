//! Tests of the RBAC cache and authorizer: matching, scoping, subjects, reasons, rules_for.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::auth::{Attributes, Decision, UserInfo};

/// An authorizer over a cache holding `objects` (each applied by its `kind`).
pub(super) fn authorizer_with(objects: &[Value]) -> RbacAuthorizer {
    let cache = Arc::new(RbacCache::new());
    for obj in objects {
        let kind = obj["kind"].as_str().unwrap_or("");
        cache.apply(kind, obj).expect("apply");
    }
    RbacAuthorizer::new(cache)
}

pub(super) fn usr(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo::new(name, groups.iter().map(|g| (*g).to_owned()).collect())
}

pub(super) fn res(
    user: &UserInfo,
    verb: &str,
    group: &str,
    resource: &str,
    ns: &str,
) -> Attributes {
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    Attributes {
        user: user.clone(),
        verb: verb.into(),
        is_resource_request: true,
        namespace: ns.into(),
        api_group: group.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        subresource: subresource.into(),
        ..Default::default()
    }
}

fn named_res(user: &UserInfo, verb: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    Attributes {
        name: name.into(),
        ..res(user, verb, "", resource, ns)
    }
}

pub(super) fn path(user: &UserInfo, verb: &str, path: &str) -> Attributes {
    Attributes {
        user: user.clone(),
        verb: verb.into(),
        path: path.into(),
        ..Default::default()
    }
}

pub(super) fn allowed(authz: &RbacAuthorizer, attrs: &Attributes) -> bool {
    matches!(authz.authorize(attrs), Decision::Allow(_))
}

fn role(kind: &str, ns: &str, name: &str, rules: Value) -> Value {
    let mut meta = json!({ "name": name });
    if !ns.is_empty() {
        meta["namespace"] = json!(ns);
    }
    json!({ "kind": kind, "metadata": meta, "rules": rules })
}

fn binding(
    kind: &str,
    ns: &str,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: Value,
) -> Value {
    let mut meta = json!({ "name": name });
    if !ns.is_empty() {
        meta["namespace"] = json!(ns);
    }
    json!({
        "kind": kind,
        "metadata": meta,
        "roleRef": { "apiGroup": RBAC_GROUP, "kind": role_kind, "name": role },
        "subjects": subjects,
    })
}

fn subj(kind: &str, name: &str) -> Value {
    json!({ "kind": kind, "name": name })
}

fn fixture() -> Vec<Value> {
    vec![
        role(
            "Role",
            "dev",
            "pod-reader",
            json!([{ "apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"] }]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "alice-pods",
            "Role",
            "pod-reader",
            json!([subj("User", "alice")]),
        ),
        role(
            "ClusterRole",
            "",
            "deploy-editor",
            json!([
                { "apiGroups": ["apps"], "resources": ["deployments", "*/scale"], "verbs": ["*"] },
                { "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app-config"], "verbs": ["get", "update"] },
            ]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "bob-deploy",
            "ClusterRole",
            "deploy-editor",
            json!([subj("User", "bob")]),
        ),
        role(
            "ClusterRole",
            "",
            "node-watcher",
            json!([
                { "apiGroups": ["*"], "resources": ["nodes"], "verbs": ["get", "list", "watch"] },
                { "nonResourceURLs": ["/healthz", "/apis/*"], "verbs": ["get"] },
            ]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "ops-nodes",
            "ClusterRole",
            "node-watcher",
            json!([subj("Group", "ops")]),
        ),
        role(
            "ClusterRole",
            "",
            "everything-status",
            json!([{ "apiGroups": [""], "resources": ["*"], "verbs": ["get"] }]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "sa-status",
            "ClusterRole",
            "everything-status",
            json!([{ "kind": "ServiceAccount", "name": "robot", "namespace": "ci" }]),
        ),
        // A ServiceAccount subject without namespace defaults to the RoleBinding's.
        binding(
            "RoleBinding",
            "dev",
            "local-sa",
            "Role",
            "pod-reader",
            json!([{ "kind": "ServiceAccount", "name": "builder" }]),
        ),
        binding(
            "RoleBinding",
            "qa",
            "all-qa-sas",
            "ClusterRole",
            "deploy-editor",
            json!([subj("Group", "system:serviceaccounts:qa")]),
        ),
    ]
}

#[test]
fn allow_and_deny_table() {
    let authz = authorizer_with(&fixture());
    let alice = usr("alice", &[]);
    let bob = usr("bob", &[]);
    let ops = usr("carol", &["ops"]);
    let robot = usr("system:serviceaccount:ci:robot", &[]);
    let builder = usr("system:serviceaccount:dev:builder", &[]);
    let other_builder = usr("system:serviceaccount:prod:builder", &[]);
    let qa_sa = usr("system:serviceaccount:qa:tester", &[]);
    let cases: Vec<(&str, Attributes, bool)> = vec![
        // Role in its namespace only.
        ("role in ns", res(&alice, "get", "", "pods", "dev"), true),
        (
            "role verb list",
            res(&alice, "list", "", "pods", "dev"),
            true,
        ),
        (
            "role verb not held",
            res(&alice, "delete", "", "pods", "dev"),
            false,
        ),
        (
            "role other ns",
            res(&alice, "get", "", "pods", "prod"),
            false,
        ),
        (
            "role not cluster-wide",
            res(&alice, "list", "", "pods", ""),
            false,
        ),
        (
            "role wrong group",
            res(&alice, "get", "apps", "pods", "dev"),
            false,
        ),
        // Subresources.
        (
            "subresource listed",
            res(&alice, "get", "", "pods/log", "dev"),
            true,
        ),
        (
            "subresource not listed",
            res(&alice, "get", "", "pods/exec", "dev"),
            false,
        ),
        (
            "*/scale",
            res(&bob, "update", "apps", "deployments/scale", "dev"),
            true,
        ),
        (
            "*/scale other resource",
            res(&bob, "get", "apps", "statefulsets/scale", "dev"),
            true,
        ),
        (
            "*/scale not the parent",
            res(&bob, "get", "apps", "statefulsets", "dev"),
            false,
        ),
        (
            "* resource covers subresources",
            res(&robot, "get", "", "pods/status", "x"),
            true,
        ),
        // RoleBinding to a ClusterRole: limited to the binding's namespace.
        (
            "rb->clusterrole in ns",
            res(&bob, "create", "apps", "deployments", "dev"),
            true,
        ),
        (
            "rb->clusterrole other ns",
            res(&bob, "create", "apps", "deployments", "prod"),
            false,
        ),
        (
            "rb->clusterrole cluster-wide",
            res(&bob, "list", "apps", "deployments", ""),
            false,
        ),
        // resourceNames.
        (
            "resourceName match",
            named_res(&bob, "get", "configmaps", "dev", "app-config"),
            true,
        ),
        (
            "resourceName other",
            named_res(&bob, "get", "configmaps", "dev", "other"),
            false,
        ),
        (
            "resourceName list",
            res(&bob, "list", "", "configmaps", "dev"),
            false,
        ),
        // ClusterRoleBinding everywhere; apiGroups "*".
        (
            "crb cluster-scoped",
            res(&ops, "list", "", "nodes", ""),
            true,
        ),
        (
            "crb in a namespace",
            res(&ops, "get", "", "nodes", "dev"),
            true,
        ),
        (
            "crb group *",
            res(&ops, "watch", "example.com", "nodes", ""),
            true,
        ),
        (
            "crb verb not held",
            res(&ops, "delete", "", "nodes", ""),
            false,
        ),
        // Non-resource URLs.
        ("url exact", path(&ops, "get", "/healthz"), true),
        ("url exact only", path(&ops, "get", "/healthz/etcd"), false),
        ("url prefix", path(&ops, "get", "/apis/apps/v1"), true),
        (
            "url prefix needs the slash",
            path(&ops, "get", "/apis"),
            false,
        ),
        ("url verb", path(&ops, "post", "/healthz"), false),
        (
            "url not a resource",
            res(&ops, "get", "", "healthz", ""),
            false,
        ),
        // Service accounts.
        ("sa subject", res(&robot, "get", "", "secrets", "any"), true),
        (
            "sa subject verb",
            res(&robot, "list", "", "secrets", "any"),
            false,
        ),
        (
            "sa defaults to binding ns",
            res(&builder, "get", "", "pods", "dev"),
            true,
        ),
        (
            "sa in other ns",
            res(&other_builder, "get", "", "pods", "dev"),
            false,
        ),
        (
            "sa namespace group",
            res(&qa_sa, "patch", "apps", "deployments", "qa"),
            true,
        ),
        (
            "sa namespace group other ns",
            res(&qa_sa, "patch", "apps", "deployments", "dev"),
            false,
        ),
        // Nobody.
        (
            "unknown user",
            res(&usr("mallory", &[]), "get", "", "pods", "dev"),
            false,
        ),
        (
            "user name is not a group",
            res(&usr("ops", &[]), "list", "", "nodes", ""),
            false,
        ),
    ];
    for (name, attrs, want) in cases {
        assert_eq!(allowed(&authz, &attrs), want, "{name}: {attrs:?}");
    }
}

#[test]
fn wildcards_and_masters() {
    let authz = authorizer_with(&[
        role(
            "ClusterRole",
            "",
            "all",
            json!([
                { "apiGroups": ["*"], "resources": ["*"], "verbs": ["*"] },
                { "nonResourceURLs": ["*"], "verbs": ["*"] },
            ]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "root",
            "ClusterRole",
            "all",
            json!([subj("User", "root")]),
        ),
    ]);
    let root = usr("root", &[]);
    assert!(allowed(
        &authz,
        &res(&root, "deletecollection", "x.io", "things/status", "ns")
    ));
    assert!(allowed(&authz, &res(&root, "impersonate", "", "users", "")));
    assert!(allowed(&authz, &path(&root, "put", "/anything/at/all")));

    let admin = usr("admin", &["system:masters"]);
    assert_eq!(
        authz.authorize(&res(&admin, "get", "", "secrets", "kube-system")),
        Decision::Allow(String::new())
    );
    assert_eq!(
        privileged_group_decision(&res(&root, "get", "", "secrets", "")),
        Decision::NoOpinion(String::new())
    );
    // authorize_rbac alone does not know system:masters.
    assert_eq!(
        authz.authorize_rbac(&res(&admin, "get", "", "secrets", "")),
        Decision::NoOpinion(String::new())
    );
}

#[test]
fn reasons_like_upstream() {
    let authz = authorizer_with(&fixture());
    assert_eq!(
        authz.authorize(&res(&usr("carol", &["ops"]), "get", "", "nodes", "")),
        Decision::Allow(
            r#"RBAC: allowed by ClusterRoleBinding "ops-nodes" of ClusterRole "node-watcher" to Group "ops""#.into()
        )
    );
    assert_eq!(
        authz.authorize(&res(&usr("alice", &[]), "get", "", "pods", "dev")),
        Decision::Allow(
            r#"RBAC: allowed by RoleBinding "alice-pods/dev" of Role "pod-reader" to User "alice""#
                .into()
        )
    );
    assert_eq!(
        authz.authorize(&res(&usr("system:serviceaccount:dev:builder", &[]), "get", "", "pods", "dev")),
        Decision::Allow(
            r#"RBAC: allowed by RoleBinding "local-sa/dev" of Role "pod-reader" to ServiceAccount "builder/dev""#
                .into()
        )
    );
    assert_eq!(
        authz.authorize(&res(&usr("system:serviceaccount:ci:robot", &[]), "get", "", "pods", "")),
        Decision::Allow(
            r#"RBAC: allowed by ClusterRoleBinding "sa-status" of ClusterRole "everything-status" to ServiceAccount "robot/ci""#
                .into()
        )
    );
    assert_eq!(
        authz.authorize(&res(&usr("alice", &[]), "delete", "", "pods", "dev")),
        Decision::NoOpinion(String::new())
    );
}

#[test]
fn missing_roles_are_reported_and_do_not_block_others() {
    let authz = authorizer_with(&[
        binding(
            "ClusterRoleBinding",
            "",
            "a",
            "ClusterRole",
            "gone",
            json!([subj("User", "dan")]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "b",
            "Role",
            "gone-too",
            json!([subj("User", "dan")]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "c",
            "Kind",
            "x",
            json!([subj("User", "dan")]),
        ),
        binding(
            "RoleBinding",
            "dev",
            "d",
            "ClusterRole",
            "gone",
            json!([subj("User", "dan")]),
        ),
    ]);
    assert_eq!(
        authz.authorize(&res(&usr("dan", &[]), "get", "", "pods", "dev")),
        Decision::NoOpinion(
            r#"RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "gone-too" not found, unsupported role reference kind: "Kind"]"#
                .into()
        )
    );
    assert_eq!(
        authz.authorize(&res(&usr("dan", &[]), "get", "", "pods", "")),
        Decision::NoOpinion(
            r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#.into()
        )
    );
    // Bindings that do not apply to the user are not resolved.
    assert_eq!(
        authz.authorize(&res(&usr("eve", &[]), "get", "", "pods", "dev")),
        Decision::NoOpinion(String::new())
    );
}

#[test]
fn authenticated_and_anonymous_groups() {
    let authz = authorizer_with(&[
        role(
            "ClusterRole",
            "",
            "r",
            json!([{ "nonResourceURLs": ["/version"], "verbs": ["get"] }]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "authn",
            "ClusterRole",
            "r",
            json!([subj("Group", "system:authenticated")]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "sas",
            "ClusterRole",
            "r",
            json!([subj("Group", "system:serviceaccounts")]),
        ),
    ]);
    // system:authenticated is implied for everyone but anonymous.
    assert!(allowed(
        &authz,
        &path(&usr("frank", &[]), "get", "/version")
    ));
    assert!(!allowed(
        &authz,
        &path(&UserInfo::anonymous(), "get", "/version")
    ));
    // system:serviceaccounts is implied for service accounts.
    let sa = UserInfo {
        groups: vec![],
        ..usr("system:serviceaccount:a:b", &[])
    };
    assert_eq!(
        authz.authorize(&path(&sa, "get", "/version")),
        Decision::Allow(r#"RBAC: allowed by ClusterRoleBinding "authn" of ClusterRole "r" to Group "system:authenticated""#.into())
    );
    assert_eq!(
        subject_groups(&sa),
        vec![
            "system:authenticated",
            "system:serviceaccounts",
            "system:serviceaccounts:a"
        ]
    );
    assert_eq!(
        split_service_account("system:serviceaccount:ns:name"),
        Some(("ns", "name"))
    );
    assert_eq!(split_service_account("system:serviceaccount:ns"), None);
    assert_eq!(split_service_account("alice"), None);
}

#[test]
fn cache_updates_and_removals() {
    let authz = authorizer_with(&fixture());
    let cache = authz.cache().clone();
    let alice = usr("alice", &[]);
    let zed = usr("zed", &[]);
    let get_pods = res(&alice, "get", "", "pods", "dev");
    assert!(allowed(&authz, &get_pods));

    // Re-binding to another subject drops the old index entry.
    cache
        .apply(
            "rolebindings",
            &binding(
                "RoleBinding",
                "dev",
                "alice-pods",
                "Role",
                "pod-reader",
                json!([subj("User", "zed")]),
            ),
        )
        .expect("apply");
    assert!(!allowed(&authz, &get_pods));
    assert!(allowed(&authz, &res(&zed, "get", "", "pods", "dev")));

    // Removing the role makes the binding dangle.
    cache.remove("Role", "dev", "pod-reader").expect("remove");
    assert_eq!(
        authz.authorize(&res(&zed, "get", "", "pods", "dev")),
        Decision::NoOpinion(
            r#"RBAC: role.rbac.authorization.k8s.io "pod-reader" not found"#.into()
        )
    );
    cache
        .remove("RoleBinding", "dev", "alice-pods")
        .expect("remove");
    assert_eq!(
        authz.authorize(&res(&zed, "get", "", "pods", "dev")),
        Decision::NoOpinion(String::new())
    );

    // Updating a role's rules takes effect at once.
    cache
        .apply(
            "ClusterRole",
            &role(
                "ClusterRole",
                "",
                "node-watcher",
                json!([{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["delete"] }]),
            ),
        )
        .expect("apply");
    assert!(allowed(
        &authz,
        &res(&usr("c", &["ops"]), "delete", "", "nodes", "")
    ));
    assert!(!allowed(
        &authz,
        &res(&usr("c", &["ops"]), "get", "", "nodes", "")
    ));

    // replace_all swaps a whole kind.
    cache
        .replace_all("clusterrolebindings", &[])
        .expect("replace");
    assert!(!allowed(
        &authz,
        &res(&usr("c", &["ops"]), "delete", "", "nodes", "")
    ));
    assert_eq!(cache.counts(), (0, 3, 3, 0));

    // Bad input is refused without panicking.
    assert!(matches!(
        cache.apply("Pod", &json!({})),
        Err(RbacCacheError::UnknownKind(_))
    ));
    assert!(matches!(
        cache.apply("Role", &json!({ "metadata": { "name": "x" } })),
        Err(RbacCacheError::MissingNamespace { .. })
    ));
    assert!(matches!(
        cache.apply("ClusterRole", &json!("junk")),
        Err(RbacCacheError::MissingName { .. })
    ));
    let err = cache.replace_all(
        "Role",
        &[json!({}), role("Role", "dev", "ok", json!("not a list"))],
    );
    assert!(matches!(err, Err(RbacCacheError::MissingName { .. })));
    assert_eq!(cache.counts().0, 1);
}

#[test]
fn malformed_rules_grant_nothing() {
    let authz = authorizer_with(&[
        role(
            "ClusterRole",
            "",
            "weird",
            json!([
                { "apiGroups": "", "resources": ["pods"], "verbs": ["get"] },
                { "apiGroups": [""], "resources": [1, "pods"], "verbs": [null] },
                "junk",
            ]),
        ),
        binding(
            "ClusterRoleBinding",
            "",
            "w",
            "ClusterRole",
            "weird",
            json!([subj("User", "u"), 7]),
        ),
    ]);
    assert!(!allowed(
        &authz,
        &res(&usr("u", &[]), "get", "", "pods", "")
    ));
}

#[test]
fn rules_for_lists_what_a_user_may_do() {
    let authz = authorizer_with(&fixture());
    let (resource, non_resource, incomplete) = authz.rules_for(&usr("carol", &["ops"]), "dev");
    assert!(!incomplete);
    assert_eq!(
        resource,
        vec![ResourceRule {
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            api_groups: vec!["*".into()],
            resources: vec!["nodes".into()],
            resource_names: vec![],
        }]
    );
    assert_eq!(
        non_resource,
        vec![NonResourceRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
        }]
    );

    // Namespace rules only in their namespace.
    let bob = usr("bob", &[]);
    assert_eq!(authz.rules_for(&bob, "dev").0.len(), 2);
    assert!(authz.rules_for(&bob, "prod").0.is_empty());
    assert!(authz.rules_for(&bob, "").0.is_empty());

    // JSON as SelfSubjectRulesReview shows it.
    let json = serde_json::to_value(&authz.rules_for(&bob, "dev").0).expect("json");
    assert_eq!(
        json[1],
        json!({ "verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["app-config"] })
    );

    // Resolution errors surface as the evaluation error.
    let broken = authorizer_with(&[binding(
        "ClusterRoleBinding",
        "",
        "x",
        "ClusterRole",
        "missing",
        json!([subj("User", "u")]),
    )]);
    let review = broken.rules_review(&usr("u", &[]), "dev");
    assert_eq!(
        review.evaluation_error.as_deref(),
        Some(r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#)
    );
    assert!(review.resource_rules.is_empty());
}

#[test]
fn go_quoting() {
    assert_eq!(go_quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
    assert_eq!(go_quote("\u{1}é"), "\"\\x01é\"");
    assert_eq!(go_quote_list(&["a".into(), "".into()]), r#"["a" ""]"#);
    assert_eq!(go_quote_list(&[]), "[]");
}
