//! Strategies: the per-kind hooks of the generic registry (defaulting, create/update preparation,
//! validation, field-selector fields). Kinds without special needs use the defaults.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use crate::auth::UserInfo;

/// The built-in kinds whose upstream strategy sets `metadata.generation` to 1 on create and
/// bumps it when the spec changes (PrepareForCreate/PrepareForUpdate of each
/// `pkg/registry/<group>/<kind>/strategy.go` in 1.33). Services, Nodes, PersistentVolumes and
/// claims, ResourceQuotas, HPAs, CSRs, APIServices, VolumeAttachments and the kinds without a
/// spec have none. Custom resources and CRDs answer through their own strategies.
const GENERATION_TRACKED: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "podtemplates"),
    ("", "replicationcontrollers"),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("batch", "cronjobs"),
    ("batch", "jobs"),
    ("discovery.k8s.io", "endpointslices"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    ("networking.k8s.io", "ingressclasses"),
    ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "networkpolicies"),
    ("policy", "poddisruptionbudgets"),
    ("storage.k8s.io", "csidrivers"),
];

/// Per-kind behaviour around the generic store. Every method has a sensible default.
pub trait Strategy: Send + Sync {
    /// Fills in defaulted fields (upstream's defaulting functions).
    fn default(&self, _obj: &mut Value) {}

    /// Adjusts a new object before validation (reset status, set initial phase, ...).
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Fills what a new object takes from the user who creates it (a CSR's `spec.username`,
    /// `groups`, `uid` and `extra`). Runs after `prepare_for_create`, for client writes only.
    fn prepare_for_create_by(&self, _obj: &mut Value, _requester: &UserInfo) {}

    /// Adjusts an updated object before validation.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Adjusts an update through a subresource (after the generic keep-the-rest merge) before
    /// validation; most kinds treat it as any update.
    fn prepare_for_subresource_update(&self, _subresource: &str, new: &mut Value, old: &Value) {
        self.prepare_for_update(new, old);
    }

    /// Kind-specific validation of a new object.
    fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Kind-specific validation of an update (immutable fields, ...).
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(new)
    }

    /// Validation of an update through a subresource (`status`, `resize`, ...); most kinds
    /// validate it as any update.
    fn validate_subresource_update(
        &self,
        _subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Vec<FieldError> {
        self.validate_update(new, old)
    }

    /// Warnings for a new object (sent as `Warning:` headers), as upstream's WarningsOnCreate.
    fn warnings_on_create(&self, _obj: &Value) -> Vec<String> {
        Vec::new()
    }

    /// Warnings for an update (sent as `Warning:` headers), as upstream's WarningsOnUpdate;
    /// `new` is the object as the client sent it, before the update's preparation.
    fn warnings_on_update(&self, _new: &Value, _old: &Value) -> Vec<String> {
        Vec::new()
    }

    /// Whether metadata.generation starts at 1 and counts spec changes for this kind.
    fn tracks_generation(&self, info: &ResourceInfo) -> bool {
        GENERATION_TRACKED.contains(&(info.group, info.resource))
    }

    /// Field-selector fields beyond metadata.name / metadata.namespace, as upstream supports.
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether an update without resourceVersion is allowed (upstream: true for most kinds).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Whether a DELETE answers with the deleted object instead of a Status (upstream's
    /// `ReturnDeletedObject`, set for pods and services).
    fn return_deleted_object(&self) -> bool {
        false
    }

    /// Whether PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }
}

/// The strategy for kinds with no special behaviour.
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {}

/// The value of a field-selector field: a dotted path into the object, rendered as upstream
/// renders it (missing -> "", booleans and numbers as text).
pub fn field_value(obj: &Value, field: &str) -> String {
    let mut cur = obj;
    for part in field.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
