//! The scheduler against the real binary (`--nodes 0`; Node objects made with kubectl, their
//! allocatable set through `nodes/status`): binding with PodScheduled=True and a Scheduled event;
//! upstream's FailedScheduling message for pods that fit nowhere; taints, nodeSelector, node
//! affinity and pod anti-affinity deciding placement; a pending pod placed when a node arrives;
//! preemption; other schedulerNames left alone; and `k1s scheduler --kubeconfig` with leader
//! election against a server started with `--disable-scheduler`. Also: a Deployment spread by
//! the cluster-default topology constraints, the scheduler's events.k8s.io/v1 events (with a
//! series for repeats), preemption that spares a pod its PodDisruptionBudget protects, and a
//! simulated node whose pod CIDR is full failing the sandbox as a kubelet does.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::Duration;

use k1s_tests::{StartOptions, TestCluster, k1s_bin, wait_until};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);
/// The node lifecycle controller would taint these kubelet-less nodes unreachable.
const NO_LIFECYCLE: &str = "--controllers=*,-node-lifecycle-controller";

fn start(extra: &[&str]) -> TestCluster {
    let mut args = vec!["--nodes".to_string(), "0".into(), NO_LIFECYCLE.into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    TestCluster::start_with(StartOptions {
        extra_args: args,
        ..Default::default()
    })
}

/// A Node with labels, taints (`key=value:Effect`) and `cpu` allocatable (and 8Gi, 110 pods).
fn node(c: &TestCluster, name: &str, cpu: &str, labels: &[(&str, &str)], taints: &[&str]) {
    let mut yaml = format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: {name}\n"
    );
    for (k, v) in labels {
        yaml.push_str(&format!("    {k}: \"{v}\"\n"));
    }
    if !taints.is_empty() {
        yaml.push_str("spec:\n  taints:\n");
        for t in taints {
            let (kv, effect) = t.split_once(':').unwrap();
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            yaml.push_str(&format!(
                "  - key: {k}\n    value: \"{v}\"\n    effect: {effect}\n"
            ));
        }
    }
    c.apply(&yaml);
    // TaintNodesByCondition taints a new node not-ready; with the node lifecycle controller
    // off, nothing would lift it.
    c.kubectl_ok(&[
        "taint",
        "node",
        name,
        "node.kubernetes.io/not-ready:NoSchedule-",
    ]);
    let res = format!(r#"{{"cpu":"{cpu}","memory":"8Gi","pods":"110"}}"#);
    c.kubectl_ok(&[
        "patch",
        "node",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        &format!(r#"{{"status":{{"capacity":{res},"allocatable":{res}}}}}"#),
    ]);
}

/// A pod requesting `cpu`, with more spec given as YAML lines indented under `spec:`.
fn pod(c: &TestCluster, name: &str, cpu: &str, labels: &str, spec: &str) {
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{{labels}}}\nspec:\n{spec}  containers:\n  - name: c\n    image: registry.k8s.io/pause:3.10\n    resources:\n      requests:\n        cpu: {cpu}\n"
    ));
}

fn get(c: &TestCluster, name: &str) -> Value {
    serde_json::from_str(&c.kubectl_ok(&["get", "pod", name, "-o", "json"])).unwrap()
}

fn node_of(c: &TestCluster, name: &str) -> Option<String> {
    get(c, name)["spec"]["nodeName"]
        .as_str()
        .map(str::to_string)
}

fn wait_bound(c: &TestCluster, name: &str) -> String {
    wait_until(WAIT, &format!("pod {name} to be bound"), || {
        node_of(c, name)
    })
}

fn condition(c: &TestCluster, name: &str) -> Option<Value> {
    get(c, name)["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
}

/// The message of the pod's PodScheduled=False condition once it says `want`.
fn wait_unschedulable(c: &TestCluster, name: &str, want: &str) {
    let last = std::cell::RefCell::new(String::new());
    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_until(WAIT, &format!("pod {name} to be Unschedulable"), || {
            let cond = condition(c, name)?;
            *last.borrow_mut() = cond.to_string();
            (cond["status"] == "False"
                && cond["reason"] == "Unschedulable"
                && cond["message"] == want)
                .then_some(())
        })
    }));
    assert!(ok.is_ok(), "last condition of {name}: {}", last.borrow());
    assert!(node_of(c, name).is_none());
}

fn events(c: &TestCluster, name: &str, reason: &str) -> Vec<Value> {
    let all: Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "events", "-A", "-o", "json"])).unwrap();
    all["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["involvedObject"]["name"] == name && e["reason"] == reason)
        .cloned()
        .collect()
}

fn wait_event(c: &TestCluster, name: &str, reason: &str) -> Value {
    wait_until(WAIT, &format!("a {reason} event for {name}"), || {
        events(c, name, reason).into_iter().next()
    })
}

const TAINT_MSG: &str = "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }";

#[test]
fn the_scheduler_places_pods_as_upstream() {
    let c = start(&[]);
    node(&c, "n-a", "2", &[("zone", "a")], &[]);
    node(&c, "n-b", "2", &[("zone", "b")], &[]);
    node(
        &c,
        "n-cp",
        "8",
        &[("role", "cp")],
        &["node-role.kubernetes.io/control-plane:NoSchedule"],
    );

    // A plain pod: bound to an untainted node, PodScheduled=True, a Scheduled event.
    pod(&c, "plain", "100m", "", "");
    let n = wait_bound(&c, "plain");
    assert!(n == "n-a" || n == "n-b", "{n}");
    let cond = wait_until(WAIT, "PodScheduled=True", || {
        condition(&c, "plain").filter(|c| c["status"] == "True")
    });
    assert!(cond.get("reason").is_none(), "{cond}");
    let ev = wait_event(&c, "plain", "Scheduled");
    assert_eq!(
        ev["message"],
        format!("Successfully assigned default/plain to {n}")
    );
    assert_eq!(ev["type"], "Normal");
    // Written through events.k8s.io/v1, so core/v1 shows the reporting component, no source.
    assert_eq!(ev["reportingComponent"], "default-scheduler");

    // Too big for every node: upstream's message, on the condition and in a Warning event.
    pod(&c, "huge", "3", "", "");
    let msg = format!(
        "0/3 nodes are available: 1 {TAINT_MSG}, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    );
    wait_unschedulable(&c, "huge", &msg);
    let ev = wait_event(&c, "huge", "FailedScheduling");
    assert_eq!(ev["message"], msg);
    assert_eq!(ev["type"], "Warning");

    // Tolerations and nodeSelector: only the control-plane node, which the pod tolerates.
    pod(
        &c,
        "tolerant",
        "1",
        "",
        "  nodeSelector:\n    role: cp\n  tolerations:\n  - key: node-role.kubernetes.io/control-plane\n    operator: Exists\n    effect: NoSchedule\n",
    );
    assert_eq!(wait_bound(&c, "tolerant"), "n-cp");
    // Without the toleration the selector leaves nothing.
    pod(&c, "intolerant", "1", "", "  nodeSelector:\n    role: cp\n");
    wait_unschedulable(
        &c,
        "intolerant",
        &format!(
            "0/3 nodes are available: 1 {TAINT_MSG}, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        ),
    );
    pod(&c, "in-b", "100m", "", "  nodeSelector:\n    zone: b\n");
    assert_eq!(wait_bound(&c, "in-b"), "n-b");
    pod(
        &c,
        "affine-a",
        "100m",
        "",
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: zone, operator: In, values: [a]}\n",
    );
    assert_eq!(wait_bound(&c, "affine-a"), "n-a");

    // Pod anti-affinity on the hostname: two replicas on two nodes, a third fits nowhere.
    let anti = "  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchLabels: {app: spread}\n        topologyKey: kubernetes.io/hostname\n";
    pod(&c, "spread-1", "100m", "app: spread", anti);
    let first = wait_bound(&c, "spread-1");
    pod(&c, "spread-2", "100m", "app: spread", anti);
    let second = wait_bound(&c, "spread-2");
    assert_ne!(first, second);
    pod(&c, "spread-3", "100m", "app: spread", anti);
    wait_unschedulable(
        &c,
        "spread-3",
        &format!(
            "0/3 nodes are available: 1 {TAINT_MSG}, 2 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
        ),
    );

    // Another scheduler's pod is left alone.
    pod(&c, "other", "100m", "", "  schedulerName: my-scheduler\n");

    // A new node that fits: the pending pods are retried at once and placed there.
    node(&c, "n-big", "4", &[("zone", "c")], &[]);
    assert_eq!(wait_bound(&c, "huge"), "n-big");
    assert_eq!(wait_bound(&c, "spread-3"), "n-big");
    let cond = condition(&c, "huge").unwrap();
    assert_eq!(cond["status"], "True", "{cond}");
    assert!(node_of(&c, "other").is_none());
    assert!(condition(&c, "other").is_none());
    assert!(events(&c, "other", "FailedScheduling").is_empty());

    // Preemption: a node only the two priority classes' pods tolerate.
    for (name, value, policy) in [
        ("low", 10, "PreemptLowerPriority"),
        ("high", 1000, "PreemptLowerPriority"),
        ("high-never", 1000, "Never"),
    ] {
        c.apply(&format!(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {name}\nvalue: {value}\npreemptionPolicy: {policy}\n"
        ));
    }
    node(&c, "n-p", "1", &[("pool", "p")], &["pool=p:NoSchedule"]);
    let pool = |class: &str| {
        format!(
            "  priorityClassName: {class}\n  nodeSelector:\n    pool: p\n  tolerations:\n  - {{key: pool, operator: Exists}}\n"
        )
    };
    pod(&c, "victim", "800m", "", &pool("low"));
    assert_eq!(wait_bound(&c, "victim"), "n-p");
    // Never preempts: the message says so.
    pod(&c, "polite", "800m", "", &pool("high-never"));
    wait_unschedulable(
        &c,
        "polite",
        "0/5 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 node(s) didn't match Pod's node affinity/selector. preemption: not eligible due to preemptionPolicy=Never.",
    );
    c.kubectl_ok(&["delete", "pod", "polite", "--wait=false"]);
    pod(&c, "preemptor", "800m", "", &pool("high"));
    wait_until(WAIT, "the preemptor to be nominated", || {
        (get(&c, "preemptor")["status"]["nominatedNodeName"] == "n-p").then_some(())
    });
    let ev = wait_event(&c, "victim", "Preempted");
    let uid = get(&c, "preemptor")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(ev["message"], format!("Preempted by pod {uid} on node n-p"));
    // No kubelet here: finish the victim's deletion as one would.
    wait_until(WAIT, "the victim to be deleted", || {
        let out = c.kubectl(&["get", "pod", "victim", "-o", "json"]);
        if !out.status.success() {
            return Some(());
        }
        let v: Value = serde_json::from_slice(&out.stdout).ok()?;
        v["metadata"]["deletionTimestamp"].is_string().then(|| {
            c.kubectl_ok(&["delete", "pod", "victim", "--grace-period=0", "--force"]);
        })
    });
    assert_eq!(wait_bound(&c, "preemptor"), "n-p");
}

#[test]
fn k1s_scheduler_runs_against_a_server_without_one() {
    let c = start(&["--disable-scheduler"]);
    node(&c, "solo", "2", &[], &[]);
    pod(&c, "waiting", "100m", "", "");
    std::thread::sleep(Duration::from_secs(2));
    assert!(node_of(&c, "waiting").is_none(), "no scheduler yet");
    let mut child = Command::new(k1s_bin())
        .args(["scheduler", "--kubeconfig"])
        .arg(c.kubeconfig())
        .arg("--leader-elect")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let bound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let n = wait_bound(&c, "waiting");
        let holder = c.kubectl_ok(&[
            "get",
            "lease",
            "-n",
            "kube-system",
            "kube-scheduler",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ]);
        (n, holder)
    }));
    let _ = child.kill();
    let _ = child.wait();
    let (n, holder) = bound.unwrap();
    assert_eq!(n, "solo");
    assert!(!holder.is_empty());
}

/// The scheduler's events.k8s.io/v1 events about `name` with `reason`.
fn events_v1(c: &TestCluster, name: &str, reason: &str) -> Vec<Value> {
    let all: Value = serde_json::from_str(&c.kubectl_ok(&[
        "get",
        "events.v1.events.k8s.io",
        "-A",
        "-o",
        "json",
    ]))
    .unwrap();
    all["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["regarding"]["name"] == name && e["reason"] == reason)
        .cloned()
        .collect()
}

fn pods_per_node(c: &TestCluster, selector: &str) -> std::collections::BTreeMap<String, usize> {
    let all: Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "pods", "-l", selector, "-o", "json"]))
            .unwrap();
    let mut out = std::collections::BTreeMap::new();
    for p in all["items"].as_array().unwrap() {
        if let Some(n) = p["spec"]["nodeName"].as_str() {
            *out.entry(n.to_string()).or_insert(0) += 1;
        }
    }
    out
}

#[test]
fn default_spreading_and_events_k8s_io() {
    let c = start(&[]);
    for n in ["s1", "s2", "s3"] {
        node(&c, n, "4", &[], &[]);
    }
    // s2 and s3 carry a pod requesting a CPU, so resource scores alone would stack every
    // replica on s1; the default constraints (hostname, maxSkew 3) spread them.
    pod(&c, "filler-2", "1", "", "  nodeName: s2\n");
    pod(&c, "filler-3", "1", "", "  nodeName: s3\n");
    c.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=6",
    ]);
    let spread = wait_until(WAIT, "6 replicas bound", || {
        let per = pods_per_node(&c, "app=web");
        (per.values().sum::<usize>() == 6).then_some(per)
    });
    let want: std::collections::BTreeMap<String, usize> = [("s1", 2), ("s2", 2), ("s3", 2)]
        .map(|(n, k)| (n.to_string(), k))
        .into();
    assert_eq!(spread, want);

    // A Scheduled event through events.k8s.io/v1, as kube-scheduler writes it.
    let pods: Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "pods", "-l", "app=web", "-o", "json"]))
            .unwrap();
    let first = pods["items"][0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let ev = wait_until(WAIT, "a Scheduled event", || {
        events_v1(&c, &first, "Scheduled").into_iter().next()
    });
    assert_eq!(ev["reportingController"], "default-scheduler");
    assert!(
        ev["reportingInstance"]
            .as_str()
            .unwrap()
            .starts_with("default-scheduler-"),
        "{ev}"
    );
    assert_eq!(ev["action"], "Binding");
    assert_eq!(ev["type"], "Normal");
    assert_eq!(ev["regarding"]["kind"], "Pod");
    assert!(
        ev["eventTime"].as_str().unwrap().contains('.'),
        "micro time: {ev}"
    );
    let node = pods["items"][0]["spec"]["nodeName"].as_str().unwrap();
    assert_eq!(
        ev["note"],
        format!("Successfully assigned default/{first} to {node}")
    );

    // A pod that fits nowhere: FailedScheduling with action Scheduling; retried attempts with
    // the pod unchanged become a series on one event.
    pod(&c, "huge", "64", "", "");
    wait_until(WAIT, "a FailedScheduling event", || {
        events_v1(&c, "huge", "FailedScheduling").into_iter().next()
    });
    let series = wait_until(WAIT, "a FailedScheduling series", || {
        // Each node label change retries the pod.
        c.kubectl_ok(&[
            "label",
            "node",
            "s1",
            "--overwrite",
            &format!("retry={}", rand_suffix()),
        ]);
        events_v1(&c, "huge", "FailedScheduling")
            .into_iter()
            .find(|e| e["series"]["count"].as_i64().is_some_and(|n| n >= 2))
    });
    assert_eq!(series["action"], "Scheduling");
    assert_eq!(series["type"], "Warning");
    assert!(
        series["note"]
            .as_str()
            .unwrap()
            .starts_with("0/3 nodes are available: 3 Insufficient cpu."),
        "{series}"
    );
    assert!(series["series"]["lastObservedTime"].is_string(), "{series}");
    // Both kubectl views show them.
    let table = c.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=huge",
    ]);
    assert!(table.contains("FailedScheduling"), "{table}");
    let listed = c.kubectl_ok(&["events", "--for", "pod/huge"]);
    assert!(listed.contains("FailedScheduling"), "{listed}");
    assert!(listed.contains("(x"), "the series count shows: {listed}");
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[test]
fn preemption_spares_a_pod_its_disruption_budget_protects() {
    let c = start(&[]);
    for (name, value) in [("low", 10), ("high", 1000)] {
        c.apply(&format!(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {name}\nvalue: {value}\n"
        ));
    }
    node(&c, "p1", "1", &[("pool", "p")], &["pool=p:NoSchedule"]);
    node(&c, "p2", "1", &[("pool", "p")], &["pool=p:NoSchedule"]);
    let pool = |class: &str, at: &str| {
        format!(
            "  priorityClassName: {class}\n  nodeName: {at}\n  tolerations:\n  - {{key: pool, operator: Exists}}\n"
        )
    };
    pod(&c, "guarded", "800m", "app: guarded", &pool("low", "p1"));
    pod(&c, "plain", "800m", "app: plain", &pool("low", "p2"));
    // The budget wants the guarded pod kept: no disruption is allowed.
    c.apply(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: guard\n  namespace: default\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels: {app: guarded}\n",
    );
    wait_until(WAIT, "the budget's status", || {
        let v: Value =
            serde_json::from_str(&c.kubectl_ok(&["get", "pdb", "guard", "-o", "json"])).ok()?;
        (v["status"]["observedGeneration"].as_i64().is_some()
            && v["status"]["disruptionsAllowed"] == 0)
            .then_some(())
    });
    // Everything else ties (same priority, size, count): the budget decides.
    pod(
        &c,
        "preemptor",
        "800m",
        "",
        "  priorityClassName: high\n  nodeSelector:\n    pool: p\n  tolerations:\n  - {key: pool, operator: Exists}\n",
    );
    wait_until(WAIT, "the preemptor to be nominated", || {
        get(&c, "preemptor")["status"]["nominatedNodeName"]
            .as_str()
            .map(str::to_string)
    });
    assert_eq!(get(&c, "preemptor")["status"]["nominatedNodeName"], "p2");
    let ev = wait_until(WAIT, "a Preempted event", || {
        events_v1(&c, "plain", "Preempted").into_iter().next()
    });
    let uid = get(&c, "preemptor")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(ev["note"], format!("Preempted by pod {uid} on node p2"));
    assert_eq!(ev["action"], "Preempting");
    assert_eq!(ev["related"]["name"], "preemptor");
    assert_eq!(ev["reportingController"], "default-scheduler");
    let guarded = get(&c, "guarded");
    assert!(
        guarded["metadata"]["deletionTimestamp"].is_null(),
        "{guarded}"
    );
    // The FailedScheduling of that attempt says preemption is under way.
    let failed = wait_until(WAIT, "the preemptor's FailedScheduling event", || {
        events_v1(&c, "preemptor", "FailedScheduling")
            .into_iter()
            .next()
    });
    assert_eq!(failed["action"], "Scheduling");
}

#[test]
fn a_full_pod_cidr_fails_the_sandbox() {
    // A /29 leaves five pod addresses on the one simulated node.
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--nodes".into(),
            "1".into(),
            "--cluster-cidr".into(),
            "10.9.0.0/29".into(),
        ],
        ..Default::default()
    });
    c.kubectl_ok(&[
        "create",
        "deployment",
        "many",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=6",
    ]);
    let pending = wait_until(WAIT, "5 pods Running, one Pending", || {
        let all: Value =
            serde_json::from_str(&c.kubectl_ok(&["get", "pods", "-l", "app=many", "-o", "json"]))
                .ok()?;
        let items = all["items"].as_array()?;
        let phase = |p: &&Value| {
            p["status"]["phase"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let running = items.iter().filter(|p| phase(p) == "Running").count();
        let pending: Vec<&Value> = items
            .iter()
            .filter(|p| phase(p) == "Pending" && p["spec"]["nodeName"].is_string())
            .collect();
        (running == 5 && pending.len() == 1)
            .then(|| pending[0]["metadata"]["name"].as_str().unwrap().to_string())
    });
    let ev = wait_event(&c, &pending, "FailedCreatePodSandBox");
    assert_eq!(ev["type"], "Warning");
    assert_eq!(ev["source"]["component"], "kubelet");
    let msg = ev["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox \"")
            && msg.ends_with("no IP addresses available in range set: 10.9.0.1-10.9.0.6"),
        "{msg}"
    );
    assert!(get(&c, &pending)["status"]["podIP"].is_null());
}
