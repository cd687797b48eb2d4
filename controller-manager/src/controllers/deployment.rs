//! The deployment controller (upstream pkg/controller/deployment): rollouts through ReplicaSets. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
