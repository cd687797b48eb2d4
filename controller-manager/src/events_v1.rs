//! The events.k8s.io/v1 recorder, as client-go's tools/events broadcaster and recorder (what
//! kube-scheduler uses): Events named `<regarding>.<hex nanoseconds>` with `eventTime`,
//! `reportingController`, `reportingInstance` (`<controller>-<hostname>`), `action`, `regarding`
//! and `related`. An isomorphic event (same type, action, reason, reporter, regarding and
//! related) seen again while cached turns the cached event into a series: the first repeat
//! patches `series` (count 2) onto the object; later repeats only count, and the count is
//! written when the series ends (no repeat for 6 minutes, checked every 6 minutes) or every 30
//! minutes while it lasts. Singletons older than 6 minutes leave the cache. There is no spam
//! filter or message aggregation here (upstream's events.k8s.io path has none); the core/v1
//! recorder with those is `events`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::events::{NORMAL, WARNING};

/// Upstream's `finishTime`: a series with no repeat for this long is over.
const FINISH_TIME: Duration = Duration::from_secs(6 * 60);
/// Upstream's `refreshTime`: running series are rewritten this often (their TTL restarts).
const REFRESH_TIME: Duration = Duration::from_secs(30 * 60);
/// Upstream's `maxTriesPerEvent` and the sleep between tries (jittered by up to 25%).
const MAX_TRIES: u32 = 12;
const RETRY_SLEEP: Duration = Duration::from_secs(10);
/// events.k8s.io validation's `NoteLengthLimit`.
pub const NOTE_LENGTH_LIMIT: usize = 1024;

/// Why a write to the API failed, as far as retrying cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkError {
    NotFound,
    AlreadyExists,
    /// The server refused the event (a Status other than the two above): never retried.
    Rejected(String),
    /// The server could not be reached or answered oddly: retried.
    Transport(String),
}

/// Where events are written (the API, or a fake in tests).
pub trait EventSink: Send + Sync {
    fn create(&self, event: Event) -> BoxFuture<'static, Result<Event, SinkError>>;
    /// A strategic merge patch of the named event.
    fn patch(
        &self,
        namespace: String,
        name: String,
        patch: Value,
    ) -> BoxFuture<'static, Result<Event, SinkError>>;
}

/// The events.k8s.io/v1 API through a `kube::Client`.
pub struct ApiSink(pub Client);

fn sink_error(e: kube::Error) -> SinkError {
    match e {
        kube::Error::Api(s) if s.code == 404 => SinkError::NotFound,
        kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists" => {
            SinkError::AlreadyExists
        }
        // 429 and 5xx are the server being busy or down: try again, as client-go's transport.
        kube::Error::Api(s) if s.code == 429 || s.code >= 500 => SinkError::Transport(s.message),
        kube::Error::Api(s) => SinkError::Rejected(s.message),
        other => SinkError::Transport(other.to_string()),
    }
}

impl EventSink for ApiSink {
    fn create(&self, event: Event) -> BoxFuture<'static, Result<Event, SinkError>> {
        let client = self.0.clone();
        Box::pin(async move {
            let ns = event.metadata.namespace.clone().unwrap_or_default();
            let api: Api<Event> = Api::namespaced(client, &ns);
            api.create(&PostParams::default(), &event)
                .await
                .map_err(sink_error)
        })
    }

    fn patch(
        &self,
        namespace: String,
        name: String,
        patch: Value,
    ) -> BoxFuture<'static, Result<Event, SinkError>> {
        let client = self.0.clone();
        Box::pin(async move {
            let api: Api<Event> = Api::namespaced(client, &namespace);
            api.patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
                .map_err(sink_error)
        })
    }
}

/// The wall clock (tests move it by hand).
type Clock = Arc<dyn Fn() -> jiff::Timestamp + Send + Sync>;

struct Inner {
    sink: Arc<dyn EventSink>,
    controller: String,
    instance: String,
    /// Upstream's eventCache: the last event written per isomorphic key.
    cache: Mutex<HashMap<String, Event>>,
    clock: Clock,
    retry_sleep: Duration,
}

/// Records events.k8s.io/v1 Events for one reporting controller. Cheap to clone; recording
/// never blocks the caller.
#[derive(Clone)]
pub struct EventRecorderV1 {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EventRecorderV1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorderV1")
            .field("controller", &self.inner.controller)
            .field("instance", &self.inner.instance)
            .finish()
    }
}

/// Upstream's truncation of long notes (kube-scheduler's `truncateMessage`): at most
/// `NOTE_LENGTH_LIMIT` bytes, ending in ` ...` when cut.
pub fn truncate_note(note: &str) -> String {
    if note.len() <= NOTE_LENGTH_LIMIT {
        return note.to_string();
    }
    const SUFFIX: &str = " ...";
    let mut end = NOTE_LENGTH_LIMIT - SUFFIX.len();
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{SUFFIX}", &note[..end])
}

/// The isomorphic key: what makes two events "the same" for a series (not the note).
fn key_of(e: &Event) -> String {
    let r = |o: Option<&ObjectReference>| {
        o.map(|o| {
            [
                o.api_version.as_deref(),
                o.kind.as_deref(),
                o.namespace.as_deref(),
                o.name.as_deref(),
                o.uid.as_deref(),
                o.resource_version.as_deref(),
                o.field_path.as_deref(),
            ]
            .map(Option::unwrap_or_default)
            .join("\u{1}")
        })
        .unwrap_or_default()
    };
    [
        e.type_.clone().unwrap_or_default(),
        e.action.clone().unwrap_or_default(),
        e.reason.clone().unwrap_or_default(),
        e.reporting_controller.clone().unwrap_or_default(),
        e.reporting_instance.clone().unwrap_or_default(),
        r(e.regarding.as_ref()),
        r(e.related.as_ref()),
    ]
    .join("\u{0}")
}

impl EventRecorderV1 {
    /// A recorder writing through `client`, reporting as `controller` from
    /// `<controller>-<hostname>` (client-go's NewRecorder). Call inside a runtime: it starts the
    /// series housekeeping, which ends when the last clone is dropped.
    pub fn new(client: Client, controller: &str) -> Self {
        let instance = format!("{controller}-{}", crate::hostname());
        Self::with_sink(Arc::new(ApiSink(client)), controller, &instance)
    }

    /// A recorder over any sink (tests use a fake one).
    pub fn with_sink(sink: Arc<dyn EventSink>, controller: &str, instance: &str) -> Self {
        let clock: Clock = Arc::new(jiff::Timestamp::now);
        Self::build(sink, controller, instance, clock, RETRY_SLEEP)
    }

    fn build(
        sink: Arc<dyn EventSink>,
        controller: &str,
        instance: &str,
        clock: Clock,
        retry_sleep: Duration,
    ) -> Self {
        let inner = Arc::new(Inner {
            sink,
            controller: controller.to_string(),
            instance: instance.to_string(),
            cache: Mutex::new(HashMap::new()),
            clock,
            retry_sleep,
        });
        spawn_every(Arc::downgrade(&inner), FINISH_TIME, |i| {
            Box::pin(async move { i.finish_series().await })
        });
        spawn_every(Arc::downgrade(&inner), REFRESH_TIME, |i| {
            Box::pin(async move { i.refresh_series().await })
        });
        EventRecorderV1 { inner }
    }

    pub fn reporting_instance(&self) -> &str {
        &self.inner.instance
    }

    /// Records an event about `regarding` (and `related`) in the background, as client-go's
    /// `Eventf(regarding, related, type, reason, action, note)`. Types other than Normal and
    /// Warning are dropped, as upstream.
    pub fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: &str,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        if type_ != NORMAL && type_ != WARNING {
            tracing::warn!(type_, reason, "unsupported event type; event not recorded");
            return;
        }
        let event = self.make_event(regarding, related, type_, reason, action, note);
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.record(event).await });
    }

    fn make_event(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: &str,
        reason: &str,
        action: &str,
        note: &str,
    ) -> Event {
        let now = (self.inner.clock)();
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string());
        Event {
            metadata: ObjectMeta {
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or_default(),
                    now.as_nanosecond()
                )),
                namespace: Some(namespace),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            reporting_controller: Some(self.inner.controller.clone()),
            reporting_instance: Some(self.inner.instance.clone()),
            action: Some(action.to_string()),
            reason: Some(reason.to_string()),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            note: Some(note.to_string()),
            type_: Some(type_.to_string()),
            ..Default::default()
        }
    }
}

/// Runs `f` every `period` until the recorder is gone.
fn spawn_every(weak: Weak<Inner>, period: Duration, f: fn(Arc<Inner>) -> BoxFuture<'static, ()>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(period).await;
            let Some(inner) = weak.upgrade() else {
                return;
            };
            f(inner).await;
        }
    });
}

impl Inner {
    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Event>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Upstream's recordToSink: a new event is cached and created; the first repeat makes it a
    /// series and patches it; later repeats are only counted.
    async fn record(&self, event: Event) {
        let to_write = {
            let mut cache = self.cache();
            let key = key_of(&event);
            match cache.get_mut(&key) {
                Some(cached) => {
                    let now = MicroTime((self.clock)());
                    match cached.series.as_mut() {
                        Some(series) => {
                            series.count = series.count.saturating_add(1);
                            series.last_observed_time = now;
                            None
                        }
                        None => {
                            cached.series = Some(EventSeries {
                                count: 2,
                                last_observed_time: now,
                            });
                            Some(cached.clone())
                        }
                    }
                }
                None => {
                    cache.insert(key, event.clone());
                    Some(event)
                }
            }
        };
        if let Some(event) = to_write {
            self.attempt(event).await;
        }
    }

    /// Writes with retries while the failure may pass (upstream's attemptRecording).
    async fn attempt(&self, event: Event) {
        for tries in 1..=MAX_TRIES {
            match self.write(&event).await {
                Ok(_) => return,
                Err(WriteError::Final(e)) => {
                    tracing::debug!(error = %e, reason = ?event.reason, "event rejected; not retried");
                    return;
                }
                Err(WriteError::Retry(e)) if tries < MAX_TRIES => {
                    tracing::debug!(error = %e, "event not written; retrying");
                    tokio::time::sleep(jittered(self.retry_sleep)).await;
                }
                Err(WriteError::Retry(e)) => {
                    tracing::warn!(error = %e, reason = ?event.reason, "event not written (retry limit reached)");
                }
            }
        }
    }

    /// Upstream's recordEvent: a series is patched (`series` only), created when gone; a
    /// singleton is created.
    async fn write(&self, event: &Event) -> Result<Event, WriteError> {
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        let name = event.metadata.name.clone().unwrap_or_default();
        if let Some(series) = &event.series {
            let patch = json!({"series": series});
            match self.sink.patch(namespace, name, patch).await {
                Ok(e) => return Ok(e),
                Err(SinkError::NotFound) => {}
                Err(e) => return Err(WriteError::classify(e, true)),
            }
        }
        let mut create = event.clone();
        create.metadata.resource_version = None;
        self.sink
            .create(create)
            .await
            .map_err(|e| WriteError::classify(e, event.series.is_some()))
    }

    /// Upstream's finishSeries: series quiet for `FINISH_TIME` get their final count written
    /// and leave the cache; so do singletons that old (without a write).
    async fn finish_series(&self) {
        let now = (self.clock)();
        let cutoff = now
            .checked_sub(jiff::SignedDuration::from_secs(FINISH_TIME.as_secs() as i64))
            .unwrap_or(now);
        let finished: Vec<(String, Event)> = {
            let mut cache = self.cache();
            cache.retain(|_, e| {
                e.series.is_some() || e.event_time.as_ref().is_none_or(|t| t.0 >= cutoff)
            });
            cache
                .iter()
                .filter(|(_, e)| {
                    e.series
                        .as_ref()
                        .is_some_and(|s| s.last_observed_time.0 < cutoff)
                })
                .map(|(k, e)| (k.clone(), e.clone()))
                .collect()
        };
        for (key, event) in finished {
            if !matches!(self.write(&event).await, Err(WriteError::Retry(_))) {
                self.cache().remove(&key);
            }
        }
    }

    /// Upstream's refreshExistingEventSeries: running series are written again.
    async fn refresh_series(&self) {
        let running: Vec<Event> = self
            .cache()
            .values()
            .filter(|e| e.series.is_some())
            .cloned()
            .collect();
        for event in running {
            if let Err(WriteError::Retry(e)) = self.write(&event).await {
                tracing::debug!(error = %e, "event series not refreshed");
            }
        }
    }
}

#[derive(Debug)]
enum WriteError {
    Retry(String),
    Final(String),
}

impl WriteError {
    /// AlreadyExists while writing a series means the first create raced the patch: retry.
    fn classify(e: SinkError, series: bool) -> Self {
        match e {
            SinkError::AlreadyExists if series => WriteError::Retry("already exists".into()),
            SinkError::AlreadyExists => WriteError::Final("already exists".into()),
            SinkError::NotFound => WriteError::Final("not found".into()),
            SinkError::Rejected(m) => WriteError::Final(m),
            SinkError::Transport(m) => WriteError::Retry(m),
        }
    }
}

/// `d` plus up to 25% (client-go's wait.Jitter(d, 0.25)).
fn jittered(d: Duration) -> Duration {
    let nanos = jiff::Timestamp::now().subsec_nanosecond().unsigned_abs();
    d + d.mul_f64(0.25 * f64::from(nanos % 1000) / 1000.0)
}

#[cfg(test)]
#[path = "events_v1_tests.rs"]
mod tests;
