//! Content negotiation and (de)serialization: JSON, YAML and protobuf bodies in; JSON / YAML /
//! protobuf / Table / PartialObjectMetadata out, chosen by the Accept header as upstream does.

use http::HeaderMap;
use k1s_apimachinery::ApiError;
use serde_json::Value;

/// Request bodies larger than this are refused (upstream's limit for most writes is 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const PROTOBUF: &str = crate::protobuf::MEDIA_TYPE;

/// What shape a response takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// A meta.k8s.io Table of the given version (`v1` or `v1beta1`).
    Table(String),
    /// PartialObjectMetadata (or its List) of the given version.
    Metadata(String),
    /// The Kubernetes protobuf envelope (built-in kinds only).
    Protobuf,
}

impl Output {
    pub fn content_type(&self) -> &'static str {
        match self {
            Output::Yaml => YAML,
            Output::Protobuf => PROTOBUF,
            _ => JSON,
        }
    }
}

/// Picks the response shape from `Accept`, honouring order and `q` like upstream. Protobuf is
/// not served yet, so it is skipped when the client offers a fallback and refused with 406 when not.
pub fn negotiate(headers: &HeaderMap) -> Result<Output, ApiError> {
    negotiate_with(headers, true, true)
}

/// [`negotiate`] for what an endpoint can serve: without protobuf (custom resources) its offers
/// are skipped; without tables (reviews and create-only subresources, which upstream gives no
/// TableConvertor) `as=Table` offers are.
pub fn negotiate_with(
    headers: &HeaderMap,
    protobuf: bool,
    tables: bool,
) -> Result<Output, ApiError> {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.trim().is_empty() {
        return Ok(Output::Json);
    }
    let mut offers: Vec<(f32, usize, MediaRange)> = accept
        .split(',')
        .enumerate()
        .filter_map(|(i, part)| MediaRange::parse(part).map(|m| (m.q, i, m)))
        .filter(|(q, _, _)| *q > 0.0)
        .collect();
    offers.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, _, m) in offers {
        let as_kind = m.param("as");
        let group_ok = m.param("g").is_none_or(|g| g == "meta.k8s.io");
        match (m.essence.as_str(), as_kind) {
            ("application/json", Some("Table")) if group_ok && tables => {
                let v = m.param("v").unwrap_or("v1");
                if v == "v1" || v == "v1beta1" {
                    return Ok(Output::Table(v.to_string()));
                }
            }
            ("application/json", Some("PartialObjectMetadata" | "PartialObjectMetadataList"))
                if group_ok =>
            {
                let v = m.param("v").unwrap_or("v1");
                if v == "v1" || v == "v1beta1" {
                    return Ok(Output::Metadata(v.to_string()));
                }
            }
            ("application/json" | "application/*" | "*/*", None) => return Ok(Output::Json),
            ("application/yaml", None) => return Ok(Output::Yaml),
            (PROTOBUF, None) if protobuf => return Ok(Output::Protobuf),
            _ => {}
        }
    }
    if !protobuf {
        return Err(ApiError::not_acceptable(&[JSON, YAML]));
    }
    Err(ApiError::not_acceptable(&[JSON, YAML, PROTOBUF]))
}

/// One entry of an Accept header.
struct MediaRange {
    essence: String,
    params: Vec<(String, String)>,
    q: f32,
}

impl MediaRange {
    fn parse(s: &str) -> Option<MediaRange> {
        let mut parts = s.split(';');
        let essence = parts.next()?.trim().to_ascii_lowercase();
        if essence.is_empty() {
            return None;
        }
        let mut params = Vec::new();
        let mut q = 1.0;
        for p in parts {
            let (k, v) = p.split_once('=')?;
            let (k, v) = (k.trim().to_string(), v.trim().trim_matches('"').to_string());
            if k == "q" {
                q = v.parse().unwrap_or(0.0);
            } else {
                params.push((k, v));
            }
        }
        Some(MediaRange { essence, params, q })
    }

    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The media type of a request body, without parameters.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Decodes a create/update body (JSON or YAML) into a JSON object.
pub fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let ct = content_type(headers);
    let value: Value = match ct.as_str() {
        "" | JSON | "application/*" | "*/*" => serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request was in an unknown format: {e}"
            ))
        })?,
        YAML | "application/x-yaml" | "text/yaml" => decode_yaml(body)?,
        PROTOBUF => crate::protobuf::decode_object(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded as protobuf: {e}"
            ))
        })?,
        _ => return Err(ApiError::unsupported_media_type(&[JSON, YAML, PROTOBUF])),
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON or YAML object",
        ));
    }
    Ok(value)
}

/// A YAML body decoded as upstream's apply does: the last of duplicate keys wins, and the first
/// duplicate is returned as go-yaml's strict decoder words it (`line 9: key "foo" already set
/// in map`) for the `fieldValidation` check.
pub fn decode_yaml_last_key_wins(body: &[u8]) -> Result<(Value, Option<String>), ApiError> {
    use serde_saphyr::{DuplicateKeyPolicy, Error};
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the YAML body is not valid UTF-8"))?;
    let lenient = serde_saphyr::options! { duplicate_keys: DuplicateKeyPolicy::LastWins };
    let value: Value = serde_saphyr::from_str_with_options(text, lenient)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let duplicate = match serde_saphyr::from_str::<Value>(text) {
        Err(e) => match e.without_snippet() {
            Error::DuplicateMappingKey { key, location } => Some(format!(
                "line {}: key {} already set in map",
                location.line(),
                serde_json::Value::String(key.clone().unwrap_or_default())
            )),
            _ => None,
        },
        Ok(_) => None,
    };
    Ok((value, duplicate))
}

pub fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the YAML body is not valid UTF-8"))?;
    serde_saphyr::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))
}

/// Serializes a response value in the negotiated format. Kinds without a protobuf form (Table,
/// custom resources) fall back to JSON, which clients decode by the response's Content-Type.
pub fn encode(value: &Value, output: &Output) -> (Vec<u8>, &'static str) {
    if *output == Output::Protobuf {
        match crate::protobuf::encode_object(value) {
            Ok(bytes) => return (bytes, PROTOBUF),
            Err(e) => tracing::debug!(error = %e, "no protobuf form; answering JSON"),
        }
        return (serde_json::to_vec(value).unwrap_or_default(), JSON);
    }
    let bytes = match output {
        Output::Yaml => serde_saphyr::to_string(value)
            .map(String::into_bytes)
            .unwrap_or_else(|e| format!("# YAML encoding failed: {e}\n").into_bytes()),
        // Upstream's JSON encoder ends every document with a newline; clients that compare
        // bodies (the Python client's error reports) see it.
        _ => {
            let mut bytes = serde_json::to_vec(value).unwrap_or_default();
            bytes.push(b'\n');
            bytes
        }
    };
    (bytes, output.content_type())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn accept(v: &str) -> Result<Output, ApiError> {
        let mut h = HeaderMap::new();
        h.insert(http::header::ACCEPT, v.parse().unwrap());
        negotiate(&h)
    }

    #[test]
    fn negotiates_like_kubectl_expects() {
        assert_eq!(
            accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json").unwrap(),
            Output::Table("v1".into())
        );
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf, */*").unwrap(),
            Output::Protobuf
        );
        assert_eq!(
            accept("application/json, application/vnd.kubernetes.protobuf").unwrap(),
            Output::Json
        );
        assert_eq!(accept("application/yaml").unwrap(), Output::Yaml);
        assert_eq!(
            accept("application/json;q=0.5, application/yaml").unwrap(),
            Output::Yaml
        );
        assert_eq!(
            accept("application/vnd.kubernetes.protobuf").unwrap(),
            Output::Protobuf
        );
        assert_eq!(accept("text/html").unwrap_err().code, 406);
        assert_eq!(
            accept("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").unwrap(),
            Output::Metadata("v1".into())
        );
    }

    #[test]
    fn decodes_yaml_and_rejects_garbage() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            "application/yaml".parse().unwrap(),
        );
        let v = decode_object(&h, b"kind: ConfigMap\nmetadata:\n  name: x\n").unwrap();
        assert_eq!(v["metadata"]["name"], "x");
        assert_eq!(decode_object(&h, b"- a\n- b\n").unwrap_err().code, 400);
        let mut h = HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            "application/json".parse().unwrap(),
        );
        assert_eq!(decode_object(&h, b"{not json").unwrap_err().code, 400);
        h.insert(
            http::header::CONTENT_TYPE,
            "application/vnd.kubernetes.protobuf".parse().unwrap(),
        );
        assert_eq!(decode_object(&h, b"k8s\0garbage").unwrap_err().code, 400);
        h.insert(http::header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert_eq!(decode_object(&h, b"{}").unwrap_err().code, 415);
    }
}
