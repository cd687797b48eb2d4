//! What a write to `/status` may change besides status, as upstream's status strategies decide:
//! metadata for most kinds (the conformance tests of Jobs, Services and the other status
//! endpoints patch an annotation through /status and read it back), minus the labels of a
//! Deployment and the owner references of a Pod; nothing but status for custom resources.

use k1s_tests::{StartOptions, TestCluster};

fn patch_status(c: &TestCluster, what: &str, patch: &str) -> serde_json::Value {
    let out = c.kubectl_ok(&[
        "patch",
        what,
        "--subresource=status",
        "--type=merge",
        "-p",
        patch,
        "-o",
        "json",
    ]);
    serde_json::from_str(&out).expect("kubectl -o json prints JSON")
}

#[test]
fn status_writes_keep_metadata_as_upstream() {
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec!["--controllers=-*".into()],
        ..Default::default()
    });
    let meta =
        r#"{"metadata":{"annotations":{"patchedstatus":"true"},"labels":{"patched":"yes"}}}"#;

    // A Job: its annotation and a condition of the client's own type, as the e2e test writes.
    c.kubectl_ok(&["create", "job", "j", "--image=busybox", "--", "sleep", "1"]);
    let job = patch_status(
        &c,
        "job/j",
        r#"{"metadata":{"annotations":{"patchedstatus":"true"}},"status":{"conditions":[{"type":"CustomConditionType","status":"False","reason":"E2E","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
    );
    assert_eq!(job["metadata"]["annotations"]["patchedstatus"], "true");
    assert_eq!(
        job["status"]["conditions"][0]["type"],
        "CustomConditionType"
    );
    assert_eq!(job["metadata"]["generation"], 1);

    // A Service and a ConfigMap-free kind with status: labels and annotations both land.
    c.kubectl_ok(&["create", "service", "clusterip", "s", "--tcp=80:80"]);
    let svc = patch_status(&c, "service/s", meta);
    assert_eq!(svc["metadata"]["annotations"]["patchedstatus"], "true");
    assert_eq!(svc["metadata"]["labels"]["patched"], "yes");

    // A Deployment keeps its labels (deploymentStatusStrategy), takes the annotation.
    c.kubectl_ok(&["create", "deployment", "d", "--image=nginx"]);
    let d = patch_status(&c, "deployment/d", meta);
    assert_eq!(d["metadata"]["annotations"]["patchedstatus"], "true");
    assert!(d["metadata"]["labels"].get("patched").is_none(), "{d}");
    assert_eq!(d["metadata"]["generation"], 1);

    // A Pod takes labels, never owner references, through /status. (No controllers run
    // here, so the ServiceAccount admission needs the account made by hand.)
    c.kubectl_ok(&["create", "serviceaccount", "default"]);
    c.kubectl_ok(&["run", "p", "--image=nginx"]);
    let p = patch_status(
        &c,
        "pod/p",
        r#"{"metadata":{"labels":{"patched":"yes"},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":"9b1f8c1e-0000-4000-8000-000000000000"}]}}"#,
    );
    assert_eq!(p["metadata"]["labels"]["patched"], "yes");
    assert!(p["metadata"].get("ownerReferences").is_none(), "{p}");

    // A custom resource's /status changes status only.
    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {name: gadgets.example.com}\nspec:\n  group: example.com\n  \
         scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n  \
         versions:\n  - name: v1\n    served: true\n    storage: true\n    \
         subresources: {status: {}}\n    \
         schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
    );
    c.kubectl_ok(&[
        "wait",
        "--for=condition=established",
        "crd/gadgets.example.com",
        "--timeout=30s",
    ]);
    c.apply("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n");
    let g = patch_status(
        &c,
        "gadget/g",
        r#"{"metadata":{"annotations":{"patchedstatus":"true"}},"status":{"ok":true}}"#,
    );
    assert_eq!(g["status"]["ok"], true);
    assert!(
        g["metadata"]["annotations"].get("patchedstatus").is_none(),
        "{g}"
    );
}
