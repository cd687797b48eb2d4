//! The Service strategy, as upstream's `pkg/registry/core/service/strategy.go`: defaults,
//! `ValidateService` / `ValidateServiceUpdate` / `ValidateServiceStatusUpdate`, the type-dependent
//! fields dropped on a type change, and `GetWarningsForService`.

use std::collections::HashSet;
use std::net::IpAddr;

use k1s_apimachinery::FieldError;
use k1s_apimachinery::ip::{legacy_cidr_errors, legacy_ip_errors};
use k1s_apimachinery::meta::validate_labels;
use k1s_apimachinery::status::{BadValue, FieldErrorType};
use k1s_apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_port_name,
    is_valid_port_num,
};
use serde_json::{Value, json};

use super::networking::go_string_slice;
use crate::allocator::text;
use crate::registry::Strategy;

const TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const SOURCE_RANGES: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
const MAX_AFFINITY_SECONDS: i64 = 86400;

fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn service_type(svc: &Value) -> &str {
    text(svc, "/spec/type")
}

/// Validation's isHeadlessService: the one cluster IP is `None`, whatever the type.
fn headless_ips(svc: &Value) -> bool {
    list(svc, "/spec/clusterIPs") == [Value::from("None")]
}

/// The warnings' isHeadlessService (`pkg/api/service`): a ClusterIP Service without one.
fn is_headless(svc: &Value) -> bool {
    service_type(svc) == "ClusterIP" && text(svc, "/spec/clusterIP") == "None"
}

/// Upstream's ExternallyAccessible: a type reachable from outside, or external IPs.
fn externally_accessible(svc: &Value) -> bool {
    match service_type(svc) {
        "LoadBalancer" | "NodePort" => true,
        "ClusterIP" => !list(svc, "/spec/externalIPs").is_empty(),
        _ => false,
    }
}

/// Upstream's NeedsHealthCheck.
/// Upstream's NeedsHealthCheck: a LoadBalancer that sends external traffic to local endpoints
/// only gets a health check node port.
pub(crate) fn needs_health_check(svc: &Value) -> bool {
    service_type(svc) == "LoadBalancer" && text(svc, "/spec/externalTrafficPolicy") == "Local"
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
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        normalize_cluster_ips(new, old);
        drop_type_dependent_fields(new, old);
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            status.entry("loadBalancer").or_insert(json!({}));
        } else {
            new["status"] = json!({ "loadBalancer": {} });
        }
    }
    fn default(&self, obj: &mut Value) {
        default_service(obj);
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_service(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_update_only(new, old);
        errs.extend(validate_service(new));
        // The allocator's own checks of the families, once the fields are well-formed (on
        // create the allocator runs them before it assigns the address).
        if errs.is_empty() {
            errs = single_stack_cluster_errors(new);
        }
        errs
    }
    /// The status subresource checks only the load balancer status, as upstream's
    /// ValidateServiceStatusUpdate.
    fn validate_subresource_update(
        &self,
        subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Vec<FieldError> {
        if subresource == "status" {
            validate_load_balancer_status(new)
        } else {
            self.validate_update(new, old)
        }
    }
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        warnings(obj)
    }
    fn warnings_on_update(&self, new: &Value, _old: &Value) -> Vec<String> {
        warnings(new)
    }
}

/// Upstream's SetDefaults_Service (with the ServicePort defaults).
fn default_service(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.entry("type").or_insert(json!("ClusterIP"));
    spec.entry("sessionAffinity").or_insert(json!("None"));
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP")
            if spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .is_none() =>
        {
            spec.insert(
                "sessionAffinityConfig".into(),
                json!({ "clientIP": { "timeoutSeconds": 10800 } }),
            );
        }
        _ => {}
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            let port = p.get("port").cloned();
            if let Some(p) = p.as_object_mut() {
                p.entry("protocol").or_insert(json!("TCP"));
                let unset = p
                    .get("targetPort")
                    .is_none_or(|t| t.as_i64() == Some(0) || t.as_str() == Some(""));
                if let (true, Some(port)) = (unset, port) {
                    p.insert("targetPort".into(), port);
                }
            }
        }
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    // Upstream's ExternallyAccessible.
    if ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && external_ips) {
        spec.entry("externalTrafficPolicy")
            .or_insert(json!("Cluster"));
    }
    if ty != "ExternalName" {
        spec.entry("internalTrafficPolicy")
            .or_insert(json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        spec.entry("allocateLoadBalancerNodePorts")
            .or_insert(json!(true));
        // Load balancer ingress IPs are VIPs unless a controller says otherwise.
        if let Some(ingress) = obj
            .pointer_mut("/status/loadBalancer/ingress")
            .and_then(Value::as_array_mut)
        {
            for ing in ingress.iter_mut().filter_map(Value::as_object_mut) {
                let has_ip = ing
                    .get("ip")
                    .and_then(Value::as_str)
                    .is_some_and(|ip| !ip.is_empty());
                if has_ip && ing.get("ipMode").is_none_or(Value::is_null) {
                    ing.insert("ipMode".into(), json!("VIP"));
                }
            }
        }
    }
}

/// Upstream's normalizeClusterIPs on an update: a client that sends only `clusterIP` (an old
/// client, or a patch that never mentions `clusterIPs`) keeps the list in step with it.
fn normalize_cluster_ips(new: &mut Value, old: &Value) {
    let (old_ip, old_ips) = (text(old, "/spec/clusterIP"), list(old, "/spec/clusterIPs"));
    let new_ip = text(new, "/spec/clusterIP").to_string();
    let same_ips = list(new, "/spec/clusterIPs") == old_ips;
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let new_empty = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if !old_ips.is_empty() && new_empty && old_ip == new_ip {
        spec.insert("clusterIPs".into(), Value::Array(old_ips.to_vec()));
    }
    if old_ip != new_ip {
        if !old_ip.is_empty() && new_ip.is_empty() && same_ips {
            spec.remove("clusterIPs");
        }
        if !new_ip.is_empty() && same_ips {
            spec.insert("clusterIPs".into(), json!([new_ip]));
        }
    }
}

/// Upstream's dropTypeDependentFields: on a type change, values the client left as they were
/// and the new type does not use go (the cluster IPs and node ports are handled with the
/// allocation, in `allocator::fill_update`).
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let same = |k: &str| new.pointer(k) == old.pointer(k);
    let mut drop = Vec::new();
    if needs_health_check(old) && !needs_health_check(new) && same("/spec/healthCheckNodePort") {
        drop.push("healthCheckNodePort");
    }
    let was_lb = service_type(old) == "LoadBalancer";
    let is_lb = service_type(new) == "LoadBalancer";
    if was_lb && !is_lb {
        let (n, o) = (
            new.pointer("/spec/allocateLoadBalancerNodePorts"),
            old.pointer("/spec/allocateLoadBalancerNodePorts"),
        );
        if n.is_some_and(|n| !n.is_null()) && n == o {
            drop.push("allocateLoadBalancerNodePorts");
        }
        if same("/spec/loadBalancerClass") {
            drop.push("loadBalancerClass");
        }
    }
    if externally_accessible(old)
        && !externally_accessible(new)
        && same("/spec/externalTrafficPolicy")
    {
        drop.push("externalTrafficPolicy");
    }
    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        for k in drop {
            spec.remove(k);
        }
    }
    // The load balancer's status goes with the type (de-provisioning is the controller's).
    if was_lb
        && !is_lb
        && let Some(status) = new.get_mut("status").and_then(Value::as_object_mut)
    {
        status.insert("loadBalancer".into(), json!({}));
    }
}

/// Upstream's ValidateService.
pub fn validate_service(svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let annotations = svc
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let annotation = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_str);
    if let (Some(hints), Some(mode)) = (annotation(TOPOLOGY_HINTS), annotation(TOPOLOGY_MODE))
        && hints != mode
    {
        errs.push(FieldError::invalid(
            format!("metadata.annotations[{TOPOLOGY_MODE}]"),
            mode,
            format!("must match annotations[{TOPOLOGY_HINTS}] when both are specified"),
        ));
    }
    let ty = service_type(svc);
    let ports = list(svc, "/spec/ports");
    if ports.is_empty() && !headless_ips(svc) && ty != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless_ips(svc) => {
            errs.push(FieldError::invalid(
                "spec.clusterIPs[0]",
                "None",
                format!("may not be set to 'None' for {ty} services"),
            ));
        }
        "ExternalName" => {
            if !list(svc, "/spec/clusterIPs").is_empty() || !text(svc, "/spec/clusterIP").is_empty()
            {
                errs.push(FieldError::forbidden(
                    "spec.clusterIPs",
                    "may not be set for ExternalName services",
                ));
            }
            if !list(svc, "/spec/ipFamilies").is_empty() {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilies",
                    "may not be set for ExternalName services",
                ));
            }
            if svc
                .pointer("/spec/ipFamilyPolicy")
                .is_some_and(|p| !p.is_null())
            {
                errs.push(FieldError::forbidden(
                    "spec.ipFamilyPolicy",
                    "may not be set for ExternalName services",
                ));
            }
            // A CNAME may end in a dot (fully qualified).
            let cname = text(svc, "/spec/externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(FieldError::required("spec.externalName", ""));
            } else {
                for msg in is_dns1123_subdomain(cname) {
                    errs.push(FieldError::invalid("spec.externalName", cname, msg));
                }
            }
        }
        _ => {}
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        errs.extend(validate_port(port, ports.len() > 1, &mut names, i));
    }
    if let Some(selector) = svc.pointer("/spec/selector").and_then(Value::as_object) {
        let pairs: Vec<(String, String)> = selector
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        errs.extend(validate_labels(&pairs, "spec.selector"));
    }
    errs.extend(validate_session_affinity(svc));
    errs.extend(validate_cluster_ips(svc));
    for (i, ip) in list(svc, "/spec/externalIPs").iter().enumerate() {
        let field = format!("spec.externalIPs[{i}]");
        let ip = ip.as_str().unwrap_or_default();
        let bad = legacy_ip_errors(ip);
        if bad.is_empty() {
            errs.extend(non_special_ip_errors(ip, &field));
        }
        errs.extend(bad.into_iter().map(|m| FieldError::invalid(&field, ip, m)));
    }
    const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if ty.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !TYPES.contains(&ty) {
        errs.push(FieldError::not_supported("spec.type", ty, &TYPES));
    }
    let node_port = |p: &Value| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
    if ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if node_port(p) != 0 {
                errs.push(FieldError::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    // Duplicate node ports and ports, by (protocol, number).
    let protocol = |p: &Value| text(p, "/protocol").to_string();
    let mut node_ports = HashSet::new();
    let mut numbers = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let n = node_port(p);
        if n != 0 && !node_ports.insert((protocol(p), n)) {
            errs.push(FieldError::duplicate(
                format!("spec.ports[{i}].nodePort"),
                n,
            ));
        }
    }
    for (i, p) in ports.iter().enumerate() {
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !numbers.insert((protocol(p), port)) {
            // Upstream prints the key, a ServicePort with only these two fields, as Go does.
            let key = format!(
                "core.ServicePort{{Name:\"\", Protocol:{:?}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                protocol(p)
            );
            errs.push(FieldError::new(
                FieldErrorType::Duplicate,
                format!("spec.ports[{i}]"),
                BadValue::Raw(key),
                "",
            ));
        }
    }
    errs.extend(validate_source_ranges(svc, annotation(SOURCE_RANGES)));
    let allocate = svc
        .pointer("/spec/allocateLoadBalancerNodePorts")
        .filter(|v| !v.is_null());
    if allocate.is_some() && ty != "LoadBalancer" {
        errs.push(FieldError::forbidden(
            "spec.allocateLoadBalancerNodePorts",
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if ty == "LoadBalancer" && allocate.is_none() {
        // Upstream names this field without its `spec.`.
        errs.push(FieldError::required("allocateLoadBalancerNodePorts", ""));
    }
    if let Some(class) = svc
        .pointer("/spec/loadBalancerClass")
        .filter(|v| !v.is_null())
    {
        let class = class.as_str().unwrap_or_default();
        if ty == "LoadBalancer" {
            for msg in is_qualified_name(class) {
                errs.push(FieldError::invalid("spec.loadBalancerClass", class, msg));
            }
        } else {
            errs.push(FieldError::forbidden(
                "spec.loadBalancerClass",
                "may only be used when service type is 'LoadBalancer'",
            ));
        }
    }
    errs.extend(validate_traffic_policies(svc));
    errs
}

/// Upstream's validateServicePort.
fn validate_port(
    p: &Value,
    require_name: bool,
    names: &mut HashSet<String>,
    i: usize,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let at = |f: &str| format!("spec.ports[{i}].{f}");
    let name = text(p, "/name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(at("name"), ""));
    } else if !name.is_empty() {
        for msg in is_dns1123_label(name) {
            errs.push(FieldError::invalid(at("name"), name, msg));
        }
        if !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(at("name"), name));
        }
    }
    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
    for msg in is_valid_port_num(port) {
        errs.push(FieldError::invalid(at("port"), port, msg));
    }
    const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
    match text(p, "/protocol") {
        "" => errs.push(FieldError::required(at("protocol"), "")),
        proto if !PROTOCOLS.contains(&proto) => {
            errs.push(FieldError::not_supported(at("protocol"), proto, &PROTOCOLS));
        }
        _ => {}
    }
    match p.get("targetPort") {
        Some(Value::String(name)) => {
            for msg in is_valid_port_name(name) {
                errs.push(FieldError::invalid(at("targetPort"), name.as_str(), msg));
            }
        }
        target => {
            let n = target.and_then(Value::as_i64).unwrap_or(0);
            for msg in is_valid_port_num(n) {
                errs.push(FieldError::invalid(at("targetPort"), n, msg));
            }
        }
    }
    if let Some(proto) = p.get("appProtocol").and_then(Value::as_str) {
        for msg in is_qualified_name(proto) {
            errs.push(FieldError::invalid(at("appProtocol"), proto, msg));
        }
    }
    errs
}

/// Upstream's session affinity checks with validateClientIPAffinityConfig.
fn validate_session_affinity(svc: &Value) -> Vec<FieldError> {
    const FIELD: &str = "spec.sessionAffinityConfig";
    const AFFINITIES: [&str; 2] = ["ClientIP", "None"];
    let affinity = text(svc, "/spec/sessionAffinity");
    let config = svc
        .pointer("/spec/sessionAffinityConfig")
        .filter(|c| !c.is_null());
    let mut errs = Vec::new();
    if affinity.is_empty() {
        errs.push(FieldError::required("spec.sessionAffinity", ""));
    } else if !AFFINITIES.contains(&affinity) {
        errs.push(FieldError::not_supported(
            "spec.sessionAffinity",
            affinity,
            &AFFINITIES,
        ));
    }
    let when = "when session affinity type is ClientIP";
    match affinity {
        "ClientIP" => match config
            .and_then(|c| c.get("clientIP"))
            .filter(|c| !c.is_null())
        {
            None if config.is_none() => errs.push(FieldError::required(FIELD, when)),
            None => errs.push(FieldError::required(format!("{FIELD}.clientIP"), when)),
            Some(client) => match client.get("timeoutSeconds").and_then(Value::as_i64) {
                None => errs.push(FieldError::required(
                    format!("{FIELD}.clientIP.timeoutSeconds"),
                    when,
                )),
                Some(t) if t <= 0 || t > MAX_AFFINITY_SECONDS => {
                    errs.push(FieldError::invalid(
                        format!("{FIELD}.clientIP.timeoutSeconds"),
                        t,
                        format!("must be greater than 0 and less than {MAX_AFFINITY_SECONDS}"),
                    ));
                }
                Some(_) => {}
            },
        },
        "None" if config.is_some() => errs.push(FieldError::forbidden(
            FIELD,
            "must not be set when session affinity is None",
        )),
        _ => {}
    }
    errs
}

/// Upstream's ValidateServiceClusterIPsRelatedFields: `clusterIP` and `clusterIPs` agree, the
/// families and the policy have known values, the addresses are valid (`None` only alone) and
/// of the families named.
fn validate_cluster_ips(svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if service_type(svc) == "ExternalName" {
        return errs;
    }
    const FIELD: &str = "spec.clusterIPs";
    let cluster_ip = text(svc, "/spec/clusterIP");
    let ips = list(svc, "/spec/clusterIPs");
    let shown = || go_string_slice(ips);
    if !cluster_ip.is_empty() {
        match ips.first() {
            None => errs.push(FieldError::required(FIELD, "")),
            Some(first) if first != cluster_ip => errs.push(FieldError::invalid_raw(
                FIELD,
                shown(),
                "first value must match `clusterIP`",
            )),
            Some(_) => {}
        }
    } else if !ips.is_empty() {
        errs.push(FieldError::invalid_raw(
            FIELD,
            shown(),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let families = list(svc, "/spec/ipFamilies");
    let mut seen = HashSet::new();
    for (i, f) in families.iter().enumerate() {
        let f = f.as_str().unwrap_or_default();
        let field = format!("spec.ipFamilies[{i}]");
        if !["IPv4", "IPv6"].contains(&f) {
            errs.push(FieldError::not_supported(&field, f, &["IPv4", "IPv6"]));
        }
        if !seen.insert(f) {
            errs.push(FieldError::duplicate(field, f));
        }
    }
    if let Some(policy) = svc.pointer("/spec/ipFamilyPolicy").filter(|p| !p.is_null()) {
        const POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
        let policy = policy.as_str().unwrap_or_default();
        if !POLICIES.contains(&policy) {
            errs.push(FieldError::not_supported(
                "spec.ipFamilyPolicy",
                policy,
                &POLICIES,
            ));
        }
    }
    let mut invalid = false;
    for (i, ip) in ips.iter().enumerate() {
        let ip = ip.as_str().unwrap_or_default();
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                invalid = true;
                errs.push(FieldError::invalid_raw(
                    FIELD,
                    shown(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let msgs = k1s_apimachinery::ip::ip_errors(ip);
        invalid |= !msgs.is_empty();
        for m in msgs {
            errs.push(FieldError::invalid(format!("{FIELD}[{i}]"), ip, m));
        }
    }
    if ips.len() > 2 {
        errs.push(FieldError::invalid_raw(
            FIELD,
            shown(),
            "may only hold up to 2 values",
        ));
    }
    if invalid {
        return errs;
    }
    let v6 = |ip: &Value| {
        matches!(
            ip.as_str().map(str::parse::<IpAddr>),
            Some(Ok(IpAddr::V6(_)))
        )
    };
    if ips.len() > 1 && v6(&ips[0]) == v6(&ips[1]) {
        errs.push(FieldError::invalid_raw(
            FIELD,
            shown(),
            "may specify no more than one IP for each IP family",
        ));
    }
    if !headless_ips(svc) {
        for (i, (ip, family)) in ips.iter().zip(families).enumerate() {
            let (is_v6, family) = (v6(ip), family.as_str().unwrap_or_default());
            let wanted = match family {
                "IPv4" if is_v6 => "IPv4",
                "IPv6" if !is_v6 => "IPv6",
                _ => continue,
            };
            errs.push(FieldError::invalid(
                format!("{FIELD}[{i}]"),
                ip.clone(),
                format!("expected an {wanted} value as indicated by `ipFamilies[{i}]`"),
            ));
        }
    }
    errs
}

/// Upstream's ValidateNonSpecialIP: an external IP may not be unspecified, loopback or
/// link-local.
fn non_special_ip_errors(ip: &str, field: &str) -> Vec<FieldError> {
    let Ok(addr) = ip.parse::<IpAddr>() else {
        return Vec::new();
    };
    let mut details = Vec::new();
    if addr.is_unspecified() {
        details.push(format!("may not be unspecified ({ip})"));
    }
    if addr.is_loopback() {
        details.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_string());
    }
    let (link_local, link_local_multicast) = match addr {
        IpAddr::V4(v4) => (v4.is_link_local(), v4.octets()[..3] == [224, 0, 0]),
        IpAddr::V6(v6) => (
            v6.segments()[0] & 0xffc0 == 0xfe80,
            v6.segments()[0] & 0xff0f == 0xff02,
        ),
    };
    if link_local {
        details.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_string());
    }
    if link_local_multicast {
        details.push(
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_string(),
        );
    }
    details
        .into_iter()
        .map(|d| FieldError::invalid(field, ip, d))
        .collect()
}

/// `spec.loadBalancerSourceRanges`, or the older annotation when the field is empty: only for
/// load balancers, and each a CIDR.
fn validate_source_ranges(svc: &Value, annotation: Option<&str>) -> Vec<FieldError> {
    let ty = service_type(svc);
    let ranges = list(svc, "/spec/loadBalancerSourceRanges");
    let mut errs = Vec::new();
    let only_lb = "may only be used when `type` is 'LoadBalancer'";
    if !ranges.is_empty() {
        // Upstream's field path, capital L included.
        const FIELD: &str = "spec.LoadBalancerSourceRanges";
        if ty != "LoadBalancer" {
            errs.push(FieldError::forbidden(FIELD, only_lb));
        }
        for (i, v) in ranges.iter().enumerate() {
            // Space-padded values are tolerated, as they were in the annotation.
            let value = v.as_str().unwrap_or_default().trim();
            for msg in legacy_cidr_errors(value) {
                errs.push(FieldError::invalid(format!("{FIELD}[{i}]"), value, msg));
            }
        }
    } else if let Some(val) = annotation {
        let field = format!("metadata.annotations[{SOURCE_RANGES}]");
        if ty != "LoadBalancer" {
            errs.push(FieldError::forbidden(&field, only_lb));
        }
        let val = val.trim();
        if !val.is_empty() {
            for value in val.split(',').map(str::trim) {
                for msg in legacy_cidr_errors(value) {
                    errs.push(FieldError::invalid(&field, value, msg));
                }
            }
        }
    }
    errs
}

/// External and internal traffic policies, the health check node port and the traffic
/// distribution.
fn validate_traffic_policies(svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let etp = text(svc, "/spec/externalTrafficPolicy");
    const POLICIES: [&str; 2] = ["Cluster", "Local"];
    if !externally_accessible(svc) {
        if !etp.is_empty() {
            errs.push(FieldError::invalid(
                "spec.externalTrafficPolicy",
                etp,
                "may only be set for externally-accessible services",
            ));
        }
    } else if etp.is_empty() {
        errs.push(FieldError::required("spec.externalTrafficPolicy", ""));
    } else if !POLICIES.contains(&etp) {
        errs.push(FieldError::not_supported(
            "spec.externalTrafficPolicy",
            etp,
            &POLICIES,
        ));
    }
    let health = svc
        .pointer("/spec/healthCheckNodePort")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !needs_health_check(svc) {
        if health != 0 {
            errs.push(FieldError::invalid(
                "spec.healthCheckNodePort",
                health,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if health != 0 {
        // The allocator assigns one before validation (as upstream's); it is not required
        // here only because a dry-run update skips the allocator.
        for msg in is_valid_port_num(health) {
            errs.push(FieldError::invalid("spec.healthCheckNodePort", health, msg));
        }
    }
    match svc
        .pointer("/spec/internalTrafficPolicy")
        .filter(|v| !v.is_null())
    {
        None => {
            if matches!(service_type(svc), "NodePort" | "LoadBalancer" | "ClusterIP") {
                errs.push(FieldError::required("spec.internalTrafficPolicy", ""));
            }
        }
        Some(itp) => {
            let itp = itp.as_str().unwrap_or_default();
            if !POLICIES.contains(&itp) {
                errs.push(FieldError::not_supported(
                    "spec.internalTrafficPolicy",
                    itp,
                    &POLICIES,
                ));
            }
        }
    }
    const DISTRIBUTIONS: [&str; 3] = ["PreferClose", "PreferSameZone", "PreferSameNode"];
    if let Some(d) = svc
        .pointer("/spec/trafficDistribution")
        .filter(|v| !v.is_null())
    {
        let d = d.as_str().unwrap_or_default();
        if !DISTRIBUTIONS.contains(&d) {
            errs.push(FieldError::not_supported(
                "spec.trafficDistribution",
                d,
                &DISTRIBUTIONS,
            ));
        }
    }
    errs
}

/// What ValidateServiceUpdate adds to ValidateService: the primary cluster IP, a load
/// balancer's class and its health check node port cannot change.
fn validate_update_only(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // Upstream's validateUpgradeDowngradeClusterIPs (for one family: the IP cannot change).
    let (new_ips, old_ips) = (list(new, "/spec/clusterIPs"), list(old, "/spec/clusterIPs"));
    // ExternalName on either side, or headless on both: nothing to keep.
    let exempt = service_type(old) == "ExternalName"
        || service_type(new) == "ExternalName"
        || (headless_ips(old) && headless_ips(new));
    if !exempt {
        let changed = |i: usize| {
            FieldError::invalid_raw(
                format!("spec.clusterIPs[{i}]"),
                go_string_slice(new_ips),
                "may not change once set",
            )
        };
        if old_ips.len() == new_ips.len() {
            for (i, ip) in old_ips.iter().enumerate() {
                if Some(ip) != new_ips.get(i) {
                    errs.push(changed(i));
                }
            }
        } else if new_ips.is_empty() {
            errs.push(FieldError::invalid_raw(
                "spec.clusterIPs[0]",
                go_string_slice(new_ips),
                "primary clusterIP can not be unset",
            ));
        } else if !old_ips.is_empty() && new_ips.first() != old_ips.first() {
            errs.push(changed(0));
        }
        // A downgrade to one address must say so.
        if old_ips.len() > new_ips.len() && new_ips.len() == 1 && !single_stack(new) {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                policy_shown(new),
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    }
    errs.extend(validate_upgrade_downgrade_ip_families(new, old));
    if service_type(old) == "LoadBalancer"
        && service_type(new) == "LoadBalancer"
        && new.pointer("/spec/loadBalancerClass") != old.pointer("/spec/loadBalancerClass")
    {
        let class = new
            .pointer("/spec/loadBalancerClass")
            .cloned()
            .unwrap_or(Value::Null);
        errs.push(FieldError::invalid(
            "spec.loadBalancerClass",
            class,
            "may not change once set",
        ));
    }
    // Upstream's validateServiceExternalTrafficFieldsUpdate.
    if needs_health_check(old)
        && needs_health_check(new)
        && new.pointer("/spec/healthCheckNodePort") != old.pointer("/spec/healthCheckNodePort")
    {
        errs.push(FieldError::forbidden(
            "spec.healthCheckNodePort",
            "field is immutable",
        ));
    }
    errs
}

fn single_stack(svc: &Value) -> bool {
    text(svc, "/spec/ipFamilyPolicy") == "SingleStack"
}

/// How upstream prints the `*IPFamilyPolicy` of a field error (a nil pointer as "null").
fn policy_shown(svc: &Value) -> &str {
    match svc.pointer("/spec/ipFamilyPolicy").and_then(Value::as_str) {
        Some(p) => p,
        None => "null",
    }
}

/// Upstream's validateUpgradeDowngradeIPFamilies: the primary family stays, and releasing the
/// secondary one needs `SingleStack`. Its quirks are kept: every changed family is reported at
/// `ipFamilies[0]`, a downgrade checks for no cluster IPs, and some errors show `clusterIPs`.
fn validate_upgrade_downgrade_ip_families(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if service_type(old) == "ExternalName" || service_type(new) == "ExternalName" {
        return errs;
    }
    // Headless services may change families, and so may a change to or from headless.
    if headless_ips(old) || headless_ips(new) {
        return errs;
    }
    let (new_families, old_families) =
        (list(new, "/spec/ipFamilies"), list(old, "/spec/ipFamilies"));
    let families = || super::networking::go_typed_slice("core.IPFamily", new_families);
    let ips = || go_string_slice(list(new, "/spec/clusterIPs"));
    const FIELD: &str = "spec.ipFamilies[0]";
    let primary_changed =
        !old_families.is_empty() && !new_families.is_empty() && new_families[0] != old_families[0];
    match new_families.len().cmp(&old_families.len()) {
        std::cmp::Ordering::Equal => {
            for (o, n) in old_families.iter().zip(new_families) {
                if o != n {
                    errs.push(FieldError::invalid_raw(
                        FIELD,
                        families(),
                        "may not change once set",
                    ));
                }
            }
        }
        std::cmp::Ordering::Less => {
            if list(new, "/spec/clusterIPs").is_empty() {
                errs.push(FieldError::invalid_raw(
                    FIELD,
                    families(),
                    "primary ipFamily can not be unset",
                ));
            }
            if primary_changed {
                errs.push(FieldError::invalid_raw(
                    FIELD,
                    ips(),
                    "may not change once set",
                ));
            }
            if new_families.len() == 1 && !single_stack(new) {
                errs.push(FieldError::invalid(
                    "spec.ipFamilyPolicy",
                    policy_shown(new),
                    "must be set to 'SingleStack' when releasing the secondary ipFamily",
                ));
            }
        }
        std::cmp::Ordering::Greater => {
            if primary_changed {
                errs.push(FieldError::invalid_raw(
                    FIELD,
                    ips(),
                    "may not change once set",
                ));
            }
        }
    }
    errs
}

/// What upstream's service IP allocator refuses on a cluster with an IPv4 service range only
/// (k1s allocates IPv4 only): `SingleStack` with two addresses or families, an IPv6 cluster IP
/// without its family, `RequireDualStack`, an IPv6 family. Headless Services without a
/// selector are exempt, as upstream.
pub(crate) fn single_stack_cluster_errors(svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if service_type(svc) == "ExternalName" {
        return errs;
    }
    let ips = list(svc, "/spec/clusterIPs");
    let families = list(svc, "/spec/ipFamilies");
    if single_stack(svc) {
        if ips.len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                "SingleStack",
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families.len() == 2 {
            errs.push(FieldError::invalid(
                "spec.ipFamilyPolicy",
                "SingleStack",
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    for (i, ip) in ips.iter().enumerate() {
        let ip = ip.as_str().unwrap_or_default();
        if ip == "None" {
            break;
        }
        if i >= families.len() && matches!(ip.parse::<IpAddr>(), Ok(IpAddr::V6(_))) {
            errs.push(FieldError::invalid_raw(
                format!("spec.clusterIPs[{i}]"),
                go_string_slice(ips),
                "IPv6 is not configured on this cluster",
            ));
        }
    }
    if !errs.is_empty() {
        return errs;
    }
    let selectorless = svc
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .is_none_or(|m| m.is_empty());
    if text(svc, "/spec/clusterIP") == "None" && selectorless {
        return errs;
    }
    if text(svc, "/spec/ipFamilyPolicy") == "RequireDualStack" {
        errs.push(FieldError::invalid(
            "spec.ipFamilyPolicy",
            "RequireDualStack",
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, f) in families.iter().enumerate() {
        if f.as_str() == Some("IPv6") {
            errs.push(FieldError::invalid(
                format!("spec.ipFamilies[{i}]"),
                "IPv6",
                "not configured on this cluster",
            ));
        }
    }
    errs
}

/// Upstream's ValidateLoadBalancerStatus.
fn validate_load_balancer_status(svc: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ing) in list(svc, "/status/loadBalancer/ingress").iter().enumerate() {
        let at = |f: &str| format!("status.loadBalancer.ingress[{i}].{f}");
        let ip = text(ing, "/ip");
        if !ip.is_empty() {
            for msg in legacy_ip_errors(ip) {
                errs.push(FieldError::invalid(at("ip"), ip, msg));
            }
        }
        if let Some(mode) = ing.get("ipMode").filter(|m| !m.is_null()) {
            const MODES: [&str; 2] = ["Proxy", "VIP"];
            let mode = mode.as_str().unwrap_or_default();
            if ip.is_empty() {
                errs.push(FieldError::forbidden(
                    at("ipMode"),
                    "may not be specified when `ip` is not set",
                ));
            } else if !MODES.contains(&mode) {
                errs.push(FieldError::not_supported(at("ipMode"), mode, &MODES));
            }
        }
        let host = text(ing, "/hostname");
        if !host.is_empty() {
            for msg in is_dns1123_subdomain(host) {
                errs.push(FieldError::invalid(at("hostname"), host, msg));
            }
            if host.parse::<IpAddr>().is_ok() {
                errs.push(FieldError::invalid(
                    at("hostname"),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
    errs
}

/// Upstream's GetWarningsForService.
fn warnings(svc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if svc
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(TOPOLOGY_HINTS))
    {
        out.push(format!(
            "annotation {TOPOLOGY_HINTS} is deprecated, please use {TOPOLOGY_MODE} instead"
        ));
    }
    let ty = service_type(svc);
    let cluster_ip = text(svc, "/spec/clusterIP");
    if !cluster_ip.is_empty() && cluster_ip != "None" {
        for (i, ip) in list(svc, "/spec/clusterIPs").iter().enumerate() {
            out.extend(ip_warning(&format!("spec.clusterIPs[{i}]"), ip));
        }
    }
    let external_ips = list(svc, "/spec/externalIPs");
    if is_headless(svc) {
        if !text(svc, "/spec/loadBalancerIP").is_empty() {
            out.push("spec.loadBalancerIP is ignored for headless services".into());
        }
        if !external_ips.is_empty() {
            out.push("spec.externalIPs is ignored for headless services".into());
        }
        if text(svc, "/spec/sessionAffinity") != "None" {
            out.push("spec.SessionAffinity is ignored for headless services".into());
        }
    }
    for (i, ip) in external_ips.iter().enumerate() {
        out.extend(ip_warning(&format!("spec.externalIPs[{i}]"), ip));
    }
    if !external_ips.is_empty() && !is_headless(svc) && ty != "ExternalName" {
        out.push(
            "spec.externalIPs is deprecated and may no longer be implemented in some clusters"
                .into(),
        );
    }
    if let Some(ip) = svc.pointer("/spec/loadBalancerIP") {
        out.extend(ip_warning("spec.loadBalancerIP", ip));
    }
    for (i, cidr) in list(svc, "/spec/loadBalancerSourceRanges")
        .iter()
        .enumerate()
    {
        let field = format!("spec.loadBalancerSourceRanges[{i}]");
        let value = cidr.as_str().unwrap_or_default();
        if let Some((addr, len)) = value.split_once('/')
            && let Ok(IpAddr::V6(v6)) = addr.parse::<IpAddr>()
            && format!("{v6}/{len}") != value
        {
            out.push(format!(
                "{field}: IPv6 CIDR value {value:?} should be in RFC 5952 canonical format (\"{v6}/{len}\")"
            ));
        }
    }
    if ty == "ExternalName" && !external_ips.is_empty() {
        out.push("spec.externalIPs is ignored when spec.type is \"ExternalName\"".into());
    }
    if ty != "ExternalName" && !text(svc, "/spec/externalName").is_empty() {
        out.push("spec.externalName is ignored when spec.type is not \"ExternalName\"".into());
    }
    if text(svc, "/spec/trafficDistribution") == "PreferClose" {
        out.push(
            "spec.trafficDistribution: \"PreferClose\" is deprecated; use \"PreferSameZone\""
                .into(),
        );
    }
    out
}

/// Upstream's GetWarningsForIP for a value validation accepted: an IPv6 address not in its
/// canonical form (strict validation already refuses leading zeros and IPv4-mapped forms).
fn ip_warning(field: &str, ip: &Value) -> Option<String> {
    let value = ip.as_str()?;
    match value.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) if v6.to_string() != value => Some(format!(
            "{field}: IPv6 address {value:?} should be in RFC 5952 canonical format (\"{v6}\")"
        )),
        _ => None,
    }
}
