//! Upstream's shape of everyday objects through kubectl, one test per finding of the defaults
//! issue: a Service carries `status.loadBalancer` and its DELETE answers with the object; a Job
//! gets its generated selector; CronJob and PVC defaults; immutable ConfigMaps and Secrets hold
//! on every write path; the system PriorityClasses exist and FlowSchemas classify requests; Events are served through both
//! groups; a CSR names its requester; pods keep their spec; security contexts are validated;
//! pod affinity matchLabelKeys are merged into the selector on create; AppArmor fields and
//! annotations are kept in step; pod status writes are validated; an autoscaling/v1 client's
//! read-modify-write keeps what only v2 can show; replica sets and controller revisions are
//! named with upstream's template hashes.

use std::time::Duration;

use k1s_tests::{TestCluster, fails, wait_until};
use serde_json::Value;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

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

#[test]
fn a_job_gets_upstreams_generated_selector_and_labels() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "job", "j1", "--image=busybox", "--", "echo", "hi"]);
    let job = json(&c.kubectl_ok(&["get", "job", "j1", "-o", "json"]));
    let uid = job["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(
        job["spec"]["selector"],
        serde_json::json!({ "matchLabels": { "batch.kubernetes.io/controller-uid": uid } })
    );
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("controller-uid", uid),
        ("batch.kubernetes.io/job-name", "j1"),
        ("job-name", "j1"),
    ] {
        assert_eq!(labels[k], v, "{labels}");
    }
    // A Job without labels takes its template's (upstream's SetDefaults_Job on decode).
    assert_eq!(job["metadata"]["labels"], *labels);
    for (field, want) in [
        ("completions", serde_json::json!(1)),
        ("parallelism", serde_json::json!(1)),
        ("backoffLimit", serde_json::json!(6)),
        ("completionMode", serde_json::json!("NonIndexed")),
        ("suspend", serde_json::json!(false)),
        (
            "podReplacementPolicy",
            serde_json::json!("TerminatingOrFailed"),
        ),
        ("manualSelector", serde_json::json!(false)),
    ] {
        assert_eq!(job["spec"][field], want, "spec.{field}");
    }
    // A selector of one's own is refused without manualSelector, and the template is immutable.
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j2"},
            "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},
            "spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}"#,
    );
    let err = fails(&["create j2"], out);
    assert!(err.contains("`selector` not auto-generated"), "{err}");
    let out = c.kubectl(&[
        "patch",
        "job",
        "j1",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"other"}]"#,
    ]);
    let err = fails(&["patch job"], out);
    assert!(
        err.contains("spec.template: Invalid value") && err.contains("field is immutable"),
        "{err}"
    );
    // A Job's pods may not restart Always.
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j3"},
            "spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}"#,
    );
    let err = fails(&["create j3"], out);
    assert!(
        err.contains(r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#),
        "{err}"
    );
}

#[test]
fn cronjob_and_persistent_volume_claim_defaults() {
    let c = TestCluster::start();
    c.kubectl_ok(&[
        "create",
        "cronjob",
        "cj",
        "--image=busybox",
        "--schedule=*/5 * * * *",
        "--",
        "date",
    ]);
    let spec = json(&c.kubectl_ok(&["get", "cronjob", "cj", "-o", "jsonpath={.spec}"]));
    assert_eq!(spec["concurrencyPolicy"], "Allow");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["successfulJobsHistoryLimit"], 3);
    assert_eq!(spec["failedJobsHistoryLimit"], 1);
    assert_eq!(
        spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
    let out = c.kubectl(&[
        "create",
        "cronjob",
        "bad",
        "--image=busybox",
        "--schedule=bad",
    ]);
    let err = fails(&["create bad cronjob"], out);
    assert!(
        err.contains("spec.schedule: Invalid value: \"bad\""),
        "{err}"
    );

    c.apply(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n\
         spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
    );
    let pvc = json(&c.kubectl_ok(&["get", "pvc", "data", "-o", "json"]));
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"]["phase"], "Pending");
}

#[test]
fn an_immutable_config_map_or_secret_holds_on_every_write_path() {
    let c = TestCluster::start();
    c.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: imm}\ndata: {a: \"1\"}\nimmutable: true\n");
    c.apply("apiVersion: v1\nkind: Secret\nmetadata: {name: sec}\nstringData: {a: \"1\"}\nimmutable: true\n");
    for kind in ["configmap/imm", "secret/sec"] {
        let value = if kind.starts_with("secret") {
            "Mg=="
        } else {
            "2"
        };
        for (ty, patch) in [
            ("merge", format!(r#"{{"data":{{"a":"{value}"}}}}"#)),
            ("strategic", format!(r#"{{"data":{{"b":"{value}"}}}}"#)),
            (
                "json",
                format!(r#"[{{"op":"replace","path":"/data/a","value":"{value}"}}]"#),
            ),
            ("merge", r#"{"immutable":false}"#.to_string()),
        ] {
            let out = c.kubectl(&["patch", kind, &format!("--type={ty}"), "-p", &patch]);
            let err = fails(&["patch", kind, ty], out);
            assert!(
                err.contains("field is immutable when `immutable` is set"),
                "{kind} {ty}: {err}"
            );
        }
    }
    // A replace (PUT) and a client-side apply are refused too; the data is unchanged.
    let out = c.kubectl_stdin(
        &["replace", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: imm}\ndata: {a: \"9\"}\nimmutable: true\n",
    );
    fails(&["replace"], out);
    let out = c.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: imm}\ndata: {a: \"8\"}\nimmutable: true\n",
    );
    fails(&["apply"], out);
    assert_eq!(
        c.kubectl_ok(&["get", "cm", "imm", "-o", "jsonpath={.data.a}"]),
        "1"
    );
    // Labels may still change; a Secret's type never does.
    c.kubectl_ok(&["label", "cm", "imm", "x=y"]);
    let out = c.kubectl(&[
        "patch",
        "secret",
        "sec",
        "--type=merge",
        "-p",
        r#"{"type":"other"}"#,
    ]);
    let err = fails(&["patch secret type"], out);
    assert!(
        err.contains("type: Invalid value: \"other\": field is immutable"),
        "{err}"
    );
}

#[test]
fn system_priority_classes_and_the_authentication_config_map_exist_at_start() {
    let c = TestCluster::start();
    let out = c.kubectl_ok(&[
        "get",
        "priorityclasses",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.value},{.preemptionPolicy};{end}",
    ]);
    assert!(
        out.contains("system-node-critical=2000001000,PreemptLowerPriority;"),
        "{out}"
    );
    assert!(
        out.contains("system-cluster-critical=2000000000,PreemptLowerPriority;"),
        "{out}"
    );
    // A pod may name one, and gets its priority.
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: crit, namespace: kube-system}\n\
         spec: {priorityClassName: system-node-critical, containers: [{name: c, image: busybox}]}\n",
    );
    let prio = c.kubectl_ok(&[
        "get",
        "pod",
        "crit",
        "-n",
        "kube-system",
        "-o",
        "jsonpath={.spec.priority}",
    ]);
    assert_eq!(prio, "2000001000");
    // Users cannot take the reserved prefix.
    let out = c.kubectl(&["create", "priorityclass", "system-mine", "--value=5"]);
    let err = fails(&["create system-mine"], out);
    assert!(err.contains("reserved for system use only"), "{err}");

    let ca = c.kubectl_ok(&[
        "get",
        "configmap",
        "extension-apiserver-authentication",
        "-n",
        "kube-system",
        "-o",
        "jsonpath={.data.client-ca-file}",
    ]);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");

    // API Priority and Fairness: upstream's mandatory and suggested configuration.
    let levels = c.kubectl_ok(&[
        "get",
        "prioritylevelconfigurations",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.spec.type}/{.spec.limited.nominalConcurrencyShares};{end}",
    ]);
    for want in [
        "exempt=Exempt/;",
        "catch-all=Limited/5;",
        "global-default=Limited/20;",
        "workload-low=Limited/100;",
    ] {
        assert!(levels.contains(want), "{want} in {levels}");
    }
    let schemas = c.kubectl_ok(&["get", "flowschemas"]);
    let rows: Vec<Vec<&str>> = schemas
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.first() == Some(&name))
            .unwrap_or_else(|| panic!("no flowschema {name} in {schemas}"))
            .clone()
    };
    assert_eq!(row("exempt")[1..3], ["exempt", "1"], "{schemas}");
    assert_eq!(
        row("catch-all")[1..4],
        ["catch-all", "10000", "ByUser"],
        "{schemas}"
    );
    assert_eq!(
        row("kube-controller-manager")[1..4],
        ["workload-high", "800", "ByNamespace"],
        "{schemas}"
    );
    // The MISSINGPL column comes from the Dangling condition.
    assert_eq!(row("probes").last(), Some(&"False"), "{schemas}");
    assert_eq!(rows.len(), 14, "{schemas}");

    // Requests are classified as upstream's e2e test checks it: a schema for one user, the
    // response headers naming it (and the catch-all for another user), and its Dangling
    // condition following whether its priority level exists.
    c.apply(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: noxu}\n\
         spec:\n  priorityLevelConfiguration: {name: noxu-level}\n  matchingPrecedence: 1000\n\
         \x20 rules:\n  - subjects: [{kind: User, user: {name: noxu}}]\n\
         \x20   nonResourceRules: [{verbs: [\"*\"], nonResourceURLs: [\"*\"]}]\n",
    );
    let dangling = || {
        c.kubectl_ok(&[
            "get",
            "flowschema",
            "noxu",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Dangling\")].status}/{.status.conditions[?(@.type==\"Dangling\")].reason}",
        ])
    };
    wait_until(Duration::from_secs(20), "Dangling=True", || {
        (dangling() == "True/NotFound").then_some(())
    });
    let headers_of = |user: &str| {
        let out = c.kubectl(&["get", "--raw", "/version", "--as", user, "-v=8"]);
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        let header = |name: &str| {
            log.lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        (
            header("X-Kubernetes-Pf-Flowschema-Uid:"),
            header("X-Kubernetes-Pf-Prioritylevel-Uid:"),
        )
    };
    let uid = |kind: &str, name: &str| {
        c.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"])
    };
    // Other authenticated users fall in upstream's suggested global-default.
    let global_default = (
        uid("flowschema", "global-default"),
        uid("prioritylevelconfiguration", "global-default"),
    );
    // A dangling schema classifies nothing.
    assert_eq!(headers_of("noxu"), global_default);
    c.apply(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n\
         metadata: {name: noxu-level}\nspec: {type: Limited, limited: {nominalConcurrencyShares: 5, \
         limitResponse: {type: Reject}}}\n",
    );
    wait_until(Duration::from_secs(20), "Dangling=False", || {
        (dangling() == "False/Found").then_some(())
    });
    assert_eq!(
        headers_of("noxu"),
        (
            uid("flowschema", "noxu"),
            uid("prioritylevelconfiguration", "noxu-level")
        )
    );
    assert_eq!(headers_of("foo"), global_default);
}

#[test]
fn an_event_is_one_object_in_core_v1_and_events_k8s_io() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: Event\nmetadata: {name: ev1}\n\
         involvedObject: {kind: Pod, name: web, namespace: default}\n\
         reason: Pulled\nmessage: pulled the image\ntype: Normal\nsource: {component: kubelet}\ncount: 3\n",
    );
    let ev = json(&c.kubectl_ok(&["get", "events.v1.events.k8s.io", "ev1", "-o", "json"]));
    assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
    assert_eq!(ev["note"], "pulled the image");
    assert_eq!(ev["regarding"]["name"], "web");
    assert_eq!(ev["deprecatedSource"]["component"], "kubelet");
    assert_eq!(ev["deprecatedCount"], 3);
    // Written through events.k8s.io, read through core/v1 (what `kubectl events` and describe use).
    c.apply(
        "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: ev2}\n\
         eventTime: \"2026-01-01T00:00:00.000000Z\"\nreportingController: example.com/ctl\n\
         reportingInstance: ctl-1\naction: Sync\nreason: Synced\ntype: Normal\nnote: all good\n\
         regarding: {kind: Pod, name: web, namespace: default}\n",
    );
    let core = json(&c.kubectl_ok(&["get", "events.v1.", "ev2", "-o", "json"]));
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "all good");
    assert_eq!(core["involvedObject"]["name"], "web");
    assert_eq!(core["reportingComponent"], "example.com/ctl");
    let listed = c.kubectl_ok(&["events"]);
    assert!(
        listed.contains("pulled the image") && listed.contains("all good"),
        "{listed}"
    );
    // Field selectors use each group's own field names.
    let out = c.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dweb",
    ]);
    assert_eq!(
        json(&out)["items"].as_array().map(Vec::len),
        Some(2),
        "{out}"
    );
    // core/v1's `source` selects the source component, else the reporting controller
    // (events.go of upstream's e2e tests lists `source=test-controller`).
    let names = |selector: &str| {
        c.kubectl_ok(&[
            "get",
            "events.v1.",
            "--field-selector",
            selector,
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
    };
    assert_eq!(names("source=kubelet"), "ev1");
    assert_eq!(names("source=example.com/ctl"), "ev2");
}

#[test]
fn a_certificate_signing_request_names_its_requester_whatever_the_client_sent() {
    let c = TestCluster::start();
    let pem = k1s_tests::csr_pem("bob");
    use base64::Engine as _;
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    c.apply(&format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: bob}}\n\
         spec: {{request: {request}, signerName: example.com/signer, usages: [client auth], \
         username: mallory, groups: [system:masters], uid: forged}}\n"
    ));
    let spec = json(&c.kubectl_ok(&["get", "csr", "bob", "-o", "jsonpath={.spec}"]));
    assert_eq!(spec["username"], "kubernetes-admin");
    assert_eq!(
        spec["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );
    assert!(spec.get("uid").is_none_or(|u| u != "forged"), "{spec}");
}

#[test]
fn a_pods_spec_is_fixed_except_what_upstream_lets_change() {
    let c = TestCluster::start();
    c.kubectl_ok(&["run", "p1", "--image=nginx:1"]);
    c.kubectl_ok(&["set", "image", "pod/p1", "p1=nginx:2"]);
    let pod = json(&c.kubectl_ok(&["get", "pod", "p1", "-o", "json"]));
    assert_eq!(pod["metadata"]["generation"], 2);
    assert_eq!(pod["spec"]["enableServiceLinks"], true);
    let out = c.kubectl(&[
        "patch",
        "pod",
        "p1",
        "-p",
        r#"{"spec":{"restartPolicy":"Never"}}"#,
    ]);
    let err = fails(&["patch restartPolicy"], out);
    assert!(err.contains("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"), "{err}");
}

#[test]
fn service_account_tokens_are_rs256_with_a_persistent_pki() {
    use base64::Engine as _;
    let data = tempfile::tempdir().expect("tempdir");
    let c = TestCluster::start_with(k1s_tests::StartOptions {
        data_dir: Some(data.path().join("d")),
        ..Default::default()
    });
    let token = c.kubectl_ok(&["create", "token", "default"]);
    let header = token.trim().split('.').next().expect("header");
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .expect("base64url");
    assert_eq!(json(&String::from_utf8_lossy(&header))["alg"], "RS256");
    let jwks = json(&c.kubectl_ok(&["get", "--raw", "/openid/v1/jwks"]));
    assert_eq!(jwks["keys"][0]["kty"], "RSA", "{jwks}");
    let config = json(&c.kubectl_ok(&["get", "--raw", "/.well-known/openid-configuration"]));
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        serde_json::json!(["RS256"])
    );
    // The token authenticates.
    let kubeconfig = c.token_kubeconfig(token.trim(), "sa");
    let out = std::process::Command::new("kubectl")
        .args([
            "--kubeconfig",
            kubeconfig.to_str().expect("utf8"),
            "auth",
            "whoami",
        ])
        .output()
        .expect("kubectl");
    let whoami = k1s_tests::stdout(&out);
    assert!(
        whoami.contains("system:serviceaccount:default:default"),
        "{whoami}"
    );
}

#[test]
fn creates_carry_upstreams_warnings() {
    let c = TestCluster::start();
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web.v1}\nspec:\n  \
         selector: {matchLabels: {app: w}}\n  template:\n    metadata: {labels: {app: w}}\n    \
         spec:\n      nodeSelector: {failure-domain.beta.kubernetes.io/zone: a}\n      \
         containers: [{name: c, image: nginx, env: [{name: A, value: '1'}, {name: A, value: '2'}]}]\n",
    );
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let err = k1s_tests::stderr(&out);
    for want in [
        "Warning: metadata.name: this is used in Pod names and hostnames, which can result in \
         surprising behavior; a DNS label is recommended: [must not contain dots]",
        "Warning: spec.template.spec.nodeSelector[failure-domain.beta.kubernetes.io/zone]: \
         deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead",
        "Warning: spec.template.spec.containers[0].env[1]: hides previous definition of \"A\", \
         which may be dropped when using apply",
    ] {
        assert!(err.contains(want), "missing {want:?} in {err}");
    }
    // On update the template's warnings come again when the spec changes (upstream's
    // WarningsOnUpdate: the generation moved), never the name's; a metadata change warns not.
    let out = c.kubectl(&["set", "image", "deployment/web.v1", "c=nginx:2"]);
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let err = k1s_tests::stderr(&out);
    assert!(
        err.contains("Warning: spec.template.spec.containers[0].env[1]: hides previous"),
        "{err}"
    );
    assert!(!err.contains("metadata.name"), "{err}");
    let out = c.kubectl(&["label", "deployment/web.v1", "tier=web"]);
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let err = k1s_tests::stderr(&out);
    assert!(!err.contains("Warning"), "{err}");
    // A PodTemplate's template is at `template`.
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: pt}\ntemplate:\n  spec:\n    \
         containers: [{name: c, image: nginx, env: [{name: A, value: '1'}, {name: A, value: '2'}]}]\n",
    );
    assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
    let err = k1s_tests::stderr(&out);
    assert!(
        err.contains("Warning: template.spec.containers[0].env[1]: hides previous definition"),
        "{err}"
    );
    let out = c.kubectl(&[
        "run",
        "p1",
        "--image=nginx",
        r#"--overrides={"spec":{"volumes":[{"name":"g","gitRepo":{"repository":"x"}}]}}"#,
    ]);
    let err = k1s_tests::stderr(&out);
    assert!(
        err.contains("Warning: spec.volumes[0].gitRepo: deprecated in v1.11"),
        "{err}"
    );
}

#[test]
fn security_contexts_are_validated_as_upstream_through_kubectl() {
    let c = TestCluster::start();
    let bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  \
               securityContext: {sysctls: [{name: Net.Bad, value: '1'}]}\n  \
               containers: [{name: c, image: busybox, securityContext: {runAsUser: -1}}]\n";
    let err = fails(
        &["apply bad pod"],
        c.kubectl_stdin(&["apply", "-f", "-"], bad),
    );
    assert!(
        err.contains(
            "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive"
        ),
        "{err}"
    );
    assert!(
        err.contains("spec.securityContext.sysctls[0].name: Invalid value: \"Net.Bad\""),
        "{err}"
    );
    // A Deployment's template gets the same rules under its own path.
    let deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  \
                  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    \
                  spec: {os: {name: windows}, containers: [{name: c, image: busybox, \
                  securityContext: {privileged: true}}]}\n";
    let err = fails(
        &["apply bad deployment"],
        c.kubectl_stdin(&["apply", "-f", "-"], deploy),
    );
    assert!(
        err.contains(
            "spec.template.spec.containers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod"
        ),
        "{err}"
    );
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: good}\nspec:\n  \
         securityContext: {runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}\n  \
         containers: [{name: c, image: busybox, securityContext: {allowPrivilegeEscalation: false}}]\n",
    );
}

#[test]
fn pod_affinity_match_label_keys_are_merged_into_the_selector_on_create() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web, version: v2}}\nspec:\n  \
         containers: [{name: c, image: busybox}]\n  affinity:\n    podAffinity:\n      \
         requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector: {matchLabels: {tier: db}}\n        \
         topologyKey: topology.kubernetes.io/zone\n        matchLabelKeys: [version, absent]\n    \
         podAntiAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 10\n        \
         podAffinityTerm: {labelSelector: {}, topologyKey: kubernetes.io/hostname, mismatchLabelKeys: [version]}\n",
    );
    let affinity = json(&c.kubectl_ok(&["get", "pod", "web", "-o", "jsonpath={.spec.affinity}"]));
    let required = &affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(
        required["labelSelector"],
        json(
            r#"{"matchLabels":{"tier":"db"},"matchExpressions":[{"key":"version","operator":"In","values":["v2"]}]}"#
        ),
        "{affinity}"
    );
    assert_eq!(required["matchLabelKeys"], json(r#"["version","absent"]"#));
    assert_eq!(
        affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
            ["labelSelector"],
        json(r#"{"matchExpressions":[{"key":"version","operator":"NotIn","values":["v2"]}]}"#),
        "{affinity}"
    );
    // Keys without a selector, or in both lists, are refused with upstream's messages.
    let bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: bad, labels: {app: web}}\nspec:\n  \
               containers: [{name: c, image: busybox}]\n  affinity:\n    podAffinity:\n      \
               requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: zone\n        \
               matchLabelKeys: [app]\n      - labelSelector: {}\n        topologyKey: zone\n        \
               matchLabelKeys: [app]\n        mismatchLabelKeys: [app]\n";
    let err = fails(
        &["apply bad pod"],
        c.kubectl_stdin(&["apply", "-f", "-"], bad),
    );
    for want in [
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and mismatchLabelKeys",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
}

#[test]
fn app_armor_profiles_and_their_deprecated_annotations_are_kept_in_step_on_create() {
    let c = TestCluster::start();
    let key = "container.apparmor.security.beta.kubernetes.io";
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: aa\n  annotations: {{{key}/legacy: localhost/legacy-prof}}\nspec:\n  \
         containers:\n  - {{name: legacy, image: busybox}}\n  - name: field\n    image: busybox\n    \
         securityContext: {{appArmorProfile: {{type: RuntimeDefault}}}}\n"
    ));
    let pod = json(&c.kubectl_ok(&["get", "pod", "aa", "-o", "json"]));
    assert_eq!(
        pod["metadata"]["annotations"][format!("{key}/field")],
        "runtime/default",
        "{pod}"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["securityContext"]["appArmorProfile"],
        json(r#"{"type":"Localhost","localhostProfile":"legacy-prof"}"#),
        "{pod}"
    );
    // The annotations are fixed once the pod exists, and must name a container.
    let out = c.kubectl(&[
        "annotate",
        "pod",
        "aa",
        "--overwrite",
        &format!("{key}/field=unconfined"),
    ]);
    let err = fails(&["annotate apparmor"], out);
    assert!(
        err.contains(&format!(
            "metadata.annotations[{key}/field]: Forbidden: may not remove or update AppArmor annotations"
        )),
        "{err}"
    );
    let bad = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\n  annotations: {{{key}/other: runtime/default}}\nspec:\n  \
         containers: [{{name: c, image: busybox}}]\n"
    );
    let err = fails(
        &["apply bad pod"],
        c.kubectl_stdin(&["apply", "-f", "-"], &bad),
    );
    assert!(
        err.contains(&format!(
            "metadata.annotations[{key}/other]: Invalid value: \"other\": container not found"
        )),
        "{err}"
    );
}

#[test]
fn a_body_of_the_wrong_type_gets_gos_decoding_error_and_creates_nothing() {
    let c = TestCluster::start();
    let args = ["create", "-f", "-"];
    let err = fails(
        &args,
        c.kubectl_stdin(
            &args,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: \"3\"\n  \
             selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    \
             spec: {containers: [{name: c, image: nginx}]}\n",
        ),
    );
    assert!(
        err.contains(
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal \
             string into Go struct field DeploymentSpec.spec.replicas of type int32"
        ),
        "{err}"
    );
    assert!(!c.kubectl(&["get", "deployment", "d"]).status.success());
    // A wrongly typed value is reported before an unknown field, as Go's decoder fails first.
    let err = fails(
        &args,
        c.kubectl_stdin(
            &args,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 1}\nbogus: 2\n",
        ),
    );
    assert!(
        err.contains(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal \
             number into Go struct field ConfigMap.data of type string"
        ),
        "{err}"
    );
}

#[test]
fn an_autoscaling_v1_client_loses_nothing_of_a_v2_autoscaler() {
    let c = TestCluster::start();
    // A v2 write cannot plant autoscaling/v1's round-trip annotations.
    let create = ["create", "-f", "-"];
    k1s_tests::ok(
        &create,
        c.kubectl_stdin(
            &create,
            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: rt\n  \
         annotations: {keep: \"yes\", autoscaling.alpha.kubernetes.io/conditions: \"[]\"}\nspec:\n  \
         scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: absent}\n  maxReplicas: 5\n  \
         metrics:\n  - type: Resource\n    resource: {name: memory, target: {type: AverageValue, averageValue: 500Mi}}\n  \
         - type: Resource\n    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}\n  \
         behavior: {scaleDown: {stabilizationWindowSeconds: 60}}\n",
        ),
    );
    let v1_url = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/rt";
    let v2_url = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/rt";
    let stored = json(&c.kubectl_ok(&["get", "--raw", v2_url]));
    assert_eq!(
        stored["metadata"]["annotations"],
        serde_json::json!({"keep": "yes"})
    );

    // autoscaling/v1 shows the CPU target and keeps the rest in upstream's annotations, in the
    // field order of upstream's Go types (the behavior as its internal type).
    let v1 = json(&c.kubectl_ok(&["get", "--raw", v1_url]));
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60, "{v1}");
    let annotations = &v1["metadata"]["annotations"];
    assert_eq!(
        annotations["autoscaling.alpha.kubernetes.io/metrics"],
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]"#,
        "{v1}"
    );
    assert_eq!(
        annotations["autoscaling.alpha.kubernetes.io/behavior"],
        r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}"#,
        "{v1}"
    );

    // A v1 read-modify-write (the controller may update the status meanwhile: retry a conflict).
    let file = c.scratch_dir().join("hpa-v1.json");
    let path = file.to_str().expect("a UTF-8 path");
    wait_until(Duration::from_secs(20), "a v1 replace", || {
        let mut v1 = json(&c.kubectl_ok(&["get", "--raw", v1_url]));
        v1["spec"]["maxReplicas"] = 7.into();
        std::fs::write(&file, v1.to_string()).expect("write the HPA");
        c.kubectl(&["replace", "-f", path])
            .status
            .success()
            .then_some(())
    });
    let v2 = json(&c.kubectl_ok(&["get", "--raw", v2_url]));
    assert_eq!(v2["spec"]["maxReplicas"], 7, "{v2}");
    assert_eq!(
        v2["metadata"]["annotations"],
        serde_json::json!({"keep": "yes"}),
        "{v2}"
    );
    let metrics: Vec<&str> = v2["spec"]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m["resource"]["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(metrics, ["memory", "cpu"], "{v2}");
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"],
        serde_json::json!({"type": "AverageValue", "averageValue": "500Mi"})
    );
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
}

#[test]
fn autoscalers_cron_job_time_zones_and_endpoint_slices_are_validated_through_kubectl() {
    let c = TestCluster::start();
    let refused =
        |what: &str, yaml: &str| fails(&[what], c.kubectl_stdin(&["apply", "-f", "-"], yaml));
    let expect = |err: &str, wants: &[&str]| {
        for want in wants {
            assert!(err.contains(want), "want {want:?} in {err}");
        }
    };
    // HorizontalPodAutoscaler metrics and behavior.
    let err = refused(
        "apply bad hpa",
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec:\n  \
         scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 5\n  \
         metrics:\n  - type: Pods\n    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}\n  \
         - type: External\n    external: {metric: {name: queue}, target: {type: AverageValue, averageValue: \"0\"}}\n  \
         behavior:\n    scaleUp:\n      stabilizationWindowSeconds: 4000\n      \
         policies: [{type: Pods, value: 0, periodSeconds: 15}]\n",
    );
    expect(
        &err,
        &[
            "The HorizontalPodAutoscaler \"web\" is invalid",
            "spec.metrics[0].pods: Required value: must populate information for the given metric source",
            "spec.metrics[1].external.target.averageValue: Invalid value: resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"0\", Format:\"DecimalSI\"}: must be positive",
            "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
            "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
        ],
    );
    c.apply(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec:\n  \
         scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 5\n  \
         behavior: {scaleDown: {stabilizationWindowSeconds: 60}}\n",
    );
    let behavior = json(&c.kubectl_ok(&["get", "hpa", "web", "-o", "jsonpath={.spec.behavior}"]));
    assert_eq!(behavior["scaleDown"]["selectPolicy"], "Max", "{behavior}");
    assert_eq!(
        behavior["scaleUp"]["policies"][0]["type"], "Pods",
        "{behavior}"
    );

    // CronJob time zones.
    c.kubectl_ok(&[
        "create",
        "cronjob",
        "nightly",
        "--image=busybox",
        "--schedule=0 3 * * *",
    ]);
    c.kubectl_ok(&[
        "patch",
        "cronjob",
        "nightly",
        "--type=merge",
        "-p",
        r#"{"spec":{"timeZone":"Europe/Paris"}}"#,
    ]);
    let tz = c.kubectl_ok(&[
        "get",
        "cronjob",
        "nightly",
        "-o",
        "jsonpath={.spec.timeZone}",
    ]);
    assert_eq!(tz.trim(), "Europe/Paris");
    for (zone, want) in [
        (
            "Local",
            "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ),
        (
            "Mars/Olympus",
            "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus",
        ),
    ] {
        let patch = format!(r#"{{"spec":{{"timeZone":"{zone}"}}}}"#);
        let err = fails(
            &["patch timeZone", zone],
            c.kubectl(&["patch", "cronjob", "nightly", "--type=merge", "-p", &patch]),
        );
        expect(&err, &[want]);
    }
    let err = fails(
        &["patch TZ schedule"],
        c.kubectl(&[
            "patch",
            "cronjob",
            "nightly",
            "--type=merge",
            "-p",
            r#"{"spec":{"schedule":"CRON_TZ=UTC 0 3 * * *"}}"#,
        ]),
    );
    expect(
        &err,
        &[
            "spec.schedule: Invalid value: \"CRON_TZ=UTC 0 3 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ],
    );

    // EndpointSlices.
    let err = refused(
        "apply bad slice",
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: bad}\naddressType: IPv4\n\
         endpoints:\n- addresses: [\"0.0.0.0\", \"2001:db8::1\"]\n  hostname: web.0\n\
         ports: [{name: HTTP, port: 80}, {name: HTTP, port: 81, protocol: ICMP}]\n",
    );
    expect(
        &err,
        &[
            "The EndpointSlice \"bad\" is invalid",
            "endpoints[0].addresses[0]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
            "endpoints[0].addresses[1]: Invalid value: \"2001:db8::1\": must be a valid IPv4 address",
            "endpoints[0].hostname: Invalid value: \"web.0\": must not contain dots",
            "ports[1].name: Duplicate value: \"HTTP\"",
            "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        ],
    );
    c.apply(
        "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: web}\naddressType: IPv4\n\
         endpoints:\n- addresses: [\"10.244.0.7\"]\nports: [{name: http, port: 80}]\n",
    );
    let err = fails(
        &["patch addressType"],
        c.kubectl(&[
            "patch",
            "endpointslice",
            "web",
            "--type=merge",
            "-p",
            r#"{"addressType":"FQDN","endpoints":[{"addresses":["web.example.com"]}]}"#,
        ]),
    );
    expect(
        &err,
        &["addressType: Invalid value: \"FQDN\": field is immutable"],
    );
}

#[test]
fn pod_status_writes_are_validated_as_upstream() {
    let c = TestCluster::start();
    c.kubectl_ok(&["run", "st", "--image=busybox", "--restart=Never"]);
    let patch = |status: &str| {
        c.kubectl(&[
            "patch",
            "pod",
            "st",
            "--subresource=status",
            "--type=merge",
            "-p",
            &format!(r#"{{"status":{status}}}"#),
        ])
    };
    let err = fails(&["qosClass"], patch(r#"{"qosClass":"Guaranteed"}"#));
    assert!(
        err.contains("status.qosClass: Invalid value: \"Guaranteed\": field is immutable"),
        "{err}"
    );
    let err = fails(
        &["podIPs"],
        patch(r#"{"podIPs":[{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]}"#),
    );
    assert!(
        err.contains("status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:\"10.0.0.1\"}, core.PodIP{IP:\"10.0.0.2\"}}: may specify no more than one IP for each IP family"),
        "{err}"
    );
    // A custom condition with a qualified type is taken.
    c.kubectl_ok(&[
        "patch",
        "pod",
        "st",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"example.com/ready","status":"True"}]}}"#,
    ]);
}

#[test]
fn pod_volumes_are_validated_as_upstream_through_kubectl() {
    let c = TestCluster::start();
    let bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: vols}\nspec:\n  containers: [{name: c, image: busybox}]\n  \
               volumes:\n  - name: info\n    downwardAPI:\n      items: [{path: node, fieldRef: {fieldPath: spec.nodeName}}]\n  \
               - name: scratch\n    emptyDir: {sizeLimit: -1Gi}\n";
    let err = fails(
        &["apply bad volumes"],
        c.kubectl_stdin(&["apply", "-f", "-"], bad),
    );
    for want in [
        "spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\"",
        "spec.volumes[1].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    // Pod-level resources are dropped: PodLevelResources is off in 1.33.
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: plr}\nspec:\n  resources: {limits: {cpu: '1'}}\n  \
         containers: [{name: c, image: busybox}]\n",
    );
    let spec = json(&c.kubectl_ok(&["get", "pod", "plr", "-o", "jsonpath={.spec}"]));
    assert_eq!(spec.get("resources"), None, "{spec}");
}

#[test]
fn resource_lists_are_rounded_to_milli_and_resource_names_validated_through_kubectl() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: tiny}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    \
         resources: {limits: {cpu: '0.0001', memory: 1024Mi}, requests: {memory: '0.5Gi'}}\n",
    );
    let res = json(&c.kubectl_ok(&[
        "get",
        "pod",
        "tiny",
        "-o",
        "jsonpath={.spec.containers[0].resources}",
    ]));
    assert_eq!(res["limits"]["cpu"], "1m", "{res}");
    assert_eq!(res["limits"]["memory"], "1Gi", "{res}");
    assert_eq!(res["requests"]["memory"], "512Mi", "{res}");
    assert_eq!(res["requests"]["cpu"], "1m", "{res}");
    let bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: names}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    \
               resources: {limits: {widgets: '1', example.com/gpu: 500m}, requests: {example.com/gpu: 500m}}\n";
    let err = fails(
        &["bad resource names"],
        c.kubectl_stdin(&["apply", "-f", "-"], bad),
    );
    for want in [
        "spec.containers[0].resources.limits[widgets]: Invalid value: \"widgets\": must be a standard resource type or fully qualified",
        "spec.containers[0].resources.limits[widgets]: Invalid value: \"widgets\": must be a standard resource for containers",
        "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: \"500m\": must be an integer",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    // ResourceQuota: names, scopes, rounding; scopes are fixed after create.
    let bad = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nspec:\n  hard: {storage: '1', pods: '-1'}\n  \
               scopes: [BestEffort, NotBestEffort]\n";
    let err = fails(&["bad quota"], c.kubectl_stdin(&["apply", "-f", "-"], bad));
    for want in [
        "spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota",
        "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0",
        "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\"]: conflicting scopes",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    c.apply("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nspec:\n  hard: {requests.cpu: '0.0001', pods: '4'}\n  scopes: [NotBestEffort]\n");
    let hard = json(&c.kubectl_ok(&["get", "resourcequota", "q", "-o", "jsonpath={.spec.hard}"]));
    assert_eq!(hard["requests.cpu"], "1m", "{hard}");
    let err = fails(
        &["quota scope change"],
        c.kubectl(&[
            "patch",
            "resourcequota",
            "q",
            "--type=merge",
            "-p",
            r#"{"spec":{"scopes":["Terminating"]}}"#,
        ]),
    );
    assert!(
        err.contains("spec.scopes: Invalid value: [\"Terminating\"]: field is immutable"),
        "{err}"
    );
    // LimitRange item resource names.
    let bad = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr}\nspec:\n  limits:\n  - type: Container\n    max: {storage: 1Gi}\n";
    let err = fails(
        &["bad limit range"],
        c.kubectl_stdin(&["apply", "-f", "-"], bad),
    );
    assert!(
        err.contains("spec.limits[0].max[storage]: Invalid value: \"storage\": must be a standard resource for containers"),
        "{err}"
    );
}

#[test]
fn persistent_volumes_endpoints_and_nodes_are_validated_through_kubectl() {
    let c = TestCluster::start();
    let bad = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  accessModes: [ReadWriteOnce]\n  \
               capacity: {storage: '0'}\n  persistentVolumeReclaimPolicy: Keep\n  local: {path: /data}\n";
    let err = fails(&["bad pv"], c.kubectl_stdin(&["apply", "-f", "-"], bad));
    for want in [
        "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero",
        "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\"",
        "spec.nodeAffinity: Required value: Local volume requires node affinity",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    c.apply(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  accessModes: [ReadWriteOnce]\n  \
         capacity: {storage: 1Gi}\n  hostPath: {path: /data}\n",
    );
    let err = fails(
        &["pv source change"],
        c.kubectl(&[
            "patch",
            "pv",
            "pv",
            "--type=merge",
            "-p",
            r#"{"spec":{"hostPath":{"path":"/other"}}}"#,
        ]),
    );
    assert!(
        err.contains("spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"),
        "{err}"
    );
    let bad = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec:\n  accessModes: [ReadWriteOnce]\n  \
               resources: {requests: {storage: 1Gi}}\n  dataSource: {kind: VolumeSnapshot, name: snap}\n";
    let err = fails(
        &["bad pvc data source"],
        c.kubectl_stdin(&["apply", "-f", "-"], bad),
    );
    assert!(
        err.contains("spec.dataSource: Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup"),
        "{err}"
    );
    let bad = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: ep}\nsubsets:\n- addresses: [{ip: 169.254.0.9}]\n  \
               ports: [{port: 80}, {port: 81}]\n";
    let err = fails(
        &["bad endpoints"],
        c.kubectl_stdin(&["apply", "-f", "-"], bad),
    );
    for want in [
        "subsets[0].addresses[0].ip: Invalid value: \"169.254.0.9\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        "subsets[0].ports[0].name: Required value",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    let bad = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  taints: [{key: a, effect: Never}]\n  \
               podCIDRs: [10.0.0.0/24, 10.1.0.0/24]\n";
    let err = fails(&["bad node"], c.kubectl_stdin(&["apply", "-f", "-"], bad));
    for want in [
        "metadata.taints[0].effect: Unsupported value: \"Never\"",
        "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one CIDR for each IP family",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    c.apply("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  podCIDR: 10.0.0.0/24\n  podCIDRs: [10.0.0.0/24]\n  providerID: k1s://n1\n");
    let err = fails(
        &["node provider change"],
        c.kubectl(&[
            "patch",
            "node",
            "n1",
            "--type=merge",
            "-p",
            r#"{"spec":{"providerID":"k1s://other"}}"#,
        ]),
    );
    assert!(
        err.contains("spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid"),
        "{err}"
    );
}

#[test]
fn events_k8s_io_writes_get_upstreams_strict_rules_and_core_events_the_legacy_ones() {
    let c = TestCluster::start();
    let bad = "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e1}\n\
               eventTime: '2026-11-28T10:00:00.000000Z'\nreportingController: k1s.io/test\n\
               regarding: {kind: Pod, name: p, namespace: default}\ntype: Odd\n\
               series: {count: 1, lastObservedTime: '2026-11-28T10:00:00.000000Z'}\n";
    let err = fails(
        &["bad v1 event"],
        c.kubectl_stdin(&["create", "-f", "-"], bad),
    );
    for want in [
        "reportingInstance: Required value",
        "action: Required value",
        "reason: Required value",
        "series.count: Invalid value: \"\": should be at least 2",
        "type: Invalid value: \"\": has invalid value: Odd",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    let good = "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e2}\n\
                eventTime: '2026-11-28T10:00:00.000000Z'\nreportingController: k1s.io/test\n\
                reportingInstance: test-1\naction: Testing\nreason: Tested\n\
                regarding: {kind: Pod, name: p, namespace: default}\ntype: Normal\n";
    c.apply(good);
    let err = fails(
        &["v1 event reason change"],
        c.kubectl(&[
            "patch",
            "events.v1.events.k8s.io",
            "e2",
            "--type=merge",
            "-p",
            r#"{"reason":"Other"}"#,
        ]),
    );
    assert!(
        err.contains("reason: Invalid value: \"Other\": field is immutable"),
        "{err}"
    );
    // core/v1 keeps the legacy rules only: a type outside Normal/Warning is accepted there.
    let legacy = "apiVersion: v1\nkind: Event\nmetadata: {name: e3}\ninvolvedObject: {kind: Pod, name: p, namespace: default}\n\
                  reason: Tested\ntype: Odd\n";
    c.apply(legacy);
    let bad = "apiVersion: v1\nkind: Event\nmetadata: {name: e4}\ninvolvedObject: {kind: Pod, name: p, namespace: other}\n";
    let err = fails(
        &["core event namespace"],
        c.kubectl_stdin(&["create", "-f", "-"], bad),
    );
    assert!(
        err.contains(
            "involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
        ),
        "{err}"
    );
}

#[test]
fn replica_sets_and_revisions_are_named_with_upstreams_template_hashes() {
    // The Deployment, DaemonSet and StatefulSet examples of the Kubernetes docs (the last with
    // a command Go's JSON encoder escapes). The names are kube-controller-manager 1.33's:
    // ComputeHash over go-spew's printing of the Go template for the first two,
    // HashControllerRevision over the json.Marshal'ed revision data for the last.
    let c = TestCluster::start();
    c.apply(DOCS_DEPLOYMENT);
    c.apply(DOCS_DAEMON_SET);
    c.apply(DOCS_STATEFUL_SET);
    let names = |kind: &str| {
        c.kubectl_ok(&["get", kind, "-o", "jsonpath={.items[*].metadata.name}"])
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    wait_until(Duration::from_secs(30), "replica set and revisions", || {
        (names("replicasets").len() == 1 && names("controllerrevisions").len() == 2).then_some(())
    });
    assert_eq!(names("replicasets"), ["nginx-deployment-647677fc66"]);
    assert_eq!(
        names("controllerrevisions"),
        ["fluentd-d495db57c", "web-b7c895755"]
    );
    let hash = c.kubectl_ok(&[
        "get",
        "pods",
        "-l",
        "app=nginx",
        "-o",
        r#"jsonpath={.items[0].metadata.labels.pod-template-hash}"#,
    ]);
    assert_eq!(hash, "647677fc66");
}

const DOCS_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
"#;

const DOCS_DAEMON_SET: &str = r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd
spec:
  selector:
    matchLabels:
      name: fluentd
  template:
    metadata:
      labels:
        name: fluentd
    spec:
      tolerations:
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      containers:
      - name: fluentd
        image: quay.io/fluentd_elasticsearch/fluentd:v2.5.2
        resources:
          limits:
            memory: 200Mi
          requests:
            cpu: 100m
            memory: 200Mi
"#;

const DOCS_STATEFUL_SET: &str = r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: nginx
  serviceName: "nginx"
  replicas: 2
  template:
    metadata:
      labels:
        app: nginx
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: nginx
        image: registry.k8s.io/nginx-slim:0.24
        command: ["sh", "-c", "a && b < c > d"]
        ports:
        - containerPort: 80
          name: web
        volumeMounts:
        - name: www
          mountPath: /usr/share/nginx/html
  volumeClaimTemplates:
  - metadata:
      name: www
    spec:
      accessModes: [ "ReadWriteOnce" ]
      storageClassName: "my-storage-class"
      resources:
        requests:
          storage: 1Gi
"#;

#[test]
fn objects_carry_the_zero_fields_upstreams_go_structs_write() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: ing}\nspec:\n  \
         defaultBackend: {service: {name: s, port: {number: 80}}}\n",
    );
    let status = c.kubectl_ok(&["get", "ingress", "ing", "-o", "jsonpath={.status}"]);
    assert_eq!(status, r#"{"loadBalancer":{}}"#);
    c.apply(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\nspec:\n  \
         selector: {matchLabels: {app: web}}\n  serviceName: web\n  replicas: 1\n  template:\n    \
         metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: c\n        \
         image: nginx\n        env: [{name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}]\n  \
         volumeClaimTemplates:\n  - metadata: {name: www}\n    spec: {accessModes: [ReadWriteOnce], \
         resources: {requests: {storage: 1Gi}}}\n",
    );
    let sts = json(&c.kubectl_ok(&["get", "statefulset", "web", "-o", "json"]));
    let spec = &sts["spec"];
    let claim = &spec["volumeClaimTemplates"][0];
    assert_eq!(claim["apiVersion"], "v1", "{claim}");
    assert_eq!(claim["kind"], "PersistentVolumeClaim", "{claim}");
    assert_eq!(
        claim["metadata"],
        serde_json::json!({ "name": "www", "creationTimestamp": null })
    );
    let template = &spec["template"];
    assert_eq!(
        template["metadata"],
        serde_json::json!({ "labels": { "app": "web" }, "creationTimestamp": null })
    );
    let env = &template["spec"]["containers"][0]["env"][0];
    assert_eq!(
        env["valueFrom"]["resourceFieldRef"]["divisor"], "0",
        "{env}"
    );
    // The pod's conditions, written by the kubelet, carry `lastProbeTime: null`.
    let conditions = wait_until(Duration::from_secs(30), "web-0 conditions", || {
        let out = c.kubectl(&["get", "pod", "web-0", "-o", "jsonpath={.status.conditions}"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.contains("Ready")).then(|| json(&text))
    });
    for condition in conditions.as_array().expect("conditions") {
        let fields = condition.as_object().expect("condition");
        assert_eq!(
            fields.get("lastProbeTime"),
            Some(&Value::Null),
            "{condition}"
        );
    }
}

#[test]
fn generation_is_kept_only_by_the_kinds_whose_upstream_strategy_keeps_it() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: v1\nkind: Service\nmetadata: {name: gen}\nspec: {ports: [{port: 80}]}\n---\n\
         apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gen}\nspec: {hard: {pods: \"2\"}}\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: gen}\nspec:\n  \
         accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n---\n\
         apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: gen}\nspec:\n  \
         maxReplicas: 2\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: gen}\n---\n\
         apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: gen}\n\
         spec: {controller: example.com/gen}\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: gen.example.com}\n\
         spec: {attachRequired: true}\n---\n\
         apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: gen}\nvalue: 10\n",
    );
    let generation = |kind: &str, name: &str| {
        c.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.generation}"])
    };
    for kind in ["service", "resourcequota", "pvc", "hpa"] {
        assert_eq!(
            generation(kind, "gen"),
            "",
            "{kind} has no generation upstream"
        );
    }
    assert_eq!(generation("ingressclass", "gen"), "1");
    assert_eq!(generation("csidriver", "gen.example.com"), "1");
    assert_eq!(generation("priorityclass", "gen"), "1");
    // A spec change bumps it; a PriorityClass never moves from 1.
    c.kubectl_ok(&[
        "patch",
        "ingressclass",
        "gen",
        "--type=merge",
        "-p",
        r#"{"spec":{"parameters":{"kind":"Params","name":"p"}}}"#,
    ]);
    assert_eq!(generation("ingressclass", "gen"), "2");
    // validateIngressClassSpecUpdate: the controller is immutable.
    let out = c.kubectl(&[
        "patch",
        "ingressclass",
        "gen",
        "--type=merge",
        "-p",
        r#"{"spec":{"controller":"example.com/other"}}"#,
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "The IngressClass \"gen\" is invalid: spec.controller: Invalid value: \
             \"example.com/other\": field is immutable"
        ),
        "{out:?}"
    );
    c.kubectl_ok(&[
        "patch",
        "priorityclass",
        "gen",
        "--type=merge",
        "-p",
        r#"{"description":"changed"}"#,
    ]);
    assert_eq!(generation("priorityclass", "gen"), "1");
    c.kubectl_ok(&["label", "service", "gen", "x=y"]);
    assert_eq!(generation("service", "gen"), "");
}

#[test]
fn types_outside_k8s_io_api_carry_their_go_zero_fields_too() {
    let c = TestCluster::start();
    // apiextensions/v1: a new CRD comes back with upstream's empty status, in Go's shape.
    let out = c.kubectl_stdin(
        &["create", "-o", "json", "-f", "-"],
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {name: zeros.fidelity.example.com}\nspec:\n  group: fidelity.example.com\n  \
         scope: Namespaced\n  names: {plural: zeros, kind: Zero}\n  versions:\n  - name: v1\n    \
         served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n",
    );
    assert!(out.status.success(), "{out:?}");
    let crd = json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        crd["status"],
        serde_json::json!({
            "acceptedNames": {"kind": "", "plural": ""},
            "conditions": null,
            "storedVersions": ["v1"],
        })
    );
    // meta/v1 Condition: a PDB's condition has `message: ""` though the controller sets none.
    c.apply(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: zeros}\nspec:\n  \
         minAvailable: 1\n  selector: {matchLabels: {app: none}}\n",
    );
    let condition = wait_until(Duration::from_secs(30), "PDB condition", || {
        let out = c.kubectl(&[
            "get",
            "pdb",
            "zeros",
            "-o",
            "jsonpath={.status.conditions[0]}",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && !text.is_empty()).then(|| json(&text))
    });
    assert_eq!(condition["reason"], "InsufficientPods", "{condition}");
    assert_eq!(condition["message"], "", "{condition}");
}

#[test]
fn a_new_deployment_has_one_replica_set_at_revision_one() {
    let c = TestCluster::start();
    for i in 0..5 {
        c.kubectl_ok(&[
            "create",
            "deployment",
            &format!("d{i}"),
            "--image=nginx",
            "--replicas=2",
        ]);
    }
    for i in 0..5 {
        let name = format!("d{i}");
        c.kubectl_ok(&[
            "rollout",
            "status",
            &format!("deployment/{name}"),
            "--timeout=60s",
        ]);
        let d = json(&c.kubectl_ok(&["get", "deployment", &name, "-o", "json"]));
        assert_eq!(
            d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1",
            "{d}"
        );
        assert_eq!(d["status"].get("collisionCount"), None, "{d}");
        let sets = c.kubectl_ok(&["get", "rs", "-l", &format!("app={name}"), "-o", "name"]);
        assert_eq!(sets.lines().count(), 1, "{name}: {sets}");
    }
}

#[test]
fn service_accounts_keep_secret_names_only_and_warn_of_enforce_mountable_secrets() {
    let c = TestCluster::start();
    let sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: robot\n  annotations: \
              {kubernetes.io/enforce-mountable-secrets: 'true'}\nsecrets:\n- {name: token, \
              namespace: other, kind: Secret}\n";
    let out = c.kubectl_stdin(&["create", "-f", "-"], sa);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "Warning: metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated \
             in v1.32+; prefer separate namespaces to isolate access to mounted secrets"
        ),
        "{stderr}"
    );
    let secrets = c.kubectl_ok(&["get", "sa", "robot", "-o", "jsonpath={.secrets}"]);
    assert_eq!(secrets, r#"[{"name":"token"}]"#);
}

#[test]
fn a_dry_run_service_update_shows_its_allocations_and_holds_none() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let patch = r#"{"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local"}}"#;
    let shown = json(&c.kubectl_ok(&[
        "patch",
        "service",
        "web",
        "--dry-run=server",
        "-p",
        patch,
        "-o",
        "json",
    ]));
    let node_port = shown["spec"]["ports"][0]["nodePort"]
        .as_i64()
        .expect("a nodePort");
    let health = shown["spec"]["healthCheckNodePort"]
        .as_i64()
        .expect("a health check port");
    assert!((30000..=32767).contains(&node_port) && (30000..=32767).contains(&health));
    let live = json(&c.kubectl_ok(&["get", "service", "web", "-o", "json"]));
    assert_eq!(live["spec"]["type"], "ClusterIP", "{live}");
    // Nothing was held: both ports can be taken by a real Service.
    for (name, port) in [("a", node_port), ("b", health)] {
        c.kubectl_ok(&[
            "create",
            "service",
            "nodeport",
            name,
            "--tcp=80:80",
            &format!("--node-port={port}"),
        ]);
    }
}

#[test]
fn the_kubernetes_endpoint_slice_stays_as_upstreams_endpoints_adapter_writes_it() {
    let c = TestCluster::start();
    // A selectorless Service's Endpoints get mirrored: once their slice exists, the mirroring
    // controller has run (it deleted the `kubernetes` slice when it carried its label).
    c.apply(
        "apiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec: {ports: [{port: 80}]}\n---\n\
         apiVersion: v1\nkind: Endpoints\nmetadata: {name: ext}\nsubsets:\n- addresses: [{ip: 10.1.2.3}]\n  \
         ports: [{port: 80}]\n",
    );
    wait_until(Duration::from_secs(30), "the mirrored slice of ext", || {
        let out = c.kubectl(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=ext",
            "-o",
            "name",
        ]);
        (!String::from_utf8_lossy(&out.stdout).trim().is_empty()).then_some(())
    });
    let slice = json(&c.kubectl_ok(&["get", "endpointslice", "kubernetes", "-o", "json"]));
    assert_eq!(
        slice["metadata"]["labels"],
        serde_json::json!({ "kubernetes.io/service-name": "kubernetes" }),
        "{slice}"
    );
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["endpoints"][0]["conditions"]["ready"], true,
        "{slice}"
    );
}

/// Go decodes a missing or null field into its zero value: service.go's status lifecycle test
/// appends a `metav1.Condition` without `lastTransitionTime` and expects the update to pass;
/// a Role rule without verbs reaches validation and is refused there, as upstream.
#[test]
fn missing_required_fields_are_zero_values_and_rbac_rules_are_validated() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    c.kubectl_ok(&[
        "patch",
        "service",
        "web",
        "--subresource=status",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/status/conditions","value":[{"type":"StatusUpdate","status":"True","reason":"E2E","message":"Set from e2e test","lastTransitionTime":null}]}]"#,
    ]);
    let condition = json(&c.kubectl_ok(&[
        "get",
        "service",
        "web",
        "-o",
        "jsonpath={.status.conditions[0]}",
    ]));
    assert_eq!(condition["reason"], "E2E", "{condition}");
    assert_eq!(condition["message"], "Set from e2e test", "{condition}");

    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: noverbs}\n\
         rules: [{apiGroups: [\"\"], resources: [pods]}]\n",
    );
    let err = fails(&["create"], out);
    assert!(
        err.contains(
            "The Role \"noverbs\" is invalid: rules[0].verbs: Required value: verbs must contain at least one value"
        ),
        "{err}"
    );
}

/// chunking.go: every page of a paged list that has a next one says how many objects follow
/// (`remainingItemCount`), in JSON and Table lists; the last page and selector lists do not.
#[test]
fn paged_lists_count_what_remains() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "paged"]);
    for i in 0..5 {
        c.kubectl_ok(&["create", "configmap", &format!("c{i}"), "-n", "paged"]);
    }
    // kube-root-ca.crt makes six.
    let total = c
        .kubectl_ok(&["get", "configmaps", "-n", "paged", "-o", "name"])
        .lines()
        .count() as u64;
    let page = |query: &str| {
        json(&c.kubectl_ok(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/paged/configmaps?{query}"),
        ]))
    };
    let first = page("limit=2");
    assert_eq!(
        first["metadata"]["remainingItemCount"],
        total - 2,
        "{first}"
    );
    let token = first["metadata"]["continue"].as_str().expect("continue");
    let second = page(&format!("limit=2&continue={token}"));
    assert_eq!(second["metadata"]["remainingItemCount"], total - 4);
    let last = page(&format!("limit=100&continue={token}"));
    assert!(
        last["metadata"].get("remainingItemCount").is_none(),
        "{last}"
    );
    let selected = page("limit=2&labelSelector=x!%3Dy");
    assert!(
        selected["metadata"].get("remainingItemCount").is_none(),
        "{selected}"
    );
}

/// A name is read decoded from the path, as upstream does: `kubectl get pod 'a-*'` asks for
/// `a-%2A` and is told `pods "a-*" not found`.
#[test]
fn names_in_paths_are_decoded() {
    let c = TestCluster::start();
    let err = fails(&["get", "pod"], c.kubectl(&["get", "pod", "a-*"]));
    assert!(err.contains(r#"pods "a-*" not found"#), "{err}");
}
