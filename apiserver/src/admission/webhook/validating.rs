//! Validating dispatch, as upstream's `validatingDispatcher`: every matching webhook is called
//! in parallel with the same object; the request fails when any of them rejects it or fails
//! with `failurePolicy: Fail`.

use std::sync::Arc;

use k1s_apimachinery::ApiError;
use serde_json::Value;

use super::config::{FailurePolicy, Webhook};
use super::{AdmissionAttributes, AdmissionOutcome, ServiceResolver, call, matching, review};

pub(super) async fn dispatch(
    hooks: &[Arc<Webhook>],
    attrs: &AdmissionAttributes,
    obj: &Value,
    resolver: &dyn ServiceResolver,
    outcome: &mut AdmissionOutcome,
) -> Result<(), ApiError> {
    let mut relevant = Vec::new();
    for hook in hooks {
        if matching::should_call(hook, attrs, obj)? {
            relevant.push(hook);
        }
    }
    if relevant.is_empty() {
        return Ok(());
    }
    let calls = relevant
        .iter()
        .map(|hook| call::call(hook, attrs, obj, resolver));
    let results = futures::future::join_all(calls).await;

    let mut first_error = None;
    for (index, (hook, result)) in relevant.iter().zip(results).enumerate() {
        let err = match result {
            Ok(response) => {
                call::record(hook, &response, outcome);
                if response.allowed {
                    continue;
                }
                review::webhook_denied_error(&hook.name, response.status.as_ref())
            }
            Err(call::Failure::Calling(reason)) => {
                let message = format!("failed calling webhook {:?}: {reason}", hook.name);
                if hook.failure_policy == FailurePolicy::Ignore {
                    outcome.audit_annotations.insert(
                        format!(
                            "failed-open.validating.webhook.admission.k8s.io/round_0_index_{index}"
                        ),
                        hook.name.clone(),
                    );
                    tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing open: {message}");
                    continue;
                }
                tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing closed: {message}");
                ApiError::internal(message)
            }
            Err(call::Failure::Api(e)) => e,
        };
        if first_error.is_none() {
            first_error = Some(err);
        } else {
            tracing::debug!(webhook = %hook.name, "further admission rejection: {}", err.message);
        }
    }
    first_error.map_or(Ok(()), Err)
}
