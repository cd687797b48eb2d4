//! A controller's own writes laid over an informer's cache (client-go's
//! `NewIntegerResourceVersionMutationCache`): the watch may deliver a controller's status write
//! after the controller's next sync has started, and a sync that reads its own past state from a
//! stale cache acts twice (the Job controller recreated a pod for an index it had just counted as
//! succeeded). Reading through this cache, a controller never sees an object older than what it
//! last wrote.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::Resource;

use super::key_of;

/// The newest object each key was written as, until the informer's cache catches up.
#[derive(Debug)]
pub struct MutationCache<K> {
    written: Mutex<HashMap<String, Arc<K>>>,
}

impl<K> Default for MutationCache<K> {
    fn default() -> Self {
        MutationCache {
            written: Mutex::new(HashMap::new()),
        }
    }
}

/// A resourceVersion as a number (k1s's are integers on every backend); none sorts lowest.
fn revision<K: Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

impl<K: Resource> MutationCache<K> {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<K>>> {
        self.written
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records what the server answered to a write of the object.
    pub fn mutated(&self, obj: K) {
        let key = key_of(&obj);
        let mut entries = self.entries();
        let newer = entries
            .get(&key)
            .is_none_or(|old| revision(old.as_ref()) < revision(&obj));
        if newer {
            entries.insert(key, Arc::new(obj));
        }
    }

    /// The newer of `cached` (the informer's copy) and the last write of the same object (same
    /// UID); a write the cache has caught up with is forgotten.
    pub fn newest(&self, cached: Arc<K>) -> Arc<K> {
        let key = key_of(cached.as_ref());
        let mut entries = self.entries();
        match entries.get(&key) {
            Some(w)
                if w.meta().uid == cached.meta().uid
                    && revision(w.as_ref()) > revision(cached.as_ref()) =>
            {
                w.clone()
            }
            Some(_) => {
                entries.remove(&key);
                cached
            }
            None => cached,
        }
    }

    /// Forgets `key` (its object was deleted).
    pub fn forget(&self, key: &str) {
        self.entries().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(uid: &str, rv: &str) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some("ns".into());
        c.metadata.name = Some("c".into());
        c.metadata.uid = Some(uid.into());
        c.metadata.resource_version = Some(rv.into());
        c
    }

    #[test]
    fn own_writes_win_until_the_cache_catches_up() {
        let cache = MutationCache::default();
        cache.mutated(cm("u1", "7"));
        // An older write answered late does not replace a newer one.
        cache.mutated(cm("u1", "6"));
        let seen = cache.newest(Arc::new(cm("u1", "5")));
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("7"));
        // The cache caught up: its copy is used and the write forgotten.
        let seen = cache.newest(Arc::new(cm("u1", "8")));
        assert_eq!(seen.metadata.resource_version.as_deref(), Some("8"));
        assert!(cache.entries().is_empty());
        // A recreated object (another UID) is never shadowed by the old one's write.
        cache.mutated(cm("u1", "9"));
        let seen = cache.newest(Arc::new(cm("u2", "3")));
        assert_eq!(seen.metadata.uid.as_deref(), Some("u2"));
        cache.mutated(cm("u2", "10"));
        cache.forget("ns/c");
        assert!(cache.entries().is_empty());
    }
}
