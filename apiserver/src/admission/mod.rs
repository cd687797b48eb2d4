//! Admission control beyond the per-kind strategies: dynamic admission webhooks
//! (MutatingWebhookConfiguration / ValidatingWebhookConfiguration), called as upstream's
//! `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook` plugins do.
//!
//! The request chain calls [`webhook::WebhookDispatcher::mutate`] after defaulting and
//! [`webhook::WebhookDispatcher::validate`] after the strategy's validation.

pub mod webhook;

pub use webhook::{
    AdmissionAttributes, AdmissionOutcome, Operation, ServiceResolver, WebhookDispatcher,
    admission_review_request,
};
