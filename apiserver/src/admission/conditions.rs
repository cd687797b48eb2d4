//! CEL `matchConditions` shared by admission webhooks and ValidatingAdmissionPolicies: compiled
//! once with the configuration, evaluated per request as upstream's `matchconditions.Matcher`
//! (any false skips; errors with no false follow the failure policy), plus the `request`
//! variable expressions see.

use serde_json::Value;

use super::AdmissionAttributes;
use crate::apiextensions::cel::{self, Activation, EvalError, Expression};

/// The variables of a webhook's match conditions. `authorizer` is not offered (k1s has no CEL
/// authorizer library), so a condition using it fails to compile.
pub const WEBHOOK_VARIABLES: &[&str] = &["object", "oldObject", "request", "authorizer"];

/// Upstream's limit on the number of match conditions.
pub const MAX_MATCH_CONDITIONS: usize = 64;

/// One compiled condition.
#[derive(Debug)]
pub struct MatchCondition {
    pub name: String,
    pub expression: Expression,
}

/// What the conditions decided.
#[derive(Debug, PartialEq, Eq)]
pub enum MatchResult {
    Matches,
    /// A condition was false (its name).
    Excluded(String),
    /// Evaluation errors and no false condition: upstream's aggregated message.
    Error(String),
}

/// Compiles `matchConditions` of a stored configuration (validation already refused bad
/// ones; a failure here becomes a configuration error).
pub fn compile(
    conditions: Option<&Value>,
    declared: &'static [&'static str],
) -> Result<Vec<MatchCondition>, String> {
    let mut out = Vec::new();
    for c in conditions.and_then(Value::as_array).into_iter().flatten() {
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        let text = c
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let expression = cel::compile_expression(text.trim(), declared, &[])
            .map_err(|e| format!("matchCondition '{name}': {e}"))?;
        out.push(MatchCondition {
            name: name.to_string(),
            expression,
        });
    }
    Ok(out)
}

/// Evaluates the conditions in order.
pub fn evaluate(conditions: &[MatchCondition], act: &Activation) -> MatchResult {
    let mut budget = cel::ADMISSION_BUDGET;
    let mut errors = Vec::new();
    for c in conditions {
        match c.expression.evaluate(act, &mut budget) {
            Ok(cel::CelValue::Bool(false)) => return MatchResult::Excluded(c.name.clone()),
            Ok(cel::CelValue::Bool(true)) => {}
            Ok(other) => errors.push(format!(
                "expression '{}' resulted in error: no such overload: {} is not a bool",
                c.expression.text(),
                other.type_of()
            )),
            Err(EvalError::Failed(m)) => errors.push(m),
            Err(EvalError::OutOfBudget) => return MatchResult::Error(cel::OUT_OF_BUDGET.into()),
        }
    }
    match errors.len() {
        0 => MatchResult::Matches,
        1 => MatchResult::Error(errors.remove(0)),
        _ => MatchResult::Error(format!("[{}]", errors.join(", "))),
    }
}

/// The `request` variable: the AdmissionReview request without `uid`, `object` and
/// `oldObject` (which expressions reach as variables of their own), as upstream's
/// `CreateAdmissionRequest`.
pub fn request_value(attrs: &AdmissionAttributes) -> Value {
    let mut review = super::admission_review_request("", attrs, &Value::Null, "v1");
    let mut request = review
        .get_mut("request")
        .map(Value::take)
        .unwrap_or(Value::Null);
    if let Some(r) = request.as_object_mut() {
        r.remove("uid");
        r.remove("object");
        r.remove("oldObject");
        if r.get("options").is_some_and(Value::is_null) {
            r.remove("options");
        }
    }
    request
}

/// The activation of a webhook's match conditions.
pub fn webhook_activation(
    attrs: &AdmissionAttributes,
    obj: &Value,
    authorizer: Option<&std::sync::Arc<dyn super::policy::authz::Authorize>>,
) -> Activation {
    let request = request_value(attrs);
    let old = attrs.old_object.as_ref().unwrap_or(&Value::Null);
    let mut act = Activation::new(&[("object", obj), ("oldObject", old), ("request", &request)]);
    if let Some(a) = authorizer {
        let resource = (
            attrs.group.as_str(),
            attrs.resource.as_str(),
            attrs.subresource.as_str(),
            attrs.namespace.as_str(),
            attrs.name.as_str(),
        );
        for (name, value) in super::policy::authz::variables(a.clone(), &attrs.user, resource) {
            act.set(name, value);
        }
    }
    act
}
