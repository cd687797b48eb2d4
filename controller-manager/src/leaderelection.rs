//! Leader election on a coordination.k8s.io Lease, as client-go's leaderelection with a LeaseLock:
//! lease 15 s, renew deadline 10 s, retry every 2 s (kube-controller-manager's defaults). A lease
//! is taken over only when its record has not changed for a whole lease duration as observed by
//! this process's clock (never by comparing clocks across machines); updates carry the
//! resourceVersion, so two candidates can never both win.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::time::Instant;

/// Durations and the lock's name.
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    pub namespace: String,
    pub name: String,
    /// This candidate's identity (upstream: hostname + "_" + a UUID).
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// kube-controller-manager's defaults for the lock `kube-system/<name>`.
    pub fn new(name: &str, identity: String) -> Self {
        LeaderElectionConfig {
            namespace: "kube-system".into(),
            name: name.into(),
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// One candidate.
#[derive(Debug)]
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    /// The last lease record seen (holder, renew time) and when this process saw it change.
    observed: Option<(Option<String>, Option<MicroTime>, Instant)>,
}

impl LeaderElector {
    pub fn new(client: Client, config: LeaderElectionConfig) -> Self {
        LeaderElector {
            api: Api::namespaced(client, &config.namespace),
            config,
            observed: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Waits until this candidate holds the lease; false if `shutdown` came first.
    pub async fn acquire(&mut self, shutdown: &mut tokio::sync::watch::Receiver<bool>) -> bool {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(lease = %self.config.name, identity = %self.config.identity, "became leader");
                    return true;
                }
                Ok(false) => {}
                Err(e) => tracing::debug!(error = %e, "leader election: lease not acquired"),
            }
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return false,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
        }
    }

    /// Renews the lease every retry period until a renewal has failed for the renew deadline
    /// (leadership lost: returns false) or `shutdown` (returns true).
    pub async fn hold(&mut self, shutdown: &mut tokio::sync::watch::Receiver<bool>) -> bool {
        let mut last_renewed = Instant::now();
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return true,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
            let renew =
                tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew());
            match renew.await {
                Ok(Ok(true)) => last_renewed = Instant::now(),
                Ok(Ok(false)) => {
                    tracing::warn!(lease = %self.config.name, "leader election lost: another holder");
                    return false;
                }
                Ok(Err(e)) => tracing::debug!(error = %e, "lease renewal failed"),
                Err(_) => tracing::debug!("lease renewal timed out"),
            }
            if last_renewed.elapsed() >= self.config.renew_deadline {
                tracing::warn!(lease = %self.config.name, "leader election lost: renew deadline passed");
                return false;
            }
        }
    }

    /// Gives the lease up at shutdown (client-go's ReleaseOnCancel), so a restarted or another
    /// candidate takes over at once instead of waiting out the lease.
    pub async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        let now = MicroTime(jiff::Timestamp::now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        if let Err(e) = self
            .api
            .replace(&self.config.name, &PostParams::default(), &lease)
            .await
        {
            tracing::debug!(error = %e, "lease not released");
        }
    }

    /// client-go's tryAcquireOrRenew.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = MicroTime(jiff::Timestamp::now());
        let secs = i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let me = self.config.identity.clone();
        let existing = match self.api.get_opt(&self.config.name).await? {
            Some(lease) => lease,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.config.name.clone()),
                        namespace: Some(self.config.namespace.clone()),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(me),
                        lease_duration_seconds: Some(secs),
                        acquire_time: Some(now.clone()),
                        renew_time: Some(now),
                        lease_transitions: Some(0),
                        ..Default::default()
                    }),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e),
                };
            }
        };
        let spec = existing.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let changed = match &self.observed {
            Some((h, r, _)) => *h != holder || *r != spec.renew_time,
            None => true,
        };
        if changed {
            self.observed = Some((holder.clone(), spec.renew_time.clone(), Instant::now()));
        }
        let observed_at = self.observed.as_ref().map_or_else(Instant::now, |o| o.2);
        let held_by_other = holder.as_deref().is_some_and(|h| h != me);
        let lease_secs = spec
            .lease_duration_seconds
            .map_or(self.config.lease_duration, |s| {
                Duration::from_secs(u64::try_from(s).unwrap_or(0))
            });
        if held_by_other && observed_at.elapsed() < lease_secs {
            return Ok(false);
        }
        let mut updated = existing.clone();
        let new_spec = updated.spec.get_or_insert_with(Default::default);
        if held_by_other || holder.is_none() {
            new_spec.acquire_time = Some(now.clone());
            new_spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        new_spec.holder_identity = Some(me);
        new_spec.lease_duration_seconds = Some(secs);
        new_spec.renew_time = Some(now);
        match self
            .api
            .replace(&self.config.name, &PostParams::default(), &updated)
            .await
        {
            Ok(l) => {
                let s = l.spec.unwrap_or_default();
                self.observed = Some((s.holder_identity, s.renew_time, Instant::now()));
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }
}
