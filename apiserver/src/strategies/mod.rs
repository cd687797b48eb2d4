//! Per-kind strategies: where a kind differs from the generic registry (defaults, validation,
//! status on create, selectable fields). Kinds not listed use `DefaultStrategy`.

mod apps;
mod core;

use k1s_apimachinery::catalog::ResourceInfo;

use crate::registry::{DefaultStrategy, Strategy};

/// The strategy of a resource.
pub fn for_resource(info: &ResourceInfo) -> &'static dyn Strategy {
    match (info.group, info.resource) {
        ("", "namespaces") => &core::Namespaces,
        ("", "pods") => &core::Pods,
        ("", "services") => &core::Services,
        ("", "secrets") => &core::Secrets,
        ("", "events") => &core::Events,
        ("", "nodes") => &core::Nodes,
        ("", "replicationcontrollers") => &core::ReplicationControllers,
        ("apps", "deployments") => &apps::Deployments,
        ("apps", "replicasets") => &apps::ReplicaSets,
        ("apps", "statefulsets") => &apps::StatefulSets,
        ("apps", "daemonsets") => &apps::DaemonSets,
        ("batch", "jobs") => &apps::Jobs,
        ("certificates.k8s.io", "certificatesigningrequests") => &Csrs,
        ("events.k8s.io", "events") => &core::Events,
        _ => &DefaultStrategy,
    }
}

struct Csrs;
impl Strategy for Csrs {
    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }
}
