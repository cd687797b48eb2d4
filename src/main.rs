//! The `k1s` command line: parses flags and wires the crates together; no logic lives here.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod envtest;
mod resident;
mod snapshot;
mod upgrade;
use k1s_apiserver::auth::UserInfo;

#[derive(Parser)]
#[command(
    name = "k1s",
    version,
    about = "One binary that is a whole Kubernetes control plane"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once at startup; the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Run the Kubernetes API server (PKI and kubeconfig are created on first start).
    Server(ServerArgs),
    /// Run the controllers against any API server (k1s or upstream) through a kubeconfig.
    ControllerManager(ControllerManagerArgs),
    /// Run the scheduler against any API server through a kubeconfig.
    Scheduler(SchedulerArgs),
    /// Add simulated nodes (kwok-like) to any cluster through a kubeconfig.
    Node(NodeArgs),
    /// Load any Kubernetes API server through a kubeconfig (HTTP/2 over TLS) and report figures.
    Bench(k1s_bench::BenchArgs),
    /// Set up a control plane as `kubeadm init` does, then serve it in the foreground.
    Init(InitCmd),
    /// Join this machine to a cluster as a node (kubeadm's token discovery and TLS bootstrap).
    Join(JoinArgs),
    /// Manage bootstrap tokens (kubeadm's `token`).
    Token(TokenArgs),
    /// Certificate commands (kubeadm's `certs`).
    Certs(CertsArgs),
    /// Configuration commands (kubeadm's `config`).
    Config(ConfigArgs),
    /// Kubeconfig files for further users (kubeadm's `kubeconfig user`).
    Kubeconfig(KubeconfigArgs),
    /// Remove what `k1s init` or `k1s join` wrote on this machine.
    Reset(ResetArgs),
    /// Copy a stopped cluster's store between backends: `--from dir:DATA_DIR --to
    /// etcd:URLS` (or back). The target must be empty; resourceVersions start over.
    Migrate(MigrateArgs),
    /// Save the embedded store (of a running or a stopped server) to a checksummed file, or
    /// restore one into a new data dir (`save FILE`, `restore FILE --data-dir DIR`, `status FILE`).
    Snapshot(snapshot::SnapshotArgs),
    /// Check the data directory's store format and upgrade it in place with a backup
    /// (kubeadm's `upgrade plan|apply`, for a stopped server's data directory).
    Upgrade(upgrade::UpgradeArgs),
    /// Serve the web dashboard on loopback for any cluster, with a kubeconfig's credentials.
    Dashboard(DashboardArgs),
    /// Stand in for kube-apiserver under controller-runtime's envtest (also when k1s is run as
    /// `kube-apiserver`): takes its flags, serves from memory.
    #[command(disable_help_flag = true)]
    KubeApiserver {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Stand in for etcd under envtest (also when run as `etcd`): answers its health check only.
    #[command(disable_help_flag = true)]
    Etcd {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(clap::Args)]
struct MigrateArgs {
    /// The source: `dir:DATA_DIR` (a stopped server's --data-dir; `sled:DATA_DIR` is the same)
    /// or `etcd:URL[,URL...]`.
    #[arg(long)]
    from: String,
    /// The target, in the same form; it must hold no cluster yet.
    #[arg(long)]
    to: String,
    /// Root of the cluster's keys in etcd (kube-apiserver's --etcd-prefix), both sides.
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
}

/// Opens one side of a migration.
async fn open_store(spec: &str, etcd_prefix: &str) -> anyhow::Result<Arc<dyn k1s_storage::Store>> {
    if let Some(dir) = spec
        .strip_prefix("dir:")
        .or_else(|| spec.strip_prefix("sled:"))
    {
        let mut config = k1s_storage::StoreConfig::new(k1s_storage::Backend::Disk(
            PathBuf::from(dir).join("store"),
        ));
        config.compaction.interval = None;
        let store = k1s_storage::LocalStore::open(config)
            .with_context(|| format!("opening {dir} (is its server still running?)"))?;
        return Ok(Arc::new(store));
    }
    if let Some(urls) = spec.strip_prefix("etcd:") {
        let flags = EtcdFlags {
            etcd_servers: urls.split(',').map(str::to_string).collect(),
            etcd_cafile: None,
            etcd_certfile: None,
            etcd_keyfile: None,
            etcd_prefix: etcd_prefix.to_string(),
            etcd_compaction_interval: std::time::Duration::ZERO,
        };
        let config = flags.config()?.context("no etcd URL given")?;
        let store = k1s_storage::EtcdStore::connect(config).await?;
        return Ok(Arc::new(store));
    }
    anyhow::bail!("{spec:?}: expected dir:DATA_DIR or etcd:URL[,URL...]")
}

async fn run_migrate(args: MigrateArgs) -> anyhow::Result<()> {
    let from = open_store(&args.from, &args.etcd_prefix).await?;
    let to = open_store(&args.to, &args.etcd_prefix).await?;
    let copied = k1s_storage::copy_all(from.as_ref(), to.as_ref(), "/")
        .await
        .with_context(|| format!("copying {} to {}", args.from, args.to))?;
    println!(
        "copied {copied} keys from {} to {} (at revision {} of the source)",
        args.from,
        args.to,
        from.current_revision()
    );
    Ok(())
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct InitCmd {
    #[command(subcommand)]
    command: Option<InitSubcommand>,
    #[command(flatten)]
    args: InitArgs,
}

#[derive(Subcommand)]
enum InitSubcommand {
    /// Run one of kubeadm's init phases on its own (`k1s init phase certs apiserver`).
    Phase(PhaseArgs),
}

#[derive(clap::Args)]
struct PhaseArgs {
    /// The phase, by kubeadm's name: preflight, certs, kubeconfig, etcd, control-plane,
    /// kubelet-start, wait-control-plane, upload-config, upload-certs, mark-control-plane,
    /// bootstrap-token, kubelet-finalize, addon, show-join-command.
    name: String,
    /// The subphase (certs: all, ca, apiserver, apiserver-kubelet-client, front-proxy-ca,
    /// front-proxy-client, sa, etcd-*; kubeconfig: all, admin, super-admin, kubelet,
    /// controller-manager, scheduler; upload-config: all, kubeadm, kubelet).
    sub: Option<String>,
    /// The kubeconfig the API phases use. Default: <data-dir>/admin.conf
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    args: InitArgs,
}

#[derive(clap::Args)]
struct InitArgs {
    /// A kubeadm configuration file: InitConfiguration and/or ClusterConfiguration
    /// (kubeadm.k8s.io/v1beta4; v1beta3 is read with a warning).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Where the store and the kubeconfig files go. Default: ~/.k1s
    #[arg(long, env = "K1S_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Where certificates go. Default: <data-dir>/pki
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// The address the API server advertises (default: the host's first non-loopback IPv4).
    #[arg(long)]
    apiserver_advertise_address: Option<IpAddr>,
    /// The API server's port (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    apiserver_bind_port: u16,
    /// Extra names or IPs for the API server's serving certificate.
    #[arg(long, value_delimiter = ',')]
    apiserver_cert_extra_sans: Vec<String>,
    /// The bootstrap token to create (default: a random one), `[a-z0-9]{6}.[a-z0-9]{16}`.
    #[arg(long)]
    token: Option<String>,
    /// The token's lifetime (a Go duration; 0 never expires).
    #[arg(long, default_value = "24h0m0s")]
    token_ttl: String,
    /// Phases to skip (comma-separated kubeadm phase names).
    #[arg(long, value_delimiter = ',')]
    skip_phases: Vec<String>,
    /// Check the flags and the machine, say what would be done, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// The control-plane node's name (default: the host name).
    #[arg(long)]
    node_name: Option<String>,
    /// The Services' address range.
    #[arg(long, default_value = "10.96.0.0/12")]
    service_cidr: String,
    /// The pods' address range (recorded in ClusterConfiguration; nodes take /24s of it).
    #[arg(long, default_value = "")]
    pod_network_cidr: String,
    /// The Services' DNS domain.
    #[arg(long, default_value = "cluster.local")]
    service_dns_domain: String,
    /// Upload the control-plane certificates to the kubeadm-certs Secret (needs a shared store;
    /// refused until k1s has one).
    #[arg(long)]
    upload_certs: bool,
    /// The key that encrypts the kubeadm-certs Secret (64 hex characters).
    #[arg(long)]
    certificate_key: Option<String>,
    /// Also write a systemd service unit (e.g. /etc/systemd/system/k1s.service) that brings
    /// this control plane back on the same data after a stop or a reboot.
    #[arg(long, value_name = "FILE")]
    write_systemd_unit: Option<PathBuf>,
    /// A shared etcd (recorded as ClusterConfiguration's etcd.external): further control planes
    /// can join it with `--upload-certs`.
    #[command(flatten)]
    etcd: EtcdFlags,
    #[command(flatten)]
    controller: ControllerFlags,
    #[command(flatten)]
    node_shape: NodeShape,
}

#[derive(clap::Args)]
struct JoinArgs {
    /// The API server, HOST:PORT.
    endpoint: Option<String>,
    /// A kubeadm JoinConfiguration file (kubeadm.k8s.io/v1beta4; v1beta3 with a warning).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The bootstrap token, `[a-z0-9]{6}.[a-z0-9]{16}`: both the discovery token and the TLS
    /// bootstrap token unless those are given.
    #[arg(long)]
    token: Option<String>,
    /// For token-based discovery, the token that verifies the cluster-info signature.
    #[arg(long)]
    discovery_token: Option<String>,
    /// For file-based discovery, a kubeconfig file or https URL from which to load the cluster
    /// information (server and CA), instead of the endpoint and --discovery-token flags.
    #[arg(long)]
    discovery_file: Option<String>,
    /// The token that authenticates the TLS bootstrap (default: --token).
    #[arg(long)]
    tls_bootstrap_token: Option<String>,
    /// The CA's public-key pin, `sha256:<hex>` (repeatable).
    #[arg(long = "discovery-token-ca-cert-hash")]
    discovery_token_ca_cert_hash: Vec<String>,
    /// Trust the cluster-info CA without a pin.
    #[arg(long)]
    discovery_token_unsafe_skip_ca_verification: bool,
    /// This node's name (default: the host name).
    #[arg(long)]
    node_name: Option<String>,
    /// Where kubelet.conf and pki/ca.crt go. Default: ~/.k1s
    #[arg(long, env = "K1S_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// How long discovery retries (a Go duration).
    #[arg(long, default_value = "30s")]
    discovery_timeout: String,
    /// How long to wait for the node's certificate (a Go duration).
    #[arg(long, default_value = "2m0s")]
    tls_bootstrap_timeout: String,
    /// Join as another control plane (needs a shared store; refused until k1s has one).
    #[arg(long)]
    control_plane: bool,
    /// The key that decrypts kubeadm-certs (with --control-plane).
    #[arg(long)]
    certificate_key: Option<String>,
    /// Write the credentials but run no simulated node.
    #[arg(long)]
    no_simulated_node: bool,
    /// With --control-plane: the address this API server advertises.
    #[arg(long)]
    apiserver_advertise_address: Option<IpAddr>,
    /// With --control-plane: this API server's port (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    apiserver_bind_port: u16,
    /// With --control-plane: the shared etcd (default: the cluster's etcd.external endpoints).
    #[command(flatten)]
    etcd: EtcdFlags,
    #[command(flatten)]
    shape: NodeShape,
}

/// Where the admin kubeconfig is: `--kubeconfig`, else <data-dir>/admin.conf.
#[derive(clap::Args)]
pub(crate) struct AdminKubeconfig {
    /// The kubeconfig to talk to the cluster with. Default: <data-dir>/admin.conf
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    /// Default: ~/.k1s
    #[arg(long, env = "K1S_DATA_DIR", global = true)]
    pub(crate) data_dir: Option<PathBuf>,
}

impl AdminKubeconfig {
    pub(crate) fn path(&self) -> anyhow::Result<PathBuf> {
        match (&self.kubeconfig, &self.data_dir) {
            (Some(k), _) => Ok(k.clone()),
            (None, Some(d)) => Ok(d.join("admin.conf")),
            (None, None) => Ok(default_data_dir()?.join("admin.conf")),
        }
    }
}

#[derive(clap::Args)]
struct TokenArgs {
    #[command(flatten)]
    admin: AdminKubeconfig,
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Create a bootstrap token and print it.
    Create {
        /// The token (default: a random one).
        token: Option<String>,
        /// Its lifetime (a Go duration; 0 never expires).
        #[arg(long, default_value = "24h0m0s")]
        ttl: String,
        /// What it may be used for.
        #[arg(long, value_delimiter = ',', default_value = "signing,authentication")]
        usages: Vec<String>,
        /// Extra groups it authenticates with.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "system:bootstrappers:kubeadm:default-node-token"
        )]
        groups: Vec<String>,
        /// A human-friendly description.
        #[arg(long, default_value = "")]
        description: String,
        /// Print the whole join command instead of the token.
        #[arg(long)]
        print_join_command: bool,
    },
    /// List bootstrap tokens.
    List {
        /// text, json or yaml.
        #[arg(short = 'o', long, default_value = "text")]
        output: String,
    },
    /// Delete bootstrap tokens (by id or whole token).
    Delete { tokens: Vec<String> },
    /// Generate and print a token without creating it.
    Generate,
}

#[derive(clap::Args)]
struct CertsArgs {
    #[command(subcommand)]
    command: CertsCommand,
}

#[derive(Subcommand)]
enum CertsCommand {
    /// Show when the certificates expire.
    CheckExpiration {
        #[arg(long, env = "K1S_DATA_DIR")]
        data_dir: Option<PathBuf>,
        #[arg(long)]
        cert_dir: Option<PathBuf>,
    },
    /// Renew a certificate (kubeadm's names: apiserver, apiserver-kubelet-client,
    /// front-proxy-client, admin.conf, super-admin.conf, controller-manager.conf,
    /// scheduler.conf) or all of them. A running server serves a renewed apiserver certificate
    /// without a restart.
    Renew {
        /// The certificate, or `all`.
        name: String,
        #[arg(long, env = "K1S_DATA_DIR")]
        data_dir: Option<PathBuf>,
        #[arg(long)]
        cert_dir: Option<PathBuf>,
    },
    /// Print a new certificate key for --upload-certs / --certificate-key (64 hex characters).
    CertificateKey,
    /// Write keys and certificate signing requests for an external CA to sign.
    GenerateCsr {
        /// Where the kubeconfigs' keys and CSRs go (admin.conf.csr, ...).
        #[arg(long)]
        kubeconfig_dir: PathBuf,
        /// Where the certificates' keys and CSRs go (apiserver.csr, ...).
        #[arg(long)]
        cert_dir: PathBuf,
        /// Extra names or IPs for the API server's certificate request.
        #[arg(long, value_delimiter = ',')]
        apiserver_cert_extra_sans: Vec<String>,
        /// The API server's advertise address (a SAN).
        #[arg(long)]
        apiserver_advertise_address: Option<IpAddr>,
    },
}

#[derive(clap::Args)]
struct KubeconfigArgs {
    #[command(subcommand)]
    command: KubeconfigCommand,
}

#[derive(Subcommand)]
enum KubeconfigCommand {
    /// Print a kubeconfig for a user, with a client certificate from the cluster CA.
    User {
        /// The user name (the certificate's CN).
        #[arg(long)]
        client_name: String,
        /// Its groups (the certificate's O), repeatable.
        #[arg(long)]
        org: Vec<String>,
        /// How long the certificate is valid (a Go duration).
        #[arg(long, default_value = "8760h0m0s")]
        validity_period: String,
        #[arg(long, env = "K1S_DATA_DIR")]
        data_dir: Option<PathBuf>,
        #[arg(long)]
        cert_dir: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print default configuration.
    Print {
        /// init-defaults or join-defaults
        what: String,
        /// The data dir whose paths the defaults name (certificatesDir). Default: ~/.k1s
        #[arg(long, env = "K1S_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Rewrite an older (v1beta3) configuration file as v1beta4.
    Migrate {
        #[arg(long)]
        old_config: PathBuf,
        /// Where to write it (default: standard output).
        #[arg(long)]
        new_config: Option<PathBuf>,
    },
    /// Check a configuration file strictly (unknown fields are errors).
    Validate {
        #[arg(long)]
        config: PathBuf,
    },
    /// Images: k1s needs none.
    Images {
        /// list
        what: String,
    },
}

#[derive(clap::Args)]
struct ResetArgs {
    #[arg(long, env = "K1S_DATA_DIR")]
    data_dir: Option<PathBuf>,
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// Do not ask for confirmation.
    #[arg(short = 'f', long)]
    force: bool,
}

#[derive(clap::Args)]
struct DashboardArgs {
    /// The cluster and credentials to use. Default: $KUBECONFIG, else ~/.kube/config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Loopback port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8001)]
    port: u16,
    /// Open the login link in the default browser.
    #[arg(long)]
    open: bool,
}

/// Flags shared by `k1s server` (in process) and `k1s controller-manager`.
#[derive(clap::Args)]
struct ControllerFlags {
    /// Controllers to run, as kube-controller-manager's flag: `*` (all on by default), `name`,
    /// `-name`; `-*` runs none (a bare API server).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    controllers: Vec<String>,
    /// Lead through the Lease kube-system/kube-controller-manager before running controllers.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    leader_elect: bool,
    #[command(flatten)]
    leader_election: LeaderElectionFlags,
    #[command(flatten)]
    concurrency: ConcurrentSyncs,
    /// Terminated pods kept before the pod garbage collector deletes the oldest (0: never).
    #[arg(long, default_value_t = 12_500)]
    terminated_pod_gc_threshold: usize,
    /// How long a node's Lease may go unrenewed before the node is marked Unknown (a Go duration).
    #[arg(long, default_value = "40s", value_parser = go_duration)]
    node_monitor_grace_period: std::time::Duration,
    /// How often each HorizontalPodAutoscaler is synced, a Go duration (default 15s).
    #[arg(long, value_parser = go_duration)]
    horizontal_pod_autoscaler_sync_period: Option<std::time::Duration>,
    /// How far back the autoscaler looks before scaling down, a Go duration (default 5m0s).
    #[arg(long, value_parser = go_duration)]
    horizontal_pod_autoscaler_downscale_stabilization: Option<std::time::Duration>,
    /// How often every ResourceQuota's usage is recalculated in full, a Go duration (default 5m0s).
    #[arg(long, value_parser = go_duration)]
    resource_quota_sync_period: Option<std::time::Duration>,
    /// How long an auto-generated legacy service-account token goes unused before it is
    /// labelled invalid, and then deleted.
    #[arg(long, default_value = "8760h", value_parser = go_duration)]
    legacy_service_account_token_clean_up_period: std::time::Duration,
    /// How often the legacy-token cleaner looks (k1s; upstream: a day).
    #[arg(long, value_parser = go_duration)]
    legacy_service_account_token_clean_up_sync_interval: Option<std::time::Duration>,
}

/// Upstream's leader-election timing flags. Unset, they are upstream's 15s/10s/2s, except for
/// the candidates inside `k1s server` on its embedded store (90s/60s/30s: no other server can
/// take over there, and each renewal is a durable write).
#[derive(clap::Args, Clone, Copy, Default)]
struct LeaderElectionFlags {
    /// How long a lease holds without renewal before other candidates may take it over.
    #[arg(long, value_parser = go_duration)]
    leader_elect_lease_duration: Option<std::time::Duration>,
    /// How long the leader keeps retrying a failed renewal before it stops leading.
    #[arg(long, value_parser = go_duration)]
    leader_elect_renew_deadline: Option<std::time::Duration>,
    /// How often candidates try to acquire, and the leader renews, the lease.
    #[arg(long, value_parser = go_duration)]
    leader_elect_retry_period: Option<std::time::Duration>,
}

impl LeaderElectionFlags {
    /// The timings, unset ones taken from `defaults`; refused as client-go refuses them.
    fn timings(
        self,
        defaults: k1s_controller_manager::leaderelection::Timings,
    ) -> anyhow::Result<k1s_controller_manager::leaderelection::Timings> {
        let timings = k1s_controller_manager::leaderelection::Timings {
            lease_duration: self
                .leader_elect_lease_duration
                .unwrap_or(defaults.lease_duration),
            renew_deadline: self
                .leader_elect_renew_deadline
                .unwrap_or(defaults.renew_deadline),
            retry_period: self
                .leader_elect_retry_period
                .unwrap_or(defaults.retry_period),
        };
        timings
            .validate()
            .map_err(|e| anyhow::anyhow!("leader election: {e}"))?;
        Ok(timings)
    }
}

fn go_duration(s: &str) -> Result<std::time::Duration, String> {
    k1s_controller_manager::controllers::podautoscaler::parse_go_duration(s)
        .ok_or_else(|| format!("invalid duration {s:?} (e.g. 15s, 1m30s)"))
}

impl ControllerFlags {
    /// The controller-manager's options from these flags, publishing `root_ca_pem`; unset
    /// leader-election timings are `timings`.
    fn options(
        self,
        root_ca_pem: Option<String>,
        timings: k1s_controller_manager::leaderelection::Timings,
    ) -> k1s_controller_manager::Options {
        k1s_controller_manager::Options {
            controllers: self.controllers,
            leader_elect: self.leader_elect,
            leader_elect_timings: timings,
            concurrent_syncs: self.concurrency.into_map(),
            terminated_pod_gc_threshold: self.terminated_pod_gc_threshold,
            node_monitor_grace_period: self.node_monitor_grace_period,
            hpa_sync_period: self.horizontal_pod_autoscaler_sync_period,
            hpa_downscale_stabilization: self.horizontal_pod_autoscaler_downscale_stabilization,
            resource_quota_sync_period: self.resource_quota_sync_period,
            legacy_token_clean_up_period: self.legacy_service_account_token_clean_up_period,
            legacy_token_clean_up_sync_interval: self
                .legacy_service_account_token_clean_up_sync_interval,
            root_ca_pem,
            ..Default::default()
        }
    }
}

/// kube-controller-manager's `--concurrent-*-syncs` flags (workers per controller); unset flags
/// keep upstream's defaults.
#[derive(clap::Args)]
struct ConcurrentSyncs {
    /// Namespaces deleted at once (default 10).
    #[arg(long)]
    concurrent_namespace_syncs: Option<usize>,
    /// Garbage collector workers (default 20).
    #[arg(long)]
    concurrent_gc_syncs: Option<usize>,
    /// Endpoints controller workers (default 5).
    #[arg(long)]
    concurrent_endpoint_syncs: Option<usize>,
    /// EndpointSlice controller workers (default 5).
    #[arg(long)]
    concurrent_service_endpoint_syncs: Option<usize>,
    /// EndpointSlice mirroring controller workers (default 5).
    #[arg(long)]
    mirroring_concurrent_service_endpoint_syncs: Option<usize>,
    /// ResourceQuota controller workers (default 5).
    #[arg(long)]
    concurrent_resource_quota_syncs: Option<usize>,
    /// Service-account token controller workers (default 5).
    #[arg(long)]
    concurrent_serviceaccount_token_syncs: Option<usize>,
    /// TTL-after-finished controller workers (default 5).
    #[arg(long)]
    concurrent_ttl_after_finished_syncs: Option<usize>,
    /// ReplicaSet controller workers (default 5).
    #[arg(long)]
    concurrent_replicaset_syncs: Option<usize>,
    /// ReplicationController controller workers (default 5).
    #[arg(long)]
    concurrent_rc_syncs: Option<usize>,
    /// Deployment controller workers (default 5).
    #[arg(long)]
    concurrent_deployment_syncs: Option<usize>,
    /// StatefulSet controller workers (default 5).
    #[arg(long)]
    concurrent_statefulset_syncs: Option<usize>,
    /// DaemonSet controller workers (default 2).
    #[arg(long)]
    concurrent_daemonset_syncs: Option<usize>,
    /// Job controller workers (default 5).
    #[arg(long)]
    concurrent_job_syncs: Option<usize>,
    /// CronJob controller workers (default 5).
    #[arg(long)]
    concurrent_cron_job_syncs: Option<usize>,
    /// HorizontalPodAutoscaler controller workers (default 5).
    #[arg(long)]
    concurrent_horizontal_pod_autoscaler_syncs: Option<usize>,
}

impl ConcurrentSyncs {
    /// The set flags, keyed as controllers ask for them (`namespace`, `gc`, ...).
    fn into_map(self) -> std::collections::BTreeMap<String, usize> {
        [
            ("namespace", self.concurrent_namespace_syncs),
            ("gc", self.concurrent_gc_syncs),
            ("endpoint", self.concurrent_endpoint_syncs),
            ("service-endpoint", self.concurrent_service_endpoint_syncs),
            (
                "mirroring-service-endpoint",
                self.mirroring_concurrent_service_endpoint_syncs,
            ),
            ("resource-quota", self.concurrent_resource_quota_syncs),
            (
                "serviceaccount-token",
                self.concurrent_serviceaccount_token_syncs,
            ),
            (
                "ttl-after-finished",
                self.concurrent_ttl_after_finished_syncs,
            ),
            ("replicaset", self.concurrent_replicaset_syncs),
            ("rc", self.concurrent_rc_syncs),
            ("deployment", self.concurrent_deployment_syncs),
            ("statefulset", self.concurrent_statefulset_syncs),
            ("daemonset", self.concurrent_daemonset_syncs),
            ("job", self.concurrent_job_syncs),
            ("cronjob", self.concurrent_cron_job_syncs),
            (
                "horizontal-pod-autoscaler",
                self.concurrent_horizontal_pod_autoscaler_syncs,
            ),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
    }
}

/// What simulated nodes look like (`k1s server --nodes` and `k1s node`).
#[derive(clap::Args)]
struct NodeShape {
    /// CPU capacity of each simulated node.
    #[arg(long, default_value = "4")]
    node_cpu: String,
    /// Memory capacity of each simulated node.
    #[arg(long, default_value = "8Gi")]
    node_memory: String,
    /// Pod capacity of each simulated node.
    #[arg(long, default_value = "110")]
    node_pods: String,
    /// The range pod CIDRs (one /24 per node) are taken from.
    #[arg(long, default_value = "10.244.0.0/16")]
    cluster_cidr: String,
    /// The nodes' Lease duration (the kubelet's nodeLeaseDurationSeconds), renewed every quarter.
    #[arg(long, default_value_t = 40)]
    node_lease_duration_seconds: i32,
    /// Resources reserved for Kubernetes daemons on each node (`cpu=100m,memory=256Mi`, the
    /// kubelet's --kube-reserved): allocatable is capacity minus this and --system-reserved.
    #[arg(long, default_value = "")]
    kube_reserved: String,
    /// Resources reserved for the OS on each node (the kubelet's --system-reserved).
    #[arg(long, default_value = "")]
    system_reserved: String,
}

impl NodeShape {
    fn options(self, names: Vec<String>) -> k1s_simnode::Options {
        k1s_simnode::Options {
            names,
            cpu: self.node_cpu,
            memory: self.node_memory,
            pods: self.node_pods,
            cluster_cidr: self.cluster_cidr,
            lease_duration_seconds: self.node_lease_duration_seconds,
            kube_reserved: self.kube_reserved,
            system_reserved: self.system_reserved,
            ..Default::default()
        }
    }
}

#[derive(clap::Args)]
struct SchedulerArgs {
    /// The API server and credentials to use.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Lead through the Lease kube-system/kube-scheduler before scheduling (a bare
    /// `--leader-elect` means true, as Go's bool flags).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true")]
    leader_elect: bool,
    #[command(flatten)]
    leader_election: LeaderElectionFlags,
}

#[derive(clap::Args)]
struct NodeArgs {
    /// The API server and credentials to use.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The node's name; with --count N > 1, the names are NAME-0 .. NAME-(N-1).
    #[arg(long)]
    name: String,
    /// How many nodes to simulate.
    #[arg(long, default_value_t = 1)]
    count: usize,
    #[command(flatten)]
    shape: NodeShape,
}

#[derive(clap::Args)]
struct ControllerManagerArgs {
    /// The API server and credentials to use.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// CA bundle published to every namespace as `kube-root-ca.crt`. Default: the kubeconfig's CA.
    #[arg(long)]
    root_ca_file: Option<PathBuf>,
    /// The CA (PEM) csrsigning issues certificates with; csrsigning does not run without it.
    #[arg(long)]
    cluster_signing_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --cluster-signing-cert-file.
    #[arg(long)]
    cluster_signing_key_file: Option<PathBuf>,
    /// The service-account key (PEM, PKCS#8 or kubeadm's PKCS#1 `sa.key`) that signs the
    /// tokens of `kubernetes.io/service-account-token` Secrets; the serviceaccount-token
    /// controller does not run without it.
    #[arg(long)]
    service_account_private_key_file: Option<PathBuf>,
    #[command(flatten)]
    controller: ControllerFlags,
}

#[derive(clap::Args)]
struct ServerArgs {
    /// Where the store, the PKI (`pki/`) and `admin.conf` live. Default: ~/.k1s
    #[arg(long, env = "K1S_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// HTTPS port (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    secure_port: u16,
    /// Extra names or IPs for the serving certificate (repeatable).
    #[arg(long = "tls-san")]
    tls_san: Vec<String>,
    /// Serve this certificate (PEM) instead of one from the PKI; needs --tls-private-key-file.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The key of --tls-cert-file (PEM).
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// Also accept client certificates signed by the CAs in this PEM file.
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// Keep everything in memory; only the kubeconfig is written. For CI.
    #[arg(long)]
    ephemeral: bool,
    /// The address the `kubernetes` Service's endpoints point at. Default: the host's first
    /// non-loopback address.
    #[arg(long)]
    advertise_address: Option<IpAddr>,
    /// Where to write the admin kubeconfig. Default: <data-dir>/admin.conf
    #[arg(long)]
    write_kubeconfig: Option<PathBuf>,
    /// Static bearer tokens, upstream's CSV format: token,user,uid,"group1,group2"
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// An audit.k8s.io/v1 Policy file; needs --audit-log-path.
    #[arg(long)]
    audit_policy_file: Option<PathBuf>,
    /// Where audit events go as JSON lines (`-` for standard output).
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// Rotate the audit log at this size in megabytes (0 = 100).
    #[arg(long, default_value_t = 0)]
    audit_log_maxsize: u64,
    /// Rotated audit logs to keep (0 = all).
    #[arg(long, default_value_t = 0)]
    audit_log_maxbackup: usize,
    /// Concurrent read-only requests before 429 (watches are not counted; 0 = unlimited).
    #[arg(long, default_value_t = 400)]
    max_requests_inflight: usize,
    /// Concurrent mutating requests before 429 (0 = unlimited).
    #[arg(long, default_value_t = 200)]
    max_mutating_requests_inflight: usize,
    /// Size of one write-ahead log file of the store (e.g. 1Mi, 4Mi): a checkpoint starts the
    /// next when half of one is used, and a fresh data directory holds two. Smaller suits small
    /// flash cards; larger means fewer checkpoints. At least 64Ki.
    #[arg(long, default_value = "4Mi", value_parser = k1s_storage::parse_byte_size)]
    wal_size: u64,
    /// Memory a sled store (one created with --store-compression, or by k1s before the image
    /// engine) may use to cache its pages (e.g. 8Mi, 64Mi). An image store holds everything in
    /// memory and has no cache.
    #[arg(long, default_value = "64Mi", value_parser = k1s_storage::parse_byte_size)]
    store_cache_size: u64,
    /// Create a sled store with zstd compression instead of an image store (the default, which
    /// writes fewer bytes per write and keeps the store in memory). A store keeps the engine it
    /// was created with; `k1s upgrade apply` converts a sled store to an image store.
    #[arg(long)]
    store_compression: bool,
    /// How often IPAddresses whose Service is gone are looked for (a Go duration); one seen
    /// orphaned twice in a row is deleted and its address freed.
    #[arg(long, default_value = "3m", value_parser = go_duration)]
    service_ip_repair_interval: std::time::Duration,
    /// The Services' address range: the default ServiceCIDR `kubernetes` (IPv4, /12 to /30).
    #[arg(long, default_value = "10.96.0.0/12")]
    service_cluster_ip_range: String,
    /// How long an Event is kept after its last write (a Go duration; 0 keeps them).
    #[arg(long, default_value = "1h", value_parser = go_duration)]
    event_ttl: std::time::Duration,
    #[command(flatten)]
    controller: ControllerFlags,
    /// Simulated nodes to run in process (named k1s-node-0, k1s-node-1, ...; 0 for none).
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    #[command(flatten)]
    node_shape: NodeShape,
    /// Do not run the in-process scheduler.
    #[arg(long)]
    disable_scheduler: bool,
    /// Once serving, write `{"url", "kubeconfig", "pid"}` (JSON) here atomically; removed on exit.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Shut down when the process that started k1s exits (for CI harnesses and test fixtures).
    #[arg(long)]
    exit_with_parent: bool,
    /// Also serve the web dashboard on loopback (as `k1s dashboard` with the admin kubeconfig).
    #[arg(long)]
    dashboard: bool,
    /// The dashboard's loopback port (0 picks a free one).
    #[arg(long, default_value_t = 8001)]
    dashboard_port: u16,
    #[command(flatten)]
    etcd: EtcdFlags,
}

/// kube-apiserver's etcd flags: with `--etcd-servers` the cluster lives in etcd instead of the
/// embedded store, and several servers can share it.
#[derive(clap::Args, Clone)]
struct EtcdFlags {
    /// etcd client URLs, comma separated (`https://h1:2379,https://h2:2379`).
    #[arg(long, value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// CA bundle that verifies etcd's serving certificates.
    #[arg(long)]
    etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd (with --etcd-keyfile).
    #[arg(long)]
    etcd_certfile: Option<PathBuf>,
    /// Client key for etcd (with --etcd-certfile).
    #[arg(long)]
    etcd_keyfile: Option<PathBuf>,
    /// Root of the cluster's keys in etcd. The default keeps kube-apiserver's layout
    /// (`/registry/<group>/<resource>/...`); any other prefix P stores `P/registry/...`, so
    /// several clusters can share one etcd.
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
    /// How often the server holding the compactor lease compacts etcd's history (a Go
    /// duration; 0 disables compaction by k1s).
    #[arg(long, default_value = "5m", value_parser = go_duration_or_zero)]
    etcd_compaction_interval: std::time::Duration,
}

fn go_duration_or_zero(s: &str) -> Result<std::time::Duration, String> {
    if s == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    go_duration(s)
}

impl EtcdFlags {
    /// The store's etcd configuration, or `None` for the embedded store.
    fn config(self) -> anyhow::Result<Option<k1s_storage::EtcdConfig>> {
        let endpoints: Vec<String> = self
            .etcd_servers
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if endpoints.is_empty() {
            if self.etcd_cafile.is_some() || self.etcd_certfile.is_some() {
                anyhow::bail!("--etcd-cafile/--etcd-certfile/--etcd-keyfile need --etcd-servers");
            }
            return Ok(None);
        }
        if self.etcd_certfile.is_some() != self.etcd_keyfile.is_some() {
            anyhow::bail!("--etcd-certfile and --etcd-keyfile go together");
        }
        if !self.etcd_prefix.starts_with('/') {
            anyhow::bail!("--etcd-prefix must start with '/'");
        }
        let mut config = k1s_storage::EtcdConfig::new(endpoints);
        let prefix = self.etcd_prefix.trim_end_matches('/');
        config.prefix = if prefix == "/registry" {
            String::new()
        } else {
            prefix.to_string()
        };
        config.ca_file = self.etcd_cafile;
        config.cert_file = self.etcd_certfile;
        config.key_file = self.etcd_keyfile;
        config.compaction.interval =
            (!self.etcd_compaction_interval.is_zero()).then_some(self.etcd_compaction_interval);
        if let Some(interval) = config.compaction.interval {
            // Upstream compacts to the revision of one interval ago.
            config.compaction.keep_for = Some(interval);
        }
        Ok(Some(config))
    }
}

fn default_data_dir() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set; pass --data-dir")?;
    Ok(PathBuf::from(home).join(".k1s"))
}

async fn run_server(args: ServerArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let data_dir = match args.data_dir {
        Some(d) => d,
        None => default_data_dir()?,
    };
    if !args.ephemeral {
        renew_due_certificates(&data_dir, &data_dir.join("pki"));
    }
    let config = k1s_apiserver::server::ServerConfig {
        data_dir,
        bind_address: args.bind_address,
        secure_port: args.secure_port,
        tls_sans: args.tls_san,
        ephemeral: args.ephemeral,
        advertise_address: args.advertise_address,
        kubeconfig_path: args.write_kubeconfig,
        token_auth_file: args.token_auth_file,
        audit_policy_file: args.audit_policy_file,
        audit_log_path: args.audit_log_path,
        audit_log_maxsize_mb: args.audit_log_maxsize,
        audit_log_maxbackup: args.audit_log_maxbackup,
        max_requests_inflight: args.max_requests_inflight,
        max_mutating_requests_inflight: args.max_mutating_requests_inflight,
        etcd: args.etcd.config()?,
        wal_file_bytes: args.wal_size,
        store_cache_bytes: args.store_cache_size,
        store_compression: args.store_compression,
        cert_dir: None,
        skip_admin_kubeconfig: false,
        serving_cert_files: args.tls_cert_file.zip(args.tls_private_key_file),
        client_ca_file: args.client_ca_file,
        service_ip_repair_interval: args.service_ip_repair_interval,
        service_cluster_ip_range: Some(args.service_cluster_ip_range.clone()),
        event_ttl: args.event_ttl,
    };
    let names = (0..args.nodes).map(|i| format!("k1s-node-{i}")).collect();
    let options = control_plane_options(
        config,
        args.controller,
        names,
        args.node_shape,
        args.disable_scheduler,
    )?;
    // Watch the parent from the start: a parent that dies while we start must not be missed.
    let parent_gone = args.exit_with_parent.then(parent_exited);
    let cluster = k1s::ControlPlane::start(options).await?;
    let server = cluster.server();
    println!(
        "k1s is serving the Kubernetes API at https://{} (ready in {} ms)\n  kubeconfig: {}\n  try: export KUBECONFIG={} && kubectl get namespaces",
        server.local_addr,
        started.elapsed().as_millis(),
        server.kubeconfig.display(),
        server.kubeconfig.display(),
    );
    if let Some(path) = &args.ready_file {
        write_ready_file(path, &server.server_url, &server.kubeconfig)?;
    }
    let dashboard = match args.dashboard {
        true => Some(start_dashboard(&server.kubeconfig, args.dashboard_port, false).await?),
        false => None,
    };
    let result = serve_until_signal(cluster, parent_gone).await;
    if let Some(d) = dashboard {
        d.task.abort();
    }
    if let Some(path) = args.ready_file {
        // A stale ready file would tell the next reader a dead server is up.
        let _ = std::fs::remove_file(path);
    }
    result
}

/// What `k1s server` and `k1s init` run in process beside the API server.
fn control_plane_options(
    server: k1s_apiserver::server::ServerConfig,
    controllers: ControllerFlags,
    node_names: Vec<String>,
    node_shape: NodeShape,
    disable_scheduler: bool,
) -> anyhow::Result<k1s::ControlPlaneOptions> {
    use k1s_controller_manager::leaderelection::Timings;
    let leader_elect = controllers.leader_elect;
    let embedded = server.etcd.is_none();
    let timings = controllers.leader_election.timings(if embedded {
        Timings::EMBEDDED
    } else {
        Timings::UPSTREAM
    })?;
    let mut cm = controllers.options(None, timings);
    let mut scheduler = k1s_scheduler::Options {
        leader_elect,
        leader_elect_timings: timings,
        ..Default::default()
    };
    if embedded && !server.ephemeral {
        // Only one process at a time can open this data directory, so a candidate restarted on
        // it (after kill -9 too) is the same candidate: it renews its own lease at once instead
        // of waiting out the longer embedded lease of its dead predecessor.
        let (c, s) = (
            stable_identity(&server.data_dir, "kube-controller-manager"),
            stable_identity(&server.data_dir, "kube-scheduler"),
        );
        cm.identity = c;
        scheduler.identity = s;
    }
    Ok(k1s::ControlPlaneOptions {
        server,
        controller_manager: Some(cm),
        scheduler: (!disable_scheduler).then_some(scheduler),
        nodes: Some(node_shape.options(node_names)),
    })
}

/// `<hostname>_<uuid>` (upstream's identity format) where the UUID is derived from the data
/// directory's absolute path and the lock's name rather than drawn at random.
fn stable_identity(data_dir: &std::path::Path, lock: &str) -> String {
    let path = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    // FNV-1a, twice with different offsets: stable across builds, unlike std's hasher.
    let fnv = |offset: u64| {
        let bytes = path
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .chain(lock.as_bytes());
        bytes.fold(offset, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    let (a, b) = (fnv(0xcbf2_9ce4_8422_2325), fnv(0x6c62_272e_07bb_0142));
    format!(
        "{host}_{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// Serves until SIGINT/SIGTERM (or the parent's exit), then stops the components first (their
/// leases are released while the API still answers) and the server last.
async fn serve_until_signal(
    mut cluster: k1s::ControlPlane,
    parent_gone: Option<tokio::task::JoinHandle<()>>,
) -> anyhow::Result<()> {
    let parent_gone = async move {
        match parent_gone {
            Some(task) => {
                let _ = task.await;
            }
            None => std::future::pending().await,
        }
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = parent_gone => eprintln!("the parent process exited"),
        _ = cluster.wait() => anyhow::bail!("the server stopped unexpectedly"),
    }
    eprintln!("shutting down");
    cluster.shutdown().await;
    Ok(())
}

/// Writes `{"url": ..., "kubeconfig": ..., "pid": ...}` to `path` atomically (a temporary file in
/// the same directory, then a rename), so a reader polling for the file never sees half of it.
fn write_ready_file(
    path: &std::path::Path,
    url: &str,
    kubeconfig: &std::path::Path,
) -> anyhow::Result<()> {
    let kubeconfig = std::path::absolute(kubeconfig)?;
    let body = serde_json::json!({
        "url": url,
        "kubeconfig": kubeconfig,
        "pid": std::process::id(),
    })
    .to_string();
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, body).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// Ends when this process's parent has exited (we were re-parented): polled every 200 ms, which
/// needs no unsafe code (PR_SET_PDEATHSIG would). A parent of 1 means init adopted us already.
fn parent_exited() -> tokio::task::JoinHandle<()> {
    let parent = std::os::unix::process::parent_id();
    tokio::spawn(async move {
        if parent == 1 {
            return;
        }
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(200));
        loop {
            tick.tick().await;
            if std::os::unix::process::parent_id() != parent {
                return;
            }
        }
    })
}

/// Starts the dashboard with a kubeconfig's credentials and prints its one-time login link.
async fn start_dashboard(
    kubeconfig: &std::path::Path,
    port: u16,
    open: bool,
) -> anyhow::Result<k1s_web::dashboard::Running> {
    let client = client_from_kubeconfig(kubeconfig).await?;
    let running = k1s_web::dashboard::start(client, port)
        .await
        .with_context(|| format!("listening on 127.0.0.1:{port}"))?;
    println!(
        "k1s dashboard at http://{}/ui/\n  log in (once) with: {}",
        running.addr, running.login_url
    );
    if open {
        // Best effort: a machine without a desktop still has the printed link.
        let _ = std::process::Command::new("xdg-open")
            .arg(&running.login_url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    Ok(running)
}

async fn run_dashboard(args: DashboardArgs) -> anyhow::Result<()> {
    let path = match args.kubeconfig {
        Some(p) => p,
        None => match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            // The first file of a KUBECONFIG list.
            Some(v) => std::env::split_paths(&v)
                .next()
                .context("KUBECONFIG is empty")?,
            None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?)
                .join(".kube/config"),
        },
    };
    let running = start_dashboard(&path, args.port, args.open).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = running.task => anyhow::bail!("the dashboard stopped unexpectedly"),
    }
    Ok(())
}

async fn run_controller_manager(args: ControllerManagerArgs) -> anyhow::Result<()> {
    let config = config_from_kubeconfig(&args.kubeconfig).await?;
    let root_ca_pem = match &args.root_ca_file {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => k1s_controller_manager::ca_bundle_pem(&config),
    };
    let client = kube::Client::try_from(config).context("building the API client")?;
    let clients: k1s_controller_manager::ClientSource = Arc::new(move |_| client.clone());
    let timings = args
        .controller
        .leader_election
        .timings(k1s_controller_manager::leaderelection::Timings::UPSTREAM)?;
    let mut options = args
        .controller
        .options((!root_ca_pem.is_empty()).then_some(root_ca_pem), timings);
    options.cluster_signing_cert_file = args.cluster_signing_cert_file;
    options.cluster_signing_key_file = args.cluster_signing_key_file;
    if let Some(path) = &args.service_account_private_key_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let key = k1s_kubeadm_lite::jws::SigningKey::from_pem(&text).map_err(|e| {
            anyhow::anyhow!("--service-account-private-key-file {}: {e}", path.display())
        })?;
        options.legacy_token_signer = Some(k1s_controller_manager::LegacyTokenSigner(Arc::new(
            move |c: &k1s_controller_manager::LegacyTokenClaims<'_>| {
                key.legacy_token(
                    c.namespace,
                    c.service_account_name,
                    c.service_account_uid,
                    c.secret_name,
                )
            },
        )));
    }
    println!(
        "k1s controller-manager: identity {}; {}",
        options.identity,
        if options.leader_elect {
            "waiting for the lease kube-system/kube-controller-manager"
        } else {
            "leader election off"
        }
    );
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let metrics = Arc::new(k1s_controller_manager::metrics::Metrics::default());
    run_until_signal(
        k1s_controller_manager::run(clients, options, metrics, shutdown),
        stop,
    )
    .await
}

/// A kube client configuration from a kubeconfig file.
async fn config_from_kubeconfig(path: &std::path::Path) -> anyhow::Result<kube::Config> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .with_context(|| format!("loading {}", path.display()))
}

/// A kube client from a kubeconfig file.
async fn client_from_kubeconfig(path: &std::path::Path) -> anyhow::Result<kube::Client> {
    let config = config_from_kubeconfig(path).await?;
    kube::Client::try_from(config).context("building the API client")
}

/// Runs `task` until it ends or SIGINT/SIGTERM, then signals shutdown and waits up to 5 s.
async fn run_until_signal(
    task: impl std::future::Future<Output = Result<(), String>> + Send + 'static,
    stop: tokio::sync::watch::Sender<bool>,
) -> anyhow::Result<()> {
    let mut run = tokio::spawn(task);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        result = &mut run => {
            return match result {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(anyhow::anyhow!(e)),
                Err(e) => Err(e.into()),
            };
        }
    }
    let _ = stop.send(true);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), run).await;
    Ok(())
}

async fn run_scheduler(args: SchedulerArgs) -> anyhow::Result<()> {
    let client = client_from_kubeconfig(&args.kubeconfig).await?;
    let options = k1s_scheduler::Options {
        leader_elect: args.leader_elect,
        leader_elect_timings: args
            .leader_election
            .timings(k1s_controller_manager::leaderelection::Timings::UPSTREAM)?,
        ..Default::default()
    };
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    run_until_signal(k1s_scheduler::run(client, options, shutdown), stop).await
}

async fn run_nodes(args: NodeArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.count > 0, "--count must be at least 1");
    let client = client_from_kubeconfig(&args.kubeconfig).await?;
    // Remotely every node acts as the kubeconfig's user.
    let clients: k1s_simnode::ClientFor = Arc::new(move |_| client.clone());
    let names = if args.count == 1 {
        vec![args.name.clone()]
    } else {
        (0..args.count)
            .map(|i| format!("{}-{i}", args.name))
            .collect()
    };
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let mut options = args.shape.options(names);
    options.cidr_check_delay = k1s_simnode::JOINING_NODE_CIDR_CHECK_DELAY;
    run_until_signal(k1s_simnode::run(clients, options, shutdown), stop).await
}

fn host_node_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_ascii_lowercase())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "k1s-control-plane".into())
}

/// Init's options: the flags, or a `--config` file over the defaults (the flags a file
/// replaces are refused beside it, as kubeadm does). Prints the file's warnings.
fn init_options(
    args: &InitArgs,
    given: &[String],
) -> anyhow::Result<k1s_kubeadm_lite::init::InitOptions> {
    use k1s_kubeadm_lite::{config, init, token};
    config::check_mixed_args(given, &config::INIT_FILE_FLAGS)?;
    init::check_phase_names(&args.skip_phases)?;
    let data_dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => default_data_dir()?,
    };
    let token = match &args.token {
        Some(t) => {
            token::parse_token(t)?;
            t.clone()
        }
        None => token::generate_token()?,
    };
    let advertise_address = args
        .apiserver_advertise_address
        .or_else(k1s_apiserver::bootstrap::default_advertise_address)
        .unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let mut opts = init::InitOptions {
        cert_dir: args
            .cert_dir
            .clone()
            .unwrap_or_else(|| data_dir.join("pki")),
        data_dir,
        advertise_address,
        bind_port: args.apiserver_bind_port,
        cert_extra_sans: args.apiserver_cert_extra_sans.clone(),
        node_name: args.node_name.clone().unwrap_or_else(host_node_name),
        tokens: vec![init::TokenSpec::from_flags(
            &token,
            token::parse_duration(&args.token_ttl)?,
        )],
        service_subnet: args.service_cidr.clone(),
        pod_subnet: args.pod_network_cidr.clone(),
        dns_domain: args.service_dns_domain.clone(),
        skip_phases: args.skip_phases.clone(),
        cluster_name: init::CLUSTER_NAME.into(),
        control_plane_endpoint: None,
        taints: None,
        dry_run: args.dry_run,
        certificate_key: args.certificate_key.clone(),
        etcd_external: (!args.etcd.etcd_servers.is_empty()).then(|| init::EtcdExternal {
            endpoints: args.etcd.etcd_servers.clone(),
            ca_file: path_text(&args.etcd.etcd_cafile),
            cert_file: path_text(&args.etcd.etcd_certfile),
            key_file: path_text(&args.etcd.etcd_keyfile),
        }),
    };
    if let Some(path) = &args.config {
        let loaded = config::read_file(path, false)?;
        for w in config::apply_init(&loaded, &mut opts)? {
            eprintln!("{w}");
        }
        // --node-name may accompany --config (kubeadm allows it); given, it wins.
        if let Some(name) = &args.node_name {
            opts.node_name = name.clone();
        }
        init::check_phase_names(&opts.skip_phases)?;
    }
    Ok(opts)
}

/// A path flag's text, or `default` when the flag is not given.
fn flag_or(flag: &Option<PathBuf>, default: String) -> String {
    match flag {
        Some(p) => p.display().to_string(),
        None => default,
    }
}

fn path_text(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// The etcd flags for a ClusterConfiguration's etcd.external (prefix and compaction from the
/// flags given).
fn etcd_flags_for(e: &k1s_kubeadm_lite::init::EtcdExternal, flags: &EtcdFlags) -> EtcdFlags {
    let path = |s: &str| (!s.is_empty()).then(|| PathBuf::from(s));
    EtcdFlags {
        etcd_servers: e.endpoints.clone(),
        etcd_cafile: path(&e.ca_file),
        etcd_certfile: path(&e.cert_file),
        etcd_keyfile: path(&e.key_file),
        etcd_prefix: flags.etcd_prefix.clone(),
        etcd_compaction_interval: flags.etcd_compaction_interval,
    }
}

/// The flags given on the command line (not defaults or environment), by their long names.
fn given_flags(m: &clap::ArgMatches) -> Vec<String> {
    m.ids()
        .filter(|id| {
            m.try_get_raw(id.as_str()).is_ok()
                && m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|id| id.as_str().replace('_', "-"))
        .collect()
}

/// Renews certificates that expire within 30 days (as k3s does at start) and logs each.
fn renew_due_certificates(data_dir: &std::path::Path, cert_dir: &std::path::Path) {
    match k1s_kubeadm_lite::cmd::renew_due(data_dir, cert_dir) {
        Ok(lines) => lines.iter().for_each(|l| eprintln!("{l}")),
        Err(e) => eprintln!("[certs] WARNING: renewing certificates that expire soon: {e}"),
    }
}

/// `k1s init`: kubeadm's phases around an in-process control plane that then keeps serving.
async fn run_init(mut args: InitArgs, given: &[String]) -> anyhow::Result<()> {
    use k1s_kubeadm_lite::init;
    let started = Instant::now();
    let mut opts = init_options(&args, given)?;
    let certificate_key = if args.upload_certs {
        if opts.etcd_external.is_none() {
            anyhow::bail!(
                "--upload-certs: joining further control planes needs a shared datastore; this cluster's store would be local to this machine. Use --etcd-servers (or ClusterConfiguration etcd.external) to share an etcd"
            );
        }
        let key = match &opts.certificate_key {
            Some(k) => k.clone(),
            None => k1s_kubeadm_lite::cmd::certificate_key()?,
        };
        k1s_kubeadm_lite::copycerts::parse_key(&key)?;
        Some(key)
    } else {
        None
    };
    println!(
        "[init] Using Kubernetes version: {}",
        init::KUBERNETES_VERSION
    );
    if !opts.skips("preflight") {
        opts.bind_port = init::preflight(&opts)?;
    } else if opts.bind_port == 0 {
        anyhow::bail!("--apiserver-bind-port 0 needs the preflight phase (it picks the port)");
    }
    if opts.dry_run {
        println!(
            "[dry-run] Would write the certificates to {}",
            opts.cert_dir.display()
        );
        println!(
            "[dry-run] Would write admin.conf, super-admin.conf, kubelet.conf, controller-manager.conf and scheduler.conf to {}",
            opts.data_dir.display()
        );
        println!(
            "[dry-run] Would serve the API at {} and run the control-plane node {}",
            opts.server_url(),
            opts.node_name
        );
        for t in &opts.tokens {
            println!("[dry-run] Would create the bootstrap token {}", t.token);
        }
        if let Some(unit) = &args.write_systemd_unit {
            println!("[dry-run] Would write the systemd unit {}", unit.display());
        }
        println!("[dry-run] Finished dry-running successfully; nothing was changed.");
        return Ok(());
    }
    std::fs::create_dir_all(&opts.data_dir)
        .with_context(|| format!("creating {}", opts.data_dir.display()))?;
    // The certs phase always loads the PKI (the later phases need the CA); skipping it only
    // requires that the files exist.
    let pki = init::certs(&opts)?;
    if !opts.skips("kubeconfig") {
        init::kubeconfigs(&opts, &pki)?;
    }
    renew_due_certificates(&opts.data_dir, &opts.cert_dir);
    if let Some(unit) = &args.write_systemd_unit {
        let exe = std::env::current_exe().context("finding the k1s binary")?;
        let text = init::systemd_unit(&exe, &init::restart_args(&opts));
        std::fs::write(unit, text).with_context(|| format!("writing {}", unit.display()))?;
        let name = unit
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        println!(
            "[systemd] Wrote {}: it restarts this control plane on the same data. Stop this process, then run: systemctl daemon-reload && systemctl enable --now {name}",
            unit.display()
        );
    }
    println!(
        "[control-plane] k1s runs the API server, controller-manager and scheduler in this process (no static Pods)"
    );
    // kubeadm's controller-manager manifest turns these on.
    args.controller.controllers.push("bootstrapsigner".into());
    args.controller.controllers.push("tokencleaner".into());
    let etcd = match &opts.etcd_external {
        Some(e) => etcd_flags_for(e, &args.etcd).config()?,
        None => None,
    };
    let config = control_plane_server_config(&opts, etcd);
    let options = control_plane_options(
        config,
        args.controller,
        vec![opts.node_name.clone()],
        args.node_shape,
        false,
    )?;
    let running = k1s::ControlPlane::start(options).await?;
    println!(
        "[wait-control-plane] The API server is healthy after {} ms",
        started.elapsed().as_millis()
    );
    // The API phases act as kubeadm's super-admin (system:masters), in process.
    let client = kube::Client::new(
        running.server().in_process_service(UserInfo::new(
            "kubernetes-super-admin",
            vec!["system:masters".into(), "system:authenticated".into()],
        )),
        "default",
    );
    if !opts.skips("upload-config") {
        init::upload_config(&client, &opts).await?;
    }
    match (&certificate_key, opts.skips("upload-certs")) {
        (Some(key), false) => {
            k1s_kubeadm_lite::copycerts::upload(
                &client,
                &opts.cert_dir,
                opts.etcd_external.as_ref(),
                key,
            )
            .await?;
        }
        _ => println!("[upload-certs] Skipping phase. Please see --upload-certs"),
    }
    if !opts.skips("mark-control-plane") {
        init::mark_control_plane(&client, &opts.node_name, opts.taints.as_deref()).await?;
    }
    if !opts.skips("bootstrap-token") {
        let policy = k1s_apiserver::auth::rbac::kubeadm_policy();
        init::bootstrap_token(&client, &opts, pki.ca_cert_pem(), &policy).await?;
    }
    if !opts.skips("show-join-command") {
        let token = &opts.tokens[0].token;
        let join = init::join_command(&opts.endpoint(), token, pki.ca_cert_pem())
            .map_err(anyhow::Error::msg)?;
        if let Some(key) = &certificate_key {
            print!("{}", init::control_plane_join_text(&join, key));
        }
        print!("{}", init::closing_text(&opts.admin_conf(), &join));
    }
    println!(
        "k1s is serving the Kubernetes API at {} (initialized in {} ms)",
        running.server().server_url,
        started.elapsed().as_millis()
    );
    serve_until_signal(running, None).await
}

/// `k1s init phase NAME [SUB]`: one phase; the API phases go through the admin kubeconfig.
async fn run_init_phase(phase: PhaseArgs, given: &[String]) -> anyhow::Result<()> {
    use k1s_kubeadm_lite::{api, phases};
    let sub = phases::resolve(&phase.name, phase.sub.as_deref())?;
    let opts = init_options(&phase.args, given)?;
    if phases::run_local(&phase.name, sub, &opts)? {
        return Ok(());
    }
    let kubeconfig = phase.kubeconfig.unwrap_or_else(|| opts.admin_conf());
    let client = api::client_from_kubeconfig(&kubeconfig).await?;
    let policy = k1s_apiserver::auth::rbac::kubeadm_policy();
    phases::run_api(
        &phase.name,
        sub,
        &opts,
        &client,
        &policy,
        phase.args.upload_certs,
    )
    .await?;
    Ok(())
}

async fn run_join(args: JoinArgs, given: &[String]) -> anyhow::Result<()> {
    use k1s_kubeadm_lite::{config, join, token};
    let started = Instant::now();
    config::check_mixed_args(given, &config::JOIN_FILE_FLAGS)?;
    let data_dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => default_data_dir()?,
    };
    // kubeadm's --token stands in for whichever of the two tokens is not given; with file
    // discovery there is no discovery token to stand in for.
    let discovery_token = args.discovery_token.clone().or_else(|| {
        args.discovery_file
            .is_none()
            .then(|| args.token.clone())
            .flatten()
    });
    let mut opts = join::JoinOptions {
        endpoint: args.endpoint.clone().unwrap_or_default(),
        token: discovery_token.clone().unwrap_or_default(),
        tls_bootstrap_token: args
            .tls_bootstrap_token
            .clone()
            .or_else(|| args.token.clone())
            .unwrap_or_default(),
        discovery_file: args.discovery_file.clone(),
        ca_cert_hashes: args.discovery_token_ca_cert_hash.clone(),
        unsafe_skip_ca_verification: args.discovery_token_unsafe_skip_ca_verification,
        node_name: args.node_name.clone().unwrap_or_else(host_node_name),
        data_dir,
        discovery_timeout: token::parse_duration(&args.discovery_timeout)?,
        tls_bootstrap_timeout: token::parse_duration(&args.tls_bootstrap_timeout)?,
    };
    let mut control_plane = args.control_plane || args.certificate_key.is_some();
    let mut file_certificate_key = None;
    if let Some(path) = &args.config {
        let file = config::apply_join(&config::read_file(path, false)?)?;
        for w in &file.warnings {
            eprintln!("{w}");
        }
        match (&args.endpoint, &file.endpoint) {
            (Some(_), _) if file.discovery_file.is_some() => anyhow::bail!(
                "discovery: Invalid value: \"\": bootstrapToken and file cannot both be set (the file sets discovery.file; drop the API server endpoint argument)"
            ),
            (_, _) if file.discovery_file.is_some() => {}
            (Some(arg), _) => eprintln!(
                "[join] WARNING: the API server endpoint {arg} on the command line is ignored with --config; the file's discovery.bootstrapToken.apiServerEndpoint is used"
            ),
            (None, None) => anyhow::bail!(
                "discovery.bootstrapToken.apiServerEndpoint: Required value (the file names no API server)"
            ),
            _ => {}
        }
        opts.endpoint = file.endpoint.unwrap_or_default();
        opts.token = file.token.clone().unwrap_or_default();
        opts.discovery_file = file.discovery_file.clone();
        opts.tls_bootstrap_token = file.tls_bootstrap_token.unwrap_or_default();
        opts.ca_cert_hashes = file.ca_cert_hashes;
        opts.unsafe_skip_ca_verification = file.unsafe_skip_ca_verification;
        if args.node_name.is_none()
            && let Some(name) = file.node_name
        {
            opts.node_name = name;
        }
        if let Some(t) = file.discovery_timeout {
            opts.discovery_timeout = t;
        }
        if let Some(t) = file.tls_bootstrap_timeout {
            opts.tls_bootstrap_timeout = t;
        }
        control_plane |= file.control_plane;
        file_certificate_key = file.certificate_key.clone();
        if file.dry_run {
            match &opts.discovery_file {
                Some(f) => println!(
                    "[dry-run] Would discover the cluster from the discovery file {f} and join as {}; nothing was changed.",
                    opts.node_name
                ),
                None => println!(
                    "[dry-run] Would discover {} with token {} and join as {}; nothing was changed.",
                    opts.endpoint, opts.token, opts.node_name
                ),
            }
            return Ok(());
        }
    } else if args.discovery_file.is_none() {
        if args.endpoint.is_none() {
            anyhow::bail!(
                "the API server endpoint (HOST:PORT) is required (or --discovery-file, or --config)"
            );
        }
        if discovery_token.is_none() {
            anyhow::bail!("--token is required (or --discovery-file, or --config)");
        }
    }
    if control_plane {
        let key = args
            .certificate_key
            .clone()
            .or(file_certificate_key)
            .context(
                "--control-plane needs --certificate-key (printed by 'k1s init --upload-certs')",
            )?;
        return run_join_control_plane(args, opts, &key, started).await;
    }
    let joined = join::join(&opts).await?;
    println!(
        "\nThis node has joined the cluster (in {} ms):\n* Certificate signing request was sent to apiserver and a response was received.\n* The node's credentials were written to {}.\n\nRun 'kubectl get nodes' on the control-plane to see this node join the cluster.",
        started.elapsed().as_millis(),
        joined.kubeconfig.display()
    );
    if args.no_simulated_node {
        return Ok(());
    }
    println!(
        "[kubelet] Running the simulated node {} as system:node:{}",
        opts.node_name, opts.node_name
    );
    // The agent's client follows the credentials the rotation task renews.
    let agent = k1s_kubeadm_lite::rotate::RotatingClient::new(
        client_from_kubeconfig(&joined.kubeconfig).await?,
    );
    let client = agent.client();
    let clients: k1s_simnode::ClientFor = Arc::new(move |_| client.clone());
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(k1s_kubeadm_lite::rotate::run(
        k1s_kubeadm_lite::rotate::RotationOptions {
            kubeconfig: joined.kubeconfig.clone(),
            node_name: opts.node_name.clone(),
            wait_timeout: opts.tls_bootstrap_timeout,
        },
        agent,
        shutdown.clone(),
    ));
    let mut options = args.shape.options(vec![opts.node_name]);
    options.cidr_check_delay = k1s_simnode::JOINING_NODE_CIDR_CHECK_DELAY;
    run_until_signal(k1s_simnode::run(clients, options, shutdown), stop).await
}

/// The API server of a kubeadm-style control-plane node (`init`, `join --control-plane`): on
/// every interface, the PKI and kubeconfigs made by the init phases, the cluster's Service range.
fn control_plane_server_config(
    opts: &k1s_kubeadm_lite::init::InitOptions,
    etcd: Option<k1s_storage::EtcdConfig>,
) -> k1s_apiserver::server::ServerConfig {
    k1s_apiserver::server::ServerConfig {
        data_dir: opts.data_dir.clone(),
        bind_address: IpAddr::from([0, 0, 0, 0]),
        secure_port: opts.bind_port,
        tls_sans: opts.server_sans(),
        ephemeral: false,
        advertise_address: Some(opts.advertise_address),
        kubeconfig_path: Some(opts.admin_conf()),
        cert_dir: Some(opts.cert_dir.clone()),
        skip_admin_kubeconfig: true,
        etcd,
        service_cluster_ip_range: Some(opts.service_subnet.clone()).filter(|s| !s.is_empty()),
        ..Default::default()
    }
}

/// `k1s join --control-plane`: the shared certificates from kubeadm-certs, this machine's own
/// serving certificate and kubeconfigs, then a control plane on the cluster's etcd, in the
/// foreground.
async fn run_join_control_plane(
    args: JoinArgs,
    opts: k1s_kubeadm_lite::join::JoinOptions,
    certificate_key: &str,
    started: Instant,
) -> anyhow::Result<()> {
    use k1s_kubeadm_lite::{copycerts, init, join};
    let prepared = join::prepare_control_plane(&opts, certificate_key).await?;
    let cert_dir = opts.data_dir.join("pki");
    let advertise = args
        .apiserver_advertise_address
        .or_else(k1s_apiserver::bootstrap::default_advertise_address)
        .unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let cluster_text = |p: &str| {
        prepared
            .cluster_config
            .pointer(p)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut init_opts = init::InitOptions {
        data_dir: opts.data_dir.clone(),
        cert_dir: cert_dir.clone(),
        advertise_address: advertise,
        bind_port: args.apiserver_bind_port,
        cert_extra_sans: prepared
            .cluster_config
            .pointer("/apiServer/certSANs")
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        node_name: opts.node_name.clone(),
        tokens: vec![init::TokenSpec::from_flags(
            &opts.token,
            std::time::Duration::ZERO,
        )],
        service_subnet: cluster_text("/networking/serviceSubnet"),
        pod_subnet: cluster_text("/networking/podSubnet"),
        dns_domain: cluster_text("/networking/dnsDomain"),
        skip_phases: vec![],
        cluster_name: Some(cluster_text("/clusterName"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| init::CLUSTER_NAME.into()),
        control_plane_endpoint: None,
        taints: None,
        dry_run: false,
        certificate_key: Some(certificate_key.to_string()),
        // The etcd client files: where the flags say, else where the cluster keeps them
        // (kubeadm writes them to ClusterConfiguration's etcd.external paths).
        etcd_external: Some(init::EtcdExternal {
            endpoints: if args.etcd.etcd_servers.is_empty() {
                prepared.etcd_endpoints.clone()
            } else {
                args.etcd.etcd_servers.clone()
            },
            ca_file: flag_or(
                &args.etcd.etcd_cafile,
                cluster_text("/etcd/external/caFile"),
            ),
            cert_file: flag_or(
                &args.etcd.etcd_certfile,
                cluster_text("/etcd/external/certFile"),
            ),
            key_file: flag_or(
                &args.etcd.etcd_keyfile,
                cluster_text("/etcd/external/keyFile"),
            ),
        }),
    };
    init_opts.bind_port = init::preflight(&init_opts)?;
    let etcd_paths: Vec<(&str, PathBuf)> = init_opts
        .etcd_external
        .as_ref()
        .map(copycerts::external_etcd_files)
        .into_iter()
        .flatten()
        .map(|(name, path)| (name, PathBuf::from(path)))
        .collect();
    for p in copycerts::write(&cert_dir, &prepared.files, &etcd_paths)? {
        println!("[download-certs] Saved {}", p.display());
    }
    let pki = init::certs(&init_opts)?;
    init::kubeconfigs(&init_opts, &pki)?;
    let etcd = init_opts
        .etcd_external
        .as_ref()
        .map(|e| etcd_flags_for(e, &args.etcd))
        .context("no etcd")?
        .config()?;
    let config = control_plane_server_config(&init_opts, etcd);
    let mut controllers = ControllerFlags::parse_defaults();
    controllers.controllers.push("bootstrapsigner".into());
    controllers.controllers.push("tokencleaner".into());
    let node_names = if args.no_simulated_node {
        vec![]
    } else {
        vec![init_opts.node_name.clone()]
    };
    let options = control_plane_options(config, controllers, node_names, args.shape, false)?;
    let running = k1s::ControlPlane::start(options).await?;
    let client = kube::Client::new(
        running.server().in_process_service(UserInfo::new(
            "kubernetes-super-admin",
            vec!["system:masters".into(), "system:authenticated".into()],
        )),
        "default",
    );
    if !args.no_simulated_node {
        init::mark_control_plane(&client, &init_opts.node_name, None).await?;
    }
    println!(
        "\nThis node has joined the cluster and a new control plane instance was created (in {} ms):\n\n\
* Certificate signing request was sent to apiserver and approval was received.\n\
* The Kubelet was informed of the new secure connection details.\n\
* Control plane label and taint were applied to the new node.\n\
* The Kubernetes control plane instances scaled up.\n\n\
To start administering your cluster from this node, you need to run the following as a regular user:\n\n\
\tmkdir -p $HOME/.kube\n\
\tsudo cp -i {admin} $HOME/.kube/config\n\
\tsudo chown $(id -u):$(id -g) $HOME/.kube/config\n\n\
Run 'kubectl get nodes' to see this node join the cluster.",
        started.elapsed().as_millis(),
        admin = init_opts.admin_conf().display()
    );
    println!(
        "k1s is serving the Kubernetes API at {} (joined as a control plane)",
        running.server().server_url
    );
    serve_until_signal(running, None).await
}

async fn run_token(args: TokenArgs) -> anyhow::Result<()> {
    use k1s_kubeadm_lite::{cmd, token};
    match args.command {
        TokenCommand::Generate => println!("{}", token::generate_token()?),
        TokenCommand::Create {
            token,
            ttl,
            usages,
            groups,
            description,
            print_join_command,
        } => {
            let create = cmd::TokenCreate {
                token,
                ttl,
                usages,
                groups,
                description,
                print_join_command,
            };
            println!("{}", cmd::token_create(&args.admin.path()?, &create).await?);
        }
        TokenCommand::List { output } => {
            print!("{}", cmd::token_list(&args.admin.path()?, &output).await?);
        }
        TokenCommand::Delete { tokens } => {
            print!("{}", cmd::token_delete(&args.admin.path()?, &tokens).await?);
        }
    }
    Ok(())
}

fn run_certs(args: CertsArgs) -> anyhow::Result<()> {
    match args.command {
        CertsCommand::CheckExpiration { data_dir, cert_dir } => {
            let (data_dir, cert_dir) = data_and_cert_dirs(data_dir, cert_dir)?;
            print!(
                "{}",
                k1s_kubeadm_lite::cmd::check_expiration(&data_dir, &cert_dir)?
            );
        }
        CertsCommand::Renew {
            name,
            data_dir,
            cert_dir,
        } => {
            let (data_dir, cert_dir) = data_and_cert_dirs(data_dir, cert_dir)?;
            print!(
                "{}",
                k1s_kubeadm_lite::cmd::renew(&data_dir, &cert_dir, &name)?
            );
        }
        CertsCommand::CertificateKey => {
            println!("{}", k1s_kubeadm_lite::cmd::certificate_key()?);
        }
        CertsCommand::GenerateCsr {
            kubeconfig_dir,
            cert_dir,
            apiserver_cert_extra_sans,
            apiserver_advertise_address,
        } => {
            let opts = k1s_kubeadm_lite::PkiOptions::for_server(
                &apiserver_cert_extra_sans,
                apiserver_advertise_address,
            );
            print!(
                "{}",
                k1s_kubeadm_lite::cmd::generate_csr(&kubeconfig_dir, &cert_dir, &opts)?
            );
        }
    }
    Ok(())
}

/// `--data-dir` (default: the usual data dir) and `--cert-dir` (default: its `pki/`).
fn data_and_cert_dirs(
    data_dir: Option<PathBuf>,
    cert_dir: Option<PathBuf>,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let data_dir = match data_dir {
        Some(d) => d,
        None => default_data_dir()?,
    };
    let cert_dir = cert_dir.unwrap_or_else(|| data_dir.join("pki"));
    Ok((data_dir, cert_dir))
}

fn run_kubeconfig(args: KubeconfigArgs) -> anyhow::Result<()> {
    match args.command {
        KubeconfigCommand::User {
            client_name,
            org,
            validity_period,
            data_dir,
            cert_dir,
        } => {
            let (data_dir, cert_dir) = data_and_cert_dirs(data_dir, cert_dir)?;
            print!(
                "{}",
                k1s_kubeadm_lite::cmd::kubeconfig_user(
                    &data_dir,
                    &cert_dir,
                    &client_name,
                    &org,
                    &validity_period
                )?
            );
        }
    }
    Ok(())
}

fn run_config(args: ConfigArgs) -> anyhow::Result<()> {
    match args.command {
        ConfigCommand::Print { what, data_dir } if what == "init-defaults" => {
            let mut defaults = InitArgs::parse_defaults();
            defaults.data_dir = data_dir;
            let mut opts = init_options(&defaults, &[])?;
            opts.tokens[0].token = "abcdef.0123456789abcdef".into();
            opts.advertise_address = IpAddr::from([1, 2, 3, 4]);
            opts.node_name = "node".into();
            print!("{}", k1s_kubeadm_lite::cmd::init_defaults(&opts));
        }
        ConfigCommand::Print { what, .. } if what == "join-defaults" => {
            print!("{}", k1s_kubeadm_lite::cmd::join_defaults("node"));
        }
        ConfigCommand::Print { what, .. } => {
            anyhow::bail!(
                "unknown 'config print' target {what:?}; k1s prints init-defaults and join-defaults"
            )
        }
        ConfigCommand::Migrate {
            old_config,
            new_config,
        } => {
            let text = std::fs::read_to_string(&old_config)
                .with_context(|| format!("reading {}", old_config.display()))?;
            let out = k1s_kubeadm_lite::config::migrate(&text)?;
            match new_config {
                Some(path) => std::fs::write(&path, out)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{out}"),
            }
        }
        ConfigCommand::Validate { config } => {
            let loaded = k1s_kubeadm_lite::config::read_file(&config, true)?;
            for w in &loaded.warnings {
                eprintln!("{w}");
            }
            println!("ok");
        }
        ConfigCommand::Images { what } if what == "list" => {
            println!(
                "# k1s runs the whole control plane from its own binary: it needs no container images."
            );
        }
        ConfigCommand::Images { what } => {
            anyhow::bail!("unknown 'config images' command {what:?}; try 'list'")
        }
    }
    Ok(())
}

impl ControllerFlags {
    /// The flags' defaults (a control plane started by `join --control-plane`).
    fn parse_defaults() -> ControllerFlags {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            c: ControllerFlags,
        }
        Wrap::parse_from(["k1s"]).c
    }
}

impl InitArgs {
    /// The flags' defaults (for `config print init-defaults`).
    fn parse_defaults() -> InitArgs {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            init: InitArgs,
        }
        Wrap::parse_from(["k1s"]).init
    }
}

/// Asks a yes/no question on the terminal, as kubeadm does; anything but yes (or end of input)
/// is no.
fn confirm(question: &str) -> anyhow::Result<bool> {
    use std::io::{BufRead as _, Write as _};
    print!("{question} [y/N]: ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

fn run_reset(args: ResetArgs) -> anyhow::Result<()> {
    let data_dir = match args.data_dir {
        Some(d) => d,
        None => default_data_dir()?,
    };
    let cert_dir = args.cert_dir.unwrap_or_else(|| data_dir.join("pki"));
    let targets = k1s_kubeadm_lite::cmd::reset_targets(&data_dir, &cert_dir);
    if targets.is_empty() {
        println!(
            "[reset] Nothing to remove: no files of 'k1s init' or 'k1s join' under {}",
            data_dir.display()
        );
        return Ok(());
    }
    println!(
        "[reset] WARNING: Changes made to this host by 'k1s init' or 'k1s join' will be reverted."
    );
    for t in &targets {
        println!("[reset] Will remove {}", t.display());
    }
    if !args.force && !confirm("[reset] Are you sure you want to proceed?")? {
        anyhow::bail!("aborted reset operation");
    }
    for removed in k1s_kubeadm_lite::cmd::reset(&data_dir, &cert_dir)? {
        println!("[reset] Deleted {}", removed.display());
    }
    println!(
        "[reset] Stop a running 'k1s init' or 'k1s join' process yourself: reset only removes files."
    );
    Ok(())
}

/// `k1s kube-apiserver <kube-apiserver flags>`: the control plane on envtest's terms, until
/// SIGTERM/SIGINT (exit 0).
async fn run_kube_apiserver(args: Vec<String>) -> anyhow::Result<()> {
    let Some(plan) = envtest::apiserver_plan(&args)? else {
        return Ok(());
    };
    let cluster = k1s::ControlPlane::start(plan.options).await?;
    eprintln!(
        "k1s (as kube-apiserver) is serving at {}",
        cluster.server().server_url
    );
    let result = serve_until_signal(cluster, None).await;
    drop(plan.temp_dir);
    result
}

/// `k1s etcd <etcd flags>`: answers envtest's health probe until SIGTERM/SIGINT (exit 0).
async fn run_etcd(args: Vec<String>) -> anyhow::Result<()> {
    let Some(addresses) = envtest::etcd_listen_addresses(&args)? else {
        return Ok(());
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = term.recv() => Ok(()),
        served = envtest::serve_etcd_health(addresses) => served,
    }
}

/// mimalloc: the server allocates per request from many threads; glibc's malloc spent ~15% of
/// a create's CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("K1S_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Run as `kube-apiserver` or `etcd` (a symlink in KUBEBUILDER_ASSETS): envtest's drop-ins.
    let argv0 = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()));
    let rest = || std::env::args().skip(1).collect::<Vec<_>>();
    match argv0.as_deref() {
        Some("kube-apiserver") => return runtime.block_on(run_kube_apiserver(rest())),
        Some("etcd") => return runtime.block_on(run_etcd(rest())),
        _ => {}
    }
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // kubeadm refuses flags a --config file replaces, so init and join need to know which
    // flags were given (not defaulted).
    let init_m = matches.subcommand_matches("init");
    let given = match (init_m.and_then(|m| m.subcommand_matches("phase")), init_m) {
        (Some(m), _) | (None, Some(m)) => given_flags(m),
        _ => matches
            .subcommand_matches("join")
            .map(given_flags)
            .unwrap_or_default(),
    };
    // The commands that keep running give back what their start-up touched once.
    if matches!(
        cli.command,
        Command::Server(_)
            | Command::ControllerManager(_)
            | Command::Scheduler(_)
            | Command::Node(_)
            | Command::Init(_)
            | Command::Join(_)
    ) {
        resident::spawn_trimmer();
    }
    match cli.command {
        Command::Server(args) => runtime.block_on(run_server(args)),
        Command::ControllerManager(args) => runtime.block_on(run_controller_manager(args)),
        Command::Scheduler(args) => runtime.block_on(run_scheduler(args)),
        Command::Node(args) => runtime.block_on(run_nodes(args)),
        Command::Bench(args) => runtime.block_on(k1s_bench::run(args)),
        Command::Migrate(args) => runtime.block_on(run_migrate(args)),
        Command::Snapshot(args) => runtime.block_on(snapshot::run(args)),
        Command::Upgrade(args) => runtime.block_on(upgrade::run(args)),
        Command::Init(InitCmd {
            command: Some(InitSubcommand::Phase(phase)),
            ..
        }) => runtime.block_on(run_init_phase(phase, &given)),
        Command::Init(InitCmd { args, .. }) => runtime.block_on(run_init(args, &given)),
        Command::Join(args) => runtime.block_on(run_join(args, &given)),
        Command::Token(args) => runtime.block_on(run_token(args)),
        Command::Certs(args) => run_certs(args),
        Command::Config(args) => run_config(args),
        Command::Kubeconfig(args) => run_kubeconfig(args),
        Command::Reset(args) => run_reset(args),
        Command::Dashboard(args) => runtime.block_on(run_dashboard(args)),
        Command::KubeApiserver { args } => runtime.block_on(run_kube_apiserver(args)),
        Command::Etcd { args } => runtime.block_on(run_etcd(args)),
    }
}
