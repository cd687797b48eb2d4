//! Tests for ObjectMeta accessors and metadata validation.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::validation::{name_is_dns_subdomain, name_is_dns1035_label};

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "default",
            "uid": "u-1",
            "resourceVersion": "42",
            "generation": 3,
            "labels": {"app": "web", "bad": 1},
            "annotations": {"note": "x"},
            "finalizers": ["example.com/keep"],
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-1",
                 "controller": true, "blockOwnerDeletion": true},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg", "uid": "cm-1"}
            ]
        },
        "spec": {}
    })
}

#[test]
fn reads_fields() {
    let p = pod();
    assert_eq!(api_version(&p), Some("v1"));
    assert_eq!(kind(&p), Some("Pod"));
    assert_eq!(name(&p), Some("web-1"));
    assert_eq!(namespace(&p), Some("default"));
    assert_eq!(uid(&p), Some("u-1"));
    assert_eq!(resource_version(&p), Some("42"));
    assert_eq!(generation(&p), Some(3));
    assert_eq!(generate_name(&p), None);
    assert_eq!(deletion_timestamp(&p), None);
    assert!(!is_being_deleted(&p));
    let l = labels(&p);
    assert_eq!(l.len(), 1);
    assert_eq!(l.get("app").map(String::as_str), Some("web"));
    assert_eq!(label(&p, "app"), Some("web"));
    assert_eq!(label(&p, "bad"), None);
    assert!(labels_value(&p).is_some());
    assert_eq!(annotation(&p, "note"), Some("x"));
    assert_eq!(annotations(&p).len(), 1);
    assert_eq!(finalizers(&p), ["example.com/keep"]);
    assert!(has_finalizer(&p, "example.com/keep"));
    let owners = owner_references(&p);
    assert_eq!(owners.len(), 2);
    assert_eq!(owners[0].block_owner_deletion, Some(true));
    assert_eq!(controller_of(&p).map(|o| o.name), Some("web".to_string()));
    assert_eq!(gvk_of(&p).unwrap(), GroupVersionKind::new("", "v1", "Pod"));
}

#[test]
fn reads_tolerate_garbage() {
    for v in [json!(null), json!([1]), json!("x"), json!({"metadata": 5})] {
        assert_eq!(name(&v), None);
        assert!(labels(&v).is_empty());
        assert!(finalizers(&v).is_empty());
        assert!(owner_references(&v).is_empty());
    }
    assert!(matches!(
        gvk_of(&json!({"apiVersion": "v1"})),
        Err(MetaError::MissingKind(_))
    ));
    assert_eq!(
        gvk_of(&json!({"kind": "Pod"})).unwrap_err().to_string(),
        "Object 'apiVersion' is missing in '{\"kind\":\"Pod\"}'"
    );
    assert_eq!(
        gvk_of(&json!({"apiVersion": "a/b/c", "kind": "X"}))
            .unwrap_err()
            .to_string(),
        "unexpected GroupVersion string: a/b/c"
    );
}

#[test]
fn writes_fields() {
    let mut o = json!({});
    set_gvk(&mut o, &GroupVersionKind::new("apps", "v1", "Deployment")).unwrap();
    assert_eq!(api_version(&o), Some("apps/v1"));
    set_name(&mut o, "d").unwrap();
    set_namespace(&mut o, "ns").unwrap();
    set_uid(&mut o, "u").unwrap();
    set_resource_version(&mut o, "7").unwrap();
    set_generation(&mut o, 1).unwrap();
    set_creation_timestamp(&mut o, "2024-01-01T00:00:00Z").unwrap();
    set_deletion_timestamp(&mut o, Some("2024-01-02T00:00:00Z")).unwrap();
    set_deletion_grace_period_seconds(&mut o, Some(30)).unwrap();
    assert!(is_being_deleted(&o));
    assert_eq!(deletion_grace_period_seconds(&o), Some(30));
    set_deletion_timestamp(&mut o, None).unwrap();
    set_deletion_grace_period_seconds(&mut o, None).unwrap();
    set_namespace(&mut o, "").unwrap();
    assert_eq!(
        o,
        json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{
            "name":"d","uid":"u","resourceVersion":"7","generation":1,
            "creationTimestamp":"2024-01-01T00:00:00Z"}})
    );
    set_api_version(&mut o, "v1").unwrap();
    set_kind(&mut o, "ConfigMap").unwrap();
    assert_eq!(kind(&o), Some("ConfigMap"));

    let mut o = json!({"metadata": null});
    set_label(&mut o, "a", Some("1")).unwrap();
    set_label(&mut o, "b", Some("2")).unwrap();
    set_label(&mut o, "a", None).unwrap();
    assert_eq!(o, json!({"metadata": {"labels": {"b": "2"}}}));
    set_label(&mut o, "b", None).unwrap();
    assert_eq!(o, json!({"metadata": {}}));
    let mut m = BTreeMap::new();
    m.insert("k".to_string(), "v".to_string());
    set_annotations(&mut o, &m).unwrap();
    set_labels(&mut o, &m).unwrap();
    assert_eq!(annotations(&o), m);
    assert_eq!(labels(&o), m);
    set_annotation(&mut o, "k2", Some("v2")).unwrap();
    assert_eq!(annotations(&o).len(), 2);
    set_labels(&mut o, &BTreeMap::new()).unwrap();
    assert!(metadata(&o).unwrap().get("labels").is_none());

    assert!(add_finalizer(&mut o, "f1").unwrap());
    assert!(!add_finalizer(&mut o, "f1").unwrap());
    assert!(add_finalizer(&mut o, "f2").unwrap());
    assert_eq!(finalizers(&o), ["f1", "f2"]);
    assert!(remove_finalizer(&mut o, "f1").unwrap());
    assert!(!remove_finalizer(&mut o, "f1").unwrap());
    assert!(remove_finalizer(&mut o, "f2").unwrap());
    assert!(metadata(&o).unwrap().get("finalizers").is_none());

    let owner = OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "rs".into(),
        uid: "1".into(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    set_owner_references(&mut o, std::slice::from_ref(&owner)).unwrap();
    assert_eq!(
        metadata(&o).unwrap()["ownerReferences"],
        json!([{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"1","controller":true}])
    );
    assert_eq!(controller_of(&o), Some(owner));
    set_owner_references(&mut o, &[]).unwrap();
    assert!(owner_references(&o).is_empty());
}

#[test]
fn writes_refuse_non_objects() {
    assert_eq!(set_name(&mut json!([]), "x"), Err(MetaError::NotAnObject));
    assert_eq!(
        set_name(&mut json!({"metadata": 1}), "x"),
        Err(MetaError::MetadataNotAnObject)
    );
    assert!(set_kind(&mut json!(null), "X").is_err());
}

fn messages(errs: &[crate::status::FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn validates_names_and_namespaces_on_create() {
    assert!(validate_object_meta(&pod(), true, name_is_dns_subdomain).is_empty());
    let o = json!({"metadata": {"namespace": "default"}});
    assert_eq!(
        messages(&validate_object_meta(&o, true, name_is_dns_subdomain)),
        ["metadata.name: Required value: name or generateName is required"]
    );
    let o = json!({"metadata": {"name": "Bad_Name", "namespace": "Default"}});
    let msgs = messages(&validate_object_meta(&o, true, name_is_dns_subdomain));
    assert_eq!(msgs.len(), 2);
    assert_eq!(
        msgs[0],
        "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    assert!(
        msgs[1].starts_with(
            "metadata.namespace: Invalid value: \"Default\": a lowercase RFC 1123 label"
        )
    );
    let o = json!({"metadata": {"name": "n"}});
    assert_eq!(
        messages(&validate_object_meta(&o, true, name_is_dns_subdomain)),
        ["metadata.namespace: Required value"]
    );
    let o = json!({"metadata": {"name": "n", "namespace": "x"}});
    assert_eq!(
        messages(&validate_object_meta(&o, false, name_is_dns_subdomain)),
        ["metadata.namespace: Forbidden: not allowed on this type"]
    );
    let o = json!({"metadata": {"name": "1svc", "namespace": "x"}});
    assert_eq!(
        validate_object_meta(&o, true, name_is_dns1035_label).len(),
        1
    );
    let o = json!({"metadata": {"name": "web-abcde", "generateName": "Web-", "namespace": "x"}});
    let msgs = messages(&validate_object_meta(&o, true, name_is_dns_subdomain));
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0].starts_with("metadata.generateName: Invalid value: \"Web-\""));
    let o = json!({"metadata": {"name": "n", "generation": -1}});
    assert_eq!(
        messages(&validate_object_meta(&o, false, name_is_dns_subdomain)),
        ["metadata.generation: Invalid value: -1: must be greater than or equal to 0"]
    );
}

#[test]
fn validates_labels_annotations_owners_finalizers() {
    let o = json!({"metadata": {"name": "n",
    "labels": {"a b": "ok", "k": "-v"},
    "annotations": {"Example.com/Key": "fine", "bad key": "x"},
    "finalizers": ["orphan", "foregroundDeletion"],
    "ownerReferences": [
        {"apiVersion": "", "kind": "", "name": "", "uid": ""},
        {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1", "controller": true},
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "2", "controller": true}
    ]}});
    let msgs = messages(&validate_object_meta(&o, false, name_is_dns_subdomain));
    let has = |prefix: &str| msgs.iter().any(|m| m.starts_with(prefix));
    assert!(
        has("metadata.labels: Invalid value: \"a b\": name part must consist"),
        "{msgs:?}"
    );
    assert!(has(
        "metadata.labels: Invalid value: \"-v\": a valid label must be"
    ));
    assert!(has("metadata.annotations: Invalid value: \"bad key\""));
    assert!(!has(
        "metadata.annotations: Invalid value: \"Example.com/Key\""
    ));
    assert!(has(
        "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty"
    ));
    assert!(has(
        "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty"
    ));
    assert!(has(
        "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty"
    ));
    assert!(has(
        "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty"
    ));
    assert!(
        msgs.iter()
            .any(|m| m.ends_with("/v1, Kind=Event is disallowed from being an owner"))
    );
    assert!(msgs.iter().any(|m| m.ends_with(
        "Only one reference can have Controller set to true. Found \"true\" in references for Event/e and Pod/p"
    )));
    assert!(msgs.contains(&"metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set".to_string()));

    let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
    let o = json!({"metadata": {"name": "n", "annotations": {"k": big}}});
    assert_eq!(
        messages(&validate_object_meta(&o, false, name_is_dns_subdomain)),
        ["metadata.annotations: Too long: may not be more than 262144 bytes"]
    );
}

#[test]
fn validates_updates() {
    let old = pod();
    let mut new = pod();
    assert!(validate_object_meta_update(&new, &old).is_empty());
    set_resource_version(&mut new, "").unwrap();
    set_generation(&mut new, 2).unwrap();
    set_uid(&mut new, "other").unwrap();
    set_namespace(&mut new, "elsewhere").unwrap();
    assert_eq!(
        messages(&validate_object_meta_update(&new, &old)),
        [
            "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
            "metadata.generation: Invalid value: 2: must not be decremented",
            "metadata.namespace: Invalid value: \"elsewhere\": field is immutable",
            "metadata.uid: Invalid value: \"other\": field is immutable",
        ]
    );

    let mut deleting = pod();
    set_deletion_timestamp(&mut deleting, Some("2024-01-01T00:00:00Z")).unwrap();
    let mut new = deleting.clone();
    add_finalizer(&mut new, "b.example.com/x").unwrap();
    add_finalizer(&mut new, "a.example.com/x").unwrap();
    assert_eq!(
        messages(&validate_object_meta_update(&new, &deleting)),
        [
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"a.example.com/x\", \"b.example.com/x\"}"
        ]
    );
    // Removing finalizers while deleting is fine; absent and "" are the same value.
    let mut new = deleting.clone();
    set_finalizers(&mut new, &[]).unwrap();
    assert!(validate_object_meta_update(&new, &deleting).is_empty());
    let old = json!({"metadata": {"name": "n", "resourceVersion": "1"}});
    let new = json!({"metadata": {"name": "n", "namespace": "", "resourceVersion": "1"}});
    assert!(validate_object_meta_update(&new, &old).is_empty());
}
