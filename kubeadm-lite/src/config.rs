//! kubeadm's configuration API in files: `kubeadm.k8s.io/v1beta4` (and the deprecated v1beta3,
//! read with kubeadm's warning) InitConfiguration, ClusterConfiguration and JoinConfiguration,
//! as multi-document YAML. Each document is checked against kubeadm's field schema: a wrong type
//! is an error, an unknown field a warning (kubeadm's strict decoding warns on init/join and
//! errors in `config validate` / `config migrate`). The fields k1s can honour are mapped onto
//! init's and join's options; the rest are kubeadm's and ignored, the ones that would change
//! behaviour with a warning that says so.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::init::{InitOptions, TokenSpec};
use crate::token;

/// A configuration problem; the message is what the user sees.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

pub const GROUP: &str = "kubeadm.k8s.io";
pub const V1BETA4: &str = "kubeadm.k8s.io/v1beta4";
pub const V1BETA3: &str = "kubeadm.k8s.io/v1beta3";

/// One YAML document with its apiVersion and kind.
#[derive(Debug, Clone)]
pub struct Document {
    pub api_version: String,
    pub kind: String,
    pub body: Map<String, Value>,
}

impl Document {
    fn gvk(&self) -> String {
        let (group, version) = self
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", &self.api_version));
        format!(
            "schema.GroupVersionKind{{Group:{group:?}, Version:{version:?}, Kind:{:?}}}",
            self.kind
        )
    }

    fn is_v1beta3(&self) -> bool {
        self.api_version == V1BETA3
    }
}

/// Splits a file into its documents; each must be a mapping with apiVersion and kind.
pub fn split_documents(text: &str) -> Result<Vec<Document>, ConfigError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| ConfigError(format!("error converting YAML to JSON: {e}")))?;
    let mut out = Vec::new();
    for doc in docs {
        let body = match doc {
            Value::Null => continue,
            Value::Object(m) => m,
            other => {
                return Err(ConfigError(format!(
                    "a configuration document must be a mapping, found: {other}"
                )));
            }
        };
        let field = |name: &str| body.get(name).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (field("apiVersion").to_string(), field("kind").to_string());
        if kind.is_empty() {
            return Err(ConfigError(
                "Object 'Kind' is missing in the YAML document".into(),
            ));
        }
        if api_version.is_empty() {
            return Err(ConfigError(format!(
                "Object 'apiVersion' is missing in the YAML document of kind {kind:?}"
            )));
        }
        out.push(Document {
            api_version,
            kind,
            body,
        });
    }
    Ok(out)
}

/// kubeadm's support matrix: older versions are refused with its message, v1beta3 warns.
fn check_version(doc: &Document, warnings: &mut Vec<String>) -> Result<(), ConfigError> {
    const OLD: [(&str, &str); 5] = [
        ("kubeadm.k8s.io/v1alpha1", "v1.11"),
        ("kubeadm.k8s.io/v1alpha2", "v1.12"),
        ("kubeadm.k8s.io/v1alpha3", "v1.14"),
        ("kubeadm.k8s.io/v1beta1", "v1.15"),
        ("kubeadm.k8s.io/v1beta2", "v1.22"),
    ];
    if let Some((gv, kubeadm)) = OLD.iter().find(|(gv, _)| *gv == doc.api_version) {
        return Err(ConfigError(format!(
            "your configuration file uses an old API spec: {gv:?} (kind: {:?}). Please use kubeadm {kubeadm} instead and run 'kubeadm config migrate --old-config old.yaml --new-config new.yaml', which will write the new, similar spec using a newer API version.",
            doc.kind
        )));
    }
    if doc.is_v1beta3() {
        warnings.push(format!(
            "your configuration file uses a deprecated API spec: {V1BETA3:?} (kind: {:?}). Please use 'k1s config migrate --old-config old.yaml --new-config new.yaml', which will write the new, similar spec using a newer API version.",
            doc.kind
        ));
    }
    Ok(())
}

// --- kubeadm's field schema (v1beta4, plus v1beta3's differences) ---

/// A field's type.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Int,
    Bool,
    /// A Go duration string (`24h0m0s`).
    Duration,
    /// Anything (maps of feature gates, patches, ...).
    Any,
    Obj(&'static [(&'static str, Ty)]),
    List(&'static Ty),
    /// `extraArgs`: a list of {name, value} in v1beta4, a string map in v1beta3.
    Args,
    /// Only in v1beta4 / only in v1beta3.
    V4(&'static Ty),
    V3(&'static Ty),
}

const META: [(&str, Ty); 2] = [("apiVersion", Ty::Str), ("kind", Ty::Str)];
const ENV: Ty = Ty::Obj(&[
    ("name", Ty::Str),
    ("value", Ty::Str),
    ("valueFrom", Ty::Any),
]);
const VOLUME: Ty = Ty::Obj(&[
    ("name", Ty::Str),
    ("hostPath", Ty::Str),
    ("mountPath", Ty::Str),
    ("readOnly", Ty::Bool),
    ("pathType", Ty::Str),
]);
const COMPONENT: [(&str, Ty); 3] = [
    ("extraArgs", Ty::Args),
    ("extraVolumes", Ty::List(&VOLUME)),
    ("extraEnvs", Ty::V4(&Ty::List(&ENV))),
];
const TAINT: Ty = Ty::Obj(&[
    ("key", Ty::Str),
    ("value", Ty::Str),
    ("effect", Ty::Str),
    ("timeAdded", Ty::Str),
]);
const NODE_REGISTRATION: Ty = Ty::Obj(&[
    ("name", Ty::Str),
    ("criSocket", Ty::Str),
    ("taints", Ty::List(&TAINT)),
    ("kubeletExtraArgs", Ty::Args),
    ("ignorePreflightErrors", Ty::List(&Ty::Str)),
    ("imagePullPolicy", Ty::Str),
    ("imagePullSerial", Ty::V4(&Ty::Bool)),
]);
const API_ENDPOINT: Ty = Ty::Obj(&[("advertiseAddress", Ty::Str), ("bindPort", Ty::Int)]);
const PATCHES: Ty = Ty::Obj(&[("directory", Ty::Str)]);
const TIMEOUTS: Ty = Ty::Obj(&[
    ("controlPlaneComponentHealthCheck", Ty::Duration),
    ("kubeletHealthCheck", Ty::Duration),
    ("kubernetesAPICall", Ty::Duration),
    ("etcdAPICall", Ty::Duration),
    ("tlsBootstrap", Ty::Duration),
    ("discovery", Ty::Duration),
    ("upgradeManifests", Ty::Duration),
]);
const BOOTSTRAP_TOKEN: Ty = Ty::Obj(&[
    ("token", Ty::Str),
    ("description", Ty::Str),
    ("ttl", Ty::Duration),
    ("expires", Ty::Str),
    ("usages", Ty::List(&Ty::Str)),
    ("groups", Ty::List(&Ty::Str)),
]);
const INIT: &[(&str, Ty)] = &[
    ("bootstrapTokens", Ty::List(&BOOTSTRAP_TOKEN)),
    ("dryRun", Ty::Bool),
    ("nodeRegistration", NODE_REGISTRATION),
    ("localAPIEndpoint", API_ENDPOINT),
    ("certificateKey", Ty::Str),
    ("skipPhases", Ty::List(&Ty::Str)),
    ("patches", PATCHES),
    ("timeouts", Ty::V4(&TIMEOUTS)),
];
const IMAGE_META: [(&str, Ty); 2] = [("imageRepository", Ty::Str), ("imageTag", Ty::Str)];
const CLUSTER: &[(&str, Ty)] = &[
    (
        "etcd",
        Ty::Obj(&[
            (
                "local",
                Ty::Obj(&[
                    IMAGE_META[0],
                    IMAGE_META[1],
                    ("dataDir", Ty::Str),
                    ("extraArgs", Ty::Args),
                    ("extraEnvs", Ty::V4(&Ty::List(&ENV))),
                    ("serverCertSANs", Ty::List(&Ty::Str)),
                    ("peerCertSANs", Ty::List(&Ty::Str)),
                ]),
            ),
            (
                "external",
                Ty::Obj(&[
                    ("endpoints", Ty::List(&Ty::Str)),
                    ("caFile", Ty::Str),
                    ("certFile", Ty::Str),
                    ("keyFile", Ty::Str),
                ]),
            ),
        ]),
    ),
    (
        "networking",
        Ty::Obj(&[
            ("serviceSubnet", Ty::Str),
            ("podSubnet", Ty::Str),
            ("dnsDomain", Ty::Str),
        ]),
    ),
    ("kubernetesVersion", Ty::Str),
    ("controlPlaneEndpoint", Ty::Str),
    (
        "apiServer",
        Ty::Obj(&[
            COMPONENT[0],
            COMPONENT[1],
            COMPONENT[2],
            ("certSANs", Ty::List(&Ty::Str)),
            ("timeoutForControlPlane", Ty::V3(&Ty::Duration)),
        ]),
    ),
    ("controllerManager", Ty::Obj(&COMPONENT)),
    ("scheduler", Ty::Obj(&COMPONENT)),
    (
        "dns",
        Ty::Obj(&[
            IMAGE_META[0],
            IMAGE_META[1],
            ("disabled", Ty::V4(&Ty::Bool)),
        ]),
    ),
    ("proxy", Ty::V4(&Ty::Obj(&[("disabled", Ty::Bool)]))),
    ("certificatesDir", Ty::Str),
    ("imageRepository", Ty::Str),
    ("featureGates", Ty::Any),
    ("clusterName", Ty::Str),
    ("encryptionAlgorithm", Ty::V4(&Ty::Str)),
    ("certificateValidityPeriod", Ty::V4(&Ty::Duration)),
    ("caCertificateValidityPeriod", Ty::V4(&Ty::Duration)),
];
const JOIN: &[(&str, Ty)] = &[
    ("dryRun", Ty::Bool),
    ("nodeRegistration", NODE_REGISTRATION),
    ("caCertPath", Ty::Str),
    (
        "discovery",
        Ty::Obj(&[
            (
                "bootstrapToken",
                Ty::Obj(&[
                    ("token", Ty::Str),
                    ("apiServerEndpoint", Ty::Str),
                    ("caCertHashes", Ty::List(&Ty::Str)),
                    ("unsafeSkipCAVerification", Ty::Bool),
                ]),
            ),
            ("file", Ty::Obj(&[("kubeConfigPath", Ty::Str)])),
            ("tlsBootstrapToken", Ty::Str),
            ("timeout", Ty::V3(&Ty::Duration)),
        ]),
    ),
    (
        "controlPlane",
        Ty::Obj(&[
            ("localAPIEndpoint", API_ENDPOINT),
            ("certificateKey", Ty::Str),
        ]),
    ),
    ("skipPhases", Ty::List(&Ty::Str)),
    ("patches", PATCHES),
    ("timeouts", Ty::V4(&TIMEOUTS)),
];
const RESET: &[(&str, Ty)] = &[
    ("cleanupTmpDir", Ty::Bool),
    ("certificatesDir", Ty::Str),
    ("criSocket", Ty::Str),
    ("dryRun", Ty::Bool),
    ("force", Ty::Bool),
    ("ignorePreflightErrors", Ty::List(&Ty::Str)),
    ("skipPhases", Ty::List(&Ty::Str)),
    ("unmountFlags", Ty::List(&Ty::Str)),
    ("timeouts", Ty::V4(&TIMEOUTS)),
];

/// The schema of a kubeadm kind, or None for a kind kubeadm does not have.
fn schema(kind: &str) -> Option<&'static [(&'static str, Ty)]> {
    match kind {
        "InitConfiguration" => Some(INIT),
        "ClusterConfiguration" => Some(CLUSTER),
        "JoinConfiguration" => Some(JOIN),
        "ResetConfiguration" => Some(RESET),
        _ => None,
    }
}

/// What checking a document found: unknown fields (kubeadm's strict-decoding complaints) and
/// type errors (always fatal, as kubeadm's decoder fails on them).
#[derive(Default)]
struct Findings {
    unknown: Vec<String>,
    wrong: Vec<String>,
}

fn join_path(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn check_value(v: &Value, ty: &Ty, v3: bool, path: &str, out: &mut Findings) {
    let mut wrong = |want: &str| out.wrong.push(format!("{path}: expected {want}, got {v}"));
    match ty {
        Ty::V4(inner) if !v3 => check_value(v, inner, v3, path, out),
        Ty::V3(inner) if v3 => check_value(v, inner, v3, path, out),
        Ty::V4(_) | Ty::V3(_) => out.unknown.push(path.to_string()),
        _ if v.is_null() => {}
        Ty::Str => {
            if !v.is_string() {
                wrong("a string");
            }
        }
        Ty::Int => {
            if !v.is_i64() {
                wrong("an integer");
            }
        }
        Ty::Bool => {
            if !v.is_boolean() {
                wrong("true or false");
            }
        }
        Ty::Duration => match v.as_str() {
            Some(s) if token::parse_duration(s).is_ok() => {}
            _ => wrong("a duration such as 24h0m0s"),
        },
        Ty::Any => {}
        Ty::Args if v3 => match v.as_object() {
            Some(m) if m.values().all(Value::is_string) => {}
            _ => wrong("a map of flag names to string values (v1beta3)"),
        },
        Ty::Args => check_value(
            v,
            &Ty::List(&Ty::Obj(&[("name", Ty::Str), ("value", Ty::Str)])),
            v3,
            path,
            out,
        ),
        Ty::List(item) => match v.as_array() {
            Some(items) => {
                for (i, item_v) in items.iter().enumerate() {
                    check_value(item_v, item, v3, &format!("{path}[{i}]"), out);
                }
            }
            None => wrong("a list"),
        },
        Ty::Obj(fields) => match v.as_object() {
            Some(m) => check_fields(m, fields, v3, path, out),
            None => wrong("a mapping"),
        },
    }
}

fn check_fields(
    m: &Map<String, Value>,
    fields: &[(&str, Ty)],
    v3: bool,
    prefix: &str,
    out: &mut Findings,
) {
    for (k, v) in m {
        let path = join_path(prefix, k);
        match fields.iter().find(|(name, _)| name == k) {
            Some((_, ty)) => check_value(v, ty, v3, &path, out),
            None => out.unknown.push(path),
        }
    }
}

/// Checks a document against its kind's schema. Unknown fields become warnings, or an error
/// when `strict`; a field of the wrong type is always an error.
fn check_document(
    doc: &Document,
    strict: bool,
    warnings: &mut Vec<String>,
) -> Result<(), ConfigError> {
    let Some(fields) = schema(&doc.kind) else {
        return Err(ConfigError(format!(
            "unknown configuration {} for scheme definitions in {GROUP:?}",
            doc.gvk()
        )));
    };
    let mut found = Findings::default();
    let body: Map<String, Value> = doc
        .body
        .iter()
        .filter(|(k, _)| !META.iter().any(|(m, _)| m == k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    check_fields(&body, fields, doc.is_v1beta3(), "", &mut found);
    if !found.wrong.is_empty() {
        return Err(ConfigError(format!(
            "error unmarshaling configuration {}: {}",
            doc.gvk(),
            found.wrong.join("; ")
        )));
    }
    if !found.unknown.is_empty() {
        let list = found
            .unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!(
            "error unmarshaling configuration {}: strict decoding error: {list}",
            doc.gvk()
        );
        if strict {
            return Err(ConfigError(msg));
        }
        warnings.push(msg);
    }
    Ok(())
}

/// The documents of an init or join file after the version and schema checks.
#[derive(Debug, Default)]
pub struct Loaded {
    pub init: Option<Document>,
    pub cluster: Option<Document>,
    pub join: Option<Document>,
    pub reset: Option<Document>,
    pub warnings: Vec<String>,
}

/// Reads every document: kubeadm's version check, the schema check (unknown fields warn unless
/// `strict`), and a warning for documents of other API groups (KubeletConfiguration, ...), which
/// k1s ignores as kubeadm ignores unknown groups.
pub fn load(text: &str, strict: bool) -> Result<Loaded, ConfigError> {
    let mut out = Loaded::default();
    for doc in split_documents(text)? {
        let group = doc.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if group != GROUP {
            if strict && !matches!(group, "kubelet.config.k8s.io" | "kubeproxy.config.k8s.io") {
                return Err(ConfigError(format!(
                    "unknown configuration APIs: {}",
                    doc.gvk()
                )));
            }
            out.warnings.push(format!(
                "[config] WARNING: Ignored configuration document with GroupVersionKind {}",
                doc.gvk()
            ));
            continue;
        }
        check_version(&doc, &mut out.warnings)?;
        if doc.api_version != V1BETA4 && !doc.is_v1beta3() {
            return Err(ConfigError(format!(
                "unknown configuration APIs: {} (k1s reads {V1BETA4} and {V1BETA3})",
                doc.gvk()
            )));
        }
        check_document(&doc, strict, &mut out.warnings)?;
        let slot = match doc.kind.as_str() {
            "InitConfiguration" => &mut out.init,
            "ClusterConfiguration" => &mut out.cluster,
            "JoinConfiguration" => &mut out.join,
            _ => &mut out.reset,
        };
        if slot.is_some() {
            return Err(ConfigError(format!(
                "invalid configuration: kind {:?} is defined more than once",
                doc.kind
            )));
        }
        *slot = Some(doc);
    }
    Ok(out)
}

/// Reads a `--config` file.
pub fn read_file(path: &std::path::Path, strict: bool) -> Result<Loaded, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError(format!(
            "unable to read config from {:?}: {e}",
            path.display().to_string()
        ))
    })?;
    load(&text, strict)
}

/// The `k1s init` flags a file replaces: kubeadm refuses them beside `--config`.
pub const INIT_FILE_FLAGS: [&str; 10] = [
    "apiserver-advertise-address",
    "apiserver-bind-port",
    "apiserver-cert-extra-sans",
    "cert-dir",
    "token",
    "token-ttl",
    "service-cidr",
    "pod-network-cidr",
    "service-dns-domain",
    "certificate-key",
];

/// The `k1s join` flags a file replaces.
pub const JOIN_FILE_FLAGS: [&str; 10] = [
    "token",
    "discovery-token",
    "discovery-file",
    "tls-bootstrap-token",
    "discovery-token-ca-cert-hash",
    "discovery-token-unsafe-skip-ca-verification",
    "discovery-timeout",
    "tls-bootstrap-timeout",
    "control-plane",
    "certificate-key",
];

/// kubeadm's `ValidateMixedArguments`: `--config` goes with no flag that the file sets
/// (`file_flags`); kubeadm's other flags (`--node-name`, `--dry-run`, `--skip-*`, ...) and
/// k1s's own (`--data-dir`, ...) may accompany it. `given`: the flags on the command line.
pub fn check_mixed_args(given: &[String], file_flags: &[&str]) -> Result<(), ConfigError> {
    if !given.iter().any(|f| f == "config") {
        return Ok(());
    }
    let mixed: Vec<&str> = given
        .iter()
        .map(String::as_str)
        .filter(|f| file_flags.contains(f))
        .collect();
    if mixed.is_empty() {
        Ok(())
    } else {
        Err(ConfigError(format!(
            "can not mix '--config' with arguments [{}]",
            mixed.join(" ")
        )))
    }
}

// --- mapping onto k1s's options ---

fn get<'a>(doc: &'a Document, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut cur = doc.body.get(parts.next()?)?;
    for p in parts {
        cur = cur.get(p)?;
    }
    (!cur.is_null()).then_some(cur)
}

fn get_str<'a>(doc: &'a Document, path: &str) -> Option<&'a str> {
    get(doc, path)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn invalid(field: &str, value: &str, detail: &str) -> ConfigError {
    ConfigError(format!("{field}: Invalid value: {value:?}: {detail}"))
}

/// Fields kubeadm has that would change what a kubeadm cluster looks like but that k1s does not
/// act on; set, each gets a warning.
const NOT_APPLIED: [(&str, &str); 8] = [
    ("featureGates", "k1s has no kubeadm feature gates"),
    (
        "apiServer.extraArgs",
        "the API server runs in this process, not from flags",
    ),
    (
        "controllerManager.extraArgs",
        "pass controller flags to 'k1s init' itself",
    ),
    ("scheduler.extraArgs", "the scheduler runs in this process"),
    (
        "nodeRegistration.kubeletExtraArgs",
        "k1s's nodes are simulated",
    ),
    ("patches", "k1s writes no static Pod manifests to patch"),
    ("certificateValidityPeriod", "k1s issues leaves for 1 year"),
    ("caCertificateValidityPeriod", "k1s's CAs live 10 years"),
];

fn not_applied(doc: &Document, warnings: &mut Vec<String>) {
    for (path, why) in NOT_APPLIED {
        let set = get(doc, path).is_some_and(|v| match v {
            Value::Array(a) => !a.is_empty(),
            Value::Object(m) => !m.is_empty(),
            Value::String(s) => {
                // The defaults k1s prints are not worth a warning.
                !(path == "certificateValidityPeriod" && s == "8760h0m0s"
                    || path == "caCertificateValidityPeriod" && s == "87600h0m0s")
            }
            _ => true,
        });
        if set {
            warnings.push(format!(
                "[config] WARNING: {} {path} is not applied by k1s: {why}",
                doc.kind
            ));
        }
    }
}

fn token_spec(v: &Value, i: usize) -> Result<TokenSpec, ConfigError> {
    let field = |name: &str| format!("bootstrapTokens[{i}].{name}");
    let tok = v
        .get("token")
        .and_then(Value::as_str)
        .ok_or_else(|| ConfigError(format!("{}: Required value", field("token"))))?;
    token::parse_token(tok).map_err(|e| invalid(&field("token"), tok, &e.to_string()))?;
    let ttl = match (
        v.get("ttl").and_then(Value::as_str),
        v.get("expires").and_then(Value::as_str),
    ) {
        (Some(_), Some(_)) => {
            return Err(ConfigError(format!(
                "{}: Invalid value: ttl and expires are mutually exclusive",
                field("ttl")
            )));
        }
        (Some(ttl), None) => {
            token::parse_duration(ttl).map_err(|e| invalid(&field("ttl"), ttl, &e.to_string()))?
        }
        (None, Some(exp)) => {
            let at: jiff::Timestamp = exp
                .parse()
                .map_err(|e| invalid(&field("expires"), exp, &format!("not RFC 3339: {e}")))?;
            let secs = at.as_second() - jiff::Timestamp::now().as_second();
            if secs <= 0 {
                return Err(invalid(&field("expires"), exp, "is in the past"));
            }
            Duration::from_secs(secs.unsigned_abs())
        }
        (None, None) => token::DEFAULT_TTL,
    };
    let usages = v
        .get("usages")
        .map(strings)
        .unwrap_or_else(|| token::DEFAULT_USAGES.map(String::from).to_vec());
    let groups = v
        .get("groups")
        .map(strings)
        .unwrap_or_else(|| vec![token::DEFAULT_GROUP.to_string()]);
    token::validate_usages(&usages)
        .map_err(|e| ConfigError(format!("{}: {e}", field("usages"))))?;
    token::validate_groups(&groups)
        .map_err(|e| ConfigError(format!("{}: {e}", field("groups"))))?;
    Ok(TokenSpec {
        token: tok.to_string(),
        ttl,
        description: v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        usages,
        groups,
    })
}

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

fn taints(v: &Value) -> Result<Vec<Value>, ConfigError> {
    let mut out = Vec::new();
    for (i, t) in v.as_array().into_iter().flatten().enumerate() {
        let key = t.get("key").and_then(Value::as_str).unwrap_or("");
        let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
        if key.is_empty() {
            return Err(ConfigError(format!(
                "nodeRegistration.taints[{i}].key: Required value"
            )));
        }
        if !TAINT_EFFECTS.contains(&effect) {
            return Err(ConfigError(format!(
                "nodeRegistration.taints[{i}].effect: Unsupported value: {effect:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
            )));
        }
        let mut taint = json!({ "key": key, "effect": effect });
        if let Some(val) = t.get("value").and_then(Value::as_str) {
            taint["value"] = json!(val);
        }
        out.push(taint);
    }
    Ok(out)
}

/// Applies an init file's InitConfiguration and ClusterConfiguration onto `opts` (which holds
/// the defaults). Returns the warnings to print.
pub fn apply_init(loaded: &Loaded, opts: &mut InitOptions) -> Result<Vec<String>, ConfigError> {
    if loaded.init.is_none() && loaded.cluster.is_none() {
        let found = [&loaded.join, &loaded.reset]
            .into_iter()
            .flatten()
            .map(|d| d.kind.as_str())
            .collect::<Vec<_>>();
        let mut msg =
            "no InitConfiguration or ClusterConfiguration kind was found in the configuration file"
                .to_string();
        if !found.is_empty() {
            msg.push_str(&format!(
                " (found: {}; 'k1s join --config' takes a JoinConfiguration)",
                found.join(", ")
            ));
        }
        return Err(ConfigError(msg));
    }
    let mut warnings = loaded.warnings.clone();
    if let Some(doc) = &loaded.init {
        not_applied(doc, &mut warnings);
        if let Some(v) = get(doc, "bootstrapTokens") {
            let specs = v
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, t)| token_spec(t, i))
                .collect::<Result<Vec<_>, _>>()?;
            if !specs.is_empty() {
                opts.tokens = specs;
            }
        }
        if let Some(name) = get_str(doc, "nodeRegistration.name") {
            opts.node_name = name.to_string();
        }
        if let Some(v) = doc
            .body
            .get("nodeRegistration")
            .and_then(|n| n.get("taints"))
        {
            // `taints: []` means no taint; absent (or null) means kubeadm's default.
            if !v.is_null() {
                opts.taints = Some(taints(v)?);
            }
        }
        if let Some(addr) = get_str(doc, "localAPIEndpoint.advertiseAddress") {
            opts.advertise_address = addr.parse::<IpAddr>().map_err(|_| {
                invalid(
                    "localAPIEndpoint.advertiseAddress",
                    addr,
                    "must be a valid IP address",
                )
            })?;
        }
        if let Some(port) = get(doc, "localAPIEndpoint.bindPort").and_then(Value::as_i64) {
            opts.bind_port = u16::try_from(port).map_err(|_| {
                invalid(
                    "localAPIEndpoint.bindPort",
                    &port.to_string(),
                    "must be a valid port number between 0 and 65535",
                )
            })?;
        }
        if let Some(key) = get_str(doc, "certificateKey") {
            opts.certificate_key = Some(key.to_string());
        }
        if let Some(v) = get(doc, "skipPhases") {
            // The --skip-phases flag takes precedence, as in kubeadm.
            if opts.skip_phases.is_empty() {
                opts.skip_phases = strings(v);
            }
        }
        if get(doc, "dryRun").and_then(Value::as_bool) == Some(true) {
            opts.dry_run = true;
        }
    }
    if let Some(doc) = &loaded.cluster {
        not_applied(doc, &mut warnings);
        if let Some(v) = get(doc, "apiServer.certSANs") {
            opts.cert_extra_sans = strings(v);
        }
        if let Some(s) = get_str(doc, "networking.serviceSubnet") {
            opts.service_subnet = s.to_string();
        }
        if let Some(s) = get_str(doc, "networking.podSubnet") {
            opts.pod_subnet = s.to_string();
        }
        if let Some(s) = get_str(doc, "networking.dnsDomain") {
            opts.dns_domain = s.to_string();
        }
        if let Some(dir) = get_str(doc, "certificatesDir") {
            if !dir.starts_with('/') {
                return Err(invalid("certificatesDir", dir, "path is not absolute"));
            }
            opts.cert_dir = dir.into();
        }
        if let Some(name) = get_str(doc, "clusterName") {
            opts.cluster_name = name.to_string();
        }
        if let Some(endpoints) = get(doc, "etcd.external.endpoints") {
            let endpoints = strings(endpoints);
            if endpoints.is_empty() {
                return Err(ConfigError(
                    "etcd.external.endpoints: Required value".into(),
                ));
            }
            let file = |k: &str| {
                get_str(doc, &format!("etcd.external.{k}"))
                    .unwrap_or("")
                    .to_string()
            };
            opts.etcd_external = Some(crate::init::EtcdExternal {
                endpoints,
                ca_file: file("caFile"),
                cert_file: file("certFile"),
                key_file: file("keyFile"),
            });
        }
        if let Some(ep) = get_str(doc, "controlPlaneEndpoint") {
            opts.control_plane_endpoint = Some(ep.to_string());
        }
        if let Some(alg) = get_str(doc, "encryptionAlgorithm") {
            const ALGS: [&str; 4] = ["ECDSA-P256", "RSA-2048", "RSA-3072", "RSA-4096"];
            if !ALGS.contains(&alg) {
                return Err(ConfigError(format!(
                    "encryptionAlgorithm: Unsupported value: {alg:?}: supported values: \"ECDSA-P256\", \"RSA-2048\", \"RSA-3072\", \"RSA-4096\""
                )));
            }
            if alg != "ECDSA-P256" {
                warnings.push(format!(
                    "[config] WARNING: encryptionAlgorithm {alg} is not applied: k1s makes ECDSA-P256 keys for certificates"
                ));
            }
        }
        if let Some(v) = get_str(doc, "kubernetesVersion")
            && !v.starts_with("v1.33")
            && v != "stable"
            && v != "stable-1"
        {
            warnings.push(format!(
                "[config] WARNING: kubernetesVersion {v} is not applied: k1s serves {}",
                crate::init::KUBERNETES_VERSION
            ));
        }
    }
    crate::init::validate(opts).map_err(|e| ConfigError(e.to_string()))?;
    Ok(warnings)
}

/// What a JoinConfiguration sets for `k1s join`.
#[derive(Debug, Default, Clone)]
pub struct JoinFile {
    pub endpoint: Option<String>,
    pub token: Option<String>,
    /// discovery.tlsBootstrapToken.
    pub tls_bootstrap_token: Option<String>,
    /// discovery.file.kubeConfigPath.
    pub discovery_file: Option<String>,
    pub ca_cert_hashes: Vec<String>,
    pub unsafe_skip_ca_verification: bool,
    pub node_name: Option<String>,
    pub discovery_timeout: Option<Duration>,
    pub tls_bootstrap_timeout: Option<Duration>,
    pub control_plane: bool,
    pub certificate_key: Option<String>,
    pub dry_run: bool,
    pub warnings: Vec<String>,
}

/// Reads a join file's JoinConfiguration.
pub fn apply_join(loaded: &Loaded) -> Result<JoinFile, ConfigError> {
    let Some(doc) = &loaded.join else {
        let found = [&loaded.init, &loaded.cluster, &loaded.reset]
            .into_iter()
            .flatten()
            .map(|d| d.kind.as_str())
            .collect::<Vec<_>>();
        let mut msg = "no JoinConfiguration kind was found in the configuration file".to_string();
        if !found.is_empty() {
            msg.push_str(&format!(
                " (found: {}; 'k1s init --config' takes those)",
                found.join(", ")
            ));
        }
        return Err(ConfigError(msg));
    };
    let mut out = JoinFile {
        warnings: loaded.warnings.clone(),
        ..JoinFile::default()
    };
    not_applied(doc, &mut out.warnings);
    let bt = "discovery.bootstrapToken";
    let has_file = get(doc, "discovery.file").is_some();
    match (get(doc, bt).is_some(), has_file) {
        (false, false) => {
            return Err(ConfigError(
                "discovery: Invalid value: \"\": bootstrapToken or file must be set".into(),
            ));
        }
        (true, true) => {
            return Err(ConfigError(
                "discovery: Invalid value: \"\": bootstrapToken and file cannot both be set".into(),
            ));
        }
        _ => {}
    }
    out.tls_bootstrap_token = get_str(doc, "discovery.tlsBootstrapToken")
        .filter(|s| !s.is_empty())
        .map(String::from);
    if has_file {
        let path = get_str(doc, "discovery.file.kubeConfigPath")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ConfigError("discovery.file.kubeConfigPath: Required value".into()))?;
        out.discovery_file = Some(path.to_string());
    } else {
        out.endpoint = get_str(doc, &format!("{bt}.apiServerEndpoint")).map(String::from);
        out.token = get_str(doc, &format!("{bt}.token")).map(String::from);
        if out.token.is_none() {
            return Err(ConfigError(format!("{bt}.token: Required value")));
        }
    }
    out.ca_cert_hashes = get(doc, &format!("{bt}.caCertHashes"))
        .map(strings)
        .unwrap_or_default();
    out.unsafe_skip_ca_verification =
        get(doc, &format!("{bt}.unsafeSkipCAVerification")).and_then(Value::as_bool) == Some(true);
    out.node_name = get_str(doc, "nodeRegistration.name").map(String::from);
    let dur = |path: &str| get_str(doc, path).and_then(|s| token::parse_duration(s).ok());
    out.discovery_timeout = dur("timeouts.discovery").or_else(|| dur("discovery.timeout"));
    out.tls_bootstrap_timeout = dur("timeouts.tlsBootstrap");
    if let Some(cp) = get(doc, "controlPlane") {
        out.control_plane = true;
        out.certificate_key = cp
            .get("certificateKey")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from);
    }
    out.dry_run = get(doc, "dryRun").and_then(Value::as_bool) == Some(true);
    Ok(out)
}

/// `config print join-defaults`: a JoinConfiguration with k1s's defaults.
pub fn join_defaults(node_name: &str) -> String {
    let doc = json!({
        "apiVersion": V1BETA4,
        "caCertPath": "/etc/kubernetes/pki/ca.crt",
        "discovery": {
            "bootstrapToken": {
                "apiServerEndpoint": "kube-apiserver:6443",
                "token": "abcdef.0123456789abcdef",
                "unsafeSkipCAVerification": true,
            },
            "tlsBootstrapToken": "abcdef.0123456789abcdef",
        },
        "kind": "JoinConfiguration",
        "nodeRegistration": {
            "name": node_name,
            "taints": null,
        },
        "timeouts": {
            "discovery": "30s",
            "tlsBootstrap": "2m0s",
        },
    });
    crate::init::to_yaml(&doc)
}

/// kubeadm's `config migrate`: reads old-version documents strictly and writes them as
/// v1beta4 (v1beta3's map `extraArgs` become {name, value} lists, its timeouts move to
/// `timeouts`). v1beta4 documents pass through unchanged.
pub fn migrate(text: &str) -> Result<String, ConfigError> {
    let loaded = load(text, true)?;
    let mut out = Vec::new();
    let mut init = loaded.init.clone();
    let mut join = loaded.join.clone();
    let cluster = loaded.cluster.clone();
    if let Some(cluster) = &cluster
        && cluster.is_v1beta3()
        && let Some(t) = get_str(cluster, "apiServer.timeoutForControlPlane")
    {
        // The timeout moved from ClusterConfiguration to InitConfiguration.
        let init_doc = init.get_or_insert_with(|| Document {
            api_version: V1BETA3.into(),
            kind: "InitConfiguration".into(),
            body: Map::new(),
        });
        init_doc.body.entry("timeouts").or_insert_with(|| json!({}))["controlPlaneComponentHealthCheck"] =
            json!(t);
    }
    if let Some(j) = &mut join
        && j.is_v1beta3()
        && let Some(t) = get_str(j, "discovery.timeout").map(String::from)
    {
        j.body.entry("timeouts").or_insert_with(|| json!({}))["discovery"] = json!(t);
    }
    for doc in [init, cluster, join, loaded.reset.clone()]
        .into_iter()
        .flatten()
    {
        let mut body = Value::Object(doc.body.clone());
        if doc.is_v1beta3() {
            convert_v1beta3(&mut body);
        }
        body["apiVersion"] = json!(V1BETA4);
        body["kind"] = json!(doc.kind);
        out.push(crate::init::to_yaml(&body));
    }
    if out.is_empty() {
        return Err(ConfigError(
            "no kubeadm configuration document was found in the file".into(),
        ));
    }
    Ok(out.join("---\n"))
}

/// v1beta3 → v1beta4 in place.
fn convert_v1beta3(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("timeoutForControlPlane");
            if let Some(Value::Object(d)) = m.get_mut("discovery") {
                d.remove("timeout");
            }
            for key in ["extraArgs", "kubeletExtraArgs"] {
                if let Some(Value::Object(args)) = m.get(key) {
                    let mut list: Vec<(String, Value)> =
                        args.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    list.sort_by(|a, b| a.0.cmp(&b.0));
                    let list: Vec<Value> = list
                        .into_iter()
                        .map(|(name, value)| json!({ "name": name, "value": value }))
                        .collect();
                    m.insert(key.into(), Value::Array(list));
                }
            }
            for (_, child) in m.iter_mut() {
                convert_v1beta3(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(convert_v1beta3),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
