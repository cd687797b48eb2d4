//! The CSR cleaner (csrcleaner, upstream `pkg/controller/certificates/cleaner`), once an hour
//! (and once at start): deletes CertificateSigningRequests that have served their purpose, so
//! automatic requests (node credentials and their renewals) do not pile up. A request goes when
//! it was approved and issued over an hour ago, denied or failed over an hour ago, left pending
//! for a day, or when its issued certificate has expired.

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::Client;
use kube::api::{Api, DeleteParams, Preconditions};

use super::has_certificate;
use crate::ControllerContext;
use crate::controller::{Periodic, is_conflict, is_not_found};
use crate::informer::Store;

/// Upstream's pollingInterval and expirations.
const POLLING_INTERVAL: Duration = Duration::from_secs(3600);
const APPROVED_EXPIRATION: SignedDuration = SignedDuration::from_hours(1);
const DENIED_EXPIRATION: SignedDuration = SignedDuration::from_hours(1);
const FAILED_EXPIRATION: SignedDuration = SignedDuration::from_hours(1);
const PENDING_EXPIRATION: SignedDuration = SignedDuration::from_hours(24);

struct Cleaner {
    client: Client,
    csrs: Arc<Store<CertificateSigningRequest>>,
}

pub fn start(ctx: ControllerContext) {
    let cleaner = Cleaner {
        client: ctx.client.clone(),
        csrs: ctx.factory.informer::<CertificateSigningRequest>().store(),
    };
    ctx.run_every(POLLING_INTERVAL, cleaner);
}

/// Why `csr` is due for deletion at `now`, or `None` while it is kept.
pub fn due(csr: &CertificateSigningRequest, now: Timestamp) -> Option<&'static str> {
    let older_than =
        |t: Option<Timestamp>, d: SignedDuration| t.is_some_and(|t| now.duration_since(t) > d);
    let conditions = csr
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let issued = has_certificate(csr);
    if issued && conditions.iter().any(|c| c.type_ == "Approved") {
        let expired = csr
            .status
            .as_ref()
            .and_then(|s| s.certificate.as_ref())
            .and_then(|c| k1s_kubeadm_lite::pki::cert_expiry(&c.0).ok())
            .is_some_and(|(_, not_after)| not_after < now.as_second());
        if expired {
            return Some("its certificate has expired");
        }
    }
    for c in conditions {
        let updated = c.last_update_time.as_ref().map(|t| t.0);
        match c.type_.as_str() {
            "Approved" if issued && older_than(updated, APPROVED_EXPIRATION) => {
                return Some("it was approved and issued over an hour ago");
            }
            "Denied" if older_than(updated, DENIED_EXPIRATION) => {
                return Some("it was denied over an hour ago");
            }
            "Failed" if older_than(updated, FAILED_EXPIRATION) => {
                return Some("it failed over an hour ago");
            }
            _ => {}
        }
    }
    let created = csr.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if conditions.is_empty() && older_than(created, PENDING_EXPIRATION) {
        return Some("it has been pending for over a day");
    }
    None
}

impl Periodic for Cleaner {
    async fn pass(&mut self) {
        let now = Timestamp::now();
        let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        for csr in self.csrs.list() {
            let Some(why) = due(&csr, now) else {
                continue;
            };
            let name = csr.metadata.name.clone().unwrap_or_default();
            tracing::info!(csr = %name, "cleaning a CertificateSigningRequest: {why}");
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: csr.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..Default::default()
            };
            if let Err(e) = api.delete(&name, &params).await
                && !is_not_found(&e)
                && !is_conflict(&e)
            {
                tracing::warn!(csr = %name, error = %e, "deleting a CertificateSigningRequest failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn csr(status: serde_json::Value, created: &str) -> CertificateSigningRequest {
        serde_json::from_value(json!({
            "metadata": {"name": "c", "creationTimestamp": created},
            "spec": {"request": "", "signerName": "kubernetes.io/kube-apiserver-client"},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn requests_are_due_by_upstreams_deadlines() {
        let now: Timestamp = "2026-06-02T12:00:00Z".parse().unwrap();
        let cond = |type_: &str, at: &str| json!({"conditions": [{"type": type_, "status": "True", "lastUpdateTime": at}]});
        // Pending: a day.
        assert!(due(&csr(json!({}), "2026-06-01T11:00:00Z"), now).is_some());
        assert!(due(&csr(json!({}), "2026-06-01T13:00:00Z"), now).is_none());
        // Denied and failed: an hour after their condition; approved but not issued yet: kept,
        // however old. (condition, its lastUpdateTime, due)
        for (type_, at, is_due) in [
            ("Denied", "2026-06-02T10:59:00Z", true),
            ("Denied", "2026-06-02T11:30:00Z", false),
            ("Failed", "2026-06-02T10:00:00Z", true),
            ("Approved", "2026-06-01T00:00:00Z", false),
        ] {
            let request = csr(cond(type_, at), "2026-06-01T00:00:00Z");
            assert_eq!(due(&request, now).is_some(), is_due, "{type_} at {at}");
        }
    }
}
