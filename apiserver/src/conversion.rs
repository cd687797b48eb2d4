//! Conversion between versions of one kind stored once (autoscaling v1 <-> v2 HPAs).
//!
//! Objects are stored in the preferred version of their group; reading through another served
//! version converts them here, and writes convert back before storing.

use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::{Value, json};

/// Converts a stored object to the version `info` serves (in place).
pub fn to_version(info: &ResourceInfo, obj: &mut Value) {
    let target = info.api_version();
    if obj.get("apiVersion").and_then(Value::as_str) == Some(target.as_str()) {
        return;
    }
    if info.group == "autoscaling" && info.resource == "horizontalpodautoscalers" {
        match info.version {
            "v1" => hpa_v2_to_v1(obj),
            _ => hpa_v1_to_v2(obj),
        }
    }
    obj["apiVersion"] = Value::String(target);
}

/// Converts an incoming object to the storage version of its group (in place).
pub fn to_storage(info: &ResourceInfo, obj: &mut Value) {
    if info.group == "autoscaling"
        && info.resource == "horizontalpodautoscalers"
        && info.version == "v1"
    {
        hpa_v1_to_v2(obj);
        obj["apiVersion"] = Value::String("autoscaling/v2".into());
    }
}

fn hpa_v1_to_v2(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(target) = spec.remove("targetCPUUtilizationPercentage") {
        spec.insert(
            "metrics".into(),
            json!([{ "type": "Resource", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": target } } }]),
        );
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut)
        && let Some(current) = status.remove("currentCPUUtilizationPercentage")
    {
        status.insert(
            "currentMetrics".into(),
            json!([{ "type": "Resource", "resource": { "name": "cpu",
                "current": { "averageUtilization": current } } }]),
        );
    }
}

fn hpa_v2_to_v1(obj: &mut Value) {
    let cpu_target = |metrics: &Value| {
        metrics.as_array().and_then(|m| {
            m.iter().find_map(|x| {
                (x.pointer("/resource/name") == Some(&json!("cpu")))
                    .then(|| x.pointer("/resource/target/averageUtilization").cloned())
                    .flatten()
            })
        })
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(metrics) = spec.remove("metrics")
            && let Some(t) = cpu_target(&metrics)
        {
            spec.insert("targetCPUUtilizationPercentage".into(), t);
        }
        spec.remove("behavior");
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        if let Some(current) = status.remove("currentMetrics") {
            let cpu = current.as_array().and_then(|m| {
                m.iter()
                    .find_map(|x| x.pointer("/resource/current/averageUtilization").cloned())
            });
            if let Some(c) = cpu {
                status.insert("currentCPUUtilizationPercentage".into(), c);
            }
        }
        status.remove("conditions");
    }
}
