//! Binding a pod as upstream's BindingREST does, through `pods/<name>/binding` and through the
//! top-level `bindings` resource (what `kubectl create -f` of a Binding posts to): the Binding's
//! name must match, its target must be a named Node, its uid and resourceVersion are
//! preconditions, its annotations land on the pod, and a bound pod cannot be bound again.

use k1s_tests::{StartOptions, TestCluster};

/// JSON (valid YAML too: `kubectl create --raw` sends the file as it is, as JSON).
fn binding(name: &str, uid: &str, node: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "uid": uid, "annotations": {"bound-by": "test"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    })
    .to_string()
}

#[test]
fn bindings_assign_pods_to_nodes_as_upstream() {
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec!["--disable-scheduler".into()],
        ..Default::default()
    });
    for pod in ["p1", "p2"] {
        c.kubectl_ok(&["run", pod, "--image=nginx", "--restart=Never"]);
    }
    let uid = c.kubectl_ok(&["get", "pod", "p1", "-o", "jsonpath={.metadata.uid}"]);

    // A stale uid is a storage precondition failure, a Conflict.
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        &binding("p1", "stale", "k1s-node-0"),
    );
    let err = k1s_tests::stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "Operation cannot be fulfilled on pods \"p1\": StorageError: invalid object, Code: 4, \
             Key: /registry/pods/default/p1, ResourceVersion: 0, AdditionalErrorMsg: \
             Precondition failed: UID in precondition: stale, UID in object meta: "
        ),
        "{err}"
    );

    let out = c.kubectl_stdin(&["create", "-f", "-"], &binding("p1", &uid, "k1s-node-0"));
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let got = c.kubectl_ok(&[
        "get",
        "pod",
        "p1",
        "-o",
        "jsonpath={.spec.nodeName} {.metadata.annotations.bound-by} \
         {.status.conditions[?(@.type==\"PodScheduled\")].status}",
    ]);
    assert_eq!(got, "k1s-node-0 test True");

    // Bound once, never again.
    let out = c.kubectl_stdin(&["create", "-f", "-"], &binding("p1", "", "k1s-node-0"));
    assert!(!out.status.success());
    assert!(
        k1s_tests::stderr(&out).contains("pod p1 is already assigned to node \"k1s-node-0\""),
        "{}",
        k1s_tests::stderr(&out)
    );

    // The subresource checks the Binding's name against the URL's.
    let file = c.scratch_dir().join("binding.yaml");
    std::fs::write(&file, binding("other", "", "k1s-node-0")).expect("write the Binding");
    let path = file.to_str().expect("a UTF-8 path");
    let url = "/api/v1/namespaces/default/pods/p2/binding";
    let out = c.kubectl(&["create", "--raw", url, "-f", path]);
    assert!(!out.status.success());
    assert!(
        k1s_tests::stderr(&out).contains("name in URL does not match name in Binding object"),
        "{}",
        k1s_tests::stderr(&out)
    );
    // ValidatePodBinding: a target of another kind, or without a name, binds nothing; upstream
    // answers with the plain error aggregate (a 500 without a reason).
    let mut bad: serde_json::Value =
        serde_json::from_str(&binding("p2", "", "")).expect("a Binding");
    bad["target"]["kind"] = "Pod".into();
    std::fs::write(&file, bad.to_string()).expect("write the Binding");
    let out = c.kubectl(&["create", "--raw", url, "-f", path]);
    assert!(!out.status.success());
    assert!(
        k1s_tests::stderr(&out).contains(
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", \
             target.name: Required value]"
        ),
        "{}",
        k1s_tests::stderr(&out)
    );
    let node = c.kubectl_ok(&["get", "pod", "p2", "-o", "jsonpath={.spec.nodeName}"]);
    assert_eq!(node, "");
    std::fs::write(&file, binding("p2", "", "k1s-node-0")).expect("write the Binding");
    c.kubectl_ok(&["create", "--raw", url, "-f", path]);
    let node = c.kubectl_ok(&["get", "pod", "p2", "-o", "jsonpath={.spec.nodeName}"]);
    assert_eq!(node, "k1s-node-0");
}
