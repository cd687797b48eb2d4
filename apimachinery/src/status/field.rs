//! Field-level validation errors (`field.Error` upstream): their types, paths and exact Display.

use std::fmt;

use serde_json::Value;

use crate::gofmt;

/// What is wrong with a field; each maps to a `StatusCause` reason and a message prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl FieldErrorType {
    /// The machine-readable cause type (`StatusCause.reason`), e.g. `FieldValueRequired`.
    pub fn cause_type(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Internal => "InternalError",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human-readable prefix, e.g. `Required value`.
    pub fn message(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Internal => "Internal error",
        }
    }
}

impl fmt::Display for FieldErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// The offending value carried by a field error.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// No value is printed (upstream's `omitValue`).
    Omitted,
    /// A JSON value: strings print quoted, numbers/bools plain, null as `null`, objects and
    /// arrays as compact JSON.
    Json(Value),
    /// Printed verbatim (for Go-syntax renderings such as `[]string{"a"}`).
    Raw(String),
}

/// One field-level error, printed exactly as upstream's `field.Error`:
/// `spec.replicas: Invalid value: -1: must be greater than or equal to 0`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub error_type: FieldErrorType,
    /// The field path, e.g. `spec.containers[0].image`.
    pub field: String,
    pub bad_value: BadValue,
    pub detail: String,
}

impl FieldError {
    pub fn new(
        error_type: FieldErrorType,
        field: impl Into<String>,
        bad_value: BadValue,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            error_type,
            field: field.into(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// `field: Required value[: detail]`
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorType::Required,
            field,
            BadValue::Json(Value::String(String::new())),
            detail,
        )
    }

    /// `field: Invalid value: <value>: detail`
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorType::Invalid,
            field,
            BadValue::Json(value.into()),
            detail,
        )
    }

    /// `field: Invalid value: <raw>: detail` with the value printed verbatim.
    pub fn invalid_raw(
        field: impl Into<String>,
        raw: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorType::Invalid,
            field,
            BadValue::Raw(raw.into()),
            detail,
        )
    }

    /// `field: Unsupported value: <value>: supported values: "a", "b"`
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<Value>,
        valid_values: &[&str],
    ) -> Self {
        let detail = if valid_values.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid_values.iter().map(|v| gofmt::quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorType::NotSupported,
            field,
            BadValue::Json(value.into()),
            detail,
        )
    }

    /// `field: Forbidden[: detail]`
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorType::Forbidden,
            field,
            BadValue::Json(Value::String(String::new())),
            detail,
        )
    }

    /// `field: Duplicate value: <value>`
    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(
            FieldErrorType::Duplicate,
            field,
            BadValue::Json(value.into()),
            "",
        )
    }

    /// `field: Not found: <value>`
    pub fn not_found(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(
            FieldErrorType::NotFound,
            field,
            BadValue::Json(value.into()),
            "",
        )
    }

    /// `field: Too long: may not be more than N bytes` (or `value is too long` without a limit).
    pub fn too_long(field: impl Into<String>, max_bytes: Option<usize>) -> Self {
        let detail = match max_bytes {
            Some(n) => format!("may not be more than {n} bytes"),
            None => "value is too long".to_string(),
        };
        Self::new(
            FieldErrorType::TooLong,
            field,
            BadValue::Json(Value::String("<value omitted>".to_string())),
            detail,
        )
    }

    /// `field: Too many: <actual>: must have at most N items`
    pub fn too_many(field: impl Into<String>, actual: Option<usize>, max: Option<usize>) -> Self {
        let detail = match max {
            Some(n) => format!("must have at most {n} items"),
            None => "has too many items".to_string(),
        };
        let bad_value = match actual {
            Some(n) => BadValue::Json(Value::from(n)),
            None => BadValue::Omitted,
        };
        Self::new(FieldErrorType::TooMany, field, bad_value, detail)
    }

    /// `field: Internal error: detail`
    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorType::Internal,
            field,
            BadValue::Json(Value::Null),
            detail,
        )
    }

    /// `field: Invalid value: <value>: detail` typed as a schema type mismatch.
    pub fn type_invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorType::TypeInvalid,
            field,
            BadValue::Json(value.into()),
            detail,
        )
    }

    /// The message without the field name (upstream `ErrorBody`); this is `StatusCause.message`.
    pub fn body(&self) -> String {
        let mut s = match self.error_type {
            FieldErrorType::Required
            | FieldErrorType::Forbidden
            | FieldErrorType::TooLong
            | FieldErrorType::Internal => self.error_type.message().to_string(),
            _ => match &self.bad_value {
                BadValue::Omitted => self.error_type.message().to_string(),
                BadValue::Raw(raw) => format!("{}: {raw}", self.error_type),
                BadValue::Json(value) => format!("{}: {}", self.error_type, render_value(value)),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

fn render_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => gofmt::quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// Formats several errors as upstream's aggregate: one message alone, otherwise
/// `[a, b]`, with duplicate messages dropped. `None` for an empty list.
pub fn aggregate_message<T: fmt::Display>(errors: &[T]) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

/// A field path builder printing as upstream's `field.Path`: `spec.containers[0].env[FOO]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// A root path, e.g. `FieldPath::new("metadata")`.
    pub fn new(name: &str) -> Self {
        Self(name.to_string())
    }

    /// A named child: `spec` -> `spec.replicas`.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self(name.to_string())
        } else {
            Self(format!("{}.{name}", self.0))
        }
    }

    /// A list index: `containers` -> `containers[0]`.
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    /// A map key: `labels` -> `labels[app]`.
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> String {
        p.0
    }
}

impl From<&FieldPath> for String {
    fn from(p: &FieldPath) -> String {
        p.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn displays_like_upstream() {
        assert_eq!(
            FieldError::required("spec.containers", "").to_string(),
            "spec.containers: Required value"
        );
        assert_eq!(
            FieldError::required("metadata.name", "name or generateName is required").to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(
            FieldError::invalid("spec.replicas", -1, "must be greater than or equal to 0")
                .to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            FieldError::invalid("metadata.name", "Foo", "bad").to_string(),
            "metadata.name: Invalid value: \"Foo\": bad"
        );
        assert_eq!(
            FieldError::invalid("x", Value::Null, "").to_string(),
            "x: Invalid value: null"
        );
        assert_eq!(
            FieldError::invalid("x", json!({"a": 1}), "d").to_string(),
            "x: Invalid value: {\"a\":1}: d"
        );
        assert_eq!(
            FieldError::invalid("x", true, "d").to_string(),
            "x: Invalid value: true: d"
        );
        assert_eq!(
            FieldError::not_supported("spec.restartPolicy", "Sometimes", &["Always", "Never"])
                .to_string(),
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\""
        );
        assert_eq!(
            FieldError::forbidden("spec", "updates are forbidden").to_string(),
            "spec: Forbidden: updates are forbidden"
        );
        assert_eq!(
            FieldError::duplicate("spec.ports[1]", "http").to_string(),
            "spec.ports[1]: Duplicate value: \"http\""
        );
        assert_eq!(
            FieldError::not_found("spec.x", "y").to_string(),
            "spec.x: Not found: \"y\""
        );
        assert_eq!(
            FieldError::too_long("metadata.annotations", Some(262144)).to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            FieldError::too_long("x", None).to_string(),
            "x: Too long: value is too long"
        );
        assert_eq!(
            FieldError::too_many("items", Some(5), Some(3)).to_string(),
            "items: Too many: 5: must have at most 3 items"
        );
        assert_eq!(
            FieldError::too_many("items", None, None).to_string(),
            "items: Too many: has too many items"
        );
        assert_eq!(
            FieldError::internal("spec", "boom").to_string(),
            "spec: Internal error: boom"
        );
        assert_eq!(
            FieldError::invalid_raw("values", "[]string{}", "d").to_string(),
            "values: Invalid value: []string{}: d"
        );
        assert_eq!(
            FieldError::type_invalid("spec.x", "s", "must be integer").to_string(),
            "spec.x: Invalid value: \"s\": must be integer"
        );
    }

    #[test]
    fn cause_types() {
        assert_eq!(FieldErrorType::Required.cause_type(), "FieldValueRequired");
        assert_eq!(FieldErrorType::Invalid.cause_type(), "FieldValueInvalid");
        assert_eq!(FieldErrorType::Internal.cause_type(), "InternalError");
        assert_eq!(FieldErrorType::TypeInvalid.message(), "Invalid value");
    }

    #[test]
    fn aggregates() {
        let none: [FieldError; 0] = [];
        assert_eq!(aggregate_message(&none), None);
        let a = FieldError::required("a", "");
        let b = FieldError::invalid("b", "x", "bad");
        assert_eq!(
            aggregate_message(std::slice::from_ref(&a)).as_deref(),
            Some("a: Required value")
        );
        assert_eq!(
            aggregate_message(&[a.clone(), b.clone(), a.clone()]).as_deref(),
            Some("[a: Required value, b: Invalid value: \"x\": bad]")
        );
        assert_eq!(
            aggregate_message(&[a.clone(), a]).as_deref(),
            Some("a: Required value")
        );
    }

    #[test]
    fn paths() {
        let p = FieldPath::new("spec")
            .child("containers")
            .index(0)
            .child("env")
            .key("FOO");
        assert_eq!(p.to_string(), "spec.containers[0].env[FOO]");
        assert_eq!(FieldPath::default().child("a").as_str(), "a");
        let s: String = p.into();
        assert_eq!(s, "spec.containers[0].env[FOO]");
    }
}
