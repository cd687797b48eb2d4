//! Node and Endpoints validation as upstream's ValidateNode / ValidateNodeUpdate and
//! ValidateEndpoints (pkg/apis/core/validation).

use std::net::IpAddr;

use k1s_apimachinery::FieldError;
use k1s_apimachinery::ip::{cidr_errors, ip_errors};
use k1s_apimachinery::status::{BadValue, FieldErrorType};
use k1s_apimachinery::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    is_valid_port_num,
};
use serde_json::Value;

use super::resources::quantity_value_errors;

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn items(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn invalid_each(path: &str, value: &str, msgs: Vec<String>) -> Vec<FieldError> {
    msgs.into_iter()
        .map(|m| FieldError::invalid(path, value, m))
        .collect()
}

/// A `Duplicate value` error whose value prints as Go's `%#v` of a struct.
fn duplicate_raw(path: String, raw: String, detail: &str) -> FieldError {
    FieldError::new(FieldErrorType::Duplicate, path, BadValue::Raw(raw), detail)
}

/// validateNodeTaints: label-name keys, label-value values, known effects, each (key, effect)
/// once. Upstream reports a Node's taints under `metadata.taints`.
fn taint_errors(taints: &[Value], path: &str) -> Vec<FieldError> {
    const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
    let mut errs = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, t) in taints.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let (key, value, effect) = (text(t, "key"), text(t, "value"), text(t, "effect"));
        errs.extend(invalid_each(
            &format!("{at}.key"),
            key,
            is_qualified_name(key),
        ));
        let msgs = is_valid_label_value(value);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(
                format!("{at}.value"),
                value,
                msgs.join(";"),
            ));
        }
        if effect.is_empty() {
            errs.push(FieldError::required(format!("{at}.effect"), ""));
        } else if !EFFECTS.contains(&effect) {
            errs.push(FieldError::not_supported(
                format!("{at}.effect"),
                effect,
                &EFFECTS,
            ));
        }
        if seen.contains(&(effect, key)) {
            // The address of a set timeAdded is not reproducible; a placeholder stands in.
            let added = if t.get("timeAdded").is_some_and(|x| !x.is_null()) {
                "(*v1.Time)(0xc000000000)"
            } else {
                "(*v1.Time)(nil)"
            };
            errs.push(duplicate_raw(
                at,
                format!(
                    "core.Taint{{Key:{key:?}, Value:{value:?}, Effect:{effect:?}, TimeAdded:{added}}}"
                ),
                "taints must be unique by key and effect pair",
            ));
            continue;
        }
        seen.push((effect, key));
    }
    errs
}

/// ValidateNodeResources: capacity and allocatable quantities (paths as upstream's
/// `status.capacity.<name>`).
fn node_resource_errors(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for list in ["capacity", "allocatable"] {
        let entries = obj
            .pointer(&format!("/status/{list}"))
            .and_then(Value::as_object);
        for (k, v) in entries.into_iter().flatten() {
            errs.extend(quantity_value_errors(k, v, &format!("status.{list}.{k}")));
        }
    }
    errs
}

/// ValidateNode's spec rules (taints, pod CIDRs) and resources.
pub fn validate_node(obj: &Value) -> Vec<FieldError> {
    let mut errs = avoid_pods_errors(obj);
    errs.extend(taint_errors(
        items(obj.pointer("/spec/taints")),
        "metadata.taints",
    ));
    errs.extend(node_resource_errors(obj));
    let cidrs: Vec<&str> = items(obj.pointer("/spec/podCIDRs"))
        .iter()
        .map(|c| c.as_str().unwrap_or_default())
        .collect();
    for (i, c) in cidrs.iter().enumerate() {
        errs.extend(invalid_each(
            &format!("spec.podCIDRs[{i}]"),
            c,
            cidr_errors(c),
        ));
    }
    if cidrs.len() > 1 {
        let family = |c: &str| c.split('/').next().and_then(|a| a.parse::<IpAddr>().ok());
        let dual = cidrs.len() == 2
            && matches!(
                (family(cidrs[0]), family(cidrs[1])),
                (Some(a), Some(b)) if a.is_ipv4() != b.is_ipv4()
            );
        if !dual {
            errs.push(FieldError::invalid(
                "spec.podCIDRs",
                obj.pointer("/spec/podCIDRs")
                    .cloned()
                    .unwrap_or(Value::Null),
                "may specify no more than one CIDR for each IP family",
            ));
        }
        for (i, c) in cidrs.iter().enumerate() {
            if cidrs[..i].contains(c) {
                errs.push(FieldError::duplicate(format!("spec.podCIDRs[{i}]"), *c));
            }
        }
    }
    errs
}

/// The annotation through which nodes asked the scheduler to avoid some controllers' pods.
const AVOID_PODS: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";

/// ValidateNodeSpecificAnnotations (1.33 checks only the avoid-pods annotation): a non-empty
/// value must decode as v1.AvoidPods, and each entry must name a controller. Upstream's paths
/// join the annotation key with a dot and keep the Go field names.
fn avoid_pods_errors(obj: &Value) -> Vec<FieldError> {
    let raw = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(AVOID_PODS))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if raw.is_empty() {
        return Vec::new();
    }
    let undecodable = |msg: String| {
        vec![FieldError::invalid(
            "metadata.annotations.AvoidPods",
            AVOID_PODS,
            msg,
        )]
    };
    let kind = |v: &Value| match v {
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        _ => "bool",
    };
    let parsed = match serde_json::from_str::<Value>(raw) {
        Ok(Value::Null) => return Vec::new(),
        Ok(v @ Value::Object(_)) => v,
        Ok(v) => {
            return undecodable(format!(
                "json: cannot unmarshal {} into Go value of type v1.AvoidPods",
                kind(&v)
            ));
        }
        Err(_) => {
            return undecodable(
                super::core::go_json_object_error(raw.as_bytes()).unwrap_or_default(),
            );
        }
    };
    let entries = match parsed.get("preferAvoidPods") {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(a)) => a,
        Some(v) => {
            return undecodable(format!(
                "json: cannot unmarshal {} into Go struct field AvoidPods.preferAvoidPods of \
                 type []v1.PreferAvoidPodsEntry",
                kind(v)
            ));
        }
    };
    let mut errs = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("metadata.annotations.{AVOID_PODS}[{i}].PodSignature");
        match entry.pointer("/podSignature/podController") {
            None | Some(Value::Null) => errs.push(FieldError::required(at, "")),
            Some(c) if c.get("controller") != Some(&Value::Bool(true)) => {
                errs.push(FieldError::invalid(
                    format!("{at}.PodController.Controller"),
                    false,
                    "must point to a controller",
                ));
            }
            Some(_) => {}
        }
    }
    errs
}

/// ValidateNodeUpdate: resources, unique status addresses, pod CIDRs and providerID set once,
/// taints.
pub fn validate_node_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = avoid_pods_errors(new);
    errs.extend(node_resource_errors(new));
    let addresses = items(new.pointer("/status/addresses"));
    for (i, a) in addresses.iter().enumerate() {
        let same = |b: &Value| {
            text(a, "type") == text(b, "type") && text(a, "address") == text(b, "address")
        };
        if addresses[..i].iter().any(same) {
            errs.push(duplicate_raw(
                format!("status.addresses[{i}]"),
                format!(
                    "core.NodeAddress{{Type:{:?}, Address:{:?}}}",
                    text(a, "type"),
                    text(a, "address")
                ),
                "",
            ));
        }
    }
    let old_cidrs = items(old.pointer("/spec/podCIDRs"));
    let new_cidrs = items(new.pointer("/spec/podCIDRs"));
    const CHANGED_CIDR: &str = "node updates may not change podCIDR except from \"\" to valid";
    if !old_cidrs.is_empty() {
        if old_cidrs.len() != new_cidrs.len() {
            errs.push(FieldError::forbidden("spec.podCIDRs", CHANGED_CIDR));
        } else {
            for (o, n) in old_cidrs.iter().zip(new_cidrs) {
                if o != n {
                    errs.push(FieldError::forbidden("spec.podCIDRs", CHANGED_CIDR));
                }
            }
        }
    }
    let old_provider = text(&old["spec"], "providerID");
    if !old_provider.is_empty() && old_provider != text(&new["spec"], "providerID") {
        errs.push(FieldError::forbidden(
            "spec.providerID",
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if let Some(source) = new.pointer("/spec/configSource").filter(|v| !v.is_null()) {
        errs.extend(config_source_errors(source, "spec.configSource", false));
    }
    let config = new.pointer("/status/config").filter(|v| !v.is_null());
    for part in ["assigned", "active", "lastKnownGood"] {
        if let Some(source) = config.and_then(|c| c.get(part)).filter(|v| !v.is_null()) {
            let at = format!("status.config.{part}");
            errs.extend(config_source_errors(source, &at, true));
        }
    }
    errs.extend(taint_errors(
        items(new.pointer("/spec/taints")),
        "metadata.taints",
    ));
    if new.pointer("/spec/externalID") != old.pointer("/spec/externalID") {
        errs.push(FieldError::forbidden(
            "spec.externalID",
            "may not be updated",
        ));
    }
    errs
}

/// The removed dynamic kubelet config's NodeConfigSource, still validated on update as
/// upstream's validateNodeConfigSource{Spec,Status}: exactly one reference (a ConfigMap), whose
/// uid and resourceVersion the spec must not set and the status must, with a namespace, a
/// name and a kubeletConfigKey (a ConfigMap key).
fn config_source_errors(source: &Value, path: &str, status: bool) -> Vec<FieldError> {
    let Some(cm) = source.get("configMap").filter(|v| !v.is_null()) else {
        // Upstream prints the source with Go's `%#v`; configMap is its only reference.
        return vec![FieldError::new(
            FieldErrorType::Invalid,
            path,
            BadValue::Raw(
                "core.NodeConfigSource{ConfigMap:(*core.ConfigMapNodeConfigSource)(nil)}".into(),
            ),
            "exactly one reference subfield must be non-nil",
        )];
    };
    let at = |f: &str| format!("{path}.configMap.{f}");
    let mut errs = Vec::new();
    for field in ["uid", "resourceVersion"] {
        match (status, text(cm, field).is_empty()) {
            (false, false) => errs.push(FieldError::forbidden(
                at(field),
                format!("{field} must not be set in spec"),
            )),
            (true, true) => errs.push(FieldError::required(
                at(field),
                format!("{field} must be set in status"),
            )),
            _ => {}
        }
    }
    type Check = fn(&str) -> Vec<String>;
    let checks: [(&str, Check); 3] = [
        ("namespace", is_dns1123_label),
        ("name", is_dns1123_subdomain),
        ("kubeletConfigKey", super::core::config_key_errors),
    ];
    for (field, check) in checks {
        match text(cm, field) {
            "" => errs.push(FieldError::required(
                at(field),
                format!("{field} must be set"),
            )),
            value => errs.extend(invalid_each(&at(field), value, check(value))),
        }
    }
    errs
}

/// validateEndpointAddress: a valid IP that is not special, a DNS-label hostname, a node name.
/// **Deviation**: loopback addresses are accepted so that Services can point at backends on
/// the k1s host (upstream's ValidateNonSpecialIP refuses them).
fn endpoint_address_errors(a: &Value, at: &str) -> Vec<FieldError> {
    let ip = text(a, "ip");
    let ip_at = format!("{at}.ip");
    let mut errs = invalid_each(&ip_at, ip, ip_errors(ip));
    let hostname = text(a, "hostname");
    if !hostname.is_empty() {
        errs.extend(invalid_each(
            &format!("{at}.hostname"),
            hostname,
            is_dns1123_label(hostname),
        ));
    }
    if let Some(node) = a.get("nodeName").and_then(Value::as_str) {
        errs.extend(invalid_each(
            &format!("{at}.nodeName"),
            node,
            is_dns1123_subdomain(node),
        ));
    }
    match ip.parse::<IpAddr>() {
        Err(_) => errs.push(FieldError::invalid(
            &ip_at,
            ip,
            "must be a valid IP address",
        )),
        Ok(addr) => {
            let (unspecified, link_local, link_local_multicast) = match addr {
                IpAddr::V4(v4) => (
                    v4.is_unspecified(),
                    v4.is_link_local(),
                    v4.octets()[..3] == [224, 0, 0],
                ),
                IpAddr::V6(v6) => (
                    v6.is_unspecified(),
                    v6.segments()[0] & 0xffc0 == 0xfe80,
                    v6.segments()[0] & 0xff0f == 0xff02,
                ),
            };
            if unspecified {
                errs.push(FieldError::invalid(
                    &ip_at,
                    ip,
                    format!("may not be unspecified ({ip})"),
                ));
            }
            if link_local {
                errs.push(FieldError::invalid(
                    &ip_at,
                    ip,
                    "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                ));
            }
            if link_local_multicast {
                errs.push(FieldError::invalid(
                    &ip_at,
                    ip,
                    "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                ));
            }
        }
    }
    errs
}

/// validateEndpointPort: a name when there are several, a valid port, protocol and
/// appProtocol.
fn endpoint_port_errors(p: &Value, require_name: bool, at: &str) -> Vec<FieldError> {
    const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
    let mut errs = Vec::new();
    let name = text(p, "name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(format!("{at}.name"), ""));
    } else if !name.is_empty() {
        errs.extend(invalid_each(
            &format!("{at}.name"),
            name,
            is_dns1123_label(name),
        ));
    }
    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
    for m in is_valid_port_num(port) {
        errs.push(FieldError::invalid(format!("{at}.port"), port, m));
    }
    let protocol = text(p, "protocol");
    if protocol.is_empty() {
        errs.push(FieldError::required(format!("{at}.protocol"), ""));
    } else if !PROTOCOLS.contains(&protocol) {
        errs.push(FieldError::not_supported(
            format!("{at}.protocol"),
            protocol,
            &PROTOCOLS,
        ));
    }
    if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
        errs.extend(invalid_each(
            &format!("{at}.appProtocol"),
            app,
            is_qualified_name(app),
        ));
    }
    errs
}

/// ValidateEndpoints (create and update): every subset has addresses, valid addresses and
/// ports.
pub fn validate_endpoints(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, ss) in items(obj.get("subsets")).iter().enumerate() {
        let at = format!("subsets[{i}]");
        let (ready, not_ready) = (
            items(ss.get("addresses")),
            items(ss.get("notReadyAddresses")),
        );
        if ready.is_empty() && not_ready.is_empty() {
            errs.push(FieldError::required(
                &at,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (key, list) in [("addresses", ready), ("notReadyAddresses", not_ready)] {
            for (j, a) in list.iter().enumerate() {
                errs.extend(endpoint_address_errors(a, &format!("{at}.{key}[{j}]")));
            }
        }
        let ports = items(ss.get("ports"));
        for (j, p) in ports.iter().enumerate() {
            errs.extend(endpoint_port_errors(
                p,
                ports.len() > 1,
                &format!("{at}.ports[{j}]"),
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn printed(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn node_taints_cidrs_and_resources() {
        let node = json!({
            "spec": {
                "taints": [
                    {"key": "a", "effect": "NoSchedule"},
                    {"key": "a", "effect": "NoSchedule"},
                    {"key": "b/c/d", "value": "x y", "effect": "Never"},
                    {"key": "e"},
                ],
                "podCIDRs": ["10.0.0.0/24", "10.1.0.0/24", "10.0.0.0/24"],
            },
            "status": {"capacity": {"pods": "1500m", "cpu": "-1"}},
        });
        let got = printed(&validate_node(&node));
        assert_eq!(
            got[0],
            "metadata.taints[1]: Duplicate value: core.Taint{Key:\"a\", Value:\"\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair"
        );
        assert!(
            got[1].starts_with("metadata.taints[2].key: Invalid value: \"b/c/d\""),
            "{got:?}"
        );
        assert!(
            got[2].starts_with("metadata.taints[2].value: Invalid value: \"x y\""),
            "{got:?}"
        );
        assert_eq!(
            &got[3..],
            [
                "metadata.taints[2].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "metadata.taints[3].effect: Required value",
                "status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0",
                "status.capacity.pods: Invalid value: \"1500m\": must be an integer",
                "spec.podCIDRs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\",\"10.0.0.0/24\"]: may specify no more than one CIDR for each IP family",
                "spec.podCIDRs[2]: Duplicate value: \"10.0.0.0/24\"",
            ]
        );
        let dual = json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}});
        assert!(validate_node(&dual).is_empty());
    }

    #[test]
    fn node_updates_keep_cidrs_provider_and_external_id() {
        let old = json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "k1s://a"}});
        let ok = json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "k1s://a", "unschedulable": true}});
        assert!(validate_node_update(&ok, &old).is_empty());
        let unset = json!({"spec": {}});
        assert!(validate_node_update(&old, &unset).is_empty());
        let bad = json!({
            "spec": {"podCIDRs": ["10.0.1.0/24"], "providerID": "k1s://b", "externalID": "x"},
            "status": {"addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "InternalIP", "address": "10.0.0.1"},
            ]},
        });
        assert_eq!(
            printed(&validate_node_update(&bad, &old)),
            [
                "status.addresses[1]: Duplicate value: core.NodeAddress{Type:\"InternalIP\", Address:\"10.0.0.1\"}",
                "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
                "spec.externalID: Forbidden: may not be updated",
            ]
        );
    }

    #[test]
    fn node_avoid_pods_annotation() {
        let node = |v: &str| json!({"metadata": {"annotations": {AVOID_PODS: v}}});
        let entries = r#"{"preferAvoidPods": [
            {"podSignature": {}},
            {"podSignature": {"podController": {"kind": "ReplicaSet", "name": "r", "uid": "u"}}},
            {"podSignature": {"podController": {"kind": "ReplicaSet", "name": "r", "uid": "u", "controller": true}}}
        ]}"#;
        assert_eq!(
            printed(&validate_node(&node(entries))),
            [
                "metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[0].PodSignature: Required value",
                "metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[1].PodSignature.PodController.Controller: Invalid value: false: must point to a controller",
            ]
        );
        assert_eq!(
            printed(&validate_node_update(&node("[]"), &json!({}))),
            [
                "metadata.annotations.AvoidPods: Invalid value: \"scheduler.alpha.kubernetes.io/preferAvoidPods\": json: cannot unmarshal array into Go value of type v1.AvoidPods"
            ]
        );
        assert_eq!(
            printed(&validate_node(&node("{"))),
            [
                "metadata.annotations.AvoidPods: Invalid value: \"scheduler.alpha.kubernetes.io/preferAvoidPods\": unexpected end of JSON input"
            ]
        );
        assert!(validate_node(&node("")).is_empty());
        assert!(validate_node(&node("{}")).is_empty());
    }

    #[test]
    fn node_config_sources_as_upstream() {
        let old = json!({"spec": {}});
        let node = json!({
            "spec": {"configSource": {"configMap": {
                "namespace": "Bad", "name": "", "kubeletConfigKey": "k", "uid": "u",
            }}},
            "status": {"config": {"active": {}, "assigned": {"configMap": {
                "namespace": "kube-system", "name": "c", "kubeletConfigKey": "a b",
            }}}},
        });
        let got = printed(&validate_node_update(&node, &old));
        assert_eq!(got.len(), 7, "{got:#?}");
        assert_eq!(
            got[0],
            "spec.configSource.configMap.uid: Forbidden: uid must not be set in spec"
        );
        assert!(
            got[1].starts_with("spec.configSource.configMap.namespace: Invalid value: \"Bad\"")
        );
        assert_eq!(
            got[2],
            "spec.configSource.configMap.name: Required value: name must be set"
        );
        assert_eq!(
            got[3],
            "status.config.assigned.configMap.uid: Required value: uid must be set in status"
        );
        assert!(got[5].starts_with(
            "status.config.assigned.configMap.kubeletConfigKey: Invalid value: \"a b\""
        ));
        assert_eq!(
            got[6],
            "status.config.active: Invalid value: core.NodeConfigSource{ConfigMap:(*core.ConfigMapNodeConfigSource)(nil)}: exactly one reference subfield must be non-nil"
        );
    }

    #[test]
    fn endpoints_subsets() {
        let ep = json!({"subsets": [
            {"ports": [{"port": 80, "protocol": "TCP"}]},
            {
                "addresses": [
                    {"ip": "0.0.0.0", "hostname": "Bad_Host"},
                    {"ip": "169.254.1.1", "nodeName": "n1"},
                    {"ip": "nope"},
                    {"ip": "127.0.0.1"},
                ],
                "ports": [
                    {"port": 0, "protocol": "HTTP"},
                    {"name": "b", "port": 8080, "protocol": "", "appProtocol": "a b"},
                ],
            },
        ]});
        let got = printed(&validate_endpoints(&ep));
        assert_eq!(
            got[0],
            "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"
        );
        assert_eq!(
            got[1],
            "subsets[1].addresses[0].hostname: Invalid value: \"Bad_Host\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        assert_eq!(
            &got[2..5],
            [
                "subsets[1].addresses[0].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
                "subsets[1].addresses[1].ip: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "subsets[1].addresses[2].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ]
        );
        assert_eq!(
            &got[5..],
            [
                "subsets[1].addresses[2].ip: Invalid value: \"nope\": must be a valid IP address",
                "subsets[1].ports[0].name: Required value",
                "subsets[1].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "subsets[1].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "subsets[1].ports[1].protocol: Required value",
                "subsets[1].ports[1].appProtocol: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ]
        );
    }
}
