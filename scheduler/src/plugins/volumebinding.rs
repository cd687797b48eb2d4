//! The VolumeBinding plugin's PreFilter (upstream `framework/plugins/volumebinding`): a pod
//! waits while a claim it names is missing, being deleted, or not its own (a generic ephemeral
//! volume's claim).
//!
//! **Deviation:** upstream also holds a pod back while a claim with Immediate binding is unbound
//! (`pod has unbound immediate PersistentVolumeClaims`). k1s ships no volume provisioner, so
//! claims that no static volume satisfies never bind; its simulated nodes mount nothing, so
//! such pods are scheduled and run, as StatefulSets with claim templates need.
//! [`unbound_immediate`] says when upstream would wait.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;

/// What the plugin reads: the claims and classes of the informers.
pub trait VolumeLookup {
    fn claim(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<PersistentVolumeClaim>>;
    fn class(&self, name: &str) -> Option<std::sync::Arc<StorageClass>>;
}

/// The claims' verdict: `Err` carries upstream's PreFilter message.
pub fn prefilter(pod: &Pod, lookup: &dyn VolumeLookup) -> Result<(), String> {
    let Some(volumes) = pod.spec.as_ref().and_then(|s| s.volumes.as_ref()) else {
        return Ok(());
    };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    for volume in volumes {
        let (name, ephemeral) = if let Some(c) = &volume.persistent_volume_claim {
            (c.claim_name.clone(), false)
        } else if volume.ephemeral.is_some() {
            (format!("{pod_name}-{}", volume.name), true)
        } else {
            continue;
        };
        let Some(claim) = lookup.claim(namespace, &name) else {
            return Err(format!("persistentvolumeclaim \"{name}\" not found"));
        };
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
        }
        if ephemeral {
            let owned =
                claim.metadata.owner_references.iter().flatten().any(|r| {
                    r.controller == Some(true) && Some(&r.uid) == pod.metadata.uid.as_ref()
                });
            if !owned {
                return Err(format!(
                    "PVC {namespace}/{name} was not created for pod {namespace}/{pod_name} (pod \
                     is not owner)"
                ));
            }
        }
    }
    Ok(())
}

/// Whether upstream would hold the pod back for this claim: unbound, with Immediate binding (a
/// class that binds on the first consumer, `WaitForFirstConsumer`, follows the placement).
pub fn unbound_immediate(claim: &PersistentVolumeClaim, lookup: &dyn VolumeLookup) -> bool {
    let spec = claim.spec.as_ref();
    let bound = spec
        .and_then(|s| s.volume_name.as_deref())
        .is_some_and(|v| !v.is_empty());
    let class = spec
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default();
    let delayed = !class.is_empty()
        && lookup
            .class(class)
            .is_some_and(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"));
    !bound && !delayed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;

    #[derive(Default)]
    struct Lookup {
        claims: BTreeMap<String, Arc<PersistentVolumeClaim>>,
        classes: BTreeMap<String, Arc<StorageClass>>,
    }

    impl VolumeLookup for Lookup {
        fn claim(&self, _: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
            self.claims.get(name).cloned()
        }
        fn class(&self, name: &str) -> Option<Arc<StorageClass>> {
            self.classes.get(name).cloned()
        }
    }

    fn claim(name: &str, class: &str, volume: Option<&str>) -> Arc<PersistentVolumeClaim> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"storageClassName": class, "volumeName": volume},
            }))
            .unwrap(),
        )
    }

    fn pod(claims: &[&str]) -> Pod {
        let volumes: Vec<_> = claims
            .iter()
            .map(|c| serde_json::json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [], "volumes": volumes},
        }))
        .unwrap()
    }

    #[test]
    fn claims_hold_a_pod_back_as_upstreams_prefilter() {
        let mut lookup = Lookup::default();
        lookup
            .claims
            .insert("bound".into(), claim("bound", "", Some("pv")));
        lookup
            .claims
            .insert("waiting".into(), claim("waiting", "", None));
        lookup
            .claims
            .insert("late".into(), claim("late", "wffc", None));
        lookup.classes.insert(
            "wffc".into(),
            Arc::new(
                serde_json::from_value(serde_json::json!({
                    "metadata": {"name": "wffc"}, "provisioner": "x",
                    "volumeBindingMode": "WaitForFirstConsumer",
                }))
                .unwrap(),
            ),
        );
        assert_eq!(
            prefilter(&pod(&["bound", "late", "waiting"]), &lookup),
            Ok(())
        );
        let immediate = |name: &str| unbound_immediate(&lookup.claims[name], &lookup);
        assert!(immediate("waiting"));
        assert!(!immediate("bound") && !immediate("late"));
        assert_eq!(
            prefilter(&pod(&["waiting", "gone"]), &lookup),
            Err("persistentvolumeclaim \"gone\" not found".to_string())
        );
    }
}
