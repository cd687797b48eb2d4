//! One certificate at a time, by kubeadm's names: `init phase certs NAME`, `certs renew NAME`,
//! `kubeconfig user` and `certs generate-csr` each touch a single pair, never the whole PKI.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{ExtendedKeyUsagePurpose, Issuer, KeyPair, SanType};

use super::certs::{self, LeafSpec, LoadedCert};
use super::{PkiError, PkiOptions, Plan, SECRET_MODE, fsutil, read_optional};
use crate::fsutil::PUBLIC_MODE;

/// A CA loaded from `<name>.crt` / `<name>.key`, ready to sign leaves. A missing file is an
/// error: unlike `ensure_pki`, nothing here creates a CA as a side effect.
pub struct CaSigner {
    cert: LoadedCert,
    issuer: Issuer<'static, KeyPair>,
}

impl CaSigner {
    pub fn load(dir: &Path, name: &str) -> Result<Self, PkiError> {
        let crt = dir.join(format!("{name}.crt"));
        let key = dir.join(format!("{name}.key"));
        let read = |p: &Path| {
            std::fs::read(p).map_err(|source| PkiError::Io {
                path: p.to_path_buf(),
                source,
            })
        };
        let cert = certs::load_cert(&crt, &read(&crt)?)?;
        let pair = certs::load_key(&key, &read(&key)?)?;
        super::check_ca(&crt, &key, &cert, &pair)?;
        let issuer = certs::issuer_for(&crt, &cert, pair)?;
        Ok(CaSigner { cert, issuer })
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert.pem
    }

    /// A client certificate (CN = user, one O per group) and its new key, as PEM.
    pub fn issue_client(
        &self,
        common_name: &str,
        organizations: &[&str],
        validity: Duration,
    ) -> Result<(String, String), PkiError> {
        super::issue_client(&self.issuer, common_name, organizations, validity)
    }
}

/// kubeadm's certificates under the cert dir that k1s makes: name, signing CA (None for a CA or
/// the sa key pair).
pub const CERTS: [(&str, Option<&str>); 6] = [
    ("ca", None),
    ("apiserver", Some("ca")),
    ("apiserver-kubelet-client", Some("ca")),
    ("front-proxy-ca", None),
    ("front-proxy-client", Some("front-proxy-ca")),
    ("sa", None),
];

/// kubeadm's etcd certificates: accepted by name, nothing to do (k1s runs no etcd of its own).
pub const ETCD_CERTS: [&str; 5] = [
    "etcd-ca",
    "etcd-server",
    "etcd-peer",
    "etcd-healthcheck-client",
    "apiserver-etcd-client",
];

/// Creates one certificate (and key) when it does not exist yet; an existing one is checked and
/// kept. Returns the files written.
pub fn ensure_one(dir: &Path, name: &str, opts: &PkiOptions) -> Result<Vec<PathBuf>, PkiError> {
    let mut plan = Plan::default();
    match name {
        "ca" => {
            super::load_or_create_ca(dir, "ca", super::CA_COMMON_NAME, &mut plan)?;
        }
        "front-proxy-ca" => {
            super::load_or_create_ca(
                dir,
                "front-proxy-ca",
                super::FRONT_PROXY_CA_COMMON_NAME,
                &mut plan,
            )?;
        }
        "sa" => {
            super::load_or_create_sa(dir, opts.ecdsa_service_account_key, &mut plan)?;
        }
        "apiserver" => {
            let ca = CaSigner::load(dir, "ca")?;
            super::load_or_issue_serving(
                dir,
                &ca.cert,
                &ca.issuer,
                opts,
                opts.san_types()?,
                &mut plan,
            )?;
        }
        "apiserver-kubelet-client" | "front-proxy-client" => {
            let crt = dir.join(format!("{name}.crt"));
            let key = dir.join(format!("{name}.key"));
            if read_optional(&crt)?.is_none() || read_optional(&key)?.is_none() {
                let (cert, key_pem) = issue_leaf_named(dir, name, None)?;
                plan.write(&key, key_pem, SECRET_MODE);
                plan.write(&crt, cert, PUBLIC_MODE);
            }
        }
        other => return Err(unknown(other)),
    }
    write_plan(dir, plan)
}

fn unknown(name: &str) -> PkiError {
    PkiError::InvalidRequest(format!(
        "unknown certificate {name:?}; known: {}",
        CERTS.map(|(n, _)| n).join(", ")
    ))
}

/// Writes what `plan` holds (the directory made private first); the paths written.
pub(super) fn write_plan(dir: &Path, plan: Plan) -> Result<Vec<PathBuf>, PkiError> {
    let mut written = Vec::new();
    if plan.writes.is_empty() {
        return Ok(written);
    }
    fsutil::ensure_private_dir(dir).map_err(|source| PkiError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for w in plan.writes {
        fsutil::write_atomic(&w.path, &w.contents, w.mode).map_err(|source| PkiError::Io {
            path: w.path.clone(),
            source,
        })?;
        written.push(w.path);
    }
    Ok(written)
}

/// A new certificate and key for one of kubeadm's leaves. With `like`, the subject and SANs are
/// copied from that (existing) certificate, as kubeadm's renewal does; else kubeadm's defaults.
fn issue_leaf_named(
    dir: &Path,
    name: &str,
    like: Option<&LoadedCert>,
) -> Result<(String, String), PkiError> {
    let (ca_name, default_cn, default_orgs, usage): (&str, &str, &[&str], _) = match name {
        "apiserver" => (
            "ca",
            super::APISERVER_COMMON_NAME,
            &[],
            ExtendedKeyUsagePurpose::ServerAuth,
        ),
        "apiserver-kubelet-client" => (
            "ca",
            "kube-apiserver-kubelet-client",
            &["kubeadm:cluster-admins"],
            ExtendedKeyUsagePurpose::ClientAuth,
        ),
        "front-proxy-client" => (
            "front-proxy-ca",
            "front-proxy-client",
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
        ),
        other => return Err(unknown(other)),
    };
    let ca = CaSigner::load(dir, ca_name)?;
    let (cn, orgs, sans) = match like {
        Some(cert) => {
            let parsed = cert.parsed().map_err(|reason| PkiError::Parse {
                path: dir.join(format!("{name}.crt")),
                reason,
            })?;
            let (cn, orgs) = super::client_identity(&cert.der)?;
            let (dns, ips) = certs::san_sets(&parsed);
            let mut opts = PkiOptions::default();
            let mut dns: Vec<_> = dns.into_iter().collect();
            dns.sort();
            for d in dns {
                opts.add_dns(&d);
            }
            let mut ips: Vec<_> = ips.into_iter().collect();
            ips.sort();
            for ip in ips {
                opts.add_ip(ip);
            }
            (cn, orgs, opts.san_types()?)
        }
        None => (
            default_cn.to_string(),
            default_orgs.iter().map(|s| s.to_string()).collect(),
            Vec::<SanType>::new(),
        ),
    };
    let org_refs: Vec<&str> = orgs.iter().map(String::as_str).collect();
    let (der, key) = certs::issue_leaf(
        &ca.issuer,
        &LeafSpec {
            common_name: &cn,
            organizations: &org_refs,
            sans,
            usage,
            validity: certs::LEAF_VALIDITY,
        },
    )?;
    Ok((certs::pem_encode("CERTIFICATE", &der), key.serialize_pem()))
}

/// kubeadm's `certs renew` for a certificate file: a new key and a certificate with the old one's
/// subject and SANs, valid for another year from now (kubeadm makes a new key too). The key is
/// written before the certificate, each atomically, so a reader that checks the pair never pairs
/// a new certificate with an old key. Returns the new expiry (seconds since the epoch).
pub fn renew(dir: &Path, name: &str) -> Result<i64, PkiError> {
    let crt = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    let bytes = std::fs::read(&crt).map_err(|source| PkiError::Io {
        path: crt.clone(),
        source,
    })?;
    let old = certs::load_cert(&crt, &bytes)?;
    let (cert_pem, key_pem) = issue_leaf_named(dir, name, Some(&old))?;
    let mut plan = Plan::default();
    plan.write(&key, key_pem, SECRET_MODE);
    plan.write(&crt, cert_pem.clone(), PUBLIC_MODE);
    write_plan(dir, plan)?;
    super::cert_expiry(cert_pem.as_bytes())
        .map(|(_, exp)| exp)
        .map_err(|reason| PkiError::Parse { path: crt, reason })
}

/// Seconds until a certificate file expires (negative when expired), or None when the file
/// does not exist.
pub fn seconds_left(path: &Path) -> Result<Option<i64>, PkiError> {
    let Some(bytes) = read_optional(path)? else {
        return Ok(None);
    };
    let (_, exp) = super::cert_expiry(&bytes).map_err(|reason| PkiError::Parse {
        path: path.to_path_buf(),
        reason,
    })?;
    Ok(Some(exp - certs::now_unix()))
}

/// A new key and a CSR for one of kubeadm's leaves (`certs generate-csr`): the subject and SANs
/// the certificate would get; returns (CSR PEM, key PEM).
pub fn leaf_csr(name: &str, opts: &PkiOptions) -> Result<(String, String), PkiError> {
    let (cn, orgs, sans): (&str, &[&str], Vec<SanType>) = match name {
        "apiserver" => (super::APISERVER_COMMON_NAME, &[], opts.san_types()?),
        "apiserver-kubelet-client" => (
            "kube-apiserver-kubelet-client",
            &["kubeadm:cluster-admins"],
            vec![],
        ),
        "front-proxy-client" => ("front-proxy-client", &[], vec![]),
        other => return Err(unknown(other)),
    };
    super::sign::new_csr(cn, orgs, sans)
}
