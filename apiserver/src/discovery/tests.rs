//! Tests of the discovery documents against upstream 1.33's shapes and values.

#![allow(clippy::unwrap_used)]

use std::cmp::Ordering;

use serde_json::{Value, json};

use super::*;

fn find<'a>(list: &'a Value, key: &str, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == name)
        .unwrap_or_else(|| panic!("{key}={name} missing"))
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e[key].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn core_v1_lists_pods_and_their_subresources() {
    let doc = api_resource_list("", "v1").unwrap();
    assert_eq!(doc["kind"], "APIResourceList");
    assert_eq!(doc["groupVersion"], "v1");
    // Upstream's /api/v1 list has no apiVersion.
    assert!(doc.get("apiVersion").is_none());

    let resources = &doc["resources"];
    let pods = find(resources, "name", "pods");
    assert_eq!(pods["singularName"], "pod");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(pods["storageVersionHash"], "xPOwRZ+Yhw8=");
    let verbs = pods["verbs"].as_array().unwrap();
    assert!(verbs.contains(&json!("watch")) && verbs.contains(&json!("create")));

    let status = find(resources, "name", "pods/status");
    assert_eq!(
        *status,
        json!({"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod",
               "verbs": ["get", "patch", "update"]})
    );
    let binding = find(resources, "name", "pods/binding");
    assert_eq!(binding["kind"], "Binding");
    assert_eq!(binding["verbs"], json!(["create"]));
    assert!(binding.get("group").is_none() && binding.get("version").is_none());
    let eviction = find(resources, "name", "pods/eviction");
    assert_eq!(
        (&eviction["group"], &eviction["version"], &eviction["kind"]),
        (&json!("policy"), &json!("v1"), &json!("Eviction"))
    );
    let token = find(resources, "name", "serviceaccounts/token");
    assert_eq!(token["group"], "authentication.k8s.io");
    // Subresources carry no shortNames, categories or hash.
    assert!(status.get("shortNames").is_none() && status.get("storageVersionHash").is_none());
}

#[test]
fn resource_list_is_sorted_by_full_path_like_upstream() {
    let doc = api_resource_list("", "v1").unwrap();
    let got = names(&doc["resources"], "name");
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got, sorted);
    let pos = |n: &str| got.iter().position(|x| x == n).unwrap();
    assert!(pos("pods") < pos("pods/binding"));
    assert!(pos("pods/status") < pos("podtemplates"));
}

#[test]
fn apps_v1_deployments_scale_serves_autoscaling_v1_scale() {
    let doc = api_resource_list("apps", "v1").unwrap();
    assert_eq!(doc["apiVersion"], "v1");
    assert_eq!(doc["groupVersion"], "apps/v1");
    let scale = find(&doc["resources"], "name", "deployments/scale");
    assert_eq!(
        *scale,
        json!({"name": "deployments/scale", "singularName": "", "namespaced": true,
               "group": "autoscaling", "version": "v1", "kind": "Scale",
               "verbs": ["get", "patch", "update"]})
    );
    let deployments = find(&doc["resources"], "name", "deployments");
    assert_eq!(deployments["storageVersionHash"], "8aSe+NMegvE=");
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
}

#[test]
fn storage_version_hashes_match_upstream() {
    assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
    assert_eq!(
        storage_version_hash("apps", "v1", "ControllerRevision"),
        "85nkx63pcBU="
    );
    assert_eq!(storage_version_hash("g", "v1", ""), "");

    // autoscaling/v1 HPAs are stored as autoscaling/v2; events.k8s.io Events as core Events.
    let hpa = api_resource_list("autoscaling", "v1").unwrap();
    let hpa = find(&hpa["resources"], "name", "horizontalpodautoscalers");
    assert_eq!(hpa["storageVersionHash"], "qwQve8ut294=");
    let events = api_resource_list("events.k8s.io", "v1").unwrap();
    let events = find(&events["resources"], "name", "events");
    assert_eq!(events["storageVersionHash"], "r2yiGXH7wu8=");

    // Reviews are never stored: no hash.
    let authz = api_resource_list("authorization.k8s.io", "v1").unwrap();
    let sar = find(&authz["resources"], "name", "subjectaccessreviews");
    assert!(sar.get("storageVersionHash").is_none());
}

#[test]
fn every_catalog_group_version_has_a_resource_list() {
    for g in k1s_apimachinery::catalog::groups() {
        for v in g.versions {
            let doc = api_resource_list(g.name, v).unwrap();
            assert!(
                !doc["resources"].as_array().unwrap().is_empty(),
                "{}/{v}",
                g.name
            );
        }
    }
    assert!(api_resource_list("apps", "v1beta1").is_none());
    assert!(api_resource_list("nope.example.com", "v1").is_none());
}

#[test]
fn apis_lists_named_groups_with_preferred_versions() {
    let doc = api_group_list();
    assert_eq!(doc["kind"], "APIGroupList");
    assert_eq!(doc["apiVersion"], "v1");
    let groups = &doc["groups"];
    let group_names = names(groups, "name");
    assert!(
        !group_names.contains(&String::new()),
        "core group is served at /api"
    );
    assert_eq!(group_names[0], "apiregistration.k8s.io");
    let autoscaling = find(groups, "name", "autoscaling");
    assert_eq!(
        autoscaling["preferredVersion"],
        json!({"groupVersion": "autoscaling/v2", "version": "v2"})
    );
    assert_eq!(
        autoscaling["versions"],
        json!([{"groupVersion": "autoscaling/v2", "version": "v2"},
               {"groupVersion": "autoscaling/v1", "version": "v1"}])
    );
}

#[test]
fn api_group_document() {
    let doc = api_group("apps").unwrap();
    assert_eq!(
        doc,
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": "apps",
               "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
               "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}})
    );
    assert!(api_group("").is_none());
    assert!(api_group("nope.example.com").is_none());
}

#[test]
fn api_versions_document() {
    assert_eq!(
        api_versions("10.0.0.1:6443"),
        json!({"kind": "APIVersions", "versions": ["v1"],
               "serverAddressByClientCIDRs": [
                   {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]})
    );
}

#[test]
fn aggregated_v2_apis_shape() {
    let doc = aggregated(Scope::Apis, AggregatedVersion::V2);
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(doc["metadata"], json!({}));
    let items = doc["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["metadata"]["name"].is_string()));
    assert_eq!(items[0]["metadata"]["name"], "apiregistration.k8s.io");
    assert!(items[0]["metadata"]["creationTimestamp"].is_null());

    let apps = items
        .iter()
        .find(|i| i["metadata"]["name"] == "apps")
        .unwrap();
    let v1 = &apps["versions"][0];
    assert_eq!(v1["version"], "v1");
    assert_eq!(v1["freshness"], "Current");
    let resources = &v1["resources"];
    let got = names(resources, "resource");
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(got, sorted);

    let deployments = find(resources, "resource", "deployments");
    assert_eq!(
        deployments["responseKind"],
        json!({"group": "", "version": "", "kind": "Deployment"})
    );
    assert_eq!(deployments["scope"], "Namespaced");
    assert_eq!(deployments["singularResource"], "deployment");
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
    assert_eq!(deployments["categories"], json!(["all"]));
    assert_eq!(
        deployments["subresources"],
        json!([
            {"subresource": "scale",
             "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
             "verbs": ["get", "patch", "update"]},
            {"subresource": "status",
             "responseKind": {"group": "", "version": "", "kind": "Deployment"},
             "verbs": ["get", "patch", "update"]}
        ])
    );

    let autoscaling = items
        .iter()
        .find(|i| i["metadata"]["name"] == "autoscaling")
        .unwrap();
    assert_eq!(names(&autoscaling["versions"], "version"), ["v2", "v1"]);

    let rbac = items
        .iter()
        .find(|i| i["metadata"]["name"] == "rbac.authorization.k8s.io")
        .unwrap();
    let roles = find(
        &rbac["versions"][0]["resources"],
        "resource",
        "clusterroles",
    );
    assert_eq!(roles["scope"], "Cluster");
    assert!(roles.get("subresources").is_none() && roles.get("shortNames").is_none());
}

#[test]
fn aggregated_legacy_has_only_the_core_group() {
    let doc = aggregated(Scope::Legacy, AggregatedVersion::V2);
    let items = doc["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"], json!({"creationTimestamp": null}));
    let v1 = &items[0]["versions"][0];
    assert_eq!(v1["version"], "v1");
    let resources = &v1["resources"];
    assert_eq!(find(resources, "resource", "pods")["scope"], "Namespaced");
    assert_eq!(find(resources, "resource", "nodes")["scope"], "Cluster");
    let pods = find(resources, "resource", "pods");
    let eviction = find(&pods["subresources"], "subresource", "eviction");
    assert_eq!(
        eviction["responseKind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    let binding = find(&pods["subresources"], "subresource", "binding");
    assert_eq!(
        binding["responseKind"],
        json!({"group": "", "version": "", "kind": "Binding"})
    );
}

#[test]
fn aggregated_v2beta1_differs_only_in_api_version() {
    let mut beta = aggregated(Scope::Apis, AggregatedVersion::V2Beta1);
    assert_eq!(beta["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    beta["apiVersion"] = json!("apidiscovery.k8s.io/v2");
    assert_eq!(beta, aggregated(Scope::Apis, AggregatedVersion::V2));
}

const KUBECTL_133_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[test]
fn negotiation_follows_upstream() {
    use AggregatedVersion::*;
    use Negotiated::*;
    assert_eq!(negotiate(KUBECTL_133_ACCEPT), Aggregated(V2));
    assert_eq!(
        negotiate(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        ),
        Aggregated(V2Beta1)
    );
    assert_eq!(negotiate("application/json"), Legacy);
    assert_eq!(negotiate("application/json, */*"), Legacy);
    assert_eq!(negotiate(""), Legacy);
    assert_eq!(negotiate("garbage;;,/,a/b/c"), Legacy);
    // q-values reorder clauses; q=0 refuses one.
    assert_eq!(
        negotiate(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5, application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ),
        Aggregated(V2Beta1)
    );
    assert_eq!(
        negotiate("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0"),
        Legacy
    );
    // Wildcards accept JSON; unknown versions and kinds are skipped.
    assert_eq!(
        negotiate("*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
        Aggregated(V2)
    );
    assert_eq!(
        negotiate(
            "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ),
        Aggregated(V2Beta1)
    );
    assert_eq!(
        negotiate("application/json;g=apidiscovery.k8s.io;v=v2;as=Other"),
        Legacy
    );
    // Protobuf is not served: fall through to the JSON clause.
    assert_eq!(
        negotiate(
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ),
        Aggregated(V2Beta1)
    );
}

#[test]
fn content_types() {
    assert_eq!(
        Negotiated::Aggregated(AggregatedVersion::V2).content_type(),
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(
        Negotiated::Aggregated(AggregatedVersion::V2Beta1).content_type(),
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    );
    assert_eq!(Negotiated::Legacy.content_type(), "application/json");
}

#[test]
fn etags_are_stable_quoted_and_content_addressed() {
    let a = etag(&aggregated(Scope::Apis, AggregatedVersion::V2));
    assert_eq!(a, etag(&aggregated(Scope::Apis, AggregatedVersion::V2)));
    assert!(a.starts_with('"') && a.ends_with('"') && a.len() == 66);
    assert_ne!(a, etag(&aggregated(Scope::Legacy, AggregatedVersion::V2)));
    assert!(etag_matches(&a, &a));
    assert!(etag_matches(&format!("\"x\", W/{a}"), &a));
    assert!(etag_matches("*", &a));
    assert!(!etag_matches("\"x\"", &a));
}

#[test]
fn root_response_serves_aggregated_with_etag_and_304() {
    let first = root_response(Scope::Apis, KUBECTL_133_ACCEPT, None, "127.0.0.1:6443");
    assert_eq!(first.status, 200);
    assert_eq!(
        first.content_type,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert!(first.cacheable);
    let tag = first.etag.clone().unwrap();
    let body: Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(body, aggregated(Scope::Apis, AggregatedVersion::V2));
    assert_eq!(tag, etag(&body));

    let again = root_response(
        Scope::Apis,
        KUBECTL_133_ACCEPT,
        Some(&tag),
        "127.0.0.1:6443",
    );
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());

    let legacy = root_response(
        Scope::Legacy,
        "application/json",
        Some(&tag),
        "1.2.3.4:6443",
    );
    assert_eq!(
        (legacy.status, legacy.content_type),
        (200, "application/json")
    );
    assert!(legacy.etag.is_none() && !legacy.cacheable);
    let body: Value = serde_json::from_slice(&legacy.body).unwrap();
    assert_eq!(body, api_versions("1.2.3.4:6443"));
}

#[test]
fn version_info_reports_1_33() {
    let v = version_info();
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "33");
    let git = v["gitVersion"].as_str().unwrap();
    // Semver: v<major>.<minor>.<patch>, build metadata after '+', nothing else.
    let (core, build) = git.strip_prefix('v').unwrap().split_once('+').unwrap();
    assert_eq!(core, "1.33.0");
    assert!(
        build
            .split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    );
    for field in [
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
    ] {
        assert!(v[field].is_string(), "{field}");
    }
    let platform = v["platform"].as_str().unwrap();
    assert_eq!(platform.split('/').count(), 2);
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        assert_eq!(platform, "linux/amd64");
    }
}

#[test]
fn kube_aware_version_order_matches_upstream() {
    let mut versions = vec![
        "v1alpha1",
        "v11alpha2",
        "foo1",
        "v10beta3",
        "v2",
        "foo10",
        "v12alpha1",
        "v3beta1",
        "v1",
        "v11beta2",
        "v10",
        "v10alpha1",
    ];
    versions.sort_by(|a, b| compare_kube_aware_versions(b, a));
    assert_eq!(
        versions,
        [
            "v10",
            "v2",
            "v1",
            "v11beta2",
            "v10beta3",
            "v3beta1",
            "v12alpha1",
            "v11alpha2",
            "v10alpha1",
            "v1alpha1",
            "foo1",
            "foo10"
        ]
    );
    assert_eq!(compare_kube_aware_versions("v1", "v1"), Ordering::Equal);
    assert_eq!(compare_kube_aware_versions("v1beta", "v1"), Ordering::Less);
}

fn widget(version: &str) -> ServedResource {
    ServedResource {
        group: "example.com".into(),
        version: version.into(),
        resource: "widgets".into(),
        singular: "widget".into(),
        kind: "Widget".into(),
        namespaced: true,
        verbs: ["get", "list", "watch"].map(String::from).to_vec(),
        short_names: vec!["wg".into()],
        categories: vec!["all".into()],
        storage_version_hash: Some(storage_version_hash("example.com", "v1", "Widget")),
        subresources: vec![ServedSubresource {
            name: "status".into(),
            group: "example.com".into(),
            version: version.into(),
            kind: "Widget".into(),
            verbs: ["get", "patch", "update"].map(String::from).to_vec(),
        }],
    }
}

#[test]
fn custom_resources_join_the_documents() {
    let mut apis = ServedApis::builtin().with([widget("v1beta1"), widget("v1")]);
    let mut gadget = widget("v1");
    gadget.group = "a.example.org".into();
    apis.add(gadget);
    // Re-adding replaces instead of duplicating.
    apis.add(widget("v1"));

    let list = apis.api_group_list();
    let groups = names(&list["groups"], "name");
    let builtin = api_group_list()["groups"].as_array().unwrap().len();
    assert_eq!(groups[builtin..], ["a.example.org", "example.com"]);
    let example = find(&list["groups"], "name", "example.com");
    assert_eq!(example["preferredVersion"]["version"], "v1");
    assert_eq!(names(&example["versions"], "version"), ["v1", "v1beta1"]);

    let doc = apis.api_resource_list("example.com", "v1").unwrap();
    assert_eq!(
        names(&doc["resources"], "name"),
        ["widgets", "widgets/status"]
    );
    let status = find(&doc["resources"], "name", "widgets/status");
    assert!(status.get("group").is_none());

    let agg = apis.aggregated(Scope::Apis, AggregatedVersion::V2);
    let last = agg["items"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["metadata"]["name"], "example.com");
    assert_eq!(names(&last["versions"], "version"), ["v1", "v1beta1"]);
    assert_eq!(last["versions"][0]["resources"][0]["resource"], "widgets");

    // The built-in documents are untouched.
    assert!(api_resource_list("example.com", "v1").is_none());
}
