//! Quota usage arithmetic shared by the ResourceQuota admission plugin (apiserver) and the
//! resourcequota controller (controller-manager), as upstream's `pkg/quota/v1/evaluator/core`
//! and `apiserver/pkg/quota/v1`: what one object uses, which quota resource names an
//! evaluator tracks (`MatchingResources`), and whether a quota's scopes select an object.
//! Objects are JSON values, so custom resources and built-ins share it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::quantity::Quantity;

/// A resource list (`{cpu: 1, memory: 1Gi}`), sorted by name.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Object-count names upstream keeps besides `count/<resource>` (core group only).
pub const LEGACY_COUNTS: [&str; 7] = [
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

/// The quota names the pod evaluator tracks exactly (upstream's podResources).
const POD_RESOURCES: [&str; 11] = [
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";
/// The legacy annotation naming a claim's class; it wins over `spec.storageClassName`.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// A resource list (`{cpu: "1", memory: "1Gi"}`); malformed entries are skipped (validation
/// reports them).
pub fn resource_list(v: Option<&Value>) -> ResourceList {
    let mut out = ResourceList::new();
    for (k, v) in v.and_then(Value::as_object).into_iter().flatten() {
        let q = match v {
            Value::String(s) => Quantity::parse(s),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => None,
        };
        if let Some(q) = q {
            out.insert(k.clone(), q);
        }
    }
    out
}

/// `into += other`, name by name.
pub fn add_into(into: &mut ResourceList, other: &ResourceList) {
    for (k, v) in other {
        let sum = into.get(k).map_or(*v, |cur| cur.add(v));
        into.insert(k.clone(), sum);
    }
}

/// `into = max(into, other)`, name by name.
pub fn max_into(into: &mut ResourceList, other: &ResourceList) {
    for (k, v) in other {
        if into.get(k).is_none_or(|cur| cur < v) {
            into.insert(k.clone(), *v);
        }
    }
}

fn str_at<'v>(obj: &'v Value, path: &[&str]) -> Option<&'v str> {
    path.iter()
        .try_fold(obj, |cur, p| cur.get(*p))
        .and_then(Value::as_str)
}

/// A pod's `spec.containers` or `spec.initContainers`.
pub fn containers<'v>(pod: &'v Value, field: &str) -> &'v [Value] {
    pod.get("spec")
        .and_then(|s| s.get(field))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A container's requests and limits.
pub fn container_resources(c: &Value) -> (ResourceList, ResourceList) {
    (
        resource_list(c.pointer("/resources/requests")),
        resource_list(c.pointer("/resources/limits")),
    )
}

/// A pod's effective requests and limits (upstream's PodRequests / PodLimits): the sum of its
/// containers and restartable (sidecar) init containers, at least the largest init container
/// (plus the sidecars started before it), plus overhead.
pub fn pod_totals(pod: &Value) -> (ResourceList, ResourceList) {
    let mut requests = ResourceList::new();
    let mut limits = ResourceList::new();
    for c in containers(pod, "containers") {
        let (r, l) = container_resources(c);
        add_into(&mut requests, &r);
        add_into(&mut limits, &l);
    }
    let mut init_requests = ResourceList::new();
    let mut init_limits = ResourceList::new();
    let mut sidecar_requests = ResourceList::new();
    let mut sidecar_limits = ResourceList::new();
    for c in containers(pod, "initContainers") {
        let (r, l) = container_resources(c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add_into(&mut requests, &r);
            add_into(&mut limits, &l);
            add_into(&mut sidecar_requests, &r);
            add_into(&mut sidecar_limits, &l);
        } else {
            let mut r2 = sidecar_requests.clone();
            add_into(&mut r2, &r);
            let mut l2 = sidecar_limits.clone();
            add_into(&mut l2, &l);
            max_into(&mut init_requests, &r2);
            max_into(&mut init_limits, &l2);
        }
    }
    max_into(&mut requests, &init_requests);
    max_into(&mut limits, &init_limits);
    let overhead = resource_list(pod.pointer("/spec/overhead"));
    add_into(&mut requests, &overhead);
    if !limits.is_empty() {
        add_into(&mut limits, &overhead);
    }
    (requests, limits)
}

/// Resources quota never tracks (upstream's ignored resources, and kinds that are not stored).
pub fn ignored(group: &str, resource: &str) -> bool {
    matches!(
        group,
        "authorization.k8s.io" | "authentication.k8s.io" | "events.k8s.io"
    ) || (group.is_empty() && matches!(resource, "events" | "namespaces"))
}

/// `count/<resource>` (core) or `count/<resource>.<group>`.
pub fn count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// Upstream's IsNativeResource: no domain, or a `kubernetes.io/` one.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Upstream's IsExtendedResourceName (`example.com/gpu`).
fn is_extended_resource_name(name: &str) -> bool {
    !is_native_resource(name)
        && !name.starts_with("requests.")
        && crate::validation::is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// Whether the evaluator of `group`/`resource` tracks quota resource `name` (upstream's
/// MatchingResources; other resources have the generic object-count evaluator).
pub fn covers(group: &str, resource: &str, name: &str) -> bool {
    if name == count_name(group, resource) {
        return true;
    }
    match (group, resource) {
        ("", "pods") => {
            POD_RESOURCES.contains(&name)
                || name.starts_with("hugepages-")
                || name.starts_with("requests.hugepages-")
                || (!is_native_resource(name) && name.starts_with("requests."))
        }
        ("", "services") => matches!(
            name,
            "services" | "services.nodeports" | "services.loadbalancers"
        ),
        ("", "persistentvolumeclaims") => {
            matches!(name, "persistentvolumeclaims" | "requests.storage")
                || ["persistentvolumeclaims", "requests.storage"]
                    .iter()
                    .any(|r| name.ends_with(&format!("{STORAGE_CLASS_SUFFIX}{r}")))
        }
        ("", r) => LEGACY_COUNTS.contains(&r) && name == r,
        _ => false,
    }
}

/// Whether a pod's `pods` and compute resources are charged at `now` (upstream's QuotaV1Pod): not
/// once it is terminal, nor once its deletion's grace period has run out (a pod stuck
/// terminating on a lost node must not block new ones). `count/pods` is charged regardless.
pub fn charges_pod_compute(pod: &Value, now: jiff::Timestamp) -> bool {
    if matches!(
        str_at(pod, &["status", "phase"]),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let deleted_at = str_at(pod, &["metadata", "deletionTimestamp"])
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    match (deleted_at, grace) {
        (Some(at), Some(grace)) => at
            .checked_add(jiff::SignedDuration::from_secs(grace))
            .is_ok_and(|end| now <= end),
        _ => true,
    }
}

/// Upstream's podComputeUsageHelper: `pods` and the compute resources of requests and limits.
fn pod_compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), Quantity::from_int(1));
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            out.insert(r.into(), *q);
            out.insert(format!("requests.{r}"), *q);
        }
        if let Some(q) = limits.get(r) {
            out.insert(format!("limits.{r}"), *q);
        }
    }
    for (k, q) in requests {
        if k.starts_with("hugepages-") {
            out.insert(k.clone(), *q);
            out.insert(format!("requests.{k}"), *q);
        }
        if is_extended_resource_name(k) {
            out.insert(format!("requests.{k}"), *q);
        }
    }
    out
}

/// The claim's storage class: the beta annotation, else `spec.storageClassName`.
fn claim_class(pvc: &Value) -> &str {
    pvc.pointer("/metadata/annotations")
        .and_then(|a| a.get(BETA_STORAGE_CLASS))
        .and_then(Value::as_str)
        .or_else(|| str_at(pvc, &["spec", "storageClassName"]))
        .unwrap_or("")
}

/// What a claim's storage counts: its request, or what was allocated if more.
fn claim_storage(pvc: &Value) -> Option<Quantity> {
    let requested = *resource_list(pvc.pointer("/spec/resources/requests")).get("storage")?;
    let allocated = resource_list(pvc.pointer("/status/allocatedResources"))
        .get("storage")
        .copied();
    Some(match allocated {
        Some(a) if a > requested => a,
        _ => requested,
    })
}

/// The usage one object contributes (upstream's evaluators' Usage).
pub fn usage(group: &str, resource: &str, obj: &Value) -> ResourceList {
    let one = Quantity::from_int(1);
    let mut out = ResourceList::new();
    out.insert(count_name(group, resource), one);
    match (group, resource) {
        // `count/pods` follows every stored pod; `pods` and compute only live ones.
        ("", "pods") if charges_pod_compute(obj, jiff::Timestamp::now()) => {
            let (requests, limits) = pod_totals(obj);
            add_into(&mut out, &pod_compute_usage(&requests, &limits));
        }
        ("", "pods") => {}
        ("", "services") => {
            out.insert("services".into(), one);
            let ports = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let (nodeports, lbs) = match str_at(obj, &["spec", "type"]) {
                Some("NodePort") => (ports.len(), 0),
                Some("LoadBalancer") => {
                    // Without allocated node ports, only explicitly asked ones count.
                    let allocate = obj
                        .pointer("/spec/allocateLoadBalancerNodePorts")
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    let n = if allocate {
                        ports.len()
                    } else {
                        ports
                            .iter()
                            .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
                            .count()
                    };
                    (n, 1)
                }
                _ => (0, 0),
            };
            let int = |n: usize| Quantity::from_int(i64::try_from(n).unwrap_or(i64::MAX));
            out.insert("services.nodeports".into(), int(nodeports));
            out.insert("services.loadbalancers".into(), int(lbs));
        }
        ("", "persistentvolumeclaims") => {
            out.insert("persistentvolumeclaims".into(), one);
            let class = claim_class(obj);
            if !class.is_empty() {
                out.insert(
                    format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                    one,
                );
            }
            if let Some(storage) = claim_storage(obj) {
                out.insert("requests.storage".into(), storage);
                if !class.is_empty() {
                    out.insert(
                        format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                        storage,
                    );
                }
            }
        }
        ("", r) if LEGACY_COUNTS.contains(&r) => {
            out.insert(r.to_string(), one);
        }
        _ => {}
    }
    out
}

/// One scope requirement of a quota: `spec.scopes` entries are `Exists`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeRequirement {
    pub scope: String,
    pub operator: String,
    pub values: Vec<String>,
}

/// A quota's scopes and scope selector, as requirements.
pub fn scope_requirements(quota: &Value) -> Vec<ScopeRequirement> {
    let mut reqs: Vec<ScopeRequirement> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|s| ScopeRequirement {
            scope: s.to_string(),
            operator: "Exists".into(),
            values: Vec::new(),
        })
        .collect();
    for e in quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        reqs.push(ScopeRequirement {
            scope: str_at(e, &["scopeName"]).unwrap_or("").into(),
            operator: str_at(e, &["operator"]).unwrap_or("").into(),
            values,
        });
    }
    reqs
}

/// Whether a quota's scopes select the object (only pods match scoped quotas; upstream's other
/// evaluators have no scopes).
pub fn scopes_match(group: &str, resource: &str, quota: &Value, obj: &Value) -> bool {
    requirements_match(group, resource, &scope_requirements(quota), obj)
}

/// `scopes_match` with the requirements already read.
pub fn requirements_match(
    group: &str,
    resource: &str,
    reqs: &[ScopeRequirement],
    obj: &Value,
) -> bool {
    if reqs.is_empty() {
        return true;
    }
    if !(group.is_empty() && resource == "pods") {
        return false;
    }
    reqs.iter().all(|r| pod_matches_scope(r, obj))
}

fn pod_matches_scope(r: &ScopeRequirement, pod: &Value) -> bool {
    let matched = match r.scope.as_str() {
        "Terminating" => is_terminating(pod),
        "NotTerminating" => !is_terminating(pod),
        "BestEffort" => is_best_effort(pod),
        "NotBestEffort" => !is_best_effort(pod),
        "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(pod),
        "PriorityClass" => {
            let class = str_at(pod, &["spec", "priorityClassName"]).unwrap_or("");
            // As a label selector over `{PriorityClass: <class>}` (no label without a class).
            return match r.operator.as_str() {
                "In" => !class.is_empty() && r.values.iter().any(|v| v == class),
                "NotIn" => class.is_empty() || !r.values.iter().any(|v| v == class),
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                _ => false,
            };
        }
        _ => false,
    };
    if r.operator == "DoesNotExist" {
        !matched
    } else {
        matched
    }
}

/// A pod with an active deadline (the Terminating scope): `spec.activeDeadlineSeconds` set
/// and not negative.
pub fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0)
}

/// QoS class BestEffort: no container states a non-zero cpu or memory request or limit.
pub fn is_best_effort(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().all(|f| {
        containers(pod, f).iter().all(|c| {
            ["requests", "limits"].iter().all(|k| {
                let list = resource_list(c.pointer(&format!("/resources/{k}")));
                ["cpu", "memory"]
                    .iter()
                    .all(|r| list.get(*r).is_none_or(|q| q.is_zero() || q.is_negative()))
            })
        })
    })
}

/// Whether any pod (anti-)affinity term names other namespaces or a namespace selector.
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |t: &Value| {
        t.get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
            || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(a) = pod.pointer(&format!("/spec/affinity/{kind}")) else {
            return false;
        };
        let required = a
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(cross);
        let preferred = a
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("podAffinityTerm"))
            .any(cross);
        required || preferred
    })
}

/// `list` restricted to `names`, with zero for the names it lacks (upstream's Mask after
/// CalculateUsageStats, which starts every tracked resource at zero).
pub fn mask_with_zero(list: &ResourceList, names: &[String]) -> ResourceList {
    names
        .iter()
        .map(|k| {
            (
                k.clone(),
                list.get(k).copied().unwrap_or_else(Quantity::zero),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
