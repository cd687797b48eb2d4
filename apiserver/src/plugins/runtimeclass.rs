//! RuntimeClass: a new pod that names a RuntimeClass must find it; it gets the class's pod
//! overhead and scheduling (node selector and tolerations); a pod overhead the class does not
//! define is refused.

use k1s_apimachinery::ApiError;
use k1s_apimachinery::quantity::Quantity;
use serde_json::Value;

use super::AdmissionRequest;
use crate::registry::Target;

/// The pod's RuntimeClass, when it names one; Forbidden when that class does not exist.
async fn runtime_class(req: &AdmissionRequest<'_>, pod: &Value) -> Result<Option<Value>, ApiError> {
    let Some(name) = super::str_at(pod, &["spec", "runtimeClassName"]) else {
        return Ok(None);
    };
    let info = super::info("node.k8s.io", "v1", "runtimeclasses")?;
    let target = Target {
        info,
        namespace: None,
    };
    match req.registry.get(target, name).await {
        Ok(rc) => Ok(Some(rc)),
        Err(e) if e.code == 404 => Err(req.forbidden(
            Some(pod),
            format!(
                "pod rejected: RuntimeClass {} not found",
                k1s_apimachinery::gofmt::quote(name)
            ),
        )),
        Err(e) => Err(e),
    }
}

/// Semantic equality of two resource lists (quantities compared by value; absent = empty).
fn same_resources(a: Option<&Value>, b: Option<&Value>) -> bool {
    let parse = |v: Option<&Value>| -> Option<Vec<(String, Quantity)>> {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return Some(Vec::new());
        };
        let mut out: Vec<(String, Quantity)> = v
            .as_object()?
            .iter()
            .map(|(k, q)| Some((k.clone(), Quantity::parse(q.as_str()?)?)))
            .collect::<Option<_>>()?;
        out.sort_by(|x, y| x.0.cmp(&y.0));
        Some(out)
    };
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

const OVERHEAD_MISMATCH: &str =
    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

/// Mutating half: overhead and scheduling from the class.
pub async fn admit(req: &AdmissionRequest<'_>, pod: &mut Value) -> Result<(), ApiError> {
    if !req.is_pod_create() {
        return Ok(());
    }
    let Some(rc) = runtime_class(req, pod).await? else {
        return Ok(());
    };
    if let Some(overhead) = rc.get("overhead").filter(|o| o.is_object()) {
        let fixed = overhead.get("podFixed").filter(|f| !f.is_null()).cloned();
        let current = pod.pointer("/spec/overhead").filter(|o| !o.is_null());
        if current.is_some() && !same_resources(fixed.as_ref(), current) {
            return Err(req.forbidden(Some(pod), OVERHEAD_MISMATCH));
        }
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            match fixed {
                Some(f) => spec.insert("overhead".into(), f),
                None => spec.remove("overhead"),
            };
        }
    }
    let Some(scheduling) = rc.get("scheduling").filter(|s| s.is_object()) else {
        return Ok(());
    };
    let mut selector = pod
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(wanted) = scheduling.get("nodeSelector").and_then(Value::as_object) {
        for (key, value) in wanted {
            let class_value = value.as_str().unwrap_or_default();
            if let Some(pod_value) = selector.get(key).and_then(Value::as_str)
                && pod_value != class_value
            {
                return Err(req.forbidden(
                    Some(pod),
                    format!(
                        "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {class_value}; \
                         pod.spec.nodeSelector[{key}] = {pod_value}"
                    ),
                ));
            }
            selector.insert(key.clone(), value.clone());
        }
    }
    let own: Vec<Value> = super::containers(pod, "tolerations").to_vec();
    let extra = scheduling
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let merged = merge_tolerations(own.into_iter().chain(extra).collect());
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if !selector.is_empty() {
            spec.insert("nodeSelector".into(), Value::Object(selector));
        }
        if merged.is_empty() {
            spec.remove("tolerations");
        } else {
            spec.insert("tolerations".into(), Value::Array(merged));
        }
    }
    Ok(())
}

/// Validating half: the pod's overhead is exactly its class's, or absent without one.
pub async fn validate(req: &AdmissionRequest<'_>, pod: &Value) -> Result<(), ApiError> {
    if !req.is_pod_create() {
        return Ok(());
    }
    let rc = runtime_class(req, pod).await?;
    let overhead = pod.pointer("/spec/overhead").filter(|o| !o.is_null());
    match rc
        .as_ref()
        .and_then(|rc| rc.get("overhead"))
        .filter(|o| o.is_object())
    {
        Some(defined) => {
            if !same_resources(defined.get("podFixed"), overhead) {
                return Err(req.forbidden(Some(pod), OVERHEAD_MISMATCH));
            }
        }
        None => {
            if overhead.is_some() {
                return Err(req.forbidden(
                    Some(pod),
                    "pod rejected: Pod Overhead set without corresponding RuntimeClass defined \
                     Overhead",
                ));
            }
        }
    }
    Ok(())
}

fn field<'v>(t: &'v Value, k: &str) -> &'v str {
    t.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's isSuperset: whether toleration `ss` tolerates everything `t` does.
fn is_superset(ss: &Value, t: &Value) -> bool {
    if ss == t {
        return true;
    }
    let wildcard_key = field(ss, "key").is_empty() && field(ss, "operator") == "Exists";
    if field(t, "key") != field(ss, "key") && !wildcard_key {
        return false;
    }
    if field(t, "effect") != field(ss, "effect") && !field(ss, "effect").is_empty() {
        return false;
    }
    if field(ss, "effect") == "NoExecute"
        && let Some(limit) = ss.get("tolerationSeconds").and_then(Value::as_i64)
    {
        match t.get("tolerationSeconds").and_then(Value::as_i64) {
            Some(s) if s <= limit => {}
            _ => return false,
        }
    }
    match field(ss, "operator") {
        "Equal" | "" => {
            matches!(field(t, "operator"), "Equal" | "") && field(t, "value") == field(ss, "value")
        }
        "Exists" => true,
        _ => false,
    }
}

/// Upstream's MergeTolerations: the pod's and the class's tolerations without the ones another
/// already covers (of two equal ones, the first stays).
fn merge_tolerations(all: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        if merged.iter().any(|m| is_superset(m, t)) {
            continue;
        }
        if all[i + 1..].iter().any(|t2| t2 != t && is_superset(t2, t)) {
            continue;
        }
        merged.push(t.clone());
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merged_tolerations_drop_the_ones_another_covers() {
        let merged = merge_tolerations(vec![
            json!({"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule"}),
            json!({"key": "a", "operator": "Exists"}),
            json!({"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}),
            json!({"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}),
            json!({"key": "c", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}),
            json!({"key": "c", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 50}),
        ]);
        assert_eq!(
            merged,
            vec![
                json!({"key": "a", "operator": "Exists"}),
                json!({"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}),
                json!({"key": "c", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 50}),
            ]
        );
    }

    #[test]
    fn resource_lists_compare_by_quantity() {
        assert!(same_resources(
            Some(&json!({"cpu": "0.1"})),
            Some(&json!({"cpu": "100m"}))
        ));
        assert!(!same_resources(Some(&json!({"cpu": "1"})), None));
        assert!(same_resources(None, Some(&Value::Null)));
    }
}
