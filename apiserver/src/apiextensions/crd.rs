//! The CustomResourceDefinition strategy: v1 defaults, status reset and `storedVersions` on
//! create/update, and the important rules of upstream's CRD validation (names, versions, exactly
//! one storage version, structural schemas required).

use k1s_apimachinery::FieldError;
use k1s_apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::{Value, json};

use crate::registry::Strategy;

/// Finalizer that holds a deleted CRD until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub struct CustomResourceDefinitions;

impl Strategy for CustomResourceDefinitions {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
            let kind = names
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if names
                .get("singular")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
            if !kind.is_empty()
                && names
                    .get("listKind")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
        }
        if !spec.get("conversion").is_some_and(Value::is_object) {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
        // v1's ServiceReference default.
        if let Some(service) = spec
            .get_mut("conversion")
            .and_then(|c| c.pointer_mut("/webhook/clientConfig/service"))
            .and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), json!(443));
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        // Upstream starts from an empty status; the zero-field walk then writes Go's
        // `acceptedNames: {kind: "", plural: ""}` and `conditions: null`.
        obj["status"] = json!({});
        add_storage_version(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        add_storage_version(new);
    }

    fn tracks_generation(&self, _: &k1s_apimachinery::catalog::ResourceInfo) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate(obj, true)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        // A stored list with no version this server speaks may stay so (upstream's
        // requireRecognizedConversionReviewVersion).
        let old_versions = old
            .pointer("/spec/conversion/webhook/conversionReviewVersions")
            .and_then(Value::as_array);
        let require_recognized = old_versions.is_none_or(|v| {
            v.is_empty()
                || v.iter()
                    .any(|x| REVIEW_VERSIONS.contains(&x.as_str().unwrap_or_default()))
        });
        let mut errs = validate(new, require_recognized);
        let established = is_condition_true(old, "Established");
        let immutable = |errs: &mut Vec<FieldError>, pointer: &str, field: &str| {
            let (n, o) = (new.pointer(pointer), old.pointer(pointer));
            if n != o {
                errs.push(FieldError::invalid(
                    field,
                    n.cloned().unwrap_or(Value::Null),
                    "field is immutable",
                ));
            }
        };
        if established {
            immutable(&mut errs, "/spec/scope", "spec.scope");
            immutable(&mut errs, "/spec/names/kind", "spec.names.kind");
        }
        immutable(&mut errs, "/spec/group", "spec.group");
        immutable(&mut errs, "/spec/names/plural", "spec.names.plural");
        if let Some(stored) = new
            .pointer("/status/storedVersions")
            .and_then(Value::as_array)
        {
            let versions = version_names(new);
            for (i, v) in stored.iter().enumerate() {
                if let Some(name) = v.as_str()
                    && !versions.iter().any(|x| x == name)
                {
                    errs.push(FieldError::invalid(
                        format!("status.storedVersions[{i}]"),
                        name,
                        "must appear in spec.versions",
                    ));
                }
            }
        }
        errs
    }
}

/// ConversionReview versions this server speaks.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// Upstream's validateCustomResourceConversion. Its paths name the internal type's fields
/// (`webhookClientConfig`, `conversionReviewVersions` directly under `spec.conversion`), and
/// so do the messages clients see.
fn validate_conversion(conv: &Value, require_recognized: bool, errs: &mut Vec<FieldError>) {
    const PATH: &str = "spec.conversion";
    let webhook = conv.get("webhook").filter(|w| w.is_object());
    let client = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| c.is_object());
    let review_versions = webhook
        .and_then(|w| w["conversionReviewVersions"].as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    match conv["strategy"].as_str().unwrap_or_default() {
        "Webhook" => {
            match client {
                None => errs.push(FieldError::required(
                    format!("{PATH}.webhookClientConfig"),
                    "required when strategy is set to Webhook",
                )),
                Some(cc) => {
                    let at = format!("{PATH}.webhookClientConfig");
                    match (
                        cc.get("url").filter(|u| !u.is_null()),
                        cc.get("service").filter(|s| !s.is_null()),
                    ) {
                        (Some(url), None) => crate::admission::validation::webhook_url(
                            url.as_str().unwrap_or_default(),
                            &format!("{at}.url"),
                            errs,
                        ),
                        (None, Some(service)) => crate::admission::validation::webhook_service(
                            service,
                            &format!("{at}.service"),
                            errs,
                        ),
                        _ => errs.push(FieldError::required(
                            &at,
                            "exactly one of url or service is required",
                        )),
                    }
                    if cc["caBundle"].as_str().is_some_and(|b| !b.is_empty())
                        && let Err(e) = crate::admission::webhook::config::tls_config(cc, &[])
                    {
                        errs.push(FieldError::invalid(format!("{at}.caBundle"), "", e));
                    }
                }
            }
            let at = format!("{PATH}.conversionReviewVersions");
            if review_versions.is_empty() {
                errs.push(FieldError::required(at, ""));
            } else {
                crate::admission::validation::review_versions(
                    review_versions,
                    &at,
                    require_recognized,
                    errs,
                );
            }
        }
        "" => errs.push(FieldError::required(format!("{PATH}.strategy"), "")),
        strategy => {
            if strategy != "None" {
                errs.push(FieldError::not_supported(
                    format!("{PATH}.strategy"),
                    strategy,
                    &["None", "Webhook"],
                ));
            }
            if client.is_some() {
                errs.push(FieldError::forbidden(
                    format!("{PATH}.webhookClientConfig"),
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !review_versions.is_empty() {
                errs.push(FieldError::forbidden(
                    format!("{PATH}.conversionReviewVersions"),
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
    }
}

/// Whether a CRD has condition `type` with status True.
pub fn is_condition_true(crd: &Value, ty: &str) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == ty && c["status"] == "True"))
}

fn version_names(crd: &Value) -> Vec<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The version marked `storage: true`, if exactly one is.
pub fn storage_version(crd: &Value) -> Option<String> {
    let vs = crd.pointer("/spec/versions").and_then(Value::as_array)?;
    let mut storage = vs.iter().filter(|v| v["storage"] == true);
    let first = storage.next()?;
    if storage.next().is_some() {
        return None;
    }
    first["name"].as_str().map(str::to_string)
}

fn add_storage_version(obj: &mut Value) {
    let Some(v) = storage_version(obj) else {
        return;
    };
    if !obj["status"].is_object() {
        obj["status"] = json!({});
    }
    let stored = &mut obj["status"]["storedVersions"];
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(list) = stored.as_array_mut()
        && !list.iter().any(|x| x == &json!(v))
    {
        list.push(json!(v));
    }
}

fn validate(obj: &Value, require_recognized_review_version: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec.pointer("/names/plural").and_then(Value::as_str);
    let name = obj.pointer("/metadata/name").and_then(Value::as_str);
    if let Some(name) = name
        && !name.is_empty()
        && Some(name.to_string()) != plural.map(|p| format!("{p}.{group}"))
    {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if let msgs @ [_, ..] = is_dns1123_subdomain(group).as_slice() {
        errs.push(FieldError::invalid("spec.group", group, msgs.join(",")));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    match spec["scope"].as_str().unwrap_or_default() {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    validate_names(&spec["names"], "spec.names", true, &mut errs);
    validate_versions(spec, &mut errs);
    if let Some(conv) = spec.get("conversion").filter(|c| c.is_object()) {
        validate_conversion(conv, require_recognized_review_version, &mut errs);
    }
    if spec["preserveUnknownFields"] == true {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

fn validate_names(names: &Value, path: &str, required: bool, errs: &mut Vec<FieldError>) {
    let get = |k: &str| names[k].as_str().unwrap_or_default();
    if required {
        for k in ["plural", "singular", "kind", "listKind"] {
            if get(k).is_empty() {
                errs.push(FieldError::required(format!("{path}.{k}"), ""));
            }
        }
    }
    for k in ["plural", "singular"] {
        let v = get(k);
        if let msgs @ [_, ..] = is_dns1035_label(v).as_slice()
            && !v.is_empty()
        {
            errs.push(FieldError::invalid(
                format!("{path}.{k}"),
                v,
                msgs.join(","),
            ));
        }
    }
    for k in ["kind", "listKind"] {
        let v = get(k);
        if let msgs @ [_, ..] = is_dns1035_label(&v.to_lowercase()).as_slice()
            && !v.is_empty()
        {
            errs.push(FieldError::invalid(
                format!("{path}.{k}"),
                v,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    msgs.join(",")
                ),
            ));
        }
    }
    for list in ["shortNames", "categories"] {
        for (i, v) in names[list]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .enumerate()
        {
            if let msgs @ [_, ..] = is_dns1035_label(v).as_slice() {
                errs.push(FieldError::invalid(
                    format!("{path}.{list}[{i}]"),
                    v,
                    msgs.join(","),
                ));
            }
        }
    }
    if !get("kind").is_empty() && get("kind") == get("listKind") {
        errs.push(FieldError::invalid(
            format!("{path}.listKind"),
            get("listKind"),
            "kind and listKind may not be the same",
        ));
    }
}

fn validate_versions(spec: &Value, errs: &mut Vec<FieldError>) {
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        errs.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return;
    }
    let mut seen = Vec::new();
    let mut storage = 0;
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = v["name"].as_str().unwrap_or_default();
        if v["storage"] == true {
            storage += 1;
        }
        if seen.contains(&name) {
            errs.push(FieldError::invalid(
                "spec.versions",
                Value::Array(versions.clone()),
                "must contain unique version names",
            ));
        }
        seen.push(name);
        if let msgs @ [_, ..] = is_dns1035_label(name).as_slice() {
            errs.push(FieldError::invalid(
                format!("{path}.name"),
                name,
                msgs.join(","),
            ));
        }
        let schema = v.pointer("/schema/openAPIV3Schema");
        match schema {
            None | Some(Value::Null) => errs.push(FieldError::required(
                format!("{path}.schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(s) => {
                let status = v.pointer("/subresources/status").is_some();
                let before = errs.len();
                super::structural::check(
                    s,
                    &format!("{path}.schema.openAPIV3Schema"),
                    status,
                    errs,
                );
                // Rules compile only in a structural schema. Versions sharing one schema are
                // one internal `spec.validation` upstream, and are reported once, there.
                if errs.len() == before {
                    let shared = versions
                        .iter()
                        .all(|o| o.pointer("/schema/openAPIV3Schema") == Some(s));
                    if !shared {
                        let p = format!("{path}.schema.openAPIV3Schema");
                        errs.extend(super::cel::compile(s, &p).1);
                    } else if i == 0 {
                        errs.extend(super::cel::compile(s, "spec.validation.openAPIV3Schema").1);
                    }
                }
            }
        }
        validate_subresources(v, &path, errs);
        for (j, c) in v["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let cpath = format!("{path}.additionalPrinterColumns[{j}]");
            if c["name"].as_str().is_none_or(str::is_empty) {
                errs.push(FieldError::required(format!("{cpath}.name"), ""));
            }
            match c["type"].as_str().unwrap_or_default() {
                "" => errs.push(FieldError::required(format!("{cpath}.type"), "")),
                "integer" | "number" | "string" | "boolean" | "date" => {}
                other => errs.push(FieldError::not_supported(
                    format!("{cpath}.type"),
                    other,
                    &["boolean", "date", "integer", "number", "string"],
                )),
            }
            if c["jsonPath"].as_str().is_none_or(str::is_empty) {
                errs.push(FieldError::required(format!("{cpath}.JSONPath"), ""));
            }
        }
        validate_selectable_fields(v, &path, errs);
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            Value::Array(versions),
            "must have exactly one version marked as storage version",
        ));
    }
}

/// Upstream's most selectable fields per version.
const MAX_SELECTABLE_FIELDS: usize = 8;

/// `selectableFields`: simple paths (no array notation, not into metadata) to a string,
/// boolean or integer field of the version's schema, unique, at most eight.
fn validate_selectable_fields(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(fields) = v.get("selectableFields").and_then(Value::as_array) else {
        return;
    };
    if fields.is_empty() {
        return;
    }
    let fpath = format!("{path}.selectableFields");
    let Some(schema) = v
        .pointer("/schema/openAPIV3Schema")
        .filter(|s| s.is_object())
    else {
        errs.push(FieldError::invalid(
            fpath,
            "",
            "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
        ));
        return;
    };
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in fields.iter().enumerate() {
        let jpath = format!("{fpath}[{i}].jsonPath");
        let Some(json_path) = f
            .get("jsonPath")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            errs.push(FieldError::required(jpath, ""));
            continue;
        };
        let (field, node) = match selectable_path(json_path, schema) {
            Ok(found) => found,
            Err(e) => {
                errs.push(FieldError::invalid(
                    jpath,
                    json_path,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if field == "metadata" || field.starts_with("metadata.") {
            errs.push(FieldError::invalid(
                jpath.clone(),
                json_path,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(
            node.get("type").and_then(Value::as_str),
            Some("string" | "boolean" | "integer")
        ) {
            errs.push(FieldError::invalid(
                jpath.clone(),
                json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&field) {
            errs.push(FieldError::duplicate(jpath, json_path));
        } else {
            unique.push(field);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(
            fpath,
            Some(unique.len()),
            Some(MAX_SELECTABLE_FIELDS),
        ));
    }
}

/// A selectable field's path (`.spec.color`) in the schema: the field selector name
/// (`spec.color`) and the schema node it reaches. Only `.name` steps through properties.
fn selectable_path<'a>(json_path: &str, schema: &'a Value) -> Result<(String, &'a Value), String> {
    let mut node = schema;
    let mut names: Vec<&str> = Vec::new();
    let mut rest = json_path;
    while !rest.is_empty() {
        let Some(r) = rest.strip_prefix('.') else {
            return Err(if rest.starts_with('[') {
                "array notation is not allowed".to_string()
            } else {
                format!("expected [ or . but got: {rest}")
            });
        };
        let end = r.find(['.', '[']).unwrap_or(r.len());
        let name = &r[..end];
        if name.is_empty() {
            return Err("unexpected end of JSON path".into());
        }
        node = node
            .get("properties")
            .and_then(|p| p.get(name))
            .ok_or("does not refer to a valid field")?;
        names.push(name);
        rest = &r[end..];
    }
    if names.is_empty() {
        return Err("unexpected end of JSON path".into());
    }
    Ok((names.join("."), node))
}

fn validate_subresources(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(scale) = v.pointer("/subresources/scale").filter(|s| s.is_object()) else {
        return;
    };
    let spath = format!("{path}.subresources.scale");
    for (key, required) in [
        ("specReplicasPath", true),
        ("statusReplicasPath", true),
        ("labelSelectorPath", false),
    ] {
        match scale[key].as_str() {
            None | Some("") if required => {
                errs.push(FieldError::required(format!("{spath}.{key}"), ""));
            }
            Some(p) if !p.is_empty() && !p.starts_with('.') => errs.push(FieldError::invalid(
                format!("{spath}.{key}"),
                p,
                "should be a json path under either .spec or .status",
            )),
            _ => {}
        }
    }
    if let Some(p) = scale["specReplicasPath"].as_str()
        && p.starts_with('.')
        && !p.starts_with(".spec.")
    {
        errs.push(FieldError::invalid(
            format!("{spath}.specReplicasPath"),
            p,
            "should be a json path under .spec",
        ));
    }
    if let Some(p) = scale["statusReplicasPath"].as_str()
        && p.starts_with('.')
        && !p.starts_with(".status.")
    {
        errs.push(FieldError::invalid(
            format!("{spath}.statusReplicasPath"),
            p,
            "should be a json path under .status",
        ));
    }
}
