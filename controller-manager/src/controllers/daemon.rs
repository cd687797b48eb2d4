//! The daemonset controller (upstream pkg/controller/daemon): one pod per eligible node. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
