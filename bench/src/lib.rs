//! `k1s bench`: a Kubernetes API load generator for any cluster reachable through a kubeconfig
//! (k1s or upstream kube-apiserver), speaking HTTP/2 over TLS on a pool of connections.
//!
//! Every scenario works in a namespace of its own (`<prefix>-<random>`, created at the start and
//! deleted at the end) and only ever talks to the kubeconfig's server.

pub mod client;
mod namespace;
pub mod report;
mod scenarios;
pub mod stats;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::ValueEnum;
use tokio::time::Instant;

pub use client::{ApiClient, ApiError};
pub use report::{BenchReport, ScenarioReport, Settings};
pub use stats::{LatencySummary, percentile};

/// A load scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Sequential creates of ConfigMaps from one client: latency and creates/s.
    CreateSeq,
    /// Creates from --concurrency workers over --connections HTTP/2 connections.
    CreatePar,
    /// Read-modify-write updates of a few shared objects, retried on 409 Conflict.
    UpdateConflict,
    /// Full lists of --objects ConfigMaps, unpaged and in pages of --page-size.
    List,
    /// --watchers watches, then --watch-writes creates: delivery latency and missed events.
    Watch,
    /// Every scenario above, in that order.
    All,
}

impl Scenario {
    const ORDER: [Scenario; 5] = [
        Scenario::CreateSeq,
        Scenario::CreatePar,
        Scenario::UpdateConflict,
        Scenario::List,
        Scenario::Watch,
    ];

    /// The scenarios to run for `selected`, in the canonical order, each once.
    pub fn expand(selected: &[Scenario]) -> Vec<Scenario> {
        let all = selected.is_empty() || selected.contains(&Scenario::All);
        Self::ORDER
            .into_iter()
            .filter(|s| all || selected.contains(s))
            .collect()
    }
}

/// `k1s bench`: load a Kubernetes API server through a kubeconfig.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// The kubeconfig of the cluster to load; only its server is ever contacted.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Scenarios to run, in the order create-seq, create-par, update-conflict, list, watch.
    #[arg(value_enum, default_value = "all")]
    pub scenarios: Vec<Scenario>,
    /// Objects created by create-seq, create-par and list.
    #[arg(short = 'n', long, default_value_t = 1000)]
    pub objects: usize,
    /// Concurrent workers (create-par, update-conflict, setup and cleanup).
    #[arg(short = 'c', long, default_value_t = 64)]
    pub concurrency: usize,
    /// HTTP/2 connections; workers and watchers are spread over them.
    #[arg(long, default_value_t = 8)]
    pub connections: usize,
    /// Shared objects contended for by update-conflict.
    #[arg(long, default_value_t = 4)]
    pub shared_objects: usize,
    /// Successful updates update-conflict performs (default: --objects).
    #[arg(long)]
    pub updates: Option<usize>,
    /// Concurrent watchers in the watch scenario.
    #[arg(short = 'w', long, default_value_t = 100)]
    pub watchers: usize,
    /// Writes observed by the watchers.
    #[arg(short = 'k', long, default_value_t = 1000)]
    pub watch_writes: usize,
    /// Concurrent writers in the watch scenario (1: one write after another).
    #[arg(long, default_value_t = 1)]
    pub watch_writers: usize,
    /// Bytes of data per ConfigMap.
    #[arg(long, default_value_t = 1024)]
    pub object_size: usize,
    /// `limit` of the paged lists.
    #[arg(long, default_value_t = 500)]
    pub page_size: usize,
    /// Full lists per way of listing.
    #[arg(long, default_value_t = 5)]
    pub list_repeats: usize,
    /// Overall time limit in seconds: scenarios stop there, then the namespace is cleaned up.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Time limit of one request in seconds.
    #[arg(long, default_value_t = 30)]
    pub request_timeout: u64,
    /// Seconds to wait for the namespace to go away before deleting what is left in it one by
    /// one (a server without a namespace controller leaves it Terminating).
    #[arg(long, default_value_t = 3)]
    pub namespace_delete_wait: u64,
    /// Namespace name prefix (a random suffix is added).
    #[arg(long, default_value = "k1s-bench")]
    pub namespace_prefix: String,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The process id of the server, when it runs on this host: create-seq and create-par then
    /// report the bytes it wrote to storage (`write_bytes` of /proc/<PID>/io) per create.
    #[arg(long, value_name = "PID")]
    pub report_server_io: Option<u32>,
}

impl BenchArgs {
    /// The effective sizes, checked.
    pub fn settings(&self) -> anyhow::Result<Settings> {
        let positive = [
            ("--objects", self.objects),
            ("--concurrency", self.concurrency),
            ("--connections", self.connections),
            ("--shared-objects", self.shared_objects),
            ("--watchers", self.watchers),
            ("--watch-writes", self.watch_writes),
            ("--watch-writers", self.watch_writers),
            ("--page-size", self.page_size),
            ("--list-repeats", self.list_repeats),
            (
                "--timeout",
                usize::try_from(self.timeout).unwrap_or(usize::MAX),
            ),
            (
                "--request-timeout",
                usize::try_from(self.request_timeout).unwrap_or(usize::MAX),
            ),
        ];
        for (flag, value) in positive {
            anyhow::ensure!(value > 0, "{flag} must be at least 1");
        }
        anyhow::ensure!(
            self.connections <= 1024,
            "--connections must be at most 1024"
        );
        namespace::check_prefix(&self.namespace_prefix)?;
        Ok(Settings {
            objects: self.objects,
            concurrency: self.concurrency,
            connections: self.connections,
            shared_objects: self.shared_objects,
            updates: self.updates.unwrap_or(self.objects),
            watchers: self.watchers,
            watch_writes: self.watch_writes,
            watch_writers: self.watch_writers,
            object_size: self.object_size,
            page_size: self.page_size,
            list_repeats: self.list_repeats,
            timeout_seconds: self.timeout,
            request_timeout_seconds: self.request_timeout,
            server_io_pid: self.report_server_io,
        })
    }
}

/// Runs the selected scenarios and returns the report. The namespace is deleted at the end
/// even when the deadline passed or Ctrl-C was pressed (a second Ctrl-C exits at once).
pub async fn bench(args: &BenchArgs) -> anyhow::Result<BenchReport> {
    let settings = args.settings()?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(settings.timeout_seconds);
    let kubeconfig =
        k1s_kubeadm_lite::Kubeconfig::load_context(&args.kubeconfig, args.context.as_deref())
            .with_context(|| format!("reading {}", args.kubeconfig.display()))?;
    let client = Arc::new(ApiClient::new(
        &kubeconfig,
        settings.connections,
        Duration::from_secs(settings.request_timeout_seconds),
    )?);
    tokio::time::timeout_at(deadline, client.connect_all())
        .await
        .with_context(|| format!("connecting to {}: timed out", client.server()))??;

    let ns = namespace::random_name(&args.namespace_prefix);
    namespace::create(&client, &ns).await?;
    eprintln!("k1s bench: {} namespace {ns}", client.server());

    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(false);
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("interrupted: stopping and cleaning up (Ctrl-C again to exit now)");
            let _ = cancel_tx.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    let ctx = Arc::new(scenarios::Ctx::new(
        client.clone(),
        ns.clone(),
        settings.clone(),
        deadline,
        cancel_rx,
    ));

    let selected = Scenario::expand(&args.scenarios);
    let mut reports = Vec::new();
    for scenario in &selected {
        if ctx.past_deadline() {
            break;
        }
        eprintln!("running {}", scenario_name(*scenario));
        let report = match scenario {
            Scenario::CreateSeq => {
                ScenarioReport::CreateSeq(scenarios::create::run(&ctx, "create-seq", 1).await)
            }
            Scenario::CreatePar => ScenarioReport::CreatePar(
                scenarios::create::run(&ctx, "create-par", settings.concurrency).await,
            ),
            Scenario::UpdateConflict => {
                ScenarioReport::UpdateConflict(scenarios::update::run(&ctx).await)
            }
            Scenario::List => ScenarioReport::List(scenarios::list::run(&ctx).await),
            Scenario::Watch => ScenarioReport::Watch(scenarios::watch::run(&ctx).await),
            Scenario::All => continue,
        };
        for e in &report.errors().error_samples {
            eprintln!("  {}: {e}", report.name());
        }
        reports.push(report);
    }
    let interrupted = reports.len() < selected.len() || ctx.past_deadline();

    eprintln!("deleting namespace {ns}");
    let cleanup = namespace::delete(&ctx, Duration::from_secs(args.namespace_delete_wait)).await;
    ctrl_c.abort();
    Ok(BenchReport {
        server: client.server().to_string(),
        namespace: ns,
        settings,
        scenarios: reports,
        cleanup,
        total_seconds: started.elapsed().as_secs_f64(),
        interrupted,
    })
}

fn scenario_name(s: Scenario) -> String {
    s.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// `k1s bench`: runs the scenarios, prints the table (or JSON with `--json`) on stdout, and
/// fails when a request failed, an update was lost, a watch event was missed or the run was
/// cut short.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let report = bench(&args).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.table());
    }
    let failures = report.failures();
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench").chain(argv.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn defaults_and_scenario_selection() {
        let a = parse(&["--kubeconfig", "k"]).unwrap();
        let s = a.settings().unwrap();
        assert_eq!(
            (
                s.objects,
                s.concurrency,
                s.connections,
                s.watchers,
                s.watch_writes,
                s.updates
            ),
            (1000, 64, 8, 100, 1000, 1000)
        );
        assert_eq!(Scenario::expand(&a.scenarios), Scenario::ORDER.to_vec());

        let a = parse(&[
            "--kubeconfig",
            "k",
            "watch",
            "create-seq",
            "-n",
            "50",
            "--json",
        ])
        .unwrap();
        assert_eq!(
            Scenario::expand(&a.scenarios),
            vec![Scenario::CreateSeq, Scenario::Watch]
        );
        assert_eq!((a.objects, a.json), (50, true));
        assert!(parse(&["--kubeconfig", "k", "nope"]).is_err());
        assert!(parse(&["create-seq"]).is_err(), "--kubeconfig is required");

        for bad in [
            &["--kubeconfig", "k", "-c", "0"][..],
            &["--kubeconfig", "k", "--connections", "0"],
            &["--kubeconfig", "k", "--timeout", "0"],
            &["--kubeconfig", "k", "--namespace-prefix", "Bad_Prefix"],
        ] {
            assert!(parse(bad).unwrap().settings().is_err(), "{bad:?}");
        }
    }
}
