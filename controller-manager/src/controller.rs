//! The generic controller machinery: a `Reconciler` turns one key into API writes; workers take
//! keys from the controller's work queue, reconcile them one at a time per key, requeue failures
//! with backoff, and stop when the queue is shut down and drained. Every reconcile has a span.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

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
                let result = reconciler.reconcile(&key).instrument(span).await;
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
