//! `LocalStore`: the storage contract implemented once over any byte engine (sled or memory).
//!
//! Key space inside the engine: `d<key>` holds a key's current record, `l<rev:u64 BE>` the
//! revision log (what each write did, with the previous value), `m<name>` metadata.
//!
//! Writes are group-committed by one leader at a time: the leader takes every queued request,
//! checks preconditions in order, assigns revisions and commits them as one atomic durable batch;
//! only then are events published and writers answered. A writer that finds no leader leads
//! itself, on its own thread, so a lone writer pays no thread hand-off; a leader that finds more
//! requests queued after its round hands the lead to the committer thread, which keeps batching
//! until the queue is empty. Under a heavy write load on a disk store the committer also waits
//! briefly for the next request while they arrive in quick succession, so a commit (at least
//! one 4 KiB log page and a device cache flush) carries many writes rather than one or two.
//! Reads take the newest durable ("published") revision as their
//! snapshot and undo any newer change from the log, so nobody ever sees a write that could still
//! be lost.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::oneshot;

use crate::codec::{self, LogRecord};
use crate::engine::{BatchOp, Engine, MemoryEngine};
use crate::format::{self, Format};
use crate::image_engine::{ImageEngine, convert_sled_store};
use crate::sled_engine::{ReadOnlySled, SledEngine};
use crate::watch::{Hub, WatchStream};
use crate::{
    Backend, CompactionPolicy, Deleted, Error, Event, EventKind, KeyValue, ListOptions, ListPage,
    Result, Revision, Store, StoreConfig, continue_token, prefix_end,
};

pub(crate) const META_REVISION: &[u8] = b"mrevision";
pub(crate) const META_COMPACTED: &[u8] = b"mcompacted";
/// Most requests folded into one group commit.
const MAX_BATCH: usize = 4096;
/// Gathering (disk stores, committer thread only) happens while writes arrive on average at
/// most this far apart: at that rate (5,000 writes/s) writers already wait milliseconds for an
/// answer, and a short wait is small beside it. Sparser writers are never delayed.
const GATHER_MEAN_GAP: Duration = Duration::from_micros(200);
/// Longest a committer waits for requests before committing what it holds.
const GATHER_MAX: Duration = Duration::from_millis(2);
/// A gathering committer commits once it holds this many requests.
const GATHER_TARGET: usize = 32;
/// Longest inter-arrival gap counted in the mean (an idle pause must not hide a new burst).
const GAP_SAMPLE_MAX: Duration = Duration::from_millis(1);
/// Rows read from the engine per scan call.
const SCAN_CHUNK: usize = 1024;

enum WriteOp {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Option<Revision>,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
}

enum WriteOutcome {
    Put(KeyValue),
    Deleted(Deleted),
}

struct WriteRequest {
    op: WriteOp,
    reply: oneshot::Sender<Result<WriteOutcome>>,
}

/// State shared by the handle, the committer and the compactor.
struct Shared {
    engine: Box<dyn Engine>,
    hub: Mutex<Hub>,
    /// Mirror of `hub.published`, readable without the lock: the newest durable revision.
    published: AtomicU64,
    /// The newest revision whose writes may already be (partly) in the engine; raised before a
    /// commit applies anything. While it equals a reader's snapshot, no newer change can be
    /// in the engine and reads need not consult the log.
    applying: AtomicU64,
    compacted: AtomicU64,
    /// Set when the engine failed mid-commit: the store stops taking writes (fail-stop).
    failed: Mutex<Option<String>>,
    /// The newest assigned revision; only the commit leader touches it.
    revision: Mutex<u64>,
    compaction_lock: Mutex<()>,
}

/// The store over a local engine. Cheap to clone; the last clone dropped shuts it down.
#[derive(Clone)]
pub struct LocalStore {
    handle: Arc<Handle>,
}

/// Requests waiting for a commit, and who leads: at most one writer or the committer thread.
#[derive(Default)]
struct CommitQueue {
    requests: Vec<WriteRequest>,
    leader: bool,
    closed: bool,
    /// When the last request arrived, and the mean gap between arrivals (moving average).
    last_arrival: Option<Instant>,
    mean_gap: Duration,
    /// The committer waits on `Handle::arrived` for more requests.
    gathering: bool,
}

impl CommitQueue {
    fn push(&mut self, request: WriteRequest) {
        let now = Instant::now();
        if let Some(last) = self.last_arrival {
            let gap = now.duration_since(last).min(GAP_SAMPLE_MAX);
            self.mean_gap = (self.mean_gap * 7 + gap) / 8;
        }
        self.last_arrival = Some(now);
        self.requests.push(request);
    }
}

struct Handle {
    shared: Arc<Shared>,
    max_value_size: usize,
    queue: Mutex<CommitQueue>,
    /// Signalled when the lead is given up (shutdown waits for it).
    lead_released: Condvar,
    /// Signalled when a request arrives while the committer is gathering.
    arrived: Condvar,
    /// Whether the committer gathers requests under load (disk stores: a commit there costs a
    /// page write and a cache flush; the memory store commits for free).
    gather: bool,
    /// Hands the lead to the committer thread; dropped at shutdown.
    handoff: Mutex<Option<std_mpsc::Sender<()>>>,
    committer: Mutex<Option<JoinHandle<()>>>,
    compactor_stop: Mutex<Option<std_mpsc::Sender<()>>>,
    compactor: Mutex<Option<JoinHandle<()>>>,
}

impl LocalStore {
    /// Opens the store; with sled, creates the directory on first use.
    pub fn open(config: StoreConfig) -> Result<LocalStore> {
        let engine: Box<dyn Engine> = match &config.backend {
            Backend::Memory => Box::new(MemoryEngine::default()),
            Backend::Disk(dir) => open_disk_engine(dir, &config)?,
        };
        Self::over(engine, &config)
    }

    /// Opens a sled store of an older format for reading only, leaving its format as it is
    /// (`k1s upgrade apply` backs it up this way before upgrading it). Writes fail.
    pub fn open_read_only(config: StoreConfig) -> Result<LocalStore> {
        let Backend::Disk(dir) = &config.backend else {
            return Err(Error::Unsupported(
                "only a store on disk can be opened for reading".into(),
            ));
        };
        let engine = Box::new(ReadOnlySled::open(dir, config.cache_capacity)?);
        Self::over(engine, &config)
    }

    fn over(engine: Box<dyn Engine>, config: &StoreConfig) -> Result<LocalStore> {
        let gather = matches!(config.backend, Backend::Disk(_));
        let revision = read_meta_u64(engine.as_ref(), META_REVISION)?;
        let compacted = read_meta_u64(engine.as_ref(), META_COMPACTED)?;
        let shared = Arc::new(Shared {
            engine,
            hub: Mutex::new(Hub::new(Revision(revision), config.watch_buffer)),
            published: AtomicU64::new(revision),
            applying: AtomicU64::new(revision),
            compacted: AtomicU64::new(compacted),
            failed: Mutex::new(None),
            revision: Mutex::new(revision),
            compaction_lock: Mutex::new(()),
        });
        let (handoff, handoffs) = std_mpsc::channel();
        let (stop_tx, compactor) = match config.compaction.interval {
            Some(interval) => {
                let (stop_tx, stop_rx) = std_mpsc::channel::<()>();
                let shared = shared.clone();
                let policy = config.compaction.clone();
                let join = std::thread::Builder::new()
                    .name("k1s-store-compact".into())
                    .spawn(move || run_compactor(&shared, &policy, interval, &stop_rx))?;
                (Some(stop_tx), Some(join))
            }
            None => (None, None),
        };
        let handle = Arc::new(Handle {
            shared,
            max_value_size: config.max_value_size,
            queue: Mutex::new(CommitQueue::default()),
            lead_released: Condvar::new(),
            arrived: Condvar::new(),
            gather,
            handoff: Mutex::new(Some(handoff)),
            committer: Mutex::new(None),
            compactor_stop: Mutex::new(stop_tx),
            compactor: Mutex::new(compactor),
        });
        // The committer thread holds only a weak reference, so dropping the last store clone
        // still shuts everything down.
        let committer = {
            let weak = Arc::downgrade(&handle);
            std::thread::Builder::new()
                .name("k1s-store-commit".into())
                .spawn(move || run_committer(&weak, &handoffs))?
        };
        if let Ok(mut c) = handle.committer.lock() {
            *c = Some(committer);
        }
        Ok(LocalStore { handle })
    }

    /// Number of live watchers (for metrics).
    pub fn watcher_count(&self) -> usize {
        self.handle
            .shared
            .hub
            .lock()
            .map(|h| h.watcher_count())
            .unwrap_or(0)
    }

    /// Stops taking writes, finishes queued ones, ends all watches and syncs the engine.
    pub fn close(&self) {
        self.handle.shutdown();
    }

    fn shared(&self) -> &Shared {
        &self.handle.shared
    }

    async fn write(&self, op: WriteOp) -> Result<WriteOutcome> {
        let (reply, rx) = oneshot::channel();
        let lead = {
            let mut queue = self.handle.queue()?;
            if queue.closed {
                return Err(Error::Closed);
            }
            queue.push(WriteRequest { op, reply });
            if queue.gathering {
                self.handle.arrived.notify_one();
            }
            !std::mem::replace(&mut queue.leader, true)
        };
        if lead {
            // Synchronous to the end, so a cancelled caller can never strand the lead.
            self.handle.lead_one_round();
        }
        rx.await.map_err(|_| Error::Closed)?
    }

    fn check_put(&self, key: &str, value: &Bytes) -> Result<()> {
        check_key(key)?;
        if value.len() > self.handle.max_value_size {
            return Err(Error::ValueTooLarge {
                size: value.len(),
                limit: self.handle.max_value_size,
            });
        }
        Ok(())
    }

    fn check_readable(&self, at: Revision) -> Result<()> {
        let compacted = Revision(self.shared().compacted.load(Ordering::Acquire));
        if at < compacted {
            return Err(Error::Compacted {
                requested: at,
                compacted,
            });
        }
        let current = self.current_revision();
        if at > current {
            return Err(Error::FutureRevision {
                requested: at,
                current,
            });
        }
        Ok(())
    }
}

impl Handle {
    fn queue(&self) -> Result<MutexGuard<'_, CommitQueue>> {
        self.queue.lock().map_err(|_| Error::Closed)
    }

    /// Commits what is queued (including the caller's request) on the caller's thread, then
    /// gives up the lead or, if more requests arrived meanwhile, hands it to the committer.
    fn lead_one_round(&self) {
        let Some(requests) = self.next_batch() else {
            return;
        };
        // Blocks this thread for one durable sync (~0.15 ms on an ordinary SSD). Deliberately
        // not `tokio::task::block_in_place`: that hands the worker's other tasks to another
        // thread on every commit, and the wake-up cost sequential writers ~15% (measured in
        // docs/benchmarks.md). A tokio worker thus blocks about as long as it would encoding a
        // large list.
        self.commit(requests);
        // More requests arrived meanwhile: hand the lead over so this caller can answer its own
        // client instead of committing for everybody.
        if self.release_if_idle().is_none() {
            return;
        }
        let handed = self
            .handoff
            .lock()
            .ok()
            .and_then(|h| h.as_ref().map(|tx| tx.send(()).is_ok()))
            .unwrap_or(false);
        if !handed {
            // Shutting down: no committer to hand to, so finish the queue here.
            self.drain_queue();
        }
    }

    /// Commits rounds (each batch gathered under load) until the queue is empty, then gives up
    /// the lead.
    fn drain_queue(&self) {
        while let Some(requests) = self.gathered_batch() {
            self.commit(requests);
        }
    }

    /// The next batch for the committer. While writes arrive in quick succession it waits for
    /// each next one (up to twice the mean gap), until it holds `GATHER_TARGET`, waited
    /// `GATHER_MAX` or one did not come: the writers it holds wait a little longer, and the
    /// batch costs one commit instead of several.
    fn gathered_batch(&self) -> Option<Vec<WriteRequest>> {
        let mut queue = self.queue().ok()?;
        let started = Instant::now();
        while self.gather
            && !queue.closed
            && !queue.requests.is_empty()
            && queue.requests.len() < GATHER_TARGET
            && queue.mean_gap <= GATHER_MEAN_GAP
        {
            let left = GATHER_MAX.saturating_sub(started.elapsed());
            if left.is_zero() {
                break;
            }
            let before = queue.requests.len();
            let wait = (queue.mean_gap * 2).min(left);
            queue.gathering = true;
            let (mut waited, _) = self.arrived.wait_timeout(queue, wait).ok()?;
            waited.gathering = false;
            queue = waited;
            if queue.requests.len() == before {
                break;
            }
        }
        drop(queue);
        self.next_batch()
    }

    /// Gives up the lead if nothing is queued, checking and releasing under one lock so no
    /// request is ever left without a leader; otherwise returns the queue, lead kept.
    fn release_if_idle(&self) -> Option<MutexGuard<'_, CommitQueue>> {
        let mut queue = self.queue().ok()?;
        if queue.requests.is_empty() {
            queue.leader = false;
            self.lead_released.notify_all();
            return None;
        }
        Some(queue)
    }

    /// The next batch for the leader, or `None` once the lead is given up (nothing queued).
    fn next_batch(&self) -> Option<Vec<WriteRequest>> {
        let mut queue = self.release_if_idle()?;
        let n = queue.requests.len().min(MAX_BATCH);
        Some(queue.requests.drain(..n).collect())
    }

    fn commit(&self, requests: Vec<WriteRequest>) {
        let _unwind = LeadOnUnwind(self);
        commit_round(&self.shared, requests);
    }

    fn shutdown(&self) {
        if let Ok(mut queue) = self.queue() {
            queue.closed = true;
            self.arrived.notify_all();
            while queue.leader {
                match self.lead_released.wait(queue) {
                    Ok(q) => queue = q,
                    Err(_) => break,
                }
            }
        }
        if let Ok(mut h) = self.handoff.lock() {
            h.take();
        }
        if let Some(join) = self.committer.lock().ok().and_then(|mut c| c.take()) {
            // The last clone may drop on the committer thread itself (it upgrades its weak
            // reference while it works); it must not wait for itself.
            if join.thread().id() != std::thread::current().id() {
                let _ = join.join();
            }
        }
        if let Ok(mut s) = self.compactor_stop.lock() {
            s.take();
        }
        if let Some(join) = self.compactor.lock().ok().and_then(|mut c| c.take()) {
            let _ = join.join();
        }
        if let Ok(mut hub) = self.shared.hub.lock() {
            hub.close();
        }
        if let Err(e) = self.shared.engine.close() {
            tracing::warn!(error = %e, "closing the store engine failed");
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[async_trait]
impl Store for LocalStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        check_key(key)?;
        let at = self.current_revision();
        // Fast path: the key's record, when no write newer than `at` has touched it yet (an
        // unpublished change or delete shows as a newer revision or a missing key).
        if let Some(raw) = self.shared().engine.get(&data_key(key.as_bytes()))? {
            let rec = codec::decode_data(key, raw)?;
            if rec.mod_revision <= at {
                return Ok(Some(KeyValue {
                    key: key.to_string(),
                    value: rec.value,
                    create_revision: rec.create_revision,
                    mod_revision: rec.mod_revision,
                }));
            }
        }
        let mut end = key.as_bytes().to_vec();
        end.push(0);
        let (items, _) = self.shared().read_range(key.as_bytes(), &end, at, 1)?;
        Ok(items.into_iter().find(|kv| kv.key == key))
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        self.check_put(key, &value)?;
        match self
            .write(WriteOp::Create {
                key: key.to_string(),
                value,
            })
            .await?
        {
            WriteOutcome::Put(kv) => Ok(kv),
            WriteOutcome::Deleted(_) => Err(Error::Engine("unexpected write outcome".into())),
        }
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Option<Revision>,
    ) -> Result<KeyValue> {
        self.check_put(key, &value)?;
        match self
            .write(WriteOp::Update {
                key: key.to_string(),
                value,
                expected,
            })
            .await?
        {
            WriteOutcome::Put(kv) => Ok(kv),
            WriteOutcome::Deleted(_) => Err(Error::Engine("unexpected write outcome".into())),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        check_key(key)?;
        match self
            .write(WriteOp::Delete {
                key: key.to_string(),
                expected,
            })
            .await?
        {
            WriteOutcome::Deleted(d) => Ok(d),
            WriteOutcome::Put(_) => Err(Error::Engine("unexpected write outcome".into())),
        }
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        check_key(prefix)?;
        let (at, start) = match &opts.continue_token {
            Some(token) => {
                let (at, start) = continue_token::decode(token, prefix)?;
                let current = self.current_revision();
                let at = at.unwrap_or(current);
                if at > current {
                    return Err(Error::InvalidContinue("revision from the future".into()));
                }
                if at < Revision(self.shared().compacted.load(Ordering::Acquire)) {
                    return Err(continue_token::expired(at, &start));
                }
                (at, start)
            }
            None => {
                let at = opts.revision.unwrap_or_else(|| self.current_revision());
                self.check_readable(at)?;
                (at, prefix.to_string())
            }
        };
        let end = prefix_end(prefix.as_bytes());
        let (items, more) = match self
            .shared()
            .read_range(start.as_bytes(), &end, at, opts.limit)
        {
            Err(Error::Compacted { .. }) if opts.continue_token.is_some() => {
                return Err(continue_token::expired(at, &start));
            }
            other => other?,
        };
        let (continue_token, remaining) = match (more, items.last()) {
            (true, Some(last)) => {
                let after = format!("{}\0", last.key);
                let remaining = self.shared().count_at(after.as_bytes(), &end, at)?;
                (Some(continue_token::encode(at, &after)), Some(remaining))
            }
            _ => (None, None),
        };
        Ok(ListPage {
            items,
            revision: at,
            continue_token,
            remaining,
        })
    }

    async fn count(&self, prefix: &str) -> Result<u64> {
        check_key(prefix)?;
        let start = data_key(prefix.as_bytes());
        let end = data_key(&prefix_end(prefix.as_bytes()));
        self.shared().engine.count(&start, &end)
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        check_key(prefix)?;
        self.check_readable(after)?;
        let shared = self.shared();
        let mut replay = VecDeque::new();
        let mut read_up_to = after;
        loop {
            // Read the durable history we have not seen, then register only if nothing was
            // published meanwhile: registration and publishing share the hub lock, so no event
            // falls between the replay and the live feed.
            let target = self.current_revision();
            for rec in shared.read_changes(read_up_to, target)? {
                if rec.key.starts_with(prefix) {
                    replay.push_back(Arc::new(event_of(rec)));
                }
            }
            read_up_to = target;
            let compacted = Revision(shared.compacted.load(Ordering::Acquire));
            if after < compacted {
                return Err(Error::Compacted {
                    requested: after,
                    compacted,
                });
            }
            let mut hub = shared.hub.lock().map_err(|_| Error::Closed)?;
            if hub.published == target {
                return Ok(hub.register(prefix, replay, after));
            }
        }
    }

    fn current_revision(&self) -> Revision {
        Revision(self.shared().published.load(Ordering::Acquire))
    }

    fn compacted_revision(&self) -> Revision {
        Revision(self.shared().compacted.load(Ordering::Acquire))
    }

    async fn size_bytes(&self) -> Result<Option<u64>> {
        self.shared().engine.size_bytes().map(Some)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let current = self.current_revision();
        if revision > current {
            return Err(Error::FutureRevision {
                requested: revision,
                current,
            });
        }
        let shared = self.handle.shared.clone();
        tokio::task::spawn_blocking(move || shared.compact_to(revision))
            .await
            .map_err(|e| Error::Engine(format!("compaction task failed: {e}")))?
    }
}

impl Shared {
    /// The keys in `[start, end)` as they were at revision `at`: up to `limit` items (0: all)
    /// and whether more follow.
    fn read_range(
        &self,
        start: &[u8],
        end: &[u8],
        at: Revision,
        limit: usize,
    ) -> Result<(Vec<KeyValue>, bool)> {
        // The state at `at` of every key changed after `at`: the `prev` of its first later entry.
        let mut changed: BTreeMap<Vec<u8>, Option<KeyValue>> = BTreeMap::new();
        let mut log_seen = at;
        let mut absorb_log = |changed: &mut BTreeMap<Vec<u8>, Option<KeyValue>>| -> Result<()> {
            for rec in self.read_log(log_seen, None)? {
                log_seen = rec.revision;
                if rec.key.as_bytes() >= start && rec.key.as_bytes() < end {
                    changed.entry(rec.key.into_bytes()).or_insert(rec.prev);
                }
            }
            Ok(())
        };
        // The log is only read once some write newer than `at` may have reached the engine;
        // usually none has, and the log's hot end is costly to read in sled.
        let newer_writes = || self.applying.load(Ordering::SeqCst) > at.0;
        let mut use_log = newer_writes();
        if use_log {
            absorb_log(&mut changed)?;
        }

        let mut out: Vec<KeyValue> = Vec::new();
        let mut cursor = start.to_vec();
        let chunk = if limit == 0 {
            SCAN_CHUNK
        } else {
            (limit + 1).min(SCAN_CHUNK)
        };
        loop {
            let rows = self
                .engine
                .scan(&data_key(&cursor), &data_key(end), chunk)?;
            // Every write visible in `rows` raised `applying` first, and is in the log by now:
            // a commit applies its log entries before its data.
            if use_log || newer_writes() {
                use_log = true;
                absorb_log(&mut changed)?;
            }
            let full = rows.len() == chunk;
            let hi: Vec<u8> = match rows.last() {
                Some((k, _)) if full => {
                    let mut hi = k[1..].to_vec();
                    hi.push(0);
                    hi
                }
                _ => end.to_vec(),
            };
            let mut page: BTreeMap<String, KeyValue> = BTreeMap::new();
            for (raw_key, raw_value) in rows {
                let key = String::from_utf8(raw_key[1..].to_vec())
                    .map_err(|_| Error::Corrupt("a stored key is not UTF-8".into()))?;
                if changed.contains_key(key.as_bytes()) {
                    continue;
                }
                let rec = codec::decode_data(&key, raw_value)?;
                if rec.mod_revision > at {
                    return Err(Error::Corrupt(format!(
                        "{key:?} changed at revision {} but the log has no entry for it",
                        rec.mod_revision
                    )));
                }
                page.insert(
                    key.clone(),
                    KeyValue {
                        key,
                        value: rec.value,
                        create_revision: rec.create_revision,
                        mod_revision: rec.mod_revision,
                    },
                );
            }
            for state in changed
                .range(cursor.clone()..hi.clone())
                .filter_map(|(_, s)| s.as_ref())
            {
                page.insert(state.key.clone(), state.clone());
            }
            out.extend(page.into_values());
            if limit > 0 && out.len() > limit {
                out.truncate(limit);
                self.check_not_compacted(at)?;
                return Ok((out, true));
            }
            if !full {
                break;
            }
            cursor = hi;
        }
        self.check_not_compacted(at)?;
        Ok((out, false))
    }

    /// How many keys `start <= key < end` held at `at`: the keys now, corrected by the log for
    /// keys written since. Exact when no commit overlaps the count; after a few tries under
    /// constant writes it settles for an estimate (what the field is documented to be).
    fn count_at(&self, start: &[u8], end: &[u8], at: Revision) -> Result<u64> {
        let mut estimate = 0;
        for _ in 0..8 {
            let applying = self.applying.load(Ordering::SeqCst);
            let settled = applying == self.published.load(Ordering::Acquire);
            estimate = self.count_at_once(start, end, at)?;
            if settled && self.applying.load(Ordering::SeqCst) == applying {
                break;
            }
            std::thread::yield_now();
        }
        Ok(estimate)
    }

    fn count_at_once(&self, start: &[u8], end: &[u8], at: Revision) -> Result<u64> {
        let mut existed_at: BTreeMap<String, bool> = BTreeMap::new();
        if self.applying.load(Ordering::SeqCst) > at.0 {
            for rec in self.read_log(at, None)? {
                if rec.key.as_bytes() >= start && rec.key.as_bytes() < end {
                    existed_at.entry(rec.key).or_insert(rec.prev.is_some());
                }
            }
        }
        let mut n = self.engine.count(&data_key(start), &data_key(end))? as i64;
        for (key, existed) in existed_at {
            let exists = self.engine.get(&data_key(key.as_bytes()))?.is_some();
            n += i64::from(existed) - i64::from(exists);
        }
        Ok(n.max(0) as u64)
    }

    /// Fails if history after `at` may have been removed while we read it.
    fn check_not_compacted(&self, at: Revision) -> Result<()> {
        let compacted = Revision(self.compacted.load(Ordering::Acquire));
        if at < compacted {
            return Err(Error::Compacted {
                requested: at,
                compacted,
            });
        }
        Ok(())
    }

    /// Log entries with `after < revision <= up_to`, each with the state it left its key in.
    /// Walking back from the log's end, an entry's `prev` is the state after the entry before
    /// it on the same key; a key's latest entry leaves it as its data record says.
    fn read_changes(&self, after: Revision, up_to: Revision) -> Result<Vec<LogRecord>> {
        let mut records = self.read_log(after, None)?;
        // A failed pass reads on past a key that was written meanwhile; that key's state then
        // comes from its next entry, never from a data read again. So each key of the window
        // can fail a pass at most once, and a busy store (many keys written while we read)
        // needs up to that many passes: a fixed count gave up under load.
        let window_keys = records
            .iter()
            .filter(|r| r.revision <= up_to)
            .map(|r| &r.key)
            .collect::<HashSet<_>>()
            .len();
        'fill: for _ in 0..window_keys + 64 {
            let mut state_after: HashMap<String, Option<KeyValue>> = HashMap::new();
            for rec in records.iter_mut().rev() {
                if rec.kind == EventKind::Deleted {
                    rec.current = None;
                } else if rec.current.is_none() && rec.revision <= up_to {
                    // (Entries past `up_to` are dropped below: only their `prev` matters, and
                    // reading their data would race with writes still landing.)
                    rec.current = match state_after.get(&rec.key) {
                        Some(state) => state.clone(),
                        None => match read_current(self.engine.as_ref(), &rec.key)? {
                            Some(kv) if kv.mod_revision == rec.revision => Some(kv),
                            // A write landed after the log was read: read on and redo.
                            _ => {
                                let seen = records.last().map_or(after, |r| r.revision);
                                records.extend(self.read_log(seen, None)?);
                                continue 'fill;
                            }
                        },
                    };
                }
                state_after.insert(rec.key.clone(), rec.prev.clone());
            }
            records.retain(|r| r.revision <= up_to);
            return Ok(records);
        }
        Err(Error::Engine(
            "the log kept changing while a watch read its history".into(),
        ))
    }

    /// Log entries with `after < revision <= up_to` (no upper bound when `None`).
    fn read_log(&self, after: Revision, up_to: Option<Revision>) -> Result<Vec<LogRecord>> {
        let end = match up_to {
            Some(r) => log_key(Revision(r.0.saturating_add(1))),
            None => prefix_end(b"l"),
        };
        let mut out = Vec::new();
        let mut from = after.0.saturating_add(1);
        loop {
            let rows = self
                .engine
                .scan(&log_key(Revision(from)), &end, SCAN_CHUNK)?;
            let full = rows.len() == SCAN_CHUNK;
            for (k, v) in rows {
                let rev = revision_of_log_key(&k)?;
                out.push(codec::decode_log(rev, &v)?);
                from = rev.0 + 1;
            }
            if !full {
                return Ok(out);
            }
        }
    }

    /// Persists the new compaction point first, then deletes log entries in small batches so
    /// writers (who never wait on this) are not held up.
    fn compact_to(&self, revision: Revision) -> Result<()> {
        let _only_one = self
            .compaction_lock
            .lock()
            .map_err(|_| Error::Engine("compaction lock poisoned".into()))?;
        let old = self.compacted.load(Ordering::Acquire);
        if revision.0 <= old {
            return Ok(());
        }
        self.engine.commit(vec![(
            META_COMPACTED.to_vec(),
            Some(revision.0.to_be_bytes().to_vec()),
        )])?;
        self.compacted.store(revision.0, Ordering::Release);
        let end = log_key(Revision(revision.0 + 1));
        // From the log's very start: entries a crash kept from an interrupted compaction go too.
        loop {
            let rows = self.engine.scan(&log_key(Revision(0)), &end, SCAN_CHUNK)?;
            if rows.is_empty() {
                return Ok(());
            }
            let batch = rows.into_iter().map(|(k, _)| (k, None)).collect();
            self.engine.commit(batch)?;
            std::thread::yield_now();
        }
    }

    /// The newest revision whose log entry is older than `cutoff_millis`, if any.
    fn last_revision_before(&self, cutoff_millis: u64) -> Result<Option<Revision>> {
        let mut found = None;
        let mut from = self.compacted.load(Ordering::Acquire) + 1;
        loop {
            let rows = self
                .engine
                .scan(&log_key(Revision(from)), &prefix_end(b"l"), SCAN_CHUNK)?;
            let full = rows.len() == SCAN_CHUNK;
            for (k, v) in rows {
                let rev = revision_of_log_key(&k)?;
                let rec = codec::decode_log(rev, &v)?;
                if rec.unix_millis >= cutoff_millis {
                    return Ok(found);
                }
                found = Some(rev);
                from = rev.0 + 1;
            }
            if !full {
                return Ok(found);
            }
        }
    }

    /// The revision history may be compacted to under `policy` now.
    fn compaction_target(&self, policy: &CompactionPolicy) -> Result<Revision> {
        let published = self.published.load(Ordering::Acquire);
        let by_count = Revision(published.saturating_sub(policy.keep_revisions));
        let Some(keep_for) = policy.keep_for else {
            return Ok(by_count);
        };
        let cutoff = unix_millis().saturating_sub(keep_for.as_millis() as u64);
        let by_time = self
            .last_revision_before(cutoff)?
            .unwrap_or(Revision(self.compacted.load(Ordering::Acquire)));
        Ok(by_count.min(by_time))
    }

    fn fail(&self, why: &str) {
        if let Ok(mut f) = self.failed.lock() {
            f.get_or_insert_with(|| why.to_string());
        }
    }

    fn failure(&self) -> Option<String> {
        self.failed.lock().ok().and_then(|f| f.clone())
    }
}

/// Gives the lead up if a commit round unwinds (a bug): the queued writers then fail with
/// `Closed` instead of waiting forever for a leader.
struct LeadOnUnwind<'a>(&'a Handle);

impl Drop for LeadOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Ok(mut queue) = self.0.queue.lock() {
                queue.requests.clear();
                queue.leader = false;
            }
            self.0.lead_released.notify_all();
        }
    }
}

/// The committer thread: takes the lead when a writer hands it over, and keeps batching until
/// the queue is empty.
fn run_committer(handle: &std::sync::Weak<Handle>, handoffs: &std_mpsc::Receiver<()>) {
    while handoffs.recv().is_ok() {
        match handle.upgrade() {
            Some(handle) => handle.drain_queue(),
            None => return,
        }
    }
}

/// One group commit: checks every request in order, commits the batch once, publishes the
/// events and answers the writers.
fn commit_round(shared: &Shared, requests: Vec<WriteRequest>) {
    if let Some(why) = shared.failure() {
        for r in requests {
            let _ = r.reply.send(Err(Error::Engine(format!(
                "the store stopped taking writes after an engine failure: {why}"
            ))));
        }
        return;
    }
    let Ok(mut revision) = shared.revision.lock() else {
        for r in requests {
            let _ = r
                .reply
                .send(Err(Error::Engine("revision lock poisoned".into())));
        }
        return;
    };
    let now = unix_millis();
    let mut pending: HashMap<String, Option<KeyValue>> = HashMap::new();
    // Log entries go first: the engine may show a batch's ops to readers one by one, and a
    // reader that sees a changed data key must find its log entry (see `read_range`).
    let mut batch: Vec<BatchOp> = Vec::new();
    let mut data: Vec<BatchOp> = Vec::new();
    let mut events = Vec::new();
    let mut replies = Vec::with_capacity(requests.len());
    for req in requests {
        let outcome = stage_write(
            shared,
            &mut pending,
            &mut revision,
            req.op,
            now,
            (&mut batch, &mut data),
            &mut events,
        );
        replies.push((req.reply, outcome));
    }
    if !batch.is_empty() {
        batch.append(&mut data);
        batch.push((
            META_REVISION.to_vec(),
            Some(revision.to_be_bytes().to_vec()),
        ));
        shared.applying.store(*revision, Ordering::SeqCst);
        if let Err(e) = shared.engine.commit(batch) {
            let why = e.to_string();
            tracing::error!(error = %why, "store commit failed; refusing further writes");
            shared.fail(&why);
            for (reply, _) in replies {
                let _ = reply.send(Err(Error::Engine(why.clone())));
            }
            return;
        }
    }
    if let Ok(mut hub) = shared.hub.lock() {
        // Reads see the batch before any watcher hears of it: a client that reacts to an event
        // by reading the object must find that revision, not the one before (a garbage
        // collector removing a finalizer it was told about would otherwise patch a stale copy).
        if let Some(last) = events.last() {
            shared.published.store(last.revision.0, Ordering::Release);
        }
        hub.publish(&events);
        shared.published.store(hub.published.0, Ordering::Release);
    }
    drop(revision);
    for (reply, outcome) in replies {
        let _ = reply.send(outcome);
    }
}

/// Checks one write against the current state (including earlier writes of this batch) and, if
/// it passes, adds its log entry, data and event under the next revision.
fn stage_write(
    shared: &Shared,
    pending: &mut HashMap<String, Option<KeyValue>>,
    revision: &mut u64,
    op: WriteOp,
    now: u64,
    (log, data): (&mut Vec<BatchOp>, &mut Vec<BatchOp>),
    events: &mut Vec<Arc<Event>>,
) -> Result<WriteOutcome> {
    let key = match &op {
        WriteOp::Create { key, .. } | WriteOp::Update { key, .. } | WriteOp::Delete { key, .. } => {
            key.clone()
        }
    };
    let current = match pending.get(&key) {
        Some(state) => state.clone(),
        None => read_current(shared.engine.as_ref(), &key)?,
    };
    let check_expected = |expected: Option<Revision>, cur: &KeyValue| match expected {
        Some(exp) if exp != cur.mod_revision => Err(Error::Conflict {
            key: key.clone(),
            expected: exp,
            actual: cur.mod_revision,
        }),
        _ => Ok(()),
    };
    let rev = Revision(*revision + 1);
    let (kind, next, outcome) = match op {
        WriteOp::Create { value, .. } => {
            if current.is_some() {
                return Err(Error::AlreadyExists { key });
            }
            let kv = KeyValue {
                key: key.clone(),
                value,
                create_revision: rev,
                mod_revision: rev,
            };
            (EventKind::Created, Some(kv.clone()), WriteOutcome::Put(kv))
        }
        WriteOp::Update {
            value, expected, ..
        } => {
            let cur = current
                .as_ref()
                .ok_or(Error::NotFound { key: key.clone() })?;
            check_expected(expected, cur)?;
            let kv = KeyValue {
                key: key.clone(),
                value,
                create_revision: cur.create_revision,
                mod_revision: rev,
            };
            (EventKind::Modified, Some(kv.clone()), WriteOutcome::Put(kv))
        }
        WriteOp::Delete { expected, .. } => {
            let cur = current
                .as_ref()
                .ok_or(Error::NotFound { key: key.clone() })?;
            check_expected(expected, cur)?;
            let deleted = Deleted {
                prev: cur.clone(),
                revision: rev,
            };
            (EventKind::Deleted, None, WriteOutcome::Deleted(deleted))
        }
    };
    *revision = rev.0;
    let record = LogRecord {
        revision: rev,
        unix_millis: now,
        kind,
        key: key.clone(),
        current: next.clone(),
        prev: current,
    };
    data.push((
        data_key(key.as_bytes()),
        next.as_ref()
            .map(|kv| codec::encode_data(kv.create_revision, kv.mod_revision, &kv.value)),
    ));
    log.push((log_key(rev), Some(codec::encode_log(&record))));
    events.push(Arc::new(event_of(record)));
    pending.insert(key, next);
    Ok(outcome)
}

/// The engine of the store in `dir`: the one that wrote it, or for a new store the image
/// engine (sled when compression is asked for).
pub(crate) fn open_disk_engine(dir: &Path, config: &StoreConfig) -> Result<Box<dyn Engine>> {
    let engine = match format::existing(dir)? {
        Some(f) => f,
        None if config.compress_new_store => Format::Sled,
        None => Format::Image,
    };
    Ok(match engine {
        Format::Sled => Box::new(SledEngine::open(
            dir,
            config.cache_capacity,
            config.wal_file_bytes,
            config.compress_new_store,
        )?),
        Format::Image => Box::new(ImageEngine::open(dir, config.wal_file_bytes)?),
    })
}

/// Converts a sled store (formats 1 and 2) on disk to this build's format in place; a store
/// already at it is left as it is. The store must not be open.
pub fn upgrade_store(config: &StoreConfig) -> Result<()> {
    let Backend::Disk(dir) = &config.backend else {
        return Err(Error::Unsupported(
            "only a store on disk has a format".into(),
        ));
    };
    match format::existing(dir)? {
        Some(Format::Sled) => convert_sled_store(dir, config.cache_capacity, config.wal_file_bytes),
        _ => Ok(()),
    }
}

fn run_compactor(
    shared: &Shared,
    policy: &CompactionPolicy,
    interval: Duration,
    stop: &std_mpsc::Receiver<()>,
) {
    while let Err(std_mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(interval) {
        let result = shared
            .compaction_target(policy)
            .and_then(|target| shared.compact_to(target));
        if let Err(e) = result {
            tracing::warn!(error = %e, "background compaction failed");
        }
    }
}

fn read_current(engine: &dyn Engine, key: &str) -> Result<Option<KeyValue>> {
    let Some(raw) = engine.get(&data_key(key.as_bytes()))? else {
        return Ok(None);
    };
    let rec = codec::decode_data(key, raw)?;
    Ok(Some(KeyValue {
        key: key.to_string(),
        value: rec.value,
        create_revision: rec.create_revision,
        mod_revision: rec.mod_revision,
    }))
}

fn read_meta_u64(engine: &dyn Engine, name: &[u8]) -> Result<u64> {
    match engine.get(name)? {
        None => Ok(0),
        Some(v) => {
            let bytes: [u8; 8] = v.as_slice().try_into().map_err(|_| {
                Error::Corrupt(format!(
                    "metadata {:?} has a bad length",
                    String::from_utf8_lossy(name)
                ))
            })?;
            Ok(u64::from_be_bytes(bytes))
        }
    }
}

fn event_of(rec: LogRecord) -> Event {
    Event {
        kind: rec.kind,
        revision: rec.revision,
        key: rec.key,
        current: rec.current,
        prev: rec.prev,
    }
}

fn check_key(key: &str) -> Result<()> {
    if !key.starts_with('/') {
        return Err(Error::InvalidKey(key.to_string()));
    }
    Ok(())
}

pub(crate) fn data_key(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(b'd');
    k.extend_from_slice(key);
    k
}

fn log_key(rev: Revision) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    k.push(b'l');
    k.extend_from_slice(&rev.0.to_be_bytes());
    k
}

fn revision_of_log_key(k: &[u8]) -> Result<Revision> {
    let bytes: [u8; 8] = k
        .get(1..9)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| Error::Corrupt("malformed log key".into()))?;
    Ok(Revision(u64::from_be_bytes(bytes)))
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
