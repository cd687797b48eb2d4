//! The csrsigning controller (upstream `pkg/controller/certificates/signer`): approved requests
//! of the built-in signers (`kube-apiserver-client`, `kube-apiserver-client-kubelet`,
//! `kubelet-serving`) are issued by the cluster CA named by `--cluster-signing-cert-file` /
//! `--cluster-signing-key-file` (read at every signing, so a renewed CA is picked up), for
//! `expirationSeconds` capped at `--cluster-signing-duration` (at least 10 minutes). A request a
//! signer cannot honour gets the `Failed` condition (`SignerValidationFailure`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k1s_kubeadm_lite::pki::{parse_csr_pem, sign_csr};
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, PostParams};

use super::{
    KUBE_APISERVER_CLIENT_SIGNER, KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER,
    LEGACY_UNKNOWN_SIGNER, has_certificate, has_condition, usages, validate_apiserver_client,
    validate_kubelet_client, validate_kubelet_serving,
};
use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::informer::{Delta, Store};

/// The shortest certificate issued (twice the signer's 5-minute backdate).
const MIN_DURATION: Duration = Duration::from_secs(600);

struct Signer {
    client: Client,
    csrs: Arc<Store<CertificateSigningRequest>>,
    cert_file: PathBuf,
    key_file: PathBuf,
    max_duration: Duration,
}

pub fn start(ctx: ControllerContext) {
    let (Some(cert_file), Some(key_file)) = (
        ctx.options.cluster_signing_cert_file.clone(),
        ctx.options.cluster_signing_key_file.clone(),
    ) else {
        tracing::info!(
            "csrsigning: no --cluster-signing-cert-file/--cluster-signing-key-file; not started"
        );
        return;
    };
    let csrs = ctx.factory.informer::<CertificateSigningRequest>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        csrs.add_handler(move |d: &Delta<CertificateSigningRequest>| {
            let csr = d.object();
            if !matches!(d, Delta::Deleted(_)) && is_pending_approved(csr) {
                queue.add(csr.metadata.name.clone().unwrap_or_default());
            }
        });
    }
    let reconciler = Arc::new(Signer {
        client: ctx.client.clone(),
        csrs: csrs.store(),
        cert_file,
        key_file,
        max_duration: ctx.options.cluster_signing_duration,
    });
    let workers = ctx.workers("certificate", 5);
    ctx.run_workers(reconciler, queue, workers);
}

fn is_pending_approved(csr: &CertificateSigningRequest) -> bool {
    has_condition(csr, "Approved") && !has_condition(csr, "Failed") && !has_certificate(csr)
}

/// Upstream's `duration`: the requested one within [10 minutes, the signer's maximum].
pub fn duration(expiration_seconds: Option<i32>, max: Duration) -> Duration {
    match expiration_seconds {
        None => max,
        Some(s) => {
            let requested = Duration::from_secs(u64::try_from(s).unwrap_or(0));
            requested.clamp(MIN_DURATION, max.max(MIN_DURATION))
        }
    }
}

impl Signer {
    async fn update_status(&self, csr: &CertificateSigningRequest) -> Result<Action, Error> {
        let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        let name = csr.metadata.name.clone().unwrap_or_default();
        match api.replace_status(&name, &PostParams::default(), csr).await {
            Ok(_) => Ok(Action::Done),
            Err(e) if is_not_found(&e) => Ok(Action::Done),
            // A conflict too is retried: the next attempt reads the fresh object.
            Err(e) => Err(e.into()),
        }
    }
}

impl Reconciler for Signer {
    async fn reconcile(&self, name: &str) -> Result<Action, Error> {
        let Some(csr) = self.csrs.get(name) else {
            return Ok(Action::Done);
        };
        if !is_pending_approved(&csr) {
            return Ok(Action::Done);
        }
        let signer = csr.spec.signer_name.as_str();
        if ![
            KUBE_APISERVER_CLIENT_SIGNER,
            KUBELET_CLIENT_SIGNER,
            KUBELET_SERVING_SIGNER,
            LEGACY_UNKNOWN_SIGNER,
        ]
        .contains(&signer)
        {
            // Another signer's request: not ours to touch.
            return Ok(Action::Done);
        }
        let req = parse_csr_pem(&csr.spec.request.0)
            .map_err(|e| Error::Other(format!("unable to parse csr {name:?}: {e}")))?;
        let wanted = usages(&csr);
        let valid = match signer {
            KUBELET_CLIENT_SIGNER => validate_kubelet_client(&req, &wanted),
            KUBELET_SERVING_SIGNER => validate_kubelet_serving(&req, &wanted),
            KUBE_APISERVER_CLIENT_SIGNER => validate_apiserver_client(&wanted),
            _ => Err(format!(
                "signer {signer} is not supported: its certificates are trusted by nothing"
            )),
        };
        let mut updated = (*csr).clone();
        let status = updated.status.get_or_insert_with(Default::default);
        if let Err(message) = valid {
            status.conditions.get_or_insert_with(Vec::new).push(
                CertificateSigningRequestCondition {
                    type_: "Failed".into(),
                    status: "True".into(),
                    reason: Some("SignerValidationFailure".into()),
                    message: Some(message),
                    last_update_time: Some(Time(jiff::Timestamp::now())),
                    ..Default::default()
                },
            );
            return self.update_status(&updated).await;
        }
        let read = |p: &PathBuf| {
            std::fs::read_to_string(p)
                .map_err(|e| Error::Other(format!("reading {}: {e}", p.display())))
        };
        let ca = read(&self.cert_file)?;
        let key = read(&self.key_file)?;
        let request = String::from_utf8_lossy(&csr.spec.request.0).into_owned();
        let ttl = duration(csr.spec.expiration_seconds, self.max_duration);
        let wanted: Vec<String> = csr.spec.usages.clone().unwrap_or_default();
        let cert = sign_csr(&ca, &key, &request, &wanted, ttl)
            .map_err(|e| Error::Other(format!("signing csr {name:?}: {e}")))?;
        status.certificate = Some(ByteString(cert.into_bytes()));
        self.update_status(&updated).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_duration_is_bounded() {
        let year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(duration(None, year), year);
        assert_eq!(duration(Some(3600), year), Duration::from_secs(3600));
        assert_eq!(duration(Some(60), year), MIN_DURATION);
        assert_eq!(duration(Some(i32::MAX), year), year);
    }
}
