//! The default ServiceCIDR `kubernetes` and the `kubernetes` Service's IPAddress, as upstream's
//! `defaultservicecidr` controller keeps them: created when missing with the cluster's service
//! range and marked `Ready=True` when no Ready condition says otherwise; an existing one with
//! other CIDRs is left alone (and reported), as upstream leaves it to the administrator.

use k1s_apimachinery::ApiError;
use serde_json::{Value, json};

use crate::allocator::{self, Range};
use crate::bootstrap::target;
use crate::registry::{Registry, now_rfc3339};

/// The name of the default ServiceCIDR.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";
const READY_MESSAGE: &str = "Kubernetes default Service CIDR is ready";

/// The Ready condition upstream's controller applies (no reason: its apply leaves it empty).
fn ready_condition() -> Value {
    json!({ "type": "Ready", "status": "True", "reason": "",
        "message": READY_MESSAGE, "lastTransitionTime": now_rfc3339() })
}

/// The default ServiceCIDR as first created.
pub fn default_service_cidr(range: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
        "metadata": { "name": DEFAULT_SERVICE_CIDR },
        "spec": { "cidrs": [range] },
        "status": { "conditions": [ready_condition()] }
    })
}

/// What the status of an existing default ServiceCIDR needs: `Some(status)` to write.
fn status_to_write(current: &Value, range: &str) -> Option<Value> {
    if current.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    if current.pointer("/spec/cidrs") != Some(&json!([range])) {
        let cidrs = current.pointer("/spec/cidrs").cloned().unwrap_or_default();
        tracing::warn!(
            %cidrs,
            expected = range,
            "the default ServiceCIDR does not match this server's service range; delete it or change it back"
        );
        return None;
    }
    let conditions = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ready = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    // True stays; False is an administrator's matter and is not overwritten.
    if ready.is_some_and(|c| c.get("status").and_then(Value::as_str) != Some("Unknown")) {
        return None;
    }
    let mut rest: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some("Ready"))
        .collect();
    rest.push(ready_condition());
    Some(json!({ "conditions": rest }))
}

/// Creates or readies the default ServiceCIDR and the IPAddress of `kubernetes_ip`.
pub async fn ensure(registry: &Registry, range: &Range) -> Result<(), ApiError> {
    let kubernetes_ip = range.kubernetes_ip().to_string();
    let t = target("networking.k8s.io", "servicecidrs", None)?;
    for _ in 0..10 {
        let written = match registry.get(t, DEFAULT_SERVICE_CIDR).await {
            Ok(current) => match status_to_write(&current, range.text()) {
                Some(status) => {
                    let mut next = current;
                    next["status"] = status;
                    registry.put_raw(t, &next).await.map(|_| ())
                }
                None => Ok(()),
            },
            Err(e) if e.is_not_found() => {
                let mut obj = default_service_cidr(range.text());
                obj["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
                obj["metadata"]["creationTimestamp"] = json!(now_rfc3339());
                registry.put_raw(t, &obj).await.map(|_| ())
            }
            Err(e) => Err(e),
        };
        match written {
            // Another server sharing the store wrote first: look again.
            Err(e) if e.is_conflict() || e.is_already_exists() => continue,
            other => {
                other?;
                break;
            }
        }
    }
    match allocator::create_ip_address(registry, &kubernetes_ip, "default", "kubernetes").await {
        Err(e) if !e.is_already_exists() => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn default_service_cidr_is_valid_and_ready() {
        use crate::registry::Strategy;
        let obj = default_service_cidr(allocator::SERVICE_CIDR);
        assert!(
            crate::strategies::networking::ServiceCidrs
                .validate(&obj)
                .is_empty()
        );
        assert_eq!(obj["status"]["conditions"][0]["type"], "Ready");
        assert_eq!(obj["status"]["conditions"][0]["message"], READY_MESSAGE);
        // Already ready: nothing to write.
        assert!(status_to_write(&obj, allocator::SERVICE_CIDR).is_none());
    }

    #[test]
    fn status_is_written_only_when_missing_or_unknown() {
        let mut obj = default_service_cidr(allocator::SERVICE_CIDR);
        obj["status"] = json!({});
        assert_eq!(
            status_to_write(&obj, allocator::SERVICE_CIDR).unwrap()["conditions"][0]["status"],
            "True"
        );
        obj["status"] = json!({ "conditions": [{ "type": "Ready", "status": "Unknown" }] });
        let status = status_to_write(&obj, allocator::SERVICE_CIDR).unwrap();
        assert_eq!(status["conditions"].as_array().unwrap().len(), 1);
        assert_eq!(status["conditions"][0]["status"], "True");
        obj["status"] = json!({ "conditions": [{ "type": "Ready", "status": "False" }] });
        assert!(status_to_write(&obj, allocator::SERVICE_CIDR).is_none());
        // Another range: left to the administrator.
        let mut other = default_service_cidr(allocator::SERVICE_CIDR);
        other["spec"]["cidrs"] = json!(["10.0.0.0/24"]);
        other["status"] = json!({});
        assert!(status_to_write(&other, allocator::SERVICE_CIDR).is_none());
        // Being deleted: not touched.
        let mut deleting = default_service_cidr(allocator::SERVICE_CIDR);
        deleting["status"] = json!({});
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(status_to_write(&deleting, allocator::SERVICE_CIDR).is_none());
    }
}
