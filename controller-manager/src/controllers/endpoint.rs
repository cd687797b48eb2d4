//! The endpoints controller (upstream `pkg/controller/endpoint`): every Service with a selector
//! has an Endpoints object listing the IPs of its matching pods, ready ones under `addresses`
//! and the others under `notReadyAddresses` (all under `addresses` with
//! `publishNotReadyAddresses`), with each port resolved by number or by the pod's named port;
//! more than 1,000 addresses are truncated and annotated as upstream.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference, Pod, Service,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::controllers::service_pods::{self, PortKey, follow_services_and_pods};
use crate::informer::{Delta, Store, key_of, split_key};

/// Upstream's maxCapacity of an Endpoints object.
const MAX_ADDRESSES: usize = 1000;
const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";

struct EndpointsController {
    client: Client,
    services: Arc<Store<Service>>,
    pods: Arc<Store<Pod>>,
    endpoints: Arc<Store<Endpoints>>,
}

pub fn start(ctx: ControllerContext) {
    let endpoints = ctx.factory.informer::<Endpoints>();
    let queue = ctx.queue();
    let (services, pods) = follow_services_and_pods(&ctx, &queue);
    {
        let queue = queue.clone();
        // Only a deletion matters (upstream's onEndpointsDelete): a Service's Endpoints are put
        // back; Endpoints someone made without a Service are left alone when they change.
        endpoints.add_handler(move |d: &Delta<Endpoints>| {
            if let Delta::Deleted(e) = d {
                queue.add(key_of(e.as_ref()));
            }
        });
    }
    {
        // Leftovers of Services deleted while no controller ran are cleaned once, at start
        // (upstream's checkLeftoverEndpoints); leader-election records are not Endpoints of a
        // Service.
        let (endpoints, queue) = (endpoints.clone(), queue.clone());
        tokio::spawn(async move {
            endpoints.wait_synced().await;
            for e in endpoints.store().list() {
                let leader =
                    e.metadata.annotations.as_ref().is_some_and(|a| {
                        a.contains_key("control-plane.alpha.kubernetes.io/leader")
                    });
                if !leader {
                    queue.add(key_of(e.as_ref()));
                }
            }
        });
    }
    let reconciler = Arc::new(EndpointsController {
        client: ctx.client.clone(),
        services,
        pods,
        endpoints: endpoints.store(),
    });
    let workers = ctx.workers("endpoint", 5);
    ctx.run_workers(reconciler, queue, workers);
}

impl Reconciler for EndpointsController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let (namespace, name) = split_key(key);
        let namespace = namespace.unwrap_or_default();
        let api: Api<Endpoints> = Api::namespaced(self.client.clone(), namespace);
        let Some(service) = self.services.get(key) else {
            // The Service is gone: so are its Endpoints (if this controller would have made them).
            if self.endpoints.get(key).is_some() {
                match api.delete(name, &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            return Ok(Action::Done);
        };
        let Some(spec) = &service.spec else {
            return Ok(Action::Done);
        };
        // Services without a selector have Endpoints managed by someone else.
        if spec.selector.is_none() {
            return Ok(Action::Done);
        }
        let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
        let mut by_ports: BTreeMap<PortKey, (Vec<EndpointAddress>, Vec<EndpointAddress>)> =
            BTreeMap::new();
        for pod in service_pods::selected(&self.pods, &service) {
            if !service_pods::should_be_in_endpoints(&pod, publish_not_ready) {
                continue;
            }
            let Some(ip) = pod.status.as_ref().and_then(|s| s.pod_ip.clone()) else {
                continue;
            };
            let ports: PortKey = spec
                .ports
                .iter()
                .flatten()
                .filter_map(|p| {
                    let number = service_pods::find_port(&pod, p)?;
                    Some((
                        p.name.clone().unwrap_or_default(),
                        number,
                        p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    ))
                })
                .collect();
            let address = address_of(&pod, &ip, &service);
            let entry = by_ports.entry(ports).or_default();
            if publish_not_ready || service_pods::is_ready(&pod) {
                entry.0.push(address);
            } else {
                entry.1.push(address);
            }
        }
        let mut total = 0;
        let mut truncated = false;
        let mut subsets = Vec::new();
        for (ports, (mut ready, mut not_ready)) in by_ports {
            ready.sort_by(|a, b| a.ip.cmp(&b.ip));
            not_ready.sort_by(|a, b| a.ip.cmp(&b.ip));
            let room = MAX_ADDRESSES.saturating_sub(total);
            if ready.len() + not_ready.len() > room {
                truncated = true;
                ready.truncate(room);
                not_ready.truncate(room - ready.len());
            }
            total += ready.len() + not_ready.len();
            if ready.is_empty() && not_ready.is_empty() {
                continue;
            }
            subsets.push(EndpointSubset {
                addresses: (!ready.is_empty()).then_some(ready),
                not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
                ports: (!ports.is_empty()).then(|| {
                    ports
                        .into_iter()
                        .map(|(name, port, protocol)| EndpointPort {
                            name: (!name.is_empty()).then_some(name),
                            port,
                            protocol: Some(protocol),
                            app_protocol: None,
                        })
                        .collect()
                }),
            });
        }
        let mut labels = service.metadata.labels.clone().unwrap_or_default();
        if spec.cluster_ip.as_deref() == Some("None") {
            labels.insert("service.kubernetes.io/headless".into(), String::new());
        }
        let mut annotations = BTreeMap::new();
        if truncated {
            annotations.insert(OVER_CAPACITY.to_string(), "truncated".to_string());
        }
        let subsets = (!subsets.is_empty()).then_some(subsets);
        let current = self.endpoints.get(key);
        if let Some(cur) = &current {
            let cur_annotations = cur.metadata.annotations.clone().unwrap_or_default();
            if cur.subsets == subsets
                && cur.metadata.labels.clone().unwrap_or_default() == labels
                && cur_annotations.get(OVER_CAPACITY) == annotations.get(OVER_CAPACITY)
            {
                return Ok(Action::Done);
            }
        }
        let desired = Endpoints {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                labels: Some(labels),
                annotations: (!annotations.is_empty()).then_some(annotations),
                resource_version: current
                    .as_ref()
                    .and_then(|c| c.metadata.resource_version.clone()),
                ..Default::default()
            },
            subsets,
        };
        let result = match current {
            Some(_) => api.replace(name, &PostParams::default(), &desired).await,
            None => api.create(&PostParams::default(), &desired).await,
        };
        match result {
            Ok(_) => Ok(Action::Done),
            // The namespace is going away, or the cache was behind: the next event retries.
            Err(e) if is_conflict(&e) => Err(e.into()),
            Err(kube::Error::Api(s)) if s.code == 403 && s.reason == "Forbidden" => {
                Ok(Action::Done)
            }
            Err(e) => Err(e.into()),
        }
    }
}

fn address_of(pod: &Pod, ip: &str, service: &Service) -> EndpointAddress {
    let spec = pod.spec.as_ref();
    // A pod's hostname is published when its subdomain names this service.
    let hostname = spec.and_then(|s| {
        (s.subdomain.as_deref() == service.metadata.name.as_deref())
            .then(|| s.hostname.clone())
            .flatten()
    });
    EndpointAddress {
        ip: ip.to_string(),
        hostname,
        node_name: spec.and_then(|s| s.node_name.clone()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..Default::default()
        }),
    }
}
