//! The scheduler (upstream kube-scheduler 1.33's default profile): binds pods of
//! `schedulerName: default-scheduler` to nodes through `pods/binding`, speaking only the
//! Kubernetes API on the controller-manager's shared informers. `queue` (active / backoff /
//! unschedulable), `cache` (nodes, bound and assumed pods), `plugins` (filters and scores),
//! `framework` (one attempt, FitError messages), `preemption`, `scheduler` (the loop, binding,
//! conditions and events).

pub mod cache;
pub mod framework;
pub mod helpers;
pub mod plugins;
pub mod preemption;
pub mod queue;
pub mod resources;
pub mod scheduler;

use std::sync::Arc;

use k1s_controller_manager::SharedInformerFactory;
use k1s_controller_manager::events_v1::EventRecorderV1;
use k1s_controller_manager::leaderelection::{LeaderElectionConfig, LeaderElector, Timings};

/// Settings, with kube-scheduler's names where one exists.
#[derive(Clone, Debug)]
pub struct Options {
    /// Pods whose `spec.schedulerName` is this are ours (`default-scheduler`).
    pub scheduler_name: String,
    /// `--leader-elect`: lead through the Lease kube-system/kube-scheduler first.
    pub leader_elect: bool,
    /// This process's leader-election identity.
    pub identity: String,
    /// `--leader-elect-lease-duration`, `-renew-deadline`, `-retry-period`.
    pub leader_elect_timings: Timings,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scheduler_name: "default-scheduler".into(),
            leader_elect: true,
            identity: format!("k1s-scheduler_{}", std::process::id()),
            leader_elect_timings: Timings::default(),
        }
    }
}

/// Schedules until `shutdown`; with leader election, only while holding the lease (losing it
/// stops scheduling and campaigns again).
pub async fn run(
    client: kube::Client,
    options: Options,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    let mut elector = options.leader_elect.then(|| {
        LeaderElector::new(
            client.clone(),
            LeaderElectionConfig::new(
                "kube-scheduler",
                options.identity.clone(),
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
        let factory = SharedInformerFactory::new(client.clone(), None, term.clone());
        let recorder = EventRecorderV1::new(client.clone(), &options.scheduler_name);
        let sched = scheduler::Scheduler::new(
            client.clone(),
            &factory,
            options.scheduler_name.clone(),
            recorder,
        );
        factory.start();
        let task = tokio::spawn(async move {
            let mut t = term.clone();
            tokio::select! {
                _ = factory.wait_for_cache_sync() => {}
                _ = t.wait_for(|s| *s) => return,
            }
            tracing::debug!("scheduler caches synced");
            Arc::clone(&sched).run(term).await;
        });
        let outer_shutdown = match elector.as_mut() {
            Some(e) => e.hold(&mut shutdown).await,
            None => {
                let _ = shutdown.wait_for(|s| *s).await;
                true
            }
        };
        let _ = stop.send(true);
        let _ = task.await;
        if outer_shutdown {
            if let Some(e) = elector.as_mut() {
                e.release().await;
            }
            return Ok(());
        }
    }
}
