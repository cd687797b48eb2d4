//! TLS: rustls with HTTP/2 and HTTP/1.1, and client certificates checked per request so that a
//! certificate from another CA gets a 401 (as upstream) instead of a failed handshake.

use std::sync::Arc;

use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};

/// Who the client certificate says the caller is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertIdentity {
    /// No client certificate was presented.
    None,
    /// A certificate signed by the cluster CA: user = CN, groups = O.
    User { name: String, groups: Vec<String> },
    /// A certificate that does not verify (other CA, expired, not yet valid).
    Invalid(String),
}

/// Accepts any client certificate during the handshake (the handshake signature is still
/// checked, proving the key is held) and leaves the chain check to `identify`.
#[derive(Debug)]
struct DeferredClientVerifier {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for DeferredClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }
    fn client_auth_mandatory(&self) -> bool {
        false
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }
    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Verifies client certificate chains against the cluster CA.
#[derive(Clone)]
pub struct ClientAuth {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl ClientAuth {
    pub fn identify(&self, certs: Option<&[CertificateDer<'static>]>) -> CertIdentity {
        let Some((leaf, intermediates)) = certs.and_then(|c| c.split_first()) else {
            return CertIdentity::None;
        };
        if let Err(e) = self
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
        {
            return CertIdentity::Invalid(e.to_string());
        }
        match k1s_kubeadm_lite::client_identity(leaf) {
            Ok((name, groups)) => CertIdentity::User { name, groups },
            Err(e) => CertIdentity::Invalid(e.to_string()),
        }
    }
}

/// Where the serving certificate comes from, so that a renewed pair (`k1s certs renew
/// apiserver`) is served without a restart: the files' modification time is looked at on a
/// handshake at most once a second (one `stat`, no read, while nothing changed), and a changed
/// pair is loaded when it parses and its key matches; until then the old pair keeps serving.
#[derive(Debug, Clone)]
pub struct ServingFiles {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
    /// Appended to the file's chain (the cluster CA, for a leaf-only `apiserver.crt`).
    pub append: Vec<CertificateDer<'static>>,
}

#[derive(Debug)]
struct ReloadingCert {
    files: ServingFiles,
    provider: Arc<rustls::crypto::CryptoProvider>,
    current: std::sync::RwLock<Arc<rustls::sign::CertifiedKey>>,
    /// (when last checked, the modification times then) behind a lock only the checker takes.
    seen: std::sync::Mutex<(std::time::Instant, Option<std::time::SystemTime>)>,
}

impl ReloadingCert {
    fn mtime(&self) -> Option<std::time::SystemTime> {
        let c = std::fs::metadata(&self.files.cert)
            .and_then(|m| m.modified())
            .ok()?;
        let k = std::fs::metadata(&self.files.key)
            .and_then(|m| m.modified())
            .ok()?;
        Some(c.max(k))
    }

    fn load(&self) -> Result<rustls::sign::CertifiedKey, String> {
        let (mut chain, key) =
            read_cert_and_key(&self.files.cert, &self.files.key).map_err(|e| e.to_string())?;
        if chain.len() == 1 {
            chain.extend(self.files.append.iter().cloned());
        }
        rustls::sign::CertifiedKey::from_der(chain, key, &self.provider).map_err(|e| e.to_string())
    }

    fn maybe_reload(&self) {
        // try_lock: a handshake never waits for another one's check.
        let Ok(mut seen) = self.seen.try_lock() else {
            return;
        };
        if seen.0.elapsed() < std::time::Duration::from_secs(1) {
            return;
        }
        seen.0 = std::time::Instant::now();
        let mtime = self.mtime();
        if mtime.is_none() || mtime == seen.1 {
            return;
        }
        match self.load() {
            Ok(ck) => {
                tracing::warn!(
                    cert = %self.files.cert.display(),
                    "serving certificate changed on disk; serving the new one"
                );
                if let Ok(mut cur) = self.current.write() {
                    *cur = Arc::new(ck);
                }
                seen.1 = mtime;
            }
            // A half-written pair (new key, old certificate) is retried on a later handshake.
            Err(e) => tracing::debug!(error = %e, "serving certificate not reloaded yet"),
        }
    }
}

impl rustls::server::ResolvesServerCert for ReloadingCert {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.maybe_reload();
        self.current.read().ok().map(|c| c.clone())
    }
}

/// The rustls server config (h2 + http/1.1) and the per-request client certificate checker,
/// trusting client certificates signed by any of `client_cas`. With `files`, the serving pair is
/// reloaded from them when they change.
pub fn server_config(
    client_cas: Vec<CertificateDer<'static>>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    files: Option<ServingFiles>,
) -> Result<(rustls::ServerConfig, ClientAuth), rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in client_cas {
        roots.add(ca)?;
    }
    let inner = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))?;
    let auth = ClientAuth {
        verifier: inner.clone(),
    };
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(Arc::new(DeferredClientVerifier { inner }));
    let mut config = match files {
        Some(files) => {
            let current = rustls::sign::CertifiedKey::from_der(chain, key, &provider)?;
            let resolver = ReloadingCert {
                files,
                provider,
                current: std::sync::RwLock::new(Arc::new(current)),
                seen: std::sync::Mutex::new((std::time::Instant::now(), None)),
            };
            let stamp = resolver.mtime();
            if let Ok(mut seen) = resolver.seen.lock() {
                seen.1 = stamp;
            }
            builder.with_cert_resolver(Arc::new(resolver))
        }
        None => builder.with_single_cert(chain, key)?,
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((config, auth))
}

/// The certificates of a PEM file (`--client-ca-file`).
pub fn read_certs(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, std::io::Error> {
    let pem = std::fs::read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: no certificate found", path.display()),
        ));
    }
    Ok(certs)
}

/// A serving certificate chain and its key from PEM files (`--tls-cert-file`,
/// `--tls-private-key-file`).
pub fn read_cert_and_key(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), std::io::Error> {
    let chain = read_certs(cert)?;
    let key_pem = std::fs::read(key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| pem_error(key, e))?;
    Ok((chain, key))
}

fn pem_error(path: &std::path::Path, e: rustls::pki_types::pem::Error) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: {e}", path.display()),
    )
}
