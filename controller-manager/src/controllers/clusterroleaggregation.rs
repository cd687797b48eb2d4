//! The clusterrole-aggregation controller (upstream `pkg/controller/clusterroleaggregation`): a
//! ClusterRole with an `aggregationRule` gets the rules of every ClusterRole its selectors match,
//! in the order of those roles' names, without duplicates.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::Client;
use kube::api::{Api, PostParams};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::controllers::selector_matches;
use crate::informer::{Delta, Store};

struct Aggregation {
    client: Client,
    roles: Arc<Store<ClusterRole>>,
}

pub fn start(ctx: ControllerContext) {
    let roles = ctx.factory.informer::<ClusterRole>();
    let queue = ctx.queue();
    let store = roles.store();
    {
        let (queue, store) = (queue.clone(), store.clone());
        // Any change may feed an aggregated role: look at every one that aggregates.
        roles.add_handler(move |_: &Delta<ClusterRole>| {
            for role in store.list() {
                if role.aggregation_rule.is_some() {
                    queue.add(role.metadata.name.clone().unwrap_or_default());
                }
            }
        });
    }
    let reconciler = Arc::new(Aggregation {
        client: ctx.client.clone(),
        roles: store,
    });
    ctx.run_workers(reconciler, queue, 1);
}

impl Reconciler for Aggregation {
    async fn reconcile(&self, name: &str) -> Result<Action, Error> {
        let Some(role) = self.roles.get(name) else {
            return Ok(Action::Done);
        };
        let Some(rule) = &role.aggregation_rule else {
            return Ok(Action::Done);
        };
        let mut sources: Vec<_> = self
            .roles
            .list()
            .into_iter()
            .filter(|r| r.metadata.name.as_deref() != Some(name))
            .filter(|r| {
                rule.cluster_role_selectors
                    .iter()
                    .flatten()
                    .any(|s| selector_matches(Some(s), r.metadata.labels.as_ref()))
            })
            .collect();
        sources.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let mut rules: Vec<PolicyRule> = Vec::new();
        for source in &sources {
            for r in source.rules.iter().flatten() {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
        if role
            .rules
            .as_ref()
            .map_or(rules.is_empty(), |current| *current == rules)
        {
            return Ok(Action::Done);
        }
        let mut updated = (*role).clone();
        updated.rules = Some(rules);
        let api: Api<ClusterRole> = Api::all(self.client.clone());
        match api.replace(name, &PostParams::default(), &updated).await {
            Ok(_) => Ok(Action::Done),
            Err(e) if is_not_found(&e) => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }
}
