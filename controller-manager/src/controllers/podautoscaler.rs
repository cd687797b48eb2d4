//! The horizontal pod autoscaler (upstream pkg/controller/podautoscaler): scales from metrics.k8s.io. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
