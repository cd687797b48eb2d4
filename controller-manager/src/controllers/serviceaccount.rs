//! The serviceaccount controller (upstream `pkg/controller/serviceaccount`, the
//! ServiceAccountsController): every active namespace has a `default` ServiceAccount, recreated
//! if deleted.

pub mod legacy_cleaner;
pub mod tokens;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict};
use crate::controllers::{active_namespace, enqueue_live_namespaces};
use crate::informer::{Delta, Store};

/// The accounts every namespace gets (upstream's ServiceAccountsToEnsure).
const ENSURED: &[&str] = &["default"];

struct ServiceAccounts {
    client: Client,
    namespaces: Arc<Store<Namespace>>,
    accounts: Arc<Store<ServiceAccount>>,
}

pub fn start(ctx: ControllerContext) {
    let namespaces = ctx.factory.informer::<Namespace>();
    let accounts = ctx.factory.informer::<ServiceAccount>();
    let queue = ctx.queue();
    namespaces.add_handler(enqueue_live_namespaces(queue.clone()));
    {
        let queue = queue.clone();
        accounts.add_handler(move |d: &Delta<ServiceAccount>| {
            if let Delta::Deleted(sa) = d
                && ENSURED.contains(&sa.metadata.name.as_deref().unwrap_or_default())
            {
                queue.add(sa.metadata.namespace.clone().unwrap_or_default());
            }
        });
    }
    let reconciler = Arc::new(ServiceAccounts {
        client: ctx.client.clone(),
        namespaces: namespaces.store(),
        accounts: accounts.store(),
    });
    // Upstream runs the ServiceAccountsController with one worker.
    ctx.run_workers(reconciler, queue, 1);
}

impl Reconciler for ServiceAccounts {
    async fn reconcile(&self, namespace: &str) -> Result<Action, Error> {
        if active_namespace(&self.namespaces, namespace).is_none() {
            return Ok(Action::Done);
        }
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), namespace);
        for name in ENSURED {
            if self.accounts.get_named(Some(namespace), name).is_some() {
                continue;
            }
            let sa = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some((*name).to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match api.create(&PostParams::default(), &sa).await {
                Ok(_) => {}
                Err(e) if is_conflict(&e) => {}
                // The namespace began terminating meanwhile.
                Err(kube::Error::Api(s)) if s.code == 403 && s.reason == "Forbidden" => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Action::Done)
    }
}
