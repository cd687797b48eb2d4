//! The bootstrapsigner controller (upstream `pkg/controller/bootstrap/bootstrapsigner.go`): keeps
//! one detached JWS per signing bootstrap token (`jws-kubeconfig-<token-id>`) in the
//! `kube-public/cluster-info` ConfigMap, so a joining node can check the kubeconfig it fetched
//! anonymously. Signatures of deleted or expired tokens are removed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k1s_kubeadm_lite::discovery;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, PostParams};

use super::{expiration, is_bootstrap_secret, token_of};
use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::informer::{Delta, Store};

/// Every change funnels into this one key: the whole ConfigMap is recomputed.
const KEY: &str = "kube-public/cluster-info";

struct Signer {
    client: Client,
    config_maps: Arc<Store<ConfigMap>>,
    secrets: Arc<Store<Secret>>,
}

pub fn start(ctx: ControllerContext) {
    let config_maps = ctx.factory.informer_selected::<ConfigMap>(&format!(
        "metadata.namespace={},metadata.name={}",
        discovery::CLUSTER_INFO_NAMESPACE,
        discovery::CLUSTER_INFO_NAME
    ));
    let secrets = ctx.factory.informer::<Secret>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        config_maps.add_handler(move |d: &Delta<ConfigMap>| {
            let cm = d.object();
            if cm.metadata.namespace.as_deref() == Some(discovery::CLUSTER_INFO_NAMESPACE)
                && cm.metadata.name.as_deref() == Some(discovery::CLUSTER_INFO_NAME)
            {
                queue.add(KEY.to_string());
            }
        });
    }
    {
        let queue = queue.clone();
        secrets.add_handler(move |d: &Delta<Secret>| {
            if is_bootstrap_secret(d.object()) {
                queue.add(KEY.to_string());
            }
        });
    }
    let reconciler = Arc::new(Signer {
        client: ctx.client.clone(),
        config_maps: config_maps.store(),
        secrets: secrets.store(),
    });
    ctx.run_workers(reconciler, queue, 1);
}

/// The signatures `content` should carry, from the cached Secrets, and when the next of their
/// tokens expires (the signatures must then be recomputed).
fn signatures(
    secrets: &[Arc<Secret>],
    content: &str,
    now: jiff::Timestamp,
) -> (BTreeMap<String, String>, Option<jiff::Timestamp>) {
    let mut out = BTreeMap::new();
    let mut next = None::<jiff::Timestamp>;
    for s in secrets.iter().filter(|s| is_bootstrap_secret(s)) {
        if s.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(t) = token_of(s) else { continue };
        if !t.usages.iter().any(|u| u == "signing") {
            continue;
        }
        match expiration(s) {
            Err(_) => continue,
            Ok(Some(e)) if e <= now => continue,
            Ok(Some(e)) => next = Some(next.map_or(e, |n| n.min(e))),
            Ok(None) => {}
        }
        out.insert(
            format!("{}{}", discovery::JWS_KEY_PREFIX, t.id),
            discovery::compute_detached_signature(content, &t.id, &t.secret),
        );
    }
    (out, next)
}

impl Reconciler for Signer {
    async fn reconcile(&self, _key: &str) -> Result<Action, Error> {
        let Some(cm) = self.config_maps.get_named(
            Some(discovery::CLUSTER_INFO_NAMESPACE),
            discovery::CLUSTER_INFO_NAME,
        ) else {
            return Ok(Action::Done);
        };
        let data = cm.data.clone().unwrap_or_default();
        let Some(content) = data.get(discovery::KUBECONFIG_KEY) else {
            tracing::debug!("cluster-info has no kubeconfig to sign");
            return Ok(Action::Done);
        };
        let now = jiff::Timestamp::now();
        let (sigs, next_expiry) =
            signatures(&self.secrets.list_namespace("kube-system"), content, now);
        let mut wanted: BTreeMap<String, String> = data
            .iter()
            .filter(|(k, _)| !k.starts_with(discovery::JWS_KEY_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        wanted.extend(sigs);
        let requeue = match next_expiry {
            Some(e) => Action::RequeueAfter(
                Duration::try_from(e.duration_since(now)).unwrap_or(Duration::from_secs(1))
                    + Duration::from_secs(1),
            ),
            None => Action::Done,
        };
        if wanted == data {
            return Ok(requeue);
        }
        let mut updated = (*cm).clone();
        updated.data = Some(wanted);
        let api: Api<ConfigMap> =
            Api::namespaced(self.client.clone(), discovery::CLUSTER_INFO_NAMESPACE);
        match api
            .replace(
                discovery::CLUSTER_INFO_NAME,
                &PostParams::default(),
                &updated,
            )
            .await
        {
            Ok(_) => Ok(requeue),
            // A stale cache: the informer's next event brings the key back.
            Err(e) if is_conflict(&e) || is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration as StdDuration;

    use k1s_kubeadm_lite::token::BootstrapToken;

    use super::*;

    fn secret(token: &str, ttl: u64, usages: &[&str], now: jiff::Timestamp) -> Arc<Secret> {
        let t = BootstrapToken::new(
            token,
            StdDuration::from_secs(ttl),
            "",
            &usages.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            &[],
            now,
        )
        .expect("token");
        Arc::new(serde_json::from_value(t.to_secret()).expect("secret"))
    }

    #[test]
    fn signs_only_live_signing_tokens() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let later = now
            .checked_add(jiff::SignedDuration::from_secs(7200))
            .expect("time");
        let secrets = vec![
            secret(
                "aaaaaa.0123456789abcdef",
                3600,
                &["signing", "authentication"],
                now,
            ),
            secret("bbbbbb.0123456789abcdef", 0, &["signing"], now),
            secret("cccccc.0123456789abcdef", 3600, &["authentication"], now),
            // Made two hours ago with a one-hour TTL: expired.
            secret(
                "dddddd.0123456789abcdef",
                3600,
                &["signing"],
                now.checked_sub(jiff::SignedDuration::from_secs(7200))
                    .expect("t"),
            ),
        ];
        let (sigs, next) = signatures(&secrets, "content", now);
        let keys: Vec<&str> = sigs.keys().map(String::as_str).collect();
        assert_eq!(keys, vec!["jws-kubeconfig-aaaaaa", "jws-kubeconfig-bbbbbb"]);
        assert!(discovery::detached_signature_is_valid(
            &sigs["jws-kubeconfig-aaaaaa"],
            "content",
            "aaaaaa",
            "0123456789abcdef"
        ));
        assert!(next.is_some_and(|n| n < later));
    }
}
