//! The CertificateSigningRequest plugins: CertificateApproval (approving needs `approve` on the
//! signer), CertificateSigning (issuing a certificate or changing conditions through `/status`
//! needs `sign` on the signer) and CertificateSubjectRestriction (no `system:masters` client
//! certificates from the kube-apiserver-client signer).

use k1s_apimachinery::ApiError;
use serde_json::Value;

use super::{AdmissionRequest, Operation};
use crate::auth::{Attributes, Decision};

const CSRS: (&str, &str) = ("certificates.k8s.io", "certificatesigningrequests");
const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";

fn signer_name(csr: &Value) -> &str {
    super::str_at(csr, &["spec", "signerName"]).unwrap_or("")
}

/// Upstream's IsAuthorizedForSignerName: `verb` on `signers` named after the signer, or on
/// `<domain>/*`.
fn authorized_for_signer(req: &AdmissionRequest<'_>, verb: &str, signer: &str) -> bool {
    let domain = signer.split('/').next().unwrap_or_default();
    [signer.to_string(), format!("{domain}/*")]
        .into_iter()
        .any(|name| {
            let attrs = Attributes {
                user: req.user.clone(),
                verb: verb.into(),
                is_resource_request: true,
                namespace: String::new(),
                api_group: CSRS.0.into(),
                api_version: "*".into(),
                resource: "signers".into(),
                subresource: String::new(),
                name,
                path: String::new(),
            };
            matches!(req.authorizer.authorize(&attrs), Decision::Allow(_))
        })
}

fn is_csr_write(req: &AdmissionRequest<'_>, operation: Operation, subresource: &str) -> bool {
    req.operation == operation
        && req.info.group == CSRS.0
        && req.info.resource == CSRS.1
        && req.subresource.unwrap_or("") == subresource
}

/// CertificateApproval: checked against the stored CSR's signer (an approval may not change it).
pub fn validate_approval(
    req: &AdmissionRequest<'_>,
    csr: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !is_csr_write(req, Operation::Update, "approval") {
        return Ok(());
    }
    let signer = signer_name(old.unwrap_or(csr));
    if authorized_for_signer(req, "approve", signer) {
        return Ok(());
    }
    Err(req.forbidden(
        Some(csr),
        format!(
            "user not permitted to approve requests with signerName {}",
            k1s_apimachinery::gofmt::quote(signer)
        ),
    ))
}

/// CertificateSigning: only when the certificate or the conditions change.
pub fn validate_signing(
    req: &AdmissionRequest<'_>,
    csr: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !is_csr_write(req, Operation::Update, "status") {
        return Ok(());
    }
    let Some(old) = old else {
        return Ok(());
    };
    let field = |o: &'_ Value, f: &str| {
        o.pointer(&format!("/status/{f}"))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let conditions =
        |o: &Value| field(o, "conditions").filter(|c| c.as_array().is_some_and(|a| !a.is_empty()));
    if field(csr, "certificate") == field(old, "certificate") && conditions(csr) == conditions(old)
    {
        return Ok(());
    }
    let signer = signer_name(old);
    if authorized_for_signer(req, "sign", signer) {
        return Ok(());
    }
    Err(req.forbidden(
        Some(csr),
        format!(
            "user not permitted to sign requests with signerName {}",
            k1s_apimachinery::gofmt::quote(signer)
        ),
    ))
}

/// CertificateSubjectRestriction: on create, a kube-apiserver-client request may not ask for
/// the `system:masters` organization.
pub fn validate_subject(req: &AdmissionRequest<'_>, csr: &Value) -> Result<(), ApiError> {
    if !is_csr_write(req, Operation::Create, "") || signer_name(csr) != KUBE_APISERVER_CLIENT {
        return Ok(());
    }
    use base64::Engine as _;
    let pem = super::str_at(csr, &["spec", "request"])
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .unwrap_or_default();
    let parsed = k1s_kubeadm_lite::pki::parse_csr_pem(&pem)
        .map_err(|e| req.forbidden(Some(csr), format!("failed to parse CSR: {e}")))?;
    if parsed.organizations.iter().any(|o| o == "system:masters") {
        return Err(req.forbidden(
            Some(csr),
            format!(
                "use of {KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed"
            ),
        ));
    }
    Ok(())
}
