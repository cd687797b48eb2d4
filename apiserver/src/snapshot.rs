//! `GET /k1s/snapshot`: streams a snapshot of the embedded store, for `k1s snapshot save`.
//!
//! The running server holds sled's lock on its data directory, so it is the one that can read a
//! consistent snapshot. Only `system:masters` may take one: the file holds every Secret.

use axum::body::Body;
use axum::response::Response;
use futures::TryStreamExt;
use http::{HeaderValue, Method, StatusCode};
use k1s_apimachinery::status::AccessAttributes;
use k1s_apimachinery::{ApiError, GroupResource, Reason};

use crate::auth::UserInfo;
use crate::auth::rbac::is_privileged;
use crate::context::ApiContext;
use crate::response::error_response;

/// Where the snapshot is served.
pub const PATH: &str = "/k1s/snapshot";

/// Answers a request for [`PATH`].
pub async fn serve(api: &ApiContext, user: &UserInfo, method: &Method) -> Response {
    if method != Method::GET {
        return error_response(&ApiError::new(
            405,
            Reason::MethodNotAllowed,
            format!("{method} is not supported on {PATH}; a snapshot is read with GET"),
        ));
    }
    // Stricter than RBAC alone: a role granting this non-resource URL is not enough.
    if !is_privileged(user) {
        let attrs = AccessAttributes {
            user: &user.name,
            verb: "get",
            path: PATH,
            ..Default::default()
        };
        return error_response(&ApiError::forbidden_access(
            &attrs,
            "snapshots are for system:masters only",
        ));
    }
    let store = api.registry.store().clone();
    match k1s_storage::snapshot::save_stream(store).await {
        Ok(stream) => {
            let mut resp = Response::new(Body::from_stream(stream.map_err(|e| {
                tracing::error!(error = %e, "snapshot stream failed");
                std::io::Error::other(e.to_string())
            })));
            *resp.status_mut() = StatusCode::OK;
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            resp
        }
        Err(e) => error_response(&crate::errors::from_store(e, &GroupResource::default(), "")),
    }
}
