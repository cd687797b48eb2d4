//! The disruption controller (upstream pkg/controller/disruption): PodDisruptionBudget status. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
