//! PersistentVolume validation (upstream's ValidatePersistentVolumeSpec and
//! ValidatePersistentVolumeUpdate, with pkg/volume/validation's mount-option rule) and the
//! selector and data-source rules of ValidatePersistentVolumeClaimSpec.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::quantity::Quantity;
use k1s_apimachinery::status::{BadValue, FieldErrorType};
use k1s_apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain};
use serde_json::Value;

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

/// The sources a PersistentVolume may name, in the order upstream checks them, with the
/// child path upstream reports for a second source and the fields each one requires.
const PV_SOURCES: [(&str, &str, &[&str]); 22] = [
    ("hostPath", "hostPath", &[]),
    ("gcePersistentDisk", "gcePersistentDisk", &[]),
    (
        "awsElasticBlockStore",
        "awsElasticBlockStore",
        &["volumeID"],
    ),
    ("glusterfs", "glusterfs", &["endpoints", "path"]),
    ("flocker", "flocker", &[]),
    ("nfs", "nfs", &["server", "path"]),
    ("rbd", "rbd", &["image"]),
    ("quobyte", "quobyte", &["registry", "volume"]),
    ("cephfs", "cephFS", &[]),
    ("iscsi", "iscsi", &[]),
    ("cinder", "cinder", &["volumeID"]),
    ("fc", "fc", &[]),
    ("flexVolume", "flexVolume", &["driver"]),
    ("azureFile", "azureFile", &["secretName", "shareName"]),
    ("vsphereVolume", "vsphereVolume", &["volumePath"]),
    ("photonPersistentDisk", "photonPersistentDisk", &["pdID"]),
    ("portworxVolume", "portworxVolume", &["volumeID"]),
    ("azureDisk", "azureDisk", &["diskName", "diskURI"]),
    ("scaleIO", "scaleIO", &["gateway", "system", "volumeName"]),
    ("local", "local", &[]),
    ("storageos", "storageos", &[]),
    ("csi", "csi", &["volumeHandle"]),
];

/// Sources whose volumes take mount options (pkg/volume/validation's checkMountOption).
const MOUNT_OPTION_SOURCES: [&str; 14] = [
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "nfs",
    "rbd",
    "quobyte",
    "iscsi",
    "cinder",
    "cephfs",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
    "csi",
];

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn invalid_each(path: &str, value: &str, msgs: Vec<String>) -> Vec<FieldError> {
    msgs.into_iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect()
}

/// The access-mode rules PVs and PVCs share (an unsupported mode is neither ReadWriteOncePod
/// nor another one, as upstream's switch).
pub(super) fn access_mode_errors(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let modes = spec.get("accessModes").and_then(Value::as_array);
    let (mut once_pod, mut other) = (false, false);
    for m in modes.into_iter().flatten() {
        let m = m.as_str().unwrap_or_default();
        if !ACCESS_MODES.contains(&m) {
            errs.push(FieldError::not_supported(
                format!("{path}.accessModes"),
                m,
                &ACCESS_MODES,
            ));
        } else if m == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            other = true;
        }
    }
    if once_pod && other {
        errs.push(FieldError::forbidden(
            format!("{path}.accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

/// The checks of one PV source at `at` (`spec.nfs`, ...).
fn source_errors(
    name: &str,
    s: &Value,
    at: &str,
    required: &[&str],
    pv_name: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let f = |child: &str| format!("{at}.{child}");
    for r in required {
        if text(s, r).is_empty() {
            errs.push(FieldError::required(f(r), ""));
        }
    }
    let no_backsteps = |p: &str, field: String, errs: &mut Vec<FieldError>| {
        if p.split('/').any(|x| x == "..") {
            errs.push(FieldError::invalid(field, p, "must not contain '..'"));
        }
    };
    match name {
        "hostPath" | "local" => {
            let p = text(s, "path");
            if p.is_empty() {
                errs.push(FieldError::required(f("path"), ""));
            } else {
                no_backsteps(p, f("path"), &mut errs);
            }
        }
        "nfs" => {
            let p = text(s, "path");
            if !p.starts_with('/') {
                errs.push(FieldError::invalid(
                    f("path"),
                    p,
                    "must be an absolute path",
                ));
            }
        }
        // Upstream validates a PV's GCE disk at `persistentDisk`.
        "gcePersistentDisk" if text(s, "pdName").is_empty() => {
            errs.push(FieldError::required(
                at.replace("gcePersistentDisk", "persistentDisk") + ".pdName",
                "",
            ));
        }
        "rbd" | "cephfs"
            if s.get("monitors")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty) =>
        {
            errs.push(FieldError::required(f("monitors"), ""));
        }
        // The pod-volume checks, shared (validateISCSIPersistentVolumeSource differs a little).
        "iscsi" => errs.extend(super::pod_validation::iscsi_errors(
            s,
            at,
            super::pod_validation::IscsiOwner::Volume(pv_name),
        )),
        "fc" => errs.extend(super::pod_validation::fc_errors(s, at)),
        "flocker" => {
            let (name, uuid) = (text(s, "datasetName"), text(s, "datasetUUID"));
            if name.is_empty() == uuid.is_empty() {
                errs.push(FieldError::required(
                    at,
                    "one and only one of datasetName and datasetUUID should be set",
                ));
            }
        }
        "storageos" => {
            let v = text(s, "volumeName");
            if v.is_empty() {
                errs.push(FieldError::required(f("volumeName"), ""));
            } else {
                errs.extend(invalid_each(&f("volumeName"), v, is_dns1123_label(v)));
            }
            let ns = text(s, "volumeNamespace");
            if !ns.is_empty() {
                errs.extend(invalid_each(
                    &f("volumeNamespace"),
                    ns,
                    is_dns1123_label(ns),
                ));
            }
        }
        "csi" => {
            let driver = text(s, "driver");
            if driver.is_empty() {
                errs.push(FieldError::required(f("driver"), ""));
            }
            if driver.len() > 63 {
                errs.push(FieldError::too_long(f("driver"), Some(63)));
            }
            let msgs = is_dns1123_subdomain(&driver.to_lowercase());
            errs.extend(invalid_each(&f("driver"), driver, msgs));
            // Upstream's validatePVSecretReference, in its order of the four references.
            for r in [
                "controllerPublishSecretRef",
                "controllerExpandSecretRef",
                "nodePublishSecretRef",
                "nodeExpandSecretRef",
            ] {
                let Some(r_val) = set(s, r) else { continue };
                let (n, ns) = (text(r_val, "name"), text(r_val, "namespace"));
                if n.is_empty() {
                    errs.push(FieldError::required(f(&format!("{r}.name")), ""));
                } else {
                    let p = f(&format!("{r}.name"));
                    errs.extend(invalid_each(&p, n, is_dns1123_subdomain(n)));
                }
                if ns.is_empty() {
                    errs.push(FieldError::required(f(&format!("{r}.namespace")), ""));
                } else {
                    let p = f(&format!("{r}.namespace"));
                    errs.extend(invalid_each(&p, ns, is_dns1123_label(ns)));
                }
            }
        }
        _ => {}
    }
    errs
}

/// ValidatePersistentVolumeSpec (not inline) plus checkMountOption.
pub fn validate_pv(obj: &Value) -> Vec<FieldError> {
    validate_pv_with(obj, false)
}

/// `validate_pv`; `allow_bad_values` lets the required node affinity keep requirement values
/// that are not label values (ValidationOptionsForPersistentVolume: when the stored PV has
/// them).
fn validate_pv_with(obj: &Value, allow_bad_values: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if spec
        .get("accessModes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        errs.push(FieldError::required("spec.accessModes", ""));
    }
    errs.extend(access_mode_errors(spec, "spec"));
    let capacity = spec.get("capacity").and_then(Value::as_object);
    if capacity.is_none_or(|c| c.is_empty()) {
        errs.push(FieldError::required("spec.capacity", ""));
    }
    if capacity.is_none_or(|c| !c.contains_key("storage") || c.len() > 1) {
        // Upstream prints the list as Go's `%#v` of a ResourceList; k1s prints its JSON.
        errs.push(FieldError::not_supported(
            "spec.capacity",
            spec.get("capacity").cloned().unwrap_or(Value::Null),
            &["storage"],
        ));
    }
    for (k, v) in capacity.into_iter().flatten() {
        let at = format!("spec.capacity[{k}]");
        let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        if let Some(q) = Quantity::parse(&text) {
            if q.is_negative() {
                errs.push(FieldError::invalid(
                    &at,
                    q.value() as i64,
                    "must be a valid resource quantity",
                ));
            }
            if q <= Quantity::zero() {
                errs.push(FieldError::invalid(
                    &at,
                    q.to_string(),
                    "must be greater than zero",
                ));
            }
        }
    }
    if let Some(p) = spec
        .get("persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        const POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
        if !POLICIES.contains(&p) {
            errs.push(FieldError::not_supported(
                "spec.persistentVolumeReclaimPolicy",
                p,
                &POLICIES,
            ));
        }
    }
    let mut affinity = false;
    if let Some(a) = set(spec, "nodeAffinity") {
        match set(a, "required") {
            None => errs.push(FieldError::required(
                "spec.nodeAffinity.required",
                "must specify required node constraints",
            )),
            Some(r) => {
                affinity = true;
                let terms = r.get("nodeSelectorTerms").and_then(Value::as_array);
                let at = "spec.nodeAffinity.required.nodeSelectorTerms";
                if terms.is_none_or(Vec::is_empty) {
                    errs.push(FieldError::required(
                        at,
                        "must have at least one node selector term",
                    ));
                }
                for (i, term) in terms.into_iter().flatten().enumerate() {
                    errs.extend(super::pod_validation::node_selector_term(
                        term,
                        &format!("{at}[{i}]"),
                        allow_bad_values,
                    ));
                }
            }
        }
    }
    let mut count = 0;
    for (name, reported, required) in PV_SOURCES {
        let Some(s) = set(spec, name) else { continue };
        // A flexVolume is counted but never refused as a second source (upstream's quirk).
        if count > 0 && name != "flexVolume" {
            errs.push(FieldError::forbidden(
                format!("spec.{reported}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        let pv_name = obj.pointer("/metadata/name").and_then(Value::as_str);
        let at = format!("spec.{name}");
        errs.extend(source_errors(name, s, &at, required, pv_name.unwrap_or("")));
        if name == "local" && !affinity {
            errs.push(FieldError::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if count == 0 {
        errs.push(FieldError::required("spec", "must specify a volume type"));
    }
    let root = set(spec, "hostPath").is_some_and(|h| {
        text(h, "path").trim_end_matches('/').is_empty() && !text(h, "path").is_empty()
    });
    if root && text(spec, "persistentVolumeReclaimPolicy") == "Recycle" {
        errs.push(FieldError::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    let class = text(spec, "storageClassName");
    if !class.is_empty() {
        errs.extend(invalid_each(
            "spec.storageClassName",
            class,
            is_dns1123_subdomain(class),
        ));
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !["Block", "Filesystem"].contains(&mode)
    {
        errs.push(FieldError::not_supported(
            "spec.volumeMode",
            mode,
            &["Block", "Filesystem"],
        ));
    }
    // pkg/volume/validation: mount options only for sources that take them.
    if !MOUNT_OPTION_SOURCES.iter().any(|s| set(spec, s).is_some()) {
        const ANNOTATION: &str = "volume.beta.kubernetes.io/mount-options";
        if obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION))
            .is_some()
        {
            errs.push(FieldError::forbidden(
                format!("metadata.annotations.{ANNOTATION}"),
                "may not specify mount options for this volume type",
            ));
        }
        if spec
            .get("mountOptions")
            .and_then(Value::as_array)
            .is_some_and(|m| !m.is_empty())
        {
            errs.push(FieldError::forbidden(
                "spec.mountOptions",
                "may not specify mount options for this volume type",
            ));
        }
    }
    errs
}

/// The fields of a PV spec that make up its PersistentVolumeSource.
fn pv_source(spec: &Value) -> Vec<(&'static str, Value)> {
    PV_SOURCES
        .iter()
        .filter_map(|(name, _, _)| set(spec, name).map(|s| (*name, s.clone())))
        .collect()
}

/// ValidatePersistentVolumeUpdate: the source is fixed after create (a CSI volume may gain a
/// controllerExpandSecretRef) and so is the volume mode. Upstream appends a `cmp.Diff` of the
/// two sources to the message; k1s gives the message alone.
pub fn validate_pv_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (new_spec, old_spec) = (&new["spec"], &old["spec"]);
    let old_terms = old_spec.pointer("/nodeAffinity/required/nodeSelectorTerms");
    let allow_bad_values = super::pod_validation::terms_have_invalid_label_values(
        old_terms.and_then(Value::as_array).into_iter().flatten(),
    );
    let mut errs = validate_pv_with(new, allow_bad_values);
    let mut new_source = pv_source(new_spec);
    let old_source = pv_source(old_spec);
    let old_csi_lacks_ref =
        set(old_spec, "csi").is_some_and(|c| set(c, "controllerExpandSecretRef").is_none());
    if old_csi_lacks_ref {
        for (name, s) in &mut new_source {
            if *name == "csi"
                && let Some(o) = s.as_object_mut()
            {
                o.remove("controllerExpandSecretRef");
            }
        }
    }
    if new_source != old_source {
        errs.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    let mode = |s: &Value| s.get("volumeMode").cloned().unwrap_or(Value::Null);
    if mode(new_spec) != mode(old_spec) {
        errs.push(FieldError::invalid(
            "volumeMode",
            mode(new_spec),
            "field is immutable",
        ));
    }
    // A node affinity, once set, is immutable in 1.33 (MutablePVNodeAffinity came in 1.34);
    // upstream prints the new value with Go's `%#v`, a pointer's address in it.
    let affinity = |s: &Value| set(s, "nodeAffinity").cloned();
    if let Some(old_affinity) = affinity(old_spec)
        && affinity(new_spec) != Some(old_affinity)
    {
        let shown = match affinity(new_spec) {
            None => "null".to_string(),
            Some(a) if set(&a, "required").is_none() => {
                "core.VolumeNodeAffinity{Required:(*core.NodeSelector)(nil)}".into()
            }
            Some(_) => {
                "core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}".into()
            }
        };
        errs.push(FieldError::new(
            FieldErrorType::Invalid,
            "nodeAffinity",
            BadValue::Raw(shown),
            "field is immutable",
        ));
    }
    // VolumeAttributesClass is off in 1.33: a stored class name may not change.
    if set(new_spec, "volumeAttributesClassName") != set(old_spec, "volumeAttributesClassName") {
        errs.push(FieldError::forbidden(
            "spec.volumeAttributesClassName",
            "update is forbidden when the VolumeAttributesClass feature gate is disabled",
        ));
    }
    errs
}

/// The label-selector rule of ValidatePersistentVolumeClaimSpec, for a claim spec at `path`.
pub fn pvc_selector_errors(spec: &Value, path: &str) -> Vec<FieldError> {
    set(spec, "selector").map_or_else(Vec::new, |sel| {
        k1s_apimachinery::validation::validate_label_selector(sel, &format!("{path}.selector"))
    })
}

/// The data-source rules of ValidatePersistentVolumeClaimSpec (validateDataSource,
/// validateDataSourceRef, and the two agreeing), for a claim spec at `path`.
pub fn pvc_data_source_errors(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let source = set(spec, "dataSource");
    let source_ref = set(spec, "dataSourceRef");
    for (key, v) in [("dataSource", source), ("dataSourceRef", source_ref)] {
        let Some(v) = v else { continue };
        let at = format!("{path}.{key}");
        if text(v, "name").is_empty() {
            errs.push(FieldError::required(format!("{at}.name"), ""));
        }
        let kind = text(v, "kind");
        if kind.is_empty() {
            errs.push(FieldError::required(format!("{at}.kind"), ""));
        }
        let group = text(v, "apiGroup");
        if group.is_empty() && kind != "PersistentVolumeClaim" {
            errs.push(FieldError::invalid(
                &at,
                kind,
                "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
            ));
        }
        if !group.is_empty() {
            errs.extend(invalid_each(
                &format!("{at}.apiGroup"),
                group,
                is_dns1123_subdomain(group),
            ));
        }
    }
    if let (Some(s), Some(r)) = (source, source_ref)
        && text(r, "namespace").is_empty()
        && (s.get("apiGroup") != r.get("apiGroup")
            || text(s, "kind") != text(r, "kind")
            || text(s, "name") != text(r, "name"))
    {
        // Upstream's value is the `*field.Path` of dataSource, printed as Go's struct dump.
        errs.push(FieldError::invalid_raw(
            path,
            "field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}",
            "must match dataSourceRef",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn printed(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn pv(spec: Value) -> Value {
        json!({"metadata": {"name": "v"}, "spec": spec})
    }

    #[test]
    fn a_valid_pv_passes() {
        let ok = pv(json!({
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
            "hostPath": {"path": "/data"}, "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
        }));
        assert!(
            validate_pv(&ok).is_empty(),
            "{:?}",
            printed(&validate_pv(&ok))
        );
    }

    #[test]
    fn pv_node_affinity_terms_and_updates() {
        let spec = |values: Value| {
            json!({
                "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
                "hostPath": {"path": "/data"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": values},
                ]}]}},
            })
        };
        let bad = pv(spec(json!(["a b"])));
        let got = printed(&validate_pv(&bad));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].starts_with(
            "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"a b\""
        ));
        // A stored invalid value may stay, but the affinity may not change.
        assert!(validate_pv_update(&bad, &bad).is_empty());
        let changed = pv(spec(json!(["b"])));
        assert_eq!(
            printed(&validate_pv_update(&changed, &bad)),
            [
                "nodeAffinity: Invalid value: core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}: field is immutable"
            ]
        );
        let mut classed = changed.clone();
        classed["spec"]["volumeAttributesClassName"] = json!("fast");
        assert_eq!(
            printed(&validate_pv_update(&changed, &classed)),
            [
                "spec.volumeAttributesClassName: Forbidden: update is forbidden when the VolumeAttributesClass feature gate is disabled"
            ]
        );
    }

    #[test]
    fn pv_iscsi_and_fc_sources() {
        let base = json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}});
        let with = |k: &str, v: Value| {
            let mut spec = base.clone();
            spec[k] = v;
            pv(spec)
        };
        let iscsi = with(
            "iscsi",
            json!({
                "targetPortal": "x".repeat(63), "iqn": "bad", "lun": 300,
                "chapAuthSession": true, "initiatorName": "nope",
            }),
        );
        let long = "x".repeat(63);
        assert_eq!(
            printed(&validate_pv(&iscsi)),
            [
                format!(
                    "spec.iscsi.targetportal: Invalid value: \"{long}\": Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."
                ),
                "spec.iscsi.iqn: Invalid value: \"bad\": must be valid format".into(),
                "spec.iscsi.lun: Invalid value: 300: must be between 0 and 255, inclusive".into(),
                "spec.iscsi.secretRef: Required value".into(),
                "spec.iscsi.initiatorname: Invalid value: \"nope\": must be valid format".into(),
            ]
        );
        let iscsi = with(
            "iscsi",
            json!({"targetPortal": "p", "iqn": "iqn.2001-04.com.example:storage", "secretRef": {}}),
        );
        assert_eq!(
            printed(&validate_pv(&iscsi)),
            ["spec.iscsi.secretRef.name: Required value"]
        );
        let fc = with("fc", json!({"targetWWNs": ["w"]}));
        assert_eq!(
            printed(&validate_pv(&fc)),
            ["spec.fc.lun: Required value: lun is required if targetWWNs is specified"]
        );
    }

    #[test]
    fn pv_spec_rules() {
        let bad = pv(json!({
            "accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"],
            "capacity": {"storage": "0", "cpu": "1"},
            "persistentVolumeReclaimPolicy": "Keep",
            "nfs": {"server": "", "path": "data"},
            "hostPath": {"path": "/x"},
            "mountOptions": ["ro"],
            "volumeMode": "Raw",
        }));
        assert_eq!(
            printed(&validate_pv(&bad)),
            [
                "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
                "spec.capacity: Unsupported value: {\"cpu\":\"1\",\"storage\":\"0\"}: supported values: \"storage\"",
                "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero",
                "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
                "spec.nfs: Forbidden: may not specify more than 1 volume type",
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
            ]
        );
        let none = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1"},
            "local": {"path": "/a/../b"}, "mountOptions": ["ro"]}),
        );
        assert_eq!(
            printed(&validate_pv(&none)),
            [
                "spec.local.path: Invalid value: \"/a/../b\": must not contain '..'",
                "spec.nodeAffinity: Required value: Local volume requires node affinity",
                "spec.mountOptions: Forbidden: may not specify mount options for this volume type",
            ]
        );
        let empty = pv(json!({}));
        assert_eq!(
            printed(&validate_pv(&empty)),
            [
                "spec.accessModes: Required value",
                "spec.capacity: Required value",
                "spec.capacity: Unsupported value: null: supported values: \"storage\"",
                "spec: Required value: must specify a volume type",
            ]
        );
        let csi = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1"},
            "csi": {"driver": "Bad_Driver", "nodePublishSecretRef": {"name": "s"}}}),
        );
        let got = printed(&validate_pv(&csi));
        assert!(
            got[0].starts_with("spec.csi.volumeHandle: Required value"),
            "{got:?}"
        );
        assert!(
            got[1].starts_with("spec.csi.driver: Invalid value: \"Bad_Driver\""),
            "{got:?}"
        );
        assert_eq!(
            got[2],
            "spec.csi.nodePublishSecretRef.namespace: Required value"
        );
    }

    #[test]
    fn pv_source_and_mode_are_immutable() {
        let old = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1"},
            "csi": {"driver": "d.example.com", "volumeHandle": "h"}, "volumeMode": "Filesystem"}),
        );
        let mut new = old.clone();
        new["spec"]["csi"]["controllerExpandSecretRef"] = json!({"name": "s", "namespace": "n"});
        assert!(validate_pv_update(&new, &old).is_empty());
        new["spec"]["csi"]["volumeHandle"] = json!("other");
        new["spec"]["volumeMode"] = json!("Block");
        assert_eq!(
            printed(&validate_pv_update(&new, &old)),
            [
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
                "volumeMode: Invalid value: \"Block\": field is immutable",
            ]
        );
    }

    #[test]
    fn pvc_selector_and_data_sources() {
        let spec = json!({
            "selector": {"matchLabels": {"a b": "c"}},
            "dataSource": {"kind": "VolumeSnapshot", "name": ""},
            "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "src", "apiGroup": "Bad_Group"},
        });
        let mut got = printed(&pvc_selector_errors(&spec, "spec"));
        got.extend(printed(&pvc_data_source_errors(&spec, "spec")));
        assert!(
            got[0].starts_with("spec.selector.matchLabels: Invalid value: \"a b\""),
            "{got:?}"
        );
        assert_eq!(
            &got[1..],
            [
                "spec.dataSource.name: Required value",
                "spec.dataSource: Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                "spec.dataSourceRef.apiGroup: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec: Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}: must match dataSourceRef",
            ]
        );
    }
}
