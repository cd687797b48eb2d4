//! Row cells of the core (legacy group) kinds besides pods: services, endpoints, endpoint slices,
//! nodes, namespaces, config maps, secrets, service accounts, events, volumes and claims, quotas.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use super::format::{
    access_modes, age, annotation, arr_at, deleting, format_labels, get, int_at, len_at,
    list_with_more, load_balancer_status, name, obj_at, opt_int, opt_str, or, parse_time, quantity,
    since, str_at,
};

/// The ClusterIP, NodePort and LoadBalancer external IP logic of `getServiceExternalIP`.
fn service_external_ip(svc: &Value, svc_type: &str) -> String {
    let external: Vec<&str> = arr_at(svc, &["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match svc_type {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".to_string()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_status(get(svc, &["status", "loadBalancer"]));
            if !external.is_empty() {
                let mut all: Vec<&str> = if lb.is_empty() {
                    Vec::new()
                } else {
                    lb.split(',').collect()
                };
                all.extend(external);
                return all.join(",");
            }
            if lb.is_empty() {
                "<pending>".to_string()
            } else {
                lb
            }
        }
        "ExternalName" => str_at(svc, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    }
}

/// `makePortString`: `80/TCP,443:30443/TCP`.
fn service_ports(ports: &[Value]) -> String {
    ports
        .iter()
        .map(|p| {
            let port = int_at(p, &["port"]);
            let protocol = opt_str(p, &["protocol"]).unwrap_or("TCP");
            let node_port = int_at(p, &["nodePort"]);
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Upstream's `printService`: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR.
pub(super) fn service(obj: &Value, now: Timestamp) -> Vec<Value> {
    let svc_type = opt_str(obj, &["spec", "type"]).unwrap_or("ClusterIP");
    let mut cluster_ip = str_at(obj, &["spec", "clusterIP"]);
    if cluster_ip.is_empty() {
        cluster_ip = arr_at(obj, &["spec", "clusterIPs"])
            .first()
            .and_then(Value::as_str)
            .unwrap_or("");
    }
    let ports = service_ports(arr_at(obj, &["spec", "ports"]));
    cells![
        name(obj),
        svc_type,
        or(cluster_ip, "<none>"),
        service_external_ip(obj, svc_type),
        or(&ports, "<none>"),
        age(obj, now),
        format_labels(get(obj, &["spec", "selector"])),
    ]
}

/// `net.JoinHostPort`: brackets IPv6 hosts.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Upstream's `formatEndpoints` with all ports: up to three `ip:port`, then `+ N more...`.
fn format_endpoints(obj: &Value) -> String {
    let subsets = arr_at(obj, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = arr_at(ss, &["addresses"]);
        let ports = arr_at(ss, &["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for addr in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(str_at(addr, &["ip"]).to_string());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for addr in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(
                    str_at(addr, &["ip"]),
                    int_at(port, &["port"]),
                ));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count.saturating_sub(MAX))
    } else {
        joined
    }
}

pub(super) fn endpoints(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![name(obj), format_endpoints(obj), age(obj, now)]
}

/// Collects up to three strings, counting all of them (the `formatDiscovery*` pattern).
fn first_three(items: impl Iterator<Item = String>) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    let mut count = 0;
    for item in items {
        if list.len() < MAX {
            list.push(item);
        } else if list.len() == MAX {
            more = true;
        }
        count += 1;
    }
    list_with_more(&list, more, count, MAX)
}

pub(super) fn endpoint_slice(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ports = first_three(arr_at(obj, &["ports"]).iter().map(|p| {
        match (opt_int(p, &["port"]), opt_str(p, &["name"])) {
            (Some(port), _) => port.to_string(),
            (None, Some(n)) => n.to_string(),
            (None, None) => "*".to_string(),
        }
    }));
    let endpoints = first_three(arr_at(obj, &["endpoints"]).iter().flat_map(|e| {
        arr_at(e, &["addresses"])
            .iter()
            .map(|a| a.as_str().unwrap_or_default().to_string())
    }));
    cells![
        name(obj),
        str_at(obj, &["addressType"]),
        ports,
        endpoints,
        age(obj, now),
    ]
}

/// `findNodeRoles`: `node-role.kubernetes.io/<role>` label keys and `kubernetes.io/role` values,
/// sorted and deduplicated.
fn node_roles(obj: &Value) -> String {
    let mut roles = BTreeSet::new();
    if let Some(labels) = obj_at(obj, &["metadata", "labels"]) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role" {
                let v = v.as_str().unwrap_or_default();
                if !v.is_empty() {
                    roles.insert(v.to_string());
                }
            }
        }
    }
    if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    }
}

/// The first address of `addr_type` in `status.addresses`, or `<none>`.
fn node_address(obj: &Value, addr_type: &str) -> String {
    arr_at(obj, &["status", "addresses"])
        .iter()
        .find(|a| str_at(a, &["type"]) == addr_type)
        .map_or_else(
            || "<none>".to_string(),
            |a| str_at(a, &["address"]).to_string(),
        )
}

/// Upstream's `printNode`: NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE
/// KERNEL-VERSION CONTAINER-RUNTIME.
pub(super) fn node(obj: &Value, now: Timestamp) -> Vec<Value> {
    // The last condition of a type wins, as upstream builds a map by type.
    let ready = arr_at(obj, &["status", "conditions"])
        .iter()
        .rfind(|c| str_at(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if str_at(c, &["status"]) == "True" => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    }];
    if get(obj, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }
    let info = |field: &str| or(str_at(obj, &["status", "nodeInfo", field]), "<unknown>");
    cells![
        name(obj),
        status.join(","),
        node_roles(obj),
        age(obj, now),
        str_at(obj, &["status", "nodeInfo", "kubeletVersion"]),
        node_address(obj, "InternalIP"),
        node_address(obj, "ExternalIP"),
        info("osImage"),
        info("kernelVersion"),
        info("containerRuntimeVersion"),
    ]
}

pub(super) fn namespace(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![name(obj), str_at(obj, &["status", "phase"]), age(obj, now)]
}

pub(super) fn config_map(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        len_at(obj, &["data"]) + len_at(obj, &["binaryData"]),
        age(obj, now),
    ]
}

pub(super) fn secret(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        opt_str(obj, &["type"]).unwrap_or("Opaque"),
        len_at(obj, &["data"]),
        age(obj, now),
    ]
}

pub(super) fn service_account(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![name(obj), len_at(obj, &["secrets"]), age(obj, now)]
}

/// The fields of an event, read from the core/v1 or the events.k8s.io/v1 shape (the latter
/// converts into the former upstream before printing).
struct EventFields<'a> {
    first: Option<&'a Value>,
    last: Option<&'a Value>,
    event_time: Option<&'a Value>,
    count: i64,
    series: Option<&'a Value>,
    involved: Option<&'a Value>,
    message: &'a str,
    component: &'a str,
    host: &'a str,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
}

impl<'a> EventFields<'a> {
    fn read(group: &str, obj: &'a Value) -> Self {
        let new_api = group == "events.k8s.io";
        let pick = |core: &'static str, new: &'static str| if new_api { new } else { core };
        let source = pick("source", "deprecatedSource");
        Self {
            first: get(obj, &[pick("firstTimestamp", "deprecatedFirstTimestamp")]),
            last: get(obj, &[pick("lastTimestamp", "deprecatedLastTimestamp")]),
            event_time: get(obj, &["eventTime"]),
            count: int_at(obj, &[pick("count", "deprecatedCount")]),
            series: get(obj, &["series"]),
            involved: get(obj, &[pick("involvedObject", "regarding")]),
            message: str_at(obj, &[pick("message", "note")]),
            component: str_at(obj, &[source, "component"]),
            host: str_at(obj, &[source, "host"]),
            reporting_controller: str_at(obj, &[pick("reportingComponent", "reportingController")]),
            reporting_instance: str_at(obj, &["reportingInstance"]),
        }
    }
}

/// Upstream's `printEvent`: LAST-SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST-SEEN
/// COUNT NAME, for core/v1 and events.k8s.io/v1 events.
pub(super) fn event(group: &str, obj: &Value, now: Timestamp) -> Vec<Value> {
    let e = EventFields::read(group, obj);
    let first = if parse_time(e.first).is_some() {
        since(e.first, now)
    } else {
        since(e.event_time, now)
    };
    let mut last = if parse_time(e.last).is_some() {
        since(e.last, now)
    } else {
        first.clone()
    };
    let mut count = e.count;
    if let Some(series) = e.series {
        last = since(get(series, &["lastObservedTime"]), now);
        count = int_at(series, &["count"]);
    } else if count == 0 {
        count = 1;
    }
    let empty = Value::Null;
    let involved = e.involved.unwrap_or(&empty);
    let kind = str_at(involved, &["kind"]).to_lowercase();
    let involved_name = str_at(involved, &["name"]);
    let target = if involved_name.is_empty() {
        kind
    } else {
        format!("{kind}/{involved_name}")
    };
    let component = or(e.component, e.reporting_controller);
    let instance = or(e.host, e.reporting_instance);
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    cells![
        last,
        str_at(obj, &["type"]),
        str_at(obj, &["reason"]),
        target,
        str_at(involved, &["fieldPath"]),
        source,
        e.message.trim(),
        first,
        count,
        name(obj),
    ]
}

/// `helper.GetPersistentVolumeClass` / `GetPersistentVolumeClaimClass`: the beta annotation
/// wins over `spec.storageClassName`.
fn storage_class(obj: &Value) -> String {
    annotation(obj, "volume.beta.kubernetes.io/storage-class")
        .or_else(|| opt_str(obj, &["spec", "storageClassName"]))
        .unwrap_or("")
        .to_string()
}

pub(super) fn persistent_volume(obj: &Value, now: Timestamp) -> Vec<Value> {
    let claim = obj_at(obj, &["spec", "claimRef"]).map_or(String::new(), |_| {
        format!(
            "{}/{}",
            str_at(obj, &["spec", "claimRef", "namespace"]),
            str_at(obj, &["spec", "claimRef", "name"])
        )
    });
    let phase = if deleting(obj) {
        "Terminating"
    } else {
        opt_str(obj, &["status", "phase"]).unwrap_or("Pending")
    };
    cells![
        name(obj),
        quantity(get(obj, &["spec", "capacity", "storage"])),
        access_modes(arr_at(obj, &["spec", "accessModes"])),
        opt_str(obj, &["spec", "persistentVolumeReclaimPolicy"]).unwrap_or("Retain"),
        phase,
        claim,
        storage_class(obj),
        opt_str(obj, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>"),
        str_at(obj, &["status", "reason"]),
        age(obj, now),
        opt_str(obj, &["spec", "volumeMode"]).unwrap_or("Filesystem"),
    ]
}

pub(super) fn persistent_volume_claim(obj: &Value, now: Timestamp) -> Vec<Value> {
    let phase = if deleting(obj) {
        "Terminating"
    } else {
        opt_str(obj, &["status", "phase"]).unwrap_or("Pending")
    };
    let volume = str_at(obj, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(get(obj, &["status", "capacity", "storage"])),
            access_modes(arr_at(obj, &["status", "accessModes"])),
        )
    };
    cells![
        name(obj),
        phase,
        volume,
        capacity,
        modes,
        storage_class(obj),
        opt_str(obj, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>"),
        age(obj, now),
        opt_str(obj, &["spec", "volumeMode"]).unwrap_or("Filesystem"),
    ]
}

/// Upstream's `printResourceQuota`: `resource: used/hard` pairs sorted by resource name,
/// `limits.*` in the LIMIT column and everything else in REQUEST.
pub(super) fn resource_quota(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut request = Vec::new();
    let mut limit = Vec::new();
    if let Some(hard) = obj_at(obj, &["status", "hard"]) {
        let mut resources: Vec<&String> = hard.keys().collect();
        resources.sort();
        for resource in resources {
            let used = quantity(get(obj, &["status", "used", resource]));
            let entry = format!(
                "{resource}: {used}/{}",
                quantity(hard.get(resource.as_str()))
            );
            let mut pieces = resource.split('.');
            if pieces.next() == Some("limits") && pieces.next().is_some() {
                limit.push(entry);
            } else {
                request.push(entry);
            }
        }
    }
    cells![
        name(obj),
        request.join(", "),
        limit.join(", "),
        age(obj, now)
    ]
}

pub(super) fn component_status(obj: &Value, _now: Timestamp) -> Vec<Value> {
    let healthy = arr_at(obj, &["conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Healthy");
    let (status, message, error) = match healthy {
        None => ("Unknown", "", ""),
        Some(c) => (
            if str_at(c, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            str_at(c, &["message"]),
            str_at(c, &["error"]),
        ),
    };
    cells![name(obj), status, message, error]
}
