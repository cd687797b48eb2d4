//! `k1s init phase NAME [SUB]`: one of kubeadm's init phases on its own, by kubeadm's phase and
//! subphase names. The file phases (preflight, certs, kubeconfig) work on the data and cert
//! dirs; the API phases talk to a running server through a kubeconfig (admin.conf). Phases
//! whose work k1s does not have (etcd, static Pods, the kubelet, add-ons) say so and succeed.

use kube::Client;
use serde_json::Value;

use crate::init::{self, InitError, InitOptions};
use crate::pki;

/// kubeadm's init phases in order, with their subphases (`all` runs every one).
pub const PHASES: &[(&str, &[&str])] = &[
    ("preflight", &[]),
    (
        "certs",
        &[
            "all",
            "ca",
            "apiserver",
            "apiserver-kubelet-client",
            "front-proxy-ca",
            "front-proxy-client",
            "etcd-ca",
            "etcd-server",
            "etcd-peer",
            "etcd-healthcheck-client",
            "apiserver-etcd-client",
            "sa",
        ],
    ),
    (
        "kubeconfig",
        &[
            "all",
            "admin",
            "super-admin",
            "kubelet",
            "controller-manager",
            "scheduler",
        ],
    ),
    ("etcd", &["local"]),
    (
        "control-plane",
        &["all", "apiserver", "controller-manager", "scheduler"],
    ),
    ("kubelet-start", &[]),
    ("wait-control-plane", &[]),
    ("upload-config", &["all", "kubeadm", "kubelet"]),
    ("upload-certs", &[]),
    ("mark-control-plane", &[]),
    ("bootstrap-token", &[]),
    ("kubelet-finalize", &["all", "enable-client-cert-rotation"]),
    ("addon", &["all", "coredns", "kube-proxy"]),
    ("show-join-command", &[]),
];

/// Why a phase has no k1s counterpart.
fn nothing_to_do(phase: &str) -> Option<&'static str> {
    Some(match phase {
        "etcd" => "k1s keeps its store in process; there is no etcd static Pod",
        "control-plane" => {
            "the API server, controller-manager and scheduler run in the k1s process; no static Pod manifests are written"
        }
        "kubelet-start" | "kubelet-finalize" => {
            "k1s's nodes are simulated in process; there is no kubelet to configure"
        }
        "wait-control-plane" => "'k1s init' waits for its in-process API server itself",
        "addon" => "k1s needs no CoreDNS or kube-proxy add-on",
        _ => return None,
    })
}

/// Checks NAME and SUB; returns the subphase to run (None for a phase without subphases).
pub fn resolve<'a>(name: &str, sub: Option<&'a str>) -> Result<Option<&'a str>, InitError> {
    let Some((_, subs)) = PHASES.iter().find(|(n, _)| *n == name) else {
        return Err(InitError::Invalid(format!(
            "unknown phase {name:?}; kubeadm's init phases: {}",
            PHASES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    match sub {
        None if subs.is_empty() => Ok(None),
        None => Err(InitError::Invalid(format!(
            "This command is not meant to be run on its own. See list of available subcommands: {}",
            subs.join(", ")
        ))),
        Some(s) if subs.contains(&s) => Ok(Some(s)),
        Some(s) => Err(InitError::Invalid(format!(
            "unknown subphase {s:?} of {name:?}; available: {}",
            if subs.is_empty() {
                "none".to_string()
            } else {
                subs.join(", ")
            }
        ))),
    }
}

/// True for the phases that need a running API server.
pub fn needs_api(name: &str) -> bool {
    matches!(
        name,
        "upload-config" | "mark-control-plane" | "bootstrap-token" | "upload-certs"
    )
}

/// Runs a phase that needs no API server (or one that has nothing to do). Returns false when the
/// phase needs the API (the caller then calls `run_api`).
pub fn run_local(name: &str, sub: Option<&str>, opts: &InitOptions) -> Result<bool, InitError> {
    if let Some(why) = nothing_to_do(name) {
        println!("[{name}] Nothing to do in k1s: {why}");
        return Ok(true);
    }
    match name {
        "preflight" => {
            init::preflight(opts)?;
            println!("[preflight] All checks passed");
        }
        "certs" => certs(sub.unwrap_or("all"), opts)?,
        "kubeconfig" => {
            let only = match sub.unwrap_or("all") {
                "all" => None,
                s => Some(format!("{s}.conf")),
            };
            let ca = pki::CaSigner::load(&opts.cert_dir, "ca").map_err(|e| {
                InitError::Invalid(format!(
                    "couldn't create a kubeconfig; the CA files couldn't be loaded: {e}"
                ))
            })?;
            println!(
                "[kubeconfig] Using kubeconfig folder {:?}",
                opts.data_dir.display().to_string()
            );
            init::kubeconfig_files_for(opts, &ca, only.as_deref())?;
        }
        "show-join-command" => {
            let ca = std::fs::read_to_string(opts.cert_dir.join("ca.crt")).map_err(|e| {
                InitError::Invalid(format!(
                    "reading {}: {e}",
                    opts.cert_dir.join("ca.crt").display()
                ))
            })?;
            let token = opts
                .tokens
                .first()
                .map(|t| t.token.clone())
                .ok_or_else(|| InitError::Invalid("no bootstrap token given".into()))?;
            let join =
                init::join_command(&opts.endpoint(), &token, &ca).map_err(InitError::Invalid)?;
            print!("{}", init::closing_text(&opts.admin_conf(), &join));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn certs(sub: &str, opts: &InitOptions) -> Result<(), InitError> {
    if sub == "all" {
        init::certs(opts)?;
        return Ok(());
    }
    if pki::ETCD_CERTS.contains(&sub) {
        println!("[certs] Nothing to do for {sub:?}: k1s runs no etcd of its own");
        return Ok(());
    }
    println!(
        "[certs] Using certificateDir folder {:?}",
        opts.cert_dir.display().to_string()
    );
    let written = pki::ensure_one(&opts.cert_dir, sub, &opts.pki_options())?;
    match (sub, written.is_empty()) {
        ("sa", true) => println!("[certs] Using the existing \"sa\" key"),
        ("sa", false) => println!("[certs] Generating \"sa\" key and public key"),
        (_, true) => println!("[certs] Using existing {sub} certificate and key"),
        (_, false) => println!("[certs] Generating {sub:?} certificate and key"),
    }
    Ok(())
}

/// Runs a phase through the API (`policy`: kubeadm's RBAC objects for bootstrap-token).
pub async fn run_api(
    name: &str,
    sub: Option<&str>,
    opts: &InitOptions,
    client: &Client,
    policy: &[Value],
    upload_certs: bool,
) -> Result<(), InitError> {
    match name {
        "upload-config" => match sub.unwrap_or("all") {
            "kubelet" => println!(
                "[upload-config] Nothing to do for \"kubelet\": k1s's simulated nodes read no kubelet-config ConfigMap"
            ),
            _ => init::upload_config(client, opts).await?,
        },
        "upload-certs" if !upload_certs => {
            println!("[upload-certs] Skipping phase. Please see --upload-certs");
        }
        "upload-certs" => {
            // Whether the cluster shares a store is the cluster's own record, not this machine's
            // flags.
            let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
                kube::Api::namespaced(client.clone(), "kube-system");
            let text = cms
                .get("kubeadm-config")
                .await
                .map_err(|e| InitError::Invalid(format!("reading kubeadm-config: {e}")))?
                .data
                .unwrap_or_default()
                .remove("ClusterConfiguration")
                .unwrap_or_default();
            let cfg: Value = serde_saphyr::from_str(&text).unwrap_or(Value::Null);
            if cfg.pointer("/etcd/external/endpoints").is_none() {
                return Err(InitError::Invalid(
                    "upload-certs: joining further control planes needs a shared datastore; this cluster's store is local to its first control plane (kubeadm-config has no etcd.external)".into(),
                ));
            }
            let key = match &opts.certificate_key {
                Some(k) => k.clone(),
                None => crate::cmd::certificate_key().map_err(|e| InitError::Invalid(e.0))?,
            };
            crate::copycerts::upload(client, &opts.cert_dir, opts.etcd_external.as_ref(), &key)
                .await
                .map_err(|e| InitError::Invalid(e.to_string()))?;
        }
        "mark-control-plane" => {
            init::mark_control_plane(client, &opts.node_name, opts.taints.as_deref()).await?;
        }
        "bootstrap-token" => {
            let ca = std::fs::read_to_string(opts.cert_dir.join("ca.crt")).map_err(|e| {
                InitError::Invalid(format!(
                    "reading {}: {e}",
                    opts.cert_dir.join("ca.crt").display()
                ))
            })?;
            init::bootstrap_token(client, opts, &ca, policy).await?;
        }
        other => {
            return Err(InitError::Invalid(format!(
                "phase {other:?} does not use the API"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_names_follow_kubeadm() {
        assert_eq!(resolve("preflight", None).expect("ok"), None);
        assert_eq!(
            resolve("certs", Some("apiserver")).expect("ok"),
            Some("apiserver")
        );
        let e = resolve("certs", None).expect_err("group");
        assert!(
            e.to_string().contains("not meant to be run on its own"),
            "{e}"
        );
        let e = resolve("certs", Some("bogus")).expect_err("sub");
        assert!(e.to_string().contains("unknown subphase \"bogus\""), "{e}");
        let e = resolve("bogus", None).expect_err("phase");
        assert!(e.to_string().contains("unknown phase \"bogus\""), "{e}");
        // Every phase k1s runs during init is a kubeadm phase name.
        for p in init::PHASES {
            assert!(PHASES.iter().any(|(n, _)| *n == p), "{p}");
        }
    }
}
