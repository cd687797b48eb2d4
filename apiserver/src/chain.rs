//! The filter chain of every request, outermost first, as DESIGN.md lists it:
//! panic recovery -> request info -> tracing span -> authentication -> max-in-flight -> audit ->
//! impersonation -> authorization -> timeout, then the handler the chain was given (the router).
//! The chain wraps whatever `Handler` it is built with and never imports the router; the same
//! chain serves TLS connections and in-process callers (`Identity`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use futures::FutureExt;
use futures::future::BoxFuture;
use http::{HeaderMap, Method};
use k1s_apimachinery::ApiError;
use k1s_apimachinery::selector::FieldSelector;
use k1s_apimachinery::status::AccessAttributes;
use tracing::Instrument;

use crate::auth::{Attributes, Decision, UserInfo};
use crate::authentication::{Identity, authenticate};
use crate::context::{ApiContext, Security};
use crate::request::{self, Query, Route};
use crate::response::error_response;

/// Upstream's default request timeout for everything but long-running requests.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What the chain hands an authenticated, authorized request to.
pub trait Handler: Send + Sync {
    fn call<'a>(
        &'a self,
        user: &'a UserInfo,
        info: RequestInfo,
        req: Request,
    ) -> BoxFuture<'a, Response>;
}

/// The filter chain around a handler.
pub struct Chain {
    ctx: ApiContext,
    inner: Arc<dyn Handler>,
}

/// A request's identity and target, parsed once.
pub struct RequestInfo {
    pub method: Method,
    pub path: String,
    pub query: Query,
    pub route: Route,
    /// Watches stream for minutes: no timeout, not counted as in flight.
    pub long_running: bool,
}

impl RequestInfo {
    fn parse(req: &Request) -> RequestInfo {
        let path = req.uri().path().to_string();
        let query: Query = req
            .uri()
            .query()
            .map(request::url_decode_pairs)
            .unwrap_or_default();
        let watch = query.get("watch").is_some_and(|w| w == "true" || w == "1");
        let route = request::parse(req.method(), &path, watch);
        // Upstream's long-running requests: watches and the streaming pod subresources.
        let long_running = matches!(&route, Route::Resource(r) if r.verb == request::Verb::Watch
            || matches!(r.subresource.as_deref(), Some("log" | "exec" | "attach" | "portforward" | "proxy")));
        RequestInfo {
            method: req.method().clone(),
            path,
            query,
            route,
            long_running,
        }
    }
}

impl Chain {
    pub fn new(ctx: ApiContext, inner: Arc<dyn Handler>) -> Chain {
        Chain { ctx, inner }
    }

    /// The shared state every layer reads.
    pub fn context(&self) -> &ApiContext {
        &self.ctx
    }

    /// The chain, in order.
    pub async fn handle(
        &self,
        identity: &Identity,
        peer: std::net::SocketAddr,
        req: Request,
    ) -> Response {
        // Panic recovery: a bug answers 500 instead of dropping the connection.
        match AssertUnwindSafe(self.layers(identity, peer, req))
            .catch_unwind()
            .await
        {
            Ok(resp) => resp,
            Err(_) => {
                tracing::error!("request handler panicked");
                error_response(&ApiError::internal(
                    "an error on the server (\"unknown\") has prevented the request from succeeding",
                ))
            }
        }
    }

    async fn layers(
        &self,
        identity: &Identity,
        peer: std::net::SocketAddr,
        req: Request,
    ) -> Response {
        // The dashboard's static files (`/ui/`) hold no cluster data: served before
        // authentication, so a browser can load the page that then calls the API with the
        // user's own bearer token (and RBAC decides what it sees).
        if matches!(*req.method(), Method::GET | Method::HEAD)
            && k1s_web::assets::is_ui_path(req.uri().path())
        {
            return k1s_web::assets::response(req.uri().path());
        }
        let info = RequestInfo::parse(&req);
        let span = tracing::info_span!("request", method = %info.method, path = %info.path);
        async {
            let ctx = &self.ctx;
            let sec = &ctx.security;
            // Upstream's WithRequestDeadline, before authentication: a `timeout` query
            // parameter shortens a non-long-running request's deadline; a bad one is a 400.
            let deadline = if info.long_running {
                REQUEST_TIMEOUT
            } else {
                match requested_timeout(&req) {
                    Ok(t) => t,
                    Err(e) => return refuse(req, &e).await,
                }
            };
            let user = match authenticate(ctx, identity, req.headers()).await {
                Ok(u) => u,
                Err(e) => return refuse(req, &e).await,
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
                    Err(e) => return refuse(req, &e).await,
                };
            let mut audit = AuditTrail::start(sec, &attrs, &info, peer, req.headers());
            let user = match impersonate(ctx, user, req.headers()) {
                Ok(u) => u,
                Err(e) => {
                    let resp = refuse(req, &e).await;
                    return audit.finish(resp, false).await;
                }
            };
            if req.headers().contains_key("impersonate-user") {
                audit.impersonated(&user);
            }
            // Classified as upstream's APF filter does: by the impersonated user, before
            // authorization; the answer carries the two UIDs either way.
            let attrs = attributes(&user, &info);
            let flow = sec.flowcontrol.classify(&attrs);
            let with_flow = |mut resp: Response| {
                if let Some(f) = &flow {
                    f.add_headers(resp.headers_mut());
                }
                resp
            };
            if let Err(e) = authorize(ctx, &attrs) {
                audit.authorized(false, &e.message);
                let resp = with_flow(refuse(req, &e).await);
                return audit.finish(resp, false).await;
            }
            audit.authorized(true, "");
            let req = audit.record_request(req).await;
            let long_running = info.long_running;
            let resp = if long_running {
                self.inner.call(&user, info, req).await
            } else {
                match tokio::time::timeout(deadline, self.inner.call(&user, info, req)).await {
                    Ok(resp) => resp,
                    Err(_) => error_response(&ApiError::timeout(
                        "request did not complete within the allotted timeout",
                        0,
                    )),
                }
            };
            audit.finish(with_flow(resp), long_running).await
        }
        .instrument(span)
        .await
    }
}

/// The deadline a request asks for with `?timeout=` (a Go duration): the default when absent,
/// not positive or longer than it, as upstream's parseTimeout and WithRequestDeadline.
fn requested_timeout(req: &Request) -> Result<Duration, ApiError> {
    let query = request::url_decode_pairs(req.uri().query().unwrap_or(""));
    let Some(value) = query.get("timeout").filter(|v| !v.is_empty()) else {
        return Ok(REQUEST_TIMEOUT);
    };
    let nanos = crate::protobuf::special::parse_duration(value).map_err(|e| {
        ApiError::bad_request(format!(
            "invalid timeout specified in the request URL - time: {e}"
        ))
    })?;
    let asked = Duration::from_nanos(u64::try_from(nanos).unwrap_or(0));
    Ok(if asked.is_zero() || asked > REQUEST_TIMEOUT {
        REQUEST_TIMEOUT
    } else {
        asked
    })
}

/// A refusal before the handler ran: the unread body is drained first, so that HTTP/2 clients
/// get the `Status` rather than a reset stream.
async fn refuse(req: Request, err: &ApiError) -> Response {
    request::drain_body(req).await;
    error_response(err)
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
        if let (Some(r), Some(a)) = (
            &mut self.record,
            resp.extensions()
                .get::<crate::audit::AdmissionAnnotations>(),
        ) {
            for (k, v) in &a.0 {
                r.add_annotation(k.clone(), v.clone());
            }
        }
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
            name: r
                .name
                .clone()
                .or_else(|| list_name(r.verb, &info.query))
                .unwrap_or_default(),
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

/// A list or watch selecting one object by `metadata.name=X` is authorized as a request for
/// that name, so `resourceNames` rules apply (upstream's RequestInfoFactory does the same).
fn list_name(verb: request::Verb, query: &Query) -> Option<String> {
    if !matches!(verb, request::Verb::List | request::Verb::Watch) {
        return None;
    }
    let selector = FieldSelector::parse(query.get("fieldSelector")?).ok()?;
    selector
        .requires_exact_match("metadata.name")
        .map(str::to_string)
}

/// Authorization: RBAC (with `system:masters` always allowed); a denial is upstream's 403.
pub fn authorize(ctx: &ApiContext, attrs: &Attributes) -> Result<(), ApiError> {
    match ctx.security.authorizer.authorize(attrs) {
        Decision::Allow(_) => Ok(()),
        Decision::Deny(reason) | Decision::NoOpinion(reason) => Err(forbidden(attrs, &reason)),
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
