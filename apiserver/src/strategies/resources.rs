//! core/v1 resource lists: SetDefaults_ResourceList (every quantity rounded up to milli scale
//! and written in upstream's canonical form), the resource-name rules of upstream's
//! validation (validateResourceName and its container, quota and limit-range variants,
//! ValidateResourceQuantityValue) and the ResourceQuota strategy.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::quantity::Quantity;
use k1s_apimachinery::validation::is_qualified_name;
use serde_json::{Value, json};

use crate::registry::Strategy;

/// SetDefaults_ResourceList on the list at `pointer` under `obj`, when there is one.
pub fn round_list_at(obj: &mut Value, pointer: &str) {
    if let Some(list) = obj.pointer_mut(pointer) {
        round_resource_list(list);
    }
}

/// SetDefaults_ResourceList on the `limits` and `requests` of a ResourceRequirements.
pub fn round_requirements(r: &mut Value) {
    round_list_at(r, "/limits");
    round_list_at(r, "/requests");
}

/// SetDefaults_ResourceList: each quantity rounded up (away from zero) to milli precision and
/// rewritten as upstream serialises it (`0.0001` -> `1m`, `0.5` -> `500m`, `1024Mi` -> `1Gi`).
/// Values that are not quantities are left for validation.
pub fn round_resource_list(list: &mut Value) {
    let Some(map) = list.as_object_mut() else {
        return;
    };
    for v in map.values_mut() {
        let text = match v {
            Value::String(s) => s.as_str(),
            Value::Number(_) => &v.to_string(),
            _ => continue,
        };
        if let Some(canonical) = rounded_canonical(text)
            && v.as_str() != Some(canonical.as_str())
        {
            *v = Value::String(canonical);
        }
    }
}

/// The canonical text of `text` rounded up to milli scale; None when it is not a quantity.
fn rounded_canonical(text: &str) -> Option<String> {
    let q = Quantity::parse(text)?;
    let milli = if q.is_negative() {
        -q.neg().milli_value()
    } else {
        q.milli_value()
    };
    let rounded = Quantity::parse(&format!("{milli}m"))?;
    if rounded == q {
        return Some(q.to_string());
    }
    // A rounded exponent quantity keeps its exponent form (`1.5e-4` -> `1e-3`).
    let exponent = text
        .trim_start_matches(['+', '-'])
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
        .starts_with(['e', 'E']);
    if exponent {
        return Some(Quantity::parse(&format!("{milli}e-3"))?.to_string());
    }
    Some(rounded.to_string())
}

const STANDARD_CONTAINER: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// upstream's standardResources (IsStandardResourceName, with the quota hugepage prefixes).
const STANDARD: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// upstream's standardQuotaResources (IsStandardQuotaResourceName).
const STANDARD_QUOTA: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resources counted in whole units (IsIntegerResourceName, with extended resources).
const INTEGER: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn quota_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// IsNativeResource: unprefixed, or in a `kubernetes.io/` domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// IsExtendedResourceName: not native, not `requests.`-prefixed, and a qualified name once
/// prefixed with `requests.` (as quota names it).
pub fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// validateResourceName: a qualified name, standard when it has no prefix.
pub fn resource_name_errors(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = is_qualified_name(name)
        .into_iter()
        .map(|m| FieldError::invalid(path, name, m))
        .collect();
    if errs.is_empty()
        && !name.contains('/')
        && !STANDARD.contains(&name)
        && !quota_huge_pages(name)
    {
        errs.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    errs
}

/// validateContainerResourceName: a resource name a container may request.
pub fn container_resource_name_errors(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = resource_name_errors(name, path);
    if !name.contains('/') {
        if !STANDARD_CONTAINER.contains(&name) && !name.starts_with("hugepages-") {
            errs.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// ValidateResourceQuotaResourceName: a resource name a quota may limit.
pub fn quota_resource_name_errors(name: &str, path: &str) -> Vec<FieldError> {
    let mut errs = resource_name_errors(name, path);
    if !name.contains('/') && !STANDARD_QUOTA.contains(&name) && !quota_huge_pages(name) {
        errs.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
    errs
}

/// validateLimitRangeResourceName: container rules for Pod and Container items, the plain
/// resource-name rules for the others.
pub fn limit_range_resource_name_errors(ty: &str, name: &str, path: &str) -> Vec<FieldError> {
    if ty == "Pod" || ty == "Container" {
        container_resource_name_errors(name, path)
    } else {
        resource_name_errors(name, path)
    }
}

/// The text of a quantity as JSON carries it (a string or a bare number).
fn quantity_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// ValidateResourceQuantityValue: not negative, and whole for integer resources. The value
/// prints as its quantity string (upstream prints Go's struct dump of a resource.Quantity).
pub fn quantity_value_errors(name: &str, v: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(q) = quantity_text(v).and_then(|t| Quantity::parse(&t)) else {
        return errs;
    };
    if q.is_negative() {
        errs.push(FieldError::invalid(
            path,
            q.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    if (INTEGER.contains(&name) || is_extended(name)) && q.milli_value() % 1000 != 0 {
        errs.push(FieldError::invalid(
            path,
            q.to_string(),
            "must be an integer",
        ));
    }
    errs
}

fn entries(list: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    list.and_then(Value::as_object).into_iter().flatten()
}

/// The name and integer rules of validateResourceRequirements for every container of a pod
/// spec at `path` (its negative, request-over-limit and hugepage rules are elsewhere), and of
/// the pod overhead (validateOverhead).
pub fn pod_spec_resource_errors(spec: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(spec) = spec else { return errs };
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            for key in ["limits", "requests"] {
                for (name, v) in entries(c.pointer(&format!("/resources/{key}"))) {
                    let at = format!("{path}.{list}[{i}].resources.{key}[{name}]");
                    errs.extend(container_resource_name_errors(name, &at));
                    errs.extend(
                        quantity_value_errors(name, v, &at)
                            .into_iter()
                            .filter(|e| e.detail == "must be an integer"),
                    );
                }
            }
        }
    }
    for (name, v) in entries(spec.get("overhead")) {
        let at = format!("{path}.overhead[{name}]");
        errs.extend(container_resource_name_errors(name, &at));
        errs.extend(quantity_value_errors(name, v, &at));
    }
    errs
}

/// The quota scopes upstream knows (IsStandardResourceQuotaScope; VolumeAttributesClass is
/// off in 1.33).
const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// IsResourceQuotaScopeValidForResource.
fn scope_valid_for(scope: &str, resource: &str) -> bool {
    const COMPUTE: [&str; 7] = [
        "pods",
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    match scope {
        "BestEffort" => resource == "pods",
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => COMPUTE.contains(&resource),
        _ => true,
    }
}

fn is_standard_quota_name(name: &str) -> bool {
    STANDARD_QUOTA.contains(&name) || quota_huge_pages(name)
}

/// Names and values of a quota's resource list at `path` (`spec.hard`, `status.used`).
fn quota_list_errors(list: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (name, v) in entries(list) {
        let at = format!("{path}[{name}]");
        errs.extend(quota_resource_name_errors(name, &at));
        errs.extend(quantity_value_errors(name, v, &at));
    }
    errs
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| s.as_str().unwrap_or_default())
        .collect()
}

/// Both of a conflicting pair of scopes.
fn conflicting(scopes: &[&str]) -> usize {
    [
        ("BestEffort", "NotBestEffort"),
        ("Terminating", "NotTerminating"),
    ]
    .iter()
    .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
    .count()
}

/// ValidateResourceQuotaSpec: hard limits, scopes and the scope selector.
fn validate_quota_spec(spec: &Value) -> Vec<FieldError> {
    let mut errs = quota_list_errors(spec.get("hard"), "spec.hard");
    let hard: Vec<&String> = entries(spec.get("hard")).map(|(k, _)| k).collect();
    let scopes_value = spec.get("scopes").cloned().unwrap_or(Value::Null);
    let scopes = strings(spec.get("scopes"));
    for scope in &scopes {
        if !SCOPES.contains(scope) {
            errs.push(FieldError::invalid(
                "spec.scopes",
                scopes_value.clone(),
                "unsupported scope",
            ));
        }
        for k in &hard {
            if is_standard_quota_name(k) && !scope_valid_for(scope, k) {
                errs.push(FieldError::invalid(
                    "spec.scopes",
                    scopes_value.clone(),
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    for _ in 0..conflicting(&scopes) {
        errs.push(FieldError::invalid(
            "spec.scopes",
            scopes_value.clone(),
            "conflicting scopes",
        ));
    }
    let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) else {
        return errs;
    };
    let at = "spec.scopeSelector.matchExpressions";
    let exprs = selector.get("matchExpressions").and_then(Value::as_array);
    let mut names = Vec::new();
    for req in exprs.into_iter().flatten() {
        let scope = req
            .get("scopeName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let op = req
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                format!("{at}.scopeName"),
                scope,
                "unsupported scope",
            ));
        }
        for k in &hard {
            if is_standard_quota_name(k) && !scope_valid_for(scope, k) {
                errs.push(FieldError::invalid(
                    at,
                    selector.clone(),
                    "unsupported scope applied to resource",
                ));
            }
        }
        if SCOPES.contains(&scope) && scope != "PriorityClass" && op != "Exists" {
            errs.push(FieldError::invalid(
                format!("{at}.operator"),
                op,
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, \
                 ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, \
                 ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        let values = req.get("values").and_then(Value::as_array);
        let n_values = values.map_or(0, Vec::len);
        match op {
            "In" | "NotIn" if n_values == 0 => errs.push(FieldError::required(
                format!("{at}.values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if n_values != 0 => errs.push(FieldError::invalid(
                format!("{at}.values"),
                req.get("values").cloned().unwrap_or(Value::Null),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => errs.push(FieldError::invalid(
                format!("{at}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
        names.push(scope);
    }
    // Upstream reports a conflict in the selector with the `scopes` list as the value.
    for _ in 0..conflicting(&names) {
        errs.push(FieldError::invalid(
            at,
            scopes_value.clone(),
            "conflicting scopes",
        ));
    }
    errs
}

/// ValidateResourceQuotaStatus (on create and on `/status` writes).
fn validate_quota_status(obj: &Value) -> Vec<FieldError> {
    let mut errs = quota_list_errors(obj.pointer("/status/hard"), "status.hard");
    errs.extend(quota_list_errors(
        obj.pointer("/status/used"),
        "status.used",
    ));
    errs
}

pub struct ResourceQuotas;
impl Strategy for ResourceQuotas {
    fn default(&self, obj: &mut Value) {
        for p in ["/spec/hard", "/status/hard", "/status/used"] {
            round_list_at(obj, p);
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        // Upstream's PrepareForCreate clears the status; the quota controller fills it.
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), json!({}));
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_quota_spec(obj.get("spec").unwrap_or(&Value::Null));
        errs.extend(validate_quota_status(obj));
        errs
    }
    /// ValidateResourceQuotaUpdate: the spec rules, and scopes that do not change.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_quota_spec(new.get("spec").unwrap_or(&Value::Null));
        fn set(v: &Value) -> Vec<&str> {
            let mut s = strings(v.pointer("/spec/scopes"));
            s.sort_unstable();
            s.dedup();
            s
        }
        if set(new) != set(old) {
            errs.push(FieldError::invalid(
                "spec.scopes",
                new.pointer("/spec/scopes").cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        errs
    }
    fn validate_subresource_update(&self, sub: &str, new: &Value, old: &Value) -> Vec<FieldError> {
        match sub {
            "status" => validate_quota_status(new),
            _ => self.validate_update(new, old),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn lists_round_up_to_milli_in_canonical_form() {
        let mut list = json!({
            "cpu": "0.0001", "memory": "1024Mi", "a": "0.5", "b": 2, "c": "1.5e-4",
            "d": "-0.0001", "e": "1.0001", "f": "100m", "g": "bad", "h": "1000", "i": 0.25,
        });
        round_resource_list(&mut list);
        assert_eq!(
            list,
            json!({
                "cpu": "1m", "memory": "1Gi", "a": "500m", "b": "2", "c": "1e-3",
                "d": "-1m", "e": "1001m", "f": "100m", "g": "bad", "h": "1k", "i": "250m",
            })
        );
    }

    #[test]
    fn resource_names_follow_upstream() {
        let p = "spec.containers[0].resources.limits[x]";
        assert!(container_resource_name_errors("cpu", p).is_empty());
        assert!(container_resource_name_errors("hugepages-2Mi", p).is_empty());
        assert!(container_resource_name_errors("example.com/gpu", p).is_empty());
        assert!(container_resource_name_errors("kubernetes.io/foo", p).is_empty());
        assert_eq!(
            printed(&container_resource_name_errors("widgets", p)),
            [
                format!(
                    "{p}: Invalid value: \"widgets\": must be a standard resource type or fully qualified"
                ),
                format!(
                    "{p}: Invalid value: \"widgets\": must be a standard resource for containers"
                ),
            ]
        );
        assert_eq!(
            printed(&container_resource_name_errors("pods", p)),
            [format!(
                "{p}: Invalid value: \"pods\": must be a standard resource for containers"
            )]
        );
        assert_eq!(
            printed(&container_resource_name_errors("requests.example.com/x", p)),
            [format!(
                "{p}: Invalid value: \"requests.example.com/x\": doesn't follow extended resource name standard"
            )]
        );
        assert_eq!(container_resource_name_errors("a b", p).len(), 2);
        assert!(quota_resource_name_errors("requests.hugepages-1Gi", "q").is_empty());
        assert!(quota_resource_name_errors("count/deployments.apps", "q").is_empty());
        assert_eq!(
            printed(&quota_resource_name_errors("storage", "q")),
            ["q: Invalid value: \"storage\": must be a standard resource for quota"]
        );
        assert!(
            limit_range_resource_name_errors("PersistentVolumeClaim", "storage", "l").is_empty()
        );
        assert_eq!(
            limit_range_resource_name_errors("Container", "storage", "l").len(),
            1
        );
    }

    #[test]
    fn quantity_values_are_non_negative_and_whole_for_counts() {
        assert_eq!(
            printed(&quantity_value_errors("pods", &json!("1500m"), "h")),
            ["h: Invalid value: \"1500m\": must be an integer"]
        );
        assert_eq!(
            printed(&quantity_value_errors("example.com/gpu", &json!("-1"), "h")),
            ["h: Invalid value: \"-1\": must be greater than or equal to 0"]
        );
        assert!(quantity_value_errors("cpu", &json!("1500m"), "h").is_empty());
    }

    #[test]
    fn pod_specs_get_container_name_and_integer_rules() {
        let spec = json!({
            "containers": [{"name": "a", "resources": {
                "limits": {"foo": "1", "example.com/gpu": "500m"},
                "requests": {"example.com/gpu": "500m"}}}],
            "overhead": {"pods": "1"},
        });
        assert_eq!(
            printed(&pod_spec_resource_errors(Some(&spec), "spec")),
            [
                "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: \"500m\": must be an integer",
                "spec.containers[0].resources.limits[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.limits[foo]: Invalid value: \"foo\": must be a standard resource for containers",
                "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: \"500m\": must be an integer",
                "spec.overhead[pods]: Invalid value: \"pods\": must be a standard resource for containers",
            ]
        );
    }

    #[test]
    fn quota_spec_rules() {
        let q = |spec: Value| printed(&ResourceQuotas.validate(&json!({ "spec": spec })));
        assert!(q(json!({"hard": {"pods": "10", "requests.cpu": "1"}})).is_empty());
        assert_eq!(
            q(json!({"hard": {"foo": "1", "pods": "-1"}})),
            [
                "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
                "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota",
                "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0",
            ]
        );
        assert_eq!(
            q(
                json!({"hard": {"secrets": "1"}, "scopes": ["BestEffort", "NotBestEffort", "Bogus"]})
            ),
            [
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Bogus\"]: unsupported scope applied to resource",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Bogus\"]: unsupported scope applied to resource",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Bogus\"]: unsupported scope",
                "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\",\"Bogus\"]: conflicting scopes",
            ]
        );
        assert_eq!(
            q(
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In"},
                    {"scopeName": "BestEffort", "operator": "In", "values": ["x"]},
                    {"scopeName": "PriorityClass", "operator": "Exists", "values": ["x"]},
                    {"scopeName": "PriorityClass", "operator": "Has"},
                ]}})
            ),
            [
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                "spec.scopeSelector.matchExpressions.values: Invalid value: [\"x\"]: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                "spec.scopeSelector.matchExpressions.operator: Invalid value: \"Has\": not a valid selector operator",
            ]
        );
    }

    #[test]
    fn quota_scopes_are_immutable_and_status_is_checked() {
        let old = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}});
        let new = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["NotBestEffort"]}});
        assert_eq!(
            printed(&ResourceQuotas.validate_update(&new, &old)),
            ["spec.scopes: Invalid value: [\"NotBestEffort\"]: field is immutable"]
        );
        let status = json!({"spec": {}, "status": {"used": {"pods": "0.5"}}});
        assert_eq!(
            printed(&ResourceQuotas.validate_subresource_update("status", &status, &old)),
            ["status.used[pods]: Invalid value: \"500m\": must be an integer"]
        );
        let mut obj = json!({"spec": {"hard": {"cpu": "0.0001"}}});
        ResourceQuotas.default(&mut obj);
        assert_eq!(obj["spec"]["hard"]["cpu"], "1m");
    }
}
