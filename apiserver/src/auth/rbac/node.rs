//! Upstream's Node authorizer (`--authorization-mode=Node`), which runs before RBAC: a node's
//! credentials (`system:node:<name>` in `system:nodes`) may do what the `system:node` rules allow,
//! its Lease and CSINode only by its own name, and read the secrets, configmaps, PVCs, PVs,
//! ResourceClaims and VolumeAttachments (and create tokens for the service accounts) that the
//! pods bound to it need, as the [`NodeGraph`] finds them.

use super::bootstrap_rules::node_rules;
use super::node_graph::{GraphKind, NodeGraph};
use super::rule::{PolicyRule, go_quote};
use crate::auth::{Attributes, Decision, UserInfo};

/// The group every node's credentials carry.
pub const NODES_GROUP: &str = "system:nodes";
/// Prefix of a node's user name.
const NODE_USER_PREFIX: &str = "system:node:";

/// The node a user acts for: `system:node:<name>` in `system:nodes`.
pub fn node_name(user: &UserInfo) -> Option<&str> {
    node_identity(user).filter(|n| !n.is_empty())
}

/// Upstream `NodeIdentity`: the node name (possibly empty) of a user in `system:nodes` whose
/// name starts with `system:node:`.
fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

fn no(why: impl Into<String>) -> Decision {
    Decision::NoOpinion(why.into())
}

fn allow() -> Decision {
    Decision::Allow(String::new())
}

/// The Node authorizer's answer; `NoOpinion` for every other user.
pub fn node_decision(attrs: &Attributes, graph: &NodeGraph) -> Decision {
    let Some(node) = node_identity(&attrs.user) else {
        return no("");
    };
    if node.is_empty() {
        return no(format!(
            "unknown node for user {}",
            go_quote(&attrs.user.name)
        ));
    }
    if !attrs.is_resource_request {
        return no("");
    }
    let graph = Graph { node, graph, attrs };
    match (attrs.api_group.as_str(), attrs.resource.as_str()) {
        ("", "secrets") => graph.read_namespaced(GraphKind::Secret),
        ("", "configmaps") => graph.read_namespaced(GraphKind::ConfigMap),
        ("", "persistentvolumeclaims") if attrs.subresource == "status" => {
            graph.update_status(GraphKind::PersistentVolumeClaim)
        }
        ("", "persistentvolumeclaims") => graph.get(GraphKind::PersistentVolumeClaim),
        ("", "persistentvolumes") => graph.get(GraphKind::PersistentVolume),
        ("resource.k8s.io", "resourceclaims") => graph.get(GraphKind::ResourceClaim),
        ("storage.k8s.io", "volumeattachments") => graph.get(GraphKind::VolumeAttachment),
        ("", "serviceaccounts") => graph.create_token(),
        ("coordination.k8s.io", "leases") => lease(node, attrs),
        ("storage.k8s.io", "csinodes") => csinode(node, attrs),
        _ if allowed_by(&node_rules(), attrs) => allow(),
        _ => no(""),
    }
}

/// The objects a node reaches through its pods, with upstream's verb rules and reasons.
struct Graph<'a> {
    node: &'a str,
    graph: &'a NodeGraph,
    attrs: &'a Attributes,
}

impl Graph<'_> {
    /// Upstream `authorizeReadNamespacedObject`: get, or list / watch of one object by a
    /// `metadata.name` field selector.
    fn read_namespaced(&self, kind: GraphKind) -> Decision {
        if !matches!(self.attrs.verb.as_str(), "get" | "list" | "watch") {
            return no("can only read resources of this type");
        }
        if !self.attrs.subresource.is_empty() {
            return no("cannot read subresource");
        }
        if self.attrs.namespace.is_empty() {
            return no("can only read namespaced object of this type");
        }
        self.authorize(kind)
    }

    /// Upstream `authorizeGet`.
    fn get(&self, kind: GraphKind) -> Decision {
        if self.attrs.verb != "get" {
            return no("can only get individual resources of this type");
        }
        if !self.attrs.subresource.is_empty() {
            return no("cannot get subresource");
        }
        self.authorize(kind)
    }

    /// Upstream `authorizeStatusUpdate` (a PVC's status).
    fn update_status(&self, kind: GraphKind) -> Decision {
        if !matches!(self.attrs.verb.as_str(), "update" | "patch") {
            return no("can only get/update/patch this type");
        }
        if self.attrs.subresource != "status" {
            return no("can only update status subresource");
        }
        self.authorize(kind)
    }

    /// Upstream `authorizeCreateToken`: the token of a service account a pod bound to the node
    /// runs as.
    fn create_token(&self) -> Decision {
        if self.attrs.verb != "create" || self.attrs.name.is_empty() {
            return no("can only create tokens for individual service accounts");
        }
        if self.attrs.subresource != "token" {
            return no("can only create token subresource of serviceaccount");
        }
        self.path_decision(GraphKind::ServiceAccount)
    }

    fn authorize(&self, kind: GraphKind) -> Decision {
        if self.attrs.name.is_empty() {
            return no("No Object name found");
        }
        self.path_decision(kind)
    }

    fn path_decision(&self, kind: GraphKind) -> Decision {
        let a = self.attrs;
        if self.graph.has_path(self.node, kind, &a.namespace, &a.name) {
            allow()
        } else {
            no(format!(
                "no relationship found between node '{}' and this object",
                self.node
            ))
        }
    }
}

/// Upstream `authorizeLease`: its own Lease in `kube-node-lease` (any name on create, which
/// NodeRestriction checks).
fn lease(node: &str, attrs: &Attributes) -> Decision {
    if !matches!(
        attrs.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no("can only get, create, update, patch, or delete a node lease");
    }
    if attrs.namespace != "kube-node-lease" {
        return no("can only access leases in the \"kube-node-lease\" system namespace");
    }
    if attrs.verb != "create" && attrs.name != node {
        return no("can only access node lease with the same name as the requesting node");
    }
    allow()
}

/// Upstream `authorizeCSINode`: its own CSINode (any name on create, which NodeRestriction
/// checks).
fn csinode(node: &str, attrs: &Attributes) -> Decision {
    if !matches!(
        attrs.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no("can only get, create, update, patch, or delete a CSINode");
    }
    if !attrs.subresource.is_empty() {
        return no("cannot authorize CSINode subresources");
    }
    if attrs.verb != "create" && attrs.name != node {
        return no("can only access CSINode with the same name as the requesting node");
    }
    allow()
}

fn allowed_by(rules: &[PolicyRule], attrs: &Attributes) -> bool {
    rules.iter().any(|r| r.allows(attrs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::node_graph::GraphSource;
    use serde_json::json;

    fn node_attrs(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Attributes {
            user: UserInfo::new("system:node:n1", vec![NODES_GROUP.into()]),
            verb: verb.into(),
            is_resource_request: true,
            namespace: ns.into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: subresource.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn allowed(a: &Attributes) -> bool {
        allowed_in(&NodeGraph::new(), a)
    }

    fn allowed_in(g: &NodeGraph, a: &Attributes) -> bool {
        matches!(node_decision(a, g), Decision::Allow(_))
    }

    fn reason(g: &NodeGraph, a: &Attributes) -> String {
        match node_decision(a, g) {
            Decision::NoOpinion(r) => r,
            other => panic!("{a:?}: {other:?}"),
        }
    }

    const NO_RELATIONSHIP: &str = "no relationship found between node 'n1' and this object";

    /// n1 runs `ns/p` (secret `s`, configmap `c`, claim `claim`, service account `sa`,
    /// ResourceClaim `rc`); PV `pv` is bound to `claim` and names secret `pv-secret`;
    /// attachment `va` is on n1, `va2` on n2.
    fn graph() -> NodeGraph {
        let g = NodeGraph::new();
        g.apply(
            GraphSource::Pods,
            &json!({
                "metadata": {"namespace": "ns", "name": "p"},
                "spec": {
                    "nodeName": "n1",
                    "serviceAccountName": "sa",
                    "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "c"}}]}],
                    "volumes": [
                        {"name": "s", "secret": {"secretName": "s"}},
                        {"name": "d", "persistentVolumeClaim": {"claimName": "claim"}}
                    ],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": "rc"}]
                }
            }),
        );
        g.apply(
            GraphSource::PersistentVolumes,
            &json!({
                "metadata": {"name": "pv"},
                "spec": {
                    "claimRef": {"namespace": "ns", "name": "claim"},
                    "csi": {"driver": "d", "volumeHandle": "h",
                            "nodePublishSecretRef": {"name": "pv-secret", "namespace": "ns"}}
                }
            }),
        );
        for (va, node) in [("va", "n1"), ("va2", "n2")] {
            g.apply(
                GraphSource::VolumeAttachments,
                &json!({"metadata": {"name": va}, "spec": {"nodeName": node}}),
            );
        }
        g
    }

    #[test]
    fn a_node_may_do_what_the_node_rules_allow() {
        assert!(allowed(&node_attrs("get", "", "nodes", "", "n1")));
        assert!(allowed(&node_attrs("watch", "", "pods", "", "")));
        assert!(allowed(&node_attrs("patch", "", "pods/status", "ns", "p")));
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
        let g = NodeGraph::new();
        let lease = "coordination.k8s.io";
        let nl = "kube-node-lease";
        assert!(allowed(&node_attrs("update", lease, "leases", nl, "n1")));
        assert!(allowed(&node_attrs("create", lease, "leases", nl, "")));
        assert_eq!(
            reason(&g, &node_attrs("update", lease, "leases", nl, "n2")),
            "can only access node lease with the same name as the requesting node"
        );
        assert_eq!(
            reason(&g, &node_attrs("get", lease, "leases", "kube-system", "n1")),
            "can only access leases in the \"kube-node-lease\" system namespace"
        );
        assert_eq!(
            reason(&g, &node_attrs("list", lease, "leases", nl, "")),
            "can only get, create, update, patch, or delete a node lease"
        );
        let storage = "storage.k8s.io";
        assert!(allowed(&node_attrs("get", storage, "csinodes", "", "n1")));
        assert!(allowed(&node_attrs("create", storage, "csinodes", "", "")));
        assert_eq!(
            reason(&g, &node_attrs("get", storage, "csinodes", "", "n2")),
            "can only access CSINode with the same name as the requesting node"
        );
        assert_eq!(
            reason(&g, &node_attrs("list", storage, "csinodes", "", "")),
            "can only get, create, update, patch, or delete a CSINode"
        );
    }

    #[test]
    fn objects_a_bound_pod_needs_are_readable_and_others_are_not() {
        let g = graph();
        for (resource, name) in [
            ("secrets", "s"),
            ("secrets", "pv-secret"),
            ("configmaps", "c"),
            ("persistentvolumeclaims", "claim"),
        ] {
            assert!(allowed_in(&g, &node_attrs("get", "", resource, "ns", name)));
        }
        assert!(allowed_in(
            &g,
            &node_attrs("get", "", "persistentvolumes", "", "pv")
        ));
        let rc = node_attrs("get", "resource.k8s.io", "resourceclaims", "ns", "rc");
        assert!(allowed_in(&g, &rc));
        let va = |name: &str| node_attrs("get", "storage.k8s.io", "volumeattachments", "", name);
        assert!(allowed_in(&g, &va("va")));
        assert_eq!(reason(&g, &va("va2")), NO_RELATIONSHIP);
        for (resource, ns, name) in [
            ("secrets", "ns", "other"),
            ("secrets", "elsewhere", "s"),
            ("configmaps", "ns", "s"),
            ("persistentvolumeclaims", "ns", "other"),
            ("persistentvolumes", "", "other"),
        ] {
            assert_eq!(
                reason(&g, &node_attrs("get", "", resource, ns, name)),
                NO_RELATIONSHIP,
                "{resource} {ns}/{name}"
            );
        }
        // Another node reaches none of it.
        let mut n2 = node_attrs("get", "", "secrets", "ns", "s");
        n2.user = UserInfo::new("system:node:n2", vec![NODES_GROUP.into()]);
        assert_eq!(
            reason(&g, &n2),
            "no relationship found between node 'n2' and this object"
        );
    }

    #[test]
    fn verbs_and_reasons_follow_upstream() {
        let g = graph();
        // Secrets and configmaps: get, or list / watch of one name (a metadata.name selector).
        assert!(allowed_in(
            &g,
            &node_attrs("list", "", "secrets", "ns", "s")
        ));
        assert!(allowed_in(
            &g,
            &node_attrs("watch", "", "configmaps", "ns", "c")
        ));
        for (a, why) in [
            (
                node_attrs("list", "", "secrets", "ns", ""),
                "No Object name found",
            ),
            (
                node_attrs("update", "", "secrets", "ns", "s"),
                "can only read resources of this type",
            ),
            (
                node_attrs("get", "", "secrets/x", "ns", "s"),
                "cannot read subresource",
            ),
            (
                node_attrs("list", "", "configmaps", "", ""),
                "can only read namespaced object of this type",
            ),
            (
                node_attrs("list", "", "persistentvolumeclaims", "ns", "claim"),
                "can only get individual resources of this type",
            ),
            (
                node_attrs("get", "", "persistentvolumes/status", "", "pv"),
                "cannot get subresource",
            ),
            (
                node_attrs("get", "", "persistentvolumeclaims/status", "ns", "claim"),
                "can only get/update/patch this type",
            ),
            (
                node_attrs("get", "", "serviceaccounts", "ns", "sa"),
                "can only create tokens for individual service accounts",
            ),
            (
                node_attrs("create", "", "serviceaccounts/token", "ns", ""),
                "can only create tokens for individual service accounts",
            ),
            (
                node_attrs("create", "", "serviceaccounts", "ns", "sa"),
                "can only create token subresource of serviceaccount",
            ),
            (
                node_attrs("create", "", "serviceaccounts/token", "ns", "default"),
                NO_RELATIONSHIP,
            ),
        ] {
            assert_eq!(reason(&g, &a), why, "{a:?}");
        }
        let status = node_attrs("patch", "", "persistentvolumeclaims/status", "ns", "claim");
        assert!(allowed_in(&g, &status));
        let token = node_attrs("create", "", "serviceaccounts/token", "ns", "sa");
        assert!(allowed_in(&g, &token));
    }

    #[test]
    fn other_users_get_no_opinion_and_a_nameless_node_is_unknown() {
        let g = graph();
        let mut other = node_attrs("get", "", "secrets", "ns", "s");
        other.user = UserInfo::new("system:node:n1", vec![]);
        assert_eq!(
            node_decision(&other, &g),
            Decision::NoOpinion(String::new())
        );
        other.user = UserInfo::new("alice", vec![NODES_GROUP.into()]);
        assert_eq!(
            node_decision(&other, &g),
            Decision::NoOpinion(String::new())
        );
        other.user = UserInfo::new("system:node:", vec![NODES_GROUP.into()]);
        assert_eq!(reason(&g, &other), "unknown node for user \"system:node:\"");
    }
}
