//! Facts schemars lacks: the patch and list-type extensions upstream Kubernetes 1.33 declares on
//! fields (`+listType`, `+listMapKey`, `+mapType`, `patchStrategy`, `patchMergeKey` in its Go
//! types) and the structs it marks `+structType=atomic` (served as `x-kubernetes-map-type: atomic`).
//!
//! Taken from the markers in k8s.io/api, k8s.io/apimachinery, apiextensions-apiserver and
//! kube-aggregator at v0.33.9. Entries for definitions no served kind reaches are skipped at build.

use serde_json::{Map, Value, json};

/// The extensions of one field.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ext {
    list_type: Option<&'static str>,
    map_keys: &'static [&'static str],
    map_type: Option<&'static str>,
    strategy: Option<&'static str>,
    merge_key: Option<&'static str>,
}

const NONE: Ext = Ext {
    list_type: None,
    map_keys: &[],
    map_type: None,
    strategy: None,
    merge_key: None,
};
const ATOMIC: Ext = Ext {
    list_type: Some("atomic"),
    ..NONE
};
const SET: Ext = Ext {
    list_type: Some("set"),
    ..NONE
};
const MAP_ATOMIC: Ext = Ext {
    map_type: Some("atomic"),
    ..NONE
};
const MAP_GRANULAR: Ext = Ext {
    map_type: Some("granular"),
    ..NONE
};

/// `+listType=map` with its `+listMapKey`s.
const fn map_list(keys: &'static [&'static str]) -> Ext {
    Ext {
        list_type: Some("map"),
        map_keys: keys,
        ..NONE
    }
}

impl Ext {
    /// `patchStrategy` with `patchMergeKey`.
    const fn patch(self, strategy: &'static str, merge_key: &'static str) -> Ext {
        Ext {
            strategy: Some(strategy),
            merge_key: Some(merge_key),
            ..self
        }
    }

    /// `patchStrategy` alone (`retainKeys`, `replace`, or `merge` on a set).
    const fn strategy(self, strategy: &'static str) -> Ext {
        Ext {
            strategy: Some(strategy),
            ..self
        }
    }

    /// Writes the extensions into a property schema, as openapi-gen names them.
    pub(super) fn apply(&self, prop: &mut Map<String, Value>) {
        if let Some(t) = self.list_type {
            prop.insert("x-kubernetes-list-type".into(), json!(t));
        }
        if !self.map_keys.is_empty() {
            prop.insert("x-kubernetes-list-map-keys".into(), json!(self.map_keys));
        }
        if let Some(t) = self.map_type {
            prop.insert("x-kubernetes-map-type".into(), json!(t));
        }
        if let Some(s) = self.strategy {
            prop.insert("x-kubernetes-patch-strategy".into(), json!(s));
        }
        if let Some(k) = self.merge_key {
            prop.insert("x-kubernetes-patch-merge-key".into(), json!(k));
        }
    }
}

/// One package: its definition prefix, its atomic structs, and (struct, json field, extensions).
pub(super) type Package = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str, Ext)],
);

/// Every annotated field of the served packages, by package (one line per field, hence no
/// rustfmt).
#[rustfmt::skip]
pub(super) static PACKAGES: &[Package] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1",
        &["LabelSelector", "OwnerReference"],
        &[
            ("APIGroup", "serverAddressByClientCIDRs", ATOMIC),
            ("APIGroup", "versions", ATOMIC),
            ("APIGroupList", "groups", ATOMIC),
            ("APIResource", "categories", ATOMIC),
            ("APIResource", "shortNames", ATOMIC),
            ("APIResourceList", "resources", ATOMIC),
            ("APIVersions", "serverAddressByClientCIDRs", ATOMIC),
            ("APIVersions", "versions", ATOMIC),
            ("ApplyOptions", "dryRun", ATOMIC),
            ("CreateOptions", "dryRun", ATOMIC),
            ("DeleteOptions", "dryRun", ATOMIC),
            ("FieldSelectorRequirement", "values", ATOMIC),
            ("LabelSelector", "matchExpressions", ATOMIC),
            ("LabelSelectorRequirement", "values", ATOMIC),
            ("ObjectMeta", "finalizers", SET.strategy("merge")),
            ("ObjectMeta", "managedFields", ATOMIC),
            ("ObjectMeta", "ownerReferences", map_list(&["uid"]).patch("merge", "uid")),
            ("PatchOptions", "dryRun", ATOMIC),
            ("RootPaths", "paths", ATOMIC),
            ("Status", "details", ATOMIC),
            ("StatusDetails", "causes", ATOMIC),
            ("Table", "columnDefinitions", ATOMIC),
            ("Table", "rows", ATOMIC),
            ("TableRow", "cells", ATOMIC),
            ("TableRow", "conditions", ATOMIC),
            ("UpdateOptions", "dryRun", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.core.v1",
        &["ConfigMapKeySelector", "EndpointAddress", "EndpointPort", "LocalObjectReference", "NodeSelector", "NodeSelectorTerm", "ObjectFieldSelector", "ObjectReference", "ResourceFieldSelector", "ScopeSelector", "SecretKeySelector", "SecretReference", "TopologySelectorTerm", "TypedLocalObjectReference"],
        &[
            ("AvoidPods", "preferAvoidPods", ATOMIC),
            ("Capabilities", "add", ATOMIC),
            ("Capabilities", "drop", ATOMIC),
            ("CephFSPersistentVolumeSource", "monitors", ATOMIC),
            ("CephFSVolumeSource", "monitors", ATOMIC),
            ("ComponentStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("ConfigMapProjection", "items", ATOMIC),
            ("ConfigMapVolumeSource", "items", ATOMIC),
            ("Container", "args", ATOMIC),
            ("Container", "command", ATOMIC),
            ("Container", "env", map_list(&["name"]).patch("merge", "name")),
            ("Container", "envFrom", ATOMIC),
            ("Container", "ports", map_list(&["containerPort", "protocol"]).patch("merge", "containerPort")),
            ("Container", "resizePolicy", ATOMIC),
            ("Container", "volumeDevices", map_list(&["devicePath"]).patch("merge", "devicePath")),
            ("Container", "volumeMounts", map_list(&["mountPath"]).patch("merge", "mountPath")),
            ("ContainerImage", "names", ATOMIC),
            ("ContainerStatus", "allocatedResourcesStatus", map_list(&["name"]).patch("merge", "name")),
            ("ContainerStatus", "volumeMounts", map_list(&["mountPath"]).patch("merge", "mountPath")),
            ("DownwardAPIProjection", "items", ATOMIC),
            ("DownwardAPIVolumeSource", "items", ATOMIC),
            ("EndpointSubset", "addresses", ATOMIC),
            ("EndpointSubset", "notReadyAddresses", ATOMIC),
            ("EndpointSubset", "ports", ATOMIC),
            ("Endpoints", "subsets", ATOMIC),
            ("EphemeralContainer", "args", ATOMIC),
            ("EphemeralContainer", "command", ATOMIC),
            ("EphemeralContainer", "env", map_list(&["name"]).patch("merge", "name")),
            ("EphemeralContainer", "envFrom", ATOMIC),
            ("EphemeralContainer", "ports", map_list(&["containerPort", "protocol"]).patch("merge", "containerPort")),
            ("EphemeralContainer", "resizePolicy", ATOMIC),
            ("EphemeralContainer", "volumeDevices", map_list(&["devicePath"]).patch("merge", "devicePath")),
            ("EphemeralContainer", "volumeMounts", map_list(&["mountPath"]).patch("merge", "mountPath")),
            ("ExecAction", "command", ATOMIC),
            ("FCVolumeSource", "targetWWNs", ATOMIC),
            ("FCVolumeSource", "wwids", ATOMIC),
            ("HTTPGetAction", "httpHeaders", ATOMIC),
            ("HostAlias", "hostnames", ATOMIC),
            ("ISCSIPersistentVolumeSource", "portals", ATOMIC),
            ("ISCSIVolumeSource", "portals", ATOMIC),
            ("LimitRangeSpec", "limits", ATOMIC),
            ("LinuxContainerUser", "supplementalGroups", ATOMIC),
            ("LoadBalancerIngress", "ports", ATOMIC),
            ("LoadBalancerStatus", "ingress", ATOMIC),
            ("NamespaceSpec", "finalizers", ATOMIC),
            ("NamespaceStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("NodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", ATOMIC),
            ("NodeSelector", "nodeSelectorTerms", ATOMIC),
            ("NodeSelectorRequirement", "values", ATOMIC),
            ("NodeSelectorTerm", "matchExpressions", ATOMIC),
            ("NodeSelectorTerm", "matchFields", ATOMIC),
            ("NodeSpec", "podCIDRs", SET.strategy("merge")),
            ("NodeSpec", "taints", ATOMIC),
            ("NodeStatus", "addresses", map_list(&["type"]).patch("merge", "type")),
            ("NodeStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("NodeStatus", "images", ATOMIC),
            ("NodeStatus", "runtimeHandlers", ATOMIC),
            ("NodeStatus", "volumesAttached", ATOMIC),
            ("NodeStatus", "volumesInUse", ATOMIC),
            ("PersistentVolumeClaimSpec", "accessModes", ATOMIC),
            ("PersistentVolumeClaimStatus", "accessModes", ATOMIC),
            ("PersistentVolumeClaimStatus", "allocatedResourceStatuses", MAP_GRANULAR),
            ("PersistentVolumeClaimStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("PersistentVolumeSpec", "accessModes", ATOMIC),
            ("PersistentVolumeSpec", "mountOptions", ATOMIC),
            ("PodAffinity", "preferredDuringSchedulingIgnoredDuringExecution", ATOMIC),
            ("PodAffinity", "requiredDuringSchedulingIgnoredDuringExecution", ATOMIC),
            ("PodAffinityTerm", "matchLabelKeys", ATOMIC),
            ("PodAffinityTerm", "mismatchLabelKeys", ATOMIC),
            ("PodAffinityTerm", "namespaces", ATOMIC),
            ("PodAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", ATOMIC),
            ("PodAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", ATOMIC),
            ("PodDNSConfig", "nameservers", ATOMIC),
            ("PodDNSConfig", "options", ATOMIC),
            ("PodDNSConfig", "searches", ATOMIC),
            ("PodExecOptions", "command", ATOMIC),
            ("PodPortForwardOptions", "ports", ATOMIC),
            ("PodSecurityContext", "supplementalGroups", ATOMIC),
            ("PodSecurityContext", "sysctls", ATOMIC),
            ("PodSpec", "containers", map_list(&["name"]).patch("merge", "name")),
            ("PodSpec", "ephemeralContainers", map_list(&["name"]).patch("merge", "name")),
            ("PodSpec", "hostAliases", map_list(&["ip"]).patch("merge", "ip")),
            ("PodSpec", "imagePullSecrets", map_list(&["name"]).patch("merge", "name")),
            ("PodSpec", "initContainers", map_list(&["name"]).patch("merge", "name")),
            ("PodSpec", "nodeSelector", MAP_ATOMIC),
            ("PodSpec", "readinessGates", ATOMIC),
            ("PodSpec", "resourceClaims", map_list(&["name"]).patch("merge,retainKeys", "name")),
            ("PodSpec", "schedulingGates", map_list(&["name"]).patch("merge", "name")),
            ("PodSpec", "tolerations", ATOMIC),
            ("PodSpec", "topologySpreadConstraints", map_list(&["topologyKey", "whenUnsatisfiable"]).patch("merge", "topologyKey")),
            ("PodSpec", "volumes", map_list(&["name"]).patch("merge,retainKeys", "name")),
            ("PodStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("PodStatus", "containerStatuses", ATOMIC),
            ("PodStatus", "ephemeralContainerStatuses", ATOMIC),
            ("PodStatus", "hostIPs", ATOMIC.patch("merge", "ip")),
            ("PodStatus", "initContainerStatuses", ATOMIC),
            ("PodStatus", "podIPs", map_list(&["ip"]).patch("merge", "ip")),
            ("PodStatus", "resourceClaimStatuses", map_list(&["name"]).patch("merge,retainKeys", "name")),
            ("ProjectedVolumeSource", "sources", ATOMIC),
            ("RBDPersistentVolumeSource", "monitors", ATOMIC),
            ("RBDVolumeSource", "monitors", ATOMIC),
            ("ReplicationControllerSpec", "selector", MAP_ATOMIC),
            ("ReplicationControllerStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("ResourceQuotaSpec", "scopes", ATOMIC),
            ("ResourceRequirements", "claims", map_list(&["name"])),
            ("ResourceStatus", "resources", map_list(&["resourceID"])),
            ("ScopeSelector", "matchExpressions", ATOMIC),
            ("ScopedResourceSelectorRequirement", "values", ATOMIC),
            ("SecretProjection", "items", ATOMIC),
            ("SecretVolumeSource", "items", ATOMIC),
            ("ServiceAccount", "imagePullSecrets", ATOMIC),
            ("ServiceAccount", "secrets", map_list(&["name"]).patch("merge", "name")),
            ("ServiceSpec", "clusterIPs", ATOMIC),
            ("ServiceSpec", "externalIPs", ATOMIC),
            ("ServiceSpec", "ipFamilies", ATOMIC),
            ("ServiceSpec", "loadBalancerSourceRanges", ATOMIC),
            ("ServiceSpec", "ports", map_list(&["port", "protocol"]).patch("merge", "port")),
            ("ServiceSpec", "selector", MAP_ATOMIC),
            ("ServiceStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("TopologySelectorLabelRequirement", "values", ATOMIC),
            ("TopologySelectorTerm", "matchLabelExpressions", ATOMIC),
            ("TopologySpreadConstraint", "matchLabelKeys", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.apps.v1",
        &[],
        &[
            ("DaemonSetStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("DeploymentSpec", "strategy", NONE.strategy("retainKeys")),
            ("DeploymentStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("ReplicaSetStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("StatefulSetSpec", "volumeClaimTemplates", ATOMIC),
            ("StatefulSetStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
        ],
    ),
    (
        "io.k8s.api.batch.v1",
        &[],
        &[
            ("CronJobStatus", "active", ATOMIC),
            ("JobStatus", "conditions", ATOMIC.patch("merge", "type")),
            ("PodFailurePolicy", "rules", ATOMIC),
            ("PodFailurePolicyOnExitCodesRequirement", "values", SET),
            ("PodFailurePolicyRule", "onPodConditions", ATOMIC),
            ("SuccessPolicy", "rules", ATOMIC),
            ("UncountedTerminatedPods", "failed", SET),
            ("UncountedTerminatedPods", "succeeded", SET),
        ],
    ),
    (
        "io.k8s.api.autoscaling.v1",
        &["CrossVersionObjectReference"],
        &[
        ],
    ),
    (
        "io.k8s.api.autoscaling.v2",
        &[],
        &[
            ("HPAScalingRules", "policies", ATOMIC),
            ("HorizontalPodAutoscalerSpec", "metrics", ATOMIC),
            ("HorizontalPodAutoscalerStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("HorizontalPodAutoscalerStatus", "currentMetrics", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.policy.v1",
        &[],
        &[
            ("PodDisruptionBudgetSpec", "selector", NONE.strategy("replace")),
            ("PodDisruptionBudgetStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
        ],
    ),
    (
        "io.k8s.api.networking.v1",
        &["ServiceBackendPort"],
        &[
            ("HTTPIngressRuleValue", "paths", ATOMIC),
            ("IPBlock", "except", ATOMIC),
            ("IngressLoadBalancerIngress", "ports", ATOMIC),
            ("IngressLoadBalancerStatus", "ingress", ATOMIC),
            ("IngressSpec", "rules", ATOMIC),
            ("IngressSpec", "tls", ATOMIC),
            ("IngressTLS", "hosts", ATOMIC),
            ("NetworkPolicyEgressRule", "ports", ATOMIC),
            ("NetworkPolicyEgressRule", "to", ATOMIC),
            ("NetworkPolicyIngressRule", "from", ATOMIC),
            ("NetworkPolicyIngressRule", "ports", ATOMIC),
            ("NetworkPolicySpec", "egress", ATOMIC),
            ("NetworkPolicySpec", "ingress", ATOMIC),
            ("NetworkPolicySpec", "policyTypes", ATOMIC),
            ("ServiceCIDRSpec", "cidrs", ATOMIC),
            ("ServiceCIDRStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
        ],
    ),
    (
        "io.k8s.api.rbac.v1",
        &["RoleRef", "Subject"],
        &[
            ("AggregationRule", "clusterRoleSelectors", ATOMIC),
            ("ClusterRole", "rules", ATOMIC),
            ("ClusterRoleBinding", "subjects", ATOMIC),
            ("PolicyRule", "apiGroups", ATOMIC),
            ("PolicyRule", "nonResourceURLs", ATOMIC),
            ("PolicyRule", "resourceNames", ATOMIC),
            ("PolicyRule", "resources", ATOMIC),
            ("PolicyRule", "verbs", ATOMIC),
            ("Role", "rules", ATOMIC),
            ("RoleBinding", "subjects", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.storage.v1",
        &[],
        &[
            ("CSIDriverSpec", "tokenRequests", ATOMIC),
            ("CSIDriverSpec", "volumeLifecycleModes", SET),
            ("CSINodeDriver", "topologyKeys", ATOMIC),
            ("CSINodeSpec", "drivers", map_list(&["name"]).patch("merge", "name")),
            ("StorageClass", "allowedTopologies", ATOMIC),
            ("StorageClass", "mountOptions", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.admissionregistration.v1",
        &["MatchResources", "NamedRuleWithOperations", "ParamKind", "ParamRef", "Variable"],
        &[
            ("MatchResources", "excludeResourceRules", ATOMIC),
            ("MatchResources", "resourceRules", ATOMIC),
            ("MutatingWebhook", "admissionReviewVersions", ATOMIC),
            ("MutatingWebhook", "matchConditions", map_list(&["name"]).patch("merge", "name")),
            ("MutatingWebhook", "rules", ATOMIC),
            ("MutatingWebhookConfiguration", "webhooks", map_list(&["name"]).patch("merge", "name")),
            ("NamedRuleWithOperations", "operations", ATOMIC),
            ("NamedRuleWithOperations", "resourceNames", ATOMIC),
            ("Rule", "apiGroups", ATOMIC),
            ("Rule", "apiVersions", ATOMIC),
            ("Rule", "resources", ATOMIC),
            ("RuleWithOperations", "apiGroups", ATOMIC),
            ("RuleWithOperations", "apiVersions", ATOMIC),
            ("RuleWithOperations", "operations", ATOMIC),
            ("RuleWithOperations", "resources", ATOMIC),
            ("TypeChecking", "expressionWarnings", ATOMIC),
            ("ValidatingAdmissionPolicyBindingSpec", "validationActions", SET),
            ("ValidatingAdmissionPolicySpec", "auditAnnotations", ATOMIC),
            ("ValidatingAdmissionPolicySpec", "matchConditions", map_list(&["name"]).patch("merge", "name")),
            ("ValidatingAdmissionPolicySpec", "validations", ATOMIC),
            ("ValidatingAdmissionPolicySpec", "variables", map_list(&["name"]).patch("merge", "name")),
            ("ValidatingAdmissionPolicyStatus", "conditions", map_list(&["type"])),
            ("ValidatingWebhook", "admissionReviewVersions", ATOMIC),
            ("ValidatingWebhook", "matchConditions", map_list(&["name"]).patch("merge", "name")),
            ("ValidatingWebhook", "rules", ATOMIC),
            ("ValidatingWebhookConfiguration", "webhooks", map_list(&["name"]).patch("merge", "name")),
        ],
    ),
    (
        "io.k8s.api.node.v1",
        &[],
        &[
            ("Scheduling", "nodeSelector", MAP_ATOMIC),
            ("Scheduling", "tolerations", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.discovery.v1",
        &["EndpointPort"],
        &[
            ("Endpoint", "addresses", SET),
            ("EndpointHints", "forNodes", ATOMIC),
            ("EndpointHints", "forZones", ATOMIC),
            ("EndpointSlice", "endpoints", ATOMIC),
            ("EndpointSlice", "ports", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.flowcontrol.v1",
        &[],
        &[
            ("FlowSchemaSpec", "rules", ATOMIC),
            ("FlowSchemaStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
            ("NonResourcePolicyRule", "nonResourceURLs", SET),
            ("NonResourcePolicyRule", "verbs", SET),
            ("PolicyRulesWithSubjects", "nonResourceRules", ATOMIC),
            ("PolicyRulesWithSubjects", "resourceRules", ATOMIC),
            ("PolicyRulesWithSubjects", "subjects", ATOMIC),
            (
                "PriorityLevelConfigurationStatus",
                "conditions",
                map_list(&["type"]).patch("merge", "type"),
            ),
            ("ResourcePolicyRule", "apiGroups", SET),
            ("ResourcePolicyRule", "namespaces", SET),
            ("ResourcePolicyRule", "resources", SET),
            ("ResourcePolicyRule", "verbs", SET),
        ],
    ),
    (
        "io.k8s.api.certificates.v1",
        &[],
        &[
            ("CertificateSigningRequestSpec", "groups", ATOMIC),
            ("CertificateSigningRequestSpec", "request", ATOMIC),
            ("CertificateSigningRequestSpec", "usages", ATOMIC),
            ("CertificateSigningRequestStatus", "certificate", ATOMIC),
            ("CertificateSigningRequestStatus", "conditions", map_list(&["type"])),
        ],
    ),
    (
        "io.k8s.api.authentication.v1",
        &[],
        &[
            ("TokenRequestSpec", "audiences", ATOMIC),
            ("TokenReviewSpec", "audiences", ATOMIC),
            ("TokenReviewStatus", "audiences", ATOMIC),
            ("UserInfo", "groups", ATOMIC),
        ],
    ),
    (
        "io.k8s.api.authorization.v1",
        &[],
        &[
            ("FieldSelectorAttributes", "requirements", ATOMIC),
            ("LabelSelectorAttributes", "requirements", ATOMIC),
            ("NonResourceRule", "nonResourceURLs", ATOMIC),
            ("NonResourceRule", "verbs", ATOMIC),
            ("ResourceRule", "apiGroups", ATOMIC),
            ("ResourceRule", "resourceNames", ATOMIC),
            ("ResourceRule", "resources", ATOMIC),
            ("ResourceRule", "verbs", ATOMIC),
            ("SubjectAccessReviewSpec", "groups", ATOMIC),
            ("SubjectRulesReviewStatus", "nonResourceRules", ATOMIC),
            ("SubjectRulesReviewStatus", "resourceRules", ATOMIC),
        ],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
        &[],
        &[
            ("ConversionRequest", "objects", ATOMIC),
            ("ConversionResponse", "convertedObjects", ATOMIC),
            ("CustomResourceDefinitionNames", "categories", ATOMIC),
            ("CustomResourceDefinitionNames", "shortNames", ATOMIC),
            ("CustomResourceDefinitionSpec", "versions", ATOMIC),
            ("CustomResourceDefinitionStatus", "conditions", map_list(&["type"])),
            ("CustomResourceDefinitionStatus", "storedVersions", ATOMIC),
            ("CustomResourceDefinitionVersion", "additionalPrinterColumns", ATOMIC),
            ("CustomResourceDefinitionVersion", "selectableFields", ATOMIC),
            ("JSONSchemaProps", "allOf", ATOMIC),
            ("JSONSchemaProps", "anyOf", ATOMIC),
            ("JSONSchemaProps", "enum", ATOMIC),
            ("JSONSchemaProps", "oneOf", ATOMIC),
            ("JSONSchemaProps", "required", ATOMIC),
            ("JSONSchemaProps", "x-kubernetes-list-map-keys", ATOMIC),
            ("JSONSchemaProps", "x-kubernetes-validations", map_list(&["rule"]).patch("merge", "rule")),
            ("WebhookConversion", "conversionReviewVersions", ATOMIC),
        ],
    ),
    (
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1",
        &[],
        &[
            ("APIServiceSpec", "caBundle", ATOMIC),
            ("APIServiceStatus", "conditions", map_list(&["type"]).patch("merge", "type")),
        ],
    ),
];
