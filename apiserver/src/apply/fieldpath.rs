//! Field paths and sets of them (structured-merge-diff's `fieldpath`): the elements `f:name`,
//! `k:{"key":value}`, `v:value`, `i:index`, set algebra, and the FieldsV1 JSON form of a set.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// One step of a path. The variant order is upstream's: field names sort before keys, keys
/// before values, values before indexes. Values are kept as their compact JSON text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A struct field or map key: `f:name`.
    Field(String),
    /// An associative list item by its keys, sorted by name: `k:{"name":"c"}`.
    Key(Vec<(String, String)>),
    /// A set item: `v:"value"`.
    Value(String),
    /// A list item by position (only for lists that cannot be keyed): `i:0`.
    Index(usize),
}

impl PathElement {
    /// The key element of an item of a list keyed by `keys`; `None` if a key is missing (upstream
    /// refuses such an item). Key values must be scalars.
    pub fn key_of(item: &Value, keys: &[&str]) -> Option<PathElement> {
        let obj = item.as_object()?;
        let mut fields = Vec::with_capacity(keys.len());
        for k in keys {
            let v = obj.get(*k)?;
            if v.is_object() || v.is_array() {
                return None;
            }
            fields.push(((*k).to_string(), v.to_string()));
        }
        fields.sort();
        Some(PathElement::Key(fields))
    }

    /// The FieldsV1 key of this element.
    pub fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut s = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    s.push_str(&Value::String(name.clone()).to_string());
                    s.push(':');
                    s.push_str(value);
                }
                s.push('}');
                s
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a FieldsV1 key (`f:`, `k:`, `v:`, `i:`).
    pub fn parse(text: &str) -> Result<PathElement, String> {
        let (prefix, rest) = text
            .split_once(':')
            .ok_or_else(|| format!("unknown path element {text:?}"))?;
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "k" => {
                let Ok(Value::Object(map)) = serde_json::from_str::<Value>(rest) else {
                    return Err(format!("key is not a JSON object: {rest:?}"));
                };
                let mut fields: Vec<(String, String)> =
                    map.into_iter().map(|(k, v)| (k, v.to_string())).collect();
                fields.sort();
                Ok(PathElement::Key(fields))
            }
            "v" => serde_json::from_str::<Value>(rest)
                .map(|v| PathElement::Value(v.to_string()))
                .map_err(|e| format!("value is not JSON: {e}")),
            "i" => rest
                .parse()
                .map(PathElement::Index)
                .map_err(|_| format!("index is not a number: {rest:?}")),
            _ => Err(format!("unknown path element {text:?}")),
        }
    }
}

impl fmt::Display for PathElement {
    /// Upstream's path text: `.name`, `[key="v",other=1]`, `[=value]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={value}")?;
                }
                f.write_str("]")
            }
            PathElement::Value(v) => write!(f, "[={v}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the object's root.
pub type Path = Vec<PathElement>;

/// The text of a path, as conflicts name it: `.spec.containers[name="c"].image`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths, stored as a tree: `members` are paths that end here, `children` hold the
/// longer ones (never empty).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path (the empty path is ignored: the root is never a member).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                if !self.members.contains(last) {
                    self.members.insert(last.clone());
                }
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether `pe` (one step from here) is a member.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The paths below `pe`, if any.
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    pub(crate) fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    pub(crate) fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    /// Adds the paths of `child` below `pe`.
    pub(crate) fn insert_child(&mut self, pe: PathElement, child: Set) {
        if child.is_empty() {
            return;
        }
        match self.children.get_mut(&pe) {
            Some(mine) => mine.union_in_place(&child),
            None => {
                self.children.insert(pe, child);
            }
        }
    }

    /// Paths in `self` or `other`.
    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_in_place(other);
        out
    }

    pub fn union_in_place(&mut self, other: &Set) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.union_in_place(child),
                None => {
                    self.children.insert(pe.clone(), child.clone());
                }
            }
        }
    }

    /// Paths in `self` and not in `other`.
    pub fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, child)| {
                let rest = match other.children.get(pe) {
                    Some(o) => child.difference(o),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (pe.clone(), rest))
            })
            .collect();
        Set { members, children }
    }

    /// Paths in both.
    pub fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, child)| {
                let both = child.intersection(other.children.get(pe)?);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        Set { members, children }
    }

    /// Every path, members of a node before its children (upstream's iteration order).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Removes the one path `path`, not what lies below it; emptied nodes go with it.
    pub fn remove(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Removes every path that starts with `prefix` (the prefix itself included).
    pub fn remove_prefix(&mut self, prefix: &[PathElement]) {
        match prefix {
            [] => *self = Set::default(),
            [last] => {
                self.members.remove(last);
                self.children.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_prefix(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Keeps only the paths that start with `prefix`.
    pub fn retain_prefix(&self, prefix: &[PathElement]) -> Set {
        match prefix {
            [] => self.clone(),
            [first, rest @ ..] => {
                let mut out = Set::default();
                if rest.is_empty() && self.members.contains(first) {
                    out.members.insert(first.clone());
                }
                if let Some(child) = self.children.get(first) {
                    let kept = child.retain_prefix(rest);
                    if !kept.is_empty() {
                        out.children.insert(first.clone(), kept);
                    }
                }
                out
            }
        }
    }

    /// The FieldsV1 form: `{"f:a":{},"f:b":{".":{},"f:c":{}}}`.
    pub fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for m in &self.members {
            if !self.children.contains_key(m) {
                out.insert(m.serialize(), Value::Object(Map::new()));
            }
        }
        for (pe, child) in &self.children {
            let mut inner = match child.to_fields_v1() {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            if self.members.contains(pe) {
                inner.insert(".".into(), Value::Object(Map::new()));
            }
            out.insert(pe.serialize(), Value::Object(inner));
        }
        Value::Object(out)
    }

    /// Reads the FieldsV1 form.
    pub fn from_fields_v1(v: &Value) -> Result<Set, String> {
        let Value::Object(map) = v else {
            return Err("FieldsV1 must be a JSON object".into());
        };
        let mut set = Set::default();
        for (k, inner) in map {
            if k == "." {
                continue;
            }
            let pe = PathElement::parse(k)?;
            let Value::Object(inner_map) = inner else {
                return Err(format!("value of {k:?} must be an object"));
            };
            if inner_map.is_empty() || inner_map.contains_key(".") {
                set.members.insert(pe.clone());
            }
            let child = Set::from_fields_v1(inner)?;
            if !child.is_empty() {
                set.children.insert(pe, child);
            }
        }
        Ok(set)
    }
}

/// Builds a path from text steps: `"a"` is a field; used by tests and fixed paths.
pub fn fields(names: &[&str]) -> Path {
    names
        .iter()
        .map(|n| PathElement::Field((*n).to_string()))
        .collect()
}
