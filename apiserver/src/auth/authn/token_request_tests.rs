//! Tests of the TokenRequest subresource logic.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;
use serde_json::{Value, json};

use super::keys::test_keys;
use super::sa::{BoundKind, TokenIssuer};
use super::token_request::*;

const T0: i64 = 1_750_000_000;

fn now() -> Timestamp {
    Timestamp::from_second(T0).expect("t0")
}

fn issuer() -> TokenIssuer {
    let (der, pem) = test_keys::generate();
    TokenIssuer::new(&der, &pem, String::new(), vec![]).expect("issuer")
}

fn sa() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": { "name": "builder", "namespace": "ci", "uid": "sa-uid" }
    })
}

/// What `kubectl create token builder` sends.
fn kubectl_request() -> Value {
    json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": { "creationTimestamp": null },
        "spec": { "audiences": null, "expirationSeconds": null, "boundObjectRef": null },
        "status": { "token": "", "expirationTimestamp": null }
    })
}

fn payload(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("payload");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("b64")).expect("json")
}

fn with_spec(spec: Value) -> Value {
    let mut r = kubectl_request();
    r["spec"] = spec;
    r
}

fn pod(sa_name: &str) -> Value {
    json!({
        "metadata": { "name": "web-0", "namespace": "ci", "uid": "pod-uid" },
        "spec": { "serviceAccountName": sa_name, "nodeName": "node-a" }
    })
}

#[test]
fn kubectl_create_token_round_trip() {
    let issuer = issuer();
    let out = token_request_response(&kubectl_request(), &sa(), None, &issuer, now())
        .expect("token request");
    assert_eq!(out["kind"], "TokenRequest");
    assert_eq!(out["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(out["metadata"]["name"], "builder");
    assert_eq!(out["metadata"]["namespace"], "ci");
    assert_eq!(out["metadata"]["creationTimestamp"], "2025-06-15T15:06:40Z");
    assert_eq!(
        out["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(out["spec"]["expirationSeconds"], 3600);
    assert_eq!(out["status"]["expirationTimestamp"], "2025-06-15T16:06:40Z");
    let token = out["status"]["token"].as_str().expect("token");
    let v = issuer.verify(token, now()).expect("verifies");
    assert_eq!(v.user.name, "system:serviceaccount:ci:builder");
    assert_eq!(v.sa_uid, "sa-uid");
}

#[test]
fn audiences_and_duration_are_honoured() {
    let issuer = issuer();
    let req = with_spec(json!({ "audiences": ["vault"], "expirationSeconds": 7200 }));
    let out = token_request_response(&req, &sa(), None, &issuer, now()).expect("ok");
    assert_eq!(out["spec"]["audiences"], json!(["vault"]));
    assert_eq!(out["spec"]["expirationSeconds"], 7200);
    let p = payload(out["status"]["token"].as_str().expect("token"));
    assert_eq!(p["aud"], json!(["vault"]));
    assert_eq!(p["exp"], json!(T0 + 7200));
}

#[test]
fn expiration_bounds_are_validated() {
    let issuer = issuer();
    let err = token_request_response(
        &with_spec(json!({ "expirationSeconds": 599 })),
        &sa(),
        None,
        &issuer,
        now(),
    )
    .expect_err("too short");
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let err = token_request_response(
        &with_spec(json!({ "expirationSeconds": (1i64 << 32) + 1 })),
        &sa(),
        None,
        &issuer,
        now(),
    )
    .expect_err("too long");
    assert!(
        err.message
            .ends_with("may not specify a duration larger than 2^32 seconds")
    );
    assert!(
        token_request_response(
            &with_spec(json!({ "expirationSeconds": 600 })),
            &sa(),
            None,
            &issuer,
            now()
        )
        .is_ok()
    );
}

#[test]
fn server_maximum_shortens_with_a_warning() {
    let issuer = issuer().with_max_expiration_seconds(Some(1800));
    let out = create_token(
        &with_spec(json!({ "expirationSeconds": 86400 })),
        &sa(),
        None,
        None,
        &issuer,
        now(),
    )
    .expect("ok");
    assert_eq!(out.object["spec"]["expirationSeconds"], 1800);
    assert_eq!(
        out.warnings,
        ["requested expiration of 86400 seconds shortened to 1800 seconds"]
    );
    assert!(out.credential_id.starts_with("JTI="));
}

#[test]
fn metadata_must_match_the_service_account() {
    let issuer = issuer();
    let mut req = kubectl_request();
    req["metadata"]["name"] = json!("other");
    let err = token_request_response(&req, &sa(), None, &issuer, now()).expect_err("name");
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "TokenRequest.authentication.k8s.io \"builder\" is invalid: metadata.name: Invalid value: \"other\": must match the service account name if specified"
    );
    let mut req = kubectl_request();
    req["metadata"]["namespace"] = json!("prod");
    let err = token_request_response(&req, &sa(), None, &issuer, now()).expect_err("ns");
    assert!(
        err.message
            .contains("must match the service account namespace if specified")
    );
}

#[test]
fn bound_object_kinds() {
    let pod_ref = with_spec(json!({
        "boundObjectRef": { "kind": "Pod", "apiVersion": "v1", "name": "web-0" }
    }));
    let target = bound_object_target(&pod_ref).expect("ok").expect("some");
    assert_eq!(
        target,
        BoundObjectTarget {
            kind: BoundKind::Pod,
            resource: "pods",
            namespaced: true,
            name: "web-0".into(),
        }
    );
    let node_ref = with_spec(json!({
        "boundObjectRef": { "kind": "Node", "apiVersion": "v1", "name": "n" }
    }));
    let node = bound_object_target(&node_ref).expect("ok").expect("some");
    assert!(!node.namespaced);
    assert_eq!(bound_object_target(&kubectl_request()).expect("ok"), None);

    let cm = with_spec(json!({
        "boundObjectRef": { "kind": "ConfigMap", "apiVersion": "v1", "name": "c" }
    }));
    let err = bound_object_target(&cm).expect_err("configmap");
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );
    let deploy = with_spec(json!({
        "boundObjectRef": { "kind": "Deployment", "apiVersion": "apps/v1", "name": "d" }
    }));
    assert_eq!(
        bound_object_target(&deploy)
            .expect_err("deployment")
            .message,
        "cannot bind token to object of type apps/v1, Kind=Deployment"
    );
    let err = token_request_response(&cm, &sa(), None, &issuer(), now()).expect_err("cm");
    assert_eq!(err.code, 400);
}

#[test]
fn pod_binding_checks_and_records_the_node() {
    let issuer = issuer();
    let req = with_spec(json!({
        "boundObjectRef": { "kind": "Pod", "apiVersion": "v1", "name": "web-0", "uid": "pod-uid" }
    }));
    let node = json!({ "metadata": { "name": "node-a", "uid": "node-uid" } });
    let out = create_token(
        &req,
        &sa(),
        Some(&pod("builder")),
        Some(&node),
        &issuer,
        now(),
    )
    .expect("ok");
    assert_eq!(out.object["spec"]["boundObjectRef"]["name"], "web-0");
    let p = payload(out.object["status"]["token"].as_str().expect("token"));
    assert_eq!(
        p["kubernetes.io"]["pod"],
        json!({ "name": "web-0", "uid": "pod-uid" })
    );
    assert_eq!(
        p["kubernetes.io"]["node"],
        json!({ "name": "node-a", "uid": "node-uid" })
    );

    // Node not found: name only.
    let out =
        token_request_response(&req, &sa(), Some(&pod("builder")), &issuer, now()).expect("ok");
    let p = payload(out["status"]["token"].as_str().expect("token"));
    assert_eq!(p["kubernetes.io"]["node"], json!({ "name": "node-a" }));

    let err = token_request_response(&req, &sa(), Some(&pod("default")), &issuer, now())
        .expect_err("other sa");
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "cannot bind token for serviceaccount \"builder\" to pod running with different serviceaccount name."
    );

    let mut stale = req.clone();
    stale["spec"]["boundObjectRef"]["uid"] = json!("old-uid");
    let err = token_request_response(&stale, &sa(), Some(&pod("builder")), &issuer, now())
        .expect_err("uid");
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on Pod \"web-0\": the UID in the bound object reference (old-uid) does not match the UID in record. The object might have been deleted and then recreated"
    );

    let err = token_request_response(&req, &sa(), None, &issuer, now()).expect_err("missing");
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "pods \"web-0\" not found");
}

#[test]
fn secret_binding() {
    let issuer = issuer();
    let req = with_spec(json!({
        "boundObjectRef": { "kind": "Secret", "apiVersion": "v1", "name": "s" }
    }));
    let secret = json!({ "metadata": { "name": "s", "uid": "s-uid" } });
    let out = token_request_response(&req, &sa(), Some(&secret), &issuer, now()).expect("ok");
    let token = out["status"]["token"].as_str().expect("token");
    let v = issuer.verify(token, now()).expect("verify");
    assert_eq!(
        v.bound.map(|b| (b.kind, b.uid)),
        Some((BoundKind::Secret, "s-uid".into()))
    );
}

#[test]
fn malformed_bodies_are_bad_requests() {
    let issuer = issuer();
    for body in [
        json!("string"),
        with_spec(json!({ "audiences": "vault" })),
        with_spec(json!({ "expirationSeconds": "1h" })),
    ] {
        let err = token_request_response(&body, &sa(), None, &issuer, now()).expect_err("bad");
        assert_eq!(err.code, 400, "{body}");
    }
}
