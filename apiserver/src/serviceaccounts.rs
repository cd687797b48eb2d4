//! Interim stand-in for two controller-manager controllers until the controller-manager lands:
//! every namespace gets its `default` ServiceAccount (serviceaccount controller) and the
//! `kube-root-ca.crt` ConfigMap with the cluster CA (root-ca-cert-publisher). Pods need both.

use k1s_apimachinery::catalog;
use k1s_apimachinery::meta;
use serde_json::{Value, json};

use crate::registry::informer::{self, Change};
use crate::registry::{Registry, Target, WriteOptions};
use crate::strategies;

/// Follows namespaces and makes sure each has its default objects.
pub fn spawn(registry: Registry, ca_pem: String, shutdown: tokio::sync::watch::Receiver<bool>) {
    let Some(info) = catalog::find("", "v1", "namespaces") else {
        return;
    };
    let writer = registry.clone();
    tokio::spawn(informer::run(registry, info, shutdown, move |change| {
        let (registry, ca_pem) = (writer.clone(), ca_pem.clone());
        async move {
            match change {
                Change::Listed(items) => {
                    for ns in &items {
                        ensure(&registry, ns, &ca_pem).await;
                    }
                }
                Change::Upserted(ns) => ensure(&registry, &ns, &ca_pem).await,
                Change::Deleted(_) => {}
            }
        }
    }));
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
