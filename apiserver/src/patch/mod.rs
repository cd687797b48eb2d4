//! Patches: JSON patch, JSON merge patch and strategic merge patch, applied to JSON objects.
// The functions here return `ApiError`, the Status the HTTP layer answers with, by design.

/// Patch metadata of one field of an API type, as upstream's OpenAPI extensions give it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPatchMeta {
    /// `x-kubernetes-patch-strategy` split on ',': any of "merge", "retainKeys", "replace".
    pub strategies: Vec<String>,
    /// `x-kubernetes-patch-merge-key`, for lists merged by a key (e.g. containers by `name`).
    pub merge_key: Option<String>,
    /// `x-kubernetes-list-type` ("atomic", "set", "map"), if declared.
    pub list_type: Option<String>,
    /// The definition name (e.g. `io.k8s.api.core.v1.Container`) of this field's value when it is
    /// an object type; for arrays and maps, of their items.
    pub value_type: Option<String>,
}

/// Where strategic merge patch learns the shape of a type. Implemented by the OpenAPI schemas.
pub trait PatchSchema: Send + Sync {
    /// Metadata of `field` in the object type `type_name` (a definition name), if known.
    fn field(&self, type_name: &str, field: &str) -> Option<FieldPatchMeta>;
}

mod json;
mod list;
mod order;
mod strategic;
#[cfg(test)]
mod tests;

use k1s_apimachinery::status::{ApiError, Reason, StatusCause, StatusDetails};
use serde_json::Value;

/// The media type of a JSON patch (RFC 6902).
pub const JSON_PATCH: &str = "application/json-patch+json";
/// The media type of a JSON merge patch (RFC 7386).
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// The media type of a strategic merge patch.
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
/// The media type of a server-side apply request.
pub const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// Upstream's limit on the number of operations in one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The kind of a PATCH request, chosen by its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json`: a list of RFC 6902 operations.
    Json,
    /// `application/merge-patch+json`: an RFC 7386 merge patch.
    Merge,
    /// `application/strategic-merge-patch+json`: Kubernetes' schema-driven merge patch.
    StrategicMerge,
    /// `application/apply-patch+yaml`: server-side apply (see `crate::apply`).
    Apply,
}

impl PatchType {
    /// The patch type of a `Content-Type` header value; parameters such as `; charset=utf-8` and
    /// letter case are ignored. `None` for any other media type.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media_type = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match media_type.as_str() {
            JSON_PATCH => Some(Self::Json),
            MERGE_PATCH => Some(Self::Merge),
            STRATEGIC_MERGE_PATCH => Some(Self::StrategicMerge),
            APPLY_PATCH => Some(Self::Apply),
            _ => None,
        }
    }

    /// The media type of this patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => JSON_PATCH,
            Self::Merge => MERGE_PATCH,
            Self::StrategicMerge => STRATEGIC_MERGE_PATCH,
            Self::Apply => APPLY_PATCH,
        }
    }
}

/// The patch media types this server applies: strategic merge patch only for types with a
/// schema (built-in kinds), as upstream, which refuses it for custom resources.
pub fn accepted_media_types(strategic: bool) -> &'static [&'static str] {
    if strategic {
        &[JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH]
    } else {
        &[JSON_PATCH, MERGE_PATCH]
    }
}

/// The 415 for a PATCH whose `Content-Type` is not a patch type we apply.
pub fn unsupported_patch_type(strategic: bool) -> ApiError {
    ApiError::unsupported_media_type(accepted_media_types(strategic))
}

/// Applies `patch` (the raw request body) of `patch_type` to `original` and returns the patched
/// object. `schema` is the patch metadata and the definition name of the object's type
/// (e.g. `io.k8s.api.core.v1.Pod`); `None` for custom resources, which refuse strategic merge
/// patch with 415 as upstream does. Errors are the `Status` the request should fail with:
/// 400 for a body that cannot be decoded, 422 when a JSON patch operation fails or the result
/// is not an object, 413 for too many JSON patch operations, 415 for server-side apply (which
/// the handler does itself, with `crate::apply`).
pub fn apply_patch(
    patch_type: PatchType,
    original: &Value,
    patch: &[u8],
    schema: Option<(&dyn PatchSchema, &str)>,
) -> Result<Value, ApiError> {
    match patch_type {
        PatchType::Json => json::apply_json_patch(original, patch),
        PatchType::Merge => json::apply_merge_patch(original, patch),
        PatchType::StrategicMerge => {
            let Some((schema, root)) = schema else {
                return Err(unsupported_patch_type(false));
            };
            strategic::apply(original, patch, schema, root)
        }
        // Server-side apply is the handler's (crate::apply); only the scale subresource,
        // which it does not apply to, gets here.
        PatchType::Apply => Err(ApiError::new(
            415,
            Reason::UnsupportedMediaType,
            format!(
                "server-side apply ({APPLY_PATCH}) of this subresource is not supported by this \
                 server; use another patch type - accepted media types include: {}",
                accepted_media_types(schema.is_some()).join(", ")
            ),
        )),
    }
}

/// Parses a patch body as JSON; a body that is not JSON is a 400.
fn decode_body(patch: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(patch)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// The 422 upstream answers when a patch cannot be applied (its
/// `NewGenericServerResponse(422, ...)`), with `detail` as a `patch` cause so clients can show
/// what went wrong.
fn unprocessable(detail: impl Into<String>) -> ApiError {
    ApiError::new(
        422,
        Reason::Invalid,
        "the server rejected our request due to an error in our request",
    )
    .with_details(StatusDetails::default())
    .with_cause(StatusCause {
        reason: String::new(),
        message: detail.into(),
        field: "patch".to_string(),
    })
}

/// A patched document must still be an object; anything else is a 422 on `patch`, as upstream's
/// decode of the patched bytes reports it.
fn ensure_object(doc: Value) -> Result<Value, ApiError> {
    if doc.is_object() {
        return Ok(doc);
    }
    let text = doc.to_string();
    Err(ApiError::invalid(
        "",
        "",
        "",
        vec![k1s_apimachinery::FieldError::invalid(
            "patch",
            text,
            "the patched object must be a JSON object",
        )],
    ))
}
