//! Discovery documents: /api, /apis, per group-version resource lists, aggregated discovery v2/v2beta1, /version.
//!
//! Every document is built from a [`ServedApis`]: the groups, versions and resources the server
//! serves. [`ServedApis::builtin`] is the static catalog; custom resources join it at run time
//! with [`ServedApis::add`]. The free functions ([`api_group_list`], [`aggregated`], ...) are the
//! built-in-only shortcuts. Everything here is pure: the HTTP layer picks the document, and
//! [`negotiate`] plus [`root_response`] carry upstream's content negotiation, ETag and 304 rules.

mod aggregated;
mod legacy;
mod negotiate;
mod sha256;
mod version;

#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::sync::LazyLock;

use base64::Engine as _;
use k1s_apimachinery::catalog::{self, ResourceInfo};
use serde_json::Value;

pub use aggregated::{AggregatedVersion, Scope};
pub use negotiate::{
    CACHE_CONTROL, DiscoveryResponse, Negotiated, VARY, etag, etag_matches, negotiate,
};
pub use version::{KUBERNETES_MAJOR, KUBERNETES_MINOR, git_version, version_info};

/// A subresource (`pods/status`, `deployments/scale`) and the kind it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedSubresource {
    /// `status`, `scale`, `binding`, ...
    pub name: String,
    /// Group of the kind served (`autoscaling` for `scale`, the parent's group for `status`).
    pub group: String,
    /// Version of the kind served.
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

/// One resource served in one group/version, as discovery describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedResource {
    /// `""` for the core group.
    pub group: String,
    pub version: String,
    /// Plural name used in URLs (`pods`).
    pub resource: String,
    /// Lowercase singular name (`pod`).
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub verbs: Vec<String>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// [`storage_version_hash`] of the kind as stored; `None` for resources that are never
    /// persisted (reviews), which upstream lists without one.
    pub storage_version_hash: Option<String>,
    pub subresources: Vec<ServedSubresource>,
}

impl ServedResource {
    /// The discovery entry of a built-in catalog resource.
    pub fn from_catalog(info: &ResourceInfo) -> Self {
        let strings = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        // Built-ins are stored in their group's preferred version, except events.k8s.io Events,
        // which share storage with core v1 Events. Create-only resources are not stored.
        let storage_version_hash = info.has_verb("get").then(|| {
            if info.group == "events.k8s.io" && info.resource == "events" {
                storage_version_hash("", "v1", info.kind)
            } else {
                let version = catalog::preferred_version(info.group).unwrap_or(info.version);
                storage_version_hash(info.group, version, info.kind)
            }
        });
        Self {
            group: info.group.to_string(),
            version: info.version.to_string(),
            resource: info.resource.to_string(),
            singular: info.singular.to_string(),
            kind: info.kind.to_string(),
            namespaced: info.namespaced,
            verbs: strings(info.verbs),
            short_names: strings(info.short_names),
            categories: strings(info.categories),
            storage_version_hash,
            subresources: info
                .subresources
                .iter()
                .map(|s| ServedSubresource {
                    name: s.name.to_string(),
                    group: s.group.to_string(),
                    version: s.version.to_string(),
                    kind: s.kind.to_string(),
                    verbs: strings(s.verbs),
                })
                .collect(),
        }
    }
}

/// An API group with its versions in preference order (preferred first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedGroup {
    /// `""` for the core group.
    pub name: String,
    pub versions: Vec<String>,
}

impl ServedGroup {
    pub fn preferred_version(&self) -> Option<&str> {
        self.versions.first().map(String::as_str)
    }
}

/// Everything the server serves: groups in discovery order and their resources.
#[derive(Debug, Clone, Default)]
pub struct ServedApis {
    groups: Vec<ServedGroup>,
    /// How many leading `groups` keep a fixed order (the built-ins); later groups sort by name,
    /// as upstream orders CRD groups (equal priority) after the built-in ones.
    fixed_groups: usize,
    resources: Vec<ServedResource>,
}

static BUILTIN: LazyLock<ServedApis> = LazyLock::new(ServedApis::from_catalog);

impl ServedApis {
    /// Nothing served.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in catalog (a clone of [`ServedApis::builtin_ref`]; add custom resources to it).
    pub fn builtin() -> Self {
        BUILTIN.clone()
    }

    /// The built-in catalog, built once per process.
    pub fn builtin_ref() -> &'static ServedApis {
        &BUILTIN
    }

    fn from_catalog() -> Self {
        let groups: Vec<ServedGroup> = catalog::groups()
            .iter()
            .map(|g| ServedGroup {
                name: g.name.to_string(),
                versions: g.versions.iter().map(|v| (*v).to_string()).collect(),
            })
            .collect();
        let mut served = Self {
            fixed_groups: groups.len(),
            groups,
            resources: catalog::resources()
                .iter()
                .map(ServedResource::from_catalog)
                .collect(),
        }
        // metrics.k8s.io: not in the catalog (never stored), after the built-ins as upstream
        // lists an aggregated group; it keeps its place when custom resources join.
        .with(crate::metrics_api::served_resources());
        served.fixed_groups = served.groups.len();
        served
    }

    /// Serves `resource`, replacing an entry with the same group, version and plural name. A new
    /// group goes after the built-in ones (sorted by name); a new version is placed by
    /// Kubernetes version priority (`v2` > `v1` > `v1beta1` > `v1alpha1` > other strings).
    pub fn add(&mut self, resource: ServedResource) {
        self.add_version(&resource.group, &resource.version);
        match self.resources.iter_mut().find(|r| {
            r.group == resource.group
                && r.version == resource.version
                && r.resource == resource.resource
        }) {
            Some(existing) => *existing = resource,
            None => self.resources.push(resource),
        }
    }

    /// Serves a group/version without resources yet (an aggregated API before its backend
    /// answered), placed as [`ServedApis::add`] places versions.
    pub fn add_group_version(&mut self, group: &str, version: &str) {
        self.add_version(group, version);
    }

    /// [`ServedApis::add`] for each resource, by value.
    pub fn with(mut self, resources: impl IntoIterator<Item = ServedResource>) -> Self {
        for r in resources {
            self.add(r);
        }
        self
    }

    fn add_version(&mut self, group: &str, version: &str) {
        let idx = match self.groups.iter().position(|g| g.name == group) {
            Some(i) => i,
            None => {
                let tail = &self.groups[self.fixed_groups..];
                let at = self.fixed_groups + tail.partition_point(|g| g.name.as_str() < group);
                self.groups.insert(
                    at,
                    ServedGroup {
                        name: group.to_string(),
                        versions: Vec::new(),
                    },
                );
                at
            }
        };
        let versions = &mut self.groups[idx].versions;
        if !versions.iter().any(|v| v == version) {
            let at = versions
                .partition_point(|v| compare_kube_aware_versions(v, version) == Ordering::Greater);
            versions.insert(at, version.to_string());
        }
    }

    /// Orders groups as upstream's aggregator does: highest `group_priority` first, then by
    /// name; and versions by `version_priority` (highest first), then by Kubernetes version
    /// priority. The order is stable, so groups of equal priority keep their relative order.
    pub fn order_by_priority(
        &mut self,
        group_priority: impl Fn(&str) -> i64,
        version_priority: impl Fn(&str, &str) -> i64,
    ) {
        self.groups
            .sort_by_cached_key(|g| (std::cmp::Reverse(group_priority(&g.name)), g.name.clone()));
        for g in &mut self.groups {
            let name = g.name.clone();
            g.versions.sort_by(|a, b| {
                version_priority(&name, b)
                    .cmp(&version_priority(&name, a))
                    .then_with(|| compare_kube_aware_versions(b, a))
            });
        }
        self.fixed_groups = self.groups.len();
    }

    /// Groups in discovery order, the core group (`""`) included.
    pub fn groups(&self) -> &[ServedGroup] {
        &self.groups
    }

    pub fn group(&self, name: &str) -> Option<&ServedGroup> {
        self.groups.iter().find(|g| g.name == name)
    }

    pub fn resources(&self) -> &[ServedResource] {
        &self.resources
    }

    /// True when the group/version is served.
    pub fn serves(&self, group: &str, version: &str) -> bool {
        self.group(group)
            .is_some_and(|g| g.versions.iter().any(|v| v == version))
    }

    /// The resources of one group/version, sorted by plural name.
    pub fn resources_in(&self, group: &str, version: &str) -> Vec<&ServedResource> {
        let mut out: Vec<&ServedResource> = self
            .resources
            .iter()
            .filter(|r| r.group == group && r.version == version)
            .collect();
        out.sort_by(|a, b| a.resource.cmp(&b.resource));
        out
    }
}

/// `/api`: the legacy versions and the address clients should use.
pub fn api_versions(server_address: &str) -> Value {
    legacy::api_versions(server_address)
}

/// `/apis` for the built-in catalog.
pub fn api_group_list() -> Value {
    ServedApis::builtin_ref().api_group_list()
}

/// `/apis/<group>` for the built-in catalog; `None` for unknown groups and the core group.
pub fn api_group(group: &str) -> Option<Value> {
    ServedApis::builtin_ref().api_group(group)
}

/// `/api/v1` (group `""`) or `/apis/<group>/<version>` for the built-in catalog.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    ServedApis::builtin_ref().api_resource_list(group, version)
}

/// Aggregated discovery (`APIGroupDiscoveryList`) of `/api` or `/apis` for the built-in catalog.
pub fn aggregated(scope: Scope, version: AggregatedVersion) -> Value {
    ServedApis::builtin_ref().aggregated(scope, version)
}

/// Answer for `GET /api` or `GET /apis` on the built-in catalog; see [`ServedApis::root_response`].
pub fn root_response(
    scope: Scope,
    accept: &str,
    if_none_match: Option<&str>,
    server_address: &str,
) -> DiscoveryResponse {
    ServedApis::builtin_ref().root_response(scope, accept, if_none_match, server_address)
}

/// Upstream's storage version hash: base64 of the first 8 bytes of
/// sha256(`<group>/<version>/<kind>`) of the kind as stored (`""` for an empty kind).
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    if kind.is_empty() {
        return String::new();
    }
    let digest = sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Kubernetes version priority, as upstream's `CompareKubeAwareVersionStrings` (`Greater`
/// means `a` is preferred); one definition, shared with the run-time catalog.
pub use k1s_apimachinery::catalog::dynamic::compare_versions as compare_kube_aware_versions;
