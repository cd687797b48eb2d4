//! Strategies of workload kinds (apps/v1 and batch/v1): defaults and the validations clients hit.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::quantity::Quantity;
use k1s_apimachinery::selector::LabelSelector;
use serde_json::{Value, json};

use super::pod_spec::default_pod_spec;
use crate::registry::Strategy;

pub fn default_pod_template(template: &mut Value) {
    if let Some(spec) = template.get_mut("spec") {
        default_pod_spec(spec);
    }
}

pub use super::pod_validation::validate_pod_spec;

/// Whether a resource may be requested below its limit (upstream's IsOvercommitAllowed: names
/// in the default namespace other than hugepages; extended resources are not).
fn overcommit_allowed(name: &str) -> bool {
    let default_namespace = !name.contains('/') || name.starts_with("kubernetes.io/");
    default_namespace && !name.starts_with("hugepages-")
}

/// A container's requests and limits (upstream's ValidateResourceRequirements): quantities are
/// not negative, a request is at most its limit, and resources that cannot be overcommitted
/// have a limit equal to the request.
pub(super) fn validate_resource_requirements(resources: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let list = |key: &str| -> Vec<(String, Option<Quantity>)> {
        resources
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().and_then(Quantity::parse)))
            .collect()
    };
    let limits = list("limits");
    let requests = list("requests");
    for (key, entries) in [("limits", &limits), ("requests", &requests)] {
        for (name, q) in entries {
            if let Some(q) = q.filter(Quantity::is_negative) {
                errs.push(FieldError::invalid(
                    format!("{path}.{key}[{name}]"),
                    q.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    for (name, request) in &requests {
        let field = format!("{path}.requests[{name}]");
        let limit = limits.iter().find(|(n, _)| n == name);
        match (request, limit) {
            (Some(request), Some((_, Some(limit)))) => {
                if !overcommit_allowed(name) && request != limit {
                    errs.push(FieldError::invalid(
                        field,
                        request.to_string(),
                        format!("must be equal to {name} limit of {limit}"),
                    ));
                } else if request > limit {
                    errs.push(FieldError::invalid(
                        field,
                        request.to_string(),
                        format!("must be less than or equal to {name} limit of {limit}"),
                    ));
                }
            }
            (_, None) if !overcommit_allowed(name) => errs.push(FieldError::required(
                format!("{path}.limits"),
                "Limit must be set for non overcommitable resources",
            )),
            _ => {}
        }
    }
    errs
}

/// A workload's selector must exist, be valid and non-empty, and select its pod template's
/// labels; the template's pod spec is valid.
fn validate_selector_and_template(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_selector(obj, false);
    errs.extend(validate_pod_spec(
        obj.pointer("/spec/template/spec"),
        "spec.template.spec",
    ));
    errs
}

/// `spec.selector` exists, parses, is non-empty unless `allow_empty`, and selects the labels of
/// `spec.template` (shared by every kind with a selector and a pod template).
pub fn validate_selector(obj: &Value, allow_empty: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match obj.pointer("/spec/selector") {
        None | Some(Value::Null) => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => match LabelSelector::from_json(sel) {
            Err(e) => errs.push(FieldError::invalid(
                "spec.selector",
                sel.clone(),
                e.message().to_string(),
            )),
            Ok(s) if s.is_empty() && !allow_empty => errs.push(FieldError::invalid(
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
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut out: Vec<String> = super::warnings::dns_label_name(obj, "Pod names and hostnames")
            .into_iter()
            .collect();
        if let Some(t) = obj.pointer("/spec/template") {
            out.extend(super::warnings::pod(t, "spec.template."));
        }
        out
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        super::warnings::template_on_update(new, old, "/spec", "/spec/template", "spec.template.")
    }
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
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // A Deployment's generation also counts annotation changes (`kubectl rollout` uses them).
        if new.pointer("/metadata/annotations") != old.pointer("/metadata/annotations")
            && new.get("spec") == old.get("spec")
        {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
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
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut out: Vec<String> = super::warnings::dns_label_name(obj, "Pod names and hostnames")
            .into_iter()
            .collect();
        if let Some(t) = obj.pointer("/spec/template") {
            out.extend(super::warnings::pod(t, "spec.template."));
        }
        out
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        super::warnings::template_on_update(new, old, "/spec", "/spec/template", "spec.template.")
    }
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("replicas").or_insert(json!(1));
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "replicas": 0 });
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
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(t) = obj.pointer("/spec/template") {
            out.extend(super::warnings::pod(t, "spec.template."));
        }
        out
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        super::warnings::template_on_update(new, old, "/spec", "/spec/template", "spec.template.")
    }
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("replicas").or_insert(json!(1));
        spec.entry("podManagementPolicy")
            .or_insert(json!("OrderedReady"));
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        // Only an unset type brings a rollingUpdate with it; partition defaults inside one.
        let strategy = spec.entry("updateStrategy").or_insert(json!({}));
        if strategy
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            strategy["type"] = json!("RollingUpdate");
            if strategy.get("rollingUpdate").is_none_or(Value::is_null) {
                strategy["rollingUpdate"] = json!({});
            }
        }
        if strategy["type"] == "RollingUpdate"
            && let Some(r) = strategy
                .get_mut("rollingUpdate")
                .and_then(Value::as_object_mut)
        {
            r.entry("partition").or_insert(json!(0));
            // maxUnavailable needs the MaxUnavailableStatefulSet gate (off in 1.33).
            r.remove("maxUnavailable");
        }
        let retention = spec
            .entry("persistentVolumeClaimRetentionPolicy")
            .or_insert(json!({}));
        if let Some(r) = retention.as_object_mut() {
            r.entry("whenDeleted").or_insert(json!("Retain"));
            r.entry("whenScaled").or_insert(json!("Retain"));
        }
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
        let claims = spec
            .get_mut("volumeClaimTemplates")
            .and_then(Value::as_array_mut);
        for c in claims.into_iter().flatten() {
            if let Some(s) = c.get_mut("spec") {
                super::pod_spec::default_pvc_spec(s);
            }
            if let Some(c) = c.as_object_mut() {
                c.entry("status").or_insert(json!({ "phase": "Pending" }));
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "replicas": 0, "availableReplicas": 0 });
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_selector_and_template(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_selector_and_template(new);
        let strip = |v: &Value| {
            let mut spec = v.get("spec").cloned().unwrap_or(Value::Null);
            if let Some(s) = spec.as_object_mut() {
                for k in [
                    "replicas",
                    "ordinals",
                    "template",
                    "updateStrategy",
                    "revisionHistoryLimit",
                    "persistentVolumeClaimRetentionPolicy",
                    "minReadySeconds",
                ] {
                    s.remove(k);
                }
            }
            spec
        };
        if strip(new) != strip(old) {
            errs.push(FieldError::forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', \
                 'template', 'updateStrategy', 'revisionHistoryLimit', \
                 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
        errs
    }
}

pub struct DaemonSets;
impl Strategy for DaemonSets {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut out: Vec<String> = super::warnings::dns_label_name(obj, "Pod names and hostnames")
            .into_iter()
            .collect();
        if let Some(t) = obj.pointer("/spec/template") {
            out.extend(super::warnings::pod(t, "spec.template."));
        }
        out
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        super::warnings::template_on_update(
            new,
            old,
            "/spec/template",
            "/spec/template",
            "spec.template.",
        )
    }
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("revisionHistoryLimit").or_insert(json!(10));
        let strategy = spec.entry("updateStrategy").or_insert(json!({}));
        if strategy
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            strategy["type"] = json!("RollingUpdate");
        }
        if strategy["type"] == "RollingUpdate" {
            if strategy.get("rollingUpdate").is_none_or(Value::is_null) {
                strategy["rollingUpdate"] = json!({});
            }
            if let Some(r) = strategy["rollingUpdate"].as_object_mut() {
                r.entry("maxUnavailable").or_insert(json!(1));
                r.entry("maxSurge").or_insert(json!(0));
            }
        }
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        });
        obj["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("1");
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // apps/v1 shows the internal templateGeneration as an annotation the server owns: it
        // counts changes of the pod template.
        let generation: i64 = old
            .pointer(&format!(
                "/metadata/annotations/{}",
                TEMPLATE_GENERATION.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .and_then(|g| g.parse().ok())
            .unwrap_or(1);
        let changed = new.pointer("/spec/template") != old.pointer("/spec/template");
        let value = if changed { generation + 1 } else { generation };
        if !new["metadata"]
            .get("annotations")
            .is_some_and(Value::is_object)
        {
            new["metadata"]["annotations"] = json!({});
        }
        new["metadata"]["annotations"][TEMPLATE_GENERATION] = json!(value.to_string());
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

/// The annotation that carries a DaemonSet's template generation in apps/v1.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
