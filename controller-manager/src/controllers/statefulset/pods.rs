//! StatefulSet pod identity and storage (upstream `stateful_set_utils.go`): ordinals parsed
//! from names, pods made for an ordinal with their identity labels, hostname and subdomain,
//! claims named `<template>-<set>-<ordinal>`, and the claim owner references that express
//! `persistentVolumeClaimRetentionPolicy`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Resource, ResourceExt};

use crate::controllers::controller_utils::{new_controller_ref, pod_from_template};

/// `statefulset.kubernetes.io/pod-name`.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// `apps.kubernetes.io/pod-index` (PodIndexLabel, on by default).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// Upstream's getParentNameAndOrdinal on `(.*)-([0-9]+)$`: the parent name and the ordinal
/// (-1 when the name has no ordinal or it does not fit in 32 bits).
pub fn parent_and_ordinal(name: &str) -> (Option<&str>, i32) {
    match name.rsplit_once('-') {
        Some((parent, digits))
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (Some(parent), digits.parse::<i32>().unwrap_or(-1))
        }
        _ => (None, -1),
    }
}

/// The pod's ordinal, or -1.
pub fn get_ordinal(pod: &Pod) -> i32 {
    parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or_default()).1
}

/// Whether the pod's name makes it a member of the set.
pub fn is_member_of(set: &StatefulSet, pod: &Pod) -> bool {
    parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or_default()).0
        == set.metadata.name.as_deref()
}

/// `spec.ordinals.start` (0 by default).
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .unwrap_or(0)
}

fn end_ordinal(set: &StatefulSet) -> i32 {
    start_ordinal(set) + set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) - 1
}

/// Whether the pod's ordinal is within `[start, start + replicas)`.
pub fn pod_in_ordinal_range(pod: &Pod, set: &StatefulSet) -> bool {
    let o = get_ordinal(pod);
    o >= start_ordinal(set) && o <= end_ordinal(set)
}

pub fn pod_name(set: &StatefulSet, ordinal: i32) -> String {
    format!("{}-{ordinal}", set.name_any())
}

/// `<template>-<set>-<ordinal>`.
pub fn claim_name(set: &StatefulSet, template: &str, ordinal: i32) -> String {
    format!("{template}-{}-{ordinal}", set.name_any())
}

/// Upstream's identityMatches.
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let name = pod.name_any();
    let (parent, ordinal) = parent_and_ordinal(&name);
    let labels = pod.metadata.labels.as_ref();
    ordinal >= 0
        && parent == set.metadata.name.as_deref()
        && name == pod_name(set, ordinal)
        && pod.metadata.namespace == set.metadata.namespace
        && labels.and_then(|l| l.get(POD_NAME_LABEL)) == Some(&name)
}

/// Upstream's updateIdentity: name, namespace and the identity labels.
pub fn update_identity(set: &StatefulSet, pod: &mut Pod) {
    let ordinal = get_ordinal(pod);
    let name = pod_name(set, ordinal);
    pod.metadata.name = Some(name.clone());
    pod.metadata.namespace = set.metadata.namespace.clone();
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.into(), name);
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
}

/// Upstream's storageMatches: a volume per claim template pointing at the ordinal's claim.
pub fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let ordinal = get_ordinal(pod);
    if ordinal < 0 {
        return false;
    }
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .cloned()
        .unwrap_or_default();
    templates(set).iter().all(|t| {
        let want = claim_name(set, &t.name_any(), ordinal);
        volumes.iter().any(|v| {
            v.name == t.name_any()
                && v.persistent_volume_claim
                    .as_ref()
                    .is_some_and(|c| c.claim_name == want)
        })
    })
}

fn templates(set: &StatefulSet) -> Vec<PersistentVolumeClaim> {
    set.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.clone())
        .unwrap_or_default()
}

/// Upstream's getPersistentVolumeClaims: the pod's claims by template name, labelled with the
/// set's `matchLabels`.
pub fn claims_for_pod(set: &StatefulSet, pod: &Pod) -> BTreeMap<String, PersistentVolumeClaim> {
    let ordinal = get_ordinal(pod);
    let match_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    templates(set)
        .into_iter()
        .map(|t| {
            let template_name = t.name_any();
            let mut claim = t;
            claim.metadata.name = Some(claim_name(set, &template_name, ordinal));
            claim.metadata.namespace = set.metadata.namespace.clone();
            claim
                .metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .extend(match_labels.clone());
            claim.status = None;
            (template_name, claim)
        })
        .collect()
}

/// Upstream's updateStorage: the claim volumes first, then the pod's other volumes.
pub fn update_storage(set: &StatefulSet, pod: &mut Pod) {
    let claims = claims_for_pod(set, pod);
    let spec = pod.spec.get_or_insert_with(Default::default);
    let current = spec.volumes.take().unwrap_or_default();
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(name, claim)| Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.name_any(),
                read_only: Some(false),
            }),
            ..Default::default()
        })
        .collect();
    volumes.extend(
        current
            .into_iter()
            .filter(|v| !claims.contains_key(&v.name)),
    );
    spec.volumes = (!volumes.is_empty()).then_some(volumes);
}

/// Upstream's newStatefulSetPod: the template with the controller reference, `generateName`
/// `<set>-`, name `<set>-<ordinal>`, identity labels, hostname, subdomain and claim volumes.
pub fn new_stateful_set_pod(set: &StatefulSet, ordinal: i32) -> Pod {
    let template = set
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut pod = pod_from_template(
        &template,
        &set.namespace().unwrap_or_default(),
        Some(&set.name_any()),
        Some(new_controller_ref(set)),
    );
    pod.metadata.name = Some(pod_name(set, ordinal));
    update_identity(set, &mut pod);
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.hostname = Some(pod_name(set, ordinal));
    spec.subdomain = set
        .spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .filter(|s| !s.is_empty());
    update_storage(set, &mut pod);
    pod
}

/// `(whenScaled, whenDeleted)`, `Retain` by default.
pub fn retention_policy(set: &StatefulSet) -> (String, String) {
    let p = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    (
        p.and_then(|p| p.when_scaled.clone())
            .unwrap_or_else(|| "Retain".into()),
        p.and_then(|p| p.when_deleted.clone())
            .unwrap_or_else(|| "Retain".into()),
    )
}

fn matches_ref<K: Resource<DynamicType = ()>>(r: &OwnerReference, owner: &K) -> bool {
    r.name == owner.name_any() && r.api_version == K::api_version(&()) && r.kind == K::kind(&())
}

fn has_owner_ref<K: Resource<DynamicType = ()>>(claim: &PersistentVolumeClaim, owner: &K) -> bool {
    let uid = owner.meta().uid.clone().unwrap_or_default();
    !uid.is_empty() && claim.owner_references().iter().any(|r| r.uid == uid)
}

/// Upstream's hasUnexpectedController: under a deleting policy, a controller of the claim
/// other than this set or pod (or one of their names with another UID).
pub fn has_unexpected_controller(
    claim: &PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
) -> bool {
    let (scaled, deleted) = retention_policy(set);
    if scaled == "Retain" && deleted == "Retain" {
        return false;
    }
    for r in claim.owner_references() {
        if matches_ref(r, set) {
            if Some(r.uid.as_str()) != set.metadata.uid.as_deref() {
                return true;
            }
            continue;
        }
        if matches_ref(r, pod) {
            if Some(r.uid.as_str()) != pod.metadata.uid.as_deref() {
                return true;
            }
            continue;
        }
        if r.controller == Some(true) {
            return true;
        }
    }
    false
}

fn has_non_controller_owner(claim: &PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) -> bool {
    claim.owner_references().iter().any(|r| {
        (Some(r.uid.as_str()) == set.metadata.uid.as_deref()
            || Some(r.uid.as_str()) == pod.metadata.uid.as_deref())
            && r.controller != Some(true)
    })
}

/// Upstream's isClaimOwnerUpToDate.
pub fn claim_owner_up_to_date(claim: &PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) -> bool {
    if has_unexpected_controller(claim, set, pod) {
        return !(has_owner_ref(claim, set) || has_owner_ref(claim, pod));
    }
    if has_non_controller_owner(claim, set, pod) {
        return false;
    }
    let (scaled, deleted) = retention_policy(set);
    let scaled_down = !pod_in_ordinal_range(pod, set);
    let set_ref = has_owner_ref(claim, set);
    let pod_ref = has_owner_ref(claim, pod);
    match (scaled.as_str(), deleted.as_str()) {
        ("Retain", "Delete") => set_ref && !pod_ref,
        ("Delete", "Retain") => !set_ref && scaled_down == pod_ref,
        ("Delete", "Delete") => scaled_down != set_ref && scaled_down == pod_ref,
        _ => !set_ref && !pod_ref,
    }
}

fn add_controller_ref<K: Resource<DynamicType = ()>>(refs: &mut Vec<OwnerReference>, owner: &K) {
    let uid = owner.meta().uid.clone().unwrap_or_default();
    if !refs.iter().any(|r| r.uid == uid) {
        refs.push(new_controller_ref(owner));
    }
}

/// Upstream's updateClaimOwnerRefForSetAndPod: references to the set and pod are dropped and
/// the ones the policy wants added as controller references.
pub fn update_claim_owner_refs(claim: &mut PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) {
    let unexpected = has_unexpected_controller(claim, set, pod);
    let mut refs: Vec<OwnerReference> = claim
        .owner_references()
        .iter()
        .filter(|r| !(matches_ref(r, set) || matches_ref(r, pod)))
        .cloned()
        .collect();
    if !unexpected {
        let (scaled, deleted) = retention_policy(set);
        let scaled_down = !pod_in_ordinal_range(pod, set);
        match (scaled.as_str(), deleted.as_str()) {
            ("Retain", "Delete") => add_controller_ref(&mut refs, set),
            ("Delete", "Retain") if scaled_down => add_controller_ref(&mut refs, pod),
            ("Delete", "Delete") if scaled_down => add_controller_ref(&mut refs, pod),
            ("Delete", "Delete") => add_controller_ref(&mut refs, set),
            _ => {}
        }
    }
    claim.metadata.owner_references = (!refs.is_empty()).then_some(refs);
}
