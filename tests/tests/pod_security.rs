//! PodSecurity admission as kubectl sees it: a namespace's enforce label refuses violating pods
//! with upstream's message, warn labels give `Warning:` lines for pods and workload templates,
//! bad label values are refused, and a stricter enforce label warns about the pods already there.

use k1s_tests::{TestCluster, fails, stderr};

const NGINX_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n  containers:\n  \
                         - name: c\n    image: nginx\n";

const RESTRICTED_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: ok\nspec:\n  \
     securityContext:\n    runAsNonRoot: true\n    seccompProfile: {type: RuntimeDefault}\n  \
     containers:\n  - name: c\n    image: nginx\n    securityContext:\n      \
     allowPrivilegeEscalation: false\n      capabilities: {drop: [ALL]}\n";

const PRIVILEGED_DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  \
     name: priv\nspec:\n  selector:\n    matchLabels: {app: priv}\n  template:\n    metadata:\n      \
     labels: {app: priv}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        \
     securityContext: {privileged: true}\n";

/// The restricted level's verdict on a plain container named `c`.
const RESTRICTED_DETAIL: &str = concat!(
    r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
    r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
    r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
    r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
);

#[test]
fn enforce_refuses_and_admits_as_upstream() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "strict"]);
    c.kubectl_ok(&[
        "label",
        "namespace",
        "strict",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    let args = ["create", "-n", "strict", "-f", "-"];
    let err = fails(&args, c.kubectl_stdin(&args, NGINX_POD));
    assert_eq!(
        err.trim_end(),
        format!(
            "Error from server (Forbidden): error when creating \"STDIN\": pods \"x\" is forbidden: violates PodSecurity \"restricted:latest\": {RESTRICTED_DETAIL}"
        )
    );
    // A pod meeting the restricted level is created, without warnings.
    let out = c.kubectl_stdin(&args, RESTRICTED_POD);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    // An older policy version checks less: before v1.8 only runAsNonRoot applied here.
    c.kubectl_ok(&[
        "label",
        "namespace",
        "strict",
        "pod-security.kubernetes.io/enforce-version=v1.7",
    ]);
    let err = fails(&args, c.kubectl_stdin(&args, NGINX_POD));
    assert!(
        err.contains(
            r#"violates PodSecurity "restricted:v1.7": runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)"#
        ),
        "{err}"
    );
}

#[test]
fn warn_label_warns_for_pod_templates_and_pods() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "watched"]);
    c.kubectl_ok(&[
        "label",
        "namespace",
        "watched",
        "pod-security.kubernetes.io/warn=baseline",
    ]);
    let args = ["apply", "-n", "watched", "-f", "-"];
    let out = c.kubectl_stdin(&args, PRIVILEGED_DEPLOYMENT);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "Warning: would violate PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)\n"
    );
    assert!(
        k1s_tests::stdout(&out).contains("deployment.apps/priv created"),
        "{}",
        k1s_tests::stdout(&out)
    );
    // Pods are warned about and still created.
    let out = c.kubectl(&[
        "run",
        "-n",
        "watched",
        "host",
        "--image=nginx",
        "--overrides",
        r#"{"spec": {"hostNetwork": true}}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "Warning: would violate PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)\n"
    );
}

#[test]
fn namespace_labels_are_validated_and_existing_pods_checked() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "apps"]);
    let label = |value: &str| {
        let arg = format!("pod-security.kubernetes.io/enforce={value}");
        c.kubectl(&["label", "--overwrite", "namespace", "apps", &arg])
    };
    let err = fails(&["label"], label("strict"));
    assert_eq!(
        err.trim_end(),
        "The Namespace \"apps\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
    let args = [
        "create",
        "namespace",
        "bad",
        "-o",
        "yaml",
        "--dry-run=server",
    ];
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bad\n  labels:\n    \
         pod-security.kubernetes.io/audit-version: \"1.25\"\n",
    );
    assert_eq!(
        fails(&args, out).trim_end(),
        "The Namespace \"bad\" is invalid: metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: \"1.25\": must be \"latest\" or \"v1.x\""
    );

    for (name, extra) in [
        ("web-1", "{}"),
        ("web-2", "{}"),
        ("host", r#"{"spec": {"hostPID": true}}"#),
    ] {
        c.kubectl_ok(&[
            "run",
            "-n",
            "apps",
            name,
            "--image=nginx",
            "--overrides",
            extra,
        ]);
    }
    let out = label("restricted");
    assert!(out.status.success(), "{}", stderr(&out));
    let restricted = "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile";
    assert_eq!(
        stderr(&out),
        format!(
            "Warning: existing pods in namespace \"apps\" violate the new PodSecurity enforce level \"restricted:latest\"\n\
             Warning: host: host namespaces, {restricted}\n\
             Warning: web-1 (and 1 other pod): {restricted}\n"
        )
    );
    assert_eq!(k1s_tests::stdout(&out), "namespace/apps labeled\n");
    // A more relaxed level checks nothing.
    let out = label("baseline");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn audit_label_annotates_the_audit_event() {
    let dir = tempfile::tempdir().expect("tmp");
    let policy = dir.path().join("policy.yaml");
    let log = dir.path().join("audit.log");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
         - level: Metadata\n  resources: [{group: '', resources: [pods]}]\n- level: None\n",
    )
    .expect("policy");
    let c = TestCluster::start_with(k1s_tests::StartOptions {
        extra_args: vec![
            "--audit-policy-file".into(),
            policy.to_string_lossy().to_string(),
            "--audit-log-path".into(),
            log.to_string_lossy().to_string(),
        ],
        ..Default::default()
    });
    c.kubectl_ok(&["create", "namespace", "audited"]);
    c.kubectl_ok(&[
        "label",
        "namespace",
        "audited",
        "pod-security.kubernetes.io/enforce=baseline",
        "pod-security.kubernetes.io/audit=restricted",
    ]);
    c.kubectl_ok(&["run", "-n", "audited", "c", "--image=nginx"]);
    let host = ["run", "-n", "audited", "host", "--image=nginx"];
    let mut refused = host.to_vec();
    refused.extend(["--overrides", r#"{"spec": {"hostIPC": true}}"#]);
    fails(&refused, c.kubectl(&refused));
    c.kubectl_ok(&["run", "c", "--image=nginx"]);
    let created = |ns: &str, code: u64| {
        k1s_tests::wait_until(std::time::Duration::from_secs(5), "the audit event", || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .find(|e| {
                    e["verb"] == "create"
                        && e["objectRef"]["namespace"] == ns
                        && e["responseStatus"]["code"] == code
                })
        })
    };
    let admitted = created("audited", 201);
    let annotations = &admitted["annotations"];
    assert_eq!(
        annotations["pod-security.kubernetes.io/enforce-policy"],
        "baseline:latest"
    );
    assert_eq!(
        annotations["pod-security.kubernetes.io/audit-violations"],
        format!("would violate PodSecurity \"restricted:latest\": {RESTRICTED_DETAIL}")
    );
    let denied = created("audited", 403);
    assert_eq!(
        denied["annotations"]["pod-security.kubernetes.io/enforce-policy"],
        "baseline:latest"
    );
    // The default namespace is privileged: the policy is recorded, nothing is evaluated.
    let default = created("default", 201);
    assert_eq!(
        default["annotations"]["pod-security.kubernetes.io/enforce-policy"],
        "privileged:latest"
    );
    assert!(default["annotations"]["pod-security.kubernetes.io/audit-violations"].is_null());
}
