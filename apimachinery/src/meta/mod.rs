//! Accessors for `apiVersion`, `kind` and `metadata` (ObjectMeta) on objects held as
//! `serde_json::Value`, the form the server's generic path works on.

mod validate;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::gvk::{GroupVersionKind, GvkError};

pub use validate::{
    FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
    validate_annotations, validate_finalizers, validate_labels, validate_object_meta,
    validate_object_meta_update, validate_owner_references,
    validate_template_labels_and_annotations,
};

/// Why metadata could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("object is not a JSON object")]
    NotAnObject,
    #[error("metadata is not a JSON object")]
    MetadataNotAnObject,
    /// Upstream's decoding message for a missing `kind`.
    #[error("Object 'Kind' is missing in '{0}'")]
    MissingKind(String),
    /// Upstream's decoding message for a missing `apiVersion`.
    #[error("Object 'apiVersion' is missing in '{0}'")]
    MissingApiVersion(String),
    #[error(transparent)]
    InvalidApiVersion(#[from] GvkError),
}

/// A `metadata.ownerReferences[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    pub fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }
}

// ---- top level

/// `apiVersion`, if a string.
pub fn api_version(obj: &Value) -> Option<&str> {
    obj.get("apiVersion").and_then(Value::as_str)
}

/// `kind`, if a string.
pub fn kind(obj: &Value) -> Option<&str> {
    obj.get("kind").and_then(Value::as_str)
}

/// The object's GVK from `apiVersion` and `kind`, with upstream's messages when missing.
pub fn gvk_of(obj: &Value) -> Result<GroupVersionKind, MetaError> {
    let kind = kind(obj).filter(|k| !k.is_empty());
    let Some(kind) = kind else {
        return Err(MetaError::MissingKind(obj.to_string()));
    };
    let Some(api_version) = api_version(obj).filter(|v| !v.is_empty()) else {
        return Err(MetaError::MissingApiVersion(obj.to_string()));
    };
    Ok(GroupVersionKind::from_api_version_kind(api_version, kind)?)
}

fn top_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, MetaError> {
    obj.as_object_mut().ok_or(MetaError::NotAnObject)
}

pub fn set_api_version(obj: &mut Value, api_version: &str) -> Result<(), MetaError> {
    top_mut(obj)?.insert("apiVersion".into(), Value::from(api_version));
    Ok(())
}

pub fn set_kind(obj: &mut Value, kind: &str) -> Result<(), MetaError> {
    top_mut(obj)?.insert("kind".into(), Value::from(kind));
    Ok(())
}

/// Sets both `apiVersion` and `kind`.
pub fn set_gvk(obj: &mut Value, gvk: &GroupVersionKind) -> Result<(), MetaError> {
    let top = top_mut(obj)?;
    top.insert("apiVersion".into(), Value::from(gvk.api_version()));
    top.insert("kind".into(), Value::from(gvk.kind.as_str()));
    Ok(())
}

// ---- metadata

/// The `metadata` object, if present.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The `metadata` object, created when absent or null.
pub fn metadata_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, MetaError> {
    let top = top_mut(obj)?;
    let entry = top
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if entry.is_null() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().ok_or(MetaError::MetadataNotAnObject)
}

fn meta_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get(key).and_then(Value::as_str)
}

fn meta_i64(obj: &Value, key: &str) -> Option<i64> {
    metadata(obj)?.get(key).and_then(Value::as_i64)
}

/// Sets a string field; an empty value removes it (ObjectMeta omits empty strings).
fn set_meta_str(obj: &mut Value, key: &str, value: &str) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    if value.is_empty() {
        meta.remove(key);
    } else {
        meta.insert(key.to_string(), Value::from(value));
    }
    Ok(())
}

pub fn name(obj: &Value) -> Option<&str> {
    meta_str(obj, "name")
}
pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace")
}
pub fn generate_name(obj: &Value) -> Option<&str> {
    meta_str(obj, "generateName")
}
pub fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid")
}
pub fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}
pub fn creation_timestamp(obj: &Value) -> Option<&str> {
    meta_str(obj, "creationTimestamp")
}
pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    meta_str(obj, "deletionTimestamp")
}
/// True when `metadata.deletionTimestamp` is set (the object is being deleted).
pub fn is_being_deleted(obj: &Value) -> bool {
    deletion_timestamp(obj).is_some_and(|t| !t.is_empty())
}
pub fn generation(obj: &Value) -> Option<i64> {
    meta_i64(obj, "generation")
}
pub fn deletion_grace_period_seconds(obj: &Value) -> Option<i64> {
    meta_i64(obj, "deletionGracePeriodSeconds")
}

pub fn set_name(obj: &mut Value, v: &str) -> Result<(), MetaError> {
    set_meta_str(obj, "name", v)
}
pub fn set_namespace(obj: &mut Value, v: &str) -> Result<(), MetaError> {
    set_meta_str(obj, "namespace", v)
}
pub fn set_generate_name(obj: &mut Value, v: &str) -> Result<(), MetaError> {
    set_meta_str(obj, "generateName", v)
}
pub fn set_uid(obj: &mut Value, v: &str) -> Result<(), MetaError> {
    set_meta_str(obj, "uid", v)
}
pub fn set_resource_version(obj: &mut Value, v: &str) -> Result<(), MetaError> {
    set_meta_str(obj, "resourceVersion", v)
}
pub fn set_creation_timestamp(obj: &mut Value, v: &str) -> Result<(), MetaError> {
    set_meta_str(obj, "creationTimestamp", v)
}
/// Sets (`Some`) or clears (`None`) `metadata.deletionTimestamp`.
pub fn set_deletion_timestamp(obj: &mut Value, v: Option<&str>) -> Result<(), MetaError> {
    set_meta_str(obj, "deletionTimestamp", v.unwrap_or(""))
}
pub fn set_generation(obj: &mut Value, generation: i64) -> Result<(), MetaError> {
    metadata_mut(obj)?.insert("generation".into(), Value::from(generation));
    Ok(())
}
pub fn set_deletion_grace_period_seconds(obj: &mut Value, v: Option<i64>) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    match v {
        Some(s) => meta.insert("deletionGracePeriodSeconds".into(), Value::from(s)),
        None => meta.remove("deletionGracePeriodSeconds"),
    };
    Ok(())
}

// ---- labels and annotations

fn string_map(obj: &Value, key: &str) -> BTreeMap<String, String> {
    metadata(obj)
        .and_then(|m| m.get(key))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn set_string_map(
    obj: &mut Value,
    key: &str,
    map: &BTreeMap<String, String>,
) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    if map.is_empty() {
        meta.remove(key);
    } else {
        let m: Map<String, Value> = map
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        meta.insert(key.to_string(), Value::Object(m));
    }
    Ok(())
}

fn set_map_entry(obj: &mut Value, key: &str, k: &str, v: Option<&str>) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    match v {
        Some(v) => {
            let entry = meta.entry(key).or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            if let Some(m) = entry.as_object_mut() {
                m.insert(k.to_string(), Value::from(v));
            }
        }
        None => {
            let now_empty = match meta.get_mut(key).and_then(Value::as_object_mut) {
                Some(m) => {
                    m.remove(k);
                    m.is_empty()
                }
                None => false,
            };
            if now_empty {
                meta.remove(key);
            }
        }
    }
    Ok(())
}

/// `metadata.labels` (non-string values are skipped).
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    string_map(obj, "labels")
}
/// The raw `metadata.labels` value, for [`crate::selector::LabelSelector::matches_json`].
pub fn labels_value(obj: &Value) -> Option<&Value> {
    metadata(obj)?.get("labels")
}
pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("labels")?.get(key)?.as_str()
}
/// Replaces `metadata.labels` (an empty map removes the field).
pub fn set_labels(obj: &mut Value, labels: &BTreeMap<String, String>) -> Result<(), MetaError> {
    set_string_map(obj, "labels", labels)
}
/// Sets (`Some`) or removes (`None`) one label.
pub fn set_label(obj: &mut Value, key: &str, value: Option<&str>) -> Result<(), MetaError> {
    set_map_entry(obj, "labels", key, value)
}

/// `metadata.annotations` (non-string values are skipped).
pub fn annotations(obj: &Value) -> BTreeMap<String, String> {
    string_map(obj, "annotations")
}
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("annotations")?.get(key)?.as_str()
}
/// Replaces `metadata.annotations` (an empty map removes the field).
pub fn set_annotations(
    obj: &mut Value,
    annotations: &BTreeMap<String, String>,
) -> Result<(), MetaError> {
    set_string_map(obj, "annotations", annotations)
}
/// Sets (`Some`) or removes (`None`) one annotation.
pub fn set_annotation(obj: &mut Value, key: &str, value: Option<&str>) -> Result<(), MetaError> {
    set_map_entry(obj, "annotations", key, value)
}

// ---- finalizers

/// `metadata.finalizers` (non-string entries are skipped).
pub fn finalizers(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(finalizer)))
}

/// Replaces `metadata.finalizers` (empty removes the field).
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        let list = finalizers.iter().map(|f| Value::from(f.as_str())).collect();
        meta.insert("finalizers".into(), Value::Array(list));
    }
    Ok(())
}

/// Appends a finalizer unless present; returns whether the object changed.
pub fn add_finalizer(obj: &mut Value, finalizer: &str) -> Result<bool, MetaError> {
    let mut list = finalizers(obj);
    if list.iter().any(|f| f == finalizer) {
        return Ok(false);
    }
    list.push(finalizer.to_string());
    set_finalizers(obj, &list)?;
    Ok(true)
}

/// Removes every occurrence of a finalizer; returns whether the object changed.
pub fn remove_finalizer(obj: &mut Value, finalizer: &str) -> Result<bool, MetaError> {
    if !has_finalizer(obj, finalizer) {
        return Ok(false);
    }
    let list: Vec<String> = finalizers(obj)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    set_finalizers(obj, &list)?;
    Ok(true)
}

// ---- owner references

/// `metadata.ownerReferences` (malformed entries are skipped).
pub fn owner_references(obj: &Value) -> Vec<OwnerReference> {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| serde_json::from_value(v.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The owner reference with `controller: true`, if any.
pub fn controller_of(obj: &Value) -> Option<OwnerReference> {
    owner_references(obj)
        .into_iter()
        .find(OwnerReference::is_controller)
}

/// Replaces `metadata.ownerReferences` (empty removes the field).
pub fn set_owner_references(obj: &mut Value, refs: &[OwnerReference]) -> Result<(), MetaError> {
    let meta = metadata_mut(obj)?;
    if refs.is_empty() {
        meta.remove("ownerReferences");
    } else {
        let list = refs
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect();
        meta.insert("ownerReferences".into(), Value::Array(list));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
