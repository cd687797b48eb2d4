//! The AdmissionReview wire format: the request sent to a webhook, the checks on its answer
//! (upstream's `CreateV1AdmissionReview` and `VerifyAdmissionResponse`) and the error a denial
//! becomes (`ToStatusErr`).

use std::collections::BTreeMap;

use base64::Engine;
use k1s_apimachinery::status::StatusDetails;
use k1s_apimachinery::{ApiError, Reason};
use serde_json::{Map, Value, json};

use super::AdmissionAttributes;

/// The body POSTed to a webhook: `admission.k8s.io/<version>` AdmissionReview with `request`
/// filled from `attrs`; `object` is `null` when `Value::Null` (DELETE).
pub fn admission_review_request(
    uid: &str,
    attrs: &AdmissionAttributes,
    object: &Value,
    version: &str,
) -> Value {
    let mut user = Map::new();
    if !attrs.user.name.is_empty() {
        user.insert("username".into(), Value::from(attrs.user.name.clone()));
    }
    if !attrs.user.uid.is_empty() {
        user.insert("uid".into(), Value::from(attrs.user.uid.clone()));
    }
    let groups = attrs.user.effective_groups();
    if !groups.is_empty() {
        user.insert("groups".into(), json!(groups));
    }
    if !attrs.user.extra.is_empty() {
        user.insert("extra".into(), json!(attrs.user.extra));
    }
    let kind = json!({"group": attrs.group, "version": attrs.version, "kind": attrs.kind});
    let resource =
        json!({"group": attrs.group, "version": attrs.version, "resource": attrs.resource});
    let mut request = Map::new();
    request.insert("uid".into(), Value::from(uid));
    request.insert("kind".into(), kind.clone());
    request.insert("resource".into(), resource.clone());
    if !attrs.subresource.is_empty() {
        request.insert("subResource".into(), Value::from(attrs.subresource.clone()));
    }
    match (&attrs.request_version, &attrs.request_kind) {
        (Some(v), Some(k)) => {
            request.insert(
                "requestKind".into(),
                json!({"group": attrs.group, "version": v, "kind": k}),
            );
            request.insert(
                "requestResource".into(),
                json!({"group": attrs.group, "version": v, "resource": attrs.resource}),
            );
        }
        _ => {
            request.insert("requestKind".into(), kind);
            request.insert("requestResource".into(), resource);
        }
    }
    if !attrs.subresource.is_empty() {
        request.insert(
            "requestSubResource".into(),
            Value::from(attrs.subresource.clone()),
        );
    }
    if !attrs.name.is_empty() {
        request.insert("name".into(), Value::from(attrs.name.clone()));
    }
    if !attrs.namespace.is_empty() {
        request.insert("namespace".into(), Value::from(attrs.namespace.clone()));
    }
    request.insert("operation".into(), Value::from(attrs.operation.as_str()));
    request.insert("userInfo".into(), Value::Object(user));
    request.insert("object".into(), object.clone());
    request.insert(
        "oldObject".into(),
        attrs.old_object.clone().unwrap_or(Value::Null),
    );
    request.insert("dryRun".into(), Value::Bool(attrs.dry_run));
    request.insert(
        "options".into(),
        if attrs.options.is_object() {
            attrs.options.clone()
        } else {
            Value::Null
        },
    );
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": request,
    })
}

/// A verified `response` of an AdmissionReview.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    /// `response.status` (a `metav1.Status`), when given.
    pub status: Option<Value>,
    /// The decoded `response.patch` (empty when none).
    pub patch: Vec<u8>,
    pub patch_type: String,
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
}

/// How an answer failed: the reason text of upstream's `ErrCallingWebhook` (without the
/// `failed calling webhook "x": ` prefix).
fn decode_err(msg: impl std::fmt::Display) -> String {
    format!("failed to call webhook: {msg}")
}

fn invalid(msg: impl std::fmt::Display) -> String {
    format!("received invalid webhook response: {msg}")
}

fn snippet(body: &[u8]) -> String {
    const MAX: usize = 256;
    let text = String::from_utf8_lossy(body);
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}...")
    } else {
        text.into_owned()
    }
}

/// Decodes and verifies a webhook's answer to the review with `uid`, sent as `version`.
/// The error is the reason of a call failure, e.g. `received invalid webhook response:
/// expected response.uid="a", got "b"`.
pub fn parse_admission_review_response(
    body: &[u8],
    uid: &str,
    version: &str,
    mutating: bool,
) -> Result<AdmissionResponse, String> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| decode_err(format!("couldn't get version/kind; json parse error: {e}")))?;
    let Some(obj) = review.as_object() else {
        return Err(decode_err(format!(
            "couldn't get version/kind; json parse error: expected an object, got {}",
            snippet(body)
        )));
    };
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(decode_err(format!(
            "Object 'Kind' is missing in '{}'",
            snippet(body)
        )));
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let expected = format!("admission.k8s.io/{version}");
    if api_version != expected || kind != "AdmissionReview" {
        let (g, v) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(invalid(format!(
            "expected webhook response of {expected}, Kind=AdmissionReview, got {g}/{v}, Kind={kind}"
        )));
    }
    let response = match obj.get("response") {
        None | Some(Value::Null) => return Err(invalid("webhook response was absent")),
        Some(Value::Object(r)) => r,
        Some(_) => return Err(decode_err("response: expected an object")),
    };
    let field_str = |name: &str| -> Result<String, String> {
        match response.get(name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(decode_err(format!(
                "json: cannot unmarshal {} into Go struct field AdmissionResponse.response.{name} of type string",
                json_type(other)
            ))),
        }
    };
    let got_uid = field_str("uid")?;
    let allowed = match response.get("allowed") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(decode_err(format!(
                "json: cannot unmarshal {} into Go struct field AdmissionResponse.response.allowed of type bool",
                json_type(other)
            )));
        }
    };
    let patch_b64 = field_str("patch")?;
    let patch = base64::engine::general_purpose::STANDARD
        .decode(patch_b64.as_bytes())
        .map_err(|e| decode_err(format!("illegal base64 data in response.patch: {e}")))?;
    let patch_type = field_str("patchType")?;
    let status = match response.get("status") {
        None | Some(Value::Null) => None,
        Some(s @ Value::Object(_)) => Some(s.clone()),
        Some(other) => {
            return Err(decode_err(format!(
                "json: cannot unmarshal {} into Go struct field AdmissionResponse.response.status of type v1.Status",
                json_type(other)
            )));
        }
    };
    let warnings = match response.get("warnings") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|w| {
                w.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| decode_err("response.warnings: expected strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(decode_err("response.warnings: expected a list")),
    };
    let audit_annotations = match response.get("auditAnnotations") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|v| (k.clone(), v.to_string()))
                    .ok_or_else(|| decode_err("response.auditAnnotations: expected strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(decode_err("response.auditAnnotations: expected a map")),
    };

    if got_uid != uid {
        return Err(invalid(format!(
            "expected response.uid={uid:?}, got {got_uid:?}"
        )));
    }
    if mutating && !patch.is_empty() && patch_type.is_empty() {
        return Err(invalid(
            "webhook returned response.patch but not response.patchType",
        ));
    }
    if mutating && patch.is_empty() && !patch_type.is_empty() {
        return Err(invalid(
            "webhook returned response.patchType but not response.patch",
        ));
    }
    if !mutating && !patch.is_empty() {
        return Err(invalid("validating webhook may not return response.patch"));
    }
    if !mutating && !patch_type.is_empty() {
        return Err(invalid(
            "validating webhook may not return response.patchType",
        ));
    }
    Ok(AdmissionResponse {
        uid: got_uid,
        allowed,
        status,
        patch,
        patch_type,
        warnings,
        audit_annotations,
    })
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Upstream's `ToStatusErr`: a denial from webhook `name` with the response's `status`.
/// The message becomes `admission webhook "<name>" denied the request: <message>` (or
/// `<reason>`, or ` without explanation`); codes below 400 become 400.
pub fn webhook_denied_error(name: &str, status: Option<&Value>) -> ApiError {
    let denied_by = format!("admission webhook {name:?} denied the request");
    let get = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let message = get("message");
    let reason = get("reason");
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let code = if code < 400 {
        400
    } else {
        u16::try_from(code)
            .ok()
            .filter(|c| *c <= 599)
            .unwrap_or(500)
    };
    let details = status
        .and_then(|s| s.get("details"))
        .filter(|d| d.is_object())
        .and_then(|d| serde_json::from_value::<StatusDetails>(d.clone()).ok());
    ApiError {
        details,
        ..ApiError::new(code, Reason::parse(reason), message)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::admission::webhook::Operation;
    use crate::auth::UserInfo;

    fn review(response: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
            "response": response}),
        )
        .unwrap()
    }

    #[test]
    fn request_shape() {
        let attrs = AdmissionAttributes {
            operation: Operation::Update,
            version: "v1".into(),
            kind: "Pod".into(),
            resource: "pods".into(),
            subresource: "status".into(),
            namespace: "ns".into(),
            name: "p".into(),
            user: UserInfo::new("alice", vec!["dev".into()]),
            old_object: Some(json!({"a":1})),
            dry_run: true,
            options: json!({"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1"}),
            ..Default::default()
        };
        let r = admission_review_request("u1", &attrs, &json!({"b":2}), "v1");
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1");
        let req = &r["request"];
        assert_eq!(req["uid"], "u1");
        assert_eq!(req["kind"], json!({"group":"","version":"v1","kind":"Pod"}));
        assert_eq!(
            req["requestResource"],
            json!({"group":"","version":"v1","resource":"pods"})
        );
        assert_eq!(req["subResource"], "status");
        assert_eq!(req["requestSubResource"], "status");
        assert_eq!(req["operation"], "UPDATE");
        assert_eq!(
            req["userInfo"],
            json!({"username":"alice","groups":["dev","system:authenticated"]})
        );
        assert_eq!(req["object"], json!({"b":2}));
        assert_eq!(req["oldObject"], json!({"a":1}));
        assert_eq!(req["dryRun"], true);
        assert_eq!(req["options"]["kind"], "UpdateOptions");
        let del = AdmissionAttributes {
            operation: Operation::Delete,
            ..Default::default()
        };
        let r = admission_review_request("u2", &del, &Value::Null, "v1beta1");
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1beta1");
        assert!(r["request"]["object"].is_null());
        assert!(r["request"]["oldObject"].is_null());
        assert!(r["request"].get("name").is_none());
    }

    #[test]
    fn response_checks() {
        let ok = parse_admission_review_response(
            &review(json!({"uid":"u","allowed":true,"warnings":["w"],
                "auditAnnotations":{"k":"v"}})),
            "u",
            "v1",
            false,
        )
        .unwrap();
        assert!(ok.allowed);
        assert_eq!(ok.warnings, vec!["w"]);
        assert_eq!(ok.audit_annotations["k"], "v");

        let cases: Vec<(Vec<u8>, bool, &str)> = vec![
            (
                b"garbage".to_vec(),
                false,
                "failed to call webhook: couldn't get version/kind; json parse error",
            ),
            (
                b"{}".to_vec(),
                false,
                "failed to call webhook: Object 'Kind' is missing in '{}'",
            ),
            (
                br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1"}"#.to_vec(),
                false,
                "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview",
            ),
            (
                review(Value::Null),
                false,
                "received invalid webhook response: webhook response was absent",
            ),
            (
                review(json!({"uid":"x","allowed":true})),
                false,
                r#"received invalid webhook response: expected response.uid="u", got "x""#,
            ),
            (
                review(json!({"uid":"u","allowed":"yes"})),
                false,
                "failed to call webhook: json: cannot unmarshal string",
            ),
            (
                review(json!({"uid":"u","allowed":true,"patch":"W10="})),
                true,
                "received invalid webhook response: webhook returned response.patch but not response.patchType",
            ),
            (
                review(json!({"uid":"u","allowed":true,"patchType":"JSONPatch"})),
                true,
                "received invalid webhook response: webhook returned response.patchType but not response.patch",
            ),
            (
                review(json!({"uid":"u","allowed":true,"patch":"W10=","patchType":"JSONPatch"})),
                false,
                "received invalid webhook response: validating webhook may not return response.patch",
            ),
            (
                review(json!({"uid":"u","allowed":true,"patchType":"JSONPatch"})),
                false,
                "received invalid webhook response: validating webhook may not return response.patchType",
            ),
            (
                review(json!({"uid":"u","allowed":true,"patch":"%%%","patchType":"JSONPatch"})),
                true,
                "failed to call webhook: illegal base64 data",
            ),
        ];
        for (body, mutating, want) in cases {
            let err = parse_admission_review_response(&body, "u", "v1", mutating).unwrap_err();
            assert!(err.starts_with(want), "{err:?} should start with {want:?}");
        }
    }

    #[test]
    fn to_status_err() {
        let e = webhook_denied_error("w.example.com", None);
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            r#"admission webhook "w.example.com" denied the request without explanation"#
        );
        let e = webhook_denied_error(
            "w",
            Some(&json!({"code":403,"message":"no way","reason":"Forbidden"})),
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, Reason::Forbidden);
        assert_eq!(
            e.message,
            r#"admission webhook "w" denied the request: no way"#
        );
        let e = webhook_denied_error("w", Some(&json!({"code":200,"reason":"Invalid"})));
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            r#"admission webhook "w" denied the request: Invalid"#
        );
        let e = webhook_denied_error(
            "w",
            Some(
                &json!({"code":422,"message":"m","details":{"name":"x","causes":[{"field":"f"}]}}),
            ),
        );
        assert_eq!(e.code, 422);
        assert_eq!(e.details.unwrap().causes[0].field, "f");
    }
}
