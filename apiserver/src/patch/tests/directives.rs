//! Tests of strategic merge patch directives: `$patch`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.

use serde_json::{Value, json};

use super::{Case, run_smp_cases, run_smp_error_cases};

fn containers(items: Value) -> Value {
    json!({"spec": {"containers": items}})
}

fn finalizers(items: Value) -> Value {
    json!({"metadata": {"finalizers": items}})
}

fn strategy(value: Value) -> Value {
    json!({"spec": {"replicas": 2, "strategy": value}})
}

#[test]
fn patch_directive_replace_and_delete() {
    let cases: Vec<Case> = vec![
        (
            "$patch: replace in a list replaces it with the other items",
            containers(json!([{"name": "a"}, {"name": "b"}])),
            containers(json!([{"name": "c", "image": null}, {"$patch": "replace"}])),
            containers(json!([{"name": "c"}])),
        ),
        (
            "$patch: replace alone empties the list",
            containers(json!([{"name": "a"}, {"name": "b"}])),
            containers(json!([{"$patch": "replace"}])),
            containers(json!([])),
        ),
        (
            "$patch: replace on a map",
            json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"$patch": "replace", "c": "3", "d": null}}}),
            json!({"metadata": {"name": "p", "labels": {"c": "3"}}}),
        ),
        (
            "$patch: replace on a struct",
            json!({"spec": {"nodeName": "n", "containers": [{"name": "a"}]}}),
            json!({"spec": {"$patch": "replace", "containers": [{"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "b"}]}}),
        ),
        (
            "$patch: delete on a map leaves an empty map, as upstream",
            json!({"metadata": {"name": "p", "labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"$patch": "delete", "b": "2"}}}),
            json!({"metadata": {"name": "p", "labels": {}}}),
        ),
        (
            "$patch: delete on an absent map",
            json!({"metadata": {"name": "p"}}),
            json!({"metadata": {"labels": {"$patch": "delete"}}}),
            json!({"metadata": {"name": "p", "labels": {}}}),
        ),
    ];
    run_smp_cases("Pod", cases);
}

#[test]
fn retain_keys() {
    let rolling =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    let cases: Vec<Case> = vec![
        (
            "Recreate with $retainKeys drops rollingUpdate",
            strategy(rolling.clone()),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
            strategy(json!({"type": "Recreate"})),
        ),
        (
            "kubectl apply style: listed keys kept and merged",
            strategy(
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}, "stale": true}),
            ),
            json!({"spec": {"strategy": {"$retainKeys": ["rollingUpdate", "type"], "rollingUpdate": {"maxUnavailable": 2}}}}),
            strategy(
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 2}}),
            ),
        ),
        (
            "a null for an unlisted key is allowed",
            strategy(rolling.clone()),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null}}}),
            strategy(json!({"type": "Recreate"})),
        ),
        (
            "without $retainKeys rollingUpdate stays (upstream then fails validation)",
            strategy(rolling.clone()),
            json!({"spec": {"strategy": {"type": "Recreate"}}}),
            strategy(
                json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
            ),
        ),
        (
            "rollingUpdate: null works too",
            strategy(rolling.clone()),
            json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}),
            strategy(json!({"type": "Recreate"})),
        ),
    ];
    run_smp_cases("Deployment", cases);

    run_smp_cases(
        "Pod",
        vec![(
            "volumes (merge,retainKeys): switch a volume's source",
            json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]}}),
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}}]}}),
            json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "emptyDir": {}}]}}),
        )],
    );

    run_smp_error_cases(
        "Deployment",
        vec![
            (
                "a patched key missing from $retainKeys",
                strategy(rolling.clone()),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}}),
                400,
                "invalid patch format of retainKeys",
            ),
            (
                "$retainKeys that is not a list",
                strategy(rolling),
                json!({"spec": {"strategy": {"$retainKeys": "type", "type": "Recreate"}}}),
                400,
                "invalid patch format of retainKeys",
            ),
        ],
    );
}

#[test]
fn delete_from_primitive_list() {
    let cases: Vec<Case> = vec![
        (
            "delete items",
            finalizers(json!(["a", "b", "c"])),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "c"]}}),
            finalizers(json!(["a"])),
        ),
        (
            "deleting a missing item changes nothing",
            finalizers(json!(["a", "b"])),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["z"]}}),
            finalizers(json!(["a", "b"])),
        ),
        (
            "a missing list is not added",
            json!({"metadata": {"name": "p"}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["z"]}}),
            json!({"metadata": {"name": "p"}}),
        ),
        (
            "a null list stays null",
            finalizers(Value::Null),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["z"]}}),
            finalizers(Value::Null),
        ),
        (
            "add and delete in one patch",
            finalizers(json!(["a", "b", "c"])),
            json!({"metadata": {"finalizers": ["d"], "$deleteFromPrimitiveList/finalizers": ["a", "a"]}}),
            finalizers(json!(["d", "b", "c"])),
        ),
        (
            "all duplicates are deleted",
            finalizers(json!(["a", "b", "a"])),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            finalizers(json!(["b"])),
        ),
        (
            "a null deletion list removes the list, as upstream",
            finalizers(json!(["a"])),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": null}}),
            json!({"metadata": {}}),
        ),
    ];
    run_smp_cases("Pod", cases);
}

#[test]
fn set_element_order() {
    let cases: Vec<Case> = vec![
        (
            "reorder a primitive list",
            finalizers(json!(["a", "b", "c"])),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "c", "a"]}}),
            finalizers(json!(["b", "c", "a"])),
        ),
        (
            "add an item in a list of primitives and preserve order (upstream vector)",
            finalizers(json!(["1", "4", "2"])),
            json!({"metadata": {"$setElementOrder/finalizers": ["3", "1", "2"], "finalizers": ["3"]}}),
            finalizers(json!(["3", "1", "4", "2"])),
        ),
        (
            "set elements order in a list with server-only items 3 (upstream vector)",
            containers(
                json!([{"name": "1", "image": "a"}, {"name": "2", "image": "2"}, {"name": "7"},
                              {"name": "9"}, {"name": "8"}, {"name": "3", "image": "3"}, {"name": "4", "image": "4"}]),
            ),
            json!({"spec": {"$setElementOrder/containers": [{"name": "2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}]}}),
            containers(
                json!([{"name": "2", "image": "2"}, {"name": "1", "image": "a"}, {"name": "7"},
                              {"name": "9"}, {"name": "8"}, {"name": "4", "image": "4"}, {"name": "3", "image": "3"}]),
            ),
        ),
        (
            "order names an item the list lacks (upstream vector)",
            containers(json!([{"name": "1"}, {"name": "3"}])),
            json!({"spec": {"$setElementOrder/containers": [{"name": "3"}, {"name": "2"}, {"name": "1"}],
                            "containers": [{"name": "3", "image": "3"}, {"name": "1", "image": "1"}]}}),
            containers(json!([{"name": "3", "image": "3"}, {"name": "1", "image": "1"}])),
        ),
        (
            "update an item and reorder",
            containers(json!([{"name": "a"}, {"name": "b"}])),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                            "containers": [{"name": "a", "image": "2"}]}}),
            containers(json!([{"name": "b"}, {"name": "a", "image": "2"}])),
        ),
        (
            "delete and reorder in one list, reorder in another (upstream vector)",
            json!({"spec": {"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}],
                            "volumes": [{"name": "c", "emptyDir": {}}, {"name": "d", "emptyDir": {}}]}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}],
                            "$setElementOrder/volumes": [{"name": "d"}, {"name": "c"}],
                            "containers": [{"$patch": "delete", "name": "a"}]}}),
            json!({"spec": {"containers": [{"name": "b", "image": "b"}],
                            "volumes": [{"name": "d", "emptyDir": {}}, {"name": "c", "emptyDir": {}}]}}),
        ),
        (
            "a list the original lacks follows the order",
            json!({"spec": {}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                            "containers": [{"name": "b"}, {"name": "a", "image": null}]}}),
            containers(json!([{"name": "b"}, {"name": "a"}])),
        ),
        (
            "an order for a list neither side has is ignored",
            json!({"spec": {}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "b"}]}}),
            json!({"spec": {}}),
        ),
        (
            "duplicates keep their relative order (upstream vector)",
            finalizers(json!(["1", "2", "3", "2", "4"])),
            json!({"metadata": {"$setElementOrder/finalizers": ["2", "1", "4", "3", "2"]}}),
            finalizers(json!(["2", "2", "1", "4", "3"])),
        ),
    ];
    run_smp_cases("Pod", cases);
}

#[test]
fn directive_errors() {
    let cases = vec![
        (
            "$patch: merge on a map",
            json!({"metadata": {"labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"$patch": "merge"}}}),
            400,
            "unknown patch type: merge in map: {\"$patch\":\"merge\"}",
        ),
        (
            "a non-string $patch",
            json!({"metadata": {}}),
            json!({"metadata": {"$patch": 5}}),
            400,
            "unknown patch type: 5 in map: {\"$patch\":5}",
        ),
        (
            "$patch: merge in a list",
            containers(json!([{"name": "a"}])),
            containers(json!([{"name": "a", "$patch": "merge"}])),
            400,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            "$patch: merge in a new list",
            json!({"spec": {}}),
            containers(json!([{"name": "a", "$patch": "merge"}])),
            400,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            "an unknown $patch in a list",
            containers(json!([{"name": "a"}])),
            containers(json!([{"name": "a", "$patch": "bogus"}])),
            400,
            "unknown patch type: bogus in map: {\"$patch\":\"bogus\",\"name\":\"a\"}",
        ),
        (
            "$deleteFromPrimitiveList without /",
            finalizers(json!(["a"])),
            json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
            400,
            "invalid patch format of primitive list",
        ),
        (
            "$deleteFromPrimitiveList not a list",
            finalizers(json!(["a"])),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
            400,
            "invalid patch format of primitive list",
        ),
        (
            "$setElementOrder without /",
            finalizers(json!(["a"])),
            json!({"metadata": {"$setElementOrderfinalizers": ["a"]}}),
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            "$setElementOrder not a list",
            finalizers(json!(["a"])),
            json!({"metadata": {"$setElementOrder/finalizers": "a"}}),
            400,
            "invalid patch format of setElementOrder list",
        ),
        (
            "patch list order disagrees with $setElementOrder (upstream vector)",
            containers(json!([{"name": "1"}, {"name": "3"}, {"name": "2"}])),
            json!({"spec": {"$setElementOrder/containers": [{"name": "1"}, {"name": "2"}, {"name": "3"}],
                            "containers": [{"name": "3", "image": "3"}, {"name": "1", "image": "1"}]}}),
            400,
            "doesn't match $setElementOrder list",
        ),
        (
            "primitive patch list order disagrees with $setElementOrder (upstream vector)",
            finalizers(json!(["1", "3", "2"])),
            json!({"metadata": {"$setElementOrder/finalizers": ["1", "2", "3"], "finalizers": ["3", "1"]}}),
            400,
            "The order in patch list:\n[\"3\",\"1\"]\n doesn't match $setElementOrder list:\n[\"1\",\"2\",\"3\"]\n",
        ),
    ];
    run_smp_error_cases("Pod", cases);
}
