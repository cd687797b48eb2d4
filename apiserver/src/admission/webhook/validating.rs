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
    // Each matching webhook with the attributes and object it is called with (an equivalent
    // version converts the object to the webhook's version).
    let mut relevant = Vec::new();
    for hook in hooks {
        match matching::matched(hook, attrs, obj)? {
            None => {}
            Some(None) => relevant.push((hook, attrs.clone(), obj.clone())),
            Some(Some(mut eq)) => {
                eq.old_object = eq
                    .old_object
                    .as_ref()
                    .map(|o| matching::in_version(o, &eq))
                    .transpose()?;
                let converted = matching::in_version(obj, &eq)?;
                relevant.push((hook, eq, converted));
            }
        }
    }
    if relevant.is_empty() {
        return Ok(());
    }
    let calls = relevant
        .iter()
        .map(|(hook, a, o)| call::call(hook, a, o, resolver));
    let results = futures::future::join_all(calls).await;

    let mut first_error = None;
    for (index, ((hook, _, _), result)) in relevant.iter().zip(results).enumerate() {
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
