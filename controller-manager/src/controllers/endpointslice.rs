//! The endpointslice controller (upstream `pkg/controller/endpointslice`): every Service with a
//! selector has EndpointSlices (labelled `kubernetes.io/service-name` and managed by
//! `endpointslice-controller.k8s.io`, owned by the Service) holding its pods' endpoints with the
//! `ready`, `serving` and `terminating` conditions, grouped by resolved ports and at most 100 per
//! slice; existing slices are updated in place before new ones are created or extra ones deleted.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::controllers::service_pods::{self, PortKey, follow_services_and_pods};
use crate::informer::{Delta, Store, split_key};

pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// Upstream's `--max-endpoints-per-slice` default.
const MAX_ENDPOINTS_PER_SLICE: usize = 100;

struct SliceController {
    client: Client,
    services: Arc<Store<Service>>,
    pods: Arc<Store<Pod>>,
    slices: Arc<Store<EndpointSlice>>,
}

pub fn start(ctx: ControllerContext) {
    let slices = ctx.factory.informer::<EndpointSlice>();
    let queue = ctx.queue();
    let (services, pods) = follow_services_and_pods(&ctx, &queue);
    {
        let queue = queue.clone();
        // A managed slice changed or deleted by someone else is put back.
        slices.add_handler(move |d: &Delta<EndpointSlice>| {
            let s = d.object();
            let labels = s.metadata.labels.clone().unwrap_or_default();
            if labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY) {
                return;
            }
            if let (Some(ns), Some(svc)) = (&s.metadata.namespace, labels.get(SERVICE_NAME_LABEL)) {
                queue.add(format!("{ns}/{svc}"));
            }
        });
    }
    let reconciler = Arc::new(SliceController {
        client: ctx.client.clone(),
        services,
        pods,
        slices: slices.store(),
    });
    let workers = ctx.workers("service-endpoint", 5);
    ctx.run_workers(reconciler, queue, workers);
}

impl SliceController {
    /// This Service's managed slices, by name.
    fn existing(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        let mut out: Vec<_> = self
            .slices
            .list_namespace(namespace)
            .into_iter()
            .filter(|s| {
                let l = s.metadata.labels.clone().unwrap_or_default();
                l.get(SERVICE_NAME_LABEL).map(String::as_str) == Some(service)
                    && l.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY)
            })
            .collect();
        out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        out
    }

    /// The slices the Service should have: endpoints grouped by their resolved ports, sorted,
    /// in chunks of at most 100.
    fn desired(&self, service: &Service) -> Vec<(PortKey, Vec<Endpoint>)> {
        let spec = service.spec.clone().unwrap_or_default();
        let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
        let mut groups: BTreeMap<PortKey, Vec<Endpoint>> = BTreeMap::new();
        for pod in service_pods::selected(&self.pods, service) {
            // Terminating pods stay listed, with `terminating: true`.
            if !service_pods::should_be_in_endpoints(&pod, true) {
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
                    Some((
                        p.name.clone().unwrap_or_default(),
                        service_pods::find_port(&pod, p)?,
                        p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    ))
                })
                .collect();
            let ready = service_pods::is_ready(&pod);
            let terminating = pod.metadata.deletion_timestamp.is_some();
            let pod_spec = pod.spec.as_ref();
            groups.entry(ports).or_default().push(Endpoint {
                addresses: vec![ip],
                conditions: Some(EndpointConditions {
                    ready: Some(publish_not_ready || (ready && !terminating)),
                    serving: Some(ready),
                    terminating: Some(terminating),
                }),
                hostname: pod_spec.and_then(|s| {
                    (s.subdomain.as_deref() == service.metadata.name.as_deref())
                        .then(|| s.hostname.clone())
                        .flatten()
                }),
                node_name: pod_spec.and_then(|s| s.node_name.clone()),
                target_ref: Some(ObjectReference {
                    kind: Some("Pod".into()),
                    namespace: pod.metadata.namespace.clone(),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        let mut out = Vec::new();
        for (ports, mut endpoints) in groups {
            endpoints.sort_by(|a, b| a.addresses.cmp(&b.addresses));
            for chunk in endpoints.chunks(MAX_ENDPOINTS_PER_SLICE) {
                out.push((ports.clone(), chunk.to_vec()));
            }
        }
        if out.is_empty() {
            // A service with no endpoints still has one placeholder slice (no ports), as upstream.
            out.push((Vec::new(), Vec::new()));
        }
        out
    }
}

fn slice_ports(ports: &PortKey) -> Option<Vec<EndpointPort>> {
    Some(
        ports
            .iter()
            .map(|(name, port, protocol)| EndpointPort {
                name: Some(name.clone()),
                port: Some(*port),
                protocol: Some(protocol.clone()),
                app_protocol: None,
            })
            .collect(),
    )
}

fn address_type(endpoints: &[Endpoint], service: &Service) -> String {
    let v6 = endpoints
        .first()
        .and_then(|e| e.addresses.first())
        .map(|a| a.contains(':'))
        .unwrap_or_else(|| {
            service
                .spec
                .as_ref()
                .and_then(|s| s.ip_families.as_ref())
                .and_then(|f| f.first())
                .is_some_and(|f| f == "IPv6")
        });
    if v6 { "IPv6" } else { "IPv4" }.to_string()
}

impl Reconciler for SliceController {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let (namespace, name) = split_key(key);
        let namespace = namespace.unwrap_or_default();
        // A deleted Service's slices go with it (the garbage collector, by owner reference).
        let Some(service) = self.services.get(key) else {
            return Ok(Action::Done);
        };
        if service
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .is_none()
        {
            return Ok(Action::Done);
        }
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
        let mut labels = service.metadata.labels.clone().unwrap_or_default();
        labels.insert(SERVICE_NAME_LABEL.into(), name.to_string());
        labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
        let owner = OwnerReference {
            api_version: "v1".into(),
            kind: "Service".into(),
            name: name.to_string(),
            uid: service.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let desired = self.desired(&service);
        let existing = self.existing(namespace, name);
        for (i, (ports, endpoints)) in desired.iter().enumerate() {
            let want_ports = if endpoints.is_empty() && ports.is_empty() {
                None
            } else {
                slice_ports(ports)
            };
            let addr_type = address_type(endpoints, &service);
            match existing.get(i) {
                Some(cur)
                    if cur.endpoints == *endpoints
                        && cur.ports == want_ports
                        && cur.address_type == addr_type
                        && cur.metadata.labels.as_ref() == Some(&labels) =>
                {
                    continue;
                }
                Some(cur) => {
                    let mut updated = (**cur).clone();
                    updated.endpoints = endpoints.clone();
                    updated.ports = want_ports;
                    updated.address_type = addr_type;
                    updated.metadata.labels = Some(labels.clone());
                    let slice_name = cur.metadata.name.clone().unwrap_or_default();
                    match api
                        .replace(&slice_name, &PostParams::default(), &updated)
                        .await
                    {
                        Ok(_) => {}
                        Err(e) if is_not_found(&e) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                None => {
                    let slice = EndpointSlice {
                        metadata: ObjectMeta {
                            generate_name: Some(format!("{name}-")),
                            namespace: Some(namespace.to_string()),
                            labels: Some(labels.clone()),
                            owner_references: Some(vec![owner.clone()]),
                            ..Default::default()
                        },
                        address_type: addr_type,
                        endpoints: endpoints.clone(),
                        ports: want_ports,
                    };
                    match api.create(&PostParams::default(), &slice).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.code == 403 && s.reason == "Forbidden" => {
                            return Ok(Action::Done);
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        for extra in existing.iter().skip(desired.len()) {
            let slice_name = extra.metadata.name.clone().unwrap_or_default();
            match api.delete(&slice_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Action::Done)
    }
}
