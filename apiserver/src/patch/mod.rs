//! Patches: JSON patch, JSON merge patch and strategic merge patch, applied to JSON objects.

/// Patch metadata of one field of an API type, as upstream's OpenAPI extensions give it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPatchMeta {
    /// `x-kubernetes-patch-strategy` split on ',': any of "merge", "retainKeys", "replace".
    pub strategies: Vec<String>,
    /// `x-kubernetes-patch-merge-key`, for lists merged by a key (e.g. containers by `name`).
    pub merge_key: Option<String>,
    /// `x-kubernetes-list-type` ("atomic", "set", "map"), if declared.
    pub list_type: Option<String>,
    /// The definition name (e.g. `io.k8s.api.core.v1.Container`) of this field's value when it is
    /// an object type; for arrays and maps, of their items.
    pub value_type: Option<String>,
}

/// Where strategic merge patch learns the shape of a type. Implemented by the OpenAPI schemas.
pub trait PatchSchema: Send + Sync {
    /// Metadata of `field` in the object type `type_name` (a definition name), if known.
    fn field(&self, type_name: &str, field: &str) -> Option<FieldPatchMeta>;
}
