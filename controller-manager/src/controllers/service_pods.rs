//! What the endpoints and endpointslice controllers share: the pods a Service selects, whether a
//! pod belongs in its endpoints and is ready, and how a service port resolves on a pod (by number
//! or by the container port's name), as upstream's endpoint utilities.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Service, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::informer::{Delta, Store, key_of};
use crate::workqueue::WorkQueue;

/// Resolved ports of an endpoint: (name, number, protocol); endpoints are grouped by them.
pub type PortKey = Vec<(String, i32, String)>;

fn selector_matches(
    selector: &BTreeMap<String, String>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let Some(labels) = labels else {
        return selector.is_empty();
    };
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The pods of the Service's namespace that its selector matches (none without a selector).
pub fn selected(pods: &Store<Pod>, service: &Service) -> Vec<Arc<Pod>> {
    let Some(selector) = service.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
        return Vec::new();
    };
    let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
    pods.list_namespace(namespace)
        .into_iter()
        .filter(|p| selector_matches(selector, p.metadata.labels.as_ref()))
        .collect()
}

/// Upstream's ShouldPodBeInEndpoints: an IP, not terminal, and not terminating unless
/// not-ready addresses are published.
pub fn should_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    let status = pod.status.as_ref();
    if status
        .and_then(|s| s.pod_ip.as_deref())
        .unwrap_or_default()
        .is_empty()
    {
        return false;
    }
    if !include_terminating && pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    !matches!(
        status.and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// The pod's `Ready` condition is true.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The container port a service port targets on this pod (upstream's FindPort): a number as
/// is, a name looked up among the containers' ports with the same protocol; absent target:
/// the service port itself.
pub fn find_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    let protocol = port.protocol.as_deref().unwrap_or("TCP");
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => match name.parse::<i32>() {
            Ok(n) => Some(n),
            Err(_) => pod
                .spec
                .as_ref()?
                .containers
                .iter()
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name.as_str())
                        && p.protocol.as_deref().unwrap_or("TCP") == protocol
                })
                .map(|p| p.container_port),
        },
    }
}

/// Follows Services and their pods for a controller keyed by Service: a Service's changes and
/// its pods' changes enqueue the Service. Returns the two caches.
pub fn follow_services_and_pods(
    ctx: &crate::ControllerContext,
    queue: &WorkQueue,
) -> (Arc<Store<Service>>, Arc<Store<Pod>>) {
    let services = ctx.factory.informer::<Service>();
    let pods = ctx.factory.informer::<Pod>();
    {
        let queue = queue.clone();
        services.add_handler(move |d: &Delta<Service>| queue.add(key_of(d.object().as_ref())));
    }
    pods.add_handler(enqueue_services_of_pod(services.store(), queue.clone()));
    (services.store(), pods.store())
}

/// A pod handler that enqueues every Service (of the pod's namespace) that selects the pod
/// before or after the change.
pub fn enqueue_services_of_pod(
    services: Arc<Store<Service>>,
    queue: WorkQueue,
) -> impl Fn(&Delta<Pod>) + Send + Sync + 'static {
    move |d| {
        let pods: Vec<&Arc<Pod>> = match d {
            Delta::Updated { old, new } => vec![old, new],
            Delta::Added(p) | Delta::Deleted(p) => vec![p],
        };
        let namespace = d.object().metadata.namespace.as_deref().unwrap_or_default();
        for service in services.list_namespace(namespace) {
            let Some(selector) = service.spec.as_ref().and_then(|s| s.selector.as_ref()) else {
                continue;
            };
            if pods
                .iter()
                .any(|p| selector_matches(selector, p.metadata.labels.as_ref()))
            {
                queue.add(key_of(service.as_ref()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec};

    use super::*;

    fn pod_with_port(name: &str, number: i32, protocol: &str) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    ports: Some(vec![ContainerPort {
                        name: Some(name.into()),
                        container_port: number,
                        protocol: Some(protocol.into()),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn ports_resolve_by_number_or_by_name_and_protocol() {
        let pod = pod_with_port("http", 8080, "TCP");
        let port = |target: Option<IntOrString>, protocol: &str| ServicePort {
            port: 80,
            target_port: target,
            protocol: Some(protocol.into()),
            ..Default::default()
        };
        assert_eq!(find_port(&pod, &port(None, "TCP")), Some(80));
        assert_eq!(
            find_port(&pod, &port(Some(IntOrString::Int(9090)), "TCP")),
            Some(9090)
        );
        assert_eq!(
            find_port(&pod, &port(Some(IntOrString::String("http".into())), "TCP")),
            Some(8080)
        );
        assert_eq!(
            find_port(&pod, &port(Some(IntOrString::String("http".into())), "UDP")),
            None,
            "the protocol must match"
        );
        assert_eq!(
            find_port(&pod, &port(Some(IntOrString::String("nope".into())), "TCP")),
            None
        );
    }
}
