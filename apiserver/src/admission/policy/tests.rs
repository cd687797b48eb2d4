//! Unit tests of ValidatingAdmissionPolicy validation, matching and dispatch.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use k1s_apimachinery::catalog::ResourceInfo;
use k1s_apimachinery::selector::LabelSelector;
use k1s_apimachinery::{ApiError, Reason};
use serde_json::{Value, json};

use super::*;
use crate::admission::Operation;
use crate::admission::conditions::{self, MatchResult, WEBHOOK_VARIABLES};

/// Params served from a list, recording the reads.
#[derive(Default)]
struct Params {
    objects: Vec<Value>,
    reads: Mutex<Vec<String>>,
}

#[async_trait]
impl ParamSource for Params {
    async fn get(
        &self,
        info: &'static ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, ApiError> {
        self.reads.lock().unwrap().push(format!(
            "{}/{}/{name}",
            info.resource,
            namespace.unwrap_or("")
        ));
        Ok(self
            .objects
            .iter()
            .find(|o| {
                o["metadata"]["name"] == name && o["metadata"]["namespace"].as_str() == namespace
            })
            .cloned())
    }
    async fn list(
        &self,
        _info: &'static ResourceInfo,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<Vec<Value>, ApiError> {
        Ok(self
            .objects
            .iter()
            .filter(|o| o["metadata"]["namespace"].as_str() == namespace)
            .filter(|o| selector.matches_json(o.pointer("/metadata/labels")))
            .cloned()
            .collect())
    }
}

fn policy(name: &str, spec: Value) -> Value {
    let mut obj = json!({"metadata": {"name": name}, "spec": spec});
    crate::strategies::for_resource(
        k1s_apimachinery::catalog::find(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
        )
        .unwrap(),
    )
    .default(&mut obj);
    obj
}

fn binding(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": spec})
}

fn deployments_rule() -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]})
}

fn replicas_policy() -> Value {
    policy(
        "demo-policy.example.com",
        json!({"matchConstraints": deployments_rule(),
               "validations": [{"expression": "object.spec.replicas <= 5"}]}),
    )
}

fn attrs(kind: &str, resource: &str, group: &str, ns: &str, name: &str) -> AdmissionAttributes {
    AdmissionAttributes {
        operation: Operation::Create,
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        resource: resource.into(),
        namespace: ns.into(),
        name: name.into(),
        namespace_labels: Some(BTreeMap::new()),
        ..Default::default()
    }
}

fn deployment(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "nginx", "namespace": "default"},
           "spec": {"replicas": replicas}})
}

async fn run(
    d: &PolicyDispatcher,
    a: &AdmissionAttributes,
    obj: &Value,
    params: &Params,
) -> Result<PolicyOutcome, ApiError> {
    let c = d.candidates(a);
    d.validate(
        &c,
        a,
        obj,
        Some(&json!({"metadata": {"name": "default"}})),
        params,
    )
    .await
}

fn dispatcher(policies: &[Value], bindings: &[Value]) -> PolicyDispatcher {
    let d = PolicyDispatcher::new();
    d.set_policies(policies);
    d.set_bindings(bindings);
    d
}

#[tokio::test]
async fn deny_gives_upstreams_message_reason_and_code() {
    let d = dispatcher(
        &[replicas_policy()],
        &[binding(
            "demo-binding-test.example.com",
            json!({"policyName": "demo-policy.example.com", "validationActions": ["Deny"]}),
        )],
    );
    let a = attrs("Deployment", "deployments", "apps", "default", "nginx");
    let err = run(&d, &a, &deployment(6), &Params::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "deployments.apps \"nginx\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
    );
    assert_eq!((err.code, err.reason), (422, Reason::Invalid));
    let details = err.details.unwrap();
    assert_eq!(details.kind, "deployments");
    assert_eq!(details.causes.len(), 1);
    assert!(
        run(&d, &a, &deployment(5), &Params::default())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn warn_audit_message_expression_and_reason() {
    let p = policy(
        "p",
        json!({"matchConstraints": deployments_rule(),
               "validations": [{"expression": "object.spec.replicas <= 5",
                                "messageExpression": "'replicas is ' + string(object.spec.replicas)",
                                "reason": "Forbidden"}],
               "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]}),
    );
    let d = dispatcher(
        &[p],
        &[binding(
            "b",
            json!({"policyName": "p", "validationActions": ["Warn", "Audit"]}),
        )],
    );
    let a = attrs("Deployment", "deployments", "apps", "default", "nginx");
    let out = run(&d, &a, &deployment(7), &Params::default())
        .await
        .unwrap();
    assert_eq!(
        out.warnings,
        vec!["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': replicas is 7"]
    );
    assert_eq!(out.audit_annotations["p/replicas"], "7");
    let failure: Value =
        serde_json::from_str(&out.audit_annotations[VALIDATION_FAILURE_ANNOTATION]).unwrap();
    assert_eq!(
        failure,
        json!([{"message": "replicas is 7", "policy": "p", "binding": "b",
                "expressionIndex": 0, "validationActions": ["Warn", "Audit"]}])
    );
    let d = dispatcher(
        &[policy(
            "p",
            json!({"matchConstraints": deployments_rule(),
                   "validations": [{"expression": "false", "reason": "Forbidden", "message": "no"}]}),
        )],
        &[binding(
            "b",
            json!({"policyName": "p", "validationActions": ["Deny"]}),
        )],
    );
    let err = run(&d, &a, &deployment(1), &Params::default())
        .await
        .unwrap_err();
    assert_eq!((err.code, err.reason), (403, Reason::Forbidden));
    assert!(
        err.message.ends_with("denied request: no"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn params_by_name_and_missing_params() {
    let p = policy(
        "p",
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
               "matchConstraints": deployments_rule(),
               "validations": [{"expression": "object.spec.replicas <= int(params.data.max)"}]}),
    );
    let b = binding(
        "b",
        json!({"policyName": "p", "validationActions": ["Deny"],
               "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
    );
    let d = dispatcher(&[p], &[b]);
    let a = attrs("Deployment", "deployments", "apps", "default", "nginx");
    let params = Params {
        objects: vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "limits", "namespace": "default"}, "data": {"max": "3"}})],
        ..Default::default()
    };
    assert!(run(&d, &a, &deployment(3), &params).await.is_ok());
    let err = run(&d, &a, &deployment(4), &params).await.unwrap_err();
    assert!(
        err.message
            .contains("failed expression: object.spec.replicas <= int(params.data.max)")
    );
    // The param is looked up in the request's namespace.
    assert_eq!(params.reads.lock().unwrap()[0], "configmaps/default/limits");
    let other = attrs("Deployment", "deployments", "apps", "other", "nginx");
    let err = run(&d, &other, &deployment(1), &params).await.unwrap_err();
    assert!(
        err.message.ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn params_by_selector_each_evaluated() {
    let p = policy(
        "p",
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
               "matchConstraints": deployments_rule(),
               "validations": [{"expression": "object.spec.replicas <= int(params.data.max)",
                                "messageExpression": "'max ' + params.data.max"}]}),
    );
    let b = binding(
        "b",
        json!({"policyName": "p", "validationActions": ["Warn"],
               "paramRef": {"selector": {"matchLabels": {"limit": "yes"}},
                            "namespace": "limits", "parameterNotFoundAction": "Allow"}}),
    );
    let d = dispatcher(&[p], &[b]);
    let cm = |name: &str, max: &str| {
        json!({"metadata": {"name": name, "namespace": "limits", "labels": {"limit": "yes"}},
               "data": {"max": max}})
    };
    let params = Params {
        objects: vec![cm("a", "2"), cm("b", "4")],
        ..Default::default()
    };
    let a = attrs("Deployment", "deployments", "apps", "default", "nginx");
    let out = run(&d, &a, &deployment(3), &params).await.unwrap();
    assert_eq!(out.warnings.len(), 1);
    assert!(out.warnings[0].ends_with(": max 2"));
    // Allow with nothing found: nothing to check.
    assert!(
        run(&d, &a, &deployment(9), &Params::default())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn variables_are_lazy_and_match_conditions_filter() {
    let p = policy(
        "p",
        json!({"matchConstraints": deployments_rule(),
               "matchConditions": [{"name": "not-admin", "expression": "request.userInfo.username != 'admin'"}],
               "variables": [{"name": "broken", "expression": "object.nope.deeper"},
                             {"name": "replicas", "expression": "object.spec.replicas"},
                             {"name": "big", "expression": "variables.replicas > 5"}],
               "validations": [{"expression": "!variables.big"}]}),
    );
    let d = dispatcher(
        &[p],
        &[binding(
            "b",
            json!({"policyName": "p", "validationActions": ["Deny"]}),
        )],
    );
    let mut a = attrs("Deployment", "deployments", "apps", "default", "nginx");
    a.user.name = "alice".into();
    assert!(
        run(&d, &a, &deployment(5), &Params::default())
            .await
            .is_ok()
    );
    assert!(
        run(&d, &a, &deployment(6), &Params::default())
            .await
            .is_err()
    );
    a.user.name = "admin".into();
    assert!(
        run(&d, &a, &deployment(6), &Params::default())
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn failure_policy_decides_on_errors() {
    let spec = |fp: &str| {
        json!({"failurePolicy": fp, "matchConstraints": deployments_rule(),
               "validations": [{"expression": "object.spec.missing == 1"}]})
    };
    let b = binding(
        "b",
        json!({"policyName": "p", "validationActions": ["Deny"]}),
    );
    let a = attrs("Deployment", "deployments", "apps", "default", "nginx");
    let d = dispatcher(&[policy("p", spec("Ignore"))], std::slice::from_ref(&b));
    assert!(
        run(&d, &a, &deployment(1), &Params::default())
            .await
            .is_ok()
    );
    let d = dispatcher(&[policy("p", spec("Fail"))], &[b]);
    let err = run(&d, &a, &deployment(1), &Params::default())
        .await
        .unwrap_err();
    assert!(
        err.message.contains(
            "expression 'object.spec.missing == 1' resulted in error: no such key: missing"
        ),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn selectors_rules_and_exclusions() {
    let p = policy(
        "p",
        json!({"matchConstraints": {
                  "resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                                     "operations": ["*"], "resources": ["*"]}],
                  "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                            "operations": ["*"], "resources": ["secrets"]}]},
               "validations": [{"expression": "false"}]}),
    );
    let b = binding(
        "b",
        json!({"policyName": "p", "validationActions": ["Deny"],
               "matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}),
    );
    let d = dispatcher(&[p], &[b]);
    let mut a = attrs("ConfigMap", "configmaps", "", "default", "c");
    let cm = json!({"metadata": {"name": "c"}});
    assert!(run(&d, &a, &cm, &Params::default()).await.is_ok());
    a.namespace_labels = Some(BTreeMap::from([("env".into(), "prod".into())]));
    assert!(run(&d, &a, &cm, &Params::default()).await.is_err());
    let secret = attrs("Secret", "secrets", "", "default", "s");
    assert!(d.candidates(&secret).is_empty());
    // The policy kinds themselves are never subject to policies.
    let vap = attrs(
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        "admissionregistration.k8s.io",
        "",
        "p",
    );
    assert!(d.candidates(&vap).is_empty());
}

#[test]
fn unbound_policies_cost_nothing() {
    let d = dispatcher(&[replicas_policy()], &[]);
    assert!(!d.is_active());
    let d = dispatcher(
        &[replicas_policy()],
        &[binding(
            "b",
            json!({"policyName": "demo-policy.example.com", "validationActions": ["Deny"]}),
        )],
    );
    assert!(d.is_active());
    assert!(
        d.candidates(&attrs("ConfigMap", "configmaps", "", "default", "c"))
            .is_empty()
    );
}

fn fields(errs: &[k1s_apimachinery::FieldError]) -> Vec<String> {
    errs.iter().map(|e| format!("{e}")).collect()
}

#[test]
fn policy_validation_reports_compile_errors_at_their_field() {
    let p = policy(
        "p",
        json!({"matchConstraints": deployments_rule(),
               "validations": [{"expression": "foo > 1"}, {"expression": "object.spec.replicas <"}]}),
    );
    let errs = validate_policy(&p);
    let shown = fields(&errs);
    assert_eq!(errs.len(), 2, "{shown:?}");
    assert_eq!(errs[0].field, "spec.validations[0].expression");
    assert!(
        shown[0].contains(
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')"
        ),
        "{}",
        shown[0]
    );
    assert_eq!(errs[1].field, "spec.validations[1].expression");
    // params only exist with a paramKind; variables must be declared.
    let p = policy(
        "p",
        json!({"matchConstraints": deployments_rule(),
               "variables": [{"name": "a", "expression": "variables.b"}, {"name": "b", "expression": "1"}],
               "validations": [{"expression": "params.x == 1"}]}),
    );
    let shown = fields(&validate_policy(&p));
    assert!(
        shown.iter().any(
            |e| e.contains("spec.variables[0].expression") && e.contains("undefined field 'b'")
        ),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.contains("spec.validations[0].expression")
                && e.contains("undeclared reference to 'params'")),
        "{shown:?}"
    );
    let empty = policy("p", json!({}));
    let shown = fields(&validate_policy(&empty));
    assert!(
        shown.contains(&"spec.matchConstraints: Required value".to_string()),
        "{shown:?}"
    );
    assert!(shown.contains(&"spec.validations: Required value: validations or auditAnnotations must contain at least one item".to_string()), "{shown:?}");
    assert!(validate_policy(&replicas_policy()).is_empty());
}

#[test]
fn binding_validation() {
    let shown = fields(&validate_binding(&binding("b", json!({}))));
    assert_eq!(
        shown,
        vec![
            "spec.policyName: Required value",
            "spec.validationActions: Required value: at least one validation action is required"
        ]
    );
    let shown = fields(&validate_binding(&binding(
        "b",
        json!({"policyName": "p", "validationActions": ["Deny", "Warn", "Deny", "Log"],
               "paramRef": {"name": "x", "selector": {}}}),
    )));
    assert!(
        shown.contains(&"spec.validationActions[2]: Duplicate value: \"Deny\"".to_string()),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.starts_with("spec.validationActions[3]: Unsupported value: \"Log\"")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.contains("must not contain both Deny and Warn")),
        "{shown:?}"
    );
    assert!(
        shown.contains(
            &"spec.paramRef.name: Forbidden: name and selector are mutually exclusive".to_string()
        ),
        "{shown:?}"
    );
    assert!(
        shown.contains(&"spec.paramRef.parameterNotFoundAction: Required value".to_string()),
        "{shown:?}"
    );
}

#[test]
fn webhook_match_conditions() {
    let mut errs = Vec::new();
    let conds = match_conditions(
        Some(&json!([
            {"name": "not-kube-system", "expression": "request.namespace != 'kube-system'"},
            {"name": "labelled", "expression": "has(object.metadata.labels) && 'x' in object.metadata.labels"}
        ])),
        "webhooks[0].matchConditions",
        WEBHOOK_VARIABLES,
        &mut errs,
    );
    assert!(errs.is_empty(), "{:?}", fields(&errs));
    let a = attrs("ConfigMap", "configmaps", "", "default", "c");
    let labelled = json!({"metadata": {"name": "c", "labels": {"x": "1"}}});
    let plain = json!({"metadata": {"name": "c"}});
    let act = conditions::webhook_activation(&a, &labelled, None);
    assert_eq!(conditions::evaluate(&conds, &act), MatchResult::Matches);
    let act = conditions::webhook_activation(&a, &plain, None);
    assert_eq!(
        conditions::evaluate(&conds, &act),
        MatchResult::Excluded("labelled".into())
    );
    // Cluster-scoped requests have no request.namespace: an error, not a match.
    let cluster = attrs("Node", "nodes", "", "", "n");
    let act = conditions::webhook_activation(&cluster, &labelled, None);
    assert!(
        matches!(conditions::evaluate(&conds, &act), MatchResult::Error(e) if e.contains("no such key"))
    );
    // Validation: duplicates, too many, compile errors.
    let many: Vec<Value> = (0..65)
        .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
        .collect();
    let mut errs = Vec::new();
    match_conditions(Some(&Value::Array(many)), "m", WEBHOOK_VARIABLES, &mut errs);
    assert_eq!(
        fields(&errs),
        vec!["m: Too many: 65: must have at most 64 items"]
    );
    let mut errs = Vec::new();
    match_conditions(
        Some(
            &json!([{"name": "a", "expression": "true"}, {"name": "a", "expression": "params.x"}]),
        ),
        "m",
        WEBHOOK_VARIABLES,
        &mut errs,
    );
    let shown = fields(&errs);
    assert!(
        shown
            .iter()
            .any(|e| e.starts_with("m[1].expression: Invalid value")
                && e.contains("undeclared reference to 'params'")),
        "{shown:?}"
    );
    assert!(
        shown.contains(&"m[1].name: Duplicate value: \"a\"".to_string()),
        "{shown:?}"
    );
}

#[tokio::test]
async fn delete_sees_the_old_object() {
    let p = policy(
        "p",
        json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                   "operations": ["DELETE"], "resources": ["configmaps"]}]},
               "validations": [{"expression": "object == null && !('keep' in oldObject.metadata.labels)",
                                "message": "this ConfigMap is kept"}]}),
    );
    let d = dispatcher(
        &[p],
        &[binding(
            "b",
            json!({"policyName": "p", "validationActions": ["Deny"]}),
        )],
    );
    let mut a = attrs("ConfigMap", "configmaps", "", "default", "c");
    a.operation = Operation::Delete;
    a.old_object = Some(json!({"metadata": {"name": "c", "labels": {"keep": "yes"}}}));
    let err = run(&d, &a, &Value::Null, &Params::default())
        .await
        .unwrap_err();
    assert!(
        err.message
            .ends_with("denied request: this ConfigMap is kept"),
        "{}",
        err.message
    );
    a.old_object = Some(json!({"metadata": {"name": "c", "labels": {}}}));
    assert!(run(&d, &a, &Value::Null, &Params::default()).await.is_ok());
    // Creates are not selected by the DELETE rule.
    a.operation = Operation::Create;
    assert!(d.candidates(&a).is_empty());
}
