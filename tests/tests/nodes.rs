//! Simulated nodes (`k1s node --kubeconfig`) and the node lifecycle controller, black-box:
//! registration with a Lease, pods bound to a node run and finish as a kubelet reports them,
//! deletion, and an agent that stops makes its node Unknown, tainted, and its pods evicted.

use std::process::Command;
use std::time::Duration;

use k1s_tests::{StartOptions, StreamingCommand, TestCluster, k1s_bin, wait_until};

const WAIT: Duration = Duration::from_secs(30);

fn agent(c: &TestCluster, name: &str) -> StreamingCommand {
    let mut cmd = Command::new(k1s_bin());
    cmd.arg("node")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(["--name", name, "--node-lease-duration-seconds", "4"]);
    StreamingCommand::spawn(&mut cmd, format!("k1s node {name}"))
}

fn get(c: &TestCluster, args: &[&str]) -> String {
    let out = c.kubectl(args);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn pod_yaml(name: &str, node: &str, extra_meta: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n{extra_meta}spec:\n  nodeName: {node}\n{extra_spec}  containers:\n  - name: c\n    image: nginx:1.25\n"
    )
}

fn jsonpath(c: &TestCluster, kind: &str, name: &str, path: &str) -> String {
    get(c, &["get", kind, name, "-o", &format!("jsonpath={path}")])
}

fn gone(c: &TestCluster, kind: &str, name: &str) -> bool {
    let out = c.kubectl(&["get", kind, name]);
    !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("NotFound")
}

#[test]
fn simulated_nodes_run_pods_and_the_lifecycle_controller_watches_them() {
    let c = TestCluster::start_with(StartOptions {
        extra_args: [
            "--nodes",
            "0",
            "--disable-scheduler",
            "--node-monitor-grace-period",
            "5s",
        ]
        .map(String::from)
        .into(),
        ..Default::default()
    });
    let _keep = agent(&c, "sim-a");
    let mut doomed = agent(&c, "sim-b");

    // Registration: Ready with the kubelet's shape, a Lease, distinct pod CIDRs.
    for node in ["sim-a", "sim-b"] {
        wait_until(WAIT, &format!("{node} Ready"), || {
            (jsonpath(
                &c,
                "node",
                node,
                "{.status.conditions[?(@.type==\"Ready\")].status}",
            ) == "True")
                .then_some(())
        });
        assert_eq!(
            jsonpath(
                &c,
                "node",
                node,
                "{.metadata.annotations.sim\\.k1s\\.io/node}"
            ),
            "simulated"
        );
        assert_eq!(
            jsonpath(
                &c,
                "node",
                node,
                "{.metadata.labels.kubernetes\\.io/hostname}"
            ),
            node
        );
        assert_eq!(
            jsonpath(
                &c,
                "node",
                node,
                "{.status.conditions[?(@.type==\"Ready\")].reason}"
            ),
            "KubeletReady"
        );
        assert_eq!(
            jsonpath(
                &c,
                "node",
                node,
                "{.status.conditions[?(@.type==\"MemoryPressure\")].reason}"
            ),
            "KubeletHasSufficientMemory"
        );
        assert_eq!(jsonpath(&c, "node", node, "{.status.capacity.pods}"), "110");
        assert_eq!(
            jsonpath(
                &c,
                "node",
                node,
                "{.status.nodeInfo.containerRuntimeVersion}"
            ),
            "sim://0.1"
        );
        wait_until(WAIT, &format!("{node}'s Lease"), || {
            let holder = get(
                &c,
                &[
                    "get",
                    "lease",
                    "-n",
                    "kube-node-lease",
                    node,
                    "-o",
                    "jsonpath={.spec.holderIdentity}",
                ],
            );
            (holder == node).then_some(())
        });
        let lease = get(
            &c,
            &[
                "get",
                "lease",
                "-n",
                "kube-node-lease",
                node,
                "-o",
                "jsonpath={.spec.leaseDurationSeconds} {.metadata.ownerReferences[0].kind}",
            ],
        );
        assert_eq!(lease, "4 Node");
    }
    let cidr_a = jsonpath(&c, "node", "sim-a", "{.spec.podCIDR}");
    let cidr_b = jsonpath(&c, "node", "sim-b", "{.spec.podCIDR}");
    assert!(
        cidr_a.starts_with("10.244.") && cidr_a.ends_with(".0/24"),
        "{cidr_a}"
    );
    assert_ne!(cidr_a, cidr_b);

    // A bound pod runs with an IP from its node's CIDR and the kubelet's conditions.
    c.apply(&pod_yaml(
        "web",
        "sim-a",
        "",
        "  initContainers:\n  - name: setup\n    image: busybox\n",
    ));
    wait_until(WAIT, "web Ready", || {
        (jsonpath(
            &c,
            "pod",
            "web",
            "{.status.conditions[?(@.type==\"Ready\")].status}",
        ) == "True")
            .then_some(())
    });
    assert_eq!(jsonpath(&c, "pod", "web", "{.status.phase}"), "Running");
    let ip = jsonpath(&c, "pod", "web", "{.status.podIP}");
    let prefix = cidr_a.trim_end_matches("0/24");
    assert!(ip.starts_with(prefix), "{ip} in {cidr_a}");
    assert_eq!(
        jsonpath(&c, "pod", "web", "{.status.hostIP}"),
        jsonpath(
            &c,
            "node",
            "sim-a",
            "{.status.addresses[?(@.type==\"InternalIP\")].address}"
        )
    );
    for cond in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "PodScheduled",
    ] {
        assert_eq!(
            jsonpath(
                &c,
                "pod",
                "web",
                &format!("{{.status.conditions[?(@.type==\"{cond}\")].status}}")
            ),
            "True",
            "{cond}"
        );
    }
    assert_eq!(
        jsonpath(
            &c,
            "pod",
            "web",
            "{.status.initContainerStatuses[0].state.terminated.reason}"
        ),
        "Completed"
    );
    assert_eq!(
        jsonpath(&c, "pod", "web", "{.status.containerStatuses[0].image}"),
        "docker.io/library/nginx:1.25"
    );
    assert!(
        jsonpath(
            &c,
            "pod",
            "web",
            "{.status.containerStatuses[0].containerID}"
        )
        .starts_with("sim://")
    );

    // A readiness gate holds Ready until its condition is True.
    c.apply(&pod_yaml(
        "gated",
        "sim-a",
        "",
        "  readinessGates:\n  - conditionType: example.com/gate\n",
    ));
    wait_until(WAIT, "gated Running", || {
        (jsonpath(&c, "pod", "gated", "{.status.phase}") == "Running").then_some(())
    });
    assert_eq!(
        jsonpath(
            &c,
            "pod",
            "gated",
            "{.status.conditions[?(@.type==\"Ready\")].reason}"
        ),
        "ReadinessGatesNotReady"
    );

    // run-seconds pods end by their exit code.
    for (name, code) in [("ok", "0"), ("bad", "2")] {
        c.apply(&pod_yaml(
            name,
            "sim-a",
            &format!("  annotations:\n    sim.k1s.io/run-seconds: \"1\"\n    sim.k1s.io/exit-code: \"{code}\"\n"),
            "  restartPolicy: Never\n",
        ));
    }
    for (name, code, phase, reason) in [
        ("ok", "0", "Succeeded", "Completed"),
        ("bad", "2", "Failed", "Error"),
    ] {
        wait_until(WAIT, &format!("{name} {phase}"), || {
            (jsonpath(&c, "pod", name, "{.status.phase}") == phase).then_some(())
        });
        assert_eq!(
            jsonpath(
                &c,
                "pod",
                name,
                "{.status.containerStatuses[0].state.terminated.exitCode} {.status.containerStatuses[0].state.terminated.reason}"
            ),
            format!("{code} {reason}")
        );
    }

    // Deletion: graceful, and forced.
    c.kubectl_ok(&["delete", "pod", "gated", "--wait=false"]);
    wait_until(WAIT, "gated gone", || {
        gone(&c, "pod", "gated").then_some(())
    });
    c.kubectl_ok(&["delete", "pod", "ok", "--grace-period=0", "--force"]);
    assert!(gone(&c, "pod", "ok"));

    // Cordoning taints the node unschedulable (TaintNodesByCondition); uncordoning lifts it.
    c.kubectl_ok(&["cordon", "sim-a"]);
    wait_until(WAIT, "unschedulable taint", || {
        (jsonpath(&c, "node", "sim-a", "{.spec.taints[*].key}")
            == "node.kubernetes.io/unschedulable")
            .then_some(())
    });
    c.kubectl_ok(&["uncordon", "sim-a"]);
    wait_until(WAIT, "unschedulable taint lifted", || {
        jsonpath(&c, "node", "sim-a", "{.spec.taints}")
            .is_empty()
            .then_some(())
    });

    // The agent stops: its node goes Unknown and tainted; pods not tolerating it are evicted,
    // pods tolerating it forever stay; the other node is untouched.
    c.apply(&pod_yaml(
        "evicted",
        "sim-b",
        "",
        "  tolerations:\n  - key: node.kubernetes.io/unreachable\n    operator: Exists\n    effect: NoExecute\n    tolerationSeconds: 1\n",
    ));
    c.apply(&pod_yaml(
        "stays",
        "sim-b",
        "",
        "  tolerations:\n  - key: node.kubernetes.io/unreachable\n    operator: Exists\n    effect: NoExecute\n",
    ));
    for p in ["evicted", "stays"] {
        wait_until(WAIT, &format!("{p} Running"), || {
            (jsonpath(&c, "pod", p, "{.status.phase}") == "Running").then_some(())
        });
    }
    doomed.kill();
    wait_until(WAIT, "sim-b Unknown", || {
        (jsonpath(
            &c,
            "node",
            "sim-b",
            "{.status.conditions[?(@.type==\"Ready\")].status}",
        ) == "Unknown")
            .then_some(())
    });
    assert_eq!(
        jsonpath(
            &c,
            "node",
            "sim-b",
            "{.status.conditions[?(@.type==\"Ready\")].reason} {.status.conditions[?(@.type==\"Ready\")].message}"
        ),
        "NodeStatusUnknown Kubelet stopped posting node status."
    );
    wait_until(WAIT, "unreachable taints", || {
        let taints = jsonpath(
            &c,
            "node",
            "sim-b",
            "{range .spec.taints[*]}{.key}:{.effect} {end}",
        );
        (taints.contains("node.kubernetes.io/unreachable:NoExecute")
            && taints.contains("node.kubernetes.io/unreachable:NoSchedule"))
        .then_some(())
    });
    assert!(
        !jsonpath(
            &c,
            "node",
            "sim-b",
            "{.spec.taints[?(@.effect==\"NoExecute\")].timeAdded}"
        )
        .is_empty()
    );
    wait_until(WAIT, "evicted pod marked for deletion", || {
        (gone(&c, "pod", "evicted")
            || !jsonpath(&c, "pod", "evicted", "{.metadata.deletionTimestamp}").is_empty())
        .then_some(())
    });
    let events = get(
        &c,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=evicted",
            "-o",
            "jsonpath={.items[*].reason}",
        ],
    );
    assert!(events.contains("TaintManagerEviction"), "{events}");
    assert_eq!(
        jsonpath(&c, "pod", "stays", "{.metadata.deletionTimestamp}"),
        ""
    );
    assert_eq!(
        jsonpath(
            &c,
            "pod",
            "stays",
            "{.status.conditions[?(@.type==\"Ready\")].status}"
        ),
        "False",
        "pods on an unreachable node are marked not ready"
    );
    assert_eq!(
        jsonpath(
            &c,
            "node",
            "sim-a",
            "{.status.conditions[?(@.type==\"Ready\")].status}"
        ),
        "True"
    );
    assert_eq!(jsonpath(&c, "node", "sim-a", "{.spec.taints}"), "");

    // The agent comes back: Ready again, taints lifted.
    let _back = agent(&c, "sim-b");
    wait_until(WAIT, "sim-b Ready again without taints", || {
        (jsonpath(
            &c,
            "node",
            "sim-b",
            "{.status.conditions[?(@.type==\"Ready\")].status}",
        ) == "True"
            && jsonpath(&c, "node", "sim-b", "{.spec.taints}").is_empty())
        .then_some(())
    });
    // Its CIDR was kept.
    assert_eq!(jsonpath(&c, "node", "sim-b", "{.spec.podCIDR}"), cidr_b);
}

/// Graceful pod deletion as upstream's pod registry does it: a pod bound to a node gets a
/// deletionTimestamp `grace` seconds ahead and stays until its kubelet (here the simulated node)
/// stops it and deletes it with grace 0; a later delete may only shorten the grace period; an
/// unscheduled pod goes at once.
#[test]
fn pods_on_a_node_are_deleted_gracefully() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "grace"]);
    let in_ns = |yaml: String| yaml.replace("namespace: default", "namespace: grace");
    // A pod whose simulated containers take 5 s to stop after SIGTERM.
    c.apply(&in_ns(pod_yaml(
        "slow",
        "k1s-node-0",
        "  annotations:\n    sim.k1s.io/termination-seconds: \"5\"\n",
        "",
    )));
    let get_ns = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-n", "grace"]);
        get(&c, &all)
    };
    wait_until(WAIT, "pod slow Running", || {
        (get_ns(&["get", "pod", "slow", "-o", "jsonpath={.status.phase}"]) == "Running")
            .then_some(())
    });
    c.kubectl_ok(&["delete", "pod", "slow", "-n", "grace", "--wait=false"]);
    let marked = get_ns(&[
        "get",
        "pod",
        "slow",
        "-o",
        "jsonpath={.metadata.deletionGracePeriodSeconds} {.status.phase}",
    ]);
    assert_eq!(marked, "30 Running", "a running pod is marked, not deleted");
    wait_until(WAIT, "pod slow deleted by its node", || {
        let out = c.kubectl(&["get", "pod", "slow", "-n", "grace"]);
        String::from_utf8_lossy(&out.stderr)
            .contains("NotFound")
            .then_some(())
    });

    // A pod bound to a node with no kubelet stays terminating; deletes may only shorten it.
    c.apply("apiVersion: v1\nkind: Node\nmetadata:\n  name: ghost\n");
    c.apply(&in_ns(pod_yaml("stuck", "ghost", "", "")));
    c.kubectl_ok(&["delete", "pod", "stuck", "-n", "grace", "--wait=false"]);
    let grace = || {
        get_ns(&[
            "get",
            "pod",
            "stuck",
            "-o",
            "jsonpath={.metadata.deletionGracePeriodSeconds}",
        ])
    };
    assert_eq!(grace(), "30");
    c.kubectl_ok(&[
        "delete",
        "pod",
        "stuck",
        "-n",
        "grace",
        "--grace-period=60",
        "--wait=false",
    ]);
    assert_eq!(grace(), "30", "a longer grace period is ignored");
    c.kubectl_ok(&[
        "delete",
        "pod",
        "stuck",
        "-n",
        "grace",
        "--grace-period=7",
        "--wait=false",
    ]);
    assert_eq!(grace(), "7", "a shorter grace period is taken");
    c.kubectl_ok(&[
        "delete",
        "pod",
        "stuck",
        "-n",
        "grace",
        "--grace-period=0",
        "--force",
    ]);
    assert!(
        !c.kubectl(&["get", "pod", "stuck", "-n", "grace"])
            .status
            .success()
    );

    // An unscheduled pod goes at once.
    c.apply(&in_ns(
        pod_yaml("pending", "", "", "  schedulerName: nobody\n").replace("  nodeName: \n", ""),
    ));
    c.kubectl_ok(&["delete", "pod", "pending", "-n", "grace", "--wait=false"]);
    assert!(
        !c.kubectl(&["get", "pod", "pending", "-n", "grace"])
            .status
            .success()
    );

    // kubectl's default (waiting) delete of a running pod returns once the node has stopped it.
    c.apply(&in_ns(pod_yaml("quick", "k1s-node-0", "", "")));
    wait_until(WAIT, "pod quick Running", || {
        (get_ns(&["get", "pod", "quick", "-o", "jsonpath={.status.phase}"]) == "Running")
            .then_some(())
    });
    c.kubectl_ok(&["delete", "pod", "quick", "-n", "grace", "--timeout=30s"]);
    assert!(
        !c.kubectl(&["get", "pod", "quick", "-n", "grace"])
            .status
            .success()
    );
}
