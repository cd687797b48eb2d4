//! OpenAPI v3 for custom resources: one document per served group/version (the kinds' schemas
//! with `x-kubernetes-group-version-kind`, ObjectMeta included), listed in the `/openapi/v3`
//! index next to the built-in documents, so `kubectl explain` works for custom resources.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::served::{self, ServedVersion};

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// `com.example.v1.Widget` for group `example.com`, version `v1`, kind `Widget`.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// ObjectMeta, ListMeta and what they reference, from the built-in core document.
fn meta_schemas() -> &'static Map<String, Value> {
    static META: OnceLock<Map<String, Value>> = OnceLock::new();
    META.get_or_init(|| {
        let Some((doc, _)) = crate::openapi::schemas().v3_document("api/v1") else {
            return Map::new();
        };
        let Ok(doc) = serde_json::from_slice::<Value>(&doc) else {
            return Map::new();
        };
        let all = doc["components"]["schemas"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut out = Map::new();
        let mut todo = vec![OBJECT_META.to_string(), LIST_META.to_string()];
        while let Some(name) = todo.pop() {
            if out.contains_key(&name) {
                continue;
            }
            let Some(s) = all.get(&name) else { continue };
            collect_refs(s, &mut todo);
            out.insert(name, s.clone());
        }
        out
    })
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(r) = o.get("$ref").and_then(Value::as_str)
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                out.push(name.to_string());
            }
            o.values().for_each(|x| collect_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

fn gvk(v: &ServedVersion, kind: &str) -> Value {
    json!([{"group": v.info.group, "kind": kind, "version": v.info.version}])
}

fn kind_schema(v: &ServedVersion) -> Value {
    let mut s = v
        .raw_schema
        .clone()
        .unwrap_or_else(|| json!({"type": "object"}));
    if !s.is_object() {
        s = json!({"type": "object"});
    }
    if !s["properties"].is_object() {
        s["properties"] = json!({});
    }
    s["properties"]["apiVersion"] = json!({"type": "string", "description": API_VERSION_DOC});
    s["properties"]["kind"] = json!({"type": "string", "description": KIND_DOC});
    s["properties"]["metadata"] = json!({
        "allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}],
        "description": METADATA_DOC,
    });
    s["x-kubernetes-group-version-kind"] = gvk(v, v.info.kind);
    s
}

fn list_schema(v: &ServedVersion, item: &str) -> Value {
    let list_kind = v.info.list_kind();
    json!({
        "description": format!("{list_kind} is a list of {}", v.info.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DOC},
            "items": {
                "type": "array",
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", v.info.resource),
                "items": {"allOf": [{"$ref": format!("#/components/schemas/{item}")}]},
            },
            "kind": {"type": "string", "description": KIND_DOC},
            "metadata": {
                "allOf": [{"$ref": format!("#/components/schemas/{LIST_META}")}],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "x-kubernetes-group-version-kind": gvk(v, &list_kind),
    })
}

/// The served custom resource group/versions, as `apis/<group>/<version>` paths.
fn documents() -> BTreeMap<String, Vec<std::sync::Arc<ServedVersion>>> {
    let mut docs: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for v in served::all() {
        docs.entry(format!("apis/{}/{}", v.info.group, v.info.version))
            .or_default()
            .push(v);
    }
    docs
}

/// The v3 document of a custom resource group/version (`apis/example.com/v1`) and its hash.
pub fn v3_document(path: &str) -> Option<(Vec<u8>, String)> {
    let versions = documents().remove(path.trim_matches('/'))?;
    let mut schemas = meta_schemas().clone();
    let mut paths = Map::new();
    for v in &versions {
        let name = definition_name(v.info.group, v.info.version, v.info.kind);
        let (g, ver, plural) = (v.info.group, v.info.version, v.info.resource);
        let base = if v.info.namespaced {
            format!("/apis/{g}/{ver}/namespaces/{{namespace}}/{plural}")
        } else {
            format!("/apis/{g}/{ver}/{plural}")
        };
        let op = |action: &str, kind: &str, schema: &str| {
            // kubectl checks that writes accept `fieldValidation` before it sends it.
            let parameters = if matches!(action, "post" | "put" | "patch") {
                json!([
                    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                ])
            } else {
                Value::Null
            };
            let mut operation = json!({
                "parameters": parameters,
                "responses": {"200": {"description": "OK", "content": {
                    "application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}},
                    "application/yaml": {"schema": {"$ref": format!("#/components/schemas/{schema}")}},
                }}},
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": {"group": g, "kind": kind, "version": ver},
            });
            // An empty list is left out, as Go's encoder leaves it (`omitempty`).
            if let Some(o) = operation
                .as_object_mut()
                .filter(|o| o["parameters"].is_null())
            {
                o.remove("parameters");
            }
            operation
        };
        let list_name = format!("{name}List");
        paths.insert(
            base.clone(),
            json!({"get": op("list", &v.info.list_kind(), &list_name), "post": op("post", v.info.kind, &name)}),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({"get": op("get", v.info.kind, &name), "put": op("put", v.info.kind, &name),
                   "patch": op("patch", v.info.kind, &name), "delete": op("delete", v.info.kind, &name)}),
        );
        schemas.insert(list_name, list_schema(v, &name));
        schemas.insert(name, kind_schema(v));
    }
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    });
    let body = serde_json::to_vec(&doc).unwrap_or_default();
    let hash = hash_of(&body);
    Some((body, hash))
}

/// The `?hash=` of an OpenAPI v3 document (uppercase hex SHA-512, as upstream's).
pub(crate) fn hash_of(body: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA512, body);
    d.as_ref().iter().map(|b| format!("{b:02X}")).collect()
}

/// The `/openapi/v3` index with the custom resource documents added (the built-in index as is
/// when there are none).
pub fn v3_index(builtin: &[u8]) -> Vec<u8> {
    let docs = documents();
    if docs.is_empty() {
        return builtin.to_vec();
    }
    let Ok(mut index) = serde_json::from_slice::<Value>(builtin) else {
        return builtin.to_vec();
    };
    for path in docs.keys() {
        if let Some((_, hash)) = v3_document(path) {
            index["paths"][path] =
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")});
        }
    }
    serde_json::to_vec(&index).unwrap_or_else(|_| builtin.to_vec())
}
