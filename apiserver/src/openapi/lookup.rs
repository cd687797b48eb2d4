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

/// Go's `json: cannot unmarshal ...` text for the first value of `obj` (in key order) whose JSON
/// kind the definition `type_name` does not allow, as upstream's decoder reports a body it
/// cannot decode into its Go type: `json: cannot unmarshal number into Go struct field
/// ConfigMap.data of type string`. The struct named is the innermost one holding the field; the
/// field path has the JSON names from the top, without map keys or list indices. Go decodes a
/// null into anything; the types with their own decoding (quantities, int-or-string, times)
/// get their own errors, free-form values none. `None` when nothing is found.
pub(super) fn type_mismatch(defs: &Definitions, type_name: &str, obj: &Value) -> Option<String> {
    let schema = defs.get(type_name)?.as_object()?;
    let mut at = Mismatch {
        defs,
        structure: short_name(type_name),
        fields: Vec::new(),
    };
    at.check(schema, obj)
}

/// `io.k8s.api.core.v1.Container` -> `Container`.
fn short_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
}

/// `io.k8s.api.core.v1.Container` -> `v1.Container`, as Go prints a named type.
fn go_named(definition: &str) -> String {
    let mut parts = definition.rsplit('.');
    match (parts.next(), parts.next()) {
        (Some(name), Some(package)) => format!("{package}.{name}"),
        _ => definition.to_owned(),
    }
}

/// The walk's place: the innermost struct and the JSON field names from the top.
struct Mismatch<'d> {
    defs: &'d Definitions,
    structure: &'d str,
    fields: Vec<String>,
}

impl<'d> Mismatch<'d> {
    fn check(&mut self, schema: &'d Map<String, Value>, value: &Value) -> Option<String> {
        if value.is_null() || self.fields.len() > MAX_DEPTH {
            return None;
        }
        let declared = schema;
        let (named, schema) = match ref_name(schema) {
            Some(name) => (Some(name), resolve(self.defs, schema)?),
            None => (None, schema),
        };
        // Quantity, IntOrString, Time, RawExtension, base64 bytes: their own decoding.
        let decodes_itself = (named.is_some() && schema.get("properties").is_none())
            || is_free_form(schema)
            || schema.get("format").and_then(Value::as_str) == Some("byte");
        if decodes_itself {
            return self.self_decoding_error(named.map(short_name), value);
        }
        let go_type = || self.go_type(declared);
        let fits = match schema.get("type").and_then(Value::as_str) {
            Some("string") => value.is_string(),
            Some("boolean") => value.is_boolean(),
            Some("number") => value.is_number(),
            Some("integer") => value.is_number(),
            Some("array") => value.is_array(),
            Some("object") => value.is_object(),
            _ => return None,
        };
        if !fits {
            return Some(self.message(json_kind(value), &go_type()?));
        }
        if schema.get("type").and_then(Value::as_str) == Some("integer") {
            let bits32 = schema.get("format").and_then(Value::as_str) == Some("int32");
            let whole = value
                .as_i64()
                .filter(|n| !bits32 || i32::try_from(*n).is_ok());
            return match whole {
                Some(_) => None,
                None => Some(self.message(&format!("number {value}"), &go_type()?)),
            };
        }
        match value {
            Value::Array(items) => {
                let item = schema.get("items").and_then(Value::as_object)?;
                items.iter().find_map(|v| self.check(item, v))
            }
            Value::Object(map) => {
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    let inner = named.map_or(self.structure, short_name);
                    let outer = std::mem::replace(&mut self.structure, inner);
                    let found = map.iter().find_map(|(key, v)| {
                        let prop = props.get(key).and_then(Value::as_object)?;
                        self.fields.push(key.clone());
                        let found = self.check(prop, v);
                        self.fields.pop();
                        found
                    });
                    self.structure = outer;
                    found
                } else {
                    let values = schema
                        .get("additionalProperties")
                        .and_then(Value::as_object)?;
                    map.values().find_map(|v| self.check(values, v))
                }
            }
            _ => None,
        }
    }

    /// The errors of the types with their own JSON decoding, for a value of the wrong kind.
    fn self_decoding_error(&self, name: Option<&str>, value: &Value) -> Option<String> {
        let fits_int32 = value.as_i64().is_some_and(|n| i32::try_from(n).is_ok());
        match name? {
            // ParseQuantity of the value's text.
            "Quantity" if !value.is_string() && !value.is_number() => {
                Some(k1s_apimachinery::quantity::FORMAT_ERROR.to_owned())
            }
            // Not a string: decoded as the int32 it must then be.
            "IntOrString" if !value.is_string() && !fits_int32 => {
                let kind = match value {
                    Value::Number(n) => format!("number {n}"),
                    other => json_kind(other).to_owned(),
                };
                Some(format!(
                    "json: cannot unmarshal {kind} into Go value of type int32"
                ))
            }
            // Decoded as the string it must be, then parsed.
            "Time" | "MicroTime" if !value.is_string() => Some(format!(
                "json: cannot unmarshal {} into Go value of type string",
                json_kind(value)
            )),
            _ => None,
        }
    }

    /// The Go type a schema decodes into (`None` where it cannot be named).
    fn go_type(&self, schema: &Map<String, Value>) -> Option<String> {
        if let Some(name) = ref_name(schema) {
            return Some(go_named(name));
        }
        if schema.get("format").and_then(Value::as_str) == Some("byte") {
            return Some("[]uint8".to_owned());
        }
        Some(match schema.get("type").and_then(Value::as_str)? {
            "string" => "string".to_owned(),
            "boolean" => "bool".to_owned(),
            "number" => "float64".to_owned(),
            "integer" => match schema.get("format").and_then(Value::as_str) {
                Some("int32") => "int32".to_owned(),
                _ => "int64".to_owned(),
            },
            "array" => {
                let items = schema.get("items").and_then(Value::as_object)?;
                format!("[]{}", self.go_type(items)?)
            }
            "object" => {
                let values = schema
                    .get("additionalProperties")
                    .and_then(Value::as_object)?;
                format!("map[string]{}", self.go_type(values)?)
            }
            _ => return None,
        })
    }

    fn message(&self, kind: &str, go_type: &str) -> String {
        if self.fields.is_empty() {
            return format!("json: cannot unmarshal {kind} into Go value of type {go_type}");
        }
        format!(
            "json: cannot unmarshal {kind} into Go struct field {}.{} of type {go_type}",
            self.structure,
            self.fields.join(".")
        )
    }
}

/// The word Go's decoder uses for a JSON value.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

/// Fills the required fields of `obj` that are missing or null with Go's zero value of their
/// type, as Go's decoder leaves them: `""`, `0`, `false`, an empty object (its own required
/// fields filled), an empty list, and the zero time for `metav1.Time` / `MicroTime` (which Go
/// writes as null; stored as `0001-01-01T00:00:00Z` so typed clients can read it). Returns
/// whether anything was filled.
pub(super) fn fill_required_zeros(defs: &Definitions, type_name: &str, obj: &mut Value) -> bool {
    match defs.get(type_name).and_then(Value::as_object) {
        Some(schema) => fill_zeros(defs, schema, obj, 0),
        None => false,
    }
}

fn fill_zeros(
    defs: &Definitions,
    schema: &Map<String, Value>,
    v: &mut Value,
    depth: usize,
) -> bool {
    let Some(schema) = resolve(defs, schema) else {
        return false;
    };
    if depth > MAX_DEPTH || is_free_form(schema) {
        return false;
    }
    let mut filled = false;
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if map.get(name).is_none_or(Value::is_null)
                    && let Some(zero) = props
                        .and_then(|p| p.get(name))
                        .and_then(Value::as_object)
                        .and_then(|p| zero_of(defs, p, depth + 1))
                {
                    map.insert(name.to_owned(), zero);
                    filled = true;
                }
            }
            for (k, child) in map.iter_mut() {
                let sub = props
                    .and_then(|p| p.get(k))
                    .or_else(|| schema.get("additionalProperties"))
                    .and_then(Value::as_object);
                if let Some(sub) = sub {
                    filled |= fill_zeros(defs, sub, child, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items").and_then(Value::as_object) {
                for child in items {
                    filled |= fill_zeros(defs, item, child, depth + 1);
                }
            }
        }
        _ => {}
    }
    filled
}

/// Go's zero value of a field's type, as k8s-openapi can read it back.
fn zero_of(defs: &Definitions, prop: &Map<String, Value>, depth: usize) -> Option<Value> {
    let named = ref_name(prop).map(short_name);
    match named {
        Some("Time") => return Some(Value::String("0001-01-01T00:00:00Z".into())),
        Some("MicroTime") => return Some(Value::String("0001-01-01T00:00:00.000000Z".into())),
        Some("Quantity") => return Some(Value::String("0".into())),
        Some("IntOrString") => return Some(Value::from(0)),
        _ => {}
    }
    let schema = resolve(defs, prop)?;
    if is_free_form(schema) {
        return None;
    }
    match schema.get("type").and_then(Value::as_str)? {
        "string" => Some(Value::String(String::new())),
        "integer" | "number" => Some(Value::from(0)),
        "boolean" => Some(Value::Bool(false)),
        "array" => Some(Value::Array(Vec::new())),
        "object" => {
            let mut zero = Value::Object(Map::new());
            fill_zeros(defs, schema, &mut zero, depth);
            Some(zero)
        }
        _ => None,
    }
}
