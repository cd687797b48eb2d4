//! Opaque list continuation tokens: the snapshot revision and the key to resume from.
//!
//! Shaped like upstream's (base64 of `{"v":..,"rv":..,"start":..}`) so they look familiar, but
//! clients must treat them as opaque.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::{Error, Result, Revision};

const TOKEN_VERSION: &str = "k1s.storage/v1";

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: u64,
    start: String,
}

pub(crate) fn encode(revision: Revision, start: &str) -> String {
    let token = Token {
        v: TOKEN_VERSION.into(),
        rv: revision.0,
        start: start.into(),
    };
    // Serializing a struct of strings and integers cannot fail.
    let json = serde_json::to_vec(&token).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

/// Returns the snapshot revision and the first key of the next page, checked against `prefix`.
pub(crate) fn decode(token: &str, prefix: &str) -> Result<(Revision, String)> {
    let raw = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| Error::InvalidContinue("not base64".into()))?;
    let t: Token = serde_json::from_slice(&raw)
        .map_err(|e| Error::InvalidContinue(format!("malformed: {e}")))?;
    if t.v != TOKEN_VERSION {
        return Err(Error::InvalidContinue(format!("unknown version {:?}", t.v)));
    }
    if !t.start.starts_with(prefix) {
        return Err(Error::InvalidContinue(
            "the token belongs to a different list".into(),
        ));
    }
    if t.rv == 0 {
        return Err(Error::InvalidContinue("missing revision".into()));
    }
    Ok((Revision(t.rv), t.start))
}
