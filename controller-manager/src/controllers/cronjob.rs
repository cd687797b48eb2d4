//! The cronjob controller (upstream pkg/controller/cronjob): Jobs on a schedule. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
