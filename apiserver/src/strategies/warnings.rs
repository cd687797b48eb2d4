//! Upstream's create- and update-time warnings (sent as `Warning:` headers, which kubectl
//! prints): names that are not DNS labels for kinds whose names reach pod host names, and the
//! pod-spec warnings of `pkg/api/pod/warnings.go` (deprecated node labels, annotations and
//! volume plugins, duplicate pull secrets and environment variables).

mod tls_pair;

use std::collections::HashSet;

use k1s_apimachinery::gofmt::quote as go_quote;
use k1s_apimachinery::quantity::Quantity;
use k1s_apimachinery::validation::name_is_dns_label;
use serde_json::Value;

/// Node labels that are deprecated, and upstream's message for each (`pkg/api/node`).
const DEPRECATED_NODE_LABELS: [(&str, &str); 8] = [
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
    ("app.kubernetes.io/created-by", "deprecated since v1.9"),
    (
        "scheduler.alpha.kubernetes.io/preferAvoidPods",
        "deprecated since v1.22; use Taints and Tolerations instead",
    ),
    (
        "node-role.kubernetes.io/master",
        r#"use "node-role.kubernetes.io/control-plane" instead"#,
    ),
];

fn deprecated_node_label(key: &str) -> Option<&'static str> {
    DEPRECATED_NODE_LABELS
        .iter()
        .find(|(l, _)| *l == key)
        .map(|(_, m)| *m)
}

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

/// Deprecated and removed volume sources and upstream's message for each.
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

/// Upstream's WarningsForJobSpec for the job spec at `path` (`spec`, or a CronJob's
/// `spec.jobTemplate.spec`): an Indexed Job too large to track its failed indexes, then its
/// template's warnings.
pub fn job_spec(spec: Option<&Value>, path: &str) -> Vec<String> {
    let Some(spec) = spec else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let count = |f: &str| spec.get(f).and_then(Value::as_i64).unwrap_or(0);
    if text(spec, "completionMode") == "Indexed"
        && count("completions") > 100_000
        && count("parallelism") > 10_000
    {
        out.push(format!(
            "{path}: In Indexed Jobs with a number of completions higher than 10^5 and a \
             parallelism higher than 10^4, Kubernetes might not be able to track \
             completedIndexes when a big number of indexes fail"
        ));
    }
    if let Some(t) = spec.get("template") {
        out.extend(pod(t, &format!("{path}.template.")));
    }
    out
}

/// The annotation that named a claim's or volume's class before `storageClassName`.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
const BETA_STORAGE_CLASS_MSG: &str =
    r#"deprecated since v1.8; use "storageClassName" attribute instead"#;

fn beta_storage_class(obj: &Value, out: &mut Vec<String>) {
    if obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(BETA_STORAGE_CLASS))
        .is_some()
    {
        out.push(format!(
            "metadata.annotations[{BETA_STORAGE_CLASS}]: {BETA_STORAGE_CLASS_MSG}"
        ));
    }
}

/// Upstream's GetWarningsForPersistentVolumeClaim (on create and on every spec update; the
/// status writes give none): the beta class annotation and fractional storage sizes.
pub fn persistent_volume_claim(obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    beta_storage_class(obj, &mut out);
    claim_spec(obj.get("spec").unwrap_or(&Value::Null), "spec", &mut out);
    out
}

/// The volume sources a PersistentVolume may still name but that no longer work, in
/// upstream's order; their messages are the pod volumes' (`DEPRECATED_VOLUMES`).
const DEPRECATED_PV_SOURCES: [&str; 6] = [
    "cephfs",
    "photonPersistentDisk",
    "scaleIO",
    "storageos",
    "glusterfs",
    "rbd",
];

/// The name upstream's warnings show a volume source by: its Go field (`storageOS`).
fn shown_source(source: &str) -> &str {
    if source == "storageos" {
        "storageOS"
    } else {
        source
    }
}

/// Upstream's GetWarningsForPersistentVolume (create and spec updates): the beta class
/// annotation, the Recycle policy, deprecated node labels in the required node affinity and
/// deprecated volume plugins.
pub fn persistent_volume(obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    beta_storage_class(obj, &mut out);
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if text(spec, "persistentVolumeReclaimPolicy") == "Recycle" {
        out.push(
            "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. \
             Instead, the recommended approach is to use dynamic provisioning."
                .to_string(),
        );
    }
    let terms = spec.pointer("/nodeAffinity/required/nodeSelectorTerms");
    for (i, term) in list(terms).iter().enumerate() {
        let path = format!("spec.nodeAffinity.required.nodeSelectorTerms[{i}]");
        node_selector_term(term, &path, &mut out);
    }
    for source in DEPRECATED_PV_SOURCES {
        if set(spec, source).is_some()
            && let Some((_, msg)) = DEPRECATED_VOLUMES.iter().find(|(s, _)| *s == source)
        {
            out.push(format!("spec.{}: {msg}", shown_source(source)));
        }
    }
    out
}

/// Upstream's fieldIsDeprecatedWarnings of Nodes, on create and on spec updates. A
/// configSource only survives the strategy's preparation on an update of a Node that already
/// had one, so `had_config_source` says whether the stored Node had it (false on create).
pub fn node(obj: &Value, had_config_source: bool) -> Vec<String> {
    let mut out = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if had_config_source && set(spec, "configSource").is_some() {
        out.push("spec.configSource: the feature is removed".to_string());
    }
    if !text(spec, "externalID").is_empty() {
        out.push("spec.externalID: this field is deprecated, and is unused by Kubernetes".into());
    }
    out
}

/// Upstream's warningsForSecret (create and update): a `kubernetes.io/tls` Secret whose
/// certificate and key Go's `tls.X509KeyPair` refuses gets that function's error.
pub fn secret(obj: &Value) -> Vec<String> {
    use base64::Engine as _;
    if text(obj, "type") != "kubernetes.io/tls" {
        return Vec::new();
    }
    let value = |k: &str| {
        obj.pointer("/data")
            .and_then(|d| d.get(k))
            .and_then(Value::as_str)
            .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
            .unwrap_or_default()
    };
    tls_pair::x509_key_pair_error(&value("tls.crt"), &value("tls.key"))
        .into_iter()
        .collect()
}

/// Upstream's warningsForPodSpecAndMeta for the pod (template) at `prefix` ("" for a Pod,
/// "spec.template." for a workload), whose `metadata` and `spec` are in `pod`.
pub fn pod(pod: &Value, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let spec = &pod["spec"];
    let selector = spec.get("nodeSelector").and_then(Value::as_object);
    for key in selector.into_iter().flat_map(|m| m.keys()) {
        if let Some(msg) = deprecated_node_label(key) {
            out.push(format!("{prefix}spec.nodeSelector[{key}]: {msg}"));
        }
    }
    let node_affinity = spec.pointer("/affinity/nodeAffinity");
    if let Some(n) = node_affinity.filter(|n| !n.is_null()) {
        let at = format!("{prefix}spec.affinity.nodeAffinity");
        let terms = n.pointer("/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms");
        for (i, term) in list(terms).iter().enumerate() {
            let path = format!(
                "{at}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
            );
            node_selector_term(term, &path, &mut out);
        }
        let preferred = n.get("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, term) in list(preferred).iter().enumerate() {
            let path =
                format!("{at}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference");
            node_selector_term(&term["preference"], &path, &mut out);
        }
    }
    for (i, c) in list(spec.get("topologySpreadConstraints"))
        .iter()
        .enumerate()
    {
        let at = || format!("{prefix}spec.topologySpreadConstraints[{i}]");
        let key = text(c, "topologyKey");
        if let Some(msg) = deprecated_node_label(key) {
            out.push(format!("{}.topologyKey: {key} is {msg}", at()));
        }
        if c.get("labelSelector").is_none_or(Value::is_null) {
            out.push(format!("{}.labelSelector: {NULL_SELECTOR}", at()));
        }
    }
    let annotations = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let annotated = |key: &str| annotations.is_some_and(|a| a.contains_key(key));
    for (key, msg) in DEPRECATED_ANNOTATIONS {
        if annotated(key) {
            out.push(format!("{prefix}metadata.annotations[{key}]: {msg}"));
        }
    }
    let volumes = list(spec.get("volumes"));
    for (i, v) in volumes.iter().enumerate() {
        let at = || format!("{prefix}spec.volumes[{i}]");
        for (source, msg) in DEPRECATED_VOLUMES {
            if set(v, source).is_some() {
                out.push(format!("{}.{}: {msg}", at(), shown_source(source)));
            }
            if source == "glusterfs"
                && let Some(claim) = v.pointer("/ephemeral/volumeClaimTemplate/spec")
            {
                let path = format!("{}.ephemeral.volumeClaimTemplate.spec", at());
                claim_spec(claim, &path, &mut out);
            }
        }
    }
    overlapping_paths(volumes, &mut out);
    let aliases = list(spec.get("hostAliases"));
    let mut ips = HashSet::new();
    for (i, a) in aliases.iter().enumerate() {
        let ip = text(a, "ip");
        if aliases.len() > 1 && !ips.insert(ip) {
            out.push(format!(
                "{prefix}spec.hostAliases[{i}].ip: duplicate ip {}",
                go_quote(ip)
            ));
        }
    }
    let secrets = list(spec.get("imagePullSecrets"));
    let mut seen = HashSet::new();
    for (i, s) in secrets.iter().enumerate() {
        let name = text(s, "name");
        if secrets.len() > 1 && !seen.insert(name) {
            out.push(format!(
                "{prefix}spec.imagePullSecrets[{i}].name: duplicate name {}",
                go_quote(name)
            ));
        }
    }
    for (i, s) in secrets.iter().enumerate() {
        if text(s, "name").is_empty() {
            out.push(format!(
                "{prefix}spec.imagePullSecrets[{i}].name: invalid empty name \"\""
            ));
        }
    }
    for resource in ["memory", "ephemeral-storage"] {
        let path = || format!("{prefix}spec.overhead[{resource}]");
        fractional(spec.get("overhead"), resource, path, &mut out);
    }
    let has_field = |sc: &Value, field: &str| sc.get(field).is_some_and(|f| !f.is_null());
    let pod_sc = spec.get("securityContext").unwrap_or(&Value::Null);
    if !has_field(pod_sc, "seccompProfile") && annotated(SECCOMP_POD) {
        out.push(format!(
            "{prefix}metadata.annotations[{SECCOMP_POD}]: {SECCOMP_NON_FUNCTIONAL}"
        ));
    }
    let pod_app_armor = has_field(pod_sc, "appArmorProfile");
    let containers = || container_paths(spec);
    for (list, i, c) in containers() {
        let at = || format!("{prefix}spec.{list}[{i}]");
        let name = text(c, "name");
        let sc = c.get("securityContext").unwrap_or(&Value::Null);
        if annotations.is_some_and(|a| !a.is_empty()) {
            let key = format!("{SECCOMP_CONTAINER_PREFIX}{name}");
            if !has_field(sc, "seccompProfile") && annotated(&key) {
                out.push(format!(
                    "{prefix}metadata.annotations[{key}]: {SECCOMP_NON_FUNCTIONAL}"
                ));
            }
            // Pods warn of these while their annotations and fields are synced instead.
            let key = format!("{APP_ARMOR_PREFIX}{name}");
            let is_template = !prefix.is_empty();
            if is_template && !pod_app_armor && !has_field(sc, "appArmorProfile") && annotated(&key)
            {
                out.push(format!(
                    "{prefix}metadata.annotations[{key}]: deprecated since v1.30; use the \
                     \"appArmorProfile\" field instead"
                ));
            }
        }
        let resources = c.get("resources").unwrap_or(&Value::Null);
        for resource in ["memory", "ephemeral-storage"] {
            for kind in ["limits", "requests"] {
                let path = || format!("{}.resources.{kind}[{resource}]", at());
                fractional(resources.get(kind), resource, path, &mut out);
            }
        }
        env_redefinitions(c, at, &mut out);
    }
    port_warnings(containers, prefix, &mut out);
    let grace = spec.get("terminationGracePeriodSeconds");
    if grace.and_then(Value::as_i64).is_some_and(|g| g < 0) {
        out.push(format!(
            "{prefix}spec.terminationGracePeriodSeconds: must be >= 0; negative values are \
             invalid and will be treated as 1"
        ));
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(a) = spec.get("affinity").and_then(|a| set(a, kind)) else {
            continue;
        };
        let at = format!("{prefix}spec.affinity.{kind}");
        let required = a.get("requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in list(required).iter().enumerate() {
            if set(t, "labelSelector").is_none() {
                out.push(format!(
                    "{at}.requiredDuringSchedulingIgnoredDuringExecution[{i}].labelSelector: \
                     {NULL_SELECTOR}"
                ));
            }
        }
        let preferred = a.get("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in list(preferred).iter().enumerate() {
            if t.pointer("/podAffinityTerm/labelSelector")
                .is_none_or(Value::is_null)
            {
                out.push(format!(
                    "{at}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm.\
                     labelSelector: {NULL_SELECTOR}"
                ));
            }
        }
    }
    out
}

const NULL_SELECTOR: &str = "a null labelSelector results in matching no pod";
const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";
const SECCOMP_NON_FUNCTIONAL: &str =
    r#"non-functional in v1.27+; use the "seccompProfile" field instead"#;
const APP_ARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

fn list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn set<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// Upstream's VisitContainersWithPath order: init, regular, then ephemeral containers, each
/// with its list and index.
fn container_paths(spec: &Value) -> impl Iterator<Item = (&'static str, usize, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |l| {
            list(spec.get(l))
                .iter()
                .enumerate()
                .map(move |(i, c)| (l, i, c))
        })
}

/// GetWarningsForNodeSelectorTerm: deprecated node labels as requirement keys.
fn node_selector_term(term: &Value, path: &str, out: &mut Vec<String>) {
    for (j, r) in list(term.get("matchExpressions")).iter().enumerate() {
        let key = text(r, "key");
        if let Some(msg) = deprecated_node_label(key) {
            out.push(format!("{path}.matchExpressions[{j}].key: {key} is {msg}"));
        }
    }
}

/// A memory or storage quantity with a fraction of a byte (its milli value not a multiple of
/// 1000), printed in upstream's canonical form.
fn fractional(
    list: Option<&Value>,
    resource: &str,
    path: impl FnOnce() -> String,
    out: &mut Vec<String>,
) {
    let raw = match list.and_then(|l| l.get(resource)) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return,
    };
    if let Some(q) = Quantity::parse(&raw)
        && q.milli_value() % 1000 != 0
    {
        out.push(format!(
            "{}: fractional byte value {} is invalid, must be an integer",
            path(),
            go_quote(&q.to_string())
        ));
    }
}

/// GetWarningsForPersistentVolumeClaimSpec: fractional storage requests and limits.
fn claim_spec(spec: &Value, path: &str, out: &mut Vec<String>) {
    let resources = spec.get("resources").unwrap_or(&Value::Null);
    for kind in ["requests", "limits"] {
        let at = || format!("{path}.resources.{kind}[storage]");
        fractional(resources.get(kind), "storage", at, out);
    }
}

/// Where a volume path comes from (upstream's pathAndSource's source).
#[derive(Clone, Copy)]
enum Source<'a> {
    /// Items of a plain configMap, secret or downwardAPI volume: not named.
    Plain,
    ConfigMap(&'a str),
    Secret(&'a str),
    DownwardApi,
    Token,
    Bundle(&'a str),
}

/// A path a volume writes and where it comes from, printed as `"path" (source)`.
#[derive(Clone, Copy)]
struct PathAndSource<'a> {
    path: &'a str,
    source: Source<'a>,
}

impl std::fmt::Display for PathAndSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = go_quote(self.path);
        match self.source {
            Source::Plain => write!(f, "{path}"),
            Source::ConfigMap(n) => write!(f, "{path} (ConfigMap {})", go_quote(n)),
            Source::Secret(n) => write!(f, "{path} (Secret {})", go_quote(n)),
            Source::DownwardApi => write!(f, "{path} (DownwardAPI)"),
            Source::Token => write!(f, "{path} (ServiceAccountToken)"),
            Source::Bundle(n) => write!(f, "{path} (ClusterTrustBundle {})", go_quote(n)),
        }
    }
}

/// Upstream's checkForOverlap: the earlier paths equal to `needle`, a directory of it, or
/// under it; empty paths never collide.
fn overlaps<'a, 'b>(
    earlier: &'b [PathAndSource<'a>],
    needle: PathAndSource<'a>,
) -> impl Iterator<Item = &'b PathAndSource<'a>> {
    let under = |a: &str, b: &str| {
        a.strip_prefix(b)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    earlier.iter().filter(move |item| {
        !needle.path.is_empty()
            && !item.path.is_empty()
            && (under(item.path, needle.path) || under(needle.path, item.path))
    })
}

/// Each of `paths` that overlaps one in `earlier` (which it then joins), as upstream's
/// `volume "<name>" (<what>): overlapping paths: <this> with <earlier>`.
fn check_overlaps<'a>(
    paths: impl Iterator<Item = PathAndSource<'a>>,
    earlier: &mut Vec<PathAndSource<'a>>,
    volume: &str,
    what: &dyn std::fmt::Display,
    out: &mut Vec<String>,
) {
    for mut ps in paths {
        ps.path = ps.path.trim_end_matches('/');
        for other in overlaps(earlier, ps) {
            out.push(format!(
                "volume {} ({what}): overlapping paths: {ps} with {other}",
                go_quote(volume)
            ));
        }
        earlier.push(ps);
    }
}

fn item_paths<'a>(
    items: &'a [Value],
    source: Source<'a>,
) -> impl Iterator<Item = PathAndSource<'a>> {
    items.iter().map(move |i| PathAndSource {
        path: text(i, "path"),
        source,
    })
}

/// The `items` of the source `key` of `v`, when set.
fn items_of<'a>(v: &'a Value, key: &str) -> Option<&'a [Value]> {
    let items = set(v, key)?.get("items").filter(|i| !i.is_null())?;
    Some(list(Some(items)))
}

/// Upstream's warningsForOverlappingVirtualPaths: items of one configMap, secret or downwardAPI
/// volume, or of all sources of a projected volume, written to the same path or one inside
/// another. As in 1.33, a projected source without items repeats the previous source's paths.
fn overlapping_paths(volumes: &[Value], out: &mut Vec<String>) {
    struct Kind<'a>(&'a str, &'a str);
    impl std::fmt::Display for Kind<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{} {}", self.0, go_quote(self.1))
        }
    }
    for v in volumes {
        let vol = text(v, "name");
        if let Some(items) = items_of(v, "configMap") {
            let what = Kind("ConfigMap", text(&v["configMap"], "name"));
            let paths = item_paths(items, Source::Plain);
            check_overlaps(paths, &mut Vec::new(), vol, &what, out);
        }
        if let Some(items) = items_of(v, "secret") {
            let what = Kind("Secret", text(&v["secret"], "secretName"));
            let paths = item_paths(items, Source::Plain);
            check_overlaps(paths, &mut Vec::new(), vol, &what, out);
        }
        if let Some(items) = items_of(v, "downwardAPI") {
            let paths = item_paths(items, Source::Plain);
            check_overlaps(paths, &mut Vec::new(), vol, &"DownwardAPI", out);
        }
        let Some(projected) = set(v, "projected") else {
            continue;
        };
        let mut all = Vec::new();
        let mut paths: Vec<PathAndSource> = Vec::new();
        for s in list(projected.get("sources")) {
            const SOURCES: [&str; 5] = [
                "configMap",
                "secret",
                "downwardAPI",
                "serviceAccountToken",
                "clusterTrustBundle",
            ];
            if !SOURCES.iter().any(|k| set(s, k).is_some()) {
                out.push(format!(
                    "volume {} (Projected) has no sources provided",
                    go_quote(vol)
                ));
                continue;
            }
            if let Some(items) = items_of(s, "configMap") {
                let source = Source::ConfigMap(text(&s["configMap"], "name"));
                paths.clear();
                paths.extend(item_paths(items, source));
            } else if let Some(items) = items_of(s, "secret") {
                let source = Source::Secret(text(&s["secret"], "name"));
                paths.clear();
                paths.extend(item_paths(items, source));
            } else if let Some(items) = items_of(s, "downwardAPI") {
                paths.clear();
                paths.extend(item_paths(items, Source::DownwardApi));
            } else if let Some(t) = set(s, "serviceAccountToken") {
                paths.clear();
                paths.push(PathAndSource {
                    path: text(t, "path"),
                    source: Source::Token,
                });
            } else if let Some(b) = set(s, "clusterTrustBundle") {
                let name = b.get("name").and_then(Value::as_str);
                let bundle = name.unwrap_or_else(|| text(b, "signerName"));
                paths.clear();
                paths.push(PathAndSource {
                    path: text(b, "path"),
                    source: Source::Bundle(bundle),
                });
            }
            check_overlaps(paths.iter().copied(), &mut all, vol, &"Projected", out);
        }
    }
}

/// An env var redefinition that does not build on the previous value hides it.
fn env_redefinitions(c: &Value, at: impl Fn() -> String, out: &mut Vec<String>) {
    let env = list(c.get("env"));
    let mut names = HashSet::new();
    for (i, e) in env.iter().enumerate() {
        let name = text(e, "name");
        if names.insert(name) {
            continue;
        }
        let reference = format!("$({name})");
        let value = text(e, "value");
        if set(e, "valueFrom").is_some() || value == reference || !value.contains(&reference) {
            out.push(format!(
                "{}.env[{i}]: hides previous definition of {}, which may be dropped when \
                 using apply",
                at(),
                go_quote(name)
            ));
        }
    }
}

/// Upstream's container port warnings: a host IP without a host port, and ports of all
/// containers that repeat, overlap or are ambiguous for one container port and protocol.
fn port_warnings<'a, I>(containers: impl Fn() -> I, prefix: &str, out: &mut Vec<String>)
where
    I: Iterator<Item = (&'static str, usize, &'a Value)>,
{
    // (container port, protocol, host IP, host port, list, container index, port index)
    type Port<'a> = (i64, &'a str, &'a str, i64, &'static str, usize, usize);
    let mut seen: Vec<Port> = Vec::new();
    let field = |(.., l, c, i): &Port| format!("{prefix}spec.{l}[{c}].ports[{i}]");
    for (l, ci, c) in containers() {
        for (i, p) in list(c.get("ports")).iter().enumerate() {
            let host_ip = text(p, "hostIP");
            let host_port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let container_port = p.get("containerPort").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            let port: Port = (container_port, protocol, host_ip, host_port, l, ci, i);
            if !host_ip.is_empty() && host_port == 0 {
                out.push(format!(
                    "{}: hostIP set without hostPort: {{Name:{} HostPort:{host_port} \
                     ContainerPort:{container_port} Protocol:{protocol} HostIP:{host_ip}}}",
                    field(&port),
                    text(p, "name")
                ));
            }
            let same = seen
                .iter()
                .filter(|o| o.0 == container_port && o.1 == protocol);
            for other in same {
                let (other_ip, other_port) = (other.2, other.3);
                let (a, b) = (host_ip.is_empty(), other_ip.is_empty());
                let what = if host_ip == other_ip && host_port == other_port {
                    "duplicate"
                } else if host_port == 0 || other_port == 0 {
                    "overlapping"
                } else if host_port == other_port && a != b {
                    "dangerously ambiguous"
                } else {
                    continue;
                };
                out.push(format!(
                    "{}: {what} port definition with {}",
                    field(&port),
                    field(other)
                ));
            }
            seen.push(port);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::pod;

    #[test]
    fn pod_template_warnings_are_upstreams() {
        let template = json!({
            "metadata": { "annotations": {
                "seccomp.security.alpha.kubernetes.io/pod": "runtime/default",
                "container.seccomp.security.alpha.kubernetes.io/c": "runtime/default",
                "container.apparmor.security.beta.kubernetes.io/c": "runtime/default" } },
            "spec": {
                "terminationGracePeriodSeconds": -1,
                "nodeSelector": { "node-role.kubernetes.io/master": "" },
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
                            { "matchExpressions": [{ "key": "beta.kubernetes.io/os",
                                "operator": "In", "values": ["linux"] }] }] },
                        "preferredDuringSchedulingIgnoredDuringExecution": [{ "weight": 1,
                            "preference": { "matchExpressions": [{
                                "key": "failure-domain.beta.kubernetes.io/zone",
                                "operator": "Exists" }] } }] },
                    "podAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": [
                        { "topologyKey": "zone" }] },
                    "podAntiAffinity": { "preferredDuringSchedulingIgnoredDuringExecution": [
                        { "weight": 1, "podAffinityTerm": { "topologyKey": "zone" } }] } },
                "topologySpreadConstraints": [{ "maxSkew": 1,
                    "topologyKey": "failure-domain.beta.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule" }],
                "volumes": [
                    { "name": "s", "storageos": {} },
                    { "name": "e", "ephemeral": { "volumeClaimTemplate": { "spec": {
                        "resources": { "requests": { "storage": "1.5" } } } } } },
                    { "name": "p", "projected": { "sources": [
                        { "serviceAccountToken": { "path": "token" } },
                        { "configMap": { "name": "m", "items": [{ "key": "k", "path": "token" }] } }
                    ] } },
                    { "name": "q", "configMap": { "name": "n", "items": [
                        { "key": "x", "path": "a/" }, { "key": "y", "path": "a/b" },
                        { "key": "z", "path": "ab" }] } },
                    { "name": "r", "projected": { "sources": [{}] } }],
                "hostAliases": [{ "ip": "10.0.0.1" }, { "ip": "10.0.0.1" }],
                "imagePullSecrets": [{ "name": "" }, { "name": "" }],
                "overhead": { "memory": "0.5" },
                "containers": [
                    { "name": "c", "image": "i",
                      "resources": { "limits": { "memory": "100m" } },
                      "ports": [{ "containerPort": 80, "hostIP": "10.0.0.2" }] },
                    { "name": "d", "image": "i",
                      "ports": [{ "containerPort": 80, "hostPort": 8080, "hostIP": "10.0.0.3" },
                                { "containerPort": 80, "hostPort": 8080 }] }]
            }
        });
        let p = "spec.template.";
        let want = [
            format!(
                "{p}spec.nodeSelector[node-role.kubernetes.io/master]: use \"node-role.kubernetes.io/control-plane\" instead"
            ),
            format!(
                "{p}spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/os is deprecated since v1.14; use \"kubernetes.io/os\" instead"
            ),
            format!(
                "{p}spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"
            ),
            format!(
                "{p}spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead"
            ),
            format!(
                "{p}spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod"
            ),
            format!("{p}spec.volumes[0].storageOS: deprecated in v1.22, non-functional in v1.25+"),
            format!(
                "{p}spec.volumes[1].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value \"1500m\" is invalid, must be an integer"
            ),
            "volume \"p\" (Projected): overlapping paths: \"token\" (ConfigMap \"m\") with \"token\" (ServiceAccountToken)".to_string(),
            "volume \"q\" (ConfigMap \"n\"): overlapping paths: \"a/b\" with \"a\"".to_string(),
            "volume \"r\" (Projected) has no sources provided".to_string(),
            format!("{p}spec.hostAliases[1].ip: duplicate ip \"10.0.0.1\""),
            format!("{p}spec.imagePullSecrets[1].name: duplicate name \"\""),
            format!("{p}spec.imagePullSecrets[0].name: invalid empty name \"\""),
            format!("{p}spec.imagePullSecrets[1].name: invalid empty name \"\""),
            format!(
                "{p}spec.overhead[memory]: fractional byte value \"500m\" is invalid, must be an integer"
            ),
            format!(
                "{p}metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the \"seccompProfile\" field instead"
            ),
            format!(
                "{p}metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: non-functional in v1.27+; use the \"seccompProfile\" field instead"
            ),
            format!(
                "{p}metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: deprecated since v1.30; use the \"appArmorProfile\" field instead"
            ),
            format!(
                "{p}spec.containers[0].resources.limits[memory]: fractional byte value \"100m\" is invalid, must be an integer"
            ),
            format!(
                "{p}spec.containers[0].ports[0]: hostIP set without hostPort: {{Name: HostPort:0 ContainerPort:80 Protocol:TCP HostIP:10.0.0.2}}"
            ),
            format!(
                "{p}spec.containers[1].ports[0]: overlapping port definition with {p}spec.containers[0].ports[0]"
            ),
            format!(
                "{p}spec.containers[1].ports[1]: overlapping port definition with {p}spec.containers[0].ports[0]"
            ),
            format!(
                "{p}spec.containers[1].ports[1]: dangerously ambiguous port definition with {p}spec.containers[1].ports[0]"
            ),
            format!(
                "{p}spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"
            ),
            format!(
                "{p}spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod"
            ),
            format!(
                "{p}spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector: a null labelSelector results in matching no pod"
            ),
        ];
        assert_eq!(pod(&template, p), want);
        // A Pod gets no AppArmor annotation warning here (its version-skew sync gives it).
        let warnings = pod(&template, "");
        assert!(
            !warnings.iter().any(|w| w.contains("apparmor")),
            "{warnings:?}"
        );
        assert_eq!(warnings.len(), want.len() - 1);
        // 1.33's projected check repeats the previous source's paths for a source without
        // items, so such a volume warns of itself.
        let repeated = json!({ "spec": { "containers": [{ "name": "c", "image": "i" }],
            "volumes": [{ "name": "v", "projected": { "sources": [
                { "secret": { "name": "s1", "items": [{ "key": "k", "path": "k" }] } },
                { "secret": { "name": "s2" } }] } }] } });
        assert_eq!(
            pod(&repeated, p),
            [
                "volume \"v\" (Projected): overlapping paths: \"k\" (Secret \"s1\") with \"k\" (Secret \"s1\")"
            ]
        );
        // Nothing for a plain template.
        let plain = json!({ "spec": { "containers": [{ "name": "c", "image": "i",
            "resources": { "requests": { "memory": "1Gi" } },
            "ports": [{ "containerPort": 80 }] }] } });
        assert!(pod(&plain, p).is_empty());
    }
}

#[cfg(test)]
mod volume_node_secret_tests {
    use serde_json::json;

    #[test]
    fn claim_warnings() {
        let pvc = json!({
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "x"}},
            "spec": {"resources": {"requests": {"storage": "1500m"}, "limits": {"storage": "1Gi"}}},
        });
        assert_eq!(
            super::persistent_volume_claim(&pvc),
            [
                r#"metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead"#,
                r#"spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer"#,
            ]
        );
        assert!(super::persistent_volume_claim(&json!({"spec": {}})).is_empty());
    }

    #[test]
    fn volume_warnings() {
        let pv = json!({
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": ""}},
            "spec": {
                "persistentVolumeReclaimPolicy": "Recycle",
                "nodeAffinity": {"required": {"nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "kubernetes.io/os", "operator": "Exists"},
                        {"key": "beta.kubernetes.io/os", "operator": "Exists"},
                    ]},
                ]}},
                "storageos": {"volumeName": "v"},
                "rbd": {"monitors": ["m"], "image": "i"},
            },
        });
        assert_eq!(
            super::persistent_volume(&pv),
            [
                r#"metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead"#,
                "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.",
                r#"spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[1].key: beta.kubernetes.io/os is deprecated since v1.14; use "kubernetes.io/os" instead"#,
                "spec.storageOS: deprecated in v1.22, non-functional in v1.25+",
                "spec.rbd: deprecated in v1.28, non-functional in v1.31+",
            ]
        );
        let plain = json!({"spec": {"persistentVolumeReclaimPolicy": "Retain", "nfs": {}}});
        assert!(super::persistent_volume(&plain).is_empty());
    }

    #[test]
    fn node_warnings() {
        let node = json!({"spec": {"configSource": {}, "externalID": "x"}});
        assert_eq!(
            super::node(&node, false),
            ["spec.externalID: this field is deprecated, and is unused by Kubernetes"]
        );
        assert_eq!(super::node(&node, true).len(), 2);
        assert_eq!(
            super::node(&node, true)[0],
            "spec.configSource: the feature is removed"
        );
    }

    #[test]
    fn secret_warnings_only_for_tls() {
        let opaque = json!({"type": "Opaque", "data": {"tls.crt": ""}});
        assert!(super::secret(&opaque).is_empty());
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            super::secret(&tls),
            ["tls: failed to find any PEM data in certificate input"]
        );
    }
}
