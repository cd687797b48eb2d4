//! `componentstatuses` (v1; deprecated since 1.19, still served by 1.33): the health of the
//! controller-manager, the scheduler and the store, worked out on every read and never stored.
//!
//! Upstream probes the components' `/healthz` ports on 127.0.0.1. k1s runs them in process (or
//! as `k1s controller-manager` / `k1s scheduler` anywhere), so a component counts as healthy
//! while its leader-election Lease is held and renewed within its duration; the store counts as
//! healthy when it answers a read (a linearizable one on etcd), as upstream's etcd prober does.

use std::time::Duration;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::selector::{FieldSelector, LabelSelector};
use serde_json::{Value, json};

use crate::context::ApiContext;
use crate::registry::Target;

/// What each component is called here and the Lease its leader holds.
const COMPONENTS: &[(&str, Option<&str>)] = &[
    ("scheduler", Some("kube-scheduler")),
    ("controller-manager", Some("kube-controller-manager")),
    ("etcd-0", None),
];

/// How long the store may take to answer before it counts as unhealthy.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub fn serves(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.resource == "componentstatuses"
}

/// One component's status; an unknown name is upstream's 500 "Component not found".
pub async fn get(ctx: &ApiContext, name: &str) -> Result<Value, ApiError> {
    match COMPONENTS.iter().find(|(n, _)| *n == name) {
        Some((name, lease)) => Ok(status(ctx, name, *lease).await),
        None => Err(ApiError::internal(format!("Component not found: {name}"))),
    }
}

/// Every component's status that passes the selectors (the objects carry no labels).
pub async fn list(
    ctx: &ApiContext,
    info: &ResourceInfo,
    labels: Option<&LabelSelector>,
    fields: Option<&FieldSelector>,
) -> Vec<Value> {
    let mut items = Vec::new();
    for (name, lease) in COMPONENTS {
        let obj = status(ctx, name, *lease).await;
        if crate::registry::matches(info, &obj, labels, fields) {
            items.push(obj);
        }
    }
    items
}

async fn status(ctx: &ApiContext, name: &str, lease: Option<&str>) -> Value {
    let outcome = match lease {
        Some(lease) => lease_health(ctx, lease).await,
        None => store_health(ctx).await,
    };
    let condition = match outcome {
        Ok(()) => json!({"type": "Healthy", "status": "True", "message": "ok"}),
        Err(error) => json!({"type": "Healthy", "status": "False", "error": error}),
    };
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

/// Healthy while the Lease `kube-system/<name>` has a holder that renewed it within its duration.
async fn lease_health(ctx: &ApiContext, name: &str) -> Result<(), String> {
    let info = catalog::find("coordination.k8s.io", "v1", "leases")
        .ok_or("leases missing from the catalog")?;
    let target = Target {
        info,
        namespace: Some("kube-system"),
    };
    let what = format!("the Lease kube-system/{name}");
    let lease = ctx.registry.get(target, name).await.map_err(|e| {
        if e.is_not_found() {
            format!("{what} does not exist")
        } else {
            format!("{what}: {}", e.message)
        }
    })?;
    let spec = &lease["spec"];
    if spec["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
    {
        return Err(format!("{what} has no holder"));
    }
    let renewed = spec["renewTime"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .ok_or_else(|| format!("{what} has never been renewed"))?;
    let duration = spec["leaseDurationSeconds"].as_i64().unwrap_or(0);
    let expires = renewed + jiff::SignedDuration::from_secs(duration);
    if expires < jiff::Timestamp::now() {
        return Err(format!(
            "{what} was last renewed at {renewed}, more than {duration}s ago"
        ));
    }
    Ok(())
}

/// Healthy when the store answers a read within [`STORE_PROBE_TIMEOUT`].
async fn store_health(ctx: &ApiContext) -> Result<(), String> {
    let read = ctx.registry.store().get("/health");
    match tokio::time::timeout(STORE_PROBE_TIMEOUT, read).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "the store did not answer within {}s",
            STORE_PROBE_TIMEOUT.as_secs()
        )),
    }
}
