//! The scale subresource: a `Scale` view of workloads and how a written Scale changes them.

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use k1s_apimachinery::selector::LabelSelector;
use serde_json::{Value, json};

/// The metadata a Scale carries over from its object (custom resources' Scales too).
pub fn scale_metadata(obj: &Value) -> serde_json::Map<String, Value> {
    let md = obj.get("metadata");
    [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ]
    .into_iter()
    .filter_map(|k| Some((k.to_string(), md?.get(k)?.clone())))
    .collect()
}

/// The autoscaling/v1 Scale of an object with `spec.replicas`.
pub fn to_scale(info: &ResourceInfo, obj: &Value) -> Value {
    let metadata = scale_metadata(obj);
    let selector = match obj.pointer("/spec/selector") {
        // ReplicationControllers have a plain label map; the apps kinds a LabelSelector.
        Some(Value::Object(m)) if info.resource == "replicationcontrollers" => m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(","),
        Some(sel) => LabelSelector::from_json(sel)
            .map(|s| s.to_string())
            .unwrap_or_default(),
        None => String::new(),
    };
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": { "replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0)) },
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector,
        }
    })
}

/// The object after a Scale was written to it: only `spec.replicas` changes.
pub fn apply_scale(obj: &Value, scale: &Value) -> Result<Value, ApiError> {
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::invalid(
            "Scale",
            "autoscaling",
            scale
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            vec![k1s_apimachinery::FieldError::invalid(
                "spec.replicas",
                replicas,
                "must be greater than or equal to 0",
            )],
        ));
    }
    let mut out = obj.clone();
    out["spec"]["replicas"] = json!(replicas);
    // The Scale's resourceVersion is the object's: it is a precondition on the write.
    match scale.pointer("/metadata/resourceVersion") {
        Some(rv) => out["metadata"]["resourceVersion"] = rv.clone(),
        None => {
            if let Some(m) = out.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
        }
    }
    Ok(out)
}
