//! The Node authorizer's graph (upstream `plugin/pkg/auth/authorizer/node`, graph.go and
//! graph_populator.go): which secrets, configmaps, PVCs, PVs, service accounts, ResourceClaims
//! and VolumeAttachments a node may reach, fed from watches of pods, PersistentVolumes and
//! VolumeAttachments (`crate::authorization` runs the watches, as it does for the RBAC cache).
//!
//! Upstream keeps a graph of vertices (pod -> node; secret, configmap, pvc, serviceaccount and
//! resourceclaim -> pod; pv -> pvc; secret -> pv; volumeattachment -> node) and walks it from the
//! requested object towards the node. k1s keeps the same relationships flatter, so that every
//! question is a few hash lookups and nothing but names is stored:
//!
//! - each pod bound to a node: the node and the objects its spec references, by kind and name in
//!   the pod's namespace (recomputed from the pod on every change, dropped on delete or unbind);
//! - each referenced object: the nodes whose pods reference it, each with the number of those
//!   pods (upstream's pod edges, counted, so the last pod to go removes the entry);
//! - each PersistentVolume with a claimRef: its claim and the kubelet-visible secrets it names,
//!   plus secret -> PVs naming it, so `secret -> pv -> pvc -> pod -> node` is one lookup per PV;
//! - each VolumeAttachment with a node: that node.
//!
//! Memory is one small record per bound pod, bound PV and attachment, and one entry per distinct
//! referenced object.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use k1s_apimachinery::pod_refs;
use serde_json::Value;

/// An object a node may reach through the graph (upstream's vertex types that requests start
/// from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GraphKind {
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    ServiceAccount,
    ResourceClaim,
    PersistentVolume,
    VolumeAttachment,
}

/// How many kinds a pod references directly (the first five of [`GraphKind`]).
const POD_REFERENCED: usize = 5;

impl GraphKind {
    /// Index into [`Inner::reach`] for the kinds pods reference directly.
    fn slot(self) -> Option<usize> {
        match self {
            GraphKind::Secret => Some(0),
            GraphKind::ConfigMap => Some(1),
            GraphKind::PersistentVolumeClaim => Some(2),
            GraphKind::ServiceAccount => Some(3),
            GraphKind::ResourceClaim => Some(4),
            GraphKind::PersistentVolume | GraphKind::VolumeAttachment => None,
        }
    }
}

/// The resources whose watches feed the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphSource {
    Pods,
    PersistentVolumes,
    VolumeAttachments,
}

impl GraphSource {
    pub const ALL: [GraphSource; 3] = [
        GraphSource::Pods,
        GraphSource::PersistentVolumes,
        GraphSource::VolumeAttachments,
    ];

    /// `(group, version, resource)` of the watched resource.
    pub fn resource(self) -> (&'static str, &'static str, &'static str) {
        match self {
            GraphSource::Pods => ("", "v1", "pods"),
            GraphSource::PersistentVolumes => ("", "v1", "persistentvolumes"),
            GraphSource::VolumeAttachments => ("storage.k8s.io", "v1", "volumeattachments"),
        }
    }
}

type ByName<T> = HashMap<Box<str>, T>;
type ByNamespace<T> = HashMap<Box<str>, ByName<T>>;

/// A bound pod: its node and what its spec references in its namespace (sorted, no repeats).
#[derive(Debug, PartialEq, Eq)]
struct PodEdges {
    node: Arc<str>,
    refs: Box<[(GraphKind, Box<str>)]>,
}

/// The nodes with a pod referencing one object, each with the number of such pods; sorted by
/// node name.
#[derive(Debug, Default)]
struct Holders(Vec<(Arc<str>, u32)>);

impl Holders {
    fn find(&self, node: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| (**n).cmp(node))
    }

    fn add(&mut self, node: &Arc<str>) {
        match self.find(node) {
            Ok(i) => self.0[i].1 += 1,
            Err(i) => self.0.insert(i, (node.clone(), 1)),
        }
    }

    /// One pod on `node` no longer references the object; false once no node is left.
    fn release(&mut self, node: &str) -> bool {
        if let Ok(i) = self.find(node) {
            self.0[i].1 -= 1;
            if self.0[i].1 == 0 {
                self.0.remove(i);
            }
        }
        !self.0.is_empty()
    }

    fn has(&self, node: &str) -> bool {
        self.find(node).is_ok()
    }
}

/// A PersistentVolume with a claimRef: the claim and the secrets the kubelet sees.
#[derive(Debug, PartialEq, Eq)]
struct PvEdges {
    claim_namespace: Box<str>,
    claim_name: Box<str>,
    /// `(namespace, name)`, sorted, no repeats.
    secrets: Box<[(Box<str>, Box<str>)]>,
}

#[derive(Debug, Default)]
struct Inner {
    /// namespace -> pod name -> what the bound pod references
    pods: ByNamespace<PodEdges>,
    /// per directly referenced kind: namespace -> name -> nodes holding it
    reach: [ByNamespace<Holders>; POD_REFERENCED],
    /// PV name -> claim and secrets
    pvs: ByName<PvEdges>,
    /// secret namespace -> secret name -> PVs naming it
    pv_secrets: ByNamespace<Vec<Box<str>>>,
    /// VolumeAttachment name -> node
    attachments: ByName<Box<str>>,
}

fn nested_get<'a, T>(map: &'a ByNamespace<T>, namespace: &str, name: &str) -> Option<&'a T> {
    map.get(namespace)?.get(name)
}

fn nested_entry<'a, T: Default>(
    map: &'a mut ByNamespace<T>,
    namespace: &str,
    name: &str,
) -> &'a mut T {
    map.entry(namespace.into())
        .or_default()
        .entry(name.into())
        .or_default()
}

fn nested_insert<T>(map: &mut ByNamespace<T>, namespace: &str, name: &str, value: T) {
    map.entry(namespace.into())
        .or_default()
        .insert(name.into(), value);
}

/// Changes the entry `namespace/name` with `f`; removes it (and an emptied namespace) when `f`
/// returns false.
fn nested_update<T>(
    map: &mut ByNamespace<T>,
    namespace: &str,
    name: &str,
    f: impl FnOnce(&mut T) -> bool,
) {
    let Some(names) = map.get_mut(namespace) else {
        return;
    };
    if let Some(value) = names.get_mut(name)
        && !f(value)
    {
        names.remove(name);
    }
    if names.is_empty() {
        map.remove(namespace);
    }
}

fn nested_remove<T>(map: &mut ByNamespace<T>, namespace: &str, name: &str) -> Option<T> {
    let names = map.get_mut(namespace)?;
    let value = names.remove(name);
    if names.is_empty() {
        map.remove(namespace);
    }
    value
}

impl Inner {
    fn set_pod(&mut self, namespace: &str, name: &str, edges: Option<PodEdges>) {
        let old = nested_get(&self.pods, namespace, name);
        if old == edges.as_ref() {
            return;
        }
        if let Some(old) = nested_remove(&mut self.pods, namespace, name) {
            for (kind, object) in &old.refs {
                if let Some(slot) = kind.slot() {
                    nested_update(&mut self.reach[slot], namespace, object, |h| {
                        h.release(&old.node)
                    });
                }
            }
        }
        if let Some(new) = edges {
            for (kind, object) in &new.refs {
                if let Some(slot) = kind.slot() {
                    nested_entry(&mut self.reach[slot], namespace, object).add(&new.node);
                }
            }
            nested_insert(&mut self.pods, namespace, name, new);
        }
    }

    fn set_pv(&mut self, name: &str, edges: Option<PvEdges>) {
        if self.pvs.get(name) == edges.as_ref() {
            return;
        }
        if let Some(old) = self.pvs.remove(name) {
            for (ns, secret) in &old.secrets {
                nested_update(&mut self.pv_secrets, ns, secret, |pvs| {
                    pvs.retain(|pv| &**pv != name);
                    !pvs.is_empty()
                });
            }
        }
        if let Some(new) = edges {
            for (ns, secret) in &new.secrets {
                nested_entry(&mut self.pv_secrets, ns, secret).push(name.into());
            }
            self.pvs.insert(name.into(), new);
        }
    }

    fn set_attachment(&mut self, name: &str, node: Option<&str>) {
        match node {
            Some(node) => {
                self.attachments.insert(name.into(), node.into());
            }
            None => {
                self.attachments.remove(name);
            }
        }
    }

    /// A pod bound to `node` references `kind namespace/name`.
    fn referenced(&self, node: &str, kind: GraphKind, namespace: &str, name: &str) -> bool {
        kind.slot()
            .and_then(|slot| nested_get(&self.reach[slot], namespace, name))
            .is_some_and(|h| h.has(node))
    }

    /// The PV's claim is referenced by a pod bound to `node`.
    fn pv_reached(&self, node: &str, pv: &str) -> bool {
        self.pvs.get(pv).is_some_and(|pv| {
            self.referenced(
                node,
                GraphKind::PersistentVolumeClaim,
                &pv.claim_namespace,
                &pv.claim_name,
            )
        })
    }

    fn has_path(&self, node: &str, kind: GraphKind, namespace: &str, name: &str) -> bool {
        match kind {
            GraphKind::PersistentVolume => self.pv_reached(node, name),
            GraphKind::VolumeAttachment => self.attachments.get(name).is_some_and(|n| &**n == node),
            GraphKind::Secret => {
                self.referenced(node, kind, namespace, name)
                    || nested_get(&self.pv_secrets, namespace, name)
                        .is_some_and(|pvs| pvs.iter().any(|pv| self.pv_reached(node, pv)))
            }
            _ => self.referenced(node, kind, namespace, name),
        }
    }
}

/// The graph, concurrently readable: the watch followers take a short write lock per event,
/// authorizations share read locks.
#[derive(Debug, Default)]
pub struct NodeGraph {
    inner: RwLock<Inner>,
}

impl NodeGraph {
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// An object of `source` was created or changed (a watch ADDED / MODIFIED event).
    pub fn apply(&self, source: GraphSource, obj: &Value) {
        let name = meta_str(obj, "name");
        match source {
            GraphSource::Pods => {
                let namespace = meta_str(obj, "namespace");
                let edges = pod_edges(obj);
                // Most pod events are status updates that change no edge: check them without
                // holding up authorizations.
                if nested_get(&self.read().pods, namespace, name) == edges.as_ref() {
                    return;
                }
                self.write().set_pod(namespace, name, edges);
            }
            GraphSource::PersistentVolumes => {
                let edges = pv_edges(obj);
                self.write().set_pv(name, edges);
            }
            GraphSource::VolumeAttachments => {
                self.write().set_attachment(name, attachment_node(obj));
            }
        }
    }

    /// An object of `source` was deleted (its last state).
    pub fn remove(&self, source: GraphSource, obj: &Value) {
        let name = meta_str(obj, "name");
        let mut inner = self.write();
        match source {
            GraphSource::Pods => inner.set_pod(meta_str(obj, "namespace"), name, None),
            GraphSource::PersistentVolumes => inner.set_pv(name, None),
            GraphSource::VolumeAttachments => inner.set_attachment(name, None),
        }
    }

    /// Replaces everything learned from `source` with `objects` (after a list or relist).
    pub fn replace_all(&self, source: GraphSource, objects: &[Value]) {
        match source {
            GraphSource::Pods => {
                let pods: Vec<_> = objects
                    .iter()
                    .map(|p| (meta_str(p, "namespace"), meta_str(p, "name"), pod_edges(p)))
                    .collect();
                let mut inner = self.write();
                inner.pods.clear();
                inner.reach = Default::default();
                for (ns, name, edges) in pods {
                    inner.set_pod(ns, name, edges);
                }
            }
            GraphSource::PersistentVolumes => {
                let pvs: Vec<_> = objects
                    .iter()
                    .map(|pv| (meta_str(pv, "name"), pv_edges(pv)))
                    .collect();
                let mut inner = self.write();
                inner.pvs.clear();
                inner.pv_secrets.clear();
                for (name, edges) in pvs {
                    inner.set_pv(name, edges);
                }
            }
            GraphSource::VolumeAttachments => {
                let mut inner = self.write();
                inner.attachments.clear();
                for va in objects {
                    inner.set_attachment(meta_str(va, "name"), attachment_node(va));
                }
            }
        }
    }

    /// Upstream `hasPathFrom`: whether `kind namespace/name` leads to `node` (a pod bound to the
    /// node references it, directly or through a PVC and its bound PV; or, for a
    /// VolumeAttachment, it is attached to the node). `namespace` is empty for PVs and
    /// VolumeAttachments.
    pub fn has_path(&self, node: &str, kind: GraphKind, namespace: &str, name: &str) -> bool {
        !name.is_empty() && self.read().has_path(node, kind, namespace, name)
    }

    /// What the graph holds: (bound pods, PVs with a claim, VolumeAttachments with a node).
    pub fn counts(&self) -> (usize, usize, usize) {
        let inner = self.read();
        (
            inner.pods.values().map(HashMap::len).sum(),
            inner.pvs.len(),
            inner.attachments.len(),
        )
    }

    /// Every entry of every map, pods to attachments: zero once all sources are gone.
    #[cfg(test)]
    pub(super) fn entries(&self) -> usize {
        fn nested<T>(m: &ByNamespace<T>) -> usize {
            m.values().map(|names| 1 + names.len()).sum()
        }
        let inner = self.read();
        nested(&inner.pods)
            + inner.reach.iter().map(nested).sum::<usize>()
            + inner.pvs.len()
            + nested(&inner.pv_secrets)
            + inner.attachments.len()
    }
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

/// The elements of a JSON array (none for anything else).
fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

/// Upstream's mirror-pod annotation: a static pod's API copy grants nothing beyond itself.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// What a pod bound to a node references (upstream `Graph.AddPod`); `None` for an unbound pod.
fn pod_edges(pod: &Value) -> Option<PodEdges> {
    let node = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())?;
    let mirror = pod["metadata"]["annotations"][MIRROR_POD_ANNOTATION].is_string();
    let mut refs = if mirror {
        Vec::new()
    } else {
        pod_references(pod)
    };
    refs.sort_unstable();
    refs.dedup();
    Some(PodEdges {
        node: node.into(),
        refs: refs.into_boxed_slice(),
    })
}

/// The objects a pod's spec names in its namespace: its service account, the secrets of
/// upstream `VisitPodSecretNames`, the configmaps of `VisitPodConfigmapNames`, the claims of its
/// volumes (ephemeral ones as `<pod>-<volume>`) and its ResourceClaims (upstream
/// `resourceclaim.Name`: by name, or the one the status records for a template).
fn pod_references(pod: &Value) -> Vec<(GraphKind, Box<str>)> {
    use GraphKind::*;
    let spec = &pod["spec"];
    let mut refs = Vec::new();
    let mut add = |kind: GraphKind, name: Option<&str>| {
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            refs.push((kind, name.into()));
        }
    };
    add(ServiceAccount, spec["serviceAccountName"].as_str());
    pod_refs::visit_secret_names(spec, |n| add(Secret, Some(n)));
    pod_refs::visit_config_map_names(spec, |n| add(ConfigMap, Some(n)));
    let pod_name = meta_str(pod, "name");
    for v in items(&spec["volumes"]) {
        add(
            PersistentVolumeClaim,
            v["persistentVolumeClaim"]["claimName"].as_str(),
        );
        if v["ephemeral"].is_object()
            && let Some(volume) = v["name"].as_str()
        {
            add(
                PersistentVolumeClaim,
                Some(format!("{pod_name}-{volume}").as_str()),
            );
        }
    }
    let statuses = &pod["status"]["resourceClaimStatuses"];
    for claim in items(&spec["resourceClaims"]) {
        if let Some(name) = claim["resourceClaimName"].as_str() {
            add(ResourceClaim, Some(name));
        } else if claim["resourceClaimTemplateName"].is_string()
            && let Some(status) = items(statuses).find(|s| s["name"] == claim["name"])
        {
            add(ResourceClaim, status["resourceClaimName"].as_str());
        }
    }
    add(
        ResourceClaim,
        pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"].as_str(),
    );
    refs
}

/// A bound PV's claim and the secrets the kubelet sees (upstream `AddPV` with
/// `VisitPVSecretNames`, kubelet-visible ones only: not CSI's controller secrets); `None`
/// without a claimRef. Sources whose secret reference may omit its namespace fall back to the
/// claim's, as upstream.
fn pv_edges(pv: &Value) -> Option<PvEdges> {
    let spec = &pv["spec"];
    let claim = &spec["claimRef"];
    if !claim.is_object() {
        return None;
    }
    let claim_namespace = claim["namespace"].as_str().unwrap_or("");
    let mut secrets: Vec<(Box<str>, Box<str>)> = Vec::new();
    let mut add = |namespace: &str, name: &Value| {
        if let Some(name) = non_empty(name) {
            secrets.push((namespace.into(), name.into()));
        }
    };
    let azure = &spec["azureFile"];
    if azure.is_object() {
        let ns = non_empty(&azure["secretNamespace"]).unwrap_or(claim_namespace);
        add(ns, &azure["secretName"]);
    }
    for source in ["cephfs", "flexVolume", "rbd", "scaleIO", "iscsi"] {
        let r = &spec[source]["secretRef"];
        add(
            non_empty(&r["namespace"]).unwrap_or(claim_namespace),
            &r["name"],
        );
    }
    for source in ["cinder", "storageos"] {
        let r = &spec[source]["secretRef"];
        add(r["namespace"].as_str().unwrap_or(""), &r["name"]);
    }
    for key in [
        "nodePublishSecretRef",
        "nodeStageSecretRef",
        "nodeExpandSecretRef",
    ] {
        let r = &spec["csi"][key];
        add(r["namespace"].as_str().unwrap_or(""), &r["name"]);
    }
    secrets.sort_unstable();
    secrets.dedup();
    Some(PvEdges {
        claim_namespace: claim_namespace.into(),
        claim_name: claim["name"].as_str().unwrap_or("").into(),
        secrets: secrets.into_boxed_slice(),
    })
}

fn non_empty(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| !s.is_empty())
}

/// The node a VolumeAttachment is for, if any.
fn attachment_node(va: &Value) -> Option<&str> {
    va["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())
}
