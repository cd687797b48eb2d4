//! The legacy-service-account-token-cleaner (upstream `pkg/controller/serviceaccount/
//! legacy_serviceaccount_token_cleaner.go`), once per sync interval: an auto-generated token
//! Secret (listed in its ServiceAccount's `secrets`) that no pod mounts and nobody used for
//! `--legacy-service-account-token-clean-up-period` is labelled
//! `kubernetes.io/legacy-token-invalid-since` (the API server then refuses the token), and deleted
//! once that label is a whole period old. Nothing happens before the API server has tracked
//! token use for a whole period (the `since` of its tracking ConfigMap).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::json;

use super::tokens::{SA_NAME_KEY, SA_UID_KEY, TOKEN_TYPE, annotation};
use crate::ControllerContext;
use crate::controller::{Periodic, is_conflict, is_not_found};
use crate::informer::Store;

/// Upstream's LastUsedLabelKey and InvalidSinceLabelKey.
const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";
/// The API server's tracking ConfigMap in kube-system (upstream's legacytokentracking).
const TRACKING_CONFIGMAP: &str = "kube-apiserver-legacy-service-account-token-tracking";
/// How often the tokens are evaluated when no interval is configured.
const SYNC_INTERVAL: Duration = Duration::from_secs(24 * 3600);

struct Cleaner {
    client: Client,
    period: SignedDuration,
    secrets: Arc<Store<Secret>>,
    accounts: Arc<Store<ServiceAccount>>,
    pods: Arc<Store<Pod>>,
}

pub fn start(ctx: ControllerContext) {
    let Ok(period) = SignedDuration::try_from(ctx.options.legacy_token_clean_up_period) else {
        tracing::error!("legacy-service-account-token-cleaner: the clean-up period is too long");
        return;
    };
    let cleaner = Cleaner {
        client: ctx.client.clone(),
        period,
        secrets: ctx.factory.informer::<Secret>().store(),
        accounts: ctx.factory.informer::<ServiceAccount>().store(),
        pods: ctx.factory.informer::<Pod>().store(),
    };
    let interval = ctx
        .options
        .legacy_token_clean_up_sync_interval
        .unwrap_or(SYNC_INTERVAL);
    ctx.run_every(interval, cleaner);
}

impl Periodic for Cleaner {
    async fn pass(&mut self) {
        self.evaluate(Timestamp::now()).await;
    }
}

fn day(t: Timestamp) -> String {
    t.strftime("%Y-%m-%d").to_string()
}

fn parse_day(s: &str) -> Option<Date> {
    Date::strptime("%Y-%m-%d", s).ok()
}

fn label<'a>(secret: &'a Secret, key: &str) -> Option<&'a str> {
    secret
        .metadata
        .labels
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The Secrets a pod refers to (upstream's VisitPodSecretNames): pull secrets, env and envFrom
/// of every container, and the secret references of its volumes.
fn secret_names(pod: &Pod, out: &mut HashSet<String>) {
    let Ok(spec) = serde_json::to_value(&pod.spec) else {
        return;
    };
    k1s_apimachinery::pod_refs::visit_secret_names(&spec, |name| {
        out.insert(name.to_string());
    });
}

impl Cleaner {
    /// The start of the first whole day of tracking (the day after `since`, at 00:00 UTC).
    async fn tracked_since(&self) -> Result<Timestamp, String> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), "kube-system");
        let cm = api
            .get(TRACKING_CONFIGMAP)
            .await
            .map_err(|e| format!("getting kube-system/{TRACKING_CONFIGMAP}: {e}"))?;
        let since = cm
            .data
            .as_ref()
            .and_then(|d| d.get("since"))
            .ok_or("the tracking ConfigMap has no since")?;
        let date = parse_day(since).ok_or_else(|| format!("unreadable since {since:?}"))?;
        date.tomorrow()
            .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC))
            .map(|z| z.timestamp())
            .map_err(|e| e.to_string())
    }

    async fn evaluate(&self, now: Timestamp) {
        let tracked_since = match self.tracked_since().await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "legacy token clean-up skipped");
                return;
            }
        };
        let Ok(preserve_created_after) = now.checked_sub(self.period) else {
            return;
        };
        if tracked_since > preserve_created_after {
            // Not tracked for a whole period yet.
            return;
        }
        let preserve_used_after = day(preserve_created_after);
        let mut mounted: HashMap<String, HashSet<String>> = HashMap::new();
        for secret in self.secrets.list() {
            if secret.type_.as_deref() != Some(TOKEN_TYPE)
                || secret.metadata.deletion_timestamp.is_some()
                || secret
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .is_none_or(|t| t.0 >= preserve_created_after)
            {
                continue;
            }
            if let Some(last_used) = label(&secret, LAST_USED_LABEL) {
                // Unreadable: cannot tell; recent: still in use.
                if parse_day(last_used).is_none() || last_used >= preserve_used_after.as_str() {
                    continue;
                }
            }
            let namespace = secret.metadata.namespace.clone().unwrap_or_default();
            let name = secret.metadata.name.clone().unwrap_or_default();
            if !self.is_auto_generated(&secret, &namespace, &name) {
                continue;
            }
            let used = mounted.entry(namespace.clone()).or_insert_with(|| {
                let mut names = HashSet::new();
                for pod in self.pods.list() {
                    if pod.metadata.namespace.as_deref() == Some(namespace.as_str()) {
                        secret_names(&pod, &mut names);
                    }
                }
                names
            });
            if used.contains(&name) {
                continue;
            }
            let api: Api<Secret> = Api::namespaced(self.client.clone(), &namespace);
            match label(&secret, INVALID_SINCE_LABEL).filter(|s| parse_day(s).is_some()) {
                None => {
                    let today = day(now);
                    tracing::info!(secret = %format!("{namespace}/{name}"), invalid_since = %today, "marking an unused auto-generated service account token invalid");
                    // The uid makes the patch apply to this Secret only.
                    let patch = json!({ "metadata": {
                        "uid": secret.metadata.uid,
                        "labels": { INVALID_SINCE_LABEL: today },
                    }});
                    if let Err(e) = api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        tracing::warn!(secret = %name, error = %e, "labelling a legacy token invalid failed");
                    }
                }
                Some(since) if since >= preserve_used_after.as_str() => {}
                Some(_) => {
                    tracing::info!(secret = %format!("{namespace}/{name}"), "deleting an auto-generated service account token invalid for a whole period");
                    let params = DeleteParams {
                        preconditions: Some(Preconditions {
                            uid: None,
                            resource_version: secret.metadata.resource_version.clone(),
                        }),
                        ..Default::default()
                    };
                    if let Err(e) = api.delete(&name, &params).await
                        && !is_conflict(&e)
                        && !is_not_found(&e)
                    {
                        tracing::warn!(secret = %name, error = %e, "deleting a legacy token failed");
                    }
                }
            }
        }
    }

    /// Upstream's test for an auto-generated token: its ServiceAccount (same UID, when the
    /// Secret names one) lists it in `secrets`.
    fn is_auto_generated(&self, secret: &Secret, namespace: &str, name: &str) -> bool {
        let account = annotation(secret, SA_NAME_KEY);
        if account.is_empty() {
            return false;
        }
        let Some(sa) = self.accounts.get(&format!("{namespace}/{account}")) else {
            return false;
        };
        let uid = annotation(secret, SA_UID_KEY);
        (uid.is_empty() || sa.metadata.uid.as_deref() == Some(uid))
            && sa
                .secrets
                .iter()
                .flatten()
                .any(|r| r.name.as_deref() == Some(name))
    }
}
