//! How the aggregator reaches an APIService's backend: the Service resolved to one endpoint
//! address (Endpoints, else EndpointSlices: there is no kube-proxy, as upstream's
//! `--enable-aggregator-routing`), TLS that trusts the APIService's `caBundle` (or nothing, with
//! `insecureSkipTLSVerify`) for the name `<service>.<namespace>.svc`, and the front-proxy client
//! certificate that tells the backend the request comes from this server.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use k1s_apimachinery::catalog;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde_json::Value;
use tokio::net::TcpStream;

use crate::registry::{ListQuery, Registry, Target};

/// The certificate and key this server presents to backends (kubeadm's `front-proxy-client`).
#[derive(Clone)]
pub struct ProxyIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: Arc<PrivateKeyDer<'static>>,
}

impl ProxyIdentity {
    /// From PEM text (a certificate chain and its key).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<ProxyIdentity, String> {
        let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("front-proxy client certificate: {e}"))?;
        if chain.is_empty() {
            return Err("front-proxy client certificate: no certificate found".into());
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| format!("front-proxy client key: {e}"))?;
        Ok(ProxyIdentity {
            chain,
            key: Arc::new(key),
        })
    }
}

/// The backend Service of an APIService (`spec.service`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub port: u16,
}

impl ServiceRef {
    /// The TLS server name upstream verifies: `<name>.<namespace>.svc`.
    pub fn server_name(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }
}

/// TLS towards a backend: `caBundle` roots (or no verification when `insecure`), HTTP/1.1 (so
/// upgrades pass through), and the proxy identity as client certificate.
pub fn client_config(
    ca_bundle_b64: Option<&str>,
    insecure: bool,
    identity: Option<&ProxyIdentity>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        if let Some(b64) = ca_bundle_b64.filter(|s| !s.is_empty()) {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| format!("unable to decode caBundle: {e}"))?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("unable to load root certificates: {e}"))?;
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match identity {
        Some(id) => builder
            .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
            .map_err(|e| format!("front-proxy client certificate: {e}"))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `insecureSkipTLSVerify` (and the availability check, which upstream also runs without
/// verification): any server certificate, but the handshake signature is still checked.
#[derive(Debug)]
struct AnyServerCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServerCert {
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

/// Why a Service could not be turned into an address, worded as upstream's availability
/// controller words it (`Reason`, message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    pub reason: &'static str,
    pub message: String,
}

/// Resolves the Service to one endpoint address, as upstream's endpoint routing: the Service
/// must exist and listen on the port; its Endpoints (or, for a Service without Endpoints,
/// its EndpointSlices) must hold an address for the port's name.
pub async fn resolve(registry: &Registry, svc: &ServiceRef) -> Result<SocketAddr, Unresolved> {
    let where_ = format!("service/{} in {:?}", svc.name, svc.namespace);
    let get = |resource: &'static str, group: &'static str, version: &'static str| async move {
        let info = catalog::find(group, version, resource)?;
        let t = Target {
            info,
            namespace: Some(&svc.namespace),
        };
        registry.get(t, &svc.name).await.ok()
    };
    let Some(service) = get("services", "", "v1").await else {
        return Err(Unresolved {
            reason: "ServiceNotFound",
            message: format!("{where_} is not present"),
        });
    };
    if service.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        return Err(Unresolved {
            reason: "ServicePortError",
            message: format!("{where_} is of type ExternalName"),
        });
    }
    let port = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(svc.port)));
    let Some(port) = port else {
        return Err(Unresolved {
            reason: "ServicePortError",
            message: format!("{where_} is not listening on port {}", svc.port),
        });
    };
    let port_name = port.get("name").and_then(Value::as_str).unwrap_or_default();
    let endpoints = get("endpoints", "", "v1").await;
    let from_endpoints = endpoints
        .as_ref()
        .and_then(|e| endpoint_address(e, port_name));
    let from_slices = match from_endpoints {
        Some(a) => Some(a),
        None => slice_address(registry, svc, port_name).await,
    };
    match (from_slices, endpoints) {
        (Some(addr), _) => Ok(addr),
        (None, None) => Err(Unresolved {
            reason: "EndpointsNotFound",
            message: format!("cannot find endpoints for {where_}"),
        }),
        (None, Some(_)) => Err(Unresolved {
            reason: "MissingEndpoints",
            message: format!(
                "endpoints for {where_} have no addresses with port name {port_name:?}"
            ),
        }),
    }
}

/// The first ready address of an Endpoints object with a port of that name.
fn endpoint_address(endpoints: &Value, port_name: &str) -> Option<SocketAddr> {
    for subset in endpoints.get("subsets").and_then(Value::as_array)? {
        let port = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64));
        let ip = subset
            .pointer("/addresses/0/ip")
            .and_then(Value::as_str)
            .and_then(|ip| ip.parse().ok());
        if let (Some(ip), Some(port)) = (ip, port) {
            return Some(SocketAddr::new(ip, u16::try_from(port).ok()?));
        }
    }
    None
}

/// The first ready endpoint of the Service's EndpointSlices with a port of that name.
async fn slice_address(
    registry: &Registry,
    svc: &ServiceRef,
    port_name: &str,
) -> Option<SocketAddr> {
    let info = catalog::find("discovery.k8s.io", "v1", "endpointslices")?;
    let selector = k1s_apimachinery::selector::LabelSelector::parse(&format!(
        "kubernetes.io/service-name={}",
        svc.name
    ))
    .ok()?;
    let q = ListQuery {
        label_selector: Some(selector),
        ..Default::default()
    };
    let t = Target {
        info,
        namespace: Some(&svc.namespace),
    };
    let slices = registry.list(t, &q).await.ok()?.items;
    for slice in &slices {
        let port = slice
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else { continue };
        let ready = slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|e| e.pointer("/conditions/ready") != Some(&Value::Bool(false)));
        if let Some(ip) = ready
            .and_then(|e| e.pointer("/addresses/0"))
            .and_then(Value::as_str)
            .and_then(|ip| ip.parse().ok())
        {
            return Some(SocketAddr::new(ip, port));
        }
    }
    None
}

/// A TLS connection to `addr` for `server_name`.
pub async fn connect(
    addr: SocketAddr,
    server_name: &str,
    tls: Arc<rustls::ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        _ => format!("dial tcp {addr}: connect: {e}"),
    })?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| format!("tls: invalid server name: {e}"))?;
    tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))
}

/// The most a check reads from a backend answer (discovery, OpenAPI).
const MAX_ANSWER_BYTES: usize = 32 << 20;

/// One `GET` over a fresh connection, as the given user (`X-Remote-User`/`X-Remote-Group`):
/// the status code and the body.
pub async fn get(
    addr: SocketAddr,
    server_name: &str,
    tls: Arc<rustls::ClientConfig>,
    path: &str,
    user: &str,
    groups: &[&str],
) -> Result<(u16, bytes::Bytes), String> {
    use http_body_util::BodyExt;
    let stream = connect(addr, server_name, tls).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut builder = http::Request::get(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::USER_AGENT, "k1s-apiserver-aggregator")
        .header("X-Remote-User", user);
    for g in groups {
        builder = builder.header("X-Remote-Group", *g);
    }
    let request = builder
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the response body: {e}"))?
        .to_bytes();
    Ok((status, body))
}
