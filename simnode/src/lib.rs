//! Simulated nodes (kwok-like, built in): Node objects with Lease heartbeats, and pods bound to
//! them brought to Running and on to their end as a kubelet would report them. Speaks only the
//! Kubernetes API; nothing here runs a process. `node` keeps the Node and Lease, `podstatus`
//! computes a pod's status, `cidr` plans addresses; this module watches the pods of every node
//! (one field-selected watch per node, as its own identity) into one cache and one work queue.

pub mod cidr;
pub mod kubeletevents;
pub mod node;
pub mod podstatus;
pub mod probes;
pub mod sources;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k1s_controller_manager::controller::{Action, Error, Reconciler, spawn_workers};
use k1s_controller_manager::events::EventRecorder;
use k1s_controller_manager::metrics::Metrics;
use k1s_controller_manager::workqueue::{RateLimiter, WorkQueue};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use crate::cidr::{Cidr, IpPool};
use crate::kubeletevents::Images;
use crate::node::SimNode;
use crate::podstatus::{Missing, PodEnv, now_seconds};

/// A client acting as the node named by the argument (`system:node:<name>`).
pub type ClientFor = Arc<dyn Fn(&str) -> kube::Client + Send + Sync>;

/// What the simulated nodes look like.
#[derive(Clone, Debug)]
pub struct Options {
    /// The nodes' names.
    pub names: Vec<String>,
    /// Capacity: CPU (a quantity, `4`), memory (`8Gi`), pods (`110`).
    pub cpu: String,
    pub memory: String,
    pub pods: String,
    /// Pod CIDRs are carved from this range, one `/24` per node.
    pub cluster_cidr: String,
    /// Workers writing pod status and deletions (shared by every node of the process).
    pub pod_workers: usize,
    /// The kubelet's `nodeLeaseDurationSeconds` (40); the Lease is renewed every quarter of it.
    pub lease_duration_seconds: i32,
    /// The kubelet's `--kube-reserved` and `--system-reserved` (`cpu=100m,memory=256Mi`):
    /// allocatable is capacity minus both.
    pub kube_reserved: String,
    pub system_reserved: String,
    /// How long a node waits after creating its Node before it looks for another that took
    /// the same pod CIDR at the same moment (see `node::register_unique`): zero for the
    /// nodes a server plans together, `JOINING_NODE_CIDR_CHECK_DELAY` for nodes that join.
    pub cidr_check_delay: Duration,
}

/// Long enough for every Node created in the same second as ours (creationTimestamp, which
/// decides who keeps a contested CIDR, has whole seconds) to be visible to our list.
pub const JOINING_NODE_CIDR_CHECK_DELAY: Duration = Duration::from_millis(1500);

impl Default for Options {
    fn default() -> Self {
        Options {
            names: vec!["k1s-node-0".into()],
            cpu: "4".into(),
            memory: "8Gi".into(),
            pods: "110".into(),
            cluster_cidr: "10.244.0.0/16".into(),
            pod_workers: 8,
            lease_duration_seconds: node::LEASE_DURATION_SECONDS,
            kube_reserved: String::new(),
            system_reserved: String::new(),
            cidr_check_delay: Duration::ZERO,
        }
    }
}

/// Chooses every node's `/24`: its own when its Node already has one, else the first free.
pub(crate) fn plan_cidrs(
    cluster: &Cidr,
    names: &[String],
    existing: &[Node],
) -> Result<Vec<Cidr>, String> {
    let ours: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    let mut used = BTreeSet::new();
    let mut kept: HashMap<&str, Cidr> = HashMap::new();
    for n in existing {
        let name = n.metadata.name.as_deref().unwrap_or_default();
        let Some(c) = n
            .spec
            .as_ref()
            .and_then(|s| s.pod_cidr.as_deref())
            .and_then(|c| Cidr::parse(c).ok())
        else {
            continue;
        };
        if let Some(i) = cluster.index_of(&c) {
            used.insert(i);
        }
        if ours.contains(name) {
            kept.insert(name, c);
        }
    }
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if let Some(c) = kept.get(name.as_str()) {
            out.push(*c);
            continue;
        }
        let i = cidr::first_free(cluster, &used)
            .ok_or_else(|| format!("no /24 left in {cluster} for node {name}"))?;
        used.insert(i);
        out.push(cluster.subnet(i));
    }
    Ok(out)
}

/// Runs the nodes until `shutdown`.
pub async fn run(
    clients: ClientFor,
    options: Options,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    if options.names.is_empty() {
        return Ok(());
    }
    let cluster = Cidr::parse(&options.cluster_cidr)?;
    node::allocatable(&options)?;
    // Which /24s other nodes hold (a node identity may not list nodes: then ours are planned
    // alone, keeping any CIDR a Node of ours already has).
    let first = clients(&options.names[0]);
    let existing = match Api::<Node>::all(first).list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) => {
            tracing::debug!(error = %e, "nodes not listed; planning pod CIDRs alone");
            let mut mine = Vec::new();
            for name in &options.names {
                if let Ok(Some(n)) = Api::<Node>::all(clients(name)).get_opt(name).await {
                    mine.push(n);
                }
            }
            mine
        }
    };
    let cidrs = plan_cidrs(&cluster, &options.names, &existing)?;
    // Every node registers (at once) before its pods are looked at, as the kubelet.
    let registering = options.names.iter().zip(cidrs).map(|(name, c)| {
        let mut node = SimNode {
            name: name.clone(),
            client: clients(name),
            ip: cidr::node_ip(cluster.index_of(&c).unwrap_or(0)).to_string(),
            cidr: c,
        };
        let (options, mut shutdown) = (&options, shutdown.clone());
        async move {
            let stored = node
                .register_unique(options, &cluster, &mut shutdown)
                .await?;
            Some((node, stored))
        }
    });
    let registered = futures::future::join_all(registering).await;
    let Some(registered) = registered.into_iter().collect::<Option<Vec<_>>>() else {
        return Ok(());
    };
    let options = Arc::new(options);
    let mut tasks = Vec::new();
    let mut nodes: Vec<Arc<SimNode>> = Vec::with_capacity(registered.len());
    for (n, stored) in registered {
        let n = Arc::new(n);
        nodes.push(n.clone());
        let (options, shutdown) = (options.clone(), shutdown.clone());
        tasks.push(tokio::spawn(async move {
            n.run(stored, &options, shutdown).await
        }));
    }
    let limit = kubeletevents::event_limit();
    let kubelet = Arc::new(Kubelet {
        recorders: nodes
            .iter()
            .map(|n| kubeletevents::recorder(n.client.clone(), &n.name, &limit))
            .collect(),
        images: nodes.iter().map(|_| Images::default()).collect(),
        nodes: nodes.clone(),
        by_name: nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect(),
        state: Mutex::new(State::default()),
    });
    let queue = WorkQueue::new(RateLimiter::default(), None);
    let metrics = Metrics::default();
    spawn_workers(
        "simulated-kubelet",
        kubelet.clone(),
        queue.clone(),
        options.pod_workers,
        metrics.queue("simulated-kubelet"),
        shutdown.clone(),
    );
    for (i, n) in nodes.iter().enumerate() {
        let (kubelet, queue, shutdown) = (kubelet.clone(), queue.clone(), shutdown.clone());
        let n = n.clone();
        tasks.push(tokio::spawn(async move {
            kubelet.watch_pods(i, &n, queue, shutdown).await;
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    Ok(())
}

/// Pods of every node of the process.
#[derive(Default)]
struct State {
    /// `namespace/name` → (node index, the pod as last seen).
    pods: HashMap<String, (usize, Arc<Pod>)>,
    /// Pod IPs in use per node index, and which pod holds each (key → node index, IP).
    pools: HashMap<usize, IpPool>,
    ips: HashMap<String, (usize, String)>,
    /// Pods whose containers were told to stop (`Killing` recorded): key → uid.
    stopping: HashMap<String, String>,
}

struct Kubelet {
    nodes: Vec<Arc<SimNode>>,
    /// Per node: the kubelet's event recorder and the images its runtime holds.
    recorders: Vec<EventRecorder>,
    images: Vec<Images>,
    by_name: HashMap<String, usize>,
    state: Mutex<State>,
}

fn key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

fn host_network(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
}

impl Kubelet {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The kubelet's admission of a pod it has not started (GeneralPredicates' NodePorts): a
    /// host port another started, unfinished pod of the node holds refuses it. The message, as
    /// the kubelet words it; `None` admits the pod.
    fn rejected(&self, key: &str, index: usize, pod: &Pod) -> Option<String> {
        let started = |p: &Pod| {
            p.status
                .as_ref()
                .is_some_and(|s| s.container_statuses.is_some())
        };
        if started(pod) {
            return None;
        }
        let wanted = host_ports(pod);
        if wanted.is_empty() {
            return None;
        }
        let state = self.lock();
        let taken = state
            .pods
            .iter()
            .filter(|(k, (i, p))| {
                *k != key
                    && *i == index
                    && started(p)
                    && !matches!(
                        p.status.as_ref().and_then(|s| s.phase.as_deref()),
                        Some("Succeeded" | "Failed")
                    )
            })
            .flat_map(|(_, (_, p))| host_ports(p));
        let conflict = taken.into_iter().any(|(ip, port, protocol)| {
            wanted.iter().any(|(wip, wport, wprotocol)| {
                *wport == port
                    && *wprotocol == protocol
                    && (ip == "0.0.0.0" || *wip == "0.0.0.0" || *wip == ip)
            })
        });
        conflict.then(|| {
            "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
                .to_string()
        })
    }

    /// Caches the node's pods and queues each change.
    async fn watch_pods(
        &self,
        index: usize,
        node: &SimNode,
        queue: WorkQueue,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let api: Api<Pod> = Api::all(node.client.clone());
        let config = watcher::Config::default()
            .fields(&format!("spec.nodeName={}", node.name))
            .any_semantic();
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut listing: Option<Vec<Pod>> = None;
        loop {
            let event = tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                e = stream.next() => e,
            };
            match event {
                None => return,
                Some(Err(e)) => {
                    tracing::debug!(node = %node.name, error = %e, "pod watch failed; retrying")
                }
                Some(Ok(Event::Init)) => listing = Some(Vec::new()),
                Some(Ok(Event::InitApply(p))) => listing.get_or_insert_with(Vec::new).push(p),
                Some(Ok(Event::InitDone)) => {
                    let pods = listing.take().unwrap_or_default();
                    let keys: BTreeSet<String> = pods.iter().map(key).collect();
                    let mut gone = Vec::new();
                    {
                        let mut st = self.lock();
                        for (k, (i, _)) in st.pods.iter() {
                            if *i == index && !keys.contains(k) {
                                gone.push(k.clone());
                            }
                        }
                        for p in pods {
                            self.upsert(&mut st, index, p);
                        }
                    }
                    for k in gone.into_iter().chain(keys) {
                        queue.add(k);
                    }
                }
                Some(Ok(Event::Apply(p))) => {
                    let k = key(&p);
                    self.upsert(&mut self.lock(), index, p);
                    queue.add(k);
                }
                Some(Ok(Event::Delete(p))) => {
                    let k = key(&p);
                    let mut st = self.lock();
                    st.pods.remove(&k);
                    drop(st);
                    queue.add(k);
                }
            }
        }
    }

    fn upsert(&self, st: &mut State, index: usize, pod: Pod) {
        let k = key(&pod);
        // An address the pod already reports stays its own (after a restart of the process).
        if !host_network(&pod)
            && !st.ips.contains_key(&k)
            && let Some(ip) = pod.status.as_ref().and_then(|s| s.pod_ip.clone())
            && st
                .pools
                .entry(index)
                .or_default()
                .take(&self.nodes[index].cidr, &ip)
        {
            st.ips.insert(k.clone(), (index, ip));
        }
        st.pods.insert(k, (index, Arc::new(pod)));
    }

    /// The pod's addresses, allocating its IP on first use.
    fn env(&self, k: &str, index: usize, pod: &Pod) -> Option<PodEnv> {
        let node = &self.nodes[index];
        if host_network(pod) {
            return Some(PodEnv {
                host_ip: node.ip.clone(),
                pod_ip: node.ip.clone(),
                missing: Missing::default(),
            });
        }
        let mut st = self.lock();
        let ip = match st.ips.get(k) {
            Some((_, ip)) => ip.clone(),
            None => {
                let ip = st
                    .pools
                    .entry(index)
                    .or_default()
                    .allocate(&node.cidr)?
                    .to_string();
                st.ips.insert(k.to_string(), (index, ip.clone()));
                ip
            }
        };
        Some(PodEnv {
            host_ip: node.ip.clone(),
            pod_ip: ip,
            missing: Missing::default(),
        })
    }

    fn forget(&self, k: &str) {
        let mut st = self.lock();
        if st.pods.contains_key(k) {
            return;
        }
        st.stopping.remove(k);
        if let Some((index, ip)) = st.ips.remove(k)
            && let Some(pool) = st.pools.get_mut(&index)
        {
            pool.release(&self.nodes[index].cidr, &ip);
        }
    }

    async fn write_status(
        &self,
        node: &SimNode,
        pod: &Pod,
        status: k8s_openapi::api::core::v1::PodStatus,
    ) -> Result<bool, Error> {
        let mut updated = pod.clone();
        updated.status = Some(status);
        let api: Api<Pod> = Api::namespaced(
            node.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        match api
            .replace_status(name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(true),
            // A newer pod (or none) is on its way through the watch.
            Err(e) if matches!(&e, kube::Error::Api(s) if s.code == 409 || s.code == 404) => {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Finishes a graceful deletion as the kubelet does: containers stopped, then the pod
    /// deleted with grace 0 and its uid as precondition.
    async fn finish_deletion(
        &self,
        node: &SimNode,
        pod: &Pod,
        env: Option<PodEnv>,
    ) -> Result<(), Error> {
        let terminal = matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        );
        let started = pod
            .status
            .as_ref()
            .is_some_and(|s| s.container_statuses.is_some());
        if !terminal
            && started
            && let Some(env) = env
        {
            let status = podstatus::stopped(pod, &env, now_seconds());
            self.write_status(node, pod, status).await?;
        }
        let api: Api<Pod> = Api::namespaced(
            node.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        match api.delete(name, &params).await {
            Ok(_) => Ok(()),
            Err(e) if matches!(&e, kube::Error::Api(s) if s.code == 404 || s.code == 409) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// The host ports a pod's containers ask for, as (host IP, port, protocol); an unset IP is
/// every address.
fn host_ports(pod: &Pod) -> Vec<(String, i32, String)> {
    let spec = pod.spec.as_ref();
    spec.into_iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.filter(|h| *h > 0)?;
            let ip = p.host_ip.clone().filter(|ip| !ip.is_empty());
            Some((
                ip.unwrap_or_else(|| "0.0.0.0".into()),
                port,
                p.protocol.clone().unwrap_or_else(|| "TCP".into()),
            ))
        })
        .collect()
}

fn status_value(status: &Option<k8s_openapi::api::core::v1::PodStatus>) -> serde_json::Value {
    serde_json::to_value(status).unwrap_or_default()
}

impl Reconciler for Kubelet {
    async fn reconcile(&self, k: &str) -> Result<Action, Error> {
        let cached = self.lock().pods.get(k).cloned();
        let Some((index, pod)) = cached else {
            self.forget(k);
            return Ok(Action::Done);
        };
        let node = self.nodes[index].clone();
        // A pod moved elsewhere is not ours (nodeName is immutable, but be safe).
        let bound = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if bound.and_then(|b| self.by_name.get(b)) != Some(&index) {
            return Ok(Action::Done);
        }
        let now = now_seconds();
        if let Some(deleted) = &pod.metadata.deletion_timestamp {
            // The containers are told to stop once (`Killing`), when the deletion is first seen.
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let first = self.lock().stopping.insert(k.to_string(), uid.clone()) != Some(uid);
            if first {
                kubeletevents::record(&self.recorders[index], &pod, kubeletevents::killing(&pod));
            }
            let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
            let terminal = matches!(
                pod.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            );
            // Simulated containers stop as soon as they get SIGTERM, or after
            // `sim.k1s.io/termination-seconds` (at most the grace period, which ends at the
            // deletionTimestamp).
            let takes = podstatus::termination_seconds(&pod).clamp(0, grace.max(0));
            let stops_at = deleted.0 - jiff::SignedDuration::from_secs(grace - takes);
            if !terminal && stops_at > jiff::Timestamp::now() {
                let left = stops_at.duration_since(jiff::Timestamp::now());
                let left = Duration::try_from(left).unwrap_or(Duration::from_secs(1));
                return Ok(Action::RequeueAfter(left));
            }
            let env = self.env(k, index, &pod);
            self.finish_deletion(&node, &pod, env).await?;
            return Ok(Action::Done);
        }
        if matches!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Succeeded" | "Failed")
        ) {
            return Ok(Action::Done);
        }
        if let Some(message) = self.rejected(k, index, &pod) {
            // The kubelet's admission refused the pod (upstream's rejectPod).
            let status = k8s_openapi::api::core::v1::PodStatus {
                phase: Some("Failed".into()),
                reason: Some("NodePorts".into()),
                message: Some(format!("Pod was rejected: {message}")),
                qos_class: Some(podstatus::qos_class(&pod).into()),
                ..Default::default()
            };
            if self.write_status(&node, &pod, status).await? {
                let event = kubeletevents::rejected("NodePorts", &message);
                kubeletevents::record(&self.recorders[index], &pod, vec![event]);
            }
            return Ok(Action::Done);
        }
        let Some(env) = self.env(k, index, &pod) else {
            // As a kubelet whose CNI ran out of addresses: the sandbox fails, the pod stays
            // Pending, and the attempt is repeated (the recorder counts the repeats).
            tracing::debug!(pod = %k, node = %node.name, "no pod IP left in the node's CIDR");
            let event = kubeletevents::sandbox_failed(&pod, &self.nodes[index].cidr);
            kubeletevents::record(&self.recorders[index], &pod, vec![event]);
            return Ok(Action::RequeueAfter(Duration::from_secs(10)));
        };
        let mut env = env;
        if sources::wanted(&pod) {
            env.missing = sources::missing(&node.client, &pod).await;
        }
        let desired = podstatus::desired(&pod, &env, now);
        if status_value(&Some(desired.status.clone())) != status_value(&pod.status)
            && self.write_status(&node, &pod, desired.status).await?
        {
            // Recorded once the status that shows them is written (a conflict recomputes them).
            let events = desired
                .happenings
                .iter()
                .flat_map(|h| kubeletevents::events_for(&pod, h, &self.images[index]))
                .collect();
            kubeletevents::record(&self.recorders[index], &pod, events);
        }
        Ok(match desired.wake {
            Some(at) => {
                let left = at.duration_since(jiff::Timestamp::now());
                Action::RequeueAfter(
                    Duration::try_from(left)
                        .unwrap_or(Duration::ZERO)
                        .max(Duration::from_millis(50)),
                )
            }
            None => Action::Done,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, cidr: Option<&str>) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some(name.into());
        n.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
            pod_cidr: cidr.map(Into::into),
            ..Default::default()
        });
        n
    }

    #[test]
    fn cidrs_skip_other_nodes_and_keep_our_own() {
        let cluster = Cidr::parse("10.244.0.0/16").expect("test value");
        let existing = vec![
            node("other-a", Some("10.244.0.0/24")),
            node("other-b", Some("10.244.2.0/24")),
            node("mine-1", Some("10.244.9.0/24")),
            node("no-cidr", None),
            node("elsewhere", Some("192.168.0.0/24")),
        ];
        let names: Vec<String> = ["mine-0", "mine-1", "mine-2"].map(String::from).into();
        let got: Vec<String> = plan_cidrs(&cluster, &names, &existing)
            .expect("test value")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, ["10.244.1.0/24", "10.244.9.0/24", "10.244.3.0/24"]);
        let tiny = Cidr::parse("10.244.0.0/23").expect("test value");
        assert!(plan_cidrs(&tiny, &names, &[]).is_err(), "only two /24s");
    }
}
