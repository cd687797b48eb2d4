//! The `audit.k8s.io/v1` Policy: which requests are audited and how much of them, as upstream's
//! `k8s.io/apiserver/pkg/audit/policy` (checker and reader). The first matching rule decides;
//! no match means level None. Policy-level `omitStages` are added to every rule's.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::auth::Attributes;

/// How much of a request is recorded. Ordered: `None < Metadata < Request < RequestResponse`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Level {
    #[default]
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub const ALL: [Level; 4] = [
        Level::None,
        Level::Metadata,
        Level::Request,
        Level::RequestResponse,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The point of a request's life an event is written at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::RequestReceived,
        Stage::ResponseStarted,
        Stage::ResponseComplete,
        Stage::Panic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// A rule's `resources` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupResources {
    pub group: String,
    /// `pods`, `pods/log`, `*`, `*/status`, `pods/*`.
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    pub level: Level,
    pub users: Vec<String>,
    pub user_groups: Vec<String>,
    pub verbs: Vec<String>,
    pub resources: Vec<GroupResources>,
    pub namespaces: Vec<String>,
    pub non_resource_urls: Vec<String>,
    /// The rule's own stages plus the policy's.
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: Option<bool>,
}

/// What the policy decided for one request (upstream `RequestAuditConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAuditConfig {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub rules: Vec<PolicyRule>,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

fn strings(v: Option<&Value>, path: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|s| {
                s.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{path}: expected a list of strings"))
            })
            .collect(),
        Some(_) => Err(format!("{path}: expected a list of strings")),
    }
}

fn stages(v: Option<&Value>, path: &str) -> Result<Vec<Stage>, String> {
    strings(v, path)?
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Stage::parse(s).ok_or_else(|| {
                format!(
                    "{path}[{i}]: Unsupported value: {s:?}: supported values: \"RequestReceived\", \
                     \"ResponseStarted\", \"ResponseComplete\", \"Panic\""
                )
            })
        })
        .collect()
}

fn bool_field(v: Option<&Value>, path: &str) -> Result<Option<bool>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{path}: expected a boolean")),
    }
}

impl Policy {
    /// Parses a policy file's text (YAML or JSON). Errors read like upstream's
    /// (`loaded illegal policy with 0 rules`, `rules[0].level: Unsupported value: ...`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim_start();
        let value: Value = if trimmed.starts_with('{') {
            serde_json::from_str(text).map_err(|e| format!("failed decoding policy: {e}"))?
        } else {
            serde_saphyr::from_str(text).map_err(|e| format!("failed decoding policy: {e}"))?
        };
        Self::from_json(&value)
    }

    /// Reads and parses a policy file.
    pub fn load(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "failed to read file path {:?}: {e}",
                path.display().to_string()
            )
        })?;
        Self::parse(&text).map_err(|e| format!("{e} (from file {})", path.display()))
    }

    /// Interprets a decoded policy object.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        let Some(obj) = value.as_object() else {
            return Err("failed decoding policy: expected an object".to_string());
        };
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "Policy" || api_version != "audit.k8s.io/v1" {
            return Err(format!(
                "failed decoding policy: no kind {kind:?} is registered for version {api_version:?} \
                 (expected kind \"Policy\" in \"audit.k8s.io/v1\")"
            ));
        }
        let omit_stages = stages(obj.get("omitStages"), "omitStages")?;
        let omit_managed_fields =
            bool_field(obj.get("omitManagedFields"), "omitManagedFields")?.unwrap_or(false);
        let rules = match obj.get("rules") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, r)| parse_rule(r, &format!("rules[{i}]"), &omit_stages))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("rules: expected a list".to_string()),
        };
        if rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".to_string());
        }
        Ok(Policy {
            rules,
            omit_stages,
            omit_managed_fields,
        })
    }

    /// The decision for a request (upstream `EvaluatePolicyRule`).
    pub fn evaluate(&self, attrs: &Attributes) -> RequestAuditConfig {
        for rule in &self.rules {
            if rule_matches(rule, attrs) {
                return RequestAuditConfig {
                    level: rule.level,
                    omit_stages: rule.omit_stages.clone(),
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.omit_managed_fields),
                };
            }
        }
        RequestAuditConfig {
            level: Level::None,
            omit_stages: self.omit_stages.clone(),
            omit_managed_fields: self.omit_managed_fields,
        }
    }

    /// The level for a request.
    pub fn level_for(&self, attrs: &Attributes) -> Level {
        self.evaluate(attrs).level
    }
}

fn parse_rule(v: &Value, path: &str, policy_stages: &[Stage]) -> Result<PolicyRule, String> {
    let Some(obj) = v.as_object() else {
        return Err(format!("{path}: expected an object"));
    };
    let level_str = obj.get("level").and_then(Value::as_str).unwrap_or("");
    let level = Level::parse(level_str).ok_or_else(|| {
        if level_str.is_empty() {
            format!("{path}.level: Required value")
        } else {
            format!(
                "{path}.level: Unsupported value: {level_str:?}: supported values: \"None\", \
                 \"Metadata\", \"Request\", \"RequestResponse\""
            )
        }
    })?;
    let resources = match obj.get("resources") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, gr)| {
                let p = format!("{path}.resources[{i}]");
                Ok(GroupResources {
                    group: gr
                        .get("group")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    resources: strings(gr.get("resources"), &format!("{p}.resources"))?,
                    resource_names: strings(
                        gr.get("resourceNames"),
                        &format!("{p}.resourceNames"),
                    )?,
                })
            })
            .collect::<Result<_, String>>()?,
        Some(_) => return Err(format!("{path}.resources: expected a list")),
    };
    let namespaces = strings(obj.get("namespaces"), &format!("{path}.namespaces"))?;
    let non_resource_urls = strings(
        obj.get("nonResourceURLs"),
        &format!("{path}.nonResourceURLs"),
    )?;
    if !non_resource_urls.is_empty() && (!resources.is_empty() || !namespaces.is_empty()) {
        return Err(format!(
            "{path}.nonResourceURLs: Invalid value: {non_resource_urls:?}: rules cannot apply to \
             both regular resources and non-resource URLs"
        ));
    }
    let mut omit_stages = stages(obj.get("omitStages"), &format!("{path}.omitStages"))?;
    for s in policy_stages {
        if !omit_stages.contains(s) {
            omit_stages.push(*s);
        }
    }
    Ok(PolicyRule {
        level,
        users: strings(obj.get("users"), &format!("{path}.users"))?,
        user_groups: strings(obj.get("userGroups"), &format!("{path}.userGroups"))?,
        verbs: strings(obj.get("verbs"), &format!("{path}.verbs"))?,
        resources,
        namespaces,
        non_resource_urls,
        omit_stages,
        omit_managed_fields: bool_field(
            obj.get("omitManagedFields"),
            &format!("{path}.omitManagedFields"),
        )?,
    })
}

fn has(list: &[String], s: &str) -> bool {
    list.iter().any(|x| x == s)
}

/// Upstream's `ruleMatches`.
pub fn rule_matches(rule: &PolicyRule, attrs: &Attributes) -> bool {
    if !rule.users.is_empty() && !has(&rule.users, &attrs.user.name) {
        return false;
    }
    if !rule.user_groups.is_empty()
        && !attrs
            .user
            .effective_groups()
            .iter()
            .any(|g| has(&rule.user_groups, g))
    {
        return false;
    }
    if !rule.verbs.is_empty() && !has(&rule.verbs, &attrs.verb) {
        return false;
    }
    if !rule.namespaces.is_empty() || !rule.resources.is_empty() {
        return rule_matches_resource(rule, attrs);
    }
    if !rule.non_resource_urls.is_empty() {
        return !attrs.is_resource_request
            && rule
                .non_resource_urls
                .iter()
                .any(|spec| path_matches(&attrs.path, spec));
    }
    true
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || (spec.ends_with('*') && path.starts_with(spec.trim_end_matches('*')))
}

fn rule_matches_resource(rule: &PolicyRule, attrs: &Attributes) -> bool {
    if !attrs.is_resource_request {
        return false;
    }
    // Cluster-scoped resources have the empty namespace.
    if !rule.namespaces.is_empty() && !has(&rule.namespaces, &attrs.namespace) {
        return false;
    }
    if rule.resources.is_empty() {
        return true;
    }
    let resource = attrs.resource.as_str();
    let sub = attrs.subresource.as_str();
    let combined = if sub.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{sub}")
    };
    rule.resources.iter().any(|gr| {
        if gr.group != attrs.api_group {
            return false;
        }
        if gr.resources.is_empty() {
            return true;
        }
        if !gr.resource_names.is_empty() && !has(&gr.resource_names, &attrs.name) {
            return false;
        }
        gr.resources.iter().any(|res| {
            res == &combined
                || res == "*"
                || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                || res.strip_suffix("/*") == Some(resource)
        })
    })
}
