//! Strategies of core/v1 kinds: namespaces, pods, secrets, events, nodes, RCs (Services are in
//! `service.rs`).

use k1s_apimachinery::FieldError;
use k1s_apimachinery::quantity::Quantity;
use serde_json::{Map, Value, json};

use super::apps::{default_pod_template, validate_pod_spec};
use super::pod_spec::{default_legacy_sources, default_pod, default_pvc_spec};
use super::pod_validation;
use super::resources;
use crate::registry::Strategy;

pub struct Namespaces;
impl Strategy for Namespaces {
    fn prepare_for_create(&self, obj: &mut Value) {
        // The namespace controller's finalizer: content is cleaned up before the namespace goes.
        obj["spec"]["finalizers"] = json!(["kubernetes"]);
        obj["status"] = json!({ "phase": "Active" });
        // Upstream labels every namespace with its own name.
        if let Some(name) = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = Value::String(name);
        }
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // Only the finalize subresource changes spec.finalizers; phase is the server's.
        new["spec"]["finalizers"] = old
            .pointer("/spec/finalizers")
            .cloned()
            .unwrap_or(json!([]));
        if let Some(name) = old
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            new["metadata"]["labels"]["kubernetes.io/metadata.name"] = Value::String(name);
        }
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.phase"]
    }
}

pub struct Pods;
impl Strategy for Pods {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        // Upstream adds the AppArmor ones while preparing the pod, before these.
        let mut out = pod_validation::app_armor_warnings(obj);
        out.extend(super::warnings::dns_label_name(obj, "the Pod's hostname"));
        out.extend(super::warnings::pod(obj, ""));
        out
    }
    fn default(&self, obj: &mut Value) {
        default_pod(obj);
        // The resource lists of container statuses (allocated and actual resources).
        for list in [
            "containerStatuses",
            "initContainerStatuses",
            "ephemeralContainerStatuses",
        ] {
            let statuses = obj
                .pointer_mut(&format!("/status/{list}"))
                .and_then(Value::as_array_mut);
            for s in statuses.into_iter().flatten() {
                resources::round_list_at(s, "/allocatedResources");
                if let Some(r) = s.get_mut("resources") {
                    resources::round_requirements(r);
                }
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        let mut status = json!({ "phase": "Pending", "qosClass": qos_class(obj.get("spec")) });
        // A pod with scheduling gates says why it waits (upstream's applySchedulingGatedCondition).
        if obj
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty())
        {
            status["conditions"] = json!([{
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": null,
                "lastTransitionTime": null,
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }]);
        }
        obj["status"] = status;
        pod_validation::drop_pod_level_resources(obj, None);
        pod_validation::merge_match_label_keys(obj);
        pod_validation::apply_app_armor_version_skew(obj);
    }
    fn return_deleted_object(&self) -> bool {
        true
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = pod_validation::validate_pod_annotations(obj, false);
        errs.extend(validate_pod_spec(obj.get("spec"), "spec"));
        errs.extend(resources::pod_spec_resource_errors(obj.get("spec"), "spec"));
        errs.extend(pod_validation::validate_pod_volumes(obj));
        if obj
            .pointer("/spec/ephemeralContainers")
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
        {
            errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                "cannot be set on create",
            ));
        }
        errs.extend(pod_validation::validate_pod_create(obj));
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let allow_invalid_cost = pod_validation::had_invalid_deletion_cost(old);
        let mut errs = pod_validation::validate_pod_annotations(new, allow_invalid_cost);
        errs.extend(pod_validation::validate_pod_spec_on_update(
            new.get("spec"),
            Some(old),
            "spec",
        ));
        errs.extend(resources::pod_spec_resource_errors(new.get("spec"), "spec"));
        errs.extend(pod_validation::validate_pod_volumes(new));
        errs.extend(pod_validation::validate_pod_annotation_updates(new, old));
        errs.extend(validate_pod_spec_update(&new["spec"], &old["spec"]));
        errs.extend(validate_ephemeral_containers(&new["spec"], &old["spec"]));
        errs
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        pod_validation::keep_qos_class(new, old);
        pod_validation::drop_pod_level_resources(new, Some(old));
    }
    fn validate_subresource_update(&self, sub: &str, new: &Value, old: &Value) -> Vec<FieldError> {
        match sub {
            // ValidatePodStatusUpdate: the spec is the stored one, so it is not checked again.
            "status" => pod_validation::validate_pod_status_update(new, old),
            "resize" => {
                let allow_invalid_cost = pod_validation::had_invalid_deletion_cost(old);
                let mut errs = pod_validation::validate_pod_annotations(new, allow_invalid_cost);
                errs.extend(pod_validation::validate_pod_spec_on_update(
                    new.get("spec"),
                    Some(old),
                    "spec",
                ));
                errs.extend(resources::pod_spec_resource_errors(new.get("spec"), "spec"));
                errs.extend(validate_pod_resize(new, old));
                errs
            }
            _ => self.validate_update(new, old),
        }
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ]
    }
}

/// The fields an ephemeral container may set (upstream's allowedEphemeralContainerFields).
const EPHEMERAL_FIELDS: &[&str] = &[
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "env",
    "envFrom",
    "volumeMounts",
    "volumeDevices",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    "targetContainerName",
];

/// Upstream's ValidatePodEphemeralContainersUpdate and validateEphemeralContainers: existing
/// ephemeral containers stay as they are; new ones have unique names, an image, only the
/// fields a debugging container may have, and a target container that exists.
fn validate_ephemeral_containers(new: &Value, old: &Value) -> Vec<FieldError> {
    let list = |v: &Value| -> Vec<Value> {
        v.get("ephemeralContainers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let name_of = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (new_list, old_list) = (list(new), list(old));
    let mut errs = Vec::new();
    for o in &old_list {
        let name = name_of(o);
        match new_list.iter().find(|n| name_of(n) == name) {
            None => errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(n) if n != o => errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    let regular: Vec<String> = ["containers", "initContainers"]
        .iter()
        .flat_map(|l| {
            new.get(*l)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .map(|c| name_of(&c))
        .collect();
    let mut seen: std::collections::HashSet<String> = regular.iter().cloned().collect();
    for (i, c) in new_list.iter().enumerate() {
        let path = format!("spec.ephemeralContainers[{i}]");
        let name = name_of(c);
        if name.is_empty() {
            errs.push(FieldError::required(format!("{path}.name"), ""));
        } else if !seen.insert(name.clone()) {
            errs.push(FieldError::duplicate(format!("{path}.name"), name.as_str()));
        }
        if c.get("image")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            errs.push(FieldError::required(format!("{path}.image"), ""));
        }
        let mut extra: Vec<&String> = c
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| !EPHEMERAL_FIELDS.contains(&k.as_str()) && !is_zero(v))
            .map(|(k, _)| k)
            .collect();
        extra.sort();
        for k in extra {
            errs.push(FieldError::forbidden(
                format!("{path}.{k}"),
                "cannot be set for an Ephemeral Container",
            ));
        }
        if let Some(target) = c.get("targetContainerName").and_then(Value::as_str)
            && !target.is_empty()
            && !regular.iter().any(|n| n == target)
        {
            errs.push(FieldError::not_found(
                format!("{path}.targetContainerName"),
                target,
            ));
        }
    }
    errs
}

/// Go's zero value: what an omitted field decodes to.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Upstream's ValidatePodUpdate: a pod's spec is fixed once created, except container images,
/// a shorter active deadline, added tolerations, removed scheduling gates (and, while gated,
/// added node selectors and affinity), and the node a binding assigns.
fn validate_pod_spec_update(new: &Value, old: &Value) -> Vec<FieldError> {
    const MUTABLE: &str = "pod updates may not change fields other than \
        `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,\
        `spec.tolerations` (only additions to existing tolerations),\
        `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";
    let mut errs = Vec::new();
    for list in ["containers", "initContainers"] {
        let len = |v: &Value| v.get(list).and_then(Value::as_array).map_or(0, Vec::len);
        if len(new) != len(old) {
            errs.push(FieldError::forbidden(
                format!("spec.{list}"),
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
    }
    if let (Some(n), Some(o)) = (
        new.get("activeDeadlineSeconds").and_then(Value::as_i64),
        old.get("activeDeadlineSeconds").and_then(Value::as_i64),
    ) && n > o
    {
        errs.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            n,
            "must be less than or equal to previous value",
        ));
    }
    if old
        .get("activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some()
        && new.get("activeDeadlineSeconds").is_none_or(Value::is_null)
    {
        errs.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            Value::Null,
            "must not update from a positive integer to nil value",
        ));
    }
    // Every existing toleration stays (its tolerationSeconds may change).
    let without_seconds = |v: &Value| -> Vec<Value> {
        v.get("tolerations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| {
                let mut t = t.clone();
                if let Some(o) = t.as_object_mut() {
                    o.remove("tolerationSeconds");
                }
                t
            })
            .collect()
    };
    let new_tolerations = without_seconds(new);
    if without_seconds(old)
        .iter()
        .any(|t| !new_tolerations.contains(t))
    {
        errs.push(FieldError::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    let gate_names = |v: &Value| -> Vec<String> {
        v.get("schedulingGates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|g| g.get("name").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    let old_gates = gate_names(old);
    for (i, g) in gate_names(new).iter().enumerate() {
        if !old_gates.contains(g) {
            errs.push(FieldError::forbidden(
                format!("spec.schedulingGates[{i}].name"),
                format!("only deletion is allowed, but found new scheduling gate '{g}'"),
            ));
        }
    }
    // Everything else must be unchanged.
    let gated = !old_gates.is_empty();
    let rest = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            // Ephemeral containers change through their subresource, checked on their own.
            for k in [
                "activeDeadlineSeconds",
                "tolerations",
                "schedulingGates",
                "ephemeralContainers",
            ] {
                o.remove(k);
            }
            if gated {
                o.remove("nodeSelector");
                o.remove("affinity");
            }
            // Set by a binding.
            if o.get("nodeName")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                o.remove("nodeName");
            }
            for list in ["containers", "initContainers"] {
                for c in o
                    .get_mut(list)
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    if let Some(c) = c.as_object_mut() {
                        c.remove("image");
                    }
                }
            }
        }
        v
    };
    let mut new_rest = rest(new);
    let old_rest = rest(old);
    if old_rest.get("nodeName").is_none()
        && let Some(o) = new_rest.as_object_mut()
    {
        o.remove("nodeName");
    }
    let grace = |v: &Value| {
        v.get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
    };
    if grace(old).is_some_and(|g| g < 0)
        && grace(new) == Some(1)
        && let Some(o) = new_rest.as_object_mut()
    {
        o.insert(
            "terminationGracePeriodSeconds".into(),
            old["terminationGracePeriodSeconds"].clone(),
        );
    }
    if new_rest != old_rest {
        errs.push(FieldError::forbidden("spec", MUTABLE));
    }
    errs
}

/// A resize through `pods/resize` (upstream's ValidatePodResize, 1.33): containers keep their
/// names and order, only cpu and memory change, requests and limits are not removed, a memory
/// limit shrinks only with the RestartContainer policy, and the QoS class stays.
fn validate_pod_resize(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let old_qos = old
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .unwrap_or_else(|| qos_class(old.get("spec")));
    if qos_class(new.get("spec")) != old_qos {
        errs.push(FieldError::invalid(
            "spec",
            old_qos,
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    for list in ["containers", "initContainers"] {
        let items = |v: &Value| -> Vec<Value> {
            v.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (new_list, old_list) = (items(new), items(old));
        if new_list.len() != old_list.len() {
            errs.push(FieldError::forbidden(
                format!("spec.{list}"),
                format!("{list} may not be added or removed on resize"),
            ));
            continue;
        }
        for (i, (n, o)) in new_list.iter().zip(&old_list).enumerate() {
            let path = format!("spec.{list}[{i}]");
            if n.get("name") != o.get("name") {
                errs.push(FieldError::forbidden(
                    format!("{path}.name"),
                    format!("{list} may not be renamed or reordered on resize"),
                ));
                continue;
            }
            let sidecar = o.get("restartPolicy").and_then(Value::as_str) == Some("Always");
            if list == "initContainers" && !sidecar {
                if n.get("resources") != o.get("resources") {
                    errs.push(FieldError::forbidden(
                        format!("{path}.resources"),
                        "resources for non-sidecar init containers are immutable",
                    ));
                }
                continue;
            }
            errs.extend(validate_container_resize(n, o, &path));
        }
    }
    errs
}

/// The per-container rules of a resize (upstream's validateContainerResize and the
/// "only cpu and memory" comparison).
fn validate_container_resize(new: &Value, old: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let section = |c: &Value, key: &str| -> Map<String, Value> {
        c.pointer(&format!("/resources/{key}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    // Everything but cpu and memory stays as it was.
    let others = |c: &Value| -> Value {
        let mut r = c.get("resources").cloned().unwrap_or_else(|| json!({}));
        if let Some(o) = r.as_object_mut() {
            for key in ["requests", "limits"] {
                if let Some(m) = o.get_mut(key).and_then(Value::as_object_mut) {
                    m.remove("cpu");
                    m.remove("memory");
                    if m.is_empty() {
                        o.remove(key);
                    }
                }
            }
        }
        r
    };
    if others(new) != others(old) {
        errs.push(FieldError::forbidden(
            "spec",
            "only cpu and memory resources are mutable",
        ));
    }
    for (key, what) in [("requests", "requests"), ("limits", "limits")] {
        let new_section = section(new, key);
        if section(old, key)
            .keys()
            .any(|k| !new_section.contains_key(k))
        {
            errs.push(FieldError::forbidden(
                format!("{path}.resources.{key}"),
                format!("resource {what} cannot be removed"),
            ));
        }
    }
    let memory_limit = |c: &Value| {
        section(c, "limits")
            .get("memory")
            .and_then(Value::as_str)
            .and_then(Quantity::parse)
    };
    let memory_policy = new
        .get("resizePolicy")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("resourceName").and_then(Value::as_str) == Some("memory"))
        .and_then(|p| p.get("restartPolicy").and_then(Value::as_str))
        .unwrap_or("NotRequired");
    if let (Some(n), Some(o)) = (memory_limit(new), memory_limit(old))
        && n < o
        && memory_policy != "RestartContainer"
    {
        errs.push(FieldError::forbidden(
            format!("{path}.resources.limits[memory]"),
            "memory limits cannot be decreased unless resizePolicy is RestartContainer",
        ));
    }
    errs
}

fn qos_class(spec: Option<&Value>) -> &'static str {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has = |c: &Value, k: &str| {
        c.pointer(&format!("/resources/{k}"))
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty())
    };
    if containers
        .iter()
        .all(|c| !has(c, "requests") && !has(c, "limits"))
    {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = c.pointer("/resources/limits");
        let requests = c.pointer("/resources/requests");
        ["cpu", "memory"].iter().all(|r| {
            let l = limits.and_then(|l| l.get(*r));
            l.is_some()
                && requests
                    .and_then(|q| q.get(*r))
                    .is_none_or(|q| Some(q) == l)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Upstream's MaxSecretSize: the values of a Secret together (1 MiB).
const SECRET_MAX_BYTES: usize = 1024 * 1024;
/// The annotation naming a token Secret's ServiceAccount (`ServiceAccountNameKey`).
const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";

/// What Go's `json.Unmarshal` into a `map[string]interface{}` says of `bytes`, or `None` when it
/// decodes: docker config Secrets must hold a JSON object (or `null`).
pub(super) fn go_json_object_error(bytes: &[u8]) -> Option<String> {
    let err = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => return None,
        Ok(v) => {
            let kind = match v {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            return Some(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ));
        }
        Err(e) => e,
    };
    if err.is_eof() {
        return Some("unexpected end of JSON input".into());
    }
    // serde_json's line/column point at the offending character; Go names it and what it
    // was looking for.
    let text = String::from_utf8_lossy(bytes);
    let line: Vec<char> = text
        .lines()
        .nth(err.line().saturating_sub(1))
        .unwrap_or_default()
        .chars()
        .collect();
    let col = err.column().saturating_sub(1);
    let at = line.get(col).copied().unwrap_or(' ');
    let shown = match at {
        '\'' => "'\\''".to_string(),
        '"' => "'\"'".to_string(),
        c => format!("'{}'", c.escape_default()),
    };
    let msg = err.to_string();
    if msg.starts_with("expected ident") {
        // Inside `true`, `false` or `null`: Go names the literal and the letter it expected.
        let start = line[..col.min(line.len())]
            .iter()
            .rposition(|c| !c.is_ascii_alphabetic())
            .map_or(0, |p| p + 1);
        let literal = match line.get(start) {
            Some('t') => "true",
            Some('f') => "false",
            _ => "null",
        };
        let expecting = literal.chars().nth(col - start).unwrap_or(' ');
        return Some(format!(
            "invalid character {shown} in literal {literal} (expecting '{expecting}')"
        ));
    }
    let context = if msg.starts_with("key must be a string") {
        "looking for beginning of object key string"
    } else if msg.starts_with("expected `:`") {
        "after object key"
    } else if msg.starts_with("expected `,` or `}`") {
        "after object key:value pair"
    } else if msg.starts_with("expected `,` or `]`") {
        "after array element"
    } else if msg.starts_with("trailing characters") {
        "after top-level value"
    } else {
        "looking for beginning of value"
    };
    Some(format!("invalid character {shown} {context}"))
}

pub struct Secrets;
impl Strategy for Secrets {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        super::warnings::secret(obj)
    }
    /// Upstream warns on the object after defaulting, with `stringData` merged into `data`.
    fn warnings_on_update(&self, new: &Value, _old: &Value) -> Vec<String> {
        let mut defaulted = new.clone();
        self.default(&mut defaulted);
        super::warnings::secret(&defaulted)
    }
    fn default(&self, obj: &mut Value) {
        use base64::Engine as _;
        if obj
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            obj["type"] = json!("Opaque");
        }
        // `stringData` is write-only: merged into `data` (winning over it), as upstream does.
        if let Some(Value::Object(plain)) = obj.as_object_mut().and_then(|o| o.remove("stringData"))
        {
            if !obj.get("data").is_some_and(Value::is_object) {
                obj["data"] = json!({});
            }
            for (k, v) in plain {
                let text = v.as_str().unwrap_or_default();
                obj["data"][k] =
                    Value::String(base64::engine::general_purpose::STANDARD.encode(text));
            }
        }
    }
    /// Upstream's ValidateSecret: file-name keys, at most 1 MiB of values, and the keys each
    /// built-in type needs.
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        use base64::Engine as _;
        let mut errs = Vec::new();
        // The decoded values, by key.
        let mut data: std::collections::BTreeMap<&str, Vec<u8>> = Default::default();
        for (k, v) in obj
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            for msg in config_key_errors(k) {
                errs.push(FieldError::invalid(format!("data[{k}]"), k.as_str(), msg));
            }
            match v
                .as_str()
                .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
            {
                Some(bytes) => {
                    data.insert(k, bytes);
                }
                None => errs.push(FieldError::invalid(
                    format!("data[{k}]"),
                    "<secret contents redacted>",
                    "must be base64-encoded bytes",
                )),
            }
        }
        let total: usize = data.values().map(Vec::len).sum();
        if total > SECRET_MAX_BYTES {
            errs.push(FieldError::too_long("data", Some(SECRET_MAX_BYTES)));
        }
        let ty = obj.get("type").and_then(Value::as_str).unwrap_or_default();
        match ty {
            "kubernetes.io/service-account-token" => {
                let named = obj
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(SA_NAME_ANNOTATION))
                    .and_then(Value::as_str)
                    .is_some_and(|n| !n.is_empty());
                if !named {
                    errs.push(FieldError::required(
                        format!("metadata.annotations[{SA_NAME_ANNOTATION}]"),
                        "",
                    ));
                }
            }
            "kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson" => {
                let key = if ty == "kubernetes.io/dockercfg" {
                    ".dockercfg"
                } else {
                    ".dockerconfigjson"
                };
                match data.get(key) {
                    None => errs.push(FieldError::required(format!("data[{key}]"), "")),
                    Some(bytes) => {
                        if let Some(msg) = go_json_object_error(bytes) {
                            errs.push(FieldError::invalid(
                                format!("data[{key}]"),
                                "<secret contents redacted>",
                                msg,
                            ));
                        }
                    }
                }
            }
            // Upstream's paths for these two carry a literal `%s` (field.NewPath("data[%s]")).
            "kubernetes.io/basic-auth"
                if !data.contains_key("username") && !data.contains_key("password") =>
            {
                errs.push(FieldError::required("data[%s][username]", ""));
                errs.push(FieldError::required("data[%s][password]", ""));
            }
            "kubernetes.io/ssh-auth" if data.get("ssh-privatekey").is_none_or(Vec::is_empty) => {
                errs.push(FieldError::required("data[%s][ssh-privatekey]", ""));
            }
            "kubernetes.io/tls" => {
                for key in ["tls.crt", "tls.key"] {
                    if !data.contains_key(key) {
                        errs.push(FieldError::required(format!("data[{key}]"), ""));
                    }
                }
            }
            _ => {}
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        if new.get("type") != old.get("type") {
            errs.push(FieldError::invalid(
                "type",
                new.get("type").cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        errs.extend(immutable_data(new, old));
        errs
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["type"]
    }
}

pub struct ConfigMaps;
impl Strategy for ConfigMaps {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let mut total = 0usize;
        let mut seen = std::collections::HashSet::new();
        for field in ["data", "binaryData"] {
            for (k, v) in obj
                .get(field)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                for msg in config_key_errors(k) {
                    errs.push(FieldError::invalid(
                        format!("{field}[{k}]"),
                        k.as_str(),
                        msg,
                    ));
                }
                if !seen.insert(k.clone()) {
                    errs.push(FieldError::invalid(
                        format!("{field}[{k}]"),
                        k.as_str(),
                        "duplicate of key present in data",
                    ));
                }
                total += k.len() + v.as_str().map_or(0, str::len);
            }
        }
        if total > 1024 * 1024 {
            errs.push(FieldError::too_long("", Some(1024 * 1024)));
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        errs.extend(immutable_data(new, old));
        errs
    }
}

/// A ConfigMap or Secret marked `immutable: true` keeps its data and stays immutable, whatever
/// the write path (update, every patch type, apply); upstream's messages.
fn immutable_data(new: &Value, old: &Value) -> Vec<FieldError> {
    const MSG: &str = "field is immutable when `immutable` is set";
    if old.get("immutable") != Some(&json!(true)) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if new.get("immutable") != Some(&json!(true)) {
        errs.push(FieldError::forbidden("immutable", MSG));
    }
    // An empty map and no map at all are the same content.
    let content = |v: &Value, k: &str| {
        v.get(k)
            .filter(|d| d.as_object().is_some_and(|m| !m.is_empty()))
            .cloned()
    };
    for field in ["data", "binaryData", "stringData"] {
        if content(new, field) != content(old, field) {
            errs.push(FieldError::forbidden(field, MSG));
        }
    }
    errs
}

/// Upstream's IsConfigMapKey: the keys of ConfigMaps and Secrets are file names.
pub(super) fn config_key_errors(key: &str) -> Vec<String> {
    let mut msgs = Vec::new();
    if key.len() > 253 {
        msgs.push("must be no more than 253 characters".to_string());
    }
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        msgs.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    if key == "." {
        msgs.push("must not be '.'".to_string());
    } else if key == ".." {
        msgs.push("must not be '..'".to_string());
    } else if key.starts_with("..") {
        msgs.push("must not start with '..'".to_string());
    }
    msgs
}

pub struct Events;
impl Strategy for Events {
    /// Upstream serializes a core/v1 Event's unset times as null and its reporting fields as
    /// empty strings (Go zero values without omitempty); clients see them so.
    fn default(&self, obj: &mut Value) {
        let Some(o) = obj.as_object_mut() else { return };
        for k in ["eventTime", "firstTimestamp", "lastTimestamp"] {
            o.entry(k).or_insert(Value::Null);
        }
        for k in ["reportingComponent", "reportingInstance"] {
            o.entry(k).or_insert(json!(""));
        }
        o.entry("source").or_insert(json!({}));
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reportingController",
        ]
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
    /// core/v1 writes get only upstream's legacy rules (events.k8s.io/v1 adds the strict ones).
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        super::events::legacy_event_errors(obj)
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        super::events::legacy_event_errors(new)
    }
}

pub struct Nodes;
impl Strategy for Nodes {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        super::warnings::node(obj, false)
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        let had = old
            .pointer("/spec/configSource")
            .is_some_and(|v| !v.is_null());
        super::warnings::node(new, had)
    }
    /// Upstream's dropDisabledFields: the removed dynamic kubelet config (`spec.configSource`,
    /// `status.config`) is dropped on create and kept on update only where already stored.
    fn prepare_for_create(&self, obj: &mut Value) {
        drop_unless_stored(obj, None, "spec", "configSource");
        drop_unless_stored(obj, None, "status", "config");
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        drop_unless_stored(new, Some(old), "spec", "configSource");
        drop_unless_stored(new, Some(old), "status", "config");
    }
    fn default(&self, obj: &mut Value) {
        // Allocatable defaults to capacity.
        if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut)
            && let Some(capacity) = status.get("capacity").cloned()
        {
            status.entry("allocatable").or_insert(capacity);
        }
        resources::round_list_at(obj, "/status/capacity");
        resources::round_list_at(obj, "/status/allocatable");
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        super::cluster::validate_node(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        super::cluster::validate_node_update(new, old)
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.unschedulable"]
    }
}

/// Removes `obj.<part>.<field>` unless the stored object (`old`) has it set.
fn drop_unless_stored(obj: &mut Value, old: Option<&Value>, part: &str, field: &str) {
    if old
        .and_then(|o| o.get(part)?.get(field))
        .is_some_and(|v| !v.is_null())
    {
        return;
    }
    if let Some(p) = obj.get_mut(part).and_then(Value::as_object_mut) {
        p.remove(field);
    }
}

pub struct ReplicationControllers;
impl Strategy for ReplicationControllers {
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
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("replicas").or_insert(json!(1));
            if let Some(t) = spec.get_mut("template") {
                default_pod_template(t);
            }
        }
        // The template's labels stand in for an empty selector and empty labels.
        let Some(labels) = obj
            .pointer("/spec/template/metadata/labels")
            .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
            .cloned()
        else {
            return;
        };
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
        if empty(obj.pointer("/spec/selector")) {
            obj["spec"]["selector"] = labels.clone();
        }
        if empty(obj.pointer("/metadata/labels"))
            && let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.insert("labels".into(), labels);
        }
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.replicas"]
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_replication_controller(obj, None)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_replication_controller(new, old.pointer("/spec/template"))
    }
}

/// Upstream's ValidateReplicationControllerSpec: counts, a non-empty selector that matches
/// the template, and a template whose pods always restart and have no deadline. On an update,
/// `old_template` is the stored one (what it already broke stays allowed, as upstream).
fn validate_replication_controller(obj: &Value, old_template: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let number = |f: &str| obj.pointer(&format!("/spec/{f}")).and_then(Value::as_i64);
    if let Some(n) = number("minReadySeconds").filter(|n| *n < 0) {
        errs.push(FieldError::invalid(
            "spec.minReadySeconds",
            n,
            "must be greater than or equal to 0",
        ));
    }
    let selector = obj.pointer("/spec/selector").and_then(Value::as_object);
    if selector.is_none_or(Map::is_empty) {
        errs.push(FieldError::required("spec.selector", ""));
    }
    if let Some(n) = number("replicas").filter(|n| *n < 0) {
        errs.push(FieldError::invalid(
            "spec.replicas",
            n,
            "must be greater than or equal to 0",
        ));
    }
    let Some(template) = obj.pointer("/spec/template").filter(|t| !t.is_null()) else {
        errs.push(FieldError::required("spec.template", ""));
        return errs;
    };
    let labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object);
    if let Some(selector) = selector.filter(|s| !s.is_empty())
        && !selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    {
        errs.push(FieldError::invalid_raw(
            "spec.template.metadata.labels",
            super::go_value::go_string_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(super::apps::validate_pod_template_on_update(
        Some(template),
        old_template,
        "spec.template",
    ));
    errs.extend(super::apps::template_for_controller(
        obj,
        "ReplicationController",
    ));
    errs
}

pub struct PodTemplates;
impl Strategy for PodTemplates {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        obj.get("template")
            .map(|t| super::warnings::pod(t, "template."))
            .unwrap_or_default()
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        super::warnings::template_on_update(new, old, "/template", "/template", "template.")
    }
    fn default(&self, obj: &mut Value) {
        if let Some(t) = obj.get_mut("template") {
            default_pod_template(t);
        }
    }
    /// Upstream's ValidatePodTemplate: the template's pod spec.
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_pod_template_object(obj, None)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_pod_template_object(new, old.get("template"))
    }
}

/// A PodTemplate's template; on an update `old_template` relaxes what it already broke.
fn validate_pod_template_object(obj: &Value, old_template: Option<&Value>) -> Vec<FieldError> {
    super::apps::validate_pod_template_on_update(obj.get("template"), old_template, "template")
}

pub struct Endpoints;
impl Strategy for Endpoints {
    fn default(&self, obj: &mut Value) {
        let subsets = obj.get_mut("subsets").and_then(Value::as_array_mut);
        for subset in subsets.into_iter().flatten() {
            let ports = subset.get_mut("ports").and_then(Value::as_array_mut);
            for p in ports.into_iter().flatten() {
                if let Some(p) = p.as_object_mut() {
                    p.entry("protocol").or_insert(json!("TCP"));
                }
            }
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        super::cluster::validate_endpoints(obj)
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        super::cluster::validate_endpoints(new)
    }
}

pub struct PersistentVolumeClaims;
impl Strategy for PersistentVolumeClaims {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        super::warnings::persistent_volume_claim(obj)
    }
    fn warnings_on_update(&self, new: &Value, _old: &Value) -> Vec<String> {
        super::warnings::persistent_volume_claim(new)
    }
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_pvc_spec(spec);
        }
        resources::round_list_at(obj, "/status/capacity");
        resources::round_list_at(obj, "/status/allocatedResources");
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        // Upstream clears the status and defaults its phase when the object is read back.
        obj["status"] = json!({ "phase": "Pending" });
        normalize_data_sources(obj);
    }
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        normalize_data_sources(new);
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_pvc_spec(obj.get("spec").unwrap_or(&Value::Null))
    }
    /// Upstream's ValidatePersistentVolumeClaimUpdate: the spec is immutable, except that a
    /// volume name may be set once, a storage class may be set where none was, and a bound
    /// claim's storage request and attributes class may change; the request may not shrink
    /// below the capacity.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_pvc_spec(new.get("spec").unwrap_or(&Value::Null));
        let spec = |v: &Value| v.get("spec").cloned().unwrap_or(Value::Null);
        let (mut new_spec, mut old_spec) = (spec(new), spec(old));
        let unset = |v: &Value, k: &str| v.get(k).is_none_or(|x| x.is_null() || x == "");
        if unset(&old_spec, "volumeName") {
            old_spec["volumeName"] = new_spec.get("volumeName").cloned().unwrap_or(Value::Null);
        }
        let old_annotation = old
            .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
            .and_then(Value::as_str);
        if old_spec.get("storageClassName").is_none_or(Value::is_null)
            && let Some(class) = new_spec.get("storageClassName").filter(|c| !c.is_null())
            && old_annotation.is_none_or(|a| Some(a) == class.as_str())
        {
            old_spec["storageClassName"] = class.clone();
        }
        let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
        if bound {
            if let Some(storage) = old_spec.pointer("/resources/requests/storage").cloned()
                && new_spec.pointer("/resources/requests").is_some()
            {
                new_spec["resources"]["requests"]["storage"] = storage;
            }
            if new_spec.get("volumeAttributesClassName").is_some() {
                new_spec["volumeAttributesClassName"] = old_spec
                    .get("volumeAttributesClassName")
                    .cloned()
                    .unwrap_or(Value::Null);
            }
        }
        // Compare without the nulls that stand for unset fields.
        let strip_nulls = |mut v: Value| {
            if let Some(o) = v.as_object_mut() {
                o.retain(|_, x| !x.is_null());
            }
            v
        };
        if strip_nulls(new_spec) != strip_nulls(old_spec) {
            errs.push(FieldError::forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and \
                 volumeAttributesClassName for bound claims",
            ));
        }
        let storage = |v: &Value, p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .and_then(Quantity::parse)
        };
        let new_size = storage(new, "/spec/resources/requests/storage");
        let old_size = storage(old, "/spec/resources/requests/storage");
        let capacity = storage(old, "/status/capacity/storage").unwrap_or_else(Quantity::zero);
        if let (Some(n), Some(o)) = (new_size, old_size)
            && n < o
            && n <= capacity
        {
            errs.push(FieldError::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
        errs
    }
}

/// Upstream's ValidatePersistentVolumeClaimSpec: access modes, the storage request, the class
/// name and the volume mode.
fn validate_pvc_spec(spec: &Value) -> Vec<FieldError> {
    validate_pvc_spec_at(spec, "spec")
}

/// `validate_pvc_spec` of a claim spec at `path` (an ephemeral volume's claim template).
pub(super) fn validate_pvc_spec_at(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let modes = spec
        .get("accessModes")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if modes.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.accessModes"),
            "at least 1 access mode is required",
        ));
    }
    errs.extend(super::volumes::pvc_selector_errors(spec, path));
    errs.extend(super::volumes::access_mode_errors(spec, path));
    let storage_field = format!("{path}.resources[storage]");
    match spec.pointer("/resources/requests/storage") {
        None => errs.push(FieldError::required(&storage_field, "")),
        Some(v) => {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            match Quantity::parse(&text) {
                Some(q) if q > Quantity::zero() => {}
                _ => errs.push(FieldError::invalid(
                    &storage_field,
                    text,
                    "must be greater than zero",
                )),
            }
        }
    }
    if let Some(class) = spec.get("storageClassName").and_then(Value::as_str)
        && !class.is_empty()
    {
        for msg in k1s_apimachinery::validation::is_dns1123_subdomain(class) {
            errs.push(FieldError::invalid(
                format!("{path}.storageClassName"),
                class,
                msg,
            ));
        }
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !["Block", "Filesystem"].contains(&mode)
    {
        errs.push(FieldError::not_supported(
            format!("{path}.volumeMode"),
            mode,
            &["Block", "Filesystem"],
        ));
    }
    errs.extend(super::volumes::pvc_data_source_errors(spec, path));
    errs
}

/// `dataSource` and `dataSourceRef` mirror each other (AnyVolumeDataSource).
fn normalize_data_sources(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let present = |v: Option<&Value>| v.is_some_and(|v| v.is_object());
    match (
        present(spec.get("dataSource")),
        present(spec.get("dataSourceRef")),
    ) {
        (true, false) => {
            let src = spec["dataSource"].clone();
            spec.insert("dataSourceRef".into(), src);
        }
        (false, true) if spec["dataSourceRef"].get("namespace").is_none() => {
            let mut src = spec["dataSourceRef"].clone();
            if let Some(o) = src.as_object_mut() {
                o.remove("namespace");
            }
            spec.insert("dataSource".into(), src);
        }
        _ => {}
    }
}

pub struct PersistentVolumes;
impl Strategy for PersistentVolumes {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        super::warnings::persistent_volume(obj)
    }
    fn warnings_on_update(&self, new: &Value, _old: &Value) -> Vec<String> {
        super::warnings::persistent_volume(new)
    }
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("persistentVolumeReclaimPolicy")
            .or_insert(json!("Retain"));
        spec.entry("volumeMode").or_insert(json!("Filesystem"));
        if let Some(h) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
            h.entry("type").or_insert(json!(""));
        }
        default_legacy_sources(spec);
        if let Some(capacity) = spec.get_mut("capacity") {
            resources::round_resource_list(capacity);
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({
            "phase": "Pending",
            "lastPhaseTransitionTime": crate::registry::now_rfc3339(),
        });
        drop_unless_stored(obj, None, "spec", "volumeAttributesClassName");
    }
    /// DropDisabledSpecFields: VolumeAttributesClass is off in 1.33, so a class name is kept
    /// only where the stored volume has one.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        drop_unless_stored(new, Some(old), "spec", "volumeAttributesClassName");
    }
    /// The status strategy: `lastPhaseTransitionTime` is kept while the phase stays, and set to
    /// now when the phase changes unless the writer set a new time itself.
    fn prepare_for_subresource_update(&self, subresource: &str, new: &mut Value, old: &Value) {
        self.prepare_for_update(new, old);
        if subresource != "status" || !new.get("status").is_some_and(Value::is_object) {
            return;
        }
        let phase = |o: &Value| o.pointer("/status/phase").cloned();
        let old_time = old.pointer("/status/lastPhaseTransitionTime").cloned();
        let new_time = new
            .pointer("/status/lastPhaseTransitionTime")
            .filter(|t| !t.is_null())
            .cloned();
        let time = if phase(new) == phase(old) {
            new_time.or(old_time)
        } else if new_time.is_none() || new_time == old_time {
            Some(json!(crate::registry::now_rfc3339()))
        } else {
            new_time
        };
        if let Some(t) = time {
            new["status"]["lastPhaseTransitionTime"] = t;
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        super::volumes::validate_pv(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        super::volumes::validate_pv_update(new, old)
    }
    /// ValidatePersistentVolumeStatusUpdate checks metadata only.
    fn validate_subresource_update(&self, _: &str, _: &Value, _: &Value) -> Vec<FieldError> {
        Vec::new()
    }
}

pub struct LimitRanges;
impl Strategy for LimitRanges {
    /// SetDefaults_LimitRangeItem: for containers, `default` falls back to `max` and
    /// `defaultRequest` to `default`, then `min`.
    fn default(&self, obj: &mut Value) {
        let items = obj
            .pointer_mut("/spec/limits")
            .and_then(Value::as_array_mut);
        for item in items.into_iter().flatten() {
            if item.get("type").and_then(Value::as_str) != Some("Container") {
                continue;
            }
            let Some(o) = item.as_object_mut() else {
                continue;
            };
            let map = |o: &Map<String, Value>, k: &str| {
                o.get(k)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default()
            };
            let mut default = map(o, "default");
            for (k, v) in map(o, "max") {
                default.entry(k).or_insert(v);
            }
            let mut request = map(o, "defaultRequest");
            for (k, v) in default.iter().chain(map(o, "min").iter()) {
                request.entry(k.clone()).or_insert(v.clone());
            }
            o.insert("default".into(), Value::Object(default));
            o.insert("defaultRequest".into(), Value::Object(request));
        }
        let items = obj
            .pointer_mut("/spec/limits")
            .and_then(Value::as_array_mut);
        for item in items.into_iter().flatten() {
            for list in [
                "/max",
                "/min",
                "/default",
                "/defaultRequest",
                "/maxLimitRequestRatio",
            ] {
                resources::round_list_at(item, list);
            }
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_limit_range(obj)
    }
}

/// Upstream's ValidateLimitRange: known or qualified types, each once; no defaults for the
/// Pod type; a storage bound for PVCs; and min ≤ defaultRequest ≤ default ≤ max per resource,
/// with a ratio of at least 1 that fits max/min. Bad values print as their quantity strings.
fn validate_limit_range(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut types = std::collections::HashSet::new();
    let items = obj
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, item) in items.iter().enumerate() {
        let at = format!("spec.limits[{i}]");
        let ty = item.get("type").and_then(Value::as_str).unwrap_or_default();
        let type_errs = k1s_apimachinery::validation::is_qualified_name(ty);
        if !type_errs.is_empty() {
            for m in type_errs {
                errs.push(FieldError::invalid(format!("{at}.type"), ty, m));
            }
        } else if !ty.contains('/') && !["Pod", "Container", "PersistentVolumeClaim"].contains(&ty)
        {
            errs.push(FieldError::invalid(
                format!("{at}.type"),
                ty,
                "must be a standard limit type or fully qualified",
            ));
        }
        if !types.insert(ty) {
            errs.push(FieldError::duplicate(format!("{at}.type"), ty));
        }
        let quantities = |key: &str| -> Vec<(String, Quantity, String)> {
            item.get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| {
                    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    Quantity::parse(&text).map(|q| (k.clone(), q, text))
                })
                .collect()
        };
        let (min, max, ratio) = (
            quantities("min"),
            quantities("max"),
            quantities("maxLimitRequestRatio"),
        );
        let names = |key: &str| -> Vec<FieldError> {
            item.get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .flat_map(|(k, _)| {
                    resources::limit_range_resource_name_errors(ty, k, &format!("{at}.{key}[{k}]"))
                })
                .collect()
        };
        errs.extend(names("max"));
        errs.extend(names("min"));
        let (mut default, mut request) = (Vec::new(), Vec::new());
        if ty == "Pod" {
            for key in ["default", "defaultRequest"] {
                if item
                    .get(key)
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
                {
                    errs.push(FieldError::forbidden(
                        format!("{at}.{key}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
        } else {
            errs.extend(names("default"));
            errs.extend(names("defaultRequest"));
            default = quantities("default");
            request = quantities("defaultRequest");
        }
        errs.extend(names("maxLimitRequestRatio"));
        if ty == "PersistentVolumeClaim" && !min.iter().chain(&max).any(|(k, _, _)| k == "storage")
        {
            errs.push(FieldError::required(
                format!("{at}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        let find = |list: &[(String, Quantity, String)], k: &str| {
            list.iter()
                .find(|(n, _, _)| n == k)
                .map(|(_, q, t)| (*q, t.clone()))
        };
        let mut keys: Vec<&String> = min
            .iter()
            .chain(&max)
            .chain(&default)
            .chain(&request)
            .chain(&ratio)
            .map(|(k, _, _)| k)
            .collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let (lo, hi) = (find(&min, k), find(&max, k));
            let (def, req) = (find(&default, k), find(&request, k));
            let r = find(&ratio, k);
            let mut check = |field: &str, shown: &str, bad: bool, detail: String| {
                if bad {
                    errs.push(FieldError::invalid(
                        format!("{at}.{field}[{k}]"),
                        shown,
                        detail,
                    ));
                }
            };
            if let (Some((a, at_)), Some((b, bt))) = (&lo, &hi) {
                check(
                    "min",
                    at_,
                    a > b,
                    format!("min value {at_} is greater than max value {bt}"),
                );
            }
            if let (Some((rq, rt)), Some((a, at_))) = (&req, &lo) {
                check(
                    "defaultRequest",
                    rt,
                    a > rq,
                    format!("min value {at_} is greater than default request value {rt}"),
                );
            }
            if let (Some((rq, rt)), Some((b, bt))) = (&req, &hi) {
                check(
                    "defaultRequest",
                    rt,
                    rq > b,
                    format!("default request value {rt} is greater than max value {bt}"),
                );
            }
            if let (Some((rq, rt)), Some((d, dt))) = (&req, &def) {
                check(
                    "defaultRequest",
                    rt,
                    rq > d,
                    format!("default request value {rt} is greater than default limit value {dt}"),
                );
            }
            if let (Some((d, dt)), Some((a, at_))) = (&def, &lo) {
                check(
                    "default",
                    at_,
                    a > d,
                    format!("min value {at_} is greater than default value {dt}"),
                );
            }
            if let (Some((d, dt)), Some((b, bt))) = (&def, &hi) {
                check(
                    "default",
                    bt,
                    d > b,
                    format!("default value {dt} is greater than max value {bt}"),
                );
            }
            if let Some((q, t)) = &r {
                check(
                    "maxLimitRequestRatio",
                    t,
                    *q < Quantity::from_int(1),
                    format!("ratio {t} is less than 1"),
                );
            }
            if let (Some((q, t)), Some((a, _)), Some((b, _))) = (&r, &lo, &hi) {
                let limit = b.as_f64() / a.as_f64();
                check(
                    "maxLimitRequestRatio",
                    t,
                    q.as_f64() > limit,
                    format!("ratio {t} is greater than max/min = {limit:.6}"),
                );
            }
            if let (Some((d, dt)), Some((rq, rt))) = (&def, &req) {
                let overcommit = !k.contains('/') || k.starts_with("kubernetes.io/");
                let overcommit = overcommit && !k.starts_with("hugepages-");
                check(
                    "defaultRequest",
                    rt,
                    !overcommit && d != rq,
                    format!("default value {dt} must equal to defaultRequest value {rt} in {k}"),
                );
            }
        }
    }
    errs
}

/// ServiceAccounts (upstream's serviceaccount strategy): secret references keep only their
/// names, and the deprecated `kubernetes.io/enforce-mountable-secrets` annotation is warned
/// about when it is set.
pub struct ServiceAccounts;

const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";

impl ServiceAccounts {
    /// cleanSecretReferences: each reference becomes `ObjectReference{Name: name}`.
    fn clean_secret_references(obj: &mut Value) {
        let secrets = obj.get_mut("secrets").and_then(Value::as_array_mut);
        for secret in secrets.into_iter().flatten() {
            let name = secret.get("name").filter(|n| n.is_string()).cloned();
            let mut clean = serde_json::Map::new();
            if let Some(name) = name.filter(|n| n.as_str() != Some("")) {
                clean.insert("name".into(), name);
            }
            *secret = Value::Object(clean);
        }
    }

    fn has_enforce_annotation(obj: &Value) -> bool {
        obj.pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(ENFORCE_MOUNTABLE_SECRETS))
    }

    fn enforce_warning() -> String {
        format!(
            "metadata.annotations[{ENFORCE_MOUNTABLE_SECRETS}]: deprecated in v1.32+; prefer \
             separate namespaces to isolate access to mounted secrets"
        )
    }
}

impl Strategy for ServiceAccounts {
    fn prepare_for_create(&self, obj: &mut Value) {
        Self::clean_secret_references(obj);
    }
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        Self::clean_secret_references(new);
    }
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        if Self::has_enforce_annotation(obj) {
            vec![Self::enforce_warning()]
        } else {
            Vec::new()
        }
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        // Only a request that newly sets the annotation is warned.
        if !Self::has_enforce_annotation(old) && Self::has_enforce_annotation(new) {
            vec![Self::enforce_warning()]
        } else {
            Vec::new()
        }
    }
}
