//! API Priority and Fairness configuration every cluster starts with, as upstream's
//! `priority-and-fairness-config-producer` post-start hook keeps it: the mandatory `exempt` and
//! `catch-all` objects (their spec restored when changed) and the suggested ones (created when
//! missing), with each FlowSchema's `Dangling` status condition. `flowcontrol.rs` classifies
//! requests by them (upstream's response headers) and keeps the conditions current; k1s does
//! not queue requests by them.

use serde_json::{Value, json};

/// `(name, nominalConcurrencyShares, lendablePercent, queuing as (queues, handSize,
/// queueLengthLimit))` of a suggested Limited priority level.
type LimitedLevel = (&'static str, i64, i64, (i64, i64, i64));

/// The suggested Limited priority levels, in upstream's order.
const SUGGESTED_LEVELS: [LimitedLevel; 6] = [
    ("system", 30, 33, (64, 6, 50)),
    ("node-high", 40, 25, (64, 6, 50)),
    ("leader-election", 10, 0, (16, 4, 50)),
    ("workload-high", 40, 50, (128, 6, 50)),
    ("workload-low", 100, 90, (128, 6, 50)),
    ("global-default", 20, 50, (128, 6, 50)),
];

const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

fn level(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": { "name": name, "generation": 1, "annotations": { AUTOUPDATE: "true" } },
        "spec": spec,
        "status": {},
    })
}

/// The mandatory priority levels (`exempt`, `catch-all`).
pub fn mandatory_levels() -> Vec<Value> {
    vec![
        level(
            "exempt",
            json!({ "type": "Exempt", "exempt": { "nominalConcurrencyShares": 0, "lendablePercent": 0 } }),
        ),
        level(
            "catch-all",
            json!({ "type": "Limited", "limited": { "nominalConcurrencyShares": 5, "lendablePercent": 0,
                "limitResponse": { "type": "Reject" } } }),
        ),
    ]
}

/// The suggested priority levels.
pub fn suggested_levels() -> Vec<Value> {
    SUGGESTED_LEVELS
        .iter()
        .map(|(name, shares, lendable, (queues, hand, limit))| {
            level(
                name,
                json!({ "type": "Limited", "limited": {
                    "nominalConcurrencyShares": shares, "lendablePercent": lendable,
                    "limitResponse": { "type": "Queue", "queuing": {
                        "queues": queues, "handSize": hand, "queueLengthLimit": limit } } } }),
            )
        })
        .collect()
}

fn group(name: &str) -> Value {
    json!({ "kind": "Group", "group": { "name": name } })
}

fn user(name: &str) -> Value {
    json!({ "kind": "User", "user": { "name": name } })
}

fn kube_system_service_accounts() -> Value {
    json!({ "kind": "ServiceAccount", "serviceAccount": { "name": "*", "namespace": "kube-system" } })
}

/// Every verb on every resource, namespaced or not, and every non-resource URL.
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
            "namespaces": ["*"], "clusterScope": true }],
        "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
    })
}

fn get_create_update(group: &str, resources: &[&str], namespaces: &[&str]) -> Value {
    json!({ "verbs": ["get", "create", "update"], "apiGroups": [group], "resources": resources,
        "namespaces": namespaces })
}

fn schema(name: &str, level: &str, precedence: i64, by: Option<&str>, rules: Value) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": { "name": level },
        "matchingPrecedence": precedence,
        "rules": [rules],
    });
    if let Some(by) = by {
        spec["distinguisherMethod"] = json!({ "type": by });
    }
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": { "name": name, "generation": 1, "annotations": { AUTOUPDATE: "true" } },
        "spec": spec,
        "status": { "conditions": [{
            "type": "Dangling", "status": "False", "reason": "Found",
            "message": format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"),
            "lastTransitionTime": crate::registry::now_rfc3339(),
        }] },
    })
}

/// The mandatory FlowSchemas (`exempt`, `catch-all`).
pub fn mandatory_schemas() -> Vec<Value> {
    vec![
        schema(
            "exempt",
            "exempt",
            1,
            None,
            everything(vec![group("system:masters")]),
        ),
        schema(
            "catch-all",
            "catch-all",
            10000,
            Some("ByUser"),
            everything(vec![
                group("system:unauthenticated"),
                group("system:authenticated"),
            ]),
        ),
    ]
}

/// The suggested FlowSchemas.
pub fn suggested_schemas() -> Vec<Value> {
    let leases = json!({ "verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"], "namespaces": ["*"] });
    vec![
        schema(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            everything(vec![group("system:nodes")]),
        ),
        schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({
                "subjects": [group("system:nodes")],
                "resourceRules": [
                    { "verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"],
                      "namespaces": ["*"], "clusterScope": true },
                    { "verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                      "namespaces": ["*"] },
                ],
            }),
        ),
        schema(
            "probes",
            "exempt",
            2,
            None,
            json!({
                "subjects": [group("system:unauthenticated"), group("system:authenticated")],
                "nonResourceRules": [{ "verbs": ["get"],
                    "nonResourceURLs": ["/healthz", "/readyz", "/livez"] }],
            }),
        ),
        schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({
                "subjects": [user("system:kube-controller-manager"), user("system:kube-scheduler"),
                    kube_system_service_accounts()],
                "resourceRules": [
                    get_create_update("", &["endpoints", "configmaps"], &["kube-system"]),
                    leases.clone(),
                ],
            }),
        ),
        schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            json!({
                "subjects": [user("system:kube-controller-manager"),
                    { "kind": "ServiceAccount", "serviceAccount": { "name": "endpoint-controller", "namespace": "kube-system" } }],
                "resourceRules": [get_create_update("", &["endpoints"], &["*"])],
            }),
        ),
        schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            json!({
                "subjects": [kube_system_service_accounts()],
                "resourceRules": [
                    get_create_update("", &["endpoints", "configmaps"], &["*"]),
                    leases,
                ],
            }),
        ),
        schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(vec![user("system:kube-controller-manager")]),
        ),
        schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(vec![user("system:kube-scheduler")]),
        ),
        schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            everything(vec![kube_system_service_accounts()]),
        ),
        schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            everything(vec![group("system:serviceaccounts")]),
        ),
        schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            everything(vec![
                group("system:unauthenticated"),
                group("system:authenticated"),
            ]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_names_a_bootstrap_level_and_names_are_unique() {
        let levels: Vec<Value> = mandatory_levels()
            .into_iter()
            .chain(suggested_levels())
            .collect();
        let level_names: Vec<&str> = levels
            .iter()
            .filter_map(|l| l["metadata"]["name"].as_str())
            .collect();
        assert_eq!(level_names.len(), 8);
        let schemas: Vec<Value> = mandatory_schemas()
            .into_iter()
            .chain(suggested_schemas())
            .collect();
        assert_eq!(schemas.len(), 13);
        let mut names = std::collections::BTreeSet::new();
        for s in &schemas {
            assert!(
                names.insert(
                    s["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                )
            );
            let level = s["spec"]["priorityLevelConfiguration"]["name"].as_str();
            assert!(level.is_some_and(|l| level_names.contains(&l)), "{s}");
        }
    }
}
