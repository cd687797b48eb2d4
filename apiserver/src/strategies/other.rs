//! Strategies of the smaller groups: certificates (CSRs filled from the requester), scheduling
//! (PriorityClasses), storage (StorageClasses, CSIDrivers), networking (NetworkPolicies,
//! IngressClasses), RBAC bindings, policy (PodDisruptionBudgets) and autoscaling (HPAs).

use k1s_apimachinery::FieldError;
use serde_json::{Value, json};

use crate::auth::UserInfo;
use crate::registry::Strategy;

/// Condition times a client left out (upstream's populateConditionTimestamps): `lastUpdateTime`
/// now, `lastTransitionTime` kept from an old condition of the same type and status, else now.
fn populate_condition_timestamps(new: &mut Value, old: &Value) {
    let now = crate::registry::now_rfc3339();
    let old_conditions = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(conditions) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
        let unset = |v: Option<&Value>| v.is_none_or(|t| t.is_null() || t == "");
        if unset(c.get("lastUpdateTime")) {
            c.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(c.get("lastTransitionTime")) {
            let kept = old_conditions
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"))
                .and_then(|o| o.get("lastTransitionTime"))
                .filter(|t| !unset(Some(t)))
                .cloned();
            c.insert(
                "lastTransitionTime".into(),
                kept.unwrap_or_else(|| json!(now)),
            );
        }
    }
}

pub struct CertificateSigningRequests;
impl Strategy for CertificateSigningRequests {
    fn prepare_for_create(&self, obj: &mut Value) {
        // Users cannot create pre-approved requests, nor claim to be someone else.
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            for k in ["username", "uid", "groups", "extra"] {
                spec.remove(k);
            }
        }
        obj["status"] = json!({});
    }
    fn prepare_for_create_by(&self, obj: &mut Value, requester: &UserInfo) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.insert("username".into(), json!(requester.name));
        if !requester.uid.is_empty() {
            spec.insert("uid".into(), json!(requester.uid));
        }
        let groups = requester.effective_groups();
        if !groups.is_empty() {
            spec.insert("groups".into(), json!(groups));
        }
        if !requester.extra.is_empty() {
            spec.insert("extra".into(), json!(requester.extra));
        }
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // The spec is the requester's and never changes; status has its own subresources.
        new["spec"] = old.get("spec").cloned().unwrap_or(Value::Null);
        populate_condition_timestamps(new, old);
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = &obj["spec"];
        match spec.get("request").and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required("spec.request", "")),
            Some(b64) => {
                use base64::Engine as _;
                let pem = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok());
                if !pem.is_some_and(|p| p.contains("-----BEGIN CERTIFICATE REQUEST-----")) {
                    errs.push(FieldError::invalid(
                        "spec.request",
                        "<redacted>",
                        "PEM block type must be CERTIFICATE REQUEST",
                    ));
                }
            }
        }
        match spec.get("signerName").and_then(Value::as_str) {
            None | Some("") => errs.push(FieldError::required("spec.signerName", "")),
            Some(name) if !name.contains('/') => errs.push(FieldError::invalid(
                "spec.signerName",
                name,
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            )),
            Some(_) => {}
        }
        if spec
            .get("usages")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            errs.push(FieldError::required("spec.usages", ""));
        }
        if let Some(s) = spec.get("expirationSeconds").and_then(Value::as_i64)
            && s < 600
        {
            errs.push(FieldError::invalid(
                "spec.expirationSeconds",
                s,
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
        errs
    }
    fn validate_update(&self, _new: &Value, _old: &Value) -> Vec<FieldError> {
        Vec::new()
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }
}

/// The PriorityClasses upstream's API server creates at start (name, value, description).
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The highest value a user-defined PriorityClass may have.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;

pub struct PriorityClasses;
impl Strategy for PriorityClasses {
    fn default(&self, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.entry("preemptionPolicy")
                .or_insert(json!("PreemptLowerPriority"));
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let value = obj.get("value").and_then(Value::as_i64);
        if let Some(system) = SYSTEM_PRIORITY_CLASSES.iter().find(|c| c.0 == name) {
            if value != Some(system.1) {
                errs.push(FieldError::forbidden(
                    "metadata.name",
                    format!(
                        "{name} is a system priority class and its value must be {}",
                        system.1
                    ),
                ));
            }
        } else if name.starts_with("system-") {
            errs.push(FieldError::forbidden(
                "metadata.name",
                "priority class names with 'system-' prefix are reserved for system use only",
            ));
        } else if value.is_some_and(|v| v > HIGHEST_USER_DEFINABLE_PRIORITY) {
            errs.push(FieldError::forbidden(
                "value",
                format!(
                    "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
                ),
            ));
        }
        if let Some(p) = obj.get("preemptionPolicy").and_then(Value::as_str)
            && !["PreemptLowerPriority", "Never"].contains(&p)
        {
            errs.push(FieldError::not_supported(
                "preemptionPolicy",
                p,
                &["Never", "PreemptLowerPriority"],
            ));
        }
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = self.validate(new);
        for field in ["value", "preemptionPolicy"] {
            if new.get(field) != old.get(field) {
                errs.push(FieldError::forbidden(
                    field,
                    "may not be changed in an update.",
                ));
            }
        }
        errs
    }
    fn tracks_generation(&self, _: &k1s_apimachinery::catalog::ResourceInfo) -> bool {
        true
    }
}

pub struct StorageClasses;
impl Strategy for StorageClasses {
    fn default(&self, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.entry("reclaimPolicy").or_insert(json!("Delete"));
            o.entry("volumeBindingMode").or_insert(json!("Immediate"));
        }
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for field in ["parameters", "provisioner", "reclaimPolicy"] {
            if new.get(field) != old.get(field) {
                errs.push(FieldError::forbidden(
                    field,
                    format!("updates to {field} are forbidden."),
                ));
            }
        }
        if new.get("volumeBindingMode") != old.get("volumeBindingMode") {
            errs.push(FieldError::invalid(
                "volumeBindingMode",
                new.get("volumeBindingMode").cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
        errs
    }
}

pub struct CsiDrivers;
impl Strategy for CsiDrivers {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for (k, v) in [
            ("attachRequired", json!(true)),
            ("podInfoOnMount", json!(false)),
            ("storageCapacity", json!(false)),
            ("fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
            ("requiresRepublish", json!(false)),
            ("seLinuxMount", json!(false)),
        ] {
            spec.entry(k).or_insert(v);
        }
        let modes_empty = spec
            .get("volumeLifecycleModes")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if modes_empty {
            spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
        }
    }
}

pub struct NetworkPolicies;
impl Strategy for NetworkPolicies {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for direction in ["ingress", "egress"] {
            let rules = spec.get_mut(direction).and_then(Value::as_array_mut);
            for rule in rules.into_iter().flatten() {
                let ports = rule.get_mut("ports").and_then(Value::as_array_mut);
                for p in ports.into_iter().flatten() {
                    if let Some(p) = p.as_object_mut() {
                        p.entry("protocol").or_insert(json!("TCP"));
                    }
                }
            }
        }
        let no_types = spec
            .get("policyTypes")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if no_types {
            let egress = spec
                .get("egress")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty());
            let types = if egress {
                json!(["Ingress", "Egress"])
            } else {
                json!(["Ingress"])
            };
            spec.insert("policyTypes".into(), types);
        }
    }
    fn tracks_generation(&self, _: &k1s_apimachinery::catalog::ResourceInfo) -> bool {
        true
    }
}

pub struct IngressClasses;
impl Strategy for IngressClasses {
    fn default(&self, obj: &mut Value) {
        if let Some(p) = obj
            .pointer_mut("/spec/parameters")
            .and_then(Value::as_object_mut)
        {
            p.entry("scope").or_insert(json!("Cluster"));
        }
    }
}

pub struct RoleBindings;
impl Strategy for RoleBindings {
    /// roleRef and subjects name the RBAC group unless they are ServiceAccounts.
    fn default(&self, obj: &mut Value) {
        if let Some(r) = obj.get_mut("roleRef").and_then(Value::as_object_mut) {
            let empty = r
                .get("apiGroup")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            if empty {
                r.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
            }
        }
        let subjects = obj.get_mut("subjects").and_then(Value::as_array_mut);
        for s in subjects.into_iter().flatten() {
            let group = match s.get("kind").and_then(Value::as_str) {
                Some("User" | "Group") => "rbac.authorization.k8s.io",
                Some("ServiceAccount") => "",
                _ => continue,
            };
            if let Some(s) = s.as_object_mut()
                && s.get("apiGroup")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                s.insert("apiGroup".into(), json!(group));
            }
        }
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        if new.get("roleRef") != old.get("roleRef") {
            return vec![FieldError::invalid(
                "roleRef",
                new.get("roleRef").cloned().unwrap_or(Value::Null),
                "cannot change roleRef",
            )];
        }
        Vec::new()
    }
}

pub struct PodDisruptionBudgets;
impl Strategy for PodDisruptionBudgets {
    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let spec = &obj["spec"];
        if spec.get("minAvailable").is_some_and(|v| !v.is_null())
            && spec.get("maxUnavailable").is_some_and(|v| !v.is_null())
        {
            return vec![FieldError::invalid(
                "spec",
                spec.clone(),
                "minAvailable and maxUnavailable cannot be both set",
            )];
        }
        Vec::new()
    }
    fn allow_unconditional_update(&self) -> bool {
        false
    }
}

pub struct HorizontalPodAutoscalers;
impl Strategy for HorizontalPodAutoscalers {
    /// autoscaling/v2 defaults (the storage version): one replica at least, and a CPU target of
    /// 80% when no metric is given; a given `behavior` is completed with upstream's rules.
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        spec.entry("minReplicas").or_insert(json!(1));
        let no_metrics = spec
            .get("metrics")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if no_metrics && !spec.contains_key("targetCPUUtilizationPercentage") {
            spec.insert(
                "metrics".into(),
                json!([{ "type": "Resource", "resource": { "name": "cpu",
                    "target": { "type": "Utilization", "averageUtilization": 80 } } }]),
            );
        }
        let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) else {
            return;
        };
        let up = behavior.entry("scaleUp").or_insert(json!({}));
        if let Some(up) = up.as_object_mut() {
            up.entry("stabilizationWindowSeconds").or_insert(json!(0));
            up.entry("selectPolicy").or_insert(json!("Max"));
            up.entry("policies").or_insert(json!([
                { "type": "Pods", "value": 4, "periodSeconds": 15 },
                { "type": "Percent", "value": 100, "periodSeconds": 15 },
            ]));
        }
        let down = behavior.entry("scaleDown").or_insert(json!({}));
        if let Some(down) = down.as_object_mut() {
            down.entry("selectPolicy").or_insert(json!("Max"));
            down.entry("policies").or_insert(json!([
                { "type": "Percent", "value": 100, "periodSeconds": 15 },
            ]));
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        // `desiredReplicas` is a required field of the status (clients validate it).
        obj["status"] = json!({ "desiredReplicas": 0 });
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_hpa_spec(obj)
    }
}

/// Upstream's validateHorizontalPodAutoscalerSpec: replica bounds (scale to zero is an alpha
/// gate, off) and the scale target's kind and name.
fn validate_hpa_spec(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let min = obj.pointer("/spec/minReplicas").and_then(Value::as_i64);
    let max = obj
        .pointer("/spec/maxReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(m) = min.filter(|m| *m < 1) {
        errs.push(FieldError::invalid(
            "spec.minReplicas",
            m,
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    for key in ["kind", "name"] {
        let field = format!("spec.scaleTargetRef.{key}");
        let value = obj
            .pointer(&format!("/spec/scaleTargetRef/{key}"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if value.is_empty() {
            errs.push(FieldError::required(field, ""));
        } else {
            for msg in super::networking::path_segment_errors(value) {
                errs.push(FieldError::invalid(&field, value, msg));
            }
        }
    }
    errs
}

/// Admission webhook configurations: each webhook's defaults (SetDefaults_ValidatingWebhook /
/// SetDefaults_MutatingWebhook, their rules and service references).
pub struct WebhookConfigurations {
    pub mutating: bool,
}
impl Strategy for WebhookConfigurations {
    /// Upstream's Validate(Validating|Mutating)WebhookConfiguration.
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        crate::admission::validation::webhook_configuration(obj, None, self.mutating)
    }
    /// As on create, relaxed where the stored configuration already broke a newer rule.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        crate::admission::validation::webhook_configuration(new, Some(old), self.mutating)
    }
    fn default(&self, obj: &mut Value) {
        let hooks = obj.get_mut("webhooks").and_then(Value::as_array_mut);
        for h in hooks.into_iter().flatten() {
            let Some(h) = h.as_object_mut() else { continue };
            h.entry("failurePolicy").or_insert(json!("Fail"));
            h.entry("matchPolicy").or_insert(json!("Equivalent"));
            h.entry("namespaceSelector").or_insert(json!({}));
            h.entry("objectSelector").or_insert(json!({}));
            h.entry("timeoutSeconds").or_insert(json!(10));
            if self.mutating {
                h.entry("reinvocationPolicy").or_insert(json!("Never"));
            }
            let rules = h.get_mut("rules").and_then(Value::as_array_mut);
            for r in rules.into_iter().flatten() {
                if let Some(r) = r.as_object_mut() {
                    r.entry("scope").or_insert(json!("*"));
                }
            }
            if let Some(svc) = h
                .get_mut("clientConfig")
                .and_then(|c| c.get_mut("service"))
                .and_then(Value::as_object_mut)
            {
                svc.entry("port").or_insert(json!(443));
            }
        }
    }
}

/// ValidatingAdmissionPolicies and their bindings: v1 defaults (failurePolicy Fail,
/// matchPolicy Equivalent, `{}` selectors, rule scope `*`) and upstream's validation, which
/// compiles every CEL expression (`admission::policy`).
pub struct AdmissionPolicies {
    pub binding: bool,
}
impl Strategy for AdmissionPolicies {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if !self.binding {
            spec.entry("failurePolicy").or_insert(json!("Fail"));
        }
        let key = if self.binding {
            "matchResources"
        } else {
            "matchConstraints"
        };
        if let Some(m) = spec.get_mut(key).and_then(Value::as_object_mut) {
            m.entry("matchPolicy").or_insert(json!("Equivalent"));
            m.entry("namespaceSelector").or_insert(json!({}));
            m.entry("objectSelector").or_insert(json!({}));
            for rules in ["resourceRules", "excludeResourceRules"] {
                let list = m.get_mut(rules).and_then(Value::as_array_mut);
                for r in list.into_iter().flatten() {
                    if let Some(r) = r.as_object_mut() {
                        r.entry("scope").or_insert(json!("*"));
                    }
                }
            }
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        if self.binding {
            crate::admission::policy::validate_binding(obj)
        } else {
            crate::admission::policy::validate_policy(obj)
        }
    }
    fn tracks_generation(&self, _: &k1s_apimachinery::catalog::ResourceInfo) -> bool {
        true
    }
}

pub struct EndpointSlices;
impl Strategy for EndpointSlices {
    fn default(&self, obj: &mut Value) {
        let ports = obj.get_mut("ports").and_then(Value::as_array_mut);
        for p in ports.into_iter().flatten() {
            if let Some(p) = p.as_object_mut() {
                p.entry("name").or_insert(json!(""));
                p.entry("protocol").or_insert(json!("TCP"));
            }
        }
    }
}

/// FlowSchemas and PriorityLevelConfigurations (flowcontrol v1 defaults).
pub struct FlowControl;
impl Strategy for FlowControl {
    fn default(&self, obj: &mut Value) {
        let is_flow_schema = obj.get("kind").and_then(Value::as_str) == Some("FlowSchema");
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if is_flow_schema {
            if spec
                .get("matchingPrecedence")
                .is_none_or(|v| v.as_i64() == Some(0))
            {
                spec.insert("matchingPrecedence".into(), json!(1000));
            }
            return;
        }
        if let Some(l) = spec.get_mut("limited").and_then(Value::as_object_mut) {
            l.entry("nominalConcurrencyShares").or_insert(json!(30));
            l.entry("lendablePercent").or_insert(json!(0));
            if let Some(q) = l
                .get_mut("limitResponse")
                .and_then(|r| r.get_mut("queuing"))
                .and_then(Value::as_object_mut)
            {
                for (k, v) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                    if q.get(k).is_none_or(|x| x.as_i64() == Some(0)) {
                        q.insert(k.into(), json!(v));
                    }
                }
            }
        }
        if let Some(e) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
            e.entry("nominalConcurrencyShares").or_insert(json!(0));
            e.entry("lendablePercent").or_insert(json!(0));
        }
    }
}

/// apiregistration.k8s.io APIServices (kube-aggregator's strategy and validation): the name is
/// `<version>.<group>`, priorities in range, a local APIService (no `service`) carries no TLS
/// settings; the status starts empty (a local one Available at once) and only the status
/// subresource changes it.
pub struct ApiServices;
impl Strategy for ApiServices {
    fn default(&self, obj: &mut Value) {
        if let Some(service) = obj
            .pointer_mut("/spec/service")
            .and_then(Value::as_object_mut)
        {
            service.entry("port").or_insert(json!(443));
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        let local = !obj.pointer("/spec/service").is_some_and(Value::is_object);
        let conditions = if local {
            json!([{ "type": "Available", "status": "True",
                "lastTransitionTime": crate::registry::now_rfc3339(),
                "reason": "Local", "message": "Local APIServices are always available" }])
        } else {
            json!([])
        };
        obj["status"] = if local {
            json!({ "conditions": conditions })
        } else {
            json!({})
        };
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
        let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or_default();
        let (group, version) = (text("group"), text("version"));
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let required_name = format!("{version}.{group}");
        if !name.is_empty() && name != required_name {
            errs.push(FieldError::invalid(
                "metadata.name",
                name,
                format!("must be `spec.version+\".\"+spec.group`: {required_name:?}"),
            ));
        }
        if group.is_empty() && version != "v1" {
            errs.push(FieldError::required(
                "spec.group",
                "only v1 may have an empty group and it better be legacy kube",
            ));
        }
        if !group.is_empty() {
            for e in k1s_apimachinery::validation::is_dns1123_subdomain(group) {
                errs.push(FieldError::invalid("spec.group", group, e));
            }
        }
        for e in k1s_apimachinery::validation::is_dns1035_label(version) {
            errs.push(FieldError::invalid("spec.version", version, e));
        }
        let number = |k: &str| spec.get(k).and_then(Value::as_i64).unwrap_or_default();
        let group_priority = number("groupPriorityMinimum");
        if !(1..=20000).contains(&group_priority) {
            errs.push(FieldError::invalid(
                "spec.groupPriorityMinimum",
                group_priority,
                "must be positive and less than 20000",
            ));
        }
        let version_priority = number("versionPriority");
        if !(1..=1000).contains(&version_priority) {
            errs.push(FieldError::invalid(
                "spec.versionPriority",
                version_priority,
                "must be positive and less than 1000",
            ));
        }
        let ca_bundle = text("caBundle");
        let insecure = spec.get("insecureSkipTLSVerify") == Some(&Value::Bool(true));
        let Some(service) = spec.get("service").filter(|s| s.is_object()) else {
            if !ca_bundle.is_empty() {
                // The bytes of the decoded bundle, as upstream counts them.
                let bytes =
                    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, ca_bundle)
                        .map_or(ca_bundle.len(), |b| b.len());
                errs.push(FieldError::invalid_raw(
                    "spec.caBundle",
                    format!("{bytes} bytes"),
                    "local APIServices may not have a caBundle",
                ));
            }
            if insecure {
                errs.push(FieldError::invalid(
                    "spec.insecureSkipTLSVerify",
                    true,
                    "local APIServices may not have insecureSkipTLSVerify",
                ));
            }
            return errs;
        };
        for field in ["namespace", "name"] {
            if service
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                errs.push(FieldError::required(format!("spec.service.{field}"), ""));
            }
        }
        if insecure && !ca_bundle.is_empty() {
            errs.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "may not be true if caBundle is present",
            ));
        }
        errs
    }
    fn validate_subresource_update(
        &self,
        _sub: &str,
        new: &Value,
        _old: &Value,
    ) -> Vec<FieldError> {
        let conditions = new
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        conditions
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let status = c.get("status").and_then(Value::as_str).unwrap_or_default();
                (!["True", "False", "Unknown"].contains(&status)).then(|| {
                    FieldError::not_supported(
                        format!("status.conditions[{i}].status"),
                        status,
                        &["True", "False", "Unknown"],
                    )
                })
            })
            .collect()
    }
    fn allow_unconditional_update(&self) -> bool {
        false
    }
}
