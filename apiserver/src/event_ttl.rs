//! Event expiry (`--event-ttl`, default 1h): upstream's API server writes every Event with an
//! etcd lease of that TTL, so an Event goes that long after its last write. k1s does it once
//! for every store: one task follows the Events' keys (a store list + watch, nothing decoded)
//! and keeps, per stored Event, when it expires; it sleeps until the earliest expiry (or until
//! a write changes the schedule) and deletes what is due from the store, as a lease expiry
//! does, unless a newer write came first (revision precondition).
//!
//! Memory is one schedule entry (key, revision, time) per stored Event; an idle server with no
//! Events waits on the watch and nothing else.
//!
//! After a restart the server does not know when stored Events were last written: each gets the
//! latest time it records (creation, lastTimestamp, eventTime, series, managedFields), never
//! later than now, as its last write.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k1s_apimachinery::catalog;
use k1s_storage::{EventKind, ListOptions, Revision, Store};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::registry::Registry;

/// Upstream's `--event-ttl` default.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

/// The store key of an Event.
type Key = String;

/// When each stored Event expires, ordered both ways.
#[derive(Default)]
struct Schedule {
    /// Key -> (expiry, resourceVersion of the write it counts from).
    by_key: HashMap<Key, (Instant, Revision)>,
    by_time: BTreeSet<(Instant, Key)>,
}

impl Schedule {
    fn set(&mut self, key: Key, at: Instant, rv: Revision) {
        if let Some((old, _)) = self.by_key.insert(key.clone(), (at, rv)) {
            self.by_time.remove(&(old, key.clone()));
        }
        self.by_time.insert((at, key));
    }

    fn remove(&mut self, key: &Key) {
        if let Some((at, _)) = self.by_key.remove(key) {
            self.by_time.remove(&(at, key.clone()));
        }
    }

    fn next(&self) -> Option<Instant> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Takes the entries due at `now`: (key, revision).
    fn take_due(&mut self, now: Instant) -> Vec<(Key, Revision)> {
        let mut due = Vec::new();
        while let Some((at, key)) = self.by_time.first().cloned() {
            if at > now {
                break;
            }
            self.by_time.pop_first();
            if let Some((_, rv)) = self.by_key.remove(&key) {
                due.push((key, rv));
            }
        }
        due
    }
}

/// The latest time an Event records, as an estimate of its last write.
fn recorded_time(event: &Value) -> Option<jiff::Timestamp> {
    let managed = event
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("time"));
    [
        "/metadata/creationTimestamp",
        "/lastTimestamp",
        "/eventTime",
        "/series/lastObservedTime",
    ]
    .iter()
    .filter_map(|p| event.pointer(p))
    .chain(managed)
    .filter_map(Value::as_str)
    .filter_map(|t| t.parse::<jiff::Timestamp>().ok())
    .max()
}

/// What the schedule learns from the store.
enum Change {
    /// Every stored Event after a (re)list: key, revision and the time it records.
    Listed(Vec<(Key, Revision, Option<jiff::Timestamp>)>),
    /// A write.
    Written(Key, Revision),
    Deleted(Key),
}

/// Starts the expiry task (nothing when `ttl` is zero).
pub fn start(registry: &Registry, ttl: Duration, shutdown: watch::Receiver<bool>) {
    let Some(info) = catalog::find("", "v1", "events") else {
        return;
    };
    if ttl.is_zero() {
        return;
    }
    let store = registry.store().clone();
    let prefix = Registry::prefix(info, None);
    let schedule = Arc::new(Mutex::new(Schedule::default()));
    let changed = Arc::new(Notify::new());
    tokio::spawn(follow(
        store.clone(),
        prefix,
        ttl,
        schedule.clone(),
        changed.clone(),
        shutdown.clone(),
    ));
    tokio::spawn(expire(store, schedule, changed, shutdown));
}

/// Lists then watches the Events' keys, relisting after any interruption.
async fn follow(
    store: Arc<dyn Store>,
    prefix: String,
    ttl: Duration,
    schedule: Arc<Mutex<Schedule>>,
    changed: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
) {
    let record = |change: Change| {
        let mut s = schedule.lock().unwrap_or_else(PoisonError::into_inner);
        apply(&mut s, change, Instant::now(), ttl);
        drop(s);
        changed.notify_one();
    };
    loop {
        if *shutdown.borrow() {
            return;
        }
        let Ok(page) = store.list(&prefix, ListOptions::default()).await else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let listed = page
            .items
            .iter()
            .map(|kv| {
                let recorded = serde_json::from_slice::<Value>(&kv.value)
                    .ok()
                    .and_then(|e| recorded_time(&e));
                (kv.key.clone(), kv.mod_revision, recorded)
            })
            .collect();
        record(Change::Listed(listed));
        if let Ok(mut events) = store.watch(&prefix, page.revision).await {
            loop {
                let event = tokio::select! {
                    _ = shutdown.wait_for(|s| *s) => return,
                    e = events.next() => e,
                };
                let Some(Ok(event)) = event else { break };
                record(match (&event.kind, &event.current) {
                    (EventKind::Deleted, _) | (_, None) => Change::Deleted(event.key.clone()),
                    (_, Some(kv)) => Change::Written(event.key.clone(), kv.mod_revision),
                });
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Brings the schedule in step with what the store showed at `now`.
fn apply(s: &mut Schedule, change: Change, now: Instant, ttl: Duration) {
    match change {
        Change::Listed(items) => {
            let wall = jiff::Timestamp::now();
            let listed: HashMap<Key, (Revision, Option<jiff::Timestamp>)> =
                items.into_iter().map(|(k, rev, t)| (k, (rev, t))).collect();
            let gone: Vec<Key> = s
                .by_key
                .keys()
                .filter(|k| !listed.contains_key(*k))
                .cloned()
                .collect();
            for k in gone {
                s.remove(&k);
            }
            for (k, (rev, recorded)) in listed {
                if s.by_key.get(&k).is_some_and(|(_, known)| *known == rev) {
                    continue;
                }
                // Unknown to this process: counted from the last time it records.
                let age = recorded
                    .and_then(|t| Duration::try_from(wall.duration_since(t)).ok())
                    .unwrap_or_default();
                let written = now.checked_sub(age).unwrap_or(now);
                s.set(k, written + ttl, rev);
            }
        }
        Change::Written(k, rev) => s.set(k, now + ttl, rev),
        Change::Deleted(k) => s.remove(&k),
    }
}

/// Sleeps until the earliest expiry (or a schedule change) and deletes what is due.
async fn expire(
    store: Arc<dyn Store>,
    schedule: Arc<Mutex<Schedule>>,
    changed: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let next = schedule
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next();
        let sleep = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = shutdown.wait_for(|s| *s) => return,
            () = changed.notified() => continue,
            () = sleep => {}
        }
        let due = schedule
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take_due(Instant::now());
        for (key, rev) in due {
            // A conflict means a newer write, which the watch reschedules; not found means
            // someone deleted it first.
            match store.delete(&key, Some(rev)).await {
                Ok(_)
                | Err(k1s_storage::Error::Conflict { .. } | k1s_storage::Error::NotFound { .. }) => {
                }
                Err(e) => tracing::warn!("event {key} not expired: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Key {
        format!("/registry/events/ns/{name}")
    }

    fn written(name: &str, rev: u64) -> Change {
        Change::Written(key(name), Revision(rev))
    }

    #[test]
    fn event_ttl_schedule_follows_writes() {
        let ttl = Duration::from_secs(10);
        let t0 = Instant::now();
        let mut s = Schedule::default();
        apply(&mut s, written("a", 1), t0, ttl);
        apply(&mut s, written("b", 2), t0 + Duration::from_secs(1), ttl);
        assert_eq!(s.next(), Some(t0 + ttl));
        // An update counts from its own write.
        apply(&mut s, written("a", 3), t0 + Duration::from_secs(5), ttl);
        assert_eq!(s.by_time.len(), 2);
        assert_eq!(s.next(), Some(t0 + Duration::from_secs(11)));
        assert!(s.take_due(t0 + Duration::from_secs(10)).is_empty());
        assert_eq!(
            s.take_due(t0 + Duration::from_secs(12)),
            [(key("b"), Revision(2))]
        );
        apply(&mut s, Change::Deleted(key("a")), t0, ttl);
        assert_eq!(s.next(), None);
        assert!(s.by_key.is_empty());
    }

    #[test]
    fn event_ttl_relist_keeps_known_writes_and_dates_unknown_ones() {
        let ttl = Duration::from_secs(3600);
        let t0 = Instant::now();
        let mut s = Schedule::default();
        apply(&mut s, written("kept", 1), t0, ttl);
        apply(&mut s, written("gone", 2), t0, ttl);
        let two_hours_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
        let later = t0 + Duration::from_secs(100);
        let listed = vec![
            (key("kept"), Revision(1), None),
            (key("old"), Revision(3), Some(two_hours_ago)),
        ];
        apply(&mut s, Change::Listed(listed), later, ttl);
        assert_eq!(s.by_key[&key("kept")].0, t0 + ttl);
        assert!(!s.by_key.contains_key(&key("gone")));
        // Written two hours ago by its own record: due at once.
        assert_eq!(s.take_due(later), [(key("old"), Revision(3))]);
    }
}
