//! InterPodAffinity (upstream's plugins/interpodaffinity): required pod affinity (a pod matching
//! every term must run in the node's domain, unless no pod matches and the pod matches its own
//! terms), required anti-affinity (no matching pod in the domain), existing pods' required
//! anti-affinity against the incoming pod; and the preferred terms of both sides as a score.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, PodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{NamespaceLookup, Status, Verdict, node_labels};
use crate::cache::{Cache, NodeInfo};
use crate::helpers::{labels_of_node, labels_of_pod, selector_matches};

pub const ERR_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const ERR_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
pub const ERR_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
/// Upstream's default hardPodAffinityWeight.
const HARD_POD_AFFINITY_WEIGHT: i64 = 1;

/// One affinity term, resolved against its owner's namespace.
#[derive(Clone, Debug)]
pub struct Term {
    namespaces: Vec<String>,
    namespace_selector: Option<LabelSelector>,
    selector: Option<LabelSelector>,
    pub key: String,
    pub weight: i64,
}

impl Term {
    fn new(t: &PodAffinityTerm, owner_ns: &str, weight: i64) -> Self {
        let mut namespaces = t.namespaces.clone().unwrap_or_default();
        if namespaces.is_empty() && t.namespace_selector.is_none() {
            namespaces.push(owner_ns.to_string());
        }
        Term {
            namespaces,
            namespace_selector: t.namespace_selector.clone(),
            selector: t.label_selector.clone(),
            key: t.topology_key.clone(),
            weight,
        }
    }

    /// Whether `pod` is one this term selects.
    pub fn matches(&self, pod: &Pod, namespaces: NamespaceLookup<'_>) -> bool {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let ns_ok = self.namespaces.iter().any(|n| n == ns)
            || self.namespace_selector.as_ref().is_some_and(|sel| {
                let empty = sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
                    && sel.match_expressions.as_ref().is_none_or(|m| m.is_empty());
                empty
                    || namespaces(ns).is_some_and(|n| {
                        n.metadata
                            .labels
                            .as_ref()
                            .is_some_and(|l| selector_matches(sel, l))
                    })
            });
        ns_ok
            && self
                .selector
                .as_ref()
                .is_some_and(|s| selector_matches(s, labels_of_pod(pod)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    RequiredAffinity,
    RequiredAnti,
    PreferredAffinity,
    PreferredAnti,
}

pub fn terms(pod: &Pod, kind: Kind) -> Vec<Term> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let Some(a) = pod.spec.as_ref().and_then(|s| s.affinity.as_ref()) else {
        return Vec::new();
    };
    let (req, pref) = match kind {
        Kind::RequiredAffinity | Kind::PreferredAffinity => a.pod_affinity.as_ref().map(|p| {
            (
                &p.required_during_scheduling_ignored_during_execution,
                &p.preferred_during_scheduling_ignored_during_execution,
            )
        }),
        Kind::RequiredAnti | Kind::PreferredAnti => a.pod_anti_affinity.as_ref().map(|p| {
            (
                &p.required_during_scheduling_ignored_during_execution,
                &p.preferred_during_scheduling_ignored_during_execution,
            )
        }),
    }
    .unwrap_or((&None, &None));
    match kind {
        Kind::RequiredAffinity | Kind::RequiredAnti => {
            req.iter().flatten().map(|t| Term::new(t, ns, 1)).collect()
        }
        Kind::PreferredAffinity | Kind::PreferredAnti => pref
            .iter()
            .flatten()
            .map(|w| Term::new(&w.pod_affinity_term, ns, i64::from(w.weight)))
            .collect(),
    }
}

type Pair = (String, String);

#[derive(Debug)]
pub struct FilterState {
    affinity: Vec<Term>,
    anti: Vec<Term>,
    affinity_counts: HashMap<Pair, i64>,
    anti_counts: HashMap<Pair, i64>,
    existing_anti: HashMap<Pair, i64>,
    self_matches_all: bool,
}

pub fn prefilter(cache: &Cache, pod: &Pod, namespaces: NamespaceLookup<'_>) -> Option<FilterState> {
    let affinity = terms(pod, Kind::RequiredAffinity);
    let anti = terms(pod, Kind::RequiredAnti);
    if affinity.is_empty() && anti.is_empty() && cache.with_required_anti_affinity == 0 {
        return None;
    }
    let mut s = FilterState {
        self_matches_all: !affinity.is_empty()
            && affinity.iter().all(|t| t.matches(pod, namespaces)),
        affinity,
        anti,
        affinity_counts: HashMap::new(),
        anti_counts: HashMap::new(),
        existing_anti: HashMap::new(),
    };
    for ni in cache.node_infos() {
        let Some(node) = ni.node.as_deref() else {
            continue;
        };
        let labels = labels_of_node(node);
        let bump = |map: &mut HashMap<Pair, i64>, key: &str| {
            if let Some(v) = labels.get(key) {
                *map.entry((key.to_string(), v.clone())).or_insert(0) += 1;
            }
        };
        for p in &ni.pods {
            if p.required_anti_affinity {
                for t in terms(&p.pod, Kind::RequiredAnti) {
                    if t.matches(pod, namespaces) {
                        bump(&mut s.existing_anti, &t.key);
                    }
                }
            }
            if !s.affinity.is_empty() && s.affinity.iter().all(|t| t.matches(&p.pod, namespaces)) {
                for t in &s.affinity {
                    bump(&mut s.affinity_counts, &t.key);
                }
            }
            for t in &s.anti {
                if t.matches(&p.pod, namespaces) {
                    bump(&mut s.anti_counts, &t.key);
                }
            }
        }
    }
    Some(s)
}

pub fn filter(s: &FilterState, node: &Node) -> Verdict {
    let labels = labels_of_node(node);
    let count = |map: &HashMap<Pair, i64>, key: &str| {
        labels
            .get(key)
            .map(|v| map.get(&(key.to_string(), v.clone())).copied().unwrap_or(0))
    };
    if !s.affinity.is_empty() {
        let mut pods_exist = true;
        for t in &s.affinity {
            match count(&s.affinity_counts, &t.key) {
                None => return Err(Status::unresolvable(ERR_AFFINITY)),
                Some(c) if c <= 0 => pods_exist = false,
                Some(_) => {}
            }
        }
        if !pods_exist && !(s.affinity_counts.is_empty() && s.self_matches_all) {
            return Err(Status::unresolvable(ERR_AFFINITY));
        }
    }
    if s.anti
        .iter()
        .any(|t| count(&s.anti_counts, &t.key).is_some_and(|c| c > 0))
    {
        return Err(Status::unschedulable(ERR_ANTI_AFFINITY));
    }
    if s.existing_anti
        .iter()
        .any(|((k, v), c)| *c > 0 && labels.get(k) == Some(v))
    {
        return Err(Status::unschedulable(ERR_EXISTING_ANTI_AFFINITY));
    }
    Ok(())
}

/// Preferred (anti-)affinity of the pod towards existing pods and of existing pods towards it,
/// normalised min..max to 0..100 (None: nothing to score).
pub fn score(
    cache: &Cache,
    pod: &Pod,
    feasible: &[&NodeInfo],
    namespaces: NamespaceLookup<'_>,
) -> Option<Vec<i64>> {
    let pref = terms(pod, Kind::PreferredAffinity);
    let pref_anti = terms(pod, Kind::PreferredAnti);
    if pref.is_empty() && pref_anti.is_empty() && cache.with_affinity == 0 {
        return None;
    }
    let mut topo: HashMap<Pair, i64> = HashMap::new();
    for ni in cache.node_infos() {
        let labels = node_labels(ni);
        let mut add = |key: &str, w: i64| {
            if let Some(v) = labels.get(key) {
                *topo.entry((key.to_string(), v.clone())).or_insert(0) += w;
            }
        };
        for p in &ni.pods {
            let existing: &Arc<Pod> = &p.pod;
            for t in &pref {
                if t.matches(existing, namespaces) {
                    add(&t.key, t.weight);
                }
            }
            for t in &pref_anti {
                if t.matches(existing, namespaces) {
                    add(&t.key, -t.weight);
                }
            }
            if !p.any_affinity {
                continue;
            }
            for t in terms(existing, Kind::RequiredAffinity) {
                if t.matches(pod, namespaces) {
                    add(&t.key, HARD_POD_AFFINITY_WEIGHT);
                }
            }
            for t in terms(existing, Kind::PreferredAffinity) {
                if t.matches(pod, namespaces) {
                    add(&t.key, t.weight);
                }
            }
            for t in terms(existing, Kind::PreferredAnti) {
                if t.matches(pod, namespaces) {
                    add(&t.key, -t.weight);
                }
            }
        }
    }
    if topo.is_empty() {
        return None;
    }
    let raw: Vec<i64> = feasible
        .iter()
        .map(|ni| {
            let labels = node_labels(ni);
            topo.iter()
                .filter(|((k, v), _)| labels.get(k) == Some(v))
                .map(|(_, w)| *w)
                .sum()
        })
        .collect();
    let min = raw.iter().copied().min().unwrap_or(0);
    let max = raw.iter().copied().max().unwrap_or(0);
    let diff = max - min;
    Some(
        raw.iter()
            .map(|s| {
                if diff > 0 {
                    (100.0 * ((s - min) as f64 / diff as f64)) as i64
                } else {
                    0
                }
            })
            .collect(),
    )
}
