//! The replication controller (upstream pkg/controller/replication): ReplicationControllers run on the replicaset controller's logic. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
