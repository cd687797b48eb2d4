//! The RBAC authorizer over an [`RbacCache`]: upstream's `RBACAuthorizer` (Authorize, RulesFor)
//! and the `system:masters` privileged-group authorizer that runs before it.

use std::sync::Arc;

use super::cache::{RbacCache, aggregate_errors};
use super::node_graph::NodeGraph;
use super::rule::{NonResourceRule, PolicyRule, ResourceRule};
use crate::auth::{Attributes, Decision, UserInfo};

/// The group that may do anything (upstream `user.SystemPrivilegedGroup`).
pub const SYSTEM_MASTERS: &str = "system:masters";

/// Upstream's privileged-group authorizer: members of `system:masters` are allowed everything
/// (with an empty reason, as upstream); everyone else gets no opinion.
pub fn privileged_group_decision(attrs: &Attributes) -> Decision {
    if is_privileged(&attrs.user) {
        Decision::Allow(String::new())
    } else {
        Decision::NoOpinion(String::new())
    }
}

/// True for a member of `system:masters` (upstream `EscalationAllowed` too).
pub fn is_privileged(user: &UserInfo) -> bool {
    user.groups.iter().any(|g| g == SYSTEM_MASTERS)
}

/// What SelfSubjectRulesReview reports (`authorization/v1.SubjectRulesReviewStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesReview {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    pub incomplete: bool,
    /// Role resolution errors (a binding naming a missing role), `evaluationError` upstream.
    pub evaluation_error: Option<String>,
}

/// Authorizes requests against the RBAC objects of its cache, after the Node authorizer over
/// its graph.
#[derive(Clone, Debug, Default)]
pub struct RbacAuthorizer {
    cache: Arc<RbacCache>,
    node_graph: Arc<NodeGraph>,
}

impl RbacAuthorizer {
    /// An authorizer over `cache`, with an empty Node authorizer graph.
    pub fn new(cache: Arc<RbacCache>) -> Self {
        RbacAuthorizer {
            cache,
            node_graph: Arc::default(),
        }
    }

    /// The same, with the Node authorizer reading `graph`.
    pub fn with_node_graph(self, graph: Arc<NodeGraph>) -> Self {
        RbacAuthorizer {
            node_graph: graph,
            ..self
        }
    }

    /// The snapshot this authorizer reads; feed it from the watches.
    pub fn cache(&self) -> &Arc<RbacCache> {
        &self.cache
    }

    /// The Node authorizer's graph; feed it from the watches.
    pub fn node_graph(&self) -> &Arc<NodeGraph> {
        &self.node_graph
    }

    /// Upstream's authorizer chain: the privileged group, then Node, then RBAC.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        if let allow @ Decision::Allow(_) = privileged_group_decision(attrs) {
            return allow;
        }
        let node = super::node_decision(attrs, &self.node_graph);
        if let Decision::Allow(_) = node {
            return node;
        }
        match (self.authorize_rbac(attrs), node) {
            (Decision::NoOpinion(r), Decision::NoOpinion(n)) if r.is_empty() && !n.is_empty() => {
                Decision::NoOpinion(n)
            }
            (rbac, _) => rbac,
        }
    }

    /// RBAC alone: `Allow("RBAC: allowed by ClusterRoleBinding \"x\" of ClusterRole \"y\" to
    /// User \"z\"")`, or `NoOpinion` with an empty reason, or `"RBAC: <resolution errors>"`
    /// when a binding that applies names a missing role.
    pub fn authorize_rbac(&self, attrs: &Attributes) -> Decision {
        let inner = self.cache.read();
        let mut reason = None;
        let mut errors = Vec::new();
        inner.visit_rules(
            &attrs.user,
            &attrs.namespace,
            &mut |source, rule| {
                if rule.allows(attrs) {
                    reason = Some(format!("RBAC: allowed by {source}"));
                    false
                } else {
                    true
                }
            },
            &mut errors,
        );
        match reason {
            Some(r) => Decision::Allow(r),
            None if errors.is_empty() => Decision::NoOpinion(String::new()),
            None => Decision::NoOpinion(format!("RBAC: {}", aggregate_errors(&errors))),
        }
    }

    /// Every policy rule that applies to the user in `namespace` (cluster-wide rules included;
    /// an empty namespace means cluster bindings only), and role resolution errors.
    pub fn policy_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        self.cache.read().rules_for(user, namespace)
    }

    /// Upstream `RBACAuthorizer.RulesFor`: the rules split into resource and non-resource
    /// rules, and `incomplete` (always false for RBAC, as upstream).
    pub fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<ResourceRule>, Vec<NonResourceRule>, bool) {
        let review = self.rules_review(user, namespace);
        (
            review.resource_rules,
            review.non_resource_rules,
            review.incomplete,
        )
    }

    /// [`RbacAuthorizer::rules_for`] with the evaluation error, for SelfSubjectRulesReview.
    pub fn rules_review(&self, user: &UserInfo, namespace: &str) -> RulesReview {
        let (rules, errors) = self.policy_rules_for(user, namespace);
        let mut review = RulesReview::default();
        for rule in rules {
            if !rule.resources.is_empty() {
                review.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.clone(),
                    resources: rule.resources.clone(),
                    resource_names: rule.resource_names.clone(),
                });
            }
            if !rule.non_resource_urls.is_empty() {
                review.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                });
            }
        }
        if !errors.is_empty() {
            review.evaluation_error = Some(aggregate_errors(&errors));
        }
        review
    }
}
