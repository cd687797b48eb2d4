//! Strategies of workload kinds (apps/v1 and batch/v1): defaults and the validations clients hit.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::selector::LabelSelector;
use serde_json::{Value, json};

use super::core::default_pod_spec;
use crate::registry::Strategy;

pub fn default_pod_template(template: &mut Value) {
    if let Some(spec) = template.get_mut("spec") {
        default_pod_spec(spec);
    }
}

/// The checks of a pod spec every client trips over first.
pub fn validate_pod_spec(spec: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(spec) = spec else {
        errs.push(FieldError::required(path, ""));
        return errs;
    };
    match spec.get("containers").and_then(Value::as_array) {
        None => errs.push(FieldError::required(format!("{path}.containers"), "")),
        Some(cs) if cs.is_empty() => {
            errs.push(FieldError::required(format!("{path}.containers"), ""))
        }
        Some(cs) => {
            let mut seen = std::collections::HashSet::new();
            for (i, c) in cs.iter().enumerate() {
                let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
                if name.is_empty() {
                    errs.push(FieldError::required(
                        format!("{path}.containers[{i}].name"),
                        "",
                    ));
                } else if !seen.insert(name) {
                    errs.push(FieldError::duplicate(
                        format!("{path}.containers[{i}].name"),
                        name,
                    ));
                }
                if c.get("image")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    errs.push(FieldError::required(
                        format!("{path}.containers[{i}].image"),
                        "",
                    ));
                }
            }
        }
    }
    errs
}

/// A workload's selector must exist, be valid, and select its pod template's labels.
fn validate_selector_and_template(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match obj.pointer("/spec/selector") {
        None | Some(Value::Null) => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => match LabelSelector::from_json(sel) {
            Err(e) => errs.push(FieldError::invalid(
                "spec.selector",
                sel.clone(),
                e.message().to_string(),
            )),
            Ok(s) if s.is_empty() => errs.push(FieldError::invalid(
                "spec.selector",
                sel.clone(),
                "empty selector is invalid for deployment",
            )),
            Ok(s) => {
                let labels = obj.pointer("/spec/template/metadata/labels");
                if !s.matches_json(labels) {
                    errs.push(FieldError::invalid(
                        "spec.template.metadata.labels",
                        labels.cloned().unwrap_or(Value::Null),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
        },
    }
    errs.extend(validate_pod_spec(
        obj.pointer("/spec/template/spec"),
        "spec.template.spec",
    ));
    errs
}

fn immutable_selector(new: &Value, old: &Value) -> Vec<FieldError> {
    if new.pointer("/spec/selector") != old.pointer("/spec/selector") {
        return vec![FieldError::invalid(
            "spec.selector",
            new.pointer("/spec/selector")
                .cloned()
                .unwrap_or(Value::Null),
            "field is immutable",
        )];
    }
    Vec::new()
}

pub struct Deployments;
impl Strategy for Deployments {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("replicas").or_insert(json!(1));
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        spec.entry("progressDeadlineSeconds").or_insert(json!(600));
        let strategy = spec.entry("strategy").or_insert(json!({}));
        if strategy.get("type").is_none() {
            strategy["type"] = json!("RollingUpdate");
        }
        if strategy["type"] == "RollingUpdate" && strategy.get("rollingUpdate").is_none() {
            strategy["rollingUpdate"] = json!({ "maxUnavailable": "25%", "maxSurge": "25%" });
        }
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_selector_and_template(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_selector_and_template(new);
        errs.extend(immutable_selector(new, old));
        errs
    }
}

pub struct ReplicaSets;
impl Strategy for ReplicaSets {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("replicas").or_insert(json!(1));
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_selector_and_template(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_selector_and_template(new);
        errs.extend(immutable_selector(new, old));
        errs
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.replicas"]
    }
}

pub struct StatefulSets;
impl Strategy for StatefulSets {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("replicas").or_insert(json!(1));
        spec.entry("podManagementPolicy")
            .or_insert(json!("OrderedReady"));
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        spec.entry("updateStrategy")
            .or_insert(json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 0 } }));
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_selector_and_template(obj)
    }
}

pub struct DaemonSets;
impl Strategy for DaemonSets {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        spec.entry("updateStrategy").or_insert(
            json!({ "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": 1, "maxSurge": 0 } }),
        );
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_selector_and_template(obj)
    }
}

pub struct Jobs;
impl Strategy for Jobs {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("completions").or_insert(json!(1));
        spec.entry("parallelism").or_insert(json!(1));
        spec.entry("backoffLimit").or_insert(json!(6));
        spec.entry("completionMode").or_insert(json!("NonIndexed"));
        spec.entry("suspend").or_insert(json!(false));
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.successful"]
    }
}
