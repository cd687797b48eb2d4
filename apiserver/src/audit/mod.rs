//! Auditing as upstream's `--audit-policy-file` / `--audit-log-*`: an `audit.k8s.io/v1` Policy
//! decides per request how much is recorded ([`Policy::evaluate`]), a [`RequestAudit`] collects
//! the request's facts as it moves through the chain and yields `audit.k8s.io/v1` Events per
//! stage, and the [`AuditLogger`] writes them as JSON lines to a size-rotated file without ever
//! blocking a request.
//!
//! Wiring (the lead's filter): build `auth::Attributes` after authentication, `evaluate` them,
//! `RequestAudit::new(...)`; log `event(Stage::RequestReceived)`; record the authorization
//! decision, impersonation, request body and response; log `ResponseStarted` for long-running
//! requests when the response begins, then `ResponseComplete` (or `Panic`).

mod event;
mod logger;
mod policy;
mod rotate;

#[cfg(test)]
mod tests;

pub use event::{
    DECISION_ANNOTATION, Event, EventUser, ObjectReference, REASON_ANNOTATION, RequestAudit,
    RequestMeta, ResponseStatus, micro_time,
};
pub use logger::{AuditLogConfig, AuditLogger, DEFAULT_BUFFER_SIZE};
pub use policy::{
    GroupResources, Level, Policy, PolicyRule, RequestAuditConfig, Stage, rule_matches,
};
pub use rotate::{MEGABYTE, RotatingFile};

/// Audit annotations admission added to a request (a response extension the handler sets and
/// the chain's audit layer records on the event).
#[derive(Clone, Debug, Default)]
pub struct AdmissionAnnotations(pub std::collections::BTreeMap<String, String>);

impl RequestAudit {
    /// Writes the event for `stage` (if the policy keeps that stage) to `logger`.
    pub fn emit(&self, logger: &AuditLogger, stage: Stage) {
        if let Some(ev) = self.event(stage) {
            logger.log(&ev);
        }
    }
}
