//! Strategic merge of lists: lists of objects merged by their merge key, sets of primitives,
//! `$patch` list elements (`delete`, `replace`) and `$setElementOrder/<field>`.

use serde_json::{Map, Value};

use super::order::{Ident, normalize_order, value_eq};
use super::strategic::{
    Ctx, DIRECTIVE_MARKER, Field, SmpError, SmpResult, bad_patch_type, bad_set_element_order,
    materialize, materialize_item, merge_map, no_merge_key,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

/// The one kind of all items of `a` and `b` (at least one item). Lists of lists are refused
/// with 422 and mixed kinds with 400, as upstream refuses them.
fn element_kind(a: &[Value], b: &[Value]) -> SmpResult<Kind> {
    let mut first = None;
    for item in a.iter().chain(b) {
        let kind = kind_of(item);
        match first {
            None if kind == Kind::Array => {
                return Err(SmpError::Unprocessable(
                    "lists of lists are not supported".to_string(),
                ));
            }
            None => first = Some(kind),
            Some(f) if f != kind => {
                return Err(SmpError::BadRequest(format!(
                    "list element types are not identical: {} and {}",
                    Value::Array(a.to_vec()),
                    Value::Array(b.to_vec())
                )));
            }
            Some(_) => {}
        }
    }
    Ok(first.unwrap_or(Kind::Null))
}

/// The merge-key values of `items`, each of which must have the key.
fn required_ids(items: &[Value], key: &str) -> SmpResult<Vec<Option<Value>>> {
    items
        .iter()
        .map(|item| match Ident::Key(key).of(item) {
            Some(id) => Ok(Some(id.clone())),
            None => Err(no_merge_key(item, key)),
        })
        .collect()
}

/// Merges a patch list into the original list of a field with patch strategy `merge`.
/// Primitives form a set (union, duplicates dropped); objects are matched by the merge key and
/// merged, unmatched patch items are added. The result is ordered by [`normalize_order`]: patch
/// items in patch order, new ones ahead of the server-only items they are not anchored after.
pub(super) fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &Field,
    ctx: Ctx<'_>,
) -> SmpResult<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    if element_kind(&original, &patch)? != Kind::Object {
        let server_ids = Ident::Value.all(&original);
        let patch_ids = Ident::Value.all(&patch);
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for item in original.into_iter().chain(patch) {
            if !merged.iter().any(|m| value_eq(m, &item)) {
                merged.push(item);
            }
        }
        return Ok(normalize_order(
            merged,
            &patch_ids,
            &server_ids,
            Ident::Value,
        ));
    }

    let Some(key) = field.merge_key.as_deref() else {
        return Err(SmpError::BadRequest(format!(
            "cannot merge lists without merge key for {}",
            ctx.type_name()
        )));
    };
    let ident = Ident::Key(key);
    let (original, patch) = split_special_elements(original, patch, key, ctx)?;
    let server_ids = required_ids(&original, key)?;
    let patch_ids = required_ids(&patch, key)?;

    let mut merged = original;
    for (item, id) in patch.into_iter().zip(&patch_ids) {
        let Value::Object(item) = item else {
            continue;
        };
        let found = merged.iter().position(|m| {
            id.as_ref()
                .is_some_and(|id| ident.of(m).is_some_and(|v| value_eq(v, id)))
        });
        match found {
            Some(i) => {
                if let Some(slot) = merged.get_mut(i) {
                    *slot = match std::mem::take(slot) {
                        Value::Object(current) => Value::Object(merge_map(current, item, ctx)?),
                        other => other,
                    };
                }
            }
            None => merged.push(Value::Object(merge_map(Map::new(), item, ctx)?)),
        }
    }
    Ok(normalize_order(merged, &patch_ids, &server_ids, ident))
}

/// Applies the `$patch` elements of a patch list of objects: `delete` removes every original
/// item with that merge key, `replace` makes the other patch items the whole list. Returns the
/// remaining original and the patch without directive elements.
fn split_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    ctx: Ctx<'_>,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    let mut rest = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE_MARKER) else {
            rest.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(id) = item.get(key) else {
                    return Err(no_merge_key(&item, key));
                };
                original.retain(|o| !Ident::Key(key).of(o).is_some_and(|v| value_eq(v, id)));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(SmpError::BadRequest(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ));
            }
            _ => {
                let map = item.as_object().cloned().unwrap_or_default();
                return Err(bad_patch_type(directive, &map));
            }
        }
    }
    if replace {
        let items = rest
            .into_iter()
            .map(|item| materialize_item(item, ctx))
            .collect::<SmpResult<Vec<_>>>()?;
        return Ok((items, Vec::new()));
    }
    Ok((original, rest))
}

/// A merge list stored where the original has none: directive elements are dropped (there is
/// nothing to delete from or replace), the other items materialized in patch order.
pub(super) fn fresh_merge_list(items: Vec<Value>, ctx: Ctx<'_>) -> SmpResult<Vec<Value>> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if let Some(directive) = item.get(DIRECTIVE_MARKER) {
            match directive.as_str() {
                Some("delete" | "replace") => continue,
                Some("merge") => {
                    return Err(SmpError::BadRequest(
                        "merging lists cannot yet be specified in the patch".to_string(),
                    ));
                }
                _ => {
                    let map = item.as_object().cloned().unwrap_or_default();
                    return Err(bad_patch_type(directive, &map));
                }
            }
        }
        out.push(materialize_item(item, ctx)?);
    }
    Ok(out)
}

/// `$setElementOrder/<name>: order`: merges the patch's `<name>` list (if any) into the
/// original's, then orders the result so the items named in `order` follow it, server-only items
/// keeping their places relative to them.
pub(super) fn apply_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    name: &str,
    order: Vec<Value>,
    ctx: Ctx<'_>,
) -> SmpResult<()> {
    let field = ctx.field(name);
    let child = ctx.child(&field);
    let ident = match field.merge_key.as_deref() {
        Some(key) => Ident::Key(key),
        None => Ident::Value,
    };
    let original_list = match original.get_mut(name).map(std::mem::take) {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items),
        Some(_) => {
            return Err(SmpError::BadRequest(format!(
                "{name} is not a list, so its element order cannot be set"
            )));
        }
    };
    let patch_list = match patch.remove(name) {
        None => None,
        Some(Value::Array(items)) => Some(items),
        Some(_) => return Err(bad_set_element_order()),
    };
    validate_order(patch_list.as_deref().unwrap_or_default(), &order, ident)?;

    let server_ids = match (&original_list, ident) {
        (Some(items), Ident::Key(key)) => required_ids(items, key)?,
        (Some(items), Ident::Value) => Ident::Value.all(items),
        (None, _) => Vec::new(),
    };
    let any_items = original_list.as_ref().is_some_and(|l| !l.is_empty())
        || patch_list.as_ref().is_some_and(|l| !l.is_empty());
    if any_items {
        element_kind(
            original_list.as_deref().unwrap_or_default(),
            patch_list.as_deref().unwrap_or_default(),
        )?;
    }
    let merged = match (original_list, patch_list) {
        (None, None) => return Ok(()),
        (Some(items), None) => items,
        (Some(items), Some(patch_items)) if field.merge => {
            merge_list(items, patch_items, &field, child)?
        }
        (_, Some(patch_items)) => match materialize(Value::Array(patch_items), &field, child)? {
            Value::Array(items) => items,
            _ => Vec::new(),
        },
    };

    let mut order_ids = Vec::with_capacity(order.len());
    for item in &order {
        if matches!(ident, Ident::Key(_)) && !item.is_object() {
            return Err(bad_set_element_order());
        }
        order_ids.push(ident.of(item).cloned());
    }
    let ordered = normalize_order(merged, &order_ids, &server_ids, ident);
    original.insert(name.to_string(), Value::Array(ordered));
    Ok(())
}

/// The patch list's items (ignoring `$patch` elements) must appear in `order`, in the same
/// relative order.
fn validate_order(patch_list: &[Value], order: &[Value], ident: Ident<'_>) -> SmpResult<()> {
    if patch_list.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut items = Vec::with_capacity(patch_list.len());
    for item in patch_list {
        if matches!(ident, Ident::Key(_)) {
            if !item.is_object() {
                return Err(bad_set_element_order());
            }
            if item.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        items.push(item);
    }
    let (mut p, mut o) = (0, 0);
    while let (Some(item), Some(wanted)) = (items.get(p), order.get(o)) {
        if item.get(DIRECTIVE_MARKER).is_some() {
            p += 1;
            continue;
        }
        let equal = match ident {
            Ident::Key(key) => {
                let a = item.get(key).ok_or_else(|| no_merge_key(item, key))?;
                let b = wanted.get(key).ok_or_else(|| no_merge_key(wanted, key))?;
                value_eq(a, b)
            }
            Ident::Value => value_eq(item, wanted),
        };
        if equal {
            p += 1;
        }
        o += 1;
    }
    if p < items.len() {
        return Err(SmpError::BadRequest(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}
