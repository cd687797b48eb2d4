//! Unit tests of the structural schema validator, pruner and defaulter, with upstream's
//! messages as facts.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

fn schema(v: Value) -> Schema {
    Schema::parse(&v).unwrap()
}

fn messages(s: &Schema, obj: Value) -> Vec<String> {
    validate(s, &obj).iter().map(ToString::to_string).collect()
}

fn widget() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                    "size": {"type": "string", "enum": ["small", "large"]},
                    "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
                    "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5},
                    "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
                    "port": {"x-kubernetes-int-or-string": true},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "when": {"type": "string", "format": "date-time"},
                    "opt": {"type": "string", "nullable": true},
                    "mode": {"type": "string", "default": "auto"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "items": {"type": "array", "items": {"type": "object", "properties": {
                        "n": {"type": "integer", "default": 1}
                    }}}
                }
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    }))
}

#[test]
fn valid_object_has_no_errors() {
    let obj = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a"},
        "spec": {"size": "small", "replicas": 3, "name": "abc", "ratio": 1.0,
            "tags": ["a"], "port": "http", "labels": {"a": "b"}, "when": "2024-01-01T00:00:00Z",
            "opt": null}});
    assert!(messages(&widget(), obj).is_empty());
}

#[test]
fn type_errors_as_upstream() {
    assert_eq!(
        messages(
            &widget(),
            json!({"spec": {"size": "small", "replicas": "string"}})
        ),
        vec![
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        ]
    );
    assert_eq!(
        messages(
            &widget(),
            json!({"spec": {"size": "small", "replicas": 1.5}})
        ),
        vec![
            "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""
        ]
    );
    // A whole float is an integer (kube-openapi's isFloatInt).
    assert!(
        messages(
            &widget(),
            json!({"spec": {"size": "small", "replicas": 2.0}})
        )
        .is_empty()
    );
    assert_eq!(
        messages(&widget(), json!({"spec": {"size": "small", "port": true}})),
        vec![
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
        ]
    );
    assert_eq!(
        messages(&widget(), json!({"spec": {"size": "small", "name": null}})),
        vec![
            "spec.name: Invalid value: \"null\": spec.name in body must be of type string: \"null\""
        ]
    );
}

#[test]
fn value_validations_as_upstream() {
    let cases = [
        (json!({"spec": {}}), "spec.size: Required value"),
        (
            json!({"spec": {"size": "medium"}}),
            "spec.size: Unsupported value: \"medium\": supported values: \"small\", \"large\"",
        ),
        (
            json!({"spec": {"size": "small", "replicas": 20}}),
            "spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10",
        ),
        (
            json!({"spec": {"size": "small", "replicas": -1}}),
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            json!({"spec": {"size": "small", "ratio": 1.5}}),
            "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5",
        ),
        (
            json!({"spec": {"size": "small", "name": "ab"}}),
            "spec.name: Invalid value: \"ab\": spec.name in body should be at least 3 chars long",
        ),
        (
            json!({"spec": {"size": "small", "name": "abcdef"}}),
            "spec.name: Too long: may not be more than 5 bytes",
        ),
        (
            json!({"spec": {"size": "small", "name": "AB1"}}),
            "spec.name: Invalid value: \"AB1\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            json!({"spec": {"size": "small", "tags": []}}),
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
        ),
        (
            json!({"spec": {"size": "small", "tags": ["a", "b", "c"]}}),
            "spec.tags: Too many: 3: must have at most 2 items",
        ),
        (
            json!({"spec": {"size": "small", "tags": [1]}}),
            "spec.tags[0]: Invalid value: \"integer\": spec.tags[0] in body must be of type string: \"integer\"",
        ),
        (
            json!({"spec": {"size": "small", "labels": {"a": 1}}}),
            "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
        ),
        (
            json!({"spec": {"size": "small", "when": "yesterday"}}),
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(messages(&widget(), obj.clone()), vec![want], "{obj}");
    }
}

#[test]
fn junctors_report_without_a_path() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "not": {"required": ["c"]}}}}),
    );
    assert!(messages(&s, json!({"spec": {"a": "x"}})).is_empty());
    let both = messages(&s, json!({"spec": {"a": "x", "b": "y"}}));
    assert_eq!(
        both,
        vec![
            "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives"
        ]
    );
    let none = messages(&s, json!({"spec": {}}));
    assert_eq!(
        none[0],
        "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none valid"
    );
    assert!(none.contains(&"spec.a: Required value".to_string()));
    let any = schema(
        json!({"type": "object", "properties": {"n": {"type": "integer",
        "anyOf": [{"minimum": 5}, {"maximum": 1}]}}}),
    );
    let errs = messages(&any, json!({"n": 3}));
    assert_eq!(
        errs[0],
        "<nil>: Invalid value: \"\": \"n\" must validate at least one schema (anyOf)"
    );
    let all = schema(
        json!({"type": "object", "properties": {"n": {"type": "integer",
        "allOf": [{"minimum": 5}, {"maximum": 10}]}}}),
    );
    assert_eq!(
        messages(&all, json!({"n": 3})),
        vec![
            "n: Invalid value: 3: n in body should be greater than or equal to 5",
            "<nil>: Invalid value: \"\": \"n\" must validate all the schemas (allOf)"
        ]
    );
}

#[test]
fn pruning_drops_unknown_fields_and_reports_them() {
    let mut obj = json!({"apiVersion": "x/v1", "kind": "W", "metadata": {"name": "a"},
        "spec": {"size": "small", "bogus": 1, "free": {"anything": {"goes": true}},
            "labels": {"k": "v"}, "items": [{"n": 2, "extra": true}]},
        "top": "x"});
    let dropped = prune(&widget(), &mut obj);
    assert_eq!(dropped, vec!["spec.bogus", "spec.items[0].extra", "top"]);
    assert_eq!(obj["spec"]["free"], json!({"anything": {"goes": true}}));
    assert_eq!(obj["spec"]["labels"], json!({"k": "v"}));
    assert_eq!(obj["metadata"], json!({"name": "a"}));
    assert!(obj.get("top").is_none());
}

#[test]
fn metadata_is_pruned_to_object_meta_at_the_root_and_in_embedded_resources() {
    // field_validation.go: unknown metadata fields of a CR, at the root and in an embedded
    // object, are dropped and named; the root's come first, as upstream's coercer lists them.
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true}}}}}),
    );
    let mut obj = json!({"apiVersion": "x/v1", "kind": "W",
        "metadata": {"name": "a", "unknownMeta": "foo", "labels": {"k": "v"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "P", "name": "p", "uid": "1", "odd": 1}]},
        "spec": {"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "t", "unknownMetaEmbedded": "bar"}, "spec": {"free": 1}},
            "bogus": 1}});
    let dropped = prune(&s, &mut obj);
    assert_eq!(
        dropped,
        vec![
            "metadata.ownerReferences[0].odd",
            "metadata.unknownMeta",
            "spec.bogus",
            "spec.template.metadata.unknownMetaEmbedded"
        ]
    );
    assert_eq!(obj["metadata"]["labels"], json!({"k": "v"}));
    assert!(obj["metadata"].get("unknownMeta").is_none());
    assert_eq!(obj["spec"]["template"]["metadata"], json!({"name": "t"}));
    assert_eq!(obj["spec"]["template"]["spec"], json!({"free": 1}));
}

#[test]
fn preserve_unknown_fields_at_the_root_keeps_everything() {
    let s = schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let mut obj = json!({"spec": {"a": 1}, "other": [1]});
    assert!(prune(&s, &mut obj).is_empty());
    assert_eq!(obj["other"], json!([1]));
}

#[test]
fn defaults_fill_absent_fields_and_items() {
    let mut obj = json!({"spec": {"size": "small", "items": [{}, {"n": 5}], "opt": null}});
    apply_defaults(&widget(), &mut obj);
    assert_eq!(obj["spec"]["mode"], "auto");
    assert_eq!(obj["spec"]["items"], json!([{"n": 1}, {"n": 5}]));
    // Nullable fields keep their null.
    assert_eq!(obj["spec"]["opt"], Value::Null);
    // Absent parents are not created.
    let mut bare = json!({});
    apply_defaults(&widget(), &mut bare);
    assert_eq!(bare, json!({}));
}

#[test]
fn non_nullable_nulls_are_dropped_or_defaulted() {
    let mut obj = json!({"spec": {"size": "small", "name": null, "mode": null}});
    apply_defaults(&widget(), &mut obj);
    assert!(obj["spec"].get("name").is_none());
    assert_eq!(obj["spec"]["mode"], "auto");
}

#[test]
fn go_float_formatting() {
    for (f, want) in [
        (10.0, "10"),
        (1.5, "1.5"),
        (1_000_000.0, "1e+06"),
        (100_000.0, "100000"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.0, "-3"),
    ] {
        assert_eq!(go_float(f), want);
    }
}
