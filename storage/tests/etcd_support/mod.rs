//! A real single-member etcd for tests: Debian's `etcd` on free loopback ports in a temp dir.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k1s_storage::{EtcdConfig, EtcdStore};

/// A running etcd; killed when dropped.
pub struct EtcdProcess {
    child: Option<Child>,
    pub client_url: String,
    peer_url: String,
    data_dir: PathBuf,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl EtcdProcess {
    /// Starts etcd and waits until it answers. Fails (never skips) when etcd is not installed:
    /// `scripts/setup` installs Debian's `etcd-server`.
    pub async fn start() -> EtcdProcess {
        let dir = tempfile::tempdir().unwrap();
        let mut p = EtcdProcess {
            child: None,
            client_url: format!("http://127.0.0.1:{}", free_port()),
            peer_url: format!("http://127.0.0.1:{}", free_port()),
            data_dir: dir.path().join("etcd"),
            _dir: dir,
        };
        p.spawn();
        p.wait_ready().await;
        p
    }

    fn spawn(&mut self) {
        let log = std::fs::File::create(self.data_dir.with_extension("log")).unwrap();
        let child = Command::new("etcd")
            .args(["--name", "test"])
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--listen-client-urls", &self.client_url])
            .args(["--advertise-client-urls", &self.client_url])
            .args(["--listen-peer-urls", &self.peer_url])
            .args(["--initial-advertise-peer-urls", &self.peer_url])
            .args(["--initial-cluster", &format!("test={}", self.peer_url)])
            // A lone member still waits one election timeout before it leads.
            .args(["--heartbeat-interval", "25", "--election-timeout", "250"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd is not installed: run scripts/setup (Debian's etcd-server)");
        self.child = Some(child);
    }

    async fn wait_ready(&mut self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(mut c) = etcd_client::Client::connect([&self.client_url], None).await
                && c.get("/health-probe", None).await.is_ok()
            {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                let log = std::fs::read_to_string(self.data_dir.with_extension("log"))
                    .unwrap_or_default();
                panic!("etcd exited with {status}: {log}");
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "etcd did not answer within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills etcd (SIGKILL) and starts it again on the same data and ports.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn();
        self.wait_ready().await;
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn config(&self) -> EtcdConfig {
        EtcdConfig::new(vec![self.client_url.clone()])
    }

    pub async fn store(&self) -> EtcdStore {
        EtcdStore::connect(self.config()).await.unwrap()
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
