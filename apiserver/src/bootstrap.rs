//! Objects every cluster has from its first start, as upstream's post-start hooks keep them: the
//! system namespaces, the `kubernetes` Service with its Endpoints and EndpointSlice, the system
//! PriorityClasses, the API Priority and Fairness configuration, the
//! `extension-apiserver-authentication` ConfigMap, and (`bootstrap_servicecidr`) the default
//! ServiceCIDR with the `kubernetes` Service's IPAddress.

use std::net::IpAddr;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog;
use serde_json::{Value, json};

use crate::bootstrap_flowcontrol;
use crate::registry::{Registry, Target, WriteOptions, now_rfc3339};
use crate::strategies;

pub const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

pub(crate) fn target(
    group: &str,
    resource: &str,
    namespace: Option<&'static str>,
) -> Result<Target<'static>, ApiError> {
    let version = if group.is_empty() {
        "v1"
    } else {
        catalog::preferred_version(group).unwrap_or("v1")
    };
    let info = catalog::find(group, version, resource).ok_or_else(|| {
        ApiError::internal(format!("{resource}.{group} missing from the catalog"))
    })?;
    Ok(Target { info, namespace })
}

/// The ConfigMap (in kube-system) whose `since` says from which day the API server records the
/// use of legacy service-account tokens (upstream's legacytokentracking).
pub const LEGACY_TOKEN_TRACKING_CONFIGMAP: &str =
    "kube-apiserver-legacy-service-account-token-tracking";

/// Creates what is missing and points the `kubernetes` endpoints at this server.
pub async fn ensure(
    registry: &Registry,
    advertise: IpAddr,
    port: u16,
    client_ca_pem: &str,
    front_proxy_ca_pem: &str,
    service_range: &crate::allocator::Range,
) -> Result<(), ApiError> {
    let kubernetes_ip = service_range.kubernetes_ip().to_string();
    let ns = target("", "namespaces", None)?;
    for name in SYSTEM_NAMESPACES {
        let obj = json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": name } });
        create_if_missing(registry, ns, obj).await?;
    }
    // scheduling/bootstrap-system-priority-classes: created when missing, never updated.
    let pc = target("scheduling.k8s.io", "priorityclasses", None)?;
    for (name, value, description) in strategies::SYSTEM_PRIORITY_CLASSES {
        let obj = json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": { "name": name }, "value": value, "description": description,
        });
        create_if_missing(registry, pc, obj).await?;
    }
    // The cluster-authentication-trust controller: how extension API servers learn to trust the
    // client certificates this server accepts, and the front-proxy certificate and headers with
    // which the aggregator forwards requests to them (kubeadm's requestheader flags).
    let trust = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "extension-apiserver-authentication", "namespace": "kube-system" },
        "data": {
            "client-ca-file": client_ca_pem,
            "requestheader-client-ca-file": front_proxy_ca_pem,
            "requestheader-allowed-names": "[\"front-proxy-client\"]",
            "requestheader-username-headers": "[\"X-Remote-User\"]",
            "requestheader-group-headers": "[\"X-Remote-Group\"]",
            "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]",
        },
    });
    put_if_changed(
        registry,
        target("", "configmaps", Some("kube-system"))?,
        trust,
        "/data",
    )
    .await?;
    // The legacy-token-tracking controller: the day tracking of legacy token use began, which
    // the legacy-service-account-token-cleaner waits on (created once; a malformed date is fixed).
    let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let tracking = target("", "configmaps", Some("kube-system"))?;
    let stored = registry
        .get(tracking, LEGACY_TOKEN_TRACKING_CONFIGMAP)
        .await;
    let well_formed = stored.as_ref().ok().and_then(|cm| {
        let since = cm.pointer("/data/since")?.as_str()?;
        jiff::civil::Date::strptime("%Y-%m-%d", since).ok()
    });
    if well_formed.is_none() {
        let obj = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": LEGACY_TOKEN_TRACKING_CONFIGMAP, "namespace": "kube-system" },
            "data": { "since": today },
        });
        put_if_changed(registry, tracking, obj, "/data/since").await?;
    }
    // priority-and-fairness-config-producer (also run every minute by `flowcontrol::start`).
    bootstrap_flowcontrol::ensure(registry).await?;
    // The local APIServices of the built-in group versions (upstream's autoregister).
    crate::aggregator::autoregister::register_builtin(registry).await?;
    // metrics.k8s.io is served in process; its APIService is there as a metrics-server install's.
    create_if_missing(
        registry,
        target("apiregistration.k8s.io", "apiservices", None)?,
        crate::metrics_api::api_service(),
    )
    .await?;
    let svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": "kubernetes", "namespace": "default",
            "labels": { "component": "apiserver", "provider": "kubernetes" } },
        "spec": {
            "type": "ClusterIP", "clusterIP": kubernetes_ip, "clusterIPs": [kubernetes_ip],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
            "internalTrafficPolicy": "Cluster",
            "ports": [{ "name": "https", "port": 443, "protocol": "TCP", "targetPort": port }]
        },
        "status": { "loadBalancer": {} }
    });
    create_if_missing(registry, target("", "services", Some("default"))?, svc).await?;
    crate::bootstrap_servicecidr::ensure(registry, service_range).await?;
    write_kubernetes_endpoints(registry, &[advertise], port).await
}

/// Points the `kubernetes` Endpoints and EndpointSlice at `ips` (sorted, at least one) on
/// `port`; unchanged objects are not written. The slice carries only the service-name label,
/// as upstream's EndpointsAdapter writes it: with the mirroring controller's managed-by label,
/// that controller deleted it (its Endpoints is marked skip-mirror).
pub(crate) async fn write_kubernetes_endpoints(
    registry: &Registry,
    ips: &[IpAddr],
    port: u16,
) -> Result<(), ApiError> {
    let addresses: Vec<Value> = ips
        .iter()
        .map(|ip| json!({ "ip": ip.to_string() }))
        .collect();
    let endpoints = json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": { "name": "kubernetes", "namespace": "default",
            "labels": { "endpointslice.kubernetes.io/skip-mirror": "true" } },
        "subsets": [{ "addresses": addresses,
            "ports": [{ "name": "https", "port": port, "protocol": "TCP" }] }]
    });
    put_if_changed(
        registry,
        target("", "endpoints", Some("default"))?,
        endpoints,
        "/subsets",
    )
    .await?;
    let family = if ips.first().is_none_or(IpAddr::is_ipv4) {
        "IPv4"
    } else {
        "IPv6"
    };
    let slice_endpoints: Vec<Value> = ips
        .iter()
        .map(|ip| json!({ "addresses": [ip.to_string()], "conditions": { "ready": true } }))
        .collect();
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": { "name": "kubernetes", "namespace": "default",
            "labels": { "kubernetes.io/service-name": "kubernetes" } },
        "addressType": family,
        "endpoints": slice_endpoints,
        "ports": [{ "name": "https", "port": port, "protocol": "TCP" }]
    });
    put_if_changed(
        registry,
        target("discovery.k8s.io", "endpointslices", Some("default"))?,
        slice,
        "/endpoints",
    )
    .await
}

pub(crate) async fn create_if_missing(
    registry: &Registry,
    t: Target<'_>,
    obj: Value,
) -> Result<(), ApiError> {
    let strategy = strategies::for_resource(t.info);
    match registry
        .create(t, strategy, obj, &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `obj` as given (status included) when no object of its name exists.
pub(crate) async fn put_if_missing(
    registry: &Registry,
    t: Target<'_>,
    obj: Value,
) -> Result<(), ApiError> {
    // Every stored object of that name has the same name: only a missing one is written.
    put_if_changed(registry, t, obj, "/metadata/name").await
}

/// Writes `obj` unless the stored one already has the same value at `pointer`. Servers sharing
/// one store (etcd) may race here: a write that lost (conflict, already exists) reads again.
pub(crate) async fn put_if_changed(
    registry: &Registry,
    t: Target<'_>,
    obj: Value,
    pointer: &str,
) -> Result<(), ApiError> {
    let mut attempt = 0;
    loop {
        match put_if_changed_once(registry, t, obj.clone(), pointer).await {
            Err(e) if (e.is_conflict() || e.is_already_exists()) && attempt < 10 => attempt += 1,
            other => return other,
        }
    }
}

async fn put_if_changed_once(
    registry: &Registry,
    t: Target<'_>,
    mut obj: Value,
    pointer: &str,
) -> Result<(), ApiError> {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    match registry.get(t, &name).await {
        Ok(current) if current.pointer(pointer) == obj.pointer(pointer) => Ok(()),
        Ok(current) => {
            obj["metadata"]["uid"] = current["metadata"]["uid"].clone();
            obj["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"].clone();
            registry.put_raw(t, &obj).await.map(|_| ())
        }
        Err(e) if e.is_not_found() => {
            obj["metadata"]["uid"] = Value::String(uuid::Uuid::new_v4().to_string());
            obj["metadata"]["creationTimestamp"] = Value::String(now_rfc3339());
            registry.put_raw(t, &obj).await.map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// The host's first non-loopback IPv4 address (upstream's default advertise address), read
/// from the kernel's routing tables without sending anything.
pub fn default_advertise_address() -> Option<IpAddr> {
    let trie = std::fs::read_to_string("/proc/net/fib_trie").ok()?;
    let mut last_ip: Option<IpAddr> = None;
    for line in trie.lines() {
        let t = line.trim_start_matches([' ', '|', '-', '+']).trim();
        if t.contains("/32 host LOCAL") {
            if let Some(ip) = last_ip.filter(|ip| !ip.is_loopback()) {
                return Some(ip);
            }
        } else if let Ok(ip) = t.parse::<IpAddr>() {
            last_ip = Some(ip);
        }
    }
    None
}
