//! The in-process client path against loopback HTTPS: sequential ConfigMap creates through a
//! `kube::Client` over the API server's in-process `Service` (what the controller-manager uses in
//! `k1s server`) and through the same server's HTTPS port with the admin kubeconfig.
//! Run: `cargo bench --bench in_process` (memory store, so the figures are the API path's cost).

use std::time::{Duration, Instant};

use k1s_apiserver::auth::UserInfo;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};

const N: usize = 3000;

async fn creates(client: kube::Client, ns: &str) -> (f64, Duration, Duration) {
    let api: Api<ConfigMap> = Api::namespaced(client, ns);
    let mut lat = Vec::with_capacity(N);
    let start = Instant::now();
    for i in 0..N {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        let t = Instant::now();
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
        lat.push(t.elapsed());
    }
    let rate = N as f64 / start.elapsed().as_secs_f64();
    lat.sort();
    (rate, lat[N / 2], lat[N * 99 / 100])
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = k1s_apiserver::server::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            bind_address: "127.0.0.1".parse().expect("ip"),
            secure_port: 0,
            tls_sans: Vec::new(),
            ephemeral: true,
            advertise_address: None,
            kubeconfig_path: Some(dir.path().join("admin.conf")),
            token_auth_file: None,
            audit_policy_file: None,
            audit_log_path: None,
            audit_log_maxsize_mb: 0,
            audit_log_maxbackup: 0,
            max_requests_inflight: 0,
            max_mutating_requests_inflight: 0,
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
        }
        let (r1, p50_1, p99_1) = creates(in_process, "bench-in-process").await;
        let (r2, p50_2, p99_2) = creates(https, "bench-https").await;
        println!("{N} sequential ConfigMap creates (memory store), kube::Client:");
        println!("  in process : {r1:>8.0}/s  p50 {p50_1:>9.1?}  p99 {p99_1:>9.1?}");
        println!("  HTTPS      : {r2:>8.0}/s  p50 {p50_2:>9.1?}  p99 {p99_2:>9.1?}");
        server.shutdown().await;
    });
}
