//! The PersistentVolume binder through kubectl, as upstream's docs walk it ("Configure a Pod to
//! Use a PersistentVolume for Storage"): volumes become Available, a claim binds to the smallest
//! volume that fits, a released volume follows its reclaim policy, and a waiting claim says why.

use std::time::Duration;

use k1s_tests::{TestCluster, wait_until};

fn field(c: &TestCluster, kind: &str, name: &str, path: &str) -> String {
    c.kubectl_ok(&["get", kind, name, "-o", &format!("jsonpath={path}")])
        .trim()
        .to_string()
}

fn wait_field(c: &TestCluster, kind: &str, name: &str, path: &str, want: &str) {
    wait_until(
        Duration::from_secs(30),
        &format!("{kind}/{name} {path} = {want}"),
        || (field(c, kind, name, path) == want).then_some(()),
    );
}

fn volume(name: &str, size: &str, policy: &str) -> String {
    format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}, labels: {{type: local}}}}\n\
         spec:\n  storageClassName: manual\n  capacity: {{storage: {size}}}\n  \
         accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: {policy}\n  \
         hostPath: {{path: /mnt/data/{name}}}\n"
    )
}

fn events_of(c: &TestCluster, name: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.name={name}"),
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
    ])
}

#[test]
fn claims_bind_to_the_smallest_volume_that_fits_and_release_it() {
    let c = TestCluster::start();
    c.apply(&volume("big", "10Gi", "Retain"));
    c.apply(&volume("small", "3Gi", "Retain"));
    c.apply(&volume("tiny", "1Gi", "Delete"));
    wait_field(&c, "pv", "small", "{.status.phase}", "Available");
    c.apply(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: task-pv-claim}\nspec:\n  \
         storageClassName: manual\n  accessModes: [ReadWriteOnce]\n  \
         resources: {requests: {storage: 2Gi}}\n",
    );
    wait_field(&c, "pvc", "task-pv-claim", "{.status.phase}", "Bound");
    assert_eq!(
        field(&c, "pvc", "task-pv-claim", "{.spec.volumeName}"),
        "small"
    );
    assert_eq!(
        field(&c, "pvc", "task-pv-claim", "{.status.capacity.storage}"),
        "3Gi"
    );
    for annotation in ["bind-completed", "bound-by-controller"] {
        let path = format!("{{.metadata.annotations.pv\\.kubernetes\\.io/{annotation}}}");
        assert_eq!(
            field(&c, "pvc", "task-pv-claim", &path),
            "yes",
            "{annotation}"
        );
    }
    wait_field(&c, "pv", "small", "{.status.phase}", "Bound");
    assert_eq!(
        field(
            &c,
            "pv",
            "small",
            "{.spec.claimRef.kind}/{.spec.claimRef.namespace}/{.spec.claimRef.name}"
        ),
        "PersistentVolumeClaim/default/task-pv-claim"
    );
    assert_eq!(field(&c, "pv", "big", "{.status.phase}"), "Available");
    // Retain: the volume is Released with its claimRef kept.
    c.kubectl_ok(&["delete", "pvc", "task-pv-claim"]);
    wait_field(&c, "pv", "small", "{.status.phase}", "Released");
    // Delete, with no plugin here that deletes a hostPath volume: Failed, as upstream.
    c.apply(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: scratch}\nspec:\n  \
         storageClassName: manual\n  accessModes: [ReadWriteOnce]\n  \
         resources: {requests: {storage: 1Gi}}\n",
    );
    wait_field(&c, "pvc", "scratch", "{.spec.volumeName}", "tiny");
    c.kubectl_ok(&["delete", "pvc", "scratch"]);
    wait_field(&c, "pv", "tiny", "{.status.phase}", "Failed");
    assert_eq!(
        field(&c, "pv", "tiny", "{.status.message}"),
        "error getting deleter volume plugin for volume \"tiny\": no deletable volume plugin matched"
    );
}

#[test]
fn a_waiting_claim_says_why() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: nothing}\nspec:\n  \
         storageClassName: \"\"\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: later}\n\
         provisioner: example.com/csi\nvolumeBindingMode: WaitForFirstConsumer\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: external}\n\
         provisioner: example.com/csi\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: delayed}\nspec:\n  \
         storageClassName: later\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: provisioned}\nspec:\n  \
         storageClassName: external\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n",
    );
    let expect = [
        (
            "nothing",
            "FailedBinding: no persistent volumes available for this claim and no storage class is set",
        ),
        (
            "delayed",
            "WaitForFirstConsumer: waiting for first consumer to be created before binding",
        ),
        (
            "provisioned",
            "ExternalProvisioning: Waiting for a volume to be created either by the external \
             provisioner 'example.com/csi' or manually by the system administrator.",
        ),
    ];
    for (claim, event) in expect {
        wait_until(
            Duration::from_secs(30),
            &format!("{claim}: {event}"),
            || events_of(&c, claim).contains(event).then_some(()),
        );
        assert_eq!(field(&c, "pvc", claim, "{.status.phase}"), "Pending");
    }
    assert_eq!(
        field(
            &c,
            "pvc",
            "provisioned",
            "{.metadata.annotations.volume\\.kubernetes\\.io/storage-provisioner}"
        ),
        "example.com/csi"
    );
}

#[test]
fn a_pod_waits_for_its_claim_to_exist() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: needs-data}\nspec:\n  \
         containers: [{name: c, image: nginx}]\n  \
         volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]\n",
    );
    let want = "FailedScheduling: 0/1 nodes are available: persistentvolumeclaim \"data\" not \
                found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for \
                scheduling.";
    wait_until(Duration::from_secs(30), want, || {
        events_of(&c, "needs-data").contains(want).then_some(())
    });
    assert_eq!(field(&c, "pod", "needs-data", "{.spec.nodeName}"), "");
    // The claim appears: the pod is scheduled.
    c.apply(&volume("disk", "1Gi", "Retain"));
    c.apply(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  \
         storageClassName: manual\n  accessModes: [ReadWriteOnce]\n  \
         resources: {requests: {storage: 1Gi}}\n",
    );
    wait_field(&c, "pod", "needs-data", "{.spec.nodeName}", "k1s-node-0");
}
