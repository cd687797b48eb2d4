//! The API error every layer returns (`ApiError`) and its `metav1.Status` JSON form.

mod constructors;
mod field;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use constructors::AccessAttributes;
pub use field::{BadValue, FieldError, FieldErrorType, FieldPath, aggregate_message};

/// `metav1.StatusReason`: why a request failed (exact upstream strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// No reason given (`""` upstream).
    Unknown,
    Unauthorized,
    Forbidden,
    NotFound,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    ServerTimeout,
    Timeout,
    TooManyRequests,
    BadRequest,
    MethodNotAllowed,
    NotAcceptable,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    InternalError,
    Expired,
    ServiceUnavailable,
}

impl Reason {
    pub const ALL: [Reason; 19] = [
        Reason::Unknown,
        Reason::Unauthorized,
        Reason::Forbidden,
        Reason::NotFound,
        Reason::AlreadyExists,
        Reason::Conflict,
        Reason::Gone,
        Reason::Invalid,
        Reason::ServerTimeout,
        Reason::Timeout,
        Reason::TooManyRequests,
        Reason::BadRequest,
        Reason::MethodNotAllowed,
        Reason::NotAcceptable,
        Reason::RequestEntityTooLarge,
        Reason::UnsupportedMediaType,
        Reason::InternalError,
        Reason::Expired,
        Reason::ServiceUnavailable,
    ];

    /// The wire string, e.g. `NotFound`; `""` for [`Reason::Unknown`].
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "",
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden => "Forbidden",
            Self::NotFound => "NotFound",
            Self::AlreadyExists => "AlreadyExists",
            Self::Conflict => "Conflict",
            Self::Gone => "Gone",
            Self::Invalid => "Invalid",
            Self::ServerTimeout => "ServerTimeout",
            Self::Timeout => "Timeout",
            Self::TooManyRequests => "TooManyRequests",
            Self::BadRequest => "BadRequest",
            Self::MethodNotAllowed => "MethodNotAllowed",
            Self::NotAcceptable => "NotAcceptable",
            Self::RequestEntityTooLarge => "RequestEntityTooLarge",
            Self::UnsupportedMediaType => "UnsupportedMediaType",
            Self::InternalError => "InternalError",
            Self::Expired => "Expired",
            Self::ServiceUnavailable => "ServiceUnavailable",
        }
    }

    /// Parses a wire string; unknown strings give [`Reason::Unknown`].
    pub fn parse(s: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .unwrap_or(Self::Unknown)
    }

    /// The HTTP code upstream uses with this reason.
    pub fn default_code(self) -> u16 {
        match self {
            Self::Unknown | Self::InternalError | Self::ServerTimeout => 500,
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::AlreadyExists | Self::Conflict => 409,
            Self::Gone | Self::Expired => 410,
            Self::Invalid => 422,
            Self::Timeout => 504,
            Self::TooManyRequests => 429,
            Self::BadRequest => 400,
            Self::MethodNotAllowed => 405,
            Self::NotAcceptable => 406,
            Self::RequestEntityTooLarge => 413,
            Self::UnsupportedMediaType => 415,
            Self::ServiceUnavailable => 503,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// `metav1.StatusCause`: one cause of a failure, usually a field error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// The cause type (Go field `Type`, JSON `reason`), e.g. `FieldValueRequired`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl From<&FieldError> for StatusCause {
    fn from(e: &FieldError) -> Self {
        Self {
            reason: e.error_type.cause_type().to_string(),
            message: e.body(),
            field: e.field.clone(),
        }
    }
}

/// `metav1.StatusDetails`. For resource errors upstream puts the *resource* (plural) in `kind`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_seconds: i32,
}

/// An API failure: HTTP code, reason, message and optional details. Becomes a `metav1.Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: u16,
    pub reason: Reason,
    pub message: String,
    pub details: Option<StatusDetails>,
    /// The Status's `metadata.continue` (an expired list's offer to go on inconsistently).
    pub continue_token: Option<String>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// The wire shape of `metav1.Status`, fields in upstream's order.
#[derive(Serialize)]
struct StatusBody<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: serde_json::Map<String, Value>,
    status: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a StatusDetails>,
    #[serde(skip_serializing_if = "is_zero")]
    code: i32,
}

impl ApiError {
    /// A bare error with the given code, reason and message and no details.
    pub fn new(code: u16, reason: Reason, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            continue_token: None,
        }
    }

    /// Sets the Status's `metadata.continue`.
    pub fn with_continue(mut self, token: impl Into<String>) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// Appends a cause (creating empty details if needed).
    pub fn with_cause(mut self, cause: StatusCause) -> Self {
        self.details
            .get_or_insert_with(Default::default)
            .causes
            .push(cause);
        self
    }

    /// The `retryAfterSeconds` in details, if set (used for the `Retry-After` header).
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
    }

    pub fn is_not_found(&self) -> bool {
        self.reason == Reason::NotFound
    }
    pub fn is_already_exists(&self) -> bool {
        self.reason == Reason::AlreadyExists
    }
    pub fn is_conflict(&self) -> bool {
        self.reason == Reason::Conflict
    }
    pub fn is_invalid(&self) -> bool {
        self.reason == Reason::Invalid
    }
    pub fn is_forbidden(&self) -> bool {
        self.reason == Reason::Forbidden
    }
    /// True for 410 responses (`Gone` or `Expired`): a watch or list must restart.
    pub fn is_gone_or_expired(&self) -> bool {
        matches!(self.reason, Reason::Gone | Reason::Expired)
    }

    fn body(&self) -> StatusBody<'_> {
        let mut metadata = serde_json::Map::new();
        if let Some(token) = &self.continue_token {
            metadata.insert("continue".into(), Value::String(token.clone()));
        }
        StatusBody {
            kind: "Status",
            api_version: "v1",
            metadata,
            status: "Failure",
            message: &self.message,
            reason: self.reason.as_str(),
            details: self.details.as_ref(),
            code: i32::from(self.code),
        }
    }

    /// The `metav1.Status` object for this error.
    pub fn to_status_json(&self) -> Value {
        serde_json::to_value(self.body()).unwrap_or(Value::Null)
    }

    /// The `metav1.Status` body as JSON, fields in upstream's order, ending in a newline as upstream's
    /// encoder writes it.
    pub fn to_status_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&self.body()).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Reads a `metav1.Status` object (as returned by a server) back into an error.
    /// `None` when the value is not a `Status`.
    pub fn from_status_json(value: &Value) -> Option<Self> {
        let obj = value.as_object()?;
        if obj.get("kind").and_then(Value::as_str) != Some("Status") {
            return None;
        }
        let reason = Reason::parse(obj.get("reason").and_then(Value::as_str).unwrap_or(""));
        let code = obj
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or_else(|| reason.default_code());
        let message = obj
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let details = obj
            .get("details")
            .filter(|d| d.is_object())
            .and_then(|d| serde_json::from_value::<StatusDetails>(d.clone()).ok());
        let continue_token = obj
            .get("metadata")
            .and_then(|m| m.get("continue"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        Some(Self {
            code,
            reason,
            message,
            details,
            continue_token,
        })
    }
}

/// A `metav1.Status` with `status: Success` (returned by some deletes).
pub fn success_status_json(details: Option<&StatusDetails>) -> Value {
    let mut obj = serde_json::Map::new();
    obj.insert("kind".into(), Value::from("Status"));
    obj.insert("apiVersion".into(), Value::from("v1"));
    obj.insert("metadata".into(), Value::Object(serde_json::Map::new()));
    obj.insert("status".into(), Value::from("Success"));
    if let Some(d) = details {
        obj.insert(
            "details".into(),
            serde_json::to_value(d).unwrap_or(Value::Null),
        );
    }
    Value::Object(obj)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reasons_round_trip() {
        for r in Reason::ALL {
            assert_eq!(Reason::parse(r.as_str()), r);
        }
        assert_eq!(Reason::parse("Bogus"), Reason::Unknown);
        assert_eq!(Reason::NotFound.to_string(), "NotFound");
        assert_eq!(Reason::Invalid.default_code(), 422);
        assert_eq!(Reason::Expired.default_code(), 410);
    }

    #[test]
    fn status_json_omits_empty_fields() {
        let e = ApiError::new(400, Reason::BadRequest, "nope");
        assert_eq!(
            e.to_status_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"nope","reason":"BadRequest","code":400})
        );
        let bytes = String::from_utf8(e.to_status_bytes()).unwrap();
        assert_eq!(
            bytes,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope","reason":"BadRequest","code":400}
"#
        );
        let e = ApiError::new(500, Reason::Unknown, "").with_details(StatusDetails::default());
        assert_eq!(
            e.to_status_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "details":{},"code":500})
        );
    }

    #[test]
    fn status_json_round_trips() {
        let e = ApiError::new(409, Reason::Conflict, "x")
            .with_details(StatusDetails {
                name: "foo".into(),
                kind: "pods".into(),
                retry_after_seconds: 3,
                ..Default::default()
            })
            .with_cause(StatusCause {
                reason: "FieldValueInvalid".into(),
                message: "m".into(),
                field: "f".into(),
            });
        let v = e.to_status_json();
        assert_eq!(
            v["details"],
            json!({"name":"foo","kind":"pods","retryAfterSeconds":3,
                   "causes":[{"reason":"FieldValueInvalid","message":"m","field":"f"}]})
        );
        assert_eq!(ApiError::from_status_json(&v).unwrap(), e);
        assert_eq!(e.retry_after_seconds(), Some(3));
        assert!(ApiError::from_status_json(&json!({"kind":"Pod"})).is_none());
        assert!(ApiError::from_status_json(&json!("x")).is_none());
        let minimal =
            ApiError::from_status_json(&json!({"kind":"Status","reason":"NotFound"})).unwrap();
        assert_eq!(minimal.code, 404);
        assert!(minimal.is_not_found());
    }

    #[test]
    fn success_status() {
        let d = StatusDetails {
            name: "foo".into(),
            kind: "pods".into(),
            uid: "u1".into(),
            ..Default::default()
        };
        assert_eq!(
            success_status_json(Some(&d)),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",
                   "details":{"name":"foo","kind":"pods","uid":"u1"}})
        );
    }
}
