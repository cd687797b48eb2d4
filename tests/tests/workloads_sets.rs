//! The StatefulSet and DaemonSet controllers through kubectl, against the real binary with no
//! scheduler and no simulated nodes: the tests create Node objects and play the kubelet by
//! writing pod status through `/status` (Running and Ready), as upstream's integration tests.

use std::time::Duration;

use k1s_tests::{StartOptions, TestCluster, wait_until};

const WAIT: Duration = Duration::from_secs(60);

fn cluster() -> TestCluster {
    TestCluster::start_with(StartOptions {
        extra_args: vec!["--nodes".into(), "0".into(), "--disable-scheduler".into()],
        ..Default::default()
    })
}

fn exists(c: &TestCluster, ns: &str, kind: &str, name: &str) -> bool {
    c.kubectl(&["get", "-n", ns, kind, name]).status.success()
}

fn get(c: &TestCluster, ns: &str, kind: &str, name: &str, path: &str) -> String {
    let out = c.kubectl(&[
        "get",
        "-n",
        ns,
        kind,
        name,
        "-o",
        &format!("jsonpath={path}"),
    ]);
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// Pod names matching a selector, sorted.
fn pods(c: &TestCluster, ns: &str, selector: &str) -> Vec<String> {
    let out = c.kubectl_ok(&[
        "get",
        "pods",
        "-n",
        ns,
        "-l",
        selector,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
    ]);
    let mut v: Vec<String> = out
        .lines()
        .map(str::to_string)
        .filter(|s| !s.is_empty())
        .collect();
    v.sort();
    v
}

/// Plays the kubelet for one pod: Running and Ready.
fn make_ready(c: &TestCluster, ns: &str, pod: &str) {
    let status =
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
    // The pod may be gone meanwhile (deleted by the controller): fine.
    let _ = c.kubectl(&[
        "patch",
        "pod",
        pod,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ]);
}

/// Makes every pod of the selector that is not Running yet Running and Ready.
fn ready_all(c: &TestCluster, ns: &str, selector: &str) {
    let out = c.kubectl_ok(&[
        "get",
        "pods",
        "-n",
        ns,
        "-l",
        selector,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}",
    ]);
    for line in out.lines() {
        let mut parts = line.split_whitespace();
        if let (Some(name), phase) = (parts.next(), parts.next())
            && phase != Some("Running")
        {
            make_ready(c, ns, name);
        }
    }
}

fn events(c: &TestCluster, ns: &str, name: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "events",
        "-n",
        ns,
        "--field-selector",
        &format!("involvedObject.name={name}"),
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
    ])
}

fn sts_yaml(ns: &str, name: &str, replicas: u32, image: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: {replicas}\n  serviceName: {name}-svc\n  selector: {{matchLabels: {{app: {name}}}}}\n{extra_spec}  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: c, image: {image}}}]\n"
    )
}

#[test]
fn ordered_ready_statefulset_creates_updates_and_rolls_back_in_order() {
    let c = cluster();
    let ns = "default";
    c.apply(&sts_yaml(ns, "web", 3, "nginx:1", ""));
    wait_until(WAIT, "web-0", || {
        exists(&c, ns, "pod", "web-0").then_some(())
    });
    // web-0 is not ready: web-1 must not be made.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        pods(&c, ns, "app=web"),
        ["web-0"],
        "OrderedReady waits for web-0"
    );

    // Identity of web-0.
    let update_rev = wait_until(WAIT, "status.updateRevision", || {
        let r = get(&c, ns, "statefulset", "web", "{.status.updateRevision}");
        (!r.is_empty()).then_some(r)
    });
    assert!(update_rev.starts_with("web-"), "{update_rev}");
    let labels = get(&c, ns, "pod", "web-0", "{.metadata.labels}");
    assert!(
        labels.contains(r#""statefulset.kubernetes.io/pod-name":"web-0""#),
        "{labels}"
    );
    assert!(
        labels.contains(r#""apps.kubernetes.io/pod-index":"0""#),
        "{labels}"
    );
    assert!(
        labels.contains(&format!(r#""controller-revision-hash":"{update_rev}""#)),
        "{labels}"
    );
    assert_eq!(get(&c, ns, "pod", "web-0", "{.spec.hostname}"), "web-0");
    assert_eq!(get(&c, ns, "pod", "web-0", "{.spec.subdomain}"), "web-svc");
    assert_eq!(
        get(
            &c,
            ns,
            "pod",
            "web-0",
            "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}"
        ),
        "StatefulSet/web/true"
    );
    // The revision: named <set>-<hash>, number 1, with the hash label.
    assert_eq!(
        get(&c, ns, "controllerrevision", &update_rev, "{.revision}"),
        "1"
    );
    assert!(
        !get(
            &c,
            ns,
            "controllerrevision",
            &update_rev,
            "{.metadata.labels.controller\\.kubernetes\\.io/hash}"
        )
        .is_empty()
    );

    // One at a time, each after its predecessor is ready.
    for i in 0..3 {
        let name = format!("web-{i}");
        wait_until(WAIT, &name, || exists(&c, ns, "pod", &name).then_some(()));
        assert_eq!(
            pods(&c, ns, "app=web").len(),
            i + 1,
            "no pod ahead of {name}"
        );
        make_ready(&c, ns, &name);
    }
    wait_until(WAIT, "readyReplicas 3", || {
        (get(&c, ns, "statefulset", "web", "{.status.readyReplicas}/{.status.availableReplicas}/{.status.currentReplicas}/{.status.updatedReplicas}") == "3/3/3/3").then_some(())
    });
    let out = c.kubectl_ok(&[
        "rollout",
        "status",
        "statefulset/web",
        "-n",
        ns,
        "--timeout=60s",
    ]);
    assert!(
        out.contains("roll out complete") || out.contains("rolling update complete"),
        "{out}"
    );
    let ev = events(&c, ns, "web");
    assert!(
        ev.contains("SuccessfulCreate: create Pod web-0 in StatefulSet web successful"),
        "{ev}"
    );
    assert!(
        ev.contains("create Pod web-2 in StatefulSet web successful"),
        "{ev}"
    );

    // A partitioned update: only ordinals >= 2 move to the new revision.
    c.kubectl_ok(&[
        "patch", "statefulset", "web", "-n", ns, "--type=merge", "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}},"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}"#,
    ]);
    let new_rev = wait_until(WAIT, "a new update revision", || {
        let r = get(&c, ns, "statefulset", "web", "{.status.updateRevision}");
        (!r.is_empty() && r != update_rev).then_some(r)
    });
    wait_until(WAIT, "web-2 at the new revision", || {
        ready_all(&c, ns, "app=web");
        (get(
            &c,
            ns,
            "pod",
            "web-2",
            "{.metadata.labels.controller-revision-hash}",
        ) == new_rev)
            .then_some(())
    });
    wait_until(WAIT, "updatedReplicas 1, ready 3", || {
        ready_all(&c, ns, "app=web");
        (get(
            &c,
            ns,
            "statefulset",
            "web",
            "{.status.updatedReplicas}/{.status.readyReplicas}",
        ) == "1/3")
            .then_some(())
    });
    for p in ["web-0", "web-1"] {
        assert_eq!(
            get(
                &c,
                ns,
                "pod",
                p,
                "{.metadata.labels.controller-revision-hash}"
            ),
            update_rev,
            "{p} stays below the partition"
        );
        assert_eq!(
            get(&c, ns, "pod", p, "{.spec.containers[0].image}"),
            "nginx:1"
        );
    }
    assert_eq!(
        get(&c, ns, "pod", "web-2", "{.spec.containers[0].image}"),
        "nginx:2"
    );
    assert_eq!(
        get(&c, ns, "statefulset", "web", "{.status.currentRevision}"),
        update_rev
    );
    let out = c.kubectl_ok(&[
        "rollout",
        "status",
        "statefulset/web",
        "-n",
        ns,
        "--timeout=60s",
    ]);
    assert!(out.contains("partitioned roll out complete"), "{out}");
    assert!(
        events(&c, ns, "web")
            .contains("SuccessfulDelete: delete Pod web-2 in StatefulSet web successful")
    );

    // Partition 0: the rest follows, from web-1 down to web-0.
    c.kubectl_ok(&[
        "patch",
        "statefulset",
        "web",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}"#,
    ]);
    wait_until(WAIT, "the rollout to finish", || {
        ready_all(&c, ns, "app=web");
        (get(
            &c,
            ns,
            "statefulset",
            "web",
            "{.status.currentRevision}/{.status.updatedReplicas}/{.status.readyReplicas}",
        ) == format!("{new_rev}/3/3"))
        .then_some(())
    });
    c.kubectl_ok(&[
        "rollout",
        "status",
        "statefulset/web",
        "-n",
        ns,
        "--timeout=60s",
    ]);
    let hist = c.kubectl_ok(&["rollout", "history", "statefulset/web", "-n", ns]);
    assert!(hist.contains('1') && hist.contains('2'), "{hist}");

    // Undo: back to nginx:1 as revision 3 (the old revision renumbered).
    c.kubectl_ok(&["rollout", "undo", "statefulset/web", "-n", ns]);
    wait_until(WAIT, "the undo to finish", || {
        ready_all(&c, ns, "app=web");
        let done = get(
            &c,
            ns,
            "statefulset",
            "web",
            "{.status.currentRevision}/{.status.updatedReplicas}/{.status.readyReplicas}",
        ) == format!("{update_rev}/3/3");
        done.then_some(())
    });
    assert_eq!(
        get(&c, ns, "controllerrevision", &update_rev, "{.revision}"),
        "3"
    );
    for p in ["web-0", "web-1", "web-2"] {
        assert_eq!(
            get(&c, ns, "pod", p, "{.spec.containers[0].image}"),
            "nginx:1"
        );
    }

    // Scale down: from the highest ordinal.
    c.kubectl_ok(&["scale", "statefulset", "web", "-n", ns, "--replicas=1"]);
    wait_until(WAIT, "scale down to web-0", || {
        (pods(&c, ns, "app=web") == ["web-0"]).then_some(())
    });
    wait_until(WAIT, "status replicas 1", || {
        (get(&c, ns, "statefulset", "web", "{.status.replicas}") == "1").then_some(())
    });
}

#[test]
fn parallel_statefulset_with_claims_start_ordinal_and_on_delete() {
    let c = cluster();
    let ns = "default";
    c.apply(&sts_yaml(
        ns,
        "db",
        2,
        "postgres:1",
        "  podManagementPolicy: Parallel\n  ordinals: {start: 3}\n  updateStrategy: {type: OnDelete}\n  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Delete}\n  volumeClaimTemplates:\n  - metadata: {name: data}\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}\n",
    ));
    // Parallel: both pods at once, not waiting for readiness; ordinals from 3.
    wait_until(WAIT, "db-3 and db-4", || {
        (pods(&c, ns, "app=db") == ["db-3", "db-4"]).then_some(())
    });
    for p in ["db-3", "db-4"] {
        let claim = format!("data-{p}");
        wait_until(WAIT, &claim, || exists(&c, ns, "pvc", &claim).then_some(()));
        assert_eq!(
            get(
                &c,
                ns,
                "pod",
                p,
                "{.spec.volumes[?(@.name==\"data\")].persistentVolumeClaim.claimName}"
            ),
            claim
        );
        assert_eq!(get(&c, ns, "pvc", &claim, "{.metadata.labels.app}"), "db");
    }
    // whenDeleted: Delete — the claims are owned by the set.
    wait_until(WAIT, "claim owned by the set", || {
        (get(
            &c,
            ns,
            "pvc",
            "data-db-4",
            "{.metadata.ownerReferences[0].kind}",
        ) == "StatefulSet")
            .then_some(())
    });
    let ev = events(&c, ns, "db");
    assert!(
        ev.contains("SuccessfulCreate: create Claim data-db-3 Pod db-3 in StatefulSet db success"),
        "{ev}"
    );

    ready_all(&c, ns, "app=db");
    // whenScaled: Delete — scaling down hands db-4's claim to the pod being removed.
    c.kubectl_ok(&["scale", "statefulset", "db", "-n", ns, "--replicas=1"]);
    wait_until(WAIT, "db-4 to go", || {
        (pods(&c, ns, "app=db") == ["db-3"]).then_some(())
    });

    // OnDelete: a template change moves nothing until a pod is deleted.
    let rev1 = get(&c, ns, "statefulset", "db", "{.status.updateRevision}");
    c.kubectl_ok(&["set", "image", "statefulset/db", "-n", ns, "c=postgres:2"]);
    let rev2 = wait_until(WAIT, "a new update revision", || {
        let r = get(&c, ns, "statefulset", "db", "{.status.updateRevision}");
        (!r.is_empty() && r != rev1).then_some(r)
    });
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        get(&c, ns, "pod", "db-3", "{.spec.containers[0].image}"),
        "postgres:1"
    );
    let uid = get(&c, ns, "pod", "db-3", "{.metadata.uid}");
    c.kubectl_ok(&["delete", "pod", "db-3", "-n", ns, "--wait=false"]);
    wait_until(WAIT, "db-3 recreated at the new revision", || {
        let now = get(
            &c,
            ns,
            "pod",
            "db-3",
            "{.metadata.uid}/{.metadata.labels.controller-revision-hash}",
        );
        (!now.starts_with(&uid) && now.ends_with(&rev2)).then_some(())
    });
    assert_eq!(
        get(&c, ns, "pod", "db-3", "{.spec.containers[0].image}"),
        "postgres:2"
    );
    // `rollout status` is for RollingUpdate only.
    let out = c.kubectl(&[
        "rollout",
        "status",
        "statefulset/db",
        "-n",
        ns,
        "--timeout=5s",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("only available for RollingUpdate"));

    // Deleting the set: the claim it owns goes too (whenDeleted: Delete), via the GC.
    c.kubectl_ok(&["delete", "statefulset", "db", "-n", ns]);
    wait_until(
        Duration::from_secs(120),
        "data-db-3 to be collected",
        || (!exists(&c, ns, "pvc", "data-db-3")).then_some(()),
    );
}

fn node_yaml(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{kubernetes.io/hostname: {name}}}\n{extra}"
    )
}

/// The node a daemon pod is pinned to by its node affinity.
fn pinned_node(c: &TestCluster, ns: &str, pod: &str) -> String {
    get(
        c,
        ns,
        "pod",
        pod,
        "{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]}",
    )
}

#[test]
fn daemonset_runs_one_pod_per_eligible_node_and_rolls() {
    let c = cluster();
    let ns = "default";
    c.apply(&node_yaml("node-a", ""));
    c.apply(&node_yaml("node-b", ""));
    c.apply(&node_yaml(
        "node-tainted",
        "spec:\n  taints: [{key: dedicated, value: db, effect: NoSchedule}]\n",
    ));
    c.apply("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: default}\nspec:\n  selector: {matchLabels: {app: agent}}\n  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      containers: [{name: c, image: agent:1}]\n");
    wait_until(WAIT, "two daemon pods", || {
        (pods(&c, ns, "app=agent").len() == 2).then_some(())
    });
    std::thread::sleep(Duration::from_millis(1000));
    let names = pods(&c, ns, "app=agent");
    assert_eq!(names.len(), 2, "the tainted node gets no pod: {names:?}");
    let mut nodes: Vec<String> = names.iter().map(|p| pinned_node(&c, ns, p)).collect();
    nodes.sort();
    assert_eq!(nodes, ["node-a", "node-b"]);
    let p = &names[0];
    assert!(p.starts_with("agent-"), "{p}");
    let labels = get(&c, ns, "pod", p, "{.metadata.labels}");
    assert!(
        labels.contains(r#""pod-template-generation":"1""#),
        "{labels}"
    );
    assert!(
        labels.contains(r#""controller-revision-hash":"#),
        "{labels}"
    );
    let tolerations = get(&c, ns, "pod", p, "{.spec.tolerations[*].key}");
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        assert!(tolerations.contains(key), "{key} in {tolerations}");
    }
    let ev = events(&c, ns, "agent");
    assert!(
        ev.contains(&format!("SuccessfulCreate: Created pod: {p}")),
        "{ev}"
    );

    // Status: 2 desired (the tainted node is not eligible), none ready yet.
    wait_until(WAIT, "status 2/2/0", || {
        (get(&c, ns, "daemonset", "agent", "{.status.desiredNumberScheduled}/{.status.currentNumberScheduled}/{.status.numberMisscheduled}/{.status.numberUnavailable}") == "2/2/0/2").then_some(())
    });
    ready_all(&c, ns, "app=agent");
    wait_until(WAIT, "all ready", || {
        (get(
            &c,
            ns,
            "daemonset",
            "agent",
            "{.status.numberReady}/{.status.numberAvailable}/{.status.updatedNumberScheduled}",
        ) == "2/2/2")
            .then_some(())
    });
    c.kubectl_ok(&[
        "rollout",
        "status",
        "daemonset/agent",
        "-n",
        ns,
        "--timeout=60s",
    ]);

    // A new eligible node gets a pod; tolerating the taint makes the tainted node eligible
    // (that is a template change: a rolling update too).
    c.apply(&node_yaml("node-c", ""));
    wait_until(WAIT, "a pod on node-c", || {
        pods(&c, ns, "app=agent")
            .iter()
            .any(|p| pinned_node(&c, ns, p) == "node-c")
            .then_some(())
    });
    c.kubectl_ok(&[
        "patch", "daemonset", "agent", "-n", ns, "--type=merge", "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"agent:2"}],"tolerations":[{"key":"dedicated","operator":"Exists"}]}}}}"#,
    ]);
    wait_until(Duration::from_secs(90), "4 updated pods, all ready", || {
        ready_all(&c, ns, "app=agent");
        (get(&c, ns, "daemonset", "agent", "{.status.desiredNumberScheduled}/{.status.updatedNumberScheduled}/{.status.numberAvailable}") == "4/4/4").then_some(())
    });
    let names = pods(&c, ns, "app=agent");
    assert_eq!(names.len(), 4, "{names:?}");
    for p in &names {
        assert_eq!(
            get(&c, ns, "pod", p, "{.spec.containers[0].image}"),
            "agent:2"
        );
        assert_eq!(
            get(
                &c,
                ns,
                "pod",
                p,
                "{.metadata.labels.pod-template-generation}"
            ),
            "2"
        );
    }
    c.kubectl_ok(&[
        "rollout",
        "status",
        "daemonset/agent",
        "-n",
        ns,
        "--timeout=60s",
    ]);
    let hist = c.kubectl_ok(&["rollout", "history", "daemonset/agent", "-n", ns]);
    assert!(hist.contains('1') && hist.contains('2'), "{hist}");
    assert!(events(&c, ns, "agent").contains("SuccessfulDelete: Deleted pod: "));

    // A failed pod is deleted (with a warning) and replaced.
    let victim = names[0].clone();
    c.kubectl_ok(&[
        "patch",
        "pod",
        &victim,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Failed"}}"#,
    ]);
    wait_until(WAIT, "the failed pod replaced", || {
        let now = pods(&c, ns, "app=agent");
        (!now.contains(&victim) && now.len() == 4).then_some(())
    });
    assert!(events(&c, ns, "agent").contains(&format!(
        "FailedDaemonPod: Found failed daemon pod default/{victim} on node"
    )));

    // A node going away takes its (unscheduled) pod with it.
    c.kubectl_ok(&["delete", "node", "node-c"]);
    wait_until(WAIT, "3 pods", || {
        ready_all(&c, ns, "app=agent");
        (pods(&c, ns, "app=agent").len() == 3).then_some(())
    });
}

/// End to end with the defaults (the in-process scheduler and the simulated node `k1s-node-0`
/// run the pods): a StatefulSet of 3 becomes ready and `rollout status` returns; a DaemonSet
/// runs a pod on k1s-node-0.
#[test]
fn end_to_end_with_the_scheduler_and_simulated_node() {
    let c = TestCluster::start();
    let ns = "default";
    c.apply(&sts_yaml(ns, "e2e", 3, "nginx", ""));
    c.apply("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: e2e-agent, namespace: default}\nspec:\n  selector: {matchLabels: {app: e2e-agent}}\n  template:\n    metadata: {labels: {app: e2e-agent}}\n    spec:\n      containers: [{name: c, image: agent}]\n");
    let out = c.kubectl_ok(&[
        "rollout",
        "status",
        "statefulset/e2e",
        "-n",
        ns,
        "--timeout=120s",
    ]);
    assert!(
        out.contains("roll out complete") || out.contains("3 pods at revision"),
        "{out}"
    );
    assert_eq!(
        get(
            &c,
            ns,
            "statefulset",
            "e2e",
            "{.status.readyReplicas}/{.status.currentReplicas}"
        ),
        "3/3"
    );
    for i in 0..3 {
        assert_eq!(
            get(&c, ns, "pod", &format!("e2e-{i}"), "{.spec.nodeName}"),
            "k1s-node-0"
        );
    }
    c.kubectl_ok(&[
        "rollout",
        "status",
        "daemonset/e2e-agent",
        "-n",
        ns,
        "--timeout=120s",
    ]);
    let names = pods(&c, ns, "app=e2e-agent");
    assert_eq!(names.len(), 1, "{names:?}");
    assert_eq!(
        get(&c, ns, "pod", &names[0], "{.spec.nodeName}"),
        "k1s-node-0"
    );
    assert_eq!(
        get(
            &c,
            ns,
            "daemonset",
            "e2e-agent",
            "{.status.desiredNumberScheduled}/{.status.numberReady}/{.status.numberAvailable}"
        ),
        "1/1/1"
    );
}
