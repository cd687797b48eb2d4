//! The filter chain through kubectl (HTTP/2): refusals before the body is read still reach the
//! client as a `Status`, and a list or watch pinned to one name by `metadata.name=X` is
//! authorized as a request for that name (RBAC `resourceNames`).

use k1s_tests::{TestCluster, fails, ok};

/// A ConfigMap manifest of about `size` bytes.
fn big_configmap(c: &TestCluster, name: &str, size: usize) -> std::path::PathBuf {
    let body = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"big": "x".repeat(size)}
    });
    let path = c.scratch_dir().join(format!("{name}.json"));
    std::fs::write(&path, body.to_string()).expect("write manifest");
    path
}

/// kubectl with a kubeconfig that authenticates by bearer token only (no client certificate,
/// which would take precedence).
fn kubectl_with_token(c: &TestCluster, token: &str, args: &[&str]) -> std::process::Output {
    let kc = c.token_kubeconfig(token, "token-user");
    let mut cmd = c.kubectl_command(&k1s_tests::Kubectl::dispatcher(), args);
    cmd.env("KUBECONFIG", &kc);
    k1s_tests::run_with_timeout(cmd, None, k1s_tests::KUBECTL_TIMEOUT).expect("kubectl")
}

#[test]
fn a_post_with_a_bad_token_gets_unauthorized_not_a_reset_stream() {
    let c = TestCluster::start();
    for size in [10, 1024 * 1024] {
        let file = big_configmap(&c, "refused", size);
        let args = [
            "create",
            "--raw",
            "/api/v1/namespaces/default/configmaps",
            "-f",
            file.to_str().expect("utf-8"),
        ];
        let err = fails(&args, kubectl_with_token(&c, "not-a-valid-token", &args));
        assert!(
            err.contains("Unauthorized"),
            "a {size}-byte POST with a bad token must read the 401 Status: {err}"
        );
        assert!(
            !err.contains("stream error") && !err.contains("INTERNAL_ERROR"),
            "{err}"
        );
    }
    let args = ["get", "configmap", "refused"];
    let err = fails(&args, c.kubectl(&args));
    assert!(err.contains("NotFound"), "nothing was created: {err}");
}

#[test]
fn a_forbidden_post_to_a_non_resource_url_gets_the_403_status() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "serviceaccount", "nobody"]);
    let token = c.kubectl_ok(&["create", "token", "nobody"]);
    let file = big_configmap(&c, "x", 1024 * 1024);
    let args = [
        "create",
        "--raw",
        "/healthz",
        "-f",
        file.to_str().expect("utf-8"),
    ];
    let err = fails(&args, kubectl_with_token(&c, token.trim(), &args));
    assert!(
        err.contains("Forbidden")
            && err.contains("system:serviceaccount:default:nobody")
            && err.contains("cannot post path \"/healthz\""),
        "{err}"
    );
}

#[test]
fn a_list_pinned_to_one_name_is_authorized_by_resource_names() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "configmap", "one", "--from-literal=k=v"]);
    c.kubectl_ok(&["create", "configmap", "two", "--from-literal=k=v"]);
    c.kubectl_ok(&["create", "serviceaccount", "reader"]);
    c.kubectl_ok(&[
        "create",
        "role",
        "read-one",
        "--verb=get,list,watch",
        "--resource=configmaps",
        "--resource-name=one",
    ]);
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "read-one",
        "--role=read-one",
        "--serviceaccount=default:reader",
    ]);
    let token = c.kubectl_ok(&["create", "token", "reader"]);
    let as_reader = |args: &[&str]| kubectl_with_token(&c, token.trim(), args);
    let args = ["get", "configmap", "one", "-o", "name"];
    assert_eq!(ok(&args, as_reader(&args)).trim(), "configmap/one");
    let args = [
        "get",
        "configmaps",
        "--field-selector=metadata.name=one",
        "-o",
        "name",
    ];
    assert_eq!(ok(&args, as_reader(&args)).trim(), "configmap/one");
    let args = ["get", "configmaps", "-o", "name"];
    let err = fails(&args, as_reader(&args));
    assert!(err.contains("cannot list resource \"configmaps\""), "{err}");
    let args = ["get", "configmaps", "--field-selector=metadata.name=two"];
    let err = fails(&args, as_reader(&args));
    assert!(err.contains("Forbidden"), "{err}");
    // A watch pinned to the name is allowed too.
    let args = [
        "get",
        "--raw",
        "/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Done&timeoutSeconds=1",
    ];
    let out = ok(&args, as_reader(&args));
    assert!(out.contains("\"name\":\"one\""), "{out}");
}

/// curl over HTTP/2 is the client that showed the reset stream: it reports "Stream error in the
/// HTTP/2 framing layer" when the server answers before reading a large body and cancels it.
#[test]
fn curl_over_http2_reads_the_refusal_of_a_large_post() {
    let c = TestCluster::start();
    let body = c.scratch_dir().join("body.json");
    std::fs::write(&body, "x".repeat(2_000_000)).expect("write body");
    for _ in 0..3 {
        let out = std::process::Command::new("curl")
            .args(["-sS", "-k", "--http2", "-X", "POST"])
            .args(["-H", "Authorization: Bearer not-a-valid-token"])
            .args(["-H", "Content-Type: application/json"])
            .arg("--data-binary")
            .arg(format!("@{}", body.display()))
            .arg(format!("{}/api/v1/namespaces/default/configmaps", c.url()))
            .args(["-w", "\n%{http_code}"])
            .output()
            .expect("curl (the test command installs it)");
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "curl failed: {err}");
        assert!(text.ends_with("\n401"), "{text}");
        assert!(text.contains("\"reason\":\"Unauthorized\""), "{text}");
    }
}
