//! The resourcequota controller (upstream `pkg/controller/resourcequota`): keeps every
//! ResourceQuota's `status.hard` equal to `spec.hard` and `status.used` equal to what its
//! namespace holds, for the resources named in `hard` (scopes and scope selectors honoured).
//!
//! As upstream's quota monitor, it follows every quotable resource (pods, services and claims
//! through the shared typed informers, everything else discovery lists through metadata-only
//! informers, rediscovered every 30 s) and recalculates the quotas that track a resource when one
//! of its objects goes away or changes in a way that changes its usage (a pod reaching a
//! terminal phase, a service changing type, a claim's storage); creations are charged by the
//! admission plugin, so they need no recalculation. Every quota is recalculated in full every
//! `--resource-quota-sync-period` (5 minutes). Status is written only when it changed.
//!
//! The arithmetic is `k1s_apimachinery::quota`, the same the admission plugin charges with.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k1s_apimachinery::quota::{self as arith, ResourceList};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, Pod, ResourceQuota, ResourceQuotaStatus, Service,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, PartialObjectMeta};
use kube::discovery::{Discovery, Scope, verbs};
use kube::{Client, Resource};
use serde_json::Value;

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict};
use crate::informer::{Delta, Informer, MetaInformer, Store, key_of};
use crate::workqueue::WorkQueue;

/// Upstream's `--resource-quota-sync-period` default.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(300);
/// How often the set of followed resources is refreshed from discovery (upstream: 30 s).
const REDISCOVERY: Duration = Duration::from_secs(30);

/// Where the objects of one resource are read from.
#[derive(Clone)]
enum Source {
    Pods(Arc<Store<Pod>>),
    Services(Arc<Store<Service>>),
    Claims(Arc<Store<PersistentVolumeClaim>>),
    Quotas(Arc<Store<ResourceQuota>>),
    Meta(Arc<MetaInformer>),
}

/// `(group, resource)` -> its source.
type Sources = Arc<RwLock<BTreeMap<(String, String), Source>>>;

struct QuotaController {
    client: Client,
    quotas: Arc<Store<ResourceQuota>>,
    sources: Sources,
}

fn json<T: serde::Serialize>(obj: &T) -> Value {
    serde_json::to_value(obj).unwrap_or(Value::Null)
}

/// A typed resource list as quantities (unparsable entries skipped, as validation reports them).
fn list_of(map: Option<&BTreeMap<String, ApiQuantity>>) -> ResourceList {
    map.into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            Some((
                k.clone(),
                k1s_apimachinery::quantity::Quantity::parse(&v.0)?,
            ))
        })
        .collect()
}

fn hard_of(q: &ResourceQuota) -> ResourceList {
    list_of(q.spec.as_ref().and_then(|s| s.hard.as_ref()))
}

/// The resource names a quota tracks: `spec.hard`, and `status.hard` until it catches up.
fn tracked_names(q: &ResourceQuota) -> Vec<String> {
    let mut names: Vec<String> = hard_of(q).into_keys().collect();
    for k in list_of(q.status.as_ref().and_then(|s| s.hard.as_ref())).into_keys() {
        if !names.contains(&k) {
            names.push(k);
        }
    }
    names
}

/// Whether a quota in `namespace` tracks anything of `group`/`resource`, and so must be
/// recalculated when one of its objects goes away (upstream's replenishQuota).
fn replenish(
    quotas: &Store<ResourceQuota>,
    queue: &WorkQueue,
    group: &str,
    resource: &str,
    namespace: &str,
) {
    for q in quotas.list_namespace(namespace) {
        if tracked_names(&q)
            .iter()
            .any(|n| arith::covers(group, resource, n))
        {
            queue.add(key_of(q.as_ref()));
        }
    }
}

/// Follows a typed resource whose usage depends on its content: deletions, and updates that
/// change the usage, recalculate the namespace's quotas.
fn follow_typed<K>(
    informer: &Arc<Informer<K>>,
    quotas: &Arc<Store<ResourceQuota>>,
    queue: &WorkQueue,
    group: &'static str,
    resource: &'static str,
) where
    K: Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    K: Send + Sync + 'static,
{
    let (quotas, queue) = (quotas.clone(), queue.clone());
    informer.add_handler(move |d: &Delta<K>| {
        let ns = d.object().meta().namespace.clone().unwrap_or_default();
        // Cheap checks first: most namespaces have no quota.
        if ns.is_empty() || quotas.list_namespace(&ns).is_empty() {
            return;
        }
        let matters = match d {
            Delta::Added(_) => false,
            Delta::Deleted(_) => true,
            Delta::Updated { old, new } => {
                if Arc::ptr_eq(old, new) {
                    false
                } else {
                    let (o, n) = (json(old.as_ref()), json(new.as_ref()));
                    // A pod moving between the Terminating scopes is recounted too.
                    let rescoped = resource == "pods"
                        && arith::is_terminating(&o) != arith::is_terminating(&n);
                    rescoped
                        || arith::usage(group, resource, &o) != arith::usage(group, resource, &n)
                }
            }
        };
        if matters {
            replenish(&quotas, &queue, group, resource, &ns);
        }
    });
}

/// Follows a resource known by its metadata only: deletions recalculate (an object being
/// deleted counts until it is gone, as upstream).
fn follow_meta(
    informer: &Arc<MetaInformer>,
    quotas: &Arc<Store<ResourceQuota>>,
    queue: &WorkQueue,
    group: String,
    resource: String,
) {
    let (quotas, queue) = (quotas.clone(), queue.clone());
    informer.add_handler(move |d: &Delta<PartialObjectMeta<DynamicObject>>| {
        let Some(ns) = d.object().metadata.namespace.as_deref() else {
            return;
        };
        if matches!(d, Delta::Deleted(_)) {
            replenish(&quotas, &queue, &group, &resource, ns);
        }
    });
}

pub fn start(ctx: ControllerContext) {
    let queue = ctx.queue();
    let quota_informer = ctx.factory.informer::<ResourceQuota>();
    let quotas = quota_informer.store();
    let pods = ctx.factory.informer::<Pod>();
    let services = ctx.factory.informer::<Service>();
    let claims = ctx.factory.informer::<PersistentVolumeClaim>();
    {
        let queue = queue.clone();
        let store = quotas.clone();
        quota_informer.add_handler(move |d: &Delta<ResourceQuota>| {
            let q = d.object();
            let ns = q.metadata.namespace.clone().unwrap_or_default();
            match d {
                Delta::Added(_) => queue.add(key_of(q.as_ref())),
                // Only a change of intent matters: status changes are this controller's own
                // (or the admission plugin's charges), as upstream.
                Delta::Updated { old, new } => {
                    let status_hard = list_of(new.status.as_ref().and_then(|s| s.hard.as_ref()));
                    if hard_of(old) != hard_of(new)
                        || hard_of(new) != status_hard
                        || old.spec.as_ref().map(|s| (&s.scopes, &s.scope_selector))
                            != new.spec.as_ref().map(|s| (&s.scopes, &s.scope_selector))
                    {
                        queue.add(key_of(new.as_ref()));
                    }
                }
                // Quotas counting `resourcequotas` see one go.
                Delta::Deleted(_) => replenish(&store, &queue, "", "resourcequotas", &ns),
            }
        });
    }
    follow_typed(&pods, &quotas, &queue, "", "pods");
    follow_typed(&services, &quotas, &queue, "", "services");
    follow_typed(&claims, &quotas, &queue, "", "persistentvolumeclaims");
    let mut typed = BTreeMap::new();
    typed.insert(("".into(), "pods".into()), Source::Pods(pods.store()));
    typed.insert(
        ("".into(), "services".into()),
        Source::Services(services.store()),
    );
    typed.insert(
        ("".into(), "persistentvolumeclaims".into()),
        Source::Claims(claims.store()),
    );
    typed.insert(
        ("".into(), "resourcequotas".into()),
        Source::Quotas(quotas.clone()),
    );
    let sources: Sources = Arc::new(RwLock::new(typed));
    let reconciler = Arc::new(QuotaController {
        client: ctx.client.clone(),
        quotas: quotas.clone(),
        sources: sources.clone(),
    });
    let workers = ctx.workers("resource-quota", 5);
    let period = ctx
        .options
        .resource_quota_sync_period
        .unwrap_or(DEFAULT_SYNC_PERIOD);
    // The full recalculation of every quota (upstream's enqueueAll).
    {
        let (queue, quotas, mut shutdown) = (queue.clone(), quotas.clone(), ctx.shutdown.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = shutdown.wait_for(|s| *s) => return,
                    _ = tick.tick() => enqueue_all(&quotas, &queue),
                }
            }
        });
    }
    tokio::spawn(discover_loop(
        ctx, sources, quotas, queue, reconciler, workers,
    ));
}

fn enqueue_all(quotas: &Store<ResourceQuota>, queue: &WorkQueue) {
    for key in quotas.keys() {
        queue.add(key);
    }
}

/// Follows every quotable resource discovery lists; starts the workers after the first round.
async fn discover_loop(
    ctx: ControllerContext,
    sources: Sources,
    quotas: Arc<Store<ResourceQuota>>,
    queue: WorkQueue,
    reconciler: Arc<QuotaController>,
    workers: usize,
) {
    let mut shutdown = ctx.shutdown.clone();
    let mut started = false;
    let mut watched: HashSet<(String, String)> = HashSet::new();
    loop {
        let discovered = tokio::time::timeout(
            Duration::from_secs(10),
            Discovery::new(ctx.client.clone()).run_aggregated(),
        )
        .await;
        match discovered {
            Ok(Ok(discovery)) => {
                let mut added = false;
                for (ar, caps) in discovery.groups().flat_map(|g| g.recommended_resources()) {
                    // Upstream's GetQuotableResources: namespaced, create/list/watch/delete.
                    let quotable = caps.scope == Scope::Namespaced
                        && [verbs::CREATE, verbs::LIST, verbs::WATCH, verbs::DELETE]
                            .iter()
                            .all(|v| caps.supports_operation(v))
                        && !arith::ignored(&ar.group, &ar.plural);
                    let id = (ar.group.clone(), ar.plural.clone());
                    if !quotable || watched.contains(&id) {
                        continue;
                    }
                    watched.insert(id.clone());
                    let typed = sources
                        .read()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .contains_key(&id);
                    if !typed {
                        add_meta_source(&ctx, &sources, &quotas, &queue, ar);
                        added = true;
                    }
                }
                ctx.factory.start();
                if !started {
                    started = true;
                    ctx.run_workers(reconciler.clone(), queue.clone(), workers);
                } else if added {
                    // Newly served resources (a CRD) may be named by quotas already.
                    enqueue_all(&quotas, &queue);
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "resourcequota: discovery failed"),
            Err(_) => tracing::warn!("resourcequota: discovery timed out after 10 s"),
        }
        let wait = if started {
            REDISCOVERY
        } else {
            Duration::from_secs(1)
        };
        tokio::select! {
            _ = shutdown.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

fn add_meta_source(
    ctx: &ControllerContext,
    sources: &Sources,
    quotas: &Arc<Store<ResourceQuota>>,
    queue: &WorkQueue,
    ar: ApiResource,
) {
    let informer = ctx.factory.metadata_informer(&ar);
    follow_meta(
        &informer,
        quotas,
        queue,
        ar.group.clone(),
        ar.plural.clone(),
    );
    sources
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert((ar.group, ar.plural), Source::Meta(informer));
}

impl Source {
    /// The summed usage of the namespace's objects that count and match the quota's scopes;
    /// `None` while the source's cache has not filled yet.
    fn usage(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
        scopes: &[arith::ScopeRequirement],
    ) -> Option<ResourceList> {
        let mut total = ResourceList::new();
        let mut add_json = |v: Value| {
            if arith::requirements_match(group, resource, scopes, &v) {
                arith::add_into(&mut total, &arith::usage(group, resource, &v));
            }
        };
        match self {
            Source::Pods(s) => s
                .list_namespace(namespace)
                .iter()
                .for_each(|o| add_json(json(o.as_ref()))),
            Source::Services(s) => s
                .list_namespace(namespace)
                .iter()
                .for_each(|o| add_json(json(o.as_ref()))),
            Source::Claims(s) => s
                .list_namespace(namespace)
                .iter()
                .for_each(|o| add_json(json(o.as_ref()))),
            Source::Quotas(s) => s
                .list_namespace(namespace)
                .iter()
                .for_each(|o| add_json(json(o.as_ref()))),
            Source::Meta(informer) => {
                if !informer.has_synced() {
                    return None;
                }
                // Only counts: the content is not needed (nor scoped: scopes select pods only).
                let one = arith::usage(group, resource, &Value::Null);
                if arith::requirements_match(group, resource, scopes, &Value::Null) {
                    for _ in informer.store().list_namespace(namespace) {
                        arith::add_into(&mut total, &one);
                    }
                }
            }
        }
        Some(total)
    }
}

/// What `status.used` should be: the previous observation, overwritten by what was counted for
/// every tracked resource some source covers, restricted to the names in `hard` (upstream's
/// syncResourceQuota with CalculateUsage).
fn calculate_used(
    previous: &ResourceList,
    hard: &ResourceList,
    counted: &[((String, String), ResourceList)],
) -> ResourceList {
    let names: Vec<String> = hard.keys().cloned().collect();
    let mut used: ResourceList = previous
        .iter()
        .filter(|(k, _)| hard.contains_key(*k))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    for ((group, resource), total) in counted {
        let matched: Vec<String> = names
            .iter()
            .filter(|n| arith::covers(group, resource, n))
            .cloned()
            .collect();
        used.extend(arith::mask_with_zero(total, &matched));
    }
    used
}

fn to_api(list: &ResourceList) -> BTreeMap<String, ApiQuantity> {
    list.iter()
        .map(|(k, v)| (k.clone(), ApiQuantity(v.to_string())))
        .collect()
}

impl Reconciler for QuotaController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let Some(quota) = self.quotas.get(key) else {
            return Ok(Action::Done);
        };
        let namespace = quota.metadata.namespace.clone().unwrap_or_default();
        let name = quota.metadata.name.clone().unwrap_or_default();
        let hard = hard_of(&quota);
        let scopes = arith::scope_requirements(&json(quota.as_ref()));
        let sources: Vec<((String, String), Source)> = self
            .sources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|((g, r), _)| hard.keys().any(|n| arith::covers(g, r, n)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut counted = Vec::new();
        for ((group, resource), source) in sources {
            let Some(total) = source.usage(&group, &resource, &namespace, &scopes) else {
                return Err(Error::Other(format!(
                    "the cache of {resource}.{group} has not synced yet"
                )));
            };
            counted.push(((group, resource), total));
        }
        let status = quota.status.clone().unwrap_or_default();
        let previous = list_of(status.used.as_ref());
        let used = calculate_used(&previous, &hard, &counted);
        let status_hard = list_of(status.hard.as_ref());
        if status.hard.is_some() && status.used.is_some() && status_hard == hard && previous == used
        {
            return Ok(Action::Done);
        }
        let mut updated = (*quota).clone();
        updated.status = Some(ResourceQuotaStatus {
            hard: Some(to_api(&hard)),
            used: Some(to_api(&used)),
        });
        let api: Api<ResourceQuota> = Api::namespaced(self.client.clone(), &namespace);
        match api
            .replace_status(&name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(Action::Done),
            // A charge by the admission plugin moved it on: count again from the fresh object.
            Err(e) if is_conflict(&e) => Err(e.into()),
            Err(e) if crate::controller::is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k1s_apimachinery::quantity::Quantity;

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
            .collect()
    }

    #[test]
    fn used_follows_hard_and_what_was_counted() {
        let hard = list(&[
            ("pods", "10"),
            ("requests.cpu", "4"),
            ("count/widgets.example.com", "3"),
            ("example.com/unknown", "1"),
        ]);
        // An earlier observation of something no source covers is kept; names no longer in
        // hard are dropped; covered names not seen are zero.
        let previous = list(&[
            ("example.com/unknown", "1"),
            ("secrets", "4"),
            ("pods", "7"),
        ]);
        let counted = vec![
            (
                ("".to_string(), "pods".to_string()),
                list(&[("pods", "2"), ("count/pods", "3")]),
            ),
            (
                ("example.com".to_string(), "widgets".to_string()),
                list(&[("count/widgets.example.com", "2")]),
            ),
        ];
        assert_eq!(
            calculate_used(&previous, &hard, &counted),
            list(&[
                ("pods", "2"),
                ("requests.cpu", "0"),
                ("count/widgets.example.com", "2"),
                ("example.com/unknown", "1"),
            ])
        );
    }

    #[test]
    fn tracked_names_include_status_until_it_catches_up() {
        let q: ResourceQuota = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "q", "namespace": "ns"},
            "spec": {"hard": {"pods": "1"}},
            "status": {"hard": {"secrets": "1"}},
        }))
        .unwrap();
        assert_eq!(
            tracked_names(&q),
            vec!["pods".to_string(), "secrets".to_string()]
        );
    }
}
