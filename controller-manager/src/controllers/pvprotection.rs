//! The PV protection controller (upstream `pkg/controller/volume/pvprotection`): every
//! PersistentVolume carries the `kubernetes.io/pv-protection` finalizer (StorageObjectInUseProtection
//! adds it on create; this adds it to older volumes), and a deleted volume keeps it while it is
//! Bound to a claim.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::Client;
use kube::api::Api;

use super::controller_utils::{has_finalizer, hold_finalizer};
use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler};
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

/// Upstream's isBeingUsed: a Bound volume is in use.
fn is_bound(pv: &PersistentVolume) -> bool {
    pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

/// A live volume holds the finalizer; a deleted one while it is still Bound.
fn should_hold(pv: &PersistentVolume) -> bool {
    pv.metadata.deletion_timestamp.is_none() || is_bound(pv)
}

fn needs_work(pv: &PersistentVolume) -> bool {
    has_finalizer(&pv.metadata, FINALIZER) != should_hold(pv)
}

impl Reconciler for PvProtection {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(pv) = self.volumes.get(key) else {
            return Ok(Action::Done);
        };
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        hold_finalizer(&api, pv.as_ref(), FINALIZER, should_hold(&pv)).await?;
        Ok(Action::Done)
    }
}
