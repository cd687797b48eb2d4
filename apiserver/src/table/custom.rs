//! Tables of custom resources: the `Name` column, then the CRD version's
//! `additionalPrinterColumns` (or the default `Age`), cells computed from their JSONPaths as
//! upstream's apiextensions table convertor computes them.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::IncludeObject;
use super::format::{get, since};

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub ty: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

impl PrinterColumn {
    /// The columns a CRD version declares, or upstream's default `Age` column when none.
    pub fn for_version(version: &Value) -> Vec<PrinterColumn> {
        let declared: Vec<PrinterColumn> = version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: c["name"].as_str().unwrap_or_default().to_string(),
                ty: c["type"].as_str().unwrap_or_default().to_string(),
                format: c["format"].as_str().unwrap_or_default().to_string(),
                description: c["description"].as_str().unwrap_or_default().to_string(),
                priority: c["priority"].as_i64().unwrap_or(0),
                json_path: c["jsonPath"].as_str().unwrap_or_default().to_string(),
            })
            .collect();
        if !declared.is_empty() {
            return declared;
        }
        vec![PrinterColumn {
            name: "Age".into(),
            ty: "date".into(),
            format: String::new(),
            description: super::docs::CREATION_TIMESTAMP.into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }]
    }
}

fn definitions(columns: &[PrinterColumn]) -> Value {
    let mut defs = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": super::docs::NAME, "priority": 0,
    })];
    defs.extend(columns.iter().map(|c| {
        json!({
            "name": c.name, "type": c.ty, "format": c.format,
            "description": c.description, "priority": c.priority,
        })
    }));
    Value::Array(defs)
}

fn row(
    columns: &[PrinterColumn],
    obj: &Value,
    include: IncludeObject,
    now: Timestamp,
    table_api_version: &str,
) -> Value {
    let mut cells = vec![
        get(obj, &["metadata", "name"])
            .cloned()
            .unwrap_or_else(|| json!("")),
    ];
    cells.extend(columns.iter().map(|c| cell(c, obj, now)));
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": table_api_version,
            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    };
    json!({ "cells": cells, "object": object })
}

fn cell(c: &PrinterColumn, obj: &Value, now: Timestamp) -> Value {
    let found = jsonpath(obj, &c.json_path);
    let Some(value) = found.into_iter().next().filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match c.ty.as_str() {
        "string" => Value::String(print(&value)),
        "integer" => match value.as_i64().or_else(|| value.as_f64().map(|f| f as i64)) {
            Some(i) => json!(i),
            None => Value::Null,
        },
        "number" => value.as_f64().map_or(Value::Null, |f| json!(f)),
        "boolean" => value.as_bool().map_or(Value::Null, Value::Bool),
        "date" => match value.as_str() {
            Some(_) => {
                let t: Option<Timestamp> = value.as_str().and_then(|s| s.parse().ok());
                match t {
                    Some(_) => Value::String(since(Some(&value), now)),
                    None => Value::String("<invalid>".into()),
                }
            }
            None => Value::Null,
        },
        _ => Value::Null,
    }
}

/// A value as kubectl's JSONPath printer prints it: strings bare, the rest as JSON.
fn print(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Evaluates the simple JSONPaths printer columns use: `.a.b`, `.a[0]`, `.a[*].b`,
/// `.a[?(@.type=="Ready")].status`, with or without surrounding `{}`.
pub fn jsonpath(obj: &Value, path: &str) -> Vec<Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut current = vec![obj.clone()];
    let mut rest = path.trim_start_matches('$');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            rest = &r[end..];
            if key.is_empty() {
                continue;
            }
            current = current.iter().filter_map(|v| v.get(key).cloned()).collect();
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = closing_bracket(r) else {
                return Vec::new();
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            current = index(&current, inner);
        } else {
            return Vec::new();
        }
    }
    current
}

fn closing_bracket(s: &str) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, ch) in s.char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(ch),
            (None, '[' | '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ']') if depth == 0 => return Some(i),
            (None, ']') => depth -= 1,
            _ => {}
        }
    }
    None
}

fn index(values: &[Value], inner: &str) -> Vec<Value> {
    let inner = inner.trim();
    let mut out = Vec::new();
    for v in values {
        match v {
            Value::Array(items) if inner == "*" => out.extend(items.iter().cloned()),
            Value::Object(map) if inner == "*" => out.extend(map.values().cloned()),
            Value::Array(items) => {
                if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
                    out.extend(items.iter().filter(|i| matches_filter(i, filter)).cloned());
                } else if let Ok(i) = inner.parse::<i64>() {
                    let idx = if i < 0 { items.len() as i64 + i } else { i };
                    if let Some(item) = usize::try_from(idx).ok().and_then(|i| items.get(i)) {
                        out.push(item.clone());
                    }
                }
            }
            Value::Object(map) => {
                let key = inner.trim_matches(|c| c == '\'' || c == '"');
                if let Some(x) = map.get(key) {
                    out.push(x.clone());
                }
            }
            _ => {}
        }
    }
    out
}

/// `@.a.b=="x"`, `@.a!="x"`, `@.a` (exists).
fn matches_filter(item: &Value, filter: &str) -> bool {
    let (lhs, op, rhs) = if let Some((l, r)) = filter.split_once("==") {
        (l, "==", Some(r))
    } else if let Some((l, r)) = filter.split_once("!=") {
        (l, "!=", Some(r))
    } else {
        (filter, "", None)
    };
    let Some(path) = lhs.trim().strip_prefix('@') else {
        return false;
    };
    let found = jsonpath(item, path).into_iter().next();
    let Some(rhs) = rhs else {
        return found.is_some();
    };
    let rhs = rhs.trim();
    let want: Value = if let Some(s) = rhs
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| rhs.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')))
    {
        Value::String(s.to_string())
    } else {
        serde_json::from_str(rhs).unwrap_or(Value::String(rhs.to_string()))
    };
    let equal = found.as_ref() == Some(&want);
    if op == "==" { equal } else { !equal }
}

/// A Table of custom resources.
pub fn list_table(
    columns: &[PrinterColumn],
    items: &[Value],
    include: IncludeObject,
    resource_version: &str,
    continue_token: Option<&str>,
    now: Timestamp,
    table_api_version: &str,
) -> Value {
    let mut metadata = Map::new();
    if !resource_version.is_empty() {
        metadata.insert("resourceVersion".into(), resource_version.into());
    }
    if let Some(token) = continue_token.filter(|t| !t.is_empty()) {
        metadata.insert("continue".into(), token.into());
    }
    json!({
        "kind": "Table",
        "apiVersion": table_api_version,
        "metadata": metadata,
        "columnDefinitions": definitions(columns),
        "rows": items.iter().map(|o| row(columns, o, include, now, table_api_version)).collect::<Vec<_>>(),
    })
}

/// A one-row Table of one custom resource (`with_headers` false after a watch's first event).
pub fn object_table(
    columns: &[PrinterColumn],
    obj: &Value,
    include: IncludeObject,
    now: Timestamp,
    table_api_version: &str,
    with_headers: bool,
) -> Value {
    let mut metadata = Map::new();
    if let Some(rv) = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        metadata.insert("resourceVersion".into(), rv.into());
    }
    json!({
        "kind": "Table",
        "apiVersion": table_api_version,
        "metadata": metadata,
        "columnDefinitions": if with_headers { definitions(columns) } else { Value::Null },
        "rows": [row(columns, obj, include, now, table_api_version)],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpaths_of_printer_columns() {
        let obj = json!({
            "spec": {"replicas": 3, "list": [{"n": 1}, {"n": 2}]},
            "status": {"conditions": [
                {"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True"}
            ]}
        });
        assert_eq!(jsonpath(&obj, ".spec.replicas"), vec![json!(3)]);
        assert_eq!(jsonpath(&obj, "{.spec.list[1].n}"), vec![json!(2)]);
        assert_eq!(jsonpath(&obj, ".spec.list[*].n"), vec![json!(1), json!(2)]);
        assert_eq!(
            jsonpath(&obj, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![json!("True")]
        );
        assert!(jsonpath(&obj, ".spec.missing").is_empty());
    }

    #[test]
    fn cells_follow_column_types() {
        let now: Timestamp = "2024-01-01T00:10:00Z".parse().expect("a timestamp");
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"size": 2.0, "on": true, "name": "x", "tags": ["a"]}});
        let col = |ty: &str, path: &str| PrinterColumn {
            name: "C".into(),
            ty: ty.into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.into(),
        };
        assert_eq!(cell(&col("integer", ".spec.size"), &obj, now), json!(2));
        assert_eq!(cell(&col("boolean", ".spec.on"), &obj, now), json!(true));
        assert_eq!(
            cell(&col("string", ".spec.tags"), &obj, now),
            json!("[\"a\"]")
        );
        assert_eq!(
            cell(&col("date", ".metadata.creationTimestamp"), &obj, now),
            json!("10m")
        );
        assert_eq!(cell(&col("string", ".spec.nope"), &obj, now), Value::Null);
    }
}
