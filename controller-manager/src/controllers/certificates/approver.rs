//! The csrapproving controller (upstream `pkg/controller/certificates/approver/sarapprove.go`):
//! a pending kubelet client request (`kubernetes.io/kube-apiserver-client-kubelet`) is approved
//! when a SubjectAccessReview says its requester may `create` `certificatesigningrequests/
//! selfnodeclient` (renewing its own identity) or `certificatesigningrequests/nodeclient` (a
//! bootstrapper asking for a node identity). Nothing is ever denied.

use std::sync::Arc;

use k1s_kubeadm_lite::pki::{CsrInfo, parse_csr_pem};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, PostParams};

use super::{
    KUBELET_CLIENT_SIGNER, has_certificate, has_condition, usages, validate_kubelet_client,
};
use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::informer::{Delta, Store};

struct Approver {
    client: Client,
    csrs: Arc<Store<CertificateSigningRequest>>,
}

pub fn start(ctx: ControllerContext) {
    let csrs = ctx.factory.informer::<CertificateSigningRequest>();
    let queue = ctx.queue();
    {
        let queue = queue.clone();
        csrs.add_handler(move |d: &Delta<CertificateSigningRequest>| {
            let csr = d.object();
            if !matches!(d, Delta::Deleted(_))
                && !has_condition(csr, "Approved")
                && !has_condition(csr, "Denied")
            {
                queue.add(csr.metadata.name.clone().unwrap_or_default());
            }
        });
    }
    let reconciler = Arc::new(Approver {
        client: ctx.client.clone(),
        csrs: csrs.store(),
    });
    let workers = ctx.workers("certificate", 5);
    ctx.run_workers(reconciler, queue, workers);
}

/// One auto-approval rule: the CSR shape it recognizes and the permission it checks.
struct Recognizer {
    subresource: &'static str,
    message: &'static str,
    recognize: fn(&CertificateSigningRequest, &CsrInfo) -> bool,
}

fn is_node_client_cert(csr: &CertificateSigningRequest, req: &CsrInfo) -> bool {
    csr.spec.signer_name == KUBELET_CLIENT_SIGNER
        && validate_kubelet_client(req, &usages(csr)).is_ok()
}

fn is_self_node_client_cert(csr: &CertificateSigningRequest, req: &CsrInfo) -> bool {
    is_node_client_cert(csr, req) && csr.spec.username.as_deref() == Some(req.common_name.as_str())
}

const RECOGNIZERS: [Recognizer; 2] = [
    Recognizer {
        subresource: "selfnodeclient",
        message: "Auto approving self kubelet client certificate after SubjectAccessReview.",
        recognize: is_self_node_client_cert,
    },
    Recognizer {
        subresource: "nodeclient",
        message: "Auto approving kubelet client certificate after SubjectAccessReview.",
        recognize: is_node_client_cert,
    },
];

impl Approver {
    async fn authorize(
        &self,
        csr: &CertificateSigningRequest,
        subresource: &str,
    ) -> Result<bool, Error> {
        let sar = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: csr.spec.username.clone(),
                uid: csr.spec.uid.clone(),
                groups: csr.spec.groups.clone(),
                extra: csr.spec.extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    group: Some("certificates.k8s.io".into()),
                    resource: Some("certificatesigningrequests".into()),
                    subresource: Some(subresource.into()),
                    verb: Some("create".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = api.create(&PostParams::default(), &sar).await?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}

impl Reconciler for Approver {
    async fn reconcile(&self, name: &str) -> Result<Action, Error> {
        let Some(csr) = self.csrs.get(name) else {
            return Ok(Action::Done);
        };
        if has_certificate(&csr) || has_condition(&csr, "Approved") || has_condition(&csr, "Denied")
        {
            return Ok(Action::Done);
        }
        if csr.spec.signer_name != KUBELET_CLIENT_SIGNER {
            return Ok(Action::Done);
        }
        let req = parse_csr_pem(&csr.spec.request.0)
            .map_err(|e| Error::Other(format!("unable to parse csr {name:?}: {e}")))?;
        for r in &RECOGNIZERS {
            if !(r.recognize)(&csr, &req) {
                continue;
            }
            if !self.authorize(&csr, r.subresource).await? {
                continue;
            }
            let mut approved = (*csr).clone();
            let status = approved.status.get_or_insert_with(Default::default);
            status.conditions.get_or_insert_with(Vec::new).push(
                CertificateSigningRequestCondition {
                    type_: "Approved".into(),
                    status: "True".into(),
                    reason: Some("AutoApproved".into()),
                    message: Some(r.message.into()),
                    last_update_time: Some(Time(jiff::Timestamp::now())),
                    ..Default::default()
                },
            );
            let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
            return match api
                .replace_subresource("approval", name, &PostParams::default(), &approved)
                .await
            {
                Ok(_) => Ok(Action::Done),
                Err(e) if is_not_found(&e) => Ok(Action::Done),
                // A conflict too is retried: the next attempt reads the fresh object.
                Err(e) => Err(e.into()),
            };
        }
        Ok(Action::Done)
    }
}
