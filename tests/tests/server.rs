//! Server-level behaviour of the `k1s` process: persistence across restarts, authentication,
//! health endpoints, request limits and graceful shutdown.

use std::time::{Duration, Instant};

use base64::Engine;
use futures::{AsyncBufReadExt, StreamExt};
use k1s_tests::{Kubectl, StartOptions, TestCluster, fails, ok, run_with_timeout};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A raw request with a client; returns (status, body).
async fn raw(client: &kube::Client, method: &str, path: &str, body: Vec<u8>) -> (u16, String) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(kube::client::Body::from(body))
        .expect("request");
    let resp = client
        .send(req)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect_bytes()
        .await
        .expect("response body");
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// A client that presents no credentials at all.
async fn anonymous_client(c: &TestCluster) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(c.kubeconfig()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    config.auth_info = Default::default();
    kube::Client::try_from(config).expect("client")
}

/// Replaces the value of every `key: value` line in a kubeconfig.
fn replace_kubeconfig_value(text: &str, key: &str, value: &str) -> String {
    let mut replaced = 0;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let indent = &l[..l.len() - l.trim_start().len()];
            if l.trim_start().starts_with(&format!("{key}:")) {
                replaced += 1;
                format!("{indent}{key}: {value}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(replaced > 0, "no {key} in kubeconfig:\n{text}");
    out.join("\n") + "\n"
}

fn kubeconfig_value(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in kubeconfig:\n{text}"))
        .trim()
        .to_string()
}

fn kubectl_with_kubeconfig(
    c: &TestCluster,
    kubeconfig: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = c.kubectl_command(&Kubectl::dispatcher(), args);
    cmd.env("KUBECONFIG", kubeconfig);
    run_with_timeout(cmd, None, k1s_tests::KUBECTL_TIMEOUT).expect("kubectl")
}

#[test]
fn restart_reuses_data_and_pki() {
    let data = tempfile::tempdir().expect("tempdir");
    let data_dir = data.path().join("k1s");
    let opts = StartOptions {
        data_dir: Some(data_dir.clone()),
        ..Default::default()
    };
    let mut first = TestCluster::start_with(opts.clone());
    first.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: persist\n  namespace: default\ndata: {k: v}\n");
    first.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kept\n");
    let uid = first.kubectl_ok(&["get", "cm", "persist", "-o", "jsonpath={.metadata.uid}"]);
    let rv: u64 = first
        .kubectl_ok(&[
            "get",
            "cm",
            "persist",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .parse()
        .expect("numeric resourceVersion");
    let ca_path = data_dir.join("pki").join("ca.crt");
    let ca_before =
        std::fs::read(&ca_path).unwrap_or_else(|e| panic!("{}: {e}", ca_path.display()));
    let kubeconfig_before = std::fs::read_to_string(first.kubeconfig()).expect("kubeconfig");
    let old_url = first.url().to_string();
    let status = first
        .terminate(Duration::from_secs(10))
        .expect("k1s must exit within 10 s of SIGTERM");
    assert!(
        status.success(),
        "k1s exited with {status}; stderr:\n{}",
        first.server_stderr()
    );
    drop(first);

    let second = TestCluster::start_with(opts);
    assert_eq!(
        second.kubectl_ok(&["get", "cm", "persist", "-o", "jsonpath={.metadata.uid}"]),
        uid
    );
    assert_eq!(
        second.kubectl_ok(&["get", "cm", "persist", "-o", "jsonpath={.data.k}"]),
        "v"
    );
    assert_eq!(
        second.kubectl_ok(&["get", "ns", "kept", "-o", "jsonpath={.status.phase}"]),
        "Active"
    );
    let ca_after = std::fs::read(&ca_path).expect("ca.crt after restart");
    assert_eq!(
        ca_before, ca_after,
        "the CA must survive a restart unchanged"
    );
    let kubeconfig_after = std::fs::read_to_string(second.kubeconfig()).expect("kubeconfig");
    assert_eq!(
        kubeconfig_value(&kubeconfig_before, "certificate-authority-data"),
        kubeconfig_value(&kubeconfig_after, "certificate-authority-data")
    );
    // the first run's admin credentials are still valid (only the port changed)
    let old = second.scratch_dir().join("old-kubeconfig");
    std::fs::write(&old, kubeconfig_before.replace(&old_url, second.url())).expect("write");
    let args = ["get", "cm", "persist", "-o", "name"];
    assert_eq!(
        ok(&args, kubectl_with_kubeconfig(&second, &old, &args)).trim(),
        "configmap/persist"
    );
    // resourceVersions keep growing across restarts
    second
        .apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  namespace: default\n");
    let rv_after: u64 = second
        .kubectl_ok(&[
            "get",
            "cm",
            "after",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .parse()
        .expect("numeric resourceVersion");
    assert!(
        rv_after > rv,
        "resourceVersion went backwards after restart: {rv_after} <= {rv}"
    );
}

#[tokio::test]
async fn client_certificate_from_another_ca_is_unauthorized() {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let c = TestCluster::start();

    // a CA that looks like the real one (same common name) and an admin-looking client cert
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "kubernetes");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("client key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
    params
        .distinguished_name
        .push(DnType::CommonName, "kubernetes-admin");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).expect("sign");

    let admin = std::fs::read_to_string(c.kubeconfig()).expect("kubeconfig");
    let foreign =
        replace_kubeconfig_value(&admin, "client-certificate-data", &B64.encode(cert.pem()));
    let foreign = replace_kubeconfig_value(
        &foreign,
        "client-key-data",
        &B64.encode(key.serialize_pem()),
    );
    let path = c.scratch_dir().join("foreign-kubeconfig");
    std::fs::write(&path, foreign).expect("write");

    let client = k1s_tests::client_from_kubeconfig(&path)
        .await
        .expect("client");
    let (status, body) = raw(&client, "GET", "/api/v1/namespaces", Vec::new()).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Unauthorized"), "{body}");
    let args = ["get", "namespaces"];
    let err = fails(&args, kubectl_with_kubeconfig(&c, &path, &args));
    assert!(err.contains("You must be logged in to the server"), "{err}");

    // the admin certificate works
    let (status, body) = raw(&c.client().await, "GET", "/api/v1/namespaces", Vec::new()).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"NamespaceList\""), "{body}");
}

#[tokio::test]
async fn anonymous_access_and_health_endpoints() {
    let c = TestCluster::start();
    let anon = anonymous_client(&c).await;
    let (status, body) = raw(&anon, "GET", "/version", Vec::new()).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("version JSON");
    assert_eq!(v["major"], "1");
    assert!(
        v["gitVersion"]
            .as_str()
            .is_some_and(|g| g.starts_with("v1.")),
        "{v}"
    );
    for path in ["/readyz", "/livez", "/healthz"] {
        let (status, body) = raw(&anon, "GET", path, Vec::new()).await;
        assert_eq!((status, body.as_str()), (200, "ok"), "{path}");
    }
    for path in ["/api", "/apis", "/api/v1/namespaces"] {
        let (status, body) = raw(&anon, "GET", path, Vec::new()).await;
        assert_eq!(status, 403, "anonymous GET {path}: {body}");
        let s: serde_json::Value = serde_json::from_str(&body).expect("Status JSON");
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["reason"], "Forbidden");
        assert!(
            s["message"]
                .as_str()
                .is_some_and(|m| m.contains("system:anonymous")),
            "{s}"
        );
    }
    let (status, body) = raw(
        &anon,
        "POST",
        "/api/v1/namespaces",
        br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"anon"}}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 403, "{body}");

    // verbose health checks list every check
    let admin = c.client().await;
    for (path, passed) in [
        ("/readyz?verbose", "readyz check passed"),
        ("/livez?verbose", "livez check passed"),
    ] {
        let (status, body) = raw(&anon, "GET", path, Vec::new()).await;
        assert_eq!(status, 200, "{body}");
        let checks: Vec<&str> = body.lines().filter(|l| l.starts_with("[+]")).collect();
        // The checks health_handlers.go requires of kube-apiserver 1.33.
        for check in [
            "ping",
            "log",
            "etcd",
            "poststarthook/start-apiserver-admission-initializer",
            "poststarthook/generic-apiserver-start-informers",
            "poststarthook/crd-informer-synced",
            "poststarthook/bootstrap-controller",
            "poststarthook/start-system-namespaces-controller",
            "poststarthook/scheduling/bootstrap-system-priority-classes",
            "poststarthook/start-cluster-authentication-info-controller",
            "poststarthook/apiservice-status-local-available-controller",
            "poststarthook/kube-apiserver-autoregistration",
            "autoregister-completion",
            "poststarthook/apiservice-openapi-controller",
        ] {
            let line = format!("[+]{check} ok");
            assert!(
                checks.contains(&line.as_str()),
                "{path} lacks {line}: {body}"
            );
        }
        assert_eq!(body.lines().last(), Some(passed), "{body}");
    }
    let (_, body) = raw(&anon, "GET", "/readyz?verbose", Vec::new()).await;
    assert!(
        body.contains("[+]informer-sync ok\n")
            && body.contains("[+]shutdown ok\nreadyz check passed"),
        "{body}"
    );
    let (status, _) = raw(
        &admin,
        "GET",
        "/healthz/poststarthook/rbac/bootstrap-roles",
        Vec::new(),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = raw(&admin, "GET", "/readyz/ping", Vec::new()).await;
    assert_eq!((status, body.as_str()), (200, "ok"));
    let (status, body) = raw(&admin, "GET", "/readyz?exclude=ping&verbose", Vec::new()).await;
    assert_eq!(status, 200, "{body}");
    // upstream lists an excluded check as `[+]<name> excluded: ok` and does not run it
    assert!(
        body.lines().any(|l| l == "[+]ping excluded: ok")
            && !body.lines().any(|l| l == "[+]ping ok"),
        "excluded check must be reported as excluded: {body}"
    );
}

#[tokio::test]
async fn oversized_body_is_413_and_creates_nothing() {
    let c = TestCluster::start();
    let client = c.client().await;
    let big = "x".repeat(4 * 1024 * 1024);
    let manifest = |name: &str| {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"big": big}
        })
        .to_string()
    };
    // kube-rs (HTTP/1.1)
    let (status, text) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        manifest("big").into_bytes(),
    )
    .await;
    assert_eq!(status, 413, "{}", &text[..text.len().min(500)]);
    let s: serde_json::Value = serde_json::from_str(&text).expect("Status JSON");
    assert_eq!(s["reason"], "RequestEntityTooLarge", "{s}");
    // nothing was created (asked on a fresh connection)
    let fresh = c.client().await;
    let (status, _) = raw(
        &fresh,
        "GET",
        "/api/v1/namespaces/default/configmaps/big",
        Vec::new(),
    )
    .await;
    assert_eq!(status, 404, "the oversized object must not be created");

    // kubectl (HTTP/2) gets the 413 Status too
    let file = c.scratch_dir().join("big.json");
    std::fs::write(&file, manifest("big-kubectl")).expect("write");
    let args = ["create", "-f", file.to_str().expect("utf-8 path")];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains("Request entity too large"),
        "kubectl should report the server's 413 Status: {err}"
    );
    let args = ["get", "cm", "big-kubectl"];
    let err = fails(&args, c.kubectl(&args));
    assert!(err.contains("NotFound"), "{err}");

    // the client that got the 413 keeps working: the server either drains the body or tells
    // the client (`Connection: close`) not to reuse the connection
    let (status, _) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        Vec::new(),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn namespace_mismatch_between_body_and_url_is_400() {
    let c = TestCluster::start();
    let client = c.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("mismatch".to_string()),
            namespace: Some("kube-system".to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &cm).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (400, "BadRequest"), "{s:?}");
            assert!(
                s.message.contains("the namespace of the provided object does not match the namespace sent on the request"),
                "{s:?}"
            );
        }
        other => panic!("expected 400 BadRequest, got {other:?}"),
    }
    for ns in ["default", "kube-system"] {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        assert!(
            api.get_opt("mismatch").await.expect("get").is_none(),
            "created in {ns}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_cleanly_with_an_open_watch() {
    let mut c = TestCluster::start();
    let client = c.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: ObjectMeta {
                name: Some("exists".to_string()),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .expect("create");
    let req =
        http::Request::get("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=300")
            .body(Vec::new())
            .expect("request");
    let stream = client.request_stream(req).await.expect("open watch");
    let mut lines = std::pin::pin!(stream.lines());
    // a watch without resourceVersion starts with the current objects: it is established
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next())
        .await
        .expect("first watch event")
        .expect("watch stream open")
        .expect("watch line");
    assert!(
        first.contains("\"ADDED\"") && first.contains("\"exists\""),
        "{first}"
    );

    let started = Instant::now();
    let status = tokio::task::block_in_place(|| c.terminate(Duration::from_secs(10)));
    let status = status.unwrap_or_else(|| {
        panic!(
            "k1s did not exit within 10 s of SIGTERM with a watch open; stderr:\n{}",
            c.server_stderr()
        )
    });
    assert!(
        status.success(),
        "k1s exited with {status}; stderr:\n{}",
        c.server_stderr()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        started.elapsed()
    );
    // the watch stream ends (cleanly or with an error) instead of hanging
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(_)) = lines.next().await {}
    })
    .await;
    assert!(
        end.is_ok(),
        "the watch stream must end when the server stops"
    );
}

#[tokio::test]
async fn overload_gets_429_and_the_server_stays_responsive() {
    // Durable writes wait for the disk, so concurrent creates really are in flight together.
    let data = tempfile::tempdir().expect("tmp");
    let c = TestCluster::start_with(StartOptions {
        data_dir: Some(data.path().join("d")),
        extra_args: vec!["--max-mutating-requests-inflight".into(), "1".into()],
    });
    // system:masters is exempt from the limits, as upstream: load as a service account.
    c.kubectl_ok(&["create", "serviceaccount", "load"]);
    c.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "load-admin",
        "--clusterrole=cluster-admin",
        "--serviceaccount=default:load",
    ]);
    let token = c
        .kubectl_ok(&["create", "token", "load"])
        .trim()
        .to_string();
    let kubeconfig = c.token_kubeconfig(&token, "load");
    // 64 workers over 8 HTTP/2 connections creating 200 objects.
    let mut bench = std::process::Command::new(k1s_tests::k1s_bin());
    bench.args([
        "bench",
        "--kubeconfig",
        &kubeconfig.to_string_lossy(),
        "create-par",
        "-n",
        "200",
        "--json",
    ]);
    let out = run_with_timeout(bench, None, Duration::from_secs(120)).expect("bench ran");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bench JSON: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    let scenario = &report["scenarios"][0];
    let samples = scenario["error_samples"].to_string();
    assert!(
        scenario["errors"].as_u64().unwrap_or(0) > 0,
        "no 429 under overload: {scenario}"
    );
    assert!(samples.contains("429 TooManyRequests"), "{samples}");
    // Still responsive, and memory stays bounded.
    let (status, _) = raw(&c.client().await, "GET", "/readyz", Vec::new()).await;
    assert_eq!(status, 200);
    let rss_kib: u64 = std::fs::read_to_string(format!("/proc/{}/status", c.pid()))
        .expect("status")
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1).map(|v| v.parse().unwrap_or(0)))
        .unwrap_or(0);
    assert!(
        rss_kib < 300 * 1024,
        "server RSS {rss_kib} KiB after the burst"
    );
}

/// `/openapi/v2` carries an ETag (upstream's quoted SHA-512) and answers 304 to a client that
/// already has it, as kube-openapi's handler does.
#[tokio::test]
async fn openapi_v2_has_an_etag_and_answers_not_modified() {
    let c = TestCluster::start();
    let client = c.client().await;
    let get = |etag: Option<String>| {
        let mut req = http::Request::builder()
            .method("GET")
            .uri("/openapi/v2")
            .header("accept", "application/json");
        if let Some(etag) = etag {
            req = req.header("if-none-match", etag);
        }
        req.body(kube::client::Body::from(Vec::new()))
            .expect("request")
    };
    let first = client.send(get(None)).await.expect("openapi");
    assert_eq!(first.status().as_u16(), 200);
    let etag = first
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .expect("an ETag")
        .to_string();
    assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
    let again = client.send(get(Some(etag.clone()))).await.expect("openapi");
    assert_eq!(again.status().as_u16(), 304);
    assert_eq!(
        again.headers().get("etag").and_then(|v| v.to_str().ok()),
        Some(etag.as_str())
    );
}

/// request_timeout.go: `?timeout=` must be a Go duration (400 with upstream's text otherwise);
/// a valid one is accepted.
#[tokio::test]
async fn a_bad_request_timeout_is_refused() {
    let c = TestCluster::start();
    let client = c.client().await;
    let (status, body) = raw(&client, "GET", "/version?timeout=invalid", Vec::new()).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains(
            r#"invalid timeout specified in the request URL - time: invalid duration \"invalid\""#
        ),
        "{body}"
    );
    let (status, _) = raw(&client, "GET", "/version?timeout=3m", Vec::new()).await;
    assert_eq!(status, 200);
    let (status, _) = raw(&client, "GET", "/api/v1/namespaces?timeout=10s", Vec::new()).await;
    assert_eq!(status, 200);
}
