//! kube-rs (kube 5) against the real `k1s` binary, with the kubeconfig the server wrote.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k1s_tests::TestCluster;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn configmap(name: &str, label_pairs: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: labels(label_pairs),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name, "suite": "kube-rs"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}
            }
        }
    }))
    .expect("deployment")
}

async fn with_namespace(c: &TestCluster, ns: &str) -> Client {
    let client = c.client().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let created = namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("create namespace");
    assert_eq!(created.name_any(), ns);
    client
}

/// The API status of a failed call.
fn api_error<T: std::fmt::Debug>(res: kube::Result<T>) -> kube::core::Status {
    match res {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn sorted_names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|o| o.name_any()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn configmap_crud_selectors_and_patches() {
    let c = TestCluster::start();
    let client = with_namespace(&c, "rs").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "rs");
    let pp = PostParams::default();

    // create
    let created = api
        .create(&pp, &configmap("a", &[("env", "x")], &[("k", "v")]))
        .await
        .expect("create a");
    assert_eq!(created.namespace().as_deref(), Some("rs"));
    assert!(created.uid().is_some_and(|u| !u.is_empty()));
    assert!(created.resource_version().is_some_and(|rv| !rv.is_empty()));
    assert!(created.metadata.creation_timestamp.is_some());
    let status = api_error(api.create(&pp, &configmap("a", &[], &[])).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists"),
        "{status:?}"
    );

    // generateName
    let mut gen_cm = configmap("", &[("env", "gen")], &[]);
    gen_cm.metadata.name = None;
    gen_cm.metadata.generate_name = Some("gen-".to_string());
    let generated = api
        .create(&pp, &gen_cm)
        .await
        .expect("create with generateName");
    assert!(
        generated.name_any().starts_with("gen-") && generated.name_any().len() > 4,
        "{generated:?}"
    );

    // get
    let got = api.get("a").await.expect("get a");
    assert_eq!(
        got.data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("v")
    );
    assert_eq!(got.uid(), created.uid());
    let status = api_error(api.get("missing").await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (404, "NotFound"),
        "{status:?}"
    );
    assert!(api.get_opt("missing").await.expect("get_opt").is_none());

    // replace
    let mut changed = got.clone();
    changed.data = Some([("k".to_string(), "v2".to_string())].into());
    let replaced = api.replace("a", &pp, &changed).await.expect("replace a");
    assert_ne!(replaced.resource_version(), got.resource_version());
    assert_eq!(
        replaced
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("v2")
    );

    // list with label and field selectors
    api.create(&pp, &configmap("b", &[("env", "y")], &[]))
        .await
        .expect("create b");
    api.create(&pp, &configmap("c", &[("env", "z")], &[]))
        .await
        .expect("create c");
    let list = api
        .list(&ListParams::default().labels("env=x"))
        .await
        .expect("list env=x");
    assert_eq!(sorted_names(&list.items), ["a"]);
    let list = api
        .list(&ListParams::default().labels("env in (x,y)"))
        .await
        .expect("list set-based");
    assert_eq!(sorted_names(&list.items), ["a", "b"]);
    let list = api
        .list(&ListParams::default().labels("env,env notin (x)"))
        .await
        .expect("list notin");
    let mut expected = vec!["b".to_string(), "c".to_string(), generated.name_any()];
    expected.sort();
    assert_eq!(sorted_names(&list.items), expected);
    let list = api
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .expect("list fields");
    assert_eq!(sorted_names(&list.items), ["b"]);
    let list = api
        .list(
            &ListParams::default()
                .fields("metadata.namespace=rs")
                .labels("env=z"),
        )
        .await
        .expect("list fields+labels");
    assert_eq!(sorted_names(&list.items), ["c"]);
    assert!(
        list.metadata
            .resource_version
            .is_some_and(|rv| !rv.is_empty())
    );

    // pagination
    let page = api
        .list(&ListParams::default().labels("env").limit(2))
        .await
        .expect("page 1");
    assert_eq!(page.items.len(), 2);
    let token = page.metadata.continue_.clone().expect("continue token");
    let rest = api
        .list(
            &ListParams::default()
                .labels("env")
                .limit(2)
                .continue_token(&token),
        )
        .await
        .expect("page 2");
    let mut all = sorted_names(&page.items);
    all.extend(sorted_names(&rest.items));
    all.sort();
    let mut want = vec![
        "a".to_string(),
        "b".to_string(),
        "c".to_string(),
        generated.name_any(),
    ];
    want.sort();
    assert_eq!(all, want);

    // merge patch adds a key, keeps the others
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"data": {"extra": "1"}, "metadata": {"labels": {"patched": "merge"}}}),
            ),
        )
        .await
        .expect("merge patch");
    let data = patched.data.clone().unwrap_or_default();
    assert_eq!(data.get("k").map(String::as_str), Some("v2"));
    assert_eq!(data.get("extra").map(String::as_str), Some("1"));
    assert_eq!(
        patched.labels().get("patched").map(String::as_str),
        Some("merge")
    );
    // strategic merge patch on a ConfigMap: `$patch: delete`-free map merge, null removes
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"extra": null, "s": "2"}})),
        )
        .await
        .expect("strategic patch");
    let data = patched.data.clone().unwrap_or_default();
    assert_eq!(data.get("extra"), None);
    assert_eq!(data.get("s").map(String::as_str), Some("2"));
    // server-side apply of a key another manager set (by update) is a conflict
    let status = api_error(
        api.patch(
            "a",
            &PatchParams::apply("k1s-tests"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "applied"}})),
        )
        .await,
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(status.reason, "Conflict", "{status:?}");
    assert!(
        status
            .message
            .starts_with("Apply failed with 1 conflict: conflict with "),
        "{status:?}"
    );
    assert_eq!(
        api.get("a")
            .await
            .expect("get a")
            .data
            .unwrap_or_default()
            .get("k")
            .map(String::as_str),
        Some("v2"),
        "a rejected apply must not change the object"
    );

    // delete
    let deleted = api
        .delete("b", &DeleteParams::default())
        .await
        .expect("delete b");
    if let Some(obj) = deleted.left() {
        assert_eq!(obj.name_any(), "b");
    }
    let status = api_error(api.get("b").await);
    assert_eq!(status.code, 404, "{status:?}");
    let status = api_error(api.delete("b", &DeleteParams::default()).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (404, "NotFound"),
        "{status:?}"
    );
    // delete with a stale UID precondition is a Conflict
    let pre = kube::api::Preconditions {
        uid: Some("00000000-0000-0000-0000-000000000000".to_string()),
        resource_version: None,
    };
    let status = api_error(
        api.delete("c", &DeleteParams::default().preconditions(pre))
            .await,
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert!(api.get_opt("c").await.expect("get c").is_some());
}

#[tokio::test]
async fn deployment_crud_and_strategic_patch() {
    let c = TestCluster::start();
    let client = with_namespace(&c, "apps").await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let pp = PostParams::default();
    let created = api
        .create(&pp, &deployment("web", 1))
        .await
        .expect("create deployment");
    assert_eq!(created.metadata.generation, Some(1));
    let spec = created.spec.clone().expect("spec");
    // defaulting
    assert_eq!(
        spec.strategy.and_then(|s| s.type_).as_deref(),
        Some("RollingUpdate")
    );
    assert_eq!(spec.revision_history_limit, Some(10));
    api.create(&pp, &deployment("api", 2))
        .await
        .expect("create deployment api");

    // strategic merge: containers merge by name
    let patched = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.36"}]}}}})),
        )
        .await
        .expect("strategic patch");
    let containers = patched
        .spec
        .as_ref()
        .expect("spec")
        .template
        .spec
        .as_ref()
        .expect("pod spec")
        .containers
        .clone();
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    // upstream order: items new in the patch come before server-only items
    assert_eq!(names, ["sidecar", "main"]);
    assert_eq!(
        patched.metadata.generation,
        Some(2),
        "a spec change bumps generation"
    );
    // merge patch of a scalar
    let patched = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(patched.spec.as_ref().and_then(|s| s.replicas), Some(3));
    // a label-only change does not bump generation
    let patched = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .expect("label patch");
    assert_eq!(patched.metadata.generation, Some(3));

    // replace (the deployment controller writes the object too: retry on conflict)
    let mut attempts = 0;
    let replaced = loop {
        let mut dep = api.get("web").await.expect("get web");
        dep.spec
            .as_mut()
            .expect("spec")
            .template
            .spec
            .as_mut()
            .expect("pod spec")
            .containers[0]
            .image = Some("nginx:1.27".to_string());
        match api.replace("web", &pp, &dep).await {
            Ok(d) => break d,
            Err(kube::Error::Api(s)) if s.code == 409 && attempts < 10 => attempts += 1,
            Err(e) => panic!("replace: {e}"),
        }
    };
    assert_eq!(
        replaced
            .spec
            .expect("spec")
            .template
            .spec
            .expect("pod spec")
            .containers[0]
            .image
            .as_deref(),
        Some("nginx:1.27")
    );

    // validation: an empty container list is Invalid (422)
    let mut bad = deployment("bad", 1);
    bad.spec
        .as_mut()
        .expect("spec")
        .template
        .spec
        .as_mut()
        .expect("pod spec")
        .containers
        .clear();
    let status = api_error(api.create(&pp, &bad).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{status:?}"
    );

    // list with selectors
    let list = api
        .list(&ListParams::default().labels("suite=kube-rs,app=web"))
        .await
        .expect("list");
    assert_eq!(sorted_names(&list.items), ["web"]);
    let list = api
        .list(&ListParams::default().fields("metadata.name=api"))
        .await
        .expect("list");
    assert_eq!(sorted_names(&list.items), ["api"]);
    let all: Api<Deployment> = Api::all(client.clone());
    let list = all
        .list(&ListParams::default().labels("suite=kube-rs"))
        .await
        .expect("list all namespaces");
    assert_eq!(sorted_names(&list.items), ["api", "web"]);

    // delete
    api.delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(api.get_opt("web").await.expect("get_opt").is_none());
}

#[tokio::test]
async fn stale_replace_is_conflict() {
    let c = TestCluster::start();
    let client = with_namespace(&c, "cf").await;
    let api: Api<ConfigMap> = Api::namespaced(client, "cf");
    api.create(&PostParams::default(), &configmap("x", &[], &[("n", "0")]))
        .await
        .expect("create");
    let stale = api.get("x").await.expect("get");
    let mut fresh = stale.clone();
    fresh.data = Some([("n".to_string(), "1".to_string())].into());
    api.replace("x", &PostParams::default(), &fresh)
        .await
        .expect("first replace");
    let mut old = stale.clone();
    old.data = Some([("n".to_string(), "2".to_string())].into());
    let status = api_error(api.replace("x", &PostParams::default(), &old).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "Conflict"),
        "{status:?}"
    );
    assert!(
        status.message.contains("the object has been modified; please apply your changes to the latest version and try again"),
        "{status:?}"
    );
    let now = api.get("x").await.expect("get");
    assert_eq!(
        now.data.unwrap_or_default().get("n").map(String::as_str),
        Some("1")
    );
}

/// Runs a watcher with `config`, checks the initial state, then that creation, modification and
/// deletion arrive as Apply / Apply / Delete.
async fn watcher_sees_changes(config: watcher::Config, ns: &str) {
    let c = TestCluster::start();
    let client = with_namespace(&c, ns).await;
    let api: Api<ConfigMap> = Api::namespaced(client, ns);
    api.create(&PostParams::default(), &configmap("before", &[], &[]))
        .await
        .expect("create before");

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = watcher(api.clone(), config);
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if tx.send(ev).is_err() {
                break;
            }
        }
    });
    let mut next = async || -> watcher::Event<ConfigMap> {
        match tokio::time::timeout(WAIT, rx.recv()).await {
            Ok(Some(Ok(ev))) => ev,
            Ok(Some(Err(e))) => panic!("watcher error: {e}"),
            Ok(None) => panic!("watcher stream ended"),
            Err(_) => panic!("no watch event within {WAIT:?}"),
        }
    };

    // initial state
    let mut initial = Vec::new();
    loop {
        match next().await {
            watcher::Event::Init => {}
            watcher::Event::InitApply(o) => initial.push(o.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected event before InitDone: {other:?}"),
        }
    }
    initial.retain(|n| n != "kube-root-ca.crt");
    assert_eq!(initial, ["before"]);

    // changes
    api.create(
        &PostParams::default(),
        &configmap("live", &[], &[("a", "1")]),
    )
    .await
    .expect("create live");
    api.patch(
        "live",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "2"}})),
    )
    .await
    .expect("patch live");
    api.delete("live", &DeleteParams::default())
        .await
        .expect("delete live");

    let mut seen = Vec::new();
    loop {
        let ev = next().await;
        let entry = match &ev {
            watcher::Event::Apply(o) if o.name_any() == "live" => {
                format!(
                    "Apply(a={})",
                    o.data
                        .clone()
                        .unwrap_or_default()
                        .get("a")
                        .cloned()
                        .unwrap_or_default()
                )
            }
            watcher::Event::Delete(o) if o.name_any() == "live" => "Delete".to_string(),
            watcher::Event::Apply(o) if o.name_any() == "kube-root-ca.crt" => continue,
            other => panic!("unexpected event {other:?}; seen so far {seen:?}"),
        };
        seen.push(entry);
        if seen.last().is_some_and(|e| e == "Delete") {
            break;
        }
    }
    assert_eq!(seen, ["Apply(a=1)", "Apply(a=2)", "Delete"]);
    task.abort();
}

#[tokio::test]
async fn watcher_list_then_watch() {
    watcher_sees_changes(watcher::Config::default(), "wl").await;
}

#[tokio::test]
async fn watcher_streaming_lists() {
    watcher_sees_changes(watcher::Config::default().streaming_lists(), "ws").await;
}

#[tokio::test]
async fn raw_requests_and_discovery() {
    let c = TestCluster::start();
    let client = c.client().await;
    let version = client.apiserver_version().await.expect("version");
    assert_eq!(version.major, "1");
    assert!(!version.minor.is_empty());
    let groups = client.list_api_groups().await.expect("api groups");
    assert!(groups.groups.iter().any(|g| g.name == "apps"), "{groups:?}");
    let core = client
        .list_core_api_resources("v1")
        .await
        .expect("core resources");
    let pods = core
        .resources
        .iter()
        .find(|r| r.name == "pods")
        .expect("pods");
    assert!(pods.namespaced);
    assert_eq!(pods.kind, "Pod");
    assert!(pods.verbs.iter().any(|v| v == "watch"), "{pods:?}");
    assert!(
        core.resources.iter().any(|r| r.name == "pods/status"),
        "{core:?}"
    );
}

/// table_conversion.go: a review has no table form, so a request that accepts only a Table is
/// refused with 406 (upstream gives the reviews no TableConvertor); a list still converts.
#[tokio::test]
async fn a_table_of_a_review_is_not_acceptable() {
    let c = TestCluster::start();
    let client = c.client().await;
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}});
    let req = http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&review).expect("body"))
        .expect("request");
    let status = api_error(client.request_text(req).await);
    assert_eq!(status.code, 406, "{status:?}");
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .expect("request");
    let table = client.request_text(req).await.expect("a table of a list");
    assert!(table.contains("\"kind\":\"Table\""), "{table}");
}
