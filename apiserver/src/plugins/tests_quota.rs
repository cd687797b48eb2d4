//! Tests of the ResourceQuota plugin: counts, compute resources, CAS charging under concurrency,
//! rollback and release on delete.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{namespace, pod, put, registry, request, res, user};
use super::*;
use crate::registry::{DeleteOptions, Registry, Target, WriteOptions};
use crate::strategies;

async fn quota(r: &Registry, ns: &str, name: &str, hard: Value) {
    put(
        r,
        "",
        "resourcequotas",
        Some(ns),
        json!({"metadata": {"name": name}, "spec": {"hard": hard}}),
    )
    .await;
}

async fn used(r: &Registry, ns: &str, name: &str) -> Value {
    let t = Target {
        info: res("", "resourcequotas"),
        namespace: Some(ns),
    };
    r.get(t, name).await.unwrap()["status"]["used"].clone()
}

/// Admission then the write, rolling back on failure: what the request path does.
async fn create_pod(r: &Registry, ns: &str, p: Value) -> Result<Value, ApiError> {
    let u = user();
    let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
    let req = request(r, &u, Operation::Create, "pods", Some(ns), &name);
    let admitted = validate(&req, &p, None).await?;
    let info = res("", "pods");
    let t = Target {
        info,
        namespace: Some(ns),
    };
    match r
        .create(
            t,
            strategies::for_resource(info),
            p,
            &WriteOptions::default(),
        )
        .await
    {
        Ok(o) => Ok(o),
        Err(e) => {
            admitted.rollback(r).await;
            Err(e)
        }
    }
}

#[tokio::test]
async fn plugins_quota_counts_pods() {
    let r = registry();
    namespace(&r, "ns").await;
    quota(&r, "ns", "q", json!({"pods": "2", "count/configmaps": "5"})).await;
    create_pod(&r, "ns", pod("a")).await.unwrap();
    create_pod(&r, "ns", pod("b")).await.unwrap();
    assert_eq!(used(&r, "ns", "q").await, json!({"pods": "2"}));
    let err = create_pod(&r, "ns", pod("c")).await.unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "pods \"c\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    );
    // A failed write gives its charge back.
    let err = create_pod(&r, "ns", pod("a")).await;
    assert!(err.is_err());
    assert_eq!(used(&r, "ns", "q").await["pods"], "2");
}

#[tokio::test]
async fn plugins_quota_rollback_after_failed_write() {
    let r = registry();
    namespace(&r, "ns").await;
    quota(&r, "ns", "q", json!({"pods": "3"})).await;
    create_pod(&r, "ns", pod("a")).await.unwrap();
    assert_eq!(used(&r, "ns", "q").await["pods"], "1");
    assert!(
        create_pod(&r, "ns", pod("a"))
            .await
            .unwrap_err()
            .is_already_exists()
    );
    assert_eq!(used(&r, "ns", "q").await["pods"], "1");
}

#[tokio::test]
async fn plugins_quota_seeds_usage_from_storage_and_leaves_deletes_to_the_controller() {
    let r = registry();
    namespace(&r, "ns").await;
    put(
        &r,
        "",
        "configmaps",
        Some("ns"),
        json!({"metadata": {"name": "one"}}),
    )
    .await;
    quota(
        &r,
        "ns",
        "q",
        json!({"configmaps": "2", "count/configmaps": "2"}),
    )
    .await;
    let u = user();
    let cm = json!({"metadata": {"name": "two"}});
    let req = request(&r, &u, Operation::Create, "configmaps", Some("ns"), "two");
    let _charged = validate(&req, &cm, None).await.unwrap();
    put(&r, "", "configmaps", Some("ns"), cm).await;
    assert_eq!(
        used(&r, "ns", "q").await,
        json!({"configmaps": "2", "count/configmaps": "2"})
    );
    let req = request(&r, &u, Operation::Create, "configmaps", Some("ns"), "three");
    let err = validate(&req, &json!({"metadata": {"name": "three"}}), None)
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "configmaps \"three\" is forbidden: exceeded quota: q, requested: configmaps=1,count/configmaps=1, \
         used: configmaps=2,count/configmaps=2, limited: configmaps=2,count/configmaps=2"
    );
    // A delete releases nothing here: as upstream, the object counts until it is gone and the
    // resourcequota controller recalculates afterwards.
    let req = request(&r, &u, Operation::Delete, "configmaps", Some("ns"), "one");
    let released = validate(&req, &Value::Null, None).await.unwrap();
    assert!(released.is_empty());
    let t = Target {
        info: res("", "configmaps"),
        namespace: Some("ns"),
    };
    r.delete(t, "one", &DeleteOptions::default()).await.unwrap();
    assert_eq!(
        used(&r, "ns", "q").await,
        json!({"configmaps": "2", "count/configmaps": "2"})
    );
    // A dry run is checked (and refused here) without charging.
    let mut req = request(&r, &u, Operation::Create, "configmaps", Some("ns"), "three");
    req.dry_run = true;
    let refused = validate(&req, &json!({"metadata": {"name": "three"}}), None).await;
    assert!(refused.is_err());
    assert_eq!(used(&r, "ns", "q").await["configmaps"], "2");
}

#[tokio::test]
async fn plugins_quota_compute_resources() {
    let r = registry();
    namespace(&r, "ns").await;
    quota(
        &r,
        "ns",
        "compute",
        json!({"requests.cpu": "1", "limits.memory": "1Gi", "cpu": "2"}),
    )
    .await;
    let err = create_pod(&r, "ns", pod("bare")).await.unwrap_err();
    assert_eq!(
        err.message,
        "pods \"bare\" is forbidden: failed quota: compute: must specify cpu for: c; limits.memory for: c; requests.cpu for: c"
    );
    let sized = |name: &str, cpu: &str, mem: &str| {
        let mut p = pod(name);
        p["spec"]["containers"][0]["resources"] =
            json!({"requests": {"cpu": cpu}, "limits": {"memory": mem, "cpu": cpu}});
        p
    };
    create_pod(&r, "ns", sized("a", "500m", "512Mi"))
        .await
        .unwrap();
    create_pod(&r, "ns", sized("b", "0.25", "256Mi"))
        .await
        .unwrap();
    assert_eq!(
        used(&r, "ns", "compute").await,
        json!({"cpu": "750m", "limits.memory": "768Mi", "requests.cpu": "750m"})
    );
    let err = create_pod(&r, "ns", sized("c", "500m", "512Mi"))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "pods \"c\" is forbidden: exceeded quota: compute, requested: limits.memory=512Mi,requests.cpu=500m, \
         used: limits.memory=768Mi,requests.cpu=750m, limited: limits.memory=1Gi,requests.cpu=1"
    );
    create_pod(&r, "ns", sized("d", "250m", "256Mi"))
        .await
        .unwrap();
    assert_eq!(
        used(&r, "ns", "compute").await,
        json!({"cpu": "1", "limits.memory": "1Gi", "requests.cpu": "1"})
    );
}

#[tokio::test]
async fn plugins_quota_scopes_and_services() {
    let r = registry();
    namespace(&r, "ns").await;
    // Scopes are fixed at create (upstream's ValidateResourceQuotaUpdate).
    put(
        &r,
        "",
        "resourcequotas",
        Some("ns"),
        json!({"metadata": {"name": "be"}, "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}}),
    )
    .await;
    create_pod(&r, "ns", pod("a")).await.unwrap();
    assert!(create_pod(&r, "ns", pod("b")).await.is_err());
    let mut sized = pod("c");
    sized["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1"}});
    create_pod(&r, "ns", sized).await.unwrap();

    quota(
        &r,
        "ns",
        "svc",
        json!({"services.nodeports": "2", "services.loadbalancers": "0"}),
    )
    .await;
    let u = user();
    let svc = json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort",
        "ports": [{"port": 80}, {"port": 81}, {"port": 82}]}});
    let req = request(&r, &u, Operation::Create, "services", Some("ns"), "s");
    let err = validate(&req, &svc, None).await.unwrap_err();
    assert_eq!(
        err.message,
        "services \"s\" is forbidden: exceeded quota: svc, requested: services.nodeports=3, \
         used: services.nodeports=0, limited: services.nodeports=2"
    );
    let svc =
        json!({"metadata": {"name": "s"}, "spec": {"type": "ClusterIP", "ports": [{"port": 80}]}});
    assert!(validate(&req, &svc, None).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plugins_quota_concurrent_creates_never_exceed_hard() {
    let r = registry();
    namespace(&r, "ns").await;
    quota(&r, "ns", "q", json!({"pods": "5"})).await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let r = r.clone();
        tasks.push(tokio::spawn(async move {
            create_pod(&r, "ns", pod(&format!("p{i}"))).await
        }));
    }
    let mut created = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => created += 1,
            Err(e) => assert!(e.message.contains("exceeded quota: q"), "{}", e.message),
        }
    }
    assert_eq!(created, 5);
    assert_eq!(used(&r, "ns", "q").await["pods"], "5");
    let pods = super::list_all(&r, res("", "pods"), Some("ns"))
        .await
        .unwrap();
    assert_eq!(pods.len(), 5);
}
