//! Black-box test harness for the built `k1s` binary.
//!
//! The tests in `tests/tests/` start the real binary ([`TestCluster::start`]) and drive it with
//! real clients: stock `kubectl` (several minors, see [`Kubectl`]) and kube-rs
//! ([`TestCluster::client`]). Every cluster lives in its own temporary directory and is killed
//! when the [`TestCluster`] is dropped.

pub mod etcd;
pub mod tinyca;
pub mod writer;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long one kubectl invocation may take before the test fails.
pub const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the server may take to print its "serving" line and answer `/readyz`.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// The workspace root (the parent of this package's directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent directory")
        .to_path_buf()
}

/// The `k1s` binary under test: `$K1S_BIN` if set, else `<workspace>/target/debug/k1s`
/// (honouring `$CARGO_TARGET_DIR`), built once per test process with `cargo build -p k1s`.
pub fn k1s_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("K1S_BIN") {
            let bin = PathBuf::from(bin);
            assert!(bin.exists(), "K1S_BIN={} does not exist", bin.display());
            return bin;
        }
        let root = workspace_root();
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|t| if t.is_relative() { root.join(t) } else { t })
            .unwrap_or_else(|| root.join("target"));
        let bin = target.join("debug").join("k1s");
        // `cargo test -p k1s-tests` does not build the root binary: build it (a no-op when it
        // is fresh) so the tests never run against a stale server.
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "k1s", "--quiet"])
            .current_dir(&root)
            .status();
        match status {
            Ok(s) if s.success() => {}
            other => {
                assert!(
                    bin.exists(),
                    "`cargo build -p k1s` failed ({other:?}) and {} does not exist",
                    bin.display()
                );
                eprintln!(
                    "WARNING: `cargo build -p k1s` failed ({other:?}); testing the existing, \
                     possibly stale binary {}",
                    bin.display()
                );
            }
        }
        assert!(bin.exists(), "{} was not built", bin.display());
        bin
    })
}

/// One kubectl binary: the dispatcher on `PATH` (it picks the minor matching the server) or a
/// specific minor (`kubectl.1.28`) that lives next to it.
#[derive(Clone, Debug)]
pub struct Kubectl {
    pub path: PathBuf,
    pub label: String,
}

impl Kubectl {
    /// The plain `kubectl` on `PATH`.
    pub fn dispatcher() -> Self {
        Kubectl {
            path: PathBuf::from("kubectl"),
            label: "kubectl (dispatcher)".to_string(),
        }
    }

    /// `kubectl.1.<minor>` next to the resolved `kubectl` on `PATH`, if it exists.
    pub fn minor(minor: u32) -> Option<Self> {
        let name = format!("kubectl.1.{minor}");
        let path = std::env::var_os("PATH")?;
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("kubectl");
            if !candidate.is_file() {
                continue;
            }
            let resolved = std::fs::canonicalize(&candidate).unwrap_or(candidate);
            for d in [resolved.parent(), Some(dir.as_path())]
                .into_iter()
                .flatten()
            {
                let p = d.join(&name);
                if p.is_file() {
                    return Some(Kubectl {
                        path: p,
                        label: name,
                    });
                }
            }
        }
        None
    }
}

/// Options for [`TestCluster::start_with`].
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// Use this data directory (persistent, non-ephemeral) instead of an ephemeral store.
    pub data_dir: Option<PathBuf>,
    /// More `k1s server` flags.
    pub extra_args: Vec<String>,
}

/// A running `k1s server` process.
pub struct TestCluster {
    child: Option<Child>,
    // Holds the kubeconfig, the logs, kubectl's cache and (if ephemeral) the data dir.
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    data_dir: PathBuf,
    url: String,
}

impl std::fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCluster")
            .field("url", &self.url)
            .field("kubeconfig", &self.kubeconfig)
            .finish()
    }
}

impl TestCluster {
    /// Starts an ephemeral cluster on a free port and waits until it is ready.
    pub fn start() -> Self {
        Self::start_with(StartOptions::default())
    }

    /// Starts a cluster with `opts` and waits until `/readyz` answers 200.
    pub fn start_with(opts: StartOptions) -> Self {
        let bin = k1s_bin();
        let dir = tempfile::Builder::new()
            .prefix("k1s-test-")
            .tempdir()
            .expect("create temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        let ephemeral = opts.data_dir.is_none();
        let data_dir = opts
            .data_dir
            .clone()
            .unwrap_or_else(|| dir.path().join("data"));
        let stdout_path = dir.path().join("stdout.log");
        let stderr_path = dir.path().join("stderr.log");
        let mut cmd = Command::new(bin);
        cmd.arg("server")
            .arg("--data-dir")
            .arg(&data_dir)
            .args(["--secure-port", "0"])
            .arg("--write-kubeconfig")
            .arg(&kubeconfig)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout_path).expect("stdout log"))
            .stderr(std::fs::File::create(&stderr_path).expect("stderr log"));
        if ephemeral {
            cmd.arg("--ephemeral");
        }
        cmd.args(&opts.extra_args);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let mut cluster = TestCluster {
            child: Some(child),
            dir,
            kubeconfig,
            data_dir,
            url: String::new(),
        };
        cluster.url = cluster.wait_for_serving_line(&stdout_path);
        cluster.wait_ready();
        cluster
    }

    fn wait_for_serving_line(&mut self, stdout_path: &Path) -> String {
        const MARKER: &str = "k1s is serving the Kubernetes API at ";
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            let out = std::fs::read_to_string(stdout_path).unwrap_or_default();
            if let Some(rest) = out.split(MARKER).nth(1) {
                let url = rest.split_whitespace().next().unwrap_or_default();
                if !url.is_empty() && rest.contains('\n') {
                    return url.to_string();
                }
            }
            if let Some(status) = self.try_wait() {
                panic!(
                    "k1s exited before serving ({status}); stdout:\n{out}\nstderr:\n{}",
                    self.server_stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "k1s did not print its serving line within {STARTUP_TIMEOUT:?}; stdout:\n{out}\nstderr:\n{}",
                self.server_stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut last = String::new();
        loop {
            if self.kubeconfig.exists() {
                let kubeconfig = self.kubeconfig.clone();
                // A separate thread so start() also works from inside a tokio runtime.
                let res = std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    rt.block_on(async move {
                        let client = client_from_kubeconfig(&kubeconfig).await?;
                        let req = http::Request::get("/readyz")
                            .body(Vec::new())
                            .map_err(|e| e.to_string())?;
                        client.request_text(req).await.map_err(|e| e.to_string())
                    })
                })
                .join()
                .expect("readyz thread");
                match res {
                    Ok(body) if body.trim() == "ok" => return,
                    Ok(body) => last = format!("readyz said {body:?}"),
                    Err(e) => last = e,
                }
            }
            if let Some(status) = self.try_wait() {
                panic!(
                    "k1s exited before ready ({status}); stderr:\n{}",
                    self.server_stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "k1s not ready within {STARTUP_TIMEOUT:?}: {last}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `https://127.0.0.1:PORT`
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// A scratch directory that lives as long as the cluster.
    pub fn scratch_dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .map(|c| c.id())
            .expect("process running")
    }

    /// What the server wrote to stderr so far.
    pub fn server_stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    /// The exit status, if the process has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().expect("try_wait"))
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to exit. Returns its exit status,
    /// or `None` if it is still running (it is then killed on drop).
    pub fn terminate(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let pid = self.pid();
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A kube-rs client with the admin kubeconfig.
    pub async fn client(&self) -> kube::Client {
        client_from_kubeconfig(&self.kubeconfig)
            .await
            .expect("kube client from the admin kubeconfig")
    }

    /// A kubeconfig for this cluster that authenticates with a bearer token.
    pub fn token_kubeconfig(&self, token: &str, name: &str) -> PathBuf {
        let ca = self.kubectl_ok(&[
            "config",
            "view",
            "--raw",
            "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ]);
        let path = self.scratch_dir().join(format!("{name}.kubeconfig"));
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k1s\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: c\n  context:\n    cluster: k1s\n    user: u\ncurrent-context: c\n",
            self.url
        );
        std::fs::write(&path, yaml).expect("write kubeconfig");
        path
    }

    /// Runs the dispatcher `kubectl` with `args`.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.run_kubectl(&Kubectl::dispatcher(), args, None, &[])
    }

    /// Runs `kubectl` with `args`, feeding `stdin`.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        self.run_kubectl(&Kubectl::dispatcher(), args, Some(stdin), &[])
    }

    /// Runs `kubectl` and fails the test (with stderr) unless it succeeds; returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        ok(args, self.kubectl(args))
    }

    /// `kubectl apply -f -` of `yaml`, which must succeed; returns stdout.
    pub fn apply(&self, yaml: &str) -> String {
        let args = ["apply", "-f", "-"];
        ok(&args, self.kubectl_stdin(&args, yaml))
    }

    /// Runs a specific kubectl binary, with optional stdin and extra environment variables.
    pub fn run_kubectl(
        &self,
        kubectl: &Kubectl,
        args: &[&str],
        stdin: Option<&str>,
        env: &[(&str, &str)],
    ) -> Output {
        let mut cmd = self.kubectl_command(kubectl, args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        run_with_timeout(cmd, stdin, KUBECTL_TIMEOUT)
            .unwrap_or_else(|e| panic!("{} {args:?}: {e}", kubectl.label))
    }

    /// A `Command` for `kubectl` with this cluster's kubeconfig and a private cache dir.
    pub fn kubectl_command(&self, kubectl: &Kubectl, args: &[&str]) -> Command {
        let mut cmd = Command::new(&kubectl.path);
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("kubecache"))
            .env_remove("KUBE_EDITOR")
            .env_remove("KUBECTL_EXTERNAL_DIFF");
        cmd
    }

    /// Starts a long-running kubectl (e.g. `get -w`) whose stdout lines are collected.
    pub fn kubectl_stream(&self, kubectl: &Kubectl, args: &[&str]) -> StreamingCommand {
        let mut cmd = self.kubectl_command(kubectl, args);
        StreamingCommand::spawn(&mut cmd, format!("{} {}", kubectl.label, args.join(" ")))
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Builds a kube-rs client from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> Result<kube::Client, String> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(|e| e.to_string())?;
    kube::Client::try_from(config).map_err(|e| e.to_string())
}

/// Asserts that a command succeeded and returns its stdout.
pub fn ok(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "kubectl {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that a command failed and returns its stderr.
/// A PEM certificate request for `common_name` with a fresh key (for CSR tests).
pub fn csr_pem(common_name: &str) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem")
}

pub fn fails(args: &[&str], out: Output) -> String {
    assert!(
        !out.status.success(),
        "kubectl {args:?} unexpectedly succeeded:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `cmd` to completion, killing it after `timeout`.
pub fn run_with_timeout(
    mut cmd: Command,
    stdin: Option<&str>,
    timeout: Duration,
) -> Result<Output, String> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("spawn: {e}"))?;
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin piped");
        let input = input.to_string();
        std::thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
    }
    let out_reader = drain(child.stdout.take().expect("stdout piped"));
    let err_reader = drain(child.stderr.take().expect("stderr piped"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stdout = out_reader.join().unwrap_or_default();
            let stderr = err_reader.join().unwrap_or_default();
            return Err(format!(
                "timed out after {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&stdout),
                String::from_utf8_lossy(&stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok(Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    })
}

fn drain<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

/// A long-running child process (e.g. `kubectl get -w`) whose stdout lines are collected as they
/// arrive. Killed on drop.
pub struct StreamingCommand {
    child: Child,
    label: String,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl std::fmt::Debug for StreamingCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingCommand")
            .field("label", &self.label)
            .finish()
    }
}

impl StreamingCommand {
    pub fn spawn(cmd: &mut Command, label: String) -> Self {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {label}: {e}"));
        let (tx, rx) = mpsc::channel();
        let out = child.stdout.take().expect("stdout piped");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let err = child.stderr.take().expect("stderr piped");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut err = err;
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("stderr lock")
                    .extend_from_slice(&buf[..n]);
            }
        });
        StreamingCommand {
            child,
            label,
            lines: rx,
            seen: Vec::new(),
            stderr,
        }
    }

    /// Waits until some line received so far (or arriving within `timeout`) satisfies `pred`;
    /// returns it. Fails the test with everything seen otherwise.
    pub fn wait_for_line(&mut self, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        if let Some(l) = self.seen.iter().find(|l| pred(l)) {
            return l.clone();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "{}: no matching line within {timeout:?} ({e}); lines so far:\n{}\nstderr:\n{}",
                    self.label,
                    self.seen.join("\n"),
                    String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock"))
                ),
            }
        }
    }

    /// All lines received so far.
    pub fn lines(&mut self) -> &[String] {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        &self.seen
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock")).into_owned()
    }

    /// Whether the process has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("try_wait")
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for StreamingCommand {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` until it returns `Some`, failing the test with `what` after `timeout`.
pub fn wait_until<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A namespace manifest.
pub fn namespace_yaml(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")
}
