//! `k1s init`'s phases, in kubeadm's order: preflight, certs, kubeconfig (files, before the
//! server starts), then upload-config, mark-control-plane and bootstrap-token through the API,
//! and kubeadm's closing text with the join command.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::discovery;
use crate::kubeconfig::Kubeconfig;
use crate::pki::{self, Pki, PkiOptions};
use crate::token::{self, BootstrapToken};

/// k1s's init phases, in order (kubeadm's names; etcd, control-plane, kubelet-start,
/// wait-control-plane, kubelet-finalize and addon have no k1s counterpart: the store, the
/// control plane and the node agent are this process).
pub const PHASES: [&str; 8] = [
    "preflight",
    "certs",
    "kubeconfig",
    "upload-config",
    "upload-certs",
    "mark-control-plane",
    "bootstrap-token",
    "show-join-command",
];
/// kubeadm phases k1s has nothing to do for; accepted by `--skip-phases`.
pub const KUBEADM_ONLY_PHASES: [&str; 6] = [
    "etcd",
    "control-plane",
    "kubelet-start",
    "wait-control-plane",
    "kubelet-finalize",
    "addon",
];
/// The cluster name kubeadm uses in kubeconfigs and ClusterConfiguration.
pub const CLUSTER_NAME: &str = "kubernetes";
/// The Kubernetes version k1s serves.
pub const KUBERNETES_VERSION: &str = "v1.33.0";
pub const CONTROL_PLANE_LABEL: &str = "node-role.kubernetes.io/control-plane";
pub const EXCLUDE_LB_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{0}")]
    Preflight(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    #[error(transparent)]
    Kubeconfig(#[from] crate::KubeconfigError),
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// What init was told (flags or an InitConfiguration).
#[derive(Debug, Clone)]
pub struct InitOptions {
    pub data_dir: PathBuf,
    pub cert_dir: PathBuf,
    pub advertise_address: IpAddr,
    pub bind_port: u16,
    pub cert_extra_sans: Vec<String>,
    pub node_name: String,
    /// The tokens init creates (`--token`, else generated; or a config's bootstrapTokens). The
    /// first is the one in the join command.
    pub tokens: Vec<TokenSpec>,
    pub service_subnet: String,
    pub pod_subnet: String,
    pub dns_domain: String,
    pub skip_phases: Vec<String>,
    /// ClusterConfiguration's clusterName (kubeconfig cluster names).
    pub cluster_name: String,
    /// ClusterConfiguration's controlPlaneEndpoint: `host[:port]` that kubeconfigs and the join
    /// command use instead of the advertise address.
    pub control_plane_endpoint: Option<String>,
    /// The control-plane node's taints; `None` is kubeadm's default (control-plane:NoSchedule).
    pub taints: Option<Vec<Value>>,
    pub dry_run: bool,
    pub certificate_key: Option<String>,
    /// A shared etcd (ClusterConfiguration's etcd.external), else the local store.
    pub etcd_external: Option<EtcdExternal>,
}

/// The phases a restart of an initialized control plane skips: everything that writes, so it
/// only loads the PKI and serves the same data.
pub const RESTART_SKIPPED_PHASES: &str = "preflight,kubeconfig,upload-config,upload-certs,mark-control-plane,bootstrap-token,show-join-command";

/// The `k1s init` arguments that bring this control plane back on the same data dir, PKI,
/// addresses, node and datastore, without writing anything anew (what a systemd unit runs).
pub fn restart_args(opts: &InitOptions) -> Vec<String> {
    let absolute = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    let mut args = vec![
        "init".to_string(),
        format!("--data-dir={}", absolute(&opts.data_dir)),
        format!("--cert-dir={}", absolute(&opts.cert_dir)),
        format!("--apiserver-advertise-address={}", opts.advertise_address),
        format!("--apiserver-bind-port={}", opts.bind_port),
        format!("--node-name={}", opts.node_name),
        format!("--service-cidr={}", opts.service_subnet),
        format!("--service-dns-domain={}", opts.dns_domain),
    ];
    if !opts.pod_subnet.is_empty() {
        args.push(format!("--pod-network-cidr={}", opts.pod_subnet));
    }
    if let Some(e) = &opts.etcd_external {
        args.push(format!("--etcd-servers={}", e.endpoints.join(",")));
        for (flag, file) in [
            ("--etcd-cafile", &e.ca_file),
            ("--etcd-certfile", &e.cert_file),
            ("--etcd-keyfile", &e.key_file),
        ] {
            if !file.is_empty() {
                args.push(format!("{flag}={}", absolute(Path::new(file))));
            }
        }
    }
    args.push(format!("--skip-phases={RESTART_SKIPPED_PHASES}"));
    args
}

/// A systemd service unit that runs `exe args` (restarted when it stops).
pub fn systemd_unit(exe: &Path, args: &[String]) -> String {
    // systemd splits ExecStart on spaces; quote what has any.
    let quote = |a: &str| {
        if a.contains(char::is_whitespace) || a.contains('"') {
            format!("\"{}\"", a.replace('\\', "\\\\").replace('"', "\\\""))
        } else {
            a.to_string()
        }
    };
    let command: Vec<String> = std::iter::once(exe.display().to_string())
        .chain(args.iter().cloned())
        .map(|a| quote(&a))
        .collect();
    format!(
        "[Unit]\n\
         Description=k1s Kubernetes control plane (set up by k1s init)\n\
         Wants=network-online.target\n\
         After=network-online.target\n\
         \n\
         [Service]\n\
         ExecStart={}\n\
         Restart=always\n\
         RestartSec=5\n\
         KillSignal=SIGTERM\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        command.join(" ")
    )
}

/// ClusterConfiguration's etcd.external.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EtcdExternal {
    pub endpoints: Vec<String>,
    pub ca_file: String,
    pub cert_file: String,
    pub key_file: String,
}

/// A bootstrap token to create, as InitConfiguration's bootstrapTokens describe it.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    pub token: String,
    pub ttl: Duration,
    pub description: String,
    pub usages: Vec<String>,
    pub groups: Vec<String>,
}

impl TokenSpec {
    /// What `--token` / `--token-ttl` make: kubeadm's default description, usages and groups.
    pub fn from_flags(token: &str, ttl: Duration) -> Self {
        TokenSpec {
            token: token.to_string(),
            ttl,
            description: token::INIT_DESCRIPTION.to_string(),
            usages: token::DEFAULT_USAGES.map(String::from).to_vec(),
            groups: vec![token::DEFAULT_GROUP.to_string()],
        }
    }

    pub fn to_token(&self) -> Result<BootstrapToken, InitError> {
        BootstrapToken::new(
            &self.token,
            self.ttl,
            &self.description,
            &self.usages,
            &self.groups,
            jiff::Timestamp::now(),
        )
        .map_err(|e| InitError::Invalid(e.to_string()))
    }
}

/// Checks what flags and files cannot: a token's form, the endpoint's port.
pub fn validate(opts: &InitOptions) -> Result<(), InitError> {
    if opts.tokens.is_empty() {
        return Err(InitError::Invalid("no bootstrap token to create".into()));
    }
    for t in &opts.tokens {
        t.to_token()?;
    }
    if let Some(ep) = &opts.control_plane_endpoint
        && ep.trim().is_empty()
    {
        return Err(InitError::Invalid(
            "controlPlaneEndpoint: Invalid value: \"\": must not be empty".into(),
        ));
    }
    if opts.cluster_name.is_empty() {
        return Err(InitError::Invalid("clusterName: Required value".into()));
    }
    Ok(())
}

impl InitOptions {
    pub fn skips(&self, phase: &str) -> bool {
        self.skip_phases.iter().any(|p| p == phase || p == "all")
    }

    /// `https://<endpoint>`.
    pub fn server_url(&self) -> String {
        format!("https://{}", self.endpoint())
    }

    /// The join command's and kubeconfigs' `host:port`: controlPlaneEndpoint (its port, else
    /// the bind port, as kubeadm), else `<advertise>:<port>`.
    pub fn endpoint(&self) -> String {
        match &self.control_plane_endpoint {
            Some(ep) => match ep.rsplit_once(':') {
                Some((_, port)) if port.parse::<u16>().is_ok() && !ep.ends_with(']') => ep.clone(),
                _ => format!("{ep}:{}", self.bind_port),
            },
            None => SocketAddr::new(self.advertise_address, self.bind_port).to_string(),
        }
    }

    /// The controlPlaneEndpoint's host, a SAN of the serving certificate.
    fn endpoint_host(&self) -> Option<String> {
        let ep = self.control_plane_endpoint.as_ref()?;
        let host = match ep.rsplit_once(':') {
            Some((h, port)) if port.parse::<u16>().is_ok() && !ep.ends_with(']') => h,
            _ => ep.as_str(),
        };
        Some(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
        )
    }

    /// The serving certificate's names: what `k1s server` asks for with the same flags, so the
    /// server reuses the certificate the certs phase made.
    pub fn pki_options(&self) -> PkiOptions {
        let mut sans = self.cert_extra_sans.clone();
        sans.extend(self.endpoint_host());
        PkiOptions::for_server(&sans, Some(self.advertise_address))
    }

    /// The SANs to give the server (`tls_sans`): the extra ones and the endpoint's host.
    pub fn server_sans(&self) -> Vec<String> {
        let mut sans = self.cert_extra_sans.clone();
        sans.extend(self.endpoint_host());
        sans
    }

    pub fn admin_conf(&self) -> PathBuf {
        self.data_dir.join("admin.conf")
    }

    pub fn super_admin_conf(&self) -> PathBuf {
        self.data_dir.join("super-admin.conf")
    }
}

/// Checks the phase names given to `--skip-phases`.
pub fn check_phase_names(names: &[String]) -> Result<(), InitError> {
    for n in names {
        if n != "all" && !PHASES.contains(&n.as_str()) && !KUBEADM_ONLY_PHASES.contains(&n.as_str())
        {
            return Err(InitError::Invalid(format!(
                "phase {n:?} does not exist; valid phases: {}",
                PHASES.join(", ")
            )));
        }
    }
    Ok(())
}

/// Preflight: the port is free (0 picks one, returned), the data dir is usable and holds no
/// cluster yet.
pub fn preflight(opts: &InitOptions) -> Result<u16, InitError> {
    println!("[preflight] Running pre-flight checks");
    let mut errors = Vec::new();
    let mut port = opts.bind_port;
    match TcpListener::bind(SocketAddr::new(IpAddr::from([0, 0, 0, 0]), opts.bind_port)) {
        Ok(l) => {
            if let Ok(a) = l.local_addr() {
                port = a.port();
            }
        }
        Err(e) => errors.push(format!(
            "[ERROR Port-{}]: Port {} is in use ({e})",
            opts.bind_port, opts.bind_port
        )),
    }
    for existing in [opts.data_dir.join("store"), opts.admin_conf()] {
        if existing.exists() {
            errors.push(format!(
                "[ERROR FileAvailable--{}]: {} already exists (a cluster was initialized here; run 'k1s reset' or use another --data-dir)",
                existing.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                existing.display()
            ));
        }
    }
    if let Err(e) = std::fs::create_dir_all(&opts.data_dir) {
        errors.push(format!(
            "[ERROR DirAvailable--data-dir]: cannot create {}: {e}",
            opts.data_dir.display()
        ));
    } else {
        let probe = opts.data_dir.join(".k1s-preflight");
        match std::fs::write(&probe, b"") {
            Ok(()) => {
                let _ = std::fs::remove_file(&probe);
            }
            Err(e) => errors.push(format!(
                "[ERROR DirAvailable--data-dir]: {} is not writable: {e}",
                opts.data_dir.display()
            )),
        }
    }
    if errors.is_empty() {
        Ok(port)
    } else {
        Err(InitError::Preflight(format!(
            "[preflight] Some fatal errors occurred:\n\t{}\n[preflight] If you know what you are doing, you can make a check non-fatal with `--skip-phases preflight`",
            errors.join("\n\t")
        )))
    }
}

/// The certs phase: kubeadm's PKI under the cert dir (an existing CA is reused).
pub fn certs(opts: &InitOptions) -> Result<Pki, InitError> {
    println!(
        "[certs] Using certificateDir folder {:?}",
        opts.cert_dir.display().to_string()
    );
    let pki = pki::ensure_pki(&opts.cert_dir, &opts.pki_options())?;
    let mut written: Vec<PathBuf> = pki.written_files().to_vec();
    written.extend(pki.ensure_kubeadm_leaves()?);
    for (file, what) in [
        ("ca", "\"ca\" certificate and key"),
        ("apiserver", "\"apiserver\" certificate and key"),
        (
            "apiserver-kubelet-client",
            "\"apiserver-kubelet-client\" certificate and key",
        ),
        ("front-proxy-ca", "\"front-proxy-ca\" certificate and key"),
        (
            "front-proxy-client",
            "\"front-proxy-client\" certificate and key",
        ),
    ] {
        let crt = opts.cert_dir.join(format!("{file}.crt"));
        if written.contains(&crt) {
            println!("[certs] Generating {what}");
        } else {
            println!("[certs] Using existing {file} certificate and key");
        }
    }
    if written.contains(&opts.cert_dir.join("sa.key")) {
        println!("[certs] Generating \"sa\" key and public key");
    } else {
        println!("[certs] Using the existing \"sa\" key");
    }
    println!("[certs] etcd certificates: not needed (k1s keeps its store in process)");
    Ok(pki)
}

/// The kubeconfig files kubeadm writes: (file, user CN, groups).
pub fn kubeconfig_files(node_name: &str) -> Vec<(&'static str, String, Vec<&'static str>)> {
    vec![
        (
            "admin.conf",
            "kubernetes-admin".into(),
            vec!["kubeadm:cluster-admins"],
        ),
        (
            "super-admin.conf",
            "kubernetes-super-admin".into(),
            vec!["system:masters"],
        ),
        (
            "kubelet.conf",
            format!("system:node:{node_name}"),
            vec!["system:nodes"],
        ),
        (
            "controller-manager.conf",
            "system:kube-controller-manager".into(),
            vec![],
        ),
        ("scheduler.conf", "system:kube-scheduler".into(), vec![]),
    ]
}

/// The kubeconfig phase. An existing file is kept when it trusts this CA and points at this
/// server, and is an error otherwise (as kubeadm).
pub fn kubeconfigs(opts: &InitOptions, pki: &Pki) -> Result<(), InitError> {
    let ca = pki::CaSigner::load(&opts.cert_dir, "ca")?;
    debug_assert_eq!(ca.cert_pem(), pki.ca_cert_pem());
    kubeconfig_files_for(opts, &ca, None)
}

/// The kubeconfig phase for every file, or only `only` (`admin.conf`, ...).
pub fn kubeconfig_files_for(
    opts: &InitOptions,
    ca: &pki::CaSigner,
    only: Option<&str>,
) -> Result<(), InitError> {
    println!(
        "[kubeconfig] Using kubeconfig folder {:?}",
        opts.data_dir.display().to_string()
    );
    let server = opts.server_url();
    let ca_b64 = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(ca.cert_pem())
    };
    let files = kubeconfig_files(&opts.node_name)
        .into_iter()
        .filter(|(f, _, _)| only.is_none_or(|o| o == *f));
    // Check every existing file before writing any.
    let mut to_write = Vec::new();
    for (file, user, groups) in files {
        let path = opts.data_dir.join(file);
        if path.exists() {
            let existing = Kubeconfig::load(&path)?;
            let cluster = existing.clusters.first().map(|c| &c.cluster);
            let same_ca = cluster.and_then(|c| c.certificate_authority_data.as_deref())
                == Some(ca_b64.as_str());
            let same_server = cluster.is_some_and(|c| c.server == server);
            if !same_ca {
                return Err(InitError::Invalid(format!(
                    "a kubeconfig file {:?} exists already but has got the wrong CA cert",
                    path.display().to_string()
                )));
            }
            if !same_server {
                return Err(InitError::Invalid(format!(
                    "a kubeconfig file {:?} exists already but has an unexpected API Server URL: expected: {server}, got: {}",
                    path.display().to_string(),
                    cluster.map(|c| c.server.as_str()).unwrap_or_default()
                )));
            }
            println!(
                "[kubeconfig] Using existing kubeconfig file: {:?}",
                path.display().to_string()
            );
            continue;
        }
        to_write.push((path, file, user, groups));
    }
    for (path, file, user, groups) in to_write {
        let (cert, key) = ca.issue_client(&user, &groups, Duration::from_secs(365 * 24 * 3600))?;
        Kubeconfig::for_client_cert(
            &server,
            &opts.cluster_name,
            &user,
            ca.cert_pem(),
            &cert,
            &key,
        )
        .save(&path)?;
        println!("[kubeconfig] Writing {file:?} kubeconfig file");
    }
    Ok(())
}

/// ClusterConfiguration (kubeadm.k8s.io/v1beta4) as YAML, for `kubeadm-config` and `config
/// print init-defaults`.
pub fn cluster_configuration(opts: &InitOptions) -> Value {
    let mut networking = json!({
        "dnsDomain": opts.dns_domain,
        "serviceSubnet": opts.service_subnet,
    });
    if !opts.pod_subnet.is_empty() {
        networking["podSubnet"] = json!(opts.pod_subnet);
    }
    let mut api_server = json!({});
    if !opts.cert_extra_sans.is_empty() {
        api_server["certSANs"] = json!(opts.cert_extra_sans);
    }
    let mut cfg = json!({
        "apiServer": api_server,
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "caCertificateValidityPeriod": "87600h0m0s",
        "certificateValidityPeriod": "8760h0m0s",
        "certificatesDir": opts.cert_dir.display().to_string(),
        "clusterName": opts.cluster_name,
        "controllerManager": {},
        "dns": { "disabled": true },
        "encryptionAlgorithm": "ECDSA-P256",
        "etcd": match &opts.etcd_external {
            Some(e) => {
                let mut ext = json!({ "endpoints": e.endpoints });
                for (k, v) in [("caFile", &e.ca_file), ("certFile", &e.cert_file), ("keyFile", &e.key_file)] {
                    if !v.is_empty() {
                        ext[k] = json!(v);
                    }
                }
                json!({ "external": ext })
            }
            None => json!({ "local": { "dataDir": opts.data_dir.join("store").display().to_string() } }),
        },
        "imageRepository": "registry.k8s.io",
        "kind": "ClusterConfiguration",
        "kubernetesVersion": KUBERNETES_VERSION,
        "networking": networking,
        "proxy": { "disabled": true },
        "scheduler": {},
    });
    if let Some(ep) = &opts.control_plane_endpoint {
        cfg["controlPlaneEndpoint"] = json!(ep);
    }
    cfg
}

/// YAML of a JSON value, keys as given.
pub fn to_yaml(v: &Value) -> String {
    serde_saphyr::to_string(v).unwrap_or_default()
}

/// upload-config: `kube-system/kubeadm-config` with the ClusterConfiguration.
pub async fn upload_config(client: &Client, opts: &InitOptions) -> Result<(), InitError> {
    println!(
        "[upload-config] Storing the configuration used in ConfigMap \"kubeadm-config\" in the \"kube-system\" Namespace"
    );
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": "kubeadm-config", "namespace": "kube-system" },
        "data": { "ClusterConfiguration": to_yaml(&cluster_configuration(opts)) },
    });
    api::create_or_update(client, &cm).await?;
    Ok(())
}

/// mark-control-plane: kubeadm's labels and NoSchedule taint on the control-plane node, once
/// its node agent has registered it.
pub async fn mark_control_plane(
    client: &Client,
    node_name: &str,
    wanted: Option<&[Value]>,
) -> Result<(), InitError> {
    let default_taint = [json!({ "key": CONTROL_PLANE_LABEL, "effect": "NoSchedule" })];
    let wanted = wanted.unwrap_or(&default_taint);
    println!(
        "[mark-control-plane] Marking the node {node_name} as control-plane by adding the labels: [{CONTROL_PLANE_LABEL} {EXCLUDE_LB_LABEL}]"
    );
    if !wanted.is_empty() {
        let list: Vec<String> = wanted
            .iter()
            .map(|t| {
                let key = t["key"].as_str().unwrap_or_default();
                let effect = t["effect"].as_str().unwrap_or_default();
                match t["value"].as_str() {
                    Some(v) => format!("{key}={v}:{effect}"),
                    None => format!("{key}:{effect}"),
                }
            })
            .collect();
        println!(
            "[mark-control-plane] Marking the node {node_name} as control-plane by adding the taints [{}]",
            list.join(" ")
        );
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    let node = loop {
        match nodes.get_opt(node_name).await {
            Ok(Some(n)) => break n,
            Ok(None) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(None) => {
                return Err(InitError::Invalid(format!(
                    "error marking the control-plane node: the Node {node_name:?} did not register within 30s"
                )));
            }
            Err(e) => {
                return Err(ApiError::Kube {
                    what: format!("reading the Node {node_name:?}"),
                    source: e,
                }
                .into());
            }
        }
    };
    let mut taints: Vec<Value> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|ts| {
            ts.iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect()
        })
        .unwrap_or_default();
    for want in wanted {
        if !taints
            .iter()
            .any(|t| t["key"] == want["key"] && t["effect"] == want["effect"])
        {
            taints.push(want.clone());
        }
    }
    let patch = json!({
        "metadata": { "labels": { CONTROL_PLANE_LABEL: "", EXCLUDE_LB_LABEL: "" } },
        "spec": { "taints": taints },
    });
    nodes
        .patch(node_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(ApiError::kube(format!("marking the Node {node_name:?}")))?;
    Ok(())
}

/// bootstrap-token: the token, kubeadm's RBAC objects (`policy`, given by the caller) and the
/// `cluster-info` ConfigMap in kube-public.
pub async fn bootstrap_token(
    client: &Client,
    opts: &InitOptions,
    ca_pem: &str,
    policy: &[Value],
) -> Result<BootstrapToken, InitError> {
    let mut first = None;
    for spec in &opts.tokens {
        println!("[bootstrap-token] Using token: {}", spec.token);
        let t = spec.to_token()?;
        api::create_token(client, &t, false).await?;
        first.get_or_insert(t);
    }
    println!("[bootstrap-token] Configuring bootstrap tokens, cluster-info ConfigMap, RBAC Roles");
    for obj in policy {
        api::create_or_update(client, obj).await?;
    }
    println!("[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to get nodes");
    println!(
        "[bootstrap-token] Configured RBAC rules to allow Node Bootstrap tokens to post CSRs in order for nodes to get long term certificate credentials"
    );
    println!(
        "[bootstrap-token] Configured RBAC rules to allow the csrapprover controller automatically approve CSRs from a Node Bootstrap Token"
    );
    println!(
        "[bootstrap-token] Configured RBAC rules to allow certificate rotation for all node client certificates in the cluster"
    );
    println!(
        "[bootstrap-token] Creating the \"cluster-info\" ConfigMap in the \"kube-public\" namespace"
    );
    let kubeconfig = discovery::cluster_info_kubeconfig(&opts.server_url(), ca_pem)
        .map_err(InitError::Invalid)?;
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": discovery::CLUSTER_INFO_NAME, "namespace": discovery::CLUSTER_INFO_NAMESPACE },
        "data": { "kubeconfig": kubeconfig },
    });
    api::create_or_update(client, &cm).await?;
    first.ok_or_else(|| InitError::Invalid("no bootstrap token to create".into()))
}

/// The join command, as kubeadm prints it (`kubeadm` → `k1s`).
pub fn join_command(endpoint: &str, token: &str, ca_pem: &str) -> Result<String, String> {
    let hash = discovery::ca_cert_hash_pem(ca_pem)?;
    Ok(format!(
        "k1s join {endpoint} --token {token} \\\n\t--discovery-token-ca-cert-hash {hash} "
    ))
}

/// kubeadm's paragraph on joining control planes, after `--upload-certs`.
pub fn control_plane_join_text(join: &str, certificate_key: &str) -> String {
    format!(
        "\nYou can now join any number of control-plane nodes running the following command on each as root:\n\n  \
{join}\\\n\t--control-plane --certificate-key {certificate_key}\n\n\
Please note that the certificate-key gives access to cluster sensitive data, keep it secret!\n\
As a safeguard, uploaded-certs will be deleted in two hours; If necessary, you can use\n\
\"k1s init phase upload-certs --upload-certs\" to reload certs afterward.\n"
    )
}

/// kubeadm's closing text, with k1s's paths.
pub fn closing_text(admin_conf: &Path, join: &str) -> String {
    let admin = admin_conf.display();
    format!(
        "\nYour Kubernetes control-plane has initialized successfully!\n\n\
To start using your cluster, you need to run the following as a regular user:\n\n  \
mkdir -p $HOME/.kube\n  \
sudo cp -i {admin} $HOME/.kube/config\n  \
sudo chown $(id -u):$(id -g) $HOME/.kube/config\n\n\
Alternatively, if you are the root user, you can run:\n\n  \
export KUBECONFIG={admin}\n\n\
k1s needs no pod network add-on: its simulated nodes give pods their addresses.\n\n\
Then you can join any number of worker nodes by running the following on each as root:\n\n\
{join}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(dir: &Path) -> InitOptions {
        InitOptions {
            data_dir: dir.to_path_buf(),
            cert_dir: dir.join("pki"),
            advertise_address: IpAddr::from([127, 0, 0, 1]),
            bind_port: 6443,
            cert_extra_sans: vec![],
            node_name: "cp".into(),
            tokens: vec![TokenSpec::from_flags(
                "abcdef.0123456789abcdef",
                token::DEFAULT_TTL,
            )],
            cluster_name: CLUSTER_NAME.into(),
            control_plane_endpoint: None,
            taints: None,
            dry_run: false,
            certificate_key: None,
            etcd_external: None,
            service_subnet: "10.96.0.0/12".into(),
            pod_subnet: String::new(),
            dns_domain: "cluster.local".into(),
            skip_phases: vec![],
        }
    }

    #[test]
    fn certs_and_kubeconfigs_follow_kubeadm_layout() {
        let dir = tempfile::tempdir().expect("tmp");
        let o = opts(dir.path());
        let pki = certs(&o).expect("certs");
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
            assert!(o.cert_dir.join(f).exists(), "{f}");
        }
        kubeconfigs(&o, &pki).expect("kubeconfigs");
        let admin = Kubeconfig::load(&o.admin_conf()).expect("admin");
        assert_eq!(admin.current_context, "kubernetes-admin@kubernetes");
        // Re-running reuses everything; a different server is refused.
        kubeconfigs(&o, &pki).expect("again");
        let mut other = o.clone();
        other.bind_port = 7443;
        let err = kubeconfigs(&other, &pki).expect_err("server moved");
        assert!(
            err.to_string().contains("unexpected API Server URL"),
            "{err}"
        );
    }

    #[test]
    fn phase_names_are_checked() {
        assert!(check_phase_names(&["certs".into(), "addon".into()]).is_ok());
        assert!(check_phase_names(&["bogus".into()]).is_err());
    }

    #[test]
    fn join_command_pins_the_ca() {
        let dir = tempfile::tempdir().expect("tmp");
        let pki = certs(&opts(dir.path())).expect("certs");
        let cmd = join_command(
            "127.0.0.1:6443",
            "abcdef.0123456789abcdef",
            pki.ca_cert_pem(),
        )
        .expect("cmd");
        assert!(cmd.starts_with("k1s join 127.0.0.1:6443 --token abcdef.0123456789abcdef \\\n\t--discovery-token-ca-cert-hash sha256:"), "{cmd}");
    }
}
