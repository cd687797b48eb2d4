//! Content negotiation for `/api` and `/apis` (aggregated v2 / v2beta1 or the legacy
//! document), discovery ETags, and the complete root response (status, headers, body).

use serde_json::Value;

use super::{AggregatedVersion, Scope, ServedApis, legacy, sha256};

/// `Vary` header value of aggregated responses: the body depends on `Accept`.
pub const VARY: &str = "Accept";
/// `Cache-Control` header value of aggregated responses.
pub const CACHE_CONTROL: &str = "public";

const LEGACY_CONTENT_TYPE: &str = "application/json";

/// What a client asked `/api` or `/apis` for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Negotiated {
    /// An `APIGroupDiscoveryList` of this version.
    Aggregated(AggregatedVersion),
    /// The unaggregated `APIVersions` / `APIGroupList`.
    Legacy,
}

impl Negotiated {
    /// The response `Content-Type` for this choice (JSON encoding).
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Aggregated(v) => v.content_type(),
            Self::Legacy => LEGACY_CONTENT_TYPE,
        }
    }
}

/// One clause of an `Accept` header.
struct Clause<'a> {
    kind: &'a str,
    sub: &'a str,
    q: f32,
    params: Vec<(&'a str, &'a str)>,
}

impl Clause<'_> {
    fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// Parses an `Accept` header as upstream's goautoneg does: comma-separated media ranges with
/// `;`-separated parameters, `q` defaulting to 1 (0 when unparsable), sorted by descending `q`
/// and then specific types before wildcards, keeping header order among equals.
fn parse_accept(header: &str) -> Vec<Clause<'_>> {
    let mut clauses: Vec<Clause<'_>> = header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let range = pieces.next()?.trim();
            let (kind, sub) = match range.split_once('/') {
                Some((k, s)) if !s.contains('/') => (k.trim(), s.trim()),
                Some(_) => return None,
                None if range == "*" => ("*", "*"),
                None => return None,
            };
            let mut q = 1.0f32;
            let mut params = Vec::new();
            for p in pieces {
                let Some((k, v)) = p.split_once('=') else {
                    continue;
                };
                let (k, v) = (k.trim(), v.trim());
                if k == "q" {
                    q = v
                        .parse::<f32>()
                        .ok()
                        .filter(|q| q.is_finite())
                        .unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(Clause {
                kind,
                sub,
                q,
                params,
            })
        })
        .collect();
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then((a.kind == "*").cmp(&(b.kind == "*")))
            .then((a.sub == "*").cmp(&(b.sub == "*")))
    });
    clauses
}

/// Decides from an `Accept` header whether the client wants aggregated discovery, as upstream's
/// discovery wrapper does: the first clause (by preference) that accepts JSON and asks for
/// `g=apidiscovery.k8s.io;v=v2|v2beta1;as=APIGroupDiscoveryList` wins; clauses with `q=0` are
/// refused; anything else (plain `application/json`, no header) gets the legacy document.
/// Protobuf and YAML aggregated requests are not served and fall through to later clauses.
pub fn negotiate(accept: &str) -> Negotiated {
    for clause in parse_accept(accept) {
        if clause.q <= 0.0 {
            continue;
        }
        let json = (clause.kind.eq_ignore_ascii_case("application")
            && (clause.sub.eq_ignore_ascii_case("json") || clause.sub == "*"))
            || (clause.kind == "*" && clause.sub == "*");
        if !json
            || clause.param("g") != Some("apidiscovery.k8s.io")
            || clause.param("as") != Some("APIGroupDiscoveryList")
        {
            continue;
        }
        match clause.param("v") {
            Some("v2") => return Negotiated::Aggregated(AggregatedVersion::V2),
            Some("v2beta1") => return Negotiated::Aggregated(AggregatedVersion::V2Beta1),
            _ => {}
        }
    }
    Negotiated::Legacy
}

/// The quoted `ETag` of a serialized document (SHA-256, uppercase hex, as upstream's
/// SHA-512 one is formatted).
fn etag_of_bytes(body: &[u8]) -> String {
    format!("\"{}\"", sha256::upper_hex(&sha256::digest(body)))
}

/// The quoted `ETag` header value for a discovery document.
pub fn etag(doc: &Value) -> String {
    // Serializing a Value cannot fail (its keys are strings).
    etag_of_bytes(&serde_json::to_vec(doc).unwrap_or_default())
}

/// True when an `If-None-Match` header matches `etag` (quoted): the exact value, one entry of a
/// comma-separated list (weak `W/` prefixes ignored), or `*`.
pub fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|candidate| {
        candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == etag
    })
}

/// A complete answer for `GET /api` or `GET /apis`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryResponse {
    /// 200, or 304 when `If-None-Match` matched the aggregated document's ETag.
    pub status: u16,
    pub content_type: &'static str,
    /// `ETag` header (quoted); set for aggregated responses.
    pub etag: Option<String>,
    /// True when `Vary: Accept` and `Cache-Control: public` must be sent ([`VARY`],
    /// [`CACHE_CONTROL`]); aggregated responses only.
    pub cacheable: bool,
    /// The JSON body; empty for 304.
    pub body: Vec<u8>,
}

impl ServedApis {
    /// Answers `GET /api` (`Scope::Legacy`) or `GET /apis` (`Scope::Apis`) from the request's
    /// `Accept` and `If-None-Match` headers: aggregated discovery with ETag, `Vary` and
    /// `Cache-Control` (304 on a matching ETag), or the legacy document. `server_address` is
    /// the `host:port` advertised by `/api`.
    pub fn root_response(
        &self,
        scope: Scope,
        accept: &str,
        if_none_match: Option<&str>,
        server_address: &str,
    ) -> DiscoveryResponse {
        let negotiated = negotiate(accept);
        let doc = match (negotiated, scope) {
            (Negotiated::Aggregated(v), _) => self.aggregated(scope, v),
            (Negotiated::Legacy, Scope::Legacy) => legacy::api_versions(server_address),
            (Negotiated::Legacy, Scope::Apis) => self.api_group_list(),
        };
        let body = serde_json::to_vec(&doc).unwrap_or_default();
        let Negotiated::Aggregated(_) = negotiated else {
            return DiscoveryResponse {
                status: 200,
                content_type: negotiated.content_type(),
                etag: None,
                cacheable: false,
                body,
            };
        };
        let tag = etag_of_bytes(&body);
        let not_modified = if_none_match.is_some_and(|h| etag_matches(h, &tag));
        DiscoveryResponse {
            status: if not_modified { 304 } else { 200 },
            content_type: negotiated.content_type(),
            etag: Some(tag),
            cacheable: true,
            body: if not_modified { Vec::new() } else { body },
        }
    }
}
