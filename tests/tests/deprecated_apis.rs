//! Deprecated kinds and custom resource versions announce themselves on every request, as
//! upstream's API server does: kubectl prints the `Warning:` line for v1 Endpoints (deprecated in
//! 1.33) and for a CRD version marked `deprecated`, on success and on errors alike. And
//! `kubectl get componentstatuses`, deprecated since 1.19 and still served by 1.33.

use k1s_tests::TestCluster;

const ENDPOINTS: &str =
    "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice";

fn stderr_of(c: &TestCluster, args: &[&str]) -> (bool, String) {
    let out = c.kubectl(args);
    (out.status.success(), k1s_tests::stderr(&out))
}

#[test]
fn deprecated_kinds_and_versions_warn_on_every_request() {
    let c = TestCluster::start();

    let (ok, err) = stderr_of(&c, &["get", "endpoints", "kubernetes"]);
    assert!(ok, "{err}");
    assert!(err.contains(ENDPOINTS), "{err}");
    // A refused request carries it too.
    let (ok, err) = stderr_of(&c, &["get", "endpoints", "no-such"]);
    assert!(!ok);
    assert!(err.contains(ENDPOINTS), "{err}");
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
    let (ok, err) = stderr_of(&c, &["get", "endpointslices", "-A"]);
    assert!(ok, "{err}");
    assert!(!err.contains("Warning"), "{err}");

    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  \
         scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  \
         versions:\n  \
         - {name: v1alpha1, served: true, storage: false, deprecated: true, \
            deprecationWarning: \"v1alpha1 widgets go away soon\", \
            schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n  \
         - {name: v1beta1, served: true, storage: false, deprecated: true, \
            schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n  \
         - {name: v1, served: true, storage: true, \
            schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n  \
         - {name: v2alpha1, served: true, storage: false, \
            schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}\n",
    );
    c.kubectl_ok(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.example.com",
        "--timeout=30s",
    ]);

    // Without a text of its own: the newest served, non-deprecated version newer than it
    // (v1, not the alpha v2alpha1, which kube-aware ordering puts below v1).
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: example.com/v1beta1\nkind: Widget\nmetadata: {name: w}\n",
    );
    let err = k1s_tests::stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"
        ),
        "{err}"
    );
    let (ok, err) = stderr_of(&c, &["get", "widgets.v1alpha1.example.com", "w"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("Warning: v1alpha1 widgets go away soon"),
        "{err}"
    );
    let (ok, err) = stderr_of(&c, &["get", "widgets.v1.example.com", "w"]);
    assert!(ok, "{err}");
    assert!(!err.contains("Warning"), "{err}");
}

#[test]
fn component_statuses_report_the_control_plane() {
    let c = TestCluster::start();
    // The in-process controller-manager and scheduler take their Leases within moments.
    let mut table = String::new();
    for _ in 0..100 {
        table = c.kubectl_ok(&["get", "componentstatuses"]);
        if table.lines().filter(|l| l.contains("Healthy   ok")).count() == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut names: Vec<&str> = table
        .lines()
        .skip(1)
        .filter(|l| l.contains(" Healthy ") && l.contains(" ok"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["controller-manager", "etcd-0", "scheduler"],
        "{table}"
    );
    assert!(table.starts_with("NAME"), "{table}");
    assert!(
        table.lines().next().is_some_and(|l| l.contains("MESSAGE")),
        "{table}"
    );

    let (ok, err) = stderr_of(&c, &["get", "cs", "etcd-0"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{err}"
    );
    let json = c.kubectl_ok(&["get", "cs", "scheduler", "-o", "json"]);
    let obj: serde_json::Value = serde_json::from_str(&json).expect("kubectl -o json prints JSON");
    assert_eq!(obj["kind"], "ComponentStatus");
    assert_eq!(
        obj["conditions"],
        serde_json::json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    // Upstream answers an unknown name with a 500, and serves no watch, create or delete.
    let (ok, err) = stderr_of(&c, &["get", "cs", "kubelet"]);
    assert!(!ok);
    assert!(
        err.contains("Internal error occurred: Component not found: kubelet"),
        "{err}"
    );
    let (ok, err) = stderr_of(&c, &["delete", "cs", "scheduler"]);
    assert!(!ok);
    assert!(err.contains("MethodNotAllowed"), "{err}");
}
