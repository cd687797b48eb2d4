//! The byte-level engine under the local store: ordered keys, atomic durable batches.
//!
//! Engines know nothing of revisions or watches; `LocalStore` builds those on top, once, for every
//! engine. The in-memory engine lives here; the disk engines are in `image_engine.rs` and
//! `sled_engine.rs`.

use std::collections::BTreeMap;
use std::ops::Bound;
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
}

impl MemoryEngine {
    pub(crate) fn with(map: Map) -> Self {
        MemoryEngine {
            map: RwLock::new(map),
        }
    }

    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, Map>> {
        self.map
            .read()
            .map_err(|_| Error::Engine("memory engine lock poisoned".into()))
    }

    /// A copy of every key and value as of now.
    pub(crate) fn copy(&self) -> Result<Map> {
        Ok(self.read()?.clone())
    }
}

/// Applies a batch to a map, in order.
pub(crate) fn apply(map: &mut Map, batch: Vec<BatchOp>) {
    for (k, v) in batch {
        match v {
            Some(v) => map.insert(k, v.into()),
            None => map.remove(&k),
        };
    }
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
        apply(&mut map, batch);
        Ok(())
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }

    fn size_bytes(&self) -> Result<u64> {
        Ok(self
            .read()?
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum())
    }
}
