//! Server-side apply and `metadata.managedFields`: structured-merge-diff written once, generic
//! and schema-driven. Every client write records who set which fields (Update operations);
//! `application/apply-patch+yaml` merges a configuration into the object, with conflicts
//! between managers and removal of fields an applier stopped applying.

pub mod fieldpath;
pub mod managers;
#[rustfmt::skip]
mod pointer_fields;
pub mod schema;
#[cfg(test)]
mod tests;
pub mod walk;

use std::sync::{Arc, LazyLock};

use k1s_apimachinery::FieldError;
use k1s_apimachinery::status::{ApiError, Reason, StatusCause, StatusDetails};
use serde_json::{Value, json};

use fieldpath::{PathElement, Set, fields, path_string};
use managers::{Entry, Managed, ManagerId, Operation};
use schema::{Ty, TypeSource};

/// Upstream's limit on a field manager's length.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// The manager that owns an object's fields when it is first applied to without any.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The cause type of an apply conflict.
pub const CAUSE_FIELD_MANAGER_CONFLICT: &str = "FieldManagerConflict";

/// Which fields a write may not own (upstream's reset fields of the strategy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    /// Nothing is reset.
    None,
    /// A main-resource write of a kind with a status subresource: `status` is not its to set.
    Status,
    /// A status-subresource write: `spec` is not its to set.
    Spec,
}

/// Who writes, through which endpoint, and the kind's schema.
#[derive(Clone)]
pub struct FieldTracking {
    pub manager: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    /// `status`, `scale`, or empty for the main resource.
    pub subresource: String,
    pub reset: Reset,
    pub types: Arc<dyn TypeSource>,
}

impl std::fmt::Debug for FieldTracking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldTracking")
            .field("manager", &self.manager)
            .field("kind", &self.kind)
            .field("subresource", &self.subresource)
            .finish_non_exhaustive()
    }
}

impl FieldTracking {
    /// The apiVersion entries are written in (`apps/v1`, `v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind's root type.
    pub fn ty(&self) -> Ty<'_> {
        Ty::root(&*self.types, &self.group, &self.version, &self.kind)
    }

    fn id(&self, manager: &str, op: Operation) -> ManagerId {
        ManagerId::new(manager, op, &self.api_version(), &self.subresource)
    }

    /// Removes what no manager owns: the server's metadata, and the reset fields.
    fn filter(&self, set: &mut Set) {
        // In place: this runs three times on every write, and rebuilding the set per path
        // was a tenth of a create's CPU.
        for path in STRIPPED_PATHS.iter() {
            set.remove(path);
        }
        match self.reset {
            Reset::None => {}
            Reset::Status => set.remove_prefix(&fields(&["status"])),
            Reset::Spec => set.remove_prefix(&fields(&["spec"])),
        }
    }

    fn filtered_compare(&self, lhs: Option<&Value>, rhs: &Value) -> walk::Comparison {
        let mut c = walk::compare(lhs, Some(rhs), self.ty(), lhs.is_none());
        self.filter(&mut c.added);
        self.filter(&mut c.modified);
        self.filter(&mut c.removed);
        c
    }
}

/// The paths upstream strips from every manager's set (its stripMeta manager).
static STRIPPED_PATHS: LazyLock<Vec<fieldpath::Path>> =
    LazyLock::new(|| STRIPPED.iter().map(|p| fields(p)).collect());

const STRIPPED: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// The manager of a write: the `fieldManager` parameter, else the User-Agent up to its first
/// '/', unprintable characters left out and cut at 128 bytes (upstream's prefixFromUserAgent).
pub fn manager_for(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let prefix = user_agent
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| is_printable(*c)) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Go's `unicode.IsPrint`, near enough: no control characters, and no spaces but ' '.
fn is_printable(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// Upstream's checks of the `fieldManager` parameter.
pub fn validate_field_manager(field_manager: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::too_long(
            "fieldManager",
            Some(FIELD_MANAGER_MAX_LENGTH),
        ));
    }
    for (i, c) in field_manager.chars().enumerate() {
        if !is_printable(c) {
            errs.push(FieldError::invalid(
                "fieldManager",
                field_manager,
                format!("invalid character {} (at position {i})", go_rune(c)),
            ));
        }
    }
    errs
}

/// Go's `%#U`: `U+0007`.
fn go_rune(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

fn now() -> String {
    crate::registry::object::now_rfc3339()
}

/// The managedFields a write starts from (upstream's decodeLiveOrNew): a subresource write
/// keeps the live ones; `[]` or `[{}]` resets them; other sent entries replace the live ones
/// unless they cannot be decoded.
fn live_or_new(t: &FieldTracking, old: Option<&Value>, requested: Option<&Value>) -> Managed {
    let live = || {
        managers::decode(old.and_then(|o| o.pointer("/metadata/managedFields"))).unwrap_or_default()
    };
    if !t.subresource.is_empty() {
        return live();
    }
    match requested {
        Some(Value::Array(a)) if a.is_empty() => Managed::new(),
        Some(Value::Array(a)) if a.len() == 1 && a[0].as_object().is_some_and(|m| m.is_empty()) => {
            Managed::new()
        }
        Some(r @ Value::Array(_)) => match managers::decode(Some(r)) {
            Ok(m) if !m.is_empty() => m,
            _ => live(),
        },
        _ => live(),
    }
}

/// Writes `managed` into `obj` (no key at all when empty).
fn store(obj: &mut Value, managed: &Managed) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if managed.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), managers::encode(managed));
        }
    }
}

fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
}

type Conflicts = Vec<(ManagerId, Set)>;

/// Takes what changed away from the other managers (upstream's `update`): fields `workflow`
/// changed that another manager owns are conflicts (an error unless `force`), and removed
/// fields are nobody's any more.
fn update_others(
    managed: &mut Managed,
    cmp: &walk::Comparison,
    workflow: Option<&ManagerId>,
    force: bool,
) -> Result<(), Conflicts> {
    let changed = cmp.modified.union(&cmp.added);
    let conflicts: Conflicts = managed
        .iter()
        .filter(|(id, _)| Some(*id) != workflow)
        .map(|(id, e)| (id.clone(), e.set.intersection(&changed)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if !force && !conflicts.is_empty() {
        return Err(conflicts);
    }
    for (id, c) in &conflicts {
        if let Some(e) = managed.get_mut(id) {
            e.set = e.set.difference(c);
        }
    }
    if !cmp.removed.is_empty() {
        for (id, e) in managed.iter_mut() {
            if Some(id) != workflow {
                e.set = e.set.difference(&cmp.removed);
            }
        }
    }
    managed.retain(|_, e| !e.set.is_empty());
    Ok(())
}

/// Records an Update operation (create, update, patch) in `new`'s managedFields: the fields it
/// changed become its manager's (merged into that manager's earlier entry, time refreshed),
/// and nobody else's. `requested` is the managedFields the client sent, if any.
pub fn track_update(
    t: &FieldTracking,
    old: Option<&Value>,
    new: &mut Value,
    requested: Option<&Value>,
) {
    let mut managed = live_or_new(t, old, requested);
    take_managed_fields(new);
    let cmp = t.filtered_compare(old, new);
    let _ = update_others(&mut managed, &cmp, None, true);
    let current = cmp.modified.union(&cmp.added);
    if !current.is_empty() {
        let id = t.id(&t.manager, Operation::Update);
        let entry = managed.entry(id).or_insert_with(|| Entry {
            set: Set::new(),
            api_version: t.api_version(),
            time: None,
        });
        entry.set.union_in_place(&current);
        entry.api_version = t.api_version();
        entry.time = Some(now());
    }
    managers::cap_updates(&mut managed);
    store(new, &managed);
}

/// Applies `config` (the request body as an object) to `live` (`None`: the object does not
/// exist yet) for `t.manager`, and returns the object to store with its managedFields.
/// Conflicts with other managers are a 409 unless `force`.
pub fn apply(
    t: &FieldTracking,
    live: Option<&Value>,
    config: &Value,
    force: bool,
) -> Result<Value, ApiError> {
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let ty = t.ty();
    let mut live_v = live.cloned().unwrap_or_else(|| json!({}));
    let mut managed = managers::decode(live.and_then(|o| o.pointer("/metadata/managedFields")))
        .unwrap_or_default();
    take_managed_fields(&mut live_v);
    if managed.is_empty() && live.is_some() {
        // Fields set before anyone applied belong to a placeholder Update manager.
        let cmp = t.filtered_compare(None, &live_v);
        let current = cmp.modified.union(&cmp.added);
        if !current.is_empty() {
            managed.insert(
                t.id(BEFORE_FIRST_APPLY, Operation::Update),
                Entry {
                    set: current,
                    api_version: t.api_version(),
                    time: Some(now()),
                },
            );
        }
    }
    let mut config = config.clone();
    take_managed_fields(&mut config);
    let merged = walk::merge(Some(&live_v), Some(&config), &ty).unwrap_or_else(|| json!({}));
    let applier = t.id(&t.manager, Operation::Apply);
    let last = managed.get(&applier).map(|e| e.set.clone());
    let previous_time = managed.get(&applier).and_then(|e| e.time.clone());
    let mut set = walk::to_field_set(&config, ty);
    t.filter(&mut set);
    let cmp = t.filtered_compare(Some(&live_v), &merged);
    update_others(&mut managed, &cmp, Some(&applier), force).map_err(conflict_error)?;
    managed.insert(
        applier.clone(),
        Entry {
            set,
            api_version: t.api_version(),
            time: previous_time.clone(),
        },
    );
    let mut result = match &last {
        Some(last) if !last.is_empty() => prune(&merged, &managed, last, &ty),
        _ => merged,
    };
    let cmp = t.filtered_compare(Some(&live_v), &result);
    update_others(&mut managed, &cmp, Some(&applier), force).map_err(conflict_error)?;
    if (result != live_v || previous_time.is_none())
        && let Some(e) = managed.get_mut(&applier)
    {
        e.time = Some(now());
    }
    managers::cap_updates(&mut managed);
    if !result.get("metadata").is_some_and(Value::is_object) {
        result["metadata"] = json!({});
    }
    store(&mut result, &managed);
    Ok(result)
}

/// Removes from `merged` the fields the applier applied last time and no longer does, unless
/// another manager (or the applier's new set) still owns them (upstream's `prune`).
fn prune(merged: &Value, managed: &Managed, last: &Set, ty: &Ty<'_>) -> Value {
    let last = walk::ensure_named_fields(last, ty);
    let pruned = walk::remove_items(merged, &last, ty);
    // Add back what anyone owns.
    let mut owned = Set::new();
    for e in managed.values() {
        owned.union_in_place(&e.set);
    }
    let owned = walk::ensure_named_fields(&owned, ty);
    let merged_set = walk::ensure_named_fields(&walk::to_field_set(merged, *ty), ty);
    let pruned_set = walk::ensure_named_fields(&walk::to_field_set(&pruned, *ty), ty);
    let pruned = walk::remove_items(
        merged,
        &merged_set.difference(&pruned_set.union(&owned)),
        ty,
    );
    // Add back items left dangling (not in the last applied set).
    let pruned_set = walk::ensure_named_fields(&walk::to_field_set(&pruned, *ty), ty);
    walk::remove_items(
        merged,
        &merged_set.difference(&pruned_set).intersection(&last),
        ty,
    )
}

/// Upstream's 409 for apply conflicts: one cause per conflicting field.
fn conflict_error(conflicts: Conflicts) -> ApiError {
    let mut list: Vec<(ManagerId, Vec<PathElement>)> = Vec::new();
    for (id, set) in conflicts {
        for p in set.paths() {
            list.push((id.clone(), p));
        }
    }
    let causes: Vec<StatusCause> = list
        .iter()
        .map(|(id, p)| StatusCause {
            reason: CAUSE_FIELD_MANAGER_CONFLICT.to_string(),
            message: format!("conflict with {}", id.describe()),
            field: path_string(p),
        })
        .collect();
    let message = if let [(id, p)] = list.as_slice() {
        format!("conflict with {}: {}", id.describe(), path_string(p))
    } else {
        let mut by_manager: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for (id, p) in &list {
            by_manager
                .entry(id.describe())
                .or_default()
                .push(path_string(p));
        }
        let mut lines = Vec::new();
        for (m, paths) in by_manager {
            lines.push(format!("conflicts with {m}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {p}")));
        }
        lines.join("\n")
    };
    let n = causes.len();
    let details = StatusDetails {
        causes,
        ..Default::default()
    };
    ApiError::new(
        409,
        Reason::Conflict,
        format!(
            "Apply failed with {n} conflict{}: {message}",
            if n == 1 { "" } else { "s" }
        ),
    )
    .with_details(details)
}
