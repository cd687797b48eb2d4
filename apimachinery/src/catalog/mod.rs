//! The catalog of API resources k1s serves: the static built-ins (one entry per group, version
//! and resource, as kube-apiserver 1.33 reports them in discovery), custom resources registered
//! at run time ([`dynamic`]), and lookups over both.

pub mod dynamic;
mod table;

use crate::gvk::{
    GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource, format_api_version,
};

/// A subresource (`pods/status`, `deployments/scale`, ...) and the kind served at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subresource {
    /// `status`, `scale`, `binding`, `eviction`, `finalize`, `approval`, `token`.
    pub name: &'static str,
    /// Group of the kind served (`autoscaling` for `scale`; the parent's group for `status`).
    pub group: &'static str,
    /// Version of the kind served.
    pub version: &'static str,
    /// The kind served (`Scale`, `Eviction`, `TokenRequest`, `Binding`, or the parent kind).
    pub kind: &'static str,
    pub verbs: &'static [&'static str],
}

impl Subresource {
    pub fn api_version(&self) -> String {
        format_api_version(self.group, self.version)
    }

    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(self.group, self.version, self.kind)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// A streaming subresource (`pods/log`, `pods/exec`, ...): served by the node proxy, not
    /// read or written as an object.
    pub fn is_connect(&self) -> bool {
        matches!(
            self.name,
            "attach" | "exec" | "log" | "portforward" | "proxy"
        )
    }
}

/// One built-in resource in one group/version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    pub group: &'static str,
    pub version: &'static str,
    /// The plural resource name used in URLs (`pods`).
    pub resource: &'static str,
    pub kind: &'static str,
    /// Lowercase singular name (`pod`).
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub verbs: &'static [&'static str],
    pub subresources: &'static [Subresource],
}

impl ResourceInfo {
    /// The kind of the list type (`PodList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `v1`, `apps/v1`.
    pub fn api_version(&self) -> String {
        format_api_version(self.group, self.version)
    }

    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group, self.version)
    }

    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(self.group, self.version, self.resource)
    }

    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(self.group, self.version, self.kind)
    }

    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group, self.resource)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    pub fn has_status(&self) -> bool {
        self.subresource("status").is_some()
    }

    /// True when this entry's version is its group's preferred version.
    pub fn is_preferred_version(&self) -> bool {
        preferred_version(self.group) == Some(self.version)
    }

    /// True for `name` being the plural, singular or a short name (case-insensitive).
    pub fn is_named(&self, name: &str) -> bool {
        self.resource.eq_ignore_ascii_case(name)
            || self.singular.eq_ignore_ascii_case(name)
            || self
                .short_names
                .iter()
                .any(|s| s.eq_ignore_ascii_case(name))
    }
}

/// An API group with its versions, preferred version first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiGroupInfo {
    /// `""` for the core group.
    pub name: &'static str,
    pub versions: &'static [&'static str],
}

impl ApiGroupInfo {
    pub fn preferred_version(&self) -> &'static str {
        self.versions.first().copied().unwrap_or("")
    }

    pub fn is_core(&self) -> bool {
        self.name.is_empty()
    }
}

/// Every built-in resource, grouped by group/version in discovery order.
pub fn resources() -> &'static [ResourceInfo] {
    table::RESOURCES
}

/// All groups in upstream's discovery order, the core group (`""`, served at `/api`) first;
/// the rest is the `/apis` order.
pub fn groups() -> &'static [ApiGroupInfo] {
    table::GROUPS
}

/// The named groups served under `/apis`, in discovery order.
pub fn api_groups() -> impl Iterator<Item = &'static ApiGroupInfo> {
    groups().iter().filter(|g| !g.is_core())
}

pub fn find_group(name: &str) -> Option<&'static ApiGroupInfo> {
    groups()
        .iter()
        .find(|g| g.name == name)
        .or_else(|| dynamic::find_group(name))
}

/// True for an entry registered at run time (a custom resource), false for a built-in.
pub fn is_custom(info: &ResourceInfo) -> bool {
    !resources()
        .as_ptr_range()
        .contains(&std::ptr::from_ref(info))
}

/// Versions of a group, preferred first; empty for unknown groups.
pub fn versions_of(group: &str) -> &'static [&'static str] {
    find_group(group).map_or(&[], |g| g.versions)
}

pub fn preferred_version(group: &str) -> Option<&'static str> {
    find_group(group).map(ApiGroupInfo::preferred_version)
}

/// True when the group/version is served.
pub fn serves(group: &str, version: &str) -> bool {
    versions_of(group).contains(&version)
}

/// The resources of one group/version.
pub fn resources_in<'a>(
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'static ResourceInfo> + 'a {
    resources()
        .iter()
        .filter(move |r| r.group == group && r.version == version)
}

/// Built-in kinds upstream 1.33 marks deprecated (their prerelease-lifecycle
/// `APILifecycleDeprecated` release and `APILifecycleReplacement`): (group, version, kind,
/// deprecated in, replacement).
const DEPRECATED_KINDS: &[(&str, &str, &str, &str, Option<&str>)] = &[
    ("", "v1", "ComponentStatus", "1.19", None),
    (
        "",
        "v1",
        "Endpoints",
        "1.33",
        Some("discovery.k8s.io/v1 EndpointSlice"),
    ),
];

/// The warning upstream's API server adds to every request for a deprecated built-in kind
/// (apiserver's `deprecation.WarningMessage`): `v1 Endpoints is deprecated in v1.33+; use
/// discovery.k8s.io/v1 EndpointSlice`.
pub fn deprecation_warning(info: &ResourceInfo) -> Option<String> {
    DEPRECATED_KINDS
        .iter()
        .find(|(g, v, k, _, _)| *g == info.group && *v == info.version && *k == info.kind)
        .map(|(_, _, kind, since, replacement)| {
            let text = format!("{} {kind} is deprecated in v{since}+", info.api_version());
            match replacement {
                Some(r) => format!("{text}; use {r}"),
                None => text,
            }
        })
}

/// The entry for a (group, version, plural resource).
pub fn find(group: &str, version: &str, resource: &str) -> Option<&'static ResourceInfo> {
    // Every request looks its resource up, often more than once: index by plural name (a
    // handful of entries share one) rather than scanning the whole table.
    static BY_RESOURCE: std::sync::OnceLock<
        std::collections::HashMap<&'static str, Vec<&'static ResourceInfo>>,
    > = std::sync::OnceLock::new();
    BY_RESOURCE
        .get_or_init(|| {
            let mut map: std::collections::HashMap<_, Vec<_>> = std::collections::HashMap::new();
            for r in resources() {
                map.entry(r.resource).or_default().push(r);
            }
            map
        })
        .get(resource)
        .and_then(|found| {
            found
                .iter()
                .copied()
                .find(|r| r.group == group && r.version == version)
        })
        // Built-ins answer without a lock; custom resources are consulted on a miss only.
        .or_else(|| dynamic::find(group, version, resource))
}

pub fn find_gvr(gvr: &GroupVersionResource) -> Option<&'static ResourceInfo> {
    find(&gvr.group, &gvr.version, &gvr.resource)
}

/// The entry for a (group, version, kind).
pub fn find_by_kind(group: &str, version: &str, kind: &str) -> Option<&'static ResourceInfo> {
    resources()
        .iter()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
        .or_else(|| dynamic::find_by_kind(group, version, kind))
}

pub fn find_gvk(gvk: &GroupVersionKind) -> Option<&'static ResourceInfo> {
    find_by_kind(&gvk.group, &gvk.version, &gvk.kind)
}

/// Iterates resources the way a client resolves names: groups in discovery order, each
/// group's versions in preference order.
fn in_preference_order() -> impl Iterator<Item = &'static ResourceInfo> {
    let custom = dynamic::resources();
    let custom_groups = dynamic::groups();
    groups()
        .iter()
        .flat_map(|g| g.versions.iter().flat_map(move |v| resources_in(g.name, v)))
        .chain(custom_groups.into_iter().flat_map(move |g| {
            let custom = custom.clone();
            g.versions.iter().flat_map(move |v| {
                custom
                    .clone()
                    .into_iter()
                    .filter(move |r| r.group == g.name && r.version == *v)
            })
        }))
}

/// Resolves a name as `kubectl get <name>` does: plural, singular or short name (case
/// insensitive), optionally qualified by group (`deployments.apps`) or by version and group
/// (`horizontalpodautoscalers.v1.autoscaling`). Earlier groups and preferred versions win
/// (`events` is core `events`, `hpa` is `autoscaling/v2`).
pub fn resource_by_name_or_short(name: &str) -> Option<&'static ResourceInfo> {
    if name.is_empty() {
        return None;
    }
    if let Some(found) = in_preference_order().find(|r| r.is_named(name)) {
        return Some(found);
    }
    let (resource, qualifier) = name.split_once('.')?;
    // `resource.version.group` when the second segment is a served version of the rest.
    if let Some((version, group)) = qualifier.split_once('.')
        && let Some(found) = resources_in(group, version).find(|r| r.is_named(resource))
    {
        return Some(found);
    }
    in_preference_order().find(|r| r.group.eq_ignore_ascii_case(qualifier) && r.is_named(resource))
}

/// The resource names in a category (`all`, `api-extensions`), preferred versions only, in
/// discovery order, as `kubectl get all` expands them.
pub fn resources_in_category(category: &str) -> impl Iterator<Item = &'static ResourceInfo> + '_ {
    in_preference_order()
        .filter(|r| r.is_preferred_version())
        .filter(move |r| r.categories.contains(&category))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
