//! Row cells of the remaining kinds: networking, RBAC bindings, certificates, coordination,
//! storage, scheduling, admission, flow control, DRA, and the aggregator's APIServices.

use jiff::Timestamp;
use serde_json::Value;

use super::format::{
    age, annotation, arr_at, bool_at, created_at, format_label_selector, get, human_duration,
    int_at, len_at, load_balancer_status, name, obj_at, opt_int, opt_str, or, str_at,
};

/// The default convertor's row: the name and `Created At`.
pub(super) fn default_row(obj: &Value, _now: Timestamp) -> Vec<Value> {
    cells![name(obj), created_at(obj)]
}

/// Upstream's `formatHosts`: up to three rule hosts, `*` when none.
fn ingress_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = str_at(rule, &["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".to_string();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len().saturating_sub(MAX))
    } else {
        joined
    }
}

pub(super) fn ingress(obj: &Value, now: Timestamp) -> Vec<Value> {
    let ports = if arr_at(obj, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    cells![
        name(obj),
        opt_str(obj, &["spec", "ingressClassName"]).unwrap_or("<none>"),
        ingress_hosts(arr_at(obj, &["spec", "rules"])),
        load_balancer_status(get(obj, &["status", "loadBalancer"])),
        ports,
        age(obj, now),
    ]
}

pub(super) fn ingress_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    let parameters = match obj_at(obj, &["spec", "parameters"]) {
        None => "<none>".to_string(),
        Some(_) => {
            let p = |f: &str| str_at(obj, &["spec", "parameters", f]);
            match opt_str(obj, &["spec", "parameters", "apiGroup"]) {
                Some(g) => format!("{}.{g}/{}", p("kind"), p("name")),
                None => format!("{}/{}", p("kind"), p("name")),
            }
        }
    };
    cells![
        name(obj),
        str_at(obj, &["spec", "controller"]),
        parameters,
        age(obj, now),
    ]
}

pub(super) fn network_policy(obj: &Value, now: Timestamp) -> Vec<Value> {
    // `podSelector` is a struct, never nil: a missing one is the empty (match-all) selector.
    let empty = serde_json::json!({});
    let selector = get(obj, &["spec", "podSelector"]).unwrap_or(&empty);
    cells![
        name(obj),
        format_label_selector(Some(selector)),
        age(obj, now),
    ]
}

/// `rbac.SubjectsStrings`: users, groups and `namespace/name` service accounts, each `, `
/// joined.
pub(super) fn role_binding(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for s in arr_at(obj, &["subjects"]) {
        let subject_name = str_at(s, &["name"]);
        match str_at(s, &["kind"]) {
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{subject_name}", str_at(s, &["namespace"])));
            }
            "User" => users.push(subject_name.to_string()),
            "Group" => groups.push(subject_name.to_string()),
            _ => {}
        }
    }
    cells![
        name(obj),
        format!(
            "{}/{}",
            str_at(obj, &["roleRef", "kind"]),
            str_at(obj, &["roleRef", "name"])
        ),
        age(obj, now),
        users.join(", "),
        groups.join(", "),
        service_accounts.join(", "),
    ]
}

/// Upstream's `extractCSRStatus`: Denied / Approved / Pending, then `,Failed`, `,Issued`.
fn csr_condition(obj: &Value) -> String {
    let has = |t: &str| {
        arr_at(obj, &["status", "conditions"])
            .iter()
            .any(|c| str_at(c, &["type"]) == t)
    };
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(obj, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

pub(super) fn certificate_signing_request(obj: &Value, now: Timestamp) -> Vec<Value> {
    let requested = opt_int(obj, &["spec", "expirationSeconds"]).map_or_else(
        || "<none>".to_string(),
        |s| human_duration(s.saturating_mul(1_000_000_000)),
    );
    cells![
        name(obj),
        age(obj, now),
        or(str_at(obj, &["spec", "signerName"]), "<none>"),
        str_at(obj, &["spec", "username"]),
        requested,
        csr_condition(obj),
    ]
}

pub(super) fn cluster_trust_bundle(obj: &Value, _now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        or(str_at(obj, &["spec", "signerName"]), "<none>"),
    ]
}

pub(super) fn lease(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        str_at(obj, &["spec", "holderIdentity"]),
        age(obj, now),
    ]
}

pub(super) fn lease_candidate(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec = |f: &str| str_at(obj, &["spec", f]);
    cells![
        name(obj),
        spec("leaseName"),
        spec("binaryVersion"),
        spec("emulationVersion"),
        age(obj, now),
    ]
}

pub(super) fn storage_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    let is_default = |key: &str| annotation(obj, key) == Some("true");
    let mut class_name = name(obj).to_string();
    if is_default("storageclass.kubernetes.io/is-default-class")
        || is_default("storageclass.beta.kubernetes.io/is-default-class")
    {
        class_name.push_str(" (default)");
    }
    cells![
        class_name,
        str_at(obj, &["provisioner"]),
        opt_str(obj, &["reclaimPolicy"]).unwrap_or("Delete"),
        opt_str(obj, &["volumeBindingMode"]).unwrap_or("Immediate"),
        bool_at(obj, &["allowVolumeExpansion"]),
        age(obj, now),
    ]
}

pub(super) fn volume_attributes_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut class_name = name(obj).to_string();
    if annotation(
        obj,
        "storage.kubernetes.io/is-default-volumeattributesclass",
    ) == Some("true")
    {
        class_name.push_str(" (default)");
    }
    cells![class_name, str_at(obj, &["driverName"]), age(obj, now)]
}

pub(super) fn priority_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        int_at(obj, &["value"]),
        bool_at(obj, &["globalDefault"]),
        age(obj, now),
        opt_str(obj, &["preemptionPolicy"]).unwrap_or("PreemptLowerPriority"),
    ]
}

pub(super) fn runtime_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![name(obj), str_at(obj, &["handler"]), age(obj, now)]
}

pub(super) fn volume_attachment(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        str_at(obj, &["spec", "attacher"]),
        str_at(obj, &["spec", "source", "persistentVolumeName"]),
        str_at(obj, &["spec", "nodeName"]),
        bool_at(obj, &["status", "attached"]),
        age(obj, now),
    ]
}

pub(super) fn csi_node(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![name(obj), len_at(obj, &["spec", "drivers"]), age(obj, now)]
}

pub(super) fn csi_driver(obj: &Value, now: Timestamp) -> Vec<Value> {
    let flag = |f: &str, default: bool| {
        get(obj, &["spec", f])
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    let token_requests = match get(obj, &["spec", "tokenRequests"]) {
        None => "<unset>".to_string(),
        Some(v) => v
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| str_at(t, &["audience"]))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
    };
    let modes: Vec<&str> = arr_at(obj, &["spec", "volumeLifecycleModes"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    cells![
        name(obj),
        flag("attachRequired", true),
        flag("podInfoOnMount", false),
        flag("storageCapacity", false),
        token_requests,
        flag("requiresRepublish", false),
        or(&modes.join(","), "<none>"),
        age(obj, now),
    ]
}

pub(super) fn webhook_configuration(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![name(obj), len_at(obj, &["webhooks"]), age(obj, now)]
}

fn param_kind(obj: &Value) -> String {
    match obj_at(obj, &["spec", "paramKind"]) {
        None => "<unset>".to_string(),
        Some(_) => format!(
            "{}/{}",
            str_at(obj, &["spec", "paramKind", "apiVersion"]),
            str_at(obj, &["spec", "paramKind", "kind"])
        ),
    }
}

/// An admission policy; `rules` is `validations` or `mutations`.
pub(super) fn admission_policy(obj: &Value, rules: &str, now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        len_at(obj, &["spec", rules]),
        param_kind(obj),
        age(obj, now),
    ]
}

/// The generated Go `String()` of a `*metav1.LabelSelector`, which upstream prints for a
/// selector `paramRef`.
fn go_label_selector_string(sel: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> = obj_at(sel, &["matchLabels"])
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or_default()))
        .collect();
    let exprs: String = arr_at(sel, &["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = arr_at(e, &["values"])
                .iter()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                str_at(e, &["key"]),
                str_at(e, &["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
}

pub(super) fn admission_policy_binding(obj: &Value, now: Timestamp) -> Vec<Value> {
    let param_ref = match get(obj, &["spec", "paramRef"]) {
        None => "<unset>".to_string(),
        Some(pr) => {
            let pr_name = str_at(pr, &["name"]);
            let pr_ns = str_at(pr, &["namespace"]);
            if !pr_name.is_empty() {
                if pr_ns.is_empty() {
                    format!("*/{pr_name}")
                } else {
                    format!("{pr_ns}/{pr_name}")
                }
            } else if let Some(sel) = get(pr, &["selector"]) {
                go_label_selector_string(sel)
            } else {
                "<unset>".to_string()
            }
        }
    };
    cells![
        name(obj),
        str_at(obj, &["spec", "policyName"]),
        param_ref,
        age(obj, now),
    ]
}

pub(super) fn flow_schema(obj: &Value, now: Timestamp) -> Vec<Value> {
    let distinguisher = opt_str(obj, &["spec", "distinguisherMethod", "type"]).unwrap_or("<none>");
    let missing_pl = arr_at(obj, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Dangling")
        .map_or("?", |c| str_at(c, &["status"]));
    cells![
        name(obj),
        str_at(obj, &["spec", "priorityLevelConfiguration", "name"]),
        int_at(obj, &["spec", "matchingPrecedence"]),
        distinguisher,
        age(obj, now),
        missing_pl,
    ]
}

/// `FlowSchemaSequence` order: by matching precedence, then by name.
pub(super) fn flow_schema_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    let key = |o: &Value| {
        (
            int_at(o, &["spec", "matchingPrecedence"]),
            name(o).to_string(),
        )
    };
    key(a).cmp(&key(b))
}

pub(super) fn priority_level_configuration(obj: &Value, now: Timestamp) -> Vec<Value> {
    let none = || Value::from("<none>");
    let (mut ncs, mut queues, mut hand_size, mut queue_length) = (none(), none(), none(), none());
    if get(obj, &["spec", "limited"]).is_some() {
        ncs = Value::from(int_at(
            obj,
            &["spec", "limited", "nominalConcurrencyShares"],
        ));
        let q = ["spec", "limited", "limitResponse", "queuing"];
        if let Some(queuing) = get(obj, &q) {
            queues = Value::from(int_at(queuing, &["queues"]));
            hand_size = Value::from(int_at(queuing, &["handSize"]));
            queue_length = Value::from(int_at(queuing, &["queueLengthLimit"]));
        }
    }
    vec![
        Value::from(name(obj)),
        Value::from(str_at(obj, &["spec", "type"])),
        ncs,
        queues,
        hand_size,
        queue_length,
        Value::from(age(obj, now)),
    ]
}

pub(super) fn service_cidr(obj: &Value, now: Timestamp) -> Vec<Value> {
    let cidrs: Vec<&str> = arr_at(obj, &["spec", "cidrs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    cells![name(obj), cidrs.join(","), age(obj, now)]
}

pub(super) fn ip_address(obj: &Value, now: Timestamp) -> Vec<Value> {
    let parent = match obj_at(obj, &["spec", "parentRef"]) {
        None => "<none>".to_string(),
        Some(_) => {
            let p = |f: &str| str_at(obj, &["spec", "parentRef", f]);
            let mut s = if p("group").is_empty() {
                p("resource").to_lowercase()
            } else {
                format!("{}.{}", p("resource"), p("group")).to_lowercase()
            };
            if !p("namespace").is_empty() {
                s = format!("{s}/{}", p("namespace"));
            }
            format!("{s}/{}", p("name"))
        }
    };
    cells![name(obj), parent, age(obj, now)]
}

pub(super) fn name_and_age(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![name(obj), age(obj, now)]
}

pub(super) fn resource_claim(obj: &Value, now: Timestamp) -> Vec<Value> {
    let mut states = Vec::new();
    let deleted = super::format::deleting(obj);
    if deleted {
        states.push("deleted");
    }
    if get(obj, &["status", "allocation"]).is_none() {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !arr_at(obj, &["status", "reservedFor"]).is_empty() {
            states.push("reserved");
        }
    }
    cells![name(obj), states.join(","), age(obj, now)]
}

pub(super) fn resource_slice(obj: &Value, now: Timestamp) -> Vec<Value> {
    cells![
        name(obj),
        str_at(obj, &["spec", "nodeName"]),
        str_at(obj, &["spec", "driver"]),
        str_at(obj, &["spec", "pool", "name"]),
        age(obj, now),
    ]
}

/// kube-aggregator's APIService convertor: the service (`Local` when none) and the
/// `Available` condition (`False (Reason)` when not true).
pub(super) fn api_service(obj: &Value, now: Timestamp) -> Vec<Value> {
    let service = match obj_at(obj, &["spec", "service"]) {
        None => "Local".to_string(),
        Some(_) => format!(
            "{}/{}",
            str_at(obj, &["spec", "service", "namespace"]),
            str_at(obj, &["spec", "service", "name"])
        ),
    };
    let available = arr_at(obj, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Available")
        .map_or_else(
            || "Unknown".to_string(),
            |c| {
                let status = str_at(c, &["status"]);
                let reason = str_at(c, &["reason"]);
                if status == "True" || reason.is_empty() {
                    status.to_string()
                } else {
                    format!("{status} ({reason})")
                }
            },
        );
    cells![name(obj), service, available, age(obj, now)]
}
