//! Unaggregated discovery documents: `APIVersions` (/api), `APIGroupList` (/apis), `APIGroup`
//! (/apis/<group>) and `APIResourceList` (/api/v1, /apis/<group>/<version>).

use serde_json::{Map, Value, json};

use super::{ServedApis, ServedGroup, ServedResource};

/// `/api`.
pub(super) fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    })
}

fn group_version_for_discovery(group: &str, version: &str) -> Value {
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"groupVersion": group_version, "version": version})
}

/// The `APIGroup` body without `kind`/`apiVersion` (as listed inside `APIGroupList`).
fn group_entry(group: &ServedGroup) -> Value {
    let versions: Vec<Value> = group
        .versions
        .iter()
        .map(|v| group_version_for_discovery(&group.name, v))
        .collect();
    let mut entry = Map::new();
    entry.insert("name".into(), Value::String(group.name.clone()));
    entry.insert("versions".into(), Value::Array(versions));
    if let Some(preferred) = group.preferred_version() {
        entry.insert(
            "preferredVersion".into(),
            group_version_for_discovery(&group.name, preferred),
        );
    }
    Value::Object(entry)
}

/// Strings as a JSON array.
fn strings(v: &[String]) -> Value {
    Value::Array(v.iter().cloned().map(Value::String).collect())
}

/// The `APIResource` entries of one resource: the resource itself, then one per subresource
/// named `<resource>/<subresource>`.
fn resource_entries(r: &ServedResource) -> Vec<(String, Value)> {
    let mut out = Vec::with_capacity(1 + r.subresources.len());
    let mut entry = Map::new();
    entry.insert("name".into(), Value::String(r.resource.clone()));
    entry.insert("singularName".into(), Value::String(r.singular.clone()));
    entry.insert("namespaced".into(), Value::Bool(r.namespaced));
    entry.insert("kind".into(), Value::String(r.kind.clone()));
    entry.insert("verbs".into(), strings(&r.verbs));
    if !r.short_names.is_empty() {
        entry.insert("shortNames".into(), strings(&r.short_names));
    }
    if !r.categories.is_empty() {
        entry.insert("categories".into(), strings(&r.categories));
    }
    if let Some(hash) = r.storage_version_hash.as_deref().filter(|h| !h.is_empty()) {
        entry.insert("storageVersionHash".into(), Value::String(hash.to_string()));
    }
    out.push((r.resource.clone(), Value::Object(entry)));

    for s in &r.subresources {
        let name = format!("{}/{}", r.resource, s.name);
        let mut entry = Map::new();
        entry.insert("name".into(), Value::String(name.clone()));
        entry.insert("singularName".into(), Value::String(String::new()));
        entry.insert("namespaced".into(), Value::Bool(r.namespaced));
        // Upstream names the group/version only for subresources serving a kind of another
        // group/version (`deployments/scale` -> autoscaling/v1 Scale).
        if (s.group.as_str(), s.version.as_str()) != (r.group.as_str(), r.version.as_str()) {
            if !s.group.is_empty() {
                entry.insert("group".into(), Value::String(s.group.clone()));
            }
            if !s.version.is_empty() {
                entry.insert("version".into(), Value::String(s.version.clone()));
            }
        }
        entry.insert("kind".into(), Value::String(s.kind.clone()));
        entry.insert("verbs".into(), strings(&s.verbs));
        out.push((name, Value::Object(entry)));
    }
    out
}

impl ServedApis {
    /// `/apis`: every named group in discovery order, versions in preference order.
    pub fn api_group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .iter()
            .filter(|g| !g.name.is_empty() && !g.versions.is_empty())
            .map(group_entry)
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `/apis/<group>`; `None` for unknown groups and for the core group (served at `/api`).
    pub fn api_group(&self, group: &str) -> Option<Value> {
        if group.is_empty() {
            return None;
        }
        let g = self.group(group).filter(|g| !g.versions.is_empty())?;
        let mut doc = Map::new();
        doc.insert("kind".into(), Value::String("APIGroup".into()));
        doc.insert("apiVersion".into(), Value::String("v1".into()));
        if let Value::Object(entry) = group_entry(g) {
            doc.extend(entry);
        }
        Some(Value::Object(doc))
    }

    /// `/api/v1` (group `""`) or `/apis/<group>/<version>`: an `APIResource` for every resource
    /// and every subresource, sorted by name as upstream registers them. `None` when the
    /// group/version is not served.
    pub fn api_resource_list(&self, group: &str, version: &str) -> Option<Value> {
        if !self.serves(group, version) {
            return None;
        }
        let mut entries: Vec<(String, Value)> = self
            .resources_in(group, version)
            .into_iter()
            .flat_map(resource_entries)
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let resources: Vec<Value> = entries.into_iter().map(|(_, v)| v).collect();

        let mut doc = Map::new();
        doc.insert("kind".into(), Value::String("APIResourceList".into()));
        // Upstream's legacy /api/v1 list carries no apiVersion; the group lists do.
        if !group.is_empty() {
            doc.insert("apiVersion".into(), Value::String("v1".into()));
        }
        let group_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        doc.insert("groupVersion".into(), Value::String(group_version));
        doc.insert("resources".into(), Value::Array(resources));
        Some(Value::Object(doc))
    }
}
