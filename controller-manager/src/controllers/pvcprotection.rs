//! The PVC protection controller (upstream `pkg/controller/volume/pvcprotection`): every claim
//! carries the `kubernetes.io/pvc-protection` finalizer (StorageObjectInUseProtection adds it on
//! create; this adds it to older claims), and a deleted claim keeps it while a scheduled pod
//! that is not shut down still uses it (checked in the cache, then live).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Client;
use kube::api::{Api, ListParams};

use super::controller_utils::{has_finalizer, hold_finalizer};
use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler};
use crate::informer::{Delta, Store, key_of, split_key};

pub const FINALIZER: &str = "kubernetes.io/pvc-protection";

struct PvcProtection {
    client: Client,
    claims: Arc<Store<PersistentVolumeClaim>>,
    pods: Arc<Store<Pod>>,
}

pub fn start(ctx: ControllerContext) {
    let claims = ctx.factory.informer::<PersistentVolumeClaim>();
    let pods = ctx.factory.informer::<Pod>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        claims.add_handler(move |d: &Delta<PersistentVolumeClaim>| {
            if !matches!(d, Delta::Deleted(_)) && needs_work(d.object()) {
                queue.add(key_of(d.object().as_ref()));
            }
        });
    }
    {
        // A pod that stops using claims (shut down or gone) may free a deleted claim.
        let queue = queue.clone();
        let claims = claims.store();
        pods.add_handler(move |d: &Delta<Pod>| {
            let pod = d.object();
            let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
            for name in claim_names(pod) {
                if let Some(claim) = claims.get_named(Some(namespace), &name)
                    && claim.metadata.deletion_timestamp.is_some()
                {
                    queue.add(key_of(claim.as_ref()));
                }
            }
        });
    }
    let reconciler = Arc::new(PvcProtection {
        client: ctx.client.clone(),
        claims: claims.store(),
        pods: pods.store(),
    });
    ctx.run_workers(reconciler, queue, 1);
}

/// A live claim without the finalizer, or a deleted one that still has it.
fn needs_work(claim: &PersistentVolumeClaim) -> bool {
    claim.metadata.deletion_timestamp.is_some() == has_finalizer(&claim.metadata, FINALIZER)
}

/// Upstream's podIsShutDown: deleted with a zero grace period (the kubelet is done with it, or
/// it was force-deleted).
fn is_shut_down(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        && pod.metadata.deletion_grace_period_seconds == Some(0)
}

/// The claims the pod's volumes name: `persistentVolumeClaim.claimName`, and the
/// `<pod>-<volume>` claims of its generic ephemeral volumes.
fn claim_names(pod: &Pod) -> Vec<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    volumes
        .into_iter()
        .flatten()
        .filter_map(|v| {
            if let Some(c) = &v.persistent_volume_claim {
                Some(c.claim_name.clone())
            } else {
                v.ephemeral
                    .as_ref()
                    .map(|_| format!("{pod_name}-{}", v.name))
            }
        })
        .collect()
}

/// Upstream's podUsesPVC: a scheduled pod naming the claim; an ephemeral claim counts only while
/// the pod is not shut down and the claim is the pod's own (its controller reference).
fn pod_uses(pod: &Pod, claim: &PersistentVolumeClaim) -> bool {
    let scheduled = pod
        .spec
        .as_ref()
        .is_some_and(|s| s.node_name.as_deref().is_some_and(|n| !n.is_empty()));
    if !scheduled {
        return false;
    }
    let claim_name = claim.metadata.name.as_deref().unwrap_or_default();
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let owned_by_pod = claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == pod.metadata.uid.as_ref());
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    volumes.into_iter().flatten().any(|v| {
        v.persistent_volume_claim
            .as_ref()
            .is_some_and(|c| c.claim_name == claim_name)
            || (v.ephemeral.is_some()
                && !is_shut_down(pod)
                && format!("{pod_name}-{}", v.name) == claim_name
                && owned_by_pod)
    })
}

impl PvcProtection {
    /// Whether any pod in the claim's namespace uses it: the cache first; when it says no, a
    /// live list (the cache may not have the newest pods yet), as upstream.
    async fn in_use(&self, claim: &PersistentVolumeClaim, namespace: &str) -> Result<bool, Error> {
        if self
            .pods
            .list_namespace(namespace)
            .iter()
            .any(|p| pod_uses(p, claim))
        {
            return Ok(true);
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let live = api.list(&ListParams::default()).await?;
        Ok(live.items.iter().any(|p| pod_uses(p, claim)))
    }
}

impl Reconciler for PvcProtection {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(claim) = self.claims.get(key) else {
            return Ok(Action::Done);
        };
        let (namespace, _) = split_key(key);
        let namespace = namespace.unwrap_or_default();
        // A live claim holds the finalizer; a deleted one while a pod still uses it.
        let hold = claim.metadata.deletion_timestamp.is_none()
            || (has_finalizer(&claim.metadata, FINALIZER)
                && self.in_use(&claim, namespace).await?);
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), namespace);
        hold_finalizer(&api, claim.as_ref(), FINALIZER, hold).await?;
        Ok(Action::Done)
    }
}
