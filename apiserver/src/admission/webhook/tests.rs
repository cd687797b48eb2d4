//! End-to-end webhook tests against a real HTTPS server: allow, deny, patches, timeouts,
//! garbage answers, refused connections, dry run, ordering and reinvocation.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k1s_apimachinery::Reason;
use serde_json::{Value, json};

use super::tests_server::{
    Reply, StaticResolver, WebhookServer, allow, allow_with_warning, deny, patch, uid,
};
use super::*;
use crate::auth::UserInfo;

fn no_resolver() -> StaticResolver {
    StaticResolver(Err("no services in this test".into()))
}

/// A webhook for pods (all operations) with `clientConfig` and extra fields merged in.
fn hook(name: &str, client: Value, extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": client,
        "rules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(h), Some(extra)) = (h.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            h.insert(k.clone(), v.clone());
        }
    }
    h
}

fn url_client(server: &WebhookServer, path: &str) -> Value {
    json!({"url": server.url(path), "caBundle": server.ca_bundle})
}

fn config(name: &str, hooks: Vec<Value>) -> Value {
    json!({"metadata": {"name": name}, "webhooks": hooks})
}

fn pod_attrs(op: Operation) -> AdmissionAttributes {
    AdmissionAttributes {
        operation: op,
        version: "v1".into(),
        kind: "Pod".into(),
        resource: "pods".into(),
        namespace: "default".into(),
        name: "p1".into(),
        user: UserInfo::new("alice", vec![]),
        namespace_labels: Some(Default::default()),
        options: json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
        ..Default::default()
    }
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

fn validating(dispatcher: &WebhookDispatcher, hooks: Vec<Value>) {
    dispatcher.set_configurations(vec![], vec![config("v", hooks)]);
}

#[tokio::test]
async fn allow_passes_and_returns_warnings() {
    let server = WebhookServer::start(|_, r| allow_with_warning(r, "be careful")).await;
    let d = WebhookDispatcher::new();
    validating(
        &d,
        vec![hook(
            "allow.example.com",
            url_client(&server, "/v"),
            json!({}),
        )],
    );
    let mut outcome = AdmissionOutcome::default();
    d.validate_detailed(
        &pod_attrs(Operation::Create),
        &pod(),
        &no_resolver(),
        &mut outcome,
    )
    .await
    .unwrap();
    assert_eq!(outcome.warnings, vec!["be careful"]);
    assert_eq!(
        outcome.audit_annotations["allow.example.com/checked"],
        "yes"
    );
    let review = server.last_review();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    let req = &review["request"];
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["object"], pod());
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["userInfo"]["username"], "alice");
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["options"]["kind"], "CreateOptions");
    let (path, _) = server.requests.lock().unwrap()[0].clone();
    assert_eq!(path, "/v?timeout=10s");
}

#[tokio::test]
async fn deny_with_message() {
    let server = WebhookServer::start(|_, r| deny(r, 403, "pods need a team label")).await;
    let d = WebhookDispatcher::new();
    validating(
        &d,
        vec![hook(
            "deny.example.com",
            url_client(&server, "/"),
            json!({}),
        )],
    );
    let err = d
        .validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, Reason::Forbidden);
    assert_eq!(
        err.message,
        r#"admission webhook "deny.example.com" denied the request: pods need a team label"#
    );
    // A mutating webhook denies the same way.
    d.set_configurations(
        vec![config(
            "m",
            vec![hook(
                "deny.example.com",
                url_client(&server, "/"),
                json!({}),
            )],
        )],
        vec![],
    );
    let mut obj = pod();
    let err = d
        .mutate(&pod_attrs(Operation::Create), &mut obj, &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(err.code, 403);
}

#[tokio::test]
async fn json_patch_is_applied_through_a_service() {
    let server = WebhookServer::start(|_, r| {
        patch(
            r,
            json!([{"op": "add", "path": "/metadata/labels", "value": {"injected": "true"}}]),
        )
    })
    .await;
    let d = WebhookDispatcher::new();
    let client = json!({"service": {"namespace": "ns", "name": "hook", "path": "/mutate", "port": 8443},
                        "caBundle": server.ca_bundle});
    d.set_configurations(
        vec![config(
            "m",
            vec![hook("inject.example.com", client, json!({}))],
        )],
        vec![],
    );
    let mut obj = pod();
    let mut outcome = AdmissionOutcome::default();
    d.mutate_detailed(
        &pod_attrs(Operation::Create),
        &mut obj,
        &StaticResolver(Ok(server.addr)),
        &mut outcome,
    )
    .await
    .unwrap();
    assert_eq!(obj["metadata"]["labels"], json!({"injected": "true"}));
    assert_eq!(server.requests.lock().unwrap()[0].0, "/mutate?timeout=10s");
    let annotation: Value = serde_json::from_str(
        &outcome.audit_annotations["mutation.webhook.admission.k8s.io/round_0_index_0"],
    )
    .unwrap();
    assert_eq!(
        annotation,
        json!({"configuration": "m", "webhook": "inject.example.com", "mutated": true})
    );
}

#[tokio::test]
async fn timeout_fails_closed_or_open() {
    let server =
        WebhookServer::start(|_, r| Reply::Delay(Duration::from_secs(5), Box::new(allow(r)))).await;
    let d = WebhookDispatcher::new();
    validating(
        &d,
        vec![hook(
            "slow.example.com",
            url_client(&server, "/slow"),
            json!({"timeoutSeconds": 1}),
        )],
    );
    let start = Instant::now();
    let err = d
        .validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
        .await
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(err.code, 500);
    assert_eq!(err.reason, Reason::InternalError);
    assert_eq!(
        err.message,
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: \
             Post \"https://{}/slow?timeout=1s\": context deadline exceeded",
            server.addr
        )
    );
    validating(
        &d,
        vec![hook(
            "slow.example.com",
            url_client(&server, "/slow"),
            json!({"timeoutSeconds": 1, "failurePolicy": "Ignore"}),
        )],
    );
    let start = Instant::now();
    let mut outcome = AdmissionOutcome::default();
    d.validate_detailed(
        &pod_attrs(Operation::Create),
        &pod(),
        &no_resolver(),
        &mut outcome,
    )
    .await
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert_eq!(
        outcome.audit_annotations["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"],
        "slow.example.com"
    );
}

#[tokio::test]
async fn garbage_answers() {
    let server = WebhookServer::start(|path, r| match path.split('?').next() {
        Some("/garbage") => Reply::Raw(200, b"this is not json".to_vec()),
        Some("/wrong-uid") => Reply::Json(json!({"apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview", "response": {"uid": "nope", "allowed": true}})),
        Some("/500") => Reply::Raw(500, b"kaboom".to_vec()),
        _ => allow(r),
    })
    .await;
    let d = WebhookDispatcher::new();
    for (path, want) in [
        (
            "/garbage",
            "failed to call webhook: couldn't get version/kind; json parse error",
        ),
        (
            "/wrong-uid",
            "received invalid webhook response: expected response.uid=",
        ),
        (
            "/500",
            "failed to call webhook: an error on the server (\"kaboom\") has prevented the request from succeeding",
        ),
    ] {
        validating(
            &d,
            vec![hook(
                "bad.example.com",
                url_client(&server, path),
                json!({}),
            )],
        );
        let err = d
            .validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
            .await
            .unwrap_err();
        assert_eq!(err.code, 500);
        let prefix =
            format!("Internal error occurred: failed calling webhook \"bad.example.com\": {want}");
        assert!(
            err.message.starts_with(&prefix),
            "{} vs {prefix}",
            err.message
        );
        validating(
            &d,
            vec![hook(
                "bad.example.com",
                url_client(&server, path),
                json!({"failurePolicy": "Ignore"}),
            )],
        );
        d.validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn connection_refused_and_resolver_errors() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let d = WebhookDispatcher::new();
    let client = json!({"url": format!("https://127.0.0.1:{port}/x")});
    validating(&d, vec![hook("down.example.com", client, json!({}))]);
    let err = d
        .validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: \
             Post \"https://127.0.0.1:{port}/x?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
    let client = json!({"service": {"namespace": "ns", "name": "gone", "path": "/v"}});
    validating(&d, vec![hook("svc.example.com", client, json!({}))]);
    let err = d
        .validate(
            &pod_attrs(Operation::Create),
            &pod(),
            &StaticResolver(Err("service \"gone\" not found".into())),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Internal error occurred: failed calling webhook \"svc.example.com\": failed to call webhook: \
         Post \"https://gone.ns.svc:443/v?timeout=10s\": service \"gone\" not found"
    );
}

#[tokio::test]
async fn untrusted_certificate_is_a_call_failure() {
    let server = WebhookServer::start(|_, r| allow(r)).await;
    let other = super::tests_server::test_pki();
    let d = WebhookDispatcher::new();
    let client = json!({"url": server.url("/"), "caBundle": other.ca_bundle});
    validating(&d, vec![hook("tls.example.com", client, json!({}))]);
    let err = d
        .validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("failed calling webhook \"tls.example.com\"")
            && err.message.ends_with(
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            ),
        "{}",
        err.message
    );
    // No caBundle and no default roots: not trusted either; with the CA as default root: fine.
    let d = WebhookDispatcher::new();
    validating(
        &d,
        vec![hook(
            "tls.example.com",
            json!({"url": server.url("/")}),
            json!({}),
        )],
    );
    assert!(
        d.validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
            .await
            .is_err()
    );
    let pem = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        &server.ca_bundle,
    )
    .unwrap();
    let roots = rustls::pki_types::pem::PemObject::pem_slice_iter(&pem)
        .collect::<Result<Vec<rustls::pki_types::CertificateDer<'static>>, _>>()
        .unwrap();
    d.set_default_roots(roots);
    d.validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
        .await
        .unwrap();
}

#[tokio::test]
async fn dry_run_and_side_effects() {
    let server = WebhookServer::start(|_, r| allow(r)).await;
    let d = WebhookDispatcher::new();
    let mut attrs = pod_attrs(Operation::Create);
    attrs.dry_run = true;
    validating(
        &d,
        vec![hook(
            "some.example.com",
            url_client(&server, "/"),
            json!({"sideEffects": "Some"}),
        )],
    );
    let err = d
        .validate(&attrs, &pod(), &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(err.code, 400);
    assert_eq!(err.reason, Reason::BadRequest);
    assert_eq!(
        err.message,
        r#"admission webhook "some.example.com" does not support dry run"#
    );
    // Even with failurePolicy Ignore (this is not a call failure).
    validating(
        &d,
        vec![hook(
            "some.example.com",
            url_client(&server, "/"),
            json!({"sideEffects": "Unknown", "failurePolicy": "Ignore"}),
        )],
    );
    assert_eq!(
        d.validate(&attrs, &pod(), &no_resolver())
            .await
            .unwrap_err()
            .code,
        400
    );
    assert_eq!(server.calls(), 0);

    validating(
        &d,
        vec![hook(
            "ok.example.com",
            url_client(&server, "/"),
            json!({"sideEffects": "NoneOnDryRun"}),
        )],
    );
    d.validate(&attrs, &pod(), &no_resolver()).await.unwrap();
    assert_eq!(server.calls(), 1);
    assert_eq!(server.last_review()["request"]["dryRun"], true);

    // sideEffects absent: a call failure, so the failure policy applies.
    let mut nil = hook("nil.example.com", url_client(&server, "/"), json!({}));
    nil.as_object_mut().unwrap().remove("sideEffects");
    validating(&d, vec![nil]);
    let err = d
        .validate(&attrs, &pod(), &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"Internal error occurred: failed calling webhook "nil.example.com": Webhook SideEffects is nil"#
    );
}

/// Each mutating webhook appends its name to `metadata.annotations.order`.
fn appender(name: &'static str) -> impl Fn(&Value) -> Reply {
    move |r: &Value| {
        let current = r["request"]["object"]["metadata"]["annotations"]["order"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut ops = Vec::new();
        if r["request"]["object"]["metadata"]
            .get("annotations")
            .is_none()
        {
            ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
        }
        ops.push(json!({"op": "add", "path": "/metadata/annotations/order", "value": format!("{current}{name},")}));
        patch(r, Value::Array(ops))
    }
}

#[tokio::test]
async fn mutating_order_is_configuration_name_then_list_order() {
    let server = WebhookServer::start(|path, r| match path.split('?').next() {
        Some("/a") => appender("a")(r),
        Some("/b") => appender("b")(r),
        Some("/c") => appender("c")(r),
        _ => allow(r),
    })
    .await;
    let d = WebhookDispatcher::new();
    d.set_configurations(
        vec![
            config(
                "zz",
                vec![hook("c.example.com", url_client(&server, "/c"), json!({}))],
            ),
            config(
                "aa",
                vec![
                    hook("b.example.com", url_client(&server, "/b"), json!({})),
                    hook("a.example.com", url_client(&server, "/a"), json!({})),
                ],
            ),
        ],
        vec![],
    );
    let mut obj = pod();
    d.mutate(&pod_attrs(Operation::Create), &mut obj, &no_resolver())
        .await
        .unwrap();
    assert_eq!(obj["metadata"]["annotations"]["order"], "b,a,c,");
}

#[tokio::test]
async fn reinvocation_if_needed() {
    let server = WebhookServer::start(|path, r| match path.split('?').next() {
        // Adds label first=1 when missing; otherwise no change.
        Some("/first") => {
            if r["request"]["object"]["metadata"]["labels"]["first"].is_null() {
                patch(
                    r,
                    json!([{"op": "add", "path": "/metadata/labels/first", "value": "1"}]),
                )
            } else {
                allow(r)
            }
        }
        Some("/second") => {
            if r["request"]["object"]["metadata"]["labels"]["second"].is_null() {
                patch(
                    r,
                    json!([{"op": "add", "path": "/metadata/labels/second", "value": "1"}]),
                )
            } else {
                allow(r)
            }
        }
        _ => allow(r),
    })
    .await;
    let mut obj = pod();
    obj["metadata"]["labels"] = json!({});
    for (policy, first_calls) in [("IfNeeded", 2), ("Never", 1)] {
        let server_calls_before = server.calls_to("/first");
        let d = WebhookDispatcher::new();
        d.set_configurations(
            vec![
                config(
                    "a",
                    vec![hook(
                        "first.example.com",
                        url_client(&server, "/first"),
                        json!({"reinvocationPolicy": policy}),
                    )],
                ),
                config(
                    "b",
                    vec![hook(
                        "second.example.com",
                        url_client(&server, "/second"),
                        json!({}),
                    )],
                ),
            ],
            vec![],
        );
        let mut o = obj.clone();
        let mut outcome = AdmissionOutcome::default();
        d.mutate_detailed(
            &pod_attrs(Operation::Create),
            &mut o,
            &no_resolver(),
            &mut outcome,
        )
        .await
        .unwrap();
        assert_eq!(
            o["metadata"]["labels"],
            json!({"first": "1", "second": "1"})
        );
        assert_eq!(
            server.calls_to("/first") - server_calls_before,
            first_calls,
            "{policy}"
        );
        if policy == "IfNeeded" {
            assert!(
                outcome
                    .audit_annotations
                    .contains_key("mutation.webhook.admission.k8s.io/round_1_index_0")
            );
        }
    }
    assert_eq!(server.calls_to("/second"), 2);
}

#[tokio::test]
async fn validating_webhooks_run_in_parallel_and_first_error_in_order_wins() {
    let server = WebhookServer::start(|path, r| {
        let reply = match path.split('?').next() {
            Some("/deny1") => deny(r, 403, "one"),
            Some("/deny2") => deny(r, 422, "two"),
            _ => allow(r),
        };
        Reply::Delay(Duration::from_millis(600), Box::new(reply))
    })
    .await;
    let d = WebhookDispatcher::new();
    validating(
        &d,
        vec![
            hook("ok1.example.com", url_client(&server, "/ok"), json!({})),
            hook("ok2.example.com", url_client(&server, "/ok"), json!({})),
            hook("ok3.example.com", url_client(&server, "/ok"), json!({})),
        ],
    );
    let start = Instant::now();
    d.validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
        .await
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
    validating(
        &d,
        vec![
            hook("ok.example.com", url_client(&server, "/ok"), json!({})),
            hook(
                "deny1.example.com",
                url_client(&server, "/deny1"),
                json!({}),
            ),
            hook(
                "deny2.example.com",
                url_client(&server, "/deny2"),
                json!({}),
            ),
        ],
    );
    let err = d
        .validate(&pod_attrs(Operation::Create), &pod(), &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"admission webhook "deny1.example.com" denied the request: one"#
    );
}

#[tokio::test]
async fn delete_patches_and_unsupported_patch_types() {
    let server = WebhookServer::start(|path, r| match path.split('?').next() {
        Some("/merge") => Reply::Json(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": uid(r), "allowed": true, "patchType": "MergePatch",
                         "patch": "W3sib3AiOiJhZGQiLCJwYXRoIjoiL3giLCJ2YWx1ZSI6MX1d"}}),
        ),
        Some("/bad-op") => patch(r, json!([{"op": "remove", "path": "/nope/nothing"}])),
        _ => patch(r, json!([{"op": "add", "path": "/x", "value": 1}])),
    })
    .await;
    let d = WebhookDispatcher::new();
    d.set_configurations(
        vec![config(
            "m",
            vec![hook(
                "p.example.com",
                url_client(&server, "/"),
                json!({"failurePolicy": "Ignore"}),
            )],
        )],
        vec![],
    );
    let mut attrs = pod_attrs(Operation::Delete);
    attrs.old_object = Some(pod());
    let mut null = Value::Null;
    let err = d
        .mutate(&attrs, &mut null, &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"Internal error occurred: admission webhook "p.example.com" attempted to modify the object, which is not supported for this operation"#
    );
    d.set_configurations(
        vec![config(
            "m",
            vec![hook(
                "p.example.com",
                url_client(&server, "/merge"),
                json!({}),
            )],
        )],
        vec![],
    );
    let err = d
        .mutate(&pod_attrs(Operation::Create), &mut pod(), &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"Internal error occurred: failed calling webhook "p.example.com": unsupported patch type "MergePatch""#
    );
    // A patch that does not apply is an internal error even with failurePolicy Ignore.
    d.set_configurations(
        vec![config(
            "m",
            vec![hook(
                "p.example.com",
                url_client(&server, "/bad-op"),
                json!({"failurePolicy": "Ignore"}),
            )],
        )],
        vec![],
    );
    let mut obj = pod();
    let err = d
        .mutate(&pod_attrs(Operation::Create), &mut obj, &no_resolver())
        .await
        .unwrap_err();
    assert_eq!(err.code, 500);
    assert_eq!(obj, pod());
}

#[tokio::test]
async fn non_matching_and_exempt_requests_never_call() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let server = WebhookServer::start(move |_, r| {
        seen.fetch_add(1, Ordering::SeqCst);
        allow(r)
    })
    .await;
    let d = WebhookDispatcher::new();
    let mut any = hook("all.example.com", url_client(&server, "/"), json!({}));
    any["rules"] = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]);
    validating(&d, vec![any]);
    let vwc = AdmissionAttributes {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        kind: "ValidatingWebhookConfiguration".into(),
        resource: "validatingwebhookconfigurations".into(),
        ..Default::default()
    };
    d.validate(&vwc, &json!({}), &no_resolver()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let cm = AdmissionAttributes {
        version: "v1".into(),
        kind: "ConfigMap".into(),
        resource: "configmaps".into(),
        namespace: "default".into(),
        namespace_labels: Some(Default::default()),
        ..Default::default()
    };
    d.validate(&cm, &json!({}), &no_resolver()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Pods-only webhook: a configmap does not reach it.
    validating(
        &d,
        vec![hook(
            "pods.example.com",
            url_client(&server, "/"),
            json!({}),
        )],
    );
    d.validate(&cm, &json!({}), &no_resolver()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
