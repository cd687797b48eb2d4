//! StorageObjectInUseProtection (new PersistentVolumes and claims get the protection finalizer
//! that the pv- and pvc-protection controllers remove once nothing uses them) and
//! PersistentVolumeClaimResize (a claim grows only when bound and its StorageClass allows it).

use k1s_apimachinery::ApiError;
use k1s_apimachinery::quantity::Quantity;
use serde_json::{Value, json};

use super::{AdmissionRequest, Operation};
use crate::registry::Target;

pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";

/// StorageObjectInUseProtection: appends the protection finalizer on create.
pub fn protect_in_use(req: &AdmissionRequest<'_>, obj: &mut Value) {
    if req.operation != Operation::Create {
        return;
    }
    let finalizer = if req.is("", "persistentvolumes") {
        PV_PROTECTION_FINALIZER
    } else if req.is("", "persistentvolumeclaims") {
        PVC_PROTECTION_FINALIZER
    } else {
        return;
    };
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
    if !finalizers.is_array() {
        *finalizers = json!([]);
    }
    if let Some(list) = finalizers.as_array_mut()
        && !list.iter().any(|f| f == finalizer)
    {
        list.push(json!(finalizer));
    }
}

fn storage_request(claim: &Value) -> Option<Quantity> {
    claim
        .pointer("/spec/resources/requests/storage")
        .and_then(Value::as_str)
        .and_then(Quantity::parse)
}

/// The claim's class: `spec.storageClassName`, else the beta annotation (upstream's
/// GetPersistentVolumeClaimClass).
fn claim_class(claim: &Value) -> &str {
    claim
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .or_else(|| {
            claim
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
        })
        .unwrap_or("")
}

/// PersistentVolumeClaimResize: an update that grows `requests.storage` needs a bound claim
/// whose StorageClass (unchanged) sets `allowVolumeExpansion: true`.
pub async fn validate_resize(
    req: &AdmissionRequest<'_>,
    claim: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if req.operation != Operation::Update || !req.is("", "persistentvolumeclaims") {
        return Ok(());
    }
    let Some(old) = old else {
        return Ok(());
    };
    let grows = match (storage_request(claim), storage_request(old)) {
        (Some(new), Some(before)) => new > before,
        (Some(_), None) => true,
        _ => false,
    };
    if !grows {
        return Ok(());
    }
    if old.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
        return Err(req.forbidden(
            Some(claim),
            "Only bound persistent volume claims can be expanded",
        ));
    }
    let (class, old_class) = (claim_class(claim), claim_class(old));
    let mut allowed = false;
    if !class.is_empty() && class == old_class {
        let info = super::info("storage.k8s.io", "v1", "storageclasses")?;
        let target = Target {
            info,
            namespace: None,
        };
        if let Ok(sc) = req.registry.get(target, class).await {
            allowed = sc.get("allowVolumeExpansion").and_then(Value::as_bool) == Some(true);
        }
    }
    if !allowed {
        return Err(req.forbidden(
            Some(claim),
            "only dynamically provisioned pvc can be resized and the storageclass that \
             provisions the pvc must support resize",
        ));
    }
    Ok(())
}
