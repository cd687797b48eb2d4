//! The Node authorizer and NodeRestriction admission through kubectl, with node credentials
//! from a static token file (`system:node:n1` in `system:nodes`): a node writes its own Node,
//! its own Lease and the status of pods bound to it, and nothing that belongs to another node;
//! it reads the secrets and configmaps of pods bound to it, and no others (upstream's e2e
//! test/e2e/auth/node_authz.go).

use std::time::Duration;

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

/// A cluster without simulated nodes or scheduler that knows n1's token.
fn node_cluster() -> TestCluster {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "node-one-token,system:node:n1,uid-n1,\"system:nodes\"\n",
    )
    .expect("write tokens");
    // The server reads the token file at start; the directory may go afterwards.
    TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--nodes=0".into(),
            "--disable-scheduler".into(),
            format!("--token-auth-file={}", tokens.display()),
        ],
        ..Default::default()
    })
}

#[test]
fn a_node_writes_only_what_is_its_own() {
    let c = node_cluster();
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

/// `kubectl get <kind> <name>` as n1: Ok(output) or Err(stderr).
fn node_get(c: &TestCluster, kind: &str, name: &str) -> Result<String, String> {
    let out = kubectl_as_node(c, &["get", kind, name, "-o", "name"]);
    if out.status.success() {
        Ok(k1s_tests::stdout(&out))
    } else {
        Err(k1s_tests::stderr(&out))
    }
}

fn assert_forbidden(result: Result<String, String>, what: &str) {
    let err = result.expect_err(what);
    assert!(
        err.contains("(Forbidden)")
            && err.contains("no relationship found between node 'n1' and this object"),
        "{what}: {err}"
    );
}

#[test]
fn a_node_reads_only_the_secrets_and_configmaps_of_its_pods() {
    let c = node_cluster();
    let wait = Duration::from_secs(20);

    // Nonexistent objects: Forbidden, not NotFound.
    assert_forbidden(node_get(&c, "secret", "foo"), "missing secret");
    assert_forbidden(node_get(&c, "configmap", "foo"), "missing configmap");

    // Existing objects no pod of n1 uses: Forbidden, even when n2's pod uses them.
    c.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "node-auth-secret",
        "--from-literal=data=keep it secret",
    ]);
    c.kubectl_ok(&[
        "create",
        "configmap",
        "node-auth-configmap",
        "--from-literal=data=content",
    ]);
    c.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "other-secret",
        "--from-literal=a=b",
    ]);
    assert_forbidden(node_get(&c, "secret", "node-auth-secret"), "unused secret");
    assert_forbidden(
        node_get(&c, "configmap", "node-auth-configmap"),
        "unused configmap",
    );
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere, namespace: default}\nspec:\n  nodeName: n2\n  containers: [{name: c, image: busybox}]\n  volumes: [{name: s, secret: {secretName: other-secret}}]\n",
    );

    // A pod bound to n1 that uses both: n1 may read them (once the graph has the pod).
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: pause, namespace: default}\nspec:\n  nodeName: n1\n  containers:\n  - name: pause\n    image: registry.k8s.io/pause\n    envFrom: [{configMapRef: {name: node-auth-configmap}}]\n  volumes: [{name: node-auth-secret, secret: {secretName: node-auth-secret}}]\n",
    );
    let got = k1s_tests::wait_until(wait, "n1 reads the secret of its pod", || {
        node_get(&c, "secret", "node-auth-secret").ok()
    });
    assert_eq!(got.trim(), "secret/node-auth-secret");
    let got = node_get(&c, "configmap", "node-auth-configmap").expect("configmap of its pod");
    assert_eq!(got.trim(), "configmap/node-auth-configmap");
    assert_forbidden(node_get(&c, "secret", "other-secret"), "n2's pod's secret");
    // A list or watch of that one name, as a kubelet's reflector asks; never all of them.
    node_ok(
        &c,
        &[
            "get",
            "secrets",
            "--field-selector=metadata.name=node-auth-secret",
        ],
    );
    let err = node_refused(&c, &["get", "secrets"]);
    assert!(err.contains("No Object name found"), "{err}");
    let err = node_refused(&c, &["delete", "secret", "node-auth-secret"]);
    assert!(
        err.contains("can only read resources of this type"),
        "{err}"
    );

    // Once the pod is gone, so is the access.
    c.kubectl_ok(&["delete", "pod", "pause", "--grace-period=0", "--force"]);
    k1s_tests::wait_until(wait, "n1 loses the secret with its pod", || {
        node_get(&c, "secret", "node-auth-secret").err()
    });
    assert_forbidden(node_get(&c, "secret", "node-auth-secret"), "after deletion");
    assert_forbidden(
        node_get(&c, "configmap", "node-auth-configmap"),
        "after deletion",
    );
}
