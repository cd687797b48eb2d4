//! Tests of the synthetic usage: annotations, fractions of requests, floors and node sums.

use serde_json::json;

use super::*;

fn pod(annotations: Value, containers: Value, node: &str, phase: &str) -> Value {
    json!({
        "metadata": {"name": "p", "namespace": "ns", "annotations": annotations, "labels": {"app": "x"}},
        "spec": {"nodeName": node, "containers": containers},
        "status": {"phase": phase},
    })
}

#[test]
fn container_usage_follows_annotations_then_requests() {
    let c = json!({"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}});
    let p = pod(json!({}), json!([c.clone()]), "n", "Running");
    // 10% of the cpu request, half the memory request.
    assert_eq!(container_usage(&p, &c), (50_000_000, 64 * 1024 * 1024));
    let p = pod(
        json!({CPU_ANNOTATION: "1", MEMORY_ANNOTATION: "1Gi"}),
        json!([c.clone()]),
        "n",
        "Running",
    );
    assert_eq!(container_usage(&p, &c), (1_000_000_000, 1024 * 1024 * 1024));
    // No requests: the floors.
    let bare = json!({"name": "b"});
    let p = pod(json!({}), json!([bare.clone()]), "n", "Running");
    assert_eq!(container_usage(&p, &bare), (1_000_000, 4 * 1024 * 1024));
    // A malformed annotation falls back to the requests.
    let p = pod(
        json!({CPU_ANNOTATION: "lots"}),
        json!([c.clone()]),
        "n",
        "Running",
    );
    assert_eq!(container_usage(&p, &c).0, 50_000_000);
}

#[test]
fn usage_uses_metrics_server_units() {
    assert_eq!(
        usage(250_000_000, 32 * 1024 * 1024),
        json!({"cpu": "250000000n", "memory": "32768Ki"})
    );
    // Memory rounds up to whole KiB.
    assert_eq!(usage(1, 1)["memory"], "1Ki");
}

#[test]
fn pod_and_node_metrics() {
    let containers = json!([
        {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
        {"name": "b"},
    ]);
    let p = pod(json!({}), containers, "sim", "Running");
    let sample = Sample {
        timestamp: "2026-01-01T00:00:00Z".into(),
    };
    let m = pod_metrics(&p, &sample);
    assert_eq!(m["metadata"]["name"], "p");
    assert_eq!(m["metadata"]["namespace"], "ns");
    assert_eq!(m["metadata"]["labels"]["app"], "x");
    assert_eq!(m["window"], WINDOW);
    assert_eq!(m["timestamp"], "2026-01-01T00:00:00Z");
    assert_eq!(m["containers"][0]["usage"]["cpu"], "10000000n");
    assert_eq!(m["containers"][1]["usage"]["memory"], "4096Ki");
    let pending = pod(json!({}), json!([{"name": "a"}]), "sim", "Pending");
    let elsewhere = pod(json!({}), json!([{"name": "a"}]), "other", "Running");
    let (cpu, mem) = node_usage("sim", &[p, pending, elsewhere]);
    // Base plus the running pod on this node only.
    assert_eq!(cpu, NODE_BASE_CPU_NANOS + 10_000_000 + 1_000_000);
    assert_eq!(
        mem,
        NODE_BASE_MEMORY_BYTES + 32 * 1024 * 1024 + 4 * 1024 * 1024
    );
    assert!(runs_simulated(
        &pod(json!({}), json!([]), "sim", "Running"),
        &["sim".to_string()]
    ));
    assert!(!runs_simulated(
        &pod(json!({}), json!([]), "sim", "Succeeded"),
        &["sim".to_string()]
    ));
}

#[test]
fn discovery_lists_the_group() {
    let served = crate::discovery::ServedApis::builtin();
    assert!(served.serves(GROUP, VERSION));
    let names: Vec<_> = served
        .resources_in(GROUP, VERSION)
        .iter()
        .map(|r| (r.resource.clone(), r.kind.clone(), r.namespaced))
        .collect();
    assert_eq!(
        names,
        [
            ("nodes".to_string(), "NodeMetrics".to_string(), false),
            ("pods".to_string(), "PodMetrics".to_string(), true)
        ]
    );
    assert_eq!(
        api_service()["status"]["conditions"][0]["type"],
        "Available"
    );
}
