//! Mutating dispatch, as upstream's `mutatingDispatcher`: webhooks run one after another in
//! configuration order, each seeing the object as the previous ones left it; JSON patches are
//! applied; a webhook with `reinvocationPolicy: IfNeeded` runs once more when a webhook after it
//! changed the object.

use std::collections::HashSet;
use std::sync::Arc;

use k1s_apimachinery::ApiError;
use serde_json::{Value, json};

use super::config::{FailurePolicy, Webhook};
use super::{AdmissionAttributes, AdmissionOutcome, ServiceResolver, matching};
use super::{call, review};

const MUTATION_ANNOTATION_PREFIX: &str = "mutation.webhook.admission.k8s.io/";

/// The reinvocation bookkeeping of upstream's `webhookReinvokeContext`.
#[derive(Default)]
struct Reinvocation {
    /// IfNeeded webhooks called since the last change.
    previously_invoked: HashSet<String>,
    /// Webhooks to call in the second round.
    reinvoke: HashSet<String>,
    should_reinvoke: bool,
}

impl Reinvocation {
    fn object_changed(&mut self) {
        self.reinvoke.extend(self.previously_invoked.drain());
        self.should_reinvoke = true;
    }
}

pub(super) async fn dispatch(
    hooks: &[Arc<Webhook>],
    attrs: &AdmissionAttributes,
    obj: &mut Value,
    resolver: &dyn ServiceResolver,
    outcome: &mut AdmissionOutcome,
) -> Result<(), ApiError> {
    let mut state = Reinvocation::default();
    run_round(hooks, attrs, obj, resolver, outcome, &mut state, 0).await?;
    if state.should_reinvoke && !state.reinvoke.is_empty() {
        run_round(hooks, attrs, obj, resolver, outcome, &mut state, 1).await?;
    }
    Ok(())
}

async fn run_round(
    hooks: &[Arc<Webhook>],
    attrs: &AdmissionAttributes,
    obj: &mut Value,
    resolver: &dyn ServiceResolver,
    outcome: &mut AdmissionOutcome,
    state: &mut Reinvocation,
    round: usize,
) -> Result<(), ApiError> {
    for (index, hook) in hooks.iter().enumerate() {
        let Some(equivalent) = matching::matched(hook, attrs, obj)? else {
            continue;
        };
        // A webhook is never called for the first time in the second round.
        if round > 0 && !state.reinvoke.contains(&hook.uid) {
            continue;
        }
        let result = match &equivalent {
            None => call_mutating(hook, attrs, obj, resolver, outcome).await,
            // Through an equivalent version: the webhook sees (and patches) the object in its
            // version; the result comes back in the request's version.
            Some(eq) => {
                let mut eq = eq.clone();
                eq.old_object = eq
                    .old_object
                    .as_ref()
                    .map(|o| matching::in_version(o, &eq))
                    .transpose()?;
                let mut converted = matching::in_version(obj, &eq)?;
                let result = call_mutating(hook, &eq, &mut converted, resolver, outcome).await;
                if matches!(result, Ok(true)) {
                    *obj = matching::in_version(&converted, attrs)?;
                }
                result
            }
        };
        let changed = matches!(result, Ok(true));
        let annotation = json!({
            "configuration": hook.configuration,
            "webhook": hook.name,
            "mutated": changed,
        });
        outcome.audit_annotations.insert(
            format!("{MUTATION_ANNOTATION_PREFIX}round_{round}_index_{index}"),
            annotation.to_string(),
        );
        if changed {
            state.object_changed();
        }
        if hook.reinvoke_if_needed {
            state.previously_invoked.insert(hook.uid.clone());
        }
        match result {
            Ok(_) => {}
            Err(call::Failure::Calling(reason)) => {
                let message = format!("failed calling webhook {:?}: {reason}", hook.name);
                if hook.failure_policy == FailurePolicy::Ignore {
                    outcome.audit_annotations.insert(
                        format!(
                            "failed-open.{MUTATION_ANNOTATION_PREFIX}round_{round}_index_{index}"
                        ),
                        hook.name.clone(),
                    );
                    tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing open: {message}");
                    continue;
                }
                tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing closed: {message}");
                return Err(ApiError::internal(message));
            }
            Err(call::Failure::Api(e)) => return Err(e),
        }
    }
    Ok(())
}

/// Calls one mutating webhook and applies its patch to `obj`; `Ok(true)` when the object
/// changed.
async fn call_mutating(
    hook: &Webhook,
    attrs: &AdmissionAttributes,
    obj: &mut Value,
    resolver: &dyn ServiceResolver,
    outcome: &mut AdmissionOutcome,
) -> Result<bool, call::Failure> {
    let response = call::call(hook, attrs, obj, resolver).await?;
    call::record(hook, &response, outcome);
    if !response.allowed {
        return Err(call::Failure::Api(review::webhook_denied_error(
            &hook.name,
            response.status.as_ref(),
        )));
    }
    if response.patch.is_empty() {
        return Ok(false);
    }
    let ops: Vec<json_patch::PatchOperation> =
        serde_json::from_slice(&response.patch).map_err(|e| {
            call::Failure::Calling(format!(
                "received undecodable patch in webhook response: {e}"
            ))
        })?;
    if ops.is_empty() {
        return Ok(false);
    }
    if obj.is_null() {
        return Err(call::Failure::Api(ApiError::internal(format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            hook.name
        ))));
    }
    if response.patch_type != "JSONPatch" {
        return Err(call::Failure::Calling(format!(
            "unsupported patch type {:?}",
            response.patch_type
        )));
    }
    let mut patched = obj.clone();
    json_patch::patch(&mut patched, &ops).map_err(|e| call::Failure::Api(ApiError::internal(e)))?;
    if !patched.is_object() {
        return Err(call::Failure::Api(ApiError::internal(format!(
            "admission webhook {:?} patched the object into a non-object",
            hook.name
        ))));
    }
    let changed = patched != *obj;
    *obj = patched;
    Ok(changed)
}
