//! The Secrets and ConfigMaps a pod's spec names, as upstream's `VisitPodSecretNames` and
//! `VisitPodConfigmapNames` (pkg/api/v1/pod/util.go) find them: image pull secrets, every
//! container's `env` and `envFrom` (init, regular, ephemeral), and the volumes that name one.
//! Shared by the Node authorizer's graph, the legacy token cleaner and the simulated node.

use serde_json::Value;

fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v[key].as_array().into_iter().flatten()
}

fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| items(spec, list))
}

/// Calls `f` with each Secret name the pod spec references (repeats included).
pub fn visit_secret_names<'a>(spec: &'a Value, mut f: impl FnMut(&'a str)) {
    let mut add = |v: &'a Value| {
        if let Some(name) = v.as_str().filter(|n| !n.is_empty()) {
            f(name);
        }
    };
    for r in items(spec, "imagePullSecrets") {
        add(&r["name"]);
    }
    for c in containers(spec) {
        for from in items(c, "envFrom") {
            add(&from["secretRef"]["name"]);
        }
        for env in items(c, "env") {
            add(&env["valueFrom"]["secretKeyRef"]["name"]);
        }
    }
    for v in items(spec, "volumes") {
        add(&v["secret"]["secretName"]);
        add(&v["azureFile"]["secretName"]);
        add(&v["csi"]["nodePublishSecretRef"]["name"]);
        for source in [
            "cephfs",
            "cinder",
            "flexVolume",
            "rbd",
            "scaleIO",
            "iscsi",
            "storageos",
        ] {
            add(&v[source]["secretRef"]["name"]);
        }
        for p in items(&v["projected"], "sources") {
            add(&p["secret"]["name"]);
        }
    }
}

/// Calls `f` with each ConfigMap name the pod spec references (repeats included).
pub fn visit_config_map_names<'a>(spec: &'a Value, mut f: impl FnMut(&'a str)) {
    let mut add = |v: &'a Value| {
        if let Some(name) = v.as_str().filter(|n| !n.is_empty()) {
            f(name);
        }
    };
    for c in containers(spec) {
        for from in items(c, "envFrom") {
            add(&from["configMapRef"]["name"]);
        }
        for env in items(c, "env") {
            add(&env["valueFrom"]["configMapKeyRef"]["name"]);
        }
    }
    for v in items(spec, "volumes") {
        add(&v["configMap"]["name"]);
        for p in items(&v["projected"], "sources") {
            add(&p["configMap"]["name"]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_place_a_pod_names_one_is_visited() {
        let spec = json!({
            "imagePullSecrets": [{"name": "pull"}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
            "containers": [{"name": "c",
                "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "key", "key": "k"}}},
                        {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-key", "key": "k"}}}],
                "envFrom": [{"configMapRef": {"name": "cm-env"}}]}],
            "ephemeralContainers": [{"name": "e", "envFrom": [{"secretRef": {"name": "debug"}}]}],
            "volumes": [
                {"name": "a", "secret": {"secretName": "vol"}},
                {"name": "b", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
                {"name": "c", "rbd": {"secretRef": {"name": "rbd"}}},
                {"name": "d", "azureFile": {"secretName": "azure"}},
                {"name": "e", "configMap": {"name": "cm-vol"}},
                {"name": "f", "projected": {"sources": [
                    {"secret": {"name": "proj"}}, {"configMap": {"name": "cm-proj"}}]}}
            ]
        });
        let mut secrets = Vec::new();
        visit_secret_names(&spec, |n| secrets.push(n));
        assert_eq!(
            secrets,
            [
                "pull", "init-env", "key", "debug", "vol", "csi", "rbd", "azure", "proj"
            ]
        );
        let mut config_maps = Vec::new();
        visit_config_map_names(&spec, |n| config_maps.push(n));
        assert_eq!(config_maps, ["cm-env", "cm-key", "cm-vol", "cm-proj"]);
    }
}
