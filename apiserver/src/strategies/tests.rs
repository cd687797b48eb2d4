//! Table-driven checks of the per-kind defaults and validation, with cases taken as facts from
//! upstream's `defaults_test.go` and `validation_test.go` (inputs and expected outcomes).

use serde_json::{Value, json};

use super::for_resource;
use k1s_apimachinery::catalog;

/// Defaults `obj` as the strategy of `group/version/resource` does.
fn defaulted(group: &str, version: &str, resource: &str, mut obj: Value) -> Value {
    let info = catalog::find(group, version, resource).expect("in the catalog");
    for_resource(info).default(&mut obj);
    obj
}

/// Validation errors of `obj` after its defaults, as the server validates it.
fn errors(group: &str, version: &str, resource: &str, obj: &Value) -> Vec<String> {
    let info = catalog::find(group, version, resource).expect("in the catalog");
    let obj = defaulted(group, version, resource, obj.clone());
    for_resource(info)
        .validate(&obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Asserts that one of `got` (a case's errors) starts with `want`.
fn assert_reported(got: &[String], want: &str, case: &dyn std::fmt::Display) {
    assert!(
        got.iter().any(|e| e.starts_with(want)),
        "{case}: want {want:?}, got {got:?}"
    );
}

#[test]
fn job_defaults_follow_upstreams_cases() {
    // (spec given, expected fields)
    let cases = [
        (
            json!({}),
            json!({ "completions": 1, "parallelism": 1, "backoffLimit": 6 }),
        ),
        // A work-queue Job: parallelism alone leaves completions unset.
        (
            json!({ "parallelism": 5 }),
            json!({ "completions": null, "parallelism": 5 }),
        ),
        (
            json!({ "completions": 5 }),
            json!({ "completions": 5, "parallelism": 1 }),
        ),
        (
            json!({ "backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 2 }),
            json!({ "backoffLimit": 2147483647 }),
        ),
        (
            json!({ "podFailurePolicy": { "rules": [{ "action": "FailJob",
                "onPodConditions": [{ "type": "DisruptionTarget" }] }] } }),
            json!({ "podReplacementPolicy": "Failed" }),
        ),
        (
            json!({}),
            json!({ "podReplacementPolicy": "TerminatingOrFailed", "suspend": false,
            "completionMode": "NonIndexed", "manualSelector": false }),
        ),
    ];
    for (spec, want) in cases {
        let job = defaulted("batch", "v1", "jobs", json!({ "spec": spec.clone() }));
        for (k, v) in want.as_object().into_iter().flatten() {
            assert_eq!(
                job["spec"].get(k).unwrap_or(&Value::Null),
                v,
                "{spec} -> spec.{k}"
            );
        }
    }
    let job = defaulted(
        "batch",
        "v1",
        "jobs",
        json!({ "spec": { "podFailurePolicy": { "rules": [
        { "action": "Ignore", "onPodConditions": [{ "type": "DisruptionTarget" }] }] } } }),
    );
    assert_eq!(
        job.pointer("/spec/podFailurePolicy/rules/0/onPodConditions/0/status"),
        Some(&json!("True"))
    );
}

#[test]
fn service_defaults_follow_upstreams_cases() {
    let svc =
        |spec: Value| defaulted("", "v1", "services", json!({ "spec": spec }))["spec"].clone();
    let s = svc(json!({ "ports": [{ "port": 80 }] }));
    assert_eq!(s["type"], "ClusterIP");
    assert_eq!(s["sessionAffinity"], "None");
    assert_eq!(s["internalTrafficPolicy"], "Cluster");
    assert_eq!(s.get("externalTrafficPolicy"), None);
    assert_eq!(
        s["ports"][0],
        json!({ "port": 80, "protocol": "TCP", "targetPort": 80 })
    );
    let s =
        svc(json!({ "sessionAffinity": "ClientIP", "ports": [{ "port": 80, "targetPort": 0 }] }));
    assert_eq!(
        s["sessionAffinityConfig"],
        json!({ "clientIP": { "timeoutSeconds": 10800 } })
    );
    assert_eq!(s["ports"][0]["targetPort"], 80);
    let s = svc(json!({ "type": "NodePort" }));
    assert_eq!(s["externalTrafficPolicy"], "Cluster");
    let s = svc(json!({ "type": "ClusterIP", "externalIPs": ["1.2.3.4"] }));
    assert_eq!(s["externalTrafficPolicy"], "Cluster");
    let s = svc(json!({ "type": "LoadBalancer" }));
    assert_eq!(s["allocateLoadBalancerNodePorts"], true);
    let s = svc(json!({ "type": "ExternalName", "externalName": "example.com" }));
    assert_eq!(s.get("internalTrafficPolicy"), None);
    let s = svc(json!({ "sessionAffinity": "None", "sessionAffinityConfig": { "clientIP": {} } }));
    assert_eq!(s.get("sessionAffinityConfig"), None);
}

#[test]
fn pod_defaults_follow_upstreams_cases() {
    let pod = defaulted(
        "",
        "v1",
        "pods",
        json!({ "spec": {
        "hostNetwork": true,
        "containers": [{
            "name": "a", "image": "nginx:1.27",
            "ports": [{ "containerPort": 8080 }],
            "resources": { "limits": { "cpu": "1", "memory": "1Gi" }, "requests": { "cpu": "500m" } },
            "livenessProbe": { "httpGet": { "port": 8080 } },
            "env": [{ "name": "N", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } }],
        }, { "name": "b", "image": "busybox" }, { "name": "c", "image": "busybox@sha256:abc" }],
        "volumes": [{ "name": "v" }, { "name": "s", "secret": { "secretName": "x" } },
            { "name": "p", "projected": { "sources": [{ "serviceAccountToken": { "path": "t" } }] } },
            { "name": "h", "hostPath": { "path": "/x" } }],
    } }),
    );
    let s = &pod["spec"];
    let a = &s["containers"][0];
    assert_eq!(a["imagePullPolicy"], "IfNotPresent");
    assert_eq!(s["containers"][1]["imagePullPolicy"], "Always");
    assert_eq!(s["containers"][2]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        a["resources"]["requests"],
        json!({ "cpu": "500m", "memory": "1Gi" })
    );
    assert_eq!(
        a["ports"][0],
        json!({ "containerPort": 8080, "hostPort": 8080, "protocol": "TCP" })
    );
    assert_eq!(
        a["livenessProbe"],
        json!({ "httpGet": { "port": 8080, "path": "/", "scheme": "HTTP" }, "timeoutSeconds": 1,
            "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3 })
    );
    assert_eq!(a["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(a["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(s["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(s["volumes"][1]["secret"]["defaultMode"], 420);
    assert_eq!(s["volumes"][2]["projected"]["defaultMode"], 420);
    assert_eq!(
        s["volumes"][2]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
    assert_eq!(s["volumes"][3]["hostPath"]["type"], "");
    for (k, v) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
    ] {
        assert_eq!(s[k], v, "spec.{k}");
    }
    // Pod templates get the pod-spec defaults but not the Pod-only ones.
    let d = defaulted(
        "apps",
        "v1",
        "deployments",
        json!({ "spec": { "template": { "spec": {
        "containers": [{ "name": "a", "image": "x", "resources": { "limits": { "cpu": "1" } } }] } } } }),
    );
    let t = &d["spec"]["template"]["spec"];
    assert_eq!(t.get("enableServiceLinks"), None);
    assert_eq!(t["containers"][0]["resources"].get("requests"), None);
    assert_eq!(t["dnsPolicy"], "ClusterFirst");
}

#[test]
fn workload_and_other_defaults_follow_upstreams_cases() {
    // StatefulSet: an explicit RollingUpdate without rollingUpdate stays without it.
    let s = defaulted(
        "apps",
        "v1",
        "statefulsets",
        json!({ "spec": { "updateStrategy": { "type": "RollingUpdate" } } }),
    );
    assert_eq!(
        s["spec"]["updateStrategy"],
        json!({ "type": "RollingUpdate" })
    );
    let s = defaulted("apps", "v1", "statefulsets", json!({ "spec": {} }));
    assert_eq!(
        s["spec"]["updateStrategy"],
        json!({ "type": "RollingUpdate", "rollingUpdate": { "partition": 0 } })
    );
    assert_eq!(
        s["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({ "whenDeleted": "Retain", "whenScaled": "Retain" })
    );
    let d = defaulted(
        "apps",
        "v1",
        "daemonsets",
        json!({ "spec": { "updateStrategy": { "type": "OnDelete" } } }),
    );
    assert_eq!(d["spec"]["updateStrategy"], json!({ "type": "OnDelete" }));
    // ReplicationController: selector and labels from the template.
    let rc = defaulted(
        "",
        "v1",
        "replicationcontrollers",
        json!({ "metadata": {}, "spec": { "template": { "metadata": { "labels": { "a": "b" } } } } }),
    );
    assert_eq!(rc["spec"]["selector"], json!({ "a": "b" }));
    assert_eq!(rc["metadata"]["labels"], json!({ "a": "b" }));
    // NetworkPolicy: Egress joins Ingress when there are egress rules.
    let np = defaulted(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        json!({ "spec": { "egress": [{ "ports": [{ "port": 53 }] }] } }),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    // LimitRange: default from max, defaultRequest from default then min.
    let lr = defaulted(
        "",
        "v1",
        "limitranges",
        json!({ "spec": { "limits": [{ "type": "Container",
        "max": { "cpu": "2" }, "min": { "memory": "1Mi" } }] } }),
    );
    assert_eq!(lr["spec"]["limits"][0]["default"], json!({ "cpu": "2" }));
    assert_eq!(
        lr["spec"]["limits"][0]["defaultRequest"],
        json!({ "cpu": "2", "memory": "1Mi" })
    );
    // RBAC subjects.
    let rb = defaulted(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        json!({ "roleRef": { "kind": "Role", "name": "r" },
        "subjects": [{ "kind": "User", "name": "u" }, { "kind": "ServiceAccount", "name": "s", "namespace": "n" }] }),
    );
    assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][1]["apiGroup"], "");
    let pvc = defaulted("", "v1", "persistentvolumeclaims", json!({ "spec": {} }));
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    let pv = defaulted("", "v1", "persistentvolumes", json!({ "spec": {} }));
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    let cj = defaulted(
        "batch",
        "v1",
        "cronjobs",
        json!({ "spec": { "jobTemplate": { "spec": {} } } }),
    );
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(
        cj["spec"]["jobTemplate"]["spec"].get("completions"),
        None,
        "no Job defaults in a template"
    );
    let hpa = defaulted(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        json!({ "spec": {} }),
    );
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    let wh = defaulted(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        json!({ "webhooks": [{ "name": "w", "rules": [{}], "clientConfig": { "service": { "name": "s", "namespace": "n" } } }] }),
    );
    let w = &wh["webhooks"][0];
    assert_eq!(
        (
            w["failurePolicy"].as_str(),
            w["matchPolicy"].as_str(),
            w["timeoutSeconds"].as_i64()
        ),
        (Some("Fail"), Some("Equivalent"), Some(10))
    );
    assert_eq!(w["reinvocationPolicy"], "Never");
    assert_eq!(w["rules"][0]["scope"], "*");
    assert_eq!(w["clientConfig"]["service"]["port"], 443);
}

#[test]
fn job_backoff_limit_per_index_validation_as_upstream() {
    // (extra spec fields, expected errors) from upstream's TestValidateJob cases.
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({ "completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1,
                "maxFailedIndexes": 3 }),
            vec![],
        ),
        (
            json!({ "completionMode": "NonIndexed", "backoffLimitPerIndex": 1 }),
            vec!["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"],
        ),
        (
            json!({ "completionMode": "Indexed", "completions": 3, "maxFailedIndexes": 1 }),
            vec!["spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"],
        ),
        (
            json!({ "completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": -1 }),
            vec![
                "spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0",
            ],
        ),
        (
            json!({ "completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1,
                "maxFailedIndexes": 4 }),
            vec![
                "spec.maxFailedIndexes: Invalid value: 4: must be less than or equal to completions",
            ],
        ),
        (
            json!({ "completionMode": "Indexed", "completions": 100_001, "parallelism": 10_001,
                "backoffLimitPerIndex": 1 }),
            vec![
                "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
                "spec.parallelism: Invalid value: 10001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            ],
        ),
        (
            json!({ "completionMode": "Indexed", "completions": 100_001, "parallelism": 1,
                "backoffLimitPerIndex": 1, "maxFailedIndexes": 100_001 }),
            vec![
                "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
                "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
            ],
        ),
        (
            json!({ "completionMode": "Indexed", "completions": 3, "podReplacementPolicy": "Failed",
                "podFailurePolicy": { "rules": [{ "action": "FailIndex",
                "onExitCodes": { "operator": "In", "values": [1] } }] } }),
            vec![
                "spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
            ],
        ),
    ];
    for (extra, want) in cases {
        let mut spec = json!({ "manualSelector": true, "selector": { "matchLabels": { "a": "b" } },
            "template": { "metadata": { "labels": { "a": "b" } }, "spec": { "restartPolicy": "Never",
            "containers": [{ "name": "c", "image": "i" }] } } });
        for (k, v) in extra.as_object().into_iter().flatten() {
            spec[k] = v.clone();
        }
        let job = json!({ "metadata": { "name": "j", "uid": "u" }, "spec": spec });
        assert_eq!(errors("batch", "v1", "jobs", &job), want, "{extra}");
    }
}

#[test]
fn validation_reports_upstreams_field_errors() {
    let job = json!({ "metadata": { "name": "j", "uid": "u" }, "spec": { "manualSelector": true,
        "selector": { "matchLabels": { "a": "b" } },
        "template": { "metadata": { "labels": { "a": "b" } }, "spec": { "restartPolicy": "Always",
            "containers": [{ "name": "c", "image": "i" }] } } } });
    assert_eq!(
        errors("batch", "v1", "jobs", &job),
        [r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#]
    );
    let cm = json!({ "data": { "bad key": "x", "..x": "y" } });
    let errs = errors("", "v1", "configmaps", &cm);
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs.iter().any(|e| e.starts_with("data[bad key]: Invalid value: \"bad key\": a valid config key")), "{errs:?}");
    assert!(
        errs.iter().any(|e| e.contains("must not start with '..'")),
        "{errs:?}"
    );
    let pc = json!({ "metadata": { "name": "system-x" }, "value": 1 });
    assert_eq!(
        errors("scheduling.k8s.io", "v1", "priorityclasses", &pc),
        [
            "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only"
        ]
    );
    let pc = json!({ "metadata": { "name": "big" }, "value": 1_000_000_001 });
    assert_eq!(
        errors("scheduling.k8s.io", "v1", "priorityclasses", &pc),
        ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
    );
    let cj = json!({ "metadata": { "name": "c" }, "spec": { "schedule": "TZ=UTC 0 * * * *",
        "jobTemplate": { "spec": { "template": { "spec": { "restartPolicy": "Never",
            "containers": [{ "name": "c", "image": "i" }] } } } } } });
    let errs = errors("batch", "v1", "cronjobs", &cj);
    assert!(
        errs[0].starts_with("spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\""),
        "{errs:?}"
    );
}

#[test]
fn secrets_need_the_keys_of_their_type_as_upstream() {
    let secret = |ty: &str, data: Value| {
        let data: serde_json::Map<String, Value> = data
            .as_object()
            .expect("data is an object")
            .iter()
            .map(|(k, v)| {
                use base64::Engine as _;
                let raw = v.as_str().expect("string values");
                (
                    k.clone(),
                    json!(base64::engine::general_purpose::STANDARD.encode(raw)),
                )
            })
            .collect();
        json!({"metadata": {"name": "s", "namespace": "d"}, "type": ty, "data": data})
    };
    let check = |obj: &Value| errors("", "v1", "secrets", obj);
    assert!(check(&secret("Opaque", json!({"a": "1"}))).is_empty());
    assert_eq!(
        check(&secret("kubernetes.io/service-account-token", json!({}))),
        ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
    );
    let mut named = secret("kubernetes.io/service-account-token", json!({}));
    named["metadata"]["annotations"] = json!({"kubernetes.io/service-account.name": "builder"});
    assert!(check(&named).is_empty());
    assert_eq!(
        check(&secret("kubernetes.io/tls", json!({"tls.crt": "x"}))),
        ["data[tls.key]: Required value"]
    );
    assert_eq!(
        check(&secret("kubernetes.io/basic-auth", json!({}))),
        [
            "data[%s][username]: Required value",
            "data[%s][password]: Required value"
        ]
    );
    assert!(check(&secret("kubernetes.io/basic-auth", json!({"password": ""}))).is_empty());
    assert_eq!(
        check(&secret(
            "kubernetes.io/ssh-auth",
            json!({"ssh-privatekey": ""})
        )),
        ["data[%s][ssh-privatekey]: Required value"]
    );
    assert_eq!(
        check(&secret("kubernetes.io/dockerconfigjson", json!({}))),
        ["data[.dockerconfigjson]: Required value"]
    );
    for (content, message) in [
        ("", "unexpected end of JSON input"),
        ("{\"auths\":", "unexpected end of JSON input"),
        (
            "nope",
            "invalid character 'o' in literal null (expecting 'u')",
        ),
        ("x", "invalid character 'x' looking for beginning of value"),
        (
            "[1]",
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        ("{\"a\" 1}", "invalid character '1' after object key"),
        ("{} x", "invalid character 'x' after top-level value"),
    ] {
        assert_eq!(
            check(&secret(
                "kubernetes.io/dockerconfigjson",
                json!({".dockerconfigjson": content})
            )),
            [format!(
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": {message}"
            )],
            "{content:?}"
        );
    }
    assert!(
        check(&secret(
            "kubernetes.io/dockercfg",
            json!({".dockercfg": "{}"})
        ))
        .is_empty()
    );
    assert_eq!(
        check(&secret("Opaque", json!({"a b": "1"}))),
        [
            "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        ]
    );
    let big = "x".repeat(1024 * 1024 + 1);
    assert_eq!(
        check(&secret("Opaque", json!({"a": big}))),
        ["data: Too long: may not be more than 1048576 bytes"]
    );
}

#[test]
fn container_resources_are_validated_as_upstream() {
    // (resources of a Deployment's only container, expected errors); cases from upstream's
    // TestValidateResourceRequirements.
    let cases = [
        (
            json!({ "requests": { "cpu": "10", "memory": "10G" } }),
            vec![],
        ),
        (
            json!({ "requests": { "cpu": "10" }, "limits": { "cpu": "10", "memory": "1Gi" } }),
            vec![],
        ),
        (
            json!({ "requests": { "cpu": "11" }, "limits": { "cpu": "10" } }),
            vec![
                "spec.template.spec.containers[0].resources.requests: Invalid value: \"11\": must be less than or equal to cpu limit of 10",
            ],
        ),
        (
            json!({ "requests": { "memory": "-1" } }),
            vec![
                "spec.template.spec.containers[0].resources.requests[memory]: Invalid value: \"-1\": must be greater than or equal to 0",
            ],
        ),
        // Extended resources cannot be overcommitted.
        (
            json!({ "requests": { "example.com/a": "1" } }),
            vec![
                "spec.template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
            ],
        ),
        (
            json!({ "requests": { "example.com/a": "1" }, "limits": { "example.com/a": "2" } }),
            vec![
                "spec.template.spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/a limit of 2",
            ],
        ),
        (
            json!({ "requests": { "hugepages-2Mi": "2Mi", "memory": "1Gi" },
                    "limits": { "hugepages-2Mi": "2Mi", "memory": "1Gi" } }),
            vec![],
        ),
        (
            json!({ "requests": { "hugepages-2Mi": "2Mi" }, "limits": { "hugepages-2Mi": "2Mi" } }),
            vec![
                "spec.template.spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
            ],
        ),
    ];
    for (resources, expected) in cases {
        let deployment = json!({
            "spec": {
                "selector": { "matchLabels": { "a": "b" } },
                "template": {
                    "metadata": { "labels": { "a": "b" } },
                    "spec": { "containers": [{ "name": "c", "image": "i", "resources": resources }] },
                },
            },
        });
        assert_eq!(
            errors("apps", "v1", "deployments", &deployment),
            expected,
            "{resources}"
        );
    }
}

/// A defaulted Service of `spec`, as validation sees it after allocation (a cluster IP set).
fn service(spec: Value) -> Value {
    let mut svc = defaulted(
        "",
        "v1",
        "services",
        json!({ "metadata": { "name": "s" }, "spec": spec }),
    );
    let spec = &mut svc["spec"];
    if spec["type"] != "ExternalName" && spec.get("clusterIP").is_none() {
        spec["clusterIP"] = json!("10.96.0.10");
        spec["clusterIPs"] = json!(["10.96.0.10"]);
    }
    svc
}

#[test]
fn service_validation_follows_upstreams_cases() {
    let errs = |spec: Value| errors("", "v1", "services", &service(spec));
    // Valid: a plain ClusterIP Service, a headless one without ports, an ExternalName with a
    // trailing dot, named ports, a NodePort with its port.
    assert!(errs(json!({ "ports": [{ "port": 80 }] })).is_empty());
    assert!(errs(json!({ "clusterIP": "None", "clusterIPs": ["None"] })).is_empty());
    assert!(errs(json!({ "type": "ExternalName", "externalName": "db.example.com." })).is_empty());
    assert!(
        errs(
            json!({ "ports": [{ "name": "http", "port": 80, "targetPort": "web" },
                                 { "name": "https", "port": 443, "protocol": "UDP" }] })
        )
        .is_empty()
    );
    assert!(
        errs(json!({ "type": "NodePort", "ports": [{ "port": 80, "nodePort": 30080 }] }))
            .is_empty()
    );

    let cases: [(Value, &str); 18] = [
        (json!({}), "spec.ports: Required value"),
        (
            json!({ "ports": [{ "port": 80 }, { "port": 81 }] }),
            "spec.ports[0].name: Required value",
        ),
        (
            json!({ "ports": [{ "name": "a", "port": 80 }, { "name": "a", "port": 81 }] }),
            "spec.ports[1].name: Duplicate value: \"a\"",
        ),
        (
            json!({ "ports": [{ "port": 65536 }] }),
            "spec.ports[0].port: Invalid value: 65536: must be between 1 and 65535, inclusive",
        ),
        (
            json!({ "ports": [{ "port": 80, "protocol": "HTTP" }] }),
            "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        ),
        (
            json!({ "ports": [{ "port": 80, "targetPort": "Web_1" }] }),
            "spec.ports[0].targetPort: Invalid value: \"Web_1\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        ),
        (
            json!({ "ports": [{ "port": 80, "targetPort": "1234" }] }),
            "spec.ports[0].targetPort: Invalid value: \"1234\": must contain at least one letter (a-z)",
        ),
        (
            json!({ "ports": [{ "port": 80, "nodePort": 30080 }] }),
            "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        ),
        (
            json!({ "ports": [{ "name": "a", "port": 80 }, { "name": "b", "port": 80 }] }),
            "spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}",
        ),
        (
            json!({ "type": "ExternalName" }),
            "spec.externalName: Required value",
        ),
        (
            json!({ "type": "ExternalName", "externalName": "-bad-" }),
            "spec.externalName: Invalid value: \"-bad-\": a lowercase RFC 1123 subdomain",
        ),
        (
            json!({ "ports": [{ "port": 80 }], "externalIPs": ["127.0.0.1"] }),
            "spec.externalIPs[0]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ),
        (
            json!({ "ports": [{ "port": 80 }], "externalIPs": ["1.2.3"] }),
            "spec.externalIPs[0]: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ),
        (
            json!({ "ports": [{ "port": 80 }], "loadBalancerSourceRanges": ["10.0.0.0/8"] }),
            "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
        ),
        (
            json!({ "type": "LoadBalancer", "ports": [{ "port": 80, "nodePort": 30080 }],
                    "loadBalancerSourceRanges": ["10.0.0.1/8"] }),
            "spec.LoadBalancerSourceRanges[0]: Invalid value: \"10.0.0.1/8\": must not have bits set beyond the prefix length",
        ),
        (
            json!({ "sessionAffinity": "ClientIP", "ports": [{ "port": 80 }],
                    "sessionAffinityConfig": { "clientIP": { "timeoutSeconds": 86401 } } }),
            "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400",
        ),
        (
            json!({ "ports": [{ "port": 80 }], "externalTrafficPolicy": "Local" }),
            "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
        ),
        (
            json!({ "ports": [{ "port": 80 }], "selector": { "app": "a b" } }),
            "spec.selector: Invalid value: \"a b\": a valid label must be an empty string",
        ),
    ];
    for (spec, want) in cases {
        assert_reported(&errs(spec.clone()), want, &spec);
    }
}

#[test]
fn service_updates_keep_the_cluster_ip_and_drop_what_the_old_type_needed() {
    let info = catalog::find("", "v1", "services").expect("in the catalog");
    let strategy = for_resource(info);
    let old = service(
        json!({ "type": "LoadBalancer", "ports": [{ "port": 80, "nodePort": 30080 }],
                               "loadBalancerClass": "example.com/lb" }),
    );
    // Switching to ClusterIP drops the fields only a load balancer uses.
    let mut new = old.clone();
    new["spec"]["type"] = json!("ClusterIP");
    new["spec"]["ports"][0]
        .as_object_mut()
        .expect("port")
        .remove("nodePort");
    new["status"] = json!({ "loadBalancer": { "ingress": [{ "ip": "192.0.2.1" }] } });
    strategy.default(&mut new);
    strategy.prepare_for_update(&mut new, &old);
    for gone in [
        "allocateLoadBalancerNodePorts",
        "loadBalancerClass",
        "externalTrafficPolicy",
    ] {
        assert_eq!(new["spec"].get(gone), None, "{gone} stays: {new}");
    }
    assert_eq!(new["status"], json!({ "loadBalancer": {} }));
    assert!(
        strategy.validate_update(&new, &old).is_empty(),
        "{:?}",
        strategy.validate_update(&new, &old)
    );
    // The cluster IP cannot change.
    let mut moved = old.clone();
    moved["spec"]["clusterIP"] = json!("10.96.0.11");
    moved["spec"]["clusterIPs"] = json!(["10.96.0.11"]);
    let errs: Vec<String> = strategy
        .validate_update(&moved, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        ["spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.11\"}: may not change once set"]
    );
    // A status update checks the load balancer status only.
    let mut status = old.clone();
    status["status"] = json!({ "loadBalancer": { "ingress": [{ "hostname": "10.0.0.1" }] } });
    let errs: Vec<String> = strategy
        .validate_subresource_update("status", &status, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        [
            "status.loadBalancer.ingress[0].hostname: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address"
        ]
    );
}

#[test]
fn service_warnings_are_upstreams() {
    let info = catalog::find("", "v1", "services").expect("in the catalog");
    let strategy = for_resource(info);
    let mut svc = service(
        json!({ "clusterIP": "None", "clusterIPs": ["None"], "externalIPs": ["2001:db8::1"],
                                  "externalName": "x.example.com", "trafficDistribution": "PreferClose" }),
    );
    svc["metadata"]["annotations"] =
        json!({ "service.kubernetes.io/topology-aware-hints": "Auto" });
    assert_eq!(
        strategy.warnings_on_create(&svc),
        [
            "annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead",
            "spec.externalIPs is ignored for headless services",
            "spec.externalName is ignored when spec.type is not \"ExternalName\"",
            "spec.trafficDistribution: \"PreferClose\" is deprecated; use \"PreferSameZone\"",
        ]
    );
    let svc = service(json!({ "ports": [{ "port": 80 }], "externalIPs": ["2001:DB8::1"] }));
    assert_eq!(
        strategy.warnings_on_create(&svc),
        [
            "spec.externalIPs[0]: IPv6 address \"2001:DB8::1\" should be in RFC 5952 canonical format (\"2001:db8::1\")",
            "spec.externalIPs is deprecated and may no longer be implemented in some clusters",
        ]
    );
}

#[test]
fn pod_spec_validation_follows_upstreams_cases() {
    let pod = |spec: Value| {
        let mut p = json!({ "metadata": { "name": "p" },
            "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
        merge(&mut p["spec"], spec);
        errors("", "v1", "pods", &p)
    };
    fn merge(into: &mut Value, from: Value) {
        if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
            into.extend(from);
        }
    }
    assert!(pod(json!({})).is_empty());
    let ok = json!({ "volumes": [{ "name": "data" }, { "name": "cfg", "configMap": { "name": "c" } }],
        "containers": [{ "name": "c", "image": "nginx",
            "ports": [{ "name": "http", "containerPort": 80 }],
            "env": [{ "name": "A", "value": "1" },
                    { "name": "POD", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } }],
            "volumeMounts": [{ "name": "data", "mountPath": "/data" }, { "name": "cfg", "mountPath": "/etc/c" }],
            "livenessProbe": { "httpGet": { "port": "http" } } }],
        "initContainers": [{ "name": "side", "image": "busybox", "restartPolicy": "Always",
            "readinessProbe": { "exec": { "command": ["true"] } } }],
        "tolerations": [{ "operator": "Exists" }, { "key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 5 }] });
    assert_eq!(pod(ok), Vec::<String>::new());

    let cases: [(Value, &str); 20] = [
        (
            json!({ "containers": [{ "name": "Web", "image": "i" }] }),
            "spec.containers[0].name: Invalid value: \"Web\": a lowercase RFC 1123 label",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i" }], "initContainers": [{ "name": "c", "image": "i" }] }),
            "spec.initContainers[0].name: Duplicate value: \"c\"",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "ports": [{ "containerPort": 0 }] }] }),
            "spec.containers[0].ports[0].containerPort: Required value",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "ports": [{ "containerPort": 70000 }] }] }),
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "ports": [{ "name": "a", "containerPort": 1 }, { "name": "a", "containerPort": 2 }] }] }),
            "spec.containers[0].ports[1].name: Duplicate value: \"a\"",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "ports": [{ "containerPort": 80, "hostPort": 8080 }] },
                                { "name": "d", "image": "i", "ports": [{ "containerPort": 81, "hostPort": 8080 }] }] }),
            "spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\"",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "env": [{ "name": "A=B" }] }] }),
            "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "env": [{ "name": "A", "valueFrom": {} }] }] }),
            "spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "volumeMounts": [{ "name": "x", "mountPath": "/x" }] }] }),
            "spec.containers[0].volumeMounts[0].name: Not found: \"x\"",
        ),
        (
            json!({ "volumes": [{ "name": "a" }, { "name": "a" }] }),
            "spec.volumes[1].name: Duplicate value: \"a\"",
        ),
        (
            json!({ "volumes": [{ "name": "a", "emptyDir": {}, "secret": { "secretName": "s" } }] }),
            "spec.volumes[0].secret: Forbidden: may not specify more than 1 volume type",
        ),
        (
            json!({ "volumes": [{ "name": "a", "secret": {} }] }),
            "spec.volumes[0].secret.secretName: Required value",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "imagePullPolicy": "Sometimes" }] }),
            "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "livenessProbe": { "exec": { "command": ["x"] }, "successThreshold": 2 } }] }),
            "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        ),
        (
            json!({ "containers": [{ "name": "c", "image": "i", "readinessProbe": {} }] }),
            "spec.containers[0].readinessProbe: Required value: must specify a handler type",
        ),
        (
            json!({ "initContainers": [{ "name": "i", "image": "i", "livenessProbe": { "exec": { "command": ["x"] } } }] }),
            "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
        ),
        (
            json!({ "restartPolicy": "Sometimes" }),
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
        ),
        (
            json!({ "dnsPolicy": "None" }),
            "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
        ),
        (
            json!({ "tolerations": [{ "key": "k", "operator": "Exists", "value": "v" }] }),
            "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
        ),
        (
            json!({ "activeDeadlineSeconds": 0 }),
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
        ),
    ];
    for (spec, want) in cases {
        assert_reported(&pod(spec.clone()), want, &spec);
    }
}

#[test]
fn workload_spec_validation_follows_upstreams_cases() {
    let template = json!({ "metadata": { "labels": { "app": "a" } },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
    let workload = |resource: &str, spec: Value| {
        let mut obj = json!({ "metadata": { "name": "w" }, "spec": {
            "selector": { "matchLabels": { "app": "a" } }, "template": template.clone() } });
        if let (Some(into), Value::Object(from)) = (obj["spec"].as_object_mut(), spec) {
            into.extend(from);
        }
        errors("apps", "v1", resource, &obj)
    };
    for resource in ["deployments", "replicasets", "statefulsets", "daemonsets"] {
        assert_eq!(
            workload(resource, json!({})),
            Vec::<String>::new(),
            "{resource}"
        );
    }
    // A StatefulSet's pod spec is not validated upstream: mounts may name claim templates.
    let mounted = json!({ "metadata": { "labels": { "app": "a" } }, "spec": { "containers": [{
        "name": "c", "image": "nginx", "volumeMounts": [{ "name": "data", "mountPath": "/d" }] }] } });
    assert_eq!(
        workload(
            "statefulsets",
            json!({ "template": mounted.clone(),
            "volumeClaimTemplates": [{ "metadata": { "name": "data" } }] })
        ),
        Vec::<String>::new()
    );
    let cases: [(&str, Value, &str); 10] = [
        (
            "deployments",
            json!({ "strategy": { "rollingUpdate": { "maxUnavailable": 0, "maxSurge": 0 } } }),
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0",
        ),
        (
            "deployments",
            json!({ "strategy": { "rollingUpdate": { "maxUnavailable": "150%" } } }),
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
        ),
        (
            "deployments",
            json!({ "strategy": { "type": "Recreate", "rollingUpdate": {} } }),
            "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
        ),
        (
            "deployments",
            json!({ "minReadySeconds": 700 }),
            "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds",
        ),
        (
            "deployments",
            json!({ "replicas": -1 }),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            "replicasets",
            json!({ "template": { "metadata": { "labels": { "app": "a" } },
            "spec": { "restartPolicy": "Never", "containers": [{ "name": "c", "image": "i" }] } } }),
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        ),
        (
            "daemonsets",
            json!({ "updateStrategy": { "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": 1, "maxSurge": 1 } } }),
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}: may not be set when maxUnavailable is non-zero",
        ),
        (
            "statefulsets",
            json!({ "podManagementPolicy": "Random" }),
            "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
        ),
        (
            "statefulsets",
            json!({ "ordinals": { "start": -1 } }),
            "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            "statefulsets",
            json!({ "selector": { "matchLabels": {} } }),
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for statefulset",
        ),
    ];
    for (resource, spec, want) in cases {
        assert_reported(
            &workload(resource, spec.clone()),
            want,
            &format!("{resource} {spec}"),
        );
    }
}

#[test]
fn replication_controllers_and_pod_templates_are_validated_as_upstream() {
    let rc = |spec: Value| {
        errors(
            "",
            "v1",
            "replicationcontrollers",
            &json!({ "metadata": { "name": "r" }, "spec": spec }),
        )
    };
    let template = json!({ "metadata": { "labels": { "app": "a" } },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
    assert_eq!(
        rc(json!({ "template": template.clone() })),
        Vec::<String>::new()
    );
    let errs = rc(json!({ "selector": { "app": "b" }, "template": template.clone() }));
    assert_eq!(
        errs,
        [
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"a\"}: `selector` does not match template `labels`"
        ]
    );
    let mut deadline = template.clone();
    deadline["spec"]["activeDeadlineSeconds"] = json!(5);
    assert_eq!(
        rc(json!({ "template": deadline })),
        [
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"
        ]
    );
    assert_eq!(
        rc(json!({})),
        [
            "spec.selector: Required value",
            "spec.template: Required value"
        ]
    );
    let pt = json!({ "metadata": { "name": "t" }, "template": { "spec": { "containers": [{ "name": "C", "image": "i" }] } } });
    let errs = errors("", "v1", "podtemplates", &pt);
    assert!(
        errs[0].starts_with("template.spec.containers[0].name: Invalid value: \"C\""),
        "{errs:?}"
    );
}

#[test]
fn persistent_volume_claims_are_validated_as_upstream() {
    let info = catalog::find("", "v1", "persistentvolumeclaims").expect("in the catalog");
    let strategy = for_resource(info);
    let pvc = |spec: Value| json!({ "metadata": { "name": "c" }, "spec": spec });
    let ok = pvc(
        json!({ "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } }),
    );
    assert_eq!(
        errors("", "v1", "persistentvolumeclaims", &ok),
        Vec::<String>::new()
    );
    assert_eq!(
        errors("", "v1", "persistentvolumeclaims", &pvc(json!({}))),
        [
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value"
        ]
    );
    let errs = errors(
        "",
        "v1",
        "persistentvolumeclaims",
        &pvc(json!({
        "accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "resources": { "requests": { "storage": "0" } } })),
    );
    assert_eq!(
        errs,
        [
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
        ]
    );
    // Unbound: the volume name may be set once; the size may not change.
    let old = defaulted("", "v1", "persistentvolumeclaims", ok.clone());
    let mut named = old.clone();
    named["spec"]["volumeName"] = json!("pv-1");
    assert!(strategy.validate_update(&named, &old).is_empty());
    let mut bigger = old.clone();
    bigger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    let errs: Vec<String> = strategy
        .validate_update(&bigger, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        [
            "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
        ]
    );
    // Bound: the size may grow.
    let mut bound = named.clone();
    bound["status"] = json!({ "phase": "Bound", "capacity": { "storage": "1Gi" } });
    let mut grown = bound.clone();
    grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert!(strategy.validate_update(&grown, &bound).is_empty());
    let mut shrunk = bound.clone();
    shrunk["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
    let errs: Vec<String> = strategy
        .validate_update(&shrunk, &bound)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
    );
}

#[test]
fn horizontal_pod_autoscalers_are_validated_as_upstream() {
    let hpa = |spec: Value| {
        errors(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            &json!({ "metadata": { "name": "h" }, "spec": spec }),
        )
    };
    let target = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" });
    assert!(hpa(json!({ "scaleTargetRef": target.clone(), "maxReplicas": 3 })).is_empty());
    assert_eq!(
        hpa(json!({ "scaleTargetRef": target.clone(), "minReplicas": 0, "maxReplicas": 3 })),
        [
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
        ]
    );
    assert_eq!(
        hpa(json!({ "scaleTargetRef": target, "minReplicas": 5, "maxReplicas": 3 })),
        ["spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"]
    );
    assert_eq!(
        hpa(json!({ "scaleTargetRef": { "kind": "Deployment" }, "maxReplicas": 0 })),
        [
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
            "spec.scaleTargetRef.name: Required value",
        ]
    );
}

#[test]
fn service_cluster_ips_are_validated_and_kept_in_step_as_upstream() {
    let info = catalog::find("", "v1", "services").expect("in the catalog");
    let strategy = for_resource(info);
    let errs = |spec: Value| errors("", "v1", "services", &service(spec));
    assert_eq!(
        errs(
            json!({ "ports": [{ "port": 80 }], "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.11"] })
        ),
        [
            "spec.clusterIPs: Invalid value: []string{\"10.96.0.11\"}: first value must match `clusterIP`"
        ]
    );
    assert_eq!(
        errs(
            json!({ "ports": [{ "port": 80 }], "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv6"] })
        ),
        [
            "spec.clusterIPs[0]: Invalid value: \"10.96.0.10\": expected an IPv6 value as indicated by `ipFamilies[0]`"
        ]
    );
    assert_eq!(
        errs(
            json!({ "type": "NodePort", "ports": [{ "port": 80 }], "clusterIP": "None", "clusterIPs": ["None"] })
        ),
        [
            "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"
        ]
    );
    // An update that sends only `clusterIP` keeps `clusterIPs`.
    let old = service(json!({ "ports": [{ "port": 80 }] }));
    let mut new = old.clone();
    new["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("clusterIPs");
    strategy.prepare_for_update(&mut new, &old);
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    assert!(strategy.validate_update(&new, &old).is_empty());
    // A headless Service cannot get an address later.
    let old = service(json!({ "clusterIP": "None", "clusterIPs": ["None"] }));
    let mut new = old.clone();
    new["spec"]["clusterIP"] = json!("10.96.0.12");
    strategy.prepare_for_update(&mut new, &old);
    let errs: Vec<String> = strategy
        .validate_update(&new, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        [
            "spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.12\"}: may not change once set",
            "spec.ports: Required value",
        ]
    );
}

#[test]
fn limit_ranges_are_validated_as_upstream() {
    let lr = |limits: Value| {
        errors(
            "",
            "v1",
            "limitranges",
            &json!({ "metadata": { "name": "l" }, "spec": { "limits": limits } }),
        )
    };
    assert!(
        lr(json!([{ "type": "Container", "min": { "cpu": "100m" }, "max": { "cpu": "1" } }]))
            .is_empty()
    );
    assert_eq!(
        lr(json!([{ "type": "Container", "min": { "cpu": "2" }, "max": { "cpu": "1" } }])),
        [
            "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
            "spec.limits[0].defaultRequest[cpu]: Invalid value: \"1\": min value 2 is greater than default request value 1",
            "spec.limits[0].default[cpu]: Invalid value: \"2\": min value 2 is greater than default value 1",
        ]
    );
    assert_eq!(
        lr(json!([{ "type": "Pod", "default": { "cpu": "1" } }])),
        ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]
    );
    assert_eq!(
        lr(json!([{ "type": "PersistentVolumeClaim" }, { "type": "Node" }])),
        [
            "spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
            "spec.limits[1].type: Invalid value: \"Node\": must be a standard limit type or fully qualified",
        ]
    );
    assert_eq!(
        lr(
            json!([{ "type": "Container", "min": { "cpu": "1" }, "max": { "cpu": "2" }, "maxLimitRequestRatio": { "cpu": "3" } }])
        ),
        [
            "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: \"3\": ratio 3 is greater than max/min = 2.000000"
        ]
    );
}

#[test]
fn pod_affinity_and_topology_spread_are_validated_as_upstream() {
    let pod = |spec: Value| {
        let mut p = json!({ "metadata": { "name": "p" },
            "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
        if let (Some(into), Value::Object(from)) = (p["spec"].as_object_mut(), spec) {
            into.extend(from);
        }
        errors("", "v1", "pods", &p)
    };
    let ok = json!({
        "affinity": {
            "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                { "matchExpressions": [{ "key": "zone", "operator": "In", "values": ["a"] }] }] } },
            "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{ "weight": 50,
                "podAffinityTerm": { "labelSelector": { "matchLabels": { "app": "x" } }, "topologyKey": "kubernetes.io/hostname" } }] } },
        "topologySpreadConstraints": [{ "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": { "matchLabels": { "app": "x" } } }] });
    assert_eq!(pod(ok), Vec::<String>::new());
    let cases: [(Value, &str); 6] = [
        (
            json!({ "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [] } } } }),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term",
        ),
        (
            json!({ "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                { "matchExpressions": [{ "key": "zone", "operator": "Exists", "values": ["a"] }] }] } } } }),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            json!({ "affinity": { "podAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{ "weight": 0,
                "podAffinityTerm": { "topologyKey": "zone" } }] } } }),
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
        ),
        (
            json!({ "affinity": { "podAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [{ "labelSelector": {} }] } } }),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        ),
        (
            json!({ "topologySpreadConstraints": [{ "maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule" }] }),
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        ),
        (
            json!({ "topologySpreadConstraints": [{ "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes" }] }),
            "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
        ),
    ];
    for (spec, want) in cases {
        assert_reported(&pod(spec.clone()), want, &spec);
    }
}

#[test]
fn webhook_configurations_are_validated_as_upstream() {
    let check = |hook: Value| {
        errors(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            &json!({ "metadata": { "name": "c" }, "webhooks": [hook] }),
        )
    };
    let good = json!({ "name": "check.example.com", "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "clientConfig": { "service": { "name": "s", "namespace": "n", "path": "/validate" } },
        "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["pods", "pods/status"] }] });
    assert_eq!(check(good.clone()), Vec::<String>::new());
    let with = |patch: Value| {
        let mut hook = good.clone();
        for (k, v) in patch.as_object().expect("an object") {
            hook[k] = v.clone();
        }
        check(hook)
    };
    // (changes to the good webhook, upstream's messages)
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({ "name": "check" }),
            vec![
                "webhooks[0].name: Invalid value: \"check\": should be a domain with at least three segments separated by dots",
            ],
        ),
        (
            json!({ "sideEffects": null }),
            vec!["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"],
        ),
        (
            json!({ "sideEffects": "Some" }),
            vec![
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            ],
        ),
        (
            json!({ "admissionReviewVersions": [] }),
            vec![
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            ],
        ),
        (
            json!({ "admissionReviewVersions": ["v2"] }),
            vec![
                "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
            ],
        ),
        (
            json!({ "timeoutSeconds": 31 }),
            vec![
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            ],
        ),
        (
            json!({ "clientConfig": { "url": "http://h/x?a=b" } }),
            vec![
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "webhooks[0].clientConfig.url: Invalid value: \"a=b\": query parameters are not permitted in the URL",
            ],
        ),
        (
            json!({ "clientConfig": {} }),
            vec![
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            ],
        ),
        (
            json!({ "clientConfig": { "service": { "namespace": "n", "path": "x//" } } }),
            vec![
                // Upstream swaps name and namespace in this check (kubernetes#141353).
                "webhooks[0].clientConfig.service.namespace: Required value",
                "webhooks[0].clientConfig.service.path: Invalid value: \"x//\": must start with a '/'",
                "webhooks[0].clientConfig.service.path: Invalid value: \"x//\": segment[0] may not be empty",
                "webhooks[0].clientConfig.service.path: Invalid value: \"x//\": segment[1] may not be empty",
            ],
        ),
        (
            json!({ "rules": [{ "operations": ["*", "CREATE"], "apiGroups": ["*", "apps"],
                "apiVersions": ["v1"], "resources": ["*", "pods"], "scope": "Everywhere" }] }),
            vec![
                "webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
                "webhooks[0].rules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups",
                "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"pods\"}: if '*' is present, must not specify other resources without subresources",
                "webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            ],
        ),
        (
            json!({ "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods/*", "pods/status"] }] }),
            vec![
                "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/status\": if 'pods/*' is present, must not specify pods/status",
            ],
        ),
    ];
    for (patch, want) in cases {
        assert_eq!(with(patch.clone()), want, "{patch}");
    }
    // Two webhooks of one name.
    let twice = errors(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        &json!({ "metadata": { "name": "c" }, "webhooks": [good.clone(), good.clone()] }),
    );
    assert_eq!(
        twice,
        vec!["webhooks[1].name: Duplicate value: \"check.example.com\""]
    );
}

#[test]
fn security_contexts_are_validated_as_upstream() {
    let pod = |spec: Value| {
        let mut p = json!({ "metadata": { "name": "p" },
            "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
        if let (Some(into), Value::Object(from)) = (p["spec"].as_object_mut(), spec) {
            into.extend(from);
        }
        errors("", "v1", "pods", &p)
    };
    let ctr =
        |sc: Value| json!({ "containers": [{ "name": "c", "image": "i", "securityContext": sc }] });
    let ok = json!({
        "securityContext": { "runAsUser": 1000, "runAsGroup": 0, "fsGroup": 2000, "supplementalGroups": [3000],
            "fsGroupChangePolicy": "OnRootMismatch", "supplementalGroupsPolicy": "Strict",
            "seccompProfile": { "type": "Localhost", "localhostProfile": "profiles/audit.json" },
            "appArmorProfile": { "type": "RuntimeDefault" },
            "sysctls": [{ "name": "net.ipv4.ip_local_port_range", "value": "1024 65535" }, { "name": "kernel/shm_rmid_forced", "value": "1" }] },
        "os": { "name": "linux" },
        "containers": [{ "name": "c", "image": "i", "securityContext": { "runAsUser": 0, "privileged": true,
            "allowPrivilegeEscalation": true, "capabilities": { "add": ["NET_ADMIN"] }, "procMount": "Default",
            "readOnlyRootFilesystem": true, "seccompProfile": { "type": "RuntimeDefault" },
            "appArmorProfile": { "type": "Localhost", "localhostProfile": "k8s-apparmor" } } }] });
    assert_eq!(pod(ok), Vec::<String>::new());
    let windows_ok = json!({ "os": { "name": "windows" }, "hostNetwork": true,
        "securityContext": { "windowsOptions": { "runAsUserName": "NT AUTHORITY\\Local service", "hostProcess": true,
            "gmsaCredentialSpecName": "webapp" } },
        "containers": [{ "name": "c", "image": "i", "securityContext": { "windowsOptions": { "runAsUserName": "ContainerUser" } } }] });
    assert_eq!(pod(windows_ok), Vec::<String>::new());

    let cases: Vec<(Value, &str)> = vec![
        (
            ctr(json!({ "runAsUser": -1 })),
            "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        ),
        (
            ctr(json!({ "runAsGroup": 2147483648_i64 })),
            "spec.containers[0].securityContext.runAsGroup: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive",
        ),
        (
            json!({ "securityContext": { "fsGroup": -2 } }),
            "spec.securityContext.fsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive",
        ),
        (
            json!({ "securityContext": { "supplementalGroups": [1, -1] } }),
            "spec.securityContext.supplementalGroups[1]: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        ),
        (
            json!({ "initContainers": [{ "name": "i", "image": "i", "securityContext": { "runAsUser": -3 } }] }),
            "spec.initContainers[0].securityContext.runAsUser: Invalid value: -3",
        ),
        (
            ctr(json!({ "allowPrivilegeEscalation": false, "privileged": true })),
            "spec.containers[0].securityContext: Invalid value: core.SecurityContext{Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0x",
        ),
        (
            json!({ "ephemeralContainers": [{ "name": "e", "image": "i", "securityContext": { "runAsGroup": -1 } }] }),
            "spec.ephemeralContainers[0].securityContext.runAsGroup: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        ),
        (
            ctr(
                json!({ "allowPrivilegeEscalation": false, "capabilities": { "add": ["CAP_SYS_ADMIN"] } }),
            ),
            "spec.containers[0].securityContext: Invalid value: core.SecurityContext{Capabilities:(*core.Capabilities)(0x",
        ),
        (
            ctr(json!({ "procMount": "Weird" })),
            "spec.containers[0].securityContext.procMount: Unsupported value: \"Weird\": supported values: \"Default\", \"Unmasked\"",
        ),
        (
            ctr(json!({ "procMount": "Unmasked" })),
            "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
        ),
        (
            ctr(json!({ "seccompProfile": {} })),
            "spec.containers[0].securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set",
        ),
        (
            json!({ "securityContext": { "seccompProfile": { "type": "Docker" } } }),
            "spec.securityContext.seccompProfile.type: Unsupported value: \"Docker\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
        ),
        (
            json!({ "securityContext": { "seccompProfile": { "type": "Localhost" } } }),
            "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
        ),
        (
            json!({ "securityContext": { "seccompProfile": { "type": "Localhost", "localhostProfile": "../x" } } }),
            "spec.securityContext.seccompProfile.localhostProfile: Invalid value: \"../x\": must not contain '..'",
        ),
        (
            json!({ "securityContext": { "seccompProfile": { "type": "RuntimeDefault", "localhostProfile": "x" } } }),
            "spec.securityContext.seccompProfile.localhostProfile: Invalid value: core.SeccompProfile{Type:\"RuntimeDefault\", LocalhostProfile:(*string)(0x",
        ),
        (
            json!({ "securityContext": { "appArmorProfile": {} } }),
            "spec.securityContext.appArmorProfile.type: Required value: type is required when appArmorProfile is set",
        ),
        (
            ctr(json!({ "appArmorProfile": { "type": "Localhost" } })),
            "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost",
        ),
        (
            ctr(json!({ "appArmorProfile": { "type": "Localhost", "localhostProfile": " p " } })),
            "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: \" p \": must not be padded with whitespace",
        ),
        (
            ctr(json!({ "appArmorProfile": { "type": "Unconfined", "localhostProfile": "p" } })),
            "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: \"p\": can only be set when AppArmor type is Localhost",
        ),
        (
            json!({ "securityContext": { "appArmorProfile": { "type": "Other" } } }),
            "spec.securityContext.appArmorProfile.type: Unsupported value: \"Other\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
        ),
        (
            json!({ "securityContext": { "sysctls": [{ "name": "" }] } }),
            "spec.securityContext.sysctls[0].name: Required value",
        ),
        (
            json!({ "securityContext": { "sysctls": [{ "name": "Net.Foo" }] } }),
            "spec.securityContext.sysctls[0].name: Invalid value: \"Net.Foo\": must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
        ),
        (
            json!({ "securityContext": { "sysctls": [{ "name": "kernel.msgmax" }, { "name": "kernel.msgmax" }] } }),
            "spec.securityContext.sysctls[1].name: Duplicate value: \"kernel.msgmax\"",
        ),
        (
            json!({ "hostNetwork": true, "securityContext": { "sysctls": [{ "name": "net/ipv4/ip_forward" }] } }),
            "spec.securityContext.sysctls[0].name: Invalid value: \"net/ipv4/ip_forward\": may not be specified when 'hostNetwork' is true",
        ),
        (
            json!({ "hostIPC": true, "securityContext": { "sysctls": [{ "name": "kernel.shmmax" }] } }),
            "spec.securityContext.sysctls[0].name: Invalid value: \"kernel.shmmax\": may not be specified when 'hostIPC' is true",
        ),
        (
            json!({ "securityContext": { "fsGroupChangePolicy": "Sometimes" } }),
            "spec.securityContext.fsGroupChangePolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnRootMismatch\"",
        ),
        (
            json!({ "securityContext": { "supplementalGroupsPolicy": "Union" } }),
            "spec.securityContext.supplementalGroupsPolicy: Unsupported value: \"Union\": supported values: \"Merge\", \"Strict\"",
        ),
        (
            json!({ "securityContext": { "seLinuxChangePolicy": "MountOption" } }),
            "spec.securityContext.seLinuxChangePolicy: Unsupported value: \"MountOption\": supported values: \"Recursive\"",
        ),
        (
            json!({ "shareProcessNamespace": true, "hostPID": true }),
            "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
        ),
        (
            json!({ "hostUsers": false, "hostNetwork": true }),
            "spec.hostNetwork: Forbidden: when `hostUsers` is false",
        ),
        (
            json!({ "hostUsers": false, "hostPID": true }),
            "spec.HostPID: Forbidden: when `hostUsers` is false",
        ),
        (
            json!({ "hostUsers": false, "hostIPC": true }),
            "spec.HostIPC: Forbidden: when `hostUsers` is false",
        ),
        (
            ctr(json!({ "windowsOptions": { "gmsaCredentialSpecName": "Bad_Name" } })),
            "spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpecName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain",
        ),
        (
            ctr(json!({ "windowsOptions": { "gmsaCredentialSpec": "" } })),
            "spec.containers[0].securityContext.windowsOptions.gmsaCredentialSpec: Invalid value: \"\": gmsaCredentialSpec cannot be an empty string",
        ),
        (
            ctr(json!({ "windowsOptions": { "runAsUserName": "" } })),
            "spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: \"\": runAsUserName cannot be an empty string",
        ),
        (
            ctr(json!({ "windowsOptions": { "runAsUserName": "a\\b\\c" } })),
            "spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: \"a\\\\b\\\\c\": runAsUserName cannot contain more than one backslash",
        ),
        (
            ctr(json!({ "windowsOptions": { "runAsUserName": "a\tb" } })),
            "spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: \"a\\tb\": runAsUserName cannot contain control characters",
        ),
        (
            json!({ "securityContext": { "windowsOptions": { "runAsUserName": "dom\\" } } }),
            "spec.securityContext.windowsOptions.runAsUserName: Invalid value: \"dom\\\\\": runAsUserName's User cannot be empty",
        ),
        (
            json!({ "securityContext": { "windowsOptions": { "runAsUserName": "..." } } }),
            "spec.securityContext.windowsOptions.runAsUserName: Invalid value: \"...\": runAsUserName's User cannot contain only periods or spaces",
        ),
        (
            json!({ "securityContext": { "windowsOptions": { "runAsUserName": "us@r" } } }),
            "spec.securityContext.windowsOptions.runAsUserName: Invalid value: \"us@r\": runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]",
        ),
        (
            json!({ "securityContext": { "windowsOptions": { "runAsUserName": ".dom?ain\\user" } } }),
            "spec.securityContext.windowsOptions.runAsUserName: Invalid value: \".dom?ain\\\\user\": runAsUserName's Domain doesn't match the NetBios nor the DNS format",
        ),
        (
            json!({ "securityContext": { "windowsOptions": { "runAsUserName": "u".repeat(105) } } }),
            "spec.securityContext.windowsOptions.runAsUserName: Invalid value: \"uuuu",
        ),
        (
            json!({ "securityContext": { "windowsOptions": { "hostProcess": true } },
                "containers": [{ "name": "c", "image": "i", "securityContext": { "windowsOptions": { "hostProcess": false } } }] }),
            "spec.containers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true",
        ),
        (
            json!({ "hostNetwork": true, "containers": [{ "name": "c", "image": "i", "securityContext": { "windowsOptions": { "hostProcess": true } } },
                { "name": "d", "image": "i" }] }),
            "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
        ),
        (
            json!({ "securityContext": { "windowsOptions": { "hostProcess": true } } }),
            "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
        ),
        (
            json!({ "os": { "name": "" } }),
            "spec.os.name: Required value: cannot be empty",
        ),
        (
            json!({ "os": { "name": "plan9" } }),
            "spec.os: Unsupported value: \"plan9\": supported values: \"linux\", \"windows\"",
        ),
        (
            json!({ "os": { "name": "linux" }, "securityContext": { "windowsOptions": {} } }),
            "spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
        ),
        (
            json!({ "os": { "name": "linux" }, "containers": [{ "name": "c", "image": "i", "securityContext": { "windowsOptions": {} } }] }),
            "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
        ),
        (
            json!({ "os": { "name": "windows" }, "securityContext": { "runAsUser": 1 } }),
            "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
        ),
        (
            json!({ "os": { "name": "windows" }, "hostPID": true }),
            "spec.hostPID: Forbidden: cannot be set for a windows pod",
        ),
        (
            json!({ "os": { "name": "windows" }, "shareProcessNamespace": false }),
            "spec.shareProcessNamespace: Forbidden: cannot be set for a windows pod",
        ),
        (
            json!({ "os": { "name": "windows" }, "securityContext": { "sysctls": [{ "name": "a" }] } }),
            "spec.securityContext.sysctls: Forbidden: cannot be set for a windows pod",
        ),
        (
            json!({ "os": { "name": "windows" }, "initContainers": [{ "name": "i", "image": "i", "securityContext": { "privileged": false } }] }),
            "spec.initContainers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
        ),
        // Wrong JSON types are the decoder's business, never a panic here.
        (
            json!({ "securityContext": { "runAsUser": "root", "sysctls": [{ "name": 5 }], "seccompProfile": { "type": 1 } } }),
            "spec.securityContext.sysctls[0].name: Required value",
        ),
    ];
    for (spec, want) in cases {
        assert_reported(&pod(spec.clone()), want, &spec);
    }

    // A template gets the same checks under its own path.
    let deployment = json!({ "metadata": { "name": "d" }, "spec": { "selector": { "matchLabels": { "app": "a" } },
        "template": { "metadata": { "labels": { "app": "a" } }, "spec": { "containers": [{ "name": "c", "image": "i",
            "securityContext": { "runAsUser": -1 } }] } } } });
    assert_reported(
        &errors("apps", "v1", "deployments", &deployment),
        "spec.template.spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        &"deployment",
    );
}

/// A Pod through the create path (defaults, prepare_for_create, validate): the stored object
/// and its errors.
fn created_pod(labels: Value, spec: Value) -> (Value, Vec<String>) {
    created_pod_with(json!({ "name": "p", "labels": labels }), spec)
}

/// `created_pod` with the given metadata.
fn created_pod_with(metadata: Value, spec: Value) -> (Value, Vec<String>) {
    let info = catalog::find("", "v1", "pods").expect("in the catalog");
    let strategy = for_resource(info);
    let mut pod = json!({ "metadata": metadata,
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
    if let (Some(into), Value::Object(from)) = (pod["spec"].as_object_mut(), spec) {
        into.extend(from);
    }
    strategy.default(&mut pod);
    strategy.prepare_for_create(&mut pod);
    let errs = strategy
        .validate(&pod)
        .iter()
        .map(ToString::to_string)
        .collect();
    (pod, errs)
}

#[test]
fn pod_affinity_match_label_keys_are_merged_on_create_as_upstream() {
    let labels = json!({ "app": "web", "tier": "fe" });
    let spec = json!({ "affinity": {
        "podAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": { "matchLabels": { "x": "y" } }, "topologyKey": "zone",
            "matchLabelKeys": ["app", "absent"], "mismatchLabelKeys": ["tier"] }] },
        "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [{ "weight": 10,
            "podAffinityTerm": { "labelSelector": {}, "topologyKey": "zone", "matchLabelKeys": ["app"] } }] } } });
    let (pod, errs) = created_pod(labels.clone(), spec);
    assert_eq!(errs, Vec::<String>::new());
    let affinity = &pod["spec"]["affinity"];
    assert_eq!(
        affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"],
        json!({ "matchLabels": { "x": "y" }, "matchExpressions": [
            { "key": "app", "operator": "In", "values": ["web"] },
            { "key": "tier", "operator": "NotIn", "values": ["fe"] }] })
    );
    assert_eq!(
        affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
            ["labelSelector"],
        json!({ "matchExpressions": [{ "key": "app", "operator": "In", "values": ["web"] }] })
    );
    // The keys stay, as upstream keeps them.
    assert_eq!(
        affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["matchLabelKeys"],
        json!(["app", "absent"])
    );

    // Without a labelSelector nothing is merged, and the keys are refused.
    let spec = json!({ "affinity": { "podAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "zone", "matchLabelKeys": ["app"] }] } } });
    let (pod, errs) = created_pod(labels.clone(), spec);
    assert_eq!(
        pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
            .get("labelSelector"),
        None
    );
    assert_eq!(
        errs,
        [
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"
        ]
    );

    // A key the selector already names: the merged requirement repeats it. Upstream reports it
    // at the term's own path indexed by the key's position in matchLabelKeys.
    for selector in [
        json!({ "matchLabels": { "app": "web" } }),
        json!({ "matchExpressions": [{ "key": "app", "operator": "Exists" }] }),
    ] {
        let spec = json!({ "affinity": { "podAntiAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": selector, "topologyKey": "zone", "matchLabelKeys": ["tier", "app"] }] } } });
        let (_, errs) = created_pod(labels.clone(), spec);
        assert_eq!(
            errs,
            [
                "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][1]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"
            ],
            "{selector}"
        );
    }
    // Without the label nothing is merged, so nothing repeats.
    let spec = json!({ "affinity": { "podAntiAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": { "matchLabels": { "app": "web" } }, "topologyKey": "zone", "matchLabelKeys": ["app"] }] } } });
    assert_eq!(created_pod(json!({}), spec).1, Vec::<String>::new());

    // Templates are not merged: only Pods are, on create.
    let info = catalog::find("apps", "v1", "deployments").expect("in the catalog");
    let term = json!({ "labelSelector": {}, "topologyKey": "zone", "matchLabelKeys": ["app"] });
    let mut deployment = json!({ "metadata": { "name": "d" }, "spec": {
        "selector": { "matchLabels": { "app": "web" } },
        "template": { "metadata": { "labels": { "app": "web" } }, "spec": {
            "containers": [{ "name": "c", "image": "nginx" }],
            "affinity": { "podAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [term.clone()] } } } } } });
    for_resource(info).default(&mut deployment);
    for_resource(info).prepare_for_create(&mut deployment);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            [0],
        term
    );
    assert_eq!(for_resource(info).validate(&deployment), Vec::new());
}

#[test]
fn match_label_keys_and_dns_searches_are_validated_as_upstream() {
    let required = |term: Value| json!({ "affinity": { "podAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [term] } } });
    let spread = |c: Value| {
        let mut base =
            json!({ "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule" });
        if let (Some(into), Value::Object(from)) = (base.as_object_mut(), c) {
            into.extend(from);
        }
        json!({ "topologySpreadConstraints": [base] })
    };
    let term = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
    let cases: Vec<(Value, String)> = vec![
        (
            required(json!({ "labelSelector": {}, "topologyKey": "zone", "matchLabelKeys": ["bad key"] })),
            format!("{term}.matchLabelKeys[0]: Invalid value: \"bad key\": name part must consist of"),
        ),
        (
            required(json!({ "topologyKey": "zone", "mismatchLabelKeys": ["app"] })),
            format!("{term}.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
        ),
        (
            required(json!({ "labelSelector": {}, "topologyKey": "zone", "mismatchLabelKeys": ["a/b/c"] })),
            format!("{term}.mismatchLabelKeys[0]: Invalid value: \"a/b/c\": a qualified name must consist of"),
        ),
        (
            required(json!({ "labelSelector": {}, "topologyKey": "zone",
                "matchLabelKeys": ["other", "app"], "mismatchLabelKeys": ["app"] })),
            format!("{term}.matchLabelKeys[1]: Invalid value: \"app\": exists in both matchLabelKeys and mismatchLabelKeys"),
        ),
        // Selectors are checked field by field, as ValidateLabelSelector does.
        (
            required(json!({ "labelSelector": { "matchExpressions": [{ "key": "k", "operator": "In" }] }, "topologyKey": "zone" })),
            format!("{term}.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ),
        (
            json!({ "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                { "matchFields": [{ "key": "metadata.name", "operator": "In", "values": ["Node_1"] }] }] } } } }),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[0]: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain".to_string(),
        ),
        (
            spread(json!({ "matchLabelKeys": ["app"] })),
            "spec.topologySpreadConstraints[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set".to_string(),
        ),
        (
            spread(json!({ "labelSelector": { "matchLabels": { "app": "web" } }, "matchLabelKeys": ["app"] })),
            "spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector".to_string(),
        ),
        (
            spread(json!({ "labelSelector": { "matchExpressions": [{ "key": "app", "operator": "Exists" }] }, "matchLabelKeys": ["app"] })),
            "spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector".to_string(),
        ),
        (
            spread(json!({ "labelSelector": {}, "matchLabelKeys": ["-x"] })),
            "spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: \"-x\": name part must consist of".to_string(),
        ),
        (
            json!({ "dnsConfig": { "searches": ["ok_1.example.com", "a_.example.com"] } }),
            "spec.dnsConfig.searches[1]: Invalid value: \"a_.example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')".to_string(),
        ),
        (
            json!({ "dnsConfig": { "searches": ["__a.com."] } }),
            "spec.dnsConfig.searches[0]: Invalid value: \"__a.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_'".to_string(),
        ),
        (
            json!({ "dnsConfig": { "searches": vec![format!("{}.com", "a".repeat(60)); 32] } }),
            "spec.dnsConfig.searches: Invalid value: []string{\"aaaa".to_string(),
        ),
    ];
    for (spec, want) in &cases {
        let (_, errs) = created_pod(json!({ "app": "web" }), spec.clone());
        assert_reported(&errs, want, spec);
    }
    // Accepted: a leading underscore label, the root, a topology key of any syntax in a spread
    // constraint (upstream checks only its presence), keys the selector does not name.
    let ok = [
        json!({ "dnsConfig": { "searches": ["_sip._tcp.example.com", ".", "example.com."] } }),
        spread(
            json!({ "topologyKey": "Not a label!", "labelSelector": { "matchLabels": { "a": "b" } },
            "matchLabelKeys": ["app"] }),
        ),
        required(
            json!({ "labelSelector": { "matchLabels": { "a": "b" } }, "topologyKey": "zone",
            "matchLabelKeys": ["app"], "mismatchLabelKeys": ["other"] }),
        ),
    ];
    for spec in ok {
        assert_eq!(
            created_pod(json!({ "app": "web" }), spec.clone()).1,
            Vec::<String>::new(),
            "{spec}"
        );
    }
}

#[test]
fn app_armor_fields_and_annotations_are_synced_on_create_as_upstream_1_33() {
    let info = catalog::find("", "v1", "pods").expect("in the catalog");
    let key = |c: &str| format!("container.apparmor.security.beta.kubernetes.io/{c}");
    // Fields to annotations: a container's own profile, or else the pod's.
    let spec = json!({ "securityContext": { "appArmorProfile": { "type": "Localhost", "localhostProfile": "p" } },
        "initContainers": [{ "name": "i", "image": "busybox" }],
        "containers": [{ "name": "c", "image": "nginx", "securityContext": { "appArmorProfile": { "type": "Unconfined" } } },
                       { "name": "d", "image": "nginx" }] });
    let (pod, errs) = created_pod_with(json!({ "name": "p" }), spec);
    assert_eq!(errs, Vec::<String>::new());
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(annotations[key("c")], "unconfined");
    assert_eq!(annotations[key("d")], "localhost/p");
    assert_eq!(annotations[key("i")], "localhost/p");
    assert_eq!(
        for_resource(info).warnings_on_create(&pod),
        Vec::<String>::new()
    );

    // Annotations to fields, unless the pod's profile says the same already.
    let spec = json!({ "securityContext": { "appArmorProfile": { "type": "RuntimeDefault" } },
        "containers": [{ "name": "c", "image": "nginx" }, { "name": "d", "image": "nginx" }] });
    let meta = json!({ "name": "p", "annotations": { key("c"): "localhost/prof", key("d"): "runtime/default" } });
    let (pod, errs) = created_pod_with(meta, spec);
    assert_eq!(errs, Vec::<String>::new());
    assert_eq!(
        pod["spec"]["containers"][0]["securityContext"]["appArmorProfile"],
        json!({ "type": "Localhost", "localhostProfile": "prof" })
    );
    assert_eq!(pod["spec"]["containers"][1].get("securityContext"), None);

    // A Windows pod is left alone.
    let spec =
        json!({ "os": { "name": "windows" }, "containers": [{ "name": "c", "image": "nginx" }] });
    let meta = json!({ "name": "p", "annotations": { key("c"): "localhost/prof" } });
    let (pod, _) = created_pod_with(meta, spec);
    assert_eq!(pod["spec"]["containers"][0].get("securityContext"), None);

    // An annotation naming no valid profile stays, with upstream's deprecation warning.
    let meta = json!({ "name": "p", "annotations": { key("c"): "localhost/ padded" } });
    let (pod, errs) = created_pod_with(meta, json!({}));
    assert_eq!(errs, Vec::<String>::new());
    assert_eq!(pod["spec"]["containers"][0].get("securityContext"), None);
    assert_eq!(
        for_resource(info).warnings_on_create(&pod),
        [format!(
            "metadata.annotations[{}]: deprecated since v1.30; use the \"appArmorProfile\" field instead",
            key("c")
        )]
    );
}

#[test]
fn pod_specific_annotations_are_validated_as_upstream() {
    let key = |c: &str| format!("container.apparmor.security.beta.kubernetes.io/{c}");
    let with = |annotations: Value, spec: Value| {
        created_pod_with(json!({ "name": "p", "annotations": annotations }), spec).1
    };
    let cases: Vec<(Value, Value, String)> = vec![
        (
            json!({ key("nope"): "runtime/default" }),
            json!({}),
            format!("metadata.annotations[{}]: Invalid value: \"nope\": container not found", key("nope")),
        ),
        (
            json!({ key("c"): "foo" }),
            json!({}),
            format!("metadata.annotations[{}]: Invalid value: \"foo\": invalid AppArmor profile name: \"foo\"", key("c")),
        ),
        (
            json!({ key("c"): "unconfined" }),
            json!({ "containers": [{ "name": "c", "image": "i", "securityContext": { "appArmorProfile": { "type": "RuntimeDefault" } } }] }),
            "spec.containers[0].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match".to_string(),
        ),
        (
            json!({ key("c"): "localhost/b" }),
            json!({ "containers": [{ "name": "c", "image": "i",
                "securityContext": { "appArmorProfile": { "type": "Localhost", "localhostProfile": "a" } } }] }),
            "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Forbidden: apparmor profile in annotation and field must match".to_string(),
        ),
        (
            json!({ "seccomp.security.alpha.kubernetes.io/pod": "foo" }),
            json!({}),
            "metadata.annotations.seccomp.security.alpha.kubernetes.io/pod: Invalid value: \"foo\": must be a valid seccomp profile".to_string(),
        ),
        (
            json!({ "container.seccomp.security.alpha.kubernetes.io/c": "localhost/../x" }),
            json!({}),
            "metadata.annotations.container.seccomp.security.alpha.kubernetes.io/c: Invalid value: \"../x\": must not contain '..'".to_string(),
        ),
        (
            json!({ "seccomp.security.alpha.kubernetes.io/pod": "unconfined" }),
            json!({ "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } } }),
            "spec.securityContext.seccompProfile.type: Forbidden: seccomp type in annotation and field must match".to_string(),
        ),
        (
            json!({ "container.seccomp.security.alpha.kubernetes.io/c": "localhost/a" }),
            json!({ "containers": [{ "name": "c", "image": "i", "securityContext": { "seccompProfile": { "type": "Localhost", "localhostProfile": "b" } } }] }),
            "spec.containers[0].securityContext.seccompProfile.localhostProfile: Forbidden: seccomp profile in annotation and field must match".to_string(),
        ),
        (
            json!({ "kubernetes.io/config.mirror": "x" }),
            json!({}),
            "metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"x\": must set spec.nodeName if mirror pod annotation is set".to_string(),
        ),
        (
            json!({ "scheduler.alpha.kubernetes.io/tolerations": "[{\"key\":\"k\",\"operator\":\"Exists\",\"value\":\"v\"}]" }),
            json!({}),
            "metadata.annotations.scheduler.alpha.kubernetes.io/tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'".to_string(),
        ),
        (
            json!({ "scheduler.alpha.kubernetes.io/tolerations": "{}" }),
            json!({}),
            "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/tolerations\": json: cannot unmarshal object into Go value of type []core.Toleration".to_string(),
        ),
        (
            json!({}),
            json!({ "nodeName": "n", "schedulingGates": [{ "name": "g" }] }),
            "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared".to_string(),
        ),
    ];
    for (annotations, spec, want) in &cases {
        assert_reported(&with(annotations.clone(), spec.clone()), want, annotations);
    }
    for cost in ["+5", "007", "abc", "3000000000", "", "-"] {
        assert_eq!(
            with(
                json!({ "controller.kubernetes.io/pod-deletion-cost": cost }),
                json!({})
            ),
            [format!(
                "metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"{cost}\": must be a 32bit integer"
            )]
        );
    }
    let ok = [
        (
            json!({ "controller.kubernetes.io/pod-deletion-cost": "-5" }),
            json!({}),
        ),
        (
            json!({ "controller.kubernetes.io/pod-deletion-cost": "0" }),
            json!({}),
        ),
        (
            json!({ "seccomp.security.alpha.kubernetes.io/pod": "docker/default" }),
            json!({ "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } } }),
        ),
        (
            json!({ "kubernetes.io/config.mirror": "x" }),
            json!({ "nodeName": "n" }),
        ),
        (json!({ key("c"): "" }), json!({})),
    ];
    for (annotations, spec) in ok {
        assert_eq!(
            with(annotations.clone(), spec),
            Vec::<String>::new(),
            "{annotations}"
        );
    }
}

#[test]
fn pod_annotation_updates_follow_upstreams_rules() {
    let info = catalog::find("", "v1", "pods").expect("in the catalog");
    let key = "container.apparmor.security.beta.kubernetes.io/c";
    let (old, errs) = created_pod_with(
        json!({ "name": "p", "annotations": { key: "runtime/default", "controller.kubernetes.io/pod-deletion-cost": "1" } }),
        json!({}),
    );
    assert_eq!(errs, Vec::<String>::new());
    let update = |change: &dyn Fn(&mut Value)| {
        let mut new = old.clone();
        change(&mut new);
        for_resource(info)
            .validate_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(update(&|_| {}), Vec::<String>::new());
    assert_eq!(
        update(&|p| p["metadata"]["annotations"][key] = json!("unconfined")),
        [format!(
            "metadata.annotations[{key}]: Forbidden: may not remove or update AppArmor annotations"
        )]
    );
    assert_eq!(
        update(
            &|p| p["metadata"]["annotations"]["container.apparmor.security.beta.kubernetes.io/d"] =
                json!("unconfined")
        ),
        [
            "metadata.annotations[container.apparmor.security.beta.kubernetes.io/d]: Invalid value: \"d\": container not found",
            "metadata.annotations[container.apparmor.security.beta.kubernetes.io/d]: Forbidden: may not add AppArmor annotations",
            "metadata.annotations[container.apparmor.security.beta.kubernetes.io/d]: Invalid value: \"d\": container not found",
        ]
    );
    assert_eq!(
        update(&|p| p["metadata"]["annotations"]["kubernetes.io/config.mirror"] = json!("x")),
        [
            "metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"x\": must set spec.nodeName if mirror pod annotation is set",
            "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation",
            "metadata.annotations[kubernetes.io/config.mirror]: Invalid value: \"x\": must set spec.nodeName if mirror pod annotation is set",
        ]
    );
    // A deletion cost may not become invalid, but one that already was may stay.
    let bad_cost = |p: &mut Value| {
        p["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"] = json!("x")
    };
    assert_eq!(update(&bad_cost).len(), 2);
    let mut old_bad = old.clone();
    bad_cost(&mut old_bad);
    assert_eq!(
        for_resource(info).validate_update(&old_bad, &old_bad),
        Vec::new()
    );
}

#[test]
fn pod_status_updates_are_validated_as_upstream() {
    let info = catalog::find("", "v1", "pods").expect("in the catalog");
    let strategy = for_resource(info);
    let pod = |restart: &str| {
        let (mut p, errs) = created_pod(
            json!({}),
            json!({ "restartPolicy": restart,
            "containers": [{ "name": "c", "image": "nginx", "resources": { "requests": { "cpu": "1" } } }] }),
        );
        assert_eq!(errs, Vec::<String>::new());
        p["spec"]["nodeName"] = json!("n1");
        p["status"]["containerStatuses"] =
            json!([{ "name": "c", "state": { "terminated": { "exitCode": 0 } } }]);
        p
    };
    // The registry keeps the old spec and metadata; the strategy then prepares and validates.
    let status_update = |old: &Value, status: Value| {
        let mut new = old.clone();
        if let (Some(into), Value::Object(from)) = (new["status"].as_object_mut(), status) {
            into.extend(from);
        }
        strategy.prepare_for_update(&mut new, old);
        strategy
            .validate_subresource_update("status", &new, old)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    let old = pod("Never");
    let good = json!({ "hostIP": "10.0.0.1", "hostIPs": [{ "ip": "10.0.0.1" }],
        "podIP": "10.244.0.5", "podIPs": [{ "ip": "10.244.0.5" }, { "ip": "fd00::5" }],
        "conditions": [{ "type": "Ready", "status": "False" }, { "type": "example.com/gate", "status": "True" }],
        "containerStatuses": [{ "name": "c", "state": { "terminated": { "exitCode": 0 } },
            "user": { "linux": { "uid": 1000, "gid": 1000 } },
            "allocatedResourcesStatus": [{ "name": "cpu", "resources": [{ "resourceID": "a", "health": "Healthy" }] }] }] });
    assert_eq!(status_update(&old, good), Vec::<String>::new());
    // A status without a QoS class keeps the stored one.
    let mut dropped = old.clone();
    dropped["status"]
        .as_object_mut()
        .map(|s| s.remove("qosClass"));
    let mut new = dropped.clone();
    strategy.prepare_for_update(&mut new, &old);
    assert_eq!(new["status"]["qosClass"], old["status"]["qosClass"]);

    let cases: Vec<(Value, &str)> = vec![
        (
            json!({ "conditions": [{ "type": "bad type!", "status": "True" }] }),
            "metadata.conditions[0].Type: Invalid value: \"bad type!\": name part must consist of",
        ),
        (
            json!({ "qosClass": "Guaranteed" }),
            "status.qosClass: Invalid value: \"Guaranteed\": field is immutable",
        ),
        (
            json!({ "containerStatuses": [{ "name": "c", "state": { "running": {} } }] }),
            "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
        ),
        (
            json!({ "podIPs": [{ "ip": "10.0.0.1" }, { "ip": "10.0.0.2" }] }),
            "status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:\"10.0.0.1\"}, core.PodIP{IP:\"10.0.0.2\"}}: may specify no more than one IP for each IP family",
        ),
        (
            json!({ "podIPs": [{ "ip": "10.0.0.1" }, { "ip": "10.0.0.1" }] }),
            "status.podIPs[1]: Duplicate value: core.PodIP{IP:\"10.0.0.1\"}",
        ),
        (
            json!({ "podIPs": [{ "ip": "ten" }] }),
            "status.podIPs[0]: Invalid value: \"ten\": must be a valid IP address",
        ),
        (
            json!({ "hostIP": "10.0.0.1", "hostIPs": [{ "ip": "10.0.0.9" }] }),
            "status.hostIPs[0].ip: Invalid value: \"10.0.0.9\": must be equal to `hostIP`",
        ),
        (
            json!({ "nominatedNodeName": "Bad_Node" }),
            "status.nominatedNodeName: Invalid value: \"Bad_Node\": a lowercase RFC 1123 subdomain",
        ),
        (
            json!({ "containerStatuses": [{ "name": "c", "state": { "terminated": { "exitCode": 0 } },
                "user": { "linux": { "uid": -1, "gid": 0 } } }] }),
            "status.containerStatuses[0].linux.uid: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        ),
        (
            json!({ "containerStatuses": [{ "name": "c", "state": { "terminated": { "exitCode": 0 } },
                "allocatedResourcesStatus": [{ "name": "example.com/gpu", "resources": [{ "resourceID": "g", "health": "Fine" }] }] }] }),
            "status.containerStatuses[0].allocatedResourcesStatus[0].name: Invalid value: \"example.com/gpu\": must match one of the container's resource requests",
        ),
        (
            json!({ "containerStatuses": [{ "name": "c", "state": { "terminated": { "exitCode": 0 } },
                "allocatedResourcesStatus": [{ "name": "cpu", "resources": [{ "resourceID": "g", "health": "Fine" }] }] }] }),
            "status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].health: Unsupported value: \"Fine\": supported values: \"Healthy\", \"Unhealthy\", \"Unknown\"",
        ),
        (
            json!({ "resourceClaimStatuses": [{ "name": "gpu" }] }),
            "status.resourceClaimStatuses[0].name: Invalid value: \"gpu\": must match the name of an entry in `spec.resourceClaims`",
        ),
    ];
    for (status, want) in &cases {
        assert_reported(&status_update(&old, status.clone()), want, status);
    }
    // Terminated containers may restart under restartPolicy Always, and failed ones under
    // OnFailure.
    let running = json!({ "containerStatuses": [{ "name": "c", "state": { "running": {} } }] });
    assert_eq!(
        status_update(&pod("Always"), running.clone()),
        Vec::<String>::new()
    );
    let mut failed = pod("OnFailure");
    failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = json!(1);
    assert_eq!(status_update(&failed, running), Vec::<String>::new());
}

#[test]
fn volume_sources_and_downward_api_are_validated_as_upstream() {
    let vol = |source: Value| json!({ "volumes": [source] });
    let env = |e: Value| json!({ "containers": [{ "name": "c", "image": "i", "env": [e] }] });
    let claim = json!({ "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } } });
    let cases: Vec<(Value, &str)> = vec![
        (
            vol(json!({ "name": "v", "hostPath": { "path": "/x", "type": "Bad" } })),
            "spec.volumes[0].hostPath.type: Unsupported value: \"Bad\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"",
        ),
        (
            vol(json!({ "name": "v", "emptyDir": { "sizeLimit": "-1Gi" } })),
            "spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
        ),
        (
            vol(json!({ "name": "v", "emptyDir": {}, "downwardAPI": {} })),
            "spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type",
        ),
        (
            vol(json!({ "name": "v", "gcePersistentDisk": {} })),
            "spec.volumes[0].persistentDisk.pdName: Required value",
        ),
        (
            vol(json!({ "name": "v", "nfs": { "server": "s", "path": "rel" } })),
            "spec.volumes[0].nfs.path: Invalid value: \"rel\": must be an absolute path",
        ),
        (
            vol(
                json!({ "name": "v", "iscsi": { "targetPortal": "10.0.0.1:3260", "iqn": "iqn.bad", "lun": 0 } }),
            ),
            "spec.volumes[0].iscsi.iqn: Invalid value: \"iqn.bad\": must be valid format",
        ),
        (
            vol(
                json!({ "name": "v", "downwardAPI": { "items": [{ "path": "x", "fieldRef": { "apiVersion": "v1", "fieldPath": "spec.nodeName" } }] } }),
            ),
            "spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
        ),
        (
            vol(json!({ "name": "v", "downwardAPI": { "items": [{ "path": "x" }] } })),
            "spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
        ),
        (
            vol(
                json!({ "name": "v", "downwardAPI": { "items": [{ "path": "x", "resourceFieldRef": { "resource": "limits.cpu" } }] } }),
            ),
            "spec.volumes[0].downwardAPI.resourceFieldRef.containerName: Required value",
        ),
        (
            vol(json!({ "name": "v", "projected": { "sources": [
                { "configMap": { "name": "a", "items": [{ "key": "k", "path": "p" }] } },
                { "configMap": { "name": "b", "items": [{ "key": "k", "path": "p" }] } }] } })),
            "spec.volumes[0].projected: Invalid value: \"b\": conflicting duplicate paths",
        ),
        (
            vol(
                json!({ "name": "v", "projected": { "sources": [{ "serviceAccountToken": { "path": "t", "expirationSeconds": 60 } }] } }),
            ),
            "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
        ),
        (
            vol(
                json!({ "name": "v", "projected": { "sources": [{ "secret": { "name": "s" }, "configMap": { "name": "c" } }] } }),
            ),
            "spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
        ),
        (
            vol(json!({ "name": "v", "csi": { "driver": "Bad_Driver" } })),
            "spec.volumes[0].csi.driver: Invalid value: \"Bad_Driver\": a lowercase RFC 1123 subdomain",
        ),
        (
            vol(json!({ "name": "v", "ephemeral": {} })),
            "spec.volumes[0].ephemeral.volumeClaimTemplate: Required value",
        ),
        (
            vol(
                json!({ "name": "v", "ephemeral": { "volumeClaimTemplate": { "metadata": { "name": "x" }, "spec": {} } } }),
            ),
            "spec.volumes[0].ephemeral.volumeClaimTemplate.metadata.name: Forbidden: cannot be set",
        ),
        (
            vol(json!({ "name": "v", "ephemeral": { "volumeClaimTemplate": { "spec": {} } } })),
            "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: Required value: at least 1 access mode is required",
        ),
        (
            vol(json!({ "name": "v", "azureDisk": { "diskName": "d", "diskURI": "x" } })),
            "spec.volumes[0].azureDisk.diskURI: Unsupported value: \"x\": supported values: \"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd\"",
        ),
        (
            vol(
                json!({ "name": "v", "flexVolume": { "driver": "d", "options": { "kubernetes.io/x": "y" } } }),
            ),
            "spec.volumes[0].flexVolume.options[kubernetes.io/x]: Invalid value: \"kubernetes.io/x\": kubernetes.io and k8s.io namespaces are reserved",
        ),
        (
            env(
                json!({ "name": "E", "valueFrom": { "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.labels" } } }),
            ),
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"metadata.labels\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
        ),
        (
            env(
                json!({ "name": "E", "valueFrom": { "fieldRef": { "apiVersion": "v1", "fieldPath": "status.foo" } } }),
            ),
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: \"status.foo\": error converting fieldPath: field label not supported: status.foo",
        ),
        (
            env(
                json!({ "name": "E", "valueFrom": { "resourceFieldRef": { "resource": "limits.cpu", "divisor": "2" } } }),
            ),
            "spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource",
        ),
        (
            env(
                json!({ "name": "E", "valueFrom": { "configMapKeyRef": { "name": "cm", "key": "bad key" } } }),
            ),
            "spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters",
        ),
        (
            json!({ "volumes": [{ "name": "v" }], "containers": [{ "name": "c", "image": "i",
                "volumeMounts": [{ "name": "v", "mountPath": "/v", "mountPropagation": "Bidirectional" }] }] }),
            "spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
        ),
        (
            json!({ "volumes": [{ "name": "v" }], "containers": [{ "name": "c", "image": "i",
                "volumeMounts": [{ "name": "v", "mountPath": "/v", "recursiveReadOnly": "Enabled" }] }] }),
            "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
        ),
        // Pod-only rules.
        (
            json!({ "volumes": [{ "name": "v", "projected": { "sources": [{ "serviceAccountToken": { "path": "t" } }] } }] }),
            "spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set",
        ),
        (
            json!({ "volumes": [{ "name": "v", "ephemeral": { "volumeClaimTemplate": claim.clone() } },
                                { "name": "w", "persistentVolumeClaim": { "claimName": "p-v" } }] }),
            "spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: \"p-v\": must not reference a PVC that gets created for an ephemeral volume",
        ),
    ];
    for (spec, want) in &cases {
        assert_reported(&created_pod(json!({}), spec.clone()).1, want, spec);
    }
    // One error for a `..` step, not a second for the leading `..`.
    let (_, errs) = created_pod(
        json!({}),
        vol(
            json!({ "name": "v", "secret": { "secretName": "s", "items": [{ "key": "k", "path": "../x" }] } }),
        ),
    );
    assert_eq!(
        errs,
        ["spec.volumes[0].secret.items[0].path: Invalid value: \"../x\": must not contain '..'"]
    );
    let ok = [
        vol(
            json!({ "name": "v", "iscsi": { "targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "lun": 0 } }),
        ),
        vol(json!({ "name": "v", "ephemeral": { "volumeClaimTemplate": claim } })),
        vol(
            json!({ "name": "v", "downwardAPI": { "items": [{ "path": "labels", "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.labels" } },
            { "path": "cpu", "resourceFieldRef": { "containerName": "c", "resource": "limits.cpu", "divisor": "1m" } }] } }),
        ),
        env(
            json!({ "name": "E", "valueFrom": { "fieldRef": { "apiVersion": "v1", "fieldPath": "metadata.labels['app']" } } }),
        ),
        json!({ "serviceAccountName": "sa", "volumes": [{ "name": "v", "projected": { "sources": [{ "serviceAccountToken": { "path": "t" } }] } }] }),
    ];
    for spec in ok {
        assert_eq!(
            created_pod(json!({}), spec.clone()).1,
            Vec::<String>::new(),
            "{spec}"
        );
    }
}

#[test]
fn pod_level_resources_are_dropped_as_upstream_1_33_does_with_the_gate_off() {
    let info = catalog::find("", "v1", "pods").expect("in the catalog");
    let (pod, errs) = created_pod(
        json!({}),
        json!({ "resources": { "limits": { "cpu": "1" } } }),
    );
    assert_eq!(errs, Vec::<String>::new());
    assert_eq!(pod["spec"].get("resources"), None);
    // An update cannot add them either; a stored pod that had them keeps them.
    let mut new = pod.clone();
    new["spec"]["resources"] = json!({ "limits": { "cpu": "1" } });
    for_resource(info).prepare_for_update(&mut new, &pod);
    assert_eq!(new["spec"].get("resources"), None);
    let mut had = pod.clone();
    had["spec"]["resources"] = json!({ "limits": { "cpu": "1" } });
    let mut new = had.clone();
    for_resource(info).prepare_for_update(&mut new, &had);
    assert_eq!(new["spec"]["resources"], had["spec"]["resources"]);
}

#[test]
fn pod_template_annotations_follow_the_pod_rules() {
    // Upstream's ValidatePodTemplateSpec runs ValidatePodSpecificAnnotations at
    // `<template>.annotations`.
    let template = json!({
        "metadata": { "labels": { "app": "a" }, "annotations": {
            "controller.kubernetes.io/pod-deletion-cost": "x",
            "container.apparmor.security.beta.kubernetes.io/missing": "runtime/default" } },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] } });
    let deployment = json!({ "metadata": { "name": "d" },
        "spec": { "selector": { "matchLabels": { "app": "a" } }, "template": template } });
    let errs = errors("apps", "v1", "deployments", &deployment);
    assert_reported(
        &errs,
        "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"x\": must be a 32bit integer",
        &"deletion cost",
    );
    assert_reported(
        &errs,
        "spec.template.annotations[container.apparmor.security.beta.kubernetes.io/missing]: Invalid value: \"missing\": container not found",
        &"apparmor",
    );
}

/// A Deployment whose pod template has `spec` (fields merged over one container).
fn deployment_with(metadata: Value, spec: Value) -> Value {
    let mut pod = json!({ "containers": [{ "name": "c", "image": "nginx" }] });
    if let (Some(into), Value::Object(from)) = (pod.as_object_mut(), spec) {
        into.extend(from);
    }
    let mut meta = json!({ "labels": { "app": "a" } });
    if let (Some(into), Value::Object(from)) = (meta.as_object_mut(), metadata) {
        into.extend(from);
    }
    defaulted(
        "apps",
        "v1",
        "deployments",
        json!({ "metadata": { "name": "d" }, "spec": {
            "selector": { "matchLabels": { "app": "a" } },
            "template": { "metadata": meta, "spec": pod } } }),
    )
}

/// Errors of updating the Deployment `old` to `new`.
fn update_errors(resource: (&str, &str), new: &Value, old: &Value) -> Vec<String> {
    let info = catalog::find(resource.0, "v1", resource.1).expect("in the catalog");
    for_resource(info)
        .validate_update(new, old)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn pod_template_updates_keep_what_the_stored_template_already_had_as_upstream() {
    let deployments = ("apps", "deployments");
    // (template metadata, template spec, an error it gives on create)
    let cases = [
        (
            json!({}),
            json!({ "hostNetwork": true, "securityContext": { "sysctls": [
                { "name": "net.core.somaxconn", "value": "1024" }] } }),
            "spec.template.spec.securityContext.sysctls[0].name: Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true",
        ),
        (
            json!({}),
            json!({ "hostIPC": true, "securityContext": { "sysctls": [
                { "name": "kernel.shmmax", "value": "1" }] } }),
            "spec.template.spec.securityContext.sysctls[0].name: Invalid value: \"kernel.shmmax\": may not be specified when 'hostIPC' is true",
        ),
        (
            json!({}),
            json!({ "securityContext": { "seLinuxChangePolicy": "MountOption" } }),
            "spec.template.spec.securityContext.seLinuxChangePolicy: Unsupported value: \"MountOption\": supported values: \"Recursive\"",
        ),
        (
            json!({}),
            json!({ "volumes": [{ "name": "t", "projected": { "sources": [
                { "serviceAccountToken": { "path": "../token" } }] } }] }),
            "spec.template.spec.volumes[0].projected.path: Invalid value: \"../token\": must not contain '..'",
        ),
        (
            json!({}),
            json!({ "affinity": { "podAntiAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [
                { "topologyKey": "zone", "labelSelector": { "matchExpressions": [
                    { "key": "app", "operator": "In", "values": ["-bad-"] }] } }] } } }),
            "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values[0]: Invalid value: \"-bad-\"",
        ),
        (
            json!({}),
            json!({ "topologySpreadConstraints": [{ "maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": { "matchExpressions": [
                    { "key": "app", "operator": "In", "values": ["-bad-"] }] } }] }),
            "spec.template.spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].values[0]: Invalid value: \"-bad-\"",
        ),
        (
            json!({}),
            json!({ "containers": [{ "name": "c", "image": "i", "resources": {
                "limits": { "hugepages-2Mi": "3Mi", "memory": "1Gi" },
                "requests": { "hugepages-2Mi": "3Mi", "memory": "1Gi" } } }] }),
            "spec.template.spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: \"3Mi\": 3Mi is not positive integer multiple of hugepages-2Mi",
        ),
        (
            json!({}),
            json!({ "affinity": { "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{ "matchExpressions": [
                    { "key": "zone", "operator": "In", "values": ["-bad-"] }] }] } } } }),
            "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"-bad-\"",
        ),
        (
            json!({ "annotations": { "controller.kubernetes.io/pod-deletion-cost": "ten" } }),
            json!({}),
            "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"ten\": must be a 32bit integer",
        ),
    ];
    let valid = deployment_with(json!({}), json!({}));
    for (meta, spec, want) in cases {
        let bad = deployment_with(meta.clone(), spec.clone());
        let case = format!("{meta} {spec}");
        assert_reported(&errors("apps", "v1", "deployments", &bad), want, &case);
        // Introduced by an update: refused as on create.
        assert_reported(&update_errors(deployments, &bad, &valid), want, &case);
        // Already stored: the update may keep it.
        let mut changed = bad.clone();
        changed["spec"]["replicas"] = json!(3);
        let got = update_errors(deployments, &changed, &bad);
        assert!(got.is_empty(), "{case}: {got:?}");
    }
    // Huge pages need cpu or memory beside them.
    let pages = deployment_with(
        json!({}),
        json!({ "containers": [{ "name": "c", "image": "i", "resources": {
            "limits": { "hugepages-2Mi": "4Mi" }, "requests": { "hugepages-2Mi": "4Mi" } } }] }),
    );
    assert_eq!(
        errors("apps", "v1", "deployments", &pages),
        ["spec.template.spec.containers[0].resources: Forbidden: HugePages require cpu or memory"]
    );
    // A relaxation covers only what it names: a stored MountOption allows MountOption, and an
    // unknown policy is still refused, now listing both.
    let stored = deployment_with(
        json!({}),
        json!({ "securityContext": { "seLinuxChangePolicy": "MountOption" } }),
    );
    let other = deployment_with(
        json!({}),
        json!({ "securityContext": { "seLinuxChangePolicy": "Sometimes" } }),
    );
    assert_eq!(
        update_errors(deployments, &other, &stored),
        [
            "spec.template.spec.securityContext.seLinuxChangePolicy: Unsupported value: \"Sometimes\": supported values: \"MountOption\", \"Recursive\""
        ]
    );
    // A stored invalid selector value does not excuse an invalid key.
    let bad_value = json!({ "topologySpreadConstraints": [{ "maxSkew": 1, "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": { "matchExpressions": [
            { "key": "app", "operator": "In", "values": ["-bad-"] }] } }] });
    let stored = deployment_with(json!({}), bad_value);
    let bad_key = deployment_with(
        json!({}),
        json!({ "topologySpreadConstraints": [{ "maxSkew": 1, "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": { "matchExpressions": [
            { "key": "-k-", "operator": "In", "values": ["-bad-"] }] } }] }),
    );
    let got = update_errors(deployments, &bad_key, &stored);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("matchExpressions[0].key"), "{got:?}");
    // Jobs and CronJobs take their options from the stored template too.
    let sysctl = json!({ "hostNetwork": true, "restartPolicy": "Never", "securityContext": {
        "sysctls": [{ "name": "net.core.somaxconn", "value": "1" }] },
        "containers": [{ "name": "c", "image": "i" }] });
    let job = defaulted(
        "batch",
        "v1",
        "jobs",
        json!({ "metadata": { "name": "j", "uid": "u" }, "spec": {
            "manualSelector": true, "selector": { "matchLabels": { "a": "b" } },
            "template": { "metadata": { "labels": { "a": "b" } }, "spec": sysctl.clone() } } }),
    );
    assert_reported(
        &errors("batch", "v1", "jobs", &job),
        "spec.template.spec.securityContext.sysctls[0].name",
        &"job",
    );
    assert!(update_errors(("batch", "jobs"), &job, &job).is_empty());
    let cron = defaulted(
        "batch",
        "v1",
        "cronjobs",
        json!({ "metadata": { "name": "c" }, "spec": { "schedule": "* * * * *",
            "jobTemplate": { "spec": { "template": { "spec": sysctl } } } } }),
    );
    assert_reported(
        &errors("batch", "v1", "cronjobs", &cron),
        "spec.jobTemplate.spec.template.spec.securityContext.sysctls[0].name",
        &"cronjob",
    );
    assert!(update_errors(("batch", "cronjobs"), &cron, &cron).is_empty());
    // Pods: the same options from the stored pod.
    let pod = json!({ "metadata": { "name": "p" }, "spec": { "hostNetwork": true,
        "securityContext": { "sysctls": [{ "name": "net.ipv4.ip_forward", "value": "1" }] },
        "containers": [{ "name": "c", "image": "i" }] } });
    let pod = defaulted("", "v1", "pods", pod);
    assert!(!super::pod_validation::validate_pod_spec(pod.get("spec"), "spec").is_empty());
    let relaxed =
        super::pod_validation::validate_pod_spec_on_update(pod.get("spec"), Some(&pod), "spec");
    assert!(relaxed.is_empty(), "{relaxed:?}");
}

#[test]
fn stateful_set_templates_labels_and_annotations_are_validated_as_upstream() {
    let sts = |metadata: Value| {
        json!({ "metadata": { "name": "s" }, "spec": {
            "selector": { "matchLabels": { "app": "a" } },
            "template": { "metadata": metadata,
                "spec": { "containers": [{ "name": "c", "image": "i" }] } } } })
    };
    let cases = [
        (
            json!({ "labels": { "app": "a", "bad key!": "x" } }),
            "spec.template.labels: Invalid value: \"bad key!\"",
        ),
        (
            json!({ "labels": { "app": "a" }, "annotations": { "-x-": "1" } }),
            "spec.template.annotations: Invalid value: \"-x-\"",
        ),
        (
            json!({ "labels": { "app": "a" },
                "annotations": { "controller.kubernetes.io/pod-deletion-cost": "ten" } }),
            "spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: \"ten\": must be a 32bit integer",
        ),
    ];
    for (meta, want) in cases {
        let got = errors("apps", "v1", "statefulsets", &sts(meta.clone()));
        assert_reported(&got, want, &meta);
    }
}

#[test]
fn pod_templates_report_bad_labels_then_annotations_at_upstreams_paths() {
    // ValidatePodTemplateSpec names them `<template>.labels` and `<template>.annotations`,
    // labels first, for every kind with a pod template.
    let template = json!({ "metadata": { "labels": { "app": "a", "bad key!": "x" },
        "annotations": { "-x-": "1" } },
        "spec": { "containers": [{ "name": "c", "image": "i" }] } });
    let workload = |kind_spec: Value| {
        let mut obj = json!({ "metadata": { "name": "w" }, "spec": kind_spec });
        obj["spec"]["template"] = template.clone();
        obj
    };
    let selector = json!({ "selector": { "matchLabels": { "app": "a" } } });
    let cases = [
        (
            "apps",
            "deployments",
            workload(selector.clone()),
            "spec.template",
        ),
        (
            "apps",
            "daemonsets",
            workload(selector.clone()),
            "spec.template",
        ),
        (
            "",
            "replicationcontrollers",
            workload(json!({ "selector": { "app": "a" } })),
            "spec.template",
        ),
        (
            "",
            "podtemplates",
            json!({ "metadata": { "name": "t" }, "template": template.clone() }),
            "template",
        ),
    ];
    for (group, resource, obj, at) in cases {
        let got = errors(group, "v1", resource, &obj);
        let labels = got
            .iter()
            .position(|e| e.starts_with(&format!("{at}.labels: Invalid value: \"bad key!\"")));
        let annotations = got
            .iter()
            .position(|e| e.starts_with(&format!("{at}.annotations: Invalid value: \"-x-\"")));
        assert!(
            matches!((labels, annotations), (Some(l), Some(a)) if l < a),
            "{resource}: {got:?}"
        );
    }
}

#[test]
fn service_ip_family_upgrades_and_downgrades_follow_upstream() {
    let info = catalog::find("", "v1", "services").expect("in the catalog");
    let strategy = for_resource(info);
    let svc = |extra: Value| {
        let mut s = service(json!({ "ports": [{ "port": 80 }] }));
        if let (Some(into), Value::Object(from)) = (s["spec"].as_object_mut(), extra) {
            into.extend(from);
        }
        s
    };
    let update = |new: &Value, old: &Value| -> Vec<String> {
        strategy
            .validate_update(new, old)
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    let v4 = svc(json!({ "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack" }));
    assert!(update(&v4, &v4).is_empty());
    // (stored, new, errors)
    let dual = json!({ "clusterIPs": ["10.96.0.10", "fd00::10"], "ipFamilies": ["IPv4", "IPv6"],
        "ipFamilyPolicy": "PreferDualStack" });
    let cases = [
        // The primary family may not change.
        (
            v4.clone(),
            svc(json!({ "ipFamilies": ["IPv6"], "ipFamilyPolicy": "SingleStack" })),
            vec![
                "spec.ipFamilies[0]: Invalid value: []core.IPFamily{\"IPv6\"}: may not change once set",
                "spec.clusterIPs[0]: Invalid value: \"10.96.0.10\": expected an IPv6 value as indicated by `ipFamilies[0]`",
            ],
        ),
        // An upgrade that swaps the primary family.
        (
            v4.clone(),
            svc(json!({ "ipFamilies": ["IPv6", "IPv4"], "ipFamilyPolicy": "PreferDualStack" })),
            vec![
                "spec.ipFamilies[0]: Invalid value: []string{\"10.96.0.10\"}: may not change once set",
                "spec.clusterIPs[0]: Invalid value: \"10.96.0.10\": expected an IPv6 value as indicated by `ipFamilies[0]`",
            ],
        ),
        // Releasing the secondary address and family needs SingleStack.
        (
            svc(dual.clone()),
            svc(json!({ "ipFamilies": ["IPv4"], "ipFamilyPolicy": "PreferDualStack" })),
            vec![
                "spec.ipFamilyPolicy: Invalid value: \"PreferDualStack\": must be set to 'SingleStack' when releasing the secondary clusterIP",
                "spec.ipFamilyPolicy: Invalid value: \"PreferDualStack\": must be set to 'SingleStack' when releasing the secondary ipFamily",
            ],
        ),
        // IPv4 only: a dual-stack upgrade is refused by the allocator's checks.
        (
            v4.clone(),
            svc(json!({ "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack" })),
            vec![
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
                "spec.ipFamilies[1]: Invalid value: \"IPv6\": not configured on this cluster",
            ],
        ),
        (
            v4.clone(),
            svc(json!({ "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "SingleStack" })),
            vec![
                "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ],
        ),
        (
            v4.clone(),
            svc(
                json!({ "clusterIPs": ["10.96.0.10", "fd00::10"], "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "PreferDualStack" }),
            ),
            vec![
                "spec.clusterIPs[1]: Invalid value: []string{\"10.96.0.10\", \"fd00::10\"}: IPv6 is not configured on this cluster",
            ],
        ),
    ];
    for (old, new, want) in cases {
        assert_eq!(update(&new, &old), want, "{}", new["spec"]);
    }
    // A downgrade with SingleStack is allowed by validation.
    let single = svc(json!({ "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack" }));
    assert!(update(&single, &svc(dual)).is_empty());
    // Headless Services may change families; so may a change from ExternalName.
    let headless = |families: Value| {
        svc(
            json!({ "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": families,
            "ipFamilyPolicy": "SingleStack" }),
        )
    };
    // (without a selector the allocator does not check the families either)
    assert!(update(&headless(json!(["IPv6"])), &headless(json!(["IPv4"]))).is_empty());
    let mut selected = headless(json!(["IPv6"]));
    selected["spec"]["selector"] = json!({ "app": "a" });
    assert_eq!(
        update(&selected, &headless(json!(["IPv4"]))),
        ["spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"]
    );
    assert!(
        super::service::single_stack_cluster_errors(&json!({ "spec": { "type": "ClusterIP",
        "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4", "IPv6"],
        "ipFamilyPolicy": "RequireDualStack" } }))
        .is_empty(),
        "headless without a selector is exempt"
    );
}

#[test]
fn workload_update_warnings_follow_the_generation_as_upstream() {
    let info = catalog::find("apps", "v1", "deployments").expect("in the catalog");
    let strategy = for_resource(info);
    let old = deployment_with(json!({}), json!({ "terminationGracePeriodSeconds": -1 }));
    let want = [
        "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values \
                 are invalid and will be treated as 1",
    ];
    // Labels do not move a Deployment's generation; annotations and the spec do.
    let mut labelled = old.clone();
    labelled["metadata"]["labels"] = json!({ "tier": "web" });
    assert!(strategy.warnings_on_update(&labelled, &old).is_empty());
    let mut annotated = old.clone();
    annotated["metadata"]["annotations"] = json!({ "note": "x" });
    assert_eq!(strategy.warnings_on_update(&annotated, &old), want);
    let mut scaled = old.clone();
    scaled["spec"]["replicas"] = json!(5);
    assert_eq!(strategy.warnings_on_update(&scaled, &old), want);
    // A ReplicaSet's annotations do not move its generation.
    let info = catalog::find("apps", "v1", "replicasets").expect("in the catalog");
    assert!(
        for_resource(info)
            .warnings_on_update(&annotated, &old)
            .is_empty()
    );
}

#[test]
fn job_warnings_are_upstreams_on_create_and_update() {
    let info = catalog::find("batch", "v1", "jobs").expect("in the catalog");
    let strategy = for_resource(info);
    let job = json!({ "metadata": { "name": "j" }, "spec": {
        "completionMode": "Indexed", "completions": 100_001, "parallelism": 10_001,
        "template": { "spec": { "terminationGracePeriodSeconds": -1, "restartPolicy": "Never",
            "containers": [{ "name": "c", "image": "i" }] } } } });
    let want = [
        "spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism \
         higher than 10^4, Kubernetes might not be able to track completedIndexes when a big \
         number of indexes fail",
        "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are \
         invalid and will be treated as 1",
    ];
    assert_eq!(strategy.warnings_on_create(&job), want);
    let mut relabelled = job.clone();
    relabelled["metadata"]["labels"] = json!({ "a": "b" });
    assert!(strategy.warnings_on_update(&relabelled, &job).is_empty());
    let mut resized = job.clone();
    resized["spec"]["parallelism"] = json!(10_002);
    assert_eq!(strategy.warnings_on_update(&resized, &job), want);
    // A CronJob's job template, at its own path.
    let info = catalog::find("batch", "v1", "cronjobs").expect("in the catalog");
    let cron = json!({ "metadata": { "name": "c" }, "spec": { "schedule": "* * * * *",
        "jobTemplate": { "spec": job["spec"].clone() } } });
    let got = for_resource(info).warnings_on_create(&cron);
    assert_eq!(
        got,
        [
            want[0].replacen("spec", "spec.jobTemplate.spec", 1),
            want[1].replacen("spec", "spec.jobTemplate.spec", 1),
        ]
    );
}

#[test]
fn pods_replication_controllers_and_pod_templates_relax_updates_as_upstream() {
    let spec = json!({ "hostNetwork": true, "securityContext": { "sysctls": [
        { "name": "net.core.somaxconn", "value": "1024" }] },
        "containers": [{ "name": "c", "image": "i" }] });
    let template = json!({ "metadata": { "labels": { "a": "b" } }, "spec": spec.clone() });
    // (group, resource, object, the path its pod spec is at)
    let cases = [
        (
            "",
            "pods",
            json!({ "metadata": { "name": "p", "namespace": "d" }, "spec": spec }),
            "spec",
        ),
        (
            "",
            "replicationcontrollers",
            json!({ "metadata": { "name": "rc", "namespace": "d" },
                "spec": { "selector": { "a": "b" }, "template": template.clone() } }),
            "spec.template.spec",
        ),
        (
            "",
            "podtemplates",
            json!({ "metadata": { "name": "pt", "namespace": "d" }, "template": template }),
            "template.spec",
        ),
    ];
    for (group, resource, obj, path) in cases {
        let obj = defaulted(group, "v1", resource, obj);
        let want = format!(
            "{path}.securityContext.sysctls[0].name: Invalid value: \"net.core.somaxconn\": may not be specified when 'hostNetwork' is true"
        );
        assert_reported(&errors(group, "v1", resource, &obj), &want, &resource);
        // Stored with it (before the rule existed): an update may keep it.
        let mut changed = obj.clone();
        changed["metadata"]["labels"] = json!({ "x": "y" });
        let got = update_errors((group, resource), &changed, &obj);
        assert!(got.is_empty(), "{resource}: {got:?}");
    }
}

#[test]
fn workload_templates_check_resource_names_as_upstream() {
    let spec = json!({ "containers": [{ "name": "c", "image": "i", "resources": {
        "limits": { "example.com/gpu": "1500m" }, "requests": { "example.com/gpu": "1500m" } } }] });
    for (group, resource) in [
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "daemonsets"),
        ("", "replicationcontrollers"),
    ] {
        let obj = json!({ "metadata": { "name": "w", "namespace": "d" }, "spec": {
            "selector": if resource == "replicationcontrollers" { json!({ "a": "b" }) }
                else { json!({ "matchLabels": { "a": "b" } }) },
            "template": { "metadata": { "labels": { "a": "b" } }, "spec": spec.clone() } } });
        let got = errors(group, "v1", resource, &obj);
        assert_reported(
            &got,
            "spec.template.spec.containers[0].resources.limits[example.com/gpu]: Invalid value: \"1500m\": must be an integer",
            &resource,
        );
    }
}

#[test]
fn service_account_secret_references_keep_only_their_names() {
    let info = catalog::find("", "v1", "serviceaccounts").expect("in the catalog");
    let strategy = for_resource(info);
    let mut sa = json!({ "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": { "name": "sa", "annotations": { "kubernetes.io/enforce-mountable-secrets": "true" } },
        "secrets": [{ "name": "s1", "namespace": "other", "uid": "u", "kind": "Secret" }, { "kind": "Secret" }] });
    strategy.prepare_for_create(&mut sa);
    assert_eq!(sa["secrets"], json!([{ "name": "s1" }, {}]));
    let warning = "metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in \
                   v1.32+; prefer separate namespaces to isolate access to mounted secrets";
    assert_eq!(strategy.warnings_on_create(&sa), [warning]);
    let plain = json!({ "metadata": { "name": "sa" } });
    assert!(strategy.warnings_on_create(&plain).is_empty());
    // On update only a request that newly sets the annotation is warned.
    assert_eq!(strategy.warnings_on_update(&sa, &plain), [warning]);
    assert!(strategy.warnings_on_update(&sa, &sa).is_empty());
    let mut updated =
        json!({ "metadata": { "name": "sa" }, "secrets": [{ "name": "s2", "apiVersion": "v1" }] });
    strategy.prepare_for_update(&mut updated, &plain);
    assert_eq!(updated["secrets"], json!([{ "name": "s2" }]));
}

#[test]
fn a_volume_status_write_stamps_the_phase_transition_as_upstream() {
    let info = catalog::find("", "v1", "persistentvolumes").expect("persistentvolumes");
    let strategy = for_resource(info);
    let old = json!({"spec": {}, "status": {"phase": "Available",
        "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}});
    let write = |status: Value| {
        let mut new = json!({"spec": {}, "status": status});
        strategy.prepare_for_subresource_update("status", &mut new, &old);
        new["status"]["lastPhaseTransitionTime"].clone()
    };
    // The phase stays: the stored time is kept.
    assert_eq!(write(json!({"phase": "Available"})), "2020-01-01T00:00:00Z");
    // It moves: now, unless the writer set a new time of its own.
    let stamped = write(json!({"phase": "Bound"}));
    assert!(stamped.as_str().is_some_and(|t| t > "2026"), "{stamped}");
    let kept = json!({"phase": "Bound", "lastPhaseTransitionTime": "2021-01-01T00:00:00Z"});
    assert_eq!(write(kept), "2021-01-01T00:00:00Z");
}

#[test]
fn rbac_roles_and_bindings_are_validated_as_upstream() {
    // Cases of pkg/apis/rbac/validation/validation_test.go.
    let rbac = "rbac.authorization.k8s.io";
    let role = |rules: Value| json!({"metadata": {"name": "r", "namespace": "n"}, "rules": rules});
    assert!(
        errors(
            rbac,
            "v1",
            "roles",
            &role(json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]))
        )
        .is_empty()
    );
    for (rules, want, resource) in [
        (
            json!([{"apiGroups": [""], "resources": ["pods"]}]),
            "rules[0].verbs: Required value: verbs must contain at least one value",
            "roles",
        ),
        (
            json!([{"verbs": ["get"], "resources": ["pods"]}]),
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
            "roles",
        ),
        (
            json!([{"verbs": ["get"], "apiGroups": [""]}]),
            "rules[0].resources: Required value: resource rules must supply at least one resource",
            "clusterroles",
        ),
        (
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]),
            "rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
            "roles",
        ),
        (
            json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]}]),
            "rules[0].nonResourceURLs: Invalid value: []string{\"/healthz\"}: rules cannot apply to both regular resources and non-resource URLs",
            "clusterroles",
        ),
        (
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"], "resourceNames": ["x"]}]),
            "rules[0].resourceNames: Required value: resource names cannot apply to multiple resources",
            "clusterroles",
        ),
    ] {
        assert_reported(
            &errors(rbac, "v1", resource, &role(rules.clone())),
            want,
            &rules,
        );
    }
    assert!(
        errors(
            rbac,
            "v1",
            "clusterroles",
            &role(json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]))
        )
        .is_empty()
    );

    let binding = |role_ref: Value, subjects: Value| json!({"metadata": {"name": "b", "namespace": "n"}, "roleRef": role_ref, "subjects": subjects});
    let good_ref = json!({"apiGroup": rbac, "kind": "Role", "name": "r"});
    assert!(
        errors(
            rbac,
            "v1",
            "rolebindings",
            &binding(
                good_ref.clone(),
                json!([{"kind": "ServiceAccount", "name": "sa"}])
            )
        )
        .is_empty()
    );
    for (resource, role_ref, subjects, want) in [
        (
            "clusterrolebindings",
            good_ref.clone(),
            json!([]),
            "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
        ),
        (
            "rolebindings",
            json!({"apiGroup": rbac, "kind": "Role", "name": ""}),
            json!([]),
            "roleRef.name: Required value",
        ),
        (
            "rolebindings",
            json!({"apiGroup": rbac, "kind": "Role", "name": "a/b"}),
            json!([]),
            "roleRef.name: Invalid value: \"a/b\": may not contain '/'",
        ),
        (
            "clusterrolebindings",
            json!({"apiGroup": rbac, "kind": "ClusterRole", "name": "r"}),
            json!([{"kind": "ServiceAccount", "name": "sa"}]),
            "subjects[0].namespace: Required value",
        ),
        (
            "rolebindings",
            good_ref.clone(),
            json!([{"kind": "Robot", "name": "x"}]),
            "subjects[0].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ),
        (
            "rolebindings",
            good_ref.clone(),
            json!([{"kind": "ServiceAccount", "name": "Bad_Name"}]),
            "subjects[0].name: Invalid value: \"Bad_Name\"",
        ),
    ] {
        assert_reported(
            &errors(rbac, "v1", resource, &binding(role_ref, subjects.clone())),
            want,
            &subjects,
        );
    }
}
