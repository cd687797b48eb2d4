//! Bootstrap-policy reconciliation (upstream `pkg/registry/rbac/reconciliation`, union mode):
//! add missing labels, annotations, rules, aggregation selectors and subjects to what exists,
//! keep everything users added, and leave objects annotated `autoupdate: "false"` alone.

use serde_json::{Map, Value};

use super::cache::{RoleRef, Subject};
use super::escalation::covers;
use super::rule::{PolicyRule, rules_of};

/// Annotation that turns reconciliation off for an object when `"false"`.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// What to do with one bootstrap object.
#[derive(Clone, Debug, PartialEq)]
pub enum ReconcileAction {
    /// It is as wanted (or a superset).
    None,
    /// It does not exist: create this.
    Create(Value),
    /// Update the existing object to this (it keeps the existing metadata, resourceVersion
    /// included).
    Update(Value),
    /// A binding whose roleRef differs (roleRef is immutable): delete it, then create this.
    Recreate(Value),
    /// It needs changes but is protected by `autoupdate: "false"`.
    Protected,
}

/// Upstream reconciliation of one bootstrap object against the stored one.
pub fn reconcile_action(existing: Option<&Value>, wanted: &Value) -> ReconcileAction {
    let Some(existing) = existing else {
        return ReconcileAction::Create(wanted.clone());
    };
    let protected = meta_map(existing, "annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str)
        == Some("false");
    let kind = wanted.get("kind").and_then(Value::as_str).unwrap_or("");
    let action = if kind.ends_with("Binding") {
        reconcile_binding(existing, wanted)
    } else {
        reconcile_role(existing, wanted)
    };
    match action {
        ReconcileAction::None => ReconcileAction::None,
        _ if protected => ReconcileAction::Protected,
        other => other,
    }
}

/// The object to write, if any: `Create`, `Update` and `Recreate` give it (for `Recreate`
/// the roleRef differs from the existing one: delete first); `None` / `Protected` give `None`.
pub fn reconcile(existing: Option<&Value>, wanted: &Value) -> Option<Value> {
    match reconcile_action(existing, wanted) {
        ReconcileAction::Create(v) | ReconcileAction::Update(v) | ReconcileAction::Recreate(v) => {
            Some(v)
        }
        ReconcileAction::None | ReconcileAction::Protected => None,
    }
}

fn meta_map<'a>(obj: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    obj.get("metadata")?.get(field)?.as_object()
}

/// Merges the wanted labels and annotations into `result` (existing values win); true when
/// anything was added.
fn merge_metadata(result: &mut Value, wanted: &Value) -> bool {
    let mut changed = false;
    for field in ["labels", "annotations"] {
        let Some(want) = meta_map(wanted, field) else {
            continue;
        };
        let Some(obj) = result.as_object_mut() else {
            return false;
        };
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            continue;
        };
        let target = meta
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()));
        if !target.is_object() {
            *target = Value::Object(Map::new());
        }
        let Some(target) = target.as_object_mut() else {
            continue;
        };
        for (k, v) in want {
            if !target.contains_key(k) {
                target.insert(k.clone(), v.clone());
                changed = true;
            }
        }
    }
    changed
}

fn array_mut<'a>(obj: &'a mut Value, field: &str) -> Option<&'a mut Vec<Value>> {
    let map = obj.as_object_mut()?;
    let slot = map.entry(field).or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
}

fn selectors(obj: &Value) -> Option<&[Value]> {
    obj.get("aggregationRule")
        .filter(|r| r.is_object())
        .map(|r| {
            r.get("clusterRoleSelectors")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        })
}

fn reconcile_role(existing: &Value, wanted: &Value) -> ReconcileAction {
    let mut result = existing.clone();
    let mut changed = merge_metadata(&mut result, wanted);

    let (_, missing): (bool, Vec<PolicyRule>) = covers(&rules_of(existing), &rules_of(wanted));
    if !missing.is_empty()
        && let Some(rules) = array_mut(&mut result, "rules")
    {
        rules.extend(missing.iter().map(PolicyRule::to_json));
        changed = true;
    }

    match (selectors(existing), selectors(wanted)) {
        (Some(_), None) => {
            if let Some(map) = result.as_object_mut() {
                map.remove("aggregationRule");
                changed = true;
            }
        }
        (have, Some(want)) => {
            let have = have.map(<[Value]>::to_vec).unwrap_or_default();
            let missing: Vec<&Value> = want.iter().filter(|s| !have.contains(s)).collect();
            if !missing.is_empty() {
                let mut all = have;
                all.extend(missing.into_iter().cloned());
                if let Some(map) = result.as_object_mut() {
                    map.insert(
                        "aggregationRule".into(),
                        serde_json::json!({ "clusterRoleSelectors": all }),
                    );
                    changed = true;
                }
            }
        }
        (None, None) => {}
    }

    if changed {
        ReconcileAction::Update(result)
    } else {
        ReconcileAction::None
    }
}

fn subjects(obj: &Value) -> Vec<(Subject, &Value)> {
    obj.get("subjects")
        .and_then(Value::as_array)
        .map(|s| s.iter().map(|v| (Subject::from_json(v), v)).collect())
        .unwrap_or_default()
}

fn reconcile_binding(existing: &Value, wanted: &Value) -> ReconcileAction {
    if RoleRef::from_json(existing.get("roleRef")) != RoleRef::from_json(wanted.get("roleRef")) {
        return ReconcileAction::Recreate(wanted.clone());
    }
    let mut result = existing.clone();
    let mut changed = merge_metadata(&mut result, wanted);
    let have: Vec<Subject> = subjects(existing).into_iter().map(|(s, _)| s).collect();
    let missing: Vec<Value> = subjects(wanted)
        .into_iter()
        .filter(|(s, _)| !have.contains(s))
        .map(|(_, v)| v.clone())
        .collect();
    if !missing.is_empty()
        && let Some(list) = array_mut(&mut result, "subjects")
    {
        list.extend(missing);
        changed = true;
    }
    if changed {
        ReconcileAction::Update(result)
    } else {
        ReconcileAction::None
    }
}
