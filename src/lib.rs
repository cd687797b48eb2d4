//! The whole control plane in one process: the API server with the controller-manager, the
//! scheduler and simulated nodes wired to it through in-process clients. `k1s server` and the
//! `k1s-testing` crate's `TestCluster` both start it here, so there is one wiring.

use std::sync::Arc;

use k1s_apiserver::auth::UserInfo;
use k1s_apiserver::server::{RunningServer, ServerConfig, ServerError};

/// What to run beside the API server; `None` leaves a part out.
#[derive(Clone, Debug)]
pub struct ControlPlaneOptions {
    pub server: ServerConfig,
    /// The controller-manager; its `root_ca_pem` and cluster-signing files, when unset, are
    /// the server's CA.
    /// Options that select no controller (`--controllers=-*`) run none.
    pub controller_manager: Option<k1s_controller_manager::Options>,
    pub scheduler: Option<k1s_scheduler::Options>,
    /// Simulated nodes; an empty `names` runs none.
    pub nodes: Option<k1s_simnode::Options>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("starting the API server: {0}")]
    Server(#[from] ServerError),
    #[error("--controllers: {0}")]
    Controllers(String),
}

/// A running control plane. Dropping it cancels the in-process components and stops the
/// server (port closed); `shutdown` does the same gracefully.
pub struct ControlPlane {
    server: RunningServer,
    stop_components: tokio::sync::watch::Sender<bool>,
    components: Vec<tokio::task::JoinHandle<Result<(), String>>>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("url", &self.server.server_url)
            .field("components", &self.components.len())
            .finish()
    }
}

impl ControlPlane {
    /// Starts the API server, then the selected components on in-process clients: each enters
    /// the server's filter chain after TLS with its own identity (controllers as their service
    /// accounts, the scheduler as `system:kube-scheduler`, nodes as `system:node:<name>`).
    pub async fn start(options: ControlPlaneOptions) -> Result<ControlPlane, StartError> {
        let cm_options = match options.controller_manager {
            Some(o) => {
                let selected = k1s_controller_manager::selected(&o.controllers)
                    .map_err(StartError::Controllers)?;
                (!selected.is_empty()).then_some(o)
            }
            None => None,
        };
        let server = k1s_apiserver::server::start(options.server).await?;
        let (stop_components, stopped) = tokio::sync::watch::channel(false);
        let mut components = Vec::new();
        if let Some(mut cm_options) = cm_options {
            let entry = server
                .in_process_service(UserInfo::new(
                    "system:kube-controller-manager",
                    vec!["system:authenticated".into()],
                ))
                .with_user_agent(&component_user_agent("kube-controller-manager"));
            let clients: k1s_controller_manager::ClientSource =
                Arc::new(move |sa: Option<&str>| {
                    let service = match sa {
                        Some(sa) => entry.as_user(UserInfo::service_account("kube-system", sa)),
                        None => entry.clone(),
                    };
                    kube::Client::new(service, "default")
                });
            let metrics = Arc::new(k1s_controller_manager::metrics::Metrics::default());
            {
                let m = metrics.clone();
                server.add_metrics(Box::new(move || m.render()));
            }
            cm_options
                .root_ca_pem
                .get_or_insert_with(|| server.ca_pem.clone());
            // csrsigning issues with the cluster CA, as kubeadm points
            // --cluster-signing-{cert,key}-file at it.
            if cm_options.cluster_signing_cert_file.is_none() {
                cm_options.cluster_signing_cert_file = Some(server.pki_dir.join("ca.crt"));
                cm_options.cluster_signing_key_file = Some(server.pki_dir.join("ca.key"));
            }
            if cm_options.legacy_token_signer.is_none() {
                let sign = server.legacy_token_signer();
                cm_options.legacy_token_signer = Some(k1s_controller_manager::LegacyTokenSigner(
                    Arc::new(move |c: &k1s_controller_manager::LegacyTokenClaims<'_>| {
                        sign(
                            c.namespace,
                            c.service_account_name,
                            c.service_account_uid,
                            c.secret_name,
                        )
                    }),
                ));
            }
            components.push(tokio::spawn(k1s_controller_manager::run(
                clients,
                cm_options,
                metrics,
                stopped.clone(),
            )));
        }
        if let Some(options) = options.scheduler {
            let client = kube::Client::new(
                server
                    .in_process_service(UserInfo::new(
                        "system:kube-scheduler",
                        vec!["system:authenticated".into()],
                    ))
                    .with_user_agent(&component_user_agent("kube-scheduler")),
                "default",
            );
            components.push(tokio::spawn(k1s_scheduler::run(
                client,
                options,
                stopped.clone(),
            )));
        }
        if let Some(options) = options.nodes.filter(|o| !o.names.is_empty()) {
            let node_groups = vec!["system:nodes".into(), "system:authenticated".into()];
            let entry = server
                .in_process_service(UserInfo::new(
                    format!("system:node:{}", options.names[0]),
                    node_groups.clone(),
                ))
                .with_user_agent(&component_user_agent("kubelet"));
            let clients: k1s_simnode::ClientFor = Arc::new(move |name: &str| {
                kube::Client::new(
                    entry.as_user(UserInfo::new(
                        format!("system:node:{name}"),
                        node_groups.clone(),
                    )),
                    "default",
                )
            });
            components.push(tokio::spawn(k1s_simnode::run(
                clients,
                options,
                stopped.clone(),
            )));
        }
        Ok(ControlPlane {
            server,
            stop_components,
            components,
        })
    }

    /// The API server (its URL, CA, kubeconfig path, in-process entry).
    pub fn server(&self) -> &RunningServer {
        &self.server
    }

    /// Waits until the API server stops on its own (a fatal error).
    pub async fn wait(&mut self) {
        self.server.wait().await;
    }

    /// Stops the components first (leases are released while the API still answers; up to
    /// 5 s), then the server (in-flight requests finish; up to 10 s).
    pub async fn shutdown(mut self) {
        let _ = self.stop_components.send(true);
        for task in std::mem::take(&mut self.components) {
            let abort = task.abort_handle();
            if tokio::time::timeout(std::time::Duration::from_secs(5), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        self.server.begin_shutdown();
        self.server.wait().await;
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = self.stop_components.send(true);
        for task in &self.components {
            task.abort();
        }
        self.server.stop_now();
    }
}

/// The `User-Agent` of an in-process component, shaped as upstream's
/// (`kube-controller-manager/v1.33.0 (linux/amd64) kubernetes/k1s`): the field manager of its
/// writes is the part before the first '/'.
fn component_user_agent(component: &str) -> String {
    format!(
        "{component}/{} ({}/{}) kubernetes/k1s",
        k1s_apiserver::openapi::KUBERNETES_VERSION,
        std::env::consts::OS,
        match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        }
    )
}
