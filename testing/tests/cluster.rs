//! `TestCluster` itself: its parts and switches, its helpers (CRDs from a directory, discovery
//! waits, object waits, events, clients as other users, a CronJob run now), and that dropping it
//! stops it and leaves nothing behind.

use std::time::Duration;

use k1s_testing::{Error, TestCluster, read_crds, wait_for, wait_for_deletion, wait_for_within};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

fn object<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("object")
}

#[tokio::test]
async fn pods_run_on_simulated_nodes_and_drop_cleans_up() -> anyhow::Result<()> {
    let cluster = TestCluster::builder().nodes(2).start().await?;
    let kubeconfig = cluster.kubeconfig_path().to_path_buf();
    assert!(kubeconfig.is_file());
    assert!(cluster.ca_pem().contains("BEGIN CERTIFICATE"));
    assert_eq!(
        cluster.kubeconfig().clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.as_deref()),
        Some(cluster.url())
    );

    let nodes: Api<Node> = Api::all(cluster.client());
    for name in ["k1s-node-0", "k1s-node-1"] {
        wait_for(&nodes, name, |n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .await?;
    }

    // A pod that runs for a second, then succeeds.
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let pod: Pod = object(serde_json::json!({
        "metadata": {"name": "short", "annotations": {"sim.k1s.io/run-seconds": "1"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }));
    pods.create(&PostParams::default(), &pod).await?;
    let done = wait_for(&pods, "short", |p| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded")
    })
    .await?;
    assert!(
        done.spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .is_some()
    );
    let events = cluster.events_for(&done).await?;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Scheduled")),
        "{events:?}"
    );

    let port = cluster
        .url()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        .expect("port");
    drop(cluster);
    assert!(!kubeconfig.exists(), "the kubeconfig outlived the cluster");
    // The listener closes with the cluster (the abort is processed by the runtime).
    let mut closed = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(closed, "port {port} still accepts connections");
    Ok(())
}

#[tokio::test]
async fn switched_off_parts_do_not_run() -> anyhow::Result<()> {
    let cluster = TestCluster::builder()
        .nodes(0)
        .scheduler(false)
        .controller_manager(false)
        .start()
        .await?;
    let nodes: Api<Node> = Api::all(cluster.client());
    assert!(nodes.list(&ListParams::default()).await?.items.is_empty());
    // Without the garbage collector an orphaned dependent stays: a bare API server.
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let owner = cms
        .create(
            &PostParams::default(),
            &object(serde_json::json!({"metadata": {"name": "owner"}})),
        )
        .await?;
    let uid = owner.metadata.uid.clone().expect("uid");
    cms.create(
        &PostParams::default(),
        &object(
            serde_json::json!({"metadata": {"name": "dependent", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
        ),
    )
    .await?;
    cms.delete("owner", &DeleteParams::default()).await?;
    match wait_for_within(&cms, "dependent", Duration::from_millis(500), |c| {
        c.metadata.deletion_timestamp.is_some()
    })
    .await
    {
        Err(Error::Timeout { .. }) => {}
        other => panic!("the dependent changed without a garbage collector: {other:?}"),
    }
    assert!(cms.get_opt("dependent").await?.is_some());
    Ok(())
}

#[tokio::test]
async fn dependents_are_garbage_collected() -> anyhow::Result<()> {
    let cluster = TestCluster::builder()
        .nodes(0)
        .scheduler(false)
        .start()
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    let owner = cms
        .create(
            &PostParams::default(),
            &object(serde_json::json!({"metadata": {"name": "owner"}})),
        )
        .await?;
    let uid = owner.metadata.uid.clone().expect("uid");
    secrets
        .create(
            &PostParams::default(),
            &object(
                serde_json::json!({"metadata": {"name": "dependent", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}}),
            ),
        )
        .await?;
    cms.delete("owner", &DeleteParams::default()).await?;
    wait_for_deletion(&secrets, "dependent").await?;
    Ok(())
}

#[tokio::test]
async fn a_cronjob_runs_now_as_kubectl_create_job_from_does() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await?;
    let cronjobs: Api<CronJob> = Api::namespaced(cluster.client(), "default");
    // Once a year: only the manual run can start it within the test.
    let cronjob = cronjobs
        .create(
            &PostParams::default(),
            &object(serde_json::json!({
                "metadata": {"name": "nightly"},
                "spec": {"schedule": "0 0 1 1 *", "jobTemplate": {
                    "metadata": {"labels": {"app": "nightly"}, "annotations": {"team": "a"}},
                    "spec": {"template": {
                        "metadata": {"annotations": {"sim.k1s.io/run-seconds": "0.1"}},
                        "spec": {"restartPolicy": "Never",
                                 "containers": [{"name": "c", "image": "busybox"}]}}}}}
            })),
        )
        .await?;
    let job = cluster.run_cronjob_now(&cronjob, "nightly-manual").await?;
    let annotations = job.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("cronjob.kubernetes.io/instantiate")
            .map(String::as_str),
        Some("manual")
    );
    assert_eq!(annotations.get("team").map(String::as_str), Some("a"));
    let owner = &job.metadata.owner_references.as_ref().expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("CronJob", Some(true))
    );
    assert_eq!(Some(&owner.uid), cronjob.metadata.uid.as_ref());

    // The CronJob controller adopts the run as its own: it records the success.
    wait_for(&cronjobs, "nightly", |cj: &CronJob| {
        cj.status
            .as_ref()
            .is_some_and(|s| s.last_successful_time.is_some())
    })
    .await?;
    let jobs: Api<Job> = Api::namespaced(cluster.client(), "default");
    let done = jobs.get("nightly-manual").await?;
    assert_eq!(done.status.and_then(|s| s.succeeded), Some(1));
    Ok(())
}

#[tokio::test]
async fn crds_are_created_and_discovery_is_waited_for() -> anyhow::Result<()> {
    let cluster = TestCluster::builder()
        .nodes(0)
        .scheduler(false)
        .start()
        .await?;
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("widgets.yaml"),
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.k1s.io
spec:
  group: test.k1s.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#,
    )?;
    let crds = read_crds(dir.path())?;
    let stored = cluster.create_crds(crds.clone()).await?;
    assert_eq!(stored.len(), 1);
    assert!(stored[0].metadata.uid.is_some());
    // Again: the existing definition is updated, not refused.
    let again = cluster.create_crds(crds).await?;
    assert_eq!(again[0].metadata.uid, stored[0].metadata.uid);
    let api: Api<CustomResourceDefinition> = Api::all(cluster.client());
    assert!(api.get_opt("widgets.test.k1s.io").await?.is_some());

    // Discovery waits end as soon as the resource is listed, and time out when it never is.
    cluster.wait_served("", "v1", "configmaps").await?;
    cluster.wait_served("apps", "v1", "deployments").await?;
    match cluster
        .wait_served_within("apps", "v1", "nonexistents", Duration::from_millis(200))
        .await
    {
        Err(Error::Timeout { .. }) => {}
        other => panic!("waited for a resource that does not exist: {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn clients_as_other_users_are_authorized() -> anyhow::Result<()> {
    let cluster = TestCluster::builder()
        .nodes(0)
        .scheduler(false)
        .controller_manager(false)
        .start()
        .await?;
    let alice: Api<ConfigMap> = Api::namespaced(cluster.client_as("alice", &[]), "default");
    match alice.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert!(s.message.contains("\"alice\""), "{}", s.message);
        }
        other => panic!("alice listed configmaps: {other:?}"),
    }
    let admin: Api<ConfigMap> =
        Api::namespaced(cluster.client_as("root", &["system:masters"]), "default");
    admin.list(&ListParams::default()).await?;
    Ok(())
}
