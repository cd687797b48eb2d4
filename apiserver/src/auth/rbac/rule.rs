//! RBAC policy rules: lenient parsing from JSON, upstream's request matching
//! (`rbacv1helpers.VerbMatches` & co.) and the compact rendering used in escalation messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::auth::Attributes;

/// `*` in verbs, apiGroups, resources and nonResourceURLs.
pub const ALL: &str = "*";

/// One rule of a Role or ClusterRole (`rbac/v1.PolicyRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

/// A resource rule as SelfSubjectRulesReview reports it (`authorization/v1.ResourceRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

/// A non-resource rule as SelfSubjectRulesReview reports it (`authorization/v1.NonResourceRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

/// The strings of a JSON list; anything else (absent, null, not a list, non-string items) is
/// skipped, so a malformed stored object can never make authorization fail open or panic.
pub(crate) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

impl PolicyRule {
    /// Parses one `PolicyRule` JSON object, leniently (see [`strings`]).
    pub fn from_json(value: &Value) -> PolicyRule {
        PolicyRule {
            verbs: strings(value.get("verbs")),
            api_groups: strings(value.get("apiGroups")),
            resources: strings(value.get("resources")),
            resource_names: strings(value.get("resourceNames")),
            non_resource_urls: strings(value.get("nonResourceURLs")),
        }
    }

    /// The rule as a JSON object (empty lists omitted, `verbs` always present).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Upstream `RuleAllows`: does this rule allow the request?
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if attrs.is_resource_request {
            let combined = if attrs.subresource.is_empty() {
                attrs.resource.clone()
            } else {
                format!("{}/{}", attrs.resource, attrs.subresource)
            };
            self.verb_matches(&attrs.verb)
                && self.api_group_matches(&attrs.api_group)
                && self.resource_matches(&combined, &attrs.subresource)
                && self.resource_name_matches(&attrs.name)
        } else {
            self.verb_matches(&attrs.verb) && self.non_resource_url_matches(&attrs.path)
        }
    }

    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    pub fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// `combined` is `resource` or `resource/subresource`; a rule resource `*/sub` matches any
    /// resource's `sub` subresource.
    pub fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == ALL || r == combined {
                return true;
            }
            !subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource)
        })
    }

    /// No resourceNames means every name.
    pub fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// Exact match, `*`, or a trailing `*` as a prefix match.
    pub fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == ALL || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        })
    }

    /// Upstream `rbacv1helpers.CompactString`, e.g.
    /// `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (label, list) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !list.is_empty() {
                parts.push(format!("{label}:{}", go_quote_list(list)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// The `rules` of a Role or ClusterRole object (absent or malformed means none).
pub fn rules_of(object: &Value) -> Vec<PolicyRule> {
    object
        .get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(PolicyRule::from_json).collect())
        .unwrap_or_default()
}

/// Rules as a JSON list, for writing a ClusterRole's aggregated `rules`.
pub fn rules_to_json(rules: &[PolicyRule]) -> Value {
    Value::Array(rules.iter().map(PolicyRule::to_json).collect())
}

/// Go's `%q` of a string (`strconv.Quote`).
pub use k1s_apimachinery::gofmt::quote as go_quote;

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quote_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}
