//! Certificate requests: making a node's CSR (TLS bootstrap), reading one (the CSR approver and
//! signer's checks) and signing one with the cluster CA (the csrsigning controller).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose,
    SerialNumber,
};
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

use super::PkiError;
use super::certs;

/// What a certificate request asks for, as the approver and signer check it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CsrInfo {
    pub common_name: String,
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub emails: Vec<String>,
    pub uris: Vec<String>,
}

fn pem_block(pem: &[u8], label: &str) -> Result<Vec<u8>, String> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem).map_err(|e| format!("no PEM block found: {e}"))?;
    if block.label != label {
        return Err(format!(
            "PEM block type must be {label}, found {:?}",
            block.label
        ));
    }
    Ok(block.contents)
}

/// Upstream's validateCSR for a CertificateSigningRequest's `spec.request`: a PEM
/// `CERTIFICATE REQUEST` block holding a PKCS#10 request whose self-signature holds. The errors
/// read as Go's where it has one. A signature this build cannot check (curves or RSA sizes
/// `ring` lacks, such as P-521 or RSA keys under 2048 bits) is let through, as upstream would
/// verify it.
pub fn check_csr_request(pem: &[u8]) -> Result<(), String> {
    use x509_parser::error::X509Error;
    use x509_parser::public_key::PublicKey;
    const PEM_TYPE: &str = "PEM block type must be CERTIFICATE REQUEST";
    let der = match x509_parser::pem::parse_x509_pem(pem) {
        Ok((_, block)) if block.label == "CERTIFICATE REQUEST" => block.contents,
        _ => return Err(PEM_TYPE.into()),
    };
    let csr = match x509_parser::certification_request::X509CertificationRequest::from_der(&der) {
        Ok(([], csr)) => csr,
        Ok(_) => return Err("asn1: syntax error: trailing data".into()),
        Err(e) => return Err(format!("x509: malformed certificate request: {e}")),
    };
    let key = &csr.certification_request_info.subject_pki;
    match csr.verify_signature() {
        Ok(()) | Err(X509Error::SignatureUnsupportedAlgorithm) => Ok(()),
        Err(_) => match key.parsed() {
            Ok(PublicKey::RSA(rsa)) if rsa.key_size() >= 2048 => {
                Err("crypto/rsa: verification error".into())
            }
            Ok(PublicKey::EC(_)) => Err("x509: ECDSA verification failure".into()),
            _ if key.algorithm.algorithm.to_id_string() == "1.3.101.112" => {
                Err("x509: Ed25519 verification failure".into())
            }
            // A key or algorithm `ring` cannot check: upstream would, so it is not refused here.
            _ => Ok(()),
        },
    }
}

/// Parses a PEM `CERTIFICATE REQUEST` and checks its self-signature.
pub fn parse_csr_pem(pem: &[u8]) -> Result<CsrInfo, String> {
    let der = pem_block(pem, "CERTIFICATE REQUEST")?;
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&der)
        .map_err(|e| format!("not a valid certificate request: {e}"))?;
    csr.verify_signature()
        .map_err(|e| format!("the certificate request's signature is invalid: {e}"))?;
    let subject = &csr.certification_request_info.subject;
    let text = |v: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        v.as_str().map(str::to_string).unwrap_or_default()
    };
    let mut info = CsrInfo {
        common_name: subject
            .iter_common_name()
            .next()
            .map(text)
            .unwrap_or_default(),
        organizations: subject.iter_organization().map(text).collect(),
        ..CsrInfo::default()
    };
    for ext in csr.requested_extensions().into_iter().flatten() {
        if let ParsedExtension::SubjectAlternativeName(san) = ext {
            for name in &san.general_names {
                match name {
                    GeneralName::DNSName(d) => info.dns_names.push(d.to_string()),
                    GeneralName::RFC822Name(e) => info.emails.push(e.to_string()),
                    GeneralName::URI(u) => info.uris.push(u.to_string()),
                    GeneralName::IPAddress(b) => {
                        if let Ok(v4) = <[u8; 4]>::try_from(*b) {
                            info.ip_addresses.push(IpAddr::from(v4));
                        } else if let Ok(v6) = <[u8; 16]>::try_from(*b) {
                            info.ip_addresses.push(IpAddr::from(v6));
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(info)
}

/// A new P-256 key and a CSR for `CN=<common_name>, O=<organization>` (a kubelet's client
/// request: `system:node:<name>` in `system:nodes`). Returns (CSR PEM, key PEM).
pub fn new_client_csr(common_name: &str, organization: &str) -> Result<(String, String), PkiError> {
    new_csr(common_name, &[organization], Vec::new())
}

/// A new P-256 key and a CSR for `CN=<common_name>` with the (at most one: rcgen keeps one value
/// per attribute) organization and SANs. Returns (CSR PEM, key PEM).
pub fn new_csr(
    common_name: &str,
    organizations: &[&str],
    sans: Vec<rcgen::SanType>,
) -> Result<(String, String), PkiError> {
    let key = certs::new_key()?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    if let Some(o) = organizations.first() {
        dn.push(DnType::OrganizationName, *o);
    }
    dn.push(DnType::CommonName, common_name);
    params.distinguished_name = dn;
    params.subject_alt_names = sans;
    let csr = params
        .serialize_request(&key)
        .map_err(|e| PkiError::Generate {
            what: format!("certificate request for {common_name:?}"),
            source: e,
        })?;
    let pem = csr.pem().map_err(|e| PkiError::Generate {
        what: "certificate request PEM".into(),
        source: e,
    })?;
    Ok((pem, key.serialize_pem()))
}

/// Maps `certificates.k8s.io` usages onto key usages and extended key usages; an unknown one
/// is an error naming it.
fn usages(
    names: &[String],
) -> Result<(Vec<KeyUsagePurpose>, Vec<ExtendedKeyUsagePurpose>), PkiError> {
    let mut ku = Vec::new();
    let mut eku = Vec::new();
    for name in names {
        match name.as_str() {
            "signing" | "digital signature" => ku.push(KeyUsagePurpose::DigitalSignature),
            "content commitment" => ku.push(KeyUsagePurpose::ContentCommitment),
            "key encipherment" => ku.push(KeyUsagePurpose::KeyEncipherment),
            "key agreement" => ku.push(KeyUsagePurpose::KeyAgreement),
            "data encipherment" => ku.push(KeyUsagePurpose::DataEncipherment),
            "cert sign" => ku.push(KeyUsagePurpose::KeyCertSign),
            "crl sign" => ku.push(KeyUsagePurpose::CrlSign),
            "encipher only" => ku.push(KeyUsagePurpose::EncipherOnly),
            "decipher only" => ku.push(KeyUsagePurpose::DecipherOnly),
            "any" => eku.push(ExtendedKeyUsagePurpose::Any),
            "server auth" => eku.push(ExtendedKeyUsagePurpose::ServerAuth),
            "client auth" => eku.push(ExtendedKeyUsagePurpose::ClientAuth),
            "code signing" => eku.push(ExtendedKeyUsagePurpose::CodeSigning),
            "email protection" | "s/mime" => eku.push(ExtendedKeyUsagePurpose::EmailProtection),
            "timestamping" => eku.push(ExtendedKeyUsagePurpose::TimeStamping),
            "ocsp signing" => eku.push(ExtendedKeyUsagePurpose::OcspSigning),
            other => {
                return Err(PkiError::InvalidRequest(format!(
                    "unsupported usage {other:?}"
                )));
            }
        }
    }
    ku.dedup();
    eku.dedup();
    Ok((ku, eku))
}

/// Signs a PEM certificate request with the CA (`ca_cert_pem`, `ca_key_pem`: PKCS#8, or
/// PKCS#1 RSA as kubeadm writes keys) as upstream's local signer does: the request's subject
/// and SANs, the given usages, `validity` from now (backdated 5 minutes, capped at the CA's own
/// expiry). Returns the certificate PEM.
pub fn sign_csr(
    ca_cert_pem: &str,
    ca_key_pem: &str,
    csr_pem: &str,
    usage_names: &[String],
    validity: Duration,
) -> Result<String, PkiError> {
    let ca_path = Path::new("<cluster signing certificate>");
    let ca = certs::load_cert(ca_path, ca_cert_pem.as_bytes())?;
    let key = certs::load_key(
        Path::new("<cluster signing key>"),
        certs::pkcs1_to_pkcs8(ca_key_pem).as_bytes(),
    )?;
    let ca_parsed = ca.parsed().map_err(|reason| PkiError::Parse {
        path: PathBuf::from(ca_path),
        reason,
    })?;
    if !certs::key_matches(&ca_parsed, &key) {
        return Err(PkiError::KeyMismatch {
            cert: PathBuf::from("<cluster signing certificate>"),
            key: PathBuf::from("<cluster signing key>"),
        });
    }
    let ca_not_after = certs::not_after_unix(&ca_parsed);
    let issuer = certs::issuer_for(ca_path, &ca, key)?;

    let csr_der =
        pem_block(csr_pem.as_bytes(), "CERTIFICATE REQUEST").map_err(PkiError::InvalidRequest)?;
    let (_, parsed) = x509_parser::certification_request::X509CertificationRequest::from_der(
        &csr_der,
    )
    .map_err(|e| PkiError::InvalidRequest(format!("not a valid certificate request: {e}")))?;
    let raw_subject = parsed.certification_request_info.subject.as_raw().to_vec();
    let mut request = rcgen::CertificateSigningRequestParams::from_der(&csr_der.as_slice().into())
        .map_err(|e| PkiError::InvalidRequest(format!("certificate request: {e}")))?;
    let (ku, eku) = usages(usage_names)?;
    let params = &mut request.params;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = ku;
    params.extended_key_usages = eku;
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(SerialNumber::from_slice(&random_serial()?));
    // A certificate never outlives its CA.
    let ca_left = u64::try_from(ca_not_after.saturating_sub(certs::now_unix())).unwrap_or(0);
    certs::set_validity(params, validity.min(Duration::from_secs(ca_left)))?;
    let cert = request.signed_by(&issuer).map_err(|e| PkiError::Generate {
        what: "certificate from a request".into(),
        source: e,
    })?;
    // rcgen keeps one value per attribute type; Kubernetes reads every O as a group, so the
    // request's subject is carried over byte for byte.
    let der = certs::resign_with_subject(cert.der(), &raw_subject, issuer.key())
        .map_err(PkiError::InvalidRequest)?;
    Ok(certs::pem_encode("CERTIFICATE", &der))
}

fn random_serial() -> Result<[u8; 16], PkiError> {
    use ring::rand::SecureRandom as _;
    let mut serial = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut serial)
        .map_err(|_| PkiError::InvalidRequest("reading random bytes failed".into()))?;
    serial[0] &= 0x7f; // positive
    Ok(serial)
}

/// When a PEM certificate expires (seconds since the epoch), with its subject CN.
pub fn cert_expiry(pem: &[u8]) -> Result<(String, i64), String> {
    let der = pem_block(pem, "CERTIFICATE")?;
    let cert = certs::parse_der(&der)?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|c| c.as_str().ok())
        .unwrap_or_default()
        .to_string();
    Ok((cn, certs::not_after_unix(&cert)))
}

/// A PEM certificate's validity window (notBefore, notAfter) in seconds since the epoch, with
/// its subject CN.
pub fn cert_validity(pem: &[u8]) -> Result<(String, i64, i64), String> {
    let der = pem_block(pem, "CERTIFICATE")?;
    let cert = certs::parse_der(&der)?;
    let (cn, not_after) = cert_expiry(pem)?;
    Ok((cn, cert.validity().not_before.timestamp(), not_after))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca() -> (String, String) {
        let key = certs::new_key().expect("key");
        let der = certs::self_signed_ca("kubernetes", &key).expect("ca");
        (certs::pem_encode("CERTIFICATE", &der), key.serialize_pem())
    }

    #[test]
    fn node_csr_is_signed_with_its_subject_and_usages() {
        let (ca_pem, ca_key) = ca();
        let (csr, _key) = new_client_csr("system:node:n1", "system:nodes").expect("csr");
        let info = parse_csr_pem(csr.as_bytes()).expect("parse");
        assert_eq!(info.common_name, "system:node:n1");
        assert_eq!(info.organizations, vec!["system:nodes"]);
        let usages = vec!["digital signature".to_string(), "client auth".to_string()];
        let cert =
            sign_csr(&ca_pem, &ca_key, &csr, &usages, Duration::from_secs(3600)).expect("sign");
        let (_, block) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).expect("pem");
        let parsed = certs::parse_der(&block.contents).expect("der");
        let (user, groups) = super::super::client_identity(&block.contents).expect("identity");
        assert_eq!(user, "system:node:n1");
        assert_eq!(groups, vec!["system:nodes"]);
        let (_, ca_block) = x509_parser::pem::parse_x509_pem(ca_pem.as_bytes()).expect("pem");
        let ca_parsed = certs::parse_der(&ca_block.contents).expect("ca");
        assert!(
            parsed
                .verify_signature(Some(ca_parsed.public_key()))
                .is_ok()
        );
        let left = certs::not_after_unix(&parsed) - certs::now_unix();
        assert!((3500..=3600).contains(&left), "{left}");
        let eku = parsed.extended_key_usage().expect("ext").expect("eku");
        assert!(eku.value.client_auth && !eku.value.server_auth);
    }

    #[test]
    fn a_request_is_checked_as_upstream_validates_it() {
        use base64::Engine as _;
        let (csr, _) = new_client_csr("x", "y").expect("csr");
        assert_eq!(check_csr_request(csr.as_bytes()), Ok(()));
        let (ca_pem, _) = ca();
        for not_a_request in [&b"junk"[..], ca_pem.as_bytes(), b""] {
            assert_eq!(
                check_csr_request(not_a_request).expect_err("not a request"),
                "PEM block type must be CERTIFICATE REQUEST"
            );
        }
        let wrapped = |der: &[u8]| {
            let b64 = base64::engine::general_purpose::STANDARD.encode(der);
            format!(
                "-----BEGIN CERTIFICATE REQUEST-----\n{b64}\n-----END CERTIFICATE REQUEST-----\n"
            )
        };
        let err = check_csr_request(wrapped(b"\x30\x03\x02\x01").as_bytes()).expect_err("junk");
        assert!(
            err.starts_with("x509: malformed certificate request"),
            "{err}"
        );
        // The last byte of the DER is the signature's: flipping it breaks the self-signature.
        let (_, block) = x509_parser::pem::parse_x509_pem(csr.as_bytes()).expect("pem");
        let mut der = block.contents.clone();
        let last = der.len() - 1;
        der[last] ^= 1;
        assert_eq!(
            check_csr_request(wrapped(&der).as_bytes()),
            Err("x509: ECDSA verification failure".into())
        );
    }

    #[test]
    fn bad_requests_are_refused() {
        let (ca_pem, ca_key) = ca();
        assert!(parse_csr_pem(b"junk").is_err());
        assert!(parse_csr_pem(ca_pem.as_bytes()).is_err());
        let (csr, _) = new_client_csr("x", "y").expect("csr");
        let err = sign_csr(
            &ca_pem,
            &ca_key,
            &csr,
            &["bogus".into()],
            Duration::from_secs(60),
        )
        .expect_err("bad usage");
        assert!(err.to_string().contains("bogus"), "{err}");
        let (other_ca, _) = ca();
        assert!(sign_csr(&other_ca, &ca_key, &csr, &[], Duration::from_secs(60)).is_err());
    }
}
