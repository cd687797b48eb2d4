//! ResourceQuota: computes what a write adds to a namespace's usage (object counts, pod compute
//! resources, service node ports, claimed storage), rejects it when a matching quota's `hard`
//! would be exceeded, and charges `status.used` of every matching quota with a
//! compare-and-swap update before the object is written, so concurrent writes never overshoot.
//!
//! The usage arithmetic is `k1s_apimachinery::quota`, shared with the resourcequota controller,
//! which recalculates `status.used` from what exists. Beyond upstream, this plugin also seeds
//! missing `status.used` entries by counting what is stored, mirrors `spec.hard` into
//! `status.hard`, so quota works at once; as upstream, deletes release nothing here (an object
//! counts until it is gone) and the controller recalculates after them.

use std::collections::BTreeMap;

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::ResourceInfo;
use serde_json::{Map, Value};

use k1s_apimachinery::quota::{self as arith, ResourceList, add_into, resource_list};

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
        Operation::Create => Ok(arith::usage(info.group, info.resource, obj)),
        Operation::Update => {
            let Some(old) = old else {
                return Ok(ResourceList::new());
            };
            if !matches!(
                info.resource,
                "services" | "persistentvolumeclaims" | "pods"
            ) || !info.group.is_empty()
            {
                return Ok(ResourceList::new());
            }
            let before = arith::usage(info.group, info.resource, old);
            let mut out = ResourceList::new();
            for (k, v) in arith::usage(info.group, info.resource, obj) {
                let prev = before.get(&k).copied().unwrap_or_else(Quantity::zero);
                let d = v.sub(&prev);
                out.insert(k, if d.is_negative() { Quantity::zero() } else { d });
            }
            Ok(out)
        }
        // As upstream: a delete charges nothing and releases nothing here; the object counts
        // until it is gone, and the resourcequota controller then recalculates.
        Operation::Delete => Ok(ResourceList::new()),
    }
}

pub async fn admit(
    req: &AdmissionRequest<'_>,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Vec<Charge>, ApiError> {
    let ns = req.namespace().to_string();
    if ns.is_empty()
        || req.subresource.is_some_and(|s| !s.is_empty())
        || arith::ignored(req.info.group, req.info.resource)
    {
        return Ok(Vec::new());
    }
    let delta = delta(req, obj, old).await?;
    let may_change_scope = req.operation == Operation::Update && req.is("", "pods");
    if delta.values().all(Quantity::is_zero) && !may_change_scope {
        return Ok(Vec::new());
    }
    let quotas = super::list_all(req.registry, quotas_info()?, Some(&ns)).await?;
    let mut plan = Vec::new();
    for q in &quotas {
        let hard = resource_list(q.pointer("/spec/hard"));
        let restricted: Vec<String> = hard
            .keys()
            .filter(|k| arith::covers(req.info.group, req.info.resource, k))
            .cloned()
            .collect();
        if restricted.is_empty() || !arith::scopes_match(req.info.group, req.info.resource, q, obj)
        {
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
        // An update that brings the object into this quota's scopes (a pod given an active
        // deadline enters Terminating) is charged in full, as upstream since 1.33.
        let entered = req.operation == Operation::Update
            && old.is_some_and(|o| !arith::scopes_match(req.info.group, req.info.resource, q, o));
        let full;
        let charged = if entered {
            full = arith::usage(req.info.group, req.info.resource, obj);
            &full
        } else {
            &delta
        };
        let requested: ResourceList = charged
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

/// Current usage of the quota resources `keys` in a namespace, counted from storage.
async fn count_usage(
    registry: &Registry,
    info: &'static ResourceInfo,
    ns: &str,
    keys: &[String],
) -> Result<ResourceList, ApiError> {
    let mut total = ResourceList::new();
    for obj in super::list_all(registry, info, Some(ns)).await? {
        add_into(&mut total, &arith::usage(info.group, info.resource, &obj));
    }
    Ok(arith::mask_with_zero(&total, keys))
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
