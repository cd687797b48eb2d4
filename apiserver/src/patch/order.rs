//! Ordering of merged lists as upstream's strategic merge patch orders them: items named by the
//! patch (or by `$setElementOrder`) in that order, items only the server has in their original
//! order, interleaved so both relative orders hold.

use serde_json::Value;

/// Equality of list items and merge keys: JSON equality, except that numbers compare by value
/// (`80` equals `80.0`).
pub(super) fn value_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
                i == j
            } else if let (Some(i), Some(j)) = (x.as_u64(), y.as_u64()) {
                i == j
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        _ => a == b,
    }
}

/// How the items of a list are told apart: by the value of the merge key (lists of objects
/// merged by key) or by the whole item (sets of primitives).
#[derive(Clone, Copy, Debug)]
pub(super) enum Ident<'k> {
    Key(&'k str),
    Value,
}

impl Ident<'_> {
    /// The identity of `item`; `None` for an object without the merge key (or a non-object).
    pub(super) fn of<'v>(&self, item: &'v Value) -> Option<&'v Value> {
        match self {
            Ident::Key(key) => item.as_object().and_then(|m| m.get(*key)),
            Ident::Value => Some(item),
        }
    }

    /// The identities of `items`, in order.
    pub(super) fn all(&self, items: &[Value]) -> Vec<Option<Value>> {
        items.iter().map(|i| self.of(i).cloned()).collect()
    }
}

/// The index of the first of `ids` equal to `id`.
pub(super) fn position(ids: &[Option<Value>], id: Option<&Value>) -> Option<usize> {
    let id = id?;
    ids.iter()
        .position(|x| x.as_ref().is_some_and(|x| value_eq(x, id)))
}

/// Reorders `merged`: items whose identity is in `patch_ids` are sorted by it, the others
/// ("server-only") by `server_ids`, then the two runs are interleaved: a server-only item goes
/// before a patch item only when both were in the original list and it came first there.
/// Sorting is stable, so items with equal identities keep their relative order.
pub(super) fn normalize_order(
    merged: Vec<Value>,
    patch_ids: &[Option<Value>],
    server_ids: &[Option<Value>],
    ident: Ident<'_>,
) -> Vec<Value> {
    // (sort key, position in the original list, item)
    let mut patch_items = Vec::new();
    let mut server_only = Vec::new();
    for item in merged {
        let id = ident.of(&item);
        let in_server = position(server_ids, id);
        match position(patch_ids, id) {
            Some(p) => patch_items.push((p, in_server, item)),
            None => server_only.push((in_server.unwrap_or(usize::MAX), in_server, item)),
        }
    }
    patch_items.sort_by_key(|(key, _, _)| *key);
    server_only.sort_by_key(|(key, _, _)| *key);

    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((_, l, _)), Some((_, r, _))) => {
                matches!((l, r), (Some(a), Some(b)) if a < b)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next.map(|(_, _, item)| item));
    }
    out
}
