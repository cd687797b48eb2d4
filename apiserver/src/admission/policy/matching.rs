//! Whether a policy's `matchConstraints` or a binding's `matchResources` select a request, as
//! upstream's `policy/matching.Matcher`: namespace and object selectors, resource rules with
//! resource names, excluded rules first, and `matchPolicy: Equivalent` across served versions.

use k1s_apimachinery::ApiError;
use serde_json::Value;

use super::compile::{MatchResources, NamedRule};
use crate::admission::AdmissionAttributes;
use crate::admission::webhook::{equivalents, namespace_matches, object_matches, rule_matches};

/// How a request matched: `None` as requested, `Some(a)` through the equivalent version `a`.
pub type How = Option<AdmissionAttributes>;

fn named_matches(rules: &[NamedRule], attrs: &AdmissionAttributes) -> bool {
    rules.iter().any(|r| {
        rule_matches(&r.rule, attrs)
            && (r.resource_names.is_empty() || r.resource_names.contains(&attrs.name))
    })
}

/// The rule part only (no selectors): cheap, used to skip requests no policy can match.
/// Empty `resourceRules` match every request (bindings may leave them out).
pub fn rules_match(m: &MatchResources, attrs: &AdmissionAttributes) -> Option<How> {
    let eqs = || {
        if m.equivalent {
            equivalents(attrs)
        } else {
            Vec::new()
        }
    };
    if named_matches(&m.exclude_resource_rules, attrs)
        || (!m.exclude_resource_rules.is_empty()
            && eqs()
                .iter()
                .any(|eq| named_matches(&m.exclude_resource_rules, eq)))
    {
        return None;
    }
    if m.resource_rules.is_empty() || named_matches(&m.resource_rules, attrs) {
        return Some(None);
    }
    eqs()
        .into_iter()
        .find(|eq| named_matches(&m.resource_rules, eq))
        .map(Some)
}

/// The whole match: selectors, then rules; selector errors only count for a request the
/// rules select (as upstream).
pub fn matches(
    m: &MatchResources,
    attrs: &AdmissionAttributes,
    obj: &Value,
) -> Result<Option<How>, ApiError> {
    let (ns_match, ns_err) = namespace_matches(&m.namespace_selector, attrs, obj);
    if !ns_match && ns_err.is_none() {
        return Ok(None);
    }
    let (obj_match, obj_err) = object_matches(&m.object_selector, attrs, obj);
    if !obj_match && obj_err.is_none() {
        return Ok(None);
    }
    let Some(how) = rules_match(m, attrs) else {
        return Ok(None);
    };
    if let Some(e) = ns_err.or(obj_err) {
        return Err(e);
    }
    Ok(Some(how))
}
