//! JSON -> protobuf: writes a JSON object as the message Go's gogo-protobuf encoder would write.
//!
//! Fields go out in field-number order; JSON keys that are absent or null are not written (Go
//! writes every non-pointer field, even zero; a Go reader makes the same struct either way);
//! repeated scalars are not packed (proto2, like upstream); map entries are sorted by key.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::ProtobufError;
use super::decode::MAX_DEPTH;
use super::schema::{Field, Label, Message, MsgId, Schema, Special, Type};
use super::special::{parse_duration, parse_time};
use super::wire::{self, begin_len, end_len, put_bytes, put_key, put_varint_field};

fn bad(what: impl Into<String>) -> ProtobufError {
    ProtobufError::Json {
        path: String::new(),
        message: what.into(),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn want(expected: &str, v: &Value) -> ProtobufError {
    bad(format!("expected {expected}, found {}", kind_of(v)))
}

fn integer(v: &Value) -> Result<i64, ProtobufError> {
    if let Some(i) = v.as_i64() {
        return Ok(i);
    }
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
        Some(_) if v.is_u64() => Err(bad(format!("{v} does not fit an int64"))),
        _ => Err(want("an integer", v)),
    }
}

/// Writes the fields of message `id` from the JSON object `obj`.
pub(crate) fn fields(
    s: &Schema,
    id: MsgId,
    obj: &Map<String, Value>,
    buf: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    let m = s.msg(id);
    for f in &m.fields {
        if f.inline {
            // An embedded Go struct: its fields are in this same JSON object.
            if let Type::Message(inner) = f.ty {
                let start = begin_len(buf, f.tag);
                fields(s, inner, obj, buf, depth + 1)?;
                end_len(buf, start);
            }
            continue;
        }
        let Some(v) = obj.get(&f.json) else { continue };
        if v.is_null() {
            continue;
        }
        field(s, f, v, buf, depth).map_err(|e| e.at(&f.json))?;
    }
    Ok(())
}

fn field(
    s: &Schema,
    f: &Field,
    v: &Value,
    buf: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtobufError> {
    match f.label {
        Label::Single => value(s, f.tag, f.ty, v, buf, depth, false),
        Label::Repeated => {
            let list = v.as_array().ok_or_else(|| want("an array", v))?;
            for (i, item) in list.iter().enumerate() {
                value(s, f.tag, f.ty, item, buf, depth, true).map_err(|e| e.at_index(i))?;
            }
            Ok(())
        }
        Label::Map => {
            let map = v.as_object().ok_or_else(|| want("an object", v))?;
            // Go sorts map keys (byte order) before writing them.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for key in keys {
                let item = &map[key];
                let start = begin_len(buf, f.tag);
                put_bytes(buf, 1, key.as_bytes());
                value(s, 2, f.ty, item, buf, depth, true).map_err(|e| e.at(key))?;
                end_len(buf, start);
            }
            Ok(())
        }
    }
}

/// Writes one value as field `tag`. `always` (list items, map values) writes a null as the
/// type's zero value instead of leaving the field out.
fn value(
    s: &Schema,
    tag: u32,
    ty: Type,
    v: &Value,
    buf: &mut Vec<u8>,
    depth: usize,
    always: bool,
) -> Result<(), ProtobufError> {
    let null = v.is_null();
    match ty {
        Type::String => {
            let text = if null {
                ""
            } else {
                v.as_str().ok_or_else(|| want("a string", v))?
            };
            put_bytes(buf, tag, text.as_bytes());
        }
        Type::Bytes => {
            let text = if null {
                ""
            } else {
                v.as_str().ok_or_else(|| want("a string", v))?
            };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
                .map_err(|e| bad(format!("invalid base64: {e}")))?;
            put_bytes(buf, tag, &bytes);
        }
        Type::Int32 => {
            let n = if null { 0 } else { integer(v)? };
            let n = i32::try_from(n).map_err(|_| bad(format!("{n} does not fit an int32")))?;
            // Go sign-extends a negative int32 to 64 bits (ten bytes).
            put_varint_field(buf, tag, i64::from(n) as u64);
        }
        Type::Int64 => {
            let n = if null { 0 } else { integer(v)? };
            put_varint_field(buf, tag, n as u64);
        }
        Type::Bool => {
            let b = if null {
                false
            } else {
                v.as_bool().ok_or_else(|| want("a bool", v))?
            };
            put_varint_field(buf, tag, u64::from(b));
        }
        Type::Double => {
            let d = if null {
                0.0
            } else {
                v.as_f64().ok_or_else(|| want("a number", v))?
            };
            put_key(buf, tag, wire::FIXED64);
            buf.extend_from_slice(&d.to_le_bytes());
        }
        Type::Message(id) => {
            if depth + 1 > MAX_DEPTH {
                return Err(ProtobufError::TooDeep);
            }
            let m = s.msg(id);
            if null && !always {
                return Ok(());
            }
            let start = begin_len(buf, tag);
            if m.special != Special::None {
                special(s, m, v, buf, depth + 1)?;
            } else if !null {
                let obj = v.as_object().ok_or_else(|| want("an object", v))?;
                fields(s, id, obj, buf, depth + 1)?;
            }
            end_len(buf, start);
        }
    }
    Ok(())
}

fn sub(m: &Message, tag: u32) -> Result<MsgId, ProtobufError> {
    match m.field(tag).map(|f| f.ty) {
        Some(Type::Message(id)) => Ok(id),
        _ => Err(ProtobufError::Schema(format!(
            "{} has no message field {tag}",
            m.name
        ))),
    }
}

fn string_list(tag: u32, list: &[Value], buf: &mut Vec<u8>) -> Result<(), ProtobufError> {
    for (i, item) in list.iter().enumerate() {
        let text = item
            .as_str()
            .ok_or_else(|| want("a string", item).at_index(i))?;
        put_bytes(buf, tag, text.as_bytes());
    }
    Ok(())
}

/// The content of a special-type message (see [`Special`]) from its JSON form; a null writes
/// the empty message.
fn special(
    s: &Schema,
    m: &Message,
    v: &Value,
    buf: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ProtobufError> {
    if v.is_null() {
        return Ok(());
    }
    match m.special {
        Special::Time | Special::MicroTime => {
            let text = v
                .as_str()
                .ok_or_else(|| want("an RFC 3339 time string", v))?;
            let (seconds, nanos) = parse_time(text).map_err(bad)?;
            // meta.v1.Time keeps seconds only; MicroTime microseconds. Go writes both fields.
            let nanos = if m.special == Special::Time {
                0
            } else {
                nanos / 1000 * 1000
            };
            put_varint_field(buf, 1, seconds as u64);
            put_varint_field(buf, 2, i64::from(nanos) as u64);
        }
        Special::Duration => {
            let text = v.as_str().ok_or_else(|| want("a duration string", v))?;
            put_varint_field(buf, 1, parse_duration(text).map_err(bad)? as u64);
        }
        Special::Quantity => {
            let text = match v {
                Value::String(t) => t.clone(),
                Value::Number(n) => n.to_string(),
                other => return Err(want("a quantity string", other)),
            };
            put_bytes(buf, 1, text.as_bytes());
        }
        Special::IntOrString => match v {
            Value::String(t) => {
                put_varint_field(buf, 1, 1);
                put_varint_field(buf, 2, 0);
                put_bytes(buf, 3, t.as_bytes());
            }
            other => {
                let n = integer(other)?;
                let n = i32::try_from(n).map_err(|_| bad(format!("{n} does not fit an int32")))?;
                put_varint_field(buf, 1, 0);
                put_varint_field(buf, 2, i64::from(n) as u64);
                put_bytes(buf, 3, b"");
            }
        },
        Special::RawJson => {
            let raw = serde_json::to_vec(v).map_err(|e| bad(e.to_string()))?;
            put_bytes(buf, 1, &raw);
        }
        Special::SchemaOrBool => match v {
            Value::Bool(b) => put_varint_field(buf, 1, u64::from(*b)),
            Value::Object(obj) => {
                put_varint_field(buf, 1, 1);
                let start = begin_len(buf, 2);
                fields(s, sub(m, 2)?, obj, buf, depth + 1)?;
                end_len(buf, start);
            }
            other => return Err(want("a bool or an object", other)),
        },
        Special::SchemaOrArray => match v {
            Value::Object(obj) => {
                let start = begin_len(buf, 1);
                fields(s, sub(m, 1)?, obj, buf, depth + 1)?;
                end_len(buf, start);
            }
            Value::Array(list) => {
                let id = sub(m, 2)?;
                for (i, item) in list.iter().enumerate() {
                    let obj = item
                        .as_object()
                        .ok_or_else(|| want("an object", item).at_index(i))?;
                    let start = begin_len(buf, 2);
                    fields(s, id, obj, buf, depth + 1).map_err(|e| e.at_index(i))?;
                    end_len(buf, start);
                }
            }
            other => return Err(want("an object or an array", other)),
        },
        Special::SchemaOrStringArray => match v {
            Value::Object(obj) => {
                let start = begin_len(buf, 1);
                fields(s, sub(m, 1)?, obj, buf, depth + 1)?;
                end_len(buf, start);
            }
            Value::Array(list) => string_list(2, list, buf)?,
            other => return Err(want("an object or an array of strings", other)),
        },
        Special::StringList => {
            string_list(
                1,
                v.as_array().ok_or_else(|| want("an array of strings", v))?,
                buf,
            )?;
        }
        Special::None => {}
    }
    Ok(())
}
