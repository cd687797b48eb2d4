//! The simulated kubelet as kubectl sees it, black-box: a pod's life in `kubectl events`
//! (Scheduled, Pulling, Pulled, Created, Started from `kubelet` on the node), a readiness probe's
//! initial delay holding Ready, a failing liveness probe (`sim.k1s.io/liveness-fail-after-seconds`)
//! restarting the container into CrashLoopBackOff, and `Killing` on graceful deletion.

use std::time::Duration;

use k1s_tests::{TestCluster, wait_until};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(40);

fn json(c: &TestCluster, args: &[&str]) -> Value {
    let out = c.kubectl_ok(args);
    serde_json::from_str(&out).expect("kubectl printed JSON")
}

fn pod(c: &TestCluster, name: &str) -> Value {
    json(c, &["get", "pod", name, "-o", "json"])
}

/// The pod's events as (reason, component, host, fieldPath, message), oldest first by name
/// (`<pod>.<hex nanoseconds>`).
fn events(c: &TestCluster, name: &str) -> Vec<[String; 5]> {
    let list = json(
        c,
        &[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
            "-o",
            "json",
        ],
    );
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|e| {
            [
                s(&e["reason"]),
                s(&e["source"]["component"]),
                s(&e["source"]["host"]),
                s(&e["involvedObject"]["fieldPath"]),
                s(&e["message"]),
            ]
        })
        .collect()
}

fn condition(p: &Value, type_: &str) -> Value {
    p["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .cloned()
        .unwrap_or(Value::Null)
}

fn time(v: &Value) -> k8s_openapi::jiff::Timestamp {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a time: {v}"))
}

#[test]
fn the_simulated_kubelet_reports_events_probes_and_restarts() {
    let c = TestCluster::start();

    // 1. A pod's life in `kubectl events`, in order, from the kubelet on its node.
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: default\nspec:\n  containers:\n  - name: web\n    image: nginx\n",
    );
    wait_until(WAIT, "web Ready", || {
        (condition(&pod(&c, "web"), "Ready")["status"] == "True").then_some(())
    });
    // The kubelet's events in order. The scheduler's Scheduled is an events.k8s.io event with a
    // microsecond eventTime, so kubectl sorts it after kubelet events of the same second (their
    // timestamps have whole seconds), as it does upstream: it only has to be there.
    let want = ["Pulling", "Pulled", "Created", "Started"];
    let table = wait_until(WAIT, "web's five events in kubectl events", || {
        let out = c.kubectl_ok(&["events", "--for", "pod/web"]);
        let reasons: Vec<&str> = out
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().find(|w| want.contains(w)))
            .collect();
        (reasons == want && out.contains(" Scheduled ")).then_some(out)
    });
    assert!(table.contains("Pulling image \"nginx\""), "{table}");
    assert!(table.contains("Created container: web"), "{table}");
    assert!(table.contains("Started container web"), "{table}");
    let evs = events(&c, "web");
    let node = pod(&c, "web")["spec"]["nodeName"]
        .as_str()
        .expect("bound")
        .to_string();
    for e in evs.iter().filter(|e| e[0] != "Scheduled") {
        assert_eq!(e[1], "kubelet", "{e:?}");
        assert_eq!(e[2], node, "{e:?}");
        assert_eq!(e[3], "spec.containers{web}", "{e:?}");
    }
    let pulled = evs.iter().find(|e| e[0] == "Pulled").expect("Pulled");
    assert!(
        pulled[4].starts_with("Successfully pulled image \"nginx\" in "),
        "{pulled:?}"
    );
    let described = c.kubectl_ok(&["describe", "pod", "web"]);
    assert!(
        described.contains("kubelet") && described.contains("Started container web"),
        "{described}"
    );

    // 2. A readiness probe's initial delay holds Ready; an IfNotPresent image is already there.
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: slow\n  namespace: default\nspec:\n  containers:\n  - name: app\n    image: nginx\n    imagePullPolicy: IfNotPresent\n    readinessProbe:\n      initialDelaySeconds: 3\n      periodSeconds: 1\n      httpGet:\n        port: 80\n",
    );
    let running = wait_until(WAIT, "slow's container running", || {
        let p = pod(&c, "slow");
        p["status"]["containerStatuses"][0]["state"]["running"]
            .is_object()
            .then_some(p)
    });
    let started_at =
        time(&running["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]);
    let ready = wait_until(WAIT, "slow Ready", || {
        let cond = condition(&pod(&c, "slow"), "Ready");
        (cond["status"] == "True").then_some(cond)
    });
    let delay = time(&ready["lastTransitionTime"]).duration_since(started_at);
    assert!(
        delay >= k8s_openapi::jiff::SignedDuration::from_secs(3),
        "Ready {delay:?} after the start, before the initial delay"
    );
    let evs = events(&c, "slow");
    assert!(
        evs.iter()
            .any(|e| e[0] == "Pulled"
                && e[4] == "Container image \"nginx\" already present on machine"),
        "{evs:?}"
    );

    // 3. A failing liveness probe restarts the container, into CrashLoopBackOff.
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sick\n  namespace: default\n  annotations:\n    sim.k1s.io/liveness-fail-after-seconds: \"1\"\nspec:\n  containers:\n  - name: app\n    image: nginx\n    livenessProbe:\n      periodSeconds: 1\n      failureThreshold: 1\n      httpGet:\n        port: 80\n",
    );
    wait_until(WAIT, "sick in CrashLoopBackOff", || {
        let s = &pod(&c, "sick")["status"]["containerStatuses"][0];
        (s["state"]["waiting"]["reason"] == "CrashLoopBackOff").then_some(())
    });
    let status = wait_until(WAIT, "sick restarted twice", || {
        let s = pod(&c, "sick")["status"]["containerStatuses"][0].clone();
        (s["restartCount"].as_i64().unwrap_or(0) >= 2).then_some(s)
    });
    let last = &status["lastState"]["terminated"];
    assert_eq!(last["reason"], "Error", "{status}");
    assert_eq!(last["exitCode"], 137, "{status}");
    let evs = events(&c, "sick");
    let has = |reason: &str, message: &str| evs.iter().any(|e| e[0] == reason && e[4] == message);
    assert!(
        has(
            "Unhealthy",
            "Liveness probe failed: HTTP probe failed with statuscode: 500"
        ),
        "{evs:?}"
    );
    assert!(
        has(
            "Killing",
            "Container app failed liveness probe, will be restarted"
        ),
        "{evs:?}"
    );
    assert!(
        evs.iter().any(|e| e[0] == "BackOff"
            && e[4].starts_with("Back-off restarting failed container app in pod sick_default(")),
        "{evs:?}"
    );

    // 4. A graceful deletion stops the containers: `Killing`.
    c.kubectl_ok(&["delete", "pod", "web", "--wait=false"]);
    wait_until(WAIT, "web's Killing event", || {
        events(&c, "web")
            .iter()
            .any(|e| e[0] == "Killing" && e[4] == "Stopping container web")
            .then_some(())
    });
}

#[test]
fn kubectl_debug_adds_a_running_ephemeral_container() {
    let c = TestCluster::start();
    c.kubectl_ok(&["run", "web", "--image=nginx"]);
    c.kubectl_ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=40s"]);
    // kubectl debug patches pods/ephemeralcontainers.
    c.kubectl_ok(&[
        "debug",
        "web",
        "--image=busybox",
        "-c",
        "dbg",
        "--target=web",
        "--profile=general",
        "--",
        "sleep",
        "1d",
    ]);
    let p = wait_until(WAIT, "the ephemeral container running", || {
        let p = pod(&c, "web");
        p["status"]["ephemeralContainerStatuses"][0]["state"]["running"]
            .is_object()
            .then_some(p)
    });
    assert_eq!(p["spec"]["ephemeralContainers"][0]["name"], "dbg");
    assert_eq!(
        p["spec"]["ephemeralContainers"][0]["targetContainerName"],
        "web"
    );
    assert_eq!(p["status"]["ephemeralContainerStatuses"][0]["ready"], false);
    assert!(
        events(&c, "web")
            .iter()
            .any(|e| e[0] == "Started" && e[4] == "Started container dbg"),
        "{:?}",
        events(&c, "web")
    );
    // Upstream's checks: a target that does not exist, a field ephemeral containers may not
    // have, and ephemeral containers on create.
    let args = [
        "debug",
        "web",
        "--image=busybox",
        "--target=nope",
        "--profile=general",
    ];
    let err = k1s_tests::fails(&args, c.kubectl(&args));
    assert!(
        err.contains("spec.ephemeralContainers[1].targetContainerName: Not found: \"nope\""),
        "{err}"
    );
    let patch = r#"{"spec":{"ephemeralContainers":[{"name":"dbg","image":"busybox","command":["sleep","1d"],"targetContainerName":"web","terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"Always"},{"name":"probe","image":"busybox","ports":[{"containerPort":80}]}]}}"#;
    let args = [
        "patch",
        "pod",
        "web",
        "--subresource=ephemeralcontainers",
        "--type=strategic",
        "-p",
        patch,
    ];
    let err = k1s_tests::fails(&args, c.kubectl(&args));
    assert!(
        err.contains(
            "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container"
        ),
        "{err}"
    );
    let args = ["apply", "-f", "-"];
    let err = k1s_tests::fails(
        &args,
        c.kubectl_stdin(
            &args,
            "apiVersion: v1\nkind: Pod\nmetadata: {name: early}\nspec:\n  containers: [{name: c, image: nginx}]\n  ephemeralContainers: [{name: e, image: busybox}]\n",
        ),
    );
    assert!(
        err.contains("spec.ephemeralContainers: Forbidden: cannot be set on create"),
        "{err}"
    );
}

#[test]
fn kubectl_patch_resize_changes_resources_in_place() {
    let c = TestCluster::start();
    // Discovery lists the pod subresources upstream lists, streaming ones included.
    let v1 = json(&c, &["get", "--raw", "/api/v1"]);
    let names: Vec<&str> = v1["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for sub in [
        "pods/attach",
        "pods/exec",
        "pods/log",
        "pods/portforward",
        "pods/resize",
    ] {
        assert!(names.contains(&sub), "{sub} not in {names:?}");
    }
    c.apply(
        r#"apiVersion: v1
kind: Pod
metadata: {name: rz}
spec:
  containers:
  - name: c
    image: nginx
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 200m, memory: 128Mi}
  - name: d
    image: nginx
    resources:
      requests: {cpu: 50m}
"#,
    );
    c.kubectl_ok(&["wait", "--for=condition=Ready", "pod/rz", "--timeout=40s"]);
    let resize = |patch: &str| {
        let args = [
            "patch",
            "pod",
            "rz",
            "--subresource=resize",
            "--type=strategic",
            "-p",
            patch,
        ];
        (c.kubectl(&args), args.map(str::to_string))
    };
    // A resize changes the resources; other changes in the same request are dropped.
    let (out, _) = resize(
        r#"{"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}"#,
    );
    assert!(out.status.success(), "{out:?}");
    let p = wait_until(WAIT, "the node to report the resized resources", || {
        let p = pod(&c, "rz");
        (p["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] == "150m").then_some(p)
    });
    let container = &p["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx");
    assert_eq!(container["resources"]["limits"]["cpu"], "300m");
    let status = &p["status"]["containerStatuses"][0];
    assert_eq!(status["allocatedResources"]["cpu"], "150m");
    assert_eq!(status["resources"]["limits"]["cpu"], "300m");
    assert_eq!(status["restartCount"], 0);
    assert_eq!(p["status"]["qosClass"], "Burstable");
    // The pod itself still refuses resource changes.
    let args = [
        "patch",
        "pod",
        "rz",
        "-p",
        r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"120m"}}}]}}"#,
    ];
    let err = k1s_tests::fails(&args, c.kubectl(&args));
    assert!(err.contains("pod updates may not change fields"), "{err}");
    // Upstream's refusals (ValidatePodResize and ValidateResourceRequirements).
    for (patch, expected) in [
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m"}}}]}}"#,
            r#"spec.containers[0].resources.requests: Invalid value: "500m": must be less than or equal to cpu limit of 300m"#,
        ),
        (
            r#"{"spec":{"containers":[{"name":"d","resources":{"requests":{"cpu":null}}}]}}"#,
            "spec.containers[1].resources.requests: Forbidden: resource requests cannot be removed",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":null}}}]}}"#,
            "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"ephemeral-storage":"1Gi"}}}]}}"#,
            "spec: Forbidden: only cpu and memory resources are mutable",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":"100Mi"}}}]}}"#,
            "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer",
        ),
        (
            r#"{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"300m","memory":"128Mi"}}},{"name":"d","resources":{"requests":{"memory":"64Mi"},"limits":{"cpu":"50m","memory":"64Mi"}}}]}}"#,
            r#"spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing"#,
        ),
    ] {
        let (out, args) = resize(patch);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = k1s_tests::fails(&args, out);
        assert!(err.contains(expected), "{patch}: {err}");
    }
    let p = pod(&c, "rz");
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        serde_json::json!({"requests": {"cpu": "150m", "memory": "64Mi"}, "limits": {"cpu": "300m", "memory": "128Mi"}})
    );
}

/// Commands whose end is known run as they would (the docs' `kubectl create job ... -- echo`,
/// the e2e Job fixtures' `sh -c "exit 1"`), and a pod active past its `activeDeadlineSeconds`
/// is Failed with `DeadlineExceeded` (pods.go's "should allow activeDeadlineSeconds to be
/// updated").
#[test]
fn known_commands_end_and_active_deadlines_fail_pods() {
    let c = TestCluster::start();
    c.kubectl_ok(&[
        "create",
        "job",
        "hello",
        "--image=busybox",
        "--",
        "echo",
        "Hello World",
    ]);
    c.kubectl_ok(&[
        "run",
        "fails",
        "--image=busybox",
        "--restart=Never",
        "--command",
        "--",
        "/bin/sh",
        "-c",
        "sleep 1; exit 3",
    ]);
    c.kubectl_ok(&["run", "forever", "--image=busybox", "--restart=Never"]);
    c.kubectl_ok(&[
        "wait",
        "--for=condition=Complete",
        "job/hello",
        "--timeout=30s",
    ]);
    assert_eq!(c.kubectl_ok(&["logs", "job/hello"]), "Hello World\n");
    let failed = wait_until(WAIT, "the failing pod to end", || {
        let p = pod(&c, "fails");
        (p["status"]["phase"] == "Failed").then_some(p)
    });
    assert_eq!(
        failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3,
        "{failed}"
    );
    let running = wait_until(WAIT, "forever to run", || {
        let p = pod(&c, "forever");
        (p["status"]["phase"] == "Running").then_some(p)
    });
    // The kubelet reports the container's mounts (RecursiveReadOnlyMounts, on in 1.33).
    let mounts = &running["status"]["containerStatuses"][0]["volumeMounts"];
    assert_eq!(
        mounts[0]["mountPath"], "/var/run/secrets/kubernetes.io/serviceaccount",
        "{running}"
    );
    assert_eq!(mounts[0]["readOnly"], true);
    assert_eq!(mounts[0]["recursiveReadOnly"], "Disabled");
    c.kubectl_ok(&[
        "patch",
        "pod",
        "forever",
        "-p",
        r#"{"spec":{"activeDeadlineSeconds":1}}"#,
    ]);
    let ended = wait_until(WAIT, "the deadline to end the pod", || {
        let p = pod(&c, "forever");
        (p["status"]["phase"] == "Failed").then_some(p)
    });
    assert_eq!(ended["status"]["reason"], "DeadlineExceeded", "{ended}");
    assert_eq!(
        ended["status"]["message"],
        "Pod was active on the node longer than the specified deadline"
    );
}

/// The kubelet's admission (statefulset.go's "Should recreate evicted statefulset"): a pod bound
/// to a node whose running pod holds the host port it asks for is rejected, Failed with reason
/// NodePorts.
#[test]
fn a_pod_whose_host_port_is_taken_is_rejected_by_the_node() {
    let c = TestCluster::start();
    let pod = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\n\
             spec:\n  nodeName: k1s-node-0\n  containers: [{{name: c, image: nginx, ports: [{{containerPort: 21017, hostPort: 21017}}]}}]\n"
        )
    };
    c.apply(&pod("first"));
    wait_until(WAIT, "the first pod to run", || {
        (self::pod(&c, "first")["status"]["phase"] == "Running").then_some(())
    });
    c.apply(&pod("second"));
    let rejected = wait_until(WAIT, "the second pod to be rejected", || {
        let p = self::pod(&c, "second");
        (p["status"]["phase"] == "Failed").then_some(p)
    });
    assert_eq!(rejected["status"]["reason"], "NodePorts", "{rejected}");
    assert_eq!(
        rejected["status"]["message"],
        "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
    );
    assert_eq!(self::pod(&c, "first")["status"]["phase"], "Running");
}

/// The docs' "Define a Command and Arguments for a Container" and ConfigMap-to-env examples:
/// `$(VAR)` in command and args is expanded from the container's environment before it runs.
#[test]
fn arguments_expand_environment_references() {
    let c = TestCluster::start();
    c.kubectl_ok(&[
        "create",
        "configmap",
        "special-config",
        "--from-literal=SPECIAL_LEVEL=very",
    ]);
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: print-greeting, namespace: default}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: env-print-demo\n    image: bash\n    env:\n    - {name: GREETING, value: Warm greetings to}\n    - {name: HONORIFIC, value: The Most Honorable}\n    - {name: NAME, value: Kubernetes}\n    - name: LEVEL\n      valueFrom: {configMapKeyRef: {name: special-config, key: SPECIAL_LEVEL}}\n    command: [echo]\n    args: [\"$(GREETING) $(HONORIFIC) $(NAME), $(LEVEL) $(UNSET)\"]\n",
    );
    wait_until(WAIT, "the pod to finish", || {
        (pod(&c, "print-greeting")["status"]["phase"] == "Succeeded").then_some(())
    });
    assert_eq!(
        c.kubectl_ok(&["logs", "print-greeting"]),
        "Warm greetings to The Most Honorable Kubernetes, very $(UNSET)\n"
    );
}

/// Upstream's e2e pods that check their output (`e2epodoutput.TestContainerOutput`): agnhost's
/// `mounttest` reading a ConfigMap volume with a defaultMode, busybox's `sh -c env` with
/// ConfigMap and Secret values, `entrypoint-tester`, the image default `pause`, a downward-API
/// file re-read in a loop that follows a label change, and a termination message.
#[test]
fn e2e_pods_print_what_a_node_would() {
    let c = TestCluster::start();
    let agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.53";
    c.kubectl_ok(&["create", "configmap", "cm", "--from-literal=data-1=value-1"]);
    c.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s",
        "--from-literal=data-1=value-1",
    ]);
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: cm-volume, namespace: default}}\nspec:\n  restartPolicy: Never\n  securityContext: {{runAsUser: 1000, fsGroup: 1001}}\n  volumes: [{{name: v, configMap: {{name: cm, defaultMode: 0400}}}}]\n  containers:\n  - name: c\n    image: {agnhost}\n    args: [mounttest, --file_content=/etc/configmap-volume/data-1, --file_mode=/etc/configmap-volume/data-1]\n    volumeMounts: [{{name: v, mountPath: /etc/configmap-volume, readOnly: true}}]\n"
    ));
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: env, namespace: default}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: busybox\n    command: [sh, -c, env]\n    env:\n    - {name: FOO, value: foo-value}\n    - {name: FOOBAR, value: \"$(FOO);;$(BAR)\"}\n    - name: SECRET_DATA\n      valueFrom: {secretKeyRef: {name: s, key: data-1}}\n    envFrom: [{prefix: p-, configMapRef: {name: cm}}]\n",
    );
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: entrypoint, namespace: default}}\nspec:\n  restartPolicy: Never\n  containers:\n  - {{name: c, image: {agnhost}, command: [/agnhost-2], args: [entrypoint-tester, override, arguments]}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: paused, namespace: default}}\nspec:\n  containers:\n  - {{name: c, image: {agnhost}}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: labels, namespace: default, labels: {{key1: value1}}}}\nspec:\n  volumes: [{{name: podinfo, downwardAPI: {{items: [{{path: labels, fieldRef: {{fieldPath: metadata.labels}}}}]}}}}]\n  containers:\n  - name: c\n    image: {agnhost}\n    args: [mounttest, --break_on_expected_content=false, --retry_time=120, --file_content_in_loop=/etc/podinfo/labels]\n    volumeMounts: [{{name: podinfo, mountPath: /etc/podinfo}}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {{name: message, namespace: default}}\nspec:\n  restartPolicy: Never\n  containers:\n  - {{name: c, image: busybox, command: [/bin/sh, -c], args: [\"/bin/echo -n DONE; /bin/false\"], terminationMessagePolicy: FallbackToLogsOnError}}\n"
    ));
    let finished = |name: &str, phase: &str| {
        wait_until(WAIT, name, || {
            let p = pod(&c, name);
            (p["status"]["phase"] == phase).then_some(p)
        })
    };
    finished("cm-volume", "Succeeded");
    assert_eq!(
        c.kubectl_ok(&["logs", "cm-volume"]),
        "mode of file \"/etc/configmap-volume/data-1\": -r--r-----\n\
         content of file \"/etc/configmap-volume/data-1\": value-1\n"
    );
    finished("env", "Succeeded");
    let env = c.kubectl_ok(&["logs", "env"]);
    for line in [
        "FOO=foo-value",
        "FOOBAR=foo-value;;$(BAR)",
        "SECRET_DATA=value-1",
        "p-data-1=value-1",
        "HOSTNAME=env",
        "KUBERNETES_SERVICE_PORT_HTTPS=443",
    ] {
        assert!(env.lines().any(|l| l == line), "{line} in {env}");
    }
    // kubectl/logs.go's logs-generator: klog lines spread over the run, then exit 0.
    c.kubectl_ok(&[
        "run",
        "logs-generator",
        &format!("--image={agnhost}"),
        "--restart=Never",
        "--",
        "logs-generator",
        "--log-lines-total",
        "10",
        "--run-duration",
        "1s",
    ]);
    finished("logs-generator", "Succeeded");
    let logs = c.kubectl_ok(&["logs", "logs-generator"]);
    assert_eq!(logs.lines().count(), 10, "{logs}");
    assert!(
        logs.lines()
            .all(|l| l.contains(" logs_generator.go:76] ") && l.contains(" /api/v1/namespaces/")),
        "{logs}"
    );
    assert_eq!(
        c.kubectl_ok(&["logs", "logs-generator", "--tail=1"])
            .lines()
            .count(),
        1
    );
    finished("entrypoint", "Succeeded");
    assert_eq!(
        c.kubectl_ok(&["logs", "entrypoint"]),
        "[/agnhost-2 entrypoint-tester override arguments]\n"
    );
    finished("paused", "Running");
    assert_eq!(c.kubectl_ok(&["logs", "paused"]), "Paused\n");
    finished("labels", "Running");
    assert!(
        c.kubectl_ok(&["logs", "labels"])
            .contains("key1=\"value1\"\n")
    );
    c.kubectl_ok(&["label", "pod", "labels", "key3=value3"]);
    assert!(
        c.kubectl_ok(&["logs", "labels"])
            .contains("key3=\"value3\"\n")
    );
    let failed = finished("message", "Failed");
    assert_eq!(
        failed["status"]["containerStatuses"][0]["state"]["terminated"]["message"], "DONE",
        "{failed}"
    );

    // kubectl exec (WebSocket, v5.channel.k8s.io) runs known commands in the sandbox, with
    // their exit codes; others are refused with a message saying why.
    assert_eq!(
        c.kubectl_ok(&["exec", "labels", "--", "cat", "/etc/podinfo/labels"]),
        "key1=\"value1\"\nkey3=\"value3\""
    );
    assert_eq!(
        c.kubectl_ok(&["exec", "labels", "--", "sh", "-c", "echo $HOSTNAME"]),
        "labels\n"
    );
    let failing = c.kubectl(&["exec", "labels", "--", "sh", "-c", "exit 3"]);
    assert_eq!(failing.status.code(), Some(3), "{failing:?}");
    assert!(
        String::from_utf8_lossy(&failing.stderr).contains("command terminated with exit code 3")
    );
    let unknown = c.kubectl(&["exec", "labels", "--", "ls", "/"]);
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("k1s runs no process"),
        "{unknown:?}"
    );
}

/// A pod created before the ConfigMap it needs (a user's everyday mistake, and
/// configmap_volume.go's non-optional volume): its volume cannot be mounted (`FailedMount`,
/// `ContainerCreating`), an env source keeps its container in `CreateContainerConfigError`,
/// and both start once the ConfigMap exists. The node reads the ConfigMap as itself, which the
/// Node authorizer allows for its pods only.
#[test]
fn pods_wait_for_the_config_maps_they_need() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: vol, namespace: default}\nspec:\n  volumes: [{name: createcm-volume, configMap: {name: later}}]\n  containers: [{name: c, image: busybox, command: [sleep, infinity], volumeMounts: [{name: createcm-volume, mountPath: /etc/cm}]}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: envpod, namespace: default}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    command: [sleep, infinity]\n    env: [{name: X, valueFrom: {configMapKeyRef: {name: later, key: data-1}}}]\n",
    );
    let waiting = |name: &str, reason: &str| {
        wait_until(WAIT, reason, || {
            let p = pod(&c, name);
            let w = &p["status"]["containerStatuses"][0]["state"]["waiting"];
            (w["reason"] == reason).then(|| (p["status"]["phase"].clone(), w["message"].clone()))
        })
    };
    let (phase, _) = waiting("vol", "ContainerCreating");
    assert_eq!(phase, "Pending");
    let (phase, message) = waiting("envpod", "CreateContainerConfigError");
    assert_eq!(
        (phase.as_str(), message.as_str()),
        (Some("Pending"), Some("configmap \"later\" not found"))
    );
    let mount = wait_until(WAIT, "a FailedMount event", || {
        events(&c, "vol")
            .into_iter()
            .find(|e| e[0] == "FailedMount")
    });
    assert_eq!(
        mount[4],
        "MountVolume.SetUp failed for volume \"createcm-volume\" : configmap \"later\" not found"
    );
    c.kubectl_ok(&["create", "configmap", "later", "--from-literal=data-2=x"]);
    wait_until(WAIT, "the missing key to be named", || {
        let p = pod(&c, "envpod");
        let message = &p["status"]["containerStatuses"][0]["state"]["waiting"]["message"];
        (message == "couldn't find key data-1 in ConfigMap default/later").then_some(())
    });
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "later",
        "-p",
        r#"{"data":{"data-1":"value-1"}}"#,
    ]);
    for name in ["vol", "envpod"] {
        wait_until(WAIT, "the pod to run", || {
            (pod(&c, name)["status"]["phase"] == "Running").then_some(())
        });
    }
    assert_eq!(
        c.kubectl_ok(&["exec", "envpod", "--", "printenv", "X"]),
        "value-1\n"
    );
}
