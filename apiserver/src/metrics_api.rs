//! `metrics.k8s.io/v1beta1` served by k1s itself (what metrics-server serves through the
//! aggregator): NodeMetrics and PodMetrics, synthesized for Running pods on simulated nodes.
//!
//! A container's usage is the pod's `sim.k1s.io/cpu-usage` / `sim.k1s.io/memory-usage`
//! annotation when set, else a fraction of its requests (10% cpu, 50% memory, with small floors);
//! a node's usage is the sum of its pods plus a small base for the system.

use axum::response::Response;
use http::StatusCode;
use k1s_apimachinery::catalog;
use k1s_apimachinery::selector::{FieldSelector, LabelSelector};
use k1s_apimachinery::{ApiError, GroupResource};
use serde_json::{Value, json};

use crate::context::ApiContext;
use crate::discovery::ServedResource;
use crate::node_proxy::SIMULATED_ANNOTATION;
use crate::plugins::Quantity;
use crate::registry::{ListQuery, Target};
use crate::request::{Query, ResourceRequest, Verb};
use crate::response::{error_response, json_response};

pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";
pub const API_VERSION: &str = "metrics.k8s.io/v1beta1";
/// The APIService k1s registers for the group, as a metrics-server install does.
pub const API_SERVICE: &str = "v1beta1.metrics.k8s.io";
pub const CPU_ANNOTATION: &str = "sim.k1s.io/cpu-usage";
pub const MEMORY_ANNOTATION: &str = "sim.k1s.io/memory-usage";
/// metrics-server's default resolution: the window each sample covers.
pub const WINDOW: &str = "10s";

/// Floors for containers without requests (nanocores, bytes).
const CPU_FLOOR_NANOS: i128 = 1_000_000;
const MEMORY_FLOOR_BYTES: i128 = 4 * 1024 * 1024;
/// A simulated node's own usage (kubelet, runtime, system daemons).
const NODE_BASE_CPU_NANOS: i128 = 50_000_000;
const NODE_BASE_MEMORY_BYTES: i128 = 256 * 1024 * 1024;

/// The group's resources as discovery lists them (metrics-server's: get and list only).
pub fn served_resources() -> Vec<ServedResource> {
    let entry = |resource: &str, kind: &str, namespaced: bool| ServedResource {
        group: GROUP.into(),
        version: VERSION.into(),
        resource: resource.into(),
        singular: String::new(),
        kind: kind.into(),
        namespaced,
        verbs: vec!["get".into(), "list".into()],
        short_names: Vec::new(),
        categories: Vec::new(),
        storage_version_hash: None,
        subresources: Vec::new(),
    };
    vec![
        entry("nodes", "NodeMetrics", false),
        entry("pods", "PodMetrics", true),
    ]
}

/// The APIService object registered at start (served locally, hence always available).
pub fn api_service() -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": { "name": API_SERVICE, "labels": { "k8s-app": "metrics-server" } },
        "spec": { "group": GROUP, "version": VERSION, "groupPriorityMinimum": 100,
            "versionPriority": 100 },
        "status": { "conditions": [{ "type": "Available", "status": "True",
            "lastTransitionTime": crate::registry::now_rfc3339(), "reason": "Local",
            "message": "Local APIServices are always available" }] }
    })
}

/// True for requests into the group.
pub fn handles(r: &ResourceRequest) -> bool {
    r.group == GROUP
}

pub async fn serve(ctx: &ApiContext, r: &ResourceRequest, query: &Query) -> Response {
    match serve_inner(ctx, r, query).await {
        Ok(v) => json_response(StatusCode::OK, &v),
        Err(e) => error_response(&e),
    }
}

async fn serve_inner(
    ctx: &ApiContext,
    r: &ResourceRequest,
    query: &Query,
) -> Result<Value, ApiError> {
    if r.version != VERSION || r.subresource.is_some() {
        return Err(ApiError::not_found_path());
    }
    let (kind, gr) = match r.resource.as_str() {
        "nodes" if r.namespace.is_none() => ("NodeMetrics", GroupResource::new(GROUP, "nodes")),
        "pods" => ("PodMetrics", GroupResource::new(GROUP, "pods")),
        _ => return Err(ApiError::not_found_path()),
    };
    if !matches!(r.verb, Verb::Get | Verb::List) {
        return Err(ApiError::method_not_allowed(&gr, r.verb.as_str()));
    }
    let labels = match query.get("labelSelector") {
        Some(s) => LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => LabelSelector::everything(),
    };
    let fields = match query.get("fieldSelector") {
        Some(s) => FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => FieldSelector::everything(),
    };
    let now = jiff::Timestamp::now();
    let sample = Sample {
        timestamp: now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    };
    let simulated = simulated_nodes(ctx).await?;
    let items: Vec<Value> = if kind == "PodMetrics" {
        let pods = list(ctx, "pods", r.namespace.as_deref()).await?;
        pods.iter()
            .filter(|p| runs_simulated(p, &simulated.names))
            .map(|p| pod_metrics(p, &sample))
            .collect()
    } else {
        let pods = list(ctx, "pods", None).await?;
        simulated
            .nodes
            .iter()
            .map(|n| node_metrics(n, &pods, &sample))
            .collect()
    };
    if let Some(name) = &r.name {
        // metrics-server names namespaced misses `<ns>/<name>`.
        return items
            .into_iter()
            .find(|m| m["metadata"]["name"].as_str() == Some(name))
            .ok_or_else(|| {
                let missing = match &r.namespace {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name.clone(),
                };
                ApiError::not_found(&GroupResource::new(GROUP, &gr.resource), &missing)
            })
            .map(|mut m| {
                m["kind"] = json!(kind);
                m["apiVersion"] = json!(API_VERSION);
                m
            });
    }
    let items: Vec<Value> = items
        .into_iter()
        .filter(|m| {
            let empty = serde_json::Map::new();
            let l = m["metadata"]["labels"].as_object().unwrap_or(&empty);
            labels.matches(l)
                && fields.matches(|f| match f {
                    "metadata.name" => m["metadata"]["name"].as_str().map(str::to_string),
                    "metadata.namespace" => m["metadata"]["namespace"].as_str().map(str::to_string),
                    _ => None,
                })
        })
        .collect();
    Ok(json!({
        "kind": format!("{kind}List"), "apiVersion": API_VERSION,
        "metadata": {}, "items": items,
    }))
}

struct Sample {
    timestamp: String,
}

struct SimulatedNodes {
    nodes: Vec<Value>,
    names: Vec<String>,
}

async fn list(ctx: &ApiContext, resource: &str, ns: Option<&str>) -> Result<Vec<Value>, ApiError> {
    let info = catalog::find("", "v1", resource).ok_or_else(ApiError::not_found_path)?;
    let result = ctx
        .registry
        .list(
            Target {
                info,
                namespace: ns,
            },
            &ListQuery::default(),
        )
        .await?;
    Ok(result.items)
}

async fn simulated_nodes(ctx: &ApiContext) -> Result<SimulatedNodes, ApiError> {
    let nodes: Vec<Value> = list(ctx, "nodes", None)
        .await?
        .into_iter()
        .filter(is_simulated)
        .collect();
    let names = nodes
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    Ok(SimulatedNodes { nodes, names })
}

pub fn is_simulated(node: &Value) -> bool {
    node.pointer("/metadata/annotations")
        .and_then(|a| a.get(SIMULATED_ANNOTATION))
        .and_then(Value::as_str)
        == Some("simulated")
}

/// A Running pod bound to one of the simulated nodes.
fn runs_simulated(pod: &Value, simulated: &[String]) -> bool {
    pod["status"]["phase"].as_str() == Some("Running")
        && pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| simulated.iter().any(|s| s == n))
}

fn parse_quantity(v: Option<&Value>) -> Option<Quantity> {
    v.and_then(Value::as_str).and_then(Quantity::parse)
}

/// Nanocores of a cpu quantity, bytes of a memory quantity.
fn nanos(q: &Quantity) -> i128 {
    (q.as_f64() * 1e9).round() as i128
}

fn bytes(q: &Quantity) -> i128 {
    q.value()
}

/// One container's synthetic usage: (nanocores, bytes).
pub fn container_usage(pod: &Value, container: &Value) -> (i128, i128) {
    let annotations = &pod["metadata"]["annotations"];
    let requests = &container["resources"]["requests"];
    let cpu = match parse_quantity(annotations.get(CPU_ANNOTATION)) {
        Some(q) => nanos(&q).max(0),
        None => parse_quantity(requests.get("cpu"))
            .map(|q| nanos(&q) / 10)
            .unwrap_or(0)
            .max(CPU_FLOOR_NANOS),
    };
    let memory = match parse_quantity(annotations.get(MEMORY_ANNOTATION)) {
        Some(q) => bytes(&q).max(0),
        None => parse_quantity(requests.get("memory"))
            .map(|q| bytes(&q) / 2)
            .unwrap_or(0)
            .max(MEMORY_FLOOR_BYTES),
    };
    (cpu, memory)
}

/// metrics-server's formats: cpu in nanocores, memory in KiB (rounded up).
fn usage(cpu_nanos: i128, memory_bytes: i128) -> Value {
    let kib = (memory_bytes + 1023) / 1024;
    json!({ "cpu": format!("{cpu_nanos}n"), "memory": format!("{kib}Ki") })
}

fn pod_metrics(pod: &Value, sample: &Sample) -> Value {
    let containers: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let (cpu, mem) = container_usage(pod, c);
                    json!({ "name": c["name"], "usage": usage(cpu, mem) })
                })
                .collect()
        })
        .unwrap_or_default();
    let mut metadata = json!({
        "name": pod["metadata"]["name"], "namespace": pod["metadata"]["namespace"],
        "creationTimestamp": sample.timestamp,
    });
    if let Some(l) = pod["metadata"]["labels"].as_object() {
        metadata["labels"] = Value::Object(l.clone());
    }
    json!({
        "metadata": metadata, "timestamp": sample.timestamp, "window": WINDOW,
        "containers": containers,
    })
}

/// Sum of the running pods on the node plus the node's base usage.
pub fn node_usage(node_name: &str, pods: &[Value]) -> (i128, i128) {
    let names = [node_name.to_string()];
    pods.iter()
        .filter(|p| runs_simulated(p, &names))
        .flat_map(|p| {
            p["spec"]["containers"]
                .as_array()
                .map(|cs| cs.iter().map(|c| container_usage(p, c)).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .fold(
            (NODE_BASE_CPU_NANOS, NODE_BASE_MEMORY_BYTES),
            |(c, m), (dc, dm)| (c + dc, m + dm),
        )
}

fn node_metrics(node: &Value, pods: &[Value], sample: &Sample) -> Value {
    let name = node["metadata"]["name"].as_str().unwrap_or_default();
    let (cpu, mem) = node_usage(name, pods);
    let mut metadata = json!({ "name": name, "creationTimestamp": sample.timestamp });
    if let Some(l) = node["metadata"]["labels"].as_object() {
        metadata["labels"] = Value::Object(l.clone());
    }
    json!({
        "metadata": metadata, "timestamp": sample.timestamp, "window": WINDOW,
        "usage": usage(cpu, mem),
    })
}

#[cfg(test)]
mod tests;
