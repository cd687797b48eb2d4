//! The replication controller (upstream `pkg/controller/replication`): ReplicationControllers run
//! on the replicaset controller's generic code; their selector is a plain label map, and their
//! pods' controller reference is of kind ReplicationController.

use k8s_openapi::api::core::v1::{PodTemplateSpec, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::ControllerContext;
use crate::controllers::replicaset::{ReplicaSetLike, start_generic};

impl ReplicaSetLike for ReplicationController {
    fn spec_replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }
    fn label_selector(&self) -> Option<LabelSelector> {
        // The API server defaults a missing selector to the template's labels.
        let labels = self.spec.as_ref()?.selector.clone()?;
        Some(LabelSelector {
            match_labels: Some(labels),
            match_expressions: None,
        })
    }
    fn pod_template(&self) -> Option<&PodTemplateSpec> {
        self.spec.as_ref()?.template.as_ref()
    }
    fn min_ready_seconds(&self) -> i32 {
        self.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }
}

pub fn start(ctx: ControllerContext) {
    start_generic::<ReplicationController>(ctx, "rc");
}
