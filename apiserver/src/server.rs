//! `k1s server`: PKI and kubeconfig on first start, the store, bootstrap objects, the TLS
//! listener, the request path (authentication, routing) and graceful shutdown.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k1s_apimachinery::ApiError;
use k1s_storage::{Backend, EtcdConfig, EtcdStore, LocalStore, Store, StoreConfig};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::auth::UserInfo;
use crate::authentication::Identity;
use crate::chain::Chain;
use crate::context::ApiContext;
use crate::in_process::InProcessService;
use crate::registry::Registry;
use crate::router::Router;
use crate::tls::{self, ClientAuth};

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    pub secure_port: u16,
    pub tls_sans: Vec<String>,
    /// Memory-only store; only the kubeconfig is written (and the PKI to a temporary directory).
    pub ephemeral: bool,
    pub advertise_address: Option<IpAddr>,
    /// Where to write the admin kubeconfig (default `<data-dir>/admin.conf`).
    pub kubeconfig_path: Option<PathBuf>,
    /// Upstream's static token file (`token,user,uid,"group1,group2"`).
    pub token_auth_file: Option<PathBuf>,
    /// `--audit-policy-file` (audit.k8s.io/v1 Policy); auditing is off without it.
    pub audit_policy_file: Option<PathBuf>,
    /// `--audit-log-path` (`-` = standard output).
    pub audit_log_path: Option<PathBuf>,
    pub audit_log_maxsize_mb: u64,
    pub audit_log_maxbackup: usize,
    /// Upstream's `--max-requests-inflight` (read-only) and `--max-mutating-requests-inflight`.
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
    /// Size of one write-ahead log file of the store (`--wal-size`; the data directory holds two).
    pub wal_file_bytes: u64,
    /// Page cache of the embedded store (`--store-cache-size`).
    pub store_cache_bytes: u64,
    /// A new embedded store compresses what sled logs (`--store-compression`).
    pub store_compression: bool,
    /// Keep the cluster in etcd (`--etcd-servers`) instead of the embedded store.
    pub etcd: Option<EtcdConfig>,
    /// Where the PKI lives (default `<data-dir>/pki`; `k1s init --cert-dir`).
    pub cert_dir: Option<PathBuf>,
    /// Leave the admin kubeconfig alone: `k1s init` writes kubeadm's own (admin.conf bound
    /// through kubeadm:cluster-admins, super-admin.conf with system:masters).
    pub skip_admin_kubeconfig: bool,
    /// `--tls-cert-file` / `--tls-private-key-file` (PEM): serve this certificate instead of
    /// the one the PKI issues (envtest writes its own into `--cert-dir`).
    pub serving_cert_files: Option<(PathBuf, PathBuf)>,
    /// `--client-ca-file` (PEM bundle): client certificates signed by these CAs are accepted as
    /// well as the cluster CA's.
    pub client_ca_file: Option<PathBuf>,
    /// How often IPAddresses whose Service is gone are looked for (upstream: 3 minutes); one
    /// seen orphaned twice in a row is deleted.
    pub service_ip_repair_interval: std::time::Duration,
    /// `--service-cluster-ip-range`: the default ServiceCIDR (10.96.0.0/12 when unset).
    pub service_cluster_ip_range: Option<String>,
    /// `--event-ttl`: how long an Event lives after its last write (zero: forever).
    pub event_ttl: std::time::Duration,
}

impl Default for ServerConfig {
    /// An ephemeral server on a free loopback port, everything else as upstream's defaults.
    fn default() -> Self {
        let loopback = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        ServerConfig {
            data_dir: PathBuf::new(),
            bind_address: loopback,
            secure_port: 0,
            tls_sans: Vec::new(),
            ephemeral: true,
            advertise_address: None,
            kubeconfig_path: None,
            token_auth_file: None,
            audit_policy_file: None,
            audit_log_path: None,
            audit_log_maxsize_mb: 0,
            audit_log_maxbackup: 0,
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            serving_cert_files: None,
            client_ca_file: None,
            service_ip_repair_interval: crate::allocator::REPAIR_INTERVAL,
            service_cluster_ip_range: None,
            event_ttl: crate::event_ttl::DEFAULT_EVENT_TTL,
            wal_file_bytes: k1s_storage::DEFAULT_WAL_FILE_BYTES,
            store_cache_bytes: k1s_storage::DEFAULT_CACHE_BYTES,
            store_compression: false,
            etcd: None,
            cert_dir: None,
            skip_admin_kubeconfig: false,
        }
    }
}

/// The store a server opened, closed when the server stops.
#[derive(Clone)]
enum OpenedStore {
    Local(LocalStore),
    Etcd(EtcdStore),
}

impl OpenedStore {
    async fn open(config: &ServerConfig) -> Result<OpenedStore, ServerError> {
        if let Some(etcd) = &config.etcd {
            return Ok(OpenedStore::Etcd(EtcdStore::connect(etcd.clone()).await?));
        }
        let backend = if config.ephemeral {
            Backend::Memory
        } else {
            Backend::Disk(config.data_dir.join("store"))
        };
        let mut store_config = StoreConfig::new(backend);
        store_config.wal_file_bytes = config.wal_file_bytes;
        store_config.cache_capacity = config.store_cache_bytes;
        store_config.compress_new_store = config.store_compression;
        Ok(OpenedStore::Local(LocalStore::open(store_config)?))
    }

    fn as_store(&self) -> Arc<dyn Store> {
        match self {
            OpenedStore::Local(s) => Arc::new(s.clone()),
            OpenedStore::Etcd(s) => Arc::new(s.clone()),
        }
    }

    fn close(&self) {
        match self {
            OpenedStore::Local(s) => s.close(),
            OpenedStore::Etcd(s) => s.close(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("PKI: {0}")]
    Pki(#[from] k1s_kubeadm_lite::PkiError),
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] k1s_kubeadm_lite::KubeconfigError),
    #[error("store: {0}")]
    Store(#[from] k1s_storage::Error),
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("bootstrap: {0}")]
    Bootstrap(ApiError),
    #[error("authentication setup: {0}")]
    Authentication(String),
    #[error("{0}")]
    Config(String),
}

/// A started server. Dropping it does not stop it; call `shutdown`.
pub struct RunningServer {
    pub local_addr: SocketAddr,
    pub kubeconfig: PathBuf,
    pub store: Arc<dyn Store>,
    /// The cluster CA certificate (PEM), as published in `kube-root-ca.crt`.
    pub ca_pem: String,
    /// The URL clients use (`https://host:port`).
    pub server_url: String,
    /// The PKI directory (`ca.crt`/`ca.key` for the CSR signer).
    pub pki_dir: PathBuf,
    chain: Arc<Chain>,
    stop: tokio::sync::watch::Sender<bool>,
    done: tokio::task::JoinHandle<()>,
    _ephemeral_pki: Option<tempfile::TempDir>,
}

impl RunningServer {
    /// Stops accepting, ends watches, lets in-flight requests finish (up to 10 s), closes the store.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.done.await;
    }

    /// Signals the server to stop as `shutdown` does, without waiting; `wait` waits for it.
    pub fn begin_shutdown(&self) {
        let _ = self.stop.send(true);
    }

    /// Stops at once without waiting (for `Drop` of an embedding): the listener closes, watches
    /// end, open connections are told to close; the store is not flushed (meant for ephemeral).
    pub fn stop_now(&self) {
        let _ = self.stop.send(true);
        self.done.abort();
    }

    /// A tower `Service` into the filter chain for callers in this process: requests enter after
    /// TLS as `user` and are then authorized, admitted and validated like any client's. The
    /// controller-manager builds its `kube::Client` over it.
    pub fn in_process_service(&self, user: UserInfo) -> InProcessService {
        InProcessService::new(self.chain.clone(), user)
    }

    /// Signs the legacy token of a `kubernetes.io/service-account-token` Secret (namespace,
    /// ServiceAccount name and UID, Secret name) with the cluster's service-account key: what
    /// the controller-manager's `--service-account-private-key-file` gives upstream.
    pub fn legacy_token_signer(
        &self,
    ) -> impl Fn(&str, &str, &str, &str) -> Result<String, String> + Send + Sync + 'static {
        let security = self.chain.context().security.clone();
        move |namespace, sa_name, sa_uid, secret_name| {
            security
                .tokens
                .issue_legacy(namespace, sa_name, sa_uid, secret_name)
                .map_err(|e| e.to_string())
        }
    }

    /// Serves another component's metrics (Prometheus text without `# EOF`) at `/metrics` too.
    pub fn add_metrics(&self, extra: crate::metrics::ExtraMetrics) {
        self.chain.context().metrics.set_extra(extra);
    }

    /// Waits until the server stops (after `shutdown` from elsewhere or a fatal error).
    pub async fn wait(&mut self) {
        // A finished task must not be polled again.
        if !self.done.is_finished() {
            let _ = (&mut self.done).await;
        }
    }
}

pub async fn start(config: ServerConfig) -> Result<RunningServer, ServerError> {
    let advertise = config
        .advertise_address
        .or_else(crate::bootstrap::default_advertise_address)
        .unwrap_or(config.bind_address);
    let (pki_dir, ephemeral_pki) = if config.ephemeral {
        let tmp = tempfile::tempdir()?;
        (tmp.path().to_path_buf(), Some(tmp))
    } else {
        std::fs::create_dir_all(&config.data_dir)?;
        let dir = config
            .cert_dir
            .clone()
            .unwrap_or_else(|| config.data_dir.join("pki"));
        (dir, None)
    };
    let service_range = match &config.service_cluster_ip_range {
        Some(text) => crate::allocator::Range::for_flag(text).map_err(ServerError::Config)?,
        None => crate::allocator::Range::default(),
    };
    let mut pki_opts = k1s_kubeadm_lite::PkiOptions::for_server(&config.tls_sans, Some(advertise));
    // Pods reach the API server at the `kubernetes` Service's address.
    pki_opts.add_ip(service_range.kubernetes_ip());
    if !config.bind_address.is_unspecified() {
        pki_opts.add_ip(config.bind_address);
    }
    // A PKI made on every start keeps start-up in milliseconds: ES256 instead of RS256 tokens.
    pki_opts.ecdsa_service_account_key = config.ephemeral;
    let pki = k1s_kubeadm_lite::ensure_pki(&pki_dir, &pki_opts)?;

    let opened = OpenedStore::open(&config).await?;
    let metrics = Arc::new(crate::metrics::Metrics::new());
    let store: Arc<dyn Store> = Arc::new(crate::metrics::InstrumentedStore::new(
        opened.as_store(),
        metrics.clone(),
    ));
    let registry = Registry::new(store.clone());

    let listener =
        TcpListener::bind(SocketAddr::new(config.bind_address, config.secure_port)).await?;
    let local_addr = listener.local_addr()?;
    crate::bootstrap::ensure(
        &registry,
        advertise,
        local_addr.port(),
        pki.ca_cert_pem(),
        pki.front_proxy_ca_cert_pem(),
        &service_range,
    )
    .await
    .map_err(ServerError::Bootstrap)?;

    let client_host = if config.bind_address.is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        match config.bind_address {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        }
    };
    let server_url = format!("https://{client_host}:{}", local_addr.port());
    let kubeconfig = config
        .kubeconfig_path
        .clone()
        .unwrap_or_else(|| config.data_dir.join("admin.conf"));
    if !config.skip_admin_kubeconfig {
        if let Some(parent) = kubeconfig.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let (cert, key) = pki.issue_client_cert(
            "kubernetes-admin",
            &["system:masters"],
            Duration::from_secs(365 * 24 * 3600),
        )?;
        k1s_kubeadm_lite::write_admin_kubeconfig(
            &kubeconfig,
            &server_url,
            "k1s",
            pki.ca_cert_pem(),
            &cert,
            &key,
        )?;
    }

    let (chain, key) = match &config.serving_cert_files {
        Some((cert, key)) => tls::read_cert_and_key(cert, key)?,
        None => (pki.serving_cert_chain_der(), pki.serving_key_der()),
    };
    let mut client_cas = vec![pki.ca_cert_der().clone()];
    if let Some(path) = &config.client_ca_file {
        client_cas.extend(tls::read_certs(path)?);
    }
    let serving_files = match &config.serving_cert_files {
        Some((cert, key)) => tls::ServingFiles {
            cert: cert.clone(),
            key: key.clone(),
            append: Vec::new(),
        },
        None => tls::ServingFiles {
            cert: pki_dir.join("apiserver.crt"),
            key: pki_dir.join("apiserver.key"),
            append: vec![pki.ca_cert_der().clone()],
        },
    };
    let (tls_config, client_auth) =
        tls::server_config(client_cas, chain, key, Some(serving_files))?;
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    // Webhooks without a caBundle are trusted if the cluster CA signed them.
    let webhooks = Arc::new(crate::admission::WebhookDispatcher::new());
    webhooks.set_default_roots(vec![pki.ca_cert_der().clone()]);
    crate::admit::feed_webhook_configurations(registry.clone(), webhooks.clone(), stop_rx.clone());
    let policies = Arc::new(crate::admission::policy::PolicyDispatcher::new());
    crate::admit::feed_admission_policies(registry.clone(), policies.clone(), stop_rx.clone());
    crate::admit::keep_policy_status(registry.clone(), stop_rx.clone());
    crate::apiextensions::webhook_converter::configure(
        Arc::new(crate::admit::EndpointsResolver {
            registry: registry.clone(),
        }),
        vec![pki.ca_cert_der().clone()],
    );
    crate::apiextensions::start(registry.clone(), stop_rx.clone());
    crate::identity_lease::start(registry.clone(), stop_rx.clone());
    crate::event_ttl::start(&registry, config.event_ttl, stop_rx.clone());
    if registry.store().backend_kind() == k1s_storage::BackendKind::Etcd {
        crate::endpoint_reconciler::start(
            registry.clone(),
            advertise,
            local_addr.port(),
            stop_rx.clone(),
        );
    }
    let authorizer = crate::authorization::start(&registry, stop_rx.clone())
        .await
        .map_err(ServerError::Bootstrap)?;
    // `authorizer` in admission policy expressions asks the same authorizer as the chain.
    policies.set_authorizer(authorizer.clone());
    webhooks.set_authorizer(authorizer.clone());
    let flowcontrol = crate::flowcontrol::start(&registry, stop_rx.clone())
        .await
        .map_err(ServerError::Bootstrap)?;
    let tokens = crate::auth::authn::TokenIssuer::new(
        pki.sa_private_key_pkcs8_der(),
        pki.sa_public_key_pem(),
        String::new(),
        Vec::new(),
    )
    .map_err(|e| ServerError::Authentication(e.to_string()))?;
    let token_file = match &config.token_auth_file {
        Some(path) => Some(
            crate::auth::authn::TokenFile::load(path)
                .map_err(|e| ServerError::Authentication(e.to_string()))?,
        ),
        None => None,
    };
    let external = server_url.trim_start_matches("https://").to_string();
    let oidc = crate::auth::authn::OidcDocuments::new(&tokens, None, &external).ok();
    let audit = match (&config.audit_policy_file, &config.audit_log_path) {
        (Some(policy), Some(path)) => Some(crate::context::Audit {
            policy: crate::audit::Policy::load(policy).map_err(ServerError::Authentication)?,
            logger: crate::audit::AuditLogger::open(&crate::audit::AuditLogConfig {
                path: path.clone(),
                max_size_mb: config.audit_log_maxsize_mb,
                max_backups: config.audit_log_maxbackup,
                max_age_days: 0,
                buffer_size: crate::audit::DEFAULT_BUFFER_SIZE,
            })?,
        }),
        (Some(_), None) => {
            return Err(ServerError::Authentication(
                "--audit-policy-file needs --audit-log-path".into(),
            ));
        }
        _ => None,
    };
    let security = Arc::new(crate::context::Security {
        authorizer,
        flowcontrol,
        tokens,
        token_file,
        oidc,
        inflight: crate::overload::InFlightLimiter::new(
            config.max_mutating_requests_inflight,
            config.max_requests_inflight,
        ),
        audit,
        token_cache: Default::default(),
    });
    let services = Arc::new(
        crate::allocator::ServiceAllocator::new(service_range)
            .sharing_the_store(store.backend_kind() == k1s_storage::BackendKind::Etcd),
    );
    crate::allocator::start_repair(
        registry.clone(),
        services.clone(),
        config.service_ip_repair_interval,
        stop_rx.clone(),
    );
    let aggregator =
        crate::aggregator::Aggregator::new(registry.clone(), Some(proxy_identity(&pki)?));
    aggregator.start(stop_rx.clone());
    let api = ApiContext {
        registry,
        shutdown: stop_rx.clone(),
        metrics,
        services,
        security,
        webhooks: webhooks.clone(),
        policies,
        aggregator,
    };
    let router = Arc::new(Router::new(
        api.clone(),
        format!("{advertise}:{}", local_addr.port()),
    ));
    let chain = Arc::new(Chain::new(api, router));
    let done = tokio::spawn(serve(
        listener,
        TlsAcceptor::from(Arc::new(tls_config)),
        client_auth,
        chain.clone(),
        stop_rx,
        opened,
    ));
    Ok(RunningServer {
        local_addr,
        kubeconfig,
        store,
        chain,
        ca_pem: pki.ca_cert_pem().to_string(),
        server_url,
        pki_dir: pki.dir().to_path_buf(),
        stop,
        done,
        _ephemeral_pki: ephemeral_pki,
    })
}

/// The front-proxy client certificate presented to aggregated API servers: kubeadm's
/// `front-proxy-client.crt`/`.key` when the PKI holds them, else one issued for this run by the
/// front-proxy CA (which backends trust through `extension-apiserver-authentication`).
fn proxy_identity(
    pki: &k1s_kubeadm_lite::Pki,
) -> Result<crate::aggregator::transport::ProxyIdentity, ServerError> {
    let (crt, key) = (
        pki.dir().join("front-proxy-client.crt"),
        pki.dir().join("front-proxy-client.key"),
    );
    let (cert_pem, key_pem) = match (std::fs::read_to_string(&crt), std::fs::read_to_string(&key)) {
        (Ok(c), Ok(k)) => (c, k),
        _ => pki
            .issue_front_proxy_client_cert(
                "front-proxy-client",
                Duration::from_secs(365 * 24 * 3600),
            )
            .map_err(|e| ServerError::Authentication(e.to_string()))?,
    };
    crate::aggregator::transport::ProxyIdentity::from_pem(&cert_pem, &key_pem)
        .map_err(ServerError::Authentication)
}

/// The accept loop; on stop, drains connections and closes the store.
async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    client_auth: ClientAuth,
    chain: Arc<Chain>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    store: OpenedStore,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let (tcp, peer) = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let client_auth = client_auth.clone();
        let chain = chain.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
            let identity = Arc::new(Identity::Tls(
                client_auth.identify(tls.get_ref().1.peer_certificates()),
            ));
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let chain = chain.clone();
                    let identity = identity.clone();
                    async move {
                        Ok::<_, std::convert::Infallible>(
                            chain.handle(&identity, peer, req.map(Body::new)).await,
                        )
                    }
                });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            if let Err(e) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(Duration::from_secs(10), graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after 10s; closing anyway");
    }
    store.close();
}
