//! The job controller (upstream pkg/controller/job): pods run to completion. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
