//! `k1s server --data-dir` on a slow disk (issue 17): with the server's writes throttled to a
//! few operations a second by a cgroup v1 blkio throttle on the data dir's device, and a writer
//! creating ConfigMaps, the controller-manager and the scheduler keep their Leases (same holder,
//! no transitions, renewals still land) and `/readyz` and `/livez` answer ok at every probe.
//! The write latencies seen are printed, not asserted. Where the throttle cannot be set up (not
//! root, no blkio controller, a data dir on tmpfs or overlay) the test says why and skips.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k1s_tests::{StartOptions, TestCluster, client_from_kubeconfig};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

const BLKIO: &str = "/sys/fs/cgroup/blkio";
/// Writes per second the server's device allows while throttled.
const WRITE_IOPS: u32 = 20;
const RUN_FOR: Duration = Duration::from_secs(60);
/// A probe that has not answered by then counts as failed (a kubelet would have given up too).
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// `major:minor` of the whole block device that holds `path` (a partition maps to its disk:
/// blkio throttles whole devices), or why there is none.
fn block_device_of(path: &Path) -> Result<String, String> {
    let dev = std::fs::metadata(path).map_err(|e| e.to_string())?.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return Err(format!(
            "{} is not on a block device ({major}:{minor}: tmpfs, overlay or similar)",
            path.display()
        ));
    }
    if sys.join("partition").exists() {
        let disk = std::fs::canonicalize(&sys).map_err(|e| e.to_string())?;
        let parent = disk.parent().ok_or("a partition without a disk")?;
        return std::fs::read_to_string(parent.join("dev"))
            .map(|s| s.trim().to_string())
            .map_err(|e| e.to_string());
    }
    Ok(format!("{major}:{minor}"))
}

/// A blkio cgroup with a write throttle; dropping it moves its processes back to the root
/// cgroup and removes it.
struct Throttle {
    dir: PathBuf,
}

impl Throttle {
    fn new(device: &str, iops: u32) -> Result<Throttle, String> {
        let root = Path::new(BLKIO);
        if !root.join("blkio.throttle.write_iops_device").exists() {
            return Err(format!("no cgroup v1 blkio throttle at {BLKIO}"));
        }
        let dir = root.join(format!("k1s-slow-disk-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let throttle = Throttle { dir };
        let rule = format!("{device} {iops}");
        throttle.write("blkio.throttle.write_iops_device", &rule)?;
        let set = std::fs::read_to_string(throttle.dir.join("blkio.throttle.write_iops_device"))
            .unwrap_or_default();
        if !set.contains(&rule) {
            return Err(format!(
                "the kernel did not keep the throttle {rule:?}: {set:?}"
            ));
        }
        Ok(throttle)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| format!("writing {value:?} to {}/{file}: {e}", self.dir.display()))
    }

    /// Write operations the device served for this cgroup.
    fn writes_served(&self) -> String {
        std::fs::read_to_string(self.dir.join("blkio.throttle.io_serviced"))
            .unwrap_or_default()
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some("Write"))
            .unwrap_or("none")
            .to_string()
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write(Path::new(BLKIO).join("cgroup.procs"), pid);
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("could not remove {}: {e}", self.dir.display());
        }
    }
}

/// Holder, transitions and renew time of a Lease in kube-system.
async fn lease(api: &Api<Lease>, name: &str) -> (String, i32, String) {
    let l = api.get(name).await.unwrap();
    let spec = l.spec.unwrap_or_default();
    (
        spec.holder_identity.unwrap_or_default(),
        spec.lease_transitions.unwrap_or(0),
        spec.renew_time.map(|t| t.0.to_string()).unwrap_or_default(),
    )
}

async fn probe(client: &kube::Client, path: &str) -> Result<(), String> {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    match tokio::time::timeout(PROBE_TIMEOUT, client.request_text(req)).await {
        Ok(Ok(body)) if body.trim() == "ok" => Ok(()),
        Ok(Ok(body)) => Err(format!("{path} said {body:?}")),
        Ok(Err(e)) => Err(format!("{path}: {e}")),
        Err(_) => Err(format!("{path}: no answer within {PROBE_TIMEOUT:?}")),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_and_health_checks_hold_on_a_throttled_disk() {
    // A data dir on the disk (not the ephemeral store): the test's temp dir is where it lives.
    let scratch = tempfile::Builder::new()
        .prefix("k1s-slow-disk-")
        .tempdir()
        .unwrap();
    let data_dir = scratch.path().join("data");
    std::fs::create_dir(&data_dir).unwrap();
    let device = match block_device_of(&data_dir) {
        Ok(d) => d,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    // Made (and checked) before the server starts, so a machine that cannot throttle skips.
    let throttle = match Throttle::new(&device, WRITE_IOPS) {
        Ok(t) => t,
        Err(why) => {
            println!("skipped: cannot throttle {device}: {why}");
            return;
        }
    };
    let cluster = TestCluster::start_with(StartOptions {
        data_dir: Some(data_dir),
        ..Default::default()
    });
    let client = client_from_kubeconfig(cluster.kubeconfig()).await.unwrap();
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let mut held = Vec::new();
    for name in ["kube-controller-manager", "kube-scheduler"] {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = leases.get_opt(name).await.unwrap();
            let holder = got
                .and_then(|l| l.spec)
                .and_then(|s| s.holder_identity)
                .unwrap_or_default();
            if !holder.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "nobody holds the Lease {name}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        held.push((name, lease(&leases, name).await));
    }

    throttle
        .write("cgroup.procs", &cluster.pid().to_string())
        .unwrap();
    println!(
        "server {} throttled to {WRITE_IOPS} writes/s on {device}",
        cluster.pid()
    );

    // The load: one writer creating ~1 KiB ConfigMaps, a pause between them.
    let writer = {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let start = Instant::now();
            let mut i = 0;
            while start.elapsed() < RUN_FOR {
                let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("slow-{i}")},
                    "data": {"v": "x".repeat(1024)},
                }))
                .unwrap();
                let t = Instant::now();
                api.create(&PostParams::default(), &cm).await.unwrap();
                latencies.push(t.elapsed());
                i += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            latencies
        })
    };

    let start = Instant::now();
    let mut probes = Vec::new();
    let mut checks = 0;
    while start.elapsed() < RUN_FOR {
        for path in ["/readyz", "/livez"] {
            let t = Instant::now();
            if let Err(e) = probe(&client, path).await {
                panic!("health check failed on the throttled disk: {e}");
            }
            probes.push(t.elapsed());
        }
        checks += 1;
        if checks % 5 == 0 {
            for (name, (holder, transitions, _)) in &held {
                let (h, t, _) = lease(&leases, name).await;
                assert_eq!(&h, holder, "the Lease {name} changed hands");
                assert_eq!(t, *transitions, "the Lease {name} has new transitions");
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut writes = writer.await.unwrap();
    for (name, (holder, transitions, renewed)) in &held {
        let (h, t, r) = lease(&leases, name).await;
        assert_eq!(&h, holder, "the Lease {name} changed hands");
        assert_eq!(t, *transitions, "the Lease {name} has new transitions");
        assert_ne!(
            &r, renewed,
            "the Lease {name} was not renewed in {RUN_FOR:?}"
        );
    }
    let served = throttle.writes_served();
    drop(throttle);

    writes.sort();
    probes.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{} creates on a disk throttled to {WRITE_IOPS} writes/s: p50 {:.1} ms, p99 {:.1} ms, \
         max {:.1} ms; {} health probes: p50 {:.1} ms, max {:.1} ms; device writes served in the \
         cgroup: {served}",
        writes.len(),
        ms(percentile(&writes, 0.5)),
        ms(percentile(&writes, 0.99)),
        ms(writes.last().copied().unwrap_or_default()),
        probes.len(),
        ms(percentile(&probes, 0.5)),
        ms(probes.last().copied().unwrap_or_default()),
    );
}
