//! Tests: Table JSON shape per `includeObject`, column definitions and priorities, AGE formatting.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::*;

pub(super) fn now() -> Timestamp {
    "2024-05-01T12:00:00Z".parse().expect("valid timestamp")
}

/// `now` minus `seconds`, as an RFC 3339 string.
pub(super) fn ago(seconds: i64) -> String {
    let t = Timestamp::from_second(now().as_second() - seconds).expect("in range");
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn names(cols: &[Value]) -> Vec<&str> {
    cols.iter()
        .map(|c| c["name"].as_str().unwrap_or("?"))
        .collect()
}

fn priorities(cols: &[Value]) -> Vec<i64> {
    cols.iter()
        .map(|c| c["priority"].as_i64().unwrap_or(-1))
        .collect()
}

const S: i64 = 1_000_000_000;

#[test]
fn human_duration_matches_upstream_across_ranges() {
    let cases: &[(i64, &str)] = &[
        (-3 * S, "<invalid>"),
        (-S - S / 2, "0s"),
        (-S / 2, "0s"),
        (0, "0s"),
        (5 * S, "5s"),
        (119 * S, "119s"),
        (120 * S, "2m"),
        (200 * S, "3m20s"),
        (599 * S, "9m59s"),
        (600 * S, "10m"),
        (179 * 60 * S + 59 * S, "179m"),
        (3 * 3600 * S, "3h"),
        (5 * 3600 * S + 10 * 60 * S, "5h10m"),
        (8 * 3600 * S + 59 * 60 * S, "8h"),
        (47 * 3600 * S, "47h"),
        (48 * 3600 * S, "2d"),
        (51 * 3600 * S, "2d3h"),
        (191 * 3600 * S, "7d23h"),
        (192 * 3600 * S, "8d"),
        (729 * 24 * 3600 * S, "729d"),
        (730 * 24 * 3600 * S, "2y"),
        (775 * 24 * 3600 * S, "2y45d"),
        (8 * 365 * 24 * 3600 * S, "8y"),
        (12 * 365 * 24 * 3600 * S + 100 * 24 * 3600 * S, "12y"),
    ];
    for (nanos, want) in cases {
        assert_eq!(human_duration(*nanos), *want, "{nanos}ns");
    }
}

#[test]
fn age_cell_is_unknown_without_a_creation_timestamp() {
    let ns = |meta: Value| json!({"metadata": meta, "status": {"phase": "Active"}});
    let cells = row_cells("", "namespaces", &ns(json!({"name": "a"})), now());
    assert_eq!(cells[2], "<unknown>");
    let zero = ns(json!({"name": "a", "creationTimestamp": "0001-01-01T00:00:00Z"}));
    assert_eq!(row_cells("", "namespaces", &zero, now())[2], "<unknown>");
    let garbage = ns(json!({"name": "a", "creationTimestamp": 7}));
    assert_eq!(row_cells("", "namespaces", &garbage, now())[2], "<unknown>");
    let fresh = ns(json!({"name": "a", "creationTimestamp": ago(200)}));
    assert_eq!(row_cells("", "namespaces", &fresh, now())[2], "3m20s");
}

#[test]
fn pod_columns_and_wide_priorities() {
    let cols = column_definitions("", "pods");
    assert_eq!(
        names(&cols),
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(priorities(&cols), [0, 0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(cols[0]["format"], "name");
    assert_eq!(cols[0]["type"], "string");
    assert_eq!(cols[1]["format"], "");
    assert!(
        cols[0]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Name must be unique within a namespace."))
    );
    assert!(
        cols[4]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("CreationTimestamp is a timestamp"))
    );
}

#[test]
fn wide_columns_of_workloads_services_nodes_and_bindings() {
    let check = |group: &str, resource: &str, want: &[(&str, i64)]| {
        let cols = column_definitions(group, resource);
        let got: Vec<(&str, i64)> = names(&cols).into_iter().zip(priorities(&cols)).collect();
        assert_eq!(got, want, "{group}/{resource}");
    };
    check(
        "apps",
        "deployments",
        &[
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
    );
    check(
        "",
        "services",
        &[
            ("Name", 0),
            ("Type", 0),
            ("Cluster-IP", 0),
            ("External-IP", 0),
            ("Port(s)", 0),
            ("Age", 0),
            ("Selector", 1),
        ],
    );
    check(
        "",
        "nodes",
        &[
            ("Name", 0),
            ("Status", 0),
            ("Roles", 0),
            ("Age", 0),
            ("Version", 0),
            ("Internal-IP", 1),
            ("External-IP", 1),
            ("OS-Image", 1),
            ("Kernel-Version", 1),
            ("Container-Runtime", 1),
        ],
    );
    check(
        "batch",
        "jobs",
        &[
            ("Name", 0),
            ("Status", 0),
            ("Completions", 0),
            ("Duration", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
    );
    check(
        "",
        "events",
        &[
            ("Last Seen", 0),
            ("Type", 0),
            ("Reason", 0),
            ("Object", 0),
            ("Subobject", 1),
            ("Source", 1),
            ("Message", 0),
            ("First Seen", 1),
            ("Count", 1),
            ("Name", 1),
        ],
    );
    check(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        &[
            ("Name", 0),
            ("Role", 0),
            ("Age", 0),
            ("Users", 1),
            ("Groups", 1),
            ("ServiceAccounts", 1),
        ],
    );
    check(
        "",
        "secrets",
        &[("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)],
    );
    check("", "configmaps", &[("Name", 0), ("Data", 0), ("Age", 0)]);
    check(
        "coordination.k8s.io",
        "leases",
        &[("Name", 0), ("Holder", 0), ("Age", 0)],
    );
}

#[test]
fn resources_without_a_printer_get_the_default_columns() {
    for (group, resource) in [
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("", "limitranges"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("storage.k8s.io", "csistoragecapacities"),
        ("example.com", "widgets"),
    ] {
        let cols = column_definitions(group, resource);
        assert_eq!(names(&cols), ["Name", "Created At"], "{group}/{resource}");
        assert_eq!(cols[0]["format"], "name");
        assert_eq!(cols[1]["type"], "date");
        assert_eq!(cols[1]["format"], "");
    }
    let role = json!({"metadata": {"name": "reader",
        "creationTimestamp": "2024-04-30T08:09:10Z"}});
    assert_eq!(
        row_cells("rbac.authorization.k8s.io", "roles", &role, now()),
        [json!("reader"), json!("2024-04-30T08:09:10Z")]
    );
    let offset =
        json!({"metadata": {"name": "r", "creationTimestamp": "2024-04-30T10:09:10+02:00"}});
    assert_eq!(
        row_cells("", "limitranges", &offset, now())[1],
        "2024-04-30T08:09:10Z"
    );
    let unset = json!({"metadata": {"name": "r"}});
    assert_eq!(
        row_cells("", "limitranges", &unset, now())[1],
        "0001-01-01T00:00:00Z"
    );
}

#[test]
fn every_printer_gives_one_cell_per_column_even_for_empty_objects() {
    let resources = [
        ("", "pods"),
        ("", "podtemplates"),
        ("", "replicationcontrollers"),
        ("", "services"),
        ("", "endpoints"),
        ("", "nodes"),
        ("", "events"),
        ("events.k8s.io", "events"),
        ("", "namespaces"),
        ("", "secrets"),
        ("", "serviceaccounts"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("", "componentstatuses"),
        ("", "configmaps"),
        ("", "resourcequotas"),
        ("", "limitranges"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("apps", "controllerrevisions"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "ingressclasses"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "servicecidrs"),
        ("networking.k8s.io", "ipaddresses"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("rbac.authorization.k8s.io", "roles"),
        ("certificates.k8s.io", "certificatesigningrequests"),
        ("certificates.k8s.io", "clustertrustbundles"),
        ("coordination.k8s.io", "leases"),
        ("coordination.k8s.io", "leasecandidates"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "volumeattributesclasses"),
        ("storage.k8s.io", "volumeattachments"),
        ("storage.k8s.io", "csinodes"),
        ("storage.k8s.io", "csidrivers"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("node.k8s.io", "runtimeclasses"),
        ("discovery.k8s.io", "endpointslices"),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
        ),
        ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
        (
            "admissionregistration.k8s.io",
            "mutatingadmissionpolicybindings",
        ),
        ("flowcontrol.apiserver.k8s.io", "flowschemas"),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
        ),
        ("resource.k8s.io", "deviceclasses"),
        ("resource.k8s.io", "resourceclaims"),
        ("resource.k8s.io", "resourceclaimtemplates"),
        ("resource.k8s.io", "resourceslices"),
        ("apiregistration.k8s.io", "apiservices"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ];
    for (group, resource) in resources {
        let cols = column_definitions(group, resource);
        for obj in [
            json!({}),
            json!(null),
            json!({"spec": 5, "status": "x", "metadata": []}),
        ] {
            let cells = row_cells(group, resource, &obj, now());
            // Upstream's IPAddress printer declares NAME and PARENTREF but also emits AGE.
            let extra = usize::from(resource == "ipaddresses");
            assert_eq!(
                cells.len(),
                cols.len() + extra,
                "{group}/{resource} on {obj}"
            );
        }
        for col in &cols {
            for key in ["name", "type", "format", "description", "priority"] {
                assert!(
                    col.get(key).is_some(),
                    "{group}/{resource} column lacks {key}"
                );
            }
        }
    }
}

fn pod(name: &str, ns: &str, phase: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": "u-1", "resourceVersion": "41",
            "creationTimestamp": ago(90), "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n1"},
        "status": {"phase": phase},
    })
}

#[test]
fn table_with_metadata_objects_is_what_kubectl_reads() {
    let items = [
        pod("a", "default", "Running"),
        pod("b", "kube-system", "Pending"),
    ];
    let t = to_table(
        "",
        "pods",
        &items,
        IncludeObject::Metadata,
        "42",
        Some("tok"),
        now(),
        TABLE_V1,
    );
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        t["metadata"],
        json!({"resourceVersion": "42", "continue": "tok"})
    );
    assert_eq!(
        t["columnDefinitions"],
        json!(column_definitions("", "pods"))
    );
    let rows = t["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["cells"][0], "a");
    assert_eq!(rows[1]["cells"][0], "b");
    assert!(rows[0].get("conditions").is_none());
    assert_eq!(
        rows[1]["object"],
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": items[1]["metadata"],
        })
    );
    assert_eq!(rows[1]["object"]["metadata"]["namespace"], "kube-system");
    assert_eq!(rows[1]["object"]["metadata"]["labels"]["app"], "web");
}

#[test]
fn partial_object_metadata_takes_the_table_group_version() {
    let items = [pod("a", "default", "Running")];
    let t = to_table(
        "",
        "pods",
        &items,
        IncludeObject::Metadata,
        "1",
        None,
        now(),
        TABLE_V1BETA1,
    );
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["metadata"], json!({"resourceVersion": "1"}));
}

#[test]
fn table_with_full_objects_and_without_objects() {
    let items = [pod("a", "default", "Running")];
    let full = to_table(
        "",
        "pods",
        &items,
        IncludeObject::Object,
        "7",
        None,
        now(),
        TABLE_V1,
    );
    assert_eq!(full["rows"][0]["object"], items[0]);
    let none = to_table(
        "",
        "pods",
        &items,
        IncludeObject::None,
        "7",
        Some(""),
        now(),
        TABLE_V1,
    );
    let row = none["rows"][0].as_object().expect("row");
    assert_eq!(row.get("object"), Some(&Value::Null));
    assert_eq!(row["cells"].as_array().map(Vec::len), Some(9));
    assert_eq!(none["metadata"], json!({"resourceVersion": "7"}));
}

#[test]
fn empty_list_has_columns_and_no_rows() {
    let t = to_table(
        "apps",
        "deployments",
        &[],
        IncludeObject::Metadata,
        "",
        None,
        now(),
        TABLE_V1,
    );
    assert_eq!(t["rows"], json!([]));
    assert_eq!(t["metadata"], json!({}));
    assert_eq!(t["columnDefinitions"].as_array().map(Vec::len), Some(8));
}

#[test]
fn finished_pods_carry_the_completed_row_condition() {
    let items = [pod("ok", "d", "Succeeded"), pod("bad", "d", "Failed")];
    let t = to_table(
        "",
        "pods",
        &items,
        IncludeObject::None,
        "1",
        None,
        now(),
        TABLE_V1,
    );
    assert_eq!(
        t["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully."}])
    );
    assert_eq!(
        t["rows"][1]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Failed",
            "message": "The pod failed."}])
    );
}

#[test]
fn single_object_table_for_get_and_watch_events() {
    let p = pod("a", "default", "Running");
    let first = object_table(
        "",
        "pods",
        &p,
        IncludeObject::Metadata,
        now(),
        TABLE_V1,
        true,
    );
    assert_eq!(first["kind"], "Table");
    assert_eq!(first["metadata"], json!({"resourceVersion": "41"}));
    assert_eq!(first["columnDefinitions"].as_array().map(Vec::len), Some(9));
    assert_eq!(first["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!(first["rows"][0]["cells"][2], "Running");
    let later = object_table(
        "",
        "pods",
        &p,
        IncludeObject::Object,
        now(),
        TABLE_V1,
        false,
    );
    assert_eq!(later["columnDefinitions"], Value::Null);
    assert_eq!(later["rows"][0]["object"], p);
}

#[test]
fn flow_schemas_are_listed_by_matching_precedence_then_name() {
    let fs = |name: &str, precedence: i64| {
        json!({"metadata": {"name": name}, "spec": {"matchingPrecedence": precedence,
            "priorityLevelConfiguration": {"name": "workload-low"}}})
    };
    let items = [
        fs("global-default", 9900),
        fs("b", 1000),
        fs("a", 1000),
        fs("exempt", 1),
    ];
    let group = "flowcontrol.apiserver.k8s.io";
    let t = to_table(
        group,
        "flowschemas",
        &items,
        IncludeObject::None,
        "",
        None,
        now(),
        TABLE_V1,
    );
    let order: Vec<&str> = t["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["cells"][0].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(order, ["exempt", "a", "b", "global-default"]);
    assert_eq!(t["rows"][0]["cells"][2], 1);
    assert_eq!(t["rows"][0]["cells"][3], "<none>");
    assert_eq!(t["rows"][0]["cells"][5], "?");
}

#[test]
fn include_object_parses_the_query_parameter() {
    assert_eq!(
        IncludeObject::parse(None).ok(),
        Some(IncludeObject::Metadata)
    );
    assert_eq!(
        IncludeObject::parse(Some("")).ok(),
        Some(IncludeObject::Metadata)
    );
    assert_eq!(
        IncludeObject::parse(Some("Metadata")).ok(),
        Some(IncludeObject::Metadata)
    );
    assert_eq!(
        IncludeObject::parse(Some("None")).ok(),
        Some(IncludeObject::None)
    );
    assert_eq!(
        IncludeObject::parse(Some("Object")).ok(),
        Some(IncludeObject::Object)
    );
    let err = ApiError::from(IncludeObject::parse(Some("object")).expect_err("case matters"));
    assert_eq!(err.code, 400);
    assert_eq!(err.message, "unrecognized includeObject value: \"object\"");
    assert_eq!(IncludeObject::Object.as_str(), "Object");
}
