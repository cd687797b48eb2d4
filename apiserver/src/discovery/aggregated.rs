//! Aggregated discovery: one `APIGroupDiscoveryList` (apidiscovery.k8s.io v2 or v2beta1) for all
//! of `/api` or all of `/apis`, with every version, resource and subresource inline.

use serde_json::{Map, Value, json};

use super::{ServedApis, ServedGroup, ServedResource};

/// Which root an aggregated document describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `/api`: the core group only.
    Legacy,
    /// `/apis`: every named group.
    Apis,
}

/// The apidiscovery.k8s.io version a client asked for; both have the same shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggregatedVersion {
    V2,
    V2Beta1,
}

impl AggregatedVersion {
    /// `v2` or `v2beta1`.
    pub fn version(self) -> &'static str {
        match self {
            Self::V2 => "v2",
            Self::V2Beta1 => "v2beta1",
        }
    }

    /// The document's `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            Self::V2 => "apidiscovery.k8s.io/v2",
            Self::V2Beta1 => "apidiscovery.k8s.io/v2beta1",
        }
    }

    /// The response `Content-Type`, which clients read to decide how to decode the body.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::V2 => "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            Self::V2Beta1 => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
        }
    }
}

fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().cloned().map(Value::String).collect())
}

fn scope_of(r: &ServedResource) -> &'static str {
    if r.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

/// An `APIResourceDiscovery`. `responseKind` names group and version only when they differ
/// from the resource's own (upstream leaves them empty otherwise).
fn resource_discovery(r: &ServedResource) -> Value {
    let mut entry = Map::new();
    entry.insert("resource".into(), Value::String(r.resource.clone()));
    entry.insert(
        "responseKind".into(),
        json!({"group": "", "version": "", "kind": r.kind}),
    );
    entry.insert("scope".into(), Value::String(scope_of(r).into()));
    entry.insert("singularResource".into(), Value::String(r.singular.clone()));
    entry.insert("verbs".into(), strings(&r.verbs));
    if !r.short_names.is_empty() {
        entry.insert("shortNames".into(), strings(&r.short_names));
    }
    if !r.categories.is_empty() {
        entry.insert("categories".into(), strings(&r.categories));
    }
    let mut subs: Vec<_> = r.subresources.iter().collect();
    subs.sort_by(|a, b| a.name.cmp(&b.name));
    if !subs.is_empty() {
        let subs: Vec<Value> = subs
            .into_iter()
            .map(|s| {
                let foreign = (s.group.as_str(), s.version.as_str())
                    != (r.group.as_str(), r.version.as_str());
                let (group, version) = if foreign {
                    (s.group.as_str(), s.version.as_str())
                } else {
                    ("", "")
                };
                json!({
                    "subresource": s.name,
                    "responseKind": {"group": group, "version": version, "kind": s.kind},
                    "verbs": strings(&s.verbs),
                })
            })
            .collect();
        entry.insert("subresources".into(), Value::Array(subs));
    }
    Value::Object(entry)
}

impl ServedApis {
    /// An `APIGroupDiscovery` for one group; versions in preference order.
    fn group_discovery(&self, group: &ServedGroup) -> Value {
        let versions: Vec<Value> = group
            .versions
            .iter()
            .map(|v| {
                let resources: Vec<Value> = self
                    .resources_in(&group.name, v)
                    .into_iter()
                    .map(resource_discovery)
                    .collect();
                let mut entry = Map::new();
                entry.insert("version".into(), Value::String(v.clone()));
                if !resources.is_empty() {
                    entry.insert("resources".into(), Value::Array(resources));
                }
                entry.insert("freshness".into(), Value::String("Current".into()));
                Value::Object(entry)
            })
            .collect();
        // Upstream serializes an ObjectMeta here: an empty name is omitted and
        // creationTimestamp is always present (null).
        let mut metadata = Map::new();
        if !group.name.is_empty() {
            metadata.insert("name".into(), Value::String(group.name.clone()));
        }
        metadata.insert("creationTimestamp".into(), Value::Null);
        json!({"metadata": metadata, "versions": versions})
    }

    /// The `APIGroupDiscoveryList` for `/api` (core group) or `/apis` (named groups, in
    /// discovery order).
    pub fn aggregated(&self, scope: Scope, version: AggregatedVersion) -> Value {
        let items: Vec<Value> = self
            .groups()
            .iter()
            .filter(|g| !g.versions.is_empty())
            .filter(|g| match scope {
                Scope::Legacy => g.name.is_empty(),
                Scope::Apis => !g.name.is_empty(),
            })
            .map(|g| self.group_discovery(g))
            .collect();
        json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": version.api_version(),
            "metadata": {},
            "items": items,
        })
    }
}
