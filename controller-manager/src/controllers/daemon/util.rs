//! DaemonSet scheduling helpers (upstream `pkg/controller/daemon/util` and the predicates of
//! `daemon_controller.go`): the tolerations every daemon pod gets, the node affinity that pins
//! a pod to its node, which node a pod targets, and whether a node should run the daemon pod
//! (node name, nodeSelector and required node affinity, NoSchedule/NoExecute taints).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, PodTemplateSpec, Taint, Toleration,
};
use kube::ResourceExt;

/// `pod-template-generation` on daemon pods.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// The annotation carrying a DaemonSet's template generation in apps/v1.
pub const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// Upstream's AddOrUpdateDaemonPodTolerations: daemon pods tolerate not-ready and unreachable
/// nodes (NoExecute), node pressure and unschedulable nodes (NoSchedule), and with host
/// networking an unavailable network.
pub fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut wanted: Vec<(&str, &str)> = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        wanted.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in wanted {
        let t = Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(effect.into()),
            ..Default::default()
        };
        // Upstream's AddOrUpdateTolerationInPodSpec: an identical toleration is kept once.
        if !tolerations.iter().any(|x| x == &t) {
            tolerations.push(t);
        }
    }
}

/// Upstream's ReplaceDaemonSetPodNodeNameNodeAffinity: the required node affinity becomes one
/// term `matchFields metadata.name In [node]` (preferred terms are kept).
pub fn pin_to_node(affinity: Option<Affinity>, node: &str) -> Affinity {
    let term = NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: "metadata.name".into(),
            operator: "In".into(),
            values: Some(vec![node.into()]),
        }]),
        match_expressions: None,
    };
    let mut affinity = affinity.unwrap_or_default();
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    na.required_during_scheduling_ignored_during_execution = Some(NodeSelector {
        node_selector_terms: vec![term],
    });
    affinity
}

/// Upstream's GetTargetNodeName: `spec.nodeName`, else the node of the pinning affinity term.
pub fn target_node_name(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_ref().filter(|n| !n.is_empty()) {
        return Some(n.clone());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find(|r| {
            r.key == "metadata.name"
                && r.operator == "In"
                && r.values.as_ref().is_some_and(|v| v.len() == 1)
        })
        .and_then(|r| r.values.as_ref().and_then(|v| v.first().cloned()))
}

/// Upstream's CreatePodTemplate: the tolerations, the template generation and hash labels.
pub fn daemon_pod_template(
    template: &PodTemplateSpec,
    generation: Option<i64>,
    hash: &str,
) -> PodTemplateSpec {
    let mut t = template.clone();
    add_daemon_tolerations(t.spec.get_or_insert_with(Default::default));
    let labels = t
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    if let Some(g) = generation {
        labels.insert(TEMPLATE_GENERATION_LABEL.into(), g.to_string());
    }
    if !hash.is_empty() {
        labels.insert(
            crate::controllers::history::CONTROLLER_REVISION_HASH.into(),
            hash.into(),
        );
    }
    t
}

/// The DaemonSet's template generation (its annotation).
pub fn template_generation(ds: &DaemonSet) -> Option<i64> {
    ds.metadata
        .annotations
        .as_ref()?
        .get(TEMPLATE_GENERATION_ANNOTATION)?
        .parse()
        .ok()
}

/// Upstream's IsPodUpdated: the pod carries the current hash or template generation.
pub fn is_pod_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let get = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
    let template_matches =
        generation.is_some_and(|g| get(TEMPLATE_GENERATION_LABEL) == Some(g.to_string().as_str()));
    let hash_matches = !hash.is_empty()
        && get(crate::controllers::history::CONTROLLER_REVISION_HASH) == Some(hash);
    hash_matches || template_matches
}

/// Whether a toleration tolerates a taint (upstream's ToleratesTaint).
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty())
        && e != taint.effect
    {
        return false;
    }
    let key = t.key.as_deref().unwrap_or_default();
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// The first taint passing `filter` that no toleration tolerates.
pub fn untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    filter: impl Fn(&Taint) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| filter(t))
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| v.parse::<i64>().ok()),
                values.first().and_then(|b| b.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if values.len() != 1 {
                return false;
            }
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// Whether a node selector term matches the node (an empty term matches nothing, as upstream).
fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = node.metadata.labels.as_ref();
    let name = node.name_any();
    exprs
        .iter()
        .all(|r| requirement_matches(r, labels.and_then(|l| l.get(&r.key)).map(String::as_str)))
        && fields
            .iter()
            .all(|r| r.key == "metadata.name" && requirement_matches(r, Some(name.as_str())))
}

/// Upstream's GetRequiredNodeAffinity(pod).Match(node): `nodeSelector` and the required node
/// affinity terms (any term).
pub fn fits_node_affinity(spec: &PodSpec, node: &Node) -> bool {
    let labels = node.metadata.labels.as_ref();
    if let Some(sel) = spec.node_selector.as_ref()
        && !sel
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    {
        return false;
    }
    match spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        }) {
        Some(ns) => ns.node_selector_terms.iter().any(|t| term_matches(t, node)),
        None => true,
    }
}

/// Upstream's NodeShouldRunDaemonPod: `(shouldRun, shouldContinueRunning)`.
pub fn node_should_run_daemon_pod(node: &Node, ds: &DaemonSet) -> (bool, bool) {
    let template = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    if let Some(n) = spec.node_name.as_ref().filter(|n| !n.is_empty())
        && *n != node.name_any()
    {
        return (false, false);
    }
    spec.node_name = Some(node.name_any());
    add_daemon_tolerations(&mut spec);
    if !fits_node_affinity(&spec, node) {
        return (false, false);
    }
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let fits_taints = untolerated_taint(&taints, &tolerations, |t| {
        t.effect == "NoSchedule" || t.effect == "NoExecute"
    })
    .is_none();
    if !fits_taints {
        let no_execute = untolerated_taint(&taints, &tolerations, |t| t.effect == "NoExecute");
        return (false, no_execute.is_none());
    }
    (true, true)
}
