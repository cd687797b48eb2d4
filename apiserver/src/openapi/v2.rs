//! `/openapi/v2`: one Swagger 2.0 document with every path and definition, as upstream serves it.

use k1s_apimachinery::catalog;
use serde_json::{Map, Value, json};

use super::KUBERNETES_VERSION;
use super::defs::{Definitions, REF_PREFIX};
use super::kinds::KindDef;
use super::paths::{self, Op, PATCH_TYPES};

/// What reads and writes produce; k1s serves JSON and YAML (no protobuf, so none is advertised).
pub(super) const PRODUCES: &[&str] = &["application/json", "application/yaml"];
pub(super) const PRODUCES_WATCH: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json;stream=watch",
];

/// Every operation k1s serves: discovery roots, then each group version's resources.
pub(super) fn all_ops(kinds: &[KindDef]) -> Vec<Op> {
    let mut ops = vec![paths::discovery_op(None)];
    for g in catalog::groups() {
        ops.push(paths::discovery_op(Some(g.name)));
        for v in g.versions {
            ops.extend(paths::group_version_ops(g.name, v, kinds));
        }
    }
    ops
}

/// The whole document.
pub(super) fn document(defs: Definitions, kinds: &[KindDef]) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for op in all_ops(kinds) {
        let entry = paths.entry(op.path.clone()).or_insert_with(|| json!({}));
        if let Value::Object(methods) = entry {
            methods.insert(op.method.into(), operation(&op));
        }
    }
    let mut doc = json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "in": "header",
                "name": "authorization",
                "type": "apiKey",
            },
        },
        "security": [{"BearerToken": []}],
    });
    // Moved in, not through `json!`, which would serialize a copy of the big trees.
    if let Value::Object(top) = &mut doc {
        top.insert("paths".into(), Value::Object(paths));
        top.insert(
            "definitions".into(),
            Value::Object(defs.into_iter().collect()),
        );
    }
    doc
}

fn reference(def: &str) -> Value {
    json!({ "$ref": format!("{REF_PREFIX}{def}") })
}

fn operation(op: &Op) -> Value {
    let mut params: Vec<Value> = op
        .params
        .iter()
        .map(|p| {
            let mut v = json!({
                "name": p.name,
                "in": if p.in_path { "path" } else { "query" },
                "type": p.ty,
                "description": p.description,
                "uniqueItems": true,
            });
            if p.in_path {
                v["required"] = json!(true);
            }
            v
        })
        .collect();
    if let Some(body) = &op.body {
        params.push(json!({
            "name": "body",
            "in": "body",
            "required": op.method != "delete",
            "schema": reference(body),
        }));
    }
    let mut responses = Map::new();
    let ok = json!({"description": "OK", "schema": reference(&op.response)});
    responses.insert("200".into(), ok);
    if op.created {
        responses.insert(
            "201".into(),
            json!({"description": "Created", "schema": reference(&op.response)}),
        );
    }
    if op.accepted {
        responses.insert(
            "202".into(),
            json!({"description": "Accepted", "schema": reference(&op.response)}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    let consumes: &[&str] = if op.method == "patch" {
        PATCH_TYPES
    } else {
        &["*/*"]
    };
    let produces = if op.watch { PRODUCES_WATCH } else { PRODUCES };
    let mut v = json!({
        "description": op.description,
        "operationId": op.id,
        "tags": [op.tag],
        "consumes": consumes,
        "produces": produces,
        "schemes": ["https"],
        "parameters": params,
        "responses": responses,
    });
    add_k8s_extensions(&mut v, op);
    v
}

/// `x-kubernetes-action` and `x-kubernetes-group-version-kind`, shared with v3.
pub(super) fn add_k8s_extensions(v: &mut Value, op: &Op) {
    if let Some(action) = op.action {
        v["x-kubernetes-action"] = json!(action);
    }
    if let Some((group, version, kind)) = &op.gvk {
        v["x-kubernetes-group-version-kind"] =
            json!({"group": group, "kind": kind, "version": version});
    }
}
