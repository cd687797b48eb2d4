//! Update-time fidelity through kubectl: the pod-template warnings upstream sends on create and
//! again when an update moves the generation (node-affinity labels, fractional bytes, port
//! overlaps), the Service ipFamilies upgrade/downgrade rules of an IPv4-only cluster, and a
//! StatefulSet template's labels and annotations.

use k1s_tests::{TestCluster, fails};

#[test]
fn template_warnings_come_on_create_and_when_the_generation_moves() {
    let c = TestCluster::start();
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  \
         selector: {matchLabels: {app: w}}\n  template:\n    metadata: {labels: {app: w}}\n    \
         spec:\n      affinity:\n        nodeAffinity:\n          \
         requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n            \
         - matchExpressions: [{key: beta.kubernetes.io/arch, operator: In, values: [amd64]}]\n      \
         containers:\n      - {name: a, image: nginx, ports: [{containerPort: 80}], \
         resources: {limits: {memory: 0.5}}}\n      \
         - {name: b, image: nginx, ports: [{containerPort: 80}]}\n",
    );
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let err = k1s_tests::stderr(&out);
    let wants = [
        "Warning: spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/arch is deprecated since v1.14; use \"kubernetes.io/arch\" instead",
        "Warning: spec.template.spec.containers[0].resources.limits[memory]: fractional byte value \"500m\" is invalid, must be an integer",
        "Warning: spec.template.spec.containers[1].ports[0]: duplicate port definition with spec.template.spec.containers[0].ports[0]",
    ];
    for want in wants {
        assert!(err.contains(want), "missing {want:?} in {err}");
    }
    // An annotation moves a Deployment's generation, so the warnings come again; a label
    // does not.
    let out = c.kubectl(&["annotate", "deployment/web", "note=x"]);
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let err = k1s_tests::stderr(&out);
    assert!(err.contains(wants[2]), "{err}");
    let out = c.kubectl(&["label", "deployment/web", "tier=web"]);
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    assert!(!k1s_tests::stderr(&out).contains("Warning"));
}

#[test]
fn service_ip_families_keep_their_primary_and_stay_ipv4() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let families = c.kubectl_ok(&["get", "svc", "web", "-o", "jsonpath={.spec.ipFamilies}"]);
    assert_eq!(families, r#"["IPv4"]"#);
    let args = [
        "patch",
        "svc",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"ipFamilies":["IPv6"]}}"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(
            "spec.ipFamilies[0]: Invalid value: []core.IPFamily{\"IPv6\"}: may not change once set"
        ),
        "{err}"
    );
    let args = [
        "patch",
        "svc",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"ipFamilyPolicy":"RequireDualStack","ipFamilies":["IPv4","IPv6"]}}"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    for want in [
        "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
        "spec.ipFamilies[1]: Invalid value: \"IPv6\": not configured on this cluster",
    ] {
        assert!(err.contains(want), "missing {want:?} in {err}");
    }
    // The refused updates left the Service as it was.
    let families = c.kubectl_ok(&["get", "svc", "web", "-o", "jsonpath={.spec.ipFamilies}"]);
    assert_eq!(families, r#"["IPv4"]"#);
}

#[test]
fn stateful_set_template_labels_and_annotations_are_validated() {
    let c = TestCluster::start();
    let args = ["create", "-f", "-"];
    let out = c.kubectl_stdin(
        &args,
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  \
         selector: {matchLabels: {app: d}}\n  template:\n    metadata:\n      \
         labels: {app: d}\n      \
         annotations: {controller.kubernetes.io/pod-deletion-cost: ten}\n    \
         spec: {containers: [{name: c, image: nginx}]}\n",
    );
    let err = fails(&args, out);
    assert!(
        err.contains(
            "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"ten\": must be a 32bit integer"
        ),
        "{err}"
    );
}

#[test]
fn service_creates_get_upstream_ip_family_fields_on_an_ipv4_cluster() {
    let c = TestCluster::start();
    // (spec, clusterIPs, ipFamilies, ipFamilyPolicy) as upstream's allocator leaves them.
    let cases = [
        (
            r#"{"ipFamilyPolicy":"PreferDualStack","ports":[{"port":80}],"selector":{"a":"b"}}"#,
            r#"["IPv4"]"#,
            "PreferDualStack",
        ),
        (
            r#"{"clusterIP":"None","ports":[{"port":80}]}"#,
            r#"["IPv4","IPv6"]"#,
            "RequireDualStack",
        ),
        (
            r#"{"clusterIP":"None","ports":[{"port":80}],"selector":{"a":"b"}}"#,
            r#"["IPv4"]"#,
            "SingleStack",
        ),
        (r#"{"ports":[{"port":80}]}"#, r#"["IPv4"]"#, "SingleStack"),
    ];
    for (i, (spec, families, policy)) in cases.iter().enumerate() {
        let name = format!("fam{i}");
        let doc = format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"{name}"}},"spec":{spec}}}"#
        );
        let out = c.kubectl_stdin(&["create", "-f", "-"], &doc);
        assert!(out.status.success(), "{spec}: {}", k1s_tests::stderr(&out));
        let got = c.kubectl_ok(&[
            "get",
            "svc",
            &name,
            "-o",
            "jsonpath={.spec.ipFamilies} {.spec.ipFamilyPolicy}",
        ]);
        assert_eq!(got, format!("{families} {policy}"), "{spec}");
    }
    // What an IPv4-only cluster cannot give is refused on create, and nothing is allocated.
    let refused = [
        (
            r#"{"ipFamilies":["IPv6"],"ports":[{"port":80}],"selector":{"a":"b"}}"#,
            r#"spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster"#,
        ),
        (
            r#"{"ipFamilyPolicy":"RequireDualStack","ports":[{"port":80}],"selector":{"a":"b"}}"#,
            r#"spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services"#,
        ),
    ];
    for (spec, want) in refused {
        let doc = format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"refused"}},"spec":{spec}}}"#
        );
        let out = c.kubectl_stdin(&["create", "-f", "-"], &doc);
        assert!(!out.status.success(), "{spec} was accepted");
        let err = k1s_tests::stderr(&out);
        assert!(err.contains(want), "{spec}: {err}");
    }
    let addresses = c.kubectl_ok(&["get", "ipaddresses", "-o", "name"]);
    assert_eq!(addresses.lines().count(), 3, "{addresses}");
}
