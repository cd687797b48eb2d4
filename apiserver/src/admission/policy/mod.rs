//! ValidatingAdmissionPolicy enforcement, as upstream's `ValidatingAdmissionPolicy` admission
//! plugin (`k8s.io/apiserver/pkg/admission/plugin/policy/validating`): the policies and
//! bindings are followed from the store and compiled once per change; a request is checked
//! against every policy whose match constraints select it and, for each of its bindings that
//! selects it, against each param object (`paramKind` + `paramRef`). Denials follow the
//! binding's `validationActions` (Deny, Warn, Audit).
//!
//! Requests cost nothing when no binding refers to an existing policy, and only a rule check
//! when one does but its rules do not select the request. Param objects are read from the
//! registry (a store read) when a policy that uses them matches.

pub mod authz;
mod compile;
mod eval;
mod matching;
pub mod typecheck;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::selector::LabelSelector;
use k1s_apimachinery::status::StatusCause;
use k1s_apimachinery::{ApiError, FieldError, GroupResource, Reason};
use serde_json::{Value, json};

pub use compile::{compile_binding, compile_policy, match_conditions};

use super::AdmissionAttributes;
use super::conditions::request_value;
use super::webhook::{FailurePolicy, in_version};
use crate::apiextensions::cel::Activation;
use compile::{Binding, Policy};

/// The audit annotation key of Audit validation actions.
pub const VALIDATION_FAILURE_ANNOTATION: &str =
    "validation.policy.admission.k8s.io/validation_failure";

/// Where param objects come from.
#[async_trait]
pub trait ParamSource: Send + Sync {
    /// One object, `Ok(None)` when it does not exist.
    async fn get(
        &self,
        info: &'static ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, ApiError>;
    /// The objects matching `selector`.
    async fn list(
        &self,
        info: &'static ResourceInfo,
        namespace: Option<&str>,
        selector: &LabelSelector,
    ) -> Result<Vec<Value>, ApiError>;
}

/// A policy with the bindings that refer to it.
#[derive(Debug)]
struct Hook {
    policy: Arc<Policy>,
    bindings: Vec<Arc<Binding>>,
}

#[derive(Debug, Default)]
struct State {
    hooks: Vec<Arc<Hook>>,
}

/// The current policies and bindings, compiled, and the dispatch of requests to them.
#[derive(Debug, Default)]
pub struct PolicyDispatcher {
    state: RwLock<Arc<State>>,
    policies: RwLock<BTreeMap<String, Arc<Policy>>>,
    bindings: RwLock<BTreeMap<String, Arc<Binding>>>,
    /// What `authorizer` checks ask (unset: expressions see no authorizer).
    authorizer: RwLock<Option<Arc<dyn authz::Authorize>>>,
}

/// The policies a request may meet (their constraint rules select it).
pub struct Candidates(Vec<Arc<Hook>>);

impl Candidates {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What a passing policy check produced.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PolicyOutcome {
    pub warnings: Vec<String>,
    pub audit_annotations: BTreeMap<String, String>,
}

fn name_of(v: &Value) -> String {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl PolicyDispatcher {
    pub fn new() -> Self {
        Self::default()
    }

    /// The authorizer behind the `authorizer` variable.
    pub fn set_authorizer(&self, authorizer: Arc<dyn authz::Authorize>) {
        if let Ok(mut a) = self.authorizer.write() {
            *a = Some(authorizer);
        }
    }

    fn authorizer(&self) -> Option<Arc<dyn authz::Authorize>> {
        self.authorizer.read().ok().and_then(|a| a.clone())
    }

    /// Replaces the policies (whole ValidatingAdmissionPolicy objects).
    pub fn set_policies(&self, objects: &[Value]) {
        let compiled = objects
            .iter()
            .map(|o| (name_of(o), Arc::new(compile_policy(o).0)))
            .collect();
        if let Ok(mut p) = self.policies.write() {
            *p = compiled;
        }
        self.rebuild();
    }

    /// Replaces the bindings (whole ValidatingAdmissionPolicyBinding objects).
    pub fn set_bindings(&self, objects: &[Value]) {
        let parsed = objects
            .iter()
            .map(|o| (name_of(o), Arc::new(compile_binding(o).0)))
            .collect();
        if let Ok(mut b) = self.bindings.write() {
            *b = parsed;
        }
        self.rebuild();
    }

    /// Pairs bindings with their policies (in policy name order, bindings by name).
    fn rebuild(&self) {
        let policies = self.policies.read().map(|p| p.clone()).unwrap_or_default();
        let bindings = self.bindings.read().map(|b| b.clone()).unwrap_or_default();
        let hooks = policies
            .into_values()
            .filter_map(|policy| {
                let bound: Vec<_> = bindings
                    .values()
                    .filter(|b| b.policy_name == policy.name)
                    .cloned()
                    .collect();
                (!bound.is_empty()).then(|| {
                    Arc::new(Hook {
                        policy,
                        bindings: bound,
                    })
                })
            })
            .collect();
        if let Ok(mut s) = self.state.write() {
            *s = Arc::new(State { hooks });
        }
    }

    fn snapshot(&self) -> Arc<State> {
        self.state
            .read()
            .map(|s| Arc::clone(&s))
            .unwrap_or_default()
    }

    /// True when some binding refers to an existing policy.
    pub fn is_active(&self) -> bool {
        !self.snapshot().hooks.is_empty()
    }

    /// The policies whose constraint rules select the request (selectors not yet checked).
    /// `attrs` needs no namespace labels or old object for this.
    pub fn candidates(&self, attrs: &AdmissionAttributes) -> Candidates {
        if super::webhook::is_exempt_admission_configuration_resource(attrs) {
            return Candidates(Vec::new());
        }
        let state = self.snapshot();
        Candidates(
            state
                .hooks
                .iter()
                // A policy without constraints matches nothing (as upstream).
                .filter(|h| {
                    h.policy
                        .match_constraints
                        .as_ref()
                        .is_some_and(|m| matching::rules_match(m, attrs).is_some())
                })
                .cloned()
                .collect(),
        )
    }

    /// Checks the request against the candidate policies. `obj` is the object in the
    /// request's version (`Null` for DELETE), `attrs` carries the old object and namespace
    /// labels, `namespace` is the request's Namespace object.
    pub async fn validate(
        &self,
        candidates: &Candidates,
        attrs: &AdmissionAttributes,
        obj: &Value,
        namespace: Option<&Value>,
        params: &dyn ParamSource,
    ) -> Result<PolicyOutcome, ApiError> {
        let mut out = PolicyOutcome::default();
        let mut denied: Vec<(String, Option<String>, eval::Denial)> = Vec::new();
        for hook in &candidates.0 {
            let sources = Sources {
                params,
                authorizer: self.authorizer(),
            };
            dispatch_one(hook, attrs, obj, namespace, &sources, &mut out, &mut denied).await?;
        }
        match denied.into_iter().next() {
            None => Ok(out),
            Some((policy, binding, d)) => Err(denial_error(attrs, &policy, binding.as_deref(), &d)),
        }
    }
}

/// Upstream's error for the first denial: `NewForbidden` text with the validation's reason and
/// its code, and the message as a cause.
fn denial_error(
    attrs: &AdmissionAttributes,
    policy: &str,
    binding: Option<&str>,
    d: &eval::Denial,
) -> ApiError {
    let message = match binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{policy}' with binding '{b}' denied request: {}",
            d.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{policy}' denied request: {}",
            d.message
        ),
    };
    let gr = GroupResource::new(attrs.group.clone(), attrs.resource.clone());
    let mut err = ApiError::forbidden(&gr, &attrs.name, &message);
    let reason = Reason::parse(d.reason.as_deref().unwrap_or("Invalid"));
    let reason = if reason == Reason::Unknown {
        Reason::Invalid
    } else {
        reason
    };
    err.reason = reason;
    err.code = reason.default_code();
    err.with_cause(StatusCause {
        message,
        ..Default::default()
    })
}

type Denied = Vec<(String, Option<String>, eval::Denial)>;

fn config_error(
    policy: &Policy,
    binding: Option<&Binding>,
    err: impl std::fmt::Display,
    denied: &mut Denied,
) {
    if policy.failure_policy == FailurePolicy::Ignore {
        return;
    }
    let what = if binding.is_some() {
        "binding"
    } else {
        "policy"
    };
    denied.push((
        policy.name.clone(),
        binding.map(|b| b.name.clone()),
        eval::Denial {
            index: 0,
            message: format!("failed to configure {what}: {err}"),
            reason: None,
        },
    ));
}

/// What expressions read besides the request: param objects and the authorizer.
struct Sources<'a> {
    params: &'a dyn ParamSource,
    authorizer: Option<Arc<dyn authz::Authorize>>,
}

async fn dispatch_one(
    hook: &Hook,
    attrs: &AdmissionAttributes,
    obj: &Value,
    namespace: Option<&Value>,
    sources: &Sources<'_>,
    out: &mut PolicyOutcome,
    denied: &mut Denied,
) -> Result<(), ApiError> {
    let policy = &hook.policy;
    let Some(constraints) = &policy.match_constraints else {
        return Ok(());
    };
    let how = match matching::matches(constraints, attrs, obj) {
        Ok(Some(how)) => how,
        Ok(None) => return Ok(()),
        Err(e) => {
            config_error(policy, None, e.message, denied);
            return Ok(());
        }
    };
    if let Some(e) = &policy.configuration_error {
        config_error(policy, None, e, denied);
        return Ok(());
    }
    // Expressions see the objects in the version the policy matched.
    let (vattrs, vobj);
    let (attrs, obj) = match &how {
        None => (attrs, obj),
        Some(eq) => {
            vobj = in_version(obj, eq)?;
            vattrs = AdmissionAttributes {
                old_object: attrs
                    .old_object
                    .as_ref()
                    .map(|o| in_version(o, eq))
                    .transpose()?,
                ..eq.clone()
            };
            (&vattrs, &vobj)
        }
    };
    let request = request_value(attrs);
    let old = attrs.old_object.clone().unwrap_or(Value::Null);
    // A Namespace request sees no namespaceObject (upstream clears the namespace name then).
    let ns_obj = match namespace {
        Some(ns) if !(attrs.group.is_empty() && attrs.kind == "Namespace") => ns.clone(),
        _ => Value::Null,
    };
    let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for binding in &hook.bindings {
        match binding
            .match_resources
            .as_ref()
            .map(|m| matching::matches(m, attrs, obj))
        {
            None | Some(Ok(Some(_))) => {}
            Some(Ok(None)) => continue,
            Some(Err(e)) => {
                config_error(policy, Some(binding), e.message, denied);
                continue;
            }
        }
        let param_objects =
            match collect_params(policy, binding, &attrs.namespace, sources.params).await {
                Ok(p) => p,
                Err(e) => {
                    config_error(policy, Some(binding), e, denied);
                    continue;
                }
            };
        for param in &param_objects {
            let mut act = Activation::new(&[
                ("object", obj),
                ("oldObject", &old),
                ("request", &request),
                ("namespaceObject", &ns_obj),
                ("params", param.as_ref().unwrap_or(&Value::Null)),
            ]);
            if let Some(a) = &sources.authorizer {
                let request_resource = (
                    attrs.group.as_str(),
                    attrs.resource.as_str(),
                    attrs.subresource.as_str(),
                    attrs.namespace.as_str(),
                    attrs.name.as_str(),
                );
                for (name, value) in authz::variables(a.clone(), &attrs.user, request_resource) {
                    act.set(name, value);
                }
            }
            let result = eval::validate(policy, act);
            for d in result.denials {
                for action in &binding.actions {
                    match action.as_str() {
                        "Deny" => denied.push((
                            policy.name.clone(),
                            Some(binding.name.clone()),
                            d.clone(),
                        )),
                        "Warn" => out.warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                            policy.name, binding.name, d.message
                        )),
                        "Audit" => {
                            let value = json!([{
                                "message": d.message,
                                "policy": binding.policy_name,
                                "binding": binding.name,
                                "expressionIndex": d.index,
                                "validationActions": binding.actions,
                            }]);
                            out.audit_annotations
                                .entry(VALIDATION_FAILURE_ANNOTATION.to_string())
                                .or_insert_with(|| value.to_string());
                        }
                        _ => {}
                    }
                }
            }
            for (k, v) in result.annotations {
                let values = annotations.entry(k).or_default();
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            for e in result.annotation_errors {
                denied.push((
                    policy.name.clone(),
                    Some(binding.name.clone()),
                    eval::Denial {
                        index: 0,
                        message: e,
                        reason: None,
                    },
                ));
            }
        }
    }
    for (k, values) in annotations {
        out.audit_annotations
            .insert(format!("{}/{k}", policy.name), values.join(", "));
    }
    Ok(())
}

/// Upstream's `CollectParams`: the param objects a binding evaluates with (`[None]` when the
/// policy takes none).
async fn collect_params(
    policy: &Policy,
    binding: &Binding,
    request_namespace: &str,
    source: &dyn ParamSource,
) -> Result<Vec<Option<Value>>, String> {
    let (Some((api_version, kind)), Some(pref)) = (&policy.param_kind, &binding.param_ref) else {
        return Ok(vec![None]);
    };
    let (group, version) = api_version
        .split_once('/')
        .unwrap_or(("", api_version.as_str()));
    let Some(info) = catalog::find_by_kind(group, version, kind) else {
        return Err(format!(
            "paramKind kind `{api_version}, Kind={kind}` not known"
        ));
    };
    let namespace = if info.namespaced {
        if !pref.namespace.is_empty() {
            Some(pref.namespace.as_str())
        } else if !request_namespace.is_empty() {
            Some(request_namespace)
        } else {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .into(),
            );
        }
    } else if !pref.namespace.is_empty() {
        return Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        );
    } else {
        None
    };
    let mut found = if !pref.name.is_empty() {
        source
            .get(info, namespace, &pref.name)
            .await
            .map_err(|e| e.message)?
            .into_iter()
            .collect::<Vec<_>>()
    } else if let Some(sel) = &pref.selector {
        let sel = sel.as_ref().map_err(Clone::clone)?;
        source
            .list(info, namespace, sel)
            .await
            .map_err(|e| e.message)?
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if found.is_empty() && pref.deny_when_missing {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    // Params are read in the storage version; expressions see the paramKind's version.
    for p in &mut found {
        crate::conversion::to_version(info, p).map_err(|e| e.message)?;
        if p.get("apiVersion").is_none()
            && let Some(o) = p.as_object_mut()
        {
            o.insert("apiVersion".into(), json!(api_version));
            o.insert("kind".into(), json!(kind));
        }
    }
    Ok(found.into_iter().map(Some).collect())
}

/// Create/update validation of a ValidatingAdmissionPolicy's spec.
pub fn validate_policy(obj: &Value) -> Vec<FieldError> {
    compile_policy(obj).1
}

/// Create/update validation of a ValidatingAdmissionPolicyBinding's spec.
pub fn validate_binding(obj: &Value) -> Vec<FieldError> {
    compile_binding(obj).1
}
