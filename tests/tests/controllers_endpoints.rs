//! The endpoints and endpointslice controllers through kubectl: a Service's Endpoints and
//! EndpointSlices follow its pods' IPs and readiness (pods' status is set through `/status`, as
//! nothing runs pods here), named target ports resolve, and a large Service gets several slices.

use std::time::Duration;

use k1s_tests::{TestCluster, wait_until};

const WAIT: Duration = Duration::from_secs(60);

fn service(c: &TestCluster, publish_not_ready: bool) {
    c.apply(&format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: default}}\nspec:\n  selector: {{app: web}}\n  publishNotReadyAddresses: {publish_not_ready}\n  ports: [{{name: http, port: 80, targetPort: http}}]\n"
    ));
}

fn pods(c: &TestCluster, names: &[String]) {
    // A real Node, or the pod garbage collector would remove pods bound to a missing one.
    c.apply("apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n");
    let docs: Vec<String> = names
        .iter()
        .map(|n| format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {n}, namespace: default, labels: {{app: web}}}}\nspec:\n  nodeName: node-a\n  containers: [{{name: c, image: nginx, ports: [{{name: http, containerPort: 8080}}]}}]\n"))
        .collect();
    c.apply(&docs.join("---\n"));
}

fn set_status(c: &TestCluster, pod: &str, ip: &str, ready: bool) {
    let patch = format!(
        r#"{{"status":{{"phase":"Running","podIP":"{ip}","podIPs":[{{"ip":"{ip}"}}],"conditions":[{{"type":"Ready","status":"{}"}}]}}}}"#,
        if ready { "True" } else { "False" }
    );
    c.kubectl_ok(&[
        "patch",
        "pod",
        pod,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

fn endpoints(c: &TestCluster, path: &str) -> String {
    c.kubectl_ok(&["get", "endpoints", "web", "-o", &format!("jsonpath={path}")])
}

fn slice_conditions(c: &TestCluster) -> String {
    c.kubectl_ok(&[
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=web",
        "-o",
        "jsonpath={range .items[*].endpoints[*]}{.addresses[0]} ready={.conditions.ready}{\"\\n\"}{end}",
    ])
}

#[test]
fn endpoints_and_slices_follow_pod_readiness() {
    let c = TestCluster::start();
    service(&c, false);
    pods(&c, &["web-1".into(), "web-2".into()]);
    set_status(&c, "web-1", "10.244.0.5", true);
    set_status(&c, "web-2", "10.244.0.6", false);
    wait_until(
        WAIT,
        "Endpoints with one ready and one not-ready address",
        || {
            let ready = endpoints(&c, "{.subsets[0].addresses[*].ip}");
            let not_ready = endpoints(&c, "{.subsets[0].notReadyAddresses[*].ip}");
            (ready == "10.244.0.5" && not_ready == "10.244.0.6").then_some(())
        },
    );
    // The named target port resolves to the container port.
    assert_eq!(endpoints(&c, "{.subsets[0].ports[0].port}"), "8080");
    wait_until(WAIT, "the slice to carry readiness", || {
        let s = slice_conditions(&c);
        (s.contains("10.244.0.5 ready=true") && s.contains("10.244.0.6 ready=false")).then_some(())
    });
    let managed = c.kubectl_ok(&[
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=web",
        "-o",
        "jsonpath={.items[0].metadata.labels.endpointslice\\.kubernetes\\.io/managed-by} {.items[0].metadata.ownerReferences[0].kind}",
    ]);
    assert_eq!(managed, "endpointslice-controller.k8s.io Service");
    // web-2 becomes ready; web-1 is deleted.
    set_status(&c, "web-2", "10.244.0.6", true);
    c.kubectl_ok(&["delete", "pod", "web-1", "--grace-period=0", "--force"]);
    wait_until(WAIT, "Endpoints to follow", || {
        let ready = endpoints(&c, "{.subsets[0].addresses[*].ip}");
        let not_ready = endpoints(&c, "{.subsets[0].notReadyAddresses}");
        (ready == "10.244.0.6" && not_ready.is_empty()).then_some(())
    });
    wait_until(WAIT, "the slice to follow", || {
        (slice_conditions(&c).trim() == "10.244.0.6 ready=true").then_some(())
    });
}

#[test]
fn publish_not_ready_addresses_lists_every_pod_as_ready() {
    let c = TestCluster::start();
    service(&c, true);
    pods(&c, &["web-1".into()]);
    set_status(&c, "web-1", "10.244.0.7", false);
    wait_until(WAIT, "the not-ready pod listed as an address", || {
        (endpoints(&c, "{.subsets[0].addresses[*].ip}") == "10.244.0.7").then_some(())
    });
}

#[test]
fn a_service_with_150_pods_gets_two_slices_of_at_most_100() {
    let c = TestCluster::start();
    service(&c, false);
    let names: Vec<String> = (0..150).map(|i| format!("p-{i}")).collect();
    pods(&c, &names);
    for (i, n) in names.iter().enumerate() {
        set_status(&c, n, &format!("10.244.{}.{}", i / 200, i % 200 + 1), true);
    }
    let sizes = wait_until(WAIT, "150 endpoints in slices", || {
        let out = c.kubectl_ok(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
            "-o",
            "json",
        ]);
        let list: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let mut sizes: Vec<usize> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| s["endpoints"].as_array().map_or(0, Vec::len))
            .collect();
        sizes.sort();
        (sizes.iter().sum::<usize>() == 150).then_some(sizes)
    });
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    assert!(sizes.iter().all(|n| *n <= 100), "{sizes:?}");
}

/// As upstream's endpoints controller, which watches only deletions of Endpoints: Endpoints made
/// by hand without a Service survive being changed (service.go's "lifecycle of an Endpoint"), and
/// a Service's Endpoints deleted by someone are put back.
#[test]
fn endpoints_without_a_service_are_left_alone_and_deleted_ones_come_back() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: Endpoints\nmetadata: {name: testservice, namespace: default}\n\
         subsets: [{addresses: [{ip: 10.0.0.24}], ports: [{name: http, port: 80, protocol: TCP}]}]\n",
    );
    c.kubectl_ok(&["label", "endpoints", "testservice", "test-service=updated"]);
    c.kubectl_ok(&[
        "patch",
        "endpoints",
        "testservice",
        "-p",
        r#"{"subsets":[{"addresses":[{"ip":"10.0.0.25"}],"ports":[{"name":"http-test","port":8080}]}]}"#,
    ]);
    // A Service's Endpoints appearing shows the controller has run past both changes.
    service(&c, false);
    wait_until(WAIT, "the Service's Endpoints", || {
        c.kubectl(&["get", "endpoints", "web"])
            .status
            .success()
            .then_some(())
    });
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "endpoints",
            "testservice",
            "-o",
            "jsonpath={.subsets[0].addresses[0].ip}"
        ]),
        "10.0.0.25"
    );
    c.kubectl_ok(&["delete", "endpoints", "web"]);
    wait_until(WAIT, "the Service's Endpoints put back", || {
        c.kubectl(&["get", "endpoints", "web"])
            .status
            .success()
            .then_some(())
    });
}
