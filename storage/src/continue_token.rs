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
    /// The snapshot; -1 (upstream's marker) continues at the latest revision.
    rv: i64,
    start: String,
}

/// The revision of a token that resumes a list at the latest revision.
const LATEST: i64 = -1;

pub(crate) fn encode(revision: Revision, start: &str) -> String {
    encode_rv(i64::try_from(revision.0).unwrap_or(i64::MAX), start)
}

/// A token that continues from `start` at whatever revision is latest when it is used (what an
/// expired token's error offers).
pub(crate) fn encode_latest(start: &str) -> String {
    encode_rv(LATEST, start)
}

fn encode_rv(rv: i64, start: &str) -> String {
    let token = Token {
        v: TOKEN_VERSION.into(),
        rv,
        start: start.into(),
    };
    // Serializing a struct of strings and integers cannot fail.
    let json = serde_json::to_vec(&token).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

/// Returns the snapshot revision (`None`: the latest) and the first key of the next page,
/// checked against `prefix`.
pub(crate) fn decode(token: &str, prefix: &str) -> Result<(Option<Revision>, String)> {
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
    match t.rv {
        LATEST => Ok((None, t.start)),
        rv if rv > 0 => Ok((Some(Revision(rv as u64)), t.start)),
        _ => Err(Error::InvalidContinue("missing revision".into())),
    }
}

/// The error for a token whose snapshot is compacted: it offers to go on from the same key at
/// the latest revision.
pub(crate) fn expired(requested: Revision, start: &str) -> Error {
    Error::ContinueExpired {
        requested,
        resume: encode_latest(start),
    }
}
