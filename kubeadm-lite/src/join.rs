//! `k1s join`: token discovery (cluster-info fetched anonymously, its JWS signature checked with
//! the token, the CA pinned by its public-key hash) or file discovery (a kubeconfig file or
//! https URL naming the server and CA, checked by reading cluster-info through it), then TLS
//! bootstrap (a node client CSR submitted with the bootstrap token, approved and signed by the
//! controllers) and the node's kubeconfig written. Every check runs before anything is written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

use crate::api::{self, ApiError, Credentials};
use crate::discovery;
use crate::fsutil;
use crate::kubeconfig::Kubeconfig;
use crate::pki;
use crate::token;

/// The signer of kubelet client certificates.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

/// What `k1s join` was told.
#[derive(Debug, Clone)]
pub struct JoinOptions {
    /// `host:port` of the API server (token discovery).
    pub endpoint: String,
    /// The discovery token (token discovery).
    pub token: String,
    /// The token TLS bootstrap authenticates with; empty: the discovery token, or with file
    /// discovery the file's own credentials.
    pub tls_bootstrap_token: String,
    /// `--discovery-file PATH|https://URL`: file discovery instead of token discovery.
    pub discovery_file: Option<String>,
    pub ca_cert_hashes: Vec<String>,
    pub unsafe_skip_ca_verification: bool,
    pub node_name: String,
    /// Where `kubelet.conf` and `pki/ca.crt` go.
    pub data_dir: PathBuf,
    /// How long discovery keeps trying (an unreachable server, a token not yet signed).
    pub discovery_timeout: Duration,
    /// How long to wait for the certificate.
    pub tls_bootstrap_timeout: Duration,
}

/// What join wrote.
#[derive(Debug, Clone)]
pub struct Joined {
    pub kubeconfig: PathBuf,
    pub ca_file: PathBuf,
    pub server_url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Discovery(String),
    #[error("{0}")]
    Bootstrap(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `kubelet.conf` under the data dir.
pub fn kubelet_conf_path(data_dir: &Path) -> PathBuf {
    data_dir.join("kubelet.conf")
}

/// How join discovers the cluster, from checked flags.
#[derive(Debug)]
enum Plan {
    Token {
        id: String,
        secret: String,
        pins: Vec<String>,
    },
    File(discovery::FileSource),
}

/// Checks the flags (kubeadm's ValidateDiscovery and preflight file checks).
fn validate(opts: &JoinOptions) -> Result<Plan, JoinError> {
    if !opts.tls_bootstrap_token.is_empty() {
        token::parse_token(&opts.tls_bootstrap_token).map_err(|e| {
            JoinError::Invalid(format!(
                "discovery.tlsBootstrapToken: Invalid value: the bootstrap token is invalid: {e}"
            ))
        })?;
    }
    let plan = match &opts.discovery_file {
        Some(file) => {
            if !opts.endpoint.trim().is_empty()
                || !opts.token.is_empty()
                || !opts.ca_cert_hashes.is_empty()
                || opts.unsafe_skip_ca_verification
            {
                return Err(JoinError::Invalid(
                    "discovery: Invalid value: \"\": bootstrapToken and file cannot both be set (--discovery-file goes without the API server endpoint argument, --discovery-token, --discovery-token-ca-cert-hash and --discovery-token-unsafe-skip-ca-verification; --token or --tls-bootstrap-token give the TLS bootstrap token)".into(),
                ));
            }
            Plan::File(discovery::file_source(file).map_err(|e| JoinError::Invalid(e.to_string()))?)
        }
        None => {
            if opts.endpoint.trim().is_empty() {
                return Err(JoinError::Invalid(
                    "the API server endpoint (HOST:PORT) is required".into(),
                ));
            }
            let (id, secret) =
                token::parse_token(&opts.token).map_err(|e| JoinError::Invalid(e.to_string()))?;
            let pins = opts
                .ca_cert_hashes
                .iter()
                .map(|p| discovery::parse_pin(p).map_err(|e| JoinError::Invalid(e.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            if pins.is_empty() && !opts.unsafe_skip_ca_verification {
                return Err(JoinError::Invalid(
                    "using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue".into(),
                ));
            }
            Plan::Token { id, secret, pins }
        }
    };
    if opts.node_name.is_empty() {
        return Err(JoinError::Invalid("the node name must not be empty".into()));
    }
    let kubelet_conf = kubelet_conf_path(&opts.data_dir);
    if kubelet_conf.exists() {
        return Err(JoinError::Invalid(format!(
            "[preflight] [ERROR FileAvailable--kubelet.conf]: {} already exists; this machine has joined already (run 'k1s reset' first)",
            kubelet_conf.display()
        )));
    }
    Ok(plan)
}

/// The outcome of discovery: a trusted server and what TLS bootstrap authenticates with.
#[derive(Debug)]
pub struct Discovered {
    pub server: String,
    pub ca_pem: String,
    pub bootstrap: Credentials,
}

/// Discovery, then a client of the discovered server with the TLS bootstrap credentials.
async fn discover_and_connect(
    opts: &JoinOptions,
    plan: &Plan,
) -> Result<(Discovered, kube::Client), JoinError> {
    let found = discover_any(opts, plan).await?;
    let client = api::client_for(&found.server, Some(&found.ca_pem), &found.bootstrap)
        .await
        .map_err(|e| JoinError::Bootstrap(e.to_string()))?;
    Ok((found, client))
}

/// Runs the discovery `plan` (either kind) and picks the TLS bootstrap credentials.
async fn discover_any(opts: &JoinOptions, plan: &Plan) -> Result<Discovered, JoinError> {
    let tls_token = (!opts.tls_bootstrap_token.is_empty())
        .then(|| Credentials::Token(opts.tls_bootstrap_token.clone()));
    match plan {
        Plan::Token { id, secret, pins } => {
            let (server, ca_pem) = discover(opts, id, secret, pins).await?;
            println!(
                "[discovery] Cluster info signature and contents are valid and {} found. Will use API Server {:?}",
                if opts.unsafe_skip_ca_verification {
                    "no TLS pinning was"
                } else {
                    "TLS certificate validates against pinned roots"
                },
                server
            );
            Ok(Discovered {
                server,
                ca_pem,
                bootstrap: tls_token.unwrap_or_else(|| Credentials::Token(opts.token.clone())),
            })
        }
        Plan::File(source) => {
            let file = discover_file(source, opts.discovery_timeout).await?;
            let bootstrap = match (tls_token, file.credentials) {
                (Some(t), _) => t,
                (None, Credentials::Anonymous) => {
                    return Err(JoinError::Invalid(format!(
                        "the discovery file {source} holds no credentials for the TLS bootstrap: pass --tls-bootstrap-token (or --token), or give the file's user a token or client certificate"
                    )));
                }
                (None, c) => c,
            };
            Ok(Discovered {
                server: file.server,
                ca_pem: file.ca_pem,
                bootstrap,
            })
        }
    }
}

/// File discovery (kubeadm's discovery/file and discovery/https): load the kubeconfig, then
/// read `cluster-info` through it until the timeout, which proves the server holds a
/// certificate the file's CA signed. A 403 (cluster-info not public) is trusted as kubeadm
/// does; a server that differs from cluster-info's is a warning.
pub async fn discover_file(
    source: &discovery::FileSource,
    timeout: Duration,
) -> Result<discovery::DiscoveredFile, JoinError> {
    let (text, base_dir) = match source {
        discovery::FileSource::Path(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                JoinError::Discovery(format!(
                    "couldn't read the discovery file {}: {e}",
                    path.display()
                ))
            })?;
            let base = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            (text, base)
        }
        discovery::FileSource::Url(url) => {
            let text = api::https_get(url).await.map_err(|e| {
                JoinError::Discovery(format!("couldn't fetch the discovery file: {e}"))
            })?;
            (text, PathBuf::from("."))
        }
    };
    let file = discovery::parse_discovery_file(&text, &base_dir)
        .map_err(|e| JoinError::Discovery(format!("discovery file {source}: {e}")))?;
    let client = api::client_for(&file.server, Some(&file.ca_pem), &file.credentials)
        .await
        .map_err(|e| JoinError::Discovery(e.to_string()))?;
    println!(
        "[discovery] Created cluster-info discovery client, requesting info from {:?}",
        file.server
    );
    let cms: Api<ConfigMap> = Api::namespaced(client, discovery::CLUSTER_INFO_NAMESPACE);
    let deadline = Instant::now() + timeout;
    let cluster_info = loop {
        match cms.get(discovery::CLUSTER_INFO_NAME).await {
            Ok(cm) => break Some(cm),
            Err(kube::Error::Api(s)) if s.code == 403 => {
                println!(
                    "[discovery] WARNING: Could not access the cluster-info ConfigMap for refreshing the cluster-info information, but the TLS cert is valid so proceeding..."
                );
                break None;
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(JoinError::Discovery(format!(
                    "couldn't validate the identity of the API Server: Abort reading the cluster-info ConfigMap after timeout of {timeout:?}: {e}"
                )));
            }
            Err(e) => {
                tracing::debug!(error = %e, "file discovery: retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    let published = cluster_info
        .and_then(|cm| cm.data)
        .and_then(|mut d| d.remove(discovery::KUBECONFIG_KEY));
    match published.map(|k| discovery::parse_cluster_info(&k)) {
        Some(Ok((server, _))) if server != file.server => println!(
            "[discovery] WARNING: the API Server endpoint {:?} in use is different from the endpoint {server:?} which defined in the cluster-info ConfigMap",
            file.server
        ),
        Some(Err(e)) => println!(
            "[discovery] The cluster-info ConfigMap isn't set up properly ({e}), but the TLS cert is valid so proceeding..."
        ),
        _ => {}
    }
    println!(
        "[discovery] The API Server {:?} is trusted by the CA in the discovery file {source}",
        file.server
    );
    Ok(file)
}

fn endpoint_url(endpoint: &str) -> String {
    if endpoint.starts_with("https://") {
        endpoint.trim_end_matches('/').to_string()
    } else {
        format!("https://{endpoint}")
    }
}

/// Token discovery: returns the verified (server URL, CA PEM).
pub async fn discover(
    opts: &JoinOptions,
    id: &str,
    secret: &str,
    pins: &[String],
) -> Result<(String, String), JoinError> {
    let url = endpoint_url(&opts.endpoint);
    let deadline = Instant::now() + opts.discovery_timeout;
    let client = api::client_for(&url, None, &Credentials::Anonymous)
        .await
        .map_err(|e| JoinError::Discovery(e.to_string()))?;
    let cms: Api<ConfigMap> = Api::namespaced(client, discovery::CLUSTER_INFO_NAMESPACE);
    let sig_key = format!("{}{id}", discovery::JWS_KEY_PREFIX);
    // Retried until the deadline: the server may still be starting, and a token just created
    // is signed by the bootstrapsigner controller a moment later.
    let (kubeconfig, signature) = loop {
        let attempt = match cms.get(discovery::CLUSTER_INFO_NAME).await {
            Ok(cm) => {
                let data = cm.data.unwrap_or_default();
                match (data.get(discovery::KUBECONFIG_KEY), data.get(&sig_key)) {
                    (Some(k), Some(s)) => Ok((k.clone(), s.clone())),
                    (None, _) => Err(format!(
                        "there is no {:?} key in the {:?} ConfigMap",
                        discovery::KUBECONFIG_KEY,
                        discovery::CLUSTER_INFO_NAME
                    )),
                    (_, None) => Err(format!(
                        "there is no JWS signed token in the cluster-info ConfigMap. This token id {id:?} is invalid for this cluster, can't connect"
                    )),
                }
            }
            Err(e) => Err(format!(
                "failed to request the cluster-info ConfigMap from {url}: {e}"
            )),
        };
        match attempt {
            Ok(found) => break found,
            Err(e) if Instant::now() >= deadline => {
                return Err(JoinError::Discovery(format!(
                    "couldn't validate the identity of the API Server: {e} (gave up after {:?})",
                    opts.discovery_timeout
                )));
            }
            Err(e) => {
                tracing::debug!(error = %e, "discovery: retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    if !discovery::detached_signature_is_valid(&signature, &kubeconfig, id, secret) {
        return Err(JoinError::Discovery(
            "failed to verify JWS signature of received cluster info object, can't trust this API Server".into(),
        ));
    }
    let (server, ca_pem) = discovery::parse_cluster_info(&kubeconfig)
        .map_err(|e| JoinError::Discovery(e.to_string()))?;
    let hash = discovery::ca_cert_hash_pem(&ca_pem).map_err(|e| {
        JoinError::Discovery(format!(
            "the CA in the cluster-info ConfigMap is invalid: {e}"
        ))
    })?;
    if !opts.unsafe_skip_ca_verification && !pins.contains(&hash) {
        return Err(JoinError::Discovery(format!(
            "cluster CA found in cluster-info ConfigMap is invalid: none of the public keys \"{hash}\" are pinned"
        )));
    }
    Ok((server, ca_pem))
}

/// What a control-plane join needs from the cluster, all fetched (with the bootstrap token)
/// before anything is written.
#[derive(Debug)]
pub struct ControlPlaneJoin {
    pub server: String,
    pub ca_pem: String,
    /// kubeadm-config's ClusterConfiguration.
    pub cluster_config: serde_json::Value,
    /// etcd.external.endpoints: the shared store the new control plane serves from.
    pub etcd_endpoints: Vec<String>,
    /// The decrypted shared certificates and keys (kubeadm-certs).
    pub files: Vec<(String, Vec<u8>)>,
}

/// `join --control-plane --certificate-key K` up to the point of writing: discovery, the
/// cluster's ClusterConfiguration (which must name a shared etcd), and the kubeadm-certs Secret
/// decrypted with the key.
pub async fn prepare_control_plane(
    opts: &JoinOptions,
    certificate_key: &str,
) -> Result<ControlPlaneJoin, JoinError> {
    crate::copycerts::parse_key(certificate_key).map_err(|e| JoinError::Invalid(e.to_string()))?;
    let plan = validate(opts)?;
    let admin = opts.data_dir.join("admin.conf");
    if admin.exists() {
        return Err(JoinError::Invalid(format!(
            "[preflight] [ERROR FileAvailable--admin.conf]: {} already exists (run 'k1s reset' first)",
            admin.display()
        )));
    }
    println!("[preflight] Running pre-flight checks");
    let (Discovered { server, ca_pem, .. }, client) = discover_and_connect(opts, &plan).await?;
    println!(
        "[preflight] Reading configuration from the \"kubeadm-config\" ConfigMap in namespace \"kube-system\"..."
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let cm = cms.get("kubeadm-config").await.map_err(|e| {
        JoinError::Bootstrap(format!("unable to fetch the kubeadm-config ConfigMap: {e}"))
    })?;
    let text = cm
        .data
        .unwrap_or_default()
        .remove("ClusterConfiguration")
        .ok_or_else(|| JoinError::Bootstrap("kubeadm-config has no ClusterConfiguration".into()))?;
    let cluster_config: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| JoinError::Bootstrap(format!("kubeadm-config's ClusterConfiguration: {e}")))?;
    let etcd_endpoints: Vec<String> = cluster_config
        .pointer("/etcd/external/endpoints")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if etcd_endpoints.is_empty() {
        return Err(JoinError::Invalid(
            "--control-plane: this cluster keeps its store local to its first control plane (its ClusterConfiguration has no etcd.external endpoints), so another control plane cannot share it; initialize with 'k1s init --etcd-servers URL --upload-certs' to add control planes".into(),
        ));
    }
    println!(
        "[download-certs] Downloading the certificates in Secret \"kubeadm-certs\" in the \"kube-system\" Namespace"
    );
    let files = crate::copycerts::download(&client, certificate_key)
        .await
        .map_err(|e| JoinError::Bootstrap(e.to_string()))?;
    Ok(ControlPlaneJoin {
        server,
        ca_pem,
        cluster_config,
        etcd_endpoints,
        files,
    })
}

/// Runs discovery and TLS bootstrap and writes `kubelet.conf` (and `pki/ca.crt`).
pub async fn join(opts: &JoinOptions) -> Result<Joined, JoinError> {
    let plan = validate(opts)?;
    println!("[preflight] Running pre-flight checks");
    let (
        Discovered {
            server,
            ca_pem,
            bootstrap,
        },
        client,
    ) = discover_and_connect(opts, &plan).await?;

    // kubeadm refuses to take over a Ready node of the same name.
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes.get_opt(&opts.node_name).await {
        Ok(Some(node)) if node_ready(&node) => {
            return Err(JoinError::Bootstrap(format!(
                "a Node with name {:?} and status \"Ready\" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node",
                opts.node_name
            )));
        }
        Ok(_) => {}
        Err(e) => {
            let e = ApiError::Kube {
                what: "checking for an existing Node".into(),
                source: e,
            };
            // A 401 here is the credential being refused (a token deleted or expired since
            // discovery, a certificate the cluster does not accept).
            return Err(JoinError::Bootstrap(match (e.status(), &bootstrap) {
                (Some(401), Credentials::Token(t)) => format!(
                    "the bootstrap token {:?} was refused by the API server (unknown, deleted or expired)",
                    t.split('.').next().unwrap_or_default()
                ),
                (Some(401), _) => {
                    "the discovery file's credentials were refused by the API server (401 Unauthorized)".to_string()
                }
                _ => e.to_string(),
            }));
        }
    }

    println!("[kubelet-start] Waiting for the kubelet to perform the TLS Bootstrap");
    let cn = format!("system:node:{}", opts.node_name);
    let (csr, key_pem) =
        node_client_csr(&opts.node_name).map_err(|e| JoinError::Bootstrap(e.to_string()))?;
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let created = csrs
        .create(&PostParams::default(), &csr)
        .await
        .map_err(|e| {
            JoinError::Bootstrap(format!("creating the certificate signing request: {e}"))
        })?;
    let name = created.metadata.name.unwrap_or_default();
    let cert_pem = wait_for_certificate(&csrs, &name, opts.tls_bootstrap_timeout).await?;

    // Everything checked: now write.
    let server_kubeconfig =
        Kubeconfig::for_client_cert(&server, "kubernetes", &cn, &ca_pem, &cert_pem, &key_pem);
    let pki_dir = opts.data_dir.join("pki");
    fsutil::ensure_private_dir(&pki_dir).map_err(|source| JoinError::Io {
        path: pki_dir.clone(),
        source,
    })?;
    let ca_file = pki_dir.join("ca.crt");
    fsutil::write_atomic(&ca_file, ca_pem.as_bytes(), fsutil::PUBLIC_MODE).map_err(|source| {
        JoinError::Io {
            path: ca_file.clone(),
            source,
        }
    })?;
    let kubeconfig = kubelet_conf_path(&opts.data_dir);
    server_kubeconfig
        .save(&kubeconfig)
        .map_err(|e| JoinError::Bootstrap(e.to_string()))?;
    Ok(Joined {
        kubeconfig,
        ca_file,
        server_url: server,
    })
}

/// A new key and the kubelet's client CSR for node `name` (CN `system:node:<name>`, O
/// `system:nodes`, the kubelet client signer and usages): the bootstrap request and every
/// renewal alike. Returns (the CSR object, the key PEM).
pub fn node_client_csr(name: &str) -> Result<(CertificateSigningRequest, String), crate::PkiError> {
    let (csr_pem, key_pem) = pki::new_client_csr(&format!("system:node:{name}"), "system:nodes")?;
    let csr = CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some("node-csr-".into()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.into_bytes()),
            signer_name: KUBELET_CLIENT_SIGNER.into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..Default::default()
        },
        status: None,
    };
    Ok((csr, key_pem))
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub(crate) async fn wait_for_certificate(
    csrs: &Api<CertificateSigningRequest>,
    name: &str,
    timeout: Duration,
) -> Result<String, JoinError> {
    let deadline = Instant::now() + timeout;
    loop {
        let csr = csrs.get(name).await.map_err(|e| {
            JoinError::Bootstrap(format!(
                "reading the certificate signing request {name:?}: {e}"
            ))
        })?;
        let status = csr.status.unwrap_or_default();
        for c in status.conditions.iter().flatten() {
            if (c.type_ == "Denied" || c.type_ == "Failed") && c.status == "True" {
                return Err(JoinError::Bootstrap(format!(
                    "the certificate signing request {name:?} was {}: {} {}",
                    c.type_.to_ascii_lowercase(),
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default()
                )));
            }
        }
        if let Some(cert) = status.certificate.filter(|c| !c.0.is_empty()) {
            return String::from_utf8(cert.0).map_err(|_| {
                JoinError::Bootstrap("the issued certificate is not PEM text".into())
            });
        }
        if Instant::now() >= deadline {
            return Err(JoinError::Bootstrap(format!(
                "timed out after {timeout:?} waiting for the certificate signing request {name:?} to be approved and signed (are the csrapproving and csrsigning controllers running?)"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> JoinOptions {
        JoinOptions {
            endpoint: "127.0.0.1:6443".into(),
            token: "abcdef.0123456789abcdef".into(),
            tls_bootstrap_token: String::new(),
            discovery_file: None,
            ca_cert_hashes: vec![format!("sha256:{}", "ab".repeat(32))],
            unsafe_skip_ca_verification: false,
            node_name: "n1".into(),
            data_dir: PathBuf::from("/nonexistent-k1s-join-test"),
            discovery_timeout: Duration::from_secs(1),
            tls_bootstrap_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn flags_are_checked_before_anything_happens() {
        assert!(validate(&opts()).is_ok());
        let mut o = opts();
        o.token = "abc".into();
        assert!(
            validate(&o)
                .expect_err("token")
                .to_string()
                .contains("was not of the form")
        );
        let mut o = opts();
        o.ca_cert_hashes = vec!["sha256:abcd".into()];
        assert!(
            validate(&o)
                .expect_err("hash")
                .to_string()
                .contains("found 2 bytes")
        );
        let mut o = opts();
        o.ca_cert_hashes.clear();
        assert!(
            validate(&o)
                .expect_err("no pin")
                .to_string()
                .contains("unsafeSkipCAVerification")
        );
        o.unsafe_skip_ca_verification = true;
        assert!(validate(&o).is_ok());

        // File discovery excludes token discovery's inputs, and checks its path.
        let err = |o: &JoinOptions| validate(o).expect_err("refused").to_string();
        let mut o = opts();
        o.discovery_file = Some("https://h/discovery.conf".into());
        assert!(err(&o).contains("bootstrapToken and file cannot both be set"));
        o.endpoint.clear();
        o.token.clear();
        o.ca_cert_hashes.clear();
        assert!(matches!(
            validate(&o),
            Ok(Plan::File(discovery::FileSource::Url(_)))
        ));
        o.discovery_file = Some("/nonexistent-k1s/discovery.conf".into());
        assert!(err(&o).contains("not a valid HTTPS URL or a file on disk"));
        o.discovery_file = Some("http://h/discovery.conf".into());
        assert!(err(&o).contains("if a URL is used, the scheme must be https"));
        o.discovery_file = Some("https://h/discovery.conf".into());
        o.tls_bootstrap_token = "nope".into();
        assert!(err(&o).contains("discovery.tlsBootstrapToken"));
        assert_eq!(endpoint_url("h:1"), "https://h:1");
        assert_eq!(endpoint_url("https://h:1/"), "https://h:1");
    }
}
