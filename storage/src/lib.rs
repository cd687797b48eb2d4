//! A revisioned key-value store with watch; knows bytes and keys, never API kinds.
//!
//! Every write bumps one global revision (the API's `resourceVersion`). `Store` is the contract
//! every backend meets; `LocalStore` implements it once over a byte engine (sled on disk, or
//! memory), adding the revision log, group commit, snapshots, watch and compaction. `EtcdStore`
//! implements it on an etcd cluster, whose revisions, watch and compaction it maps one to one.

mod codec;
mod continue_token;
mod engine;
mod error;
mod etcd;
mod etcd_endpoints;
mod format;
mod image_engine;
mod local;
mod log_files;
mod migrate;
mod sled_engine;
pub mod snapshot;
mod wal;
mod watch;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

pub use error::{Error, Result};
pub use etcd::{EtcdConfig, EtcdStore};
pub use format::{FORMAT_VERSION, store_format, store_in_use};
pub use local::{LocalStore, upgrade_store};
pub use migrate::copy_all;
pub use snapshot::SnapshotInfo;
pub use wal::{
    DEFAULT_SEGMENT_BYTES as DEFAULT_WAL_FILE_BYTES, MIN_SEGMENT_BYTES as MIN_WAL_FILE_BYTES,
};
pub use watch::WatchStream;

/// A point in the store's history: the count of writes so far. Revision 0 is the empty store.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Revision(pub u64);

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A key's value with the revisions at which it was created and last modified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    pub create_revision: Revision,
    pub mod_revision: Revision,
}

/// What a delete removed, and the revision of the delete itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deleted {
    pub prev: KeyValue,
    pub revision: Revision,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    Created,
    Modified,
    Deleted,
}

/// One committed change, as watchers see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub revision: Revision,
    pub key: String,
    /// The value after the write; `None` for a delete.
    pub current: Option<KeyValue>,
    /// The value before the write; `None` for a create.
    pub prev: Option<KeyValue>,
}

/// Options of a list call.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// At most this many items; 0 means no limit.
    pub limit: usize,
    /// Resume a previous page; its snapshot revision is used and `revision` must be `None`.
    pub continue_token: Option<String>,
    /// Read the snapshot at this revision instead of the latest one.
    pub revision: Option<Revision>,
}

/// One page of a list: a consistent snapshot at `revision`.
#[derive(Clone, Debug)]
pub struct ListPage {
    pub items: Vec<KeyValue>,
    pub revision: Revision,
    /// Present when more items follow; pass it back to get the next page.
    pub continue_token: Option<String>,
    /// With a continue token: how many keys of the prefix follow this page (etcd's count less
    /// the page), for `metadata.remainingItemCount`.
    pub remaining: Option<u64>,
}

/// How much history to keep. History older than both limits (when both are set) is compacted.
#[derive(Clone, Debug)]
pub struct CompactionPolicy {
    /// Keep at least this many most recent revisions.
    pub keep_revisions: u64,
    /// Keep at least this much time of history, if set.
    pub keep_for: Option<Duration>,
    /// How often the background compactor looks; `None` disables it.
    pub interval: Option<Duration>,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        // Upstream compacts etcd every 5 minutes, by time only. So do we: a revision floor kept
        // history the page cache holds, and an idle cluster's Lease renewals (about 70 revisions
        // a minute) grew the server by about 0.7 MB a minute until the floor was reached (10,000
        // revisions: over two hours).
        CompactionPolicy {
            keep_revisions: 0,
            keep_for: Some(Duration::from_secs(300)),
            interval: Some(Duration::from_secs(60)),
        }
    }
}

/// Which kind of backend a `Store` is, for the operations that differ (snapshots).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// The embedded store (sled or memory): k1s snapshots it itself.
    Local,
    /// An etcd cluster: etcd's own tools snapshot it.
    Etcd,
}

/// Where the store keeps its data.
#[derive(Clone, Debug)]
pub enum Backend {
    /// On disk in this directory: a new store gets the image engine (format 4), or sled with
    /// `compress_new_store`; an existing one keeps the engine it was written by.
    Disk(std::path::PathBuf),
    /// Memory only; everything is lost when the process ends.
    Memory,
}

/// Default size of the sled page cache (`StoreConfig::cache_capacity`).
pub const DEFAULT_CACHE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Clone, Debug)]
pub struct StoreConfig {
    pub backend: Backend,
    pub compaction: CompactionPolicy,
    /// Events buffered per watcher before it is cut off as too slow.
    pub watch_buffer: usize,
    /// Largest value accepted (etcd's default request limit is 1.5 MiB).
    pub max_value_size: usize,
    /// sled page cache size in bytes (sled stores only).
    pub cache_capacity: u64,
    /// Size of one write-ahead log file of a store on disk; a checkpoint starts a new one when
    /// half of one is used.
    pub wal_file_bytes: u64,
    /// Whether a store created now is a sled store that compresses what it logs (zstd), rather
    /// than an image store. A store keeps the engine and setting it was created with.
    pub compress_new_store: bool,
}

impl StoreConfig {
    pub fn new(backend: Backend) -> Self {
        StoreConfig {
            backend,
            compaction: CompactionPolicy::default(),
            watch_buffer: 10_000,
            max_value_size: 3 * 1024 * 1024 / 2,
            cache_capacity: DEFAULT_CACHE_BYTES,
            wal_file_bytes: wal::DEFAULT_SEGMENT_BYTES,
            compress_new_store: false,
        }
    }
}

/// The storage contract every backend meets (see DESIGN.md, "Storage contract").
#[async_trait]
pub trait Store: Send + Sync {
    /// The latest value of `key`, if any.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>>;
    /// Creates `key`; fails with `AlreadyExists` if present.
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue>;
    /// Replaces `key`'s value; `NotFound` if absent, `Conflict` if `expected` is not its mod revision.
    async fn update(&self, key: &str, value: Bytes, expected: Option<Revision>)
    -> Result<KeyValue>;
    /// Removes `key`; `NotFound` if absent, `Conflict` if `expected` is not its mod revision.
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted>;
    /// A consistent page of the keys under `prefix`, in key order.
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage>;
    /// How many keys are under `prefix` now.
    async fn count(&self, prefix: &str) -> Result<u64>;
    /// Every change under `prefix` with a revision greater than `after`, then live changes.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream>;
    /// The newest durable revision.
    fn current_revision(&self) -> Revision;
    /// History at or below this revision is gone.
    fn compacted_revision(&self) -> Revision;
    /// The newest revision, asked of the backend itself: with several servers on one etcd,
    /// `current_revision` knows only what this server has seen.
    async fn fresh_revision(&self) -> Result<Revision> {
        Ok(self.current_revision())
    }
    /// Drops history up to and including `revision`.
    async fn compact(&self, revision: Revision) -> Result<()>;
    /// The bytes the store takes on disk, as upstream's `apiserver_storage_size_bytes` reports
    /// etcd's database size; `None` where the backend cannot say.
    async fn size_bytes(&self) -> Result<Option<u64>> {
        Ok(None)
    }
    /// Which kind of backend this is.
    fn backend_kind(&self) -> BackendKind {
        BackendKind::Local
    }
}

/// What an update closure decided.
pub enum Update {
    /// Write this value (create it if the key is absent).
    Put(Bytes),
    /// Leave the key as it is.
    Keep,
}

impl dyn Store {
    /// Read, apply `f`, compare-and-swap, retry on conflict: upstream's GuaranteedUpdate.
    ///
    /// `f` sees the current value (or `None`) and may fail with its own error, which is returned
    /// as is. Returns the value in the store afterwards (`None` if absent and kept absent).
    pub async fn guaranteed_update<E, F>(&self, key: &str, mut f: F) -> Result<Option<KeyValue>, E>
    where
        E: From<Error>,
        F: FnMut(Option<&KeyValue>) -> Result<Update, E> + Send,
    {
        loop {
            let current = self.get(key).await?;
            let value = match f(current.as_ref())? {
                Update::Keep => return Ok(current),
                Update::Put(v) => v,
            };
            let outcome = match &current {
                Some(cur) => self.update(key, value, Some(cur.mod_revision)).await,
                None => self.create(key, value).await,
            };
            match outcome {
                Ok(kv) => return Ok(Some(kv)),
                Err(
                    Error::Conflict { .. } | Error::AlreadyExists { .. } | Error::NotFound { .. },
                ) => {
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Parses a size such as `4Mi`, `4MiB`, `512Ki`, `1Gi` or a plain count of bytes (the form
/// of `k1s server --wal-size`).
pub fn parse_byte_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = t.split_at(digits);
    let multiplier: u64 = match unit.trim() {
        "" | "B" => 1,
        "k" | "K" | "Ki" | "KiB" | "kB" | "KB" => 1 << 10,
        "M" | "Mi" | "MiB" | "MB" => 1 << 20,
        "G" | "Gi" | "GiB" | "GB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {text:?} (use Ki, Mi or Gi)"
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| format!("{text:?} is not a size (for example 4Mi)"))
}

/// Opens the store a config describes.
pub fn open(config: StoreConfig) -> Result<LocalStore> {
    LocalStore::open(config)
}

/// The exclusive end of the key range that starts with `prefix`.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // An all-0xff (or empty) prefix covers everything to the end of the space.
    vec![0xff; prefix.len() + 1]
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_sizes() {
        for (text, want) in [
            ("4Mi", Ok(4 << 20)),
            ("4MiB", Ok(4 << 20)),
            ("512Ki", Ok(512 << 10)),
            ("1G", Ok(1 << 30)),
            ("65536", Ok(65536)),
            (" 2 Mi ", Ok(2 << 20)),
        ] {
            assert_eq!(super::parse_byte_size(text), want, "{text}");
        }
        for bad in ["", "Mi", "4Ti", "-1Mi", "1.5Mi", "99999999999999999999Gi"] {
            assert!(super::parse_byte_size(bad).is_err(), "{bad}");
        }
    }
}
