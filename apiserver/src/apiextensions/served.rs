//! What the server knows about each served custom resource version (schema, subresources,
//! printer columns, storage version), looked up by its catalog entry, and the strategy that
//! applies a version's schema in the generic registry.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use k1s_apimachinery::catalog::ResourceInfo;
use k1s_apimachinery::status::FieldErrorType;
use k1s_apimachinery::{FieldError, GroupVersionKind};
use serde_json::{Value, json};

use super::schema::{self, Schema};
use crate::registry::Strategy;
use crate::table::custom::PrinterColumn;

/// The scale subresource's paths (`.spec.replicas`, `.status.replicas`, `.status.selector`).
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// One served version of a CRD.
#[derive(Debug)]
pub struct ServedVersion {
    pub info: &'static ResourceInfo,
    pub crd_name: String,
    /// The version new objects are stored in.
    pub storage_version: String,
    pub schema: Option<Schema>,
    /// The version's `openAPIV3Schema` as written.
    pub raw_schema: Option<Value>,
    pub status: bool,
    pub scale: Option<ScalePaths>,
    pub columns: Vec<PrinterColumn>,
    /// The CRD is being deleted: no new objects.
    pub terminating: bool,
    /// The strategy the registry uses for this version.
    pub strategy: &'static CustomResourceStrategy,
    /// The CRD's conversion webhook (`strategy: Webhook`); without one only apiVersion changes.
    pub conversion: Option<Arc<super::webhook_converter::ConversionWebhook>>,
    /// The `Warning` every request for a `deprecated` version gets.
    pub deprecation_warning: Option<String>,
}

/// Served versions by catalog entry address (entries are interned, so the address is stable).
static SERVED: LazyLock<RwLock<HashMap<usize, Arc<ServedVersion>>>> =
    LazyLock::new(RwLock::default);

fn key(info: &ResourceInfo) -> usize {
    std::ptr::from_ref(info) as usize
}

/// The served version behind a custom resource's catalog entry.
pub fn lookup(info: &ResourceInfo) -> Option<Arc<ServedVersion>> {
    SERVED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key(info))
        .cloned()
}

/// Replaces what `crd_name` serves.
pub(super) fn publish(crd_name: &str, versions: Vec<Arc<ServedVersion>>) {
    let mut served = SERVED.write().unwrap_or_else(|p| p.into_inner());
    served.retain(|_, v| v.crd_name != crd_name);
    for v in versions {
        served.insert(key(v.info), v);
    }
}

/// All served custom resource versions.
pub fn all() -> Vec<Arc<ServedVersion>> {
    let mut out: Vec<_> = SERVED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .cloned()
        .collect();
    out.sort_by(|a, b| {
        (a.info.group, a.info.resource, a.info.version).cmp(&(
            b.info.group,
            b.info.resource,
            b.info.version,
        ))
    });
    out
}

/// The structural schema (`openAPIV3Schema` as the CRD declares it, with its list-type and
/// map-type extensions) of a served custom resource version, for server-side apply.
pub fn schema_for_gvk(gvk: &GroupVersionKind) -> Option<Value> {
    let info = k1s_apimachinery::catalog::find_gvk(gvk)?;
    lookup(info)?.raw_schema.clone()
}

/// The registry hooks of one custom resource version: schema defaulting, pruning and
/// validation, status reset and generation as upstream's customResourceStrategy.
#[derive(Debug)]
pub struct CustomResourceStrategy {
    pub schema: Option<Schema>,
    pub status: bool,
    /// The schema's `x-kubernetes-validations`, compiled once.
    pub rules: Option<super::cel::Validator>,
    /// `selectableFields` as field selector names (`spec.color`).
    pub selectable: &'static [&'static str],
}

/// Strategies by their definition, leaked once each so the registry can hold `&'static`.
static STRATEGIES: LazyLock<std::sync::Mutex<HashMap<String, &'static CustomResourceStrategy>>> =
    LazyLock::new(Default::default);

/// The strategy for a version's schema and status flag (interned by the schema's text).
pub(super) fn strategy_for(
    raw_schema: Option<&Value>,
    status: bool,
    selectable: &[String],
) -> &'static CustomResourceStrategy {
    let fingerprint = format!(
        "{status}:{}:{}",
        selectable.join(","),
        raw_schema.map(Value::to_string).unwrap_or_default()
    );
    let mut all = STRATEGIES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = all.get(&fingerprint) {
        return s;
    }
    let leaked: &'static CustomResourceStrategy = Box::leak(Box::new(CustomResourceStrategy {
        schema: raw_schema.and_then(|s| Schema::parse(s).ok()),
        status,
        rules: raw_schema.and_then(|s| super::cel::compile(s, "").0),
        selectable: Box::leak(
            selectable
                .iter()
                .map(|f| &*Box::leak(f.clone().into_boxed_str()))
                .collect::<Vec<&'static str>>()
                .into_boxed_slice(),
        ),
    }));
    all.insert(fingerprint, leaked);
    leaked
}

impl Strategy for CustomResourceStrategy {
    fn selectable_fields(&self) -> &'static [&'static str] {
        self.selectable
    }

    fn default(&self, obj: &mut Value) {
        if let Some(s) = &self.schema {
            schema::apply_defaults(s, obj);
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status
            && let Some(o) = obj.as_object_mut()
        {
            o.remove("status");
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // Without a status subresource every change outside metadata is a new generation.
        if self.status {
            return;
        }
        let strip = |v: &Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("metadata");
            }
            v
        };
        if strip(new) != strip(old) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
        }
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.validate_with_rules(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_with_rules(new, Some(old))
    }

    fn tracks_generation(&self, _: &ResourceInfo) -> bool {
        // Custom resources always start at generation 1; updates bump it as above (or, with a
        // status subresource, on changes outside metadata and status).
        true
    }
}

impl CustomResourceStrategy {
    /// Schema validation, then the CEL rules unless the object's shape is already wrong
    /// (upstream's hasBlockingErr: type errors and unsupported values stop the rules).
    fn validate_with_rules(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = match &self.schema {
            Some(s) => schema::validate(s, obj),
            None => Vec::new(),
        };
        if let Some(rules) = &self.rules {
            let blocking = errs.iter().any(|e| {
                matches!(
                    e.error_type,
                    FieldErrorType::NotSupported | FieldErrorType::TypeInvalid
                )
            });
            if blocking {
                errs.push(FieldError::invalid(
                    "<nil>",
                    "null",
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                errs.extend(rules.validate(obj, old));
            }
        }
        errs
    }
}

impl ServedVersion {
    /// Unknown fields dropped from `obj`, as paths.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        match &self.schema {
            Some(s) => schema::prune(s, obj),
            None => Vec::new(),
        }
    }

    /// `apiVersion` of the storage version.
    pub fn storage_api_version(&self) -> String {
        format!("{}/{}", self.info.group, self.storage_version)
    }
}

fn pointer(json_path: &str) -> String {
    json_path.replace('.', "/")
}

/// The autoscaling/v1 Scale of a custom resource.
pub fn to_scale(paths: &ScalePaths, obj: &Value) -> Value {
    let metadata = crate::registry::subresource::scale_metadata(obj);
    let mut status = json!({
        "replicas": obj.pointer(&pointer(&paths.status_replicas)).cloned().unwrap_or(json!(0)),
    });
    if let Some(sel) = paths
        .label_selector
        .as_deref()
        .and_then(|p| obj.pointer(&pointer(p)))
        .and_then(Value::as_str)
    {
        status["selector"] = json!(sel);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": { "replicas": obj.pointer(&pointer(&paths.spec_replicas)).cloned().unwrap_or(json!(0)) },
        "status": status,
    })
}

/// The custom resource after a Scale was written to it: the spec replicas path changes.
pub fn apply_scale(paths: &ScalePaths, obj: &Value, scale: &Value) -> Value {
    let mut out = obj.clone();
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    let parts: Vec<&str> = paths
        .spec_replicas
        .trim_start_matches('.')
        .split('.')
        .collect();
    let mut cur = &mut out;
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        if i + 1 == parts.len() {
            cur[*part] = replicas.clone();
            break;
        }
        cur = &mut cur[*part];
    }
    match scale.pointer("/metadata/resourceVersion") {
        Some(rv) => out["metadata"]["resourceVersion"] = rv.clone(),
        None => {
            if let Some(m) = out.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
        }
    }
    out
}
