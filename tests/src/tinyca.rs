//! A throwaway certificate authority for tests (envtest's `certs.TinyCA`): a CA and the
//! serving and client certificates it signs.

/// What envtest's `certs.TinyCA` makes: a CA, and leaf certificates it signs.
pub struct TinyCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    /// The CA certificate, PEM.
    pub pem: String,
}

impl TinyCa {
    pub fn new(name: &str) -> TinyCa {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("self-signed");
        TinyCa {
            pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A serving (`names` as SANs) or client (`CN=user, O=groups`) certificate and its key.
    pub fn issue(&self, names: &[&str], user: Option<(&str, &[&str])>) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("params");
        match user {
            Some((name, groups)) => {
                params
                    .distinguished_name
                    .push(rcgen::DnType::CommonName, name);
                for g in groups {
                    params
                        .distinguished_name
                        .push(rcgen::DnType::OrganizationName, *g);
                }
                params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            }
            None => {
                params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
            }
        }
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        (cert.pem(), key.serialize_pem())
    }
}
