//! The namespace controller through kubectl: deleting a namespace deletes its content of every
//! kind, waits for objects held by finalizers (with upstream's status conditions meanwhile), then
//! the namespace goes.

use std::time::Duration;

use k1s_tests::{TestCluster, wait_until};

const WAIT: Duration = Duration::from_secs(60);

fn conditions(c: &TestCluster, ns: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "namespace",
        ns,
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{\"\\n\"}{end}",
    ])
}

#[test]
fn deleting_a_namespace_deletes_its_content_then_the_namespace() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "doomed"]);
    for i in 0..5 {
        let name = format!("cm-{i}");
        c.kubectl_ok(&[
            "-n",
            "doomed",
            "create",
            "configmap",
            &name,
            "--from-literal=k=v",
        ]);
    }
    c.kubectl_ok(&[
        "-n",
        "doomed",
        "create",
        "secret",
        "generic",
        "s",
        "--from-literal=k=v",
    ]);
    c.kubectl_ok(&[
        "-n",
        "doomed",
        "create",
        "deployment",
        "web",
        "--image=nginx",
    ]);
    c.kubectl_ok(&[
        "-n",
        "doomed",
        "create",
        "service",
        "clusterip",
        "svc",
        "--tcp=80:80",
    ]);
    c.kubectl_ok(&[
        "-n",
        "doomed",
        "create",
        "role",
        "r",
        "--verb=get",
        "--resource=pods",
    ]);
    c.kubectl_ok(&["-n", "doomed", "create", "job", "j", "--image=busybox"]);
    // `kubectl delete ns` waits for the namespace to be gone, as with upstream.
    c.kubectl_ok(&["delete", "namespace", "doomed", "--timeout=30s"]);
    let out = c.kubectl(&["get", "namespace", "doomed"]);
    assert!(!out.status.success(), "the namespace is gone");
    // A namespace of the same name starts empty.
    c.kubectl_ok(&["create", "namespace", "doomed"]);
    let left = c.kubectl_ok(&[
        "-n",
        "doomed",
        "get",
        "configmaps,secrets,deployments,roles",
        "-o",
        "name",
    ]);
    assert!(
        left.lines().all(|l| l == "configmap/kube-root-ca.crt"),
        "only the new namespace's own objects: {left}"
    );
}

#[test]
fn an_object_held_by_a_finalizer_keeps_the_namespace_until_released() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "held"]);
    c.kubectl_ok(&["-n", "held", "create", "configmap", "free"]);
    c.kubectl_ok(&["-n", "held", "create", "configmap", "pinned"]);
    c.kubectl_ok(&[
        "-n",
        "held",
        "patch",
        "configmap",
        "pinned",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    c.kubectl_ok(&["delete", "namespace", "held", "--wait=false"]);
    let text = wait_until(WAIT, "the remaining-content conditions", || {
        let t = conditions(&c, "held");
        t.contains("NamespaceFinalizersRemaining=True").then_some(t)
    });
    for line in [
        "NamespaceDeletionDiscoveryFailure=False ResourcesDiscovered: All resources successfully discovered",
        "NamespaceDeletionGroupVersionParsingFailure=False ParsedGroupVersions: All legacy kube types successfully parsed",
        "NamespaceDeletionContentFailure=False ContentDeleted: All content successfully deleted, may be waiting on finalization",
        "NamespaceContentRemaining=True SomeResourcesRemain: Some resources are remaining: configmaps has 1 resource instances",
        "NamespaceFinalizersRemaining=True SomeFinalizersRemain: Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
    let phase = c.kubectl_ok(&["get", "namespace", "held", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Terminating");
    let left = c.kubectl_ok(&["-n", "held", "get", "configmaps", "-o", "name"]);
    assert_eq!(
        left.trim(),
        "configmap/pinned",
        "everything else was deleted"
    );
    // Releasing the finalizer lets the namespace go (upstream looks again after ~8 s).
    c.kubectl_ok(&[
        "-n",
        "held",
        "patch",
        "configmap",
        "pinned",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    wait_until(WAIT, "the namespace to go", || {
        (!c.kubectl(&["get", "namespace", "held"]).status.success()).then_some(())
    });
}

/// OrderedNamespaceDeletion (namespace.go "should delete pod first"): while a pod remains (here
/// held by a finalizer), the namespace's other content is left alone.
#[test]
fn pods_are_deleted_before_the_rest_of_a_namespace() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "ordered"]);
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: held, namespace: ordered, finalizers: [e2e.example.com/finalizer]}\n\
         spec: {containers: [{name: c, image: nginx}]}\n",
    );
    c.kubectl_ok(&["-n", "ordered", "create", "configmap", "config"]);
    c.kubectl_ok(&["delete", "namespace", "ordered", "--wait=false"]);
    let text = wait_until(WAIT, "the pod to remain", || {
        let t = conditions(&c, "ordered");
        t.contains("NamespaceContentRemaining=True").then_some(t)
    });
    assert!(text.contains("pods has 1 resource instances"), "{text}");
    let deleting = c.kubectl_ok(&[
        "-n",
        "ordered",
        "get",
        "pod",
        "held",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ]);
    assert!(!deleting.is_empty(), "the pod is being deleted");
    let config = c.kubectl_ok(&[
        "-n",
        "ordered",
        "get",
        "configmap",
        "config",
        "-o",
        "jsonpath={.metadata.name}|{.metadata.deletionTimestamp}",
    ]);
    assert_eq!(config, "config|", "the ConfigMap waits for the pods");
    c.kubectl_ok(&[
        "-n",
        "ordered",
        "patch",
        "pod",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    wait_until(Duration::from_secs(90), "the namespace to go", || {
        (!c.kubectl(&["get", "namespace", "ordered"]).status.success()).then_some(())
    });
}
