//! The aggregation layer (apiregistration.k8s.io/v1, upstream's kube-aggregator): an
//! APIService with a `spec.service` hands its group/version to a backend API server.
//!
//! - `mod` (here): the APIServices followed from the store, the routing table built from them,
//!   and what the backends told the availability check (their resources for discovery, their
//!   OpenAPI v3 document), merged into this server's discovery and OpenAPI.
//! - `proxy`: the request forwarding (front-proxy certificate, `X-Remote-*` headers, streaming
//!   bodies for watches, connection upgrades).
//! - `availability`: upstream's AvailableConditionController, which writes the `Available`
//!   condition that routing obeys (an unavailable backend answers 503 for its group only).
//! - `transport`: Service resolution and TLS towards a backend.
//! - `autoregister`: the local APIServices of built-in and custom resource group versions.
//!
//! Local APIServices (`service: null`) are served by this server's own handlers, as upstream.

pub mod autoregister;
mod availability;
pub mod proxy;
pub mod transport;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use k1s_apimachinery::{catalog, meta};
use serde_json::Value;

use crate::discovery::{ServedApis, ServedResource, ServedSubresource};
use crate::registry::Registry;
use crate::registry::informer::{self, Change};
use transport::{ProxyIdentity, ServiceRef};

/// Remote APIServices by (group, version).
type RoutingTable = BTreeMap<(String, String), Arc<Remote>>;

/// An APIService whose group/version a backend serves.
#[derive(Debug)]
pub struct Remote {
    /// `<version>.<group>`.
    pub name: String,
    pub group: String,
    pub version: String,
    pub service: ServiceRef,
    /// The `Available` condition is `True`.
    pub available: bool,
    pub group_priority_minimum: i64,
    pub version_priority: i64,
    /// TLS towards the backend, or why it could not be built (a bad `caBundle`).
    tls: Result<Arc<rustls::ClientConfig>, String>,
}

/// What the last successful availability check fetched from a backend.
#[derive(Debug, Clone, Default)]
struct Discovered {
    resources: Vec<ServedResource>,
    /// The backend's `/openapi/v3/apis/<group>/<version>` document and its hash.
    openapi_v3: Option<(Bytes, String)>,
    /// The backend's `/openapi/v2`: its paths under the group/version and its definitions.
    openapi_v2: Option<Arc<Value>>,
    /// The OpenAPI documents were fetched (they are fetched again when the resources change).
    openapi_fetched: bool,
}

/// The OpenAPI documents a check fetched from a backend.
#[derive(Debug, Default)]
pub(crate) struct BackendOpenApi {
    pub v3: Option<(Bytes, String)>,
    pub v2: Option<Value>,
}

/// The aggregator's state, shared by the router, the proxy and the availability check.
pub struct Aggregator {
    registry: Registry,
    identity: Option<ProxyIdentity>,
    remotes: RwLock<Arc<RoutingTable>>,
    /// By APIService name.
    discovered: RwLock<BTreeMap<String, Discovered>>,
    /// Bumped on every change of `remotes` or `discovered`.
    generation: AtomicU64,
    /// The merged discovery, keyed by the custom-resource discovery it was built on and the
    /// generation.
    merged: Mutex<Option<(usize, u64, Arc<ServedApis>)>>,
    /// Wakes the availability check when APIServices change.
    changed: tokio::sync::Notify,
    /// `/openapi/v2` with the backends' documents: keyed by the base document and the
    /// generation; JSON, and protobuf once asked for.
    merged_v2: Mutex<Option<V2Cache>>,
}

type V2Cache = ((usize, u64), Bytes, Option<Bytes>);

impl Aggregator {
    /// `identity` is the front-proxy client certificate presented to backends.
    pub fn new(registry: Registry, identity: Option<ProxyIdentity>) -> Arc<Aggregator> {
        Arc::new(Aggregator {
            registry,
            identity,
            remotes: RwLock::default(),
            discovered: RwLock::default(),
            generation: AtomicU64::new(0),
            merged: Mutex::new(None),
            changed: tokio::sync::Notify::new(),
            merged_v2: Mutex::new(None),
        })
    }

    /// Follows APIServices and runs the availability check until `shutdown`.
    pub fn start(self: &Arc<Self>, shutdown: tokio::sync::watch::Receiver<bool>) {
        let Some(info) = catalog::find("apiregistration.k8s.io", "v1", "apiservices") else {
            return;
        };
        let me = self.clone();
        let mut objects: BTreeMap<String, Value> = BTreeMap::new();
        tokio::spawn(informer::run(
            self.registry.clone(),
            info,
            shutdown.clone(),
            move |change| {
                let name = |o: &Value| meta::name(o).unwrap_or_default().to_string();
                match change {
                    Change::Listed(items) => {
                        objects = items.into_iter().map(|o| (name(&o), o)).collect();
                    }
                    Change::Upserted(o) => {
                        objects.insert(name(&o), (*o).clone());
                    }
                    Change::Deleted(o) => {
                        objects.remove(&name(&o));
                    }
                }
                me.set_api_services(objects.values());
                std::future::ready(())
            },
        ));
        autoregister::follow_crds(self.registry.clone(), shutdown.clone());
        tokio::spawn(availability::run(self.clone(), shutdown));
    }

    /// Rebuilds the routing table from every APIService object.
    fn set_api_services<'a>(&self, objects: impl Iterator<Item = &'a Value>) {
        let mut remotes = BTreeMap::new();
        for obj in objects {
            if let Some(remote) = self.parse_remote(obj) {
                remotes.insert(
                    (remote.group.clone(), remote.version.clone()),
                    Arc::new(remote),
                );
            }
        }
        let names: Vec<&str> = remotes.values().map(|r| r.name.as_str()).collect();
        self.discovered
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|n, _| names.contains(&n.as_str()));
        *self.remotes.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(remotes);
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_one();
    }

    fn parse_remote(&self, obj: &Value) -> Option<Remote> {
        let spec = obj.get("spec")?;
        let service = spec.get("service").filter(|s| s.is_object())?;
        fn text<'a>(v: &'a Value, k: &str) -> &'a str {
            v.get(k).and_then(Value::as_str).unwrap_or_default()
        }
        let available = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        let insecure = spec.get("insecureSkipTLSVerify") == Some(&Value::Bool(true));
        Some(Remote {
            name: meta::name(obj).unwrap_or_default().to_string(),
            group: text(spec, "group").to_string(),
            version: text(spec, "version").to_string(),
            service: ServiceRef {
                namespace: text(service, "namespace").to_string(),
                name: text(service, "name").to_string(),
                port: service
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            },
            available,
            group_priority_minimum: spec
                .get("groupPriorityMinimum")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
            version_priority: spec
                .get("versionPriority")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
            tls: transport::client_config(
                spec.get("caBundle").and_then(Value::as_str),
                insecure,
                self.identity.as_ref(),
            ),
        })
    }

    fn remotes(&self) -> Arc<RoutingTable> {
        self.remotes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The remote APIService that serves `path` (`/apis/<group>/<version>[/...]`), if any.
    pub fn remote_for(&self, path: &str) -> Option<Arc<Remote>> {
        let rest = path.strip_prefix("/apis/")?;
        let mut parts = rest.split('/');
        let (group, version) = (parts.next()?, parts.next()?);
        if version.is_empty() {
            return None;
        }
        let remotes = self.remotes.read().unwrap_or_else(|p| p.into_inner());
        if remotes.is_empty() {
            return None;
        }
        remotes
            .get(&(group.to_string(), version.to_string()))
            .cloned()
    }

    /// Everything served, for discovery: built-ins, custom resources, and the aggregated
    /// group/versions with the resources their backends listed.
    pub fn served_apis(&self) -> Arc<ServedApis> {
        let base = crate::apiextensions::served_apis();
        let remotes = self.remotes();
        if remotes.is_empty() {
            return base;
        }
        let key = (
            Arc::as_ptr(&base) as usize,
            self.generation.load(Ordering::Acquire),
        );
        let mut merged = self.merged.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((ptr, generation, apis)) = merged.as_ref()
            && (*ptr, *generation) == key
        {
            return apis.clone();
        }
        let mut apis = (*base).clone();
        let discovered = self.discovered.read().unwrap_or_else(|p| p.into_inner());
        for remote in remotes.values() {
            apis.add_group_version(&remote.group, &remote.version);
            for r in discovered
                .get(&remote.name)
                .map(|d| d.resources.as_slice())
                .unwrap_or_default()
            {
                apis.add(r.clone());
            }
        }
        // Discovery order as upstream's aggregator: by the APIServices' priorities.
        let remote_priority = |group: &str, version: Option<&str>| {
            remotes
                .values()
                .filter(|r| r.group == group && version.is_none_or(|v| r.version == v))
                .map(|r| (r.group_priority_minimum, r.version_priority))
                .max()
        };
        apis.order_by_priority(
            |g| {
                remote_priority(g, None)
                    .map_or_else(|| autoregister::local_priority(g, "").0, |p| p.0)
            },
            |g, v| {
                remote_priority(g, Some(v))
                    .unwrap_or_else(|| autoregister::local_priority(g, v))
                    .1
            },
        );
        let apis = Arc::new(apis);
        *merged = Some((key.0, key.1, apis.clone()));
        apis
    }

    /// `/openapi/v3` with the aggregated group/versions whose backend gave a document.
    pub fn openapi_v3_index(&self, index: Vec<u8>) -> Vec<u8> {
        let discovered = self.discovered.read().unwrap_or_else(|p| p.into_inner());
        if discovered.values().all(|d| d.openapi_v3.is_none()) {
            return index;
        }
        let Ok(mut doc) = serde_json::from_slice::<Value>(&index) else {
            return index;
        };
        for remote in self.remotes().values() {
            if let Some((_, hash)) = discovered
                .get(&remote.name)
                .and_then(|d| d.openapi_v3.as_ref())
            {
                let path = format!("apis/{}/{}", remote.group, remote.version);
                doc["paths"][&path] = serde_json::json!({
                    "serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")
                });
            }
        }
        serde_json::to_vec(&doc).unwrap_or(index)
    }

    /// `/openapi/v3/apis/<group>/<version>` of an aggregated group/version, and its hash.
    pub fn openapi_v3_document(&self, path: &str) -> Option<(Bytes, String)> {
        let rest = path.trim_matches('/').strip_prefix("apis/")?;
        let (group, version) = rest.split_once('/')?;
        let remote = self
            .remotes()
            .get(&(group.to_string(), version.to_string()))?
            .clone();
        self.discovered
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&remote.name)?
            .openapi_v3
            .clone()
    }

    /// Records what a check fetched; discovery and OpenAPI change only when it differs.
    /// `openapi` is `None` when the check did not fetch the documents (kept as they were).
    fn set_discovered(
        &self,
        name: &str,
        resources: Vec<ServedResource>,
        openapi: Option<BackendOpenApi>,
    ) {
        let mut discovered = self.discovered.write().unwrap_or_else(|p| p.into_inner());
        let entry = discovered.entry(name.to_string()).or_default();
        let mut changed = entry.resources != resources;
        entry.resources = resources;
        if let Some(fetched) = openapi {
            let v2 = fetched.v2.map(Arc::new);
            changed |= entry.openapi_v3.as_ref().map(|d| &d.1) != fetched.v3.as_ref().map(|d| &d.1)
                || entry.openapi_v2 != v2;
            entry.openapi_v3 = fetched.v3;
            entry.openapi_v2 = v2;
            entry.openapi_fetched = true;
        }
        if changed {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether the documents of `name` were fetched for exactly these resources.
    fn openapi_current(&self, name: &str, resources: &[ServedResource]) -> bool {
        self.discovered
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .is_some_and(|d| d.openapi_fetched && d.resources == resources)
    }

    /// `/openapi/v2` in `format`: this server's document (built-ins and custom resources) with
    /// the paths and definitions of the backends that serve one.
    pub fn openapi_v2(&self, format: crate::openapi::V2Format) -> Bytes {
        let backends: Vec<Arc<Value>> = self
            .discovered
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter_map(|d| d.openapi_v2.clone())
            .collect();
        if backends.is_empty() {
            return crate::apiextensions::openapi_v2::document(format);
        }
        let base = crate::apiextensions::openapi_v2::document(crate::openapi::V2Format::Json);
        let key = (
            base.as_ptr() as usize,
            self.generation.load(Ordering::Acquire),
        );
        let mut cache = self.merged_v2.lock().unwrap_or_else(|p| p.into_inner());
        if cache.as_ref().is_none_or(|c| c.0 != key) {
            let mut doc: Value = serde_json::from_slice(&base).unwrap_or_default();
            for b in &backends {
                for section in ["paths", "definitions"] {
                    for (k, v) in b[section].as_object().into_iter().flatten() {
                        if doc[section].get(k).is_none() {
                            doc[section][k] = v.clone();
                        }
                    }
                }
            }
            let json = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
            *cache = Some((key, json, None));
        }
        let Some((_, json, proto)) = cache.as_mut() else {
            return base;
        };
        match format {
            crate::openapi::V2Format::Json => json.clone(),
            crate::openapi::V2Format::Protobuf => proto
                .get_or_insert_with(|| {
                    let doc: Value = serde_json::from_slice(json).unwrap_or_default();
                    crate::openapi::v2_protobuf_of(&doc)
                })
                .clone(),
        }
    }
}

/// The resources of a backend's `APIResourceList`, as discovery describes them
/// (`flunders/status` entries become subresources of `flunders`).
fn resources_of(group: &str, version: &str, list: &Value) -> Vec<ServedResource> {
    let entries: Vec<&Value> = list
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let text = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut out: Vec<ServedResource> = entries
        .iter()
        .filter(|r| !text(r, "name").is_empty() && !text(r, "name").contains('/'))
        .map(|r| ServedResource {
            group: group.to_string(),
            version: version.to_string(),
            resource: text(r, "name"),
            singular: text(r, "singularName"),
            kind: text(r, "kind"),
            namespaced: r.get("namespaced") == Some(&Value::Bool(true)),
            verbs: strings(&r["verbs"]),
            short_names: strings(&r["shortNames"]),
            categories: strings(&r["categories"]),
            storage_version_hash: r
                .get("storageVersionHash")
                .and_then(Value::as_str)
                .map(str::to_string),
            subresources: Vec::new(),
        })
        .collect();
    for r in &entries {
        let name = text(r, "name");
        let Some((parent, sub)) = name.split_once('/') else {
            continue;
        };
        if let Some(p) = out.iter_mut().find(|p| p.resource == parent) {
            p.subresources.push(ServedSubresource {
                name: sub.to_string(),
                group: r
                    .get("group")
                    .and_then(Value::as_str)
                    .unwrap_or(group)
                    .to_string(),
                version: r
                    .get("version")
                    .and_then(Value::as_str)
                    .unwrap_or(version)
                    .to_string(),
                kind: text(r, "kind"),
                verbs: strings(&r["verbs"]),
            });
        }
    }
    out
}
