//! Create and update validation of admission webhook configurations, as upstream's
//! `pkg/apis/admissionregistration/validation` (ValidateValidatingWebhookConfiguration and its
//! mutating twin), and the rule check that ValidatingAdmissionPolicies share with them.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::selector::LabelSelector;
use k1s_apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain, is_valid_port_num};
use serde_json::Value;

use crate::strategies::networking::{go_string_slice, go_typed_slice};

const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Equivalent", "Exact"];
const SIDE_EFFECTS: [&str; 4] = ["None", "NoneOnDryRun", "Some", "Unknown"];
const NO_SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
const REINVOCATION_POLICIES: [&str; 2] = ["IfNeeded", "Never"];
/// The AdmissionReview versions this server (and the one before it) understands.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

fn list<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn has_wildcard(values: &[Value]) -> bool {
    values.iter().any(|v| v.as_str() == Some("*"))
}

/// Upstream's validateRuleWithOperations (subresources allowed), at `path`.
pub fn rule_with_operations(r: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let operations = list(r, "operations");
    if operations.is_empty() {
        errs.push(FieldError::required(format!("{path}.operations"), ""));
    }
    if operations.len() > 1 && has_wildcard(operations) {
        errs.push(FieldError::invalid_raw(
            format!("{path}.operations"),
            go_typed_slice("admissionregistration.OperationType", operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        let op = op.as_str().unwrap_or_default();
        if !OPERATIONS.contains(&op) {
            errs.push(FieldError::not_supported(
                format!("{path}.operations[{i}]"),
                op,
                &OPERATIONS,
            ));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let values = list(r, key);
        if values.is_empty() {
            errs.push(FieldError::required(format!("{path}.{key}"), ""));
        }
        if values.len() > 1 && has_wildcard(values) {
            errs.push(FieldError::invalid_raw(
                format!("{path}.{key}"),
                go_string_slice(values),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    let versions = list(r, "apiVersions");
    for (i, v) in versions.iter().enumerate() {
        if v.as_str().unwrap_or_default().is_empty() {
            errs.push(FieldError::required(format!("{path}.apiVersions[{i}]"), ""));
        }
    }
    resources(list(r, "resources"), &format!("{path}.resources"), errs);
    if let Some(scope) = r.get("scope").filter(|s| !s.is_null()) {
        let scope = scope.as_str().unwrap_or_default();
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::not_supported(
                format!("{path}.scope"),
                scope,
                &SCOPES,
            ));
        }
    }
}

/// Upstream's validateResources: `resource[/subresource]` entries and their wildcards.
fn resources(resources: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    if resources.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let mut with_any_subresource: Vec<&str> = Vec::new();
    let mut under_any_resource: Vec<&str> = Vec::new();
    let (mut double_wildcard, mut single_wildcard) = (false, false);
    // As upstream: the last entry without a subresource decides.
    let mut plain_resource = false;
    for (i, entry) in resources.iter().enumerate() {
        let entry = entry.as_str().unwrap_or_default();
        if entry.is_empty() {
            errs.push(FieldError::required(format!("{path}[{i}]"), ""));
            continue;
        }
        double_wildcard |= entry == "*/*";
        single_wildcard |= entry == "*";
        let Some((res, sub)) = entry.split_once('/') else {
            plain_resource = entry != "*";
            continue;
        };
        if with_any_subresource.contains(&res) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                entry,
                format!("if '{res}/*' is present, must not specify {entry}"),
            ));
        }
        if under_any_resource.contains(&sub) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                entry,
                format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            with_any_subresource.push(res);
        }
        if res == "*" {
            under_any_resource.push(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errs.push(FieldError::invalid_raw(
            path,
            go_string_slice(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single_wildcard && plain_resource {
        errs.push(FieldError::invalid_raw(
            path,
            go_string_slice(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// What an update relaxes, from the stored configuration (upstream's validationOptions): rules
/// added since an object was stored do not make it unchangeable.
struct Options {
    ignore_match_conditions: bool,
    require_no_side_effects: bool,
    require_recognized_review_version: bool,
    require_unique_names: bool,
}

impl Options {
    fn create() -> Options {
        Options {
            ignore_match_conditions: false,
            require_no_side_effects: true,
            require_recognized_review_version: true,
            require_unique_names: true,
        }
    }

    fn update(new: &Value, old: &Value) -> Options {
        let (hooks, old_hooks) = (list(new, "webhooks"), list(old, "webhooks"));
        let mut names: Vec<&str> = old_hooks.iter().filter_map(|h| text(h, "name")).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        Options {
            ignore_match_conditions: hooks.len() == old_hooks.len()
                && hooks
                    .iter()
                    .zip(old_hooks)
                    .all(|(n, o)| n.get("matchConditions") == o.get("matchConditions")),
            require_no_side_effects: old_hooks
                .iter()
                .all(|h| text(h, "sideEffects").is_some_and(|s| NO_SIDE_EFFECTS.contains(&s))),
            require_recognized_review_version: old_hooks.iter().all(|h| {
                let versions = list(h, "admissionReviewVersions");
                versions.is_empty()
                    || versions
                        .iter()
                        .any(|v| v.as_str().is_some_and(|v| REVIEW_VERSIONS.contains(&v)))
            }),
            require_unique_names: names.len() == count,
        }
    }
}

/// A Validating- or MutatingWebhookConfiguration's webhooks, as upstream validates them on
/// create (`old` None) or update.
pub fn webhook_configuration(obj: &Value, old: Option<&Value>, mutating: bool) -> Vec<FieldError> {
    let opts = match old {
        Some(old) => Options::update(obj, old),
        None => Options::create(),
    };
    let mut errs = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (i, hook) in list(obj, "webhooks").iter().enumerate() {
        let path = format!("webhooks[{i}]");
        webhook(hook, &path, mutating, &opts, &mut errs);
        review_versions(
            list(hook, "admissionReviewVersions"),
            &format!("{path}.admissionReviewVersions"),
            opts.require_recognized_review_version,
            &mut errs,
        );
        let name = text(hook, "name").unwrap_or_default();
        if opts.require_unique_names && !name.is_empty() {
            if names.contains(&name) {
                errs.push(FieldError::duplicate(format!("{path}.name"), name));
            } else {
                names.push(name);
            }
        }
    }
    errs
}

fn webhook(hook: &Value, path: &str, mutating: bool, opts: &Options, errs: &mut Vec<FieldError>) {
    fully_qualified_name(
        text(hook, "name").unwrap_or_default(),
        &format!("{path}.name"),
        errs,
    );
    for (i, rule) in list(hook, "rules").iter().enumerate() {
        rule_with_operations(rule, &format!("{path}.rules[{i}]"), errs);
    }
    let one_of = |key: &str, allowed: &[&str], errs: &mut Vec<FieldError>| {
        if let Some(v) = hook.get(key).filter(|v| !v.is_null()) {
            let v = v.as_str().unwrap_or_default();
            if !allowed.contains(&v) {
                errs.push(FieldError::not_supported(
                    format!("{path}.{key}"),
                    v,
                    allowed,
                ));
            }
        }
    };
    one_of("failurePolicy", &FAILURE_POLICIES, errs);
    one_of("matchPolicy", &MATCH_POLICIES, errs);
    let side_effects: &[&str] = if opts.require_no_side_effects {
        &NO_SIDE_EFFECTS
    } else {
        &SIDE_EFFECTS
    };
    if hook.get("sideEffects").is_none_or(Value::is_null) {
        errs.push(FieldError::required(
            format!("{path}.sideEffects"),
            format!("must specify one of {}", side_effects.join(", ")),
        ));
    }
    one_of("sideEffects", side_effects, errs);
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        errs.push(FieldError::invalid(
            format!("{path}.timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        let Some(sel) = hook.get(key).filter(|s| !s.is_null()) else {
            continue;
        };
        let field_errs =
            k1s_apimachinery::validation::validate_label_selector(sel, &format!("{path}.{key}"));
        if !field_errs.is_empty() {
            errs.extend(field_errs);
        } else if let Err(e) = LabelSelector::from_json(sel) {
            // A selector of the wrong shape (not an object, values not strings).
            errs.push(FieldError::invalid(
                format!("{path}.{key}"),
                sel.clone(),
                e.to_string(),
            ));
        }
    }
    if mutating {
        one_of("reinvocationPolicy", &REINVOCATION_POLICIES, errs);
    }
    let config = hook.get("clientConfig").unwrap_or(&Value::Null);
    let cc_path = format!("{path}.clientConfig");
    match (
        config.get("url").filter(|u| !u.is_null()),
        config.get("service").filter(|s| !s.is_null()),
    ) {
        (Some(url), None) => webhook_url(
            url.as_str().unwrap_or_default(),
            &format!("{cc_path}.url"),
            errs,
        ),
        (None, Some(service)) => webhook_service(service, &format!("{cc_path}.service"), errs),
        _ => errs.push(FieldError::required(
            cc_path,
            "exactly one of url or service is required",
        )),
    }
    if !opts.ignore_match_conditions {
        crate::admission::policy::match_conditions(
            hook.get("matchConditions"),
            &format!("{path}.matchConditions"),
            crate::admission::conditions::WEBHOOK_VARIABLES,
            errs,
        );
    }
}

/// Upstream's IsFullyQualifiedName: a DNS subdomain of at least three labels.
fn fully_qualified_name(name: &str, path: &str, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let problems = is_dns1123_subdomain(name);
    if !problems.is_empty() {
        errs.push(FieldError::invalid(path, name, problems.join(",")));
    } else if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

pub(crate) fn review_versions(
    versions: &[Value],
    path: &str,
    require_recognized: bool,
    errs: &mut Vec<FieldError>,
) {
    if versions.is_empty() {
        errs.push(FieldError::required(
            path,
            format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        ));
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut recognized = false;
    for (i, v) in versions.iter().enumerate() {
        let v = v.as_str().unwrap_or_default();
        if seen.contains(&v) {
            errs.push(FieldError::invalid(
                format!("{path}[{i}]"),
                v,
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for msg in is_dns1035_label(v) {
            errs.push(FieldError::invalid(format!("{path}[{i}]"), v, msg));
        }
        recognized |= REVIEW_VERSIONS.contains(&v);
    }
    if require_recognized && !recognized {
        errs.push(FieldError::invalid_raw(
            path,
            go_string_slice(versions),
            format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

/// The parts of a URL that upstream's ValidateWebhookURL looks at, split as Go's url.Parse
/// splits them.
struct UrlParts<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

fn split_url(url: &str) -> Result<UrlParts<'_>, String> {
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((scheme, after))
            if scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (scheme, after)
        }
        Some(("", _)) => return Err(format!("parse {url:?}: missing protocol scheme")),
        _ => ("", rest),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (user, host) = match rest.strip_prefix("//") {
        Some(after) => {
            let authority = after.split('/').next().unwrap_or_default();
            match authority.rsplit_once('@') {
                Some((user, host)) => (Some(user), host),
                None => (None, authority),
            }
        }
        None => (None, ""),
    };
    Ok(UrlParts {
        scheme,
        user,
        host,
        query,
        fragment,
    })
}

/// Upstream's ValidateWebhookURL with https required.
pub(crate) fn webhook_url(url: &str, path: &str, errs: &mut Vec<FieldError>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let parts = match split_url(url) {
        Ok(parts) => parts,
        Err(e) => {
            errs.push(FieldError::required(
                path,
                format!("url must be a valid URL: {e}{FORM}"),
            ));
            return;
        }
    };
    if parts.scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            parts.scheme,
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if parts.host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.host,
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = parts.user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !parts.fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !parts.query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// Upstream's ValidateWebhookService. Upstream passes the service's name where the function
/// expects its namespace and the other way round (kubernetes#141353), so a missing name is
/// reported at `namespace` and a missing namespace at `name`; clients see that, so do we.
pub(crate) fn webhook_service(service: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if text(service, "namespace").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    if text(service, "name").unwrap_or_default().is_empty() {
        errs.push(FieldError::required(format!("{path}.namespace"), ""));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    let problems = is_valid_port_num(port);
    if !problems.is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}.port"),
            port,
            format!("port is not valid: {}", problems.join(", ")),
        ));
    }
    let Some(url_path) = text(service, "path") else {
        return;
    };
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    let at = format!("{path}.path");
    if url_path == "//" {
        errs.push(FieldError::invalid(
            &at,
            url_path,
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(&at, url_path, "must start with a '/'"));
    }
    let inner = url_path.get(1..).unwrap_or_default();
    let inner = inner.strip_suffix('/').unwrap_or(inner);
    for (i, step) in inner.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &at,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &at,
                url_path,
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
}
