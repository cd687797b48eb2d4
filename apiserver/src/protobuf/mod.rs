//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) bodies <-> the JSON objects k1s works on.
//!
//! Upstream's wire format: the 4 bytes `k8s\0`, then a `runtime.Unknown` message {1 typeMeta
//! {1 apiVersion, 2 kind}, 2 raw (the object's own message), 3 contentEncoding, 4 contentType}.
//! Objects are not Rust types here: a data file (`schema.json`, made by
//! `tools/gen-proto-schema.py` from k8s-pb, k8s-openapi and the Go API types) gives every
//! message's fields (number, JSON name, type), and one codec walks it. Kubernetes' special
//! types keep their JSON forms: Time and MicroTime are RFC 3339 strings, Duration a Go duration
//! string, Quantity a string, IntOrString a number or string, RawExtension / FieldsV1 /
//! apiextensions JSON embedded JSON, bytes base64, Verbs and ExtraValue arrays.
//!
//! Watch streams use upstream's framing: a 4-byte big-endian length, then a bare
//! `meta.v1.WatchEvent` message (no prefix, no Unknown) whose `object.raw` is the object encoded
//! as above (with its `k8s\0` prefix).

mod decode;
mod encode;
mod schema;
pub(crate) mod special;
mod wire;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_kinds;

use serde_json::{Map, Value};

/// The protobuf media type of the Kubernetes API.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every protobuf-encoded Kubernetes object.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a body could not be decoded or an object encoded.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    #[error("not a Kubernetes protobuf message: it does not start with the \"k8s\\0\" prefix")]
    MissingPrefix,
    #[error("truncated message")]
    Truncated,
    #[error("malformed message: {0}")]
    Malformed(String),
    #[error("field {tag} of {message} has wire type {actual}, expected {expected}")]
    WireType {
        message: String,
        tag: u32,
        actual: u8,
        expected: u8,
    },
    #[error("message nested too deeply")]
    TooDeep,
    #[error("protobuf body has no {0}")]
    MissingTypeMeta(&'static str),
    #[error("unsupported protobuf {what} {value:?}")]
    Unsupported { what: &'static str, value: String },
    #[error("unknown kind {api_version} {kind}")]
    UnknownKind { api_version: String, kind: String },
    #[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
    Json { path: String, message: String },
    #[error("protobuf schema: {0}")]
    Schema(String),
}

impl ProtobufError {
    /// Prefixes the JSON path of an encoding error with a property name.
    fn at(self, key: &str) -> Self {
        match self {
            ProtobufError::Json { path, message } if path.is_empty() || path.starts_with('[') => {
                ProtobufError::Json {
                    path: format!("{key}{path}"),
                    message,
                }
            }
            ProtobufError::Json { path, message } => ProtobufError::Json {
                path: format!("{key}.{path}"),
                message,
            },
            other => other,
        }
    }

    /// Prefixes the JSON path of an encoding error with a list index.
    fn at_index(self, i: usize) -> Self {
        match self {
            ProtobufError::Json { path, message } if path.is_empty() || path.starts_with('[') => {
                ProtobufError::Json {
                    path: format!("[{i}]{path}"),
                    message,
                }
            }
            ProtobufError::Json { path, message } => ProtobufError::Json {
                path: format!("[{i}].{path}"),
                message,
            },
            other => other,
        }
    }
}

/// Whether objects of this apiVersion and kind have a protobuf encoding (built-in kinds, their
/// lists, and meta kinds such as Status and DeleteOptions; not custom resources or Table).
pub fn supports(api_version: &str, kind: &str) -> bool {
    schema::schema().is_ok_and(|s| s.kind(api_version, kind).is_some())
}

/// Decodes a protobuf request body (`k8s\0` + runtime.Unknown) to the object's JSON, with
/// `apiVersion` and `kind` set from the envelope.
pub fn decode_object(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_envelope(body, 0)
}

/// The bytes of a length-delimited field of runtime.Unknown or its TypeMeta.
fn unknown(tag: u32, v: wire::Value<'_>) -> Result<&[u8], ProtobufError> {
    match v {
        wire::Value::Len(b) => Ok(b),
        other => Err(ProtobufError::WireType {
            message: "k8s.io.apimachinery.pkg.runtime.Unknown".into(),
            tag,
            actual: other.wire_type(),
            expected: wire::LEN,
        }),
    }
}

fn decode_envelope(body: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    let rest = body
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtobufError::MissingPrefix)?;
    let (mut api_version, mut kind) = (String::new(), String::new());
    let mut raw: &[u8] = &[];
    let mut reader = wire::Reader::new(rest);
    while let Some((tag, v)) = reader.next_field()? {
        match tag {
            1 => {
                let mut tm = wire::Reader::new(unknown(tag, v)?);
                while let Some((t, v)) = tm.next_field()? {
                    let text = || -> Result<String, ProtobufError> {
                        Ok(String::from_utf8_lossy(unknown(t, v)?).into_owned())
                    };
                    match t {
                        1 => api_version = text()?,
                        2 => kind = text()?,
                        _ => {}
                    }
                }
            }
            2 => raw = unknown(tag, v)?,
            3 | 4 => {
                let value = String::from_utf8_lossy(unknown(tag, v)?).into_owned();
                let ok = value.is_empty() || (tag == 4 && value == MEDIA_TYPE);
                if !ok {
                    let what = if tag == 3 {
                        "contentEncoding"
                    } else {
                        "contentType"
                    };
                    return Err(ProtobufError::Unsupported { what, value });
                }
            }
            _ => {}
        }
    }
    if kind.is_empty() {
        return Err(ProtobufError::MissingTypeMeta("kind"));
    }
    if api_version.is_empty() {
        return Err(ProtobufError::MissingTypeMeta("apiVersion"));
    }
    let s = schema::schema()?;
    let id = s
        .kind(&api_version, &kind)
        .ok_or_else(|| ProtobufError::UnknownKind {
            api_version: api_version.clone(),
            kind: kind.clone(),
        })?;
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    decode::fields_into(s, id, raw, depth, &mut obj)?;
    Ok(Value::Object(obj))
}

/// Encodes an object (a kind, a `<Kind>List`, Status, ...) as a protobuf body, envelope
/// included. Its `apiVersion` and `kind` pick the message.
pub fn encode_object(obj: &Value) -> Result<Vec<u8>, ProtobufError> {
    let map = obj.as_object().ok_or_else(|| ProtobufError::Json {
        path: String::new(),
        message: "expected an object".into(),
    })?;
    let text = |key: &'static str| match map.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.as_str()),
        _ => Err(ProtobufError::MissingTypeMeta(key)),
    };
    let (api_version, kind) = (text("apiVersion")?, text("kind")?);
    let s = schema::schema()?;
    let id = s
        .kind(api_version, kind)
        .ok_or_else(|| ProtobufError::UnknownKind {
            api_version: api_version.into(),
            kind: kind.into(),
        })?;
    let mut buf = Vec::with_capacity(512);
    buf.extend_from_slice(MAGIC);
    // runtime.Unknown, written as Go writes it: typeMeta, raw, and the two empty strings.
    let tm = wire::begin_len(&mut buf, 1);
    wire::put_bytes(&mut buf, 1, api_version.as_bytes());
    wire::put_bytes(&mut buf, 2, kind.as_bytes());
    wire::end_len(&mut buf, tm);
    let raw = wire::begin_len(&mut buf, 2);
    encode::fields(s, id, map, &mut buf, 0)?;
    wire::end_len(&mut buf, raw);
    wire::put_bytes(&mut buf, 3, b"");
    wire::put_bytes(&mut buf, 4, b"");
    Ok(buf)
}

/// One frame of a protobuf watch stream: a 4-byte big-endian length, then a `meta.v1.WatchEvent`
/// {1 type, 2 object: RawExtension {1 raw: the `k8s\0`-prefixed protobuf object}}.
pub fn encode_watch_event(event_type: &str, obj: &Value) -> Result<Vec<u8>, ProtobufError> {
    let object = encode_object(obj)?;
    let mut buf = Vec::with_capacity(object.len() + 32);
    buf.extend_from_slice(&[0; 4]);
    wire::put_bytes(&mut buf, 1, event_type.as_bytes());
    let raw = wire::begin_len(&mut buf, 2);
    wire::put_bytes(&mut buf, 1, &object);
    wire::end_len(&mut buf, raw);
    let len = u32::try_from(buf.len() - 4).map_err(|_| ProtobufError::Json {
        path: String::new(),
        message: "watch event larger than 4 GiB".into(),
    })?;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf)
}

/// Decodes one watch frame (as [`encode_watch_event`] writes it) to (event type, object);
/// for clients of protobuf watches and tests.
pub fn decode_watch_event(frame: &[u8]) -> Result<(String, Value), ProtobufError> {
    let (len, rest) = frame
        .split_first_chunk::<4>()
        .ok_or(ProtobufError::Truncated)?;
    let len = u32::from_be_bytes(*len) as usize;
    let body = rest.get(..len).ok_or(ProtobufError::Truncated)?;
    let (mut event_type, mut object) = (String::new(), None);
    let mut r = wire::Reader::new(body);
    while let Some((tag, v)) = r.next_field()? {
        let wire::Value::Len(b) = v else {
            return Err(ProtobufError::WireType {
                message: "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent".into(),
                tag,
                actual: v.wire_type(),
                expected: wire::LEN,
            });
        };
        match tag {
            1 => event_type = String::from_utf8_lossy(b).into_owned(),
            2 => {
                let mut raw = wire::Reader::new(b);
                while let Some((t, v)) = raw.next_field()? {
                    if let (1, wire::Value::Len(obj)) = (t, v) {
                        object = Some(decode_envelope(obj, 1)?);
                    }
                }
            }
            _ => {}
        }
    }
    let object = object.ok_or(ProtobufError::MissingTypeMeta("object"))?;
    Ok((event_type, object))
}
