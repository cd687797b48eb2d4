//! Building, signing and inspecting the cluster's X.509 certificates and keys.

use std::collections::HashSet;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType, SigningKey,
};
use rustls_pki_types::CertificateDer;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;
use x509_parser::x509::AlgorithmIdentifier;

use super::PkiError;

const DAY: u64 = 24 * 60 * 60;
/// kubeadm's CA lifetime.
pub(super) const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * DAY);
/// kubeadm's leaf certificate lifetime.
pub(super) const LEAF_VALIDITY: Duration = Duration::from_secs(365 * DAY);
/// A serving cert closer than this to expiry is reissued at startup.
pub(super) const RENEW_BEFORE: Duration = Duration::from_secs(30 * DAY);
/// notBefore is backdated like kubeadm's so a peer whose clock lags a little still accepts it.
const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// Upper bound for requested lifetimes; also keeps dates inside what X.509 time types can hold.
const MAX_VALIDITY: Duration = Duration::from_secs(100 * 365 * DAY);

/// A certificate read from disk: its PEM text and DER bytes.
pub(super) struct LoadedCert {
    pub pem: String,
    pub der: CertificateDer<'static>,
}

impl LoadedCert {
    /// Parses the DER again; cheap, and avoids a self-referential struct.
    pub fn parsed(&self) -> Result<X509Certificate<'_>, String> {
        parse_der(&self.der)
    }
}

pub(super) fn parse_der(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    match x509_parser::parse_x509_certificate(der) {
        Ok((_, cert)) => Ok(cert),
        Err(e) => Err(format!("not a valid X.509 certificate: {e}")),
    }
}

/// Parses the first PEM certificate in `bytes`.
pub(super) fn load_cert(path: &Path, bytes: &[u8]) -> Result<LoadedCert, PkiError> {
    let parse_err = |reason: String| PkiError::Parse {
        path: path.to_path_buf(),
        reason,
    };
    let (_, pem) = x509_parser::pem::parse_x509_pem(bytes)
        .map_err(|e| parse_err(format!("no PEM block found: {e}")))?;
    if pem.label != "CERTIFICATE" {
        return Err(parse_err(format!(
            "expected a CERTIFICATE PEM block, found {:?}",
            pem.label
        )));
    }
    parse_der(&pem.contents).map_err(parse_err)?;
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|_| parse_err("file is not valid UTF-8".to_string()))?;
    Ok(LoadedCert {
        pem: text,
        der: CertificateDer::from(pem.contents),
    })
}

/// Parses a PKCS#8 PEM private key.
pub(super) fn load_key(path: &Path, bytes: &[u8]) -> Result<KeyPair, PkiError> {
    let parse_err = |reason: String| PkiError::Parse {
        path: path.to_path_buf(),
        reason,
    };
    let text =
        std::str::from_utf8(bytes).map_err(|_| parse_err("file is not valid UTF-8".into()))?;
    KeyPair::from_pem(text).map_err(|e| {
        parse_err(format!(
            "not a supported private key (PKCS#8 PEM \"PRIVATE KEY\" expected): {e}"
        ))
    })
}

/// True when `key` is the private half of the certificate's public key.
pub(super) fn key_matches(cert: &X509Certificate<'_>, key: &KeyPair) -> bool {
    cert.public_key().subject_public_key.data.as_ref() == key.public_key_raw()
}

/// A new RSA 2048 key, as kubeadm makes `sa.key` (service-account tokens are signed RS256,
/// what OIDC consumers of the issuer accept).
pub(super) fn new_rsa_key() -> Result<KeyPair, PkiError> {
    use rsa::pkcs8::{EncodePrivateKey as _, LineEnding};
    let generate_err =
        |reason: String| PkiError::InvalidRequest(format!("RSA key generation: {reason}"));
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)
        .map_err(|e| generate_err(e.to_string()))?;
    let pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| generate_err(e.to_string()))?;
    KeyPair::from_pem(&pem).map_err(|e| generate_err(e.to_string()))
}

/// PKCS#1 `RSA PRIVATE KEY` PEM (what kubeadm writes as `sa.key`) as PKCS#8 PEM, which is what
/// the key loader reads; other text is returned unchanged.
pub(crate) fn pkcs1_to_pkcs8(text: &str) -> String {
    use rsa::pkcs1::DecodeRsaPrivateKey as _;
    use rsa::pkcs8::{EncodePrivateKey as _, LineEnding};
    if !text.contains("-----BEGIN RSA PRIVATE KEY-----") {
        return text.to_string();
    }
    rsa::RsaPrivateKey::from_pkcs1_pem(text)
        .ok()
        .and_then(|k| k.to_pkcs8_pem(LineEnding::LF).ok())
        .map_or_else(|| text.to_string(), |pem| pem.to_string())
}

pub(super) fn new_key() -> Result<KeyPair, PkiError> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|e| PkiError::Generate {
        what: "ECDSA P-256 key".into(),
        source: e,
    })
}

pub(super) fn set_validity(
    params: &mut CertificateParams,
    validity: Duration,
) -> Result<(), PkiError> {
    if validity.is_zero() || validity > MAX_VALIDITY {
        return Err(PkiError::InvalidRequest(format!(
            "certificate validity must be between 1s and {} days",
            MAX_VALIDITY.as_secs() / DAY
        )));
    }
    let now = SystemTime::now();
    let not_after = now.checked_add(validity).ok_or_else(|| {
        PkiError::InvalidRequest("certificate validity overflows the clock".into())
    })?;
    params.not_before = now.checked_sub(BACKDATE).unwrap_or(now).into();
    params.not_after = not_after.into();
    Ok(())
}

fn common_name(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

/// A self-signed CA certificate for `key`, shaped like kubeadm's.
pub(super) fn self_signed_ca(cn: &str, key: &KeyPair) -> Result<CertificateDer<'static>, PkiError> {
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name(cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    set_validity(&mut params, CA_VALIDITY)?;
    let cert = params.self_signed(key).map_err(|e| PkiError::Generate {
        what: format!("CA certificate {cn:?}"),
        source: e,
    })?;
    Ok(cert.der().clone())
}

/// An issuer for signing leaves with an existing (loaded or just created) CA.
pub(super) fn issuer_for(
    path: &Path,
    ca: &LoadedCert,
    key: KeyPair,
) -> Result<Issuer<'static, KeyPair>, PkiError> {
    Issuer::from_ca_cert_der(&ca.der, key).map_err(|e| PkiError::Parse {
        path: path.to_path_buf(),
        reason: format!("cannot use as an issuer: {e}"),
    })
}

/// What a leaf certificate is for.
pub(super) struct LeafSpec<'a> {
    pub common_name: &'a str,
    pub organizations: &'a [&'a str],
    pub sans: Vec<SanType>,
    pub usage: ExtendedKeyUsagePurpose,
    pub validity: Duration,
}

/// Issues a leaf certificate with a fresh P-256 key, signed by `issuer`.
pub(super) fn issue_leaf(
    issuer: &Issuer<'static, KeyPair>,
    spec: &LeafSpec<'_>,
) -> Result<(CertificateDer<'static>, KeyPair), PkiError> {
    if spec.common_name.is_empty() {
        return Err(PkiError::InvalidRequest(
            "certificate common name must not be empty".into(),
        ));
    }
    let key = new_key()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name(spec.common_name);
    // Writes basicConstraints CA:FALSE and a subject key identifier, as kubeadm's leaves have.
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![spec.usage.clone()];
    params.subject_alt_names = spec.sans.clone();
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, spec.validity)?;
    let what = || format!("certificate for {:?}", spec.common_name);
    let cert = params
        .signed_by(&key, issuer)
        .map_err(|e| PkiError::Generate {
            what: what(),
            source: e,
        })?;
    let der = if spec.organizations.is_empty() {
        cert.der().clone()
    } else {
        // rcgen's DistinguishedName holds one value per attribute type, but Kubernetes reads
        // every O attribute as a group, so the subject is re-encoded here and re-signed.
        let subject = encode_subject(spec.organizations, spec.common_name);
        resign_with_subject(cert.der(), &subject, issuer.key())
            .map_err(|reason| PkiError::InvalidRequest(format!("{}: {reason}", what())))?
    };
    Ok((der, key))
}

// --- minimal DER writing for the subject rewrite ---

const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_OID: u8 = 0x06;
const TAG_UTF8: u8 = 0x0c;
const TAG_BIT_STRING: u8 = 0x03;
const OID_ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0a];
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

fn rdn(oid: &[u8], value: &str) -> Vec<u8> {
    let atv = [der_tlv(TAG_OID, oid), der_tlv(TAG_UTF8, value.as_bytes())].concat();
    der_tlv(TAG_SET, &der_tlv(TAG_SEQUENCE, &atv))
}

/// Subject `O=<org>...,CN=<cn>`, one attribute per RDN, in the order Go's crypto/x509 uses.
fn encode_subject(organizations: &[&str], cn: &str) -> Vec<u8> {
    let mut rdns: Vec<u8> = organizations
        .iter()
        .flat_map(|o| rdn(OID_ORGANIZATION, o))
        .collect();
    rdns.extend(rdn(OID_COMMON_NAME, cn));
    der_tlv(TAG_SEQUENCE, &rdns)
}

/// Offset of `part` inside `whole`, when `part` is a sub-slice of it.
fn offset_in(whole: &[u8], part: &[u8]) -> Option<usize> {
    let off = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (off.checked_add(part.len())? <= whole.len()).then_some(off)
}

/// Replaces the subject of a signed certificate and signs the new TBS with the same issuer key.
pub(super) fn resign_with_subject(
    der: &[u8],
    subject: &[u8],
    key: &KeyPair,
) -> Result<CertificateDer<'static>, String> {
    let cert = parse_der(der)?;
    let tbs = cert.tbs_certificate.as_ref();
    let old_subject = cert.subject().as_raw();
    let subj_off = offset_in(tbs, old_subject).ok_or("subject not inside TBS")?;
    let tbs_off = offset_in(der, tbs).ok_or("TBS not inside certificate")?;
    // The TBS content (after its tag and length) is what gets re-wrapped with a new length.
    let tbs_header = tbs.len() - cert_content_len(tbs)?;
    let mut content = Vec::with_capacity(tbs.len() + subject.len());
    content.extend_from_slice(&tbs[tbs_header..subj_off]);
    content.extend_from_slice(subject);
    content.extend_from_slice(&tbs[subj_off + old_subject.len()..]);
    let new_tbs = der_tlv(TAG_SEQUENCE, &content);

    let after_tbs = &der[tbs_off + tbs.len()..];
    let (rest, _) = AlgorithmIdentifier::from_der(after_tbs)
        .map_err(|e| format!("bad signature algorithm: {e}"))?;
    let sig_alg = &after_tbs[..after_tbs.len() - rest.len()];
    let signature = key
        .sign(&new_tbs)
        .map_err(|e| format!("signing failed: {e}"))?;
    let mut bits = Vec::with_capacity(signature.len() + 1);
    bits.push(0); // no unused bits
    bits.extend_from_slice(&signature);
    let body = [new_tbs, sig_alg.to_vec(), der_tlv(TAG_BIT_STRING, &bits)].concat();
    Ok(CertificateDer::from(der_tlv(TAG_SEQUENCE, &body)))
}

/// Length of the content of the DER element at the start of `tlv` (which spans all of `tlv`).
fn cert_content_len(tlv: &[u8]) -> Result<usize, String> {
    let first = *tlv.get(1).ok_or("truncated DER")?;
    let header = if first < 0x80 {
        2
    } else {
        2 + usize::from(first & 0x7f)
    };
    tlv.len()
        .checked_sub(header)
        .ok_or_else(|| "truncated DER".to_string())
}

// --- inspection ---

/// Seconds since the epoch until which the certificate is valid.
pub(super) fn not_after_unix(cert: &X509Certificate<'_>) -> i64 {
    cert.validity().not_after.timestamp()
}

pub(super) fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Why an existing serving cert must be replaced, or `None` when it is still good.
pub(super) fn serving_cert_problem(
    cert: &X509Certificate<'_>,
    key: &KeyPair,
    ca: &X509Certificate<'_>,
    dns_names: &[String],
    ips: &[IpAddr],
) -> Option<String> {
    if !key_matches(cert, key) {
        return Some("apiserver.key does not match apiserver.crt".into());
    }
    if cert.issuer().as_raw() != ca.subject().as_raw()
        || cert.verify_signature(Some(ca.public_key())).is_err()
    {
        return Some("it was not signed by the current CA".into());
    }
    let renew_at = now_unix().saturating_add(RENEW_BEFORE.as_secs() as i64);
    if not_after_unix(cert) < renew_at {
        return Some("it expires within 30 days".into());
    }
    let (have_dns, have_ips) = san_sets(cert);
    let missing: Vec<String> = dns_names
        .iter()
        .filter(|d| !have_dns.contains(&d.to_ascii_lowercase()))
        .cloned()
        .chain(
            ips.iter()
                .filter(|ip| !have_ips.contains(ip))
                .map(ToString::to_string),
        )
        .collect();
    if !missing.is_empty() {
        return Some(format!("it lacks SANs {}", missing.join(", ")));
    }
    None
}

/// DNS names (lowercased) and IP addresses in the certificate's subjectAltName.
pub(super) fn san_sets(cert: &X509Certificate<'_>) -> (HashSet<String>, HashSet<IpAddr>) {
    let mut dns = HashSet::new();
    let mut ips = HashSet::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(d) => {
                    dns.insert(d.to_ascii_lowercase());
                }
                GeneralName::IPAddress(b) => {
                    if let Ok(v4) = <[u8; 4]>::try_from(*b) {
                        ips.insert(IpAddr::from(v4));
                    } else if let Ok(v6) = <[u8; 16]>::try_from(*b) {
                        ips.insert(IpAddr::from(v6));
                    }
                }
                _ => {}
            }
        }
    }
    (dns, ips)
}

/// PEM text for DER bytes, 64 base64 characters per line as openssl and Go write it.
pub(super) fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
