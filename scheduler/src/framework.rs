//! One scheduling attempt's algorithm (upstream's schedulePod): filter every node, score the
//! feasible ones, pick the best (ties broken by a reservoir pick, as upstream); and upstream's
//! FitError message: `0/N nodes are available: <count> <reason>, ... .` with the reasons counted
//! over nodes and sorted, then the preemption outcome.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::cache::{Cache, NodeInfo, PodInfo};
use crate::plugins::{self, NamespaceLookup, Status};

/// Upstream's ErrNoNodesAvailable.
pub const NO_NODES: &str = "no nodes available to schedule pods";

/// Why no node fits: each node's verdict.
#[derive(Debug, Default)]
pub struct Diagnosis {
    pub statuses: Vec<(String, Status)>,
}

#[derive(Debug)]
pub enum NoFit {
    NoNodes,
    /// A PreFilter plugin refused the pod on every node, with this message.
    PreFilter(String),
    Diagnosis(Diagnosis),
}

/// A small PRNG (xorshift) for tie breaking.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x % n.max(1)
    }
}

/// Picks a node for the pod, or says why none fits. `default_spread`: the selector of the
/// cluster's default topology spreading for this pod, if it has one.
pub fn find_node(
    cache: &Cache,
    pod: &PodInfo,
    namespaces: NamespaceLookup<'_>,
    default_spread: Option<&LabelSelector>,
    rng: &mut Rng,
) -> Result<String, NoFit> {
    if cache.order.is_empty() {
        return Err(NoFit::NoNodes);
    }
    let state = plugins::prefilter(cache, pod, namespaces);
    let mut feasible: Vec<&NodeInfo> = Vec::new();
    let mut statuses = Vec::new();
    for ni in cache.node_infos() {
        let reserved = cache.reserved_for(ni.name(), pod);
        match plugins::run_filters(&state, pod, ni, reserved.as_ref()) {
            Ok(()) => feasible.push(ni),
            Err(s) => statuses.push((ni.name().to_string(), s)),
        }
    }
    match feasible.len() {
        0 => Err(NoFit::Diagnosis(Diagnosis { statuses })),
        1 => Ok(feasible[0].name().to_string()),
        _ => {
            let scores = plugins::score(cache, pod, &feasible, namespaces, default_spread);
            Ok(feasible[select_host(&scores, rng)].name().to_string())
        }
    }
}

/// The index of a best score; among equals each is equally likely (reservoir sampling).
pub fn select_host(scores: &[i64], rng: &mut Rng) -> usize {
    let mut best = 0;
    let mut ties = 0u64;
    for (i, s) in scores.iter().enumerate() {
        if i == 0 || *s > scores[best] {
            best = i;
            ties = 1;
        } else if *s == scores[best] {
            ties += 1;
            if rng.below(ties) == 0 {
                best = i;
            }
        }
    }
    best
}

/// Upstream's FitError.Error: `0/<n> nodes are available: <sorted counted reasons>.` and then
/// ` <post-filter message>` when there is one.
pub fn fit_error_message(
    num_nodes: usize,
    statuses: &[(String, Status)],
    post_filter: Option<&str>,
) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, s) in statuses {
        for r in &s.reasons {
            *counts.entry(r.as_ref()).or_insert(0) += 1;
        }
    }
    let mut reasons: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    reasons.sort();
    let mut msg = format!("0/{num_nodes} nodes are available:");
    if !reasons.is_empty() {
        msg.push_str(&format!(" {}.", reasons.join(", ")));
    }
    if let Some(p) = post_filter.filter(|p| !p.is_empty()) {
        msg.push_str(&format!(" {p}"));
    }
    msg
}

/// Upstream's FitError when a PreFilter plugin refused the pod: every node is
/// UnschedulableAndUnresolvable, so preemption cannot help on any.
pub fn prefilter_error_message(num_nodes: usize, prefilter: &str) -> String {
    format!(
        "0/{num_nodes} nodes are available: {prefilter}. preemption: 0/{num_nodes} nodes are \
         available: {num_nodes} {}.",
        crate::preemption::NOT_HELPFUL
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::plugins::Code;

    #[test]
    fn the_message_counts_and_sorts_reasons_as_upstream() {
        let st = |r: &'static str| Status::new(Code::Unschedulable, r);
        let statuses = vec![
            (
                "a".to_string(),
                st("node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"),
            ),
            ("b".to_string(), st("Insufficient cpu")),
            ("c".to_string(), st("Insufficient cpu")),
        ];
        let pre = fit_error_message(
            3,
            &[
                (
                    "a".to_string(),
                    st("Preemption is not helpful for scheduling"),
                ),
                (
                    "b".to_string(),
                    st("No preemption victims found for incoming pod"),
                ),
                (
                    "c".to_string(),
                    st("No preemption victims found for incoming pod"),
                ),
            ],
            None,
        );
        assert_eq!(
            fit_error_message(3, &statuses, Some(&format!("preemption: {pre}"))),
            "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
        // Several reasons from one node each count.
        let both = Status {
            code: Code::Unschedulable,
            reasons: vec!["Insufficient cpu".into(), "Insufficient memory".into()],
        };
        assert_eq!(
            fit_error_message(1, &[("a".into(), both)], None),
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
        );
    }

    #[test]
    fn ties_are_broken_evenly() {
        let mut rng = Rng::new(42);
        let mut hits = [0; 3];
        for _ in 0..3000 {
            hits[select_host(&[5, 9, 9, 1][..3], &mut rng)] += 1;
        }
        assert_eq!(hits[0], 0);
        assert!(hits[1] > 1200 && hits[2] > 1200, "{hits:?}");
        assert_eq!(select_host(&[1, 7, 3], &mut rng), 1);
    }
}
