//! The watch cache: per resource, every current object decoded once and kept in memory, plus a
//! ring of recent events, fed by one storage watch. API watches are served from it, so each
//! change is decoded once however many clients watch, and a client that falls behind is cut off
//! (it re-watches) without slowing anyone else.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use k1s_storage::{EventKind, ListOptions, Revision, Store};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Registry, object};
use crate::errors::from_store;

/// Events kept per resource for watches that resume from a recent resourceVersion: those of the
/// last `RING_FRESH` (upstream's eventFreshDuration), at least `RING_MIN` (upstream's lower
/// bound) and at most `RING_CAPACITY`. A watch from an older revision replays from the store's
/// history instead. Keeping a fixed 4096 made an idle cluster grow by its Lease renewals (each
/// event holds the object and its previous state) for over an hour.
const RING_CAPACITY: usize = 4096;
const RING_MIN: usize = 100;
const RING_FRESH: Duration = Duration::from_secs(75);
/// Events buffered per watcher before it is cut off. Each watcher's channel grows in small
/// blocks as events queue up (a broadcast ring would allocate the whole buffer per resource up
/// front: 512 KiB each, paid for every resource anyone watches).
const SUBSCRIBER_BUFFER: usize = 4096;
/// How often the ring is trimmed when no event arrives: a burst (10,000 pods created) must not
/// keep its last `RING_CAPACITY` events, each with two versions of an object, in memory for as
/// long as the resource stays quiet.
const TRIM_EVERY: Duration = Duration::from_secs(15);
/// How long a watch from a revision the cache has not reached yet may wait for it.
const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

/// One change, decoded once and shared by every watcher.
#[derive(Debug)]
pub struct CachedEvent {
    pub kind: EventKind,
    pub revision: Revision,
    pub key: String,
    /// The object after the change; for a delete, its last state carrying the delete's revision.
    pub object: Arc<Value>,
    /// The object before the change (None for a create).
    pub prev: Option<Arc<Value>>,
}

struct State {
    objects: BTreeMap<String, Arc<Value>>,
    revision: Revision,
    /// Recent events with the time they arrived.
    ring: VecDeque<(Instant, Arc<CachedEvent>)>,
    /// The ring holds every event after this revision.
    oldest: Revision,
    /// Live watchers; one that falls `SUBSCRIBER_BUFFER` behind is dropped (its watch ends and
    /// the client re-watches from its last resourceVersion).
    subscribers: Vec<mpsc::Sender<Arc<CachedEvent>>>,
}

impl State {
    /// Drops the events the ring need not keep any more (see `RING_FRESH`).
    fn trim_ring(&mut self, now: Instant) {
        while let Some((at, oldest)) = self.ring.front()
            && (self.ring.len() > RING_CAPACITY
                || (self.ring.len() > RING_MIN && now.duration_since(*at) > RING_FRESH))
        {
            self.oldest = oldest.revision;
            self.ring.pop_front();
        }
    }
}

pub struct ResourceCache {
    state: RwLock<State>,
    /// Bumped to ask the feeding task to advance `revision` to the store's when it has nothing
    /// pending (our progress notification).
    progress: tokio::sync::watch::Sender<u64>,
}

/// What a watch starts with.
pub struct Subscription {
    /// Current objects (for watches without a resourceVersion), as of `revision`.
    pub initial: Vec<Arc<Value>>,
    /// Events after the requested revision that happened before subscribing.
    pub replay: Vec<Arc<CachedEvent>>,
    pub revision: Revision,
    pub live: mpsc::Receiver<Arc<CachedEvent>>,
}

/// Watch caches of every resource, created on first use.
#[derive(Default)]
pub struct WatchCache {
    resources: Mutex<HashMap<String, Arc<ResourceCache>>>,
}

impl WatchCache {
    async fn resource(
        self: &Arc<Self>,
        registry: &Registry,
        info: &'static ResourceInfo,
    ) -> Result<Arc<ResourceCache>, ApiError> {
        // One cache per served version: it holds objects decoded in that version (HPAs of
        // autoscaling/v1 and v2, and Events of both groups, share a key space).
        let id = format!("{}/{}/{}", info.group, info.version, info.resource);
        if let Some(c) = self.lock()?.get(&id) {
            return Ok(c.clone());
        }
        let prefix = Registry::prefix(info, None);
        let cache = start(
            registry.store().clone(),
            info,
            &prefix,
            (id.clone(), Arc::downgrade(self)),
        )
        .await?;
        // Two first watchers may race; keep the one that got in first.
        let mut map = self.lock()?;
        Ok(map.entry(id).or_insert(cache).clone())
    }

    fn lock(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, HashMap<String, Arc<ResourceCache>>>, ApiError> {
        self.resources
            .lock()
            .map_err(|_| ApiError::internal("watch cache lock poisoned"))
    }

    fn forget(&self, id: &str) {
        if let Ok(mut map) = self.resources.lock() {
            map.remove(id);
        }
    }

    /// Subscribes to a resource: from its current state (`after` = None) or after a revision.
    /// `Ok(None)` means the revision is older than the cache holds: read the store instead.
    pub async fn subscribe(
        self: &Arc<Self>,
        registry: &Registry,
        info: &'static ResourceInfo,
        after: Option<Revision>,
    ) -> Result<Option<Subscription>, ApiError> {
        let cache = self.resource(registry, info).await?;
        // A watch from the current state starts from a state as fresh as the store (upstream
        // serves it consistently): a write acknowledged before it must be in its initial
        // objects, not arrive later as a live event.
        let rev = after.unwrap_or_else(|| registry.store().current_revision());
        let deadline = tokio::time::Instant::now() + CATCH_UP_WAIT;
        while cache.read()?.revision < rev {
            let mut current = registry.store().current_revision();
            if rev > current {
                // Another server (on a shared etcd) may have written it.
                current = registry.store().fresh_revision().await.unwrap_or(current);
            }
            if rev > current || tokio::time::Instant::now() >= deadline {
                return Err(ApiError::timeout(
                    format!("Too large resource version: {rev}, current: {current}"),
                    1,
                ));
            }
            // The revision may belong to another resource: ask the feed for progress.
            cache.progress.send_modify(|n| *n = n.wrapping_add(1));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let mut state = cache.write()?;
        let (tx, live) = mpsc::channel(SUBSCRIBER_BUFFER);
        state.subscribers.push(tx);
        let sub = match after {
            None => Subscription {
                initial: state.objects.values().cloned().collect(),
                replay: Vec::new(),
                revision: state.revision,
                live,
            },
            Some(rev) if rev < state.oldest => return Ok(None),
            Some(rev) => Subscription {
                initial: Vec::new(),
                replay: state
                    .ring
                    .iter()
                    .filter(|(_, e)| e.revision > rev)
                    .map(|(_, e)| e.clone())
                    .collect(),
                revision: rev,
                live,
            },
        };
        Ok(Some(sub))
    }
}

impl ResourceCache {
    fn write(&self) -> Result<std::sync::RwLockWriteGuard<'_, State>, ApiError> {
        self.state
            .write()
            .map_err(|_| ApiError::internal("watch cache lock poisoned"))
    }

    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, State>, ApiError> {
        self.state
            .read()
            .map_err(|_| ApiError::internal("watch cache lock poisoned"))
    }
}

/// Loads a resource's objects and starts following its storage watch.
async fn start(
    store: Arc<dyn Store>,
    info: &'static ResourceInfo,
    prefix: &str,
    (id, owner): (String, std::sync::Weak<WatchCache>),
) -> Result<Arc<ResourceCache>, ApiError> {
    let gr = info.group_resource();
    let page = store
        .list(prefix, ListOptions::default())
        .await
        .map_err(|e| from_store(e, &gr, ""))?;
    let mut decoded = page
        .items
        .iter()
        .map(object::decode_stored)
        .collect::<Result<Vec<_>, _>>()?;
    crate::conversion::all_to_version(info, &mut decoded)?;
    let objects: BTreeMap<_, _> = page
        .items
        .iter()
        .map(|kv| kv.key.clone())
        .zip(decoded.into_iter().map(Arc::new))
        .collect();
    let mut watch = store
        .watch(prefix, page.revision)
        .await
        .map_err(|e| from_store(e, &gr, ""))?;
    let cache = Arc::new(ResourceCache {
        state: RwLock::new(State {
            objects,
            revision: page.revision,
            ring: VecDeque::new(),
            oldest: page.revision,
            subscribers: Vec::new(),
        }),
        progress: tokio::sync::watch::Sender::new(0),
    });
    let weak = Arc::downgrade(&cache);
    let prefix = prefix.to_string();
    let mut progress_requests = cache.progress.subscribe();
    tokio::spawn(async move {
        let mut trim =
            tokio::time::interval_at(tokio::time::Instant::now() + TRIM_EVERY, TRIM_EVERY);
        trim.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let Some(cache) = weak.upgrade() else { return };
            let next = tokio::select! {
                biased;
                next = watch.next() => next,
                _ = trim.tick() => {
                    if let Ok(mut state) = cache.state.write() {
                        state.trim_ring(Instant::now());
                    }
                    continue;
                }
                Ok(()) = progress_requests.changed() => {
                    // Read the store's revision first, then check nothing is pending: every
                    // event up to it has then been applied here.
                    let current = store.current_revision();
                    if watch.is_idle()
                        && let Ok(mut state) = cache.state.write()
                        && state.revision < current
                    {
                        state.revision = current;
                    }
                    continue;
                }
            };
            let Some(Ok(ev)) = next else { break };
            let event = match super::watch::decode_event(info, &ev) {
                Ok(Some(event)) => event,
                Ok(None) => continue,
                Err(e) => {
                    // An event this version cannot show (a conversion webhook failing): end
                    // the cache rather than skip it; watchers re-watch and see the error.
                    tracing::warn!(%prefix, error = %e.message, "watch cache stopped");
                    break;
                }
            };
            let Ok(mut state) = cache.state.write() else {
                return;
            };
            match event.kind {
                EventKind::Deleted => state.objects.remove(&event.key),
                _ => state
                    .objects
                    .insert(event.key.clone(), event.object.clone()),
            };
            state.revision = event.revision;
            let now = Instant::now();
            state.ring.push_back((now, event.clone()));
            state.trim_ring(now);
            // Sent under the lock: a subscriber sees each event either in its snapshot or live.
            // A full channel (a watcher too slow) or a closed one (a watch that ended) drops it.
            state
                .subscribers
                .retain(|s| s.try_send(event.clone()).is_ok());
        }
        // The storage watch ended (store closing, or the cache fell behind): drop this cache so
        // the next watch rebuilds it; its watchers end and re-watch.
        tracing::debug!(%prefix, "watch cache stopped");
        if let Some(owner) = owner.upgrade() {
            owner.forget(&id);
        }
    });
    Ok(cache)
}
