//! Token discovery as kubeadm does it: the `cluster-info` kubeconfig, its detached JWS
//! signatures (`jws-kubeconfig-<token-id>`, HS256 keyed by the token secret) and CA pinning by
//! the SHA-256 of the CA's SubjectPublicKeyInfo (`sha256:<hex>`).

use base64::Engine as _;

use crate::kubeconfig::{Cluster, Kubeconfig, NamedCluster};

/// The ConfigMap `kube-public/cluster-info`.
pub const CLUSTER_INFO_NAMESPACE: &str = "kube-public";
pub const CLUSTER_INFO_NAME: &str = "cluster-info";
/// Its data key holding the kubeconfig.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// Prefix of the signature keys: `jws-kubeconfig-<token-id>`.
pub const JWS_KEY_PREFIX: &str = "jws-kubeconfig-";

/// Problems with a pin, a signature or the cluster-info contents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    #[error("invalid hash {0:?}, expected \"format:hex-value\" (e.g. sha256:<64 hex digits>)")]
    PinFormat(String),
    #[error("unknown hash type {0:?} in {1:?}; only sha256 is supported")]
    PinType(String, String),
    #[error("invalid hash {0:?}: {1}")]
    PinValue(String, String),
    #[error("{0}")]
    Invalid(String),
}

/// `sha256:<hex>` of a certificate's SubjectPublicKeyInfo (DER), kubeadm's CA pin.
pub fn ca_cert_hash(cert_der: &[u8]) -> Result<String, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der)
        .map_err(|e| format!("not a valid X.509 certificate: {e}"))?;
    let digest = ring::digest::digest(&ring::digest::SHA256, cert.public_key().raw);
    Ok(format!("sha256:{}", hex(digest.as_ref())))
}

/// The CA pin of the first certificate in a PEM bundle.
pub fn ca_cert_hash_pem(pem: &str) -> Result<String, String> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|e| format!("no PEM certificate found: {e}"))?;
    ca_cert_hash(&block.contents)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a `--discovery-token-ca-cert-hash` value; returns it normalized (lowercase hex).
pub fn parse_pin(pin: &str) -> Result<String, DiscoveryError> {
    let (kind, value) = pin
        .split_once(':')
        .ok_or_else(|| DiscoveryError::PinFormat(pin.to_string()))?;
    if !kind.eq_ignore_ascii_case("sha256") {
        return Err(DiscoveryError::PinType(kind.to_string(), pin.to_string()));
    }
    if !value.bytes().all(|b| b.is_ascii_hexdigit()) || !value.len().is_multiple_of(2) {
        return Err(DiscoveryError::PinValue(
            pin.to_string(),
            "the value is not a hex string".into(),
        ));
    }
    if value.len() != 64 {
        return Err(DiscoveryError::PinValue(
            pin.to_string(),
            format!(
                "expected a 32 byte SHA-256 hash, found {} bytes",
                value.len() / 2
            ),
        ));
    }
    Ok(format!("sha256:{}", value.to_ascii_lowercase()))
}

fn b64url(data: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

/// A detached JWS (`<header>..<signature>`) of `content`, HS256 keyed by the token secret with
/// the token id as `kid`, byte for byte what k8s.io/cluster-bootstrap's
/// `ComputeDetachedSignature` produces.
pub fn compute_detached_signature(content: &str, token_id: &str, token_secret: &str) -> String {
    // go-jose marshals the protected header as a Go map: keys sorted.
    let header = serde_json::json!({ "alg": "HS256", "kid": token_id }).to_string();
    let protected = b64url(header.as_bytes());
    let signing_input = format!("{protected}.{}", b64url(content.as_bytes()));
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token_secret.as_bytes());
    let tag = ring::hmac::sign(&key, signing_input.as_bytes());
    format!("{protected}..{}", b64url(tag.as_ref()))
}

/// Whether `signature` is the detached JWS of `content` for this token (constant-time).
pub fn detached_signature_is_valid(
    signature: &str,
    content: &str,
    token_id: &str,
    token_secret: &str,
) -> bool {
    let expected = compute_detached_signature(content, token_id, token_secret);
    // Constant time over the whole length: no early exit on the first differing byte.
    expected.len() == signature.len()
        && expected
            .bytes()
            .zip(signature.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The kubeconfig kubeadm publishes in `cluster-info`: one unnamed cluster, no users.
pub fn cluster_info_kubeconfig(server_url: &str, ca_pem: &str) -> Result<String, String> {
    let config = Kubeconfig {
        api_version: "v1".into(),
        kind: "Config".into(),
        clusters: vec![NamedCluster {
            name: String::new(),
            cluster: Cluster {
                server: server_url.into(),
                certificate_authority_data: Some(
                    base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes()),
                ),
                ..Cluster::default()
            },
        }],
        ..Kubeconfig::default()
    };
    config.to_yaml().map_err(|e| e.to_string())
}

/// The server URL and CA (PEM) of the first cluster in a cluster-info kubeconfig.
pub fn parse_cluster_info(kubeconfig: &str) -> Result<(String, String), DiscoveryError> {
    let config = Kubeconfig::from_yaml(kubeconfig).map_err(|e| {
        DiscoveryError::Invalid(format!("the cluster-info kubeconfig is invalid: {e}"))
    })?;
    let cluster = config.clusters.first().ok_or_else(|| {
        DiscoveryError::Invalid("the cluster-info kubeconfig has no cluster".into())
    })?;
    let ca_b64 = cluster
        .cluster
        .certificate_authority_data
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            DiscoveryError::Invalid(
                "the cluster-info kubeconfig has no certificate-authority-data".into(),
            )
        })?;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(ca_b64)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            DiscoveryError::Invalid(
                "the cluster-info certificate-authority-data is not base64 PEM".into(),
            )
        })?;
    if cluster.cluster.server.is_empty() {
        return Err(DiscoveryError::Invalid(
            "the cluster-info kubeconfig has no server".into(),
        ));
    }
    Ok((cluster.cluster.server.clone(), ca))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jws_matches_cluster_bootstrap() {
        // k8s.io/cluster-bootstrap/token/jws/jws_test.go's vector.
        let content = "Hello from the other side. I must have called a thousand times.";
        let sig = compute_detached_signature(content, "joshua", "my voice is my passcode");
        assert_eq!(
            sig,
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"
        );
        assert!(detached_signature_is_valid(
            &sig,
            content,
            "joshua",
            "my voice is my passcode"
        ));
        assert!(!detached_signature_is_valid(
            &sig,
            content,
            "joshua",
            "my voice is my passcodf"
        ));
        assert!(!detached_signature_is_valid(
            &sig,
            "other",
            "joshua",
            "my voice is my passcode"
        ));
    }

    #[test]
    fn pins() {
        let good = format!("sha256:{}", "AB".repeat(32));
        assert_eq!(parse_pin(&good), Ok(format!("sha256:{}", "ab".repeat(32))));
        assert!(matches!(
            parse_pin("abcd"),
            Err(DiscoveryError::PinFormat(_))
        ));
        assert!(matches!(
            parse_pin("md5:abcd"),
            Err(DiscoveryError::PinType(..))
        ));
        let truncated = parse_pin(&format!("sha256:{}", "ab".repeat(20))).expect_err("short");
        assert!(
            truncated.to_string().contains("found 20 bytes"),
            "{truncated}"
        );
        assert!(matches!(
            parse_pin("sha256:zz"),
            Err(DiscoveryError::PinValue(..))
        ));
    }

    #[test]
    fn cluster_info_round_trip() {
        let ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let text = cluster_info_kubeconfig("https://10.0.0.1:6443", ca).expect("yaml");
        let (server, got) = parse_cluster_info(&text).expect("parse");
        assert_eq!(server, "https://10.0.0.1:6443");
        assert_eq!(got, ca);
        assert!(parse_cluster_info("clusters: []").is_err());
    }
}
