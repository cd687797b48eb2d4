//! The root-ca-certificate-publisher controller (upstream
//! `pkg/controller/certificates/rootcacertpublisher`): every active namespace has the
//! `kube-root-ca.crt` ConfigMap holding the cluster CA bundle under `ca.crt`, restored when it is
//! deleted or changed.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::ControllerContext;
use crate::controller::{Action, Error, Reconciler, is_conflict, is_not_found};
use crate::controllers::{active_namespace, enqueue_live_namespaces};
use crate::informer::{Delta, Store};

pub const CONFIG_MAP_NAME: &str = "kube-root-ca.crt";
const DESCRIPTION_KEY: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

struct Publisher {
    client: Client,
    ca: String,
    namespaces: Arc<Store<Namespace>>,
    config_maps: Arc<Store<ConfigMap>>,
}

pub fn start(ctx: ControllerContext) {
    let Some(ca) = ctx.options.root_ca_pem.clone() else {
        tracing::warn!("root-ca-certificate-publisher: no root CA configured; not started");
        return;
    };
    let namespaces = ctx.factory.informer::<Namespace>();
    let config_maps = ctx
        .factory
        .informer_selected::<ConfigMap>(&format!("metadata.name={CONFIG_MAP_NAME}"));
    let queue = ctx.queue();
    namespaces.add_handler(enqueue_live_namespaces(queue.clone()));
    {
        let queue = queue.clone();
        config_maps.add_handler(move |d: &Delta<ConfigMap>| {
            let cm = d.object();
            let relevant = cm.metadata.name.as_deref() == Some(CONFIG_MAP_NAME);
            if relevant && !matches!(d, Delta::Added(_)) {
                queue.add(cm.metadata.namespace.clone().unwrap_or_default());
            }
        });
    }
    let reconciler = Arc::new(Publisher {
        client: ctx.client.clone(),
        ca,
        namespaces: namespaces.store(),
        config_maps: config_maps.store(),
    });
    ctx.run_workers(reconciler, queue, 1);
}

impl Publisher {
    fn wanted(&self) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        (
            BTreeMap::from([("ca.crt".to_string(), self.ca.clone())]),
            BTreeMap::from([(DESCRIPTION_KEY.to_string(), DESCRIPTION.to_string())]),
        )
    }
}

impl Reconciler for Publisher {
    async fn reconcile(&self, namespace: &str) -> Result<Action, Error> {
        if active_namespace(&self.namespaces, namespace).is_none() {
            return Ok(Action::Done);
        }
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let (data, annotations) = self.wanted();
        match self.config_maps.get_named(Some(namespace), CONFIG_MAP_NAME) {
            None => {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(CONFIG_MAP_NAME.into()),
                        annotations: Some(annotations),
                        ..Default::default()
                    },
                    data: Some(data),
                    ..Default::default()
                };
                match api.create(&PostParams::default(), &cm).await {
                    Ok(_) => Ok(Action::Done),
                    Err(e) if is_conflict(&e) => Ok(Action::Done),
                    Err(kube::Error::Api(s)) if s.code == 403 => Ok(Action::Done),
                    Err(e) => Err(e.into()),
                }
            }
            Some(existing) => {
                let same_data = existing.data.as_ref() == Some(&data)
                    && existing.binary_data.as_ref().is_none_or(BTreeMap::is_empty);
                let same_note = existing
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(DESCRIPTION_KEY))
                    .map(String::as_str)
                    == Some(DESCRIPTION);
                if same_data && same_note {
                    return Ok(Action::Done);
                }
                let mut updated = (*existing).clone();
                updated.data = Some(data);
                updated.binary_data = None;
                updated
                    .metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(DESCRIPTION_KEY.into(), DESCRIPTION.into());
                match api
                    .replace(CONFIG_MAP_NAME, &PostParams::default(), &updated)
                    .await
                {
                    Ok(_) => Ok(Action::Done),
                    Err(e) if is_not_found(&e) => Ok(Action::Done),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }
}
