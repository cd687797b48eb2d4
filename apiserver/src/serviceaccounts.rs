//! Interim stand-in for two controller-manager controllers until the controller-manager lands:
//! every namespace gets its `default` ServiceAccount (serviceaccount controller) and the
//! `kube-root-ca.crt` ConfigMap with the cluster CA (root-ca-cert-publisher). Pods need both.

use std::time::Duration;

use futures::StreamExt;
use k1s_apimachinery::catalog;
use k1s_apimachinery::meta;
use serde_json::{Value, json};

use crate::registry::{ListQuery, Registry, Target, WatchEvent, WatchQuery, WriteOptions};
use crate::strategies;

/// Follows namespaces and makes sure each has its default objects.
pub fn spawn(registry: Registry, ca_pem: String, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    tokio::spawn(async move {
        let Some(info) = catalog::find("", "v1", "namespaces") else {
            return;
        };
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
            for ns in &list.items {
                ensure(&registry, ns, &ca_pem).await;
            }
            let q = WatchQuery {
                resource_version: list.resource_version,
                ..Default::default()
            };
            if let Ok(mut events) = registry.watch(t, q).await {
                loop {
                    let event = tokio::select! {
                        _ = shutdown.wait_for(|s| *s) => return,
                        e = events.next() => e,
                    };
                    match event {
                        Some(WatchEvent::Added(ns) | WatchEvent::Modified(ns)) => {
                            ensure(&registry, &ns, &ca_pem).await
                        }
                        Some(WatchEvent::Deleted(_) | WatchEvent::Bookmark(_)) => {}
                        Some(WatchEvent::Error(_)) | None => break,
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

async fn ensure(registry: &Registry, namespace: &Value, ca_pem: &str) {
    if meta::is_being_deleted(namespace) {
        return;
    }
    let Some(ns) = meta::name(namespace) else {
        return;
    };
    let objects = [
        (
            "serviceaccounts",
            json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": "default" } }),
        ),
        (
            "configmaps",
            json!({ "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "kube-root-ca.crt",
                "annotations": { "kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters." } },
            "data": { "ca.crt": ca_pem } }),
        ),
    ];
    for (resource, obj) in objects {
        let Some(info) = catalog::find("", "v1", resource) else {
            continue;
        };
        let t = Target {
            info,
            namespace: Some(ns),
        };
        let name = meta::name(&obj).unwrap_or_default().to_string();
        if registry.get(t, &name).await.is_ok() {
            continue;
        }
        match registry
            .create(
                t,
                strategies::for_resource(info),
                obj,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_already_exists() || e.code == 403 || e.code == 404 => {}
            Err(e) => {
                tracing::warn!(error = %e, namespace = ns, resource, "default object not created")
            }
        }
    }
}
