//! Facts about quota usage, after upstream's evaluator tests (pods_test.go, services_test.go,
//! persistent_volume_claims_test.go).
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

fn list(pairs: &[(&str, &str)]) -> ResourceList {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
        .collect()
}

fn pod(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
}

fn ctr(requests: Value, limits: Value) -> Value {
    json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
}

#[test]
fn pod_usage() {
    let cases: Vec<(&str, Value, ResourceList)> = vec![
        (
            "init container cpu",
            pod(json!({"initContainers": [ctr(json!({"cpu": "1m"}), json!({"cpu": "2m"}))]})),
            list(&[
                ("count/pods", "1"),
                ("pods", "1"),
                ("cpu", "1m"),
                ("requests.cpu", "1m"),
                ("limits.cpu", "2m"),
            ]),
        ),
        (
            "init container maximum wins over the sum of containers",
            pod(json!({
                "initContainers": [ctr(json!({"memory": "100Mi"}), json!({}))],
                "containers": [ctr(json!({"memory": "30Mi"}), json!({})), ctr(json!({"memory": "40Mi"}), json!({}))],
            })),
            list(&[
                ("count/pods", "1"),
                ("pods", "1"),
                ("memory", "100Mi"),
                ("requests.memory", "100Mi"),
            ]),
        ),
        (
            "containers summed, ephemeral storage",
            pod(json!({"containers": [
                ctr(json!({"ephemeral-storage": "32Mi"}), json!({"ephemeral-storage": "64Mi"})),
                ctr(json!({"ephemeral-storage": "32Mi"}), json!({"ephemeral-storage": "64Mi"})),
            ]})),
            list(&[
                ("count/pods", "1"),
                ("pods", "1"),
                ("ephemeral-storage", "64Mi"),
                ("requests.ephemeral-storage", "64Mi"),
                ("limits.ephemeral-storage", "128Mi"),
            ]),
        ),
        (
            "hugepages requests count twice, their limits not at all",
            pod(
                json!({"containers": [ctr(json!({"hugepages-2Mi": "100Mi"}), json!({"hugepages-2Mi": "100Mi"}))]}),
            ),
            list(&[
                ("count/pods", "1"),
                ("pods", "1"),
                ("hugepages-2Mi", "100Mi"),
                ("requests.hugepages-2Mi", "100Mi"),
            ]),
        ),
        (
            "extended resources count as requests.<name> only",
            pod(
                json!({"containers": [ctr(json!({"example.com/dongle": "3"}), json!({"example.com/dongle": "3"}))]}),
            ),
            list(&[
                ("count/pods", "1"),
                ("pods", "1"),
                ("requests.example.com/dongle", "3"),
            ]),
        ),
        (
            "overhead is added",
            {
                let mut p =
                    pod(json!({"containers": [ctr(json!({"cpu": "1"}), json!({"cpu": "2"}))]}));
                p["spec"]["overhead"] = json!({"cpu": "250m"});
                p
            },
            list(&[
                ("count/pods", "1"),
                ("pods", "1"),
                ("cpu", "1250m"),
                ("requests.cpu", "1250m"),
                ("limits.cpu", "2250m"),
            ]),
        ),
        (
            "a terminated pod keeps only its object count",
            {
                let mut p = pod(json!({"containers": [ctr(json!({"cpu": "1"}), json!({}))]}));
                p["status"] = json!({"phase": "Succeeded"});
                p
            },
            list(&[("count/pods", "1")]),
        ),
        (
            "a failed pod too",
            {
                let mut p = pod(json!({"containers": [ctr(json!({"cpu": "1"}), json!({}))]}));
                p["status"] = json!({"phase": "Failed"});
                p
            },
            list(&[("count/pods", "1")]),
        ),
    ];
    for (name, obj, want) in cases {
        assert_eq!(usage("", "pods", &obj), want, "{name}");
    }
}

#[test]
fn service_usage() {
    let svc = |spec: Value| json!({"metadata": {"name": "s"}, "spec": spec});
    let ports2 = json!([{"port": 80}, {"port": 81, "nodePort": 30001}]);
    let cases = vec![
        (
            "cluster ip",
            svc(json!({"type": "ClusterIP", "ports": ports2})),
            ("0", "0"),
        ),
        (
            "node port",
            svc(json!({"type": "NodePort", "ports": ports2})),
            ("2", "0"),
        ),
        (
            "load balancer",
            svc(json!({"type": "LoadBalancer", "ports": ports2})),
            ("2", "1"),
        ),
        (
            "load balancer without node ports counts the explicit ones",
            svc(
                json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": ports2}),
            ),
            ("1", "1"),
        ),
    ];
    for (name, obj, (nodeports, lbs)) in cases {
        let want = list(&[
            ("count/services", "1"),
            ("services", "1"),
            ("services.nodeports", nodeports),
            ("services.loadbalancers", lbs),
        ]);
        assert_eq!(usage("", "services", &obj), want, "{name}");
    }
}

#[test]
fn claim_usage() {
    let gold = "gold.storageclass.storage.k8s.io/";
    let claim = json!({"metadata": {"name": "c"}, "spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "10Gi"}}}});
    assert_eq!(
        usage("", "persistentvolumeclaims", &claim),
        list(&[
            ("count/persistentvolumeclaims", "1"),
            ("persistentvolumeclaims", "1"),
            ("requests.storage", "10Gi"),
            (&format!("{gold}persistentvolumeclaims"), "1"),
            (&format!("{gold}requests.storage"), "10Gi"),
        ])
    );
    // The beta annotation names the class over the field; a larger allocation counts.
    let mut c = claim.clone();
    c["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "silver"});
    c["status"] = json!({"allocatedResources": {"storage": "20Gi"}});
    let silver = "silver.storageclass.storage.k8s.io/";
    assert_eq!(
        usage("", "persistentvolumeclaims", &c),
        list(&[
            ("count/persistentvolumeclaims", "1"),
            ("persistentvolumeclaims", "1"),
            ("requests.storage", "20Gi"),
            (&format!("{silver}persistentvolumeclaims"), "1"),
            (&format!("{silver}requests.storage"), "20Gi"),
        ])
    );
    // No class, no request: only the counts.
    let bare = json!({"metadata": {"name": "c"}, "spec": {}});
    assert_eq!(
        usage("", "persistentvolumeclaims", &bare),
        list(&[
            ("count/persistentvolumeclaims", "1"),
            ("persistentvolumeclaims", "1")
        ])
    );
}

#[test]
fn object_counts() {
    assert_eq!(
        usage("", "configmaps", &json!({})),
        list(&[("count/configmaps", "1"), ("configmaps", "1")])
    );
    assert_eq!(
        usage("apps", "deployments", &json!({})),
        list(&[("count/deployments.apps", "1")])
    );
    assert_eq!(
        usage("example.com", "widgets", &json!({})),
        list(&[("count/widgets.example.com", "1")])
    );
}

#[test]
fn matching_resources() {
    let cases = [
        ("", "pods", "pods", true),
        ("", "pods", "count/pods", true),
        ("", "pods", "requests.cpu", true),
        ("", "pods", "limits.ephemeral-storage", true),
        ("", "pods", "hugepages-2Mi", true),
        ("", "pods", "requests.hugepages-2Mi", true),
        ("", "pods", "requests.example.com/dongle", true),
        ("", "pods", "requests.storage", false),
        ("", "pods", "limits.example.com/dongle", false),
        ("", "pods", "services", false),
        ("", "services", "services.nodeports", true),
        ("", "services", "count/services", true),
        ("", "services", "pods", false),
        ("", "persistentvolumeclaims", "requests.storage", true),
        (
            "",
            "persistentvolumeclaims",
            "gold.storageclass.storage.k8s.io/requests.storage",
            true,
        ),
        ("", "persistentvolumeclaims", "requests.cpu", false),
        ("", "secrets", "secrets", true),
        ("", "secrets", "count/secrets", true),
        ("", "secrets", "configmaps", false),
        ("apps", "deployments", "count/deployments.apps", true),
        ("apps", "deployments", "count/deployments", false),
        ("example.com", "widgets", "count/widgets.example.com", true),
    ];
    for (group, resource, name, want) in cases {
        assert_eq!(
            covers(group, resource, name),
            want,
            "{group}/{resource} {name}"
        );
    }
}

#[test]
fn scopes() {
    let q = |spec: Value| json!({"spec": spec});
    let best_effort = pod(json!({"containers": [ctr(json!({}), json!({}))]}));
    let burstable = pod(json!({"containers": [ctr(json!({"cpu": "1"}), json!({}))]}));
    let zero_cpu = pod(json!({"containers": [ctr(json!({"cpu": "0"}), json!({}))]}));
    let terminating = pod(json!({"activeDeadlineSeconds": 10, "containers": []}));
    let high = pod(json!({"priorityClassName": "high", "containers": []}));
    let cross = pod(json!({"containers": [], "affinity": {"podAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "x", "namespaceSelector": {}}}
    ]}}}));
    let pc = |op: &str, values: Value| {
        q(json!({"scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": op, "values": values}
        ]}}))
    };
    let cases: Vec<(&str, Value, &Value, bool)> = vec![
        (
            "BestEffort",
            q(json!({"scopes": ["BestEffort"]})),
            &best_effort,
            true,
        ),
        (
            "BestEffort, zero request",
            q(json!({"scopes": ["BestEffort"]})),
            &zero_cpu,
            true,
        ),
        (
            "BestEffort vs burstable",
            q(json!({"scopes": ["BestEffort"]})),
            &burstable,
            false,
        ),
        (
            "NotBestEffort",
            q(json!({"scopes": ["NotBestEffort"]})),
            &burstable,
            true,
        ),
        (
            "Terminating",
            q(json!({"scopes": ["Terminating"]})),
            &terminating,
            true,
        ),
        (
            "Terminating vs none",
            q(json!({"scopes": ["Terminating"]})),
            &burstable,
            false,
        ),
        (
            "NotTerminating",
            q(json!({"scopes": ["NotTerminating"]})),
            &burstable,
            true,
        ),
        (
            "both scopes must hold",
            q(json!({"scopes": ["Terminating", "BestEffort"]})),
            &terminating,
            true,
        ),
        ("PriorityClass In", pc("In", json!(["high"])), &high, true),
        (
            "PriorityClass In, other",
            pc("In", json!(["low"])),
            &high,
            false,
        ),
        (
            "PriorityClass In, none",
            pc("In", json!(["high"])),
            &burstable,
            false,
        ),
        (
            "PriorityClass NotIn",
            pc("NotIn", json!(["low"])),
            &high,
            true,
        ),
        (
            "PriorityClass NotIn, none",
            pc("NotIn", json!(["high"])),
            &burstable,
            true,
        ),
        ("PriorityClass Exists", pc("Exists", json!([])), &high, true),
        (
            "PriorityClass Exists, none",
            pc("Exists", json!([])),
            &burstable,
            false,
        ),
        (
            "PriorityClass DoesNotExist",
            pc("DoesNotExist", json!([])),
            &burstable,
            true,
        ),
        (
            "CrossNamespacePodAffinity",
            q(json!({"scopes": ["CrossNamespacePodAffinity"]})),
            &cross,
            true,
        ),
        (
            "CrossNamespacePodAffinity, none",
            q(json!({"scopes": ["CrossNamespacePodAffinity"]})),
            &burstable,
            false,
        ),
        ("no scopes", q(json!({})), &burstable, true),
    ];
    for (name, quota, obj, want) in cases {
        assert_eq!(scopes_match("", "pods", &quota, obj), want, "{name}");
    }
    // Scoped quotas select pods only.
    assert!(!scopes_match(
        "",
        "services",
        &q(json!({"scopes": ["BestEffort"]})),
        &json!({})
    ));
    assert!(scopes_match("", "services", &q(json!({})), &json!({})));
}

#[test]
fn pods_stop_charging_compute_when_terminal_or_past_their_grace_period() {
    let now: jiff::Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
    let pod = |meta: Value, phase: &str| json!({"metadata": meta, "status": {"phase": phase}});
    assert!(charges_pod_compute(&pod(json!({}), "Running"), now));
    assert!(!charges_pod_compute(&pod(json!({}), "Succeeded"), now));
    assert!(!charges_pod_compute(&pod(json!({}), "Failed"), now));
    // Being deleted: charged until deletionTimestamp + grace.
    let deleting = |grace: i64| json!({"deletionTimestamp": "2026-01-01T00:00:30Z", "deletionGracePeriodSeconds": grace});
    assert!(charges_pod_compute(&pod(deleting(30), "Running"), now));
    assert!(!charges_pod_compute(&pod(deleting(29), "Running"), now));
    // Without a grace period recorded, it stays charged until it is gone.
    assert!(charges_pod_compute(
        &pod(
            json!({"deletionTimestamp": "2020-01-01T00:00:00Z"}),
            "Running"
        ),
        now
    ));
    // `count/pods` is charged whatever the state.
    let done = pod(json!({}), "Succeeded");
    assert_eq!(usage("", "pods", &done), list(&[("count/pods", "1")]));
}

#[test]
fn masking_fills_zero() {
    let used = list(&[("pods", "2"), ("cpu", "1")]);
    let names = vec!["pods".to_string(), "services".to_string()];
    assert_eq!(
        mask_with_zero(&used, &names),
        list(&[("pods", "2"), ("services", "0")])
    );
}
