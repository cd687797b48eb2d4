//! The generic REST handler: one function per verb for every resource, over the registry.
//!
//! Decoding, GVK/namespace/name checks, subresources (status, scale, binding, eviction,
//! finalize), patches, dry-run and the response encoding live here, written once for all kinds.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, StatusCode};
use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::selector::{FieldSelector, LabelSelector};
use k1s_apimachinery::status::{FieldError, Reason, StatusDetails, success_status_json};
use k1s_apimachinery::{ApiError, GroupResource, meta};
use serde_json::{Value, json};

use crate::apply;
use crate::context::ApiContext;
use crate::encoding::{self, Output};
use crate::field_validation;
use crate::patch::{self, PatchType};
use crate::registry::{
    DeleteOptions, DeleteOutcome, ListQuery, Target, WatchEvent, WatchQuery, WriteOptions,
    subresource,
};
use crate::request::Query;
use crate::request::{ResourceRequest, Verb};
use crate::response::{encoded_response, error_response, json_response};
use crate::strategies;
use crate::table;

fn is_service(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.resource == "services"
}

/// Serves one resource request.
pub async fn handle(
    ctx: &ApiContext,
    user: &crate::reviews::UserInfo,
    req: ResourceRequest,
    headers: &HeaderMap,
    query: &Query,
    body: Bytes,
) -> Response {
    let started = std::time::Instant::now();
    // A deprecated kind or version is announced before anything else, on errors too, as
    // upstream's handler records it before serving.
    let deprecation = deprecation_warning(&req);
    let mut warnings = Vec::new();
    let mut resp = match serve(ctx, user, &req, headers, query, body, &mut warnings).await {
        Ok(resp) => resp,
        Err(err) => {
            warnings.clear();
            error_response(&err)
        }
    };
    for w in deprecation.iter().chain(&warnings) {
        // RFC 7234 warn-code 299 "miscellaneous persistent warning", as upstream sends.
        let text = format!("299 - {:?}", w);
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    ctx.metrics.record(&crate::metrics::RequestRecord {
        verb: req.verb.as_str(),
        group: &req.group,
        version: &req.version,
        resource: &req.resource,
        subresource: req.subresource.as_deref().unwrap_or(""),
        code: resp.status().as_u16(),
        elapsed: started.elapsed(),
    });
    resp
}

/// The deprecation warning of the requested kind or custom resource version, if any.
fn deprecation_warning(req: &ResourceRequest) -> Option<String> {
    let info = catalog::find(&req.group, &req.version, &req.resource)?;
    if catalog::is_custom(info) {
        crate::apiextensions::lookup(info)?
            .deprecation_warning
            .clone()
    } else {
        catalog::deprecation_warning(info)
    }
}

async fn serve(
    ctx: &ApiContext,
    user: &crate::reviews::UserInfo,
    req: &ResourceRequest,
    headers: &HeaderMap,
    query: &Query,
    body: Bytes,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let info = catalog::find(&req.group, &req.version, &req.resource)
        .ok_or_else(ApiError::not_found_path)?;
    let custom = if catalog::is_custom(info) {
        Some(crate::apiextensions::lookup(info).ok_or_else(ApiError::not_found_path)?)
    } else {
        None
    };
    let gr = info.group_resource();
    let sub = match &req.subresource {
        Some(name) => Some(
            info.subresource(name)
                .ok_or_else(ApiError::not_found_path)?,
        ),
        None => None,
    };
    let allowed = match sub {
        Some(s) => s.has_verb(req.verb.as_str()),
        None => info.has_verb(req.verb.as_str()),
    };
    if !allowed {
        return Err(ApiError::method_not_allowed(&gr, req.verb.as_str()));
    }
    // A namespaced kind is addressed inside a namespace except for cross-namespace reads.
    if info.namespaced && req.namespace.is_none() && !matches!(req.verb, Verb::List | Verb::Watch) {
        return Err(ApiError::not_found_path());
    }
    if !info.namespaced && req.namespace.is_some() {
        return Err(ApiError::not_found_path());
    }
    let tables = !crate::reviews::is_review(info)
        && !matches!(
            req.subresource.as_deref(),
            Some("binding" | "eviction" | "token")
        );
    let output = encoding::negotiate_with(headers, custom.is_none(), tables)?;
    if let Some(cr) = &custom {
        // Custom resources are JSON or YAML only, as upstream serves them.
        if req.verb.is_mutating()
            && encoding::content_type(headers) == "application/vnd.kubernetes.protobuf"
        {
            return Err(ApiError::unsupported_media_type(&[
                "application/json",
                "application/yaml",
            ]));
        }
        if cr.terminating && req.verb == Verb::Create {
            let mut err = ApiError::method_not_allowed(&gr, "create");
            err.message =
                "create not allowed while custom resource definition is terminating".into();
            return Err(err);
        }
    }
    let include = include_object(query)?;
    let target = Target {
        info,
        namespace: req.namespace.as_deref(),
    };
    let strategy = strategies::for_resource(info);
    let dry_run = dry_run(query)?;
    let name = req.name.as_deref().unwrap_or_default();
    // Admission for client writes; its webhook warnings go back as Warning headers.
    let admission = std::sync::Arc::new(crate::admit::RequestAdmission {
        registry: ctx.registry.clone(),
        webhooks: ctx.webhooks.clone(),
        policies: ctx.policies.clone(),
        authorizer: ctx.security.authorizer.clone(),
        user: user.clone(),
        info,
        subresource: req.subresource.clone(),
        namespace: req.namespace.clone(),
        name: name.to_string(),
        dry_run,
        notes: Default::default(),
        admitted: Default::default(),
    });
    let write = WriteOptions {
        dry_run,
        admission: req
            .verb
            .is_mutating()
            .then(|| admission.clone() as std::sync::Arc<dyn crate::registry::Admission>),
        requester: Some(user.clone()),
        managed_fields: Default::default(),
    };
    let result = serve_verb(
        ctx,
        user,
        req,
        headers,
        query,
        body,
        warnings,
        info,
        output,
        include,
        target,
        strategy,
        write,
        name,
        custom.as_deref(),
    )
    .await;
    admission.settle(result.is_ok()).await;
    warnings.extend(admission.take_warnings());
    let annotations = admission.take_audit_annotations();
    if annotations.is_empty() {
        return result;
    }
    // The audit layer of the chain records them with the request's event.
    let annotations = crate::audit::AdmissionAnnotations(annotations);
    match result {
        Ok(mut resp) => {
            resp.extensions_mut().insert(annotations);
            Ok(resp)
        }
        Err(e) => {
            let mut resp = error_response(&e);
            resp.extensions_mut().insert(annotations);
            Ok(resp)
        }
    }
}

/// One verb of a resource request, after the common checks.
#[allow(clippy::too_many_arguments)]
async fn serve_verb(
    ctx: &ApiContext,
    user: &crate::reviews::UserInfo,
    req: &ResourceRequest,
    headers: &HeaderMap,
    query: &Query,
    body: Bytes,
    warnings: &mut Vec<String>,
    info: &'static ResourceInfo,
    output: Output,
    include: table::IncludeObject,
    target: Target<'_>,
    strategy: &'static dyn crate::registry::Strategy,
    write: WriteOptions,
    name: &str,
    custom: Option<&crate::apiextensions::ServedVersion>,
) -> Result<Response, ApiError> {
    let gr = info.group_resource();
    // Unknown fields: custom resources are pruned by their version's schema.
    let check_fields = |obj: &mut Value, type_name: Option<&str>, body: Option<&[u8]>| {
        let checked = match custom {
            Some(cr) => field_validation::report(validation_mode(query)?, cr.prune(obj), body),
            None => field_validation::check(validation_mode(query)?, type_name, obj, body),
        };
        // Go's decoder fails on a wrongly typed value before the strict checks (unknown and
        // duplicate fields) are reported: that error comes first.
        if checked.is_err() {
            let mut probe = obj.clone();
            probe["apiVersion"] = Value::String(info.api_version());
            probe["kind"] = Value::String(info.kind.to_owned());
            type_check(info, &mut probe)?;
        }
        checked
    };
    let subname = req.subresource.as_deref();
    let validation = field_validation::mode(query.get("fieldValidation").map(String::as_str))?;
    let own_type = crate::openapi::schemas().definition_for(info.group, info.version, info.kind);
    let json_body = (encoding::content_type(headers) != "application/yaml").then_some(&body[..]);
    let tracked = |sub: &str, mut write: WriteOptions| -> WriteOptions {
        write.managed_fields =
            crate::registry::ManagedFieldsMode::Track(field_tracking(info, headers, query, sub));
        write
    };
    match req.verb {
        Verb::Get if crate::component_status::serves(info) => {
            let obj = crate::component_status::get(ctx, name).await?;
            Ok(object_response(StatusCode::OK, info, obj, &output, include))
        }
        Verb::List if crate::component_status::serves(info) => {
            let q = list_query(info, query)?;
            let items = crate::component_status::list(
                ctx,
                info,
                q.label_selector.as_ref(),
                q.field_selector.as_ref(),
            )
            .await;
            let list = crate::registry::ListResult {
                items,
                resource_version: String::new(),
                continue_token: None,
                remaining_item_count: None,
            };
            Ok(list_response(info, list, &output, include))
        }
        Verb::Get => {
            let obj = ctx.registry.get(target, name).await?;
            let obj = match subname {
                Some("scale") => scale_of(info, custom, &obj),
                _ => obj,
            };
            Ok(object_response(StatusCode::OK, info, obj, &output, include))
        }
        Verb::List => {
            let q = list_query(info, query)?;
            let list = ctx.registry.list(target, &q).await?;
            Ok(list_response(info, list, &output, include))
        }
        Verb::Watch => {
            let mut wq = watch_query(info, query)?;
            if let Some(n) = &req.name {
                let by_name = FieldSelector::one_term_equal("metadata.name", n.clone());
                wq.field_selector = Some(match wq.field_selector.take() {
                    Some(f) => f.and(by_name),
                    None => by_name,
                });
            }
            let stream = ctx.registry.watch(target, wq).await?;
            Ok(watch_response(
                info,
                stream,
                output,
                include,
                ctx.shutdown.clone(),
                ctx.metrics.watch_opened(),
            ))
        }
        Verb::Create => {
            let mut obj = decode_body(headers, &body)?;
            if crate::reviews::is_review(info) {
                let answered =
                    crate::reviews::answer(ctx, info, obj, user, req.namespace.as_deref()).await?;
                return Ok(object_response(
                    StatusCode::CREATED,
                    info,
                    answered,
                    &output,
                    include,
                ));
            }
            // `bindings` (upstream's LegacyBinding) binds the pod its Binding names, as
            // `pods/<name>/binding` does.
            let legacy_binding = info.group.is_empty() && info.resource == "bindings";
            match subname {
                Some("binding") if !legacy_binding => {
                    bind_pod(ctx, target, name, &obj, &write).await?;
                    Ok(json_response(
                        StatusCode::CREATED,
                        &success_status_json(None),
                    ))
                }
                None if legacy_binding => {
                    let pods = catalog::find("", "v1", "pods")
                        .ok_or_else(|| ApiError::internal("pods missing from the catalog"))?;
                    let pod_target = Target {
                        info: pods,
                        namespace: target.namespace,
                    };
                    let name = meta::name(&obj).unwrap_or_default().to_string();
                    bind_pod(ctx, pod_target, &name, &obj, &write).await?;
                    Ok(json_response(
                        StatusCode::CREATED,
                        &success_status_json(None),
                    ))
                }
                Some("eviction") => {
                    crate::eviction::evict(ctx, target, name, &obj, &write).await?;
                    Ok(json_response(
                        StatusCode::CREATED,
                        &success_status_json(None),
                    ))
                }
                Some("token") => {
                    let (object, token_warnings) = token_request(ctx, target, name, &obj).await?;
                    warnings.extend(token_warnings);
                    Ok(encoded_response(StatusCode::CREATED, &object, &output))
                }
                Some(other) => Err(ApiError::method_not_allowed(
                    &gr,
                    &format!("create {other}"),
                )),
                None => {
                    check_field_manager(query, "CreateOptions")?;
                    warnings.extend(check_fields(&mut obj, own_type, json_body)?);
                    let mut obj = check_body(info, target.namespace, None, obj)?;
                    rbac_write_check(ctx, user, info, target.namespace, &obj, None)?;
                    type_check(info, &mut obj)?;
                    let write = tracked("", write);
                    let created =
                        create_object(ctx, info, target, strategy, obj, &write, warnings).await?;
                    Ok(object_response(
                        StatusCode::CREATED,
                        info,
                        created,
                        &output,
                        include,
                    ))
                }
            }
        }
        Verb::Update => {
            let mut obj = decode_body(headers, &body)?;
            check_field_manager(query, "UpdateOptions")?;
            let write = match subname {
                None | Some("status") | Some("scale") => tracked(subname.unwrap_or(""), write),
                Some(_) => write,
            };
            let updated = match subname {
                Some("scale") => {
                    let scale = obj;
                    let result = ctx
                        .registry
                        .update(target, strategy, name, None, &write, |old| {
                            scale_into(custom, old, &scale)
                        })
                        .await?;
                    scale_of(info, custom, &result)
                }
                Some("finalize") => {
                    let finalizers = obj.pointer("/spec/finalizers").cloned();
                    ctx.registry
                        .update(target, strategy, name, Some("finalize"), &write, |old| {
                            let mut new = old.clone();
                            new["spec"]["finalizers"] = finalizers.clone().unwrap_or(json!([]));
                            Ok(new)
                        })
                        .await?
                }
                sub => {
                    warnings.extend(check_fields(&mut obj, own_type, json_body)?);
                    let mut obj = check_body(info, target.namespace, Some(name), obj)?;
                    type_check(info, &mut obj)?;
                    crate::conversion::to_storage(info, &mut obj)?;
                    update_object(
                        ctx,
                        info,
                        target,
                        strategy,
                        name,
                        sub,
                        &write,
                        warnings,
                        |old| {
                            rbac_write_check(ctx, user, info, target.namespace, &obj, Some(old))?;
                            Ok(obj.clone())
                        },
                    )
                    .await?
                }
            };
            Ok(object_response(
                StatusCode::OK,
                info,
                updated,
                &output,
                include,
            ))
        }
        Verb::Patch => {
            let ct = encoding::content_type(headers);
            let patch_type = PatchType::from_content_type(&ct)
                .ok_or_else(|| patch::unsupported_patch_type(true))?;
            check_patch_options(query, patch_type)?;
            if patch_type == PatchType::Apply && subname != Some("scale") {
                return server_side_apply(
                    ctx, user, info, target, strategy, query, &body, write, name, subname,
                    validation, warnings, &output, include,
                )
                .await;
            }
            let write = match subname {
                None | Some("status") | Some("scale") => tracked(subname.unwrap_or(""), write),
                Some(_) => write,
            };
            let schema = crate::openapi::schemas();
            let scale = subname == Some("scale");
            let root_type = if scale {
                schema.definition_for("autoscaling", "v1", "Scale")
            } else {
                schema.definition_for(info.group, info.version, info.kind)
            }
            .map(str::to_string);
            if patch_type != PatchType::Json {
                warnings.extend(field_validation::check(
                    validation,
                    None,
                    &mut Value::Null,
                    Some(&body),
                )?);
            }
            let mut unknown = Vec::new();
            let patched = update_object(
                ctx,
                info,
                target,
                strategy,
                name,
                subname.filter(|s| *s != "scale"),
                &write,
                warnings,
                |old| {
                    let base = if scale {
                        scale_of(info, custom, old)
                    } else {
                        old.clone()
                    };
                    let schema_ref = root_type
                        .as_deref()
                        .map(|r| (schema as &dyn patch::PatchSchema, r));
                    let mut new = patch::apply_patch(patch_type, &base, &body, schema_ref)?;
                    // A patch applies to the object as it is now: the current resourceVersion
                    // stays (so kinds that refuse unconditional updates, such as
                    // PodDisruptionBudgets, accept patches) unless the patch set another.
                    if scale {
                        scale_into(custom, old, &new)
                    } else {
                        let t = root_type.as_deref().filter(|_| subname.is_none());
                        unknown = check_fields(&mut new, t, None)?;
                        type_check(info, &mut new)?;
                        rbac_write_check(ctx, user, info, target.namespace, &new, Some(old))?;
                        Ok(new)
                    }
                },
            )
            .await?;
            warnings.extend(unknown);
            let out = if scale {
                scale_of(info, custom, &patched)
            } else {
                patched
            };
            Ok(object_response(StatusCode::OK, info, out, &output, include))
        }
        Verb::Delete => {
            let mut opts = delete_options(query, &body, write.dry_run)?;
            opts.admission = write.admission.clone();
            match ctx.registry.delete(target, name, &opts).await? {
                DeleteOutcome::Pending(obj) => {
                    Ok(object_response(StatusCode::OK, info, obj, &output, include))
                }
                DeleteOutcome::Deleted(obj) => {
                    if is_service(info) && !opts.dry_run {
                        ctx.services.release(&ctx.registry, &obj, true).await;
                    }
                    // Upstream's ReturnDeletedObject registries (pods, services) answer with the
                    // object as it was deleted; the others with a Success Status.
                    if strategy.return_deleted_object() {
                        return Ok(object_response(StatusCode::OK, info, obj, &output, include));
                    }
                    let details = StatusDetails {
                        name: name.to_string(),
                        group: info.group.to_string(),
                        kind: info.resource.to_string(),
                        uid: meta::uid(&obj).unwrap_or_default().to_string(),
                        ..Default::default()
                    };
                    Ok(json_response(
                        StatusCode::OK,
                        &success_status_json(Some(&details)),
                    ))
                }
            }
        }
        Verb::DeleteCollection => {
            let q = list_query(info, query)?;
            let mut opts = delete_options(query, &body, write.dry_run)?;
            opts.admission = write.admission.clone();
            let items = ctx.registry.delete_collection(target, &q, &opts).await?;
            if is_service(info) && !opts.dry_run {
                for svc in items
                    .iter()
                    .filter(|s| meta::deletion_timestamp(s).is_none())
                {
                    ctx.services.release(&ctx.registry, svc, true).await;
                }
            }
            let list = json!({
                "kind": info.list_kind(),
                "apiVersion": info.api_version(),
                "metadata": { "resourceVersion": ctx.registry.store().current_revision().to_string() },
                "items": items,
            });
            Ok(json_response(StatusCode::OK, &list))
        }
    }
}

/// RBAC's escalation prevention on role and binding writes (upstream's RBAC storage checks):
/// nobody grants permissions they do not hold unless they may `escalate` / `bind`.
fn rbac_write_check(
    ctx: &ApiContext,
    user: &crate::auth::UserInfo,
    info: &ResourceInfo,
    namespace: Option<&str>,
    new: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if info.group != "rbac.authorization.k8s.io" {
        return Ok(());
    }
    let authorizer = &ctx.security.authorizer;
    let ns = namespace.unwrap_or_default();
    let result = match info.resource {
        "roles" | "clusterroles" => authorizer.check_role_write(user, info.resource, ns, new, old),
        "rolebindings" | "clusterrolebindings" => {
            authorizer.check_binding_write(user, ns, new, old)
        }
        _ => Ok(()),
    };
    result.map_err(|cause| {
        ApiError::forbidden(
            &info.group_resource(),
            meta::name(new).unwrap_or_default(),
            cause,
        )
    })
}

/// `serviceaccounts/<name>/token`: a TokenRequest answered with a signed service-account token,
/// optionally bound to a Pod, Secret or Node (`kubectl create token`).
async fn token_request(
    ctx: &ApiContext,
    target: Target<'_>,
    name: &str,
    request: &Value,
) -> Result<(Value, Vec<String>), ApiError> {
    use crate::auth::authn::token_request as tr;
    let sa = ctx.registry.get(target, name).await?;
    let get = |resource: &'static str, namespace: Option<String>, name: String| async move {
        let info = catalog::find("", "v1", resource).ok_or_else(ApiError::not_found_path)?;
        ctx.registry
            .get(
                Target {
                    info,
                    namespace: namespace.as_deref(),
                },
                &name,
            )
            .await
    };
    let bound = match tr::bound_object_target(request)? {
        Some(b) => {
            let ns = b
                .namespaced
                .then(|| target.namespace.unwrap_or_default().to_string());
            Some(get(b.resource, ns, b.name.clone()).await?)
        }
        None => None,
    };
    let node = match bound
        .as_ref()
        .and_then(|b| b.pointer("/spec/nodeName"))
        .and_then(Value::as_str)
    {
        Some(n) if !n.is_empty() => get("nodes", None, n.to_string()).await.ok(),
        _ => None,
    };
    let out = tr::create_token(
        request,
        &sa,
        bound.as_ref(),
        node.as_ref(),
        &ctx.security.tokens,
        jiff::Timestamp::now(),
    )?;
    Ok((out.object, out.warnings))
}

/// Upstream's ValidatePodBinding: the target is a Node (or of no kind) and has a name.
fn validate_pod_binding(binding: &Value) -> Vec<FieldError> {
    let field = |name: &str| {
        binding
            .pointer(&format!("/target/{name}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let mut errs = Vec::new();
    let kind = field("kind");
    if !kind.is_empty() && kind != "Node" {
        errs.push(FieldError::not_supported(
            "target.kind",
            kind,
            &["Node", "<empty>"],
        ));
    }
    if field("name").is_empty() {
        errs.push(FieldError::required("target.name", ""));
    }
    errs
}

/// Sets `spec.nodeName` of a pod from a Binding (what a scheduler does).
/// Upstream's BindingREST: the pod named in the URL gets the Binding's node, its annotations,
/// and the PodScheduled condition, with the Binding's uid and resourceVersion as preconditions.
/// A direct storage update, no strategy, so the pod's generation does not move.
async fn bind_pod(
    ctx: &ApiContext,
    target: Target<'_>,
    name: &str,
    binding: &Value,
    write: &WriteOptions,
) -> Result<Value, ApiError> {
    if meta::name(binding).unwrap_or_default() != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let uid = meta::uid(binding).filter(|u| !u.is_empty());
    let resource_version = meta::resource_version(binding).filter(|rv| !rv.is_empty());
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let storage_key = format!(
        "/registry/pods/{}/{name}",
        target.namespace.unwrap_or_default()
    );
    // ValidatePodBinding's errors reach the client as upstream's do: a plain aggregate, which
    // its handler turns into a 500 without a reason.
    let invalid = validate_pod_binding(binding);
    if let Some(message) = k1s_apimachinery::status::aggregate_message(&invalid) {
        return Err(ApiError::new(500, Reason::Unknown, message));
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let gr = GroupResource::core("pods");
    // As the `binding` subresource: spec.nodeName and the PodScheduled condition both change.
    ctx.registry
        .update(
            target,
            &crate::registry::DefaultStrategy,
            name,
            Some("binding"),
            write,
            |old| {
                // Storage preconditions, worded as upstream's storage error in a Conflict.
                let failed = |what: &str, want: &str, have: &str| {
                    ApiError::conflict(
                        &gr,
                        name,
                        format!(
                            "StorageError: invalid object, Code: 4, Key: {storage_key}, \
                         ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: \
                         {what} in precondition: {want}, {what} in object meta: {have}"
                        ),
                    )
                };
                let have_uid = meta::uid(old).unwrap_or_default();
                if let Some(uid) = uid
                    && uid != have_uid
                {
                    return Err(failed("UID", uid, have_uid));
                }
                let have_rv = meta::resource_version(old).unwrap_or_default();
                if let Some(rv) = resource_version
                    && rv != have_rv
                {
                    return Err(failed("ResourceVersion", rv, have_rv));
                }
                if old
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .is_some_and(|n| !n.is_empty())
                {
                    return Err(ApiError::conflict(
                        &gr,
                        name,
                        format!(
                            "pod {name} is already assigned to node {:?}",
                            old["spec"]["nodeName"].as_str().unwrap_or_default()
                        ),
                    ));
                }
                if old
                    .pointer("/metadata/deletionTimestamp")
                    .is_some_and(|t| !t.is_null())
                {
                    return Err(ApiError::conflict(
                        &gr,
                        name,
                        format!("pod {name} is being deleted, cannot be assigned to a host"),
                    ));
                }
                let mut new = old.clone();
                if !annotations.is_empty() {
                    let meta = &mut new["metadata"];
                    if !meta["annotations"].is_object() {
                        meta["annotations"] = json!({});
                    }
                    if let Some(current) = meta["annotations"].as_object_mut() {
                        current.extend(annotations.clone());
                    }
                }
                new["spec"]["nodeName"] = Value::String(node.clone());
                // Upstream's assignPod also marks the pod scheduled (UpdatePodCondition).
                set_pod_scheduled(&mut new);
                Ok(new)
            },
        )
        .await
}

/// PodScheduled=True (a new transition time only when the status changes; reason and message
/// dropped, as upstream's UpdatePodCondition replaces the condition).
fn set_pod_scheduled(pod: &mut Value) {
    let now = crate::registry::now_rfc3339();
    if !pod["status"].is_object() {
        pod["status"] = serde_json::json!({});
    }
    let conditions = &mut pod["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let fresh = serde_json::json!({
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
    });
    match list.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(c) if c["status"] == "True" => {}
        Some(c) => *c = fresh,
        None => list.push(fresh),
    }
}

/// Who a client write is recorded for, and the kind's schema (`subresource`: "", "status" or
/// "scale").
fn field_tracking(
    info: &ResourceInfo,
    headers: &HeaderMap,
    query: &Query,
    subresource: &str,
) -> std::sync::Arc<apply::FieldTracking> {
    let user_agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let reset = match subresource {
        "status" => apply::Reset::Spec,
        _ if info.has_status() => apply::Reset::Status,
        _ => apply::Reset::None,
    };
    std::sync::Arc::new(apply::FieldTracking {
        manager: apply::manager_for(query.get("fieldManager").map(String::as_str), user_agent),
        group: info.group.to_string(),
        version: info.version.to_string(),
        kind: info.kind.to_string(),
        subresource: subresource.to_string(),
        reset,
        types: if k1s_apimachinery::catalog::is_custom(info) {
            // A custom resource merges by its CRD's schema.
            std::sync::Arc::new(apply::schema::CustomResource::new(
                crate::apiextensions::schema_for_gvk(&info.gvk()),
            ))
        } else {
            apply::schema::builtin()
        },
    })
}

/// Upstream's checks of `fieldManager` on a create or update (`CreateOptions`, `UpdateOptions`).
fn check_field_manager(query: &Query, options_kind: &str) -> Result<(), ApiError> {
    let errs = apply::validate_field_manager(query.get("fieldManager").map_or("", String::as_str));
    if errs.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(options_kind, "meta.k8s.io", "", errs))
}

/// Upstream's `ValidatePatchOptions`: apply needs a `fieldManager`; `force` is for apply only.
fn check_patch_options(query: &Query, patch_type: PatchType) -> Result<(), ApiError> {
    let manager = query.get("fieldManager").map_or("", String::as_str);
    let mut errs = Vec::new();
    if patch_type != PatchType::Apply {
        if query.contains_key("force") {
            errs.push(k1s_apimachinery::FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            ));
        }
    } else if manager.is_empty() {
        errs.push(k1s_apimachinery::FieldError::required(
            "fieldManager",
            "is required for apply patch",
        ));
    }
    errs.extend(apply::validate_field_manager(manager));
    if errs.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid("PatchOptions", "meta.k8s.io", "", errs))
}

/// An update of the object (or its subresource), with the kind's update warnings (upstream's
/// WarningsOnUpdate, for the attempt that was stored) added to `warnings`.
#[allow(clippy::too_many_arguments)]
async fn update_object<F>(
    ctx: &ApiContext,
    info: &'static ResourceInfo,
    target: Target<'_>,
    strategy: &'static dyn crate::registry::Strategy,
    name: &str,
    subresource: Option<&str>,
    write: &WriteOptions,
    warnings: &mut Vec<String>,
    mut mutate: F,
) -> Result<Value, ApiError>
where
    F: FnMut(&Value) -> Result<Value, ApiError> + Send,
{
    let mut update_warnings = Vec::new();
    let updated = update_stored(
        ctx,
        info,
        target,
        strategy,
        name,
        subresource,
        write,
        |old| {
            let new = mutate(old)?;
            if subresource.is_none() {
                update_warnings = strategy.warnings_on_update(&new, old);
            }
            Ok(new)
        },
    )
    .await?;
    warnings.extend(update_warnings);
    Ok(updated)
}

/// The registry's read-modify-write, with a Service's allocations on the way: what the update
/// needs (a ClusterIP when it stops being ExternalName, node ports when it becomes NodePort) is
/// reserved first and filled in, and what it gives up is released after, as upstream's Service
/// REST update does.
#[allow(clippy::too_many_arguments)]
async fn update_stored<F>(
    ctx: &ApiContext,
    info: &'static ResourceInfo,
    target: Target<'_>,
    strategy: &'static dyn crate::registry::Strategy,
    name: &str,
    subresource: Option<&str>,
    write: &WriteOptions,
    mut mutate: F,
) -> Result<Value, ApiError>
where
    F: FnMut(&Value) -> Result<Value, ApiError> + Send,
{
    if !is_service(info) || subresource.is_some() {
        return ctx
            .registry
            .update(target, strategy, name, subresource, write, mutate)
            .await;
    }
    let namespace = target.namespace.unwrap_or_default();
    let mut reserved = crate::allocator::Reserved::default();
    // Each round reserves what the previous one found missing; a Service changed in between
    // may need another round.
    for _ in 0..8 {
        let mut needs = None;
        let mut wanted = None;
        let mut seen_old = None;
        let result = ctx
            .registry
            .update(target, strategy, name, None, write, |old| {
                let mut new = mutate(old)?;
                match crate::allocator::fill_update(old, &mut new, &reserved) {
                    Ok(()) => {
                        seen_old = Some(old.clone());
                        Ok(new)
                    }
                    Err(missing) => {
                        needs = Some(missing);
                        wanted = Some(new);
                        Err(ApiError::internal("service allocation pending"))
                    }
                }
            })
            .await;
        if let (Some(missing), Some(svc)) = (needs, wanted) {
            let reserving = ctx
                .services
                .reserve_for_update(
                    &ctx.registry,
                    target,
                    &svc,
                    &missing,
                    &mut reserved,
                    write.dry_run,
                )
                .await;
            if let Err(e) = reserving {
                settle(ctx, (namespace, name), None, None, reserved, write.dry_run).await;
                return Err(e);
            }
            continue;
        }
        // A dry run shows what the update would get and keeps nothing.
        let stored = result.as_ref().ok();
        settle(
            ctx,
            (namespace, name),
            seen_old.as_ref(),
            stored,
            reserved,
            write.dry_run,
        )
        .await;
        return result;
    }
    settle(ctx, (namespace, name), None, None, reserved, write.dry_run).await;
    Err(ApiError::conflict_modified(&info.group_resource(), name))
}

/// Gives back a Service update's reservations: a dry run's from memory only.
async fn settle(
    ctx: &ApiContext,
    service: (&str, &str),
    old: Option<&Value>,
    stored: Option<&Value>,
    reserved: crate::allocator::Reserved,
    dry_run: bool,
) {
    if dry_run {
        ctx.services.forget_reserved(reserved).await;
    } else {
        ctx.services
            .settle_update(&ctx.registry, service, old, stored, reserved)
            .await;
    }
}

/// Stores a new object: service IP allocation around the registry's create, warnings, and
/// the answer in the request's version.
async fn create_object(
    ctx: &ApiContext,
    info: &'static ResourceInfo,
    target: Target<'_>,
    strategy: &'static dyn crate::registry::Strategy,
    mut obj: Value,
    write: &WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<Value, ApiError> {
    crate::conversion::to_storage(info, &mut obj)?;
    if is_service(info) {
        // The IPAddress names its Service: a generated name is needed before allocation.
        if meta::name(&obj).is_none_or(str::is_empty)
            && meta::generate_name(&obj).is_some_and(|g| !g.is_empty())
        {
            crate::registry::object::generate_name(&mut obj)?;
        }
        ctx.services
            .allocate(&ctx.registry, target, &mut obj, write.dry_run)
            .await?;
    }
    let result = ctx
        .registry
        .create(target, strategy, obj.clone(), write)
        .await;
    if is_service(info) && (result.is_err() || write.dry_run) {
        ctx.services
            .release(&ctx.registry, &obj, !write.dry_run)
            .await;
    }
    let mut created = result?;
    warnings.extend(strategy.warnings_on_create(&created));
    crate::conversion::to_version(info, &mut created)?;
    Ok(created)
}

/// Server-side apply (`application/apply-patch+yaml`): merges the configuration into the
/// object for the `fieldManager`, or creates the object when it does not exist (201).
#[allow(clippy::too_many_arguments)]
async fn server_side_apply(
    ctx: &ApiContext,
    user: &crate::reviews::UserInfo,
    info: &'static ResourceInfo,
    target: Target<'_>,
    strategy: &'static dyn crate::registry::Strategy,
    query: &Query,
    body: &[u8],
    mut write: WriteOptions,
    name: &str,
    subname: Option<&str>,
    validation: field_validation::Mode,
    warnings: &mut Vec<String>,
    output: &Output,
    include: table::IncludeObject,
) -> Result<Response, ApiError> {
    if body.len() > encoding::MAX_BODY_BYTES {
        return Err(ApiError::request_entity_too_large("limit is 3145728"));
    }
    let (config, duplicate) = encoding::decode_yaml_last_key_wins(body)?;
    if !config.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration must be an object",
        ));
    }
    let gvk_of = |v: &Value| {
        format!(
            "{}, Kind={}",
            v.get("apiVersion").and_then(Value::as_str).map_or_else(
                || "/".to_string(),
                |a| if a.contains('/') {
                    a.to_string()
                } else {
                    format!("/{a}")
                }
            ),
            v.get("kind").and_then(Value::as_str).unwrap_or_default()
        )
    };
    if meta::api_version(&config) != Some(info.api_version().as_str())
        || meta::kind(&config) != Some(info.kind)
    {
        return Err(ApiError::bad_request(format!(
            "invalid object type: {}",
            gvk_of(&config)
        )));
    }
    let mut config = check_body(info, target.namespace, Some(name), config)?;
    if meta::name(&config).is_none_or(str::is_empty) {
        meta::set_name(&mut config, name).map_err(|e| ApiError::bad_request(e.to_string()))?;
    }
    let sub = subname.unwrap_or("");
    let headers = HeaderMap::new();
    let tracking = field_tracking(info, &headers, query, sub);
    // Upstream converts the applied configuration to its typed form whatever the validation
    // mode: an undeclared field fails the request (a plain error, so a 500 without reason).
    let undeclared = apply::walk::undeclared_fields(&config, tracking.ty());
    if !undeclared.is_empty() {
        let errors = match undeclared.as_slice() {
            [one] => one.clone(),
            many => format!("errors:\n  {}", many.join("\n  ")),
        };
        return Err(ApiError::new(
            500,
            Reason::Unknown,
            format!(
                "failed to create typed patch object ({}/{}; {}): {errors}",
                meta::namespace(&config).unwrap_or(""),
                meta::name(&config).unwrap_or(""),
                gvk_of(&config)
            ),
        ));
    }
    // Duplicate keys: the last won; Strict refuses them and Warn reports them afterwards, as
    // upstream's apply patcher runs go-yaml's strict decoder.
    if let Some(duplicate) = duplicate {
        match validation {
            field_validation::Mode::Strict => {
                return Err(ApiError::bad_request(format!(
                    "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {duplicate}"
                )));
            }
            field_validation::Mode::Warn => warnings.push(duplicate),
            field_validation::Mode::Ignore => {}
        }
    }
    let force = query.get("force").is_some_and(|f| f == "true");
    write.managed_fields = crate::registry::ManagedFieldsMode::Applied;
    let result = update_object(
        ctx,
        info,
        target,
        strategy,
        name,
        subname.filter(|s| *s != "scale"),
        &write,
        warnings,
        |old| {
            let mut new = apply::apply(&tracking, Some(old), &config, force)?;
            type_check(info, &mut new)?;
            rbac_write_check(ctx, user, info, target.namespace, &new, Some(old))?;
            Ok(new)
        },
    )
    .await;
    match result {
        Ok(applied) => Ok(object_response(
            StatusCode::OK,
            info,
            applied,
            output,
            include,
        )),
        Err(e) if e.is_not_found() && subname.is_none() => {
            let mut obj = apply::apply(&tracking, None, &config, force)?;
            if let Some(ns) = target.namespace.filter(|_| info.namespaced) {
                meta::set_namespace(&mut obj, ns)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
            }
            rbac_write_check(ctx, user, info, target.namespace, &obj, None)?;
            type_check(info, &mut obj)?;
            let created = create_object(ctx, info, target, strategy, obj, &write, warnings).await?;
            Ok(object_response(
                StatusCode::CREATED,
                info,
                created,
                output,
                include,
            ))
        }
        Err(e) => Err(e),
    }
}

fn decode_body(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    if body.len() > encoding::MAX_BODY_BYTES {
        return Err(ApiError::request_entity_too_large("limit is 3145728"));
    }
    encoding::decode_object(headers, body)
}

fn validation_mode(query: &Query) -> Result<field_validation::Mode, ApiError> {
    field_validation::mode(query.get("fieldValidation").map(String::as_str))
}

/// The Scale of an object: built-ins by their fixed paths, custom resources by their CRD's.
fn scale_of(
    info: &ResourceInfo,
    custom: Option<&crate::apiextensions::ServedVersion>,
    obj: &Value,
) -> Value {
    match custom.and_then(|c| c.scale.as_ref()) {
        Some(paths) => crate::apiextensions::served::to_scale(paths, obj),
        None => subresource::to_scale(info, obj),
    }
}

/// The object after a Scale was written to it.
fn scale_into(
    custom: Option<&crate::apiextensions::ServedVersion>,
    old: &Value,
    scale: &Value,
) -> Result<Value, ApiError> {
    let checked = subresource::apply_scale(old, scale)?;
    match custom.and_then(|c| c.scale.as_ref()) {
        Some(paths) => Ok(crate::apiextensions::served::apply_scale(paths, old, scale)),
        None => Ok(checked),
    }
}

/// A body must decode as its typed kind, as upstream decodes every built-in body into its Go type.
fn type_check(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if catalog::is_custom(info) {
        return Ok(());
    }
    crate::openapi::schemas()
        .type_check_filling_zeros(info.group, info.version, info.kind, obj)
        .map_err(|e| {
            ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: {e}",
                kind = info.kind,
                version = info.version
            ))
        })
}

/// A body must describe the kind, namespace and name the URL addresses.
fn check_body(
    info: &ResourceInfo,
    namespace: Option<&str>,
    name: Option<&str>,
    mut obj: Value,
) -> Result<Value, ApiError> {
    let want_api_version = info.api_version();
    match meta::api_version(&obj) {
        None | Some("") => obj["apiVersion"] = Value::String(want_api_version.clone()),
        Some(v) if v == want_api_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({want_api_version})"
            )));
        }
    }
    match meta::kind(&obj) {
        None | Some("") => obj["kind"] = Value::String(info.kind.to_string()),
        Some(k) if k == info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
    }
    if let (Some(ns), Some(body_ns)) = (namespace, meta::namespace(&obj))
        && !body_ns.is_empty()
        && body_ns != ns
        && info.namespaced
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if let (Some(url_name), Some(body_name)) = (name, meta::name(&obj))
        && !body_name.is_empty()
        && body_name != url_name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
        )));
    }
    Ok(obj)
}

fn dry_run(query: &Query) -> Result<bool, ApiError> {
    match query.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "Invalid dry run value: unsupported dry run value: {other:?}; only \"All\" is supported"
        ))),
    }
}

fn parse_selectors(
    info: &ResourceInfo,
    query: &Query,
) -> Result<(Option<LabelSelector>, Option<FieldSelector>), ApiError> {
    let labels = match query.get("labelSelector").filter(|s| !s.is_empty()) {
        Some(s) => Some(
            LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.message().to_string()))?,
        ),
        None => None,
    };
    let fields = match query.get("fieldSelector").filter(|s| !s.is_empty()) {
        Some(s) => {
            let sel = FieldSelector::parse(s)
                .map_err(|e| ApiError::bad_request(e.message().to_string()))?;
            let extra = strategies::for_resource(info).selectable_fields();
            for field in sel.fields() {
                if field != "metadata.name"
                    && field != "metadata.namespace"
                    && !extra.contains(&field)
                {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {field}"
                    )));
                }
            }
            Some(sel)
        }
        None => None,
    };
    Ok((labels, fields))
}

fn list_query(info: &ResourceInfo, query: &Query) -> Result<ListQuery, ApiError> {
    let (label_selector, field_selector) = parse_selectors(info, query)?;
    let limit = match query.get("limit").filter(|s| !s.is_empty()) {
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?
            .max(0) as usize,
        None => 0,
    };
    Ok(ListQuery {
        label_selector,
        field_selector,
        limit,
        continue_token: query.get("continue").filter(|c| !c.is_empty()).cloned(),
        resource_version: query.get("resourceVersion").cloned().unwrap_or_default(),
        resource_version_match: query
            .get("resourceVersionMatch")
            .cloned()
            .unwrap_or_default(),
    })
}

fn watch_query(info: &ResourceInfo, query: &Query) -> Result<WatchQuery, ApiError> {
    let (label_selector, field_selector) = parse_selectors(info, query)?;
    let bool_param = |k: &str| query.get(k).map(|v| v == "true" || v == "1");
    let send_initial_events = bool_param("sendInitialEvents");
    let allow_bookmarks = bool_param("allowWatchBookmarks").unwrap_or(false);
    if send_initial_events == Some(true) {
        if query.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan") {
            return Err(ApiError::invalid(
                "ListOptions",
                "meta.k8s.io",
                "",
                vec![k1s_apimachinery::FieldError::forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )],
            ));
        }
        if !allow_bookmarks {
            return Err(ApiError::invalid(
                "ListOptions",
                "meta.k8s.io",
                "",
                vec![k1s_apimachinery::FieldError::forbidden(
                    "allowWatchBookmarks",
                    "sendInitialEvents requires setting allowWatchBookmarks to true",
                )],
            ));
        }
    }
    let timeout = match query.get("timeoutSeconds").filter(|s| !s.is_empty()) {
        Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid timeoutSeconds: {t}"))
        })?)),
        None => None,
    };
    Ok(WatchQuery {
        label_selector,
        field_selector,
        resource_version: query.get("resourceVersion").cloned().unwrap_or_default(),
        send_initial_events,
        allow_bookmarks,
        timeout,
        bookmark_interval: None,
    })
}

fn delete_options(query: &Query, body: &[u8], dry_run: bool) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions {
        dry_run,
        ..Default::default()
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v: Value = if body.starts_with(crate::protobuf::MAGIC) {
            crate::protobuf::decode_object(body)
                .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions body: {e}")))?
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions body: {e}")))?
        };
        opts.precondition_uid = v
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.precondition_resource_version = v
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.propagation_policy = v
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.grace_period_seconds = v.get("gracePeriodSeconds").and_then(Value::as_i64);
        if let Some(orphan) = v.get("orphanDependents").and_then(Value::as_bool) {
            opts.propagation_policy
                .get_or_insert_with(|| if orphan { "Orphan" } else { "Background" }.into());
        }
        if v.get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|x| x == "All"))
        {
            opts.dry_run = true;
        }
    }
    if let Some(p) = query.get("propagationPolicy").filter(|p| !p.is_empty()) {
        opts.propagation_policy = Some(p.clone());
    }
    if let Some(g) = query.get("gracePeriodSeconds").filter(|g| !g.is_empty()) {
        opts.grace_period_seconds = Some(
            g.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds: {g}")))?,
        );
    }
    Ok(opts)
}

/// `?includeObject=` of a Table request: None, Metadata (the default) or Object.
fn include_object(query: &Query) -> Result<table::IncludeObject, ApiError> {
    table::IncludeObject::parse(query.get("includeObject").map(String::as_str))
        .map_err(ApiError::from)
}

/// PartialObjectMetadata of an object.
fn partial_metadata(obj: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The PartialObjectMetadata of an object as a view of its metadata: a watch serializes it
/// without copying the metadata first (the garbage collector's and quota's informers receive
/// one for every write).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PartialMetadataRef<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: &'a Value,
}

impl<'a> PartialMetadataRef<'a> {
    fn of(obj: &'a Value, version: &str) -> Self {
        static EMPTY: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| json!({}));
        PartialMetadataRef {
            kind: "PartialObjectMetadata",
            api_version: if version == "v1beta1" {
                "meta.k8s.io/v1beta1"
            } else {
                "meta.k8s.io/v1"
            },
            metadata: obj.get("metadata").unwrap_or(&*EMPTY),
        }
    }
}

/// One JSON watch line, `{"type":..,"object":..}` and a newline, serialized from borrowed parts.
fn watch_line(ev: &WatchEvent, object: &impl serde::Serialize) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Line<'a, T> {
        #[serde(rename = "type")]
        type_: &'a str,
        object: T,
    }
    let mut line = serde_json::to_vec(&Line {
        type_: ev.type_name(),
        object,
    })
    .unwrap_or_default();
    line.push(b'\n');
    line
}

fn table_version(v: &str) -> &'static str {
    if v == "v1beta1" {
        table::TABLE_V1BETA1
    } else {
        table::TABLE_V1
    }
}

/// The printer columns of a custom resource version (`None` for built-ins).
fn custom_columns(info: &ResourceInfo) -> Option<Vec<table::custom::PrinterColumn>> {
    if !catalog::is_custom(info) {
        return None;
    }
    crate::apiextensions::lookup(info).map(|c| c.columns.clone())
}

fn object_response(
    status: StatusCode,
    info: &ResourceInfo,
    obj: Value,
    output: &Output,
    include: table::IncludeObject,
) -> Response {
    let custom = custom_columns(info);
    let value = match output {
        Output::Table(v) if custom.is_some() => table::custom::object_table(
            custom.as_deref().unwrap_or_default(),
            &obj,
            include,
            jiff::Timestamp::now(),
            table_version(v),
            true,
        ),
        Output::Table(v) => table::object_table(
            info.group,
            info.resource,
            &obj,
            include,
            jiff::Timestamp::now(),
            table_version(v),
            true,
        ),
        Output::Metadata(v) => partial_metadata(&obj, v),
        _ => obj,
    };
    encoded_response(status, &value, output)
}

fn list_response(
    info: &ResourceInfo,
    list: crate::registry::ListResult,
    output: &Output,
    include: table::IncludeObject,
) -> Response {
    let mut metadata = json!({ "resourceVersion": list.resource_version });
    if let Some(c) = &list.continue_token {
        metadata["continue"] = Value::String(c.clone());
    }
    if let Some(n) = list.remaining_item_count {
        metadata["remainingItemCount"] = Value::from(n);
    }
    let custom = custom_columns(info);
    let mut value = match output {
        Output::Table(v) if custom.is_some() => table::custom::list_table(
            custom.as_deref().unwrap_or_default(),
            &list.items,
            include,
            &list.resource_version,
            list.continue_token.as_deref(),
            jiff::Timestamp::now(),
            table_version(v),
        ),
        Output::Table(v) => table::to_table(
            info.group,
            info.resource,
            &list.items,
            include,
            &list.resource_version,
            list.continue_token.as_deref(),
            jiff::Timestamp::now(),
            table_version(v),
        ),
        Output::Metadata(v) => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": format!("meta.k8s.io/{v}"),
            "metadata": metadata,
            "items": list.items.iter().map(|o| partial_metadata(o, v)).collect::<Vec<_>>(),
        }),
        _ => json!({
            "kind": info.list_kind(),
            "apiVersion": info.api_version(),
            "metadata": metadata,
            "items": list.items,
        }),
    };
    if let (Output::Table(_), Some(n)) = (output, list.remaining_item_count) {
        value["metadata"]["remainingItemCount"] = Value::from(n);
    }
    encoded_response(StatusCode::OK, &value, output)
}

/// A chunked stream of JSON watch events, one per line. Table events carry the column
/// definitions only in the first event, as upstream sends them.
fn watch_response(
    info: &'static ResourceInfo,
    stream: crate::registry::WatchStream,
    output: Output,
    include: table::IncludeObject,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    open: crate::metrics::WatchGuard,
) -> Response {
    let mut first_table = true;
    let custom = custom_columns(info);
    let proto =
        output == Output::Protobuf && crate::protobuf::supports(&info.api_version(), info.kind);
    let events = stream
        .take_until(async move {
            let _ = shutdown.wait_for(|down| *down).await;
        })
        .map(move |ev: WatchEvent| {
            let _still_open = &open;
            let line = match (&output, &ev) {
                (
                    Output::Table(v),
                    WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o),
                ) => {
                    let headers = std::mem::take(&mut first_table);
                    let now = jiff::Timestamp::now();
                    let table = if let Some(columns) = &custom {
                        table::custom::object_table(
                            columns,
                            o,
                            include,
                            now,
                            table_version(v),
                            headers,
                        )
                    } else {
                        table::object_table(
                            info.group,
                            info.resource,
                            o,
                            include,
                            now,
                            table_version(v),
                            headers,
                        )
                    };
                    watch_line(&ev, &table)
                }
                (
                    Output::Metadata(v),
                    WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o),
                ) => watch_line(&ev, &PartialMetadataRef::of(o, v)),
                _ if proto => {
                    // Length-prefixed protobuf WatchEvent frames, as upstream streams them.
                    match crate::protobuf::encode_watch_event(ev.type_name(), ev.object()) {
                        Ok(frame) => frame,
                        Err(_) => watch_line(&ev, ev.object()),
                    }
                }
                _ => watch_line(&ev, ev.object()),
            };
            Ok::<_, std::convert::Infallible>(Bytes::from(line))
        });
    let mut resp = Response::new(Body::from_stream(events));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(if proto {
            "application/vnd.kubernetes.protobuf;stream=watch"
        } else {
            "application/json"
        }),
    );
    resp.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}
