//! Tests of the OpenAPI documents and schema lookups.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::Instant;

use k1s_apimachinery::catalog;
use serde_json::{Value, json};

use super::defs::{self, each_ref};
use super::patch_facts::PACKAGES;
use super::{Schemas, schemas};
use crate::patch::PatchSchema;

fn v2() -> Value {
    serde_json::from_slice(&schemas().v2_json()).unwrap()
}

fn v3(path: &str) -> Value {
    let (bytes, _) = schemas().v3_document(path).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Every `$ref` in `doc` that does not name a schema under `prefix` in `schemas`.
fn dangling(doc: &Value, prefix: &str, schemas: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    fn walk(v: &Value, prefix: &str, schemas: &Value, bad: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if let Some(Value::String(r)) = o.get("$ref") {
                    match r.strip_prefix(prefix) {
                        Some(name) if schemas.get(name).is_some() => {}
                        _ => bad.push(r.clone()),
                    }
                }
                o.values().for_each(|c| walk(c, prefix, schemas, bad));
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, prefix, schemas, bad)),
            _ => {}
        }
    }
    walk(doc, prefix, schemas, &mut bad);
    bad
}

#[test]
fn v2_document_has_upstream_shape() {
    let doc = v2();
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(doc["info"]["title"], "Kubernetes");
    let defs = &doc["definitions"];
    let pod = &defs["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "Pod"}])
    );
    // `$ref` with a sibling description, as upstream's Swagger 2.0 has it.
    assert_eq!(
        pod["properties"]["spec"]["$ref"],
        "#/definitions/io.k8s.api.core.v1.PodSpec"
    );
    assert!(pod["properties"]["spec"]["description"].is_string());
    let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    let ports = &defs["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"];
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["port", "protocol"])
    );
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "port");
    let strategy = &defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
    assert_eq!(strategy["x-kubernetes-patch-strategy"], "retainKeys");
    let volumes = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"];
    assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
    let owners =
        &defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["ownerReferences"];
    assert_eq!(owners["x-kubernetes-patch-merge-key"], "uid");
    assert_eq!(
        defs["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]["x-kubernetes-map-type"],
        "atomic"
    );
    let list = &defs["io.k8s.api.core.v1.PodList"];
    assert_eq!(
        list["properties"]["items"]["items"]["$ref"],
        "#/definitions/io.k8s.api.core.v1.Pod"
    );
    assert_eq!(
        list["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "PodList"}])
    );
    let delete_gvks = defs[defs::DELETE_OPTIONS]["x-kubernetes-group-version-kind"]
        .as_array()
        .unwrap();
    assert!(
        delete_gvks.contains(&json!({"group": "apps", "version": "v1", "kind": "DeleteOptions"}))
    );
    assert!(
        dangling(&doc, "#/definitions/", defs).is_empty(),
        "{:?}",
        dangling(&doc, "#/definitions/", defs)
    );
}

#[test]
fn v2_paths_cover_every_resource_url() {
    let doc = v2();
    let paths = doc["paths"].as_object().unwrap();
    let pods = &paths["/api/v1/namespaces/{namespace}/pods"];
    assert_eq!(pods["get"]["x-kubernetes-action"], "list");
    assert_eq!(pods["get"]["operationId"], "listCoreV1NamespacedPod");
    assert_eq!(pods["post"]["x-kubernetes-action"], "post");
    assert_eq!(pods["delete"]["x-kubernetes-action"], "deletecollection");
    let pod = &paths["/api/v1/namespaces/{namespace}/pods/{name}"];
    for (method, action) in [
        ("get", "get"),
        ("put", "put"),
        ("patch", "patch"),
        ("delete", "delete"),
    ] {
        assert_eq!(pod[method]["x-kubernetes-action"], action);
        assert_eq!(
            pod[method]["x-kubernetes-group-version-kind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
    }
    assert_eq!(
        paths["/api/v1/watch/namespaces/{namespace}/pods"]["get"]["x-kubernetes-action"],
        "watchlist"
    );
    assert_eq!(
        paths["/api/v1/watch/namespaces/{namespace}/pods/{name}"]["get"]["x-kubernetes-action"],
        "watch"
    );
    let scale = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["get"];
    assert_eq!(scale["operationId"], "readAppsV1NamespacedDeploymentScale");
    assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
    assert_eq!(
        paths["/apis/rbac.authorization.k8s.io/v1/clusterroles"]["get"]["operationId"],
        "listRbacAuthorizationV1ClusterRole"
    );
    for r in catalog::resources() {
        let root = super::paths::gv_root(r.group, r.version);
        let scope = if r.namespaced {
            "namespaces/{namespace}/"
        } else {
            ""
        };
        let url = format!("{root}/{scope}{}", r.resource);
        assert!(paths.contains_key(&url), "no path {url}");
        for s in r.subresources.iter().filter(|s| !s.is_connect()) {
            let sub = format!("{url}/{{name}}/{}", s.name);
            assert!(paths.contains_key(&sub), "no path {sub}");
        }
    }
}

#[test]
fn every_catalog_kind_has_a_definition() {
    let s = schemas();
    for r in catalog::resources() {
        let def = s.definition_for(r.group, r.version, r.kind);
        assert!(
            def.is_some(),
            "no definition for {}/{} {}",
            r.group,
            r.version,
            r.kind
        );
        assert!(s.definition(def.unwrap()).is_some());
        if r.has_verb("list") {
            assert!(
                s.definition_for(r.group, r.version, &r.list_kind())
                    .is_some(),
                "no list for {}",
                r.kind
            );
        }
        for sub in r.subresources.iter().filter(|s| !s.is_connect()) {
            assert!(
                s.definition_for(sub.group, sub.version, sub.kind).is_some(),
                "no {}",
                sub.kind
            );
        }
    }
    assert_eq!(
        s.definition_for("apps", "v1", "Deployment"),
        Some("io.k8s.api.apps.v1.Deployment")
    );
    assert_eq!(
        s.definition_for("autoscaling", "v1", "Scale"),
        Some("io.k8s.api.autoscaling.v1.Scale")
    );
    assert_eq!(s.definition_for("apps", "v1", "Nope"), None);
}

#[test]
fn patch_facts_name_real_fields() {
    // A fact on a served definition whose field k8s-openapi lacks means the table and the
    // types disagree (a renamed field, a version skew).
    let s = schemas();
    let mut missing = Vec::new();
    for (prefix, _, fields) in PACKAGES {
        for (name, field, _) in *fields {
            let def = format!("{prefix}.{name}");
            if s.definition(&def).is_some() && s.field(&def, field).is_none() {
                missing.push(format!("{def}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "facts for missing fields: {missing:?}");
}

#[test]
fn v3_index_and_documents() {
    let s = schemas();
    let index: Value = serde_json::from_slice(&s.v3_index_json()).unwrap();
    let paths = index["paths"].as_object().unwrap();
    for key in [
        "api",
        "api/v1",
        "apis",
        "apis/apps",
        "apis/apps/v1",
        "apis/autoscaling/v2",
    ] {
        let (_, hash) = s.v3_document(key).unwrap();
        assert_eq!(hash.len(), 128);
        assert_eq!(
            paths[key]["serverRelativeURL"],
            format!("/openapi/v3/{key}?hash={hash}")
        );
    }
    for key in s.v3_paths() {
        let doc = v3(key);
        assert_eq!(doc["openapi"], "3.0.0");
        // Go's encoder never writes an empty `parameters` (openapiv3.go round-trips documents).
        let text = serde_json::to_string(&doc).unwrap();
        assert!(!text.contains(r#""parameters":[]"#), "{key}");
        let schemas = &doc["components"]["schemas"];
        let bad = dangling(&doc, "#/components/schemas/", schemas);
        assert!(bad.is_empty(), "{key}: dangling {bad:?}");
    }
    let apps = v3("apis/apps/v1");
    let schemas = apps["components"]["schemas"].as_object().unwrap();
    for name in [
        "io.k8s.api.apps.v1.Deployment",
        "io.k8s.api.apps.v1.DeploymentList",
        "io.k8s.api.core.v1.PodSpec",
        "io.k8s.api.core.v1.Container",
        "io.k8s.api.autoscaling.v1.Scale",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    ] {
        assert!(schemas.contains_key(name), "apps/v1 lacks {name}");
    }
    assert!(!schemas.contains_key("io.k8s.api.core.v1.Service"));
    assert_eq!(
        schemas[defs::QUANTITY]["oneOf"],
        json!([{"type": "string"}, {"type": "number"}])
    );
    // OpenAPI 3.0 ignores `$ref` siblings: wrapped in allOf, as upstream does.
    let spec = &schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"];
    assert_eq!(
        spec["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
    );
    let deploy = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(deploy["x-kubernetes-action"], "patch");
    assert!(deploy["requestBody"]["content"]["application/strategic-merge-patch+json"].is_object());
    assert!(s.v3_document("apis/nope/v1").is_none());
}

#[test]
fn unknown_fields_are_found_with_upstream_paths() {
    let s = schemas();
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "labels": {"any": "thing"},
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"f:x": {}}}}],
            "bogusMeta": 1,
        },
        "spec": {
            "containers": [
                {"name": "a", "image": "i", "ports": [{"containerPort": 80}]},
                {"name": "b", "image": "i", "bogus": true, "resources": {"limits": {"cpu": "1"}, "nope": {}}},
            ],
            "nodeSelector": {"k": "v"},
        },
        "status": {"phase": "Pending"},
    });
    let found = s.unknown_fields("io.k8s.api.core.v1.Pod", &pod);
    assert_eq!(
        found,
        vec![
            "metadata.bogusMeta".to_owned(),
            "spec.containers[1].bogus".to_owned(),
            "spec.containers[1].resources.nope".to_owned(),
        ]
    );
    // Free-form values are not looked into.
    let crd = json!({
        "spec": {"group": "g", "names": {"kind": "K", "plural": "ks"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "default": {"anything": {"goes": 1}},
                "properties": {"spec": {"type": "object", "example": {"x": 1}}}}}}]},
    });
    assert!(
        s.unknown_fields(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            &crd
        )
        .is_empty()
    );
    let review = json!({"spec": {"request": {"uid": "u", "object": {"whatever": 1}}}});
    assert!(
        s.unknown_fields(
            "io.k8s.api.apps.v1.ControllerRevision",
            &json!({"data": {"x": 1}, "revision": 1})
        )
        .is_empty()
    );
    assert_eq!(
        s.unknown_fields("io.k8s.api.apps.v1.Deployment", &json!({"spec": {"template": {"spec": {"initContainers": [{"name": "x", "imagee": "y"}]}}}})),
        vec!["spec.template.spec.initContainers[0].imagee".to_owned()]
    );
    assert!(
        s.unknown_fields("io.k8s.api.nope.v1.Nope", &review)
            .is_empty()
    );
}

#[test]
fn patch_schema_gives_strategy_key_and_value_type() {
    let s = schemas();
    let c = s.field("io.k8s.api.core.v1.PodSpec", "containers").unwrap();
    assert_eq!(c.strategies, vec!["merge".to_owned()]);
    assert_eq!(c.merge_key.as_deref(), Some("name"));
    assert_eq!(c.list_type.as_deref(), Some("map"));
    assert_eq!(
        c.value_type.as_deref(),
        Some("io.k8s.api.core.v1.Container")
    );
    let v = s.field("io.k8s.api.core.v1.PodSpec", "volumes").unwrap();
    assert_eq!(
        v.strategies,
        vec!["merge".to_owned(), "retainKeys".to_owned()]
    );
    let spec = s.field("io.k8s.api.apps.v1.Deployment", "spec").unwrap();
    assert_eq!(
        spec.value_type.as_deref(),
        Some("io.k8s.api.apps.v1.DeploymentSpec")
    );
    assert!(spec.strategies.is_empty());
    let limits = s
        .field("io.k8s.api.core.v1.ResourceRequirements", "limits")
        .unwrap();
    assert_eq!(
        limits.value_type.as_deref(),
        Some("io.k8s.apimachinery.pkg.api.resource.Quantity")
    );
    let image = s.field("io.k8s.api.core.v1.Container", "image").unwrap();
    assert_eq!(image.value_type, None);
    let finalizers = s
        .field(
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "finalizers",
        )
        .unwrap();
    assert_eq!(finalizers.strategies, vec!["merge".to_owned()]);
    assert_eq!(finalizers.list_type.as_deref(), Some("set"));
    assert!(s.field("io.k8s.api.core.v1.PodSpec", "nope").is_none());
    assert!(s.field("io.k8s.api.core.v1.Nope", "containers").is_none());
}

#[test]
fn documents_are_stable() {
    // Hashes are only useful to caches if a rebuild gives the same bytes.
    let a = Schemas::build();
    let b = Schemas::build();
    assert_eq!(
        a.v3_document("api/v1").unwrap().1,
        b.v3_document("api/v1").unwrap().1
    );
    assert_eq!(a.v2_json(), b.v2_json());
}

#[test]
fn lookup_tree_keeps_field_named_description() {
    let s = schemas();
    assert!(
        s.field("io.k8s.api.scheduling.v1.PriorityClass", "description")
            .is_some()
    );
    let mut refs = BTreeSet::new();
    each_ref(s.definition("io.k8s.api.core.v1.Pod").unwrap(), &mut |r| {
        refs.insert(r.to_owned());
    });
    assert!(refs.contains("io.k8s.api.core.v1.PodSpec"));
}

/// Resident and peak memory of this process, KB (Linux; 0 elsewhere).
fn rss_kb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Cost of building everything; run alone with `--nocapture` to read it (memory figures are
/// the whole test process's, so other tests running beside it blur them).
#[test]
fn measure_build_cost() {
    let (rss0, _) = rss_kb();
    let t = Instant::now();
    let s = Schemas::build();
    let lookup = t.elapsed();
    let (rss1, _) = rss_kb();
    let t = Instant::now();
    let v2 = s.v2_json();
    let v2_time = t.elapsed();
    let t = Instant::now();
    let pb = s.v2_protobuf();
    let pb_time = t.elapsed();
    let t = Instant::now();
    let index = s.v3_index_json();
    let v3_time = t.elapsed();
    let (rss2, peak) = rss_kb();
    let v3_bytes: usize = s
        .v3_paths()
        .map(|p| s.v3_document(p).unwrap().0.len())
        .sum();
    let lookup_bytes: usize = s.lookup.json_texts().map(str::len).sum();
    println!(
        "openapi: lookup tree {} defs ({} KB as JSON) in {lookup:?}, RSS +{} KB; \
         v2 JSON {} KB in {v2_time:?}; v2 protobuf {} KB in {pb_time:?}; \
         v3 {} docs {} KB (+ index {} B) in {v3_time:?}; RSS after all +{} KB, peak {} KB",
        s.lookup.len(),
        lookup_bytes / 1024,
        rss1.saturating_sub(rss0),
        v2.len() / 1024,
        pb.len() / 1024,
        s.v3_paths().count(),
        v3_bytes / 1024,
        index.len(),
        rss2.saturating_sub(rss0),
        peak,
    );
}

#[test]
fn prune_removes_exactly_the_unknown_fields() {
    let s = schemas();
    let mut pod = json!({
        "metadata": {"name": "p", "labels": {"example.com/x": "y"}, "bogus": 1},
        "spec": {"containers": [
            {"name": "a", "image": "i"},
            {"name": "b", "image": "i", "bogus": true},
        ]},
    });
    let removed = s.prune_unknown_fields("io.k8s.api.core.v1.Pod", &mut pod);
    assert_eq!(
        removed,
        vec![
            "metadata.bogus".to_owned(),
            "spec.containers[1].bogus".to_owned()
        ]
    );
    assert_eq!(
        pod,
        json!({
            "metadata": {"name": "p", "labels": {"example.com/x": "y"}},
            "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]},
        })
    );
    assert!(s.unknown_fields("io.k8s.api.core.v1.Pod", &pod).is_empty());
}

/// The embedded lookup table is what the generator makes today (k8s-openapi, the patch facts and
/// the catalog all feed it). `K1S_UPDATE_LOOKUP=1 cargo test -p k1s-apiserver
/// embedded_lookup_is_current` rewrites it.
#[test]
fn embedded_lookup_is_current() {
    let built = super::defs::build(false);
    let fresh = super::embedded::render(&built.defs, &built.kinds);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/openapi/lookup.tsv");
    if std::env::var_os("K1S_UPDATE_LOOKUP").is_some() {
        std::fs::write(path, &fresh).expect("write lookup.tsv");
        return;
    }
    let current = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        current == fresh,
        "src/openapi/lookup.tsv is stale: run K1S_UPDATE_LOOKUP=1 cargo test -p k1s-apiserver embedded_lookup_is_current"
    );
    // The loaded kinds carry the typed checks the generator's kinds have.
    let loaded = schemas();
    assert_eq!(loaded.kinds.len(), built.kinds.len());
    for (l, b) in loaded.kinds.iter().zip(&built.kinds) {
        assert_eq!(
            (
                &l.group,
                &l.version,
                &l.kind,
                &l.definition,
                l.type_check.is_some()
            ),
            (
                &b.group,
                &b.version,
                &b.kind,
                &b.definition,
                b.type_check.is_some()
            )
        );
    }
}

#[test]
fn bodies_of_the_wrong_type_get_gos_decoding_errors() {
    let check = |group: &str, kind: &str, obj: Value| {
        schemas()
            .type_check(group, "v1", kind, &obj)
            .expect_err("a type error")
    };
    let pod = |container: Value| {
        json!({ "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "p" }, "spec": { "containers": [container] } })
    };
    let cases = [
        (
            check(
                "",
                "ConfigMap",
                json!({ "metadata": { "name": "c" }, "data": { "a": 1 } }),
            ),
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
        ),
        (
            check("apps", "Deployment", json!({ "spec": { "replicas": "3" } })),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            check(
                "",
                "Pod",
                pod(json!({ "name": "c", "ports": [{ "containerPort": 1.5 }] })),
            ),
            "json: cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32",
        ),
        (
            check(
                "",
                "Pod",
                json!({ "spec": { "containers": { "name": "c" } } }),
            ),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container",
        ),
        (
            check("", "Pod", json!({ "metadata": { "labels": ["a"] } })),
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            check(
                "",
                "Pod",
                pod(json!({ "name": "c", "resources": { "limits": { "cpu": true } } })),
            ),
            k1s_apimachinery::quantity::FORMAT_ERROR,
        ),
        (
            check(
                "",
                "Service",
                json!({ "spec": { "ports": [{ "port": 80, "targetPort": true }] } }),
            ),
            "json: cannot unmarshal bool into Go value of type int32",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    // Nulls in optional fields decode, as Go lets them.
    let ok = json!({ "metadata": { "name": "c", "labels": null }, "data": null });
    assert!(schemas().type_check("", "v1", "ConfigMap", &ok).is_ok());
}
