//! The load generator's HTTP/2-over-TLS client: TLS from a resolved kubeconfig context, a fixed
//! pool of HTTP/2 connections (each multiplexing many streams), and Kubernetes `Status` errors.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k1s_kubeadm_lite::ResolvedContext;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    /// The server answered with a non-2xx status; `message` is the `Status` message (or the
    /// start of the body when it is not a `Status`).
    Status {
        code: u16,
        reason: String,
        message: String,
    },
    /// Connecting, TLS, HTTP/2 or reading the body failed.
    Transport(String),
    /// No complete answer within the request timeout.
    Timeout,
}

impl ApiError {
    pub fn code(&self) -> Option<u16> {
        match self {
            ApiError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// Builds the error for a non-2xx answer from its body, preferring the `Status` message.
    pub fn from_response(status: StatusCode, body: &[u8]) -> Self {
        let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
        let field = |name: &str| {
            parsed
                .as_ref()
                .and_then(|v| v.get(name))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let message = field("message").unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            let mut end = text.len().min(300);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].to_string()
        });
        ApiError::Status {
            code: status.as_u16(),
            reason: field("reason")
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("").to_string()),
            message,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Status {
                code,
                reason,
                message,
            } => write!(f, "{code} {reason}: {message}"),
            ApiError::Transport(e) => write!(f, "transport: {e}"),
            ApiError::Timeout => write!(f, "request timed out"),
        }
    }
}

impl std::error::Error for ApiError {}

/// Where the kubeconfig's server is: the only place this client ever connects to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerUrl {
    /// Host name or IP (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// `https://authority` plus any path prefix, without a trailing slash.
    pub base: String,
}

impl ServerUrl {
    pub fn parse(server: &str) -> anyhow::Result<Self> {
        let uri: Uri = server
            .trim()
            .parse()
            .with_context(|| format!("invalid server URL {server:?}"))?;
        match uri.scheme_str() {
            Some("https") => {}
            Some(other) => {
                bail!("server URL {server:?} uses {other}; k1s bench speaks HTTP/2 over TLS only")
            }
            None => bail!("server URL {server:?} has no scheme (expected https://)"),
        }
        let authority = uri
            .authority()
            .with_context(|| format!("server URL {server:?} has no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() {
            bail!("server URL {server:?} has no host");
        }
        let port = authority.port_u16().unwrap_or(443);
        let prefix = uri.path().trim_end_matches('/');
        Ok(ServerUrl {
            host,
            port,
            base: format!("https://{authority}{prefix}"),
        })
    }
}

/// The rustls client configuration for a kubeconfig context: its CA (or no verification when
/// `insecure-skip-tls-verify` is set), its client certificate, and ALPN `h2` first.
pub fn tls_config(ctx: &ResolvedContext) -> anyhow::Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = if ctx.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoServerVerification(provider)))
    } else {
        let ca = ctx.ca_pem.as_deref().context(
            "the kubeconfig has no certificate-authority for this cluster (and does not set \
             insecure-skip-tls-verify)",
        )?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca) {
            let cert = cert.context("certificate-authority: invalid PEM")?;
            roots
                .add(cert)
                .context("certificate-authority: invalid certificate")?;
        }
        if roots.is_empty() {
            bail!("certificate-authority: no certificate found in the PEM data");
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match (&ctx.client_cert_pem, &ctx.client_key_pem) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .context("client-certificate: invalid PEM")?;
            if chain.is_empty() {
                bail!("client-certificate: no certificate found in the PEM data");
            }
            let key = PrivateKeyDer::from_pem_slice(key).context("client-key: invalid PEM")?;
            builder
                .with_client_auth_cert(chain, key)
                .context("client certificate and key do not form a usable pair")?
        }
        (None, None) => builder.with_no_client_auth(),
        (Some(_), None) => bail!("the kubeconfig user has a client-certificate but no client-key"),
        (None, Some(_)) => bail!("the kubeconfig user has a client-key but no client-certificate"),
    };
    // http/1.1 is offered too so that a server without HTTP/2 completes the handshake and gets
    // a clear error from `connect` instead of a bare TLS alert.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// `insecure-skip-tls-verify: true`: any server certificate is accepted (signatures are still
/// checked so the handshake is well-formed).
#[derive(Debug)]
struct NoServerVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoServerVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

type Sender = SendRequest<Full<Bytes>>;

/// A fixed number of HTTP/2 connections to the kubeconfig's server; callers pick a connection
/// by index (modulo the pool size). A connection that closed is re-established on next use.
pub struct ApiClient {
    server: ServerUrl,
    server_name: ServerName<'static>,
    tls: TlsConnector,
    authorization: Option<HeaderValue>,
    slots: Vec<tokio::sync::Mutex<Option<Sender>>>,
    request_timeout: Duration,
}

impl fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiClient")
            .field("server", &self.server.base)
            .field("connections", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl ApiClient {
    pub fn new(
        ctx: &ResolvedContext,
        connections: usize,
        request_timeout: Duration,
    ) -> anyhow::Result<Self> {
        let server = ServerUrl::parse(&ctx.server)?;
        let server_name = ServerName::try_from(server.host.clone())
            .with_context(|| format!("{:?} is not a valid TLS server name", server.host))?;
        let tls = TlsConnector::from(Arc::new(tls_config(ctx)?));
        let authorization = match ctx.token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => Some(
                HeaderValue::from_str(&format!("Bearer {token}"))
                    .context("the kubeconfig token is not a valid header value")?,
            ),
            None => None,
        };
        Ok(ApiClient {
            server,
            server_name,
            tls,
            authorization,
            slots: (0..connections.max(1))
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
            request_timeout,
        })
    }

    /// A client for the same server and credentials with `connections` connections of its
    /// own (opened on first use), e.g. to keep long-running watches off the connections
    /// that carry writes: a watch holds an HTTP/2 stream, and a connection's streams are
    /// limited by the server.
    pub fn with_own_connections(&self, connections: usize) -> ApiClient {
        ApiClient {
            server: self.server.clone(),
            server_name: self.server_name.clone(),
            tls: self.tls.clone(),
            authorization: self.authorization.clone(),
            slots: (0..connections.max(1))
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
            request_timeout: self.request_timeout,
        }
    }

    /// `https://host:port[/prefix]`.
    pub fn server(&self) -> &str {
        &self.server.base
    }

    pub fn connections(&self) -> usize {
        self.slots.len()
    }

    /// Opens every connection now, so that handshakes are not part of any measurement.
    pub async fn connect_all(&self) -> anyhow::Result<()> {
        for i in 0..self.slots.len() {
            self.sender(i)
                .await
                .with_context(|| format!("connecting to {}", self.server.base))?;
        }
        Ok(())
    }

    async fn connect(&self) -> Result<Sender, ApiError> {
        let transport =
            |what: &str, e: &dyn fmt::Display| ApiError::Transport(format!("{what}: {e}"));
        let tcp = TcpStream::connect((self.server.host.as_str(), self.server.port))
            .await
            .map_err(|e| {
                transport(
                    &format!("connect {}:{}", self.server.host, self.server.port),
                    &e,
                )
            })?;
        tcp.set_nodelay(true)
            .map_err(|e| transport("TCP_NODELAY", &e))?;
        let tls = self
            .tls
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(|e| transport("TLS handshake", &e))?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(ApiError::Transport(
                "the server did not negotiate HTTP/2 (ALPN h2); k1s bench speaks HTTP/2 only"
                    .into(),
            ));
        }
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(4 << 20)
            .initial_connection_window_size(16 << 20)
            .max_concurrent_reset_streams(4096)
            .handshake::<_, Full<Bytes>>(TokioIo::new(tls))
            .await
            .map_err(|e| transport("HTTP/2 handshake", &e))?;
        tokio::spawn(async move {
            // Ends when the server closes the connection or every sender is dropped.
            let _ = conn.await;
        });
        Ok(sender)
    }

    /// The sender of connection `index % connections`, (re)connecting when needed.
    async fn sender(&self, index: usize) -> Result<Sender, ApiError> {
        let mut slot = self.slots[index % self.slots.len()].lock().await;
        if let Some(s) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        let s = self.connect().await?;
        *slot = Some(s.clone());
        Ok(s)
    }

    /// Sends one request on connection `conn` and returns the response head with its
    /// streaming body, whatever its status.
    async fn send(
        &self,
        conn: usize,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<hyper::Response<Incoming>, ApiError> {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.server.base))
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, "k1s-bench/0.1");
        if body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(auth) = &self.authorization {
            builder = builder.header(header::AUTHORIZATION, auth.clone());
        }
        let req = builder
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|e| ApiError::Transport(format!("building the request for {path}: {e}")))?;
        let mut sender = self.sender(conn).await?;
        sender
            .send_request(req)
            .await
            .map_err(|e| ApiError::Transport(e.to_string()))
    }

    /// One request: the body of a 2xx answer, otherwise the `Status` as an error. Answers of
    /// 429 (too many requests) are retried a few times after their `Retry-After`.
    pub async fn request(
        &self,
        conn: usize,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Bytes, ApiError> {
        let mut attempt = 0;
        loop {
            let once = async {
                let resp = self.send(conn, method.clone(), path, body.clone()).await?;
                let status = resp.status();
                let retry_after = resp
                    .headers()
                    .get(header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                let bytes = resp
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| ApiError::Transport(format!("reading the response: {e}")))?
                    .to_bytes();
                Ok::<_, ApiError>((status, retry_after, bytes))
            };
            let (status, retry_after, bytes) = tokio::time::timeout(self.request_timeout, once)
                .await
                .map_err(|_| ApiError::Timeout)??;
            if status.is_success() {
                return Ok(bytes);
            }
            if status == StatusCode::TOO_MANY_REQUESTS && attempt < 5 {
                attempt += 1;
                let wait = Duration::from_secs(retry_after.unwrap_or(1).clamp(1, 5));
                tokio::time::sleep(wait).await;
                continue;
            }
            return Err(ApiError::from_response(status, &bytes));
        }
    }

    /// Starts a streaming request (a watch): the body once a 2xx head arrived (within the
    /// request timeout), otherwise the `Status` as an error.
    pub async fn stream(&self, conn: usize, path: &str) -> Result<Incoming, ApiError> {
        let head = async {
            let resp = self.send(conn, Method::GET, path, None).await?;
            let status = resp.status();
            if status.is_success() {
                return Ok(resp.into_body());
            }
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            Err(ApiError::from_response(status, &bytes))
        };
        tokio::time::timeout(self.request_timeout, head)
            .await
            .map_err(|_| ApiError::Timeout)?
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
