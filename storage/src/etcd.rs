//! `EtcdStore`: the storage contract on an etcd v3 cluster, the store Kubernetes itself uses.
//!
//! etcd already is a revisioned store with watch, so this is a thin mapping: the global revision
//! is etcd's revision, a key's create/mod revisions are etcd's, compare-and-swap is a transaction
//! on `mod_revision`, a list at a revision is a range at that revision, watch from a revision is
//! etcd's watch (`prev_kv` for the old values), compaction is etcd's. Several k1s servers on one
//! etcd therefore share one history. What this module adds: the contract's errors (compacted,
//! future revision, conflict), watches that survive etcd cancelling them (a leader change, a
//! broken connection) by resuming after the last revision delivered, the contract's bounded
//! watch buffer, and the background compactor that only one server runs at a time.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, TxnOp,
    TxnOpResponse, WatchOptions,
};
use tokio::sync::mpsc;

use crate::etcd_endpoints::{Repeat, request};
use crate::watch::{Feed, WatchStream};
use crate::{
    BackendKind, CompactionPolicy, Deleted, Error, Event, EventKind, KeyValue, ListOptions,
    ListPage, Result, Revision, Store, continue_token, prefix_end,
};

/// The key whose lease holder compacts (etcd compaction is cluster-wide: one for every prefix).
const COMPACTOR_KEY: &str = "k1s-compactor";
/// One etcd request (not a watch) gives up after this long.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait between attempts to re-establish a broken watch.
const MAX_WATCH_BACKOFF: Duration = Duration::from_secs(2);

/// How to reach etcd and how to use it.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs (`http://127.0.0.1:2379`, `https://h1:2379`).
    pub endpoints: Vec<String>,
    /// Prepended to every key (empty: keys are used as they are).
    pub prefix: String,
    /// CA bundle that signed etcd's serving certificates (PEM).
    pub ca_file: Option<PathBuf>,
    /// Client certificate and key (PEM) for etcd's client-cert authentication.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub compaction: CompactionPolicy,
    /// Events buffered per watcher before it is cut off as too slow.
    pub watch_buffer: usize,
    /// Largest value accepted (etcd's default request limit is 1.5 MiB).
    pub max_value_size: usize,
}

impl EtcdConfig {
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdConfig {
            endpoints,
            prefix: String::new(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            // kube-apiserver's --etcd-compaction-interval is 5 minutes; a revision floor for
            // slow watchers costs no memory here (the history lives in etcd), unlike the local
            // store, which compacts by time only.
            compaction: CompactionPolicy {
                keep_revisions: 10_000,
                keep_for: Some(Duration::from_secs(300)),
                interval: Some(Duration::from_secs(300)),
            },
            watch_buffer: 10_000,
            max_value_size: 3 * 1024 * 1024 / 2,
        }
    }
}

struct Inner {
    client: Client,
    prefix: String,
    /// The newest revision any etcd response showed us.
    current: Arc<AtomicU64>,
    /// The newest compaction we know of (ours, another server's, or one a watch reported).
    compacted: AtomicU64,
    watch_buffer: usize,
    max_value_size: usize,
    /// Ends every watch feeder and the compactor.
    closed: tokio::sync::watch::Sender<bool>,
}

/// The store on etcd. Cheap to clone.
#[derive(Clone)]
pub struct EtcdStore {
    inner: Arc<Inner>,
}

impl EtcdStore {
    /// Connects, reads the current and compacted revisions, and starts the compactor.
    pub async fn connect(config: EtcdConfig) -> Result<EtcdStore> {
        if config.endpoints.is_empty() {
            return Err(Error::Engine("no etcd endpoints given".into()));
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(10))
            .with_keep_alive_while_idle(true)
            // As kube-apiserver's watches: a member cut off from the leader refuses requests
            // and cancels watches (which are then resumed on another member) instead of
            // serving stale data or hanging.
            .with_require_leader(true);
        let https = config.endpoints.iter().any(|e| e.starts_with("https://"));
        if https || config.ca_file.is_some() || config.cert_file.is_some() {
            options = options.with_tls(tls_options(&config)?);
        }
        let client = timed(Client::connect(&config.endpoints, Some(options.clone())))
            .await
            .map_err(|e| {
                Error::Engine(format!("connecting to etcd {:?}: {e}", config.endpoints))
            })?;
        let (closed, _) = tokio::sync::watch::channel(false);
        let store = EtcdStore {
            inner: Arc::new(Inner {
                client,
                prefix: config.prefix.clone(),
                current: Arc::new(AtomicU64::new(0)),
                compacted: AtomicU64::new(0),
                watch_buffer: config.watch_buffer.max(1),
                max_value_size: config.max_value_size,
                closed,
            }),
        };
        if let Err(e) = store.fetch_revision().await {
            // A TLS handshake etcd refused shows only as a cancelled request: say what to check.
            let hint = if https && config.cert_file.is_none() {
                " (if etcd requires client certificates, pass --etcd-certfile and --etcd-keyfile)"
            } else {
                ""
            };
            return Err(Error::Engine(format!(
                "etcd at {} did not answer: {e}{hint}",
                config.endpoints.join(",")
            )));
        }
        crate::etcd_endpoints::spawn_monitor(
            store.inner.client.clone(),
            config.endpoints.clone(),
            options,
            store.inner.closed.subscribe(),
        );
        if let Some(interval) = config.compaction.interval {
            tokio::spawn(run_compactor(
                Arc::downgrade(&store.inner),
                config.compaction.clone(),
                interval,
                store.inner.closed.subscribe(),
            ));
        }
        Ok(store)
    }

    /// Ends every watch and the compactor; requests still work until the last clone drops.
    pub fn close(&self) {
        self.inner.closed.send_replace(true);
    }

    /// The underlying client, for datastore operations (status, defragment, snapshot).
    pub fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// Asks etcd for its current revision (a read every server sees), for callers that were
    /// handed a revision by another server.
    pub async fn fetch_revision(&self) -> Result<Revision> {
        let kv = kv_client(&self.inner.client);
        let resp = request(Repeat::Read, || {
            let mut kv = kv.clone();
            async move {
                kv.get(COMPACTOR_KEY, Some(GetOptions::new().with_count_only()))
                    .await
            }
        })
        .await
        .map_err(map_err)?;
        self.observe_header(resp.header());
        Ok(self.current())
    }

    fn current(&self) -> Revision {
        Revision(self.inner.current.load(Ordering::Acquire))
    }

    fn observe_header(&self, header: Option<&etcd_client::ResponseHeader>) -> Revision {
        observe(&self.inner.current, header)
    }

    fn etcd_key(&self, key: &str) -> Vec<u8> {
        format!("{}{key}", self.inner.prefix).into_bytes()
    }

    fn check_put(&self, key: &str, value: &Bytes) -> Result<()> {
        check_key(key)?;
        if value.len() > self.inner.max_value_size {
            return Err(Error::ValueTooLarge {
                size: value.len(),
                limit: self.inner.max_value_size,
            });
        }
        Ok(())
    }

    fn kv_of(&self, kv: &etcd_client::KeyValue) -> Result<KeyValue> {
        kv_of(&self.inner.prefix, kv)
    }

    /// A compare-and-swap: `then` when `compare` holds, else a read of `key`. Returns whether it
    /// held, the response, and the key as read when it did not.
    async fn txn(
        &self,
        key: &str,
        compare: Compare,
        then: TxnOp,
    ) -> Result<(Revision, Option<Vec<TxnOpResponse>>, Option<KeyValue>)> {
        let txn = etcd_client::Txn::new()
            .when([compare])
            .and_then([then])
            .or_else([TxnOp::get(self.etcd_key(key), None)]);
        let kv = kv_client(&self.inner.client);
        let resp = request(Repeat::Write, || {
            let (mut kv, txn) = (kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
        .map_err(map_err)?;
        let rev = self.observe_header(resp.header());
        let ops = resp.op_responses();
        if resp.succeeded() {
            return Ok((rev, Some(ops), None));
        }
        let found = match ops.first() {
            Some(TxnOpResponse::Get(get)) => match get.kvs().first() {
                Some(kv) => Some(self.kv_of(kv)?),
                None => None,
            },
            _ => None,
        };
        Ok((rev, None, found))
    }

    fn revision_error(&self, e: Error, requested: Revision) -> Error {
        match e {
            Error::Compacted { .. } => Error::Compacted {
                requested,
                compacted: Revision(self.inner.compacted.load(Ordering::Acquire)),
            },
            Error::FutureRevision { .. } => Error::FutureRevision {
                requested,
                current: self.current(),
            },
            other => other,
        }
    }
}

#[async_trait]
impl Store for EtcdStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        check_key(key)?;
        let (kv, etcd_key) = (kv_client(&self.inner.client), self.etcd_key(key));
        let resp = request(Repeat::Read, || {
            let (mut kv, etcd_key) = (kv.clone(), etcd_key.clone());
            async move { kv.get(etcd_key, None).await }
        })
        .await
        .map_err(map_err)?;
        self.observe_header(resp.header());
        resp.kvs().first().map(|kv| self.kv_of(kv)).transpose()
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        self.check_put(key, &value)?;
        let k = self.etcd_key(key);
        let (rev, ok, _) = self
            .txn(
                key,
                Compare::version(k.clone(), CompareOp::Equal, 0),
                TxnOp::put(k, value.to_vec(), None),
            )
            .await?;
        if ok.is_none() {
            return Err(Error::AlreadyExists { key: key.into() });
        }
        Ok(KeyValue {
            key: key.into(),
            value,
            create_revision: rev,
            mod_revision: rev,
        })
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Result<KeyValue> {
        self.check_put(key, &value)?;
        let k = self.etcd_key(key);
        let compare = match expected {
            Some(rev) => Compare::mod_revision(k.clone(), CompareOp::Equal, as_i64(rev)),
            None => Compare::version(k.clone(), CompareOp::Greater, 0),
        };
        let put = TxnOp::put(k, value.to_vec(), Some(PutOptions::new().with_prev_key()));
        let (rev, ok, found) = self.txn(key, compare, put).await?;
        let Some(ops) = ok else {
            return Err(match (found, expected) {
                (Some(kv), Some(expected)) => Error::Conflict {
                    key: key.into(),
                    expected,
                    actual: kv.mod_revision,
                },
                _ => Error::NotFound { key: key.into() },
            });
        };
        let create_revision = match ops.first() {
            Some(TxnOpResponse::Put(put)) => put.prev_key().map(|p| rev_of(p.create_revision())),
            _ => None,
        }
        .ok_or_else(|| Error::Engine("etcd answered an update without the old value".into()))?;
        Ok(KeyValue {
            key: key.into(),
            value,
            create_revision,
            mod_revision: rev,
        })
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        check_key(key)?;
        let k = self.etcd_key(key);
        let compare = match expected {
            Some(rev) => Compare::mod_revision(k.clone(), CompareOp::Equal, as_i64(rev)),
            None => Compare::version(k.clone(), CompareOp::Greater, 0),
        };
        let del = TxnOp::delete(k, Some(etcd_client::DeleteOptions::new().with_prev_key()));
        let (rev, ok, found) = self.txn(key, compare, del).await?;
        let Some(ops) = ok else {
            return Err(match (found, expected) {
                (Some(kv), Some(expected)) => Error::Conflict {
                    key: key.into(),
                    expected,
                    actual: kv.mod_revision,
                },
                _ => Error::NotFound { key: key.into() },
            });
        };
        let prev = match ops.first() {
            Some(TxnOpResponse::Delete(d)) => d.prev_kvs().first().map(|kv| self.kv_of(kv)),
            _ => None,
        }
        .transpose()?
        .ok_or_else(|| Error::Engine("etcd answered a delete without the old value".into()))?;
        Ok(Deleted {
            prev,
            revision: rev,
        })
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        check_key(prefix)?;
        let (at, start) = match &opts.continue_token {
            Some(token) => continue_token::decode(token, prefix)?,
            None => (opts.revision.filter(|r| r.0 > 0), prefix.to_string()),
        };
        let mut end = self.inner.prefix.clone().into_bytes();
        end.extend_from_slice(&prefix_end(prefix.as_bytes()));
        let mut get = GetOptions::new().with_range(end);
        if let Some(at) = at {
            get = get.with_revision(as_i64(at));
        }
        if opts.limit > 0 {
            get = get.with_limit(opts.limit as i64);
        }
        let (kv, etcd_key) = (kv_client(&self.inner.client), self.etcd_key(&start));
        let resp = match request(Repeat::Read, || {
            let (mut kv, etcd_key, get) = (kv.clone(), etcd_key.clone(), get.clone());
            async move { kv.get(etcd_key, Some(get)).await }
        })
        .await
        .map_err(map_err)
        {
            Ok(resp) => resp,
            Err(Error::Compacted { .. }) if opts.continue_token.is_some() => {
                return Err(continue_token::expired(at.unwrap_or_default(), &start));
            }
            Err(Error::FutureRevision { .. }) if opts.continue_token.is_some() => {
                return Err(Error::InvalidContinue("revision from the future".into()));
            }
            Err(e) => return Err(self.revision_error(e, at.unwrap_or_default())),
        };
        let latest = self.observe_header(resp.header());
        let revision = at.unwrap_or(latest);
        let items = resp
            .kvs()
            .iter()
            .map(|kv| self.kv_of(kv))
            .collect::<Result<Vec<_>>>()?;
        let (continue_token, remaining) = match (resp.more(), items.last()) {
            (true, Some(last)) => (
                Some(continue_token::encode(revision, &format!("{}\0", last.key))),
                // etcd counts the whole range from the start key.
                Some((resp.count().max(0) as u64).saturating_sub(items.len() as u64)),
            ),
            _ => (None, None),
        };
        Ok(ListPage {
            items,
            revision,
            continue_token,
            remaining,
        })
    }

    async fn count(&self, prefix: &str) -> Result<u64> {
        check_key(prefix)?;
        let mut end = self.inner.prefix.clone().into_bytes();
        end.extend_from_slice(&prefix_end(prefix.as_bytes()));
        let (kv, etcd_key) = (kv_client(&self.inner.client), self.etcd_key(prefix));
        let resp = request(Repeat::Read, || {
            let (mut kv, etcd_key) = (kv.clone(), etcd_key.clone());
            let get = GetOptions::new().with_range(end.clone()).with_count_only();
            async move { kv.get(etcd_key, Some(get)).await }
        })
        .await
        .map_err(map_err)?;
        self.observe_header(resp.header());
        Ok(resp.count().max(0) as u64)
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        check_key(prefix)?;
        let compacted = Revision(self.inner.compacted.load(Ordering::Acquire));
        if after < compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted,
            });
        }
        if after.0 > 0 {
            // etcd reports a compacted start revision only once the watch runs; a read at the
            // revision answers now, so the API can say 410 to the request itself.
            let (kv, etcd_key) = (kv_client(&self.inner.client), self.etcd_key(prefix));
            let probe = GetOptions::new()
                .with_revision(as_i64(after))
                .with_count_only();
            match request(Repeat::Read, || {
                let (mut kv, etcd_key, probe) = (kv.clone(), etcd_key.clone(), probe.clone());
                async move { kv.get(etcd_key, Some(probe)).await }
            })
            .await
            .map_err(map_err)
            {
                Ok(resp) => {
                    self.observe_header(resp.header());
                }
                Err(e) => return Err(self.revision_error(e, after)),
            }
        }
        let (tx, rx) = mpsc::channel(self.inner.watch_buffer);
        let cut_off = Arc::new(AtomicBool::new(false));
        let feed = Arc::new(Feed {
            current: self.inner.current.clone(),
            progress: AtomicU64::new(after.0),
            ..Feed::default()
        });
        let mut end = self.inner.prefix.clone().into_bytes();
        end.extend_from_slice(&prefix_end(prefix.as_bytes()));
        let feeder = Feeder {
            store: Arc::downgrade(&self.inner),
            client: self.inner.client.clone(),
            prefix: self.inner.prefix.clone(),
            start: self.etcd_key(prefix),
            end,
            tx,
            cut_off: cut_off.clone(),
            feed: feed.clone(),
            after,
            live_after: self.current(),
            closed: self.inner.closed.subscribe(),
        };
        tokio::spawn(feeder.run());
        Ok(WatchStream::fed(rx, cut_off, after, feed))
    }

    fn current_revision(&self) -> Revision {
        self.current()
    }

    fn compacted_revision(&self) -> Revision {
        Revision(self.inner.compacted.load(Ordering::Acquire))
    }

    async fn fresh_revision(&self) -> Result<Revision> {
        self.fetch_revision().await
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        compact(&self.inner, revision).await
    }

    async fn size_bytes(&self) -> Result<Option<u64>> {
        let mut maintenance = self.inner.client.maintenance_client();
        let status = timed(maintenance.status()).await.map_err(map_err)?;
        Ok(Some(status.db_size().max(0) as u64))
    }

    fn backend_kind(&self) -> BackendKind {
        BackendKind::Etcd
    }
}

async fn compact(inner: &Inner, revision: Revision) -> Result<()> {
    if revision.0 == 0 || revision.0 <= inner.compacted.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut kv = kv_client(&inner.client);
    match timed(kv.compact(as_i64(revision), None))
        .await
        .map_err(map_err)
    {
        Ok(resp) => {
            observe(&inner.current, resp.header());
        }
        // Someone compacted further already: nothing to do.
        Err(Error::Compacted { .. }) => {}
        Err(Error::FutureRevision { .. }) => {
            return Err(Error::FutureRevision {
                requested: revision,
                current: Revision(inner.current.load(Ordering::Acquire)),
            });
        }
        Err(e) => return Err(e),
    }
    inner.compacted.fetch_max(revision.0, Ordering::AcqRel);
    Ok(())
}

/// The task that turns one etcd watch into the contract's watch stream, resuming it after the
/// last revision sent whenever etcd or the connection ends it.
struct Feeder {
    store: std::sync::Weak<Inner>,
    client: Client,
    prefix: String,
    start: Vec<u8>,
    end: Vec<u8>,
    tx: mpsc::Sender<Arc<Event>>,
    cut_off: Arc<AtomicBool>,
    feed: Arc<Feed>,
    /// The revision of the last event sent (or the watch's start).
    after: Revision,
    /// History up to here is replayed in full, however slowly it is read (as the local store
    /// replays its log); only later (live) events count against the watcher's buffer.
    live_after: Revision,
    closed: tokio::sync::watch::Receiver<bool>,
}

/// Why one etcd watch stream ended.
enum Ended {
    /// The consumer went away, the store closed, or the watch failed for good.
    Done,
    /// etcd or the connection ended it: watch again after the last revision sent.
    Resume,
}

impl Feeder {
    async fn run(mut self) {
        let mut backoff = Duration::from_millis(50);
        loop {
            let began = Instant::now();
            match self.once().await {
                Ended::Done => return,
                Ended::Resume => {}
            }
            if began.elapsed() > Duration::from_secs(5) {
                backoff = Duration::from_millis(50);
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.tx.closed() => return,
                _ = wait_closed(&mut self.closed) => return,
            }
            backoff = (backoff * 2).min(MAX_WATCH_BACKOFF);
        }
    }

    /// Runs one etcd watch from `after + 1` until it ends.
    async fn once(&mut self) -> Ended {
        let options = WatchOptions::new()
            .with_range(self.end.clone())
            .with_start_revision(as_i64(Revision(self.after.0 + 1)))
            .with_prev_key()
            .with_progress_notify();
        let mut client = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RECEIVED_MESSAGE);
        let stream = tokio::select! {
            s = timed(client.watch(self.start.clone(), Some(options))) => s,
            _ = self.tx.closed() => return Ended::Done,
            _ = wait_closed(&mut self.closed) => return Ended::Done,
        };
        let (mut requests, mut responses) = match stream {
            Ok(s) => s.split(),
            Err(e) => {
                tracing::debug!(error = %e, "etcd watch could not start; retrying");
                return Ended::Resume;
            }
        };
        loop {
            let message = tokio::select! {
                m = responses.message() => m,
                _ = self.feed.wake.notified() => {
                    let _ = requests.request_progress().await;
                    continue;
                }
                _ = self.tx.closed() => return Ended::Done,
                _ = wait_closed(&mut self.closed) => return Ended::Done,
            };
            let resp = match message {
                Ok(Some(resp)) => resp,
                Ok(None) => return Ended::Resume,
                Err(e) => {
                    tracing::debug!(error = %e, "etcd watch broke; resuming");
                    return Ended::Resume;
                }
            };
            let header_rev = self
                .store
                .upgrade()
                .map(|inner| observe(&inner.current, resp.header()))
                .unwrap_or_default();
            if resp.compact_revision() != 0 {
                let compacted = rev_of(resp.compact_revision());
                if let Some(inner) = self.store.upgrade() {
                    inner.compacted.fetch_max(compacted.0, Ordering::AcqRel);
                }
                let _ = self.feed.error.set(Error::Compacted {
                    requested: self.after,
                    compacted,
                });
                return Ended::Done;
            }
            if resp.canceled() {
                tracing::debug!(
                    reason = resp.cancel_reason(),
                    "etcd cancelled a watch; resuming"
                );
                return Ended::Resume;
            }
            if resp.created() {
                continue;
            }
            if resp.events().is_empty() {
                // A progress report: every event up to the header's revision was sent before it.
                self.feed.progress.fetch_max(header_rev.0, Ordering::AcqRel);
                continue;
            }
            for ev in resp.events() {
                let Some(event) = event_of(&self.prefix, ev) else {
                    continue;
                };
                // A resumed watch starts after the last revision sent, so this only guards
                // against a server that sends more than asked.
                if event.revision <= self.after {
                    continue;
                }
                let revision = event.revision;
                if revision <= self.live_after {
                    let sent = tokio::select! {
                        sent = self.tx.send(Arc::new(event)) => sent.is_ok(),
                        _ = wait_closed(&mut self.closed) => false,
                    };
                    if !sent {
                        return Ended::Done;
                    }
                    self.after = revision;
                    self.feed.progress.fetch_max(revision.0, Ordering::AcqRel);
                    continue;
                }
                match self.tx.try_send(Arc::new(event)) {
                    Ok(()) => {
                        self.after = revision;
                        self.feed.progress.fetch_max(revision.0, Ordering::AcqRel);
                    }
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        self.cut_off.store(true, Ordering::Release);
                        return Ended::Done;
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => return Ended::Done,
                }
            }
        }
    }
}

/// The contract's event for one etcd event; `None` for a malformed one (logged).
fn event_of(prefix: &str, ev: &etcd_client::Event) -> Option<Event> {
    let kv = ev.kv()?;
    let prev = match ev.prev_kv().map(|p| kv_of(prefix, p)).transpose() {
        Ok(prev) => prev,
        Err(e) => {
            tracing::warn!(error = %e, "skipping an etcd event with a bad previous value");
            return None;
        }
    };
    let key = match std::str::from_utf8(kv.key()) {
        Ok(k) => k.strip_prefix(prefix).unwrap_or(k).to_string(),
        Err(_) => return None,
    };
    let revision = rev_of(kv.mod_revision());
    match ev.event_type() {
        EventType::Delete => Some(Event {
            kind: EventKind::Deleted,
            revision,
            key,
            current: None,
            prev,
        }),
        EventType::Put => {
            let current = kv_of(prefix, kv).ok()?;
            let kind = if kv.version() == 1 {
                EventKind::Created
            } else {
                EventKind::Modified
            };
            Some(Event {
                kind,
                revision,
                key,
                current: Some(current),
                // A create never has a previous value, even if the key existed before a delete.
                prev: if kind == EventKind::Created {
                    None
                } else {
                    prev
                },
            })
        }
    }
}

/// Compacts history on `policy` every `interval` while this server holds the compactor lease.
///
/// Only one server compacts (as with kube-apiserver), but the guard is a key bound to a lease
/// rather than a key rewritten every round: lease keep-alives write nothing, so an idle cluster's
/// revision stands still. When the holder dies its lease expires and another server takes over.
async fn run_compactor(
    inner: std::sync::Weak<Inner>,
    policy: CompactionPolicy,
    interval: Duration,
    mut closed: tokio::sync::watch::Receiver<bool>,
) {
    let tick = interval.min(Duration::from_secs(5));
    // (when, revision) samples, for the time-based part of the policy.
    let mut samples: VecDeque<(Instant, Revision)> = VecDeque::new();
    let mut lease: Option<Holder> = None;
    let mut last_compaction: Option<Instant> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = wait_closed(&mut closed) => break,
        }
        let Some(inner) = inner.upgrade() else { return };
        let now = Instant::now();
        if policy.keep_for.is_some() {
            samples.push_back((now, Revision(inner.current.load(Ordering::Acquire))));
        }
        match hold_lease(&inner, lease.take()).await {
            Ok(held) => lease = held,
            Err(e) => {
                tracing::warn!(error = %e, "etcd compactor lease");
                continue;
            }
        }
        if lease.is_none() || last_compaction.is_some_and(|t| t.elapsed() < interval) {
            continue;
        }
        last_compaction = Some(now);
        let current = Revision(inner.current.load(Ordering::Acquire));
        let by_count = Revision(current.0.saturating_sub(policy.keep_revisions));
        let target = match policy.keep_for {
            None => by_count,
            Some(keep) => {
                let cutoff = now.checked_sub(keep);
                let by_time = samples
                    .iter()
                    .rev()
                    .find(|(t, _)| cutoff.is_some_and(|c| *t <= c))
                    .map(|(_, r)| *r)
                    .unwrap_or_default();
                // Samples older than the one in use are never needed again.
                while samples.len() > 1 && cutoff.is_some_and(|c| samples[1].0 <= c) {
                    samples.pop_front();
                }
                by_count.min(by_time)
            }
        };
        if let Err(e) = compact(&inner, target).await {
            tracing::warn!(error = %e, "etcd compaction failed");
        }
    }
    // Hand the duty over at once rather than after the lease runs out.
    if let (Some(inner), Some(held)) = (inner.upgrade(), lease) {
        let _ = timed(inner.client.lease_client().revoke(held.id)).await;
    }
}

/// This server's hold on the compactor key.
struct Holder {
    id: i64,
    keeper: etcd_client::LeaseKeeper,
    responses: etcd_client::LeaseKeepAliveStream,
}

/// Seconds the compactor lease outlives its holder's last keep-alive.
const COMPACTOR_LEASE_TTL: i64 = 15;

/// Renews the lease we hold, or tries to take the key; `None` when another server holds it.
async fn hold_lease(inner: &Inner, held: Option<Holder>) -> Result<Option<Holder>> {
    if let Some(mut h) = held {
        timed(h.keeper.keep_alive()).await.map_err(map_err)?;
        match timed(h.responses.message()).await.map_err(map_err)? {
            Some(r) if r.ttl() > 0 => return Ok(Some(h)),
            _ => {} // expired: try to take the key again
        }
    }
    let mut leases = inner.client.lease_client();
    let id = timed(leases.grant(COMPACTOR_LEASE_TTL, None))
        .await
        .map_err(map_err)?
        .id();
    let txn = etcd_client::Txn::new()
        .when([Compare::version(COMPACTOR_KEY, CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            COMPACTOR_KEY,
            id.to_string(),
            Some(PutOptions::new().with_lease(id)),
        )]);
    let mut kv = kv_client(&inner.client);
    let resp = timed(kv.txn(txn)).await.map_err(map_err)?;
    observe(&inner.current, resp.header());
    if !resp.succeeded() {
        let _ = timed(leases.revoke(id)).await;
        return Ok(None);
    }
    let (keeper, responses) = timed(leases.keep_alive(id)).await.map_err(map_err)?;
    Ok(Some(Holder {
        id,
        keeper,
        responses,
    }))
}

fn tls_options(config: &EtcdConfig) -> Result<etcd_client::TlsOptions> {
    let read = |p: &PathBuf| {
        std::fs::read(p).map_err(|e| Error::Engine(format!("reading {}: {e}", p.display())))
    };
    let mut tls = etcd_client::TlsOptions::new();
    if let Some(ca) = &config.ca_file {
        tls = tls.ca_certificate(etcd_client::Certificate::from_pem(read(ca)?));
    }
    match (&config.cert_file, &config.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(etcd_client::Identity::from_pem(read(cert)?, read(key)?));
        }
        (None, None) => {}
        _ => {
            return Err(Error::Engine(
                "--etcd-certfile and --etcd-keyfile go together".into(),
            ));
        }
    }
    Ok(tls)
}

fn kv_of(prefix: &str, kv: &etcd_client::KeyValue) -> Result<KeyValue> {
    let key = std::str::from_utf8(kv.key())
        .map_err(|_| Error::Corrupt("a key in etcd is not UTF-8".into()))?;
    Ok(KeyValue {
        key: key.strip_prefix(prefix).unwrap_or(key).to_string(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: rev_of(kv.create_revision()),
        mod_revision: rev_of(kv.mod_revision()),
    })
}

/// Raises the known current revision to a response's, and returns the response's revision.
fn observe(current: &AtomicU64, header: Option<&etcd_client::ResponseHeader>) -> Revision {
    let rev = header.map(|h| h.revision().max(0) as u64).unwrap_or(0);
    current.fetch_max(rev, Ordering::AcqRel);
    Revision(rev)
}

/// Returns once the store is closed (or gone).
async fn wait_closed(closed: &mut tokio::sync::watch::Receiver<bool>) {
    // The guard `wait_for` returns must not live across an await of the caller.
    let _ = closed.wait_for(|c| *c).await.map(|_| ());
}

fn rev_of(r: i64) -> Revision {
    Revision(r.max(0) as u64)
}

fn as_i64(r: Revision) -> i64 {
    i64::try_from(r.0).unwrap_or(i64::MAX)
}

fn check_key(key: &str) -> Result<()> {
    if !key.starts_with('/') {
        return Err(Error::InvalidKey(key.into()));
    }
    Ok(())
}

/// Bounds one etcd request; a timeout becomes a transport error.
pub(crate) async fn timed<T>(
    f: impl std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
) -> std::result::Result<T, etcd_client::Error> {
    match tokio::time::timeout(REQUEST_TIMEOUT, f).await {
        Ok(r) => r,
        Err(_) => Err(etcd_client::Error::Internal(
            "etcd request timed out".into(),
        )),
    }
}

/// The largest answer accepted from etcd, as kube-apiserver's client (math.MaxInt32): tonic's
/// 4 MiB default refuses an unpaged list of a few thousand objects.
const MAX_RECEIVED_MESSAGE: usize = i32::MAX as usize;

fn kv_client(client: &Client) -> etcd_client::KvClient {
    client
        .kv_client()
        .max_decoding_message_size(MAX_RECEIVED_MESSAGE)
}

/// etcd's errors as the contract's: compaction and future revisions are distinct.
fn map_err(e: etcd_client::Error) -> Error {
    if let etcd_client::Error::GRpcStatus(status) = &e {
        let msg = status.message();
        if msg.contains("required revision has been compacted") {
            return Error::Compacted {
                requested: Revision(0),
                compacted: Revision(0),
            };
        }
        if msg.contains("required revision is a future revision") {
            return Error::FutureRevision {
                requested: Revision(0),
                current: Revision(0),
            };
        }
        if msg.contains("request is too large") {
            return Error::ValueTooLarge { size: 0, limit: 0 };
        }
    }
    Error::Engine(format!("etcd: {e}"))
}
