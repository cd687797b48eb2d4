//! ValidatingAdmissionPolicies and their bindings parsed and compiled from JSON: one walk that
//! both reports upstream's field errors (create/update validation) and builds what the
//! dispatcher evaluates, so what is accepted is exactly what runs.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::selector::LabelSelector;
use k1s_apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;

use super::super::conditions::{MAX_MATCH_CONDITIONS, MatchCondition};
use super::super::webhook::{FailurePolicy, Rule, parse_rule};
use crate::apiextensions::cel::{self, Expression};

/// Upstream's policy reasons a validation may give.
const REASONS: [&str; 4] = [
    "Forbidden",
    "Invalid",
    "RequestEntityTooLarge",
    "Unauthorized",
];
const ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_VALUE_EXPRESSION_LEN: usize = 5 * 1024;

/// The top-level variables of a policy's expressions, by whether it has a `paramKind` and
/// `variables` (upstream declares `params` and `variables` only then; `authorizer` always).
fn declared(params: bool, variables: bool) -> &'static [&'static str] {
    match (params, variables) {
        (false, false) => &[
            "object",
            "oldObject",
            "request",
            "namespaceObject",
            "authorizer",
        ],
        (true, false) => &[
            "object",
            "oldObject",
            "request",
            "namespaceObject",
            "authorizer",
            "params",
        ],
        (false, true) => &[
            "object",
            "oldObject",
            "request",
            "namespaceObject",
            "authorizer",
            "variables",
        ],
        (true, true) => &[
            "object",
            "oldObject",
            "request",
            "namespaceObject",
            "authorizer",
            "params",
            "variables",
        ],
    }
}

/// `matchConstraints` / `matchResources`.
#[derive(Debug)]
pub struct MatchResources {
    pub namespace_selector: Result<LabelSelector, String>,
    pub object_selector: Result<LabelSelector, String>,
    pub resource_rules: Vec<NamedRule>,
    pub exclude_resource_rules: Vec<NamedRule>,
    /// `matchPolicy: Equivalent` (the default).
    pub equivalent: bool,
}

/// A `NamedRuleWithOperations`.
#[derive(Debug)]
pub struct NamedRule {
    pub rule: Rule,
    pub resource_names: Vec<String>,
}

#[derive(Debug)]
pub struct Validation {
    pub expression: Expression,
    pub message: String,
    pub message_expression: Option<Expression>,
    pub reason: Option<String>,
}

#[derive(Debug)]
pub struct Variable {
    pub name: String,
    pub expression: Expression,
}

#[derive(Debug)]
pub struct AuditAnnotation {
    pub key: String,
    pub value_expression: Expression,
}

/// A compiled ValidatingAdmissionPolicy.
#[derive(Debug)]
pub struct Policy {
    pub name: String,
    pub failure_policy: FailurePolicy,
    /// `(apiVersion, kind)`.
    pub param_kind: Option<(String, String)>,
    pub match_constraints: Option<MatchResources>,
    pub match_conditions: Vec<MatchCondition>,
    pub variables: Vec<Variable>,
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<AuditAnnotation>,
    /// Why a stored policy cannot run (it was stored before it became invalid, or by another
    /// server): reported per failurePolicy when the policy matches.
    pub configuration_error: Option<String>,
}

/// `paramRef` of a binding.
#[derive(Debug)]
pub struct ParamRef {
    pub name: String,
    pub namespace: String,
    pub selector: Option<Result<LabelSelector, String>>,
    pub deny_when_missing: bool,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug)]
pub struct Binding {
    pub name: String,
    pub policy_name: String,
    pub param_ref: Option<ParamRef>,
    pub match_resources: Option<MatchResources>,
    pub actions: Vec<String>,
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn list<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    list(v, k)
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn has_newline(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

fn selector(
    v: &Value,
    key: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Result<LabelSelector, String> {
    match v.get(key) {
        None | Some(Value::Null) => {
            errs.push(FieldError::required(format!("{path}.{key}"), ""));
            Ok(LabelSelector::everything())
        }
        Some(sel) => LabelSelector::from_json(sel).map_err(|e| {
            errs.push(FieldError::invalid(
                format!("{path}.{key}"),
                sel.clone(),
                e.to_string(),
            ));
            e.to_string()
        }),
    }
}

fn named_rules(v: &Value, key: &str, path: &str, errs: &mut Vec<FieldError>) -> Vec<NamedRule> {
    list(v, key)
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let rpath = format!("{path}.{key}[{i}]");
            let resource_names = strings(r, "resourceNames");
            for (j, n) in resource_names.iter().enumerate() {
                if resource_names[..j].contains(n) {
                    errs.push(FieldError::duplicate(
                        format!("{rpath}.resourceNames[{j}]"),
                        n.as_str(),
                    ));
                }
            }
            crate::admission::validation::rule_with_operations(r, &rpath, errs);
            NamedRule {
                rule: parse_rule(r),
                resource_names,
            }
        })
        .collect()
}

/// Parses (and checks) a `MatchResources` object at `path`.
fn match_resources(v: &Value, path: &str, errs: &mut Vec<FieldError>) -> MatchResources {
    let equivalent = match s(v, "matchPolicy") {
        None => {
            errs.push(FieldError::required(format!("{path}.matchPolicy"), ""));
            true
        }
        Some("Equivalent") => true,
        Some("Exact") => false,
        Some(other) => {
            errs.push(FieldError::not_supported(
                format!("{path}.matchPolicy"),
                other,
                &["Equivalent", "Exact"],
            ));
            true
        }
    };
    MatchResources {
        namespace_selector: selector(v, "namespaceSelector", path, errs),
        object_selector: selector(v, "objectSelector", path, errs),
        resource_rules: named_rules(v, "resourceRules", path, errs),
        exclude_resource_rules: named_rules(v, "excludeResourceRules", path, errs),
        equivalent,
    }
}

/// Checks and compiles `matchConditions` at `path` (also used for webhook configurations).
pub fn match_conditions(
    v: Option<&Value>,
    path: &str,
    declared: &'static [&'static str],
    errs: &mut Vec<FieldError>,
) -> Vec<MatchCondition> {
    let items = v
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if items.len() > MAX_MATCH_CONDITIONS {
        errs.push(FieldError::too_many(
            path,
            Some(items.len()),
            Some(MAX_MATCH_CONDITIONS),
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (i, c) in items.iter().enumerate() {
        let cpath = format!("{path}[{i}]");
        let name = s(c, "name").unwrap_or_default();
        let text = s(c, "expression").unwrap_or_default().trim();
        let mut compiled = None;
        if text.is_empty() {
            errs.push(FieldError::required(format!("{cpath}.expression"), ""));
        } else {
            match cel::compile_expression(text, declared, &[]) {
                Ok(e) => compiled = Some(e),
                Err(e) => errs.push(FieldError::invalid(format!("{cpath}.expression"), text, e)),
            }
        }
        if name.is_empty() {
            errs.push(FieldError::required(format!("{cpath}.name"), ""));
        } else {
            for m in is_qualified_name(name) {
                errs.push(FieldError::invalid(format!("{cpath}.name"), name, m));
            }
            if names.contains(&name) {
                errs.push(FieldError::duplicate(format!("{cpath}.name"), name));
            }
            names.push(name);
        }
        if let Some(expression) = compiled {
            out.push(MatchCondition {
                name: name.to_string(),
                expression,
            });
        }
    }
    out
}

fn expression(
    text: &str,
    path: String,
    declared: &'static [&'static str],
    variables: &[String],
    errs: &mut Vec<FieldError>,
) -> Option<Expression> {
    match cel::compile_expression(text, declared, variables) {
        Ok(e) => Some(e),
        Err(e) => {
            errs.push(FieldError::invalid(path, text, e));
            None
        }
    }
}

fn param_kind(v: &Value, path: &str, errs: &mut Vec<FieldError>) -> (String, String) {
    let api_version = s(v, "apiVersion").unwrap_or_default();
    let kind = s(v, "kind").unwrap_or_default();
    if api_version.is_empty() {
        errs.push(FieldError::required(format!("{path}.apiVersion"), ""));
    } else {
        let (group, version) = match api_version.matches('/').count() {
            0 => ("", api_version),
            1 => api_version.split_once('/').unwrap_or_default(),
            _ => {
                errs.push(FieldError::invalid(
                    format!("{path}.apiVersion"),
                    api_version,
                    format!("unexpected GroupVersion string: {api_version}"),
                ));
                ("", "v")
            }
        };
        if !group.is_empty() {
            let e = is_dns1123_subdomain(group);
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{path}.apiVersion"),
                    group,
                    e.join(","),
                ));
            }
        }
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.apiVersion"),
                api_version,
                "version must be specified",
            ));
        } else {
            let e = is_dns1035_label(version);
            if !e.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{path}.apiVersion"),
                    version,
                    e.join(","),
                ));
            }
        }
    }
    if kind.is_empty() {
        errs.push(FieldError::required(format!("{path}.kind"), ""));
    } else {
        let e = is_dns1035_label(&kind.to_lowercase());
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.kind"),
                kind,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    (api_version.to_string(), kind.to_string())
}

fn is_cel_identifier(name: &str) -> bool {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED.contains(&name)
}

/// Compiles a ValidatingAdmissionPolicy object; the field errors are upstream's validation of
/// its spec (metadata is checked by the registry).
pub fn compile_policy(obj: &Value) -> (Policy, Vec<FieldError>) {
    let mut errs = Vec::new();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let failure_policy = match s(spec, "failurePolicy") {
        None => {
            errs.push(FieldError::required("spec.failurePolicy", ""));
            FailurePolicy::Fail
        }
        Some("Fail") => FailurePolicy::Fail,
        Some("Ignore") => FailurePolicy::Ignore,
        Some(other) => {
            errs.push(FieldError::not_supported(
                "spec.failurePolicy",
                other,
                &["Fail", "Ignore"],
            ));
            FailurePolicy::Fail
        }
    };
    let param_kind = spec
        .get("paramKind")
        .filter(|p| p.is_object())
        .map(|p| param_kind(p, "spec.paramKind", &mut errs));
    let match_constraints = match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => {
            errs.push(FieldError::required("spec.matchConstraints", ""));
            None
        }
        Some(m) => {
            let mr = match_resources(m, "spec.matchConstraints", &mut errs);
            if mr.resource_rules.is_empty() {
                errs.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
            Some(mr)
        }
    };
    let has_variables = !list(spec, "variables").is_empty();
    let vars = declared(param_kind.is_some(), has_variables);
    let match_conditions = match_conditions(
        spec.get("matchConditions"),
        "spec.matchConditions",
        declared(param_kind.is_some(), false),
        &mut errs,
    );
    let mut variables = Vec::new();
    let mut names = Vec::new();
    for (i, v) in list(spec, "variables").iter().enumerate() {
        let path = format!("spec.variables[{i}]");
        let vname = s(v, "name").unwrap_or_default();
        if vname.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{path}.name"),
                "name is not specified",
            ));
        } else if !is_cel_identifier(vname) {
            errs.push(FieldError::invalid(
                format!("{path}.name"),
                vname,
                "name is not a valid CEL identifier",
            ));
        }
        let text = s(v, "expression").unwrap_or_default();
        if text.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{path}.expression"),
                "expression is not specified",
            ));
        } else if let Some(e) =
            expression(text, format!("{path}.expression"), vars, &names, &mut errs)
        {
            variables.push(Variable {
                name: vname.to_string(),
                expression: e,
            });
        }
        names.push(vname.to_string());
    }
    let mut validations = Vec::new();
    let audit_list = list(spec, "auditAnnotations");
    if list(spec, "validations").is_empty() && audit_list.is_empty() {
        let msg = "validations or auditAnnotations must contain at least one item";
        errs.push(FieldError::required("spec.validations", msg));
        errs.push(FieldError::required("spec.auditAnnotations", msg));
    }
    for (i, v) in list(spec, "validations").iter().enumerate() {
        let path = format!("spec.validations[{i}]");
        let text = s(v, "expression").unwrap_or_default();
        let message = s(v, "message").unwrap_or_default();
        let message_expression = s(v, "messageExpression").unwrap_or_default();
        let compiled = if text.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{path}.expression"),
                "expression is not specified",
            ));
            None
        } else {
            expression(text, format!("{path}.expression"), vars, &names, &mut errs)
        };
        let message_compiled =
            if !message_expression.is_empty() && message_expression.trim().is_empty() {
                errs.push(FieldError::invalid(
                    format!("{path}.messageExpression"),
                    message_expression,
                    "must be non-empty if specified",
                ));
                None
            } else if message_expression.trim().is_empty() {
                None
            } else {
                expression(
                    message_expression,
                    format!("{path}.messageExpression"),
                    vars,
                    &names,
                    &mut errs,
                )
            };
        if !message.is_empty() && message.trim().is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if has_newline(message.trim()) {
            errs.push(FieldError::invalid(
                format!("{path}.message"),
                message,
                "message must not contain line breaks",
            ));
        }
        let reason = s(v, "reason");
        if let Some(r) = reason
            && !REASONS.contains(&r)
        {
            errs.push(FieldError::not_supported(
                format!("{path}.reason"),
                r,
                &REASONS,
            ));
        }
        if let Some(expression) = compiled {
            validations.push(Validation {
                expression,
                message: message.trim().to_string(),
                message_expression: message_compiled,
                reason: reason.map(str::to_string),
            });
        }
    }
    if audit_list.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push(FieldError::invalid(
            "spec.auditAnnotations",
            Value::Array(audit_list.to_vec()),
            format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let mut audit_annotations = Vec::new();
    let mut keys: Vec<&str> = Vec::new();
    for (i, a) in audit_list.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        let key = s(a, "key").unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.key"),
                key,
                "requires metadata.name be non-empty",
            ));
        } else {
            let full = format!("{name}/{key}");
            for m in is_qualified_name(&full) {
                errs.push(FieldError::invalid(format!("{path}.key"), full.as_str(), m));
            }
        }
        let text = s(a, "valueExpression").unwrap_or_default().trim();
        let compiled = if text.is_empty() {
            errs.push(FieldError::required(
                format!("{path}.valueExpression"),
                "valueExpression is not specified",
            ));
            None
        } else if text.len() > MAX_VALUE_EXPRESSION_LEN {
            errs.push(FieldError::required(
                format!("{path}.valueExpression"),
                format!("must not exceed {MAX_VALUE_EXPRESSION_LEN} bytes in length"),
            ));
            None
        } else {
            expression(
                text,
                format!("{path}.valueExpression"),
                vars,
                &names,
                &mut errs,
            )
        };
        if keys.contains(&key) {
            errs.push(FieldError::duplicate(format!("{path}.key"), key));
        }
        keys.push(key);
        if let Some(value_expression) = compiled {
            audit_annotations.push(AuditAnnotation {
                key: key.to_string(),
                value_expression,
            });
        }
    }
    let configuration_error = k1s_apimachinery::status::aggregate_message(&errs);
    (
        Policy {
            name,
            failure_policy,
            param_kind,
            match_constraints,
            match_conditions,
            variables,
            validations,
            audit_annotations,
            configuration_error,
        },
        errs,
    )
}

/// Parses a ValidatingAdmissionPolicyBinding; the field errors are upstream's validation.
pub fn compile_binding(obj: &Value) -> (Binding, Vec<FieldError>) {
    let mut errs = Vec::new();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let policy_name = s(spec, "policyName").unwrap_or_default().to_string();
    if policy_name.is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    } else {
        for m in is_dns1123_subdomain(&policy_name) {
            errs.push(FieldError::invalid(
                "spec.policyName",
                policy_name.as_str(),
                m,
            ));
        }
    }
    let param_ref = spec.get("paramRef").filter(|p| p.is_object()).map(|p| {
        let pname = s(p, "name").unwrap_or_default().to_string();
        let selector = p.get("selector").filter(|s| !s.is_null()).map(|sel| {
            LabelSelector::from_json(sel).map_err(|e| {
                errs.push(FieldError::invalid(
                    "spec.paramRef.selector",
                    sel.clone(),
                    e.to_string(),
                ));
                e.to_string()
            })
        });
        if !pname.is_empty() {
            for bad in [".", ".."] {
                if pname == bad {
                    errs.push(FieldError::invalid(
                        "spec.paramRef.name",
                        pname.as_str(),
                        format!("may not be '{bad}'"),
                    ));
                }
            }
            for bad in ["/", "%"] {
                if pname.contains(bad) {
                    errs.push(FieldError::invalid(
                        "spec.paramRef.name",
                        pname.as_str(),
                        format!("may not contain '{bad}'"),
                    ));
                }
            }
            if selector.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.paramRef.name",
                    "name and selector are mutually exclusive",
                ));
                errs.push(FieldError::forbidden(
                    "spec.paramRef.selector",
                    "name and selector are mutually exclusive",
                ));
            }
        }
        if pname.is_empty() && selector.is_none() {
            errs.push(FieldError::required(
                "spec.paramRef",
                "one of name or selector must be specified",
            ));
        }
        let action = s(p, "parameterNotFoundAction").unwrap_or_default();
        match action {
            "" => errs.push(FieldError::required(
                "spec.paramRef.parameterNotFoundAction",
                "",
            )),
            "Deny" | "Allow" => {}
            other => errs.push(FieldError::not_supported(
                "spec.paramRef.parameterNotFoundAction",
                other,
                &["Deny", "Allow"],
            )),
        }
        ParamRef {
            name: pname,
            namespace: s(p, "namespace").unwrap_or_default().to_string(),
            selector,
            deny_when_missing: action != "Allow",
        }
    });
    let match_resources = spec
        .get("matchResources")
        .filter(|m| m.is_object())
        .map(|m| match_resources(m, "spec.matchResources", &mut errs));
    let actions = strings(spec, "validationActions");
    for (i, a) in actions.iter().enumerate() {
        let path = format!("spec.validationActions[{i}]");
        if !ACTIONS.contains(&a.as_str()) {
            errs.push(FieldError::not_supported(
                path.clone(),
                a.as_str(),
                &ACTIONS,
            ));
        }
        if actions[..i].contains(a) {
            errs.push(FieldError::duplicate(path, a.as_str()));
        }
    }
    if actions.iter().any(|a| a == "Deny") && actions.iter().any(|a| a == "Warn") {
        errs.push(FieldError::invalid(
            "spec.validationActions",
            Value::from(actions.clone()),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if actions.is_empty() {
        errs.push(FieldError::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    (
        Binding {
            name,
            policy_name,
            param_ref,
            match_resources,
            actions,
        },
        errs,
    )
}
