//! Watch through the registry: optional initial state, then storage events translated to API
//! watch events with selectors applied (objects that stop matching arrive as DELETED), bookmarks,
//! `410 Expired` for compacted revisions, and a timeout.
//!
//! Each watch runs in its own task feeding a bounded channel: a slow HTTP client stalls only that
//! task, whose storage watch is then cut off by the store, so the server never waits for it.

use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use k1s_apimachinery::ApiError;
use k1s_apimachinery::selector::{FieldSelector, LabelSelector};
use k1s_storage::{EventKind, Revision};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{ListQuery, Registry, Target, matches, object, parse_resource_version};
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
    Added(Value),
    Modified(Value),
    Deleted(Value),
    Bookmark(Value),
    Error(Value),
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

impl Registry {
    pub async fn watch(&self, t: Target<'_>, q: WatchQuery) -> Result<WatchStream, ApiError> {
        let info = t.info;
        let gr = t.group_resource();
        let prefix = Self::prefix(info, t.namespace);
        // Empty or "0" resourceVersion: start with the current state (upstream's default).
        let send_initial = q
            .send_initial_events
            .unwrap_or(q.resource_version.is_empty() || q.resource_version == "0");
        let (initial, start) = if send_initial {
            let list = self
                .list(
                    t,
                    &ListQuery {
                        label_selector: q.label_selector.clone(),
                        field_selector: q.field_selector.clone(),
                        ..Default::default()
                    },
                )
                .await?;
            let rev = parse_resource_version(&list.resource_version)?;
            (list.items, rev)
        } else {
            (Vec::new(), parse_resource_version(&q.resource_version)?)
        };
        let (tx, rx) = mpsc::channel::<WatchEvent>(256);
        let mut storage_watch = match self.store.watch(&prefix, start).await {
            Ok(w) => w,
            Err(e) => {
                // Upstream answers 200 and sends the failure as one ERROR event.
                let status = from_store(e, &gr, "").to_status_json();
                let _ = tx.try_send(WatchEvent::Error(status));
                return Ok(Box::pin(ReceiverStream::new(rx)));
            }
        };
        let bookmark_template = json!({ "kind": info.kind, "apiVersion": info.api_version() });
        tokio::spawn(async move {
            let bookmark = |rev: Revision, initial_end: bool| {
                let mut b = bookmark_template.clone();
                b["metadata"] = json!({ "resourceVersion": rev.to_string() });
                if initial_end {
                    b["metadata"]["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
                }
                WatchEvent::Bookmark(b)
            };
            for obj in initial {
                if tx.send(WatchEvent::Added(obj)).await.is_err() {
                    return;
                }
            }
            if q.send_initial_events == Some(true)
                && q.allow_bookmarks
                && tx.send(bookmark(start, true)).await.is_err()
            {
                return;
            }
            let deadline = tokio::time::sleep(q.timeout.unwrap_or(DEFAULT_TIMEOUT));
            tokio::pin!(deadline);
            let mut ticker =
                tokio::time::interval(q.bookmark_interval.unwrap_or(DEFAULT_BOOKMARK_INTERVAL));
            ticker.tick().await;
            let mut last = start;
            loop {
                let event = tokio::select! {
                    _ = &mut deadline => return,
                    _ = ticker.tick(), if q.allow_bookmarks => Some(bookmark(last, false)),
                    next = storage_watch.next() => match next {
                        Some(Ok(ev)) => {
                            last = ev.revision;
                            translate(info, &ev, q.label_selector.as_ref(), q.field_selector.as_ref())
                        }
                        // Cut off as too slow, or the store closed: end; the client re-watches.
                        Some(Err(_)) | None => return,
                    },
                };
                if let Some(event) = event
                    && tx.send(event).await.is_err()
                {
                    return;
                }
            }
        });
        Ok(Box::pin(ReceiverStream::new(rx)))
    }
}

/// The API event a storage event becomes for a watcher with these selectors, if any.
fn translate(
    info: &'static k1s_apimachinery::catalog::ResourceInfo,
    ev: &k1s_storage::Event,
    labels: Option<&LabelSelector>,
    fields: Option<&FieldSelector>,
) -> Option<WatchEvent> {
    let decode = |kv: &k1s_storage::KeyValue| object::decode(info, kv).ok();
    let current = ev.current.as_ref().and_then(decode);
    let mut prev = ev.prev.as_ref().and_then(decode);
    let now_matches = current
        .as_ref()
        .is_some_and(|o| matches(info, o, labels, fields));
    let was_matching = prev
        .as_ref()
        .is_some_and(|o| matches(info, o, labels, fields));
    let rv = Value::String(ev.revision.to_string());
    match (ev.kind, current) {
        (EventKind::Deleted, _) => {
            let mut obj = prev.take()?;
            obj["metadata"]["resourceVersion"] = rv;
            was_matching.then_some(WatchEvent::Deleted(obj))
        }
        (_, Some(obj)) if now_matches && was_matching => Some(WatchEvent::Modified(obj)),
        (_, Some(obj)) if now_matches => Some(WatchEvent::Added(obj)),
        // It stopped matching: to this watcher it is gone.
        (_, Some(mut obj)) if was_matching => {
            obj["metadata"]["resourceVersion"] = rv;
            Some(WatchEvent::Deleted(obj))
        }
        _ => None,
    }
}
