//! The run's dedicated namespace: a random name, its creation, and its deletion at the end
//! (falling back to deleting the objects one by one when the namespace stays Terminating, as on
//! a server without a namespace controller).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use http::Method;
use serde_json::json;
use tokio::time::Instant;

use crate::client::{ApiClient, ApiError};
use crate::report::CleanupReport;
use crate::scenarios::{Ctx, ErrorLog};

/// `<prefix>-<6 random base-36 characters>`, a valid namespace name for a valid prefix.
pub fn random_name(prefix: &str) -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    let mut n = h.finish();
    let mut suffix = String::new();
    for _ in 0..6 {
        let d = (n % 36) as u32;
        suffix.push(char::from_digit(d, 36).unwrap_or('0'));
        n /= 36;
    }
    format!("{prefix}-{suffix}")
}

/// Checks a namespace prefix: lowercase alphanumerics and '-', starting with a letter, short
/// enough for the random suffix to fit in a DNS label.
pub fn check_prefix(prefix: &str) -> anyhow::Result<()> {
    let ok = !prefix.is_empty()
        && prefix.len() <= 56
        && prefix.starts_with(|c: char| c.is_ascii_lowercase())
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    anyhow::ensure!(
        ok,
        "--namespace-prefix {prefix:?}: use 1-56 lowercase letters, digits and '-', starting with a letter"
    );
    Ok(())
}

pub async fn create(client: &ApiClient, name: &str) -> anyhow::Result<()> {
    let body = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "k1s-bench"}},
    });
    client
        .request(
            0,
            Method::POST,
            "/api/v1/namespaces",
            Some(Bytes::from(body.to_string())),
        )
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

/// The namespace's phase, or `None` once it is gone.
async fn phase(client: &ApiClient, name: &str) -> Result<Option<String>, ApiError> {
    match client
        .request(0, Method::GET, &format!("/api/v1/namespaces/{name}"), None)
        .await
    {
        Ok(body) => {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            Ok(Some(
                v.pointer("/status/phase")
                    .and_then(|p| p.as_str())
                    .unwrap_or("")
                    .to_string(),
            ))
        }
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes the namespace; when it has not gone after `wait`, deletes what is left in it one by
/// one.
pub async fn delete(ctx: &Arc<Ctx>, wait: Duration) -> CleanupReport {
    let started = Instant::now();
    let errors = ErrorLog::new();
    let client = &ctx.client;
    let name = &ctx.ns;
    let mut report = CleanupReport::default();
    match client
        .request(
            0,
            Method::DELETE,
            &format!("/api/v1/namespaces/{name}"),
            None,
        )
        .await
    {
        Ok(_) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => errors.record("delete namespace", &e),
    }
    let wait_until = Instant::now() + wait;
    loop {
        match phase(client, name).await {
            Ok(None) => {
                report.namespace_deleted = true;
                break;
            }
            Ok(Some(p)) => report.namespace_phase = Some(p),
            Err(e) => {
                errors.record("get namespace", &e);
                break;
            }
        }
        if Instant::now() >= wait_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if !report.namespace_deleted {
        match ctx.list_names(None).await {
            Ok(names) => {
                report.objects_deleted_individually = ctx.delete_each(names, &errors).await;
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => errors.record("list", &e),
        }
        match ctx.list_names(None).await {
            Ok(left) => report.objects_left = left.len() as u64,
            Err(e) if e.is_not_found() => {}
            Err(e) => errors.record("list", &e),
        }
        match phase(client, name).await {
            Ok(None) => {
                report.namespace_deleted = true;
                report.namespace_phase = None;
            }
            Ok(Some(p)) => report.namespace_phase = Some(p),
            Err(e) => errors.record("get namespace", &e),
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    report.errors = errors.snapshot();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_names_are_valid_and_differ() {
        let a = random_name("k1s-bench");
        let b = random_name("k1s-bench");
        assert_ne!(a, b);
        assert_eq!(a.len(), "k1s-bench-".len() + 6);
        assert!(a.starts_with("k1s-bench-"));
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert!(check_prefix("k1s-bench").is_ok());
        for bad in ["", "K1s", "1abc", "a_b", &"a".repeat(57)] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }
}
