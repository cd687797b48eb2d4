//! Strategies of workload kinds (apps/v1 and batch/v1): defaults and the validations clients hit.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::quantity::Quantity;
use k1s_apimachinery::selector::LabelSelector;
use serde_json::{Value, json};

use super::go_value::go_int_or_string;
use super::pod_spec::default_pod_spec;
use crate::registry::Strategy;

pub fn default_pod_template(template: &mut Value) {
    if let Some(spec) = template.get_mut("spec") {
        default_pod_spec(spec);
    }
}

pub use super::pod_validation::validate_pod_spec;
use super::pod_validation::{PodOptions, validate_pod_spec_with};

/// Whether a resource may be requested below its limit (upstream's IsOvercommitAllowed: names
/// in the default namespace other than hugepages; extended resources are not).
fn overcommit_allowed(name: &str) -> bool {
    let default_namespace = !name.contains('/') || name.starts_with("kubernetes.io/");
    default_namespace && !name.starts_with("hugepages-")
}

/// Upstream's IsHugePageResourceValueDivisible for a `hugepages-<size>` resource; `None` for
/// other resources.
fn huge_pages_divisible(name: &str, q: &Quantity) -> Option<bool> {
    let size = name.strip_prefix("hugepages-")?;
    let page = Quantity::parse(size).filter(|p| !p.is_negative() && !p.is_zero());
    Some(page.is_some_and(|p| p.milli_value() % 1000 == 0 && q.value() % p.value() == 0))
}

/// Whether a container's resources hold a huge-page amount that is not a whole number of
/// pages (upstream's usesIndivisibleHugePagesValues, which lets an update keep it).
pub(super) fn has_indivisible_huge_pages(resources: &Value) -> bool {
    ["limits", "requests"].into_iter().any(|key| {
        let list = resources.get(key).and_then(Value::as_object);
        list.into_iter().flatten().any(|(name, v)| {
            let q = v.as_str().and_then(Quantity::parse);
            q.is_some_and(|q| huge_pages_divisible(name, &q) == Some(false))
        })
    })
}

/// A container's requests and limits (upstream's ValidateResourceRequirements): quantities are
/// not negative, a request is at most its limit, resources that cannot be overcommitted
/// have a limit equal to the request, huge pages come in whole pages (unless
/// `allow_indivisible_huge_pages`) and beside cpu or memory.
pub(super) fn validate_resource_requirements(
    resources: &Value,
    path: &str,
    allow_indivisible_huge_pages: bool,
) -> Vec<FieldError> {
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
        // Upstream reports a request against its limit at the `requests` list, not the item.
        let field = format!("{path}.requests");
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
    let mut huge_pages = false;
    for (key, entries) in [("limits", &limits), ("requests", &requests)] {
        for (name, q) in entries {
            let Some(q) = q else { continue };
            let Some(divisible) = huge_pages_divisible(name, q) else {
                continue;
            };
            huge_pages = true;
            if !divisible && !allow_indivisible_huge_pages {
                errs.push(FieldError::invalid(
                    format!("{path}.{key}[{name}]"),
                    q.to_string(),
                    format!("{q} is not positive integer multiple of {name}"),
                ));
            }
        }
    }
    let cpu_or_memory = limits
        .iter()
        .chain(&requests)
        .any(|(n, _)| n == "cpu" || n == "memory");
    if huge_pages && !cpu_or_memory {
        errs.push(FieldError::forbidden(
            path,
            "HugePages require cpu or memory",
        ));
    }
    errs
}

/// A workload's selector must exist, be valid and non-empty, and select its pod template's
/// labels; the template's pod spec is valid (ValidatePodTemplateSpecForReplicaSet and the
/// DaemonSet's equivalent). `kind` names the workload in upstream's messages.
fn validate_selector_and_template(obj: &Value, kind: &str, opts: &PodOptions) -> Vec<FieldError> {
    let mut errs = validate_selector_of(obj, false, selector_word(kind));
    errs.extend(validate_pod_template_with(
        obj.pointer("/spec/template"),
        "spec.template",
        opts,
    ));
    errs.extend(template_for_controller(obj, kind));
    errs
}

/// Upstream's ValidateDeploymentSpec, ValidateReplicaSetSpec, ValidateStatefulSetSpec or
/// ValidateDaemonSetSpec for `kind`; `old` is the stored object of an update, whose pod
/// template's own violations the new one may keep.
fn validate_workload(obj: &Value, kind: &str, old: Option<&Value>) -> Vec<FieldError> {
    let opts = PodOptions::for_update(old.and_then(|o| o.pointer("/spec/template")));
    let opts = &opts;
    match kind {
        "Deployment" => {
            let mut errs = validate_selector_and_template(obj, "ReplicaSet", opts);
            errs.extend(validate_deployment_spec(obj));
            errs
        }
        "StatefulSet" => validate_statefulset_spec(obj, opts),
        "DaemonSet" => {
            let mut errs = validate_selector_and_template(obj, "DaemonSet", opts);
            errs.extend(validate_daemonset_spec(obj));
            errs
        }
        _ => {
            let mut errs = non_negative(obj, &["replicas", "minReadySeconds"]);
            errs.extend(validate_selector_and_template(obj, kind, opts));
            errs
        }
    }
}

/// Which word upstream's "empty selector is invalid for ..." uses (ReplicaSets say
/// "deployment", as upstream's copy does).
fn selector_word(kind: &str) -> &'static str {
    match kind {
        "StatefulSet" => "statefulset",
        "DaemonSet" => "daemonset",
        _ => "deployment",
    }
}

/// Upstream's ValidatePodTemplateSpec: the template's labels and annotations, then its pod
/// spec with its resource names (`path` is the template's). On an update `old` is the stored
/// template, whose own violations the new one may keep (upstream's
/// GetValidationOptionsFromPodTemplate); `None` on a create.
pub(super) fn validate_pod_template_on_update(
    template: Option<&Value>,
    old: Option<&Value>,
    path: &str,
) -> Vec<FieldError> {
    validate_pod_template_with(template, path, &PodOptions::for_update(old))
}

/// ValidatePodTemplateSpec with the options `opts`.
pub(super) fn validate_pod_template_with(
    template: Option<&Value>,
    path: &str,
    opts: &PodOptions,
) -> Vec<FieldError> {
    let mut errs = k1s_apimachinery::meta::validate_template_labels_and_annotations(template, path);
    if let Some(t) = template {
        errs.extend(super::pod_validation::validate_template_annotations_with(
            t, path, opts,
        ));
    }
    let spec = template.and_then(|t| t.get("spec"));
    let spec_path = format!("{path}.spec");
    errs.extend(validate_pod_spec_with(spec, &spec_path, opts));
    errs.extend(super::resources::pod_spec_resource_errors(spec, &spec_path));
    errs
}

/// A controller's pod template restarts its pods always and has no deadline.
pub(super) fn template_for_controller(obj: &Value, kind: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let restart = obj
        .pointer("/spec/template/spec/restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            restart,
            &["Always"],
        ));
    }
    if obj
        .pointer("/spec/template/spec/activeDeadlineSeconds")
        .is_some_and(|d| !d.is_null())
    {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// Upstream's ValidateNonnegativeField for the integer fields of `spec` that are set.
fn non_negative(obj: &Value, fields: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for f in fields {
        let pointer = format!("/spec/{}", f.replace('.', "/"));
        if let Some(n) = obj.pointer(&pointer).and_then(Value::as_i64)
            && n < 0
        {
            errs.push(FieldError::invalid(
                format!("spec.{f}"),
                n,
                "must be greater than or equal to 0",
            ));
        }
    }
    errs
}

/// An int-or-percent's value: the number, or the percentage's number (0 when unparsable).
fn int_or_percent(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) => s
            .strip_suffix('%')
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        Some(v) => v.as_i64().unwrap_or(0),
        None => 0,
    }
}

/// Upstream's ValidatePositiveIntOrPercent and IsNotMoreThan100Percent (when `at_most_100`).
fn int_or_percent_errors(v: Option<&Value>, field: &str, at_most_100: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return errs;
    };
    match v {
        Value::String(s) => {
            let percent = s
                .strip_suffix('%')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !percent {
                errs.push(FieldError::invalid_raw(
                    field,
                    go_int_or_string(v),
                    k1s_apimachinery::validation::regex_error(
                        "a valid percent string must be a numeric string followed by an ending '%'",
                        "[0-9]+%",
                        &["1%", "93%"],
                    ),
                ));
            } else if at_most_100 && int_or_percent(Some(v)) > 100 {
                errs.push(FieldError::invalid_raw(
                    field,
                    go_int_or_string(v),
                    "must not be greater than 100%",
                ));
            }
        }
        v => {
            let n = v.as_i64().unwrap_or(0);
            if n < 0 {
                errs.push(FieldError::invalid(
                    field,
                    n,
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    errs
}

/// Upstream's ValidateDeploymentSpec beyond the selector and template: the strategy, the
/// counts and the progress deadline.
fn validate_deployment_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = non_negative(obj, &["replicas"]);
    let strategy = obj
        .pointer("/spec/strategy")
        .cloned()
        .unwrap_or(Value::Null);
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match strategy.get("type").and_then(Value::as_str).unwrap_or_default() {
        "Recreate" => {
            if rolling.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match rolling {
            None => errs.push(FieldError::required(
                "spec.strategy.rollingUpdate",
                "this should be defaulted and never be nil",
            )),
            Some(r) => {
                let (unavailable, surge) = (r.get("maxUnavailable"), r.get("maxSurge"));
                let f = "spec.strategy.rollingUpdate";
                errs.extend(int_or_percent_errors(unavailable, &format!("{f}.maxUnavailable"), false));
                errs.extend(int_or_percent_errors(surge, &format!("{f}.maxSurge"), false));
                if int_or_percent(unavailable) == 0 && int_or_percent(surge) == 0 {
                    errs.push(FieldError::invalid_raw(
                        format!("{f}.maxUnavailable"),
                        go_int_or_string(unavailable.unwrap_or(&Value::from(0))),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                errs.extend(int_or_percent_errors(unavailable, &format!("{f}.maxUnavailable"), true)
                    .into_iter()
                    .filter(|e| e.detail.starts_with("must not be greater")));
            }
        },
        other => errs.push(FieldError::new(
            k1s_apimachinery::status::FieldErrorType::NotSupported,
            "spec.strategy",
            k1s_apimachinery::status::BadValue::Raw(format!(
                "apps.DeploymentStrategy{{Type:{other:?}, RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}}"
            )),
            "supported values: \"Recreate\", \"RollingUpdate\"",
        )),
    }
    errs.extend(non_negative(
        obj,
        &[
            "minReadySeconds",
            "revisionHistoryLimit",
            "progressDeadlineSeconds",
        ],
    ));
    let min_ready = obj
        .pointer("/spec/minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(deadline) = obj
        .pointer("/spec/progressDeadlineSeconds")
        .and_then(Value::as_i64)
        && deadline <= min_ready
    {
        errs.push(FieldError::invalid(
            "spec.progressDeadlineSeconds",
            deadline,
            "must be greater than minReadySeconds",
        ));
    }
    errs
}

/// Upstream's ValidateDaemonSetSpec beyond the selector and template.
fn validate_daemonset_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = non_negative(obj, &["minReadySeconds"]);
    let strategy = obj
        .pointer("/spec/updateStrategy")
        .cloned()
        .unwrap_or(Value::Null);
    let f = "spec.updateStrategy";
    match strategy.get("type").and_then(Value::as_str).unwrap_or_default() {
        "OnDelete" => {}
        "RollingUpdate" => match strategy.get("rollingUpdate").filter(|r| !r.is_null()) {
            None => errs.push(FieldError::required(format!("{f}.rollingUpdate"), "")),
            Some(r) => {
                let (unavailable, surge) = (r.get("maxUnavailable"), r.get("maxSurge"));
                let f = format!("{f}.rollingUpdate");
                errs.extend(int_or_percent_errors(unavailable, &format!("{f}.maxUnavailable"), true));
                errs.extend(int_or_percent_errors(surge, &format!("{f}.maxSurge"), true));
                match (int_or_percent(unavailable) != 0, int_or_percent(surge) != 0) {
                    (true, true) => errs.push(FieldError::invalid_raw(
                        format!("{f}.maxSurge"),
                        go_int_or_string(surge.unwrap_or(&Value::from(0))),
                        "may not be set when maxUnavailable is non-zero",
                    )),
                    (false, false) => errs.push(FieldError::required(
                        format!("{f}.maxUnavailable"),
                        "cannot be 0 when maxSurge is 0",
                    )),
                    _ => {}
                }
            }
        },
        other => errs.push(FieldError::new(
            k1s_apimachinery::status::FieldErrorType::NotSupported,
            f,
            k1s_apimachinery::status::BadValue::Raw(format!(
                "apps.DaemonSetUpdateStrategy{{Type:{other:?}, RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}}"
            )),
            "supported values: \"RollingUpdate\", \"OnDelete\"",
        )),
    }
    errs.extend(non_negative(obj, &["revisionHistoryLimit"]));
    errs
}

/// Upstream's ValidateStatefulSetSpec: policies, counts, ordinals, the selector, and of the
/// template only its labels, restart policy and deadline (upstream does not validate a
/// StatefulSet's pod spec: its mounts may name volumes of `volumeClaimTemplates`).
fn validate_statefulset_spec(obj: &Value, opts: &PodOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match obj
        .pointer("/spec/podManagementPolicy")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "" => errs.push(FieldError::required("spec.podManagementPolicy", "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(FieldError::invalid(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = obj
        .pointer("/spec/updateStrategy")
        .cloned()
        .unwrap_or(Value::Null);
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match strategy
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "" => errs.push(FieldError::required("spec.updateStrategy", "")),
        "OnDelete" => {
            if let Some(r) = rolling {
                errs.push(FieldError::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    r.clone(),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(r) = rolling {
                errs.extend(non_negative(
                    obj,
                    &["updateStrategy.rollingUpdate.partition"],
                ));
                if let Some(m) = r.get("maxUnavailable").filter(|m| !m.is_null()) {
                    let f = "spec.updateStrategy.rollingUpdate.maxUnavailable";
                    errs.extend(int_or_percent_errors(Some(m), f, false));
                    if int_or_percent(Some(m)) == 0 {
                        errs.push(FieldError::invalid_raw(
                            f,
                            go_int_or_string(m),
                            "cannot be 0",
                        ));
                    }
                    errs.extend(
                        int_or_percent_errors(Some(m), f, true)
                            .into_iter()
                            .filter(|e| e.detail.starts_with("must not be greater")),
                    );
                }
            }
        }
        _ => errs.push(FieldError::invalid(
            "spec.updateStrategy",
            strategy.clone(),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    for when in ["whenDeleted", "whenScaled"] {
        let pointer = format!("/spec/persistentVolumeClaimRetentionPolicy/{when}");
        if let Some(v) = obj.pointer(&pointer) {
            let v = v.as_str().unwrap_or_default();
            if !["Retain", "Delete"].contains(&v) {
                errs.push(FieldError::not_supported(
                    format!("spec.persistentVolumeClaimRetentionPolicy.{when}"),
                    v,
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    errs.extend(non_negative(
        obj,
        &["replicas", "minReadySeconds", "ordinals.start"],
    ));
    errs.extend(validate_selector_of(obj, false, "statefulset"));
    // ValidatePodTemplateSpecForStatefulSet: the template's labels and annotations (at
    // upstream's `spec.template.labels` and `.annotations`), not its pod spec.
    if let Some(t) = obj.pointer("/spec/template").filter(|t| !t.is_null()) {
        errs.extend(
            k1s_apimachinery::meta::validate_template_labels_and_annotations(
                Some(t),
                "spec.template",
            ),
        );
        errs.extend(super::pod_validation::validate_template_annotations_with(
            t,
            "spec.template",
            opts,
        ));
    }
    errs.extend(template_for_controller(obj, "StatefulSet"));
    errs
}

/// `spec.selector` exists, parses, is non-empty unless `allow_empty`, and selects the labels of
/// `spec.template` (shared by every kind with a selector and a pod template).
pub fn validate_selector(obj: &Value, allow_empty: bool) -> Vec<FieldError> {
    validate_selector_of(obj, allow_empty, "deployment")
}

/// [`validate_selector`] with the kind word of upstream's "empty selector" message.
fn validate_selector_of(obj: &Value, allow_empty: bool, kind: &str) -> Vec<FieldError> {
    let sel = match obj.pointer("/spec/selector") {
        None | Some(Value::Null) => return vec![FieldError::required("spec.selector", "")],
        Some(sel) => sel,
    };
    // Each bad label or requirement at its own path, as upstream's ValidateLabelSelector.
    let field_errs = k1s_apimachinery::validation::validate_label_selector(sel, "spec.selector");
    if !field_errs.is_empty() {
        return field_errs;
    }
    let invalid = |detail: String| vec![FieldError::invalid("spec.selector", sel.clone(), detail)];
    match LabelSelector::from_json(sel) {
        Err(e) => invalid(e.message().to_string()),
        Ok(s) if s.is_empty() && !allow_empty => vec![FieldError::invalid_raw(
            "spec.selector",
            super::go_value::go_label_selector(sel),
            format!("empty selector is invalid for {kind}"),
        )],
        Ok(s) => {
            let labels = obj.pointer("/spec/template/metadata/labels");
            if s.matches_json(labels) {
                Vec::new()
            } else {
                vec![FieldError::invalid_raw(
                    "spec.template.metadata.labels",
                    super::go_value::go_string_map(labels.and_then(Value::as_object)),
                    "`selector` does not match template `labels`",
                )]
            }
        }
    }
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
    /// The template's warnings when the generation moves: a spec or, for Deployments, an
    /// annotation change.
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        let annotations = "/metadata/annotations";
        let changed = if new.pointer(annotations) != old.pointer(annotations) {
            annotations
        } else {
            "/spec"
        };
        super::warnings::template_on_update(new, old, changed, "/spec/template", "spec.template.")
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
        validate_workload(obj, "Deployment", None)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_workload(new, "Deployment", Some(old));
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
        validate_workload(obj, "ReplicaSet", None)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_workload(new, "ReplicaSet", Some(old));
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
                // apps/v1 conversion sets them on every claim template (upstream #87583).
                c.insert("apiVersion".into(), json!("v1"));
                c.insert("kind".into(), json!("PersistentVolumeClaim"));
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "replicas": 0, "availableReplicas": 0 });
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_workload(obj, "StatefulSet", None)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_workload(new, "StatefulSet", Some(old));
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
        validate_workload(obj, "DaemonSet", None)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_workload(new, "DaemonSet", Some(old));
        errs.extend(immutable_selector(new, old));
        errs
    }
}

/// The annotation that carries a DaemonSet's template generation in apps/v1.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
