//! Matching helpers shared by the plugins: label selectors, node selector terms (node affinity),
//! taints and tolerations, a pod's priority and host ports.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

static EMPTY: BTreeMap<String, String> = BTreeMap::new();

pub fn labels_of_node(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

pub fn labels_of_pod(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// A metav1.LabelSelector against labels; the empty selector matches everything. An unknown
/// operator matches nothing (upstream would have failed to convert it).
pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = &sel.match_labels
        && ml.iter().any(|(k, v)| labels.get(k) != Some(v))
    {
        return false;
    }
    sel.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => !value.is_some_and(|v| values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    })
}

fn requirement_matches(req: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), [bound]) = (value, values) else {
                return false;
            };
            let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                return false;
            };
            if req.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// One NodeSelectorTerm: its requirements ANDed; a term with none matches nothing.
pub fn term_matches(term: &NodeSelectorTerm, node: &Node) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = labels_of_node(node);
    exprs
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            r.key == "metadata.name"
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && requirement_matches(r, node.metadata.name.as_deref())
        })
}

/// A NodeSelector: its terms ORed.
pub fn node_selector_matches(sel: &NodeSelector, node: &Node) -> bool {
    sel.node_selector_terms
        .iter()
        .any(|t| term_matches(t, node))
}

/// The pod's nodeSelector and required node affinity (upstream's RequiredNodeAffinity).
pub fn required_node_affinity_matches(pod: &Pod, node: &Node) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return true;
    };
    if let Some(sel) = &spec.node_selector {
        let labels = labels_of_node(node);
        if sel.iter().any(|(k, v)| labels.get(k) != Some(v)) {
            return false;
        }
    }
    match spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        }) {
        Some(sel) => node_selector_matches(sel, node),
        None => true,
    }
}

/// Upstream's Toleration.ToleratesTaint.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty())
        && e != taint.effect
    {
        return false;
    }
    if let Some(k) = t.key.as_deref().filter(|k| !k.is_empty())
        && k != taint.key
    {
        return false;
    }
    match t.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => {
            t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
        }
        "Exists" => true,
        _ => false,
    }
}

pub fn tolerations_of(pod: &Pod) -> &[Toleration] {
    pod.spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default()
}

pub fn taints_of(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
}

/// The first taint with one of `effects` that no toleration tolerates.
pub fn first_untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    effects: &[&str],
) -> Option<&'a Taint> {
    taints.iter().find(|taint| {
        effects.contains(&taint.effect.as_str()) && !tolerations.iter().any(|t| tolerates(t, taint))
    })
}

pub fn priority(pod: &Pod) -> i32 {
    pod.spec.as_ref().and_then(|s| s.priority).unwrap_or(0)
}

/// A host port a pod asks for: (host IP, protocol, port); the IP `0.0.0.0` means every address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

impl HostPort {
    pub fn conflicts(&self, o: &HostPort) -> bool {
        self.port == o.port
            && self.protocol == o.protocol
            && (self.ip == o.ip || self.ip == "0.0.0.0" || o.ip == "0.0.0.0")
    }
}

/// The host ports of a pod's containers.
pub fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in &spec.containers {
        for p in c.ports.iter().flatten() {
            if let Some(port) = p.host_port.filter(|p| *p > 0) {
                out.push(HostPort {
                    ip: p
                        .host_ip
                        .clone()
                        .filter(|i| !i.is_empty())
                        .unwrap_or_else(|| "0.0.0.0".into()),
                    protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    port,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use serde_json::json;

    fn node(v: serde_json::Value) -> Node {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn node_selector_requirements() {
        let n = node(json!({"metadata": {"name": "n1", "labels": {"zone": "a", "cores": "8"}}}));
        let term =
            |e: serde_json::Value| -> NodeSelectorTerm { serde_json::from_value(e).unwrap() };
        let cases = [
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["x"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["4"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["4"]}]}),
                false,
            ),
            (
                json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
                true,
            ),
            (
                json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}),
                false,
            ),
            (json!({}), false),
        ];
        for (t, want) in cases {
            assert_eq!(term_matches(&term(t.clone()), &n), want, "{t}");
        }
    }

    #[test]
    fn tolerations_match_upstream() {
        let taint = Taint {
            key: "k".into(),
            value: Some("v".into()),
            effect: "NoSchedule".into(),
            ..Default::default()
        };
        let t = |k: &str, op: &str, v: &str, e: &str| Toleration {
            key: Some(k.into()),
            operator: Some(op.into()),
            value: Some(v.into()),
            effect: Some(e.into()),
            ..Default::default()
        };
        assert!(tolerates(&t("k", "Equal", "v", "NoSchedule"), &taint));
        assert!(tolerates(&t("k", "Equal", "v", ""), &taint));
        assert!(!tolerates(&t("k", "Equal", "w", ""), &taint));
        assert!(tolerates(&t("k", "Exists", "", ""), &taint));
        assert!(
            tolerates(&t("", "Exists", "", ""), &taint),
            "empty key + Exists tolerates all"
        );
        assert!(!tolerates(&t("k", "Exists", "", "NoExecute"), &taint));
        assert!(!tolerates(&t("other", "Exists", "", ""), &taint));
        assert!(
            tolerates(&t("k", "", "v", ""), &taint),
            "operator defaults to Equal"
        );
    }

    #[test]
    fn label_selectors() {
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        assert!(selector_matches(&LabelSelector::default(), &labels));
        let sel = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "app".into(),
                operator: "NotIn".into(),
                values: Some(vec!["db".into()]),
            }]),
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
        };
        assert!(selector_matches(&sel, &labels));
        assert!(!selector_matches(&sel, &BTreeMap::new()));
    }
}
