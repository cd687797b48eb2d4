//! The schema-driven walks of structured-merge-diff's `typed` package over JSON values: the
//! field set of a value, the comparison of two values, the apply merge, and removal of paths.

use serde_json::{Map, Value};

use super::fieldpath::{Path, PathElement, Set};
use super::schema::{ListKind, Shape, Ty};

/// What changed between two values.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

/// How a node is walked, from its shape and (for deduced types) its value.
enum Walk<'a> {
    Leaf,
    Fields(Shape<'a>),
    Items(Ty<'a>, ListKind<'a>),
}

fn walk_of<'a>(ty: &Ty<'a>, sample: Option<&Value>) -> Walk<'a> {
    match ty.shape() {
        Shape::Scalar => Walk::Leaf,
        s @ Shape::Struct { atomic: false, .. } => Walk::Fields(s),
        Shape::Struct { .. } => Walk::Leaf,
        Shape::List {
            kind: ListKind::Atomic,
            ..
        } => Walk::Leaf,
        Shape::List {
            kind: ListKind::Map(k),
            ..
        } if k.is_empty() => Walk::Leaf,
        Shape::List { elem, kind } => Walk::Items(elem, kind),
        Shape::Deduced => match sample {
            Some(Value::Object(_)) => Walk::Fields(Shape::Deduced),
            _ => Walk::Leaf,
        },
    }
}

/// The path element of a list item: its keys, its value (sets), or its position.
fn item_pe(elem: &Ty<'_>, kind: &ListKind<'_>, item: &Value, index: usize) -> PathElement {
    match kind {
        ListKind::Set => PathElement::Value(item.to_string()),
        ListKind::Map(keys) => PathElement::key_of(item, keys)
            .or_else(|| key_with_defaults(elem, item, keys))
            .unwrap_or(PathElement::Index(index)),
        ListKind::Atomic => PathElement::Index(index),
    }
}

/// A key whose missing fields take their schema defaults (upstream fills a missing
/// `protocol` of a port with its default, TCP).
fn key_with_defaults(elem: &Ty<'_>, item: &Value, keys: &[&str]) -> Option<PathElement> {
    let shape = elem.shape();
    let mut filled = item.as_object()?.clone();
    for k in keys {
        if filled.contains_key(*k) {
            continue;
        }
        let default = match &shape {
            Shape::Struct { props: Some(p), .. } => p.get(*k).and_then(|f| f.get("default")),
            _ => None,
        }
        .cloned()
        .or_else(|| (*k == "protocol").then(|| Value::String("TCP".into())))?;
        filled.insert((*k).to_string(), default);
    }
    PathElement::key_of(&Value::Object(filled), keys)
}

/// Items of a list with their path elements; repeated elements after the first are dropped.
fn indexed<'v>(
    elem: &Ty<'_>,
    kind: &ListKind<'_>,
    list: Option<&'v Value>,
) -> Vec<(PathElement, &'v Value)> {
    let mut out: Vec<(PathElement, &Value)> = Vec::new();
    if let Some(Value::Array(items)) = list {
        for (i, item) in items.iter().enumerate() {
            let pe = item_pe(elem, kind, item, i);
            if !out.iter().any(|(p, _)| *p == pe) {
                out.push((pe, item));
            }
        }
    }
    out
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

/// The paths a value sets (upstream's `ToFieldSet`): leaves, atomic values, list items, map
/// entries, and null or empty struct fields.
pub fn to_field_set(v: &Value, ty: Ty<'_>) -> Set {
    let mut set = Set::new();
    field_set(v, &ty, &mut Vec::new(), &mut set);
    set
}

fn field_set(v: &Value, ty: &Ty<'_>, path: &mut Path, set: &mut Set) {
    match walk_of(ty, Some(v)) {
        Walk::Leaf => set.insert(path),
        Walk::Fields(shape) => {
            let Value::Object(obj) = v else {
                set.insert(path);
                return;
            };
            for (k, child) in obj {
                path.push(PathElement::Field(k.clone()));
                field_set(child, &ty.field(&shape, k), path, set);
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !Ty::is_declared(&shape, k) {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Walk::Items(elem, kind) => {
            let Value::Array(items) = v else {
                set.insert(path);
                return;
            };
            let mut seen: Vec<PathElement> = Vec::new();
            let mut dups: Vec<PathElement> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let pe = item_pe(&elem, &kind, item, i);
                if seen.contains(&pe) {
                    if !dups.contains(&pe) {
                        path.push(pe.clone());
                        set.insert(path);
                        path.pop();
                        dups.push(pe);
                    }
                } else {
                    seen.push(pe);
                }
            }
            for (i, item) in items.iter().enumerate() {
                let pe = item_pe(&elem, &kind, item, i);
                if dups.contains(&pe) {
                    continue;
                }
                path.push(pe);
                field_set(item, &elem, path, set);
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// The fields of `v` its type does not declare, as structured-merge-diff's typed conversion
/// reports them (`.spec.bogus: field not declared in schema`). As upstream, the first
/// undeclared field of an object ends that object's check; atomic lists and structs are
/// checked inside too.
pub fn undeclared_fields(v: &Value, ty: Ty<'_>) -> Vec<String> {
    let mut errors = Vec::new();
    undeclared(v, &ty, &mut Vec::new(), &mut errors);
    errors
}

fn undeclared(v: &Value, ty: &Ty<'_>, path: &mut Path, errors: &mut Vec<String>) {
    match (ty.shape(), v) {
        (shape @ Shape::Struct { props, extra, .. }, Value::Object(obj)) => {
            let open = extra.is_some() || ty.preserves_unknown_fields();
            for (k, child) in obj {
                path.push(PathElement::Field(k.clone()));
                if !open && !props.is_some_and(|p| p.contains_key(k)) {
                    errors.push(format!(
                        "{}: field not declared in schema",
                        super::fieldpath::path_string(path)
                    ));
                    path.pop();
                    return;
                }
                undeclared(child, &ty.field(&shape, k), path, errors);
                path.pop();
            }
        }
        (Shape::List { elem, kind }, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                path.push(item_pe(&elem, &kind, item, i));
                undeclared(item, &elem, path, errors);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Compares `lhs` (before) with `rhs` (after), as upstream's `Compare`. With `zero_structs`
/// (a create), declared struct fields new in `rhs` are not themselves "added": upstream
/// compares against the kind's zero value, whose struct fields exist (its maps and lists are
/// nil, so they are added).
pub fn compare(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: Ty<'_>,
    zero_structs: bool,
) -> Comparison {
    let mut c = Comparison::default();
    let mut w = Comparer { c: &mut c };
    w.walk(lhs, rhs, &ty, &mut Vec::new(), zero_structs, false);
    c
}

struct Comparer<'c> {
    c: &'c mut Comparison,
}

impl Comparer<'_> {
    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>, path: &Path) {
        match (lhs, rhs) {
            (None, _) => self.c.added.insert(path),
            (_, None) => self.c.removed.insert(path),
            (Some(l), Some(r)) if l != r => self.c.modified.insert(path),
            _ => {}
        }
    }

    fn walk(
        &mut self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        ty: &Ty<'_>,
        path: &mut Path,
        in_zero: bool,
        required: bool,
    ) {
        // The zero object has this field with this value already: a zero time, a nil slice or
        // pointer (`null`; a template's `metadata.creationTimestamp`), or the zero value of a
        // field without `omitempty` (required in the schema). Nothing was added.
        if lhs.is_none() && in_zero && rhs.is_some_and(|v| is_go_zero(v, required)) {
            return;
        }
        let sample = rhs.filter(|v| !v.is_null()).or(lhs);
        let mut is_struct = false;
        match walk_of(ty, sample) {
            Walk::Leaf => return self.leaf(lhs, rhs, path),
            Walk::Fields(shape) => {
                is_struct = matches!(shape, Shape::Struct { props: Some(_), .. });
                let (lm, rm) = (
                    lhs.and_then(Value::as_object),
                    rhs.and_then(Value::as_object),
                );
                let mismatched = lhs.is_some_and(|v| !v.is_null() && lm.is_none())
                    || rhs.is_some_and(|v| !v.is_null() && rm.is_none());
                if mismatched || (is_empty_container(lhs) && is_empty_container(rhs)) {
                    return self.leaf(lhs, rhs, path);
                }
                let empty = Map::new();
                let (lm, rm) = (lm.unwrap_or(&empty), rm.unwrap_or(&empty));
                // Whether a field is in the zero object: a declared field of a struct that is,
                // unless Go makes it an optional pointer (nil there).
                let definition = ty.definition_name();
                let zero_field = |k: &str| -> (bool, bool) {
                    let in_zero = in_zero
                        && is_struct
                        && Ty::is_declared(&shape, k)
                        && !super::pointer_fields::is_pointer(definition, k);
                    let required = matches!(&shape, Shape::Struct { required: Some(r), .. }
                        if r.iter().any(|n| n.as_str() == Some(k)));
                    (in_zero, required)
                };
                for (k, lv) in lm {
                    path.push(PathElement::Field(k.clone()));
                    let (z, r) = zero_field(k);
                    self.walk(Some(lv), rm.get(k), &ty.field(&shape, k), path, z, r);
                    path.pop();
                }
                for (k, rv) in rm {
                    if lm.contains_key(k) {
                        continue;
                    }
                    path.push(PathElement::Field(k.clone()));
                    let (z, r) = zero_field(k);
                    self.walk(None, Some(rv), &ty.field(&shape, k), path, z, r);
                    path.pop();
                }
            }
            Walk::Items(elem, kind) => {
                let mismatched = lhs.is_some_and(|v| !v.is_null() && !v.is_array())
                    || rhs.is_some_and(|v| !v.is_null() && !v.is_array());
                if mismatched || (is_empty_container(lhs) && is_empty_container(rhs)) {
                    return self.leaf(lhs, rhs, path);
                }
                let left = indexed(&elem, &kind, lhs);
                let right = indexed(&elem, &kind, rhs);
                for (pe, lv) in &left {
                    let rv = right.iter().find(|(p, _)| p == pe).map(|(_, v)| *v);
                    path.push(pe.clone());
                    self.walk(Some(lv), rv, &elem, path, false, false);
                    path.pop();
                }
                for (pe, rv) in &right {
                    if left.iter().any(|(p, _)| p == pe) {
                        continue;
                    }
                    path.push(pe.clone());
                    self.walk(None, Some(rv), &elem, path, false, false);
                    path.pop();
                }
            }
        }
        // A compound value that appeared or disappeared as a whole.
        match (lhs, rhs) {
            // In the zero object, struct fields exist and so do the required (not omitempty)
            // ones, as null; optional maps and lists do not (Go leaves them nil).
            (None, _) if !(in_zero && (is_struct || required)) => self.c.added.insert(path),
            (Some(_), None) => self.c.removed.insert(path),
            _ => {}
        }
    }
}

/// Whether `v` is what Go's zero value of a field encodes to: `null`, and for a field without
/// `omitempty` also `""`, `0` and `false`.
fn is_go_zero(v: &Value, required: bool) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => required && s.is_empty(),
        Value::Number(n) => required && n.as_f64() == Some(0.0),
        Value::Bool(b) => required && !b,
        Value::Array(_) | Value::Object(_) => false,
    }
}

/// Merges an applied configuration into the live object (upstream's `Merge`): the
/// configuration's values win, granular maps and lists are merged item by item, atomic
/// values are replaced.
pub fn merge(lhs: Option<&Value>, rhs: Option<&Value>, ty: &Ty<'_>) -> Option<Value> {
    let (l, r) = match (lhs, rhs) {
        (None, r) => return r.cloned(),
        (l, None) => return l.cloned(),
        (Some(l), Some(r)) => (l, r),
    };
    match walk_of(ty, Some(r)) {
        Walk::Leaf => Some(r.clone()),
        Walk::Fields(shape) => {
            let (Value::Object(lm), Value::Object(rm)) = (l, r) else {
                return Some(r.clone());
            };
            let mut out = lm.clone();
            for (k, rv) in rm {
                let merged = merge(lm.get(k), Some(rv), &ty.field(&shape, k));
                if let Some(m) = merged {
                    out.insert(k.clone(), m);
                }
            }
            Some(Value::Object(out))
        }
        Walk::Items(elem, kind) => {
            if !l.is_array() || !r.is_array() {
                return Some(r.clone());
            }
            let left = indexed(&elem, &kind, Some(l));
            let right = indexed(&elem, &kind, Some(r));
            Some(Value::Array(merge_items(&left, &right, &elem)))
        }
    }
}

fn find<'v>(list: &[(PathElement, &'v Value)], pe: &PathElement) -> Option<&'v Value> {
    list.iter().find(|(p, _)| p == pe).map(|(_, v)| *v)
}

/// Upstream's item order: the configuration's order for the items it names, live-only items
/// kept where they were relative to them.
fn merge_items(
    left: &[(PathElement, &Value)],
    right: &[(PathElement, &Value)],
    elem: &Ty<'_>,
) -> Vec<Value> {
    let mut shared: std::collections::VecDeque<&PathElement> = right
        .iter()
        .filter(|(pe, _)| find(left, pe).is_some())
        .map(|(pe, _)| pe)
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: Vec<&PathElement> = Vec::new();
    let mut out = Vec::with_capacity(left.len().max(right.len()));
    let (mut li, mut ri) = (0, 0);
    while li < left.len() || ri < right.len() {
        if li < left.len() && ri < right.len() {
            let pe = &left[li].0;
            if *pe == right[ri].0 {
                merged_rhs.push(pe);
                out.extend(merge(Some(left[li].1), Some(right[ri].1), elem));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if find(right, pe).is_some() && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < left.len() {
            let pe = &left[li].0;
            if find(right, pe).is_none() {
                out.push(left[li].1.clone());
                li += 1;
                continue;
            } else if merged_rhs.contains(&pe) {
                li += 1;
            }
        }
        if ri < right.len() {
            let pe = &right[ri].0;
            merged_rhs.push(pe);
            out.extend(merge(find(left, pe), Some(right[ri].1), elem));
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// `v` without the paths that are members of `set` (a member removes its whole subtree).
pub fn remove_items(v: &Value, set: &Set, ty: &Ty<'_>) -> Value {
    if set.is_empty() {
        return v.clone();
    }
    match walk_of(ty, Some(v)) {
        Walk::Leaf => v.clone(),
        Walk::Fields(shape) => {
            let Value::Object(obj) = v else {
                return v.clone();
            };
            let mut out = Map::new();
            for (k, child) in obj {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(sub) => remove_items(child, sub, &ty.field(&shape, k)),
                    None => child.clone(),
                };
                out.insert(k.clone(), kept);
            }
            Value::Object(out)
        }
        Walk::Items(elem, kind) => {
            let Value::Array(items) = v else {
                return v.clone();
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let pe = item_pe(&elem, &kind, item, i);
                if set.has_member(&pe) {
                    continue;
                }
                out.push(match set.child(&pe) {
                    Some(sub) => remove_items(item, sub, &elem),
                    None => item.clone(),
                });
            }
            Value::Array(out)
        }
    }
}

/// `set` with the declared struct fields on the way to its paths made members too (upstream's
/// `EnsureNamedFieldsAreMembers`), so that pruning never removes a struct whose fields are
/// still owned.
pub fn ensure_named_fields(set: &Set, ty: &Ty<'_>) -> Set {
    let mut out = Set::new();
    for m in set.members() {
        out.insert_member(m.clone());
    }
    let shape = ty.shape();
    for (pe, child) in set.children() {
        let child_ty = match (pe, &shape) {
            (PathElement::Field(name), _) => {
                if Ty::is_declared(&shape, name) {
                    out.insert_member(pe.clone());
                }
                ty.field(&shape, name)
            }
            (_, Shape::List { elem, .. }) => *elem,
            _ => ty.field(&Shape::Deduced, ""),
        };
        out.insert_child(pe.clone(), ensure_named_fields(child, &child_ty));
    }
    out
}
