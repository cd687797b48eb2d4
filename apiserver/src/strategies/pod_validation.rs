//! Upstream's ValidatePodSpec (`pkg/apis/core/validation`): volumes, containers and init
//! containers (names, images, ports, env, mounts, probes, lifecycle, pull and termination
//! message policies), and the pod-level fields (restart and DNS policies, node selector,
//! tolerations, names of other objects, deadlines), with upstream's field paths and messages.
//! Security contexts and the `spec.os` rules are checked in `security_context.rs`. Also the
//! create-time merge of pod affinity terms' matchLabelKeys/mismatchLabelKeys into their selectors.

use std::collections::HashSet;

use k1s_apimachinery::FieldError;
use k1s_apimachinery::ip::legacy_ip_errors;
use k1s_apimachinery::meta::validate_labels;
use k1s_apimachinery::status::{BadValue, FieldErrorType};
use k1s_apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    is_valid_port_name, is_valid_port_num,
};
use serde_json::Value;

use super::apps::validate_resource_requirements;
use super::networking::go_string_slice;
use super::pod_spec::VOLUME_SOURCES;

const FILE_MODE_ERROR: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const NON_NEGATIVE: &str = "must be greater than or equal to 0";

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// Each message of `check(value)` as an Invalid error at `field`.
fn invalid_each(field: &str, value: &str, msgs: Vec<String>) -> Vec<FieldError> {
    msgs.into_iter()
        .map(|m| FieldError::invalid(field, value, m))
        .collect()
}

/// Upstream's NotSupported-or-Required check of an enum field.
fn one_of(field: &str, value: Option<&str>, allowed: &[&str], errs: &mut Vec<FieldError>) {
    match value {
        None | Some("") => errs.push(FieldError::required(field, "")),
        Some(v) if !allowed.contains(&v) => errs.push(FieldError::not_supported(field, v, allowed)),
        Some(_) => {}
    }
}

/// Upstream's PodValidationOptions as far as k1s's checks depend on them: what an update may
/// keep because the stored spec already had it (GetValidationOptionsFromPodSpecAndMeta, with
/// 1.33's gates). The default is a create: nothing relaxed.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct PodOptions {
    /// AllowNamespacedSysctlsForHostNetAndHostIPC: net/IPC sysctls beside the host namespaces.
    pub host_namespace_sysctls: bool,
    /// Not AllowOnlyRecursiveSELinuxChangePolicy: `MountOption` (SELinuxMount is off in 1.33).
    pub mount_option_se_linux: bool,
    /// AllowNonLocalProjectedTokenPath.
    pub non_local_token_path: bool,
    /// AllowInvalidLabelValueInSelector: pod (anti-)affinity selectors' requirement values.
    pub invalid_affinity_selector_values: bool,
    /// AllowInvalidTopologySpreadConstraintLabelSelector: the same for spread constraints.
    pub invalid_spread_selector_values: bool,
    /// AllowInvalidPodDeletionCost.
    pub invalid_deletion_cost: bool,
    /// AllowIndivisibleHugePagesValues.
    pub indivisible_huge_pages: bool,
    /// AllowInvalidLabelValueInRequiredNodeAffinity: requirement values of required node
    /// affinity terms.
    pub invalid_required_node_affinity_values: bool,
}

impl PodOptions {
    /// The options of an update whose stored pod (or template) is `old`, with `metadata` and
    /// `spec`; `None` for a create.
    pub fn for_update(old: Option<&Value>) -> Self {
        let Some(old) = old else {
            return Self::default();
        };
        let spec = old.get("spec").unwrap_or(&Value::Null);
        let affinity = spec.get("affinity").unwrap_or(&Value::Null);
        let affinity_terms = ["podAffinity", "podAntiAffinity"]
            .into_iter()
            .flat_map(|k| {
                let a = affinity.get(k).unwrap_or(&Value::Null);
                let required = items(a, "requiredDuringSchedulingIgnoredDuringExecution").iter();
                let preferred = items(a, "preferredDuringSchedulingIgnoredDuringExecution")
                    .iter()
                    .map(|t| t.get("podAffinityTerm").unwrap_or(&Value::Null));
                required.chain(preferred)
            });
        let bad_selector = |sel: Option<&Value>| !selector_errors(sel, "", false).is_empty();
        let tokens = items(spec, "volumes")
            .iter()
            .filter_map(|v| set(v, "projected"))
            .flat_map(|p| items(p, "sources"))
            .filter_map(|s| set(s, "serviceAccountToken"));
        Self {
            host_namespace_sysctls: super::security_context::has_host_namespace_sysctl(spec),
            mount_option_se_linux: spec
                .pointer("/securityContext/seLinuxChangePolicy")
                .and_then(Value::as_str)
                == Some("MountOption"),
            non_local_token_path: tokens
                .map(|t| text(t, "path"))
                .any(|p| !local_non_reserved_path_errors(p, "").is_empty()),
            invalid_affinity_selector_values: affinity_terms.into_iter().any(|t| {
                bad_selector(t.get("labelSelector")) || bad_selector(t.get("namespaceSelector"))
            }),
            invalid_spread_selector_values: items(spec, "topologySpreadConstraints")
                .iter()
                .any(|c| bad_selector(c.get("labelSelector"))),
            invalid_deletion_cost: had_invalid_deletion_cost(old),
            invalid_required_node_affinity_values: terms_have_invalid_label_values(
                required_node_terms(affinity),
            ),
            indivisible_huge_pages: ["initContainers", "containers", "ephemeralContainers"]
                .into_iter()
                .flat_map(|l| items(spec, l))
                .any(|c| super::apps::has_indivisible_huge_pages(&c["resources"])),
        }
    }
}

/// Upstream's HasInvalidLabelValueInNodeSelectorTerms: a requirement value that is not a
/// label value (what a stored object may keep on update).
pub(super) fn terms_have_invalid_label_values<'a>(
    mut terms: impl Iterator<Item = &'a Value>,
) -> bool {
    terms.any(|t| {
        items(t, "matchExpressions")
            .iter()
            .flat_map(|r| items(r, "values"))
            .any(|v| !is_valid_label_value(v.as_str().unwrap_or_default()).is_empty())
    })
}

/// The terms of a required node affinity.
fn required_node_terms(affinity: &Value) -> impl Iterator<Item = &Value> {
    let required = affinity.pointer("/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution");
    required
        .map_or(&[][..], |r| items(r, "nodeSelectorTerms"))
        .iter()
}

/// Upstream's ValidatePodSpec at `path` (`spec`, or `spec.template.spec` in a template), as on
/// create.
pub fn validate_pod_spec(spec: Option<&Value>, path: &str) -> Vec<FieldError> {
    validate_pod_spec_with(spec, path, &PodOptions::default())
}

/// ValidatePodSpec of an update: `old` is the stored pod or template (with its `metadata` and
/// `spec`), whose own violations the new spec may keep. (Pods: called from core.rs's update.)
#[cfg_attr(not(test), allow(dead_code))]
pub fn validate_pod_spec_on_update(
    spec: Option<&Value>,
    old: Option<&Value>,
    path: &str,
) -> Vec<FieldError> {
    validate_pod_spec_with(spec, path, &PodOptions::for_update(old))
}

/// Upstream's ValidatePodSpec with the options `opts`.
pub fn validate_pod_spec_with(
    spec: Option<&Value>,
    path: &str,
    opts: &PodOptions,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(spec) = spec else {
        errs.push(FieldError::required(path, ""));
        return errs;
    };
    // A Pod itself, rather than a template inside another kind.
    let is_pod = path == "spec";
    if set(spec, "terminationGracePeriodSeconds").is_none() {
        errs.push(FieldError::required(
            format!("{path}.terminationGracePeriodSeconds"),
            "",
        ));
    }
    let volumes = validate_volumes(
        items(spec, "volumes"),
        &format!("{path}.volumes"),
        opts,
        &mut errs,
    );
    let containers = items(spec, "containers");
    let init = items(spec, "initContainers");
    let ctx = Context {
        volumes: &volumes,
        opts,
    };
    // Regular containers.
    let field = format!("{path}.containers");
    if containers.is_empty() {
        errs.push(FieldError::required(&field, ""));
    }
    let mut names = HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        let at = format!("{field}[{i}]");
        errs.extend(ctx.validate_container_common(c, &at));
        let name = text(c, "name");
        if !names.insert(name) {
            errs.push(FieldError::duplicate(format!("{at}.name"), name));
        }
        if let Some(l) = set(c, "lifecycle") {
            errs.extend(validate_lifecycle(l, &format!("{at}.lifecycle")));
        }
        errs.extend(validate_probes(c, &at));
        if set(c, "restartPolicy").is_some() {
            errs.push(FieldError::forbidden(
                format!("{at}.restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    errs.extend(host_port_conflicts(containers.iter().enumerate(), &field));
    // Init containers: names unique among all containers, probes only for sidecars.
    let field = format!("{path}.initContainers");
    for (i, c) in init.iter().enumerate() {
        let at = format!("{field}[{i}]");
        errs.extend(ctx.validate_container_common(c, &at));
        let restart = set(c, "restartPolicy").map(|r| r.as_str().unwrap_or_default());
        if let Some(r) = restart
            && r != "Always"
        {
            errs.push(FieldError::not_supported(
                format!("{at}.restartPolicy"),
                r,
                &["Always"],
            ));
        }
        let name = text(c, "name");
        if !names.insert(name) {
            errs.push(FieldError::duplicate(format!("{at}.name"), name));
        }
        // Upstream checks each init container alone, so its path always says `[0]`.
        errs.extend(host_port_conflicts(std::iter::once((0, c)), &field));
        if restart == Some("Always") {
            if let Some(l) = set(c, "lifecycle") {
                errs.extend(validate_lifecycle(l, &format!("{at}.lifecycle")));
            }
            errs.extend(validate_probes(c, &at));
        } else {
            for f in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if set(c, f).is_some() {
                    errs.push(FieldError::forbidden(
                        format!("{at}.{f}"),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    // With the host's network, a host port is the container port (in a template, unset is
    // allowed: the Pod's defaults fill it).
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for (i, c) in containers.iter().enumerate() {
            for (j, p) in items(c, "ports").iter().enumerate() {
                let hp = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                let cp = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
                if (is_pod || hp != 0) && hp != cp {
                    errs.push(FieldError::invalid(
                        format!("{path}.containers[{i}].ports[{j}].hostPort"),
                        hp,
                        "must match `containerPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
    one_of(
        &format!("{path}.restartPolicy"),
        spec.get("restartPolicy").and_then(Value::as_str),
        &["Always", "OnFailure", "Never"],
        &mut errs,
    );
    let dns_policy = spec.get("dnsPolicy").and_then(Value::as_str);
    one_of(
        &format!("{path}.dnsPolicy"),
        dns_policy,
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &mut errs,
    );
    if let Some(selector) = spec.get("nodeSelector").and_then(Value::as_object) {
        let pairs: Vec<(String, String)> = selector
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        errs.extend(validate_labels(&pairs, &format!("{path}.nodeSelector")));
    }
    if let Some(affinity) = set(spec, "affinity") {
        errs.extend(validate_affinity(
            affinity,
            &format!("{path}.affinity"),
            opts,
        ));
    }
    errs.extend(validate_dns_config(spec, dns_policy, path));
    for (i, gate) in items(spec, "readinessGates").iter().enumerate() {
        let field = format!("{path}.readinessGates[{i}].conditionType");
        let ty = text(gate, "conditionType");
        errs.extend(invalid_each(&field, ty, is_qualified_name(ty)));
    }
    let mut gates = HashSet::new();
    for (i, gate) in items(spec, "schedulingGates").iter().enumerate() {
        let field = format!("{path}.schedulingGates[{i}]");
        let name = text(gate, "name");
        errs.extend(invalid_each(&field, name, is_qualified_name(name)));
        if !gates.insert(name) {
            errs.push(FieldError::duplicate(field, name));
        }
    }
    errs.extend(validate_topology_spread(
        items(spec, "topologySpreadConstraints"),
        &format!("{path}.topologySpreadConstraints"),
        opts.invalid_spread_selector_values,
    ));
    // Names of other objects: a ServiceAccount, a Node, a PriorityClass (DNS subdomains).
    for key in ["serviceAccountName", "nodeName", "priorityClassName"] {
        let name = text(spec, key);
        if !name.is_empty() {
            let field = format!("{path}.{key}");
            errs.extend(invalid_each(&field, name, is_dns1123_subdomain(name)));
        }
    }
    if let Some(deadline) = set(spec, "activeDeadlineSeconds") {
        let d = deadline.as_i64().unwrap_or(0);
        if !(1..=i64::from(i32::MAX)).contains(&d) {
            errs.push(FieldError::invalid(
                format!("{path}.activeDeadlineSeconds"),
                d,
                "must be between 1 and 2147483647, inclusive",
            ));
        }
    }
    for key in ["hostname", "subdomain"] {
        let name = text(spec, key);
        if !name.is_empty() {
            let field = format!("{path}.{key}");
            errs.extend(invalid_each(&field, name, is_dns1123_label(name)));
        }
    }
    errs.extend(validate_tolerations(
        items(spec, "tolerations"),
        &format!("{path}.tolerations"),
    ));
    for (i, alias) in items(spec, "hostAliases").iter().enumerate() {
        let at = format!("{path}.hostAliases[{i}]");
        let ip = text(alias, "ip");
        errs.extend(invalid_each(&format!("{at}.ip"), ip, legacy_ip_errors(ip)));
        for (j, host) in items(alias, "hostnames").iter().enumerate() {
            let host = host.as_str().unwrap_or_default();
            let field = format!("{at}.hostnames[{j}]");
            errs.extend(invalid_each(&field, host, is_dns1123_subdomain(host)));
        }
    }
    if let Some(runtime) = set(spec, "runtimeClassName") {
        let name = runtime.as_str().unwrap_or_default();
        let field = format!("{path}.runtimeClassName");
        errs.extend(invalid_each(&field, name, is_dns1123_subdomain(name)));
    }
    if let Some(policy) = set(spec, "preemptionPolicy") {
        one_of(
            &format!("{path}.preemptionPolicy"),
            policy.as_str(),
            &["PreemptLowerPriority", "Never"],
            &mut errs,
        );
    }
    super::security_context::validate(spec, path, opts, &mut errs);
    if is_pod {
        // Pods only (templates keep their looser historical rules).
        for list in ["containers", "initContainers"] {
            for (i, c) in items(spec, list).iter().enumerate() {
                let image = text(c, "image");
                if image.len() != image.trim().len() {
                    errs.push(FieldError::invalid(
                        format!("{path}.{list}[{i}].image"),
                        image,
                        "must not have leading or trailing whitespace",
                    ));
                }
            }
        }
    }
    errs
}

/// What container validation needs from the pod: the names of its valid volumes and whether
/// each is a PVC-backed (block-capable) one.
struct Context<'a> {
    volumes: &'a [(String, bool)],
    opts: &'a PodOptions,
}

impl Context<'_> {
    /// Upstream's validateContainerCommon.
    fn validate_container_common(&self, c: &Value, at: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let name = text(c, "name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{at}.name"), ""));
        } else {
            errs.extend(invalid_each(
                &format!("{at}.name"),
                name,
                is_dns1123_label(name),
            ));
        }
        let image = text(c, "image");
        if image.is_empty() {
            errs.push(FieldError::required(format!("{at}.image"), ""));
        }
        one_of(
            &format!("{at}.terminationMessagePolicy"),
            c.get("terminationMessagePolicy").and_then(Value::as_str),
            &["File", "FallbackToLogsOnError"],
            &mut errs,
        );
        errs.extend(validate_container_ports(
            items(c, "ports"),
            &format!("{at}.ports"),
        ));
        errs.extend(validate_env(items(c, "env"), &format!("{at}.env")));
        errs.extend(validate_env_from(
            items(c, "envFrom"),
            &format!("{at}.envFrom"),
        ));
        errs.extend(self.validate_volume_mounts(c, at));
        errs.extend(self.validate_volume_devices(c, at));
        // The pull policy is defaulted from the image; without one there is nothing to add.
        if !image.is_empty() {
            one_of(
                &format!("{at}.imagePullPolicy"),
                c.get("imagePullPolicy").and_then(Value::as_str),
                &["Always", "IfNotPresent", "Never"],
                &mut errs,
            );
        }
        if let Some(r) = c.get("resources") {
            errs.extend(validate_resource_requirements(
                r,
                &format!("{at}.resources"),
                self.opts.indivisible_huge_pages,
            ));
        }
        errs
    }

    fn volume(&self, name: &str) -> Option<bool> {
        self.volumes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, pvc)| *pvc)
    }

    /// Upstream's ValidateVolumeMounts.
    fn validate_volume_mounts(&self, c: &Value, at: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let devices = items(c, "volumeDevices");
        let mut paths = HashSet::new();
        for (i, m) in items(c, "volumeMounts").iter().enumerate() {
            let at = format!("{at}.volumeMounts[{i}]");
            let name = text(m, "name");
            if name.is_empty() {
                errs.push(FieldError::required(format!("{at}.name"), ""));
            }
            if self.volume(name).is_none() {
                errs.push(FieldError::not_found(format!("{at}.name"), name));
            }
            let mount_path = text(m, "mountPath");
            if mount_path.is_empty() {
                errs.push(FieldError::required(format!("{at}.mountPath"), ""));
            }
            if !paths.insert(mount_path) {
                errs.push(FieldError::invalid(
                    format!("{at}.mountPath"),
                    mount_path,
                    "must be unique",
                ));
            }
            errs.extend(overlap(
                devices,
                "volumeDevices",
                "devicePath",
                &at,
                name,
                ("mountPath", mount_path),
            ));
            // Upstream reports these two at the list's path, not the item's.
            let list = at.rsplit_once('[').map_or(at.as_str(), |(l, _)| l);
            let sub_path = text(m, "subPath");
            if !sub_path.is_empty() {
                errs.extend(local_descending_path_errors(
                    sub_path,
                    &format!("{list}.subPath"),
                ));
            }
            let expr = text(m, "subPathExpr");
            if !expr.is_empty() {
                if !sub_path.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{at}.subPathExpr"),
                        expr,
                        "subPathExpr and subPath are mutually exclusive",
                    ));
                }
                errs.extend(local_descending_path_errors(
                    expr,
                    &format!("{list}.subPathExpr"),
                ));
            }
            errs.extend(mount_propagation_errors(c, m, list));
        }
        errs
    }

    /// Upstream's ValidateVolumeDevices (block devices come from PVC-backed volumes).
    fn validate_volume_devices(&self, c: &Value, at: &str) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let mounts = items(c, "volumeMounts");
        let (mut names, mut paths) = (HashSet::new(), HashSet::new());
        for (i, d) in items(c, "volumeDevices").iter().enumerate() {
            let at = format!("{at}.volumeDevices[{i}]");
            let name = text(d, "name");
            let device_path = text(d, "devicePath");
            if name.is_empty() {
                errs.push(FieldError::required(format!("{at}.name"), ""));
            }
            if names.contains(name) {
                errs.push(FieldError::invalid(
                    format!("{at}.name"),
                    name,
                    "must be unique",
                ));
            }
            match self.volume(name) {
                Some(false) => errs.push(FieldError::invalid(
                    format!("{at}.name"),
                    name,
                    "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
                )),
                None => errs.push(FieldError::not_found(format!("{at}.name"), name)),
                Some(true) => {}
            }
            if device_path.is_empty() {
                errs.push(FieldError::required(format!("{at}.devicePath"), ""));
            }
            if paths.contains(device_path) {
                errs.push(FieldError::invalid(
                    format!("{at}.devicePath"),
                    device_path,
                    "must be unique",
                ));
            }
            if device_path.split('/').any(|p| p == "..") {
                errs.push(FieldError::invalid(
                    format!("{at}.devicePath"),
                    device_path,
                    "can not contain backsteps ('..')",
                ));
            } else {
                paths.insert(device_path);
            }
            errs.extend(overlap(
                mounts,
                "volumeMounts",
                "mountPath",
                &at,
                name,
                ("devicePath", device_path),
            ));
            if !name.is_empty() {
                names.insert(name);
            }
        }
        errs
    }
}

/// A volume mount and a volume device may not share a volume name or a path (upstream checks
/// it from both lists): errors for the item at `at` against the `other_list` entries.
fn overlap(
    others: &[Value],
    other_list: &str,
    other_path_key: &str,
    at: &str,
    name: &str,
    (path_key, path): (&str, &str),
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if others.iter().any(|o| text(o, "name") == name) {
        errs.push(FieldError::invalid(
            format!("{at}.name"),
            name,
            format!("must not already exist in {other_list}"),
        ));
    }
    if others.iter().any(|o| text(o, other_path_key) == path) {
        errs.push(FieldError::invalid(
            format!("{at}.{path_key}"),
            path,
            format!("must not already exist as a path in {other_list}"),
        ));
    }
    errs
}

/// Upstream's ValidateVolumes: each volume named (a DNS-1123 label, unique) with exactly one
/// source. Returns the valid volumes' names and whether each is PVC-backed.
fn validate_volumes(
    volumes: &[Value],
    path: &str,
    opts: &PodOptions,
    errs: &mut Vec<FieldError>,
) -> Vec<(String, bool)> {
    let mut valid: Vec<(String, bool)> = Vec::new();
    for (i, v) in volumes.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let mut el = validate_volume_source(v, &at, opts);
        let name = text(v, "name");
        if name.is_empty() {
            el.push(FieldError::required(format!("{at}.name"), ""));
        } else {
            el.extend(invalid_each(
                &format!("{at}.name"),
                name,
                is_dns1123_label(name),
            ));
        }
        if valid.iter().any(|(n, _)| n == name) {
            el.push(FieldError::duplicate(format!("{at}.name"), name));
        }
        if el.is_empty() {
            let pvc = set(v, "persistentVolumeClaim").is_some() || set(v, "ephemeral").is_some();
            valid.push((name.to_string(), pvc));
        } else {
            errs.extend(el);
        }
    }
    valid
}

/// Upstream's validateVolumeSource: exactly one source, each checked by its own rules. The
/// pod's name (a Pod, not a template) names the claims of ephemeral volumes.
fn validate_volume_source(v: &Value, at: &str, opts: &PodOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (first, mut others) = only_one(v, &VOLUME_SOURCES, at, "volume");
    // Upstream names two of these paths differently from the fields.
    for e in &mut others {
        if let Some(base) = e.field.strip_suffix(".downwardAPI") {
            e.field = format!("{base}.downwarAPI");
        } else if let Some(base) = e.field.strip_suffix(".cephfs") {
            e.field = format!("{base}.cephFS");
        }
    }
    let Some((source, s)) = first else {
        errs.push(FieldError::required(at, "must specify a volume type"));
        errs.extend(others);
        return errs;
    };
    let field = format!("{at}.{source}");
    let f = |child: &str| format!("{field}.{child}");
    let required = |child: &str, errs: &mut Vec<FieldError>| {
        if text(s, child).is_empty() {
            errs.push(FieldError::required(f(child), ""));
        }
    };
    match source {
        "hostPath" => {
            let p = text(s, "path");
            if p.is_empty() {
                errs.push(FieldError::required(f("path"), ""));
            } else {
                errs.extend(no_backsteps(p, &f("path")));
                const TYPES: [&str; 8] = [
                    "",
                    "BlockDevice",
                    "CharDevice",
                    "Directory",
                    "DirectoryOrCreate",
                    "File",
                    "FileOrCreate",
                    "Socket",
                ];
                if let Some(t) = s.get("type").and_then(Value::as_str)
                    && !TYPES.contains(&t)
                {
                    errs.push(FieldError::not_supported(f("type"), t, &TYPES));
                }
            }
        }
        "emptyDir" => {
            let limit = s.get("sizeLimit").map(quantity_text);
            if limit
                .and_then(|l| k1s_apimachinery::quantity::Quantity::parse(&l))
                .is_some_and(|q| q.is_negative())
            {
                errs.push(FieldError::forbidden(
                    f("sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                ));
            }
        }
        "gitRepo" => {
            required("repository", &mut errs);
            errs.extend(local_descending_path_errors(
                text(s, "directory"),
                &f("directory"),
            ));
        }
        "gcePersistentDisk" | "awsElasticBlockStore" => {
            // Upstream validates a GCE disk under `persistentDisk`.
            let (base, id) = if source == "gcePersistentDisk" {
                (format!("{at}.persistentDisk"), "pdName")
            } else {
                (field.clone(), "volumeID")
            };
            if text(s, id).is_empty() {
                errs.push(FieldError::required(format!("{base}.{id}"), ""));
            }
            let partition = s.get("partition").and_then(Value::as_i64).unwrap_or(0);
            if !(0..=255).contains(&partition) {
                errs.push(FieldError::invalid(
                    format!("{base}.partition"),
                    partition,
                    "must be between 1 and 255, inclusive",
                ));
            }
        }
        "secret" => {
            required("secretName", &mut errs);
            errs.extend(mode_and_items(s, &field));
        }
        "configMap" => {
            required("name", &mut errs);
            errs.extend(mode_and_items(s, &field));
        }
        "nfs" => {
            required("server", &mut errs);
            required("path", &mut errs);
            let p = text(s, "path");
            if !p.starts_with('/') {
                errs.push(FieldError::invalid(
                    f("path"),
                    p,
                    "must be an absolute path",
                ));
            }
        }
        "iscsi" => errs.extend(iscsi_errors(
            s,
            &field,
            IscsiOwner::Pod(at, text(v, "name")),
        )),
        "glusterfs" => {
            required("endpoints", &mut errs);
            required("path", &mut errs);
        }
        "flocker" => {
            let (name, uuid) = (text(s, "datasetName"), text(s, "datasetUUID"));
            if name.is_empty() && uuid.is_empty() {
                errs.push(FieldError::required(
                    &field,
                    "one of datasetName and datasetUUID is required",
                ));
            }
            if !name.is_empty() && !uuid.is_empty() {
                errs.push(FieldError::invalid(
                    &field,
                    "resource",
                    "datasetName and datasetUUID can not be specified simultaneously",
                ));
            }
            if name.contains('/') {
                errs.push(FieldError::invalid(
                    f("datasetName"),
                    name,
                    "must not contain '/'",
                ));
            }
        }
        "persistentVolumeClaim" => required("claimName", &mut errs),
        "rbd" => {
            if items(s, "monitors").is_empty() {
                errs.push(FieldError::required(f("monitors"), ""));
            }
            required("image", &mut errs);
        }
        "cinder" => {
            required("volumeID", &mut errs);
            if let Some(r) = set(s, "secretRef")
                && text(r, "name").is_empty()
            {
                errs.push(FieldError::required(f("secretRef.name"), ""));
            }
        }
        "cephfs" if items(s, "monitors").is_empty() => {
            errs.push(FieldError::required(f("monitors"), ""));
        }
        "quobyte" => errs.extend(quobyte_errors(s, &field)),
        "downwardAPI" => {
            errs.extend(default_mode(s, &field));
            for file in items(s, "items") {
                errs.extend(downward_api_file_errors(file, &field));
            }
        }
        "fc" => errs.extend(fc_errors(s, &field)),
        "flexVolume" => {
            required("driver", &mut errs);
            let options = s.get("options").and_then(Value::as_object);
            for key in options.into_iter().flat_map(|o| o.keys()) {
                let namespace = key.split_once('/').map_or(key.as_str(), |(ns, _)| ns);
                let normalized = format!(".{}", namespace.to_lowercase());
                if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
                    errs.push(FieldError::invalid(
                        format!("{field}.options[{key}]"),
                        key.as_str(),
                        "kubernetes.io and k8s.io namespaces are reserved",
                    ));
                }
            }
        }
        "azureFile" => {
            required("secretName", &mut errs);
            required("shareName", &mut errs);
        }
        "vsphereVolume" => required("volumePath", &mut errs),
        "photonPersistentDisk" => required("pdID", &mut errs),
        "portworxVolume" => required("volumeID", &mut errs),
        "azureDisk" => errs.extend(azure_disk_errors(s, &field)),
        "storageos" => {
            let name = text(s, "volumeName");
            if name.is_empty() {
                errs.push(FieldError::required(f("volumeName"), ""));
            } else {
                errs.extend(invalid_each(&f("volumeName"), name, is_dns1123_label(name)));
            }
            let ns = text(s, "volumeNamespace");
            if !ns.is_empty() {
                errs.extend(invalid_each(
                    &f("volumeNamespace"),
                    ns,
                    is_dns1123_label(ns),
                ));
            }
            if let Some(r) = set(s, "secretRef")
                && text(r, "name").is_empty()
            {
                errs.push(FieldError::required(f("secretRef.name"), ""));
            }
        }
        "projected" => {
            errs.extend(default_mode(s, &field));
            errs.extend(projection_errors(s, &field, opts));
        }
        "scaleIO" => {
            required("gateway", &mut errs);
            required("system", &mut errs);
            required("volumeName", &mut errs);
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
            if let Some(r) = set(s, "nodePublishSecretRef") {
                let name = text(r, "name");
                if name.is_empty() {
                    errs.push(FieldError::required(f("nodePublishSecretRef.name"), ""));
                } else {
                    // Upstream reports a bad secret name at `csi.name`.
                    errs.extend(invalid_each(&f("name"), name, is_dns1123_subdomain(name)));
                }
            }
        }
        "ephemeral" => match set(s, "volumeClaimTemplate") {
            None => errs.push(FieldError::required(f("volumeClaimTemplate"), "")),
            Some(t) => errs.extend(claim_template_errors(t, &f("volumeClaimTemplate"))),
        },
        _ => {}
    }
    errs.extend(others);
    errs
}

/// A quantity field as written (a string, or a bare number).
fn quantity_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// Upstream's validatePathNoBacksteps.
fn no_backsteps(p: &str, field: &str) -> Vec<FieldError> {
    if p.split('/').any(|x| x == "..") {
        vec![FieldError::invalid(field, p, "must not contain '..'")]
    } else {
        Vec::new()
    }
}

/// Upstream's ValidateLocalNonReservedPath: a descending path not starting with `..`.
fn local_non_reserved_path_errors(p: &str, field: &str) -> Vec<FieldError> {
    let mut errs = local_descending_path_errors(p, field);
    // Not reported again when the `..` step was.
    if p.starts_with("..") && !p.starts_with("../") {
        errs.push(FieldError::invalid(field, p, "must not start with '..'"));
    }
    errs
}

fn iscsi_name_ok(name: &str) -> bool {
    use std::sync::OnceLock;
    static FORMATS: OnceLock<[regex::Regex; 3]> = OnceLock::new();
    let [iqn, eui, naa] = FORMATS.get_or_init(|| {
        [
            regex::Regex::new(r"iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$"),
            regex::Regex::new(r"^eui.[[:alnum:]]{16}$"),
            regex::Regex::new(r"^naa.[[:alnum:]]{32}$"),
        ]
        .map(|r| r.expect("valid iSCSI name pattern"))
    });
    if name.starts_with("iqn") {
        iqn.is_match(name)
    } else if name.starts_with("eui") {
        eui.is_match(name)
    } else {
        naa.is_match(name)
    }
}

/// Whose iSCSI source is checked: a pod volume (its path and name) or a PersistentVolume
/// (its name), whose rules differ a little.
pub(super) enum IscsiOwner<'a> {
    Pod(&'a str, &'a str),
    Volume(&'a str),
}

/// Upstream's validateISCSIVolumeSource (and the name-length rule of validateVolumeSource) and
/// validateISCSIPersistentVolumeSource: the PV form checks the name length first, at
/// `targetportal`, says only "must be valid format" of an unknown prefix and requires a
/// secretRef's name.
pub(super) fn iscsi_errors(s: &Value, field: &str, owner: IscsiOwner) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let portal = text(s, "targetPortal");
    if portal.is_empty() {
        errs.push(FieldError::required(format!("{field}.targetPortal"), ""));
    }
    let initiator_set = s.get("initiatorName").and_then(Value::as_str).is_some();
    let pv = matches!(owner, IscsiOwner::Volume(_));
    if let IscsiOwner::Volume(name) = owner
        && initiator_set
        && name.len() + 1 + portal.len() > 64
    {
        errs.push(FieldError::invalid(
            format!("{field}.targetportal"),
            portal,
            ISCSI_NAME_TOO_LONG,
        ));
    }
    let unknown_prefix = if pv {
        "must be valid format"
    } else {
        "must be valid format starting with iqn, eui, or naa"
    };
    let known = |n: &str| ["iqn", "eui", "naa"].iter().any(|p| n.starts_with(p));
    let iqn = text(s, "iqn");
    if iqn.is_empty() {
        errs.push(FieldError::required(format!("{field}.iqn"), ""));
    } else if !known(iqn) {
        errs.push(FieldError::invalid(
            format!("{field}.iqn"),
            iqn,
            unknown_prefix,
        ));
    } else if !iscsi_name_ok(iqn) {
        errs.push(FieldError::invalid(
            format!("{field}.iqn"),
            iqn,
            "must be valid format",
        ));
    }
    let lun = s.get("lun").and_then(Value::as_i64).unwrap_or(0);
    if !(0..=255).contains(&lun) {
        errs.push(FieldError::invalid(
            format!("{field}.lun"),
            lun,
            "must be between 0 and 255, inclusive",
        ));
    }
    let chap = |k: &str| s.get(k) == Some(&Value::Bool(true));
    if (chap("chapAuthDiscovery") || chap("chapAuthSession")) && set(s, "secretRef").is_none() {
        errs.push(FieldError::required(format!("{field}.secretRef"), ""));
    }
    if pv
        && let Some(r) = set(s, "secretRef")
        && text(r, "name").is_empty()
    {
        errs.push(FieldError::required(format!("{field}.secretRef.name"), ""));
    }
    if let Some(initiator) = s.get("initiatorName").and_then(Value::as_str) {
        let at_name = format!("{field}.initiatorname");
        if !known(initiator) {
            errs.push(FieldError::invalid(&at_name, initiator, unknown_prefix));
        }
        if known(initiator) && !iscsi_name_ok(initiator) {
            errs.push(FieldError::invalid(
                &at_name,
                initiator,
                "must be valid format",
            ));
        }
        if let IscsiOwner::Pod(at, volume) = owner
            && volume.len() + 1 + portal.len() > 64
        {
            errs.push(FieldError::invalid(
                format!("{at}.name"),
                volume,
                ISCSI_NAME_TOO_LONG,
            ));
        }
    }
    errs
}

/// Upstream's validateQuobyteVolumeSource.
fn quobyte_errors(s: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    const PAIRS: &str = "must be a host:port pair or multiple pairs separated by commas";
    let registry = text(s, "registry");
    if registry.is_empty() {
        errs.push(FieldError::required(format!("{field}.registry"), PAIRS));
    } else if text(s, "tenant").len() >= 65 {
        errs.push(FieldError::required(
            format!("{field}.tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            if !is_host_port(pair) {
                errs.push(FieldError::invalid(
                    format!("{field}.registry"),
                    registry,
                    PAIRS,
                ));
            }
        }
    }
    if text(s, "volume").is_empty() {
        errs.push(FieldError::required(format!("{field}.volume"), ""));
    }
    errs
}

/// Whether Go's net.SplitHostPort accepts `pair`: `host:port` or `[v6]:port`, one colon
/// outside brackets.
fn is_host_port(pair: &str) -> bool {
    if let Some(rest) = pair.strip_prefix('[') {
        return rest.split_once(']').is_some_and(|(host, port)| {
            !host.contains('[') && port.starts_with(':') && !port[1..].contains(':')
        });
    }
    pair.matches(':').count() == 1 && !pair.contains('[') && !pair.contains(']')
}

const ISCSI_NAME_TOO_LONG: &str = "Total length of <volume name>:<iscsi.targetPortal> must be \
     under 64 characters if iscsi.initiatorName is specified.";

/// Upstream's validateFCVolumeSource (pod volumes and PersistentVolumes).
pub(super) fn fc_errors(s: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let wwns = items(s, "targetWWNs");
    let wwids = items(s, "wwids");
    if wwns.is_empty() && wwids.is_empty() {
        errs.push(FieldError::required(
            format!("{field}.targetWWNs"),
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if !wwns.is_empty() && !wwids.is_empty() {
        errs.push(FieldError::invalid_raw(
            format!("{field}.targetWWNs"),
            go_string_slice(wwns),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if !wwns.is_empty() {
        match s.get("lun").and_then(Value::as_i64) {
            None => errs.push(FieldError::required(
                format!("{field}.lun"),
                "lun is required if targetWWNs is specified",
            )),
            Some(lun) if !(0..=255).contains(&lun) => errs.push(FieldError::invalid(
                format!("{field}.lun"),
                lun,
                "must be between 0 and 255, inclusive",
            )),
            Some(_) => {}
        }
    }
    errs
}

/// Upstream's validateAzureDisk.
fn azure_disk_errors(s: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if text(s, "diskName").is_empty() {
        errs.push(FieldError::required(format!("{field}.diskName"), ""));
    }
    let uri = text(s, "diskURI");
    if uri.is_empty() {
        errs.push(FieldError::required(format!("{field}.diskURI"), ""));
    }
    const CACHING: [&str; 3] = ["None", "ReadOnly", "ReadWrite"];
    if let Some(mode) = s.get("cachingMode").and_then(Value::as_str)
        && !CACHING.contains(&mode)
    {
        errs.push(FieldError::not_supported(
            format!("{field}.cachingMode"),
            mode,
            &CACHING,
        ));
    }
    const KINDS: [&str; 3] = ["Dedicated", "Managed", "Shared"];
    let kind = s.get("kind").and_then(Value::as_str);
    if let Some(k) = kind
        && !KINDS.contains(&k)
    {
        errs.push(FieldError::not_supported(
            format!("{field}.kind"),
            k,
            &KINDS,
        ));
    }
    match kind {
        Some("Managed") if !uri.starts_with("/subscriptions/") => {
            errs.push(FieldError::not_supported(
                format!("{field}.diskURI"),
                uri,
                &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
            ));
        }
        Some(k) if k != "Managed" && !uri.starts_with("https://") => {
            errs.push(FieldError::not_supported(
                format!("{field}.diskURI"),
                uri,
                &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
            ));
        }
        _ => {}
    }
    errs
}

const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];
const RESOURCE_FIELD_PATHS: [&str; 6] = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// Upstream's fieldpath.SplitMaybeSubscriptedPath: `metadata.labels['key']`.
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (base, key) = inner.split_once("['")?;
    (!base.is_empty()).then_some((base, key))
}

/// Upstream's validateObjectFieldSelector (with ConvertDownwardAPIFieldLabel of pods).
fn field_selector_errors(fs: &Value, allowed: &[&str], at: &str) -> Vec<FieldError> {
    let version = text(fs, "apiVersion");
    if version.is_empty() {
        return vec![FieldError::required(format!("{at}.apiVersion"), "")];
    }
    let path = text(fs, "fieldPath");
    if path.is_empty() {
        return vec![FieldError::required(format!("{at}.fieldPath"), "")];
    }
    let converting = |reason: String| {
        vec![FieldError::invalid(
            format!("{at}.fieldPath"),
            path,
            format!("error converting fieldPath: {reason}"),
        )]
    };
    if version != "v1" {
        return converting(format!("unsupported pod version: {version}"));
    }
    if let Some((base, key)) = split_subscript(path) {
        return match base {
            "metadata.annotations" => invalid_each(
                at,
                &key.to_lowercase(),
                is_qualified_name(&key.to_lowercase()),
            ),
            "metadata.labels" => invalid_each(at, key, is_qualified_name(key)),
            _ => converting(format!("field label does not support subscript: {path}")),
        };
    }
    const POD_LABELS: [&str; 14] = [
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    ];
    // Old v1 clients send spec.host for the node name.
    let path = if path == "spec.host" {
        "spec.nodeName"
    } else {
        path
    };
    if !POD_LABELS.contains(&path) {
        return converting(format!("field label not supported: {path}"));
    }
    if allowed.contains(&path) {
        Vec::new()
    } else {
        vec![FieldError::not_supported(
            format!("{at}.fieldPath"),
            path,
            allowed,
        )]
    }
}

/// Upstream's validateContainerResourceFieldSelector and validateContainerResourceDivisor
/// (`volume`: a downward API volume file, which must name its container).
fn resource_selector_errors(fs: &Value, at: &str, volume: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let resource = text(fs, "resource");
    let hugepages =
        resource.starts_with("requests.hugepages-") || resource.starts_with("limits.hugepages-");
    if volume && text(fs, "containerName").is_empty() {
        errs.push(FieldError::required(format!("{at}.containerName"), ""));
    } else if resource.is_empty() {
        errs.push(FieldError::required(format!("{at}.resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource) && !hugepages {
        errs.push(FieldError::not_supported(
            format!("{at}.resource"),
            resource,
            &RESOURCE_FIELD_PATHS,
        ));
    }
    let divisor = fs
        .get("divisor")
        .map(quantity_text)
        .and_then(|d| k1s_apimachinery::quantity::Quantity::parse(&d))
        .filter(|d| !d.is_zero());
    if let Some(divisor) = divisor {
        const SIZES: [&str; 13] = [
            "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
        ];
        const SIZES_TEXT: &str = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei";
        let canonical = divisor.to_string();
        let bad = |what: &str| {
            FieldError::invalid(
                format!("{at}.divisor"),
                resource,
                format!("only divisor's values {SIZES_TEXT} are supported with the {what}"),
            )
        };
        match resource {
            "limits.cpu" | "requests.cpu" if !["1m", "1"].contains(&canonical.as_str()) => {
                errs.push(FieldError::invalid(
                    format!("{at}.divisor"),
                    resource,
                    "only divisor's values 1m and 1 are supported with the cpu resource",
                ));
            }
            "limits.memory" | "requests.memory" if !SIZES.contains(&canonical.as_str()) => {
                errs.push(bad("memory resource"));
            }
            "limits.ephemeral-storage" | "requests.ephemeral-storage"
                if !SIZES.contains(&canonical.as_str()) =>
            {
                errs.push(bad("local ephemeral storage resource"));
            }
            _ => {}
        }
        if hugepages && !SIZES.contains(&canonical.as_str()) {
            errs.push(bad("hugepages resource"));
        }
    }
    errs
}

/// Upstream's validateDownwardAPIVolumeFile. Upstream reports a file's errors under the
/// source's path (`downwardAPI.path`, not `downwardAPI.items[0].path`), and so does this.
fn downward_api_file_errors(file: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let p = text(file, "path");
    if p.is_empty() {
        errs.push(FieldError::required(format!("{at}.path"), ""));
    }
    errs.extend(local_non_reserved_path_errors(p, &format!("{at}.path")));
    match (set(file, "fieldRef"), set(file, "resourceFieldRef")) {
        (Some(fs), both) => {
            errs.extend(field_selector_errors(
                fs,
                &VOLUME_FIELD_PATHS,
                &format!("{at}.fieldRef"),
            ));
            if both.is_some() {
                errs.push(FieldError::invalid(
                    at,
                    "resource",
                    "fieldRef and resourceFieldRef can not be specified simultaneously",
                ));
            }
        }
        (None, Some(rs)) => errs.extend(resource_selector_errors(
            rs,
            &format!("{at}.resourceFieldRef"),
            true,
        )),
        (None, None) => errs.push(FieldError::required(
            at,
            "one of fieldRef and resourceFieldRef is required",
        )),
    }
    if let Some(m) = file.get("mode").and_then(Value::as_i64)
        && !(0..=0o777).contains(&m)
    {
        errs.push(FieldError::invalid(
            format!("{at}.mode"),
            m,
            FILE_MODE_ERROR,
        ));
    }
    errs
}

/// Upstream's validateProjectionSources: one source per entry, paths unique across the volume.
fn projection_errors(s: &Value, field: &str, opts: &PodOptions) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut paths = HashSet::new();
    // Upstream skips empty item paths, but not an empty trust bundle path.
    let mut conflict = |p: &str, value: &str, skip_empty: bool, errs: &mut Vec<FieldError>| {
        if (!skip_empty || !p.is_empty()) && !paths.insert(p.to_string()) {
            errs.push(FieldError::invalid(
                field,
                value,
                "conflicting duplicate paths",
            ));
        }
    };
    for (i, source) in items(s, "sources").iter().enumerate() {
        let src = format!("{field}.sources[{i}]");
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let Some(obj) = set(source, kind) else {
                continue;
            };
            count += 1;
            let at = format!("{src}.{kind}");
            let name = text(obj, "name");
            if name.is_empty() {
                errs.push(FieldError::required(format!("{at}.name"), ""));
            }
            for (j, kp) in items(obj, "items").iter().enumerate() {
                errs.extend(key_to_path_errors(kp, &format!("{at}.items[{j}]")));
                conflict(text(kp, "path"), name, true, &mut errs);
            }
        }
        if let Some(obj) = set(source, "downwardAPI") {
            count += 1;
            let at = format!("{src}.downwardAPI");
            for file in items(obj, "items") {
                errs.extend(downward_api_file_errors(file, &at));
                let p = text(file, "path");
                conflict(p, p, true, &mut errs);
            }
        }
        if let Some(token) = set(source, "serviceAccountToken") {
            count += 1;
            let at = format!("{src}.serviceAccountToken");
            let seconds = token
                .get("expirationSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if seconds < 600 {
                errs.push(FieldError::invalid(
                    format!("{at}.expirationSeconds"),
                    seconds,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if seconds > 1 << 32 {
                errs.push(FieldError::invalid(
                    format!("{at}.expirationSeconds"),
                    seconds,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            // Upstream reports the token's path at the volume's `projected.path`.
            let p = text(token, "path");
            if p.is_empty() {
                errs.push(FieldError::required(format!("{field}.path"), ""));
            } else if !opts.non_local_token_path {
                errs.extend(local_non_reserved_path_errors(p, &format!("{field}.path")));
            }
        }
        if let Some(bundle) = set(source, "clusterTrustBundle") {
            count += 1;
            let at = format!("{src}.clusterTrustBundle");
            let name = bundle.get("name").and_then(Value::as_str);
            let signer = bundle.get("signerName").and_then(Value::as_str);
            match (name, signer) {
                (Some(_), Some(_)) => errs.push(FieldError::invalid(
                    &at,
                    bundle.clone(),
                    "only one of name and signerName may be used",
                )),
                (Some(n), None) => {
                    if n.is_empty() {
                        errs.push(FieldError::required(
                            format!("{at}.name"),
                            "must be a valid object name",
                        ));
                    }
                    if set(bundle, "labelSelector").is_some() {
                        errs.push(FieldError::invalid(
                            format!("{at}.labelSelector"),
                            bundle["labelSelector"].clone(),
                            "labelSelector must be unset if name is specified",
                        ));
                    }
                }
                (None, Some(sn)) => {
                    if sn.is_empty() {
                        errs.push(FieldError::required(
                            format!("{at}.signerName"),
                            "must be a valid signer name",
                        ));
                    }
                    errs.extend(selector_errors(
                        bundle.get("labelSelector"),
                        &format!("{at}.labelSelector"),
                        false,
                    ));
                }
                (None, None) => errs.push(FieldError::required(
                    &at,
                    "either name or signerName must be specified",
                )),
            }
            let p = text(bundle, "path");
            if p.is_empty() {
                errs.push(FieldError::required(format!("{at}.path"), ""));
            }
            errs.extend(local_non_reserved_path_errors(p, &format!("{at}.path")));
            conflict(p, p, false, &mut errs);
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                src,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    errs
}

/// Upstream's ValidatePersistentVolumeClaimTemplate of an ephemeral volume: labels and
/// annotations only in its metadata, and a valid claim spec.
fn claim_template_errors(t: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let meta = t.get("metadata").unwrap_or(&Value::Null);
    let pairs = |key: &str| -> Vec<(String, String)> {
        meta.get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect()
    };
    errs.extend(k1s_apimachinery::meta::validate_annotations(
        &pairs("annotations"),
        &format!("{at}.metadata.annotations"),
    ));
    errs.extend(validate_labels(
        &pairs("labels"),
        &format!("{at}.metadata.labels"),
    ));
    // ObjectMeta's other fields, in its field order.
    const OTHERS: [&str; 13] = [
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "ownerReferences",
        "finalizers",
        "managedFields",
    ];
    let is_zero = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(b) => !b,
    };
    for key in OTHERS {
        if meta.get(key).is_some_and(|v| !is_zero(v)) {
            errs.push(FieldError::forbidden(
                format!("{at}.metadata.{key}"),
                "cannot be set",
            ));
        }
    }
    let spec = t.get("spec").unwrap_or(&Value::Null);
    errs.extend(super::core::validate_pvc_spec_at(
        spec,
        &format!("{at}.spec"),
    ));
    errs
}

/// Upstream's validateKeyToPath.
fn key_to_path_errors(kp: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if text(kp, "key").is_empty() {
        errs.push(FieldError::required(format!("{at}.key"), ""));
    }
    let p = text(kp, "path");
    if p.is_empty() {
        errs.push(FieldError::required(format!("{at}.path"), ""));
    }
    errs.extend(local_non_reserved_path_errors(p, &format!("{at}.path")));
    if let Some(m) = kp.get("mode").and_then(Value::as_i64)
        && !(0..=0o777).contains(&m)
    {
        errs.push(FieldError::invalid(
            format!("{at}.mode"),
            m,
            FILE_MODE_ERROR,
        ));
    }
    errs
}

/// Upstream's one-of rule for volume sources and handlers: the first of `keys` set in `v` (in
/// that order), and a Forbidden error for each later one (reported after the first's own).
fn only_one<'a>(
    v: &'a Value,
    keys: &[&'a str],
    at: &str,
    what: &str,
) -> (Option<(&'a str, &'a Value)>, Vec<FieldError>) {
    let mut first = None;
    let mut others = Vec::new();
    for key in keys {
        let Some(s) = set(v, key) else { continue };
        if first.is_none() {
            first = Some((*key, s));
        } else {
            others.push(FieldError::forbidden(
                format!("{at}.{key}"),
                format!("may not specify more than 1 {what} type"),
            ));
        }
    }
    (first, others)
}

fn default_mode(s: &Value, field: &str) -> Vec<FieldError> {
    match s.get("defaultMode").and_then(Value::as_i64) {
        Some(m) if !(0..=0o777).contains(&m) => vec![FieldError::invalid(
            format!("{field}.defaultMode"),
            m,
            FILE_MODE_ERROR,
        )],
        _ => Vec::new(),
    }
}

/// A secret's or config map's default mode and items (upstream's validateKeyToPath).
fn mode_and_items(s: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = default_mode(s, field);
    for (i, kp) in items(s, "items").iter().enumerate() {
        errs.extend(key_to_path_errors(kp, &format!("{field}.items[{i}]")));
    }
    errs
}

/// Upstream's validateLocalDescendingPath: relative, without `..` steps.
pub(super) fn local_descending_path_errors(p: &str, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if p.starts_with('/') {
        errs.push(FieldError::invalid(field, p, "must be a relative path"));
    }
    if p.split('/').any(|x| x == "..") {
        errs.push(FieldError::invalid(field, p, "must not contain '..'"));
    }
    errs
}

/// Upstream's validateContainerPorts.
fn validate_container_ports(ports: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = text(p, "name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                errs.extend(invalid_each(&format!("{at}.name"), name, msgs));
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(format!("{at}.name"), name));
            }
        }
        match p.get("containerPort").and_then(Value::as_i64).unwrap_or(0) {
            0 => errs.push(FieldError::required(format!("{at}.containerPort"), "")),
            n => {
                for m in is_valid_port_num(n) {
                    errs.push(FieldError::invalid(format!("{at}.containerPort"), n, m));
                }
            }
        }
        let host = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host != 0 {
            for m in is_valid_port_num(host) {
                errs.push(FieldError::invalid(format!("{at}.hostPort"), host, m));
            }
        }
        one_of(
            &format!("{at}.protocol"),
            p.get("protocol").and_then(Value::as_str),
            &["SCTP", "TCP", "UDP"],
            &mut errs,
        );
    }
    errs
}

/// Upstream's AccumulateUniqueHostPorts over `containers` (index, container).
fn host_port_conflicts<'a>(
    containers: impl Iterator<Item = (usize, &'a Value)>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (ci, c) in containers {
        for (pi, p) in items(c, "ports").iter().enumerate() {
            let port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if port == 0 {
                continue;
            }
            let key = format!("{}/{}/{port}", text(p, "protocol"), text(p, "hostIP"));
            if !seen.insert(key.clone()) {
                errs.push(FieldError::duplicate(
                    format!("{path}[{ci}].ports[{pi}].hostPort"),
                    key,
                ));
            }
        }
    }
    errs
}

/// Upstream's IsRelaxedEnvVarName (the relaxed rule is on by default).
fn env_var_name_errors(name: &str) -> Vec<String> {
    if name
        .chars()
        .any(|c| !c.is_ascii() || c.is_ascii_control() || c == '=')
    {
        vec!["a valid environment variable name must consist only of printable ASCII characters other than '='".into()]
    } else {
        Vec::new()
    }
}

/// Upstream's ValidateEnv with validateEnvVarValueFrom.
fn validate_env(env: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, e) in env.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let name = text(e, "name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{at}.name"), ""));
        } else {
            errs.extend(invalid_each(
                &format!("{at}.name"),
                name,
                env_var_name_errors(name),
            ));
        }
        let Some(from) = set(e, "valueFrom") else {
            continue;
        };
        let field = format!("{at}.valueFrom");
        let mut sources = 0;
        if let Some(r) = set(from, "fieldRef") {
            sources += 1;
            let f = format!("{field}.fieldRef");
            errs.extend(field_selector_errors(r, &ENV_FIELD_PATHS, &f));
        }
        if let Some(r) = set(from, "resourceFieldRef") {
            sources += 1;
            let f = format!("{field}.resourceFieldRef");
            errs.extend(resource_selector_errors(r, &f, false));
        }
        for key in ["configMapKeyRef", "secretKeyRef"] {
            if let Some(r) = set(from, key) {
                sources += 1;
                let f = format!("{field}.{key}");
                let name = text(r, "name");
                errs.extend(invalid_each(
                    &format!("{f}.name"),
                    name,
                    is_dns1123_subdomain(name),
                ));
                let key = text(r, "key");
                if key.is_empty() {
                    errs.push(FieldError::required(format!("{f}.key"), ""));
                } else {
                    let msgs = super::core::config_key_errors(key);
                    errs.extend(invalid_each(&format!("{f}.key"), key, msgs));
                }
            }
        }
        let value_set = !text(e, "value").is_empty();
        errs.extend(one_source(
            &field,
            sources,
            "`fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            value_set,
        ));
    }
    errs
}

/// Upstream's ValidateEnvFrom: a prefix that is a valid variable name, and one source each.
fn validate_env_from(sources: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let prefix = text(s, "prefix");
        if !prefix.is_empty() {
            errs.extend(invalid_each(
                &format!("{at}.prefix"),
                prefix,
                env_var_name_errors(prefix),
            ));
        }
        let mut count = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = set(s, key) {
                count += 1;
                let name = text(r, "name");
                let field = format!("{at}.{key}.name");
                errs.extend(invalid_each(&field, name, is_dns1123_subdomain(name)));
            }
        }
        errs.extend(one_source(
            &at,
            count,
            "`configMapRef` or `secretRef`",
            false,
        ));
    }
    errs
}

/// The one-source rule of env values and envFrom entries: none names the choices; more than
/// one, or one beside a literal `value`, is refused.
fn one_source(field: &str, count: usize, choices: &str, beside_value: bool) -> Option<FieldError> {
    let detail = if count == 0 {
        format!("must specify one of: {choices}")
    } else if beside_value {
        "may not be specified when `value` is not empty".to_string()
    } else if count > 1 {
        "may not have more than one field specified at a time".to_string()
    } else {
        return None;
    };
    Some(FieldError::invalid(field, "", detail))
}

/// Upstream's validateHandler: exactly one handler, each checked.
fn validate_handler(h: &Value, path: &str, kinds: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (first, others) = only_one(h, kinds, path, "handler");
    if let Some((kind, action)) = first {
        let field = format!("{path}.{kind}");
        match kind {
            "exec" if items(action, "command").is_empty() => {
                errs.push(FieldError::required(format!("{field}.command"), ""));
            }
            "httpGet" => {
                if text(action, "path").is_empty() {
                    errs.push(FieldError::required(format!("{field}.path"), ""));
                }
                errs.extend(port_num_or_name(
                    action.get("port"),
                    &format!("{field}.port"),
                ));
                let scheme = text(action, "scheme");
                if !["HTTP", "HTTPS"].contains(&scheme) {
                    errs.push(FieldError::not_supported(
                        format!("{field}.scheme"),
                        scheme,
                        &["HTTP", "HTTPS"],
                    ));
                }
            }
            "tcpSocket" | "grpc" => {
                errs.extend(port_num_or_name(
                    action.get("port"),
                    &format!("{field}.port"),
                ));
            }
            _ => {}
        }
    } else {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs.extend(others);
    errs
}

/// Upstream's ValidatePortNumOrName.
fn port_num_or_name(port: Option<&Value>, field: &str) -> Vec<FieldError> {
    match port {
        Some(Value::String(name)) => invalid_each(field, name, is_valid_port_name(name)),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            is_valid_port_num(n)
                .into_iter()
                .map(|m| FieldError::invalid(field, n, m))
                .collect()
        }
    }
}

fn validate_lifecycle(l: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for hook in ["postStart", "preStop"] {
        if let Some(h) = set(l, hook) {
            errs.extend(validate_handler(
                h,
                &format!("{path}.{hook}"),
                &["exec", "httpGet", "tcpSocket", "sleep"],
            ));
        }
    }
    errs
}

/// A container's liveness, readiness and startup probes (upstream's validateProbe and the
/// per-kind rules).
fn validate_probes(c: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = set(c, kind) else { continue };
        let path = format!("{at}.{kind}");
        errs.extend(validate_handler(
            p,
            &path,
            &["exec", "httpGet", "tcpSocket", "grpc"],
        ));
        for f in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            let v = p.get(f).and_then(Value::as_i64).unwrap_or(0);
            if v < 0 {
                errs.push(FieldError::invalid(format!("{path}.{f}"), v, NON_NEGATIVE));
            }
        }
        let grace = set(p, "terminationGracePeriodSeconds").and_then(Value::as_i64);
        if let Some(g) = grace
            && g <= 0
        {
            errs.push(FieldError::invalid(
                format!("{path}.terminationGracePeriodSeconds"),
                g,
                "must be greater than 0",
            ));
        }
        let success = p
            .get("successThreshold")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if kind != "readinessProbe" && success != 1 {
            errs.push(FieldError::invalid(
                format!("{path}.successThreshold"),
                success,
                "must be 1",
            ));
        }
        if kind == "readinessProbe"
            && let Some(g) = set(p, "terminationGracePeriodSeconds")
        {
            errs.push(FieldError::invalid(
                format!("{path}.terminationGracePeriodSeconds"),
                g.clone(),
                "must not be set for readinessProbes",
            ));
        }
    }
    errs
}

/// Upstream's ValidateTolerations.
pub fn validate_tolerations(tolerations: &[Value], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let key = text(t, "key");
        if !key.is_empty() {
            errs.extend(invalid_each(
                &format!("{at}.key"),
                key,
                is_qualified_name(key),
            ));
        }
        let op = text(t, "operator");
        if key.is_empty() && op != "Exists" {
            errs.push(FieldError::invalid(
                format!("{at}.operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = text(t, "effect");
        if set(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                format!("{at}.effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = text(t, "value");
        match op {
            "Equal" | "" => {
                let msgs = is_valid_label_value(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{at}.operator"),
                        value,
                        msgs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{at}.operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                format!("{at}.operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
        if !effect.is_empty() && !EFFECTS.contains(&effect) {
            errs.push(FieldError::not_supported(
                format!("{at}.effect"),
                effect,
                &EFFECTS,
            ));
        }
    }
    errs
}

/// Upstream's validatePodDNSConfig: `None` needs nameservers; limits on nameservers and
/// searches.
fn validate_dns_config(spec: &Value, policy: Option<&str>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let field = format!("{path}.dnsConfig");
    let config = set(spec, "dnsConfig");
    if policy == Some("None") {
        let Some(config) = config else {
            errs.push(FieldError::required(
                &field,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ));
            return errs;
        };
        if items(config, "nameservers").is_empty() {
            errs.push(FieldError::required(
                format!("{field}.nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return errs;
        }
    }
    let Some(config) = config else {
        return errs;
    };
    let nameservers = items(config, "nameservers");
    if nameservers.len() > 3 {
        errs.push(FieldError::invalid_raw(
            format!("{field}.nameservers"),
            go_string_slice(nameservers),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        let ns = ns.as_str().unwrap_or_default();
        let f = format!("{field}.nameservers[{i}]");
        errs.extend(invalid_each(&f, ns, k1s_apimachinery::ip::ip_errors(ns)));
    }
    let searches = items(config, "searches");
    if searches.len() > 32 {
        errs.push(FieldError::invalid_raw(
            format!("{field}.searches"),
            go_string_slice(searches),
            "must not have more than 32 search paths",
        ));
    }
    // The searches joined by single spaces, as the resolver's configuration holds them.
    let joined = searches
        .iter()
        .map(|s| s.as_str().unwrap_or_default().len())
        .sum::<usize>()
        + searches.len().saturating_sub(1);
    if joined > 2048 {
        errs.push(FieldError::invalid_raw(
            format!("{field}.searches"),
            go_string_slice(searches),
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, s) in searches.iter().enumerate() {
        let s = s.as_str().unwrap_or_default();
        if s == "." {
            continue;
        }
        // RelaxedDNSSearchValidation (beta, on in 1.33) also takes underscores.
        let s = s.strip_suffix('.').unwrap_or(s);
        let msgs = dns1123_subdomain_with_underscore_errors(s);
        errs.extend(invalid_each(&format!("{field}.searches[{i}]"), s, msgs));
    }
    for (i, o) in items(config, "options").iter().enumerate() {
        if text(o, "name").is_empty() {
            errs.push(FieldError::required(
                format!("{field}.options[{i}]"),
                "must not be empty",
            ));
        }
    }
    errs
}

/// Upstream's IsDNS1123SubdomainWithUnderscore: labels of `_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?`
/// joined by dots, at most 253 characters.
fn dns1123_subdomain_with_underscore_errors(value: &str) -> Vec<String> {
    const FORMAT: &str = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*";
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let label_ok = |l: &str| {
        let l = l.strip_prefix('_').unwrap_or(l).as_bytes();
        match (l.first(), l.last()) {
            (Some(&first), Some(&last)) => {
                alnum(first) && alnum(last) && l.iter().all(|&b| alnum(b) || b == b'-' || b == b'_')
            }
            _ => false,
        }
    };
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(k1s_apimachinery::validation::max_len_error(253));
    }
    if !value.split('.').all(label_ok) {
        errs.push(k1s_apimachinery::validation::regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character",
            FORMAT,
            &["example.com"],
        ));
    }
    errs
}

/// Upstream's ValidateLabelSelector of an optional selector field: each label and requirement
/// at its own path under `field`; `allow_invalid_values` is its AllowInvalidLabelValueInSelector
/// (requirement values are not checked).
fn selector_errors(
    selector: Option<&Value>,
    field: &str,
    allow_invalid_values: bool,
) -> Vec<FieldError> {
    let Some(sel) = selector.filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut errs = k1s_apimachinery::validation::validate_label_selector(sel, field);
    if allow_invalid_values {
        // The value checks are the only errors at `<field>.matchExpressions[i].values[j]`.
        let values_of = format!("{field}.matchExpressions[");
        errs.retain(|e| {
            !(e.field.starts_with(&values_of)
                && e.field.contains("].values[")
                && matches!(e.error_type, FieldErrorType::Invalid))
        });
    }
    errs
}

/// The keys a selector already constrains: its matchLabels, then its requirements in order.
fn selector_keys(selector: &Value) -> impl Iterator<Item = (bool, &str)> {
    let labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.keys().map(|k| (false, k.as_str())));
    let requirements = items(selector, "matchExpressions")
        .iter()
        .map(|r| (true, text(r, "key")));
    labels.chain(requirements)
}

/// Each of `keys` (matchLabelKeys or mismatchLabelKeys at `field`) as a label name; forbidden
/// without a labelSelector (upstream's validateLabelKeys).
fn label_keys_errors(keys: &[Value], selector: Option<&Value>, field: &str) -> Vec<FieldError> {
    if keys.is_empty() {
        return Vec::new();
    }
    if selector.is_none() {
        return vec![FieldError::forbidden(
            field,
            "must not be specified when labelSelector is not set",
        )];
    }
    let mut errs = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let key = key.as_str().unwrap_or_default();
        errs.extend(invalid_each(
            &format!("{field}[{i}]"),
            key,
            is_qualified_name(key),
        ));
    }
    errs
}

/// Upstream's validateMatchLabelKeysAndMismatchLabelKeys of a pod affinity term at `at`.
fn match_label_keys_errors(term: &Value, at: &str) -> Vec<FieldError> {
    let selector = set(term, "labelSelector");
    let matching = items(term, "matchLabelKeys");
    let mismatching = items(term, "mismatchLabelKeys");
    let mut errs = label_keys_errors(matching, selector, &format!("{at}.matchLabelKeys"));
    errs.extend(label_keys_errors(
        mismatching,
        selector,
        &format!("{at}.mismatchLabelKeys"),
    ));
    let key_of = |k: &Value| k.as_str().unwrap_or_default().to_string();
    if let Some(selector) = selector {
        // The create-time merge appended `key In (value)` for each matchLabelKeys entry; a
        // requirement on a key the selector already constrained means the user named it twice.
        // Upstream indexes the term's own path with the key's position (the last one for a
        // repeated key), and so does this.
        let positions: std::collections::HashMap<String, usize> = matching
            .iter()
            .enumerate()
            .map(|(i, k)| (key_of(k), i))
            .collect();
        let mut seen = HashSet::new();
        for (is_requirement, key) in selector_keys(selector) {
            if is_requirement
                && seen.contains(key)
                && let Some(i) = positions.get(key)
            {
                errs.push(FieldError::invalid(
                    format!("{at}[{i}]"),
                    key,
                    "exists in both matchLabelKeys and labelSelector",
                ));
            }
            seen.insert(key);
        }
    }
    let mismatched: HashSet<String> = mismatching.iter().map(key_of).collect();
    for (i, key) in matching.iter().map(key_of).enumerate() {
        if mismatched.contains(&key) {
            errs.push(FieldError::invalid(
                format!("{at}.matchLabelKeys[{i}]"),
                key,
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    errs
}

/// Upstream's mutatePodAffinity (PrepareForCreate of Pods, MatchLabelKeysInPodAffinity on in
/// 1.33): each affinity and anti-affinity term with a labelSelector gets `key In (value)` for
/// each matchLabelKeys entry and `key NotIn (value)` for each mismatchLabelKeys entry whose
/// label the pod has, so the scheduler needs no knowledge of the keys.
pub fn merge_match_label_keys(pod: &mut Value) {
    // Taken out and put back, so the labels can be read while the terms change.
    let Some(mut affinity) = pod.pointer_mut("/spec/affinity").map(Value::take) else {
        return;
    };
    if let Some(labels) = pod.pointer("/metadata/labels").and_then(Value::as_object) {
        merge_affinity(&mut affinity, labels);
    }
    pod["spec"]["affinity"] = affinity;
}

fn merge_affinity(affinity: &mut Value, labels: &serde_json::Map<String, Value>) {
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pod_affinity) = affinity.get_mut(kind) else {
            continue;
        };
        for list in [
            "preferredDuringSchedulingIgnoredDuringExecution",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ] {
            let terms = pod_affinity.get_mut(list).and_then(Value::as_array_mut);
            for entry in terms.into_iter().flatten() {
                let term = if list.starts_with("preferred") {
                    entry.get_mut("podAffinityTerm")
                } else {
                    Some(entry)
                };
                if let Some(term) = term {
                    merge_term(term, labels);
                }
            }
        }
    }
}

fn merge_term(term: &mut Value, labels: &serde_json::Map<String, Value>) {
    let mut added = Vec::new();
    for (list, operator) in [("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")] {
        for key in items(term, list).iter().filter_map(Value::as_str) {
            if let Some(value) = labels.get(key) {
                added.push(
                    serde_json::json!({ "key": key, "operator": operator, "values": [value] }),
                );
            }
        }
    }
    // A nil selector matches nothing and stays nil; validation forbids the keys without it.
    let selector = term.get_mut("labelSelector").filter(|s| !s.is_null());
    let Some(selector) = selector.and_then(Value::as_object_mut) else {
        return;
    };
    if added.is_empty() {
        return;
    }
    let requirements = selector
        .entry("matchExpressions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if requirements.is_null() {
        *requirements = Value::Array(Vec::new());
    }
    if let Some(list) = requirements.as_array_mut() {
        list.extend(added);
    }
}

/// Upstream's validateAffinity: node selector terms and weights, pod (anti-)affinity terms.
fn validate_affinity(affinity: &Value, path: &str, opts: &PodOptions) -> Vec<FieldError> {
    let allow_bad_values = opts.invalid_affinity_selector_values;
    let mut errs = Vec::new();
    let weight_error = |t: &Value, field: String| {
        let w = t.get("weight").and_then(Value::as_i64).unwrap_or(0);
        (!(1..=100).contains(&w))
            .then(|| FieldError::invalid(field, w, "must be in the range 1-100"))
    };
    if let Some(node) = set(affinity, "nodeAffinity") {
        let at = format!("{path}.nodeAffinity");
        if let Some(required) = set(node, "requiredDuringSchedulingIgnoredDuringExecution") {
            let field =
                format!("{at}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
            let terms = items(required, "nodeSelectorTerms");
            if terms.is_empty() {
                errs.push(FieldError::required(
                    field,
                    "must have at least one node selector term",
                ));
            } else {
                for (i, term) in terms.iter().enumerate() {
                    errs.extend(node_selector_term(
                        term,
                        &format!("{field}[{i}]"),
                        opts.invalid_required_node_affinity_values,
                    ));
                }
            }
        }
        let field = format!("{at}.preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in items(node, "preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            errs.extend(weight_error(t, format!("{field}[{i}].weight")));
            let pref = t.get("preference").unwrap_or(&Value::Null);
            errs.extend(node_selector_term(
                pref,
                &format!("{field}[{i}].preference"),
                true,
            ));
        }
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pod) = set(affinity, kind) else {
            continue;
        };
        let at = format!("{path}.{kind}");
        let field = format!("{at}.requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in items(pod, "requiredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            errs.extend(pod_affinity_term(
                t,
                &format!("{field}[{i}]"),
                allow_bad_values,
            ));
        }
        let field = format!("{at}.preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in items(pod, "preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            errs.extend(weight_error(t, format!("{field}[{i}].weight")));
            let term = t.get("podAffinityTerm").unwrap_or(&Value::Null);
            errs.extend(pod_affinity_term(
                term,
                &format!("{field}[{i}].podAffinityTerm"),
                allow_bad_values,
            ));
        }
    }
    errs
}

/// Upstream's ValidateNodeSelectorTerm (label values are not checked for preferred terms).
pub(super) fn node_selector_term(
    term: &Value,
    at: &str,
    allow_bad_values: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, req) in items(term, "matchExpressions").iter().enumerate() {
        let f = format!("{at}.matchExpressions[{j}]");
        let values = items(req, "values");
        match text(req, "operator") {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                format!("{f}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                format!("{f}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Gt" | "Lt" if values.len() != 1 => errs.push(FieldError::required(
                format!("{f}.values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            op => errs.push(FieldError::invalid(
                format!("{f}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let key = text(req, "key");
        errs.extend(invalid_each(
            &format!("{f}.key"),
            key,
            is_qualified_name(key),
        ));
        if !allow_bad_values {
            for (v, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or_default();
                let field = format!("{f}.values[{v}]");
                errs.extend(invalid_each(&field, value, is_valid_label_value(value)));
            }
        }
    }
    for (j, req) in items(term, "matchFields").iter().enumerate() {
        let f = format!("{at}.matchFields[{j}]");
        match text(req, "operator") {
            "In" | "NotIn" if items(req, "values").len() != 1 => errs.push(FieldError::required(
                format!("{f}.values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )),
            "In" | "NotIn" => {}
            op => errs.push(FieldError::invalid(
                format!("{f}.operator"),
                op,
                "not a valid selector operator",
            )),
        }
        let key = text(req, "key");
        if key != "metadata.name" {
            errs.push(FieldError::invalid(
                format!("{f}.key"),
                key,
                "not a valid field selector key",
            ));
        } else {
            // Node names are DNS subdomains (ValidateNodeName).
            for (v, value) in items(req, "values").iter().enumerate() {
                let value = value.as_str().unwrap_or_default();
                let field = format!("{f}.values[{v}]");
                errs.extend(invalid_each(&field, value, is_dns1123_subdomain(value)));
            }
        }
    }
    errs
}

/// Upstream's validatePodAffinityTerm: valid selectors, namespace names, matchLabelKeys and
/// mismatchLabelKeys, a topology key.
fn pod_affinity_term(term: &Value, at: &str, allow_bad_values: bool) -> Vec<FieldError> {
    let mut errs = selector_errors(
        term.get("labelSelector"),
        &format!("{at}.labelSelector"),
        allow_bad_values,
    );
    errs.extend(selector_errors(
        term.get("namespaceSelector"),
        &format!("{at}.namespaceSelector"),
        allow_bad_values,
    ));
    for ns in items(term, "namespaces") {
        let ns = ns.as_str().unwrap_or_default();
        errs.extend(invalid_each(
            &format!("{at}.namespace"),
            ns,
            is_dns1123_label(ns),
        ));
    }
    errs.extend(match_label_keys_errors(term, at));
    let key = text(term, "topologyKey");
    if key.is_empty() {
        errs.push(FieldError::required(
            format!("{at}.topologyKey"),
            "can not be empty",
        ));
    }
    errs.extend(invalid_each(
        &format!("{at}.topologyKey"),
        key,
        is_qualified_name(key),
    ));
    errs
}

/// Upstream's validateTopologySpreadConstraints.
fn validate_topology_spread(
    constraints: &[Value],
    path: &str,
    allow_bad_values: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if skew <= 0 {
            errs.push(FieldError::invalid(
                format!("{at}.maxSkew"),
                skew,
                "must be greater than zero",
            ));
        }
        // Only its presence: upstream's ValidateTopologyKey checks no syntax here.
        let key = text(c, "topologyKey");
        if key.is_empty() {
            errs.push(FieldError::required(
                format!("{at}.topologyKey"),
                "can not be empty",
            ));
        }
        let action = text(c, "whenUnsatisfiable");
        const ACTIONS: [&str; 2] = ["DoNotSchedule", "ScheduleAnyway"];
        if !ACTIONS.contains(&action) {
            errs.push(FieldError::not_supported(
                format!("{at}.whenUnsatisfiable"),
                action,
                &ACTIONS,
            ));
        }
        let repeated = constraints[i + 1..]
            .iter()
            .any(|o| text(o, "topologyKey") == key && text(o, "whenUnsatisfiable") == action);
        if repeated {
            errs.push(FieldError::duplicate(
                format!("{at}.{{topologyKey, whenUnsatisfiable}}"),
                format!("{{{key}, {action}}}"),
            ));
        }
        if let Some(min) = c.get("minDomains").and_then(Value::as_i64) {
            if min <= 0 {
                errs.push(FieldError::invalid(
                    format!("{at}.minDomains"),
                    min,
                    "must be greater than zero",
                ));
            }
            if action != "DoNotSchedule" {
                errs.push(FieldError::invalid(
                    format!("{at}.minDomains"),
                    min,
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
        }
        for policy in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(p) = c.get(policy).and_then(Value::as_str)
                && !["Honor", "Ignore"].contains(&p)
            {
                errs.push(FieldError::not_supported(
                    format!("{at}.{policy}"),
                    p,
                    &["Honor", "Ignore"],
                ));
            }
        }
        let selector = set(c, "labelSelector");
        errs.extend(spread_match_label_keys_errors(
            items(c, "matchLabelKeys"),
            selector,
            &format!("{at}.matchLabelKeys"),
        ));
        errs.extend(selector_errors(
            selector,
            &format!("{at}.labelSelector"),
            allow_bad_values,
        ));
    }
    errs
}

/// Upstream's validateMatchLabelKeysInTopologySpread: label names, not without a selector, not
/// a key the selector already constrains (1.33 does not merge these in the API server).
fn spread_match_label_keys_errors(
    keys: &[Value],
    selector: Option<&Value>,
    field: &str,
) -> Vec<FieldError> {
    if keys.is_empty() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let constrained: HashSet<&str> = match selector {
        Some(sel) => selector_keys(sel).map(|(_, k)| k).collect(),
        None => {
            errs.push(FieldError::forbidden(
                field,
                "must not be specified when labelSelector is not set",
            ));
            HashSet::new()
        }
    };
    for (i, key) in keys.iter().enumerate() {
        let key = key.as_str().unwrap_or_default();
        let at = format!("{field}[{i}]");
        errs.extend(invalid_each(&at, key, is_qualified_name(key)));
        if constrained.contains(key) {
            errs.push(FieldError::invalid(
                at,
                key,
                "exists in both matchLabelKeys and labelSelector",
            ));
        }
    }
    errs
}

// Pod-only metadata rules: the annotations a Pod's spec depends on (upstream's
// ValidatePodSpecificAnnotations and ...Updates), the create-time checks that deprecated
// seccomp/AppArmor annotations agree with the fields, and the AppArmor version-skew sync.

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const TOLERATIONS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/tolerations";
const DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";
const APPARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn annotations(pod: &Value) -> Option<&serde_json::Map<String, Value>> {
    pod.pointer("/metadata/annotations")
        .and_then(Value::as_object)
}

/// Every container with its list and index, in upstream's VisitContainersWithPath order.
fn all_containers(spec: &Value) -> impl Iterator<Item = (&'static str, usize, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| {
            items(spec, list)
                .iter()
                .enumerate()
                .map(move |(i, c)| (list, i, c))
        })
}

/// Upstream's GetDeletionCostFromPodAnnotations succeeds: no `+`, no leading zeros, an int32.
fn deletion_cost_is_valid(annotations: Option<&serde_json::Map<String, Value>>) -> bool {
    let Some(value) = annotations.and_then(|a| a.get(DELETION_COST_ANNOTATION)) else {
        return true;
    };
    let value = value.as_str().unwrap_or_default();
    let first_ok = match value.as_bytes() {
        [] => false,
        [b'-', ..] => true,
        [b'0'] => true,
        [b'1'..=b'9', ..] => true,
        _ => false,
    };
    first_ok && value.parse::<i32>().is_ok()
}

/// Go's json.Unmarshal refusal of a top-level value of the wrong kind.
fn unmarshal_kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "object",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) | Value::Null => "array",
    }
}

/// Upstream's ValidateSeccompProfile of a deprecated seccomp annotation value.
fn seccomp_annotation_errors(value: &str, field: &str) -> Vec<FieldError> {
    match value {
        "runtime/default" | "docker/default" | "unconfined" => Vec::new(),
        _ => match value.strip_prefix("localhost/") {
            Some(path) => local_descending_path_errors(path, field),
            None => vec![FieldError::invalid(
                field,
                value,
                "must be a valid seccomp profile",
            )],
        },
    }
}

/// Upstream's ValidatePodSpecificAnnotations at `metadata.annotations`. `allow_invalid_cost`
/// is set on updates of a pod whose deletion cost was already invalid.
pub fn validate_pod_annotations(pod: &Value, allow_invalid_cost: bool) -> Vec<FieldError> {
    validate_pod_annotations_at(pod, allow_invalid_cost, "metadata.annotations")
}

/// ValidatePodSpecificAnnotations of a template at `path` (its `.annotations`), an invalid
/// deletion cost allowed when the stored template had one (`opts`).
pub fn validate_template_annotations_with(
    template: &Value,
    path: &str,
    opts: &PodOptions,
) -> Vec<FieldError> {
    let at = format!("{path}.annotations");
    validate_pod_annotations_at(template, opts.invalid_deletion_cost, &at)
}

fn validate_pod_annotations_at(
    pod: &Value,
    allow_invalid_cost: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(map) = annotations(pod) else {
        return errs;
    };
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let value_of = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or_default();
    if map.contains_key(MIRROR_ANNOTATION) && text(spec, "nodeName").is_empty() {
        errs.push(FieldError::invalid(
            format!("{path}[{MIRROR_ANNOTATION}]"),
            value_of(MIRROR_ANNOTATION),
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    let tolerations = value_of(TOLERATIONS_ANNOTATION);
    if !tolerations.is_empty() {
        match serde_json::from_str::<Value>(tolerations) {
            Ok(Value::Array(list)) => errs.extend(validate_tolerations(
                &list,
                &format!("{path}.{TOLERATIONS_ANNOTATION}"),
            )),
            Ok(Value::Null) => {}
            // Go's decoder names the kind it could not put into []core.Toleration; syntax
            // errors carry serde's wording, not encoding/json's.
            Ok(other) => errs.push(FieldError::invalid(
                path,
                TOLERATIONS_ANNOTATION,
                format!(
                    "json: cannot unmarshal {} into Go value of type []core.Toleration",
                    unmarshal_kind(&other)
                ),
            )),
            Err(e) => errs.push(FieldError::invalid(
                path,
                TOLERATIONS_ANNOTATION,
                e.to_string(),
            )),
        }
    }
    if !allow_invalid_cost && !deletion_cost_is_valid(Some(map)) {
        errs.push(FieldError::invalid(
            format!("{path}[{DELETION_COST_ANNOTATION}]"),
            value_of(DELETION_COST_ANNOTATION),
            "must be a 32bit integer",
        ));
    }
    // Seccomp annotations are reported under a child path (`annotations.<key>`), AppArmor ones
    // under a key path (`annotations[<key>]`), as upstream does.
    for (key, value) in map {
        let value = value.as_str().unwrap_or_default();
        if key == SECCOMP_POD_ANNOTATION || key.starts_with(SECCOMP_CONTAINER_PREFIX) {
            errs.extend(seccomp_annotation_errors(value, &format!("{path}.{key}")));
        }
        if let Some(container) = key.strip_prefix(APPARMOR_PREFIX) {
            let field = format!("{path}[{key}]");
            if !all_containers(spec).any(|(_, _, c)| text(c, "name") == container) {
                errs.push(FieldError::invalid(
                    &field,
                    container,
                    "container not found",
                ));
            }
            let known = matches!(value, "" | "runtime/default" | "unconfined");
            if !known && !value.starts_with("localhost/") {
                errs.push(FieldError::invalid(
                    field,
                    value,
                    format!("invalid AppArmor profile name: {}", Value::from(value)),
                ));
            }
        }
    }
    errs
}

/// Whether a stored pod's deletion cost is invalid, so that its updates may keep it (upstream's
/// AllowInvalidPodDeletionCost option).
pub fn had_invalid_deletion_cost(old: &Value) -> bool {
    !deletion_cost_is_valid(annotations(old))
}

/// Upstream's ValidatePodSpecificAnnotationUpdates: AppArmor and mirror-pod annotations are
/// fixed once the pod exists, then the annotations are validated again (upstream's update
/// path runs ValidatePodSpecificAnnotations twice, so its errors appear twice, as here).
pub fn validate_pod_annotation_updates(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = serde_json::Map::new();
    let new_map = annotations(new).unwrap_or(&empty);
    let old_map = annotations(old).unwrap_or(&empty);
    for (key, old_value) in old_map {
        if new_map.get(key) == Some(old_value) {
            continue;
        }
        let field = || format!("metadata.annotations[{key}]");
        if key.starts_with(APPARMOR_PREFIX) {
            errs.push(FieldError::forbidden(
                field(),
                "may not remove or update AppArmor annotations",
            ));
        }
        if key == MIRROR_ANNOTATION {
            errs.push(FieldError::forbidden(
                field(),
                "may not remove or update mirror pod annotation",
            ));
        }
    }
    for key in new_map.keys().filter(|k| !old_map.contains_key(*k)) {
        let field = || format!("metadata.annotations[{key}]");
        if key.starts_with(APPARMOR_PREFIX) {
            errs.push(FieldError::forbidden(
                field(),
                "may not add AppArmor annotations",
            ));
        }
        if key == MIRROR_ANNOTATION {
            errs.push(FieldError::forbidden(
                field(),
                "may not add mirror pod annotation",
            ));
        }
    }
    errs.extend(validate_pod_annotations(
        new,
        had_invalid_deletion_cost(old),
    ));
    errs
}

/// The rules of ValidatePodCreate beyond the spec: a node name only without scheduling gates,
/// and deprecated seccomp/AppArmor annotations that agree with the fields.
pub fn validate_pod_create(pod: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    if !text(spec, "nodeName").is_empty() && !items(spec, "schedulingGates").is_empty() {
        errs.push(FieldError::forbidden(
            "spec.nodeName",
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    let Some(map) = annotations(pod) else {
        return errs;
    };
    let annotation = |key: &str| map.get(key).and_then(Value::as_str);
    // Seccomp: the pod-level field against the pod annotation, each container's own field
    // against its annotation.
    if let (Some(field), Some(value)) = (
        profile_at(spec, "seccompProfile"),
        annotation(SECCOMP_POD_ANNOTATION),
    ) {
        errs.extend(profile_mismatch(
            "seccomp",
            value,
            field,
            "spec.securityContext.seccompProfile",
        ));
    }
    for (list, i, c) in all_containers(spec) {
        let Some(field) = profile_at(c, "seccompProfile") else {
            continue;
        };
        let key = format!("{SECCOMP_CONTAINER_PREFIX}{}", text(c, "name"));
        if let Some(value) = annotation(&key) {
            let at = format!("spec.{list}[{i}].securityContext.seccompProfile");
            errs.extend(profile_mismatch("seccomp", value, field, &at));
        }
    }
    // AppArmor (not for Windows pods): the container's field, or else the pod's, against the
    // container's annotation.
    if text(spec.get("os").unwrap_or(&Value::Null), "name") != "windows" {
        let pod_profile = profile_at(spec, "appArmorProfile");
        for (list, i, c) in all_containers(spec) {
            let Some(field) = profile_at(c, "appArmorProfile").or(pod_profile) else {
                continue;
            };
            let key = format!("{APPARMOR_PREFIX}{}", text(c, "name"));
            if let Some(value) = annotation(&key) {
                let at = format!("spec.{list}[{i}].securityContext.appArmorProfile");
                errs.extend(profile_mismatch("apparmor", value, field, &at));
            }
        }
    }
    errs
}

/// A profile field of a pod's or container's securityContext.
fn profile_at<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get("securityContext").and_then(|s| set(s, key))
}

/// Upstream's validateSeccompAnnotationsAndFieldsMatch and its AppArmor twin: the annotation
/// `value` must name the profile the `field` at `at` sets.
fn profile_mismatch(kind: &str, value: &str, field: &Value, at: &str) -> Option<FieldError> {
    let type_error = || {
        FieldError::forbidden(
            format!("{at}.type"),
            format!("{kind} type in annotation and field must match"),
        )
    };
    let runtime_default: &[&str] = if kind == "seccomp" {
        &["runtime/default", "docker/default"]
    } else {
        &["runtime/default"]
    };
    match text(field, "type") {
        "Unconfined" => (value != "unconfined").then(type_error),
        "RuntimeDefault" => (!runtime_default.contains(&value)).then(type_error),
        "Localhost" => match value.strip_prefix("localhost/") {
            None => Some(type_error()),
            Some(name) => (field.get("localhostProfile").and_then(Value::as_str) != Some(name))
                .then(|| {
                    FieldError::forbidden(
                        format!("{at}.localhostProfile"),
                        format!("{kind} profile in annotation and field must match"),
                    )
                }),
        },
        _ => None,
    }
}

/// The AppArmor annotation value of a profile field (upstream's appArmorAnnotationForField).
fn app_armor_annotation_for(profile: &Value) -> Option<String> {
    match text(profile, "type") {
        "Unconfined" => Some("unconfined".into()),
        "RuntimeDefault" => Some("runtime/default".into()),
        "Localhost" => profile
            .get("localhostProfile")
            .and_then(Value::as_str)
            .map(|p| format!("localhost/{p}")),
        _ => None,
    }
}

/// The profile field an AppArmor annotation names, when it names a valid one (upstream's
/// apparmorFieldForAnnotation, then ValidateAppArmorProfileField).
fn app_armor_field_for(annotation: &str) -> Option<Value> {
    match annotation {
        "unconfined" => Some(serde_json::json!({ "type": "Unconfined" })),
        "runtime/default" => Some(serde_json::json!({ "type": "RuntimeDefault" })),
        _ => {
            let name = annotation.strip_prefix("localhost/")?;
            let valid = !name.is_empty() && name.trim() == name && name.len() <= 4095;
            valid.then(|| serde_json::json!({ "type": "Localhost", "localhostProfile": name }))
        }
    }
}

fn same_profile(a: &Value, b: Option<&Value>) -> bool {
    b.is_some_and(|b| {
        text(a, "type") == text(b, "type")
            && a.get("localhostProfile").filter(|v| !v.is_null())
                == b.get("localhostProfile").filter(|v| !v.is_null())
    })
}

/// Whether a pod has anything for the AppArmor version-skew sync to look at; most pods do not,
/// and they cost one pass over their annotation keys and containers.
fn uses_app_armor(pod: &Value, spec: &Value) -> bool {
    let has_field = |v: &Value| profile_at(v, "appArmorProfile").is_some();
    has_field(spec)
        || all_containers(spec).any(|(_, _, c)| has_field(c))
        || annotations(pod).is_some_and(|a| a.keys().any(|k| k.starts_with(APPARMOR_PREFIX)))
}

/// Upstream 1.33's applyAppArmorVersionSkew (PrepareForCreate of Pods, not Windows pods): a
/// container without its annotation gets one from its own or the pod's profile field; a
/// container with an annotation but no field gets the field it names, unless that is the pod's
/// profile already.
pub fn apply_app_armor_version_skew(pod: &mut Value) {
    let Some(spec) = pod.get("spec") else {
        return;
    };
    if text(spec.get("os").unwrap_or(&Value::Null), "name") == "windows"
        || !uses_app_armor(pod, spec)
    {
        return;
    }
    let pod_profile = profile_at(spec, "appArmorProfile");
    let map = annotations(pod);
    let mut new_annotations = Vec::new();
    let mut new_fields = Vec::new();
    for (list, i, c) in all_containers(spec) {
        let key = format!("{APPARMOR_PREFIX}{}", text(c, "name"));
        let own = profile_at(c, "appArmorProfile");
        match map.and_then(|m| m.get(&key)) {
            None => {
                if let Some(value) = own.or(pod_profile).and_then(app_armor_annotation_for) {
                    new_annotations.push((key, value));
                }
            }
            Some(annotation) if own.is_none() => {
                let field = annotation.as_str().and_then(app_armor_field_for);
                if let Some(field) = field.filter(|f| !same_profile(f, pod_profile)) {
                    new_fields.push((list, i, field));
                }
            }
            Some(_) => {}
        }
    }
    for (list, i, field) in new_fields {
        let Some(c) = pod.pointer_mut(&format!("/spec/{list}/{i}")) else {
            continue;
        };
        // Only into an object (or a missing context): a malformed one is left to validation.
        if c.get("securityContext").is_none_or(Value::is_null) {
            c["securityContext"] = Value::Object(serde_json::Map::new());
        }
        if let Some(sc) = c.get_mut("securityContext").and_then(Value::as_object_mut) {
            sc.insert("appArmorProfile".into(), field);
        }
    }
    if new_annotations.is_empty() {
        return;
    }
    let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let slot = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if slot.is_null() {
        *slot = Value::Object(serde_json::Map::new());
    }
    if let Some(map) = slot.as_object_mut() {
        for (key, value) in new_annotations {
            map.insert(key, Value::String(value));
        }
    }
}

/// The deprecation warnings of the AppArmor sync that can be told from the created pod: an
/// annotation naming no valid profile on a container without a field. (Upstream also warns when
/// the sync copied an annotation into a field; after the sync that looks the same as a pod
/// that set both, so that warning is not given.)
pub fn app_armor_warnings(pod: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let (Some(spec), Some(map)) = (pod.get("spec"), annotations(pod)) else {
        return out;
    };
    if text(spec.get("os").unwrap_or(&Value::Null), "name") == "windows" {
        return out;
    }
    for (_, _, c) in all_containers(spec) {
        let key = format!("{APPARMOR_PREFIX}{}", text(c, "name"));
        let Some(annotation) = map.get(&key) else {
            continue;
        };
        let own = profile_at(c, "appArmorProfile");
        let named = annotation.as_str().and_then(app_armor_field_for);
        if own.is_none() && named.is_none() {
            out.push(format!(
                "metadata.annotations[{key}]: deprecated since v1.30; use the \"appArmorProfile\" field instead"
            ));
        }
    }
    out
}

// Upstream's ValidatePodStatusUpdate: what a status write (kubelet, scheduler) may carry.

/// Go's `%#v` of a PodIP/HostIP struct (`core.PodIP{IP:"10.0.0.1"}`).
fn go_ip_struct(kind: &str, ip: &str) -> String {
    format!("core.{kind}{{IP:{}}}", Value::from(ip))
}

/// Upstream's validatePodIPs / validateHostIPs over `status.<list>` entries (`{ip: ...}`):
/// valid addresses, at most one per family, no duplicates.
fn status_ip_errors(ips: &[Value], list: &str, kind: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let field = format!("status.{list}");
    let addrs: Vec<&str> = ips.iter().map(|p| text(p, "ip")).collect();
    // Upstream reports a bad address at the entry (`status.podIPs[0]`), not at its `ip`.
    for (i, ip) in addrs.iter().enumerate() {
        let msgs = k1s_apimachinery::ip::ip_errors(ip);
        errs.extend(invalid_each(&format!("{field}[{i}]"), ip, msgs));
    }
    if addrs.len() < 2 {
        return errs;
    }
    let mut seen = HashSet::new();
    let mut duplicates = Vec::new();
    for (i, ip) in addrs.iter().enumerate() {
        if !seen.insert(*ip) {
            duplicates.push(FieldError::new(
                FieldErrorType::Duplicate,
                format!("{field}[{i}]"),
                BadValue::Raw(go_ip_struct(kind, ip)),
                "",
            ));
        }
    }
    let parsed: Vec<Option<std::net::IpAddr>> = addrs.iter().map(|ip| ip.parse().ok()).collect();
    let v4 = parsed.iter().flatten().filter(|ip| ip.is_ipv4()).count();
    let v6 = parsed.iter().flatten().filter(|ip| ip.is_ipv6()).count();
    let dual_stack = parsed.iter().all(Option::is_some) && v4 > 0 && v6 > 0;
    let family_error = || {
        let all: Vec<String> = addrs.iter().map(|ip| go_ip_struct(kind, ip)).collect();
        FieldError::invalid_raw(
            &field,
            format!("[]core.{kind}{{{}}}", all.join(", ")),
            "may specify no more than one IP for each IP family",
        )
    };
    // Pod IPs are checked for families before duplicates, host IPs after, as upstream does.
    if kind == "PodIP" {
        if !dual_stack || addrs.len() > 2 {
            errs.push(family_error());
        }
        errs.extend(duplicates);
    } else {
        errs.extend(duplicates);
        if !dual_stack || addrs.len() > 2 {
            errs.push(family_error());
        }
    }
    errs
}

/// Upstream's ValidateContainerStateTransition: without restartPolicy Always, a terminated
/// container stays terminated (a failed one may restart under OnFailure); restartable init
/// containers may always restart.
fn state_transition_errors(
    new: &[Value],
    old: &[Value],
    field: &str,
    restart_policy: &str,
    sidecars: &HashSet<&str>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if restart_policy == "Always" {
        return errs;
    }
    let terminated = |s: &Value| s.pointer("/state/terminated").is_some_and(|t| !t.is_null());
    for (i, o) in old.iter().enumerate() {
        if !terminated(o) {
            continue;
        }
        let exit_code = o
            .pointer("/state/terminated/exitCode")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if exit_code != 0 && restart_policy == "OnFailure" {
            continue;
        }
        let name = text(o, "name");
        if sidecars.contains(name) {
            continue;
        }
        for n in new {
            if text(n, "name") == name && !terminated(n) {
                errs.push(FieldError::forbidden(
                    format!("{field}[{i}].state"),
                    "may not be transitioned to non-terminated state",
                ));
            }
        }
    }
    errs
}

/// Upstream's validateContainerStatusUsers (the path skips `user`, as upstream's does).
fn status_user_errors(statuses: &[Value], field: &str, os: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let id_range = |v: i64| (0..=i64::from(i32::MAX)).contains(&v);
    const RANGE: &str = "must be between 0 and 2147483647, inclusive";
    for (i, s) in statuses.iter().enumerate() {
        let Some(linux) = s.get("user").and_then(|u| set(u, "linux")) else {
            continue;
        };
        let at = format!("{field}[{i}].linux");
        if os == "windows" {
            errs.push(FieldError::forbidden(at, "cannot be set for a windows pod"));
            continue;
        }
        for key in ["uid", "gid"] {
            let id = linux.get(key).and_then(Value::as_i64).unwrap_or(0);
            if !id_range(id) {
                errs.push(FieldError::invalid(format!("{at}.{key}"), id, RANGE));
            }
        }
        for (g, gid) in items(linux, "supplementalGroups").iter().enumerate() {
            let gid = gid.as_i64().unwrap_or(0);
            if !id_range(gid) {
                errs.push(FieldError::invalid(
                    format!("{at}.supplementalGroups[{g}]"),
                    gid,
                    RANGE,
                ));
            }
        }
    }
    errs
}

/// Upstream's validateContainerStatusAllocatedResourcesStatus (`containers` = None: ephemeral
/// containers, which may report none).
fn allocated_resources_status_errors(
    statuses: &[Value],
    field: &str,
    containers: Option<&[Value]>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, s) in statuses.iter().enumerate() {
        let allocated = items(s, "allocatedResourcesStatus");
        let at = format!("{field}[{i}].allocatedResourcesStatus");
        let Some(containers) = containers else {
            if !allocated.is_empty() {
                errs.push(FieldError::forbidden(
                    at,
                    "must not be specified in container status",
                ));
            }
            continue;
        };
        let container = containers
            .iter()
            .find(|c| text(c, "name") == text(s, "name"));
        for (j, a) in allocated.iter().enumerate() {
            let name = text(a, "name");
            // A status of a container the spec lacks is not checked (upstream issue 124915).
            if let Some(c) = container {
                let resources = c.get("resources").unwrap_or(&Value::Null);
                let (found, msg) = if name.starts_with("claim:") {
                    let found = items(resources, "claims").iter().any(|claim| {
                        let request = text(claim, "request");
                        let mut n = format!("claim:{}", text(claim, "name"));
                        if !request.is_empty() {
                            n = format!("{n}/{request}");
                        }
                        n == name
                    });
                    (
                        found,
                        "must match one of the container's resource claims in a format 'claim:<claimName>/<request>' or 'claim:<claimName>' if request is empty",
                    )
                } else {
                    let requests = resources.get("requests").and_then(Value::as_object);
                    (
                        requests.is_some_and(|r| r.contains_key(name)),
                        "must match one of the container's resource requests",
                    )
                };
                if !found {
                    errs.push(FieldError::invalid(format!("{at}[{j}].name"), name, msg));
                }
            }
            let mut ids = HashSet::new();
            for (k, r) in items(a, "resources").iter().enumerate() {
                const HEALTH: [&str; 3] = ["Healthy", "Unhealthy", "Unknown"];
                let health = text(r, "health");
                if !HEALTH.contains(&health) {
                    errs.push(FieldError::not_supported(
                        format!("{at}[{j}].resources[{k}].health"),
                        health,
                        &HEALTH,
                    ));
                }
                let id = text(r, "resourceID");
                if !ids.insert(id) {
                    errs.push(FieldError::duplicate(
                        format!("{at}[{j}].resources[{k}].resourceID"),
                        id,
                    ));
                }
            }
        }
    }
    errs
}

/// Upstream's ValidatePodStatusUpdate, after the registry kept the old spec and metadata: the
/// pod's annotation rules, condition types, the nominated node, an immutable QoS class,
/// container state transitions, resource claim statuses, pod and host IPs, container users and
/// allocated resource health.
pub fn validate_pod_status_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = validate_pod_annotation_updates(new, old);
    let status = new.get("status").unwrap_or(&Value::Null);
    let old_status = old.get("status").unwrap_or(&Value::Null);
    let spec = new.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    // Upstream reports these under `metadata.conditions[i].Type`.
    const SYSTEM_CONDITIONS: [&str; 3] = ["PodScheduled", "Ready", "Initialized"];
    for (i, c) in items(status, "conditions").iter().enumerate() {
        let ty = text(c, "type");
        if !SYSTEM_CONDITIONS.contains(&ty) {
            let at = format!("metadata.conditions[{i}].Type");
            errs.extend(invalid_each(&at, ty, is_qualified_name(ty)));
        }
    }
    if text(spec, "nodeName") != text(old_spec, "nodeName") {
        errs.push(FieldError::forbidden(
            "status.nodeName",
            "may not be changed directly",
        ));
    }
    let nominated = text(status, "nominatedNodeName");
    if nominated != text(old_status, "nominatedNodeName") && !nominated.is_empty() {
        errs.extend(invalid_each(
            "status.nominatedNodeName",
            nominated,
            is_dns1123_subdomain(nominated),
        ));
    }
    if status.get("qosClass") != old_status.get("qosClass") {
        errs.push(FieldError::invalid(
            "status.qosClass",
            status.get("qosClass").cloned().unwrap_or(Value::Null),
            "field is immutable",
        ));
    }
    let restart_policy = text(old_spec, "restartPolicy");
    let none = HashSet::new();
    errs.extend(state_transition_errors(
        items(status, "containerStatuses"),
        items(old_status, "containerStatuses"),
        "status.containerStatuses",
        restart_policy,
        &none,
    ));
    let sidecars: HashSet<&str> = items(old_spec, "initContainers")
        .iter()
        .filter(|c| text(c, "restartPolicy") == "Always")
        .map(|c| text(c, "name"))
        .collect();
    errs.extend(state_transition_errors(
        items(status, "initContainerStatuses"),
        items(old_status, "initContainerStatuses"),
        "status.initContainerStatuses",
        restart_policy,
        &sidecars,
    ));
    // The kubelet never restarts ephemeral containers.
    errs.extend(state_transition_errors(
        items(status, "ephemeralContainerStatuses"),
        items(old_status, "ephemeralContainerStatuses"),
        "status.ephemeralContainerStatuses",
        "Never",
        &none,
    ));
    let claims: Vec<&str> = items(spec, "resourceClaims")
        .iter()
        .map(|c| text(c, "name"))
        .collect();
    let mut claim_names = HashSet::new();
    for (i, s) in items(status, "resourceClaimStatuses").iter().enumerate() {
        let name = text(s, "name");
        let at = format!("status.resourceClaimStatuses[{i}].name");
        if !claims.contains(&name) {
            errs.push(FieldError::invalid(
                &at,
                name,
                "must match the name of an entry in `spec.resourceClaims`",
            ));
        }
        if !claim_names.insert(name) {
            errs.push(FieldError::duplicate(&at, name));
        }
        if let Some(claim) = s.get("resourceClaimName").and_then(Value::as_str) {
            errs.extend(invalid_each(&at, claim, is_dns1123_subdomain(claim)));
        }
    }
    errs.extend(status_ip_errors(items(status, "podIPs"), "podIPs", "PodIP"));
    let host_ips = items(status, "hostIPs");
    if let Some(first) = host_ips.first()
        && text(first, "ip") != text(status, "hostIP")
    {
        errs.push(FieldError::invalid(
            "status.hostIPs[0].ip",
            text(first, "ip"),
            "must be equal to `hostIP`",
        ));
    }
    errs.extend(status_ip_errors(host_ips, "hostIPs", "HostIP"));
    let os = spec
        .pointer("/os/name")
        .and_then(Value::as_str)
        .unwrap_or("linux");
    for list in [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ] {
        let field = format!("status.{list}");
        errs.extend(status_user_errors(items(status, list), &field, os));
    }
    errs.extend(allocated_resources_status_errors(
        items(status, "containerStatuses"),
        "status.containerStatuses",
        Some(items(spec, "containers")),
    ));
    errs.extend(allocated_resources_status_errors(
        items(status, "initContainerStatuses"),
        "status.initContainerStatuses",
        Some(items(spec, "initContainers")),
    ));
    errs.extend(allocated_resources_status_errors(
        items(status, "ephemeralContainerStatuses"),
        "status.ephemeralContainerStatuses",
        None,
    ));
    errs
}

/// Upstream's podStatusStrategy.PrepareForUpdate backfill: a status write without a QoS class
/// keeps the one set at create (older kubelets dropped it).
pub fn keep_qos_class(new: &mut Value, old: &Value) {
    let missing = new
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if let (true, Some(qos)) = (missing, old.pointer("/status/qosClass"))
        && let Some(status) = new.get_mut("status").and_then(Value::as_object_mut)
    {
        status.insert("qosClass".into(), qos.clone());
    }
}

/// Upstream's validateMountPropagation and validateMountRecursiveReadOnly of a volume mount of
/// container `c`; upstream reports both at the list's path (`volumeMounts.mountPropagation`).
fn mount_propagation_errors(c: &Value, m: &Value, list: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let propagation = m.get("mountPropagation").and_then(Value::as_str);
    if let Some(mode) = propagation {
        let field = format!("{list}.mountPropagation");
        const MODES: [&str; 3] = ["Bidirectional", "HostToContainer", "None"];
        if !MODES.contains(&mode) {
            errs.push(FieldError::not_supported(&field, mode, &MODES));
        }
        let privileged = c.pointer("/securityContext/privileged") == Some(&Value::Bool(true));
        if mode == "Bidirectional" && !privileged {
            errs.push(FieldError::forbidden(
                field,
                "Bidirectional mount propagation is available only to privileged containers",
            ));
        }
    }
    let Some(rro) = m.get("recursiveReadOnly").and_then(Value::as_str) else {
        return errs;
    };
    let field = format!("{list}.recursiveReadOnly");
    match rro {
        "Disabled" => {}
        "Enabled" | "IfPossible" => {
            if m.get("readOnly") != Some(&Value::Bool(true)) {
                errs.push(FieldError::forbidden(
                    &field,
                    "may only be specified when readOnly is true",
                ));
            }
            if propagation.is_some_and(|p| p != "None") {
                errs.push(FieldError::forbidden(
                    &field,
                    "may only be specified when mountPropagation is None or not specified",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            field,
            other,
            &["Disabled", "Enabled", "IfPossible"],
        )),
    }
    errs
}

/// The volume rules upstream applies only to a Pod (its metadata at hand): a projected
/// service-account token needs a service account, and an ephemeral volume's claim, named
/// `<pod>-<volume>`, must be a valid name that no other volume claims directly.
pub fn validate_pod_volumes(pod: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let volumes = items(spec, "volumes");
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let created: Vec<String> = volumes
        .iter()
        .filter(|v| set(v, "ephemeral").is_some())
        .map(|v| format!("{pod_name}-{}", text(v, "name")))
        .collect();
    for (i, v) in volumes.iter().enumerate() {
        let at = format!("spec.volumes[{i}]");
        let name = text(v, "name");
        if set(v, "ephemeral").is_some() && !pod_name.is_empty() && !name.is_empty() {
            let claim = format!("{pod_name}-{name}");
            for msg in is_dns1123_subdomain(&claim) {
                errs.push(FieldError::invalid(
                    format!("{at}.name"),
                    name,
                    format!("PVC name {}: {msg}", Value::from(claim.as_str())),
                ));
            }
        }
        if let Some(pvc) = set(v, "persistentVolumeClaim") {
            let claim = text(pvc, "claimName");
            if !pod_name.is_empty() && created.iter().any(|c| c == claim) {
                errs.push(FieldError::invalid(
                    format!("{at}.persistentVolumeClaim.claimName"),
                    claim,
                    "must not reference a PVC that gets created for an ephemeral volume",
                ));
            }
        }
        if text(spec, "serviceAccountName").is_empty()
            && let Some(projected) = set(v, "projected")
        {
            for (j, source) in items(projected, "sources").iter().enumerate() {
                if set(source, "serviceAccountToken").is_some() {
                    errs.push(FieldError::forbidden(
                        format!("{at}.projected.sources[{j}].serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    errs
}

/// Upstream's dropDisabledPodLevelResourcesFields with PodLevelResources off (alpha in 1.33):
/// a pod-level `spec.resources` is dropped unless the stored pod already had one.
pub fn drop_pod_level_resources(new: &mut Value, old: Option<&Value>) {
    let in_use = old
        .and_then(|o| o.pointer("/spec/resources"))
        .is_some_and(|r| !r.is_null());
    if !in_use && let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("resources");
    }
}
