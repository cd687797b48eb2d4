//! Built-in admission plugins, those kube-apiserver 1.33 enables by default (and kubeadm's
//! NodeRestriction), run in upstream's order. Mutating: NamespaceLifecycle, LimitRanger,
//! ServiceAccount, TaintNodesByCondition, Priority, DefaultTolerationSeconds,
//! DefaultStorageClass, StorageObjectInUseProtection, RuntimeClass, DefaultIngressClass.
//! Validating: NodeRestriction, NamespaceLifecycle, LimitRanger, PodSecurity, Priority,
//! PersistentVolumeClaimResize, RuntimeClass, CertificateApproval, CertificateSigning,
//! CertificateSubjectRestriction, ResourceQuota.
//!
//! The request path calls [`mutate`] after defaulting and [`validate`] after the strategy's
//! validation; when the write then fails, it calls [`Admitted::rollback`] to undo quota charges.
//! Plugins leave warnings and audit annotations in the request's [`RequestNotes`].

mod certificates;
mod classes;
mod lifecycle;
mod limitranger;
mod noderestriction;
mod nodetaint;
pub mod podsecurity;
/// The exact resource quantity lives in apimachinery (the quota controller shares it).
pub use k1s_apimachinery::quantity;
mod quota;
mod runtimeclass;
mod serviceaccount;
mod simple;
mod storage;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_quota;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k1s_apimachinery::ApiError;
use k1s_apimachinery::catalog::{self, ResourceInfo};
use serde_json::Value;

use crate::auth::UserInfo;
use crate::auth::rbac::RbacAuthorizer;
use crate::registry::{ListQuery, Registry, Target};

pub use quantity::Quantity;

/// The operation a write performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// What admission sees of a request.
pub struct AdmissionRequest<'a> {
    pub registry: &'a Registry,
    pub user: &'a UserInfo,
    /// For the plugins that ask what the user may do (the CSR signer checks).
    pub authorizer: &'a RbacAuthorizer,
    pub operation: Operation,
    /// What is being written.
    pub info: &'static ResourceInfo,
    pub subresource: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub dry_run: bool,
    /// Where plugins leave warnings and audit annotations (shared by the request's phases).
    pub notes: &'a RequestNotes,
}

/// What one request's admission leaves besides its verdict: `Warning` headers for the client
/// and annotations for the audit event (from plugins, policies and webhooks alike, kept even
/// when the request is refused), and the request's namespace, read once for every plugin.
#[derive(Default)]
pub struct RequestNotes {
    warnings: Mutex<Vec<String>>,
    audit_annotations: Mutex<BTreeMap<String, String>>,
    namespace: tokio::sync::OnceCell<Option<Arc<Value>>>,
}

impl RequestNotes {
    pub fn warn(&self, more: impl IntoIterator<Item = String>) {
        if let Ok(mut w) = self.warnings.lock() {
            w.extend(more);
        }
    }

    pub fn annotate(&self, more: impl IntoIterator<Item = (String, String)>) {
        if let Ok(mut a) = self.audit_annotations.lock() {
            a.extend(more);
        }
    }

    pub fn take_warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }

    pub fn take_audit_annotations(&self) -> BTreeMap<String, String> {
        self.audit_annotations
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default()
    }
}

impl AdmissionRequest<'_> {
    /// Adds a `Warning` header to the response.
    fn warn(&self, warning: String) {
        self.notes.warn([warning]);
    }

    /// Adds an annotation to the request's audit event.
    fn audit_annotation(&self, key: &str, value: String) {
        self.notes.annotate([(key.to_string(), value)]);
    }

    /// The request's Namespace object (None when it does not exist or the request has no
    /// namespace), read once per request: a pod create needs it in several plugins.
    async fn namespace_object(&self) -> Result<Option<Arc<Value>>, ApiError> {
        let ns = self.namespace();
        if ns.is_empty() {
            return Ok(None);
        }
        self.notes
            .namespace
            .get_or_try_init(|| self.registry.namespace(ns))
            .await
            .cloned()
    }

    /// A write of the main resource (no subresource) of `group`/`resource`.
    fn is(&self, group: &str, resource: &str) -> bool {
        self.subresource.is_none_or(str::is_empty)
            && self.info.group == group
            && self.info.resource == resource
    }

    fn is_pod_create(&self) -> bool {
        self.operation == Operation::Create && self.is("", "pods")
    }

    fn namespace(&self) -> &str {
        self.namespace
            .filter(|_| self.info.namespaced)
            .unwrap_or("")
    }

    /// Upstream's `admission.NewForbidden`: the resource without its subresource, and the
    /// object's name (or generateName, or `Unknown`).
    fn forbidden(&self, obj: Option<&Value>, err: impl std::fmt::Display) -> ApiError {
        let gr = self.info.group_resource();
        let meta = obj.and_then(|o| o.get("metadata"));
        let field = |f: &str| {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let name = field("name")
            .or_else(|| field("generateName"))
            .or(Some(self.name).filter(|n| !n.is_empty()))
            .unwrap_or("Unknown");
        ApiError::forbidden(&gr, name, err)
    }
}

/// Side effects of a successful validation that a failed write must undo.
#[derive(Debug, Default)]
#[must_use]
pub struct Admitted {
    charges: Vec<quota::Charge>,
}

impl Admitted {
    /// Undoes the quota charges of this admission (best effort; failures are logged).
    pub async fn rollback(self, registry: &Registry) {
        quota::rollback(registry, self.charges).await;
    }

    /// Whether admission left side effects behind.
    pub fn is_empty(&self) -> bool {
        self.charges.is_empty()
    }
}

/// Built-in mutating admission, in upstream's order.
pub async fn mutate(
    req: &AdmissionRequest<'_>,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    lifecycle::admit(req, Some(&*obj)).await?;
    limitranger::admit(req, obj).await?;
    serviceaccount::admit(req, obj).await?;
    nodetaint::taint_new_node(req, obj);
    simple::priority(req, obj, old).await?;
    simple::default_toleration_seconds(req, obj);
    classes::default_storage_class(req, obj).await?;
    storage::protect_in_use(req, obj);
    runtimeclass::admit(req, obj).await?;
    classes::default_ingress_class(req, obj).await?;
    Ok(())
}

/// Built-in validating admission, in upstream's order.
pub async fn validate(
    req: &AdmissionRequest<'_>,
    obj: &Value,
    old: Option<&Value>,
) -> Result<Admitted, ApiError> {
    noderestriction::admit(req, obj, old)?;
    // Creates met NamespaceLifecycle in `mutate` already (it always runs first); deletes of
    // the system namespaces are refused here.
    if req.operation == Operation::Delete {
        lifecycle::admit(req, None).await?;
    }
    limitranger::validate(req, obj).await?;
    podsecurity::validate(req, obj, old).await?;
    simple::validate_priority_class(req, obj).await?;
    storage::validate_resize(req, obj, old).await?;
    runtimeclass::validate(req, obj).await?;
    certificates::validate_approval(req, obj, old)?;
    certificates::validate_signing(req, obj, old)?;
    certificates::validate_subject(req, obj)?;
    let charges = quota::admit(req, obj, old).await?;
    Ok(Admitted { charges })
}

/// A catalog entry that must exist.
fn info(group: &str, version: &str, resource: &str) -> Result<&'static ResourceInfo, ApiError> {
    catalog::find(group, version, resource)
        .ok_or_else(|| ApiError::internal(format!("resource {resource} missing from the catalog")))
}

/// Every object of a resource in a namespace (or cluster-wide).
async fn list_all(
    registry: &Registry,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    let target = Target { info, namespace };
    Ok(registry.list(target, &ListQuery::default()).await?.items)
}

/// A string field at a dotted path.
fn str_at<'v>(obj: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter()
        .try_fold(obj, |cur, p| cur.get(*p))
        .and_then(Value::as_str)
}

/// The containers (`spec.containers` then `spec.initContainers`) of a pod, mutable.
fn containers_mut<'v>(pod: &'v mut Value, field: &str) -> Vec<&'v mut Value> {
    pod.get_mut("spec")
        .and_then(|s| s.get_mut(field))
        .and_then(Value::as_array_mut)
        .map(|a| a.iter_mut().collect())
        .unwrap_or_default()
}

fn containers<'v>(pod: &'v Value, field: &str) -> &'v [Value] {
    pod.get("spec")
        .and_then(|s| s.get(field))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}
