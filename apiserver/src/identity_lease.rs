//! The kube-apiserver identity Lease (APIServerIdentity) and the GC of expired ones, as
//! upstream's `start-kube-apiserver-identity-lease-controller` and
//! `...-garbage-collector` post-start hooks: a Lease `kube-system/apiserver-<hash of the host
//! name>` labelled `apiserver.kubernetes.io/identity=kube-apiserver`, held for 3600 s and renewed
//! every 10 s; expired identity Leases (a server that went away) are deleted hourly.
//!
//! A renewal is one small write; the store's log appends it to its current page, so an idle
//! server adds about 6 writes a minute.

use std::time::Duration;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::selector::LabelSelector;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::bootstrap::target;
use crate::registry::{DeleteOptions, ListQuery, Registry, Target, WriteOptions};
use crate::strategies;

pub const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
pub const KUBE_APISERVER: &str = "kube-apiserver";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
const NAMESPACE: &str = "kube-system";
pub const LEASE_DURATION_SECONDS: i64 = 3600;
const RENEW_INTERVAL: Duration = Duration::from_secs(10);
const GC_PERIOD: Duration = Duration::from_secs(3600);

/// The host name as Go's `os.Hostname` reads it on Linux.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// RFC 4648 base32 (standard alphabet) without padding.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// Upstream's APIServerID: `apiserver-` + lowercase base32 of the first 16 bytes of the SHA-256
/// of the length-prefixed host name and the identity value `kube-apiserver`.
pub fn apiserver_id(hostname: &str) -> String {
    let mut data = Vec::with_capacity(hostname.len() + KUBE_APISERVER.len() + 4);
    for part in [hostname.as_bytes(), KUBE_APISERVER.as_bytes()] {
        // cryptobyte's uint16 length prefix; host names are far below 64 KiB.
        let len = u16::try_from(part.len()).unwrap_or(u16::MAX);
        data.extend_from_slice(&len.to_be_bytes());
        data.extend_from_slice(&part[..usize::from(len)]);
    }
    let hash = ring::digest::digest(&ring::digest::SHA256, &data);
    format!(
        "apiserver-{}",
        base32(&hash.as_ref()[..16]).to_ascii_lowercase()
    )
}

fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

fn leases() -> Result<Target<'static>, ApiError> {
    target("coordination.k8s.io", "leases", Some(NAMESPACE))
}

/// The Lease a server creates for itself.
fn new_lease(id: &str, holder: &str, host: &str, now: jiff::Timestamp) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": { "name": id, "namespace": NAMESPACE,
            "labels": { IDENTITY_LABEL: KUBE_APISERVER, HOSTNAME_LABEL: host } },
        "spec": { "holderIdentity": holder, "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": micro_time(now) }
    })
}

/// A renewal: the stored Lease with a new renewTime and its identity labels (upstream's
/// heartbeat function sets them on every renewal); the holder stays as stored.
fn renewed(current: &Value, host: &str, now: jiff::Timestamp) -> Value {
    let mut next = current.clone();
    if !next
        .pointer("/metadata/labels")
        .is_some_and(Value::is_object)
    {
        next["metadata"]["labels"] = json!({});
    }
    next["metadata"]["labels"][IDENTITY_LABEL] = json!(KUBE_APISERVER);
    next["metadata"]["labels"][HOSTNAME_LABEL] = json!(host);
    if !next.get("spec").is_some_and(Value::is_object) {
        next["spec"] = json!({});
    }
    next["spec"]["renewTime"] = json!(micro_time(now));
    next
}

/// Whether an identity Lease has expired (one without renewTime or duration counts as expired).
fn expired(lease: &Value, now: jiff::Timestamp) -> bool {
    let renew = lease
        .pointer("/spec/renewTime")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let duration = lease
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64);
    match (renew, duration) {
        (Some(renew), Some(d)) => renew
            .checked_add(jiff::SignedDuration::from_secs(d))
            .is_ok_and(|end| end < now),
        _ => true,
    }
}

/// Creates the Lease if missing, else renews it.
async fn sync(registry: &Registry, id: &str, holder: &str, host: &str) -> Result<(), ApiError> {
    let t = leases()?;
    let strategy = strategies::for_resource(t.info);
    let opts = WriteOptions::default();
    let now = jiff::Timestamp::now();
    match registry
        .update(t, strategy, id, None, &opts, |current| {
            Ok(renewed(current, host, now))
        })
        .await
    {
        Err(e) if e.is_not_found() => registry
            .create(t, strategy, new_lease(id, holder, host, now), &opts)
            .await
            .map(|_| ()),
        other => other.map(|_| ()),
    }
}

/// Deletes expired identity Leases (read again before deleting, as upstream does).
async fn collect_garbage(registry: &Registry) -> Result<(), ApiError> {
    let t = leases()?;
    let selector = LabelSelector::parse(&format!("{IDENTITY_LABEL}={KUBE_APISERVER}"))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let query = ListQuery {
        label_selector: Some(selector),
        ..Default::default()
    };
    let now = jiff::Timestamp::now();
    for lease in registry.list(t, &query).await?.items {
        if !expired(&lease, now) {
            continue;
        }
        let name = lease
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let current = match registry.get(t, name).await {
            Ok(current) if expired(&current, now) => current,
            Ok(_) => continue,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        };
        let opts = DeleteOptions {
            precondition_uid: current
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Default::default()
        };
        match registry.delete(t, name, &opts).await {
            Err(e) if !e.is_not_found() && !e.is_conflict() => return Err(e),
            _ => tracing::info!(lease = name, "deleted an expired apiserver identity lease"),
        }
    }
    Ok(())
}

/// Runs the identity Lease and its GC until `stop`. The first write happens at once.
pub fn start(registry: Registry, mut stop: watch::Receiver<bool>) {
    let host = hostname();
    let id = apiserver_id(&host);
    let holder = format!("{id}_{}", uuid::Uuid::new_v4());
    tokio::spawn(async move {
        let mut renew = tokio::time::interval(RENEW_INTERVAL);
        let mut gc = tokio::time::interval(GC_PERIOD);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        gc.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                // The guard `wait_for` returns is not Send: drop it inside the branch.
                _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => return,
                _ = renew.tick() => {
                    if let Err(e) = sync(&registry, &id, &holder, &host).await {
                        tracing::warn!(lease = %id, error = %e, "renewing the apiserver identity lease failed");
                    }
                }
                _ = gc.tick() => {
                    if let Err(e) = collect_garbage(&registry).await {
                        tracing::warn!(error = %e, "apiserver identity lease GC failed");
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn base32_matches_rfc4648() {
        // RFC 4648 section 10 test vectors, padding removed.
        for (input, want) in [
            ("", ""),
            ("f", "MY"),
            ("fo", "MZXQ"),
            ("foo", "MZXW6"),
            ("foob", "MZXW6YQ"),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ] {
            assert_eq!(base32(input.as_bytes()), want, "{input}");
        }
    }

    #[test]
    fn apiserver_id_is_a_stable_hash_of_the_host() {
        let a = apiserver_id("node-a");
        assert!(a.starts_with("apiserver-"));
        // 16 bytes are 26 base32 characters, lowercase.
        assert_eq!(a.len(), "apiserver-".len() + 26);
        assert_eq!(a, a.to_ascii_lowercase());
        assert_eq!(a, apiserver_id("node-a"));
        assert_ne!(a, apiserver_id("node-b"));
        assert!(k1s_apimachinery::validation::is_dns1123_subdomain(&a).is_empty());
    }

    #[test]
    fn leases_expire_after_their_duration() {
        let now: jiff::Timestamp = "2026-11-27T12:00:00Z".parse().unwrap();
        let lease = new_lease("apiserver-x", "apiserver-x_1", "host", now);
        assert_eq!(lease["spec"]["renewTime"], "2026-11-27T12:00:00.000000Z");
        assert!(!expired(&lease, now));
        let later = now
            .checked_add(jiff::SignedDuration::from_secs(3601))
            .unwrap();
        assert!(expired(&lease, later));
        assert!(expired(&json!({ "spec": {} }), now));
        let mut renewed_lease = renewed(&lease, "host", later);
        assert!(!expired(&renewed_lease, later));
        assert_eq!(renewed_lease["spec"]["holderIdentity"], "apiserver-x_1");
        renewed_lease["metadata"]["labels"] = Value::Null;
        let relabelled = renewed(&renewed_lease, "host", later);
        assert_eq!(
            relabelled["metadata"]["labels"][IDENTITY_LABEL],
            KUBE_APISERVER
        );
    }
}
