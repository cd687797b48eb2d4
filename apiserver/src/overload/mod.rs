//! Max-in-flight limiting (upstream's `WithMaxInFlightLimit`): at most `--max-requests-inflight`
//! read-only and `--max-mutating-requests-inflight` mutating requests run at once; the next one
//! gets 429 with `Retry-After: 1`. Long-running requests (watch, exec, logs, ...) are never counted
//! and members of `system:masters` are never rejected.
//!
//! Upstream writes the 429 as plain text (`Too many requests, please try again later.`); here it
//! is an [`ApiError`] carrying the same message and `retryAfterSeconds: 1`, which the caller turns
//! into the response (and the `Retry-After` header via [`ApiError::retry_after_seconds`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use k1s_apimachinery::ApiError;

/// Upstream's default `--max-mutating-requests-inflight`.
pub const DEFAULT_MAX_MUTATING_IN_FLIGHT: usize = 200;
/// Upstream's default `--max-requests-inflight`.
pub const DEFAULT_MAX_READONLY_IN_FLIGHT: usize = 400;

/// The group whose members are never throttled (upstream `user.SystemPrivilegedGroup`).
const SYSTEM_MASTERS: &str = "system:masters";

/// Verbs upstream counts as read-only (`nonMutatingRequestVerbs`); everything else is mutating.
pub fn is_mutating_verb(verb: &str) -> bool {
    !matches!(verb, "get" | "list" | "watch")
}

/// Upstream kube-apiserver's long-running check: the verbs `watch` and `proxy`, and the
/// subresources `attach`, `exec`, `proxy`, `log` and `portforward` of resource requests.
pub fn is_long_running(verb: &str, is_resource_request: bool, subresource: &str) -> bool {
    matches!(verb, "watch" | "proxy")
        || (is_resource_request
            && matches!(
                subresource,
                "attach" | "exec" | "proxy" | "log" | "portforward"
            ))
}

#[derive(Debug)]
struct Bucket {
    limit: usize,
    in_flight: AtomicUsize,
    rejected: AtomicU64,
}

impl Bucket {
    fn try_take(self: &Arc<Self>) -> bool {
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok()
    }
}

/// A slot in the limiter; the slot is given back when the permit is dropped.
#[derive(Debug)]
#[must_use = "the request is only counted while the permit is held"]
pub struct Permit {
    bucket: Option<Arc<Bucket>>,
}

impl Permit {
    /// A permit that holds no slot (long-running, unlimited or privileged requests).
    pub fn unlimited() -> Self {
        Permit { bucket: None }
    }

    /// True when this permit holds a counted slot.
    pub fn is_counted(&self) -> bool {
        self.bucket.is_some()
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(bucket) = self.bucket.take() {
            bucket.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Two counting limits, one for mutating and one for read-only requests. A limit of 0 disables
/// that bucket (as upstream).
#[derive(Debug, Clone)]
pub struct InFlightLimiter {
    mutating: Option<Arc<Bucket>>,
    readonly: Option<Arc<Bucket>>,
}

impl Default for InFlightLimiter {
    fn default() -> Self {
        Self::new(
            DEFAULT_MAX_MUTATING_IN_FLIGHT,
            DEFAULT_MAX_READONLY_IN_FLIGHT,
        )
    }
}

impl InFlightLimiter {
    pub fn new(max_mutating: usize, max_readonly: usize) -> Self {
        let bucket = |limit: usize| {
            (limit > 0).then(|| {
                Arc::new(Bucket {
                    limit,
                    in_flight: AtomicUsize::new(0),
                    rejected: AtomicU64::new(0),
                })
            })
        };
        InFlightLimiter {
            mutating: bucket(max_mutating),
            readonly: bucket(max_readonly),
        }
    }

    /// The server's concurrency limit as APF counts it: both limits added, an unlimited one
    /// at its default.
    pub fn server_concurrency(&self) -> usize {
        let limit =
            |b: &Option<Arc<Bucket>>, default: usize| b.as_ref().map_or(default, |b| b.limit);
        limit(&self.mutating, DEFAULT_MAX_MUTATING_IN_FLIGHT)
            + limit(&self.readonly, DEFAULT_MAX_READONLY_IN_FLIGHT)
    }

    fn bucket(&self, is_mutating: bool) -> Option<&Arc<Bucket>> {
        if is_mutating {
            self.mutating.as_ref()
        } else {
            self.readonly.as_ref()
        }
    }

    /// Takes a slot, or fails with 429 `Too many requests, please try again later.`
    /// (`retryAfterSeconds: 1`). Long-running requests always pass and are not counted.
    pub fn try_acquire(
        &self,
        is_mutating: bool,
        is_long_running: bool,
    ) -> Result<Permit, ApiError> {
        self.try_acquire_for(is_mutating, is_long_running, &[])
    }

    /// Like [`InFlightLimiter::try_acquire`], letting members of `system:masters` through when
    /// the bucket is full (upstream: "a system:master is so powerful that they should always get
    /// an answer"). Their request is then not counted.
    pub fn try_acquire_for(
        &self,
        is_mutating: bool,
        is_long_running: bool,
        groups: &[String],
    ) -> Result<Permit, ApiError> {
        if is_long_running {
            return Ok(Permit::unlimited());
        }
        let Some(bucket) = self.bucket(is_mutating) else {
            return Ok(Permit::unlimited());
        };
        if bucket.try_take() {
            return Ok(Permit {
                bucket: Some(Arc::clone(bucket)),
            });
        }
        bucket.rejected.fetch_add(1, Ordering::Relaxed);
        if groups.iter().any(|g| g == SYSTEM_MASTERS) {
            return Ok(Permit::unlimited());
        }
        Err(ApiError::too_many_requests(1))
    }

    /// Requests currently counted in the bucket (for metrics).
    pub fn in_flight(&self, is_mutating: bool) -> usize {
        self.bucket(is_mutating)
            .map_or(0, |b| b.in_flight.load(Ordering::Acquire))
    }

    /// Requests that found the bucket full (including privileged ones let through).
    pub fn rejected(&self, is_mutating: bool) -> u64 {
        self.bucket(is_mutating)
            .map_or(0, |b| b.rejected.load(Ordering::Relaxed))
    }

    /// The configured limit (0 = unlimited).
    pub fn limit(&self, is_mutating: bool) -> usize {
        self.bucket(is_mutating).map_or(0, |b| b.limit)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k1s_apimachinery::Reason;

    #[test]
    fn n_plus_one_mutating_gets_429() {
        let l = InFlightLimiter::new(2, 3);
        let a = l.try_acquire(true, false).unwrap();
        let b = l.try_acquire(true, false).unwrap();
        assert!(a.is_counted() && b.is_counted());
        assert_eq!(l.in_flight(true), 2);
        let err = l.try_acquire(true, false).unwrap_err();
        assert_eq!(err.code, 429);
        assert_eq!(err.reason, Reason::TooManyRequests);
        assert_eq!(err.message, "Too many requests, please try again later.");
        assert_eq!(err.retry_after_seconds(), Some(1));
        assert_eq!(l.rejected(true), 1);
        // The read-only bucket is separate.
        let _r = l.try_acquire(false, false).unwrap();
        assert_eq!(l.in_flight(false), 1);
    }

    #[test]
    fn watches_are_never_counted() {
        let l = InFlightLimiter::new(1, 1);
        let _held = l.try_acquire(false, false).unwrap();
        let watches: Vec<_> = (0..10)
            .map(|_| l.try_acquire(false, true).unwrap())
            .collect();
        assert!(watches.iter().all(|p| !p.is_counted()));
        assert_eq!(l.in_flight(false), 1);
        assert!(l.try_acquire(false, false).is_err());
    }

    #[test]
    fn permits_release_on_drop() {
        let l = InFlightLimiter::new(1, 1);
        {
            let _p = l.try_acquire(true, false).unwrap();
            assert!(l.try_acquire(true, false).is_err());
        }
        assert_eq!(l.in_flight(true), 0);
        let _p = l.try_acquire(true, false).unwrap();
    }

    #[test]
    fn zero_disables_and_masters_pass() {
        let l = InFlightLimiter::new(0, 1);
        let many: Vec<_> = (0..100)
            .map(|_| l.try_acquire(true, false).unwrap())
            .collect();
        assert!(many.iter().all(|p| !p.is_counted()));
        let _r = l.try_acquire(false, false).unwrap();
        assert!(l.try_acquire(false, false).is_err());
        let masters = vec!["system:masters".to_string()];
        let p = l.try_acquire_for(false, false, &masters).unwrap();
        assert!(!p.is_counted());
        assert_eq!(l.limit(false), 1);
        assert_eq!(l.limit(true), 0);
    }

    #[test]
    fn concurrent_acquire_never_exceeds_the_limit() {
        let l = InFlightLimiter::new(5, 5);
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    let mut got = 0;
                    for _ in 0..1000 {
                        if let Ok(p) = l.try_acquire(true, false) {
                            assert!(l.in_flight(true) <= 5);
                            got += 1;
                            drop(p);
                        }
                    }
                    got
                })
            })
            .collect();
        let total: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert!(total > 0);
        assert_eq!(l.in_flight(true), 0);
    }

    #[test]
    fn verb_helpers() {
        assert!(!is_mutating_verb("get"));
        assert!(!is_mutating_verb("watch"));
        assert!(is_mutating_verb("create"));
        assert!(is_mutating_verb("deletecollection"));
        assert!(is_long_running("watch", true, ""));
        assert!(is_long_running("create", true, "exec"));
        assert!(is_long_running("get", true, "log"));
        assert!(!is_long_running("get", false, "log"));
        assert!(!is_long_running("get", true, "status"));
    }
}
