//! The RBAC objects `kubeadm init` creates on top of the bootstrap policy (node bootstrap
//! tokens, CSR auto-approval, cluster-info for anonymous joiners, the kubeadm:cluster-admins
//! group). Created once at init, not reconciled, and not labelled as bootstrap defaults.

use serde_json::{Value, json};

use super::bootstrap::{group, user};
use super::cache::RBAC_GROUP;

/// The group of kubeadm's default node bootstrap tokens.
pub const NODE_BOOTSTRAP_TOKEN_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// The group `kubeadm init` gives its admin.conf client certificate.
pub const CLUSTER_ADMINS_GROUP: &str = "kubeadm:cluster-admins";

fn meta(name: &str, namespace: Option<&str>) -> Value {
    match namespace {
        Some(ns) => json!({ "name": name, "namespace": ns }),
        None => json!({ "name": name }),
    }
}

fn crb(name: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": meta(name, None),
        "roleRef": { "apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role },
        "subjects": subjects,
    })
}

fn get_named_configmap(
    namespace: &str,
    name: &str,
    configmap: &str,
    subjects: Vec<Value>,
) -> [Value; 2] {
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta(name, Some(namespace)),
            "rules": [{
                "apiGroups": [""], "resources": ["configmaps"],
                "resourceNames": [configmap], "verbs": ["get"],
            }],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta(name, Some(namespace)),
            "roleRef": { "apiGroup": RBAC_GROUP, "kind": "Role", "name": name },
            "subjects": subjects,
        }),
    ]
}

/// kubeadm's init-time RBAC objects (ClusterRoles first, then bindings; the Roles live in
/// kube-system and kube-public).
pub fn kubeadm_policy() -> Vec<Value> {
    let bootstrappers = || group(NODE_BOOTSTRAP_TOKEN_GROUP);
    let mut out = vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta("kubeadm:get-nodes", None),
            "rules": [{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["get"] }],
        }),
        crb(
            "kubeadm:get-nodes",
            "kubeadm:get-nodes",
            vec![bootstrappers()],
        ),
        crb(
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            vec![bootstrappers()],
        ),
        crb(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![bootstrappers()],
        ),
        crb(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![group("system:nodes")],
        ),
        crb(
            "kubeadm:cluster-admins",
            "cluster-admin",
            vec![group(CLUSTER_ADMINS_GROUP)],
        ),
    ];
    out.extend(get_named_configmap(
        "kube-public",
        "kubeadm:bootstrap-signer-clusterinfo",
        "cluster-info",
        vec![user("system:anonymous")],
    ));
    out.extend(get_named_configmap(
        "kube-system",
        "kubeadm:nodes-kubeadm-config",
        "kubeadm-config",
        vec![bootstrappers(), group("system:nodes")],
    ));
    out.extend(get_named_configmap(
        "kube-system",
        "kubeadm:kubelet-config",
        "kubelet-config",
        vec![bootstrappers(), group("system:nodes")],
    ));
    out
}
