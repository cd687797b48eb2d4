//! Service ClusterIP and NodePort allocation, as upstream's allocators do it: from the service
//! CIDR (10.96.0.0/12) and the node-port range (30000-32767), never handing out a value twice.
//!
//! The used sets are loaded from the stored services on first use and guarded by one lock, so
//! concurrent creates in this process cannot collide.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use k1s_apimachinery::{ApiError, FieldError};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::registry::{ListQuery, Registry, Target};

/// 10.96.0.0/12: upstream's default service CIDR.
const CIDR_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const CIDR_SIZE: u32 = 1 << 20;
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

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

fn ip_of(v: &Value) -> Option<u32> {
    v.as_str()?.parse::<Ipv4Addr>().ok().map(u32::from)
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

fn invalid(svc: &Value, field: &str, value: Value, detail: &str) -> ApiError {
    let name = svc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ApiError::invalid(
        "Service",
        "",
        name,
        vec![FieldError::invalid(field, value, detail)],
    )
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
            let mut used = Used {
                next_ip: 2,
                next_port: *NODE_PORTS.start(),
                ..Default::default()
            };
            for svc in &list.items {
                if let Some(ip) = svc.pointer("/spec/clusterIP").and_then(ip_of) {
                    used.ips.insert(ip);
                }
                used.ports.extend(node_ports(svc));
            }
            *guard = Some(used);
        }
        Ok(guard)
    }

    /// Fills in `clusterIP(s)` and node ports of a new Service, or checks requested ones.
    pub async fn allocate(
        &self,
        registry: &Registry,
        services: Target<'_>,
        svc: &mut Value,
    ) -> Result<(), ApiError> {
        let ty = svc
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string();
        if ty == "ExternalName" {
            return Ok(());
        }
        let mut guard = self.load(registry, services).await?;
        let Some(used) = guard.as_mut() else {
            return Err(ApiError::internal("allocator not loaded"));
        };
        let requested = svc
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let ip = match requested.as_str() {
            "None" => None,
            "" => {
                let mut found = None;
                for step in 0..CIDR_SIZE {
                    let offset = (used.next_ip + step) % CIDR_SIZE;
                    let candidate = CIDR_BASE + offset;
                    // Skip the network address and the last one; .1 belongs to `kubernetes`.
                    if offset == 0 || offset == CIDR_SIZE - 1 || used.ips.contains(&candidate) {
                        continue;
                    }
                    used.next_ip = offset + 1;
                    found = Some(candidate);
                    break;
                }
                Some(found.ok_or_else(|| {
                    ApiError::internal("failed to allocate a serviceIP: range is full")
                })?)
            }
            text => {
                let ip = text.parse::<Ipv4Addr>().map(u32::from).map_err(|_| {
                    invalid(
                        svc,
                        "spec.clusterIPs[0]",
                        json!(text),
                        "must be a valid IP address",
                    )
                })?;
                if !(CIDR_BASE..CIDR_BASE + CIDR_SIZE).contains(&ip) {
                    return Err(invalid(
                        svc,
                        "spec.clusterIPs[0]",
                        json!(text),
                        "failed to allocate IP: the provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12",
                    ));
                }
                if used.ips.contains(&ip) {
                    return Err(invalid(
                        svc,
                        "spec.clusterIPs[0]",
                        json!(text),
                        "failed to allocate IP: provided IP is already allocated",
                    ));
                }
                Some(ip)
            }
        };
        let ports = if ty == "NodePort" || ty == "LoadBalancer" {
            allocate_node_ports(used, svc)?
        } else {
            Vec::new()
        };
        if let Some(ip) = ip {
            used.ips.insert(ip);
            let text = Ipv4Addr::from(ip).to_string();
            svc["spec"]["clusterIP"] = json!(text);
            svc["spec"]["clusterIPs"] = json!([text]);
        } else {
            svc["spec"]["clusterIPs"] = json!(["None"]);
        }
        svc["spec"]["ipFamilies"] = json!(["IPv4"]);
        svc["spec"]["ipFamilyPolicy"] = json!("SingleStack");
        used.ports.extend(ports);
        Ok(())
    }

    /// Returns a deleted Service's IP and ports to the pools.
    pub async fn release(&self, svc: &Value) {
        if let Some(used) = self.used.lock().await.as_mut() {
            if let Some(ip) = svc.pointer("/spec/clusterIP").and_then(ip_of) {
                used.ips.remove(&ip);
            }
            for p in node_ports(svc) {
                used.ports.remove(&p);
            }
        }
    }
}

/// Checks requested node ports and assigns free ones to the ports that have none.
fn allocate_node_ports(used: &mut Used, svc: &mut Value) -> Result<Vec<i64>, ApiError> {
    let name = svc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
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
        return Ok(taken);
    };
    let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
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
                    .map(|step| {
                        NODE_PORTS.start() + (used.next_port - NODE_PORTS.start() + step) % span
                    })
                    .find(|n| !used.ports.contains(n) && !taken.contains(n))
                    .ok_or_else(|| {
                        ApiError::internal("failed to allocate a nodePort: range is full")
                    })?;
                used.next_port = free + 1;
                free
            }
        };
        p["nodePort"] = json!(port);
        taken.push(port);
    }
    Ok(taken)
}
