//! Tests of content-type parsing, JSON patch, JSON merge patch and server-side apply refusal.

use k1s_apimachinery::Reason;
use serde_json::{Value, json};

use super::super::{PatchType, accepted_media_types, apply_patch, unsupported_patch_type};
use super::TestSchema;

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "x", "args": ["1", "2"]}]}
    })
}

fn json_patch(original: &Value, body: &str) -> Result<Value, k1s_apimachinery::ApiError> {
    apply_patch(PatchType::Json, original, body.as_bytes(), None)
}

fn merge_patch(original: &Value, body: &str) -> Result<Value, k1s_apimachinery::ApiError> {
    apply_patch(PatchType::Merge, original, body.as_bytes(), None)
}

#[test]
fn content_types() {
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        ("application/merge-patch+json", Some(PatchType::Merge)),
        (
            "application/strategic-merge-patch+json",
            Some(PatchType::StrategicMerge),
        ),
        ("application/apply-patch+yaml", Some(PatchType::Apply)),
        (
            "application/merge-patch+json; charset=utf-8",
            Some(PatchType::Merge),
        ),
        (
            "Application/JSON-Patch+JSON ;charset=UTF-8",
            Some(PatchType::Json),
        ),
        ("application/json", None),
        ("application/yaml", None),
        ("", None),
        ("text/plain; application/json-patch+json", None),
    ];
    for (ct, want) in cases {
        assert_eq!(PatchType::from_content_type(ct), want, "{ct:?}");
        if let Some(t) = want {
            assert_eq!(PatchType::from_content_type(t.content_type()), Some(t));
        }
    }
    assert_eq!(
        accepted_media_types(true),
        [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json"
        ]
    );
    let e = unsupported_patch_type(false);
    assert_eq!((e.code, e.reason), (415, Reason::UnsupportedMediaType));
    assert_eq!(
        e.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json"
    );
}

#[test]
fn json_patch_operations() {
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "add, remove, replace",
            r#"[{"op":"add","path":"/metadata/labels/b","value":"2"},
                {"op":"remove","path":"/metadata/labels/a"},
                {"op":"replace","path":"/spec/containers/0/image","value":"y"}]"#,
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "labels": {"b": "2"}},
                   "spec": {"containers": [{"name": "c", "image": "y", "args": ["1", "2"]}]}}),
        ),
        (
            "test passes, then append to a list",
            r#"[{"op":"test","path":"/metadata/name","value":"p"},
                {"op":"add","path":"/spec/containers/0/args/-","value":"3"}]"#,
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "labels": {"a": "1"}},
                   "spec": {"containers": [{"name": "c", "image": "x", "args": ["1", "2", "3"]}]}}),
        ),
        (
            "move and copy",
            r#"[{"op":"copy","from":"/metadata/labels","path":"/metadata/annotations"},
                {"op":"move","from":"/spec/containers/0/args/1","path":"/spec/containers/0/args/0"}]"#,
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "labels": {"a": "1"}, "annotations": {"a": "1"}},
                   "spec": {"containers": [{"name": "c", "image": "x", "args": ["2", "1"]}]}}),
        ),
        ("empty patch", "[]", pod()),
    ];
    for (name, body, want) in cases {
        assert_eq!(json_patch(&pod(), body).unwrap(), want, "{name}");
    }
}

#[test]
fn json_patch_failures_are_422_with_a_cause() {
    let cases = [
        (
            r#"[{"op":"test","path":"/metadata/name","value":"q"}]"#,
            "json patch operation 0 (test) failed at path \"/metadata/name\": the value does not match",
        ),
        (
            r#"[{"op":"add","path":"/metadata/labels/b","value":"2"},
                {"op":"remove","path":"/metadata/missing"}]"#,
            "json patch operation 1 (remove) failed at path \"/metadata/missing\": the path does not exist",
        ),
        (
            r#"[{"op":"replace","path":"/spec/nope/x","value":1}]"#,
            "json patch operation 0 (replace) failed at path \"/spec/nope/x\": the path does not exist",
        ),
        (
            r#"[{"op":"frobnicate","path":"/a"}]"#,
            "json patch operation 0 is invalid: unknown variant `frobnicate`",
        ),
        (
            r#"[{"op":"add","value":1}]"#,
            "json patch operation 0 is invalid: missing field `path`",
        ),
    ];
    for (body, cause) in cases {
        let e = json_patch(&pod(), body).unwrap_err();
        assert_eq!((e.code, e.reason), (422, Reason::Invalid), "{body}");
        assert_eq!(
            e.message,
            "the server rejected our request due to an error in our request"
        );
        let causes = e.details.unwrap().causes;
        assert_eq!(causes.len(), 1, "{body}");
        assert_eq!(causes[0].field, "patch");
        assert!(
            causes[0].message.starts_with(cause),
            "{body}: {:?}",
            causes[0].message
        );
    }
}

#[test]
fn json_patch_malformed_bodies_are_400() {
    let cases = [
        (
            "not json",
            "error decoding patch: expected ident at line 1 column 2",
        ),
        (
            r#"{"op":"add","path":"/a","value":1}"#,
            "error decoding patch: a JSON patch must be a JSON array of operations",
        ),
        (
            r#"[{"op":"add","path":"/a","value":1}, 7]"#,
            "error decoding patch: operation 1 is not a JSON object",
        ),
        (
            "",
            "error decoding patch: EOF while parsing a value at line 1 column 0",
        ),
    ];
    for (body, msg) in cases {
        let e = json_patch(&pod(), body).unwrap_err();
        assert_eq!((e.code, e.reason), (400, Reason::BadRequest), "{body}");
        assert_eq!(e.message, msg);
    }
}

#[test]
fn json_patch_limits_and_object_result() {
    let ops = vec![json!({"op": "test", "path": "/kind", "value": "Pod"}); 10_001];
    let e = json_patch(&pod(), &Value::Array(ops).to_string()).unwrap_err();
    assert_eq!((e.code, e.reason), (413, Reason::RequestEntityTooLarge));
    assert_eq!(
        e.message,
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
    let ops = vec![json!({"op": "test", "path": "/kind", "value": "Pod"}); 10_000];
    assert_eq!(
        json_patch(&pod(), &Value::Array(ops).to_string()).unwrap(),
        pod()
    );

    let e = json_patch(&pod(), r#"[{"op":"replace","path":"","value":[1]}]"#).unwrap_err();
    assert_eq!((e.code, e.reason), (422, Reason::Invalid));
    assert_eq!(
        e.message,
        " \"\" is invalid: patch: Invalid value: \"[1]\": the patched object must be a JSON object"
    );
    assert_eq!(e.details.unwrap().causes[0].field, "patch");
}

#[test]
fn merge_patch_semantics() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "null deletes, maps merge, lists replace",
            json!({"metadata": {"labels": {"a": null, "b": "2"}},
                   "spec": {"containers": [{"name": "d", "image": "z"}]}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "labels": {"b": "2"}},
                   "spec": {"containers": [{"name": "d", "image": "z"}]}}),
        ),
        (
            "null for an absent key is a no-op, nested nulls of new maps are dropped",
            json!({"status": null, "spec": {"securityContext": {"runAsUser": 1, "fsGroup": null}}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "labels": {"a": "1"}},
                   "spec": {"containers": [{"name": "c", "image": "x", "args": ["1", "2"]}],
                            "securityContext": {"runAsUser": 1}}}),
        ),
        (
            "nulls inside objects in arrays are dropped",
            json!({"spec": {"tolerations": [{"key": "k", "value": null, "effect": "NoSchedule"}, null]}}),
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "labels": {"a": "1"}},
                   "spec": {"containers": [{"name": "c", "image": "x", "args": ["1", "2"]}],
                            "tolerations": [{"key": "k", "effect": "NoSchedule"}, null]}}),
        ),
        (
            "a scalar replaces a map and a map replaces a scalar",
            json!({"metadata": {"labels": "x"}, "kind": {"a": 1}}),
            json!({"apiVersion": "v1", "kind": {"a": 1},
                   "metadata": {"name": "p", "labels": "x"},
                   "spec": {"containers": [{"name": "c", "image": "x", "args": ["1", "2"]}]}}),
        ),
        ("empty patch", json!({}), pod()),
    ];
    for (name, patch, want) in cases {
        assert_eq!(
            merge_patch(&pod(), &patch.to_string()).unwrap(),
            want,
            "{name}"
        );
    }
}

#[test]
fn merge_patch_malformed_bodies_are_400() {
    let cases = [
        (
            "{",
            "error decoding patch: EOF while parsing an object at line 1 column 1",
        ),
        (
            "[]",
            "error decoding patch: a merge patch must be a JSON object",
        ),
        (
            "null",
            "error decoding patch: a merge patch must be a JSON object",
        ),
        (
            "\"x\"",
            "error decoding patch: a merge patch must be a JSON object",
        ),
    ];
    for (body, msg) in cases {
        let e = merge_patch(&pod(), body).unwrap_err();
        assert_eq!((e.code, e.reason), (400, Reason::BadRequest), "{body}");
        assert_eq!(e.message, msg);
    }
}

#[test]
fn apply_is_not_a_patch_here() {
    let schema = TestSchema::new();
    for schema in [
        None,
        Some((&schema as &dyn super::super::PatchSchema, "Pod")),
    ] {
        let e = apply_patch(PatchType::Apply, &pod(), b"kind: Pod", schema).unwrap_err();
        assert_eq!((e.code, e.reason), (415, Reason::UnsupportedMediaType));
        assert!(e.message.starts_with(
            "server-side apply (application/apply-patch+yaml) of this subresource is not supported"
        ));
        assert_eq!(e.to_status_json()["reason"], json!("UnsupportedMediaType"));
    }
    let e = apply_patch(PatchType::Apply, &pod(), b"", None).unwrap_err();
    assert!(e.message.ends_with(
        "accepted media types include: application/json-patch+json, application/merge-patch+json"
    ));
}
