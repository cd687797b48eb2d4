//! The statefulset controller (upstream pkg/controller/statefulset): ordered pods with stable identities. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
