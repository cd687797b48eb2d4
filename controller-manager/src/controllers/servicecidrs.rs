//! The service-cidr-controller (upstream `pkg/controller/servicecidrs`): every ServiceCIDR gets
//! the `networking.k8s.io/service-cidr-finalizer` and the condition Ready=True. A ServiceCIDR
//! being deleted keeps its finalizer while an allocated IPAddress would be left outside every
//! ServiceCIDR (Ready=False, reason Terminating); otherwise the finalizer goes once a grace period
//! has passed, so allocators that still saw it Ready have stopped using it.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::networking::v1::{IPAddress, ServiceCIDR};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use k1s_apimachinery::ip::Cidr;

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::informer::{Delta, Store};

pub const FINALIZER: &str = "networking.k8s.io/service-cidr-finalizer";
const READY_MESSAGE: &str = "Kubernetes Service CIDR is ready";
const TERMINATING_MESSAGE: &str = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR";
/// Upstream's deletionGracePeriod.
const DELETION_GRACE: Duration = Duration::from_secs(10);
/// The labels of the IPAddresses the API server's allocator makes.
const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
const MANAGED_BY: &str = "ipallocator.k8s.io";

fn prefixes(cidr: &ServiceCIDR) -> Vec<Cidr> {
    cidr.spec
        .as_ref()
        .and_then(|s| s.cidrs.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| Cidr::parse(c).map(|(c, _)| c))
        .collect()
}

fn ready(cidr: &ServiceCIDR) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    cidr.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

struct ServiceCidrs {
    client: Client,
    cidrs: Arc<Store<ServiceCIDR>>,
    addresses: Arc<Store<IPAddress>>,
}

pub fn start(ctx: ControllerContext) {
    let cidrs = ctx.factory.informer::<ServiceCIDR>();
    let addresses = ctx.factory.informer::<IPAddress>();
    let queue = ctx.queue();
    let store = cidrs.store();
    // A ServiceCIDR being deleted may be released by any change of another ServiceCIDR (a new
    // parent) or of the IPAddresses (one freed): those look at every ServiceCIDR being deleted.
    let deleting = {
        let store = store.clone();
        let queue = queue.clone();
        move || {
            for c in store.list() {
                if c.metadata.deletion_timestamp.is_some() {
                    queue.add(c.metadata.name.clone().unwrap_or_default());
                }
            }
        }
    };
    {
        let queue = queue.clone();
        let deleting = deleting.clone();
        cidrs.add_handler(move |d: &Delta<ServiceCIDR>| {
            if !matches!(d, Delta::Deleted(_)) {
                queue.add(d.object().metadata.name.clone().unwrap_or_default());
            }
            deleting();
        });
    }
    addresses.add_handler(move |d: &Delta<IPAddress>| {
        if matches!(d, Delta::Deleted(_)) {
            deleting();
        }
    });
    let reconciler = Arc::new(ServiceCidrs {
        client: ctx.client.clone(),
        cidrs: store,
        addresses: addresses.store(),
    });
    ctx.run_workers(reconciler, queue, 1);
}

impl ServiceCidrs {
    /// Whether deleting `cidr` leaves no allocated IPAddress outside every ServiceCIDR
    /// (upstream's canDeleteCIDR).
    fn can_delete(&self, cidr: &ServiceCIDR) -> bool {
        let name = cidr.metadata.name.as_deref();
        let others: Vec<Vec<Cidr>> = self
            .cidrs
            .list()
            .iter()
            .filter(|c| c.metadata.name.as_deref() != name)
            .map(|c| prefixes(c))
            .collect();
        let own = prefixes(cidr);
        let has_parent = own
            .iter()
            .all(|p| others.iter().flatten().any(|o| o.contains_cidr(p)));
        if has_parent {
            return true;
        }
        !self.addresses.list().iter().any(|a| {
            let managed = a
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(MANAGED_BY_LABEL))
                .is_some_and(|m| m == MANAGED_BY);
            let Some(ip) = a
                .metadata
                .name
                .as_deref()
                .and_then(|n| n.parse::<IpAddr>().ok())
            else {
                return false;
            };
            managed
                && own.iter().any(|p| p.contains(&ip))
                && !others.iter().flatten().any(|o| o.contains(&ip))
        })
    }

    async fn set_ready(
        &self,
        cidr: &ServiceCIDR,
        status: &str,
        reason: &str,
        message: &str,
    ) -> Result<(), Error> {
        if ready(cidr)
            .is_some_and(|c| c.status == status && c.reason == reason && c.message == message)
        {
            return Ok(());
        }
        let mut conditions: Vec<Value> = cidr
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.type_ != "Ready")
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect();
        conditions.push(json!({
            "type": "Ready",
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        }));
        let api: Api<ServiceCIDR> = Api::all(self.client.clone());
        let name = cidr.metadata.name.as_deref().unwrap_or_default();
        let patch = json!({ "status": { "conditions": conditions } });
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the finalizers, as long as nobody changed the object since it was read.
    async fn set_finalizers(
        &self,
        cidr: &ServiceCIDR,
        finalizers: Vec<String>,
    ) -> Result<(), Error> {
        let api: Api<ServiceCIDR> = Api::all(self.client.clone());
        let name = cidr.metadata.name.as_deref().unwrap_or_default();
        let patch = json!({ "metadata": {
            "finalizers": finalizers,
            "resourceVersion": cidr.metadata.resource_version,
        }});
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Reconciler for ServiceCidrs {
    async fn reconcile(&self, name: &str) -> Result<Action, Error> {
        let Some(cidr) = self.cidrs.get(name) else {
            return Ok(Action::Done);
        };
        let finalizers = cidr.metadata.finalizers.clone().unwrap_or_default();
        if let Some(deleted) = &cidr.metadata.deletion_timestamp {
            if !self.can_delete(&cidr) {
                self.set_ready(&cidr, "False", "Terminating", TERMINATING_MESSAGE)
                    .await?;
                return Ok(Action::Done);
            }
            let elapsed = jiff::Timestamp::now().duration_since(deleted.0);
            let left = jiff::SignedDuration::try_from(DELETION_GRACE).unwrap_or_default() - elapsed;
            if left.is_positive() {
                let left = Duration::try_from(left).unwrap_or(DELETION_GRACE);
                return Ok(Action::RequeueAfter(left));
            }
            if finalizers.iter().any(|f| f == FINALIZER) {
                let rest = finalizers.into_iter().filter(|f| f != FINALIZER).collect();
                self.set_finalizers(&cidr, rest).await?;
            }
            return Ok(Action::Done);
        }
        if !finalizers.iter().any(|f| f == FINALIZER) {
            let mut with = finalizers;
            with.push(FINALIZER.to_string());
            self.set_finalizers(&cidr, with).await?;
            // The write comes back through the informer, which brings the next pass.
            return Ok(Action::Done);
        }
        self.set_ready(&cidr, "True", "", READY_MESSAGE).await?;
        Ok(Action::Done)
    }
}
