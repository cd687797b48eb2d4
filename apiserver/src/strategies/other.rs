//! Strategies of the smaller groups: certificates (CSRs filled from the requester), scheduling
//! (PriorityClasses), storage (StorageClasses, CSIDrivers), networking (NetworkPolicies,
//! IngressClasses), RBAC bindings, policy (PodDisruptionBudgets) and autoscaling (HPAs).

use std::net::IpAddr;

use k1s_apimachinery::FieldError;
use k1s_apimachinery::quantity::Quantity;
use serde_json::{Value, json};

use super::go_value::go_quantity;
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
    fn prepare_for_subresource_update(&self, subresource: &str, new: &mut Value, old: &Value) {
        new["spec"] = old.get("spec").cloned().unwrap_or(Value::Null);
        match subresource {
            // `/approval` changes the conditions only (csrApprovalStrategy).
            "approval" => {
                populate_condition_timestamps(new, old);
                let conditions = new.pointer("/status/conditions").cloned();
                let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
                if let Some(st) = status.as_object_mut() {
                    match conditions {
                        Some(c) => st.insert("conditions".into(), c),
                        None => st.remove("conditions"),
                    };
                }
                new["status"] = status;
            }
            // `/status` keeps the Approved and Denied conditions as stored unless their count
            // changed, which validation then refuses (csrStatusStrategy).
            "status" => {
                for t in ["Approved", "Denied"] {
                    preserve_condition_instances(new, old, t);
                }
                populate_condition_timestamps(new, old);
            }
            _ => self.prepare_for_update(new, old),
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        csr_spec_errors(obj, None)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        csr_update_errors(new, old, None)
    }
    fn validate_subresource_update(
        &self,
        subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Vec<FieldError> {
        csr_update_errors(new, old, Some(subresource))
    }
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }
}

/// The key usages a CSR may ask for (upstream's allValidUsages, sorted).
const CSR_USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The signer name only the v1beta1 API allowed.
const LEGACY_SIGNER_NAME: &str = "kubernetes.io/legacy-unknown";

/// Upstream's validateCertificateSigningRequest for the spec. The tolerances for data stored
/// before a rule existed (unknown or duplicate usages, the legacy signer name) come from the
/// stored object.
fn csr_spec_errors(csr: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &csr["spec"];
    let request = spec.get("request").and_then(Value::as_str);
    let pem = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(request.unwrap_or(""))
            .unwrap_or_default()
    };
    if let Err(e) = k1s_kubeadm_lite::pki::check_csr_request(&pem) {
        // Go prints a missing request as a nil slice.
        let value = match request {
            None => "[]byte(nil)".to_string(),
            Some(_) => go_byte_slice(&pem),
        };
        errs.push(FieldError::invalid_raw("spec.request", value, e));
    }
    let usages = |csr: &Value| -> Vec<String> {
        csr.pointer("/spec/usages")
            .and_then(Value::as_array)
            .map(|u| {
                u.iter()
                    .map(|v| v.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let new_usages = usages(csr);
    if new_usages.is_empty() {
        errs.push(FieldError::required("spec.usages", ""));
    }
    let old_usages = old.map(usages).unwrap_or_default();
    if !old_usages.iter().any(|u| !CSR_USAGES.contains(&u.as_str())) {
        for (i, u) in new_usages.iter().enumerate() {
            if !CSR_USAGES.contains(&u.as_str()) {
                errs.push(FieldError::not_supported(
                    format!("spec.usages[{i}]"),
                    u.as_str(),
                    CSR_USAGES,
                ));
            }
        }
    }
    let has_duplicates = |u: &[String]| {
        let mut seen = std::collections::HashSet::new();
        !u.iter().all(|u| seen.insert(u))
    };
    if !has_duplicates(&old_usages) {
        let mut seen = std::collections::HashSet::new();
        for (i, u) in new_usages.iter().enumerate() {
            if !seen.insert(u) {
                errs.push(FieldError::duplicate(
                    format!("spec.usages[{i}]"),
                    u.as_str(),
                ));
            }
        }
    }
    let signer = spec.get("signerName").and_then(Value::as_str).unwrap_or("");
    let old_signer = old
        .and_then(|o| o.pointer("/spec/signerName"))
        .and_then(Value::as_str);
    if signer == LEGACY_SIGNER_NAME && old_signer != Some(LEGACY_SIGNER_NAME) {
        errs.push(FieldError::invalid(
            "spec.signerName",
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(signer_name_errors("spec.signerName", signer));
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

/// Go's `%#v` of a byte slice, as upstream prints an invalid `spec.request`.
fn go_byte_slice(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(|b| format!("{b:#x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

/// Upstream's ValidateSignerName: `<domain>/<path>`, the domain DNS labels with at least one
/// dot, the path DNS subdomains separated by dots.
fn signer_name_errors(path: &str, name: &str) -> Vec<FieldError> {
    use k1s_apimachinery::validation::{is_dns1123_label, is_dns1123_subdomain};
    const SUBDOMAIN_MAX: usize = 253;
    const LABEL_MAX: usize = 63;
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let Some((domain, rest)) = name.split_once('/').filter(|(_, r)| !r.contains('/')) else {
        return vec![FieldError::invalid(
            path,
            name,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    };
    let mut errs = Vec::new();
    if domain.len() > SUBDOMAIN_MAX {
        errs.push(FieldError::too_long(path, Some(SUBDOMAIN_MAX)));
    }
    // Only the first bad label of each segment is reported, as upstream does.
    let first_bad = |segment: &str, check: fn(&str) -> Vec<String>| -> Vec<FieldError> {
        let Some((label, msgs)) = segment
            .split('.')
            .map(|l| (l, check(l)))
            .find(|(_, m)| !m.is_empty())
        else {
            return Vec::new();
        };
        msgs.into_iter()
            .map(|m| {
                FieldError::invalid(
                    path,
                    segment,
                    format!(
                        "validating label {}: {m}",
                        crate::auth::authn::go_quote(label)
                    ),
                )
            })
            .collect()
    };
    errs.extend(first_bad(domain, is_dns1123_label));
    if !domain.contains('.') {
        errs.push(FieldError::invalid(
            path,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    errs.extend(first_bad(rest, is_dns1123_subdomain));
    let max = SUBDOMAIN_MAX + (SUBDOMAIN_MAX + LABEL_MAX + 1) + 1;
    if name.len() > max {
        errs.push(FieldError::too_long(path, Some(max)));
    }
    errs
}

/// The conditions of a CSR's status.
fn csr_conditions(csr: &Value) -> &[Value] {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The conditions of one type, in order (upstream's findConditions).
fn conditions_of<'v>(csr: &'v Value, t: &str) -> Vec<&'v Value> {
    csr_conditions(csr)
        .iter()
        .filter(|c| condition_type(c) == t)
        .collect()
}

/// Upstream's preserveConditionInstances: the stored instances of type `t` replace the
/// request's, one for one, when the request has as many.
fn preserve_condition_instances(new: &mut Value, old: &Value, t: &str) {
    let kept: Vec<Value> = conditions_of(old, t).into_iter().cloned().collect();
    let Some(conditions) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let slots: Vec<usize> = (0..conditions.len())
        .filter(|i| condition_type(&conditions[*i]) == t)
        .collect();
    if slots.len() == kept.len() {
        for (i, c) in slots.into_iter().zip(kept) {
            conditions[i] = c;
        }
    }
}

/// Upstream's validateConditions. The tolerances for data stored before a rule existed
/// (both Approved and Denied, duplicate or empty types) come from the stored object.
fn csr_condition_errors(csr: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let old_has = |pred: &dyn Fn(&[Value]) -> bool| old.is_some_and(|o| pred(csr_conditions(o)));
    let has_duplicates = |cs: &[Value]| {
        let mut seen = std::collections::HashSet::new();
        cs.iter().any(|c| !seen.insert(condition_type(c)))
    };
    let allow_both = old_has(&|cs| {
        ["Approved", "Denied"]
            .iter()
            .all(|t| cs.iter().any(|c| condition_type(c) == *t))
    });
    let allow_duplicates = old_has(&has_duplicates);
    let allow_empty = old_has(&|cs| cs.iter().any(|c| condition_type(c).is_empty()));

    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in csr_conditions(csr).iter().enumerate() {
        let path = format!("status.conditions[{i}]");
        let t = condition_type(c);
        if t.is_empty() && !allow_empty {
            errs.push(FieldError::required(format!("{path}.type"), ""));
        }
        // Approved, Denied and Failed may only be True.
        let allowed: &[&str] = if matches!(t, "Approved" | "Denied" | "Failed") {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        match c.get("status").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push(FieldError::required(format!("{path}.status"), "")),
            s if !allowed.contains(&s) => {
                errs.push(FieldError::not_supported(
                    format!("{path}.status"),
                    s,
                    allowed,
                ));
            }
            _ => {}
        }
        if !allow_both {
            let clash = match t {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                errs.push(FieldError::invalid(
                    format!("{path}.type"),
                    t,
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !allow_duplicates && !seen.insert(t) {
            errs.push(FieldError::duplicate(format!("{path}.type"), t));
        }
    }
    errs
}

/// Upstream's validateCertificate: PEM blocks of type CERTIFICATE, without headers, each a
/// parseable certificate; at least one unless empty.
fn certificate_error(b64: &str) -> Option<String> {
    use base64::Engine as _;
    use x509_parser::pem::Pem;
    let Ok(data) = base64::engine::general_purpose::STANDARD.decode(b64) else {
        return Some("illegal base64 data".into());
    };
    if data.is_empty() {
        return None;
    }
    let mut blocks = 0;
    for pem in Pem::iter_from_buffer(&data) {
        let Ok(pem) = pem else { break };
        if pem.label != "CERTIFICATE" {
            return Some(format!(
                "only CERTIFICATE PEM blocks are allowed, found {}",
                crate::auth::authn::go_quote(&pem.label)
            ));
        }
        if let Err(e) = x509_parser::parse_x509_certificate(&pem.contents) {
            return Some(format!("x509: malformed certificate: {e}"));
        }
        blocks += 1;
    }
    (blocks == 0).then(|| "must contain at least one CERTIFICATE PEM block".into())
}

/// Upstream's validateCertificateSigningRequestUpdate for the main resource (`None`),
/// `/status` (may set the certificate once) and `/approval` (may add and change the
/// Approved and Denied conditions). Approved, Denied and Failed are never removed.
fn csr_update_errors(new: &Value, old: &Value, subresource: Option<&str>) -> Vec<FieldError> {
    let mut errs = csr_spec_errors(new, Some(old));
    errs.extend(csr_condition_errors(new, Some(old)));
    let certificate = |v: &Value| {
        v.pointer("/status/certificate")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (new_cert, old_cert) = (certificate(new), certificate(old));
    // An unchanged certificate, or a stored one already invalid, is not looked at again.
    if new_cert != old_cert
        && certificate_error(&old_cert).is_none()
        && let Some(e) = certificate_error(&new_cert)
    {
        errs.push(FieldError::invalid(
            "status.certificate",
            "<certificate data>",
            e,
        ));
    }
    for t in ["Approved", "Denied", "Failed"] {
        if conditions_of(new, t).len() < conditions_of(old, t).len() {
            errs.push(FieldError::forbidden(
                "status.conditions",
                format!("updates may not remove a condition of type \"{t}\""),
            ));
        }
    }
    if subresource != Some("approval") {
        for t in ["Approved", "Denied"] {
            let (n, o) = (conditions_of(new, t), conditions_of(old, t));
            if n.len() > o.len() {
                errs.push(FieldError::forbidden(
                    "status.conditions",
                    format!("updates may not add a condition of type \"{t}\""),
                ));
            } else if n.len() == o.len() && n != o {
                // Upstream appends a Go object diff; k1s shows the two lists as JSON.
                errs.push(FieldError::forbidden(
                    "status.conditions",
                    format!(
                        "updates may not modify a condition of type \"{t}\"\n{} -> {}",
                        json!(o),
                        json!(n)
                    ),
                ));
            }
        }
    }
    if new_cert != old_cert {
        if subresource != Some("status") {
            errs.push(FieldError::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_cert.is_empty() {
            errs.push(FieldError::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    errs
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
    fn prepare_for_create(&self, obj: &mut Value) {
        // Upstream starts the generation at 1 and never bumps it (its PrepareForUpdate is empty).
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("generation".into(), json!(1));
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
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        ingress_class_spec_errors(obj.get("spec").unwrap_or(&Value::Null))
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        // validateIngressClassSpecUpdate, then the whole object as on create.
        let controller = |o: &Value| o.pointer("/spec/controller").cloned();
        let mut errs = Vec::new();
        if controller(new) != controller(old) {
            errs.push(FieldError::invalid(
                "spec.controller",
                controller(new)
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                "field is immutable",
            ));
        }
        errs.extend(self.validate(new));
        errs
    }
}

/// Upstream's validateIngressClassSpec: the controller (a domain-prefixed path of at most 250
/// bytes) and the parameters reference (validateIngressClassParametersReference).
fn ingress_class_spec_errors(spec: &Value) -> Vec<FieldError> {
    use super::job_rules::domain_prefixed_path_errors;
    use super::networking::path_segment_errors;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let mut errs = Vec::new();
    match text(spec, "controller").filter(|c| !c.is_empty()) {
        None => errs.push(FieldError::required("spec.controller", "")),
        Some(controller) => {
            if controller.len() > 250 {
                errs.push(FieldError::too_long("spec.controller", Some(250)));
            }
            errs.extend(domain_prefixed_path_errors("spec.controller", &controller));
        }
    }
    let Some(params) = spec.get("parameters").filter(|p| p.is_object()) else {
        return errs;
    };
    if let Some(group) = text(params, "apiGroup") {
        errs.extend(
            k1s_apimachinery::validation::is_dns1123_subdomain(&group)
                .into_iter()
                .map(|m| FieldError::invalid("spec.parameters.apiGroup", group.as_str(), m)),
        );
    }
    for key in ["kind", "name"] {
        let field = format!("spec.parameters.{key}");
        match text(params, key).filter(|v| !v.is_empty()) {
            None => errs.push(FieldError::required(field, "")),
            Some(v) => errs.extend(
                path_segment_errors(&v)
                    .into_iter()
                    .map(|m| FieldError::invalid(field.as_str(), v.as_str(), m)),
            ),
        }
    }
    let namespace = params.get("namespace").filter(|n| !n.is_null());
    match text(params, "scope").as_deref() {
        None => errs.push(FieldError::required("spec.parameters.scope", "")),
        Some("Namespace") => match namespace.map(|n| n.as_str().unwrap_or_default()) {
            None => errs.push(FieldError::required(
                "spec.parameters.namespace",
                "`parameters.scope` is set to 'Namespace'",
            )),
            Some(ns) => errs.extend(
                k1s_apimachinery::validation::name_is_dns_label(ns, false)
                    .into_iter()
                    .map(|m| FieldError::invalid("spec.parameters.namespace", ns, m)),
            ),
        },
        Some("Cluster") => {
            if namespace.is_some() {
                errs.push(FieldError::forbidden(
                    "spec.parameters.namespace",
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            "spec.parameters.scope",
            other,
            &["Cluster", "Namespace"],
        )),
    }
    errs
}

/// RoleBindings and ClusterRoleBindings (a RoleBinding is namespaced: it may refer to a Role,
/// and its ServiceAccount subjects may leave out their namespace).
pub struct RoleBindings {
    pub namespaced: bool,
}
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
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        role_binding_errors(obj, self.namespaced)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = role_binding_errors(new, self.namespaced);
        if new.get("roleRef") != old.get("roleRef") {
            errs.push(FieldError::invalid(
                "roleRef",
                new.get("roleRef").cloned().unwrap_or(Value::Null),
                "cannot change roleRef",
            ));
        }
        errs
    }
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Upstream's ValidateRoleBinding / ValidateClusterRoleBinding: the roleRef (group, kind, name)
/// and every subject (validateRoleBindingSubject).
fn role_binding_errors(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    use super::networking::path_segment_errors;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut errs = Vec::new();
    let role_ref = obj.get("roleRef").cloned().unwrap_or(Value::Null);
    let group = text(&role_ref, "apiGroup");
    if group != RBAC_GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            group,
            &[RBAC_GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = text(&role_ref, "kind");
    if !kinds.contains(&kind.as_str()) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    let name = text(&role_ref, "name");
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    for m in path_segment_errors(&name)
        .into_iter()
        .filter(|_| !name.is_empty())
    {
        errs.push(FieldError::invalid("roleRef.name", name.as_str(), m));
    }
    let subjects = obj.get("subjects").and_then(Value::as_array);
    for (i, subject) in subjects.into_iter().flatten().enumerate() {
        let at = |f: &str| format!("subjects[{i}].{f}");
        let name = text(subject, "name");
        let group = text(subject, "apiGroup");
        if name.is_empty() {
            errs.push(FieldError::required(at("name"), ""));
        }
        match text(subject, "kind").as_str() {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for m in k1s_apimachinery::validation::name_is_dns_subdomain(&name, false) {
                        errs.push(FieldError::invalid(at("name"), name.as_str(), m));
                    }
                }
                if !group.is_empty() {
                    errs.push(FieldError::not_supported(at("apiGroup"), group, &[""]));
                }
                if !namespaced && text(subject, "namespace").is_empty() {
                    errs.push(FieldError::required(at("namespace"), ""));
                }
            }
            kind @ ("User" | "Group") => {
                if name.is_empty() {
                    let what = if kind == "User" { "user" } else { "group" };
                    errs.push(FieldError::invalid(
                        at("name"),
                        "",
                        format!("{what} name cannot be empty"),
                    ));
                }
                if group != RBAC_GROUP {
                    errs.push(FieldError::not_supported(
                        at("apiGroup"),
                        group,
                        &[RBAC_GROUP],
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                at("kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errs
}

/// Roles and ClusterRoles: upstream's ValidateRole / ValidateClusterRole check every rule.
pub struct Roles {
    pub namespaced: bool,
}
impl Strategy for Roles {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let rules = obj.get("rules").and_then(Value::as_array);
        rules
            .into_iter()
            .flatten()
            .enumerate()
            .flat_map(|(i, rule)| policy_rule_errors(rule, self.namespaced, &format!("rules[{i}]")))
            .collect()
    }
}

/// Upstream's validatePolicyRule.
fn policy_rule_errors(rule: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let list = |k: &str| -> Vec<Value> {
        rule.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let at = |f: &str| format!("{path}.{f}");
    let mut errs = Vec::new();
    if list("verbs").is_empty() {
        errs.push(FieldError::required(
            at("verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = list("nonResourceURLs");
    if !urls.is_empty() {
        let shown = super::go_value::go_string_slice(&urls);
        if namespaced {
            errs.push(FieldError::invalid_raw(
                at("nonResourceURLs"),
                shown.clone(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|k| !list(k).is_empty())
        {
            errs.push(FieldError::invalid_raw(
                at("nonResourceURLs"),
                shown,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if list("apiGroups").is_empty() {
        errs.push(FieldError::required(
            at("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    let resources = list("resources");
    if resources.is_empty() {
        errs.push(FieldError::required(
            at("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    if !list("resourceNames").is_empty() && resources.len() > 1 {
        errs.push(FieldError::required(
            at("resourceNames"),
            "resource names cannot apply to multiple resources",
        ));
    }
    errs
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
        if spec.get("minReplicas").is_none_or(Value::is_null) {
            spec.insert("minReplicas".into(), json!(1));
        }
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
        // Upstream's copyHPAScalingRules: every field left unset (absent or null) is filled.
        let fill = |rules: &mut Value, defaults: Value| {
            if rules.is_null() {
                *rules = json!({});
            }
            let (Some(rules), Value::Object(defaults)) = (rules.as_object_mut(), defaults) else {
                return;
            };
            for (k, v) in defaults {
                if rules.get(&k).is_none_or(Value::is_null) {
                    rules.insert(k, v);
                }
            }
        };
        fill(
            behavior.entry("scaleUp").or_insert(Value::Null),
            json!({ "stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                { "type": "Pods", "value": 4, "periodSeconds": 15 },
                { "type": "Percent", "value": 100, "periodSeconds": 15 },
            ] }),
        );
        // The scale-down window stays unset: the controller's flag decides it.
        fill(
            behavior.entry("scaleDown").or_insert(Value::Null),
            json!({ "selectPolicy": "Max", "policies": [
                { "type": "Percent", "value": 100, "periodSeconds": 15 },
            ] }),
        );
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        // `desiredReplicas` is a required field of the status (clients validate it).
        obj["status"] = json!({ "desiredReplicas": 0 });
        drop_hpa_tolerance(obj);
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // A tolerance already stored survives updates, as upstream's dropDisabledFields.
        if !hpa_tolerance_in_use(old) {
            drop_hpa_tolerance(new);
        }
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_hpa_spec(obj, 1)
    }
    /// An autoscaler stored with `minReplicas: 0` (scale to zero, an alpha gate) may keep it.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let scaled_to_zero = old.pointer("/spec/minReplicas").and_then(Value::as_i64) == Some(0);
        validate_hpa_spec(new, if scaled_to_zero { 0 } else { 1 })
    }
    /// Upstream's ValidateHorizontalPodAutoscalerStatusUpdate: replica counts not negative.
    fn validate_subresource_update(
        &self,
        _sub: &str,
        new: &Value,
        _old: &Value,
    ) -> Vec<FieldError> {
        ["currentReplicas", "desiredReplicas"]
            .into_iter()
            .filter_map(|field| {
                let n = new.get("status")?.get(field)?.as_i64()?;
                (n < 0).then(|| {
                    FieldError::invalid(
                        format!("status.{field}"),
                        n,
                        "must be greater than or equal to 0",
                    )
                })
            })
            .collect()
    }
}

/// The per-direction scaling rules of an HPA's behavior.
fn hpa_scaling_rules(obj: &Value) -> impl Iterator<Item = &Value> {
    ["scaleUp", "scaleDown"]
        .into_iter()
        .filter_map(|d| obj.pointer(&format!("/spec/behavior/{d}")))
}

fn hpa_tolerance_in_use(obj: &Value) -> bool {
    hpa_scaling_rules(obj).any(|r| r.get("tolerance").is_some_and(|t| !t.is_null()))
}

/// Scaling-rule `tolerance` belongs to the HPAConfigurableTolerance gate, alpha and off in 1.33.
fn drop_hpa_tolerance(obj: &mut Value) {
    for d in ["scaleUp", "scaleDown"] {
        if let Some(r) = obj
            .pointer_mut(&format!("/spec/behavior/{d}"))
            .and_then(Value::as_object_mut)
        {
            r.remove("tolerance");
        }
    }
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Whether `key` is set: Go's non-nil pointer (JSON `null` decodes to nil).
fn is_set(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|x| !x.is_null())
}

/// Upstream's validateHorizontalPodAutoscalerSpec: replica bounds (`min_replicas_bound` is 0
/// only for an autoscaler already scaled to zero), the scale target, metrics and behavior.
fn validate_hpa_spec(obj: &Value, min_replicas_bound: i64) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if let Some(m) = min.filter(|m| *m < min_replicas_bound) {
        errs.push(FieldError::invalid(
            "spec.minReplicas",
            m,
            format!("must be greater than or equal to {min_replicas_bound}"),
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
    errs.extend(validate_cross_version_ref(
        &spec["scaleTargetRef"],
        "spec.scaleTargetRef",
    ));
    errs.extend(validate_metrics(spec, min));
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        for direction in ["scaleUp", "scaleDown"] {
            if let Some(rules) = behavior.get(direction).filter(|r| !r.is_null()) {
                errs.extend(validate_scaling_rules(
                    rules,
                    &format!("spec.behavior.{direction}"),
                ));
            }
        }
    }
    errs
}

/// Upstream's ValidateCrossVersionObjectReference: kind and name required path segments.
fn validate_cross_version_ref(reference: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for key in ["kind", "name"] {
        let field = format!("{path}.{key}");
        let value = text(reference, key);
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

/// Upstream's MetricSourceTypes, sorted as its validation lists them.
const METRIC_SOURCE_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
/// The member of a MetricSpec each type fills, in the order upstream checks them.
const METRIC_MEMBERS: [(&str, &str); 5] = [
    ("object", "Object"),
    ("external", "External"),
    ("pods", "Pods"),
    ("resource", "Resource"),
    ("containerResource", "ContainerResource"),
];

/// Upstream's validateMetrics: each MetricSpec, and an Object or External metric when the
/// autoscaler may scale to zero.
fn validate_metrics(spec: &Value, min_replicas: Option<i64>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, m) in metrics.iter().enumerate() {
        errs.extend(validate_metric_spec(m, &format!("spec.metrics[{i}]")));
    }
    let object_or_external = metrics
        .iter()
        .any(|m| matches!(text(m, "type"), "Object" | "External"));
    if min_replicas == Some(0) && !object_or_external {
        errs.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    errs
}

/// Upstream's validateMetricSpec: a known type, exactly the member for it, and that member's
/// own checks (only the first member present is checked, as upstream).
fn validate_metric_spec(m: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = text(m, "type");
    let type_path = format!("{path}.type");
    if ty.is_empty() {
        errs.push(FieldError::required(
            &type_path,
            "must specify a metric source type",
        ));
    }
    if !METRIC_SOURCE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            &type_path,
            ty,
            &METRIC_SOURCE_TYPES,
        ));
    }
    let present: Vec<&str> = METRIC_MEMBERS
        .iter()
        .map(|(member, _)| *member)
        .filter(|member| is_set(m, member))
        .collect();
    if let Some(first) = present.first() {
        let member_path = format!("{path}.{first}");
        let src = &m[*first];
        errs.extend(match *first {
            "object" => validate_object_source(src, &member_path),
            "external" => validate_external_source(src, &member_path),
            "pods" => validate_pods_source(src, &member_path),
            "resource" => validate_resource_source(src, &member_path, false),
            _ => validate_resource_source(src, &member_path, true),
        });
    }
    let expected = METRIC_MEMBERS
        .iter()
        .find(|(_, t)| *t == ty)
        .map(|(f, _)| *f);
    match expected {
        Some(member) if !present.contains(&member) => errs.push(FieldError::required(
            format!("{path}.{member}"),
            "must populate information for the given metric source",
        )),
        Some(_) => {}
        None => errs.push(FieldError::not_supported(
            &type_path,
            ty,
            &METRIC_SOURCE_TYPES,
        )),
    }
    if present.len() != 1 {
        for member in present.iter().filter(|p| Some(**p) != expected) {
            errs.push(FieldError::forbidden(
                format!("{path}.{member}"),
                "must populate the given metric source only",
            ));
        }
    }
    errs
}

fn validate_object_source(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs =
        validate_cross_version_ref(&src["describedObject"], &format!("{path}.describedObject"));
    errs.extend(validate_metric_identifier(&src["metric"], path));
    let target = &src["target"];
    errs.extend(validate_metric_target(target, path));
    if !is_set(target, "value") && !is_set(target, "averageValue") {
        errs.push(FieldError::required(
            format!("{path}.target.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
    errs
}

fn validate_external_source(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_metric_identifier(&src["metric"], path);
    let target = &src["target"];
    errs.extend(validate_metric_target(target, path));
    match (is_set(target, "value"), is_set(target, "averageValue")) {
        (false, false) => errs.push(FieldError::required(
            format!("{path}.target.averageValue"),
            "must set either a target value for metric or a per-pod target",
        )),
        (true, true) => errs.push(FieldError::forbidden(
            format!("{path}.target.value"),
            "may not set both a target value for metric and a per-pod target",
        )),
        _ => {}
    }
    errs
}

fn validate_pods_source(src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_metric_identifier(&src["metric"], path);
    let target = &src["target"];
    errs.extend(validate_metric_target(target, path));
    if !is_set(target, "averageValue") {
        errs.push(FieldError::required(
            format!("{path}.target.averageValue"),
            "must specify a positive target averageValue",
        ));
    }
    errs
}

/// A Resource or (with `container`) ContainerResource metric source.
fn validate_resource_source(src: &Value, path: &str, container: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = text(src, "name");
    let name_path = format!("{path}.name");
    if name.is_empty() {
        errs.push(FieldError::required(
            &name_path,
            "must specify a resource name",
        ));
    } else if container {
        errs.extend(super::resources::container_resource_name_errors(
            name, &name_path,
        ));
    }
    if container {
        let c = text(src, "container");
        let c_path = format!("{path}.container");
        if c.is_empty() {
            errs.push(FieldError::required(&c_path, "must specify a container"));
        } else {
            for msg in k1s_apimachinery::validation::is_dns1123_label(c) {
                errs.push(FieldError::invalid(&c_path, c, msg));
            }
        }
    }
    let target = &src["target"];
    errs.extend(validate_metric_target(target, path));
    match (
        is_set(target, "averageUtilization"),
        is_set(target, "averageValue"),
    ) {
        (false, false) => errs.push(FieldError::required(
            format!("{path}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        )),
        (true, true) => errs.push(FieldError::forbidden(
            format!("{path}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        )),
        _ => {}
    }
    errs
}

/// Upstream's validateMetricIdentifier (`metric` under the source's path).
fn validate_metric_identifier(id: &Value, source_path: &str) -> Vec<FieldError> {
    let path = format!("{source_path}.metric.name");
    let name = text(id, "name");
    if name.is_empty() {
        return vec![FieldError::required(path, "must specify a metric name")];
    }
    super::networking::path_segment_errors(name)
        .into_iter()
        .map(|m| FieldError::invalid(&path, name, m))
        .collect()
}

/// Upstream's validateMetricTarget (`target` under the source's path).
fn validate_metric_target(target: &Value, source_path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = format!("{source_path}.target");
    let ty = text(target, "type");
    if ty.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.type"),
            "must specify a metric target type",
        ));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&ty) {
        errs.push(FieldError::invalid(
            format!("{path}.type"),
            ty,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        if let Some(err) = positive_quantity_error(target.get(field), &format!("{path}.{field}")) {
            errs.push(err);
        }
    }
    if let Some(u) = target.get("averageUtilization").and_then(Value::as_i64)
        && u < 1
    {
        errs.push(FieldError::invalid(
            format!("{path}.averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    errs
}

/// A set quantity that is not positive, reported as upstream prints a `resource.Quantity`.
fn positive_quantity_error(v: Option<&Value>, path: &str) -> Option<FieldError> {
    let text = quantity_text(v?)?;
    match Quantity::parse(&text) {
        Some(q) if q > Quantity::zero() => None,
        Some(_) => Some(FieldError::invalid_raw(
            path,
            go_quantity(&text),
            "must be positive",
        )),
        None => Some(FieldError::invalid(
            path,
            text,
            k1s_apimachinery::quantity::FORMAT_ERROR,
        )),
    }
}

/// A quantity as JSON carries it (a string, or a bare number); None when null.
fn quantity_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Upstream's validateScalingRules for one direction of `behavior`.
fn validate_scaling_rules(rules: &Value, path: &str) -> Vec<FieldError> {
    const MAX_STABILIZATION_WINDOW: i64 = 3600;
    const MAX_PERIOD: i64 = 1800;
    let mut errs = Vec::new();
    if let Some(w) = rules
        .get("stabilizationWindowSeconds")
        .and_then(Value::as_i64)
    {
        let field = format!("{path}.stabilizationWindowSeconds");
        if w < 0 {
            errs.push(FieldError::invalid(
                &field,
                w,
                "must be greater than or equal to zero",
            ));
        }
        if w > MAX_STABILIZATION_WINDOW {
            errs.push(FieldError::invalid(
                &field,
                w,
                format!("must be less than or equal to {MAX_STABILIZATION_WINDOW}"),
            ));
        }
    }
    if is_set(rules, "selectPolicy") {
        let p = text(rules, "selectPolicy");
        if !["Max", "Min", "Disabled"].contains(&p) {
            errs.push(FieldError::not_supported(
                format!("{path}.selectPolicy"),
                p,
                &["Disabled", "Max", "Min"],
            ));
        }
    }
    let policies = rules
        .get("policies")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if policies.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, p) in policies.iter().enumerate() {
        let p_path = format!("{path}.policies[{i}]");
        let ty = text(p, "type");
        if !["Pods", "Percent"].contains(&ty) {
            errs.push(FieldError::not_supported(
                format!("{p_path}.type"),
                ty,
                &["Percent", "Pods"],
            ));
        }
        let value = p.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value <= 0 {
            errs.push(FieldError::invalid(
                format!("{p_path}.value"),
                value,
                "must be greater than zero",
            ));
        }
        let period = p.get("periodSeconds").and_then(Value::as_i64).unwrap_or(0);
        let period_path = format!("{p_path}.periodSeconds");
        if period <= 0 {
            errs.push(FieldError::invalid(
                &period_path,
                period,
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD {
            errs.push(FieldError::invalid(
                &period_path,
                period,
                format!("must be less than or equal to {MAX_PERIOD}"),
            ));
        }
    }
    // Only a tolerance stored before the gate went off reaches validation.
    if let Some(t) = rules.get("tolerance").and_then(quantity_text) {
        let path = format!("{path}.tolerance");
        match Quantity::parse(&t) {
            Some(q) if q.is_negative() => errs.push(FieldError::invalid_raw(
                path,
                go_quantity(&t),
                "must be greater than or equal to zero",
            )),
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                path,
                t,
                k1s_apimachinery::quantity::FORMAT_ERROR,
            )),
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
}

/// discovery.k8s.io/v1 EndpointSlices (upstream's `pkg/registry/discovery/endpointslice` and
/// `ValidateEndpointSlice`): ports defaulted, fields of disabled gates and `deprecatedTopology`
/// dropped as a v1 write does, the generation counting endpoint, port and label changes.
pub struct EndpointSlices;
impl Strategy for EndpointSlices {
    fn default(&self, obj: &mut Value) {
        let ports = obj.get_mut("ports").and_then(Value::as_array_mut);
        for p in ports.into_iter().flatten() {
            if let Some(p) = p.as_object_mut() {
                for (k, v) in [("name", ""), ("protocol", "TCP")] {
                    if p.get(k).is_none_or(Value::is_null) {
                        p.insert(k.into(), json!(v));
                    }
                }
            }
        }
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        drop_endpoint_slice_fields(obj, None);
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        // Labels count for the generation too (the registry counts everything else).
        let labels = |o: &Value| {
            o.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .filter(|l| !l.is_empty())
                .cloned()
        };
        if labels(new) != labels(old) {
            let g = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            new["metadata"]["generation"] = json!(g + 1);
        }
        drop_endpoint_slice_fields(new, Some(old));
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_endpoint_slice(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_endpoint_slice(new);
        if new.get("addressType") != old.get("addressType") {
            errs.push(FieldError::invalid(
                "addressType",
                new.get("addressType").cloned().unwrap_or(json!("")),
                "field is immutable",
            ));
        }
        errs
    }
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut out = Vec::new();
        if obj.get("addressType").and_then(Value::as_str) == Some("FQDN") {
            out.push("spec.addressType: FQDN endpoints are deprecated".to_string());
        }
        out.extend(endpoint_ip_warnings(obj));
        out
    }
    fn warnings_on_update(&self, new: &Value, _old: &Value) -> Vec<String> {
        endpoint_ip_warnings(new)
    }
}

fn endpoints_mut(obj: &mut Value) -> impl Iterator<Item = &mut serde_json::Map<String, Value>> {
    obj.get_mut("endpoints")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

fn endpoints(obj: &Value) -> &[Value] {
    obj.get("endpoints")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// What a v1 write of an EndpointSlice may not set (`old`: the stored slice on update):
/// `hints.forNodes` (PreferSameTrafficDistribution, alpha and off in 1.33) unless the stored
/// slice uses it, and `deprecatedTopology` (upstream's dropTopologyOnV1), whose
/// `kubernetes.io/hostname` fills an unset `nodeName` when the stored slice named that node.
fn drop_endpoint_slice_fields(new: &mut Value, old: Option<&Value>) {
    let old_eps = old.map_or(&[][..], endpoints);
    let node_hints_in_use = old_eps.iter().any(|e| {
        e.get("hints")
            .and_then(|h| h.get("forNodes"))
            .is_some_and(|f| !f.is_null())
    });
    if !node_hints_in_use {
        for ep in endpoints_mut(new) {
            if let Some(h) = ep.get_mut("hints").and_then(Value::as_object_mut) {
                h.remove("forNodes");
            }
        }
    }
    if old.is_some_and(|o| o.get("endpoints") == new.get("endpoints")) {
        return;
    }
    let previous_nodes: Vec<&str> = old_eps
        .iter()
        .filter_map(|e| e.pointer("/deprecatedTopology/kubernetes.io~1hostname"))
        .filter_map(Value::as_str)
        .filter(|n| !n.is_empty())
        .collect();
    for ep in endpoints_mut(new) {
        let Some(topology) = ep.remove("deprecatedTopology") else {
            continue;
        };
        let host = topology
            .get("kubernetes.io/hostname")
            .and_then(Value::as_str);
        if let Some(host) = host
            && ep.get("nodeName").is_none_or(Value::is_null)
            && previous_nodes.contains(&host)
            && k1s_apimachinery::validation::is_dns1123_subdomain(host).is_empty()
        {
            ep.insert("nodeName".into(), json!(host));
        }
    }
}

/// Upstream's limits on an EndpointSlice's lists.
const MAX_ENDPOINTS: usize = 1000;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_ZONE_HINTS: usize = 8;
const MAX_NODE_HINTS: usize = 8;

/// Upstream's ValidateEndpointSlice (object metadata is validated by the registry).
fn validate_endpoint_slice(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let address_type = text(obj, "addressType");
    if address_type.is_empty() {
        errs.push(FieldError::required("addressType", ""));
    } else if !["FQDN", "IPv4", "IPv6"].contains(&address_type) {
        errs.push(FieldError::not_supported(
            "addressType",
            address_type,
            &["FQDN", "IPv4", "IPv6"],
        ));
    }
    let eps = endpoints(obj);
    if eps.len() > MAX_ENDPOINTS {
        errs.push(FieldError::too_many(
            "endpoints",
            Some(eps.len()),
            Some(MAX_ENDPOINTS),
        ));
    } else {
        for (i, ep) in eps.iter().enumerate() {
            errs.extend(validate_endpoint(
                ep,
                address_type,
                &format!("endpoints[{i}]"),
            ));
        }
    }
    let ports = obj
        .get("ports")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if ports.len() > MAX_PORTS {
        errs.push(FieldError::too_many(
            "ports",
            Some(ports.len()),
            Some(MAX_PORTS),
        ));
        return errs;
    }
    let mut names = std::collections::HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let path = format!("ports[{i}]");
        let name = text(p, "name");
        for msg in k1s_apimachinery::validation::is_dns1123_label(name)
            .into_iter()
            .filter(|_| !name.is_empty())
        {
            errs.push(FieldError::invalid(format!("{path}.name"), name, msg));
        }
        if !names.insert(name) {
            errs.push(FieldError::duplicate(format!("{path}.name"), name));
        }
        match p.get("protocol").and_then(Value::as_str) {
            None => errs.push(FieldError::required(format!("{path}.protocol"), "")),
            Some("TCP" | "UDP" | "SCTP") => {}
            Some(other) => errs.push(FieldError::not_supported(
                format!("{path}.protocol"),
                other,
                &["SCTP", "TCP", "UDP"],
            )),
        }
        if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
            for msg in k1s_apimachinery::validation::is_qualified_name(app) {
                errs.push(FieldError::invalid(format!("{path}.appProtocol"), app, msg));
            }
        }
    }
    errs
}

/// One endpoint of a slice of `address_type` (unknown types leave addresses unchecked).
fn validate_endpoint(ep: &Value, address_type: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let addresses_path = format!("{path}.addresses");
    let addresses = ep
        .get("addresses")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if addresses.is_empty() {
        errs.push(FieldError::required(
            &addresses_path,
            "must contain at least 1 address",
        ));
    } else if addresses.len() > MAX_ADDRESSES {
        errs.push(FieldError::too_many(
            &addresses_path,
            Some(addresses.len()),
            Some(MAX_ADDRESSES),
        ));
    }
    for (j, address) in addresses.iter().enumerate() {
        let field = format!("{addresses_path}[{j}]");
        let address = address.as_str().unwrap_or_default();
        match address_type {
            "IPv4" | "IPv6" => errs.extend(endpoint_ip_errors(address, address_type, &field)),
            "FQDN" => errs.extend(fqdn_errors(address, &field)),
            _ => {}
        }
    }
    if let Some(node) = ep.get("nodeName").and_then(Value::as_str) {
        for msg in k1s_apimachinery::validation::is_dns1123_subdomain(node) {
            errs.push(FieldError::invalid(format!("{path}.nodeName"), node, msg));
        }
    }
    if let Some(host) = ep.get("hostname").and_then(Value::as_str) {
        for msg in k1s_apimachinery::validation::is_dns1123_label(host) {
            errs.push(FieldError::invalid(format!("{path}.hostname"), host, msg));
        }
    }
    if let Some(hints) = ep.get("hints").filter(|h| !h.is_null()) {
        errs.extend(validate_hints(hints, &format!("{path}.hints")));
    }
    errs
}

/// Upstream's validateHints: at most 8 zones (and nodes), unique, each a valid label value
/// (node hints: a node name).
fn validate_hints(hints: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, max) in [("forZones", MAX_ZONE_HINTS), ("forNodes", MAX_NODE_HINTS)] {
        let list = hints
            .get(key)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let list_path = format!("{path}.{key}");
        if list.len() > max {
            errs.push(FieldError::too_many(
                &list_path,
                Some(list.len()),
                Some(max),
            ));
            continue;
        }
        let mut seen = std::collections::HashSet::new();
        for (i, hint) in list.iter().enumerate() {
            let name_path = format!("{list_path}[{i}].name");
            let name = text(hint, "name");
            if !seen.insert(name) {
                errs.push(FieldError::duplicate(&name_path, name));
            }
            let msgs = if key == "forZones" {
                k1s_apimachinery::validation::is_valid_label_value(name)
            } else {
                k1s_apimachinery::validation::is_dns1123_subdomain(name)
            };
            for msg in msgs {
                errs.push(FieldError::invalid(&name_path, name, msg));
            }
        }
    }
    errs
}

/// Go's `net.ParseIP` (which also reads IPv4 octets with leading zeros), IPv4-mapped IPv6
/// addresses seen as the IPv4 address they carry, as Go's `To4` does.
fn go_parse_ip(s: &str) -> Option<IpAddr> {
    let ip = s.parse::<IpAddr>().ok().or_else(|| {
        let octets: Vec<u8> = s
            .split('.')
            .map(|p| {
                (!p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| p.parse::<u8>().ok())
                    .flatten()
            })
            .collect::<Option<_>>()?;
        <[u8; 4]>::try_from(octets).ok().map(IpAddr::from)
    })?;
    Some(match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    })
}

/// An address of an IPv4 or IPv6 slice: of that family (upstream's IsValidIPv4Address /
/// IsValidIPv6Address), and not unspecified or link-local (ValidateEndpointIP). Unlike
/// upstream, loopback addresses are accepted: k1s runs on the host, and a Service whose
/// backend (an aggregated API server, a webhook) listens on 127.0.0.1 is how such backends
/// are reached, as k1s's Endpoints also allow.
fn endpoint_ip_errors(address: &str, family: &str, path: &str) -> Vec<FieldError> {
    let mut details = Vec::new();
    let ip = go_parse_ip(address);
    let family_ok = match ip {
        Some(IpAddr::V4(_)) => family == "IPv4",
        Some(IpAddr::V6(_)) => family == "IPv6",
        None => false,
    };
    if !family_ok {
        details.push(format!("must be a valid {family} address"));
    }
    match ip {
        None => details.push("must be a valid IP address".to_string()),
        Some(ip) => {
            let (link_local, link_local_multicast) = match ip {
                IpAddr::V4(v4) => (v4.is_link_local(), v4.octets()[..3] == [224, 0, 0]),
                IpAddr::V6(v6) => (
                    v6.segments()[0] & 0xffc0 == 0xfe80,
                    v6.segments()[0] & 0xff0f == 0xff02,
                ),
            };
            if ip.is_unspecified() {
                details.push(format!("may not be unspecified ({address})"));
            }
            if link_local {
                details
                    .push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".into());
            }
            if link_local_multicast {
                details.push(
                    "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into(),
                );
            }
        }
    }
    details
        .into_iter()
        .map(|d| FieldError::invalid(path, address, d))
        .collect()
}

/// Upstream's IsFullyQualifiedDomainName: a DNS subdomain of two labels at least (a trailing
/// dot allowed); the first problem only.
fn fqdn_errors(address: &str, path: &str) -> Vec<FieldError> {
    if address.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let name = address.strip_suffix('.').unwrap_or(address);
    let errs = k1s_apimachinery::validation::is_dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if !name.contains('.') {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    name.split('.')
        .find_map(|label| {
            let errs = k1s_apimachinery::validation::is_dns1123_label(label);
            (!errs.is_empty()).then(|| FieldError::invalid(path, label, errs.join(",")))
        })
        .into_iter()
        .collect()
}

/// Upstream's warnOnBadIPs: addresses in a form a later release will refuse (leading zeros,
/// IPv4-mapped IPv6) or IPv6 not in canonical form; none for slices the endpoint controllers
/// wrote.
fn endpoint_ip_warnings(obj: &Value) -> Vec<String> {
    let managed_by = obj
        .pointer("/metadata/labels/endpointslice.kubernetes.io~1managed-by")
        .and_then(Value::as_str);
    if matches!(
        managed_by,
        Some("endpointslice-controller.k8s.io" | "endpointslicemirroring-controller.k8s.io")
    ) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, ep) in endpoints(obj).iter().enumerate() {
        let addresses = ep.get("addresses").and_then(Value::as_array);
        for (j, address) in addresses.into_iter().flatten().enumerate() {
            let Some(address) = address.as_str() else {
                continue;
            };
            let Some(ip) = go_parse_ip(address) else {
                continue;
            };
            let path = format!("endpoints[{i}].addresses[{j}]");
            match address.parse::<IpAddr>() {
                Err(_) | Ok(IpAddr::V6(_)) if ip.is_ipv4() => out.push(format!(
                    "{path}: non-standard IP address {address:?} will be considered invalid in a future Kubernetes release: use \"{ip}\""
                )),
                Ok(IpAddr::V6(v6)) if v6.to_string() != address => out.push(format!(
                    "{path}: IPv6 address {address:?} should be in RFC 5952 canonical format (\"{v6}\")"
                )),
                _ => {}
            }
        }
    }
    out
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

#[cfg(test)]
mod tests {
    //! Cases of upstream's autoscaling and discovery `validation_test.go` (inputs and the
    //! errors they must give).
    use super::*;

    fn errors(strategy: &dyn Strategy, mut obj: Value) -> Vec<String> {
        strategy.default(&mut obj);
        strategy
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn hpa_errors(spec_extra: Value) -> Vec<String> {
        let mut spec = json!({
            "scaleTargetRef": { "apiVersion": "apps/v1", "kind": "Deployment", "name": "web" },
            "minReplicas": 1, "maxReplicas": 5,
        });
        for (k, v) in spec_extra.as_object().expect("object") {
            spec[k] = v.clone();
        }
        errors(
            &HorizontalPodAutoscalers,
            json!({ "metadata": { "name": "h" }, "spec": spec }),
        )
    }

    fn metric(m: Value) -> Vec<String> {
        hpa_errors(json!({ "metrics": [m] }))
    }

    #[test]
    fn hpa_metric_sources_are_validated_as_upstream() {
        let cpu = json!({ "type": "Resource", "resource": { "name": "cpu",
            "target": { "type": "Utilization", "averageUtilization": 70 } } });
        assert!(metric(cpu).is_empty());
        let object = json!({ "type": "Object", "object": {
            "describedObject": { "kind": "Ingress", "name": "main" },
            "metric": { "name": "requests-per-second" },
            "target": { "type": "Value", "value": "2k" } } });
        assert!(metric(object).is_empty());
        let external = json!({ "type": "External", "external": {
            "metric": { "name": "queue", "selector": { "matchLabels": { "q": "jobs" } } },
            "target": { "type": "AverageValue", "averageValue": "30" } } });
        assert!(metric(external).is_empty());
        let pods = json!({ "type": "Pods", "pods": { "metric": { "name": "qps" },
            "target": { "type": "AverageValue", "averageValue": "100m" } } });
        assert!(metric(pods).is_empty());
        let container = json!({ "type": "ContainerResource", "containerResource": {
            "name": "memory", "container": "app",
            "target": { "type": "AverageValue", "averageValue": "1Gi" } } });
        assert!(metric(container).is_empty());

        assert_eq!(
            metric(json!({ "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": 70 } } })),
            [
                "spec.metrics[0].type: Required value: must specify a metric source type",
                "spec.metrics[0].type: Unsupported value: \"\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.metrics[0].type: Unsupported value: \"\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ]
        );
        assert_eq!(
            metric(json!({ "type": "Pods", "resource": { "name": "cpu",
                "target": { "type": "Utilization", "averageUtilization": 70 } } })),
            [
                "spec.metrics[0].pods: Required value: must populate information for the given metric source"
            ]
        );
        assert_eq!(
            metric(
                json!({ "type": "Pods", "pods": { "metric": { "name": "qps" },
                "target": { "type": "AverageValue", "averageValue": "1" } },
                "external": { "metric": { "name": "q" }, "target": { "type": "Value" } } })
            ),
            // Only the first member in upstream's order (external before pods) is checked.
            [
                "spec.metrics[0].external.target.averageValue: Required value: must set either a target value for metric or a per-pod target",
                "spec.metrics[0].external: Forbidden: must populate the given metric source only",
            ]
        );
        assert_eq!(
            metric(json!({ "type": "Resource", "resource": { "name": "",
                "target": { "type": "Bogus", "averageUtilization": 0, "averageValue": "1" } } })),
            [
                "spec.metrics[0].resource.name: Required value: must specify a resource name",
                "spec.metrics[0].resource.target.type: Invalid value: \"Bogus\": must be either Utilization, Value, or AverageValue",
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
                "spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization",
            ]
        );
        assert_eq!(
            metric(json!({ "type": "Resource", "resource": { "name": "cpu", "target": {} } })),
            [
                "spec.metrics[0].resource.target.type: Required value: must specify a metric target type",
                "spec.metrics[0].resource.target.type: Invalid value: \"\": must be either Utilization, Value, or AverageValue",
                "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization",
            ]
        );
        assert_eq!(
            metric(json!({ "type": "Object", "object": {
                "describedObject": { "kind": "", "name": "a/b" }, "metric": {},
                "target": { "type": "Value" } } })),
            [
                "spec.metrics[0].object.describedObject.kind: Required value",
                "spec.metrics[0].object.describedObject.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.metrics[0].object.metric.name: Required value: must specify a metric name",
                "spec.metrics[0].object.target.averageValue: Required value: must set either a target value or averageValue",
            ]
        );
        assert_eq!(
            metric(
                json!({ "type": "External", "external": { "metric": { "name": ".." },
                "target": { "type": "Value", "value": "1", "averageValue": "-1" } } })
            ),
            [
                "spec.metrics[0].external.metric.name: Invalid value: \"..\": may not be '..'",
                "spec.metrics[0].external.target.averageValue: Invalid value: resource.Quantity{i:resource.int64Amount{value:-1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"-1\", Format:\"DecimalSI\"}: must be positive",
                "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a per-pod target",
            ]
        );
        assert_eq!(
            metric(
                json!({ "type": "External", "external": { "metric": { "name": "q" },
                "target": { "type": "Value" } } })
            ),
            [
                "spec.metrics[0].external.target.averageValue: Required value: must set either a target value for metric or a per-pod target"
            ]
        );
        assert_eq!(
            metric(
                json!({ "type": "Pods", "pods": { "metric": { "name": "qps" },
                "target": { "type": "Value", "value": 0 } } })
            ),
            [
                "spec.metrics[0].pods.target.value: Invalid value: resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"0\", Format:\"DecimalSI\"}: must be positive",
                "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue",
            ]
        );
        assert_eq!(
            metric(json!({ "type": "ContainerResource", "containerResource": {
                "name": "pods", "container": "App_1",
                "target": { "type": "Utilization", "averageUtilization": 50 } } })),
            [
                "spec.metrics[0].containerResource.name: Invalid value: \"pods\": must be a standard resource for containers",
                "spec.metrics[0].containerResource.container: Invalid value: \"App_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
        assert_eq!(
            metric(json!({ "type": "ContainerResource", "containerResource": {
                "name": "widgets", "target": { "type": "AverageValue", "averageValue": "1" } } })),
            [
                "spec.metrics[0].containerResource.name: Invalid value: \"widgets\": must be a standard resource type or fully qualified",
                "spec.metrics[0].containerResource.name: Invalid value: \"widgets\": must be a standard resource for containers",
                "spec.metrics[0].containerResource.container: Required value: must specify a container",
            ]
        );
        assert!(
            metric(json!({ "type": "ContainerResource", "containerResource": {
                "name": "example.com/gpu", "container": "app",
                "target": { "type": "AverageValue", "averageValue": "1" } } }))
            .is_empty()
        );
        assert_eq!(
            metric(json!({ "type": "ContainerResource", "containerResource": {
                "name": "requests.example.com/gpu", "container": "app",
                "target": { "type": "AverageValue", "averageValue": "1x" } } })),
            [
                "spec.metrics[0].containerResource.name: Invalid value: \"requests.example.com/gpu\": doesn't follow extended resource name standard",
                "spec.metrics[0].containerResource.target.averageValue: Invalid value: \"1x\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            ]
        );
        assert!(
            metric(json!({ "type": "ContainerResource", "containerResource": {
                "name": "hugepages-2Mi", "container": "app",
                "target": { "type": "AverageValue", "averageValue": "2Mi" } } }))
            .is_empty()
        );
        assert_eq!(
            metric(json!({ "type": "Custom" })),
            [
                "spec.metrics[0].type: Unsupported value: \"Custom\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.metrics[0].type: Unsupported value: \"Custom\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ]
        );
    }

    #[test]
    fn hpa_quantities_print_as_go_prints_them() {
        let cases = [
            ("0", 0, 0, "0", "DecimalSI"),
            ("-100m", -100, -3, "-100m", "DecimalSI"),
            ("-1.5", -15, -1, "", "DecimalSI"),
            ("-1000", -1000, 0, "", "DecimalSI"),
            ("-1Ki", -1024, 0, "-1Ki", "BinarySI"),
            ("-8Ki", -8192, 0, "", "BinarySI"),
            ("-2e3", -2, 3, "-2e3", "DecimalExponent"),
            ("0.0", 0, -1, "", "DecimalSI"),
        ];
        for (text, value, scale, s, format) in cases {
            assert_eq!(
                go_quantity(text),
                format!(
                    "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{s:?}, Format:{format:?}}}"
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn hpa_scale_to_zero_needs_an_object_or_external_metric_on_kept_updates() {
        let hpa = |min: i64, metrics: Value| {
            json!({ "metadata": { "name": "h" }, "spec": {
                "scaleTargetRef": { "kind": "Deployment", "name": "web" },
                "minReplicas": min, "maxReplicas": 3, "metrics": metrics } })
        };
        let cpu = json!([{ "type": "Resource", "resource": { "name": "cpu",
            "target": { "type": "Utilization", "averageUtilization": 70 } } }]);
        let errs = |new: &Value, old: &Value| -> Vec<String> {
            HorizontalPodAutoscalers
                .validate_update(new, old)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        // Created at 0: refused (the gate is off).
        assert_eq!(
            errors(&HorizontalPodAutoscalers, hpa(0, cpu.clone())),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
        // Stored at 0 already: the bound is 0, and an Object/External metric is still needed.
        let old = hpa(0, cpu.clone());
        assert_eq!(
            errs(&hpa(0, cpu.clone()), &old),
            [
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas"
            ]
        );
        let external = json!([{ "type": "External", "external": { "metric": { "name": "q" },
            "target": { "type": "Value", "value": "1" } } }]);
        assert!(errs(&hpa(0, external), &old).is_empty());
        assert_eq!(
            errs(&hpa(0, cpu.clone()), &hpa(1, cpu)),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
    }

    #[test]
    fn hpa_behavior_is_defaulted_and_validated_as_upstream() {
        let mut obj = json!({ "spec": { "behavior": { "scaleUp": null,
            "scaleDown": { "stabilizationWindowSeconds": 60, "policies": null } } } });
        HorizontalPodAutoscalers.default(&mut obj);
        assert_eq!(
            obj["spec"]["behavior"],
            json!({
                "scaleUp": { "stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                    { "type": "Pods", "value": 4, "periodSeconds": 15 },
                    { "type": "Percent", "value": 100, "periodSeconds": 15 } ] },
                "scaleDown": { "stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                    "policies": [{ "type": "Percent", "value": 100, "periodSeconds": 15 }] },
            })
        );
        assert!(hpa_errors(json!({ "behavior": {} })).is_empty());
        assert_eq!(
            hpa_errors(json!({ "behavior": {
                "scaleUp": { "stabilizationWindowSeconds": -1, "selectPolicy": "Fastest",
                    "policies": [{ "type": "Replicas", "value": 0, "periodSeconds": 0 }] },
                "scaleDown": { "stabilizationWindowSeconds": 3601, "policies": [],
                    "selectPolicy": "Disabled" } } })),
            [
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Fastest\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies[0].type: Unsupported value: \"Replicas\": supported values: \"Percent\", \"Pods\"",
                "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600",
                "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
            ]
        );
        assert_eq!(
            hpa_errors(json!({ "behavior": { "scaleUp": {
                "policies": [{ "type": "Pods", "value": 1, "periodSeconds": 1801 }] } } })),
            [
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800"
            ]
        );
    }

    #[test]
    fn hpa_tolerance_is_dropped_while_its_gate_is_off() {
        let with = |t: Value| {
            json!({ "spec": { "behavior": { "scaleUp": { "tolerance": t },
                "scaleDown": { "tolerance": "0.05" } } } })
        };
        let mut created = with(json!("0.1"));
        HorizontalPodAutoscalers.prepare_for_create(&mut created);
        assert!(!hpa_tolerance_in_use(&created));
        // Kept on update when the stored object has one, and then validated.
        let mut updated = with(json!("-0.1"));
        HorizontalPodAutoscalers.prepare_for_update(&mut updated, &with(json!("0.1")));
        assert_eq!(updated["spec"]["behavior"]["scaleUp"]["tolerance"], "-0.1");
        assert_eq!(
            validate_scaling_rules(
                &updated["spec"]["behavior"]["scaleUp"],
                "spec.behavior.scaleUp"
            )
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
            [
                "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
                "spec.behavior.scaleUp.tolerance: Invalid value: resource.Quantity{i:resource.int64Amount{value:-1, scale:-1}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}: must be greater than or equal to zero",
            ]
        );
        let mut updated = with(json!("0.1"));
        HorizontalPodAutoscalers.prepare_for_update(&mut updated, &json!({ "spec": {} }));
        assert!(!hpa_tolerance_in_use(&updated));
    }

    #[test]
    fn hpa_status_replicas_are_not_negative() {
        let errs: Vec<String> = HorizontalPodAutoscalers
            .validate_subresource_update(
                "status",
                &json!({ "status": { "currentReplicas": -1, "desiredReplicas": 2 } }),
                &json!({}),
            )
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            ["status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"]
        );
    }

    fn slice(address_type: &str, endpoints: Value, ports: Value) -> Value {
        json!({ "metadata": { "name": "s" }, "addressType": address_type,
            "endpoints": endpoints, "ports": ports })
    }

    #[test]
    fn endpoint_slices_are_validated_as_upstream() {
        let errs = |obj: Value| errors(&EndpointSlices, obj);
        let ok = slice(
            "IPv4",
            json!([{ "addresses": ["10.0.0.1"], "nodeName": "node-1", "hostname": "web-0",
                "zone": "a", "hints": { "forZones": [{ "name": "zone-a" }] } }]),
            json!([{ "name": "http", "port": 80, "appProtocol": "kubernetes.io/h2c" }, { "port": 81 }]),
        );
        assert!(errs(ok).is_empty());
        assert!(
            errs(slice(
                "FQDN",
                json!([{ "addresses": ["db.example.com."] }]),
                json!([])
            ))
            .is_empty()
        );
        assert!(
            errs(slice(
                "IPv6",
                json!([{ "addresses": ["2001:db8::1"] }]),
                json!(null)
            ))
            .is_empty()
        );

        assert_eq!(
            errs(json!({ "endpoints": [] })),
            ["addressType: Required value"]
        );
        assert_eq!(
            errs(slice("IP", json!([{ "addresses": ["x"] }]), json!([]))),
            [
                "addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""
            ]
        );
        assert_eq!(
            errs(slice(
                "IPv4",
                json!([
                    { "addresses": [] },
                    { "addresses": ["2001:db8::1", "127.0.0.1", "0.0.0.0", "169.254.1.1", "224.0.0.5", "nope"] },
                ]),
                json!([])
            )),
            [
                "endpoints[0].addresses: Required value: must contain at least 1 address",
                "endpoints[1].addresses[0]: Invalid value: \"2001:db8::1\": must be a valid IPv4 address",
                "endpoints[1].addresses[2]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
                "endpoints[1].addresses[3]: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "endpoints[1].addresses[4]: Invalid value: \"224.0.0.5\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                "endpoints[1].addresses[5]: Invalid value: \"nope\": must be a valid IPv4 address",
                "endpoints[1].addresses[5]: Invalid value: \"nope\": must be a valid IP address",
            ]
        );
        assert_eq!(
            errs(slice(
                "IPv6",
                json!([{ "addresses": ["10.1.2.3", "::1", "fe80::1", "::"] }]),
                json!([])
            )),
            [
                "endpoints[0].addresses[0]: Invalid value: \"10.1.2.3\": must be a valid IPv6 address",
                "endpoints[0].addresses[2]: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "endpoints[0].addresses[3]: Invalid value: \"::\": may not be unspecified (::)",
            ]
        );
        assert_eq!(
            errs(slice(
                "FQDN",
                json!([{ "addresses": ["localhost", "Bad_Name.com", "a.-b.com", ""] }]),
                json!([])
            )),
            [
                "endpoints[0].addresses[0]: Invalid value: \"localhost\": should be a domain with at least two segments separated by dots",
                "endpoints[0].addresses[1]: Invalid value: \"Bad_Name.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "endpoints[0].addresses[2]: Invalid value: \"a.-b.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "endpoints[0].addresses[3]: Required value",
            ]
        );
        let many: Vec<String> = (0..101)
            .map(|i| format!("10.0.{}.{}", i / 200, i % 200 + 1))
            .collect();
        assert_eq!(
            errs(slice("IPv4", json!([{ "addresses": many }]), json!([]))),
            ["endpoints[0].addresses: Too many: 101: must have at most 100 items"]
        );
        let too_many: Vec<Value> = (0..1001)
            .map(|_| json!({ "addresses": ["10.0.0.1"] }))
            .collect();
        assert_eq!(
            errs(slice("IPv4", json!(too_many), json!([]))),
            ["endpoints: Too many: 1001: must have at most 1000 items"]
        );
        assert_eq!(
            errs(slice(
                "IPv4",
                json!([{ "addresses": ["10.0.0.1"], "nodeName": "Node_1", "hostname": "web.0",
                    "hints": { "forZones": [{ "name": "a" }, { "name": "a" }, { "name": "-z" }] } }]),
                json!([])
            )),
            [
                "endpoints[0].nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "endpoints[0].hostname: Invalid value: \"web.0\": must not contain dots",
                "endpoints[0].hints.forZones[1].name: Duplicate value: \"a\"",
                "endpoints[0].hints.forZones[2].name: Invalid value: \"-z\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ]
        );
        let zones: Vec<Value> = (0..9).map(|i| json!({ "name": format!("z{i}") })).collect();
        assert_eq!(
            errs(slice(
                "IPv4",
                json!([{ "addresses": ["10.0.0.1"], "hints": { "forZones": zones } }]),
                json!([])
            )),
            ["endpoints[0].hints.forZones: Too many: 9: must have at most 8 items"]
        );
        assert_eq!(
            errs(slice(
                "IPv4",
                json!([]),
                json!([{ "name": "HTTP" }, { "name": "a", "protocol": "ICMP" }, { "name": "a", "appProtocol": "a/b/c" }, { "protocol": null }, {}])
            )),
            [
                "ports[0].name: Invalid value: \"HTTP\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "ports[2].name: Duplicate value: \"a\"",
                "ports[2].appProtocol: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                "ports[4].name: Duplicate value: \"\"",
            ]
        );
    }

    #[test]
    fn endpoint_slice_updates_keep_the_address_type_and_drop_what_v1_drops() {
        let old = slice("IPv4", json!([{ "addresses": ["10.0.0.1"] }]), json!([]));
        let new = slice("IPv6", json!([{ "addresses": ["2001:db8::1"] }]), json!([]));
        let errs: Vec<String> = EndpointSlices
            .validate_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            ["addressType: Invalid value: \"IPv6\": field is immutable"]
        );

        // Node hints (gate off) and deprecatedTopology are dropped on create.
        let mut created = slice(
            "IPv4",
            json!([{ "addresses": ["10.0.0.1"], "deprecatedTopology": { "kubernetes.io/hostname": "n1" },
                "hints": { "forZones": [{ "name": "a" }], "forNodes": [{ "name": "n1" }] } }]),
            json!([]),
        );
        EndpointSlices.prepare_for_create(&mut created);
        assert_eq!(
            created["endpoints"][0],
            json!({ "addresses": ["10.0.0.1"], "hints": { "forZones": [{ "name": "a" }] } })
        );
        // On update, the stored topology's host fills an unset nodeName; labels bump the generation.
        let mut stored = slice(
            "IPv4",
            json!([{ "addresses": ["10.0.0.1"], "deprecatedTopology": { "kubernetes.io/hostname": "n1" } }]),
            json!([]),
        );
        stored["metadata"]["generation"] = json!(3);
        let mut updated = slice(
            "IPv4",
            json!([{ "addresses": ["10.0.0.2"], "deprecatedTopology": { "kubernetes.io/hostname": "n1" } }]),
            json!([]),
        );
        updated["metadata"]["labels"] = json!({ "app": "web" });
        updated["metadata"]["generation"] = json!(3);
        EndpointSlices.prepare_for_update(&mut updated, &stored);
        assert_eq!(
            updated["endpoints"][0],
            json!({ "addresses": ["10.0.0.2"], "nodeName": "n1" })
        );
        assert_eq!(updated["metadata"]["generation"], 4);
    }

    #[test]
    fn endpoint_slice_node_hints_kept_from_the_stored_slice_are_validated() {
        let nodes: Vec<Value> = (0..9).map(|i| json!({ "name": format!("n{i}") })).collect();
        let with_nodes = |for_nodes: Value| {
            slice(
                "IPv4",
                json!([{ "addresses": ["10.0.0.1"], "hints": { "forNodes": for_nodes } }]),
                json!([]),
            )
        };
        let stored = with_nodes(json!([{ "name": "n1" }]));
        let mut new =
            with_nodes(json!([{ "name": "n1" }, { "name": "n1" }, { "name": "Bad_Node" }]));
        EndpointSlices.prepare_for_update(&mut new, &stored);
        let errs: Vec<String> = EndpointSlices
            .validate_update(&new, &stored)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            [
                "endpoints[0].hints.forNodes[1].name: Duplicate value: \"n1\"",
                "endpoints[0].hints.forNodes[2].name: Invalid value: \"Bad_Node\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        let mut many = with_nodes(json!(nodes));
        EndpointSlices.prepare_for_update(&mut many, &stored);
        assert_eq!(
            EndpointSlices.validate(&many)[0].to_string(),
            "endpoints[0].hints.forNodes: Too many: 9: must have at most 8 items"
        );
    }

    #[test]
    fn endpoint_slice_warnings_are_upstreams() {
        let s = slice(
            "FQDN",
            json!([{ "addresses": ["010.0.0.1", "::ffff:10.0.0.2", "2001:DB8::1", "10.0.0.3", "db.example.com"] }]),
            json!([]),
        );
        assert_eq!(
            EndpointSlices.warnings_on_create(&s),
            [
                "spec.addressType: FQDN endpoints are deprecated",
                "endpoints[0].addresses[0]: non-standard IP address \"010.0.0.1\" will be considered invalid in a future Kubernetes release: use \"10.0.0.1\"",
                "endpoints[0].addresses[1]: non-standard IP address \"::ffff:10.0.0.2\" will be considered invalid in a future Kubernetes release: use \"10.0.0.2\"",
                "endpoints[0].addresses[2]: IPv6 address \"2001:DB8::1\" should be in RFC 5952 canonical format (\"2001:db8::1\")",
            ]
        );
        let mut managed = s.clone();
        managed["metadata"]["labels"] =
            json!({ "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" });
        assert!(EndpointSlices.warnings_on_update(&managed, &s).is_empty());
    }
}

#[cfg(test)]
mod csr_tests {
    //! The CSR update rules of each write path, run as the registry runs them: the
    //! subresource's preparation, then its validation.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use base64::Engine as _;
    use serde_json::{Value, json};

    use super::CertificateSigningRequests as Csr;
    use crate::registry::Strategy;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    /// A real request, made once: key generation is the slow part.
    fn request() -> String {
        static REQUEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        REQUEST
            .get_or_init(|| {
                let (pem, _key) = k1s_kubeadm_lite::pki::new_client_csr("c", "g").unwrap();
                b64(&pem)
            })
            .clone()
    }

    fn csr(conditions: Value) -> Value {
        let request = request();
        json!({"metadata": {"name": "c"},
               "spec": {"request": request, "signerName": "example.com/s", "usages": ["client auth"]},
               "status": {"conditions": conditions}})
    }

    fn cond(t: &str, message: &str) -> Value {
        json!({"type": t, "status": "True", "message": message,
               "lastUpdateTime": "2020-01-01T00:00:00Z", "lastTransitionTime": "2020-01-01T00:00:00Z"})
    }

    /// The stored object an update through `sub` (None: the main resource) leaves, or the
    /// messages of its field errors.
    fn update(sub: Option<&str>, mut new: Value, old: &Value) -> Result<Value, Vec<String>> {
        let errs = match sub {
            Some(s) => {
                Csr.prepare_for_subresource_update(s, &mut new, old);
                Csr.validate_subresource_update(s, &new, old)
            }
            None => {
                Csr.prepare_for_update(&mut new, old);
                Csr.validate_update(&new, old)
            }
        };
        if errs.is_empty() {
            Ok(new)
        } else {
            Err(errs.iter().map(ToString::to_string).collect())
        }
    }

    fn certificate() -> String {
        let cert = rcgen::generate_simple_self_signed(vec!["c".into()]).unwrap();
        b64(&cert.cert.pem())
    }

    fn create_errors(csr: &Value) -> Vec<String> {
        Csr.validate(csr).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn csr_spec_is_validated_as_upstream() {
        assert!(create_errors(&csr(json!([]))).is_empty());
        // The request must be a PKCS#10 request in a CERTIFICATE REQUEST block; Go prints the
        // bytes as a byte slice.
        let mut c = csr(json!([]));
        c["spec"]["request"] = json!(b64(
            "-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n"
        ));
        let errs = create_errors(&c);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with(
                "spec.request: Invalid value: []byte{0x2d, 0x2d, 0x2d, 0x2d, 0x2d, 0x42,"
            ) && errs[0].contains("0xa}: x509: malformed certificate request"),
            "{errs:?}"
        );
        c["spec"]["request"] = json!(b64("hello"));
        assert_eq!(
            create_errors(&c),
            [
                "spec.request: Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST"
            ]
        );
        c["spec"].as_object_mut().unwrap().remove("request");
        assert_eq!(
            create_errors(&c),
            [
                "spec.request: Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST"
            ]
        );

        let mut c = csr(json!([]));
        c["spec"]["usages"] = json!(["client auth", "fly", "client auth"]);
        let errs = create_errors(&c);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("spec.usages[1]: Unsupported value: \"fly\": supported values: \"any\", \"cert sign\","), "{errs:?}");
        assert_eq!(errs[1], "spec.usages[2]: Duplicate value: \"client auth\"");
        // Stored ones are tolerated on update.
        let stored = c.clone();
        let mut new = c.clone();
        new["metadata"]["labels"] = json!({"a": "b"});
        assert!(update(None, new, &stored).is_ok());

        for (name, want) in [
            (
                "kubernetes.io/legacy-unknown",
                vec![
                    "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version",
                ],
            ),
            (
                "nodomain",
                vec![
                    "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
                ],
            ),
            (
                "a/b/c",
                vec![
                    "spec.signerName: Invalid value: \"a/b/c\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
                ],
            ),
            (
                "example/x",
                vec![
                    "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots",
                ],
            ),
            (
                "Example.com/x",
                vec![
                    "spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
            (
                "example.com/",
                vec![
                    "spec.signerName: Invalid value: \"\": validating label \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ],
            ),
            ("", vec!["spec.signerName: Required value"]),
        ] {
            let mut c = csr(json!([]));
            c["spec"]["signerName"] = json!(name);
            assert_eq!(create_errors(&c), want, "{name}");
        }
    }

    #[test]
    fn csr_approval_changes_conditions_only() {
        let old = csr(json!([]));
        let mut new = csr(json!([{"type": "Approved", "status": "True"}]));
        new["status"]["certificate"] = json!(certificate());
        new["spec"]["usages"] = json!(["server auth"]);
        let stored = update(Some("approval"), new, &old).unwrap();
        assert_eq!(stored["status"].get("certificate"), None, "{stored}");
        assert_eq!(stored["spec"]["usages"], json!(["client auth"]));
        let c = &stored["status"]["conditions"][0];
        assert!(c["lastUpdateTime"].is_string() && c["lastTransitionTime"].is_string());

        // Approved and Denied exclude each other; Approved, Denied and Failed are only True
        // and never removed.
        let approved = csr(json!([cond("Approved", "ok")]));
        let both = csr(json!([cond("Approved", "ok"), cond("Denied", "no")]));
        assert_eq!(
            update(Some("approval"), both, &approved).unwrap_err(),
            [
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
            ]
        );
        assert_eq!(
            update(Some("approval"), csr(json!([])), &approved).unwrap_err(),
            [
                "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            ]
        );
        let mut unknown = cond("Failed", "x");
        unknown["status"] = json!("Unknown");
        assert_eq!(
            update(
                Some("approval"),
                csr(json!([cond("Approved", "ok"), unknown])),
                &approved
            )
            .unwrap_err(),
            [
                "status.conditions[1].status: Unsupported value: \"Unknown\": supported values: \"True\""
            ]
        );
        let twice = csr(json!([cond("Approved", "ok"), cond("Approved", "again")]));
        assert_eq!(
            update(Some("approval"), twice, &approved).unwrap_err(),
            ["status.conditions[1].type: Duplicate value: \"Approved\""]
        );
        // The approval may be changed through /approval.
        update(
            Some("approval"),
            csr(json!([cond("Approved", "changed")])),
            &approved,
        )
        .unwrap();
        // What is stored already is tolerated.
        update(
            Some("approval"),
            csr(json!([cond("Approved", "ok"), cond("Denied", "no")])),
            &csr(json!([cond("Approved", "ok"), cond("Denied", "no")])),
        )
        .unwrap();
    }

    #[test]
    fn csr_status_keeps_the_approval_and_sets_the_certificate_once() {
        let approved = csr(json!([cond("Approved", "ok")]));
        // A changed Approved condition is quietly put back, as upstream.
        let mut new = csr(json!([cond("Approved", "changed"), cond("Failed", "boom")]));
        let cert = certificate();
        new["status"]["certificate"] = json!(cert);
        let stored = update(Some("status"), new, &approved).unwrap();
        assert_eq!(stored["status"]["conditions"][0]["message"], "ok");
        assert_eq!(stored["status"]["conditions"][1]["type"], "Failed");
        assert_eq!(stored["status"]["certificate"], json!(cert));

        assert_eq!(
            update(
                Some("status"),
                csr(json!([cond("Approved", "ok"), cond("Denied", "no")])),
                &approved
            )
            .unwrap_err(),
            [
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
                "status.conditions: Forbidden: updates may not add a condition of type \"Denied\"",
            ]
        );
        let mut again = stored.clone();
        again["status"]["certificate"] = json!(certificate());
        assert_eq!(
            update(Some("status"), again, &stored).unwrap_err(),
            ["status.certificate: Forbidden: updates may not modify existing certificate content"]
        );
        let mut junk = approved.clone();
        junk["status"]["certificate"] = json!(b64(
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        ));
        assert_eq!(
            update(Some("status"), junk, &approved).unwrap_err(),
            [
                "status.certificate: Invalid value: \"<certificate data>\": only CERTIFICATE PEM blocks are allowed, found \"PRIVATE KEY\""
            ]
        );
    }

    #[test]
    fn csr_main_update_sets_neither_approval_nor_certificate() {
        let old = csr(json!([]));
        let mut new = csr(json!([cond("Approved", "ok")]));
        new["status"]["certificate"] = json!(certificate());
        assert_eq!(
            update(None, new, &old).unwrap_err(),
            [
                "status.conditions: Forbidden: updates may not add a condition of type \"Approved\"",
                "status.certificate: Forbidden: updates may not set certificate content",
            ]
        );
    }
}
