//! The tokencleaner controller (upstream `pkg/controller/bootstrap/tokencleaner.go`): deletes
//! bootstrap-token Secrets whose `expiration` has passed, each when it comes due.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, DeleteParams, Preconditions};

use super::{expiration, is_bootstrap_secret};
use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::informer::{Delta, Store, key_of, split_key};

struct TokenCleaner {
    client: Client,
    secrets: Arc<Store<Secret>>,
}

pub fn start(ctx: ControllerContext) {
    let secrets = ctx.factory.informer::<Secret>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        secrets.add_handler(move |d: &Delta<Secret>| {
            if !matches!(d, Delta::Deleted(_)) && is_bootstrap_secret(d.object()) {
                queue.add(key_of(d.object().as_ref()));
            }
        });
    }
    let reconciler = Arc::new(TokenCleaner {
        client: ctx.client.clone(),
        secrets: secrets.store(),
    });
    ctx.run_workers(reconciler, queue, 1);
}

impl Reconciler for TokenCleaner {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(secret) = self.secrets.get(key) else {
            return Ok(Action::Done);
        };
        if secret.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let expires = match expiration(&secret) {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(Action::Done),
            Err(e) => {
                tracing::info!(secret = key, error = %e, "bootstrap token with an unreadable expiration left alone");
                return Ok(Action::Done);
            }
        };
        let left = expires.duration_since(jiff::Timestamp::now());
        if left.is_positive() {
            let wait = Duration::try_from(left).unwrap_or(Duration::from_secs(1));
            return Ok(Action::RequeueAfter(wait));
        }
        let (namespace, name) = split_key(key);
        tracing::debug!(secret = key, "deleting expired bootstrap token");
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace.unwrap_or_default());
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: secret.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => Ok(Action::Done),
            Err(e) if is_not_found(&e) || is_conflict(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}
