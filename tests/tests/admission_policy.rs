//! ValidatingAdmissionPolicy through the real server with kubectl: upstream's documentation
//! example (`replicas <= 5` on Deployments, Deny) with its exact message; Warn actions as
//! kubectl warnings and Audit actions in the audit log; params from a ConfigMap; a namespace
//! selector on the binding; matchConditions exempting a user; and bad policies and bindings
//! refused at creation with upstream's field errors.

use std::time::Duration;

use k1s_tests::{StartOptions, TestCluster, fails, stderr, wait_until};

const POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  matchConditions:
  - name: not-the-exempt-user
    expression: "request.userInfo.username != 'exempt'"
  validations:
  - expression: "object.spec.replicas <= 5"
"#;

fn binding(name: &str, actions: &str, extra: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: {name}\nspec:\n  policyName: demo-policy.example.com\n  validationActions: {actions}\n{extra}"
    )
}

fn deployment(name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n"
    )
}

/// Waits until a dry-run create of a 6-replica Deployment is refused (the policy cache follows
/// the store asynchronously) and returns kubectl's stderr.
fn wait_refused(c: &TestCluster, ns: &str) -> String {
    wait_until(Duration::from_secs(10), "the policy to be enforced", || {
        let out = c.kubectl_stdin(
            &["create", "--dry-run=server", "-n", ns, "-f", "-"],
            &deployment("nginx", 6),
        );
        (!out.status.success()).then(|| stderr(&out))
    })
}

#[test]
fn deny_warn_and_match_conditions_with_kubectl() {
    let dir = tempfile::tempdir().expect("tmp");
    let audit_policy = dir.path().join("audit.yaml");
    let log = dir.path().join("audit.log");
    std::fs::write(
        &audit_policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: apps, resources: [deployments]}]\n- level: None\n",
    )
    .expect("audit policy");
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--audit-policy-file".into(),
            audit_policy.to_string_lossy().to_string(),
            "--audit-log-path".into(),
            log.to_string_lossy().to_string(),
        ],
        ..Default::default()
    });
    c.apply(POLICY);
    c.apply(&binding("demo-binding-test.example.com", "[Deny]", ""));
    let err = wait_refused(&c, "default");
    assert!(
        err.contains(
            "The deployments \"nginx\" is invalid: : ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
        ),
        "{err}"
    );
    // Upstream's documented message, through `kubectl create deployment` too.
    let args = [
        "create",
        "deployment",
        "nginx",
        "--image=nginx",
        "--replicas=6",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(
            "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
        ),
        "{err}"
    );
    assert!(!c.kubectl(&["get", "deployment", "nginx"]).status.success());
    c.kubectl_ok(&[
        "create",
        "deployment",
        "small",
        "--image=nginx",
        "--replicas=2",
    ]);
    // Updates are checked too (the policy names `deployments`, not `deployments/scale`).
    let patch = [
        "patch",
        "deployment",
        "small",
        "-p",
        r#"{"spec":{"replicas":9}}"#,
    ];
    let err = fails(&patch, c.kubectl(&patch));
    assert!(err.contains("denied request: failed expression"), "{err}");
    // The match condition exempts one user (impersonated, as admin may).
    c.kubectl_ok(&[
        "create",
        "deployment",
        "exempted",
        "--image=nginx",
        "--replicas=7",
        "--as=exempt",
        "--as-group=system:masters",
    ]);

    // Warn + Audit instead of Deny: the create passes with kubectl's warning.
    c.apply(&binding(
        "demo-binding-test.example.com",
        "[Warn, Audit]",
        "",
    ));
    let out = wait_until(Duration::from_secs(10), "the Warn binding", || {
        let out = c.kubectl(&[
            "create",
            "deployment",
            "warned",
            "--image=nginx",
            "--replicas=6",
        ]);
        out.status.success().then_some(out)
    });
    assert!(
        stderr(&out).contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com': failed expression: object.spec.replicas <= 5"
        ),
        "{}",
        stderr(&out)
    );
    let event = wait_until(Duration::from_secs(5), "the audit annotation", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| {
                e["verb"] == "create"
                    && e["objectRef"]["resource"] == "deployments"
                    && e["stage"] == "ResponseComplete"
                    && e["annotations"]
                        .get("validation.policy.admission.k8s.io/validation_failure")
                        .is_some()
            })
    });
    let failure: serde_json::Value = serde_json::from_str(
        event["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .expect("the validation_failure annotation"),
    )
    .expect("JSON");
    assert_eq!(failure[0]["binding"], "demo-binding-test.example.com");
    assert_eq!(
        failure[0]["validationActions"],
        serde_json::json!(["Warn", "Audit"])
    );
}

const PARAM_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit.example.com
spec:
  failurePolicy: Fail
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  variables:
  - name: limit
    expression: "int(params.data.maxReplicas)"
  validations:
  - expression: "object.spec.replicas <= variables.limit"
    messageExpression: "'replicas must be no greater than ' + string(variables.limit)"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-prod
spec:
  policyName: replica-limit.example.com
  validationActions: [Deny]
  paramRef:
    name: replica-limit
    namespace: limits
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: prod
"#;

#[test]
fn params_namespace_selector_and_validation_errors() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "limits"]);
    c.kubectl_ok(&["create", "namespace", "prod"]);
    c.kubectl_ok(&["label", "namespace", "prod", "environment=prod"]);
    c.kubectl_ok(&["create", "namespace", "dev"]);
    c.apply(PARAM_POLICY);
    // No param object yet: Deny as parameterNotFoundAction says.
    let err = wait_refused(&c, "prod");
    assert!(
        err.contains(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{err}"
    );
    c.kubectl_ok(&[
        "create",
        "configmap",
        "replica-limit",
        "-n",
        "limits",
        "--from-literal=maxReplicas=3",
    ]);
    let err = wait_until(Duration::from_secs(10), "the param to be used", || {
        let e = wait_refused(&c, "prod");
        e.contains("replicas must be").then_some(e)
    });
    // reason Forbidden: a 403 with the Forbidden text.
    assert!(
        err.contains(
            "deployments.apps \"nginx\" is forbidden: ValidatingAdmissionPolicy 'replica-limit.example.com' with binding 'replica-limit-prod' denied request: replicas must be no greater than 3"
        ),
        "{err}"
    );
    c.kubectl_ok(&[
        "create",
        "deployment",
        "ok",
        "-n",
        "prod",
        "--image=nginx",
        "--replicas=3",
    ]);
    // The namespace selector leaves dev alone.
    c.kubectl_ok(&[
        "create",
        "deployment",
        "big",
        "-n",
        "dev",
        "--image=nginx",
        "--replicas=9",
    ]);

    // Bad policies and bindings are refused with upstream's field errors; nothing is stored.
    let bad = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: bad.example.com
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= params.max"
"#;
    let args = ["apply", "-f", "-"];
    let err = fails(&args, c.kubectl_stdin(&args, bad));
    assert!(
        err.contains("spec.validations[0].expression: Invalid value: \"object.spec.replicas <= params.max\": compilation failed: ERROR: <input>:1:25: undeclared reference to 'params' (in container '')"),
        "{err}"
    );
    assert!(
        !c.kubectl(&["get", "validatingadmissionpolicy", "bad.example.com"])
            .status
            .success()
    );
    let bad_binding = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata:\n  name: bad\nspec:\n  policyName: replica-limit.example.com\n  validationActions: [Deny, Warn]\n";
    let err = fails(&args, c.kubectl_stdin(&args, bad_binding));
    assert!(err.contains("must not contain both Deny and Warn"), "{err}");
    // Webhook configurations: match conditions must compile.
    let webhook = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: conditions.example.com
webhooks:
- name: conditions.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    url: https://127.0.0.1:1/
  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [configmaps]
  matchConditions:
  - name: broken
    expression: "object.metadata.name =="
"#;
    let err = fails(&args, c.kubectl_stdin(&args, webhook));
    assert!(
        err.contains("webhooks[0].matchConditions[0].expression: Invalid value"),
        "{err}"
    );
}

#[test]
fn webhook_match_conditions_skip_the_call() {
    let c = TestCluster::start();
    // The webhook is unreachable and fails closed: only requests its conditions exclude pass.
    let webhook = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: unreachable.example.com
webhooks:
- name: unreachable.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    url: https://127.0.0.1:1/
  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [configmaps]
  matchConditions:
  - name: only-checked
    expression: "has(object.metadata.labels) && 'checked' in object.metadata.labels"
"#;
    c.apply(webhook);
    let err = wait_until(Duration::from_secs(10), "the webhook to be called", || {
        let out = c.kubectl_stdin(
            &["create", "--dry-run=server", "-f", "-"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: checked\n  labels: {checked: 'yes'}\n",
        );
        (!out.status.success()).then(|| stderr(&out))
    });
    assert!(
        err.contains("failed calling webhook \"unreachable.example.com\""),
        "{err}"
    );
    // Without the label the condition is false: the webhook is not called.
    c.kubectl_ok(&["create", "configmap", "unlabelled", "--from-literal=k=v"]);
}

/// Upstream's e2e "should type check validation expressions": every policy gets
/// `status.typeChecking` for its generation; type confusion is reported per expression.
#[test]
fn policies_are_type_checked_into_their_status() {
    let c = TestCluster::start();
    let policy = |name: &str, expression: &str, message: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: {name}}}\nspec:\n  matchConstraints:\n    resourceRules:\n    - {{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}}\n  validations:\n  - expression: \"{expression}\"\n{message}"
        )
    };
    let status = |name: &str| -> serde_json::Value {
        let out = c.kubectl_ok(&[
            "get",
            "validatingadmissionpolicy",
            name,
            "-o",
            "jsonpath={.status}",
        ]);
        serde_json::from_str(if out.is_empty() { "null" } else { &out }).expect("status JSON")
    };
    c.apply(&policy("fine", "object.spec.replicas > 1", ""));
    let fine = wait_until(Duration::from_secs(20), "fine to be type checked", || {
        let s = status("fine");
        s["typeChecking"].is_object().then_some(s)
    });
    assert_eq!(
        fine,
        serde_json::json!({"observedGeneration": 1, "typeChecking": {}})
    );

    c.apply(&policy(
        "confused",
        "object.spec.replicas > '1'",
        "    messageExpression: \"'wants replicas > 1, got ' + object.spec.replicas\"\n",
    ));
    let confused = wait_until(
        Duration::from_secs(20),
        "confused to be type checked",
        || {
            let s = status("confused");
            s["typeChecking"].is_object().then_some(s)
        },
    );
    let warnings = confused["typeChecking"]["expressionWarnings"]
        .as_array()
        .expect("warnings");
    assert_eq!(warnings.len(), 2, "{confused}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression");
    assert!(
        warnings[0]["warning"]
            .as_str()
            .unwrap_or_default()
            .contains("found no matching overload for '_>_' applied to '(int, string)'"),
        "{confused}"
    );
    assert_eq!(
        warnings[1]["fieldRef"],
        "spec.validations[0].messageExpression"
    );
    assert!(
        warnings[1]["warning"]
            .as_str()
            .unwrap_or_default()
            .contains("found no matching overload for '_+_' applied to '(string, int)'"),
        "{confused}"
    );

    // A new generation is checked again.
    c.apply(&policy("confused", "object.spec.replicas > 1", ""));
    wait_until(
        Duration::from_secs(20),
        "the fixed policy re-checked",
        || {
            let s = status("confused");
            (s == serde_json::json!({"observedGeneration": 2, "typeChecking": {}})).then_some(())
        },
    );
}

/// The `authorizer` variable: a policy that lets only users who may delete Secrets in a
/// namespace create ConfigMaps there, asking this server's RBAC about the requesting user,
/// with `authorizer.requestResource` and a `reason()` in the message.
#[test]
fn the_authorizer_variable_asks_rbac_about_the_requester() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "authz"]);
    c.kubectl_ok(&[
        "create",
        "role",
        "cm-writer",
        "-n",
        "authz",
        "--verb=create,get",
        "--resource=configmaps",
    ]);
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-cm",
        "-n",
        "authz",
        "--role=cm-writer",
        "--user=alice",
    ]);
    c.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: secret-admins-only}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "authorizer.requestResource.check('create').allowed()"
  - expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('delete').allowed()"
    messageExpression: "'only secret admins may create configmaps here: ' + authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('delete').reason()"
  - expression: "!authorizer.serviceAccount('authz', 'nobody').group('').resource('secrets').check('list').allowed()"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: secret-admins-only}
spec:
  policyName: secret-admins-only
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: authz}}
"#,
    );
    let policy_status = c.kubectl_ok(&[
        "get",
        "validatingadmissionpolicy",
        "secret-admins-only",
        "-o",
        "jsonpath={.status.typeChecking}",
    ]);
    assert!(!policy_status.contains("undeclared"), "{policy_status}");
    // The admin (system:masters) may delete secrets: allowed.
    let admin = |name: &str| c.kubectl(&["create", "configmap", name, "-n", "authz"]);
    let err = wait_until(Duration::from_secs(10), "the policy to be enforced", || {
        let out = c.kubectl(&[
            "create",
            "configmap",
            "probe",
            "-n",
            "authz",
            "--as=alice",
            "--dry-run=server",
        ]);
        (!out.status.success()).then(|| stderr(&out))
    });
    assert!(
        err.contains(r#"ValidatingAdmissionPolicy 'secret-admins-only' with binding 'secret-admins-only' denied request: only secret admins may create configmaps here"#),
        "{err}"
    );
    assert!(admin("by-admin").status.success());
    // Once alice may delete secrets there, she may create configmaps too.
    c.kubectl_ok(&[
        "create",
        "role",
        "secret-admin",
        "-n",
        "authz",
        "--verb=delete",
        "--resource=secrets",
    ]);
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-secrets",
        "-n",
        "authz",
        "--role=secret-admin",
        "--user=alice",
    ]);
    wait_until(Duration::from_secs(10), "alice's new role to count", || {
        c.kubectl(&[
            "create",
            "configmap",
            "by-alice",
            "-n",
            "authz",
            "--as=alice",
        ])
        .status
        .success()
        .then_some(())
    });
    // Webhook match conditions see the authorizer too: who may delete ConfigMaps in `hooked`
    // skips this unreachable, fail-closed webhook; who may only create them is sent to it.
    c.kubectl_ok(&["create", "namespace", "hooked"]);
    c.kubectl_ok(&[
        "create",
        "role",
        "cm-creator",
        "-n",
        "hooked",
        "--verb=create",
        "--resource=configmaps",
    ]);
    c.kubectl_ok(&[
        "create",
        "rolebinding",
        "bob-cm",
        "-n",
        "hooked",
        "--role=cm-creator",
        "--user=bob",
    ]);
    c.apply(
        r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: unreachable-unless-admin.example.com}
webhooks:
- name: unreachable-unless-admin.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {url: "https://127.0.0.1:1/"}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: hooked}}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  matchConditions:
  - name: not-for-deleters
    expression: "!authorizer.requestResource.check('delete').allowed()"
"#,
    );
    let err = wait_until(
        Duration::from_secs(10),
        "the webhook to be called for bob",
        || {
            let out = c.kubectl(&["create", "configmap", "by-bob", "-n", "hooked", "--as=bob"]);
            (!out.status.success()).then(|| stderr(&out))
        },
    );
    assert!(
        err.contains("failed calling webhook \"unreachable-unless-admin.example.com\""),
        "{err}"
    );
    c.kubectl_ok(&["create", "configmap", "by-admin", "-n", "hooked"]);
}

/// validatingadmissionpolicy.go "should type check a CRD": a policy matching a custom resource
/// is type-checked against the CRD's schema (with ObjectMeta), warnings prefixed by its kind.
#[test]
fn policies_on_custom_resources_are_type_checked() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: crontabs.stable.example.com}\n\
         spec:\n  group: stable.example.com\n  scope: Namespaced\n  names: {plural: crontabs, singular: crontab, kind: CronTab}\n\
         \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n\
         \x20   schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {replicas: {type: integer}}}}}}\n",
    );
    c.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/crontabs.stable.example.com",
        "--timeout=30s",
    ]);
    c.apply(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: typecheck}\n\
         spec:\n  matchConstraints:\n    resourceRules: [{apiGroups: [stable.example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [crontabs]}]\n\
         \x20 validations:\n  - expression: \"object.spec.replicas > '1'\"\n  - expression: \"object.spec.maxRetries < 10\"\n\
         \x20 - expression: \"object.metadata.name != ''\"\n",
    );
    let warnings = wait_until(Duration::from_secs(30), "the type check", || {
        let out = c.kubectl_ok(&[
            "get",
            "validatingadmissionpolicy",
            "typecheck",
            "-o",
            "jsonpath={range .status.typeChecking.expressionWarnings[*]}{.fieldRef}|{.warning}{\"\\n---\\n\"}{end}",
        ]);
        (!out.is_empty()).then_some(out)
    });
    let found: Vec<&str> = warnings
        .split("\n---\n")
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(found.len(), 2, "{warnings}");
    assert!(
        found[0].starts_with("spec.validations[0].expression|stable.example.com/v1, Kind=CronTab:")
            && found[0].contains("found no matching overload for '_>_' applied to '(int, string)'"),
        "{warnings}"
    );
    assert!(
        found[1].starts_with("spec.validations[1].expression|")
            && found[1].contains("undefined field 'maxRetries'"),
        "{warnings}"
    );
}
