//! The cluster PKI in kubeadm's file layout: created on first start, reused afterwards.
//!
//! `ensure_pki` reads and checks everything before it writes anything, so a broken or
//! mismatched file produces an error and leaves the directory exactly as it was.

mod certs;
mod sign;
mod single;
#[cfg(test)]
mod tests;

pub(crate) use certs::pkcs1_to_pkcs8;
pub use sign::{
    CsrInfo, cert_expiry, cert_validity, check_csr_request, new_client_csr, new_csr, parse_csr_pem,
    sign_csr,
};
pub use single::{CERTS, CaSigner, ETCD_CERTS, ensure_one, leaf_csr, renew, seconds_left};

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{ExtendedKeyUsagePurpose, Issuer, KeyPair, SanType};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::fsutil::{self, PUBLIC_MODE, SECRET_MODE};
use certs::{LeafSpec, LoadedCert};

/// Cluster CA common name, as kubeadm names it.
pub const CA_COMMON_NAME: &str = "kubernetes";
/// API server serving certificate common name.
pub const APISERVER_COMMON_NAME: &str = "kube-apiserver";
/// Front-proxy (aggregation layer) CA common name.
pub const FRONT_PROXY_CA_COMMON_NAME: &str = "front-proxy-ca";
/// The `kubernetes` Service's ClusterIP: the first address of kubeadm's default 10.96.0.0/12.
pub const DEFAULT_SERVICE_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 96, 0, 1));

/// Errors from creating, loading or using the PKI. Every file problem names the file.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
    #[error(
        "{} exists but {} is missing; restore the missing file, or move both away to generate a new pair",
        present.display(),
        missing.display()
    )]
    MissingPair { present: PathBuf, missing: PathBuf },
    #[error("{} does not match {}", key.display(), cert.display())]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error("invalid subject alternative name {name:?}: {reason}")]
    InvalidSan { name: String, reason: String },
    #[error("invalid certificate request: {0}")]
    InvalidRequest(String),
    #[error("generating {what}: {source}")]
    Generate {
        what: String,
        #[source]
        source: rcgen::Error,
    },
    #[error("client certificate: {0}")]
    ClientCert(String),
}

/// How the PKI is made: the names the serving certificate must cover, and the kind of a new
/// service-account key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PkiOptions {
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    /// Make a new `sa.key` as ECDSA P-256 (ES256 tokens) instead of RSA 2048 (RS256, kubeadm's
    /// choice). An RSA key takes tens of milliseconds to generate; a throwaway PKI (`k1s server
    /// --ephemeral`) that is made on every start uses ECDSA. An existing key is always used as
    /// it is.
    pub ecdsa_service_account_key: bool,
}

impl PkiOptions {
    /// The SANs `k1s server` needs: every name a client may use for the API server (local
    /// names, the host name, the in-cluster `kubernetes` Service names and IP, the advertise
    /// address) plus the operator's `--tls-san` values.
    pub fn for_server(tls_sans: &[String], advertise: Option<IpAddr>) -> Self {
        let mut opts = PkiOptions::default();
        opts.add_dns("localhost");
        if let Some(host) = local_hostname() {
            opts.add_dns(&host);
        }
        for name in [
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ] {
            opts.add_dns(name);
        }
        opts.add_ip(IpAddr::V4(Ipv4Addr::LOCALHOST));
        opts.add_ip(IpAddr::V6(Ipv6Addr::LOCALHOST));
        if let Some(ip) = advertise {
            opts.add_ip(ip);
        }
        opts.add_ip(DEFAULT_SERVICE_IP);
        for san in tls_sans {
            let san = san.trim();
            if san.is_empty() {
                continue;
            }
            match san.parse::<IpAddr>() {
                Ok(ip) => opts.add_ip(ip),
                Err(_) => opts.add_dns(san),
            }
        }
        opts
    }

    /// Adds a DNS name (lowercased: DNS is case-insensitive) unless already present.
    pub fn add_dns(&mut self, name: &str) {
        let name = name.to_ascii_lowercase();
        if !self.dns_names.contains(&name) {
            self.dns_names.push(name);
        }
    }

    /// Adds an IP address unless already present.
    pub fn add_ip(&mut self, ip: IpAddr) {
        if !self.ip_addresses.contains(&ip) {
            self.ip_addresses.push(ip);
        }
    }

    fn san_types(&self) -> Result<Vec<SanType>, PkiError> {
        let mut sans = Vec::new();
        for name in &self.dns_names {
            let bad = |reason: &str| PkiError::InvalidSan {
                name: name.clone(),
                reason: reason.to_string(),
            };
            if name.is_empty() {
                return Err(bad("empty DNS name"));
            }
            let ia5 = rcgen::string::Ia5String::try_from(name.to_ascii_lowercase())
                .map_err(|_| bad("DNS names must be ASCII"))?;
            let san = SanType::DnsName(ia5);
            if !sans.contains(&san) {
                sans.push(san);
            }
        }
        for ip in &self.ip_addresses {
            let san = SanType::IpAddress(*ip);
            if !sans.contains(&san) {
                sans.push(san);
            }
        }
        Ok(sans)
    }
}

/// The machine's host name, lowercased, if it can be read and is usable as a DNS SAN.
fn local_hostname() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| {
            let raw = std::fs::read_to_string(path).ok()?;
            let host = raw.trim().to_ascii_lowercase();
            let usable = !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            usable.then_some(host)
        })
}

/// The loaded cluster PKI: what the API server needs to serve TLS, verify clients and sign
/// service-account tokens, and the CAs to issue further certificates.
pub struct Pki {
    dir: PathBuf,
    ca: LoadedCert,
    ca_issuer: Issuer<'static, KeyPair>,
    front_proxy_ca: LoadedCert,
    front_proxy_issuer: Issuer<'static, KeyPair>,
    serving_cert: CertificateDer<'static>,
    serving_key_pkcs8: Vec<u8>,
    sa_key_pem: String,
    sa_key_pkcs8: Vec<u8>,
    sa_pub_pem: String,
    written: Vec<PathBuf>,
}

impl fmt::Debug for Pki {
    /// Never prints key material.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pki")
            .field("dir", &self.dir)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl Pki {
    /// The directory the PKI lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Files this `ensure_pki` call created or replaced (empty when everything was reused).
    pub fn written_files(&self) -> &[PathBuf] {
        &self.written
    }

    pub fn ca_cert_pem(&self) -> &str {
        &self.ca.pem
    }

    pub fn ca_cert_der(&self) -> &CertificateDer<'static> {
        &self.ca.der
    }

    /// The serving certificate followed by the CA, ready for rustls.
    pub fn serving_cert_chain_der(&self) -> Vec<CertificateDer<'static>> {
        vec![self.serving_cert.clone(), self.ca.der.clone()]
    }

    pub fn serving_key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.serving_key_pkcs8.clone()))
    }

    /// Service-account token signing key, PKCS#8 PEM (`sa.key`): RSA 2048 when k1s made it, or
    /// the RSA or ECDSA P-256 key found there.
    pub fn sa_private_key_pem(&self) -> &str {
        &self.sa_key_pem
    }

    /// Service-account token signing key, PKCS#8 DER (what `ring` loads).
    pub fn sa_private_key_pkcs8_der(&self) -> &[u8] {
        &self.sa_key_pkcs8
    }

    /// Service-account token verification key, SubjectPublicKeyInfo PEM (`sa.pub`).
    pub fn sa_public_key_pem(&self) -> &str {
        &self.sa_pub_pem
    }

    pub fn front_proxy_ca_cert_pem(&self) -> &str {
        &self.front_proxy_ca.pem
    }

    /// Issues a client certificate signed by the cluster CA: the API server's x509
    /// authenticator maps CN to the user name and each O to a group.
    pub fn issue_client_cert(
        &self,
        common_name: &str,
        organizations: &[&str],
        validity: Duration,
    ) -> Result<(String, String), PkiError> {
        issue_client(&self.ca_issuer, common_name, organizations, validity)
    }

    /// Issues a client certificate signed by the front-proxy CA, for the API server to present
    /// to aggregated API servers (kubeadm's `front-proxy-client`).
    pub fn issue_front_proxy_client_cert(
        &self,
        common_name: &str,
        validity: Duration,
    ) -> Result<(String, String), PkiError> {
        issue_client(&self.front_proxy_issuer, common_name, &[], validity)
    }
}

impl Pki {
    /// The CA key (PEM) read from `ca.key`, for signing requests (csrsigning).
    pub fn ca_key_path(&self) -> PathBuf {
        self.dir.join("ca.key")
    }

    /// kubeadm's remaining leaf certificates beside the serving one: `apiserver-kubelet-client`
    /// (CN kube-apiserver-kubelet-client, O kubeadm:cluster-admins) and `front-proxy-client`.
    /// Existing pairs are kept; half a pair is an error and then nothing is written. Returns
    /// the files written.
    pub fn ensure_kubeadm_leaves(&self) -> Result<Vec<PathBuf>, PkiError> {
        let leaves: [(&str, &str, &[&str], bool); 2] = [
            (
                "apiserver-kubelet-client",
                "kube-apiserver-kubelet-client",
                &["kubeadm:cluster-admins"],
                false,
            ),
            ("front-proxy-client", "front-proxy-client", &[], true),
        ];
        let mut plan = Plan::default();
        for (file, cn, orgs, front_proxy) in leaves {
            let crt = self.dir.join(format!("{file}.crt"));
            let key = self.dir.join(format!("{file}.key"));
            match (read_optional(&crt)?, read_optional(&key)?) {
                (Some(c), Some(k)) => {
                    certs::load_cert(&crt, &c)?;
                    certs::load_key(&key, &k)?;
                }
                (Some(_), None) => {
                    return Err(PkiError::MissingPair {
                        present: crt,
                        missing: key,
                    });
                }
                (None, Some(_)) => {
                    return Err(PkiError::MissingPair {
                        present: key,
                        missing: crt,
                    });
                }
                (None, None) => {
                    let issuer = if front_proxy {
                        &self.front_proxy_issuer
                    } else {
                        &self.ca_issuer
                    };
                    let (cert_pem, key_pem) = issue_client(issuer, cn, orgs, certs::LEAF_VALIDITY)?;
                    plan.write(&key, key_pem, SECRET_MODE);
                    plan.write(&crt, cert_pem, PUBLIC_MODE);
                }
            }
        }
        let mut written = Vec::new();
        for w in plan.writes {
            fsutil::write_atomic(&w.path, &w.contents, w.mode).map_err(|source| PkiError::Io {
                path: w.path.clone(),
                source,
            })?;
            written.push(w.path);
        }
        Ok(written)
    }
}

fn issue_client(
    issuer: &Issuer<'static, KeyPair>,
    common_name: &str,
    organizations: &[&str],
    validity: Duration,
) -> Result<(String, String), PkiError> {
    let (der, key) = certs::issue_leaf(
        issuer,
        &LeafSpec {
            common_name,
            organizations,
            sans: Vec::new(),
            usage: ExtendedKeyUsagePurpose::ClientAuth,
            validity,
        },
    )?;
    Ok((certs::pem_encode("CERTIFICATE", &der), key.serialize_pem()))
}

/// The user (CN) and groups (every O) of a client certificate. Only reads the subject: the TLS
/// layer has already verified the chain.
pub fn client_identity(cert_der: &[u8]) -> Result<(String, Vec<String>), PkiError> {
    let cert = certs::parse_der(cert_der).map_err(PkiError::ClientCert)?;
    let subject = cert.subject();
    let user = subject
        .iter_common_name()
        .next()
        .ok_or_else(|| PkiError::ClientCert("subject has no common name".into()))?
        .as_str()
        .map_err(|e| PkiError::ClientCert(format!("common name is not a string: {e}")))?;
    if user.is_empty() {
        return Err(PkiError::ClientCert("subject common name is empty".into()));
    }
    let groups = subject
        .iter_organization()
        .map(|o| {
            o.as_str()
                .map(str::to_string)
                .map_err(|e| PkiError::ClientCert(format!("organization is not a string: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((user.to_string(), groups))
}

/// A file to write once every check has passed.
struct PendingWrite {
    path: PathBuf,
    contents: Vec<u8>,
    mode: u32,
}

/// Collects planned writes; keys are queued before their certificates so that a crash in
/// between leaves a state the next run repairs (a key without its cert) rather than rejects.
#[derive(Default)]
struct Plan {
    writes: Vec<PendingWrite>,
}

impl Plan {
    fn write(&mut self, path: &Path, contents: impl Into<Vec<u8>>, mode: u32) {
        self.writes.push(PendingWrite {
            path: path.to_path_buf(),
            contents: contents.into(),
            mode,
        });
    }
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, PkiError> {
    fsutil::read_optional(path).map_err(|source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Creates the PKI in `pki_dir` on first use and loads it afterwards.
///
/// Existing CAs and service-account keys are never replaced. The serving certificate alone is
/// reissued (from the existing CA) when it lacks a requested SAN, expires within 30 days, does
/// not match its key or was not signed by the current CA. A CA certificate without its key, a
/// key that does not match its certificate, or an unparsable file is an error naming the file,
/// and then nothing is written.
pub fn ensure_pki(pki_dir: &Path, opts: &PkiOptions) -> Result<Pki, PkiError> {
    let sans = opts.san_types()?;
    let mut plan = Plan::default();

    let (ca, ca_issuer) = load_or_create_ca(pki_dir, "ca", CA_COMMON_NAME, &mut plan)?;
    let (front_proxy_ca, front_proxy_issuer) = load_or_create_ca(
        pki_dir,
        "front-proxy-ca",
        FRONT_PROXY_CA_COMMON_NAME,
        &mut plan,
    )?;
    let sa = load_or_create_sa(pki_dir, opts.ecdsa_service_account_key, &mut plan)?;
    let (serving_cert, serving_key) =
        load_or_issue_serving(pki_dir, &ca, &ca_issuer, opts, sans, &mut plan)?;

    // Every check passed: only now touch the disk.
    let written = single::write_plan(pki_dir, plan)?;

    Ok(Pki {
        dir: pki_dir.to_path_buf(),
        ca,
        ca_issuer,
        front_proxy_ca,
        front_proxy_issuer,
        serving_cert,
        serving_key_pkcs8: serving_key.serialize_der(),
        sa_key_pem: sa.key_pem,
        sa_key_pkcs8: sa.key.serialize_der(),
        sa_pub_pem: sa.pub_pem,
        written,
    })
}

/// Loads `<name>.crt`/`<name>.key`, or plans a new self-signed CA when neither exists.
fn load_or_create_ca(
    dir: &Path,
    name: &str,
    common_name: &str,
    plan: &mut Plan,
) -> Result<(LoadedCert, Issuer<'static, KeyPair>), PkiError> {
    let crt_path = dir.join(format!("{name}.crt"));
    let key_path = dir.join(format!("{name}.key"));
    let crt_bytes = read_optional(&crt_path)?;
    let key_bytes = read_optional(&key_path)?;

    let (cert, key) = match (crt_bytes, key_bytes) {
        (Some(crt), Some(key)) => {
            let cert = certs::load_cert(&crt_path, &crt)?;
            let key = certs::load_key(&key_path, &key)?;
            check_ca(&crt_path, &key_path, &cert, &key)?;
            (cert, key)
        }
        (Some(_), None) => {
            return Err(PkiError::MissingPair {
                present: crt_path,
                missing: key_path,
            });
        }
        (None, key_bytes) => {
            // A key without its certificate is what a crash between the two writes leaves;
            // finish the job with that key rather than refusing to start.
            let key = match key_bytes {
                Some(bytes) => {
                    let key = certs::load_key(&key_path, &bytes)?;
                    tracing::warn!(
                        cert = %crt_path.display(),
                        "CA certificate missing; re-creating it from the existing key"
                    );
                    key
                }
                None => {
                    let key = certs::new_key()?;
                    plan.write(&key_path, key.serialize_pem(), SECRET_MODE);
                    key
                }
            };
            let der = certs::self_signed_ca(common_name, &key)?;
            let pem = certs::pem_encode("CERTIFICATE", &der);
            plan.write(&crt_path, pem.clone(), PUBLIC_MODE);
            (LoadedCert { pem, der }, key)
        }
    };
    let issuer = certs::issuer_for(&crt_path, &cert, key)?;
    Ok((cert, issuer))
}

fn check_ca(
    crt_path: &Path,
    key_path: &Path,
    cert: &LoadedCert,
    key: &KeyPair,
) -> Result<(), PkiError> {
    let invalid = |reason: String| PkiError::Invalid {
        path: crt_path.to_path_buf(),
        reason,
    };
    let parsed = cert.parsed().map_err(invalid)?;
    if !parsed.is_ca() {
        return Err(invalid(
            "not a CA certificate (basicConstraints CA:TRUE is missing)".into(),
        ));
    }
    if !certs::key_matches(&parsed, key) {
        return Err(PkiError::KeyMismatch {
            cert: crt_path.to_path_buf(),
            key: key_path.to_path_buf(),
        });
    }
    // Certificates issued from an expired CA fail at every client with an opaque TLS error;
    // saying so here is kinder.
    if certs::not_after_unix(&parsed) < certs::now_unix() {
        return Err(invalid(format!(
            "CA certificate expired on {}",
            parsed.validity().not_after
        )));
    }
    Ok(())
}

struct SaKeys {
    key: KeyPair,
    key_pem: String,
    pub_pem: String,
}

/// Loads `sa.key`/`sa.pub`, deriving a missing `sa.pub` from the key, or plans a new pair.
fn load_or_create_sa(dir: &Path, ecdsa: bool, plan: &mut Plan) -> Result<SaKeys, PkiError> {
    let key_path = dir.join("sa.key");
    let pub_path = dir.join("sa.pub");
    let key_bytes = read_optional(&key_path)?;
    let pub_bytes = read_optional(&pub_path)?;

    match (key_bytes, pub_bytes) {
        (Some(key_bytes), pub_bytes) => {
            // kubeadm's sa.key is PKCS#1 RSA; it is read as the PKCS#8 it is equivalent to.
            let key_pem = certs::pkcs1_to_pkcs8(&String::from_utf8_lossy(&key_bytes));
            let key = certs::load_key(&key_path, key_pem.as_bytes())?;
            let pub_pem = match pub_bytes {
                Some(bytes) => {
                    let parse_err = |reason: String| PkiError::Parse {
                        path: pub_path.clone(),
                        reason,
                    };
                    let text = String::from_utf8(bytes)
                        .map_err(|_| parse_err("file is not valid UTF-8".into()))?;
                    let spki = rcgen::SubjectPublicKeyInfo::from_pem(&text).map_err(|e| {
                        parse_err(format!("not a PEM public key (SubjectPublicKeyInfo): {e}"))
                    })?;
                    if rcgen::PublicKeyData::der_bytes(&spki) != key.public_key_raw() {
                        return Err(PkiError::KeyMismatch {
                            cert: pub_path,
                            key: key_path,
                        });
                    }
                    text
                }
                None => {
                    let pem = key.public_key_pem();
                    plan.write(&pub_path, pem.clone(), SECRET_MODE);
                    pem
                }
            };
            Ok(SaKeys {
                key,
                key_pem,
                pub_pem,
            })
        }
        // Without the private key, tokens already handed out can never be re-signed, and
        // silently making a new pair would invalidate them all.
        (None, Some(_)) => Err(PkiError::MissingPair {
            present: pub_path,
            missing: key_path,
        }),
        (None, None) => {
            let key = if ecdsa {
                certs::new_key()?
            } else {
                certs::new_rsa_key()?
            };
            let key_pem = key.serialize_pem();
            let pub_pem = key.public_key_pem();
            // kubeadm writes sa.pub 0600 too.
            plan.write(&key_path, key_pem.clone(), SECRET_MODE);
            plan.write(&pub_path, pub_pem.clone(), SECRET_MODE);
            Ok(SaKeys {
                key,
                key_pem,
                pub_pem,
            })
        }
    }
}

/// Loads `apiserver.crt`/`apiserver.key` when still good, else plans a fresh pair from the CA.
fn load_or_issue_serving(
    dir: &Path,
    ca: &LoadedCert,
    ca_issuer: &Issuer<'static, KeyPair>,
    opts: &PkiOptions,
    sans: Vec<SanType>,
    plan: &mut Plan,
) -> Result<(CertificateDer<'static>, KeyPair), PkiError> {
    let crt_path = dir.join("apiserver.crt");
    let key_path = dir.join("apiserver.key");
    // Parse whichever exists even if its partner is gone: an unparsable file is reported,
    // not silently overwritten.
    let cert = read_optional(&crt_path)?
        .map(|b| certs::load_cert(&crt_path, &b))
        .transpose()?;
    let key = read_optional(&key_path)?
        .map(|b| certs::load_key(&key_path, &b))
        .transpose()?;

    let reason = match (&cert, &key) {
        (Some(cert), Some(key)) => {
            let parsed = cert.parsed().map_err(|reason| PkiError::Parse {
                path: crt_path.clone(),
                reason,
            })?;
            let ca_parsed = ca.parsed().map_err(|reason| PkiError::Parse {
                path: dir.join("ca.crt"),
                reason,
            })?;
            certs::serving_cert_problem(
                &parsed,
                key,
                &ca_parsed,
                &opts.dns_names,
                &opts.ip_addresses,
            )
        }
        (Some(_), None) => Some("apiserver.key is missing".to_string()),
        (None, _) => Some("it does not exist".to_string()),
    };

    match (reason, cert, key) {
        (None, Some(cert), Some(key)) => Ok((cert.der, key)),
        (reason, cert, _) => {
            if cert.is_some() {
                tracing::info!(
                    reason = reason.as_deref().unwrap_or_default(),
                    "reissuing the API server serving certificate"
                );
            }
            let (der, key) = certs::issue_leaf(
                ca_issuer,
                &LeafSpec {
                    common_name: APISERVER_COMMON_NAME,
                    organizations: &[],
                    sans,
                    usage: ExtendedKeyUsagePurpose::ServerAuth,
                    validity: certs::LEAF_VALIDITY,
                },
            )?;
            plan.write(&key_path, key.serialize_pem(), SECRET_MODE);
            plan.write(
                &crt_path,
                certs::pem_encode("CERTIFICATE", &der),
                PUBLIC_MODE,
            );
            Ok((der, key))
        }
    }
}
