//! The generic registry: one store for every kind (create, get, list, update, patch, delete,
//! deletecollection, watch) over the revisioned storage, with upstream's object semantics.
//!
//! Objects are stored as JSON without `resourceVersion`; on the way out the storage modify
//! revision becomes `metadata.resourceVersion`, as upstream does with etcd.

mod cache;
pub mod informer;
pub(crate) mod object;
pub mod strategy;
pub mod subresource;
mod watch;

use std::collections::HashMap;
use std::sync::Arc;

use k1s_apimachinery::catalog::{self, ResourceInfo};
use k1s_apimachinery::meta;
use k1s_apimachinery::selector::{FieldSelector, LabelSelector};
use k1s_apimachinery::{ApiError, GroupResource};
use k1s_storage::{KeyValue, ListOptions, Revision, Store};
use serde_json::Value;

use crate::errors::from_store;
pub use object::now_rfc3339;
pub use strategy::{DefaultStrategy, Strategy, field_value};
pub use watch::{WatchEvent, WatchQuery, WatchStream};

/// The options of a write: what the client chose, and the admission chain to run (none for
/// the server's own writes).
#[derive(Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub admission: Option<Arc<dyn Admission>>,
    /// The user a client write is made for (None for the server's own writes).
    pub requester: Option<crate::auth::UserInfo>,
    /// How the write keeps `metadata.managedFields`.
    pub managed_fields: ManagedFieldsMode,
}

/// What a write does with `metadata.managedFields`.
#[derive(Clone, Debug, Default)]
pub enum ManagedFieldsMode {
    /// The server's own writes: the object keeps the managedFields it had.
    #[default]
    Preserve,
    /// A client's create, update or patch: recorded as an Update operation of its manager.
    Track(Arc<crate::apply::FieldTracking>),
    /// Server-side apply: the object carries the managedFields the apply computed.
    Applied,
}

impl std::fmt::Debug for WriteOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteOptions")
            .field("dry_run", &self.dry_run)
            .field("admission", &self.admission.is_some())
            .finish()
    }
}

/// The operation an admission check sees.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// Admission control around the registry's writes, in upstream's order: `mutate` after
/// defaulting, `validate` after the kind's validation, both before storage.
#[async_trait::async_trait]
pub trait Admission: Send + Sync {
    async fn mutate(
        &self,
        op: Operation,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError>;
    async fn validate(
        &self,
        op: Operation,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError>;
}

/// List query parameters after parsing.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    pub label_selector: Option<LabelSelector>,
    pub field_selector: Option<FieldSelector>,
    pub limit: usize,
    pub continue_token: Option<String>,
    /// `resourceVersion` as given ("" = most recent, "0" = any).
    pub resource_version: String,
    pub resource_version_match: String,
}

/// One page of a list.
pub struct ListResult {
    pub items: Vec<Value>,
    pub resource_version: String,
    pub continue_token: Option<String>,
    /// Objects after this page (`metadata.remainingItemCount`), as upstream counts them only
    /// for a list without selectors.
    pub remaining_item_count: Option<u64>,
}

/// `DeleteOptions` after parsing (body and query merged).
#[derive(Clone, Default)]
pub struct DeleteOptions {
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    pub propagation_policy: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub dry_run: bool,
    /// Validating admission of the delete (none for the server's own deletes).
    pub admission: Option<Arc<dyn Admission>>,
}

/// What a delete did.
pub enum DeleteOutcome {
    /// The object is gone; this was its last state.
    Deleted(Value),
    /// Finalizers hold it; this is the object marked for deletion.
    Pending(Value),
}

/// The resource a request addresses: a catalog entry and a namespace (for namespaced kinds).
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub info: &'static ResourceInfo,
    pub namespace: Option<&'a str>,
}

impl Target<'_> {
    pub fn group_resource(&self) -> GroupResource {
        self.info.group_resource()
    }
}

/// The generic store over revisioned storage.
#[derive(Clone)]
pub struct Registry {
    store: Arc<dyn Store>,
    cache: Arc<cache::WatchCache>,
    namespaces: Arc<NamespaceMemo>,
}

/// Namespaces decoded once per revision: a namespaced create reads its namespace up to three
/// times (the registry's own check, NamespaceLifecycle, webhook namespace selectors).
#[derive(Default)]
struct NamespaceMemo {
    decoded: std::sync::Mutex<HashMap<String, (Revision, Arc<Value>)>>,
}

/// Namespaces remembered at most; beyond it the memo starts over.
const NAMESPACE_MEMO_LIMIT: usize = 4096;

impl Registry {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Registry {
            store,
            cache: Arc::default(),
            namespaces: Arc::default(),
        }
    }

    /// A namespace as stored now (a consistent read), or `None` if it does not exist.
    pub async fn namespace(&self, name: &str) -> Result<Option<Arc<Value>>, ApiError> {
        let info = catalog::find("", "v1", "namespaces")
            .ok_or_else(|| ApiError::internal("namespaces missing from the catalog"))?;
        let key = Self::key(info, None, name);
        let kv = match self.store.get(&key).await {
            Ok(Some(kv)) => kv,
            Ok(None) => return Ok(None),
            Err(e) => return Err(from_store(e, &info.group_resource(), name)),
        };
        let mut memo = self
            .namespaces
            .decoded
            .lock()
            .map_err(|_| ApiError::internal("namespace memo lock poisoned"))?;
        if let Some((rev, obj)) = memo.get(name)
            && *rev == kv.mod_revision
        {
            return Ok(Some(obj.clone()));
        }
        let obj = Arc::new(object::decode(info, &kv)?);
        if memo.len() >= NAMESPACE_MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(name.to_string(), (kv.mod_revision, obj.clone()));
        Ok(Some(obj))
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// `/registry/<group|core>/<resource>/[<namespace>/]<name>`; versions share one key space.
    pub fn key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
        let mut key = Self::prefix(info, namespace);
        key.push_str(name);
        key
    }

    /// The key prefix of a resource, or of its objects in one namespace.
    pub fn prefix(info: &ResourceInfo, namespace: Option<&str>) -> String {
        let (group, resource) = crate::conversion::storage_group_resource(info);
        let group = if group.is_empty() { "core" } else { group };
        match namespace.filter(|_| info.namespaced) {
            Some(ns) => format!("/registry/{group}/{resource}/{ns}/"),
            None => format!("/registry/{group}/{resource}/"),
        }
    }

    pub async fn get(&self, t: Target<'_>, name: &str) -> Result<Value, ApiError> {
        let key = Self::key(t.info, t.namespace, name);
        match self.store.get(&key).await {
            Ok(Some(kv)) => object::decode(t.info, &kv),
            Ok(None) => Err(ApiError::not_found(&t.group_resource(), name)),
            Err(e) => Err(from_store(e, &t.group_resource(), name)),
        }
    }

    pub async fn list(&self, t: Target<'_>, q: &ListQuery) -> Result<ListResult, ApiError> {
        let gr = t.group_resource();
        let prefix = Self::prefix(t.info, t.namespace);
        let revision = self.list_revision(q).await?;
        let mut items = Vec::new();
        let mut token = q.continue_token.clone();
        let mut first = true;
        loop {
            let want = if q.limit == 0 {
                0
            } else {
                q.limit - items.len()
            };
            let opts = ListOptions {
                limit: want,
                continue_token: token.take(),
                revision: if first && q.continue_token.is_none() {
                    revision
                } else {
                    None
                },
            };
            first = false;
            let page = self
                .store
                .list(&prefix, opts)
                .await
                .map_err(|e| from_store(e, &gr, ""))?;
            // One conversion for the page: a conversion webhook gets it in one call.
            let mut page_items = page
                .items
                .iter()
                .map(object::decode_stored)
                .collect::<Result<Vec<_>, _>>()?;
            crate::conversion::all_to_version(t.info, &mut page_items)?;
            for obj in page_items {
                if matches(
                    t.info,
                    &obj,
                    q.label_selector.as_ref(),
                    q.field_selector.as_ref(),
                ) {
                    items.push(obj);
                }
            }
            let done = q.limit > 0 && items.len() >= q.limit;
            match page.continue_token {
                Some(next) if !done => token = Some(next),
                next => {
                    let unfiltered = q.label_selector.is_none() && q.field_selector.is_none();
                    return Ok(ListResult {
                        items,
                        resource_version: page.revision.to_string(),
                        remaining_item_count: page
                            .remaining
                            .filter(|_| unfiltered && next.is_some()),
                        continue_token: next,
                    });
                }
            }
        }
    }

    /// The snapshot a list reads: `None` = latest; an exact revision for `resourceVersionMatch=Exact`.
    async fn list_revision(&self, q: &ListQuery) -> Result<Option<Revision>, ApiError> {
        if q.continue_token.is_some() {
            if !q.resource_version.is_empty() && q.resource_version != "0" {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            return Ok(None);
        }
        match (
            q.resource_version.as_str(),
            q.resource_version_match.as_str(),
        ) {
            ("", "") | ("0", _) => Ok(None),
            ("", m) => Err(ApiError::bad_request(format!(
                "resourceVersionMatch \"{m}\" is forbidden when resourceVersion is not provided"
            ))),
            (rv, m) => {
                let rev = parse_resource_version(rv)?;
                match m {
                    "Exact" => Ok(Some(rev)),
                    "" | "NotOlderThan" => {
                        let mut current = self.store.current_revision();
                        if rev > current {
                            // Another server (on a shared etcd) may have written it.
                            current = self.store.fresh_revision().await.unwrap_or(current);
                        }
                        if rev > current {
                            return Err(ApiError::timeout(
                                format!("Too large resource version: {rev}, current: {current}"),
                                1,
                            ));
                        }
                        Ok(None)
                    }
                    other => Err(ApiError::bad_request(format!(
                        "unsupported resourceVersionMatch value \"{other}\""
                    ))),
                }
            }
        }
    }

    /// Creates an object. The caller has checked the body's group/version/kind and namespace.
    pub async fn create(
        &self,
        t: Target<'_>,
        strategy: &dyn Strategy,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let gr = t.group_resource();
        // The name is generated before the strategy runs (upstream generates it before
        // admission): a Job's generated `job-name` labels carry it.
        let generated = meta::name(&obj).is_none_or(str::is_empty)
            && meta::generate_name(&obj).is_some_and(|g| !g.is_empty());
        if generated {
            object::generate_name(&mut obj)?;
        }
        let requested_fields = obj
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove("managedFields"));
        object::prepare_create(t, strategy, &mut obj, opts.requester.as_ref())?;
        match &opts.managed_fields {
            ManagedFieldsMode::Preserve => {}
            ManagedFieldsMode::Track(tracking) => {
                crate::apply::track_update(tracking, None, &mut obj, requested_fields.as_ref());
            }
            ManagedFieldsMode::Applied => {
                if let (Some(m), Some(f)) = (
                    obj.get_mut("metadata").and_then(Value::as_object_mut),
                    requested_fields,
                ) {
                    m.insert("managedFields".into(), f);
                }
            }
        }
        // Admission's NamespaceLifecycle makes the same check for client writes.
        if let Some(ns) = t
            .namespace
            .filter(|_| t.info.namespaced && opts.admission.is_none())
        {
            self.check_namespace_accepts_content(ns).await?;
        }
        for attempt in 0.. {
            if generated && attempt > 0 {
                object::generate_name(&mut obj)?;
            }
            if let Some(a) = &opts.admission {
                a.mutate(Operation::Create, &mut obj, None).await?;
            }
            object::validate_create(t, strategy, &obj)?;
            if let Some(a) = &opts.admission {
                a.validate(Operation::Create, &obj, None).await?;
            }
            let name = meta::name(&obj).unwrap_or_default().to_string();
            if opts.dry_run {
                if self
                    .store
                    .get(&Self::key(t.info, t.namespace, &name))
                    .await
                    .ok()
                    .flatten()
                    .is_some()
                {
                    return Err(ApiError::already_exists(&gr, &name));
                }
                return Ok(obj);
            }
            let key = Self::key(t.info, t.namespace, &name);
            match self
                .store
                .create(&key, object::encode_stored(t.info, &obj)?)
                .await
            {
                // What was stored is `obj` (encode only leaves out the resourceVersion).
                Ok(kv) => return object::stored(t.info, obj, kv.mod_revision),
                Err(k1s_storage::Error::AlreadyExists { .. }) if generated && attempt < 8 => {
                    continue;
                }
                Err(k1s_storage::Error::AlreadyExists { .. }) if generated => {
                    return Err(ApiError::generate_name_conflict(&gr, &name, 1));
                }
                Err(e) => return Err(from_store(e, &gr, &name)),
            }
        }
        Err(ApiError::internal(
            "unreachable: name generation loop ended",
        ))
    }

    /// Read-modify-write of one object with upstream's update semantics. `mutate` builds the
    /// desired object from the current one; it may set `metadata.resourceVersion` as a
    /// precondition. Status isolation follows `subresource`.
    pub async fn update<F>(
        &self,
        t: Target<'_>,
        strategy: &dyn Strategy,
        name: &str,
        subresource: Option<&str>,
        opts: &WriteOptions,
        mut mutate: F,
    ) -> Result<Value, ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError> + Send,
    {
        let gr = t.group_resource();
        let key = Self::key(t.info, t.namespace, name);
        loop {
            let current = match self.store.get(&key).await {
                Ok(Some(kv)) => kv,
                Ok(None) => return Err(ApiError::not_found(&gr, name)),
                Err(e) => return Err(from_store(e, &gr, name)),
            };
            // The caller sees (and patches) the object in its request's version; the rules
            // below compare the storage version, or the request's for custom resources.
            let mut old = object::decode_stored(&current)?;
            // Objects stored before k1s wrote Go's zero fields: compare like with like.
            crate::go_shape::fill_zero_fields(&mut old);
            let in_request_version = crate::conversion::works_in_request_version(t.info);
            if in_request_version {
                old = object::in_version(t.info, old)?;
            }
            let view = if in_request_version {
                old.clone()
            } else {
                object::in_version(t.info, old.clone())?
            };
            let mut desired = mutate(&view)?;
            crate::conversion::to_storage(t.info, &mut desired)?;
            let client_rv = meta::resource_version(&desired)
                .filter(|rv| !rv.is_empty())
                .map(str::to_string);
            if let Some(rv) = &client_rv {
                if *rv != current.mod_revision.to_string() {
                    return Err(ApiError::conflict_modified(&gr, name));
                }
            } else if !strategy.allow_unconditional_update() {
                return Err(ApiError::invalid(
                    t.info.kind,
                    t.info.group,
                    name,
                    vec![k1s_apimachinery::FieldError::invalid(
                        "metadata.resourceVersion",
                        0,
                        "must be specified for an update",
                    )],
                ));
            }
            let requested_fields = desired
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .and_then(|m| m.remove("managedFields"));
            let mut new = object::prepare_update(t, strategy, desired, &old, subresource)?;
            match &opts.managed_fields {
                ManagedFieldsMode::Track(tracking) => crate::apply::track_update(
                    tracking,
                    Some(&old),
                    &mut new,
                    requested_fields.as_ref(),
                ),
                mode => {
                    let kept = match mode {
                        ManagedFieldsMode::Applied => requested_fields,
                        _ => old.pointer("/metadata/managedFields").cloned(),
                    };
                    if let (Some(m), Some(f)) =
                        (new.get_mut("metadata").and_then(Value::as_object_mut), kept)
                    {
                        m.insert("managedFields".into(), f);
                    }
                }
            }
            if let Some(a) = &opts.admission {
                a.mutate(Operation::Update, &mut new, Some(&old)).await?;
            }
            object::validate_update(t, strategy, &new, &old, subresource)?;
            if let Some(a) = &opts.admission {
                a.validate(Operation::Update, &new, Some(&old)).await?;
            }
            if object::same_content(&new, &old) {
                return object::in_version(t.info, old);
            }
            if opts.dry_run {
                return object::stored(t.info, new, current.mod_revision);
            }
            if object::finalized(&new) {
                // The last finalizer is gone: the object goes, and the caller sees its final state.
                match self.store.delete(&key, Some(current.mod_revision)).await {
                    Ok(d) => return object::stored(t.info, new, d.revision),
                    // Someone wrote in between: start again from the fresh object, where a
                    // client's resourceVersion precondition is checked again (GuaranteedUpdate).
                    Err(k1s_storage::Error::Conflict { .. }) => continue,
                    Err(e) => return Err(from_store(e, &gr, name)),
                }
            }
            match self
                .store
                .update(
                    &key,
                    object::encode_stored(t.info, &new)?,
                    Some(current.mod_revision),
                )
                .await
            {
                // What was stored is `new` (in its storage form).
                Ok(kv) => return object::stored(t.info, new, kv.mod_revision),
                Err(k1s_storage::Error::Conflict { .. }) => continue,
                Err(e) => return Err(from_store(e, &gr, name)),
            }
        }
    }

    /// Deletes an object: at once, or by marking it when finalizers (or the propagation policy)
    /// must run first.
    pub async fn delete(
        &self,
        t: Target<'_>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let gr = t.group_resource();
        let key = Self::key(t.info, t.namespace, name);
        loop {
            let current: KeyValue = match self.store.get(&key).await {
                Ok(Some(kv)) => kv,
                Ok(None) => return Err(ApiError::not_found(&gr, name)),
                Err(e) => return Err(from_store(e, &gr, name)),
            };
            let obj = object::decode(t.info, &current)?;
            object::check_delete_preconditions(&obj, opts, &gr, name)?;
            if let Some(a) = &opts.admission {
                a.validate(Operation::Delete, &Value::Null, Some(&obj))
                    .await?;
            }
            let marked = match object::plan_delete(t.info, &obj, opts)? {
                object::DeletePlan::Unchanged => return Ok(DeleteOutcome::Pending(obj)),
                object::DeletePlan::Mark(marked) => marked,
                object::DeletePlan::Now(last) => {
                    if opts.dry_run {
                        return Ok(DeleteOutcome::Deleted(last));
                    }
                    match self.store.delete(&key, Some(current.mod_revision)).await {
                        Ok(_) => return Ok(DeleteOutcome::Deleted(last)),
                        Err(k1s_storage::Error::Conflict { .. }) => continue,
                        Err(e) => return Err(from_store(e, &gr, name)),
                    }
                }
            };
            if opts.dry_run {
                return Ok(DeleteOutcome::Pending(marked));
            }
            match self
                .store
                .update(
                    &key,
                    object::encode_stored(t.info, &marked)?,
                    Some(current.mod_revision),
                )
                .await
            {
                Ok(kv) => {
                    return Ok(DeleteOutcome::Pending(object::stored(
                        t.info,
                        marked,
                        kv.mod_revision,
                    )?));
                }
                Err(k1s_storage::Error::Conflict { .. }) => continue,
                Err(e) => return Err(from_store(e, &gr, name)),
            }
        }
    }

    /// Deletes every object matching the query; returns what was deleted or marked.
    pub async fn delete_collection(
        &self,
        t: Target<'_>,
        q: &ListQuery,
        opts: &DeleteOptions,
    ) -> Result<Vec<Value>, ApiError> {
        let list = self.list(t, q).await?;
        let mut out = Vec::new();
        for obj in list.items {
            let name = meta::name(&obj).unwrap_or_default().to_string();
            let ns = meta::namespace(&obj).map(str::to_string);
            let target = Target {
                info: t.info,
                namespace: ns.as_deref().or(t.namespace),
            };
            match self.delete(target, &name, opts).await {
                Ok(DeleteOutcome::Deleted(o) | DeleteOutcome::Pending(o)) => out.push(o),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Namespaced content may only be created in an existing namespace that is not terminating.
    async fn check_namespace_accepts_content(&self, ns: &str) -> Result<(), ApiError> {
        let namespaces = GroupResource::core("namespaces");
        match self.namespace(ns).await? {
            Some(obj) => {
                if meta::is_being_deleted(&obj) {
                    return Err(ApiError::forbidden(
                        &namespaces,
                        ns,
                        format!(
                            "unable to create new content in namespace {ns} because it is being terminated"
                        ),
                    ));
                }
                Ok(())
            }
            None => Err(ApiError::not_found(&namespaces, ns)),
        }
    }

    /// Writes a stored object as is (bootstrap and internal controllers), creating or replacing.
    pub async fn put_raw(&self, t: Target<'_>, obj: &Value) -> Result<Value, ApiError> {
        let name = meta::name(obj).unwrap_or_default();
        let key = Self::key(t.info, t.namespace, name);
        let gr = t.group_resource();
        let result = match self
            .store
            .get(&key)
            .await
            .map_err(|e| from_store(e, &gr, name))?
        {
            Some(kv) => {
                self.store
                    .update(&key, object::encode(obj), Some(kv.mod_revision))
                    .await
            }
            None => self.store.create(&key, object::encode(obj)).await,
        };
        object::decode(t.info, &result.map_err(|e| from_store(e, &gr, name))?)
    }
}

/// Whether an object passes the label and field selectors of a query.
pub fn matches(
    info: &ResourceInfo,
    obj: &Value,
    labels: Option<&LabelSelector>,
    fields: Option<&FieldSelector>,
) -> bool {
    if let Some(sel) = labels
        && !sel.matches_json(meta::labels_value(obj))
    {
        return false;
    }
    if let Some(sel) = fields {
        return sel.matches(|field| Some(selectable_value(info, obj, field)));
    }
    true
}

/// A field selector's value of `field`: the field itself, or what upstream's
/// `ToSelectableFields` computes for it.
fn selectable_value(info: &ResourceInfo, obj: &Value, field: &str) -> String {
    // An Event's `source` is its source component, else its reporting controller.
    if info.kind == "Event" && field == "source" {
        let component = field_value(obj, "source.component");
        if component.is_empty() {
            return field_value(obj, "reportingComponent");
        }
        return component;
    }
    field_value(obj, field)
}

pub fn parse_resource_version(rv: &str) -> Result<Revision, ApiError> {
    rv.parse::<u64>()
        .map(Revision)
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))
}
