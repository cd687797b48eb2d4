//! Building responses: objects in the negotiated encoding, `Status` errors, raw bytes and text.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use k1s_apimachinery::ApiError;
use serde_json::Value;

use crate::encoding::{self, Output};

pub fn encoded_response(status: StatusCode, value: &Value, output: &Output) -> Response {
    let (body, content_type) = encoding::encode(value, output);
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    resp
}

pub fn json_response(status: StatusCode, value: &Value) -> Response {
    encoded_response(status, value, &Output::Json)
}

/// A `Status` body with the error's code (and Retry-After when it has one).
pub fn error_response(err: &ApiError) -> Response {
    let mut resp = Response::new(Body::from(err.to_status_bytes()));
    *resp.status_mut() =
        StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = err.retry_after_seconds()
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(http::header::RETRY_AFTER, v);
    }
    resp
}

/// Raw bytes with a content type (OpenAPI documents, OIDC keys), optionally cacheable forever.
pub fn bytes_response(body: Bytes, content_type: &'static str, immutable: bool) -> Response {
    let mut resp = Response::new(Body::from(body));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    if immutable {
        resp.headers_mut().insert(
            http::header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
    }
    resp
}

/// Plain text (health checks), as upstream answers them.
pub fn text(status: StatusCode, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}
