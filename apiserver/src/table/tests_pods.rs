//! Tests: exact pod cells (READY, STATUS reason logic, RESTARTS, wide cells) as upstream prints them.

use serde_json::{Value, json};

use super::row_cells;
use super::tests::{ago, now};

fn cells(group: &str, resource: &str, obj: &Value) -> Vec<Value> {
    row_cells(group, resource, obj, now())
}

fn running(name: &str, restarts: i64, last_finished: Option<String>) -> Value {
    let mut status = json!({
        "name": name, "image": "nginx:1.25", "ready": true, "started": true,
        "restartCount": restarts, "state": {"running": {"startedAt": ago(300)}},
    });
    if let Some(finished) = last_finished {
        status["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error",
            "startedAt": ago(900), "finishedAt": finished}});
    }
    status
}

fn pod_with(spec: Value, status: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "creationTimestamp": ago(51 * 3600)},
        "spec": spec,
        "status": status,
    })
}

fn two_containers() -> Value {
    json!({"nodeName": "node-1", "containers": [
        {"name": "app", "image": "nginx:1.25"}, {"name": "sidecar", "image": "envoy:1.30"}]})
}

#[test]
fn running_pod_with_restarts() {
    let pod = pod_with(
        two_containers(),
        json!({"phase": "Running", "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [running("app", 3, Some(ago(300))), running("sidecar", 1, Some(ago(7200)))]}),
    );
    assert_eq!(
        cells("", "pods", &pod),
        [
            json!("web-1"),
            json!("2/2"),
            json!("Running"),
            json!("4 (5m ago)"),
            json!("2d3h"),
            json!("10.244.0.5"),
            json!("node-1"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn pending_unscheduled_pod() {
    let pod = pod_with(
        json!({"containers": [{"name": "app", "image": "nginx"}]}),
        json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable"}]}),
    );
    let c = cells("", "pods", &pod);
    assert_eq!(
        c,
        [
            json!("web-1"),
            json!("0/1"),
            json!("Pending"),
            json!("0"),
            json!("2d3h"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn waiting_containers_show_their_reason() {
    let waiting = |reason: &str, restarts: i64| {
        json!({"name": "app", "ready": false, "restartCount": restarts,
            "state": {"waiting": {"reason": reason}},
            "lastState": {"terminated": {"exitCode": 2, "finishedAt": ago(40)}}})
    };
    let spec = json!({"containers": [{"name": "app", "image": "nginx"}]});
    let crash = pod_with(
        spec.clone(),
        json!({"phase": "Running", "containerStatuses": [waiting("CrashLoopBackOff", 5)]}),
    );
    let c = cells("", "pods", &crash);
    assert_eq!(
        (&c[1], &c[2], &c[3]),
        (
            &json!("0/1"),
            &json!("CrashLoopBackOff"),
            &json!("5 (40s ago)")
        )
    );
    let creating = pod_with(
        spec,
        json!({"phase": "Pending", "containerStatuses": [{"name": "app", "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}}]}),
    );
    let c = cells("", "pods", &creating);
    assert_eq!((&c[2], &c[3]), (&json!("ContainerCreating"), &json!("0")));
}

#[test]
fn terminating_and_lost_pods() {
    let mut pod = pod_with(
        two_containers(),
        json!({"phase": "Running", "containerStatuses": [running("app", 0, None), running("sidecar", 0, None)]}),
    );
    pod["metadata"]["deletionTimestamp"] = json!(ago(-30));
    assert_eq!(cells("", "pods", &pod)[2], "Terminating");
    pod["status"]["reason"] = json!("NodeLost");
    assert_eq!(cells("", "pods", &pod)[2], "Unknown");
    // A finished pod being deleted keeps its terminal status.
    let mut done = pod_with(
        json!({"containers": [{"name": "app"}]}),
        json!({"phase": "Succeeded", "containerStatuses": [{"name": "app", "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
    );
    done["metadata"]["deletionTimestamp"] = json!(ago(0));
    assert_eq!(cells("", "pods", &done)[2], "Completed");
}

#[test]
fn completed_and_failed_containers() {
    let terminated = |t: Value| {
        pod_with(
            json!({"containers": [{"name": "app"}]}),
            json!({"phase": "Failed", "containerStatuses": [{"name": "app", "restartCount": 0,
                "state": {"terminated": t}}]}),
        )
    };
    let c = cells(
        "",
        "pods",
        &terminated(json!({"exitCode": 0, "reason": "Completed"})),
    );
    assert_eq!((&c[1], &c[2]), (&json!("0/1"), &json!("Completed")));
    let c = cells(
        "",
        "pods",
        &terminated(json!({"exitCode": 137, "reason": "OOMKilled"})),
    );
    assert_eq!(c[2], "OOMKilled");
    assert_eq!(
        cells("", "pods", &terminated(json!({"exitCode": 3})))[2],
        "ExitCode:3"
    );
    assert_eq!(
        cells("", "pods", &terminated(json!({"exitCode": 0, "signal": 9})))[2],
        "Signal:9"
    );
}

#[test]
fn completed_container_next_to_a_running_one() {
    let status = |ready: &str| {
        json!({"phase": "Running", "conditions": [{"type": "Ready", "status": ready}],
            "containerStatuses": [
                running("app", 0, None),
                {"name": "sidecar", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]})
    };
    let c = cells("", "pods", &pod_with(two_containers(), status("True")));
    assert_eq!((&c[1], &c[2]), (&json!("1/2"), &json!("Running")));
    let c = cells("", "pods", &pod_with(two_containers(), status("False")));
    assert_eq!(c[2], "NotReady");
}

#[test]
fn init_containers() {
    let spec = json!({"initContainers": [{"name": "migrate"}, {"name": "seed"}],
        "containers": [{"name": "app"}]});
    let init = |statuses: Value| {
        pod_with(
            spec.clone(),
            json!({"phase": "Pending", "initContainerStatuses": statuses,
                "containerStatuses": [{"name": "app", "restartCount": 0,
                    "state": {"waiting": {"reason": "PodInitializing"}}}]}),
        )
    };
    let starting = init(json!([
        {"name": "migrate", "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}},
        {"name": "seed", "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]));
    assert_eq!(cells("", "pods", &starting)[2], "Init:0/2");
    let second = init(json!([
        {"name": "migrate", "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "seed", "restartCount": 0, "state": {"running": {}}}]));
    assert_eq!(cells("", "pods", &second)[2], "Init:1/2");
    let crashing = init(json!([
        {"name": "migrate", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(20)}}}]));
    let c = cells("", "pods", &crashing);
    assert_eq!(
        (&c[2], &c[3]),
        (&json!("Init:CrashLoopBackOff"), &json!("4 (20s ago)"))
    );
    let failed = init(json!([
        {"name": "migrate", "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]));
    assert_eq!(cells("", "pods", &failed)[2], "Init:Error");
    let signalled = init(json!([
        {"name": "migrate", "restartCount": 0, "state": {"terminated": {"exitCode": 1, "signal": 15}}}]));
    assert_eq!(cells("", "pods", &signalled)[2], "Init:Signal:15");
}

#[test]
fn sidecar_init_containers_count_as_containers() {
    let spec = json!({"initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
        "containers": [{"name": "app"}]});
    let pod = pod_with(
        spec,
        json!({"phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
            "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 2,
                "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(700)}}}],
            "containerStatuses": [running("app", 0, None)]}),
    );
    let c = cells("", "pods", &pod);
    assert_eq!(
        (&c[1], &c[2], &c[3]),
        (&json!("2/2"), &json!("Running"), &json!("2 (11m ago)"))
    );
}

#[test]
fn scheduling_gated_pod_and_readiness_gates() {
    let gated = pod_with(
        json!({"containers": [{"name": "app"}], "schedulingGates": [{"name": "wait"}]}),
        json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "SchedulingGated"}]}),
    );
    assert_eq!(cells("", "pods", &gated)[2], "SchedulingGated");
    let gates = pod_with(
        json!({"containers": [{"name": "app"}], "nodeName": "n",
            "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]}),
        json!({"phase": "Running", "nominatedNodeName": "n2", "podIPs": [{"ip": "fd00::5"}],
            "conditions": [{"type": "example.com/lb", "status": "True"},
                {"type": "example.com/dns", "status": "False"}]}),
    );
    let c = cells("", "pods", &gates);
    assert_eq!(
        &c[5..],
        [json!("fd00::5"), json!("n"), json!("n2"), json!("1/2")]
    );
}
