//! Resources added to the catalog at run time (custom resources): interned `&'static` entries
//! behind a lock that is read only when a lookup misses the static built-in table.
//!
//! Entries are leaked once and interned, so re-registering an unchanged CRD costs nothing and
//! the memory kept is bounded by the number of distinct definitions seen by the process.

use std::collections::{HashMap, HashSet};
use std::sync::{LazyLock, Mutex, RwLock};

use super::{ApiGroupInfo, ResourceInfo, Subresource};

/// What is served now beyond the built-ins.
#[derive(Default)]
struct Served {
    /// Owner (a CRD name) -> its entries, one per served version.
    by_owner: HashMap<String, Vec<&'static ResourceInfo>>,
    /// Plural resource name -> entries (all owners).
    by_resource: HashMap<&'static str, Vec<&'static ResourceInfo>>,
    /// Groups not built in, sorted by name, versions in preference order.
    groups: Vec<&'static ApiGroupInfo>,
}

static SERVED: LazyLock<RwLock<Served>> = LazyLock::new(RwLock::default);

/// Interned strings, string lists and entries.
#[derive(Default)]
struct Interner {
    strings: HashSet<&'static str>,
    lists: HashMap<Vec<&'static str>, &'static [&'static str]>,
    subresources: Vec<&'static [Subresource]>,
    entries: Vec<&'static ResourceInfo>,
    groups: Vec<&'static ApiGroupInfo>,
}

static INTERNER: LazyLock<Mutex<Interner>> = LazyLock::new(Mutex::default);

fn with_interner<T>(f: impl FnOnce(&mut Interner) -> T) -> T {
    let mut guard = INTERNER.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut guard)
}

impl Interner {
    fn str(&mut self, s: &str) -> &'static str {
        if let Some(found) = self.strings.get(s) {
            return found;
        }
        let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
        self.strings.insert(leaked);
        leaked
    }

    fn list(&mut self, items: &[&str]) -> &'static [&'static str] {
        let key: Vec<&'static str> = items.iter().map(|s| self.str(s)).collect();
        if let Some(found) = self.lists.get(&key) {
            return found;
        }
        let leaked: &'static [&'static str] = Box::leak(key.clone().into_boxed_slice());
        self.lists.insert(key, leaked);
        leaked
    }
}

/// An owned description of a resource to serve (what a CRD version turns into).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicResource {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    /// `status` and/or `scale`.
    pub subresources: Vec<String>,
}

fn intern_resource(r: &DynamicResource) -> &'static ResourceInfo {
    with_interner(|i| {
        let strs = |i: &mut Interner, v: &[String]| {
            let refs: Vec<&str> = v.iter().map(String::as_str).collect();
            i.list(&refs)
        };
        let group = i.str(&r.group);
        let version = i.str(&r.version);
        let kind = i.str(&r.kind);
        let gpu = i.list(&["get", "patch", "update"]);
        let subs: Vec<Subresource> = r
            .subresources
            .iter()
            .map(|name| match name.as_str() {
                "scale" => Subresource {
                    name: "scale",
                    group: "autoscaling",
                    version: "v1",
                    kind: "Scale",
                    verbs: gpu,
                },
                other => Subresource {
                    name: i.str(other),
                    group,
                    version,
                    kind,
                    verbs: gpu,
                },
            })
            .collect();
        let subresources = match i.subresources.iter().find(|s| **s == subs.as_slice()) {
            Some(found) => *found,
            None => {
                let leaked: &'static [Subresource] = Box::leak(subs.into_boxed_slice());
                i.subresources.push(leaked);
                leaked
            }
        };
        let info = ResourceInfo {
            group,
            version,
            resource: i.str(&r.resource),
            kind,
            singular: i.str(&r.singular),
            namespaced: r.namespaced,
            short_names: strs(i, &r.short_names),
            categories: strs(i, &r.categories),
            verbs: strs(i, &r.verbs),
            subresources,
        };
        match i.entries.iter().find(|e| ***e == info) {
            Some(found) => *found,
            None => {
                let leaked: &'static ResourceInfo = Box::leak(Box::new(info));
                i.entries.push(leaked);
                leaked
            }
        }
    })
}

fn intern_group(name: &str, versions: &[&str]) -> &'static ApiGroupInfo {
    with_interner(|i| {
        let g = ApiGroupInfo {
            name: i.str(name),
            versions: i.list(versions),
        };
        match i.groups.iter().find(|x| ***x == g) {
            Some(found) => *found,
            None => {
                let leaked: &'static ApiGroupInfo = Box::leak(Box::new(g));
                i.groups.push(leaked);
                leaked
            }
        }
    })
}

/// Serves `resources` for `owner` (replacing what it served before); an empty list stops
/// serving them. Returns the interned entries, in the order given.
pub fn register(owner: &str, resources: &[DynamicResource]) -> Vec<&'static ResourceInfo> {
    let entries: Vec<&'static ResourceInfo> = resources.iter().map(intern_resource).collect();
    let mut served = SERVED.write().unwrap_or_else(|p| p.into_inner());
    if entries.is_empty() {
        served.by_owner.remove(owner);
    } else {
        served.by_owner.insert(owner.to_string(), entries.clone());
    }
    rebuild(&mut served);
    entries
}

/// Recomputes the indexes after a change of one owner.
fn rebuild(served: &mut Served) {
    let mut by_resource: HashMap<&'static str, Vec<&'static ResourceInfo>> = HashMap::new();
    let mut versions: HashMap<&'static str, Vec<&'static str>> = HashMap::new();
    let mut owners: Vec<&String> = served.by_owner.keys().collect();
    owners.sort();
    for owner in owners {
        for e in &served.by_owner[owner] {
            by_resource.entry(e.resource).or_default().push(e);
            let vs = versions.entry(e.group).or_default();
            if !vs.contains(&e.version) {
                vs.push(e.version);
            }
        }
    }
    let mut groups: Vec<&'static ApiGroupInfo> = versions
        .into_iter()
        .map(|(g, mut vs)| {
            vs.sort_by(|a, b| compare_versions(b, a));
            intern_group(g, &vs)
        })
        .collect();
    groups.sort_by_key(|g| g.name);
    served.by_resource = by_resource;
    served.groups = groups;
}

/// Kubernetes version priority (`v2` > `v1` > `v1beta1` > `v1alpha1` > other strings, which sort
/// ascending): `Greater` when `a` is preferred.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let major: u64 = rest.get(..digits)?.parse().ok()?;
        let rest = rest.get(digits..)?;
        if rest.is_empty() {
            return Some((major, 2, 0));
        }
        let (stability, n) = if let Some(n) = rest.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = rest.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((major, stability, n.parse().ok()?))
    }
    if a == b {
        return Ordering::Equal;
    }
    match (parse(a), parse(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((ma, ta, na)), Some((mb, tb, nb))) => ta.cmp(&tb).then(ma.cmp(&mb)).then(na.cmp(&nb)),
    }
}

fn read() -> std::sync::RwLockReadGuard<'static, Served> {
    SERVED.read().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn find(group: &str, version: &str, resource: &str) -> Option<&'static ResourceInfo> {
    read()
        .by_resource
        .get(resource)?
        .iter()
        .copied()
        .find(|r| r.group == group && r.version == version)
}

pub(super) fn find_by_kind(
    group: &str,
    version: &str,
    kind: &str,
) -> Option<&'static ResourceInfo> {
    read()
        .by_owner
        .values()
        .flatten()
        .copied()
        .find(|r| r.group == group && r.version == version && r.kind == kind)
}

pub(super) fn find_group(name: &str) -> Option<&'static ApiGroupInfo> {
    read().groups.iter().copied().find(|g| g.name == name)
}

/// Groups served beyond the built-ins, sorted by name.
pub fn groups() -> Vec<&'static ApiGroupInfo> {
    read().groups.clone()
}

/// Every resource served beyond the built-ins.
pub fn resources() -> Vec<&'static ResourceInfo> {
    let served = read();
    let mut owners: Vec<&String> = served.by_owner.keys().collect();
    owners.sort();
    owners
        .into_iter()
        .flat_map(|o| served.by_owner[o].iter().copied())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{
        find, find_by_kind, is_custom, preferred_version, resource_by_name_or_short,
    };
    use super::*;

    fn widget(version: &str) -> DynamicResource {
        DynamicResource {
            group: "dyn.example.com".into(),
            version: version.into(),
            resource: "widgets".into(),
            kind: "Widget".into(),
            singular: "widget".into(),
            namespaced: true,
            short_names: vec!["wdg".into()],
            categories: vec!["all".into()],
            verbs: vec!["get".into(), "list".into()],
            subresources: vec!["status".into(), "scale".into()],
        }
    }

    #[test]
    fn registered_resources_are_found_and_removed() {
        let entries = register(
            "widgets.dyn.example.com",
            &[widget("v1beta1"), widget("v1")],
        );
        assert_eq!(entries.len(), 2);
        let v1 = find("dyn.example.com", "v1", "widgets").unwrap();
        assert!(is_custom(v1));
        assert!(!is_custom(find("", "v1", "pods").unwrap()));
        assert_eq!(v1.subresource("scale").unwrap().kind, "Scale");
        assert_eq!(v1.subresource("status").unwrap().kind, "Widget");
        assert_eq!(
            find_by_kind("dyn.example.com", "v1beta1", "Widget")
                .unwrap()
                .version,
            "v1beta1"
        );
        // GA is preferred over beta, whatever the order given.
        assert_eq!(preferred_version("dyn.example.com"), Some("v1"));
        assert_eq!(resource_by_name_or_short("wdg").unwrap().version, "v1");
        // Re-registering the same definition reuses the interned entries.
        let again = register(
            "widgets.dyn.example.com",
            &[widget("v1beta1"), widget("v1")],
        );
        assert!(std::ptr::eq(again[1], v1));
        register("widgets.dyn.example.com", &[]);
        assert!(find("dyn.example.com", "v1", "widgets").is_none());
        assert!(preferred_version("dyn.example.com").is_none());
    }

    #[test]
    fn version_priority() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("v2", "v1"), Greater);
        assert_eq!(compare_versions("v1", "v1beta1"), Greater);
        assert_eq!(compare_versions("v1beta2", "v1alpha3"), Greater);
        assert_eq!(compare_versions("v1alpha1", "foo"), Greater);
        assert_eq!(compare_versions("abc", "abd"), Greater);
    }
}
