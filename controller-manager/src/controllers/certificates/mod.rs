//! CertificateSigningRequest controllers (upstream `pkg/controller/certificates`): the approver
//! (csrapproving) auto-approves kubelet client certificates after a SubjectAccessReview, the
//! signer (csrsigning) issues approved requests of the built-in signers with the cluster CA,
//! the cleaner (csrcleaner) deletes requests that have served their purpose.

pub mod approver;
pub mod cleaner;
pub mod signer;

use std::collections::BTreeSet;

use k1s_kubeadm_lite::pki::CsrInfo;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;

pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
pub const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Whether the request has a true condition of this type.
pub(crate) fn has_condition(csr: &CertificateSigningRequest, type_: &str) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

/// Whether a certificate was issued already.
pub(crate) fn has_certificate(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|c| !c.0.is_empty())
}

pub(crate) fn usages(csr: &CertificateSigningRequest) -> BTreeSet<String> {
    csr.spec.usages.iter().flatten().cloned().collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn no_sans(req: &CsrInfo) -> Result<(), String> {
    if !req.dns_names.is_empty() {
        return Err("DNS subjectAltNames are not allowed".into());
    }
    if !req.emails.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !req.ip_addresses.is_empty() {
        return Err("IP subjectAltNames are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    Ok(())
}

/// Upstream's `ValidateKubeletClientCSR`.
pub fn validate_kubelet_client(req: &CsrInfo, usages: &BTreeSet<String>) -> Result<(), String> {
    if req.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    no_sans(req)?;
    if !req.common_name.starts_with("system:node:") {
        return Err("subject common name does not begin with system:node:".into());
    }
    let required = set(&["client auth", "digital signature", "key encipherment"]);
    let no_rsa = set(&["client auth", "digital signature"]);
    if *usages != required && *usages != no_rsa {
        return Err("usages did not match [client auth digital signature key encipherment]".into());
    }
    Ok(())
}

/// Upstream's `ValidateKubeletServingCSR`.
pub fn validate_kubelet_serving(req: &CsrInfo, usages: &BTreeSet<String>) -> Result<(), String> {
    if req.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    if req.dns_names.is_empty() && req.ip_addresses.is_empty() {
        return Err("DNS or IP subjectAltName is required".into());
    }
    if !req.emails.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !req.common_name.starts_with("system:node:") {
        return Err("subject common name does not begin with system:node:".into());
    }
    let required = set(&["digital signature", "key encipherment", "server auth"]);
    let no_rsa = set(&["digital signature", "server auth"]);
    if *usages != required && *usages != no_rsa {
        return Err("usages did not match [digital signature key encipherment server auth]".into());
    }
    Ok(())
}

/// Upstream's `validAPIServerClientUsages`.
pub fn validate_apiserver_client(usages: &BTreeSet<String>) -> Result<(), String> {
    let mut client_auth = false;
    for u in usages {
        match u.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("invalid usage for client certificate: missing required client auth".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_req() -> CsrInfo {
        CsrInfo {
            common_name: "system:node:n1".into(),
            organizations: vec!["system:nodes".into()],
            ..Default::default()
        }
    }

    #[test]
    fn kubelet_client_rules() {
        let u = set(&["digital signature", "client auth"]);
        assert!(validate_kubelet_client(&node_req(), &u).is_ok());
        assert!(
            validate_kubelet_client(
                &node_req(),
                &set(&["digital signature", "key encipherment", "client auth"])
            )
            .is_ok()
        );
        assert!(validate_kubelet_client(&node_req(), &set(&["client auth"])).is_err());
        let mut r = node_req();
        r.organizations.push("system:masters".into());
        assert_eq!(
            validate_kubelet_client(&r, &u),
            Err("subject organization is not system:nodes".into())
        );
        let mut r = node_req();
        r.common_name = "admin".into();
        assert!(validate_kubelet_client(&r, &u).is_err());
        let mut r = node_req();
        r.dns_names.push("x".into());
        assert_eq!(
            validate_kubelet_client(&r, &u),
            Err("DNS subjectAltNames are not allowed".into())
        );
    }

    #[test]
    fn apiserver_client_and_serving_rules() {
        assert!(validate_apiserver_client(&set(&["client auth"])).is_ok());
        assert!(validate_apiserver_client(&set(&["digital signature"])).is_err());
        assert!(validate_apiserver_client(&set(&["client auth", "server auth"])).is_err());
        let mut r = node_req();
        let u = set(&["digital signature", "server auth"]);
        assert!(validate_kubelet_serving(&r, &u).is_err());
        r.dns_names.push("n1".into());
        assert!(validate_kubelet_serving(&r, &u).is_ok());
    }
}
