//! NamespaceLifecycle: the system namespaces cannot be deleted, and namespaced content can only
//! be created in a namespace that exists and is not terminating.

use k1s_apimachinery::status::StatusCause;
use k1s_apimachinery::{ApiError, GroupResource};
use serde_json::Value;

use super::{AdmissionRequest, Operation};

/// The namespaces upstream never lets go of.
pub const IMMORTAL_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

pub async fn admit(req: &AdmissionRequest<'_>, obj: Option<&Value>) -> Result<(), ApiError> {
    if req.operation == Operation::Delete
        && req.is("", "namespaces")
        && IMMORTAL_NAMESPACES.contains(&req.name)
    {
        return Err(ApiError::forbidden(
            &req.info.group_resource(),
            req.name,
            "this namespace may not be deleted",
        ));
    }
    if req.operation != Operation::Create || !req.info.namespaced {
        return Ok(());
    }
    let ns = req.namespace();
    if ns.is_empty() {
        return Ok(());
    }
    // Access reviews are answered in any namespace, existing or not.
    if req.info.group == "authorization.k8s.io" && req.info.resource == "localsubjectaccessreviews"
    {
        return Ok(());
    }
    let Some(namespace) = req.namespace_object().await? else {
        return Err(ApiError::not_found(&GroupResource::core("namespaces"), ns));
    };
    let terminating = super::str_at(&namespace, &["status", "phase"]) == Some("Terminating")
        || namespace
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null());
    if terminating {
        return Err(req
            .forbidden(
                obj,
                format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            )
            .with_cause(StatusCause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {ns} is being terminated"),
                field: "metadata.namespace".into(),
            }));
    }
    Ok(())
}
