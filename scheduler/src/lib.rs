//! The scheduler (upstream kube-scheduler): binds pods of `schedulerName: default-scheduler` to
//! nodes through `pods/binding`. Speaks only the Kubernetes API. (Being written.)

/// Settings, with kube-scheduler's names where one exists.
#[derive(Clone, Debug)]
pub struct Options {
    /// Pods whose `spec.schedulerName` is this are ours (`default-scheduler`).
    pub scheduler_name: String,
    /// `--leader-elect`: lead through the Lease kube-system/kube-scheduler first.
    pub leader_elect: bool,
    /// This process's leader-election identity.
    pub identity: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scheduler_name: "default-scheduler".into(),
            leader_elect: true,
            identity: format!("k1s-scheduler_{}", std::process::id()),
        }
    }
}

/// Schedules until `shutdown`.
pub async fn run(
    client: kube::Client,
    options: Options,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    let _ = (client, options);
    let _ = shutdown.wait_for(|s| *s).await;
    Ok(())
}
