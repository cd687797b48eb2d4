//! Forwards an authenticated, authorized request to an APIService's backend, as upstream's
//! proxy handler: over TLS with the front-proxy client certificate, the user in
//! `X-Remote-User`/`X-Remote-Group`/`X-Remote-Extra-<key>` (the caller's own credentials and
//! impersonation headers are not passed on), bodies streamed both ways (watches stay open),
//! and connection upgrades (exec, port-forward, websockets) spliced through. An unavailable
//! APIService answers 503 `service unavailable`, as upstream, for its group only.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use hyper_util::rt::TokioIo;

use super::{Aggregator, Remote, transport};
use crate::auth::UserInfo;

/// How long reaching a backend may take before the request fails (watches then stream on).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Headers that belong to one connection (RFC 9110 7.6.1), never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Proxies `req` to `remote`'s backend.
pub async fn serve(
    agg: &Aggregator,
    remote: Arc<Remote>,
    user: &UserInfo,
    mut req: Request,
) -> Response {
    if !remote.available {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let tls = match &remote.tls {
        Ok(t) => t.clone(),
        Err(e) => return plain(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    let addr = match transport::resolve(&agg.registry, &remote.service).await {
        Ok(a) => a,
        Err(u) => {
            tracing::warn!(apiservice = %remote.name, error = %u.message, "aggregator: cannot resolve the backend");
            return plain(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
    };
    let upgrade = is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let mut out = match http::Request::builder()
        .method(parts.method)
        .uri(target)
        .body(body)
    {
        Ok(r) => r,
        Err(e) => return plain(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    *out.headers_mut() = forwarded_headers(&parts.headers, upgrade, user);
    if let Ok(host) = HeaderValue::from_str(&addr.to_string()) {
        out.headers_mut().insert(http::header::HOST, host);
    }
    let connected = tokio::time::timeout(CONNECT_TIMEOUT, async {
        let stream = transport::connect(addr, &remote.service.server_name(), tls).await?;
        hyper::client::conn::http1::handshake::<_, Body>(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())
    })
    .await
    .unwrap_or_else(|_| Err(format!("dial tcp {addr}: i/o timeout")));
    let (mut sender, conn) = match connected {
        Ok(c) => c,
        Err(e) => return unreachable_backend(&remote, &e),
    };
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let mut resp = match sender.send_request(out).await {
        Ok(r) => r,
        Err(e) => return unreachable_backend(&remote, &e.to_string()),
    };
    let status = resp.status();
    let mut headers = resp.headers().clone();
    if status == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let backend_upgrade = hyper::upgrade::on(&mut resp);
        tokio::spawn(async move {
            let (Ok(client), Ok(backend)) = tokio::join!(client_upgrade, backend_upgrade) else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(
                &mut TokioIo::new(client),
                &mut TokioIo::new(backend),
            )
            .await;
        });
        let mut answer = Response::new(Body::empty());
        *answer.status_mut() = status;
        *answer.headers_mut() = headers;
        return answer;
    }
    strip_hop_by_hop(&mut headers);
    let mut answer = Response::new(Body::new(resp.into_body()));
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    answer
}

/// A transport failure: 503 with the error, as upstream's proxy responder.
fn unreachable_backend(remote: &Remote, error: &str) -> Response {
    tracing::warn!(apiservice = %remote.name, %error, "aggregator: backend unreachable");
    plain(StatusCode::SERVICE_UNAVAILABLE, error)
}

/// Go's `http.Error`: the text and a newline, as text/plain.
fn plain(code: StatusCode, text: &str) -> Response {
    let mut resp = Response::new(Body::from(format!("{text}\n")));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// An HTTP/1.1 upgrade request (`Connection: upgrade` with an `Upgrade` header).
fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(http::header::UPGRADE)
        && headers
            .get_all(http::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Headers named in `Connection` are connection-specific too.
    let named: Vec<String> = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    for name in HOP_BY_HOP.iter().copied().map(str::to_string).chain(named) {
        headers.remove(name.as_str());
    }
}

/// The request headers the backend sees: the client's, without connection-specific ones,
/// its credentials, impersonation and any `X-Remote-*` it sent; then the authenticated user.
pub(super) fn forwarded_headers(incoming: &HeaderMap, upgrade: bool, user: &UserInfo) -> HeaderMap {
    let mut headers = incoming.clone();
    let upgrade_value = headers.get(http::header::UPGRADE).cloned();
    strip_hop_by_hop(&mut headers);
    let dropped: Vec<HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == "authorization" || k.starts_with("impersonate-") || k.starts_with("x-remote-")
        })
        .cloned()
        .collect();
    for k in dropped {
        headers.remove(&k);
    }
    headers.remove(http::header::HOST);
    if upgrade && let Some(v) = upgrade_value {
        headers.insert(
            http::header::CONNECTION,
            HeaderValue::from_static("Upgrade"),
        );
        headers.insert(http::header::UPGRADE, v);
    }
    let mut add = |name: String, value: &str| {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::from_str(value)) {
            headers.append(n, v);
        }
    };
    add("X-Remote-User".into(), &user.name);
    for g in &user.groups {
        add("X-Remote-Group".into(), g);
    }
    for (key, values) in &user.extra {
        for v in values {
            add(format!("X-Remote-Extra-{}", escape_header_key(key)), v);
        }
    }
    headers
}

/// client-go's extra-key escaping: bytes that may not appear in a header name (and `%`)
/// become `%XX`, so `example.org/key` travels as `example.org%2Fkey`.
fn escape_header_key(key: &str) -> String {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
    key.bytes()
        .map(|b| {
            if token(b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
