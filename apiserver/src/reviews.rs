//! Create-only review kinds that are answered, never stored: access reviews (`kubectl auth
//! can-i`), rules reviews (`can-i --list`), SelfSubjectReview (`kubectl auth whoami`) and
//! TokenReview, all answered by the same authenticators and authorizer as real requests.

use std::collections::BTreeMap;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::{Value, json};

pub use crate::auth::UserInfo;
use crate::auth::{Attributes, Decision};
use crate::context::ApiContext;

/// Whether `info` is a review kind answered here.
pub fn is_review(info: &ResourceInfo) -> bool {
    matches!(
        (info.group, info.resource),
        ("authorization.k8s.io", _)
            | (
                "authentication.k8s.io",
                "selfsubjectreviews" | "tokenreviews"
            )
    )
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The user a SubjectAccessReview asks about (`spec.user`, `groups`, `uid`, `extra`).
fn spec_user(spec: &Value) -> UserInfo {
    let mut user = UserInfo::new(str_at(spec, "/user"), strings(spec.get("groups")));
    user.uid = str_at(spec, "/uid").to_string();
    if let Some(extra) = spec.get("extra").and_then(Value::as_object) {
        user.extra = extra
            .iter()
            .map(|(k, v)| (k.clone(), strings(Some(v))))
            .collect::<BTreeMap<_, _>>();
    }
    user
}

/// An access review's spec as authorization attributes.
fn spec_attributes(spec: &Value, user: UserInfo) -> Result<Attributes, ApiError> {
    if let Some(r) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
        return Ok(Attributes {
            user,
            verb: str_at(r, "/verb").to_string(),
            is_resource_request: true,
            namespace: str_at(r, "/namespace").to_string(),
            api_group: str_at(r, "/group").to_string(),
            api_version: str_at(r, "/version").to_string(),
            resource: str_at(r, "/resource").to_string(),
            subresource: str_at(r, "/subresource").to_string(),
            name: str_at(r, "/name").to_string(),
            path: String::new(),
        });
    }
    if let Some(n) = spec.get("nonResourceAttributes").filter(|r| r.is_object()) {
        return Ok(Attributes {
            user,
            verb: str_at(n, "/verb").to_string(),
            is_resource_request: false,
            path: str_at(n, "/path").to_string(),
            ..Default::default()
        });
    }
    Err(ApiError::invalid(
        "SubjectAccessReview",
        "authorization.k8s.io",
        "",
        vec![k1s_apimachinery::FieldError::invalid(
            "spec.resourceAttributes",
            Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
    ))
}

/// The review with its `status` filled in. `namespace` is the URL's (LocalSubjectAccessReview).
pub async fn answer(
    ctx: &ApiContext,
    info: &ResourceInfo,
    mut review: Value,
    user: &UserInfo,
    namespace: Option<&str>,
) -> Result<Value, ApiError> {
    review["apiVersion"] = Value::String(info.api_version());
    review["kind"] = Value::String(info.kind.to_string());
    if review.get("metadata").is_none_or(Value::is_null) {
        review["metadata"] = json!({});
    }
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let authorizer = &ctx.security.authorizer;
    match info.resource {
        "selfsubjectreviews" => {
            let mut info = json!({ "username": user.name, "groups": user.effective_groups() });
            if !user.uid.is_empty() {
                info["uid"] = json!(user.uid);
            }
            if !user.extra.is_empty() {
                info["extra"] = json!(user.extra);
            }
            review["status"] = json!({ "userInfo": info });
        }
        "tokenreviews" => {
            let token = str_at(&spec, "/token");
            review["status"] = match crate::authentication::authenticate_token(ctx, token).await {
                Ok(u) => {
                    let mut ui =
                        json!({ "username": u.name, "uid": u.uid, "groups": u.effective_groups() });
                    if !u.extra.is_empty() {
                        ui["extra"] = json!(u.extra);
                    }
                    json!({ "authenticated": true, "user": ui, "audiences": ctx.security.tokens.api_audiences() })
                }
                Err(_) => {
                    json!({ "authenticated": false, "user": {}, "error": "invalid bearer token" })
                }
            };
        }
        "selfsubjectrulesreviews" => {
            let ns = str_at(&spec, "/namespace");
            let r = authorizer.rules_review(user, ns);
            let mut status = json!({
                "resourceRules": r.resource_rules,
                "nonResourceRules": r.non_resource_rules,
                "incomplete": r.incomplete,
            });
            if let Some(e) = r.evaluation_error {
                status["evaluationError"] = json!(e);
            }
            review["status"] = status;
        }
        resource => {
            let subject = match resource {
                "selfsubjectaccessreviews" => user.clone(),
                _ => spec_user(&spec),
            };
            let attrs = spec_attributes(&spec, subject)?;
            if resource == "localsubjectaccessreviews"
                && namespace != Some(attrs.namespace.as_str())
            {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match namespace: {}",
                    namespace.unwrap_or_default()
                )));
            }
            review["status"] = match authorizer.authorize(&attrs) {
                Decision::Allow(reason) => json!({ "allowed": true, "reason": reason }),
                Decision::Deny(reason) => {
                    json!({ "allowed": false, "denied": true, "reason": reason })
                }
                Decision::NoOpinion(reason) => json!({ "allowed": false, "reason": reason }),
            };
        }
    }
    Ok(review)
}
