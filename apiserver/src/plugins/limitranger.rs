//! LimitRanger: applies the `default` / `defaultRequest` of a namespace's LimitRanges to the
//! containers of new Pods, and enforces `min`, `max` and `maxLimitRequestRatio` per Container,
//! per Pod and per PersistentVolumeClaim, with upstream's messages.

use k1s_apimachinery::ApiError;
use serde_json::{Map, Value};

use super::quantity::Quantity;
use super::{AdmissionRequest, Operation};
pub use k1s_apimachinery::quota::{ResourceList, container_resources, pod_totals, resource_list};

/// One `spec.limits[]` item with upstream's LimitRangeItem defaulting applied.
struct Item {
    kind: String,
    min: ResourceList,
    max: ResourceList,
    default: ResourceList,
    default_request: ResourceList,
    ratio: ResourceList,
}

fn items(limit_range: &Value) -> Vec<Item> {
    let limits = limit_range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    limits
        .iter()
        .map(|l| {
            let mut item = Item {
                kind: l.get("type").and_then(Value::as_str).unwrap_or("").into(),
                min: resource_list(l.get("min")),
                max: resource_list(l.get("max")),
                default: resource_list(l.get("default")),
                default_request: resource_list(l.get("defaultRequest")),
                ratio: resource_list(l.get("maxLimitRequestRatio")),
            };
            if item.kind == "Container" {
                for (k, v) in &item.max {
                    item.default.entry(k.clone()).or_insert(*v);
                }
                for (k, v) in &item.default {
                    item.default_request.entry(k.clone()).or_insert(*v);
                }
                for (k, v) in &item.min {
                    item.default_request.entry(k.clone()).or_insert(*v);
                }
            }
            item
        })
        .collect()
}

fn supports(req: &AdmissionRequest<'_>) -> bool {
    (req.is("", "pods") && req.operation == Operation::Create)
        || (req.is("", "persistentvolumeclaims") && req.operation != Operation::Delete)
}

async fn limit_ranges(req: &AdmissionRequest<'_>) -> Result<Vec<Value>, ApiError> {
    let ns = req.namespace();
    if ns.is_empty() {
        return Ok(Vec::new());
    }
    let info = super::info("", "v1", "limitranges")?;
    super::list_all(req.registry, info, Some(ns)).await
}

/// Mutating half: default requests and limits of pod containers.
pub async fn admit(req: &AdmissionRequest<'_>, pod: &mut Value) -> Result<(), ApiError> {
    if !supports(req) || !req.is("", "pods") {
        return Ok(());
    }
    for lr in limit_ranges(req).await? {
        let mut limits = ResourceList::new();
        let mut requests = ResourceList::new();
        for item in items(&lr).into_iter().filter(|i| i.kind == "Container") {
            requests.extend(item.default_request);
            limits.extend(item.default);
        }
        let mut notes = Vec::new();
        for (field, label) in [
            ("containers", "container"),
            ("initContainers", "init container"),
        ] {
            for c in super::containers_mut(pod, field) {
                merge_container(c, &requests, &limits, label, &mut notes);
            }
        }
        if !notes.is_empty()
            && let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut)
        {
            let annotations = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if !annotations.is_object() {
                *annotations = Value::Object(Map::new());
            }
            annotations["kubernetes.io/limit-ranger"] =
                Value::String(format!("LimitRanger plugin set: {}", notes.join("; ")));
        }
    }
    Ok(())
}

fn merge_container(
    c: &mut Value,
    requests: &ResourceList,
    limits: &ResourceList,
    label: &str,
    notes: &mut Vec<String>,
) {
    let Some(obj) = c.as_object_mut() else { return };
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let resources = obj
        .entry("resources")
        .or_insert_with(|| Value::Object(Map::new()));
    if !resources.is_object() {
        *resources = Value::Object(Map::new());
    }
    let mut set = |field: &str, defaults: &ResourceList| -> Vec<String> {
        let mut added = Vec::new();
        if defaults.is_empty() {
            return added;
        }
        let list = &mut resources[field];
        if !list.is_object() {
            *list = Value::Object(Map::new());
        }
        for (k, v) in defaults {
            if list.get(k).is_none() {
                list[k.as_str()] = Value::String(v.to_string());
                added.push(k.clone());
            }
        }
        added
    };
    let set_limits = set("limits", limits);
    let set_requests = set("requests", requests);
    if !set_requests.is_empty() {
        notes.push(format!(
            "{} request for {label} {name}",
            set_requests.join(", ")
        ));
    }
    if !set_limits.is_empty() {
        notes.push(format!(
            "{} limit for {label} {name}",
            set_limits.join(", ")
        ));
    }
}

/// Validating half: min / max / ratio constraints.
pub async fn validate(req: &AdmissionRequest<'_>, obj: &Value) -> Result<(), ApiError> {
    if !supports(req) {
        return Ok(());
    }
    let is_pod = req.is("", "pods");
    let mut errs = Vec::new();
    for lr in limit_ranges(req).await? {
        if is_pod {
            validate_pod(&items(&lr), obj, &mut errs);
        } else {
            validate_pvc(&items(&lr), obj, &mut errs);
        }
    }
    match k1s_apimachinery::status::aggregate_message(&errs) {
        None => Ok(()),
        Some(msg) => Err(req.forbidden(Some(obj), msg)),
    }
}

fn validate_pod(items: &[Item], pod: &Value, errs: &mut Vec<String>) {
    for item in items {
        match item.kind.as_str() {
            "Container" => {
                for field in ["containers", "initContainers"] {
                    for c in super::containers(pod, field) {
                        let (requests, limits) = container_resources(c);
                        check(item, &requests, &limits, errs);
                    }
                }
            }
            "Pod" => {
                let (requests, limits) = pod_totals(pod);
                check(item, &requests, &limits, errs);
            }
            _ => {}
        }
    }
}

fn validate_pvc(items: &[Item], pvc: &Value, errs: &mut Vec<String>) {
    let requests = resource_list(pvc.pointer("/spec/resources/requests"));
    for item in items.iter().filter(|i| i.kind == "PersistentVolumeClaim") {
        for (k, v) in &item.min {
            min_constraint(&item.kind, k, v, &requests, &ResourceList::new(), errs);
        }
        for (k, v) in &item.max {
            match requests.get(k) {
                None => errs.push(format!(
                    "maximum {k} usage per {} is {v}.  No request is specified",
                    item.kind
                )),
                Some(r) if r.milli_value() > v.milli_value() => errs.push(format!(
                    "maximum {k} usage per {} is {v}, but request is {r}",
                    item.kind
                )),
                Some(_) => {}
            }
        }
    }
}

fn check(item: &Item, requests: &ResourceList, limits: &ResourceList, errs: &mut Vec<String>) {
    let t = item.kind.as_str();
    for (k, v) in &item.min {
        min_constraint(t, k, v, requests, limits, errs);
    }
    for (k, v) in &item.max {
        match (limits.get(k), requests.get(k)) {
            (None, _) => errs.push(format!(
                "maximum {k} usage per {t} is {v}.  No limit is specified"
            )),
            (Some(l), _) if l.milli_value() > v.milli_value() => errs.push(format!(
                "maximum {k} usage per {t} is {v}, but limit is {l}"
            )),
            (_, Some(r)) if r.milli_value() > v.milli_value() => errs.push(format!(
                "maximum {k} usage per {t} is {v}, but request is {r}"
            )),
            _ => {}
        }
    }
    for (k, v) in &item.ratio {
        let r = requests.get(k).map_or(0, Quantity::milli_value);
        let l = limits.get(k).map_or(0, Quantity::milli_value);
        if r == 0 {
            errs.push(format!(
                "{k} max limit to request ratio per {t} is {v}, but no request is specified or request is 0"
            ));
        } else if l == 0 {
            errs.push(format!(
                "{k} max limit to request ratio per {t} is {v}, but no limit is specified or limit is 0"
            ));
        } else {
            let observed = l as f64 / r as f64;
            if observed * 1000.0 > v.milli_value() as f64 {
                errs.push(format!(
                    "{k} max limit to request ratio per {t} is {v}, but provided ratio is {observed:.6}"
                ));
            }
        }
    }
}

fn min_constraint(
    t: &str,
    k: &str,
    v: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
    errs: &mut Vec<String>,
) {
    match (requests.get(k), limits.get(k)) {
        (None, _) => errs.push(format!(
            "minimum {k} usage per {t} is {v}.  No request is specified"
        )),
        (Some(r), _) if r.milli_value() < v.milli_value() => errs.push(format!(
            "minimum {k} usage per {t} is {v}, but request is {r}"
        )),
        (_, Some(l)) if l.milli_value() < v.milli_value() => errs.push(format!(
            "minimum {k} usage per {t} is {v}, but limit is {l}"
        )),
        _ => {}
    }
}
