//! The router behind the filter chain: resource requests go to the generic REST handler;
//! discovery, OpenAPI, health, metrics, OIDC documents and store snapshots are answered here.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderValue, StatusCode};
use k1s_apimachinery::ApiError;

use crate::auth::UserInfo;
use crate::chain::{Handler, RequestInfo};
use crate::context::ApiContext;
use crate::discovery;
use crate::handlers;
use crate::request::{Query, Route, read_body};
use crate::response::{bytes_response, error_response, json_response, text};

/// The router and what it reads.
pub struct Router {
    pub(crate) api: ApiContext,
    pub(crate) ready: AtomicBool,
    pub(crate) server_address: String,
}

impl Router {
    pub fn new(api: ApiContext, server_address: String) -> Router {
        Router {
            api,
            ready: AtomicBool::new(true),
            server_address,
        }
    }
}

impl Handler for Router {
    fn call<'a>(
        &'a self,
        user: &'a UserInfo,
        info: RequestInfo,
        req: Request,
    ) -> BoxFuture<'a, Response> {
        Box::pin(route(self, user, info, req))
    }
}

/// Paths an unauthenticated caller may reach (upstream's system:public-info-viewer).
fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/livez" | "/readyz" | "/version" | "/version/"
    ) || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

/// The routes behind the filter chain: the REST handler, discovery, OpenAPI, health, metrics.
async fn route(state: &Router, user: &UserInfo, info: RequestInfo, req: Request) -> Response {
    let headers = req.headers().clone();
    let RequestInfo {
        method,
        path,
        query,
        route,
        ..
    } = info;
    // The aggregator comes first: an APIService with a backend owns its group/version.
    if let Some(remote) = state.api.aggregator.remote_for(&path) {
        return crate::aggregator::proxy::serve(&state.api.aggregator, remote, user, req).await;
    }
    match route {
        Route::NonResource if path == crate::snapshot::PATH => {
            crate::snapshot::serve(&state.api, user, &method).await
        }
        // Served here rather than by the generic handler: what upstream proxies to kubelets
        // and metrics.k8s.io (neither is stored).
        Route::Resource(r) if crate::node_proxy::handles(&r) => {
            crate::node_proxy::serve(&state.api, &r, &query, &path, req).await
        }
        Route::Resource(r) if crate::metrics_api::handles(&r) => {
            crate::metrics_api::serve(&state.api, &r, &query).await
        }
        Route::Resource(r) => {
            let body = match read_body(req).await {
                Ok(b) => b,
                Err(e) => return error_response(&e),
            };
            handlers::handle(&state.api, user, r, &headers, &query, body).await
        }
        Route::GroupVersion { group, version } => {
            match state
                .api
                .aggregator
                .served_apis()
                .api_resource_list(&group, &version)
            {
                Some(doc) => json_response(StatusCode::OK, &doc),
                None => error_response(&ApiError::not_found_path()),
            }
        }
        Route::Group(group) => match state.api.aggregator.served_apis().api_group(&group) {
            Some(doc) => json_response(StatusCode::OK, &doc),
            None => error_response(&ApiError::not_found_path()),
        },
        Route::NonResource if path == "/metrics" => metrics(state).await,
        Route::NonResource => non_resource(state, &path, &headers, &query),
    }
}

/// `/metrics`: asks the store for its size (etcd answers over the network), then renders.
async fn metrics(state: &Router) -> Response {
    let store = state.api.registry.store();
    let stats = crate::metrics::StoreStats {
        revision: store.current_revision(),
        cluster_id: match store.backend_kind() {
            k1s_storage::BackendKind::Etcd => "etcd-0",
            k1s_storage::BackendKind::Local => "local-0",
        },
        // A backend that cannot answer leaves the gauge out rather than fail the scrape.
        size_bytes: store.size_bytes().await.ok().flatten(),
    };
    let mut text = state.api.metrics.render(&stats);
    let security = &state.api.security;
    let apf = security
        .flowcontrol
        .render_metrics(security.inflight.server_concurrency());
    // The registry's text ends with `# EOF`; the APF series go before it.
    let at = text.rfind("# EOF").unwrap_or(text.len());
    text.insert_str(at, &apf);
    let mut resp = Response::new(Body::from(text));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    resp
}

fn non_resource(state: &Router, path: &str, headers: &http::HeaderMap, query: &Query) -> Response {
    let header = |name: http::header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    match path {
        "/api" | "/api/" | "/apis" | "/apis/" => {
            let scope = if path.starts_with("/apis") {
                discovery::Scope::Apis
            } else {
                discovery::Scope::Legacy
            };
            let d = state.api.aggregator.served_apis().root_response(
                scope,
                header(http::header::ACCEPT).unwrap_or(""),
                header(http::header::IF_NONE_MATCH),
                &state.server_address,
            );
            let mut resp = Response::new(Body::from(d.body));
            *resp.status_mut() = StatusCode::from_u16(d.status).unwrap_or(StatusCode::OK);
            let h = resp.headers_mut();
            h.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(d.content_type),
            );
            if let Some(etag) = d.etag.and_then(|e| HeaderValue::from_str(&e).ok()) {
                h.insert(http::header::ETAG, etag);
            }
            if d.cacheable {
                h.insert(http::header::VARY, HeaderValue::from_static("Accept"));
                h.insert(
                    http::header::CACHE_CONTROL,
                    HeaderValue::from_static("public"),
                );
            }
            resp
        }
        "/version" | "/version/" => json_response(StatusCode::OK, &discovery::version_info()),
        "/openapi/v2" => match crate::openapi::V2Format::negotiate(header(http::header::ACCEPT)) {
            Some(format) => {
                let doc = state.api.aggregator.openapi_v2(format);
                let etag = v2_etag(&doc);
                // As kube-openapi's handler: an ETag, and 304 when the client has it already.
                let mut resp = if header(http::header::IF_NONE_MATCH) == Some(etag.as_str()) {
                    let mut r = Response::new(Body::empty());
                    *r.status_mut() = StatusCode::NOT_MODIFIED;
                    r
                } else {
                    bytes_response(doc, format.content_type(), false)
                };
                resp.headers_mut()
                    .insert(http::header::VARY, HeaderValue::from_static("Accept"));
                if let Ok(v) = HeaderValue::from_str(&etag) {
                    resp.headers_mut().insert(http::header::ETAG, v);
                }
                resp
            }
            None => error_response(&ApiError::not_acceptable(&[
                "application/json",
                crate::openapi::V2_PROTOBUF_CONTENT_TYPE,
            ])),
        },
        "/openapi/v3" | "/openapi/v3/" => bytes_response(
            Bytes::from(state.api.aggregator.openapi_v3_index(
                crate::apiextensions::openapi::v3_index(&crate::openapi::schemas().v3_index_json()),
            )),
            "application/json",
            false,
        ),
        p if p.starts_with("/openapi/v3/apis/")
            && state
                .api
                .aggregator
                .openapi_v3_document(&p["/openapi/v3/".len()..])
                .is_some() =>
        {
            match state
                .api
                .aggregator
                .openapi_v3_document(&p["/openapi/v3/".len()..])
            {
                Some((doc, hash)) => v3_answer(p, query, doc, &hash),
                None => error_response(&ApiError::not_found_path()),
            }
        }
        p if p.starts_with("/openapi/v3/apis/")
            && crate::openapi::schemas()
                .v3_document(&p["/openapi/v3/".len()..])
                .is_none() =>
        {
            match crate::apiextensions::openapi::v3_document(&p["/openapi/v3/".len()..]) {
                Some((doc, _)) => bytes_response(
                    Bytes::from(doc),
                    "application/json",
                    query.contains_key("hash"),
                ),
                None => error_response(&ApiError::not_found_path()),
            }
        }
        p if p.starts_with("/openapi/v3/") => {
            let doc_path = &p["/openapi/v3/".len()..];
            match crate::openapi::schemas().v3_document(doc_path) {
                Some((doc, hash)) => v3_answer(p, query, doc, hash),
                None => error_response(&ApiError::not_found_path()),
            }
        }
        "/.well-known/openid-configuration" | "/openid/v1/jwks" => match &state.api.security.oidc {
            Some(docs) => {
                let (body, ct) = if path == "/openid/v1/jwks" {
                    (
                        docs.keyset_json(),
                        crate::auth::authn::oidc::CONTENT_TYPE_JWKS,
                    )
                } else {
                    (
                        docs.config_json(),
                        crate::auth::authn::oidc::CONTENT_TYPE_CONFIG,
                    )
                };
                let mut resp = bytes_response(Bytes::from(body.to_vec()), ct, false);
                resp.headers_mut().insert(
                    http::header::CACHE_CONTROL,
                    HeaderValue::from_static(crate::auth::authn::oidc::CACHE_CONTROL),
                );
                resp
            }
            None => error_response(&ApiError::not_found_path()),
        },
        p if is_public(p) => health(state, p, query),
        _ => error_response(&ApiError::not_found_path()),
    }
}

/// An OpenAPI v3 document; a request with an outdated `?hash=` is redirected to the current
/// one, as upstream does, and one with the current hash may be cached for good.
/// The `/openapi/v2` ETag: upstream's quoted upper-case hex SHA-512 of the document, computed
/// once per document (the documents are shared until the served kinds change).
fn v2_etag(doc: &Bytes) -> String {
    static LAST: std::sync::Mutex<Vec<(Bytes, String)>> = std::sync::Mutex::new(Vec::new());
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, etag)) = last
        .iter()
        .find(|(d, _)| d.as_ptr() == doc.as_ptr() && d.len() == doc.len())
    {
        return etag.clone();
    }
    let digest = ring::digest::digest(&ring::digest::SHA512, doc);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    let etag = format!("\"{hex}\"");
    // One JSON and one protobuf document are current at a time.
    if last.len() >= 2 {
        last.remove(0);
    }
    last.push((doc.clone(), etag.clone()));
    etag
}

fn v3_answer(path: &str, query: &Query, doc: Bytes, hash: &str) -> Response {
    if query.get("hash").is_some_and(|h| h != hash) {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
        if let Ok(v) = HeaderValue::from_str(&format!("{path}?hash={hash}")) {
            resp.headers_mut().insert(http::header::LOCATION, v);
        }
        return resp;
    }
    bytes_response(doc, "application/json", query.contains_key("hash"))
}

/// kube-apiserver 1.33's post-start hooks, in its order. k1s does the work each stands for
/// (admission, informers, CRDs, bootstrap objects, APF, aggregation, OpenAPI) while it starts:
/// they pass once the start is complete.
const POST_START_HOOKS: &[&str] = &[
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/start-service-ip-repair-controllers",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/bootstrap-controller",
    "poststarthook/start-kubernetes-service-cidr-controller",
    "poststarthook/aggregator-reload-proxy-client-cert",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-status-local-available-controller",
    "poststarthook/apiservice-status-remote-available-controller",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
];

/// `/healthz`, `/livez`, `/readyz` with `?verbose` and per-check paths, as upstream words them
/// and in its order (readiness adds `etcd-readiness`, `informer-sync` and `shutdown`).
fn health(state: &Router, path: &str, query: &Query) -> Response {
    let ready = state.ready.load(Ordering::Acquire);
    let store_ok = state.api.registry.store().current_revision().0 > 0;
    let readyz = path.starts_with("/readyz");
    let mut checks: Vec<(&str, bool)> = vec![("ping", true), ("log", true), ("etcd", store_ok)];
    if readyz {
        checks.push(("etcd-readiness", store_ok));
        checks.push(("informer-sync", ready));
    }
    checks.extend(POST_START_HOOKS.iter().map(|h| (*h, ready)));
    if readyz {
        checks.push(("shutdown", !*state.api.shutdown.borrow()));
    }
    let (base, single) = match path.split_once('/').map(|(_, rest)| rest.split_once('/')) {
        Some(Some((base, check))) => (base, Some(check)),
        _ => (path.trim_start_matches('/'), None),
    };
    if let Some(check) = single {
        return match checks.iter().find(|(n, _)| *n == check) {
            Some((_, true)) => text(StatusCode::OK, "ok".into()),
            Some((n, false)) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {n} check failed"),
            ),
            None => error_response(&ApiError::not_found_path()),
        };
    }
    // `?exclude=<check>` skips a check, as upstream's health endpoints allow.
    let excluded: Vec<&str> = query
        .get("exclude")
        .map(|e| e.split(',').collect())
        .unwrap_or_default();
    let healthy = checks
        .iter()
        .all(|(name, ok)| *ok || excluded.contains(name));
    if query.contains_key("verbose") || !healthy {
        let mut out = String::new();
        for (name, ok) in &checks {
            let line = if excluded.contains(name) {
                format!("[+]{name} excluded: ok\n")
            } else if *ok {
                format!("[+]{name} ok\n")
            } else {
                format!("[-]{name} failed: reason withheld\n")
            };
            out.push_str(&line);
        }
        out.push_str(&format!(
            "{base} check {}\n",
            if healthy { "passed" } else { "failed" }
        ));
        let code = if healthy {
            StatusCode::OK
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        return text(code, out);
    }
    text(StatusCode::OK, "ok".into())
}
