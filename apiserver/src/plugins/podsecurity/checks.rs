//! The Pod Security Standards as upstream's pod-security-admission v0.33 checks them: levels,
//! policy versions, each check's versions and its exact forbidden reason and detail.
//!
//! A pod is its metadata and spec as core/v1 JSON; an absent or null field is Go's nil.

use std::collections::BTreeSet;
use std::fmt;

use k1s_apimachinery::gofmt::quote as go_quote;
use serde_json::Value;

/// A Pod Security Standards level, least strict first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    /// A label value; anything else fails as upstream's `ParseLevel`.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A policy version: `v1.N` or `latest` (newer than any numbered version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V1(u64),
    Latest,
}

impl Version {
    /// `latest` or `v1.N` (no leading zeros); anything else fails as upstream's `ParseVersion`.
    pub fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version::Latest);
        }
        let minor = s.strip_prefix("v1.")?;
        let well_formed = !minor.is_empty()
            && minor.bytes().all(|b| b.is_ascii_digit())
            && (minor == "0" || !minor.starts_with('0'));
        if !well_formed {
            return None;
        }
        // Go's Atoi into an int: a number past i64 fails.
        minor
            .parse::<i64>()
            .ok()
            .and_then(|m| u64::try_from(m).ok())
            .map(Version::V1)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::V1(minor) => write!(f, "v1.{minor}"),
            Version::Latest => f.write_str("latest"),
        }
    }
}

/// A level at a version, printed as upstream does: `restricted:latest`, `baseline:v1.25`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl LevelVersion {
    pub const PRIVILEGED_LATEST: LevelVersion = LevelVersion {
        level: Level::Privileged,
        version: Version::Latest,
    };
}

impl fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

/// One failed check: a short reason and an optional detail naming what failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub reason: &'static str,
    pub detail: String,
}

/// The failed checks of one evaluation, in the registry's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome(pub Vec<Violation>);

impl Outcome {
    pub fn allowed(&self) -> bool {
        self.0.is_empty()
    }

    /// The reasons only (for the pods of a namespace): `host ports, privileged`.
    pub fn reasons(&self) -> String {
        self.0
            .iter()
            .map(|v| v.reason)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Reasons with their details in parentheses (for one object).
    pub fn details(&self) -> String {
        self.0
            .iter()
            .map(|v| {
                if v.detail.is_empty() {
                    v.reason.to_string()
                } else {
                    format!("{} ({})", v.reason, v.detail)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The part of a pod (or pod template) the checks read.
#[derive(Clone, Copy)]
pub struct PodView<'a> {
    pub metadata: &'a Value,
    pub spec: &'a Value,
}

type CheckFn = fn(PodView<'_>) -> Option<Violation>;

/// One version of a check: from `min` (policy v1.min) on, until the next entry's `min`.
struct Versioned {
    min: u64,
    check: CheckFn,
    /// Baseline checks this restricted check replaces at the restricted level.
    overrides: &'static [&'static str],
}

struct Check {
    id: &'static str,
    level: Level,
    versions: &'static [Versioned],
}

const fn v(min: u64, check: CheckFn) -> Versioned {
    Versioned {
        min,
        check,
        overrides: &[],
    }
}

const fn v_over(min: u64, check: CheckFn, overrides: &'static [&'static str]) -> Versioned {
    Versioned {
        min,
        check,
        overrides,
    }
}

/// Every check, baseline then restricted, each group sorted by ID (byte order), which is the
/// order upstream reports violations in.
static CHECKS: &[Check] = &[
    Check {
        id: "appArmorProfile",
        level: Level::Baseline,
        versions: &[v(0, app_armor_profile)],
    },
    Check {
        id: "capabilities_baseline",
        level: Level::Baseline,
        versions: &[v(0, capabilities_baseline)],
    },
    Check {
        id: "hostNamespaces",
        level: Level::Baseline,
        versions: &[v(0, host_namespaces)],
    },
    Check {
        id: "hostPathVolumes",
        level: Level::Baseline,
        versions: &[v(0, host_path_volumes)],
    },
    Check {
        id: "hostPorts",
        level: Level::Baseline,
        versions: &[v(0, host_ports)],
    },
    Check {
        id: "privileged",
        level: Level::Baseline,
        versions: &[v(0, privileged)],
    },
    Check {
        id: "procMount",
        level: Level::Baseline,
        versions: &[v(0, proc_mount)],
    },
    Check {
        id: "seLinuxOptions",
        level: Level::Baseline,
        versions: &[v(0, se_linux_options_1_0), v(31, se_linux_options_1_31)],
    },
    Check {
        id: "seccompProfile_baseline",
        level: Level::Baseline,
        versions: &[
            v(0, seccomp_profile_baseline_1_0),
            v(19, seccomp_profile_baseline_1_19),
        ],
    },
    Check {
        id: "sysctls",
        level: Level::Baseline,
        versions: &[
            v(0, sysctls_1_0),
            v(27, sysctls_1_27),
            v(29, sysctls_1_29),
            v(32, sysctls_1_32),
        ],
    },
    Check {
        id: "windowsHostProcess",
        level: Level::Baseline,
        versions: &[v(0, windows_host_process)],
    },
    Check {
        id: "allowPrivilegeEscalation",
        level: Level::Restricted,
        versions: &[
            v(8, allow_privilege_escalation_1_8),
            v(25, allow_privilege_escalation_1_25),
        ],
    },
    Check {
        id: "capabilities_restricted",
        level: Level::Restricted,
        versions: &[
            v_over(22, capabilities_restricted_1_22, &["capabilities_baseline"]),
            v_over(25, capabilities_restricted_1_25, &["capabilities_baseline"]),
        ],
    },
    Check {
        id: "restrictedVolumes",
        level: Level::Restricted,
        versions: &[v_over(0, restricted_volumes, &["hostPathVolumes"])],
    },
    Check {
        id: "runAsNonRoot",
        level: Level::Restricted,
        versions: &[v(0, run_as_non_root)],
    },
    Check {
        id: "runAsUser",
        level: Level::Restricted,
        versions: &[v(23, run_as_user)],
    },
    Check {
        id: "seccompProfile_restricted",
        level: Level::Restricted,
        versions: &[
            v_over(
                19,
                seccomp_profile_restricted_1_19,
                &["seccompProfile_baseline"],
            ),
            v_over(
                25,
                seccomp_profile_restricted_1_25,
                &["seccompProfile_baseline"],
            ),
        ],
    },
];

/// The newest version any check has: later versions (and `latest`) evaluate as this one.
fn max_version() -> u64 {
    CHECKS
        .iter()
        .filter_map(|c| c.versions.last())
        .map(|v| v.min)
        .max()
        .unwrap_or(0)
}

/// The version of a check in force at policy version v1.`minor`, if the check exists there.
fn at(check: &Check, minor: u64) -> Option<&Versioned> {
    check.versions.iter().rev().find(|v| v.min <= minor)
}

/// Evaluates a pod against a level and version, as upstream's check registry does.
pub fn evaluate(lv: LevelVersion, pod: PodView<'_>) -> Outcome {
    if lv.level == Level::Privileged {
        return Outcome::default();
    }
    let newest = max_version();
    let minor = match lv.version {
        Version::V1(m) if m <= newest => m,
        _ => newest,
    };
    let restricted = lv.level == Level::Restricted;
    let overridden: Vec<&str> = if restricted {
        CHECKS
            .iter()
            .filter(|c| c.level == Level::Restricted)
            .filter_map(|c| at(c, minor))
            .flat_map(|v| v.overrides.iter().copied())
            .collect()
    } else {
        Vec::new()
    };
    let violations = CHECKS
        .iter()
        .filter(|c| c.level == Level::Baseline || restricted)
        .filter(|c| !overridden.contains(&c.id))
        .filter_map(|c| at(c, minor))
        .filter_map(|v| (v.check)(pod))
        .collect();
    Outcome(violations)
}

// ---- reading the JSON -------------------------------------------------------------------

fn field<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn path<'a>(obj: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(obj, |cur, k| field(cur, k))
}

fn boolean(obj: &Value, keys: &[&str]) -> Option<bool> {
    path(obj, keys).and_then(Value::as_bool)
}

fn string<'a>(obj: &'a Value, keys: &[&str]) -> &'a str {
    path(obj, keys).and_then(Value::as_str).unwrap_or("")
}

fn list<'a>(obj: &'a Value, keys: &[&str]) -> &'a [Value] {
    path(obj, keys)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn strings<'a>(obj: &'a Value, keys: &[&str]) -> impl Iterator<Item = &'a str> {
    list(obj, keys).iter().map(|s| s.as_str().unwrap_or(""))
}

/// Init containers, containers, then ephemeral containers, as upstream visits them.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |f| list(spec, &[f]).iter())
}

fn name(container: &Value) -> &str {
    string(container, &["name"])
}

fn annotations(metadata: &Value) -> impl Iterator<Item = (&str, &str)> {
    field(metadata, "annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
}

fn annotation<'a>(metadata: &'a Value, key: &str) -> Option<&'a str> {
    path(metadata, &["annotations", key]).map(|v| v.as_str().unwrap_or(""))
}

fn is_windows(spec: &Value) -> bool {
    string(spec, &["os", "name"]) == "windows"
}

// ---- message helpers ----------------------------------------------------------------------

fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items
        .into_iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn pluralize<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase(names: &[&str]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

fn violation(reason: &'static str, detail: String) -> Option<Violation> {
    Some(Violation { reason, detail })
}

// ---- baseline -----------------------------------------------------------------------------

const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn app_armor_profile(pod: PodView<'_>) -> Option<Violation> {
    let allowed_type = |t: &str| matches!(t, "RuntimeDefault" | "Localhost");
    let mut setters: Vec<String> = Vec::new();
    let mut bad_values: BTreeSet<&str> = BTreeSet::new();
    if let Some(profile) = path(pod.spec, &["securityContext", "appArmorProfile"]) {
        let t = string(profile, &["type"]);
        if !allowed_type(t) {
            setters.push("pod".into());
            bad_values.insert(t);
        }
    }
    let mut bad_containers = Vec::new();
    for c in containers(pod.spec) {
        if let Some(profile) = path(c, &["securityContext", "appArmorProfile"]) {
            let t = string(profile, &["type"]);
            if !allowed_type(t) {
                bad_containers.push(name(c));
                bad_values.insert(t);
            }
        }
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }
    let mut forbidden: Vec<String> = annotations(pod.metadata)
        .filter(|(k, v)| {
            k.starts_with(APPARMOR_ANNOTATION_PREFIX)
                && !(v.is_empty() || *v == "runtime/default" || v.starts_with("localhost/"))
        })
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect();
    let mut values: Vec<String> = bad_values.into_iter().map(str::to_string).collect();
    if !forbidden.is_empty() {
        forbidden.sort();
        setters.push(pluralize("annotation", "annotations", forbidden.len()).into());
        values.extend(forbidden);
    }
    if setters.is_empty() {
        return None;
    }
    violation(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    )
}

const DEFAULT_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn capabilities_baseline(pod: PodView<'_>) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    let mut non_default: BTreeSet<&str> = BTreeSet::new();
    for c in containers(pod.spec) {
        let mut valid = true;
        for cap in strings(c, &["securityContext", "capabilities", "add"]) {
            if !DEFAULT_CAPABILITIES.contains(&cap) {
                valid = false;
                non_default.insert(cap);
            }
        }
        if !valid {
            bad_containers.push(name(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    violation(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(&non_default)
        ),
    )
}

fn host_namespaces(pod: PodView<'_>) -> Option<Violation> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|f| boolean(pod.spec, &[f]) == Some(true))
        .map(|f| format!("{f}=true"))
        .collect();
    if set.is_empty() {
        return None;
    }
    violation("host namespaces", set.join(", "))
}

fn host_path_volumes(pod: PodView<'_>) -> Option<Violation> {
    let volumes: Vec<&str> = list(pod.spec, &["volumes"])
        .iter()
        .filter(|v| field(v, "hostPath").is_some())
        .map(name)
        .collect();
    if volumes.is_empty() {
        return None;
    }
    violation(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", volumes.len()),
            join_quote(&volumes)
        ),
    )
}

fn host_ports(pod: PodView<'_>) -> Option<Violation> {
    let mut bad_containers = Vec::new();
    // Sorted as strings, as upstream's string set is.
    let mut ports: BTreeSet<String> = BTreeSet::new();
    for c in containers(pod.spec) {
        let mut valid = true;
        for p in list(c, &["ports"]) {
            let host_port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host_port != 0 {
                valid = false;
                ports.insert(host_port.to_string());
            }
        }
        if !valid {
            bad_containers.push(name(c));
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    violation(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.into_iter().collect::<Vec<_>>().join(", ")
        ),
    )
}

fn privileged(pod: PodView<'_>) -> Option<Violation> {
    let bad: Vec<&str> = containers(pod.spec)
        .filter(|c| boolean(c, &["securityContext", "privileged"]) == Some(true))
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    violation(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    )
}

fn proc_mount(pod: PodView<'_>) -> Option<Violation> {
    // Upstream relaxes this for user-namespaced pods only behind the alpha
    // UserNamespacesPodSecurityStandards gate, off in 1.33.
    let mut bad = Vec::new();
    let mut types: BTreeSet<&str> = BTreeSet::new();
    for c in containers(pod.spec) {
        if let Some(t) = path(c, &["securityContext", "procMount"]) {
            let t = t.as_str().unwrap_or("");
            if t != "Default" {
                bad.push(name(c));
                types.insert(t);
            }
        }
    }
    if bad.is_empty() {
        return None;
    }
    violation(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad),
            join_quote(&types)
        ),
    )
}

const SELINUX_TYPES_1_0: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];
const SELINUX_TYPES_1_31: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

fn se_linux_options_1_0(pod: PodView<'_>) -> Option<Violation> {
    se_linux_options(pod, SELINUX_TYPES_1_0)
}

fn se_linux_options_1_31(pod: PodView<'_>) -> Option<Violation> {
    se_linux_options(pod, SELINUX_TYPES_1_31)
}

fn se_linux_options<'a>(pod: PodView<'a>, allowed_types: &[&str]) -> Option<Violation> {
    let mut bad_types: BTreeSet<&'a str> = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut valid = |opts: &'a Value| {
        let mut ok = true;
        let t = string(opts, &["type"]);
        if !allowed_types.contains(&t) {
            ok = false;
            bad_types.insert(t);
        }
        if !string(opts, &["user"]).is_empty() {
            ok = false;
            set_user = true;
        }
        if !string(opts, &["role"]).is_empty() {
            ok = false;
            set_role = true;
        }
        ok
    };
    let mut setters: Vec<String> = Vec::new();
    if let Some(opts) = path(pod.spec, &["securityContext", "seLinuxOptions"])
        && !valid(opts)
    {
        setters.push("pod".into());
    }
    let mut bad_containers = Vec::new();
    for c in containers(pod.spec) {
        if let Some(opts) = path(c, &["securityContext", "seLinuxOptions"])
            && !valid(opts)
        {
            bad_containers.push(name(c));
        }
    }
    if !bad_containers.is_empty() {
        setters.push(containers_phrase(&bad_containers));
    }
    if setters.is_empty() {
        return None;
    }
    let mut bad_data = Vec::new();
    if !bad_types.is_empty() {
        bad_data.push(format!(
            "{} {}",
            pluralize("type", "types", bad_types.len()),
            join_quote(&bad_types)
        ));
    }
    if set_user {
        bad_data.push("user may not be set".to_string());
    }
    if set_role {
        bad_data.push("role may not be set".to_string());
    }
    violation(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters.join(" and "),
            bad_data.join("; ")
        ),
    )
}

const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

fn valid_seccomp_type(t: &str) -> bool {
    matches!(t, "Localhost" | "RuntimeDefault")
}

/// Policy versions before 1.19 read the seccomp annotations.
fn seccomp_profile_baseline_1_0(pod: PodView<'_>) -> Option<Violation> {
    let valid =
        |v: &str| v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/");
    let mut forbidden: BTreeSet<String> = BTreeSet::new();
    if let Some(v) = annotation(pod.metadata, SECCOMP_POD_ANNOTATION)
        && !valid(v)
    {
        forbidden.insert(format!("{SECCOMP_POD_ANNOTATION}={}", go_quote(v)));
    }
    for c in containers(pod.spec) {
        let key = format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", name(c));
        if let Some(v) = annotation(pod.metadata, &key)
            && !valid(v)
        {
            forbidden.insert(format!("{key}={}", go_quote(v)));
        }
    }
    if forbidden.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", forbidden.len()),
            forbidden.into_iter().collect::<Vec<_>>().join(", ")
        ),
    )
}

/// The seccomp profile types of the pod and its containers: the setters of a bad type, the
/// bad types, and the containers that set none.
struct SeccompSurvey<'a> {
    setters: Vec<String>,
    bad_values: BTreeSet<&'a str>,
    unset_containers: Vec<&'a str>,
    pod_valid: bool,
}

fn seccomp_survey<'a>(spec: &'a Value) -> SeccompSurvey<'a> {
    let mut s = SeccompSurvey {
        setters: Vec::new(),
        bad_values: BTreeSet::new(),
        unset_containers: Vec::new(),
        pod_valid: false,
    };
    if let Some(profile) = path(spec, &["securityContext", "seccompProfile"]) {
        let t = string(profile, &["type"]);
        if valid_seccomp_type(t) {
            s.pod_valid = true;
        } else {
            s.setters.push("pod".into());
            s.bad_values.insert(t);
        }
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        match path(c, &["securityContext", "seccompProfile"]) {
            Some(profile) => {
                let t = string(profile, &["type"]);
                if !valid_seccomp_type(t) {
                    bad_containers.push(name(c));
                    s.bad_values.insert(t);
                }
            }
            None => s.unset_containers.push(name(c)),
        }
    }
    if !bad_containers.is_empty() {
        s.setters.push(containers_phrase(&bad_containers));
    }
    s
}

fn seccomp_bad_setters(s: &SeccompSurvey<'_>) -> Option<Violation> {
    if s.setters.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            s.setters.join(" and "),
            join_quote(&s.bad_values)
        ),
    )
}

fn seccomp_profile_baseline_1_19(pod: PodView<'_>) -> Option<Violation> {
    seccomp_bad_setters(&seccomp_survey(pod.spec))
}

fn sysctls_1_0(pod: PodView<'_>) -> Option<Violation> {
    sysctls(pod, 0)
}

fn sysctls_1_27(pod: PodView<'_>) -> Option<Violation> {
    sysctls(pod, 27)
}

fn sysctls_1_29(pod: PodView<'_>) -> Option<Violation> {
    sysctls(pod, 29)
}

fn sysctls_1_32(pod: PodView<'_>) -> Option<Violation> {
    sysctls(pod, 32)
}

/// The safe sysctls, each with the policy version that allowed it first.
const SAFE_SYSCTLS: &[(&str, u64)] = &[
    ("kernel.shm_rmid_forced", 0),
    ("net.ipv4.ip_local_port_range", 0),
    ("net.ipv4.tcp_syncookies", 0),
    ("net.ipv4.ping_group_range", 0),
    ("net.ipv4.ip_unprivileged_port_start", 0),
    ("net.ipv4.ip_local_reserved_ports", 27),
    ("net.ipv4.tcp_keepalive_time", 29),
    ("net.ipv4.tcp_fin_timeout", 29),
    ("net.ipv4.tcp_keepalive_intvl", 29),
    ("net.ipv4.tcp_keepalive_probes", 29),
    ("net.ipv4.tcp_rmem", 32),
    ("net.ipv4.tcp_wmem", 32),
];

fn sysctls(pod: PodView<'_>, minor: u64) -> Option<Violation> {
    let safe = |n: &str| SAFE_SYSCTLS.iter().any(|(s, m)| *s == n && *m <= minor);
    let forbidden: Vec<&str> = list(pod.spec, &["securityContext", "sysctls"])
        .iter()
        .map(name)
        .filter(|n| !safe(n))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    violation("forbidden sysctls", forbidden.join(", "))
}

fn windows_host_process(pod: PodView<'_>) -> Option<Violation> {
    let host_process = |sc: &Value| boolean(sc, &["windowsOptions", "hostProcess"]) == Some(true);
    let bad: Vec<&str> = containers(pod.spec)
        .filter(|c| field(c, "securityContext").is_some_and(host_process))
        .map(name)
        .collect();
    let mut setters: Vec<String> = Vec::new();
    if field(pod.spec, "securityContext").is_some_and(host_process) {
        setters.push("pod".into());
    }
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    violation(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters.join(" and ")
        ),
    )
}

// ---- restricted ---------------------------------------------------------------------------

fn allow_privilege_escalation_1_8(pod: PodView<'_>) -> Option<Violation> {
    let bad: Vec<&str> = containers(pod.spec)
        .filter(|c| boolean(c, &["securityContext", "allowPrivilegeEscalation"]) != Some(false))
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    violation(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    )
}

fn allow_privilege_escalation_1_25(pod: PodView<'_>) -> Option<Violation> {
    if is_windows(pod.spec) {
        return None;
    }
    allow_privilege_escalation_1_8(pod)
}

fn capabilities_restricted_1_22(pod: PodView<'_>) -> Option<Violation> {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden: BTreeSet<&str> = BTreeSet::new();
    for c in containers(pod.spec) {
        let Some(caps) = path(c, &["securityContext", "capabilities"]) else {
            missing_drop_all.push(name(c));
            continue;
        };
        if !strings(caps, &["drop"]).any(|d| d == "ALL") {
            missing_drop_all.push(name(c));
        }
        let mut added_forbidden = false;
        for cap in strings(caps, &["add"]) {
            if cap != "NET_BIND_SERVICE" {
                added_forbidden = true;
                forbidden.insert(cap);
            }
        }
        if added_forbidden {
            adding_forbidden.push(name(c));
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    violation("unrestricted capabilities", details.join("; "))
}

fn capabilities_restricted_1_25(pod: PodView<'_>) -> Option<Violation> {
    if is_windows(pod.spec) {
        return None;
    }
    capabilities_restricted_1_22(pod)
}

/// The volume sources the restricted level allows.
const ALLOWED_VOLUME_SOURCES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The restricted volume sources, in upstream's order of precedence.
const RESTRICTED_VOLUME_SOURCES: [&str; 21] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

fn restricted_volumes(pod: PodView<'_>) -> Option<Violation> {
    let mut bad_volumes = Vec::new();
    let mut bad_types: BTreeSet<&str> = BTreeSet::new();
    for vol in list(pod.spec, &["volumes"]) {
        if ALLOWED_VOLUME_SOURCES
            .iter()
            .any(|s| field(vol, s).is_some())
        {
            continue;
        }
        bad_volumes.push(name(vol));
        let source = RESTRICTED_VOLUME_SOURCES
            .iter()
            .find(|s| field(vol, s).is_some())
            .copied()
            .unwrap_or("unknown");
        bad_types.insert(source);
    }
    if bad_volumes.is_empty() {
        return None;
    }
    violation(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad_volumes.len()),
            join_quote(&bad_volumes),
            pluralize("uses", "use", bad_volumes.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                bad_types.len()
            ),
            join_quote(&bad_types)
        ),
    )
}

fn run_as_non_root(pod: PodView<'_>) -> Option<Violation> {
    let mut setters: Vec<String> = Vec::new();
    let pod_value = boolean(pod.spec, &["securityContext", "runAsNonRoot"]);
    if pod_value == Some(false) {
        setters.push("pod".into());
    }
    let pod_non_root = pod_value == Some(true);
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in containers(pod.spec) {
        match boolean(c, &["securityContext", "runAsNonRoot"]) {
            Some(false) => explicit.push(name(c)),
            Some(true) => {}
            None if !pod_non_root => implicit.push(name(c)),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers_phrase(&explicit));
    }
    if !setters.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters.join(" and ")
            ),
        );
    }
    if !implicit.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicit)
            ),
        );
    }
    None
}

fn run_as_user(pod: PodView<'_>) -> Option<Violation> {
    let root = |sc: Option<&Value>| {
        sc.and_then(|sc| field(sc, "runAsUser"))
            .and_then(Value::as_i64)
            == Some(0)
    };
    let mut setters: Vec<String> = Vec::new();
    if root(field(pod.spec, "securityContext")) {
        setters.push("pod".into());
    }
    let bad: Vec<&str> = containers(pod.spec)
        .filter(|c| root(field(c, "securityContext")))
        .map(name)
        .collect();
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    violation(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters.join(" and ")),
    )
}

fn seccomp_profile_restricted_1_19(pod: PodView<'_>) -> Option<Violation> {
    let survey = seccomp_survey(pod.spec);
    if let Some(v) = seccomp_bad_setters(&survey) {
        return Some(v);
    }
    if survey.pod_valid || survey.unset_containers.is_empty() {
        return None;
    }
    violation(
        "seccompProfile",
        format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            containers_phrase(&survey.unset_containers)
        ),
    )
}

fn seccomp_profile_restricted_1_25(pod: PodView<'_>) -> Option<Violation> {
    if is_windows(pod.spec) {
        return None;
    }
    seccomp_profile_restricted_1_19(pod)
}

#[cfg(test)]
pub(super) fn check_ids() -> Vec<(&'static str, Level)> {
    CHECKS.iter().map(|c| (c.id, c.level)).collect()
}

/// One version of a check by ID, for tests of a check's own cases.
#[cfg(test)]
pub(super) fn check_at(id: &str, minor: u64) -> impl Fn(PodView<'_>) -> Option<Violation> {
    let f = CHECKS
        .iter()
        .find(|c| c.id == id)
        .and_then(|c| at(c, minor))
        .map(|v| v.check);
    move |pod| f.and_then(|f| f(pod))
}
