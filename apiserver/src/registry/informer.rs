//! A list + watch loop over one resource that relists after any interruption, as client-go's
//! reflector does. The API server's in-process followers (RBAC cache, Node authorizer graph,
//! webhook configurations, default ServiceAccounts) are built on it; controllers will use the
//! controller-manager's informers instead.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::{ListQuery, Registry, Target, WatchEvent, WatchQuery};

/// What the follower learns.
pub enum Change {
    /// A full list: the whole current state (after start and after every interruption).
    Listed(Vec<Value>),
    /// An object was created or changed.
    Upserted(Arc<Value>),
    /// An object was deleted (its last state).
    Deleted(Arc<Value>),
}

/// Follows `info` (all namespaces) until `shutdown` flips, calling `handle` for every change.
pub async fn run<F, Fut>(
    registry: Registry,
    info: &'static ResourceInfo,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    mut handle: F,
) where
    F: FnMut(Change) -> Fut,
    Fut: Future<Output = ()>,
{
    let t = Target {
        info,
        namespace: None,
    };
    loop {
        if *shutdown.borrow() {
            return;
        }
        let Ok(list) = registry.list(t, &ListQuery::default()).await else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let q = WatchQuery {
            resource_version: list.resource_version,
            ..Default::default()
        };
        handle(Change::Listed(list.items)).await;
        if let Ok(mut events) = registry.watch(t, q).await {
            loop {
                let event = tokio::select! {
                    _ = shutdown.wait_for(|s| *s) => return,
                    e = events.next() => e,
                };
                let change = match event {
                    Some(WatchEvent::Added(o) | WatchEvent::Modified(o)) => Change::Upserted(o),
                    Some(WatchEvent::Deleted(o)) => Change::Deleted(o),
                    Some(WatchEvent::Bookmark(_)) => continue,
                    Some(WatchEvent::Error(_)) | None => break,
                };
                handle(change).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
