//! Simulated nodes (kwok-like, built in): Node objects with Lease heartbeats, and pods bound to
//! them brought to Running as a kubelet would report them. Speaks only the Kubernetes API; nothing
//! here runs a process. (Being written.)

use std::sync::Arc;

/// A client acting as the node named by the argument (`system:node:<name>`).
pub type ClientFor = Arc<dyn Fn(&str) -> kube::Client + Send + Sync>;

/// What the simulated nodes look like.
#[derive(Clone, Debug)]
pub struct Options {
    /// The nodes' names.
    pub names: Vec<String>,
    /// Capacity: CPU (a quantity, `4`), memory (`8Gi`), pods (`110`).
    pub cpu: String,
    pub memory: String,
    pub pods: String,
    /// Pod CIDRs are carved from this range, one `/24` per node.
    pub cluster_cidr: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            names: vec!["k1s-node-0".into()],
            cpu: "4".into(),
            memory: "8Gi".into(),
            pods: "110".into(),
            cluster_cidr: "10.244.0.0/16".into(),
        }
    }
}

/// Runs the nodes until `shutdown`.
pub async fn run(
    clients: ClientFor,
    options: Options,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    let _ = (clients, options);
    let _ = shutdown.wait_for(|s| *s).await;
    Ok(())
}
