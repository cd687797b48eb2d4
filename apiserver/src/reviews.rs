//! Create-only review kinds that are answered, never stored: access reviews (`kubectl auth
//! can-i`), rules reviews and SelfSubjectReview (`kubectl auth whoami`).
//!
//! Until RBAC lands every authenticated user may do everything (as the API issue specifies),
//! so access reviews of authenticated users are allowed; the answer still names the reason.

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::{Value, json};

pub use crate::auth::UserInfo;

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

/// The review with its `status` filled in.
pub fn answer(info: &ResourceInfo, mut review: Value, user: &UserInfo) -> Result<Value, ApiError> {
    let authenticated = user.name != "system:anonymous";
    review["apiVersion"] = Value::String(info.api_version());
    review["kind"] = Value::String(info.kind.to_string());
    if review.get("metadata").is_none_or(Value::is_null) {
        review["metadata"] = json!({});
    }
    match info.resource {
        "selfsubjectreviews" => {
            review["status"] =
                json!({ "userInfo": { "username": user.name, "groups": user.effective_groups() } });
        }
        "tokenreviews" => {
            // Token authentication arrives with the security issue.
            review["status"] = json!({ "authenticated": false, "error": "token authentication is not enabled on this server" });
        }
        "selfsubjectrulesreviews" => {
            review["status"] = json!({
                "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
                "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
                "incomplete": false,
            });
        }
        _ => {
            if review.get("spec").is_none_or(|s| !s.is_object()) {
                return Err(ApiError::bad_request(format!("{} needs a spec", info.kind)));
            }
            review["status"] = if authenticated || info.resource != "selfsubjectaccessreviews" {
                json!({ "allowed": true, "reason": "every authenticated user is allowed until RBAC is enabled" })
            } else {
                json!({ "allowed": false })
            };
        }
    }
    Ok(review)
}
