//! A background writer for durability proofs: creates ConfigMaps until stopped and records the
//! resourceVersion of every create the server acknowledged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};

/// ConfigMaps `<prefix>NNNNN` created one after another in `namespace` through a kubeconfig.
pub struct AckedWriter {
    stop: Arc<AtomicBool>,
    acked: Arc<Mutex<BTreeMap<String, u64>>>,
    join: Option<JoinHandle<()>>,
}

impl AckedWriter {
    pub fn start(kubeconfig: &Path, namespace: &str, prefix: &str) -> AckedWriter {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(BTreeMap::new()));
        let (kubeconfig, namespace, prefix) = (
            kubeconfig.to_path_buf(),
            namespace.to_string(),
            prefix.to_string(),
        );
        let join = {
            let (stop, acked) = (stop.clone(), acked.clone());
            std::thread::spawn(move || {
                block_on(async move {
                    let client = crate::client_from_kubeconfig(&kubeconfig)
                        .await
                        .expect("writer's client");
                    let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let name = format!("{prefix}{n:05}");
                        let cm = ConfigMap {
                            metadata: ObjectMeta {
                                name: Some(name.clone()),
                                ..Default::default()
                            },
                            data: Some([("n".to_string(), n.to_string())].into()),
                            ..Default::default()
                        };
                        // A failed create is not acknowledged, so nothing is owed for it.
                        match api.create(&PostParams::default(), &cm).await {
                            Ok(created) => {
                                let rv = created
                                    .metadata
                                    .resource_version
                                    .and_then(|rv| rv.parse().ok())
                                    .expect("a numeric resourceVersion");
                                if let Ok(mut acked) = acked.lock() {
                                    acked.insert(name, rv);
                                }
                            }
                            Err(e) => {
                                eprintln!("writer: create {name} failed: {e}");
                                std::thread::sleep(std::time::Duration::from_millis(100));
                            }
                        }
                        n += 1;
                    }
                })
            })
        };
        AckedWriter {
            stop,
            acked,
            join: Some(join),
        }
    }

    /// How many creates were acknowledged so far.
    pub fn acked_count(&self) -> usize {
        self.acked.lock().map(|a| a.len()).unwrap_or(0)
    }

    /// Stops the writer and returns every acknowledged create: name to resourceVersion.
    pub fn finish(mut self) -> BTreeMap<String, u64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(join) = self.join.take() {
            join.join().expect("writer thread");
        }
        self.acked.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

impl Drop for AckedWriter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The ConfigMaps named `<prefix>...` in `namespace`: name to resourceVersion.
pub fn configmap_versions(
    kubeconfig: &Path,
    namespace: &str,
    prefix: &str,
) -> BTreeMap<String, u64> {
    let (kubeconfig, namespace, prefix): (PathBuf, String, String) = (
        kubeconfig.to_path_buf(),
        namespace.to_string(),
        prefix.to_string(),
    );
    std::thread::spawn(move || {
        block_on(async move {
            let client = crate::client_from_kubeconfig(&kubeconfig)
                .await
                .expect("client");
            let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
            api.list(&ListParams::default())
                .await
                .expect("list configmaps")
                .items
                .into_iter()
                .filter_map(|cm| {
                    let name = cm.metadata.name?;
                    let rv = cm.metadata.resource_version?.parse().ok()?;
                    name.starts_with(&prefix).then_some((name, rv))
                })
                .collect()
        })
    })
    .join()
    .expect("list thread")
}

/// Runs a future on a runtime of its own (callers may be inside another runtime).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// Asserts that every create in `acked` (name to the resourceVersion it was answered with) is
/// in `namespace` at that resourceVersion: no acknowledged write was lost or changed.
pub fn assert_no_acked_create_lost(
    kubeconfig: &Path,
    namespace: &str,
    prefix: &str,
    acked: &BTreeMap<String, u64>,
) {
    let present = configmap_versions(kubeconfig, namespace, prefix);
    let missing: Vec<_> = acked
        .iter()
        .filter(|(name, rv)| present.get(*name) != Some(rv))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged creates through {prefix} are missing or changed: {missing:?}",
        missing.len(),
        acked.len()
    );
}
