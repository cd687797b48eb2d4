//! The event recorder, as client-go's record.EventRecorder with its correlator: core/v1 Events
//! named `<object>.<hex nanoseconds>`; an identical event again bumps `count` and `lastTimestamp`
//! of the existing one (a patch) instead of creating another; a per-source-and-object token
//! bucket (burst 25, one more every 5 minutes) drops floods; as upstream's EventAggregator, once
//! 10 events of one object, type and reason that differ only in message come within 10 minutes,
//! they are combined into one event (`(combined from similar events): <latest message>`) whose
//! count grows. Recording never blocks a reconcile.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use tokio::time::Instant;

pub const NORMAL: &str = "Normal";
pub const WARNING: &str = "Warning";

/// Upstream's spam filter: burst 25, refill one token per 5 minutes.
const SPAM_BURST: f64 = 25.0;
const SPAM_REFILL: Duration = Duration::from_secs(300);
/// How many distinct events are remembered for de-duplication (upstream's LRU size is 4096).
const CACHE_SIZE: usize = 4096;
/// Upstream's aggregation: this many distinct messages within the interval are combined.
const AGGREGATE_MAX_EVENTS: usize = 10;
const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// The distinct messages seen lately for one aggregate key.
#[derive(Debug)]
struct Similar {
    messages: HashSet<String>,
    last: Instant,
}

#[derive(Debug)]
struct Seen {
    namespace: String,
    name: String,
    count: i32,
}

#[derive(Debug, Default)]
struct Correlator {
    seen: HashMap<String, Seen>,
    buckets: HashMap<String, (f64, Instant)>,
    similar: HashMap<String, Similar>,
}

impl Correlator {
    /// Upstream's EventAggregate: the message to record and the key it is de-duplicated under,
    /// the event's own (`<aggregate>/<message>`) or, once similar events pile up, the
    /// aggregate key with a combined message.
    fn aggregate(&mut self, aggregate_key: &str, message: &str, now: Instant) -> (String, String) {
        if self.similar.len() > CACHE_SIZE {
            self.similar.clear();
        }
        let record = self
            .similar
            .entry(aggregate_key.to_string())
            .or_insert_with(|| Similar {
                messages: HashSet::new(),
                last: now,
            });
        if now.saturating_duration_since(record.last) > AGGREGATE_INTERVAL {
            record.messages.clear();
        }
        record.last = now;
        record.messages.insert(message.to_string());
        if record.messages.len() < AGGREGATE_MAX_EVENTS {
            return (message.to_string(), format!("{aggregate_key}/{message}"));
        }
        // Keep the set from growing past the threshold (upstream pops any one).
        if let Some(any) = record.messages.iter().next().cloned() {
            record.messages.remove(&any);
        }
        (
            format!("{COMBINED_PREFIX}{message}"),
            aggregate_key.to_string(),
        )
    }

    /// Takes a token for (source, object); false when the object's events are being dropped.
    fn allow(&mut self, key: &str, now: Instant) -> bool {
        if self.buckets.len() > CACHE_SIZE {
            self.buckets.clear();
        }
        let (tokens, at) = self
            .buckets
            .entry(key.to_string())
            .or_insert((SPAM_BURST, now));
        let refill = now.saturating_duration_since(*at).as_secs_f64() / SPAM_REFILL.as_secs_f64();
        *tokens = (*tokens + refill).min(SPAM_BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Records events for one component (`source.component`, e.g. `deployment-controller`).
#[derive(Clone)]
pub struct EventRecorder {
    client: Client,
    component: String,
    host: String,
    correlator: Arc<Mutex<Correlator>>,
    /// With a limit: the queue of one writer task that records in order at a limited rate.
    queue: Option<tokio::sync::mpsc::Sender<Pending>>,
}

/// A write limit, as a kubelet's (`eventRecordQPS`, `eventBurst`, and client-go's broadcaster
/// queue of `maxQueuedEvents`, whose overflow is dropped). Recorders given clones of one
/// limit share its rate (a process's simulated nodes share one budget).
#[derive(Clone, Debug)]
pub struct EventLimit {
    pub rate: Arc<EventRate>,
    pub queue: usize,
}

/// A token bucket: `qps` a second, bursts of `burst`.
#[derive(Debug)]
pub struct EventRate {
    qps: f64,
    burst: f64,
    bucket: Mutex<(f64, Instant)>,
}

impl EventRate {
    pub fn new(qps: f64, burst: u32) -> Arc<Self> {
        let burst = f64::from(burst.max(1));
        Arc::new(EventRate {
            qps,
            burst,
            bucket: Mutex::new((burst, Instant::now())),
        })
    }

    /// Waits for a token.
    async fn take(&self) {
        loop {
            let wait = {
                let mut b = self
                    .bucket
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let now = Instant::now();
                let tokens = (b.0 + now.saturating_duration_since(b.1).as_secs_f64() * self.qps)
                    .min(self.burst);
                *b = (tokens, now);
                if tokens >= 1.0 || self.qps <= 0.0 {
                    b.0 -= 1.0;
                    return;
                }
                Duration::from_secs_f64((1.0 - tokens) / self.qps)
            };
            tokio::time::sleep(wait).await;
        }
    }
}

struct Pending {
    object: ObjectReference,
    type_: String,
    reason: String,
    message: String,
}

/// A reference to any object, for `involvedObject`.
pub fn object_reference<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: obj.namespace(),
        name: Some(obj.name_any()),
        uid: obj.uid(),
        resource_version: obj.resource_version(),
        ..Default::default()
    }
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("component", &self.component)
            .finish()
    }
}

impl EventRecorder {
    pub fn new(client: Client, component: &str, host: &str) -> Self {
        EventRecorder {
            client,
            component: component.to_string(),
            host: host.to_string(),
            correlator: Arc::default(),
            queue: None,
        }
    }

    /// A recorder whose events are written in order by one task, at most `limit.qps` a second
    /// (bursts of `limit.burst`), dropping what overflows its queue. Call inside a runtime.
    pub fn limited(client: Client, component: &str, host: &str, limit: EventLimit) -> Self {
        let writer = EventRecorder::new(client, component, host);
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Pending>(limit.queue.max(1));
        let mut recorder = writer.clone();
        recorder.queue = Some(tx);
        tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                limit.rate.take().await;
                if let Err(e) = writer
                    .record(&p.object, &p.type_, &p.reason, &p.message)
                    .await
                {
                    tracing::debug!(error = %e, reason = p.reason, "event not recorded");
                }
            }
        });
        recorder
    }

    /// Records an event about `object` in the background.
    pub fn event(&self, object: &ObjectReference, type_: &str, reason: &str, message: &str) {
        if let Some(queue) = &self.queue {
            let pending = Pending {
                object: object.clone(),
                type_: type_.to_string(),
                reason: reason.to_string(),
                message: message.to_string(),
            };
            if queue.try_send(pending).is_err() {
                tracing::debug!(reason, "event queue full; event dropped");
            }
            return;
        }
        let recorder = self.clone();
        let (object, type_, reason, message) = (
            object.clone(),
            type_.to_string(),
            reason.to_string(),
            message.to_string(),
        );
        tokio::spawn(async move {
            if let Err(e) = recorder.record(&object, &type_, &reason, &message).await {
                tracing::debug!(error = %e, reason, "event not recorded");
            }
        });
    }

    async fn record(
        &self,
        object: &ObjectReference,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> Result<(), kube::Error> {
        let object_key = format!(
            "{}/{}/{}/{}/{}",
            self.component,
            object.kind.as_deref().unwrap_or_default(),
            object.namespace.as_deref().unwrap_or_default(),
            object.name.as_deref().unwrap_or_default(),
            object.uid.as_deref().unwrap_or_default(),
        );
        let aggregate_key = format!("{object_key}/{type_}/{reason}");
        let now = jiff::Timestamp::now();
        let (message, event_key, previous) = {
            let mut c = self
                .correlator
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !c.allow(&object_key, Instant::now()) {
                return Ok(());
            }
            let (message, event_key) = c.aggregate(&aggregate_key, message, Instant::now());
            let previous = c
                .seen
                .get(&event_key)
                .map(|s| (s.namespace.clone(), s.name.clone(), s.count + 1));
            (message, event_key, previous)
        };
        let message = message.as_str();
        if let Some((namespace, name, count)) = previous {
            let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
            let patch = serde_json::json!({
                "count": count,
                "lastTimestamp": Time(now),
                "message": message,
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                Ok(_) => {
                    self.remember(&event_key, namespace, name, count);
                    return Ok(());
                }
                // The event was deleted meanwhile (TTL): create a new one.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let namespace = object
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string());
        let name = format!(
            "{}.{:x}",
            object.name.as_deref().unwrap_or_default(),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            involved_object: object.clone(),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            type_: Some(type_.to_string()),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: (!self.host.is_empty()).then(|| self.host.clone()),
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.host.clone()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        api.create(&PostParams::default(), &event).await?;
        self.remember(&event_key, namespace, name, 1);
        Ok(())
    }

    fn remember(&self, key: &str, namespace: String, name: String, count: i32) {
        let mut c = self
            .correlator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if c.seen.len() >= CACHE_SIZE {
            c.seen.clear();
        }
        c.seen.insert(
            key.to_string(),
            Seen {
                namespace,
                name,
                count,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_shared_rate_allows_its_burst_then_qps() {
        let rate = EventRate::new(50.0, 100);
        let start = Instant::now();
        for _ in 0..100 {
            rate.take().await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO, "the burst is free");
        for _ in 0..50 {
            rate.take().await;
        }
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(990) && waited <= Duration::from_millis(1010),
            "50 more at 50/s take a second: {waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_spam_filter_allows_a_burst_of_25_then_one_per_5_minutes() {
        let mut c = Correlator::default();
        let now = Instant::now();
        for _ in 0..25 {
            assert!(c.allow("obj", now));
        }
        assert!(!c.allow("obj", now));
        assert!(c.allow("other", now), "per source and object");
        tokio::time::advance(Duration::from_secs(300)).await;
        assert!(c.allow("obj", Instant::now()));
        assert!(!c.allow("obj", Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn ten_similar_events_are_combined_until_ten_minutes_pass() {
        let mut c = Correlator::default();
        let now = Instant::now();
        for i in 0..9 {
            let (message, key) = c.aggregate("obj/Warning/Failed", &format!("m{i}"), now);
            assert_eq!(message, format!("m{i}"));
            assert_eq!(key, format!("obj/Warning/Failed/m{i}"));
        }
        // The same message again is not a new one.
        assert_eq!(
            c.aggregate("obj/Warning/Failed", "m0", now).1,
            "obj/Warning/Failed/m0"
        );
        for i in 9..12 {
            let (message, key) = c.aggregate("obj/Warning/Failed", &format!("m{i}"), now);
            assert_eq!(message, format!("(combined from similar events): m{i}"));
            assert_eq!(key, "obj/Warning/Failed");
        }
        // Another reason is aggregated apart.
        assert_eq!(c.aggregate("obj/Warning/Other", "m1", now).0, "m1");
        tokio::time::advance(Duration::from_secs(601)).await;
        assert_eq!(
            c.aggregate("obj/Warning/Failed", "m20", Instant::now()).0,
            "m20"
        );
    }
}
