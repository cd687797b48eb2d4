//! TaintNodesByCondition: a new Node starts with the `node.kubernetes.io/not-ready:NoSchedule`
//! taint, so nothing is scheduled onto it before the node lifecycle controller has seen it
//! Ready (and removed the taint).

use serde_json::{Value, json};

use super::{AdmissionRequest, Operation};

const NOT_READY: &str = "node.kubernetes.io/not-ready";

pub fn taint_new_node(req: &AdmissionRequest<'_>, node: &mut Value) {
    if req.operation != Operation::Create || !req.is("", "nodes") {
        return;
    }
    let Some(spec) = node
        .as_object_mut()
        .map(|o| o.entry("spec").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if !taints.is_array() {
        *taints = json!([]);
    }
    let Some(list) = taints.as_array_mut() else {
        return;
    };
    // Upstream's MatchTaint: the same key and effect.
    let present = list
        .iter()
        .any(|t| t["key"] == NOT_READY && t["effect"] == "NoSchedule");
    if !present {
        list.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
    }
}
