//! ControllerRevisions shared by the StatefulSet and DaemonSet controllers, as upstream's
//! `pkg/controller/history`: revision data is the owner's pod template as a strategic-merge
//! patch (`{"spec":{"template":{…,"$patch":"replace"}}}`), names are `<owner>-<hash>` with a
//! FNV hash encoded as upstream's SafeEncodeString, revisions are numbered, and two revisions
//! are equal when their data is.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::controller::is_conflict;

/// Upstream's ControllerRevisionHashLabel, set on every revision `NewControllerRevision` makes.
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";
/// `controller-revision-hash`: on pods (and on DaemonSet revisions).
pub const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";

/// The alphabet of upstream's `rand.SafeEncodeString` (no vowels, no confusable digits).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream's `rand.SafeEncodeString`: each byte mapped into a safe alphabet.
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// FNV-1 32-bit (Go's `fnv.New32`).
pub fn fnv1_32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h = h.wrapping_mul(0x0100_0193);
        h ^= u32::from(*b);
    }
    h
}

/// FNV-1a 32-bit (Go's `fnv.New32a`).
pub fn fnv1a_32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Upstream's ControllerRevisionName: the owner's name (at most 223 characters) and the hash.
pub fn revision_name(prefix: &str, hash: &str) -> String {
    let prefix: String = prefix.chars().take(223).collect();
    format!("{prefix}-{hash}")
}

/// Upstream's HashControllerRevision: FNV-1 over the revision's data and, when given, the
/// collision count in decimal.
pub fn hash_revision(data: &serde_json::Value, probe: Option<i32>) -> String {
    let mut bytes = k1s_apimachinery::gofmt::json_marshal(data).into_bytes();
    if let Some(p) = probe {
        bytes.extend_from_slice(p.to_string().as_bytes());
    }
    safe_encode(&fnv1_32(&bytes).to_string())
}

/// The revision data of an owner's template, as upstream's getPatch: the template (with Go's
/// `metadata.creationTimestamp: null`, so kubectl's byte comparison of `rollout undo` finds it
/// equal) under `spec.template` with `$patch: replace`.
pub fn template_patch(template: &PodTemplateSpec) -> serde_json::Value {
    let mut t = serde_json::to_value(template).unwrap_or_else(|_| serde_json::json!({}));
    if let Some(obj) = t.as_object_mut() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| serde_json::json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.entry("creationTimestamp")
                .or_insert(serde_json::Value::Null);
        }
        obj.insert("$patch".into(), "replace".into());
    }
    serde_json::json!({ "spec": { "template": t } })
}

/// The template a revision carries (upstream's ApplyRevision of a template patch); `None` when
/// the data is not a template patch.
pub fn template_of(revision: &ControllerRevision) -> Option<PodTemplateSpec> {
    let mut t = revision
        .data
        .as_ref()?
        .0
        .get("spec")?
        .get("template")?
        .clone();
    if let Some(obj) = t.as_object_mut() {
        obj.remove("$patch");
        if let Some(m) = obj.get_mut("metadata").and_then(|m| m.as_object_mut())
            && m.get("creationTimestamp").is_some_and(|v| v.is_null())
        {
            m.remove("creationTimestamp");
        }
    }
    serde_json::from_value(t).ok()
}

/// The revision's data as JSON (`null` when it has none).
pub fn data_of(revision: &ControllerRevision) -> &serde_json::Value {
    static NULL: serde_json::Value = serde_json::Value::Null;
    revision.data.as_ref().map(|d| &d.0).unwrap_or(&NULL)
}

/// Upstream's NewControllerRevision: labelled with the template's labels and the hash label,
/// named `<owner>-<hash>`, controlled by `owner`.
pub fn new_revision(
    owner_name: &str,
    namespace: &str,
    owner_ref: OwnerReference,
    template_labels: Option<&BTreeMap<String, String>>,
    data: serde_json::Value,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let hash = hash_revision(&data, collision_count);
    let mut labels = template_labels.cloned().unwrap_or_default();
    labels.insert(HASH_LABEL.into(), hash.clone());
    ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(owner_name, &hash)),
            namespace: Some(namespace.into()),
            labels: Some(labels),
            owner_references: Some(vec![owner_ref]),
            ..Default::default()
        },
        data: Some(RawExtension(data)),
        revision,
    }
}

/// Upstream's EqualRevision: same hash label (when both have one) and same data.
pub fn equal_revision(a: &ControllerRevision, b: &ControllerRevision) -> bool {
    let label = |r: &ControllerRevision| {
        r.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HASH_LABEL))
            .cloned()
    };
    if let (Some(x), Some(y)) = (label(a), label(b))
        && x != y
    {
        return false;
    }
    data_of(a) == data_of(b)
}

/// Upstream's FindEqualRevisions.
pub fn find_equal<'a>(
    revisions: &'a [Arc<ControllerRevision>],
    needle: &ControllerRevision,
) -> Vec<&'a Arc<ControllerRevision>> {
    revisions
        .iter()
        .filter(|r| equal_revision(r, needle))
        .collect()
}

/// Upstream's SortControllerRevisions: by revision number, then creation time, then name.
pub fn sort_revisions(revisions: &mut [Arc<ControllerRevision>]) {
    revisions.sort_by(|a, b| {
        a.revision
            .cmp(&b.revision)
            .then_with(|| {
                let t =
                    |r: &ControllerRevision| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
                t(a).cmp(&t(b))
            })
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// The next revision number after the (sorted) history.
pub fn next_revision(sorted: &[Arc<ControllerRevision>]) -> i64 {
    sorted.last().map(|r| r.revision + 1).unwrap_or(1)
}

/// Upstream's realHistory.CreateControllerRevision: creates the revision, named with the hash
/// of its data and the collision count; a name taken by a revision with other data bumps the
/// count and tries again. Returns the revision (the existing one when equal) and the count.
pub async fn create_revision(
    client: &Client,
    owner_name: &str,
    mut revision: ControllerRevision,
    collision_count: &mut i32,
) -> Result<ControllerRevision, kube::Error> {
    let namespace = revision.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(client.clone(), &namespace);
    // Bounded: a collision needs equal hashes of different data, which is rare.
    for _ in 0..100 {
        let hash = hash_revision(data_of(&revision), Some(*collision_count));
        let name = revision_name(owner_name, &hash);
        revision.metadata.name = Some(name.clone());
        match api.create(&PostParams::default(), &revision).await {
            Err(e) if is_conflict(&e) => {
                let existing = api.get(&name).await?;
                if data_of(&existing) == data_of(&revision) {
                    return Ok(existing);
                }
                *collision_count += 1;
            }
            other => return other,
        }
    }
    Err(kube::Error::Service(
        "too many controller revision hash collisions".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rev(n: i64, data: serde_json::Value, name: &str) -> Arc<ControllerRevision> {
        Arc::new(ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            data: Some(RawExtension(data)),
            revision: n,
        })
    }

    #[test]
    fn fnv_matches_go() {
        // Go: fnv.New32() / fnv.New32a() of "" and "a".
        assert_eq!(fnv1_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c_5d7e);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
    }

    #[test]
    fn safe_encoding_uses_the_safe_alphabet() {
        // Upstream's rand tests: each byte maps to alphanums[b % 27].
        assert_eq!(safe_encode("0"), "4");
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        let s = safe_encode("1234567890");
        assert_eq!(s.len(), 10);
        assert!(s.bytes().all(|b| ALPHANUMS.contains(&b)));
    }

    #[test]
    fn names_are_owner_and_hash_with_the_owner_truncated() {
        assert_eq!(revision_name("web", "abc"), "web-abc");
        let long = "x".repeat(300);
        assert_eq!(revision_name(&long, "h").len(), 223 + 2);
    }

    #[test]
    fn hashes_depend_on_data_and_collision_count() {
        let t: PodTemplateSpec = serde_json::from_value(serde_json::json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        }))
        .expect("template");
        let data = template_patch(&t);
        assert_eq!(data["spec"]["template"]["$patch"], "replace");
        assert!(data["spec"]["template"]["metadata"]["creationTimestamp"].is_null());
        let h0 = hash_revision(&data, Some(0));
        assert_eq!(h0, hash_revision(&data, Some(0)), "stable");
        assert_ne!(h0, hash_revision(&data, Some(1)));
        let mut t2 = t.clone();
        if let Some(spec) = t2.spec.as_mut() {
            spec.containers[0].image = Some("nginx:2".into());
        }
        assert_ne!(h0, hash_revision(&template_patch(&t2), Some(0)));
        // The template comes back out of the revision unchanged.
        let r = new_revision("web", "ns", OwnerReference::default(), None, data, 1, None);
        assert_eq!(template_of(&r), Some(t));
        assert!(
            r.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("web-"))
        );
    }

    #[test]
    fn history_sorts_by_revision_and_finds_equal_data() {
        let mut h = vec![
            rev(3, serde_json::json!({"a": 3}), "c"),
            rev(1, serde_json::json!({"a": 1}), "a"),
            rev(2, serde_json::json!({"a": 1}), "b"),
        ];
        sort_revisions(&mut h);
        let order: Vec<i64> = h.iter().map(|r| r.revision).collect();
        assert_eq!(order, [1, 2, 3]);
        assert_eq!(next_revision(&h), 4);
        assert_eq!(next_revision(&[]), 1);
        let needle = rev(9, serde_json::json!({"a": 1}), "n");
        let eq: Vec<i64> = find_equal(&h, &needle).iter().map(|r| r.revision).collect();
        assert_eq!(eq, [1, 2]);
    }
}
