//! Runs `k1s bench` (the real binary) against a real `k1s server --ephemeral` and checks the
//! JSON report: the fields are there, throughput is non-zero and no watch event is missed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use http::Method;
use k1s_bench::ApiClient;
use k1s_kubeadm_lite::Kubeconfig;
use serde_json::Value;

/// The `k1s` binary: `$K1S_BIN` when set (scripts/test builds it), else built here (debug).
fn k1s_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("K1S_BIN") {
        return PathBuf::from(bin);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-p", "k1s"])
        .current_dir(root)
        .status()
        .expect("running cargo build -p k1s");
    assert!(status.success(), "cargo build -p k1s failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join("debug/k1s")
}

/// A `k1s server` process, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (bounded) until the kubeconfig exists and the server answers /readyz with 200.
async fn wait_ready(kubeconfig: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !kubeconfig.exists() {
        assert!(Instant::now() < deadline, "no kubeconfig after 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The file is written atomically, so once it exists it is complete.
    let ctx = Kubeconfig::load_context(kubeconfig, None).unwrap();
    let client = ApiClient::new(&ctx, 1, Duration::from_secs(5)).unwrap();
    loop {
        match client.request(0, Method::GET, "/readyz", None).await {
            Ok(body) if body.as_ref() == b"ok" => return,
            other => {
                assert!(Instant::now() < deadline, "not ready after 60 s: {other:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

fn bench(k1s: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(k1s)
        .arg("bench")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .args(["--timeout", "120"])
        .stdin(Stdio::null())
        .output()
        .expect("running k1s bench")
}

fn report(out: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "k1s bench failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn number(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} missing or not a number in {v:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_against_a_real_k1s_server() {
    let k1s = k1s_binary();
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = tmp.path().join("kubeconfig");
    let _server = Server(
        Command::new(&k1s)
            .args(["server", "--ephemeral", "--secure-port", "0", "--data-dir"])
            .arg(tmp.path().join("data"))
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("starting k1s server"),
    );
    wait_ready(&kubeconfig).await;

    // create-seq: 50 sequential creates.
    let out = bench(&k1s, &kubeconfig, &["create-seq", "-n", "50", "--json"]);
    let r = report(&out);
    assert!(r["namespace"].as_str().unwrap().starts_with("k1s-bench-"));
    assert!(
        r["server"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:")
    );
    let scenarios = r["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1, "{r:#}");
    let s = &scenarios[0];
    assert_eq!(s["scenario"], "create-seq");
    assert_eq!(s["objects"], 50);
    assert_eq!(s["errors"], 0);
    assert_eq!(s["workers"], 1);
    assert!(number(s, "/objects_per_sec") > 0.0);
    assert!(number(s, "/seconds") > 0.0);
    assert_eq!(number(s, "/latency_ms/count"), 50.0);
    for p in ["p50", "p90", "p99", "max"] {
        assert!(number(s, &format!("/latency_ms/{p}")) > 0.0, "{p}");
    }
    assert!(number(s, "/latency_ms/p50") <= number(s, "/latency_ms/p99"));
    assert!(number(s, "/latency_ms/p99") <= number(s, "/latency_ms/max"));
    // The scenario's objects are gone; k1s has no namespace controller yet, so the namespace may
    // stay Terminating, but nothing is left in it.
    assert_eq!(r["cleanup"]["objects_left"], 0, "{r:#}");
    assert_eq!(r["cleanup"]["errors"], 0, "{r:#}");

    // A tiny watch run: 5 watchers see 20 writes each, none missed.
    let out = bench(
        &k1s,
        &kubeconfig,
        &[
            "watch",
            "-w",
            "5",
            "-k",
            "20",
            "--connections",
            "2",
            "--json",
        ],
    );
    let r = report(&out);
    let s = &r["scenarios"][0];
    assert_eq!(s["scenario"], "watch", "{r:#}");
    assert_eq!(s["watchers_started"], 5);
    assert_eq!(s["writes"], 20);
    assert_eq!(s["events_expected"], 100);
    assert_eq!(s["events_received"], 100);
    assert_eq!(s["missed_events"], 0);
    assert_eq!(s["duplicate_events"], 0);
    assert_eq!(s["incomplete_watchers"], 0);
    assert_eq!(s["errors"], 0);
    assert!(number(s, "/writes_per_sec") > 0.0);
    assert!(number(s, "/events_per_sec") > 0.0);
    assert_eq!(number(s, "/latency_ms/count"), 100.0);
    assert!(number(s, "/latency_ms/p50") > 0.0);
    assert!(number(s, "/latency_ms/p50") <= number(s, "/latency_ms/p99"));

    // Bad input gets a clear message and a failure status.
    let out = bench(&k1s, &tmp.path().join("missing.conf"), &["create-seq"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.conf"), "{stderr}");
}
