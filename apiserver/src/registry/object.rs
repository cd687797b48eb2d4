//! Object semantics shared by every kind: system metadata on create, what an update may change
//! (status isolation, generation), deletion marking with finalizers, and the storage encoding.

use bytes::Bytes;
use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::meta;
use k1s_apimachinery::validation;
use k1s_apimachinery::{ApiError, FieldError, GroupResource};
use k1s_storage::{KeyValue, Revision};
use serde_json::{Value, json};

use super::{DeleteOptions, Strategy, Target};

/// Finalizer the garbage collector uses for `propagationPolicy=Orphan`.
const ORPHAN_FINALIZER: &str = "orphan";
/// Finalizer the garbage collector uses for `propagationPolicy=Foreground`.
const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Stored bytes: the object without its resourceVersion (the storage revision is the truth).
pub fn encode(obj: &Value) -> Bytes {
    if obj.pointer("/metadata/resourceVersion").is_none() {
        return Bytes::from(serde_json::to_vec(obj).unwrap_or_default());
    }
    let mut obj = obj.clone();
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    Bytes::from(serde_json::to_vec(&obj).unwrap_or_default())
}

/// Stored bytes of an object of `info`, in its storage version (see
/// [`crate::conversion::for_storage`]).
pub fn encode_stored(info: &ResourceInfo, obj: &Value) -> Result<Bytes, ApiError> {
    let stored = crate::conversion::for_storage(info, obj)?;
    Ok(encode(&stored))
}

/// The object just written as `encode(&obj)` at `revision`, as `decode` would read it back,
/// without parsing it again.
pub fn stored(info: &ResourceInfo, mut obj: Value, revision: Revision) -> Result<Value, ApiError> {
    meta::set_resource_version(&mut obj, &revision.to_string())
        .map_err(|e| ApiError::internal(e.to_string()))?;
    crate::conversion::to_version(info, &mut obj)?;
    Ok(obj)
}

/// An object read from storage, with its resourceVersion, in the version `info` serves.
pub fn decode(info: &ResourceInfo, kv: &KeyValue) -> Result<Value, ApiError> {
    in_version(info, decode_stored(kv)?)
}

/// An object read from storage, with its resourceVersion, in its storage version.
pub fn decode_stored(kv: &KeyValue) -> Result<Value, ApiError> {
    let mut obj: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| ApiError::internal(format!("stored object {} is not JSON: {e}", kv.key)))?;
    meta::set_resource_version(&mut obj, &kv.mod_revision.to_string())
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(obj)
}

/// A storage-version object in the version `info` serves.
pub fn in_version(info: &ResourceInfo, mut obj: Value) -> Result<Value, ApiError> {
    crate::conversion::to_version(info, &mut obj)?;
    Ok(obj)
}

fn meta_err(e: meta::MetaError) -> ApiError {
    ApiError::bad_request(e.to_string())
}

/// System fields of a new object: uid, creationTimestamp, generation; client-set ones dropped.
pub fn prepare_create(
    t: Target<'_>,
    strategy: &dyn Strategy,
    obj: &mut Value,
    requester: Option<&crate::auth::UserInfo>,
) -> Result<(), ApiError> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        if obj.get("metadata").is_some_and(|m| !m.is_null()) {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        obj["metadata"] = json!({});
    }
    let m = meta::metadata_mut(obj).map_err(meta_err)?;
    for system in [
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "selfLink",
        "managedFields",
    ] {
        m.remove(system);
    }
    if let Some(ns) = t.namespace.filter(|_| t.info.namespaced) {
        m.insert("namespace".into(), Value::String(ns.to_string()));
    }
    m.insert(
        "uid".into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    m.insert("creationTimestamp".into(), Value::String(now_rfc3339()));
    strategy.default(obj);
    strategy.prepare_for_create(obj);
    if let Some(user) = requester {
        strategy.prepare_for_create_by(obj, user);
    }
    if strategy.tracks_generation(t.info) {
        meta::set_generation(obj, 1).map_err(meta_err)?;
    }
    crate::go_shape::fill_zero_fields(obj);
    Ok(())
}

/// Appends 5 random characters to generateName, as upstream's SimpleNameGenerator.
pub fn generate_name(obj: &mut Value) -> Result<(), ApiError> {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let base = meta::generate_name(obj).unwrap_or_default();
    let base: String = base.chars().take(58).collect();
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..5]
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    meta::set_name(obj, &format!("{base}{suffix}")).map_err(meta_err)
}

pub fn validate_create(
    t: Target<'_>,
    strategy: &dyn Strategy,
    obj: &Value,
) -> Result<(), ApiError> {
    let name_fn = name_validator(t.info);
    let mut errs = meta::validate_object_meta(obj, t.info.namespaced, name_fn);
    errs.extend(strategy.validate(obj));
    invalid_if_any(t.info, obj, errs)
}

fn name_validator(info: &ResourceInfo) -> validation::ValidateNameFn {
    if info.group == "rbac.authorization.k8s.io" {
        return name_is_path_segment;
    }
    match info.resource {
        "namespaces" => validation::name_is_dns_label,
        "services" => validation::name_is_dns1035_label,
        "ipaddresses" => k1s_apimachinery::ip::name_is_ip_address,
        // `v1.` is the core group's APIService; the strategy requires `<version>.<group>`.
        "apiservices" => name_is_path_segment,
        _ => validation::name_is_dns_subdomain,
    }
}

/// Upstream's ValidatePathSegmentName, used for RBAC names (which may contain `:`).
fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    if !prefix && (name == "." || name == "..") {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

fn invalid_if_any(info: &ResourceInfo, obj: &Value, errs: Vec<FieldError>) -> Result<(), ApiError> {
    if errs.is_empty() {
        return Ok(());
    }
    let name = meta::name(obj).unwrap_or_default();
    Err(ApiError::invalid(info.kind, info.group, name, errs))
}

/// The object an update stores: system fields kept, status or spec isolated per subresource,
/// generation bumped on spec changes (validation is `validate_update`).
pub fn prepare_update(
    t: Target<'_>,
    strategy: &dyn Strategy,
    mut new: Value,
    old: &Value,
    subresource: Option<&str>,
) -> Result<Value, ApiError> {
    if !new.get("metadata").is_some_and(Value::is_object) {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    let name = meta::name(old).unwrap_or_default();
    match meta::name(&new) {
        Some(n) if n == name => {}
        Some("") | None => meta::set_name(&mut new, name).map_err(meta_err)?,
        Some(n) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
    }
    if t.info.namespaced {
        let ns = meta::namespace(old).unwrap_or_default().to_string();
        meta::set_namespace(&mut new, &ns).map_err(meta_err)?;
    }
    if subresource == Some("finalize") {
        // namespaces/finalize changes spec.finalizers only (upstream's finalizeStrategy).
        let finalizers = new
            .pointer("/spec/finalizers")
            .cloned()
            .unwrap_or(Value::Array(Vec::new()));
        let mut merged = old.clone();
        merged["spec"]["finalizers"] = finalizers;
        let rv = meta::resource_version(&new).map(str::to_string);
        meta::set_resource_version(&mut merged, rv.as_deref().unwrap_or("")).map_err(meta_err)?;
        return Ok(merged);
    }
    if subresource == Some("ephemeralcontainers") {
        // pods/ephemeralcontainers changes spec.ephemeralContainers only (upstream's
        // podEphemeralContainersStrategy).
        let mut merged = old.clone();
        match new.pointer("/spec/ephemeralContainers").cloned() {
            Some(list) => merged["spec"]["ephemeralContainers"] = list,
            None => {
                if let Some(spec) = merged.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("ephemeralContainers");
                }
            }
        }
        let rv = meta::resource_version(&new).map(str::to_string);
        meta::set_resource_version(&mut merged, rv.as_deref().unwrap_or("")).map_err(meta_err)?;
        new = merged;
    } else if subresource == Some("resize") {
        // pods/resize changes the resources and resizePolicy of containers only (upstream's
        // podResizeStrategy); what else the request changed is dropped.
        let mut merged = old.clone();
        for list in ["containers", "initContainers"] {
            let Some(requested) = new
                .pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
            else {
                continue;
            };
            for c in requested {
                let name = c.get("name").and_then(Value::as_str);
                let Some(kept) = merged
                    .pointer_mut(&format!("/spec/{list}"))
                    .and_then(Value::as_array_mut)
                    .and_then(|l| {
                        l.iter_mut()
                            .find(|k| k.get("name").and_then(Value::as_str) == name)
                    })
                    .and_then(Value::as_object_mut)
                else {
                    continue;
                };
                for field in ["resources", "resizePolicy"] {
                    match c.get(field) {
                        Some(v) => kept.insert(field.into(), v.clone()),
                        None => kept.remove(field),
                    };
                }
            }
        }
        let rv = meta::resource_version(&new).map(str::to_string);
        meta::set_resource_version(&mut merged, rv.as_deref().unwrap_or("")).map_err(meta_err)?;
        new = merged;
    } else if matches!(subresource, Some("status" | "approval")) {
        // A status update changes status and, as upstream's status strategies (which restore
        // only `spec` from the stored object) let it, metadata: a patch of /status may add
        // annotations (the conformance tests of the workload, Service and quota status
        // endpoints do). The system fields are restored below as for any update.
        let status = new.get("status").cloned();
        let mut merged = old.clone();
        match status {
            Some(s) => merged["status"] = s,
            None => {
                if let Some(o) = merged.as_object_mut() {
                    o.remove("status");
                }
            }
        }
        if let Some(kept) = status_update_kept_metadata(t.info) {
            let mut metadata = new.get("metadata").cloned().unwrap_or_else(|| json!({}));
            for field in kept {
                match old.pointer(&format!("/metadata/{field}")) {
                    Some(v) => metadata[*field] = v.clone(),
                    None => {
                        if let Some(m) = metadata.as_object_mut() {
                            m.remove(*field);
                        }
                    }
                }
            }
            merged["metadata"] = metadata;
        }
        let rv = meta::resource_version(&new).map(str::to_string);
        meta::set_resource_version(&mut merged, rv.as_deref().unwrap_or("")).map_err(meta_err)?;
        new = merged;
    } else if t.info.has_status() && subresource != Some("binding") {
        // A main-resource update cannot change status (pods/binding sets PodScheduled).
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    // System metadata is the server's.
    let (new_meta, old_meta) = match (new.get_mut("metadata"), old.get("metadata")) {
        (Some(Value::Object(n)), Some(Value::Object(o))) => (n, o),
        _ => return Err(ApiError::bad_request("metadata must be an object")),
    };
    for system in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "generateName",
    ] {
        match old_meta.get(system) {
            Some(v) => new_meta.insert(system.to_string(), v.clone()),
            None => new_meta.remove(system),
        };
    }
    new_meta.remove("selfLink");
    new_meta.remove("managedFields");
    strategy.default(&mut new);
    match subresource {
        Some(sub) if !sub.is_empty() => {
            strategy.prepare_for_subresource_update(sub, &mut new, old);
        }
        _ => strategy.prepare_for_update(&mut new, old),
    }
    crate::go_shape::fill_zero_fields(&mut new);
    if matches!(subresource, Some("status" | "binding")) {
        // Status strategies never bump the generation (a deployment's annotations written
        // with its status included), nor does a pod's binding (upstream's assignPod writes
        // the node name without a strategy).
        if let (Some(m), Some(g)) = (
            new.get_mut("metadata").and_then(Value::as_object_mut),
            old.pointer("/metadata/generation"),
        ) {
            m.insert("generation".into(), g.clone());
        }
    } else if strategy.tracks_generation(t.info) && spec_changed(&new, old) {
        let g = meta::generation(old).unwrap_or(0) + 1;
        meta::set_generation(&mut new, g).map_err(meta_err)?;
    }
    Ok(new)
}

/// What a `/status` write may not change of metadata, by upstream's status strategies: `None`
/// keeps the stored metadata whole (custom resources, whose status strategy copies the stored
/// object; FlowSchemas and PriorityLevelConfigurations; APIServices), otherwise the request's
/// metadata but for these fields.
fn status_update_kept_metadata(info: &ResourceInfo) -> Option<&'static [&'static str]> {
    if catalog::is_custom(info) {
        return None;
    }
    match (info.group, info.resource) {
        ("flowcontrol.apiserver.k8s.io", _) | ("apiregistration.k8s.io", "apiservices") => None,
        ("apps", "deployments") => Some(&["labels"]),
        // Old kubelets corrupted owner references through pods/status.
        ("", "pods") => Some(&["ownerReferences"]),
        _ => Some(&[]),
    }
}

/// Validation of an update (after mutating admission, as upstream orders it).
pub fn validate_update(
    t: Target<'_>,
    strategy: &dyn Strategy,
    new: &Value,
    old: &Value,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    let mut errs = meta::validate_object_meta_update(new, old);
    // The resourceVersion rule is enforced by the store's compare-and-swap, not here.
    errs.retain(|e| e.field != "metadata.resourceVersion");
    errs.extend(match subresource {
        Some(sub) => strategy.validate_subresource_update(sub, new, old),
        None => strategy.validate_update(new, old),
    });
    invalid_if_any(t.info, new, errs)
}

/// Whether anything outside metadata and status differs.
fn spec_changed(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("metadata");
            o.remove("status");
        }
        v
    };
    strip(new) != strip(old)
}

/// Equal apart from resourceVersion: such an update writes nothing.
pub fn same_content(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        v
    };
    strip(new) == strip(old)
}

/// An object being deleted whose last finalizer is gone: it must now disappear, unless a grace
/// period is still running (a pod whose kubelet has not yet stopped it: upstream's
/// ShouldDeleteDuringUpdate). A namespace also waits for its `spec.finalizers` (content cleanup).
pub fn finalized(obj: &Value) -> bool {
    if !meta::is_being_deleted(obj) || !meta::finalizers(obj).is_empty() {
        return false;
    }
    if meta::deletion_grace_period_seconds(obj).is_some_and(|g| g != 0) {
        return false;
    }
    let is_namespace = obj.get("kind").and_then(Value::as_str) == Some("Namespace");
    !is_namespace
        || obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty())
}

pub fn check_delete_preconditions(
    obj: &Value,
    opts: &DeleteOptions,
    gr: &GroupResource,
    name: &str,
) -> Result<(), ApiError> {
    if let Some(uid) = &opts.precondition_uid {
        let actual = meta::uid(obj).unwrap_or_default();
        if uid != actual {
            return Err(ApiError::conflict(
                gr,
                name,
                format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                ),
            ));
        }
    }
    if let Some(rv) = &opts.precondition_resource_version {
        let actual = meta::resource_version(obj).unwrap_or_default();
        if rv != actual {
            return Err(ApiError::conflict(
                gr,
                name,
                format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                ),
            ));
        }
    }
    Ok(())
}

/// What a delete does to the stored object (upstream's `BeforeDelete` and the store's
/// graceful-deletion and finalizer handling).
#[derive(Debug, PartialEq)]
pub enum DeletePlan {
    /// Remove it now; the value is the object as the answer reports it.
    Now(Value),
    /// Store this marked object and keep it: finalizers or a grace period must run out first.
    Mark(Value),
    /// Leave it as it is: its deletion is already pending.
    Unchanged,
}

/// Pods are the one built-in kind deleted gracefully (upstream's RESTGracefulDeleteStrategy).
fn deletes_gracefully(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.resource == "pods"
}

/// Upstream's `podStrategy.CheckGracefulDelete`: the grace period a delete gives a pod. An
/// unscheduled or terminated pod goes at once; otherwise the request's period, else the pod's
/// `terminationGracePeriodSeconds`.
fn pod_grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let mut period = requested
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(0);
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str);
    if node.is_none_or(str::is_empty) {
        period = 0;
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        period = 0;
    }
    if period < 0 { 1 } else { period }
}

fn rfc3339(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn set_deletion(obj: &mut Value, at: &str, grace: i64) -> Result<(), ApiError> {
    meta::set_deletion_timestamp(obj, Some(at)).map_err(|e| ApiError::internal(e.to_string()))?;
    meta::set_deletion_grace_period_seconds(obj, Some(grace))
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn bump_generation(obj: &mut Value) -> Result<(), ApiError> {
    match meta::generation(obj) {
        Some(g) if g > 0 => {
            meta::set_generation(obj, g + 1).map_err(|e| ApiError::internal(e.to_string()))
        }
        _ => Ok(()),
    }
}

/// Plans a delete: graceful deletion for pods (a deletion timestamp `grace` seconds ahead, which
/// a later delete may only shorten), then finalizers (the policy's and the object's own), which
/// keep any object until they are removed.
pub fn plan_delete(
    info: &ResourceInfo,
    obj: &Value,
    opts: &DeleteOptions,
) -> Result<DeletePlan, ApiError> {
    // Negative periods count as one second on the delete path.
    let requested = opts.grace_period_seconds.map(|g| if g < 0 { 1 } else { g });
    let now = jiff::Timestamp::now();
    let mut marked = obj.clone();
    let mut grace_period = None;
    if deletes_gracefully(info) {
        let pending = meta::deletion_grace_period_seconds(obj).filter(|g| *g != 0);
        match (meta::deletion_timestamp(obj), pending) {
            (None | Some(""), _) => {
                let period = pod_grace_period(obj, requested);
                let at = rfc3339(now + jiff::SignedDuration::from_secs(period));
                set_deletion(&mut marked, &at, period)?;
                bump_generation(&mut marked)?;
                grace_period = Some(period);
            }
            // Already deleted with no grace left: finish it (below).
            (Some(_), None) => {}
            (Some(at), Some(current)) => {
                let current = current.max(1);
                // Only a shorter grace period may be given; anything else leaves it pending.
                let Some(period) = requested.filter(|p| *p < current) else {
                    return Ok(DeletePlan::Unchanged);
                };
                let at: jiff::Timestamp = at
                    .parse()
                    .map_err(|_| ApiError::internal(format!("invalid deletionTimestamp {at}")))?;
                let at = at - jiff::SignedDuration::from_secs(current - period);
                set_deletion(&mut marked, &rfc3339(at), period)?;
                grace_period = Some(period);
            }
        }
    }
    let mut finalizers = meta::finalizers(obj);
    let has = |finalizers: &[String], f: &str| finalizers.iter().any(|x| x == f);
    // Upstream's deletionFinalizersForGarbageCollection: an explicit policy replaces the
    // garbage collector's finalizers; without one the object's own stays, else the kind's
    // default (core/v1 ReplicationControllers orphan their pods, for back compatibility).
    let (orphan, foreground) = match opts.propagation_policy.as_deref() {
        Some("Background") => (false, false),
        Some("Orphan") => (true, false),
        Some("Foreground") => (false, true),
        None if has(&finalizers, ORPHAN_FINALIZER) => (true, false),
        None if has(&finalizers, FOREGROUND_FINALIZER) => (false, true),
        None => (
            info.group.is_empty() && info.resource == "replicationcontrollers",
            false,
        ),
        Some(other) => {
            return Err(ApiError::invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                vec![FieldError::not_supported(
                    "propagationPolicy",
                    other,
                    &["Foreground", "Background", "Orphan", "nil"],
                )],
            ));
        }
    };
    // Recorded as upstream does; the garbage collector (controller-manager) acts on them.
    finalizers.retain(|f| f != ORPHAN_FINALIZER && f != FOREGROUND_FINALIZER);
    if orphan {
        finalizers.push(ORPHAN_FINALIZER.to_string());
    }
    if foreground {
        finalizers.push(FOREGROUND_FINALIZER.to_string());
    }
    let is_namespace = info.group.is_empty() && info.resource == "namespaces";
    // A CRD waits for its custom resources to be deleted (upstream's CRD REST Delete).
    let is_crd =
        info.group == "apiextensions.k8s.io" && info.resource == "customresourcedefinitions";
    if is_crd && !meta::is_being_deleted(obj) {
        let f = crate::apiextensions::crd::CLEANUP_FINALIZER;
        if !finalizers.iter().any(|x| x == f) {
            finalizers.push(f.to_string());
        }
        crate::apiextensions::mark_terminating(&mut marked);
    }
    if !finalizers.is_empty() || is_namespace {
        meta::set_finalizers(&mut marked, &finalizers)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        // A graceful deletion (a pod given a grace period now) keeps its timestamp and period:
        // the kubelet shortens it to 0 once the containers stopped, and the finalizers hold the
        // object after that (upstream's updateForGracefulDeletionAndFinalizers). Otherwise,
        // upstream's markAsDeleting: no grace period, the timestamp now unless an earlier one is
        // set.
        if grace_period.is_none_or(|p| p <= 0) {
            if !meta::is_being_deleted(&marked) {
                bump_generation(&mut marked)?;
            }
            let earlier = meta::deletion_timestamp(&marked)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .filter(|t| *t <= now);
            let at = rfc3339(earlier.unwrap_or(now));
            set_deletion(&mut marked, &at, 0)?;
        }
        if is_namespace {
            marked["status"]["phase"] = Value::String("Terminating".into());
        }
        return Ok(if marked == *obj {
            DeletePlan::Unchanged
        } else {
            DeletePlan::Mark(marked)
        });
    }
    Ok(match grace_period {
        Some(period) if period > 0 => DeletePlan::Mark(marked),
        Some(_) => DeletePlan::Now(marked),
        None => DeletePlan::Now(obj.clone()),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k1s_apimachinery::catalog;

    fn info(group: &str, resource: &str) -> &'static ResourceInfo {
        catalog::resources()
            .iter()
            .find(|r| r.group == group && r.resource == resource)
            .unwrap()
    }

    fn pod(node: &str, phase: &str) -> Value {
        json!({"metadata": {"name": "p", "uid": "u"},
               "spec": {"nodeName": node, "terminationGracePeriodSeconds": 30},
               "status": {"phase": phase}})
    }

    fn grace(opts_grace: Option<i64>) -> DeleteOptions {
        DeleteOptions {
            grace_period_seconds: opts_grace,
            ..Default::default()
        }
    }

    fn stamp(v: &Value) -> jiff::Timestamp {
        meta::deletion_timestamp(v).unwrap().parse().unwrap()
    }

    #[test]
    fn a_running_pod_gets_its_termination_grace_period() {
        let pods = info("", "pods");
        let DeletePlan::Mark(m) = plan_delete(pods, &pod("n1", "Running"), &grace(None)).unwrap()
        else {
            panic!("not marked")
        };
        assert_eq!(meta::deletion_grace_period_seconds(&m), Some(30));
        let ahead = stamp(&m).duration_since(jiff::Timestamp::now()).as_secs();
        assert!((28..=30).contains(&ahead), "{ahead}");
        // The request's period wins; a negative one counts as 1 s.
        let DeletePlan::Mark(m) =
            plan_delete(pods, &pod("n1", "Running"), &grace(Some(-5))).unwrap()
        else {
            panic!("not marked")
        };
        assert_eq!(meta::deletion_grace_period_seconds(&m), Some(1));
    }

    #[test]
    fn unscheduled_terminated_or_zero_grace_pods_go_at_once() {
        let pods = info("", "pods");
        for (p, g) in [
            (pod("", "Pending"), None),
            (pod("n1", "Succeeded"), None),
            (pod("n1", "Failed"), Some(10)),
            (pod("n1", "Running"), Some(0)),
        ] {
            let DeletePlan::Now(last) = plan_delete(pods, &p, &grace(g)).unwrap() else {
                panic!("not deleted at once: {p}")
            };
            assert_eq!(meta::deletion_grace_period_seconds(&last), Some(0));
        }
    }

    #[test]
    fn a_pending_graceful_deletion_may_only_be_shortened() {
        let pods = info("", "pods");
        let DeletePlan::Mark(m) = plan_delete(pods, &pod("n1", "Running"), &grace(None)).unwrap()
        else {
            panic!("not marked")
        };
        assert_eq!(
            plan_delete(pods, &m, &grace(None)).unwrap(),
            DeletePlan::Unchanged
        );
        assert_eq!(
            plan_delete(pods, &m, &grace(Some(45))).unwrap(),
            DeletePlan::Unchanged
        );
        let DeletePlan::Mark(short) = plan_delete(pods, &m, &grace(Some(10))).unwrap() else {
            panic!("not shortened")
        };
        assert_eq!(meta::deletion_grace_period_seconds(&short), Some(10));
        assert_eq!(stamp(&m).duration_since(stamp(&short)).as_secs(), 20);
        assert!(matches!(
            plan_delete(pods, &short, &grace(Some(0))).unwrap(),
            DeletePlan::Now(_)
        ));
    }

    #[test]
    fn finalizers_hold_any_object_with_no_grace_left() {
        let pods = info("", "pods");
        let mut p = pod("n1", "Running");
        p["metadata"]["finalizers"] = json!(["example.com/keep"]);
        // A running pod keeps its grace period: the finalizer does not cut it short.
        let DeletePlan::Mark(m) = plan_delete(pods, &p, &grace(None)).unwrap() else {
            panic!("not marked")
        };
        assert_eq!(meta::deletion_grace_period_seconds(&m), Some(30));
        assert!(stamp(&m) > jiff::Timestamp::now());
        // The kubelet's grace-0 delete moves the timestamp back; the finalizer still holds it.
        let DeletePlan::Mark(done) = plan_delete(pods, &m, &grace(Some(0))).unwrap() else {
            panic!("not held by its finalizer")
        };
        assert_eq!(meta::deletion_grace_period_seconds(&done), Some(0));
        assert!(stamp(&done) <= jiff::Timestamp::now());
        // A pod that is already terminated has no grace to keep.
        let mut ended = pod("n1", "Succeeded");
        ended["metadata"]["finalizers"] = json!(["example.com/keep"]);
        let DeletePlan::Mark(m) = plan_delete(pods, &ended, &grace(None)).unwrap() else {
            panic!("not marked")
        };
        assert_eq!(meta::deletion_grace_period_seconds(&m), Some(0));
        assert!(stamp(&m) <= jiff::Timestamp::now());
        let cms = info("", "configmaps");
        let cm = json!({"metadata": {"name": "c", "generation": 1}});
        let DeletePlan::Mark(m) = plan_delete(
            cms,
            &cm,
            &DeleteOptions {
                propagation_policy: Some("Foreground".into()),
                ..Default::default()
            },
        )
        .unwrap() else {
            panic!("not marked")
        };
        assert_eq!(meta::finalizers(&m), vec!["foregroundDeletion".to_string()]);
        assert_eq!(meta::generation(&m), Some(2));
        assert_eq!(
            plan_delete(cms, &cm, &DeleteOptions::default()).unwrap(),
            DeletePlan::Now(cm.clone())
        );
    }
}
