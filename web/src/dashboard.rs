//! `k1s dashboard`: serves the UI on loopback and forwards the browser's API calls to a cluster
//! with a kubeconfig's credentials (as `kubectl proxy` does), behind a one-time login link.
//!
//! The link carries a random token in its URL fragment (never sent in a request line, so never
//! logged); the page posts it to `/ui/login` once and gets an HttpOnly SameSite=Strict session
//! cookie plus an anti-CSRF token that every forwarded call must echo in `X-K1s-Csrf`. The Host
//! header must name the loopback listener, which defeats DNS rebinding.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::json;

use crate::assets;

/// The header every forwarded call carries with the session's anti-CSRF token.
pub const CSRF_HEADER: &str = "x-k1s-csrf";
/// The session cookie's name.
pub const COOKIE: &str = "k1s_dashboard";
/// Largest request body forwarded (the API server's own limit is 3 MiB).
const MAX_BODY: usize = 4 << 20;

/// Sessions and the not-yet-used login token.
struct Auth {
    /// The login token until it is exchanged; then `None` (single use).
    login: Option<String>,
    /// Session id (the cookie) -> its anti-CSRF token.
    sessions: HashMap<String, String>,
}

/// What the handlers share.
struct Shared {
    client: kube::Client,
    auth: Mutex<Auth>,
    /// The Host header values accepted (`127.0.0.1:PORT`, `localhost:PORT`).
    hosts: Vec<String>,
}

/// A running dashboard: where it listens and the link that logs in once.
#[derive(Debug)]
pub struct Running {
    pub addr: SocketAddr,
    pub login_url: String,
    pub task: tokio::task::JoinHandle<()>,
}

/// A random 256-bit token, hex encoded.
fn random_token() -> std::io::Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| std::io::Error::other("no system randomness"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Equality in time independent of where the strings differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Binds `127.0.0.1:port` (0: any free port) and serves the dashboard with `client`'s
/// credentials until the task is dropped or aborted.
pub async fn start(client: kube::Client, port: u16) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let login = random_token()?;
    let shared = Arc::new(Shared {
        client,
        auth: Mutex::new(Auth {
            login: Some(login.clone()),
            sessions: HashMap::new(),
        }),
        hosts: vec![
            format!("127.0.0.1:{}", addr.port()),
            format!("localhost:{}", addr.port()),
        ],
    });
    let app = axum::Router::new().fallback(handle).with_state(shared);
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "dashboard server stopped");
        }
    });
    Ok(Running {
        addr,
        login_url: format!("http://{addr}/ui/#login={login}"),
        task,
    })
}

/// A `Status` response, as the API server words its refusals, so the page shows one kind of
/// error whatever refused.
fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16(),
    });
    json_response(code, &body)
}

fn json_response(code: StatusCode, body: &serde_json::Value) -> Response {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The session id from the request's cookie, if any.
fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v)
}

impl Shared {
    /// The anti-CSRF token of the request's session, if the cookie names one.
    fn session_csrf(&self, headers: &HeaderMap) -> Option<String> {
        let id = session_cookie(headers)?;
        let auth = self.auth.lock().ok()?;
        auth.sessions.get(id).cloned()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    // DNS rebinding: a page on another name that resolves to 127.0.0.1 sends its own Host.
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !shared.hosts.iter().any(|h| h == host) {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "the dashboard answers only on its loopback address",
        );
    }
    let path = req.uri().path().to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/") => {
            let mut resp = Response::new(Body::empty());
            *resp.status_mut() = StatusCode::FOUND;
            resp.headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static("/ui/"));
            resp
        }
        (Method::POST, "/ui/login") => login(&shared, req).await,
        (Method::GET, "/ui/session") => match shared.session_csrf(req.headers()) {
            Some(csrf) => json_response(StatusCode::OK, &json!({"mode": "proxy", "csrf": csrf})),
            None => json_response(StatusCode::UNAUTHORIZED, &json!({"mode": "proxy"})),
        },
        (Method::POST, "/ui/logout") => logout(&shared, req.headers()),
        (Method::GET | Method::HEAD, p) if assets::is_ui_path(p) => assets::response(p),
        _ => forward(&shared, req).await,
    }
}

/// Exchanges the one-time login token for a session cookie and returns the anti-CSRF token.
async fn login(shared: &Shared, req: Request) -> Response {
    let body = match axum::body::to_bytes(req.into_body(), 4096).await {
        Ok(b) => b,
        Err(_) => return status(StatusCode::BAD_REQUEST, "BadRequest", "body too large"),
    };
    let token = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("token")?.as_str().map(str::to_string))
        .unwrap_or_default();
    let (Ok(id), Ok(csrf)) = (random_token(), random_token()) else {
        return status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "no system randomness",
        );
    };
    {
        let Ok(mut auth) = shared.auth.lock() else {
            return status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "session state poisoned",
            );
        };
        match &auth.login {
            Some(expected) if same(expected, &token) => {
                auth.login = None;
                auth.sessions.insert(id.clone(), csrf.clone());
            }
            _ => {
                return status(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized",
                    "this login link is not valid or was already used; restart `k1s dashboard` for a new one",
                );
            }
        }
    }
    let mut resp = json_response(StatusCode::OK, &json!({"mode": "proxy", "csrf": csrf}));
    if let Ok(v) =
        HeaderValue::from_str(&format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict"))
    {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

fn logout(shared: &Shared, headers: &HeaderMap) -> Response {
    if let (Some(id), Some(csrf)) = (session_cookie(headers), headers.get(CSRF_HEADER))
        && let Ok(mut auth) = shared.auth.lock()
        && auth
            .sessions
            .get(id)
            .is_some_and(|c| csrf.to_str().is_ok_and(|h| same(c, h)))
    {
        auth.sessions.remove(id);
    }
    let mut resp = json_response(StatusCode::OK, &json!({}));
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("k1s_dashboard=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    resp
}

/// Paths forwarded to the cluster: the API and the server's own documents.
fn forwarded(path: &str) -> bool {
    [
        "/api", "/apis", "/version", "/healthz", "/livez", "/readyz", "/metrics", "/openapi",
    ]
    .iter()
    .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

/// Checks the session and the anti-CSRF header, then sends the call with the kubeconfig's
/// credentials and streams the answer back (watches and logs stay open).
async fn forward(shared: &Shared, req: Request) -> Response {
    if !forwarded(req.uri().path()) {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        );
    }
    let Some(csrf) = shared.session_csrf(req.headers()) else {
        return status(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "not logged in to the dashboard: open the login link `k1s dashboard` printed",
        );
    };
    let header_ok = req
        .headers()
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| same(&csrf, h));
    if !header_ok {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            "missing or wrong X-K1s-Csrf header",
        );
    }
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "RequestEntityTooLarge",
                "request body too large",
            );
        }
    };
    let target = parts.uri.path_and_query().map_or_else(
        || parts.uri.path().to_string(),
        |pq| pq.as_str().to_string(),
    );
    let mut out = http::Request::builder().method(parts.method).uri(target);
    // Only what describes the payload: the browser's cookies and CSRF token stay here.
    for name in [header::ACCEPT, header::CONTENT_TYPE] {
        if let Some(v) = parts.headers.get(&name) {
            out = out.header(name, v);
        }
    }
    let out = match out.body(kube::client::Body::from(body.to_vec())) {
        Ok(r) => r,
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
    };
    match shared.client.send(out).await {
        Ok(resp) => {
            let (rparts, rbody) = resp.into_parts();
            let mut resp = Response::new(Body::new(rbody));
            *resp.status_mut() = rparts.status;
            for name in [header::CONTENT_TYPE, header::ETAG, header::WARNING] {
                for v in rparts.headers.get_all(&name) {
                    resp.headers_mut().append(name.clone(), v.clone());
                }
            }
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            resp
        }
        Err(e) => status(
            StatusCode::BAD_GATEWAY,
            "ServiceUnavailable",
            &format!("the cluster did not answer: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwards_only_api_paths() {
        for (path, yes) in [
            ("/api", true),
            ("/api/v1/pods", true),
            ("/apis/apps/v1", true),
            ("/readyz", true),
            ("/metrics", true),
            ("/apix", false),
            ("/ui/", false),
            ("/", false),
            ("/etc/passwd", false),
        ] {
            assert_eq!(forwarded(path), yes, "{path}");
        }
    }

    #[test]
    fn reads_the_session_cookie() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; k1s_dashboard=abc; b=2"),
        );
        assert_eq!(session_cookie(&h), Some("abc"));
        assert_eq!(session_cookie(&HeaderMap::new()), None);
    }

    #[test]
    fn compares_tokens() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        assert!(!same("", "a"));
        let t = random_token().expect("randomness");
        assert_eq!(t.len(), 64);
        assert_ne!(t, random_token().expect("randomness"));
    }
}
