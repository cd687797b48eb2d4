//! Webhook configurations parsed from their JSON (admissionregistration.k8s.io/v1), with the v1
//! defaults applied: failurePolicy Fail, namespaceSelector/objectSelector `{}` (everything),
//! timeoutSeconds 10, reinvocationPolicy Never, rule scope `*`, service port 443.
//!
//! Parsing never fails a whole configuration: a malformed part of one webhook is kept as an
//! error and reported when that webhook would be called, as upstream reports client and
//! selector errors at dispatch time.

use std::sync::Arc;

use base64::Engine;
use k1s_apimachinery::selector::LabelSelector;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;

/// Default and maximum `timeoutSeconds` (upstream validation allows 1..=30).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
pub const MAX_TIMEOUT_SECONDS: u64 = 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideEffects {
    None,
    NoneOnDryRun,
    Some,
    Unknown,
}

/// A rule's `scope`. An unknown value never matches (as upstream's matcher).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    Cluster,
    Namespaced,
    Invalid,
}

/// One `RuleWithOperations`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    /// `pods`, `pods/status`, `*`, `*/*`, `pods/*`, `*/scale`.
    pub resources: Vec<String>,
    pub scope: Scope,
}

/// Where a webhook is served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientTarget {
    /// `clientConfig.url`: `https://<authority><path>`.
    Url {
        /// `host` or `host:port` (`[v6]:port`) as written.
        authority: String,
        /// The host without brackets, for DNS and the TLS server name.
        host: String,
        port: u16,
        path: String,
    },
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

impl ClientTarget {
    /// The URL as upstream prints it (`https://svc.ns.svc:443/path`), without the query.
    pub fn display_url(&self) -> String {
        match self {
            ClientTarget::Url {
                authority, path, ..
            } => format!("https://{authority}{path}"),
            ClientTarget::Service {
                namespace,
                name,
                path,
                port,
            } => format!("https://{name}.{namespace}.svc:{port}{path}"),
        }
    }

    /// The TLS server name: the URL host, or `<name>.<namespace>.svc`.
    pub fn server_name(&self) -> String {
        match self {
            ClientTarget::Url { host, .. } => host.clone(),
            ClientTarget::Service {
                namespace, name, ..
            } => format!("{name}.{namespace}.svc"),
        }
    }

    /// The request path (`/` when none is configured).
    pub fn request_path(&self) -> &str {
        let path = match self {
            ClientTarget::Url { path, .. } | ClientTarget::Service { path, .. } => path,
        };
        if path.is_empty() { "/" } else { path }
    }

    /// The `Host` header value.
    pub fn host_header(&self) -> String {
        match self {
            ClientTarget::Url { authority, .. } => authority.clone(),
            ClientTarget::Service {
                namespace,
                name,
                port,
                ..
            } => format!("{name}.{namespace}.svc:{port}"),
        }
    }
}

/// One webhook of a configuration, ready to match and call.
#[derive(Debug)]
pub struct Webhook {
    /// `<configuration>/<webhook>/<index>`, as upstream's accessor UID.
    pub uid: String,
    pub configuration: String,
    pub name: String,
    pub mutating: bool,
    pub rules: Vec<Rule>,
    pub failure_policy: FailurePolicy,
    pub namespace_selector: Result<LabelSelector, String>,
    pub object_selector: Result<LabelSelector, String>,
    /// `None` when `sideEffects` is absent (upstream's nil).
    pub side_effects: Option<SideEffects>,
    pub timeout_seconds: u64,
    /// The AdmissionReview version to send (`v1` or `v1beta1`).
    pub review_version: Result<&'static str, String>,
    pub reinvoke_if_needed: bool,
    pub target: Result<ClientTarget, String>,
    pub tls: Result<Arc<rustls::ClientConfig>, String>,
    /// The compiled `matchConditions` (all must hold for the webhook to be called), or why
    /// they do not compile.
    pub match_conditions: Result<Vec<crate::admission::conditions::MatchCondition>, String>,
    /// `matchPolicy` other than `Exact` (the default is `Equivalent`).
    pub equivalent_match: bool,
    /// What `authorizer` in the match conditions asks (set by the dispatcher).
    pub authorizer: Option<Arc<dyn crate::admission::policy::authz::Authorize>>,
}

/// Parses the webhooks of one configuration object. `default_roots` are trusted for webhooks
/// without a `caBundle`.
pub fn parse_configuration(
    config: &Value,
    mutating: bool,
    default_roots: &[CertificateDer<'static>],
) -> Vec<Webhook> {
    let configuration = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(hooks) = config.get("webhooks").and_then(Value::as_array) else {
        return Vec::new();
    };
    hooks
        .iter()
        .enumerate()
        .map(|(i, h)| parse_webhook(h, &configuration, i, mutating, default_roots))
        .collect()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn parse_webhook(
    h: &Value,
    configuration: &str,
    index: usize,
    mutating: bool,
    default_roots: &[CertificateDer<'static>],
) -> Webhook {
    let name = str_field(h, "name").unwrap_or("").to_string();
    let rules = h
        .get("rules")
        .and_then(Value::as_array)
        .map(|rs| rs.iter().map(parse_rule).collect())
        .unwrap_or_default();
    let failure_policy = match str_field(h, "failurePolicy") {
        Some("Ignore") => FailurePolicy::Ignore,
        _ => FailurePolicy::Fail,
    };
    let side_effects = str_field(h, "sideEffects").map(|s| match s {
        "None" => SideEffects::None,
        "NoneOnDryRun" => SideEffects::NoneOnDryRun,
        "Some" => SideEffects::Some,
        _ => SideEffects::Unknown,
    });
    let timeout_seconds = h
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .clamp(1, MAX_TIMEOUT_SECONDS);
    let versions = strings(h.get("admissionReviewVersions"));
    let review_version = if versions.is_empty() {
        Ok("v1")
    } else {
        versions
            .iter()
            .find_map(|v| match v.as_str() {
                "v1" => Some("v1"),
                "v1beta1" => Some("v1beta1"),
                _ => None,
            })
            .ok_or_else(|| "webhook does not accept known AdmissionReview versions".to_string())
    };
    let reinvoke_if_needed = mutating && str_field(h, "reinvocationPolicy") == Some("IfNeeded");
    let client = h.get("clientConfig").unwrap_or(&Value::Null);
    let target = parse_target(client);
    let tls = target
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|_| tls_config(client, default_roots));
    Webhook {
        uid: format!("{configuration}/{name}/{index}"),
        configuration: configuration.to_string(),
        name,
        mutating,
        rules,
        failure_policy,
        namespace_selector: selector(h.get("namespaceSelector")),
        object_selector: selector(h.get("objectSelector")),
        side_effects,
        timeout_seconds,
        review_version,
        reinvoke_if_needed,
        equivalent_match: str_field(h, "matchPolicy") != Some("Exact"),
        target,
        tls,
        match_conditions: crate::admission::conditions::compile(
            h.get("matchConditions"),
            crate::admission::conditions::WEBHOOK_VARIABLES,
        ),
        authorizer: None,
    }
}

/// Parses a `RuleWithOperations` (scope defaults to `*`).
pub fn parse_rule(r: &Value) -> Rule {
    let scope = match str_field(r, "scope") {
        None | Some("*") => Scope::All,
        Some("Cluster") => Scope::Cluster,
        Some("Namespaced") => Scope::Namespaced,
        Some(_) => Scope::Invalid,
    };
    Rule {
        operations: strings(r.get("operations")),
        api_groups: strings(r.get("apiGroups")),
        api_versions: strings(r.get("apiVersions")),
        resources: strings(r.get("resources")),
        scope,
    }
}

/// A missing or null selector is defaulted to `{}` (matches everything), as v1 defaulting does.
fn selector(v: Option<&Value>) -> Result<LabelSelector, String> {
    match v {
        None | Some(Value::Null) => Ok(LabelSelector::everything()),
        Some(v) => LabelSelector::from_json(v).map_err(|e| e.to_string()),
    }
}

pub(crate) fn parse_target(client: &Value) -> Result<ClientTarget, String> {
    if let Some(url) = str_field(client, "url") {
        return parse_url(url);
    }
    if let Some(svc) = client.get("service").filter(|s| s.is_object()) {
        let port = match svc.get("port").and_then(Value::as_u64) {
            None => 443,
            Some(p) => u16::try_from(p)
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("invalid service port {p}"))?,
        };
        return Ok(ClientTarget::Service {
            namespace: str_field(svc, "namespace").unwrap_or("").to_string(),
            name: str_field(svc, "name").unwrap_or("").to_string(),
            path: str_field(svc, "path").unwrap_or("").to_string(),
            port,
        });
    }
    Err("webhook configuration must have either service or URL".to_string())
}

/// Parses `https://host[:port][/path]` (no user info, query or fragment, as upstream's
/// validation requires).
fn parse_url(url: &str) -> Result<ClientTarget, String> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Err(format!(
            "invalid webhook URL {url:?}: 'https' is the only allowed URL scheme"
        ));
    };
    if rest.contains('?') || rest.contains('#') {
        return Err(format!(
            "invalid webhook URL {url:?}: query parameters and fragments are not allowed"
        ));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(format!("invalid webhook URL {url:?}: invalid host"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some(end) = v6.find(']') else {
            return Err(format!("invalid webhook URL {url:?}: invalid host"));
        };
        let port = v6[end + 1..].strip_prefix(':');
        (&v6[..end], port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => 443,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("invalid webhook URL {url:?}: invalid port {p:?}"))?,
    };
    if host.is_empty() {
        return Err(format!("invalid webhook URL {url:?}: invalid host"));
    }
    Ok(ClientTarget::Url {
        authority: authority.to_string(),
        host: host.to_string(),
        port,
        path: path.to_string(),
    })
}

/// The rustls client configuration: the `caBundle` certificates (PEM, base64 in JSON), or the
/// default roots when there is no bundle.
pub(crate) fn tls_config(
    client: &Value,
    default_roots: &[CertificateDer<'static>],
) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    match str_field(client, "caBundle").filter(|s| !s.is_empty()) {
        Some(b64) => {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| format!("unable to decode caBundle: {e}"))?;
            let mut found = false;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("unable to load root certificates: {e}"))?;
                found = true;
            }
            if !found {
                return Err(
                    "unable to load root certificates: unable to parse bytes as PEM block"
                        .to_string(),
                );
            }
        }
        None => {
            for cert in default_roots {
                // A bad default root is skipped, not fatal for every webhook.
                let _ = roots.add(cert.clone());
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls() {
        let t = parse_url("https://example.com/hook").unwrap();
        assert_eq!(t.display_url(), "https://example.com/hook");
        assert_eq!(t.server_name(), "example.com");
        assert_eq!(t.host_header(), "example.com");
        let ClientTarget::Url { port, .. } = &t else {
            panic!("url")
        };
        assert_eq!(*port, 443);
        let t = parse_url("https://127.0.0.1:8443").unwrap();
        assert_eq!(t.request_path(), "/");
        assert_eq!(t.server_name(), "127.0.0.1");
        let t = parse_url("https://[::1]:9443/x").unwrap();
        assert_eq!(t.server_name(), "::1");
        assert_eq!(t.display_url(), "https://[::1]:9443/x");
        assert!(parse_url("http://x/").is_err());
        assert!(parse_url("https://x/?a=b").is_err());
        assert!(parse_url("https://u@x/").is_err());
        assert!(parse_url("https://x:0/").is_err());
        assert!(parse_url("https://x:99999/").is_err());
    }

    #[test]
    fn defaults_and_ordering_fields() {
        let cfg = json!({"metadata":{"name":"c"},"webhooks":[
            {"name":"a.example.com","clientConfig":{"service":{"namespace":"ns","name":"svc"}},
             "rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],
             "admissionReviewVersions":["v1beta1","v1"]},
            {"name":"b.example.com","clientConfig":{"url":"ftp://x"},"failurePolicy":"Ignore",
             "sideEffects":"NoneOnDryRun","timeoutSeconds":99,"reinvocationPolicy":"IfNeeded",
             "namespaceSelector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]},
             "admissionReviewVersions":["v2"], "matchConditions":[{"name":"x","expression":"true"}]}
        ]});
        let hooks = parse_configuration(&cfg, true, &[]);
        assert_eq!(hooks.len(), 2);
        let a = &hooks[0];
        assert_eq!(a.uid, "c/a.example.com/0");
        assert_eq!(a.failure_policy, FailurePolicy::Fail);
        assert_eq!(a.side_effects, None);
        assert_eq!(a.timeout_seconds, 10);
        assert_eq!(a.review_version, Ok("v1beta1"));
        assert!(!a.reinvoke_if_needed);
        assert!(a.namespace_selector.as_ref().unwrap().is_empty());
        assert_eq!(a.rules[0].scope, Scope::All);
        assert_eq!(
            a.target.as_ref().unwrap().display_url(),
            "https://svc.ns.svc:443"
        );
        assert!(a.tls.is_ok());
        let b = &hooks[1];
        assert_eq!(b.failure_policy, FailurePolicy::Ignore);
        assert_eq!(b.side_effects, Some(SideEffects::NoneOnDryRun));
        assert_eq!(b.timeout_seconds, 30);
        assert!(b.reinvoke_if_needed);
        assert!(b.namespace_selector.is_err());
        assert!(b.review_version.is_err());
        assert!(b.target.is_err());
        assert_eq!(b.match_conditions.as_ref().map(Vec::len), Ok(1));
    }

    #[test]
    fn bad_ca_bundles() {
        let bad_b64 = json!({"url":"https://x","caBundle":"!!!"});
        assert!(tls_config(&bad_b64, &[]).unwrap_err().contains("caBundle"));
        let not_pem = json!({"url":"https://x","caBundle":"aGVsbG8="});
        assert!(
            tls_config(&not_pem, &[])
                .unwrap_err()
                .contains("unable to load root certificates")
        );
    }
}
