//! Tests of service-account token issuing and verification.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::TokenError;
use super::keys::test_keys;
use super::sa::*;
use super::verified::*;

const T0: i64 = 1_750_000_000;

fn now() -> Timestamp {
    Timestamp::from_second(T0).expect("t0")
}

fn at(offset: i64) -> Timestamp {
    now()
        .checked_add(SignedDuration::from_secs(offset))
        .expect("time")
}

fn issuer() -> TokenIssuer {
    let (der, pem) = test_keys::generate();
    TokenIssuer::new(&der, &pem, String::new(), vec![]).expect("issuer")
}

fn input() -> TokenRequestInput {
    TokenRequestInput {
        namespace: "default".into(),
        sa_name: "builder".into(),
        sa_uid: "sa-uid-1".into(),
        audiences: vec![],
        expiration_seconds: None,
        bound: None,
        pod_node: None,
        now: now(),
    }
}

fn decode_part(token: &str, index: usize) -> Value {
    let part = token.split('.').nth(index).expect("part");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).expect("b64")).expect("json")
}

fn encode_part(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).expect("json"))
}

fn sa_object(uid: &str) -> Value {
    json!({ "metadata": { "name": "builder", "namespace": "default", "uid": uid } })
}

fn pod_input() -> TokenRequestInput {
    TokenRequestInput {
        bound: Some(BoundObject {
            kind: BoundKind::Pod,
            name: "web-0".into(),
            uid: "pod-uid".into(),
        }),
        pod_node: Some(NodeInfo {
            name: "node-a".into(),
            uid: "node-uid".into(),
        }),
        ..input()
    }
}

#[test]
fn issue_then_verify_round_trip() {
    let issuer = issuer();
    let issued = issuer.issue(input()).expect("issue");
    assert_eq!(issued.expiration_seconds, 3600);
    assert_eq!(issued.expiration_timestamp, at(3600));
    assert!(issued.warnings.is_empty());

    let v = issuer.verify(&issued.token, at(10)).expect("verify");
    assert_eq!(v.user.name, "system:serviceaccount:default:builder");
    assert_eq!(v.user.uid, "sa-uid-1");
    assert_eq!(
        v.user.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ]
    );
    assert_eq!(
        v.user.extra.get(CREDENTIAL_ID_KEY),
        Some(&vec![issued.credential_id.clone()])
    );
    assert!(issued.credential_id.starts_with("JTI="));
    assert_eq!(
        (v.namespace.as_str(), v.sa_name.as_str()),
        ("default", "builder")
    );
    assert_eq!(v.bound, None);
    assert_eq!(v.audiences, [DEFAULT_ISSUER]);
    assert_eq!(v.expires_at, Some(at(3600)));

    assert_eq!(
        v.objects_to_check(),
        [ObjectToCheck {
            kind: ObjectKind::ServiceAccount,
            namespace: Some("default".into()),
            name: "builder".into(),
            uid: "sa-uid-1".into(),
        }]
    );
    v.check_objects(|_| Some(sa_object("sa-uid-1")), at(10))
        .expect("service account still there");
}

#[test]
fn claims_shape_is_pinned() {
    let issuer = issuer();
    let issued = issuer.issue(pod_input()).expect("issue");
    let header = decode_part(&issued.token, 0);
    assert_eq!(header, json!({ "alg": "ES256", "kid": issuer.key_id() }));

    let payload = decode_part(&issued.token, 1);
    let jti = payload["jti"].as_str().expect("jti").to_string();
    assert_eq!(jti.len(), 36, "a UUID");
    assert_eq!(issued.credential_id, format!("JTI={jti}"));
    assert_eq!(
        payload,
        json!({
            "aud": ["https://kubernetes.default.svc.cluster.local"],
            "exp": T0 + 3600,
            "iat": T0,
            "iss": "https://kubernetes.default.svc.cluster.local",
            "jti": jti,
            "kubernetes.io": {
                "namespace": "default",
                "node": { "name": "node-a", "uid": "node-uid" },
                "pod": { "name": "web-0", "uid": "pod-uid" },
                "serviceaccount": { "name": "builder", "uid": "sa-uid-1" }
            },
            "nbf": T0,
            "sub": "system:serviceaccount:default:builder"
        })
    );
    // Keys in go-jose's (sorted) order on the wire.
    let raw = String::from_utf8(
        URL_SAFE_NO_PAD
            .decode(issued.token.split('.').nth(1).expect("payload"))
            .expect("b64"),
    )
    .expect("utf8");
    assert!(raw.starts_with("{\"aud\":["), "{raw}");
}

#[test]
fn kid_is_stable_and_derived_from_the_public_key() {
    let (der, pem) = test_keys::generate();
    let a = TokenIssuer::new(&der, &pem, String::new(), vec![]).expect("a");
    let b = TokenIssuer::new(&der, &pem, "https://other".into(), vec![]).expect("b");
    assert_eq!(a.key_id(), b.key_id());
    // Upstream: base64url(sha256(DER SubjectPublicKeyInfo)).
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let spki = base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("pem body");
    let expected = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
    assert_eq!(a.key_id(), expected);
    assert_eq!(a.key_id().len(), 43);
}

#[test]
fn works_with_the_cluster_pki_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = k1s_kubeadm_lite::ensure_pki(dir.path(), &k1s_kubeadm_lite::PkiOptions::default())
        .expect("pki");
    let issuer = TokenIssuer::new(
        pki.sa_private_key_pkcs8_der(),
        pki.sa_public_key_pem(),
        DEFAULT_ISSUER.into(),
        vec![],
    )
    .expect("issuer from PKI");
    let issued = issuer.issue(input()).expect("issue");
    issuer.verify(&issued.token, now()).expect("verify");
}

#[test]
fn lifetime_is_checked_with_leeway() {
    let issuer = issuer();
    let token = issuer.issue(input()).expect("issue").token;
    assert!(issuer.verify(&token, at(3600 + 59)).is_ok());
    assert_eq!(
        issuer.verify(&token, at(3600 + 61)),
        Err(TokenError::Expired)
    );
    assert_eq!(
        TokenError::Expired.to_string(),
        "service account token has expired"
    );
    assert!(issuer.verify(&token, at(-59)).is_ok());
    assert_eq!(issuer.verify(&token, at(-61)), Err(TokenError::NotValidYet));

    // iat in the future without nbf.
    let mut payload = decode_part(&token, 1);
    payload.as_object_mut().expect("obj").remove("nbf");
    payload["iat"] = json!(T0 + 600);
    let crafted = issuer.sign(&payload).expect("sign");
    assert_eq!(
        issuer.verify(&crafted, now()),
        Err(TokenError::IssuedInFuture)
    );
}

#[test]
fn audience_must_match() {
    let issuer = issuer();
    let token = issuer.issue(input()).expect("issue").token;
    let err = issuer
        .verify_for_audiences(&token, Some(&["vault".to_string()]), now())
        .expect_err("wrong audience");
    assert_eq!(
        err.to_string(),
        r#"token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["vault"]"#
    );

    let vault = issuer
        .issue(TokenRequestInput {
            audiences: vec!["vault".into()],
            ..input()
        })
        .expect("issue")
        .token;
    assert!(matches!(
        issuer.verify(&vault, now()),
        Err(TokenError::InvalidAudience { .. })
    ));
    let ok = issuer
        .verify_for_audiences(&vault, Some(&["vault".to_string()]), now())
        .expect("vault audience");
    assert_eq!(ok.audiences, ["vault"]);
}

#[test]
fn other_issuers_are_not_recognized() {
    let (der, pem) = test_keys::generate();
    let ours = TokenIssuer::new(&der, &pem, String::new(), vec![]).expect("ours");
    let theirs = TokenIssuer::new(&der, &pem, "https://elsewhere".into(), vec![]).expect("theirs");
    let token = theirs.issue(input()).expect("issue").token;
    assert_eq!(ours.verify(&token, now()), Err(TokenError::Unrecognized));
    let both = ours.with_additional_issuers(vec!["https://elsewhere".into()]);
    // Accepted issuer now, but its audience is its own issuer, not ours.
    assert!(matches!(
        both.verify(&token, now()),
        Err(TokenError::InvalidAudience { .. })
    ));
    for junk in ["", "abc", "a.b", "a.b.c", "abcdef.0123456789abcdef"] {
        assert_eq!(both.verify(junk, now()), Err(TokenError::Unrecognized));
    }
}

#[test]
fn tampered_or_foreign_tokens_fail_the_signature() {
    let issuer = issuer();
    let token = issuer.issue(input()).expect("issue").token;
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let mut payload = decode_part(&token, 1);
    payload["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
    parts[1] = encode_part(&payload);
    assert_eq!(
        issuer.verify(&parts.join("."), now()),
        Err(TokenError::InvalidSignature)
    );

    // Same issuer name, another key.
    let (der, pem) = test_keys::generate();
    let other = TokenIssuer::new(&der, &pem, String::new(), vec![]).expect("other");
    let foreign = other.issue(input()).expect("issue").token;
    assert_eq!(
        issuer.verify(&foreign, now()),
        Err(TokenError::InvalidSignature)
    );

    // alg none / HS256 headers are refused.
    for alg in ["none", "HS256", "ES384"] {
        let header = encode_part(&json!({ "alg": alg }));
        let forged = format!("{header}.{}.{}", parts[1], "");
        assert_eq!(
            issuer.verify(&forged, now()),
            Err(TokenError::InvalidSignature),
            "{alg}"
        );
    }

    // A rotated-in key verifies after it is added.
    let mut issuer = issuer;
    issuer.add_verification_keys_pem(&pem).expect("add key");
    assert!(issuer.verify(&foreign, now()).is_ok());
}

#[test]
fn bound_tokens_carry_and_check_their_object() {
    let issuer = issuer();
    let token = issuer.issue(pod_input()).expect("issue").token;
    let v = issuer.verify(&token, now()).expect("verify");
    assert_eq!(
        v.user.extra.get(POD_NAME_KEY),
        Some(&vec!["web-0".to_string()])
    );
    assert_eq!(
        v.user.extra.get(POD_UID_KEY),
        Some(&vec!["pod-uid".to_string()])
    );
    assert_eq!(
        v.user.extra.get(NODE_NAME_KEY),
        Some(&vec!["node-a".to_string()])
    );
    assert_eq!(
        v.user.extra.get(NODE_UID_KEY),
        Some(&vec!["node-uid".to_string()])
    );
    let checks = v.objects_to_check();
    assert_eq!(checks.len(), 2, "the pod's node is not checked");
    assert_eq!(checks[1].kind, ObjectKind::Pod);
    assert_eq!(checks[1].namespace.as_deref(), Some("default"));

    let pod = |uid: &str, deleted: Option<&str>| {
        let mut p = json!({ "metadata": { "name": "web-0", "uid": uid } });
        if let Some(d) = deleted {
            p["metadata"]["deletionTimestamp"] = json!(d);
        }
        p
    };
    assert!(
        v.check_object(&checks[1], Some(&pod("pod-uid", None)), now())
            .is_ok()
    );
    assert_eq!(
        v.check_object(&checks[1], Some(&pod("new-uid", None)), now())
            .expect_err("recreated")
            .to_string(),
        "pod UID (new-uid) does not match service account pod ref claim (pod-uid)"
    );
    assert_eq!(
        v.check_object(&checks[1], None, now()),
        Err(TokenError::Invalidated)
    );
    // Deleted within the leeway still works; long ago does not.
    let recent = Timestamp::from_second(T0 - 30).expect("t").to_string();
    let old = Timestamp::from_second(T0 - 120).expect("t").to_string();
    assert!(
        v.check_object(&checks[1], Some(&pod("pod-uid", Some(&recent))), now())
            .is_ok()
    );
    assert_eq!(
        v.check_object(&checks[1], Some(&pod("pod-uid", Some(&old))), now()),
        Err(TokenError::Invalidated)
    );

    // Service account checks.
    assert_eq!(
        v.check_object(&checks[0], None, now())
            .expect_err("gone")
            .to_string(),
        "serviceaccounts \"builder\" not found"
    );
    assert_eq!(
        v.check_object(&checks[0], Some(&sa_object("other")), now())
            .expect_err("recreated")
            .to_string(),
        "service account UID (other) does not match claim (sa-uid-1)"
    );
    let mut deleted_sa = sa_object("sa-uid-1");
    deleted_sa["metadata"]["deletionTimestamp"] = json!(old);
    assert_eq!(
        v.check_object(&checks[0], Some(&deleted_sa), now())
            .expect_err("deleted")
            .to_string(),
        "service account default/builder has been deleted"
    );
}

#[test]
fn secret_and_node_bound_tokens() {
    let issuer = issuer();
    let secret = issuer
        .issue(TokenRequestInput {
            bound: Some(BoundObject {
                kind: BoundKind::Secret,
                name: "s".into(),
                uid: "s-uid".into(),
            }),
            ..input()
        })
        .expect("issue");
    let v = issuer.verify(&secret.token, now()).expect("verify");
    assert_eq!(v.bound.as_ref().map(|b| b.kind), Some(BoundKind::Secret));
    assert!(!v.user.extra.contains_key(POD_NAME_KEY));
    let checks = v.objects_to_check();
    assert_eq!(checks[1].kind, ObjectKind::Secret);
    assert_eq!(
        v.check_object(
            &checks[1],
            Some(&json!({ "metadata": { "uid": "x" } })),
            now()
        )
        .expect_err("uid")
        .to_string(),
        "secret UID (x) does not match service account secret ref claim (s-uid)"
    );

    let node = issuer
        .issue(TokenRequestInput {
            bound: Some(BoundObject {
                kind: BoundKind::Node,
                name: "n1".into(),
                uid: "n-uid".into(),
            }),
            ..input()
        })
        .expect("issue");
    let payload = decode_part(&node.token, 1);
    assert_eq!(
        payload["kubernetes.io"]["node"],
        json!({ "name": "n1", "uid": "n-uid" })
    );
    let v = issuer.verify(&node.token, now()).expect("verify");
    assert_eq!(
        v.user.extra.get(NODE_NAME_KEY),
        Some(&vec!["n1".to_string()])
    );
    let checks = v.objects_to_check();
    assert_eq!(checks[1].kind, ObjectKind::Node);
    assert_eq!(checks[1].namespace, None);
    let mut lookups = Vec::new();
    v.check_objects(
        |c| {
            lookups.push(c.kind);
            Some(match c.kind {
                ObjectKind::Node => json!({ "metadata": { "uid": "n-uid" } }),
                _ => sa_object("sa-uid-1"),
            })
        },
        now(),
    )
    .expect("all present");
    assert_eq!(lookups, [ObjectKind::ServiceAccount, ObjectKind::Node]);
}

#[test]
fn lifetime_rules_of_issue() {
    let issuer = issuer().with_max_expiration_seconds(Some(1800));
    let capped = issuer
        .issue(TokenRequestInput {
            expiration_seconds: Some(7200),
            ..input()
        })
        .expect("issue");
    assert_eq!(capped.expiration_seconds, 1800);
    assert_eq!(capped.expiration_timestamp, at(1800));
    assert_eq!(
        capped.warnings,
        ["requested expiration of 7200 seconds shortened to 1800 seconds"]
    );
    assert_eq!(decode_part(&capped.token, 1)["exp"], json!(T0 + 1800));

    let err = issuer
        .issue(TokenRequestInput {
            expiration_seconds: Some(599),
            ..input()
        })
        .expect_err("too short");
    assert!(
        err.to_string()
            .contains("may not specify a duration less than 10 minutes")
    );

    // kubelet's projected tokens (3607 s, pod-bound, API audiences) get a year and warnafter.
    let issuer = self::issuer();
    let projected = issuer
        .issue(TokenRequestInput {
            expiration_seconds: Some(WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS),
            ..pod_input()
        })
        .expect("issue");
    let payload = decode_part(&projected.token, 1);
    assert_eq!(payload["exp"], json!(T0 + EXPIRATION_EXTENSION_SECONDS));
    assert_eq!(payload["kubernetes.io"]["warnafter"], json!(T0 + 3607));
    assert_eq!(projected.expiration_timestamp, at(3607));
    let v = issuer
        .verify(&projected.token, at(7200))
        .expect("still valid");
    assert_eq!(v.warn_after, Some(at(3607)));
    // Not extended when switched off, or for other audiences.
    let plain = issuer
        .with_extend_expiration(false)
        .issue(TokenRequestInput {
            expiration_seconds: Some(3607),
            ..pod_input()
        })
        .expect("issue");
    assert_eq!(decode_part(&plain.token, 1)["exp"], json!(T0 + 3607));
}

#[test]
fn malformed_claims_are_rejected() {
    let issuer = issuer();
    let token = issuer.issue(input()).expect("issue").token;
    let base = decode_part(&token, 1);

    let mut no_private = base.clone();
    no_private
        .as_object_mut()
        .expect("obj")
        .remove("kubernetes.io");
    let mut bad_exp = base.clone();
    bad_exp["exp"] = json!("tomorrow");
    let mut bad_aud = base.clone();
    bad_aud["aud"] = json!(42);
    let mut no_sa = base;
    no_sa["kubernetes.io"]["serviceaccount"] = json!({});
    for payload in [no_private, bad_exp, bad_aud, no_sa] {
        let crafted = issuer.sign(&payload).expect("sign");
        assert!(
            matches!(
                issuer.verify(&crafted, now()),
                Err(TokenError::InvalidClaims(_))
            ),
            "{payload}"
        );
    }
}

#[test]
fn legacy_secret_tokens() {
    let issuer = issuer();
    let token = issuer
        .issue_legacy("default", "builder", "sa-uid-1", "builder-token-abc")
        .expect("legacy");
    let payload = decode_part(&token, 1);
    assert_eq!(payload["iss"], "kubernetes/serviceaccount");
    assert_eq!(
        payload["kubernetes.io/serviceaccount/secret.name"],
        "builder-token-abc"
    );
    assert!(payload.get("exp").is_none());

    // Non-expiring.
    let v = issuer.verify(&token, at(10 * 365 * 86400)).expect("verify");
    assert_eq!(v.legacy_secret.as_deref(), Some("builder-token-abc"));
    assert_eq!(v.user.name, "system:serviceaccount:default:builder");
    let checks = v.objects_to_check();
    assert_eq!(
        checks.iter().map(|c| c.kind).collect::<Vec<_>>(),
        [ObjectKind::Secret, ObjectKind::ServiceAccount]
    );
    let secret = |data: &str, invalid: bool| {
        let mut s = json!({
            "metadata": { "name": "builder-token-abc", "uid": "s" },
            "data": { "token": base64::engine::general_purpose::STANDARD.encode(data) },
        });
        if invalid {
            s["metadata"]["labels"] =
                json!({ "kubernetes.io/legacy-token-invalid-since": "2024-01-01" });
        }
        s
    };
    assert!(
        v.check_object(&checks[0], Some(&secret(&token, false)), now())
            .is_ok()
    );
    assert_eq!(
        v.check_object(&checks[0], Some(&secret("other", false)), now())
            .expect_err("mismatch")
            .to_string(),
        "Token does not match server's copy"
    );
    assert_eq!(
        v.check_object(&checks[0], None, now())
            .expect_err("gone")
            .to_string(),
        "Token has been invalidated"
    );
    assert!(
        v.check_object(&checks[0], Some(&secret(&token, true)), now())
            .expect_err("invalidated")
            .to_string()
            .contains("has been marked invalid")
    );
    assert_eq!(
        v.check_object(&checks[1], Some(&sa_object("x")), now())
            .expect_err("uid")
            .to_string(),
        "ServiceAccount UID (x) does not match claim (sa-uid-1)"
    );

    // Claims must be complete and consistent.
    let mut wrong_sub = payload.clone();
    wrong_sub["sub"] = json!("system:serviceaccount:default:admin");
    let crafted = issuer.sign(&wrong_sub).expect("sign");
    assert_eq!(
        issuer.verify(&crafted, now()),
        Err(TokenError::Legacy("sub claim is invalid".into()))
    );
    let mut missing = payload;
    missing
        .as_object_mut()
        .expect("obj")
        .remove("kubernetes.io/serviceaccount/service-account.uid");
    let crafted = issuer.sign(&missing).expect("sign");
    assert_eq!(
        issuer.verify(&crafted, now()),
        Err(TokenError::Legacy(
            "serviceAccountUID claim is missing".into()
        ))
    );
}

#[test]
fn issuer_construction_errors() {
    let (der, _) = test_keys::generate();
    let (_, other_pem) = test_keys::generate();
    let err = TokenIssuer::new(&der, &other_pem, String::new(), vec![]).expect_err("mismatch");
    assert_eq!(
        err.to_string(),
        "the service account public key does not match the private key"
    );
    assert!(TokenIssuer::new(b"junk", &other_pem, String::new(), vec![]).is_err());
    assert!(TokenIssuer::new(&der, "junk", String::new(), vec![]).is_err());
    let custom = TokenIssuer::new(
        &der,
        &{
            // The matching public key for `der`.
            let pair = ring::signature::EcdsaKeyPair::from_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
                &ring::rand::SystemRandom::new(),
            )
            .expect("pair");
            use ring::signature::KeyPair as _;
            let mut spki = vec![
                0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06,
                0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
            ];
            spki.extend_from_slice(pair.public_key().as_ref());
            format!(
                "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
                base64::engine::general_purpose::STANDARD.encode(spki)
            )
        },
        "https://issuer.example".into(),
        vec!["api".into(), "other".into()],
    )
    .expect("custom");
    assert_eq!(custom.issuer(), "https://issuer.example");
    assert_eq!(custom.api_audiences(), ["api", "other"]);
}

#[test]
fn issuer_can_be_shared_across_tasks() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TokenIssuer>();
    assert_send_sync::<VerifiedToken>();
}
