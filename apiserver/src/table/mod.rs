//! Server-side printing: meta.k8s.io `Table` responses (what `kubectl get` shows), with the
//! columns and cells kube-apiserver 1.33 prints for each kind.
//!
//! kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and renders the rows the
//! server computed; it hides priority-1 columns unless `-o wide`, and reads each row's
//! `object.metadata` for `--show-labels`, `-L` and the NAMESPACE column of `-A`. Like upstream,
//! the server always computes the wide cells.

/// Builds a row's cells from expressions convertible into JSON values.
macro_rules! cells {
    ($($e:expr),* $(,)?) => { vec![$(serde_json::Value::from($e)),*] };
}

mod columns;
mod core;
pub mod custom;
mod docs;
mod format;
mod misc;
mod workloads;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cells;
#[cfg(test)]
mod tests_pods;

use jiff::Timestamp;
use k1s_apimachinery::ApiError;
use serde_json::{Map, Value, json};

use columns::{Printer, columns, printer_for};
pub use format::human_duration;

/// An `includeObject` value other than `None`, `Metadata` or `Object`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized includeObject value: {}", Value::from(.0.as_str()))]
pub struct UnknownIncludeObject(pub String);

impl From<UnknownIncludeObject> for ApiError {
    fn from(e: UnknownIncludeObject) -> Self {
        ApiError::bad_request(e.to_string())
    }
}

/// `meta.k8s.io/v1`, the Table version current kubectl asks for first.
pub const TABLE_V1: &str = "meta.k8s.io/v1";
/// `meta.k8s.io/v1beta1`, the Table version older clients ask for.
pub const TABLE_V1BETA1: &str = "meta.k8s.io/v1beta1";

/// What each row carries besides its cells (`?includeObject=`, upstream `IncludeObjectPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object: the row's `object` is `null`.
    None,
    /// A `PartialObjectMetadata` with the object's metadata (the default).
    #[default]
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter; absent or empty means `Metadata`. Anything
    /// else is an error that converts into upstream's BadRequest
    /// (`unrecognized includeObject value: "x"`).
    pub fn parse(value: Option<&str>) -> Result<Self, UnknownIncludeObject> {
        match value.unwrap_or("") {
            "" | "Metadata" => Ok(Self::Metadata),
            "None" => Ok(Self::None),
            "Object" => Ok(Self::Object),
            other => Err(UnknownIncludeObject(other.to_string())),
        }
    }

    /// The query parameter value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Metadata => "Metadata",
            Self::Object => "Object",
        }
    }
}

/// The Table `columnDefinitions` for `group`/`resource` (`""` is the core group): `name`,
/// `type`, `format`, `description`, `priority` as upstream declares them, wide (priority 1)
/// columns included. Resources without an upstream printer get the default `Name` and
/// `Created At` columns.
pub fn column_definitions(group: &str, resource: &str) -> Vec<Value> {
    columns(printer_for(group, resource))
        .iter()
        .map(|c| c.to_json())
        .collect()
}

/// The cells of one row for `obj`, one per column of [`column_definitions`], computed as the
/// upstream printer computes them; `now` is the reference time for AGE-like cells.
pub fn row_cells(group: &str, resource: &str, obj: &Value, now: Timestamp) -> Vec<Value> {
    cells_for(printer_for(group, resource), group, obj, now)
}

fn cells_for(printer: Printer, group: &str, obj: &Value, now: Timestamp) -> Vec<Value> {
    use Printer as P;
    match printer {
        P::Pod => workloads::pod(obj, now),
        P::PodTemplate => workloads::pod_template(obj, now),
        P::PodDisruptionBudget => workloads::pod_disruption_budget(obj, now),
        P::ReplicationController => workloads::replication_controller(obj, now),
        P::ReplicaSet => workloads::replica_set(obj, now),
        P::DaemonSet => workloads::daemon_set(obj, now),
        P::Job => workloads::job(obj, now),
        P::CronJob => workloads::cron_job(obj, now),
        P::StatefulSet => workloads::stateful_set(obj, now),
        P::Deployment => workloads::deployment(obj, now),
        P::HorizontalPodAutoscaler => workloads::horizontal_pod_autoscaler(obj, now),
        P::ControllerRevision => workloads::controller_revision(obj, now),
        P::Service => core::service(obj, now),
        P::Endpoints => core::endpoints(obj, now),
        P::EndpointSlice => core::endpoint_slice(obj, now),
        P::Node => core::node(obj, now),
        P::Event => core::event(group, obj, now),
        P::Namespace => core::namespace(obj, now),
        P::Secret => core::secret(obj, now),
        P::ServiceAccount => core::service_account(obj, now),
        P::PersistentVolume => core::persistent_volume(obj, now),
        P::PersistentVolumeClaim => core::persistent_volume_claim(obj, now),
        P::ComponentStatus => core::component_status(obj, now),
        P::ConfigMap => core::config_map(obj, now),
        P::ResourceQuota => core::resource_quota(obj, now),
        P::Ingress => misc::ingress(obj, now),
        P::IngressClass => misc::ingress_class(obj, now),
        P::NetworkPolicy => misc::network_policy(obj, now),
        P::RoleBinding | P::ClusterRoleBinding => misc::role_binding(obj, now),
        P::CertificateSigningRequest => misc::certificate_signing_request(obj, now),
        P::ClusterTrustBundle => misc::cluster_trust_bundle(obj, now),
        P::Lease => misc::lease(obj, now),
        P::LeaseCandidate => misc::lease_candidate(obj, now),
        P::StorageClass => misc::storage_class(obj, now),
        P::VolumeAttributesClass => misc::volume_attributes_class(obj, now),
        P::PriorityClass => misc::priority_class(obj, now),
        P::RuntimeClass => misc::runtime_class(obj, now),
        P::VolumeAttachment => misc::volume_attachment(obj, now),
        P::CsiNode => misc::csi_node(obj, now),
        P::CsiDriver => misc::csi_driver(obj, now),
        P::MutatingWebhook | P::ValidatingWebhook => misc::webhook_configuration(obj, now),
        P::ValidatingAdmissionPolicy => misc::admission_policy(obj, "validations", now),
        P::MutatingAdmissionPolicy => misc::admission_policy(obj, "mutations", now),
        P::ValidatingAdmissionPolicyBinding | P::MutatingAdmissionPolicyBinding => {
            misc::admission_policy_binding(obj, now)
        }
        P::FlowSchema => misc::flow_schema(obj, now),
        P::PriorityLevelConfiguration => misc::priority_level_configuration(obj, now),
        P::ServiceCidr => misc::service_cidr(obj, now),
        P::IpAddress => misc::ip_address(obj, now),
        P::DeviceClass | P::ResourceClaimTemplate => misc::name_and_age(obj, now),
        P::ResourceClaim => misc::resource_claim(obj, now),
        P::ResourceSlice => misc::resource_slice(obj, now),
        P::ApiService => misc::api_service(obj, now),
        P::Default => misc::default_row(obj, now),
    }
}

/// A complete Table for a list response: `kind`, `apiVersion` (`table_api_version`, e.g.
/// [`TABLE_V1`]), `metadata` (`resourceVersion`, `continue`), `columnDefinitions` and one row per
/// item, each with `cells`, `conditions` where upstream sets them (finished pods) and `object`
/// per `include_object`. Flow schemas are ordered by matching precedence as upstream lists them.
#[allow(clippy::too_many_arguments)]
pub fn to_table(
    group: &str,
    resource: &str,
    items: &[Value],
    include_object: IncludeObject,
    resource_version: &str,
    continue_token: Option<&str>,
    now: Timestamp,
    table_api_version: &str,
) -> Value {
    let printer = printer_for(group, resource);
    let mut ordered: Vec<&Value> = items.iter().collect();
    if printer == Printer::FlowSchema {
        ordered.sort_by(|a, b| misc::flow_schema_order(a, b));
    }
    let rows: Vec<Value> = ordered
        .into_iter()
        .map(|obj| table_row(printer, group, obj, include_object, now, table_api_version))
        .collect();
    let mut metadata = Map::new();
    if !resource_version.is_empty() {
        metadata.insert("resourceVersion".into(), resource_version.into());
    }
    if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
        metadata.insert("continue".into(), token.into());
    }
    table(table_api_version, metadata, Some(printer), rows)
}

/// A one-row Table for a single object (a get, or one watch event). `resourceVersion` is the
/// object's. With `with_headers` false, `columnDefinitions` is `null`, as upstream sends after
/// the first event of a watch.
pub fn object_table(
    group: &str,
    resource: &str,
    obj: &Value,
    include_object: IncludeObject,
    now: Timestamp,
    table_api_version: &str,
    with_headers: bool,
) -> Value {
    let printer = printer_for(group, resource);
    let mut metadata = Map::new();
    if let Some(rv) =
        format::opt_str(obj, &["metadata", "resourceVersion"]).filter(|s| !s.is_empty())
    {
        metadata.insert("resourceVersion".into(), rv.into());
    }
    let row = table_row(printer, group, obj, include_object, now, table_api_version);
    table(
        table_api_version,
        metadata,
        with_headers.then_some(printer),
        vec![row],
    )
}

fn table(
    api_version: &str,
    metadata: Map<String, Value>,
    printer: Option<Printer>,
    rows: Vec<Value>,
) -> Value {
    let column_definitions = printer.map_or(Value::Null, |p| {
        Value::Array(columns(p).iter().map(|c| c.to_json()).collect())
    });
    json!({
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

fn table_row(
    printer: Printer,
    group: &str,
    obj: &Value,
    include_object: IncludeObject,
    now: Timestamp,
    table_api_version: &str,
) -> Value {
    let mut row = Map::new();
    row.insert(
        "cells".into(),
        Value::Array(cells_for(printer, group, obj, now)),
    );
    if printer == Printer::Pod
        && let Some(conditions) = workloads::pod_row_conditions(obj)
    {
        row.insert("conditions".into(), conditions);
    }
    let object = match include_object {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => partial_object_metadata(obj, table_api_version),
    };
    row.insert("object".into(), object);
    Value::Object(row)
}

/// The `PartialObjectMetadata` upstream embeds for `includeObject=Metadata`: the object's whole
/// `metadata`, typed in the Table's own group version.
fn partial_object_metadata(obj: &Value, table_api_version: &str) -> Value {
    let metadata = format::get(obj, &["metadata"])
        .filter(|m| m.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": table_api_version,
        "metadata": metadata,
    })
}
