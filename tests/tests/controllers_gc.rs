//! The garbage collector through kubectl: background, foreground and orphan cascades, dependents
//! of deleted owners collected, and a dependent whose owner exists never deleted.

use std::time::Duration;

use k1s_tests::{TestCluster, wait_until};

const WAIT: Duration = Duration::from_secs(120);

fn uid(c: &TestCluster, kind: &str, name: &str) -> String {
    c.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"])
}

/// A ConfigMap owned by `owner` (a ConfigMap) with `uid`.
fn dependent(c: &TestCluster, name: &str, owner: &str, owner_uid: &str, block: bool) {
    c.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: {owner_uid}\n    blockOwnerDeletion: {block}\n"
    ));
}

fn exists(c: &TestCluster, name: &str) -> bool {
    c.kubectl(&["get", "configmap", name]).status.success()
}

#[test]
fn background_deletion_collects_the_dependents_of_a_deleted_owner() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&c, "configmap", "owner");
    for i in 0..3 {
        dependent(&c, &format!("dep-{i}"), "owner", &owner, false);
    }
    // Another object names the owner with a UID that does not exist: it is collected, while a
    // dependent of a live owner stays.
    c.kubectl_ok(&["create", "configmap", "alive"]);
    let alive = uid(&c, "configmap", "alive");
    dependent(&c, "kept", "alive", &alive, false);
    dependent(
        &c,
        "wrong-uid",
        "alive",
        "00000000-0000-0000-0000-000000000000",
        false,
    );
    wait_until(WAIT, "the wrong-UID dependent to be collected", || {
        (!exists(&c, "wrong-uid")).then_some(())
    });
    c.kubectl_ok(&["delete", "configmap", "owner"]);
    wait_until(WAIT, "the dependents to be collected", || {
        (0..3)
            .all(|i| !exists(&c, &format!("dep-{i}")))
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        exists(&c, "kept"),
        "a dependent whose owner exists is never deleted"
    );
    assert!(exists(&c, "alive"));
}

#[test]
fn foreground_deletion_deletes_dependents_before_the_owner() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&c, "configmap", "owner");
    dependent(&c, "blocking", "owner", &owner, true);
    // A finalizer holds the blocking dependent: the owner must wait for it.
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "blocking",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    c.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ]);
    let finalizers = wait_until(WAIT, "the owner to be marked", || {
        let f = c.kubectl_ok(&[
            "get",
            "configmap",
            "owner",
            "-o",
            "jsonpath={.metadata.finalizers}",
        ]);
        f.contains("foregroundDeletion").then_some(f)
    });
    assert!(finalizers.contains("foregroundDeletion"), "{finalizers}");
    wait_until(WAIT, "the dependent to be deleting", || {
        let ts = c.kubectl_ok(&[
            "get",
            "configmap",
            "blocking",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ]);
        (!ts.is_empty()).then_some(())
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        exists(&c, "owner"),
        "the owner waits for its blocking dependent"
    );
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "blocking",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    wait_until(WAIT, "the owner to go after its dependent", || {
        (!exists(&c, "owner") && !exists(&c, "blocking")).then_some(())
    });
}

#[test]
fn orphan_deletion_keeps_dependents_and_removes_their_references() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "configmap", "owner"]);
    let owner = uid(&c, "configmap", "owner");
    dependent(&c, "orphan", "owner", &owner, true);
    c.kubectl_ok(&["delete", "configmap", "owner", "--cascade=orphan"]);
    wait_until(WAIT, "the owner to go", || {
        (!exists(&c, "owner")).then_some(())
    });
    let refs = c.kubectl_ok(&[
        "get",
        "configmap",
        "orphan",
        "-o",
        "jsonpath={.metadata.ownerReferences}",
    ]);
    assert_eq!(refs, "", "the reference to the deleted owner is removed");
    std::thread::sleep(Duration::from_secs(1));
    assert!(exists(&c, "orphan"), "an orphaned dependent stays");
}

#[test]
fn deleting_a_deployment_collects_what_it_owns() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    let owner = uid(&c, "deployment", "web");
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web-rs\n  namespace: default\n  labels: {{app: web}}\n  ownerReferences:\n  - apiVersion: apps/v1\n    kind: Deployment\n    name: web\n    uid: {owner}\n    controller: true\n    blockOwnerDeletion: true\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n"
    ));
    c.kubectl_ok(&["delete", "deployment", "web"]);
    wait_until(WAIT, "the ReplicaSet to be collected", || {
        (!c.kubectl(&["get", "replicaset", "web-rs"]).status.success()).then_some(())
    });
}
