//! Upstream's shape of everyday objects through kubectl: a Service carries
//! `status.loadBalancer`, and deleting a Service or a Pod answers with the deleted object (their
//! registries set ReturnDeletedObject), which the Python client parses as a V1Service / V1Pod.

use k1s_tests::TestCluster;

#[test]
fn a_service_has_a_load_balancer_status_and_its_delete_returns_it() {
    let c = TestCluster::start();
    let status = c.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "web",
        "--tcp=80:8080",
        "-o",
        "jsonpath={.status}",
    ]);
    assert_eq!(status, r#"{"loadBalancer":{}}"#);
    let out = c.kubectl_ok(&["delete", "--raw", "/api/v1/namespaces/default/services/web"]);
    let deleted: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(deleted["kind"], "Service", "{deleted}");
    assert_eq!(deleted["metadata"]["name"], "web");
    // Other kinds answer with a Success Status.
    c.kubectl_ok(&["create", "configmap", "cm"]);
    let out = c.kubectl_ok(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/configmaps/cm",
    ]);
    let status: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (status["kind"].as_str(), status["status"].as_str()),
        (Some("Status"), Some("Success"))
    );
}
