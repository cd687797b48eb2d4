//! Admission for one client write: built-in admission, then ValidatingAdmissionPolicies and
//! the admission webhooks, in upstream's order, behind the registry's `Admission` hook. Also
//! the feeds of webhook configurations and policies, how a webhook Service is reached and
//! where policy params are read.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::{ApiError, meta};
use serde_json::{Value, json};

use crate::admission::policy::{ParamSource, PolicyDispatcher};
use crate::admission::{self, AdmissionAttributes, ServiceResolver, WebhookDispatcher};
use crate::auth::UserInfo;
use crate::registry::informer::{self, Change};
use crate::registry::{Admission, Operation, Registry, Target};

/// One request's admission: who writes what, and the warnings webhooks returned.
pub struct RequestAdmission {
    pub registry: Registry,
    pub webhooks: Arc<WebhookDispatcher>,
    pub policies: Arc<PolicyDispatcher>,
    pub authorizer: Arc<crate::auth::rbac::RbacAuthorizer>,
    pub user: UserInfo,
    pub info: &'static ResourceInfo,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
    pub dry_run: bool,
    /// Warnings and audit annotations of built-in plugins, policies and webhooks.
    pub notes: crate::plugins::RequestNotes,
    /// Side effects (quota charges) of the latest validation, kept or undone by `settle`.
    pub admitted: tokio::sync::Mutex<Option<crate::plugins::Admitted>>,
}

impl RequestAdmission {
    /// The request's attributes without the namespace's labels (enough for rule matching).
    fn base_attributes(
        &self,
        op: Operation,
        obj: &Value,
        old: Option<&Value>,
    ) -> AdmissionAttributes {
        let name = meta::name(obj)
            .or_else(|| old.and_then(meta::name))
            .unwrap_or(&self.name)
            .to_string();
        AdmissionAttributes {
            operation: match op {
                Operation::Create => admission::Operation::Create,
                Operation::Update => admission::Operation::Update,
                Operation::Delete => admission::Operation::Delete,
            },
            group: self.info.group.to_string(),
            version: self.info.version.to_string(),
            kind: self.info.kind.to_string(),
            resource: self.info.resource.to_string(),
            subresource: self.subresource.clone().unwrap_or_default(),
            namespace: self.namespace.clone().unwrap_or_default(),
            name,
            user: self.user.clone(),
            old_object: old.cloned(),
            dry_run: self.dry_run,
            namespace_labels: None,
            options: Value::Null,
            request_version: None,
            request_kind: None,
        }
    }

    async fn attributes(
        &self,
        op: Operation,
        obj: &Value,
        old: Option<&Value>,
    ) -> AdmissionAttributes {
        self.attributes_and_namespace(op, obj, old).await.0
    }

    /// The full attributes, and the request's Namespace object when it has one.
    async fn attributes_and_namespace(
        &self,
        op: Operation,
        obj: &Value,
        old: Option<&Value>,
    ) -> (AdmissionAttributes, Option<Arc<Value>>) {
        let mut attrs = self.base_attributes(op, obj, old);
        let namespace = match &self.namespace {
            Some(ns) => self.registry.namespace(ns).await.ok().flatten(),
            None => None,
        };
        attrs.namespace_labels = match (&self.namespace, &namespace) {
            (None, _) => Some(BTreeMap::new()),
            (Some(_), Some(ns)) => Some(meta::labels(ns)),
            (Some(_), None) => None,
        };
        (attrs, namespace)
    }

    fn plugin_request(&self, op: Operation) -> crate::plugins::AdmissionRequest<'_> {
        crate::plugins::AdmissionRequest {
            registry: &self.registry,
            user: &self.user,
            authorizer: &self.authorizer,
            operation: match op {
                Operation::Create => crate::plugins::Operation::Create,
                Operation::Update => crate::plugins::Operation::Update,
                Operation::Delete => crate::plugins::Operation::Delete,
            },
            info: self.info,
            subresource: self.subresource.as_deref(),
            namespace: self.namespace.as_deref(),
            name: &self.name,
            dry_run: self.dry_run,
            notes: &self.notes,
        }
    }

    /// Keeps the side effects of admission when the write succeeded; undoes them otherwise.
    pub async fn settle(&self, write_succeeded: bool) {
        if let Some(admitted) = self.admitted.lock().await.take()
            && !write_succeeded
        {
            admitted.rollback(&self.registry).await;
        }
    }

    /// An object as the client sees it (the version of the request).
    fn in_request_version(&self, obj: &Value) -> Result<Value, ApiError> {
        let mut view = obj.clone();
        if view.is_object() {
            crate::conversion::to_version(self.info, &mut view)?;
        }
        Ok(view)
    }

    /// Keeps a webhook or policy pass's warnings and audit annotations (also of a rejected
    /// request: upstream records them before the denial).
    fn record(&self, outcome: admission::AdmissionOutcome) {
        self.notes.warn(outcome.warnings);
        self.notes.annotate(outcome.audit_annotations);
    }

    pub fn take_audit_annotations(&self) -> BTreeMap<String, String> {
        self.notes.take_audit_annotations()
    }

    pub fn take_warnings(&self) -> Vec<String> {
        self.notes.take_warnings()
    }
}

#[async_trait]
impl Admission for RequestAdmission {
    async fn mutate(
        &self,
        op: Operation,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        // Built-in admission first, then the webhooks, as upstream orders its plugins.
        crate::plugins::mutate(&self.plugin_request(op), obj, old).await?;
        if !self.webhooks.has_mutating() {
            return Ok(());
        }
        // Webhooks see objects in the version the client used (the registry holds the storage
        // version); their changes go back to the storage version.
        let old = old.map(|o| self.in_request_version(o)).transpose()?;
        let mut view = self.in_request_version(obj)?;
        let attrs = self.attributes(op, &view, old.as_ref()).await;
        let resolver = EndpointsResolver {
            registry: self.registry.clone(),
        };
        let mut outcome = admission::AdmissionOutcome::default();
        let result = self
            .webhooks
            .mutate_detailed(&attrs, &mut view, &resolver, &mut outcome)
            .await;
        self.record(outcome);
        result?;
        crate::conversion::to_storage(self.info, &mut view)?;
        *obj = view;
        Ok(())
    }

    async fn validate(
        &self,
        op: Operation,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        // A retried write (conflict) validates again: undo the previous attempt's charges first.
        let mut held = self.admitted.lock().await;
        if let Some(previous) = held.take() {
            previous.rollback(&self.registry).await;
        }
        let admitted = crate::plugins::validate(&self.plugin_request(op), obj, old).await?;
        let has_webhooks = self.webhooks.has_validating();
        // Only a rule check when policies exist: no conversion or read for requests they skip.
        let candidates = if self.policies.is_active() {
            let light = self.base_attributes(op, obj, None);
            Some(self.policies.candidates(&light)).filter(|c| !c.is_empty())
        } else {
            None
        };
        if !has_webhooks && candidates.is_none() {
            *held = Some(admitted);
            return Ok(());
        }
        let old = old.map(|o| self.in_request_version(o)).transpose()?;
        let view = self.in_request_version(obj)?;
        let (attrs, namespace) = self.attributes_and_namespace(op, &view, old.as_ref()).await;
        let checked = async {
            if let Some(candidates) = &candidates {
                let params = RegistryParams {
                    registry: self.registry.clone(),
                };
                let outcome = self
                    .policies
                    .validate(candidates, &attrs, &view, namespace.as_deref(), &params)
                    .await?;
                self.record(admission::AdmissionOutcome {
                    warnings: outcome.warnings,
                    audit_annotations: outcome.audit_annotations,
                });
            }
            if has_webhooks {
                let resolver = EndpointsResolver {
                    registry: self.registry.clone(),
                };
                let mut outcome = admission::AdmissionOutcome::default();
                let result = self
                    .webhooks
                    .validate_detailed(&attrs, &view, &resolver, &mut outcome)
                    .await;
                self.record(outcome);
                result?;
            }
            Ok::<(), ApiError>(())
        }
        .await;
        match checked {
            Ok(()) => {
                *held = Some(admitted);
                Ok(())
            }
            Err(e) => {
                admitted.rollback(&self.registry).await;
                Err(e)
            }
        }
    }
}

/// Reads policy params from the registry (only when a policy with a `paramKind` matches).
pub struct RegistryParams {
    pub registry: Registry,
}

#[async_trait]
impl ParamSource for RegistryParams {
    async fn get(
        &self,
        info: &'static ResourceInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Value>, ApiError> {
        match self.registry.get(Target { info, namespace }, name).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn list(
        &self,
        info: &'static ResourceInfo,
        namespace: Option<&str>,
        selector: &k1s_apimachinery::selector::LabelSelector,
    ) -> Result<Vec<Value>, ApiError> {
        let q = crate::registry::ListQuery {
            label_selector: Some(selector.clone()),
            ..Default::default()
        };
        Ok(self
            .registry
            .list(Target { info, namespace }, &q)
            .await?
            .items)
    }
}

/// Reaches a Service through its Endpoints (there is no kube-proxy): the first address, on the
/// port that serves the Service port asked for.
pub struct EndpointsResolver {
    pub registry: Registry,
}

#[async_trait]
impl ServiceResolver for EndpointsResolver {
    async fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<SocketAddr, String> {
        let get = |resource: &'static str| {
            let registry = self.registry.clone();
            let (namespace, name) = (namespace.to_string(), name.to_string());
            async move {
                let info = catalog::find("", "v1", resource).ok_or("catalog")?;
                registry
                    .get(
                        Target {
                            info,
                            namespace: Some(&namespace),
                        },
                        &name,
                    )
                    .await
                    .map_err(|e| e.message)
            }
        };
        let svc = get("services").await?;
        let port_name = svc
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .and_then(|ps| {
                ps.iter()
                    .find(|p| p.get("port").and_then(Value::as_u64) == Some(port as u64))
            })
            .and_then(|p| p.get("name").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string();
        let endpoints = get("endpoints").await?;
        for subset in endpoints
            .get("subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ports = subset
                .get("ports")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let target = ports
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name)
                .or(ports.first())
                .and_then(|p| p.get("port").and_then(Value::as_u64));
            let ip = subset
                .pointer("/addresses/0/ip")
                .and_then(Value::as_str)
                .and_then(|ip| ip.parse::<std::net::IpAddr>().ok());
            if let (Some(ip), Some(p)) = (ip, target) {
                return Ok(SocketAddr::new(ip, p as u16));
            }
        }
        Err(format!(
            "service \"{namespace}/{name}\" has no ready endpoints"
        ))
    }
}

/// Keeps the dispatcher's webhook configurations in step with the API.
pub fn feed_webhook_configurations(
    registry: Registry,
    webhooks: Arc<WebhookDispatcher>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    for (resource, mutating) in [
        ("mutatingwebhookconfigurations", true),
        ("validatingwebhookconfigurations", false),
    ] {
        let webhooks = webhooks.clone();
        follow_by_name(&registry, resource, &shutdown, false, move |list| {
            if mutating {
                webhooks.set_mutating_configurations(list);
            } else {
                webhooks.set_validating_configurations(list);
            }
        });
    }
}

/// Keeps the policy dispatcher's policies and bindings in step with the API.
pub fn feed_admission_policies(
    registry: Registry,
    policies: Arc<PolicyDispatcher>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    for (resource, bindings) in [
        ("validatingadmissionpolicies", false),
        ("validatingadmissionpolicybindings", true),
    ] {
        let policies = policies.clone();
        // Status writes (typeChecking) change nothing that runs.
        follow_by_name(&registry, resource, &shutdown, true, move |list| {
            if bindings {
                policies.set_bindings(&list);
            } else {
                policies.set_policies(&list);
            }
        });
    }
}

/// Upstream's validatingadmissionpolicy-status controller: each new generation of a policy gets
/// its type-check result in `status.typeChecking`, with `status.observedGeneration`.
pub fn keep_policy_status(registry: Registry, shutdown: tokio::sync::watch::Receiver<bool>) {
    let Some(info) = catalog::find(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
    ) else {
        return;
    };
    let writer = registry.clone();
    tokio::spawn(informer::run(registry, info, shutdown, move |change| {
        let due: Vec<Value> = match change {
            Change::Listed(items) => items,
            Change::Upserted(o) => vec![(*o).clone()],
            Change::Deleted(_) => Vec::new(),
        }
        .into_iter()
        .filter(|p| p.pointer("/metadata/generation") != p.pointer("/status/observedGeneration"))
        .collect();
        let registry = writer.clone();
        async move {
            for policy in due {
                write_policy_status(&registry, info, &policy).await;
            }
        }
    }));
}

async fn write_policy_status(registry: &Registry, info: &'static ResourceInfo, policy: &Value) {
    let name = meta::name(policy).unwrap_or_default().to_string();
    let status = crate::admission::policy::typecheck::status_for(policy);
    let t = Target {
        info,
        namespace: None,
    };
    let strategy = crate::strategies::for_resource(info);
    let generation = policy.pointer("/metadata/generation").cloned();
    let result = registry
        .update(
            t,
            strategy,
            &name,
            Some("status"),
            &crate::registry::WriteOptions::default(),
            |current| {
                let mut next = current.clone();
                // Checked against the generation it was computed for; a newer one comes again.
                if current.pointer("/metadata/generation") == generation.as_ref() {
                    if !next["status"].is_object() {
                        next["status"] = json!({});
                    }
                    for key in ["observedGeneration", "typeChecking"] {
                        next["status"][key] = status[key].clone();
                    }
                }
                Ok(next)
            },
        )
        .await;
    if let Err(e) = result
        && !e.is_not_found()
    {
        tracing::info!(policy = %name, error = %e, "could not write the policy's type checking");
    }
}

/// Follows every object of an admissionregistration.k8s.io/v1 resource and hands the whole set
/// to `publish` after each change; with `spec_only`, an update that keeps `spec` is not one.
fn follow_by_name(
    registry: &Registry,
    resource: &str,
    shutdown: &tokio::sync::watch::Receiver<bool>,
    spec_only: bool,
    mut publish: impl FnMut(Vec<Value>) + Send + 'static,
) {
    let Some(info) = catalog::find("admissionregistration.k8s.io", "v1", resource) else {
        return;
    };
    let mut objects: BTreeMap<String, Value> = BTreeMap::new();
    let name = |o: &Value| meta::name(o).unwrap_or_default().to_string();
    tokio::spawn(informer::run(
        registry.clone(),
        info,
        shutdown.clone(),
        move |change| {
            match change {
                Change::Listed(items) => {
                    objects = items.into_iter().map(|o| (name(&o), o)).collect()
                }
                Change::Upserted(o) => {
                    let unchanged = spec_only
                        && objects
                            .get(&name(&o))
                            .is_some_and(|old| old.get("spec") == o.get("spec"));
                    objects.insert(name(&o), (*o).clone());
                    if unchanged {
                        return std::future::ready(());
                    }
                }
                Change::Deleted(o) => {
                    objects.remove(&name(&o));
                }
            }
            publish(objects.values().cloned().collect());
            std::future::ready(())
        },
    ));
}
