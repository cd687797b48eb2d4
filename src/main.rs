//! The `k1s` command line: parses flags and wires the crates together; no logic lives here.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Parser, Subcommand};

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
enum Command {
    /// Run the Kubernetes API server (PKI and kubeconfig are created on first start).
    Server(ServerArgs),
    /// Load any Kubernetes API server through a kubeconfig (HTTP/2 over TLS) and report figures.
    Bench(k1s_bench::BenchArgs),
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
    let mut server = k1s_apiserver::server::start(config)
        .await
        .context("starting the API server")?;
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
    server.shutdown().await;
    Ok(())
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
        Command::Bench(args) => runtime.block_on(k1s_bench::run(args)),
    }
}
