//! The controllers, one module each, named as upstream's `pkg/controller/<name>`; `DESCRIPTORS`
//! lists them with upstream's `--controllers` names, aliases and service accounts.

pub mod bootstrap;
pub mod certificates;
pub mod clusterroleaggregation;
pub mod controller_utils;
pub mod cronjob;
pub mod daemon;
pub mod deployment;
pub mod disruption;
pub mod endpoint;
pub mod endpointslice;
pub mod endpointslicemirroring;
pub mod garbagecollector;
pub mod history;
pub mod job;
pub mod namespace;
pub mod nodelifecycle;
pub mod persistentvolume;
pub mod podautoscaler;
pub mod podgc;
pub mod pvcprotection;
pub mod pvprotection;
pub mod replicaset;
pub mod replication;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod service_pods;
pub mod serviceaccount;
pub mod servicecidrs;
pub mod statefulset;
pub mod ttlafterfinished;

use crate::ControllerContext;

/// One controller as `--controllers` knows it.
#[derive(Debug)]
pub struct ControllerDescriptor {
    /// Upstream's canonical name (`namespace-controller`).
    pub name: &'static str,
    /// Older names upstream still accepts, and the short forms (`namespace`).
    pub aliases: &'static [&'static str],
    /// The service account it acts as (`--use-service-account-credentials`); `None`: the
    /// controller-manager's own identity.
    pub service_account: Option<&'static str>,
    /// `source.component` of its events.
    pub event_source: &'static str,
    pub enabled_by_default: bool,
    /// Registers handlers on shared informers and starts workers.
    pub start: fn(ControllerContext),
}

/// Every controller k1s runs.
pub static DESCRIPTORS: &[ControllerDescriptor] = &[
    ControllerDescriptor {
        name: "namespace-controller",
        aliases: &["namespace"],
        service_account: Some("namespace-controller"),
        event_source: "namespace-controller",
        enabled_by_default: true,
        start: namespace::start,
    },
    ControllerDescriptor {
        name: "endpoints-controller",
        aliases: &["endpoint", "endpoints"],
        service_account: Some("endpoint-controller"),
        event_source: "endpoint-controller",
        enabled_by_default: true,
        start: endpoint::start,
    },
    ControllerDescriptor {
        name: "endpointslice-controller",
        aliases: &["endpointslice"],
        service_account: Some("endpointslice-controller"),
        event_source: "endpointslice-controller",
        enabled_by_default: true,
        start: endpointslice::start,
    },
    ControllerDescriptor {
        name: "endpointslice-mirroring-controller",
        aliases: &["endpointslicemirroring"],
        service_account: Some("endpointslicemirroring-controller"),
        event_source: "endpointslice-mirroring-controller",
        enabled_by_default: true,
        start: endpointslicemirroring::start,
    },
    ControllerDescriptor {
        name: "garbage-collector-controller",
        aliases: &["garbagecollector", "garbage-collector"],
        service_account: Some("generic-garbage-collector"),
        event_source: "garbage-collector-controller",
        enabled_by_default: true,
        start: garbagecollector::start,
    },
    ControllerDescriptor {
        name: "pod-garbage-collector-controller",
        aliases: &["podgc", "pod-garbage-collector"],
        service_account: Some("pod-garbage-collector"),
        event_source: "pod-garbage-collector",
        enabled_by_default: true,
        start: podgc::start,
    },
    ControllerDescriptor {
        name: "persistentvolume-binder-controller",
        aliases: &["persistentvolume-binder"],
        service_account: Some("persistent-volume-binder"),
        event_source: "persistentvolume-controller",
        enabled_by_default: true,
        start: persistentvolume::start,
    },
    ControllerDescriptor {
        name: "persistentvolumeclaim-protection-controller",
        aliases: &["pvc-protection"],
        service_account: Some("pvc-protection-controller"),
        event_source: "pvc-protection-controller",
        enabled_by_default: true,
        start: pvcprotection::start,
    },
    ControllerDescriptor {
        name: "persistentvolume-protection-controller",
        aliases: &["pv-protection"],
        service_account: Some("pv-protection-controller"),
        event_source: "pv-protection-controller",
        enabled_by_default: true,
        start: pvprotection::start,
    },
    ControllerDescriptor {
        name: "ttl-after-finished-controller",
        aliases: &["ttl-after-finished"],
        service_account: Some("ttl-after-finished-controller"),
        event_source: "ttl-after-finished-controller",
        enabled_by_default: true,
        start: ttlafterfinished::start,
    },
    ControllerDescriptor {
        name: "service-cidr-controller",
        aliases: &["service-cidr"],
        service_account: Some("service-cidrs-controller"),
        event_source: "service-cidrs-controller",
        enabled_by_default: true,
        start: servicecidrs::start,
    },
    ControllerDescriptor {
        name: "serviceaccount-controller",
        aliases: &["serviceaccount"],
        service_account: Some("service-account-controller"),
        event_source: "service-account-controller",
        enabled_by_default: true,
        start: serviceaccount::start,
    },
    ControllerDescriptor {
        name: "serviceaccount-token-controller",
        aliases: &["serviceaccount-token"],
        // Upstream runs it with the controller-manager's own (root) credentials.
        service_account: None,
        event_source: "serviceaccount-token-controller",
        enabled_by_default: true,
        start: serviceaccount::tokens::start,
    },
    ControllerDescriptor {
        name: "legacy-serviceaccount-token-cleaner-controller",
        aliases: &["legacy-service-account-token-cleaner"],
        service_account: Some("legacy-service-account-token-cleaner"),
        event_source: "legacy-service-account-token-cleaner",
        enabled_by_default: true,
        start: serviceaccount::legacy_cleaner::start,
    },
    ControllerDescriptor {
        name: "root-ca-certificate-publisher-controller",
        aliases: &["root-ca-cert-publisher", "root-ca-certificate-publisher"],
        service_account: Some("root-ca-cert-publisher"),
        event_source: "root-ca-cert-publisher",
        enabled_by_default: true,
        start: rootcacertpublisher::start,
    },
    ControllerDescriptor {
        name: "clusterrole-aggregation-controller",
        aliases: &["clusterrole-aggregation"],
        service_account: Some("clusterrole-aggregation-controller"),
        event_source: "clusterrole-aggregation-controller",
        enabled_by_default: true,
        start: clusterroleaggregation::start,
    },
    ControllerDescriptor {
        name: "resourcequota-controller",
        aliases: &["resourcequota"],
        service_account: Some("resourcequota-controller"),
        event_source: "resourcequota-controller",
        enabled_by_default: true,
        start: resourcequota::start,
    },
    ControllerDescriptor {
        name: "replicaset-controller",
        aliases: &["replicaset"],
        service_account: Some("replicaset-controller"),
        event_source: "replicaset-controller",
        enabled_by_default: true,
        start: replicaset::start,
    },
    ControllerDescriptor {
        name: "replicationcontroller-controller",
        aliases: &["replicationcontroller"],
        service_account: Some("replication-controller"),
        event_source: "replication-controller",
        enabled_by_default: true,
        start: replication::start,
    },
    ControllerDescriptor {
        name: "deployment-controller",
        aliases: &["deployment"],
        service_account: Some("deployment-controller"),
        event_source: "deployment-controller",
        enabled_by_default: true,
        start: deployment::start,
    },
    ControllerDescriptor {
        name: "statefulset-controller",
        aliases: &["statefulset"],
        service_account: Some("statefulset-controller"),
        event_source: "statefulset-controller",
        enabled_by_default: true,
        start: statefulset::start,
    },
    ControllerDescriptor {
        name: "daemonset-controller",
        aliases: &["daemonset"],
        service_account: Some("daemon-set-controller"),
        event_source: "daemonset-controller",
        enabled_by_default: true,
        start: daemon::start,
    },
    ControllerDescriptor {
        name: "job-controller",
        aliases: &["job"],
        service_account: Some("job-controller"),
        event_source: "job-controller",
        enabled_by_default: true,
        start: job::start,
    },
    ControllerDescriptor {
        name: "cronjob-controller",
        aliases: &["cronjob"],
        service_account: Some("cronjob-controller"),
        event_source: "cronjob-controller",
        enabled_by_default: true,
        start: cronjob::start,
    },
    ControllerDescriptor {
        name: "node-lifecycle-controller",
        aliases: &["nodelifecycle"],
        service_account: Some("node-controller"),
        event_source: "node-controller",
        enabled_by_default: true,
        start: nodelifecycle::start,
    },
    ControllerDescriptor {
        name: "horizontal-pod-autoscaler-controller",
        aliases: &["horizontalpodautoscaling"],
        service_account: Some("horizontal-pod-autoscaler"),
        event_source: "horizontal-pod-autoscaler",
        enabled_by_default: true,
        start: podautoscaler::start,
    },
    ControllerDescriptor {
        name: "disruption-controller",
        aliases: &["disruption"],
        service_account: Some("disruption-controller"),
        event_source: "controllermanager",
        enabled_by_default: true,
        start: disruption::start,
    },
    ControllerDescriptor {
        name: "certificatesigningrequest-approving-controller",
        aliases: &["csrapproving"],
        service_account: Some("certificate-controller"),
        event_source: "certificate-controller",
        enabled_by_default: true,
        start: certificates::approver::start,
    },
    ControllerDescriptor {
        name: "certificatesigningrequest-signing-controller",
        aliases: &["csrsigning"],
        service_account: Some("certificate-controller"),
        event_source: "certificate-controller",
        enabled_by_default: true,
        start: certificates::signer::start,
    },
    ControllerDescriptor {
        name: "certificatesigningrequest-cleaner-controller",
        aliases: &["csrcleaner"],
        service_account: Some("certificate-controller"),
        event_source: "certificate-controller",
        enabled_by_default: true,
        start: certificates::cleaner::start,
    },
    // Off by default upstream; kubeadm (and `k1s init`) turn them on.
    ControllerDescriptor {
        name: "bootstrap-signer-controller",
        aliases: &["bootstrapsigner"],
        service_account: Some("bootstrap-signer"),
        event_source: "bootstrap-signer",
        enabled_by_default: false,
        start: bootstrap::bootstrapsigner::start,
    },
    ControllerDescriptor {
        name: "token-cleaner-controller",
        aliases: &["tokencleaner"],
        service_account: Some("token-cleaner"),
        event_source: "token-cleaner",
        enabled_by_default: false,
        start: bootstrap::tokencleaner::start,
    },
];

/// The descriptor named `name` (canonical, alias, or canonical without `-controller`).
pub fn find(name: &str) -> Option<&'static ControllerDescriptor> {
    DESCRIPTORS.iter().find(|d| {
        d.name == name
            || d.aliases.contains(&name)
            || d.name.strip_suffix("-controller") == Some(name)
    })
}

/// Whether `labels` match a `metav1.LabelSelector` (upstream's LabelSelectorAsSelector: a
/// missing selector matches nothing, `{}` matches everything; an invalid one matches nothing).
pub fn selector_matches(
    selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    let Ok(value) = serde_json::to_value(selector) else {
        return false;
    };
    let Ok(parsed) = k1s_apimachinery::selector::LabelSelector::from_json(&value) else {
        return false;
    };
    let empty = std::collections::BTreeMap::new();
    parsed.matches(labels.unwrap_or(&empty))
}

/// A handler that enqueues a namespace's name when it appears or changes (for controllers
/// that keep something in every namespace).
pub fn enqueue_live_namespaces(
    queue: crate::workqueue::WorkQueue,
) -> impl Fn(&crate::informer::Delta<k8s_openapi::api::core::v1::Namespace>) + Send + Sync + 'static
{
    move |d| {
        if !matches!(d, crate::informer::Delta::Deleted(_)) {
            queue.add(d.object().metadata.name.clone().unwrap_or_default());
        }
    }
}

/// The namespace `name` from the cache, unless it is gone or terminating.
pub fn active_namespace(
    namespaces: &crate::informer::Store<k8s_openapi::api::core::v1::Namespace>,
    name: &str,
) -> Option<std::sync::Arc<k8s_openapi::api::core::v1::Namespace>> {
    namespaces.get(name).filter(|ns| !is_terminating(ns))
}

/// Whether a namespace is being deleted (controllers then leave it alone).
pub fn is_terminating(ns: &k8s_openapi::api::core::v1::Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_some()
        || ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating")
}
