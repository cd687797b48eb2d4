//! ResourceQuota: computes what a write adds to a namespace's usage (object counts, pod compute
//! resources, service node ports, claimed storage), rejects it when a matching quota's `hard`
//! would be exceeded, and charges `status.used` of every matching quota with a
//! compare-and-swap update before the object is written, so concurrent writes never overshoot.
//!
//! k1s has no quota controller recalculating usage, so this plugin also seeds missing
//! `status.used` entries by counting what is stored, mirrors `spec.hard` into `status.hard`, and
//! releases an object's usage when it is deleted.

use std::collections::BTreeMap;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::{Map, Value};

use super::limitranger::{ResourceList, add_into, pod_totals, resource_list};
use super::quantity::Quantity;
use super::{AdmissionRequest, Operation};
use crate::registry::{Registry, Target, WriteOptions};
use crate::strategies;

/// One charge of one quota, kept so that a failed write can be undone.
#[derive(Debug, Clone)]
pub struct Charge {
    namespace: String,
    quota: String,
    delta: ResourceList,
}

/// Object-count names upstream keeps besides `count/<resource>`.
const LEGACY_COUNTS: [&str; 7] = [
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

fn ignored(info: &ResourceInfo) -> bool {
    matches!(
        info.group,
        "authorization.k8s.io" | "authentication.k8s.io" | "events.k8s.io"
    ) || (info.group.is_empty() && matches!(info.resource, "events" | "namespaces"))
}

fn count_name(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        format!("count/{}", info.resource)
    } else {
        format!("count/{}.{}", info.resource, info.group)
    }
}

/// Whether the evaluator of `info` tracks quota resource `name`.
fn covers(info: &ResourceInfo, name: &str) -> bool {
    if name == count_name(info) {
        return true;
    }
    match (info.group, info.resource) {
        ("", "pods") => {
            matches!(name, "pods" | "cpu" | "memory" | "ephemeral-storage")
                || name.starts_with("requests.")
                || name.starts_with("limits.")
        }
        ("", "services") => matches!(
            name,
            "services" | "services.nodeports" | "services.loadbalancers"
        ),
        ("", "persistentvolumeclaims") => {
            matches!(name, "persistentvolumeclaims" | "requests.storage")
                || name.contains(".storageclass.storage.k8s.io/")
        }
        ("", r) => LEGACY_COUNTS.contains(&r) && name == r,
        _ => false,
    }
}

fn is_terminal_pod(pod: &Value) -> bool {
    matches!(
        super::str_at(pod, &["status", "phase"]),
        Some("Succeeded" | "Failed")
    )
}

/// The usage an object contributes (upstream's evaluators' UsageFunc).
pub fn usage(info: &ResourceInfo, obj: &Value) -> ResourceList {
    let one = Quantity::from_int(1);
    let mut out = ResourceList::new();
    out.insert(count_name(info), one);
    match (info.group, info.resource) {
        ("", "pods") => {
            if is_terminal_pod(obj) {
                return out;
            }
            out.insert("pods".into(), one);
            let (requests, limits) = pod_totals(obj);
            for (k, v) in requests {
                match k.as_str() {
                    "cpu" | "memory" | "ephemeral-storage" => {
                        out.insert(k.clone(), v);
                        out.insert(format!("requests.{k}"), v);
                    }
                    _ => {
                        out.insert(format!("requests.{k}"), v);
                    }
                }
            }
            for (k, v) in limits {
                if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage")
                    || k.starts_with("hugepages-")
                {
                    out.insert(format!("limits.{k}"), v);
                }
            }
        }
        ("", "services") => {
            out.insert("services".into(), one);
            let ports = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map_or(0, Vec::len) as i64;
            match super::str_at(obj, &["spec", "type"]) {
                Some("NodePort") => {
                    out.insert("services.nodeports".into(), Quantity::from_int(ports));
                }
                Some("LoadBalancer") => {
                    let allocate = obj
                        .pointer("/spec/allocateLoadBalancerNodePorts")
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    let n = if allocate { ports } else { 0 };
                    out.insert("services.nodeports".into(), Quantity::from_int(n));
                    out.insert("services.loadbalancers".into(), one);
                }
                _ => {}
            }
        }
        ("", "persistentvolumeclaims") => {
            out.insert("persistentvolumeclaims".into(), one);
            let class = super::str_at(obj, &["spec", "storageClassName"]).unwrap_or("");
            if !class.is_empty() {
                out.insert(
                    format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"),
                    one,
                );
            }
            let requests = resource_list(obj.pointer("/spec/resources/requests"));
            if let Some(storage) = requests.get("storage") {
                out.insert("requests.storage".into(), *storage);
                if !class.is_empty() {
                    out.insert(
                        format!("{class}.storageclass.storage.k8s.io/requests.storage"),
                        *storage,
                    );
                }
            }
        }
        ("", r) if LEGACY_COUNTS.contains(&r) => {
            out.insert(r.to_string(), one);
        }
        _ => {}
    }
    out
}

/// Whether a quota's scopes select the object (only pods match scoped quotas).
fn scopes_match(info: &ResourceInfo, quota: &Value, obj: &Value) -> bool {
    let mut reqs: Vec<(String, String, Vec<String>)> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| (s.to_string(), "Exists".to_string(), Vec::new()))
        .collect();
    for e in quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        reqs.push((
            super::str_at(e, &["scopeName"]).unwrap_or("").into(),
            super::str_at(e, &["operator"]).unwrap_or("").into(),
            values,
        ));
    }
    if reqs.is_empty() {
        return true;
    }
    if !(info.group.is_empty() && info.resource == "pods") {
        return false;
    }
    reqs.iter().all(|(scope, op, values)| {
        let matched = match scope.as_str() {
            "Terminating" => obj
                .pointer("/spec/activeDeadlineSeconds")
                .and_then(Value::as_i64)
                .is_some_and(|s| s >= 0),
            "NotTerminating" => obj
                .pointer("/spec/activeDeadlineSeconds")
                .and_then(Value::as_i64)
                .is_none_or(|s| s < 0),
            "BestEffort" => is_best_effort(obj),
            "NotBestEffort" => !is_best_effort(obj),
            "CrossNamespacePodAffinity" => false,
            "PriorityClass" => {
                let class = super::str_at(obj, &["spec", "priorityClassName"]).unwrap_or("");
                return match op.as_str() {
                    "In" => values.iter().any(|v| v == class),
                    "NotIn" => !values.iter().any(|v| v == class),
                    "Exists" => !class.is_empty(),
                    "DoesNotExist" => class.is_empty(),
                    _ => false,
                };
            }
            _ => false,
        };
        if op == "DoesNotExist" {
            !matched
        } else {
            matched
        }
    })
}

fn is_best_effort(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().all(|f| {
        super::containers(pod, f).iter().all(|c| {
            ["requests", "limits"].iter().all(|k| {
                let list = resource_list(c.pointer(&format!("/resources/{k}")));
                !list.contains_key("cpu") && !list.contains_key("memory")
            })
        })
    })
}

/// Upstream's pod Constraints: quotas on cpu or memory need every container to state them.
fn pod_constraints(pod: &Value, restricted: &[String]) -> Option<String> {
    const VALIDATED: [&str; 6] = [
        "cpu",
        "memory",
        "requests.cpu",
        "requests.memory",
        "limits.cpu",
        "limits.memory",
    ];
    let required: Vec<&str> = restricted
        .iter()
        .map(String::as_str)
        .filter(|r| VALIDATED.contains(r))
        .collect();
    let mut missing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for field in ["containers", "initContainers"] {
        for c in super::containers(pod, field) {
            let requests = resource_list(c.pointer("/resources/requests"));
            let limits = resource_list(c.pointer("/resources/limits"));
            for r in &required {
                let present = match *r {
                    "cpu" | "requests.cpu" => requests.contains_key("cpu"),
                    "memory" | "requests.memory" => requests.contains_key("memory"),
                    "limits.cpu" => limits.contains_key("cpu"),
                    _ => limits.contains_key("memory"),
                };
                if !present {
                    let name = super::str_at(c, &["name"]).unwrap_or("").to_string();
                    missing.entry(r).or_default().push(name);
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .into_iter()
        .map(|(r, mut names)| {
            names.sort();
            names.dedup();
            format!("{r} for: {}", names.join(","))
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// `cpu=1,memory=1Gi`, sorted by name, as upstream's prettyPrint.
fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn quotas_info() -> Result<&'static ResourceInfo, ApiError> {
    super::info("", "v1", "resourcequotas")
}

/// The change in usage this request makes, and the object it concerns.
async fn delta(
    req: &AdmissionRequest<'_>,
    obj: &Value,
    old: Option<&Value>,
) -> Result<ResourceList, ApiError> {
    let info = req.info;
    match req.operation {
        Operation::Create => Ok(usage(info, obj)),
        Operation::Update => {
            let Some(old) = old else {
                return Ok(ResourceList::new());
            };
            if !matches!(info.resource, "services" | "persistentvolumeclaims")
                || !info.group.is_empty()
            {
                return Ok(ResourceList::new());
            }
            let before = usage(info, old);
            let mut out = ResourceList::new();
            for (k, v) in usage(info, obj) {
                let prev = before.get(&k).copied().unwrap_or_else(Quantity::zero);
                let d = v.sub(&prev);
                out.insert(k, if d.is_negative() { Quantity::zero() } else { d });
            }
            Ok(out)
        }
        Operation::Delete => {
            // Release what the stored object was charged, once (not again when a second
            // delete finishes a graceful deletion).
            let target = Target {
                info,
                namespace: req.namespace,
            };
            let current = match req.registry.get(target, req.name).await {
                Ok(o) => o,
                Err(e) if e.is_not_found() => return Ok(ResourceList::new()),
                Err(e) => return Err(e),
            };
            if current
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|t| !t.is_null())
            {
                return Ok(ResourceList::new());
            }
            Ok(usage(info, &current)
                .into_iter()
                .map(|(k, v)| (k, v.neg()))
                .collect())
        }
    }
}

pub async fn admit(
    req: &AdmissionRequest<'_>,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<Charge>, ApiError> {
    let ns = req.namespace().to_string();
    if ns.is_empty() || req.subresource.is_some_and(|s| !s.is_empty()) || ignored(req.info) {
        return Ok(Vec::new());
    }
    let delta = delta(req, obj, old).await?;
    if delta.values().all(Quantity::is_zero) {
        return Ok(Vec::new());
    }
    let quotas = super::list_all(req.registry, quotas_info()?, Some(&ns)).await?;
    let mut plan = Vec::new();
    for q in &quotas {
        let hard = resource_list(q.pointer("/spec/hard"));
        let restricted: Vec<String> = hard
            .keys()
            .filter(|k| covers(req.info, k))
            .cloned()
            .collect();
        if restricted.is_empty() || !scopes_match(req.info, q, obj) {
            continue;
        }
        let name = super::str_at(q, &["metadata", "name"])
            .unwrap_or("")
            .to_string();
        if req.operation == Operation::Create
            && req.is("", "pods")
            && let Some(msg) = pod_constraints(obj, &restricted)
        {
            return Err(req.forbidden(Some(obj), format!("failed quota: {name}: {msg}")));
        }
        let requested: ResourceList = delta
            .iter()
            .filter(|(k, _)| restricted.contains(k))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        if requested.values().all(Quantity::is_zero) {
            continue;
        }
        plan.push((name, requested));
    }
    let mut charges = Vec::new();
    for (name, requested) in plan {
        let charge = Charge {
            namespace: ns.clone(),
            quota: name,
            delta: requested,
        };
        match apply(req.registry, &charge, Some((req, obj)), req.dry_run).await {
            Ok(()) => {
                if !req.dry_run {
                    charges.push(charge);
                }
            }
            Err(e) => {
                rollback(req.registry, charges).await;
                return Err(e);
            }
        }
    }
    Ok(charges)
}

/// Current usage of the quota resources `keys` in a namespace, counted from storage (objects
/// being deleted have been released already).
async fn count_usage(
    registry: &Registry,
    info: &'static ResourceInfo,
    ns: &str,
    keys: &[String],
) -> Result<ResourceList, ApiError> {
    let mut total = ResourceList::new();
    for obj in super::list_all(registry, info, Some(ns)).await? {
        if obj
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            continue;
        }
        add_into(&mut total, &usage(info, &obj));
    }
    Ok(keys
        .iter()
        .map(|k| {
            (
                k.clone(),
                total.get(k).copied().unwrap_or_else(Quantity::zero),
            )
        })
        .collect())
}

/// Applies one charge (or its reversal) with a compare-and-swap retry loop on the quota.
/// `check` carries the request when `hard` must be enforced; `dry_run` checks without writing.
async fn apply(
    registry: &Registry,
    charge: &Charge,
    check: Option<(&AdmissionRequest<'_>, &Value)>,
    dry_run: bool,
) -> Result<(), ApiError> {
    let info = quotas_info()?;
    let target = Target {
        info,
        namespace: Some(&charge.namespace),
    };
    let current = registry.get(target, &charge.quota).await?;
    let used = resource_list(current.pointer("/status/used"));
    let missing: Vec<String> = charge
        .delta
        .keys()
        .filter(|k| !used.contains_key(*k))
        .cloned()
        .collect();
    let seed = match (missing.is_empty(), check) {
        (false, Some((req, _))) => {
            count_usage(registry, req.info, &charge.namespace, &missing).await?
        }
        _ => ResourceList::new(),
    };
    let build = |old: &Value| -> Result<Value, ApiError> {
        let hard = resource_list(old.pointer("/spec/hard"));
        let mut used = resource_list(old.pointer("/status/used"));
        for (k, v) in &seed {
            used.entry(k.clone()).or_insert(*v);
        }
        let mut exceeded = Vec::new();
        let mut new_used = used.clone();
        for (k, d) in &charge.delta {
            let cur = used.get(k).copied().unwrap_or_else(Quantity::zero);
            let mut next = cur.add(d);
            if next.is_negative() {
                next = Quantity::zero();
            }
            if check.is_some() && !d.is_negative() && hard.get(k).is_some_and(|h| next > *h) {
                exceeded.push(k.clone());
            }
            new_used.insert(k.clone(), next);
        }
        if let Some((req, obj)) = check
            && !exceeded.is_empty()
        {
            let mask = |list: &ResourceList| -> ResourceList {
                exceeded
                    .iter()
                    .map(|k| {
                        (
                            k.clone(),
                            list.get(k).copied().unwrap_or_else(Quantity::zero),
                        )
                    })
                    .collect()
            };
            return Err(req.forbidden(
                Some(obj),
                format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    charge.quota,
                    pretty(&mask(&charge.delta)),
                    pretty(&mask(&used)),
                    pretty(&mask(&hard)),
                ),
            ));
        }
        let mut new = old.clone();
        if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        let status = new
            .as_object_mut()
            .ok_or_else(|| ApiError::internal("stored quota is not an object"))?
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if !status.is_object() {
            *status = Value::Object(Map::new());
        }
        if let Some(h) = old.pointer("/spec/hard") {
            status["hard"] = h.clone();
        }
        let used_json = &mut status["used"];
        if !used_json.is_object() {
            *used_json = Value::Object(Map::new());
        }
        for (k, v) in &new_used {
            used_json[k.as_str()] = Value::String(v.to_string());
        }
        Ok(new)
    };
    if dry_run {
        return build(&current).map(|_| ());
    }
    registry
        .update(
            target,
            strategies::for_resource(info),
            &charge.quota,
            Some("status"),
            &WriteOptions::default(),
            build,
        )
        .await
        .map(|_| ())
}

/// Reverses charges (best effort: a quota that is gone needs nothing).
pub async fn rollback(registry: &Registry, charges: Vec<Charge>) {
    for c in charges {
        let reverse = Charge {
            delta: c.delta.iter().map(|(k, v)| (k.clone(), v.neg())).collect(),
            ..c
        };
        if let Err(e) = apply(registry, &reverse, None, false).await
            && !e.is_not_found()
        {
            tracing::warn!(quota = %reverse.quota, namespace = %reverse.namespace, error = %e.message, "quota rollback failed");
        }
    }
}
