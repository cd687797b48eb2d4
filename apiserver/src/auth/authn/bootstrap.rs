//! Bootstrap-token authentication (`plugin/pkg/auth/authenticator/token/bootstrap`): a token
//! `<id>.<secret>` is checked against the kube-system Secret `bootstrap-token-<id>`.

use base64::Engine as _;
use jiff::Timestamp;
use serde_json::Value;

use super::{TokenError, constant_time_eq, go_quote};
use crate::auth::UserInfo;

/// The namespace bootstrap token Secrets live in.
pub const BOOTSTRAP_TOKEN_SECRET_NAMESPACE: &str = "kube-system";
/// Secret name prefix: `bootstrap-token-<id>`.
pub const BOOTSTRAP_TOKEN_SECRET_PREFIX: &str = "bootstrap-token-";
/// The Secret type.
pub const SECRET_TYPE_BOOTSTRAP_TOKEN: &str = "bootstrap.kubernetes.io/token";
pub const TOKEN_ID_KEY: &str = "token-id";
pub const TOKEN_SECRET_KEY: &str = "token-secret";
pub const EXPIRATION_KEY: &str = "expiration";
pub const USAGE_AUTHENTICATION_KEY: &str = "usage-bootstrap-authentication";
pub const EXTRA_GROUPS_KEY: &str = "auth-extra-groups";
/// Username prefix: `system:bootstrap:<id>`.
pub const BOOTSTRAP_USER_PREFIX: &str = "system:bootstrap:";
/// The group every bootstrap token user has.
pub const BOOTSTRAP_DEFAULT_GROUP: &str = "system:bootstrappers";
/// The pattern extra groups must match (as upstream prints it in errors).
pub const BOOTSTRAP_GROUP_PATTERN: &str = r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\z";

/// Splits a token matching `^([a-z0-9]{6})\.([a-z0-9]{16})$` into (id, secret).
pub fn parse_token(s: &str) -> Option<(&str, &str)> {
    let (id, secret) = s.split_once('.')?;
    let ok = |part: &str, len: usize| {
        part.len() == len
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// `bootstrap-token-<id>`.
pub fn bootstrap_secret_name(token_id: &str) -> String {
    format!("{BOOTSTRAP_TOKEN_SECRET_PREFIX}{token_id}")
}

/// Whether `name` is a valid extra group: `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`.
pub fn validate_bootstrap_group_name(name: &str) -> Result<(), String> {
    let valid = name
        .strip_prefix("system:bootstrappers:")
        .is_some_and(|rest| {
            !rest.is_empty()
                && rest.len() <= 256
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
                && rest
                    .bytes()
                    .last()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "bootstrap group {} is invalid (must match {BOOTSTRAP_GROUP_PATTERN})",
            go_quote(name)
        ))
    }
}

/// One `data` value of a Secret, base64-decoded; empty when absent or undecodable.
fn secret_data(secret: &Value, key: &str) -> Vec<u8> {
    secret
        .get("data")
        .and_then(|d| d.get(key))
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .unwrap_or_default()
}

fn secret_data_string(secret: &Value, key: &str) -> String {
    String::from_utf8_lossy(&secret_data(secret, key)).into_owned()
}

/// Authenticates `token` with the Secret `kube-system/bootstrap-token-<id>` (`secret`, `None`
/// when absent). [`TokenError::Unrecognized`] when the token does not have the bootstrap shape.
/// The user is `system:bootstrap:<id>` with the sorted, deduplicated groups
/// `system:bootstrappers` + `auth-extra-groups`, then `system:authenticated`.
pub fn authenticate_bootstrap_token(
    token: &str,
    secret: Option<&Value>,
    now: Timestamp,
) -> Result<UserInfo, TokenError> {
    let (token_id, token_secret) = parse_token(token).ok_or(TokenError::Unrecognized)?;
    let name = bootstrap_secret_name(token_id);
    let fail = |what: &str| {
        TokenError::Bootstrap(format!(
            "secret {BOOTSTRAP_TOKEN_SECRET_NAMESPACE}/{name} {what}"
        ))
    };
    let secret = secret.ok_or_else(|| fail("not found"))?;
    if secret
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Err(fail("is deleted and awaiting removal"));
    }
    let type_ok = secret.get("type").and_then(Value::as_str) == Some(SECRET_TYPE_BOOTSTRAP_TOKEN);
    if !type_ok || !secret.get("data").is_some_and(Value::is_object) {
        return Err(fail(&format!(
            "has invalid type, expected {SECRET_TYPE_BOOTSTRAP_TOKEN}."
        )));
    }
    let stored_secret = secret_data(secret, TOKEN_SECRET_KEY);
    if !constant_time_eq(&stored_secret, token_secret.as_bytes()) {
        return Err(fail(&format!(
            "has invalid value for key {TOKEN_SECRET_KEY}."
        )));
    }
    if secret_data_string(secret, TOKEN_ID_KEY) != token_id {
        return Err(fail(&format!("has invalid value for key {TOKEN_ID_KEY}.")));
    }
    if has_expired(secret, now) {
        return Err(fail("has expired."));
    }
    if secret_data_string(secret, USAGE_AUTHENTICATION_KEY) != "true" {
        return Err(fail(&format!(
            "not marked {USAGE_AUTHENTICATION_KEY}=true."
        )));
    }
    let mut groups = groups(secret).map_err(|e| {
        fail(&format!(
            "has invalid value for key {EXTRA_GROUPS_KEY}: {e}."
        ))
    })?;
    groups.push("system:authenticated".into());
    Ok(UserInfo {
        name: format!("{BOOTSTRAP_USER_PREFIX}{token_id}"),
        groups,
        ..Default::default()
    })
}

/// `expiration` (RFC 3339) at or before `now`; an unparsable one counts as expired.
fn has_expired(secret: &Value, now: Timestamp) -> bool {
    let expiration = secret_data_string(secret, EXPIRATION_KEY);
    if expiration.is_empty() {
        return false;
    }
    match expiration.parse::<Timestamp>() {
        Ok(t) => t <= now,
        Err(_) => true,
    }
}

/// `system:bootstrappers` plus the validated extra groups, sorted and deduplicated.
fn groups(secret: &Value) -> Result<Vec<String>, String> {
    let mut groups = std::collections::BTreeSet::from([BOOTSTRAP_DEFAULT_GROUP.to_string()]);
    let extra = secret_data_string(secret, EXTRA_GROUPS_KEY);
    if !extra.is_empty() {
        for group in extra.split(',') {
            validate_bootstrap_group_name(group)?;
            groups.insert(group.to_string());
        }
    }
    Ok(groups.into_iter().collect())
}
