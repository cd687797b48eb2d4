//! The HTTPS call to a webhook: resolve (Service through the [`ServiceResolver`], URL through
//! DNS), connect, TLS with the webhook's trust roots and server name, POST the review, read the
//! answer. Everything runs under the webhook's `timeoutSeconds`, so a silent or slow webhook
//! costs at most that long. Error texts follow Go's `net/http` where they can
//! (`dial tcp 1.2.3.4:443: connect: connection refused`, `context deadline exceeded`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio::net::TcpStream;

use super::ServiceResolver;
use super::config::ClientTarget;

/// The largest answer read from a webhook.
const MAX_RESPONSE_BYTES: usize = 8 << 20;

/// Why a call failed, already worded as upstream's `failed to call webhook: <...>` reason.
#[derive(Debug)]
pub(super) struct CallFailure(pub String);

/// POSTs `body` and returns the 2xx answer's body. `timeout_seconds` bounds the whole call.
pub(super) async fn post(
    target: &ClientTarget,
    tls: Arc<rustls::ClientConfig>,
    timeout_seconds: u64,
    body: Vec<u8>,
    resolver: &dyn ServiceResolver,
) -> Result<Vec<u8>, CallFailure> {
    let timeout = Duration::from_secs(timeout_seconds);
    post_json(target, tls, timeout, true, body, resolver)
        .await
        .map_err(|e| CallFailure(format!("failed to call webhook: {e}")))
}

/// POSTs a JSON `body` and returns the 2xx answer's body, or why not in client-go's words
/// (`Post "<url>": <cause>`, or the error a non-2xx answer means). `timeout` bounds the whole
/// call; `advertise_timeout` adds it to the URL as `?timeout=<n>s`, as admission calls do.
pub(crate) async fn post_json(
    target: &ClientTarget,
    tls: Arc<rustls::ClientConfig>,
    timeout: Duration,
    advertise_timeout: bool,
    body: Vec<u8>,
    resolver: &dyn ServiceResolver,
) -> Result<Vec<u8>, String> {
    let url = if advertise_timeout {
        format!("{}?timeout={}s", target.display_url(), timeout.as_secs())
    } else {
        target.display_url()
    };
    let call = exchange(target, tls, &url, body, resolver);
    let outcome = tokio::time::timeout(timeout, call)
        .await
        .unwrap_or_else(|_| Err(Transport("context deadline exceeded".to_string())));
    match outcome {
        Ok((status, body)) if (200..=206).contains(&status) => Ok(body),
        Ok((status, body)) => Err(unexpected_status_message(status, &body)),
        Err(Transport(e)) => Err(format!("Post {url:?}: {e}")),
    }
}

/// A failure before an HTTP answer arrived (Go's `*url.Error` text after the URL).
struct Transport(String);

async fn exchange(
    target: &ClientTarget,
    tls: Arc<rustls::ClientConfig>,
    url: &str,
    body: Vec<u8>,
    resolver: &dyn ServiceResolver,
) -> Result<(u16, Vec<u8>), Transport> {
    let tcp = connect(target, resolver).await.map_err(Transport)?;
    let _ = tcp.set_nodelay(true);
    let name = target.server_name();
    let server_name = ServerName::try_from(name.clone())
        .map_err(|e| Transport(format!("tls: invalid server name: {e}")))?;
    let tls_stream = tokio_rustls::TlsConnector::from(tls)
        .connect(server_name, tcp)
        .await
        .map_err(|e| Transport(tls_error(&e, &name)))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls_stream))
        .await
        .map_err(|e| Transport(e.to_string()))?;
    let path_and_query = url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| &url[i + 3 + j..]))
        .map_or_else(
            || format!("{}{}", target.request_path(), query_of(url)),
            str::to_string,
        );
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(path_and_query)
        .header(http::header::HOST, target.host_header())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "k1s-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| Transport(e.to_string()))?;
    let exchange = async move {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| Transport(e.to_string()))?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| Transport(format!("reading the response body: {e}")))?
            .to_bytes();
        Ok::<_, Transport>((status, body.to_vec()))
    };
    tokio::pin!(exchange);
    tokio::pin!(conn);
    // Drive the connection and the exchange together; nothing outlives the timeout.
    tokio::select! {
        biased;
        r = &mut exchange => r,
        c = &mut conn => match c {
            Err(e) => Err(Transport(e.to_string())),
            Ok(()) => exchange.await,
        },
    }
}

/// The query of `url` (`?timeout=10s`), for a URL without a path.
fn query_of(url: &str) -> &str {
    url.find('?').map_or("", |i| &url[i..])
}

async fn connect(
    target: &ClientTarget,
    resolver: &dyn ServiceResolver,
) -> Result<TcpStream, String> {
    match target {
        ClientTarget::Service {
            namespace,
            name,
            port,
            ..
        } => {
            let addr = resolver.resolve(namespace, name, *port).await?;
            TcpStream::connect(addr)
                .await
                .map_err(|e| dial_error(&addr.to_string(), &e))
        }
        ClientTarget::Url { host, port, .. } => {
            let addrs = tokio::net::lookup_host((host.as_str(), *port))
                .await
                .map_err(|e| format!("dial tcp: lookup {host}: {e}"))?;
            let mut last = None;
            for addr in addrs {
                match TcpStream::connect(addr).await {
                    Ok(s) => return Ok(s),
                    Err(e) => last = Some(dial_error(&addr.to_string(), &e)),
                }
            }
            Err(last.unwrap_or_else(|| format!("dial tcp: lookup {host}: no such host")))
        }
    }
}

fn dial_error(addr: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        _ => format!("dial tcp {addr}: connect: {e}"),
    }
}

fn tls_error(e: &std::io::Error, server_name: &str) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(c)) => {
            use rustls::CertificateError as C;
            let detail = match c {
                C::UnknownIssuer | C::BadSignature => {
                    "x509: certificate signed by unknown authority".to_string()
                }
                C::Expired
                | C::ExpiredContext { .. }
                | C::NotValidYet
                | C::NotValidYetContext { .. } => {
                    "x509: certificate has expired or is not yet valid".to_string()
                }
                C::NotValidForName | C::NotValidForNameContext { .. } => {
                    format!("x509: certificate is not valid for {server_name}")
                }
                other => format!("x509: {other:?}"),
            };
            format!("tls: failed to verify certificate: {detail}")
        }
        Some(other) => format!("tls: {other}"),
        None => format!("tls: {e}"),
    }
}

/// client-go's message for a non-2xx answer: a `Status` body's message, else a generic text per
/// code (`an error on the server ("...") has prevented the request from succeeding`).
fn unexpected_status_message(code: u16, body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && v.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(m) = v.get("message").and_then(Value::as_str)
        && !m.is_empty()
    {
        return m.to_string();
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let server_message = if text.is_empty() {
        "unknown".to_string()
    } else {
        text.chars().take(256).collect()
    };
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => server_message,
        404 => "the server could not find the requested resource".into(),
        405 => "the server does not allow this method on the requested resource".into(),
        409 => "the server reported a conflict".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        429 => {
            "the server has received too many requests and has asked us to try again later".into()
        }
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        c if c >= 500 => format!(
            "an error on the server ({server_message:?}) has prevented the request from succeeding"
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_messages() {
        assert_eq!(
            unexpected_status_message(500, b"boom"),
            r#"an error on the server ("boom") has prevented the request from succeeding"#
        );
        assert_eq!(
            unexpected_status_message(404, b""),
            "the server could not find the requested resource"
        );
        assert_eq!(
            unexpected_status_message(500, br#"{"kind":"Status","message":"inner"}"#),
            "inner"
        );
        assert!(unexpected_status_message(302, b"").contains("302"));
    }
}
