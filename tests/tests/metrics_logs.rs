//! Pod logs/exec/port-forward on simulated nodes, metrics.k8s.io (`kubectl top`) and the
//! horizontal pod autoscaler, through kubectl against `k1s server --nodes 0`: the test plays the
//! node itself (a Node annotated `sim.k1s.io/node: simulated`, pod status written through
//! `/status`).

use std::time::Duration;

use k1s_tests::{Kubectl, StartOptions, TestCluster, fails, stderr, wait_until};

const WAIT: Duration = Duration::from_secs(60);

fn start(extra: &[&str]) -> TestCluster {
    let mut extra_args = vec![
        "--nodes".to_string(),
        "0".into(),
        "--disable-scheduler".into(),
    ];
    extra_args.extend(extra.iter().map(|s| s.to_string()));
    TestCluster::start_with(StartOptions {
        extra_args,
        ..Default::default()
    })
}

const NODES: &str = "\
apiVersion: v1
kind: Node
metadata:
  name: sim-0
  labels: {tier: sim}
  annotations: {sim.k1s.io/node: simulated}
status:
  capacity: {cpu: '4', memory: 8Gi, pods: '110'}
  allocatable: {cpu: '4', memory: 8Gi, pods: '110'}
---
apiVersion: v1
kind: Node
metadata:
  name: real-0
";

/// A pod bound to `node` with the given containers (`name=cpu-request` pairs).
fn pod_yaml(name: &str, node: &str, containers: &[(&str, &str)], annotations: &str) -> String {
    let mut y = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{app: {name}}}\n  annotations: {{{annotations}}}\nspec:\n"
    );
    if !node.is_empty() {
        y.push_str(&format!("  nodeName: {node}\n"));
    }
    y.push_str("  containers:\n");
    for (c, cpu) in containers {
        y.push_str(&format!(
            "  - name: {c}\n    image: registry.k8s.io/pause:3.10\n    resources: {{requests: {{cpu: {cpu}, memory: 64Mi}}}}\n"
        ));
    }
    y
}

/// Marks a pod Running and Ready (started well before now), as a kubelet would.
fn run_pod(c: &TestCluster, name: &str, containers: &[&str]) {
    let statuses: Vec<String> = containers
        .iter()
        .map(|n| format!(
            r#"{{"name":"{n}","ready":true,"restartCount":0,"image":"registry.k8s.io/pause:3.10","imageID":"","started":true,"state":{{"running":{{"startedAt":"2026-01-01T00:00:00Z"}}}}}}"#
        ))
        .collect();
    let patch = format!(
        r#"{{"status":{{"phase":"Running","startTime":"2026-01-01T00:00:00Z","conditions":[{{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}}],"containerStatuses":[{}]}}}}"#,
        statuses.join(",")
    );
    c.kubectl_ok(&[
        "patch",
        "pod",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

#[test]
fn logs_exec_port_forward_and_top_on_simulated_nodes() {
    let c = start(&[]);
    c.apply(NODES);
    c.apply(&pod_yaml(
        "one",
        "sim-0",
        &[("app", "200m")],
        "sim.k1s.io/cpu-usage: 300m",
    ));
    c.apply(&pod_yaml(
        "two",
        "sim-0",
        &[("a", "100m"), ("b", "100m")],
        "",
    ));
    c.apply(&pod_yaml("elsewhere", "real-0", &[("app", "100m")], ""));
    c.apply(&pod_yaml("unbound", "", &[("app", "100m")], ""));
    c.apply(&pod_yaml("starting", "sim-0", &[("app", "100m")], ""));
    run_pod(&c, "one", &["app"]);
    run_pod(&c, "two", &["a", "b"]);
    run_pod(&c, "elsewhere", &["app"]);

    // logs: the synthetic log names the pod, container, image and node.
    let log = c.kubectl_ok(&["logs", "one"]);
    assert!(
        log.contains("container app of pod default/one is simulated"),
        "{log}"
    );
    assert!(log.contains("registry.k8s.io/pause:3.10"), "{log}");
    assert!(log.contains("simulated node sim-0"), "{log}");
    assert!(log.contains("2026-01-01T00:00:00Z"), "{log}");
    let tail = c.kubectl_ok(&["logs", "one", "--tail=1", "--timestamps"]);
    assert_eq!(tail.lines().count(), 1, "{tail}");
    assert!(
        tail.starts_with("2026-01-01T00:00:00.000000000Z "),
        "{tail}"
    );
    let limited = c.kubectl_ok(&["logs", "one", "--limit-bytes=5"]);
    assert_eq!(limited, "k1s: ");
    let since = c.kubectl_ok(&["logs", "one", "--since=1h"]);
    assert_eq!(since, "", "nothing was logged in the last hour");
    let b = c.kubectl_ok(&["logs", "two", "-c", "b"]);
    assert!(b.contains("container b of pod default/two"), "{b}");
    let err = fails(&["logs"], c.kubectl(&["logs", "two", "-c", "zz"]));
    assert!(
        err.contains("container zz is not valid for pod two"),
        "{err}"
    );
    // The server's own defaulting (kubectl defaults the container itself, so ask directly).
    let raw = c.kubectl(&["get", "--raw", "/api/v1/namespaces/default/pods/two/log"]);
    let err = stderr(&raw);
    assert!(
        err.contains("a container name must be specified for pod two, choose one of: [a b]"),
        "{err}"
    );
    let err = fails(&["logs"], c.kubectl(&["logs", "starting"]));
    assert!(
        err.contains(
            "container \"app\" in pod \"starting\" is waiting to start: ContainerCreating"
        ),
        "{err}"
    );
    let err = fails(&["logs"], c.kubectl(&["logs", "one", "--previous"]));
    assert!(
        err.contains("previous terminated container \"app\" in pod \"one\" not found"),
        "{err}"
    );
    let err = fails(&["logs"], c.kubectl(&["logs", "elsewhere"]));
    assert!(
        err.contains("cannot reach the kubelet of node real-0"),
        "{err}"
    );
    // An unscheduled pod has no logs yet (upstream streams nothing).
    assert_eq!(c.kubectl_ok(&["logs", "unbound"]), "");
    let bad = c.kubectl(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/one/log?limitBytes=0&tailLines=-2",
    ]);
    let err = stderr(&bad);
    assert!(
        err.contains("limitBytes: Invalid value: 0: must be greater than 0")
            && err.contains("tailLines: Invalid value: -2: must be greater than or equal to 0"),
        "{err}"
    );

    // logs -f stays open until the pod goes away.
    let mut follow = c.kubectl_stream(&Kubectl::dispatcher(), &["logs", "-f", "one"]);
    follow.wait_for_line(WAIT, |l| l.contains("simulated node sim-0"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        follow.try_wait().is_none(),
        "logs -f ended while the pod runs"
    );

    // exec runs what the simulation knows (kubelet_sim.rs); anything else, attach and
    // port-forward get a clear error naming the simulated node.
    let err = fails(&["exec"], c.kubectl(&["exec", "one", "--", "ls"]));
    assert!(
        err.contains(
            "runs on a simulated node: k1s runs no process, and cannot tell what [\"ls\"] would do"
        ),
        "{err}"
    );
    let err = fails(
        &["exec"],
        c.kubectl(&["exec", "two", "-c", "zz", "--", "ls"]),
    );
    assert!(
        err.contains("container zz is not valid for pod two"),
        "{err}"
    );
    let err = fails(&["exec"], c.kubectl(&["exec", "elsewhere", "--", "ls"]));
    assert!(
        err.contains("cannot reach the kubelet of node real-0"),
        "{err}"
    );
    let err = fails(&["exec"], c.kubectl(&["exec", "unbound", "--", "ls"]));
    assert!(
        err.contains("pod unbound does not have a host assigned"),
        "{err}"
    );
    let err = fails(
        &["port-forward"],
        c.kubectl(&["port-forward", "pod/one", "0:80"]),
    );
    assert!(
        err.contains("pod default/one runs on simulated node sim-0: portforward is not supported"),
        "{err}"
    );

    // metrics.k8s.io: discovery, the APIService, kubectl top.
    let apis = c.kubectl_ok(&["get", "apiservices"]);
    let line = apis
        .lines()
        .find(|l| l.starts_with("v1beta1.metrics.k8s.io"))
        .unwrap_or_else(|| panic!("no metrics APIService:\n{apis}"));
    assert!(line.contains("True"), "{line}");
    let resources = c.kubectl_ok(&["api-resources", "--api-group=metrics.k8s.io"]);
    assert!(
        resources.contains("PodMetrics") && resources.contains("NodeMetrics"),
        "{resources}"
    );
    let top = wait_until(WAIT, "kubectl top pods", || {
        let out = c.kubectl(&["top", "pods"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).to_string())
    });
    let one = top
        .lines()
        .find(|l| l.starts_with("one "))
        .unwrap_or_else(|| panic!("{top}"));
    assert!(one.contains("300m") && one.contains("32Mi"), "{one}");
    // 10% of 100m per container, half of 64Mi per container.
    let two = top
        .lines()
        .find(|l| l.starts_with("two "))
        .unwrap_or_else(|| panic!("{top}"));
    assert!(two.contains("20m") && two.contains("64Mi"), "{two}");
    assert!(
        !top.contains("elsewhere") && !top.contains("starting"),
        "{top}"
    );
    let containers = c.kubectl_ok(&["top", "pod", "two", "--containers"]);
    assert!(
        containers
            .lines()
            .any(|l| l.contains(" a ") && l.contains("10m")),
        "{containers}"
    );
    let selected = c.kubectl_ok(&["top", "pods", "-l", "app=one"]);
    assert!(
        selected.contains("one") && !selected.contains("two"),
        "{selected}"
    );
    let nodes = c.kubectl_ok(&["top", "nodes"]);
    let sim = nodes
        .lines()
        .find(|l| l.starts_with("sim-0"))
        .unwrap_or_else(|| panic!("{nodes}"));
    // 300m + 20m of the pods plus the node's 50m base.
    assert!(sim.contains("370m"), "{sim}");
    let raw = c.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/one",
    ]);
    let v: serde_json::Value = serde_json::from_str(&raw).expect("PodMetrics json");
    assert_eq!(v["kind"], "PodMetrics");
    assert_eq!(v["window"], "10s");
    assert_eq!(v["containers"][0]["usage"]["cpu"], "300000000n");
    assert!(v["timestamp"].is_string());
    let missing = c.kubectl(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/real-0"]);
    assert!(
        stderr(&missing).contains("not found"),
        "{}",
        stderr(&missing)
    );

    // The follower ends once the pod is gone.
    c.kubectl_ok(&["delete", "pod", "one", "--wait=false"]);
    wait_until(WAIT, "logs -f to end after the pod's deletion", || {
        follow.try_wait()
    });
}

#[test]
fn hpa_scales_a_deployment_from_pod_metrics() {
    let c = start(&["--horizontal-pod-autoscaler-sync-period", "1s"]);
    c.apply(NODES);
    // No deployment controller needed: the HPA reads the Deployment's /scale (selector from
    // spec.selector) and the pods that selector matches.
    c.apply(
        "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 100m}}}
",
    );
    c.apply(&pod_yaml(
        "web",
        "sim-0",
        &[("app", "100m")],
        "sim.k1s.io/cpu-usage: 250m",
    ));
    run_pod(&c, "web", &["app"]);
    c.apply(
        "\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
",
    );
    // 250% of request against a 50% target: 5 replicas, held at the max of 3.
    wait_until(WAIT, "the Deployment scaled to 3", || {
        (c.kubectl_ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]) == "3")
            .then_some(())
    });
    let status = wait_until(WAIT, "the HPA status", || {
        let s = c.kubectl_ok(&["get", "hpa", "web", "-o", "jsonpath={.status}"]);
        let v: serde_json::Value = serde_json::from_str(&s).ok()?;
        (v["desiredReplicas"] == 3 && v["currentReplicas"] == 3).then_some(v)
    });
    assert_eq!(status["currentMetrics"][0]["resource"]["name"], "cpu");
    assert_eq!(
        status["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
        250
    );
    assert_eq!(
        status["currentMetrics"][0]["resource"]["current"]["averageValue"],
        "250m"
    );
    assert!(status["lastScaleTime"].is_string(), "{status}");
    let cond = |t: &str| {
        status["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == t).cloned())
            .unwrap_or_else(|| panic!("no {t} condition: {status}"))
    };
    assert_eq!(cond("AbleToScale")["status"], "True");
    assert_eq!(cond("ScalingActive")["reason"], "ValidMetricFound");
    assert_eq!(
        cond("ScalingLimited")["reason"],
        "TooManyReplicas",
        "{status}"
    );
    let events = c.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert!(
        events.contains(
            "New size: 3; reason: cpu resource utilization (percentage of request) above target"
        ),
        "{events}"
    );
    let get = c.kubectl_ok(&["get", "hpa", "web"]);
    assert!(get.contains("cpu: 250%/50%"), "{get}");

    // A target without a scale subresource kind the HPA knows: FailedGetScale.
    c.apply(
        "\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: nothing, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nothing}
  maxReplicas: 3
",
    );
    wait_until(WAIT, "FailedGetScale on the HPA", || {
        let s = c.kubectl_ok(&[
            "get",
            "hpa",
            "nothing",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"AbleToScale\")].reason}",
        ]);
        (s == "FailedGetScale").then_some(())
    });
}

/// proxy.go's "should proxy logs on node [with explicit kubelet port] using proxy subresource":
/// a simulated node answers the kubelet's `logs/` listing (empty), `healthz` and `pods` through
/// `nodes/<name>[:port]/proxy/`; other paths are the kubelet's 404, and a real node's kubelet
/// is out of k1s's reach.
#[test]
fn a_simulated_node_answers_its_proxy() {
    let c = TestCluster::start();
    for path in [
        "/api/v1/nodes/k1s-node-0/proxy/logs/",
        "/api/v1/nodes/k1s-node-0:10250/proxy/logs/",
    ] {
        let listing = c.kubectl_ok(&["get", "--raw", path]);
        assert_eq!(listing, "<pre>\n</pre>\n", "{path}");
    }
    assert_eq!(
        c.kubectl_ok(&["get", "--raw", "/api/v1/nodes/k1s-node-0/proxy/healthz"]),
        "ok"
    );
    c.kubectl_ok(&["run", "here", "--image=nginx"]);
    let pods = wait_until(Duration::from_secs(30), "the pod on the node", || {
        let list: serde_json::Value = serde_json::from_str(&c.kubectl_ok(&[
            "get",
            "--raw",
            "/api/v1/nodes/k1s-node-0/proxy/pods",
        ]))
        .ok()?;
        let names: Vec<String> = list["items"]
            .as_array()?
            .iter()
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        (!names.is_empty()).then_some(names)
    });
    assert_eq!(pods, ["here"]);
    let out = c.kubectl(&["get", "--raw", "/api/v1/nodes/k1s-node-0/proxy/nope"]);
    assert!(!out.status.success());
    let resources = c.kubectl_ok(&["get", "--raw", "/api/v1"]);
    assert!(resources.contains(r#""name":"nodes/proxy""#), "{resources}");
}
