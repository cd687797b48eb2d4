//! The filter chain of every request, outermost first, as DESIGN.md lists it:
//! panic recovery -> request info -> tracing span -> max-in-flight -> authentication -> audit ->
//! impersonation -> authorization -> timeout, then the routes (discovery, OpenAPI, health, the
//! REST handler). `handle` is the whole chain in order; each layer is a function below it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use futures::FutureExt;
use http::{HeaderMap, Method};
use k1s_apimachinery::status::AccessAttributes;
use k1s_apimachinery::{ApiError, catalog};
use tracing::Instrument;

use crate::auth::authn::{self, OidcDocuments, TokenFile, TokenIssuer};
use crate::auth::rbac::RbacAuthorizer;
use crate::auth::{Attributes, Decision, UserInfo};
use crate::handlers::{self, ApiContext, error_response};
use crate::registry::Target;
use crate::request::{self, Route};
use crate::tls::CertIdentity;

/// Upstream's default request timeout for everything but long-running requests.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What authentication and authorization need.
pub struct Security {
    pub authorizer: Arc<RbacAuthorizer>,
    pub tokens: TokenIssuer,
    pub token_file: Option<TokenFile>,
    pub oidc: Option<OidcDocuments>,
    pub inflight: crate::overload::InFlightLimiter,
    pub audit: Option<Audit>,
    pub token_cache: TokenCache,
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

/// The audit policy and where its events go.
pub struct Audit {
    pub policy: crate::audit::Policy,
    pub logger: crate::audit::AuditLogger,
}

/// A request's identity and target, parsed once.
pub struct RequestInfo {
    pub method: Method,
    pub path: String,
    pub query: handlers::Query,
    pub route: Route,
    /// Watches stream for minutes: no timeout, not counted as in flight.
    pub long_running: bool,
}

impl RequestInfo {
    fn parse(req: &Request) -> RequestInfo {
        let path = req.uri().path().to_string();
        let query: handlers::Query = req
            .uri()
            .query()
            .map(crate::server::url_decode_pairs)
            .unwrap_or_default();
        let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
        let route = request::parse(req.method(), &path, watch);
        let long_running = matches!(&route, Route::Resource(r) if r.verb == request::Verb::Watch);
        RequestInfo {
            method: req.method().clone(),
            path,
            query,
            route,
            long_running,
        }
    }
}

/// The chain, in order.
pub(crate) async fn handle(
    state: &crate::server::AppState,
    cert: &CertIdentity,
    peer: std::net::SocketAddr,
    req: Request,
) -> Response {
    // Panic recovery: a bug answers 500 instead of dropping the connection.
    let inner = async {
        let info = RequestInfo::parse(&req);
        let span = tracing::info_span!("request", method = %info.method, path = %info.path);
        async {
            let sec = &state.api.security;
            let user = match authenticate(&state.api, cert, req.headers()).await {
                Ok(u) => u,
                Err(e) => return error_response(&e),
            };
            // Max-in-flight: after authentication, as `system:masters` is exempt upstream.
            let attrs = attributes(&user, &info);
            let mutating = if attrs.is_resource_request {
                crate::overload::is_mutating_verb(&attrs.verb)
            } else {
                !matches!(info.method, Method::GET | Method::HEAD)
            };
            let _permit =
                match sec
                    .inflight
                    .try_acquire_for(mutating, info.long_running, &user.groups)
                {
                    Ok(p) => p,
                    Err(e) => return error_response(&e),
                };
            let mut audit = AuditTrail::start(sec, &attrs, &info, peer, req.headers());
            let user = match impersonate(&state.api, user, req.headers()) {
                Ok(u) => u,
                Err(e) => return audit.finish(error_response(&e), false).await,
            };
            if req.headers().contains_key("impersonate-user") {
                audit.impersonated(&user);
            }
            if let Err(e) = authorize(&state.api, &user, &info) {
                audit.authorized(false, &e.message);
                return audit.finish(error_response(&e), false).await;
            }
            audit.authorized(true, "");
            let req = audit.record_request(req).await;
            let long_running = info.long_running;
            let resp = if long_running {
                crate::server::route(state, &user, info, req).await
            } else {
                match tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    crate::server::route(state, &user, info, req),
                )
                .await
                {
                    Ok(resp) => resp,
                    Err(_) => error_response(&ApiError::timeout(
                        "request did not complete within the allotted timeout",
                        0,
                    )),
                }
            };
            audit.finish(resp, long_running).await
        }
        .instrument(span)
        .await
    };
    match AssertUnwindSafe(inner).catch_unwind().await {
        Ok(resp) => resp,
        Err(_) => {
            tracing::error!("request handler panicked");
            error_response(&ApiError::internal(
                "an error on the server (\"unknown\") has prevented the request from succeeding",
            ))
        }
    }
}

/// One request's audit record (when an audit policy is configured and selects it).
struct AuditTrail<'a> {
    record: Option<crate::audit::RequestAudit>,
    logger: Option<&'a crate::audit::AuditLogger>,
}

impl<'a> AuditTrail<'a> {
    fn start(
        sec: &'a Security,
        attrs: &Attributes,
        info: &RequestInfo,
        peer: std::net::SocketAddr,
        headers: &HeaderMap,
    ) -> Self {
        let Some(audit) = &sec.audit else {
            return AuditTrail {
                record: None,
                logger: None,
            };
        };
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let object_ref = attrs
            .is_resource_request
            .then(|| crate::audit::ObjectReference {
                resource: attrs.resource.clone(),
                namespace: attrs.namespace.clone(),
                name: attrs.name.clone(),
                api_group: attrs.api_group.clone(),
                api_version: attrs.api_version.clone(),
                subresource: attrs.subresource.clone(),
                ..Default::default()
            });
        let query = info
            .query
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        let meta = crate::audit::RequestMeta {
            audit_id: uuid::Uuid::new_v4().to_string(),
            request_uri: if query.is_empty() {
                info.path.clone()
            } else {
                format!("{}?{query}", info.path)
            },
            verb: attrs.verb.clone(),
            user: attrs.user.clone(),
            source_ips: vec![peer.ip().to_string()],
            user_agent: header("user-agent"),
            object_ref,
        };
        let record = crate::audit::RequestAudit::new(audit.policy.evaluate(attrs), meta);
        if let Some(r) = &record {
            r.emit(&audit.logger, crate::audit::Stage::RequestReceived);
        }
        AuditTrail {
            record,
            logger: Some(&audit.logger),
        }
    }

    fn impersonated(&mut self, user: &UserInfo) {
        if let Some(r) = &mut self.record {
            r.set_impersonated_user(user);
        }
    }

    fn authorized(&mut self, allowed: bool, reason: &str) {
        if let Some(r) = &mut self.record {
            r.set_authorization(allowed, reason);
        }
    }

    fn level(&self) -> crate::audit::Level {
        self.record
            .as_ref()
            .map_or(crate::audit::Level::None, |r| r.level())
    }

    /// At level Request and above, the request body goes into the event (the body is buffered
    /// and handed on unchanged).
    async fn record_request(&mut self, req: Request) -> Request {
        if self.level() < crate::audit::Level::Request
            || matches!(*req.method(), Method::GET | Method::HEAD)
        {
            return req;
        }
        let (parts, body) = req.into_parts();
        let limited = http_body_util::Limited::new(body, crate::encoding::MAX_BODY_BYTES + 1);
        let bytes = http_body_util::BodyExt::collect(limited)
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        // JSON, YAML or protobuf, by its Content-Type, as the handler will decode it.
        let decoded = crate::encoding::decode_object(&parts.headers, &bytes);
        if let (Some(r), Ok(obj)) = (&mut self.record, decoded) {
            r.set_request_object(&obj);
        }
        Request::from_parts(parts, axum::body::Body::from(bytes))
    }

    /// Records the response (ResponseStarted for watches, ResponseComplete otherwise); at level
    /// RequestResponse the response object too (watch streams are never buffered).
    async fn finish(mut self, resp: Response, long_running: bool) -> Response {
        let Some(logger) = self.logger.filter(|_| self.record.is_some()) else {
            return resp;
        };
        let code = resp.status().as_u16();
        let mut resp = resp;
        let mut object = None;
        if self.level() == crate::audit::Level::RequestResponse && !long_running {
            let (parts, body) = resp.into_parts();
            let bytes = http_body_util::BodyExt::collect(body)
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            object = if bytes.starts_with(crate::protobuf::MAGIC) {
                crate::protobuf::decode_object(&bytes).ok()
            } else {
                serde_json::from_slice::<serde_json::Value>(&bytes).ok()
            };
            resp = Response::from_parts(parts, axum::body::Body::from(bytes));
        }
        if let Some(r) = &mut self.record {
            r.set_response(code, object.as_ref());
            let stage = if long_running {
                crate::audit::Stage::ResponseStarted
            } else {
                crate::audit::Stage::ResponseComplete
            };
            r.emit(logger, stage);
        }
        resp
    }
}

/// Authentication: a verified client certificate, else a bearer token (token file, then
/// service-account JWT, then bootstrap token), else anonymous. A presented but bad credential
/// is 401, as upstream.
pub async fn authenticate(
    ctx: &ApiContext,
    cert: &CertIdentity,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
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

/// Impersonation headers: each requested identity is checked with the `impersonate` verb.
pub fn impersonate(
    ctx: &ApiContext,
    user: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    let target_user = values("impersonate-user").into_iter().next();
    let groups = values("impersonate-group");
    let uid = values("impersonate-uid").into_iter().next();
    let extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(k, v)| {
            let key = k.as_str().strip_prefix("impersonate-extra-")?;
            Some((key.to_string(), v.to_str().ok()?.to_string()))
        })
        .collect();
    let Some(name) = target_user else {
        if !groups.is_empty() || uid.is_some() || !extras.is_empty() {
            return Err(ApiError::bad_request(
                "requested impersonation of groups, uid or extra without impersonating a user",
            ));
        }
        return Ok(user);
    };
    let check = |resource: &str, group: &str, namespace: &str, name: &str, subresource: &str| {
        let attrs = Attributes {
            user: user.clone(),
            verb: "impersonate".into(),
            is_resource_request: true,
            namespace: namespace.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            name: name.into(),
            ..Default::default()
        };
        match ctx.security.authorizer.authorize(&attrs) {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) | Decision::NoOpinion(reason) => Err(forbidden(&attrs, &reason)),
        }
    };
    let mut impersonated = UserInfo::new(name.clone(), Vec::new());
    match name
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, sa)) => {
            check("serviceaccounts", "", ns, sa, "")?;
            impersonated.groups.push("system:serviceaccounts".into());
            impersonated
                .groups
                .push(format!("system:serviceaccounts:{ns}"));
        }
        None => check("users", "", "", &name, "")?,
    }
    for g in groups {
        check("groups", "", "", &g, "")?;
        impersonated.groups.push(g);
    }
    if let Some(uid) = uid {
        check("uids", "authentication.k8s.io", "", &uid, "")?;
        impersonated.uid = uid;
    }
    for (key, value) in extras {
        check("userextras", "authentication.k8s.io", "", &value, &key)?;
        impersonated.extra.entry(key).or_default().push(value);
    }
    if !impersonated.is_anonymous()
        && !impersonated
            .groups
            .iter()
            .any(|g| g == "system:authenticated")
    {
        impersonated.groups.push("system:authenticated".into());
    }
    Ok(impersonated)
}

/// The authorization attributes of a request (upstream's RequestInfo -> Attributes).
pub fn attributes(user: &UserInfo, info: &RequestInfo) -> Attributes {
    match &info.route {
        Route::Resource(r) => Attributes {
            user: user.clone(),
            verb: r.verb.as_str().into(),
            is_resource_request: true,
            // A namespace is authorized as living in itself.
            namespace: match (&r.namespace, r.resource.as_str(), r.group.as_str()) {
                (None, "namespaces", "") => r.name.clone().unwrap_or_default(),
                (ns, _, _) => ns.clone().unwrap_or_default(),
            },
            api_group: r.group.clone(),
            api_version: r.version.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone().unwrap_or_default(),
            name: r.name.clone().unwrap_or_default(),
            path: info.path.clone(),
        },
        _ => Attributes {
            user: user.clone(),
            verb: info.method.as_str().to_ascii_lowercase(),
            is_resource_request: false,
            path: info.path.clone(),
            ..Default::default()
        },
    }
}

/// Authorization: RBAC (with `system:masters` always allowed); a denial is upstream's 403.
pub fn authorize(ctx: &ApiContext, user: &UserInfo, info: &RequestInfo) -> Result<(), ApiError> {
    let attrs = attributes(user, info);
    match ctx.security.authorizer.authorize(&attrs) {
        Decision::Allow(_) => Ok(()),
        Decision::Deny(reason) | Decision::NoOpinion(reason) => Err(forbidden(&attrs, &reason)),
    }
}

pub fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    ApiError::forbidden_access(
        &AccessAttributes {
            user: &attrs.user.name,
            verb: &attrs.verb,
            resource_request: attrs.is_resource_request,
            group: &attrs.api_group,
            resource: &attrs.resource,
            subresource: &attrs.subresource,
            namespace: &attrs.namespace,
            name: &attrs.name,
            path: &attrs.path,
        },
        reason,
    )
}
