//! The `serviceaccounts/token` subresource (TokenRequest, `authentication.k8s.io/v1`), as
//! upstream's `pkg/registry/core/serviceaccount/storage/token.go` answers it, so that
//! `kubectl create token <sa>` works.
//!
//! Flow for the handler of `POST .../namespaces/<ns>/serviceaccounts/<name>/token`: get the
//! ServiceAccount (its NotFound is the answer when missing); call [`bound_object_target`] on the
//! decoded body and fetch that object (its NotFound is the answer when missing) and, for a pod
//! with `spec.nodeName`, that Node (absent is fine); then [`create_token`] (or
//! [`token_request_response`]) and reply 201 with the object, adding `warnings` as `Warning`
//! headers.

use jiff::Timestamp;
use k1s_apimachinery::{ApiError, FieldError, GroupResource};
use serde_json::{Value, json};

use super::sa::{
    BoundKind, BoundObject, DEFAULT_EXPIRATION_SECONDS, NodeInfo, TokenIssuer, TokenRequestInput,
    expiration_seconds_problem,
};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
const API_VERSION: &str = "authentication.k8s.io/v1";

/// The object a TokenRequest binds to, for the handler to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundObjectTarget {
    pub kind: BoundKind,
    /// `pods`, `secrets` or `nodes` (core group).
    pub resource: &'static str,
    /// Namespaced kinds live in the ServiceAccount's namespace.
    pub namespaced: bool,
    pub name: String,
}

/// A TokenRequest's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenRequestOutcome {
    /// The TokenRequest with `status.token` and `status.expirationTimestamp`.
    pub object: Value,
    /// For `Warning` headers (e.g. an expiration shortened to the server's maximum).
    pub warnings: Vec<String>,
    /// For the `authentication.kubernetes.io/issued-credential-id` audit annotation.
    pub credential_id: String,
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// (group, version) of an apiVersion, as `schema.ParseGroupVersion` reads it.
fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// What `spec.boundObjectRef` names: `None` without one; 400 `cannot bind token to object of
/// type <gvk>` for kinds other than core Pod, Secret and Node.
pub fn bound_object_target(request: &Value) -> Result<Option<BoundObjectTarget>, ApiError> {
    let Some(r) = request
        .pointer("/spec/boundObjectRef")
        .filter(|r| !r.is_null())
    else {
        return Ok(None);
    };
    let kind = str_at(r, "/kind");
    let (group, version) = split_api_version(str_at(r, "/apiVersion"));
    let bound = if group.is_empty() {
        BoundKind::from_kind(kind)
    } else {
        None
    };
    let Some(bound) = bound else {
        return Err(ApiError::bad_request(format!(
            "cannot bind token to object of type {group}/{version}, Kind={kind}"
        )));
    };
    Ok(Some(BoundObjectTarget {
        kind: bound,
        resource: bound.resource(),
        namespaced: bound.is_namespaced(),
        name: str_at(r, "/name").to_string(),
    }))
}

/// [`create_token`] without a looked-up Node, returning only the object.
pub fn token_request_response(
    request: &Value,
    sa: &Value,
    bound_object: Option<&Value>,
    issuer: &TokenIssuer,
    now: Timestamp,
) -> Result<Value, ApiError> {
    create_token(request, sa, bound_object, None, issuer, now).map(|o| o.object)
}

/// Answers a TokenRequest for the ServiceAccount `sa` (the URL's name and namespace). Checks
/// and defaults as upstream: metadata name/namespace must match the ServiceAccount (422);
/// `spec.audiences` defaults to the API audiences, `spec.expirationSeconds` to 3600 and must
/// lie in 600..=2^32 (422 `TokenRequest.authentication.k8s.io "" is invalid: ...`); the bound
/// object (`bound_object`, fetched per [`bound_object_target`]) must run as this service account
/// when a Pod (400) and have the referenced uid (409); `pod_node` is the pod's Node if found
/// (when `None`, a pod's `spec.nodeName` is still recorded, without uid).
pub fn create_token(
    request: &Value,
    sa: &Value,
    bound_object: Option<&Value>,
    pod_node: Option<&Value>,
    issuer: &TokenIssuer,
    now: Timestamp,
) -> Result<TokenRequestOutcome, ApiError> {
    let sa_name = str_at(sa, "/metadata/name");
    let sa_namespace = str_at(sa, "/metadata/namespace");
    let sa_uid = str_at(sa, "/metadata/uid");
    if !request.is_object() {
        return Err(ApiError::bad_request(
            "the body of a TokenRequest must be an object",
        ));
    }

    let req_name = str_at(request, "/metadata/name");
    if !req_name.is_empty() && req_name != sa_name {
        return Err(ApiError::invalid(
            KIND,
            GROUP,
            sa_name,
            vec![FieldError::invalid(
                "metadata.name",
                req_name,
                "must match the service account name if specified",
            )],
        ));
    }
    let req_namespace = str_at(request, "/metadata/namespace");
    if !req_namespace.is_empty() && req_namespace != sa_namespace {
        return Err(ApiError::invalid(
            KIND,
            GROUP,
            sa_name,
            vec![FieldError::invalid(
                "metadata.namespace",
                req_namespace,
                "must match the service account namespace if specified",
            )],
        ));
    }

    let spec = request.get("spec").filter(|s| !s.is_null());
    let audiences: Vec<String> = match spec.and_then(|s| s.get("audiences")) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| {
                a.as_str().map(str::to_string).ok_or_else(|| {
                    ApiError::bad_request("spec.audiences must be a list of strings")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ApiError::bad_request(
                "spec.audiences must be a list of strings",
            ));
        }
    };
    let audiences = if audiences.is_empty() {
        issuer.api_audiences().to_vec()
    } else {
        audiences
    };
    let expiration_seconds = match spec.and_then(|s| s.get("expirationSeconds")) {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if let Some(msg) = expiration_seconds_problem(expiration_seconds) {
        return Err(ApiError::invalid(
            KIND,
            GROUP,
            "",
            vec![FieldError::invalid(
                "spec.expirationSeconds",
                expiration_seconds,
                msg,
            )],
        ));
    }

    let mut bound = None;
    let mut node_info = None;
    if let Some(target) = bound_object_target(request)? {
        let obj = bound_object.ok_or_else(|| {
            ApiError::not_found(&GroupResource::core(target.resource), &target.name)
        })?;
        let uid = str_at(obj, "/metadata/uid");
        if target.kind == BoundKind::Pod {
            if str_at(obj, "/spec/serviceAccountName") != sa_name {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                    super::go_quote(sa_name)
                )));
            }
            let node_name = str_at(obj, "/spec/nodeName");
            if !node_name.is_empty() {
                let node_uid = pod_node
                    .filter(|n| str_at(n, "/metadata/name") == node_name)
                    .map(|n| str_at(n, "/metadata/uid"))
                    .unwrap_or("");
                node_info = Some(NodeInfo {
                    name: node_name.to_string(),
                    uid: node_uid.to_string(),
                });
            }
        }
        let ref_uid = request
            .pointer("/spec/boundObjectRef/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !ref_uid.is_empty() && ref_uid != uid {
            return Err(ApiError::conflict(
                &GroupResource::new("", target.kind.as_str()),
                &target.name,
                format!(
                    "the UID in the bound object reference ({ref_uid}) does not match the UID in \
                     record. The object might have been deleted and then recreated"
                ),
            ));
        }
        bound = Some(BoundObject {
            kind: target.kind,
            name: str_at(obj, "/metadata/name").to_string(),
            uid: uid.to_string(),
        });
    }

    let issued = issuer
        .issue(TokenRequestInput {
            namespace: sa_namespace.to_string(),
            sa_name: sa_name.to_string(),
            sa_uid: sa_uid.to_string(),
            audiences: audiences.clone(),
            expiration_seconds: Some(expiration_seconds),
            bound,
            pod_node: node_info,
            now,
        })
        .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;

    let mut out = request.clone();
    out["apiVersion"] = json!(API_VERSION);
    out["kind"] = json!(KIND);
    if !out.get("metadata").is_some_and(Value::is_object) {
        out["metadata"] = json!({});
    }
    out["metadata"]["name"] = json!(sa_name);
    out["metadata"]["namespace"] = json!(sa_namespace);
    out["metadata"]["creationTimestamp"] = json!(rfc3339(now));
    if !out.get("spec").is_some_and(Value::is_object) {
        out["spec"] = json!({});
    }
    out["spec"]["audiences"] = json!(audiences);
    out["spec"]["expirationSeconds"] = json!(issued.expiration_seconds);
    out["status"] = json!({
        "token": issued.token,
        "expirationTimestamp": rfc3339(issued.expiration_timestamp),
    });
    Ok(TokenRequestOutcome {
        object: out,
        warnings: issued.warnings,
        credential_id: issued.credential_id,
    })
}

/// metav1.Time on the wire: seconds, UTC, `Z`.
fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
