//! Bearer-token authentication: service-account JWTs (issue and verify), the TokenRequest
//! subresource, OIDC discovery documents, bootstrap tokens and the static token file.
//!
//! Everything here is pure logic; the request chain wires it. Upstream's token authenticators run
//! as one union, in this order, the first success winning (`pkg/kubeapiserver/authenticator`):
//! static token file ([`token_file::TokenFile`]), service-account JWTs
//! ([`sa::TokenIssuer::verify`], then the object checks of [`verified::VerifiedToken`]), bootstrap
//! tokens ([`bootstrap::authenticate_bootstrap_token`]). A request whose bearer token none of
//! them accepts gets 401 `Unauthorized` ([`TokenError::to_api_error`]); a request without a
//! bearer token goes on to anonymous.

pub mod bootstrap;
/// The JWS keys live with the PKI code (`k1s_kubeadm_lite::jws`), which a standalone
/// controller-manager shares; the tests reach them here.
#[cfg(test)]
use k1s_kubeadm_lite::jws as keys;
pub mod oidc;
pub mod sa;
pub mod token_file;
pub mod token_request;
pub mod verified;

#[cfg(test)]
mod bootstrap_tests;
#[cfg(test)]
mod sa_tests;
#[cfg(test)]
mod token_file_tests;
#[cfg(test)]
mod token_request_tests;

pub use bootstrap::{authenticate_bootstrap_token, parse_token};
pub use oidc::OidcDocuments;
pub use sa::{BoundKind, BoundObject, IssuedToken, NodeInfo, TokenIssuer, TokenRequestInput};
pub use token_file::{TokenFile, TokenFileError};
pub use token_request::{
    BoundObjectTarget, TokenRequestOutcome, bound_object_target, create_token,
    token_request_response,
};
pub use verified::{ObjectKind, ObjectToCheck, VerifiedToken};

use k1s_apimachinery::ApiError;

/// Why a bearer token did not authenticate. Messages follow upstream's where upstream has one;
/// none of them ever contains the token or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a token this authenticator handles (not a JWT, another issuer, not `<id>.<secret>`).
    /// Upstream's authenticators answer "not mine" without an error; the union moves on.
    #[error("token is not recognized by this authenticator")]
    Unrecognized,
    /// No key verifies the signature (also: an algorithm other than ES256, a mangled signature).
    #[error("go-jose/go-jose: error in cryptographic primitive")]
    InvalidSignature,
    #[error(
        "token audiences {} is invalid for the target audiences {}",
        go_quote_list(token),
        go_quote_list(target)
    )]
    InvalidAudience {
        token: Vec<String>,
        target: Vec<String>,
    },
    #[error("service account token has expired")]
    Expired,
    #[error("service account token is not valid yet")]
    NotValidYet,
    #[error("service account token is issued in the future")]
    IssuedInFuture,
    /// The payload is missing a claim or has one of the wrong shape.
    #[error("{0}")]
    InvalidClaims(String),
    #[error("serviceaccounts {} not found", go_quote(name))]
    ServiceAccountNotFound { name: String },
    #[error("service account {namespace}/{name} has been deleted")]
    ServiceAccountDeleted { namespace: String, name: String },
    #[error("service account UID ({actual}) does not match claim ({claim})")]
    ServiceAccountUidMismatch { actual: String, claim: String },
    /// A bound pod/secret/node was recreated: `pod UID (x) does not match service account pod ref claim (y)`.
    #[error("{kind} UID ({actual}) does not match service account {kind} ref claim ({claim})")]
    BoundObjectUidMismatch {
        kind: &'static str,
        actual: String,
        claim: String,
    },
    /// The bound object is gone or being deleted.
    #[error("service account token has been invalidated")]
    Invalidated,
    /// A legacy (Secret-based) token failed a check; the message is upstream's.
    #[error("{0}")]
    Legacy(String),
    /// A bootstrap token failed a check. Upstream only logs these and answers "not
    /// authenticated" without an error.
    #[error("bootstrap token {0}")]
    Bootstrap(String),
    /// The issuer could not build or sign a token.
    #[error("{0}")]
    Issue(String),
}

impl TokenError {
    /// The answer of the authentication filter to any failed token: 401 `Unauthorized`.
    pub fn to_api_error(&self) -> ApiError {
        ApiError::unauthorized()
    }

    /// Whether upstream reports this failure as an authenticator error (e.g. in a TokenReview's
    /// `status.error`). Unrecognized tokens and bootstrap failures are silent there.
    pub fn is_reported(&self) -> bool {
        !matches!(self, TokenError::Unrecognized | TokenError::Bootstrap(_))
    }
}

/// The bearer token of a request, as upstream's bearer-token authenticator reads it: the first
/// `Authorization` header, trimmed, split on single spaces into at most three parts; the scheme
/// must be `bearer` in any case and the second part is the token. Empty (or a double space
/// before the token) gives `None`.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let auth = value.trim();
    if auth.is_empty() {
        return None;
    }
    let mut parts = auth.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(token)
}

/// Compares two byte strings in time that depends only on their lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

/// Go's `%q` of a string.
pub(crate) use k1s_apimachinery::gofmt::quote as go_quote;

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quote_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_str(value).expect("test header"),
        );
        h
    }

    #[test]
    fn bearer_token_parsing_follows_upstream() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("BEARER abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("  Bearer abc  ")), Some("abc"));
        // The third part is ignored, as upstream's SplitN(auth, " ", 3) does.
        assert_eq!(bearer_token(&headers("Bearer abc def")), Some("abc"));
        assert_eq!(bearer_token(&headers("Bearer  abc")), None);
        assert_eq!(bearer_token(&headers("Bearer")), None);
        assert_eq!(bearer_token(&headers("Bearer ")), None);
        assert_eq!(bearer_token(&headers("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer_token(&headers("")), None);
        assert_eq!(bearer_token(&http::HeaderMap::new()), None);
    }

    #[test]
    fn errors_never_carry_secrets_and_map_to_401() {
        let err = TokenError::InvalidAudience {
            token: vec!["a".into()],
            target: vec!["b".into(), "c".into()],
        };
        assert_eq!(
            err.to_string(),
            r#"token audiences ["a"] is invalid for the target audiences ["b" "c"]"#
        );
        let api = err.to_api_error();
        assert_eq!(api.code, 401);
        assert_eq!(api.message, "Unauthorized");
        assert!(!TokenError::Unrecognized.is_reported());
        assert!(TokenError::Expired.is_reported());
    }

    #[test]
    fn constant_time_eq_compares() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }
}
