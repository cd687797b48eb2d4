//! Upstream's Job rules beyond the basics in `batch.rs`: `managedBy`, the pod failure policy's
//! rules, the success policy, index lists, and the status rules of `jobs/status` (those of the
//! JobManagedBy gate, on by default in 1.33: a finished Job stays finished, counters only grow,
//! times and conditions stay consistent).

use k1s_apimachinery::FieldError;
use k1s_apimachinery::status::{BadValue, FieldErrorType};
use k1s_apimachinery::validation::{is_dns1123_subdomain, is_qualified_name, regex_error};
use serde_json::Value;

const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
const MAX_ON_EXIT_CODES_VALUES: usize = 255;
const MAX_ON_POD_CONDITIONS_PATTERNS: usize = 20;
const MAX_MANAGED_BY_LENGTH: usize = 63;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const MAX_SUCCESS_POLICY_RULES: usize = 20;

/// `field: Invalid value: detail`, with no value printed (Go's `field.OmitValueType{}`).
fn invalid_omitted(field: &str, detail: impl Into<String>) -> FieldError {
    FieldError::new(FieldErrorType::Invalid, field, BadValue::Omitted, detail)
}

fn int(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

/// Go's `%#v` of an `[]int32`.
fn go_int32s(values: &[Value]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| v.as_i64().unwrap_or_default().to_string())
        .collect();
    format!("[]int32{{{}}}", items.join(", "))
}

/// The spec rules of validateJobSpec that `batch.rs` does not hold: `managedBy`, the pod
/// replacement policy without a failure policy, the failure policy's rules and the success
/// policy.
pub(super) fn spec_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(by) = spec.get("managedBy").and_then(Value::as_str) {
        errs.extend(domain_prefixed_path_errors("spec.managedBy", by));
        if by.len() > MAX_MANAGED_BY_LENGTH {
            errs.push(FieldError::too_long(
                "spec.managedBy",
                Some(MAX_MANAGED_BY_LENGTH),
            ));
        }
    }
    if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) {
        errs.extend(failure_policy_errors(spec));
    } else if let Some(p) = spec.get("podReplacementPolicy").and_then(Value::as_str)
        && !matches!(p, "Failed" | "TerminatingOrFailed")
    {
        errs.push(FieldError::not_supported(
            "spec.podReplacementPolicy",
            p,
            &["Failed", "TerminatingOrFailed"],
        ));
    }
    if let Some(policy) = spec.get("successPolicy").filter(|p| !p.is_null()) {
        if spec.get("completionMode").and_then(Value::as_str) != Some("Indexed") {
            errs.push(FieldError::invalid(
                "spec.successPolicy",
                policy.clone(),
                "requires indexed completion mode",
            ));
        } else {
            errs.extend(success_policy_errors(spec, policy));
        }
    }
    errs
}

/// Upstream's IsDomainPrefixedPath: `<DNS subdomain>/<HTTP path characters>`.
pub(super) fn domain_prefixed_path_errors(field: &str, value: &str) -> Vec<FieldError> {
    const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";
    if value.is_empty() {
        return vec![FieldError::required(field, "")];
    }
    let Some((host, path)) = value
        .split_once('/')
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
    else {
        return vec![FieldError::invalid(
            field,
            value,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<FieldError> = is_dns1123_subdomain(host)
        .into_iter()
        .map(|m| FieldError::invalid(field, host, m))
        .collect();
    let http_path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !path.chars().all(http_path_char) {
        errs.push(FieldError::invalid(
            field,
            path,
            regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        ));
    }
    errs
}

/// validatePodFailurePolicy beyond the rule actions (checked in `batch.rs`).
fn failure_policy_errors(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = spec
        .pointer("/podFailurePolicy/rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        errs.push(FieldError::too_many(
            "spec.podFailurePolicy.rules",
            Some(rules.len()),
            Some(MAX_POD_FAILURE_POLICY_RULES),
        ));
    }
    let containers: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| spec.pointer(&format!("/template/spec/{list}")))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        let path = format!("spec.podFailurePolicy.rules[{i}]");
        let on_exit_codes = rule.get("onExitCodes").filter(|v| !v.is_null());
        let on_conditions = rule
            .get("onPodConditions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if let Some(codes) = on_exit_codes {
            errs.extend(on_exit_codes_errors(
                codes,
                &format!("{path}.onExitCodes"),
                &containers,
            ));
        }
        if !on_conditions.is_empty() {
            errs.extend(on_pod_conditions_errors(
                on_conditions,
                &format!("{path}.onPodConditions"),
            ));
        }
        match (on_exit_codes.is_some(), on_conditions.is_empty()) {
            (true, false) => errs.push(invalid_omitted(
                &path,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            )),
            (false, true) => errs.push(invalid_omitted(
                &path,
                "specifying one of OnExitCodes and OnPodConditions is required",
            )),
            _ => {}
        }
    }
    errs
}

fn on_pod_conditions_errors(patterns: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if patterns.len() > MAX_ON_POD_CONDITIONS_PATTERNS {
        errs.push(FieldError::too_many(
            path,
            Some(patterns.len()),
            Some(MAX_ON_POD_CONDITIONS_PATTERNS),
        ));
    }
    const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
    for (j, pattern) in patterns.iter().enumerate() {
        let type_ = pattern.get("type").and_then(Value::as_str).unwrap_or("");
        for m in is_qualified_name(type_) {
            errs.push(FieldError::invalid(format!("{path}[{j}].type"), type_, m));
        }
        match pattern.get("status").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push(FieldError::required(
                format!("{path}[{j}].status"),
                r#"valid values: ["False" "True" "Unknown"]"#,
            )),
            s if !STATUSES.contains(&s) => errs.push(FieldError::not_supported(
                format!("{path}[{j}].status"),
                s,
                &STATUSES,
            )),
            _ => {}
        }
    }
    errs
}

fn on_exit_codes_errors(codes: &Value, path: &str, containers: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let operator = codes.get("operator").and_then(Value::as_str).unwrap_or("");
    match operator {
        "" => errs.push(FieldError::required(
            format!("{path}.operator"),
            r#"valid values: ["In" "NotIn"]"#,
        )),
        "In" | "NotIn" => {}
        other => errs.push(FieldError::not_supported(
            format!("{path}.operator"),
            other,
            &["In", "NotIn"],
        )),
    }
    if let Some(name) = codes.get("containerName").and_then(Value::as_str)
        && !containers.contains(&name)
    {
        errs.push(FieldError::invalid(
            format!("{path}.containerName"),
            name,
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values = codes
        .get("values")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let values_path = format!("{path}.values");
    if values.is_empty() {
        let shown = if codes.get("values").is_some_and(Value::is_array) {
            "[]int32{}".to_string()
        } else {
            "[]int32(nil)".to_string()
        };
        errs.push(FieldError::invalid_raw(
            &values_path,
            shown,
            "at least one value is required",
        ));
    } else if values.len() > MAX_ON_EXIT_CODES_VALUES {
        errs.push(FieldError::too_many(
            &values_path,
            Some(values.len()),
            Some(MAX_ON_EXIT_CODES_VALUES),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut ordered = true;
    for (j, v) in values.iter().enumerate() {
        let code = v.as_i64().unwrap_or_default();
        if operator == "In" && code == 0 {
            errs.push(FieldError::invalid(
                format!("{values_path}[{j}]"),
                code,
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(code) {
            errs.push(FieldError::duplicate(format!("{values_path}[{j}]"), code));
        }
        if j > 0 && values[j - 1].as_i64().unwrap_or_default() > code {
            ordered = false;
        }
    }
    if !ordered {
        errs.push(FieldError::invalid_raw(
            &values_path,
            go_int32s(values),
            "must be ordered",
        ));
    }
    errs
}

fn success_policy_errors(spec: &Value, policy: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = policy
        .get("rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let path = "spec.successPolicy.rules";
    if rules.is_empty() {
        errs.push(FieldError::required(
            path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_SUCCESS_POLICY_RULES {
        errs.push(FieldError::too_many(
            path,
            Some(rules.len()),
            Some(MAX_SUCCESS_POLICY_RULES),
        ));
    }
    let completions = int(spec, "completions").unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        let rule_path = format!("{path}[{i}]");
        let indexes = rule.get("succeededIndexes").and_then(Value::as_str);
        let count = int(rule, "succeededCount");
        if indexes.is_none() && count.is_none() {
            errs.push(FieldError::required(
                &rule_path,
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(indexes) = indexes {
            let field = format!("{rule_path}.succeededIndexes");
            if indexes.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                errs.push(FieldError::too_long(
                    &field,
                    Some(MAX_SUCCEEDED_INDEXES_LENGTH),
                ));
            }
            match indexes_total(indexes, completions) {
                Ok(n) => total = n,
                Err(e) => errs.push(FieldError::invalid(
                    &field,
                    indexes,
                    format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(count) = count {
            let field = format!("{rule_path}.succeededCount");
            if count < 0 {
                errs.push(FieldError::invalid(
                    &field,
                    count,
                    "must be greater than or equal to 0",
                ));
            }
            if count > completions {
                errs.push(FieldError::invalid(
                    &field,
                    count,
                    format!(
                        "must be less than or equal to {completions} (the number of specified completions)"
                    ),
                ));
            }
            if indexes.is_some() && count > total {
                errs.push(FieldError::invalid(
                    &field,
                    count,
                    format!(
                        "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                    ),
                ));
            }
        }
    }
    errs
}

/// Upstream's parseIndexInterval: `x` or `x-y` with `x < y < completions`.
fn index_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            crate::auth::authn::go_quote(interval)
        ));
    }
    let parse = |s: &str| -> Result<i64, String> {
        let n: i64 = s.parse().map_err(|_| {
            format!(
                "cannot convert string to integer for index: {}",
                crate::auth::authn::go_quote(s)
            )
        })?;
        if n >= completions {
            return Err(format!(
                "too large index: {}",
                crate::auth::authn::go_quote(s)
            ));
        }
        Ok(n)
    };
    let x = parse(limits[0])?;
    let Some(upper) = limits.get(1) else {
        return Ok((x, x));
    };
    let y = parse(upper)?;
    if x >= y {
        return Err(format!("non-increasing order, previous: {x}, current: {y}"));
    }
    Ok((x, y))
}

/// Upstream's validateIndexesFormat: ordered, comma-separated intervals; how many indexes
/// they name.
fn indexes_total(indexes: &str, completions: i64) -> Result<i64, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in indexes.split(',') {
        let (x, y) = index_interval(interval, completions)?;
        if let Some(prev) = last
            && prev >= x
        {
            return Err(format!(
                "non-increasing order, previous: {prev}, current: {x}"
            ));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// Upstream's validateFailedIndexesNotOverlapCompleted (unparseable intervals are skipped:
/// the format check reports them).
fn overlap_error(completed: &str, failed: &str, completions: i64) -> Option<String> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let parse = |s: &str| -> Vec<(i64, i64)> {
        s.split(',')
            .filter_map(|i| index_interval(i, completions).ok())
            .collect()
    };
    let (done, bad) = (parse(completed), parse(failed));
    let (mut c, mut f) = (0, 0);
    while c < done.len() && f < bad.len() {
        let ((cx, cy), (fx, fy)) = (done[c], bad[f]);
        if cx <= fy && fx <= cy {
            return Some(format!(
                "failedIndexes and completedIndexes overlap at index: {}",
                cx.max(fx)
            ));
        }
        if cx <= fx {
            c += 1;
        } else {
            f += 1;
        }
    }
    None
}

fn conditions(job: &Value) -> &[Value] {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn is_true(job: &Value, type_: &str) -> bool {
    conditions(job).iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(type_)
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

fn finished(job: &Value) -> bool {
    is_true(job, "Complete") || is_true(job, "Failed")
}

fn status<'a>(job: &'a Value, field: &str) -> Option<&'a Value> {
    job.pointer(&format!("/status/{field}"))
        .filter(|v| !v.is_null())
}

fn status_int(job: &Value, field: &str) -> i64 {
    status(job, field)
        .and_then(Value::as_i64)
        .unwrap_or_default()
}

/// A `metav1.Time` as Go prints it in a field error (`time.Time.String`, in UTC).
fn go_time(v: &Value) -> String {
    v.as_str()
        .and_then(k1s_apimachinery::gofmt::time_string)
        .unwrap_or_else(|| v.to_string())
}

fn time_of(job: &Value, field: &str) -> Option<jiff::Timestamp> {
    status(job, field)?.as_str()?.parse().ok()
}

/// Go's `%#v` of a `*batch.UncountedTerminatedPods` (dereferenced).
fn go_uncounted(uncounted: &Value) -> String {
    let list = |field: &str| match uncounted.get(field).and_then(Value::as_array) {
        None => "[]types.UID(nil)".to_string(),
        Some(uids) => {
            let items: Vec<String> = uids
                .iter()
                .map(|u| crate::auth::authn::go_quote(u.as_str().unwrap_or("")))
                .collect();
            format!("[]types.UID{{{}}}", items.join(", "))
        }
    };
    format!(
        "batch.UncountedTerminatedPods{{Succeeded:{}, Failed:{}}}",
        list("succeeded"),
        list("failed")
    )
}

/// Upstream's ValidateJobUpdateStatus with the options of jobStatusStrategy under the
/// JobManagedBy gate: most rules apply only where the fields they look at changed, so an
/// update unrelated to a rule a stored status breaks still goes through.
pub(super) fn status_update_errors(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &new["spec"];
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    let completions = int(spec, "completions");
    let changed = |field: &str| status(new, field) != status(old, field);
    let flipped = |f: &dyn Fn(&Value) -> bool| f(new) != f(old);
    let finished_changed = flipped(&finished);
    let complete_changed = flipped(&|j| is_true(j, "Complete"));
    let failed_changed = flipped(&|j| is_true(j, "Failed"));
    let failure_target_changed = flipped(&|j| is_true(j, "FailureTarget"));
    let completed_indexes_changed = changed("completedIndexes");
    let failed_indexes_changed = changed("failedIndexes");
    let start_changed = changed("startTime");
    let completion_changed = changed("completionTime");

    // validateJobStatus
    for field in ["active", "succeeded", "failed", "ready", "terminating"] {
        if let Some(n) = status(new, field).and_then(Value::as_i64)
            && n < 0
        {
            errs.push(FieldError::invalid(
                format!("status.{field}"),
                n,
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(uncounted) = status(new, "uncountedTerminatedPods") {
        let mut seen = std::collections::HashSet::new();
        for list in ["succeeded", "failed"] {
            let uids = uncounted
                .get(list)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (i, uid) in uids.iter().enumerate() {
                let path = format!("status.uncountedTerminatedPods.{list}[{i}]");
                let uid = uid.as_str().unwrap_or("");
                if uid.is_empty() {
                    errs.push(FieldError::invalid(path, uid, "must not be empty"));
                } else if !seen.insert(uid) {
                    errs.push(FieldError::duplicate(path, uid));
                }
            }
        }
    }
    let complete = is_true(new, "Complete");
    if (complete_changed || failed_changed) && complete && is_true(new, "Failed") {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if (complete_changed || failure_target_changed) && complete && is_true(new, "FailureTarget") {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let completion_time = status(new, "completionTime");
    if complete_changed || completion_changed {
        if let Some(t) = completion_time
            && !complete
        {
            errs.push(FieldError::invalid_raw(
                "status.completionTime",
                go_time(t),
                "cannot set completionTime when there is no Complete=True condition",
            ));
        }
        if completion_time.is_none() && complete {
            errs.push(FieldError::required(
                "status.completionTime",
                "completionTime is required for Complete jobs",
            ));
        }
    }
    if (start_changed || completion_changed)
        && let (Some(start), Some(end)) =
            (time_of(new, "startTime"), time_of(new, "completionTime"))
        && end < start
    {
        errs.push(FieldError::invalid_raw(
            "status.completionTime",
            go_time(&new["status"]["completionTime"]),
            "completionTime cannot be set before startTime",
        ));
    }
    let is_finished = finished(new);
    if (finished_changed || changed("active")) && is_finished && status_int(new, "active") > 0 {
        errs.push(FieldError::invalid(
            "status.active",
            status_int(new, "active"),
            "active>0 is invalid for finished job",
        ));
    }
    if (finished_changed || start_changed) && is_finished && status(new, "startTime").is_none() {
        errs.push(FieldError::required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    if (finished_changed || changed("uncountedTerminatedPods"))
        && is_finished
        && let Some(uncounted) = status(new, "uncountedTerminatedPods")
        && ["succeeded", "failed"].iter().any(|l| {
            uncounted
                .get(*l)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        })
    {
        errs.push(FieldError::invalid_raw(
            "status.uncountedTerminatedPods",
            go_uncounted(uncounted),
            "uncountedTerminatedPods needs to be empty for finished job",
        ));
    }
    let completed_indexes = status(new, "completedIndexes")
        .and_then(Value::as_str)
        .unwrap_or("");
    let failed_indexes = status(new, "failedIndexes").and_then(Value::as_str);
    let per_index = spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    if completed_indexes_changed
        && let Some(c) = completions
        && let Err(e) = indexes_total(completed_indexes, c)
    {
        errs.push(FieldError::invalid(
            "status.completedIndexes",
            completed_indexes,
            format!("error parsing completedIndexes: {e}"),
        ));
    }
    if failed_indexes_changed
        && per_index
        && let (Some(c), Some(failed)) = (completions, failed_indexes)
        && let Err(e) = indexes_total(failed, c)
    {
        errs.push(FieldError::invalid(
            "status.failedIndexes",
            failed,
            format!("error parsing failedIndexes: {e}"),
        ));
    }
    if completed_indexes_changed && !completed_indexes.is_empty() && !indexed {
        errs.push(FieldError::invalid(
            "status.completedIndexes",
            completed_indexes,
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if failed_indexes_changed
        && !per_index
        && let Some(failed) = failed_indexes
    {
        errs.push(FieldError::invalid(
            "status.failedIndexes",
            failed,
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        ));
    }
    if (failed_indexes_changed || completed_indexes_changed)
        && let (Some(c), Some(failed)) = (completions, failed_indexes)
        && let Some(e) = overlap_error(completed_indexes, failed, c)
    {
        errs.push(FieldError::invalid("status.failedIndexes", failed, e));
    }
    let criteria_met = is_true(new, "SuccessCriteriaMet");
    if criteria_met && is_true(new, "Failed") {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if criteria_met && is_true(new, "FailureTarget") {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    if spec.get("successPolicy").is_some_and(|p| !p.is_null()) && !criteria_met && complete {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }

    // validateJobStatusUpdate
    for t in ["Failed", "Complete", "FailureTarget"] {
        if is_true(old, t) && !is_true(new, t) {
            errs.push(invalid_omitted(
                "status.conditions",
                format!("cannot disable the terminal {t}=True condition"),
            ));
        }
    }
    if status_int(new, "failed") < status_int(old, "failed") {
        errs.push(FieldError::invalid(
            "status.failed",
            status_int(new, "failed"),
            "cannot decrease the failed counter",
        ));
    }
    // An Indexed Job with as many completions as parallelism may be scaled down.
    let scalable = indexed && completions == int(spec, "parallelism");
    if !scalable && status_int(new, "succeeded") < status_int(old, "succeeded") {
        errs.push(FieldError::invalid(
            "status.succeeded",
            status_int(new, "succeeded"),
            "cannot decrease the succeeded counter",
        ));
    }
    if let (Some(t), Some(_)) = (completion_time, status(old, "completionTime"))
        && completion_changed
    {
        errs.push(FieldError::invalid_raw(
            "status.completionTime",
            go_time(t),
            "completionTime cannot be mutated",
        ));
    }
    // A Job resumed from suspension gets a new start time (upstream's fix for its issue
    // 134521, back-ported to 1.33).
    let suspended = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    if start_changed
        && status(old, "startTime").is_some()
        && !suspended
        && !is_true(old, "Suspended")
    {
        errs.push(FieldError::required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    if is_true(old, "SuccessCriteriaMet") && !criteria_met {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if is_true(old, "Complete") && !is_true(old, "SuccessCriteriaMet") && criteria_met {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    errs
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "j"}, "spec": spec, "status": status})
    }

    fn cond(t: &str) -> Value {
        json!({"type": t, "status": "True"})
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_finished_job_stays_finished_and_consistent() {
        let spec = json!({"completions": 1, "parallelism": 1, "completionMode": "NonIndexed"});
        let running = job(
            spec.clone(),
            json!({"active": 1, "startTime": "2026-01-01T00:00:00Z"}),
        );
        // The job controller's own path: SuccessCriteriaMet, then Complete with a time.
        let met = job(
            spec.clone(),
            json!({"active": 0, "succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
                   "conditions": [cond("SuccessCriteriaMet")]}),
        );
        assert!(status_update_errors(&met, &running).is_empty());
        let done = job(
            spec.clone(),
            json!({"active": 0, "succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
                   "completionTime": "2026-01-01T00:01:00Z",
                   "conditions": [cond("SuccessCriteriaMet"), cond("Complete")]}),
        );
        assert!(status_update_errors(&done, &met).is_empty());

        let bad = job(
            spec.clone(),
            json!({"active": 2, "succeeded": 0, "startTime": "2026-01-01T00:00:00Z",
                   "completionTime": "2025-12-31T00:00:00Z",
                   "conditions": [cond("Complete"), cond("Failed")]}),
        );
        assert_eq!(
            messages(status_update_errors(&bad, &running)),
            [
                "status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions",
                "status.completionTime: Invalid value: 2025-12-31 00:00:00 +0000 UTC: completionTime cannot be set before startTime",
                "status.active: Invalid value: 2: active>0 is invalid for finished job",
            ]
        );
        let reopened = job(
            spec.clone(),
            json!({"succeeded": 0, "startTime": "2026-01-01T00:00:00Z",
                   "completionTime": "2026-01-01T00:02:00Z"}),
        );
        assert_eq!(
            messages(status_update_errors(&reopened, &done)),
            [
                "status.completionTime: Invalid value: 2026-01-01 00:02:00 +0000 UTC: cannot set completionTime when there is no Complete=True condition",
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
                "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
                "status.completionTime: Invalid value: 2026-01-01 00:02:00 +0000 UTC: completionTime cannot be mutated",
                "status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition",
            ]
        );
        let uncounted = job(
            spec.clone(),
            json!({"active": -1, "startTime": "2026-01-01T00:00:00Z",
                   "uncountedTerminatedPods": {"succeeded": ["a", ""], "failed": ["a"]}}),
        );
        assert_eq!(
            messages(status_update_errors(&uncounted, &running)),
            [
                "status.active: Invalid value: -1: must be greater than or equal to 0",
                "status.uncountedTerminatedPods.succeeded[1]: Invalid value: \"\": must not be empty",
                "status.uncountedTerminatedPods.failed[0]: Duplicate value: \"a\"",
            ]
        );
    }

    #[test]
    fn start_time_changes_only_on_resume() {
        let spec = json!({"completions": 1, "parallelism": 1, "suspend": false});
        let old = job(spec.clone(), json!({"startTime": "2026-01-01T00:00:00Z"}));
        let moved = job(spec.clone(), json!({"startTime": "2026-01-02T00:00:00Z"}));
        assert_eq!(
            messages(status_update_errors(&moved, &old)),
            ["status.startTime: Required value: startTime cannot be removed for unsuspended job"]
        );
        let mut was_suspended = old.clone();
        was_suspended["status"]["conditions"] = json!([cond("Suspended")]);
        assert!(status_update_errors(&moved, &was_suspended).is_empty());
    }

    #[test]
    fn indexes_are_parsed_as_upstream() {
        assert_eq!(indexes_total("0,2-4,7", 8), Ok(5));
        assert_eq!(indexes_total("", 3), Ok(0));
        assert_eq!(
            indexes_total("1-2,2", 5),
            Err("non-increasing order, previous: 2, current: 2".into())
        );
        assert_eq!(indexes_total("9", 5), Err("too large index: \"9\"".into()));
        assert_eq!(
            indexes_total("a", 5),
            Err("cannot convert string to integer for index: \"a\"".into())
        );
        assert_eq!(
            indexes_total("1-2-3", 5),
            Err("the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'".into())
        );
        assert_eq!(
            overlap_error("0-3", "3,5", 8),
            Some("failedIndexes and completedIndexes overlap at index: 3".into())
        );
        assert_eq!(overlap_error("0-2", "3,5", 8), None);
    }

    #[test]
    fn spec_rules_of_policies_and_managed_by() {
        let spec = json!({
            "completions": 3, "completionMode": "Indexed", "managedBy": "k8s",
            "successPolicy": {"rules": [{"succeededIndexes": "0-1", "succeededCount": 3}]},
            "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3, 0, 2, 2]},
                 "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "Ignore"}
            ]},
            "template": {"spec": {"containers": [{"name": "c"}]}}
        });
        assert_eq!(
            messages(spec_errors(&spec)),
            [
                "spec.managedBy: Invalid value: \"k8s\": must be a domain-prefixed path (such as \"acme.io/foo\")",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 2",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{3, 0, 2, 2}: must be ordered",
                "spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
                "spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)",
            ]
        );
        let fine = json!({"completions": 3, "completionMode": "Indexed",
                          "managedBy": "example.com/queue",
                          "successPolicy": {"rules": [{"succeededCount": 1}]}});
        assert!(spec_errors(&fine).is_empty());
        let non_indexed = json!({"successPolicy": {"rules": [{"succeededCount": 1}]}});
        assert_eq!(
            messages(spec_errors(&non_indexed)),
            [
                "spec.successPolicy: Invalid value: {\"rules\":[{\"succeededCount\":1}]}: requires indexed completion mode"
            ]
        );
    }
}
