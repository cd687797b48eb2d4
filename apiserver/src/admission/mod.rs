//! Admission control beyond the per-kind strategies: dynamic admission webhooks
//! (MutatingWebhookConfiguration / ValidatingWebhookConfiguration), called as upstream's
//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins do, and
//! ValidatingAdmissionPolicies (`policy`), with the CEL match conditions both share
//! (`conditions`), and the create/update validation of webhook configurations (`validation`).
//!
//! The request chain calls [`webhook::WebhookDispatcher::mutate`] after defaulting, then
//! [`policy::PolicyDispatcher::validate`] and [`webhook::WebhookDispatcher::validate`] after the
//! strategy's validation.

pub mod conditions;
pub mod policy;
pub mod validation;
pub mod webhook;

pub use webhook::{
    AdmissionAttributes, AdmissionOutcome, Operation, ServiceResolver, WebhookDispatcher,
    admission_review_request,
};
