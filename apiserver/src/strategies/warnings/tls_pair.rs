//! The checks of Go's `tls.X509KeyPair` that a `kubernetes.io/tls` Secret's warning reports:
//! PEM blocks of the right types, a certificate that parses, a private key that parses and
//! matches the certificate's public key, each failure with Go's message.

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer};
use x509_parser::pem::Pem;

/// The PEM blocks of `input` as Go's `pem.Decode` finds them one after the other (text around
/// them skipped); a malformed block ends the search.
fn blocks(input: &[u8]) -> Vec<Pem> {
    Pem::iter_from_buffer(input).map_while(Result::ok).collect()
}

/// Go's `%v` of a list of strings.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// The error `tls.X509KeyPair(cert, key)` returns, if any.
pub fn x509_key_pair_error(cert_pem: &[u8], key_pem: &[u8]) -> Option<String> {
    let (certs, skipped): (Vec<Pem>, Vec<Pem>) = blocks(cert_pem)
        .into_iter()
        .partition(|b| b.label == "CERTIFICATE");
    let skipped: Vec<String> = skipped.into_iter().map(|b| b.label).collect();
    let Some(cert) = certs.first() else {
        return Some(match skipped.as_slice() {
            [] => "tls: failed to find any PEM data in certificate input".into(),
            [one] if one.ends_with("PRIVATE KEY") => {
                "tls: failed to find certificate PEM data in certificate input, but did find a \
                 private key; PEM inputs may have been switched"
                    .into()
            }
            _ => format!(
                "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after \
                 skipping PEM blocks of the following types: {}",
                go_list(&skipped)
            ),
        });
    };
    let mut skipped = Vec::new();
    let mut key = None;
    for b in blocks(key_pem) {
        if b.label == "PRIVATE KEY" || b.label.ends_with(" PRIVATE KEY") {
            key = Some(b);
            break;
        }
        skipped.push(b.label);
    }
    let Some(key) = key else {
        return Some(match skipped.as_slice() {
            [] => "tls: failed to find any PEM data in key input".into(),
            [one] if one == "CERTIFICATE" => {
                "tls: found a certificate rather than a key in the PEM for the private key".into()
            }
            _ => format!(
                "tls: failed to find PEM block with type ending in \"PRIVATE KEY\" in key input \
                 after skipping PEM blocks of the following types: {}",
                go_list(&skipped)
            ),
        });
    };
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(&cert.contents) else {
        // Go's x509 has several messages; this is the one for DER that does not parse.
        return Some("x509: malformed certificate".into());
    };
    // Go's parsePrivateKey: PKCS #1, then PKCS #8, then SEC 1, whatever the block's label.
    let der = &key.contents;
    let candidates = [
        PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(der.as_slice())),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der.as_slice())),
        PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(der.as_slice())),
    ];
    let Some(signing) = candidates
        .iter()
        .find_map(|k| rustls::crypto::ring::sign::any_supported_type(k).ok())
    else {
        return Some("tls: failed to parse private key".into());
    };
    let spki = &parsed.tbs_certificate.subject_pki;
    let cert_alg = match spki.algorithm.algorithm.to_id_string().as_str() {
        "1.2.840.113549.1.1.1" => rustls::SignatureAlgorithm::RSA,
        "1.2.840.10045.2.1" => rustls::SignatureAlgorithm::ECDSA,
        "1.3.101.112" => rustls::SignatureAlgorithm::ED25519,
        _ => return Some("tls: unknown public key algorithm".into()),
    };
    if signing.algorithm() != cert_alg {
        return Some("tls: private key type does not match public key type".into());
    }
    match signing.public_key() {
        Some(key_spki) if key_spki.as_ref() != spki.raw => {
            Some("tls: private key does not match public key".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::x509_key_pair_error as check;

    fn pair(alg: &'static rcgen::SignatureAlgorithm) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(alg).expect("key");
        let cert = rcgen::CertificateParams::new(vec!["a.example".into()])
            .and_then(|p| p.self_signed(&key))
            .expect("certificate");
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn matching_pairs_pass_and_mismatches_get_gos_messages() {
        let (cert, key) = pair(&rcgen::PKCS_ECDSA_P256_SHA256);
        assert_eq!(check(cert.as_bytes(), key.as_bytes()), None);
        let (_, other_key) = pair(&rcgen::PKCS_ECDSA_P256_SHA256);
        assert_eq!(
            check(cert.as_bytes(), other_key.as_bytes()).as_deref(),
            Some("tls: private key does not match public key")
        );
        let (_, ed_key) = pair(&rcgen::PKCS_ED25519);
        assert_eq!(
            check(cert.as_bytes(), ed_key.as_bytes()).as_deref(),
            Some("tls: private key type does not match public key type")
        );
    }

    #[test]
    fn pem_problems_get_gos_messages() {
        let (cert, key) = pair(&rcgen::PKCS_ECDSA_P256_SHA256);
        let want = |c: &str, k: &str| check(c.as_bytes(), k.as_bytes()).expect("an error");
        assert_eq!(
            want("", &key),
            "tls: failed to find any PEM data in certificate input"
        );
        assert_eq!(
            want(&key, &cert),
            "tls: failed to find certificate PEM data in certificate input, but did find a \
             private key; PEM inputs may have been switched"
        );
        let odd = "-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n";
        assert_eq!(
            want(&format!("{odd}{odd}"), &key),
            "tls: failed to find \"CERTIFICATE\" PEM block in certificate input after skipping \
             PEM blocks of the following types: [FOO FOO]"
        );
        assert_eq!(
            want(&cert, "junk"),
            "tls: failed to find any PEM data in key input"
        );
        assert_eq!(
            want(&cert, &cert),
            "tls: found a certificate rather than a key in the PEM for the private key"
        );
        let bad_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert_eq!(want(&cert, bad_key), "tls: failed to parse private key");
        let bad_cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert_eq!(want(bad_cert, &key), "x509: malformed certificate");
    }
}
