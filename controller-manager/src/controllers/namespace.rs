//! The namespace controller (upstream `pkg/controller/namespace`): a namespace being deleted has
//! its content deleted, for every namespaced resource discovery lists (custom resources too),
//! deletecollection where served, else one by one; objects held by finalizers are waited for;
//! the namespace's status carries upstream's deletion conditions; once nothing is left, the
//! `kubernetes` finalizer is removed through `namespaces/finalize` and the API server deletes the
//! namespace.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, NamespaceCondition, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, PartialObjectMeta};
use kube::discovery::{ApiCapabilities, Discovery, Scope, verbs};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::informer::{Delta, Store};
use crate::workqueue::{RateLimiter, WorkQueue};

/// The finalizer this controller owns.
const FINALIZER: &str = "kubernetes";
/// Upstream's estimate for content held by finalizers (the garbage collector's turn).
const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

struct NamespaceController {
    client: Client,
    namespaces: Arc<Store<Namespace>>,
}

pub fn start(ctx: ControllerContext) {
    let namespaces = ctx.factory.informer::<Namespace>();
    // Upstream's namespace rate limiter: per item 5 ms doubling to at most 60 s (deletion is
    // retried at least every minute), overall 10 qps with a burst of 100.
    let queue = WorkQueue::new(
        RateLimiter::new(Duration::from_millis(5), Duration::from_secs(60), 10.0, 100),
        Some(ctx.metrics.queue(ctx.name)),
    );
    {
        let queue = queue.clone();
        namespaces.add_handler(move |d: &Delta<Namespace>| {
            let ns = d.object();
            if !matches!(d, Delta::Deleted(_)) && ns.metadata.deletion_timestamp.is_some() {
                queue.add(ns.metadata.name.clone().unwrap_or_default());
            }
        });
    }
    let reconciler = Arc::new(NamespaceController {
        client: ctx.client.clone(),
        namespaces: namespaces.store(),
    });
    let workers = ctx.workers("namespace", 10);
    ctx.run_workers(reconciler, queue, workers);
}

/// What deleting a namespace's content found.
#[derive(Default)]
struct Outcome {
    /// Remaining objects per group resource (`pods`, `widgets.example.com`).
    remaining: BTreeMap<String, usize>,
    /// Remaining objects per finalizer.
    finalizers: BTreeMap<String, usize>,
    discovery_errors: Vec<String>,
    deletion_errors: Vec<String>,
    /// Seconds until graceful deletions (pods) should be over.
    estimate: i64,
}

impl Reconciler for NamespaceController {
    async fn reconcile(&self, name: &str) -> Result<Action, Error> {
        let Some(ns) = self.namespaces.get(name) else {
            return Ok(Action::Done);
        };
        let Some(deleted_at) = ns.metadata.deletion_timestamp.clone() else {
            return Ok(Action::Done);
        };
        let ours = ns
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.as_ref())
            .is_some_and(|f| f.iter().any(|x| x == FINALIZER));
        if !ours {
            return Ok(Action::Done);
        }
        let outcome = self.delete_all_content(name, &deleted_at).await;
        self.update_conditions(&ns, &outcome).await?;
        if !outcome.discovery_errors.is_empty() || !outcome.deletion_errors.is_empty() {
            return Err(Error::Other(format!(
                "namespace {name}: {}",
                [&outcome.discovery_errors[..], &outcome.deletion_errors[..]]
                    .concat()
                    .join("; ")
            )));
        }
        if !outcome.remaining.is_empty() {
            let estimate = if !outcome.finalizers.is_empty() {
                outcome.estimate.max(FINALIZER_ESTIMATE_SECONDS)
            } else {
                outcome.estimate
            };
            if estimate == 0 {
                // Objects without finalizers should have gone: look again soon, with backoff.
                return Err(Error::Other(format!(
                    "unexpected items still remain in namespace {name}"
                )));
            }
            // Upstream waits half the estimate (plus a second) before looking again.
            let wait = u64::try_from(estimate / 2 + 1).unwrap_or(1);
            return Ok(Action::RequeueAfter(Duration::from_secs(wait)));
        }
        self.finalize(&ns).await?;
        Ok(Action::Done)
    }
}

impl NamespaceController {
    /// Deletes everything namespaced in `namespace` and reports what is left.
    async fn delete_all_content(&self, namespace: &str, deleted_at: &Time) -> Outcome {
        let mut out = Outcome::default();
        let discovery = match Discovery::new(self.client.clone()).run_aggregated().await {
            Ok(d) => d,
            Err(e) => {
                out.discovery_errors.push(e.to_string());
                return out;
            }
        };
        let mut resources: Vec<(ApiResource, ApiCapabilities)> = discovery
            .groups()
            .flat_map(|g| g.recommended_resources())
            .filter(|(_, caps)| {
                caps.scope == Scope::Namespaced
                    && caps.supports_operation(verbs::DELETE)
                    && caps.supports_operation(verbs::LIST)
            })
            .collect();
        // OrderedNamespaceDeletion (on by default in 1.33): pods go first, and nothing else is
        // touched while any remains, so no running pod loses its ConfigMaps or Secrets.
        let is_pods = |ar: &ApiResource| ar.group.is_empty() && ar.plural == "pods";
        resources.sort_by_key(|(ar, _)| !is_pods(ar));
        for (ar, caps) in resources {
            if !is_pods(&ar) && out.remaining.contains_key("pods") {
                break;
            }
            if is_pods(&ar) {
                out.estimate = out
                    .estimate
                    .max(self.pod_grace_estimate(namespace, deleted_at).await);
            }
            if let Err(e) = self.delete_resource(namespace, &ar, &caps).await {
                out.deletion_errors
                    .push(format!("{}: {e}", group_resource(&ar)));
                continue;
            }
            let api: Api<PartialObjectMeta<DynamicObject>> =
                Api::namespaced_with(self.client.clone(), namespace, &ar);
            match api.list_metadata(&ListParams::default()).await {
                Ok(list) if !list.items.is_empty() => {
                    out.remaining.insert(group_resource(&ar), list.items.len());
                    for item in &list.items {
                        for f in item.metadata.finalizers.iter().flatten() {
                            *out.finalizers.entry(f.clone()).or_default() += 1;
                        }
                    }
                }
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => out
                    .deletion_errors
                    .push(format!("{}: {e}", group_resource(&ar))),
            }
        }
        out
    }

    async fn delete_resource(
        &self,
        namespace: &str,
        ar: &ApiResource,
        caps: &ApiCapabilities,
    ) -> Result<(), kube::Error> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), namespace, ar);
        let background = DeleteParams::background();
        if caps.supports_operation(verbs::DELETE_COLLECTION) {
            return match api
                .delete_collection(&background, &ListParams::default())
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if is_not_found(&e) => Ok(()),
                Err(e) => Err(e),
            };
        }
        let meta: Api<PartialObjectMeta<DynamicObject>> =
            Api::namespaced_with(self.client.clone(), namespace, ar);
        for item in meta.list_metadata(&ListParams::default()).await?.items {
            let name = item.metadata.name.unwrap_or_default();
            match api.delete(&name, &background).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 405 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The longest grace period of the namespace's running pods, if it has not passed since
    /// the namespace was deleted (upstream's estimateGracefulTerminationForPods).
    async fn pod_grace_estimate(&self, namespace: &str, deleted_at: &Time) -> i64 {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let Ok(pods) = api.list(&ListParams::default()).await else {
            return 0;
        };
        let estimate = pods
            .items
            .iter()
            .filter(|p| {
                !matches!(
                    p.status.as_ref().and_then(|s| s.phase.as_deref()),
                    Some("Succeeded" | "Failed")
                )
            })
            .filter_map(|p| p.spec.as_ref()?.termination_grace_period_seconds)
            .max()
            .unwrap_or(0);
        let elapsed = jiff::Timestamp::now()
            .duration_since(deleted_at.0)
            .as_secs();
        if elapsed >= estimate { 0 } else { estimate }
    }

    /// Writes upstream's five deletion conditions when they changed.
    async fn update_conditions(&self, ns: &Namespace, out: &Outcome) -> Result<(), Error> {
        let wanted = conditions(out);
        let current = ns
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let unchanged = wanted.iter().all(|w| {
            current.iter().any(|c| {
                c.type_ == w.type_
                    && c.status == w.status
                    && c.reason == w.reason
                    && c.message == w.message
            })
        });
        if unchanged {
            return Ok(());
        }
        let now = Time(jiff::Timestamp::now());
        let merged: Vec<NamespaceCondition> = wanted
            .into_iter()
            .map(|mut w| {
                // The transition time moves only when the status flips.
                let same = current
                    .iter()
                    .find(|c| c.type_ == w.type_ && c.status == w.status);
                w.last_transition_time = same
                    .and_then(|c| c.last_transition_time.clone())
                    .or_else(|| Some(now.clone()));
                w
            })
            .collect();
        // An update of namespaces/status, as upstream (its role grants update, not patch).
        let api: Api<Namespace> = Api::all(self.client.clone());
        let name = ns.metadata.name.clone().unwrap_or_default();
        let mut updated = ns.clone();
        updated
            .status
            .get_or_insert_with(Default::default)
            .conditions = Some(merged);
        match api
            .replace_status(&name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes our finalizer through `namespaces/finalize`.
    async fn finalize(&self, ns: &Namespace) -> Result<(), Error> {
        let mut updated = ns.clone();
        if let Some(spec) = updated.spec.as_mut() {
            spec.finalizers = Some(
                spec.finalizers
                    .iter()
                    .flatten()
                    .filter(|f| *f != FINALIZER)
                    .cloned()
                    .collect(),
            );
        }
        let name = ns.metadata.name.clone().unwrap_or_default();
        let body = serde_json::to_vec(&updated).map_err(|e| Error::Other(e.to_string()))?;
        let req = http::Request::put(format!("/api/v1/namespaces/{name}/finalize"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|e| Error::Other(e.to_string()))?;
        match self.client.request::<Namespace>(req).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// `pods`, or `widgets.example.com`, as upstream's GroupResource prints.
fn group_resource(ar: &ApiResource) -> String {
    if ar.group.is_empty() {
        ar.plural.clone()
    } else {
        format!("{}.{}", ar.plural, ar.group)
    }
}

fn condition(type_: &str, failed: bool, reason: &str, message: String) -> NamespaceCondition {
    NamespaceCondition {
        type_: type_.to_string(),
        status: if failed { "True" } else { "False" }.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_transition_time: None,
    }
}

/// Upstream's namespace deletion conditions, with its reasons and messages.
fn conditions(out: &Outcome) -> Vec<NamespaceCondition> {
    let listed = |m: &BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, n)| format!("{k} has {n} resource instances"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let finalizers = out
        .finalizers
        .iter()
        .map(|(f, n)| format!("{f} in {n} resource instances"))
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        if out.discovery_errors.is_empty() {
            condition(
                "NamespaceDeletionDiscoveryFailure",
                false,
                "ResourcesDiscovered",
                "All resources successfully discovered".into(),
            )
        } else {
            condition(
                "NamespaceDeletionDiscoveryFailure",
                true,
                "DiscoveryFailed",
                format!(
                    "Discovery failed for some groups: {}",
                    out.discovery_errors.join(", ")
                ),
            )
        },
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            false,
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        ),
        if out.deletion_errors.is_empty() {
            condition(
                "NamespaceDeletionContentFailure",
                false,
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization".into(),
            )
        } else {
            condition(
                "NamespaceDeletionContentFailure",
                true,
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    out.deletion_errors.len(),
                    out.deletion_errors.join(", ")
                ),
            )
        },
        if out.remaining.is_empty() {
            condition(
                "NamespaceContentRemaining",
                false,
                "ContentRemoved",
                "All content successfully removed".into(),
            )
        } else {
            condition(
                "NamespaceContentRemaining",
                true,
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", listed(&out.remaining)),
            )
        },
        if out.finalizers.is_empty() {
            condition(
                "NamespaceFinalizersRemaining",
                false,
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished".into(),
            )
        } else {
            condition(
                "NamespaceFinalizersRemaining",
                true,
                "SomeFinalizersRemain",
                format!("Some content in the namespace has finalizers remaining: {finalizers}"),
            )
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_name_what_remains_as_upstream() {
        let mut out = Outcome::default();
        out.remaining.insert("configmaps".into(), 1);
        out.remaining.insert("widgets.example.com".into(), 2);
        out.finalizers.insert("example.com/hold".into(), 1);
        let c = conditions(&out);
        let by = |t: &str| c.iter().find(|x| x.type_ == t).cloned().expect(t);
        let remaining = by("NamespaceContentRemaining");
        assert_eq!(remaining.status, "True");
        assert_eq!(remaining.reason.as_deref(), Some("SomeResourcesRemain"));
        assert_eq!(
            remaining.message.as_deref(),
            Some(
                "Some resources are remaining: configmaps has 1 resource instances, widgets.example.com has 2 resource instances"
            )
        );
        let fin = by("NamespaceFinalizersRemaining");
        assert_eq!(
            fin.message.as_deref(),
            Some(
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            )
        );
        assert_eq!(by("NamespaceDeletionContentFailure").status, "False");
        let done = conditions(&Outcome::default());
        assert!(done.iter().all(|c| c.status == "False"));
    }
}
