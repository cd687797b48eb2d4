//! Tests of strategic merge patch: maps, nulls, merge lists of objects and primitives, replaced
//! lists, map fields, schemaless fields and error handling.

use k1s_apimachinery::Reason;
use serde_json::json;

use super::super::{PatchType, apply_patch};
use super::{Case, run_smp_cases, run_smp_error_cases, smp};

fn containers(items: serde_json::Value) -> serde_json::Value {
    json!({"spec": {"containers": items}})
}

#[test]
fn containers_merge_by_name() {
    let cases: Vec<Case> = vec![
        (
            "add a container: new items go first, as upstream",
            containers(json!([{"name": "a", "image": "a:1"}])),
            containers(json!([{"name": "b", "image": "b:1"}])),
            containers(json!([{"name": "b", "image": "b:1"}, {"name": "a", "image": "a:1"}])),
        ),
        (
            "update a container in place",
            containers(
                json!([{"name": "a", "image": "a:1", "args": ["x"]}, {"name": "b", "image": "b:1"}]),
            ),
            containers(json!([{"name": "a", "image": "a:2"}])),
            containers(
                json!([{"name": "a", "image": "a:2", "args": ["x"]}, {"name": "b", "image": "b:1"}]),
            ),
        ),
        (
            "update the second container keeps its place",
            containers(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])),
            containers(json!([{"name": "b", "image": "b:2"}])),
            containers(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}])),
        ),
        (
            "remove a container with $patch: delete",
            containers(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
            containers(json!([{"name": "b", "$patch": "delete"}])),
            containers(json!([{"name": "a"}, {"name": "c"}])),
        ),
        (
            "delete removes every duplicate, update and add in the same patch",
            containers(
                json!([{"name": "a"}, {"name": "b"}, {"name": "b", "image": "dup"}, {"name": "c"}]),
            ),
            containers(
                json!([{"name": "c", "image": "c:2"}, {"$patch": "delete", "name": "b"}, {"name": "d"}]),
            ),
            containers(json!([{"name": "a"}, {"name": "c", "image": "c:2"}, {"name": "d"}])),
        ),
        (
            "deleting a missing container is a no-op",
            containers(json!([{"name": "a"}])),
            containers(json!([{"name": "zz", "$patch": "delete"}])),
            containers(json!([{"name": "a"}])),
        ),
        (
            "null removes a field of a container",
            containers(json!([{"name": "a", "image": "a:1", "args": ["x"]}])),
            containers(json!([{"name": "a", "args": null}])),
            containers(json!([{"name": "a", "image": "a:1"}])),
        ),
        (
            "primitive lists without a strategy are replaced",
            containers(json!([{"name": "a", "args": ["x", "y"]}])),
            containers(json!([{"name": "a", "args": ["z"]}])),
            containers(json!([{"name": "a", "args": ["z"]}])),
        ),
        (
            "ports merge by containerPort",
            containers(json!([{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}])),
            containers(
                json!([{"name": "a", "ports": [{"containerPort": 443}, {"containerPort": 80, "name": "http"}]}]),
            ),
            containers(json!([{"name": "a", "ports": [
                {"containerPort": 443},
                {"containerPort": 80, "protocol": "TCP", "name": "http"}]}])),
        ),
        (
            "env merges by name; patch order wins, server-only items stay after their predecessors",
            containers(
                json!([{"name": "a", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]),
            ),
            containers(
                json!([{"name": "a", "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}]}]),
            ),
            containers(json!([{"name": "a", "env": [
                {"name": "C", "value": "3"}, {"name": "A", "value": "9"}, {"name": "B", "value": "2"}]}])),
        ),
        (
            "a container list where the original has none",
            json!({"spec": {}}),
            containers(
                json!([{"name": "a", "image": null, "env": [{"name": "X", "$patch": "delete"}, {"name": "Y"}]}]),
            ),
            containers(json!([{"name": "a", "env": [{"name": "Y"}]}])),
        ),
        (
            "two patch items with one new name merge into one",
            containers(json!([{"name": "a"}])),
            containers(json!([{"name": "b", "image": "1"}, {"name": "b", "args": ["2"]}])),
            containers(json!([{"name": "b", "image": "1", "args": ["2"]}, {"name": "a"}])),
        ),
        (
            "merge keys compare numbers by value",
            containers(json!([{"name": "a", "ports": [{"containerPort": 80}]}])),
            containers(json!([{"name": "a", "ports": [{"containerPort": 80.0, "name": "http"}]}])),
            containers(json!([{"name": "a", "ports": [{"containerPort": 80.0, "name": "http"}]}])),
        ),
    ];
    run_smp_cases("Pod", cases);
}

#[test]
fn upstream_order_vectors() {
    // From upstream's strategicpatch tests ("preserve the order from the patch ...").
    let cases: Vec<Case> = vec![
        (
            "preserve the order from the patch in a merging list",
            containers(json!([{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}])),
            containers(
                json!([{"name": "3", "image": "c"}, {"name": "1", "image": "a"}, {"name": "2", "args": ["x"]}]),
            ),
            containers(
                json!([{"name": "3", "image": "c"}, {"name": "1", "image": "a"},
                              {"name": "2", "image": "b", "args": ["x"]}]),
            ),
        ),
        (
            "preserve the order from the patch in a merging list 2",
            containers(json!([{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}])),
            containers(json!([{"name": "3", "image": "c"}, {"name": "1", "image": "a"}])),
            containers(
                json!([{"name": "2", "image": "b"}, {"name": "3", "image": "c"}, {"name": "1", "image": "a"}]),
            ),
        ),
        (
            "preserve the order from the patch in a merging primitive list",
            json!({"metadata": {"finalizers": ["1", "2", "3"]}}),
            json!({"metadata": {"finalizers": ["3", "1"]}}),
            json!({"metadata": {"finalizers": ["2", "3", "1"]}}),
        ),
        (
            "unique scalars when merging lists",
            json!({"metadata": {"finalizers": ["1", "2"]}}),
            json!({"metadata": {"finalizers": ["2", "3"]}}),
            json!({"metadata": {"finalizers": ["1", "2", "3"]}}),
        ),
    ];
    run_smp_cases("Pod", cases);
}

#[test]
fn maps_nulls_and_finalizers() {
    let cases: Vec<Case> = vec![
        (
            "labels merge by key",
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"b": "2", "a": "0"}}}),
            json!({"metadata": {"name": "p", "labels": {"a": "0", "b": "2"}}}),
        ),
        (
            "null deletes keys; null for an absent key adds nothing",
            json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"nodeName": "n"}}),
            json!({"metadata": {"labels": {"a": null, "zz": null}}, "spec": {"nodeName": null}, "status": null}),
            json!({"metadata": {"name": "p", "labels": {"b": "2"}}, "spec": {}}),
        ),
        (
            "a new map drops its nulls",
            json!({"spec": {}}),
            json!({"spec": {"securityContext": {"runAsUser": 1, "fsGroup": null}}}),
            json!({"spec": {"securityContext": {"runAsUser": 1}}}),
        ),
        (
            "finalizers are a set: union, new ones first",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
            json!({"metadata": {"finalizers": ["c", "a", "b"]}}),
        ),
        (
            "a duplicate-free set stays so",
            json!({"metadata": {"finalizers": ["a", "a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "b"]}}),
            json!({"metadata": {"finalizers": ["a", "b"]}}),
        ),
        (
            "tolerations (no strategy) are replaced",
            json!({"spec": {"tolerations": [{"key": "a"}, {"key": "b"}]}}),
            json!({"spec": {"tolerations": [{"key": "c", "value": null}]}}),
            json!({"spec": {"tolerations": [{"key": "c"}]}}),
        ),
        (
            "a value of another type replaces",
            json!({"spec": {"nodeSelector": {"a": "b"}, "nodeName": "n"}}),
            json!({"spec": {"nodeSelector": "x", "nodeName": {"a": 1}}}),
            json!({"spec": {"nodeSelector": "x", "nodeName": {"a": 1}}}),
        ),
        (
            "fields the schema does not know merge as maps and replace as lists",
            json!({"spec": {"extra": {"a": 1, "list": [1, 2]}}, "other": [{"name": "x"}]}),
            json!({"spec": {"extra": {"b": 2, "list": [3]}}, "other": [{"name": "y"}]}),
            json!({"spec": {"extra": {"a": 1, "b": 2, "list": [3]}}, "other": [{"name": "y"}]}),
        ),
        (
            "keys starting with $ that are not directives are plain fields",
            json!({"spec": {"extra": {"$ref": "a"}}}),
            json!({"spec": {"extra": {"$ref": "b", "$schema": "s"}}}),
            json!({"spec": {"extra": {"$ref": "b", "$schema": "s"}}}),
        ),
        ("empty patch", json!({"a": 1}), json!({}), json!({"a": 1})),
    ];
    run_smp_cases("Pod", cases);
}

#[test]
fn map_field_values_use_the_value_type() {
    run_smp_cases(
        "Registry",
        vec![(
            "entries of a map of objects merge with the entry schema",
            json!({"entries": {"x": {"tags": ["a"]}, "y": {"tags": ["q"]}}}),
            json!({"entries": {"x": {"tags": ["b"]}, "z": {"tags": ["c"]}}}),
            json!({"entries": {"x": {"tags": ["b", "a"]}, "y": {"tags": ["q"]}, "z": {"tags": ["c"]}}}),
        )],
    );
}

#[test]
fn deployment_template_containers() {
    run_smp_cases(
        "Deployment",
        vec![(
            "containers merge inside a pod template",
            json!({"spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "x"}},
                   "spec": {"containers": [{"name": "app", "image": "v1"}, {"name": "side", "image": "s"}]}}}}),
            json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "v2"}]}}}}),
            json!({"spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "x"}},
                   "spec": {"containers": [{"name": "app", "image": "v2"}, {"name": "side", "image": "s"}]}}}}),
        )],
    );
}

#[test]
fn strategic_errors() {
    let cases = vec![
        (
            "missing merge key",
            containers(json!([{"name": "a"}])),
            containers(json!([{"image": "b"}])),
            400,
            "map: {\"image\":\"b\"} does not contain declared merge key: name",
        ),
        (
            "missing merge key in a delete element",
            containers(json!([{"name": "a"}])),
            containers(json!([{"$patch": "delete"}])),
            400,
            "does not contain declared merge key: name",
        ),
        (
            "original item without the merge key",
            containers(json!([{"image": "a"}])),
            containers(json!([{"name": "b"}])),
            400,
            "does not contain declared merge key: name",
        ),
        (
            "lists of lists",
            json!({"metadata": {"finalizers": []}}),
            json!({"metadata": {"finalizers": [["a"]]}}),
            422,
            "the server rejected our request due to an error in our request",
        ),
        (
            "mixed element types",
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": [1]}}),
            400,
            "list element types are not identical: [\"a\"] and [1]",
        ),
        (
            "objects in a merge list without merge key",
            json!({"metadata": {"finalizers": [{"a": 1}]}}),
            json!({"metadata": {"finalizers": [{"b": 1}]}}),
            400,
            "cannot merge lists without merge key for an unknown type",
        ),
    ];
    run_smp_error_cases("Pod", cases);

    let e = smp(
        "Pod",
        &json!({"metadata": {"finalizers": []}}),
        &json!({"metadata": {"finalizers": [["a"]]}}),
    )
    .unwrap_err();
    assert_eq!(e.reason, Reason::Invalid);
    assert_eq!(
        e.details.unwrap().causes[0].message,
        "lists of lists are not supported"
    );
}

#[test]
fn strategic_bodies_and_custom_resources() {
    let schema = super::TestSchema::new();
    let original = json!({"spec": {}});
    for (body, msg) in [
        (
            "[]",
            "error decoding patch: a strategic merge patch must be a JSON object",
        ),
        (
            "null",
            "error decoding patch: a strategic merge patch must be a JSON object",
        ),
        (
            "{\"spec\":",
            "error decoding patch: EOF while parsing a value at line 1 column 8",
        ),
    ] {
        let e = apply_patch(
            PatchType::StrategicMerge,
            &original,
            body.as_bytes(),
            Some((&schema, "Pod")),
        )
        .unwrap_err();
        assert_eq!((e.code, e.reason), (400, Reason::BadRequest), "{body}");
        assert_eq!(e.message, msg);
    }

    let e = apply_patch(PatchType::StrategicMerge, &original, b"{}", None).unwrap_err();
    assert_eq!((e.code, e.reason), (415, Reason::UnsupportedMediaType));
    assert_eq!(
        e.message,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json"
    );
}

#[test]
fn patches_kubernetes_clients_send() {
    // `kubectl apply` (client-side) of a Deployment changing the image and dropping a port.
    run_smp_cases(
        "Deployment",
        vec![(
            "kubectl apply patch with $setElementOrder and a deleted port",
            json!({"metadata": {"name": "web", "annotations": {"x": "1"}},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "nginx", "image": "nginx:1.24",
                        "ports": [{"containerPort": 80}, {"containerPort": 8080}]}]}}}}),
            json!({"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
                   "spec": {"template": {"spec": {
                       "$setElementOrder/containers": [{"name": "nginx"}],
                       "containers": [{"image": "nginx:1.25", "name": "nginx",
                                       "$setElementOrder/ports": [{"containerPort": 80}],
                                       "ports": [{"$patch": "delete", "containerPort": 8080}]}]}}}}),
            json!({"metadata": {"name": "web", "annotations": {
                       "x": "1", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
                   "spec": {"template": {"spec": {"containers": [
                       {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}}}),
        )],
    );
    // The garbage collector removes one owner reference by uid.
    run_smp_cases(
        "Pod",
        vec![(
            "delete an owner reference by uid",
            json!({"metadata": {"uid": "p1", "ownerReferences": [
                {"uid": "o1", "kind": "ReplicaSet", "name": "a"},
                {"uid": "o2", "kind": "Node", "name": "b"}]}}),
            json!({"metadata": {"uid": "p1", "ownerReferences": [{"$patch": "delete", "uid": "o1"}]}}),
            json!({"metadata": {"uid": "p1", "ownerReferences": [
                {"uid": "o2", "kind": "Node", "name": "b"}]}}),
        )],
    );
}
