//! Keeping requests off etcd members that cannot serve them: the client's balancer (tonic's)
//! goes on routing requests to a member that is down, hung or cut off from the others, so such
//! requests fail or hang although the cluster has quorum. A monitor asks every member for a
//! linearizable read of its own (which needs the member alive and in touch with a leader), takes
//! members that do not answer out of the balancer and puts them back once they answer again.
//! A request that never reached etcd (the connection failed, or the member has no leader and
//! refused it before doing anything) is sent again: repeating it is safe, and the balancer may
//! pick a healthy member.

use std::future::Future;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, GetOptions};

/// How often the monitor probes each member.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// How long a member may take to answer a probe. A linearizable read on a loaded machine takes
/// milliseconds; a hung or partitioned member never answers.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Probes a member must fail in a row before it is routed around: one slow answer on a busy
/// machine is not a dead member.
const FAILURES_TO_REMOVE: u32 = 2;
/// A key nobody writes; the probe only counts it.
const PROBE_KEY: &str = "/k1s-member-probe";
/// How long a failed write that never reached etcd is retried, in total, before its error is
/// returned. It covers a leader election (about a second with etcd's defaults).
const WRITE_RETRY_BUDGET: Duration = Duration::from_secs(8);
/// How long one attempt of a read may take before it is abandoned and sent again (the balancer
/// may have routed it to a member that hung), and how long all attempts may take together.
const READ_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_RETRY_BUDGET: Duration = Duration::from_secs(25);

/// One member as the monitor sees it.
struct Member {
    endpoint: String,
    /// A client of this member alone; made again after a failed probe, so a connection that
    /// hung is not reused.
    probe: Option<Client>,
    in_pool: bool,
    failures: u32,
}

/// Watches the members until `closed` flips; only worth it with several members. `options`
/// are the store's connect options (TLS), used for the probes' own connections.
pub(crate) fn spawn_monitor(
    client: Client,
    endpoints: Vec<String>,
    options: ConnectOptions,
    mut closed: tokio::sync::watch::Receiver<bool>,
) {
    if endpoints.len() < 2 {
        return;
    }
    let options = options
        .with_connect_timeout(PROBE_TIMEOUT)
        .with_require_leader(true);
    tokio::spawn(async move {
        let mut members: Vec<Member> = endpoints
            .into_iter()
            .map(|endpoint| Member {
                endpoint,
                probe: None,
                in_pool: true,
                failures: 0,
            })
            .collect();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(PROBE_INTERVAL) => {}
                _ = closed.wait_for(|c| *c) => return,
            }
            let answers =
                futures::future::join_all(members.iter_mut().map(|m| answers(m, &options))).await;
            for (i, up) in answers.into_iter().enumerate() {
                let member = &mut members[i];
                member.failures = if up { 0 } else { member.failures + 1 };
                let (remove, add) = (
                    member.in_pool && member.failures >= FAILURES_TO_REMOVE,
                    up && !member.in_pool,
                );
                // Never empty the pool: with every member gone, requests must still fail
                // with etcd's own error, and the first member back is found at once.
                let others = members.iter().enumerate().any(|(j, m)| j != i && m.in_pool);
                let member = &mut members[i];
                if remove && others {
                    match client.remove_endpoint(&member.endpoint).await {
                        Ok(()) => {
                            tracing::warn!(endpoint = %member.endpoint, "etcd member does not answer; routing around it");
                            member.in_pool = false;
                        }
                        Err(e) => {
                            tracing::warn!(endpoint = %member.endpoint, error = %e, "removing an etcd endpoint failed")
                        }
                    }
                } else if add {
                    match client.add_endpoint(&member.endpoint).await {
                        Ok(()) => {
                            tracing::warn!(endpoint = %member.endpoint, "etcd member answers again; routing to it");
                            member.in_pool = true;
                        }
                        Err(e) => {
                            tracing::warn!(endpoint = %member.endpoint, error = %e, "adding an etcd endpoint failed")
                        }
                    }
                }
            }
        }
    });
}

/// Whether the member answers a linearizable read within the probe timeout.
async fn answers(member: &mut Member, options: &ConnectOptions) -> bool {
    let probe = async {
        if member.probe.is_none() {
            let endpoint = [member.endpoint.as_str()];
            member.probe = Some(
                Client::connect(endpoint, Some(options.clone()))
                    .await
                    .ok()?,
            );
        }
        let client = member.probe.as_mut()?;
        match client
            .get(PROBE_KEY, Some(GetOptions::new().with_count_only()))
            .await
        {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::debug!(endpoint = %member.endpoint, error = %e, "etcd member probe failed");
                None
            }
        }
    };
    let up = matches!(
        tokio::time::timeout(PROBE_TIMEOUT, probe).await,
        Ok(Some(_))
    );
    if !up {
        member.probe = None;
    }
    up
}

/// What may be repeated of a request that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// A read: any failure to answer is retried (no leader, "leader changed" during a
    /// linearizable read, a connection that broke), as etcd's own client retries reads.
    Read,
    /// A write: only a failure before etcd acted on it, since one that broke later may have
    /// been applied.
    Write,
}

/// gRPC's status code for a service that cannot answer now.
const UNAVAILABLE: i32 = 14;

/// Runs one request, again (with backoff) while it fails in a way `repeat` allows to retry. A
/// write's attempt gets the store's whole request timeout; a read's a shorter one.
pub(crate) async fn request<T, Fut>(
    repeat: Repeat,
    mut f: impl FnMut() -> Fut,
) -> std::result::Result<T, etcd_client::Error>
where
    Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    let began = tokio::time::Instant::now();
    let budget = match repeat {
        Repeat::Read => READ_RETRY_BUDGET,
        Repeat::Write => WRITE_RETRY_BUDGET,
    };
    let mut delay = Duration::from_millis(5);
    loop {
        let attempt = match repeat {
            Repeat::Read => match tokio::time::timeout(READ_ATTEMPT_TIMEOUT, f()).await {
                Ok(result) => result,
                Err(_) => Err(etcd_client::Error::Internal(READ_TIMED_OUT.into())),
            },
            Repeat::Write => crate::etcd::timed(f()).await,
        };
        match attempt {
            Err(e) if began.elapsed() < budget && may_repeat(repeat, &e) => {
                tracing::debug!(error = %e, "etcd request failed; sending it again");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(250));
            }
            other => return other,
        }
    }
}

/// The error of a read attempt that took too long.
const READ_TIMED_OUT: &str = "etcd read attempt timed out";

fn may_repeat(repeat: Repeat, e: &etcd_client::Error) -> bool {
    match (repeat, e) {
        (Repeat::Read, etcd_client::Error::GRpcStatus(s)) => {
            i32::from(s.code()) == UNAVAILABLE || unsent(s.message())
        }
        (Repeat::Read, etcd_client::Error::TransportError(_)) => true,
        (Repeat::Read, etcd_client::Error::Internal(m)) => m == READ_TIMED_OUT,
        (Repeat::Write, etcd_client::Error::GRpcStatus(s)) => unsent(s.message()),
        (Repeat::Write, etcd_client::Error::TransportError(t)) => unsent(&t.to_string()),
        _ => false,
    }
}

/// tonic reports a refused or failed connection as "tcp connect error"; etcd's gRPC interceptor
/// answers "etcdserver: no leader" before handling a request that asks for a leader.
fn unsent(message: &str) -> bool {
    message.contains("connect error") || message.contains("etcdserver: no leader")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_before_etcd_acted_are_retried() {
        assert!(unsent("etcdserver: no leader"));
        assert!(unsent(
            "error trying to connect: tcp connect error: Connection refused (os error 111)"
        ));
        // A request that timed out inside etcd may have been applied: never sent again.
        assert!(!unsent("etcdserver: request timed out"));
        // A write that timed out may still be applied; a read that did is only asked again.
        let timed_out = |m: &str| etcd_client::Error::Internal(m.into());
        assert!(!may_repeat(
            Repeat::Write,
            &timed_out("etcd request timed out")
        ));
        assert!(may_repeat(Repeat::Read, &timed_out(READ_TIMED_OUT)));
    }
}
