//! Go's zero fields, as upstream's API server returns them for the same objects.

use serde_json::{Value, json};

use super::fill_zero_fields;

fn filled(mut obj: Value) -> Value {
    fill_zero_fields(&mut obj);
    obj
}

#[test]
fn the_table_is_what_the_generator_makes_of_the_schema() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = std::process::Command::new("python3")
        .arg(format!("{root}/tools/gen-go-shape.py"))
        .arg("--check")
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn kinds_are_sorted_for_binary_search() {
    let kinds: Vec<(&str, &str)> = super::table::KINDS
        .iter()
        .map(|(v, k, _)| (*v, *k))
        .collect();
    let mut sorted = kinds.clone();
    sorted.sort();
    assert_eq!(kinds, sorted);
}

#[test]
fn an_ingress_has_an_empty_load_balancer_status() {
    let ing = filled(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": { "name": "x", "creationTimestamp": "2026-01-01T00:00:00Z" },
        "spec": { "defaultBackend": { "service": { "name": "s", "port": { "number": 80 } } } }
    }));
    assert_eq!(ing["status"], json!({ "loadBalancer": {} }));
    assert_eq!(ing["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
    // A pointer struct stays absent: `spec.tls`, `defaultBackend.resource`.
    assert!(ing["spec"]["defaultBackend"].get("resource").is_none());
}

#[test]
fn templates_carry_a_null_creation_timestamp() {
    let d = filled(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "d" },
        "spec": { "template": { "spec": { "containers": [{ "name": "c", "image": "i" }] } } }
    }));
    assert_eq!(
        d["spec"]["template"]["metadata"],
        json!({ "creationTimestamp": null })
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({})
    );
    assert_eq!(
        d["spec"]["selector"],
        Value::Null,
        "a pointer is not made up"
    );
    assert_eq!(d["status"], json!({}));
    let cj = filled(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": { "name": "c" },
        "spec": { "schedule": "* * * * *", "jobTemplate": { "spec": { "template": {} } } }
    }));
    assert_eq!(
        cj["spec"]["jobTemplate"]["metadata"],
        json!({ "creationTimestamp": null })
    );
    assert_eq!(
        cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"],
        json!({ "creationTimestamp": null })
    );
}

#[test]
fn pod_conditions_downward_api_and_null_structs() {
    let pod = filled(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p" },
        "spec": { "containers": [{ "name": "c", "env": [
            { "name": "CPU", "valueFrom": { "resourceFieldRef": { "resource": "limits.cpu" } } }
        ] }] },
        "status": null,
    }));
    assert_eq!(
        pod["spec"]["containers"][0]["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"],
        "0"
    );
    assert_eq!(
        pod["status"],
        json!({}),
        "Go decodes null into the zero struct"
    );
    let pod = filled(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p" },
        "status": { "conditions": [{ "type": "Ready", "status": "True",
            "lastTransitionTime": "2026-01-01T00:00:00Z" }] }
    }));
    assert_eq!(
        pod["status"]["conditions"][0],
        json!({ "type": "Ready", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": "2026-01-01T00:00:00Z" })
    );
}

#[test]
fn events_and_service_ports() {
    let ev = filled(json!({
        "apiVersion": "v1", "kind": "Event", "metadata": { "name": "e" },
        "involvedObject": { "kind": "Pod" }, "reason": "R"
    }));
    assert_eq!(ev["eventTime"], Value::Null);
    assert!(ev.as_object().is_some_and(|o| o.contains_key("eventTime")));
    assert_eq!(ev["source"], json!({}));
    assert_eq!(ev["firstTimestamp"], Value::Null);
    let svc = filled(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": { "name": "s" },
        "spec": { "ports": [{ "port": 80 }] }
    }));
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 0);
    assert_eq!(svc["status"], json!({ "loadBalancer": {} }));
}

#[test]
fn unknown_kinds_and_shapes_are_left_alone() {
    let cr = json!({ "apiVersion": "example.com/v1", "kind": "Widget", "spec": {} });
    assert_eq!(filled(cr.clone()), cr);
    // Wrongly typed values are validation's business, not this walk's.
    let odd = json!({ "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": "d", "creationTimestamp": "2026-01-01T00:00:00Z" },
        "spec": "text", "status": 3 });
    assert_eq!(filled(odd.clone()), odd);
}

#[test]
fn fields_without_omitempty_get_gos_zero_values() {
    let pdb = filled(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": { "name": "p", "creationTimestamp": "2026-01-01T00:00:00Z" },
        "spec": { "maxUnavailable": 1 }, "status": {}
    }));
    assert_eq!(
        pdb["status"],
        json!({ "currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0 })
    );
    let role = filled(
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": "r", "creationTimestamp": "2026-01-01T00:00:00Z" } }),
    );
    assert_eq!(role.get("rules"), Some(&Value::Null));
    let slice = filled(
        json!({ "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": { "name": "s", "creationTimestamp": "2026-01-01T00:00:00Z" }, "addressType": "IPv4",
        "endpoints": [{ "addresses": ["10.0.0.1"] }] }),
    );
    assert_eq!(slice.get("ports"), Some(&Value::Null));
    // Values a client set are kept; an item gets its own zero fields.
    let binding = filled(
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": { "name": "b", "creationTimestamp": "2026-01-01T00:00:00Z" },
        "roleRef": { "kind": "Role", "name": "r" }, "subjects": [{ "kind": "User", "name": "u" }] }),
    );
    assert_eq!(
        binding["roleRef"],
        json!({ "apiGroup": "", "kind": "Role", "name": "r" })
    );
    assert_eq!(
        binding["subjects"][0],
        json!({ "kind": "User", "name": "u" })
    );
}

#[test]
fn empty_lists_and_maps_under_omitempty_are_left_out() {
    // A finished Job's pod once its tracking finalizer is removed; an emptied env and labels.
    let pod = filled(json!({ "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "p", "finalizers": [], "labels": {}, "annotations": { "a": "b" },
            "creationTimestamp": "2026-01-01T00:00:00Z" },
        "spec": { "containers": [{ "name": "c", "image": "i", "env": [], "ports": [] }],
            "volumes": [] } }));
    let meta = pod["metadata"].as_object().expect("metadata");
    assert!(
        !meta.contains_key("finalizers") && !meta.contains_key("labels"),
        "{pod}"
    );
    assert_eq!(pod["metadata"]["annotations"], json!({ "a": "b" }));
    let c = pod["spec"]["containers"][0]
        .as_object()
        .expect("a container");
    assert!(!c.contains_key("env") && !c.contains_key("ports"), "{pod}");
    assert!(pod["spec"].get("volumes").is_none(), "{pod}");
    // Without omitempty an empty list stays what it is.
    let role = filled(
        json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": { "name": "r", "creationTimestamp": "2026-01-01T00:00:00Z" }, "rules": [] }),
    );
    assert_eq!(role["rules"], json!([]));
}
