//! Local APIServices for what this server serves itself, as upstream's autoregister and
//! crdregistration controllers keep them: one per built-in group/version of kube-apiserver's
//! priority table (`v1.`, `v1.apps`, ..., labelled `automanaged: onstart`, created at start),
//! and one per served version of every CustomResourceDefinition (`automanaged: true`, created
//! and deleted as CRDs come and go). They carry the group and version priorities discovery
//! orders by; routing ignores them (a local APIService is served by this server's handlers).

use std::collections::BTreeSet;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog;
use k1s_apimachinery::selector::LabelSelector;
use serde_json::{Value, json};

use crate::registry::informer::{self, Change};
use crate::registry::{DeleteOptions, ListQuery, Registry, Target};

const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// kube-apiserver's group and version priorities (`apiVersionPriorities`), for the group
/// versions k1s serves. A group/version not listed gets no APIService, as upstream.
const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("resource.k8s.io", "v1beta2", 16200, 15),
    ("resource.k8s.io", "v1beta1", 16200, 9),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// Upstream's crdregistration priorities for custom resource group versions.
const CRD_GROUP_PRIORITY: i64 = 1000;
const CRD_VERSION_PRIORITY: i64 = 100;

/// The (group, version) priorities of a group/version this server serves itself: the
/// built-in table, metrics.k8s.io's APIService, else a custom resource's.
pub(crate) fn local_priority(group: &str, version: &str) -> (i64, i64) {
    if let Some(&(_, _, g, v)) = PRIORITIES
        .iter()
        .find(|(pg, pv, _, _)| *pg == group && *pv == version)
    {
        return (g, v);
    }
    if let Some(&(_, _, g, _)) = PRIORITIES.iter().find(|(pg, _, _, _)| *pg == group) {
        return (g, 0);
    }
    let metrics = crate::metrics_api::api_service();
    if metrics["spec"]["group"] == group {
        let spec = &metrics["spec"];
        return (
            spec["groupPriorityMinimum"].as_i64().unwrap_or_default(),
            spec["versionPriority"].as_i64().unwrap_or_default(),
        );
    }
    (CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY)
}

fn local_api_service(group: &str, version: &str, priority: (i64, i64), managed: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": { "name": format!("{version}.{group}"), "labels": { AUTOMANAGED: managed } },
        "spec": { "group": group, "version": version,
            "groupPriorityMinimum": priority.0, "versionPriority": priority.1 },
    })
}

fn target() -> Result<Target<'static>, ApiError> {
    let info = catalog::find("apiregistration.k8s.io", "v1", "apiservices")
        .ok_or_else(|| ApiError::internal("no APIService kind"))?;
    Ok(Target {
        info,
        namespace: None,
    })
}

/// Creates the built-in group versions' local APIServices that are missing.
pub async fn register_builtin(registry: &Registry) -> Result<(), ApiError> {
    let t = target()?;
    for g in catalog::groups() {
        for v in g.versions {
            let Some(&(_, _, group_priority, version_priority)) = PRIORITIES
                .iter()
                .find(|(pg, pv, _, _)| *pg == g.name && pv == v)
            else {
                continue;
            };
            let obj = local_api_service(g.name, v, (group_priority, version_priority), "onstart");
            crate::bootstrap::create_if_missing(registry, t, obj).await?;
        }
    }
    Ok(())
}

/// Keeps one local APIService per served custom resource group version until `shutdown`.
pub fn follow_crds(registry: Registry, shutdown: tokio::sync::watch::Receiver<bool>) {
    let Some(info) = catalog::find("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    // Per CRD name, only the group versions it serves (not the whole object).
    let mut crds: std::collections::BTreeMap<String, BTreeSet<(String, String)>> =
        Default::default();
    let reg = registry.clone();
    tokio::spawn(informer::run(registry, info, shutdown, move |change| {
        let name = |o: &Value| {
            k1s_apimachinery::meta::name(o)
                .unwrap_or_default()
                .to_string()
        };
        match change {
            Change::Listed(items) => {
                crds = items
                    .iter()
                    .map(|o| (name(o), served_group_versions(o)))
                    .collect()
            }
            Change::Upserted(o) => {
                crds.insert(name(&o), served_group_versions(&o));
            }
            Change::Deleted(o) => {
                crds.remove(&name(&o));
            }
        }
        let wanted: BTreeSet<(String, String)> = crds.values().flatten().cloned().collect();
        let registry = reg.clone();
        async move {
            if let Err(e) = sync(&registry, &wanted).await {
                tracing::warn!(error = %e.message, "aggregator: CRD APIServices not synced");
            }
        }
    }));
}

/// The (group, version) pairs a CRD serves.
fn served_group_versions(crd: &Value) -> BTreeSet<(String, String)> {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served") == Some(&Value::Bool(true)) && !group.is_empty())
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|version| (group.to_string(), version.to_string()))
        .collect()
}

/// Creates the missing CRD APIServices and deletes those no CRD serves any more.
async fn sync(registry: &Registry, wanted: &BTreeSet<(String, String)>) -> Result<(), ApiError> {
    let t = target()?;
    let selector = LabelSelector::parse(&format!("{AUTOMANAGED}=true"))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let q = ListQuery {
        label_selector: Some(selector),
        ..Default::default()
    };
    let existing = registry.list(t, &q).await?.items;
    let have: BTreeSet<(String, String)> = existing
        .iter()
        .map(|o| {
            let text = |k: &str| {
                o.pointer(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            (text("/spec/group"), text("/spec/version"))
        })
        .collect();
    for (group, version) in wanted.difference(&have) {
        let obj = local_api_service(
            group,
            version,
            (CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY),
            "true",
        );
        crate::bootstrap::create_if_missing(registry, t, obj).await?;
    }
    for (group, version) in have.difference(wanted) {
        match registry
            .delete(t, &format!("{version}.{group}"), &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
