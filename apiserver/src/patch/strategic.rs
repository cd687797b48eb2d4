//! Strategic merge patch on JSON objects: map merging, nulls, `$patch`, `$retainKeys`,
//! `$deleteFromPrimitiveList` and the hand-off to list merging, driven by a [`PatchSchema`].
//!
//! Semantics follow upstream's `strategicpatch` package as the API server runs it
//! (`MergeParallelList` and `IgnoreUnmatchedNulls` on). Where upstream would copy a patch value
//! verbatim into the result (a key the original lacks), the value is "materialized" instead:
//! merged into an empty value, so its nulls are dropped and its directives applied rather than
//! stored.

use k1s_apimachinery::status::ApiError;
use serde_json::{Map, Value};

use super::{PatchSchema, decode_body, list, order, unprocessable};

pub(super) const DIRECTIVE_MARKER: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
pub(super) const SET_ELEMENT_ORDER: &str = "$setElementOrder";
pub(super) const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";

/// Why a strategic merge patch cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SmpError {
    /// A malformed patch (400).
    #[error("{0}")]
    BadRequest(String),
    /// A patch upstream refuses with 422 (lists of lists).
    #[error("{0}")]
    Unprocessable(String),
}

impl From<SmpError> for ApiError {
    fn from(e: SmpError) -> Self {
        match e {
            SmpError::BadRequest(msg) => ApiError::bad_request(msg),
            SmpError::Unprocessable(msg) => unprocessable(msg),
        }
    }
}

pub(super) type SmpResult<T> = Result<T, SmpError>;

/// `map: {...} does not contain declared merge key: name`.
pub(super) fn no_merge_key(item: &Value, key: &str) -> SmpError {
    SmpError::BadRequest(format!(
        "map: {item} does not contain declared merge key: {key}"
    ))
}

/// `unknown patch type: x in map: {...}`.
pub(super) fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> SmpError {
    let shown = directive
        .as_str()
        .map_or_else(|| directive.to_string(), str::to_string);
    SmpError::BadRequest(format!(
        "unknown patch type: {shown} in map: {}",
        Value::Object(map.clone())
    ))
}

fn bad_retain_keys() -> SmpError {
    SmpError::BadRequest("invalid patch format of retainKeys".to_string())
}

pub(super) fn bad_set_element_order() -> SmpError {
    SmpError::BadRequest("invalid patch format of setElementOrder list".to_string())
}

fn bad_primitive_list() -> SmpError {
    SmpError::BadRequest("invalid patch format of primitive list".to_string())
}

/// Where in the schema a value sits: the definition name of the object type whose fields are
/// being merged (`None` once the schema knows nothing more, where merging is plain JSON merge
/// with directives still honoured).
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    schema: &'a dyn PatchSchema,
    ty: Option<&'a str>,
}

/// What the schema says about one field, reduced to what merging needs.
#[derive(Debug, Default)]
pub(super) struct Field {
    /// Patch strategy `merge`: lists merge (by `merge_key` for objects, as a set otherwise).
    pub merge: bool,
    /// Patch strategy `replace`: maps are replaced rather than merged.
    pub replace: bool,
    pub merge_key: Option<String>,
    /// The type of the field's value (of its items for lists and maps).
    pub value_type: Option<String>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(schema: &'a dyn PatchSchema, ty: &'a str) -> Self {
        Self {
            schema,
            ty: Some(ty),
        }
    }

    /// Patch metadata of `key` in this context's type. An unknown key keeps the current type as
    /// its value type: that is the shape of a map field (`additionalProperties`), whose entries
    /// all share the value type the schema reported for the map.
    pub(super) fn field(&self, key: &str) -> Field {
        let meta = self.ty.and_then(|ty| self.schema.field(ty, key));
        match meta {
            Some(meta) => Field {
                merge: meta.strategies.iter().any(|s| s == "merge"),
                replace: meta.strategies.iter().any(|s| s == "replace"),
                merge_key: meta.merge_key.filter(|k| !k.is_empty()),
                value_type: meta.value_type,
            },
            None => Field {
                value_type: self.ty.map(str::to_string),
                ..Field::default()
            },
        }
    }

    /// The definition name of this context's type, for messages.
    pub(super) fn type_name(&self) -> &str {
        self.ty.unwrap_or("an unknown type")
    }

    /// The context for the value (or the items) of `field`.
    pub(super) fn child<'b>(&self, field: &'b Field) -> Ctx<'b>
    where
        'a: 'b,
    {
        Ctx {
            schema: self.schema,
            ty: field.value_type.as_deref(),
        }
    }
}

/// Applies a strategic merge patch body to `original` (an object) for the type `root`.
pub(super) fn apply(
    original: &Value,
    body: &[u8],
    schema: &dyn PatchSchema,
    root: &str,
) -> Result<Value, ApiError> {
    let Value::Object(patch) = decode_body(body)? else {
        return Err(ApiError::bad_request(
            "error decoding patch: a strategic merge patch must be a JSON object",
        ));
    };
    let Value::Object(original) = original.clone() else {
        return Err(ApiError::internal(
            "the object to patch is not a JSON object",
        ));
    };
    let merged = merge_map(original, patch, Ctx::new(schema, root))?;
    Ok(Value::Object(merged))
}

/// Merges `patch` into `original` (both objects of the context's type).
pub(super) fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    ctx: Ctx<'_>,
) -> SmpResult<Map<String, Value>> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        return match directive.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE_MARKER);
                merge_map(Map::new(), patch, ctx)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(directive, &patch)),
        };
    }

    if let Some(retain) = patch.remove(RETAIN_KEYS) {
        apply_retain_keys(&mut original, &patch, &retain)?;
    }

    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in order_keys {
        let Some(order) = patch.remove(&key) else {
            continue;
        };
        let name = directive_target(&key, SET_ELEMENT_ORDER).ok_or_else(bad_set_element_order)?;
        let Value::Array(order) = order else {
            return Err(bad_set_element_order());
        };
        list::apply_set_element_order(&mut original, &mut patch, name, order, ctx)?;
    }

    let mut deletions = Vec::new();
    for (key, patch_value) in patch {
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            deletions.push((key, patch_value));
            continue;
        }
        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }
        let field = ctx.field(&key);
        let child = ctx.child(&field);
        // Take the current value in place so the key keeps its position in the map.
        let current = original.get_mut(&key).map(std::mem::take);
        let merged = match (current, patch_value) {
            (Some(Value::Object(o)), Value::Object(p)) if !field.replace => {
                Value::Object(merge_map(o, p, child)?)
            }
            (Some(Value::Array(o)), Value::Array(p)) if field.merge => {
                Value::Array(list::merge_list(o, p, &field, child)?)
            }
            (_, patch_value) => materialize(patch_value, &field, child)?,
        };
        original.insert(key, merged);
    }

    for (key, to_delete) in deletions {
        let name =
            directive_target(&key, DELETE_FROM_PRIMITIVE_LIST).ok_or_else(bad_primitive_list)?;
        match to_delete {
            Value::Null => {
                original.remove(name);
            }
            Value::Array(to_delete) => {
                if let Some(Value::Array(items)) = original.get_mut(name) {
                    items.retain(|item| !to_delete.iter().any(|d| order::value_eq(d, item)));
                }
            }
            _ => return Err(bad_primitive_list()),
        }
    }
    Ok(original)
}

/// The field a `$setElementOrder/<field>` or `$deleteFromPrimitiveList/<field>` key names.
fn directive_target<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    let (head, name) = key.split_once('/')?;
    (head == prefix).then_some(name)
}

/// `$retainKeys`: every key the patch sets must be listed, and the original keeps only the
/// listed keys.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    retain: &Value,
) -> SmpResult<()> {
    let Value::Array(keep) = retain else {
        return Err(bad_retain_keys());
    };
    let listed = |key: &str| keep.iter().any(|k| k.as_str() == Some(key));
    for (key, value) in patch {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(key) {
            return Err(bad_retain_keys());
        }
    }
    original.retain(|key, _| listed(key));
    Ok(())
}

/// A patch value stored where the original has nothing to merge with (or is replaced): objects
/// are merged into an empty object (dropping nulls, applying directives), merge lists keep their
/// items minus directive elements, other lists materialize their items.
pub(super) fn materialize(value: Value, field: &Field, ctx: Ctx<'_>) -> SmpResult<Value> {
    match value {
        Value::Object(map) => Ok(Value::Object(merge_map(Map::new(), map, ctx)?)),
        Value::Array(items) if field.merge => Ok(Value::Array(list::fresh_merge_list(items, ctx)?)),
        Value::Array(items) => items
            .into_iter()
            .map(|item| materialize_item(item, ctx))
            .collect::<SmpResult<Vec<_>>>()
            .map(Value::Array),
        other => Ok(other),
    }
}

/// An item of a list that is replaced wholesale.
pub(super) fn materialize_item(item: Value, ctx: Ctx<'_>) -> SmpResult<Value> {
    match item {
        Value::Object(map) => Ok(Value::Object(merge_map(Map::new(), map, ctx)?)),
        Value::Array(items) => items
            .into_iter()
            .map(|i| materialize_item(i, ctx))
            .collect::<SmpResult<Vec<_>>>()
            .map(Value::Array),
        other => Ok(other),
    }
}
