//! Authentication, the chain's first decision: who is asking. A verified client certificate, an
//! identity attached in process, else a bearer token (token file, service-account JWT, bootstrap
//! token), else anonymous. Also used by TokenReview.

use std::time::Duration;

use http::HeaderMap;
use k1s_apimachinery::{ApiError, catalog};

use crate::auth::UserInfo;
use crate::auth::authn;
use crate::context::ApiContext;
use crate::registry::Target;
use crate::tls::CertIdentity;

/// Who a connection or an in-process caller is, before any header is read.
#[derive(Clone, Debug)]
pub enum Identity {
    /// A TLS connection and what its client certificate (if any) says.
    Tls(CertIdentity),
    /// An in-process caller (the controller-manager), already known: it enters the chain after
    /// TLS with this identity and is then authorized like anyone else.
    InProcess(UserInfo),
}

/// Successful token authentications, kept for a short while as upstream's token cache does
/// (10 s): verifying an ES256 signature and looking up the bound objects on every request would
/// cost more than the rest of the request. A deleted account's token therefore keeps working for
/// up to that long, as upstream.
#[derive(Default)]
pub struct TokenCache {
    entries: std::sync::Mutex<std::collections::HashMap<[u8; 32], (UserInfo, std::time::Instant)>>,
}

const TOKEN_CACHE_TTL: Duration = Duration::from_secs(10);
const TOKEN_CACHE_MAX: usize = 4096;

impl TokenCache {
    fn key(token: &str) -> [u8; 32] {
        let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let mut k = [0u8; 32];
        k.copy_from_slice(d.as_ref());
        k
    }

    fn get(&self, token: &str) -> Option<UserInfo> {
        let entries = self.entries.lock().ok()?;
        let (user, at) = entries.get(&Self::key(token))?;
        (at.elapsed() < TOKEN_CACHE_TTL).then(|| user.clone())
    }

    fn put(&self, token: &str, user: &UserInfo) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= TOKEN_CACHE_MAX {
                entries.retain(|_, (_, at)| at.elapsed() < TOKEN_CACHE_TTL);
                if entries.len() >= TOKEN_CACHE_MAX {
                    entries.clear();
                }
            }
            entries.insert(Self::key(token), (user.clone(), std::time::Instant::now()));
        }
    }
}

/// Authentication: a verified client certificate, else a bearer token (token file, then
/// service-account JWT, then bootstrap token), else anonymous. A presented but bad credential
/// is 401, as upstream.
pub async fn authenticate(
    ctx: &ApiContext,
    identity: &Identity,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let cert = match identity {
        Identity::InProcess(user) => return Ok(user.clone()),
        Identity::Tls(cert) => cert,
    };
    match cert {
        CertIdentity::Invalid(why) => {
            tracing::debug!(%why, "client certificate rejected");
            return Err(ApiError::unauthorized());
        }
        CertIdentity::User { name, groups } => {
            return Ok(UserInfo::new(name.clone(), groups.clone()));
        }
        CertIdentity::None => {}
    }
    let Some(token) = authn::bearer_token(headers) else {
        return Ok(UserInfo::anonymous());
    };
    if let Some(user) = ctx.security.token_cache.get(token) {
        return Ok(user);
    }
    let user = authenticate_token(ctx, token).await?;
    ctx.security.token_cache.put(token, &user);
    Ok(user)
}

/// Token authentication, also used by TokenReview.
pub async fn authenticate_token(ctx: &ApiContext, token: &str) -> Result<UserInfo, ApiError> {
    let sec = &ctx.security;
    if let Some(user) = sec.token_file.as_ref().and_then(|f| f.authenticate(token)) {
        return Ok(user);
    }
    let now = jiff::Timestamp::now();
    match sec.tokens.verify(token, now) {
        Ok(verified) => {
            for check in verified.objects_to_check() {
                let current = lookup(
                    ctx,
                    check.kind.resource(),
                    check.namespace.as_deref(),
                    &check.name,
                )
                .await;
                verified
                    .check_object(&check, current.as_ref(), now)
                    .map_err(|e| e.to_api_error())?;
                if let (Some(secret), Some(ns)) = (&current, &check.namespace)
                    && check.kind.resource() == "secrets"
                    && verified.legacy_secret.as_deref() == Some(check.name.as_str())
                {
                    mark_legacy_token_used(ctx, ns, &check.name, secret, now).await;
                }
            }
            return Ok(verified.user);
        }
        Err(authn::TokenError::Unrecognized) => {}
        Err(e) => return Err(e.to_api_error()),
    }
    if let Some((id, _)) = authn::parse_token(token) {
        let name = authn::bootstrap::bootstrap_secret_name(id);
        let secret = lookup(ctx, "secrets", Some("kube-system"), &name).await;
        return authn::authenticate_bootstrap_token(token, secret.as_ref(), now)
            .map_err(|e| e.to_api_error());
    }
    Err(ApiError::unauthorized())
}

/// Upstream's LegacyServiceAccountTokenTracking: a legacy token's Secret is labelled with the
/// day (UTC) it was last used, written at most once a day; a failed write is only logged.
async fn mark_legacy_token_used(
    ctx: &ApiContext,
    namespace: &str,
    name: &str,
    secret: &serde_json::Value,
    now: jiff::Timestamp,
) {
    const LAST_USED: &str = "kubernetes.io/legacy-token-last-used";
    let today = now.strftime("%Y-%m-%d").to_string();
    let labelled = secret
        .pointer("/metadata/labels")
        .and_then(|l| l.get(LAST_USED))
        .and_then(serde_json::Value::as_str);
    if labelled == Some(today.as_str()) {
        return;
    }
    let Some(info) = catalog::find("", "v1", "secrets") else {
        return;
    };
    let target = Target {
        info,
        namespace: Some(namespace),
    };
    let strategy = crate::strategies::for_resource(info);
    let result = ctx
        .registry
        .update(
            target,
            strategy,
            name,
            None,
            &crate::registry::WriteOptions::default(),
            |current| {
                let mut next = current.clone();
                if !next["metadata"]["labels"].is_object() {
                    next["metadata"]["labels"] = serde_json::json!({});
                }
                next["metadata"]["labels"][LAST_USED] = serde_json::json!(today);
                Ok(next)
            },
        )
        .await;
    if let Err(e) = result {
        tracing::info!(secret = %format!("{namespace}/{name}"), error = %e, "could not record the legacy token's last use");
    }
}

/// A core/v1 object, if it exists.
async fn lookup(
    ctx: &ApiContext,
    resource: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<serde_json::Value> {
    let info = catalog::find("", "v1", resource)?;
    ctx.registry
        .get(Target { info, namespace }, name)
        .await
        .ok()
}
