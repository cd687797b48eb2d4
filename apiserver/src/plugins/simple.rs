//! The small pod plugins: Priority (priorityClassName -> priority and preemptionPolicy; one
//! global default PriorityClass) and DefaultTolerationSeconds (tolerate not-ready and
//! unreachable nodes for 300 seconds).

use k1s_apimachinery::ApiError;
use serde_json::{Map, Value, json};

use super::{AdmissionRequest, Operation};
use crate::registry::Target;

/// The classes upstream's API server creates at start-up: (name, value).
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// (name, value, preemptionPolicy) of a PriorityClass object.
fn class_fields(pc: &Value) -> (String, i64, String) {
    (
        super::str_at(pc, &["metadata", "name"])
            .unwrap_or("")
            .into(),
        pc.get("value").and_then(Value::as_i64).unwrap_or(0),
        pc.get("preemptionPolicy")
            .and_then(Value::as_str)
            .unwrap_or("PreemptLowerPriority")
            .into(),
    )
}

async fn priority_classes(req: &AdmissionRequest<'_>) -> Result<Vec<Value>, ApiError> {
    let info = super::info("scheduling.k8s.io", "v1", "priorityclasses")?;
    super::list_all(req.registry, info, None).await
}

fn global_default(classes: &[Value]) -> Option<(String, i64, String)> {
    classes
        .iter()
        .filter(|pc| pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .map(class_fields)
        .min_by_key(|(_, value, _)| *value)
}

pub async fn priority(
    req: &AdmissionRequest<'_>,
    pod: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if req.operation == Operation::Update && req.is("", "pods") {
        keep_priority(pod, old);
        return Ok(());
    }
    if !req.is_pod_create() {
        return Ok(());
    }
    let requested = super::str_at(pod, &["spec", "priorityClassName"])
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let (class_name, value, policy) = match requested {
        None => global_default(&priority_classes(req).await?)
            .unwrap_or_else(|| (String::new(), 0, "PreemptLowerPriority".into())),
        Some(name) => {
            let info = super::info("scheduling.k8s.io", "v1", "priorityclasses")?;
            let target = Target {
                info,
                namespace: None,
            };
            match req.registry.get(target, &name).await {
                Ok(pc) => class_fields(&pc),
                Err(e) if e.is_not_found() => {
                    match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
                        Some((n, v)) => ((*n).to_string(), *v, "PreemptLowerPriority".into()),
                        None => {
                            return Err(req.forbidden(
                                Some(pod),
                                format!("no PriorityClass with name {name} was found"),
                            ));
                        }
                    }
                }
                Err(e) => {
                    return Err(ApiError::internal(format!(
                        "failed to get PriorityClass with name {name}: {}",
                        e.message
                    )));
                }
            }
        }
    };
    let given_priority = pod.pointer("/spec/priority").and_then(Value::as_i64);
    if let Some(p) = given_priority.filter(|p| *p != value) {
        return Err(req.forbidden(
            Some(pod),
            format!(
                "the integer value of priority ({p}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
            ),
        ));
    }
    let given_policy = super::str_at(pod, &["spec", "preemptionPolicy"]).map(str::to_string);
    if let Some(p) = given_policy.filter(|p| *p != policy) {
        return Err(req.forbidden(
            Some(pod),
            format!(
                "the string value of PreemptionPolicy ({p}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            ),
        ));
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if !class_name.is_empty() {
            spec.insert("priorityClassName".into(), Value::String(class_name));
        }
        spec.insert("priority".into(), json!(value));
        spec.insert("preemptionPolicy".into(), Value::String(policy));
    }
    Ok(())
}

/// A pod update that leaves out the priority and preemption policy set on create keeps them
/// (upstream's admitPod on update), rather than failing the spec's immutability check.
fn keep_priority(pod: &mut Value, old: Option<&Value>) {
    let Some(old_spec) = old.and_then(|o| o.get("spec")) else {
        return;
    };
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for field in ["priority", "preemptionPolicy"] {
        let missing = spec.get(field).is_none_or(Value::is_null);
        match old_spec.get(field).filter(|v| !v.is_null()) {
            Some(v) if missing => {
                spec.insert(field.into(), v.clone());
            }
            _ => {}
        }
    }
}

/// Only one PriorityClass may be the global default: upstream's validatePriorityClass compares
/// with the default pods would get (the lowest-valued of several after a race), so a create
/// is refused even under that class's own name, and an update only when it marks another class.
pub async fn validate_priority_class(
    req: &AdmissionRequest<'_>,
    pc: &Value,
) -> Result<(), ApiError> {
    if !req.is("scheduling.k8s.io", "priorityclasses")
        || req.operation == Operation::Delete
        || pc.get("globalDefault").and_then(Value::as_bool) != Some(true)
    {
        return Ok(());
    }
    let Some((current, _, _)) = global_default(&priority_classes(req).await?) else {
        return Ok(());
    };
    let own = super::str_at(pc, &["metadata", "name"]).unwrap_or(req.name);
    if req.operation == Operation::Create || current != own {
        return Err(req.forbidden(
            Some(pc),
            format!(
                "PriorityClass {current} is already marked as default. Only one default can exist"
            ),
        ));
    }
    Ok(())
}

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

pub fn default_toleration_seconds(req: &AdmissionRequest<'_>, pod: &mut Value) {
    if !req.is_pod_create() {
        return;
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerations = spec
        .entry("tolerations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !tolerations.is_array() {
        *tolerations = Value::Array(Vec::new());
    }
    let Some(list) = tolerations.as_array_mut() else {
        return;
    };
    let tolerates = |list: &[Value], key: &str| {
        list.iter().any(|t| {
            let k = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    for key in [NOT_READY, UNREACHABLE] {
        if !tolerates(list, key) {
            let mut t = Map::new();
            t.insert("key".into(), json!(key));
            t.insert("operator".into(), json!("Exists"));
            t.insert("effect".into(), json!("NoExecute"));
            t.insert(
                "tolerationSeconds".into(),
                json!(DEFAULT_TOLERATION_SECONDS),
            );
            list.push(Value::Object(t));
        }
    }
}
