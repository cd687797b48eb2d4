//! Constructors for `ApiError` that produce upstream's exact messages, codes and details
//! (`k8s.io/apimachinery/pkg/api/errors` and the apiserver's forbidden/negotiation errors).

use std::fmt;

use super::field::{FieldError, aggregate_message};
use super::{ApiError, Reason, StatusCause, StatusDetails};
use crate::gofmt::quote;
use crate::gvk::{GroupKind, GroupResource};

/// The optimistic-concurrency conflict detail (upstream `OptimisticLockErrorMsg`).
pub const OPTIMISTIC_LOCK_ERROR_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// The request an authorizer denied, for [`ApiError::forbidden_access`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccessAttributes<'a> {
    pub user: &'a str,
    pub verb: &'a str,
    /// False for non-resource requests (`/healthz`, `/version`, ...), which use `path`.
    pub resource_request: bool,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub path: &'a str,
}

impl AccessAttributes<'_> {
    /// The authorizer's denial sentence, e.g.
    /// `User "x" cannot list resource "pods" in API group "" in the namespace "y"`.
    pub fn forbidden_message(&self) -> String {
        if !self.resource_request {
            return format!(
                "User {} cannot {} path {}",
                quote(self.user),
                self.verb,
                quote(self.path)
            );
        }
        let resource = if self.subresource.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        };
        if self.namespace.is_empty() {
            format!(
                "User {} cannot {} resource {} in API group {} at the cluster scope",
                quote(self.user),
                self.verb,
                quote(&resource),
                quote(self.group)
            )
        } else {
            format!(
                "User {} cannot {} resource {} in API group {} in the namespace {}",
                quote(self.user),
                self.verb,
                quote(&resource),
                quote(self.group),
                quote(self.namespace)
            )
        }
    }
}

fn resource_details(gr: &GroupResource, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.to_string(),
        group: gr.group.clone(),
        kind: gr.resource.clone(),
        ..Default::default()
    }
}

impl ApiError {
    /// 404 `pods "foo" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            404,
            Reason::NotFound,
            format!("{gr} {} not found", quote(name)),
        )
        .with_details(resource_details(gr, name))
    }

    /// 404 for a path that serves nothing: `the server could not find the requested resource`.
    pub fn not_found_path() -> Self {
        Self::new(
            404,
            Reason::NotFound,
            "the server could not find the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// 409 `pods "foo" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            Reason::AlreadyExists,
            format!("{gr} {} already exists", quote(name)),
        )
        .with_details(resource_details(gr, name))
    }

    /// 409 when `generateName` could not produce a free name.
    pub fn generate_name_conflict(gr: &GroupResource, name: &str, retry_after: i32) -> Self {
        let mut details = resource_details(gr, name);
        details.retry_after_seconds = retry_after;
        Self::new(
            409,
            Reason::AlreadyExists,
            format!(
                "{gr} {} already exists, the server was not able to generate a unique name for the object",
                quote(name)
            ),
        )
        .with_details(details)
    }

    /// 409 `Operation cannot be fulfilled on pods "foo": <msg>`.
    pub fn conflict(gr: &GroupResource, name: &str, msg: impl fmt::Display) -> Self {
        Self::new(
            409,
            Reason::Conflict,
            format!(
                "Operation cannot be fulfilled on {gr} {}: {msg}",
                quote(name)
            ),
        )
        .with_details(resource_details(gr, name))
    }

    /// 409 for a stale `resourceVersion`: `... the object has been modified; please apply ...`.
    pub fn conflict_modified(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(gr, name, OPTIMISTIC_LOCK_ERROR_MSG)
    }

    /// 422 `Pod "foo" is invalid: spec.containers: Required value`, one cause per field error.
    /// `kind` is the Kind (not the resource); `group` is `""` for the core group.
    pub fn invalid(kind: &str, group: &str, name: &str, errors: Vec<FieldError>) -> Self {
        let gk = GroupKind::new(group, kind);
        let causes: Vec<StatusCause> = errors.iter().map(StatusCause::from).collect();
        let message = match aggregate_message(&errors) {
            None => format!("{gk} {} is invalid", quote(name)),
            Some(agg) => format!("{gk} {} is invalid: {agg}", quote(name)),
        };
        Self::new(422, Reason::Invalid, message).with_details(StatusDetails {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes,
            ..Default::default()
        })
    }

    /// 400 with the given message.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::new(400, Reason::BadRequest, msg)
    }

    /// 403 as upstream `NewForbidden`: `pods "foo" is forbidden: <err>`, `pods is forbidden: <err>`
    /// without a name, `forbidden: <err>` without a resource.
    pub fn forbidden(gr: &GroupResource, name: &str, err: impl fmt::Display) -> Self {
        let message = if gr.is_empty() {
            format!("forbidden: {err}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {err}")
        } else {
            format!("{gr} {} is forbidden: {err}", quote(name))
        };
        Self::new(403, Reason::Forbidden, message).with_details(resource_details(gr, name))
    }

    /// 403 for an authorization denial, as the apiserver writes it:
    /// `pods is forbidden: User "x" cannot list resource "pods" in API group "" in the namespace "y"`
    /// (`: <reason>` appended when the authorizer gave one).
    pub fn forbidden_access(attrs: &AccessAttributes<'_>, reason: &str) -> Self {
        let mut msg = attrs.forbidden_message();
        if !reason.is_empty() {
            msg.push_str(": ");
            msg.push_str(reason);
        }
        let gr = if attrs.resource_request {
            GroupResource::new(attrs.group, attrs.resource)
        } else {
            GroupResource::default()
        };
        Self::forbidden(&gr, attrs.name, msg)
    }

    /// 401 `Unauthorized`, as the authentication filter answers.
    pub fn unauthorized() -> Self {
        Self::unauthorized_msg("Unauthorized")
    }

    /// 401 with a message (`not authorized` when empty, as upstream).
    pub fn unauthorized_msg(msg: &str) -> Self {
        let message = if msg.is_empty() {
            "not authorized"
        } else {
            msg
        };
        Self::new(401, Reason::Unauthorized, message)
    }

    /// 405 `<action> is not supported on resources of kind "pods"`.
    pub fn method_not_allowed(gr: &GroupResource, action: &str) -> Self {
        Self::new(
            405,
            Reason::MethodNotAllowed,
            format!(
                "{action} is not supported on resources of kind {}",
                quote(&gr.to_string())
            ),
        )
        .with_details(StatusDetails {
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Default::default()
        })
    }

    /// 410 with reason `Gone`.
    pub fn gone(msg: impl Into<String>) -> Self {
        Self::new(410, Reason::Gone, msg)
    }

    /// 410 with reason `Expired` (resource version too old, expired continue token).
    pub fn expired(msg: impl Into<String>) -> Self {
        Self::new(410, Reason::Expired, msg)
    }

    /// 410 Expired `too old resource version: <requested> (<oldest kept>)`, as watches report.
    pub fn too_old_resource_version(requested: u64, oldest: u64) -> Self {
        Self::expired(format!("too old resource version: {requested} ({oldest})"))
    }

    /// 406 `only the following media types are accepted: a, b`.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::new(
            406,
            Reason::NotAcceptable,
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 415 `the body of the request was in an unknown format - accepted media types include: a, b`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 413 `Request entity too large: <detail>` (the apiserver uses `limit is <n>`).
    pub fn request_entity_too_large(detail: impl fmt::Display) -> Self {
        Self::new(
            413,
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: {detail}"),
        )
    }

    /// 429 with `retryAfterSeconds`, as upstream `NewTooManyRequests`.
    pub fn too_many_requests(retry_after_seconds: i32) -> Self {
        Self::new(
            429,
            Reason::TooManyRequests,
            "Too many requests, please try again later.",
        )
        .with_details(StatusDetails {
            retry_after_seconds,
            ..Default::default()
        })
    }

    /// 504 `Timeout: <msg>` with `retryAfterSeconds`.
    pub fn timeout(msg: impl fmt::Display, retry_after_seconds: i32) -> Self {
        Self::new(504, Reason::Timeout, format!("Timeout: {msg}")).with_details(StatusDetails {
            retry_after_seconds,
            ..Default::default()
        })
    }

    /// 500 ServerTimeout: `The <op> operation against <gr> could not be completed at this time, please try again.`
    pub fn server_timeout(gr: &GroupResource, operation: &str, retry_after_seconds: i32) -> Self {
        Self::new(
            500,
            Reason::ServerTimeout,
            format!(
                "The {operation} operation against {gr} could not be completed at this time, please try again."
            ),
        )
        .with_details(StatusDetails {
            name: operation.to_string(),
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            retry_after_seconds,
            ..Default::default()
        })
    }

    /// 500 `Internal error occurred: <msg>` with the message as the single cause.
    pub fn internal(msg: impl fmt::Display) -> Self {
        let msg = msg.to_string();
        Self::new(
            500,
            Reason::InternalError,
            format!("Internal error occurred: {msg}"),
        )
        .with_cause(StatusCause {
            message: msg,
            ..Default::default()
        })
    }

    /// 503 with the given message.
    pub fn service_unavailable(msg: impl Into<String>) -> Self {
        Self::new(503, Reason::ServiceUnavailable, msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> GroupResource {
        GroupResource::core("pods")
    }

    #[test]
    fn not_found_and_exists() {
        let e = ApiError::not_found(&pods(), "foo");
        assert_eq!(e.code, 404);
        assert_eq!(e.to_string(), "pods \"foo\" not found");
        assert_eq!(
            e.to_status_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"pods \"foo\" not found","reason":"NotFound",
                   "details":{"name":"foo","kind":"pods"},"code":404})
        );
        let e = ApiError::not_found(&GroupResource::new("apps", "deployments"), "web");
        assert_eq!(e.message, "deployments.apps \"web\" not found");
        assert_eq!(
            e.to_status_json()["details"],
            json!({"name":"web","group":"apps","kind":"deployments"})
        );
        let e = ApiError::already_exists(&pods(), "foo");
        assert_eq!((e.code, e.reason), (409, Reason::AlreadyExists));
        assert_eq!(e.message, "pods \"foo\" already exists");
        let e = ApiError::generate_name_conflict(&pods(), "foo-abcde", 1);
        assert_eq!(
            e.message,
            "pods \"foo-abcde\" already exists, the server was not able to generate a unique name for the object"
        );
        assert_eq!(e.retry_after_seconds(), Some(1));
        let e = ApiError::not_found_path();
        assert_eq!(
            e.to_status_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"the server could not find the requested resource",
                   "reason":"NotFound","details":{},"code":404})
        );
    }

    #[test]
    fn conflicts() {
        let e = ApiError::conflict_modified(&pods(), "foo");
        assert_eq!(e.code, 409);
        assert_eq!(e.reason, Reason::Conflict);
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on pods \"foo\": the object has been modified; please apply your changes to the latest version and try again"
        );
        let e = ApiError::conflict(
            &GroupResource::new("apps", "deployments"),
            "d",
            "Precondition failed: UID in precondition: a, UID in object meta: b",
        );
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on deployments.apps \"d\": Precondition failed: UID in precondition: a, UID in object meta: b"
        );
    }

    #[test]
    fn invalid_single_and_many() {
        let e = ApiError::invalid(
            "Pod",
            "",
            "foo",
            vec![FieldError::required("spec.containers", "")],
        );
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Pod \"foo\" is invalid: spec.containers: Required value"
        );
        assert_eq!(
            e.to_status_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"Pod \"foo\" is invalid: spec.containers: Required value",
                   "reason":"Invalid",
                   "details":{"name":"foo","kind":"Pod","causes":[
                       {"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"}]},
                   "code":422})
        );
        let e = ApiError::invalid(
            "Deployment",
            "apps",
            "web",
            vec![
                FieldError::required("a", ""),
                FieldError::invalid("b", "x", "bad"),
            ],
        );
        assert_eq!(
            e.message,
            "Deployment.apps \"web\" is invalid: [a: Required value, b: Invalid value: \"x\": bad]"
        );
        let causes = &e
            .details
            .as_ref()
            .map(|d| d.causes.clone())
            .unwrap_or_default();
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[1].message, "Invalid value: \"x\": bad");
        assert_eq!(causes[1].reason, "FieldValueInvalid");
        assert_eq!(causes[1].field, "b");
        let e = ApiError::invalid("ConfigMap", "", "c", vec![]);
        assert_eq!(e.message, "ConfigMap \"c\" is invalid");
    }

    #[test]
    fn forbidden_messages() {
        let attrs = AccessAttributes {
            user: "x",
            verb: "list",
            resource_request: true,
            resource: "pods",
            namespace: "y",
            ..Default::default()
        };
        let e = ApiError::forbidden_access(&attrs, "");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "pods is forbidden: User \"x\" cannot list resource \"pods\" in API group \"\" in the namespace \"y\""
        );
        assert_eq!(e.to_status_json()["details"], json!({"kind":"pods"}));
        let attrs = AccessAttributes {
            user: "system:anonymous",
            verb: "get",
            resource_request: true,
            group: "apps",
            resource: "deployments",
            subresource: "scale",
            name: "web",
            ..Default::default()
        };
        assert_eq!(
            ApiError::forbidden_access(&attrs, "no RBAC policy matched").message,
            "deployments.apps \"web\" is forbidden: User \"system:anonymous\" cannot get resource \"deployments/scale\" in API group \"apps\" at the cluster scope: no RBAC policy matched"
        );
        let attrs = AccessAttributes {
            user: "bob",
            verb: "get",
            path: "/metrics",
            ..Default::default()
        };
        assert_eq!(
            ApiError::forbidden_access(&attrs, "").message,
            "forbidden: User \"bob\" cannot get path \"/metrics\""
        );
    }

    #[test]
    fn other_constructors() {
        let e = ApiError::bad_request("bad");
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (400, Reason::BadRequest, "bad")
        );
        let e = ApiError::unauthorized();
        assert_eq!((e.code, e.message.as_str()), (401, "Unauthorized"));
        assert_eq!(ApiError::unauthorized_msg("").message, "not authorized");
        let e = ApiError::method_not_allowed(&pods(), "deletecollection");
        assert_eq!(e.code, 405);
        assert_eq!(
            e.message,
            "deletecollection is not supported on resources of kind \"pods\""
        );
        let e = ApiError::too_old_resource_version(5, 10);
        assert_eq!((e.code, e.reason), (410, Reason::Expired));
        assert_eq!(e.message, "too old resource version: 5 (10)");
        assert!(e.is_gone_or_expired());
        assert_eq!(ApiError::gone("g").reason, Reason::Gone);
        let e = ApiError::not_acceptable(&["application/json", "application/yaml"]);
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                406,
                "only the following media types are accepted: application/json, application/yaml"
            )
        );
        let e = ApiError::unsupported_media_type(&["application/json"]);
        assert_eq!(e.code, 415);
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json"
        );
        let e = ApiError::request_entity_too_large("limit is 3145728");
        assert_eq!(
            (e.code, e.message.as_str()),
            (413, "Request entity too large: limit is 3145728")
        );
        let e = ApiError::too_many_requests(1);
        assert_eq!(e.code, 429);
        assert_eq!(
            e.to_status_json()["details"],
            json!({"retryAfterSeconds":1})
        );
        let e = ApiError::timeout("request did not complete within 60s", 0);
        assert_eq!(
            (e.code, e.message.as_str()),
            (504, "Timeout: request did not complete within 60s")
        );
        let e = ApiError::server_timeout(&pods(), "create", 2);
        assert_eq!(
            e.message,
            "The create operation against pods could not be completed at this time, please try again."
        );
        let e = ApiError::internal("disk on fire");
        assert_eq!(e.code, 500);
        assert_eq!(e.message, "Internal error occurred: disk on fire");
        assert_eq!(
            e.to_status_json()["details"],
            json!({"causes":[{"message":"disk on fire"}]})
        );
        let e = ApiError::service_unavailable("starting");
        assert_eq!((e.code, e.reason), (503, Reason::ServiceUnavailable));
    }
}
