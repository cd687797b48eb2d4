//! Prometheus metrics at `/metrics`, named like upstream's: requests by verb/resource/code with
//! latency histograms, open watches, the store's revision, size and request latency.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use k1s_storage::{Deleted, KeyValue, ListOptions, ListPage, Revision, Store, WatchStream};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upstream's apiserver_request_duration_seconds buckets.
const REQUEST_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];
/// Store latencies are far shorter than request latencies: start at 100 µs.
const STORE_BUCKETS: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabels {
    operation: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StorageClusterLabels {
    storage_cluster_id: String,
}

/// What the store says of itself at a scrape.
pub struct StoreStats {
    pub revision: Revision,
    /// Upstream names its storage backends `etcd-0`, `etcd-1`...; the local store is `local-0`.
    pub cluster_id: &'static str,
    pub size_bytes: Option<u64>,
}

/// What a finished resource request reports.
pub struct RequestRecord<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub code: u16,
    pub elapsed: Duration,
}

/// Renders metrics of another component of the process (the controller-manager) into `/metrics`.
pub type ExtraMetrics = Box<dyn Fn() -> String + Send + Sync>;

pub struct Metrics {
    registry: Registry,
    extra: std::sync::OnceLock<ExtraMetrics>,
    requests: Family<RequestLabels, Counter>,
    durations: Family<DurationLabels, Histogram>,
    watches: Gauge,
    revision: Gauge,
    size: Family<StorageClusterLabels, Gauge>,
    store: Family<StoreLabels, Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let durations = Family::<DurationLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(REQUEST_BUCKETS.iter().copied())
        });
        let store = Family::<StoreLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(STORE_BUCKETS.iter().copied())
        });
        let watches = Gauge::default();
        let revision = Gauge::default();
        let size = Family::<StorageClusterLabels, Gauge>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out by verb, group, version, resource and HTTP response code",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, version and resource",
            durations.clone(),
        );
        registry.register(
            "apiserver_longrunning_requests",
            "Number of long-running requests (watches) currently open",
            watches.clone(),
        );
        registry.register(
            "k1s_storage_revision",
            "The newest durable revision of the store (the highest resourceVersion)",
            revision.clone(),
        );
        registry.register(
            "apiserver_storage_size_bytes",
            "Size of the storage database file physically allocated in bytes",
            size.clone(),
        );
        registry.register(
            "k1s_storage_request_duration_seconds",
            "Store request latency in seconds by operation (writes include the durable sync)",
            store.clone(),
        );
        Metrics {
            registry,
            extra: std::sync::OnceLock::new(),
            requests,
            durations,
            watches,
            revision,
            size,
            store,
        }
    }

    pub fn record(&self, r: &RequestRecord<'_>) {
        let d = DurationLabels {
            verb: r.verb.to_ascii_uppercase(),
            group: r.group.to_string(),
            version: r.version.to_string(),
            resource: r.resource.to_string(),
            subresource: r.subresource.to_string(),
        };
        self.durations
            .get_or_create(&d)
            .observe(r.elapsed.as_secs_f64());
        let labels = RequestLabels {
            verb: d.verb,
            group: d.group,
            version: d.version,
            resource: d.resource,
            subresource: d.subresource,
            code: r.code.to_string(),
        };
        self.requests.get_or_create(&labels).inc();
    }

    /// Counts an open watch until the returned guard is dropped.
    pub fn watch_opened(self: &Arc<Self>) -> WatchGuard {
        self.watches.inc();
        WatchGuard(self.clone())
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self, stats: &StoreStats) -> String {
        self.revision.set(stats.revision.0 as i64);
        if let Some(bytes) = stats.size_bytes {
            let labels = StorageClusterLabels {
                storage_cluster_id: stats.cluster_id.to_string(),
            };
            self.size.get_or_create(&labels).set(bytes as i64);
        }
        use prometheus_client::encoding::text::{encode_eof, encode_registry};
        let mut out = String::new();
        if encode_registry(&mut out, &self.registry).is_err() {
            out.clear();
        }
        if let Some(extra) = self.extra.get() {
            out.push_str(&extra());
        }
        let _ = encode_eof(&mut out);
        out
    }

    /// Adds another component's metrics (Prometheus text without `# EOF`) to `/metrics`; the
    /// first caller wins.
    pub fn set_extra(&self, extra: ExtraMetrics) {
        let _ = self.extra.set(extra);
    }

    fn observe_store(&self, operation: &str, started: Instant) {
        self.store
            .get_or_create(&StoreLabels {
                operation: operation.to_string(),
            })
            .observe(started.elapsed().as_secs_f64());
    }
}

pub struct WatchGuard(Arc<Metrics>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.watches.dec();
    }
}

/// A `Store` decorator that times every call.
pub struct InstrumentedStore {
    inner: Arc<dyn Store>,
    metrics: Arc<Metrics>,
}

impl InstrumentedStore {
    pub fn new(inner: Arc<dyn Store>, metrics: Arc<Metrics>) -> Self {
        InstrumentedStore { inner, metrics }
    }
}

#[async_trait]
impl Store for InstrumentedStore {
    async fn get(&self, key: &str) -> k1s_storage::Result<Option<KeyValue>> {
        let t = Instant::now();
        let r = self.inner.get(key).await;
        self.metrics.observe_store("get", t);
        r
    }
    async fn create(&self, key: &str, value: Bytes) -> k1s_storage::Result<KeyValue> {
        let t = Instant::now();
        let r = self.inner.create(key, value).await;
        self.metrics.observe_store("create", t);
        r
    }
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> k1s_storage::Result<KeyValue> {
        let t = Instant::now();
        let r = self.inner.update(key, value, expected).await;
        self.metrics.observe_store("update", t);
        r
    }
    async fn delete(&self, key: &str, expected: Option<Revision>) -> k1s_storage::Result<Deleted> {
        let t = Instant::now();
        let r = self.inner.delete(key, expected).await;
        self.metrics.observe_store("delete", t);
        r
    }
    async fn list(&self, prefix: &str, opts: ListOptions) -> k1s_storage::Result<ListPage> {
        let t = Instant::now();
        let r = self.inner.list(prefix, opts).await;
        self.metrics.observe_store("list", t);
        r
    }
    async fn count(&self, prefix: &str) -> k1s_storage::Result<u64> {
        self.inner.count(prefix).await
    }
    async fn watch(&self, prefix: &str, after: Revision) -> k1s_storage::Result<WatchStream> {
        self.inner.watch(prefix, after).await
    }
    fn current_revision(&self) -> Revision {
        self.inner.current_revision()
    }
    fn compacted_revision(&self) -> Revision {
        self.inner.compacted_revision()
    }
    async fn fresh_revision(&self) -> k1s_storage::Result<Revision> {
        self.inner.fresh_revision().await
    }
    async fn size_bytes(&self) -> k1s_storage::Result<Option<u64>> {
        self.inner.size_bytes().await
    }
    async fn compact(&self, revision: Revision) -> k1s_storage::Result<()> {
        self.inner.compact(revision).await
    }

    fn backend_kind(&self) -> k1s_storage::BackendKind {
        self.inner.backend_kind()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn renders_upstream_names() {
        let m = Arc::new(Metrics::new());
        m.record(&RequestRecord {
            verb: "list",
            group: "",
            version: "v1",
            resource: "pods",
            subresource: "",
            code: 200,
            elapsed: Duration::from_millis(3),
        });
        let guard = m.watch_opened();
        let stats = StoreStats {
            revision: Revision(42),
            cluster_id: "local-0",
            size_bytes: Some(8192),
        };
        let text = m.render(&stats);
        assert!(text.contains("apiserver_request_total{verb=\"LIST\",group=\"\",version=\"v1\",resource=\"pods\",subresource=\"\",code=\"200\"} 1"), "{text}");
        assert!(
            text.contains("apiserver_request_duration_seconds_bucket{le=\"0.005\",verb=\"LIST\"")
                || text.contains("apiserver_request_duration_seconds_bucket"),
            "{text}"
        );
        assert!(text.contains("apiserver_longrunning_requests 1"));
        assert!(text.contains("k1s_storage_revision 42"));
        assert!(
            text.contains("apiserver_storage_size_bytes{storage_cluster_id=\"local-0\"} 8192"),
            "{text}"
        );
        drop(guard);
        assert!(
            m.render(&stats)
                .contains("apiserver_longrunning_requests 0")
        );
    }
}
