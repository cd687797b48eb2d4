//! The `kubernetes` Service's endpoints when several API servers share one store (etcd), as
//! upstream's lease endpoint reconciler (`--endpoint-reconciler-type=lease`): every server keeps
//! a record `/masterleases/<its address>` alive in the store (renewed every 10 s, valid for
//! 15 s), and sets the endpoints to the addresses whose record is still valid. A server that
//! stops removes its record; one that dies drops out when its record runs out.
//!
//! On the embedded store only one server can run, so its endpoints are written once at start
//! (`bootstrap`) and nothing is renewed.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use k1s_storage::{Error as StoreError, ListOptions, Store};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::registry::Registry;

/// Where the records live (upstream's key, under the store's prefix).
pub const PREFIX: &str = "/masterleases/";
/// Upstream's reconcile interval and record lifetime (masterEndpointReconcileTTL).
const INTERVAL: Duration = Duration::from_secs(10);
const TTL: Duration = Duration::from_secs(15);

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Keeps this server's record and the endpoints up to date until `stop`; then removes the
/// record and the server from the endpoints.
pub fn start(registry: Registry, advertise: IpAddr, port: u16, mut stop: watch::Receiver<bool>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => break,
                _ = tick.tick() => {
                    if let Err(e) = reconcile(&registry, advertise, port, true).await {
                        tracing::warn!(error = %e, "reconciling the kubernetes endpoints failed");
                    }
                }
            }
        }
        if let Err(e) = reconcile(&registry, advertise, port, false).await {
            tracing::warn!(error = %e, "removing this server from the kubernetes endpoints failed");
        }
    });
}

/// Renews (or, with `alive` false, removes) this server's record, then writes the endpoints
/// of every server whose record is valid.
async fn reconcile(
    registry: &Registry,
    advertise: IpAddr,
    port: u16,
    alive: bool,
) -> Result<(), String> {
    let store = registry.store();
    let key = format!("{PREFIX}{advertise}");
    if alive {
        let record = json!({ "ip": advertise.to_string(),
            "expiresAtMillis": unix_millis() + TTL.as_millis() as u64 });
        put(store.as_ref(), &key, Bytes::from(record.to_string())).await?;
    } else {
        match store.delete(&key, None).await {
            Ok(_) | Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut ips = live_addresses(store.as_ref()).await?;
    if alive && !ips.contains(&advertise) {
        ips.push(advertise);
    }
    ips.sort();
    ips.dedup();
    if ips.is_empty() {
        // The last server going: its address stays, as upstream leaves the last one.
        return Ok(());
    }
    crate::bootstrap::write_kubernetes_endpoints(registry, &ips, port)
        .await
        .map_err(|e| e.to_string())
}

/// Creates or replaces `key`.
async fn put(store: &dyn Store, key: &str, value: Bytes) -> Result<(), String> {
    match store.update(key, value.clone(), None).await {
        Ok(_) => Ok(()),
        Err(StoreError::NotFound { .. }) => match store.create(key, value).await {
            Ok(_) | Err(StoreError::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// The addresses whose record has not run out (by this server's clock).
async fn live_addresses(store: &dyn Store) -> Result<Vec<IpAddr>, String> {
    let now = unix_millis();
    let page = store
        .list(PREFIX, ListOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(page
        .items
        .iter()
        .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
        .filter(|r| r["expiresAtMillis"].as_u64().is_some_and(|t| t > now))
        .filter_map(|r| r["ip"].as_str()?.parse().ok())
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k1s_storage::{Backend, LocalStore, StoreConfig};
    use std::sync::Arc;

    #[tokio::test]
    async fn the_endpoints_list_the_servers_whose_record_is_valid() {
        let store: Arc<dyn Store> =
            Arc::new(LocalStore::open(StoreConfig::new(Backend::Memory)).unwrap());
        let registry = Registry::new(store.clone());
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.2".parse().unwrap(), "10.0.0.1".parse().unwrap());
        reconcile(&registry, a, 6443, true).await.unwrap();
        reconcile(&registry, b, 6443, true).await.unwrap();
        // A record that ran out (a server that died) does not count.
        let stale = json!({ "ip": "10.0.0.9", "expiresAtMillis": unix_millis() - 1 });
        store
            .create("/masterleases/10.0.0.9", Bytes::from(stale.to_string()))
            .await
            .unwrap();
        reconcile(&registry, a, 6443, true).await.unwrap();
        let addresses = |registry: Registry| async move {
            let t = crate::bootstrap::target("", "endpoints", Some("default")).unwrap();
            let ep = registry.get(t, "kubernetes").await.unwrap();
            ep["subsets"][0]["addresses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["ip"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(addresses(registry.clone()).await, ["10.0.0.1", "10.0.0.2"]);
        // A server that stops takes itself out.
        reconcile(&registry, b, 6443, false).await.unwrap();
        assert_eq!(addresses(registry.clone()).await, ["10.0.0.2"]);
    }
}
