//! Server-side apply facts: FieldsV1 as upstream writes it, and structured-merge-diff's
//! documented merge cases (multiple appliers, sets, keyed lists, atomic values, ownership
//! transfer with force, removal of fields no longer applied).

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::{Value, json};

use super::fieldpath::{PathElement, Set, path_string};
use super::managers::{self, Entry, ManagerId, Operation};
use super::schema::{Ty, TypeSource};
use super::*;

/// A schema given inline: `root` and `definitions`.
struct Inline(Value);

impl TypeSource for Inline {
    fn root(&self, _: &str, _: &str, _: &str) -> Option<&Value> {
        self.0.get("root")
    }
    fn definition(&self, name: &str) -> Option<&Value> {
        self.0.get("definitions")?.get(name)
    }
}

/// The test type: scalars, a set, an atomic list, a keyed list, a granular and an atomic map,
/// and a nested struct.
fn test_types() -> Arc<dyn TypeSource> {
    Arc::new(Inline(json!({
        "root": {"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/definitions/Meta"},
            "numeric": {"type": "integer"},
            "string": {"type": "string"},
            "other": {"type": "string"},
            "set": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "atomicList": {"type": "array", "items": {"type": "string"}},
            "items": {"type": "array", "items": {"$ref": "#/definitions/Item"},
                      "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
            "smpItems": {"type": "array", "items": {"$ref": "#/definitions/Item"},
                      "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "selector": {"type": "object", "additionalProperties": {"type": "string"},
                         "x-kubernetes-map-type": "atomic"},
            "inner": {"$ref": "#/definitions/Inner"},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }},
        "definitions": {
            "Meta": {"type": "object", "properties": {
                "name": {"type": "string"}, "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "managedFields": {"type": "array", "items": {"type": "object"}},
                "resourceVersion": {"type": "string"}
            }},
            "Item": {"type": "object", "properties": {
                "name": {"type": "string"}, "value": {"type": "integer"}, "extra": {"type": "string"}
            }},
            "Inner": {"type": "object", "properties": {
                "a": {"type": "string"}, "b": {"type": "string"}
            }}
        }
    })))
}

fn tracking(manager: &str) -> FieldTracking {
    FieldTracking {
        manager: manager.to_string(),
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Thing".into(),
        subresource: String::new(),
        reset: Reset::Status,
        types: test_types(),
    }
}

/// A manager's writes of a built-in kind (group, version, kind) through its main resource.
fn builtin_tracking(
    manager: &str,
    (group, version, kind): (&str, &str, &str),
    reset: Reset,
) -> FieldTracking {
    FieldTracking {
        manager: manager.to_string(),
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        subresource: String::new(),
        reset,
        types: schema::builtin(),
    }
}

fn obj(fields: Value) -> Value {
    let mut o = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}});
    if let (Some(m), Value::Object(f)) = (o.as_object_mut(), fields) {
        m.extend(f);
    }
    o
}

fn apply_as(
    live: Option<&Value>,
    manager: &str,
    config: Value,
    force: bool,
) -> Result<Value, ApiError> {
    apply(&tracking(manager), live, &obj(config), force)
}

fn managed_of(o: &Value) -> managers::Managed {
    managers::decode(o.pointer("/metadata/managedFields")).expect("managedFields decode")
}

fn set_of(o: &Value, manager: &str, op: Operation) -> Option<Value> {
    managed_of(o)
        .into_iter()
        .find(|(id, _)| id.manager == manager && id.operation == op)
        .map(|(_, e)| e.set.to_fields_v1())
}

fn without_meta(o: &Value) -> Value {
    let mut o = o.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
    }
    o
}

#[test]
fn fields_v1_round_trip_as_upstream_writes_it() {
    let text = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}},
        }}}, "f:finalizers": {"v:\"a\"": {}}}
    });
    let set = Set::from_fields_v1(&text).unwrap();
    assert_eq!(set.to_fields_v1(), text);
    let paths: Vec<String> = set.paths().iter().map(|p| path_string(p)).collect();
    assert!(paths.contains(&".metadata.labels".to_string()), "{paths:?}");
    assert!(paths.contains(&".spec.template.spec.containers[name=\"nginx\"].image".to_string()));
    assert!(paths.contains(&".spec.finalizers[=\"a\"]".to_string()));
    assert!(!paths.contains(&".metadata".to_string()));
}

#[test]
fn keys_sort_by_name_and_print_as_upstream() {
    let item = json!({"protocol": "TCP", "containerPort": 80, "name": "http"});
    let pe = PathElement::key_of(&item, &["protocol", "containerPort"]).unwrap();
    assert_eq!(pe.serialize(), r#"k:{"containerPort":80,"protocol":"TCP"}"#);
    assert_eq!(pe.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
    assert_eq!(PathElement::parse(&pe.serialize()).unwrap(), pe);
    assert_eq!(PathElement::parse("i:3").unwrap(), PathElement::Index(3));
    assert!(PathElement::parse("x:3").is_err());
    assert!(PathElement::key_of(&json!({"name": "a"}), &["missing"]).is_none());
}

#[test]
fn set_algebra() {
    let a = Set::from_fields_v1(&json!({"f:a": {}, "f:b": {"f:c": {}, "f:d": {}}})).unwrap();
    let b = Set::from_fields_v1(&json!({"f:b": {"f:c": {}}, "f:e": {}})).unwrap();
    assert_eq!(
        a.union(&b).to_fields_v1(),
        json!({"f:a": {}, "f:b": {"f:c": {}, "f:d": {}}, "f:e": {}})
    );
    assert_eq!(
        a.difference(&b).to_fields_v1(),
        json!({"f:a": {}, "f:b": {"f:d": {}}})
    );
    assert_eq!(
        a.intersection(&b).to_fields_v1(),
        json!({"f:b": {"f:c": {}}})
    );
    assert!(a.difference(&a).is_empty());
}

#[test]
fn removing_one_path_keeps_what_lies_below_and_prunes_what_empties() {
    // `b` is both a member (the field itself) and a parent of `c`.
    let mut set = Set::from_fields_v1(&json!({"f:a": {}, "f:b": {".": {}, "f:c": {}}})).unwrap();
    set.remove(&fields(&["b"]));
    assert_eq!(set.to_fields_v1(), json!({"f:a": {}, "f:b": {"f:c": {}}}));
    set.remove(&fields(&["b", "c"]));
    assert_eq!(set.to_fields_v1(), json!({"f:a": {}}));
    set.remove(&fields(&["missing", "x"]));
    set.remove(&fields(&["a"]));
    assert!(set.is_empty());
}

#[test]
fn field_set_of_an_applied_config() {
    let types = test_types();
    let ty = Ty::root(&*types, "", "", "");
    let config = json!({
        "metadata": {"labels": {"app": "x"}},
        "numeric": 1,
        "set": ["a", "b"],
        "atomicList": ["x"],
        "items": [{"name": "one", "value": 1}],
        "smpItems": [{"name": "two"}],
        "labels": {"k": "v"},
        "selector": {"k": "v"},
        "inner": {"a": "1"},
        "empty": {}
    });
    assert_eq!(
        walk::to_field_set(&config, ty).to_fields_v1(),
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:numeric": {},
            "f:set": {"v:\"a\"": {}, "v:\"b\"": {}},
            "f:atomicList": {},
            "f:items": {"k:{\"name\":\"one\"}": {".": {}, "f:name": {}, "f:value": {}}},
            "f:smpItems": {"k:{\"name\":\"two\"}": {".": {}, "f:name": {}}},
            "f:labels": {"f:k": {}},
            "f:selector": {},
            "f:inner": {"f:a": {}},
            "f:empty": {}
        })
    );
}

#[test]
fn first_apply_creates_and_owns_what_it_applied() {
    let o = apply_as(None, "a", json!({"numeric": 1, "string": "s"}), false).unwrap();
    assert_eq!(o["numeric"], 1);
    assert_eq!(
        set_of(&o, "a", Operation::Apply),
        Some(json!({"f:numeric": {}, "f:string": {}}))
    );
    let entry = &o["metadata"]["managedFields"][0];
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "example.com/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].is_string());
}

#[test]
fn reapplying_without_a_field_removes_it() {
    // smd leaf_test "apply twice, dangling": the field the applier dropped goes.
    let o = apply_as(None, "a", json!({"numeric": 1, "string": "s"}), false).unwrap();
    let o = apply_as(Some(&o), "a", json!({"numeric": 2}), false).unwrap();
    assert_eq!(without_meta(&o), json!({"numeric": 2}));
    assert_eq!(
        set_of(&o, "a", Operation::Apply),
        Some(json!({"f:numeric": {}}))
    );
}

#[test]
fn conflicting_appliers_and_force() {
    // smd multiple_appliers_test: a second applier changing an owned value conflicts.
    let o = apply_as(None, "a", json!({"numeric": 1, "string": "s"}), false).unwrap();
    let e = apply_as(Some(&o), "b", json!({"numeric": 2}), false).unwrap_err();
    assert_eq!((e.code, e.reason), (409, Reason::Conflict));
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"a\": .numeric"
    );
    let causes = &e.to_status_json()["details"]["causes"];
    assert_eq!(
        causes,
        &json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".numeric"}])
    );
    // Force takes the field over.
    let o = apply_as(Some(&o), "b", json!({"numeric": 2}), true).unwrap();
    assert_eq!(o["numeric"], 2);
    assert_eq!(
        set_of(&o, "a", Operation::Apply),
        Some(json!({"f:string": {}}))
    );
    assert_eq!(
        set_of(&o, "b", Operation::Apply),
        Some(json!({"f:numeric": {}}))
    );
    // "a" dropping the field it lost does not remove it: "b" owns it.
    let o = apply_as(Some(&o), "a", json!({"string": "s"}), false).unwrap();
    assert_eq!(o["numeric"], 2);
}

#[test]
fn same_value_is_shared_not_a_conflict() {
    let o = apply_as(None, "a", json!({"numeric": 1}), false).unwrap();
    let o = apply_as(Some(&o), "b", json!({"numeric": 1}), false).unwrap();
    assert_eq!(
        set_of(&o, "a", Operation::Apply),
        Some(json!({"f:numeric": {}}))
    );
    assert_eq!(
        set_of(&o, "b", Operation::Apply),
        Some(json!({"f:numeric": {}}))
    );
    // One of two owners stops applying it: it stays.
    let o = apply_as(Some(&o), "a", json!({"string": "x"}), false).unwrap();
    assert_eq!(o["numeric"], 1);
}

#[test]
fn many_conflicts_are_grouped_by_manager() {
    let o = apply_as(None, "a", json!({"numeric": 1, "string": "s"}), false).unwrap();
    let e = apply_as(Some(&o), "b", json!({"numeric": 2, "string": "t"}), false).unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .numeric\n- .string"
    );
}

#[test]
fn update_then_apply_conflicts_with_the_updater() {
    let t = tracking("controller");
    let mut o = obj(json!({"numeric": 3}));
    track_update(&t, None, &mut o, None);
    assert_eq!(
        set_of(&o, "controller", Operation::Update),
        Some(json!({"f:numeric": {}}))
    );
    let e = apply_as(Some(&o), "a", json!({"numeric": 1}), false).unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"controller\" using example.com/v1: .numeric"
    );
    // An Update takes fields over without asking.
    let o = apply_as(Some(&o), "a", json!({"numeric": 1}), true).unwrap();
    let mut o2 = o.clone();
    o2["numeric"] = json!(5);
    track_update(&t, Some(&o), &mut o2, None);
    assert_eq!(set_of(&o2, "a", Operation::Apply), None);
    assert_eq!(
        set_of(&o2, "controller", Operation::Update),
        Some(json!({"f:numeric": {}}))
    );
}

#[test]
fn sets_merge_per_value() {
    // smd set_test: appliers each own their values; dropping one removes only it.
    let o = apply_as(None, "a", json!({"set": ["a", "b"]}), false).unwrap();
    let o = apply_as(Some(&o), "b", json!({"set": ["c"]}), false).unwrap();
    assert_eq!(o["set"], json!(["a", "b", "c"]));
    let o = apply_as(Some(&o), "a", json!({"set": ["a"]}), false).unwrap();
    assert_eq!(o["set"], json!(["a", "c"]));
    assert_eq!(
        set_of(&o, "b", Operation::Apply),
        Some(json!({"f:set": {"v:\"c\"": {}}}))
    );
}

#[test]
fn keyed_lists_merge_per_item() {
    // smd multiple_appliers_test with an associative list: items are merged by key.
    let o = apply_as(
        None,
        "a",
        json!({"items": [{"name": "x", "value": 1}]}),
        false,
    )
    .unwrap();
    let o = apply_as(
        Some(&o),
        "b",
        json!({"items": [{"name": "y", "value": 2}]}),
        false,
    )
    .unwrap();
    assert_eq!(
        o["items"],
        json!([{"name": "x", "value": 1}, {"name": "y", "value": 2}])
    );
    // "b" adds a field to "a"'s item: no conflict (a new field), shared item.
    let o = apply_as(
        Some(&o),
        "b",
        json!({"items": [{"name": "y", "value": 2}, {"name": "x", "extra": "e"}]}),
        false,
    )
    .unwrap();
    // The configuration's order wins for the items it names (upstream's merge order).
    assert_eq!(
        o["items"][1],
        json!({"name": "x", "value": 1, "extra": "e"})
    );
    // Changing a's value conflicts, with upstream's key path.
    let e = apply_as(
        Some(&o),
        "b",
        json!({"items": [{"name": "x", "value": 9}]}),
        false,
    )
    .unwrap_err();
    assert!(
        e.message.ends_with(".items[name=\"x\"].value"),
        "{}",
        e.message
    );
    // "a" drops its item: b's field in it keeps the item, a's own field goes.
    let o = apply_as(Some(&o), "a", json!({"items": []}), false).unwrap();
    assert_eq!(
        o["items"],
        json!([{"name": "y", "value": 2}, {"name": "x", "extra": "e"}])
    );
}

#[test]
fn strategic_merge_keys_make_keyed_lists() {
    let o = apply_as(
        None,
        "a",
        json!({"smpItems": [{"name": "x", "value": 1}]}),
        false,
    )
    .unwrap();
    let o = apply_as(Some(&o), "b", json!({"smpItems": [{"name": "y"}]}), false).unwrap();
    assert_eq!(
        o["smpItems"],
        json!([{"name": "x", "value": 1}, {"name": "y"}])
    );
}

#[test]
fn atomic_lists_and_maps_are_replaced_whole() {
    let o = apply_as(
        None,
        "a",
        json!({"atomicList": ["1", "2"], "selector": {"a": "1"}}),
        false,
    )
    .unwrap();
    let e = apply_as(Some(&o), "b", json!({"atomicList": ["3"]}), false).unwrap_err();
    assert!(e.message.ends_with(": .atomicList"), "{}", e.message);
    let e = apply_as(Some(&o), "b", json!({"selector": {"b": "2"}}), false).unwrap_err();
    assert!(e.message.ends_with(": .selector"), "{}", e.message);
    let o = apply_as(
        Some(&o),
        "b",
        json!({"atomicList": ["3"], "selector": {"b": "2"}}),
        true,
    )
    .unwrap();
    assert_eq!(o["atomicList"], json!(["3"]));
    assert_eq!(o["selector"], json!({"b": "2"}));
}

#[test]
fn granular_maps_merge_per_key() {
    let o = apply_as(
        None,
        "a",
        json!({"labels": {"a": "1"}, "inner": {"a": "x"}}),
        false,
    )
    .unwrap();
    let o = apply_as(
        Some(&o),
        "b",
        json!({"labels": {"b": "2"}, "inner": {"b": "y"}}),
        false,
    )
    .unwrap();
    assert_eq!(o["labels"], json!({"a": "1", "b": "2"}));
    assert_eq!(o["inner"], json!({"a": "x", "b": "y"}));
    // "a" stops applying its label and its struct field: they go, b's stay.
    let o = apply_as(Some(&o), "a", json!({}), false).unwrap();
    assert_eq!(o["labels"], json!({"b": "2"}));
    assert_eq!(o["inner"], json!({"b": "y"}));
}

#[test]
fn schemaless_values_are_deduced() {
    // No schema: maps are granular and lists atomic, as upstream for custom resources without one.
    let t = FieldTracking {
        types: Arc::new(Inline(json!({}))),
        ..tracking("a")
    };
    let o = apply(&t, None, &obj(json!({"spec": {"x": 1, "l": [1]}})), false).unwrap();
    assert_eq!(
        set_of(&o, "a", Operation::Apply),
        Some(json!({"f:spec": {".": {}, "f:x": {}, "f:l": {}}}))
    );
    let t2 = FieldTracking {
        manager: "b".into(),
        ..t.clone()
    };
    let o = apply(&t2, Some(&o), &obj(json!({"spec": {"y": 2}})), false).unwrap();
    assert_eq!(o["spec"], json!({"x": 1, "l": [1], "y": 2}));
    let e = apply(&t2, Some(&o), &obj(json!({"spec": {"l": [2]}})), false).unwrap_err();
    assert!(e.message.ends_with(": .spec.l"), "{}", e.message);
}

#[test]
fn status_is_not_owned_through_the_main_resource() {
    let o = apply_as(
        None,
        "a",
        json!({"numeric": 1, "status": {"phase": "x"}}),
        false,
    )
    .unwrap();
    assert_eq!(
        set_of(&o, "a", Operation::Apply),
        Some(json!({"f:numeric": {}}))
    );
}

#[test]
fn applying_to_an_object_nobody_manages_makes_before_first_apply() {
    let live = obj(json!({"numeric": 1, "string": "s"}));
    let e = apply_as(Some(&live), "a", json!({"numeric": 2}), false).unwrap_err();
    assert!(
        e.message
            .contains("conflict with \"before-first-apply\" using example.com/v1"),
        "{}",
        e.message
    );
}

#[test]
fn apply_refuses_managed_fields_in_the_config() {
    let e = apply_as(
        None,
        "a",
        json!({"metadata": {"name": "t", "managedFields": []}}),
        false,
    )
    .unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(e.message, "metadata.managedFields must be nil");
}

#[test]
fn updates_merge_into_one_entry_per_manager() {
    let t = tracking("kubectl-edit");
    let mut o = obj(json!({"numeric": 1}));
    track_update(&t, None, &mut o, None);
    let mut o2 = o.clone();
    o2["string"] = json!("s");
    track_update(&t, Some(&o), &mut o2, None);
    assert_eq!(o2["metadata"]["managedFields"].as_array().unwrap().len(), 1);
    assert_eq!(
        set_of(&o2, "kubectl-edit", Operation::Update),
        Some(json!({"f:numeric": {}, "f:string": {}}))
    );
    // A no-op update changes nothing, not even the time.
    let mut o3 = o2.clone();
    track_update(&t, Some(&o2), &mut o3, None);
    assert_eq!(o3, o2);
    // Removing a field takes it from its owner.
    let mut o4 = o2.clone();
    o4.as_object_mut().unwrap().remove("numeric");
    track_update(&tracking("other"), Some(&o2), &mut o4, None);
    assert_eq!(
        set_of(&o4, "kubectl-edit", Operation::Update),
        Some(json!({"f:string": {}}))
    );
    assert_eq!(set_of(&o4, "other", Operation::Update), None);
}

#[test]
fn clients_may_set_or_reset_managed_fields() {
    let t = tracking("x");
    let mut o = obj(json!({"numeric": 1}));
    track_update(&t, None, &mut o, None);
    // [] resets: the object is left with no entries (nothing changed in this write).
    let mut o2 = o.clone();
    track_update(&t, Some(&o), &mut o2, Some(&json!([])));
    assert!(o2["metadata"].get("managedFields").is_none(), "{o2}");
    // Sent entries replace the live ones.
    let sent = json!([{"manager": "m", "operation": "Apply", "apiVersion": "example.com/v1",
                       "fieldsType": "FieldsV1", "fieldsV1": {"f:numeric": {}}}]);
    let mut o3 = o.clone();
    track_update(&t, Some(&o), &mut o3, Some(&sent));
    assert_eq!(
        set_of(&o3, "m", Operation::Apply),
        Some(json!({"f:numeric": {}}))
    );
    assert_eq!(set_of(&o3, "x", Operation::Update), None);
    // Entries that cannot be decoded keep the live ones.
    let mut o4 = o.clone();
    track_update(
        &t,
        Some(&o),
        &mut o4,
        Some(&json!([{"operation": "Bogus"}])),
    );
    assert_eq!(
        o4["metadata"]["managedFields"],
        o["metadata"]["managedFields"]
    );
}

#[test]
fn create_tracks_the_defaulted_object_like_kubectl_create() {
    // A Deployment as `kubectl create deployment` leaves it after defaulting: struct fields and
    // required fields of the zero object have no "." of their own (they exist in Go's zero
    // value); optional maps, list items and lists inside new items do.
    let t = builtin_tracking(
        "kubectl-create",
        ("apps", "v1", "Deployment"),
        Reset::Status,
    );
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "uid": "u", "generation": 1},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                         "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                         "resources": {}}],
                         "restartPolicy": "Always"}
            }
        },
        "status": {}
    });
    track_update(&t, None, &mut d, None);
    let entry = &d["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl-create");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(
        entry["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {"k:{\"name\":\"nginx\"}": {
                            ".": {}, "f:image": {}, "f:name": {},
                            // A list in a new item was nil before: it has its own ".".
                            "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                ".": {}, "f:containerPort": {}, "f:protocol": {}
                            }},
                            "f:resources": {}
                        }},
                        "f:restartPolicy": {}
                    }
                }
            }
        })
    );
    assert!(entry.get("subresource").is_none());
}

#[test]
fn builtin_ports_key_on_port_and_default_protocol() {
    let types = schema::builtin();
    let ty = Ty::root(&*types, "", "v1", "Pod");
    let pod = json!({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}});
    assert_eq!(
        walk::to_field_set(&pod, ty).to_fields_v1(),
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {
            ".": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
        }}}})
    );
}

#[test]
fn update_entries_are_capped_into_ancient_changes() {
    let mut managed = managers::Managed::new();
    for i in 0..12 {
        let mut set = Set::new();
        set.insert(&[PathElement::Field(format!("f{i}"))]);
        managed.insert(
            ManagerId::new(&format!("m{i:02}"), Operation::Update, "v1", ""),
            Entry {
                set,
                api_version: "v1".into(),
                time: Some(format!("2024-01-01T00:00:{i:02}Z")),
            },
        );
    }
    managers::cap_updates(&mut managed);
    assert_eq!(managed.len(), 10);
    let ancient = managed
        .iter()
        .find(|(id, _)| id.manager == managers::ANCIENT_CHANGES)
        .map(|(_, e)| e.clone())
        .expect("ancient-changes entry");
    assert_eq!(
        ancient.set.to_fields_v1(),
        json!({"f:f0": {}, "f:f1": {}, "f:f2": {}})
    );
    assert_eq!(ancient.time.as_deref(), Some("2024-01-01T00:00:02Z"));
    assert!(
        !managed
            .keys()
            .any(|id| id.manager == "m00" || id.manager == "m02")
    );
}

#[test]
fn entries_are_written_in_upstream_order() {
    let mut managed = managers::Managed::new();
    let entry = |t: &str| Entry {
        set: Set::from_fields_v1(&json!({"f:a": {}})).unwrap(),
        api_version: "v1".into(),
        time: Some(t.into()),
    };
    managed.insert(
        ManagerId::new("z", Operation::Update, "v1", ""),
        entry("2024-01-01T00:00:00Z"),
    );
    managed.insert(
        ManagerId::new("y", Operation::Update, "v1", "status"),
        entry("2023-01-01T00:00:00Z"),
    );
    managed.insert(
        ManagerId::new("x", Operation::Apply, "v1", ""),
        entry("2025-01-01T00:00:00Z"),
    );
    let list = managers::encode(&managed);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x", "y", "z"]);
    assert_eq!(list[1]["subresource"], "status");
    assert_eq!(managers::decode(Some(&list)).unwrap(), managed);
}

#[test]
fn managers_from_user_agents_and_their_validation() {
    assert_eq!(
        manager_for(None, Some("kubectl/v1.33.0 (linux/amd64) kubernetes/abc")),
        "kubectl"
    );
    assert_eq!(
        manager_for(Some("kubectl-edit"), Some("kubectl/v1.33.0")),
        "kubectl-edit"
    );
    assert_eq!(manager_for(Some(""), Some("kube-rs/0.1")), "kube-rs");
    assert_eq!(manager_for(None, None), "");
    assert_eq!(manager_for(None, Some(&"a".repeat(200))).len(), 128);
    assert_eq!(manager_for(None, Some("a\u{7}b/1")), "ab");
    assert!(validate_field_manager(&"a".repeat(128)).is_empty());
    let errs = validate_field_manager(&"a".repeat(129));
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        "fieldManager: Too long: may not be more than 128 bytes"
    );
    let errs = validate_field_manager("a\u{7}");
    assert_eq!(
        errs[0].to_string(),
        "fieldManager: Invalid value: \"a\\a\": invalid character U+0007 (at position 1)"
    );
}

#[test]
fn a_null_in_a_struct_of_the_zero_object_is_not_set_but_in_a_new_item_it_is() {
    // Upstream compares a create with the zero object, whose zero times are null already (a
    // template's `metadata.creationTimestamp`); a new list item has no zero to compare with
    // (a pod condition's `lastProbeTime: null` is the kubelet's field).
    let t = tracking("creator");
    let mut o =
        obj(json!({"inner": {"a": null, "b": "x"}, "items": [{"name": "i", "extra": null}]}));
    track_update(&t, None, &mut o, None);
    assert_eq!(
        set_of(&o, "creator", Operation::Update),
        Some(
            json!({"f:inner": {"f:b": {}}, "f:items": {".": {}, "k:{\"name\":\"i\"}": {
            ".": {}, "f:extra": {}, "f:name": {}}}})
        )
    );
}

#[test]
fn a_create_adds_the_optional_pointer_structs_it_sets_as_a_whole() {
    // Go's zero Deployment has its strategy and pod spec (non-pointer structs) but no
    // rollingUpdate or affinity (nil pointers): upstream records those with their own ".".
    let t = builtin_tracking(
        "kubectl-create",
        ("apps", "v1", "Deployment"),
        Reset::Status,
    );
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"spec": {
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]
                }}},
                "restartPolicy": "Always"
            }}
        }
    });
    track_update(&t, None, &mut d, None);
    assert_eq!(
        d["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {
            "f:strategy": {
                "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                "f:type": {}
            },
            "f:template": {"f:spec": {
                "f:affinity": {".": {}, "f:nodeAffinity": {
                    ".": {}, "f:requiredDuringSchedulingIgnoredDuringExecution": {}
                }},
                "f:restartPolicy": {}
            }}
        }})
    );
}

#[test]
fn a_create_does_not_set_what_gos_zero_object_already_has() {
    // `ports: null` (a nil slice without omitempty) and `addressType: ""` are in Go's zero
    // EndpointSlice too; the endpoint's zero values are not (a new list item).
    let t = builtin_tracking(
        "m",
        ("discovery.k8s.io", "v1", "EndpointSlice"),
        Reset::None,
    );
    let mut s = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "s"},
        "addressType": "", "ports": null,
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {}}]
    });
    track_update(&t, None, &mut s, None);
    assert_eq!(
        s["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:endpoints": {}})
    );
}
