//! One webhook call, shared by the mutating and validating dispatchers: the dry-run check,
//! the review, the HTTPS exchange and the verification of the answer. Failures are split as
//! upstream splits them: `Calling` (upstream's `ErrCallingWebhook`, subject to the failure
//! policy) and `Api` (returned as-is whatever the policy).

use k1s_apimachinery::ApiError;
use serde_json::Value;

use super::config::{SideEffects, Webhook};
use super::review::{self, AdmissionResponse};
use super::{AdmissionAttributes, AdmissionOutcome, ServiceResolver, client};

#[derive(Debug)]
pub(super) enum Failure {
    /// The reason of a failed call (`failed to call webhook: ...`, `received invalid webhook
    /// response: ...`); the dispatcher prefixes `failed calling webhook "<name>": `.
    Calling(String),
    /// An error returned to the client unchanged (denial, dry-run unsupported, ...).
    Api(ApiError),
}

/// Calls `hook` with the review of `attrs` and `obj` and returns its verified answer.
pub(super) async fn call(
    hook: &Webhook,
    attrs: &AdmissionAttributes,
    obj: &Value,
    resolver: &dyn ServiceResolver,
) -> Result<AdmissionResponse, Failure> {
    if attrs.dry_run {
        match hook.side_effects {
            None => return Err(Failure::Calling("Webhook SideEffects is nil".to_string())),
            Some(SideEffects::None | SideEffects::NoneOnDryRun) => {}
            Some(SideEffects::Some | SideEffects::Unknown) => {
                return Err(Failure::Api(ApiError::bad_request(format!(
                    "admission webhook {:?} does not support dry run",
                    hook.name
                ))));
            }
        }
    }
    let version = hook
        .review_version
        .as_ref()
        .map_err(|e| Failure::Calling(format!("could not create admission objects: {e}")))?;
    let target = hook
        .target
        .as_ref()
        .map_err(|e| Failure::Calling(format!("could not get REST client: {e}")))?;
    let tls = hook
        .tls
        .as_ref()
        .map_err(|e| Failure::Calling(format!("could not get REST client: {e}")))?;
    let uid = uuid::Uuid::new_v4().to_string();
    let review = review::admission_review_request(&uid, attrs, obj, version);
    let body = serde_json::to_vec(&review)
        .map_err(|e| Failure::Calling(format!("could not create admission objects: {e}")))?;
    let answer = client::post(target, tls.clone(), hook.timeout_seconds, body, resolver)
        .await
        .map_err(|client::CallFailure(reason)| Failure::Calling(reason))?;
    review::parse_admission_review_response(&answer, &uid, version, hook.mutating)
        .map_err(Failure::Calling)
}

/// Keeps the answer's warnings and audit annotations (`<webhook>/<key>`), as upstream does
/// before looking at `allowed`.
pub(super) fn record(hook: &Webhook, response: &AdmissionResponse, outcome: &mut AdmissionOutcome) {
    for (k, v) in &response.audit_annotations {
        outcome
            .audit_annotations
            .insert(format!("{}/{k}", hook.name), v.clone());
    }
    outcome.warnings.extend(response.warnings.iter().cloned());
}
