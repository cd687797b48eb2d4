//! The static table of built-in resources and API groups, as kube-apiserver 1.33 reports them
//! in discovery (resources sorted by name within each group/version, as upstream lists them).

use super::{ApiGroupInfo, ResourceInfo, Subresource};

/// Verbs of an ordinary stored resource.
const STD: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Namespaces have no `deletecollection`.
const NO_DELETECOLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// Verbs of `status`, `scale` and `approval` subresources.
const GPU: &[&str] = &["get", "patch", "update"];
/// Create-only resources (reviews) and action subresources (binding, eviction, token).
const CREATE: &[&str] = &["create"];
/// A proxy subresource's verbs, as upstream's discovery lists them.
const PROXY: &[&str] = &["create", "delete", "get", "patch", "update"];
/// Streaming (connect) subresources as discovery lists them: GET for websockets, POST for SPDY.
const CONNECT: &[&str] = &["create", "get"];
/// Read-only resources computed on each request (componentstatuses).
const READ_ONLY: &[&str] = &["get", "list"];

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// A `status` subresource serving the parent kind.
macro_rules! status {
    ($group:literal, $version:literal, $kind:literal) => {
        Subresource {
            name: "status",
            group: $group,
            version: $version,
            kind: $kind,
            verbs: GPU,
        }
    };
}

/// A `scale` subresource serving `autoscaling/v1` `Scale`.
macro_rules! scale {
    () => {
        Subresource {
            name: "scale",
            group: "autoscaling",
            version: "v1",
            kind: "Scale",
            verbs: GPU,
        }
    };
}

const fn res(
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> ResourceInfo {
    ResourceInfo {
        group,
        version,
        resource,
        kind,
        singular,
        namespaced,
        short_names: &[],
        categories: &[],
        verbs: STD,
        subresources: &[],
    }
}

impl ResourceInfo {
    const fn short(mut self, short_names: &'static [&'static str]) -> Self {
        self.short_names = short_names;
        self
    }
    const fn cats(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }
    const fn verbs(mut self, verbs: &'static [&'static str]) -> Self {
        self.verbs = verbs;
        self
    }
    const fn subs(mut self, subresources: &'static [Subresource]) -> Self {
        self.subresources = subresources;
        self
    }
}

/// API groups in upstream's discovery order (`/api` core first, then `/apis` order), each
/// with its versions, preferred version first.
pub(super) static GROUPS: &[ApiGroupInfo] = &[
    ApiGroupInfo {
        name: "",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "apiregistration.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "apps",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "events.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "authentication.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "authorization.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "autoscaling",
        versions: &["v2", "v1"],
    },
    ApiGroupInfo {
        name: "batch",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "certificates.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "networking.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "policy",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "rbac.authorization.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "storage.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "admissionregistration.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "apiextensions.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "scheduling.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "coordination.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "node.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "discovery.k8s.io",
        versions: &["v1"],
    },
    ApiGroupInfo {
        name: "flowcontrol.apiserver.k8s.io",
        versions: &["v1"],
    },
];

/// Every built-in (group, version, resource) served, grouped by group/version in the order of
/// [`GROUPS`].
pub(super) static RESOURCES: &[ResourceInfo] = &[
    // ---- core/v1
    res("", "v1", "bindings", "binding", "Binding", true).verbs(CREATE),
    res(
        "",
        "v1",
        "componentstatuses",
        "componentstatus",
        "ComponentStatus",
        false,
    )
    .short(&["cs"])
    .verbs(READ_ONLY),
    res("", "v1", "configmaps", "configmap", "ConfigMap", true).short(&["cm"]),
    res("", "v1", "endpoints", "endpoints", "Endpoints", true).short(&["ep"]),
    res("", "v1", "events", "event", "Event", true).short(&["ev"]),
    res("", "v1", "limitranges", "limitrange", "LimitRange", true).short(&["limits"]),
    res("", "v1", "namespaces", "namespace", "Namespace", false)
        .short(&["ns"])
        .verbs(NO_DELETECOLLECTION)
        .subs(&[
            Subresource {
                name: "finalize",
                group: "",
                version: "v1",
                kind: "Namespace",
                verbs: &["update"],
            },
            status!("", "v1", "Namespace"),
        ]),
    res("", "v1", "nodes", "node", "Node", false)
        .short(&["no"])
        .subs(&[
            // Served by `node_proxy` for simulated nodes (healthz, logs/, pods).
            Subresource {
                name: "proxy",
                group: "",
                version: "v1",
                kind: "NodeProxyOptions",
                verbs: PROXY,
            },
            status!("", "v1", "Node"),
        ]),
    res(
        "",
        "v1",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        true,
    )
    .short(&["pvc"])
    .subs(&[status!("", "v1", "PersistentVolumeClaim")]),
    res(
        "",
        "v1",
        "persistentvolumes",
        "persistentvolume",
        "PersistentVolume",
        false,
    )
    .short(&["pv"])
    .subs(&[status!("", "v1", "PersistentVolume")]),
    res("", "v1", "pods", "pod", "Pod", true)
        .short(&["po"])
        .cats(ALL)
        .subs(&[
            // attach, exec, log and portforward are served by `node_proxy` (to the node).
            Subresource {
                name: "attach",
                group: "",
                version: "v1",
                kind: "PodAttachOptions",
                verbs: CONNECT,
            },
            Subresource {
                name: "binding",
                group: "",
                version: "v1",
                kind: "Binding",
                verbs: CREATE,
            },
            // `kubectl debug` adds containers to a running pod here.
            Subresource {
                name: "ephemeralcontainers",
                group: "",
                version: "v1",
                kind: "Pod",
                verbs: GPU,
            },
            Subresource {
                name: "eviction",
                group: "policy",
                version: "v1",
                kind: "Eviction",
                verbs: CREATE,
            },
            Subresource {
                name: "exec",
                group: "",
                version: "v1",
                kind: "PodExecOptions",
                verbs: CONNECT,
            },
            Subresource {
                name: "log",
                group: "",
                version: "v1",
                kind: "Pod",
                verbs: &["get"],
            },
            Subresource {
                name: "portforward",
                group: "",
                version: "v1",
                kind: "PodPortForwardOptions",
                verbs: CONNECT,
            },
            // In-place resize of container resources (InPlacePodVerticalScaling, beta in 1.33).
            Subresource {
                name: "resize",
                group: "",
                version: "v1",
                kind: "Pod",
                verbs: GPU,
            },
            status!("", "v1", "Pod"),
        ]),
    res("", "v1", "podtemplates", "podtemplate", "PodTemplate", true),
    res(
        "",
        "v1",
        "replicationcontrollers",
        "replicationcontroller",
        "ReplicationController",
        true,
    )
    .short(&["rc"])
    .cats(ALL)
    .subs(&[scale!(), status!("", "v1", "ReplicationController")]),
    res(
        "",
        "v1",
        "resourcequotas",
        "resourcequota",
        "ResourceQuota",
        true,
    )
    .short(&["quota"])
    .subs(&[status!("", "v1", "ResourceQuota")]),
    res("", "v1", "secrets", "secret", "Secret", true),
    res(
        "",
        "v1",
        "serviceaccounts",
        "serviceaccount",
        "ServiceAccount",
        true,
    )
    .short(&["sa"])
    .subs(&[Subresource {
        name: "token",
        group: "authentication.k8s.io",
        version: "v1",
        kind: "TokenRequest",
        verbs: CREATE,
    }]),
    res("", "v1", "services", "service", "Service", true)
        .short(&["svc"])
        .cats(ALL)
        .subs(&[status!("", "v1", "Service")]),
    // ---- apiregistration.k8s.io/v1
    res(
        "apiregistration.k8s.io",
        "v1",
        "apiservices",
        "apiservice",
        "APIService",
        false,
    )
    .cats(API_EXTENSIONS)
    .subs(&[status!("apiregistration.k8s.io", "v1", "APIService")]),
    // ---- apps/v1
    res(
        "apps",
        "v1",
        "controllerrevisions",
        "controllerrevision",
        "ControllerRevision",
        true,
    ),
    res("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true)
        .short(&["ds"])
        .cats(ALL)
        .subs(&[status!("apps", "v1", "DaemonSet")]),
    res(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        true,
    )
    .short(&["deploy"])
    .cats(ALL)
    .subs(&[scale!(), status!("apps", "v1", "Deployment")]),
    res(
        "apps",
        "v1",
        "replicasets",
        "replicaset",
        "ReplicaSet",
        true,
    )
    .short(&["rs"])
    .cats(ALL)
    .subs(&[scale!(), status!("apps", "v1", "ReplicaSet")]),
    res(
        "apps",
        "v1",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        true,
    )
    .short(&["sts"])
    .cats(ALL)
    .subs(&[scale!(), status!("apps", "v1", "StatefulSet")]),
    // ---- events.k8s.io/v1
    res("events.k8s.io", "v1", "events", "event", "Event", true).short(&["ev"]),
    // ---- authentication.k8s.io/v1
    res(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "selfsubjectreview",
        "SelfSubjectReview",
        false,
    )
    .verbs(CREATE),
    res(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "tokenreview",
        "TokenReview",
        false,
    )
    .verbs(CREATE),
    // ---- authorization.k8s.io/v1
    res(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "localsubjectaccessreview",
        "LocalSubjectAccessReview",
        true,
    )
    .verbs(CREATE),
    res(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        "SelfSubjectAccessReview",
        false,
    )
    .verbs(CREATE),
    res(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        "SelfSubjectRulesReview",
        false,
    )
    .verbs(CREATE),
    res(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "subjectaccessreview",
        "SubjectAccessReview",
        false,
    )
    .verbs(CREATE),
    // ---- autoscaling/v2 (preferred) and autoscaling/v1
    res(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        true,
    )
    .short(&["hpa"])
    .cats(ALL)
    .subs(&[status!("autoscaling", "v2", "HorizontalPodAutoscaler")]),
    res(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        true,
    )
    .short(&["hpa"])
    .cats(ALL)
    .subs(&[status!("autoscaling", "v1", "HorizontalPodAutoscaler")]),
    // ---- batch/v1
    res("batch", "v1", "cronjobs", "cronjob", "CronJob", true)
        .short(&["cj"])
        .cats(ALL)
        .subs(&[status!("batch", "v1", "CronJob")]),
    res("batch", "v1", "jobs", "job", "Job", true)
        .cats(ALL)
        .subs(&[status!("batch", "v1", "Job")]),
    // ---- certificates.k8s.io/v1
    res(
        "certificates.k8s.io",
        "v1",
        "certificatesigningrequests",
        "certificatesigningrequest",
        "CertificateSigningRequest",
        false,
    )
    .short(&["csr"])
    .subs(&[
        Subresource {
            name: "approval",
            group: "certificates.k8s.io",
            version: "v1",
            kind: "CertificateSigningRequest",
            verbs: GPU,
        },
        status!("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ]),
    // ---- networking.k8s.io/v1
    res(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "ingressclass",
        "IngressClass",
        false,
    ),
    res(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "ingress",
        "Ingress",
        true,
    )
    .short(&["ing"])
    .subs(&[status!("networking.k8s.io", "v1", "Ingress")]),
    res(
        "networking.k8s.io",
        "v1",
        "ipaddresses",
        "ipaddress",
        "IPAddress",
        false,
    )
    .short(&["ip"]),
    res(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "networkpolicy",
        "NetworkPolicy",
        true,
    )
    .short(&["netpol"]),
    res(
        "networking.k8s.io",
        "v1",
        "servicecidrs",
        "servicecidr",
        "ServiceCIDR",
        false,
    )
    .subs(&[status!("networking.k8s.io", "v1", "ServiceCIDR")]),
    // ---- policy/v1
    res(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        true,
    )
    .short(&["pdb"])
    .subs(&[status!("policy", "v1", "PodDisruptionBudget")]),
    // ---- rbac.authorization.k8s.io/v1
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "clusterrolebinding",
        "ClusterRoleBinding",
        false,
    ),
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "clusterrole",
        "ClusterRole",
        false,
    ),
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "rolebinding",
        "RoleBinding",
        true,
    ),
    res(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "role",
        "Role",
        true,
    ),
    // ---- storage.k8s.io/v1
    res(
        "storage.k8s.io",
        "v1",
        "csidrivers",
        "csidriver",
        "CSIDriver",
        false,
    ),
    res(
        "storage.k8s.io",
        "v1",
        "csinodes",
        "csinode",
        "CSINode",
        false,
    ),
    res(
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        "csistoragecapacity",
        "CSIStorageCapacity",
        true,
    ),
    res(
        "storage.k8s.io",
        "v1",
        "storageclasses",
        "storageclass",
        "StorageClass",
        false,
    )
    .short(&["sc"]),
    res(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "volumeattachment",
        "VolumeAttachment",
        false,
    )
    .subs(&[status!("storage.k8s.io", "v1", "VolumeAttachment")]),
    // ---- admissionregistration.k8s.io/v1
    res(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        "MutatingWebhookConfiguration",
        false,
    )
    .cats(API_EXTENSIONS),
    res(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "validatingadmissionpolicy",
        "ValidatingAdmissionPolicy",
        false,
    )
    .cats(API_EXTENSIONS)
    .subs(&[status!(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy"
    )]),
    res(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "validatingadmissionpolicybinding",
        "ValidatingAdmissionPolicyBinding",
        false,
    )
    .cats(API_EXTENSIONS),
    res(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        "ValidatingWebhookConfiguration",
        false,
    )
    .cats(API_EXTENSIONS),
    // ---- apiextensions.k8s.io/v1
    res(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        false,
    )
    .short(&["crd", "crds"])
    .cats(API_EXTENSIONS)
    .subs(&[status!(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition"
    )]),
    // ---- scheduling.k8s.io/v1
    res(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "priorityclass",
        "PriorityClass",
        false,
    )
    .short(&["pc"]),
    // ---- coordination.k8s.io/v1
    res(
        "coordination.k8s.io",
        "v1",
        "leases",
        "lease",
        "Lease",
        true,
    ),
    // ---- node.k8s.io/v1
    res(
        "node.k8s.io",
        "v1",
        "runtimeclasses",
        "runtimeclass",
        "RuntimeClass",
        false,
    ),
    // ---- discovery.k8s.io/v1
    res(
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "endpointslice",
        "EndpointSlice",
        true,
    ),
    // ---- flowcontrol.apiserver.k8s.io/v1
    res(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "flowschemas",
        "flowschema",
        "FlowSchema",
        false,
    )
    .subs(&[status!("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema")]),
    res(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "prioritylevelconfiguration",
        "PriorityLevelConfiguration",
        false,
    )
    .subs(&[status!(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration"
    )]),
];
