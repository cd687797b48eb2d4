//! The Node authorizer and NodeRestriction admission through kubectl, with node credentials
//! from a static token file (`system:node:n1` in `system:nodes`): a node writes its own Node,
//! its own Lease and the status of pods bound to it, and nothing that belongs to another node.

use k1s_tests::{StartOptions, TestCluster, fails, ok};

fn kubectl_as_node(c: &TestCluster, args: &[&str]) -> std::process::Output {
    let kc = c.token_kubeconfig("node-one-token", "node-n1");
    let mut cmd = c.kubectl_command(&k1s_tests::Kubectl::dispatcher(), args);
    cmd.env("KUBECONFIG", &kc);
    k1s_tests::run_with_timeout(cmd, None, k1s_tests::KUBECTL_TIMEOUT).expect("kubectl")
}

fn node_ok(c: &TestCluster, args: &[&str]) -> String {
    ok(args, kubectl_as_node(c, args))
}

fn node_refused(c: &TestCluster, args: &[&str]) -> String {
    let err = fails(args, kubectl_as_node(c, args));
    assert!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{args:?}: {err}"
    );
    err
}

/// PUTs `obj` with `status` merged in to `path` (`.../status`) as the node (kubectl's `patch
/// --subresource=status` would first GET the status subresource, which nodes may not).
fn put_status_as_node(
    c: &TestCluster,
    kind_name: &[&str],
    path: &str,
    status: serde_json::Value,
) -> std::process::Output {
    let mut args = vec!["get"];
    args.extend_from_slice(kind_name);
    args.extend_from_slice(&["-o", "json"]);
    let mut obj: serde_json::Value = serde_json::from_str(&c.kubectl_ok(&args)).expect("json");
    obj["status"] = status;
    let file = c.scratch_dir().join("status.json");
    std::fs::write(&file, obj.to_string()).expect("write");
    kubectl_as_node(
        c,
        &[
            "replace",
            "--raw",
            path,
            "-f",
            file.to_str().expect("utf-8"),
        ],
    )
}

fn pod_yaml(name: &str, node: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  nodeName: {node}\n  containers: [{{name: c, image: busybox}}]\n"
    )
}

#[test]
fn a_node_writes_only_what_is_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "node-one-token,system:node:n1,uid-n1,\"system:nodes\"\n",
    )
    .expect("write tokens");
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--nodes=0".into(),
            "--disable-scheduler".into(),
            format!("--token-auth-file={}", tokens.display()),
        ],
        ..Default::default()
    });
    for n in ["n1", "n2"] {
        c.apply(&format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {n}}}\n"
        ));
    }
    c.apply(&pod_yaml("mine", "n1"));
    c.apply(&pod_yaml("theirs", "n2"));

    // Its own Node and its status; not another's, and not its taints.
    node_ok(&c, &["get", "nodes"]);
    node_ok(&c, &["label", "node", "n1", "zone=a"]);
    let ready = serde_json::json!({"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]});
    let out = put_status_as_node(&c, &["node", "n1"], "/api/v1/nodes/n1/status", ready);
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let err = node_refused(&c, &["label", "node", "n2", "zone=a"]);
    assert!(
        err.contains("node \"n1\" is not allowed to modify node \"n2\""),
        "{err}"
    );
    let err = node_refused(&c, &["taint", "node", "n1", "k=v:NoSchedule"]);
    assert!(err.contains("not allowed to modify taints"), "{err}");
    node_refused(&c, &["delete", "node", "n1"]);

    // Pods: the status of its own pods; deletion of its own; creation of mirror pods only.
    let running = serde_json::json!({"phase": "Running"});
    let path = |p: &str| format!("/api/v1/namespaces/default/pods/{p}/status");
    let out = put_status_as_node(&c, &["pod", "mine"], &path("mine"), running.clone());
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let out = put_status_as_node(&c, &["pod", "theirs"], &path("theirs"), running);
    let err = fails(&["replace", "theirs"], out);
    assert!(
        err.contains("can only update pod status for pods with spec.nodeName set to itself"),
        "{err}"
    );
    let args = ["create", "-f", "-"];
    let mut cmd = c.kubectl_command(&k1s_tests::Kubectl::dispatcher(), &args);
    cmd.env(
        "KUBECONFIG",
        c.token_kubeconfig("node-one-token", "node-n1"),
    );
    let out = k1s_tests::run_with_timeout(
        cmd,
        Some(pod_yaml("made", "n1").as_str()),
        k1s_tests::KUBECTL_TIMEOUT,
    )
    .expect("kubectl");
    let err = fails(&args, out);
    assert!(err.contains("can only create mirror pods"), "{err}");
    node_refused(&c, &["delete", "pod", "theirs", "--wait=false"]);
    node_ok(&c, &["delete", "pod", "mine", "--wait=false"]);

    // Leases: its own in kube-node-lease only.
    let lease = |name: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: {name}, namespace: kube-node-lease}}\nspec: {{holderIdentity: {name}, leaseDurationSeconds: 40}}\n"
        )
    };
    for (name, allowed) in [("n1", true), ("n2", false)] {
        let mut cmd = c.kubectl_command(&k1s_tests::Kubectl::dispatcher(), &args);
        cmd.env(
            "KUBECONFIG",
            c.token_kubeconfig("node-one-token", "node-n1"),
        );
        let out = k1s_tests::run_with_timeout(
            cmd,
            Some(lease(name).as_str()),
            k1s_tests::KUBECTL_TIMEOUT,
        )
        .expect("kubectl");
        assert_eq!(
            out.status.success(),
            allowed,
            "lease {name}: {}",
            k1s_tests::stderr(&out)
        );
    }

    // Secrets and other objects reached upstream through the pod graph: refused.
    c.kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=a=b"]);
    let err = node_refused(&c, &["get", "secret", "s"]);
    assert!(
        err.contains("no relationship found between node 'n1' and this object"),
        "{err}"
    );
    node_refused(&c, &["create", "deployment", "d", "--image=nginx"]);
}
