//! Protobuf -> JSON: a message's bytes to the JSON Kubernetes serves for it.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::ProtobufError;
use super::schema::{Field, Label, Message, MsgId, Schema, Special, Type};
use super::special::{format_duration, format_time};
use super::wire::{self, Reader};

/// Deepest message nesting accepted (JSONSchemaProps are recursive; input is untrusted).
pub(crate) const MAX_DEPTH: usize = 100;

fn wire_error(m: &Message, tag: u32, actual: u8, expected: u8) -> ProtobufError {
    ProtobufError::WireType {
        message: m.name.clone(),
        tag,
        actual,
        expected,
    }
}

fn expect_len<'a>(m: &Message, tag: u32, v: wire::Value<'a>) -> Result<&'a [u8], ProtobufError> {
    match v {
        wire::Value::Len(b) => Ok(b),
        other => Err(wire_error(m, tag, other.wire_type(), wire::LEN)),
    }
}

fn expect_varint(m: &Message, tag: u32, v: wire::Value<'_>) -> Result<u64, ProtobufError> {
    match v {
        wire::Value::Varint(n) => Ok(n),
        other => Err(wire_error(m, tag, other.wire_type(), wire::VARINT)),
    }
}

fn text(b: &[u8]) -> String {
    // Go does not check UTF-8 in proto2 strings; its JSON encoder replaces bad bytes likewise.
    String::from_utf8_lossy(b).into_owned()
}

fn double(m: &Message, tag: u32, bits: u64) -> Result<Value, ProtobufError> {
    let f = f64::from_bits(bits);
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        // Go's JSON encoder writes 1.0 as 1.
        return Ok(Value::from(f as i64));
    }
    Number::from_f64(f).map(Value::Number).ok_or_else(|| {
        ProtobufError::Malformed(format!("field {tag} of {} is not a finite number", m.name))
    })
}

/// One value of a scalar field (for packed repeated fields, call once per element).
fn scalar(m: &Message, f: &Field, v: wire::Value<'_>) -> Result<Value, ProtobufError> {
    Ok(match f.ty {
        // Go's int32(uint64) keeps the low 32 bits, as a negative int32 is sign-extended.
        Type::Int32 => Value::from(expect_varint(m, f.tag, v)? as i32),
        Type::Int64 => Value::from(expect_varint(m, f.tag, v)? as i64),
        Type::Bool => Value::Bool(expect_varint(m, f.tag, v)? != 0),
        Type::Double => match v {
            wire::Value::Fixed64(bits) => double(m, f.tag, bits)?,
            other => return Err(wire_error(m, f.tag, other.wire_type(), wire::FIXED64)),
        },
        Type::String => Value::String(text(expect_len(m, f.tag, v)?)),
        Type::Bytes => Value::String(
            base64::engine::general_purpose::STANDARD.encode(expect_len(m, f.tag, v)?),
        ),
        Type::Message(_) => return Err(ProtobufError::Malformed("not a scalar".into())),
    })
}

/// The JSON of field `f`'s value `v`; `None` when the value has no JSON form (a zero time).
fn value(
    s: &Schema,
    m: &Message,
    f: &Field,
    v: wire::Value<'_>,
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    match f.ty {
        Type::Message(id) => message(s, id, expect_len(m, f.tag, v)?, depth + 1),
        _ => scalar(m, f, v).map(Some),
    }
}

fn is_zero(v: &Value, special: Special) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty() || (special == Special::Duration && s == "0s"),
        Value::Array(_) | Value::Object(_) => false,
    }
}

/// Decodes a message to its JSON form: an object, or a special type's string/number/array.
pub(crate) fn message(
    s: &Schema,
    id: MsgId,
    bytes: &[u8],
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let m = s.msg(id);
    if m.special != Special::None {
        return special(s, m, bytes, depth);
    }
    let mut obj = Map::new();
    fields_into(s, id, bytes, depth, &mut obj)?;
    Ok(Some(Value::Object(obj)))
}

/// Decodes the fields of a message into `obj` (inline fields add theirs to the same object).
pub(crate) fn fields_into(
    s: &Schema,
    id: MsgId,
    bytes: &[u8],
    depth: usize,
    obj: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let m = s.msg(id);
    let mut r = Reader::new(bytes);
    while let Some((tag, v)) = r.next_field()? {
        let Some(f) = m.field(tag) else { continue };
        if f.inline {
            let Type::Message(inner) = f.ty else { continue };
            fields_into(s, inner, expect_len(m, tag, v)?, depth + 1, obj)?;
            continue;
        }
        match f.label {
            Label::Single => match value(s, m, f, v, depth)? {
                Some(val) => {
                    let special = match f.ty {
                        Type::Message(i) => s.msg(i).special,
                        _ => Special::None,
                    };
                    let plain_message =
                        matches!(f.ty, Type::Message(_)) && special == Special::None;
                    if f.omit_zero && !plain_message && is_zero(&val, special) {
                        obj.remove(&f.json);
                    } else {
                        obj.insert(f.json.clone(), val);
                    }
                }
                None => {
                    obj.remove(&f.json);
                }
            },
            Label::Repeated => {
                let list = obj
                    .entry(f.json.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(list) = list else {
                    return Err(ProtobufError::Malformed(format!(
                        "{} is not a list",
                        f.json
                    )));
                };
                let packable =
                    matches!(f.ty, Type::Int32 | Type::Int64 | Type::Bool | Type::Double);
                match v {
                    wire::Value::Len(packed) if packable => {
                        let mut pr = Reader::new(packed);
                        while pr.remaining() > 0 {
                            let item = if f.ty == Type::Double {
                                wire::Value::Fixed64(pr.fixed64()?)
                            } else {
                                wire::Value::Varint(pr.varint()?)
                            };
                            list.push(scalar(m, f, item)?);
                        }
                    }
                    _ => list.push(value(s, m, f, v, depth)?.unwrap_or(Value::Null)),
                }
            }
            Label::Map => {
                let entry = expect_len(m, tag, v)?;
                let (key, val) = map_entry(s, m, f, entry, depth)?;
                let map = obj
                    .entry(f.json.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(map) = map else {
                    return Err(ProtobufError::Malformed(format!("{} is not a map", f.json)));
                };
                map.insert(key, val);
            }
        }
    }
    Ok(())
}

/// A map entry message: field 1 the key, field 2 the value (each zero when absent).
fn map_entry(
    s: &Schema,
    m: &Message,
    f: &Field,
    bytes: &[u8],
    depth: usize,
) -> Result<(String, Value), ProtobufError> {
    let mut key = String::new();
    let mut val = None;
    let mut r = Reader::new(bytes);
    while let Some((tag, v)) = r.next_field()? {
        match tag {
            1 => key = text(expect_len(m, f.tag, v)?),
            2 => val = Some(value(s, m, f, v, depth)?.unwrap_or(Value::Null)),
            _ => {}
        }
    }
    let val = match (val, f.ty) {
        (Some(v), _) => v,
        (None, Type::Message(id)) => message(s, id, &[], depth + 1)?.unwrap_or(Value::Null),
        (None, Type::String | Type::Bytes) => Value::String(String::new()),
        (None, Type::Bool) => Value::Bool(false),
        (None, _) => Value::from(0),
    };
    Ok((key, val))
}

/// The submessage type of field `tag` of a special message.
fn sub(m: &Message, tag: u32) -> Result<MsgId, ProtobufError> {
    match m.field(tag).map(|f| f.ty) {
        Some(Type::Message(id)) => Ok(id),
        _ => Err(ProtobufError::Schema(format!(
            "{} has no message field {tag}",
            m.name
        ))),
    }
}

/// Kubernetes types whose JSON is not an object of their fields (see [`Special`]).
fn special(
    s: &Schema,
    m: &Message,
    bytes: &[u8],
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    let (mut int1, mut int2) = (0u64, 0u64);
    let mut str1: Option<String> = None;
    let mut str3 = String::new();
    let mut raw: Option<&[u8]> = None;
    let mut msg1: Option<&[u8]> = None;
    let mut list2: Vec<&[u8]> = Vec::new();
    let mut list1: Vec<&[u8]> = Vec::new();
    let mut r = Reader::new(bytes);
    while let Some((tag, v)) = r.next_field()? {
        match (m.special, tag) {
            (Special::Time | Special::MicroTime | Special::Duration | Special::IntOrString, 1) => {
                int1 = expect_varint(m, tag, v)?;
            }
            (Special::Time | Special::MicroTime | Special::IntOrString, 2) => {
                int2 = expect_varint(m, tag, v)?;
            }
            (Special::IntOrString, 3) => str3 = text(expect_len(m, tag, v)?),
            (Special::Quantity, 1) => str1 = Some(text(expect_len(m, tag, v)?)),
            (Special::RawJson, 1) => raw = Some(expect_len(m, tag, v)?),
            // JSONSchemaPropsOrBool: 1 allows, 2 schema; the two others: 1 schema, 2 a list.
            (Special::SchemaOrBool, 1) => int1 = expect_varint(m, tag, v)?,
            (Special::SchemaOrBool, 2) => msg1 = Some(expect_len(m, tag, v)?),
            (Special::SchemaOrArray | Special::SchemaOrStringArray, 1) => {
                msg1 = Some(expect_len(m, tag, v)?);
            }
            (Special::SchemaOrArray | Special::SchemaOrStringArray, 2) => {
                list2.push(expect_len(m, tag, v)?);
            }
            (Special::StringList, 1) => list1.push(expect_len(m, tag, v)?),
            _ => {}
        }
    }
    Ok(match m.special {
        Special::Time | Special::MicroTime if bytes.is_empty() => None,
        Special::Time => Some(Value::String(format_time(int1 as i64, None)?)),
        Special::MicroTime => {
            let micros = (int2 as i32).clamp(0, 999_999_999) as u32 / 1000;
            Some(Value::String(format_time(int1 as i64, Some(micros))?))
        }
        Special::Duration => Some(Value::String(format_duration(int1 as i64))),
        Special::Quantity => Some(Value::String(str1.unwrap_or_default())),
        Special::IntOrString if int1 == 1 => Some(Value::String(str3)),
        Special::IntOrString => Some(Value::from(int2 as i32)),
        Special::RawJson => match raw {
            None | Some([]) => None,
            Some(raw) => Some(raw_json(m, raw, depth)?),
        },
        Special::SchemaOrBool => match msg1 {
            Some(b) => message(s, sub(m, 2)?, b, depth + 1)?,
            None => Some(Value::Bool(int1 != 0)),
        },
        Special::SchemaOrArray if !list2.is_empty() => {
            let id = sub(m, 2)?;
            let mut out = Vec::with_capacity(list2.len());
            for b in list2 {
                out.push(message(s, id, b, depth + 1)?.unwrap_or(Value::Null));
            }
            Some(Value::Array(out))
        }
        Special::SchemaOrStringArray if !list2.is_empty() => Some(Value::Array(
            list2.into_iter().map(|b| Value::String(text(b))).collect(),
        )),
        Special::SchemaOrArray | Special::SchemaOrStringArray => match msg1 {
            Some(b) => message(s, sub(m, 1)?, b, depth + 1)?,
            None => None,
        },
        Special::StringList => Some(Value::Array(
            list1.into_iter().map(|b| Value::String(text(b))).collect(),
        )),
        Special::None => None,
    })
}

/// The embedded object of a RawExtension (JSON, or a nested `k8s\0` protobuf object).
fn raw_json(m: &Message, raw: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    if raw.starts_with(super::MAGIC.as_slice()) {
        return super::decode_envelope(raw, depth + 1);
    }
    serde_json::from_slice(raw)
        .map_err(|e| ProtobufError::Malformed(format!("{} does not hold JSON: {e}", m.name)))
}
