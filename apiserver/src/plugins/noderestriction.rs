//! Upstream's NodeRestriction admission: a node's credentials (`system:node:<name>`) may write
//! only its own Node and Lease (never its taints after registration, nor `node-restriction.kubernetes.io/`
//! labels), the status of pods bound to it, deletions and evictions of pods bound to it, and
//! mirror pods; the Node authorizer has already limited what it may reach at all.

use k1s_apimachinery::ApiError;
use serde_json::Value;

use super::{AdmissionRequest, Operation, str_at};
use crate::auth::rbac::node_name;

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const RESTRICTED_LABEL_PREFIX: &str = "node-restriction.kubernetes.io/";

/// Refuses what a node may not write; everyone else passes.
pub fn admit(req: &AdmissionRequest<'_>, obj: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let Some(node) = node_name(req.user) else {
        return Ok(());
    };
    let sub = req.subresource.unwrap_or("");
    match (req.info.group, req.info.resource) {
        ("", "pods") => admit_pod(req, node, sub, obj, old),
        ("", "nodes") => admit_node(req, node, obj, old),
        ("coordination.k8s.io", "leases") if req.namespace() == "kube-node-lease" => {
            let name = if req.name.is_empty() {
                str_at(obj, &["metadata", "name"]).unwrap_or("")
            } else {
                req.name
            };
            if name == node {
                Ok(())
            } else {
                Err(req.forbidden(
                    Some(obj),
                    "can only access node lease with the same name as the requesting node",
                ))
            }
        }
        _ => Ok(()),
    }
}

fn bound_to(pod: Option<&Value>) -> &str {
    pod.and_then(|p| str_at(p, &["spec", "nodeName"]))
        .unwrap_or("")
}

fn admit_pod(
    req: &AdmissionRequest<'_>,
    node: &str,
    sub: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let refuse = |msg: String| Err(req.forbidden(Some(obj).filter(|o| !o.is_null()).or(old), msg));
    match (sub, req.operation) {
        ("", Operation::Create) => {
            let mirror = obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(MIRROR_ANNOTATION))
                .is_some();
            if !mirror {
                return refuse(format!(
                    "pod does not have \"{MIRROR_ANNOTATION}\" annotation, node \"{node}\" can only create mirror pods"
                ));
            }
            if bound_to(Some(obj)) != node {
                return refuse(format!(
                    "node \"{node}\" can only create pods with spec.nodeName set to itself"
                ));
            }
            Ok(())
        }
        ("", Operation::Delete) => {
            if bound_to(old) != node {
                return refuse(format!(
                    "node \"{node}\" can only delete pods with spec.nodeName set to itself"
                ));
            }
            Ok(())
        }
        ("", op) => refuse(format!(
            "unexpected operation {}, node \"{node}\" can only create and delete mirror pods",
            op_name(op)
        )),
        ("status", Operation::Update) => {
            if bound_to(old) != node {
                return refuse(format!(
                    "node \"{node}\" can only update pod status for pods with spec.nodeName set to itself"
                ));
            }
            Ok(())
        }
        ("eviction", _) => {
            if bound_to(old).is_empty() || bound_to(old) == node {
                Ok(())
            } else {
                refuse(format!(
                    "node \"{node}\" can only evict pods with spec.nodeName set to itself"
                ))
            }
        }
        (other, _) => refuse(format!("unexpected subresource {other}")),
    }
}

fn op_name(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

fn admit_node(
    req: &AdmissionRequest<'_>,
    node: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let refuse = |msg: String| Err(req.forbidden(Some(obj).filter(|o| !o.is_null()).or(old), msg));
    let requested = if req.name.is_empty() {
        str_at(obj, &["metadata", "name"]).unwrap_or("")
    } else {
        req.name
    };
    if requested != node {
        return refuse(format!(
            "node \"{node}\" is not allowed to modify node \"{requested}\""
        ));
    }
    let labels = |o: Option<&Value>| -> Vec<(String, String)> {
        o.and_then(|o| o.pointer("/metadata/labels"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| restricted_label(k))
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    match req.operation {
        Operation::Create => {
            if let Some((k, _)) = labels(Some(obj)).first() {
                return refuse(format!(
                    "node \"{node}\" is not allowed to set the following labels: {k}"
                ));
            }
        }
        Operation::Update => {
            let taints = |o: Option<&Value>| {
                o.and_then(|o| o.pointer("/spec/taints"))
                    .cloned()
                    .filter(|t| !t.as_array().is_some_and(Vec::is_empty))
            };
            if req.subresource.is_none_or(str::is_empty) && taints(Some(obj)) != taints(old) {
                return refuse(format!("node \"{node}\" is not allowed to modify taints"));
            }
            if labels(Some(obj)) != labels(old) {
                return refuse(format!(
                    "node \"{node}\" is not allowed to modify labels with the prefix {RESTRICTED_LABEL_PREFIX}"
                ));
            }
        }
        Operation::Delete => {}
    }
    Ok(())
}

fn restricted_label(key: &str) -> bool {
    let prefix = key.split_once('/').map(|(p, _)| p).unwrap_or("");
    key.starts_with(RESTRICTED_LABEL_PREFIX) || prefix.ends_with(".node-restriction.kubernetes.io")
}
