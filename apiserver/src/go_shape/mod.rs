//! The fields Go's JSON encoder writes for zero values, added to objects before they are stored.
//!
//! Upstream decodes every write into its Go type and encodes what it stores and returns from
//! that struct, so a non-pointer struct field always appears (`{}`, even under `omitempty`),
//! and a zero `metav1.Time` appears as `null`. Clients and users see them: an Ingress's
//! `status: {loadBalancer: {}}`, a pod template's `metadata: {creationTimestamp: null}`, a pod
//! condition's `lastProbeTime: null`, a resourceFieldRef's `divisor: "0"`. k1s keeps objects as
//! JSON, so [`fill_zero_fields`] adds what the Go struct would have. The table is generated
//! from the protobuf schema by `tools/gen-go-shape.py`.

#[rustfmt::skip]
mod table;

use serde_json::{Map, Value};

/// What Go writes for a field, or where to look further.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fill {
    /// A non-pointer struct: `{}` when absent or null, then its own fields (a message index,
    /// [`NONE`] when it has nothing to fill).
    Struct(u16),
    /// A zero `metav1.Time` or `MicroTime`: `null`.
    Null,
    /// A zero `resource.Quantity`: `"0"`.
    ZeroQuantity,
    /// A zero `intstr.IntOrString`: `0`.
    ZeroInt,
    /// A pointer to a message: its fields when present.
    Optional(u16),
    /// A list of messages: each item's fields.
    List(u16),
    /// An embedded struct whose fields sit in the same JSON object.
    Inline(u16),
}

/// The message index of a struct with nothing to fill.
pub(crate) const NONE: u16 = u16::MAX;

/// Deeper than any Kubernetes type nests; recursive types (CRD schemas) stop here.
const MAX_DEPTH: usize = 64;

/// Adds to `obj` (a built-in kind in the version it names) the zero-valued fields Go would
/// write. Objects of kinds the table does not know (custom resources) are left as they are.
pub fn fill_zero_fields(obj: &mut Value) {
    let (Some(api_version), Some(kind)) = (
        obj.get("apiVersion").and_then(Value::as_str),
        obj.get("kind").and_then(Value::as_str),
    ) else {
        return;
    };
    let Ok(i) = table::KINDS.binary_search_by(|(v, k, _)| (*v, *k).cmp(&(api_version, kind)))
    else {
        return;
    };
    let message = table::KINDS[i].2;
    if let Value::Object(fields) = obj {
        fill_message(message, fields, 0);
    }
}

fn fill_message(message: u16, obj: &mut Map<String, Value>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let Some(fields) = table::MESSAGES.get(usize::from(message)) else {
        return;
    };
    for (name, fill) in fields.iter() {
        match *fill {
            Fill::Struct(inner) => {
                let slot = match obj.get_mut(*name) {
                    Some(v) => {
                        if v.is_null() {
                            *v = Value::Object(Map::new());
                        }
                        v
                    }
                    None => obj
                        .entry(*name)
                        .or_insert_with(|| Value::Object(Map::new())),
                };
                if let (Value::Object(o), true) = (slot, inner != NONE) {
                    fill_message(inner, o, depth + 1);
                }
            }
            Fill::Null => insert_missing(obj, name, || Value::Null),
            Fill::ZeroQuantity => insert_missing(obj, name, || Value::String("0".into())),
            Fill::ZeroInt => insert_missing(obj, name, || Value::from(0)),
            Fill::Optional(inner) => {
                if let Some(Value::Object(o)) = obj.get_mut(*name) {
                    fill_message(inner, o, depth + 1);
                }
            }
            Fill::List(inner) => {
                if let Some(Value::Array(items)) = obj.get_mut(*name) {
                    for item in items {
                        if let Value::Object(o) = item {
                            fill_message(inner, o, depth + 1);
                        }
                    }
                }
            }
            Fill::Inline(inner) => fill_message(inner, obj, depth + 1),
        }
    }
}

/// Inserts `name` when it is absent (looking up first: `entry` would allocate the key).
fn insert_missing(obj: &mut Map<String, Value>, name: &str, zero: impl FnOnce() -> Value) {
    if !obj.contains_key(name) {
        obj.insert(name.to_string(), zero());
    }
}

#[cfg(test)]
mod tests;
