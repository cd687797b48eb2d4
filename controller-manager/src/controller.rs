//! The generic controller machinery: a `Reconciler` turns one key into API writes; workers take
//! keys from the controller's work queue, reconcile them one at a time per key, requeue failures
//! with backoff, and stop when the queue is shut down and drained. Every reconcile has a span.
//! A reconcile that panics is logged and retried like a failure; the worker lives on (upstream's
//! HandleCrash would end the process, which here is the API server too).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tracing::Instrument;

use crate::metrics::QueueMetrics;
use crate::workqueue::WorkQueue;

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing until the next change.
    Done,
    /// Look again after a while (a deadline, a delay that has to pass).
    RequeueAfter(Duration),
}

/// Why a reconcile failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// The API answered with this HTTP status.
    pub fn is_status(&self, code: u16) -> bool {
        matches!(self, Error::Kube(kube::Error::Api(s)) if s.code == code)
    }
}

/// Whether a kube error is the API's NotFound.
pub fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// Whether a kube error is the API's Conflict or AlreadyExists.
pub fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// One controller's logic for one key (`namespace/name` or `name`).
pub trait Reconciler: Send + Sync + 'static {
    fn reconcile(&self, key: &str) -> impl Future<Output = Result<Action, Error>> + Send;
}

/// A controller that looks at everything once per period instead of reacting to keys (the pod
/// GC, the legacy-token cleaner; upstream's `wait.Until` loops). See
/// `ControllerContext::run_every`.
pub trait Periodic: Send + 'static {
    fn pass(&mut self) -> impl Future<Output = ()> + Send;
}

/// Runs `workers` workers over `queue` until it is shut down and drained.
pub fn spawn_workers<R: Reconciler>(
    name: &'static str,
    reconciler: Arc<R>,
    queue: WorkQueue,
    workers: usize,
    metrics: Arc<QueueMetrics>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    {
        let queue = queue.clone();
        tokio::spawn(async move {
            let _ = shutdown.wait_for(|s| *s).await;
            queue.shut_down();
        });
    }
    for _ in 0..workers.max(1) {
        let (queue, reconciler, metrics) = (queue.clone(), reconciler.clone(), metrics.clone());
        tokio::spawn(async move {
            while let Some(key) = queue.get().await {
                let started = tokio::time::Instant::now();
                let span = tracing::debug_span!("reconcile", controller = name, key = %key);
                let result = AssertUnwindSafe(reconciler.reconcile(&key).instrument(span))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| {
                        let what = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        tracing::error!(controller = name, key = %key, panic = %what, "reconcile panicked; retrying");
                        Err(Error::Other(format!("reconcile panicked: {what}")))
                    });
                metrics
                    .work_duration
                    .observe(started.elapsed().as_secs_f64());
                match result {
                    Ok(Action::Done) => queue.forget(&key),
                    Ok(Action::RequeueAfter(d)) => {
                        queue.forget(&key);
                        queue.add_after(key.clone(), d);
                    }
                    Err(e) => {
                        tracing::debug!(controller = name, key = %key, error = %e, "reconcile failed; retrying");
                        queue.add_rate_limited(key.clone());
                    }
                }
                queue.done(&key);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::metrics::Metrics;
    use crate::workqueue::RateLimiter;

    /// Panics on its first reconcile, succeeds on the next.
    struct PanicsOnce(AtomicUsize);

    impl Reconciler for PanicsOnce {
        async fn reconcile(&self, _key: &str) -> Result<Action, Error> {
            if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("first call");
            }
            Ok(Action::Done)
        }
    }

    #[tokio::test]
    async fn a_panicking_reconcile_is_retried_and_the_worker_lives_on() {
        let queue = WorkQueue::new(
            RateLimiter::new(
                Duration::from_millis(1),
                Duration::from_millis(10),
                100.0,
                10,
            ),
            None,
        );
        let calls = Arc::new(PanicsOnce(AtomicUsize::new(0)));
        let (_stop, shutdown) = tokio::sync::watch::channel(false);
        let metrics = Metrics::default().queue("test");
        spawn_workers("test", calls.clone(), queue.clone(), 1, metrics, shutdown);
        queue.add("ns/a");
        for _ in 0..200 {
            if calls.0.load(Ordering::SeqCst) >= 2 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the key was not retried after the panic");
    }
}
