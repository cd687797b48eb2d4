//! The smaller kubeadm commands: `token create|list|delete|generate`, `certs
//! check-expiration`, `config print init-defaults` and `reset`. Each returns what to print.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::api;
use crate::init;
use crate::kubeconfig::Kubeconfig;
use crate::pki;
use crate::token::{self, BootstrapToken};

/// A command failed; the message is what the user sees.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CmdError(pub String);

fn err(e: impl std::fmt::Display) -> CmdError {
    CmdError(e.to_string())
}

/// What `token create` was told.
#[derive(Debug, Clone)]
pub struct TokenCreate {
    pub token: Option<String>,
    pub ttl: String,
    pub usages: Vec<String>,
    pub groups: Vec<String>,
    pub description: String,
    pub print_join_command: bool,
}

/// `token create`: every flag is checked before the API is called.
pub async fn token_create(kubeconfig: &Path, args: &TokenCreate) -> Result<String, CmdError> {
    let ttl = token::parse_duration(&args.ttl).map_err(err)?;
    let value = match &args.token {
        Some(t) => t.clone(),
        None => token::generate_token().map_err(err)?,
    };
    let t = BootstrapToken::new(
        &value,
        ttl,
        &args.description,
        &args.usages,
        &args.groups,
        jiff::Timestamp::now(),
    )
    .map_err(err)?;
    let join = if args.print_join_command {
        let ctx = Kubeconfig::load_context(kubeconfig, None).map_err(err)?;
        let ca = ctx
            .ca_pem
            .as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .ok_or_else(|| CmdError(format!("{} has no CA data", kubeconfig.display())))?;
        let endpoint = ctx
            .server
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_string();
        Some(init::join_command(&endpoint, &t.token(), &ca).map_err(err)?)
    } else {
        None
    };
    let client = api::client_from_kubeconfig(kubeconfig).await.map_err(err)?;
    api::create_token(&client, &t, true).await.map_err(err)?;
    Ok(join.unwrap_or_else(|| t.token()))
}

/// `token list [-o text|json|yaml]`.
pub async fn token_list(kubeconfig: &Path, output: &str) -> Result<String, CmdError> {
    if !matches!(output, "text" | "json" | "yaml") {
        return Err(CmdError(format!(
            "unable to match a printer suitable for the output format {output:?}, allowed formats are: json,text,yaml"
        )));
    }
    let client = api::client_from_kubeconfig(kubeconfig).await.map_err(err)?;
    let (tokens, warnings) = api::list_tokens(&client).await.map_err(err)?;
    for w in warnings {
        eprintln!("[token] WARNING: {w}");
    }
    Ok(match output {
        "json" => tokens
            .iter()
            .map(|t| serde_json::to_string_pretty(&t.to_output_object()).unwrap_or_default() + "\n")
            .collect(),
        "yaml" => tokens
            .iter()
            .map(|t| init::to_yaml(&t.to_output_object()))
            .collect::<Vec<_>>()
            .join("---\n"),
        _ => token::list_table(&tokens, jiff::Timestamp::now()),
    })
}

/// `token delete ID|TOKEN...`: every argument is checked before any is deleted.
pub async fn token_delete(kubeconfig: &Path, tokens: &[String]) -> Result<String, CmdError> {
    if tokens.is_empty() {
        return Err(CmdError(
            "missing argument; 'token delete' is missing token of form \"[a-z0-9]{6}\" or \"[a-z0-9]{6}\\.[a-z0-9]{16}\"".into(),
        ));
    }
    let ids = tokens
        .iter()
        .map(|t| token::parse_token_id_or_token(t).map_err(err))
        .collect::<Result<Vec<_>, _>>()?;
    let client = api::client_from_kubeconfig(kubeconfig).await.map_err(err)?;
    let mut out = String::new();
    for id in ids {
        api::delete_token(&client, &id).await.map_err(err)?;
        out.push_str(&format!("bootstrap token {id:?} deleted\n"));
    }
    Ok(out)
}

/// kubeadm's `Jan 02, 2006 15:04 MST` in UTC.
fn expiry_text(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .map(|t| t.strftime("%b %d, %Y %H:%M UTC").to_string())
        .unwrap_or_else(|_| "<invalid>".into())
}

fn residual(unix: i64) -> String {
    token::short_human_duration(unix - jiff::Timestamp::now().as_second())
}

fn pad_table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count() + 3);
        }
    }
    let mut out = String::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i + 1 < r.len() {
                out.push_str(&format!("{c:<w$}", w = widths[i]));
            } else {
                out.push_str(c);
            }
        }
        out.push('\n');
    }
    out
}

/// `certs check-expiration`: kubeadm's two tables (leaf certificates and kubeconfig client
/// certificates, then the CAs).
pub fn check_expiration(data_dir: &Path, cert_dir: &Path) -> Result<String, CmdError> {
    let mut leaves = vec![vec![
        "CERTIFICATE".to_string(),
        "EXPIRES".into(),
        "RESIDUAL TIME".into(),
        "CERTIFICATE AUTHORITY".into(),
        "EXTERNALLY MANAGED".into(),
    ]];
    let mut found = 0;
    for (file, _, _) in init::kubeconfig_files("") {
        if file == "kubelet.conf" {
            continue;
        }
        let path = data_dir.join(file);
        if !path.exists() {
            continue;
        }
        let ctx = Kubeconfig::load_context(&path, None).map_err(err)?;
        let cert = ctx
            .client_cert_pem
            .ok_or_else(|| CmdError(format!("{}: no client certificate", path.display())))?;
        let (_, exp) =
            pki::cert_expiry(&cert).map_err(|e| CmdError(format!("{}: {e}", path.display())))?;
        leaves.push(vec![
            file.into(),
            expiry_text(exp),
            residual(exp),
            "ca".into(),
            "no".into(),
        ]);
        found += 1;
    }
    for (name, ca) in [
        ("apiserver", "ca"),
        ("apiserver-kubelet-client", "ca"),
        ("front-proxy-client", "front-proxy-ca"),
    ] {
        let path = cert_dir.join(format!("{name}.crt"));
        let Ok(pem) = std::fs::read(&path) else {
            continue;
        };
        let (_, exp) =
            pki::cert_expiry(&pem).map_err(|e| CmdError(format!("{}: {e}", path.display())))?;
        leaves.push(vec![
            name.into(),
            expiry_text(exp),
            residual(exp),
            ca.into(),
            "no".into(),
        ]);
        found += 1;
    }
    let mut cas = vec![vec![
        "CERTIFICATE AUTHORITY".to_string(),
        "EXPIRES".into(),
        "RESIDUAL TIME".into(),
        "EXTERNALLY MANAGED".into(),
    ]];
    for name in ["ca", "front-proxy-ca"] {
        let path = cert_dir.join(format!("{name}.crt"));
        let Ok(pem) = std::fs::read(&path) else {
            continue;
        };
        let (_, exp) =
            pki::cert_expiry(&pem).map_err(|e| CmdError(format!("{}: {e}", path.display())))?;
        let managed = if cert_dir.join(format!("{name}.key")).exists() {
            "no"
        } else {
            "yes"
        };
        cas.push(vec![
            name.into(),
            expiry_text(exp),
            residual(exp),
            managed.into(),
        ]);
        found += 1;
    }
    if found == 0 {
        return Err(CmdError(format!(
            "no certificates found in {} or {}; was this machine initialized with 'k1s init'?",
            data_dir.display(),
            cert_dir.display()
        )));
    }
    Ok(format!("{}\n{}", pad_table(&leaves), pad_table(&cas)))
}

/// The certificates `certs renew` knows, kubeadm's names, with what kubeadm says of each:
/// certificate files under the cert dir, then client certificates in kubeconfig files.
pub const RENEWABLE: [(&str, &str); 7] = [
    (
        "admin.conf",
        "certificate embedded in the kubeconfig file for the admin to use and for kubeadm itself",
    ),
    ("apiserver", "certificate for serving the Kubernetes API"),
    (
        "apiserver-kubelet-client",
        "certificate for the API server to connect to kubelet",
    ),
    (
        "controller-manager.conf",
        "certificate embedded in the kubeconfig file for the controller manager to use",
    ),
    (
        "front-proxy-client",
        "certificate for the front proxy client",
    ),
    (
        "scheduler.conf",
        "certificate embedded in the kubeconfig file for the scheduler manager to use",
    ),
    (
        "super-admin.conf",
        "certificate embedded in the kubeconfig file for the super-admin",
    ),
];

/// Renews one certificate (a file pair or a kubeconfig's client certificate) from the cluster
/// CA, keeping its subject and SANs; returns its new expiry.
fn renew_one(data_dir: &Path, cert_dir: &Path, name: &str) -> Result<i64, CmdError> {
    if !name.ends_with(".conf") {
        return pki::renew(cert_dir, name).map_err(err);
    }
    let path = data_dir.join(name);
    let mut kc = Kubeconfig::load(&path).map_err(err)?;
    let ctx = Kubeconfig::load_context(&path, None).map_err(err)?;
    let cert = ctx.client_cert_pem.ok_or_else(|| {
        CmdError(format!(
            "{}: no client certificate to renew",
            path.display()
        ))
    })?;
    let der = pem_der(&cert).ok_or_else(|| {
        CmdError(format!(
            "{}: the client certificate is not PEM",
            path.display()
        ))
    })?;
    let (user, groups) = pki::client_identity(&der).map_err(err)?;
    let ca = pki::CaSigner::load(cert_dir, "ca").map_err(err)?;
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let (cert_pem, key_pem) = ca
        .issue_client(
            &user,
            &groups,
            std::time::Duration::from_secs(365 * 24 * 3600),
        )
        .map_err(err)?;
    let user_name = kc
        .contexts
        .iter()
        .find(|c| c.name == kc.current_context)
        .map(|c| c.context.user.clone())
        .unwrap_or_default();
    let entry = kc
        .users
        .iter_mut()
        .find(|u| u.name == user_name)
        .ok_or_else(|| {
            CmdError(format!(
                "{}: the current context has no user",
                path.display()
            ))
        })?;
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    entry.user.client_certificate_data = Some(b64.encode(cert_pem.as_bytes()));
    entry.user.client_key_data = Some(b64.encode(key_pem.as_bytes()));
    entry.user.client_certificate = None;
    entry.user.client_key = None;
    kc.save(&path).map_err(err)?;
    pki::cert_expiry(cert_pem.as_bytes())
        .map(|(_, e)| e)
        .map_err(CmdError)
}

fn pem_der(pem: &[u8]) -> Option<Vec<u8>> {
    use rustls_pki_types::pem::PemObject as _;
    rustls_pki_types::CertificateDer::from_pem_slice(pem)
        .ok()
        .map(|c| c.to_vec())
}

/// `certs renew NAME|all`: kubeadm's messages. A name that is not there is an error naming it;
/// `all` renews what exists.
pub fn renew(data_dir: &Path, cert_dir: &Path, name: &str) -> Result<String, CmdError> {
    let targets: Vec<(&str, &str)> = if name == "all" {
        RENEWABLE
            .iter()
            .copied()
            .filter(|(n, _)| renewable_path(data_dir, cert_dir, n).exists())
            .collect()
    } else {
        let found = RENEWABLE.iter().copied().find(|(n, _)| *n == name);
        match found {
            Some(t) => vec![t],
            None if pki::ETCD_CERTS.contains(&name) => {
                return Err(CmdError(format!(
                    "{name}: k1s runs no etcd of its own, so it has no etcd certificates"
                )));
            }
            None => {
                return Err(CmdError(format!(
                    "unknown certificate {name:?}; 'certs renew' takes all or one of: {}",
                    RENEWABLE.map(|(n, _)| n).join(", ")
                )));
            }
        }
    };
    if targets.is_empty() {
        return Err(CmdError(format!(
            "no certificates found in {} or {}; was this machine initialized with 'k1s init'?",
            data_dir.display(),
            cert_dir.display()
        )));
    }
    let mut out = String::new();
    for (n, what) in targets {
        let path = renewable_path(data_dir, cert_dir, n);
        if !path.exists() {
            return Err(CmdError(format!("{}: no such file", path.display())));
        }
        renew_one(data_dir, cert_dir, n)?;
        out.push_str(&format!("{what} renewed\n"));
    }
    out.push_str(
        "\nDone renewing certificates. The running k1s server serves a renewed apiserver certificate from its next TLS handshake (no restart); clients using a renewed kubeconfig pick it up when they next read it.\n",
    );
    Ok(out)
}

fn renewable_path(data_dir: &Path, cert_dir: &Path, name: &str) -> PathBuf {
    if name.ends_with(".conf") {
        data_dir.join(name)
    } else {
        cert_dir.join(format!("{name}.crt"))
    }
}

/// What expires within this long is renewed at start (as k3s does).
pub const RENEW_WITHIN: i64 = 30 * 24 * 3600;

/// Renews every certificate that expires within `RENEW_WITHIN`; returns a line per renewal for
/// the log. Missing files are skipped (a `k1s server` data dir has fewer than `k1s init`'s).
pub fn renew_due(data_dir: &Path, cert_dir: &Path) -> Result<Vec<String>, CmdError> {
    let mut lines = Vec::new();
    for (name, _) in RENEWABLE {
        let path = renewable_path(data_dir, cert_dir, name);
        let left = if name.ends_with(".conf") {
            if !path.exists() {
                continue;
            }
            let ctx = Kubeconfig::load_context(&path, None).map_err(err)?;
            match ctx.client_cert_pem {
                Some(pem) => {
                    pki::cert_expiry(&pem)
                        .map_err(|e| CmdError(format!("{}: {e}", path.display())))?
                        .1
                        - jiff::Timestamp::now().as_second()
                }
                None => continue,
            }
        } else {
            match pki::seconds_left(&path).map_err(err)? {
                Some(left) => left,
                None => continue,
            }
        };
        if left < RENEW_WITHIN {
            let exp = renew_one(data_dir, cert_dir, name)?;
            lines.push(format!(
                "[certs] Renewed {name} (it had {} left); it now expires {}",
                token::short_human_duration(left.max(0)),
                expiry_text(exp)
            ));
        }
    }
    Ok(lines)
}

/// `certs certificate-key`: a new AES-256 key, 64 hex characters, as kubeadm prints it.
pub fn certificate_key() -> Result<String, CmdError> {
    use ring::rand::SecureRandom as _;
    let mut key = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| CmdError("reading random bytes failed".into()))?;
    Ok(key.iter().map(|b| format!("{b:02x}")).collect())
}

/// `certs generate-csr`: keys and CSRs for kubeadm's leaf certificates (`<name>.key`,
/// `<name>.csr` in the cert dir) and kubeconfig client certificates (`<file>.key`,
/// `<file>.csr` in the kubeconfig dir), for signing by an external CA. Refuses (and writes
/// nothing) when any of them exists.
pub fn generate_csr(
    kubeconfig_dir: &Path,
    cert_dir: &Path,
    opts: &pki::PkiOptions,
) -> Result<String, CmdError> {
    let mut planned: Vec<(PathBuf, String, String)> = Vec::new();
    for name in [
        "apiserver",
        "apiserver-kubelet-client",
        "front-proxy-client",
    ] {
        let (csr, key) = pki::leaf_csr(name, opts).map_err(err)?;
        planned.push((cert_dir.join(name), csr, key));
    }
    for (file, user, groups) in init::kubeconfig_files("") {
        if file == "kubelet.conf" {
            continue;
        }
        let (csr, key) = pki::new_csr(&user, &groups, Vec::new()).map_err(err)?;
        planned.push((kubeconfig_dir.join(file), csr, key));
    }
    let with_ext = |p: &Path, ext: &str| {
        let mut s = p.as_os_str().to_owned();
        s.push(ext);
        PathBuf::from(s)
    };
    for (base, _, _) in &planned {
        for ext in [".csr", ".key"] {
            let p = with_ext(base, ext);
            if p.exists() {
                return Err(CmdError(format!(
                    "{} already exists; move it away first (nothing was written)",
                    p.display()
                )));
            }
        }
    }
    let mut out = String::new();
    for (base, csr, key) in planned {
        for (ext, body, mode) in [(".key", key, 0o600), (".csr", csr, 0o644)] {
            let p = with_ext(&base, ext);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| CmdError(format!("creating {}: {e}", parent.display())))?;
            }
            crate::fsutil::write_atomic(&p, body.as_bytes(), mode)
                .map_err(|e| CmdError(format!("writing {}: {e}", p.display())))?;
        }
        out.push_str(&format!(
            "[certs] Generated a key and a certificate signing request: {}.csr\n",
            base.display()
        ));
    }
    Ok(out)
}

/// `kubeconfig user --client-name NAME [--org O]... [--validity-period D]`: a kubeconfig with a
/// client certificate from the cluster CA, for the server admin.conf points at.
pub fn kubeconfig_user(
    data_dir: &Path,
    cert_dir: &Path,
    client_name: &str,
    orgs: &[String],
    validity: &str,
) -> Result<String, CmdError> {
    if client_name.is_empty() {
        return Err(CmdError("missing required flag: --client-name".into()));
    }
    let validity = token::parse_duration(validity).map_err(err)?;
    if validity.is_zero() {
        return Err(CmdError("--validity-period must be more than 0".into()));
    }
    let admin = data_dir.join("admin.conf");
    let kc = Kubeconfig::load(&admin).map_err(|e| {
        CmdError(format!(
            "{e}; 'kubeconfig user' takes the server and cluster name from it"
        ))
    })?;
    let cluster = kc
        .clusters
        .first()
        .ok_or_else(|| CmdError(format!("{}: no cluster", admin.display())))?;
    let ca = pki::CaSigner::load(cert_dir, "ca").map_err(err)?;
    let orgs: Vec<&str> = orgs.iter().map(String::as_str).collect();
    let (cert, key) = ca.issue_client(client_name, &orgs, validity).map_err(err)?;
    Kubeconfig::for_client_cert(
        &cluster.cluster.server,
        &cluster.name,
        client_name,
        ca.cert_pem(),
        &cert,
        &key,
    )
    .to_yaml()
    .map_err(err)
}

/// `config print init-defaults`: InitConfiguration and ClusterConfiguration as kubeadm prints
/// them, with k1s's defaults.
pub fn init_defaults(opts: &init::InitOptions) -> String {
    let init_cfg = json!({
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "bootstrapTokens": [{
            "groups": [token::DEFAULT_GROUP],
            "token": opts.tokens.first().map(|t| t.token.as_str()).unwrap_or("abcdef.0123456789abcdef"),
            "ttl": "24h0m0s",
            "usages": token::DEFAULT_USAGES,
        }],
        "kind": "InitConfiguration",
        "localAPIEndpoint": {
            "advertiseAddress": opts.advertise_address.to_string(),
            "bindPort": opts.bind_port,
        },
        "nodeRegistration": {
            "name": opts.node_name,
            "taints": [{ "effect": "NoSchedule", "key": init::CONTROL_PLANE_LABEL }],
        },
    });
    format!(
        "{}---\n{}",
        init::to_yaml(&init_cfg),
        init::to_yaml(&init::cluster_configuration(opts))
    )
}

/// `config print join-defaults`.
pub fn join_defaults(node_name: &str) -> String {
    crate::config::join_defaults(node_name)
}

/// Files and directories `k1s init` / `k1s join` write under the data and cert dirs.
pub fn reset_targets(data_dir: &Path, cert_dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "store",
        "admin.conf",
        "super-admin.conf",
        "controller-manager.conf",
        "scheduler.conf",
        "kubelet.conf",
    ]
    .iter()
    .map(|f| data_dir.join(f))
    .collect();
    for f in [
        "ca.crt",
        "ca.key",
        "apiserver.crt",
        "apiserver.key",
        "apiserver-kubelet-client.crt",
        "apiserver-kubelet-client.key",
        "front-proxy-ca.crt",
        "front-proxy-ca.key",
        "front-proxy-client.crt",
        "front-proxy-client.key",
        "sa.key",
        "sa.pub",
    ] {
        out.push(cert_dir.join(f));
    }
    out.into_iter().filter(|p| p.exists()).collect()
}

/// `reset`: removes what init/join wrote (and only that); returns what was removed.
pub fn reset(data_dir: &Path, cert_dir: &Path) -> Result<Vec<PathBuf>, CmdError> {
    let mut removed = Vec::new();
    for p in reset_targets(data_dir, cert_dir) {
        let r = if p.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        r.map_err(|e| CmdError(format!("removing {}: {e}", p.display())))?;
        removed.push(p);
    }
    // The cert dir itself goes when nothing else is in it.
    if std::fs::read_dir(cert_dir).is_ok_and(|mut d| d.next().is_none())
        && std::fs::remove_dir(cert_dir).is_ok()
    {
        removed.push(cert_dir.to_path_buf());
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_due_soon_are_renewed_and_others_kept() {
        let dir = tempfile::tempdir().expect("tmp");
        let data = dir.path();
        let certs = data.join("pki");
        pki::ensure_one(&certs, "ca", &pki::PkiOptions::default()).expect("ca");
        let ca = pki::CaSigner::load(&certs, "ca").expect("load");
        // admin.conf expires in a day; scheduler.conf in a year.
        for (file, days) in [("admin.conf", 1), ("scheduler.conf", 365)] {
            let (cert, key) = ca
                .issue_client(
                    "u",
                    &["g"],
                    std::time::Duration::from_secs(days * 24 * 3600),
                )
                .expect("issue");
            Kubeconfig::for_client_cert(
                "https://127.0.0.1:1",
                "k",
                "u",
                ca.cert_pem(),
                &cert,
                &key,
            )
            .save(&data.join(file))
            .expect("save");
        }
        let before = std::fs::read(data.join("scheduler.conf")).expect("read");
        let lines = renew_due(data, &certs).expect("renew");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("Renewed admin.conf"), "{lines:?}");
        assert_eq!(
            std::fs::read(data.join("scheduler.conf")).expect("read"),
            before
        );
        // The renewed one has the same identity and a year to go; nothing is due any more.
        let ctx = Kubeconfig::load_context(&data.join("admin.conf"), None).expect("ctx");
        let pem = ctx.client_cert_pem.expect("cert");
        let (cn, exp) = pki::cert_expiry(&pem).expect("expiry");
        assert_eq!(cn, "u");
        assert!(exp - jiff::Timestamp::now().as_second() > 300 * 24 * 3600);
        assert!(renew_due(data, &certs).expect("again").is_empty());
    }

    #[test]
    fn certificate_key_is_64_hex_characters() {
        let k = certificate_key().expect("key");
        assert_eq!(k.len(), 64);
        assert!(k.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(k, certificate_key().expect("another"));
    }

    #[test]
    fn reset_removes_only_what_init_wrote() {
        let dir = tempfile::tempdir().expect("tmp");
        let data = dir.path();
        let certs = data.join("pki");
        std::fs::create_dir_all(data.join("store")).expect("store");
        std::fs::create_dir_all(&certs).expect("pki");
        std::fs::write(data.join("admin.conf"), "x").expect("w");
        std::fs::write(certs.join("ca.crt"), "x").expect("w");
        std::fs::write(data.join("mine.txt"), "keep").expect("w");
        let removed = reset(data, &certs).expect("reset");
        assert_eq!(removed.len(), 4, "{removed:?}");
        assert!(data.join("mine.txt").exists());
        assert!(!certs.exists());
    }
}
