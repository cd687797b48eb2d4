//! Keeping requests off dead etcd members: the client's balancer (tonic's) goes on routing
//! requests to a member whose connection is refused, so every such request fails although the
//! cluster has quorum. A monitor takes members that refuse connections out of the balancer and
//! puts them back once they accept again, and a request that failed to connect is sent again
//! (it never reached etcd, so repeating it is safe, and the balancer may pick a live member).

use std::future::Future;
use std::time::Duration;

use etcd_client::Client;
use tokio::net::TcpStream;

/// How often the monitor probes each member.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Extra attempts for a request that could not connect.
const CONNECT_RETRIES: u32 = 8;

/// Watches the members' client ports until `closed` flips; only worth it with several members.
pub(crate) fn spawn_monitor(
    client: Client,
    endpoints: Vec<String>,
    mut closed: tokio::sync::watch::Receiver<bool>,
) {
    if endpoints.len() < 2 {
        return;
    }
    tokio::spawn(async move {
        let mut in_pool = vec![true; endpoints.len()];
        loop {
            tokio::select! {
                _ = tokio::time::sleep(PROBE_INTERVAL) => {}
                _ = closed.wait_for(|c| *c) => return,
            }
            for (i, endpoint) in endpoints.iter().enumerate() {
                let up = accepts(endpoint).await;
                // Never empty the pool: with every member down, requests must still fail
                // with etcd's own error, and the first member back is found at once.
                let others = in_pool
                    .iter()
                    .enumerate()
                    .any(|(j, in_pool)| j != i && *in_pool);
                if !up && in_pool[i] && others {
                    match client.remove_endpoint(endpoint).await {
                        Ok(()) => {
                            tracing::warn!(%endpoint, "etcd member refuses connections; routing around it");
                            in_pool[i] = false;
                        }
                        Err(e) => {
                            tracing::warn!(%endpoint, error = %e, "removing an etcd endpoint failed")
                        }
                    }
                } else if up && !in_pool[i] {
                    match client.add_endpoint(endpoint).await {
                        Ok(()) => {
                            tracing::info!(%endpoint, "etcd member accepts connections again");
                            in_pool[i] = true;
                        }
                        Err(e) => {
                            tracing::warn!(%endpoint, error = %e, "adding an etcd endpoint failed")
                        }
                    }
                }
            }
        }
    });
}

/// Whether the member's client port accepts a TCP connection.
async fn accepts(endpoint: &str) -> bool {
    let authority = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    matches!(
        tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(authority)).await,
        Ok(Ok(_))
    )
}

/// Runs one request through `timed`, again when it could not connect to the member it went to.
pub(crate) async fn request<T, Fut>(
    mut f: impl FnMut() -> Fut,
) -> std::result::Result<T, etcd_client::Error>
where
    Fut: Future<Output = std::result::Result<T, etcd_client::Error>>,
{
    let mut attempt = 0;
    loop {
        match crate::etcd::timed(f()).await {
            Err(e) if attempt < CONNECT_RETRIES && is_connect_error(&e) => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(5 * u64::from(attempt))).await;
            }
            other => return other,
        }
    }
}

/// A transport failure before anything was sent: the connection itself could not be made.
fn is_connect_error(e: &etcd_client::Error) -> bool {
    match e {
        // tonic reports a refused or failed connection as Unavailable "tcp connect error".
        etcd_client::Error::GRpcStatus(s) => s.message().contains("connect error"),
        etcd_client::Error::TransportError(t) => t.to_string().contains("connect error"),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_probe_sees_a_listening_port_and_not_a_closed_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        assert!(accepts(&format!("http://{addr}")).await);
        assert!(accepts(&format!("https://{addr}/")).await);
        drop(listener);
        assert!(!accepts(&format!("http://{addr}")).await);
    }
}
