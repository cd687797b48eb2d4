//! ObjectMeta validation on create and update, with upstream's field paths and messages
//! (`k8s.io/apimachinery/pkg/api/validation/objectmeta.go`).

use serde_json::Value;

use super::{OwnerReference, owner_references};
use crate::gofmt;
use crate::gvk::split_api_version;
use crate::status::FieldError;
use crate::validation::{
    ValidateNameFn, is_qualified_name, is_valid_label_value, name_is_dns_label,
};

/// The finalizer that orphans dependents on delete.
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
/// The finalizer of foreground cascading deletion.
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";
/// Upstream's limit on the summed length of annotation keys and values (256 KiB).
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

const FIELD_IMMUTABLE: &str = "field is immutable";

fn meta_obj(obj: &Value) -> Option<&serde_json::Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

fn meta_string<'a>(obj: &'a Value, key: &str) -> &'a str {
    meta_obj(obj)
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn meta_string_map(obj: &Value, key: &str) -> Vec<(String, String)> {
    meta_obj(obj)
        .and_then(|m| m.get(key))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.labels` keys must be qualified names and values valid label values.
pub fn validate_labels(labels: &[(String, String)], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(path, k.as_str(), msg));
        }
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path, v.as_str(), msg));
        }
    }
    errs
}

/// The first rules of upstream's ValidatePodTemplateSpec: a pod template's labels, then its
/// annotations, reported at `path.labels` and `path.annotations` (`path` is the template's, not
/// its metadata's: upstream names them so).
pub fn validate_template_labels_and_annotations(
    template: Option<&Value>,
    path: &str,
) -> Vec<FieldError> {
    let pairs = |field: &str| -> Vec<(String, String)> {
        template
            .and_then(|t| t.pointer(&format!("/metadata/{field}")))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut errs = validate_labels(&pairs("labels"), &format!("{path}.labels"));
    errs.extend(validate_annotations(
        &pairs("annotations"),
        &format!("{path}.annotations"),
    ));
    errs
}

/// Annotation keys must be qualified names (case-insensitive); total size at most 256 KiB.
pub fn validate_annotations(annotations: &[(String, String)], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in annotations {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(path, k.as_str(), msg));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(
            path,
            Some(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES),
        ));
    }
    errs
}

/// Each reference needs apiVersion, kind, name and uid; at most one may be the controller;
/// core `Event`s cannot own objects.
pub fn validate_owner_references(refs: &[OwnerReference], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let (group, version) = split_api_version(&r.api_version).unwrap_or(("", ""));
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.apiVersion"),
                r.api_version.as_str(),
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.kind"),
                r.kind.as_str(),
                "kind must not be empty",
            ));
        }
        if r.name.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.name"),
                r.name.as_str(),
                "name must not be empty",
            ));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.uid"),
                r.uid.as_str(),
                "uid must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                serde_json::to_value(r).unwrap_or(Value::Null),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.is_controller() {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    serde_json::to_value(refs).unwrap_or(Value::Null),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// Finalizer names must be qualified names; `orphan` and `foregroundDeletion` exclude each other.
pub fn validate_finalizers(finalizers: &[String], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for f in finalizers {
        for msg in is_qualified_name(f) {
            errs.push(FieldError::invalid(path, f.as_str(), msg));
        }
    }
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    if has(FINALIZER_ORPHAN_DEPENDENTS) && has(FINALIZER_DELETE_DEPENDENTS) {
        errs.push(FieldError::invalid_raw(
            path,
            gofmt::string_slice(finalizers, true),
            format!(
                "finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"
            ),
        ));
    }
    errs
}

fn finalizer_list(obj: &Value) -> Vec<String> {
    meta_obj(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn common(obj: &Value, with_finalizers: bool, errs: &mut Vec<FieldError>) {
    errs.extend(validate_labels(
        &meta_string_map(obj, "labels"),
        "metadata.labels",
    ));
    errs.extend(validate_annotations(
        &meta_string_map(obj, "annotations"),
        "metadata.annotations",
    ));
    errs.extend(validate_owner_references(
        &owner_references(obj),
        "metadata.ownerReferences",
    ));
    if with_finalizers {
        errs.extend(validate_finalizers(
            &finalizer_list(obj),
            "metadata.finalizers",
        ));
    }
}

/// Validates metadata of an object being created (after name generation), as upstream's
/// `ValidateObjectMetaAccessor`: name (or generateName) per `name_fn`, namespace present and a
/// DNS label when `requires_namespace`, absent otherwise, non-negative generation, labels,
/// annotations, owner references and finalizers. Paths start at `metadata`.
pub fn validate_object_meta(
    obj: &Value,
    requires_namespace: bool,
    name_fn: ValidateNameFn,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let generate_name = meta_string(obj, "generateName");
    if !generate_name.is_empty() {
        for msg in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                generate_name,
                msg,
            ));
        }
    }
    let name = meta_string(obj, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_fn(name, false) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
    }
    let namespace = meta_string(obj, "namespace");
    if requires_namespace {
        if namespace.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for msg in name_is_dns_label(namespace, false) {
                errs.push(FieldError::invalid("metadata.namespace", namespace, msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if let Some(generation) = meta_obj(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .filter(|g| *g < 0)
    {
        errs.push(FieldError::invalid(
            "metadata.generation",
            generation,
            "must be greater than or equal to 0",
        ));
    }
    common(obj, true, &mut errs);
    errs
}

/// Validates metadata on update, as upstream's `ValidateObjectMetaAccessorUpdate`: no new
/// finalizers while deleting, resourceVersion required, generation not decremented, identity
/// and deletion fields immutable, labels, annotations and owner references.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !meta_string(old, "deletionTimestamp").is_empty() {
        let old_finalizers = finalizer_list(old);
        let mut extra: Vec<String> = finalizer_list(new)
            .into_iter()
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    gofmt::string_slice(&extra, false)
                ),
            ));
        }
    }
    let rv = meta_string(new, "resourceVersion");
    if rv.is_empty() {
        errs.push(FieldError::invalid(
            "metadata.resourceVersion",
            rv,
            "must be specified for an update",
        ));
    }
    let generation = |o: &Value| {
        meta_obj(o)
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    if generation(new) < generation(old) {
        errs.push(FieldError::invalid(
            "metadata.generation",
            generation(new),
            "must not be decremented",
        ));
    }
    for key in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        // Absent, null and "" are the same (zero) value, as in Go.
        let get = |o: &Value| {
            meta_obj(o)
                .and_then(|m| m.get(key))
                .filter(|v| !v.is_null() && v.as_str() != Some(""))
                .cloned()
        };
        let (n, o) = (get(new), get(old));
        if n != o {
            errs.push(FieldError::invalid(
                format!("metadata.{key}"),
                n.unwrap_or(Value::String(String::new())),
                FIELD_IMMUTABLE,
            ));
        }
    }
    common(new, false, &mut errs);
    errs
}
