//! A real etcd for black-box tests: Debian's `etcd`, one member or a cluster of several, on free
//! loopback ports in a temp dir.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd cluster (one member unless asked for more); every member is killed when it
/// is dropped.
pub struct EtcdCluster {
    members: Vec<Member>,
    _dir: tempfile::TempDir,
}

/// The single-member cluster most tests use.
pub type EtcdProcess = EtcdCluster;

/// Serving certificate, key and client CA for an etcd that requires client certificates.
pub struct EtcdTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub ca_file: PathBuf,
}

struct Member {
    name: String,
    child: Option<Child>,
    client_url: String,
    /// Where `/health` is served over plain HTTP: the client port, or with TLS a metrics port.
    health_addr: String,
    data_dir: PathBuf,
    log: PathBuf,
}

fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").to_string()
}

impl EtcdCluster {
    /// Starts a one-member etcd and waits for `/health`. Fails (never skips) when etcd is not
    /// installed: `scripts/setup` installs Debian's `etcd-server`.
    pub fn start() -> EtcdCluster {
        Self::start_members(1)
    }

    /// Starts an `n`-member cluster and waits until every member reports healthy.
    pub fn start_members(n: usize) -> EtcdCluster {
        Self::start_with(n, None)
    }

    /// Starts one member that serves clients over TLS and requires client certificates
    /// (`--client-cert-auth`); `url()` is then `https://...`.
    pub fn start_tls(tls: &EtcdTls) -> EtcdCluster {
        Self::start_with(1, Some(tls))
    }

    fn start_with(n: usize, tls: Option<&EtcdTls>) -> EtcdCluster {
        let dir = tempfile::Builder::new()
            .prefix("k1s-etcd-")
            .tempdir()
            .expect("temp dir");
        let peers: Vec<(String, String)> = (0..n)
            .map(|i| (format!("k1s-test-{i}"), format!("http://{}", free_addr())))
            .collect();
        let initial_cluster = peers
            .iter()
            .map(|(name, url)| format!("{name}={url}"))
            .collect::<Vec<_>>()
            .join(",");
        let members = peers
            .iter()
            .map(|(name, peer_url)| {
                let client_addr = free_addr();
                let scheme = if tls.is_some() { "https" } else { "http" };
                let client_url = format!("{scheme}://{client_addr}");
                let data_dir = dir.path().join(name);
                let log = dir.path().join(format!("{name}.log"));
                let mut cmd = Command::new("etcd");
                let health_addr = match tls {
                    Some(tls) => {
                        let metrics = free_addr();
                        cmd.arg("--cert-file")
                            .arg(&tls.cert_file)
                            .arg("--key-file")
                            .arg(&tls.key_file)
                            .arg("--trusted-ca-file")
                            .arg(&tls.ca_file)
                            .arg("--client-cert-auth")
                            .args(["--listen-metrics-urls", &format!("http://{metrics}")]);
                        metrics
                    }
                    None => client_addr.clone(),
                };
                let child = cmd
                    .args(["--name", name])
                    .arg("--data-dir")
                    .arg(&data_dir)
                    .args(["--listen-client-urls", &client_url])
                    .args(["--advertise-client-urls", &client_url])
                    .args(["--listen-peer-urls", peer_url])
                    .args(["--initial-advertise-peer-urls", peer_url])
                    .args(["--initial-cluster", &initial_cluster])
                    .args(["--initial-cluster-state", "new"])
                    .args(["--heartbeat-interval", "25", "--election-timeout", "250"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(&log).expect("etcd log"))
                    .spawn()
                    .expect("etcd is not installed: run scripts/setup (Debian's etcd-server)");
                Member {
                    name: name.clone(),
                    child: Some(child),
                    client_url,
                    health_addr,
                    data_dir,
                    log,
                }
            })
            .collect();
        let mut cluster = EtcdCluster { members, _dir: dir };
        for i in 0..n {
            cluster.wait_healthy(i);
        }
        cluster
    }

    /// Every member's client URL, comma-separated, for `--etcd-servers`.
    pub fn url(&self) -> String {
        self.members
            .iter()
            .map(|m| m.client_url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The first member's data directory.
    pub fn data_dir(&self) -> &PathBuf {
        &self.members[0].data_dir
    }

    /// Kills member `i` with SIGKILL.
    pub fn kill_member(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops member `i` with SIGSTOP: its ports still accept connections but nothing answers,
    /// as with a hung or cut-off machine.
    pub fn stop_member(&self, i: usize) {
        self.signal(i, "STOP");
    }

    /// Lets a stopped member `i` run again (SIGCONT).
    pub fn resume_member(&self, i: usize) {
        self.signal(i, "CONT");
    }

    fn signal(&self, i: usize, signal: &str) {
        let child = self.members[i]
            .child
            .as_ref()
            .expect("the member is running");
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} of etcd member {i} failed");
    }

    /// Whether member `i` answers `/health` with `true` (it and a quorum are up).
    pub fn healthy(&self, i: usize) -> bool {
        self.http(i, "GET", "/health", "")
            .is_some_and(|body| body.contains("\"health\":\"true\""))
    }

    /// The index of the member that leads the raft group now, as the live members report it
    /// (clusters without TLS).
    pub fn leader(&self) -> Option<usize> {
        let status = |i: usize| -> Option<(String, String)> {
            let text = self.http(i, "POST", "/v3/maintenance/status", "{}")?;
            let json = text.split("\r\n\r\n").nth(1)?;
            let v: serde_json::Value = serde_json::from_str(json).ok()?;
            Some((
                v["header"]["member_id"].as_str()?.to_string(),
                v["leader"].as_str()?.to_string(),
            ))
        };
        let statuses: Vec<_> = (0..self.members.len()).map(status).collect();
        let leader_id = statuses.iter().flatten().map(|(_, l)| l.clone()).next()?;
        statuses
            .iter()
            .position(|s| s.as_ref().is_some_and(|(id, _)| *id == leader_id))
    }

    /// One HTTP/1.0 request to member `i`'s health port (its client port without TLS); the
    /// whole response.
    fn http(&self, i: usize, method: &str, path: &str, body: &str) -> Option<String> {
        let m = &self.members[i];
        m.child.as_ref()?;
        let mut s = TcpStream::connect(&m.health_addr).ok()?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let req = format!(
            "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Length: {}\r\n\r\n{body}",
            m.health_addr,
            body.len()
        );
        s.write_all(req.as_bytes()).ok()?;
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        Some(text)
    }

    fn wait_healthy(&mut self, i: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.healthy(i) {
            let m = &mut self.members[i];
            if let Some(status) = m.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                let log = std::fs::read_to_string(&m.log).unwrap_or_default();
                panic!("etcd member {} exited with {status}: {log}", m.name);
            }
            assert!(
                Instant::now() < deadline,
                "etcd member {} not healthy within 30 s",
                m.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill_member(i);
        }
    }
}
