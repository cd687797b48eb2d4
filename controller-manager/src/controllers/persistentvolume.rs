//! The PersistentVolume binder (upstream `pkg/controller/volume/persistentvolume`), for
//! statically provisioned volumes: an unbound claim is bound to the smallest Available volume
//! that satisfies it (class, access modes, volume mode, selector, size), both sides marked as
//! upstream does (`claimRef`, `volumeName`, `pv.kubernetes.io/bind-completed` and
//! `bound-by-controller`, phases Bound); a volume without a claim is Available, one whose claim
//! is gone is Released (a `Delete` volume no plugin here can delete is Failed, as upstream
//! without a deleter); a bound claim whose volume is gone is Lost. Claims waiting for a
//! provisioner or for their first consumer get upstream's events. One queue carries both kinds
//! of key: `claim/<namespace>/<name>` and `volume/<name>`.

use std::sync::Arc;

use k1s_apimachinery::quantity::Quantity;
use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
    PersistentVolumeStatus,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, PostParams};
use kube::{Client, Resource};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::events::{EventRecorder, object_reference};
use crate::informer::{Delta, Store, key_of, split_key};
use crate::workqueue::WorkQueue;

const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const BETA_CLAIM_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

struct Binder {
    client: Client,
    claims: Arc<Store<PersistentVolumeClaim>>,
    volumes: Arc<Store<PersistentVolume>>,
    classes: Arc<Store<StorageClass>>,
    recorder: EventRecorder,
}

fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!("claim/{}", key_of(claim))
}

fn volume_key(name: &str) -> String {
    format!("volume/{name}")
}

pub fn start(ctx: ControllerContext) {
    let claims = ctx.factory.informer::<PersistentVolumeClaim>();
    let volumes = ctx.factory.informer::<PersistentVolume>();
    let classes = ctx.factory.informer::<StorageClass>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        claims.add_handler(move |d: &Delta<PersistentVolumeClaim>| {
            let claim = d.object();
            match d {
                // Its volume may now be released.
                Delta::Deleted(_) => {
                    if let Some(v) = volume_name(claim) {
                        queue.add(volume_key(v));
                    }
                }
                _ => queue.add(claim_key(claim)),
            }
        });
    }
    {
        let queue = queue.clone();
        let claims = claims.store();
        volumes.add_handler(move |d: &Delta<PersistentVolume>| {
            let pv = d.object();
            let name = pv.metadata.name.clone().unwrap_or_default();
            if !matches!(d, Delta::Deleted(_)) {
                queue.add(volume_key(&name));
            }
            // A new or freed volume may satisfy a waiting claim; a bound claim whose volume
            // went is lost.
            enqueue_waiting_claims(&queue, &claims, pv);
        });
    }
    {
        // A class appearing may change what a waiting claim is told.
        let queue = queue.clone();
        let claims = claims.store();
        classes.add_handler(move |d: &Delta<StorageClass>| {
            if matches!(d, Delta::Added(_)) {
                for claim in claims.list() {
                    if volume_name(&claim).is_none() {
                        queue.add(claim_key(&claim));
                    }
                }
            }
        });
    }
    let binder = Arc::new(Binder {
        client: ctx.client.clone(),
        claims: claims.store(),
        volumes: volumes.store(),
        classes: classes.store(),
        recorder: ctx.recorder.clone(),
    });
    let workers = ctx.workers("persistentvolume-binder", 1);
    ctx.run_workers(binder, queue, workers);
}

fn enqueue_waiting_claims(
    queue: &WorkQueue,
    claims: &Store<PersistentVolumeClaim>,
    pv: &PersistentVolume,
) {
    let name = pv.metadata.name.as_deref().unwrap_or_default();
    for claim in claims.list() {
        match volume_name(&claim) {
            None => queue.add(claim_key(&claim)),
            Some(v) if v == name => queue.add(claim_key(&claim)),
            Some(_) => {}
        }
    }
}

fn volume_name(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .filter(|v| !v.is_empty())
}

fn annotation<'a, K: Resource>(obj: &'a K, key: &str) -> Option<&'a str> {
    obj.meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn set_annotation<K: Resource>(obj: &mut K, key: &str, value: &str) {
    obj.meta_mut()
        .annotations
        .get_or_insert_with(Default::default)
        .insert(key.into(), value.into());
}

/// Upstream's GetPersistentVolumeClaimClass: the beta annotation, else `storageClassName`.
fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    annotation(claim, BETA_CLAIM_CLASS)
        .or_else(|| {
            claim
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.as_deref())
        })
        .unwrap_or_default()
}

/// Upstream's GetPersistentVolumeClass.
fn volume_class(pv: &PersistentVolume) -> &str {
    annotation(pv, BETA_CLAIM_CLASS)
        .or_else(|| {
            pv.spec
                .as_ref()
                .and_then(|s| s.storage_class_name.as_deref())
        })
        .unwrap_or_default()
}

fn volume_phase(pv: &PersistentVolume) -> &str {
    pv.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn claim_phase(claim: &PersistentVolumeClaim) -> &str {
    claim
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn mode_of(mode: Option<&String>) -> &str {
    mode.map(String::as_str).unwrap_or("Filesystem")
}

/// Whether the volume's claimRef names this claim (and, once set, its uid).
fn is_bound_to(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    r.name == claim.metadata.name
        && r.namespace == claim.metadata.namespace
        && r.uid
            .as_ref()
            .is_none_or(|uid| uid.is_empty() || Some(uid) == claim.metadata.uid.as_ref())
}

/// Whether the volume satisfies the claim (upstream's findByClaim checks, without node
/// affinity, which only matters for delayed binding): class, volume mode, selector, access
/// modes and size.
fn satisfies(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let (Some(spec), Some(want)) = (pv.spec.as_ref(), claim.spec.as_ref()) else {
        return false;
    };
    if volume_class(pv) != claim_class(claim) {
        return false;
    }
    if mode_of(spec.volume_mode.as_ref()) != mode_of(want.volume_mode.as_ref()) {
        return false;
    }
    if want.selector.is_some()
        && !super::selector_matches(want.selector.as_ref(), pv.metadata.labels.as_ref())
    {
        return false;
    }
    let has = spec.access_modes.clone().unwrap_or_default();
    if !want.access_modes.iter().flatten().all(|m| has.contains(m)) {
        return false;
    }
    match (storage_of_volume(pv), requested_storage(claim)) {
        (Some(have), Some(need)) => have >= need,
        (Some(_), None) => true,
        _ => false,
    }
}

fn storage_of_volume(pv: &PersistentVolume) -> Option<Quantity> {
    let q = pv.spec.as_ref()?.capacity.as_ref()?.get("storage")?;
    Quantity::parse(&q.0)
}

fn requested_storage(claim: &PersistentVolumeClaim) -> Option<Quantity> {
    let q = claim
        .spec
        .as_ref()?
        .resources
        .as_ref()?
        .requests
        .as_ref()?
        .get("storage")?;
    Quantity::parse(&q.0)
}

impl Binder {
    /// The volume for an unbound claim: one pre-bound to it first, else the smallest Available
    /// volume without a claim that satisfies it.
    fn best_match(&self, claim: &PersistentVolumeClaim) -> Option<Arc<PersistentVolume>> {
        let candidates: Vec<Arc<PersistentVolume>> = self
            .volumes
            .list()
            .into_iter()
            .filter(|pv| pv.metadata.deletion_timestamp.is_none())
            .filter(|pv| satisfies(pv, claim))
            .collect();
        if let Some(pre) = candidates.iter().find(|pv| is_bound_to(pv, claim)) {
            return Some(pre.clone());
        }
        candidates
            .into_iter()
            .filter(|pv| {
                pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_none())
                    && matches!(volume_phase(pv), "Available" | "Pending" | "")
            })
            .min_by(|a, b| storage_of_volume(a).cmp(&storage_of_volume(b)))
    }

    fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
        self.classes.get_named(None, name)
    }

    async fn set_volume_phase(
        &self,
        pv: &PersistentVolume,
        phase: &str,
        message: Option<String>,
    ) -> Result<(), kube::Error> {
        let status = pv.status.clone().unwrap_or_default();
        if status.phase.as_deref() == Some(phase) && status.message == message {
            return Ok(());
        }
        let mut updated = pv.clone();
        updated.status = Some(PersistentVolumeStatus {
            phase: Some(phase.into()),
            message,
            ..status
        });
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        let name = pv.metadata.name.clone().unwrap_or_default();
        api.replace_status(&name, &PostParams::default(), &updated)
            .await
            .map(|_| ())
    }

    async fn set_claim_bound(
        &self,
        claim: &PersistentVolumeClaim,
        pv: &PersistentVolume,
    ) -> Result<(), kube::Error> {
        let spec = pv.spec.clone().unwrap_or_default();
        let status = claim.status.clone().unwrap_or_default();
        let wanted = PersistentVolumeClaimStatus {
            phase: Some("Bound".into()),
            access_modes: spec.access_modes.clone(),
            capacity: spec.capacity.clone(),
            ..status.clone()
        };
        if wanted == status {
            return Ok(());
        }
        let mut updated = claim.clone();
        updated.status = Some(wanted);
        self.replace_claim_status(&updated).await
    }

    /// The claims API of the claim's namespace, and its name.
    fn claim_api(&self, claim: &PersistentVolumeClaim) -> (Api<PersistentVolumeClaim>, String) {
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        let name = claim.metadata.name.clone().unwrap_or_default();
        (Api::namespaced(self.client.clone(), namespace), name)
    }

    async fn replace_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<PersistentVolumeClaim, kube::Error> {
        let (api, name) = self.claim_api(claim);
        api.replace(&name, &PostParams::default(), claim).await
    }

    async fn replace_claim_status(&self, claim: &PersistentVolumeClaim) -> Result<(), kube::Error> {
        let (api, name) = self.claim_api(claim);
        api.replace_status(&name, &PostParams::default(), claim)
            .await
            .map(|_| ())
    }

    /// Upstream's bind: the volume's claimRef, the volume Bound, the claim's volumeName and
    /// annotations, the claim Bound; each step re-run until both sides agree.
    async fn bind(
        &self,
        pv: &PersistentVolume,
        claim: &PersistentVolumeClaim,
    ) -> Result<(), kube::Error> {
        let mut volume = pv.clone();
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("PersistentVolumeClaim".into()),
            name: claim.metadata.name.clone(),
            namespace: claim.metadata.namespace.clone(),
            uid: claim.metadata.uid.clone(),
            resource_version: claim.metadata.resource_version.clone(),
            ..Default::default()
        };
        let already = pv
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .is_some_and(|r| r.uid == claim.metadata.uid);
        if !already {
            let preset = pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_some());
            volume.spec.get_or_insert_with(Default::default).claim_ref = Some(reference);
            if !preset {
                set_annotation(&mut volume, BOUND_BY_CONTROLLER, "yes");
            }
            let api: Api<PersistentVolume> = Api::all(self.client.clone());
            let name = pv.metadata.name.clone().unwrap_or_default();
            volume = api.replace(&name, &PostParams::default(), &volume).await?;
        }
        self.set_volume_phase(&volume, "Bound", None).await?;
        let volume_name = pv.metadata.name.clone().unwrap_or_default();
        let mut bound = claim.clone();
        let claim_done =
            volume_name_is(claim, &volume_name) && annotation(claim, BIND_COMPLETED) == Some("yes");
        if !claim_done {
            if !volume_name_is(claim, &volume_name) {
                bound.spec.get_or_insert_with(Default::default).volume_name =
                    Some(volume_name.clone());
                set_annotation(&mut bound, BOUND_BY_CONTROLLER, "yes");
            }
            set_annotation(&mut bound, BIND_COMPLETED, "yes");
            bound = self.replace_claim(&bound).await?;
        }
        self.set_claim_bound(&bound, &volume).await
    }

    async fn sync_claim(&self, key: &str) -> Result<Action, Error> {
        let Some(claim) = self.claims.get(key) else {
            return Ok(Action::Done);
        };
        if claim.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let reference = object_reference(claim.as_ref());
        match volume_name(&claim) {
            None => {
                if let Some(pv) = self.best_match(&claim) {
                    self.bind(&pv, &claim).await?;
                    return Ok(Action::Done);
                }
                self.explain_pending(&claim, &reference).await?;
            }
            Some(name) => match self.volumes.get_named(None, name) {
                None => {
                    if claim_phase(&claim) == "Bound" {
                        let mut lost = (*claim).clone();
                        lost.status.get_or_insert_with(Default::default).phase =
                            Some("Lost".into());
                        self.replace_claim_status(&lost).await?;
                        self.recorder.event(
                            &reference,
                            "Warning",
                            "ClaimLost",
                            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
                        );
                    } else if claim_phase(&claim) != "Lost" {
                        self.recorder.event(
                            &reference,
                            "Normal",
                            "FailedBinding",
                            &format!("volume \"{name}\" not found"),
                        );
                    }
                }
                Some(pv) => {
                    let free = pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_none());
                    if is_bound_to(&pv, &claim) || (free && satisfies(&pv, &claim)) {
                        self.bind(&pv, &claim).await?;
                    } else if claim_phase(&claim) == "Bound" {
                        self.recorder.event(
                            &reference,
                            "Warning",
                            "ClaimMisbound",
                            "Two claims are bound to the same volume, this one is bound incorrectly",
                        );
                    }
                }
            },
        }
        Ok(Action::Done)
    }

    /// Why an unbound claim waits, told as upstream's events; an external provisioner is named
    /// in the claim's annotations.
    async fn explain_pending(
        &self,
        claim: &PersistentVolumeClaim,
        reference: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let class_name = claim_class(claim);
        if class_name.is_empty() {
            self.recorder.event(
                reference,
                "Normal",
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            );
            return Ok(());
        }
        let Some(class) = self.class(class_name) else {
            self.recorder.event(
                reference,
                "Warning",
                "ProvisioningFailed",
                &format!("storageclass.storage.k8s.io \"{class_name}\" not found"),
            );
            return Ok(());
        };
        let delayed = class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer");
        if delayed && annotation(claim, SELECTED_NODE).is_none() {
            self.recorder.event(
                reference,
                "Normal",
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            );
            return Ok(());
        }
        let provisioner = class.provisioner.as_str();
        if provisioner == "kubernetes.io/no-provisioner" {
            self.recorder.event(
                reference,
                "Normal",
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            );
            return Ok(());
        }
        if annotation(claim, STORAGE_PROVISIONER) != Some(provisioner) {
            let mut marked = claim.clone();
            set_annotation(&mut marked, STORAGE_PROVISIONER, provisioner);
            set_annotation(&mut marked, BETA_STORAGE_PROVISIONER, provisioner);
            self.replace_claim(&marked).await?;
        }
        self.recorder.event(
            reference,
            "Normal",
            "ExternalProvisioning",
            &format!(
                "Waiting for a volume to be created either by the external provisioner \
                 '{provisioner}' or manually by the system administrator. If volume creation is \
                 delayed, please verify that the provisioner is running and correctly registered."
            ),
        );
        Ok(())
    }

    async fn sync_volume(&self, name: &str) -> Result<Action, Error> {
        let Some(pv) = self.volumes.get_named(None, name) else {
            return Ok(Action::Done);
        };
        if pv.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let Some(reference) = pv.spec.as_ref().and_then(|s| s.claim_ref.clone()) else {
            self.set_volume_phase(&pv, "Available", None).await?;
            return Ok(Action::Done);
        };
        let namespace = reference.namespace.clone().unwrap_or_default();
        let claim_name = reference.name.clone().unwrap_or_default();
        let uid = reference.uid.clone().filter(|u| !u.is_empty());
        // The cache may not have a new claim yet: a miss is checked live.
        let mut claim = self
            .claims
            .get_named(Some(&namespace), &claim_name)
            .map(|c| (*c).clone());
        if claim.is_none() {
            let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), &namespace);
            claim = api.get_opt(&claim_name).await?;
        }
        let claim = claim.filter(|c| uid.is_none() || c.metadata.uid == uid);
        match (claim, uid) {
            // Pre-bound by its author to a claim not made yet: offered to that claim only.
            (None, None) => self.set_volume_phase(&pv, "Available", None).await?,
            (None, Some(_)) => self.release(&pv).await?,
            (Some(c), _) if volume_name_is(&c, name) => {
                self.set_volume_phase(&pv, "Bound", None).await?;
            }
            // The claim's side is still to be written: the claim's own sync binds it.
            (Some(_), _) => {}
        }
        Ok(Action::Done)
    }

    /// The claim is gone: Retain and Recycle volumes are Released; a Delete volume waits for
    /// its external provisioner, or is Failed when nothing here can delete it.
    async fn release(&self, pv: &PersistentVolume) -> Result<(), kube::Error> {
        let policy = pv
            .spec
            .as_ref()
            .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
            .unwrap_or("Retain");
        let external = annotation(pv, PROVISIONED_BY).is_some()
            || pv.spec.as_ref().is_some_and(|s| s.csi.is_some());
        if policy == "Delete" && !external {
            let name = pv.metadata.name.as_deref().unwrap_or_default();
            let message = format!(
                "error getting deleter volume plugin for volume \"{name}\": no deletable volume \
                 plugin matched"
            );
            if volume_phase(pv) != "Failed" {
                self.recorder.event(
                    &object_reference(pv),
                    "Warning",
                    "VolumeFailedDelete",
                    &message,
                );
            }
            return self.set_volume_phase(pv, "Failed", Some(message)).await;
        }
        self.set_volume_phase(pv, "Released", None).await
    }
}

fn volume_name_is(claim: &PersistentVolumeClaim, name: &str) -> bool {
    volume_name(claim) == Some(name)
}

impl Reconciler for Binder {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let result = if let Some(claim) = key.strip_prefix("claim/") {
            self.sync_claim(claim).await
        } else if let Some(volume) = key.strip_prefix("volume/") {
            let (_, name) = split_key(volume);
            self.sync_volume(name).await
        } else {
            Ok(Action::Done)
        };
        match result {
            // Another writer moved first: the next event brings the new state.
            Err(Error::Kube(e)) if is_conflict(&e) || is_not_found(&e) => Ok(Action::Done),
            other => other,
        }
    }
}
