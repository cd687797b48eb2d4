//! Token discovery as kubeadm does it: the `cluster-info` kubeconfig, its detached JWS
//! signatures (`jws-kubeconfig-<token-id>`, HS256 keyed by the token secret) and CA pinning by
//! the SHA-256 of the CA's SubjectPublicKeyInfo (`sha256:<hex>`). Also file discovery's
//! parsing: `--discovery-file PATH|https://URL`, a kubeconfig naming the server and its CA.

use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::api::Credentials;
use crate::kubeconfig::{Cluster, Context, Kubeconfig, NamedCluster, NamedContext};

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

/// Where `--discovery-file` (JoinConfiguration `discovery.file.kubeConfigPath`) points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileSource {
    Path(PathBuf),
    Url(String),
}

impl std::fmt::Display for FileSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileSource::Path(p) => write!(f, "{}", p.display()),
            FileSource::Url(u) => f.write_str(u),
        }
    }
}

/// kubeadm's `ValidateDiscoveryKubeConfigPath`: a value without a URL scheme is a file that
/// must exist; one with a scheme must be `https`.
pub fn file_source(value: &str) -> Result<FileSource, DiscoveryError> {
    let invalid = |why: &str| {
        DiscoveryError::Invalid(format!(
            "discovery.file.kubeConfigPath: Invalid value: {value:?}: {why}"
        ))
    };
    // A URL scheme as Go's url.Parse finds one: letters first, then letters, digits, + - .,
    // ended by ':' before any '/'.
    let scheme = value.split_once(':').map(|(s, _)| s).filter(|s| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    match scheme {
        None => {
            if value.is_empty() || !Path::new(value).exists() {
                return Err(invalid("not a valid HTTPS URL or a file on disk"));
            }
            Ok(FileSource::Path(PathBuf::from(value)))
        }
        Some(s) if s.eq_ignore_ascii_case("https") => Ok(FileSource::Url(value.to_string())),
        Some(_) => Err(invalid("if a URL is used, the scheme must be https")),
    }
}

/// What a discovery file says: the server, its CA and the credentials it carries (if any).
#[derive(Debug, Clone)]
pub struct DiscoveredFile {
    pub server: String,
    pub ca_pem: String,
    pub credentials: Credentials,
}

/// Reads a discovery kubeconfig as kubeadm's file discovery does: the current context's
/// cluster (or, without a usable current context, the first cluster), its CA embedded or read
/// from a file relative to `base_dir`, and the context's user credentials if it names one.
pub fn parse_discovery_file(text: &str, base_dir: &Path) -> Result<DiscoveredFile, DiscoveryError> {
    let malformed = |e: &dyn std::fmt::Display| {
        DiscoveryError::Invalid(format!("the provided kubeconfig file is malformed: {e}"))
    };
    let mut config = Kubeconfig::from_yaml(text).map_err(|e| malformed(&e))?;
    if config.clusters.is_empty() {
        return Err(DiscoveryError::Invalid(
            "the provided kubeconfig file must have at least one Cluster defined".into(),
        ));
    }
    let usable_context = config
        .contexts
        .iter()
        .find(|c| !config.current_context.is_empty() && c.name == config.current_context)
        .is_some_and(|c| {
            !c.context.cluster.is_empty()
                && config.clusters.iter().any(|k| k.name == c.context.cluster)
        });
    if !usable_context {
        // cluster-info's own shape: one (often unnamed) cluster, no contexts, no users.
        const NAME: &str = "k1s-discovery";
        if config.clusters[0].name.is_empty() {
            config.clusters[0].name = NAME.into();
        }
        let cluster = config.clusters[0].name.clone();
        config.contexts.push(NamedContext {
            name: NAME.into(),
            context: Context {
                cluster,
                ..Context::default()
            },
        });
        config.current_context = NAME.into();
    }
    let ctx = config.resolve(None, base_dir).map_err(|e| malformed(&e))?;
    let ca = ctx.ca_pem.ok_or_else(|| {
        DiscoveryError::Invalid(
            "the discovery file's cluster has no certificate-authority-data (or certificate-authority): k1s needs the cluster CA in the file to trust the API server".into(),
        )
    })?;
    let ca_pem = String::from_utf8(ca)
        .ok()
        .filter(|pem| ca_cert_hash_pem(pem).is_ok())
        .ok_or_else(|| {
            DiscoveryError::Invalid(
                "the discovery file's certificate authority is not a PEM certificate".into(),
            )
        })?;
    let text = |b: Vec<u8>, what: &str| {
        String::from_utf8(b).map_err(|_| {
            DiscoveryError::Invalid(format!("the discovery file's {what} is not PEM text"))
        })
    };
    let credentials = match (ctx.token, ctx.client_cert_pem, ctx.client_key_pem) {
        (Some(t), _, _) => Credentials::Token(t),
        (None, Some(cert), Some(key)) => Credentials::ClientCert {
            cert_pem: text(cert, "client certificate")?,
            key_pem: text(key, "client key")?,
        },
        (None, None, None) => Credentials::Anonymous,
        (None, _, _) => {
            return Err(DiscoveryError::Invalid(
                "couldn't read authentication info from the given kubeconfig file: a client certificate needs its key and a key its certificate".into(),
            ));
        }
    };
    Ok(DiscoveredFile {
        server: ctx.server,
        ca_pem,
        credentials,
    })
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
    fn discovery_files() {
        let ca = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_pem = params.self_signed(&ca).expect("ca").pem();
        let ca_b64 = base64::engine::general_purpose::STANDARD.encode(&ca_pem);
        let dir = Path::new("/nonexistent-k1s");
        // cluster-info's shape: one unnamed cluster, no context, no user.
        let info = cluster_info_kubeconfig("https://10.0.0.1:6443", &ca_pem).expect("yaml");
        let f = parse_discovery_file(&info, dir).expect("cluster-info");
        assert_eq!(f.server, "https://10.0.0.1:6443");
        assert_eq!(f.ca_pem, ca_pem);
        assert!(matches!(f.credentials, Credentials::Anonymous));
        // The current context picks the cluster and the user among several.
        let two = format!(
            "clusters:\n- name: a\n  cluster: {{server: 'https://a:1', certificate-authority-data: {ca_b64}}}\n- name: b\n  cluster: {{server: 'https://b:2', certificate-authority-data: {ca_b64}}}\nusers:\n- name: u\n  user: {{token: abcdef.0123456789abcdef}}\ncontexts:\n- name: x\n  context: {{cluster: b, user: u}}\ncurrent-context: x\n"
        );
        let f = parse_discovery_file(&two, dir).expect("two clusters");
        assert_eq!(f.server, "https://b:2");
        assert!(
            matches!(f.credentials, Credentials::Token(ref t) if t == "abcdef.0123456789abcdef")
        );
        // Refusals name the problem.
        let err = |text: &str| parse_discovery_file(text, dir).expect_err(text).to_string();
        assert!(err("clusters: []").contains("at least one Cluster"));
        assert!(err("clusters: [: x").contains("malformed"));
        assert!(
            err("clusters:\n- name: a\n  cluster: {server: 'https://a:1'}\n")
                .contains("no certificate-authority-data")
        );
        let half = format!(
            "clusters:\n- name: a\n  cluster: {{server: 'https://a:1', certificate-authority-data: {ca_b64}}}\nusers:\n- name: u\n  user: {{client-certificate-data: {ca_b64}}}\ncontexts:\n- name: x\n  context: {{cluster: a, user: u}}\ncurrent-context: x\n"
        );
        assert!(err(&half).contains("couldn't read authentication info"));
        // Paths: a file must exist; a URL must be https.
        assert!(matches!(file_source("https://h/x"), Ok(FileSource::Url(_))));
        assert!(file_source("/nonexistent-k1s/x").is_err());
        assert!(file_source("ftp://h/x").is_err());
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
