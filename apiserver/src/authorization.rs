//! RBAC wired to the API: upstream's bootstrap policy reconciled at every start, the
//! authorizer's cache fed by list + watch of the four RBAC resources, and the Node authorizer's
//! graph fed by list + watch of pods, PersistentVolumes and VolumeAttachments. (ClusterRole
//! aggregation is the controller-manager's clusterrole-aggregation controller, as upstream.)

use std::sync::Arc;
use std::time::Duration;

use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::{ApiError, meta};
use serde_json::Value;

use crate::auth::rbac::{self, GraphSource, NodeGraph, RbacAuthorizer, RbacCache, ReconcileAction};
use crate::registry::informer::{self, Change};
use crate::registry::{DeleteOptions, ListQuery, Registry, Target, WriteOptions};
use crate::strategies;

const GROUP: &str = "rbac.authorization.k8s.io";
const KINDS: [(&str, &str); 4] = [
    ("clusterroles", "ClusterRole"),
    ("clusterrolebindings", "ClusterRoleBinding"),
    ("roles", "Role"),
    ("rolebindings", "RoleBinding"),
];

fn info(resource: &str) -> Result<&'static ResourceInfo, ApiError> {
    catalog::find(GROUP, "v1", resource)
        .ok_or_else(|| ApiError::internal(format!("{resource} missing from the catalog")))
}

fn resource_of(kind: &str) -> Option<&'static str> {
    KINDS.iter().find(|(_, k)| *k == kind).map(|(r, _)| *r)
}

/// How long start waits for the Node authorizer graph's first lists; a source that has not
/// listed by then fills the graph when it does (its follower keeps retrying).
const GRAPH_SYNC_WAIT: Duration = Duration::from_secs(5);

/// Reconciles the bootstrap policy, loads the cache and the Node authorizer's graph, and starts
/// following changes.
pub async fn start(
    registry: &Registry,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<Arc<RbacAuthorizer>, ApiError> {
    // The graph's followers list while the bootstrap policy is reconciled.
    let (graph, graph_synced) = start_node_graph(registry, &shutdown)?;
    reconcile_bootstrap(registry).await?;
    let cache = Arc::new(RbacCache::new());
    for (resource, kind) in KINDS {
        let t = Target {
            info: info(resource)?,
            namespace: None,
        };
        let list = registry.list(t, &ListQuery::default()).await?;
        cache
            .replace_all(kind, &list.items)
            .map_err(|e| ApiError::internal(format!("loading {resource}: {e}")))?;
        tokio::spawn(follow(
            registry.clone(),
            cache.clone(),
            t.info,
            kind,
            shutdown.clone(),
        ));
    }
    if tokio::time::timeout(GRAPH_SYNC_WAIT, futures::future::join_all(graph_synced))
        .await
        .is_err()
    {
        tracing::warn!("the Node authorizer graph has not listed everything yet");
    }
    Ok(Arc::new(RbacAuthorizer::new(cache).with_node_graph(graph)))
}

/// Starts one follower per graph source; the receivers complete when each has applied its
/// first list.
#[allow(clippy::type_complexity)]
fn start_node_graph(
    registry: &Registry,
    shutdown: &tokio::sync::watch::Receiver<bool>,
) -> Result<(Arc<NodeGraph>, Vec<tokio::sync::oneshot::Receiver<()>>), ApiError> {
    let graph = Arc::new(NodeGraph::new());
    let mut synced = Vec::new();
    for source in GraphSource::ALL {
        let (group, version, resource) = source.resource();
        let info = catalog::find(group, version, resource)
            .ok_or_else(|| ApiError::internal(format!("{resource} missing from the catalog")))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        synced.push(rx);
        tokio::spawn(follow_graph(
            registry.clone(),
            graph.clone(),
            info,
            source,
            tx,
            shutdown.clone(),
        ));
    }
    Ok((graph, synced))
}

/// Keeps the graph in step with one source: a pod's edges are recomputed on every change.
async fn follow_graph(
    registry: Registry,
    graph: Arc<NodeGraph>,
    info: &'static ResourceInfo,
    source: GraphSource,
    synced: tokio::sync::oneshot::Sender<()>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut synced = Some(synced);
    informer::run(registry, info, shutdown, move |change| {
        match &change {
            Change::Listed(items) => {
                graph.replace_all(source, items);
                if let Some(tx) = synced.take() {
                    let _ = tx.send(());
                }
            }
            Change::Upserted(o) => graph.apply(source, o),
            Change::Deleted(o) => graph.remove(source, o),
        }
        async {}
    })
    .await;
}

/// Creates missing bootstrap objects and adds what upstream's reconciliation adds. Writes run
/// concurrently so the store commits them together.
async fn reconcile_bootstrap(registry: &Registry) -> Result<(), ApiError> {
    let tasks = rbac::bootstrap_policy().into_iter().map(|wanted| {
        let registry = registry.clone();
        async move { reconcile_one(&registry, wanted).await }
    });
    for result in futures::future::join_all(tasks).await {
        result?;
    }
    Ok(())
}

async fn reconcile_one(registry: &Registry, wanted: Value) -> Result<(), ApiError> {
    let kind = meta::kind(&wanted).unwrap_or_default().to_string();
    let Some(resource) = resource_of(&kind) else {
        return Ok(());
    };
    let namespace = meta::namespace(&wanted).map(str::to_string);
    let name = meta::name(&wanted).unwrap_or_default().to_string();
    let t = Target {
        info: info(resource)?,
        namespace: namespace.as_deref(),
    };
    let strategy = strategies::for_resource(t.info);
    let existing = match registry.get(t, &name).await {
        Ok(v) => Some(v),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e),
    };
    let write = WriteOptions::default();
    match rbac::reconcile_action(existing.as_ref(), &wanted) {
        ReconcileAction::None | ReconcileAction::Protected => Ok(()),
        ReconcileAction::Create(obj) => match registry.create(t, strategy, obj, &write).await {
            Err(e) if !e.is_already_exists() => Err(e),
            _ => Ok(()),
        },
        ReconcileAction::Update(obj) => registry
            .update(t, strategy, &name, None, &write, |_| Ok(obj.clone()))
            .await
            .map(|_| ()),
        ReconcileAction::Recreate(obj) => {
            registry.delete(t, &name, &DeleteOptions::default()).await?;
            registry.create(t, strategy, obj, &write).await.map(|_| ())
        }
    }
}

/// Keeps the cache in step with one resource.
async fn follow(
    registry: Registry,
    cache: Arc<RbacCache>,
    info: &'static ResourceInfo,
    kind: &'static str,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    informer::run(registry, info, shutdown, move |change| {
        match &change {
            Change::Listed(items) => {
                let _ = cache.replace_all(kind, items);
            }
            Change::Upserted(o) => {
                if let Err(e) = cache.apply(kind, o) {
                    tracing::warn!(error = %e, kind, "RBAC object not loaded");
                }
            }
            Change::Deleted(o) => {
                let ns = meta::namespace(o).unwrap_or_default();
                let _ = cache.remove(kind, ns, meta::name(o).unwrap_or_default());
            }
        }
        async {}
    })
    .await;
}
