//! Unit tests of the StatefulSet controller's pure parts: ordinals, identities, claims and
//! their retention owner references, status counts and the rolling update's order.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::ResourceExt;

use super::pods::*;
use super::*;

fn set(yaml_extra: serde_json::Value) -> StatefulSet {
    let mut base = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid", "generation": 2},
        "spec": {
            "replicas": 3,
            "serviceName": "nginx",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            },
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
        }
    });
    merge(&mut base, yaml_extra);
    serde_json::from_value(base).expect("set")
}

fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn pod_at(name: &str, revision: &str, phase: &str, ready: bool) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                     "labels": {"controller-revision-hash": revision}},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
    }))
    .expect("pod")
}

#[test]
fn ordinals_are_parsed_from_names() {
    // Cases from upstream's TestGetParentNameAndOrdinal and the regex (.*)-([0-9]+)$.
    let cases: &[(&str, Option<&str>, i32)] = &[
        ("web-0", Some("web"), 0),
        ("web-12", Some("web"), 12),
        ("my-web-3", Some("my-web"), 3),
        ("web-0-1", Some("web-0"), 1),
        ("web", None, -1),
        ("web-", None, -1),
        ("web-a1", None, -1),
        ("web-99999999999", Some("web"), -1),
    ];
    for (name, parent, ordinal) in cases {
        assert_eq!(parent_and_ordinal(name), (*parent, *ordinal), "{name}");
    }
}

#[test]
fn a_new_pod_has_its_identity_storage_and_owner() {
    let s = set(serde_json::json!({}));
    let pod = new_stateful_set_pod(&s, 1);
    assert_eq!(pod.name_any(), "web-1");
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
    let labels = pod.labels();
    assert_eq!(
        labels.get(POD_NAME_LABEL).map(String::as_str),
        Some("web-1")
    );
    assert_eq!(labels.get(POD_INDEX_LABEL).map(String::as_str), Some("1"));
    assert_eq!(labels.get("app").map(String::as_str), Some("web"));
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.hostname.as_deref(), Some("web-1"));
    assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
    let vols = spec.volumes.as_ref().expect("volumes");
    assert_eq!(vols[0].name, "data");
    assert_eq!(
        vols[0]
            .persistent_volume_claim
            .as_ref()
            .map(|c| c.claim_name.as_str()),
        Some("data-web-1")
    );
    assert!(identity_matches(&s, &pod));
    assert!(storage_matches(&s, &pod));
    let owner = controller_ref(&pod.metadata).expect("controller");
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("StatefulSet", "set-uid")
    );

    let mut wrong = pod.clone();
    wrong.labels_mut().remove(POD_NAME_LABEL);
    assert!(!identity_matches(&s, &wrong));
    update_identity(&s, &mut wrong);
    assert!(identity_matches(&s, &wrong));
    let mut no_vol = pod.clone();
    if let Some(spec) = no_vol.spec.as_mut() {
        spec.volumes = None;
    }
    assert!(!storage_matches(&s, &no_vol));

    let claims = claims_for_pod(&s, &pod);
    let c = claims.get("data").expect("claim");
    assert_eq!(c.name_any(), "data-web-1");
    assert_eq!(c.labels().get("app").map(String::as_str), Some("web"));
}

#[test]
fn start_ordinal_shifts_names_and_range() {
    let s = set(serde_json::json!({"spec": {"ordinals": {"start": 5}, "replicas": 2}}));
    assert_eq!(start_ordinal(&s), 5);
    assert!(pod_in_ordinal_range(
        &pod_at("web-5", "r", "Running", true),
        &s
    ));
    assert!(pod_in_ordinal_range(
        &pod_at("web-6", "r", "Running", true),
        &s
    ));
    assert!(!pod_in_ordinal_range(
        &pod_at("web-7", "r", "Running", true),
        &s
    ));
    assert!(!pod_in_ordinal_range(
        &pod_at("web-0", "r", "Running", true),
        &s
    ));
}

#[test]
fn retention_policy_owner_references() {
    fn claim_refs(policy: (&str, &str), pod_name: &str) -> Vec<(String, bool)> {
        let s = set(
            serde_json::json!({"spec": {"persistentVolumeClaimRetentionPolicy":
            {"whenScaled": policy.0, "whenDeleted": policy.1}}}),
        );
        let pod = pod_at(pod_name, "r", "Running", true);
        let mut claim = PersistentVolumeClaim::default();
        assert_eq!(
            claim_owner_up_to_date(&claim, &s, &pod),
            policy == ("Retain", "Retain")
                || (policy == ("Delete", "Retain") && pod_in_ordinal_range(&pod, &s))
        );
        update_claim_owner_refs(&mut claim, &s, &pod);
        assert!(
            claim_owner_up_to_date(&claim, &s, &pod),
            "{policy:?} {pod_name}"
        );
        claim
            .owner_references()
            .iter()
            .map(|r| (r.kind.clone(), r.controller == Some(true)))
            .collect()
    }
    let set_ref = vec![("StatefulSet".to_string(), true)];
    let pod_ref = vec![("Pod".to_string(), true)];
    assert!(claim_refs(("Retain", "Retain"), "web-1").is_empty());
    assert_eq!(claim_refs(("Retain", "Delete"), "web-1"), set_ref);
    assert_eq!(claim_refs(("Retain", "Delete"), "web-7"), set_ref);
    assert!(claim_refs(("Delete", "Retain"), "web-1").is_empty());
    assert_eq!(claim_refs(("Delete", "Retain"), "web-7"), pod_ref);
    assert_eq!(claim_refs(("Delete", "Delete"), "web-1"), set_ref);
    assert_eq!(claim_refs(("Delete", "Delete"), "web-7"), pod_ref);
}

#[test]
fn another_controller_of_a_claim_is_left_alone() {
    let s = set(
        serde_json::json!({"spec": {"persistentVolumeClaimRetentionPolicy":
        {"whenScaled": "Retain", "whenDeleted": "Delete"}}}),
    );
    let pod = pod_at("web-0", "r", "Running", true);
    let mut claim: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "data-web-0", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "other", "controller": true}]}
    }))
    .expect("claim");
    assert!(has_unexpected_controller(&claim, &s, &pod));
    assert!(claim_owner_up_to_date(&claim, &s, &pod));
    update_claim_owner_refs(&mut claim, &s, &pod);
    assert_eq!(
        claim.owner_references().len(),
        1,
        "no second controller added"
    );
}

#[test]
fn status_counts() {
    let pods = [
        pod_at("web-0", "rev-2", "Running", true),
        pod_at("web-1", "rev-1", "Running", false),
        pod_at("web-2", "rev-1", "Pending", false),
    ];
    let c = count_replicas(pods.iter(), 0, "rev-1", "rev-2");
    assert_eq!(
        c,
        Counts {
            replicas: 3,
            ready: 1,
            available: 1,
            current: 2,
            updated: 1
        }
    );
    // A pod made in memory for a missing ordinal is not counted.
    let s = set(serde_json::json!({}));
    let fresh = new_stateful_set_pod(&s, 0);
    assert_eq!(count_replicas([&fresh], 0, "a", "b"), Counts::default());
    // Available needs minReadySeconds of readiness.
    let c = count_replicas(pods.iter(), 30, "rev-1", "rev-2");
    assert_eq!((c.ready, c.available), (1, 0));
}

#[test]
fn rolling_update_goes_from_the_highest_ordinal_down_to_the_partition() {
    let at = |revs: &[(&str, bool)]| -> Vec<Pod> {
        revs.iter()
            .enumerate()
            .map(|(i, (r, ready))| pod_at(&format!("web-{i}"), r, "Running", *ready))
            .collect()
    };
    // Everything old: the highest ordinal goes first.
    let pods = at(&[("old", true), ("old", true), ("old", true)]);
    assert_eq!(next_update_step(&pods, "new", 0, 0), UpdateStep::Delete(2));
    // The top one is updated and ready: the next one down.
    let pods = at(&[("old", true), ("old", true), ("new", true)]);
    assert_eq!(next_update_step(&pods, "new", 0, 0), UpdateStep::Delete(1));
    // The updated one is not ready yet: wait.
    let pods = at(&[("old", true), ("old", true), ("new", false)]);
    assert_eq!(next_update_step(&pods, "new", 0, 0), UpdateStep::Wait);
    // Partition 2: only ordinal 2 is updated; done once it is.
    let pods = at(&[("old", true), ("old", true), ("old", true)]);
    assert_eq!(next_update_step(&pods, "new", 2, 0), UpdateStep::Delete(2));
    let pods = at(&[("old", true), ("old", true), ("new", true)]);
    assert_eq!(next_update_step(&pods, "new", 2, 0), UpdateStep::Done);
    // A partition beyond the replicas updates nothing.
    assert_eq!(next_update_step(&pods, "other", 5, 0), UpdateStep::Done);
    // All updated: done.
    let pods = at(&[("new", true), ("new", true), ("new", true)]);
    assert_eq!(next_update_step(&pods, "new", 0, 0), UpdateStep::Done);
}

#[test]
fn missing_pods_below_the_partition_get_the_current_revision() {
    let mut s =
        set(serde_json::json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}));
    let p1 = new_versioned_pod(&s, &s, "cur", "upd", 1);
    assert_eq!(pod_revision(&p1), "cur");
    let p2 = new_versioned_pod(&s, &s, "cur", "upd", 2);
    assert_eq!(pod_revision(&p2), "upd");
    // Without a rollingUpdate block: below status.currentReplicas stays current.
    if let Some(spec) = s.spec.as_mut() {
        spec.update_strategy = Some(k8s_openapi::api::apps::v1::StatefulSetUpdateStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: None,
        });
    }
    s.status = Some(k8s_openapi::api::apps::v1::StatefulSetStatus {
        current_replicas: Some(1),
        ..Default::default()
    });
    assert_eq!(
        pod_revision(&new_versioned_pod(&s, &s, "cur", "upd", 0)),
        "cur"
    );
    assert_eq!(
        pod_revision(&new_versioned_pod(&s, &s, "cur", "upd", 1)),
        "upd"
    );
}
