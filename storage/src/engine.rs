//! The byte-level engine under the local store: ordered keys, atomic durable batches.
//!
//! Engines know nothing of revisions or watches; `LocalStore` builds those on top, once, for every
//! engine. The in-memory engine lives here; the disk engines are in `image_engine.rs` and
//! `sled_engine.rs`.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::{Error, Result};

/// One write in an atomic batch: `Some` puts the value, `None` removes the key.
pub(crate) type BatchOp = (Vec<u8>, Option<Vec<u8>>);

pub(crate) trait Engine: Send + Sync + 'static {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Up to `limit` entries with `start <= key < end`, in key order.
    fn scan(&self, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;
    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64>;
    /// Applies the ops in order and returns once the batch survives a crash or power loss.
    /// Readers may see the ops appear one by one while it runs, but after a crash the batch is
    /// there whole or not at all. Safe to call from several threads; batches apply in call order.
    fn commit(&self, batch: Vec<BatchOp>) -> Result<()>;
    /// Makes everything durable in its final form and takes no more commits (the store is
    /// closing).
    fn close(&self) -> Result<()>;
    /// The bytes the engine's files take on disk (an in-memory engine: the bytes it holds).
    fn size_bytes(&self) -> Result<u64>;
}

/// The ordered map the in-memory engines keep: values shared, so a copy of the whole map for an
/// image costs a pointer per key, not the data.
pub(crate) type Map = BTreeMap<Vec<u8>, Arc<[u8]>>;

/// A BTreeMap behind a lock: the engine for tests and `--ephemeral` servers, and the image
/// engine's state.
#[derive(Default)]
pub(crate) struct MemoryEngine {
    map: RwLock<Map>,
    /// The bytes of every key and value in `map`, kept by each commit (changed only under its
    /// write lock).
    bytes: AtomicU64,
}

impl MemoryEngine {
    pub(crate) fn with(map: Map) -> Self {
        let bytes = map.iter().map(|(k, v)| entry_bytes(k, v)).sum();
        MemoryEngine {
            map: RwLock::new(map),
            bytes: AtomicU64::new(bytes),
        }
    }

    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, Map>> {
        self.map
            .read()
            .map_err(|_| Error::Engine("memory engine lock poisoned".into()))
    }

    /// A copy of every key, cheap: values are shared.
    pub(crate) fn copy(&self) -> Result<Map> {
        Ok(self.read()?.clone())
    }

    /// How many keys there are, and the bytes of all keys and values.
    pub(crate) fn stored(&self) -> Result<(u64, u64)> {
        let map = self.read()?;
        Ok((map.len() as u64, self.bytes.load(Ordering::Acquire)))
    }
}

fn entry_bytes(key: &[u8], value: &[u8]) -> u64 {
    (key.len() + value.len()) as u64
}

/// Applies a batch to a map, in order; returns how the bytes of its keys and values changed.
pub(crate) fn apply(map: &mut Map, batch: Vec<BatchOp>) -> i64 {
    let mut delta = 0i64;
    for (k, v) in batch {
        let key_len = k.len() as i64;
        let added = v.as_ref().map_or(0, |v| key_len + v.len() as i64);
        let old = match v {
            Some(v) => map.insert(k, v.into()),
            None => map.remove(&k),
        };
        delta += added - old.map_or(0, |old| key_len + old.len() as i64);
    }
    delta
}

impl Engine for MemoryEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.read()?.get(key).map(|v| v.to_vec()))
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let map = self.read()?;
        Ok(map
            .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.to_vec()))
            .collect())
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        let map = self.read()?;
        Ok(map
            .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)))
            .count() as u64)
    }

    fn commit(&self, batch: Vec<BatchOp>) -> Result<()> {
        let mut map = self
            .map
            .write()
            .map_err(|_| Error::Engine("memory engine lock poisoned".into()))?;
        let delta = apply(&mut map, batch);
        self.bytes.store(
            self.bytes
                .load(Ordering::Acquire)
                .saturating_add_signed(delta),
            Ordering::Release,
        );
        Ok(())
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }

    fn size_bytes(&self) -> Result<u64> {
        Ok(self.stored()?.1)
    }
}
