//! `/openapi/v3`: one OpenAPI 3.0 document per group version (and per discovery root), each with
//! the schemas its paths reach, plus the index that names them with content hashes.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use k1s_apimachinery::catalog;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::KUBERNETES_VERSION;
use super::defs::{Definitions, INT_OR_STRING, QUANTITY, REF_PREFIX, each_ref};
use super::kinds::KindDef;
use super::paths::{self, Op, PATCH_TYPES};
use super::v2::{PRODUCES, PRODUCES_WATCH, add_k8s_extensions};

/// Where OpenAPI 3 keeps schemas.
const V3_PREFIX: &str = "#/components/schemas/";

/// One serialized document and its content hash.
#[derive(Debug)]
pub(super) struct Doc {
    pub json: Bytes,
    pub hash: String,
}

/// All documents by index path (`api/v1`, `apis/apps/v1`, `apis/apps`, `api`, `apis`) and the
/// serialized index.
#[derive(Debug)]
pub(super) struct V3 {
    pub docs: BTreeMap<String, Doc>,
    pub index: Bytes,
}

pub(super) fn build(mut defs: Definitions, kinds: &[KindDef]) -> V3 {
    // Plan every document first (its operations and the schemas they reach, followed through
    // the Swagger 2.0 refs), then convert the schemas in place, so that one tree serves all
    // documents: each borrows the schemas it lists.
    let mut plans: Vec<(String, Vec<Op>, BTreeSet<String>)> = Vec::new();
    let mut plan = |key: String, ops: Vec<Op>| {
        let roots = ops
            .iter()
            .flat_map(|op| std::iter::once(op.response.clone()).chain(op.body.clone()))
            .collect();
        let names = closure(&defs, roots);
        plans.push((key, ops, names));
    };
    plan("apis".into(), vec![paths::discovery_op(None)]);
    for g in catalog::groups() {
        let root = if g.is_core() {
            "api".to_owned()
        } else {
            format!("apis/{}", g.name)
        };
        plan(root.clone(), vec![paths::discovery_op(Some(g.name))]);
        for v in g.versions {
            plan(
                format!("{root}/{v}"),
                paths::group_version_ops(g.name, v, kinds),
            );
        }
    }
    for (name, schema) in defs.iter_mut() {
        let swagger = std::mem::take(schema);
        *schema = v3_schema(name, &swagger);
    }
    let mut docs = BTreeMap::new();
    for (key, ops, names) in plans {
        let json =
            Bytes::from(serde_json::to_vec(&document(&defs, &ops, &names)).unwrap_or_default());
        let hash = sha512_upper_hex(&json);
        docs.insert(key, Doc { json, hash });
    }
    let index: Map<String, Value> = docs
        .iter()
        .map(|(key, doc)| {
            let url = format!("/openapi/v3/{key}?hash={}", doc.hash);
            (key.clone(), json!({ "serverRelativeURL": url }))
        })
        .collect();
    let index = Bytes::from(serde_json::to_vec(&json!({ "paths": index })).unwrap_or_default());
    V3 { docs, index }
}

/// Upstream's hash: SHA-512 of the document, upper-case hex.
fn sha512_upper_hex(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA512, data);
    digest.as_ref().iter().map(|b| format!("{b:02X}")).collect()
}

/// One document, fields in upstream's (sorted) order.
#[derive(Serialize)]
struct Document<'a> {
    components: Components<'a>,
    info: Value,
    openapi: &'static str,
    paths: Map<String, Value>,
    security: Value,
}

#[derive(Serialize)]
struct Components<'a> {
    schemas: BTreeMap<&'a str, &'a Value>,
    #[serde(rename = "securitySchemes")]
    security_schemes: Value,
}

fn document<'a>(defs: &'a Definitions, ops: &[Op], names: &BTreeSet<String>) -> Document<'a> {
    let mut paths: Map<String, Value> = Map::new();
    for op in ops {
        let entry = paths.entry(op.path.clone()).or_insert_with(|| json!({}));
        if let Value::Object(methods) = entry {
            methods.insert(op.method.into(), operation(op));
        }
    }
    let schemas = names
        .iter()
        .filter_map(|name| defs.get_key_value(name))
        .map(|(name, schema)| (name.as_str(), schema))
        .collect();
    Document {
        components: Components {
            schemas,
            security_schemes: json!({
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                },
            }),
        },
        info: json!({"title": "Kubernetes", "version": KUBERNETES_VERSION}),
        openapi: "3.0.0",
        paths,
        security: json!([{"BearerToken": []}]),
    }
}

/// `roots` and every definition they reach through `$ref`s.
fn closure(defs: &Definitions, roots: BTreeSet<String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = defs.get(&name) {
            each_ref(schema, &mut |r| {
                if !seen.contains(r) {
                    todo.push(r.to_owned());
                }
            });
        }
    }
    seen
}

/// A definition in OpenAPI 3.0 form; quantities and int-or-strings say what they accept with
/// `oneOf`, as upstream's v3 documents do.
fn v3_schema(name: &str, schema: &Value) -> Value {
    let mut out = to_v3(schema);
    let one_of = match name {
        QUANTITY => json!([{"type": "string"}, {"type": "number"}]),
        INT_OR_STRING => json!([{"type": "integer"}, {"type": "string"}]),
        _ => return out,
    };
    if let Value::Object(obj) = &mut out {
        obj.remove("type");
        obj.insert("oneOf".into(), one_of);
    }
    out
}

/// Rewrites a Swagger 2.0 schema for OpenAPI 3.0: refs point into `components/schemas`, and a
/// `$ref` with siblings (a description) becomes `allOf: [$ref]` beside them, since OpenAPI 3.0
/// ignores siblings of `$ref` (upstream does the same).
pub(super) fn to_v3(schema: &Value) -> Value {
    match schema {
        Value::Object(obj) => {
            let mut out: Map<String, Value> =
                obj.iter().map(|(k, v)| (k.clone(), to_v3(v))).collect();
            if let Some(Value::String(r)) = obj.get("$ref") {
                let target = match r.strip_prefix(REF_PREFIX) {
                    Some(name) => format!("{V3_PREFIX}{name}"),
                    None => r.clone(),
                };
                out.remove("$ref");
                if out.is_empty() {
                    out.insert("$ref".into(), json!(target));
                } else {
                    out.insert("allOf".into(), json!([{ "$ref": target }]));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(to_v3).collect()),
        other => other.clone(),
    }
}

fn media(types: &[&str], def: &str) -> Value {
    let schema = json!({ "$ref": format!("{V3_PREFIX}{def}") });
    Value::Object(
        types
            .iter()
            .map(|t| ((*t).to_owned(), json!({ "schema": schema })))
            .collect(),
    )
}

fn operation(op: &Op) -> Value {
    let params: Vec<Value> = op
        .params
        .iter()
        .map(|p| {
            let mut v = json!({
                "name": p.name,
                "in": if p.in_path { "path" } else { "query" },
                "description": p.description,
                "schema": {"type": p.ty, "uniqueItems": true},
            });
            if p.in_path {
                v["required"] = json!(true);
            }
            v
        })
        .collect();
    let produces = if op.watch { PRODUCES_WATCH } else { PRODUCES };
    let mut responses = Map::new();
    responses.insert(
        "200".into(),
        json!({"description": "OK", "content": media(produces, &op.response)}),
    );
    if op.created {
        responses.insert(
            "201".into(),
            json!({"description": "Created", "content": media(produces, &op.response)}),
        );
    }
    if op.accepted {
        responses.insert(
            "202".into(),
            json!({"description": "Accepted", "content": media(produces, &op.response)}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    let mut v = json!({
        "description": op.description,
        "operationId": op.id,
        "tags": [op.tag],
        "parameters": params,
        "responses": responses,
    });
    // Go's encoder leaves an empty list out (`omitempty`), as upstream's documents show.
    if params.is_empty()
        && let Some(o) = v.as_object_mut()
    {
        o.remove("parameters");
    }
    if let Some(body) = &op.body {
        let consumes: &[&str] = if op.method == "patch" {
            PATCH_TYPES
        } else {
            &["*/*"]
        };
        let mut rb = json!({ "content": media(consumes, body) });
        if op.method != "delete" {
            rb["required"] = json!(true);
        }
        v["requestBody"] = rb;
    }
    add_k8s_extensions(&mut v, op);
    v
}
