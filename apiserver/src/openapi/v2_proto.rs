//! The Swagger 2.0 document in gnostic's protobuf form (`openapi.v2.Document`), which is the
//! only form client-go's `OpenAPISchema()` accepts (kubectl 1.27 and 1.28 `apply`, `kubectl
//! explain --output=plaintext-openapiv2`). Served for `Accept:
//! application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (see [`V2Format::negotiate`]).
//!
//! A hand-written encoder for the subset of gnostic's OpenAPIv2.proto the document uses; field
//! numbers are that file's. Vendor extensions travel as `Any{yaml}`, and JSON is YAML.

use serde_json::{Map, Value};

/// The content type upstream answers protobuf requests with (client-go asks for the older
/// spelling with `@v1.0`; both are accepted by [`V2Format::negotiate`]).
pub const V2_PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

const PROTOBUF_SUBTYPES: [&str; 2] = [
    "com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// The two forms `/openapi/v2` is served in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum V2Format {
    Json,
    Protobuf,
}

impl V2Format {
    /// The `Content-Type` of the answer.
    pub fn content_type(self) -> &'static str {
        match self {
            V2Format::Json => "application/json",
            V2Format::Protobuf => V2_PROTOBUF_CONTENT_TYPE,
        }
    }

    /// Picks the form for an `Accept` header as kube-openapi does: clauses by quality, then
    /// specificity; the first that matches JSON or protobuf wins; no header means `*/*` (JSON).
    /// `None`: nothing acceptable, answer 406.
    pub fn negotiate(accept: Option<&str>) -> Option<V2Format> {
        let accept = accept
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .unwrap_or("*/*");
        let mut clauses: Vec<(f32, u8, &str, &str)> = accept
            .split(',')
            .filter_map(|clause| {
                let mut parts = clause.split(';');
                let (ty, sub) = parts.next()?.trim().split_once('/')?;
                let q = parts
                    .filter_map(|p| p.trim().strip_prefix("q="))
                    .find_map(|q| q.trim().parse::<f32>().ok())
                    .unwrap_or(1.0);
                let specificity = u8::from(ty != "*") + u8::from(sub != "*");
                (q > 0.0).then_some((q, specificity, ty.trim(), sub.trim()))
            })
            .collect();
        // Stable: equal clauses keep the client's order.
        clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        clauses.into_iter().find_map(|(_, _, ty, sub)| {
            if ty != "application" && ty != "*" {
                None
            } else if sub == "*" || sub == "json" {
                Some(V2Format::Json)
            } else if PROTOBUF_SUBTYPES.contains(&sub) {
                Some(V2Format::Protobuf)
            } else {
                None
            }
        })
    }
}

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.key(field, 2);
        self.varint(data.len() as u64);
        self.0.extend_from_slice(data);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn opt_str(&mut self, field: u32, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str) {
            self.string(field, s);
        }
    }

    fn strings(&mut self, field: u32, v: Option<&Value>) {
        for s in v
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            // Repeated strings keep empty entries.
            self.bytes(field, s.as_bytes());
        }
    }

    fn boolean(&mut self, field: u32, v: Option<&Value>) {
        if v.and_then(Value::as_bool) == Some(true) {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_i64).filter(|n| *n != 0) {
            self.key(field, 0);
            // Two's complement for negatives, as protobuf's int64 does.
            self.varint(n as u64);
        }
    }

    fn double(&mut self, field: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_f64).filter(|n| *n != 0.0) {
            self.key(field, 1);
            self.0.extend_from_slice(&n.to_le_bytes());
        }
    }

    fn msg(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    fn build(f: impl FnOnce(&mut Msg)) -> Msg {
        let mut m = Msg::default();
        f(&mut m);
        m
    }
}

/// Encodes the whole Swagger 2.0 document.
pub(super) fn encode(doc: &Value) -> Vec<u8> {
    let Some(doc) = doc.as_object() else {
        return Vec::new();
    };
    let mut m = Msg::default();
    m.opt_str(1, doc.get("swagger"));
    if let Some(info) = doc.get("info") {
        m.msg(
            2,
            Msg::build(|i| {
                i.opt_str(1, info.get("title"));
                i.opt_str(2, info.get("version"));
                i.opt_str(3, info.get("description"));
            }),
        );
    }
    if let Some(Value::Object(paths)) = doc.get("paths") {
        m.msg(
            8,
            Msg::build(|p| {
                for (path, item) in paths {
                    p.msg(2, named(path, path_item(item)));
                }
            }),
        );
    }
    if let Some(Value::Object(defs)) = doc.get("definitions") {
        m.msg(
            9,
            Msg::build(|d| {
                for (name, schema) in defs {
                    d.msg(1, named(name, encode_schema(schema)));
                }
            }),
        );
    }
    for req in doc
        .get("security")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.msg(
            12,
            Msg::build(|r| {
                for (name, scopes) in req.as_object().into_iter().flatten() {
                    r.msg(1, named(name, Msg::build(|a| a.strings(1, Some(scopes)))));
                }
            }),
        );
    }
    if let Some(Value::Object(defs)) = doc.get("securityDefinitions") {
        m.msg(
            13,
            Msg::build(|s| {
                for (name, def) in defs {
                    // Only apiKey schemes are served (bearer tokens).
                    let api_key = Msg::build(|k| {
                        k.opt_str(1, def.get("type"));
                        k.opt_str(2, def.get("name"));
                        k.opt_str(3, def.get("in"));
                        k.opt_str(4, def.get("description"));
                    });
                    s.msg(1, named(name, Msg::build(|item| item.msg(2, api_key))));
                }
            }),
        );
    }
    m.0
}

/// `Named*{name = 1, value = 2}`.
fn named(name: &str, value: Msg) -> Msg {
    Msg::build(|n| {
        n.string(1, name);
        n.msg(2, value);
    })
}

/// `Any{yaml = 2}`: the value as JSON, which YAML parsers read.
fn any(v: &Value) -> Msg {
    Msg::build(|a| a.string(2, &v.to_string()))
}

fn vendor_extensions(m: &mut Msg, field: u32, obj: &Map<String, Value>) {
    for (k, v) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
        m.msg(field, named(k, any(v)));
    }
}

fn path_item(item: &Value) -> Msg {
    Msg::build(|p| {
        for (method, field) in [
            ("get", 2),
            ("put", 3),
            ("post", 4),
            ("delete", 5),
            ("options", 6),
            ("head", 7),
            ("patch", 8),
        ] {
            if let Some(op) = item.get(method) {
                p.msg(field, operation(op));
            }
        }
        for param in item
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            p.msg(9, parameter(param));
        }
        if let Some(obj) = item.as_object() {
            vendor_extensions(p, 10, obj);
        }
    })
}

fn operation(op: &Value) -> Msg {
    Msg::build(|o| {
        o.strings(1, op.get("tags"));
        o.opt_str(2, op.get("summary"));
        o.opt_str(3, op.get("description"));
        o.opt_str(5, op.get("operationId"));
        o.strings(6, op.get("produces"));
        o.strings(7, op.get("consumes"));
        for param in op
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            o.msg(8, parameter(param));
        }
        if let Some(Value::Object(responses)) = op.get("responses") {
            o.msg(
                9,
                Msg::build(|r| {
                    for (code, resp) in responses {
                        let response = Msg::build(|x| {
                            x.opt_str(1, resp.get("description"));
                            if let Some(schema) = resp.get("schema") {
                                x.msg(2, Msg::build(|item| item.msg(1, encode_schema(schema))));
                            }
                        });
                        r.msg(1, named(code, Msg::build(|v| v.msg(1, response))));
                    }
                }),
            );
        }
        o.strings(10, op.get("schemes"));
        o.boolean(11, op.get("deprecated"));
        if let Some(obj) = op.as_object() {
            vendor_extensions(o, 13, obj);
        }
    })
}

/// `ParametersItem{parameter = 1: Parameter{body_parameter = 1 | non_body_parameter = 2}}`.
fn parameter(p: &Value) -> Msg {
    let location = p.get("in").and_then(Value::as_str).unwrap_or("");
    let param = if location == "body" {
        Msg::build(|x| {
            x.msg(
                1,
                Msg::build(|b| {
                    b.opt_str(1, p.get("description"));
                    b.opt_str(2, p.get("name"));
                    b.string(3, location);
                    b.boolean(4, p.get("required"));
                    if let Some(schema) = p.get("schema") {
                        b.msg(5, encode_schema(schema));
                    }
                }),
            );
        })
    } else {
        // Query sub-schema fields sit one number higher than path/header ones from `type` on
        // (query and form data have `allowEmptyValue` = 5).
        let (sub_field, shift) = match location {
            "path" => (4, 0),
            "header" => (1, 0),
            "formData" => (2, 1),
            _ => (3, 1),
        };
        let sub = Msg::build(|s| {
            s.boolean(1, p.get("required"));
            s.string(2, location);
            s.opt_str(3, p.get("description"));
            s.opt_str(4, p.get("name"));
            s.opt_str(5 + shift, p.get("type"));
            s.opt_str(6 + shift, p.get("format"));
            s.boolean(19 + shift, p.get("uniqueItems"));
            if let Some(obj) = p.as_object() {
                vendor_extensions(s, 22 + shift, obj);
            }
        });
        Msg::build(|x| x.msg(2, Msg::build(|nb| nb.msg(sub_field, sub))))
    };
    Msg::build(|item| item.msg(1, param))
}

/// `openapi.v2.Schema`, every Swagger 2.0 schema keyword.
fn encode_schema(schema: &Value) -> Msg {
    let Some(s) = schema.as_object() else {
        return Msg::default();
    };
    Msg::build(|m| {
        m.opt_str(1, s.get("$ref"));
        m.opt_str(2, s.get("format"));
        m.opt_str(3, s.get("title"));
        m.opt_str(4, s.get("description"));
        if let Some(d) = s.get("default") {
            m.msg(5, any(d));
        }
        m.double(6, s.get("multipleOf"));
        m.double(7, s.get("maximum"));
        m.boolean(8, s.get("exclusiveMaximum"));
        m.double(9, s.get("minimum"));
        m.boolean(10, s.get("exclusiveMinimum"));
        m.int64(11, s.get("maxLength"));
        m.int64(12, s.get("minLength"));
        m.opt_str(13, s.get("pattern"));
        m.int64(14, s.get("maxItems"));
        m.int64(15, s.get("minItems"));
        m.boolean(16, s.get("uniqueItems"));
        m.int64(17, s.get("maxProperties"));
        m.int64(18, s.get("minProperties"));
        m.strings(19, s.get("required"));
        for e in s
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            m.msg(20, any(e));
        }
        match s.get("additionalProperties") {
            Some(Value::Bool(b)) => m.msg(21, Msg::build(|a| a.boolean(2, Some(&Value::Bool(*b))))),
            Some(sub @ Value::Object(_)) => m.msg(21, Msg::build(|a| a.msg(1, encode_schema(sub)))),
            _ => {}
        }
        match s.get("type") {
            Some(t @ Value::String(_)) => m.msg(22, Msg::build(|x| x.opt_str(1, Some(t)))),
            Some(ts @ Value::Array(_)) => m.msg(22, Msg::build(|x| x.strings(1, Some(ts)))),
            _ => {}
        }
        match s.get("items") {
            Some(sub @ Value::Object(_)) => m.msg(23, Msg::build(|x| x.msg(1, encode_schema(sub)))),
            Some(Value::Array(subs)) => m.msg(
                23,
                Msg::build(|x| subs.iter().for_each(|sub| x.msg(1, encode_schema(sub)))),
            ),
            _ => {}
        }
        for sub in s
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            m.msg(24, encode_schema(sub));
        }
        if let Some(Value::Object(props)) = s.get("properties") {
            m.msg(
                25,
                Msg::build(|p| {
                    for (name, sub) in props {
                        p.msg(1, named(name, encode_schema(sub)));
                    }
                }),
            );
        }
        m.opt_str(26, s.get("discriminator"));
        m.boolean(27, s.get("readOnly"));
        if let Some(e) = s.get("example") {
            m.msg(30, any(e));
        }
        vendor_extensions(m, 31, s);
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A minimal protobuf reader: (field, wire type, payload) of each field of one message.
    fn fields(mut buf: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        fn varint(buf: &mut &[u8]) -> u64 {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let b = buf[0];
                *buf = &buf[1..];
                v |= u64::from(b & 0x7f) << shift;
                if b < 0x80 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !buf.is_empty() {
            let key = varint(&mut buf);
            let (field, wire) = ((key >> 3) as u32, (key & 7) as u8);
            let payload = match wire {
                0 => varint(&mut buf).to_le_bytes().to_vec(),
                1 => {
                    let (p, rest) = buf.split_at(8);
                    buf = rest;
                    p.to_vec()
                }
                2 => {
                    let len = varint(&mut buf) as usize;
                    let (p, rest) = buf.split_at(len);
                    buf = rest;
                    p.to_vec()
                }
                other => panic!("wire type {other}"),
            };
            out.push((field, wire, payload));
        }
        out
    }

    fn get(msg: &[u8], field: u32) -> Vec<Vec<u8>> {
        fields(msg)
            .into_iter()
            .filter(|f| f.0 == field)
            .map(|f| f.2)
            .collect()
    }

    fn text(b: &[u8]) -> String {
        String::from_utf8(b.to_vec()).unwrap()
    }

    /// The `Named*` entries (name -> value bytes) of a map-like message.
    fn named_entries(msg: &[u8], field: u32) -> Vec<(String, Vec<u8>)> {
        get(msg, field)
            .iter()
            .map(|n| (text(&get(n, 1)[0]), get(n, 2).remove(0)))
            .collect()
    }

    #[test]
    fn document_round_trips_through_a_protobuf_reader() {
        let schemas = crate::openapi::schemas();
        let doc: Value = serde_json::from_slice(&schemas.v2_json()).unwrap();
        let pb = schemas.v2_protobuf();
        assert_eq!(text(&get(&pb, 1)[0]), "2.0");
        let info = &get(&pb, 2)[0];
        assert_eq!(text(&get(info, 1)[0]), "Kubernetes");

        let defs = named_entries(&get(&pb, 9)[0], 1);
        assert_eq!(defs.len(), doc["definitions"].as_object().unwrap().len());
        let pod = &defs
            .iter()
            .find(|(n, _)| n == "io.k8s.api.core.v1.Pod")
            .unwrap()
            .1;
        // type = 22: TypeItem{value = 1}
        assert_eq!(text(&get(&get(pod, 22)[0], 1)[0]), "object");
        // vendor_extension = 31: NamedAny{name, Any{yaml = 2}}
        let ext = named_entries(pod, 31);
        assert_eq!(ext[0].0, "x-kubernetes-group-version-kind");
        let yaml: Value = serde_json::from_str(&text(&get(&ext[0].1, 2)[0])).unwrap();
        assert_eq!(yaml, json!([{"group": "", "kind": "Pod", "version": "v1"}]));
        let props = named_entries(&get(pod, 25)[0], 1);
        let spec = &props.iter().find(|(n, _)| n == "spec").unwrap().1;
        assert_eq!(
            text(&get(spec, 1)[0]),
            "#/definitions/io.k8s.api.core.v1.PodSpec"
        );

        let paths = named_entries(&get(&pb, 8)[0], 2);
        assert_eq!(paths.len(), doc["paths"].as_object().unwrap().len());
        let (_, item) = paths
            .iter()
            .find(|(p, _)| p == "/api/v1/namespaces/{namespace}/pods/{name}")
            .unwrap();
        let patch = &get(item, 8)[0];
        assert_eq!(text(&get(patch, 5)[0]), "patchCoreV1NamespacedPod");
        // parameters = 8: ParametersItem{Parameter{NonBodyParameter = 2{query = 3 | path = 4}}}
        let names: Vec<String> = get(patch, 8)
            .iter()
            .filter_map(|item| {
                let param = &get(item, 1)[0];
                let non_body = get(param, 2);
                let sub = non_body.first()?;
                let (_, _, schema) = fields(sub).remove(0);
                Some(text(&get(&schema, 4)[0]))
            })
            .collect();
        assert!(names.contains(&"fieldValidation".to_owned()), "{names:?}");
        assert!(names.contains(&"namespace".to_owned()));
        let ext = named_entries(patch, 13);
        assert!(
            ext.iter()
                .any(|(n, v)| n == "x-kubernetes-action" && text(&get(v, 2)[0]) == "\"patch\"")
        );
    }

    #[test]
    fn negotiation_follows_kube_openapi() {
        let proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(V2Format::negotiate(Some(proto)), Some(V2Format::Protobuf));
        assert_eq!(V2Format::negotiate(None), Some(V2Format::Json));
        assert_eq!(
            V2Format::negotiate(Some("application/json")),
            Some(V2Format::Json)
        );
        assert_eq!(V2Format::negotiate(Some("*/*")), Some(V2Format::Json));
        assert_eq!(
            V2Format::negotiate(Some(&format!("application/json;q=0.5, {proto}"))),
            Some(V2Format::Protobuf)
        );
        assert_eq!(V2Format::negotiate(Some("text/html")), None);
        assert_eq!(V2Format::negotiate(Some("application/json;q=0")), None);
    }
}
