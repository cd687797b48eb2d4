//! `k1s server`: PKI and kubeconfig on first start, the store, bootstrap objects, the TLS
//! listener, the request path (authentication, routing) and graceful shutdown.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k1s_apimachinery::ApiError;
use k1s_storage::{Backend, LocalStore, Store, StoreConfig};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::discovery;
use crate::encoding::MAX_BODY_BYTES;
use crate::handlers::{self, ApiContext, error_response, json_response};
use crate::registry::Registry;
use crate::request::Route;
use crate::tls::{self, ClientAuth};

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    pub secure_port: u16,
    pub tls_sans: Vec<String>,
    /// Memory-only store; only the kubeconfig is written (and the PKI to a temporary directory).
    pub ephemeral: bool,
    pub advertise_address: Option<IpAddr>,
    /// Where to write the admin kubeconfig (default `<data-dir>/admin.conf`).
    pub kubeconfig_path: Option<PathBuf>,
    /// Upstream's static token file (`token,user,uid,"group1,group2"`).
    pub token_auth_file: Option<PathBuf>,
    /// `--audit-policy-file` (audit.k8s.io/v1 Policy); auditing is off without it.
    pub audit_policy_file: Option<PathBuf>,
    /// `--audit-log-path` (`-` = standard output).
    pub audit_log_path: Option<PathBuf>,
    pub audit_log_maxsize_mb: u64,
    pub audit_log_maxbackup: usize,
    /// Upstream's `--max-requests-inflight` (read-only) and `--max-mutating-requests-inflight`.
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("PKI: {0}")]
    Pki(#[from] k1s_kubeadm_lite::PkiError),
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] k1s_kubeadm_lite::KubeconfigError),
    #[error("store: {0}")]
    Store(#[from] k1s_storage::Error),
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("bootstrap: {0}")]
    Bootstrap(ApiError),
    #[error("authentication setup: {0}")]
    Authentication(String),
}

/// A started server. Dropping it does not stop it; call `shutdown`.
pub struct RunningServer {
    pub local_addr: SocketAddr,
    pub kubeconfig: PathBuf,
    pub store: Arc<dyn Store>,
    stop: tokio::sync::watch::Sender<bool>,
    done: tokio::task::JoinHandle<()>,
    _ephemeral_pki: Option<tempfile::TempDir>,
}

impl RunningServer {
    /// Stops accepting, ends watches, lets in-flight requests finish (up to 10 s), closes the store.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.done.await;
    }

    /// Waits until the server stops (after `shutdown` from elsewhere or a fatal error).
    pub async fn wait(&mut self) {
        let _ = (&mut self.done).await;
    }
}

/// Shared by every request.
pub(crate) struct AppState {
    pub(crate) api: ApiContext,
    ready: AtomicBool,
    server_address: String,
}

pub async fn start(config: ServerConfig) -> Result<RunningServer, ServerError> {
    let advertise = config
        .advertise_address
        .or_else(crate::bootstrap::default_advertise_address)
        .unwrap_or(config.bind_address);
    let (pki_dir, ephemeral_pki) = if config.ephemeral {
        let tmp = tempfile::tempdir()?;
        (tmp.path().to_path_buf(), Some(tmp))
    } else {
        std::fs::create_dir_all(&config.data_dir)?;
        (config.data_dir.join("pki"), None)
    };
    let mut pki_opts = k1s_kubeadm_lite::PkiOptions::for_server(&config.tls_sans, Some(advertise));
    if !config.bind_address.is_unspecified() {
        pki_opts.add_ip(config.bind_address);
    }
    let pki = k1s_kubeadm_lite::ensure_pki(&pki_dir, &pki_opts)?;

    let backend = if config.ephemeral {
        Backend::Memory
    } else {
        Backend::Sled(config.data_dir.join("store"))
    };
    let local_store = LocalStore::open(StoreConfig::new(backend))?;
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let store: Arc<dyn Store> = Arc::new(crate::metrics::InstrumentedStore::new(
        Arc::new(local_store.clone()),
        metrics.clone(),
    ));
    let registry = Registry::new(store.clone());

    let listener =
        TcpListener::bind(SocketAddr::new(config.bind_address, config.secure_port)).await?;
    let local_addr = listener.local_addr()?;
    crate::bootstrap::ensure(&registry, advertise, local_addr.port())
        .await
        .map_err(ServerError::Bootstrap)?;

    let client_host = if config.bind_address.is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        match config.bind_address {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        }
    };
    let server_url = format!("https://{client_host}:{}", local_addr.port());
    let kubeconfig = config
        .kubeconfig_path
        .clone()
        .unwrap_or_else(|| config.data_dir.join("admin.conf"));
    if let Some(parent) = kubeconfig.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let (cert, key) = pki.issue_client_cert(
        "kubernetes-admin",
        &["system:masters"],
        Duration::from_secs(365 * 24 * 3600),
    )?;
    k1s_kubeadm_lite::write_admin_kubeconfig(
        &kubeconfig,
        &server_url,
        "k1s",
        pki.ca_cert_pem(),
        &cert,
        &key,
    )?;

    let (tls_config, client_auth) = tls::server_config(
        pki.ca_cert_der().clone(),
        pki.serving_cert_chain_der(),
        pki.serving_key_der(),
    )?;
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    // Webhooks without a caBundle are trusted if the cluster CA signed them.
    let webhooks = Arc::new(crate::admission::WebhookDispatcher::new());
    webhooks.set_default_roots(vec![pki.ca_cert_der().clone()]);
    crate::admit::feed_webhook_configurations(registry.clone(), webhooks.clone(), stop_rx.clone());
    crate::serviceaccounts::spawn(
        registry.clone(),
        pki.ca_cert_pem().to_string(),
        stop_rx.clone(),
    );
    let authorizer = crate::authorization::start(&registry, stop_rx.clone())
        .await
        .map_err(ServerError::Bootstrap)?;
    let tokens = crate::auth::authn::TokenIssuer::new(
        pki.sa_private_key_pkcs8_der(),
        pki.sa_public_key_pem(),
        String::new(),
        Vec::new(),
    )
    .map_err(|e| ServerError::Authentication(e.to_string()))?;
    let token_file = match &config.token_auth_file {
        Some(path) => Some(
            crate::auth::authn::TokenFile::load(path)
                .map_err(|e| ServerError::Authentication(e.to_string()))?,
        ),
        None => None,
    };
    let external = server_url.trim_start_matches("https://").to_string();
    let oidc = crate::auth::authn::OidcDocuments::new(&tokens, None, &external).ok();
    let audit = match (&config.audit_policy_file, &config.audit_log_path) {
        (Some(policy), Some(path)) => Some(crate::chain::Audit {
            policy: crate::audit::Policy::load(policy).map_err(ServerError::Authentication)?,
            logger: crate::audit::AuditLogger::open(&crate::audit::AuditLogConfig {
                path: path.clone(),
                max_size_mb: config.audit_log_maxsize_mb,
                max_backups: config.audit_log_maxbackup,
                max_age_days: 0,
                buffer_size: crate::audit::DEFAULT_BUFFER_SIZE,
            })?,
        }),
        (Some(_), None) => {
            return Err(ServerError::Authentication(
                "--audit-policy-file needs --audit-log-path".into(),
            ));
        }
        _ => None,
    };
    let security = Arc::new(crate::chain::Security {
        authorizer,
        tokens,
        token_file,
        oidc,
        inflight: crate::overload::InFlightLimiter::new(
            config.max_mutating_requests_inflight,
            config.max_requests_inflight,
        ),
        audit,
        token_cache: Default::default(),
    });
    let state = Arc::new(AppState {
        api: ApiContext {
            registry,
            shutdown: stop_rx.clone(),
            metrics,
            services: Arc::default(),
            security,
            webhooks: webhooks.clone(),
        },
        ready: AtomicBool::new(true),
        server_address: format!("{advertise}:{}", local_addr.port()),
    });
    let done = tokio::spawn(serve(
        listener,
        TlsAcceptor::from(Arc::new(tls_config)),
        client_auth,
        state,
        stop_rx,
        local_store,
    ));
    Ok(RunningServer {
        local_addr,
        kubeconfig,
        store,
        stop,
        done,
        _ephemeral_pki: ephemeral_pki,
    })
}

/// The accept loop; on stop, drains connections and closes the store.
async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    client_auth: ClientAuth,
    state: Arc<AppState>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    store: LocalStore,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let (tcp, peer) = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let client_auth = client_auth.clone();
        let state = state.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
            let identity = Arc::new(client_auth.identify(tls.get_ref().1.peer_certificates()));
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let state = state.clone();
                    let identity = identity.clone();
                    async move {
                        Ok::<_, std::convert::Infallible>(
                            crate::chain::handle(&state, &identity, peer, req.map(Body::new)).await,
                        )
                    }
                });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(10), graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after 10s; closing anyway");
    }
    store.close();
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
pub(crate) async fn route(
    state: &AppState,
    user: &crate::auth::UserInfo,
    info: crate::chain::RequestInfo,
    req: Request,
) -> Response {
    let headers = req.headers().clone();
    let crate::chain::RequestInfo {
        path, query, route, ..
    } = info;
    match route {
        Route::Resource(r) => {
            let body = match read_body(req).await {
                Ok(b) => b,
                Err(e) => return error_response(&e),
            };
            handlers::handle(&state.api, user, r, &headers, &query, body).await
        }
        Route::GroupVersion { group, version } => {
            match discovery::api_resource_list(&group, &version) {
                Some(doc) => json_response(StatusCode::OK, &doc),
                None => error_response(&ApiError::not_found_path()),
            }
        }
        Route::Group(group) => match discovery::api_group(&group) {
            Some(doc) => json_response(StatusCode::OK, &doc),
            None => error_response(&ApiError::not_found_path()),
        },
        Route::NonResource => non_resource(state, &path, &headers, &query),
    }
}

fn non_resource(
    state: &AppState,
    path: &str,
    headers: &http::HeaderMap,
    query: &handlers::Query,
) -> Response {
    let header = |name: http::header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    match path {
        "/api" | "/api/" | "/apis" | "/apis/" => {
            let scope = if path.starts_with("/apis") {
                discovery::Scope::Apis
            } else {
                discovery::Scope::Legacy
            };
            let d = discovery::root_response(
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
        "/metrics" => {
            let text = state
                .api
                .metrics
                .render(state.api.registry.store().current_revision());
            let mut resp = Response::new(Body::from(text));
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            resp
        }
        "/openapi/v2" => match crate::openapi::V2Format::negotiate(header(http::header::ACCEPT)) {
            Some(format) => {
                let mut resp = bytes_response(
                    crate::openapi::schemas().v2(format),
                    format.content_type(),
                    false,
                );
                resp.headers_mut()
                    .insert(http::header::VARY, HeaderValue::from_static("Accept"));
                resp
            }
            None => error_response(&ApiError::not_acceptable(&[
                "application/json",
                crate::openapi::V2_PROTOBUF_CONTENT_TYPE,
            ])),
        },
        "/openapi/v3" | "/openapi/v3/" => bytes_response(
            crate::openapi::schemas().v3_index_json(),
            "application/json",
            false,
        ),
        p if p.starts_with("/openapi/v3/") => {
            let doc_path = &p["/openapi/v3/".len()..];
            match crate::openapi::schemas().v3_document(doc_path) {
                // An outdated hash is redirected to the current one, as upstream does.
                Some((_, hash)) if query.get("hash").is_some_and(|h| h != hash) => {
                    let mut resp = Response::new(Body::empty());
                    *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
                    if let Ok(v) =
                        HeaderValue::from_str(&format!("/openapi/v3/{doc_path}?hash={hash}"))
                    {
                        resp.headers_mut().insert(http::header::LOCATION, v);
                    }
                    resp
                }
                Some((doc, _)) => {
                    bytes_response(doc, "application/json", query.contains_key("hash"))
                }
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

fn bytes_response(body: Bytes, content_type: &'static str, immutable: bool) -> Response {
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

/// `/healthz`, `/livez`, `/readyz` with `?verbose` and per-check paths, as upstream words them.
fn health(state: &AppState, path: &str, query: &handlers::Query) -> Response {
    let ready = state.ready.load(Ordering::Acquire);
    let store_ok = state.api.registry.store().current_revision().0 > 0;
    let mut checks: Vec<(&str, bool)> = vec![("ping", true), ("etcd", store_ok)];
    if path.starts_with("/readyz") {
        checks.push(("shutdown", !*state.api.shutdown.borrow()));
        checks.push(("informer-sync", ready));
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

fn text(status: StatusCode, body: String) -> Response {
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

/// Bodies past the limit are still read (and dropped) up to this much, so the client finishes
/// sending and reads the 413 instead of a reset connection (Go's server drains similarly).
const DRAIN_LIMIT: usize = 16 * MAX_BODY_BYTES;

async fn read_body(req: Request) -> Result<Bytes, ApiError> {
    let mut body = req.into_body();
    let mut buf = bytes::BytesMut::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen += data.len();
        if seen > MAX_BODY_BYTES {
            if seen > DRAIN_LIMIT {
                break;
            }
            continue;
        }
        buf.extend_from_slice(&data);
    }
    if seen > MAX_BODY_BYTES {
        return Err(ApiError::request_entity_too_large(format!(
            "limit is {MAX_BODY_BYTES}"
        )));
    }
    Ok(buf.freeze())
}

/// Decodes `a=b&c=d` (percent-encoding and `+`), last value of a repeated key winning.
pub(crate) fn url_decode_pairs(q: &str) -> handlers::Query {
    fn decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    match u8::from_str_radix(
                        std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                        16,
                    ) {
                        Ok(b) => {
                            out.push(b);
                            i += 2;
                        }
                        Err(_) => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}
