//! The REST operations of every catalog resource (URLs, operation ids, `x-kubernetes-action`,
//! parameters, bodies and responses), in one model that the v2 and v3 renderers share.

use k1s_apimachinery::catalog::{self, ResourceInfo};

use super::defs::{
    API_GROUP, API_GROUP_LIST, API_RESOURCE_LIST, API_VERSIONS, DELETE_OPTIONS, PATCH, STATUS,
    WATCH_EVENT,
};
use super::kinds::KindDef;

/// A query or path parameter.
#[derive(Clone, Copy, Debug)]
pub(super) struct Param {
    pub name: &'static str,
    pub in_path: bool,
    /// `string`, `boolean` or `integer`.
    pub ty: &'static str,
    pub description: &'static str,
}

const fn query(name: &'static str, ty: &'static str, description: &'static str) -> Param {
    Param {
        name,
        in_path: false,
        ty,
        description,
    }
}

const PRETTY: Param = query(
    "pretty",
    "string",
    "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
);
const NAMESPACE: Param = Param {
    name: "namespace",
    in_path: true,
    ty: "string",
    description: "object name and auth scope, such as for teams and projects",
};
const NAME: Param = Param {
    name: "name",
    in_path: true,
    ty: "string",
    description: "name of the object",
};

const LIST_PARAMS: &[Param] = &[
    query(
        "allowWatchBookmarks",
        "boolean",
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag.",
    ),
    query(
        "continue",
        "string",
        "The continue option should be set when retrieving more results from the server.",
    ),
    query(
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    query(
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    query(
        "limit",
        "integer",
        "limit is a maximum number of responses to return for a list call.",
    ),
    query(
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    query(
        "resourceVersionMatch",
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    query(
        "sendInitialEvents",
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
    ),
    query(
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call.",
    ),
    query(
        "watch",
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
    ),
];
const DRY_RUN: Param = query(
    "dryRun",
    "string",
    "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
);
const FIELD_MANAGER: Param = query(
    "fieldManager",
    "string",
    "fieldManager is a name associated with the actor or entity that is making these changes.",
);
const FIELD_VALIDATION: Param = query(
    "fieldValidation",
    "string",
    "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
);
const WRITE_PARAMS: &[Param] = &[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
const PATCH_PARAMS: &[Param] = &[
    DRY_RUN,
    FIELD_MANAGER,
    FIELD_VALIDATION,
    query(
        "force",
        "boolean",
        "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
    ),
];
const DELETE_PARAMS: &[Param] = &[
    DRY_RUN,
    query(
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    query(
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.",
    ),
    query(
        "orphanDependents",
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7.",
    ),
    query(
        "propagationPolicy",
        "string",
        "Whether and how garbage collection will be performed. Acceptable values are: 'Orphan', 'Background', 'Foreground'.",
    ),
];

/// The patch content types upstream accepts.
pub(super) const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// One operation on one URL.
#[derive(Debug)]
pub(super) struct Op {
    pub path: String,
    /// Lowercase HTTP method.
    pub method: &'static str,
    pub id: String,
    pub description: String,
    pub tag: String,
    /// `x-kubernetes-action`: get, list, watch, watchlist, post, put, patch, delete, deletecollection.
    pub action: Option<&'static str>,
    pub gvk: Option<(String, String, String)>,
    pub params: Vec<Param>,
    /// Definition of the request body (`Patch` for PATCH).
    pub body: Option<String>,
    /// Definition of the 200 response.
    pub response: String,
    /// Whether 201 and 202 are documented beside 200 (create) or 202 (delete).
    pub created: bool,
    pub accepted: bool,
    pub watch: bool,
}

/// `Core`, `Apps`, `RbacAuthorization`, `Admissionregistration`: upstream's operation-id word
/// for a group.
pub(super) fn group_word(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    group
        .strip_suffix(".k8s.io")
        .unwrap_or(group)
        .split('.')
        .map(capitalize)
        .collect()
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// `core_v1`, `apps_v1`, `rbacAuthorization_v1`.
pub(super) fn tag(group: &str, version: &str) -> String {
    let word = group_word(group);
    let mut chars = word.chars();
    let lower = chars
        .next()
        .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default();
    format!("{lower}_{version}")
}

/// `/api/v1` or `/apis/apps/v1`.
pub(super) fn gv_root(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// Every operation of one group version: discovery of the group version, then each resource.
pub(super) fn group_version_ops(group: &str, version: &str, kinds: &[KindDef]) -> Vec<Op> {
    let tag = tag(group, version);
    let mut ops = vec![Op {
        path: format!("{}/", gv_root(group, version)),
        method: "get",
        id: format!(
            "get{}{}APIResources",
            group_word(group),
            capitalize(version)
        ),
        description: "get available resources".into(),
        tag: tag.clone(),
        action: None,
        gvk: None,
        params: Vec::new(),
        body: None,
        response: API_RESOURCE_LIST.into(),
        created: false,
        accepted: false,
        watch: false,
    }];
    for r in catalog::resources_in(group, version) {
        resource_ops(r, kinds, &tag, &mut ops);
    }
    ops
}

/// `/api/` (core versions), `/apis/` (group list) and `/apis/<group>/` (one group).
pub(super) fn discovery_op(group: Option<&str>) -> Op {
    let (path, id, tag, response) = match group {
        None => (
            "/apis/".into(),
            "getAPIVersions".into(),
            "apis".into(),
            API_GROUP_LIST,
        ),
        Some("") => (
            "/api/".into(),
            "getCoreAPIVersions".into(),
            "core".into(),
            API_VERSIONS,
        ),
        Some(g) => {
            let word = group_word(g);
            let t = tag(g, "");
            (
                format!("/apis/{g}/"),
                format!("get{word}APIGroup"),
                t.trim_end_matches('_').to_owned(),
                API_GROUP,
            )
        }
    };
    Op {
        path,
        method: "get",
        id,
        description: if group == Some("") {
            "get available API versions"
        } else {
            "get information of a group"
        }
        .into(),
        tag,
        action: None,
        gvk: None,
        params: Vec::new(),
        body: None,
        response: response.into(),
        created: false,
        accepted: false,
        watch: false,
    }
}

fn definition<'a>(kinds: &'a [KindDef], group: &str, version: &str, kind: &str) -> Option<&'a str> {
    kinds
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
        .map(|k| k.definition.as_str())
}

fn resource_ops(r: &ResourceInfo, kinds: &[KindDef], tag: &str, ops: &mut Vec<Op>) {
    let Some(def) = definition(kinds, r.group, r.version, r.kind) else {
        return;
    };
    let list_def = definition(kinds, r.group, r.version, &r.list_kind()).unwrap_or(def);
    let root = gv_root(r.group, r.version);
    let (g, v, k) = (r.group, r.version, r.kind);
    let word = format!("{}{}", group_word(g), capitalize(v));
    let ns = if r.namespaced { "Namespaced" } else { "" };
    let scope = if r.namespaced {
        "namespaces/{namespace}/"
    } else {
        ""
    };
    let collection = format!("{root}/{scope}{}", r.resource);
    let item = format!("{collection}/{{name}}");
    let scope_params: Vec<Param> = if r.namespaced {
        vec![NAMESPACE]
    } else {
        Vec::new()
    };
    let with = |extra: &[Param], item: bool| {
        let mut p = scope_params.clone();
        if item {
            p.push(NAME);
        }
        p.push(PRETTY);
        p.extend_from_slice(extra);
        p
    };
    let gvk = Some((g.to_owned(), v.to_owned(), k.to_owned()));
    let op = |path: &str,
              method: &'static str,
              id: String,
              action: &'static str,
              description: String| Op {
        path: path.to_owned(),
        method,
        id,
        description,
        tag: tag.to_owned(),
        action: Some(action),
        gvk: gvk.clone(),
        params: Vec::new(),
        body: None,
        response: def.to_owned(),
        created: false,
        accepted: false,
        watch: false,
    };
    let delete_collection_params: Vec<Param> = [DELETE_PARAMS, LIST_PARAMS].concat();

    if r.has_verb("list") {
        ops.push(Op {
            params: with(LIST_PARAMS, false),
            response: list_def.to_owned(),
            ..op(
                &collection,
                "get",
                format!("list{word}{ns}{k}"),
                "list",
                format!("list or watch objects of kind {k}"),
            )
        });
        if r.namespaced {
            ops.push(Op {
                params: [&[PRETTY][..], LIST_PARAMS].concat(),
                response: list_def.to_owned(),
                ..op(
                    &format!("{root}/{}", r.resource),
                    "get",
                    format!("list{word}{k}ForAllNamespaces"),
                    "list",
                    format!("list or watch objects of kind {k}"),
                )
            });
        }
    }
    if r.has_verb("create") {
        ops.push(Op {
            params: with(WRITE_PARAMS, false),
            body: Some(def.to_owned()),
            created: true,
            accepted: true,
            ..op(
                &collection,
                "post",
                format!("create{word}{ns}{k}"),
                "post",
                format!("create a {k}"),
            )
        });
    }
    if r.has_verb("deletecollection") {
        ops.push(Op {
            params: with(&delete_collection_params, false),
            body: Some(DELETE_OPTIONS.into()),
            response: STATUS.into(),
            ..op(
                &collection,
                "delete",
                format!("delete{word}Collection{ns}{k}"),
                "deletecollection",
                format!("delete collection of {k}"),
            )
        });
    }
    if r.has_verb("get") {
        ops.push(Op {
            params: with(&[], true),
            ..op(
                &item,
                "get",
                format!("read{word}{ns}{k}"),
                "get",
                format!("read the specified {k}"),
            )
        });
    }
    if r.has_verb("update") {
        ops.push(Op {
            params: with(WRITE_PARAMS, true),
            body: Some(def.to_owned()),
            created: true,
            ..op(
                &item,
                "put",
                format!("replace{word}{ns}{k}"),
                "put",
                format!("replace the specified {k}"),
            )
        });
    }
    if r.has_verb("patch") {
        ops.push(Op {
            params: with(PATCH_PARAMS, true),
            body: Some(PATCH.into()),
            created: true,
            ..op(
                &item,
                "patch",
                format!("patch{word}{ns}{k}"),
                "patch",
                format!("partially update the specified {k}"),
            )
        });
    }
    if r.has_verb("delete") {
        ops.push(Op {
            params: with(DELETE_PARAMS, true),
            body: Some(DELETE_OPTIONS.into()),
            response: STATUS.into(),
            accepted: true,
            ..op(
                &item,
                "delete",
                format!("delete{word}{ns}{k}"),
                "delete",
                format!("delete a {k}"),
            )
        });
    }
    if r.has_verb("watch") {
        let watch_root = format!("{root}/watch/{scope}{}", r.resource);
        let watch = |path: String,
                     id: String,
                     action: &'static str,
                     params: Vec<Param>,
                     description: String| Op {
            params,
            response: WATCH_EVENT.into(),
            watch: true,
            ..op(&path, "get", id, action, description)
        };
        ops.push(watch(
            format!("{watch_root}/{{name}}"),
            format!("watch{word}{ns}{k}"),
            "watch",
            with(LIST_PARAMS, true),
            format!("watch changes to an object of kind {k}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."),
        ));
        ops.push(watch(
            watch_root.clone(),
            format!("watch{word}{ns}{k}List"),
            "watchlist",
            with(LIST_PARAMS, false),
            format!("watch individual changes to a list of {k}. deprecated: use the 'watch' parameter with a list operation instead."),
        ));
        if r.namespaced {
            ops.push(watch(
                format!("{root}/watch/{}", r.resource),
                format!("watch{word}{k}ListForAllNamespaces"),
                "watchlist",
                [&[PRETTY][..], LIST_PARAMS].concat(),
                format!("watch individual changes to a list of {k}. deprecated: use the 'watch' parameter with a list operation instead."),
            ));
        }
    }
    // Streaming subresources (log, exec, ...) are not objects: no read/replace/patch operations.
    for sub in r.subresources.iter().filter(|s| !s.is_connect()) {
        let Some(sub_def) = definition(kinds, sub.group, sub.version, sub.kind) else {
            continue;
        };
        let path = format!("{item}/{}", sub.name);
        let word_sub = capitalize(sub.name);
        let sub_op =
            |method: &'static str, verb: &str, action: &'static str, description: String| Op {
                gvk: Some((
                    sub.group.to_owned(),
                    sub.version.to_owned(),
                    sub.kind.to_owned(),
                )),
                response: sub_def.to_owned(),
                ..op(
                    &path,
                    method,
                    format!("{verb}{word}{ns}{k}{word_sub}"),
                    action,
                    description,
                )
            };
        if sub.has_verb("get") {
            ops.push(Op {
                params: with(&[], true),
                ..sub_op(
                    "get",
                    "read",
                    "get",
                    format!("read {} of the specified {k}", sub.name),
                )
            });
        }
        if sub.has_verb("update") {
            ops.push(Op {
                params: with(WRITE_PARAMS, true),
                body: Some(sub_def.to_owned()),
                created: true,
                ..sub_op(
                    "put",
                    "replace",
                    "put",
                    format!("replace {} of the specified {k}", sub.name),
                )
            });
        }
        if sub.has_verb("patch") {
            ops.push(Op {
                params: with(PATCH_PARAMS, true),
                body: Some(PATCH.into()),
                created: true,
                ..sub_op(
                    "patch",
                    "patch",
                    "patch",
                    format!("partially update {} of the specified {k}", sub.name),
                )
            });
        }
        if sub.has_verb("create") {
            ops.push(Op {
                params: with(WRITE_PARAMS, true),
                body: Some(sub_def.to_owned()),
                created: true,
                accepted: true,
                ..sub_op(
                    "post",
                    "create",
                    "post",
                    format!("create {} of a {k}", sub.name),
                )
            });
        }
    }
}
