//! A real etcd for black-box tests: Debian's `etcd` on free loopback ports in a temp dir.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running single-member etcd; killed when dropped.
pub struct EtcdProcess {
    child: Option<Child>,
    client_url: String,
    client_addr: String,
    data_dir: PathBuf,
    _dir: tempfile::TempDir,
}

fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").to_string()
}

impl EtcdProcess {
    /// Starts etcd and waits for `/health`. Fails (never skips) when etcd is not installed:
    /// `scripts/setup` installs Debian's `etcd-server`.
    pub fn start() -> EtcdProcess {
        let dir = tempfile::Builder::new()
            .prefix("k1s-etcd-")
            .tempdir()
            .expect("temp dir");
        let client_addr = free_addr();
        let peer_url = format!("http://{}", free_addr());
        let client_url = format!("http://{client_addr}");
        let data_dir = dir.path().join("etcd");
        let log = std::fs::File::create(dir.path().join("etcd.log")).expect("etcd log");
        let child = Command::new("etcd")
            .args(["--name", "k1s-test"])
            .arg("--data-dir")
            .arg(&data_dir)
            .args(["--listen-client-urls", &client_url])
            .args(["--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url])
            .args(["--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("k1s-test={peer_url}")])
            .args(["--heartbeat-interval", "25", "--election-timeout", "250"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd is not installed: run scripts/setup (Debian's etcd-server)");
        let mut etcd = EtcdProcess {
            child: Some(child),
            client_url,
            client_addr,
            data_dir,
            _dir: dir,
        };
        etcd.wait_healthy();
        etcd
    }

    /// `http://127.0.0.1:PORT`, for `--etcd-servers`.
    pub fn url(&self) -> &str {
        &self.client_url
    }

    pub fn data_dir(&self) -> &PathBuf {
        &self.data_dir
    }

    fn healthy(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(&self.client_addr) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let req = format!("GET /health HTTP/1.0\r\nHost: {}\r\n\r\n", self.client_addr);
        if s.write_all(req.as_bytes()).is_err() {
            return false;
        }
        let mut body = String::new();
        let _ = s.read_to_string(&mut body);
        body.contains("\"health\":\"true\"")
    }

    fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.healthy() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                let log =
                    std::fs::read_to_string(self._dir.path().join("etcd.log")).unwrap_or_default();
                panic!("etcd exited with {status}: {log}");
            }
            assert!(Instant::now() < deadline, "etcd not healthy within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
