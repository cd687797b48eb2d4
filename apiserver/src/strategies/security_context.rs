//! Upstream's security-context checks of a pod spec (`pkg/apis/core/validation`):
//! validatePodSpecSecurityContext, ValidateSecurityContext of every container (init, regular,
//! ephemeral), validateWindowsHostProcessPod, validateHostUsers and the `spec.os`-dependent
//! validateLinux/validateWindows, with upstream's field paths and messages. Nothing is
//! allocated for a spec that sets none of these fields.

use k1s_apimachinery::FieldError;
use k1s_apimachinery::validation::is_dns1123_subdomain;
use serde_json::Value;

use super::go_value::go_struct;
use super::pod_validation::{PodOptions, local_descending_path_errors};

const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";
const SYSCTL_REGEX: &str =
    r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];
const NOT_WINDOWS: &str = "cannot be set for a windows pod";
const NOT_LINUX: &str = "windows options cannot be set for a linux pod";

fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn is_true(v: &Value, key: &str) -> bool {
    v.get(key) == Some(&Value::Bool(true))
}

fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// All security-context errors of the pod spec at `path` (`spec` or a template's spec).
pub(super) fn validate(spec: &Value, path: &str, opts: &PodOptions, errs: &mut Vec<FieldError>) {
    // hostUsers defaults to true: only an explicit false enables a user namespace.
    let host_users = spec.get("hostUsers") != Some(&Value::Bool(false));
    let pod_sc = set(spec, "securityContext");
    if let Some(sc) = pod_sc {
        pod_security_context(sc, spec, &format!("{path}.securityContext"), opts, errs);
    }
    // In the internal API shareProcessNamespace and hostPID live in the (always present)
    // pod security context, hence the path.
    if is_true(spec, "shareProcessNamespace") && is_true(spec, "hostPID") {
        errs.push(FieldError::invalid(
            format!("{path}.securityContext.shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    let pod_host_process = pod_sc
        .and_then(|sc| sc.get("windowsOptions"))
        .and_then(|w| w.get("hostProcess"))
        .and_then(Value::as_bool);
    let (mut count, mut host_process) = (0, 0);
    for l in CONTAINER_LISTS {
        for (i, c) in list(spec, l).iter().enumerate() {
            count += 1;
            let Some(sc) = set(c, "securityContext") else {
                host_process += usize::from(pod_host_process == Some(true));
                continue;
            };
            let at = format!("{path}.{l}[{i}].securityContext");
            container_security_context(sc, &at, host_users, errs);
            let own = sc
                .get("windowsOptions")
                .and_then(|w| w.get("hostProcess"))
                .and_then(Value::as_bool);
            if let (Some(pod), Some(own)) = (pod_host_process, own)
                && pod != own
            {
                errs.push(FieldError::invalid(
                    format!("{at}.windowsOptions.hostProcess"),
                    own,
                    format!(
                        "pod hostProcess value must be identical if both are specified, was {pod}"
                    ),
                ));
            }
            host_process += usize::from(own.or(pod_host_process) == Some(true));
        }
    }
    if host_process > 0 {
        if host_process != count {
            errs.push(FieldError::invalid(
                path,
                "",
                "If pod contains any hostProcess containers then all containers must be HostProcess containers",
            ));
        }
        if !is_true(spec, "hostNetwork") {
            errs.push(FieldError::invalid(
                format!("{path}.hostNetwork"),
                false,
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
    }
    if !host_users {
        // Upstream's validateHostUsers (its paths name the internal fields).
        for (key, name) in [
            ("hostNetwork", "hostNetwork"),
            ("hostPID", "HostPID"),
            ("hostIPC", "HostIPC"),
        ] {
            if is_true(spec, key) {
                errs.push(FieldError::forbidden(
                    format!("{path}.{name}"),
                    "when `hostUsers` is false",
                ));
            }
        }
    }
    if let Some(os) = set(spec, "os") {
        match os.get("name").and_then(Value::as_str).unwrap_or_default() {
            "" => errs.push(FieldError::required(
                format!("{path}.os.name"),
                "cannot be empty",
            )),
            "linux" => linux_only(spec, path, errs),
            "windows" => windows_only(spec, path, errs),
            other => errs.push(FieldError::not_supported(
                format!("{path}.os"),
                other,
                &["linux", "windows"],
            )),
        }
    }
}

/// An integer user or group ID in 0..=2147483647 (other JSON types are the decoder's).
fn id_range(v: &Value, key: &str, at: &str, errs: &mut Vec<FieldError>) {
    if let Some(id) = v.get(key).and_then(Value::as_i64) {
        check_id(id, || format!("{at}.{key}"), errs);
    }
}

fn check_id(id: i64, field: impl FnOnce() -> String, errs: &mut Vec<FieldError>) {
    if !(0..=i64::from(i32::MAX)).contains(&id) {
        errs.push(FieldError::invalid(field(), id, ID_RANGE));
    }
}

/// A string enum outside `allowed` as NotSupported (`supported` is upstream's listing order).
fn enum_value(
    v: &Value,
    key: &str,
    at: &str,
    allowed: &[&str],
    supported: &[&str],
    errs: &mut Vec<FieldError>,
) {
    if let Some(s) = v.get(key).and_then(Value::as_str)
        && !allowed.contains(&s)
    {
        errs.push(FieldError::not_supported(
            format!("{at}.{key}"),
            s,
            supported,
        ));
    }
}

/// Upstream's validatePodSpecSecurityContext.
fn pod_security_context(
    sc: &Value,
    spec: &Value,
    at: &str,
    opts: &PodOptions,
    errs: &mut Vec<FieldError>,
) {
    for key in ["fsGroup", "runAsUser", "runAsGroup"] {
        id_range(sc, key, at, errs);
    }
    for (i, g) in list(sc, "supplementalGroups").iter().enumerate() {
        if let Some(id) = g.as_i64() {
            check_id(id, || format!("{at}.supplementalGroups[{i}]"), errs);
        }
    }
    let host_checks = !opts.host_namespace_sysctls;
    sysctls(list(sc, "sysctls"), spec, at, host_checks, errs);
    let fs = ["Always", "OnRootMismatch"];
    enum_value(sc, "fsGroupChangePolicy", at, &fs, &fs, errs);
    if let Some(p) = set(sc, "seccompProfile") {
        seccomp_profile(p, &format!("{at}.seccompProfile"), errs);
    }
    if let Some(w) = set(sc, "windowsOptions") {
        windows_options(w, &format!("{at}.windowsOptions"), errs);
    }
    if let Some(p) = set(sc, "appArmorProfile") {
        app_armor_profile(p, &format!("{at}.appArmorProfile"), errs);
    }
    let groups = ["Merge", "Strict"];
    enum_value(sc, "supplementalGroupsPolicy", at, &groups, &groups, errs);
    // SELinuxMount is off in 1.33, so upstream accepts only Recursive, unless the stored pod
    // already had MountOption.
    let policies: &[&str] = if opts.mount_option_se_linux {
        &["MountOption", "Recursive"]
    } else {
        &["Recursive"]
    };
    enum_value(sc, "seLinuxChangePolicy", at, policies, policies, errs);
}

/// Upstream's validateSysctls, with ValidateHostSysctl when `host_checks` (not relaxed by
/// AllowNamespacedSysctlsForHostNetAndHostIPC).
fn sysctls(list: &[Value], spec: &Value, at: &str, host_checks: bool, errs: &mut Vec<FieldError>) {
    let host_net = host_checks && is_true(spec, "hostNetwork");
    let host_ipc = host_checks && is_true(spec, "hostIPC");
    for (i, s) in list.iter().enumerate() {
        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
        let field = || format!("{at}.sysctls[{i}].name");
        if name.is_empty() {
            errs.push(FieldError::required(field(), ""));
        } else if !is_valid_sysctl_name(name) {
            errs.push(FieldError::invalid(
                field(),
                name,
                format!("must have at most 253 characters and match regex {SYSCTL_REGEX}"),
            ));
        } else if list[..i]
            .iter()
            .any(|o| o.get("name").and_then(Value::as_str) == Some(name))
        {
            errs.push(FieldError::duplicate(field(), name));
        }
        match sysctl_namespace(name) {
            Some(SysctlNs::Net) if host_net => errs.push(FieldError::invalid(
                field(),
                name,
                "may not be specified when 'hostNetwork' is true",
            )),
            Some(SysctlNs::Ipc) if host_ipc => errs.push(FieldError::invalid(
                field(),
                name,
                "may not be specified when 'hostIPC' is true",
            )),
            _ => {}
        }
    }
}

/// Whether a (stored) pod spec sets a network sysctl beside `hostNetwork` or an IPC one
/// beside `hostIPC`: then its updates may keep them (GetValidationOptionsFromPodSpecAndMeta).
pub(super) fn has_host_namespace_sysctl(spec: &Value) -> bool {
    let (host_net, host_ipc) = (is_true(spec, "hostNetwork"), is_true(spec, "hostIPC"));
    if !host_net && !host_ipc {
        return false;
    }
    let sysctls = spec
        .get("securityContext")
        .map_or(&[][..], |sc| list(sc, "sysctls"));
    sysctls.iter().any(|s| {
        let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
        match sysctl_namespace(name) {
            Some(SysctlNs::Net) => host_net,
            Some(SysctlNs::Ipc) => host_ipc,
            None => false,
        }
    })
}

/// Segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` joined by `.` or `/`, at most 253 bytes.
fn is_valid_sysctl_name(name: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    name.len() <= 253
        && name.split(['.', '/']).all(|seg| {
            let b = seg.as_bytes();
            !b.is_empty()
                && alnum(b[0])
                && alnum(b[b.len() - 1])
                && b.iter().all(|&c| alnum(c) || c == b'-' || c == b'_')
        })
}

enum SysctlNs {
    Net,
    Ipc,
}

/// The kernel namespace of a sysctl (component-helpers' GetNamespace, after normalising a
/// slash-separated name to dots).
fn sysctl_namespace(name: &str) -> Option<SysctlNs> {
    let slashed = name
        .find(['.', '/'])
        .is_some_and(|i| name.as_bytes()[i] == b'/');
    let normal: std::borrow::Cow<str> = if slashed {
        name.chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                c => c,
            })
            .collect::<String>()
            .into()
    } else {
        name.into()
    };
    let n = normal.as_ref();
    if n.starts_with("net.") {
        Some(SysctlNs::Net)
    } else if n == "kernel.sem"
        || n.starts_with("kernel.shm")
        || n.starts_with("kernel.msg")
        || n.starts_with("fs.mqueue.")
    {
        Some(SysctlNs::Ipc)
    } else {
        None
    }
}

/// Upstream's ValidateSecurityContext of one container (privileged containers are allowed:
/// k1s runs as kubeadm configures the API server, `--allow-privileged=true`).
fn container_security_context(sc: &Value, at: &str, host_users: bool, errs: &mut Vec<FieldError>) {
    id_range(sc, "runAsUser", at, errs);
    id_range(sc, "runAsGroup", at, errs);
    if let Some(pm) = sc.get("procMount").and_then(Value::as_str) {
        let field = format!("{at}.procMount");
        if pm != "Default" && pm != "Unmasked" {
            errs.push(FieldError::not_supported(
                &field,
                pm,
                &["Default", "Unmasked"],
            ));
        }
        if host_users && pm == "Unmasked" {
            errs.push(FieldError::invalid(
                field,
                pm,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    if let Some(p) = set(sc, "seccompProfile") {
        seccomp_profile(p, &format!("{at}.seccompProfile"), errs);
    }
    if sc.get("allowPrivilegeEscalation") == Some(&Value::Bool(false)) {
        if is_true(sc, "privileged") {
            errs.push(FieldError::invalid_raw(
                at,
                go_security_context(sc),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let adds = sc.get("capabilities").map_or(&[][..], |c| list(c, "add"));
        for cap in adds {
            if cap.as_str() == Some("CAP_SYS_ADMIN") {
                errs.push(FieldError::invalid_raw(
                    at,
                    go_security_context(sc),
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                ));
            }
        }
    }
    if let Some(w) = set(sc, "windowsOptions") {
        windows_options(w, &format!("{at}.windowsOptions"), errs);
    }
    if let Some(p) = set(sc, "appArmorProfile") {
        app_armor_profile(p, &format!("{at}.appArmorProfile"), errs);
    }
}

fn go_security_context(sc: &Value) -> String {
    go_struct(
        "core.SecurityContext",
        sc,
        &[
            ("Capabilities", "*core.Capabilities", "capabilities"),
            ("Privileged", "*bool", "privileged"),
            ("SELinuxOptions", "*core.SELinuxOptions", "seLinuxOptions"),
            (
                "WindowsOptions",
                "*core.WindowsSecurityContextOptions",
                "windowsOptions",
            ),
            ("RunAsUser", "*int64", "runAsUser"),
            ("RunAsGroup", "*int64", "runAsGroup"),
            ("RunAsNonRoot", "*bool", "runAsNonRoot"),
            ("ReadOnlyRootFilesystem", "*bool", "readOnlyRootFilesystem"),
            (
                "AllowPrivilegeEscalation",
                "*bool",
                "allowPrivilegeEscalation",
            ),
            ("ProcMount", "*core.ProcMountType", "procMount"),
            ("SeccompProfile", "*core.SeccompProfile", "seccompProfile"),
            (
                "AppArmorProfile",
                "*core.AppArmorProfile",
                "appArmorProfile",
            ),
        ],
    )
}

/// Upstream's validateSeccompProfileField.
fn seccomp_profile(p: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
    match ty {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            format!("{at}.type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            format!("{at}.type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let field = format!("{at}.localhostProfile");
    match set(p, "localhostProfile") {
        None if ty == "Localhost" => errs.push(FieldError::required(
            field,
            "must be set when seccomp type is Localhost",
        )),
        Some(lp) if ty == "Localhost" => {
            errs.extend(local_descending_path_errors(
                lp.as_str().unwrap_or_default(),
                &field,
            ));
        }
        Some(_) => errs.push(FieldError::invalid_raw(
            field,
            go_struct(
                "core.SeccompProfile",
                p,
                &[
                    ("Type", "", "type"),
                    ("LocalhostProfile", "*string", "localhostProfile"),
                ],
            ),
            "can only be set when seccomp type is Localhost",
        )),
        None => {}
    }
}

/// Upstream's ValidateAppArmorProfileField.
fn app_armor_profile(p: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let field = || format!("{at}.localhostProfile");
    let local = set(p, "localhostProfile").map(|l| l.as_str().unwrap_or_default());
    match p.get("type").and_then(Value::as_str).unwrap_or_default() {
        "Localhost" => match local {
            None => errs.push(FieldError::required(
                field(),
                "must be set when AppArmor type is Localhost",
            )),
            Some(l) => {
                if l.trim() != l {
                    errs.push(FieldError::invalid(
                        field(),
                        l,
                        "must not be padded with whitespace",
                    ));
                } else if l.is_empty() {
                    errs.push(FieldError::required(
                        field(),
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if l.len() > 4095 {
                    errs.push(FieldError::too_long(field(), Some(4095)));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = local {
                errs.push(FieldError::invalid(
                    field(),
                    l,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            format!("{at}.type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            format!("{at}.type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
}

/// Upstream's validateWindowsSecurityContextOptions.
fn windows_options(w: &Value, at: &str, errs: &mut Vec<FieldError>) {
    if let Some(name) = set(w, "gmsaCredentialSpecName") {
        let name = name.as_str().unwrap_or_default();
        for msg in is_dns1123_subdomain(name) {
            errs.push(FieldError::invalid(
                format!("{at}.gmsaCredentialSpecName"),
                name,
                msg,
            ));
        }
    }
    if let Some(spec) = set(w, "gmsaCredentialSpec") {
        let spec = spec.as_str().unwrap_or_default();
        let field = format!("{at}.gmsaCredentialSpec");
        if spec.is_empty() {
            errs.push(FieldError::invalid(
                field,
                spec,
                "gmsaCredentialSpec cannot be an empty string",
            ));
        } else if spec.len() > 64 * 1024 {
            errs.push(FieldError::invalid(
                field,
                spec,
                "gmsaCredentialSpec size must be under 64 KiB",
            ));
        }
    }
    if let Some(name) = set(w, "runAsUserName") {
        let name = name.as_str().unwrap_or_default();
        for msg in run_as_user_name_errors(name) {
            errs.push(FieldError::invalid(
                format!("{at}.runAsUserName"),
                name,
                msg,
            ));
        }
    }
}

/// The messages upstream gives a Windows `DOMAIN\user` name.
fn run_as_user_name_errors(name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec!["runAsUserName cannot be an empty string".into()];
    }
    if name.chars().any(|c| c.is_ascii_control()) {
        return vec!["runAsUserName cannot contain control characters".into()];
    }
    if name.matches('\\').count() > 1 {
        return vec!["runAsUserName cannot contain more than one backslash".into()];
    }
    let mut msgs = Vec::new();
    let (domain, user) = match name.split_once('\\') {
        Some((domain, user)) => (Some(domain), user),
        None => (None, name),
    };
    let domain_len = domain.map_or(0, str::len);
    if domain_len >= 256 {
        msgs.push("runAsUserName's Domain length must be under 256 characters".into());
    }
    if let Some(d) = domain
        && !(is_netbios_domain(d) || is_dns_domain(d))
    {
        msgs.push("runAsUserName's Domain doesn't match the NetBios nor the DNS format".into());
    }
    if user.is_empty() {
        msgs.push("runAsUserName's User cannot be empty".into());
    } else if user.len() > 104 {
        msgs.push("runAsUserName's User length must not be longer than 104 characters".into());
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        msgs.push("runAsUserName's User cannot contain only periods or spaces".into());
    }
    if user.contains(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
        msgs.push(
            "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]"
                .into(),
        );
    }
    msgs
}

/// 1-15 characters, none of `\ / : * ? " < > |`, not starting with a dot.
fn is_netbios_domain(d: &str) -> bool {
    let bad = |c: char| "\\/:*?\"<>|".contains(c);
    let n = d.chars().count();
    (1..=15).contains(&n) && !d.starts_with('.') && !d.chars().any(bad)
}

/// Dot-separated labels of ASCII letters, digits and inner dashes, each 1-63 long.
fn is_dns_domain(d: &str) -> bool {
    d.split('.').all(|l| {
        let b = l.as_bytes();
        (1..=63).contains(&b.len())
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'-')
    })
}

/// Upstream's validateLinux: no Windows options anywhere.
fn linux_only(spec: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if set(spec, "securityContext")
        .and_then(|sc| set(sc, "windowsOptions"))
        .is_some()
    {
        errs.push(FieldError::forbidden(
            format!("{path}.securityContext.windowsOptions"),
            NOT_LINUX,
        ));
    }
    for l in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in list(spec, l).iter().enumerate() {
            if set(c, "securityContext")
                .and_then(|sc| set(sc, "windowsOptions"))
                .is_some()
            {
                errs.push(FieldError::forbidden(
                    format!("{path}.{l}[{i}].securityContext.windowsOptions"),
                    NOT_LINUX,
                ));
            }
        }
    }
}

/// Upstream's validateWindows: none of the Linux-only pod or container fields.
fn windows_only(spec: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let sc = set(spec, "securityContext").unwrap_or(&Value::Null);
    let forbid = |errs: &mut Vec<FieldError>, field: String| {
        errs.push(FieldError::forbidden(field, NOT_WINDOWS));
    };
    for key in ["appArmorProfile", "seLinuxOptions"] {
        if set(sc, key).is_some() {
            forbid(errs, format!("{path}.securityContext.{key}"));
        }
    }
    if set(spec, "hostUsers").is_some() {
        forbid(errs, format!("{path}.hostUsers"));
    }
    for key in ["hostPID", "hostIPC"] {
        if is_true(spec, key) {
            forbid(errs, format!("{path}.{key}"));
        }
    }
    for key in ["seccompProfile", "fsGroup", "fsGroupChangePolicy"] {
        if set(sc, key).is_some() {
            forbid(errs, format!("{path}.securityContext.{key}"));
        }
    }
    if !list(sc, "sysctls").is_empty() {
        forbid(errs, format!("{path}.securityContext.sysctls"));
    }
    if set(spec, "shareProcessNamespace").is_some() {
        forbid(errs, format!("{path}.shareProcessNamespace"));
    }
    for key in [
        "runAsUser",
        "runAsGroup",
        "supplementalGroups",
        "supplementalGroupsPolicy",
        "seLinuxChangePolicy",
    ] {
        if set(sc, key).is_some() {
            forbid(errs, format!("{path}.securityContext.{key}"));
        }
    }
    for l in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in list(spec, l).iter().enumerate() {
            let Some(csc) = set(c, "securityContext") else {
                continue;
            };
            for key in [
                "appArmorProfile",
                "seLinuxOptions",
                "seccompProfile",
                "capabilities",
                "readOnlyRootFilesystem",
                "privileged",
                "allowPrivilegeEscalation",
                "procMount",
                "runAsUser",
                "runAsGroup",
            ] {
                if set(csc, key).is_some() {
                    forbid(errs, format!("{path}.{l}[{i}].securityContext.{key}"));
                }
            }
        }
    }
}
