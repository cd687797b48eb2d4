//! Shared informers, client-go's shape: one informer per resource per process, shared by every
//! controller that watches it. An informer lists and watches through kube-rs's `watcher` (which
//! relists on 410 Gone and backs off on errors), keeps an indexed cache of `Arc`ed objects, and
//! calls its handlers with deltas (add / update / delete); handlers enqueue keys, never objects.
//! A metadata informer of a resource that already has a typed informer is fed by it instead of
//! watching on its own (upstream's informerfactory.ForResource), so the garbage collector and
//! quota add no second watch for the kinds the other controllers follow.

mod mutation;
mod store;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject};
use kube::core::ApiResource;
use kube::core::{PartialObjectMeta, PartialObjectMetaExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

pub use mutation::MutationCache;
pub use store::{
    IndexFn, NAMESPACE_INDEX, Store, key_of, label_index, owner_uid_index, pod_node_name_index,
    split_key,
};

/// What changed in an informer's cache.
#[derive(Debug)]
pub enum Delta<K> {
    Added(Arc<K>),
    /// Also sent on resync, with `old` and `new` the same object.
    Updated {
        old: Arc<K>,
        new: Arc<K>,
    },
    Deleted(Arc<K>),
}

impl<K> Delta<K> {
    /// The object as it is now (or was last, for a deletion).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Delta::Added(o) | Delta::Deleted(o) => o,
            Delta::Updated { new, .. } => new,
        }
    }
}

/// A delta handler.
pub type Handler<K> = Arc<dyn Fn(&Delta<K>) + Send + Sync>;

type StreamFn<K> = Box<dyn Fn() -> BoxStream<'static, watcher::Result<Event<K>>> + Send + Sync>;

/// The metadata-only view of any resource.
pub type MetaInformer = Informer<PartialObjectMeta<DynamicObject>>;

/// One resource's list + watch, cache and handlers.
pub struct Informer<K> {
    name: String,
    store: Arc<Store<K>>,
    handlers: RwLock<Vec<Handler<K>>>,
    synced: tokio::sync::watch::Sender<bool>,
    started: AtomicBool,
    /// `None` for an informer fed by another one (see `feed_metadata`).
    stream: Option<StreamFn<K>>,
    resync: Option<Duration>,
}

impl<K> Debug for Informer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("name", &self.name)
            .finish()
    }
}

impl<K> Informer<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn new(name: String, stream: Option<StreamFn<K>>, resync: Option<Duration>) -> Self {
        Informer {
            name,
            store: Arc::new(Store::default()),
            handlers: RwLock::new(Vec::new()),
            synced: tokio::sync::watch::channel(false).0,
            started: AtomicBool::new(false),
            stream,
            resync,
        }
    }

    /// The cache (readers only; the informer is its one writer).
    pub fn store(&self) -> Arc<Store<K>> {
        self.store.clone()
    }

    /// Adds a handler. Objects already cached are delivered to it as additions first, as
    /// client-go does for handlers added to a running informer.
    pub fn add_handler(&self, handler: impl Fn(&Delta<K>) + Send + Sync + 'static) {
        let handler: Handler<K> = Arc::new(handler);
        let mut handlers = self
            .handlers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for obj in self.store.list() {
            handler(&Delta::Added(obj));
        }
        handlers.push(handler);
    }

    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until the first list has filled the cache.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    fn dispatch(&self, delta: &Delta<K>) {
        let handlers = self
            .handlers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for h in handlers.iter() {
            h(delta);
        }
    }

    fn resync_all(&self) {
        for obj in self.store.list() {
            self.dispatch(&Delta::Updated {
                old: obj.clone(),
                new: obj,
            });
        }
    }

    /// Lists, then watches until shutdown; the watcher relists after 410 and backs off on errors.
    async fn run(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let Some(make_stream) = self.stream.as_ref() else {
            return;
        };
        let mut stream = make_stream().default_backoff().boxed();
        let mut initial: Option<Vec<Arc<K>>> = None;
        let mut resync = self.resync.map(|period| {
            let mut t = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        loop {
            let tick = async {
                match resync.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => futures::future::pending::<()>().await,
                }
            };
            let event = tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                _ = tick => {
                    self.resync_all();
                    continue;
                }
                event = stream.next() => event,
            };
            match event {
                None => return,
                Some(Err(e)) => {
                    tracing::debug!(informer = %self.name, error = %e, "watch failed; retrying");
                }
                Some(Ok(Event::Init)) => initial = Some(Vec::new()),
                Some(Ok(Event::InitApply(obj))) => {
                    initial.get_or_insert_with(Vec::new).push(Arc::new(obj));
                }
                Some(Ok(Event::InitDone)) => {
                    let objects = initial.take().unwrap_or_default();
                    for delta in self.store.replace(objects) {
                        self.dispatch(&delta);
                    }
                    if !self.synced.send_replace(true) {
                        tracing::debug!(informer = %self.name, "synced");
                    }
                }
                Some(Ok(Event::Apply(obj))) => {
                    let obj = Arc::new(obj);
                    let delta = match self.store.upsert(obj.clone()) {
                        None => Delta::Added(obj),
                        Some(old) => Delta::Updated { old, new: obj },
                    };
                    self.dispatch(&delta);
                }
                Some(Ok(Event::Delete(obj))) => {
                    let key = key_of(&obj);
                    let last = self.store.remove(&key).unwrap_or_else(|| Arc::new(obj));
                    self.dispatch(&Delta::Deleted(last));
                }
            }
        }
    }
}

/// Starting and syncing informers of any type, without knowing their type.
trait AnyInformer: Send + Sync {
    fn start(self: Arc<Self>, shutdown: tokio::sync::watch::Receiver<bool>);
    fn synced_rx(&self) -> tokio::sync::watch::Receiver<bool>;
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    /// Makes `meta` a mirror of this informer's objects' metadata: its cache, its handlers'
    /// deltas and its synced state follow this informer's.
    fn feed_metadata(&self, meta: Arc<MetaInformer>, shutdown: tokio::sync::watch::Receiver<bool>);
}

impl MetaInformer {
    /// Applies a delta of the typed informer feeding this one.
    fn apply_fed(&self, delta: Delta<PartialObjectMeta<DynamicObject>>) {
        match &delta {
            Delta::Added(obj) | Delta::Updated { new: obj, .. } => {
                self.store.upsert(obj.clone());
            }
            Delta::Deleted(obj) => {
                self.store.remove(&key_of(obj.as_ref()));
            }
        }
        self.dispatch(&delta);
    }
}

/// An object's metadata as a metadata-only watch would give it.
fn metadata_of<K: Resource>(obj: &K) -> Arc<PartialObjectMeta<DynamicObject>> {
    Arc::new(obj.meta().clone().into_response_partial())
}

impl<K> AnyInformer for Informer<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn start(self: Arc<Self>, shutdown: tokio::sync::watch::Receiver<bool>) {
        if !self.started.swap(true, Ordering::AcqRel) {
            tokio::spawn(self.run(shutdown));
        }
    }

    fn synced_rx(&self) -> tokio::sync::watch::Receiver<bool> {
        self.synced.subscribe()
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }

    fn feed_metadata(
        &self,
        meta: Arc<MetaInformer>,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let target = meta.clone();
        self.add_handler(move |d: &Delta<K>| {
            target.apply_fed(match d {
                Delta::Added(o) => Delta::Added(metadata_of(o.as_ref())),
                Delta::Updated { old, new } if Arc::ptr_eq(old, new) => {
                    let same = metadata_of(new.as_ref());
                    Delta::Updated {
                        old: same.clone(),
                        new: same,
                    }
                }
                Delta::Updated { old, new } => Delta::Updated {
                    old: metadata_of(old.as_ref()),
                    new: metadata_of(new.as_ref()),
                },
                Delta::Deleted(o) => Delta::Deleted(metadata_of(o.as_ref())),
            })
        });
        // Synced once the typed cache is (its first list reached the mirror before that).
        let mut synced = self.synced.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => {}
                Ok(_) = synced.wait_for(|s| *s) => {
                    meta.synced.send_replace(true);
                }
            }
        });
    }
}

/// The process's informers: asking twice for the same resource gives the same informer.
pub struct SharedInformerFactory {
    client: Client,
    informers: Mutex<HashMap<(TypeId, String), Arc<dyn AnyInformer>>>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    resync: Option<Duration>,
}

impl Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory").finish()
    }
}

impl SharedInformerFactory {
    /// `resync`: how often handlers see every cached object again as an update (none: never).
    pub fn new(
        client: Client,
        resync: Option<Duration>,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        SharedInformerFactory {
            client,
            informers: Mutex::new(HashMap::new()),
            shutdown,
            resync,
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn get_or_create<K>(
        &self,
        name: String,
        stream: impl FnOnce() -> StreamFn<K>,
    ) -> Arc<Informer<K>>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let mut informers = self
            .informers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (TypeId::of::<K>(), name.clone());
        if let Some(existing) = informers.get(&key)
            && let Ok(typed) = existing.clone().as_any().downcast::<Informer<K>>()
        {
            return typed;
        }
        let informer = Arc::new(Informer::new(name, Some(stream()), self.resync));
        informers.insert(key, informer.clone());
        informer
    }

    /// The informer of a built-in kind, across all namespaces.
    pub fn informer<K>(&self) -> Arc<Informer<K>>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        self.informer_selected::<K>("")
    }

    /// The informer of a built-in kind narrowed by a field selector (e.g.
    /// `metadata.name=kube-root-ca.crt`): the server filters the watch, so a controller that
    /// follows one well-known object neither decodes nor caches every other object of its kind.
    pub fn informer_selected<K>(&self, field_selector: &str) -> Arc<Informer<K>>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let mut name = format!("{}/{}", K::api_version(&()), K::plural(&()));
        if !field_selector.is_empty() {
            name = format!("{name}?fieldSelector={field_selector}");
        }
        let config = watcher::Config::default().any_semantic();
        let config = match field_selector {
            "" => config,
            selector => config.fields(selector),
        };
        self.get_or_create(name, || {
            let api: Api<K> = Api::all(self.client.clone());
            Box::new(move || watcher(api.clone(), config.clone()))
        })
    }

    /// A metadata-only informer (PartialObjectMetadata) of any resource, for controllers that
    /// follow every kind the server serves (garbage collector, quota). When a typed informer of
    /// the resource exists already, it feeds this one and no second watch is opened.
    pub fn metadata_informer(&self, resource: &ApiResource) -> Arc<MetaInformer> {
        let name = format!("{}/{}", resource.api_version, resource.plural);
        let mut informers = self
            .informers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let meta_key = (
            TypeId::of::<PartialObjectMeta<DynamicObject>>(),
            name.clone(),
        );
        if let Some(existing) = informers.get(&meta_key)
            && let Ok(meta) = existing.clone().as_any().downcast::<MetaInformer>()
        {
            return meta;
        }
        let typed = informers
            .iter()
            .find(|((_, n), _)| *n == name)
            .map(|(_, informer)| informer.clone());
        let meta = match typed {
            Some(typed) => {
                let meta = Arc::new(Informer::new(name, None, None));
                typed.feed_metadata(meta.clone(), self.shutdown.clone());
                meta
            }
            None => {
                // An `Api` of PartialObjectMeta asks the server for metadata only.
                let api: Api<PartialObjectMeta<DynamicObject>> =
                    Api::all_with(self.client.clone(), resource);
                let stream: StreamFn<PartialObjectMeta<DynamicObject>> = Box::new(move || {
                    watcher(api.clone(), watcher::Config::default().any_semantic())
                });
                Arc::new(Informer::new(name, Some(stream), self.resync))
            }
        };
        informers.insert(meta_key, meta.clone());
        meta
    }

    /// Starts every informer not started yet (safe to call again after adding informers).
    pub fn start(&self) {
        let informers: Vec<_> = self
            .informers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for i in informers {
            i.start(self.shutdown.clone());
        }
    }

    /// Waits until every informer created so far has listed once.
    pub async fn wait_for_cache_sync(&self) {
        let receivers: Vec<_> = self
            .informers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .map(|i| i.synced_rx())
            .collect();
        for mut rx in receivers {
            let _ = rx.wait_for(|s| *s).await;
        }
    }
}

/// A list + watch with `config`; callers ask for `any_semantic()`: the first list is served from
/// the watch cache (resourceVersion=0), as client-go's reflector does.
fn watcher<K>(api: Api<K>, config: watcher::Config) -> BoxStream<'static, watcher::Result<Event<K>>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    kube::runtime::watcher(api, config)
        .map_err(|e| {
            tracing::debug!(error = %e, "watch stream error");
            e
        })
        .boxed()
}
