//! Which webhooks a request reaches: rules (operations, groups, versions, resources with
//! subresources, scope), namespaceSelector and objectSelector, as upstream's `rules`,
//! `namespace` and `object` predicates and `ShouldCallHook`.

use std::collections::BTreeMap;

use k1s_apimachinery::{ApiError, GroupResource};
use serde_json::Value;

use k1s_apimachinery::selector::LabelSelector;

use super::AdmissionAttributes;
use super::config::{FailurePolicy, Rule, Scope, Webhook};
use crate::admission::conditions::{self, MatchResult};

const ADMISSION_REGISTRATION: &str = "admissionregistration.k8s.io";

/// Requests on the admission configuration kinds themselves never go to webhooks (so a broken
/// webhook cannot lock out its own repair).
pub fn is_exempt_admission_configuration_resource(attrs: &AdmissionAttributes) -> bool {
    attrs.group == ADMISSION_REGISTRATION
        && matches!(
            attrs.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

fn is_namespace_resource(attrs: &AdmissionAttributes) -> bool {
    attrs.group.is_empty() && attrs.version == "v1" && attrs.resource == "namespaces"
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

/// Upstream's `rules.Matcher.Matches`.
pub fn rule_matches(rule: &Rule, attrs: &AdmissionAttributes) -> bool {
    let scope = match rule.scope {
        Scope::All => true,
        Scope::Namespaced => !is_namespace_resource(attrs) && !attrs.namespace.is_empty(),
        Scope::Cluster => is_namespace_resource(attrs) || attrs.namespace.is_empty(),
        Scope::Invalid => false,
    };
    let operation = rule
        .operations
        .iter()
        .any(|op| op == "*" || op == attrs.operation.as_str());
    let resource = rule.resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
        (res == "*" || res == attrs.resource) && (sub == "*" || sub == attrs.subresource)
    });
    scope
        && operation
        && exact_or_wildcard(&rule.api_groups, &attrs.group)
        && exact_or_wildcard(&rule.api_versions, &attrs.version)
        && resource
}

fn labels_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/labels")
}

/// Upstream's `MatchNamespaceSelector`: `(matches, error)`.
pub(crate) fn namespace_matches(
    selector: &Result<LabelSelector, String>,
    attrs: &AdmissionAttributes,
    obj: &Value,
) -> (bool, Option<ApiError>) {
    if attrs.namespace.is_empty() && attrs.resource != "namespaces" {
        // Cluster-scoped objects other than namespaces are never exempted.
        return (true, None);
    }
    let selector = match selector {
        Ok(s) => s,
        Err(e) => return (false, Some(ApiError::internal(e))),
    };
    if selector.is_empty() {
        return (true, None);
    }
    // A namespace being created or updated is judged by its new labels.
    if attrs.resource == "namespaces"
        && attrs.subresource.is_empty()
        && matches!(
            attrs.operation,
            super::Operation::Create | super::Operation::Update
        )
    {
        return (selector.matches_json(labels_of(obj)), None);
    }
    match &attrs.namespace_labels {
        Some(labels) => (selector.matches(&StrMap(labels)), None),
        None => (
            false,
            Some(ApiError::not_found(
                &GroupResource::core("namespaces"),
                &attrs.namespace,
            )),
        ),
    }
}

struct StrMap<'a>(&'a BTreeMap<String, String>);

impl k1s_apimachinery::selector::Labels for StrMap<'_> {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
}

/// Upstream's `MatchObjectSelector`: the new or the old object must match.
pub(crate) fn object_matches(
    selector: &Result<LabelSelector, String>,
    attrs: &AdmissionAttributes,
    obj: &Value,
) -> (bool, Option<ApiError>) {
    let selector = match selector {
        Ok(s) => s,
        Err(e) => return (false, Some(ApiError::internal(e))),
    };
    if selector.is_empty() {
        return (true, None);
    }
    let matches = |o: &Value| o.is_object() && selector.matches_json(labels_of(o));
    (
        matches(obj) || attrs.old_object.as_ref().is_some_and(matches),
        None,
    )
}

/// Upstream's `ShouldCallHook`: whether `hook` applies.
#[cfg(test)]
pub(super) fn should_call(
    hook: &Webhook,
    attrs: &AdmissionAttributes,
    obj: &Value,
) -> Result<bool, ApiError> {
    matched(hook, attrs, obj).map(|m| m.is_some())
}

/// The other served versions of the request's resource, as attributes of that version (for
/// `matchPolicy: Equivalent`).
pub(crate) fn equivalents(attrs: &AdmissionAttributes) -> Vec<AdmissionAttributes> {
    k1s_apimachinery::catalog::versions_of(&attrs.group)
        .iter()
        .filter(|v| **v != attrs.version)
        .filter_map(|v| k1s_apimachinery::catalog::find(&attrs.group, v, &attrs.resource))
        .map(|info| AdmissionAttributes {
            version: info.version.to_string(),
            kind: info.kind.to_string(),
            request_version: Some(attrs.version.clone()),
            request_kind: Some(attrs.kind.clone()),
            ..attrs.clone()
        })
        .collect()
}

/// An object (or old object) in the version `attrs` names.
pub(crate) fn in_version(obj: &Value, attrs: &AdmissionAttributes) -> Result<Value, ApiError> {
    let mut out = obj.clone();
    if let Some(info) =
        k1s_apimachinery::catalog::find(&attrs.group, &attrs.version, &attrs.resource)
        && out.is_object()
    {
        crate::conversion::to_version(info, &mut out)?;
    }
    Ok(out)
}

/// Whether `hook` applies, and how: `Some(None)` as requested, `Some(Some(a))` through the
/// equivalent version `a`. Selector errors are only reported for webhooks whose rules match.
pub(super) fn matched(
    hook: &Webhook,
    attrs: &AdmissionAttributes,
    obj: &Value,
) -> Result<Option<Option<AdmissionAttributes>>, ApiError> {
    let (ns_match, ns_err) = namespace_matches(&hook.namespace_selector, attrs, obj);
    if !ns_match && ns_err.is_none() {
        return Ok(None);
    }
    let (obj_match, obj_err) = object_matches(&hook.object_selector, attrs, obj);
    if !obj_match && obj_err.is_none() {
        return Ok(None);
    }
    let how = if hook.rules.iter().any(|r| rule_matches(r, attrs)) {
        None
    } else if let Some(eq) = hook
        .equivalent_match
        .then(|| equivalents(attrs))
        .into_iter()
        .flatten()
        .find(|eq| hook.rules.iter().any(|r| rule_matches(r, eq)))
    {
        Some(eq)
    } else {
        return Ok(None);
    };
    if let Some(e) = ns_err.or(obj_err) {
        return Err(e);
    }
    match &hook.match_conditions {
        Ok(conditions) if conditions.is_empty() => {}
        Ok(conditions) => {
            // The conditions see the object in the version the webhook is called with.
            let (cattrs, cobj);
            let (attrs, obj) = match &how {
                None => (attrs, obj),
                Some(eq) => {
                    cobj = in_version(obj, eq)?;
                    cattrs = AdmissionAttributes {
                        old_object: attrs
                            .old_object
                            .as_ref()
                            .map(|o| in_version(o, eq))
                            .transpose()?,
                        ..eq.clone()
                    };
                    (&cattrs, &cobj)
                }
            };
            let act = conditions::webhook_activation(attrs, obj, hook.authorizer.as_ref());
            match conditions::evaluate(conditions, &act) {
                MatchResult::Matches => {}
                MatchResult::Excluded(_) => return Ok(None),
                MatchResult::Error(e) => match hook.failure_policy {
                    FailurePolicy::Ignore => return Ok(None),
                    FailurePolicy::Fail => {
                        return Err(ApiError::forbidden(
                            &GroupResource::new(attrs.group.clone(), attrs.resource.clone()),
                            &attrs.name,
                            e,
                        ));
                    }
                },
            }
        }
        Err(e) => {
            if hook.failure_policy == FailurePolicy::Fail {
                return Err(ApiError::forbidden(
                    &GroupResource::new(attrs.group.clone(), attrs.resource.clone()),
                    &attrs.name,
                    e,
                ));
            }
            return Ok(None);
        }
    }
    Ok(Some(how))
}
