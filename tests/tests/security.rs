//! The secure handler chain through the real HTTPS endpoint and real kubectl: every credential
//! kind (valid, expired, tampered, foreign), RBAC allow/deny per rule kind, escalation
//! prevention, impersonation, `kubectl auth can-i` and `kubectl create token`.

use std::path::PathBuf;

use k1s_tests::{StartOptions, TestCluster, fails, ok};

fn token_kubeconfig(c: &TestCluster, token: &str, name: &str) -> PathBuf {
    c.token_kubeconfig(token, name)
}

/// kubectl with another kubeconfig.
fn kubectl_with(
    c: &TestCluster,
    kubeconfig: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    let mut all: Vec<&str> = vec!["--kubeconfig"];
    let kc = kubeconfig.to_string_lossy().to_string();
    all.push(&kc);
    all.extend_from_slice(args);
    // `kubectl()` sets KUBECONFIG; the explicit flag wins.
    c.kubectl(&all)
}

fn sa_token(c: &TestCluster, ns: &str, sa: &str, extra: &[&str]) -> String {
    let mut args = vec!["create", "token", sa, "-n", ns];
    args.extend_from_slice(extra);
    c.kubectl_ok(&args).trim().to_string()
}

#[test]
fn rbac_allows_and_denies_per_rule_kind() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "dev"]);
    c.kubectl_ok(&["create", "serviceaccount", "bot", "-n", "dev"]);
    c.kubectl_ok(&["create", "configmap", "cm-a", "-n", "dev"]);
    c.kubectl_ok(&["create", "configmap", "cm-b", "-n", "dev"]);
    let kc = token_kubeconfig(&c, &sa_token(&c, "dev", "bot", &[]), "bot");
    let as_bot = |args: &[&str]| kubectl_with(&c, &kc, args);

    // Nothing granted yet: upstream's 403 wording.
    let args = ["get", "pods", "-n", "dev"];
    let err = fails(&args, as_bot(&args));
    assert!(err.contains(r#"User "system:serviceaccount:dev:bot" cannot list resource "pods" in API group "" in the namespace "dev""#), "{err}");

    // Namespaced: a Role + RoleBinding grant pods in dev only.
    c.kubectl_ok(&[
        "create",
        "role",
        "pod-reader",
        "-n",
        "dev",
        "--verb=get,list",
        "--resource=pods",
    ]);
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "bot-pods",
        "-n",
        "dev",
        "--role=pod-reader",
        "--serviceaccount=dev:bot",
    ]);
    k1s_tests::wait_until(
        std::time::Duration::from_secs(5),
        "the binding to take effect",
        || {
            as_bot(&["get", "pods", "-n", "dev"])
                .status
                .success()
                .then_some(())
        },
    );
    let args = ["get", "pods", "-n", "default"];
    fails(&args, as_bot(&args));

    // Cluster-scoped: nodes need a ClusterRoleBinding.
    let args = ["get", "nodes"];
    let err = fails(&args, as_bot(&args));
    assert!(
        err.contains(r#"cannot list resource "nodes" in API group "" at the cluster scope"#),
        "{err}"
    );

    // resourceNames: only cm-a.
    c.kubectl_ok(&[
        "create",
        "role",
        "one-cm",
        "-n",
        "dev",
        "--verb=get",
        "--resource=configmaps",
        "--resource-name=cm-a",
    ]);
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "bot-cm",
        "-n",
        "dev",
        "--role=one-cm",
        "--serviceaccount=dev:bot",
    ]);
    k1s_tests::wait_until(std::time::Duration::from_secs(5), "cm-a readable", || {
        as_bot(&["get", "configmap", "cm-a", "-n", "dev"])
            .status
            .success()
            .then_some(())
    });
    let args = ["get", "configmap", "cm-b", "-n", "dev"];
    fails(&args, as_bot(&args));

    // Subresources: deployments/scale only, not the deployment itself.
    c.kubectl_ok(&["create", "deployment", "web", "--image=nginx", "-n", "dev"]);
    c.apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: scaler, namespace: dev}\nrules:\n- apiGroups: [apps]\n  resources: [deployments/scale]\n  verbs: [get, update, patch]\n");
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "bot-scale",
        "-n",
        "dev",
        "--role=scaler",
        "--serviceaccount=dev:bot",
    ]);
    let args = ["get", "deployment", "web", "-n", "dev"];
    fails(&args, as_bot(&args));
    k1s_tests::wait_until(std::time::Duration::from_secs(5), "scale allowed", || {
        as_bot(&[
            "get",
            "--raw",
            "/apis/apps/v1/namespaces/dev/deployments/web/scale",
        ])
        .status
        .success()
        .then_some(())
    });

    // nonResourceURLs.
    let args = ["get", "--raw", "/metrics"];
    fails(&args, as_bot(&args));
    c.kubectl_ok(&[
        "create",
        "clusterrole",
        "metrics-reader",
        "--verb=get",
        "--non-resource-url=/metrics",
    ]);
    c.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "bot-metrics",
        "--clusterrole=metrics-reader",
        "--serviceaccount=dev:bot",
    ]);
    k1s_tests::wait_until(
        std::time::Duration::from_secs(5),
        "/metrics allowed",
        || {
            as_bot(&["get", "--raw", "/metrics"])
                .status
                .success()
                .then_some(())
        },
    );

    // kubectl auth can-i agrees, for the SA and through --as.
    let can = |args: &[&str]| {
        String::from_utf8_lossy(&c.kubectl(args).stdout)
            .trim()
            .to_string()
    };
    assert_eq!(
        can(&[
            "auth",
            "can-i",
            "list",
            "pods",
            "-n",
            "dev",
            "--as=system:serviceaccount:dev:bot"
        ]),
        "yes"
    );
    assert_eq!(
        can(&[
            "auth",
            "can-i",
            "delete",
            "pods",
            "-n",
            "dev",
            "--as=system:serviceaccount:dev:bot"
        ]),
        "no"
    );
    let list = ok(
        &["auth", "can-i", "--list", "-n", "dev"],
        as_bot(&["auth", "can-i", "--list", "-n", "dev"]),
    );
    assert!(
        list.contains("pods") && list.contains("[get list]"),
        "{list}"
    );
}

#[test]
fn escalation_is_refused_without_escalate_or_bind() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "dev"]);
    c.kubectl_ok(&["create", "serviceaccount", "admin-ish", "-n", "dev"]);
    // May manage roles and bindings in dev, but holds no pod rights.
    // Explicit verbs: `*` would include `escalate` and `bind`.
    c.apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: rbac-manager, namespace: dev}\nrules:\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [roles, rolebindings]\n  verbs: [get, list, create, update, delete]\n");
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "m",
        "-n",
        "dev",
        "--role=rbac-manager",
        "--serviceaccount=dev:admin-ish",
    ]);
    let kc = token_kubeconfig(&c, &sa_token(&c, "dev", "admin-ish", &[]), "mgr");
    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: pods-all, namespace: dev}\nrules:\n- apiGroups: ['']\n  resources: [pods]\n  verbs: [get]\n";
    let path = c.scratch_dir().join("role.yaml");
    std::fs::write(&path, role).expect("write");
    let p = path.to_string_lossy().to_string();
    k1s_tests::wait_until(
        std::time::Duration::from_secs(5),
        "rbac-manager effective",
        || {
            kubectl_with(&c, &kc, &["get", "roles", "-n", "dev"])
                .status
                .success()
                .then_some(())
        },
    );
    let args = ["create", "-f", &p];
    let err = fails(&args, kubectl_with(&c, &kc, &args));
    assert!(
        err.contains("is attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
    // With the escalate verb it may.
    c.apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: escalator, namespace: dev}\nrules:\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [roles]\n  verbs: [escalate]\n");
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "e",
        "-n",
        "dev",
        "--role=escalator",
        "--serviceaccount=dev:admin-ish",
    ]);
    k1s_tests::wait_until(
        std::time::Duration::from_secs(5),
        "escalate effective",
        || kubectl_with(&c, &kc, &args).status.success().then_some(()),
    );
}

#[test]
fn impersonation_is_checked() {
    let c = TestCluster::start();
    // Admin (system:masters) may impersonate anyone.
    let out = c.kubectl_ok(&[
        "auth",
        "whoami",
        "--as=jane",
        "--as-group=devs",
        "-o",
        "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
    ]);
    assert!(
        out.starts_with("jane") && out.contains("devs") && out.contains("system:authenticated"),
        "{out}"
    );
    c.kubectl_ok(&["create", "serviceaccount", "imp"]);
    let kc = token_kubeconfig(&c, &sa_token(&c, "default", "imp", &[]), "imp");
    // `get --raw` skips kubectl's discovery, which words the same 403 as "unknown".
    let args = [
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods",
        "--as=jane",
    ];
    let err = fails(&args, kubectl_with(&c, &kc, &args));
    assert!(err.contains(r#"users "jane" is forbidden: User "system:serviceaccount:default:imp" cannot impersonate resource "users" in API group "" at the cluster scope"#), "{err}");
    c.kubectl_ok(&[
        "create",
        "clusterrole",
        "imp-jane",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=jane",
    ]);
    c.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "imp-jane",
        "--clusterrole=imp-jane",
        "--serviceaccount=default:imp",
    ]);
    // Now jane is impersonated; jane herself may not list pods.
    k1s_tests::wait_until(
        std::time::Duration::from_secs(5),
        "impersonation allowed",
        || {
            let e = String::from_utf8_lossy(&kubectl_with(&c, &kc, &args).stderr).to_string();
            e.contains(r#"User "jane" cannot list resource "pods""#)
                .then_some(())
        },
    );
}

#[test]
fn token_credentials_valid_tampered_bound_and_bootstrap() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "serviceaccount", "bot"]);
    c.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "bot-view",
        "--clusterrole=view",
        "--serviceaccount=default:bot",
    ]);
    let token = sa_token(&c, "default", "bot", &["--duration=15m"]);
    let kc = token_kubeconfig(&c, &token, "bot");
    let whoami = [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ];
    assert_eq!(
        ok(&whoami, kubectl_with(&c, &kc, &whoami)),
        "system:serviceaccount:default:bot"
    );

    // A tampered signature, a wrong issuer/garbage token: 401.
    let mut bad = token.clone().into_bytes();
    let last = bad.len() - 3;
    bad[last] = if bad[last] == b'A' { b'B' } else { b'A' };
    let kc_bad = token_kubeconfig(&c, &String::from_utf8(bad).expect("utf8"), "bad");
    let err = fails(&whoami, kubectl_with(&c, &kc_bad, &whoami));
    assert!(
        err.contains("Unauthorized") || err.contains("must be logged in"),
        "{err}"
    );

    // Bound to a pod: deleting the pod invalidates the token.
    c.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  serviceAccountName: bot\n  containers: [{name: c, image: nginx}]\n");
    let bound = sa_token(
        &c,
        "default",
        "bot",
        &["--bound-object-kind=Pod", "--bound-object-name=p"],
    );
    let kc_bound = token_kubeconfig(&c, &bound, "bound");
    ok(&whoami, kubectl_with(&c, &kc_bound, &whoami));
    c.kubectl_ok(&["delete", "pod", "p"]);
    // Successful authentications are cached for 10 s, as upstream: wait for the entry to lapse.
    let lapse = std::time::Duration::from_secs(15);
    k1s_tests::wait_until(lapse, "the bound token to stop working", || {
        (!kubectl_with(&c, &kc_bound, &whoami).status.success()).then_some(())
    });

    // Deleting the service account invalidates its tokens.
    c.kubectl_ok(&["delete", "serviceaccount", "bot"]);
    k1s_tests::wait_until(lapse, "the account's token to stop working", || {
        (!kubectl_with(&c, &kc, &whoami).status.success()).then_some(())
    });

    // Bootstrap tokens: valid, and expired.
    c.apply("apiVersion: v1\nkind: Secret\nmetadata: {name: bootstrap-token-abcdef, namespace: kube-system}\ntype: bootstrap.kubernetes.io/token\nstringData:\n  token-id: abcdef\n  token-secret: 0123456789abcdef\n  usage-bootstrap-authentication: \"true\"\n  auth-extra-groups: system:bootstrappers:k1s:default-node-token\n");
    let kc_boot = token_kubeconfig(&c, "abcdef.0123456789abcdef", "boot");
    let who = [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
    ];
    let out = ok(&who, kubectl_with(&c, &kc_boot, &who));
    assert!(
        out.starts_with("system:bootstrap:abcdef")
            && out.contains("system:bootstrappers:k1s:default-node-token"),
        "{out}"
    );
    c.apply("apiVersion: v1\nkind: Secret\nmetadata: {name: bootstrap-token-zyxwvu, namespace: kube-system}\ntype: bootstrap.kubernetes.io/token\nstringData:\n  token-id: zyxwvu\n  token-secret: 0123456789abcdef\n  usage-bootstrap-authentication: \"true\"\n  expiration: \"2020-01-01T00:00:00Z\"\n");
    let kc_expired = token_kubeconfig(&c, "zyxwvu.0123456789abcdef", "expired");
    fails(&who, kubectl_with(&c, &kc_expired, &who));
    let kc_wrong = token_kubeconfig(&c, "abcdef.ffffffffffffffff", "wrong");
    fails(&who, kubectl_with(&c, &kc_wrong, &who));
}

#[test]
fn static_token_file_authenticates() {
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "s3cr3t-token,alice,1001,\"devs,ops\"\n").expect("write");
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--token-auth-file".into(),
            file.to_string_lossy().to_string(),
        ],
        ..Default::default()
    });
    let kc = token_kubeconfig(&c, "s3cr3t-token", "alice");
    let who = [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
    ];
    let out = ok(&who, kubectl_with(&c, &kc, &who));
    assert!(
        out.starts_with("alice") && out.contains("devs") && out.contains("ops"),
        "{out}"
    );
    let kc = token_kubeconfig(&c, "not-the-token", "mallory");
    fails(&who, kubectl_with(&c, &kc, &who));
}

#[test]
fn client_certificates_expired_or_not_yet_valid_are_unauthorized() {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair};
    let data = tempfile::tempdir().expect("tmp");
    let c = TestCluster::start_with(StartOptions {
        data_dir: Some(data.path().join("d")),
        ..Default::default()
    });
    let pki = c.data_dir().join("pki");
    let ca_pem = std::fs::read_to_string(pki.join("ca.crt")).expect("ca.crt");
    let ca_key = KeyPair::from_pem(&std::fs::read_to_string(pki.join("ca.key")).expect("ca.key"))
        .expect("ca key");
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
    // Whole dates: long past, far future, or around now.
    let client = |from: (i32, u8, u8), to: (i32, u8, u8)| {
        let key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.distinguished_name
            .push(DnType::CommonName, "kubernetes-admin");
        p.distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        p.not_before = rcgen::date_time_ymd(from.0, from.1, from.2);
        p.not_after = rcgen::date_time_ymd(to.0, to.1, to.2);
        let cert = p.signed_by(&key, &issuer).expect("sign");
        (cert.pem(), key.serialize_pem())
    };
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let server = c.url().to_string();
    let ca = b64(&ca_pem);
    let write = |name: &str, (cert, key): (String, String)| {
        let path = c.scratch_dir().join(format!("{name}.kubeconfig"));
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: u\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: c\n  context: {{cluster: k, user: u}}\ncurrent-context: c\n",
            b64(&cert),
            b64(&key)
        );
        std::fs::write(&path, yaml).expect("write");
        path
    };
    let args = ["get", "namespaces"];
    let valid = write("valid", client((2020, 1, 1), (2099, 1, 1)));
    ok(&args, kubectl_with(&c, &valid, &args));
    let expired = write("expired", client((2020, 1, 1), (2020, 1, 2)));
    let err = fails(&args, kubectl_with(&c, &expired, &args));
    assert!(
        err.contains("Unauthorized") || err.contains("must be logged in"),
        "{err}"
    );
    let future = write("future", client((2099, 1, 1), (2099, 12, 31)));
    fails(&args, kubectl_with(&c, &future, &args));
}

#[test]
fn audit_policy_levels_shape_the_events() {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = dir.path().join("policy.yaml");
    let log = dir.path().join("audit.log");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: None\n  nonResourceURLs: ['/healthz*', '/readyz*', '/livez*']\n- level: RequestResponse\n  resources: [{group: '', resources: [configmaps]}]\n- level: Metadata\n",
    )
    .expect("policy");
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--audit-policy-file".into(),
            policy.to_string_lossy().to_string(),
            "--audit-log-path".into(),
            log.to_string_lossy().to_string(),
        ],
        ..Default::default()
    });
    c.kubectl_ok(&["create", "configmap", "audited", "--from-literal=k=v"]);
    c.kubectl_ok(&["create", "secret", "generic", "quiet", "--from-literal=k=v"]);
    let events = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    // The in-process controllers' writes are audited too (as their service accounts): look for
    // the test's own objects by name.
    let find_created = |resource: &str, name: &str| {
        k1s_tests::wait_until(std::time::Duration::from_secs(5), "the audit event", || {
            events().into_iter().find(|e| {
                e["verb"] == "create"
                    && e["objectRef"]["resource"] == resource
                    && e["requestObject"]["metadata"]["name"] == name
            })
        })
    };
    let cm = find_created("configmaps", "audited");
    assert_eq!(cm["level"], "RequestResponse");
    assert_eq!(cm["stage"], "ResponseComplete");
    assert_eq!(cm["user"]["username"], "kubernetes-admin");
    assert_eq!(cm["requestObject"]["kind"], "ConfigMap");
    assert_eq!(cm["responseObject"]["metadata"]["name"], "audited");
    assert_eq!(cm["responseStatus"]["code"], 201);
    assert_eq!(cm["annotations"]["authorization.k8s.io/decision"], "allow");
    // At level Metadata the body is not read, so the secret is found by resource alone (no
    // controller creates secrets here).
    let secret =
        k1s_tests::wait_until(std::time::Duration::from_secs(5), "the audit event", || {
            events()
                .into_iter()
                .find(|e| e["verb"] == "create" && e["objectRef"]["resource"] == "secrets")
        });
    assert_eq!(secret["level"], "Metadata");
    assert!(
        secret.get("requestObject").is_none() && secret.get("responseObject").is_none(),
        "{secret}"
    );
    assert!(
        events().iter().all(|e| e["stage"] != "RequestReceived"),
        "omitStages"
    );
    assert!(events().iter().all(|e| {
        !e["requestURI"]
            .as_str()
            .unwrap_or_default()
            .starts_with("/readyz")
    }));
}
