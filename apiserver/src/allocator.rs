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
use std::sync::Arc;

use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::ip::Cidr;
use k1s_apimachinery::{ApiError, FieldError};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::registry::{DeleteOptions, ListQuery, Registry, Target, WriteOptions};
use crate::strategies;

/// 10.96.0.0/12: upstream's default service CIDR, the spec of the ServiceCIDR `kubernetes`.
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;
/// Labels upstream's allocator puts on the IPAddresses it creates.
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "ipallocator.k8s.io";
pub const IP_FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
/// How often the repair loop looks for orphaned IPAddresses (upstream's repair interval).
pub const REPAIR_INTERVAL: std::time::Duration = std::time::Duration::from_secs(180);
/// Addresses tried when IPAddresses made elsewhere keep answering AlreadyExists.
const ATTEMPTS: usize = 32;

#[derive(Default)]
struct Used {
    ips: HashSet<u32>,
    ports: HashSet<i64>,
    next_ip: u32,
    next_port: i64,
}

pub struct ServiceAllocator {
    used: Mutex<Option<Used>>,
    /// The default ServiceCIDR's range (`--service-cluster-ip-range`).
    range: Range,
    /// Node ports are claimed in the store too (one key per port), for servers sharing one
    /// store (etcd): this process's memory does not see the others' allocations.
    claims_in_store: bool,
}

/// The store key that holds node port `port` for one Service.
fn port_key(port: i64) -> String {
    format!("/ranges/servicenodeports/{port}")
}

impl Default for ServiceAllocator {
    fn default() -> Self {
        ServiceAllocator::new(Range::default())
    }
}

fn ip_of(text: &str) -> Option<u32> {
    text.parse::<Ipv4Addr>().ok().map(u32::from)
}

/// An IPv4 Service range: the default ServiceCIDR's or another one's, with its text.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    text: String,
    cidr: Cidr,
}

impl Default for Range {
    fn default() -> Self {
        Range::for_flag(SERVICE_CIDR).unwrap_or_else(|_| unreachable!("the default range is valid"))
    }
}

impl Range {
    /// `None` for IPv6 (k1s allocates IPv4 only) and malformed text.
    fn parse(text: &str) -> Option<Range> {
        let (cidr, _) = Cidr::parse(text).filter(|(c, _)| c.is_ipv4())?;
        Some(Range {
            text: cidr.to_string(),
            cidr,
        })
    }

    /// `--service-cluster-ip-range`: an IPv4 subnet from /12 (upstream's largest, 2^20
    /// addresses) to /30 (room for the `kubernetes` Service).
    pub fn for_flag(text: &str) -> Result<Range, String> {
        let range = match Cidr::parse(text) {
            Some((c, _)) if !c.is_ipv4() => {
                return Err(format!(
                    "--service-cluster-ip-range {text}: k1s allocates IPv4 Service addresses only"
                ));
            }
            Some(_) => Range::parse(text),
            None => None,
        }
        .ok_or_else(|| {
            format!("--service-cluster-ip-range {text}: not a CIDR (e.g. 10.96.0.0/12)")
        })?;
        match range.cidr.prefix {
            0..12 => Err(format!(
                "specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12 ({text})"
            )),
            31.. => Err(format!(
                "--service-cluster-ip-range {text}: too small, a /30 or larger leaves room for the kubernetes Service"
            )),
            _ => Ok(range),
        }
    }

    /// The subnet as text (`10.96.0.0/12`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The `kubernetes` Service's address: the first after the network address.
    pub fn kubernetes_ip(&self) -> IpAddr {
        self.cidr.nth(1)
    }

    fn contains(&self, ip: u32) -> bool {
        self.cidr.contains(&IpAddr::V4(Ipv4Addr::from(ip)))
    }

    /// The first address and the number of addresses (at most 2^32 - 1).
    fn base_and_size(&self) -> (u32, u32) {
        let base = match self.cidr.addr {
            IpAddr::V4(a) => u32::from(a),
            IpAddr::V6(_) => 0,
        };
        (base, u32::try_from(self.cidr.size()).unwrap_or(u32::MAX))
    }

    /// The first address not in `used`, leaving out the network and broadcast addresses of
    /// subnets that have them.
    fn first_free(&self, used: &HashSet<u32>) -> Option<u32> {
        let size = self.cidr.size();
        let (first, end) = if size > 2 { (1, size - 1) } else { (0, size) };
        (first..end)
            .filter_map(|offset| match self.cidr.nth(offset) {
                IpAddr::V4(ip) => Some(u32::from(ip)),
                IpAddr::V6(_) => None,
            })
            .find(|ip| !used.contains(ip))
    }
}

/// Whether a ServiceCIDR serves new addresses: Ready and not being deleted.
fn serves(cidr: &Value) -> bool {
    cidr.pointer("/metadata/deletionTimestamp").is_none()
        && cidr
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
}

/// The ranges of the ServiceCIDRs besides the default one that serve addresses, by name.
async fn extra_ranges(registry: &Registry) -> Result<Vec<Range>, ApiError> {
    let info = catalog::find("networking.k8s.io", "v1", "servicecidrs")
        .ok_or_else(|| ApiError::internal("servicecidrs missing from the catalog"))?;
    let t = Target {
        info,
        namespace: None,
    };
    let list = registry.list(t, &ListQuery::default()).await?;
    let mut ranges: Vec<Range> = list
        .items
        .iter()
        .filter(|c| text(c, "/metadata/name") != crate::bootstrap_servicecidr::DEFAULT_SERVICE_CIDR)
        .filter(|c| serves(c))
        .flat_map(|c| {
            c.pointer("/spec/cidrs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().and_then(Range::parse))
                .collect::<Vec<_>>()
        })
        .collect();
    ranges.sort_by(|a, b| a.text.cmp(&b.text));
    Ok(ranges)
}

/// Every node port a Service holds: its ports' and its health check node port.
fn node_ports(svc: &Value) -> Vec<i64> {
    let mut ports: Vec<i64> = port_list(svc)
        .iter()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        .collect();
    ports.extend(health_check_node_port(svc));
    ports
}

/// The health check node port a Service holds (only one that needs it holds one).
fn health_check_node_port(svc: &Value) -> Option<i64> {
    if !strategies::service::needs_health_check(svc) {
        return None;
    }
    svc.pointer("/spec/healthCheckNodePort")
        .and_then(Value::as_i64)
        .filter(|n| *n != 0)
}

/// The string at JSON `pointer` in `v`, or `""`.
pub(crate) fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's initIPFamilyFields on a create, for this IPv4-only cluster (what it refuses was
/// checked before): a policy the client gave is kept (PreferDualStack stays, with IPv4 alone);
/// none means SingleStack, except for a headless Service without a selector, which is
/// RequireDualStack and, like any such Service not SingleStack, names both families.
fn init_ip_families(svc: &mut Value) {
    let headless_selectorless = text(svc, "/spec/clusterIP") == "None"
        && svc
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty());
    let policy = match text(svc, "/spec/ipFamilyPolicy") {
        "" if headless_selectorless => "RequireDualStack",
        "" => "SingleStack",
        given => given,
    }
    .to_string();
    let mut families: Vec<Value> = svc
        .pointer("/spec/ipFamilies")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if families.is_empty() {
        families.push(json!("IPv4"));
    }
    if headless_selectorless && families.len() < 2 && policy != "SingleStack" {
        let other = if families[0] == "IPv6" {
            "IPv4"
        } else {
            "IPv6"
        };
        families.push(json!(other));
    }
    svc["spec"]["ipFamilies"] = Value::Array(families);
    svc["spec"]["ipFamilyPolicy"] = json!(policy);
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
    /// An allocator whose default range is `range`.
    pub fn new(range: Range) -> Self {
        ServiceAllocator {
            used: Mutex::new(None),
            range,
            claims_in_store: false,
        }
    }

    /// The same, claiming node ports in the store when `shared` (several servers on etcd).
    pub fn sharing_the_store(mut self, shared: bool) -> Self {
        self.claims_in_store = shared;
        self
    }

    /// Claims `ports` for `owner` in the store (when sharing it). Returns the first port
    /// another server holds, having given back the ones claimed here.
    async fn claim_ports(
        &self,
        registry: &Registry,
        ports: &[i64],
        owner: &str,
    ) -> Result<Option<i64>, ApiError> {
        if !self.claims_in_store {
            return Ok(None);
        }
        let store = registry.store();
        for (i, port) in ports.iter().enumerate() {
            let value = bytes::Bytes::from(owner.to_string());
            match store.create(&port_key(*port), value).await {
                Ok(_) => {}
                Err(k1s_storage::Error::AlreadyExists { .. }) => {
                    self.unclaim_ports(registry, &ports[..i]).await;
                    return Ok(Some(*port));
                }
                Err(e) => {
                    self.unclaim_ports(registry, &ports[..i]).await;
                    return Err(ApiError::internal(format!(
                        "claiming node port {port}: {e}"
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Gives claimed node ports back in the store (when sharing it).
    async fn unclaim_ports(&self, registry: &Registry, ports: &[i64]) {
        if !self.claims_in_store {
            return;
        }
        for port in ports {
            match registry.store().delete(&port_key(*port), None).await {
                Ok(_) | Err(k1s_storage::Error::NotFound { .. }) => {}
                Err(e) => tracing::warn!(port, error = %e, "releasing a node port claim failed"),
            }
        }
    }

    /// The default range.
    pub fn range(&self) -> &Range {
        &self.range
    }

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
                    if self.range.contains(ip) && !names.contains(ip_text) {
                        let ns = text(svc, "/metadata/namespace");
                        let name = text(svc, "/metadata/name");
                        match create_ip_address(registry, ip_text, ns, name).await {
                            Ok(()) => {}
                            Err(e) if e.is_already_exists() => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                let ports = node_ports(svc);
                if self.claims_in_store {
                    // Services stored before claims existed (or by a server that crashed
                    // before claiming) get theirs now; another's claim is left alone.
                    let owner = format!(
                        "{}/{}",
                        text(svc, "/metadata/namespace"),
                        text(svc, "/metadata/name")
                    );
                    for port in &ports {
                        let value = bytes::Bytes::from(owner.clone());
                        match registry.store().create(&port_key(*port), value).await {
                            Ok(_) | Err(k1s_storage::Error::AlreadyExists { .. }) => {}
                            Err(e) => return Err(ApiError::internal(e.to_string())),
                        }
                    }
                }
                used.ports.extend(ports);
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
        // The other ServiceCIDRs (upstream's MultiCIDRServiceAllocator) serve once the default
        // range is full, and for addresses requested in them.
        let extra = extra_ranges(registry).await?;
        let mut guard = self.load(registry, services).await?;
        let Some(used) = guard.as_mut() else {
            return Err(ApiError::internal("allocator not loaded"));
        };
        if requested.is_empty() {
            let (base, size) = self.range.base_and_size();
            for step in 0..size {
                let offset = (used.next_ip + step) % size;
                let candidate = base + offset;
                // Skip the network address and the last one; .1 belongs to `kubernetes`.
                if offset == 0 || offset == size - 1 || used.ips.contains(&candidate) {
                    continue;
                }
                used.next_ip = offset + 1;
                used.ips.insert(candidate);
                return Ok(candidate);
            }
            if let Some(candidate) = extra.iter().find_map(|r| r.first_free(&used.ips)) {
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
        if !self.range.contains(ip) && !extra.iter().any(|r| r.contains(ip)) {
            let valid: Vec<&str> = std::iter::once(self.range.text())
                .chain(extra.iter().map(|r| r.text.as_str()))
                .collect();
            return Err(invalid(
                svc,
                "spec.clusterIPs[0]",
                json!(requested),
                &format!(
                    "failed to allocate IP: the provided IP is not in the valid range. The range of valid IPs is {}",
                    valid.join(", ")
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
        // Families this IPv4-only cluster cannot give are refused before anything is held.
        let refused = crate::strategies::service::single_stack_cluster_errors(svc);
        if !refused.is_empty() {
            return Err(ApiError::invalid(
                "Service",
                "",
                text(svc, "/metadata/name"),
                refused,
            ));
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
            let owner = format!("{namespace}/{name}");
            self.allocate_claimed(registry, svc, &owner, dry_run).await
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
        init_ip_families(svc);
        Ok(())
    }

    /// Assigns and checks `svc`'s node ports, and (sharing the store, not in a dry run) claims
    /// them there; a port another server claimed first is marked used and another one picked.
    async fn allocate_claimed(
        &self,
        registry: &Registry,
        svc: &mut Value,
        owner: &str,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let requested = node_ports(svc);
        for _ in 0..ATTEMPTS {
            let mut trial = svc.clone();
            let mut guard = self.used.lock().await;
            let Some(used) = guard.as_mut() else {
                return Err(ApiError::internal("allocator not loaded"));
            };
            allocate_node_ports(used, &mut trial)?;
            let ports = node_ports(&trial);
            if dry_run {
                *svc = trial;
                return Ok(());
            }
            match self.claim_ports(registry, &ports, owner).await {
                Ok(None) => {
                    *svc = trial;
                    return Ok(());
                }
                Ok(Some(taken)) => {
                    // Held elsewhere: it stays marked used here; the others go back.
                    for p in ports.iter().filter(|p| **p != taken) {
                        used.ports.remove(p);
                    }
                    if requested.contains(&taken) {
                        return Err(already_held_port(svc, taken));
                    }
                }
                Err(e) => {
                    for p in &ports {
                        used.ports.remove(p);
                    }
                    return Err(e);
                }
            }
        }
        Err(ApiError::internal(
            "failed to allocate a nodePort: every port tried is claimed by another server",
        ))
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
        if delete_object {
            self.unclaim_ports(registry, &node_ports(svc)).await;
        }
        if delete_object && ip.is_some() {
            let ns = text(svc, "/metadata/namespace");
            let name = text(svc, "/metadata/name");
            delete_ip_address(registry, ip_text, ns, name).await;
        }
    }
}

/// Upstream's RepairIPAddress, orphan half: an IPAddress this allocator manages whose Service
/// is gone (or holds another address) is left by a create that crashed half-way or a release
/// that failed. One seen orphaned in two passes in a row is deleted and its address freed; the
/// second look spares an address whose Service is still being created.
pub fn start_repair(
    registry: Registry,
    allocator: Arc<ServiceAllocator>,
    interval: std::time::Duration,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut suspects = HashSet::new();
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                _ = tokio::time::sleep(interval) => {}
            }
            if let Err(e) = allocator.repair(&registry, &mut suspects).await {
                tracing::info!(error = %e, "the IPAddress repair pass failed; trying again later");
            }
        }
    });
}

impl ServiceAllocator {
    async fn repair(
        &self,
        registry: &Registry,
        suspects: &mut HashSet<String>,
    ) -> Result<(), ApiError> {
        // Addresses first: a Service created after this list is in the next one.
        let addresses = registry
            .list(ip_addresses()?, &ListQuery::default())
            .await?
            .items;
        let services = catalog::find("", "v1", "services")
            .ok_or_else(|| ApiError::internal("services are not in the catalog"))?;
        let all = Target {
            info: services,
            namespace: None,
        };
        let held: HashSet<(String, String, String)> = registry
            .list(all, &ListQuery::default())
            .await?
            .items
            .iter()
            .flat_map(|svc| {
                let ns = text(svc, "/metadata/namespace").to_string();
                let name = text(svc, "/metadata/name").to_string();
                let ips: Vec<String> = svc
                    .pointer("/spec/clusterIPs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .chain(Some(text(svc, "/spec/clusterIP")))
                    .map(str::to_string)
                    .collect();
                ips.into_iter()
                    .map(move |ip| (ns.clone(), name.clone(), ip))
            })
            .collect();
        let mut orphans = HashSet::new();
        for addr in &addresses {
            if text(
                addr,
                &format!("/metadata/labels/{}", MANAGED_BY_LABEL.replace('/', "~1")),
            ) != MANAGED_BY
            {
                continue;
            }
            let ip = text(addr, "/metadata/name").to_string();
            let parent = |k: &str| text(addr, &format!("/spec/parentRef/{k}")).to_string();
            let owned = parent("resource") == "services"
                && held.contains(&(parent("namespace"), parent("name"), ip.clone()));
            if owned {
                continue;
            }
            if !suspects.contains(&ip) {
                orphans.insert(ip);
                continue;
            }
            tracing::info!(
                ip,
                service = %format!("{}/{}", parent("namespace"), parent("name")),
                "IPAddress appears to have leaked: cleaning up"
            );
            let opts = DeleteOptions {
                precondition_uid: Some(text(addr, "/metadata/uid").to_string()),
                ..Default::default()
            };
            match registry.delete(ip_addresses()?, &ip, &opts).await {
                Ok(_) => self.forget(ip_of(&ip), &[]).await,
                Err(e) if e.is_not_found() || e.is_conflict() => {}
                Err(e) => return Err(e),
            }
        }
        *suspects = orphans;
        Ok(())
    }
}

/// A requested node port another server claimed first, reported as upstream reports a taken one.
fn already_held_port(svc: &Value, port: i64) -> ApiError {
    const TAKEN: &str = "provided port is already allocated";
    let index = port_list(svc)
        .iter()
        .position(|p| p.get("nodePort").and_then(Value::as_i64) == Some(port));
    match index {
        Some(i) => ApiError::invalid(
            "Service",
            "",
            text(svc, "/metadata/name"),
            vec![FieldError::invalid(
                format!("spec.ports[{i}].nodePort"),
                port,
                TAKEN,
            )],
        ),
        None => ApiError::internal(format!(
            "failed to allocate requested HealthCheck NodePort {port}: {TAKEN}"
        )),
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

/// Addresses and ports set aside for a Service update before its read-modify-write runs (the
/// write's mutation cannot wait on the allocator), handed out by [`fill_update`].
#[derive(Default, Debug)]
pub struct Reserved {
    ip: Option<u32>,
    /// Free node ports for ports that have none.
    ports: Vec<i64>,
    /// Node ports the client asked for, checked free.
    requested: Vec<i64>,
    /// A free node port for a health check node port the Service now needs.
    health_check: Option<i64>,
}

/// What a Service update still needs from the allocator.
#[derive(Default, Debug, PartialEq)]
pub struct Needs {
    ip: bool,
    /// Node ports to assign.
    ports: usize,
    /// Node ports the client asked for that the old Service did not hold.
    requested: Vec<i64>,
    /// A health check node port to assign.
    health_check: bool,
}

fn service_type(svc: &Value) -> &str {
    match text(svc, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    }
}

fn needs_cluster_ip(svc: &Value) -> bool {
    service_type(svc) != "ExternalName"
}

fn needs_node_ports(svc: &Value) -> bool {
    matches!(service_type(svc), "NodePort" | "LoadBalancer")
}

/// Upstream's shouldAllocateNodePorts: a LoadBalancer with `allocateLoadBalancerNodePorts:
/// false` gets only the node ports it asks for (absent, the field defaults to true).
fn assigns_node_ports(svc: &Value) -> bool {
    !(service_type(svc) == "LoadBalancer"
        && svc.pointer("/spec/allocateLoadBalancerNodePorts") == Some(&Value::Bool(false)))
}

fn port_list(svc: &Value) -> &[Value] {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Upstream's dropTypeDependentFields and patchAllocatedValues for a Service update, then the
/// reserved values for what is still missing. Type-dependent values the client left as they
/// were go with a type that no longer needs them; values the client omitted are kept from the
/// old Service. Returns what still has to be reserved.
pub fn fill_update(old: &Value, new: &mut Value, reserved: &Reserved) -> Result<(), Needs> {
    let spec_of = |v: &Value, k: &str| v.pointer(&format!("/spec/{k}")).cloned();
    if needs_cluster_ip(old)
        && !needs_cluster_ip(new)
        && spec_of(old, "clusterIPs") == spec_of(new, "clusterIPs")
        && let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut)
    {
        for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            spec.remove(k);
        }
    }
    if needs_node_ports(old) && !needs_node_ports(new) {
        let same = port_list(old)
            .iter()
            .map(|p| p.get("nodePort"))
            .eq(port_list(new).iter().map(|p| p.get("nodePort")));
        if same && let Some(list) = new.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
            for p in list.iter_mut().filter_map(Value::as_object_mut) {
                p.remove("nodePort");
            }
        }
    }
    let mut needs = Needs::default();
    if needs_cluster_ip(new) && text(new, "/spec/clusterIP").is_empty() {
        let old_ip = needs_cluster_ip(old)
            .then(|| text(old, "/spec/clusterIP"))
            .filter(|ip| !ip.is_empty());
        let fill = match (old_ip, reserved.ip) {
            (Some(ip), _) => Some(ip.to_string()),
            (None, Some(ip)) => Some(Ipv4Addr::from(ip).to_string()),
            (None, None) => None,
        };
        match fill {
            Some(ip) => {
                new["spec"]["clusterIPs"] = if ip == "None" {
                    json!(["None"])
                } else {
                    json!([ip])
                };
                new["spec"]["clusterIP"] = json!(ip);
                new["spec"]["ipFamilies"] = json!(["IPv4"]);
                new["spec"]["ipFamilyPolicy"] = json!("SingleStack");
            }
            None => needs.ip = true,
        }
    }
    if needs_node_ports(new) {
        let held: Vec<i64> = if needs_node_ports(old) {
            node_ports(old)
        } else {
            Vec::new()
        };
        let in_new: Vec<i64> = node_ports(new).into_iter().filter(|n| *n != 0).collect();
        // Ports the old Service held, by port name, for new ports that omit theirs (unless
        // another port of the new Service uses that value now).
        let by_name: Vec<(&str, i64)> = if needs_node_ports(old) {
            port_list(old)
                .iter()
                .filter_map(|p| Some((text(p, "/name"), p.get("nodePort")?.as_i64()?)))
                .collect()
        } else {
            Vec::new()
        };
        let mut spare = reserved.ports.iter().copied();
        let assigns = assigns_node_ports(new);
        if let Some(list) = new.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
            for p in list.iter_mut() {
                if p.get("nodePort")
                    .and_then(Value::as_i64)
                    .is_some_and(|n| n != 0)
                {
                    continue;
                }
                let name = text(p, "/name").to_string();
                let kept = by_name
                    .iter()
                    .find(|(n, port)| *n == name && !in_new.contains(port))
                    .map(|(_, port)| *port);
                if kept.is_none() && !assigns {
                    continue;
                }
                match kept.or_else(|| spare.next()) {
                    Some(port) => p["nodePort"] = json!(port),
                    None => needs.ports += 1,
                }
            }
        }
        needs.requested = in_new
            .into_iter()
            .filter(|n| !held.contains(n) && !reserved.requested.contains(n))
            .collect();
    }
    // Upstream's patchAllocatedValues and updateHealthCheckNodePort: a Service that goes on
    // needing a health check node port keeps its old one when the client omits it; one that
    // starts needing it gets a free one (or the one it asks for, checked above).
    if strategies::service::needs_health_check(new) && health_check_node_port(new).is_none() {
        match health_check_node_port(old).or(reserved.health_check) {
            Some(port) => new["spec"]["healthCheckNodePort"] = json!(port),
            None => needs.health_check = true,
        }
    }
    if needs == Needs::default() {
        Ok(())
    } else {
        Err(needs)
    }
}

impl ServiceAllocator {
    /// Sets aside what [`fill_update`] found missing for Service `svc`: a ClusterIP (with its
    /// IPAddress) and node ports, checking requested ones.
    /// A dry run reserves in this process's memory only (no IPAddress, no claim in the store);
    /// [`Self::forget_reserved`] gives it back.
    pub async fn reserve_for_update(
        &self,
        registry: &Registry,
        services: Target<'_>,
        svc: &Value,
        needs: &Needs,
        reserved: &mut Reserved,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        if needs.ip && reserved.ip.is_none() {
            let namespace = text(svc, "/metadata/namespace").to_string();
            let name = text(svc, "/metadata/name").to_string();
            for attempt in 0.. {
                let candidate = self.reserve(registry, services, svc, "").await?;
                if dry_run {
                    reserved.ip = Some(candidate);
                    break;
                }
                let candidate_text = Ipv4Addr::from(candidate).to_string();
                match create_ip_address(registry, &candidate_text, &namespace, &name).await {
                    Ok(()) => {
                        reserved.ip = Some(candidate);
                        break;
                    }
                    Err(e) if e.is_already_exists() && attempt + 1 < ATTEMPTS => {}
                    Err(e) => {
                        self.forget(Some(candidate), &[]).await;
                        return Err(e);
                    }
                }
            }
        }
        let health_check = needs.health_check && reserved.health_check.is_none();
        if needs.ports == 0 && needs.requested.is_empty() && !health_check {
            return Ok(());
        }
        drop(self.load(registry, services).await?);
        let mut request = json!({"metadata": svc.get("metadata").cloned().unwrap_or_default(),
            "spec": {"ports": []}});
        let mut ports = Vec::new();
        for n in &needs.requested {
            ports.push(json!({"nodePort": n}));
        }
        for _ in 0..needs.ports + usize::from(health_check) {
            ports.push(json!({}));
        }
        request["spec"]["ports"] = Value::Array(ports);
        let owner = format!(
            "{}/{}",
            text(svc, "/metadata/namespace"),
            text(svc, "/metadata/name")
        );
        self.allocate_claimed(registry, &mut request, &owner, dry_run)
            .await?;
        let mut got = node_ports(&request).into_iter();
        reserved
            .requested
            .extend(got.by_ref().take(needs.requested.len()));
        reserved.ports.extend(got.by_ref().take(needs.ports));
        if health_check {
            reserved.health_check = got.next();
        }
        Ok(())
    }

    /// After a dry-run Service update: what [`Self::reserve_for_update`] set aside goes back
    /// (it was never written anywhere).
    pub async fn forget_reserved(&self, reserved: Reserved) {
        let ports: Vec<i64> = (reserved.ports.into_iter())
            .chain(reserved.requested)
            .chain(reserved.health_check)
            .collect();
        self.forget(reserved.ip, &ports).await;
    }

    /// After a Service update: returns what the old Service held and the new one does not, and
    /// what was reserved but not used (`stored` is None when the update failed).
    pub async fn settle_update(
        &self,
        registry: &Registry,
        (namespace, name): (&str, &str),
        old: Option<&Value>,
        stored: Option<&Value>,
        reserved: Reserved,
    ) {
        let ip_of_svc = |v: Option<&Value>| v.map(|v| text(v, "/spec/clusterIP").to_string());
        let kept_ip = ip_of_svc(stored).unwrap_or_default();
        let kept_ports = stored.map(node_ports).unwrap_or_default();
        if let Some(ip) = reserved.ip {
            let ip_text = Ipv4Addr::from(ip).to_string();
            if ip_text != kept_ip {
                self.forget(Some(ip), &[]).await;
                delete_ip_address(registry, &ip_text, namespace, name).await;
            }
        }
        let unused: Vec<i64> = (reserved.ports.into_iter())
            .chain(reserved.requested)
            .chain(reserved.health_check)
            .filter(|p| !kept_ports.contains(p))
            .collect();
        self.forget(None, &unused).await;
        self.unclaim_ports(registry, &unused).await;
        if let (Some(old), Some(_)) = (old, stored) {
            let old_ip = text(old, "/spec/clusterIP");
            if ip_of(old_ip).is_some() && old_ip != kept_ip {
                self.release_ip(registry, old).await;
            }
            let gone: Vec<i64> = node_ports(old)
                .into_iter()
                .filter(|p| !kept_ports.contains(p))
                .collect();
            self.forget(None, &gone).await;
            self.unclaim_ports(registry, &gone).await;
        }
    }

    /// Returns a Service's ClusterIP to the pool and deletes its IPAddress.
    async fn release_ip(&self, registry: &Registry, svc: &Value) {
        let ip_text = text(svc, "/spec/clusterIP");
        self.forget(ip_of(ip_text), &[]).await;
        let (ns, name) = (
            text(svc, "/metadata/namespace"),
            text(svc, "/metadata/name"),
        );
        delete_ip_address(registry, ip_text, ns, name).await;
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
    let assigns = assigns_node_ports(svc);
    let mut empty = Vec::new();
    let list = match svc.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
        Some(list) => list,
        None => &mut empty,
    };
    let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
    let mut next_port = used.next_port;
    let next_free = |next_port: &mut i64, taken: &[i64]| {
        let free = (0..span)
            .map(|step| NODE_PORTS.start() + (*next_port - NODE_PORTS.start() + step) % span)
            .find(|n| !used.ports.contains(n) && !taken.contains(n));
        if let Some(free) = free {
            *next_port = free + 1;
        }
        free
    };
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
            None if !assigns => continue,
            None => next_free(&mut next_port, &taken).ok_or_else(|| {
                ApiError::internal("failed to allocate a nodePort: range is full")
            })?,
        };
        p["nodePort"] = json!(port);
        taken.push(port);
    }
    // Upstream's allocHealthCheckNodePort; its errors are internal errors there too.
    if strategies::service::needs_health_check(svc) {
        let health = svc
            .pointer("/spec/healthCheckNodePort")
            .and_then(Value::as_i64);
        let port = match health.filter(|n| *n != 0) {
            Some(n) => {
                let why = if !NODE_PORTS.contains(&n) {
                    Some(
                        "provided port is not in the valid range. The range of valid ports is 30000-32767",
                    )
                } else if used.ports.contains(&n) || taken.contains(&n) {
                    Some("provided port is already allocated")
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(ApiError::internal(format!(
                        "failed to allocate requested HealthCheck NodePort {n}: {why}"
                    )));
                }
                n
            }
            None => next_free(&mut next_port, &taken).ok_or_else(|| {
                ApiError::internal("failed to allocate a HealthCheck NodePort 0: range is full")
            })?,
        };
        svc["spec"]["healthCheckNodePort"] = json!(port);
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
    fn service_cidr_ranges_parse_and_hand_out_their_addresses() {
        let r = Range::parse("10.200.0.0/30").unwrap();
        assert!(r.contains(u32::from(Ipv4Addr::new(10, 200, 0, 3))));
        assert!(!r.contains(u32::from(Ipv4Addr::new(10, 200, 0, 4))));
        // Network and broadcast addresses are never handed out.
        let mut used = HashSet::new();
        let first = r.first_free(&used).unwrap();
        assert_eq!(Ipv4Addr::from(first), Ipv4Addr::new(10, 200, 0, 1));
        used.insert(first);
        used.insert(r.first_free(&used).unwrap());
        assert_eq!(r.first_free(&used), None);
        // Host bits are masked off; IPv6 and malformed text are not IPv4 ranges.
        assert!(
            Range::parse("10.1.2.3/16")
                .unwrap()
                .contains(u32::from(Ipv4Addr::new(10, 1, 9, 9)))
        );
        assert!(Range::parse("fd00::/108").is_none());
        assert!(Range::parse("10.0.0.0/33").is_none());
        assert!(Range::parse("10.0.0.0").is_none());
        let single = Range::parse("10.9.9.9/32").unwrap();
        assert_eq!(
            single.first_free(&HashSet::new()),
            Some(u32::from(Ipv4Addr::new(10, 9, 9, 9)))
        );
        // Only Ready ServiceCIDRs that are not being deleted serve.
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(serves(&ready));
        let mut deleting = ready.clone();
        deleting["metadata"] = json!({"deletionTimestamp": "2026-01-01T00:00:00Z"});
        assert!(!serves(&deleting));
        assert!(!serves(&json!({})));
    }

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
    fn a_service_update_keeps_drops_or_asks_for_allocations() {
        let node_port = json!({"metadata": {"name": "s", "namespace": "d"},
            "spec": {"type": "NodePort", "clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"],
                     "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}});
        // The client's new object omits allocated values: they are kept.
        let mut new = json!({"metadata": {"name": "s"},
            "spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80}]}});
        fill_update(&node_port, &mut new, &Reserved::default()).unwrap();
        assert_eq!(new["spec"]["clusterIP"], "10.96.0.9");
        assert_eq!(new["spec"]["ports"][0]["nodePort"], 30080);
        // A type that needs no node ports drops the ones left unchanged.
        let mut to_cluster_ip = node_port.clone();
        to_cluster_ip["spec"]["type"] = json!("ClusterIP");
        fill_update(&node_port, &mut to_cluster_ip, &Reserved::default()).unwrap();
        assert!(to_cluster_ip["spec"]["ports"][0].get("nodePort").is_none());
        // ExternalName drops the unchanged ClusterIPs.
        let mut external = node_port.clone();
        external["spec"]["type"] = json!("ExternalName");
        fill_update(&node_port, &mut external, &Reserved::default()).unwrap();
        assert!(external["spec"].get("clusterIPs").is_none());
        // Leaving ExternalName needs an address and a node port, then takes the reserved ones.
        let mut back = json!({"spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let needs = fill_update(&external, &mut back.clone(), &Reserved::default()).unwrap_err();
        assert_eq!(
            needs,
            Needs {
                ip: true,
                ports: 1,
                ..Needs::default()
            }
        );
        let reserved = Reserved {
            ip: Some(u32::from(Ipv4Addr::new(10, 96, 0, 20))),
            ports: vec![30111],
            ..Reserved::default()
        };
        fill_update(&external, &mut back, &reserved).unwrap();
        assert_eq!(back["spec"]["clusterIPs"], json!(["10.96.0.20"]));
        assert_eq!(back["spec"]["ports"][0]["nodePort"], 30111);
        // A node port the old Service did not hold has to be checked first.
        let mut moved = node_port.clone();
        moved["spec"]["ports"][0]["nodePort"] = json!(30555);
        let needs = fill_update(&node_port, &mut moved, &Reserved::default()).unwrap_err();
        assert_eq!(needs.requested, vec![30555]);
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

    #[test]
    fn a_local_load_balancer_gets_a_health_check_node_port() {
        let mut used = Used {
            next_port: *NODE_PORTS.start(),
            ..Default::default()
        };
        let mut svc = json!({ "metadata": { "name": "lb" },
            "spec": { "type": "LoadBalancer", "externalTrafficPolicy": "Local",
                      "ports": [{ "port": 80 }] } });
        allocate_node_ports(&mut used, &mut svc).unwrap();
        assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30000);
        assert_eq!(svc["spec"]["healthCheckNodePort"], 30001);
        assert_eq!(node_ports(&svc), vec![30000, 30001]);
        // One the client asks for is checked, and refused as upstream when taken.
        let mut taken = json!({ "metadata": { "name": "t" },
            "spec": { "type": "LoadBalancer", "externalTrafficPolicy": "Local",
                      "healthCheckNodePort": 30001, "ports": [{ "port": 80 }] } });
        let err = allocate_node_ports(&mut used, &mut taken).unwrap_err();
        assert!(
            err.to_string().contains(
                "failed to allocate requested HealthCheck NodePort 30001: provided port is already allocated"
            ),
            "{err}"
        );
        // A cluster-wide policy needs none; node ports are not assigned when a load balancer
        // asks for none.
        let mut cluster = json!({ "metadata": { "name": "c" },
            "spec": { "type": "LoadBalancer", "externalTrafficPolicy": "Cluster",
                      "allocateLoadBalancerNodePorts": false, "ports": [{ "port": 80 }] } });
        allocate_node_ports(&mut used, &mut cluster).unwrap();
        assert!(cluster["spec"].get("healthCheckNodePort").is_none());
        assert!(cluster["spec"]["ports"][0].get("nodePort").is_none());

        // Updates: the port is kept when the client omits it, and asked for when the Service
        // starts needing one.
        svc["spec"]["clusterIP"] = json!("10.96.0.9");
        svc["spec"]["clusterIPs"] = json!(["10.96.0.9"]);
        let mut again = json!({ "metadata": { "name": "lb" },
            "spec": { "type": "LoadBalancer", "externalTrafficPolicy": "Local",
                      "ports": [{ "port": 80, "nodePort": 30000 }] } });
        fill_update(&svc, &mut again, &Reserved::default()).unwrap();
        assert_eq!(again["spec"]["healthCheckNodePort"], 30001);
        let mut was_cluster = svc.clone();
        was_cluster["spec"]["externalTrafficPolicy"] = json!("Cluster");
        was_cluster["spec"]
            .as_object_mut()
            .unwrap()
            .remove("healthCheckNodePort");
        let mut to_local = svc.clone();
        to_local["spec"]
            .as_object_mut()
            .unwrap()
            .remove("healthCheckNodePort");
        let needs = fill_update(&was_cluster, &mut to_local, &Reserved::default()).unwrap_err();
        assert!(needs.health_check, "{needs:?}");
        let reserved = Reserved {
            health_check: Some(30042),
            ..Reserved::default()
        };
        fill_update(&was_cluster, &mut to_local, &reserved).unwrap();
        assert_eq!(to_local["spec"]["healthCheckNodePort"], 30042);
    }
}
