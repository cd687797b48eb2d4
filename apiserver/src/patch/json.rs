//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386) applied through the `json-patch` crate.

use json_patch::{PatchErrorKind, PatchOperation};
use k1s_apimachinery::status::ApiError;
use serde_json::Value;

use super::{MAX_JSON_PATCH_OPERATIONS, decode_body, ensure_object, unprocessable};

/// Applies an RFC 6902 patch. A body that is not an array of objects is a 400 (upstream fails
/// to decode it); more than [`MAX_JSON_PATCH_OPERATIONS`] operations is a 413; an operation
/// that is malformed or fails (a `test` that does not match, a path that does not exist) is a
/// 422, as upstream answers when applying the patch fails.
pub(super) fn apply_json_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let Value::Array(ops) = decode_body(body)? else {
        return Err(ApiError::bad_request(
            "error decoding patch: a JSON patch must be a JSON array of operations",
        ));
    };
    if let Some(index) = ops.iter().position(|op| !op.is_object()) {
        return Err(ApiError::bad_request(format!(
            "error decoding patch: operation {index} is not a JSON object"
        )));
    }
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::request_entity_too_large(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let mut operations = Vec::with_capacity(ops.len());
    for (index, op) in ops.into_iter().enumerate() {
        let operation: PatchOperation = serde_json::from_value(op)
            .map_err(|e| unprocessable(format!("json patch operation {index} is invalid: {e}")))?;
        operations.push(operation);
    }
    let mut doc = original.clone();
    json_patch::patch(&mut doc, &operations).map_err(|e| {
        let op = operations
            .get(e.operation)
            .map(op_name)
            .unwrap_or("unknown");
        let why = match e.kind {
            PatchErrorKind::TestFailed => "the value does not match",
            PatchErrorKind::InvalidFromPointer => "the \"from\" path does not exist",
            PatchErrorKind::InvalidPointer => "the path does not exist",
            PatchErrorKind::CannotMoveInsideItself => "cannot move a value inside itself",
            _ => "the operation cannot be applied",
        };
        unprocessable(format!(
            "json patch operation {} ({op}) failed at path \"{}\": {why}",
            e.operation, e.path
        ))
    })?;
    ensure_object(doc)
}

fn op_name(op: &PatchOperation) -> &'static str {
    match op {
        PatchOperation::Add(_) => "add",
        PatchOperation::Remove(_) => "remove",
        PatchOperation::Replace(_) => "replace",
        PatchOperation::Move(_) => "move",
        PatchOperation::Copy(_) => "copy",
        PatchOperation::Test(_) => "test",
    }
}

/// Applies an RFC 7386 merge patch. The patch must be a JSON object (400 otherwise). As
/// upstream's merge, `null`s inside objects that sit in arrays of the patch are dropped (arrays
/// replace wholesale, so such nulls can only mean "unset").
pub(super) fn apply_merge_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let mut patch = decode_body(body)?;
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "error decoding patch: a merge patch must be a JSON object",
        ));
    }
    prune_nulls_in_arrays(&mut patch, false);
    let mut doc = original.clone();
    json_patch::merge(&mut doc, &patch);
    ensure_object(doc)
}

/// Removes `null` members of objects that are (nested) inside arrays.
fn prune_nulls_in_arrays(value: &mut Value, in_array: bool) {
    match value {
        Value::Object(map) => {
            if in_array {
                map.retain(|_, v| !v.is_null());
            }
            for v in map.values_mut() {
                prune_nulls_in_arrays(v, in_array);
            }
        }
        Value::Array(items) => {
            for item in items {
                prune_nulls_in_arrays(item, true);
            }
        }
        _ => {}
    }
}
