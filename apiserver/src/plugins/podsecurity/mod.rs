//! PodSecurity: upstream's validating admission plugin for the Pod Security Standards, with
//! kube-apiserver's default configuration (every mode `privileged:latest`, no exemptions).
//!
//! A namespace's `pod-security.kubernetes.io/{enforce,audit,warn}[-version]` labels select the
//! policy: pods breaking the enforce level are refused; pods and workload resources with pod
//! templates breaking the audit or warn level get an audit annotation or a warning. Namespace
//! writes have their labels validated, and a stricter enforce level warns about existing pods.

mod checks;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k1s_apimachinery::status::aggregate_message;
use k1s_apimachinery::{ApiError, FieldError, meta};
use serde_json::Value;

use super::{AdmissionRequest, Operation};
pub use checks::{Level, LevelVersion, Version};
use checks::{Outcome, PodView};

const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
const ENFORCE_VERSION_LABEL: &str = "pod-security.kubernetes.io/enforce-version";
const AUDIT_LABEL: &str = "pod-security.kubernetes.io/audit";
const AUDIT_VERSION_LABEL: &str = "pod-security.kubernetes.io/audit-version";
const WARN_LABEL: &str = "pod-security.kubernetes.io/warn";
const WARN_VERSION_LABEL: &str = "pod-security.kubernetes.io/warn-version";

/// Audit annotation keys, under upstream's `pod-security.kubernetes.io/` prefix.
const ENFORCE_POLICY_ANNOTATION: &str = "pod-security.kubernetes.io/enforce-policy";
const AUDIT_VIOLATIONS_ANNOTATION: &str = "pod-security.kubernetes.io/audit-violations";
const ERROR_ANNOTATION: &str = "pod-security.kubernetes.io/error";

/// At most this many existing pods are checked against a namespace's new enforce level, for at
/// most this long (upstream's defaults).
const NAMESPACE_MAX_PODS_TO_CHECK: usize = 3000;
const NAMESPACE_POD_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// Pod subresources whose writes carry no pod spec to check.
const IGNORED_POD_SUBRESOURCES: [&str; 8] = [
    "exec",
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

/// The level and version of each mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

impl Policy {
    /// kube-apiserver's default configuration.
    pub const DEFAULT: Policy = Policy {
        enforce: LevelVersion::PRIVILEGED_LATEST,
        audit: LevelVersion::PRIVILEGED_LATEST,
        warn: LevelVersion::PRIVILEGED_LATEST,
    };

    fn fully_privileged(&self) -> bool {
        [self.enforce, self.audit, self.warn]
            .iter()
            .all(|lv| lv.level == Level::Privileged)
    }
}

/// A namespace's policy from its labels over the defaults, and the labels' errors (upstream's
/// `PolicyToEvaluate`): a bad enforce level fails closed (restricted), a bad audit or warn level
/// fails open (privileged), a bad version is `latest`. Warn follows an explicitly stricter
/// enforce level unless warn is set.
pub fn policy_from_labels(labels: Option<&Value>) -> (Policy, Vec<FieldError>) {
    let mut p = Policy::DEFAULT;
    let mut errs = Vec::new();
    let Some(labels) = labels.and_then(Value::as_object).filter(|l| !l.is_empty()) else {
        return (p, errs);
    };
    let get = |key: &str| labels.get(key).map(|v| v.as_str().unwrap_or(""));
    let level = |key: &str, fallback: Level, errs: &mut Vec<FieldError>| {
        let value = get(key)?;
        Some(Level::parse(value).unwrap_or_else(|| {
            errs.push(FieldError::invalid(
                format!("metadata.labels[{key}]"),
                value,
                "must be one of privileged, baseline, restricted",
            ));
            fallback
        }))
    };
    let version = |key: &str, errs: &mut Vec<FieldError>| {
        let value = get(key)?;
        Some(Version::parse(value).unwrap_or_else(|| {
            errs.push(FieldError::invalid(
                format!("metadata.labels[{key}]"),
                value,
                "must be \"latest\" or \"v1.x\"",
            ));
            Version::Latest
        }))
    };
    let mut has_enforce_level = false;
    if let Some(l) = level(ENFORCE_LABEL, Level::Restricted, &mut errs) {
        // An invalid enforce level does not carry over to warn.
        has_enforce_level = get(ENFORCE_LABEL).and_then(Level::parse).is_some();
        p.enforce.level = l;
    }
    if let Some(v) = version(ENFORCE_VERSION_LABEL, &mut errs) {
        p.enforce.version = v;
    }
    if let Some(l) = level(AUDIT_LABEL, Level::Privileged, &mut errs) {
        p.audit.level = l;
    }
    if let Some(v) = version(AUDIT_VERSION_LABEL, &mut errs) {
        p.audit.version = v;
    }
    let has_warn_level = get(WARN_LABEL).is_some();
    if let Some(l) = level(WARN_LABEL, Level::Privileged, &mut errs) {
        p.warn.level = l;
    }
    let has_warn_version = get(WARN_VERSION_LABEL).is_some();
    if let Some(v) = version(WARN_VERSION_LABEL, &mut errs) {
        p.warn.version = v;
    }
    if !has_warn_level && has_enforce_level && p.enforce.level > p.warn.level {
        p.warn.level = p.enforce.level;
        if !has_warn_version {
            p.warn.version = p.enforce.version;
        }
    }
    (p, errs)
}

/// The resources whose objects embed a pod template, and where it sits.
fn pod_template_path(group: &str, resource: &str) -> Option<&'static [&'static str]> {
    Some(match (group, resource) {
        ("", "podtemplates") => &["template"],
        ("", "replicationcontrollers")
        | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => &["spec", "template"],
        ("batch", "cronjobs") => &["spec", "jobTemplate", "spec", "template"],
        _ => return None,
    })
}

/// Validating admission: creates and updates of namespaces, pods and pod controllers.
pub async fn validate(
    req: &AdmissionRequest<'_>,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if req.operation == Operation::Delete {
        return Ok(());
    }
    let (group, resource) = (req.info.group, req.info.resource);
    let subresource = req.subresource.filter(|s| !s.is_empty());
    match (group, resource) {
        ("", "namespaces") if subresource.is_none() => validate_namespace(req, obj, old).await,
        ("", "namespaces") => Ok(()),
        ("", "pods") => {
            if subresource.is_some_and(|s| IGNORED_POD_SUBRESOURCES.contains(&s)) {
                return Ok(());
            }
            validate_pod(req, obj, old).await
        }
        _ if subresource.is_some() => Ok(()),
        _ => match pod_template_path(group, resource) {
            Some(at) => validate_pod_controller(req, obj, at).await,
            None => Ok(()),
        },
    }
}

fn labels(obj: &Value) -> Option<&Value> {
    meta::labels_value(obj)
}

/// The request's Namespace object, or why it could not be read.
async fn namespace_of(req: &AdmissionRequest<'_>) -> Result<Arc<Value>, String> {
    match req.namespace_object().await {
        Ok(Some(n)) => Ok(n),
        Ok(None) => Err(format!("namespaces \"{}\" not found", req.namespace())),
        Err(e) => Err(e.message),
    }
}

/// The name admission reports: the object's (generated already), else the request's.
fn object_name<'a>(req: &'a AdmissionRequest<'_>, obj: &'a Value) -> &'a str {
    meta::name(obj)
        .filter(|n| !n.is_empty())
        .unwrap_or(req.name)
}

async fn validate_namespace(
    req: &AdmissionRequest<'_>,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let name = object_name(req, obj);
    let (policy, errs) = policy_from_labels(labels(obj));
    let invalid = |errs: Vec<FieldError>| ApiError::invalid("Namespace", "", name, errs);
    let old = match (req.operation, old) {
        (Operation::Update, Some(old)) => old,
        // A new namespace has no pods: only its labels are checked.
        _ if !errs.is_empty() => return Err(invalid(errs)),
        _ => return Ok(()),
    };
    let (old_policy, old_errs) = policy_from_labels(labels(old));
    // Labels already invalid in the same way do not block other changes.
    if !errs.is_empty() && (old_errs.is_empty() || errs != old_errs) {
        return Err(invalid(errs));
    }
    let (new, before) = (policy.enforce, old_policy.enforce);
    if new == before
        || new.level == Level::Privileged
        || (new.version == before.version && new.level <= before.level)
    {
        return Ok(());
    }
    for w in check_existing_pods(req, name, new).await {
        req.warn(w);
    }
    Ok(())
}

/// Upstream's `isSignificantPodUpdate`: only a change of containers or their images (or a new
/// ephemeral container) is checked again.
fn is_significant_pod_update(pod: &Value, old: &Value) -> bool {
    fn str_of<'v>(c: &'v Value, f: &str) -> &'v str {
        super::str_at(c, &[f]).unwrap_or("")
    }
    for field in ["containers", "initContainers"] {
        let (now, then) = (super::containers(pod, field), super::containers(old, field));
        if now.len() != then.len()
            || now
                .iter()
                .zip(then)
                .any(|(a, b)| str_of(a, "image") != str_of(b, "image"))
        {
            return true;
        }
    }
    let before = super::containers(old, "ephemeralContainers");
    super::containers(pod, "ephemeralContainers")
        .iter()
        .any(|c| {
            match before
                .iter()
                .find(|o| str_of(o, "name") == str_of(c, "name"))
            {
                None => true,
                Some(o) => str_of(o, "image") != str_of(c, "image"),
            }
        })
}

async fn validate_pod(
    req: &AdmissionRequest<'_>,
    pod: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    // Checked before the namespace is read: most pod updates change metadata only.
    if req.operation == Operation::Update
        && let Some(old) = old
        && !is_significant_pod_update(pod, old)
    {
        return Ok(());
    }
    let namespace = match namespace_of(req).await {
        Ok(n) => n,
        Err(why) => {
            let ns = req.namespace();
            let err = ApiError::internal(format!("failed to lookup namespace \"{ns}\""));
            req.audit_annotation(ERROR_ANNOTATION, format!("{}: {why}", err.message));
            return Err(err);
        }
    };
    let (policy, errs) = policy_from_labels(labels(&namespace));
    if errs.is_empty() && policy.fully_privileged() {
        req.audit_annotation(
            ENFORCE_POLICY_ANNOTATION,
            LevelVersion::PRIVILEGED_LATEST.to_string(),
        );
        return Ok(());
    }
    let view = PodView {
        metadata: pod.get("metadata").unwrap_or(&Value::Null),
        spec: pod.get("spec").unwrap_or(&Value::Null),
    };
    evaluate(req, &policy, &errs, view, Some(pod))
}

async fn validate_pod_controller(
    req: &AdmissionRequest<'_>,
    obj: &Value,
    template_at: &[&str],
) -> Result<(), ApiError> {
    let namespace = match namespace_of(req).await {
        Ok(n) => n,
        // Never refused: the failure is only recorded.
        Err(why) => {
            let ns = req.namespace();
            req.audit_annotation(
                ERROR_ANNOTATION,
                format!("failed to lookup namespace \"{ns}\": {why}"),
            );
            return Ok(());
        }
    };
    let (policy, errs) = policy_from_labels(labels(&namespace));
    if errs.is_empty()
        && policy.warn.level == Level::Privileged
        && policy.audit.level == Level::Privileged
    {
        return Ok(());
    }
    let Some(template) = template_at
        .iter()
        .try_fold(obj, |cur, k| cur.get(*k))
        .filter(|t| !t.is_null())
    else {
        return Ok(());
    };
    let view = PodView {
        metadata: template.get("metadata").unwrap_or(&Value::Null),
        spec: template.get("spec").unwrap_or(&Value::Null),
    };
    evaluate(req, &policy, &errs, view, None)
}

/// Upstream's `EvaluatePod`: enforce (pods only), then audit, then warn (unless refused), each
/// level evaluated once.
fn evaluate(
    req: &AdmissionRequest<'_>,
    policy: &Policy,
    errs: &[FieldError],
    view: PodView<'_>,
    enforced_pod: Option<&Value>,
) -> Result<(), ApiError> {
    if let Some(agg) = aggregate_message(errs) {
        req.audit_annotation(ERROR_ANNOTATION, format!("Failed to parse policy: {agg}"));
    }
    let mut cache: Vec<(LevelVersion, Outcome)> = Vec::with_capacity(3);
    let mut outcome = |lv: LevelVersion| -> Outcome {
        if let Some((_, o)) = cache.iter().find(|(l, _)| *l == lv) {
            return o.clone();
        }
        let o = checks::evaluate(lv, view);
        cache.push((lv, o.clone()));
        o
    };
    let mut refused = None;
    if let Some(pod) = enforced_pod {
        req.audit_annotation(ENFORCE_POLICY_ANNOTATION, policy.enforce.to_string());
        let result = outcome(policy.enforce);
        if !result.allowed() {
            let name = object_name(req, pod);
            refused = Some(ApiError::forbidden(
                &req.info.group_resource(),
                name,
                format!(
                    "violates PodSecurity \"{}\": {}",
                    policy.enforce,
                    result.details()
                ),
            ));
        }
    }
    let audit = outcome(policy.audit);
    if !audit.allowed() {
        req.audit_annotation(
            AUDIT_VIOLATIONS_ANNOTATION,
            format!(
                "would violate PodSecurity \"{}\": {}",
                policy.audit,
                audit.details()
            ),
        );
    }
    // A refused request gets no warnings on top.
    if let Some(err) = refused {
        return Err(err);
    }
    let warn = outcome(policy.warn);
    if !warn.allowed() {
        req.warn(format!(
            "would violate PodSecurity \"{}\": {}",
            policy.warn,
            warn.details()
        ));
    }
    Ok(())
}

/// Upstream's `EvaluatePodsInNamespace`: the warnings for a namespace's existing pods under a
/// new enforce level, grouped by their reasons.
async fn check_existing_pods(
    req: &AdmissionRequest<'_>,
    namespace: &str,
    enforce: LevelVersion,
) -> Vec<String> {
    let deadline = Instant::now() + NAMESPACE_POD_CHECK_TIMEOUT;
    let pods = match super::info("", "v1", "pods") {
        Ok(info) => super::list_all(req.registry, info, Some(namespace)).await,
        Err(e) => Err(e),
    };
    let Ok(pods) = pods else {
        return vec!["failed to list pods while checking new PodSecurity enforce level".into()];
    };
    let mut pods = prioritize(pods);
    let total = pods.len();
    pods.truncate(NAMESPACE_MAX_PODS_TO_CHECK);
    let mut checked = pods.len();
    // (reasons, lexically first pod name, pod count), in order of first appearance.
    let mut groups: Vec<(String, String, usize)> = Vec::new();
    for (i, pod) in pods.iter().enumerate() {
        let view = PodView {
            metadata: pod.get("metadata").unwrap_or(&Value::Null),
            spec: pod.get("spec").unwrap_or(&Value::Null),
        };
        let result = checks::evaluate(enforce, view);
        if !result.allowed() {
            let reasons = result.reasons();
            let name = meta::name(pod).unwrap_or("");
            match groups.iter_mut().find(|(r, _, _)| *r == reasons) {
                Some(g) => {
                    if name < g.1.as_str() {
                        g.1 = name.to_string();
                    }
                    g.2 += 1;
                }
                None => groups.push((reasons, name.to_string(), 1)),
            }
        }
        if Instant::now() >= deadline {
            checked = i + 1;
            break;
        }
    }
    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !groups.is_empty() {
        warnings.push(format!(
            "existing pods in namespace \"{namespace}\" violate the new PodSecurity enforce level \"{enforce}\""
        ));
    }
    let mut per_pod: Vec<String> = groups
        .into_iter()
        .map(|(reasons, name, count)| match count {
            1 => format!("{name}: {reasons}"),
            2 => format!("{name} (and 1 other pod): {reasons}"),
            n => format!("{name} (and {} other pods): {reasons}", n - 1),
        })
        .collect();
    per_pod.sort();
    warnings.extend(per_pod);
    warnings
}

/// One pod per controller first (a controller's pods usually share a template), then the rest.
fn prioritize(pods: Vec<Value>) -> Vec<Value> {
    let mut first = Vec::with_capacity(pods.len());
    let mut rest = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for pod in pods {
        let controller = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .and_then(|refs| {
                refs.iter()
                    .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
            })
            .map(|r| {
                r.get("uid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            });
        match controller {
            None => first.push(pod),
            Some(uid) if seen.contains(&uid) => rest.push(pod),
            Some(uid) => {
                seen.insert(uid);
                first.push(pod);
            }
        }
    }
    first.extend(rest);
    first
}
