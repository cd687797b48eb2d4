//! DefaultPreemption, simplified (upstream's plugins/defaultpreemption and
//! framework/preemption): for a pod no node fits, each node where preemption may help (its filter
//! verdict was not unresolvable) is tried with every lower-priority pod removed; if the pod then
//! fits, the most important of those pods are put back while it still fits, and the rest are the
//! victims. The candidate with the lowest highest-victim priority, then the lowest priority sum,
//! then the fewest victims wins. PodDisruptionBudgets are not consulted.

use std::sync::Arc;

use crate::cache::{Cache, PodInfo};
use crate::framework::fit_error_message;
use crate::plugins::{self, Code, NamespaceLookup, Status};

pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
pub const POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
pub const TERMINATING_ON_NOMINATED: &str =
    "not eligible due to a terminating pod on the nominated node.";

/// A node and the pods to delete there.
#[derive(Debug)]
pub struct Plan {
    pub node: String,
    pub victims: Vec<Arc<PodInfo>>,
}

fn fits(
    cache: &Cache,
    pod: &PodInfo,
    node: &str,
    namespaces: NamespaceLookup<'_>,
) -> Result<(), Status> {
    let Some(ni) = cache.nodes.get(node) else {
        return Err(Status::unresolvable(NOT_HELPFUL));
    };
    let state = plugins::prefilter(cache, pod, namespaces);
    let reserved = cache.reserved_for(node, pod);
    plugins::run_filters(&state, pod, ni, reserved.as_ref())
}

/// Victims on `node` that let `pod` fit (the cache is restored before returning).
fn select_victims(
    cache: &mut Cache,
    pod: &PodInfo,
    node: &str,
    namespaces: NamespaceLookup<'_>,
) -> Result<Vec<Arc<PodInfo>>, Status> {
    let mut lower: Vec<Arc<PodInfo>> = cache
        .nodes
        .get(node)
        .map(|ni| {
            ni.pods
                .iter()
                .filter(|p| p.priority < pod.priority)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if lower.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    let mut taken = Vec::new();
    for p in &lower {
        if let Some(t) = cache.take_pod(&p.key) {
            taken.push(t);
        }
    }
    let restore = |cache: &mut Cache, taken: Vec<(Arc<PodInfo>, String, bool)>| {
        for (p, n, assumed) in taken {
            cache.put_back(p, &n, assumed);
        }
    };
    if let Err(s) = fits(cache, pod, node, namespaces) {
        restore(cache, taken);
        return Err(s);
    }
    // Most important first: they are the ones to spare.
    lower.sort_by(|a, b| b.priority.cmp(&a.priority));
    let mut victims = Vec::new();
    for p in lower {
        let Some(i) = taken.iter().position(|(t, _, _)| t.key == p.key) else {
            continue;
        };
        let (info, n, assumed) = taken.swap_remove(i);
        cache.put_back(info.clone(), &n, assumed);
        if fits(cache, pod, node, namespaces).is_err() {
            if let Some(t) = cache.take_pod(&info.key) {
                taken.push(t);
            }
            victims.push(info);
        }
    }
    restore(cache, taken);
    Ok(victims)
}

/// Finds a node where deleting lower-priority pods lets `pod` fit, or says why not (the message
/// after `preemption: `).
pub fn preempt(
    cache: &mut Cache,
    pod: &PodInfo,
    statuses: &[(String, Status)],
    namespaces: NamespaceLookup<'_>,
) -> Result<Plan, String> {
    let spec = pod.pod.spec.as_ref();
    if spec.and_then(|s| s.preemption_policy.as_deref()) == Some("Never") {
        return Err(POLICY_NEVER.into());
    }
    let nominated = pod
        .pod
        .status
        .as_ref()
        .and_then(|s| s.nominated_node_name.as_deref())
        .filter(|n| !n.is_empty());
    if let Some(n) = nominated {
        let unresolvable_there = statuses
            .iter()
            .any(|(name, s)| name == n && s.code == Code::UnschedulableAndUnresolvable);
        let terminating = cache.nodes.get(n).is_some_and(|ni| {
            ni.pods
                .iter()
                .any(|p| p.priority < pod.priority && p.pod.metadata.deletion_timestamp.is_some())
        });
        if !unresolvable_there && terminating {
            return Err(TERMINATING_ON_NOMINATED.into());
        }
    }
    let mut verdicts = Vec::new();
    let mut best: Option<(Plan, (i32, i64, usize))> = None;
    for (node, status) in statuses {
        if status.code == Code::UnschedulableAndUnresolvable {
            verdicts.push((node.clone(), Status::unresolvable(NOT_HELPFUL)));
            continue;
        }
        match select_victims(cache, pod, node, namespaces) {
            Err(s) => verdicts.push((node.clone(), s)),
            Ok(victims) => {
                let rank = (
                    victims.iter().map(|v| v.priority).max().unwrap_or(i32::MIN),
                    victims.iter().map(|v| i64::from(v.priority)).sum::<i64>(),
                    victims.len(),
                );
                if best.as_ref().is_none_or(|(_, r)| rank < *r) {
                    best = Some((
                        Plan {
                            node: node.clone(),
                            victims,
                        },
                        rank,
                    ));
                }
            }
        }
    }
    match best {
        Some((plan, _)) => Ok(plan),
        None => Err(fit_error_message(statuses.len(), &verdicts, None)),
    }
}
