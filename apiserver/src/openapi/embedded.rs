//! The lookup schemas (definitions without descriptions) and the kind table, generated from
//! k8s-openapi into `lookup.tsv` and embedded in the binary. Field validation, typed checks and
//! strategic merge patch read them without running the schema generator at run time (its code
//! and its ~2.5 MB tree stayed resident after the first request); only `/openapi/*` documents
//! still generate, on demand. `embedded_lookup_is_current` regenerates the table in the tests
//! and fails when it differs (`K1S_UPDATE_LOOKUP=1` rewrites it).

#[cfg(test)]
use super::defs::Definitions;
use super::defs::LazyDefinitions;
use super::kinds::KindDef;

/// The generated table: `K` lines (group, version, kind, definition) and `D` lines (definition
/// name, its compact JSON), tab-separated.
const TABLE: &str = include_str!("lookup.tsv");

#[cfg(test)]
const HEADER: &str = "# Generated from k8s-openapi by the test `openapi::tests::embedded_lookup_is_current` \
(K1S_UPDATE_LOOKUP=1 rewrites it); do not edit.";

/// Renders the table for `defs` and `kinds`.
#[cfg(test)]
pub(super) fn render(defs: &Definitions, kinds: &[KindDef]) -> String {
    let mut out = String::with_capacity(256 * 1024);
    out.push_str(HEADER);
    out.push('\n');
    for k in kinds {
        out.push_str(&format!(
            "K\t{}\t{}\t{}\t{}\n",
            k.group, k.version, k.kind, k.definition
        ));
    }
    for (name, schema) in defs {
        let json = serde_json::to_string(schema).unwrap_or_default();
        out.push_str(&format!("D\t{name}\t{json}\n"));
    }
    out
}

/// The embedded definitions (parsed one at a time on first use) and kinds (without their typed
/// checks, which the caller attaches).
pub(super) fn load() -> (LazyDefinitions, Vec<KindDef>) {
    let mut kinds = Vec::new();
    let mut defs = Vec::new();
    for line in TABLE.lines() {
        let mut f = line.splitn(5, '\t');
        match f.next() {
            Some("K") => {
                if let (Some(g), Some(v), Some(k), Some(d)) =
                    (f.next(), f.next(), f.next(), f.next())
                {
                    kinds.push(KindDef::new(g, v, k, d));
                }
            }
            Some("D") => {
                let mut f = line.splitn(3, '\t').skip(1);
                if let (Some(name), Some(json)) = (f.next(), f.next()) {
                    defs.push((name, json));
                }
            }
            _ => {}
        }
    }
    (LazyDefinitions::from_embedded(defs), kinds)
}
