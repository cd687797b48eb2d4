//! OpenAPI v2 and v3 documents built from k8s-openapi schemas, plus schema lookups (patch metadata, unknown fields).
//!
//! [`schemas()`] builds, once, the definitions of every served kind without their descriptions
//! (the lookup tree strategic merge patch and `fieldValidation` walk: small and quick to make).
//! The documents are built on first request, each from a fresh full generation, and only their
//! serialized bytes are kept.

mod defs;
mod embedded;
mod kinds;
mod lookup;
mod patch_facts;
mod paths;
mod v2;
mod v2_proto;
mod v3;

#[cfg(test)]
mod tests;

use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use crate::patch::{FieldPatchMeta, PatchSchema};
use defs::LazyDefinitions;
use kinds::KindDef;
pub use v2_proto::{V2_PROTOBUF_CONTENT_TYPE, V2Format};

/// The Kubernetes version the documents describe (`info.version`), matching the k8s-openapi
/// feature the schemas come from.
pub const KUBERNETES_VERSION: &str = "v1.33.0";

/// The schema registry: definitions named like upstream (`io.k8s.api.core.v1.Pod`) and the
/// served documents.
pub struct Schemas {
    /// Definitions without descriptions, for lookups.
    lookup: LazyDefinitions,
    kinds: Vec<KindDef>,
    v2: OnceLock<Bytes>,
    v2_proto: OnceLock<Bytes>,
    v3: OnceLock<v3::V3>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("definitions", &self.lookup.len())
            .field("kinds", &self.kinds.len())
            .finish_non_exhaustive()
    }
}

static SCHEMAS: OnceLock<Schemas> = OnceLock::new();

/// A fresh Swagger 2.0 document; built per form so that neither keeps the tree alive.
fn v2_document() -> Value {
    let full = defs::build(true);
    v2::document(full.defs, &full.kinds)
}

/// A Swagger 2.0 document in gnostic's protobuf form (for documents other than the built-in
/// one, which [`Schemas::v2_protobuf`] caches).
pub fn v2_protobuf_of(doc: &Value) -> Bytes {
    Bytes::from(v2_proto::encode(doc))
}

/// The process-wide registry, built on first use.
pub fn schemas() -> &'static Schemas {
    SCHEMAS.get_or_init(Schemas::build)
}

impl Schemas {
    /// Loads the embedded lookup definitions and kinds; documents come later, on demand.
    pub fn build() -> Schemas {
        let (lookup, mut kinds) = embedded::load();
        let checks = kinds::type_checks();
        for k in &mut kinds {
            k.type_check = checks
                .iter()
                .find(|(g, v, kind, _)| *g == k.group && *v == k.version && *kind == k.kind)
                .map(|c| c.3);
        }
        Schemas {
            lookup,
            kinds,
            v2: OnceLock::new(),
            v2_proto: OnceLock::new(),
            v3: OnceLock::new(),
        }
    }

    /// `/openapi/v2` as JSON.
    pub fn v2_json(&self) -> Bytes {
        self.v2
            .get_or_init(|| Bytes::from(serde_json::to_vec(&v2_document()).unwrap_or_default()))
            .clone()
    }

    /// `/openapi/v2` in gnostic's protobuf form (`openapi.v2.Document`), the same document as
    /// [`Schemas::v2_json`]. client-go asks for nothing else: kubectl 1.27 and 1.28 `apply` fail
    /// without it. Pick with [`V2Format::negotiate`].
    pub fn v2_protobuf(&self) -> Bytes {
        self.v2_proto
            .get_or_init(|| Bytes::from(v2_proto::encode(&v2_document())))
            .clone()
    }

    /// `/openapi/v2` in the given form.
    pub fn v2(&self, format: V2Format) -> Bytes {
        match format {
            V2Format::Json => self.v2_json(),
            V2Format::Protobuf => self.v2_protobuf(),
        }
    }

    fn v3(&self) -> &v3::V3 {
        self.v3.get_or_init(|| {
            let full = defs::build(true);
            v3::build(full.defs, &full.kinds)
        })
    }

    /// `/openapi/v3`: `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}`.
    pub fn v3_index_json(&self) -> Bytes {
        self.v3().index.clone()
    }

    /// The document at `/openapi/v3/<path>` (`api/v1`, `apis/apps/v1`, `apis/apps`, `api`,
    /// `apis`) and its hash: a request whose `?hash=` equals it may be answered with
    /// `Cache-Control: public, immutable`.
    pub fn v3_document(&self, path: &str) -> Option<(Bytes, &str)> {
        let doc = self.v3().docs.get(path.trim_matches('/'))?;
        Some((doc.json.clone(), doc.hash.as_str()))
    }

    /// The paths the v3 index lists.
    pub fn v3_paths(&self) -> impl Iterator<Item = &str> {
        self.v3().docs.keys().map(String::as_str)
    }

    /// Builds every document now (at start-up, instead of on the first request).
    pub fn warm(&self) {
        let _ = self.v2_protobuf();
        let _ = self.v3();
    }

    /// The definition name of a kind (`("apps", "v1", "Deployment")` ->
    /// `io.k8s.api.apps.v1.Deployment`); List kinds, `DeleteOptions` and `WatchEvent` included.
    pub fn definition_for(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
            .map(|k| k.definition.as_str())
    }

    /// A definition's schema, Swagger 2.0 layout (`#/definitions/...` refs), without descriptions.
    pub fn definition(&self, name: &str) -> Option<&Value> {
        self.lookup.get(name)
    }

    /// Paths (`spec.containers[0].bogus`: the form upstream puts in `unknown field "..."`) of
    /// the fields of `obj` that the definition `type_name` does not declare, through nested
    /// objects, arrays and maps; free-form values (`x-kubernetes-preserve-unknown-fields`,
    /// RawExtension, JSON, FieldsV1) are not looked into. Empty for an unknown definition.
    pub fn unknown_fields(&self, type_name: &str, obj: &Value) -> Vec<String> {
        lookup::unknown_fields(&self.lookup, type_name, obj)
    }

    /// Decodes `obj` as the typed kind (upstream decodes every built-in body into its Go type):
    /// `Err` says which field has the wrong type, in Go's words where the schema names it.
    /// Kinds without a typed form pass.
    pub fn type_check(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        obj: &Value,
    ) -> Result<(), String> {
        let Some(def) = self
            .kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
        else {
            return Ok(());
        };
        match def.type_check {
            // The typed decoding decides; the message is Go's where the schema can name it.
            Some(check) => check(obj).map_err(|decoding| {
                lookup::type_mismatch(&self.lookup, &def.definition, obj).unwrap_or(decoding)
            }),
            None => Ok(()),
        }
    }

    /// [`Schemas::type_check`], where a required field that is missing or null (which Go
    /// decodes as its zero value, and k8s-openapi cannot) is first filled with that zero value.
    pub fn type_check_filling_zeros(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        obj: &mut Value,
    ) -> Result<(), String> {
        let checked = self.type_check(group, version, kind, obj);
        if checked.is_ok() {
            return checked;
        }
        let Some(def) = self
            .kinds
            .iter()
            .find(|k| k.group == group && k.version == version && k.kind == kind)
        else {
            return checked;
        };
        if lookup::type_mismatch(&self.lookup, &def.definition, obj).is_some() {
            return checked;
        }
        let mut filled = obj.clone();
        if lookup::fill_required_zeros(&self.lookup, &def.definition, &mut filled)
            && self.type_check(group, version, kind, &filled).is_ok()
        {
            *obj = filled;
            return Ok(());
        }
        checked
    }

    /// Removes from `obj` the fields [`Schemas::unknown_fields`] reports, as upstream's typed
    /// decoding drops them (every `fieldValidation` mode), and returns their paths. Walks the
    /// path steps, so dotted map keys (`example.com/x`) are handled exactly.
    pub fn prune_unknown_fields(&self, type_name: &str, obj: &mut Value) -> Vec<String> {
        lookup::prune_unknown_fields(&self.lookup, type_name, obj)
    }
}

impl PatchSchema for Schemas {
    fn field(&self, type_name: &str, field: &str) -> Option<FieldPatchMeta> {
        lookup::field_meta(&self.lookup, type_name, field)
    }
}
