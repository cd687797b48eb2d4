//! The `system:controller:<name>` ClusterRoles and their bindings to the kube-system service
//! accounts, as upstream kube-apiserver 1.33 bootstraps them with its default feature gates
//! (upstream `bootstrappolicy/controller_policy.go`).

use serde_json::Value;

use super::bootstrap::{
    cluster_role, cluster_role_binding, events_rule, named, rule, service_account,
};
use super::bootstrap_rules::{APPS, BATCH, CORE, EXTENSIONS, NETWORKING, READ, STORAGE};
use super::rule::PolicyRule;

/// Prefix of controller role names.
pub const CONTROLLER_ROLE_PREFIX: &str = "system:controller:";

/// API group of the admission policy kinds.
const ADMISSION_REGISTRATION: &str = "admissionregistration.k8s.io";

/// The controllers (service-account names in kube-system) with bootstrap roles, and their rules,
/// in upstream's rule order. Roles upstream adds only behind feature gates that are off by
/// default in 1.33 are left out: resource-claim-controller and device-taint-eviction-controller
/// (DynamicResourceAllocation, DRADeviceTaints), volumeattributesclass-protection-controller
/// (VolumeAttributesClass), kube-apiserver-serving-clustertrustbundle-publisher
/// (ClusterTrustBundle), storage-version-garbage-collector (StorageVersionAPI) and
/// storage-version-migrator-controller (StorageVersionMigrator).
fn controllers() -> Vec<(&'static str, Vec<PolicyRule>)> {
    vec![
        (
            "attachdetach-controller",
            vec![
                rule(
                    &["list", "watch"],
                    &[CORE],
                    &["persistentvolumes", "persistentvolumeclaims"],
                ),
                rule(READ, &[CORE], &["nodes"]),
                rule(&["patch", "update"], &[CORE], &["nodes/status"]),
                rule(&["list", "watch"], &[CORE], &["pods"]),
                events_rule(),
                rule(
                    &["get", "create", "delete", "list", "watch"],
                    &[STORAGE],
                    &["volumeattachments"],
                ),
                rule(READ, &[STORAGE], &["csidrivers"]),
                rule(READ, &[STORAGE], &["csinodes"]),
            ],
        ),
        (
            "certificate-controller",
            vec![
                rule(
                    &["get", "list", "watch", "delete"],
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                ),
                rule(
                    &["update"],
                    &["certificates.k8s.io"],
                    &[
                        "certificatesigningrequests/status",
                        "certificatesigningrequests/approval",
                    ],
                ),
                named(
                    &["approve"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &["kubernetes.io/kube-apiserver-client-kubelet"],
                ),
                named(
                    &["sign"],
                    &["certificates.k8s.io"],
                    &["signers"],
                    &[
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                        "kubernetes.io/legacy-unknown",
                    ],
                ),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                events_rule(),
            ],
        ),
        (
            "clusterrole-aggregation-controller",
            vec![rule(
                &["escalate", "get", "list", "watch", "update", "patch"],
                &["rbac.authorization.k8s.io"],
                &["clusterroles"],
            )],
        ),
        (
            "cronjob-controller",
            vec![
                rule(&["get", "list", "watch", "update"], &[BATCH], &["cronjobs"]),
                rule(
                    &[
                        "get", "list", "watch", "create", "update", "delete", "patch",
                    ],
                    &[BATCH],
                    &["jobs"],
                ),
                rule(&["update"], &[BATCH], &["cronjobs/status"]),
                rule(&["update"], &[BATCH], &["cronjobs/finalizers"]),
                rule(&["list", "watch", "delete"], &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                rule(READ, &[APPS, EXTENSIONS], &["daemonsets"]),
                rule(&["update"], &[APPS, EXTENSIONS], &["daemonsets/status"]),
                rule(&["update"], &[APPS, EXTENSIONS], &["daemonsets/finalizers"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[CORE],
                    &["pods"],
                ),
                rule(&["create"], &[CORE], &["pods/binding"]),
                rule(
                    &[
                        "get", "list", "watch", "create", "delete", "update", "patch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                events_rule(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[APPS, EXTENSIONS],
                    &["deployments"],
                ),
                rule(&["update"], &[APPS, EXTENSIONS], &["deployments/status"]),
                rule(
                    &["update"],
                    &[APPS, EXTENSIONS],
                    &["deployments/finalizers"],
                ),
                rule(
                    &[
                        "get", "list", "watch", "create", "update", "patch", "delete",
                    ],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                rule(&["get", "list", "watch", "update"], &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                rule(READ, &[APPS, EXTENSIONS], &["deployments"]),
                rule(READ, &[APPS, EXTENSIONS], &["replicasets"]),
                rule(READ, &[CORE], &["replicationcontrollers"]),
                rule(READ, &["policy"], &["poddisruptionbudgets"]),
                rule(READ, &[APPS], &["statefulsets"]),
                rule(&["update"], &["policy"], &["poddisruptionbudgets/status"]),
                rule(&["patch", "update"], &[CORE], &["pods/status"]),
                rule(&["get"], &["*"], &["*/scale"]),
                events_rule(),
            ],
        ),
        (
            "endpoint-controller",
            vec![
                rule(READ, &[CORE], &["services", "pods"]),
                rule(
                    &["get", "list", "watch", "create", "update", "delete"],
                    &[CORE],
                    &["endpoints"],
                ),
                rule(&["create"], &[CORE], &["endpoints/restricted"]),
                events_rule(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                rule(READ, &[CORE], &["services", "pods", "nodes"]),
                rule(&["update"], &[CORE], &["services/finalizers"]),
                rule(
                    &["get", "list", "watch", "create", "update", "delete"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
                events_rule(),
            ],
        ),
        (
            "endpointslicemirroring-controller",
            vec![
                rule(READ, &[CORE], &["services", "endpoints"]),
                rule(&["update"], &[CORE], &["services/finalizers"]),
                rule(&["update"], &[CORE], &["endpoints/finalizers"]),
                rule(
                    &["get", "list", "watch", "create", "update", "delete"],
                    &["discovery.k8s.io"],
                    &["endpointslices"],
                ),
                events_rule(),
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                rule(READ, &[CORE], &["pods"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
                rule(
                    &["get", "list", "watch", "create"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                events_rule(),
            ],
        ),
        (
            "expand-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update", "patch"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(
                    &["update", "patch"],
                    &[CORE],
                    &["persistentvolumeclaims/status"],
                ),
                rule(READ, &[CORE], &["persistentvolumeclaims"]),
                events_rule(),
                // The in-tree Portworx volume plugin.
                rule(&["get"], &[CORE], &["services"]),
            ],
        ),
        (
            "generic-garbage-collector",
            vec![
                rule(
                    &["get", "list", "watch", "patch", "update", "delete"],
                    &["*"],
                    &["*"],
                ),
                events_rule(),
            ],
        ),
        (
            "horizontal-pod-autoscaler",
            vec![
                rule(READ, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(
                    &["update"],
                    &["autoscaling"],
                    &["horizontalpodautoscalers/status"],
                ),
                rule(&["get", "update"], &["*"], &["*/scale"]),
                rule(&["list", "watch"], &[CORE], &["pods"]),
                rule(&["list", "watch"], &["metrics.k8s.io"], &["pods"]),
                rule(READ, &["custom.metrics.k8s.io"], &["*"]),
                rule(READ, &["external.metrics.k8s.io"], &["*"]),
                events_rule(),
            ],
        ),
        (
            "job-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update", "patch"],
                    &[BATCH],
                    &["jobs"],
                ),
                rule(&["update"], &[BATCH], &["jobs/status"]),
                rule(&["update"], &[BATCH], &["jobs/finalizers"]),
                rule(
                    &["list", "watch", "create", "delete", "patch"],
                    &[CORE],
                    &["pods"],
                ),
                events_rule(),
            ],
        ),
        (
            "legacy-service-account-token-cleaner",
            vec![
                PolicyRule {
                    resource_names: vec![crate::bootstrap::LEGACY_TOKEN_TRACKING_CONFIGMAP.into()],
                    ..rule(&["get"], &[CORE], &["configmaps"])
                },
                rule(&["patch", "delete"], &[CORE], &["secrets"]),
            ],
        ),
        (
            "namespace-controller",
            vec![
                rule(
                    &["get", "list", "watch", "delete"],
                    &[CORE],
                    &["namespaces"],
                ),
                rule(
                    &["update"],
                    &[CORE],
                    &["namespaces/finalize", "namespaces/status"],
                ),
                rule(
                    &["get", "list", "watch", "delete", "deletecollection"],
                    &["*"],
                    &["*"],
                ),
            ],
        ),
        (
            "node-controller",
            vec![
                rule(
                    &["get", "list", "update", "delete", "patch", "watch"],
                    &[CORE],
                    &["nodes"],
                ),
                rule(&["patch", "update"], &[CORE], &["nodes/status"]),
                rule(&["patch", "update"], &[CORE], &["pods/status"]),
                rule(&["list", "watch", "get", "delete"], &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                rule(
                    &["get", "list", "watch", "update", "create", "delete"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(&["update"], &[CORE], &["persistentvolumes/status"]),
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(&["update"], &[CORE], &["persistentvolumeclaims/status"]),
                rule(
                    &["list", "watch", "get", "create", "delete"],
                    &[CORE],
                    &["pods"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                events_rule(),
                // The recycler watches its pod's events.
                rule(&["watch"], &[CORE], &["events"]),
                // The in-tree Portworx volume plugin.
                rule(&["get"], &[CORE], &["services"]),
            ],
        ),
        (
            "pod-garbage-collector",
            vec![
                rule(&["list", "watch", "delete"], &[CORE], &["pods"]),
                rule(READ, &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["pods/status"]),
            ],
        ),
        (
            "pv-protection-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                events_rule(),
            ],
        ),
        (
            "pvc-protection-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[CORE], &["pods"]),
                events_rule(),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[APPS, EXTENSIONS],
                    &["replicasets"],
                ),
                rule(&["update"], &[APPS, EXTENSIONS], &["replicasets/status"]),
                rule(
                    &["update"],
                    &[APPS, EXTENSIONS],
                    &["replicasets/finalizers"],
                ),
                rule(
                    &["list", "watch", "patch", "create", "delete"],
                    &[CORE],
                    &["pods"],
                ),
                events_rule(),
            ],
        ),
        (
            "replication-controller",
            vec![
                rule(
                    &["get", "list", "watch", "update"],
                    &[CORE],
                    &["replicationcontrollers"],
                ),
                rule(&["update"], &[CORE], &["replicationcontrollers/status"]),
                rule(&["update"], &[CORE], &["replicationcontrollers/finalizers"]),
                rule(
                    &["list", "watch", "patch", "create", "delete"],
                    &[CORE],
                    &["pods"],
                ),
                events_rule(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![
                rule(&["list", "watch"], &["*"], &["*"]),
                rule(&["update"], &[CORE], &["resourcequotas/status"]),
                events_rule(),
            ],
        ),
        (
            "root-ca-cert-publisher",
            vec![
                rule(&["create", "update"], &[CORE], &["configmaps"]),
                events_rule(),
            ],
        ),
        (
            "route-controller",
            vec![
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["nodes/status"]),
                events_rule(),
            ],
        ),
        (
            // SELinuxChangePolicy: beta and on by default since 1.33.
            "selinux-warning-controller",
            vec![
                events_rule(),
                rule(READ, &[CORE], &["persistentvolumes"]),
                rule(READ, &[CORE], &["persistentvolumeclaims"]),
                rule(READ, &[CORE], &["pods"]),
                rule(READ, &[STORAGE], &["csidrivers"]),
            ],
        ),
        (
            "service-account-controller",
            vec![
                rule(&["create"], &[CORE], &["serviceaccounts"]),
                events_rule(),
            ],
        ),
        (
            // MultiCIDRServiceAllocator: GA and on by default since 1.33.
            "service-cidrs-controller",
            vec![
                rule(
                    &["get", "list", "watch", "patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs"],
                ),
                rule(
                    &["patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs/finalizers"],
                ),
                rule(
                    &["patch", "update"],
                    &[NETWORKING],
                    &["servicecidrs/status"],
                ),
                rule(READ, &[NETWORKING], &["ipaddresses"]),
                events_rule(),
            ],
        ),
        (
            "service-controller",
            vec![
                rule(READ, &[CORE], &["services"]),
                rule(&["patch", "update"], &[CORE], &["services/status"]),
                rule(&["list", "watch"], &[CORE], &["nodes"]),
                events_rule(),
            ],
        ),
        (
            "statefulset-controller",
            vec![
                rule(&["list", "watch"], &[CORE], &["pods"]),
                rule(READ, &[APPS], &["statefulsets"]),
                rule(&["update"], &[APPS], &["statefulsets/status"]),
                rule(&["update"], &[APPS], &["statefulsets/finalizers"]),
                rule(
                    &["get", "create", "delete", "update", "patch"],
                    &[CORE],
                    &["pods"],
                ),
                rule(
                    &[
                        "get", "create", "delete", "update", "patch", "list", "watch",
                    ],
                    &[APPS],
                    &["controllerrevisions"],
                ),
                rule(
                    &["get", "create", "list", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(&["update", "delete"], &[CORE], &["persistentvolumeclaims"]),
                rule(&["update"], &[CORE], &["pods/finalizers"]),
                events_rule(),
            ],
        ),
        (
            "ttl-after-finished-controller",
            vec![
                rule(&["get", "list", "watch", "delete"], &[BATCH], &["jobs"]),
                events_rule(),
            ],
        ),
        (
            "ttl-controller",
            vec![
                rule(&["update", "patch", "list", "watch"], &[CORE], &["nodes"]),
                events_rule(),
            ],
        ),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(
                    READ,
                    &[ADMISSION_REGISTRATION],
                    &["validatingadmissionpolicies"],
                ),
                rule(
                    &["get", "patch", "update"],
                    &[ADMISSION_REGISTRATION],
                    &["validatingadmissionpolicies/status"],
                ),
                events_rule(),
            ],
        ),
    ]
}

/// The `system:controller:*` ClusterRoles.
pub fn controller_roles() -> Vec<Value> {
    controllers()
        .iter()
        .map(|(name, rules)| cluster_role(&format!("{CONTROLLER_ROLE_PREFIX}{name}"), rules))
        .collect()
}

/// One ClusterRoleBinding per controller role, to the kube-system service account of the same
/// name.
pub fn controller_role_bindings() -> Vec<Value> {
    controllers()
        .iter()
        .map(|(name, _)| {
            let full = format!("{CONTROLLER_ROLE_PREFIX}{name}");
            cluster_role_binding(&full, &full, vec![service_account("kube-system", name)])
        })
        .collect()
}
