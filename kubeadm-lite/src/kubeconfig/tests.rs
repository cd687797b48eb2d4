//! Tests for kubeconfig writing, loading and context resolution.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use super::*;
use crate::pki::{PkiOptions, ensure_pki};

const SERVER: &str = "https://127.0.0.1:6443";

#[test]
fn admin_kubeconfig_round_trips_server_ca_cert_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = ensure_pki(&tmp.path().join("pki"), &PkiOptions::for_server(&[], None)).unwrap();
    let (cert, key) = pki
        .issue_client_cert(
            ADMIN_USER,
            &["kubeadm:cluster-admins"],
            Duration::from_secs(3600),
        )
        .unwrap();
    let path = tmp.path().join("admin.conf");
    write_admin_kubeconfig(&path, SERVER, "kubernetes", pki.ca_cert_pem(), &cert, &key).unwrap();

    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let text = fs::read_to_string(&path).unwrap();
    for needle in [
        "apiVersion: v1",
        "kind: Config",
        "current-context: kubernetes-admin@kubernetes",
        "certificate-authority-data: ",
        "client-certificate-data: ",
        "client-key-data: ",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // Base64 values stay on one line (no folded block scalars), as kubectl writes them.
    assert!(!text.contains('>') && !text.contains('|'), "{text}");

    let resolved = Kubeconfig::load_context(&path, None).unwrap();
    assert_eq!(resolved.server, SERVER);
    assert_eq!(
        resolved.ca_pem.as_deref(),
        Some(pki.ca_cert_pem().as_bytes())
    );
    assert_eq!(resolved.client_cert_pem.as_deref(), Some(cert.as_bytes()));
    assert_eq!(resolved.client_key_pem.as_deref(), Some(key.as_bytes()));
    assert_eq!(resolved.token, None);
    assert_eq!(resolved.namespace, None);
    assert!(!resolved.insecure);

    let loaded = Kubeconfig::load(&path).unwrap();
    assert_eq!(
        loaded,
        Kubeconfig::for_client_cert(
            SERVER,
            "kubernetes",
            ADMIN_USER,
            pki.ca_cert_pem(),
            &cert,
            &key
        )
    );
    assert_eq!(loaded.contexts[0].context.user, "kubernetes-admin");

    // Overwriting is atomic and leaves no temp file behind.
    write_admin_kubeconfig(
        &path,
        "https://10.0.0.1:6443",
        "k1s",
        pki.ca_cert_pem(),
        &cert,
        &key,
    )
    .unwrap();
    let names: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "pki")
        .collect();
    assert_eq!(names, ["admin.conf"]);
    let again = Kubeconfig::load_context(&path, None).unwrap();
    assert_eq!(again.server, "https://10.0.0.1:6443");
}

/// kubectl, when installed, must read our file the same way.
#[test]
fn kubectl_reads_the_admin_kubeconfig() {
    let Ok(out) = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
    else {
        return;
    };
    if !out.status.success() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("admin.conf");
    write_admin_kubeconfig(&path, SERVER, "kubernetes", "CA", "CERT", "KEY").unwrap();
    let out = Command::new("kubectl")
        .args([
            "config",
            "view",
            "--raw",
            "--minify",
            "-o",
            "json",
            "--kubeconfig",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["current-context"], "kubernetes-admin@kubernetes");
    assert_eq!(view["clusters"][0]["cluster"]["server"], SERVER);
    assert_eq!(
        view["clusters"][0]["cluster"]["certificate-authority-data"],
        b64(b"CA")
    );
    assert_eq!(view["users"][0]["name"], "kubernetes-admin");
    assert_eq!(view["users"][0]["user"]["client-key-data"], b64(b"KEY"));
}

const FILE_BASED: &str = r#"
apiVersion: v1
kind: Config
preferences: {}
current-context: admin
clusters:
- name: local
  cluster:
    server: https://k1s.example:6443
    certificate-authority: certs/ca.pem
    tls-server-name: k1s.internal
- name: other
  cluster:
    server: https://other:6443
    insecure-skip-tls-verify: true
contexts:
- name: admin
  context:
    cluster: local
    user: file-user
    namespace: kube-system
- name: dev
  context:
    cluster: other
    user: token-user
- name: ghost
  context:
    cluster: local
    user: nobody
- name: lost
  context:
    cluster: nowhere
    user: file-user
- name: anonymous
  context:
    cluster: other
users:
- name: file-user
  user:
    client-certificate: certs/client.pem
    client-key: ABSOLUTE_KEY
- name: token-user
  user:
    token: abc.def
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
      args: ["--cluster", "other"]
"#;

#[test]
fn file_paths_resolve_relative_to_the_kubeconfig_and_absolute_as_is() {
    let tmp = tempfile::tempdir().unwrap();
    let conf_dir = tmp.path().join("kube");
    fs::create_dir_all(conf_dir.join("certs")).unwrap();
    fs::write(conf_dir.join("certs/ca.pem"), "CA PEM").unwrap();
    fs::write(conf_dir.join("certs/client.pem"), "CLIENT PEM").unwrap();
    let key_path = tmp.path().join("elsewhere-key.pem");
    fs::write(&key_path, "KEY PEM").unwrap();
    let path = conf_dir.join("config");
    fs::write(
        &path,
        FILE_BASED.replace("ABSOLUTE_KEY", &key_path.display().to_string()),
    )
    .unwrap();

    let admin = Kubeconfig::load_context(&path, None).unwrap();
    assert_eq!(admin.server, "https://k1s.example:6443");
    assert_eq!(admin.ca_pem.as_deref(), Some(&b"CA PEM"[..]));
    assert_eq!(admin.client_cert_pem.as_deref(), Some(&b"CLIENT PEM"[..]));
    assert_eq!(admin.client_key_pem.as_deref(), Some(&b"KEY PEM"[..]));
    assert_eq!(admin.namespace.as_deref(), Some("kube-system"));
    assert!(!admin.insecure);

    let dev = Kubeconfig::load_context(&path, Some("dev")).unwrap();
    assert_eq!(dev.server, "https://other:6443");
    assert_eq!(dev.token.as_deref(), Some("abc.def"));
    assert!(dev.insecure);
    assert_eq!(dev.ca_pem, None);
    assert_eq!(dev.client_cert_pem, None);

    let anon = Kubeconfig::load_context(&path, Some("anonymous")).unwrap();
    assert_eq!((anon.token, anon.client_cert_pem), (None, None));

    // A missing credential file names the field and the path.
    fs::remove_file(conf_dir.join("certs/client.pem")).unwrap();
    let err = Kubeconfig::load_context(&path, None).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, KubeconfigError::CredentialFile { .. }),
        "{err:?}"
    );
    assert!(
        msg.contains("client-certificate") && msg.contains("client.pem"),
        "{msg}"
    );
}

#[test]
fn unknown_fields_survive_a_load_save_round_trip() {
    let config = Kubeconfig::from_yaml(FILE_BASED).unwrap();
    assert!(config.extra.contains_key("preferences"));
    assert_eq!(
        config.clusters[0].cluster.extra["tls-server-name"],
        "k1s.internal"
    );
    assert_eq!(config.users[1].user.extra["exec"]["command"], "get-token");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("sub/dir/config");
    config.save(&path).unwrap();
    assert_eq!(Kubeconfig::load(&path).unwrap(), config);
}

#[test]
fn missing_user_context_or_cluster_give_clear_errors() {
    let config = Kubeconfig::from_yaml(FILE_BASED).unwrap();
    let base = Path::new("/nonexistent");

    let err = config.resolve(Some("ghost"), base).unwrap_err();
    assert!(
        matches!(&err, KubeconfigError::UserNotFound { user, context } if user == "nobody" && context == "ghost"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "user \"nobody\" (used by context \"ghost\") not found in kubeconfig"
    );

    let err = config.resolve(Some("lost"), base).unwrap_err();
    assert!(
        matches!(&err, KubeconfigError::ClusterNotFound { cluster, .. } if cluster == "nowhere"),
        "{err:?}"
    );
    let err = config.resolve(Some("nope"), base).unwrap_err();
    assert!(
        matches!(&err, KubeconfigError::ContextNotFound(c) if c == "nope"),
        "{err:?}"
    );

    let mut no_current = config.clone();
    no_current.current_context.clear();
    assert!(matches!(
        no_current.resolve(None, base),
        Err(KubeconfigError::NoCurrentContext)
    ));
}

#[test]
fn bad_base64_bad_yaml_and_wrong_kind_are_reported() {
    let mut config = Kubeconfig::for_client_cert(SERVER, "c", "u", "CA", "CERT", "KEY");
    config.users[0].user.client_key_data = Some("not*base64!".into());
    let err = config.resolve(None, Path::new(".")).unwrap_err();
    assert!(
        matches!(&err, KubeconfigError::Base64 { field, .. } if field == "users[u].user.client-key-data"),
        "{err:?}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("broken");
    fs::write(&path, "apiVersion: v1\nclusters: [unclosed\n").unwrap();
    let err = Kubeconfig::load(&path).unwrap_err();
    assert!(
        matches!(&err, KubeconfigError::Yaml { path: p, .. } if p == &path),
        "{err:?}"
    );
    fs::write(&path, "clusters: 42\n").unwrap();
    assert!(matches!(
        Kubeconfig::load(&path),
        Err(KubeconfigError::Yaml { .. })
    ));

    assert!(matches!(
        Kubeconfig::from_yaml("apiVersion: v1\nkind: Pod\n"),
        Err(KubeconfigError::WrongKind(k)) if k == "Pod"
    ));
    assert!(matches!(
        Kubeconfig::load(&tmp.path().join("absent")),
        Err(KubeconfigError::Io { .. })
    ));
}

#[test]
fn nulls_and_wrapped_base64_are_tolerated() {
    let config = Kubeconfig::from_yaml(
        "apiVersion: v1\nkind: Config\nclusters: null\nusers:\ncontexts: []\ncurrent-context: \"\"\n",
    )
    .unwrap();
    assert!(config.clusters.is_empty() && config.users.is_empty());

    let wrapped = format!(
        "clusters:\n- name: c\n  cluster:\n    server: {SERVER}\n    certificate-authority-data: \"{}\\n{}\"\ncontexts:\n- name: x\n  context:\n    cluster: c\ncurrent-context: x\n",
        &b64(b"0123456789abcdef")[..12],
        &b64(b"0123456789abcdef")[12..]
    );
    let resolved = Kubeconfig::from_yaml(&wrapped)
        .unwrap()
        .resolve(None, Path::new("."))
        .unwrap();
    assert_eq!(resolved.ca_pem.as_deref(), Some(&b"0123456789abcdef"[..]));
}
