//! Service ClusterIP and NodePort allocation, as upstream's allocators do it: from the service
//! CIDR (10.96.0.0/12, the default ServiceCIDR `kubernetes`) and the node-port range
//! (30000-32767), never handing out a value twice.
//!
//! Each ClusterIP is held by an IPAddress object named by the address (upstream's
//! MultiCIDRServiceAllocator): creating it is the allocation, so an IP whose IPAddress exists
//! is never handed out, and deleting it is the release. The used sets are loaded from the
//! stored Services and IPAddresses on first use and guarded by one lock, so concurrent creates
//! in this process do not race for one address; an IPAddress written by anyone else shows up as
//! AlreadyExists and the next address is tried.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::{ApiError, FieldError};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::registry::{DeleteOptions, ListQuery, Registry, Target, WriteOptions};
use crate::strategies;

/// 10.96.0.0/12: upstream's default service CIDR, the spec of the ServiceCIDR `kubernetes`.
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
const CIDR_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const CIDR_SIZE: u32 = 1 << 20;
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;
/// Labels upstream's allocator puts on the IPAddresses it creates.
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "ipallocator.k8s.io";
pub const IP_FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// Addresses tried when IPAddresses made elsewhere keep answering AlreadyExists.
const ATTEMPTS: usize = 32;

#[derive(Default)]
struct Used {
    ips: HashSet<u32>,
    ports: HashSet<i64>,
    next_ip: u32,
    next_port: i64,
}

#[derive(Default)]
pub struct ServiceAllocator {
    used: Mutex<Option<Used>>,
}

fn ip_of(text: &str) -> Option<u32> {
    text.parse::<Ipv4Addr>().ok().map(u32::from)
}

fn in_range(ip: u32) -> bool {
    (CIDR_BASE..CIDR_BASE + CIDR_SIZE).contains(&ip)
}

fn node_ports(svc: &Value) -> Vec<i64> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
                .collect()
        })
        .unwrap_or_default()
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn invalid(svc: &Value, field: &str, value: Value, detail: &str) -> ApiError {
    ApiError::invalid(
        "Service",
        "",
        text(svc, "/metadata/name"),
        vec![FieldError::invalid(field, value, detail)],
    )
}

fn ip_addresses() -> Result<Target<'static>, ApiError> {
    let info: &'static ResourceInfo = catalog::find("networking.k8s.io", "v1", "ipaddresses")
        .ok_or_else(|| ApiError::internal("ipaddresses missing from the catalog"))?;
    Ok(Target {
        info,
        namespace: None,
    })
}

/// The IPAddress upstream's allocator writes for a Service's ClusterIP.
pub fn ip_address_object(ip: &str, namespace: &str, service: &str) -> Value {
    let family = ip
        .parse::<IpAddr>()
        .map_or("IPv4", |ip| strategies::networking::ip_family(&ip));
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
        "metadata": { "name": ip, "labels": {
            IP_FAMILY_LABEL: family, MANAGED_BY_LABEL: MANAGED_BY } },
        "spec": { "parentRef": {
            "group": "", "resource": "services", "namespace": namespace, "name": service } }
    })
}

/// Creates the IPAddress that holds `ip` for a Service (AlreadyExists when it is taken).
pub async fn create_ip_address(
    registry: &Registry,
    ip: &str,
    namespace: &str,
    service: &str,
) -> Result<(), ApiError> {
    let t = ip_addresses()?;
    let obj = ip_address_object(ip, namespace, service);
    registry
        .create(
            t,
            strategies::for_resource(t.info),
            obj,
            &WriteOptions::default(),
        )
        .await
        .map(|_| ())
}

/// Whether a stored IPAddress is the one held for Service `namespace/name`.
fn held_by(addr: &Value, namespace: &str, name: &str) -> bool {
    let p = |k: &str| text(addr, &format!("/spec/parentRef/{k}"));
    p("group").is_empty()
        && p("resource") == "services"
        && p("namespace") == namespace
        && p("name") == name
}

impl ServiceAllocator {
    async fn load(
        &self,
        registry: &Registry,
        services: Target<'_>,
    ) -> Result<tokio::sync::MutexGuard<'_, Option<Used>>, ApiError> {
        let mut guard = self.used.lock().await;
        if guard.is_none() {
            let all = Target {
                info: services.info,
                namespace: None,
            };
            let list = registry.list(all, &ListQuery::default()).await?;
            let held = registry
                .list(ip_addresses()?, &ListQuery::default())
                .await?;
            let mut used = Used {
                next_ip: 2,
                next_port: *NODE_PORTS.start(),
                ..Default::default()
            };
            let names: HashSet<&str> = held
                .items
                .iter()
                .map(|a| text(a, "/metadata/name"))
                .collect();
            used.ips.extend(
                names
                    .iter()
                    .filter_map(|n| n.parse::<Ipv4Addr>().ok())
                    .map(u32::from),
            );
            for svc in &list.items {
                let ip_text = text(svc, "/spec/clusterIP");
                if let Some(ip) = ip_of(ip_text) {
                    used.ips.insert(ip);
                    // Services stored before IPAddresses existed get theirs now (upstream's
                    // repair loop does the same).
                    if in_range(ip) && !names.contains(ip_text) {
                        let ns = text(svc, "/metadata/namespace");
                        let name = text(svc, "/metadata/name");
                        match create_ip_address(registry, ip_text, ns, name).await {
                            Ok(()) => {}
                            Err(e) if e.is_already_exists() => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                used.ports.extend(node_ports(svc));
            }
            *guard = Some(used);
        }
        Ok(guard)
    }

    /// Picks the next free address (requested: checks it) and marks it used.
    async fn reserve(
        &self,
        registry: &Registry,
        services: Target<'_>,
        svc: &Value,
        requested: &str,
    ) -> Result<u32, ApiError> {
        let mut guard = self.load(registry, services).await?;
        let Some(used) = guard.as_mut() else {
            return Err(ApiError::internal("allocator not loaded"));
        };
        if requested.is_empty() {
            for step in 0..CIDR_SIZE {
                let offset = (used.next_ip + step) % CIDR_SIZE;
                let candidate = CIDR_BASE + offset;
                // Skip the network address and the last one; .1 belongs to `kubernetes`.
                if offset == 0 || offset == CIDR_SIZE - 1 || used.ips.contains(&candidate) {
                    continue;
                }
                used.next_ip = offset + 1;
                used.ips.insert(candidate);
                return Ok(candidate);
            }
            return Err(ApiError::internal(
                "failed to allocate a serviceIP: range is full",
            ));
        }
        let ip = requested.parse::<Ipv4Addr>().map(u32::from).map_err(|_| {
            invalid(
                svc,
                "spec.clusterIPs[0]",
                json!(requested),
                "must be a valid IP address",
            )
        })?;
        if !in_range(ip) {
            return Err(invalid(
                svc,
                "spec.clusterIPs[0]",
                json!(requested),
                &format!(
                    "failed to allocate IP: the provided IP is not in the valid range. The range of valid IPs is {SERVICE_CIDR}"
                ),
            ));
        }
        if !used.ips.insert(ip) {
            return Err(already_allocated(svc, requested));
        }
        Ok(ip)
    }

    /// Fills in `clusterIP(s)` and node ports of a new Service, or checks requested ones, and
    /// creates the IPAddress holding its ClusterIP (not for a dry run). The Service's name
    /// must be set (generated names first).
    pub async fn allocate(
        &self,
        registry: &Registry,
        services: Target<'_>,
        svc: &mut Value,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let ty = text(svc, "/spec/type");
        let ty = if ty.is_empty() { "ClusterIP" } else { ty }.to_string();
        if ty == "ExternalName" {
            return Ok(());
        }
        let requested = text(svc, "/spec/clusterIP").to_string();
        let namespace = services
            .namespace
            .unwrap_or_else(|| text(svc, "/metadata/namespace"))
            .to_string();
        let name = text(svc, "/metadata/name").to_string();
        let mut ip = None;
        if requested != "None" {
            for attempt in 0.. {
                let candidate = self.reserve(registry, services, svc, &requested).await?;
                let candidate_text = Ipv4Addr::from(candidate).to_string();
                if dry_run {
                    ip = Some((candidate, candidate_text));
                    break;
                }
                match create_ip_address(registry, &candidate_text, &namespace, &name).await {
                    Ok(()) => {
                        ip = Some((candidate, candidate_text));
                        break;
                    }
                    // Held by an IPAddress this process did not know of: it stays marked used.
                    Err(e) if e.is_already_exists() => {
                        if !requested.is_empty() {
                            return Err(already_allocated(svc, &requested));
                        }
                        if attempt + 1 >= ATTEMPTS {
                            return Err(ApiError::internal(
                                "failed to allocate a serviceIP: every address tried is held by an IPAddress",
                            ));
                        }
                    }
                    Err(e) => {
                        self.forget(Some(candidate), &[]).await;
                        return Err(e);
                    }
                }
            }
        }
        let ports = if ty == "NodePort" || ty == "LoadBalancer" {
            let mut guard = self.used.lock().await;
            match guard.as_mut() {
                Some(used) => allocate_node_ports(used, svc),
                None => Err(ApiError::internal("allocator not loaded")),
            }
        } else {
            Ok(())
        };
        if let Err(e) = ports {
            if let Some((candidate, candidate_text)) = &ip {
                self.forget(Some(*candidate), &[]).await;
                if !dry_run {
                    delete_ip_address(registry, candidate_text, &namespace, &name).await;
                }
            }
            return Err(e);
        }
        match ip {
            Some((_, addr)) => {
                svc["spec"]["clusterIP"] = json!(addr);
                svc["spec"]["clusterIPs"] = json!([addr]);
            }
            None => svc["spec"]["clusterIPs"] = json!(["None"]),
        }
        svc["spec"]["ipFamilies"] = json!(["IPv4"]);
        svc["spec"]["ipFamilyPolicy"] = json!("SingleStack");
        Ok(())
    }

    async fn forget(&self, ip: Option<u32>, ports: &[i64]) {
        if let Some(used) = self.used.lock().await.as_mut() {
            if let Some(ip) = ip {
                used.ips.remove(&ip);
            }
            for p in ports {
                used.ports.remove(p);
            }
        }
    }

    /// Returns a deleted Service's IP and ports to the pools; with `delete_object`, deletes
    /// the IPAddress that held its ClusterIP (when it is still held for this Service).
    pub async fn release(&self, registry: &Registry, svc: &Value, delete_object: bool) {
        let ip_text = text(svc, "/spec/clusterIP");
        let ip = ip_of(ip_text);
        self.forget(ip, &node_ports(svc)).await;
        if delete_object && ip.is_some() {
            let ns = text(svc, "/metadata/namespace");
            let name = text(svc, "/metadata/name");
            delete_ip_address(registry, ip_text, ns, name).await;
        }
    }
}

fn already_allocated(svc: &Value, requested: &str) -> ApiError {
    invalid(
        svc,
        "spec.clusterIPs[0]",
        json!(requested),
        "failed to allocate IP: provided IP is already allocated",
    )
}

/// Deletes the IPAddress `ip` if it is held for Service `namespace/name` (a release that
/// fails leaves an orphan, which only costs that one address; it is logged).
async fn delete_ip_address(registry: &Registry, ip: &str, namespace: &str, name: &str) {
    let Ok(t) = ip_addresses() else { return };
    let current = match registry.get(t, ip).await {
        Ok(obj) => obj,
        Err(e) if e.is_not_found() => return,
        Err(e) => {
            tracing::warn!(ip, error = %e, "reading the IPAddress to release failed");
            return;
        }
    };
    if !held_by(&current, namespace, name) {
        return;
    }
    let opts = DeleteOptions {
        precondition_uid: Some(text(&current, "/metadata/uid").to_string()),
        ..Default::default()
    };
    if let Err(e) = registry.delete(t, ip, &opts).await
        && !e.is_not_found()
    {
        tracing::warn!(ip, error = %e, "releasing the IPAddress failed");
    }
}

/// Checks requested node ports and assigns free ones to the ports that have none.
fn allocate_node_ports(used: &mut Used, svc: &mut Value) -> Result<(), ApiError> {
    let name = text(svc, "/metadata/name").to_string();
    let port_error = |i: usize, n: i64, detail: &str| {
        ApiError::invalid(
            "Service",
            "",
            &name,
            vec![FieldError::invalid(
                format!("spec.ports[{i}].nodePort"),
                n,
                detail,
            )],
        )
    };
    let mut taken: Vec<i64> = Vec::new();
    let Some(list) = svc.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
    let mut next_port = used.next_port;
    for (i, p) in list.iter_mut().enumerate() {
        let port = match p.get("nodePort").and_then(Value::as_i64) {
            Some(n) if !NODE_PORTS.contains(&n) => {
                return Err(port_error(
                    i,
                    n,
                    "provided port is not in the valid range. The range of valid ports is 30000-32767",
                ));
            }
            Some(n) if used.ports.contains(&n) || taken.contains(&n) => {
                return Err(port_error(i, n, "provided port is already allocated"));
            }
            Some(n) => n,
            None => {
                let free = (0..span)
                    .map(|step| NODE_PORTS.start() + (next_port - NODE_PORTS.start() + step) % span)
                    .find(|n| !used.ports.contains(n) && !taken.contains(n))
                    .ok_or_else(|| {
                        ApiError::internal("failed to allocate a nodePort: range is full")
                    })?;
                next_port = free + 1;
                free
            }
        };
        p["nodePort"] = json!(port);
        taken.push(port);
    }
    used.next_port = next_port;
    used.ports.extend(taken);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::registry::Strategy;

    #[test]
    fn ip_address_objects_name_their_service() {
        let obj = ip_address_object("10.96.0.10", "default", "web");
        assert_eq!(obj["metadata"]["labels"][MANAGED_BY_LABEL], MANAGED_BY);
        assert_eq!(obj["metadata"]["labels"][IP_FAMILY_LABEL], "IPv4");
        assert!(held_by(&obj, "default", "web"));
        assert!(!held_by(&obj, "default", "api"));
        assert!(!held_by(&obj, "other", "web"));
        let errs = strategies::networking::IpAddresses.validate(&obj);
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn node_ports_are_checked_and_assigned() {
        let mut used = Used {
            next_port: *NODE_PORTS.start(),
            ..Default::default()
        };
        used.ports.insert(30000);
        let mut svc = json!({ "metadata": { "name": "s" },
            "spec": { "ports": [{ "port": 80 }, { "port": 81, "nodePort": 30005 }] } });
        allocate_node_ports(&mut used, &mut svc).unwrap();
        assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30001);
        assert!(used.ports.contains(&30005) && used.ports.contains(&30001));
        let mut taken = json!({ "metadata": { "name": "t" },
            "spec": { "ports": [{ "port": 80, "nodePort": 30005 }] } });
        let err = allocate_node_ports(&mut used, &mut taken).unwrap_err();
        assert!(
            err.to_string()
                .contains("provided port is already allocated"),
            "{err}"
        );
        let mut outside = json!({ "metadata": { "name": "u" },
            "spec": { "ports": [{ "port": 80, "nodePort": 80 }] } });
        assert!(allocate_node_ports(&mut used, &mut outside).is_err());
    }
}
