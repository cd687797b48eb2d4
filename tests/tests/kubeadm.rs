//! Black-box tests of the kubeadm-like commands: `k1s init` in a temp dir on a free port,
//! `token create|list|delete`, `join` of a second process as a node that becomes Ready and runs
//! pods, refused joins (wrong CA hash, deleted, expired and wrong tokens) that write nothing,
//! `kubectl certificate approve` with the CSR signer, `certs check-expiration` and `reset`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use k1s_tests::{StreamingCommand, fails, k1s_bin, ok, run_with_timeout, stdout, wait_until};

const TOKEN: &str = "abcdef.0123456789abcdef";
const TIMEOUT: Duration = Duration::from_secs(60);

fn k1s(args: &[&str]) -> Output {
    let mut cmd = Command::new(k1s_bin());
    cmd.args(args);
    run_with_timeout(cmd, None, TIMEOUT).unwrap_or_else(|e| panic!("k1s {args:?}: {e}"))
}

fn k1s_ok(args: &[&str]) -> String {
    ok(args, k1s(args))
}

fn k1s_fails(args: &[&str]) -> String {
    fails(args, k1s(args))
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("kubectl");
    cmd.args(args).env("KUBECONFIG", kubeconfig);
    run_with_timeout(cmd, None, TIMEOUT).unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
}

fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    ok(args, kubectl(kubeconfig, args))
}

/// Starts `k1s init` of the control-plane node `name` in `data` (loopback, a free port, the
/// test's token) with `extra` flags, and returns once it serves.
fn spawn_init(data: &Path, name: &str, extra: &[&str], label: &str) -> StreamingCommand {
    let data_s = data.to_string_lossy().into_owned();
    let mut cmd = Command::new(k1s_bin());
    cmd.args([
        "init",
        "--data-dir",
        &data_s,
        "--apiserver-advertise-address",
        "127.0.0.1",
        "--apiserver-bind-port",
        "0",
        "--node-name",
        name,
        "--token",
        TOKEN,
    ])
    .args(extra);
    let mut process = StreamingCommand::spawn(&mut cmd, label.into());
    process.wait_for_line(TIMEOUT, |l| {
        l.starts_with("k1s is serving the Kubernetes API at")
    });
    process
}

struct Init {
    _dir: tempfile::TempDir,
    data: PathBuf,
    admin: PathBuf,
    endpoint: String,
    hash: String,
    process: StreamingCommand,
}

fn init() -> Init {
    let dir = tempfile::Builder::new()
        .prefix("k1s-kubeadm-")
        .tempdir()
        .expect("tmp");
    let data = dir.path().join("cp");
    let mut process = spawn_init(&data, "cp", &[], "k1s init");
    let lines = process.lines().to_vec();
    let text = lines.join("\n");
    assert!(
        text.contains("Your Kubernetes control-plane has initialized successfully!"),
        "{text}"
    );
    for phase in [
        "[certs]",
        "[kubeconfig]",
        "[upload-config]",
        "[mark-control-plane]",
        "[bootstrap-token]",
    ] {
        assert!(text.contains(phase), "{phase} missing:\n{text}");
    }
    let join = lines
        .iter()
        .find(|l| l.starts_with("k1s join "))
        .unwrap_or_else(|| panic!("no join command:\n{text}"));
    let endpoint = join
        .split_whitespace()
        .nth(2)
        .expect("endpoint")
        .to_string();
    assert!(join.contains(&format!("--token {TOKEN}")), "{join}");
    let hash = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("--discovery-token-ca-cert-hash "))
        .unwrap_or_else(|| panic!("no hash:\n{text}"))
        .trim()
        .to_string();
    assert!(hash.starts_with("sha256:") && hash.len() == 71, "{hash}");
    Init {
        admin: data.join("admin.conf"),
        data,
        _dir: dir,
        endpoint,
        hash,
        process,
    }
}

impl Init {
    fn join_args<'a>(
        &'a self,
        token: &'a str,
        hash: &'a str,
        dir: &'a str,
        name: &'a str,
    ) -> Vec<&'a str> {
        vec![
            "join",
            &self.endpoint,
            "--token",
            token,
            "--discovery-token-ca-cert-hash",
            hash,
            "--data-dir",
            dir,
            "--node-name",
            name,
            "--discovery-timeout",
            "3s",
            "--no-simulated-node",
        ]
    }

    /// A join that must fail with `want` in its error and write nothing.
    fn join_refused(&self, token: &str, hash: &str, want: &str) {
        let dir = self
            .data
            .parent()
            .expect("parent")
            .join(format!("refused-{}", &token[..6]));
        let d = dir.to_string_lossy().into_owned();
        let err = k1s_fails(&self.join_args(token, hash, &d, "nope"));
        assert!(err.contains(want), "expected {want:?} in:\n{err}");
        assert!(!dir.join("kubelet.conf").exists());
        assert!(!dir.join("pki").exists());
    }
}

#[test]
fn init_token_join_and_reset() {
    let mut cp = init();
    let admin = cp.admin.clone();

    // kubeadm's files.
    for f in [
        "pki/ca.crt",
        "pki/ca.key",
        "pki/apiserver.crt",
        "pki/apiserver-kubelet-client.crt",
        "pki/front-proxy-ca.crt",
        "pki/front-proxy-client.crt",
        "pki/sa.key",
        "pki/sa.pub",
        "admin.conf",
        "super-admin.conf",
        "controller-manager.conf",
        "scheduler.conf",
    ] {
        assert!(cp.data.join(f).exists(), "{f}");
    }
    // admin.conf is bound through kubeadm:cluster-admins, not system:masters.
    let who = kubectl_ok(
        &admin,
        &["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"],
    );
    assert!(
        who.contains("kubeadm:cluster-admins") && !who.contains("system:masters"),
        "{who}"
    );
    kubectl_ok(
        &admin,
        &[
            "get",
            "clusterrolebinding",
            "kubeadm:cluster-admins",
            "kubeadm:get-nodes",
            "kubeadm:node-autoapprove-bootstrap",
        ],
    );
    let cfg = kubectl_ok(
        &admin,
        &[
            "get",
            "cm",
            "-n",
            "kube-system",
            "kubeadm-config",
            "-o",
            "jsonpath={.data.ClusterConfiguration}",
        ],
    );
    assert!(
        cfg.contains("kind: ClusterConfiguration") && cfg.contains("kubeadm.k8s.io/v1beta4"),
        "{cfg}"
    );
    // mark-control-plane.
    let node = kubectl_ok(&admin, &["get", "node", "cp", "-o", "json"]);
    assert!(
        node.contains("node-role.kubernetes.io/control-plane"),
        "{node}"
    );
    assert!(node.contains("NoSchedule"), "{node}");
    // The bootstrapsigner signs cluster-info for the init token.
    wait_until(TIMEOUT, "cluster-info signed", || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "cm",
                "-n",
                "kube-public",
                "cluster-info",
                "-o",
                "jsonpath={.data.jws-kubeconfig-abcdef}",
            ],
        );
        (!stdout(&out).trim().is_empty()).then_some(())
    });

    // token list / create / delete.
    let list = k1s_ok(&[
        "token",
        "list",
        "--kubeconfig",
        admin.to_str().expect("utf8"),
    ]);
    assert!(list.starts_with("TOKEN"), "{list}");
    assert!(
        list.contains(TOKEN) && list.contains("system:bootstrappers:kubeadm:default-node-token"),
        "{list}"
    );
    let adm = admin.to_str().expect("utf8");
    let join_cmd = k1s_ok(&[
        "token",
        "create",
        "--kubeconfig",
        adm,
        "--print-join-command",
        "--ttl",
        "1h",
    ]);
    assert!(
        join_cmd.starts_with(&format!("k1s join {} --token ", cp.endpoint)),
        "{join_cmd}"
    );
    assert!(join_cmd.contains(&cp.hash), "{join_cmd}");
    let deleted = "zzzzzz.0123456789abcdef";
    assert_eq!(
        k1s_ok(&["token", "create", deleted, "--kubeconfig", adm]).trim(),
        deleted
    );
    let again = k1s_fails(&["token", "create", deleted, "--kubeconfig", adm]);
    assert!(again.contains("already exists"), "{again}");
    assert!(k1s_ok(&["token", "list", "--kubeconfig", adm]).contains(deleted));
    let out = k1s_ok(&["token", "delete", "zzzzzz", "--kubeconfig", adm]);
    assert_eq!(out.trim(), "bootstrap token \"zzzzzz\" deleted");
    assert!(!k1s_ok(&["token", "list", "--kubeconfig", adm]).contains(deleted));
    let yaml = k1s_ok(&["token", "list", "--kubeconfig", adm, "-o", "yaml"]);
    assert!(yaml.contains("output.kubeadm.k8s.io/v1alpha3"), "{yaml}");

    // Refused joins write nothing.
    let expired = "yyyyyy.0123456789abcdef";
    k1s_ok(&[
        "token",
        "create",
        expired,
        "--ttl",
        "1s",
        "--kubeconfig",
        adm,
    ]);
    cp.join_refused(
        TOKEN,
        &format!("sha256:{}", "0".repeat(64)),
        "none of the public keys",
    );
    cp.join_refused(deleted, &cp.hash, "invalid for this cluster");
    cp.join_refused(
        "abcdef.0000000000000000",
        &cp.hash,
        "failed to verify JWS signature",
    );
    // Once expired, the bootstrapsigner drops its signature.
    wait_until(TIMEOUT, "expired token unsigned", || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "cm",
                "-n",
                "kube-public",
                "cluster-info",
                "-o",
                "jsonpath={.data.jws-kubeconfig-yyyyyy}",
            ],
        );
        stdout(&out).trim().is_empty().then_some(())
    });
    cp.join_refused(expired, &cp.hash, "invalid for this cluster");
    // The tokencleaner deletes the expired token.
    wait_until(TIMEOUT, "expired token deleted", || {
        (!k1s_ok(&["token", "list", "--kubeconfig", adm]).contains(expired)).then_some(())
    });

    // A real join: a second process becomes the Ready node n2.
    let jdir = cp.data.parent().expect("parent").join("n2");
    let jd = jdir.to_string_lossy().into_owned();
    let mut args = cp.join_args(TOKEN, &cp.hash, &jd, "n2");
    args.pop(); // run the simulated node
    let mut cmd = Command::new(k1s_bin());
    cmd.args(&args);
    let mut node = StreamingCommand::spawn(&mut cmd, "k1s join".into());
    node.wait_for_line(TIMEOUT, |l| l.contains("This node has joined the cluster"));
    let kubelet_conf = jdir.join("kubelet.conf");
    assert!(kubelet_conf.exists() && jdir.join("pki/ca.crt").exists());
    wait_until(TIMEOUT, "n2 Ready", || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "node",
                "n2",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ],
        );
        (stdout(&out).trim() == "True").then_some(())
    });
    let csrs = kubectl_ok(&admin, &["get", "csr", "-o", "json"]);
    assert!(
        csrs.contains("AutoApproved") && csrs.contains("system:bootstrap:abcdef"),
        "{csrs}"
    );
    // The node's credentials do what system:nodes may, and no more.
    let whoami = kubectl_ok(
        &kubelet_conf,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(whoami.trim(), "system:node:n2");
    kubectl_ok(&kubelet_conf, &["get", "node", "n2"]);
    let denied = kubectl(&kubelet_conf, &["get", "secrets", "-n", "kube-system"]);
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("Forbidden"),
        "{denied:?}"
    );
    // Pods go to the worker (the control plane is tainted) and run.
    kubectl_ok(
        &admin,
        &["run", "web", "--image", "nginx", "--restart", "Never"],
    );
    wait_until(TIMEOUT, "pod running on n2", || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "pod",
                "web",
                "-o",
                "jsonpath={.spec.nodeName} {.status.phase}",
            ],
        );
        (stdout(&out).trim() == "n2 Running").then_some(())
    });
    // Joining again over a live kubelet.conf is refused.
    let again = k1s_fails(&cp.join_args(TOKEN, &cp.hash, &jd, "n2"));
    assert!(again.contains("already exists"), "{again}");

    // `kubectl certificate approve` + csrsigning give a working client certificate.
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "jane");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "devs");
    let csr_pem = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(csr_pem);
    let csr_yaml = format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: jane\nspec:\n  request: {b64}\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: 86400\n  usages: [client auth]\n"
    );
    let yaml_path = cp.data.parent().expect("parent").join("jane.yaml");
    std::fs::write(&yaml_path, csr_yaml).expect("write");
    kubectl_ok(&admin, &["create", "-f", yaml_path.to_str().expect("utf8")]);
    kubectl_ok(&admin, &["certificate", "approve", "jane"]);
    let cert_b64 = wait_until(TIMEOUT, "jane's certificate", || {
        let out = kubectl(
            &admin,
            &["get", "csr", "jane", "-o", "jsonpath={.status.certificate}"],
        );
        let s = stdout(&out).trim().to_string();
        (!s.is_empty()).then_some(s)
    });
    let ca = kubectl_ok(
        &admin,
        &[
            "config",
            "view",
            "--raw",
            "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ],
    );
    let server = kubectl_ok(
        &admin,
        &[
            "config",
            "view",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ],
    );
    let key_b64 = base64::engine::general_purpose::STANDARD.encode(key.serialize_pem());
    let jane = cp.data.parent().expect("parent").join("jane.conf");
    std::fs::write(
        &jane,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: jane\n  user:\n    client-certificate-data: {cert_b64}\n    client-key-data: {key_b64}\ncontexts:\n- name: j\n  context:\n    cluster: c\n    user: jane\ncurrent-context: j\n"),
    )
    .expect("write");
    let me = kubectl_ok(
        &jane,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
        ],
    );
    assert!(me.starts_with("jane ") && me.contains("devs"), "{me}");

    // certs check-expiration.
    let exp = k1s_ok(&[
        "certs",
        "check-expiration",
        "--data-dir",
        cp.data.to_str().expect("utf8"),
    ]);
    assert!(
        exp.contains("admin.conf")
            && exp.contains("CERTIFICATE AUTHORITY")
            && exp.contains("front-proxy-ca"),
        "{exp}"
    );

    // A second control plane needs a shared store; this cluster's is local: refused, nothing
    // written.
    let cpd = cp.data.parent().expect("parent").join("cp-refused");
    let cpds = cpd.to_string_lossy().into_owned();
    let mut args = cp.join_args(TOKEN, &cp.hash, &cpds, "cp-x");
    let key = "ab".repeat(32);
    args.extend(["--control-plane", "--certificate-key", &key]);
    let err = k1s_fails(&args);
    assert!(
        err.contains("store local to its first control plane"),
        "{err}"
    );
    assert!(
        !cpd.exists(),
        "refused control-plane join wrote {}",
        cpd.display()
    );
    let err = k1s_fails(&[
        "init",
        "phase",
        "upload-certs",
        "--upload-certs",
        "--data-dir",
        cp.data.to_str().expect("utf8"),
    ]);
    assert!(err.contains("local to its first control plane"), "{err}");

    // reset removes what join wrote, and only that.
    node.kill();
    std::fs::write(jdir.join("mine.txt"), "keep").expect("write");
    let out = k1s_ok(&["reset", "--force", "--data-dir", &jd]);
    assert!(out.contains("kubelet.conf"), "{out}");
    assert!(!kubelet_conf.exists() && !jdir.join("pki").exists());
    assert!(jdir.join("mine.txt").exists());
    cp.process.kill();
}

#[test]
fn bad_input_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("x");
    let ds = d.to_string_lossy().into_owned();
    let hash = format!("sha256:{}", "ab".repeat(32));
    let err = k1s_fails(&[
        "join",
        "127.0.0.1:1",
        "--token",
        "bad",
        "--discovery-token-ca-cert-hash",
        &hash,
        "--data-dir",
        &ds,
    ]);
    assert!(err.contains("was not of the form"), "{err}");
    let err = k1s_fails(&[
        "join",
        "127.0.0.1:1",
        "--token",
        TOKEN,
        "--discovery-token-ca-cert-hash",
        "sha256:abcd",
        "--data-dir",
        &ds,
    ]);
    assert!(
        err.contains("expected a 32 byte SHA-256 hash, found 2 bytes"),
        "{err}"
    );
    let err = k1s_fails(&["join", "127.0.0.1:1", "--token", TOKEN, "--data-dir", &ds]);
    assert!(
        err.contains("discovery-token-unsafe-skip-ca-verification"),
        "{err}"
    );
    let err = k1s_fails(&[
        "join",
        "127.0.0.1:1",
        "--token",
        TOKEN,
        "--discovery-token-ca-cert-hash",
        &hash,
        "--data-dir",
        &ds,
        "--discovery-timeout",
        "1s",
    ]);
    assert!(err.contains("cluster-info"), "{err}");
    let err = k1s_fails(&[
        "token",
        "create",
        "--ttl",
        "soon",
        "--kubeconfig",
        "/nonexistent",
    ]);
    assert!(err.contains("invalid duration"), "{err}");
    let err = k1s_fails(&[
        "token",
        "create",
        "--usages",
        "bogus",
        "--kubeconfig",
        "/nonexistent",
    ]);
    assert!(
        err.contains("invalid bootstrap token usage string: bogus"),
        "{err}"
    );
    let err = k1s_fails(&["init", "--skip-phases", "bogus", "--data-dir", &ds]);
    assert!(err.contains("phase \"bogus\" does not exist"), "{err}");
    let err = k1s_fails(&["init", "--token", "nope", "--data-dir", &ds]);
    assert!(err.contains("was not of the form"), "{err}");
    let err = k1s_fails(&[
        "join",
        "127.0.0.1:1",
        "--token",
        TOKEN,
        "--control-plane",
        "--data-dir",
        &ds,
    ]);
    assert!(err.contains("needs --certificate-key"), "{err}");
    let err = k1s_fails(&[
        "join",
        "127.0.0.1:1",
        "--token",
        TOKEN,
        "--control-plane",
        "--certificate-key",
        "abc",
        "--data-dir",
        &ds,
    ]);
    assert!(err.contains("64 hexadecimal characters"), "{err}");
    assert!(!d.exists(), "bad input wrote {}", d.display());
    let gen_token = k1s_ok(&["token", "generate"]);
    assert_eq!(gen_token.trim().len(), 23);
    let defaults = k1s_ok(&["config", "print", "init-defaults"]);
    assert!(
        defaults.contains("kind: InitConfiguration")
            && defaults.contains("kind: ClusterConfiguration"),
        "{defaults}"
    );
}

/// The certificate the server at 127.0.0.1:`port` presents, verified against `ca_pem` for
/// `name`.
fn served_cert(port: &str, ca_pem: &[u8], name: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(c.expect("ca pem")).expect("ca");
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from(name.to_string()).expect("name");
    let mut conn =
        rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("client");
    let mut sock = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).expect("handshake");
    }
    conn.peer_certificates().expect("peer certificates")[0].to_vec()
}

fn file_cert_der(path: &Path) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_file(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_vec()
}

#[test]
fn init_and_join_from_config_files_phases_and_certificate_renewal() {
    let dir = tempfile::Builder::new()
        .prefix("k1s-kubeadm-cfg-")
        .tempdir()
        .expect("tmp");
    let data = dir.path().join("cp");
    let ds = data.to_string_lossy().into_owned();
    // `config print init-defaults` round-trips through --config (with this machine's address,
    // a free port and other names).
    let defaults = k1s_ok(&["config", "print", "init-defaults", "--data-dir", &ds]);
    let cfg = defaults
        .replace("\"1.2.3.4\"", "127.0.0.1")
        .replace("bindPort: 6443", "bindPort: 0")
        .replace("name: node", "name: cfg-cp")
        .replace("abcdef.0123456789abcdef", "k1scfg.0123456789abcdef")
        .replace("clusterName: kubernetes", "clusterName: edge")
        .replace(
            "apiServer: {}",
            "apiServer:\n  certSANs: [api.edge.example]",
        )
        .replace(
            "kind: InitConfiguration",
            "kind: InitConfiguration\nfrobnicate: true",
        );
    assert_ne!(cfg, defaults);
    let init_file = dir.path().join("init.yaml");
    std::fs::write(&init_file, &cfg).expect("write");
    let mut cmd = Command::new(k1s_bin());
    cmd.args([
        "init",
        "--config",
        init_file.to_str().expect("utf8"),
        "--data-dir",
        &ds,
    ]);
    let mut cp = StreamingCommand::spawn(&mut cmd, "k1s init --config".into());
    cp.wait_for_line(TIMEOUT, |l| {
        l.starts_with("k1s is serving the Kubernetes API at")
    });
    let text = cp.lines().join("\n");
    let join = cp
        .lines()
        .iter()
        .find(|l| l.starts_with("k1s join "))
        .cloned()
        .unwrap_or_else(|| panic!("no join command:\n{text}"));
    assert!(join.contains("--token k1scfg.0123456789abcdef"), "{join}");
    let endpoint = join
        .split_whitespace()
        .nth(2)
        .expect("endpoint")
        .to_string();
    let port = endpoint.rsplit_once(':').expect("port").1.to_string();
    // The unknown field was a warning (kubeadm's strict decoding on init), not an error.
    assert!(
        cp.stderr().contains("unknown field \"frobnicate\""),
        "{}",
        cp.stderr()
    );
    let admin = data.join("admin.conf");
    let ctx = kubectl_ok(&admin, &["config", "current-context"]);
    assert_eq!(ctx.trim(), "kubernetes-admin@edge");
    let node = kubectl_ok(&admin, &["get", "node", "cfg-cp", "-o", "json"]);
    assert!(node.contains("NoSchedule"), "{node}");
    let pki = data.join("pki");
    // The served certificate is valid for the certSANs name.
    let ca_pem = std::fs::read(pki.join("ca.crt")).expect("ca");
    served_cert(&port, &ca_pem, "api.edge.example");

    // Phases one at a time against the running server.
    let out = k1s_ok(&[
        "init",
        "phase",
        "upload-config",
        "all",
        "--data-dir",
        &ds,
        "--config",
        init_file.to_str().expect("utf8"),
    ]);
    assert!(out.contains("[upload-config]"), "{out}");
    let out = k1s_ok(&[
        "init",
        "phase",
        "show-join-command",
        "--data-dir",
        &ds,
        "--token",
        TOKEN,
        "--apiserver-advertise-address",
        "127.0.0.1",
        "--apiserver-bind-port",
        &port,
    ]);
    assert!(
        out.contains(&format!("k1s join 127.0.0.1:{port} --token {TOKEN}")),
        "{out}"
    );
    let out = k1s_ok(&[
        "init",
        "phase",
        "bootstrap-token",
        "--data-dir",
        &ds,
        "--token",
        TOKEN,
        "--apiserver-advertise-address",
        "127.0.0.1",
        "--apiserver-bind-port",
        &port,
    ]);
    assert!(out.contains(&format!("Using token: {TOKEN}")), "{out}");
    let list = k1s_ok(&[
        "token",
        "list",
        "--kubeconfig",
        admin.to_str().expect("utf8"),
    ]);
    assert!(list.contains("abcdef") && list.contains("k1scfg"), "{list}");

    // join through a JoinConfiguration (join-defaults with this cluster's values).
    let hash = join
        .split_whitespace()
        .skip_while(|w| *w != "--discovery-token-ca-cert-hash")
        .nth(1)
        .map(str::to_string)
        .or_else(|| {
            cp.lines()
                .iter()
                .find_map(|l| l.trim().strip_prefix("--discovery-token-ca-cert-hash "))
                .map(|h| h.trim().to_string())
        })
        .expect("hash");
    let join_cfg = k1s_ok(&["config", "print", "join-defaults"])
        .replace("kube-apiserver:6443", &endpoint)
        .replace(
            "unsafeSkipCAVerification: true",
            &format!("caCertHashes: [\"{hash}\"]"),
        )
        .replace("name: node", "name: cfg-worker");
    let join_file = dir.path().join("join.yaml");
    std::fs::write(&join_file, join_cfg).expect("write");
    let wd = dir.path().join("worker").to_string_lossy().into_owned();
    let err = k1s_fails(&[
        "join",
        "--config",
        join_file.to_str().expect("utf8"),
        "--token",
        TOKEN,
        "--data-dir",
        &wd,
    ]);
    assert!(
        err.contains("can not mix '--config' with arguments [token]"),
        "{err}"
    );
    k1s_ok(&[
        "join",
        "--config",
        join_file.to_str().expect("utf8"),
        "--data-dir",
        &wd,
        "--no-simulated-node",
    ]);
    assert!(Path::new(&wd).join("kubelet.conf").exists());
    kubectl_ok(&admin, &["get", "csr"]);

    // certs renew: a new certificate on disk, and the running server serves it.
    let before = file_cert_der(&pki.join("apiserver.crt"));
    assert_eq!(served_cert(&port, &ca_pem, "localhost"), before);
    let out = k1s_ok(&["certs", "renew", "apiserver", "--data-dir", &ds]);
    assert!(
        out.contains("certificate for serving the Kubernetes API renewed"),
        "{out}"
    );
    let after = file_cert_der(&pki.join("apiserver.crt"));
    assert_ne!(before, after);
    wait_until(TIMEOUT, "the renewed serving certificate", || {
        (served_cert(&port, &ca_pem, "localhost") == after).then_some(())
    });
    let out = k1s_ok(&["certs", "renew", "all", "--data-dir", &ds]);
    for name in [
        "for the admin to use",
        "front proxy client",
        "scheduler manager",
        "super-admin",
    ] {
        assert!(out.contains(name), "{name} missing:\n{out}");
    }
    // admin.conf's renewed credentials still work.
    kubectl_ok(&admin, &["get", "ns", "default"]);
    let err = k1s_fails(&["certs", "renew", "etcd-server", "--data-dir", &ds]);
    assert!(err.contains("no etcd"), "{err}");
    let err = k1s_fails(&["certs", "renew", "bogus", "--data-dir", &ds]);
    assert!(err.contains("unknown certificate \"bogus\""), "{err}");

    // kubeconfig user.
    let alice = k1s_ok(&[
        "kubeconfig",
        "user",
        "--client-name",
        "alice",
        "--org",
        "devs",
        "--org",
        "ops",
        "--data-dir",
        &ds,
    ]);
    let alice_file = dir.path().join("alice.conf");
    std::fs::write(&alice_file, alice).expect("write");
    let me = kubectl_ok(
        &alice_file,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
        ],
    );
    assert!(
        me.starts_with("alice ") && me.contains("devs") && me.contains("ops"),
        "{me}"
    );
    let key = k1s_ok(&["certs", "certificate-key"]);
    assert!(
        key.trim().len() == 64 && key.trim().chars().all(|c| c.is_ascii_hexdigit()),
        "{key}"
    );
    cp.kill();
}

#[test]
fn init_phases_offline_and_generate_csr() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("p");
    let ds = d.to_string_lossy().into_owned();
    let pki = d.join("pki");
    let phase = |args: &[&str]| {
        let mut all = vec!["init", "phase"];
        all.extend_from_slice(args);
        all.extend_from_slice(&[
            "--data-dir",
            &ds,
            "--apiserver-advertise-address",
            "127.0.0.1",
        ]);
        k1s_ok(&all)
    };
    let out = phase(&["certs", "ca"]);
    assert!(
        out.contains("Generating \"ca\" certificate and key"),
        "{out}"
    );
    assert!(pki.join("ca.crt").exists() && pki.join("ca.key").exists());
    assert!(!pki.join("apiserver.crt").exists() && !pki.join("sa.key").exists());
    phase(&["certs", "apiserver"]);
    assert!(pki.join("apiserver.crt").exists() && !pki.join("front-proxy-ca.crt").exists());
    let out = phase(&["certs", "apiserver"]);
    assert!(
        out.contains("Using existing apiserver certificate and key"),
        "{out}"
    );
    let out = phase(&["certs", "etcd-ca"]);
    assert!(out.contains("k1s runs no etcd"), "{out}");
    phase(&["kubeconfig", "admin"]);
    assert!(d.join("admin.conf").exists() && !d.join("scheduler.conf").exists());
    let out = phase(&["etcd", "local"]);
    assert!(out.contains("Nothing to do in k1s"), "{out}");
    // A front-proxy client needs its CA first: a clear error, nothing written.
    let err = k1s_fails(&[
        "init",
        "phase",
        "certs",
        "front-proxy-client",
        "--data-dir",
        &ds,
    ]);
    assert!(err.contains("front-proxy-ca.crt"), "{err}");
    assert!(!pki.join("front-proxy-client.crt").exists());
    let err = k1s_fails(&["init", "phase", "certs", "--data-dir", &ds]);
    assert!(err.contains("not meant to be run on its own"), "{err}");
    let err = k1s_fails(&["init", "phase", "bogus", "--data-dir", &ds]);
    assert!(err.contains("unknown phase \"bogus\""), "{err}");

    // generate-csr: keys and CSRs, refused (writing nothing) when one exists.
    let csr_dir = dir.path().join("csr");
    let cs = csr_dir.to_string_lossy().into_owned();
    let out = k1s_ok(&[
        "certs",
        "generate-csr",
        "--kubeconfig-dir",
        &cs,
        "--cert-dir",
        &cs,
    ]);
    assert!(
        out.contains("apiserver.csr") && out.contains("admin.conf.csr"),
        "{out}"
    );
    for f in [
        "apiserver.csr",
        "apiserver.key",
        "admin.conf.csr",
        "scheduler.conf.key",
    ] {
        let text = std::fs::read_to_string(csr_dir.join(f)).expect(f);
        assert!(text.starts_with("-----BEGIN "), "{f}: {text}");
    }
    let err = k1s_fails(&[
        "certs",
        "generate-csr",
        "--kubeconfig-dir",
        &cs,
        "--cert-dir",
        &cs,
    ]);
    assert!(err.contains("already exists"), "{err}");
}

#[test]
fn bad_config_files_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("x");
    let ds = d.to_string_lossy().into_owned();
    let file = dir.path().join("c.yaml");
    let f = file.to_string_lossy().into_owned();
    let init_with = |body: &str| {
        std::fs::write(&file, body).expect("write");
        k1s_fails(&["init", "--config", &f, "--data-dir", &ds])
    };
    let err = init_with("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n  bad: [\n");
    assert!(err.contains("YAML"), "{err}");
    let err =
        init_with("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery: {}\n");
    assert!(
        err.contains("no InitConfiguration or ClusterConfiguration kind"),
        "{err}"
    );
    let err = init_with("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfigurashun\n");
    assert!(err.contains("Kind:\"InitConfigurashun\""), "{err}");
    let err = init_with("apiVersion: kubeadm.k8s.io/v1beta2\nkind: InitConfiguration\n");
    assert!(err.contains("old API spec"), "{err}");
    let err = init_with(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: lots\n",
    );
    assert!(
        err.contains("localAPIEndpoint.bindPort: expected an integer"),
        "{err}"
    );
    let err = init_with(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens:\n- token: short\n",
    );
    assert!(err.contains("bootstrapTokens[0].token"), "{err}");
    std::fs::write(
        &file,
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n",
    )
    .expect("w");
    let err = k1s_fails(&["init", "--config", &f, "--data-dir", &ds, "--cert-dir", &ds]);
    assert!(
        err.contains("can not mix '--config' with arguments [cert-dir]"),
        "{err}"
    );
    assert!(!d.exists(), "bad input wrote {}", d.display());

    // config validate is strict: an unknown field is an error that names it.
    std::fs::write(
        &file,
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnett: 10.0.0.0/8\n",
    )
    .expect("w");
    let err = k1s_fails(&["config", "validate", "--config", &f]);
    assert!(
        err.contains("unknown field \"networking.podSubnett\""),
        "{err}"
    );

    // config migrate: v1beta3 in, v1beta4 out, which validates.
    std::fs::write(
        &file,
        "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n    v: \"2\"\n",
    )
    .expect("w");
    let new = dir.path().join("new.yaml");
    let ns = new.to_string_lossy().into_owned();
    k1s_ok(&["config", "migrate", "--old-config", &f, "--new-config", &ns]);
    let migrated = std::fs::read_to_string(&new).expect("read");
    assert!(
        migrated.contains("kubeadm.k8s.io/v1beta4") && migrated.contains("name: v"),
        "{migrated}"
    );
    k1s_ok(&["config", "validate", "--config", &ns]);
}

#[test]
fn upload_certs_and_a_second_control_plane_on_a_shared_etcd() {
    let dir = tempfile::Builder::new()
        .prefix("k1s-kubeadm-cp-")
        .tempdir()
        .expect("tmp");
    // On the local store there is nothing to share: refused, nothing written.
    let x = dir.path().join("x");
    let xs = x.to_string_lossy().into_owned();
    let err = k1s_fails(&["init", "--upload-certs", "--data-dir", &xs]);
    assert!(err.contains("shared datastore"), "{err}");
    assert!(!x.exists());

    let etcd = k1s_tests::etcd::EtcdProcess::start();
    let etcd_url = etcd.url();
    let a = dir.path().join("cp1");
    let a_s = a.to_string_lossy().into_owned();
    let mut cp1 = spawn_init(
        &a,
        "cp1",
        &["--etcd-servers", &etcd_url, "--upload-certs"],
        "k1s init --upload-certs",
    );
    let lines = cp1.lines().to_vec();
    let text = lines.join("\n");
    let key = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("--control-plane --certificate-key "))
        .unwrap_or_else(|| panic!("no certificate key:\n{text}"))
        .trim()
        .to_string();
    assert_eq!(key.len(), 64, "{key}");
    let endpoint = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("k1s join "))
        .and_then(|l| l.split_whitespace().next())
        .expect("endpoint")
        .to_string();
    let hash = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("--discovery-token-ca-cert-hash "))
        .expect("hash")
        .trim_end_matches([' ', '\\'])
        .to_string();
    let admin1 = a.join("admin.conf");
    let owner = kubectl_ok(
        &admin1,
        &[
            "get",
            "secret",
            "-n",
            "kube-system",
            "kubeadm-certs",
            "-o",
            "jsonpath={.metadata.ownerReferences[0].name}",
        ],
    );
    assert!(owner.starts_with("bootstrap-token-"), "{owner}");
    // The phase on its own uploads again under a given key (kubeadm's way to renew the Secret).
    let out = k1s_ok(&[
        "init",
        "phase",
        "upload-certs",
        "--upload-certs",
        "--certificate-key",
        &key,
        "--data-dir",
        &a_s,
    ]);
    assert!(
        out.contains(&format!("Using certificate key:\n{key}")),
        "{out}"
    );

    let b = dir.path().join("cp2");
    let bs = b.to_string_lossy().into_owned();
    let join = |key: &str| {
        vec![
            "join".to_string(),
            endpoint.clone(),
            "--token".into(),
            TOKEN.into(),
            "--discovery-token-ca-cert-hash".into(),
            hash.clone(),
            "--control-plane".into(),
            "--certificate-key".into(),
            key.into(),
            "--data-dir".into(),
            bs.clone(),
            "--node-name".into(),
            "cp2".into(),
            "--apiserver-advertise-address".into(),
            "127.0.0.1".into(),
            "--apiserver-bind-port".into(),
            "0".into(),
            "--discovery-timeout".into(),
            "10s".into(),
        ]
    };
    // A wrong key cannot open the Secret: refused, nothing written.
    let wrong = join(&"00".repeat(32));
    let wrong: Vec<&str> = wrong.iter().map(String::as_str).collect();
    let err = k1s_fails(&wrong);
    assert!(err.contains("message authentication failed"), "{err}");
    assert!(!b.join("pki").exists() && !b.join("admin.conf").exists());

    let args = join(&key);
    let mut cmd = Command::new(k1s_bin());
    cmd.args(&args);
    let mut cp2 = StreamingCommand::spawn(&mut cmd, "k1s join --control-plane".into());
    cp2.wait_for_line(TIMEOUT, |l| {
        l.starts_with("k1s is serving the Kubernetes API at")
    });
    let text2 = cp2.lines().join("\n");
    assert!(
        text2.contains("a new control plane instance was created"),
        "{text2}"
    );
    for f in ["ca.crt", "ca.key", "sa.key", "front-proxy-ca.crt"] {
        assert_eq!(
            std::fs::read(a.join("pki").join(f)).expect("a"),
            std::fs::read(b.join("pki").join(f)).expect("b"),
            "{f}"
        );
    }
    // Its own admin.conf reaches the shared cluster, which now has both control-plane nodes.
    let admin2 = b.join("admin.conf");
    wait_until(TIMEOUT, "both control-plane nodes", || {
        let out = kubectl(
            &admin2,
            &[
                "get",
                "nodes",
                "-l",
                "node-role.kubernetes.io/control-plane",
                "-o",
                "name",
            ],
        );
        let names = stdout(&out);
        (names.contains("node/cp1") && names.contains("node/cp2")).then_some(())
    });
    cp2.kill();
    cp1.kill();
}

/// A one-file HTTPS server on 127.0.0.1 (a thread per connection, rustls), its certificate
/// issued by a fresh CA; returns the port and the CA PEM.
fn serve_https_file(body: String) -> (u16, String) {
    use std::io::{Read, Write};
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "discovery-file-ca");
    let ca_pem = ca.clone().self_signed(&ca_key).expect("ca").pem();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("cert");
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .expect("tls");
    let config = std::sync::Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let config = config.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let found = String::from_utf8_lossy(&request).starts_with("GET /discovery.conf ");
                let (status, body) = match found {
                    true => ("200 OK", body),
                    false => ("404 Not Found", String::new()),
                };
                let _ = write!(
                    tls,
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    (port, ca_pem)
}

#[test]
fn join_with_a_discovery_file_or_url() {
    let cp = init();
    let admin = cp.admin.clone();
    let root = cp.data.parent().expect("parent").to_path_buf();
    let path = |name: &str| root.join(name).to_string_lossy().into_owned();
    // kubeadm's usual discovery file: cluster-info's kubeconfig (server and CA, no user).
    let cluster_info = kubectl_ok(
        &admin,
        &[
            "get",
            "cm",
            "-n",
            "kube-public",
            "cluster-info",
            "-o",
            "jsonpath={.data.kubeconfig}",
        ],
    );
    assert!(
        cluster_info.contains("certificate-authority-data"),
        "{cluster_info}"
    );
    let info_file = path("cluster-info.yaml");
    std::fs::write(&info_file, &cluster_info).expect("write");
    let base = |dir: &str, name: &str| -> Vec<String> {
        [
            "join",
            "--data-dir",
            &path(dir),
            "--node-name",
            name,
            "--discovery-timeout",
            "2s",
            "--no-simulated-node",
        ]
        .map(String::from)
        .to_vec()
    };
    let run = |args: &[String], env: Option<(&str, &str)>| -> Output {
        let mut cmd = Command::new(k1s_bin());
        cmd.args(args);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        run_with_timeout(cmd, None, TIMEOUT).expect("k1s join")
    };
    let joined_as = |dir: &str, name: &str| {
        let conf = root.join(dir).join("kubelet.conf");
        let who = kubectl_ok(
            &conf,
            &[
                "auth",
                "whoami",
                "-o",
                "jsonpath={.status.userInfo.username}",
            ],
        );
        assert_eq!(who.trim(), format!("system:node:{name}"));
        assert!(root.join(dir).join("pki/ca.crt").exists());
    };

    // The file gives server and CA; --token authenticates the TLS bootstrap.
    let mut args = base("f1", "f1");
    args.extend(["--discovery-file", &info_file, "--token", TOKEN].map(String::from));
    let out = run(&args, None);
    let text = ok(&["join --discovery-file"], out);
    assert!(
        text.contains("[discovery] Created cluster-info discovery client")
            && text.contains("This node has joined the cluster"),
        "{text}"
    );
    joined_as("f1", "f1");

    // A file whose user carries the bootstrap token needs no token flag (a
    // bootstrap-kubelet.conf), and --tls-bootstrap-token is honoured.
    let ca_b64 = cluster_info
        .lines()
        .find_map(|l| l.trim().strip_prefix("certificate-authority-data:"))
        .expect("ca data")
        .trim()
        .to_string();
    let server = cluster_info
        .lines()
        .find_map(|l| l.trim().strip_prefix("server:"))
        .expect("server")
        .trim()
        .to_string();
    let with_user = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca_b64}\nusers:\n- name: tls-bootstrap-token-user\n  user:\n    token: {TOKEN}\ncontexts:\n- name: c\n  context: {{cluster: k, user: tls-bootstrap-token-user}}\ncurrent-context: c\n"
    );
    let user_file = path("bootstrap.conf");
    std::fs::write(&user_file, &with_user).expect("write");
    let mut args = base("f2", "f2");
    args.extend(["--discovery-file", &user_file].map(String::from));
    ok(&["join (file credentials)"], run(&args, None));
    joined_as("f2", "f2");

    // JoinConfiguration discovery.file.kubeConfigPath is the same thing.
    let cfg = path("join.yaml");
    std::fs::write(
        &cfg,
        format!(
            "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  file:\n    kubeConfigPath: {info_file}\n  tlsBootstrapToken: {TOKEN}\nnodeRegistration:\n  name: f3\n"
        ),
    )
    .expect("write");
    k1s_ok(&[
        "join",
        "--config",
        &cfg,
        "--data-dir",
        &path("f3"),
        "--no-simulated-node",
    ]);
    joined_as("f3", "f3");

    // An https URL, verified against the host's CA bundle (SSL_CERT_FILE here).
    let (port, web_ca) = serve_https_file(cluster_info.clone());
    let web_ca_file = path("web-ca.pem");
    std::fs::write(&web_ca_file, &web_ca).expect("write");
    let url = format!("https://127.0.0.1:{port}/discovery.conf");
    let mut args = base("f4", "f4");
    args.extend(["--discovery-file", &url, "--token", TOKEN].map(String::from));
    ok(
        &["join --discovery-file https://..."],
        run(&args, Some(("SSL_CERT_FILE", &web_ca_file))),
    );
    joined_as("f4", "f4");
    // Without that CA the URL's server is not trusted.
    let mut args = base("u1", "u1");
    args.extend(["--discovery-file", &url, "--token", TOKEN].map(String::from));
    let empty_bundle = path("empty-bundle.pem");
    std::fs::write(&empty_bundle, "").expect("write");
    let err = fails(
        &["join (untrusted URL)"],
        run(&args, Some(("SSL_CERT_FILE", &empty_bundle))),
    );
    assert!(err.contains("couldn't fetch the discovery file"), "{err}");
    assert!(
        !root.join("u1").exists(),
        "an untrusted URL wrote {}",
        path("u1")
    );

    // Refusals: each a clear error, nothing written.
    let wrong_ca = {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.self_signed(&key).expect("ca").pem()
    };
    let b64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let files = [
        ("malformed.yaml", "clusters: [: nope".to_string()),
        (
            "empty.yaml",
            "apiVersion: v1\nkind: Config\nclusters: []\n".to_string(),
        ),
        (
            "wrong-ca.yaml",
            cluster_info.replace(&ca_b64, &b64(&wrong_ca)),
        ),
        (
            "unreachable.yaml",
            cluster_info.replace(&server, "https://127.0.0.1:1"),
        ),
    ];
    for (name, text) in &files {
        std::fs::write(path(name), text).expect("write");
    }
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--discovery-file".into(),
                info_file.clone(),
                cp.endpoint.clone(),
                "--token".into(),
                TOKEN.into(),
            ],
            "bootstrapToken and file cannot both be set",
        ),
        (
            vec![
                "--discovery-file".into(),
                info_file.clone(),
                "--discovery-token".into(),
                TOKEN.into(),
            ],
            "bootstrapToken and file cannot both be set",
        ),
        (
            vec![
                "--discovery-file".into(),
                path("missing.yaml"),
                "--token".into(),
                TOKEN.into(),
            ],
            "not a valid HTTPS URL or a file on disk",
        ),
        (
            vec![
                "--discovery-file".into(),
                format!("http://127.0.0.1:{port}/discovery.conf"),
                "--token".into(),
                TOKEN.into(),
            ],
            "if a URL is used, the scheme must be https",
        ),
        (
            vec![
                "--discovery-file".into(),
                path("malformed.yaml"),
                "--token".into(),
                TOKEN.into(),
            ],
            "the provided kubeconfig file is malformed",
        ),
        (
            vec![
                "--discovery-file".into(),
                path("empty.yaml"),
                "--token".into(),
                TOKEN.into(),
            ],
            "must have at least one Cluster defined",
        ),
        (
            vec![
                "--discovery-file".into(),
                path("wrong-ca.yaml"),
                "--token".into(),
                TOKEN.into(),
            ],
            "Abort reading the cluster-info ConfigMap after timeout",
        ),
        (
            vec![
                "--discovery-file".into(),
                path("unreachable.yaml"),
                "--token".into(),
                TOKEN.into(),
            ],
            "Abort reading the cluster-info ConfigMap after timeout",
        ),
        (
            vec!["--discovery-file".into(), info_file.clone()],
            "holds no credentials for the TLS bootstrap",
        ),
        (
            vec![
                "--discovery-file".into(),
                info_file.clone(),
                "--tls-bootstrap-token".into(),
                "bad".into(),
            ],
            "discovery.tlsBootstrapToken",
        ),
    ];
    for (i, (extra, want)) in cases.into_iter().enumerate() {
        let dir = format!("refused-file-{i}");
        let mut args = base(&dir, "nope");
        args.extend(extra);
        let err = fails(&["join"], run(&args, None));
        assert!(err.contains(want), "case {i}: expected {want:?} in:\n{err}");
        assert!(!root.join(&dir).exists(), "case {i} wrote {dir}");
    }
    // A JoinConfiguration with both kinds of discovery.
    std::fs::write(
        &cfg,
        format!(
            "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  file:\n    kubeConfigPath: {info_file}\n  bootstrapToken:\n    token: {TOKEN}\n    apiServerEndpoint: {}\n    unsafeSkipCAVerification: true\n",
            cp.endpoint
        ),
    )
    .expect("write");
    let err = k1s_fails(&["join", "--config", &cfg, "--data-dir", &path("both")]);
    assert!(
        err.contains("bootstrapToken and file cannot both be set"),
        "{err}"
    );
    assert!(!root.join("both").exists());
}

#[test]
fn external_etcd_client_certificates_travel_in_kubeadm_certs() {
    let dir = tempfile::Builder::new()
        .prefix("k1s-kubeadm-etcdtls-")
        .tempdir()
        .expect("tmp");
    let ca = k1s_tests::tinyca::TinyCa::new("etcd-ca");
    let etcd_pki = dir.path().join("etcd-pki");
    std::fs::create_dir_all(&etcd_pki).expect("mkdir");
    let write = |name: &str, pem: &str| {
        let path = etcd_pki.join(name);
        std::fs::write(&path, pem).expect("write");
        path.to_string_lossy().into_owned()
    };
    let (serving, serving_key) = ca.issue(&["127.0.0.1", "localhost"], None);
    let (client, client_key) = ca.issue(&[], Some(("kube-apiserver-etcd-client", &[])));
    let tls = k1s_tests::etcd::EtcdTls {
        cert_file: write("server.crt", &serving).into(),
        key_file: write("server.key", &serving_key).into(),
        ca_file: write("ca.crt", &ca.pem).into(),
    };
    let (ca_file, cert_file, key_file) = (
        tls.ca_file.to_string_lossy().into_owned(),
        write("client.crt", &client),
        write("client.key", &client_key),
    );
    let etcd = k1s_tests::etcd::EtcdCluster::start_tls(&tls);

    let a = dir.path().join("cp1");
    let etcd_url = etcd.url();
    let mut cp1 = spawn_init(
        &a,
        "cp1",
        &[
            "--etcd-servers",
            &etcd_url,
            "--etcd-cafile",
            &ca_file,
            "--etcd-certfile",
            &cert_file,
            "--etcd-keyfile",
            &key_file,
            "--upload-certs",
        ],
        "k1s init (TLS etcd)",
    );
    let lines = cp1.lines().to_vec();
    let key = lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("--control-plane --certificate-key "))
        .expect("certificate key")
        .trim()
        .to_string();
    // kubeadm's key names, each value sealed (not the plain PEM).
    let admin1 = a.join("admin.conf");
    let data = kubectl_ok(
        &admin1,
        &[
            "get",
            "secret",
            "-n",
            "kube-system",
            "kubeadm-certs",
            "-o",
            "jsonpath={.data}",
        ],
    );
    let data: serde_json::Value = serde_json::from_str(&data).expect("json");
    for k in [
        "external-etcd-ca.crt",
        "external-etcd.crt",
        "external-etcd.key",
        "ca.key",
    ] {
        let v = data[k]
            .as_str()
            .unwrap_or_else(|| panic!("{k} missing: {data}"));
        assert!(!v.is_empty(), "{k} empty");
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::STANDARD
            .decode(v)
            .expect("b64");
        assert!(
            !String::from_utf8_lossy(&raw).contains("BEGIN"),
            "{k} is not encrypted"
        );
    }

    // The second control plane (discovered through a file this time) gets the etcd client
    // files at the paths it is told, and reaches the TLS etcd with them.
    let cluster_info = kubectl_ok(
        &admin1,
        &[
            "get",
            "cm",
            "-n",
            "kube-public",
            "cluster-info",
            "-o",
            "jsonpath={.data.kubeconfig}",
        ],
    );
    let info_file = dir.path().join("cluster-info.yaml");
    std::fs::write(&info_file, cluster_info).expect("write");
    let b = dir.path().join("cp2");
    let bs = b.to_string_lossy().into_owned();
    let b_etcd = b.join("etcd");
    let target = |f: &str| b_etcd.join(f).to_string_lossy().into_owned();
    let mut cmd = Command::new(k1s_bin());
    cmd.args([
        "join",
        "--discovery-file",
        info_file.to_str().expect("utf8"),
        "--token",
        TOKEN,
        "--control-plane",
        "--certificate-key",
        &key,
        "--data-dir",
        &bs,
        "--node-name",
        "cp2",
        "--apiserver-advertise-address",
        "127.0.0.1",
        "--apiserver-bind-port",
        "0",
        "--discovery-timeout",
        "10s",
        "--etcd-cafile",
        &target("ca.crt"),
        "--etcd-certfile",
        &target("client.crt"),
        "--etcd-keyfile",
        &target("client.key"),
    ]);
    let mut cp2 = StreamingCommand::spawn(&mut cmd, "k1s join --control-plane (TLS etcd)".into());
    cp2.wait_for_line(TIMEOUT, |l| {
        l.starts_with("k1s is serving the Kubernetes API at")
    });
    for (theirs, ours) in [
        (&ca_file, "ca.crt"),
        (&cert_file, "client.crt"),
        (&key_file, "client.key"),
    ] {
        assert_eq!(
            std::fs::read(theirs).expect("cp1's"),
            std::fs::read(b_etcd.join(ours)).expect("cp2's"),
            "{ours}"
        );
    }
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(b_etcd.join("client.key"))
        .expect("key")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let admin2 = b.join("admin.conf");
    wait_until(TIMEOUT, "both control-plane nodes through cp2", || {
        let out = kubectl(&admin2, &["get", "nodes", "-o", "name"]);
        let names = stdout(&out);
        (names.contains("node/cp1") && names.contains("node/cp2")).then_some(())
    });
    cp2.kill();
    cp1.kill();
}

#[test]
fn a_certificate_due_within_30_days_is_renewed_when_the_server_starts() {
    let data = tempfile::Builder::new()
        .prefix("k1s-kubeadm-renew-")
        .tempdir()
        .expect("tmp");
    let start = || {
        k1s_tests::TestCluster::start_with(k1s_tests::StartOptions {
            data_dir: Some(data.path().to_path_buf()),
            extra_args: vec!["--nodes".into(), "0".into()],
        })
    };
    // The first start makes the PKI.
    drop(start());
    let pki = data.path().join("pki");
    let read = |f: &str| std::fs::read_to_string(pki.join(f)).expect(f);
    // A serving certificate from the cluster CA, on the server's own key, that expires in
    // 10 days: as a year-old one would look, without touching any clock.
    let issuer = rcgen::Issuer::from_ca_cert_pem(
        &read("ca.crt"),
        rcgen::KeyPair::from_pem(&read("ca.key")).expect("ca key"),
    )
    .expect("issuer");
    let key = rcgen::KeyPair::from_pem(&read("apiserver.key")).expect("serving key");
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kube-apiserver");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let now = std::time::SystemTime::now();
    params.not_before = (now - Duration::from_secs(3600)).into();
    params.not_after = (now + Duration::from_secs(10 * 86400)).into();
    let planted = params.signed_by(&key, &issuer).expect("cert");
    std::fs::write(pki.join("apiserver.crt"), planted.pem()).expect("plant");
    let ds = data.path().to_string_lossy().into_owned();
    let before = k1s_ok(&["certs", "check-expiration", "--data-dir", &ds]);
    // The RESIDUAL TIME column of the apiserver row, in whole days.
    let residual_days = |table: &str| -> u64 {
        let row = table
            .lines()
            .find(|l| l.starts_with("apiserver "))
            .unwrap_or_else(|| panic!("no apiserver row:\n{table}"));
        let after_utc = row.split_once(" UTC").expect("expiry column").1;
        let residual = after_utc.split_whitespace().next().expect("residual");
        // kubeadm's short durations: "10d", "364d", "1y", or hours under a day.
        let (n, unit) = residual.split_at(residual.len() - 1);
        let n: u64 = n
            .parse()
            .unwrap_or_else(|_| panic!("residual {residual:?} in {row:?}"));
        match unit {
            "y" => n * 365,
            "d" => n,
            _ => 0,
        }
    };
    assert!(residual_days(&before) <= 10, "{before}");

    // The next start renews it before serving, says so, and serves the new certificate.
    let server = start();
    let log = server.server_stderr();
    assert!(
        log.contains("[certs] Renewed apiserver (it had "),
        "no renewal logged:\n{log}"
    );
    let renewed = file_cert_der(&pki.join("apiserver.crt"));
    assert_ne!(renewed, planted.der().to_vec());
    let port = server.url().rsplit(':').next().expect("port").to_string();
    assert_eq!(
        served_cert(&port, read("ca.crt").as_bytes(), "localhost"),
        renewed
    );
    let after = k1s_ok(&["certs", "check-expiration", "--data-dir", &ds]);
    assert!(residual_days(&after) >= 364, "{after}");
}

#[test]
fn a_systemd_unit_brings_the_initialized_control_plane_back() {
    let dir = tempfile::Builder::new()
        .prefix("k1s-kubeadm-unit-")
        .tempdir()
        .expect("tmp");
    let data = dir.path().join("cp");
    let unit = dir.path().join("k1s.service");
    let (data_s, unit_s) = (
        data.to_string_lossy().into_owned(),
        unit.to_string_lossy().into_owned(),
    );
    let mut first = spawn_init(&data, "cp", &["--write-systemd-unit", &unit_s], "k1s init");
    let said = first.lines().join("\n");
    assert!(
        said.contains("systemctl daemon-reload && systemctl enable --now k1s.service"),
        "{said}"
    );
    let admin = data.join("admin.conf");
    kubectl_ok(
        &admin,
        &["create", "configmap", "kept", "--from-literal=a=b"],
    );
    let text = std::fs::read_to_string(&unit).expect("unit written");
    assert!(
        text.contains("[Install]\nWantedBy=multi-user.target"),
        "{text}"
    );
    assert!(text.contains("Restart=always"), "{text}");
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap_or_else(|| panic!("no ExecStart:\n{text}"));
    // The unit's command with the binary under test: the same data, port and node, no phase
    // that writes.
    let args: Vec<&str> = exec.split_whitespace().skip(1).collect();
    assert!(
        args.contains(&format!("--data-dir={data_s}").as_str()),
        "{exec}"
    );
    assert!(
        args.iter()
            .any(|a| a.starts_with("--skip-phases=preflight,kubeconfig")),
        "{exec}"
    );
    first.kill();
    let mut again = Command::new(k1s_bin());
    again.args(&args);
    let mut second = StreamingCommand::spawn(&mut again, "k1s init (the unit)".into());
    second.wait_for_line(TIMEOUT, |l| {
        l.starts_with("k1s is serving the Kubernetes API at")
    });
    let said = second.lines().join("\n");
    assert!(!said.contains("[bootstrap-token]"), "{said}");
    assert_eq!(
        kubectl_ok(
            &admin,
            &["get", "configmap", "kept", "-o", "jsonpath={.data.a}"]
        ),
        "b"
    );
    wait_until(TIMEOUT, "the control-plane node Ready again", || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "node",
                "cp",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ],
        );
        (stdout(&out) == "True").then_some(())
    });
}

/// The certificate (PEM) and key (PEM) embedded in a kubeconfig written by `k1s join`.
fn kubeconfig_credentials(path: &Path) -> (String, String) {
    use base64::Engine as _;
    let text = std::fs::read_to_string(path).expect("kubeconfig");
    let field = |name: &str| {
        let value = text
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value.trim())
            .expect("base64");
        String::from_utf8(bytes).expect("PEM")
    };
    (field("client-certificate-data:"), field("client-key-data:"))
}

#[test]
fn a_joined_node_rotates_its_client_certificate_before_it_expires() {
    use base64::Engine as _;
    let cp = init();
    let admin = cp.admin.clone();
    let jdir = cp.data.parent().expect("parent").join("n3");
    let jd = jdir.to_string_lossy().into_owned();
    let mut args = cp.join_args(TOKEN, &cp.hash, &jd, "n3");
    args.pop(); // run the simulated node
    let mut cmd = Command::new(k1s_bin());
    cmd.args(&args);
    let mut node = StreamingCommand::spawn(&mut cmd, "k1s join".into());
    node.wait_for_line(TIMEOUT, |l| l.contains("This node has joined the cluster"));
    let node_ready = || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "node",
                "n3",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ],
        );
        (stdout(&out).trim() == "True").then_some(())
    };
    wait_until(TIMEOUT, "n3 Ready", node_ready);

    // Plant a certificate for the node from the cluster CA, issued 9 minutes ago and valid
    // for 10: past any rotation deadline (70-90% of its validity), as an old one would be.
    let read = |f: &str| std::fs::read_to_string(cp.data.join("pki").join(f)).expect(f);
    let issuer = rcgen::Issuer::from_ca_cert_pem(
        &read("ca.crt"),
        rcgen::KeyPair::from_pem(&read("ca.key")).expect("ca key"),
    )
    .expect("issuer");
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "system:node:n3");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let now = std::time::SystemTime::now();
    params.not_before = (now - Duration::from_secs(9 * 60)).into();
    params.not_after = (now + Duration::from_secs(60)).into();
    let planted = params.signed_by(&key, &issuer).expect("cert").pem();
    let kubelet_conf = jdir.join("kubelet.conf");
    let (joined_cert, joined_key) = kubeconfig_credentials(&kubelet_conf);
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let text = std::fs::read_to_string(&kubelet_conf).expect("kubelet.conf");
    let text = text
        .replace(&b64(&joined_cert), &b64(&planted))
        .replace(&b64(&joined_key), &b64(&key.serialize_pem()));
    std::fs::write(&kubelet_conf, text).expect("plant");
    assert_eq!(kubeconfig_credentials(&kubelet_conf).0, planted);

    // The agent notices the file, finds the certificate due and renews it.
    let line = node.wait_for_line(TIMEOUT, |l| {
        l.starts_with("[kubelet-client] rotated the node client certificate, valid until ")
    });
    let (rotated, _) = kubeconfig_credentials(&kubelet_conf);
    assert!(rotated != planted && rotated != joined_cert, "{line}");
    let (_, pem) = x509_parser::pem::parse_x509_pem(rotated.as_bytes()).expect("PEM");
    let not_after = pem
        .parse_x509()
        .expect("rotated certificate")
        .validity()
        .not_after
        .timestamp();
    let unix_now = now
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    assert!(
        not_after - unix_now > 360 * 86400,
        "the renewed certificate should be valid for about a year: {line}"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kubelet_conf)
        .expect("kubelet.conf")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let whoami = kubectl_ok(
        &kubelet_conf,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(whoami.trim(), "system:node:n3");

    // The renewal was requested by the node itself and auto-approved.
    let csrs: serde_json::Value =
        serde_json::from_str(&kubectl_ok(&admin, &["get", "csr", "-o", "json"])).expect("json");
    let renewal = csrs["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|c| c["spec"]["username"] == "system:node:n3")
        .unwrap_or_else(|| panic!("no CSR from system:node:n3:\n{csrs:#}"));
    assert_eq!(
        renewal["spec"]["signerName"],
        "kubernetes.io/kube-apiserver-client-kubelet"
    );
    let approved = renewal["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .any(|c| c["type"] == "Approved" && c["status"] == "True");
    assert!(approved, "{renewal:#}");
    let issued = base64::engine::general_purpose::STANDARD
        .decode(
            renewal["status"]["certificate"]
                .as_str()
                .expect("certificate"),
        )
        .expect("base64");
    assert_eq!(String::from_utf8_lossy(&issued), rotated);

    // The node agent keeps going on the new credentials: its Lease is renewed after the
    // rotation and the Node stays Ready.
    let renew_time = || {
        let out = kubectl_ok(
            &admin,
            &[
                "get",
                "lease",
                "n3",
                "-n",
                "kube-node-lease",
                "-o",
                "jsonpath={.spec.renewTime}",
            ],
        );
        out.trim().to_string()
    };
    let after_rotation = renew_time();
    wait_until(TIMEOUT, "the Lease renewed after the rotation", || {
        (renew_time() != after_rotation).then_some(())
    });
    node_ready().expect("n3 stays Ready");
    node.kill();
}
