//! The table of top-level kinds that get a definition: (group, version, kind) -> k8s-openapi type,
//! one line per type; the group, version and kind come from the type's `Resource` impl.

use k8s_openapi::Resource;
use schemars::{JsonSchema, SchemaGenerator};

/// Decodes an object into its typed form and reports why it does not fit (wrong field types).
pub(super) type TypeCheck = fn(&serde_json::Value) -> Result<(), String>;

/// A kind served by some group version and the definition that describes it.
#[derive(Clone, Debug)]
pub(super) struct KindDef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub definition: String,
    /// Typed decoding of the kind, for kinds backed by a k8s-openapi type.
    pub type_check: Option<TypeCheck>,
}

impl KindDef {
    pub(super) fn new(group: &str, version: &str, kind: &str, definition: &str) -> KindDef {
        KindDef {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            definition: definition.to_owned(),
            type_check: None,
        }
    }
}

fn type_check<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Result<(), String> {
    T::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
}

fn add<T: Resource + JsonSchema + serde::de::DeserializeOwned>(
    generator: &mut SchemaGenerator,
    out: &mut Vec<KindDef>,
) {
    // The returned `$ref` is not needed: the definition lands in the generator.
    let _ = generator.subschema_for::<T>();
    let mut def = KindDef::new(T::GROUP, T::VERSION, T::KIND, &T::schema_name());
    def.type_check = Some(type_check::<T>);
    out.push(def);
}

macro_rules! kinds {
    ($generator:ident, $out:ident; $($ty:ty),* $(,)?) => {
        { $( add::<$ty>($generator, $out); )* }
    };
}

/// Calls `$m!` with every top-level kind k1s serves (the catalog's kinds, the kinds its
/// subresources serve, and the meta kinds every server answers with).
macro_rules! with_kinds {
    ($m:ident, $($arg:ident),*) => {{
        use k8s_openapi::api::{
            admissionregistration, apps, authentication, authorization, autoscaling, batch,
            certificates, coordination, core, discovery, events, flowcontrol, networking, node,
            policy, rbac, scheduling, storage,
        };
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
        use k8s_openapi::apimachinery::pkg::apis::meta;
        use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
        $m!($($arg),*;
        core::v1::Binding,
        core::v1::ComponentStatus,
        core::v1::ConfigMap,
        core::v1::Endpoints,
        core::v1::Event,
        core::v1::LimitRange,
        core::v1::Namespace,
        core::v1::Node,
        core::v1::PersistentVolume,
        core::v1::PersistentVolumeClaim,
        core::v1::Pod,
        core::v1::PodTemplate,
        core::v1::ReplicationController,
        core::v1::ResourceQuota,
        core::v1::Secret,
        core::v1::Service,
        core::v1::ServiceAccount,
        apiregistration::v1::APIService,
        apps::v1::ControllerRevision,
        apps::v1::DaemonSet,
        apps::v1::Deployment,
        apps::v1::ReplicaSet,
        apps::v1::StatefulSet,
        events::v1::Event,
        authentication::v1::SelfSubjectReview,
        authentication::v1::TokenRequest,
        authentication::v1::TokenReview,
        authorization::v1::LocalSubjectAccessReview,
        authorization::v1::SelfSubjectAccessReview,
        authorization::v1::SelfSubjectRulesReview,
        authorization::v1::SubjectAccessReview,
        autoscaling::v1::HorizontalPodAutoscaler,
        autoscaling::v1::Scale,
        autoscaling::v2::HorizontalPodAutoscaler,
        batch::v1::CronJob,
        batch::v1::Job,
        certificates::v1::CertificateSigningRequest,
        networking::v1::Ingress,
        networking::v1::IngressClass,
        networking::v1::IPAddress,
        networking::v1::NetworkPolicy,
        networking::v1::ServiceCIDR,
        policy::v1::Eviction,
        policy::v1::PodDisruptionBudget,
        rbac::v1::ClusterRole,
        rbac::v1::ClusterRoleBinding,
        rbac::v1::Role,
        rbac::v1::RoleBinding,
        storage::v1::CSIDriver,
        storage::v1::CSINode,
        storage::v1::CSIStorageCapacity,
        storage::v1::StorageClass,
        storage::v1::VolumeAttachment,
        admissionregistration::v1::MutatingWebhookConfiguration,
        admissionregistration::v1::ValidatingAdmissionPolicy,
        admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        admissionregistration::v1::ValidatingWebhookConfiguration,
        apiextensions::v1::CustomResourceDefinition,
        scheduling::v1::PriorityClass,
        coordination::v1::Lease,
        node::v1::RuntimeClass,
        discovery::v1::EndpointSlice,
        flowcontrol::v1::FlowSchema,
        flowcontrol::v1::PriorityLevelConfiguration,
        meta::v1::APIGroup,
        meta::v1::APIGroupList,
        meta::v1::APIResourceList,
        meta::v1::APIVersions,
        meta::v1::Status,
        );
    }};
}

/// Generates the definition of every kind into `generator`.
pub(super) fn register(generator: &mut SchemaGenerator, out: &mut Vec<KindDef>) {
    with_kinds!(kinds, generator, out);

    use k8s_openapi::apimachinery::pkg::apis::meta;
    // Not `Resource`s, but every group version serves them (their GVKs are added per group version).
    let _ = generator.subschema_for::<meta::v1::DeleteOptions>();
    let _ = generator.subschema_for::<meta::v1::WatchEvent<()>>();
    let _ = generator.subschema_for::<meta::v1::ListMeta>();
    let _ = generator.subschema_for::<meta::v1::Patch>();
}

macro_rules! type_checks {
    ($out:ident; $($ty:ty),* $(,)?) => {
        { $( $out.push((
            <$ty as Resource>::GROUP,
            <$ty as Resource>::VERSION,
            <$ty as Resource>::KIND,
            type_check::<$ty> as TypeCheck,
        )); )* }
    };
}

/// The typed decoding of every kind, without generating any schema.
pub(super) fn type_checks() -> Vec<(&'static str, &'static str, &'static str, TypeCheck)> {
    let mut out = Vec::new();
    with_kinds!(type_checks, out);
    out
}
