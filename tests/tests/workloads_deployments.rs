//! The replicaset, replicationcontroller and deployment controllers through kubectl against the
//! real binary, with no nodes and no scheduler: the tests make pods Running and Ready
//! themselves by writing pod status through `/status`, as upstream's integration tests do.

use std::time::Duration;

use k1s_tests::{StartOptions, TestCluster, wait_until};

const WAIT: Duration = Duration::from_secs(60);

fn cluster() -> TestCluster {
    TestCluster::start_with(StartOptions {
        extra_args: vec!["--nodes=0".into(), "--disable-scheduler".into()],
        ..Default::default()
    })
}

fn get(c: &TestCluster, args: &[&str]) -> String {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    c.kubectl_ok(&all).trim().to_string()
}

/// Name and phase of the active (not terminating) pods matching `selector` in `ns`.
fn pod_phases(c: &TestCluster, ns: &str, selector: &str) -> Vec<(String, String)> {
    let out = get(
        c,
        &[
            "pods",
            "-n",
            ns,
            "-l",
            selector,
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.metadata.deletionTimestamp}{"\n"}{end}"#,
        ],
    );
    out.lines()
        .filter_map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            (v.len() == 2).then(|| (v[0].to_string(), v[1].to_string()))
        })
        .collect()
}

/// Names of the active (not terminating) pods matching `selector` in `ns`.
fn pods(c: &TestCluster, ns: &str, selector: &str) -> Vec<String> {
    pod_phases(c, ns, selector)
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// Makes a pod Running and Ready (as a kubelet would).
fn make_ready(c: &TestCluster, ns: &str, pod: &str) {
    // Long ready: available whatever minReadySeconds.
    let now = "2020-01-01T00:00:00Z";
    let status = format!(
        r#"{{"status":{{"phase":"Running","conditions":[{{"type":"Ready","status":"True","lastTransitionTime":"{now}"}}]}}}}"#
    );
    // A pod deleted meanwhile is fine.
    let _ = c.kubectl(&[
        "patch",
        "pod",
        pod,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ]);
}

/// Makes every not-yet-ready pod matching `selector` ready.
fn ready_all(c: &TestCluster, ns: &str, selector: &str) {
    for (name, phase) in pod_phases(c, ns, selector) {
        if phase != "Running" {
            make_ready(c, ns, &name);
        }
    }
}

fn events(c: &TestCluster, ns: &str, name: &str) -> String {
    get(
        c,
        &[
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("involvedObject.name={name}"),
            "-o",
            r#"jsonpath={range .items[*]}{.reason}: {.message}{"\n"}{end}"#,
        ],
    )
}

fn wait_pods(c: &TestCluster, ns: &str, selector: &str, n: usize) -> Vec<String> {
    wait_until(WAIT, &format!("{n} pods matching {selector}"), || {
        let p = pods(c, ns, selector);
        (p.len() == n).then_some(p)
    })
}

#[test]
fn replica_sets_and_replication_controllers_keep_their_pods() {
    let c = cluster();
    c.apply(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: frontend, namespace: default}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: fe}}\n  template:\n    metadata: {labels: {app: fe, tier: web}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
    );
    let created = wait_pods(&c, "default", "app=fe", 3);
    for p in &created {
        assert!(
            p.starts_with("frontend-") && p.len() == "frontend-".len() + 5,
            "{p}"
        );
        let owner = get(
            &c,
            &[
                "pod",
                p,
                "-o",
                "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}",
            ],
        );
        assert_eq!(owner, "ReplicaSet/frontend/true");
    }
    wait_until(WAIT, "SuccessfulCreate events", || {
        let e = events(&c, "default", "frontend");
        (e.matches("SuccessfulCreate: Created pod: frontend-")
            .count()
            == 3)
            .then_some(())
    });
    // Ready pods show in the status.
    for p in &created {
        make_ready(&c, "default", p);
    }
    wait_until(WAIT, "status of 3 ready pods", || {
        let s = get(
            &c,
            &[
                "rs",
                "frontend",
                "-o",
                "jsonpath={.status.replicas}/{.status.fullyLabeledReplicas}/{.status.readyReplicas}/{.status.availableReplicas}/{.status.observedGeneration}",
            ],
        );
        (s == "3/3/3/3/1").then_some(())
    });

    // Scaling up adds one not-ready pod; scaling down again deletes that one first.
    c.kubectl_ok(&["scale", "rs", "frontend", "--replicas=4"]);
    let four = wait_pods(&c, "default", "app=fe", 4);
    let fresh: Vec<&String> = four.iter().filter(|p| !created.contains(p)).collect();
    assert_eq!(fresh.len(), 1);
    c.kubectl_ok(&["scale", "rs", "frontend", "--replicas=3"]);
    let three = wait_pods(&c, "default", "app=fe", 3);
    assert!(
        !three.contains(fresh[0]),
        "the not-ready pod goes first: {three:?}"
    );
    wait_until(WAIT, "a SuccessfulDelete event", || {
        events(&c, "default", "frontend")
            .contains(&format!("SuccessfulDelete: Deleted pod: {}", fresh[0]))
            .then_some(())
    });
    c.kubectl_ok(&["scale", "rs", "frontend", "--replicas=1"]);
    wait_pods(&c, "default", "app=fe", 1);

    // An orphan that matches is adopted (and counts).
    c.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: orphan, namespace: default, labels: {app: adopt}}\nspec: {containers: [{name: c, image: nginx}]}\n");
    c.apply(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: adopter, namespace: default}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: adopt}}\n  template:\n    metadata: {labels: {app: adopt}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
    );
    let adopted = wait_pods(&c, "default", "app=adopt", 2);
    assert!(adopted.contains(&"orphan".to_string()), "{adopted:?}");
    wait_until(WAIT, "the orphan adopted", || {
        let o = get(
            &c,
            &[
                "pod",
                "orphan",
                "-o",
                "jsonpath={.metadata.ownerReferences[0].name}",
            ],
        );
        (o == "adopter").then_some(())
    });
    // A pod relabelled out of the selector is released and replaced.
    c.kubectl_ok(&["label", "pod", "orphan", "app=gone", "--overwrite"]);
    wait_until(WAIT, "the relabelled pod released", || {
        let o = get(
            &c,
            &[
                "pod",
                "orphan",
                "-o",
                "jsonpath={.metadata.ownerReferences}",
            ],
        );
        (o.is_empty() || o == "[]").then_some(())
    });
    let replaced = wait_pods(&c, "default", "app=adopt", 2);
    assert!(!replaced.contains(&"orphan".to_string()));

    // Creates refused by a quota: ReplicaFailure / FailedCreate.
    c.kubectl_ok(&["create", "namespace", "q"]);
    c.kubectl_ok(&["create", "quota", "pods", "-n", "q", "--hard=pods=1"]);
    c.apply(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: capped, namespace: q}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: capped}}\n  template:\n    metadata: {labels: {app: capped}}\n    spec: {containers: [{name: c, image: nginx, resources: {limits: {cpu: 10m, memory: 10Mi}}}]}\n",
    );
    wait_until(WAIT, "ReplicaFailure FailedCreate", || {
        let s = get(
            &c,
            &[
                "rs",
                "capped",
                "-n",
                "q",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="ReplicaFailure")].reason}"#,
            ],
        );
        (s == "FailedCreate").then_some(())
    });
    assert!(events(&c, "q", "capped").contains("FailedCreate: Error creating: "));
    assert!(pods(&c, "q", "app=capped").len() <= 1);

    // A ReplicationController runs on the same code.
    c.apply(
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: legacy, namespace: default}\nspec:\n  replicas: 2\n  selector: {app: legacy}\n  template:\n    metadata: {labels: {app: legacy}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
    );
    let rc_pods = wait_pods(&c, "default", "app=legacy", 2);
    let owner = get(
        &c,
        &[
            "pod",
            &rc_pods[0],
            "-o",
            "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].apiVersion}",
        ],
    );
    assert_eq!(owner, "ReplicationController/v1");
    for p in &rc_pods {
        make_ready(&c, "default", p);
    }
    wait_until(WAIT, "the RC's status", || {
        let s = get(
            &c,
            &[
                "rc",
                "legacy",
                "-o",
                "jsonpath={.status.replicas}/{.status.readyReplicas}/{.status.availableReplicas}",
            ],
        );
        (s == "2/2/2").then_some(())
    });
    c.kubectl_ok(&["scale", "rc", "legacy", "--replicas=0"]);
    wait_pods(&c, "default", "app=legacy", 0);
}

/// Drives pods ready until `kubectl rollout status` would report success.
fn roll_out(c: &TestCluster, name: &str, selector: &str) {
    wait_until(
        Duration::from_secs(90),
        &format!("deployment {name} rolled out"),
        || {
            ready_all(c, "default", selector);
            let out = c.kubectl(&[
                "rollout",
                "status",
                &format!("deployment/{name}"),
                "--watch=false",
            ]);
            String::from_utf8_lossy(&out.stdout)
                .contains("successfully rolled out")
                .then_some(())
        },
    );
}

fn rs_of(c: &TestCluster, deployment: &str) -> Vec<(String, String, String)> {
    let out = get(
        c,
        &[
            "rs",
            "-l",
            &format!("app={deployment}"),
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name} {.spec.replicas} {.metadata.annotations.deployment\.kubernetes\.io/revision}{"\n"}{end}"#,
        ],
    );
    out.lines()
        .filter_map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            (v.len() == 3).then(|| (v[0].to_string(), v[1].to_string(), v[2].to_string()))
        })
        .collect()
}

#[test]
fn deployments_roll_out_roll_back_scale_and_pause() {
    let c = cluster();
    c.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    roll_out(&c, "web", "app=web");
    let first = rs_of(&c, "web");
    assert_eq!(first.len(), 1, "{first:?}");
    let (rs1, replicas, revision) = first[0].clone();
    assert_eq!((replicas.as_str(), revision.as_str()), ("3", "1"));
    let hash = rs1.strip_prefix("web-").expect("web-<hash>");
    assert!(
        !hash.is_empty()
            && hash
                .chars()
                .all(|ch| "bcdfghjklmnpqrstvwxz2456789".contains(ch)),
        "{rs1}"
    );
    let rs_meta = get(
        &c,
        &[
            "rs",
            &rs1,
            "-o",
            r#"jsonpath={.metadata.labels.pod-template-hash} {.spec.selector.matchLabels.pod-template-hash} {.metadata.annotations.deployment\.kubernetes\.io/desired-replicas} {.metadata.annotations.deployment\.kubernetes\.io/max-replicas} {.metadata.ownerReferences[0].kind}"#,
        ],
    );
    assert_eq!(rs_meta, format!("{hash} {hash} 3 4 Deployment"));
    let status = get(
        &c,
        &[
            "deployment",
            "web",
            "-o",
            r#"jsonpath={.status.replicas}/{.status.updatedReplicas}/{.status.readyReplicas}/{.status.availableReplicas}/{.status.observedGeneration}"#,
        ],
    );
    assert_eq!(status, "3/3/3/3/1");
    let available = get(
        &c,
        &[
            "deployment",
            "web",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Available")].reason}: {.status.conditions[?(@.type=="Available")].message}"#,
        ],
    );
    assert_eq!(
        available,
        "MinimumReplicasAvailable: Deployment has minimum availability."
    );
    wait_until(WAIT, "Progressing NewReplicaSetAvailable", || {
        let p = get(
            &c,
            &[
                "deployment",
                "web",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Progressing")].reason}: {.status.conditions[?(@.type=="Progressing")].message}"#,
            ],
        );
        (p == format!("NewReplicaSetAvailable: ReplicaSet \"{rs1}\" has successfully progressed."))
            .then_some(())
    });
    assert_eq!(
        get(
            &c,
            &[
                "deployment",
                "web",
                "-o",
                r#"jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}"#
            ]
        ),
        "1"
    );
    assert!(events(&c, "default", "web").contains(&format!(
        "ScalingReplicaSet: Scaled up replica set {rs1} from 0 to 3"
    )));
    // kube-controller-manager's recorders name no host: the source is the component alone.
    let source = c.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=ScalingReplicaSet,involvedObject.name=web",
        "-o",
        r#"jsonpath={.items[0].source}|{.items[0].reportingComponent}|{.items[0].reportingInstance}"#,
    ]);
    assert_eq!(
        source,
        r#"{"component":"deployment-controller"}|deployment-controller|"#
    );
    c.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=30s"]);

    // A new image rolls out through a second replica set.
    c.kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    roll_out(&c, "web", "app=web");
    let second = rs_of(&c, "web");
    assert_eq!(second.len(), 2, "{second:?}");
    let (rs2, replicas, revision) = second.iter().find(|r| r.0 != rs1).cloned().expect("new rs");
    assert_eq!((replicas.as_str(), revision.as_str()), ("3", "2"));
    assert!(
        second.iter().any(|r| r.0 == rs1 && r.1 == "0"),
        "{second:?}"
    );
    let ev = events(&c, "default", "web");
    assert!(
        ev.contains(&format!("Scaled down replica set {rs1} from")),
        "{ev}"
    );
    let history = c.kubectl_ok(&["rollout", "history", "deployment/web"]);
    assert!(
        history.contains("1 ") && history.contains("2 "),
        "{history}"
    );

    // Undo goes back to the first template: its replica set becomes revision 3.
    c.kubectl_ok(&["rollout", "undo", "deployment/web"]);
    roll_out(&c, "web", "app=web");
    wait_until(WAIT, "the first replica set back as revision 3", || {
        let rs = rs_of(&c, "web");
        rs.iter()
            .any(|r| r.0 == rs1 && r.1 == "3" && r.2 == "3")
            .then_some(())
    });
    let hist = get(
        &c,
        &[
            "rs",
            &rs1,
            "-o",
            r#"jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision-history}"#,
        ],
    );
    assert_eq!(hist, "1");
    assert_eq!(
        get(
            &c,
            &[
                "deployment",
                "web",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}"
            ]
        ),
        "nginx"
    );
    assert!(rs_of(&c, "web").iter().any(|r| r.0 == rs2 && r.1 == "0"));

    // Scaling.
    c.kubectl_ok(&["scale", "deployment/web", "--replicas=5"]);
    wait_until(WAIT, "the replica set scaled to 5", || {
        rs_of(&c, "web")
            .iter()
            .any(|r| r.0 == rs1 && r.1 == "5")
            .then_some(())
    });
    roll_out(&c, "web", "app=web");

    // Paused: no rollout; resumed: the rollout happens.
    c.kubectl_ok(&["rollout", "pause", "deployment/web"]);
    wait_until(WAIT, "Progressing DeploymentPaused", || {
        let p = get(
            &c,
            &[
                "deployment",
                "web",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Progressing")].reason}"#,
            ],
        );
        (p == "DeploymentPaused").then_some(())
    });
    c.kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.28"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(rs_of(&c, "web").len(), 2, "no new replica set while paused");
    c.kubectl_ok(&["rollout", "resume", "deployment/web"]);
    roll_out(&c, "web", "app=web");
    assert_eq!(rs_of(&c, "web").len(), 3);

    // revisionHistoryLimit: old replica sets scaled to zero beyond the limit are deleted.
    c.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"revisionHistoryLimit":1}}"#,
    ]);
    wait_until(WAIT, "old replica sets cleaned up", || {
        (rs_of(&c, "web").len() == 2).then_some(())
    });

    // Recreate: old pods go before new ones come.
    c.apply(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: batchy, namespace: default}\nspec:\n  replicas: 2\n  strategy: {type: Recreate}\n  selector: {matchLabels: {app: batchy}}\n  template:\n    metadata: {labels: {app: batchy}}\n    spec: {containers: [{name: c, image: busybox}]}\n",
    );
    roll_out(&c, "batchy", "app=batchy");
    c.kubectl_ok(&["set", "image", "deployment/batchy", "c=busybox:1.36"]);
    roll_out(&c, "batchy", "app=batchy");
    let rs = rs_of(&c, "batchy");
    assert_eq!(rs.len(), 2);
    assert!(
        rs.iter().any(|r| r.1 == "0") && rs.iter().any(|r| r.1 == "2"),
        "{rs:?}"
    );

    // Deleting the deployment takes its replica sets and pods with it.
    c.kubectl_ok(&["delete", "deployment", "web"]);
    wait_until(WAIT, "replica sets and pods of web gone", || {
        (rs_of(&c, "web").is_empty() && pods(&c, "default", "app=web").is_empty()).then_some(())
    });
}

/// End to end with the defaults (scheduler and one simulated node run the pods).
#[test]
fn a_deployment_rolls_out_on_simulated_nodes() {
    let c = TestCluster::start();
    let status = |args: &[&str]| c.kubectl_ok(args);
    c.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    let out = status(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    c.kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    let out = status(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    assert_eq!(rs_of(&c, "web").len(), 2);
    c.kubectl_ok(&["rollout", "undo", "deployment/web"]);
    status(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    assert_eq!(
        get(
            &c,
            &[
                "deployment",
                "web",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}"
            ]
        ),
        "nginx"
    );
    c.kubectl_ok(&["scale", "deployment/web", "--replicas=4"]);
    status(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    wait_until(WAIT, "4 running pods", || {
        let p = pod_phases(&c, "default", "app=web");
        (p.len() == 4 && p.iter().all(|(_, ph)| ph == "Running")).then_some(())
    });
    c.kubectl_ok(&["delete", "deployment", "web"]);
    wait_until(
        Duration::from_secs(90),
        "replica sets and pods of web gone",
        || {
            (rs_of(&c, "web").is_empty() && pod_phases(&c, "default", "app=web").is_empty())
                .then_some(())
        },
    );
}
