//! Request info: the verb, group/version/resource, namespace, name and subresource of a request,
//! parsed once from the method, path and query (upstream's RequestInfoFactory).

use std::collections::HashMap;

use axum::extract::Request;
use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use k1s_apimachinery::ApiError;

use crate::encoding::MAX_BODY_BYTES;

/// A request's query parameters (the last value of a repeated key wins).
pub type Query = HashMap<String, String>;

/// The Kubernetes verb of a resource request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    pub fn is_mutating(self) -> bool {
        !matches!(self, Verb::Get | Verb::List | Verb::Watch)
    }
}

/// A request for an API resource (`/api/v1/...` or `/apis/<group>/<version>/...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    pub verb: Verb,
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Where a request goes: a resource, a discovery document of an API prefix, or another path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Resource(ResourceRequest),
    /// `/api/v1` or `/apis/<group>/<version>`: the resource list of a group version.
    GroupVersion {
        group: String,
        version: String,
    },
    /// `/apis/<group>`.
    Group(String),
    /// Anything else (`/api`, `/apis`, `/healthz`, `/openapi/...`).
    NonResource,
}

/// Namespace subresources that must not be read as a resource name inside the namespace.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

pub fn parse(method: &Method, path: &str, query_watch: bool) -> Route {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest): (&str, &str, &[&str]) = match parts.as_slice() {
        ["api", version, rest @ ..] => ("", version, rest),
        ["apis", group] => return Route::Group((*group).to_string()),
        ["apis", group, version, rest @ ..] => (group, version, rest),
        _ => return Route::NonResource,
    };
    if version.is_empty() {
        return Route::NonResource;
    }
    let mut rest = rest;
    let mut watch_prefix = false;
    if rest.first() == Some(&"watch") {
        watch_prefix = true;
        rest = &rest[1..];
    }
    if rest.is_empty() || rest == [""] {
        return Route::GroupVersion {
            group: group.to_string(),
            version: version.to_string(),
        };
    }
    let mut namespace = None;
    // Names are matched decoded, as upstream reads the URL's decoded path (`kubectl logs 'a-*'`
    // asks for `a-%2A`).
    let decoded = |seg: &str| percent_decode(seg, false);
    if rest[0] == "namespaces" && rest.len() > 1 {
        namespace = Some(decoded(rest[1]));
        if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
            rest = &rest[2..];
        }
    }
    let resource = rest[0].to_string();
    let name = rest.get(1).map(|s| decoded(s));
    let subresource = rest.get(2).map(|s| s.to_string());
    // Only a proxy subresource has a path after it (`nodes/<name>/proxy/logs/`).
    let proxy = subresource.as_deref() == Some("proxy");
    if (rest.len() > 3 && !proxy) || resource.is_empty() || name.as_deref() == Some("") {
        return Route::NonResource;
    }
    let verb = match *method {
        Method::GET | Method::HEAD if watch_prefix || (query_watch && subresource.is_none()) => {
            Verb::Watch
        }
        Method::GET | Method::HEAD if name.is_some() => Verb::Get,
        Method::GET | Method::HEAD => Verb::List,
        Method::POST => Verb::Create,
        Method::PUT => Verb::Update,
        Method::PATCH => Verb::Patch,
        Method::DELETE if name.is_some() => Verb::Delete,
        Method::DELETE => Verb::DeleteCollection,
        _ => return Route::NonResource,
    };
    // The namespace object itself: `/api/v1/namespaces/foo[/status]` names it, it is not inside it.
    if resource == "namespaces" && group.is_empty() {
        namespace = None;
    }
    Route::Resource(ResourceRequest {
        verb,
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource,
        name,
        subresource,
    })
}

/// Decodes `a=b&c=d` (percent-encoding and `+`), last value of a repeated key winning.
pub fn url_decode_pairs(q: &str) -> Query {
    let decode = |s: &str| percent_decode(s, true);
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// Every value of a repeated key (`command=sh&command=-c&command=...`), decoded, in order.
pub fn url_decode_values(q: &str, key: &str) -> Vec<String> {
    q.split('&')
        .filter_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k, true) == key).then(|| percent_decode(v, true))
        })
        .collect()
}

/// Bodies past the limit are still read (and dropped) up to this much, so the client finishes
/// sending and reads the 413 instead of a reset connection (Go's server drains similarly).
const DRAIN_LIMIT: usize = 16 * MAX_BODY_BYTES;

/// Reads a request body up to `MAX_BODY_BYTES` (413 past it, after draining).
pub async fn read_body(req: Request) -> Result<Bytes, ApiError> {
    let mut body = req.into_body();
    let mut buf = bytes::BytesMut::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen += data.len();
        if seen > MAX_BODY_BYTES {
            if seen > DRAIN_LIMIT {
                break;
            }
            continue;
        }
        buf.extend_from_slice(&data);
    }
    if seen > MAX_BODY_BYTES {
        return Err(ApiError::request_entity_too_large(format!(
            "limit is {MAX_BODY_BYTES}"
        )));
    }
    Ok(buf.freeze())
}

/// Reads and drops what is left of a refused request's body (bounded in size and time), so an
/// HTTP/2 client reads the refusal's `Status` instead of a reset stream: a server that answers
/// before the body arrives otherwise cancels the stream, and clients report a transport error.
pub async fn drain_body(req: Request) {
    let mut body = req.into_body();
    let drain = async {
        let mut seen = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                seen += data.len();
                if seen > DRAIN_LIMIT {
                    break;
                }
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drain).await;
}

/// How long a refused request's body is drained before the answer goes out regardless.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// `%XX` escapes decoded (and `+` as a space in a query); a malformed escape is kept as is.
fn percent_decode(s: &str, plus_is_space: bool) -> String {
    if !s.contains(['%', '+']) {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(method: Method, path: &str, watch: bool) -> ResourceRequest {
        match parse(&method, path, watch) {
            Route::Resource(r) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn parses_like_upstream() {
        let r = res(Method::GET, "/api/v1/namespaces/default/pods/web", false);
        assert_eq!(
            (
                r.verb,
                r.namespace.as_deref(),
                r.resource.as_str(),
                r.name.as_deref()
            ),
            (Verb::Get, Some("default"), "pods", Some("web"))
        );
        let r = res(Method::GET, "/apis/apps/v1/deployments", true);
        assert_eq!(
            (r.verb, r.group.as_str(), r.namespace),
            (Verb::Watch, "apps", None)
        );
        let r = res(Method::PUT, "/api/v1/namespaces/foo/status", false);
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref(),
                r.namespace
            ),
            ("namespaces", Some("foo"), Some("status"), None)
        );
        let r = res(Method::GET, "/api/v1/namespaces/foo", false);
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref(), r.verb),
            ("namespaces", Some("foo"), Verb::Get)
        );
        let r = res(Method::DELETE, "/api/v1/namespaces/ns/configmaps", false);
        assert_eq!(r.verb, Verb::DeleteCollection);
        let r = res(Method::GET, "/api/v1/watch/namespaces/ns/pods/p", false);
        assert_eq!((r.verb, r.name.as_deref()), (Verb::Watch, Some("p")));
        let r = res(
            Method::PATCH,
            "/apis/apps/v1/namespaces/d/deployments/x/scale",
            false,
        );
        assert_eq!(
            (r.verb, r.subresource.as_deref()),
            (Verb::Patch, Some("scale"))
        );
        assert_eq!(
            parse(&Method::GET, "/apis/apps", false),
            Route::Group("apps".into())
        );
        assert_eq!(
            parse(&Method::GET, "/api/v1", false),
            Route::GroupVersion {
                group: String::new(),
                version: "v1".into()
            }
        );
        assert_eq!(parse(&Method::GET, "/healthz", false), Route::NonResource);
        assert_eq!(
            parse(&Method::GET, "/api/v1/a/b/c/d", false),
            Route::NonResource
        );
    }
}
