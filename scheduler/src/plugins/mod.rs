//! The default profile's filter and score plugins (upstream's framework/plugins), in upstream's
//! order: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
//! NodeResourcesFit, PodTopologySpread, InterPodAffinity; a node's first failing filter is its
//! verdict. VolumeBinding's PreFilter (`volumebinding`) runs before them, for the whole pod.
//! Scores are normalised to 0..100 per plugin and weighted as upstream's default profile.

pub mod interpodaffinity;
pub mod podtopologyspread;
pub mod volumebinding;

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::cache::{Cache, NodeInfo, PodInfo};
use crate::helpers::{
    first_untolerated, labels_of_node, node_selector_matches, required_node_affinity_matches,
    taints_of, tolerates, tolerations_of,
};
use crate::resources::Resources;

pub const MAX_NODE_SCORE: i64 = 100;

pub const ERR_NODE_NAME: &str = "node(s) didn't match the requested node name";
pub const ERR_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const ERR_NODE_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_NODE_PORTS: &str = "node(s) didn't have free ports for the requested pod ports";
pub const ERR_TOO_MANY_PODS: &str = "Too many pods";

/// Upstream's default-profile score weights.
pub const WEIGHT_TAINT_TOLERATION: i64 = 3;
pub const WEIGHT_NODE_AFFINITY: i64 = 2;
pub const WEIGHT_FIT: i64 = 1;
pub const WEIGHT_BALANCED: i64 = 1;
pub const WEIGHT_SPREAD: i64 = 2;
pub const WEIGHT_INTER_POD: i64 = 2;

/// How a filter rejected a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// Preemption may help.
    Unschedulable,
    /// Preemption cannot help.
    UnschedulableAndUnresolvable,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    pub reasons: Vec<Cow<'static, str>>,
}

impl Status {
    pub fn new(code: Code, reason: impl Into<Cow<'static, str>>) -> Self {
        Status {
            code,
            reasons: vec![reason.into()],
        }
    }
    pub fn unresolvable(reason: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::UnschedulableAndUnresolvable, reason)
    }
    pub fn unschedulable(reason: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Code::Unschedulable, reason)
    }
}

pub type Verdict = Result<(), Status>;

/// Namespace labels, for affinity terms with a namespaceSelector.
pub type NamespaceLookup<'a> = &'a dyn Fn(&str) -> Option<std::sync::Arc<Namespace>>;

/// What the cluster-wide plugins precompute once per attempt (upstream's PreFilter state).
#[derive(Debug, Default)]
pub struct CycleState {
    pub spread: Option<podtopologyspread::FilterState>,
    pub affinity: Option<interpodaffinity::FilterState>,
}

pub fn prefilter(cache: &Cache, pod: &PodInfo, namespaces: NamespaceLookup<'_>) -> CycleState {
    CycleState {
        spread: podtopologyspread::prefilter(cache, &pod.pod),
        affinity: interpodaffinity::prefilter(cache, &pod.pod, namespaces),
    }
}

/// Every filter in order. `reserved`: room held on this node for nominated pods of at least the
/// pod's priority (upstream runs the filters with nominated pods added).
pub fn run_filters(
    state: &CycleState,
    pod: &PodInfo,
    ni: &NodeInfo,
    reserved: Option<&Resources>,
) -> Verdict {
    let Some(node) = ni.node.as_deref() else {
        return Err(Status::unresolvable("node not found"));
    };
    node_unschedulable(&pod.pod, node)?;
    node_name(&pod.pod, node)?;
    taint_toleration(&pod.pod, node)?;
    node_affinity(&pod.pod, node)?;
    node_ports(pod, ni)?;
    fit(pod, ni, reserved)?;
    if let Some(s) = &state.spread {
        podtopologyspread::filter(s, node)?;
    }
    if let Some(s) = &state.affinity {
        interpodaffinity::filter(s, node)?;
    }
    Ok(())
}

/// NodeUnschedulable: a cordoned node takes only pods tolerating its unschedulable taint.
pub fn node_unschedulable(pod: &Pod, node: &Node) -> Verdict {
    if !node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        return Ok(());
    }
    let taint = k8s_openapi::api::core::v1::Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        effect: "NoSchedule".into(),
        ..Default::default()
    };
    if tolerations_of(pod).iter().any(|t| tolerates(t, &taint)) {
        Ok(())
    } else {
        Err(Status::unresolvable(ERR_UNSCHEDULABLE))
    }
}

/// NodeName: a pod naming a node fits only there.
pub fn node_name(pod: &Pod, node: &Node) -> Verdict {
    match pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
    {
        Some(want) if Some(want) != node.metadata.name.as_deref() => {
            Err(Status::unresolvable(ERR_NODE_NAME))
        }
        _ => Ok(()),
    }
}

/// TaintToleration: NoSchedule and NoExecute taints must be tolerated.
pub fn taint_toleration(pod: &Pod, node: &Node) -> Verdict {
    match first_untolerated(
        taints_of(node),
        tolerations_of(pod),
        &["NoSchedule", "NoExecute"],
    ) {
        Some(t) => Err(Status::unresolvable(format!(
            "node(s) had untolerated taint {{{}: {}}}",
            t.key,
            t.value.as_deref().unwrap_or_default()
        ))),
        None => Ok(()),
    }
}

/// NodeAffinity: nodeSelector and required node affinity.
pub fn node_affinity(pod: &Pod, node: &Node) -> Verdict {
    if required_node_affinity_matches(pod, node) {
        Ok(())
    } else {
        Err(Status::unresolvable(ERR_NODE_AFFINITY))
    }
}

/// NodePorts: no host port already taken on the node.
pub fn node_ports(pod: &PodInfo, ni: &NodeInfo) -> Verdict {
    if pod.ports.is_empty() {
        return Ok(());
    }
    let taken = ni
        .pods
        .iter()
        .flat_map(|p| p.ports.iter())
        .any(|used| pod.ports.iter().any(|want| want.conflicts(used)));
    if taken {
        Err(Status::unschedulable(ERR_NODE_PORTS))
    } else {
        Ok(())
    }
}

/// NodeResourcesFit: pod count, then each requested resource against what is left.
pub fn fit(pod: &PodInfo, ni: &NodeInfo, reserved: Option<&Resources>) -> Verdict {
    let mut reasons: Vec<Cow<'static, str>> = Vec::new();
    let extra_pods = reserved.map_or(0, |r| r.pods);
    let pods = i64::try_from(ni.pods.len()).unwrap_or(i64::MAX) + extra_pods;
    if pods + 1 > ni.allocatable.pods {
        reasons.push(ERR_TOO_MANY_PODS.into());
    }
    let want = &pod.requests;
    if !want.is_zero() {
        let alloc = &ni.allocatable;
        let used = |f: fn(&Resources) -> i64| f(&ni.requested) + reserved.map_or(0, f);
        if want.milli_cpu > 0 && want.milli_cpu > alloc.milli_cpu - used(|r| r.milli_cpu) {
            reasons.push("Insufficient cpu".into());
        }
        if want.memory > 0 && want.memory > alloc.memory - used(|r| r.memory) {
            reasons.push("Insufficient memory".into());
        }
        if want.ephemeral_storage > 0
            && want.ephemeral_storage > alloc.ephemeral_storage - used(|r| r.ephemeral_storage)
        {
            reasons.push("Insufficient ephemeral-storage".into());
        }
        for (name, q) in &want.scalar {
            if *q == 0 {
                continue;
            }
            let have = alloc.scalar.get(name).copied().unwrap_or(0);
            let used = ni.requested.scalar.get(name).copied().unwrap_or(0)
                + reserved
                    .and_then(|r| r.scalar.get(name).copied())
                    .unwrap_or(0);
            if *q > have - used {
                reasons.push(format!("Insufficient {name}").into());
            }
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(Status {
            code: Code::Unschedulable,
            reasons,
        })
    }
}

fn least_allocated_one(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

/// NodeResourcesFit's LeastAllocated score (cpu and memory, weight 1 each, with the non-zero
/// defaults for containers without requests).
pub fn least_allocated(pod: &PodInfo, ni: &NodeInfo) -> i64 {
    let cpu = least_allocated_one(ni.non_zero_cpu + pod.non_zero_cpu, ni.allocatable.milli_cpu);
    let mem = least_allocated_one(ni.non_zero_mem + pod.non_zero_mem, ni.allocatable.memory);
    (cpu + mem) / 2
}

/// NodeResourcesBalancedAllocation: 100 × (1 − standard deviation of the cpu and memory
/// fractions), on actual requests. None when the pod requests neither (upstream skips it).
pub fn balanced_allocation(pod: &PodInfo, ni: &NodeInfo) -> Option<i64> {
    if pod.requests.milli_cpu == 0 && pod.requests.memory == 0 {
        return None;
    }
    let frac = |req: i64, cap: i64| {
        if cap == 0 {
            return None;
        }
        Some((req as f64 / cap as f64).min(1.0))
    };
    let fractions: Vec<f64> = [
        frac(
            ni.requested.milli_cpu + pod.requests.milli_cpu,
            ni.allocatable.milli_cpu,
        ),
        frac(
            ni.requested.memory + pod.requests.memory,
            ni.allocatable.memory,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let std = match fractions.as_slice() {
        [a, b] => (a - b).abs() / 2.0,
        _ => 0.0,
    };
    Some(((1.0 - std) * MAX_NODE_SCORE as f64) as i64)
}

/// NodeAffinity's score: the summed weights of the preferred terms the node matches.
pub fn node_affinity_score(pod: &Pod, node: &Node) -> i64 {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map_or(0, |terms| {
            terms
                .iter()
                .filter(|t| t.weight != 0)
                .filter(|t| {
                    node_selector_matches(
                        &k8s_openapi::api::core::v1::NodeSelector {
                            node_selector_terms: vec![t.preference.clone()],
                        },
                        node,
                    )
                })
                .map(|t| i64::from(t.weight))
                .sum()
        })
}

/// TaintToleration's score input: PreferNoSchedule taints not tolerated by the pod's
/// PreferNoSchedule (or effect-less) tolerations.
pub fn intolerable_prefer_no_schedule(pod: &Pod, node: &Node) -> i64 {
    let tolerations: Vec<_> = tolerations_of(pod)
        .iter()
        .filter(|t| {
            matches!(
                t.effect.as_deref(),
                None | Some("") | Some("PreferNoSchedule")
            )
        })
        .collect();
    taints_of(node)
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule")
        .filter(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
        .count() as i64
}

/// Upstream's DefaultNormalizeScore: scaled to 0..100 by the maximum (reversed if asked).
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores.iter_mut() {
        *s = MAX_NODE_SCORE * *s / max;
        if reverse {
            *s = MAX_NODE_SCORE - *s;
        }
    }
}

/// The weighted total score of each feasible node. `default_spread`: the selector the cluster's
/// default topology spreading uses for this pod (`podtopologyspread::default_selector`).
pub fn score(
    cache: &Cache,
    pod: &PodInfo,
    feasible: &[&NodeInfo],
    namespaces: NamespaceLookup<'_>,
    default_spread: Option<&LabelSelector>,
) -> Vec<i64> {
    let n = feasible.len();
    let mut total = vec![0i64; n];
    let node = |ni: &NodeInfo| ni.node.clone();
    // NodeResourcesFit and BalancedAllocation.
    for (i, ni) in feasible.iter().enumerate() {
        total[i] += WEIGHT_FIT * least_allocated(pod, ni);
        total[i] += WEIGHT_BALANCED * balanced_allocation(pod, ni).unwrap_or(0);
    }
    // NodeAffinity.
    let mut s: Vec<i64> = feasible
        .iter()
        .map(|ni| node(ni).map_or(0, |n| node_affinity_score(&pod.pod, &n)))
        .collect();
    default_normalize(&mut s, false);
    add(&mut total, &s, WEIGHT_NODE_AFFINITY);
    // TaintToleration.
    let mut s: Vec<i64> = feasible
        .iter()
        .map(|ni| node(ni).map_or(0, |n| intolerable_prefer_no_schedule(&pod.pod, &n)))
        .collect();
    default_normalize(&mut s, true);
    add(&mut total, &s, WEIGHT_TAINT_TOLERATION);
    // PodTopologySpread (ScheduleAnyway, or the cluster defaults).
    if let Some(s) = podtopologyspread::score(cache, &pod.pod, feasible, default_spread) {
        add(&mut total, &s, WEIGHT_SPREAD);
    }
    // InterPodAffinity (preferred terms, both ways).
    if let Some(s) = interpodaffinity::score(cache, &pod.pod, feasible, namespaces) {
        add(&mut total, &s, WEIGHT_INTER_POD);
    }
    total
}

fn add(total: &mut [i64], s: &[i64], weight: i64) {
    for (t, s) in total.iter_mut().zip(s) {
        *t += weight * s;
    }
}

/// A node's labels as a map (empty when the node is absent).
pub fn node_labels(ni: &NodeInfo) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    ni.node.as_deref().map_or(&EMPTY, labels_of_node)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::type_complexity)]
pub mod tests;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests_default_spread;
