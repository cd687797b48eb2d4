//! k1s as a process for CI and other languages' test suites: `--ready-file`, `--exit-with-parent`
//! and a clean exit on SIGTERM; and the envtest drop-in (`kube-apiserver` and `etcd` run with
//! exactly the arguments controller-runtime's envtest passes, checked as envtest checks them).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use k1s_tests::tinyca::TinyCa;
use k1s_tests::{client_from_kubeconfig, k1s_bin};
use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::api::{Api, PostParams};

const TIMEOUT: Duration = Duration::from_secs(60);

fn wait_until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigterm(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    wait_until("the process to exit", || {
        child.try_wait().expect("try_wait")
    })
}

/// A process is gone when /proc no longer lists it or it is a zombie nobody reaped yet.
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

fn read_ready(path: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).expect("the ready file is complete JSON"))
}

#[tokio::test]
async fn ready_file_then_sigterm_exits_zero_and_removes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ready = dir.path().join("ready.json");
    let mut child = Command::new(k1s_bin())
        .args([
            "server",
            "--ephemeral",
            "--secure-port",
            "0",
            "--nodes",
            "0",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--ready-file")
        .arg(&ready)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn k1s");
    let info = wait_until("the ready file", || read_ready(&ready));
    let url = info["url"].as_str().expect("url");
    assert!(url.starts_with("https://127.0.0.1:"), "{info}");
    assert_eq!(info["pid"], child.id());
    let kubeconfig = PathBuf::from(info["kubeconfig"].as_str().expect("kubeconfig"));
    assert!(kubeconfig.is_absolute(), "{info}");
    let client = client_from_kubeconfig(&kubeconfig).await.expect("client");
    let default = Api::<Namespace>::all(client)
        .get("default")
        .await
        .expect("the server answers once the ready file exists");
    assert_eq!(default.metadata.name.as_deref(), Some("default"));
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    sigterm(child.id());
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(!ready.exists(), "the ready file outlived the server");
}

#[test]
fn exit_with_parent_follows_the_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ready = dir.path().join("ready.json");
    // A shell starts k1s in the background, waits until it is ready, and exits: k1s's parent
    // is gone.
    let script = r#"
        "$0" server --ephemeral --secure-port 0 --nodes 0 --data-dir "$1/data" \
            --ready-file "$1/ready.json" --exit-with-parent >/dev/null 2>&1 &
        i=0
        while [ ! -e "$1/ready.json" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
        echo $!
    "#;
    let out = Command::new("sh")
        .args(["-c", script])
        .arg(k1s_bin())
        .arg(dir.path())
        .output()
        .expect("sh");
    let pid: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("pid");
    assert!(read_ready(&ready).is_some(), "k1s never got ready");
    wait_until("k1s to exit after its parent", || {
        process_gone(pid).then_some(())
    });
    // It shut down as on SIGTERM: the ready file is gone.
    wait_until("the ready file to go", || (!ready.exists()).then_some(()));
}

// ---- envtest ----

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// One HTTP/1.1 GET over plain TCP: (status, body).
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    conn.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// A kubeconfig for `url` trusting `ca_pem`, with an optional client certificate, or skipping
/// verification (as envtest's health probe does) when `ca_pem` is `None`.
fn kubeconfig(
    path: &Path,
    url: &str,
    ca_pem: Option<&str>,
    client: Option<&(String, String)>,
) -> PathBuf {
    let cluster = match ca_pem {
        Some(ca) => format!("certificate-authority-data: {}", B64.encode(ca)),
        None => "insecure-skip-tls-verify: true".to_string(),
    };
    let user = match client {
        Some((cert, key)) => format!(
            "{{client-certificate-data: {}, client-key-data: {}}}",
            B64.encode(cert),
            B64.encode(key)
        ),
        None => "{}".to_string(),
    };
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster: {{server: \"{url}\", {cluster}}}\nusers:\n- name: u\n  user: {user}\ncontexts:\n- name: c\n  context: {{cluster: envtest, user: u}}\ncurrent-context: c\n"
    );
    std::fs::write(path, text).expect("write kubeconfig");
    path.to_path_buf()
}

#[tokio::test]
async fn envtest_drop_in_with_envtest_arguments() {
    // KUBEBUILDER_ASSETS as a user sets it up: kube-apiserver and etcd are k1s.
    let assets = tempfile::tempdir().expect("assets");
    for name in ["kube-apiserver", "etcd"] {
        std::os::unix::fs::symlink(k1s_bin(), assets.path().join(name)).expect("symlink");
    }
    let apiserver = assets.path().join("kube-apiserver");

    // envtest asks `kube-apiserver --help` whether --insecure-port exists (it must not).
    let help = Command::new(&apiserver)
        .arg("--help")
        .output()
        .expect("help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--cert-dir"), "{help}");
    assert!(
        !help
            .lines()
            .any(|l| l.trim_start().starts_with("--insecure-port")),
        "{help}"
    );

    // etcd, with Etcd.defaultArgs(); envtest probes GET <url>/health.
    let etcd_dir = tempfile::tempdir().expect("etcd dir");
    let (etcd_port, peer_port) = (free_port(), free_port());
    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    let mut etcd = Command::new(assets.path().join("etcd"))
        .arg(format!("--advertise-client-urls={etcd_url}"))
        .arg(format!("--data-dir={}", etcd_dir.path().display()))
        .arg(format!("--listen-client-urls={etcd_url}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
        .arg("--unsafe-no-fsync=true")
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn etcd");
    let (status, body) = wait_until("etcd's /health", || http_get(etcd_port, "/health"));
    assert_eq!(status, 200);
    let health: serde_json::Value = serde_json::from_str(&body).expect("health JSON");
    assert_eq!(health["health"], "true");

    // What APIServer.prepare() and CertAuthn write into the cert dir.
    let cert_dir = tempfile::tempdir().expect("cert dir");
    let dir = cert_dir.path();
    let serving_ca = TinyCa::new("envtest-serving");
    let (crt, key) = serving_ca.issue(&["localhost", "127.0.0.1"], None);
    std::fs::write(dir.join("apiserver.crt"), crt).expect("write");
    std::fs::write(dir.join("apiserver.key"), key).expect("write");
    let sa_ca = TinyCa::new("envtest-sa");
    let (sa_crt, sa_key) = sa_ca.issue(&["sa"], None);
    std::fs::write(dir.join("sa-signer.crt"), sa_crt).expect("write");
    std::fs::write(dir.join("sa-signer.key"), sa_key).expect("write");
    let client_ca = TinyCa::new("envtest-client");
    std::fs::write(dir.join("client-cert-auth-ca.crt"), &client_ca.pem).expect("write");

    // APIServer.defaultArgs() plus CertAuthn.Configure, as process.Arguments renders them
    // (sorted, --key=value).
    let port = free_port();
    let d = dir.display();
    let args = [
        "--allow-privileged=true".to_string(),
        "--authorization-mode=RBAC".to_string(),
        "--bind-address=127.0.0.1".to_string(),
        format!("--cert-dir={d}"),
        format!("--client-ca-file={d}/client-cert-auth-ca.crt"),
        "--disable-admission-plugins=ServiceAccount".to_string(),
        format!("--etcd-servers={etcd_url}"),
        format!("--secure-port={port}"),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        format!("--service-account-key-file={d}/sa-signer.crt"),
        format!("--service-account-signing-key-file={d}/sa-signer.key"),
        "--service-cluster-ip-range=10.0.0.0/24".to_string(),
    ];
    let mut server = Command::new(&apiserver)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kube-apiserver");
    let url = format!("https://127.0.0.1:{port}");
    let scratch = tempfile::tempdir().expect("scratch");

    // The readiness probe: GET /healthz, certificate not verified, 200.
    let probe =
        client_from_kubeconfig(&kubeconfig(&scratch.path().join("probe"), &url, None, None))
            .await
            .expect("probe client");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let req = http::Request::get("/healthz")
            .body(Vec::new())
            .expect("req");
        if probe.request_text(req).await.is_ok_and(|b| b == "ok") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "/healthz never answered: {:?}",
            server.try_wait()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The admin user: a client certificate from the client CA, system:masters, verified
    // against envtest's serving CA; then envtest waits for the `default` namespace.
    let admin = client_ca.issue(&[], Some(("admin", &["system:masters"])));
    let admin_client = client_from_kubeconfig(&kubeconfig(
        &scratch.path().join("admin"),
        &url,
        Some(&serving_ca.pem),
        Some(&admin),
    ))
    .await
    .expect("admin client");
    let namespaces: Api<Namespace> = Api::all(admin_client.clone());
    namespaces
        .get("default")
        .await
        .expect("the default namespace, as envtest waits for it");
    // The Service range is envtest's: the `kubernetes` Service takes its first address.
    let kubernetes = Api::<Service>::namespaced(admin_client.clone(), "default")
        .get("kubernetes")
        .await
        .expect("the kubernetes Service");
    assert_eq!(
        kubernetes.spec.and_then(|s| s.cluster_ip).as_deref(),
        Some("10.0.0.1")
    );

    // Another user of the same CA is authenticated (403, not 401) and gets rights through RBAC.
    let alice = client_ca.issue(&[], Some(("alice", &["dev"])));
    let alice_client = client_from_kubeconfig(&kubeconfig(
        &scratch.path().join("alice"),
        &url,
        Some(&serving_ca.pem),
        Some(&alice),
    ))
    .await
    .expect("alice client");
    match Api::<Namespace>::all(alice_client.clone())
        .list(&Default::default())
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "{s:?}"),
        other => panic!("alice listed namespaces before any binding: {other:?}"),
    }
    let binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding =
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "alice-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
        }))
        .expect("binding");
    Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(admin_client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("bind alice");
    let deadline = Instant::now() + TIMEOUT;
    while Api::<Namespace>::all(alice_client.clone())
        .list(&Default::default())
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "alice's binding never applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Stop as envtest does: SIGTERM, and a clean exit.
    sigterm(server.id());
    assert_eq!(wait_exit(&mut server).code(), Some(0));
    sigterm(etcd.id());
    assert_eq!(wait_exit(&mut etcd).code(), Some(0));
}

#[test]
fn a_service_range_k1s_cannot_serve_is_refused_at_start() {
    for (range, expected) in [
        ("10.0.0.0/8", "the mask must be >= 12"),
        ("fd00::/108", "IPv4 Service addresses only"),
        ("10.0.0.0", "not a CIDR"),
        ("10.0.0.0/31", "too small"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new(k1s_bin())
            .args(["server", "--ephemeral", "--secure-port", "0"])
            .arg(format!("--service-cluster-ip-range={range}"))
            .arg("--write-kubeconfig")
            .arg(dir.path().join("kc"))
            .stdin(Stdio::null())
            .output()
            .expect("run k1s");
        assert!(!out.status.success(), "{range} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{range}: {err}");
    }
}
