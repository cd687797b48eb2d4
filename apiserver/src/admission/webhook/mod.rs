//! Dynamic admission webhooks, as upstream's `k8s.io/apiserver/pkg/admission/plugin/webhook`:
//! the current MutatingWebhookConfigurations and ValidatingWebhookConfigurations, the matching
//! of a request against their rules and selectors, the AdmissionReview v1 call over HTTPS and
//! the handling of the answer (patches, denials, warnings, failure policies).
//!
//! Deliberate differences from upstream, for now:
//! - `matchPolicy: Equivalent` maps between the versions k1s serves of one resource (the
//!   autoscaling v1/v2 HorizontalPodAutoscalers): the webhook gets the object in its version.
//! - `matchConditions` see `object`, `oldObject` and `request`; the `authorizer` variable is
//!   not offered, so a condition using it does not compile.
//! - Validating webhooks run in parallel; when several reject, the first rejection *in
//!   configuration order* is returned (upstream returns whichever arrives first).
//! - Re-invocation (`reinvocationPolicy: IfNeeded`) covers the webhooks only; k1s has no in-tree
//!   mutating plugins that run after them.
//! - Each call uses a fresh HTTP/1.1 connection.

mod call;
pub(crate) mod client;
pub(crate) mod config;
mod matching;
mod mutating;
mod review;
mod validating;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_matching;
#[cfg(test)]
mod tests_server;
#[cfg(test)]
mod tests_tls;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use k1s_apimachinery::ApiError;
use rustls::pki_types::CertificateDer;
use serde_json::Value;

use crate::auth::UserInfo;

pub use config::{
    ClientTarget, FailurePolicy, Rule, Scope, SideEffects, Webhook, parse_configuration, parse_rule,
};
pub(crate) use matching::{equivalents, in_version, namespace_matches, object_matches};
pub use matching::{is_exempt_admission_configuration_resource, rule_matches};
pub use review::{
    AdmissionResponse, admission_review_request, parse_admission_review_response,
    webhook_denied_error,
};

/// The admission operation (upstream `admission.Operation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Operation {
    #[default]
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// The wire string (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// Parses a wire string (exact, upper case).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }
}

/// What is being admitted (upstream `admission.Attributes`).
///
/// Conventions, as upstream:
/// - `kind`/`version`/`group` name the object's kind (`Pod`, `Scale` for `deployments/scale`),
///   `resource`/`subresource` the REST path (`pods`, `status`).
/// - For requests on a namespace object itself, `namespace` is the namespace's name.
/// - For DELETE the object passed to `mutate`/`validate` is `Value::Null` and `old_object` is
///   the stored object; `options` is the DeleteOptions (CreateOptions / UpdateOptions for the
///   others, the connect options for CONNECT).
/// - `namespace_labels` are the labels of the request's namespace, used by
///   `namespaceSelector`; `None` means the namespace does not exist (a webhook whose rules match
///   and whose selector needs the labels then fails the request with 404 NotFound, as upstream).
#[derive(Clone, Debug, Default)]
pub struct AdmissionAttributes {
    pub operation: Operation,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub user: UserInfo,
    pub old_object: Option<Value>,
    pub dry_run: bool,
    pub namespace_labels: Option<BTreeMap<String, String>>,
    pub options: Value,
    /// Set when a webhook matched an equivalent version (`matchPolicy: Equivalent`): the
    /// version and kind the client used, sent as `requestKind` / `requestResource`.
    pub request_version: Option<String>,
    pub request_kind: Option<String>,
}

/// Finds where a webhook Service is served. The lead implements it (e.g. the Service's
/// ClusterIP, or the first ready address of its Endpoints). The URL shown in errors and the TLS
/// server name stay `<name>.<namespace>.svc`, as upstream.
#[async_trait]
pub trait ServiceResolver: Send + Sync {
    async fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<SocketAddr, String>;
}

/// What a successful admission pass produced besides the (mutated) object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdmissionOutcome {
    /// `warnings` from the webhooks' responses, in call order (kept even when a later webhook
    /// denies, as upstream adds them to the response headers before the denial).
    pub warnings: Vec<String>,
    /// Audit annotations: `<webhook name>/<key>` from the responses' `auditAnnotations`, and
    /// `mutation.webhook.admission.k8s.io/round_<r>_index_<i>` for every mutating call, and
    /// `failed-open.{mutation,validating}.webhook.admission.k8s.io/round_<r>_index_<i>` (the
    /// webhook name) for calls that failed under `failurePolicy: Ignore`. Upstream's
    /// `patch.webhook.admission.k8s.io/...` annotations (Request level) are not produced.
    pub audit_annotations: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct Hooks {
    mutating: Vec<Arc<Webhook>>,
    validating: Vec<Arc<Webhook>>,
}

/// Holds the current webhook configurations and dispatches admission to them.
#[derive(Debug, Default)]
pub struct WebhookDispatcher {
    hooks: RwLock<Arc<Hooks>>,
    /// The trust roots for webhooks without a `caBundle` (e.g. the cluster CA).
    default_roots: RwLock<Vec<CertificateDer<'static>>>,
    /// Raw configurations, kept to rebuild when the default roots change.
    raw: RwLock<(Vec<Value>, Vec<Value>)>,
    /// What `authorizer` in match conditions asks.
    authorizer: RwLock<Option<Arc<dyn crate::admission::policy::authz::Authorize>>>,
}

impl WebhookDispatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// Trust roots used for webhooks that give no `caBundle` (upstream falls back to the
    /// system roots; k1s has none, so the lead can pass the cluster CA here).
    pub fn set_default_roots(&self, roots: Vec<CertificateDer<'static>>) {
        if let Ok(mut r) = self.default_roots.write() {
            *r = roots;
        }
        let (m, v) = self.raw.read().map(|r| r.clone()).unwrap_or_default();
        self.set_configurations(m, v);
    }

    /// The authorizer behind `authorizer` in match conditions.
    pub fn set_authorizer(&self, authorizer: Arc<dyn crate::admission::policy::authz::Authorize>) {
        if let Ok(mut a) = self.authorizer.write() {
            *a = Some(authorizer);
        }
        let (m, v) = self.raw.read().map(|r| r.clone()).unwrap_or_default();
        self.set_configurations(m, v);
    }

    /// Replaces both lists (whole `MutatingWebhookConfiguration` and
    /// `ValidatingWebhookConfiguration` objects, in any order).
    pub fn set_configurations(&self, mutating: Vec<Value>, validating: Vec<Value>) {
        let roots = self
            .default_roots
            .read()
            .map(|r| r.clone())
            .unwrap_or_default();
        let authorizer = self.authorizer.read().ok().and_then(|a| a.clone());
        let hooks = Hooks {
            mutating: build(&mutating, true, &roots, &authorizer),
            validating: build(&validating, false, &roots, &authorizer),
        };
        if let Ok(mut raw) = self.raw.write() {
            *raw = (mutating, validating);
        }
        if let Ok(mut h) = self.hooks.write() {
            *h = Arc::new(hooks);
        }
    }

    /// Replaces the mutating configurations only.
    pub fn set_mutating_configurations(&self, mutating: Vec<Value>) {
        let validating = self.raw.read().map(|r| r.1.clone()).unwrap_or_default();
        self.set_configurations(mutating, validating);
    }

    /// Replaces the validating configurations only.
    pub fn set_validating_configurations(&self, validating: Vec<Value>) {
        let mutating = self.raw.read().map(|r| r.0.clone()).unwrap_or_default();
        self.set_configurations(mutating, validating);
    }

    fn snapshot(&self) -> Arc<Hooks> {
        self.hooks
            .read()
            .map(|h| Arc::clone(&h))
            .unwrap_or_default()
    }

    /// True when some mutating webhook is configured (callers skip preparing a review if not).
    pub fn has_mutating(&self) -> bool {
        !self.snapshot().mutating.is_empty()
    }

    /// True when some validating webhook is configured.
    pub fn has_validating(&self) -> bool {
        !self.snapshot().validating.is_empty()
    }

    /// The mutating webhooks in call order (configuration name, then list order).
    pub fn mutating_webhooks(&self) -> Vec<Arc<Webhook>> {
        self.snapshot().mutating.clone()
    }

    /// The validating webhooks in configuration order.
    pub fn validating_webhooks(&self) -> Vec<Arc<Webhook>> {
        self.snapshot().validating.clone()
    }

    /// Runs the mutating webhooks that match, applying their JSON patches to `obj`; returns the
    /// warnings. Errors are upstream's: a denial, `Internal error occurred: failed calling
    /// webhook ...` for a failing webhook with `failurePolicy: Fail`, 400 for a dry run on a
    /// webhook with side effects, 404 for a missing namespace.
    pub async fn mutate(
        &self,
        req: &AdmissionAttributes,
        obj: &mut Value,
        resolver: &dyn ServiceResolver,
    ) -> Result<Vec<String>, ApiError> {
        let mut outcome = AdmissionOutcome::default();
        self.mutate_detailed(req, obj, resolver, &mut outcome)
            .await
            .map(|()| outcome.warnings)
    }

    /// Like [`WebhookDispatcher::mutate`], filling `outcome` (warnings and audit annotations)
    /// even when the request is rejected.
    pub async fn mutate_detailed(
        &self,
        req: &AdmissionAttributes,
        obj: &mut Value,
        resolver: &dyn ServiceResolver,
        outcome: &mut AdmissionOutcome,
    ) -> Result<(), ApiError> {
        if is_exempt_admission_configuration_resource(req) {
            return Ok(());
        }
        let hooks = self.snapshot();
        mutating::dispatch(&hooks.mutating, req, obj, resolver, outcome).await
    }

    /// Runs the validating webhooks that match, in parallel; returns the warnings.
    pub async fn validate(
        &self,
        req: &AdmissionAttributes,
        obj: &Value,
        resolver: &dyn ServiceResolver,
    ) -> Result<Vec<String>, ApiError> {
        let mut outcome = AdmissionOutcome::default();
        self.validate_detailed(req, obj, resolver, &mut outcome)
            .await
            .map(|()| outcome.warnings)
    }

    /// Like [`WebhookDispatcher::validate`], filling `outcome` even when rejected.
    pub async fn validate_detailed(
        &self,
        req: &AdmissionAttributes,
        obj: &Value,
        resolver: &dyn ServiceResolver,
        outcome: &mut AdmissionOutcome,
    ) -> Result<(), ApiError> {
        if is_exempt_admission_configuration_resource(req) {
            return Ok(());
        }
        let hooks = self.snapshot();
        validating::dispatch(&hooks.validating, req, obj, resolver, outcome).await
    }
}

/// Parses and orders configurations: by `metadata.name`, then the webhooks in list order.
fn build(
    configs: &[Value],
    mutating: bool,
    roots: &[CertificateDer<'static>],
    authorizer: &Option<Arc<dyn crate::admission::policy::authz::Authorize>>,
) -> Vec<Arc<Webhook>> {
    let mut configs: Vec<&Value> = configs.iter().collect();
    configs.sort_by(|a, b| config_name(a).cmp(config_name(b)));
    configs
        .into_iter()
        .flat_map(|c| parse_configuration(c, mutating, roots))
        .map(|mut w| {
            w.authorizer = authorizer.clone();
            Arc::new(w)
        })
        .collect()
}

fn config_name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}
