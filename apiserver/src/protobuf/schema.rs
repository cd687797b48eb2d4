//! The message schema (schema.json, made by tools/gen-proto-schema.py), loaded once and indexed.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::ProtobufError;

pub(crate) const SCHEMA_JSON: &str = include_str!("schema.json");

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
const APIEXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions";

/// Index of a message in [`Schema::messages`].
pub(crate) type MsgId = usize;

/// A field's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Type {
    String,
    Int32,
    Int64,
    Bool,
    Bytes,
    Double,
    Message(MsgId),
}

/// Whether a field holds one value, a list or a `map<string, T>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Label {
    Single,
    Repeated,
    Map,
}

#[derive(Debug)]
pub(crate) struct Field {
    pub tag: u32,
    /// The JSON property name ("" for an inline field).
    pub json: String,
    pub ty: Type,
    pub label: Label,
    /// Go field is a non-pointer `omitempty` one: a zero value decodes to an absent JSON key.
    pub omit_zero: bool,
    /// Go embedded struct without a JSON name: its fields sit in the parent's JSON object.
    pub inline: bool,
}

/// Messages whose JSON form is not an object of their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// meta.v1.Time: RFC 3339, seconds.
    Time,
    /// meta.v1.MicroTime: RFC 3339, microseconds.
    MicroTime,
    /// meta.v1.Duration: a Go duration string.
    Duration,
    /// resource.Quantity: a string.
    Quantity,
    /// intstr.IntOrString: a number or a string.
    IntOrString,
    /// runtime.RawExtension, meta.v1.FieldsV1, apiextensions JSON: raw JSON bytes.
    RawJson,
    /// apiextensions JSONSchemaPropsOrBool: a bool or a schema.
    SchemaOrBool,
    /// apiextensions JSONSchemaPropsOrArray: a schema or an array of schemas.
    SchemaOrArray,
    /// apiextensions JSONSchemaPropsOrStringArray: a schema or an array of strings.
    SchemaOrStringArray,
    /// meta.v1.Verbs, ExtraValue: a Go `[]string` type, a JSON array.
    StringList,
}

#[derive(Debug)]
pub(crate) struct Message {
    pub name: String,
    pub special: Special,
    /// Sorted by tag: the order Go's encoder writes them in.
    pub fields: Vec<Field>,
    /// Field number -> index in `fields`, `u16::MAX` for none.
    by_tag: Vec<u16>,
}

impl Message {
    pub(crate) fn field(&self, tag: u32) -> Option<&Field> {
        let i = *self.by_tag.get(tag as usize)?;
        self.fields.get(usize::from(i))
    }
}

#[derive(Debug)]
pub(crate) struct Schema {
    pub messages: Vec<Message>,
    /// apiVersion -> kind -> message.
    kinds: HashMap<String, HashMap<String, MsgId>>,
}

impl Schema {
    pub(crate) fn msg(&self, id: MsgId) -> &Message {
        &self.messages[id]
    }

    #[cfg(test)]
    pub(crate) fn by_name(&self, name: &str) -> Option<MsgId> {
        self.messages.iter().position(|m| m.name == name)
    }

    /// The message of a kind; meta kinds (Status, DeleteOptions, ...) under any apiVersion, as
    /// Kubernetes registers them in every group version.
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<MsgId> {
        if let Some(id) = self.kinds.get(api_version).and_then(|k| k.get(kind)) {
            return Some(*id);
        }
        self.kinds
            .get("meta.k8s.io/v1")
            .and_then(|k| k.get(kind))
            .copied()
    }

    pub(crate) fn parse(text: &str) -> Result<Schema, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let msgs = doc
            .get("messages")
            .and_then(Value::as_object)
            .ok_or("no messages")?;
        let by_name: HashMap<String, MsgId> = msgs
            .keys()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let mut messages = Vec::with_capacity(msgs.len());
        for (name, fields) in msgs {
            let package = name.rsplit_once('.').map_or("", |(p, _)| p);
            let mut out = Vec::new();
            for f in fields.as_array().ok_or("fields not an array")? {
                let bad = || format!("bad field {f} in {name}");
                let tag = f.get(0).and_then(Value::as_u64).ok_or_else(bad)?;
                let json = f.get(1).and_then(Value::as_str).ok_or_else(bad)?;
                let ty = f.get(2).and_then(Value::as_str).ok_or_else(bad)?;
                let flags = f.get(3).and_then(Value::as_str).ok_or_else(bad)?;
                let ty = match ty {
                    "string" => Type::String,
                    "int32" => Type::Int32,
                    "int64" => Type::Int64,
                    "bool" => Type::Bool,
                    "bytes" => Type::Bytes,
                    "double" => Type::Double,
                    other => {
                        let full = match other.strip_prefix('.') {
                            Some(short) => format!("{package}.{short}"),
                            None => other.to_string(),
                        };
                        Type::Message(*by_name.get(&full).ok_or_else(bad)?)
                    }
                };
                let label = if flags.contains('r') {
                    Label::Repeated
                } else if flags.contains('m') {
                    Label::Map
                } else {
                    Label::Single
                };
                out.push(Field {
                    tag: u32::try_from(tag).map_err(|_| bad())?,
                    json: json.to_string(),
                    ty,
                    label,
                    omit_zero: flags.contains('z'),
                    inline: flags.contains('i'),
                });
            }
            out.sort_by_key(|f| f.tag);
            let max = out.last().map_or(0, |f| f.tag as usize);
            if max > 10_000 {
                return Err(format!("field number {max} too large in {name}"));
            }
            let mut by_tag = vec![u16::MAX; max + 1];
            for (i, f) in out.iter().enumerate() {
                by_tag[f.tag as usize] = i as u16;
            }
            messages.push(Message {
                name: name.clone(),
                special: Special::None,
                fields: out,
                by_tag,
            });
        }
        for m in &mut messages {
            m.special = special_of(m);
        }
        let mut kinds: HashMap<String, HashMap<String, MsgId>> = HashMap::new();
        for (api_version, ks) in doc
            .get("kinds")
            .and_then(Value::as_object)
            .ok_or("no kinds")?
        {
            let entry = kinds.entry(api_version.clone()).or_default();
            for (kind, msg) in ks.as_object().ok_or("bad kinds")? {
                let msg = msg.as_str().ok_or("bad kind")?;
                let id = *by_name
                    .get(msg)
                    .ok_or_else(|| format!("unknown message {msg}"))?;
                entry.insert(kind.clone(), id);
            }
        }
        Ok(Schema { messages, kinds })
    }
}

fn special_of(m: &Message) -> Special {
    let name = m.name.as_str();
    let (package, short) = name.rsplit_once('.').unwrap_or(("", name));
    match (package, short) {
        (META, "Time") => Special::Time,
        (META, "MicroTime") => Special::MicroTime,
        (META, "Duration") => Special::Duration,
        (META, "FieldsV1") => Special::RawJson,
        ("k8s.io.apimachinery.pkg.api.resource", "Quantity" | "QuantityValue") => Special::Quantity,
        ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => Special::IntOrString,
        ("k8s.io.apimachinery.pkg.runtime", "RawExtension") => Special::RawJson,
        (p, "JSON") if p.starts_with(APIEXT) => Special::RawJson,
        (p, "JSONSchemaPropsOrBool") if p.starts_with(APIEXT) => Special::SchemaOrBool,
        (p, "JSONSchemaPropsOrArray") if p.starts_with(APIEXT) => Special::SchemaOrArray,
        (p, "JSONSchemaPropsOrStringArray") if p.starts_with(APIEXT) => {
            Special::SchemaOrStringArray
        }
        (META, "Verbs") | (_, "ExtraValue")
            if m.fields.len() == 1
                && m.fields[0].tag == 1
                && m.fields[0].ty == Type::String
                && m.fields[0].label == Label::Repeated =>
        {
            Special::StringList
        }
        _ => Special::None,
    }
}

static SCHEMA: OnceLock<Result<Schema, String>> = OnceLock::new();

/// The schema, parsed on first use.
pub(crate) fn schema() -> Result<&'static Schema, ProtobufError> {
    SCHEMA
        .get_or_init(|| Schema::parse(SCHEMA_JSON))
        .as_ref()
        .map_err(|e| ProtobufError::Schema(e.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_loads_and_knows_the_special_types() -> Result<(), ProtobufError> {
        let s = schema()?;
        let count = |sp: Special| s.messages.iter().filter(|m| m.special == sp).count();
        assert_eq!(count(Special::Time), 1);
        assert_eq!(count(Special::MicroTime), 1);
        assert_eq!(count(Special::Duration), 1);
        assert_eq!(count(Special::IntOrString), 1);
        assert_eq!(count(Special::Quantity), 2);
        // RawExtension, FieldsV1, apiextensions v1 and v1beta1 JSON.
        assert_eq!(count(Special::RawJson), 4);
        assert_eq!(count(Special::SchemaOrBool), 2);
        // Verbs and ExtraValue of authentication, authorization, certificates v1 and v1beta1.
        assert_eq!(count(Special::StringList), 7);
        let pod = s.kind("v1", "Pod").map(|id| s.msg(id).name.as_str());
        assert_eq!(pod, Some("k8s.io.api.core.v1.Pod"));
        assert!(s.kind("apps/v1", "DeploymentList").is_some());
        assert!(s.kind("apps/v1", "DeleteOptions").is_some());
        assert!(s.kind("v1", "Status").is_some());
        assert!(s.kind("meta.k8s.io/v1", "Table").is_none());
        assert!(s.kind("example.com/v1", "Widget").is_none());
        Ok(())
    }

    #[test]
    fn json_names_are_upstream_ones() -> Result<(), ProtobufError> {
        let s = schema()?;
        let names = |msg: &str| -> Vec<String> {
            s.by_name(msg)
                .map(|id| s.msg(id).fields.iter().map(|f| f.json.clone()).collect())
                .unwrap_or_default()
        };
        let pod_status = names("k8s.io.api.core.v1.PodStatus");
        for n in ["podIP", "podIPs", "hostIP", "hostIPs", "qosClass"] {
            assert!(pod_status.iter().any(|f| f == n), "{n} in {pod_status:?}");
        }
        let svc = names("k8s.io.api.core.v1.ServiceSpec");
        for n in ["clusterIP", "clusterIPs", "externalIPs", "loadBalancerIP"] {
            assert!(svc.iter().any(|f| f == n), "{n} in {svc:?}");
        }
        assert!(
            names("k8s.io.api.rbac.v1.PolicyRule")
                .iter()
                .any(|f| f == "nonResourceURLs")
        );
        assert!(
            names("k8s.io.api.admissionregistration.v1.WebhookClientConfig")
                .iter()
                .any(|f| f == "url")
        );
        let props = names(&format!("{APIEXT}.v1.JSONSchemaProps"));
        for n in [
            "$ref",
            "$schema",
            "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-int-or-string",
        ] {
            assert!(props.iter().any(|f| f == n), "{n} in {props:?}");
        }
        let vol = s.by_name("k8s.io.api.core.v1.Volume").map(|id| s.msg(id));
        assert!(vol.is_some_and(|v| v.fields.iter().any(|f| f.inline)));
        Ok(())
    }
}
