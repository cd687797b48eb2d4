//! apiextensions.k8s.io: CustomResourceDefinitions turned into served resources of the one
//! generic registry (catalog entries, a schema-driven strategy, discovery), and the in-process
//! controllers upstream's apiextensions-apiserver runs: naming (`NamesAccepted`), establishing
//! (`Established`) and the `customresourcecleanup` finalizer.

pub mod cel;
mod cel_k8s;
pub mod crd;
mod formats;
pub mod openapi;
pub mod openapi_v2;
pub mod schema;
pub mod served;
mod structural;
pub mod webhook_converter;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};
use std::time::Duration;

use k1s_apimachinery::catalog::{self, ResourceInfo, dynamic::DynamicResource};
use k1s_apimachinery::meta;
use serde_json::{Value, json};

use crate::discovery::{ServedApis, ServedResource, ServedSubresource, storage_version_hash};
use crate::registry::informer::{self, Change};
use crate::registry::{DeleteOptions, ListQuery, Registry, Target, WriteOptions};
pub use served::{ServedVersion, lookup, schema_for_gvk};

const GROUP: &str = "apiextensions.k8s.io";
const VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// CRDs (by uid) whose custom resources are being deleted now.
static FINALIZING: LazyLock<std::sync::Mutex<std::collections::HashSet<String>>> =
    LazyLock::new(Default::default);

static DISCOVERY: LazyLock<RwLock<Arc<ServedApis>>> =
    LazyLock::new(|| RwLock::new(Arc::new(ServedApis::builtin())));

/// Everything served now, built-ins and custom resources, for discovery.
pub fn served_apis() -> Arc<ServedApis> {
    DISCOVERY.read().unwrap_or_else(|p| p.into_inner()).clone()
}

fn crd_info() -> Option<&'static ResourceInfo> {
    catalog::find(GROUP, "v1", "customresourcedefinitions")
}

/// Follows CustomResourceDefinitions until shutdown, serving what they define.
pub fn start(registry: Registry, shutdown: tokio::sync::watch::Receiver<bool>) {
    let Some(info) = crd_info() else { return };
    let state: Arc<tokio::sync::Mutex<BTreeMap<String, Value>>> = Arc::default();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        informer::run(registry.clone(), info, shutdown, move |change| {
            let state = state.clone();
            let registry = registry.clone();
            let stop = stop.clone();
            async move {
                let mut crds = state.lock().await;
                let touched: Vec<String> = match change {
                    Change::Listed(items) => {
                        let gone: Vec<String> = crds.keys().cloned().collect();
                        crds.clear();
                        for item in items {
                            if let Some(n) = meta::name(&item) {
                                crds.insert(n.to_string(), item.clone());
                            }
                        }
                        gone.into_iter().chain(crds.keys().cloned()).collect()
                    }
                    Change::Upserted(obj) => {
                        let name = meta::name(&obj).unwrap_or_default().to_string();
                        crds.insert(name.clone(), (*obj).clone());
                        vec![name]
                    }
                    Change::Deleted(obj) => {
                        let name = meta::name(&obj).unwrap_or_default().to_string();
                        crds.remove(&name);
                        // Names it held may now be free for the others of its group.
                        let group = obj.pointer("/spec/group").cloned();
                        std::iter::once(name)
                            .chain(
                                crds.iter()
                                    .filter(|(_, c)| c.pointer("/spec/group").cloned() == group)
                                    .map(|(n, _)| n.clone()),
                            )
                            .collect()
                    }
                };
                for name in touched {
                    reconcile(&registry, &mut crds, &name, &stop).await;
                }
            }
        })
        .await;
    });
}

async fn reconcile(
    registry: &Registry,
    crds: &mut BTreeMap<String, Value>,
    name: &str,
    stop: &tokio::sync::watch::Receiver<bool>,
) {
    let Some(crd) = crds.get(name).cloned() else {
        unpublish(name);
        return;
    };
    if meta::is_being_deleted(&crd) {
        if meta::has_finalizer(&crd, crd::CLEANUP_FINALIZER) {
            publish(&crd, true);
            if !crd::is_condition_true(&crd, "Terminating")
                || condition_reason(&crd, "Terminating") != Some("InstanceDeletionInProgress")
            {
                let _ = write_status(registry, name, |c| {
                    set_condition(
                        c,
                        "Terminating",
                        "True",
                        "InstanceDeletionInProgress",
                        "CustomResource deletion is in progress",
                    );
                })
                .await;
            }
            // One cleanup per CRD (by uid), also after a restart in the middle of one.
            let uid = meta::uid(&crd).unwrap_or_default().to_string();
            if FINALIZING
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(uid.clone())
            {
                let registry = registry.clone();
                let stop = stop.clone();
                tokio::spawn(async move {
                    finalize(registry, crd, stop).await;
                    FINALIZING
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&uid);
                });
            }
        } else {
            publish(&crd, true);
        }
        return;
    }
    let (names, accepted, established) = names_and_conditions(crds, &crd);
    let serve = accepted.0 == "True" || crd::is_condition_true(&crd, "Established");
    let mut desired = crd.clone();
    desired["status"]["acceptedNames"] = names.clone();
    set_condition(
        &mut desired,
        "NamesAccepted",
        accepted.0,
        accepted.1,
        &accepted.2,
    );
    // Established: once the names are accepted, this server serves the resource at once (it
    // publishes below before the status is written), so there is no Installing pause.
    let est = if accepted.0 == "True" || established.0 == "True" {
        (
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        )
    } else {
        established
    };
    set_condition(&mut desired, "Established", est.0, est.1, est.2);
    if serve || est.0 == "True" {
        publish(&desired, false);
    } else {
        unpublish(name);
    }
    if desired["status"] != crd["status"] {
        let status = desired["status"].clone();
        if let Ok(updated) = write_status(registry, name, move |c| {
            c["status"]["acceptedNames"] = status["acceptedNames"].clone();
            c["status"]["conditions"] = status["conditions"].clone();
        })
        .await
        {
            crds.insert(name.to_string(), updated);
        }
    }
}

fn condition_reason<'a>(crd: &'a Value, ty: &str) -> Option<&'a str> {
    crd.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)?["reason"]
        .as_str()
}

/// Upstream's naming controller: the names a CRD may have (those no other CRD of its group
/// has accepted), the `NamesAccepted` condition, and the `Established` condition it implies.
#[allow(clippy::type_complexity)]
fn names_and_conditions(
    crds: &BTreeMap<String, Value>,
    crd: &Value,
) -> (
    Value,
    (&'static str, &'static str, String),
    (&'static str, &'static str, &'static str),
) {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let own = meta::name(crd).unwrap_or_default();
    let mut resources: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for (n, other) in crds {
        if n == own || other.pointer("/spec/group").and_then(Value::as_str) != Some(group) {
            continue;
        }
        let an = &other["status"]["acceptedNames"];
        for k in ["plural", "singular"] {
            if let Some(s) = an[k].as_str() {
                resources.push(s.to_string());
            }
        }
        resources.extend(
            an["shortNames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string)),
        );
        for k in ["kind", "listKind"] {
            if let Some(s) = an[k].as_str() {
                kinds.push(s.to_string());
            }
        }
    }
    let requested = &crd["spec"]["names"];
    let accepted_now = &crd["status"]["acceptedNames"];
    let mut new_names = if accepted_now.is_object() {
        accepted_now.clone()
    } else {
        json!({})
    };
    let mut condition: Option<(&'static str, String)> = None;
    let fresh = |req: &str, acc: &str, used: &[String]| -> Result<(), String> {
        if req == acc || !used.iter().any(|u| u == req) {
            Ok(())
        } else {
            Err(format!("{req:?} is already in use"))
        }
    };
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    for (field, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
    ] {
        match fresh(&s(requested, field), &s(accepted_now, field), used) {
            Ok(()) => new_names[field] = requested[field].clone(),
            Err(e) => condition = Some((reason, e)),
        }
    }
    if requested["shortNames"] != accepted_now["shortNames"] {
        let existing: Vec<String> = accepted_now["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect();
        let mut errs = Vec::new();
        for short in requested["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if existing.iter().any(|e| e == short)
                || short == s(accepted_now, "plural")
                || short == s(accepted_now, "singular")
            {
                continue;
            }
            if let Err(e) = fresh(short, "", &resources) {
                errs.push(e);
            }
        }
        if errs.is_empty() {
            match requested.get("shortNames") {
                Some(v) => new_names["shortNames"] = v.clone(),
                None => {
                    if let Some(o) = new_names.as_object_mut() {
                        o.remove("shortNames");
                    }
                }
            }
        } else {
            let msg = if errs.len() == 1 {
                errs.remove(0)
            } else {
                format!("[{}]", errs.join(", "))
            };
            condition = Some(("ShortNamesConflict", msg));
        }
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match fresh(&s(requested, field), &s(accepted_now, field), &kinds) {
            Ok(()) => new_names[field] = requested[field].clone(),
            Err(e) => condition = Some((reason, e)),
        }
    }
    match requested.get("categories") {
        Some(c) => new_names["categories"] = c.clone(),
        None => {
            if let Some(o) = new_names.as_object_mut() {
                o.remove("categories");
            }
        }
    }
    let accepted = match condition {
        Some((reason, msg)) => ("False", reason, msg),
        None => ("True", "NoConflicts", "no conflicts found".to_string()),
    };
    let established = if crd::is_condition_true(crd, "Established") {
        (
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        )
    } else if accepted.0 == "True" {
        (
            "False",
            "Installing",
            "the initial names have been accepted",
        )
    } else {
        ("False", "NotAccepted", "not all names are accepted")
    };
    (new_names, accepted, established)
}

/// The condition a CRD gets when it is marked for deletion.
pub fn mark_terminating(crd: &mut Value) {
    set_condition(
        crd,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
}

/// Sets a condition, keeping its lastTransitionTime when the status does not change.
fn set_condition(crd: &mut Value, ty: &str, status: &str, reason: &str, message: &str) {
    if !crd["status"].is_object() {
        crd["status"] = json!({});
    }
    let conditions = &mut crd["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let now = crate::registry::now_rfc3339();
    match list.iter_mut().find(|c| c["type"] == ty) {
        Some(c) => {
            if c["status"] != status {
                c["lastTransitionTime"] = json!(now);
            }
            c["status"] = json!(status);
            c["reason"] = json!(reason);
            c["message"] = json!(message);
        }
        None => list.push(json!({
            "type": ty, "status": status, "lastTransitionTime": now,
            "reason": reason, "message": message,
        })),
    }
}

async fn write_status(
    registry: &Registry,
    name: &str,
    change: impl Fn(&mut Value) + Send + Sync,
) -> Result<Value, k1s_apimachinery::ApiError> {
    let info = crd_info().ok_or_else(|| k1s_apimachinery::ApiError::internal("no CRD kind"))?;
    let t = Target {
        info,
        namespace: None,
    };
    registry
        .update(
            t,
            &crd::CustomResourceDefinitions,
            name,
            Some("status"),
            &WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                change(&mut new);
                Ok(new)
            },
        )
        .await
}

/// The catalog entries and served versions a CRD defines.
fn publish(crd: &Value, terminating: bool) {
    let name = meta::name(crd).unwrap_or_default().to_string();
    let group = crd["spec"]["group"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let names = &crd["status"]["acceptedNames"];
    let plural = crd["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let storage = crd::storage_version(crd).unwrap_or_default();
    let versions: Vec<&Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true)
        .collect();
    let resources: Vec<DynamicResource> = versions
        .iter()
        .map(|v| {
            let mut subresources = Vec::new();
            if v.pointer("/subresources/status").is_some() {
                subresources.push("status".to_string());
            }
            if v.pointer("/subresources/scale").is_some() {
                subresources.push("scale".to_string());
            }
            DynamicResource {
                group: group.clone(),
                version: v["name"].as_str().unwrap_or_default().to_string(),
                resource: plural.clone(),
                kind: names["kind"].as_str().unwrap_or_default().to_string(),
                singular: names["singular"].as_str().unwrap_or_default().to_string(),
                namespaced: crd["spec"]["scope"] == "Namespaced",
                short_names: strings(&names["shortNames"]),
                categories: strings(&names["categories"]),
                verbs: VERBS.iter().map(|s| (*s).to_string()).collect(),
                subresources,
            }
        })
        .collect();
    let entries = catalog::dynamic::register(&name, &resources);
    let conversion = webhook_converter::ConversionWebhook::from_crd(crd);
    let served: Vec<Arc<ServedVersion>> = entries
        .into_iter()
        .zip(versions)
        .map(|(info, v)| {
            let raw_schema = v.pointer("/schema/openAPIV3Schema").cloned();
            let status = v.pointer("/subresources/status").is_some();
            let scale = v
                .pointer("/subresources/scale")
                .map(|s| served::ScalePaths {
                    spec_replicas: s["specReplicasPath"]
                        .as_str()
                        .unwrap_or(".spec.replicas")
                        .into(),
                    status_replicas: s["statusReplicasPath"]
                        .as_str()
                        .unwrap_or(".status.replicas")
                        .into(),
                    label_selector: s["labelSelectorPath"].as_str().map(str::to_string),
                });
            Arc::new(ServedVersion {
                info,
                crd_name: name.clone(),
                storage_version: storage.clone(),
                schema: raw_schema
                    .as_ref()
                    .and_then(|s| schema::Schema::parse(s).ok()),
                strategy: served::strategy_for(raw_schema.as_ref(), status, &selectable_fields(v)),
                raw_schema,
                status,
                scale,
                columns: crate::table::custom::PrinterColumn::for_version(v),
                terminating,
                conversion: conversion.clone(),
                deprecation_warning: deprecation_warning(crd, v),
            })
        })
        .collect();
    served::publish(&name, served);
    rebuild_discovery();
}

/// The warning for a CRD version marked `deprecated`, as upstream's crdHandler gives it: the
/// version's `deprecationWarning`, else `<group>/<version> <Kind> is deprecated`, pointing at the
/// newest served, non-deprecated version newer than it when there is one.
fn deprecation_warning(crd: &Value, version: &Value) -> Option<String> {
    if version["deprecated"] != true {
        return None;
    }
    if let Some(text) = version["deprecationWarning"].as_str() {
        // An empty text silences the warning (upstream records no empty warning).
        return (!text.is_empty()).then(|| text.to_string());
    }
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
    let name = version["name"].as_str().unwrap_or_default();
    let mut text = format!("{group}/{name} {kind} is deprecated");
    let newer = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true && v["deprecated"] != true)
        .filter_map(|v| v["name"].as_str())
        .filter(|v| catalog::dynamic::compare_versions(name, v).is_lt())
        .max_by(|a, b| catalog::dynamic::compare_versions(a, b));
    if let Some(newer) = newer {
        text.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    Some(text)
}

/// A version's `selectableFields` as field selector names (`.spec.color` -> `spec.color`).
fn selectable_fields(version: &Value) -> Vec<String> {
    version["selectableFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["jsonPath"].as_str())
        .map(|p| p.trim_start_matches('.').to_string())
        .collect()
}

fn unpublish(name: &str) {
    catalog::dynamic::register(name, &[]);
    served::publish(name, Vec::new());
    rebuild_discovery();
}

fn rebuild_discovery() {
    let mut apis = ServedApis::builtin();
    for v in served::all() {
        let info = v.info;
        let strings = |s: &[&str]| s.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
        apis.add(ServedResource {
            group: info.group.into(),
            version: info.version.into(),
            resource: info.resource.into(),
            singular: info.singular.into(),
            kind: info.kind.into(),
            namespaced: info.namespaced,
            verbs: strings(info.verbs),
            short_names: strings(info.short_names),
            categories: strings(info.categories),
            storage_version_hash: Some(storage_version_hash(
                info.group,
                &v.storage_version,
                info.kind,
            )),
            subresources: info
                .subresources
                .iter()
                .map(|s| ServedSubresource {
                    name: s.name.into(),
                    group: s.group.into(),
                    version: s.version.into(),
                    kind: s.kind.into(),
                    verbs: strings(s.verbs),
                })
                .collect(),
        });
    }
    *DISCOVERY.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(apis);
}

/// Upstream's finalizer controller: delete every custom resource of a deleted CRD, then let
/// the CRD go.
async fn finalize(registry: Registry, crd: Value, stop: tokio::sync::watch::Receiver<bool>) {
    let name = meta::name(&crd).unwrap_or_default().to_string();
    let storage = crd::storage_version(&crd).unwrap_or_default();
    let group = crd["spec"]["group"].as_str().unwrap_or_default();
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
    let info = catalog::find(group, &storage, plural).or_else(|| {
        served::all()
            .into_iter()
            .find(|v| v.crd_name == name)
            .map(|v| v.info)
    });
    if let Some(info) = info {
        let t = Target {
            info,
            namespace: None,
        };
        loop {
            if *stop.borrow() {
                return;
            }
            let Ok(list) = registry.list(t, &ListQuery::default()).await else {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            };
            if list.items.is_empty() {
                break;
            }
            for obj in &list.items {
                let ns = meta::namespace(obj).map(str::to_string);
                let target = Target {
                    info,
                    namespace: ns.as_deref(),
                };
                let n = meta::name(obj).unwrap_or_default();
                if !meta::is_being_deleted(obj) {
                    let _ = registry.delete(target, n, &DeleteOptions::default()).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let _ = write_status(&registry, &name, |c| {
        set_condition(
            c,
            "Terminating",
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
        );
    })
    .await;
    if let Some(crd_info) = crd_info() {
        let t = Target {
            info: crd_info,
            namespace: None,
        };
        let _ = registry
            .update(
                t,
                &crd::CustomResourceDefinitions,
                &name,
                None,
                &WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    meta::remove_finalizer(&mut new, crd::CLEANUP_FINALIZER)
                        .map_err(|e| k1s_apimachinery::ApiError::internal(e.to_string()))?;
                    Ok(new)
                },
            )
            .await;
    }
}
