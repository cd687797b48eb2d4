//! The replicaset controller (upstream pkg/controller/replicaset): ReplicaSets and ReplicationControllers keep their pods. (Being written; starts nothing yet.)

use crate::ControllerContext;

pub fn start(_ctx: ControllerContext) {}
