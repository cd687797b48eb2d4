//! The garbage collector (upstream `pkg/controller/garbagecollector`): an owner/dependent graph
//! over every resource discovery lists (metadata-only informers, rediscovered every 30 s), and
//! one reconcile per object UID:
//! - a dependent whose owners are all gone (confirmed by a live GET: absent, or another UID) is
//!   deleted (background); one with some live owners loses only its dangling references;
//! - an owner being deleted with the `orphan` finalizer: its dependents lose their references
//!   to it, then the finalizer is removed;
//! - an owner being deleted with the `foregroundDeletion` finalizer: its blocking dependents
//!   are deleted first (those with another live owner only lose the reference; a cycle is
//!   broken by unblocking references); once none blocks (`blockOwnerDeletion`), the finalizer
//!   is removed.
//!
//! An object whose owner exists is never deleted.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, PartialObjectMeta};
use kube::discovery::{Discovery, Scope, verbs};
use kube::{Client, ResourceExt};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::events::WARNING;
use crate::informer::Delta;

const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";
/// Resources the collector leaves alone (upstream's DefaultIgnoredResources: events).
const IGNORED: &[(&str, &str)] = &[("", "events"), ("events.k8s.io", "events")];
/// How often the set of watched resources is refreshed from discovery (upstream: 30 s).
const REDISCOVERY: Duration = Duration::from_secs(30);

/// One object in the graph.
#[derive(Clone, Debug)]
struct Node {
    resource: Arc<ApiResource>,
    namespaced: bool,
    namespace: Option<String>,
    name: String,
    owners: Vec<OwnerReference>,
    finalizers: Vec<String>,
    being_deleted: bool,
}

#[derive(Default)]
struct Graph {
    nodes: HashMap<String, Node>,
    /// owner UID -> dependent UIDs.
    dependents: HashMap<String, HashSet<String>>,
}

impl Graph {
    fn upsert(&mut self, uid: String, node: Node) {
        self.remove(&uid);
        for o in &node.owners {
            self.dependents
                .entry(o.uid.clone())
                .or_default()
                .insert(uid.clone());
        }
        self.nodes.insert(uid, node);
    }

    fn remove(&mut self, uid: &str) -> Option<Node> {
        let old = self.nodes.remove(uid)?;
        for o in &old.owners {
            if let Some(d) = self.dependents.get_mut(&o.uid) {
                d.remove(uid);
                if d.is_empty() {
                    self.dependents.remove(&o.uid);
                }
            }
        }
        Some(old)
    }

    fn dependents_of(&self, uid: &str) -> Vec<(String, Node)> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| Some((d.clone(), self.nodes.get(d)?.clone())))
            .collect()
    }
}

struct GarbageCollector {
    client: Client,
    graph: Arc<Mutex<Graph>>,
    /// `apiVersion/kind` -> resource and scope, from discovery.
    kinds: Arc<Mutex<HashMap<String, (ApiResource, bool)>>>,
    recorder: crate::events::EventRecorder,
}

pub fn start(ctx: ControllerContext) {
    let graph: Arc<Mutex<Graph>> = Arc::default();
    let kinds: Arc<Mutex<HashMap<String, (ApiResource, bool)>>> = Arc::default();
    let queue = ctx.queue();
    let reconciler = Arc::new(GarbageCollector {
        client: ctx.client.clone(),
        graph: graph.clone(),
        kinds: kinds.clone(),
        recorder: ctx.recorder.clone(),
    });
    let workers = ctx.workers("gc", 20);
    let client = ctx.client.clone();
    let watch_ctx = ctx.clone();
    tokio::spawn(async move {
        let mut watched: HashSet<String> = HashSet::new();
        let mut started = false;
        let mut shutdown = watch_ctx.shutdown.clone();
        loop {
            let discovered = tokio::time::timeout(
                Duration::from_secs(10),
                Discovery::new(client.clone()).run_aggregated(),
            )
            .await
            .unwrap_or_else(|_| {
                Err(kube::Error::Discovery(
                    kube::error::DiscoveryError::MissingResource(
                        "discovery timed out after 10 s".into(),
                    ),
                ))
            });
            match discovered {
                Ok(discovery) => {
                    let mut map = HashMap::new();
                    for (ar, caps) in discovery.groups().flat_map(|g| g.recommended_resources()) {
                        let namespaced = caps.scope == Scope::Namespaced;
                        map.insert(
                            format!("{}/{}", ar.api_version, ar.kind),
                            (ar.clone(), namespaced),
                        );
                        let deletable = [verbs::LIST, verbs::WATCH, verbs::DELETE]
                            .iter()
                            .all(|v| caps.supports_operation(v))
                            && !IGNORED.contains(&(ar.group.as_str(), ar.plural.as_str()));
                        let key = format!("{}/{}", ar.api_version, ar.plural);
                        if deletable && watched.insert(key) {
                            follow(&watch_ctx, &graph, &queue, ar, namespaced);
                        }
                    }
                    // Every version of a group resolves owners too (owners may name any served version).
                    for g in discovery.groups() {
                        for v in g.versions() {
                            for (ar, caps) in g.versioned_resources(v) {
                                let namespaced = caps.scope == Scope::Namespaced;
                                map.entry(format!("{}/{}", ar.api_version, ar.kind))
                                    .or_insert((ar, namespaced));
                            }
                        }
                    }
                    *kinds
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = map;
                    watch_ctx.factory.start();
                    if !started {
                        started = true;
                        watch_ctx.run_workers(reconciler.clone(), queue.clone(), workers);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "garbage collector: discovery failed"),
            }
            // Until the first discovery worked, try again soon.
            let wait = if started {
                REDISCOVERY
            } else {
                Duration::from_secs(1)
            };
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    });
}

/// Follows one resource: its objects join the graph, and every change enqueues what it may
/// affect (the object, its owners, its dependents).
fn follow(
    ctx: &ControllerContext,
    graph: &Arc<Mutex<Graph>>,
    queue: &crate::workqueue::WorkQueue,
    resource: ApiResource,
    namespaced: bool,
) {
    let informer = ctx.factory.metadata_informer(&resource);
    let (graph, queue) = (graph.clone(), queue.clone());
    let resource = Arc::new(resource);
    informer.add_handler(move |d: &Delta<PartialObjectMeta<DynamicObject>>| {
        let obj = d.object();
        let Some(uid) = obj.metadata.uid.clone() else {
            return;
        };
        let mut g = graph
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match d {
            Delta::Deleted(_) => {
                let old = g.remove(&uid);
                // Its dependents may now be orphans; owners waiting in the foreground may go.
                for (dep, _) in g.dependents_of(&uid) {
                    queue.add(dep);
                }
                for o in old.iter().flat_map(|n| &n.owners) {
                    queue.add(o.uid.clone());
                }
            }
            _ => {
                let node = Node {
                    resource: resource.clone(),
                    namespaced,
                    namespace: obj.metadata.namespace.clone(),
                    name: obj.name_any(),
                    owners: obj.metadata.owner_references.clone().unwrap_or_default(),
                    finalizers: obj.metadata.finalizers.clone().unwrap_or_default(),
                    being_deleted: obj.metadata.deletion_timestamp.is_some(),
                };
                let interesting = !node.owners.is_empty()
                    || (node.being_deleted
                        && node
                            .finalizers
                            .iter()
                            .any(|f| f == ORPHAN || f == FOREGROUND));
                let owners: Vec<String> = node.owners.iter().map(|o| o.uid.clone()).collect();
                let being_deleted = node.being_deleted;
                let old_owners = g.nodes.get(&uid).map(|n| n.owners.clone());
                let references_changed = old_owners.as_ref().is_some_and(|o| *o != node.owners);
                g.upsert(uid.clone(), node);
                if interesting {
                    queue.add(uid.clone());
                }
                if being_deleted || references_changed {
                    // A dependent going away, or dropping or unblocking its reference, may
                    // unblock a foreground owner.
                    let former = old_owners.into_iter().flatten().map(|o| o.uid);
                    for o in owners.into_iter().chain(former) {
                        queue.add(o);
                    }
                }
            }
        }
    });
}

/// What a live lookup says about one owner reference.
enum OwnerState {
    Solid,
    Dangling,
    /// Being deleted in the foreground, and this reference blocks it.
    Waiting,
}

impl GarbageCollector {
    fn node(&self, uid: &str) -> Option<Node> {
        self.graph
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .nodes
            .get(uid)
            .cloned()
    }

    fn dependents(&self, uid: &str) -> Vec<(String, Node)> {
        self.graph
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .dependents_of(uid)
    }

    fn api(&self, node: &Node) -> Api<DynamicObject> {
        match (&node.namespace, node.namespaced) {
            (Some(ns), true) => Api::namespaced_with(self.client.clone(), ns, &*node.resource),
            _ => Api::all_with(self.client.clone(), &*node.resource),
        }
    }

    fn meta_api(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
    ) -> Api<PartialObjectMeta<DynamicObject>> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Looks the owner up live, in the dependent's namespace (owners never cross namespaces).
    async fn owner_state(
        &self,
        dependent: &Node,
        owner: &OwnerReference,
    ) -> Result<OwnerState, Error> {
        let kind = self
            .kinds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&format!("{}/{}", owner.api_version, owner.kind))
            .cloned();
        let Some((resource, owner_namespaced)) = kind else {
            // An owner kind discovery has not shown (yet) is retried, never taken as absent, as
            // upstream: a dependent whose owner exists must never be deleted.
            return Err(Error::Other(format!(
                "owner kind {}/{} is not served (yet)",
                owner.api_version, owner.kind
            )));
        };
        let namespace = match (owner_namespaced, dependent.namespaced) {
            (true, true) => dependent.namespace.as_deref(),
            (false, _) => None,
            (true, false) => {
                // A cluster-scoped dependent cannot have a namespaced owner.
                self.event_invalid_owner(dependent, owner);
                return Ok(OwnerState::Dangling);
            }
        };
        match self
            .meta_api(&resource, namespace)
            .get_metadata_opt(&owner.name)
            .await?
        {
            Some(live) if live.metadata.uid.as_deref() == Some(owner.uid.as_str()) => {
                let foreground = live.metadata.deletion_timestamp.is_some()
                    && live
                        .metadata
                        .finalizers
                        .iter()
                        .flatten()
                        .any(|f| f == FOREGROUND);
                if foreground && owner.block_owner_deletion == Some(true) {
                    Ok(OwnerState::Waiting)
                } else {
                    Ok(OwnerState::Solid)
                }
            }
            _ => Ok(OwnerState::Dangling),
        }
    }

    fn event_invalid_owner(&self, dependent: &Node, owner: &OwnerReference) {
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some(dependent.resource.api_version.clone()),
            kind: Some(dependent.resource.kind.clone()),
            name: Some(dependent.name.clone()),
            namespace: dependent.namespace.clone(),
            ..Default::default()
        };
        self.recorder.event(
            &reference,
            WARNING,
            "OwnerRefInvalidNamespace",
            &format!(
                "ownerRef [{}/{}, namespace: , name: {}, uid: {}] does not exist in namespace \"\"",
                owner.api_version, owner.kind, owner.name, owner.uid
            ),
        );
    }

    /// A dependent with owners, as upstream's attemptToDeleteItem: with a live owner it keeps
    /// living and loses only its references to owners that are gone or waiting for their
    /// dependents to go; an object some owner waits for and that has dependents of its own goes
    /// in the foreground (its references unblocked first when one of those dependents waits as
    /// well, which breaks a cycle); otherwise it is deleted, honouring its own finalizers.
    async fn attempt_to_delete(&self, uid: &str, node: &Node) -> Result<Action, Error> {
        // As upstream's attemptToDeleteItem, the object is read from the API first: the graph
        // may not have seen its latest owner references yet (an owner deleted with orphan
        // policy has just removed itself from them), and deciding on the stale ones would
        // delete an orphan.
        let Some(node) = self.refreshed(uid, node).await? else {
            return Ok(Action::Done);
        };
        let node = &node;
        if node.owners.is_empty() {
            return Ok(Action::Done);
        }
        if node.being_deleted && !deleting_dependents(node) {
            return Ok(Action::Done);
        }
        if deleting_dependents(node) {
            return self.process_deleting_dependents(uid, node).await;
        }
        let mut solid = 0;
        let mut waiting = Vec::new();
        let mut dangling = Vec::new();
        for owner in &node.owners {
            match self.owner_state(node, owner).await? {
                OwnerState::Solid => solid += 1,
                OwnerState::Waiting => waiting.push(owner.uid.clone()),
                OwnerState::Dangling => dangling.push(owner.uid.clone()),
            }
        }
        if solid > 0 {
            if dangling.is_empty() && waiting.is_empty() {
                return Ok(Action::Done);
            }
            // Keep the object; drop only the references to owners that are gone, and to those
            // waiting for their dependents (they would wait for ever).
            let kept: Vec<&OwnerReference> = node
                .owners
                .iter()
                .filter(|o| !dangling.contains(&o.uid) && !waiting.contains(&o.uid))
                .collect();
            self.patch_owners(node, &kept).await?;
            return Ok(Action::Done);
        }
        let dependents = self.dependents(uid);
        let params = if !waiting.is_empty() && !dependents.is_empty() {
            if dependents.iter().any(|(_, d)| deleting_dependents(d)) {
                // A possible cycle: this object's references stop blocking its owners.
                let unblocked: Vec<OwnerReference> = node
                    .owners
                    .iter()
                    .map(|o| OwnerReference {
                        block_owner_deletion: o.block_owner_deletion.map(|_| false),
                        ..o.clone()
                    })
                    .collect();
                let refs: Vec<&OwnerReference> = unblocked.iter().collect();
                self.patch_owners(node, &refs).await?;
            }
            DeleteParams::foreground()
        } else if node.finalizers.iter().any(|f| f == ORPHAN) {
            DeleteParams::orphan()
        } else if node.finalizers.iter().any(|f| f == FOREGROUND) {
            DeleteParams::foreground()
        } else {
            DeleteParams::background()
        };
        match self.api(node).delete(&node.name, &params).await {
            Ok(_) => Ok(Action::Done),
            Err(e) if is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }

    /// The graph's node with the object's live owner references, finalizers and deletion
    /// state; `None` when the object is gone or was replaced (another UID).
    async fn refreshed(&self, uid: &str, node: &Node) -> Result<Option<Node>, Error> {
        let namespace = node.namespace.as_deref().filter(|_| node.namespaced);
        let live = self
            .meta_api(&node.resource, namespace)
            .get_metadata_opt(&node.name)
            .await?;
        Ok(live
            .filter(|l| l.metadata.uid.as_deref() == Some(uid))
            .map(|l| Node {
                owners: l.metadata.owner_references.unwrap_or_default(),
                finalizers: l.metadata.finalizers.unwrap_or_default(),
                being_deleted: l.metadata.deletion_timestamp.is_some(),
                ..node.clone()
            }))
    }

    /// Replaces an object's owner references (an empty list removes them).
    async fn patch_owners(&self, node: &Node, owners: &[&OwnerReference]) -> Result<(), Error> {
        self.merge_metadata(node, "ownerReferences", list_or_null(owners))
            .await
    }

    /// Removes `finalizer` from an object (a conflict retries).
    async fn remove_finalizer(&self, node: &Node, finalizer: &str) -> Result<(), Error> {
        let left: Vec<&String> = node.finalizers.iter().filter(|f| *f != finalizer).collect();
        self.merge_metadata(node, "finalizers", list_or_null(&left))
            .await
    }

    /// Sets one metadata field with a merge patch; an object already gone needs nothing.
    async fn merge_metadata(
        &self,
        node: &Node,
        field: &str,
        value: serde_json::Value,
    ) -> Result<(), Error> {
        let patch = serde_json::json!({ "metadata": { field: value } });
        match self
            .api(node)
            .patch_metadata(&node.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn orphan_dependents(&self, uid: &str, node: &Node) -> Result<Action, Error> {
        for (_, dep) in self.dependents(uid) {
            let kept: Vec<&OwnerReference> = dep.owners.iter().filter(|o| o.uid != uid).collect();
            self.patch_owners(&dep, &kept).await?;
        }
        self.remove_finalizer(node, ORPHAN).await?;
        Ok(Action::Done)
    }

    /// An owner deleted in the foreground, as upstream's processDeletingDependentsItem: its
    /// finalizer goes once no dependent blocks it; until then each blocking dependent that is
    /// not itself waiting for its own dependents is attempted.
    async fn process_deleting_dependents(&self, uid: &str, node: &Node) -> Result<Action, Error> {
        let blocking: Vec<(String, Node)> = self
            .dependents(uid)
            .into_iter()
            .filter(|(_, dep)| {
                dep.owners
                    .iter()
                    .any(|o| o.uid == uid && o.block_owner_deletion == Some(true))
            })
            .collect();
        if blocking.is_empty() {
            self.remove_finalizer(node, FOREGROUND).await?;
            return Ok(Action::Done);
        }
        for (dep_uid, dep) in blocking {
            if !deleting_dependents(&dep) {
                Box::pin(self.attempt_to_delete(&dep_uid, &dep)).await?;
            }
        }
        // Woken again as each blocking dependent goes or stops blocking.
        Ok(Action::Done)
    }
}

/// Being deleted in the foreground: waiting for its own dependents.
fn deleting_dependents(node: &Node) -> bool {
    node.being_deleted && node.finalizers.iter().any(|f| f == FOREGROUND)
}

/// A list for a merge patch; an empty one removes the field (as upstream leaves it unset).
fn list_or_null<T: serde::Serialize>(items: &[T]) -> serde_json::Value {
    if items.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::to_value(items).unwrap_or(serde_json::Value::Null)
    }
}

impl Reconciler for GarbageCollector {
    async fn reconcile(&self, uid: &str) -> Result<Action, Error> {
        let Some(node) = self.node(uid) else {
            return Ok(Action::Done);
        };
        if node.being_deleted && node.finalizers.iter().any(|f| f == ORPHAN) {
            return self.orphan_dependents(uid, &node).await;
        }
        if deleting_dependents(&node) {
            return self.process_deleting_dependents(uid, &node).await;
        }
        if node.owners.is_empty() {
            return Ok(Action::Done);
        }
        self.attempt_to_delete(uid, &node).await
    }
}
