//! An informer's cache: objects by key (`namespace/name`, or `name` for cluster-scoped ones) held
//! as `Arc`s and shared by every reader, with indexes (namespace always; owner UID, labels,
//! `spec.nodeName` or any function added with `add_index`). One writer (the informer), many
//! readers; readers never mutate what they get.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use kube::Resource;

/// Maps an object to the index values it is filed under.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The namespace index, present in every store.
pub const NAMESPACE_INDEX: &str = "namespace";

/// client-go's MetaNamespaceKeyFunc: `namespace/name`, or `name` when cluster-scoped.
pub fn key_of<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// Splits a key into namespace (if any) and name.
pub fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, key),
    }
}

struct Index<K> {
    func: IndexFn<K>,
    entries: HashMap<String, HashSet<String>>,
}

struct Inner<K> {
    objects: HashMap<String, Arc<K>>,
    indexes: HashMap<String, Index<K>>,
}

/// The indexed cache of one informer.
pub struct Store<K> {
    inner: RwLock<Inner<K>>,
}

impl<K: Resource + 'static> std::fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("len", &self.len()).finish()
    }
}

impl<K: Resource + 'static> Default for Store<K> {
    fn default() -> Self {
        let mut indexes = HashMap::new();
        let by_namespace: IndexFn<K> =
            Arc::new(|o: &K| o.meta().namespace.clone().into_iter().collect());
        indexes.insert(
            NAMESPACE_INDEX.to_string(),
            Index {
                func: by_namespace,
                entries: HashMap::new(),
            },
        );
        Store {
            inner: RwLock::new(Inner {
                objects: HashMap::new(),
                indexes,
            }),
        }
    }
}

impl<K: Resource + 'static> Store<K> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<K>> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<K>> {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.read().objects.get(key).cloned()
    }

    pub fn get_named(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        match namespace {
            Some(ns) => self.get(&format!("{ns}/{name}")),
            None => self.get(name),
        }
    }

    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().objects.values().cloned().collect()
    }

    pub fn keys(&self) -> Vec<String> {
        self.read().objects.keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The objects of one namespace.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.by_index(NAMESPACE_INDEX, namespace)
    }

    /// The objects filed under `value` in the index `name` (none if the index does not exist).
    pub fn by_index(&self, name: &str, value: &str) -> Vec<Arc<K>> {
        let inner = self.read();
        let Some(keys) = inner.indexes.get(name).and_then(|i| i.entries.get(value)) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|k| inner.objects.get(k).cloned())
            .collect()
    }

    /// Adds an index (or replaces one of the same name), filing every cached object under it.
    pub fn add_index(&self, name: &str, func: IndexFn<K>) {
        let mut inner = self.write();
        let mut entries: HashMap<String, HashSet<String>> = HashMap::new();
        for (key, obj) in &inner.objects {
            for value in func(obj) {
                entries.entry(value).or_default().insert(key.clone());
            }
        }
        inner
            .indexes
            .insert(name.to_string(), Index { func, entries });
    }

    /// Inserts or replaces an object; returns the previous one.
    pub(crate) fn upsert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key = key_of(obj.as_ref());
        let mut inner = self.write();
        let old = inner.objects.insert(key.clone(), obj.clone());
        let Inner { indexes, .. } = &mut *inner;
        for index in indexes.values_mut() {
            if let Some(old) = &old {
                unfile(index, old, &key);
            }
            for value in (index.func)(&obj) {
                index.entries.entry(value).or_default().insert(key.clone());
            }
        }
        old
    }

    /// Removes an object by key; returns it.
    pub(crate) fn remove(&self, key: &str) -> Option<Arc<K>> {
        let mut inner = self.write();
        let old = inner.objects.remove(key)?;
        for index in inner.indexes.values_mut() {
            unfile(index, &old, key);
        }
        Some(old)
    }

    /// Replaces the whole content (after a list); returns what changed, as deltas.
    pub(crate) fn replace(&self, objects: Vec<Arc<K>>) -> Vec<super::Delta<K>> {
        let mut deltas = Vec::new();
        let mut seen = HashSet::new();
        for obj in objects {
            let key = key_of(obj.as_ref());
            seen.insert(key);
            match self.upsert(obj.clone()) {
                None => deltas.push(super::Delta::Added(obj)),
                Some(old) => {
                    if old.meta().resource_version != obj.meta().resource_version {
                        deltas.push(super::Delta::Updated { old, new: obj });
                    }
                }
            }
        }
        for key in self.keys() {
            if !seen.contains(&key)
                && let Some(old) = self.remove(&key)
            {
                deltas.push(super::Delta::Deleted(old));
            }
        }
        deltas
    }
}

fn unfile<K>(index: &mut Index<K>, obj: &K, key: &str) {
    for value in (index.func)(obj) {
        if let Some(keys) = index.entries.get_mut(&value) {
            keys.remove(key);
            if keys.is_empty() {
                index.entries.remove(&value);
            }
        }
    }
}

/// Files objects under the UIDs of their owners.
pub fn owner_uid_index<K: Resource>() -> IndexFn<K> {
    Arc::new(|o: &K| {
        o.meta()
            .owner_references
            .iter()
            .flatten()
            .map(|r| r.uid.clone())
            .collect()
    })
}

/// Files objects under `key=value` for the label `key`.
pub fn label_index<K: Resource>(key: &'static str) -> IndexFn<K> {
    Arc::new(move |o: &K| {
        o.meta()
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(|v| format!("{key}={v}"))
            .into_iter()
            .collect()
    })
}

/// Files pods under `spec.nodeName` (unscheduled pods under "").
pub fn pod_node_name_index() -> IndexFn<k8s_openapi::api::core::v1::Pod> {
    Arc::new(|p: &k8s_openapi::api::core::v1::Pod| {
        vec![
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default(),
        ]
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;
    use crate::informer::Delta;

    fn cm(ns: &str, name: &str, rv: &str, owner: Option<&str>) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                owner_references: owner.map(|uid| {
                    vec![OwnerReference {
                        uid: uid.into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn indexes_follow_updates_and_removals() {
        let s = Store::<ConfigMap>::default();
        s.add_index("owner", owner_uid_index());
        s.upsert(cm("a", "x", "1", Some("u1")));
        s.upsert(cm("b", "y", "2", Some("u1")));
        assert_eq!(s.by_index("owner", "u1").len(), 2);
        assert_eq!(s.list_namespace("a").len(), 1);
        // The owner changes: the object moves between index entries.
        s.upsert(cm("a", "x", "3", Some("u2")));
        assert_eq!(s.by_index("owner", "u1").len(), 1);
        assert_eq!(s.by_index("owner", "u2").len(), 1);
        s.remove("a/x");
        assert!(s.by_index("owner", "u2").is_empty());
        assert!(s.list_namespace("a").is_empty());
        assert_eq!(s.get("b/y").map(|o| key_of(o.as_ref())), Some("b/y".into()));
    }

    #[test]
    fn an_index_added_later_files_existing_objects() {
        let s = Store::<ConfigMap>::default();
        s.upsert(cm("a", "x", "1", Some("u1")));
        s.add_index("owner", owner_uid_index());
        assert_eq!(s.by_index("owner", "u1").len(), 1);
    }

    #[test]
    fn replace_reports_adds_updates_and_deletes() {
        let s = Store::<ConfigMap>::default();
        s.upsert(cm("a", "keep", "1", None));
        s.upsert(cm("a", "change", "1", None));
        s.upsert(cm("a", "gone", "1", None));
        let deltas = s.replace(vec![
            cm("a", "keep", "1", None),
            cm("a", "change", "2", None),
            cm("a", "new", "3", None),
        ]);
        let mut kinds: Vec<String> = deltas
            .iter()
            .map(|d| match d {
                Delta::Added(o) => format!("add {}", key_of(o.as_ref())),
                Delta::Updated { new, .. } => format!("update {}", key_of(new.as_ref())),
                Delta::Deleted(o) => format!("delete {}", key_of(o.as_ref())),
            })
            .collect();
        kinds.sort();
        assert_eq!(kinds, ["add a/new", "delete a/gone", "update a/change"]);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn pods_are_indexed_by_node() {
        let s = Store::<Pod>::default();
        s.add_index("node", pod_node_name_index());
        let pod = |name: &str, node: Option<&str>| {
            Arc::new(Pod {
                metadata: ObjectMeta {
                    namespace: Some("d".into()),
                    name: Some(name.into()),
                    ..Default::default()
                },
                spec: Some(PodSpec {
                    node_name: node.map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            })
        };
        s.upsert(pod("a", Some("n1")));
        s.upsert(pod("b", None));
        assert_eq!(s.by_index("node", "n1").len(), 1);
        assert_eq!(s.by_index("node", "").len(), 1);
        assert_eq!(split_key("d/a"), (Some("d"), "a"));
        assert_eq!(split_key("n1"), (None, "n1"));
    }
}
