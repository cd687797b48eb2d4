//! Label selector requirements, matching, canonical strings and `metav1.LabelSelector` conversion.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::{Labels, SelectorError, parser};
use crate::gofmt;
use crate::status::{FieldError, aggregate_message};
use crate::validation::{is_qualified_name, is_valid_label_value};

/// A label selector operator (upstream `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `k=v`
    Equals,
    /// `k==v`
    DoubleEquals,
    /// `k!=v`
    NotEquals,
    /// `k in (a,b)`
    In,
    /// `k notin (a,b)`
    NotIn,
    /// `k`
    Exists,
    /// `!k`
    DoesNotExist,
    /// `k>5`
    GreaterThan,
    /// `k<5`
    LessThan,
}

impl Operator {
    /// Upstream's operator string (`=`, `==`, `!=`, `in`, `notin`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::GreaterThan => "gt",
            Self::LessThan => "lt",
        }
    }
}

/// One `key op values` term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds and validates a requirement as upstream's `NewRequirement`: the key must be a
    /// qualified name, values valid label values, `in`/`notin` need values, `=`/`==`/`!=` exactly
    /// one, exists/does-not-exist none, `gt`/`lt` one integer.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, SelectorError> {
        let key = key.into();
        let mut errs: Vec<FieldError> = Vec::new();
        let key_errs = is_qualified_name(&key);
        if !key_errs.is_empty() {
            errs.push(FieldError::invalid(
                "key",
                key.as_str(),
                key_errs.join("; "),
            ));
        }
        let raw_values = || gofmt::string_slice(&values, true);
        match operator {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    errs.push(FieldError::invalid_raw(
                        "values",
                        raw_values(),
                        "for 'in', 'notin' operators, values set can't be empty",
                    ));
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid_raw(
                        "values",
                        raw_values(),
                        "exact-match compatibility requires one single value",
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(FieldError::invalid_raw(
                        "values",
                        raw_values(),
                        "values set must be empty for exists and does not exist",
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid_raw(
                        "values",
                        raw_values(),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(FieldError::invalid(
                            format!("values[{i}]"),
                            v.as_str(),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = is_valid_label_value(v);
            if !value_errs.is_empty() {
                errs.push(FieldError::invalid(
                    format!("values[{i}][{key}]"),
                    v.as_str(),
                    value_errs.join("; "),
                ));
            }
        }
        match aggregate_message(&errs) {
            Some(msg) => Err(SelectorError::new(msg)),
            None => Ok(Self {
                key,
                operator,
                values,
            }),
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values in the order given (the parser gives them sorted and unique).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    /// True when the labels satisfy this requirement (missing keys satisfy `!=`, `notin`, `!k`).
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let value = labels.get_label(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        f.write_str(&values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label selector: the AND of its requirements. Distinguishes *everything* (no requirements,
/// e.g. an empty `metav1.LabelSelector` or `""`) from *nothing* (a null `metav1.LabelSelector`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// Matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Matches no object (what a null `metav1.LabelSelector` means).
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses upstream's selector syntax: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
    /// `k`, `!k`, `k>1`, `k<1`, comma separated. `""` is everything.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = parser::parse(s)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// Builds from requirements (sorted by key, as upstream's `Add`).
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self {
            requirements,
            nothing: false,
        }
    }

    /// An equality selector for each pair (upstream `SelectorFromSet`); empty is everything.
    /// Pairs are not validated (as upstream), so invalid keys simply never match.
    pub fn from_map(labels: &BTreeMap<String, String>) -> Self {
        let requirements = labels
            .iter()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                operator: Operator::Equals,
                values: vec![v.clone()],
            })
            .collect();
        Self {
            requirements,
            nothing: false,
        }
    }

    /// Converts a `metav1.LabelSelector` JSON object (`matchLabels`, `matchExpressions`), as
    /// upstream's `LabelSelectorAsSelector`: null matches nothing, `{}` matches everything.
    pub fn from_json(value: &Value) -> Result<Self, SelectorError> {
        let obj = match value {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(obj) => obj,
            other => {
                return Err(SelectorError::new(format!(
                    "invalid label selector: expected an object, got {other}"
                )));
            }
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (k, v) in labels {
                    let Some(v) = v.as_str() else {
                        return Err(SelectorError::new(format!(
                            "invalid label selector: matchLabels[{k}] must be a string"
                        )));
                    };
                    requirements.push(Requirement::new(
                        k.clone(),
                        Operator::Equals,
                        vec![v.to_string()],
                    )?);
                }
            }
            Some(_) => {
                return Err(SelectorError::new(
                    "invalid label selector: matchLabels must be an object",
                ));
            }
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for expr in exprs {
                    requirements.push(expression_requirement(expr)?);
                }
            }
            Some(_) => {
                return Err(SelectorError::new(
                    "invalid label selector: matchExpressions must be a list",
                ));
            }
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Like [`LabelSelector::from_json`], with a missing field meaning null (matches nothing).
    pub fn from_json_opt(value: Option<&Value>) -> Result<Self, SelectorError> {
        value.map_or(Ok(Self::nothing()), Self::from_json)
    }

    /// True when the selector does not restrict anything (matches everything).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing.
    pub fn is_nothing(&self) -> bool {
        self.nothing
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Adds a requirement (kept sorted by key).
    pub fn add(&mut self, requirement: Requirement) {
        self.requirements.push(requirement);
        self.requirements.sort_by(|a, b| a.key.cmp(&b.key));
    }

    /// True when all requirements match.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Matches a JSON `metadata.labels` value (absent or non-object means no labels).
    pub fn matches_json(&self, labels: Option<&Value>) -> bool {
        match labels.and_then(Value::as_object) {
            Some(map) => self.matches(map),
            None => self.matches(&serde_json::Map::new()),
        }
    }

    /// The value `label` must equal for this selector to match, if it pins one
    /// (`k=v`, `k==v`, `k in (v)`); for index fast paths.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

fn expression_requirement(expr: &Value) -> Result<Requirement, SelectorError> {
    let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
    let op = expr.get("operator").and_then(Value::as_str).unwrap_or("");
    let operator = match op {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::new(format!(
                "{} is not a valid label selector operator",
                gofmt::quote(other)
            )));
        }
    };
    let values = match expr.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                let Some(s) = item.as_str() else {
                    return Err(SelectorError::new(
                        "invalid label selector: matchExpressions values must be strings",
                    ));
                };
                values.push(s.to_string());
            }
            values
        }
        Some(_) => {
            return Err(SelectorError::new(
                "invalid label selector: matchExpressions values must be a list",
            ));
        }
    };
    Requirement::new(key, operator, values)
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}
