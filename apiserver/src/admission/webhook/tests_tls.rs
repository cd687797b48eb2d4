//! Webhook tests around names and versions: DNS URLs, TLS server names, v1beta1 reviews.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::tests_server::{Reply, StaticResolver, WebhookServer, allow, uid};
use super::*;

fn config(client: Value, extra: Value) -> Value {
    let mut h = json!({"name": "n.example.com", "clientConfig": client, "sideEffects": "None",
        "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]});
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    json!({"metadata": {"name": "c"}, "webhooks": [h]})
}

fn attrs() -> AdmissionAttributes {
    AdmissionAttributes {
        operation: Operation::Create,
        version: "v1".into(),
        kind: "Node".into(),
        resource: "nodes".into(),
        name: "n1".into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn dns_urls_and_service_server_names() {
    let server = WebhookServer::start(|_, r| allow(r)).await;
    let d = WebhookDispatcher::new();
    let url = format!("https://localhost:{}/v", server.addr.port());
    d.set_validating_configurations(vec![config(
        json!({"url": url, "caBundle": server.ca_bundle}),
        json!({}),
    )]);
    let none = StaticResolver(Err("unused".into()));
    d.validate(&attrs(), &json!({}), &none).await.unwrap();
    assert_eq!(server.calls(), 1);

    // The certificate is for hook.ns.svc, so a Service named otherwise does not verify.
    let resolver = StaticResolver(Ok(server.addr));
    let svc = |name: &str| json!({"service": {"namespace": "ns", "name": name}, "caBundle": server.ca_bundle});
    d.set_validating_configurations(vec![config(svc("hook"), json!({}))]);
    d.validate(&attrs(), &json!({}), &resolver).await.unwrap();
    d.set_validating_configurations(vec![config(svc("other"), json!({}))]);
    let err = d
        .validate(&attrs(), &json!({}), &resolver)
        .await
        .unwrap_err();
    assert!(
        err.message.ends_with(
            "Post \"https://other.ns.svc:443?timeout=10s\": tls: failed to verify certificate: \
             x509: certificate is not valid for other.ns.svc"
        ),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn v1beta1_reviews_and_unknown_versions() {
    let server = WebhookServer::start(|_, r| {
        Reply::Json(
            json!({"apiVersion": r["apiVersion"], "kind": "AdmissionReview",
            "response": {"uid": uid(r), "allowed": true}}),
        )
    })
    .await;
    let d = WebhookDispatcher::new();
    let client = json!({"url": server.url("/"), "caBundle": server.ca_bundle});
    d.set_validating_configurations(vec![config(
        client.clone(),
        json!({"admissionReviewVersions": ["v1beta1"]}),
    )]);
    let none = StaticResolver(Err("unused".into()));
    d.validate(&attrs(), &json!({}), &none).await.unwrap();
    assert_eq!(
        server.last_review()["apiVersion"],
        "admission.k8s.io/v1beta1"
    );
    d.set_validating_configurations(vec![config(
        client,
        json!({"admissionReviewVersions": ["v2"]}),
    )]);
    let err = d.validate(&attrs(), &json!({}), &none).await.unwrap_err();
    assert_eq!(
        err.message,
        "Internal error occurred: failed calling webhook \"n.example.com\": could not create admission \
         objects: webhook does not accept known AdmissionReview versions"
    );
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn bad_client_configs_fail_per_policy() {
    let d = WebhookDispatcher::new();
    let none = StaticResolver(Err("unused".into()));
    d.set_validating_configurations(vec![config(json!({"url": "http://insecure/"}), json!({}))]);
    let err = d.validate(&attrs(), &json!({}), &none).await.unwrap_err();
    assert!(
        err.message
            .contains("could not get REST client: invalid webhook URL"),
        "{}",
        err.message
    );
    d.set_validating_configurations(vec![config(
        json!({"url": "http://insecure/"}),
        json!({"failurePolicy": "Ignore"}),
    )]);
    d.validate(&attrs(), &json!({}), &none).await.unwrap();
    assert_eq!(d.validating_webhooks().len(), 1);
    assert!(d.mutating_webhooks().is_empty());
}
