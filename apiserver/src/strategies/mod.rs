//! Per-kind strategies: where a kind differs from the generic registry (defaults, validation,
//! status on create, selectable fields). Kinds not listed use `DefaultStrategy`.

mod apps;
mod batch;
mod cluster;
mod core;
mod events;
mod go_value;
mod job_rules;
pub(crate) mod networking;
mod other;
mod pod_spec;
mod pod_validation;
mod resources;
mod security_context;
pub(crate) mod service;
mod volumes;
mod warnings;

pub use other::SYSTEM_PRIORITY_CLASSES;

#[cfg(test)]
mod tests;

use k1s_apimachinery::catalog::ResourceInfo;

use crate::registry::{DefaultStrategy, Strategy};

/// The strategy of a resource.
pub fn for_resource(info: &ResourceInfo) -> &'static dyn Strategy {
    if k1s_apimachinery::catalog::is_custom(info) {
        return match crate::apiextensions::lookup(info) {
            Some(served) => served.strategy,
            None => &DefaultStrategy,
        };
    }
    match (info.group, info.resource) {
        ("", "namespaces") => &core::Namespaces,
        ("", "pods") => &core::Pods,
        ("", "services") => &service::Services,
        ("", "secrets") => &core::Secrets,
        ("", "events") => &core::Events,
        ("", "nodes") => &core::Nodes,
        ("", "replicationcontrollers") => &core::ReplicationControllers,
        ("", "configmaps") => &core::ConfigMaps,
        ("", "podtemplates") => &core::PodTemplates,
        ("", "endpoints") => &core::Endpoints,
        ("", "persistentvolumeclaims") => &core::PersistentVolumeClaims,
        ("", "persistentvolumes") => &core::PersistentVolumes,
        ("", "limitranges") => &core::LimitRanges,
        ("", "resourcequotas") => &resources::ResourceQuotas,
        ("", "serviceaccounts") => &core::ServiceAccounts,
        ("apps", "deployments") => &apps::Deployments,
        ("apps", "replicasets") => &apps::ReplicaSets,
        ("apps", "statefulsets") => &apps::StatefulSets,
        ("apps", "daemonsets") => &apps::DaemonSets,
        ("batch", "jobs") => &batch::Jobs,
        ("batch", "cronjobs") => &batch::CronJobs,
        ("certificates.k8s.io", "certificatesigningrequests") => &other::CertificateSigningRequests,
        ("scheduling.k8s.io", "priorityclasses") => &other::PriorityClasses,
        ("storage.k8s.io", "storageclasses") => &other::StorageClasses,
        ("storage.k8s.io", "csidrivers") => &other::CsiDrivers,
        ("networking.k8s.io", "networkpolicies") => &other::NetworkPolicies,
        ("networking.k8s.io", "ingressclasses") => &other::IngressClasses,
        ("networking.k8s.io", "servicecidrs") => &networking::ServiceCidrs,
        ("networking.k8s.io", "ipaddresses") => &networking::IpAddresses,
        ("rbac.authorization.k8s.io", "rolebindings") => &other::RoleBindings { namespaced: true },
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            &other::RoleBindings { namespaced: false }
        }
        ("rbac.authorization.k8s.io", "roles") => &other::Roles { namespaced: true },
        ("rbac.authorization.k8s.io", "clusterroles") => &other::Roles { namespaced: false },
        ("policy", "poddisruptionbudgets") => &other::PodDisruptionBudgets,
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            &other::WebhookConfigurations { mutating: false }
        }
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            &other::WebhookConfigurations { mutating: true }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            &other::AdmissionPolicies { binding: false }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            &other::AdmissionPolicies { binding: true }
        }
        ("discovery.k8s.io", "endpointslices") => &other::EndpointSlices,
        ("apiregistration.k8s.io", "apiservices") => &other::ApiServices,
        ("flowcontrol.apiserver.k8s.io", "flowschemas" | "prioritylevelconfigurations") => {
            &other::FlowControl
        }
        ("autoscaling", "horizontalpodautoscalers") => &other::HorizontalPodAutoscalers,
        ("events.k8s.io", "events") => &events::EventsV1,
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            &crate::apiextensions::crd::CustomResourceDefinitions
        }
        _ => &DefaultStrategy,
    }
}
