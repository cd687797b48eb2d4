//! Tests of the built-in admission plugins on a memory-store registry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_storage::{Backend, LocalStore, Store, StoreConfig};
use serde_json::{Value, json};

use super::*;
use crate::registry::{Registry, Target, WriteOptions};
use crate::strategies;

pub(super) fn registry() -> Registry {
    let mut cfg = StoreConfig::new(Backend::Memory);
    cfg.compaction.interval = None;
    let store: Arc<dyn Store> = Arc::new(LocalStore::open(cfg).unwrap());
    Registry::new(store)
}

pub(super) fn res(group: &str, resource: &str) -> &'static ResourceInfo {
    let version = if group.is_empty() {
        "v1"
    } else {
        catalog::preferred_version(group).unwrap()
    };
    catalog::find(group, version, resource).unwrap()
}

pub(super) async fn put(r: &Registry, group: &str, resource: &str, ns: Option<&str>, obj: Value) {
    let info = res(group, resource);
    let t = Target {
        info,
        namespace: ns,
    };
    r.create(
        t,
        strategies::for_resource(info),
        obj,
        &WriteOptions::default(),
    )
    .await
    .unwrap();
}

pub(super) async fn namespace(r: &Registry, name: &str) {
    put(
        r,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": name}}),
    )
    .await;
}

/// An authorizer without bindings: only `system:masters` is allowed anything.
static NO_RULES: std::sync::LazyLock<crate::auth::rbac::RbacAuthorizer> =
    std::sync::LazyLock::new(Default::default);

pub(super) fn user() -> UserInfo {
    UserInfo::new("admin", vec!["system:masters".into()])
}

pub(super) fn request<'a>(
    r: &'a Registry,
    u: &'a UserInfo,
    op: Operation,
    resource: &str,
    ns: Option<&'a str>,
    name: &'a str,
) -> AdmissionRequest<'a> {
    let (group, resource) = match resource.split_once('.') {
        Some((r, g)) => (g, r),
        None => ("", resource),
    };
    AdmissionRequest {
        registry: r,
        user: u,
        authorizer: &NO_RULES,
        operation: op,
        info: res(group, resource),
        subresource: None,
        namespace: ns,
        name,
        dry_run: false,
        notes: Box::leak(Box::default()),
    }
}

pub(super) fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

async fn sa_ready(r: &Registry, ns: &str) {
    namespace(r, ns).await;
    put(
        r,
        "",
        "serviceaccounts",
        Some(ns),
        json!({"metadata": {"name": "default"}}),
    )
    .await;
}

#[tokio::test]
async fn plugins_lifecycle_protects_system_namespaces() {
    let r = registry();
    let u = user();
    namespace(&r, "default").await;
    let req = request(&r, &u, Operation::Delete, "namespaces", None, "default");
    let err = validate(&req, &Value::Null, None).await.unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
    namespace(&r, "other").await;
    let req = request(&r, &u, Operation::Delete, "namespaces", None, "other");
    assert!(validate(&req, &Value::Null, None).await.is_ok());
}

#[tokio::test]
async fn plugins_lifecycle_missing_and_terminating_namespaces() {
    let r = registry();
    let u = user();
    // Creates are checked in the mutating phase, which always runs first.
    let req = request(&r, &u, Operation::Create, "configmaps", Some("nope"), "cm");
    let err = mutate(&req, &mut json!({"metadata": {"name": "cm"}}), None)
        .await
        .unwrap_err();
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "namespaces \"nope\" not found");

    put(
        &r,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": "dying"}, "status": {"phase": "Terminating"}}),
    )
    .await;
    let r2 = r.clone();
    let info = res("", "namespaces");
    r2.update(
        Target {
            info,
            namespace: None,
        },
        strategies::for_resource(info),
        "dying",
        Some("status"),
        &WriteOptions::default(),
        |old| {
            let mut n = old.clone();
            n["status"] = json!({"phase": "Terminating"});
            Ok(n)
        },
    )
    .await
    .unwrap();
    let req = request(&r, &u, Operation::Create, "configmaps", Some("dying"), "cm");
    let err = mutate(&req, &mut json!({"metadata": {"name": "cm"}}), None)
        .await
        .unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "configmaps \"cm\" is forbidden: unable to create new content in namespace dying because it is being terminated"
    );
    // Updates in a terminating namespace are fine.
    let req = request(&r, &u, Operation::Update, "configmaps", Some("dying"), "cm");
    assert!(
        mutate(&req, &mut json!({"metadata": {"name": "cm"}}), None)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn plugins_limitranger_defaults_and_limits() {
    let r = registry();
    let u = user();
    sa_ready(&r, "ns").await;
    put(&r, "", "limitranges", Some("ns"), json!({"metadata": {"name": "lr"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "500m", "memory": "128Mi"},
         "defaultRequest": {"cpu": "100m"}}
    ]}})).await;
    let req = request(&r, &u, Operation::Create, "pods", Some("ns"), "p");
    let mut p = pod("p");
    p["spec"]["containers"][0]["resources"] = json!({"requests": {"memory": "64Mi"}});
    mutate(&req, &mut p, None).await.unwrap();
    let res = &p["spec"]["containers"][0]["resources"];
    assert_eq!(res["limits"], json!({"cpu": "500m", "memory": "128Mi"}));
    assert_eq!(res["requests"], json!({"cpu": "100m", "memory": "64Mi"}));
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu request for container c; cpu, memory limit for container c"
    );
    let _ = validate(&req, &p, None).await.unwrap();

    let mut big = pod("big");
    big["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "2"}});
    let req = request(&r, &u, Operation::Create, "pods", Some("ns"), "big");
    mutate(&req, &mut big, None).await.unwrap();
    let err = validate(&req, &big, None).await.unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
}

#[tokio::test]
async fn plugins_limitranger_min_ratio_and_pvc() {
    let r = registry();
    let u = user();
    sa_ready(&r, "ns").await;
    put(
        &r,
        "",
        "limitranges",
        Some("ns"),
        json!({"metadata": {"name": "lr"}, "spec": {"limits": [
            {"type": "Container", "min": {"memory": "100Mi"}, "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}
        ]}}),
    )
    .await;
    let mut p = pod("p");
    p["spec"]["containers"][0]["resources"] = json!({"requests": {"memory": "50Mi", "cpu": "100m"}, "limits": {"cpu": "300m", "memory": "1Gi"}});
    let req = request(&r, &u, Operation::Create, "pods", Some("ns"), "p");
    let err = validate(&req, &p, None).await.unwrap_err();
    assert_eq!(
        err.message,
        "pods \"p\" is forbidden: [minimum memory usage per Container is 100Mi, but request is 50Mi, \
         cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000]"
    );
    let pvc =
        json!({"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": "2Gi"}}}});
    let req = request(
        &r,
        &u,
        Operation::Create,
        "persistentvolumeclaims",
        Some("ns"),
        "c",
    );
    let err = validate(&req, &pvc, None).await.unwrap_err();
    assert_eq!(
        err.message,
        "persistentvolumeclaims \"c\" is forbidden: maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 2Gi"
    );
}

#[tokio::test]
async fn plugins_serviceaccount_defaults_and_mounts() {
    let r = registry();
    let u = user();
    namespace(&r, "ns").await;
    let req = request(&r, &u, Operation::Create, "pods", Some("ns"), "p");
    let mut p = pod("p");
    let err = mutate(&req, &mut p, None).await.unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "pods \"p\" is forbidden: error looking up service account ns/default: serviceaccount \"default\" not found"
    );
    put(
        &r,
        "",
        "serviceaccounts",
        Some("ns"),
        json!({"metadata": {"name": "default"}, "imagePullSecrets": [{"name": "reg"}]}),
    )
    .await;
    let mut p = pod("p");
    p["spec"]["initContainers"] = json!([{"name": "i", "image": "x"}]);
    mutate(&req, &mut p, None).await.unwrap();
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "reg"}]));
    let vol = &p["spec"]["volumes"][0];
    let vname = vol["name"].as_str().unwrap();
    assert!(
        vname.starts_with("kube-api-access-") && vname.len() == 21,
        "{vname}"
    );
    assert_eq!(
        vol["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3607
    );
    assert_eq!(
        vol["projected"]["sources"][1]["configMap"]["name"],
        "kube-root-ca.crt"
    );
    assert_eq!(
        vol["projected"]["sources"][2]["downwardAPI"]["items"][0]["path"],
        "namespace"
    );
    for c in ["containers", "initContainers"] {
        assert_eq!(
            p["spec"][c][0]["volumeMounts"],
            json!([{"name": vname, "readOnly": true,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
        );
    }

    // Opting out on the account or the pod mounts nothing.
    put(
        &r,
        "",
        "serviceaccounts",
        Some("ns"),
        json!({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false}),
    )
    .await;
    let mut p = pod("q");
    p["spec"]["serviceAccountName"] = json!("quiet");
    mutate(&req, &mut p, None).await.unwrap();
    assert!(p["spec"].get("volumes").is_none());
    let mut p = pod("q");
    p["spec"]["automountServiceAccountToken"] = json!(false);
    mutate(&req, &mut p, None).await.unwrap();
    assert!(p["spec"].get("volumes").is_none());
}

#[tokio::test]
async fn plugins_default_toleration_seconds() {
    let r = registry();
    let u = user();
    sa_ready(&r, "ns").await;
    let req = request(&r, &u, Operation::Create, "pods", Some("ns"), "p");
    let mut p = pod("p");
    p["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                       "effect": "NoExecute", "tolerationSeconds": 10}]);
    mutate(&req, &mut p, None).await.unwrap();
    assert_eq!(
        p["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ])
    );
}

#[tokio::test]
async fn plugins_priority_classes() {
    let r = registry();
    let u = user();
    sa_ready(&r, "ns").await;
    let req = request(&r, &u, Operation::Create, "pods", Some("ns"), "p");
    let mut p = pod("p");
    mutate(&req, &mut p, None).await.unwrap();
    assert_eq!(p["spec"]["priority"], 0);
    assert_eq!(p["spec"]["preemptionPolicy"], "PreemptLowerPriority");

    let mut p = pod("p");
    p["spec"]["priorityClassName"] = json!("system-node-critical");
    mutate(&req, &mut p, None).await.unwrap();
    assert_eq!(p["spec"]["priority"], 2_000_001_000);

    let mut p = pod("p");
    p["spec"]["priorityClassName"] = json!("gold");
    let err = mutate(&req, &mut p, None).await.unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "pods \"p\" is forbidden: no PriorityClass with name gold was found"
    );

    put(
        &r,
        "scheduling.k8s.io",
        "priorityclasses",
        None,
        json!({"metadata": {"name": "low"},
        "value": 7, "globalDefault": true, "preemptionPolicy": "Never"}),
    )
    .await;
    let mut p = pod("p");
    mutate(&req, &mut p, None).await.unwrap();
    assert_eq!(p["spec"]["priorityClassName"], "low");
    assert_eq!(p["spec"]["priority"], 7);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");

    let mut p = pod("p");
    p["spec"]["priority"] = json!(9);
    let err = mutate(&req, &mut p, None).await.unwrap_err();
    assert!(
        err.message
            .contains("the integer value of priority (9) must not be provided"),
        "{}",
        err.message
    );

    let pc = json!({"metadata": {"name": "another"}, "value": 1, "globalDefault": true});
    let req = request(
        &r,
        &u,
        Operation::Create,
        "priorityclasses.scheduling.k8s.io",
        None,
        "another",
    );
    let err = validate(&req, &pc, None).await.unwrap_err();
    assert_eq!(
        err.message,
        "priorityclasses.scheduling.k8s.io \"another\" is forbidden: PriorityClass low is already marked as default. Only one default can exist"
    );
}

/// upstream's validatePriorityClass: the default that counts is the lowest-valued one, a
/// create is refused even under its name, an update only when it marks a second class.
#[tokio::test]
async fn plugins_priority_class_single_default() {
    let r = registry();
    let u = user();
    let pc = |name: &str, value: i64| json!({"metadata": {"name": name}, "value": value, "globalDefault": true});
    let check = |op, name: &'static str, obj: Value| {
        let (r, u) = (&r, &u);
        async move {
            let req = request(r, u, op, "priorityclasses.scheduling.k8s.io", None, name);
            validate(&req, &obj, None).await.map(|_| ())
        }
    };
    // No default yet: anything goes.
    check(Operation::Create, "a", pc("a", 5)).await.unwrap();
    // Two defaults left by a race: "low" (value 1) is the one pods get.
    put(
        &r,
        "scheduling.k8s.io",
        "priorityclasses",
        None,
        pc("high", 9),
    )
    .await;
    put(
        &r,
        "scheduling.k8s.io",
        "priorityclasses",
        None,
        pc("low", 1),
    )
    .await;
    let err = check(Operation::Create, "low", pc("low", 1))
        .await
        .unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "priorityclasses.scheduling.k8s.io \"low\" is forbidden: PriorityClass low is already marked as default. Only one default can exist"
    );
    // Updating the default itself is fine; updating the other one names the default.
    check(Operation::Update, "low", pc("low", 1)).await.unwrap();
    let err = check(Operation::Update, "high", pc("high", 9))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "priorityclasses.scheduling.k8s.io \"high\" is forbidden: PriorityClass low is already marked as default. Only one default can exist"
    );
    // A class that is not a default, and deletes, are not looked at.
    let mut plain = pc("plain", 3);
    plain["globalDefault"] = json!(false);
    check(Operation::Update, "plain", plain).await.unwrap();
    check(Operation::Delete, "low", pc("low", 1)).await.unwrap();
}

/// A pod update that leaves out spec.priority and preemptionPolicy keeps the stored ones.
#[tokio::test]
async fn plugins_priority_kept_on_pod_update() {
    let r = registry();
    let u = user();
    let req = request(&r, &u, Operation::Update, "pods", Some("ns"), "p");
    let mut old = pod("p");
    old["spec"]["priority"] = json!(7);
    old["spec"]["preemptionPolicy"] = json!("Never");
    let mut p = pod("p");
    mutate(&req, &mut p, Some(&old)).await.unwrap();
    assert_eq!(p["spec"]["priority"], 7);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
    // A value the client sends is left for validation to judge.
    let mut p = pod("p");
    p["spec"]["priority"] = json!(3);
    mutate(&req, &mut p, Some(&old)).await.unwrap();
    assert_eq!(p["spec"]["priority"], 3);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
}
