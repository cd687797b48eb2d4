//! API Priority and Fairness configuration every cluster starts with, as upstream's
//! `priority-and-fairness-config-producer` post-start hook keeps it (at start and every minute):
//! missing objects are created; the mandatory `exempt` and `catch-all` keep upstream's spec; a
//! suggested one does while its `apf.kubernetes.io/autoupdate-spec` annotation says `true` (or,
//! without a valid value, while its generation is 1), and the annotation is set to what applies;
//! objects annotated `true` that upstream does not ship are deleted. `flowcontrol.rs` classifies
//! requests by them (upstream's response headers) and keeps the `Dangling` conditions current;
//! k1s does not queue requests by them.

use k1s_apimachinery::ApiError;
use serde_json::{Value, json};

use crate::bootstrap::{put_if_missing, target};
use crate::registry::{DeleteOptions, ListQuery, Registry, Target, WriteOptions};

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

pub(crate) const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

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

/// Brings the configuration objects to upstream's: creates what is missing, revises what
/// auto-updates and deletes auto-updated objects upstream does not ship.
pub async fn ensure(registry: &Registry) -> Result<(), ApiError> {
    let levels = target(
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
        None,
    )?;
    let schemas = target("flowcontrol.apiserver.k8s.io", "flowschemas", None)?;
    for (t, mandatory, suggested) in [
        (levels, mandatory_levels(), suggested_levels()),
        (schemas, mandatory_schemas(), suggested_schemas()),
    ] {
        let names: Vec<String> = mandatory
            .iter()
            .chain(&suggested)
            .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        for (obj, is_mandatory) in mandatory
            .into_iter()
            .map(|o| (o, true))
            .chain(suggested.into_iter().map(|o| (o, false)))
        {
            ensure_one(registry, t, obj, is_mandatory).await?;
        }
        remove_unwanted(registry, t, &names).await?;
    }
    Ok(())
}

/// Creates `bootstrap` when missing, else revises the stored object if it auto-updates. A
/// concurrent write wins: the next round looks again.
async fn ensure_one(
    registry: &Registry,
    t: Target<'_>,
    bootstrap: Value,
    mandatory: bool,
) -> Result<(), ApiError> {
    let name = bootstrap["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let current = match registry.get(t, &name).await {
        Ok(current) => current,
        Err(e) if e.is_not_found() => return put_if_missing(registry, t, bootstrap).await,
        Err(e) => return Err(e),
    };
    if revise(&current, &bootstrap, mandatory).is_none() {
        return Ok(());
    }
    let strategy = crate::strategies::for_resource(t.info);
    let result = registry
        .update(
            t,
            strategy,
            &name,
            None,
            &WriteOptions::default(),
            |stored| {
                let mut revised =
                    revise(stored, &bootstrap, mandatory).unwrap_or_else(|| stored.clone());
                // A precondition: a write that raced this one is looked at again next round.
                revised["metadata"]["resourceVersion"] =
                    current["metadata"]["resourceVersion"].clone();
                Ok(revised)
            },
        )
        .await;
    match result {
        Err(e) if e.is_conflict() || e.is_not_found() => Ok(()),
        other => other.map(|_| ()),
    }
}

/// The object the producer writes in place of `current` (upstream's ReviseIfNeeded), or
/// `None` when it is as it should be.
fn revise(current: &Value, bootstrap: &Value, mandatory: bool) -> Option<Value> {
    let annotated = auto_update_annotation(current);
    let auto_update = mandatory
        || annotated.unwrap_or_else(|| current.pointer("/metadata/generation") == Some(&json!(1)));
    let annotate = annotated != Some(auto_update);
    let respec = auto_update && current.get("spec") != bootstrap.get("spec");
    if !annotate && !respec {
        return None;
    }
    let mut revised = current.clone();
    if respec {
        revised["spec"] = bootstrap["spec"].clone();
    }
    if annotate {
        if !revised["metadata"]["annotations"].is_object() {
            revised["metadata"]["annotations"] = json!({});
        }
        revised["metadata"]["annotations"][AUTOUPDATE] = json!(auto_update.to_string());
    }
    Some(revised)
}

/// Deletes the objects not named in `wanted` whose auto-update annotation says true (upstream's
/// RemoveUnwantedObjects: they were shipped by an earlier version).
async fn remove_unwanted(
    registry: &Registry,
    t: Target<'_>,
    wanted: &[String],
) -> Result<(), ApiError> {
    let list = registry.list(t, &ListQuery::default()).await?;
    for obj in &list.items {
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        let auto_update = auto_update_annotation(obj);
        if wanted.iter().any(|w| w == name) || auto_update != Some(true) {
            continue;
        }
        match registry.delete(t, name, &DeleteOptions::default()).await {
            Err(e) if !e.is_not_found() => return Err(e),
            _ => tracing::info!(
                name,
                resource = t.info.resource,
                "deleted an unwanted APF object"
            ),
        }
    }
    Ok(())
}

/// The object's auto-update annotation, if it holds a valid boolean.
fn auto_update_annotation(obj: &Value) -> Option<bool> {
    annotation(obj)
        .and_then(Value::as_str)
        .and_then(parse_go_bool)
}

/// The object's auto-update annotation as written (any JSON value, or none).
pub(crate) fn annotation(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/annotations")?.get(AUTOUPDATE)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_follow_the_annotation_and_generation_as_upstream() {
        let boot = suggested_levels().remove(0);
        let mut changed = boot.clone();
        changed["spec"]["limited"]["nominalConcurrencyShares"] = json!(7);
        // Annotated true: the spec goes back.
        let revised = revise(&changed, &boot, false).expect("revised");
        assert_eq!(revised["spec"], boot["spec"]);
        // Annotated false: left alone, mandatory or not as the annotation says.
        changed["metadata"]["annotations"][AUTOUPDATE] = json!("false");
        assert!(revise(&changed, &boot, false).is_none());
        let forced = revise(&changed, &boot, true).expect("mandatory objects always update");
        assert_eq!(forced["spec"], boot["spec"]);
        assert_eq!(forced["metadata"]["annotations"][AUTOUPDATE], "true");
        // No valid value: generation 1 means nobody changed it, so it updates and says so.
        changed["metadata"]["annotations"][AUTOUPDATE] = json!("maybe");
        let revised = revise(&changed, &boot, false).expect("revised");
        assert_eq!(revised["spec"], boot["spec"]);
        assert_eq!(revised["metadata"]["annotations"][AUTOUPDATE], "true");
        // Changed by someone (generation 2) and unannotated: only the annotation is written.
        changed["metadata"]["generation"] = json!(2);
        changed["metadata"]["annotations"] = json!({});
        let revised = revise(&changed, &boot, false).expect("annotated");
        assert_eq!(revised["spec"], changed["spec"]);
        assert_eq!(revised["metadata"]["annotations"][AUTOUPDATE], "false");
        // Go's spellings of true and false are understood.
        assert_eq!(parse_go_bool("T"), Some(true));
        assert_eq!(parse_go_bool("yes"), None);
    }

    #[tokio::test]
    async fn a_round_restores_recreates_and_removes_as_upstream() {
        use k1s_storage::{Backend, LocalStore, StoreConfig};
        let store: std::sync::Arc<dyn k1s_storage::Store> = std::sync::Arc::new(
            LocalStore::open(StoreConfig::new(Backend::Memory)).expect("memory store"),
        );
        let registry = Registry::new(store);
        ensure(&registry).await.expect("first round");
        let schemas = target("flowcontrol.apiserver.k8s.io", "flowschemas", None).expect("t");
        let strategy = crate::strategies::for_resource(schemas.info);
        let edit = |name: &'static str, precedence: i64, annotation: Option<&'static str>| {
            let registry = registry.clone();
            async move {
                registry
                    .update(
                        schemas,
                        strategy,
                        name,
                        None,
                        &WriteOptions::default(),
                        |cur| {
                            let mut new = cur.clone();
                            new["spec"]["matchingPrecedence"] = json!(precedence);
                            if let Some(a) = annotation {
                                new["metadata"]["annotations"][AUTOUPDATE] = json!(a);
                            }
                            Ok(new)
                        },
                    )
                    .await
                    .expect("edited")
            }
        };
        // A suggested schema left to auto-update, one its owner opted out, a mandatory one.
        edit("global-default", 5000, None).await;
        edit("service-accounts", 6000, Some("false")).await;
        edit("exempt", 2, Some("false")).await;
        registry
            .delete(schemas, "probes", &DeleteOptions::default())
            .await
            .expect("deleted");
        // An object of an earlier release, annotated to auto-update, and a user's own.
        for (name, annotations) in [
            ("retired", json!({ AUTOUPDATE: "true" })),
            ("mine", json!({})),
        ] {
            let mut obj = suggested_schemas().remove(0);
            obj["metadata"]["name"] = json!(name);
            obj["metadata"]["annotations"] = annotations;
            put_if_missing(&registry, schemas, obj)
                .await
                .expect("created");
        }
        ensure(&registry).await.expect("second round");
        let get = |name: &'static str| {
            let registry = registry.clone();
            async move { registry.get(schemas, name).await }
        };
        let precedence = |o: &Value| o["spec"]["matchingPrecedence"].as_i64();
        let restored = get("global-default").await.expect("kept");
        assert_eq!(precedence(&restored), Some(9900));
        assert_eq!(restored["metadata"]["generation"], 3, "{restored}");
        assert_eq!(
            precedence(&get("service-accounts").await.expect("kept")),
            Some(6000)
        );
        let exempt = get("exempt").await.expect("kept");
        assert_eq!(precedence(&exempt), Some(1));
        assert_eq!(exempt["metadata"]["annotations"][AUTOUPDATE], "true");
        assert!(
            get("probes").await.is_ok(),
            "a missing suggested schema is created again"
        );
        assert!(get("retired").await.is_err_and(|e| e.is_not_found()));
        assert!(
            get("mine").await.is_ok(),
            "objects without the annotation stay"
        );
    }

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
