//! Tests pinning catalog facts against upstream discovery.

use std::collections::HashSet;

use super::*;

fn get(group: &str, version: &str, resource: &str) -> &'static ResourceInfo {
    find(group, version, resource).unwrap_or_else(|| panic!("{group}/{version} {resource} missing"))
}

#[test]
fn entries_are_unique_by_gvr_and_gvk() {
    let mut gvrs = HashSet::new();
    let mut gvks = HashSet::new();
    for r in resources() {
        assert!(gvrs.insert(r.gvr()), "duplicate {}", r.gvr());
        assert!(gvks.insert(r.gvk()), "duplicate {}", r.gvk());
    }
    assert_eq!(resources().len(), 61);
}

#[test]
fn entries_are_well_formed() {
    for r in resources() {
        assert!(serves(r.group, r.version), "{} not in groups", r.gvr());
        assert_eq!(r.singular, r.kind.to_lowercase(), "{}", r.resource);
        assert!(!r.verbs.is_empty());
        let mut sorted_verbs = r.verbs.to_vec();
        sorted_verbs.sort_unstable();
        assert_eq!(sorted_verbs, r.verbs, "{} verbs unsorted", r.resource);
        let names: Vec<&str> = r.subresources.iter().map(|s| s.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "{} subresources unsorted", r.resource);
        for s in r.subresources {
            if s.name == "status" {
                assert_eq!(s.gvk(), r.gvk(), "{}/status", r.resource);
            }
        }
    }
    // Resources are listed alphabetically within each group/version, grouped contiguously.
    for g in groups() {
        for v in g.versions {
            let names: Vec<&str> = resources_in(g.name, v).map(|r| r.resource).collect();
            assert!(!names.is_empty(), "{}/{v} serves nothing", g.name);
            let mut sorted = names.clone();
            sorted.sort_unstable();
            assert_eq!(names, sorted, "{}/{v}", g.name);
        }
    }
    // Every group in the table is served and every served version has resources.
    for r in resources() {
        assert!(find_group(r.group).is_some());
    }
}

#[test]
fn pods() {
    let pods = get("", "v1", "pods");
    assert_eq!(pods.kind, "Pod");
    assert_eq!(pods.singular, "pod");
    assert!(pods.namespaced);
    assert_eq!(pods.short_names, ["po"]);
    assert_eq!(pods.categories, ["all"]);
    assert_eq!(
        pods.verbs,
        [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ]
    );
    assert_eq!(pods.list_kind(), "PodList");
    assert_eq!(pods.api_version(), "v1");
    assert_eq!(pods.group_resource().to_string(), "pods");
    let binding = pods.subresource("binding").unwrap();
    assert_eq!((binding.kind, binding.verbs), ("Binding", &["create"][..]));
    let eviction = pods.subresource("eviction").unwrap();
    assert_eq!(eviction.api_version(), "policy/v1");
    assert_eq!(eviction.kind, "Eviction");
    assert!(eviction.has_verb("create") && !eviction.has_verb("get"));
    let status = pods.subresource("status").unwrap();
    assert_eq!(status.verbs, ["get", "patch", "update"]);
    assert!(pods.has_status());
}

#[test]
fn scopes_and_short_names() {
    for (g, res, short, namespaced) in [
        ("", "services", "svc", true),
        ("", "configmaps", "cm", true),
        ("", "namespaces", "ns", false),
        ("", "nodes", "no", false),
        ("", "persistentvolumes", "pv", false),
        ("", "persistentvolumeclaims", "pvc", true),
        ("", "replicationcontrollers", "rc", true),
        ("", "serviceaccounts", "sa", true),
        ("", "events", "ev", true),
        ("", "endpoints", "ep", true),
        ("", "resourcequotas", "quota", true),
        ("", "limitranges", "limits", true),
        ("apps", "deployments", "deploy", true),
        ("apps", "replicasets", "rs", true),
        ("apps", "statefulsets", "sts", true),
        ("apps", "daemonsets", "ds", true),
        ("batch", "cronjobs", "cj", true),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "csr",
            false,
        ),
        ("policy", "poddisruptionbudgets", "pdb", true),
        ("networking.k8s.io", "ingresses", "ing", true),
        ("networking.k8s.io", "networkpolicies", "netpol", true),
        ("networking.k8s.io", "ipaddresses", "ip", false),
        ("storage.k8s.io", "storageclasses", "sc", false),
        ("scheduling.k8s.io", "priorityclasses", "pc", false),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "crd",
            false,
        ),
        ("events.k8s.io", "events", "ev", true),
    ] {
        let v = preferred_version(g).unwrap();
        let r = get(g, v, res);
        assert!(r.short_names.contains(&short), "{res} short {short}");
        assert_eq!(r.namespaced, namespaced, "{res} scope");
    }
    let crd = get("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    assert_eq!(crd.short_names, ["crd", "crds"]);
    for res in ["secrets", "podtemplates"] {
        assert!(get("", "v1", res).short_names.is_empty());
    }
    assert!(
        get("rbac.authorization.k8s.io", "v1", "clusterroles")
            .short_names
            .is_empty()
    );
    assert!(get("rbac.authorization.k8s.io", "v1", "roles").namespaced);
    assert!(!get("rbac.authorization.k8s.io", "v1", "clusterrolebindings").namespaced);
    assert!(!get("storage.k8s.io", "v1", "csinodes").namespaced);
    assert!(get("storage.k8s.io", "v1", "csistoragecapacities").namespaced);
    assert!(get("coordination.k8s.io", "v1", "leases").namespaced);
}

#[test]
fn namespaces_have_finalize_and_no_deletecollection() {
    let ns = get("", "v1", "namespaces");
    assert!(!ns.has_verb("deletecollection"));
    assert!(ns.has_verb("delete"));
    let fin = ns.subresource("finalize").unwrap();
    assert_eq!((fin.kind, fin.verbs), ("Namespace", &["update"][..]));
    assert!(ns.has_status());
    assert!(get("", "v1", "services").has_verb("deletecollection"));
}

#[test]
fn scale_subresources() {
    for (g, res) in [
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("", "replicationcontrollers"),
    ] {
        let r = get(g, "v1", res);
        let scale = r.subresource("scale").unwrap();
        assert_eq!(scale.kind, "Scale");
        assert_eq!((scale.group, scale.version), ("autoscaling", "v1"));
        assert_eq!(scale.verbs, ["get", "patch", "update"]);
        assert!(r.has_status());
    }
    let ds = get("apps", "v1", "daemonsets");
    assert!(ds.subresource("scale").is_none());
    assert!(ds.has_status());
    assert!(
        get("apps", "v1", "controllerrevisions")
            .subresources
            .is_empty()
    );
}

#[test]
fn other_subresources() {
    let token = get("", "v1", "serviceaccounts")
        .subresource("token")
        .unwrap();
    assert_eq!(
        token.gvk(),
        GroupVersionKind::new("authentication.k8s.io", "v1", "TokenRequest")
    );
    assert_eq!(token.verbs, ["create"]);
    let csr = get("certificates.k8s.io", "v1", "certificatesigningrequests");
    let approval = csr.subresource("approval").unwrap();
    assert_eq!(approval.kind, "CertificateSigningRequest");
    assert_eq!(approval.verbs, ["get", "patch", "update"]);
    assert!(csr.has_status());
    for (g, v, res) in [
        ("", "v1", "nodes"),
        ("", "v1", "persistentvolumes"),
        ("", "v1", "persistentvolumeclaims"),
        ("", "v1", "resourcequotas"),
        ("", "v1", "services"),
        ("batch", "v1", "jobs"),
        ("batch", "v1", "cronjobs"),
        ("autoscaling", "v1", "horizontalpodautoscalers"),
        ("autoscaling", "v2", "horizontalpodautoscalers"),
        ("policy", "v1", "poddisruptionbudgets"),
        ("networking.k8s.io", "v1", "ingresses"),
        ("networking.k8s.io", "v1", "servicecidrs"),
        ("storage.k8s.io", "v1", "volumeattachments"),
        (
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        ),
        ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        ("apiregistration.k8s.io", "v1", "apiservices"),
    ] {
        assert!(get(g, v, res).has_status(), "{res} status");
    }
    for (g, res) in [
        ("", "configmaps"),
        ("", "secrets"),
        ("", "endpoints"),
        ("networking.k8s.io", "networkpolicies"),
        ("networking.k8s.io", "ipaddresses"),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
        ),
    ] {
        assert!(get(g, "v1", res).subresources.is_empty(), "{res}");
    }
}

#[test]
fn create_only_reviews() {
    for (g, res, namespaced) in [
        ("authentication.k8s.io", "tokenreviews", false),
        ("authentication.k8s.io", "selfsubjectreviews", false),
        ("authorization.k8s.io", "subjectaccessreviews", false),
        ("authorization.k8s.io", "selfsubjectaccessreviews", false),
        ("authorization.k8s.io", "selfsubjectrulesreviews", false),
        ("authorization.k8s.io", "localsubjectaccessreviews", true),
    ] {
        let r = get(g, "v1", res);
        assert_eq!(r.verbs, ["create"], "{res}");
        assert_eq!(r.namespaced, namespaced, "{res}");
    }
}

#[test]
fn categories() {
    // Built-in entries only: dynamic.rs tests register a custom "widgets" in "all" concurrently.
    let builtin = |category| {
        resources_in_category(category)
            .filter(|r| !is_custom(r))
            .map(|r| r.resource)
            .collect::<Vec<&str>>()
    };
    let all = builtin("all");
    assert_eq!(
        all,
        [
            "pods",
            "replicationcontrollers",
            "services",
            "daemonsets",
            "deployments",
            "replicasets",
            "statefulsets",
            "horizontalpodautoscalers",
            "cronjobs",
            "jobs",
        ]
    );
    let ext = builtin("api-extensions");
    assert_eq!(
        ext,
        [
            "apiservices",
            "mutatingwebhookconfigurations",
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
            "validatingwebhookconfigurations",
            "customresourcedefinitions",
        ]
    );
}

#[test]
fn groups_and_versions() {
    let names: Vec<&str> = groups().iter().map(|g| g.name).collect();
    assert_eq!(names[0], "");
    assert_eq!(names[1], "apiregistration.k8s.io");
    assert_eq!(names[2], "apps");
    assert_eq!(names[3], "events.k8s.io");
    assert_eq!(names.len(), 20);
    assert_eq!(api_groups().count(), 19);
    assert_eq!(versions_of("autoscaling"), ["v2", "v1"]);
    assert_eq!(preferred_version("autoscaling"), Some("v2"));
    assert_eq!(preferred_version(""), Some("v1"));
    assert_eq!(versions_of("apps"), ["v1"]);
    assert!(versions_of("extensions").is_empty());
    assert!(preferred_version("nope").is_none());
    assert!(serves("batch", "v1") && !serves("batch", "v1beta1"));
    assert!(get("autoscaling", "v2", "horizontalpodautoscalers").is_preferred_version());
    assert!(!get("autoscaling", "v1", "horizontalpodautoscalers").is_preferred_version());
    assert_eq!(resources_in("", "v1").count(), 17);
}

#[test]
fn lookups_by_kind() {
    let d = find_by_kind("apps", "v1", "Deployment").unwrap();
    assert_eq!(d.resource, "deployments");
    assert_eq!(
        find_gvk(&GroupVersionKind::new("", "v1", "Pod"))
            .unwrap()
            .resource,
        "pods"
    );
    assert!(find_by_kind("apps", "v1", "Pod").is_none());
    assert_eq!(
        find_gvr(&GroupVersionResource::new("batch", "v1", "jobs"))
            .unwrap()
            .kind,
        "Job"
    );
    assert!(find("", "v1", "deployments").is_none());
    assert_eq!(
        find_by_kind("events.k8s.io", "v1", "Event").unwrap().group,
        "events.k8s.io"
    );
}

#[test]
fn name_resolution() {
    let r = |n: &str| resource_by_name_or_short(n).map(|r| (r.group, r.version, r.resource));
    assert_eq!(r("po"), Some(("", "v1", "pods")));
    assert_eq!(r("pod"), Some(("", "v1", "pods")));
    assert_eq!(r("Pods"), Some(("", "v1", "pods")));
    assert_eq!(r("deploy"), Some(("apps", "v1", "deployments")));
    assert_eq!(r("events"), Some(("", "v1", "events")));
    assert_eq!(r("ev"), Some(("", "v1", "events")));
    assert_eq!(
        r("events.events.k8s.io"),
        Some(("events.k8s.io", "v1", "events"))
    );
    assert_eq!(
        r("hpa"),
        Some(("autoscaling", "v2", "horizontalpodautoscalers"))
    );
    assert_eq!(
        r("horizontalpodautoscalers.v1.autoscaling"),
        Some(("autoscaling", "v1", "horizontalpodautoscalers"))
    );
    assert_eq!(r("deployments.apps"), Some(("apps", "v1", "deployments")));
    assert_eq!(
        r("crds"),
        Some(("apiextensions.k8s.io", "v1", "customresourcedefinitions"))
    );
    assert_eq!(
        r("netpol"),
        Some(("networking.k8s.io", "v1", "networkpolicies"))
    );
    assert_eq!(r("deployments.batch"), None);
    assert_eq!(r("nosuch"), None);
    assert_eq!(r(""), None);
    assert_eq!(r("."), None);
}

#[test]
fn deprecated_kinds_warn_as_upstream() {
    let endpoints = find("", "v1", "endpoints").unwrap();
    assert_eq!(
        deprecation_warning(endpoints).as_deref(),
        Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
    );
    let slices = find("discovery.k8s.io", "v1", "endpointslices").unwrap();
    assert_eq!(deprecation_warning(slices), None);
    assert_eq!(deprecation_warning(find("", "v1", "pods").unwrap()), None);
    assert_eq!(
        deprecation_warning(find("", "v1", "componentstatuses").unwrap()).as_deref(),
        Some("v1 ComponentStatus is deprecated in v1.19+")
    );
}
