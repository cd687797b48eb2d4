//! OpenAPI v2 (Swagger 2.0) for custom resources: every served version's kind and list
//! definitions and paths, merged into the built-in `/openapi/v2` document (JSON and protobuf),
//! rebuilt only when the served custom resources change. Schemas go through upstream's
//! ToStructuralOpenAPIV2 reductions, since v2 clients (kubectl's validation and explain) cannot
//! read everything v3 can say: no `allOf`/`anyOf`/`oneOf`/`not`, a `nullable` or
//! `x-kubernetes-preserve-unknown-fields` node loses its type or its properties and items.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{Value, json};

use super::served::{self, ServedVersion};
use crate::openapi::V2Format;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The merged document for one set of served versions (identified by their `Arc` addresses).
struct Merged {
    key: Vec<usize>,
    json: Bytes,
    protobuf: Option<Bytes>,
}

static MERGED: Mutex<Option<Merged>> = Mutex::new(None);

/// `/openapi/v2` in `format`: the built-in document, with the custom resources when any are
/// served.
pub fn document(format: V2Format) -> Bytes {
    let versions = served::all();
    if versions.is_empty() {
        return crate::openapi::schemas().v2(format);
    }
    let key: Vec<usize> = versions.iter().map(|v| Arc::as_ptr(v) as usize).collect();
    let mut merged = MERGED.lock().unwrap_or_else(|p| p.into_inner());
    if merged.as_ref().is_none_or(|m| m.key != key) {
        let doc = merge(&versions);
        *merged = Some(Merged {
            key,
            json: Bytes::from(serde_json::to_vec(&doc).unwrap_or_default()),
            protobuf: None,
        });
    }
    let Some(m) = merged.as_mut() else {
        return crate::openapi::schemas().v2(format);
    };
    match format {
        V2Format::Json => m.json.clone(),
        V2Format::Protobuf => {
            if m.protobuf.is_none() {
                let doc: Value = serde_json::from_slice(&m.json).unwrap_or_default();
                m.protobuf = Some(crate::openapi::v2_protobuf_of(&doc));
            }
            m.protobuf.clone().unwrap_or_default()
        }
    }
}

/// The built-in document with `versions`' definitions and paths added.
fn merge(versions: &[Arc<ServedVersion>]) -> Value {
    let mut doc: Value =
        serde_json::from_slice(&crate::openapi::schemas().v2_json()).unwrap_or_default();
    for v in versions {
        let name = super::openapi::definition_name(v.info.group, v.info.version, v.info.kind);
        let list_name = format!("{name}List");
        doc["definitions"][&name] = kind_definition(v);
        doc["definitions"][&list_name] = list_definition(v, &name);
        let (g, ver, plural) = (v.info.group, v.info.version, v.info.resource);
        let base = if v.info.namespaced {
            format!("/apis/{g}/{ver}/namespaces/{{namespace}}/{plural}")
        } else {
            format!("/apis/{g}/{ver}/{plural}")
        };
        let path_params = |named: bool| {
            let mut p = Vec::new();
            if v.info.namespaced {
                p.push(path_parameter("namespace"));
            }
            if named {
                p.push(path_parameter("name"));
            }
            Value::Array(p)
        };
        let list_kind = v.info.list_kind();
        doc["paths"][&base] = json!({
            "get": operation(v, "list", &list_kind, &list_name),
            "post": operation(v, "post", v.info.kind, &name),
            "parameters": path_params(false),
        });
        doc["paths"][format!("{base}/{{name}}")] = json!({
            "get": operation(v, "get", v.info.kind, &name),
            "put": operation(v, "put", v.info.kind, &name),
            "patch": operation(v, "patch", v.info.kind, &name),
            "delete": operation(v, "delete", v.info.kind, &name),
            "parameters": path_params(true),
        });
    }
    doc
}

fn path_parameter(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "type": "string", "uniqueItems": true})
}

fn gvk(v: &ServedVersion, kind: &str) -> Value {
    json!({"group": v.info.group, "kind": kind, "version": v.info.version})
}

fn operation(v: &ServedVersion, action: &str, kind: &str, definition: &str) -> Value {
    let query =
        |name: &str| json!({"name": name, "in": "query", "type": "string", "uniqueItems": true});
    // kubectl checks that writes accept `fieldValidation` before it sends it.
    let parameters = if matches!(action, "post" | "put" | "patch") {
        json!([
            query("dryRun"),
            query("fieldManager"),
            query("fieldValidation")
        ])
    } else {
        json!([])
    };
    let consumes = if action == "patch" {
        json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml"
        ])
    } else {
        json!(["*/*"])
    };
    json!({
        "operationId": format!("{action}{}{}", v.info.kind, v.info.version),
        "consumes": consumes,
        "produces": ["application/json", "application/yaml"],
        "schemes": ["https"],
        "parameters": parameters,
        "responses": {"200": {"description": "OK", "schema": {"$ref": format!("#/definitions/{definition}")}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(v, kind),
    })
}

/// Upstream's buildKubeNative for v2: a schema that preserves unknown fields at its root is
/// published as a bare object (kubectl would refuse unknown fields next to declared ones);
/// otherwise the reduced schema with TypeMeta, ObjectMeta and the embedded resources' fields.
fn kind_definition(v: &ServedVersion) -> Value {
    let preserved = |s: &Value| s.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    let mut s = match v.raw_schema.clone().filter(Value::is_object) {
        Some(s) if !preserved(&s) => s,
        _ => {
            return json!({"type": "object", "x-kubernetes-group-version-kind": [gvk(v, v.info.kind)]});
        }
    };
    to_v2(&mut s);
    add_embedded_fields(&mut s);
    if !s["properties"].is_object() {
        s["properties"] = json!({});
    }
    s["properties"]["apiVersion"] = json!({"type": "string", "description": API_VERSION_DOC});
    s["properties"]["kind"] = json!({"type": "string", "description": KIND_DOC});
    s["properties"]["metadata"] = object_meta_ref();
    s["x-kubernetes-group-version-kind"] = json!([gvk(v, v.info.kind)]);
    s
}

fn object_meta_ref() -> Value {
    json!({
        "$ref": format!("#/definitions/{OBJECT_META}"),
        "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    })
}

/// Upstream's addEmbeddedProperties (v2): an `x-kubernetes-embedded-resource` node that does
/// not preserve unknown fields gets `apiVersion`, `kind` (both required) and `metadata`.
fn add_embedded_fields(s: &mut Value) {
    let Some(o) = s.as_object_mut() else { return };
    if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(add_embedded_fields);
    }
    for k in ["items", "additionalProperties"] {
        if let Some(child) = o.get_mut(k).filter(|c| c.is_object()) {
            add_embedded_fields(child);
        }
    }
    let flag = |k: &str| o.get(k) == Some(&Value::Bool(true));
    if flag("x-kubernetes-preserve-unknown-fields") || !flag("x-kubernetes-embedded-resource") {
        return;
    }
    let props = o.entry("properties").or_insert_with(|| json!({}));
    props["apiVersion"] = json!({"type": "string", "description": "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"});
    props["kind"] = json!({"type": "string", "description": "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"});
    props["metadata"] = object_meta_ref();
    let required = o.entry("required").or_insert_with(|| json!([]));
    if let Some(req) = required.as_array_mut() {
        for k in ["kind", "apiVersion"] {
            if !req.iter().any(|r| r == k) {
                req.push(json!(k));
            }
        }
    }
}

fn list_definition(v: &ServedVersion, item: &str) -> Value {
    let list_kind = v.info.list_kind();
    json!({
        "description": format!("{list_kind} is a list of {}", v.info.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DOC},
            "items": {"type": "array", "items": {"$ref": format!("#/definitions/{item}")}},
            "kind": {"type": "string", "description": KIND_DOC},
            "metadata": {"$ref": format!("#/definitions/{LIST_META}")},
        },
        "x-kubernetes-group-version-kind": [gvk(v, &list_kind)],
    })
}

/// Upstream's ToStructuralOpenAPIV2 on one schema node and its children.
pub(super) fn to_v2(s: &mut Value) {
    let Some(o) = s.as_object_mut() else { return };
    for k in ["allOf", "anyOf", "oneOf", "not"] {
        o.remove(k);
    }
    let nullable = o.remove("nullable") == Some(Value::Bool(true));
    if nullable {
        o.remove("type");
        o.remove("items");
        o.remove("properties");
    }
    if o.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        o.remove("items");
        o.remove("properties");
    }
    if o.get("type").and_then(Value::as_str) == Some("array") && !o.contains_key("items") {
        o.remove("type");
    }
    // kubectl mishandles an object that preserves unknown fields: it loses its type.
    if o.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && o.get("type").and_then(Value::as_str) == Some("object")
    {
        o.remove("type");
    }
    // A nullable value of a map cannot be required either.
    if o.get("additionalProperties")
        .and_then(|a| a.get("nullable"))
        == Some(&Value::Bool(true))
    {
        o.remove("required");
    }
    if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
        // A nullable property cannot be required in v2 (null would fail the check).
        let nullable_props: Vec<String> = props
            .iter()
            .filter(|(_, p)| p.get("nullable") == Some(&Value::Bool(true)))
            .map(|(k, _)| k.clone())
            .collect();
        props.values_mut().for_each(to_v2);
        if !nullable_props.is_empty()
            && let Some(req) = o.get_mut("required").and_then(Value::as_array_mut)
        {
            req.retain(|r| {
                !r.as_str()
                    .is_some_and(|r| nullable_props.iter().any(|n| n == r))
            });
            if req.is_empty() {
                o.remove("required");
            }
        }
    }
    if let Some(items) = o.get_mut("items") {
        match items {
            Value::Array(a) => a.iter_mut().for_each(to_v2),
            other => to_v2(other),
        }
    }
    if let Some(ap) = o.get_mut("additionalProperties").filter(|a| a.is_object()) {
        to_v2(ap);
    }
}

#[cfg(test)]
mod tests {
    use super::{add_embedded_fields, to_v2};
    use serde_json::json;

    #[test]
    fn schemas_lose_what_v2_cannot_say() {
        let mut s = json!({
            "type": "object", "required": ["a", "b"],
            "properties": {
                "a": {"type": "string", "nullable": true},
                "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                      "properties": {"c": {"type": "string"}}},
                "d": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                      "x-kubernetes-int-or-string": true},
                "e": {"type": "array", "nullable": true, "items": {"type": "string"}},
            }
        });
        to_v2(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object", "required": ["b"],
                "properties": {
                    "a": {},
                    "b": {"x-kubernetes-preserve-unknown-fields": true},
                    "d": {"x-kubernetes-int-or-string": true},
                    "e": {},
                }
            })
        );
    }

    #[test]
    fn embedded_resources_get_type_and_object_meta_unless_they_preserve_unknown_fields() {
        let mut s = json!({"type": "object", "properties": {
            "t": {"type": "object", "x-kubernetes-embedded-resource": true,
                  "properties": {"spec": {"type": "object"}}},
            "p": {"type": "object", "x-kubernetes-embedded-resource": true,
                  "x-kubernetes-preserve-unknown-fields": true},
        }});
        to_v2(&mut s);
        add_embedded_fields(&mut s);
        let t = &s["properties"]["t"];
        assert_eq!(t["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            t["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(t["properties"]["kind"]["type"], "string");
        assert_eq!(
            s["properties"]["p"],
            json!({"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true})
        );
    }
}
