//! The node lifecycle controller (upstream pkg/controller/nodelifecycle): Lease heartbeats, taints and evictions. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
