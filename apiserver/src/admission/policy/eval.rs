//! One policy evaluated for one binding and one param object, as upstream's
//! `validating.validator.Validate`: match conditions, then the validations (with
//! `messageExpression`), then the audit annotations, under one cost budget. `variables` are
//! evaluated lazily, the first time an expression selects them, and at most once.

use std::collections::HashMap;

use crate::admission::conditions::{self, MatchResult};
use crate::admission::webhook::FailurePolicy;
use crate::apiextensions::cel::{
    self, Activation, CelValue, EvalError, Expression, OUT_OF_BUDGET, cel_map,
};

use super::compile::Policy;

/// Upstream's `PolicyDecision` (admit decisions are not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The validation's index (for the Audit annotation).
    pub index: usize,
    pub message: String,
    /// `reason` of the validation; `None` for evaluation errors.
    pub reason: Option<String>,
}

/// What one evaluation produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub denials: Vec<Denial>,
    /// Audit annotations to publish: key (without the policy prefix) and value.
    pub annotations: Vec<(String, String)>,
    /// Audit annotation failures under `failurePolicy: Fail` (they deny).
    pub annotation_errors: Vec<String>,
}

/// Longest message a messageExpression may give.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;
/// Longest published audit annotation value.
const MAX_ANNOTATION_BYTES: usize = 10 * 1024;

struct Variables<'p> {
    policy: &'p Policy,
    index: HashMap<&'p str, usize>,
    values: Vec<Option<Result<CelValue, String>>>,
}

impl<'p> Variables<'p> {
    fn new(policy: &'p Policy) -> Self {
        let mut index = HashMap::new();
        for (i, v) in policy.variables.iter().enumerate() {
            index.entry(v.name.as_str()).or_insert(i);
        }
        Variables {
            policy,
            index,
            values: vec![None; policy.variables.len()],
        }
    }

    /// Evaluates what `e` selects under `variables` and binds the map; an error of a
    /// selected variable is the expression's error.
    fn bind(
        &mut self,
        e: &Expression,
        act: &mut Activation,
        budget: &mut f64,
    ) -> Result<(), EvalError> {
        if self.policy.variables.is_empty() {
            return Ok(());
        }
        for name in e.variables() {
            if let Some(&i) = self.index.get(name.as_str()) {
                self.ensure(i, act, budget)?;
                if let Some(Err(m)) = &self.values[i] {
                    return Err(EvalError::Failed(format!(
                        "expression '{}' resulted in error: {m}",
                        e.text()
                    )));
                }
            }
        }
        act.set("variables", self.map());
        Ok(())
    }

    fn map(&self) -> CelValue {
        cel_map(
            self.policy
                .variables
                .iter()
                .zip(&self.values)
                .filter_map(|(v, r)| match r {
                    Some(Ok(x)) => Some((v.name.clone(), x.clone())),
                    _ => None,
                }),
        )
    }

    fn ensure(
        &mut self,
        i: usize,
        act: &mut Activation,
        budget: &mut f64,
    ) -> Result<(), EvalError> {
        if self.values[i].is_some() {
            return Ok(());
        }
        let policy = self.policy;
        let var = &policy.variables[i];
        // A variable may only use the ones before it (checked when it was compiled).
        for name in var.expression.variables() {
            if let Some(&j) = self.index.get(name.as_str())
                && j < i
            {
                self.ensure(j, act, budget)?;
            }
        }
        act.set("variables", self.map());
        let result = match var.expression.evaluate(act, budget) {
            Ok(v) => Ok(v),
            Err(EvalError::Failed(m)) => Err(m),
            Err(EvalError::OutOfBudget) => return Err(EvalError::OutOfBudget),
        };
        self.values[i] = Some(result);
        Ok(())
    }
}

fn evaluate(
    e: &Expression,
    vars: &mut Variables<'_>,
    act: &mut Activation,
    budget: &mut f64,
) -> Result<CelValue, EvalError> {
    vars.bind(e, act, budget)?;
    e.evaluate(act, budget)
}

/// Evaluates `policy` against `act` (`object`, `oldObject`, `request`, `namespaceObject` and
/// `params` bound).
pub fn validate(policy: &Policy, mut act: Activation) -> Outcome {
    let fail = policy.failure_policy == FailurePolicy::Fail;
    let error = |message: String| Outcome {
        denials: if fail {
            vec![Denial {
                index: 0,
                message,
                reason: None,
            }]
        } else {
            Vec::new()
        },
        ..Default::default()
    };
    match conditions::evaluate(&policy.match_conditions, &act) {
        MatchResult::Matches => {}
        MatchResult::Excluded(_) => return Outcome::default(),
        MatchResult::Error(e) => return error(e),
    }
    let mut vars = Variables::new(policy);
    let mut budget = cel::ADMISSION_BUDGET;
    let mut out = Outcome::default();
    for (index, v) in policy.validations.iter().enumerate() {
        let result = evaluate(&v.expression, &mut vars, &mut act, &mut budget);
        let denial = match result {
            Ok(CelValue::Bool(true)) => continue,
            Err(EvalError::OutOfBudget) => return error(OUT_OF_BUDGET.into()),
            Err(EvalError::Failed(m)) => {
                if fail {
                    out.denials.push(Denial {
                        index,
                        message: m,
                        reason: None,
                    });
                }
                continue;
            }
            Ok(_) => {
                let from_expression = v.message_expression.as_ref().and_then(|me| {
                    match evaluate(me, &mut vars, &mut act, &mut budget) {
                        Ok(CelValue::String(s)) => {
                            let s = s.trim();
                            (!s.is_empty() && !s.contains('\n') && s.len() <= MAX_MESSAGE_BYTES)
                                .then(|| s.to_string())
                        }
                        _ => None,
                    }
                });
                let message = from_expression.unwrap_or_else(|| {
                    if v.message.is_empty() {
                        format!("failed expression: {}", v.expression.text().trim())
                    } else {
                        v.message.clone()
                    }
                });
                Denial {
                    index,
                    message,
                    reason: Some(v.reason.clone().unwrap_or_else(|| "Invalid".into())),
                }
            }
        };
        out.denials.push(denial);
    }
    let mut budget = cel::ADMISSION_BUDGET;
    for a in &policy.audit_annotations {
        match evaluate(&a.value_expression, &mut vars, &mut act, &mut budget) {
            Ok(CelValue::String(s)) => {
                let v = s.trim();
                if !v.is_empty() {
                    let mut end = v.len().min(MAX_ANNOTATION_BYTES);
                    while !v.is_char_boundary(end) {
                        end -= 1;
                    }
                    out.annotations.push((a.key.clone(), v[..end].to_string()));
                }
            }
            Ok(CelValue::Null) => {}
            Ok(other) => out.annotation_errors.push(format!(
                "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                a.value_expression.text(),
                other.type_of()
            )),
            Err(EvalError::Failed(m)) if fail => out.annotation_errors.push(m),
            Err(EvalError::OutOfBudget) if fail => out.annotation_errors.push(OUT_OF_BUDGET.into()),
            Err(_) => {}
        }
    }
    out
}
