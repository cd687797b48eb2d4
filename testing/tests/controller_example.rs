//! The crate's complete example: a small kube-rs controller and its tests against a
//! `TestCluster`. The controller publishes every ConfigMap labelled `greeting=true` as a Secret it
//! owns, and marks the ConfigMap `published`; the tests include what envtest cannot do: the
//! garbage collector deleting the Secret after its ConfigMap.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k1s_testing::{TestCluster, wait_for, wait_for_deletion};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};

// ---- the controller under test ----

const PUBLISHED: &str = "example.k1s.io/published";

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("the ConfigMap has no namespace or uid")]
    Incomplete,
}

/// Makes the Secret `<name>-greeting` from the ConfigMap's `message` (owned by the ConfigMap, so
/// the garbage collector deletes it with its owner) and marks the ConfigMap published.
async fn reconcile(cm: Arc<ConfigMap>, client: Arc<Client>) -> Result<Action, ReconcileError> {
    let ns = cm.namespace().ok_or(ReconcileError::Incomplete)?;
    let owner = cm
        .controller_owner_ref(&())
        .ok_or(ReconcileError::Incomplete)?;
    let message = cm
        .data
        .as_ref()
        .and_then(|d| d.get("message"))
        .cloned()
        .unwrap_or_default();
    let name = format!("{}-greeting", cm.name_any());
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some([("message".to_string(), ByteString(message.into_bytes()))].into()),
        ..Default::default()
    };
    // Create, or bring an existing Secret's data up to date.
    let secrets: Api<Secret> = Api::namespaced((*client).clone(), &ns);
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let data = serde_json::json!({"data": secret.data});
            secrets
                .patch(&name, &PatchParams::default(), &Patch::Merge(&data))
                .await?;
        }
        Err(e) => return Err(e.into()),
    }
    if !cm.annotations().contains_key(PUBLISHED) {
        let mark = serde_json::json!({"metadata": {"annotations": {PUBLISHED: "true"}}});
        Api::<ConfigMap>::namespaced((*client).clone(), &ns)
            .patch(
                &cm.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&mark),
            )
            .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &ReconcileError, _: Arc<Client>) -> Action {
    Action::requeue(Duration::from_millis(100))
}

/// Runs the controller until the returned task is aborted.
fn run_controller(client: Client) -> tokio::task::JoinHandle<()> {
    let cms: Api<ConfigMap> = Api::all(client.clone());
    let secrets: Api<Secret> = Api::all(client.clone());
    tokio::spawn(
        Controller::new(cms, watcher::Config::default().labels("greeting=true"))
            .owns(secrets, watcher::Config::default())
            .run(reconcile, error_policy, Arc::new(client))
            .for_each(|result| async move {
                if let Err(e) = result {
                    eprintln!("greeting-controller: {e:?}");
                }
            }),
    )
}

// ---- its tests ----

fn greeting(name: &str, message: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([("greeting".to_string(), "true".to_string())].into()),
            ..Default::default()
        },
        data: Some([("message".to_string(), message.to_string())].into()),
        ..Default::default()
    }
}

fn message(secret: &Secret) -> Option<String> {
    let bytes = secret.data.as_ref()?.get("message")?;
    String::from_utf8(bytes.0.clone()).ok()
}

#[tokio::test]
async fn the_controller_publishes_a_greeting_and_the_gc_removes_it() -> anyhow::Result<()> {
    let cluster = TestCluster::start().await?;
    let controller = run_controller(cluster.client());

    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    cms.create(&PostParams::default(), &greeting("hello", "hi there"))
        .await?;
    let secret = wait_for(&secrets, "hello-greeting", |_| true).await?;
    assert_eq!(message(&secret).as_deref(), Some("hi there"));
    wait_for(&cms, "hello", |cm| cm.annotations().contains_key(PUBLISHED)).await?;

    // A change flows through to the Secret.
    let change = serde_json::json!({"data": {"message": "hello again"}});
    cms.patch("hello", &PatchParams::default(), &Patch::Merge(&change))
        .await?;
    wait_for(&secrets, "hello-greeting", |s| {
        message(s).as_deref() == Some("hello again")
    })
    .await?;

    // Deleting the ConfigMap: the garbage collector deletes the Secret it owns.
    cms.delete("hello", &DeleteParams::default()).await?;
    wait_for_deletion(&secrets, "hello-greeting").await?;
    controller.abort();
    Ok(())
}

#[tokio::test]
async fn clusters_are_independent() -> anyhow::Result<()> {
    let (a, b) = tokio::try_join!(
        TestCluster::builder().nodes(0).start(),
        TestCluster::builder().nodes(0).start()
    )?;
    assert_ne!(a.url(), b.url());
    let controller = run_controller(a.client());
    let in_a: Api<ConfigMap> = Api::namespaced(a.client(), "default");
    in_a.create(&PostParams::default(), &greeting("only-in-a", "x"))
        .await?;
    wait_for(
        &Api::<Secret>::namespaced(a.client(), "default"),
        "only-in-a-greeting",
        |_| true,
    )
    .await?;
    // b shares nothing with a.
    let in_b: Api<ConfigMap> = Api::namespaced(b.client(), "default");
    assert!(in_b.get_opt("only-in-a").await?.is_none());
    let secrets_b: Api<Secret> = Api::namespaced(b.client(), "default");
    assert!(secrets_b.get_opt("only-in-a-greeting").await?.is_none());
    controller.abort();
    Ok(())
}
