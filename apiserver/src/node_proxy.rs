//! What upstream proxies to a node's kubelet: the pod subresources `pods/log`, `pods/exec`,
//! `pods/attach`, `pods/portforward`, and `nodes/<name>[:port]/proxy/<path>`. k1s runs no
//! kubelet: a pod on a simulated node (annotation `sim.k1s.io/node: "simulated"`) logs what its
//! command writes when that is known (`echo`, `date`), else a short synthetic log; the streaming subresources answer a Status saying nothing runs there, and a
//! simulated node answers the kubelet's `healthz`, `logs/` (an empty listing) and `pods`; any
//! other node is unreachable.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use k1s_apimachinery::catalog;
use k1s_apimachinery::quantity::Quantity;
use k1s_apimachinery::simulated_command;
use k1s_apimachinery::simulated_command::pod::{self as pod_sandbox, PodFacts, PodSandbox};
use k1s_apimachinery::status::FieldError;
use k1s_apimachinery::{ApiError, GroupResource};
use serde_json::Value;

use crate::context::ApiContext;
use crate::registry::{ListQuery, Target};
use crate::request::{Query, ResourceRequest, Verb};
use crate::response::error_response;

/// The annotation that marks a Node as simulated by k1s.
pub const SIMULATED_ANNOTATION: &str = "sim.k1s.io/node";

/// The subresources served here.
pub const SUBRESOURCES: [&str; 4] = ["log", "exec", "attach", "portforward"];

/// True when the request is for one of the kubelet-proxied pod subresources, or a node's proxy.
pub fn handles(r: &ResourceRequest) -> bool {
    let sub = r.subresource.as_deref();
    r.group.is_empty()
        && r.name.is_some()
        && match r.resource.as_str() {
            "pods" => sub.is_some_and(|s| SUBRESOURCES.contains(&s)),
            "nodes" => sub == Some("proxy"),
            _ => false,
        }
}

/// Serves a request [`handles`] accepts; `path` is the request's URL path.
pub async fn serve(
    ctx: &ApiContext,
    r: &ResourceRequest,
    query: &Query,
    path: &str,
    req: Request,
) -> Response {
    let served = if r.resource == "nodes" {
        serve_node(ctx, r, path).await
    } else {
        serve_inner(ctx, r, query, req).await
    };
    match served {
        Ok(resp) => resp,
        Err(e) => error_response(&e),
    }
}

/// `nodes/<name>[:port]/proxy/<path>`: a simulated node answers what a kubelet serves there
/// that needs no process; other paths are the kubelet's 404.
async fn serve_node(
    ctx: &ApiContext,
    r: &ResourceRequest,
    path: &str,
) -> Result<Response, ApiError> {
    if !matches!(r.verb, Verb::Get) {
        return Err(ApiError::method_not_allowed(
            &GroupResource::new("", "nodes/proxy"),
            r.verb.as_str(),
        ));
    }
    let name = r.name.as_deref().unwrap_or_default();
    // `name:port` names the kubelet's port; k1s answers for the node whatever the port.
    let node = name.split_once(':').map_or(name, |(n, _)| n);
    let kubelet_path = path
        .split_once("/proxy")
        .map_or("", |(_, rest)| rest.trim_start_matches('/'));
    match node_kind(ctx, node).await? {
        NodeKind::Real(node) => Err(unreachable_kubelet(&node)),
        NodeKind::Simulated(node) => Ok(match kubelet_path.trim_end_matches('/') {
            "healthz" => text_response(StatusCode::OK, "text/plain; charset=utf-8", "ok".into()),
            // The kubelet lists /var/log; nothing writes there on a simulated node.
            "logs" => text_response(
                StatusCode::OK,
                "text/html; charset=utf-8",
                "<pre>\n</pre>\n".into(),
            ),
            "pods" => {
                let pods = catalog::find("", "v1", "pods").ok_or_else(ApiError::not_found_path)?;
                let list = ctx
                    .registry
                    .list(
                        Target {
                            info: pods,
                            namespace: None,
                        },
                        &crate::registry::ListQuery::default(),
                    )
                    .await?;
                let items: Vec<Value> = list
                    .items
                    .into_iter()
                    .filter(|p| str_at(p, "/spec/nodeName") == node)
                    .collect();
                let body = serde_json::json!({"kind": "PodList", "apiVersion": "v1",
                    "metadata": {}, "items": items});
                text_response(StatusCode::OK, "application/json", body.to_string())
            }
            _ => text_response(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "404 page not found\n".into(),
            ),
        }),
    }
}

fn text_response(code: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    resp
}

async fn serve_inner(
    ctx: &ApiContext,
    r: &ResourceRequest,
    query: &Query,
    req: Request,
) -> Result<Response, ApiError> {
    let sub = r.subresource.as_deref().unwrap_or_default();
    let name = r.name.as_deref().unwrap_or_default();
    let gr = GroupResource::new("", format!("pods/{sub}"));
    // Upstream: log is get-only; exec/attach/portforward are connect (GET for websockets, POST).
    let allowed = match sub {
        "log" => r.verb == Verb::Get,
        _ => matches!(r.verb, Verb::Get | Verb::Create),
    };
    if !allowed {
        return Err(ApiError::method_not_allowed(&gr, r.verb.as_str()));
    }
    let Some(namespace) = r.namespace.as_deref() else {
        return Err(ApiError::not_found_path());
    };
    let pods = catalog::find("", "v1", "pods").ok_or_else(ApiError::not_found_path)?;
    let pod = ctx
        .registry
        .get(
            Target {
                info: pods,
                namespace: Some(namespace),
            },
            name,
        )
        .await?;
    match sub {
        "log" => {
            let opts = LogOptions::parse(query)
                .map_err(|errs| ApiError::invalid("PodLogOptions", "", name, errs))?;
            if stream::is_websocket(&req) {
                let body = log_body(ctx, &pod, &opts).await?;
                return Ok(stream::log(req, body.unwrap_or_default()).await);
            }
            serve_log(ctx, &pod, opts).await
        }
        "exec" => {
            let commands =
                crate::request::url_decode_values(req.uri().query().unwrap_or(""), "command");
            if commands.is_empty() {
                return Err(ApiError::bad_request("you must specify at least 1 command"));
            }
            let container = stream_container(&pod, query.get("container").map(String::as_str))?;
            if !matches!(node_of(ctx, &pod).await, Ok(Some(NodeKind::Simulated(_)))) {
                return Err(connect_error(ctx, &pod, sub, query).await);
            }
            let result = exec_in(ctx, &pod, &container, commands).await;
            Ok(stream::exec(req, result).await)
        }
        _ => Err(connect_error(ctx, &pod, sub, query).await),
    }
}

/// Runs an exec's command in a simulated container, when the container runs and the command
/// is one whose run is known.
async fn exec_in(
    ctx: &ApiContext,
    pod: &Value,
    container: &str,
    argv: Vec<String>,
) -> stream::ExecResult {
    let refused = |message: String| stream::ExecResult::Refused(ApiError::bad_request(message));
    if still_running(pod, container).is_none()
        || !container_status(pod, container).is_some_and(|s| s["state"]["running"].is_object())
    {
        return refused(format!(
            "unable to upgrade connection: container not found (\"{container}\")"
        ));
    }
    let facts = pod_facts(ctx, pod).await;
    let Some(sandbox) = PodSandbox::new(pod, container, &facts) else {
        return refused(format!("container {container} not found"));
    };
    match simulated_command::outcome(argv.iter().map(String::as_str), &sandbox) {
        Some(run) if run.ends_after.is_some() => stream::ExecResult::Ran { argv, run },
        _ => refused(format!(
            "container {container} runs on a simulated node: k1s runs no process, and cannot \
             tell what {argv:?} would do (it knows commands such as echo, cat, env, test, id, \
             sh -c scripts of them and agnhost's test subcommands)"
        )),
    }
}

fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "initContainerStatuses",
        "containerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|f| pod["status"][*f].as_array())
    .flatten()
    .find(|s| s["name"].as_str() == Some(container))
}

/// `PodLogOptions` from the query, validated as upstream's `ValidatePodLogOptions`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LogOptions {
    pub container: Option<String>,
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    pub since_time: Option<jiff::Timestamp>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
}

fn parse_bool(v: &str) -> bool {
    matches!(v, "true" | "1" | "True" | "TRUE" | "t" | "T")
}

impl LogOptions {
    pub fn parse(query: &Query) -> Result<LogOptions, Vec<FieldError>> {
        let mut errs = Vec::new();
        let mut int = |key: &str| -> Option<i64> {
            let v = query.get(key)?;
            match v.parse::<i64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    errs.push(FieldError::invalid(key, v.as_str(), "must be an integer"));
                    None
                }
            }
        };
        let since_seconds = int("sinceSeconds");
        let tail_lines = int("tailLines");
        let limit_bytes = int("limitBytes");
        let since_time = match query.get("sinceTime") {
            Some(v) => match v.parse::<jiff::Timestamp>() {
                Ok(t) => Some(t),
                Err(_) => {
                    errs.push(FieldError::invalid(
                        "sinceTime",
                        v.as_str(),
                        "must be an RFC3339 time",
                    ));
                    None
                }
            },
            None => None,
        };
        if tail_lines.is_some_and(|n| n < 0) {
            errs.push(FieldError::invalid(
                "tailLines",
                tail_lines.unwrap_or_default(),
                "must be greater than or equal to 0",
            ));
        }
        if limit_bytes.is_some_and(|n| n < 1) {
            errs.push(FieldError::invalid(
                "limitBytes",
                limit_bytes.unwrap_or_default(),
                "must be greater than 0",
            ));
        }
        if since_seconds.is_some() && since_time.is_some() {
            errs.push(FieldError::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            ));
        }
        if since_seconds.is_some_and(|n| n < 1) {
            errs.push(FieldError::invalid(
                "sinceSeconds",
                since_seconds.unwrap_or_default(),
                "must be greater than 0",
            ));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(LogOptions {
            container: query.get("container").filter(|c| !c.is_empty()).cloned(),
            follow: query.get("follow").is_some_and(|v| parse_bool(v)),
            previous: query.get("previous").is_some_and(|v| parse_bool(v)),
            timestamps: query.get("timestamps").is_some_and(|v| parse_bool(v)),
            since_seconds,
            since_time,
            tail_lines,
            limit_bytes,
        })
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Container names in upstream's visiting order: init containers, containers, ephemeral ones.
fn all_container_names(pod: &Value) -> Vec<String> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|field| {
            pod["spec"][*field]
                .as_array()
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c["name"].as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect()
}

fn main_container_names(pod: &Value, field: &str) -> Vec<String> {
    pod["spec"][field]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The log's container, defaulted and checked as upstream's `validateContainer` (pod/strategy.go).
pub fn log_container(pod: &Value, requested: Option<&str>) -> Result<String, ApiError> {
    let name = str_at(pod, "/metadata/name");
    match requested {
        Some(c) if all_container_names(pod).iter().any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let containers = main_container_names(pod, "containers");
            match containers.len() {
                1 => Ok(containers[0].clone()),
                0 => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all_container_names(pod).join(" ")
                ))),
            }
        }
    }
}

/// The container of exec/attach, defaulted and checked as upstream's `streamLocation`.
pub fn stream_container(pod: &Value, requested: Option<&str>) -> Result<String, ApiError> {
    let name = str_at(pod, "/metadata/name");
    match requested {
        Some(c) if all_container_names(pod).iter().any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let containers = main_container_names(pod, "containers");
            match containers.len() {
                1 => Ok(containers[0].clone()),
                0 => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => {
                    let mut msg = format!(
                        "a container name must be specified for pod {name}, choose one of: [{}]",
                        containers.join(" ")
                    );
                    let init = main_container_names(pod, "initContainers");
                    if !init.is_empty() {
                        msg.push_str(&format!(
                            " or one of the init containers: [{}]",
                            init.join(" ")
                        ));
                    }
                    Err(ApiError::bad_request(msg))
                }
            }
        }
    }
}

/// The pod's node, when it has one, and whether it is simulated.
enum NodeKind {
    Simulated(String),
    Real(String),
}

async fn node_of(ctx: &ApiContext, pod: &Value) -> Result<Option<NodeKind>, ApiError> {
    let node_name = str_at(pod, "/spec/nodeName");
    if node_name.is_empty() {
        return Ok(None);
    }
    node_kind(ctx, node_name).await.map(Some)
}

/// Whether the node is simulated (answered by k1s) or real (a kubelet k1s cannot reach).
async fn node_kind(ctx: &ApiContext, node_name: &str) -> Result<NodeKind, ApiError> {
    let nodes = catalog::find("", "v1", "nodes").ok_or_else(ApiError::not_found_path)?;
    let node = match ctx
        .registry
        .get(
            Target {
                info: nodes,
                namespace: None,
            },
            node_name,
        )
        .await
    {
        Ok(n) => n,
        // Upstream fails to find the node's kubelet address the same way.
        Err(e) if e.is_not_found() => {
            return Err(ApiError::not_found(
                &GroupResource::new("", "nodes"),
                node_name,
            ));
        }
        Err(e) => return Err(e),
    };
    let simulated = node
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(SIMULATED_ANNOTATION))
        .and_then(Value::as_str)
        == Some("simulated");
    Ok(if simulated {
        NodeKind::Simulated(node_name.to_string())
    } else {
        NodeKind::Real(node_name.to_string())
    })
}

fn unreachable_kubelet(node: &str) -> ApiError {
    ApiError::internal(format!(
        "k1s cannot reach the kubelet of node {node}: k1s proxies to no kubelet, and only \
         simulated nodes (annotation {SIMULATED_ANNOTATION}: simulated) are answered by k1s itself"
    ))
}

/// The error every exec/attach/portforward ends with: there is no process to connect to.
async fn connect_error(ctx: &ApiContext, pod: &Value, sub: &str, query: &Query) -> ApiError {
    let name = str_at(pod, "/metadata/name");
    let namespace = str_at(pod, "/metadata/namespace");
    if sub != "portforward"
        && let Err(e) = stream_container(pod, query.get("container").map(String::as_str))
    {
        return e;
    }
    match node_of(ctx, pod).await {
        Err(e) => e,
        Ok(None) => ApiError::bad_request(format!("pod {name} does not have a host assigned")),
        Ok(Some(NodeKind::Real(node))) => unreachable_kubelet(&node),
        Ok(Some(NodeKind::Simulated(node))) => ApiError::bad_request(format!(
            "pod {namespace}/{name} runs on simulated node {node}: {sub} is not supported; \
             nothing runs there"
        )),
    }
}

/// When the container (re)started, or why it has not: from its status, as the kubelet decides.
fn container_started(
    pod: &Value,
    container: &str,
    previous: bool,
) -> Result<Option<jiff::Timestamp>, ApiError> {
    let pod_name = str_at(pod, "/metadata/name");
    let status = ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|f| pod["status"][*f].as_array())
        .flatten()
        .find(|s| s["name"].as_str() == Some(container));
    let ts = |v: &Value| v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok());
    let Some(status) = status else {
        // No status reported yet: a running pod (status written by hand) counts as started.
        return match str_at(pod, "/status/phase") {
            "Running" | "Succeeded" | "Failed" if !previous => Ok(ts(&pod["status"]["startTime"])),
            _ if previous => Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "container \"{container}\" in pod \"{pod_name}\" is waiting to start: ContainerCreating"
            ))),
        };
    };
    if previous {
        let last = &status["lastState"]["terminated"];
        return if last.is_object() {
            Ok(ts(&last["startedAt"]))
        } else {
            Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
            )))
        };
    }
    let state = &status["state"];
    if state["running"].is_object() {
        return Ok(ts(&state["running"]["startedAt"]));
    }
    if state["terminated"].is_object() {
        return Ok(ts(&state["terminated"]["startedAt"]));
    }
    if status["lastState"]["terminated"].is_object() {
        return Ok(ts(&status["lastState"]["terminated"]["startedAt"]));
    }
    let reason = state["waiting"]["reason"].as_str().unwrap_or_default();
    Err(ApiError::bad_request(match reason {
        "ErrImagePull" => format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start: image can't be pulled"
        ),
        "ImagePullBackOff" => format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start: trying and failing to pull image"
        ),
        "" => format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start - no logs yet"
        ),
        r => format!("container \"{container}\" in pod \"{pod_name}\" is waiting to start: {r}"),
    }))
}

fn container_image(pod: &Value, container: &str) -> String {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|f| pod["spec"][*f].as_array())
        .flatten()
        .find(|c| c["name"].as_str() == Some(container))
        .and_then(|c| c["image"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// What the node knows of a pod beyond the pod, looked up as the kubelet would: the
/// ConfigMaps and Secrets it references, the services whose links go into its environment and
/// its node's allocatable resources.
async fn pod_facts(ctx: &ApiContext, pod: &Value) -> PodFacts {
    let ns = str_at(pod, "/metadata/namespace");
    let (config_maps, secrets) = pod_sandbox::referenced_objects(pod);
    let mut objects = pod_sandbox::Objects::default();
    for name in config_maps {
        if let Some(data) = object_data(ctx, ns, "configmaps", &name).await {
            objects.config_maps.insert(name, data);
        }
    }
    for name in secrets {
        if let Some(data) = object_data(ctx, ns, "secrets", &name).await {
            objects.secrets.insert(name, data);
        }
    }
    let mut services = Vec::new();
    if let Some(info) = catalog::find("", "v1", "services") {
        for namespace in [ns, "default"] {
            let target = Target {
                info,
                namespace: Some(namespace),
            };
            let Ok(list) = ctx.registry.list(target, &ListQuery::default()).await else {
                continue;
            };
            services.extend(list.items.iter().map(service_link));
        }
    }
    let mut allocatable = std::collections::BTreeMap::new();
    let node = str_at(pod, "/spec/nodeName");
    if let Some(info) = catalog::find("", "v1", "nodes")
        && !node.is_empty()
        && let Ok(n) = ctx
            .registry
            .get(
                Target {
                    info,
                    namespace: None,
                },
                node,
            )
            .await
    {
        for (k, v) in n["status"]["allocatable"].as_object().into_iter().flatten() {
            if let Some(q) = v.as_str().and_then(Quantity::parse) {
                allocatable.insert(k.clone(), q);
            }
        }
    }
    PodFacts {
        objects: Some(objects),
        services,
        allocatable,
    }
}

fn service_link(svc: &Value) -> pod_sandbox::ServiceLink {
    pod_sandbox::ServiceLink {
        namespace: str_at(svc, "/metadata/namespace").to_string(),
        name: str_at(svc, "/metadata/name").to_string(),
        cluster_ip: str_at(svc, "/spec/clusterIP").to_string(),
        ports: svc["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or_default().to_string(),
                    p["port"].as_i64().unwrap_or_default(),
                    p["protocol"].as_str().unwrap_or("TCP").to_string(),
                )
            })
            .collect(),
    }
}

/// A ConfigMap's data and binaryData, or a Secret's data, as text; `None` when it cannot be
/// read.
async fn object_data(
    ctx: &ApiContext,
    ns: &str,
    resource: &str,
    name: &str,
) -> Option<std::collections::BTreeMap<String, String>> {
    use base64::Engine as _;
    let info = catalog::find("", "v1", resource)?;
    let target = Target {
        info,
        namespace: Some(ns),
    };
    let obj = ctx.registry.get(target, name).await.ok()?;
    let decode = |v: &str| {
        let bytes = base64::engine::general_purpose::STANDARD.decode(v).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    };
    let mut out = std::collections::BTreeMap::new();
    let encoded = if resource == "secrets" {
        "data"
    } else {
        "binaryData"
    };
    for (k, v) in obj[encoded].as_object().into_iter().flatten() {
        if let Some(text) = v.as_str().and_then(decode) {
            out.insert(k.clone(), text);
        }
    }
    if resource == "configmaps" {
        for (k, v) in obj["data"].as_object().into_iter().flatten() {
            out.insert(k.clone(), v.as_str().unwrap_or_default().to_string());
        }
    }
    Some(out)
}

/// One synthetic log line and when it was "written".
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub at: jiff::Timestamp,
    pub text: String,
}

/// The synthetic log of a simulated container.
pub fn synthetic_log(
    pod: &Value,
    container: &str,
    facts: &PodFacts,
    node: &str,
    started: jiff::Timestamp,
) -> Vec<LogLine> {
    // A command whose run is known (`echo hi`, `date; echo done`, `env`, agnhost's `mounttest`)
    // logs what it writes, when it writes it.
    let run = PodSandbox::new(pod, container, facts).and_then(|sandbox| {
        let argv = sandbox.argv();
        simulated_command::outcome(argv.iter().map(String::as_str), &sandbox)
    });
    if let Some(run) = run {
        let now = jiff::Timestamp::now();
        return run
            .output
            .into_iter()
            .filter_map(|o| {
                let after = jiff::SignedDuration::from_secs_f64(o.after_seconds);
                let at = started.checked_add(after).ok().filter(|at| *at <= now)?;
                let text = simulated_command::line_text(&o.line, started, o.after_seconds);
                Some(LogLine { at, text })
            })
            .collect();
    }
    let ns = str_at(pod, "/metadata/namespace");
    let name = str_at(pod, "/metadata/name");
    let image = container_image(pod, container);
    let started_s = started.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    vec![
        LogLine {
            at: started,
            text: format!(
                "k1s: container {container} of pod {ns}/{name} is simulated (image {image})"
            ),
        },
        LogLine {
            at: started,
            text: format!(
                "k1s: it runs on simulated node {node}, started at {started_s}; no process runs, \
                 so this is all it logs"
            ),
        },
    ]
}

/// Applies `sinceSeconds`/`sinceTime`, `tailLines`, `timestamps` and `limitBytes` as the kubelet.
pub fn render_log(lines: &[LogLine], opts: &LogOptions, now: jiff::Timestamp) -> Vec<u8> {
    let since = match (opts.since_seconds, opts.since_time) {
        (Some(s), _) => now.checked_sub(jiff::SignedDuration::from_secs(s)).ok(),
        (None, Some(t)) => Some(t),
        _ => None,
    };
    let kept: Vec<&LogLine> = lines
        .iter()
        .filter(|l| since.is_none_or(|s| l.at >= s))
        .collect();
    let skip = match opts.tail_lines {
        Some(n) => kept.len().saturating_sub(usize::try_from(n).unwrap_or(0)),
        None => 0,
    };
    let mut out = Vec::new();
    for l in &kept[skip..] {
        if opts.timestamps {
            out.extend_from_slice(
                l.at.strftime("%Y-%m-%dT%H:%M:%S.%9fZ")
                    .to_string()
                    .as_bytes(),
            );
            out.push(b' ');
        }
        out.extend_from_slice(l.text.as_bytes());
        out.push(b'\n');
    }
    if let Some(limit) = opts.limit_bytes.and_then(|l| usize::try_from(l).ok()) {
        out.truncate(limit);
    }
    out
}

/// The log as the kubelet would send it now; `None` for a pod without a node (upstream sends
/// nothing).
async fn log_body(
    ctx: &ApiContext,
    pod: &Value,
    opts: &LogOptions,
) -> Result<Option<Vec<u8>>, ApiError> {
    let container = log_container(pod, opts.container.as_deref())?;
    let node = match node_of(ctx, pod).await? {
        None => return Ok(None),
        Some(NodeKind::Real(node)) => return Err(unreachable_kubelet(&node)),
        Some(NodeKind::Simulated(node)) => node,
    };
    let started = container_started(pod, &container, opts.previous)?
        .or_else(|| {
            str_at(pod, "/metadata/creationTimestamp")
                .parse::<jiff::Timestamp>()
                .ok()
        })
        .unwrap_or_else(jiff::Timestamp::now);
    let facts = pod_facts(ctx, pod).await;
    let lines = synthetic_log(pod, &container, &facts, &node, started);
    Ok(Some(render_log(&lines, opts, jiff::Timestamp::now())))
}

async fn serve_log(ctx: &ApiContext, pod: &Value, opts: LogOptions) -> Result<Response, ApiError> {
    let Some(body) = log_body(ctx, pod, &opts).await? else {
        return Ok(text_stream(Body::empty()));
    };
    let container = log_container(pod, opts.container.as_deref())?;
    if !opts.follow || opts.previous {
        return Ok(text_stream(Body::from(body)));
    }
    // follow: the stream stays open until the container stops running, the pod goes away (or is
    // replaced), the server shuts down or the client hangs up (the body is then dropped).
    let registry = ctx.registry.clone();
    let shutdown = ctx.shutdown.clone();
    let ns = str_at(pod, "/metadata/namespace").to_string();
    let name = str_at(pod, "/metadata/name").to_string();
    let uid = str_at(pod, "/metadata/uid").to_string();
    let first =
        futures::stream::once(async move { Ok::<Bytes, std::io::Error>(Bytes::from(body)) });
    let rest = futures::stream::unfold(
        (registry, shutdown, ns, name, uid, container),
        |(registry, mut shutdown, ns, name, uid, container)| async move {
            // Nothing more is ever written: the stream only waits for its end.
            let end: Option<(Result<Bytes, std::io::Error>, FollowState)> = loop {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = shutdown.changed() => break None,
                }
                if *shutdown.borrow() {
                    break None;
                }
                let Some(info) = catalog::find("", "v1", "pods") else {
                    break None;
                };
                let target = Target {
                    info,
                    namespace: Some(&ns),
                };
                let pod = match registry.get(target, &name).await {
                    Ok(p) => p,
                    Err(e) if e.is_not_found() => break None,
                    Err(_) => continue,
                };
                if str_at(&pod, "/metadata/uid") != uid || still_running(&pod, &container).is_none()
                {
                    break None;
                }
            };
            end
        },
    );
    use futures::StreamExt;
    Ok(text_stream(Body::from_stream(first.chain(rest))))
}

type FollowState = (
    crate::registry::Registry,
    tokio::sync::watch::Receiver<bool>,
    String,
    String,
    String,
    String,
);

/// `Some(())` while the container may still write (not terminated, pod not finished).
fn still_running(pod: &Value, container: &str) -> Option<()> {
    if matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed") {
        return None;
    }
    if pod["metadata"]["deletionTimestamp"].is_string() {
        return None;
    }
    let terminated = ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|f| pod["status"][*f].as_array())
        .flatten()
        .find(|s| s["name"].as_str() == Some(container))
        .is_some_and(|s| s["state"]["terminated"].is_object());
    (!terminated).then_some(())
}

fn text_stream(body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    resp
}

mod stream;
#[cfg(test)]
mod tests;
