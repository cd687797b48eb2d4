//! The warnings upstream sends for PersistentVolumeClaims, PersistentVolumes, Nodes and TLS
//! Secrets, as kubectl prints them on create and again on an update; and the PersistentVolume
//! and Node rules that sit beside them (iSCSI names, node-affinity immutability, the
//! avoid-pods annotation).

use k1s_tests::{TestCluster, fails};

/// Creates (or updates) with kubectl and returns its stderr, where the warnings are.
fn warnings_of(c: &TestCluster, args: &[&str], stdin: &str) -> String {
    let out = c.kubectl_stdin(args, stdin);
    let err = k1s_tests::stderr(&out);
    assert!(out.status.success(), "{err}");
    err
}

fn assert_has(err: &str, wants: &[&str]) {
    for want in wants {
        assert!(
            err.contains(&format!("Warning: {want}")),
            "missing {want:?} in {err}"
        );
    }
}

#[test]
fn volume_claim_node_and_secret_warnings() {
    let c = TestCluster::start();
    let create = ["create", "-f", "-"];
    let class_annotation = "metadata.annotations[volume.beta.kubernetes.io/storage-class]: \
                            deprecated since v1.8; use \"storageClassName\" attribute instead";

    let err = warnings_of(
        &c,
        &create,
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  \
         annotations: {volume.beta.kubernetes.io/storage-class: slow}\nspec:\n  \
         accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1.5}}\n",
    );
    let claim_wants = [
        class_annotation,
        "spec.resources.requests[storage]: fractional byte value \"1500m\" is invalid, must be \
         an integer",
    ];
    assert_has(&err, &claim_wants);
    // Every update of the claim warns again, as upstream's WarningsOnUpdate.
    let out = c.kubectl(&["label", "pvc/data", "tier=db"]);
    assert_has(&k1s_tests::stderr(&out), &claim_wants);

    let err = warnings_of(
        &c,
        &create,
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: vol}\nspec:\n  \
         capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  \
         persistentVolumeReclaimPolicy: Recycle\n  hostPath: {path: /tmp/k1s-vol}\n  \
         nodeAffinity:\n    required:\n      nodeSelectorTerms:\n      - matchExpressions: \
         [{key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [a]}]\n",
    );
    let volume_wants = [
        "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, \
         the recommended approach is to use dynamic provisioning.",
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key: \
         failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \
         \"topology.kubernetes.io/zone\" instead",
    ];
    assert_has(&err, &volume_wants);
    assert!(!err.contains("storage-class"), "{err}");
    let out = c.kubectl(&["annotate", "pv/vol", "note=x"]);
    assert_has(&k1s_tests::stderr(&out), &volume_wants);

    let err = warnings_of(
        &c,
        &create,
        "apiVersion: v1\nkind: Node\nmetadata: {name: old-node}\nspec: {externalID: i-123}\n",
    );
    assert_has(
        &err,
        &["spec.externalID: this field is deprecated, and is unused by Kubernetes"],
    );

    let err = warnings_of(
        &c,
        &create,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: web-tls}\ntype: kubernetes.io/tls\n\
         stringData: {tls.crt: not a certificate, tls.key: not a key}\n",
    );
    assert_has(
        &err,
        &["tls: failed to find any PEM data in certificate input"],
    );
    let err = warnings_of(
        &c,
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata: {name: web-tls}\ntype: kubernetes.io/tls\n\
         stringData:\n  tls.crt: |\n    -----BEGIN CERTIFICATE-----\n    AAAA\n    \
         -----END CERTIFICATE-----\n  tls.key: not a key\n",
    );
    assert_has(&err, &["tls: failed to find any PEM data in key input"]);
    // Other Secrets get no warning.
    let err = warnings_of(
        &c,
        &["create", "secret", "generic", "plain", "--from-literal=a=b"],
        "",
    );
    assert!(!err.contains("Warning"), "{err}");
}

#[test]
fn volume_and_node_rules_reach_kubectl() {
    let c = TestCluster::start();
    let create = ["create", "-f", "-"];
    let err = fails(
        &create,
        c.kubectl_stdin(
            &create,
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: disk}\nspec:\n  \
             capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  \
             iscsi: {targetPortal: 10.0.0.1, iqn: bogus}\n",
        ),
    );
    assert!(
        err.contains("spec.iscsi.iqn: Invalid value: \"bogus\": must be valid format"),
        "{err}"
    );

    warnings_of(
        &c,
        &create,
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pinned}\nspec:\n  \
         capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  \
         hostPath: {path: /tmp/k1s-pinned}\n  nodeAffinity:\n    required:\n      \
         nodeSelectorTerms:\n      - matchExpressions: [{key: zone, operator: In, values: [a]}]\n",
    );
    let args = [
        "patch",
        "pv",
        "pinned",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/nodeAffinity/required/nodeSelectorTerms/0/matchExpressions/0/values","value":["b"]}]"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(err.contains("nodeAffinity: Invalid value: "), "{err}");
    assert!(err.contains("field is immutable"), "{err}");

    let err = fails(
        &create,
        c.kubectl_stdin(
            &create,
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: avoid\n  annotations:\n    \
             scheduler.alpha.kubernetes.io/preferAvoidPods: '{\"preferAvoidPods\": [{\"podSignature\": {}}]}'\n",
        ),
    );
    assert!(
        err.contains(
            "metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[0].PodSignature: \
             Required value"
        ),
        "{err}"
    );
}
