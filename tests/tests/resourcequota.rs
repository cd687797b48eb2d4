//! The resourcequota controller and the endpointslice-mirroring controller through kubectl:
//! quota status appears (`kubectl describe quota`), follows creates, deletes and pods that
//! complete, counts what existed before the quota, honours scopes and spec changes; the
//! Endpoints of a selector-less Service are mirrored into EndpointSlices that follow them.

use std::time::Duration;

use k1s_tests::{TestCluster, namespace_yaml, wait_until};

const WAIT: Duration = Duration::from_secs(60);

fn used(c: &TestCluster, ns: &str, quota: &str, resource: &str) -> String {
    let out = c.kubectl(&["get", "quota", quota, "-n", ns, "-o", "json"]);
    let quota: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    quota["status"]["used"][resource]
        .as_str()
        .unwrap_or("<none>")
        .to_string()
}

fn wait_used(c: &TestCluster, ns: &str, quota: &str, resource: &str, want: &str) {
    wait_until(
        WAIT,
        &format!("{ns}/{quota} status.used.{resource} = {want}"),
        || (used(c, ns, quota, resource) == want).then_some(()),
    );
}

fn pod_yaml(ns: &str, name: &str, cpu: Option<&str>, annotations: &str) -> String {
    let resources = cpu
        .map(|c| format!(", resources: {{requests: {{cpu: {c}}}}}"))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n{annotations}spec:\n  restartPolicy: Never\n  containers: [{{name: c, image: busybox{resources}}}]\n"
    )
}

/// A new namespace, once its `default` ServiceAccount exists (pods need it).
fn namespace(c: &TestCluster, ns: &str) {
    c.apply(&namespace_yaml(ns));
    wait_until(WAIT, "the default ServiceAccount", || {
        c.kubectl(&["get", "sa", "default", "-n", ns])
            .status
            .success()
            .then_some(())
    });
}

#[test]
fn quota_status_follows_usage() {
    let c = TestCluster::start();

    // A quota's status appears with hard and used.
    namespace(&c, "q1");
    c.kubectl_ok(&[
        "create",
        "quota",
        "compute",
        "-n",
        "q1",
        "--hard=pods=2,requests.cpu=1,count/pods=3",
    ]);
    wait_used(&c, "q1", "compute", "pods", "0");
    wait_used(&c, "q1", "compute", "requests.cpu", "0");
    let hard = c.kubectl_ok(&[
        "get",
        "quota",
        "compute",
        "-n",
        "q1",
        "-o",
        "jsonpath={.status.hard.pods}",
    ]);
    assert_eq!(hard, "2");

    // Pods up to the limit, then 403 exceeded quota.
    c.apply(&pod_yaml("q1", "p1", Some("100m"), ""));
    c.apply(&pod_yaml("q1", "p2", Some("200m"), ""));
    wait_used(&c, "q1", "compute", "pods", "2");
    wait_used(&c, "q1", "compute", "requests.cpu", "300m");
    let out = c.kubectl_stdin(
        &["apply", "-f", "-"],
        &pod_yaml("q1", "p3", Some("100m"), ""),
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "a third pod was admitted");
    assert!(err.contains("exceeded quota: compute"), "{err}");
    assert!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{err}"
    );
    let described = c.kubectl_ok(&["describe", "quota", "compute", "-n", "q1"]);
    assert!(described.contains("Used"), "{described}");
    assert!(
        described
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["pods", "2", "2"]),
        "{described}"
    );

    // Deleting a pod frees its usage.
    c.kubectl_ok(&["delete", "pod", "p2", "-n", "q1", "--wait=true"]);
    wait_used(&c, "q1", "compute", "pods", "1");
    wait_used(&c, "q1", "compute", "requests.cpu", "100m");

    // A pod that completes stops counting `pods` and its compute, not `count/pods`.
    c.apply(&pod_yaml(
        "q1",
        "done",
        Some("100m"),
        "  annotations: {sim.k1s.io/run-seconds: \"1\"}\n",
    ));
    wait_used(&c, "q1", "compute", "count/pods", "2");
    wait_until(WAIT, "the pod to succeed", || {
        (c.kubectl_ok(&[
            "get",
            "pod",
            "done",
            "-n",
            "q1",
            "-o",
            "jsonpath={.status.phase}",
        ]) == "Succeeded")
            .then_some(())
    });
    wait_used(&c, "q1", "compute", "pods", "1");
    wait_used(&c, "q1", "compute", "requests.cpu", "100m");
    assert_eq!(used(&c, "q1", "compute", "count/pods"), "2");

    // An object being deleted counts until it is gone, as upstream: `held` is kept by a
    // finalizer after its delete, and the next create is charged on top of it.
    c.kubectl_ok(&[
        "create",
        "quota",
        "cms",
        "-n",
        "q1",
        "--hard=count/configmaps=5",
    ]);
    c.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: q1, finalizers: [example.com/hold]}\n");
    // kube-root-ca.crt is a ConfigMap too.
    wait_used(&c, "q1", "cms", "count/configmaps", "2");
    c.kubectl_ok(&["delete", "configmap", "held", "-n", "q1", "--wait=false"]);
    c.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late, namespace: q1}\n");
    wait_used(&c, "q1", "cms", "count/configmaps", "3");
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "q1",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    wait_used(&c, "q1", "cms", "count/configmaps", "2");

    // A quota created after the objects exist counts them.
    namespace(&c, "q2");
    for s in ["a", "b", "c"] {
        c.kubectl_ok(&[
            "create",
            "secret",
            "generic",
            s,
            "-n",
            "q2",
            "--from-literal=k=v",
        ]);
    }
    c.apply("apiVersion: v1\nkind: Service\nmetadata: {name: np, namespace: q2}\nspec:\n  type: NodePort\n  selector: {app: x}\n  ports: [{name: a, port: 80}, {name: b, port: 81}]\n");
    c.kubectl_ok(&[
        "create",
        "quota",
        "objects",
        "-n",
        "q2",
        "--hard=secrets=10,services=5,services.nodeports=4,count/services=5",
    ]);
    wait_used(&c, "q2", "objects", "secrets", "3");
    wait_used(&c, "q2", "objects", "services.nodeports", "2");
    assert_eq!(used(&c, "q2", "objects", "services"), "1");
    // The service changes type: its node ports are released.
    c.kubectl_ok(&[
        "patch",
        "svc",
        "np",
        "-n",
        "q2",
        "--type=merge",
        "-p",
        r#"{"spec":{"type":"ClusterIP","ports":[{"name":"a","port":80,"nodePort":null},{"name":"b","port":81,"nodePort":null}]}}"#,
    ]);
    wait_used(&c, "q2", "objects", "services.nodeports", "0");
    // A changed spec is mirrored into status.hard and counted at once.
    c.kubectl_ok(&[
        "patch",
        "quota",
        "objects",
        "-n",
        "q2",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/hard","value":{"secrets":"10","services":"5","configmaps":"7"}}]"#,
    ]);
    wait_until(WAIT, "status.hard to follow spec.hard", || {
        (c.kubectl_ok(&[
            "get",
            "quota",
            "objects",
            "-n",
            "q2",
            "-o",
            "jsonpath={.status.hard.configmaps}",
        ]) == "7")
            .then_some(())
    });
    wait_until(WAIT, "configmaps counted, dropped names gone", || {
        let used = c.kubectl_ok(&[
            "get",
            "quota",
            "objects",
            "-n",
            "q2",
            "-o",
            "jsonpath={.status.used}",
        ]);
        (!used.contains("nodeports") && used.contains("configmaps")).then_some(())
    });

    // Scopes: BestEffort and NotBestEffort quotas split the same pods.
    namespace(&c, "q3");
    c.apply(&pod_yaml("q3", "be", None, ""));
    c.apply(&pod_yaml("q3", "burst", Some("50m"), ""));
    c.kubectl_ok(&[
        "create",
        "quota",
        "best-effort",
        "-n",
        "q3",
        "--hard=pods=5",
        "--scopes=BestEffort",
    ]);
    c.kubectl_ok(&[
        "create",
        "quota",
        "not-best-effort",
        "-n",
        "q3",
        "--hard=pods=5",
        "--scopes=NotBestEffort",
    ]);
    wait_used(&c, "q3", "best-effort", "pods", "1");
    wait_used(&c, "q3", "not-best-effort", "pods", "1");
    c.kubectl_ok(&["delete", "pod", "be", "-n", "q3", "--wait=true"]);
    wait_used(&c, "q3", "best-effort", "pods", "0");
    assert_eq!(used(&c, "q3", "not-best-effort", "pods"), "1");
}

/// resource_quota.go "terminating scopes through scope selectors": a pod given an active
/// deadline moves into the Terminating scope, is charged there in full at once (a second
/// terminating pod is refused), and leaves the NotTerminating quota's count.
#[test]
fn a_pod_that_changes_scope_is_charged_and_recounted() {
    let c = TestCluster::start();
    namespace(&c, "scoped");
    for (name, op) in [
        ("quota-terminating", "Terminating"),
        ("quota-not-terminating", "NotTerminating"),
    ] {
        c.apply(&format!(
            "apiVersion: v1\nkind: ResourceQuota\nmetadata: {{name: {name}, namespace: scoped}}\n\
             spec:\n  hard: {{pods: \"1\"}}\n  scopeSelector:\n    matchExpressions: [{{operator: Exists, scopeName: {op}}}]\n"
        ));
        wait_used(&c, "scoped", name, "pods", "0");
    }
    c.apply(&pod_yaml("scoped", "test-pod", None, ""));
    wait_used(&c, "scoped", "quota-not-terminating", "pods", "1");
    c.kubectl_ok(&[
        "patch",
        "pod",
        "test-pod",
        "-n",
        "scoped",
        "-p",
        r#"{"spec":{"activeDeadlineSeconds":3600}}"#,
    ]);
    let second = pod_yaml("scoped", "terminating-pod", None, "").replace(
        "restartPolicy: Never",
        "restartPolicy: Never\n  activeDeadlineSeconds: 3600",
    );
    let out = c.kubectl_stdin(&["create", "-f", "-"], &second);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("exceeded quota: quota-terminating"),
        "{err}"
    );
    wait_used(&c, "scoped", "quota-terminating", "pods", "1");
    wait_used(&c, "scoped", "quota-not-terminating", "pods", "0");
}

fn mirrored(c: &TestCluster, service: &str, path: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "endpointslices",
        "-n",
        "m",
        "-l",
        &format!(
            "kubernetes.io/service-name={service},endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io"
        ),
        "-o",
        &format!("jsonpath={path}"),
    ])
}

fn endpoints_yaml(name: &str, labels: &str, ips: &[&str]) -> String {
    let addresses: Vec<String> = ips.iter().map(|ip| format!("{{ip: {ip}}}")).collect();
    format!(
        "apiVersion: v1\nkind: Endpoints\nmetadata: {{name: {name}, namespace: m{labels}}}\nsubsets:\n- addresses: [{}]\n  notReadyAddresses: [{{ip: 10.1.0.9}}]\n  ports: [{{name: http, port: 8080}}]\n",
        addresses.join(", ")
    )
}

fn selectorless_service(c: &TestCluster, name: &str) {
    c.apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: m}}\nspec:\n  ports: [{{name: http, port: 80, targetPort: 8080}}]\n"
    ));
}

#[test]
fn endpoints_of_selectorless_services_are_mirrored() {
    let c = TestCluster::start();
    c.apply(&namespace_yaml("m"));
    selectorless_service(&c, "ext");
    c.apply(&endpoints_yaml("ext", "", &["10.1.0.1", "10.1.0.2"]));
    wait_until(WAIT, "a mirrored slice", || {
        let s = mirrored(
            &c,
            "ext",
            "{range .items[*].endpoints[*]}{.addresses[0]}={.conditions.ready} {end}",
        );
        (s.trim() == "10.1.0.1=true 10.1.0.2=true 10.1.0.9=false").then_some(())
    });
    assert_eq!(
        mirrored(
            &c,
            "ext",
            "{.items[*].ports[0].port} {.items[*].ports[0].name} {.items[*].addressType}"
        ),
        "8080 http IPv4"
    );
    assert_eq!(
        mirrored(
            &c,
            "ext",
            "{.items[*].metadata.ownerReferences[0].kind}/{.items[*].metadata.ownerReferences[0].name}"
        ),
        "Endpoints/ext"
    );

    // Updated with the Endpoints.
    c.apply(&endpoints_yaml("ext", "", &["10.1.0.3"]));
    wait_until(WAIT, "the mirrored slice to follow", || {
        let s = mirrored(&c, "ext", "{.items[*].endpoints[*].addresses[0]}");
        (s == "10.1.0.3 10.1.0.9").then_some(())
    });

    // Endpoints labelled skip-mirror are not mirrored; a later label removal mirrors them.
    selectorless_service(&c, "skipped");
    c.apply(&endpoints_yaml(
        "skipped",
        ", labels: {endpointslice.kubernetes.io/skip-mirror: \"true\"}",
        &["10.2.0.1"],
    ));
    // Another Endpoints written after it is mirrored, so the skipped one was seen by now.
    selectorless_service(&c, "later");
    c.apply(&endpoints_yaml("later", "", &["10.3.0.1"]));
    wait_until(WAIT, "the later Endpoints mirrored", || {
        (!mirrored(&c, "later", "{.items[*].metadata.name}").is_empty()).then_some(())
    });
    assert_eq!(mirrored(&c, "skipped", "{.items[*].metadata.name}"), "");

    // Deleting the Endpoints deletes the slice.
    c.kubectl_ok(&["delete", "endpoints", "later", "-n", "m"]);
    wait_until(
        WAIT,
        "the mirrored slice of a deleted Endpoints to go",
        || {
            mirrored(&c, "later", "{.items[*].metadata.name}")
                .is_empty()
                .then_some(())
        },
    );

    // The Service gets a selector: the mirrored slices go.
    c.kubectl_ok(&[
        "patch",
        "svc",
        "ext",
        "-n",
        "m",
        "--type=merge",
        "-p",
        r#"{"spec":{"selector":{"app":"ext"}}}"#,
    ]);
    wait_until(WAIT, "the mirrored slice to go with a selector", || {
        mirrored(&c, "ext", "{.items[*].metadata.name}")
            .is_empty()
            .then_some(())
    });
}
