//! The in-memory RBAC snapshot the authorizer reads: Roles, ClusterRoles, RoleBindings and
//! ClusterRoleBindings fed from watches, indexed by subject (and bindings by namespace).

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;

use super::rule::{PolicyRule, go_quote, rules_of};
use crate::auth::UserInfo;

/// The API group of the four RBAC kinds.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// Prefix of service-account user names: `system:serviceaccount:<ns>:<name>`.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
/// The group every service account is in (`system:serviceaccounts:<ns>` per namespace).
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// Which RBAC kind an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    /// Accepts the kind (`ClusterRole`) or the resource (`clusterroles`).
    pub fn parse(s: &str) -> Option<RbacKind> {
        match s {
            "Role" | "roles" => Some(RbacKind::Role),
            "ClusterRole" | "clusterroles" => Some(RbacKind::ClusterRole),
            "RoleBinding" | "rolebindings" => Some(RbacKind::RoleBinding),
            "ClusterRoleBinding" | "clusterrolebindings" => Some(RbacKind::ClusterRoleBinding),
            _ => None,
        }
    }

    pub fn is_namespaced(self) -> bool {
        matches!(self, RbacKind::Role | RbacKind::RoleBinding)
    }
}

/// Why the cache refused an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RbacCacheError {
    #[error("unknown RBAC kind {0:?}")]
    UnknownKind(String),
    #[error("{kind:?} object without metadata.name")]
    MissingName { kind: RbacKind },
    #[error("{kind:?} object {name:?} without metadata.namespace")]
    MissingNamespace { kind: RbacKind, name: String },
}

/// A binding subject (`rbac/v1.Subject`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Subject {
    pub kind: String,
    pub api_group: String,
    pub name: String,
    pub namespace: String,
}

impl Subject {
    pub fn from_json(value: &Value) -> Subject {
        let s = |k: &str| {
            value
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        Subject {
            kind: s("kind"),
            api_group: s("apiGroup"),
            name: s("name"),
            namespace: s("namespace"),
        }
    }

    /// Upstream `appliesToUser`: `namespace` is the binding's (empty for a ClusterRoleBinding)
    /// and defaults a ServiceAccount subject without one.
    pub fn applies_to(&self, user: &UserInfo, groups: &[String], namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty()
                    && split_service_account(&user.name)
                        .is_some_and(|(uns, uname)| uns == ns && uname == self.name)
            }
            _ => false,
        }
    }

    /// Upstream `describeSubject`: `User "bob"`, `ServiceAccount "name/namespace"`.
    pub fn describe(&self, binding_namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_namespace
            } else {
                &self.namespace
            };
            format!(
                "{} {}",
                self.kind,
                go_quote(&format!("{}/{}", self.name, ns))
            )
        } else {
            format!("{} {}", self.kind, go_quote(&self.name))
        }
    }
}

/// A binding's `roleRef`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RoleRef {
    pub api_group: String,
    pub kind: String,
    pub name: String,
}

impl RoleRef {
    pub fn from_json(value: Option<&Value>) -> RoleRef {
        let s = |k: &str| {
            value
                .and_then(|v| v.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        RoleRef {
            api_group: s("apiGroup"),
            kind: s("kind"),
            name: s("name"),
        }
    }
}

/// `(namespace, name)` of a service-account user name, if it is one.
pub fn split_service_account(user_name: &str) -> Option<(&str, &str)> {
    let rest = user_name.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty()).then_some((ns, name))
}

/// The groups RBAC matches Group subjects against: the user's groups, `system:authenticated`
/// for everyone but anonymous (as [`UserInfo::effective_groups`]), and for a service account
/// `system:serviceaccounts` and `system:serviceaccounts:<ns>` (what upstream's service-account
/// authenticator adds), so a caller that forgot them still matches.
pub fn subject_groups(user: &UserInfo) -> Vec<String> {
    let mut groups = user.effective_groups();
    if let Some((ns, _)) = split_service_account(&user.name) {
        for g in [
            ALL_SERVICE_ACCOUNTS_GROUP.to_owned(),
            format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{ns}"),
        ] {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    groups
}

/// A stored binding, parsed.
#[derive(Clone, Debug)]
pub(crate) struct BindingEntry {
    pub name: String,
    /// Empty for a ClusterRoleBinding.
    pub namespace: String,
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

impl BindingEntry {
    fn from_json(obj: &Value, name: String, namespace: String) -> BindingEntry {
        BindingEntry {
            name,
            namespace,
            role_ref: RoleRef::from_json(obj.get("roleRef")),
            subjects: obj
                .get("subjects")
                .and_then(Value::as_array)
                .map(|s| s.iter().map(Subject::from_json).collect())
                .unwrap_or_default(),
        }
    }

    /// Index of the first subject that applies (upstream `appliesTo`).
    pub fn applies_to(&self, user: &UserInfo, groups: &[String]) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|s| s.applies_to(user, groups, &self.namespace))
    }
}

/// Where a rule came from, rendered as upstream's describers.
#[derive(Debug, Clone, Copy)]
pub struct RuleSource<'a> {
    pub(crate) binding: &'a BindingEntry,
    pub(crate) subject: &'a Subject,
}

impl fmt::Display for RuleSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.binding;
        if b.namespace.is_empty() {
            write!(
                f,
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(&b.name),
                b.role_ref.kind,
                go_quote(&b.role_ref.name),
                self.subject.describe("")
            )
        } else {
            write!(
                f,
                "RoleBinding {} of {} {} to {}",
                go_quote(&format!("{}/{}", b.name, b.namespace)),
                b.role_ref.kind,
                go_quote(&b.role_ref.name),
                self.subject.describe(&b.namespace)
            )
        }
    }
}

/// A stored Role or ClusterRole: its parsed rules and the object itself.
#[derive(Clone, Debug)]
pub(crate) struct RoleEntry {
    pub rules: Vec<PolicyRule>,
    pub object: Arc<Value>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum SubjectKey {
    User(String),
    Group(String),
    ServiceAccount(String, String),
}

/// Subject -> names of the bindings that name it (sorted, so visits are deterministic).
#[derive(Debug, Default)]
struct SubjectIndex {
    by_subject: HashMap<SubjectKey, BTreeSet<String>>,
}

impl SubjectIndex {
    fn keys(binding: &BindingEntry) -> Vec<SubjectKey> {
        binding
            .subjects
            .iter()
            .filter_map(|s| match s.kind.as_str() {
                "User" => Some(SubjectKey::User(s.name.clone())),
                "Group" => Some(SubjectKey::Group(s.name.clone())),
                "ServiceAccount" => {
                    let ns = if s.namespace.is_empty() {
                        &binding.namespace
                    } else {
                        &s.namespace
                    };
                    (!ns.is_empty()).then(|| SubjectKey::ServiceAccount(ns.clone(), s.name.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn insert(&mut self, binding: &BindingEntry) {
        for key in Self::keys(binding) {
            self.by_subject
                .entry(key)
                .or_default()
                .insert(binding.name.clone());
        }
    }

    fn remove(&mut self, binding: &BindingEntry) {
        for key in Self::keys(binding) {
            if let Some(names) = self.by_subject.get_mut(&key) {
                names.remove(&binding.name);
                if names.is_empty() {
                    self.by_subject.remove(&key);
                }
            }
        }
    }

    /// Names of the bindings that may apply to the user, sorted.
    fn candidates<'a>(&'a self, user: &UserInfo, groups: &[String]) -> BTreeSet<&'a str> {
        let mut out = BTreeSet::new();
        let mut add = |key: &SubjectKey| {
            if let Some(names) = self.by_subject.get(key) {
                out.extend(names.iter().map(String::as_str));
            }
        };
        add(&SubjectKey::User(user.name.clone()));
        for g in groups {
            add(&SubjectKey::Group(g.clone()));
        }
        if let Some((ns, name)) = split_service_account(&user.name) {
            add(&SubjectKey::ServiceAccount(ns.to_owned(), name.to_owned()));
        }
        out
    }
}

#[derive(Debug, Default)]
struct NamespaceBindings {
    bindings: HashMap<String, Arc<BindingEntry>>,
    index: SubjectIndex,
}

#[derive(Debug, Default)]
pub(crate) struct Inner {
    /// namespace -> name -> Role
    roles: HashMap<String, HashMap<String, Arc<RoleEntry>>>,
    cluster_roles: HashMap<String, Arc<RoleEntry>>,
    cluster_role_bindings: NamespaceBindings,
    /// namespace -> RoleBindings of that namespace
    role_bindings: HashMap<String, NamespaceBindings>,
}

/// Outcome of resolving a binding's roleRef.
pub(crate) type RoleRules = Result<Arc<RoleEntry>, String>;

impl Inner {
    /// Upstream `GetRoleReferenceRules`, with the lister's not-found messages.
    pub(crate) fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> RoleRules {
        match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .get(namespace)
                .and_then(|m| m.get(&role_ref.name))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {} not found",
                        go_quote(&role_ref.name)
                    )
                }),
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {} not found",
                        go_quote(&role_ref.name)
                    )
                }),
            other => Err(format!(
                "unsupported role reference kind: {}",
                go_quote(other)
            )),
        }
    }

    /// Upstream `VisitRulesFor`: every rule that applies to the user in `namespace` (cluster
    /// bindings first, then the namespace's bindings), and every resolution error. The visitor
    /// returns false to stop.
    pub(crate) fn visit_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        visitor: &mut dyn FnMut(RuleSource<'_>, &PolicyRule) -> bool,
        errors: &mut Vec<String>,
    ) {
        let groups = subject_groups(user);
        let mut scopes = vec![&self.cluster_role_bindings];
        if !namespace.is_empty()
            && let Some(nb) = self.role_bindings.get(namespace)
        {
            scopes.push(nb);
        }
        for scope in scopes {
            for name in scope.index.candidates(user, &groups) {
                let Some(binding) = scope.bindings.get(name) else {
                    continue;
                };
                let Some(subject) = binding.applies_to(user, &groups) else {
                    continue;
                };
                match self.role_rules(&binding.role_ref, &binding.namespace) {
                    Err(e) => errors.push(e),
                    Ok(role) => {
                        let source = RuleSource { binding, subject };
                        for rule in &role.rules {
                            if !visitor(source, rule) {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every rule that applies to the user in `namespace`, and the resolution errors.
    pub(crate) fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        self.visit_rules(
            user,
            namespace,
            &mut |_, rule| {
                rules.push(rule.clone());
                true
            },
            &mut errors,
        );
        (rules, errors)
    }
}

/// upstream `utilerrors.NewAggregate(errs).Error()`; empty for no errors.
pub(crate) fn aggregate_errors(errors: &[String]) -> String {
    k1s_apimachinery::status::aggregate_message(errors).unwrap_or_default()
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A concurrently readable snapshot of the RBAC objects. Writers (the watch feeders) take a
/// short write lock per event; authorizations share read locks.
#[derive(Debug, Default)]
pub struct RbacCache {
    inner: RwLock<Inner>,
}

impl RbacCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds or replaces one object (a watch ADDED / MODIFIED event). `kind` is the kind or the
    /// resource name (`ClusterRole` or `clusterroles`).
    pub fn apply(&self, kind: &str, obj: &Value) -> Result<(), RbacCacheError> {
        let kind = RbacKind::parse(kind).ok_or_else(|| RbacCacheError::UnknownKind(kind.into()))?;
        let (name, namespace) = Self::key(kind, obj)?;
        let mut inner = self.write();
        Self::apply_locked(&mut inner, kind, name, namespace, obj);
        Ok(())
    }

    /// Removes one object (a watch DELETED event); `namespace` is ignored for cluster kinds.
    pub fn remove(&self, kind: &str, namespace: &str, name: &str) -> Result<(), RbacCacheError> {
        let kind = RbacKind::parse(kind).ok_or_else(|| RbacCacheError::UnknownKind(kind.into()))?;
        let mut inner = self.write();
        Self::remove_locked(&mut inner, kind, namespace, name);
        Ok(())
    }

    /// Replaces every object of `kind` (after a list / relist). Objects without a name (or a
    /// namespace, for namespaced kinds) are skipped and reported in the error; the others are
    /// still applied.
    pub fn replace_all(&self, kind: &str, objects: &[Value]) -> Result<(), RbacCacheError> {
        let kind = RbacKind::parse(kind).ok_or_else(|| RbacCacheError::UnknownKind(kind.into()))?;
        let mut first_error = None;
        let mut keyed = Vec::with_capacity(objects.len());
        for obj in objects {
            match Self::key(kind, obj) {
                Ok(key) => keyed.push((key, obj)),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        let mut inner = self.write();
        match kind {
            RbacKind::Role => inner.roles.clear(),
            RbacKind::ClusterRole => inner.cluster_roles.clear(),
            RbacKind::RoleBinding => inner.role_bindings.clear(),
            RbacKind::ClusterRoleBinding => {
                inner.cluster_role_bindings = NamespaceBindings::default()
            }
        }
        for ((name, namespace), obj) in keyed {
            Self::apply_locked(&mut inner, kind, name, namespace, obj);
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The stored ClusterRole objects (for [`super::aggregate`]).
    pub fn cluster_roles(&self) -> Vec<Arc<Value>> {
        let inner = self.read();
        let mut roles: Vec<_> = inner
            .cluster_roles
            .values()
            .map(|r| r.object.clone())
            .collect();
        roles.sort_by(|a, b| meta_str(a, "name").cmp(meta_str(b, "name")));
        roles
    }

    /// Number of objects of each kind: (roles, clusterroles, rolebindings, clusterrolebindings).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let inner = self.read();
        (
            inner.roles.values().map(HashMap::len).sum(),
            inner.cluster_roles.len(),
            inner.role_bindings.values().map(|n| n.bindings.len()).sum(),
            inner.cluster_role_bindings.bindings.len(),
        )
    }

    fn key(kind: RbacKind, obj: &Value) -> Result<(String, String), RbacCacheError> {
        let name = meta_str(obj, "name");
        if name.is_empty() {
            return Err(RbacCacheError::MissingName { kind });
        }
        let namespace = if kind.is_namespaced() {
            let ns = meta_str(obj, "namespace");
            if ns.is_empty() {
                return Err(RbacCacheError::MissingNamespace {
                    kind,
                    name: name.to_owned(),
                });
            }
            ns
        } else {
            ""
        };
        Ok((name.to_owned(), namespace.to_owned()))
    }

    fn apply_locked(
        inner: &mut Inner,
        kind: RbacKind,
        name: String,
        namespace: String,
        obj: &Value,
    ) {
        match kind {
            RbacKind::Role | RbacKind::ClusterRole => {
                let entry = Arc::new(RoleEntry {
                    rules: rules_of(obj),
                    object: Arc::new(obj.clone()),
                });
                if kind == RbacKind::Role {
                    inner
                        .roles
                        .entry(namespace)
                        .or_default()
                        .insert(name, entry);
                } else {
                    inner.cluster_roles.insert(name, entry);
                }
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                let scope = if kind == RbacKind::RoleBinding {
                    inner.role_bindings.entry(namespace.clone()).or_default()
                } else {
                    &mut inner.cluster_role_bindings
                };
                let entry = Arc::new(BindingEntry::from_json(obj, name.clone(), namespace));
                if let Some(old) = scope.bindings.insert(name, entry.clone()) {
                    scope.index.remove(&old);
                }
                scope.index.insert(&entry);
            }
        }
    }

    fn remove_locked(inner: &mut Inner, kind: RbacKind, namespace: &str, name: &str) {
        match kind {
            RbacKind::Role => {
                if let Some(m) = inner.roles.get_mut(namespace) {
                    m.remove(name);
                    if m.is_empty() {
                        inner.roles.remove(namespace);
                    }
                }
            }
            RbacKind::ClusterRole => {
                inner.cluster_roles.remove(name);
            }
            RbacKind::RoleBinding => {
                if let Some(nb) = inner.role_bindings.get_mut(namespace) {
                    if let Some(old) = nb.bindings.remove(name) {
                        nb.index.remove(&old);
                    }
                    if nb.bindings.is_empty() {
                        inner.role_bindings.remove(namespace);
                    }
                }
            }
            RbacKind::ClusterRoleBinding => {
                let scope = &mut inner.cluster_role_bindings;
                if let Some(old) = scope.bindings.remove(name) {
                    scope.index.remove(&old);
                }
            }
        }
    }
}
