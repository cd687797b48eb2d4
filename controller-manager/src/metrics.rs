//! The controller-manager's metrics, under upstream's names: `workqueue_depth`,
//! `workqueue_adds_total`, `workqueue_retries_total`, `workqueue_queue_duration_seconds` and
//! `workqueue_work_duration_seconds`, each labelled with the queue's `name` (the controller).

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
}

/// One queue's handles into the shared families.
#[derive(Debug)]
pub struct QueueMetrics {
    pub depth: Gauge,
    pub adds: Counter,
    pub retries: Counter,
    pub queue_latency: Histogram,
    pub work_duration: Histogram,
}

/// Every queue's metrics, rendered as Prometheus text.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    queue_latency: Family<QueueLabels, Histogram>,
    work_duration: Family<QueueLabels, Histogram>,
}

fn buckets() -> Histogram {
    // Upstream's workqueue buckets: 1e-8 s to 10 s by factors of 10.
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let depth = Family::<QueueLabels, Gauge>::default();
        let adds = Family::<QueueLabels, Counter>::default();
        let retries = Family::<QueueLabels, Counter>::default();
        let queue_latency = Family::<QueueLabels, Histogram>::new_with_constructor(buckets);
        let work_duration = Family::<QueueLabels, Histogram>::new_with_constructor(buckets);
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_latency.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            work_duration.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            depth,
            adds,
            retries,
            queue_latency,
            work_duration,
        }
    }
}

impl Metrics {
    /// The handles of the queue called `name`.
    pub fn queue(&self, name: &str) -> Arc<QueueMetrics> {
        let l = QueueLabels {
            name: name.to_string(),
        };
        Arc::new(QueueMetrics {
            depth: self.depth.get_or_create(&l).clone(),
            adds: self.adds.get_or_create(&l).clone(),
            retries: self.retries.get_or_create(&l).clone(),
            queue_latency: self.queue_latency.get_or_create(&l).clone(),
            work_duration: self.work_duration.get_or_create(&l).clone(),
        })
    }

    /// Prometheus text, without the OpenMetrics `# EOF` line, so it can be appended to another
    /// exposition (the API server's `/metrics` in process).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if prometheus_client::encoding::text::encode_registry(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}
