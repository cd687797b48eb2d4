//! The in-process client path against loopback HTTPS: sequential ConfigMap creates through a
//! `kube::Client` over the API server's in-process `Service` (what the controller-manager uses in
//! `k1s server`) and through the same server's HTTPS port with the admin kubeconfig; then Pods
//! and Deployments in process, whose extra cost over ConfigMaps is their defaulting, validation
//! and admission. Run: `cargo bench --bench in_process` (memory store, so the figures are the
//! API path's cost).

use std::time::{Duration, Instant};

use k1s_apiserver::auth::UserInfo;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, PostParams};
use serde_json::json;

const N: usize = 3000;

/// `N` sequential creates of the object `make(i)` returns, as JSON: (creates/s, p50, p99).
async fn creates(
    client: kube::Client,
    ns: &str,
    resource: &ApiResource,
    make: impl Fn(usize) -> serde_json::Value,
) -> (f64, Duration, Duration) {
    let api: Api<DynamicObject> = Api::namespaced_with(client, ns, resource);
    let mut lat = Vec::with_capacity(N);
    let start = Instant::now();
    for i in 0..N {
        let obj: DynamicObject = serde_json::from_value(make(i)).expect("object");
        let t = Instant::now();
        api.create(&PostParams::default(), &obj)
            .await
            .expect("create");
        lat.push(t.elapsed());
    }
    let rate = N as f64 / start.elapsed().as_secs_f64();
    lat.sort();
    (rate, lat[N / 2], lat[N * 99 / 100])
}

fn config_map(i: usize) -> serde_json::Value {
    json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": format!("cm-{i}") } })
}

/// A pod spec as users write them: two containers, ports, env, probes, a volume.
fn pod_spec() -> serde_json::Value {
    json!({
        "containers": [{
            "name": "web", "image": "nginx:1.27",
            "ports": [{ "containerPort": 80 }],
            "env": [{ "name": "POD", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } }],
            "resources": { "limits": { "cpu": "500m", "memory": "128Mi" } },
            "readinessProbe": { "httpGet": { "port": 80 } },
            "volumeMounts": [{ "name": "cache", "mountPath": "/cache" }],
        }, { "name": "sidecar", "image": "busybox", "command": ["sleep", "3600"] }],
        "volumes": [{ "name": "cache" }],
    })
}

fn pod(i: usize) -> serde_json::Value {
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": format!("pod-{i}") },
        "spec": pod_spec() })
}

fn deployment(i: usize) -> serde_json::Value {
    json!({ "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": { "name": format!("deploy-{i}") },
        "spec": { "selector": { "matchLabels": { "app": format!("a{i}") } },
            "template": { "metadata": { "labels": { "app": format!("a{i}") } }, "spec": pod_spec() } } })
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = k1s_apiserver::server::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            kubeconfig_path: Some(dir.path().join("admin.conf")),
            max_requests_inflight: 0,
            max_mutating_requests_inflight: 0,
            ..Default::default()
        };
        let server = k1s_apiserver::server::start(config).await.expect("server");
        let in_process = kube::Client::new(
            server.in_process_service(UserInfo::new(
                "kubernetes-admin",
                vec!["system:masters".into()],
            )),
            "default",
        );
        let kubeconfig = kube::config::Kubeconfig::read_from(&server.kubeconfig).expect("kc");
        let https = kube::Client::try_from(
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .expect("config"),
        )
        .expect("client");
        let namespaces: Api<Namespace> = Api::all(in_process.clone());
        for ns in ["bench-in-process", "bench-https"] {
            let obj = Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            namespaces
                .create(&PostParams::default(), &obj)
                .await
                .expect("namespace");
            // This server runs no controllers: the ServiceAccount admission of the pods needs
            // the `default` account the serviceaccount controller would have made.
            let accounts: Api<ServiceAccount> = Api::namespaced(in_process.clone(), ns);
            let default = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some("default".into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            accounts
                .create(&PostParams::default(), &default)
                .await
                .expect("service account");
        }
        let gvk = |g: &str, k: &str| ApiResource::from_gvk(&GroupVersionKind::gvk(g, "v1", k));
        let cm = gvk("", "ConfigMap");
        let (r1, p50_1, p99_1) =
            creates(in_process.clone(), "bench-in-process", &cm, config_map).await;
        let (r2, p50_2, p99_2) = creates(https, "bench-https", &cm, config_map).await;
        println!("{N} sequential creates (memory store), kube::Client:");
        println!("  ConfigMap in process : {r1:>8.0}/s  p50 {p50_1:>9.1?}  p99 {p99_1:>9.1?}");
        println!("  ConfigMap HTTPS      : {r2:>8.0}/s  p50 {p50_2:>9.1?}  p99 {p99_2:>9.1?}");
        let (r3, p50_3, p99_3) =
            creates(in_process.clone(), "bench-in-process", &gvk("", "Pod"), pod).await;
        println!("  Pod in process       : {r3:>8.0}/s  p50 {p50_3:>9.1?}  p99 {p99_3:>9.1?}");
        let (r4, p50_4, p99_4) = creates(
            in_process,
            "bench-in-process",
            &gvk("apps", "Deployment"),
            deployment,
        )
        .await;
        println!("  Deployment in process: {r4:>8.0}/s  p50 {p50_4:>9.1?}  p99 {p99_4:>9.1?}");
        server.shutdown().await;
    });
}
