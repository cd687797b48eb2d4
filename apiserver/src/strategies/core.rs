//! Strategies of core/v1 kinds: namespaces, pods, services, secrets, events, nodes, RCs.

use k1s_apimachinery::FieldError;
use serde_json::{Value, json};

use super::apps::{default_pod_template, validate_pod_spec};
use crate::registry::Strategy;

pub struct Namespaces;
impl Strategy for Namespaces {
    fn prepare_for_create(&self, obj: &mut Value) {
        // The namespace controller's finalizer: content is cleaned up before the namespace goes.
        obj["spec"]["finalizers"] = json!(["kubernetes"]);
        obj["status"] = json!({ "phase": "Active" });
        // Upstream labels every namespace with its own name.
        if let Some(name) = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = Value::String(name);
        }
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // Only the finalize subresource changes spec.finalizers; phase is the server's.
        new["spec"]["finalizers"] = old
            .pointer("/spec/finalizers")
            .cloned()
            .unwrap_or(json!([]));
        if let Some(name) = old
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            new["metadata"]["labels"]["kubernetes.io/metadata.name"] = Value::String(name);
        }
    }
    fn tracks_generation(&self, _: &k1s_apimachinery::catalog::ResourceInfo) -> bool {
        false
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.phase"]
    }
}

pub struct Pods;
impl Strategy for Pods {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            default_pod_spec(spec);
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "phase": "Pending", "qosClass": qos_class(obj.get("spec")) });
    }
    fn return_deleted_object(&self) -> bool {
        true
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_pod_spec(obj.get("spec"), "spec")
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ]
    }
}

/// Upstream's pod spec defaults (SetDefaults_PodSpec and friends) for fields clients rely on.
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
        ("enableServiceLinks", json!(true)),
    ];
    for (k, v) in defaults {
        s.entry(k).or_insert(v);
    }
    for list in ["containers", "initContainers"] {
        if let Some(cs) = s.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs {
                default_container(c);
            }
        }
    }
}

fn default_container(c: &mut Value) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(c) = c.as_object_mut() else { return };
    c.entry("terminationMessagePath")
        .or_insert(json!("/dev/termination-log"));
    c.entry("terminationMessagePolicy").or_insert(json!("File"));
    c.entry("resources").or_insert(json!({}));
    // `latest` (or no tag) pulls always; a pinned tag or digest only if absent.
    let tag = image.rsplit('/').next().unwrap_or_default();
    let policy = if image.contains('@') || (tag.contains(':') && !tag.ends_with(":latest")) {
        "IfNotPresent"
    } else {
        "Always"
    };
    c.entry("imagePullPolicy").or_insert(json!(policy));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            if let Some(p) = p.as_object_mut() {
                p.entry("protocol").or_insert(json!("TCP"));
            }
        }
    }
}

fn qos_class(spec: Option<&Value>) -> &'static str {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let has = |c: &Value, k: &str| {
        c.pointer(&format!("/resources/{k}"))
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty())
    };
    if containers
        .iter()
        .all(|c| !has(c, "requests") && !has(c, "limits"))
    {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = c.pointer("/resources/limits");
        let requests = c.pointer("/resources/requests");
        ["cpu", "memory"].iter().all(|r| {
            let l = limits.and_then(|l| l.get(*r));
            l.is_some()
                && requests
                    .and_then(|q| q.get(*r))
                    .is_none_or(|q| Some(q) == l)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

pub struct Services;
impl Strategy for Services {
    /// Upstream resets a new Service's status; its `loadBalancer` is a plain struct, so every
    /// Service carries `status: {loadBalancer: {}}` (clients such as the Python client rely on
    /// `status` being present).
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "loadBalancer": {} });
    }
    fn return_deleted_object(&self) -> bool {
        true
    }
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            status.entry("loadBalancer").or_insert(json!({}));
        } else {
            new["status"] = json!({ "loadBalancer": {} });
        }
    }
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("type").or_insert(json!("ClusterIP"));
        spec.entry("sessionAffinity").or_insert(json!("None"));
        if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports {
                let port = p.get("port").cloned();
                if let Some(p) = p.as_object_mut() {
                    p.entry("protocol").or_insert(json!("TCP"));
                    if let Some(port) = port {
                        p.entry("targetPort").or_insert(port);
                    }
                }
            }
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let ty = obj
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        let ports = obj.pointer("/spec/ports").and_then(Value::as_array);
        if ty != "ExternalName" && ports.is_none_or(|p| p.is_empty()) {
            errs.push(FieldError::required("spec.ports", ""));
        }
        if !["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].contains(&ty) {
            errs.push(FieldError::not_supported(
                "spec.type",
                ty,
                &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
            ));
        }
        errs
    }
}

pub struct Secrets;
impl Strategy for Secrets {
    fn default(&self, obj: &mut Value) {
        use base64::Engine as _;
        if obj
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            obj["type"] = json!("Opaque");
        }
        // `stringData` is write-only: merged into `data` (winning over it), as upstream does.
        if let Some(Value::Object(plain)) = obj.as_object_mut().and_then(|o| o.remove("stringData"))
        {
            if !obj.get("data").is_some_and(Value::is_object) {
                obj["data"] = json!({});
            }
            for (k, v) in plain {
                let text = v.as_str().unwrap_or_default();
                obj["data"][k] =
                    Value::String(base64::engine::general_purpose::STANDARD.encode(text));
            }
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        use base64::Engine as _;
        let mut errs = Vec::new();
        if let Some(data) = obj.get("data").and_then(Value::as_object) {
            for (k, v) in data {
                let ok = v
                    .as_str()
                    .is_some_and(|s| base64::engine::general_purpose::STANDARD.decode(s).is_ok());
                if !ok {
                    errs.push(FieldError::invalid(
                        format!("data[{k}]"),
                        "<secret contents redacted>",
                        "must be base64-encoded bytes",
                    ));
                }
            }
        }
        errs
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["type"]
    }
}

pub struct Events;
impl Strategy for Events {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
        ]
    }
    fn allow_create_on_update(&self) -> bool {
        true
    }
}

pub struct Nodes;
impl Strategy for Nodes {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.unschedulable"]
    }
}

pub struct ReplicationControllers;
impl Strategy for ReplicationControllers {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("replicas").or_insert(json!(1));
            if let Some(t) = spec.get_mut("template") {
                default_pod_template(t);
            }
        }
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.replicas"]
    }
}
