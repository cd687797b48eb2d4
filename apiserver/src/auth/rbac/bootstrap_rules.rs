//! The larger rule sets of the bootstrap ClusterRoles (aggregate-to-edit/view, system:node,
//! kube-controller-manager, kube-scheduler) and the API group and verb constants they use.

use super::bootstrap::{events_rule, named, rule};
use super::rule::PolicyRule;

pub(super) const CORE: &str = "";
pub(super) const APPS: &str = "apps";
pub(super) const AUTHENTICATION: &str = "authentication.k8s.io";
pub(super) const AUTHORIZATION: &str = "authorization.k8s.io";
pub(super) const AUTOSCALING: &str = "autoscaling";
pub(super) const BATCH: &str = "batch";
pub(super) const CERTIFICATES: &str = "certificates.k8s.io";
pub(super) const COORDINATION: &str = "coordination.k8s.io";
pub(super) const DISCOVERY: &str = "discovery.k8s.io";
pub(super) const EXTENSIONS: &str = "extensions";
pub(super) const NETWORKING: &str = "networking.k8s.io";
pub(super) const NODE: &str = "node.k8s.io";
pub(super) const POLICY: &str = "policy";
pub(super) const STORAGE: &str = "storage.k8s.io";

pub(super) const READ: &[&str] = &["get", "list", "watch"];
pub(super) const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
pub(super) const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
pub(super) const READ_UPDATE: &[&str] = &["get", "list", "watch", "update", "patch"];

/// Rules of `system:aggregate-to-edit` (what `edit` adds to `view`).
pub(super) fn edit_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            READ,
            &[CORE],
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], &[CORE], &["serviceaccounts"]),
        rule(
            WRITE,
            &[CORE],
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        rule(&["create"], &[CORE], &["pods/eviction"]),
        rule(
            WRITE,
            &[CORE],
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
        rule(
            WRITE,
            &[APPS],
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, &[AUTOSCALING], &["horizontalpodautoscalers"]),
        rule(WRITE, &[BATCH], &["jobs", "cronjobs"]),
        rule(
            WRITE,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(WRITE, &[POLICY], &["poddisruptionbudgets"]),
        rule(WRITE, &[NETWORKING], &["networkpolicies", "ingresses"]),
        rule(READ_WRITE, &[COORDINATION], &["leases"]),
    ]
}

/// Rules of `system:aggregate-to-view`.
pub(super) fn view_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            READ,
            &[CORE],
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            &[CORE],
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        rule(READ, &[CORE], &["namespaces"]),
        rule(READ, &[DISCOVERY], &["endpointslices"]),
        rule(
            READ,
            &[APPS],
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
            ],
        ),
        rule(
            READ,
            &[AUTOSCALING],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            &[BATCH],
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        rule(
            READ,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(
            READ,
            &[POLICY],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            &[NETWORKING],
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ]
}

/// Upstream `NodeRules()` (default feature gates).
pub(super) fn node_rules() -> Vec<PolicyRule> {
    vec![
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(
            &["create"],
            &[AUTHORIZATION],
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        rule(READ, &[CORE], &["services"]),
        rule(&["create", "get", "list", "watch"], &[CORE], &["nodes"]),
        rule(&["update", "patch"], &[CORE], &["nodes/status"]),
        rule(&["update", "patch"], &[CORE], &["nodes"]),
        rule(&["create", "update", "patch"], &[CORE], &["events"]),
        rule(READ, &[CORE], &["pods"]),
        rule(&["create", "delete"], &[CORE], &["pods"]),
        rule(&["update", "patch"], &[CORE], &["pods/status"]),
        rule(&["create"], &[CORE], &["pods/eviction"]),
        rule(READ, &[CORE], &["secrets", "configmaps"]),
        rule(
            &["get"],
            &[CORE],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["get"], &[CORE], &["endpoints"]),
        rule(
            &["create", "get", "list", "watch"],
            &[CERTIFICATES],
            &["certificatesigningrequests"],
        ),
        rule(
            &["get", "create", "update", "patch", "delete"],
            &[COORDINATION],
            &["leases"],
        ),
        rule(&["get"], &[STORAGE], &["volumeattachments"]),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
        rule(
            &["get", "update", "patch"],
            &[CORE],
            &["persistentvolumeclaims/status"],
        ),
        rule(READ, &[STORAGE], &["csidrivers"]),
        rule(
            &["get", "create", "update", "patch", "delete"],
            &[STORAGE],
            &["csinodes"],
        ),
        rule(READ, &[NODE], &["runtimeclasses"]),
    ]
}

pub(super) fn kube_controller_manager_rules() -> Vec<PolicyRule> {
    vec![
        events_rule(),
        rule(&["create"], &[COORDINATION], &["leases"]),
        named(
            &["get", "update"],
            &[COORDINATION],
            &["leases"],
            &["kube-controller-manager"],
        ),
        rule(&["create"], &[CORE], &["secrets", "serviceaccounts"]),
        rule(&["delete"], &[CORE], &["secrets"]),
        rule(
            &["get"],
            &[CORE],
            &["namespaces", "secrets", "serviceaccounts", "configmaps"],
        ),
        rule(&["update"], &[CORE], &["secrets", "serviceaccounts"]),
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        rule(&["list", "watch"], &["*"], &["*"]),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
    ]
}

pub(super) fn kube_scheduler_rules() -> Vec<PolicyRule> {
    vec![
        events_rule(),
        rule(&["create"], &[COORDINATION], &["leases"]),
        named(
            &["get", "update"],
            &[COORDINATION],
            &["leases"],
            &["kube-scheduler"],
        ),
        rule(READ, &[CORE], &["nodes"]),
        rule(&["get", "list", "watch", "delete"], &[CORE], &["pods"]),
        rule(&["create"], &[CORE], &["pods/binding", "bindings"]),
        rule(&["patch", "update"], &[CORE], &["pods/status"]),
        rule(READ, &[CORE], &["services", "replicationcontrollers"]),
        rule(READ, &[APPS, EXTENSIONS], &["replicasets"]),
        rule(READ, &[APPS], &["statefulsets"]),
        rule(READ, &[POLICY], &["poddisruptionbudgets"]),
        rule(
            READ,
            &[CORE],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        rule(READ, &[STORAGE], &["csinodes"]),
        rule(READ, &[CORE], &["namespaces"]),
        rule(READ, &[STORAGE], &["csidrivers"]),
        rule(READ, &[STORAGE], &["csistoragecapacities"]),
    ]
}
