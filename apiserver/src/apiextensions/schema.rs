//! Structural schemas of CustomResourceDefinitions: parsing `openAPIV3Schema`, validating custom
//! resources with kube-openapi's messages and field paths, pruning unknown fields and defaulting.

use std::collections::BTreeMap;

use k1s_apimachinery::FieldError;
use k1s_apimachinery::status::{BadValue, FieldErrorType};
use serde_json::{Map, Value};

/// One node of a structural schema (with its value validations).
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// `""` when unset.
    pub ty: String,
    pub format: String,
    pub nullable: bool,
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties`: a schema, or `false` (no keys allowed); `true` is the same as unset.
    pub additional: Option<Additional>,
    pub items: Option<Box<Schema>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<u64>,
    pub min_length: Option<u64>,
    pub pattern: Option<(String, regex::Regex)>,
    pub max_items: Option<u64>,
    pub min_items: Option<u64>,
    pub unique_items: bool,
    pub max_properties: Option<u64>,
    pub min_properties: Option<u64>,
    pub all_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    pub default: Option<Value>,
    pub preserve_unknown_fields: bool,
    pub int_or_string: bool,
    pub embedded_resource: bool,
}

#[derive(Debug, Clone)]
pub enum Additional {
    Allows(bool),
    Schema(Box<Schema>),
}

impl Schema {
    /// Parses a `JSONSchemaProps` object. Unknown keys are ignored; a bad `pattern` is an error
    /// (CRD validation reports it).
    pub fn parse(v: &Value) -> Result<Schema, String> {
        let o = match v {
            Value::Object(o) => o,
            Value::Null => return Ok(Schema::default()),
            _ => return Err("must be an object".into()),
        };
        let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let b = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
        let f = |k: &str| o.get(k).and_then(Value::as_f64);
        let u = |k: &str| o.get(k).and_then(Value::as_u64);
        let list = |k: &str| -> Result<Vec<Schema>, String> {
            o.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Schema::parse).collect())
                .unwrap_or(Ok(Vec::new()))
        };
        let mut properties = BTreeMap::new();
        if let Some(props) = o.get("properties").and_then(Value::as_object) {
            for (k, p) in props {
                properties.insert(k.clone(), Schema::parse(p)?);
            }
        }
        let additional = match o.get("additionalProperties") {
            Some(Value::Bool(allows)) => Some(Additional::Allows(*allows)),
            Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(Schema::parse(v)?))),
            _ => None,
        };
        let items = match o.get("items") {
            Some(v @ Value::Object(_)) => Some(Box::new(Schema::parse(v)?)),
            _ => None,
        };
        let pattern = match o.get("pattern").and_then(Value::as_str) {
            Some(p) => Some((
                p.to_string(),
                regex::Regex::new(p).map_err(|e| format!("invalid pattern {p:?}: {e}"))?,
            )),
            None => None,
        };
        Ok(Schema {
            ty: s("type"),
            format: s("format"),
            nullable: b("nullable"),
            properties,
            additional,
            items,
            required: o
                .get("required")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            enumeration: o.get("enum").and_then(Value::as_array).cloned(),
            maximum: f("maximum"),
            exclusive_maximum: b("exclusiveMaximum"),
            minimum: f("minimum"),
            exclusive_minimum: b("exclusiveMinimum"),
            multiple_of: f("multipleOf"),
            max_length: u("maxLength"),
            min_length: u("minLength"),
            pattern,
            max_items: u("maxItems"),
            min_items: u("minItems"),
            unique_items: b("uniqueItems"),
            max_properties: u("maxProperties"),
            min_properties: u("minProperties"),
            all_of: list("allOf")?,
            one_of: list("oneOf")?,
            any_of: list("anyOf")?,
            not: match o.get("not") {
                Some(v @ Value::Object(_)) => Some(Box::new(Schema::parse(v)?)),
                _ => None,
            },
            default: o.get("default").cloned(),
            preserve_unknown_fields: b("x-kubernetes-preserve-unknown-fields"),
            int_or_string: b("x-kubernetes-int-or-string"),
            embedded_resource: b("x-kubernetes-embedded-resource"),
        })
    }

    /// The types a value may have, as kube-openapi joins them in messages.
    fn type_names(&self) -> String {
        if self.int_or_string {
            "integer,string".into()
        } else {
            self.ty.clone()
        }
    }

    fn allows_type(&self, actual: &str, v: &Value) -> bool {
        let ty = self.ty.as_str();
        let single = [ty];
        let allowed: &[&str] = if self.int_or_string {
            &["integer", "string"]
        } else if ty.is_empty() {
            return true;
        } else {
            &single
        };
        allowed.contains(&actual)
            // A whole float is an integer; an integer is a number (kube-openapi's isFloatInt /
            // isIntFloat).
            || (actual == "number"
                && allowed.contains(&"integer")
                && v.as_f64().is_some_and(|f| f.fract() == 0.0))
            || (actual == "integer" && allowed.contains(&"number"))
    }
}

/// The JSON type of a value as kube-openapi names it.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): `10`, `1.5`, `1e+06`.
pub fn go_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let exp = format!("{f:e}")
        .split_once('e')
        .and_then(|(_, e)| e.parse::<i32>().ok())
        .unwrap_or(0);
    // Shortest formatting decides with precision 6: exponent form below 1e-4 and from 1e6.
    if !(-4..6).contains(&exp) {
        go_exp(f)
    } else {
        format!("{f}")
    }
}

fn go_exp(f: f64) -> String {
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The value upstream shows in `Invalid value:`.
fn shown(v: &Value) -> Value {
    v.clone()
}

/// Errors of one validation, with kube-openapi's "at least one/only one" composite messages
/// (reported by upstream without a field path, as `<nil>`).
pub fn validate(schema: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_at(schema, "", obj, &mut errs);
    errs
}

fn composite(errs: &mut Vec<FieldError>, msg: String) {
    errs.push(FieldError::invalid("<nil>", "", msg));
}

fn validate_at(s: &Schema, path: &str, v: &Value, errs: &mut Vec<FieldError>) {
    if v.is_null() {
        if (!s.ty.is_empty() || s.int_or_string) && !s.nullable {
            errs.push(FieldError::type_invalid(
                path,
                "null",
                format!(
                    "{path} in body must be of type {}: \"null\"",
                    s.type_names()
                ),
            ));
        }
        enum_check(s, path, v, errs);
        return;
    }
    let actual = json_type(v);
    if !s.allows_type(actual, v) {
        errs.push(FieldError::type_invalid(
            path,
            actual,
            format!(
                "{path} in body must be of type {}: \"{actual}\"",
                s.type_names()
            ),
        ));
        return;
    }
    composites(s, path, v, errs);
    if let Value::String(text) = v {
        let len = text.chars().count() as u64;
        if let Some(max) = s.max_length
            && len > max
        {
            errs.push(FieldError::too_long(path, Some(max as usize)));
        }
        if let Some(min) = s.min_length
            && len < min
        {
            errs.push(FieldError::invalid(
                path,
                shown(v),
                format!("{path} in body should be at least {min} chars long"),
            ));
        }
        if let Some((raw, re)) = &s.pattern
            && !re.is_match(text)
        {
            errs.push(FieldError::invalid(
                path,
                shown(v),
                format!("{path} in body should match '{raw}'"),
            ));
        }
        if !s.format.is_empty() && !super::formats::valid(&s.format, text) {
            errs.push(FieldError::type_invalid(
                path,
                text.as_str(),
                format!("{path} in body must be of type {}: {:?}", s.format, text),
            ));
        }
    }
    if let Some(n) = v.as_f64() {
        if let Some(m) = s.multiple_of
            && m > 0.0
            && (n / m).fract() != 0.0
        {
            errs.push(FieldError::invalid(
                path,
                shown(v),
                format!("{path} in body should be a multiple of {}", go_float(m)),
            ));
        }
        if let Some(max) = s.maximum
            && (n > max || (s.exclusive_maximum && n >= max))
        {
            let how = if s.exclusive_maximum {
                "less than"
            } else {
                "less than or equal to"
            };
            errs.push(FieldError::invalid(
                path,
                shown(v),
                format!("{path} in body should be {how} {}", go_float(max)),
            ));
        }
        if let Some(min) = s.minimum
            && (n < min || (s.exclusive_minimum && n <= min))
        {
            let how = if s.exclusive_minimum {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errs.push(FieldError::invalid(
                path,
                shown(v),
                format!("{path} in body should be {how} {}", go_float(min)),
            ));
        }
    }
    if let Value::Array(items) = v {
        if let Some(item_schema) = &s.items {
            for (i, item) in items.iter().enumerate() {
                validate_at(item_schema, &format!("{path}[{i}]"), item, errs);
            }
        }
        let size = items.len() as u64;
        if let Some(min) = s.min_items
            && size < min
        {
            errs.push(FieldError::invalid(
                path,
                size,
                format!("{path} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = s.max_items
            && size > max
        {
            errs.push(FieldError::too_many(
                path,
                Some(size as usize),
                Some(max as usize),
            ));
        }
        if s.unique_items {
            let dup = items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].contains(a));
            if dup {
                errs.push(FieldError::invalid(
                    path,
                    "",
                    format!("{path} in body shouldn't contain duplicates"),
                ));
            }
        }
    }
    enum_check(s, path, v, errs);
    if let Value::Object(map) = v {
        validate_object(s, path, map, errs);
    }
}

fn enum_check(s: &Schema, path: &str, v: &Value, errs: &mut Vec<FieldError>) {
    let Some(allowed) = &s.enumeration else {
        return;
    };
    if allowed.iter().any(|a| same_value(a, v)) {
        return;
    }
    let values: Vec<String> = allowed
        .iter()
        .map(|a| match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    errs.push(FieldError::not_supported(path, v.clone(), &refs));
}

/// Equality as Go's DeepEqual sees decoded JSON, numbers compared by value.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn validate_object(s: &Schema, path: &str, map: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    let n = map.len() as u64;
    if let Some(max) = s.max_properties
        && n > max
    {
        errs.push(FieldError::too_many(
            path,
            Some(n as usize),
            Some(max as usize),
        ));
    }
    if let Some(min) = s.min_properties
        && n < min
    {
        errs.push(FieldError::invalid(
            path,
            min,
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    for r in &s.required {
        if !map.contains_key(r) {
            errs.push(FieldError::required(child(path, r), ""));
        }
    }
    for (k, value) in map {
        if let Some(p) = s.properties.get(k) {
            validate_at(p, &child(path, k), value, errs);
            continue;
        }
        match &s.additional {
            Some(Additional::Schema(a)) => validate_at(a, &child(path, k), value, errs),
            Some(Additional::Allows(false)) if s.properties.is_empty() => {
                errs.push(FieldError::new(
                    FieldErrorType::Invalid,
                    child(path, k),
                    BadValue::Json(Value::String(k.clone())),
                    format!("{path}.{k} in body is a forbidden property"),
                ));
            }
            _ => {}
        }
    }
}

fn composites(s: &Schema, path: &str, v: &Value, errs: &mut Vec<FieldError>) {
    let run = |sub: &Schema| {
        let mut e = Vec::new();
        validate_at(sub, path, v, &mut e);
        e
    };
    if !s.any_of.is_empty() {
        let results: Vec<Vec<FieldError>> = s.any_of.iter().map(run).collect();
        if !results.iter().any(Vec::is_empty) {
            composite(
                errs,
                format!("{path:?} must validate at least one schema (anyOf)"),
            );
            if let Some(first) = results.into_iter().min_by_key(Vec::len) {
                errs.extend(first);
            }
        }
    }
    if !s.one_of.is_empty() {
        let results: Vec<Vec<FieldError>> = s.one_of.iter().map(run).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let more = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            composite(
                errs,
                format!("{path:?} must validate one and only one schema (oneOf). {more}"),
            );
            if valid == 0
                && let Some(first) = results.into_iter().min_by_key(Vec::len)
            {
                errs.extend(first);
            }
        }
    }
    if !s.all_of.is_empty() {
        let mut valid = 0;
        for sub in &s.all_of {
            let e = run(sub);
            if e.is_empty() {
                valid += 1;
            }
            errs.extend(e);
        }
        if valid != s.all_of.len() {
            let more = if valid == 0 { ". None validated" } else { "" };
            composite(
                errs,
                format!("{path:?} must validate all the schemas (allOf){more}"),
            );
        }
    }
    if let Some(not) = &s.not
        && run(not).is_empty()
    {
        composite(errs, format!("{path:?} must not validate the schema (not)"));
    }
}

/// Drops fields the schema does not specify (unless `x-kubernetes-preserve-unknown-fields`), as
/// upstream prunes custom resources; returns the dropped paths (`spec.foo`, `spec.items[0].bar`).
/// `apiVersion` and `kind` are kept at the root and in embedded resources; their `metadata` is
/// pruned to ObjectMeta's fields (`metadata.x`, `spec.template.metadata.y`). The order is
/// upstream's: the root's metadata, the schema's fields, then embedded metadata, sorted.
pub fn prune(schema: &Schema, obj: &mut Value) -> Vec<String> {
    let mut dropped = match obj.as_object_mut() {
        Some(map) => prune_object_meta(map, ""),
        None => Vec::new(),
    };
    let mut embedded = Vec::new();
    prune_at(schema, "", obj, true, &mut dropped, &mut embedded);
    embedded.sort();
    dropped.extend(embedded);
    dropped
}

/// Removes what ObjectMeta does not have from `obj.metadata` (upstream decodes it into the typed
/// ObjectMeta), returning the paths under `parent` (`""` at the root).
fn prune_object_meta(obj: &mut serde_json::Map<String, Value>, parent: &str) -> Vec<String> {
    let Some(meta) = obj.get_mut("metadata").filter(|m| m.is_object()) else {
        return Vec::new();
    };
    let prefix = child(parent, "metadata");
    crate::openapi::schemas()
        .prune_unknown_fields("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", meta)
        .into_iter()
        .map(|p| format!("{prefix}.{p}"))
        .collect()
}

fn prune_at(
    s: &Schema,
    path: &str,
    v: &mut Value,
    root: bool,
    dropped: &mut Vec<String>,
    embedded: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            let keep_meta = root || s.embedded_resource;
            if s.embedded_resource && !root {
                embedded.extend(prune_object_meta(map, path));
            }
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if keep_meta && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    if let (Some(p), Some(val)) = (s.properties.get(&k), map.get_mut(&k))
                        && k != "metadata"
                    {
                        prune_at(p, &child(path, &k), val, false, dropped, embedded);
                    }
                    continue;
                }
                if let Some(p) = s.properties.get(&k) {
                    if let Some(val) = map.get_mut(&k) {
                        prune_at(p, &child(path, &k), val, false, dropped, embedded);
                    }
                    continue;
                }
                match &s.additional {
                    Some(Additional::Schema(a)) => {
                        if let Some(val) = map.get_mut(&k) {
                            prune_at(a, &child(path, &k), val, false, dropped, embedded);
                        }
                    }
                    Some(Additional::Allows(true)) => {}
                    _ if s.preserve_unknown_fields => {}
                    _ => {
                        map.remove(&k);
                        dropped.push(child(path, &k));
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &s.items {
                for (i, item) in items.iter_mut().enumerate() {
                    let at = format!("{path}[{i}]");
                    prune_at(item_schema, &at, item, false, dropped, embedded);
                }
            }
        }
        _ => {}
    }
}

/// Applies `default`s of absent (or null, when not nullable) properties, recursively, and drops
/// nulls of non-nullable fields without a default, as upstream's structural defaulting does.
pub fn apply_defaults(s: &Schema, v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, p) in &s.properties {
                match map.get(k) {
                    None => {
                        if let Some(d) = &p.default {
                            map.insert(k.clone(), d.clone());
                        }
                    }
                    Some(Value::Null) if !p.nullable => match &p.default {
                        Some(d) => {
                            map.insert(k.clone(), d.clone());
                        }
                        None => {
                            map.remove(k);
                        }
                    },
                    _ => {}
                }
                if let Some(val) = map.get_mut(k) {
                    apply_defaults(p, val);
                }
            }
            if let Some(Additional::Schema(a)) = &s.additional {
                for (k, val) in map.iter_mut() {
                    if !s.properties.contains_key(k) {
                        apply_defaults(a, val);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &s.items {
                for item in items.iter_mut() {
                    if item.is_null()
                        && !item_schema.nullable
                        && let Some(d) = &item_schema.default
                    {
                        *item = d.clone();
                    }
                    apply_defaults(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
