//! The generic registry's object semantics, driven in-process on the memory store.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k1s_apimachinery::catalog;
use k1s_apimachinery::selector::{FieldSelector, LabelSelector};
use k1s_apiserver::registry::{
    DeleteOptions, DeleteOutcome, ListQuery, Registry, Target, WatchEvent, WatchQuery, WriteOptions,
};
use k1s_apiserver::strategies;
use k1s_storage::{Backend, LocalStore, Store, StoreConfig};
use serde_json::{Value, json};

fn registry() -> Registry {
    let mut cfg = StoreConfig::new(Backend::Memory);
    cfg.compaction.interval = None;
    let store: Arc<dyn Store> = Arc::new(LocalStore::open(cfg).unwrap());
    Registry::new(store)
}

fn target(group: &str, version: &str, resource: &str, ns: Option<&'static str>) -> Target<'static> {
    Target {
        info: catalog::find(group, version, resource).unwrap(),
        namespace: ns,
    }
}

async fn create(
    r: &Registry,
    t: Target<'_>,
    obj: Value,
) -> Result<Value, k1s_apimachinery::ApiError> {
    r.create(
        t,
        strategies::for_resource(t.info),
        obj,
        &WriteOptions::default(),
    )
    .await
}

async fn with_namespace(r: &Registry, name: &str) {
    create(
        r,
        target("", "v1", "namespaces", None),
        json!({"metadata": {"name": name}}),
    )
    .await
    .unwrap();
}

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    })
}

async fn update(
    r: &Registry,
    t: Target<'_>,
    name: &str,
    sub: Option<&str>,
    obj: Value,
) -> Result<Value, k1s_apimachinery::ApiError> {
    r.update(
        t,
        strategies::for_resource(t.info),
        name,
        sub,
        &WriteOptions::default(),
        |_| Ok(obj.clone()),
    )
    .await
}

#[tokio::test]
async fn create_sets_system_fields_and_defaults() {
    let r = registry();
    with_namespace(&r, "ns").await;
    let d = create(
        &r,
        target("apps", "v1", "deployments", Some("ns")),
        deployment("web"),
    )
    .await
    .unwrap();
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(d["metadata"]["namespace"], "ns");
    assert!(d["metadata"]["uid"].as_str().unwrap().len() == 36);
    assert!(
        d["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert!(
        d["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .is_ok()
    );
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
    // Kinds without a status subresource track no generation.
    let cm = create(
        &r,
        target("", "v1", "configmaps", Some("ns")),
        json!({"metadata": {"name": "c"}}),
    )
    .await
    .unwrap();
    assert!(cm["metadata"].get("generation").is_none());
    // generateName appends five characters.
    let g = create(
        &r,
        target("", "v1", "configmaps", Some("ns")),
        json!({"metadata": {"generateName": "gen-"}}),
    )
    .await
    .unwrap();
    let name = g["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn invalid_and_misplaced_objects_are_refused() {
    let r = registry();
    let missing = create(
        &r,
        target("", "v1", "configmaps", Some("nope")),
        json!({"metadata": {"name": "c"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "namespaces \"nope\" not found")
    );
    with_namespace(&r, "ns").await;
    let mut no_selector = deployment("web");
    no_selector["spec"]
        .as_object_mut()
        .unwrap()
        .remove("selector");
    let err = create(
        &r,
        target("apps", "v1", "deployments", Some("ns")),
        no_selector,
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("spec.selector: Required value"),
        "{}",
        err.message
    );
    let dup = create(
        &r,
        target("", "v1", "configmaps", Some("ns")),
        json!({"metadata": {"name": "c"}}),
    )
    .await;
    assert!(dup.is_ok());
    let dup = create(
        &r,
        target("", "v1", "configmaps", Some("ns")),
        json!({"metadata": {"name": "c"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (dup.code, dup.message.as_str()),
        (409, "configmaps \"c\" already exists")
    );
}

#[tokio::test]
async fn updates_follow_optimistic_concurrency_generation_and_status_isolation() {
    let r = registry();
    with_namespace(&r, "ns").await;
    let t = target("apps", "v1", "deployments", Some("ns"));
    let d = create(&r, t, deployment("web")).await.unwrap();
    // Stale resourceVersion: 409 with upstream's message.
    let mut stale = d.clone();
    stale["metadata"]["labels"]["x"] = json!("1");
    let fresh = update(&r, t, "web", None, stale.clone()).await.unwrap();
    let err = update(&r, t, "web", None, stale).await.unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
    );
    // A label change keeps the generation; a spec change bumps it.
    assert_eq!(fresh["metadata"]["generation"], 1);
    let mut spec = fresh.clone();
    spec["spec"]["replicas"] = json!(3);
    spec["status"] = json!({"replicas": 99});
    let bumped = update(&r, t, "web", None, spec).await.unwrap();
    assert_eq!(bumped["metadata"]["generation"], 2);
    assert!(
        bumped.get("status").is_none() || bumped["status"].get("replicas").is_none(),
        "main resource cannot set status"
    );
    // The status subresource changes status only.
    let mut st = bumped.clone();
    st["status"] = json!({"replicas": 3});
    st["spec"]["replicas"] = json!(10);
    let after = update(&r, t, "web", Some("status"), st).await.unwrap();
    assert_eq!(after["status"]["replicas"], 3);
    assert_eq!(after["spec"]["replicas"], 3);
    assert_eq!(after["metadata"]["generation"], 2);
    // Unconditional update (no resourceVersion) is allowed; an identical one writes nothing.
    let mut unconditional = after.clone();
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let same = update(&r, t, "web", None, unconditional).await.unwrap();
    assert_eq!(
        same["metadata"]["resourceVersion"],
        after["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn finalizers_hold_deletion_and_preconditions_are_checked() {
    let r = registry();
    with_namespace(&r, "ns").await;
    let t = target("", "v1", "configmaps", Some("ns"));
    let cm = create(
        &r,
        t,
        json!({"metadata": {"name": "f", "finalizers": ["example.com/hold"]}}),
    )
    .await
    .unwrap();
    let bad = DeleteOptions {
        precondition_uid: Some("other".into()),
        ..Default::default()
    };
    let err = r.delete(t, "f", &bad).await.err().unwrap();
    assert_eq!(err.code, 409);
    assert!(
        err.message
            .contains("Precondition failed: UID in precondition: other"),
        "{}",
        err.message
    );
    let marked = match r.delete(t, "f", &DeleteOptions::default()).await.unwrap() {
        DeleteOutcome::Pending(o) => o,
        DeleteOutcome::Deleted(_) => panic!("finalizers must hold the object"),
    };
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["uid"], cm["metadata"]["uid"]);
    // Adding a finalizer while deleting is refused; removing the last one deletes the object.
    let mut more = marked.clone();
    more["metadata"]["finalizers"] = json!(["example.com/hold", "example.com/new"]);
    assert_eq!(update(&r, t, "f", None, more).await.unwrap_err().code, 422);
    let mut done = marked.clone();
    done["metadata"]["finalizers"] = json!([]);
    update(&r, t, "f", None, done).await.unwrap();
    assert_eq!(r.get(t, "f").await.unwrap_err().code, 404);
    // Creating inside a terminating namespace is forbidden.
    let ns = target("", "v1", "namespaces", None);
    assert!(matches!(
        r.delete(ns, "ns", &DeleteOptions::default()).await.unwrap(),
        DeleteOutcome::Pending(_)
    ));
    let err = create(&r, t, json!({"metadata": {"name": "late"}}))
        .await
        .unwrap_err();
    assert_eq!(err.code, 403);
    assert!(
        err.message.contains("because it is being terminated"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let r = registry();
    with_namespace(&r, "ns").await;
    let t = target("", "v1", "configmaps", Some("ns"));
    let before = r.store().current_revision();
    let dry = WriteOptions {
        dry_run: true,
        ..Default::default()
    };
    let obj = r
        .create(
            t,
            strategies::for_resource(t.info),
            json!({"metadata": {"name": "d"}}),
            &dry,
        )
        .await
        .unwrap();
    assert_eq!(obj["metadata"]["name"], "d");
    assert_eq!(r.store().current_revision(), before);
    assert_eq!(r.get(t, "d").await.unwrap_err().code, 404);
}

#[tokio::test]
async fn lists_filter_and_page() {
    let r = registry();
    with_namespace(&r, "ns").await;
    let t = target("", "v1", "configmaps", Some("ns"));
    for i in 0..7 {
        let env = if i % 2 == 0 { "prod" } else { "dev" };
        create(
            &r,
            t,
            json!({"metadata": {"name": format!("c{i}"), "labels": {"env": env}}}),
        )
        .await
        .unwrap();
    }
    let q = ListQuery {
        label_selector: Some(LabelSelector::parse("env in (prod)").unwrap()),
        limit: 2,
        ..Default::default()
    };
    let mut names = Vec::new();
    let mut token = None;
    loop {
        let page = r
            .list(
                t,
                &ListQuery {
                    continue_token: token.take(),
                    ..q.clone()
                },
            )
            .await
            .unwrap();
        assert!(page.items.len() <= 2);
        names.extend(
            page.items
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string()),
        );
        match page.continue_token {
            Some(c) => token = Some(c),
            None => break,
        }
    }
    assert_eq!(names, ["c0", "c2", "c4", "c6"]);
    let by_name = ListQuery {
        field_selector: Some(FieldSelector::parse("metadata.name=c3").unwrap()),
        ..Default::default()
    };
    assert_eq!(r.list(t, &by_name).await.unwrap().items.len(), 1);
}

async fn next(w: &mut k1s_apiserver::registry::WatchStream) -> WatchEvent {
    tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn watch_with_selector_sees_objects_leave_and_enter() {
    let r = registry();
    with_namespace(&r, "ns").await;
    let t = target("", "v1", "configmaps", Some("ns"));
    create(
        &r,
        t,
        json!({"metadata": {"name": "a", "labels": {"w": "yes"}}}),
    )
    .await
    .unwrap();
    let q = WatchQuery {
        label_selector: Some(LabelSelector::parse("w=yes").unwrap()),
        ..Default::default()
    };
    let mut w = r.watch(t, q).await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Added(o) if o["metadata"]["name"] == "a"));
    let cur = r.get(t, "a").await.unwrap();
    let mut off = cur.clone();
    off["metadata"]["labels"]["w"] = json!("no");
    update(&r, t, "a", None, off.clone()).await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Deleted(o) if o["metadata"]["name"] == "a"));
    let mut on = r.get(t, "a").await.unwrap();
    on["metadata"]["labels"]["w"] = json!("yes");
    update(&r, t, "a", None, on).await.unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Added(_)));
    r.delete(t, "a", &DeleteOptions::default()).await.unwrap();
    match next(&mut w).await {
        WatchEvent::Deleted(o) => assert_eq!(
            o["metadata"]["resourceVersion"],
            r.store().current_revision().to_string()
        ),
        other => panic!("expected DELETED, got {other:?}"),
    }
    // A watch from a compacted revision is one ERROR event with 410 Expired.
    r.store()
        .compact(r.store().current_revision())
        .await
        .unwrap();
    let old = WatchQuery {
        resource_version: "1".into(),
        ..Default::default()
    };
    let mut expired = r.watch(t, old).await.unwrap();
    match next(&mut expired).await {
        WatchEvent::Error(status) => {
            assert_eq!(status["code"], 410);
            assert_eq!(status["reason"], "Expired");
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
}

#[tokio::test]
async fn hpa_is_stored_once_and_served_in_both_versions() {
    let r = registry();
    with_namespace(&r, "ns").await;
    let v1 = target("autoscaling", "v1", "horizontalpodautoscalers", Some("ns"));
    let v2 = target("autoscaling", "v2", "horizontalpodautoscalers", Some("ns"));
    let mut hpa = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}
    });
    k1s_apiserver::conversion::to_storage(v1.info, &mut hpa).expect("HPA conversion");
    create(&r, v1, hpa).await.unwrap();
    let as_v2 = r.get(v2, "h").await.unwrap();
    assert_eq!(as_v2["apiVersion"], "autoscaling/v2");
    assert_eq!(as_v2["spec"]["metrics"][0]["resource"]["name"], "cpu");
    assert_eq!(
        as_v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        70
    );
    let as_v1 = r.get(v1, "h").await.unwrap();
    assert_eq!(as_v1["apiVersion"], "autoscaling/v1");
    assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 70);
    assert!(as_v1["spec"].get("metrics").is_none());
}

#[tokio::test]
async fn watch_from_a_revision_written_by_another_resource() {
    // A list's resourceVersion is the store's, which another resource may have produced last;
    // the cache must not wait for a write of its own resource (upstream: progress notify).
    let r = registry();
    with_namespace(&r, "ns").await;
    let cms = target("", "v1", "configmaps", Some("ns"));
    create(&r, cms, json!({"metadata": {"name": "a"}}))
        .await
        .unwrap();
    // Start the configmaps cache, then move the store on with writes elsewhere.
    drop(r.watch(cms, WatchQuery::default()).await.unwrap());
    let secrets = target("", "v1", "secrets", Some("ns"));
    create(&r, secrets, json!({"metadata": {"name": "s"}}))
        .await
        .unwrap();
    let rv = r.store().current_revision().to_string();
    let started = std::time::Instant::now();
    let mut w = r
        .watch(
            cms,
            WatchQuery {
                resource_version: rv,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "watch waited {:?}",
        started.elapsed()
    );
    create(&r, cms, json!({"metadata": {"name": "b"}}))
        .await
        .unwrap();
    assert!(matches!(next(&mut w).await, WatchEvent::Added(o) if o["metadata"]["name"] == "b"));
}
