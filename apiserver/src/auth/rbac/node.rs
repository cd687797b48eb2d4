//! Upstream's Node authorizer (`--authorization-mode=Node`), which runs before RBAC: a node's
//! credentials (`system:node:<name>` in `system:nodes`) may do what the `system:node` rules allow,
//! its Lease and CSINode only by its own name. Objects upstream reaches through its graph of
//! pods (secrets, configmaps, volumes, service-account tokens) are refused here: k1s keeps no
//! such graph yet, and refusing is the safe side of it.

use super::bootstrap_rules::node_rules;
use super::rule::PolicyRule;
use crate::auth::{Attributes, Decision, UserInfo};

/// The group every node's credentials carry.
pub const NODES_GROUP: &str = "system:nodes";

/// The node a user acts for: `system:node:<name>` in `system:nodes`.
pub fn node_name(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix("system:node:")?;
    (!name.is_empty() && user.groups.iter().any(|g| g == NODES_GROUP)).then_some(name)
}

/// The Node authorizer's answer; `NoOpinion` for every other user.
pub fn node_decision(attrs: &Attributes) -> Decision {
    let Some(node) = node_name(&attrs.user) else {
        return Decision::NoOpinion(String::new());
    };
    if !attrs.is_resource_request {
        return Decision::NoOpinion(String::new());
    }
    let no = |why: String| Decision::NoOpinion(why);
    match (attrs.api_group.as_str(), attrs.resource.as_str()) {
        (
            "",
            "secrets"
            | "configmaps"
            | "persistentvolumeclaims"
            | "persistentvolumes"
            | "serviceaccounts",
        )
        | ("resource.k8s.io", "resourceclaims")
        | ("storage.k8s.io", "volumeattachments") => no(format!(
            "no relationship found between node '{node}' and this object"
        )),
        ("coordination.k8s.io", "leases") => {
            let own = attrs.namespace == "kube-node-lease"
                && (attrs.name == node || (attrs.verb == "create" && attrs.name.is_empty()));
            let verb_ok = matches!(
                attrs.verb.as_str(),
                "get" | "create" | "update" | "patch" | "delete"
            );
            if own && verb_ok && attrs.subresource.is_empty() {
                Decision::Allow(String::new())
            } else {
                no("can only access node lease with the same name as the requesting node".into())
            }
        }
        ("storage.k8s.io", "csinodes") => {
            let own = attrs.name == node || (attrs.verb == "create" && attrs.name.is_empty());
            if own && attrs.subresource.is_empty() && allowed_by(&node_rules(), attrs) {
                Decision::Allow(String::new())
            } else {
                no("can only access CSINode with the same name as the requesting node".into())
            }
        }
        _ if allowed_by(&node_rules(), attrs) => Decision::Allow(String::new()),
        _ => Decision::NoOpinion(String::new()),
    }
}

fn allowed_by(rules: &[PolicyRule], attrs: &Attributes) -> bool {
    rules.iter().any(|r| r.allows(attrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_attrs(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            user: UserInfo::new("system:node:n1", vec![NODES_GROUP.into()]),
            verb: verb.into(),
            is_resource_request: true,
            namespace: ns.into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn allowed(a: &Attributes) -> bool {
        matches!(node_decision(a), Decision::Allow(_))
    }

    #[test]
    fn a_node_may_do_what_the_node_rules_allow() {
        assert!(allowed(&node_attrs("get", "", "nodes", "", "n1")));
        assert!(allowed(&node_attrs("watch", "", "pods", "", "")));
        let mut status = node_attrs("patch", "", "pods", "ns", "p");
        status.subresource = "status".into();
        assert!(allowed(&status));
        assert!(allowed(&node_attrs("create", "", "events", "ns", "")));
        assert!(!allowed(&node_attrs(
            "create",
            "apps",
            "deployments",
            "ns",
            ""
        )));
        assert!(!allowed(&node_attrs("delete", "", "nodes", "", "n1")));
    }

    #[test]
    fn leases_and_csinodes_by_their_own_name_only() {
        let lease = "coordination.k8s.io";
        assert!(allowed(&node_attrs(
            "update",
            lease,
            "leases",
            "kube-node-lease",
            "n1"
        )));
        assert!(allowed(&node_attrs(
            "create",
            lease,
            "leases",
            "kube-node-lease",
            ""
        )));
        assert!(!allowed(&node_attrs(
            "update",
            lease,
            "leases",
            "kube-node-lease",
            "n2"
        )));
        assert!(!allowed(&node_attrs(
            "get",
            lease,
            "leases",
            "kube-system",
            "n1"
        )));
        assert!(!allowed(&node_attrs(
            "list",
            lease,
            "leases",
            "kube-node-lease",
            ""
        )));
        assert!(allowed(&node_attrs(
            "get",
            "storage.k8s.io",
            "csinodes",
            "",
            "n1"
        )));
        assert!(!allowed(&node_attrs(
            "get",
            "storage.k8s.io",
            "csinodes",
            "",
            "n2"
        )));
    }

    #[test]
    fn graph_objects_are_refused_and_other_users_get_no_opinion() {
        assert!(!allowed(&node_attrs("get", "", "secrets", "ns", "s")));
        assert!(!allowed(&node_attrs("get", "", "configmaps", "ns", "c")));
        let mut other = node_attrs("get", "", "nodes", "", "n1");
        other.user = UserInfo::new("system:node:n1", vec![]);
        assert_eq!(node_decision(&other), Decision::NoOpinion(String::new()));
        other.user = UserInfo::new("alice", vec![NODES_GROUP.into()]);
        assert_eq!(node_decision(&other), Decision::NoOpinion(String::new()));
    }
}
