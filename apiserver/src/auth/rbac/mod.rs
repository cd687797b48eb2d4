//! Role-based access control, as upstream's RBAC authorizer: an indexed in-memory snapshot of
//! the four RBAC kinds ([`RbacCache`], fed by the caller from watches), request authorization
//! with upstream's reasons ([`RbacAuthorizer::authorize`]), SelfSubjectRulesReview rules,
//! escalation prevention for RBAC writes, ClusterRole aggregation, and the bootstrap policy
//! with its reconciliation; before RBAC, the Node authorizer with its graph of what each node's
//! pods reference ([`NodeGraph`], fed from watches too). Pure logic: no HTTP, no storage.

mod aggregation;
mod authorizer;
mod bootstrap;
mod bootstrap_rules;
mod cache;
/// Upstream's `NewAggregate(errs).Error()` text, for other callers too.
pub(crate) use cache::aggregate_errors;
mod controller_roles;
mod escalation;
mod kubeadm;
mod node;
mod node_graph;
mod reconcile;
mod rule;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bootstrap;
#[cfg(test)]
mod tests_escalation;
#[cfg(test)]
mod tests_node_graph;

pub use aggregation::{aggregate, aggregation_updates};
pub use authorizer::{
    RbacAuthorizer, RulesReview, SYSTEM_MASTERS, is_privileged, privileged_group_decision,
};
pub use bootstrap::{
    AGGREGATE_TO, BOOTSTRAPPING_LABEL, bootstrap_policy, cluster_role_bindings, cluster_roles,
    namespace_role_bindings, namespace_roles,
};
pub use cache::{
    ALL_SERVICE_ACCOUNTS_GROUP, RBAC_GROUP, RbacCache, RbacCacheError, RbacKind, RoleRef,
    SERVICE_ACCOUNT_PREFIX, Subject, split_service_account, subject_groups,
};
pub use controller_roles::{CONTROLLER_ROLE_PREFIX, controller_role_bindings, controller_roles};
pub use escalation::{
    AGGREGATION_RULE_FORBIDDEN, breakdown_rule, compact_rules, covers, full_authority,
};
pub use kubeadm::{CLUSTER_ADMINS_GROUP, NODE_BOOTSTRAP_TOKEN_GROUP, kubeadm_policy};
pub use node::{NODES_GROUP, node_decision, node_name};
pub use node_graph::{GraphKind, GraphSource, NodeGraph};
pub use reconcile::{AUTOUPDATE_ANNOTATION, ReconcileAction, reconcile, reconcile_action};
pub use rule::{
    NonResourceRule, PolicyRule, ResourceRule, go_quote, go_quote_list, rules_of, rules_to_json,
};
