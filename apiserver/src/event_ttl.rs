//! Event expiry (`--event-ttl`, default 1h): upstream's API server writes every Event with an
//! etcd lease of that TTL, so an Event goes that long after its last write. k1s does it once
//! for every store: one task follows Events (list + watch) and keeps, per stored Event, when it
//! expires; it sleeps until the earliest expiry (or until a write changes the schedule) and
//! deletes what is due, unless a newer write came first (resourceVersion precondition).
//!
//! Memory is one schedule entry per stored Event (what the store holds anyway); an idle server
//! with no Events waits on the watch and nothing else.
//!
//! After a restart the server does not know when stored Events were last written: each gets the
//! latest time it records (creation, lastTimestamp, eventTime, series, managedFields), never
//! later than now, as its last write.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k1s_apimachinery::catalog;
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::registry::informer::{self, Change};
use crate::registry::{DeleteOptions, Registry, Target};

/// Upstream's `--event-ttl` default.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

/// (namespace, name) of an Event.
type Key = (String, String);

/// When each stored Event expires, ordered both ways.
#[derive(Default)]
struct Schedule {
    /// Key -> (expiry, resourceVersion of the write it counts from).
    by_key: HashMap<Key, (Instant, String)>,
    by_time: BTreeSet<(Instant, Key)>,
}

impl Schedule {
    fn set(&mut self, key: Key, at: Instant, rv: String) {
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

    /// Takes the entries due at `now`: (key, resourceVersion).
    fn take_due(&mut self, now: Instant) -> Vec<(Key, String)> {
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

fn key_of(event: &Value) -> Option<Key> {
    let meta = event.get("metadata")?;
    let field = |f: &str| {
        meta.get(f)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Some((field("namespace"), field("name")))
}

fn resource_version(event: &Value) -> String {
    event
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
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

/// Starts the expiry task (nothing when `ttl` is zero).
pub fn start(registry: Registry, ttl: Duration, shutdown: watch::Receiver<bool>) {
    let Some(info) = catalog::find("", "v1", "events") else {
        return;
    };
    if ttl.is_zero() {
        return;
    }
    let schedule = Arc::new(Mutex::new(Schedule::default()));
    let changed = Arc::new(Notify::new());
    {
        let (schedule, changed) = (schedule.clone(), changed.clone());
        tokio::spawn(informer::run(
            registry.clone(),
            info,
            shutdown.clone(),
            move |change| {
                let now = Instant::now();
                {
                    let mut s = schedule.lock().unwrap_or_else(PoisonError::into_inner);
                    apply(&mut s, change, now, ttl);
                }
                changed.notify_one();
                std::future::ready(())
            },
        ));
    }
    tokio::spawn(expire(registry, info, schedule, changed, shutdown));
}

/// Brings the schedule in step with what the informer saw at `now`.
fn apply(s: &mut Schedule, change: Change, now: Instant, ttl: Duration) {
    match change {
        Change::Listed(items) => {
            let wall = jiff::Timestamp::now();
            let mut listed = HashMap::with_capacity(items.len());
            for e in &items {
                if let Some(k) = key_of(e) {
                    listed.insert(k, e);
                }
            }
            let gone: Vec<Key> = s
                .by_key
                .keys()
                .filter(|k| !listed.contains_key(*k))
                .cloned()
                .collect();
            for k in gone {
                s.remove(&k);
            }
            for (k, e) in listed {
                let rv = resource_version(e);
                if s.by_key.get(&k).is_some_and(|(_, known)| *known == rv) {
                    continue;
                }
                // Unknown to this process: counted from the last time it records.
                let age = recorded_time(e)
                    .and_then(|t| Duration::try_from(wall.duration_since(t)).ok())
                    .unwrap_or_default();
                let written = now.checked_sub(age).unwrap_or(now);
                s.set(k, written + ttl, rv);
            }
        }
        Change::Upserted(e) => {
            if let Some(k) = key_of(&e) {
                s.set(k, now + ttl, resource_version(&e));
            }
        }
        Change::Deleted(e) => {
            if let Some(k) = key_of(&e) {
                s.remove(&k);
            }
        }
    }
}

/// Sleeps until the earliest expiry (or a schedule change) and deletes what is due.
async fn expire(
    registry: Registry,
    info: &'static catalog::ResourceInfo,
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
        for ((namespace, name), rv) in due {
            let t = Target {
                info,
                namespace: Some(&namespace),
            };
            let opts = DeleteOptions {
                precondition_resource_version: Some(rv),
                ..DeleteOptions::default()
            };
            // A conflict means a newer write, which the watch reschedules; not found means
            // someone deleted it first.
            if let Err(e) = registry.delete(t, &name, &opts).await
                && !e.is_not_found()
                && e.code != 409
            {
                tracing::warn!("event {namespace}/{name} not expired: {}", e.message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn event(name: &str, rv: &str) -> Arc<Value> {
        Arc::new(json!({"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}))
    }

    fn key(name: &str) -> Key {
        ("ns".into(), name.into())
    }

    #[test]
    fn event_ttl_schedule_follows_writes() {
        let ttl = Duration::from_secs(10);
        let t0 = Instant::now();
        let mut s = Schedule::default();
        apply(&mut s, Change::Upserted(event("a", "1")), t0, ttl);
        apply(
            &mut s,
            Change::Upserted(event("b", "2")),
            t0 + Duration::from_secs(1),
            ttl,
        );
        assert_eq!(s.next(), Some(t0 + ttl));
        // An update counts from its own write.
        apply(
            &mut s,
            Change::Upserted(event("a", "3")),
            t0 + Duration::from_secs(5),
            ttl,
        );
        assert_eq!(s.by_time.len(), 2);
        assert_eq!(s.next(), Some(t0 + Duration::from_secs(11)));
        assert!(s.take_due(t0 + Duration::from_secs(10)).is_empty());
        assert_eq!(
            s.take_due(t0 + Duration::from_secs(12)),
            [(key("b"), "2".to_string())]
        );
        apply(&mut s, Change::Deleted(event("a", "3")), t0, ttl);
        assert_eq!(s.next(), None);
        assert!(s.by_key.is_empty());
    }

    #[test]
    fn event_ttl_relist_keeps_known_writes_and_dates_unknown_ones() {
        let ttl = Duration::from_secs(3600);
        let t0 = Instant::now();
        let mut s = Schedule::default();
        apply(&mut s, Change::Upserted(event("kept", "1")), t0, ttl);
        apply(&mut s, Change::Upserted(event("gone", "2")), t0, ttl);
        let mut old = (*event("old", "3")).clone();
        let two_hours_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
        old["lastTimestamp"] = json!(two_hours_ago.to_string());
        let later = t0 + Duration::from_secs(100);
        apply(
            &mut s,
            Change::Listed(vec![(*event("kept", "1")).clone(), old]),
            later,
            ttl,
        );
        assert_eq!(s.by_key[&key("kept")].0, t0 + ttl);
        assert!(!s.by_key.contains_key(&key("gone")));
        // Written two hours ago by its own record: due at once.
        assert_eq!(s.take_due(later), [(key("old"), "3".to_string())]);
    }
}
