//! Whether a CRD's `openAPIV3Schema` is structural (required for apiextensions.k8s.io/v1), with
//! upstream's field paths and messages.

use k1s_apimachinery::FieldError;
use serde_json::Value;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Appends the structural-schema violations of `schema` (at `path`) to `errs`.
pub fn check(schema: &Value, path: &str, _status_enabled: bool, errs: &mut Vec<FieldError>) {
    if !schema.is_object() {
        errs.push(FieldError::invalid(path, "", "must be an object"));
        return;
    }
    node(schema, path, Level::Root, true, errs);
    if errs.is_empty()
        && let Err(e) = super::schema::Schema::parse(schema)
    {
        errs.push(FieldError::invalid(
            path,
            "",
            format!("error building validator: {e}"),
        ));
    }
}

fn node(s: &Value, path: &str, lvl: Level, structural: bool, errs: &mut Vec<FieldError>) {
    let Some(o) = s.as_object() else { return };
    let ty = o.get("type").and_then(Value::as_str).unwrap_or_default();
    let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
    let int_or_string = flag("x-kubernetes-int-or-string");
    let preserve = flag("x-kubernetes-preserve-unknown-fields");
    let embedded = flag("x-kubernetes-embedded-resource");
    if o.contains_key("$ref") {
        errs.push(FieldError::forbidden(
            format!("{path}.$ref"),
            "$ref is not supported",
        ));
    }
    if flag("uniqueItems") {
        errs.push(FieldError::forbidden(
            format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let props = o.get("properties").and_then(Value::as_object);
    if let Some(ap) = o.get("additionalProperties")
        && props.is_some_and(|p| !p.is_empty())
        && (ap == &Value::Bool(false) || ap.is_object())
    {
        errs.push(FieldError::forbidden(
            format!("{path}.additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if structural {
        if int_or_string && !ty.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.type"),
                ty,
                "must be empty if x-kubernetes-int-or-string is true",
            ));
        } else if embedded && ty != "object" {
            if ty.is_empty() {
                errs.push(FieldError::required(
                    format!("{path}.type"),
                    "must be object if x-kubernetes-embedded-resource is true",
                ));
            } else {
                errs.push(FieldError::invalid(
                    format!("{path}.type"),
                    ty,
                    "must be object if x-kubernetes-embedded-resource is true",
                ));
            }
        } else if ty.is_empty() && !int_or_string && !preserve {
            let detail = match lvl {
                Level::Root => "must not be empty at the root",
                Level::Item => "must not be empty for specified array items",
                Level::Field => "must not be empty for specified object fields",
            };
            errs.push(FieldError::required(format!("{path}.type"), detail));
        }
        if lvl == Level::Root && !ty.is_empty() && ty != "object" {
            errs.push(FieldError::invalid(
                format!("{path}.type"),
                ty,
                "must be object at the root",
            ));
        }
        if ty == "array" && !o.get("items").is_some_and(Value::is_object) {
            errs.push(FieldError::required(
                format!("{path}.items"),
                "must be specified",
            ));
        }
    }
    if let Some(props) = props {
        for (k, p) in props {
            let ppath = format!("{path}.properties[{k}]");
            if lvl == Level::Root && k == "metadata" && structural {
                metadata(p, &ppath, errs);
            }
            node(p, &ppath, Level::Field, structural, errs);
        }
    }
    if let Some(ap) = o.get("additionalProperties").filter(|a| a.is_object()) {
        node(
            ap,
            &format!("{path}.additionalProperties"),
            Level::Field,
            structural,
            errs,
        );
    }
    if let Some(items) = o.get("items").filter(|i| i.is_object()) {
        node(
            items,
            &format!("{path}.items"),
            Level::Item,
            structural,
            errs,
        );
    }
    // Value validations under the logical junctors need no types.
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in o
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            node(sub, &format!("{path}.{junctor}[{i}]"), lvl, false, errs);
        }
    }
    if let Some(not) = o.get("not") {
        node(not, &format!("{path}.not"), lvl, false, errs);
    }
}

/// At the root, `metadata` may only restrict `name` and `generateName`.
fn metadata(s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(t) = s.get("type").and_then(Value::as_str)
        && t != "object"
    {
        errs.push(FieldError::invalid(
            format!("{path}.type"),
            t,
            "must be object",
        ));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for k in props.keys() {
            if k != "name" && k != "generateName" {
                errs.push(FieldError::forbidden(
                    format!("{path}.properties[{k}]"),
                    "must not be specified",
                ));
            }
        }
    }
}
