//! Test support: a real HTTPS admission webhook server with a throw-away CA (rcgen), plus
//! resolvers and AdmissionReview answer builders.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

use super::ServiceResolver;

/// A CA and a serving certificate for `127.0.0.1`, `localhost` and `hook.ns.svc`.
pub(super) struct TestPki {
    /// The CA certificate as `caBundle` wants it (base64 of the PEM).
    pub ca_bundle: String,
    pub server_config: Arc<rustls::ServerConfig>,
}

pub(super) fn test_pki() -> TestPki {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "webhook-test-ca");
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf_params = CertificateParams::new(vec![
        "localhost".to_string(),
        "hook.ns.svc".to_string(),
        "127.0.0.1".to_string(),
    ])
    .expect("leaf params");
    let leaf = leaf_params
        .signed_by(&leaf_key, &issuer)
        .expect("leaf cert");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(leaf.der().to_vec())], key)
        .expect("server config");
    server_config.alpn_protocols = vec![b"http/1.1".to_vec()];
    TestPki {
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
        server_config: Arc::new(server_config),
    }
}

/// What the test server answers.
pub(super) enum Reply {
    Json(Value),
    Raw(u16, Vec<u8>),
    Delay(Duration, Box<Reply>),
}

pub(super) type Handler = Arc<dyn Fn(&str, &Value) -> Reply + Send + Sync>;

/// A running HTTPS webhook server; every request's path and body are recorded.
pub(super) struct WebhookServer {
    pub addr: SocketAddr,
    pub ca_bundle: String,
    pub requests: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    pub async fn start(handler: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let pki = test_pki();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let acceptor = tokio_rustls::TlsAcceptor::from(pki.server_config.clone());
        let recorded = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            let recorded = recorded.clone();
                            async move {
                                let path = req
                                    .uri()
                                    .path_and_query()
                                    .map(|p| p.to_string())
                                    .unwrap_or_default();
                                let body = req
                                    .into_body()
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                recorded
                                    .lock()
                                    .expect("lock")
                                    .push((path.clone(), review.clone()));
                                let mut reply = handler(&path, &review);
                                while let Reply::Delay(d, next) = reply {
                                    tokio::time::sleep(d).await;
                                    reply = *next;
                                }
                                let (status, bytes) = match reply {
                                    Reply::Json(v) => {
                                        (200, serde_json::to_vec(&v).unwrap_or_default())
                                    }
                                    Reply::Raw(s, b) => (s, b),
                                    Reply::Delay(..) => (500, Vec::new()),
                                };
                                let resp = hyper::Response::builder()
                                    .status(status)
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(bytes)))
                                    .expect("response");
                                Ok::<_, std::convert::Infallible>(resp)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        WebhookServer {
            addr,
            ca_bundle: pki.ca_bundle,
            requests,
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    pub fn calls(&self) -> usize {
        self.requests.lock().expect("lock").len()
    }

    pub fn calls_to(&self, path: &str) -> usize {
        self.requests
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p.split('?').next() == Some(path))
            .count()
    }

    pub fn last_review(&self) -> Value {
        self.requests
            .lock()
            .expect("lock")
            .last()
            .map(|(_, v)| v.clone())
            .unwrap_or(Value::Null)
    }
}

/// Resolves every Service to one address (or fails with a message).
pub(super) struct StaticResolver(pub Result<SocketAddr, String>);

#[async_trait]
impl ServiceResolver for StaticResolver {
    async fn resolve(&self, _ns: &str, _name: &str, _port: u16) -> Result<SocketAddr, String> {
        self.0.clone()
    }
}

/// Resolves per `namespace/name`.
#[allow(dead_code)]
pub(super) struct MapResolver(pub HashMap<String, SocketAddr>);

#[async_trait]
impl ServiceResolver for MapResolver {
    async fn resolve(&self, ns: &str, name: &str, _port: u16) -> Result<SocketAddr, String> {
        self.0
            .get(&format!("{ns}/{name}"))
            .copied()
            .ok_or_else(|| format!("service \"{name}\" not found"))
    }
}

/// The uid of a received review.
pub(super) fn uid(review: &Value) -> Value {
    review["request"]["uid"].clone()
}

pub(super) fn allow(review: &Value) -> Reply {
    Reply::Json(
        json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
        "response":{"uid": uid(review), "allowed": true}}),
    )
}

pub(super) fn allow_with_warning(review: &Value, warning: &str) -> Reply {
    Reply::Json(
        json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
        "response":{"uid": uid(review), "allowed": true, "warnings": [warning],
                    "auditAnnotations": {"checked": "yes"}}}),
    )
}

pub(super) fn deny(review: &Value, code: u16, message: &str) -> Reply {
    Reply::Json(
        json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
        "response":{"uid": uid(review), "allowed": false,
                    "status": {"code": code, "message": message, "reason": "Forbidden"}}}),
    )
}

pub(super) fn patch(review: &Value, ops: Value) -> Reply {
    let b64 = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    Reply::Json(
        json!({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
        "response":{"uid": uid(review), "allowed": true, "patchType": "JSONPatch", "patch": b64}}),
    )
}
