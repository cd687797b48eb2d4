//! Upstream's bootstrap RBAC policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy,
//! Kubernetes 1.33): the default ClusterRoles, ClusterRoleBindings and the kube-system /
//! kube-public Roles and RoleBindings, labelled `kubernetes.io/bootstrapping: rbac-defaults` and
//! annotated `rbac.authorization.kubernetes.io/autoupdate: "true"`.

use serde_json::{Value, json};

use super::bootstrap_rules::{
    AUTHENTICATION, AUTHORIZATION, CERTIFICATES, COORDINATION, CORE, DISCOVERY, EXTENSIONS, READ,
    READ_UPDATE, READ_WRITE, STORAGE, edit_rules, kube_controller_manager_rules,
    kube_scheduler_rules, node_rules, view_rules,
};
use super::cache::RBAC_GROUP;
use super::controller_roles::{controller_role_bindings, controller_roles};
use super::reconcile::AUTOUPDATE_ANNOTATION;
use super::rule::PolicyRule;

/// The label every bootstrap object carries.
pub const BOOTSTRAPPING_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// Label prefix of the aggregation labels: `rbac.authorization.k8s.io/aggregate-to-<role>`.
pub const AGGREGATE_TO: &str = "rbac.authorization.k8s.io/aggregate-to-";

fn owned(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| (*s).to_owned()).collect();
    v.sort();
    v.dedup();
    v
}

/// A resource rule, its lists sorted and deduplicated as upstream's `RuleOrDie`.
pub(super) fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: owned(verbs),
        api_groups: owned(groups),
        resources: owned(resources),
        ..Default::default()
    }
}

/// [`rule`] restricted to resource names.
pub(super) fn named(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    names: &[&str],
) -> PolicyRule {
    PolicyRule {
        resource_names: owned(names),
        ..rule(verbs, groups, resources)
    }
}

/// A non-resource rule.
pub(super) fn urls(verbs: &[&str], paths: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: owned(verbs),
        non_resource_urls: owned(paths),
        ..Default::default()
    }
}

/// Upstream `eventsRule()`: create/update/patch events in the core and events.k8s.io groups.
pub(super) fn events_rule() -> PolicyRule {
    rule(
        &["create", "update", "patch"],
        &[CORE, "events.k8s.io"],
        &["events"],
    )
}

fn metadata(name: &str, namespace: Option<&str>, extra_labels: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(BOOTSTRAPPING_LABEL.0.into(), BOOTSTRAPPING_LABEL.1.into());
    for (k, v) in extra_labels {
        labels.insert((*k).into(), (*v).into());
    }
    let mut meta = json!({
        "name": name,
        "labels": labels,
        "annotations": { AUTOUPDATE_ANNOTATION: "true" },
    });
    if let (Some(ns), Some(map)) = (namespace, meta.as_object_mut()) {
        map.insert("namespace".into(), ns.into());
    }
    meta
}

fn rules_json(rules: &[PolicyRule]) -> Value {
    Value::Array(rules.iter().map(PolicyRule::to_json).collect())
}

pub(super) fn cluster_role(name: &str, rules: &[PolicyRule]) -> Value {
    labelled_cluster_role(name, &[], rules)
}

fn labelled_cluster_role(name: &str, labels: &[(&str, &str)], rules: &[PolicyRule]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, None, labels),
        "rules": rules_json(rules),
    })
}

/// An aggregated ClusterRole selecting `aggregate-to-<name>: "true"`.
fn aggregated_cluster_role(name: &str, labels: &[(&str, &str)]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, None, labels),
        "aggregationRule": {
            "clusterRoleSelectors": [{ "matchLabels": { format!("{AGGREGATE_TO}{name}"): "true" } }],
        },
        "rules": [],
    })
}

pub(super) fn role(namespace: &str, name: &str, rules: &[PolicyRule]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(name, Some(namespace), &[]),
        "rules": rules_json(rules),
    })
}

pub(super) fn user(name: &str) -> Value {
    json!({ "apiGroup": RBAC_GROUP, "kind": "User", "name": name })
}

pub(super) fn group(name: &str) -> Value {
    json!({ "apiGroup": RBAC_GROUP, "kind": "Group", "name": name })
}

pub(super) fn service_account(namespace: &str, name: &str) -> Value {
    json!({ "kind": "ServiceAccount", "name": name, "namespace": namespace })
}

/// A ClusterRoleBinding of ClusterRole `role` (no `subjects` key when there are none).
pub(super) fn cluster_role_binding(name: &str, role: &str, subjects: Vec<Value>) -> Value {
    let mut b = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, None, &[]),
        "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role },
    });
    if let (false, Some(map)) = (subjects.is_empty(), b.as_object_mut()) {
        map.insert("subjects".into(), Value::Array(subjects));
    }
    b
}

/// A RoleBinding of Role `role` in `namespace`.
pub(super) fn role_binding(namespace: &str, name: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(name, Some(namespace), &[]),
        "roleRef": { "apiGroup": RBAC_GROUP, "kind": "Role", "name": role },
        "subjects": subjects,
    })
}

/// Every bootstrap object, in creation order: ClusterRoles, ClusterRoleBindings, then the
/// namespaced Roles and RoleBindings (their namespaces, kube-system and kube-public, must
/// exist first). Create what is missing and [`super::reconcile`] the rest at every start.
pub fn bootstrap_policy() -> Vec<Value> {
    let mut out = cluster_roles();
    out.extend(controller_roles());
    out.extend(cluster_role_bindings());
    out.extend(controller_role_bindings());
    out.extend(namespace_roles());
    out.extend(namespace_role_bindings());
    out
}

fn agg_label(role: &str) -> String {
    format!("{AGGREGATE_TO}{role}")
}

/// Upstream `ClusterRoles()`.
pub fn cluster_roles() -> Vec<Value> {
    let to_admin = agg_label("admin");
    let to_edit = agg_label("edit");
    let to_view = agg_label("view");
    let csr_approver = |name: &str, signer: &str| {
        cluster_role(
            name,
            &[named(
                &["approve"],
                &[CERTIFICATES],
                &["signers"],
                &[signer],
            )],
        )
    };
    vec![
        cluster_role(
            "cluster-admin",
            &[rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        cluster_role(
            "system:discovery",
            &[urls(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        cluster_role(
            "system:monitoring",
            &[urls(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        cluster_role(
            "system:basic-user",
            &[
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(&["create"], &[AUTHENTICATION], &["selfsubjectreviews"]),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[urls(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        aggregated_cluster_role("admin", &[]),
        aggregated_cluster_role("edit", &[(&to_admin, "true")]),
        aggregated_cluster_role("view", &[(&to_edit, "true")]),
        labelled_cluster_role(
            "system:aggregate-to-admin",
            &[(&to_admin, "true")],
            &[
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["localsubjectaccessreviews"],
                ),
                rule(
                    READ_WRITE,
                    &["rbac.authorization.k8s.io"],
                    &["roles", "rolebindings"],
                ),
            ],
        ),
        labelled_cluster_role(
            "system:aggregate-to-edit",
            &[(&to_edit, "true")],
            &edit_rules(),
        ),
        labelled_cluster_role(
            "system:aggregate-to-view",
            &[(&to_view, "true")],
            &view_rules(),
        ),
        cluster_role(
            "system:heapster",
            &[
                rule(READ, &[CORE], &["events", "pods", "nodes", "namespaces"]),
                rule(READ, &[EXTENSIONS], &["deployments"]),
            ],
        ),
        cluster_role("system:node", &node_rules()),
        cluster_role(
            "system:node-problem-detector",
            &[
                rule(&["get"], &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["nodes/status"]),
                events_rule(),
            ],
        ),
        cluster_role(
            "system:kubelet-api-admin",
            &[
                rule(READ, &[CORE], &["nodes"]),
                rule(&["proxy"], &[CORE], &["nodes"]),
                rule(
                    &["*"],
                    &[CORE],
                    &["nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"],
                ),
            ],
        ),
        cluster_role(
            "system:node-bootstrapper",
            &[rule(
                &["create", "get", "list", "watch"],
                &[CERTIFICATES],
                &["certificatesigningrequests"],
            )],
        ),
        cluster_role(
            "system:auth-delegator",
            &[
                rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
                rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
            ],
        ),
        cluster_role(
            "system:kube-aggregator",
            &[rule(READ, &[CORE], &["services", "endpoints"])],
        ),
        cluster_role(
            "system:kube-controller-manager",
            &kube_controller_manager_rules(),
        ),
        cluster_role(
            "system:kube-dns",
            &[rule(
                &["list", "watch"],
                &[CORE],
                &["endpoints", "services"],
            )],
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            &[
                rule(
                    &["get", "list", "watch", "create", "delete"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(&["watch"], &[CORE], &["events"]),
                events_rule(),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            &[rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/nodeclient"],
            )],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            &[rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/selfnodeclient"],
            )],
        ),
        cluster_role(
            "system:volume-scheduler",
            &[
                rule(READ_UPDATE, &[CORE], &["persistentvolumes"]),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(READ_UPDATE, &[CORE], &["persistentvolumeclaims"]),
            ],
        ),
        csr_approver(
            "system:certificates.k8s.io:legacy-unknown-approver",
            "kubernetes.io/legacy-unknown",
        ),
        csr_approver(
            "system:certificates.k8s.io:kubelet-serving-approver",
            "kubernetes.io/kubelet-serving",
        ),
        csr_approver(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            "kubernetes.io/kube-apiserver-client",
        ),
        csr_approver(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[urls(
                &["get"],
                &["/.well-known/openid-configuration", "/openid/v1/jwks"],
            )],
        ),
        cluster_role(
            "system:node-proxier",
            &[
                rule(&["list", "watch"], &[CORE], &["services", "endpoints"]),
                rule(READ, &[CORE], &["nodes"]),
                events_rule(),
                rule(&["list", "watch"], &[DISCOVERY], &["endpointslices"]),
            ],
        ),
        cluster_role("system:kube-scheduler", &kube_scheduler_rules()),
    ]
}

/// Upstream `ClusterRoleBindings()`.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        cluster_role_binding(
            "cluster-admin",
            "cluster-admin",
            vec![group("system:masters")],
        ),
        cluster_role_binding(
            "system:monitoring",
            "system:monitoring",
            vec![group("system:monitoring")],
        ),
        cluster_role_binding(
            "system:discovery",
            "system:discovery",
            vec![group("system:authenticated")],
        ),
        cluster_role_binding(
            "system:basic-user",
            "system:basic-user",
            vec![group("system:authenticated")],
        ),
        cluster_role_binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            vec![
                group("system:authenticated"),
                group("system:unauthenticated"),
            ],
        ),
        cluster_role_binding(
            "system:node-proxier",
            "system:node-proxier",
            vec![user("system:kube-proxy")],
        ),
        cluster_role_binding(
            "system:kube-controller-manager",
            "system:kube-controller-manager",
            vec![user("system:kube-controller-manager")],
        ),
        cluster_role_binding(
            "system:kube-dns",
            "system:kube-dns",
            vec![service_account("kube-system", "kube-dns")],
        ),
        cluster_role_binding(
            "system:kube-scheduler",
            "system:kube-scheduler",
            vec![user("system:kube-scheduler")],
        ),
        cluster_role_binding(
            "system:volume-scheduler",
            "system:volume-scheduler",
            vec![user("system:kube-scheduler")],
        ),
        // Deprecated since the Node authorizer: kept, with no subjects.
        cluster_role_binding("system:node", "system:node", vec![]),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
    ]
}

const KUBE_SYSTEM: &str = "kube-system";
const KUBE_PUBLIC: &str = "kube-public";

fn leader_locking_rules() -> Vec<PolicyRule> {
    let verbs = &["watch", "get", "list", "create", "update"];
    vec![
        rule(verbs, &[COORDINATION], &["leases"]),
        rule(verbs, &[COORDINATION], &["leasecandidates"]),
    ]
}

/// Upstream `NamespaceRoles()`, flattened.
pub fn namespace_roles() -> Vec<Value> {
    vec![
        role(
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            &[named(
                READ,
                &[CORE],
                &["configmaps"],
                &["extension-apiserver-authentication"],
            )],
        ),
        role(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            &leader_locking_rules(),
        ),
        role(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            &leader_locking_rules(),
        ),
        role(
            KUBE_SYSTEM,
            "system:controller:bootstrap-signer",
            &[rule(READ, &[CORE], &["secrets"])],
        ),
        role(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            &[rule(
                &["create", "get", "list", "watch"],
                &[CORE],
                &["configmaps"],
            )],
        ),
        role(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            &[
                rule(&["delete", "get", "list", "watch"], &[CORE], &["secrets"]),
                events_rule(),
            ],
        ),
        role(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            &[
                rule(READ, &[CORE], &["configmaps"]),
                named(&["update"], &[CORE], &["configmaps"], &["cluster-info"]),
                events_rule(),
            ],
        ),
    ]
}

/// Upstream `NamespaceRoleBindings()`, flattened.
pub fn namespace_role_bindings() -> Vec<Value> {
    let controller = |ns: &str, name: &str| {
        let full = format!("system:controller:{name}");
        role_binding(ns, &full, &full, vec![service_account(KUBE_SYSTEM, name)])
    };
    vec![
        role_binding(
            KUBE_SYSTEM,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![
                user("system:kube-controller-manager"),
                user("system:kube-scheduler"),
            ],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            vec![
                user("system:kube-controller-manager"),
                service_account(KUBE_SYSTEM, "kube-controller-manager"),
                service_account(KUBE_SYSTEM, "leader-election-controller"),
            ],
        ),
        role_binding(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            vec![
                user("system:kube-scheduler"),
                service_account(KUBE_SYSTEM, "kube-scheduler"),
            ],
        ),
        controller(KUBE_SYSTEM, "bootstrap-signer"),
        controller(KUBE_SYSTEM, "cloud-provider"),
        controller(KUBE_SYSTEM, "token-cleaner"),
        controller(KUBE_PUBLIC, "bootstrap-signer"),
    ]
}
