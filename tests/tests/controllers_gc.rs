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

/// A ConfigMap owned by each (name, uid) of `owners`, every reference blocking.
fn owned_by(c: &TestCluster, name: &str, owners: &[(&str, &str)]) {
    let refs: String = owners
        .iter()
        .map(|(owner, uid)| {
            format!(
                "  - {{apiVersion: v1, kind: ConfigMap, name: {owner}, uid: {uid}, controller: false, blockOwnerDeletion: true}}\n"
            )
        })
        .collect();
    c.apply(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n  ownerReferences:\n{refs}"
    ));
}

/// garbage_collector.go: a dependent with another live owner survives its foreground-deleted
/// owner, losing only that reference; and a cycle of owners deleted in the foreground is broken
/// (references unblocked) instead of waiting for ever.
#[test]
fn foreground_deletion_spares_dependents_with_another_owner_and_breaks_cycles() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "configmap", "to-be-deleted"]);
    c.kubectl_ok(&["create", "configmap", "to-stay"]);
    let (gone, stays) = (
        uid(&c, "configmap", "to-be-deleted"),
        uid(&c, "configmap", "to-stay"),
    );
    owned_by(
        &c,
        "shared",
        &[("to-be-deleted", &gone), ("to-stay", &stays)],
    );
    owned_by(&c, "only", &[("to-be-deleted", &gone)]);
    c.kubectl_ok(&[
        "delete",
        "configmap",
        "to-be-deleted",
        "--cascade=foreground",
    ]);
    wait_until(WAIT, "the owner and its only dependent to go", || {
        (!exists(&c, "to-be-deleted") && !exists(&c, "only")).then_some(())
    });
    let refs = c.kubectl_ok(&[
        "get",
        "configmap",
        "shared",
        "-o",
        "jsonpath={.metadata.ownerReferences[*].name}|{.metadata.deletionTimestamp}",
    ]);
    assert_eq!(refs, "to-stay|", "kept, with its live owner only");

    // a -> owned by c, b -> owned by a, c -> owned by b.
    for name in ["a", "b", "c"] {
        c.kubectl_ok(&["create", "configmap", name]);
    }
    let (a, b, cc) = (
        uid(&c, "configmap", "a"),
        uid(&c, "configmap", "b"),
        uid(&c, "configmap", "c"),
    );
    owned_by(&c, "a", &[("c", &cc)]);
    owned_by(&c, "b", &[("a", &a)]);
    owned_by(&c, "c", &[("b", &b)]);
    c.kubectl_ok(&[
        "delete",
        "configmap",
        "a",
        "--cascade=foreground",
        "--wait=false",
    ]);
    wait_until(WAIT, "the whole cycle to go", || {
        (!exists(&c, "a") && !exists(&c, "b") && !exists(&c, "c")).then_some(())
    });
}

/// Deleting a core/v1 ReplicationController without a propagation policy orphans its pods, as
/// upstream's default for that API (garbage_collector.go "should orphan pods created by rc if
/// deleteOptions.OrphanDependents is nil").
#[test]
fn a_replication_controller_deleted_without_a_policy_orphans_its_pods() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc, namespace: default}\n\
         spec:\n  replicas: 2\n  selector: {app: rc}\n  template:\n    metadata: {labels: {app: rc}}\n\
         \x20   spec: {containers: [{name: c, image: nginx}]}\n",
    );
    let pods = || {
        c.kubectl_ok(&["get", "pods", "-l", "app=rc", "-o", "name"])
            .lines()
            .count()
    };
    wait_until(WAIT, "two pods", || (pods() == 2).then_some(()));
    // No body, no query: the API's default policy.
    let out = c.kubectl(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/replicationcontrollers/rc",
    ]);
    assert!(out.status.success(), "{out:?}");
    wait_until(WAIT, "the controller to go", || {
        (!c.kubectl(&["get", "rc", "rc"]).status.success()).then_some(())
    });
    let owners = wait_until(WAIT, "the pods orphaned", || {
        let refs = c.kubectl_ok(&[
            "get",
            "pods",
            "-l",
            "app=rc",
            "-o",
            "jsonpath={.items[*].metadata.ownerReferences}",
        ]);
        refs.is_empty().then_some(refs)
    });
    assert_eq!(owners, "");
    assert_eq!(pods(), 2, "the pods stay");
}
