//! DefaultStorageClass and DefaultIngressClass: a new claim or Ingress that names no class gets
//! the cluster's default one (the class annotated as the default).

use k1s_apimachinery::ApiError;
use serde_json::{Value, json};

use super::{AdmissionRequest, Operation};

const DEFAULT_STORAGE_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
const BETA_DEFAULT_STORAGE_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";
const BETA_CLAIM_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
const DEFAULT_INGRESS_CLASS: &str = "ingressclass.kubernetes.io/is-default-class";
const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

fn annotation<'v>(obj: &'v Value, key: &str) -> Option<&'v Value> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
}

fn is_create_of(req: &AdmissionRequest<'_>, group: &str, resource: &str) -> bool {
    req.operation == Operation::Create && req.is(group, resource)
}

/// DefaultStorageClass: a claim without `storageClassName` (and without the beta annotation)
/// gets the default StorageClass; of several, the newest (then the first by name), as
/// upstream's GetDefaultClass.
pub async fn default_storage_class(
    req: &AdmissionRequest<'_>,
    claim: &mut Value,
) -> Result<(), ApiError> {
    if !is_create_of(req, "", "persistentvolumeclaims") {
        return Ok(());
    }
    let has_class = claim
        .pointer("/spec/storageClassName")
        .is_some_and(|c| !c.is_null())
        || annotation(claim, BETA_CLAIM_CLASS).is_some();
    if has_class {
        return Ok(());
    }
    let info = super::info("storage.k8s.io", "v1", "storageclasses")?;
    let mut defaults: Vec<(String, String)> = super::list_all(req.registry, info, None)
        .await?
        .iter()
        .filter(|sc| {
            [DEFAULT_STORAGE_CLASS, BETA_DEFAULT_STORAGE_CLASS]
                .iter()
                .any(|k| annotation(sc, k).and_then(Value::as_str) == Some("true"))
        })
        .map(|sc| {
            let field = |f: &str| {
                super::str_at(sc, &["metadata", f])
                    .unwrap_or("")
                    .to_string()
            };
            (field("creationTimestamp"), field("name"))
        })
        .collect();
    // Newest first (RFC 3339 times of one format sort as text), then by name.
    defaults.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    if let Some((_, name)) = defaults.first()
        && let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.insert("storageClassName".into(), json!(name));
    }
    Ok(())
}

/// DefaultIngressClass: an Ingress without `ingressClassName` or the `kubernetes.io/ingress.class`
/// annotation gets the default IngressClass; more than one default is an error, as upstream.
pub async fn default_ingress_class(
    req: &AdmissionRequest<'_>,
    ingress: &mut Value,
) -> Result<(), ApiError> {
    if !is_create_of(req, "networking.k8s.io", "ingresses") {
        return Ok(());
    }
    if ingress
        .pointer("/spec/ingressClassName")
        .is_some_and(|c| !c.is_null())
        || annotation(ingress, INGRESS_CLASS_ANNOTATION).is_some()
    {
        return Ok(());
    }
    let info = super::info("networking.k8s.io", "v1", "ingressclasses")?;
    let defaults: Vec<String> = super::list_all(req.registry, info, None)
        .await?
        .iter()
        .filter(|c| annotation(c, DEFAULT_INGRESS_CLASS).and_then(Value::as_str) == Some("true"))
        .filter_map(|c| super::str_at(c, &["metadata", "name"]).map(str::to_string))
        .collect();
    match defaults.as_slice() {
        [] => Ok(()),
        [name] => {
            if let Some(spec) = ingress.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("ingressClassName".into(), json!(name));
            }
            Ok(())
        }
        many => {
            // Upstream wraps an InternalError in NewForbidden: a 403 with the internal text.
            let err = ApiError::internal(format!(
                "{} default IngressClasses were found, only 1 allowed",
                many.len()
            ));
            Err(req.forbidden(Some(ingress), err.message))
        }
    }
}
