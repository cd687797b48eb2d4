//! Tests of the log options, container defaulting and the synthetic log.

use serde_json::json;

use super::*;

fn q(pairs: &[(&str, &str)]) -> Query {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn log_options_parse_and_validate_as_upstream() {
    let o = LogOptions::parse(&q(&[
        ("container", "c"),
        ("follow", "true"),
        ("previous", "false"),
        ("timestamps", "1"),
        ("tailLines", "0"),
        ("limitBytes", "10"),
        ("sinceSeconds", "5"),
    ]))
    .expect("valid");
    assert_eq!(
        o,
        LogOptions {
            container: Some("c".into()),
            follow: true,
            previous: false,
            timestamps: true,
            since_seconds: Some(5),
            since_time: None,
            tail_lines: Some(0),
            limit_bytes: Some(10),
        }
    );
    assert_eq!(
        LogOptions::parse(&q(&[])).expect("empty"),
        LogOptions::default()
    );
    let errs = |pairs: &[(&str, &str)]| -> Vec<String> {
        LogOptions::parse(&q(pairs))
            .expect_err("invalid")
            .iter()
            .map(|e| e.body())
            .collect()
    };
    assert_eq!(
        errs(&[("tailLines", "-1")]),
        ["Invalid value: -1: must be greater than or equal to 0"]
    );
    assert_eq!(
        errs(&[("limitBytes", "0")]),
        ["Invalid value: 0: must be greater than 0"]
    );
    assert_eq!(
        errs(&[("sinceSeconds", "0")]),
        ["Invalid value: 0: must be greater than 0"]
    );
    assert_eq!(
        errs(&[("sinceSeconds", "5"), ("sinceTime", "2026-01-01T00:00:00Z")]),
        ["Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"]
    );
    assert_eq!(errs(&[("tailLines", "x")]).len(), 1);
}

fn pod(containers: &[&str], init: &[&str]) -> Value {
    let c = |names: &[&str]| -> Vec<Value> {
        names
            .iter()
            .map(|n| json!({"name": n, "image": format!("img-{n}")}))
            .collect()
    };
    json!({
        "metadata": {"name": "p", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"containers": c(containers), "initContainers": c(init), "nodeName": "n"},
    })
}

#[test]
fn containers_default_as_upstream() {
    assert_eq!(log_container(&pod(&["a"], &[]), None).expect("one"), "a");
    let msg = |r: Result<String, ApiError>| r.expect_err("error").message;
    assert_eq!(
        msg(log_container(&pod(&["a", "b"], &["i"]), None)),
        "a container name must be specified for pod p, choose one of: [i a b]"
    );
    assert_eq!(
        msg(log_container(&pod(&["a"], &[]), Some("zz"))),
        "container zz is not valid for pod p"
    );
    assert_eq!(
        log_container(&pod(&["a"], &["i"]), Some("i")).expect("init"),
        "i"
    );
    assert_eq!(
        msg(stream_container(&pod(&["a", "b"], &["i"]), None)),
        "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
    );
    assert_eq!(
        msg(stream_container(&pod(&["a", "b"], &[]), None)),
        "a container name must be specified for pod p, choose one of: [a b]"
    );
    assert_eq!(
        msg(log_container(&pod(&[], &[]), None)),
        "a container name must be specified for pod p"
    );
}

#[test]
fn waiting_and_previous_containers_have_no_logs() {
    let mut p = pod(&["a"], &[]);
    let msg = |r: Result<Option<jiff::Timestamp>, ApiError>| r.expect_err("error").message;
    p["status"] = json!({"phase": "Pending"});
    assert_eq!(
        msg(container_started(&p, "a", false)),
        "container \"a\" in pod \"p\" is waiting to start: ContainerCreating"
    );
    p["status"] = json!({"phase": "Pending", "containerStatuses": [
        {"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]});
    assert_eq!(
        msg(container_started(&p, "a", false)),
        "container \"a\" in pod \"p\" is waiting to start: trying and failing to pull image"
    );
    p["status"] = json!({"phase": "Running", "containerStatuses": [
        {"name": "a", "state": {"running": {"startedAt": "2026-01-02T00:00:00Z"}}}]});
    assert_eq!(
        container_started(&p, "a", false).expect("running"),
        Some("2026-01-02T00:00:00Z".parse().expect("ts"))
    );
    assert_eq!(
        msg(container_started(&p, "a", true)),
        "previous terminated container \"a\" in pod \"p\" not found"
    );
    p["status"]["containerStatuses"][0]["lastState"] =
        json!({"terminated": {"startedAt": "2026-01-01T12:00:00Z", "exitCode": 1}});
    assert_eq!(
        container_started(&p, "a", true).expect("previous"),
        Some("2026-01-01T12:00:00Z".parse().expect("ts"))
    );
}

#[test]
fn the_synthetic_log_renders_with_the_kubelet_options() {
    let started: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("ts");
    let lines = synthetic_log(
        &pod(&["a"], &[]),
        "a",
        &PodFacts::default(),
        "k1s-node-0",
        started,
    );
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0]
            .text
            .contains("container a of pod ns/p is simulated (image img-a)")
    );
    assert!(lines[1].text.contains("simulated node k1s-node-0"));
    let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().expect("ts");
    let all = String::from_utf8(render_log(&lines, &LogOptions::default(), now)).expect("utf8");
    assert_eq!(all.lines().count(), 2);
    assert!(all.ends_with('\n'));
    let opts = LogOptions {
        tail_lines: Some(1),
        timestamps: true,
        ..Default::default()
    };
    let tail = String::from_utf8(render_log(&lines, &opts, now)).expect("utf8");
    assert_eq!(tail.lines().count(), 1);
    assert!(
        tail.starts_with("2026-01-01T00:00:00.000000000Z k1s: it runs"),
        "{tail}"
    );
    let none = LogOptions {
        tail_lines: Some(0),
        ..Default::default()
    };
    assert!(render_log(&lines, &none, now).is_empty());
    let limited = LogOptions {
        limit_bytes: Some(3),
        ..Default::default()
    };
    assert_eq!(render_log(&lines, &limited, now), b"k1s");
    // sinceSeconds: both lines are ten minutes old.
    let recent = LogOptions {
        since_seconds: Some(60),
        ..Default::default()
    };
    assert!(render_log(&lines, &recent, now).is_empty());
    let older = LogOptions {
        since_seconds: Some(3600),
        ..Default::default()
    };
    assert_eq!(
        render_log(&lines, &older, now)
            .split(|b| *b == b'\n')
            .count(),
        3
    );
}

#[test]
fn only_pod_proxy_subresources_are_handled() {
    let req = |sub: Option<&str>, resource: &str| ResourceRequest {
        verb: Verb::Get,
        group: String::new(),
        version: "v1".into(),
        namespace: Some("ns".into()),
        resource: resource.into(),
        name: Some("p".into()),
        subresource: sub.map(str::to_string),
    };
    for sub in ["log", "exec", "attach", "portforward"] {
        assert!(handles(&req(Some(sub), "pods")), "{sub}");
    }
    assert!(!handles(&req(Some("status"), "pods")));
    assert!(!handles(&req(None, "pods")));
    assert!(!handles(&req(Some("log"), "services")));
}
