//! Builds the definitions in upstream's Swagger 2.0 layout (`#/definitions/<name>` refs, `$ref`
//! with a sibling `description` on properties) from k8s-openapi's schemars impls, then adds what
//! schemars lacks: the List kinds, `x-kubernetes-group-version-kind` and the patch extensions.

use std::collections::BTreeMap;

use k1s_apimachinery::catalog;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::kinds::{self, KindDef};
use super::patch_facts::PACKAGES;

pub(super) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub(super) const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub(super) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub(super) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub(super) const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
pub(super) const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
pub(super) const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
pub(super) const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
pub(super) const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
pub(super) const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

/// Where Swagger 2.0 keeps definitions; `$ref`s point here.
pub(super) const REF_PREFIX: &str = "#/definitions/";

/// Definition name -> schema.
pub(super) type Definitions = BTreeMap<String, Value>;

/// The lookup definitions as compact JSON text (embedded in the binary), each parsed on first
/// use: the walkers (field validation, strategic merge patch) touch a handful per kind, and a
/// parsed tree of all of them costs about 2.5 MB where the text is about 190 KB.
pub(crate) struct LazyDefinitions {
    entries: BTreeMap<&'static str, LazyDefinition>,
}

struct LazyDefinition {
    json: &'static str,
    parsed: std::sync::OnceLock<Value>,
}

impl LazyDefinitions {
    pub(super) fn from_embedded(defs: Vec<(&'static str, &'static str)>) -> LazyDefinitions {
        let entries = defs
            .into_iter()
            .map(|(name, json)| {
                (
                    name,
                    LazyDefinition {
                        json,
                        parsed: std::sync::OnceLock::new(),
                    },
                )
            })
            .collect();
        LazyDefinitions { entries }
    }

    /// A definition's schema, parsed the first time it is asked for.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        let d = self.entries.get(name)?;
        Some(
            d.parsed
                .get_or_init(|| serde_json::from_str(d.json).unwrap_or(Value::Null)),
        )
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The compact JSON text of every definition (for size reports).
    #[cfg(test)]
    pub(crate) fn json_texts(&self) -> impl Iterator<Item = &str> {
        self.entries.values().map(|d| d.json)
    }
}

/// The definitions and the kinds that map onto them.
pub(super) struct Built {
    pub defs: Definitions,
    pub kinds: Vec<KindDef>,
}

/// Generates every definition. `with_descriptions: false` drops the prose (most of the bytes),
/// for the lookup tree that patching and field validation walk.
pub(super) fn build(with_descriptions: bool) -> Built {
    let mut generator = SchemaSettings::draft07()
        .with(|s| {
            s.definitions_path = "/definitions".into();
            s.meta_schema = None;
            // Upstream keeps `$ref` siblings (descriptions) in Swagger 2.0; keep them too.
            s.transforms = Vec::new();
        })
        .into_generator();
    let mut kinds = Vec::new();
    kinds::register(&mut generator, &mut kinds);
    let mut defs: Definitions = generator.take_definitions(false).into_iter().collect();

    add_lists(&mut defs, &mut kinds);
    add_shared_kinds(&mut kinds);
    add_gvks(&mut defs, &kinds);
    apply_patch_facts(&mut defs);
    upstream_forms(&mut defs);
    if !with_descriptions {
        for schema in defs.values_mut() {
            strip_descriptions(schema);
        }
    }
    Built { defs, kinds }
}

/// `<Kind>List` for every listable catalog resource, shaped like upstream's (k8s-openapi models
/// lists as a generic `List<T>` without a schema).
fn add_lists(defs: &mut Definitions, kinds: &mut Vec<KindDef>) {
    for r in catalog::resources().iter().filter(|r| r.has_verb("list")) {
        let list_kind = r.list_kind();
        let known = |k: &KindDef| k.group == r.group && k.version == r.version;
        if kinds.iter().any(|k| known(k) && k.kind == list_kind) {
            continue;
        }
        let Some(item) = kinds
            .iter()
            .find(|k| known(k) && k.kind == r.kind)
            .map(|k| k.definition.clone())
        else {
            continue;
        };
        let standard = |field: &str| {
            defs.get(&item)
                .and_then(|d| d.pointer(&format!("/properties/{field}")))
                .cloned()
                .unwrap_or_else(|| json!({"type": "string"}))
        };
        let schema = json!({
            "description": format!("{list_kind} is a list of {} objects.", r.kind),
            "type": "object",
            "properties": {
                "apiVersion": standard("apiVersion"),
                "items": {
                    "description": format!("List of {}.", r.resource),
                    "type": "array",
                    "items": {"$ref": format!("{REF_PREFIX}{item}")},
                },
                "kind": standard("kind"),
                "metadata": {
                    "$ref": format!("{REF_PREFIX}{LIST_META}"),
                    "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                },
            },
            "required": ["items"],
        });
        let name = format!("{item}List");
        defs.insert(name.clone(), schema);
        kinds.push(KindDef::new(r.group, r.version, &list_kind, &name));
    }
}

/// `DeleteOptions` and `WatchEvent` are served by every group version (upstream lists a GVK for
/// each on the one definition).
fn add_shared_kinds(kinds: &mut Vec<KindDef>) {
    for g in catalog::groups() {
        for v in g.versions {
            kinds.push(KindDef::new(g.name, v, "DeleteOptions", DELETE_OPTIONS));
            kinds.push(KindDef::new(g.name, v, "WatchEvent", WATCH_EVENT));
        }
    }
}

fn add_gvks(defs: &mut Definitions, kinds: &[KindDef]) {
    let mut by_def: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for k in kinds {
        by_def.entry(&k.definition).or_default().push(json!({
            "group": k.group,
            "kind": k.kind,
            "version": k.version,
        }));
    }
    for (def, gvks) in by_def {
        if let Some(Value::Object(schema)) = defs.get_mut(def) {
            schema.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks));
        }
    }
}

fn apply_patch_facts(defs: &mut Definitions) {
    for (prefix, atomic, fields) in PACKAGES {
        for name in *atomic {
            if let Some(Value::Object(schema)) = defs.get_mut(&format!("{prefix}.{name}")) {
                schema.insert("x-kubernetes-map-type".into(), json!("atomic"));
            }
        }
        for (name, field, ext) in *fields {
            let prop = defs
                .get_mut(&format!("{prefix}.{name}"))
                .and_then(|d| d.get_mut("properties"))
                .and_then(|p| p.get_mut(*field))
                .and_then(Value::as_object_mut);
            if let Some(prop) = prop {
                ext.apply(prop);
            }
        }
    }
}

/// Upstream's Swagger 2.0 forms of the types whose JSON is not one fixed type. Swagger 2.0 has
/// no `oneOf` (kubectl's v2 parser rejects a document with one), and upstream serves these as a
/// string, or with no type at all.
fn upstream_forms(defs: &mut Definitions) {
    let mut set = |name: &str, f: &dyn Fn(&mut Map<String, Value>)| {
        if let Some(Value::Object(schema)) = defs.get_mut(name) {
            schema.remove("x-kubernetes-int-or-string");
            schema.remove("oneOf");
            schema.remove("type");
            f(schema);
        }
    };
    set(QUANTITY, &|s| {
        s.insert("type".into(), json!("string"));
    });
    set(INT_OR_STRING, &|s| {
        s.insert("type".into(), json!("string"));
        s.insert("format".into(), json!("int-or-string"));
    });
    for any in [
        "JSON",
        "JSONSchemaPropsOrArray",
        "JSONSchemaPropsOrBool",
        "JSONSchemaPropsOrStringArray",
    ] {
        set(
            &format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{any}"),
            &|_| {},
        );
    }
}

/// Removes `description` from a schema and its subschemas (not from `properties`, where it may
/// name a field, e.g. `PriorityClass.description`).
fn strip_descriptions(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    obj.remove("description");
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(strip_descriptions);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = obj.get_mut(key) {
            strip_descriptions(sub);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(subs)) = obj.get_mut(key) {
            subs.iter_mut().for_each(strip_descriptions);
        }
    }
}

/// The definition a schema refers to, if it is a `$ref` (with or without siblings).
pub(super) fn ref_name(schema: &Map<String, Value>) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(REF_PREFIX))
}

/// Calls `f` with every definition name `schema` refers to, at any depth.
pub(super) fn each_ref(schema: &Value, f: &mut impl FnMut(&str)) {
    match schema {
        Value::Object(obj) => {
            if let Some(name) = ref_name(obj) {
                f(name);
            }
            obj.values().for_each(|v| each_ref(v, f));
        }
        Value::Array(items) => items.iter().for_each(|v| each_ref(v, f)),
        _ => {}
    }
}
