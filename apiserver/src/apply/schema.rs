//! The shape of a value as server-side apply sees it, read from an OpenAPI schema (built-in
//! definitions with `$ref`s, or a CRD's structural schema): structs, maps, lists (atomic, set,
//! or keyed map) and scalars, with upstream's rules for the list and map extensions.

use serde_json::{Map, Value};

/// Where the schemas of kinds come from. Built-in kinds use the OpenAPI definitions; custom
/// resources can implement this over their CRD's `openAPIV3Schema`.
pub trait TypeSource: Send + Sync {
    /// The schema of a kind's objects (`None`: unknown, every value is deduced from its form).
    fn root(&self, group: &str, version: &str, kind: &str) -> Option<&Value>;
    /// A definition a `$ref` names (`#/definitions/<name>` or `#/components/schemas/<name>`).
    fn definition(&self, name: &str) -> Option<&Value>;
    /// The definition name of a kind's root schema, when it has one.
    fn root_name(&self, _group: &str, _version: &str, _kind: &str) -> Option<&str> {
        None
    }
}

/// The built-in kinds' schemas.
pub struct Builtin;

/// The built-in kinds' schemas, shared.
pub fn builtin() -> std::sync::Arc<dyn TypeSource> {
    static BUILTIN: std::sync::LazyLock<std::sync::Arc<dyn TypeSource>> =
        std::sync::LazyLock::new(|| std::sync::Arc::new(Builtin));
    BUILTIN.clone()
}

/// One custom resource version's `openAPIV3Schema`: its list types, map types and keys steer
/// the merge as upstream's CRD schemas do; `None` when the version has none, so every value is
/// deduced from its form (maps granular, lists atomic). As upstream's builder does, the root
/// and every embedded resource get `apiVersion`, `kind` and a `metadata` of the built-in
/// ObjectMeta (so `finalizers` is a set and ObjectMeta's fields are known).
pub struct CustomResource(Option<Value>);

impl CustomResource {
    pub fn new(schema: Option<Value>) -> CustomResource {
        CustomResource(schema.map(|mut s| {
            add_kube_native_fields(&mut s, true);
            s
        }))
    }
}

const OBJECT_META_REF: &str = "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Gives a CRD schema's root and embedded resources `apiVersion`, `kind` and an ObjectMeta
/// `metadata`, as upstream's builder does for apply and type checks.
pub(crate) fn add_kube_native_fields(node: &mut Value, root: bool) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    let embedded = obj.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
    if root || embedded {
        let props = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(props) = props.as_object_mut() {
            for field in ["apiVersion", "kind"] {
                props
                    .entry(field)
                    .or_insert_with(|| serde_json::json!({"type": "string"}));
            }
            props.insert(
                "metadata".into(),
                serde_json::json!({"$ref": OBJECT_META_REF}),
            );
        }
    }
    for key in ["properties", "patternProperties"] {
        if let Some(Value::Object(children)) = obj.get_mut(key) {
            for (name, child) in children.iter_mut() {
                if !(key == "properties" && (root || embedded) && name == "metadata") {
                    add_kube_native_fields(child, false);
                }
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = obj.get_mut(key) {
            add_kube_native_fields(child, false);
        }
    }
}

impl TypeSource for CustomResource {
    fn root(&self, _group: &str, _version: &str, _kind: &str) -> Option<&Value> {
        self.0.as_ref()
    }

    fn definition(&self, name: &str) -> Option<&Value> {
        crate::openapi::schemas().definition(name)
    }
}

impl TypeSource for Builtin {
    fn root(&self, group: &str, version: &str, kind: &str) -> Option<&Value> {
        let schemas = crate::openapi::schemas();
        schemas.definition(schemas.definition_for(group, version, kind)?)
    }

    fn definition(&self, name: &str) -> Option<&Value> {
        crate::openapi::schemas().definition(name)
    }

    fn root_name(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        crate::openapi::schemas().definition_for(group, version, kind)
    }
}

/// A type: a schema node, or none (deduced from the value: maps granular, lists atomic, as
/// upstream treats schemaless custom resources).
#[derive(Clone, Copy)]
pub struct Ty<'a> {
    node: Option<&'a Value>,
    source: &'a dyn TypeSource,
    /// The root's definition name (other types name theirs through `$ref`).
    root_name: Option<&'a str>,
}

/// How a list merges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind<'a> {
    Atomic,
    Set,
    Map(Vec<&'a str>),
}

/// The resolved form of a type.
pub enum Shape<'a> {
    Scalar,
    /// Declared fields (`properties`), other keys typed by `extra` (additionalProperties) or
    /// deduced. `atomic` for `x-kubernetes-map-type: atomic`.
    Struct {
        props: Option<&'a Map<String, Value>>,
        extra: Option<Ty<'a>>,
        atomic: bool,
        /// The `required` field names.
        required: Option<&'a Vec<Value>>,
    },
    List {
        elem: Ty<'a>,
        kind: ListKind<'a>,
    },
    /// No schema: the value's own form decides.
    Deduced,
}

impl<'a> Ty<'a> {
    pub fn new(node: Option<&'a Value>, source: &'a dyn TypeSource) -> Ty<'a> {
        Ty {
            node,
            source,
            root_name: None,
        }
    }

    /// The root type of a kind.
    pub fn root(source: &'a dyn TypeSource, group: &str, version: &str, kind: &str) -> Ty<'a> {
        Ty {
            root_name: source.root_name(group, version, kind),
            ..Ty::new(source.root(group, version, kind), source)
        }
    }

    /// The name of the definition this type is (its `$ref`, or the root's).
    pub fn definition_name(&self) -> Option<&'a str> {
        let node = self.node?;
        let target = node
            .get("$ref")
            .or_else(|| node.get("allOf")?.as_array()?.first()?.get("$ref"))
            .and_then(Value::as_str);
        match target {
            Some(r) => Some(r.rsplit('/').next().unwrap_or(r)),
            None => self.root_name,
        }
    }

    fn with(&self, node: Option<&'a Value>) -> Ty<'a> {
        Ty::new(node, self.source)
    }

    /// Follows `$ref` (and a lone `allOf: [{$ref}]`) to the definition.
    fn resolved(&self) -> Option<&'a Value> {
        let mut node = self.node?;
        for _ in 0..8 {
            let target = node
                .get("$ref")
                .or_else(|| node.get("allOf")?.as_array()?.first()?.get("$ref"))
                .and_then(Value::as_str);
            let Some(r) = target else { break };
            let name = r.rsplit('/').next().unwrap_or(r);
            node = self.source.definition(name)?;
        }
        Some(node)
    }

    /// The shape of this type.
    pub fn shape(&self) -> Shape<'a> {
        let Some(outer) = self.node else {
            return Shape::Deduced;
        };
        let Some(node) = self.resolved() else {
            return Shape::Deduced;
        };
        let ext = |key: &str| {
            outer
                .get(key)
                .or_else(|| node.get(key))
                .and_then(Value::as_str)
        };
        if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Shape::Scalar;
        }
        let ty = node.get("type").and_then(Value::as_str);
        match ty {
            Some("array") => {
                let elem = self.with(node.get("items"));
                let kind = list_kind(outer, node);
                Shape::List { elem, kind }
            }
            Some("object") | None => {
                let props = node
                    .get("properties")
                    .and_then(Value::as_object)
                    .filter(|p| !p.is_empty());
                let extra = node
                    .get("additionalProperties")
                    .filter(|a| a.is_object())
                    .map(|a| self.with(Some(a)));
                if props.is_none() && extra.is_none() {
                    // No declared fields: a free-form value (RawExtension, FieldsV1, a
                    // preserve-unknown-fields object), deduced from its form.
                    return Shape::Deduced;
                }
                Shape::Struct {
                    props,
                    extra,
                    atomic: ext("x-kubernetes-map-type") == Some("atomic"),
                    required: node.get("required").and_then(Value::as_array),
                }
            }
            Some(_) => Shape::Scalar,
        }
    }

    /// `x-kubernetes-preserve-unknown-fields: true`: keys beyond the declared fields are allowed.
    pub fn preserves_unknown_fields(&self) -> bool {
        let preserves =
            |n: &Value| n.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
        self.node.is_some_and(preserves) || self.resolved().is_some_and(preserves)
    }

    /// The type of field `name` of a struct or map shape (deduced when undeclared).
    pub fn field(&self, shape: &Shape<'a>, name: &str) -> Ty<'a> {
        match shape {
            Shape::Struct { props, extra, .. } => {
                if let Some(p) = props.and_then(|p| p.get(name)) {
                    return self.with(Some(p));
                }
                extra.unwrap_or_else(|| self.with(None))
            }
            _ => self.with(None),
        }
    }

    /// Whether `name` is a declared field of a struct shape (as opposed to a map key).
    pub fn is_declared(shape: &Shape<'a>, name: &str) -> bool {
        matches!(shape, Shape::Struct { props: Some(p), .. } if p.contains_key(name))
    }
}

/// Upstream's list kinds: `x-kubernetes-list-type` first; else a strategic-merge-patch
/// `merge` strategy makes a keyed list (by `x-kubernetes-patch-merge-key`) or, without a key, a
/// set; else atomic.
fn list_kind<'a>(outer: &'a Value, node: &'a Value) -> ListKind<'a> {
    let get = |key: &str| outer.get(key).or_else(|| node.get(key));
    match get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => return ListKind::Set,
        Some("atomic") => return ListKind::Atomic,
        Some("map") => {
            let keys: Vec<&str> = get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            return ListKind::Map(keys);
        }
        _ => {}
    }
    let merge = get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
        .is_some_and(|s| s.split(',').any(|p| p.trim() == "merge"));
    if merge {
        return match get("x-kubernetes-patch-merge-key").and_then(Value::as_str) {
            Some(k) => ListKind::Map(vec![k]),
            None => ListKind::Set,
        };
    }
    ListKind::Atomic
}
