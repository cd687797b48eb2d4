//! Admission through the real server: ResourceQuota with kubectl, and admission webhooks served
//! by a real HTTPS server started by the test (deny, JSONPatch mutation, unreachable webhooks
//! under both failure policies).

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use k1s_tests::{TestCluster, fails, ok};

#[test]
fn resource_quota_limits_pod_count() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "q"]);
    c.kubectl_ok(&["create", "quota", "pods", "-n", "q", "--hard=pods=2"]);
    let pod = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: q}}\nspec:\n  containers: [{{name: c, image: nginx}}]\n"
        )
    };
    c.apply(&pod("a"));
    c.apply(&pod("b"));
    let args = ["apply", "-f", "-"];
    let err = fails(&args, c.kubectl_stdin(&args, &pod("c")));
    assert!(
        err.contains("exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2"),
        "{err}"
    );
    let used = c.kubectl_ok(&[
        "get",
        "quota",
        "pods",
        "-n",
        "q",
        "-o",
        "jsonpath={.status.used.pods}",
    ]);
    assert_eq!(used.trim(), "2");
}

/// A tiny HTTPS admission webhook: `/deny` refuses, `/label` adds a label by JSONPatch.
async fn start_webhook() -> (SocketAddr, String) {
    let ca_key = rcgen::KeyPair::generate().expect("key");
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "webhook-ca");
    let ca_cert = ca.clone().self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    // Reached by URL (127.0.0.1) and through the Service `hook` in `default` (`hook.default.svc`).
    let params = rcgen::CertificateParams::new(vec![
        "127.0.0.1".to_string(),
        "hook.default.svc".to_string(),
    ])
    .expect("params");
    let cert = params.signed_by(&key, &issuer).expect("cert");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .expect("tls");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    |req: hyper::Request<hyper::body::Incoming>| async move {
                        use http_body_util::BodyExt;
                        let path = req.uri().path().to_string();
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let review: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or_default();
                        let uid = review["request"]["uid"].clone();
                        let response = if path == "/deny" {
                            serde_json::json!({"uid": uid, "allowed": false, "status": {"code": 403, "message": "nope"}})
                        } else {
                            let patch = br#"[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]"#;
                            serde_json::json!({"uid": uid, "allowed": true, "patchType": "JSONPatch",
                            "patch": base64::engine::general_purpose::STANDARD.encode(patch)})
                        };
                        let out = serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(
                            http_body_util::Full::new(bytes::Bytes::from(out.to_string())),
                        ))
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    (
        addr,
        base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
    )
}

fn webhook_config(
    kind: &str,
    name: &str,
    url: &str,
    ca: &str,
    policy: &str,
    namespace: &str,
) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nwebhooks:\n- name: {name}.k1s.test\n  clientConfig: {{url: \"{url}\", caBundle: \"{ca}\"}}\n  rules: [{{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps]}}]\n  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {namespace}}}}}\n  failurePolicy: {policy}\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  timeoutSeconds: 2\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_webhooks_deny_mutate_and_fail_by_policy() {
    let (addr, ca) = start_webhook().await;
    let c = TestCluster::start();
    for ns in [
        "denied",
        "mutated",
        "down-fail",
        "down-ignore",
        "via-service",
    ] {
        c.kubectl_ok(&["create", "namespace", ns]);
    }
    c.apply(&webhook_config(
        "ValidatingWebhookConfiguration",
        "deny",
        &format!("https://{addr}/deny"),
        &ca,
        "Fail",
        "denied",
    ));
    c.apply(&webhook_config(
        "MutatingWebhookConfiguration",
        "label",
        &format!("https://{addr}/label"),
        &ca,
        "Fail",
        "mutated",
    ));
    // Nothing listens on port 1 of loopback: the call fails.
    c.apply(&webhook_config(
        "ValidatingWebhookConfiguration",
        "down-fail",
        "https://127.0.0.1:1/x",
        &ca,
        "Fail",
        "down-fail",
    ));
    c.apply(&webhook_config(
        "ValidatingWebhookConfiguration",
        "down-ignore",
        "https://127.0.0.1:1/x",
        &ca,
        "Ignore",
        "down-ignore",
    ));
    // A Service without selector, its Endpoints pointing at the webhook, and a configuration
    // that names the Service instead of a URL.
    c.apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: hook, namespace: default}}\nspec:\n  ports: [{{name: https, port: 443, targetPort: {port}}}]\n---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: hook, namespace: default}}\nsubsets:\n- addresses: [{{ip: 127.0.0.1}}]\n  ports: [{{name: https, port: {port}}}]\n",
        port = addr.port()
    ));
    c.apply(&format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: via-service}}\nwebhooks:\n- name: via-service.k1s.test\n  clientConfig: {{service: {{namespace: default, name: hook, path: /deny, port: 443}}, caBundle: \"{ca}\"}}\n  rules: [{{operations: [CREATE], apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps]}}]\n  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: via-service}}}}\n  failurePolicy: Fail\n  sideEffects: None\n  admissionReviewVersions: [v1]\n  timeoutSeconds: 2\n"
    ));
    let create = |ns: &str| c.kubectl(&["create", "configmap", "cm", "-n", ns]);
    // The configurations reach the dispatcher through a watch: wait for the first to bite.
    k1s_tests::wait_until(
        std::time::Duration::from_secs(10),
        "the deny webhook to be active",
        || {
            let out = create("denied");
            (!out.status.success()).then_some(())
        },
    );
    let err = fails(&["create", "configmap"], create("denied"));
    assert!(
        err.contains(r#"admission webhook "deny.k1s.test" denied the request: nope"#),
        "{err}"
    );
    ok(&["create", "configmap"], create("mutated"));
    let labels = c.kubectl_ok(&[
        "get",
        "configmap",
        "cm",
        "-n",
        "mutated",
        "-o",
        "jsonpath={.metadata.labels.mutated}",
    ]);
    assert_eq!(labels.trim(), "yes");
    let err = fails(&["create", "configmap"], create("down-fail"));
    assert!(
        err.contains(r#"failed calling webhook "down-fail.k1s.test""#),
        "{err}"
    );
    ok(&["create", "configmap"], create("down-ignore"));
    // Through the Service and its Endpoints.
    k1s_tests::wait_until(
        std::time::Duration::from_secs(10),
        "the service webhook to deny",
        || {
            let e = String::from_utf8_lossy(&create("via-service").stderr).to_string();
            e.contains(r#"admission webhook "via-service.k1s.test" denied the request: nope"#)
                .then_some(())
        },
    );
    // Nothing was stored where admission refused.
    fails(
        &["get"],
        c.kubectl(&["get", "configmap", "cm", "-n", "denied"]),
    );
}
