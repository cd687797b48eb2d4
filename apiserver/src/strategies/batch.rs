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
        out.extend(super::warnings::job_spec(obj.get("spec"), "spec"));
        out
    }
    /// WarningsForJobSpec when the generation moves (a spec change).
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        if new.get("spec") == old.get("spec") {
            return Vec::new();
        }
        super::warnings::job_spec(new.get("spec"), "spec")
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
        let mut errs = validate_job_spec(obj, None);
        if obj.pointer("/spec/manualSelector") != Some(&json!(true)) {
            errs.extend(validate_generated_selector(obj, true));
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_job_spec(new, Some(old));
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
            "managedBy",
            "successPolicy",
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
    /// `jobs/status`: upstream's status rules.
    fn validate_subresource_update(
        &self,
        subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Vec<FieldError> {
        match subresource {
            "status" => super::job_rules::status_update_errors(new, old),
            _ => self.validate_update(new, old),
        }
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
fn validate_job_spec(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
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
    errs.extend(super::job_rules::spec_errors(spec));
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
    errs.extend(super::apps::validate_pod_template_on_update(
        obj.pointer("/spec/template"),
        old.and_then(|o| o.pointer("/spec/template")),
        "spec.template",
    ));
    // An Indexed Job's pods are named `<job>-<index>`: the highest index must still make a DNS
    // label (upstream's ValidateJob).
    if spec.get("completionMode").and_then(Value::as_str) == Some("Indexed")
        && let Some(c) = spec
            .get("completions")
            .and_then(Value::as_i64)
            .filter(|c| *c > 0)
    {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let hostname = format!("{name}-{}", c - 1);
        if !k1s_apimachinery::validation::is_dns1123_label(&hostname).is_empty() {
            errs.push(FieldError::invalid(
                "metadata.name",
                name,
                format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
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
        let job = obj.pointer("/spec/jobTemplate/spec");
        out.extend(super::warnings::job_spec(job, "spec.jobTemplate.spec"));
        out.extend(schedule_zone_warning(obj));
        out
    }
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if new.get("spec") != old.get("spec") {
            let job = new.pointer("/spec/jobTemplate/spec");
            out = super::warnings::job_spec(job, "spec.jobTemplate.spec");
        }
        out.extend(schedule_zone_warning(new));
        out
    }
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        // SetDefaults_CronJob: an empty policy is Allow; unset (absent or null) fields filled.
        if spec
            .get("concurrencyPolicy")
            .is_none_or(|p| p.is_null() || p == "")
        {
            spec.insert("concurrencyPolicy".into(), json!("Allow"));
        }
        for (k, v) in [
            ("suspend", json!(false)),
            ("successfulJobsHistoryLimit", json!(3)),
            ("failedJobsHistoryLimit", json!(1)),
        ] {
            if spec.get(k).is_none_or(Value::is_null) {
                spec.insert(k.into(), v);
            }
        }
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
        let mut errs = validate_cron_job(obj, None);
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
    /// As on create but for the name's length (older CronJobs may have longer names), and a
    /// `TZ=` in the schedule kept when the stored schedule already had one.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_cron_job(new, Some(old))
    }
}

/// Upstream's warning for a zone inside the schedule (its path, `spec.spec.schedule`, as
/// upstream writes it).
fn schedule_zone_warning(obj: &Value) -> Option<String> {
    obj.pointer("/spec/schedule")
        .and_then(Value::as_str)
        .filter(|s| s.contains("TZ"))
        .map(|_| {
            "CRON_TZ or TZ used in spec.spec.schedule is not officially supported, see \
             https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
                .to_string()
        })
}

/// Upstream's validateCronJobSpec; `old` is the stored CronJob on update.
fn validate_cron_job(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    let time_zone = spec
        .get("timeZone")
        .filter(|t| !t.is_null())
        .map(|t| t.as_str().unwrap_or_default());
    match spec.get("schedule").and_then(Value::as_str) {
        None | Some("") => errs.push(FieldError::required("spec.schedule", "")),
        Some(s) => {
            let allow_tz = old
                .and_then(|o| o.pointer("/spec/schedule"))
                .and_then(Value::as_str)
                .is_some_and(|o| o.contains("TZ"));
            errs.extend(validate_schedule_format(s, allow_tz, time_zone));
        }
    }
    match spec.get("concurrencyPolicy").and_then(Value::as_str) {
        None | Some("Allow" | "Forbid" | "Replace") => {}
        Some("") => errs.push(FieldError::required("spec.concurrencyPolicy", "")),
        Some(p) => errs.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            p,
            &["Allow", "Forbid", "Replace"],
        )),
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
    errs.extend(super::apps::validate_pod_template_on_update(
        obj.pointer("/spec/jobTemplate/spec/template"),
        old.and_then(|o| o.pointer("/spec/jobTemplate/spec/template")),
        "spec.jobTemplate.spec.template",
    ));
    if let Some(tz) = time_zone {
        errs.extend(validate_time_zone(tz));
    }
    errs
}

/// Upstream's validateScheduleFormat: the schedule as robfig/cron's ParseStandard reads it
/// (a leading `TZ=`/`CRON_TZ=` zone, then the expression), and a zone in the schedule only
/// where the stored one already had it (`allow_tz`), never together with `timeZone`.
fn validate_schedule_format(
    schedule: &str,
    allow_tz: bool,
    time_zone: Option<&str>,
) -> Vec<FieldError> {
    const FIELD: &str = "spec.schedule";
    let mut errs = Vec::new();
    let parsed = match schedule
        .strip_prefix("TZ=")
        .or_else(|| schedule.strip_prefix("CRON_TZ="))
    {
        Some(rest) => {
            let (zone, expr) = rest.split_once(' ').unwrap_or((rest, ""));
            match load_location(zone) {
                Err(e) => Err(format!("provided bad location {zone}: {e}")),
                Ok(()) if expr.trim().is_empty() => Err("empty spec string".to_string()),
                Ok(()) => k1s_apimachinery::cron::parse(expr.trim()).map(drop),
            }
        }
        None => k1s_apimachinery::cron::parse(schedule).map(drop),
    };
    if let Err(e) = parsed {
        errs.push(FieldError::invalid(FIELD, schedule, e));
    }
    if schedule.contains("TZ") {
        if !allow_tz {
            errs.push(FieldError::invalid(
                FIELD,
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        } else if time_zone.is_some() {
            errs.push(FieldError::invalid(
                FIELD,
                schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        }
    }
    errs
}

/// Upstream's validateTimeZone: a non-empty IANA name, made of valid name components, not
/// `Local`, and known to the time zone database.
fn validate_time_zone(tz: &str) -> Vec<FieldError> {
    const FIELD: &str = "spec.timeZone";
    if tz.is_empty() {
        return vec![FieldError::invalid(
            FIELD,
            tz,
            "timeZone must be nil or non-empty string",
        )];
    }
    // IANA's naming rules: components of at most 14 ASCII letters, digits, '.', '-', '_' or
    // '+', never '.', '..' or starting with '-'.
    let bad_component = tz.split('/').any(|part| {
        part == "."
            || part == ".."
            || part.starts_with('-')
            || !(1..=14).contains(&part.len())
            || !part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    });
    if bad_component {
        return vec![FieldError::invalid(
            FIELD,
            tz,
            format!("unknown time zone {tz}"),
        )];
    }
    let mut errs = Vec::new();
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            FIELD,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(e) = load_location(tz) {
        errs.push(FieldError::invalid(FIELD, tz, e));
    }
    errs
}

/// Go's `time.LoadLocation` as far as its answer goes (its error message on failure). Zones
/// come from the system's tz database through jiff (`/usr/share/zoneinfo`, or `TZDIR`);
/// names match exactly, as Go's file lookup does, though jiff's lookup ignores case.
fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(());
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err("time: invalid location name".to_string());
    }
    match jiff::tz::db().get(name) {
        Ok(zone) if zone.iana_name() == Some(name) => Ok(()),
        _ => Err(format!("unknown time zone {name}")),
    }
}

#[cfg(test)]
mod tests {
    //! Cases of upstream's batch `validation_test.go` for CronJob schedules and time zones.
    use super::*;

    fn cron_job(schedule: &str, time_zone: Option<&str>) -> Value {
        let mut spec = json!({ "schedule": schedule, "jobTemplate": { "spec": { "template": {
            "spec": { "restartPolicy": "OnFailure",
                "containers": [{ "name": "c", "image": "busybox" }] } } } } });
        if let Some(tz) = time_zone {
            spec["timeZone"] = json!(tz);
        }
        let mut obj = json!({ "metadata": { "name": "cj", "namespace": "default" }, "spec": spec });
        CronJobs.default(&mut obj);
        obj
    }

    fn strings(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn create_errors(schedule: &str, time_zone: Option<&str>) -> Vec<String> {
        strings(CronJobs.validate(&cron_job(schedule, time_zone)))
    }

    #[test]
    fn cron_job_time_zones_are_validated_as_upstream() {
        for tz in ["America/New_York", "UTC", "Etc/GMT+5", "Europe/Kyiv"] {
            assert!(create_errors("0 * * * *", Some(tz)).is_empty(), "{tz}");
        }
        let unknown =
            |tz: &str| format!("spec.timeZone: Invalid value: {tz:?}: unknown time zone {tz}");
        let explicit =
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones";
        let cases: [(&str, Vec<String>); 9] = [
            (
                "",
                vec![
                    "spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string"
                        .into(),
                ],
            ),
            (
                "Local",
                vec![format!(
                    "spec.timeZone: Invalid value: \"Local\": {explicit}"
                )],
            ),
            (
                "local",
                vec![
                    format!("spec.timeZone: Invalid value: \"local\": {explicit}"),
                    unknown("local"),
                ],
            ),
            ("Mars/Olympus_Mons", vec![unknown("Mars/Olympus_Mons")]),
            ("america/new_york", vec![unknown("america/new_york")]),
            (" America/New_York", vec![unknown(" America/New_York")]),
            ("America/New_York ", vec![unknown("America/New_York ")]),
            ("America/../UTC", vec![unknown("America/../UTC")]),
            (
                "America/Argentina_Buenos_Aires",
                vec![unknown("America/Argentina_Buenos_Aires")],
            ),
        ];
        for (tz, want) in cases {
            assert_eq!(create_errors("0 * * * *", Some(tz)), want, "{tz:?}");
        }
    }

    #[test]
    fn cron_job_schedules_may_carry_a_zone_only_where_they_did() {
        let tz_in_schedule = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead";
        assert_eq!(
            create_errors("TZ=UTC 0 * * * *", None),
            [format!(
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": {tz_in_schedule}"
            )]
        );
        assert_eq!(
            create_errors("CRON_TZ=Nowhere/Land 0 * * * *", None),
            [
                "spec.schedule: Invalid value: \"CRON_TZ=Nowhere/Land 0 * * * *\": provided bad location Nowhere/Land: unknown time zone Nowhere/Land".to_string(),
                format!("spec.schedule: Invalid value: \"CRON_TZ=Nowhere/Land 0 * * * *\": {tz_in_schedule}"),
            ]
        );
        // A stored schedule with a zone may keep one, but not next to timeZone.
        let old = cron_job("TZ=UTC 0 * * * *", None);
        let update = |schedule: &str, tz: Option<&str>| {
            strings(CronJobs.validate_update(&cron_job(schedule, tz), &old))
        };
        assert!(update("CRON_TZ=Europe/Paris 5 * * * *", None).is_empty());
        assert_eq!(
            update("TZ=UTC 0 * * * *", Some("UTC")),
            [
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
            ]
        );
        assert_eq!(
            update("TZ=UTC 0 * * *", None),
            [
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * *\": expected exactly 5 fields, found 4: [0 * * *]"
            ]
        );
        let plain = cron_job("0 * * * *", None);
        assert_eq!(
            strings(CronJobs.validate_update(&cron_job("TZ=UTC 0 * * * *", None), &plain)),
            [format!(
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": {tz_in_schedule}"
            )]
        );
    }

    #[test]
    fn a_zone_in_the_schedule_draws_upstreams_warning() {
        let old = cron_job("TZ=UTC 0 * * * *", None);
        assert_eq!(
            CronJobs.warnings_on_update(&cron_job("CRON_TZ=UTC 5 * * * *", None), &old),
            [
                "CRON_TZ or TZ used in spec.spec.schedule is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
            ]
        );
        assert!(
            CronJobs
                .warnings_on_update(&cron_job("5 * * * *", None), &old)
                .is_empty()
        );
    }

    #[test]
    fn an_indexed_job_name_leaves_room_for_its_highest_index() {
        let job = |name: &str, completions: i64| {
            json!({"metadata": {"name": name}, "spec": {"completionMode": "Indexed",
                "completions": completions, "parallelism": 1,
                "template": {"spec": {"restartPolicy": "Never"}}}})
        };
        let name_errors = |j: &Value| -> Vec<String> {
            validate_job_spec(j, None)
                .iter()
                .filter(|e| e.field == "metadata.name")
                .map(ToString::to_string)
                .collect()
        };
        let long = "j".repeat(61);
        assert!(
            name_errors(&job(&long, 10)).is_empty(),
            "{long}-9 is 63 characters"
        );
        assert_eq!(
            name_errors(&job(&long, 11)),
            [format!(
                "metadata.name: Invalid value: \"{long}\": will not able to create pod with invalid DNS label: {long}-10"
            )]
        );
    }

    #[test]
    fn cron_job_concurrency_policy_is_defaulted_when_empty() {
        let mut obj = json!({ "spec": { "concurrencyPolicy": "", "suspend": null } });
        CronJobs.default(&mut obj);
        assert_eq!(obj["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(obj["spec"]["suspend"], false);
        let mut bad = cron_job("@hourly", None);
        bad["spec"]["concurrencyPolicy"] = json!("Sometimes");
        assert_eq!(
            strings(CronJobs.validate(&bad)),
            [
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\""
            ]
        );
    }
}
