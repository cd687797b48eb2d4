//! Node client-certificate rotation for a joined node, as the kubelet's certificate manager
//! does: from `kubelet.conf`'s client certificate pick a rotation deadline (notBefore plus a
//! jittered 70–90% of its validity), then request a renewal CSR with the current node
//! credentials, write the issued certificate into `kubelet.conf` atomically and switch the
//! running node agent's client to it.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, PostParams};
use kube::client::Body;
use tokio::sync::watch;

use crate::api::{self, Credentials};
use crate::kubeconfig::{Kubeconfig, ResolvedContext};
use crate::{join, pki};

/// How often `kubelet.conf` is read again while waiting, so a replaced file is noticed.
const RECHECK: Duration = Duration::from_secs(10);
/// The first retry delay after a failed renewal; doubled each failure up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_secs(2);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// A client whose credentials can be replaced while it is in use: every request goes through
/// the current inner client, so clones handed to the node agent pick up a rotated certificate
/// on their next request (a watch already open finishes on its old connection, whose
/// certificate is still valid).
#[derive(Clone)]
pub struct RotatingClient {
    current: Arc<RwLock<kube::Client>>,
    outer: kube::Client,
}

impl RotatingClient {
    pub fn new(inner: kube::Client) -> Self {
        let current = Arc::new(RwLock::new(inner));
        let outer = kube::Client::new(Forward(current.clone()), "default");
        RotatingClient { current, outer }
    }

    /// The client to hand out; it follows every later `replace`.
    pub fn client(&self) -> kube::Client {
        self.outer.clone()
    }

    fn replace(&self, inner: kube::Client) {
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = inner;
    }
}

/// The tower service behind `RotatingClient`: sends each request with the current client.
#[derive(Clone)]
struct Forward(Arc<RwLock<kube::Client>>);

impl tower::Service<http::Request<Body>> for Forward {
    type Response = http::Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let client = self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Box::pin(async move { client.send(request).await })
    }
}

/// What the rotation task works on.
#[derive(Debug, Clone)]
pub struct RotationOptions {
    /// The node's `kubelet.conf`.
    pub kubeconfig: PathBuf,
    pub node_name: String,
    /// How long one renewal waits for its certificate before it counts as failed.
    pub wait_timeout: Duration,
}

/// The rotation deadline of a certificate valid from `not_before` to `not_after` (Unix
/// seconds): notBefore plus `fraction` (0.7–0.9, drawn by the caller) of the validity.
pub fn rotation_deadline(not_before: i64, not_after: i64, fraction: f64) -> i64 {
    let total = (not_after - not_before).max(0) as f64;
    not_before + (total * fraction.clamp(0.7, 0.9)) as i64
}

/// A uniform fraction in [0.7, 0.9): upstream's jitter, so nodes joined together do not all
/// renew at the same moment.
fn jittered_fraction() -> f64 {
    let mut b = [0u8; 4];
    // A failed draw only loses the jitter, never the rotation.
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    0.7 + 0.2 * (u32::from_le_bytes(b) as f64 / (u32::MAX as f64 + 1.0))
}

fn now_unix() -> i64 {
    jiff::Timestamp::now().as_second()
}

fn rfc3339(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| unix.to_string())
}

/// Sleeps for `d`; false when shutdown came first.
async fn sleep_or_stop(d: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    if *shutdown.borrow() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep(d) => true,
        _ = shutdown.changed() => false,
    }
}

/// Rotates the node's client certificate before each expiry until `shutdown`, switching
/// `agent` to every new certificate (and to a certificate someone else wrote into the file).
pub async fn run(
    opts: RotationOptions,
    agent: RotatingClient,
    mut shutdown: watch::Receiver<bool>,
) {
    // The certificate the deadline was drawn for, and the deadline.
    let mut seen: Option<(Vec<u8>, i64)> = None;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let ctx = match Kubeconfig::load_context(&opts.kubeconfig, None) {
            Ok(ctx) => ctx,
            Err(e) => {
                eprintln!(
                    "[kubelet-client] WARNING: cannot read the node credentials for rotation: {e}"
                );
                if !sleep_or_stop(RECHECK, &mut shutdown).await {
                    return;
                }
                continue;
            }
        };
        let Some(cert) = ctx.client_cert_pem.clone() else {
            eprintln!(
                "[kubelet-client] WARNING: {} holds no client certificate; nothing to rotate",
                opts.kubeconfig.display()
            );
            if !sleep_or_stop(RECHECK, &mut shutdown).await {
                return;
            }
            continue;
        };
        let deadline = match &seen {
            Some((pem, deadline)) if *pem == cert => *deadline,
            _ => {
                let (_, not_before, not_after) = match pki::cert_validity(&cert) {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!(
                            "[kubelet-client] WARNING: the client certificate in {} is unreadable: {e}",
                            opts.kubeconfig.display()
                        );
                        if !sleep_or_stop(RECHECK, &mut shutdown).await {
                            return;
                        }
                        continue;
                    }
                };
                if seen.is_some() {
                    // Replaced behind our back: the agent follows the file.
                    match client_for(&ctx).await {
                        Ok(c) => {
                            agent.replace(c);
                            println!(
                                "[kubelet-client] {} changed; using its client certificate",
                                opts.kubeconfig.display()
                            );
                        }
                        Err(e) => eprintln!(
                            "[kubelet-client] WARNING: {} changed but its credentials are unusable: {e}",
                            opts.kubeconfig.display()
                        ),
                    }
                }
                let deadline = rotation_deadline(not_before, not_after, jittered_fraction());
                tracing::info!(
                    expires = %rfc3339(not_after),
                    rotation_deadline = %rfc3339(deadline),
                    "node client certificate"
                );
                seen = Some((cert.clone(), deadline));
                deadline
            }
        };
        let now = now_unix();
        if now < deadline {
            let wait = Duration::from_secs((deadline - now) as u64).min(RECHECK);
            if !sleep_or_stop(wait, &mut shutdown).await {
                return;
            }
            continue;
        }
        match rotate(&opts, &ctx, &agent).await {
            Ok(not_after) => {
                println!(
                    "[kubelet-client] rotated the node client certificate, valid until {}",
                    rfc3339(not_after)
                );
                backoff = FIRST_BACKOFF;
                // The next round reads the file back and draws the new certificate's deadline.
                seen = None;
            }
            Err(e) => {
                eprintln!(
                    "[kubelet-client] WARNING: rotating the node client certificate failed (retrying in {backoff:?}): {e}"
                );
                if !sleep_or_stop(backoff, &mut shutdown).await {
                    return;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

async fn client_for(ctx: &ResolvedContext) -> Result<kube::Client, String> {
    let creds = match (&ctx.client_cert_pem, &ctx.client_key_pem) {
        (Some(c), Some(k)) => Credentials::ClientCert {
            cert_pem: String::from_utf8_lossy(c).into_owned(),
            key_pem: String::from_utf8_lossy(k).into_owned(),
        },
        _ => return Err("no client certificate and key".into()),
    };
    let ca = ctx
        .ca_pem
        .as_ref()
        .map(|c| String::from_utf8_lossy(c).into_owned());
    api::client_for(&ctx.server, ca.as_deref(), &creds)
        .await
        .map_err(|e| e.to_string())
}

/// One renewal: a CSR made with the current credentials, the issued certificate written into
/// the file, the agent switched. Returns the new certificate's notAfter.
async fn rotate(
    opts: &RotationOptions,
    ctx: &ResolvedContext,
    agent: &RotatingClient,
) -> Result<i64, String> {
    let current = client_for(ctx).await?;
    let (csr, key_pem) = join::node_client_csr(&opts.node_name).map_err(|e| e.to_string())?;
    let csrs: Api<CertificateSigningRequest> = Api::all(current);
    let created = csrs
        .create(&PostParams::default(), &csr)
        .await
        .map_err(|e| format!("creating the renewal certificate signing request: {e}"))?;
    let name = created.metadata.name.unwrap_or_default();
    let cert_pem = join::wait_for_certificate(&csrs, &name, opts.wait_timeout)
        .await
        .map_err(|e| e.to_string())?;
    let (_, _, not_after) = pki::cert_validity(cert_pem.as_bytes())?;
    write_credentials(&opts.kubeconfig, &cert_pem, &key_pem)?;
    let rotated = ResolvedContext {
        client_cert_pem: Some(cert_pem.into_bytes()),
        client_key_pem: Some(key_pem.into_bytes()),
        ..ctx.clone()
    };
    agent.replace(client_for(&rotated).await?);
    Ok(not_after)
}

/// Puts the new certificate and key, embedded, into the current context's user of the
/// kubeconfig at `path`, keeping the rest of the file; written atomically with mode 0600.
fn write_credentials(path: &Path, cert_pem: &str, key_pem: &str) -> Result<(), String> {
    let mut config = Kubeconfig::load(path).map_err(|e| e.to_string())?;
    let user_name = config
        .contexts
        .iter()
        .find(|c| c.name == config.current_context)
        .map(|c| c.context.user.clone())
        .ok_or_else(|| format!("{}: the current context is missing", path.display()))?;
    let user = config
        .users
        .iter_mut()
        .find(|u| u.name == user_name)
        .ok_or_else(|| format!("{}: user {user_name:?} is missing", path.display()))?;
    let b64 = |s: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s);
    user.user.client_certificate_data = Some(b64(cert_pem));
    user.user.client_key_data = Some(b64(key_pem));
    user.user.client_certificate = None;
    user.user.client_key = None;
    config.save(path).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_falls_in_70_to_90_percent_of_the_validity() {
        assert_eq!(rotation_deadline(1000, 2000, 0.7), 1700);
        assert_eq!(rotation_deadline(1000, 2000, 0.9), 1900);
        assert_eq!(rotation_deadline(1000, 2000, 2.0), 1900);
        assert_eq!(rotation_deadline(1000, 500, 0.8), 1000);
        for _ in 0..100 {
            let f = jittered_fraction();
            assert!((0.7..0.9).contains(&f), "{f}");
        }
    }

    #[test]
    fn renewed_credentials_replace_the_users_and_keep_the_rest() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("kubelet.conf");
        let mut config =
            Kubeconfig::for_client_cert("https://h:6443", "kubernetes", "u", "CA", "OLD", "OLDK");
        config.users[0].user.client_certificate = Some("/old.crt".into());
        config.save(&path).expect("save");
        write_credentials(&path, "NEW", "NEWK").expect("write");
        let got = Kubeconfig::load(&path).expect("load");
        let user = &got.users[0].user;
        let decode = |s: &Option<String>| {
            base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                s.as_deref().expect("set"),
            )
            .expect("b64")
        };
        assert_eq!(decode(&user.client_certificate_data), b"NEW");
        assert_eq!(decode(&user.client_key_data), b"NEWK");
        assert_eq!(user.client_certificate, None);
        assert_eq!(got.clusters, config.clusters);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
