//! The controller-manager: upstream's controllers on shared typed informers, speaking only the
//! Kubernetes API through kube-rs (in process over the API server's in-process `Service`, or
//! remotely over HTTPS). Shaped as client-go's: `informer` (shared informers and indexed caches),
//! `workqueue`, `expectations`, `events` (core/v1) and `events_v1` (events.k8s.io/v1),
//! `leaderelection`, `controller` (the worker loop), and one module per controller under
//! `controllers/`, named as upstream's.

pub mod controller;
pub mod controllers;
pub mod deephash;
pub mod events;
pub mod events_v1;
pub mod expectations;
pub mod informer;
pub mod leaderelection;
pub mod metrics;
pub mod workqueue;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;

pub use controller::{Action, Error, Reconciler};
pub use controllers::{ControllerDescriptor, DESCRIPTORS};
pub use informer::SharedInformerFactory;

use crate::events::EventRecorder;
use crate::leaderelection::{LeaderElectionConfig, LeaderElector};
use crate::metrics::Metrics;
use crate::workqueue::{RateLimiter, WorkQueue};

/// Gives a `kube::Client` acting as a controller's service account (upstream's
/// `--use-service-account-credentials`), or as the controller-manager itself (`None`: shared
/// informers, leader election).
pub type ClientSource = Arc<dyn Fn(Option<&str>) -> Client + Send + Sync>;

/// The identity a controller acts as: `system:serviceaccount:kube-system:<name>`.
pub fn service_account_user(name: &str) -> String {
    format!("system:serviceaccount:kube-system:{name}")
}

/// The CA bundle a kubeconfig trusts, as PEM (for `kube-root-ca.crt` when no file is given).
pub fn ca_bundle_pem(config: &kube::Config) -> String {
    use base64::Engine;
    let mut out = String::new();
    for der in config.root_cert.iter().flatten() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            out.push_str(&String::from_utf8_lossy(chunk));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

/// Settings, with kube-controller-manager's flag names where one exists.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--controllers`: `*` (every controller on by default), `name`, `-name`.
    pub controllers: Vec<String>,
    /// `--leader-elect` (on by default, as upstream).
    pub leader_elect: bool,
    /// The lease name (`kube-controller-manager`).
    pub leader_elect_resource_name: String,
    /// `--leader-elect-lease-duration`, `-renew-deadline`, `-retry-period`.
    pub leader_elect_timings: leaderelection::Timings,
    /// The cluster CA bundle published as `kube-root-ca.crt` (root-ca-certificate-publisher).
    pub root_ca_pem: Option<String>,
    /// `--min-resync-period`-like: how often informers replay their cache (none by default).
    pub resync: Option<Duration>,
    /// This process's leader-election identity (upstream: `<hostname>_<uuid>`).
    pub identity: String,
    /// Worker counts set by upstream's `--concurrent-<name>-syncs` flags, by `<name>`
    /// (`namespace`, `gc`, `endpoint`, ...); controllers fall back to upstream's defaults.
    pub concurrent_syncs: std::collections::BTreeMap<String, usize>,
    /// `--terminated-pod-gc-threshold`: terminated pods kept before the oldest are deleted
    /// (upstream's default 12,500; 0 turns that part of the pod GC off).
    pub terminated_pod_gc_threshold: usize,
    /// How often the pod GC looks (upstream: 20 s); tests shorten it.
    pub pod_gc_period: Option<Duration>,
    /// `--node-monitor-grace-period`: how long a node's Lease may go unrenewed before the node
    /// lifecycle controller marks it Unknown (upstream: 40 s).
    pub node_monitor_grace_period: Duration,
    /// `--horizontal-pod-autoscaler-sync-period` (upstream: 15 s); tests shorten it.
    pub hpa_sync_period: Option<Duration>,
    /// `--horizontal-pod-autoscaler-downscale-stabilization` (upstream: 5 minutes).
    pub hpa_downscale_stabilization: Option<Duration>,
    /// `--resource-quota-sync-period`: how often every quota is recalculated in full
    /// (upstream: 5 minutes).
    pub resource_quota_sync_period: Option<Duration>,
    /// `--cluster-signing-cert-file` / `--cluster-signing-key-file`: the CA csrsigning issues
    /// certificates with (csrsigning does not run without them).
    pub cluster_signing_cert_file: Option<std::path::PathBuf>,
    pub cluster_signing_key_file: Option<std::path::PathBuf>,
    /// `--cluster-signing-duration`: the longest certificate csrsigning issues (one year).
    pub cluster_signing_duration: Duration,
    /// Signs the tokens of `kubernetes.io/service-account-token` Secrets with the service-account
    /// key (upstream: `--service-account-private-key-file`); the serviceaccount-token controller
    /// does not run without it.
    pub legacy_token_signer: Option<LegacyTokenSigner>,
    /// `--legacy-service-account-token-clean-up-period`: how long an auto-generated legacy token
    /// goes unused before it is invalidated, and then deleted (upstream: one year).
    pub legacy_token_clean_up_period: Duration,
    /// How often that is evaluated (upstream: a day); tests shorten it.
    pub legacy_token_clean_up_sync_interval: Option<Duration>,
}

/// What a legacy service-account token says: whose it is and which Secret holds it.
#[derive(Debug, Clone, Copy)]
pub struct LegacyTokenClaims<'a> {
    pub namespace: &'a str,
    pub service_account_name: &'a str,
    pub service_account_uid: &'a str,
    pub secret_name: &'a str,
}

/// Signs a legacy token (a JWT) for the claims, or says why it cannot.
pub type SignLegacyToken = dyn Fn(&LegacyTokenClaims<'_>) -> Result<String, String> + Send + Sync;

/// A [`SignLegacyToken`]; the key stays with whoever made it.
#[derive(Clone)]
pub struct LegacyTokenSigner(pub Arc<SignLegacyToken>);

impl std::fmt::Debug for LegacyTokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LegacyTokenSigner")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            controllers: vec!["*".into()],
            leader_elect: true,
            leader_elect_resource_name: "kube-controller-manager".into(),
            leader_elect_timings: Default::default(),
            root_ca_pem: None,
            identity: format!("{}_{}", hostname(), uuid::Uuid::new_v4()),
            resync: None,
            concurrent_syncs: Default::default(),
            terminated_pod_gc_threshold: 12_500,
            pod_gc_period: None,
            node_monitor_grace_period: Duration::from_secs(40),
            hpa_sync_period: None,
            hpa_downscale_stabilization: None,
            resource_quota_sync_period: None,
            cluster_signing_cert_file: None,
            cluster_signing_key_file: None,
            cluster_signing_duration: Duration::from_secs(365 * 24 * 3600),
            legacy_token_signer: None,
            legacy_token_clean_up_period: Duration::from_secs(365 * 24 * 3600),
            legacy_token_clean_up_sync_interval: None,
        }
    }
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// What one controller is given when it starts.
#[derive(Clone)]
pub struct ControllerContext {
    pub name: &'static str,
    pub factory: Arc<SharedInformerFactory>,
    /// Acts as the controller's service account.
    pub client: Client,
    pub recorder: EventRecorder,
    pub metrics: Arc<Metrics>,
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    pub options: Arc<Options>,
}

impl ControllerContext {
    /// A rate-limited work queue with metrics under the controller's name.
    pub fn queue(&self) -> WorkQueue {
        WorkQueue::new(RateLimiter::default(), Some(self.metrics.queue(self.name)))
    }

    /// The worker count for upstream's `--concurrent-<flag>-syncs`, or its `default`.
    pub fn workers(&self, flag: &str, default: usize) -> usize {
        self.options
            .concurrent_syncs
            .get(flag)
            .copied()
            .unwrap_or(default)
            .max(1)
    }

    /// Runs `controller`'s pass every `period` once every informer created so far has synced,
    /// until shutdown.
    pub fn run_every<P: controller::Periodic>(&self, period: Duration, mut controller: P) {
        let (factory, mut shutdown) = (self.factory.clone(), self.shutdown.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = factory.wait_for_cache_sync() => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            let mut tick = tokio::time::interval(period);
            loop {
                // The watch guard must not live across the pass's awaits.
                let stop = tokio::select! {
                    _ = shutdown.wait_for(|s| *s) => true,
                    _ = tick.tick() => false,
                };
                if stop {
                    return;
                }
                controller.pass().await;
            }
        });
    }

    /// Starts `workers` workers once every informer created so far has synced, so a reconcile
    /// never acts on a half-filled cache.
    pub fn run_workers<R: Reconciler>(&self, reconciler: Arc<R>, queue: WorkQueue, workers: usize) {
        let ctx = self.clone();
        tokio::spawn(async move {
            let mut shutdown = ctx.shutdown.clone();
            let synced = ctx.factory.wait_for_cache_sync();
            tokio::pin!(synced);
            // A cache that takes long to fill is worth a warning (its list is being retried).
            let slow = tokio::time::sleep(Duration::from_secs(10));
            tokio::pin!(slow);
            loop {
                tokio::select! {
                    _ = &mut synced => break,
                    _ = shutdown.wait_for(|s| *s) => return,
                    _ = &mut slow, if !slow.is_elapsed() => {
                        tracing::warn!(controller = ctx.name, "caches not synced after 10 s; still waiting");
                    }
                }
            }
            tracing::debug!(controller = ctx.name, "caches synced; workers start");
            controller::spawn_workers(
                ctx.name,
                reconciler,
                queue,
                workers,
                ctx.metrics.queue(ctx.name),
                ctx.shutdown.clone(),
            );
        });
    }
}

/// Which controllers `--controllers` selects (unknown names are an error, as upstream).
pub fn selected(spec: &[String]) -> Result<Vec<&'static ControllerDescriptor>, String> {
    let mut on: BTreeSet<&'static str> = BTreeSet::new();
    let mut explicit_off: BTreeSet<&'static str> = BTreeSet::new();
    let mut star = false;
    for item in spec.iter().flat_map(|s| s.split(',')).map(str::trim) {
        if item.is_empty() {
            continue;
        }
        if item == "*" {
            star = true;
            continue;
        }
        let (off, name) = match item.strip_prefix('-') {
            Some(n) => (true, n),
            None => (false, item),
        };
        if off && name == "*" {
            explicit_off.extend(DESCRIPTORS.iter().map(|d| d.name));
            continue;
        }
        let d = controllers::find(name).ok_or_else(|| {
            format!("{name:?} is not in the list of known controllers (see --help)")
        })?;
        if off {
            explicit_off.insert(d.name);
        } else {
            on.insert(d.name);
        }
    }
    Ok(DESCRIPTORS
        .iter()
        .filter(|d| {
            !explicit_off.contains(d.name)
                && (on.contains(d.name) || (star && d.enabled_by_default))
        })
        .collect())
}

/// Runs the selected controllers until `shutdown`, leading through the Lease when
/// `leader_elect` is on (leadership lost: controllers stop, and the process campaigns again).
pub async fn run(
    clients: ClientSource,
    options: Options,
    metrics: Arc<Metrics>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    let descriptors = selected(&options.controllers)?;
    let options = Arc::new(options);
    let identity = options.identity.clone();
    let mut elector = options.leader_elect.then(|| {
        LeaderElector::new(
            clients(None),
            LeaderElectionConfig::new(
                &options.leader_elect_resource_name,
                identity,
                options.leader_elect_timings,
            ),
        )
    });
    loop {
        if let Some(e) = elector.as_mut()
            && !e.acquire(&mut shutdown).await
        {
            return Ok(());
        }
        let (stop, term) = tokio::sync::watch::channel(false);
        start_controllers(&descriptors, &clients, &options, &metrics, term);
        let outer_shutdown = match elector.as_mut() {
            Some(e) => e.hold(&mut shutdown).await,
            None => {
                let _ = shutdown.wait_for(|s| *s).await;
                true
            }
        };
        let _ = stop.send(true);
        if outer_shutdown {
            if let Some(e) = elector.as_mut() {
                e.release().await;
            }
            return Ok(());
        }
    }
}

fn start_controllers(
    descriptors: &[&'static ControllerDescriptor],
    clients: &ClientSource,
    options: &Arc<Options>,
    metrics: &Arc<Metrics>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let factory = Arc::new(SharedInformerFactory::new(
        clients(None),
        options.resync,
        shutdown.clone(),
    ));
    for d in descriptors {
        let client = clients(d.service_account);
        let ctx = ControllerContext {
            name: d.name,
            factory: factory.clone(),
            // No host, as kube-controller-manager's recorders: `source.host` and
            // `reportingInstance` stay empty.
            recorder: EventRecorder::new(client.clone(), d.event_source, ""),
            client,
            metrics: metrics.clone(),
            shutdown: shutdown.clone(),
            options: options.clone(),
        };
        (d.start)(ctx);
        tracing::debug!(controller = d.name, "started");
    }
    factory.start();
}
