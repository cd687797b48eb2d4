//! Strategies of batch/v1 kinds: Jobs (generated selector and labels, upstream's defaults and
//! the validations users hit) and CronJobs.

use k1s_apimachinery::FieldError;
use serde_json::{Map, Value, json};

use super::apps::{default_pod_template, validate_selector};
use crate::registry::Strategy;

/// The labels a Job without a manual selector puts on its pods (upstream's batch constants).
const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];
const SELECTOR_LABEL: &str = "batch.kubernetes.io/controller-uid";

pub struct Jobs;
impl Strategy for Jobs {
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
        // Completions default only with parallelism (a work-queue Job sets parallelism alone).
        if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
            spec.insert("completions".into(), json!(1));
        }
        spec.entry("parallelism").or_insert(json!(1));
        let per_index = spec
            .get("backoffLimitPerIndex")
            .is_some_and(|v| !v.is_null());
        spec.entry("backoffLimit")
            .or_insert(json!(if per_index { i32::MAX } else { 6 }));
        spec.entry("completionMode").or_insert(json!("NonIndexed"));
        spec.entry("suspend").or_insert(json!(false));
        let has_failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
        spec.entry("podReplacementPolicy")
            .or_insert(json!(if has_failure_policy {
                "Failed"
            } else {
                "TerminatingOrFailed"
            }));
        spec.entry("manualSelector").or_insert(json!(false));
        default_failure_policy(spec);
        if let Some(t) = spec.get_mut("template") {
            default_pod_template(t);
        }
        copy_template_labels(obj);
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        if obj.pointer("/spec/manualSelector") != Some(&json!(true)) {
            generate_selector(obj);
        }
        obj["status"] = json!({});
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_job_spec(obj);
        if obj.pointer("/spec/manualSelector") != Some(&json!(true)) {
            errs.extend(validate_generated_selector(obj, true));
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_job_spec(new);
        if new.pointer("/spec/manualSelector") != Some(&json!(true)) {
            // Jobs created before the prefixed labels existed keep validating without them.
            let prefixed = JOB_NAME_LABELS[1..]
                .iter()
                .chain(&CONTROLLER_UID_LABELS[1..])
                .all(|k| template_label(old, k).is_some());
            errs.extend(validate_generated_selector(new, prefixed));
        }
        for field in [
            "selector",
            "completionMode",
            "podFailurePolicy",
            "backoffLimitPerIndex",
        ] {
            let (a, b) = (new["spec"].get(field), old["spec"].get(field));
            if a != b {
                errs.push(FieldError::invalid(
                    format!("spec.{field}"),
                    a.cloned().unwrap_or(Value::Null),
                    "field is immutable",
                ));
            }
        }
        if new["spec"].get("completions") != old["spec"].get("completions")
            && !elastic_indexed_scale(new, old)
        {
            errs.push(FieldError::invalid(
                "spec.completions",
                new["spec"]
                    .get("completions")
                    .cloned()
                    .unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        if !template_update_allowed(new, old) {
            errs.push(FieldError::invalid(
                "spec.template",
                new.pointer("/spec/template")
                    .cloned()
                    .unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        errs
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.successful"]
    }
}

/// `onPodConditions[*].status` defaults to `True` (SetDefaults_PodFailurePolicyOnPodConditionsPattern).
fn default_failure_policy(spec: &mut Map<String, Value>) {
    let rules = spec
        .get_mut("podFailurePolicy")
        .and_then(|p| p.get_mut("rules"))
        .and_then(Value::as_array_mut);
    for rule in rules.into_iter().flatten() {
        let patterns = rule
            .get_mut("onPodConditions")
            .and_then(Value::as_array_mut);
        for p in patterns.into_iter().flatten() {
            if let Some(p) = p.as_object_mut() {
                p.entry("status").or_insert(json!("True"));
            }
        }
    }
}

/// SetDefaults_Job: a Job without labels takes its pod template's labels. Upstream applies it
/// on every decode, so after creation the Job also carries the generated labels.
fn copy_template_labels(obj: &mut Value) {
    let has_labels = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_some_and(|l| !l.is_empty());
    if has_labels {
        return;
    }
    if let Some(labels) = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|l| !l.is_empty()))
        .cloned()
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("labels".into(), labels);
    }
}

/// Upstream's generateSelector: template labels for the Job's name and UID (kept when the user
/// set them; validation rejects wrong values) and a selector on the UID.
fn generate_selector(obj: &mut Value) {
    let name = obj.pointer("/metadata/name").cloned().unwrap_or(json!(""));
    let uid = obj.pointer("/metadata/uid").cloned().unwrap_or(json!(""));
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let template = spec.entry("template").or_insert(json!({}));
    if !template.get("metadata").is_some_and(Value::is_object) {
        template["metadata"] = json!({});
    }
    if !template["metadata"]
        .get("labels")
        .is_some_and(Value::is_object)
    {
        template["metadata"]["labels"] = json!({});
    }
    if let Some(labels) = template["metadata"]["labels"].as_object_mut() {
        for k in JOB_NAME_LABELS {
            labels.entry(k).or_insert(name.clone());
        }
        for k in CONTROLLER_UID_LABELS {
            labels.entry(k).or_insert(uid.clone());
        }
    }
    let selector = spec.entry("selector").or_insert(json!({}));
    if !selector.is_object() {
        return; // validation reports it
    }
    if !selector.get("matchLabels").is_some_and(Value::is_object) {
        selector["matchLabels"] = json!({});
    }
    if let Some(m) = selector["matchLabels"].as_object_mut() {
        m.entry(SELECTOR_LABEL).or_insert(uid);
    }
    // The generated labels reach the Job too when it has none (upstream's decode defaulting).
    copy_template_labels(obj);
}

fn template_label<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.pointer("/spec/template/metadata/labels")
        .and_then(|l| l.get(key))
}

/// Upstream's validateGeneratedSelector: the template carries the Job's name and UID labels and
/// the selector is exactly the generated one.
fn validate_generated_selector(obj: &Value, require_prefixed: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if uid.is_empty() {
        errs.push(FieldError::required("metadata.uid", ""));
    }
    let mut expected: Vec<(&str, &str)> =
        vec![(CONTROLLER_UID_LABELS[0], uid), (JOB_NAME_LABELS[0], name)];
    if require_prefixed {
        expected.push((CONTROLLER_UID_LABELS[1], uid));
        expected.push((JOB_NAME_LABELS[1], name));
    }
    for (key, want) in expected {
        let path = format!("spec.template.metadata.labels[{key}]");
        match template_label(obj, key).and_then(Value::as_str) {
            None => errs.push(FieldError::required(path, "")),
            Some(v) if v != want => {
                errs.push(FieldError::invalid(path, v, format!("must be '{want}'")))
            }
            Some(_) => {}
        }
    }
    let selector = obj.pointer("/spec/selector");
    let expected_selector = json!({ "matchLabels": { SELECTOR_LABEL: uid } });
    let generated = selector.is_some_and(|s| {
        s.get("matchLabels") == expected_selector.get("matchLabels")
            && s.get("matchExpressions")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
    });
    if !generated {
        errs.push(FieldError::invalid(
            "spec.selector",
            selector.cloned().unwrap_or(Value::Null),
            "`selector` not auto-generated",
        ));
    }
    errs
}

/// ValidateJobSpec: counts, selector, template labels and restart policy.
fn validate_job_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(v) = spec.get(field).filter(|v| !v.is_null()) {
            let ok = v.as_i64().is_some_and(|n| {
                n >= 0 && (field != "activeDeadlineSeconds" || n > 0) && n <= i32::MAX as i64
            });
            if !ok {
                let rule = if field == "activeDeadlineSeconds" {
                    "must be greater than 0"
                } else {
                    "must be greater than or equal to 0"
                };
                errs.push(FieldError::invalid(
                    format!("spec.{field}"),
                    v.clone(),
                    rule,
                ));
            }
        }
    }
    match spec.get("completionMode").and_then(Value::as_str) {
        None | Some("NonIndexed") => {}
        Some("Indexed") => {
            if spec.get("completions").is_none_or(Value::is_null) {
                errs.push(FieldError::required(
                    "spec.completions",
                    "when completion mode is Indexed",
                ));
            }
            if spec
                .get("parallelism")
                .and_then(Value::as_i64)
                .is_some_and(|p| p > 100_000)
            {
                errs.push(FieldError::invalid(
                    "spec.parallelism",
                    spec["parallelism"].clone(),
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            "spec.completionMode",
            other,
            &["NonIndexed", "Indexed"],
        )),
    }
    errs.extend(validate_per_index(spec));
    errs.extend(validate_selector(obj, true));
    let has_failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
    errs.extend(validate_restart_policy(
        obj.pointer("/spec/template/spec/restartPolicy"),
        "spec.template.spec.restartPolicy",
        has_failure_policy,
    ));
    if has_failure_policy
        && let Some(p) = spec.get("podReplacementPolicy").and_then(Value::as_str)
        && p != "Failed"
    {
        errs.push(FieldError::not_supported(
            "spec.podReplacementPolicy",
            p,
            &["Failed"],
        ));
    }
    errs.extend(super::apps::validate_pod_template(
        obj.pointer("/spec/template"),
        "spec.template",
    ));
    errs
}

/// Upstream's rules for `backoffLimitPerIndex` / `maxFailedIndexes` (Indexed Jobs only, with
/// caps that bound `status.failedIndexes`), and that a `FailIndex` rule needs the former.
fn validate_per_index(spec: &Value) -> Vec<FieldError> {
    const MAX_FAILED_INDEXES: i64 = 100_000;
    const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
    const LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
    let mut errs = Vec::new();
    let int = |f: &str| spec.get(f).and_then(Value::as_i64);
    let per_index = int("backoffLimitPerIndex");
    let max_failed = int("maxFailedIndexes");
    let completions = int("completions");
    let parallelism = int("parallelism");
    if max_failed.is_some() && per_index.is_none() {
        errs.push(FieldError::required(
            "spec.backoffLimitPerIndex",
            "when maxFailedIndexes is specified",
        ));
    }
    if spec.get("completionMode").and_then(Value::as_str) == Some("Indexed") {
        if let (Some(c), Some(m)) = (completions, max_failed)
            && m > c
        {
            errs.push(FieldError::invalid(
                "spec.maxFailedIndexes",
                m,
                "must be less than or equal to completions",
            ));
        }
        if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES) {
            errs.push(FieldError::invalid(
                "spec.maxFailedIndexes",
                m,
                format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
            ));
        }
        if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index.is_some() {
            if max_failed.is_none() {
                errs.push(FieldError::required(
                    "spec.maxFailedIndexes",
                    format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
                ));
            }
            let detail = format!(
                "must be less than or equal to {LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
            );
            if let Some(p) = parallelism.filter(|p| *p > LIMIT_FOR_HIGH_COMPLETIONS) {
                errs.push(FieldError::invalid("spec.parallelism", p, detail.clone()));
            }
            if let Some(m) = max_failed.filter(|m| *m > LIMIT_FOR_HIGH_COMPLETIONS) {
                errs.push(FieldError::invalid("spec.maxFailedIndexes", m, detail));
            }
        }
    } else {
        for (field, v) in [
            ("backoffLimitPerIndex", per_index),
            ("maxFailedIndexes", max_failed),
        ] {
            if let Some(v) = v {
                errs.push(FieldError::invalid(
                    format!("spec.{field}"),
                    v,
                    "requires indexed completion mode",
                ));
            }
        }
    }
    let rules = spec
        .pointer("/podFailurePolicy/rules")
        .and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let path = format!("spec.podFailurePolicy.rules[{i}].action");
        match rule.get("action").and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required(
                path,
                r#"valid values: ["Count" "FailIndex" "FailJob" "Ignore"]"#,
            )),
            Some("FailIndex") if per_index.is_none() => errs.push(FieldError::invalid(
                path,
                "FailIndex",
                "requires the backoffLimitPerIndex to be set",
            )),
            Some("Count" | "FailIndex" | "FailJob" | "Ignore") => {}
            Some(other) => errs.push(FieldError::not_supported(
                path,
                other,
                &["Count", "FailIndex", "FailJob", "Ignore"],
            )),
        }
    }
    errs
}

/// A Job's pods restart OnFailure or Never (only Never with a pod failure policy).
fn validate_restart_policy(
    policy: Option<&Value>,
    path: &str,
    has_failure_policy: bool,
) -> Option<FieldError> {
    match policy.and_then(Value::as_str) {
        Some("OnFailure") if has_failure_policy => Some(FieldError::invalid(
            path,
            "OnFailure",
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        Some("OnFailure" | "Never") => None,
        None | Some("" | "Always") => Some(FieldError::required(
            path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        Some(other) => Some(FieldError::not_supported(
            path,
            other,
            &["OnFailure", "Never"],
        )),
    }
}

/// An Indexed Job may change completions together with parallelism (ElasticIndexedJob, on).
fn elastic_indexed_scale(new: &Value, old: &Value) -> bool {
    new.pointer("/spec/completionMode") == Some(&json!("Indexed"))
        && new.pointer("/spec/completions") == new.pointer("/spec/parallelism")
        && old.pointer("/spec/completions") == old.pointer("/spec/parallelism")
}

/// The pod template is immutable, except its scheduling directives while the Job is suspended
/// and has never started (upstream's AllowMutableSchedulingDirectives).
fn template_update_allowed(new: &Value, old: &Value) -> bool {
    let (Some(a), Some(b)) = (new.pointer("/spec/template"), old.pointer("/spec/template")) else {
        return new.pointer("/spec/template") == old.pointer("/spec/template");
    };
    if a == b {
        return true;
    }
    let suspended = old.pointer("/spec/suspend") == Some(&json!(true));
    let never_started = old.pointer("/status/startTime").is_none_or(Value::is_null);
    if !(suspended && never_started) {
        return false;
    }
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("labels");
            m.remove("annotations");
        }
        if let Some(s) = t.get_mut("spec").and_then(Value::as_object_mut) {
            for k in ["nodeSelector", "tolerations", "schedulingGates"] {
                s.remove(k);
            }
            if let Some(aff) = s.get_mut("affinity").and_then(Value::as_object_mut) {
                aff.remove("nodeAffinity");
            }
        }
        t
    };
    strip(a) == strip(b)
}

pub struct CronJobs;
impl Strategy for CronJobs {
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut out: Vec<String> = super::warnings::dns_label_name(obj, "Pod names and hostnames")
            .into_iter()
            .collect();
        if let Some(t) = obj.pointer("/spec/jobTemplate/spec/template") {
            out.extend(super::warnings::pod(t, "spec.jobTemplate.spec.template."));
        }
        out
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        super::warnings::template_on_update(
            new,
            old,
            "/spec",
            "/spec/jobTemplate/spec/template",
            "spec.jobTemplate.spec.template.",
        )
    }
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("concurrencyPolicy").or_insert(json!("Allow"));
        spec.entry("suspend").or_insert(json!(false));
        spec.entry("successfulJobsHistoryLimit").or_insert(json!(3));
        spec.entry("failedJobsHistoryLimit").or_insert(json!(1));
        // The Job template's pod spec is defaulted; the Job template itself is not a Job.
        if let Some(job_spec) = spec.get_mut("jobTemplate").and_then(|t| t.get_mut("spec")) {
            if let Some(s) = job_spec.as_object_mut() {
                default_failure_policy(s);
            }
            if let Some(t) = job_spec.get_mut("template") {
                default_pod_template(t);
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_cron_job(obj);
        // Job names are the CronJob's name and an 11-character suffix.
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name.len() > 52 {
            errs.push(FieldError::invalid(
                "metadata.name",
                name,
                "must be no more than 52 characters",
            ));
        }
        errs
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        validate_cron_job(new)
    }
}

fn validate_cron_job(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    match spec.get("schedule").and_then(Value::as_str) {
        None | Some("") => errs.push(FieldError::required("spec.schedule", "")),
        Some(s) if s.contains("TZ") => errs.push(FieldError::invalid(
            "spec.schedule",
            s,
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        )),
        Some(s) => {
            if let Err(e) = k1s_apimachinery::cron::parse(s) {
                errs.push(FieldError::invalid("spec.schedule", s, e));
            }
        }
    }
    if let Some(p) = spec.get("concurrencyPolicy").and_then(Value::as_str)
        && !["Allow", "Forbid", "Replace"].contains(&p)
    {
        errs.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            p,
            &["Allow", "Forbid", "Replace"],
        ));
    }
    for field in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        if let Some(v) = spec.get(field).filter(|v| !v.is_null())
            && v.as_i64().is_none_or(|n| n < 0)
        {
            errs.push(FieldError::invalid(
                format!("spec.{field}"),
                v.clone(),
                "must be greater than or equal to 0",
            ));
        }
    }
    errs.extend(validate_restart_policy(
        obj.pointer("/spec/jobTemplate/spec/template/spec/restartPolicy"),
        "spec.jobTemplate.spec.template.spec.restartPolicy",
        false,
    ));
    errs.extend(super::apps::validate_pod_template(
        obj.pointer("/spec/jobTemplate/spec/template"),
        "spec.jobTemplate.spec.template",
    ));
    errs
}
