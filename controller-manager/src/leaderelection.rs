//! Leader election on a coordination.k8s.io Lease, as client-go's leaderelection with a LeaseLock:
//! by default lease 15 s, renew deadline 10 s, retry every 2 s (kube-controller-manager's
//! defaults; `k1s server` on its embedded store uses longer ones, see [`Timings::EMBEDDED`]). A lease
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

/// upstream's `--leader-elect-lease-duration`, `--leader-elect-renew-deadline` and
/// `--leader-elect-retry-period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl Timings {
    /// kube-controller-manager's and kube-scheduler's defaults: 15 s, 10 s, 2 s.
    pub const UPSTREAM: Timings = Timings {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
    };
    /// For the candidates inside a `k1s server` on its embedded store: only that one process can
    /// open the data directory, so no other server fails over to, and every renewal is a durable
    /// write (a flash page, plus sled's share). Renewing every 30 s instead of 2 s takes an idle
    /// cluster from 68 to 16 durable commits a minute; a remote candidate still honours the
    /// lease, whose record carries 90 s.
    pub const EMBEDDED: Timings = Timings {
        lease_duration: Duration::from_secs(90),
        renew_deadline: Duration::from_secs(60),
        retry_period: Duration::from_secs(30),
    };

    /// client-go's checks in NewLeaderElector: the lease outlasts the renew deadline, which
    /// outlasts the retry period with its jitter (1.2), which is positive.
    pub fn validate(&self) -> Result<(), String> {
        if self.lease_duration <= self.renew_deadline {
            return Err("leaseDuration must be greater than renewDeadline".into());
        }
        if self.renew_deadline <= self.retry_period.mul_f64(1.2) {
            return Err("renewDeadline must be greater than retryPeriod*JitterFactor".into());
        }
        if self.retry_period.is_zero() {
            return Err("retryPeriod must be greater than zero".into());
        }
        if self.lease_duration.as_secs() < 1 {
            return Err("leaseDuration must be at least 1s".into());
        }
        Ok(())
    }
}

impl Default for Timings {
    fn default() -> Self {
        Timings::UPSTREAM
    }
}

impl LeaderElectionConfig {
    /// The lock `kube-system/<name>` with `timings`.
    pub fn new(name: &str, identity: String, timings: Timings) -> Self {
        LeaderElectionConfig {
            namespace: "kube-system".into(),
            name: name.into(),
            identity,
            lease_duration: timings.lease_duration,
            renew_deadline: timings.renew_deadline,
            retry_period: timings.retry_period,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn timings_are_checked_as_client_go_checks_them() {
        assert_eq!(Timings::UPSTREAM.validate(), Ok(()));
        assert_eq!(Timings::EMBEDDED.validate(), Ok(()));
        let s = Duration::from_secs;
        let t = |l, d, r| Timings {
            lease_duration: s(l),
            renew_deadline: s(d),
            retry_period: s(r),
        };
        let err = t(10, 10, 2).validate().unwrap_err();
        assert!(
            err.contains("leaseDuration must be greater than renewDeadline"),
            "{err}"
        );
        let err = t(15, 10, 9).validate().unwrap_err();
        assert!(
            err.contains("renewDeadline must be greater than retryPeriod"),
            "{err}"
        );
        let err = t(15, 10, 0).validate().unwrap_err();
        assert!(
            err.contains("retryPeriod must be greater than zero"),
            "{err}"
        );
    }
}
