//! Tests of bootstrap-token authentication.

use base64::Engine as _;
use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::TokenError;
use super::bootstrap::*;

const TOKEN: &str = "abcdef.0123456789abcdef";

fn now() -> Timestamp {
    "2025-06-15T12:00:00Z".parse().expect("now")
}

fn secret(data: &[(&str, &str)]) -> Value {
    let mut m = Map::new();
    for (k, v) in data {
        m.insert(
            (*k).to_string(),
            json!(base64::engine::general_purpose::STANDARD.encode(v)),
        );
    }
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": "bootstrap-token-abcdef", "namespace": "kube-system" },
        "type": "bootstrap.kubernetes.io/token",
        "data": Value::Object(m),
    })
}

fn good() -> Vec<(&'static str, &'static str)> {
    vec![
        ("token-id", "abcdef"),
        ("token-secret", "0123456789abcdef"),
        ("usage-bootstrap-authentication", "true"),
        ("usage-bootstrap-signing", "true"),
        ("expiration", "2025-06-16T12:00:00Z"),
        (
            "auth-extra-groups",
            "system:bootstrappers:kubeadm:default-node-token",
        ),
    ]
}

fn with(key: &'static str, value: &'static str) -> Value {
    let mut data: Vec<_> = good().into_iter().filter(|(k, _)| *k != key).collect();
    data.push((key, value));
    secret(&data)
}

fn without(key: &str) -> Value {
    let data: Vec<_> = good().into_iter().filter(|(k, _)| *k != key).collect();
    secret(&data)
}

#[test]
fn parse_token_follows_the_upstream_pattern() {
    assert_eq!(parse_token(TOKEN), Some(("abcdef", "0123456789abcdef")));
    for bad in [
        "",
        "abcdef",
        "abcdef.",
        "ABCDEF.0123456789abcdef",
        "abcde.0123456789abcdef",
        "abcdef.0123456789abcde",
        "abcdef.0123456789abcdefg",
        "abcdef-0123456789abcdef",
        "abcdef.0123456789abcdef.x",
        " abcdef.0123456789abcdef",
        "abcdéf.0123456789abcdef",
    ] {
        assert_eq!(parse_token(bad), None, "{bad:?}");
    }
    assert_eq!(bootstrap_secret_name("abcdef"), "bootstrap-token-abcdef");
}

#[test]
fn valid_token_authenticates() {
    let user = authenticate_bootstrap_token(TOKEN, Some(&secret(&good())), now()).expect("ok");
    assert_eq!(user.name, "system:bootstrap:abcdef");
    assert_eq!(
        user.groups,
        [
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated"
        ]
    );
    assert!(user.uid.is_empty());
    // No expiration and no extra groups is fine too.
    let minimal = secret(&[
        ("token-id", "abcdef"),
        ("token-secret", "0123456789abcdef"),
        ("usage-bootstrap-authentication", "true"),
    ]);
    let user = authenticate_bootstrap_token(TOKEN, Some(&minimal), now()).expect("ok");
    assert_eq!(
        user.groups,
        ["system:bootstrappers", "system:authenticated"]
    );
}

#[test]
fn extra_groups_are_sorted_deduplicated_and_validated() {
    let s = with(
        "auth-extra-groups",
        "system:bootstrappers:z,system:bootstrappers:a,system:bootstrappers",
    );
    let err = authenticate_bootstrap_token(TOKEN, Some(&s), now()).expect_err("bare default");
    assert!(err.to_string().contains("is invalid (must match"), "{err}");

    let s = with(
        "auth-extra-groups",
        "system:bootstrappers:z,system:bootstrappers:a,system:bootstrappers:z",
    );
    let user = authenticate_bootstrap_token(TOKEN, Some(&s), now()).expect("ok");
    assert_eq!(
        user.groups,
        [
            "system:bootstrappers",
            "system:bootstrappers:a",
            "system:bootstrappers:z",
            "system:authenticated"
        ]
    );

    for bad in [
        "system:masters",
        "system:bootstrappers:",
        "system:bootstrappers:Caps",
        "system:bootstrappers:x-",
        ",",
    ] {
        let mut data: Vec<_> = good()
            .into_iter()
            .filter(|(k, _)| *k != "auth-extra-groups")
            .collect();
        data.push(("auth-extra-groups", bad));
        let err = authenticate_bootstrap_token(TOKEN, Some(&secret(&data)), now()).expect_err(bad);
        assert!(matches!(err, TokenError::Bootstrap(_)));
        assert!(!err.is_reported());
    }
    assert_eq!(
        validate_bootstrap_group_name("system:masters").expect_err("bad"),
        r#"bootstrap group "system:masters" is invalid (must match \Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z)"#
    );
    assert!(validate_bootstrap_group_name("system:bootstrappers:a:b-c").is_ok());
}

#[test]
fn expiration_is_honoured() {
    let expired = with("expiration", "2025-06-15T11:59:59Z");
    let err = authenticate_bootstrap_token(TOKEN, Some(&expired), now()).expect_err("expired");
    assert_eq!(
        err.to_string(),
        "bootstrap token secret kube-system/bootstrap-token-abcdef has expired."
    );
    let exactly_now = with("expiration", "2025-06-15T12:00:00Z");
    assert!(authenticate_bootstrap_token(TOKEN, Some(&exactly_now), now()).is_err());
    let offset = with("expiration", "2025-06-15T13:30:00+01:00");
    assert!(authenticate_bootstrap_token(TOKEN, Some(&offset), now()).is_ok());
    let garbage = with("expiration", "tomorrow");
    assert!(authenticate_bootstrap_token(TOKEN, Some(&garbage), now()).is_err());
}

#[test]
fn wrong_secret_or_flags_fail_without_revealing_the_secret() {
    let err =
        authenticate_bootstrap_token("abcdef.ffffffffffffffff", Some(&secret(&good())), now())
            .expect_err("wrong secret");
    let msg = err.to_string();
    assert_eq!(
        msg,
        "bootstrap token secret kube-system/bootstrap-token-abcdef has invalid value for key token-secret."
    );
    assert!(!msg.contains("0123456789abcdef") && !msg.contains("ffffffffffffffff"));

    let err = authenticate_bootstrap_token(
        TOKEN,
        Some(&without("usage-bootstrap-authentication")),
        now(),
    )
    .expect_err("no usage");
    assert!(
        err.to_string()
            .ends_with("not marked usage-bootstrap-authentication=true.")
    );
    let not_true = with("usage-bootstrap-authentication", "yes");
    assert!(authenticate_bootstrap_token(TOKEN, Some(&not_true), now()).is_err());

    let other_id = with("token-id", "zzzzzz");
    let err = authenticate_bootstrap_token(TOKEN, Some(&other_id), now()).expect_err("id");
    assert!(
        err.to_string()
            .contains("has invalid value for key token-id.")
    );

    let mut wrong_type = secret(&good());
    wrong_type["type"] = json!("Opaque");
    let err = authenticate_bootstrap_token(TOKEN, Some(&wrong_type), now()).expect_err("type");
    assert!(
        err.to_string()
            .contains("has invalid type, expected bootstrap.kubernetes.io/token.")
    );

    let mut deleting = secret(&good());
    deleting["metadata"]["deletionTimestamp"] = json!("2025-06-15T11:00:00Z");
    assert!(authenticate_bootstrap_token(TOKEN, Some(&deleting), now()).is_err());

    let mut bad_b64 = secret(&good());
    bad_b64["data"]["token-secret"] = json!("!!not base64!!");
    assert!(authenticate_bootstrap_token(TOKEN, Some(&bad_b64), now()).is_err());

    assert!(authenticate_bootstrap_token(TOKEN, None, now()).is_err());
    assert_eq!(
        authenticate_bootstrap_token("not-a-bootstrap-token", Some(&secret(&good())), now()),
        Err(TokenError::Unrecognized)
    );
}
