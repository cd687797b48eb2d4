//! The controller-manager through real clients: in process in `k1s server` (default service
//! accounts, root CA ConfigMaps, ClusterRole aggregation, metrics, `--controllers=-*`) and as a
//! separate `k1s controller-manager --kubeconfig` process with Lease leader election.

use std::process::{Command, Stdio};
use std::time::Duration;

use k1s_tests::{Kubectl, StartOptions, StreamingCommand, TestCluster, fails, k1s_bin, wait_until};

const WAIT: Duration = Duration::from_secs(30);

fn exists(c: &TestCluster, args: &[&str]) -> bool {
    c.kubectl(args).status.success()
}

#[test]
fn new_namespaces_get_their_default_account_and_root_ca_back_after_deletion() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "team"]);
    wait_until(WAIT, "default ServiceAccount", || {
        exists(&c, &["get", "serviceaccount", "default", "-n", "team"]).then_some(())
    });
    wait_until(WAIT, "kube-root-ca.crt", || {
        exists(&c, &["get", "configmap", "kube-root-ca.crt", "-n", "team"]).then_some(())
    });
    let ca = c.kubectl_ok(&[
        "get",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "team",
        "-o",
        "jsonpath={.data.ca\\.crt}",
    ]);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    // Both are restored when deleted, and an edited CA bundle is put back.
    c.kubectl_ok(&["delete", "serviceaccount", "default", "-n", "team"]);
    c.kubectl_ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "team"]);
    wait_until(WAIT, "default ServiceAccount recreated", || {
        exists(&c, &["get", "serviceaccount", "default", "-n", "team"]).then_some(())
    });
    wait_until(WAIT, "kube-root-ca.crt recreated", || {
        exists(&c, &["get", "configmap", "kube-root-ca.crt", "-n", "team"]).then_some(())
    });
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"data":{"ca.crt":"tampered"}}"#,
    ]);
    wait_until(WAIT, "the CA bundle restored", || {
        let now = c.kubectl_ok(&[
            "get",
            "cm",
            "kube-root-ca.crt",
            "-n",
            "team",
            "-o",
            "jsonpath={.data.ca\\.crt}",
        ]);
        (now == ca).then_some(())
    });
    // The controllers act as their own service accounts: their writes pass RBAC as such.
    let events = c.kubectl_ok(&[
        "get",
        "serviceaccount",
        "default",
        "-n",
        "team",
        "-o",
        "json",
    ]);
    assert!(events.contains("\"name\": \"default\""), "{events}");
}

fn token_secret(name: &str, account: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  annotations: {{kubernetes.io/service-account.name: {account}}}\ntype: kubernetes.io/service-account-token\n"
    )
}

/// `kubectl auth whoami` (printing the user name) with a kubeconfig holding `token` only.
fn whoami_with_token(c: &TestCluster, token: &str, name: &str) -> std::process::Output {
    let kc = c.token_kubeconfig(token, name);
    let kc = kc.to_string_lossy().to_string();
    c.run_kubectl(
        &Kubectl::dispatcher(),
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
        None,
        &[("KUBECONFIG", &kc)],
    )
}

/// The data key `key` of Secret `name`, decoded ("" while it is missing).
fn secret_value(c: &TestCluster, name: &str, key: &str) -> String {
    use base64::Engine as _;
    let b64 = c.kubectl_ok(&[
        "get",
        "secret",
        name,
        "-o",
        &format!("jsonpath={{.data.{}}}", key.replace('.', "\\.")),
    ]);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .expect("base64 data");
    String::from_utf8(bytes).expect("utf-8 data")
}

#[test]
fn service_account_token_secrets_are_filled_and_follow_their_account() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "serviceaccount", "builder"]);
    // The annotation naming the account is required, as upstream's ValidateSecret says.
    let args = [
        "create",
        "secret",
        "generic",
        "bare",
        "--type=kubernetes.io/service-account-token",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(r#"Secret "bare" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value"#),
        "{err}"
    );

    c.apply(&token_secret("builder-token", "builder"));
    let token = wait_until(WAIT, "the token filled in", || {
        Some(secret_value(&c, "builder-token", "token")).filter(|t| !t.is_empty())
    });
    assert_eq!(secret_value(&c, "builder-token", "namespace"), "default");
    assert!(secret_value(&c, "builder-token", "ca.crt").starts_with("-----BEGIN CERTIFICATE-----"));
    let uid = c.kubectl_ok(&["get", "sa", "builder", "-o", "jsonpath={.metadata.uid}"]);
    let annotated = c.kubectl_ok(&[
        "get",
        "secret",
        "builder-token",
        "-o",
        "jsonpath={.metadata.annotations.kubernetes\\.io/service-account\\.uid}",
    ]);
    assert_eq!(annotated, uid);

    // The token authenticates as the account (a kubeconfig with the token alone).
    let out = whoami_with_token(&c, &token, "builder");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "system:serviceaccount:default:builder",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Using it records the day on the Secret (upstream's legacy-token tracking, in UTC).
    let last_used = c.kubectl_ok(&[
        "get",
        "secret",
        "builder-token",
        "-o",
        "jsonpath={.metadata.labels.kubernetes\\.io/legacy-token-last-used}",
    ]);
    let today = c.kubectl_ok(&[
        "get",
        "secret",
        "builder-token",
        "-o",
        "jsonpath={.metadata.creationTimestamp}",
    ]);
    assert_eq!(last_used, today[..10], "{today}");

    // A deleted token Secret is dropped from the account's `secrets`.
    c.kubectl_ok(&[
        "patch",
        "sa",
        "builder",
        "--type=merge",
        "-p",
        r#"{"secrets":[{"name":"builder-token"}]}"#,
    ]);
    c.kubectl_ok(&["delete", "secret", "builder-token"]);
    wait_until(WAIT, "the reference removed", || {
        let refs = c.kubectl_ok(&["get", "sa", "builder", "-o", "jsonpath={.secrets}"]);
        refs.is_empty().then_some(())
    });

    // Deleting the account deletes its token Secrets, and their tokens stop working once the
    // API server's 10 s token cache lets go.
    c.apply(&token_secret("builder-token-2", "builder"));
    wait_until(WAIT, "the second token", || {
        (!secret_value(&c, "builder-token-2", "token").is_empty()).then_some(())
    });
    c.kubectl_ok(&["delete", "sa", "builder"]);
    wait_until(WAIT, "the token secret deleted", || {
        (!exists(&c, &["get", "secret", "builder-token-2"])).then_some(())
    });
    wait_until(WAIT, "the first token refused", || {
        let out = whoami_with_token(&c, &token, "builder");
        String::from_utf8_lossy(&out.stderr)
            .contains("Unauthorized")
            .then_some(())
    });
}

#[test]
fn cluster_roles_with_an_aggregation_rule_collect_the_rules_of_matching_roles() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: widgets-view\n  labels:\n    rbac.authorization.k8s.io/aggregate-to-view: \"true\"\nrules:\n- apiGroups: [\"example.com\"]\n  resources: [\"widgets\"]\n  verbs: [\"get\", \"list\", \"watch\"]\n",
    );
    wait_until(WAIT, "the view role to aggregate widgets", || {
        let rules = c.kubectl_ok(&["get", "clusterrole", "view", "-o", "jsonpath={.rules}"]);
        rules.contains("widgets").then_some(())
    });
    // The bootstrap rules are aggregated too (pods are in `view` upstream).
    let rules = c.kubectl_ok(&["get", "clusterrole", "view", "-o", "jsonpath={.rules}"]);
    assert!(rules.contains("\"pods\""), "{rules}");
    // Removing the label removes the rules.
    c.kubectl_ok(&[
        "label",
        "clusterrole",
        "widgets-view",
        "rbac.authorization.k8s.io/aggregate-to-view-",
    ]);
    wait_until(WAIT, "widgets to leave the view role", || {
        let rules = c.kubectl_ok(&["get", "clusterrole", "view", "-o", "jsonpath={.rules}"]);
        (!rules.contains("widgets")).then_some(())
    });
}

#[test]
fn workqueue_metrics_are_served_under_upstreams_names() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "metrics-probe"]);
    wait_until(WAIT, "default ServiceAccount", || {
        exists(
            &c,
            &["get", "serviceaccount", "default", "-n", "metrics-probe"],
        )
        .then_some(())
    });
    let text = c.kubectl_ok(&["get", "--raw", "/metrics"]);
    for name in [
        "workqueue_adds_total{name=\"serviceaccount-controller\"}",
        "workqueue_depth{name=\"serviceaccount-controller\"}",
        "workqueue_work_duration_seconds_count{name=\"serviceaccount-controller\"}",
        "workqueue_queue_duration_seconds_bucket{",
        "apiserver_request_total{",
        // APF's nominal seats: 600 (400 + 200 in flight) shared as upstream shares them.
        "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"workload-low\"} 245\n",
        "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"catch-all\"} 13\n",
    ] {
        assert!(text.contains(name), "/metrics lacks {name}:\n{text}");
    }
    assert_eq!(
        text.matches("# EOF").count(),
        1,
        "one exposition, ended once"
    );
}

#[test]
fn controllers_minus_star_is_a_bare_api_server() {
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec!["--controllers=-*".into()],
        ..Default::default()
    });
    c.kubectl_ok(&["create", "namespace", "bare"]);
    // A controller would have acted within milliseconds; give it ample time to prove it won't.
    std::thread::sleep(Duration::from_secs(2));
    let args = ["get", "serviceaccount", "default", "-n", "bare"];
    let err = fails(&args, c.kubectl(&args));
    assert!(err.contains("NotFound"), "{err}");
    let args = [
        "get",
        "lease",
        "kube-controller-manager",
        "-n",
        "kube-system",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains("NotFound"),
        "no leader election without controllers: {err}"
    );
}

#[test]
fn unknown_controller_names_are_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(k1s_bin())
        .args([
            "server",
            "--ephemeral",
            "--secure-port",
            "0",
            "--controllers=*,-nosuch",
        ])
        .arg("--write-kubeconfig")
        .arg(dir.path().join("kc"))
        .stdin(Stdio::null())
        .output()
        .expect("run k1s");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"nosuch\" is not in the list of known controllers"),
        "{err}"
    );
}

fn controller_manager(c: &TestCluster) -> StreamingCommand {
    let mut cmd = Command::new(k1s_bin());
    cmd.arg("controller-manager")
        .arg("--kubeconfig")
        .arg(c.kubeconfig());
    StreamingCommand::spawn(&mut cmd, "k1s controller-manager".into())
}

fn identity_of(cm: &mut StreamingCommand) -> String {
    let line = cm.wait_for_line(WAIT, |l| l.contains("identity "));
    line.split("identity ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .expect("identity in the first line")
        .to_string()
}

fn lease_holder(c: &TestCluster) -> String {
    c.kubectl(&[
        "get",
        "lease",
        "kube-controller-manager",
        "-n",
        "kube-system",
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ])
    .stdout
    .iter()
    .map(|b| *b as char)
    .collect()
}

#[test]
fn two_remote_controller_managers_never_both_lead_and_the_survivor_takes_over() {
    // A bare API server; the controllers run in two separate processes through the kubeconfig.
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec!["--controllers=-*".into()],
        ..Default::default()
    });
    let mut a = controller_manager(&c);
    let mut b = controller_manager(&c);
    let (id_a, id_b) = (identity_of(&mut a), identity_of(&mut b));
    let first = wait_until(WAIT, "a leader", || {
        let h = lease_holder(&c);
        (h == id_a || h == id_b).then_some(h)
    });
    // The remote controllers work: a new namespace gets its default account.
    c.kubectl_ok(&["create", "namespace", "remote"]);
    wait_until(
        WAIT,
        "default ServiceAccount from the remote controller",
        || exists(&c, &["get", "serviceaccount", "default", "-n", "remote"]).then_some(()),
    );
    // For a few renewals the holder stays the same: the other never takes the lease.
    for _ in 0..3 {
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(
            lease_holder(&c),
            first,
            "leadership must not move while the leader lives"
        );
    }
    // Kill -9 the leader: the survivor takes over once the lease expires (15 s).
    let (leader, survivor_id) = if first == id_a {
        (&mut a, id_b.clone())
    } else {
        (&mut b, id_a.clone())
    };
    leader.kill();
    wait_until(Duration::from_secs(40), "the survivor to lead", || {
        (lease_holder(&c) == survivor_id).then_some(())
    });
    c.kubectl_ok(&["create", "namespace", "after-failover"]);
    wait_until(WAIT, "default ServiceAccount after failover", || {
        exists(
            &c,
            &["get", "serviceaccount", "default", "-n", "after-failover"],
        )
        .then_some(())
    });
}

#[test]
fn a_separate_controller_manager_signs_legacy_tokens_with_the_key_file() {
    let data = tempfile::tempdir().expect("tempdir");
    let c = TestCluster::start_with(StartOptions {
        data_dir: Some(data.path().to_path_buf()),
        extra_args: vec!["--controllers=-*".into()],
    });
    let key = data.path().join("pki/sa.key");
    assert!(key.exists(), "{} missing", key.display());
    // A key file that is not a key stops it at start, naming the flag.
    let bad = data.path().join("bad.key");
    std::fs::write(&bad, "not a key").expect("write");
    let out = Command::new(k1s_bin())
        .arg("controller-manager")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .arg("--service-account-private-key-file")
        .arg(&bad)
        .stdin(Stdio::null())
        .output()
        .expect("run k1s controller-manager");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--service-account-private-key-file"), "{err}");

    let mut cmd = Command::new(k1s_bin());
    cmd.arg("controller-manager")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .arg("--service-account-private-key-file")
        .arg(&key);
    let _cm = StreamingCommand::spawn(&mut cmd, "k1s controller-manager".into());
    c.kubectl_ok(&["create", "serviceaccount", "remote"]);
    c.apply(&token_secret("remote-token", "remote"));
    let token = wait_until(WAIT, "the token filled in", || {
        Some(secret_value(&c, "remote-token", "token")).filter(|t| !t.is_empty())
    });
    // The API server accepts what the separate process signed with the cluster's key.
    let out = whoami_with_token(&c, &token, "remote");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "system:serviceaccount:default:remote",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn label_of(c: &TestCluster, secret: &str, label: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "secret",
        secret,
        "-o",
        &format!(
            "jsonpath={{.metadata.labels.{}}}",
            label.replace('.', "\\.")
        ),
    ])
}

#[test]
fn unused_auto_generated_legacy_tokens_are_invalidated_then_deleted() {
    const INVALID_SINCE: &str = "kubernetes.io/legacy-token-invalid-since";
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--legacy-service-account-token-clean-up-period=1s".into(),
            "--legacy-service-account-token-clean-up-sync-interval=1s".into(),
        ],
        ..Default::default()
    });
    // The API server records when it began tracking token use (today).
    let since = c.kubectl_ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "kube-apiserver-legacy-service-account-token-tracking",
        "-o",
        "jsonpath={.data.since}",
    ]);
    let today = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%d")
        .to_string();
    assert_eq!(since, today);
    // Three auto-generated tokens (listed in their account's `secrets`); one is mounted by a
    // pod. A fourth token Secret is not listed, so it is not auto-generated.
    for account in ["old", "mounted", "manual"] {
        c.kubectl_ok(&["create", "serviceaccount", account]);
        c.apply(&token_secret(&format!("{account}-token"), account));
    }
    for account in ["old", "mounted"] {
        c.kubectl_ok(&[
            "patch",
            "serviceaccount",
            account,
            "--type=merge",
            "-p",
            &format!(r#"{{"secrets":[{{"name":"{account}-token"}}]}}"#),
        ]);
    }
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: user}\nspec:\n  containers: [{name: c, image: nginx}]\n  volumes: [{name: t, secret: {secretName: mounted-token}}]\n",
    );
    let token = wait_until(WAIT, "the token filled in", || {
        Some(secret_value(&c, "old-token", "token")).filter(|t| !t.is_empty())
    });
    // Nothing happens until token use has been tracked for a whole period.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(label_of(&c, "old-token", INVALID_SINCE), "");
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "-n",
        "kube-system",
        "kube-apiserver-legacy-service-account-token-tracking",
        "--type=merge",
        "-p",
        r#"{"data":{"since":"2020-01-01"}}"#,
    ]);
    wait_until(WAIT, "the unused token labelled invalid", || {
        (label_of(&c, "old-token", INVALID_SINCE) == today).then_some(())
    });
    // The API server refuses an invalidated token.
    let out = whoami_with_token(&c, &token, "old");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Unauthorized"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Invalid for a whole period: deleted.
    c.kubectl_ok(&[
        "label",
        "secret",
        "old-token",
        "--overwrite",
        &format!("{INVALID_SINCE}=2020-01-02"),
    ]);
    wait_until(WAIT, "the invalidated token deleted", || {
        (!exists(&c, &["get", "secret", "old-token"])).then_some(())
    });
    for kept in ["mounted-token", "manual-token"] {
        assert_eq!(label_of(&c, kept, INVALID_SINCE), "", "{kept}");
    }
}

/// A CSR for a made-up signer (nothing approves or signs it by itself).
fn csr_yaml(name: &str) -> String {
    use base64::Engine as _;
    let pem = k1s_tests::csr_pem(name);
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}}}\n\
         spec: {{request: {request}, signerName: example.com/signer, usages: [client auth]}}\n"
    )
}

#[test]
fn the_csr_cleaner_deletes_requests_past_upstreams_deadlines() {
    let c = TestCluster::start();
    c.apply(&csr_yaml("recent"));
    c.apply(&csr_yaml("stale"));
    // A condition without times gets them from the server.
    c.kubectl_ok(&["certificate", "deny", "recent"]);
    let recent: serde_json::Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "csr", "recent", "-o", "json"])).expect("json");
    let denied = &recent["status"]["conditions"][0];
    assert_eq!(denied["type"], "Denied", "{recent}");
    assert!(denied["lastUpdateTime"].is_string(), "{recent}");
    assert!(denied["lastTransitionTime"].is_string(), "{recent}");
    // One denied two hours ago (times a client sets are kept).
    let mut stale: serde_json::Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "csr", "stale", "-o", "json"])).expect("json");
    stale["status"]["conditions"] = serde_json::json!([{
        "type": "Denied", "status": "True", "reason": "Test", "message": "old",
        "lastUpdateTime": "2020-01-01T00:00:00Z", "lastTransitionTime": "2020-01-01T00:00:00Z",
    }]);
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/stale/approval";
    let out = c.kubectl_stdin(&["replace", "--raw", path, "-f", "-"], &stale.to_string());
    assert!(out.status.success(), "{out:?}");
    // The cleaner's first pass runs when it starts: a controller-manager with only it.
    let mut cmd = Command::new(k1s_bin());
    cmd.arg("controller-manager")
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .args(["--controllers=csrcleaner", "--leader-elect=false"]);
    let _cm = StreamingCommand::spawn(&mut cmd, "k1s controller-manager".into());
    wait_until(WAIT, "the stale CSR deleted", || {
        (!exists(&c, &["get", "csr", "stale"])).then_some(())
    });
    assert!(exists(&c, &["get", "csr", "recent"]));
}
