//! Upstream's create- and update-time warnings (sent as `Warning:` headers, which kubectl
//! prints): names that are not DNS labels for kinds whose names reach pod host names, and the
//! pod-spec warnings of `pkg/api/pod/warnings.go` (deprecated node labels, annotations and
//! volume plugins, duplicate pull secrets and environment variables).

use std::collections::HashSet;

use k1s_apimachinery::validation::name_is_dns_label;
use serde_json::Value;

/// Node labels that were renamed, and upstream's message for each.
const DEPRECATED_NODE_LABELS: [(&str, &str); 5] = [
    (
        "beta.kubernetes.io/arch",
        r#"deprecated since v1.14; use "kubernetes.io/arch" instead"#,
    ),
    (
        "beta.kubernetes.io/os",
        r#"deprecated since v1.14; use "kubernetes.io/os" instead"#,
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        r#"deprecated since v1.17; use "topology.kubernetes.io/region" instead"#,
    ),
    (
        "failure-domain.beta.kubernetes.io/zone",
        r#"deprecated since v1.17; use "topology.kubernetes.io/zone" instead"#,
    ),
    (
        "beta.kubernetes.io/instance-type",
        r#"deprecated since v1.17; use "node.kubernetes.io/instance-type" instead"#,
    ),
];

const DEPRECATED_ANNOTATIONS: [(&str, &str); 3] = [
    (
        "scheduler.alpha.kubernetes.io/critical-pod",
        r#"non-functional in v1.16+; use the "priorityClassName" field instead"#,
    ),
    (
        "security.alpha.kubernetes.io/sysctls",
        r#"non-functional in v1.11+; use the "sysctls" field instead"#,
    ),
    (
        "security.alpha.kubernetes.io/unsafe-sysctls",
        r#"non-functional in v1.11+; use the "sysctls" field instead"#,
    ),
];

const DEPRECATED_VOLUMES: [(&str, &str); 9] = [
    (
        "photonPersistentDisk",
        "deprecated in v1.11, non-functional in v1.16+",
    ),
    ("gitRepo", "deprecated in v1.11"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageos", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
];

/// The warning for a name that is not a DNS label; `what` says where the name ends up.
pub fn dns_label_name(obj: &Value, what: &str) -> Option<String> {
    let name = obj.pointer("/metadata/name").and_then(Value::as_str)?;
    let msgs = name_is_dns_label(name, false);
    (!msgs.is_empty()).then(|| {
        format!(
            "metadata.name: this is used in {what}, which can result in surprising behavior; \
             a DNS label is recommended: [{}]",
            msgs.join(" ")
        )
    })
}

/// Upstream's WarningsOnUpdate of the kinds with a pod template: the template's warnings when
/// the part at `changed` changed (what moves the generation: the spec, or a DaemonSet's
/// template), none otherwise. Pods themselves warn on create only.
pub fn template_on_update(
    new: &Value,
    old: &Value,
    changed: &str,
    template: &str,
    prefix: &str,
) -> Vec<String> {
    if new.pointer(changed) == old.pointer(changed) {
        return Vec::new();
    }
    new.pointer(template)
        .map(|t| pod(t, prefix))
        .unwrap_or_default()
}

/// Upstream's warningsForPodSpecAndMeta for the pod (template) at `prefix` ("" for a Pod,
/// "spec.template." for a workload), whose `metadata` and `spec` are in `pod`.
pub fn pod(pod: &Value, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let spec = &pod["spec"];
    let selector = spec.get("nodeSelector").and_then(Value::as_object);
    for key in selector.into_iter().flat_map(|m| m.keys()) {
        if let Some((_, msg)) = DEPRECATED_NODE_LABELS.iter().find(|(l, _)| l == key) {
            out.push(format!("{prefix}spec.nodeSelector[{key}]: {msg}"));
        }
    }
    let annotations = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    for (key, msg) in DEPRECATED_ANNOTATIONS {
        if annotations.is_some_and(|a| a.contains_key(key)) {
            out.push(format!("{prefix}metadata.annotations[{key}]: {msg}"));
        }
    }
    let volumes = spec.get("volumes").and_then(Value::as_array);
    for (i, v) in volumes.into_iter().flatten().enumerate() {
        for (source, msg) in DEPRECATED_VOLUMES {
            if v.get(source).is_some() {
                out.push(format!("{prefix}spec.volumes[{i}].{source}: {msg}"));
            }
        }
    }
    let secrets = spec.get("imagePullSecrets").and_then(Value::as_array);
    let mut seen = HashSet::new();
    for (i, s) in secrets.into_iter().flatten().enumerate() {
        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
        let path = format!("{prefix}spec.imagePullSecrets[{i}].name");
        if name.is_empty() {
            out.push(format!("{path}: invalid empty name \"\""));
        } else if !seen.insert(name) {
            out.push(format!("{path}: duplicate name \"{name}\""));
        }
    }
    for list in ["initContainers", "containers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        for (c_index, c) in containers.into_iter().flatten().enumerate() {
            let env = c.get("env").and_then(Value::as_array);
            let mut names = HashSet::new();
            for (i, e) in env.into_iter().flatten().enumerate() {
                let name = e.get("name").and_then(Value::as_str).unwrap_or_default();
                if names.insert(name) {
                    continue;
                }
                // A redefinition that does not build on the previous value hides it.
                let reference = format!("$({name})");
                let value = e.get("value").and_then(Value::as_str).unwrap_or_default();
                if e.get("valueFrom").is_some() || value == reference || !value.contains(&reference)
                {
                    out.push(format!(
                        "{prefix}spec.{list}[{c_index}].env[{i}]: hides previous definition of \
                         \"{name}\", which may be dropped when using apply"
                    ));
                }
            }
        }
    }
    out
}
