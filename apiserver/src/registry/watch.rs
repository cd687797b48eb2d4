//! Watch through the registry: optional initial state, then changes translated to API watch
//! events with selectors applied (objects that stop matching arrive as DELETED), bookmarks,
//! `410 Expired` for compacted revisions, and a timeout.
//!
//! Changes come from the watch cache, or straight from the store for revisions older than the
//! cache holds. Each watch runs in its own task feeding a bounded channel: a slow HTTP client
//! stalls only that task, which the cache then cuts off, so the server never waits for it.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use k1s_apimachinery::meta;
use k1s_apimachinery::selector::{FieldSelector, LabelSelector};
use k1s_storage::{EventKind, Revision};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::cache::CachedEvent;
use super::{Registry, Target, matches, object, parse_resource_version};
use crate::errors::from_store;

/// Watch query parameters after parsing.
#[derive(Clone, Debug, Default)]
pub struct WatchQuery {
    pub label_selector: Option<LabelSelector>,
    pub field_selector: Option<FieldSelector>,
    pub resource_version: String,
    pub send_initial_events: Option<bool>,
    pub allow_bookmarks: bool,
    pub timeout: Option<Duration>,
    pub bookmark_interval: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    Added(Arc<Value>),
    Modified(Arc<Value>),
    Deleted(Arc<Value>),
    Bookmark(Arc<Value>),
    Error(Arc<Value>),
}

impl WatchEvent {
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }

    pub fn object(&self) -> &Value {
        match self {
            WatchEvent::Added(o)
            | WatchEvent::Modified(o)
            | WatchEvent::Deleted(o)
            | WatchEvent::Bookmark(o)
            | WatchEvent::Error(o) => o,
        }
    }
}

pub type WatchStream = Pin<Box<dyn Stream<Item = WatchEvent> + Send>>;

/// Upstream's default watch timeout is randomized around 30 minutes (min-request-timeout).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// Where live changes come from.
enum Live {
    Cache(mpsc::Receiver<Arc<CachedEvent>>),
    Store(k1s_storage::WatchStream, &'static ResourceInfo),
}

impl Live {
    /// The next change; `None` when the feed ended or this watcher fell behind.
    async fn next(&mut self) -> Option<Arc<CachedEvent>> {
        match self {
            Live::Cache(rx) => rx.recv().await,
            Live::Store(w, info) => loop {
                let ev = w.next().await?.ok()?;
                // An event that cannot be shown (a failing conversion webhook) ends the watch.
                if let Some(e) = decode_event(info, &ev).ok()? {
                    return Some(e);
                }
            },
        }
    }
}

/// A storage event in the version `info` serves (the object before and after, converted
/// together). `None` for an event with nothing to show.
pub(super) fn decode_event(
    info: &ResourceInfo,
    ev: &k1s_storage::Event,
) -> Result<Option<Arc<CachedEvent>>, ApiError> {
    let mut objects = Vec::with_capacity(2);
    if let Some(kv) = &ev.prev {
        objects.push(object::decode_stored(kv)?);
    }
    if let Some(kv) = &ev.current {
        objects.push(object::decode_stored(kv)?);
    }
    crate::conversion::all_to_version(info, &mut objects)?;
    let current = ev
        .current
        .as_ref()
        .and_then(|_| objects.pop())
        .map(Arc::new);
    let prev = objects.pop().map(Arc::new);
    let object = match (current, &prev) {
        (Some(obj), _) => obj,
        (None, Some(p)) => {
            let mut last = (**p).clone();
            last["metadata"]["resourceVersion"] = Value::String(ev.revision.to_string());
            Arc::new(last)
        }
        (None, None) => return Ok(None),
    };
    Ok(Some(Arc::new(CachedEvent {
        kind: ev.kind,
        revision: ev.revision,
        key: ev.key.clone(),
        object,
        prev,
    })))
}

impl Registry {
    pub async fn watch(&self, t: Target<'_>, q: WatchQuery) -> Result<WatchStream, ApiError> {
        let info = t.info;
        let gr = t.group_resource();
        let prefix = Self::prefix(info, t.namespace);
        // Empty or "0" resourceVersion: start with the current state (upstream's default).
        let send_initial = q
            .send_initial_events
            .unwrap_or(q.resource_version.is_empty() || q.resource_version == "0");
        let after = if send_initial {
            None
        } else {
            Some(parse_resource_version(&q.resource_version)?)
        };
        let (tx, rx) = mpsc::channel::<WatchEvent>(256);
        let (initial, replay, start, live) = match self.cache.subscribe(self, info, after).await? {
            Some(sub) => (sub.initial, sub.replay, sub.revision, Live::Cache(sub.live)),
            None => {
                // Older than the cache: replay from the store's history.
                let rev = after.unwrap_or_default();
                match self.store.watch(&prefix, rev).await {
                    Ok(w) => (Vec::new(), Vec::new(), rev, Live::Store(w, info)),
                    Err(e) => {
                        // Upstream answers 200 and sends the failure as one ERROR event.
                        let status = from_store(e, &gr, "").to_status_json();
                        let _ = tx.try_send(WatchEvent::Error(Arc::new(status)));
                        return Ok(Box::pin(ReceiverStream::new(rx)));
                    }
                }
            }
        };
        let filter = Filter {
            info,
            prefix,
            namespace: t.namespace.map(str::to_string),
            labels: q.label_selector.clone(),
            fields: q.field_selector.clone(),
        };
        tokio::spawn(serve_watch(tx, filter, initial, replay, start, live, q));
        Ok(Box::pin(ReceiverStream::new(rx)))
    }
}

/// What one watcher wants to see.
struct Filter {
    info: &'static ResourceInfo,
    prefix: String,
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl Filter {
    fn matches(&self, obj: &Value) -> bool {
        matches(self.info, obj, self.labels.as_ref(), self.fields.as_ref())
    }

    /// The API event a change becomes for this watcher, if any.
    fn translate(&self, ev: &CachedEvent) -> Option<WatchEvent> {
        if !ev.key.starts_with(&self.prefix) {
            return None;
        }
        let was = ev.prev.as_ref().is_some_and(|p| self.matches(p));
        if ev.kind == EventKind::Deleted {
            return was.then(|| WatchEvent::Deleted(ev.object.clone()));
        }
        let now = self.matches(&ev.object);
        match (was, now) {
            (true, true) => Some(WatchEvent::Modified(ev.object.clone())),
            (false, true) => Some(WatchEvent::Added(ev.object.clone())),
            // It stopped matching: to this watcher it is gone.
            (true, false) => Some(WatchEvent::Deleted(ev.object.clone())),
            (false, false) => None,
        }
    }
}

async fn serve_watch(
    tx: mpsc::Sender<WatchEvent>,
    filter: Filter,
    initial: Vec<Arc<Value>>,
    replay: Vec<Arc<CachedEvent>>,
    start: Revision,
    mut live: Live,
    q: WatchQuery,
) {
    let template = json!({ "kind": filter.info.kind, "apiVersion": filter.info.api_version() });
    let bookmark = |rev: Revision, initial_end: bool| {
        let mut b = template.clone();
        b["metadata"] = json!({ "resourceVersion": rev.to_string() });
        if initial_end {
            b["metadata"]["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        WatchEvent::Bookmark(Arc::new(b))
    };
    for obj in initial {
        let in_namespace = filter
            .namespace
            .as_deref()
            .is_none_or(|ns| meta::namespace(&obj) == Some(ns));
        if in_namespace && filter.matches(&obj) && tx.send(WatchEvent::Added(obj)).await.is_err() {
            return;
        }
    }
    if q.send_initial_events == Some(true)
        && q.allow_bookmarks
        && tx.send(bookmark(start, true)).await.is_err()
    {
        return;
    }
    let mut last = start;
    for ev in replay {
        last = ev.revision;
        if let Some(out) = filter.translate(&ev)
            && tx.send(out).await.is_err()
        {
            return;
        }
    }
    let deadline = tokio::time::sleep(q.timeout.unwrap_or(DEFAULT_TIMEOUT));
    tokio::pin!(deadline);
    let mut ticker =
        tokio::time::interval(q.bookmark_interval.unwrap_or(DEFAULT_BOOKMARK_INTERVAL));
    ticker.tick().await;
    loop {
        let event = tokio::select! {
            _ = &mut deadline => return,
            _ = ticker.tick(), if q.allow_bookmarks => Some(bookmark(last, false)),
            next = live.next() => match next {
                Some(ev) => {
                    last = ev.revision;
                    filter.translate(&ev)
                }
                // The feed ended or this watcher fell behind: end; the client re-watches.
                None => return,
            },
        };
        if let Some(event) = event
            && tx.send(event).await.is_err()
        {
            return;
        }
    }
}
