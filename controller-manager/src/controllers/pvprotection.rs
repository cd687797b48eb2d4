//! The PV protection controller (upstream `pkg/controller/volume/pvprotection`): every
//! PersistentVolume carries the `kubernetes.io/pv-protection` finalizer (StorageObjectInUseProtection
//! adds it on create; this adds it to older volumes), and a deleted volume keeps it while it is
//! Bound to a claim.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::Client;
use kube::api::Api;

use super::controller_utils::set_finalizers;
use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::informer::{Delta, Store, key_of};

pub const FINALIZER: &str = "kubernetes.io/pv-protection";

struct PvProtection {
    client: Client,
    volumes: Arc<Store<PersistentVolume>>,
}

pub fn start(ctx: ControllerContext) {
    let volumes = ctx.factory.informer::<PersistentVolume>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        volumes.add_handler(move |d: &Delta<PersistentVolume>| {
            if !matches!(d, Delta::Deleted(_)) && needs_work(d.object()) {
                queue.add(key_of(d.object().as_ref()));
            }
        });
    }
    let reconciler = Arc::new(PvProtection {
        client: ctx.client.clone(),
        volumes: volumes.store(),
    });
    ctx.run_workers(reconciler, queue, 1);
}

fn has_finalizer(pv: &PersistentVolume) -> bool {
    pv.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

/// Upstream's isBeingUsed: a Bound volume is in use.
fn is_bound(pv: &PersistentVolume) -> bool {
    pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

/// A live volume without the finalizer, or a deleted one that holds it and is no longer bound.
fn needs_work(pv: &PersistentVolume) -> bool {
    match pv.metadata.deletion_timestamp {
        None => !has_finalizer(pv),
        Some(_) => has_finalizer(pv) && !is_bound(pv),
    }
}

impl Reconciler for PvProtection {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(pv) = self.volumes.get(key) else {
            return Ok(Action::Done);
        };
        if !needs_work(&pv) {
            return Ok(Action::Done);
        }
        let mut finalizers = pv.metadata.finalizers.clone().unwrap_or_default();
        if pv.metadata.deletion_timestamp.is_none() {
            finalizers.push(FINALIZER.to_string());
        } else {
            finalizers.retain(|f| f != FINALIZER);
        }
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match set_finalizers(&api, pv.as_ref(), finalizers).await {
            Ok(()) => Ok(Action::Done),
            Err(e) if is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}
