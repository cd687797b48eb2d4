//! The `k1s` command line: parses flags and wires the crates together; no logic lives here.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::{Parser, Subcommand};
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
}

fn go_duration(s: &str) -> Result<std::time::Duration, String> {
    k1s_controller_manager::controllers::podautoscaler::parse_go_duration(s)
        .ok_or_else(|| format!("invalid duration {s:?} (e.g. 15s, 1m30s)"))
}

impl ControllerFlags {
    /// The controller-manager's options from these flags, publishing `root_ca_pem`.
    fn options(self, root_ca_pem: Option<String>) -> k1s_controller_manager::Options {
        k1s_controller_manager::Options {
            controllers: self.controllers,
            leader_elect: self.leader_elect,
            concurrent_syncs: self.concurrency.into_map(),
            terminated_pod_gc_threshold: self.terminated_pod_gc_threshold,
            node_monitor_grace_period: self.node_monitor_grace_period,
            hpa_sync_period: self.horizontal_pod_autoscaler_sync_period,
            hpa_downscale_stabilization: self.horizontal_pod_autoscaler_downscale_stabilization,
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
    };
    let controllers = args.controller;
    let leader_elect = controllers.leader_elect;
    let selected =
        k1s_controller_manager::selected(&controllers.controllers).map_err(anyhow::Error::msg)?;
    let mut server = k1s_apiserver::server::start(config)
        .await
        .context("starting the API server")?;
    // The controller-manager in process: its clients enter the server's filter chain after TLS,
    // each controller as its own service account.
    let entry = server
        .in_process_service(UserInfo::new(
            "system:kube-controller-manager",
            vec!["system:authenticated".into()],
        ))
        .with_user_agent(&component_user_agent("kube-controller-manager"));
    let clients: k1s_controller_manager::ClientSource = Arc::new(move |sa: Option<&str>| {
        let service = match sa {
            Some(sa) => entry.as_user(UserInfo::service_account("kube-system", sa)),
            None => entry.clone(),
        };
        kube::Client::new(service, "default")
    });
    let cm_metrics = Arc::new(k1s_controller_manager::metrics::Metrics::default());
    {
        let m = cm_metrics.clone();
        server.add_metrics(Box::new(move || m.render()));
    }
    let cm_options = controllers.options(Some(server.ca_pem.clone()));
    let (stop_controllers, controllers_stopped) = tokio::sync::watch::channel(false);
    // `--controllers=-*`: a bare API server, with no controller-manager (and no leader election).
    let controller_manager = (!selected.is_empty()).then(|| {
        tokio::spawn(k1s_controller_manager::run(
            clients,
            cm_options,
            cm_metrics,
            controllers_stopped.clone(),
        ))
    });
    // The scheduler in process, as `system:kube-scheduler`.
    let scheduler = (!args.disable_scheduler).then(|| {
        let client = kube::Client::new(
            server
                .in_process_service(UserInfo::new(
                    "system:kube-scheduler",
                    vec!["system:authenticated".into()],
                ))
                .with_user_agent(&component_user_agent("kube-scheduler")),
            "default",
        );
        let options = k1s_scheduler::Options {
            leader_elect,
            ..Default::default()
        };
        tokio::spawn(k1s_scheduler::run(
            client,
            options,
            controllers_stopped.clone(),
        ))
    });
    // Simulated nodes in process, each acting as `system:node:<name>`.
    let nodes = (args.nodes > 0).then(|| {
        let entry = server
            .in_process_service(UserInfo::new(
                "system:node:k1s-node-0",
                vec!["system:nodes".into(), "system:authenticated".into()],
            ))
            .with_user_agent(&component_user_agent("kubelet"));
        let clients: k1s_simnode::ClientFor = Arc::new(move |name: &str| {
            kube::Client::new(
                entry.as_user(UserInfo::new(
                    format!("system:node:{name}"),
                    vec!["system:nodes".into(), "system:authenticated".into()],
                )),
                "default",
            )
        });
        let names = (0..args.nodes).map(|i| format!("k1s-node-{i}")).collect();
        tokio::spawn(k1s_simnode::run(
            clients,
            args.node_shape.options(names),
            controllers_stopped.clone(),
        ))
    });
    println!(
        "k1s is serving the Kubernetes API at https://{} (ready in {} ms)\n  kubeconfig: {}\n  try: export KUBECONFIG={} && kubectl get namespaces",
        server.local_addr,
        started.elapsed().as_millis(),
        server.kubeconfig.display(),
        server.kubeconfig.display(),
    );
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = server.wait() => anyhow::bail!("the server stopped unexpectedly"),
    }
    eprintln!("shutting down");
    // The controllers stop first (the lease is released while the API still answers).
    let _ = stop_controllers.send(true);
    for task in [controller_manager, scheduler, nodes].into_iter().flatten() {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), task).await;
    }
    server.shutdown().await;
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
    let options = args
        .controller
        .options((!root_ca_pem.is_empty()).then_some(root_ca_pem));
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
    run_until_signal(
        k1s_simnode::run(clients, args.shape.options(names), shutdown),
        stop,
    )
    .await
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
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::Server(args) => runtime.block_on(run_server(args)),
        Command::ControllerManager(args) => runtime.block_on(run_controller_manager(args)),
        Command::Scheduler(args) => runtime.block_on(run_scheduler(args)),
        Command::Node(args) => runtime.block_on(run_nodes(args)),
        Command::Bench(args) => runtime.block_on(k1s_bench::run(args)),
    }
}

/// The `User-Agent` of an in-process component, shaped as upstream's
/// (`kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/k1s`): the field manager of its
/// writes is the part before the first '/'.
fn component_user_agent(component: &str) -> String {
    format!(
        "{component}/{} ({}/{}) kubernetes/k1s",
        k1s_apiserver::openapi::KUBERNETES_VERSION,
        std::env::consts::OS,
        match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        }
    )
}
