//! Upstream's core/v1 defaulting of pod specs (SetDefaults_PodSpec and the defaulters of the
//! types inside it: containers, probes, HTTP actions, volumes, env), shared by Pods and every
//! kind with a pod template, plus the rules that apply to Pods only (SetDefaults_Pod).

use serde_json::{Map, Value, json};

/// The file mode volume files get when no `defaultMode` is given (0644).
const DEFAULT_MODE: i64 = 0o644;

/// SetDefaults_PodSpec and everything nested in it (Pods and pod templates alike).
pub fn default_pod_spec(spec: &mut Value) {
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    let defaults = [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
    ];
    for (k, v) in defaults {
        s.entry(k).or_insert(v);
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in items_mut(s, list) {
            default_container(c);
        }
    }
    for v in items_mut(s, "volumes") {
        default_volume(v);
    }
    if let Some(overhead) = s.get_mut("overhead") {
        super::resources::round_resource_list(overhead);
    }
}

/// SetDefaults_Pod: what a Pod gets beyond its spec's defaults (not pod templates).
pub fn default_pod(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.entry("enableServiceLinks").or_insert(json!(true));
    let host_network = spec.get("hostNetwork") == Some(&json!(true));
    for list in ["containers", "initContainers"] {
        for c in items_mut(spec, list) {
            // Requests default to the limits that are set.
            if let Some(limits) = c.pointer("/resources/limits").and_then(Value::as_object) {
                let limits = limits.clone();
                if !c["resources"].get("requests").is_some_and(Value::is_object) {
                    c["resources"]["requests"] = json!({});
                }
                if let Some(req) = c["resources"]["requests"].as_object_mut() {
                    for (k, v) in limits {
                        req.entry(k).or_insert(v);
                    }
                }
            }
            // With the host's network, a container port is also a host port.
            if host_network {
                for p in items_mut_value(c, "ports") {
                    let container_port = p.get("containerPort").cloned();
                    if let (Some(p), Some(port)) = (p.as_object_mut(), container_port)
                        && p.get("hostPort").is_none_or(|h| h.as_i64() == Some(0))
                    {
                        p.insert("hostPort".into(), port);
                    }
                }
            }
        }
    }
    if let Some(spec) = obj.get_mut("spec") {
        default_pod_spec(spec);
    }
}

fn items_mut<'a>(o: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Value> {
    o.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

fn items_mut_value<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// SetDefaults_Container, its ports, env field references, probes and lifecycle handlers.
fn default_container(c: &mut Value) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(o) = c.as_object_mut() else { return };
    o.entry("terminationMessagePath")
        .or_insert(json!("/dev/termination-log"));
    o.entry("terminationMessagePolicy").or_insert(json!("File"));
    o.entry("resources").or_insert(json!({}));
    if let Some(r) = o.get_mut("resources") {
        super::resources::round_requirements(r);
    }
    if !image.is_empty() {
        o.entry("imagePullPolicy")
            .or_insert(json!(pull_policy_for(&image)));
    }
    for p in items_mut(o, "ports") {
        if let Some(p) = p.as_object_mut() {
            p.entry("protocol").or_insert(json!("TCP"));
        }
    }
    for e in items_mut(o, "env") {
        if let Some(r) = e.pointer_mut("/valueFrom/fieldRef") {
            default_field_ref(r);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = o.get_mut(probe).and_then(Value::as_object_mut) {
            for (k, v) in [
                ("timeoutSeconds", 1),
                ("periodSeconds", 10),
                ("successThreshold", 1),
                ("failureThreshold", 3),
            ] {
                if p.get(k).is_none_or(|x| x.as_i64() == Some(0)) {
                    p.insert(k.into(), json!(v));
                }
            }
            if let Some(h) = p.get_mut("httpGet") {
                default_http_get(h);
            }
        }
    }
    if let Some(lifecycle) = o.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lifecycle.get_mut(hook).and_then(|h| h.get_mut("httpGet")) {
                default_http_get(h);
            }
        }
    }
}

/// `latest` or no tag pulls always; a pinned tag or a digest only when the image is absent.
pub fn pull_policy_for(image: &str) -> &'static str {
    let last = image.rsplit('/').next().unwrap_or_default();
    if image.contains('@') || (last.contains(':') && !last.ends_with(":latest")) {
        "IfNotPresent"
    } else {
        "Always"
    }
}

fn default_http_get(h: &mut Value) {
    if let Some(h) = h.as_object_mut() {
        h.entry("path").or_insert(json!("/"));
        h.entry("scheme").or_insert(json!("HTTP"));
    }
}

fn default_field_ref(r: &mut Value) {
    if let Some(r) = r.as_object_mut()
        && r.get("apiVersion")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        r.insert("apiVersion".into(), json!("v1"));
    }
}

/// The volume sources a Volume may name, in the order upstream's validateVolumeSource checks
/// them (it decides which of two sources is the one too many); a volume with none of them is
/// an emptyDir.
pub const VOLUME_SOURCES: [&str; 30] = [
    "hostPath",
    "emptyDir",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

/// SetDefaults_Volume and the defaults of each volume source.
fn default_volume(v: &mut Value) {
    let Some(o) = v.as_object_mut() else { return };
    if !VOLUME_SOURCES.iter().any(|s| o.contains_key(*s)) {
        o.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = o.get_mut(source).and_then(Value::as_object_mut) {
            s.entry("defaultMode").or_insert(json!(DEFAULT_MODE));
        }
    }
    if let Some(items) = o
        .get_mut("downwardAPI")
        .and_then(|d| d.get_mut("items"))
        .and_then(Value::as_array_mut)
    {
        for item in items {
            if let Some(r) = item.get_mut("fieldRef") {
                default_field_ref(r);
            }
        }
    }
    if let Some(sources) = o
        .get_mut("projected")
        .and_then(|p| p.get_mut("sources"))
        .and_then(Value::as_array_mut)
    {
        for s in sources {
            if let Some(t) = s
                .get_mut("serviceAccountToken")
                .and_then(Value::as_object_mut)
            {
                t.entry("expirationSeconds").or_insert(json!(3600));
            }
            if let Some(items) = s
                .pointer_mut("/downwardAPI/items")
                .and_then(Value::as_array_mut)
            {
                for item in items {
                    if let Some(r) = item.get_mut("fieldRef") {
                        default_field_ref(r);
                    }
                }
            }
        }
    }
    if let Some(h) = o.get_mut("hostPath").and_then(Value::as_object_mut) {
        h.entry("type").or_insert(json!(""));
    }
    if let Some(spec) = o
        .get_mut("ephemeral")
        .and_then(|e| e.pointer_mut("/volumeClaimTemplate/spec"))
    {
        default_pvc_spec(spec);
    }
    default_legacy_sources(o);
}

/// The defaults of volume sources that PersistentVolumes share with pod volumes.
pub fn default_legacy_sources(o: &mut Map<String, Value>) {
    if let Some(s) = o.get_mut("iscsi").and_then(Value::as_object_mut) {
        s.entry("iscsiInterface").or_insert(json!("default"));
    }
    if let Some(s) = o.get_mut("rbd").and_then(Value::as_object_mut) {
        s.entry("pool").or_insert(json!("rbd"));
        s.entry("user").or_insert(json!("admin"));
        s.entry("keyring").or_insert(json!("/etc/ceph/keyring"));
    }
    if let Some(s) = o.get_mut("azureDisk").and_then(Value::as_object_mut) {
        s.entry("cachingMode").or_insert(json!("ReadWrite"));
        s.entry("fsType").or_insert(json!("ext4"));
        s.entry("readOnly").or_insert(json!(false));
        s.entry("kind").or_insert(json!("Shared"));
    }
    if let Some(s) = o.get_mut("scaleIO").and_then(Value::as_object_mut) {
        s.entry("storageMode").or_insert(json!("ThinProvisioned"));
        s.entry("fsType").or_insert(json!("xfs"));
    }
}

/// SetDefaults_PersistentVolumeClaimSpec.
pub fn default_pvc_spec(spec: &mut Value) {
    if let Some(s) = spec.as_object_mut() {
        s.entry("volumeMode").or_insert(json!("Filesystem"));
    }
    if let Some(r) = spec.get_mut("resources") {
        super::resources::round_requirements(r);
    }
}
