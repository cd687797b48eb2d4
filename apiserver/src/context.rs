//! What the filter chain and the handlers share: the registry, security settings, metrics.

use std::sync::Arc;

use crate::registry::Registry;

/// Everything a resource request needs from the server.
#[derive(Clone)]
pub struct ApiContext {
    pub registry: Registry,
    /// Flips to true at shutdown so long-running watches end.
    pub shutdown: tokio::sync::watch::Receiver<bool>,
    pub metrics: Arc<crate::metrics::Metrics>,
    pub services: Arc<crate::allocator::ServiceAllocator>,
    pub security: Arc<Security>,
    pub webhooks: Arc<crate::admission::WebhookDispatcher>,
    pub policies: Arc<crate::admission::policy::PolicyDispatcher>,
    /// APIServices: routing to aggregated API servers, merged discovery and OpenAPI.
    pub aggregator: Arc<crate::aggregator::Aggregator>,
}

/// What authentication and authorization need.
pub struct Security {
    pub authorizer: Arc<crate::auth::rbac::RbacAuthorizer>,
    /// Classifies requests by the FlowSchemas (the APF response headers).
    pub flowcontrol: Arc<crate::flowcontrol::FlowControl>,
    pub tokens: crate::auth::authn::TokenIssuer,
    pub token_file: Option<crate::auth::authn::TokenFile>,
    pub oidc: Option<crate::auth::authn::OidcDocuments>,
    pub inflight: crate::overload::InFlightLimiter,
    pub audit: Option<Audit>,
    pub token_cache: crate::authentication::TokenCache,
}

/// The audit policy and where its events go.
pub struct Audit {
    pub policy: crate::audit::Policy,
    pub logger: crate::audit::AuditLogger,
}
