//! Conversion between versions of one kind stored once: autoscaling v1 <-> v2 HPAs, and core/v1
//! Events <-> events.k8s.io/v1 Events (one object served through both groups, as upstream).
//!
//! Objects are stored in one version (the preferred version of their group; Events as core/v1);
//! reading through another served version converts them here, and writes convert back before
//! storing. Custom resources change only their apiVersion, unless their CRD names a
//! conversion webhook (`apiextensions::webhook_converter`).

mod hpa;

use std::borrow::Cow;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

/// Converts a stored object to the version `info` serves (in place). Only a custom resource's
/// conversion webhook can fail.
pub fn to_version(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if k1s_apimachinery::catalog::is_custom(info) {
        return custom_to_version(info, std::slice::from_mut(obj));
    }
    let target = info.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(target.as_str()) {
        return Ok(());
    }
    if info.group == "autoscaling" && info.resource == "horizontalpodautoscalers" {
        match info.version {
            "v1" => hpa::v2_to_v1(obj),
            _ => hpa::v1_to_v2(obj),
        }
    }
    if is_events_group(info) {
        rename_fields(obj, EVENT_FIELDS, false);
        // events.k8s.io omits empty reporting fields (omitempty), core/v1 shows them.
        if let Some(o) = obj.as_object_mut() {
            for k in ["reportingController", "reportingInstance"] {
                if o.get(k).and_then(Value::as_str) == Some("") {
                    o.remove(k);
                }
            }
        }
    }
    obj["apiVersion"] = Value::String(target);
    Ok(())
}

/// [`to_version`] for many objects at once: a conversion webhook gets them in one call.
pub fn all_to_version(info: &ResourceInfo, objs: &mut [Value]) -> Result<(), ApiError> {
    if k1s_apimachinery::catalog::is_custom(info) {
        return custom_to_version(info, objs);
    }
    objs.iter_mut().try_for_each(|o| to_version(info, o))
}

/// Custom resources in the version `info` serves, then defaulted for it (as upstream defaults
/// on read, after conversion). Without a webhook (`conversion: None`) only apiVersion changes.
fn custom_to_version(info: &ResourceInfo, objs: &mut [Value]) -> Result<(), ApiError> {
    let target = info.api_version();
    let served = crate::apiextensions::lookup(info);
    match served.as_ref().and_then(|s| s.conversion.as_ref()) {
        Some(hook) => hook.convert(objs, &target).map_err(ApiError::internal)?,
        None => {
            for obj in objs.iter_mut() {
                obj["apiVersion"] = Value::String(target.clone());
            }
        }
    }
    if let Some(served) = served {
        for obj in objs.iter_mut() {
            crate::registry::Strategy::default(served.strategy, obj);
        }
    }
    Ok(())
}

/// The group and resource whose key space holds `info`'s objects: events.k8s.io Events live
/// with core Events (upstream stores both as `events`).
pub fn storage_group_resource(info: &ResourceInfo) -> (&'static str, &'static str) {
    if is_events_group(info) {
        ("", "events")
    } else {
        (info.group, info.resource)
    }
}

fn is_events_group(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.resource == "events"
}

/// core/v1 Event field -> events.k8s.io/v1 Event field (upstream's conversion; the other fields
/// keep their names).
const EVENT_FIELDS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Renames fields core -> events.k8s.io (`reverse` false) or back. Idempotent.
fn rename_fields(obj: &mut Value, fields: &[(&str, &str)], reverse: bool) {
    let Some(o) = obj.as_object_mut() else { return };
    for (core, events) in fields {
        let (from, to) = if reverse {
            (events, core)
        } else {
            (core, events)
        };
        if let Some(v) = o.remove(*from) {
            o.insert(to.to_string(), v);
        }
    }
}

/// Whether the registry works on `info`'s objects in the version of the request, converting
/// them only to encode them ([`for_storage`]): custom resources, whose schema and strategy are
/// per version (upstream validates them in the request's version too). Built-in kinds with
/// several versions are worked on in their storage version ([`to_storage`]).
pub fn works_in_request_version(info: &ResourceInfo) -> bool {
    k1s_apimachinery::catalog::is_custom(info)
}

/// Converts an incoming object to the storage version of its group (in place). Custom
/// resources stay as they are (see [`works_in_request_version`]).
pub fn to_storage(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if works_in_request_version(info) {
        return Ok(());
    }
    if info.group == "autoscaling" && info.resource == "horizontalpodautoscalers" {
        // An object already converted (the registry converts what a handler passes on) is
        // left alone: the conversion reads and removes the annotations.
        if info.version == "v1" && obj["apiVersion"] != "autoscaling/v2" {
            hpa::v1_to_v2(obj);
            obj["apiVersion"] = Value::String("autoscaling/v2".into());
        } else {
            // Stored objects never carry autoscaling/v1's round-trip annotations.
            hpa::drop_round_trip_annotations(obj);
        }
    }
    if is_events_group(info) {
        rename_fields(obj, EVENT_FIELDS, true);
        obj["apiVersion"] = Value::String("v1".into());
    }
    Ok(())
}

/// The object as it is stored: a custom resource in its CRD's storage version (its apiVersion
/// rewritten, or converted by the CRD's webhook); any other object as it is.
pub fn for_storage<'a>(info: &ResourceInfo, obj: &'a Value) -> Result<Cow<'a, Value>, ApiError> {
    if !works_in_request_version(info) {
        return Ok(Cow::Borrowed(obj));
    }
    let Some(served) = crate::apiextensions::lookup(info) else {
        return Ok(Cow::Borrowed(obj));
    };
    let storage = served.storage_api_version();
    if obj["apiVersion"] == storage.as_str() {
        return Ok(Cow::Borrowed(obj));
    }
    let mut out = obj.clone();
    match &served.conversion {
        Some(hook) => hook
            .convert(std::slice::from_mut(&mut out), &storage)
            .map_err(ApiError::internal)?,
        None => out["apiVersion"] = Value::String(storage),
    }
    Ok(Cow::Owned(out))
}
