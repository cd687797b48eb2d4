//! DefaultPreemption (upstream's plugins/defaultpreemption and framework/preemption): for a pod
//! no node fits, each node where preemption may help (its filter verdict was not unresolvable)
//! is dry-run with every lower-priority pod removed; if the pod then fits, pods are reprieved
//! (put back while it still fits), first those whose PodDisruptionBudget the eviction would
//! violate, then the others, most important first in each group; what stays removed are the
//! victims. Nodes are tried from a random offset until enough candidates are found (all of
//! them below 100 nodes). The candidate with the fewest PDB violations wins, then the lowest
//! highest-victim priority, the lowest priority sum, the fewest victims, and the latest start
//! of its most important victims, as upstream's pickOneNodeForPreemption.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use crate::cache::{Cache, PodInfo};
use crate::framework::{Rng, fit_error_message};
use crate::helpers::{labels_of_pod, selector_matches};
use crate::plugins::{self, Code, NamespaceLookup, Status};

pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
pub const POLICY_NEVER: &str = "not eligible due to preemptionPolicy=Never.";
pub const TERMINATING_ON_NOMINATED: &str =
    "not eligible due to a terminating pod on the nominated node.";
/// Upstream's DefaultPreemptionArgs defaults.
const MIN_CANDIDATE_NODES_PERCENTAGE: usize = 10;
const MIN_CANDIDATE_NODES_ABSOLUTE: usize = 100;

/// A node and the pods to delete there.
#[derive(Debug)]
pub struct Plan {
    pub node: String,
    /// Most important first.
    pub victims: Vec<Arc<PodInfo>>,
    /// Victims whose eviction violates a PodDisruptionBudget.
    pub pdb_violations: usize,
    /// Lower-priority pods nominated to the node: their nomination is cleared, as they may no
    /// longer fit there.
    pub clear_nominations: Vec<Arc<PodInfo>>,
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

/// Upstream's GetPodStartTime, in nanoseconds: the status' startTime, else `now` (a pod not
/// started yet counts as the newest). One `now` per attempt keeps orderings consistent.
fn start_time(p: &Pod, now: i128) -> i128 {
    p.status
        .as_ref()
        .and_then(|s| s.start_time.as_ref())
        .map_or(now, |t| t.0.as_nanosecond())
}

/// Upstream's MoreImportantPod as a sort order: higher priority first, then the earlier start.
fn importance_order(a: &PodInfo, b: &PodInfo, now: i128) -> std::cmp::Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| start_time(&a.pod, now).cmp(&start_time(&b.pod, now)))
}

/// Upstream's filterPodsWithPDBViolation: splits `pods` (order kept) into those whose eviction
/// would take a matching budget below zero and the rest. Pods the budget already lists as
/// disrupted are not charged; a budget with an empty selector matches nothing.
pub fn split_by_pdb_violation(
    pods: Vec<Arc<PodInfo>>,
    pdbs: &[Arc<PodDisruptionBudget>],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i64> = pdbs
        .iter()
        .map(|b| i64::from(b.status.as_ref().map_or(0, |s| s.disruptions_allowed)))
        .collect();
    let (mut violating, mut fine) = (Vec::new(), Vec::new());
    for p in pods {
        let labels = labels_of_pod(&p.pod);
        let mut violated = false;
        if !labels.is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if pdb.metadata.namespace.as_deref() != Some(p.namespace()) {
                    continue;
                }
                let Some(sel) = pdb.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
                    continue;
                };
                let empty = sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
                    && sel.match_expressions.as_ref().is_none_or(|e| e.is_empty());
                if empty || !selector_matches(sel, labels) {
                    continue;
                }
                let name = p.pod.metadata.name.as_deref().unwrap_or_default();
                let already = pdb
                    .status
                    .as_ref()
                    .and_then(|s| s.disrupted_pods.as_ref())
                    .is_some_and(|d| d.contains_key(name));
                if already {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(p);
        } else {
            fine.push(p);
        }
    }
    (violating, fine)
}

/// Upstream's SelectVictimsOnNode: the victims on `node` that let `pod` fit and how many of them
/// violate a budget (the cache is restored before returning).
fn select_victims(
    cache: &mut Cache,
    pod: &PodInfo,
    node: &str,
    namespaces: NamespaceLookup<'_>,
    pdbs: &[Arc<PodDisruptionBudget>],
    now: i128,
) -> Result<(Vec<Arc<PodInfo>>, usize), Status> {
    let mut potential: Vec<Arc<PodInfo>> = cache
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
    if potential.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    let mut taken = Vec::new();
    for p in &potential {
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
    potential.sort_by(|a, b| importance_order(a, b, now));
    let (violating, non_violating) = split_by_pdb_violation(potential, pdbs);
    let both = !violating.is_empty() && !non_violating.is_empty();
    let mut victims = Vec::new();
    let mut num_violating = 0;
    // Budget-violating pods are reprieved first: the fewer of them die, the better.
    for (group_violates, group) in [(true, violating), (false, non_violating)] {
        for p in group {
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
                if group_violates {
                    num_violating += 1;
                }
            }
        }
    }
    restore(cache, taken);
    if both {
        victims.sort_by(|a, b| importance_order(a, b, now));
    }
    Ok((victims, num_violating))
}

/// Upstream's podTerminatingByPreemption: being deleted after the scheduler preempted it.
fn terminating_by_preemption(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_some()
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "DisruptionTarget"))
            .is_some_and(|c| {
                c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler")
            })
}

/// Upstream's PodEligibleToPreemptOthers.
fn eligible(cache: &Cache, pod: &PodInfo, statuses: &[(String, Status)]) -> Result<(), String> {
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
    let Some(n) = nominated else {
        return Ok(());
    };
    // A nominated node that filters now rule out for good (or that is gone): preempt again.
    let unresolvable_there = statuses
        .iter()
        .find(|(name, _)| name == n)
        .is_none_or(|(_, s)| s.code == Code::UnschedulableAndUnresolvable);
    if unresolvable_there {
        return Ok(());
    }
    let terminating = cache.nodes.get(n).is_some_and(|ni| {
        ni.pods
            .iter()
            .any(|p| p.priority < pod.priority && terminating_by_preemption(&p.pod))
    });
    if terminating {
        return Err(TERMINATING_ON_NOMINATED.into());
    }
    Ok(())
}

struct Candidate {
    node: String,
    victims: Vec<Arc<PodInfo>>,
    pdb_violations: usize,
}

/// Upstream's pickOneNodeForPreemption: each criterion in turn keeps the best candidates; the
/// first left wins.
fn pick(mut candidates: Vec<Candidate>, now: i128) -> Option<Candidate> {
    type Criterion = fn(&Candidate, i128) -> i128;
    let criteria: [Criterion; 5] = [
        |c, _| -(c.pdb_violations as i128),
        |c, _| -i128::from(c.victims.first().map_or(i32::MIN, |v| v.priority)),
        // Shifted so that negative priorities still make a larger sum for more pods.
        |c, _| {
            -c.victims
                .iter()
                .map(|v| i128::from(v.priority) + i128::from(i32::MAX) + 1)
                .sum::<i128>()
        },
        |c, _| -(c.victims.len() as i128),
        // The earliest start among the highest-priority victims; later is better.
        |c, now| {
            let top = c.victims.first().map_or(i32::MIN, |v| v.priority);
            c.victims
                .iter()
                .filter(|v| v.priority == top)
                .map(|v| start_time(&v.pod, now))
                .min()
                .unwrap_or(i128::MIN)
        },
    ];
    for f in criteria {
        if candidates.len() <= 1 {
            break;
        }
        let best = candidates.iter().map(|c| f(c, now)).max()?;
        candidates.retain(|c| f(c, now) == best);
    }
    candidates.into_iter().next()
}

/// Finds a node where deleting lower-priority pods lets `pod` fit, or says why not (the message
/// after `preemption: `).
pub fn preempt(
    cache: &mut Cache,
    pod: &PodInfo,
    statuses: &[(String, Status)],
    namespaces: NamespaceLookup<'_>,
    pdbs: &[Arc<PodDisruptionBudget>],
    rng: &mut Rng,
) -> Result<Plan, String> {
    eligible(cache, pod, statuses)?;
    let now = jiff::Timestamp::now().as_nanosecond();
    let potential: Vec<&String> = statuses
        .iter()
        .filter(|(_, s)| s.code == Code::Unschedulable)
        .map(|(n, _)| n)
        .collect();
    let mut failed: Vec<(String, Status)> = Vec::new();
    let mut non_violating = Vec::new();
    let mut violating = Vec::new();
    if !potential.is_empty() {
        let n = potential.len();
        let wanted = (n * MIN_CANDIDATE_NODES_PERCENTAGE / 100)
            .max(MIN_CANDIDATE_NODES_ABSOLUTE)
            .min(n);
        let offset = rng.below(n as u64) as usize;
        for i in 0..n {
            let node = potential[(offset + i) % n];
            match select_victims(cache, pod, node, namespaces, pdbs, now) {
                Err(s) => failed.push((node.clone(), s)),
                Ok((victims, _)) if victims.is_empty() => failed.push((
                    node.clone(),
                    Status::unschedulable(format!(
                        "expected at least one victim pod on node {node:?}"
                    )),
                )),
                Ok((victims, pdb_violations)) => {
                    let c = Candidate {
                        node: node.clone(),
                        victims,
                        pdb_violations,
                    };
                    if pdb_violations == 0 {
                        non_violating.push(c);
                    } else {
                        violating.push(c);
                    }
                    if !non_violating.is_empty() && non_violating.len() + violating.len() >= wanted
                    {
                        break;
                    }
                }
            }
        }
    }
    non_violating.extend(violating);
    let Some(best) = pick(non_violating, now) else {
        // Nodes not tried (or ruled out by their filters) are "not helpful".
        let verdicts: Vec<(String, Status)> = statuses
            .iter()
            .map(|(name, _)| {
                failed
                    .iter()
                    .find(|(n, _)| n == name)
                    .cloned()
                    .unwrap_or_else(|| (name.clone(), Status::unresolvable(NOT_HELPFUL)))
            })
            .collect();
        return Err(fit_error_message(statuses.len(), &verdicts, None));
    };
    let clear_nominations = cache.nominated_below(&best.node, pod);
    Ok(Plan {
        node: best.node,
        victims: best.victims,
        pdb_violations: best.pdb_violations,
        clear_nominations,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "preemption_tests.rs"]
mod tests;
