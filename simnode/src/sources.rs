//! The ConfigMaps and Secrets a pod needs before its containers start, looked up as the kubelet
//! does (the Node authorizer lets a node read what its pods reference): a missing source of a
//! volume keeps the pod's volumes unmounted (`FailedMount`), a missing source of a container's
//! environment keeps that container in `CreateContainerConfigError`. Optional sources are
//! skipped. The messages are the kubelet's.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret};
use kube::Api;

use crate::podstatus::Missing;

/// Whether the kubelet still sets the pod up: it has not run, or a container waits for its
/// configuration.
pub fn wanted(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    if !matches!(phase, Some("Running" | "Succeeded" | "Failed")) {
        return true;
    }
    status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .any(|s| {
            s.state
                .as_ref()
                .and_then(|st| st.waiting.as_ref())
                .and_then(|w| w.reason.as_deref())
                == Some("CreateContainerConfigError")
        })
}

/// A source's keys; `None` when it does not exist.
type Keys = Option<BTreeSet<String>>;

/// Looks sources up once each.
struct Lookup<'a> {
    client: &'a kube::Client,
    namespace: &'a str,
    seen: HashMap<(bool, String), Result<Keys, ()>>,
}

impl Lookup<'_> {
    /// The keys of a ConfigMap (`secret` false) or Secret; `Err` when it cannot be told.
    async fn keys(&mut self, secret: bool, name: &str) -> Result<Keys, ()> {
        let at = (secret, name.to_string());
        if let Some(known) = self.seen.get(&at) {
            return known.clone();
        }
        let found = if secret {
            let api: Api<Secret> = Api::namespaced(self.client.clone(), self.namespace);
            api.get_opt(name)
                .await
                .map(|s| s.map(|s| s.data.unwrap_or_default().into_keys().collect()))
        } else {
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), self.namespace);
            api.get_opt(name).await.map(|c| {
                c.map(|c| {
                    let data = c.data.unwrap_or_default().into_keys();
                    data.chain(c.binary_data.unwrap_or_default().into_keys())
                        .collect()
                })
            })
        };
        let known = found.map_err(|_| ());
        self.seen.insert(at, known.clone());
        known
    }

    /// Why a volume source cannot be projected: the object or one of its items is missing.
    async fn volume_problem(
        &mut self,
        secret: bool,
        name: &str,
        optional: Option<bool>,
        items: &[String],
    ) -> Option<String> {
        if optional == Some(true) {
            return None;
        }
        let kind = if secret { "secret" } else { "configmap" };
        match self.keys(secret, name).await {
            Err(()) => None,
            Ok(None) => Some(format!("{kind} {name:?} not found")),
            Ok(Some(keys)) => {
                let absent = items.iter().find(|k| !keys.contains(*k))?;
                Some(if secret {
                    format!("references non-existent secret key: {absent}")
                } else {
                    format!("configmap references non-existent config key: {absent}")
                })
            }
        }
    }

    /// Why a container's environment cannot be made.
    async fn env_problem(&mut self, c: &Container) -> Option<String> {
        let ns = self.namespace.to_string();
        for from in c.env_from.iter().flatten() {
            let (secret, name, optional) = match (&from.config_map_ref, &from.secret_ref) {
                (Some(r), _) => (false, r.name.clone(), r.optional),
                (None, Some(r)) => (true, r.name.clone(), r.optional),
                (None, None) => continue,
            };
            if optional == Some(true) {
                continue;
            }
            if let Ok(None) = self.keys(secret, &name).await {
                let kind = if secret { "secret" } else { "configmap" };
                return Some(format!("{kind} {name:?} not found"));
            }
        }
        for e in c.env.iter().flatten() {
            let Some(from) = &e.value_from else { continue };
            let (secret, name, key, optional) =
                match (&from.config_map_key_ref, &from.secret_key_ref) {
                    (Some(r), _) => (false, r.name.clone(), r.key.clone(), r.optional),
                    (None, Some(r)) => (true, r.name.clone(), r.key.clone(), r.optional),
                    (None, None) => continue,
                };
            if optional == Some(true) {
                continue;
            }
            let (kind, title) = if secret {
                ("secret", "Secret")
            } else {
                ("configmap", "ConfigMap")
            };
            match self.keys(secret, &name).await {
                Ok(None) => return Some(format!("{kind} {name:?} not found")),
                Ok(Some(keys)) if !keys.contains(&key) => {
                    return Some(format!("couldn't find key {key} in {title} {ns}/{name}"));
                }
                _ => {}
            }
        }
        None
    }
}

/// What the pod needs that is missing: the first volume that cannot be mounted, and each
/// container whose environment cannot be made.
pub async fn missing(client: &kube::Client, pod: &Pod) -> Missing {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut lookup = Lookup {
        client,
        namespace,
        seen: HashMap::new(),
    };
    let mut missing = Missing::default();
    let Some(spec) = pod.spec.as_ref() else {
        return missing;
    };
    for v in spec.volumes.iter().flatten() {
        let mut problem = None;
        if let Some(cm) = &v.config_map {
            let items: Vec<String> = cm.items.iter().flatten().map(|i| i.key.clone()).collect();
            problem = lookup
                .volume_problem(false, &cm.name, cm.optional, &items)
                .await;
        } else if let Some(s) = &v.secret {
            let items: Vec<String> = s.items.iter().flatten().map(|i| i.key.clone()).collect();
            let name = s.secret_name.clone().unwrap_or_default();
            problem = lookup.volume_problem(true, &name, s.optional, &items).await;
        } else if let Some(p) = &v.projected {
            for source in p.sources.iter().flatten() {
                problem = if let Some(cm) = &source.config_map {
                    let items: Vec<String> =
                        cm.items.iter().flatten().map(|i| i.key.clone()).collect();
                    lookup
                        .volume_problem(false, &cm.name, cm.optional, &items)
                        .await
                } else if let Some(s) = &source.secret {
                    let items: Vec<String> =
                        s.items.iter().flatten().map(|i| i.key.clone()).collect();
                    lookup
                        .volume_problem(true, &s.name, s.optional, &items)
                        .await
                } else {
                    None
                };
                if problem.is_some() {
                    break;
                }
            }
        }
        if let Some(message) = problem {
            missing.volume = Some((v.name.clone(), message));
            break;
        }
    }
    let containers = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers);
    let mut env = BTreeMap::new();
    for c in containers {
        if let Some(message) = lookup.env_problem(c).await {
            env.insert(c.name.clone(), message);
        }
    }
    missing.env = env;
    missing
}
