//! Which printer serves a resource, and each printer's column definitions (names, types,
//! formats, descriptions and priorities as kube-apiserver 1.33 declares them).

use serde_json::{Value, json};

use super::docs as d;

/// The printer (upstream print handler or table convertor) that renders a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Printer {
    Pod,
    PodTemplate,
    PodDisruptionBudget,
    ReplicationController,
    ReplicaSet,
    DaemonSet,
    Job,
    CronJob,
    Service,
    Ingress,
    IngressClass,
    StatefulSet,
    Endpoints,
    Node,
    Event,
    Namespace,
    Secret,
    ServiceAccount,
    PersistentVolume,
    PersistentVolumeClaim,
    ComponentStatus,
    Deployment,
    HorizontalPodAutoscaler,
    ConfigMap,
    NetworkPolicy,
    RoleBinding,
    ClusterRoleBinding,
    CertificateSigningRequest,
    ClusterTrustBundle,
    Lease,
    LeaseCandidate,
    StorageClass,
    VolumeAttributesClass,
    ControllerRevision,
    ResourceQuota,
    PriorityClass,
    RuntimeClass,
    VolumeAttachment,
    EndpointSlice,
    CsiNode,
    CsiDriver,
    MutatingWebhook,
    ValidatingWebhook,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    MutatingAdmissionPolicy,
    MutatingAdmissionPolicyBinding,
    FlowSchema,
    PriorityLevelConfiguration,
    ServiceCidr,
    IpAddress,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    ApiService,
    /// `rest.NewDefaultTableConvertor`: Name and Created At.
    Default,
}

/// The printer kube-apiserver uses for `group`/`resource`. Roles, cluster roles, limit ranges,
/// CSI storage capacities, CRDs and anything unknown use the default convertor.
pub(super) fn printer_for(group: &str, resource: &str) -> Printer {
    use Printer as P;
    match (group, resource) {
        ("", "pods") => P::Pod,
        ("", "podtemplates") => P::PodTemplate,
        ("", "replicationcontrollers") => P::ReplicationController,
        ("", "services") => P::Service,
        ("", "endpoints") => P::Endpoints,
        ("", "nodes") => P::Node,
        ("", "events") | ("events.k8s.io", "events") => P::Event,
        ("", "namespaces") => P::Namespace,
        ("", "secrets") => P::Secret,
        ("", "serviceaccounts") => P::ServiceAccount,
        ("", "persistentvolumes") => P::PersistentVolume,
        ("", "persistentvolumeclaims") => P::PersistentVolumeClaim,
        ("", "componentstatuses") => P::ComponentStatus,
        ("", "configmaps") => P::ConfigMap,
        ("", "resourcequotas") => P::ResourceQuota,
        ("apps", "deployments") => P::Deployment,
        ("apps", "replicasets") => P::ReplicaSet,
        ("apps", "statefulsets") => P::StatefulSet,
        ("apps", "daemonsets") => P::DaemonSet,
        ("apps", "controllerrevisions") => P::ControllerRevision,
        ("batch", "jobs") => P::Job,
        ("batch", "cronjobs") => P::CronJob,
        ("autoscaling", "horizontalpodautoscalers") => P::HorizontalPodAutoscaler,
        ("policy", "poddisruptionbudgets") => P::PodDisruptionBudget,
        ("networking.k8s.io", "ingresses") => P::Ingress,
        ("networking.k8s.io", "ingressclasses") => P::IngressClass,
        ("networking.k8s.io", "networkpolicies") => P::NetworkPolicy,
        ("networking.k8s.io", "servicecidrs") => P::ServiceCidr,
        ("networking.k8s.io", "ipaddresses") => P::IpAddress,
        ("rbac.authorization.k8s.io", "rolebindings") => P::RoleBinding,
        ("rbac.authorization.k8s.io", "clusterrolebindings") => P::ClusterRoleBinding,
        ("certificates.k8s.io", "certificatesigningrequests") => P::CertificateSigningRequest,
        ("certificates.k8s.io", "clustertrustbundles") => P::ClusterTrustBundle,
        ("coordination.k8s.io", "leases") => P::Lease,
        ("coordination.k8s.io", "leasecandidates") => P::LeaseCandidate,
        ("storage.k8s.io", "storageclasses") => P::StorageClass,
        ("storage.k8s.io", "volumeattributesclasses") => P::VolumeAttributesClass,
        ("storage.k8s.io", "volumeattachments") => P::VolumeAttachment,
        ("storage.k8s.io", "csinodes") => P::CsiNode,
        ("storage.k8s.io", "csidrivers") => P::CsiDriver,
        ("scheduling.k8s.io", "priorityclasses") => P::PriorityClass,
        ("node.k8s.io", "runtimeclasses") => P::RuntimeClass,
        ("discovery.k8s.io", "endpointslices") => P::EndpointSlice,
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => P::MutatingWebhook,
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => P::ValidatingWebhook,
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            P::ValidatingAdmissionPolicy
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            P::ValidatingAdmissionPolicyBinding
        }
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies") => P::MutatingAdmissionPolicy,
        ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings") => {
            P::MutatingAdmissionPolicyBinding
        }
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => P::FlowSchema,
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => {
            P::PriorityLevelConfiguration
        }
        ("resource.k8s.io", "deviceclasses") => P::DeviceClass,
        ("resource.k8s.io", "resourceclaims") => P::ResourceClaim,
        ("resource.k8s.io", "resourceclaimtemplates") => P::ResourceClaimTemplate,
        ("resource.k8s.io", "resourceslices") => P::ResourceSlice,
        ("apiregistration.k8s.io", "apiservices") => P::ApiService,
        _ => P::Default,
    }
}

/// One `TableColumnDefinition`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Col {
    pub name: &'static str,
    pub ty: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: i32,
}

impl Col {
    pub(super) fn to_json(self) -> Value {
        json!({
            "name": self.name,
            "type": self.ty,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// A priority-0 column.
const fn c(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        description,
        priority: 0,
    }
}

/// A priority-1 (`-o wide`) column.
const fn w(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        description,
        priority: 1,
    }
}

/// The `Name` column every printer starts with.
const NAME: Col = Col {
    name: "Name",
    ty: "string",
    format: "name",
    description: d::NAME,
    priority: 0,
};
const AGE: Col = c("Age", "string", d::CREATION_TIMESTAMP);
const CONTAINERS: Col = w(
    "Containers",
    "string",
    "Names of each container in the template.",
);
const IMAGES: Col = w(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);
const WEBHOOKS: Col = c(
    "Webhooks",
    "integer",
    "Webhooks indicates the number of webhooks registered in this configuration",
);
const PARAM_KIND: Col = c(
    "ParamKind",
    "string",
    "ParamKind specifies the kind of resources used to parameterize this policy",
);
const POLICY_NAME: Col = c(
    "PolicyName",
    "string",
    "PolicyName indicates the policy definition which the policy binding binded to",
);
const PARAM_REF: Col = c(
    "ParamRef",
    "string",
    "ParamRef indicates the param resource which sets the configration param",
);

/// A `&'static [Col]` built in a const context (so the `const fn` calls are evaluated there).
macro_rules! cols {
    ($($e:expr),* $(,)?) => {{
        const COLS: &[Col] = &[$($e),*];
        COLS
    }};
}

/// The column definitions of `printer`, wide columns included (the server always prints wide;
/// kubectl hides priority-1 columns unless `-o wide`).
pub(super) fn columns(printer: Printer) -> &'static [Col] {
    use Printer as P;
    match printer {
        P::Pod => cols![
            NAME,
            c(
                "Ready",
                "string",
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            c(
                "Status",
                "string",
                "The aggregate status of the containers in this pod.",
            ),
            c(
                "Restarts",
                "string",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            AGE,
            w("IP", "string", d::POD_IP),
            w("Node", "string", d::POD_NODE_NAME),
            w("Nominated Node", "string", d::POD_NOMINATED_NODE_NAME),
            w("Readiness Gates", "string", d::POD_READINESS_GATES),
        ],
        P::PodTemplate => cols![
            NAME,
            c(
                "Containers",
                "string",
                "Names of each container in the template.",
            ),
            c(
                "Images",
                "string",
                "Images referenced by each container in the template.",
            ),
            c("Pod Labels", "string", "The labels for the pod template."),
        ],
        P::PodDisruptionBudget => cols![
            NAME,
            c(
                "Min Available",
                "string",
                "The minimum number of pods that must be available.",
            ),
            c(
                "Max Unavailable",
                "string",
                "The maximum number of pods that may be unavailable.",
            ),
            c(
                "Allowed Disruptions",
                "integer",
                "Calculated number of pods that may be disrupted at this time.",
            ),
            AGE,
        ],
        P::ReplicationController => cols![
            NAME,
            c("Desired", "integer", d::RC_SPEC_REPLICAS),
            c("Current", "integer", d::RC_STATUS_REPLICAS),
            c("Ready", "integer", d::RC_STATUS_READY),
            AGE,
            CONTAINERS,
            IMAGES,
            w("Selector", "string", d::RC_SPEC_SELECTOR),
        ],
        P::ReplicaSet => cols![
            NAME,
            c("Desired", "integer", d::RS_SPEC_REPLICAS),
            c("Current", "integer", d::RS_STATUS_REPLICAS),
            c("Ready", "integer", d::RS_STATUS_READY),
            AGE,
            CONTAINERS,
            IMAGES,
            w("Selector", "string", d::RS_SPEC_SELECTOR),
        ],
        P::DaemonSet => cols![
            NAME,
            c("Desired", "integer", d::DS_DESIRED),
            c("Current", "integer", d::DS_CURRENT),
            c("Ready", "integer", d::DS_READY),
            c("Up-to-date", "integer", d::DS_UPDATED),
            c("Available", "integer", d::DS_AVAILABLE),
            c("Node Selector", "string", d::POD_NODE_SELECTOR),
            AGE,
            CONTAINERS,
            IMAGES,
            w("Selector", "string", d::DS_SELECTOR),
        ],
        P::Job => cols![
            NAME,
            c("Status", "string", "Status of the job."),
            c("Completions", "string", d::JOB_SUCCEEDED),
            c("Duration", "string", "Time required to complete the job."),
            AGE,
            CONTAINERS,
            IMAGES,
            w("Selector", "string", d::JOB_SELECTOR),
        ],
        P::CronJob => cols![
            NAME,
            c("Schedule", "string", d::CJ_SCHEDULE),
            c("Timezone", "string", d::CJ_TIME_ZONE),
            c("Suspend", "boolean", d::CJ_SUSPEND),
            c("Active", "integer", d::CJ_ACTIVE),
            c("Last Schedule", "string", d::CJ_LAST_SCHEDULE),
            AGE,
            CONTAINERS,
            IMAGES,
            w("Selector", "string", d::JOB_SELECTOR),
        ],
        P::Service => cols![
            NAME,
            c("Type", "string", d::SVC_TYPE),
            c("Cluster-IP", "string", d::SVC_CLUSTER_IP),
            c("External-IP", "string", d::SVC_EXTERNAL_IPS),
            c("Port(s)", "string", d::SVC_PORTS),
            AGE,
            w("Selector", "string", d::SVC_SELECTOR),
        ],
        P::Ingress => cols![
            NAME,
            c(
                "Class",
                "string",
                "The name of the IngressClass resource that should be used for additional configuration",
            ),
            c(
                "Hosts",
                "string",
                "Hosts that incoming requests are matched against before the ingress rule",
            ),
            c(
                "Address",
                "string",
                "Address is a list containing ingress points for the load-balancer",
            ),
            c("Ports", "string", "Ports of TLS configurations that open"),
            AGE,
        ],
        P::IngressClass => cols![
            NAME,
            c(
                "Controller",
                "string",
                "Controller that is responsible for handling this class",
            ),
            c(
                "Parameters",
                "string",
                "A reference to a resource with additional parameters",
            ),
            AGE,
        ],
        P::StatefulSet => cols![
            NAME,
            c("Ready", "string", "Number of the pod with ready state"),
            AGE,
            CONTAINERS,
            IMAGES,
        ],
        P::Endpoints => cols![NAME, c("Endpoints", "string", d::ENDPOINTS_SUBSETS), AGE],
        P::Node => cols![
            NAME,
            c("Status", "string", "The status of the node"),
            c("Roles", "string", "The roles of the node"),
            AGE,
            c("Version", "string", d::NODE_KUBELET_VERSION),
            w("Internal-IP", "string", d::NODE_ADDRESSES),
            w("External-IP", "string", d::NODE_ADDRESSES),
            w("OS-Image", "string", d::NODE_OS_IMAGE),
            w("Kernel-Version", "string", d::NODE_KERNEL_VERSION),
            w("Container-Runtime", "string", d::NODE_CONTAINER_RUNTIME),
        ],
        P::Event => cols![
            c("Last Seen", "string", d::EVENT_LAST_TIMESTAMP),
            c("Type", "string", d::EVENT_TYPE),
            c("Reason", "string", d::EVENT_REASON),
            c("Object", "string", d::EVENT_INVOLVED_OBJECT),
            w("Subobject", "string", d::OBJECT_REFERENCE_FIELD_PATH),
            w("Source", "string", d::EVENT_SOURCE),
            c("Message", "string", d::EVENT_MESSAGE),
            w("First Seen", "string", d::EVENT_FIRST_TIMESTAMP),
            w("Count", "string", d::EVENT_COUNT),
            Col {
                priority: 1,
                ..NAME
            },
        ],
        P::Namespace => cols![
            NAME,
            c("Status", "string", "The status of the namespace"),
            AGE,
        ],
        P::Secret => cols![
            NAME,
            c("Type", "string", d::SECRET_TYPE),
            c("Data", "string", d::SECRET_DATA),
            AGE,
        ],
        P::ServiceAccount => cols![NAME, c("Secrets", "string", d::SA_SECRETS), AGE],
        P::PersistentVolume => cols![
            NAME,
            c("Capacity", "string", d::PV_CAPACITY),
            c("Access Modes", "string", d::PV_ACCESS_MODES),
            c("Reclaim Policy", "string", d::PV_RECLAIM_POLICY),
            c("Status", "string", d::PV_PHASE),
            c("Claim", "string", d::PV_CLAIM_REF),
            c("StorageClass", "string", "StorageClass of the pv"),
            c(
                "VolumeAttributesClass",
                "string",
                "VolumeAttributesClass of the pv",
            ),
            c("Reason", "string", d::PV_REASON),
            AGE,
            w("VolumeMode", "string", d::PV_VOLUME_MODE),
        ],
        P::PersistentVolumeClaim => cols![
            NAME,
            c("Status", "string", d::PVC_PHASE),
            c("Volume", "string", d::PVC_VOLUME_NAME),
            c("Capacity", "string", d::PVC_CAPACITY),
            c("Access Modes", "string", d::PVC_ACCESS_MODES),
            c("StorageClass", "string", "StorageClass of the pvc"),
            c(
                "VolumeAttributesClass",
                "string",
                "VolumeAttributesClass of the pvc",
            ),
            AGE,
            w("VolumeMode", "string", d::PVC_VOLUME_MODE),
        ],
        P::ComponentStatus => cols![
            NAME,
            c("Status", "string", "Status of the component conditions"),
            c("Message", "string", "Message of the component conditions"),
            c("Error", "string", "Error of the component conditions"),
        ],
        P::Deployment => cols![
            NAME,
            c("Ready", "string", "Number of the pod with ready state"),
            c("Up-to-date", "string", d::DEPLOY_UPDATED),
            c("Available", "string", d::DEPLOY_AVAILABLE),
            AGE,
            CONTAINERS,
            IMAGES,
            w("Selector", "string", d::DEPLOY_SELECTOR),
        ],
        P::HorizontalPodAutoscaler => cols![
            NAME,
            c("Reference", "string", d::HPA_SCALE_TARGET_REF),
            c("Targets", "string", d::HPA_METRICS),
            c("MinPods", "string", d::HPA_MIN_REPLICAS),
            c("MaxPods", "string", d::HPA_MAX_REPLICAS),
            c("Replicas", "string", d::HPA_CURRENT_REPLICAS),
            AGE,
        ],
        P::ConfigMap => cols![NAME, c("Data", "string", d::CONFIGMAP_DATA), AGE],
        P::NetworkPolicy => cols![
            NAME,
            c("Pod-Selector", "string", d::NETPOL_POD_SELECTOR),
            AGE,
        ],
        P::RoleBinding => cols![
            NAME,
            c("Role", "string", d::ROLE_BINDING_ROLE_REF),
            AGE,
            w("Users", "string", "Users in the roleBinding"),
            w("Groups", "string", "Groups in the roleBinding"),
            w(
                "ServiceAccounts",
                "string",
                "ServiceAccounts in the roleBinding"
            ),
        ],
        P::ClusterRoleBinding => cols![
            NAME,
            c("Role", "string", d::CLUSTER_ROLE_BINDING_ROLE_REF),
            AGE,
            w("Users", "string", "Users in the clusterRoleBinding"),
            w("Groups", "string", "Groups in the clusterRoleBinding"),
            w(
                "ServiceAccounts",
                "string",
                "ServiceAccounts in the clusterRoleBinding",
            ),
        ],
        P::CertificateSigningRequest => cols![
            NAME,
            AGE,
            c("SignerName", "string", d::CSR_SIGNER_NAME),
            c("Requestor", "string", d::CSR_REQUEST),
            c("RequestedDuration", "string", d::CSR_EXPIRATION_SECONDS),
            c("Condition", "string", d::CSR_CONDITIONS),
        ],
        P::ClusterTrustBundle => cols![NAME, c("SignerName", "string", d::CSR_SIGNER_NAME)],
        P::Lease => cols![NAME, c("Holder", "string", d::LEASE_HOLDER), AGE],
        P::LeaseCandidate => cols![
            NAME,
            c("LeaseName", "string", d::LC_LEASE_NAME),
            c("BinaryVersion", "string", ""),
            c("EmulationVersion", "string", ""),
            AGE,
        ],
        P::StorageClass => cols![
            NAME,
            c("Provisioner", "string", d::SC_PROVISIONER),
            c("ReclaimPolicy", "string", d::SC_RECLAIM_POLICY),
            c("VolumeBindingMode", "string", d::SC_BINDING_MODE),
            c("AllowVolumeExpansion", "string", d::SC_ALLOW_EXPANSION),
            AGE,
        ],
        P::VolumeAttributesClass => {
            cols![NAME, c("DriverName", "string", d::VAC_DRIVER_NAME), AGE,]
        }
        P::ControllerRevision => cols![
            NAME,
            c("Controller", "string", "Controller of the object"),
            c("Revision", "string", d::CR_REVISION),
            AGE,
        ],
        P::ResourceQuota => cols![
            NAME,
            c(
                "Request",
                "string",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            c(
                "Limit",
                "string",
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
            AGE,
        ],
        P::PriorityClass => cols![
            NAME,
            c("Value", "integer", d::PC_VALUE),
            c("Global-Default", "boolean", d::PC_GLOBAL_DEFAULT),
            AGE,
            c("PreemptionPolicy", "string", d::PC_PREEMPTION_POLICY),
        ],
        P::RuntimeClass => cols![NAME, c("Handler", "string", ""), AGE],
        P::VolumeAttachment => cols![
            NAME,
            Col {
                format: "name",
                ..c("Attacher", "string", d::VA_ATTACHER)
            },
            c("PV", "string", d::VA_PV),
            c("Node", "string", d::VA_NODE),
            c("Attached", "boolean", d::VA_ATTACHED),
            AGE,
        ],
        P::EndpointSlice => cols![
            NAME,
            c("AddressType", "string", d::EPS_ADDRESS_TYPE),
            c("Ports", "string", d::EPS_PORTS),
            c("Endpoints", "string", d::EPS_ENDPOINTS),
            AGE,
        ],
        P::CsiNode => cols![
            NAME,
            c(
                "Drivers",
                "integer",
                "Drivers indicates the number of CSI drivers registered on the node",
            ),
            AGE,
        ],
        P::CsiDriver => cols![
            NAME,
            c("AttachRequired", "boolean", d::CSI_ATTACH_REQUIRED),
            c("PodInfoOnMount", "boolean", d::CSI_POD_INFO),
            c("StorageCapacity", "boolean", d::CSI_STORAGE_CAPACITY),
            c("TokenRequests", "string", d::CSI_TOKEN_REQUESTS),
            c("RequiresRepublish", "boolean", d::CSI_REQUIRES_REPUBLISH),
            c("Modes", "string", d::CSI_MODES),
            AGE,
        ],
        P::MutatingWebhook | P::ValidatingWebhook => cols![NAME, WEBHOOKS, AGE],
        P::ValidatingAdmissionPolicy => cols![
            NAME,
            c(
                "Validations",
                "integer",
                "Validations indicates the number of validation rules defined in this configuration",
            ),
            PARAM_KIND,
            AGE,
        ],
        P::MutatingAdmissionPolicy => cols![
            NAME,
            c(
                "Mutations",
                "integer",
                "Mutation indicates the number of mutations rules defined in this configuration",
            ),
            PARAM_KIND,
            AGE,
        ],
        P::ValidatingAdmissionPolicyBinding | P::MutatingAdmissionPolicyBinding => {
            cols![NAME, POLICY_NAME, PARAM_REF, AGE]
        }
        P::FlowSchema => cols![
            NAME,
            c("PriorityLevel", "string", d::FS_PL_NAME),
            c("MatchingPrecedence", "string", d::FS_PRECEDENCE),
            c("DistinguisherMethod", "string", d::FS_DISTINGUISHER),
            AGE,
            c(
                "MissingPL",
                "string",
                "references a broken or non-existent PriorityLevelConfiguration",
            ),
        ],
        P::PriorityLevelConfiguration => cols![
            NAME,
            c("Type", "string", d::PL_TYPE),
            c("NominalConcurrencyShares", "string", d::PL_NCS),
            c("Queues", "string", d::PL_QUEUES),
            c("HandSize", "string", d::PL_HAND_SIZE),
            c("QueueLengthLimit", "string", d::PL_QUEUE_LENGTH),
            AGE,
        ],
        P::ServiceCidr => cols![NAME, c("CIDRs", "string", d::SCIDR_CIDRS), AGE],
        P::IpAddress => cols![NAME, c("ParentRef", "string", d::IPADDR_PARENT_REF)],
        P::DeviceClass | P::ResourceClaimTemplate => cols![NAME, AGE],
        P::ResourceClaim => cols![
            NAME,
            c(
                "State",
                "string",
                "A summary of the current state (allocated, pending, reserved, etc.).",
            ),
            AGE,
        ],
        P::ResourceSlice => cols![
            NAME,
            c("Node", "string", d::RSLICE_NODE),
            c("Driver", "string", d::RSLICE_DRIVER),
            c("Pool", "string", d::RSLICE_POOL),
            AGE,
        ],
        P::ApiService => cols![
            NAME,
            c(
                "Service",
                "string",
                "The reference to the service that hosts the API endpoint.",
            ),
            c("Available", "string", "Whether this service is available."),
            AGE,
        ],
        P::Default => cols![NAME, c("Created At", "date", d::CREATION_TIMESTAMP)],
    }
}
