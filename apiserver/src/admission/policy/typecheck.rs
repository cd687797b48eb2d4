//! The ValidatingAdmissionPolicy status controller (upstream's
//! `validatingadmissionpolicy-status-controller`, run by the API server): each new generation of
//! a policy is type-checked against the kinds its `matchConstraints` name, and the result lands
//! in `status.typeChecking` with `status.observedGeneration`.

use serde_json::{Value, json};

use super::compile::compile_policy;
use crate::apiextensions::cel::types;
use k1s_apimachinery::catalog;

/// `(fieldRef, warning)` of every expression with type errors, in upstream's order: each
/// validation's `expression` then `messageExpression`.
pub fn check(policy_json: &Value) -> Vec<(String, String)> {
    let (policy, _) = compile_policy(policy_json);
    let schemas = crate::openapi::schemas();
    // The kinds the policy matches, when its rules name them without wildcards.
    let mut kinds: Vec<(String, &'static Value)> = Vec::new();
    for named in policy
        .match_constraints
        .iter()
        .flat_map(|m| m.resource_rules.iter())
    {
        let r = &named.rule;
        for g in &r.api_groups {
            for v in &r.api_versions {
                for res in &r.resources {
                    let Some(info) = catalog::find(g, v, res) else {
                        continue;
                    };
                    let def = if catalog::is_custom(info) {
                        custom_resource_schema(info)
                    } else {
                        schemas
                            .definition_for(info.group, info.version, info.kind)
                            .and_then(|d| schemas.definition(d))
                    };
                    let Some(def) = def else {
                        continue;
                    };
                    let gvk = format!("{}/{}, Kind={}", info.group, info.version, info.kind);
                    if !kinds.iter().any(|(k, _)| *k == gvk) {
                        kinds.push((gvk, def));
                    }
                }
            }
        }
    }
    let resolve = |name: &str| schemas.definition(name);
    // `params` is typed when the paramKind is a built-in kind.
    let params = policy.param_kind.as_ref().and_then(|(api_version, kind)| {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let info = catalog::find_by_kind(group, version, kind)?;
        schemas
            .definition_for(info.group, info.version, info.kind)
            .and_then(|d| schemas.definition(d))
    });
    // One set of declarations per matched kind (variables may depend on `object`).
    let declarations: Vec<(&String, types::Declarations)> = kinds
        .iter()
        .map(|(gvk, def)| {
            let mut d = types::Declarations::new(Some(def), params);
            for v in &policy.variables {
                d.declare_variable(&v.name, &v.expression, &resolve);
            }
            (gvk, d)
        })
        .collect();
    let mut out = Vec::new();
    for (i, v) in policy.validations.iter().enumerate() {
        let exprs = [
            ("expression", Some(&v.expression)),
            ("messageExpression", v.message_expression.as_ref()),
        ];
        for (field, expr) in exprs {
            let Some(expr) = expr else { continue };
            let found: Vec<String> = declarations
                .iter()
                .filter_map(|(gvk, declared)| {
                    let w = types::warnings(expr, declared, &resolve);
                    (!w.is_empty()).then(|| format!("{gvk}: {}", w.join("\n")))
                })
                .collect();
            if !found.is_empty() {
                out.push((format!("spec.validations[{i}].{field}"), found.join("\n")));
            }
        }
    }
    out
}

/// A served custom resource version's schema, as upstream types it (with TypeMeta and
/// ObjectMeta). The type checker reads schemas for the life of the process, so each distinct
/// schema is kept once: a CRD's schema changes rarely, and a changed one is a new entry.
fn custom_resource_schema(info: &catalog::ResourceInfo) -> Option<&'static Value> {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    static KEPT: LazyLock<Mutex<HashMap<String, &'static Value>>> = LazyLock::new(Default::default);
    let mut schema = crate::apiextensions::schema_for_gvk(&info.gvk())?;
    crate::apply::schema::add_kube_native_fields(&mut schema, true);
    let key = format!("{}/{}/{}\n{schema}", info.group, info.version, info.kind);
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Some(
        *kept
            .entry(key)
            .or_insert_with(|| Box::leak(Box::new(schema))),
    )
}

/// The status a policy gets for its current generation.
pub fn status_for(policy_json: &Value) -> Value {
    let warnings: Vec<Value> = check(policy_json)
        .into_iter()
        .map(|(field_ref, warning)| json!({"fieldRef": field_ref, "warning": warning}))
        .collect();
    let mut type_checking = json!({});
    if !warnings.is_empty() {
        type_checking["expressionWarnings"] = Value::Array(warnings);
    }
    json!({
        "observedGeneration": policy_json.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        "typeChecking": type_checking,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(expression: &str, message_expression: Option<&str>) -> Value {
        let mut validation = json!({"expression": expression});
        if let Some(m) = message_expression {
            validation["messageExpression"] = json!(m);
        }
        json!({
            "metadata": {"name": "p", "generation": 3},
            "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                "validations": [validation]
            }
        })
    }

    #[test]
    fn type_confusion_is_reported_per_expression_as_upstream() {
        let ok = status_for(&policy("object.spec.replicas > 1", None));
        assert_eq!(ok, json!({"observedGeneration": 3, "typeChecking": {}}));

        let confused = check(&policy(
            "object.spec.replicas > '1'",
            Some("'wants replicas > 1, got ' + object.spec.replicas"),
        ));
        assert_eq!(confused.len(), 2, "{confused:?}");
        assert_eq!(confused[0].0, "spec.validations[0].expression");
        assert!(
            confused[0].1.starts_with("apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'"),
            "{}",
            confused[0].1
        );
        assert_eq!(confused[1].0, "spec.validations[0].messageExpression");
        assert!(
            confused[1]
                .1
                .contains("found no matching overload for '_+_' applied to '(string, int)'"),
            "{}",
            confused[1].1
        );
        // Undefined fields are named; dynamic values (int-or-string, maps) are not judged.
        let undefined = check(&policy("object.spec.replica > 1", None));
        assert!(
            undefined[0].1.contains("undefined field 'replica'"),
            "{undefined:?}"
        );
        assert!(check(&policy(
            "object.spec.strategy.rollingUpdate.maxSurge > '1' && object.metadata.labels.x == 'y'",
            None
        ))
        .is_empty());
    }

    #[test]
    fn params_and_variables_are_typed_too() {
        let mut p = policy("params.metadata.name > 1", None);
        p["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        let found = check(&p);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .1
                .contains("found no matching overload for '_>_' applied to '(string, int)'"),
            "{found:?}"
        );
        let mut p = policy("variables.replicas > 'x' || variables.later == 1", None);
        p["spec"]["variables"] = json!([
            {"name": "replicas", "expression": "object.spec.replicas"},
            {"name": "later", "expression": "variables.replicas + 1"}
        ]);
        let found = check(&p);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .1
                .contains("found no matching overload for '_>_' applied to '(int, string)'"),
            "{found:?}"
        );
        // A paramKind that is not a built-in kind leaves `params` dynamic.
        let mut p = policy("params.spec.x > 1", None);
        p["spec"]["paramKind"] = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        assert!(check(&p).is_empty());
    }
}
