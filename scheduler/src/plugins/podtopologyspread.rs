//! PodTopologySpread (upstream's plugins/podtopologyspread): hard constraints
//! (`DoNotSchedule`) filter on skew = matching pods in the node's domain + self − the global
//! minimum (0 when fewer domains than `minDomains`); soft ones (`ScheduleAnyway`) score nodes
//! with fewer matching pods higher. Nodes count when they carry every constraint's key and pass
//! `nodeAffinityPolicy` (default Honor) and `nodeTaintsPolicy` (default Ignore). A pod with no
//! constraints of its own is scored with the cluster defaults (`defaultingType: System`: maxSkew
//! 3 per hostname, 5 per zone, ScheduleAnyway) over the selector of the Services,
//! ReplicationController, ReplicaSet or StatefulSet it belongs to (`default_selector`); with
//! those, nodes lacking a key are still scored by the keys they have.

use std::collections::{HashMap, HashSet};

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod, ReplicationController, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::{MAX_NODE_SCORE, Status, Verdict, node_labels};
use crate::cache::{Cache, MatchCounts, NodeInfo};
use crate::helpers::{
    first_untolerated, labels_of_node, labels_of_pod, required_node_affinity_matches,
    selector_matches, taints_of, tolerations_of,
};

pub const ERR_CONSTRAINTS: &str = "node(s) didn't match pod topology spread constraints";
pub const ERR_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

#[derive(Clone, Debug)]
pub struct Constraint {
    pub max_skew: i64,
    pub key: String,
    pub selector: LabelSelector,
    pub min_domains: Option<i64>,
    pub honor_affinity: bool,
    pub honor_taints: bool,
}

/// The pod's constraints of one kind (hard: DoNotSchedule), with matchLabelKeys merged into the
/// selector as upstream does.
pub fn constraints(pod: &Pod, hard: bool) -> Vec<Constraint> {
    let want = if hard {
        "DoNotSchedule"
    } else {
        "ScheduleAnyway"
    };
    let labels = labels_of_pod(pod);
    pod.spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| c.when_unsatisfiable == want)
        .map(|c| {
            let mut selector = c.label_selector.clone().unwrap_or_else(|| LabelSelector {
                // A missing selector matches nothing.
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "\u{0}".into(),
                    operator: "Exists".into(),
                    values: None,
                }]),
                ..Default::default()
            });
            for k in c.match_label_keys.iter().flatten() {
                if let Some(v) = labels.get(k) {
                    selector
                        .match_expressions
                        .get_or_insert_with(Vec::new)
                        .push(LabelSelectorRequirement {
                            key: k.clone(),
                            operator: "In".into(),
                            values: Some(vec![v.clone()]),
                        });
                }
            }
            Constraint {
                max_skew: i64::from(c.max_skew),
                key: c.topology_key.clone(),
                selector,
                min_domains: c.min_domains.map(i64::from),
                honor_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                honor_taints: c.node_taints_policy.as_deref() == Some("Honor"),
            }
        })
        .collect()
}

fn included(c: &Constraint, pod: &Pod, node: &Node) -> bool {
    (!c.honor_affinity || required_node_affinity_matches(pod, node))
        && (!c.honor_taints
            || first_untolerated(
                taints_of(node),
                tolerations_of(pod),
                &["NoSchedule", "NoExecute"],
            )
            .is_none())
}

fn has_all_keys(cs: &[Constraint], node: &Node) -> bool {
    let labels = labels_of_node(node);
    cs.iter().all(|c| labels.contains_key(&c.key))
}

/// Counts the pods of a namespace that a selector matches, node by node, through the cache's
/// `MatchCounts` (terminating pods do not count).
struct Matcher<'a> {
    counts: &'a MatchCounts,
    key: String,
    namespace: &'a str,
    selector: &'a LabelSelector,
}

impl<'a> Matcher<'a> {
    fn new(cache: &'a Cache, namespace: &'a str, selector: &'a LabelSelector) -> Self {
        let selector_key = serde_json::to_string(selector).unwrap_or_default();
        Matcher {
            counts: &cache.match_counts,
            key: format!("{namespace}\n{selector_key}"),
            namespace,
            selector,
        }
    }

    fn count(&self, ni: &NodeInfo) -> i64 {
        self.counts.get_or_count(&self.key, ni, || {
            ni.pods
                .iter()
                .filter(|p| {
                    p.namespace() == self.namespace
                        && p.pod.metadata.deletion_timestamp.is_none()
                        && selector_matches(self.selector, labels_of_pod(&p.pod))
                })
                .count() as i64
        })
    }
}

/// Matching pods per domain value, per constraint, over the eligible nodes (with
/// `require_all`, only nodes carrying every constraint's key are eligible).
/// One `Matcher` per constraint, for `pod`'s namespace.
fn matchers<'a>(cache: &'a Cache, pod: &'a Pod, cs: &'a [Constraint]) -> Vec<Matcher<'a>> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    cs.iter()
        .map(|c| Matcher::new(cache, ns, &c.selector))
        .collect()
}

fn domain_counts(
    cache: &Cache,
    pod: &Pod,
    cs: &[Constraint],
    matchers: &[Matcher],
    require_all: bool,
) -> Vec<HashMap<String, i64>> {
    let mut counts = vec![HashMap::new(); cs.len()];
    for ni in cache.node_infos() {
        let Some(node) = ni.node.as_deref() else {
            continue;
        };
        if require_all && !has_all_keys(cs, node) {
            continue;
        }
        let labels = labels_of_node(node);
        for (i, c) in cs.iter().enumerate() {
            if !included(c, pod, node) {
                continue;
            }
            let Some(v) = labels.get(&c.key) else {
                continue;
            };
            *counts[i].entry(v.clone()).or_insert(0) += matchers[i].count(ni);
        }
    }
    counts
}

#[derive(Debug)]
pub struct FilterState {
    constraints: Vec<Constraint>,
    counts: Vec<HashMap<String, i64>>,
    min: Vec<i64>,
    self_match: Vec<i64>,
}

pub fn prefilter(cache: &Cache, pod: &Pod) -> Option<FilterState> {
    let cs = constraints(pod, true);
    if cs.is_empty() {
        return None;
    }
    let counts = domain_counts(cache, pod, &cs, &matchers(cache, pod, &cs), true);
    let min = cs
        .iter()
        .zip(&counts)
        .map(|(c, m)| {
            let domains = m.len() as i64;
            if c.min_domains.is_some_and(|d| domains < d) {
                0
            } else {
                m.values().copied().min().unwrap_or(0)
            }
        })
        .collect();
    let self_match = cs
        .iter()
        .map(|c| i64::from(selector_matches(&c.selector, labels_of_pod(pod))))
        .collect();
    Some(FilterState {
        constraints: cs,
        counts,
        min,
        self_match,
    })
}

pub fn filter(s: &FilterState, node: &Node) -> Verdict {
    let labels = labels_of_node(node);
    for (i, c) in s.constraints.iter().enumerate() {
        let Some(v) = labels.get(&c.key) else {
            return Err(Status::unresolvable(ERR_MISSING_LABEL));
        };
        let count = s.counts[i].get(v).copied().unwrap_or(0);
        if count + s.self_match[i] - s.min[i] > c.max_skew {
            return Err(Status::unschedulable(ERR_CONSTRAINTS));
        }
    }
    Ok(())
}

/// Upstream's system default constraints over `selector` (both ScheduleAnyway).
fn system_defaults(selector: &LabelSelector) -> Vec<Constraint> {
    [(HOSTNAME, 3), (ZONE, 5)]
        .into_iter()
        .map(|(key, max_skew)| Constraint {
            max_skew,
            key: key.to_string(),
            selector: selector.clone(),
            min_domains: None,
            honor_affinity: true,
            honor_taints: false,
        })
        .collect()
}

fn has_own_constraints(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.topology_spread_constraints.as_ref())
        .is_some_and(|c| !c.is_empty())
}

/// Soft constraints' normalised scores for the feasible nodes (None: the pod has none). A pod
/// without constraints of its own is scored by the system defaults over `default_selector`
/// (see `default_selector`; None: it belongs to nothing, so it is not spread).
pub fn score(
    cache: &Cache,
    pod: &Pod,
    feasible: &[&NodeInfo],
    default_selector: Option<&LabelSelector>,
) -> Option<Vec<i64>> {
    // Only the pod's own constraints need every key on a node (upstream: nodes without a zone
    // label still get hostname spreading from the defaults).
    let (cs, require_all) = if has_own_constraints(pod) {
        (constraints(pod, false), true)
    } else {
        (system_defaults(default_selector?), false)
    };
    if cs.is_empty() {
        return None;
    }
    let ignored: HashSet<usize> = feasible
        .iter()
        .enumerate()
        .filter(|(_, ni)| require_all && !ni.node.as_deref().is_some_and(|n| has_all_keys(&cs, n)))
        .map(|(i, _)| i)
        .collect();
    let weights: Vec<f64> = cs
        .iter()
        .map(|c| {
            let size = if c.key == HOSTNAME {
                feasible.len() - ignored.len()
            } else {
                // A node lacking the key is the domain "" (upstream counts it so).
                feasible
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !ignored.contains(i))
                    .map(|(_, ni)| node_labels(ni).get(&c.key).map_or("", String::as_str))
                    .collect::<HashSet<_>>()
                    .len()
            };
            ((size + 2) as f64).ln()
        })
        .collect();
    let matchers = matchers(cache, pod, &cs);
    let counts = domain_counts(cache, pod, &cs, &matchers, require_all);
    let raw: Vec<i64> = feasible
        .iter()
        .map(|ni| {
            let labels = node_labels(ni);
            let mut score = 0.0;
            for (i, c) in cs.iter().enumerate() {
                let Some(v) = labels.get(&c.key) else {
                    continue;
                };
                let cnt = if c.key == HOSTNAME {
                    matchers[i].count(ni)
                } else {
                    counts[i].get(v).copied().unwrap_or(0)
                };
                score += cnt as f64 * weights[i] + (c.max_skew - 1) as f64;
            }
            score.round() as i64
        })
        .collect();
    let considered = || {
        raw.iter()
            .enumerate()
            .filter(|(i, _)| !ignored.contains(i))
            .map(|(_, s)| *s)
    };
    let min = considered().min().unwrap_or(0);
    let max = considered().max().unwrap_or(0);
    Some(
        raw.iter()
            .enumerate()
            .map(|(i, s)| {
                if ignored.contains(&i) {
                    0
                } else if max == 0 {
                    MAX_NODE_SCORE
                } else {
                    MAX_NODE_SCORE * (max + min - s) / max
                }
            })
            .collect(),
    )
}

/// The objects a pod may belong to, for `default_selector` (the scheduler's informer caches).
pub trait OwnerLookup {
    fn services(&self, namespace: &str) -> Vec<Arc<Service>>;
    fn replication_controller(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<ReplicationController>>;
    fn replica_set(&self, namespace: &str, name: &str) -> Option<Arc<ReplicaSet>>;
    fn stateful_set(&self, namespace: &str, name: &str) -> Option<Arc<StatefulSet>>;
}

/// Upstream's helper.DefaultSelector: the selectors of the Services selecting the pod, and of
/// its controller when that is a ReplicationController, ReplicaSet or StatefulSet, combined
/// (they all select the pod, so they cannot conflict). None when that selects nothing: such a
/// pod gets no default constraints. Only needed for pods without constraints of their own.
pub fn default_selector(pod: &Pod, owners: &dyn OwnerLookup) -> Option<LabelSelector> {
    if has_own_constraints(pod) {
        return None;
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let labels = labels_of_pod(pod);
    let mut match_labels = std::collections::BTreeMap::new();
    let mut expressions: Vec<LabelSelectorRequirement> = Vec::new();
    for svc in owners.services(ns) {
        // A Service without a selector selects nothing (not everything).
        let Some(sel) = svc.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
            continue;
        };
        if sel.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            match_labels.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true));
    if let Some(o) = controller {
        let (name, kind) = (o.name.as_str(), o.kind.as_str());
        let owner_selector = match (o.api_version.as_str(), kind) {
            ("v1", "ReplicationController") => owners
                .replication_controller(ns, name)
                .and_then(|rc| rc.spec.as_ref()?.selector.clone())
                .map(|m| LabelSelector {
                    match_labels: Some(m),
                    match_expressions: None,
                }),
            ("apps/v1", "ReplicaSet") => owners
                .replica_set(ns, name)
                .and_then(|rs| rs.spec.as_ref().map(|s| s.selector.clone())),
            ("apps/v1", "StatefulSet") => owners
                .stateful_set(ns, name)
                .and_then(|ss| ss.spec.as_ref().map(|s| s.selector.clone())),
            _ => None,
        };
        if let Some(sel) = owner_selector {
            match_labels.extend(sel.match_labels.unwrap_or_default());
            expressions.extend(sel.match_expressions.unwrap_or_default());
        }
    }
    if match_labels.is_empty() && expressions.is_empty() {
        return None;
    }
    Some(LabelSelector {
        match_labels: (!match_labels.is_empty()).then_some(match_labels),
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}
