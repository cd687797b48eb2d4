//! Row cells of pods and the workload kinds (deployments, replica sets, stateful sets, daemon
//! sets, replication controllers, jobs, cron jobs, pod templates, PDBs, HPAs, controller revisions).

use jiff::Timestamp;
use serde_json::Value;

use super::format::{
    age, arr_at, condition_true, container_cells, deleting, format_label_selector, format_labels,
    get, human_duration, int_at, int_or_string, name, nanos_between, obj_at, opt_int, opt_str, or,
    parse_time, quantity, selector_string, since, since_ts, str_at,
};

/// `podutil.IsRestartableInitContainer`: an init container with `restartPolicy: Always`
/// (a sidecar).
fn is_sidecar(container: &Value) -> bool {
    str_at(container, &["restartPolicy"]) == "Always"
}

/// Keeps the later of two optional restart times (`lastRestartDate.Before(&t)` upstream).
fn later(current: Option<Timestamp>, candidate: Option<Timestamp>) -> Option<Timestamp> {
    match (current, candidate) {
        (Some(c), Some(t)) if c < t => Some(t),
        (None, t) => t,
        (c, _) => c,
    }
}

/// `lastState.terminated.finishedAt` when `lastState.terminated` is set.
fn last_termination(status: &Value) -> Option<Option<Timestamp>> {
    obj_at(status, &["lastState", "terminated"])
        .map(|_| parse_time(get(status, &["lastState", "terminated", "finishedAt"])))
}

/// `Signal:N` / `ExitCode:N` for a terminated state without a reason.
fn exit_reason(terminated: &Value, prefix: &str) -> String {
    let signal = int_at(terminated, &["signal"]);
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int_at(terminated, &["exitCode"]))
    }
}

/// Upstream's `printPod`: NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES.
pub(super) fn pod(obj: &Value, now: Timestamp) -> Vec<Value> {
    let empty = Value::Null;
    let spec = get(obj, &["spec"]).unwrap_or(&empty);
    let status = get(obj, &["status"]).unwrap_or(&empty);
    let conditions = arr_at(status, &["conditions"]);
    let init_specs = arr_at(spec, &["initContainers"]);

    let mut restarts: i64 = 0;
    let mut sidecar_restarts: i64 = 0;
    let mut total = arr_at(spec, &["containers"]).len();
    let mut ready = 0usize;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_sidecar_restart: Option<Timestamp> = None;

    let phase = str_at(status, &["phase"]);
    let mut reason = or(str_at(status, &["reason"]), phase);
    if conditions.iter().any(|c| {
        str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated"
    }) {
        reason = "SchedulingGated".to_string();
    }

    total += init_specs.iter().filter(|c| is_sidecar(c)).count();
    let sidecar_named = |n: &str| {
        init_specs
            .iter()
            .any(|c| str_at(c, &["name"]) == n && is_sidecar(c))
    };

    let mut initializing = false;
    for (i, cs) in arr_at(status, &["initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let count = int_at(cs, &["restartCount"]);
        restarts += count;
        if let Some(finished) = last_termination(cs) {
            last_restart = later(last_restart, finished);
        }
        let sidecar = sidecar_named(str_at(cs, &["name"]));
        if sidecar {
            sidecar_restarts += count;
            if let Some(finished) = last_termination(cs) {
                last_sidecar_restart = later(last_sidecar_restart, finished);
            }
        }
        let terminated = get(cs, &["state", "terminated"]);
        let waiting_reason = opt_str(cs, &["state", "waiting", "reason"]).unwrap_or("");
        match terminated {
            Some(t) if int_at(t, &["exitCode"]) == 0 => continue,
            _ if sidecar && get(cs, &["started"]).and_then(Value::as_bool) == Some(true) => {
                if get(cs, &["ready"]).and_then(Value::as_bool) == Some(true) {
                    ready += 1;
                }
                continue;
            }
            Some(t) => {
                let r = str_at(t, &["reason"]);
                reason = if r.is_empty() {
                    exit_reason(t, "Init:")
                } else {
                    format!("Init:{r}")
                };
            }
            None if get(cs, &["state", "waiting"]).is_some()
                && !waiting_reason.is_empty()
                && waiting_reason != "PodInitializing" =>
            {
                reason = format!("Init:{waiting_reason}");
            }
            None => reason = format!("Init:{i}/{}", init_specs.len()),
        }
        initializing = true;
        break;
    }

    let initialized = conditions
        .iter()
        .find(|c| str_at(c, &["type"]) == "Initialized")
        .is_some_and(|c| str_at(c, &["status"]) == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for cs in arr_at(status, &["containerStatuses"]).iter().rev() {
            restarts += int_at(cs, &["restartCount"]);
            if let Some(finished) = last_termination(cs) {
                last_restart = later(last_restart, finished);
            }
            let waiting = get(cs, &["state", "waiting"]);
            let terminated = get(cs, &["state", "terminated"]);
            let waiting_reason = waiting.map_or("", |w| str_at(w, &["reason"]));
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                let r = str_at(t, &["reason"]);
                reason = if r.is_empty() {
                    exit_reason(t, "")
                } else {
                    r.to_string()
                };
            } else if get(cs, &["ready"]).and_then(Value::as_bool) == Some(true)
                && get(cs, &["state", "running"]).is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if condition_true_any(conditions, "Ready") {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    if deleting(obj) && str_at(status, &["reason"]) == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting(obj) && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".to_string();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", since_ts(t, now)),
        _ => restarts.to_string(),
    };

    let mut pod_ip = str_at(status, &["podIP"]);
    if pod_ip.is_empty() {
        pod_ip = arr_at(status, &["podIPs"])
            .first()
            .map_or("", |ip| str_at(ip, &["ip"]));
    }
    let gates = arr_at(spec, &["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| condition_true(conditions, str_at(g, &["conditionType"])))
            .count();
        format!("{true_count}/{}", gates.len())
    };

    cells![
        name(obj),
        format!("{ready}/{total}"),
        reason,
        restarts_cell,
        age(obj, now),
        or(pod_ip, "<none>"),
        or(str_at(spec, &["nodeName"]), "<none>"),
        or(str_at(status, &["nominatedNodeName"]), "<none>"),
        readiness_gates,
    ]
}

/// `hasPodReadyCondition`: any `Ready` condition that is `True`.
fn condition_true_any(conditions: &[Value], cond_type: &str) -> bool {
    conditions
        .iter()
        .any(|c| str_at(c, &["type"]) == cond_type && str_at(c, &["status"]) == "True")
}

/// The row conditions upstream attaches to pods: `Completed` for succeeded and failed pods.
pub(super) fn pod_row_conditions(obj: &Value) -> Option<Value> {
    let (reason, message) = match str_at(obj, &["status", "phase"]) {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(serde_json::json!([{
        "type": "Completed",
        "status": "True",
        "reason": reason,
        "message": message,
    }]))
}

/// The containers of the pod template at `path` (e.g. `spec.template`).
fn template_containers<'a>(obj: &'a Value, path: &[&str]) -> &'a [Value] {
    let mut p = path.to_vec();
    p.extend_from_slice(&["spec", "containers"]);
    arr_at(obj, &p)
}

/// `spec.replicas`, defaulted to 1 as the API server defaults it.
fn desired_replicas(obj: &Value) -> i64 {
    opt_int(obj, &["spec", "replicas"]).unwrap_or(1)
}

pub(super) fn pod_template(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(obj, &["template"]));
    cells![
        name(obj),
        names,
        images,
        format_labels(get(obj, &["template", "metadata", "labels"])),
    ]
}

pub(super) fn pod_disruption_budget(obj: &Value, now: Timestamp) -> Vec<Value> {
    let bound = |field: &str| get(obj, &["spec", field]).map_or("N/A".to_string(), int_or_string);
    cells![
        name(obj),
        bound("minAvailable"),
        bound("maxUnavailable"),
        int_at(obj, &["status", "disruptionsAllowed"]),
        age(obj, now),
    ]
}

pub(super) fn replication_controller(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(obj, &["spec", "template"]));
    cells![
        name(obj),
        desired_replicas(obj),
        int_at(obj, &["status", "replicas"]),
        int_at(obj, &["status", "readyReplicas"]),
        age(obj, now),
        names,
        images,
        format_labels(get(obj, &["spec", "selector"])),
    ]
}

pub(super) fn replica_set(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(obj, &["spec", "template"]));
    cells![
        name(obj),
        desired_replicas(obj),
        int_at(obj, &["status", "replicas"]),
        int_at(obj, &["status", "readyReplicas"]),
        age(obj, now),
        names,
        images,
        format_label_selector(get(obj, &["spec", "selector"])),
    ]
}

pub(super) fn daemon_set(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(obj, &["spec", "template"]));
    cells![
        name(obj),
        int_at(obj, &["status", "desiredNumberScheduled"]),
        int_at(obj, &["status", "currentNumberScheduled"]),
        int_at(obj, &["status", "numberReady"]),
        int_at(obj, &["status", "updatedNumberScheduled"]),
        int_at(obj, &["status", "numberAvailable"]),
        format_labels(get(obj, &["spec", "template", "spec", "nodeSelector"])),
        age(obj, now),
        names,
        images,
        format_label_selector(get(obj, &["spec", "selector"])),
    ]
}

pub(super) fn stateful_set(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(obj, &["spec", "template"]));
    cells![
        name(obj),
        format!(
            "{}/{}",
            int_at(obj, &["status", "readyReplicas"]),
            desired_replicas(obj)
        ),
        age(obj, now),
        names,
        images,
    ]
}

pub(super) fn deployment(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(obj, &["spec", "template"]));
    let selector = selector_string(get(obj, &["spec", "selector"]))
        .unwrap_or_else(|()| "<invalid>".to_string());
    cells![
        name(obj),
        format!(
            "{}/{}",
            int_at(obj, &["status", "readyReplicas"]),
            desired_replicas(obj)
        ),
        int_at(obj, &["status", "updatedReplicas"]),
        int_at(obj, &["status", "availableReplicas"]),
        age(obj, now),
        names,
        images,
        selector,
    ]
}

pub(super) fn job(obj: &Value, now: Timestamp) -> Vec<Value> {
    let succeeded = int_at(obj, &["status", "succeeded"]);
    let completions = match opt_int(obj, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{c}"),
        None => {
            let parallelism = opt_int(obj, &["spec", "parallelism"]).unwrap_or(1);
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    };
    let start = parse_time(get(obj, &["status", "startTime"]));
    let completion = parse_time(get(obj, &["status", "completionTime"]));
    let duration = match (start, completion) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(nanos_between(s, now)),
        (Some(s), Some(c)) => human_duration(nanos_between(s, c)),
    };
    let conditions = arr_at(obj, &["status", "conditions"]);
    let status = if condition_true(conditions, "Complete") {
        "Complete"
    } else if condition_true(conditions, "Failed") {
        "Failed"
    } else if deleting(obj) {
        "Terminating"
    } else if condition_true(conditions, "Suspended") {
        "Suspended"
    } else if condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = container_cells(template_containers(obj, &["spec", "template"]));
    cells![
        name(obj),
        status,
        completions,
        duration,
        age(obj, now),
        names,
        images,
        format_label_selector(get(obj, &["spec", "selector"])),
    ]
}

pub(super) fn cron_job(obj: &Value, now: Timestamp) -> Vec<Value> {
    let last_schedule = match get(obj, &["status", "lastScheduleTime"]) {
        Some(t) => since(Some(t), now),
        None => "<none>".to_string(),
    };
    // `suspend` defaults to false, so only a non-boolean value prints `<unset>`.
    let suspend = match get(obj, &["spec", "suspend"]) {
        None => "False".to_string(),
        Some(v) => v
            .as_bool()
            .map_or_else(|| "<unset>".to_string(), super::format::print_bool),
    };
    let template = ["spec", "jobTemplate", "spec", "template"];
    let (names, images) = container_cells(template_containers(obj, &template));
    cells![
        name(obj),
        str_at(obj, &["spec", "schedule"]),
        opt_str(obj, &["spec", "timeZone"]).unwrap_or("<none>"),
        suspend,
        super::format::len_at(obj, &["status", "active"]),
        last_schedule,
        age(obj, now),
        names,
        images,
        format_label_selector(get(obj, &["spec", "jobTemplate", "spec", "selector"])),
    ]
}

pub(super) fn controller_revision(obj: &Value, now: Timestamp) -> Vec<Value> {
    let controller = arr_at(obj, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| get(r, &["controller"]).and_then(Value::as_bool) == Some(true));
    let controller_name = match controller {
        None => "<none>".to_string(),
        Some(r) => {
            let api_version = str_at(r, &["apiVersion"]);
            let kind = str_at(r, &["kind"]);
            let ref_name = str_at(r, &["name"]);
            let group = match api_version.split('/').collect::<Vec<_>>().as_slice() {
                [_] => Some(""),
                [g, _] => Some(*g),
                _ => None,
            };
            match group {
                None => "<invalid>".to_string(),
                Some("") if kind.is_empty() => ref_name.to_string(),
                Some("") => format!("{}/{ref_name}", kind.to_lowercase()),
                Some(g) => format!("{}.{}/{ref_name}", kind.to_lowercase(), g.to_lowercase()),
            }
        }
    };
    cells![
        name(obj),
        controller_name,
        int_at(obj, &["revision"]),
        age(obj, now),
    ]
}

/// One HPA metric target as upstream's `formatHPAMetrics` prints it.
fn hpa_metric(spec: &Value, status: Option<&Value>) -> String {
    let unknown = || "<unknown>".to_string();
    let q = |v: &Value, path: &[&str]| quantity(get(v, path));
    match str_at(spec, &["type"]) {
        kind @ ("External" | "Object") => {
            let key = if kind == "External" {
                "external"
            } else {
                "object"
            };
            let st = status.and_then(|s| get(s, &[key]));
            if get(spec, &[key, "target", "averageValue"]).is_some() {
                let current = st
                    .filter(|s| get(s, &["current", "averageValue"]).is_some())
                    .map_or_else(unknown, |s| q(s, &["current", "averageValue"]));
                format!(
                    "{current}/{} (avg)",
                    q(spec, &[key, "target", "averageValue"])
                )
            } else {
                let current = st.map_or_else(unknown, |s| q(s, &["current", "value"]));
                format!("{current}/{}", q(spec, &[key, "target", "value"]))
            }
        }
        "Pods" => {
            let current = status
                .and_then(|s| get(s, &["pods"]))
                .map_or_else(unknown, |s| q(s, &["current", "averageValue"]));
            format!("{current}/{}", q(spec, &["pods", "target", "averageValue"]))
        }
        kind @ ("Resource" | "ContainerResource") => {
            let key = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let st = status.and_then(|s| get(s, &[key]));
            let resource = str_at(spec, &[key, "name"]);
            if get(spec, &[key, "target", "averageValue"]).is_some() {
                let current = st.map_or_else(unknown, |s| q(s, &["current", "averageValue"]));
                format!(
                    "{resource}: {current}/{}",
                    q(spec, &[key, "target", "averageValue"])
                )
            } else {
                let current = st
                    .and_then(|s| opt_int(s, &["current", "averageUtilization"]))
                    .map_or_else(unknown, |u| format!("{u}%"));
                let target = opt_int(spec, &[key, "target", "averageUtilization"])
                    .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                format!("{resource}: {current}/{target}")
            }
        }
        _ => "<unknown type>".to_string(),
    }
}

/// The metrics of an HPA in the internal (v2) shape: `spec.metrics`, or an `autoscaling/v1`
/// `targetCPUUtilizationPercentage`, or the server's default of 80% CPU.
fn hpa_targets(obj: &Value) -> String {
    let specs = arr_at(obj, &["spec", "metrics"]);
    let statuses = arr_at(obj, &["status", "currentMetrics"]);
    let (specs, statuses): (Vec<Value>, Vec<Value>) = if !specs.is_empty() {
        (specs.to_vec(), statuses.to_vec())
    } else {
        let target = opt_int(obj, &["spec", "targetCPUUtilizationPercentage"]).unwrap_or(80);
        let spec = serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": target}}});
        let status = opt_int(obj, &["status", "currentCPUUtilizationPercentage"]).map(|u| {
            serde_json::json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": u}}})
        });
        (vec![spec], status.into_iter().collect())
    };
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| hpa_metric(s, statuses.get(i)))
        .collect();
    const MAX: usize = 2;
    if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    }
}

pub(super) fn horizontal_pod_autoscaler(obj: &Value, now: Timestamp) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        str_at(obj, &["spec", "scaleTargetRef", "kind"]),
        str_at(obj, &["spec", "scaleTargetRef", "name"])
    );
    let min_pods =
        opt_int(obj, &["spec", "minReplicas"]).map_or("<unset>".to_string(), |m| m.to_string());
    cells![
        name(obj),
        reference,
        hpa_targets(obj),
        min_pods,
        int_at(obj, &["spec", "maxReplicas"]),
        int_at(obj, &["status", "currentReplicas"]),
        age(obj, now),
    ]
}
