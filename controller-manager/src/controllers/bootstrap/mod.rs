//! Bootstrap-token controllers (upstream `pkg/controller/bootstrap`): the bootstrapsigner signs
//! `kube-public/cluster-info` for every signing token, the tokencleaner deletes expired tokens.

pub mod bootstrapsigner;
pub mod tokencleaner;

use k1s_kubeadm_lite::token::{self, BootstrapToken};
use k8s_openapi::api::core::v1::Secret;

/// A kube-system Secret of type `bootstrap.kubernetes.io/token`.
pub(crate) fn is_bootstrap_secret(s: &Secret) -> bool {
    s.metadata.namespace.as_deref() == Some(token::NAMESPACE)
        && s.type_.as_deref() == Some(token::SECRET_TYPE)
}

/// The token a Secret holds, when it parses.
pub(crate) fn token_of(s: &Secret) -> Option<BootstrapToken> {
    let value = serde_json::to_value(s).ok()?;
    BootstrapToken::from_secret(&value).ok()
}

/// The raw `expiration` of a bootstrap Secret (None when absent), parsed; `Err` when it does not
/// parse.
pub(crate) fn expiration(s: &Secret) -> Result<Option<jiff::Timestamp>, String> {
    let Some(raw) = s.data.as_ref().and_then(|d| d.get("expiration")) else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&raw.0);
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<jiff::Timestamp>()
        .map(Some)
        .map_err(|e| format!("invalid expiration {text:?}: {e}"))
}
