//! Walks the definitions for the write path: a field's patch metadata (for strategic merge
//! patch) and the fields an object has that its schema does not declare (`fieldValidation`).

use serde_json::{Map, Value};

use super::defs::{LazyDefinitions as Definitions, ref_name};
use crate::patch::FieldPatchMeta;

/// Patch metadata of `field` of the definition `type_name`; `None` if either is unknown.
pub(super) fn field_meta(
    defs: &Definitions,
    type_name: &str,
    field: &str,
) -> Option<FieldPatchMeta> {
    let prop = defs
        .get(type_name)?
        .get("properties")?
        .get(field)?
        .as_object()?;
    let text = |key: &str| prop.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(FieldPatchMeta {
        strategies: text("x-kubernetes-patch-strategy")
            .map(|s| s.split(',').map(|p| p.trim().to_owned()).collect())
            .unwrap_or_default(),
        merge_key: text("x-kubernetes-patch-merge-key"),
        list_type: text("x-kubernetes-list-type"),
        value_type: value_type(prop).map(str::to_owned),
    })
}

/// The object type a property holds: its `$ref`, or that of its array items or map values
/// (one level of nesting each way, e.g. a map of lists).
fn value_type(prop: &Map<String, Value>) -> Option<&str> {
    if let Some(name) = ref_name(prop) {
        return Some(name);
    }
    ["items", "additionalProperties"]
        .iter()
        .filter_map(|k| prop.get(*k).and_then(Value::as_object))
        .find_map(|inner| ref_name(inner).or_else(|| value_type_shallow(inner)))
}

fn value_type_shallow(schema: &Map<String, Value>) -> Option<&str> {
    ["items", "additionalProperties"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_object))
        .find_map(ref_name)
}

/// One step of a path into a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// An unknown field: where it is, as steps and as text.
type Found = (Vec<OwnedSeg>, String);

#[derive(Clone, Debug, PartialEq, Eq)]
enum OwnedSeg {
    Key(String),
    Index(usize),
}

/// Paths (`spec.containers[0].bogus`, the form upstream puts in `unknown field "..."`) of the
/// fields in `obj` that the definition `type_name` does not declare. An unknown definition
/// yields nothing (nothing to judge against).
pub(super) fn unknown_fields(defs: &Definitions, type_name: &str, obj: &Value) -> Vec<String> {
    find(defs, type_name, obj)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

/// Removes the fields [`unknown_fields`] reports (as upstream's typed decoding drops them) and
/// returns their paths. Walks the steps, so map keys with dots (`example.com/x`) are no problem.
pub(super) fn prune_unknown_fields(
    defs: &Definitions,
    type_name: &str,
    obj: &mut Value,
) -> Vec<String> {
    let found = find(defs, type_name, obj);
    for (steps, _) in &found {
        let Some((OwnedSeg::Key(last), parents)) = steps.split_last() else {
            continue;
        };
        let mut cur = Some(&mut *obj);
        for step in parents {
            cur = cur.and_then(|v| match step {
                OwnedSeg::Key(k) => v.get_mut(k.as_str()),
                OwnedSeg::Index(i) => v.get_mut(*i),
            });
        }
        if let Some(Value::Object(map)) = cur {
            map.remove(last.as_str());
        }
    }
    found.into_iter().map(|(_, text)| text).collect()
}

fn find(defs: &Definitions, type_name: &str, obj: &Value) -> Vec<Found> {
    let mut found = Vec::new();
    if let Some(Value::Object(schema)) = defs.get(type_name) {
        walk(defs, schema, obj, &mut Vec::new(), &mut found);
    }
    found
}

fn owned(path: &[Seg<'_>]) -> Found {
    let mut text = String::new();
    let steps = path
        .iter()
        .map(|seg| match *seg {
            Seg::Key(k) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(k);
                OwnedSeg::Key(k.to_owned())
            }
            Seg::Index(i) => {
                text.push_str(&format!("[{i}]"));
                OwnedSeg::Index(i)
            }
        })
        .collect();
    (steps, text)
}

/// Deeper than any built-in type nests; stops a self-referencing schema (JSONSchemaProps) fed
/// a hostile document from recursing without end.
const MAX_DEPTH: usize = 64;

fn walk<'v>(
    defs: &Definitions,
    schema: &Map<String, Value>,
    value: &'v Value,
    path: &mut Vec<Seg<'v>>,
    found: &mut Vec<Found>,
) {
    let Some(schema) = resolve(defs, schema) else {
        return;
    };
    if path.len() > MAX_DEPTH || is_free_form(schema) {
        return;
    }
    match value {
        Value::Object(obj) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let extra = schema
                .get("additionalProperties")
                .and_then(Value::as_object);
            if props.is_none() && extra.is_none() {
                // `type: object` with no declared shape (RawExtension, FieldsV1): anything goes.
                return;
            }
            for (key, child) in obj {
                let sub = props
                    .and_then(|p| p.get(key))
                    .and_then(Value::as_object)
                    .or(extra);
                path.push(Seg::Key(key));
                match sub {
                    Some(sub) => walk(defs, sub, child, path, found),
                    None => found.push(owned(path)),
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.get("items").and_then(Value::as_object) else {
                return;
            };
            for (i, child) in items.iter().enumerate() {
                path.push(Seg::Index(i));
                walk(defs, item_schema, child, path, found);
                path.pop();
            }
        }
        // Scalars have no fields; a type mismatch is validation's business, not this walk's.
        _ => {}
    }
}

/// Follows `$ref`s (and a single-`allOf` wrapper) to the schema that declares the shape.
fn resolve<'a>(
    defs: &'a Definitions,
    mut schema: &'a Map<String, Value>,
) -> Option<&'a Map<String, Value>> {
    for _ in 0..8 {
        if let Some(name) = ref_name(schema) {
            schema = defs.get(name)?.as_object()?;
            continue;
        }
        match schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([only]) => schema = only.as_object()?,
            _ => return Some(schema),
        }
    }
    None
}

/// Schemas whose content is not described: preserved unknown fields, int-or-string, and
/// untyped values (k8s-openapi's `JSON`).
fn is_free_form(schema: &Map<String, Value>) -> bool {
    let flag = |k: &str| schema.get(k).and_then(Value::as_bool) == Some(true);
    flag("x-kubernetes-preserve-unknown-fields")
        || flag("x-kubernetes-int-or-string")
        || (!schema.contains_key("type")
            && !schema.contains_key("properties")
            && !schema.contains_key("additionalProperties")
            && !schema.contains_key("items"))
}
