//! One simulated node's Node object and heartbeats, as the kubelet keeps them
//! (`pkg/kubelet/kubelet_node_status.go`, `nodestatus/setters.go`, `nodelease`): registration
//! (create, or adopt a Node of that name), the Lease `kube-node-lease/<name>` renewed every 10 s,
//! and the node status posted when it changed or every 5 minutes.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus,
    NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference, Time};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::Options;
use crate::cidr::Cidr;
use crate::podstatus::{digest, now_seconds};

pub const SIM_ANNOTATION: &str = "sim.k1s.io/node";
pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// Upstream's defaults: lease 40 s renewed every quarter of that (10 s); status reported every
/// 5 min unchanged.
pub const LEASE_DURATION_SECONDS: i32 = 40;
pub const STATUS_REPORT: Duration = Duration::from_secs(300);
pub const KUBELET_VERSION: &str = "v1.33.0-k1s";

/// One node's identity and addresses.
pub struct SimNode {
    pub name: String,
    pub client: Client,
    pub cidr: Cidr,
    pub ip: String,
}

fn quantities(options: &Options) -> BTreeMap<String, Quantity> {
    [
        ("cpu", options.cpu.as_str()),
        ("memory", options.memory.as_str()),
        ("pods", options.pods.as_str()),
        ("ephemeral-storage", "100Gi"),
        ("hugepages-1Gi", "0"),
        ("hugepages-2Mi", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
    .collect()
}

/// The kubelet's four node conditions, all healthy, heartbeating at `now`.
pub fn healthy_conditions(now: Timestamp, old: Option<&[NodeCondition]>) -> Vec<NodeCondition> {
    [
        (
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        (
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        (
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        (
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
    ]
    .into_iter()
    .map(|(type_, status, reason, message)| {
        let prev = old.and_then(|o| o.iter().find(|c| c.type_ == type_));
        let transition = match prev {
            Some(p) if p.status == status => p.last_transition_time.clone(),
            _ => None,
        };
        NodeCondition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_heartbeat_time: Some(Time(now)),
            last_transition_time: transition.or(Some(Time(now))),
        }
    })
    .collect()
}

/// A `name=quantity,...` list (`--kube-reserved`), summed into `into` in nano-units.
fn add_reserved(list: &str, into: &mut BTreeMap<String, i128>) -> Result<(), String> {
    for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, q) = pair
            .split_once('=')
            .ok_or_else(|| format!("reserved resource {pair:?} is not name=quantity"))?;
        let nanos = k1s_scheduler::resources::parse_nanos(q)
            .filter(|n| *n >= 0)
            .ok_or_else(|| format!("reserved {name}: {q:?} is not a non-negative quantity"))?;
        *into.entry(name.trim().to_string()).or_default() += nanos;
    }
    Ok(())
}

/// A nano-unit amount as the API server would print it (`3900m`, `7901200Ki`, `110`).
fn format_nanos(nanos: i128) -> String {
    let nanos = nanos.max(0);
    if nanos % 1_000_000_000 == 0 {
        let v = nanos / 1_000_000_000;
        if v != 0 && v % 1024 == 0 {
            return format!("{}Ki", v / 1024);
        }
        return v.to_string();
    }
    format!("{}m", (nanos + 999_999) / 1_000_000)
}

/// Allocatable: capacity minus `--kube-reserved` and `--system-reserved` (upstream's
/// `GetNodeAllocatableAbsolute`, without eviction thresholds), never below zero.
pub fn allocatable(options: &Options) -> Result<BTreeMap<String, Quantity>, String> {
    let mut reserved = BTreeMap::new();
    add_reserved(&options.kube_reserved, &mut reserved)?;
    add_reserved(&options.system_reserved, &mut reserved)?;
    let mut out = quantities(options);
    for (name, amount) in reserved {
        if let Some(q) = out.get_mut(&name) {
            let capacity = k1s_scheduler::resources::parse_nanos(&q.0).unwrap_or(0);
            *q = Quantity(format_nanos(capacity - amount));
        }
    }
    Ok(out)
}

impl SimNode {
    pub fn labels(&self) -> BTreeMap<String, String> {
        [
            ("beta.kubernetes.io/arch", "amd64"),
            ("beta.kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
            ("kubernetes.io/hostname", self.name.as_str()),
            ("kubernetes.io/os", "linux"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The status the kubelet posts (conditions carried over from `old`).
    pub fn status(
        &self,
        options: &Options,
        now: Timestamp,
        old: Option<&NodeStatus>,
    ) -> NodeStatus {
        let id = digest(&self.name);
        let capacity = quantities(options);
        // The flags were checked when the nodes started.
        let allocatable = allocatable(options).unwrap_or_else(|_| capacity.clone());
        NodeStatus {
            capacity: Some(capacity),
            allocatable: Some(allocatable),
            conditions: Some(healthy_conditions(
                now,
                old.and_then(|s| s.conditions.as_deref()),
            )),
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".into(),
                    address: self.ip.clone(),
                },
                NodeAddress {
                    type_: "Hostname".into(),
                    address: self.name.clone(),
                },
            ]),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }),
            }),
            node_info: Some(NodeSystemInfo {
                architecture: "amd64".into(),
                boot_id: format!(
                    "{}-{}-{}-{}-{}",
                    &id[32..40],
                    &id[40..44],
                    &id[44..48],
                    &id[48..52],
                    &id[52..64]
                ),
                container_runtime_version: "sim://0.1".into(),
                kernel_version: "6.8.0-k1s".into(),
                kube_proxy_version: String::new(),
                kubelet_version: KUBELET_VERSION.into(),
                machine_id: id[..32].to_string(),
                operating_system: "linux".into(),
                os_image: "k1s simulated node".into(),
                system_uuid: format!(
                    "{}-{}-{}-{}-{}",
                    &id[..8],
                    &id[8..12],
                    &id[12..16],
                    &id[16..20],
                    &id[20..32]
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    pub fn object(&self, options: &Options, now: Timestamp) -> Node {
        let cidr = self.cidr.to_string();
        Node {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(self.labels()),
                annotations: Some(
                    [
                        (SIM_ANNOTATION.to_string(), "simulated".to_string()),
                        ("node.alpha.kubernetes.io/ttl".to_string(), "0".to_string()),
                        (
                            "volumes.kubernetes.io/controller-managed-attach-detach".to_string(),
                            "true".to_string(),
                        ),
                    ]
                    .into(),
                ),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                pod_cidr: Some(cidr.clone()),
                pod_cidrs: Some(vec![cidr]),
                ..Default::default()
            }),
            status: Some(self.status(options, now, None)),
        }
    }

    /// Creates the Node, or adopts the one of that name (labels, annotation and status set);
    /// says whether it was created.
    pub async fn register(&self, options: &Options) -> Result<(Node, bool), kube::Error> {
        let api: Api<Node> = Api::all(self.client.clone());
        let now = now_seconds();
        let node = self.object(options, now);
        match api.create(&PostParams::default(), &node).await {
            Ok(created) => {
                // Status is dropped on create: post it as the kubelet does right after.
                self.post_status(options, Some(&created)).await?;
                Ok((created, true))
            }
            Err(e) if matches!(&e, kube::Error::Api(s) if s.code == 409) => {
                let patch = serde_json::json!({
                    "metadata": {
                        "labels": self.labels(),
                        "annotations": { SIM_ANNOTATION: "simulated" },
                    }
                });
                let existing = api
                    .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                self.post_status(options, Some(&existing)).await?;
                Ok((existing, false))
            }
            Err(e) => Err(e),
        }
    }

    /// Posts the node status (healthy conditions with a fresh heartbeat).
    pub async fn post_status(
        &self,
        options: &Options,
        old: Option<&Node>,
    ) -> Result<(), kube::Error> {
        let api: Api<Node> = Api::all(self.client.clone());
        let status = self.status(options, now_seconds(), old.and_then(|n| n.status.as_ref()));
        let patch = serde_json::json!({ "status": status });
        api.patch_status(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    fn lease(&self, node_uid: Option<&str>, duration: i32) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(LEASE_NAMESPACE.into()),
                owner_references: node_uid.map(|uid| {
                    vec![OwnerReference {
                        api_version: "v1".into(),
                        kind: "Node".into(),
                        name: self.name.clone(),
                        uid: uid.to_string(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.name.clone()),
                lease_duration_seconds: Some(duration),
                renew_time: Some(MicroTime(Timestamp::now())),
                ..Default::default()
            }),
        }
    }

    /// Renews the Lease (creating it when missing); returns the stored Lease.
    async fn renew(
        &self,
        last: Option<Lease>,
        node_uid: Option<&str>,
        duration: i32,
    ) -> Result<Lease, kube::Error> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), LEASE_NAMESPACE);
        if let Some(mut lease) = last {
            if let Some(spec) = lease.spec.as_mut() {
                spec.renew_time = Some(MicroTime(Timestamp::now()));
                spec.holder_identity = Some(self.name.clone());
                spec.lease_duration_seconds = Some(duration);
            }
            if let Ok(l) = api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
            {
                return Ok(l);
            }
        }
        match api.get_opt(&self.name).await? {
            Some(mut lease) => {
                let fresh = self.lease(node_uid, duration);
                lease.spec = fresh.spec;
                if lease.metadata.owner_references.is_none() {
                    lease.metadata.owner_references = fresh.metadata.owner_references;
                }
                api.replace(&self.name, &PostParams::default(), &lease)
                    .await
            }
            None => {
                api.create(&PostParams::default(), &self.lease(node_uid, duration))
                    .await
            }
        }
    }

    /// Registers (retrying until `shutdown`), resolving a pod CIDR another node took at the
    /// same moment: the younger of two nodes with one CIDR (by creationTimestamp, then name)
    /// deletes itself and registers again with the next free one (there is no central
    /// allocator to ask). A joining node looks `cidr_check_delay` after its create, so it sees
    /// every Node that could be older than it; a server's own nodes look at once, so one that
    /// joins in the same second as a server starts can still share its CIDR.
    pub async fn register_unique(
        &mut self,
        options: &Options,
        cluster: &Cidr,
        shutdown: &mut tokio::sync::watch::Receiver<bool>,
    ) -> Option<Node> {
        let mut backoff = Duration::from_millis(200);
        let mut attempts = 0;
        loop {
            match self.register_checked(options, cluster, attempts < 8).await {
                Ok(Some(n)) => return Some(n),
                Ok(None) => {
                    attempts += 1;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(node = %self.name, error = %e, "node registration failed; retrying");
                }
            }
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return None,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(7));
        }
    }

    /// One registration; `Ok(None)`: our new Node lost its CIDR to an older one and was deleted.
    async fn register_checked(
        &mut self,
        options: &Options,
        cluster: &Cidr,
        check: bool,
    ) -> Result<Option<Node>, kube::Error> {
        let (node, created) = self.register(options).await?;
        let own = node
            .spec
            .as_ref()
            .and_then(|s| s.pod_cidr.as_deref())
            .and_then(|c| Cidr::parse(c).ok());
        if let Some(own) = own
            && own != self.cidr
        {
            // Adopted a Node that already has a CIDR: it stays.
            self.cidr = own;
            self.ip = crate::cidr::node_ip(cluster.index_of(&own).unwrap_or(0)).to_string();
        }
        if !created || !check {
            return Ok(Some(node));
        }
        // A Node created just after our list would otherwise go unseen; if its key is lower
        // (the same second, a lower name) it keeps the CIDR while we do too.
        if !options.cidr_check_delay.is_zero() {
            tokio::time::sleep(options.cidr_check_delay).await;
        }
        let api: Api<Node> = Api::all(self.client.clone());
        let Ok(all) = api.list(&Default::default()).await else {
            return Ok(Some(node));
        };
        let key = |n: &Node| {
            (
                n.metadata.creation_timestamp.as_ref().map(|t| t.0),
                n.metadata.name.clone(),
            )
        };
        let mine = key(&node);
        let cidr = self.cidr.to_string();
        let lost = all.items.iter().any(|n| {
            n.metadata.name.as_deref() != Some(self.name.as_str())
                && n.spec.as_ref().and_then(|s| s.pod_cidr.as_deref()) == Some(cidr.as_str())
                && key(n) < mine
        });
        if !lost {
            return Ok(Some(node));
        }
        tracing::info!(node = %self.name, cidr = %cidr, "pod CIDR taken by an older node; registering again");
        let params = kube::api::DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: node.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        api.delete(&self.name, &params).await?;
        let others: Vec<Node> = all
            .items
            .into_iter()
            .filter(|n| n.metadata.name.as_deref() != Some(self.name.as_str()))
            .collect();
        let planned = crate::plan_cidrs(cluster, std::slice::from_ref(&self.name), &others)
            .map_err(|e| kube::Error::Service(e.into()))?;
        if let Some(c) = planned.first() {
            self.cidr = *c;
            self.ip = crate::cidr::node_ip(cluster.index_of(c).unwrap_or(0)).to_string();
        }
        Ok(None)
    }

    /// Heartbeats the registered `node` until `shutdown` (the Node stays; its Lease expires).
    pub async fn run(
        &self,
        node: Node,
        options: &Options,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        tracing::info!(node = %self.name, cidr = %self.cidr, "simulated node registered");
        let uid = node.metadata.uid.clone();
        let mut lease = None;
        let mut last_report = tokio::time::Instant::now();
        let duration = options.lease_duration_seconds.max(1);
        let renew_every = Duration::from_millis(u64::try_from(duration).unwrap_or(40) * 250);
        let mut tick = tokio::time::interval(renew_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                _ = tick.tick() => {}
            }
            match self.renew(lease.take(), uid.as_deref(), duration).await {
                Ok(l) => lease = Some(l),
                Err(e) => tracing::debug!(node = %self.name, error = %e, "lease not renewed"),
            }
            // The status is posted when it changed (someone else marked the node) or every 5 min.
            let api: Api<Node> = Api::all(self.client.clone());
            match api.get_opt(&self.name).await {
                Ok(Some(current)) => {
                    let changed = !self.conditions_match(&current);
                    if changed || last_report.elapsed() >= STATUS_REPORT {
                        match self.post_status(options, Some(&current)).await {
                            Ok(()) => last_report = tokio::time::Instant::now(),
                            Err(e) => {
                                tracing::debug!(node = %self.name, error = %e, "node status not posted")
                            }
                        }
                    }
                }
                // Deleted under us: the kubelet registers again.
                Ok(None) => {
                    if let Err(e) = self.register(options).await {
                        tracing::debug!(node = %self.name, error = %e, "node not registered again");
                    }
                }
                Err(e) => tracing::debug!(node = %self.name, error = %e, "node not read"),
            }
        }
    }

    /// Whether the node's conditions are still the kubelet's (statuses and reasons).
    fn conditions_match(&self, node: &Node) -> bool {
        let want = healthy_conditions(Timestamp::UNIX_EPOCH, None);
        let have = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        want.iter().all(|w| {
            have.iter()
                .any(|h| h.type_ == w.type_ && h.status == w.status && h.reason == w.reason)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocatable_is_capacity_minus_reserved() {
        let options = Options {
            kube_reserved: "cpu=100m,memory=256Mi".into(),
            system_reserved: "cpu=0.5, memory=100Mi,pods=10,nvidia.com/gpu=1".into(),
            ..Default::default()
        };
        let a = allocatable(&options).expect("valid flags");
        assert_eq!(a["cpu"].0, "3400m");
        assert_eq!(a["memory"].0, "8024064Ki", "8Gi - 356Mi");
        assert_eq!(a["pods"].0, "100");
        assert!(
            !a.contains_key("nvidia.com/gpu"),
            "only resources the node has"
        );
        assert_eq!(
            allocatable(&Options::default()).expect("valid")["cpu"].0,
            "4"
        );
        let more = Options {
            kube_reserved: "cpu=5".into(),
            ..Default::default()
        };
        assert_eq!(
            allocatable(&more).expect("valid")["cpu"].0,
            "0",
            "never below zero"
        );
        for bad in ["cpu", "cpu=lots", "memory=-1Gi"] {
            let o = Options {
                system_reserved: bad.into(),
                ..Default::default()
            };
            assert!(allocatable(&o).is_err(), "{bad}");
        }
    }
}
