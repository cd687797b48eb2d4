//! ServiceAccount: new Pods run as `default` unless they name a service account, which must
//! exist; the account's token, the cluster CA and the namespace are mounted as the projected
//! `kube-api-access-<random>` volume at /var/run/secrets/kubernetes.io/serviceaccount, unless
//! automounting is switched off on the pod or the account.

use k1s_apimachinery::ApiError;
use serde_json::{Map, Value, json};

use super::AdmissionRequest;
use crate::registry::Target;

pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
pub const VOLUME_PREFIX: &str = "kube-api-access-";
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The projected volume source upstream mounts (`TokenVolumeSource`).
pub fn token_volume_source() -> Value {
    json!({
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]
    })
}

/// `base` plus five random characters, as upstream's name generator.
fn generate_name(base: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    format!("{base}{suffix}")
}

pub async fn admit(req: &AdmissionRequest<'_>, pod: &mut Value) -> Result<(), ApiError> {
    if !req.is_pod_create() {
        return Ok(());
    }
    if pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_POD_ANNOTATION))
        .is_some()
    {
        return Ok(());
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let sa_name = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => {
            spec.insert(
                "serviceAccountName".into(),
                Value::String(DEFAULT_SERVICE_ACCOUNT.into()),
            );
            DEFAULT_SERVICE_ACCOUNT.to_string()
        }
    };
    let ns = req.namespace();
    let info = super::info("", "v1", "serviceaccounts")?;
    // The `default` account is created as its namespace appears (by the serviceaccount
    // controller); give a pod created right after its namespace a moment for it.
    let target = Target {
        info,
        namespace: Some(ns),
    };
    let mut found = req.registry.get(target, &sa_name).await;
    for _ in 0..40 {
        match &found {
            Err(e) if e.is_not_found() && sa_name == DEFAULT_SERVICE_ACCOUNT => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                found = req.registry.get(target, &sa_name).await;
            }
            _ => break,
        }
    }
    let sa = match found {
        Ok(sa) => sa,
        Err(e) => {
            let detail = if e.is_not_found() {
                format!("serviceaccount \"{sa_name}\" not found")
            } else {
                e.message.clone()
            };
            return Err(req.forbidden(
                Some(pod),
                format!("error looking up service account {ns}/{sa_name}: {detail}"),
            ));
        }
    };
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let automount = match spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
    {
        Some(b) => b,
        None => sa
            .get("automountServiceAccountToken")
            .and_then(Value::as_bool)
            .unwrap_or(true),
    };
    if automount {
        mount_token(spec);
    }
    // The account's image pull secrets apply when the pod names none.
    let pod_has_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !pod_has_secrets
        && let Some(secrets) = sa
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
    {
        spec.insert("imagePullSecrets".into(), Value::Array(secrets.clone()));
    }
    Ok(())
}

fn mount_token(spec: &mut Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_string);
    let has_volume = existing.is_some();
    let volume_name = existing.unwrap_or_else(|| generate_name(VOLUME_PREFIX));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needs_volume = false;
    for field in ["initContainers", "containers"] {
        let Some(list) = spec.get_mut(field).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            if !mounts.is_array() {
                *mounts = Value::Array(Vec::new());
            }
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            let mounted = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH));
            if !mounted {
                mounts.push(mount.clone());
                needs_volume = true;
            }
        }
    }
    if needs_volume && !has_volume {
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if !volumes.is_array() {
            *volumes = Value::Array(Vec::new());
        }
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({"name": volume_name, "projected": token_volume_source()}));
        }
    }
}
