//! Tests of the Node authorizer's graph: what pods, PVs and VolumeAttachments connect to a node,
//! and how changes, deletions and relists keep it current.

use serde_json::{Value, json};

use super::node_graph::{GraphKind, GraphSource, NodeGraph};
use GraphKind::*;

fn pod(ns: &str, name: &str, node: &str, spec: Value) -> Value {
    let mut spec = spec;
    if !node.is_empty() {
        spec["nodeName"] = json!(node);
    }
    json!({"metadata": {"namespace": ns, "name": name}, "spec": spec})
}

fn pv(name: &str, claim: Option<(&str, &str)>, source: Value) -> Value {
    let mut spec = source;
    if let Some((ns, claim)) = claim {
        spec["claimRef"] = json!({"namespace": ns, "name": claim});
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

fn attachment(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"nodeName": node, "attacher": "a"}})
}

fn reaches(g: &NodeGraph, node: &str, kind: GraphKind, ns: &str, name: &str) -> bool {
    g.has_path(node, kind, ns, name)
}

#[test]
fn every_reference_upstream_visits_connects_the_pod_to_its_node() {
    let g = NodeGraph::new();
    let spec = json!({
        "serviceAccountName": "sa",
        "imagePullSecrets": [{"name": "pull"}, {"name": ""}],
        "initContainers": [{"name": "i", "env": [
            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "init-env", "key": "k"}}}
        ]}],
        "containers": [{"name": "c",
            "envFrom": [{"secretRef": {"name": "env-from"}}, {"configMapRef": {"name": "cm-env-from"}}],
            "env": [
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-env", "key": "k"}}},
                {"name": "C", "value": "plain"}
            ]}],
        "ephemeralContainers": [{"name": "e", "envFrom": [{"secretRef": {"name": "debug"}}]}],
        "volumes": [
            {"name": "v1", "secret": {"secretName": "vol"}},
            {"name": "v2", "projected": {"sources": [
                {"secret": {"name": "proj"}}, {"configMap": {"name": "cm-proj"}},
                {"serviceAccountToken": {"path": "token"}}
            ]}},
            {"name": "v3", "configMap": {"name": "cm-vol"}},
            {"name": "v4", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
            {"name": "v5", "cephfs": {"monitors": ["m"], "secretRef": {"name": "ceph"}}},
            {"name": "v6", "azureFile": {"secretName": "azure", "shareName": "s"}},
            {"name": "v7", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
        ],
        "resourceClaims": [
            {"name": "a", "resourceClaimName": "shared"},
            {"name": "b", "resourceClaimTemplateName": "t"},
            {"name": "c", "resourceClaimTemplateName": "t"}
        ]
    });
    let mut p = pod("ns", "web", "n1", spec);
    p["status"] = json!({
        "resourceClaimStatuses": [{"name": "b", "resourceClaimName": "web-b-x1"}],
        "extendedResourceClaimStatus": {"resourceClaimName": "web-extended"}
    });
    g.apply(GraphSource::Pods, &p);
    for secret in [
        "pull", "init-env", "env-from", "debug", "vol", "proj", "csi", "ceph", "azure",
    ] {
        assert!(reaches(&g, "n1", Secret, "ns", secret), "{secret}");
        assert!(!reaches(&g, "n2", Secret, "ns", secret), "{secret}");
    }
    for cm in ["cm-env-from", "cm-env", "cm-proj", "cm-vol"] {
        assert!(reaches(&g, "n1", ConfigMap, "ns", cm), "{cm}");
    }
    assert!(reaches(&g, "n1", PersistentVolumeClaim, "ns", "data"));
    assert!(reaches(
        &g,
        "n1",
        PersistentVolumeClaim,
        "ns",
        "web-scratch"
    ));
    assert!(reaches(&g, "n1", ServiceAccount, "ns", "sa"));
    for claim in ["shared", "web-b-x1", "web-extended"] {
        assert!(reaches(&g, "n1", ResourceClaim, "ns", claim), "{claim}");
    }
    // Kinds do not mix, other namespaces do not match, empty names match nothing.
    assert!(!reaches(&g, "n1", ConfigMap, "ns", "vol"));
    assert!(!reaches(&g, "n1", Secret, "other", "vol"));
    assert!(!reaches(&g, "n1", Secret, "ns", ""));
    assert!(!reaches(&g, "n1", ResourceClaim, "ns", "t"));
}

#[test]
fn a_pod_counts_once_bound_and_stops_counting_when_deleted() {
    let g = NodeGraph::new();
    let spec = json!({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]});
    let unbound = pod("ns", "a", "", spec.clone());
    g.apply(GraphSource::Pods, &unbound);
    assert!(!reaches(&g, "n1", Secret, "ns", "s"));
    assert_eq!(g.counts(), (0, 0, 0));

    let a = pod("ns", "a", "n1", spec.clone());
    let b = pod("ns", "b", "n1", spec.clone());
    g.apply(GraphSource::Pods, &a);
    g.apply(GraphSource::Pods, &b);
    // A status update changes nothing.
    let mut a_running = a.clone();
    a_running["status"] = json!({"phase": "Running"});
    g.apply(GraphSource::Pods, &a_running);
    assert_eq!(g.counts(), (2, 0, 0));

    g.remove(GraphSource::Pods, &a_running);
    assert!(reaches(&g, "n1", Secret, "ns", "s"), "b still uses it");
    g.remove(GraphSource::Pods, &b);
    assert!(!reaches(&g, "n1", Secret, "ns", "s"));
    assert_eq!(g.entries(), 0, "nothing is left behind");
}

#[test]
fn a_changed_pod_is_recomputed_and_an_unbound_one_dropped() {
    let g = NodeGraph::new();
    let mut p = pod(
        "ns",
        "p",
        "n1",
        json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "old"}}]}]}),
    );
    g.apply(GraphSource::Pods, &p);
    assert!(reaches(&g, "n1", Secret, "ns", "old"));
    p["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"] = json!("new");
    g.apply(GraphSource::Pods, &p);
    assert!(!reaches(&g, "n1", Secret, "ns", "old"));
    assert!(reaches(&g, "n1", Secret, "ns", "new"));
    // Moved to another node (recreated under the same name): the old node loses it.
    p["spec"]["nodeName"] = json!("n2");
    g.apply(GraphSource::Pods, &p);
    assert!(!reaches(&g, "n1", Secret, "ns", "new"));
    assert!(reaches(&g, "n2", Secret, "ns", "new"));
    p["spec"]["nodeName"] = json!("");
    g.apply(GraphSource::Pods, &p);
    assert!(!reaches(&g, "n2", Secret, "ns", "new"));
    assert_eq!(g.entries(), 0);
}

#[test]
fn a_mirror_pod_reaches_nothing() {
    let g = NodeGraph::new();
    let mut p = pod(
        "kube-system",
        "static-n1",
        "n1",
        json!({"serviceAccountName": "sa", "volumes": [{"name": "v", "secret": {"secretName": "s"}}]}),
    );
    p["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
    g.apply(GraphSource::Pods, &p);
    assert_eq!(g.counts(), (1, 0, 0));
    assert!(!reaches(&g, "n1", Secret, "kube-system", "s"));
    assert!(!reaches(&g, "n1", ServiceAccount, "kube-system", "sa"));
}

#[test]
fn a_bound_pv_and_its_secrets_follow_the_claim() {
    let g = NodeGraph::new();
    let rbd = json!({"rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": "rbd"}}});
    g.apply(
        GraphSource::PersistentVolumes,
        &pv("pv1", Some(("ns", "data")), rbd),
    );
    let csi = json!({"csi": {"driver": "d", "volumeHandle": "h",
        "controllerPublishSecretRef": {"namespace": "ns", "name": "controller"},
        "nodeStageSecretRef": {"namespace": "creds", "name": "stage"}}});
    g.apply(
        GraphSource::PersistentVolumes,
        &pv("pv2", Some(("ns", "data")), csi),
    );
    let loose = json!({"csi": {"driver": "d", "volumeHandle": "h",
        "nodePublishSecretRef": {"namespace": "ns", "name": "loose"}}});
    g.apply(GraphSource::PersistentVolumes, &pv("pv3", None, loose));
    assert_eq!(g.counts(), (0, 2, 0));
    // No pod uses the claim yet.
    assert!(!reaches(&g, "n1", PersistentVolume, "", "pv1"));
    assert!(!reaches(&g, "n1", Secret, "ns", "rbd"));

    let p = pod(
        "ns",
        "db",
        "n1",
        json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}),
    );
    g.apply(GraphSource::Pods, &p);
    assert!(reaches(&g, "n1", PersistentVolumeClaim, "ns", "data"));
    assert!(reaches(&g, "n1", PersistentVolume, "", "pv1"));
    assert!(reaches(&g, "n1", PersistentVolume, "", "pv2"));
    assert!(!reaches(&g, "n2", PersistentVolume, "", "pv1"));
    // A secret reference without a namespace means the claim's.
    assert!(reaches(&g, "n1", Secret, "ns", "rbd"));
    assert!(reaches(&g, "n1", Secret, "creds", "stage"));
    // CSI controller secrets are not the kubelet's; an unbound PV grants nothing.
    assert!(!reaches(&g, "n1", Secret, "ns", "controller"));
    assert!(!reaches(&g, "n1", PersistentVolume, "", "pv3"));
    assert!(!reaches(&g, "n1", Secret, "ns", "loose"));

    // Released and deleted PVs stop granting their secrets.
    g.apply(
        GraphSource::PersistentVolumes,
        &pv(
            "pv2",
            None,
            json!({"csi": {"driver": "d", "volumeHandle": "h"}}),
        ),
    );
    assert!(!reaches(&g, "n1", Secret, "creds", "stage"));
    g.remove(GraphSource::PersistentVolumes, &pv("pv1", None, json!({})));
    assert!(!reaches(&g, "n1", Secret, "ns", "rbd"));
    assert!(!reaches(&g, "n1", PersistentVolume, "", "pv1"));
    g.remove(GraphSource::Pods, &p);
    assert_eq!(g.entries(), 0);
}

#[test]
fn volume_attachments_belong_to_their_node() {
    let g = NodeGraph::new();
    g.apply(GraphSource::VolumeAttachments, &attachment("va", "n1"));
    assert!(reaches(&g, "n1", VolumeAttachment, "", "va"));
    assert!(!reaches(&g, "n2", VolumeAttachment, "", "va"));
    g.apply(GraphSource::VolumeAttachments, &attachment("va", "n2"));
    assert!(!reaches(&g, "n1", VolumeAttachment, "", "va"));
    assert!(reaches(&g, "n2", VolumeAttachment, "", "va"));
    g.remove(GraphSource::VolumeAttachments, &attachment("va", "n2"));
    assert!(!reaches(&g, "n2", VolumeAttachment, "", "va"));
    assert_eq!(g.entries(), 0);
}

#[test]
fn a_relist_replaces_what_a_source_taught() {
    let g = NodeGraph::new();
    let uses = |name: &str, secret: &str| {
        pod(
            "ns",
            name,
            "n1",
            json!({"volumes": [{"name": "v", "secret": {"secretName": secret}}]}),
        )
    };
    g.apply(GraphSource::Pods, &uses("gone", "old"));
    g.apply(GraphSource::VolumeAttachments, &attachment("va", "n1"));
    g.replace_all(
        GraphSource::Pods,
        &[uses("kept", "new"), uses("twin", "new")],
    );
    assert!(!reaches(&g, "n1", Secret, "ns", "old"));
    assert!(reaches(&g, "n1", Secret, "ns", "new"));
    assert!(
        reaches(&g, "n1", VolumeAttachment, "", "va"),
        "other sources stay"
    );
    g.remove(GraphSource::Pods, &uses("kept", "new"));
    assert!(
        reaches(&g, "n1", Secret, "ns", "new"),
        "counted from the relist"
    );
    g.replace_all(GraphSource::Pods, &[]);
    g.replace_all(GraphSource::VolumeAttachments, &[]);
    assert_eq!(g.entries(), 0);
}
