//! The endpointslice-mirroring controller (upstream `pkg/controller/endpointslicemirroring`):
//! the Endpoints of a Service without a selector (written by hand or by another controller)
//! are mirrored into EndpointSlices managed by `endpointslicemirroring-controller.k8s.io`,
//! labelled `kubernetes.io/service-name`, owned by the Endpoints. One slice per address type
//! and port set, at most 1,000 addresses mirrored per subset (the rest skipped with a
//! `TooManyAddressesToMirror` event; invalid IPs with `InvalidIPAddress`). Endpoints labelled
//! `endpointslice.kubernetes.io/skip-mirror: "true"` or carrying a leader-election record are
//! not mirrored; the mirrored slices go when the Endpoints or the Service goes, or when the
//! Service gets a selector.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_not_found};
use crate::controllers::endpointslice::{MANAGED_BY_LABEL, SERVICE_NAME_LABEL};
use crate::events::{EventRecorder, WARNING, object_reference};
use crate::informer::{Delta, Store, key_of, split_key};

pub const MANAGED_BY: &str = "endpointslicemirroring-controller.k8s.io";
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
/// Endpoints used as a leader-election lock are never mirrored.
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
const LAST_CHANGE_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Upstream's `--mirroring-max-endpoints-per-subset` default.
pub const MAX_ENDPOINTS_PER_SUBSET: usize = 1000;

struct Mirroring {
    client: Client,
    endpoints: Arc<Store<Endpoints>>,
    services: Arc<Store<Service>>,
    slices: Arc<Store<EndpointSlice>>,
    recorder: EventRecorder,
}

/// Whether an Endpoints object is to be mirrored at all (its Service is checked separately).
fn should_mirror(ep: &Endpoints) -> bool {
    let skip = ep
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SKIP_MIRROR_LABEL))
        .is_some_and(|v| v == "true");
    let leader = ep
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
    !skip && !leader
}

fn has_selector(svc: &Service) -> bool {
    svc.spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .is_some()
}

fn is_mirrored(slice: &EndpointSlice) -> bool {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .is_some_and(|v| v == MANAGED_BY)
}

pub fn start(ctx: ControllerContext) {
    let queue = ctx.queue();
    let endpoints = ctx.factory.informer::<Endpoints>();
    let services = ctx.factory.informer::<Service>();
    let slices = ctx.factory.informer::<EndpointSlice>();
    {
        let queue = queue.clone();
        endpoints.add_handler(move |d: &Delta<Endpoints>| {
            let wanted = match d {
                Delta::Updated { old, new } => should_mirror(old) || should_mirror(new),
                Delta::Added(ep) | Delta::Deleted(ep) => should_mirror(ep),
            };
            if wanted {
                queue.add(key_of(d.object().as_ref()));
            }
        });
    }
    {
        let queue = queue.clone();
        services.add_handler(move |d: &Delta<Service>| {
            let wanted = match d {
                Delta::Updated { old, new } => has_selector(old) != has_selector(new),
                Delta::Added(s) | Delta::Deleted(s) => !has_selector(s),
            };
            if wanted {
                queue.add(key_of(d.object().as_ref()));
            }
        });
    }
    {
        let queue = queue.clone();
        // A mirrored slice changed or deleted by someone else is put back.
        slices.add_handler(move |d: &Delta<EndpointSlice>| {
            let s = d.object();
            let service = s
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SERVICE_NAME_LABEL));
            if let (true, Some(ns), Some(svc)) = (is_mirrored(s), &s.metadata.namespace, service) {
                queue.add(format!("{ns}/{svc}"));
            }
        });
    }
    let reconciler = Arc::new(Mirroring {
        client: ctx.client.clone(),
        endpoints: endpoints.store(),
        services: services.store(),
        slices: slices.store(),
        recorder: ctx.recorder.clone(),
    });
    let workers = ctx.workers("mirroring-service-endpoint", 5);
    ctx.run_workers(reconciler, queue, workers);
}

/// One desired slice: address type, ports, endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    pub address_type: String,
    pub ports: Vec<EndpointPort>,
    pub endpoints: Vec<Endpoint>,
}

/// What a mirroring skipped, for the events.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    pub invalid: usize,
    pub too_many: usize,
}

/// An Endpoints address as a slice endpoint, with its address type (none for an invalid IP).
fn to_endpoint(a: &EndpointAddress, ready: bool) -> Option<(Endpoint, &'static str)> {
    let ip: IpAddr = a.ip.trim().parse().ok()?;
    let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    Some((
        Endpoint {
            // Re-rendered, as upstream, in case it was written irregularly.
            addresses: vec![ip.to_string()],
            conditions: Some(EndpointConditions {
                ready: Some(ready),
                ..Default::default()
            }),
            hostname: a.hostname.clone().filter(|h| !h.is_empty()),
            node_name: a.node_name.clone(),
            target_ref: a.target_ref.clone(),
            ..Default::default()
        },
        family,
    ))
}

/// The slices an Endpoints object mirrors to (upstream's desiredCalc): subsets with the same
/// ports and address type share a slice; at most `max` addresses per subset.
pub fn desired(ep: &Endpoints, max: usize) -> (Vec<Desired>, Skipped) {
    let mut groups: BTreeMap<(String, String), Desired> = BTreeMap::new();
    let mut skipped = Skipped::default();
    for subset in ep.subsets.iter().flatten() {
        let ports: Vec<EndpointPort> = subset
            .ports
            .iter()
            .flatten()
            .map(|p| EndpointPort {
                name: Some(p.name.clone().unwrap_or_default()),
                port: Some(p.port),
                protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: p.app_protocol.clone(),
            })
            .collect();
        let ports_key = serde_json::to_string(&ports).unwrap_or_default();
        let ready = subset.addresses.iter().flatten().map(|a| (a, true));
        let not_ready = subset
            .not_ready_addresses
            .iter()
            .flatten()
            .map(|a| (a, false));
        let mut added = 0;
        for (a, is_ready) in ready.chain(not_ready) {
            if added >= max {
                skipped.too_many += 1;
                continue;
            }
            let Some((endpoint, family)) = to_endpoint(a, is_ready) else {
                skipped.invalid += 1;
                continue;
            };
            added += 1;
            let group = groups
                .entry((family.to_string(), ports_key.clone()))
                .or_insert_with(|| Desired {
                    address_type: family.to_string(),
                    ports: ports.clone(),
                    endpoints: Vec::new(),
                });
            if !group
                .endpoints
                .iter()
                .any(|e| e.addresses == endpoint.addresses)
            {
                group.endpoints.push(endpoint);
            }
        }
    }
    let mut out: Vec<Desired> = groups.into_values().collect();
    for d in &mut out {
        d.endpoints.truncate(max);
    }
    (out, skipped)
}

/// The labels and annotations a mirrored slice carries: the Endpoints' own, with the
/// service-name and managed-by labels set and the trigger-time / last-applied annotations
/// left out.
fn slice_meta(ep: &Endpoints, name: &str) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut labels = ep.metadata.labels.clone().unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.into(), name.to_string());
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    let mut annotations = ep.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(LAST_CHANGE_TRIGGER_TIME);
    annotations.remove(LAST_APPLIED);
    (labels, annotations)
}

impl Mirroring {
    /// The slices mirrored for `namespace/name`, by name.
    fn mirrored(&self, namespace: &str, name: &str) -> Vec<Arc<EndpointSlice>> {
        let mut out: Vec<_> = self
            .slices
            .list_namespace(namespace)
            .into_iter()
            .filter(|s| {
                is_mirrored(s)
                    && s.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(SERVICE_NAME_LABEL))
                        .is_some_and(|v| v == name)
            })
            .collect();
        out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        out
    }

    async fn delete_all(
        &self,
        api: &Api<EndpointSlice>,
        slices: &[Arc<EndpointSlice>],
    ) -> Result<(), Error> {
        for s in slices {
            let name = s.metadata.name.clone().unwrap_or_default();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

impl Reconciler for Mirroring {
    async fn reconcile(&self, key: &str) -> Result<Action, Error> {
        let (namespace, name) = split_key(key);
        let namespace = namespace.unwrap_or_default();
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
        let existing = self.mirrored(namespace, name);
        let ep = self.endpoints.get(key).filter(|ep| should_mirror(ep));
        let service = self.services.get(key).filter(|s| !has_selector(s));
        let (Some(ep), Some(_)) = (ep, service) else {
            self.delete_all(&api, &existing).await?;
            return Ok(Action::Done);
        };
        let (want, skipped) = desired(&ep, MAX_ENDPOINTS_PER_SUBSET);
        if skipped.invalid > 0 {
            self.recorder.event(
                &object_reference(ep.as_ref()),
                WARNING,
                "InvalidIPAddress",
                &format!(
                    "Skipped {} invalid IP addresses when mirroring to EndpointSlices",
                    skipped.invalid
                ),
            );
        }
        if skipped.too_many > 0 {
            self.recorder.event(
                &object_reference(ep.as_ref()),
                WARNING,
                "TooManyAddressesToMirror",
                &format!(
                    "A max of {MAX_ENDPOINTS_PER_SUBSET} addresses can be mirrored to EndpointSlices per Endpoints subset. {} addresses were skipped",
                    skipped.too_many
                ),
            );
        }
        let (labels, annotations) = slice_meta(&ep, name);
        let annotations = (!annotations.is_empty()).then_some(annotations);
        let owner = OwnerReference {
            api_version: "v1".into(),
            kind: "Endpoints".into(),
            name: name.to_string(),
            uid: ep.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let being_deleted = ep.metadata.deletion_timestamp.is_some();
        for (i, d) in want.iter().enumerate() {
            let ports = Some(d.ports.clone());
            match existing.get(i) {
                Some(cur)
                    if cur.endpoints == d.endpoints
                        && cur.ports == ports
                        && cur.address_type == d.address_type
                        && cur.metadata.labels.as_ref() == Some(&labels)
                        && cur.metadata.annotations == annotations =>
                {
                    continue;
                }
                Some(cur) => {
                    let mut updated = (**cur).clone();
                    updated.endpoints = d.endpoints.clone();
                    updated.ports = ports;
                    updated.address_type = d.address_type.clone();
                    updated.metadata.labels = Some(labels.clone());
                    updated.metadata.annotations = annotations.clone();
                    updated.metadata.owner_references = Some(vec![owner.clone()]);
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
                // No new slices for Endpoints on their way out.
                None if being_deleted => {}
                None => {
                    let slice = EndpointSlice {
                        metadata: ObjectMeta {
                            generate_name: Some(format!("{name}-")),
                            namespace: Some(namespace.to_string()),
                            labels: Some(labels.clone()),
                            annotations: annotations.clone(),
                            owner_references: Some(vec![owner.clone()]),
                            ..Default::default()
                        },
                        address_type: d.address_type.clone(),
                        endpoints: d.endpoints.clone(),
                        ports,
                    };
                    match api.create(&PostParams::default(), &slice).await {
                        Ok(_) => {}
                        // The namespace is terminating: nothing more to mirror.
                        Err(kube::Error::Api(s)) if s.code == 403 && s.reason == "Forbidden" => {
                            return Ok(Action::Done);
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        let extra: Vec<_> = existing.iter().skip(want.len()).cloned().collect();
        self.delete_all(&api, &extra).await?;
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn endpoints(v: serde_json::Value) -> Endpoints {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn subsets_with_the_same_ports_share_a_slice() {
        let ep = endpoints(serde_json::json!({
            "metadata": {"name": "s", "namespace": "ns"},
            "subsets": [
                {"addresses": [{"ip": "10.0.0.1"}], "notReadyAddresses": [{"ip": "10.0.0.2"}],
                 "ports": [{"name": "http", "port": 80}]},
                {"addresses": [{"ip": "10.0.0.3"}, {"ip": "fd00::1"}],
                 "ports": [{"name": "http", "port": 80}]},
                {"addresses": [{"ip": "10.0.0.4"}], "ports": [{"port": 81, "protocol": "UDP"}]},
            ]
        }));
        let (want, skipped) = desired(&ep, MAX_ENDPOINTS_PER_SUBSET);
        assert_eq!(skipped, Skipped::default());
        let summary: Vec<(String, Vec<String>, Vec<bool>)> = want
            .iter()
            .map(|d| {
                (
                    format!("{} {}", d.address_type, d.ports[0].port.unwrap()),
                    d.endpoints.iter().map(|e| e.addresses[0].clone()).collect(),
                    d.endpoints
                        .iter()
                        .map(|e| e.conditions.as_ref().unwrap().ready.unwrap())
                        .collect(),
                )
            })
            .collect();
        let mut summary = summary;
        summary.sort();
        assert_eq!(
            summary,
            vec![
                (
                    "IPv4 80".into(),
                    vec!["10.0.0.1".into(), "10.0.0.2".into(), "10.0.0.3".into()],
                    vec![true, false, true]
                ),
                ("IPv4 81".into(), vec!["10.0.0.4".into()], vec![true]),
                ("IPv6 80".into(), vec!["fd00::1".into()], vec![true]),
            ]
        );
        let udp = want.iter().find(|d| d.ports[0].port == Some(81)).unwrap();
        assert_eq!(udp.ports[0].protocol.as_deref(), Some("UDP"));
        assert_eq!(udp.ports[0].name.as_deref(), Some(""));
    }

    #[test]
    fn invalid_and_excess_addresses_are_skipped() {
        let ep = endpoints(serde_json::json!({
            "metadata": {"name": "s"},
            "subsets": [{"addresses": [{"ip": "not-an-ip"}, {"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"}],
                         "ports": [{"port": 80}]}]
        }));
        let (want, skipped) = desired(&ep, 2);
        assert_eq!(
            skipped,
            Skipped {
                invalid: 1,
                too_many: 1
            }
        );
        assert_eq!(want.len(), 1);
        assert_eq!(want[0].endpoints.len(), 2);
    }

    #[test]
    fn skip_mirror_and_leader_records() {
        let plain = endpoints(serde_json::json!({"metadata": {"name": "s"}}));
        let skip = endpoints(serde_json::json!({"metadata": {"name": "s",
            "labels": {SKIP_MIRROR_LABEL: "true"}}}));
        let not_skip = endpoints(serde_json::json!({"metadata": {"name": "s",
            "labels": {SKIP_MIRROR_LABEL: "false"}}}));
        let leader = endpoints(serde_json::json!({"metadata": {"name": "s",
            "annotations": {LEADER_ANNOTATION: "{}"}}}));
        assert!(should_mirror(&plain));
        assert!(!should_mirror(&skip));
        assert!(should_mirror(&not_skip));
        assert!(!should_mirror(&leader));
    }

    #[test]
    fn labels_and_annotations_are_copied_but_for_a_few() {
        let ep = endpoints(serde_json::json!({"metadata": {"name": "s",
            "labels": {"app": "x", SERVICE_NAME_LABEL: "other"},
            "annotations": {"note": "y", LAST_CHANGE_TRIGGER_TIME: "t", LAST_APPLIED: "{}"}}}));
        let (labels, annotations) = slice_meta(&ep, "s");
        assert_eq!(labels.get("app").map(String::as_str), Some("x"));
        assert_eq!(
            labels.get(SERVICE_NAME_LABEL).map(String::as_str),
            Some("s")
        );
        assert_eq!(
            labels.get(MANAGED_BY_LABEL).map(String::as_str),
            Some(MANAGED_BY)
        );
        assert_eq!(annotations.len(), 1);
        assert_eq!(annotations.get("note").map(String::as_str), Some("y"));
    }
}
