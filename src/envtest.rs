//! Drop-ins for controller-runtime's envtest: `k1s kube-apiserver` (or k1s run as
//! `kube-apiserver`) takes kube-apiserver's flags as envtest passes them and serves from memory,
//! and `k1s etcd` (or run as `etcd`) only answers envtest's `/health` probe.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::Context;

/// kube-apiserver flags k1s honours (others are accepted and ignored, with a warning).
const APISERVER_FLAGS: &[(&str, &str)] = &[
    (
        "cert-dir",
        "Where apiserver.crt/apiserver.key are read from (envtest writes them there)",
    ),
    ("secure-port", "HTTPS port (0 picks a free one)"),
    ("bind-address", "Address to listen on"),
    (
        "advertise-address",
        "Address of the `kubernetes` Service's endpoints",
    ),
    (
        "client-ca-file",
        "Also accept client certificates signed by these CAs",
    ),
    ("tls-cert-file", "Serving certificate (PEM)"),
    ("tls-private-key-file", "Serving key (PEM)"),
    ("token-auth-file", "Static bearer tokens (CSV)"),
    (
        "service-cluster-ip-range",
        "The Services' IPv4 range (default 10.96.0.0/12)",
    ),
    ("audit-policy-file", "audit.k8s.io/v1 Policy"),
    ("audit-log-path", "Audit log (- for standard output)"),
    ("max-requests-inflight", "Concurrent read-only requests"),
    (
        "max-mutating-requests-inflight",
        "Concurrent mutating requests",
    ),
];

/// Flags accepted silently and left out of `--help`: envtest greps the help for
/// `--insecure-port` and passes it only to servers that list it (before 1.20).
const HIDDEN_FLAGS: &[&str] = &["insecure-port", "insecure-bind-address"];

/// Flags envtest passes that k1s accepts without acting on them.
const IGNORED_FLAGS: &[(&str, &str)] = &[
    ("etcd-servers", "ignored: k1s keeps the data in memory"),
    (
        "authorization-mode",
        "ignored: k1s always authorizes with Node and RBAC",
    ),
    ("allow-privileged", "ignored: privileged pods are allowed"),
    ("disable-admission-plugins", "ignored"),
    ("enable-admission-plugins", "ignored"),
    (
        "service-account-issuer",
        "ignored: tokens are issued with k1s's own key",
    ),
    ("service-account-key-file", "ignored"),
    ("service-account-signing-key-file", "ignored"),
    ("feature-gates", "ignored"),
    ("v", "ignored"),
];

/// Go's `flag` syntax: `--name=value`, `--name value`, `-name`; a flag without `=` takes the
/// next argument unless it is a boolean (`--help`, or the next argument is another flag).
pub fn parse_go_flags(args: &[String]) -> (BTreeMap<String, Vec<String>>, Vec<String>) {
    let mut flags: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut positional = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(arg) = it.next() {
        let Some(flag) = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .filter(|f| !f.is_empty())
        else {
            positional.push(arg.clone());
            continue;
        };
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None if matches!(flag, "help" | "h" | "version") => (flag.to_string(), String::new()),
            None => match it.peek() {
                Some(next) if !next.starts_with('-') => {
                    let v = next.to_string();
                    it.next();
                    (flag.to_string(), v)
                }
                _ => (flag.to_string(), "true".to_string()),
            },
        };
        flags.entry(name).or_default().push(value);
    }
    (flags, positional)
}

fn usage(name: &str, flags: &[(&str, &str)], ignored: &[(&str, &str)]) -> String {
    let mut out = format!(
        "Usage: {name} [flags]\n\nk1s standing in for {name} (controller-runtime envtest).\n\nFlags:\n"
    );
    for (flag, help) in flags.iter().chain(ignored) {
        out.push_str(&format!("      --{flag} string\n            {help}\n"));
    }
    out
}

/// The last value of a flag.
fn last<'a>(flags: &'a BTreeMap<String, Vec<String>>, name: &str) -> Option<&'a str> {
    flags
        .get(name)
        .and_then(|v| v.last())
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// What `k1s kube-apiserver <flags>` runs.
pub struct ApiServerPlan {
    pub options: k1s::ControlPlaneOptions,
    /// A temporary data directory when no `--cert-dir` was given (removed on exit).
    pub temp_dir: Option<tempfile::TempDir>,
}

/// The control plane for kube-apiserver's flags; `None` when `--help`/`--version` was answered.
pub fn apiserver_plan(args: &[String]) -> anyhow::Result<Option<ApiServerPlan>> {
    let (flags, positional) = parse_go_flags(args);
    if flags.contains_key("help") || flags.contains_key("h") {
        print!(
            "{}",
            usage("kube-apiserver", APISERVER_FLAGS, IGNORED_FLAGS)
        );
        return Ok(None);
    }
    if flags.contains_key("version") {
        println!("Kubernetes v1.33.0-k1s");
        return Ok(None);
    }
    anyhow::ensure!(
        positional.is_empty(),
        "unexpected arguments: {}",
        positional.join(" ")
    );
    for name in flags.keys() {
        let known = APISERVER_FLAGS
            .iter()
            .chain(IGNORED_FLAGS)
            .any(|(f, _)| f == name)
            || HIDDEN_FLAGS.contains(&name.as_str());
        if !known {
            eprintln!("k1s kube-apiserver: flag --{name} is not supported and is ignored");
        }
    }
    let path = |name: &str| last(&flags, name).map(PathBuf::from);
    let ip = |name: &str| -> anyhow::Result<Option<IpAddr>> {
        last(&flags, name)
            .map(|v| v.parse().with_context(|| format!("--{name}={v}")))
            .transpose()
    };
    let number = |name: &str, default: usize| -> anyhow::Result<usize> {
        last(&flags, name).map_or(Ok(default), |v| {
            v.parse().with_context(|| format!("--{name}={v}"))
        })
    };
    let cert_dir = path("cert-dir");
    let (data_dir, temp_dir) = match &cert_dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            (d.clone(), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("k1s-apiserver-")
                .tempdir()?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    // envtest writes its serving pair into --cert-dir; upstream serves it when present.
    let serving_cert_files = match (path("tls-cert-file"), path("tls-private-key-file")) {
        (Some(c), Some(k)) => Some((c, k)),
        (None, None) => cert_dir
            .map(|d| (d.join("apiserver.crt"), d.join("apiserver.key")))
            .filter(|(c, k)| c.is_file() && k.is_file()),
        _ => anyhow::bail!("--tls-cert-file and --tls-private-key-file go together"),
    };
    let secure_port = last(&flags, "secure-port").map_or(Ok(6443), |v| {
        v.parse::<u16>()
            .with_context(|| format!("--secure-port={v}"))
    })?;
    let server = k1s_apiserver::server::ServerConfig {
        kubeconfig_path: Some(data_dir.join("k1s-admin.conf")),
        data_dir,
        bind_address: ip("bind-address")?.unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)),
        secure_port,
        ephemeral: true,
        advertise_address: ip("advertise-address")?,
        token_auth_file: path("token-auth-file"),
        audit_policy_file: path("audit-policy-file"),
        audit_log_path: path("audit-log-path"),
        max_requests_inflight: number("max-requests-inflight", 400)?,
        max_mutating_requests_inflight: number("max-mutating-requests-inflight", 200)?,
        serving_cert_files,
        client_ca_file: path("client-ca-file"),
        service_cluster_ip_range: last(&flags, "service-cluster-ip-range").map(str::to_string),
        ..Default::default()
    };
    // envtest has no controllers; k1s runs them (garbage collection, namespace deletion) unless
    // K1S_CONTROLLERS says otherwise (`-*` for none). No scheduler or nodes: pods stay Pending.
    let controllers = std::env::var("K1S_CONTROLLERS").unwrap_or_else(|_| "*".into());
    let controller_manager = k1s_controller_manager::Options {
        controllers: controllers
            .split(',')
            .map(|s| s.trim().to_string())
            .collect(),
        leader_elect: false,
        ..Default::default()
    };
    Ok(Some(ApiServerPlan {
        options: k1s::ControlPlaneOptions {
            server,
            controller_manager: Some(controller_manager),
            scheduler: None,
            nodes: None,
        },
        temp_dir,
    }))
}

/// The addresses of `--listen-client-urls` (`http://host:port`, comma-separated).
pub fn etcd_listen_addresses(args: &[String]) -> anyhow::Result<Option<Vec<SocketAddr>>> {
    let (flags, _) = parse_go_flags(args);
    if flags.contains_key("help") || flags.contains_key("h") {
        print!(
            "{}",
            usage(
                "etcd",
                &[("listen-client-urls", "Where /health is answered")],
                &[
                    ("advertise-client-urls", "ignored"),
                    ("listen-peer-urls", "ignored"),
                    ("data-dir", "ignored: nothing is stored"),
                    ("unsafe-no-fsync", "ignored"),
                ],
            )
        );
        return Ok(None);
    }
    if flags.contains_key("version") {
        println!("etcd Version: 3.5.21 (k1s stand-in)");
        return Ok(None);
    }
    let urls = last(&flags, "listen-client-urls").unwrap_or("http://127.0.0.1:2379");
    let mut out = Vec::new();
    for url in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let hostport = url
            .strip_prefix("http://")
            .with_context(|| format!("--listen-client-urls: {url} is not http://host:port"))?
            .trim_end_matches('/');
        let (host, port) = hostport
            .rsplit_once(':')
            .with_context(|| format!("--listen-client-urls: {url} has no port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ip: IpAddr = match host {
            "localhost" => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            h => h
                .parse()
                .with_context(|| format!("--listen-client-urls: {url}"))?,
        };
        let port: u16 = port
            .parse()
            .with_context(|| format!("--listen-client-urls: {url}"))?;
        out.push(SocketAddr::new(ip, port));
    }
    Ok(Some(out))
}

/// Answers `GET /health` with etcd's `{"health":"true","reason":""}` (404 for anything else)
/// on each address until the future is dropped.
pub async fn serve_etcd_health(addresses: Vec<SocketAddr>) -> anyhow::Result<()> {
    let mut listeners = Vec::new();
    for a in addresses {
        listeners.push(
            tokio::net::TcpListener::bind(a)
                .await
                .with_context(|| format!("listening on {a}"))?,
        );
    }
    let mut tasks = tokio::task::JoinSet::new();
    for listener in listeners {
        tasks.spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(answer_health(conn));
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// One HTTP/1.x exchange: the request line decides the answer; the connection then closes.
async fn answer_health(mut conn: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    // Read until the end of the headers (or 16 KiB, or 5 s).
    let read = async {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .is_err()
    {
        return;
    }
    let request = String::from_utf8_lossy(&buf);
    let mut words = request.split_whitespace();
    let (method, target) = (words.next(), words.next());
    let path = target.map(|t| t.split('?').next().unwrap_or(t));
    let (status, body) = match (method, path) {
        (Some("GET" | "HEAD"), Some("/health" | "/readyz" | "/livez")) => {
            ("200 OK", r#"{"health":"true","reason":""}"#)
        }
        _ => ("404 Not Found", "404 page not found\n"),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(response.as_bytes()).await;
    let _ = conn.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn go_flags_parse_as_go_does() {
        let (flags, positional) = parse_go_flags(&strings(&[
            "--cert-dir=/tmp/x",
            "--secure-port",
            "1234",
            "-v=2",
            "--allow-privileged",
            "--help",
            "extra",
        ]));
        assert_eq!(flags["cert-dir"], ["/tmp/x"]);
        assert_eq!(flags["secure-port"], ["1234"]);
        assert_eq!(flags["v"], ["2"]);
        assert_eq!(flags["allow-privileged"], ["true"]);
        assert_eq!(flags["help"], [""]);
        assert_eq!(positional, ["extra"]);
    }

    #[test]
    fn etcd_urls() {
        let got = etcd_listen_addresses(&strings(&[
            "--listen-client-urls=http://127.0.0.1:2379,http://localhost:2380",
            "--data-dir=/tmp/etcd",
        ]))
        .expect("parse")
        .expect("not help");
        assert_eq!(
            got,
            [
                "127.0.0.1:2379".parse().expect("addr"),
                "127.0.0.1:2380".parse().expect("addr")
            ]
        );
        for bad in ["https://127.0.0.1:1", "http://127.0.0.1", "http://nohost:1"] {
            let args = strings(&[&format!("--listen-client-urls={bad}")]);
            assert!(etcd_listen_addresses(&args).is_err(), "{bad}");
        }
    }

    #[test]
    fn apiserver_plan_uses_envtest_cert_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("apiserver.crt"), "x").expect("write");
        std::fs::write(dir.path().join("apiserver.key"), "x").expect("write");
        let d = dir.path().display();
        let plan = apiserver_plan(&strings(&[
            &format!("--cert-dir={d}"),
            "--secure-port=0",
            "--bind-address=127.0.0.1",
            &format!("--client-ca-file={d}/ca.crt"),
            "--etcd-servers=http://127.0.0.1:1",
        ]))
        .expect("plan")
        .expect("not help");
        let server = plan.options.server;
        assert_eq!(
            server.serving_cert_files,
            Some((
                dir.path().join("apiserver.crt"),
                dir.path().join("apiserver.key")
            ))
        );
        assert_eq!(server.client_ca_file, Some(dir.path().join("ca.crt")));
        assert_eq!(server.bind_address.to_string(), "127.0.0.1");
        assert!(plan.temp_dir.is_none());
        assert!(apiserver_plan(&strings(&["--secure-port=x"])).is_err());
    }
}
