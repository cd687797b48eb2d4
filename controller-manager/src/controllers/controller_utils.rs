//! Helpers shared by the workload controllers, as upstream's `pkg/controller/controller_utils.go`
//! and `controller_ref_manager.go`: pod states (active, ready, available), controller
//! references, pods made from a template, and claiming (adopting and releasing) children by
//! selector through strategic-merge patches with a UID precondition.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::controller::is_not_found;
use crate::controllers::history::{fnv1a_32, safe_encode};
use crate::controllers::selector_matches;

/// Upstream's IsPodActive: not finished and not being deleted.
pub fn is_pod_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    phase != Some("Succeeded")
        && phase != Some("Failed")
        && pod.metadata.deletion_timestamp.is_none()
}

/// Whether the pod is being deleted.
pub fn is_pod_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// The pod's condition of `type_`, if reported.
pub fn pod_condition<'a>(
    pod: &'a Pod,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Upstream's IsPodReady: the `Ready` condition is `True`.
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod_condition(pod, "Ready").is_some_and(|c| c.status == "True")
}

/// Upstream's IsPodAvailable: ready for at least `min_ready_seconds` at `now`.
pub fn is_pod_available(pod: &Pod, min_ready_seconds: i32, now: jiff::Timestamp) -> bool {
    let Some(ready) = pod_condition(pod, "Ready").filter(|c| c.status == "True") else {
        return false;
    };
    if min_ready_seconds <= 0 {
        return true;
    }
    match &ready.last_transition_time {
        Some(t) => {
            t.0.checked_add(jiff::SignedDuration::from_secs(i64::from(
                min_ready_seconds,
            )))
            .is_ok_and(|at| at <= now)
        }
        None => false,
    }
}

/// The object's controller reference (the owner reference with `controller: true`).
pub fn controller_ref(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// A controller reference to `owner` (`controller` and `blockOwnerDeletion` true, as upstream's
/// NewControllerRef).
pub fn new_controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.name_any(),
        uid: owner.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A pod as upstream's GetPodFromTemplate makes it: the template's labels, annotations,
/// finalizers and spec, `generateName` `<prefix>-` (when `prefix` is set), and the controller
/// reference.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    generate_name_prefix: Option<&str>,
    controller: Option<OwnerReference>,
) -> Pod {
    let tmeta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            namespace: Some(namespace.to_string()),
            generate_name: generate_name_prefix.map(|p| format!("{p}-")),
            labels: tmeta.labels,
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: controller.map(|r| vec![r]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Claims (namespaced) children for `owner` as upstream's ControllerRefManager: children it controls that
/// still match stay; orphans that match are adopted (unless the owner is being deleted);
/// children it controls that no longer match are released. Returns the claimed children.
/// Adoption and release are strategic-merge patches carrying the child's UID, so a child
/// replaced under the same name is never touched.
pub async fn claim<K>(
    client: &Client,
    owner_meta: &ObjectMeta,
    owner_ref: &OwnerReference,
    selector: Option<&LabelSelector>,
    candidates: Vec<Arc<K>>,
) -> Result<Vec<Arc<K>>, kube::Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let mut claimed = Vec::new();
    let owner_deleting = owner_meta.deletion_timestamp.is_some();
    // Asked of the API once, before the first adoption.
    let mut can_adopt: Option<bool> = None;
    for child in candidates {
        let meta = child.meta();
        let matches = selector_matches(selector, meta.labels.as_ref());
        match controller_ref(meta) {
            Some(r) if r.uid == owner_ref.uid => {
                if matches {
                    claimed.push(child);
                } else if !owner_deleting {
                    release(client, child.as_ref(), &owner_ref.uid).await?;
                }
            }
            Some(_) => {}
            None => {
                if matches && !owner_deleting && meta.deletion_timestamp.is_none() {
                    if can_adopt.is_none() {
                        can_adopt = Some(owner_still_adopts(client, owner_meta, owner_ref).await?);
                    }
                    if can_adopt != Some(true) {
                        continue;
                    }
                    match adopt(client, child.as_ref(), owner_ref).await {
                        Ok(adopted) => claimed.push(Arc::new(adopted)),
                        // Gone or replaced meanwhile: not ours to claim.
                        Err(e) if is_not_found(&e) || is_invalid_or_conflict(&e) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
    Ok(claimed)
}

fn is_invalid_or_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409 || s.code == 422)
}

fn child_api<K>(client: &Client, child: &K) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    Api::namespaced(
        client.clone(),
        child.meta().namespace.as_deref().unwrap_or_default(),
    )
}

/// Upstream's RecheckDeletionTimestamp: before adopting, the owner is read from the API, not the
/// cache. One that is being deleted (or was replaced) adopts nothing: the garbage collector
/// may be orphaning its children at this very moment, and a child adopted again would be
/// deleted with it.
async fn owner_still_adopts(
    client: &Client,
    owner_meta: &ObjectMeta,
    owner_ref: &OwnerReference,
) -> Result<bool, kube::Error> {
    let (group, version) = owner_ref
        .api_version
        .split_once('/')
        .unwrap_or(("", owner_ref.api_version.as_str()));
    let gvk = GroupVersionKind::gvk(group, version, &owner_ref.kind);
    // Every kind that adopts (ReplicaSet, ReplicationController, StatefulSet, DaemonSet,
    // Deployment, Job) has the plain plural.
    let plural = format!("{}s", owner_ref.kind.to_lowercase());
    let resource = ApiResource::from_gvk_with_plural(&gvk, &plural);
    let ns = owner_meta.namespace.as_deref().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    Ok(api.get_opt(&owner_ref.name).await?.is_some_and(|fresh| {
        fresh.metadata.uid == owner_meta.uid && fresh.metadata.deletion_timestamp.is_none()
    }))
}

/// Adds `owner_ref` as the child's controller reference.
pub async fn adopt<K>(
    client: &Client,
    child: &K,
    owner_ref: &OwnerReference,
) -> Result<K, kube::Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let patch = serde_json::json!({
        "metadata": {"ownerReferences": [owner_ref], "uid": child.meta().uid}
    });
    child_api(client, child)
        .patch(
            &child.name_any(),
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
}

/// Removes the owner reference with `owner_uid` from the child (a child already gone or
/// replaced is fine).
pub async fn release<K>(client: &Client, child: &K, owner_uid: &str) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let patch = serde_json::json!({
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
            "uid": child.meta().uid,
        }
    });
    match child_api(client, child)
        .patch(
            &child.name_any(),
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) || is_invalid_or_conflict(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Labels as a `k=v,k2=v2` selector string (for list calls and messages).
pub fn labels_string(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Upstream's ComputeHash (the `pod-template-hash`, DaemonSet revision names): FNV-1a over
/// go-spew's printing of the Go template, then the collision count as four little-endian bytes
/// padded to eight, the decimal sum in SafeEncodeString's alphabet.
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let json = serde_json::to_value(template).unwrap_or_default();
    let mut bytes = crate::deephash::spew(crate::deephash::POD_TEMPLATE_SPEC, &json).into_bytes();
    if let Some(c) = collision_count {
        let mut padded = [0u8; 8];
        padded[..4].copy_from_slice(&c.to_le_bytes());
        bytes.extend_from_slice(&padded);
    }
    safe_encode(&fnv1a_32(&bytes).to_string())
}

/// Whether the object carries `finalizer`.
pub fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

/// Adds `finalizer` to the object (`hold`) or removes it, when it is not so already, by an update
/// of the object as read: its resourceVersion makes a concurrent change a Conflict, not a lost
/// write (upstream's controllers update, and their roles grant `update`, not `patch`). An object
/// already gone is fine.
pub async fn hold_finalizer<K>(
    api: &Api<K>,
    obj: &K,
    finalizer: &str,
    hold: bool,
) -> Result<(), kube::Error>
where
    K: Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if has_finalizer(obj.meta(), finalizer) == hold {
        return Ok(());
    }
    let mut updated = obj.clone();
    let finalizers = updated.meta_mut().finalizers.get_or_insert_with(Vec::new);
    if hold {
        finalizers.push(finalizer.to_string());
    } else {
        finalizers.retain(|f| f != finalizer);
    }
    let name = obj.meta().name.clone().unwrap_or_default();
    match api
        .replace(&name, &kube::api::PostParams::default(), &updated)
        .await
    {
        Err(e) if crate::controller::is_not_found(&e) => Ok(()),
        other => other.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn pod(phase: &str, ready: Option<(&str, jiff::Timestamp)>) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: ready.map(|(s, at)| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: s.into(),
                        last_transition_time: Some(Time(at)),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn pod_states() {
        let now = jiff::Timestamp::now();
        let ten_ago = now - jiff::SignedDuration::from_secs(10);
        assert!(is_pod_active(&pod("Running", None)));
        assert!(is_pod_active(&pod("Pending", None)));
        assert!(!is_pod_active(&pod("Succeeded", None)));
        assert!(!is_pod_active(&pod("Failed", None)));
        assert!(!is_pod_ready(&pod("Running", Some(("False", ten_ago)))));
        assert!(is_pod_ready(&pod("Running", Some(("True", ten_ago)))));
        let ready = pod("Running", Some(("True", ten_ago)));
        assert!(is_pod_available(&ready, 0, now));
        assert!(is_pod_available(&ready, 10, now));
        assert!(!is_pod_available(&ready, 11, now));
        assert!(!is_pod_available(&pod("Running", None), 0, now));
    }

    #[test]
    fn a_pod_from_a_template_carries_its_labels_and_controller() {
        let template: PodTemplateSpec = serde_json::from_value(serde_json::json!({
            "metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}, "name": "ignored"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        }))
        .expect("template");
        let owner = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web-1".into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let p = pod_from_template(&template, "ns", Some("web-1"), Some(owner));
        assert_eq!(p.metadata.generate_name.as_deref(), Some("web-1-"));
        assert_eq!(p.metadata.name, None);
        assert_eq!(p.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(p.labels().get("app").map(String::as_str), Some("web"));
        assert_eq!(
            controller_ref(&p.metadata).map(|r| r.uid.as_str()),
            Some("u1")
        );
    }

    #[test]
    fn template_hashes_equal_kube_controller_managers() {
        // (template, collision count, hash) as upstream's ComputeHash gives them (1.33 types).
        let cases: [(&str, Option<i32>, &str); 12] = [
            (NGINX, None, "647677fc66"),
            (NGINX, Some(1), "7879bf67f9"),
            (NGINX, Some(i32::MAX), "86dddf996b"),
            (PROBES, None, "8588b868ff"),
            (PROBES, Some(1), "8798494"),
            (PROBES, Some(i32::MAX), "6ffccbb587"),
            (EVERY_FIELD, None, "546f5cc4df"),
            (EVERY_FIELD, Some(1), "cdd4b5f96"),
            (EVERY_FIELD, Some(i32::MAX), "7495bfb7d5"),
            (QUANTITIES, None, "5c6c669b89"),
            (QUANTITIES, Some(1), "6c4c6445c6"),
            (QUANTITIES, Some(i32::MAX), "7657455b69"),
        ];
        for (json, collision, hash) in cases {
            let template: PodTemplateSpec = serde_json::from_str(json).expect("template");
            assert_eq!(compute_hash(&template, collision), hash, "{json}");
        }
    }

    const NGINX: &str = include_str!("../deephash/testdata/nginx.json");
    const PROBES: &str = include_str!("../deephash/testdata/probes-and-resources.json");
    const EVERY_FIELD: &str = include_str!("../deephash/testdata/every-field.json");
    const QUANTITIES: &str = include_str!("../deephash/testdata/non-canonical-quantities.json");
}
