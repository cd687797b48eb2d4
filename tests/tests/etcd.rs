//! k1s on a real etcd (`--etcd-servers`): kubectl CRUD and watch, data surviving a restart, and
//! two servers on a three-member etcd cluster (shared writes, watches and conflicts, the
//! `kubernetes` endpoints listing the live servers, one leader
//! for the controllers, an etcd member and then the leading server killed, no acknowledged
//! write lost), a hung member routed around, and `k1s migrate` to etcd and back.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use k1s_tests::etcd::{EtcdCluster, EtcdProcess, EtcdTls};
use k1s_tests::tinyca::TinyCa;
use k1s_tests::writer::{AckedWriter, assert_no_acked_create_lost};
use k1s_tests::{Kubectl, StartOptions, TestCluster, wait_until};

fn on_etcd(etcd: &EtcdProcess, data_dir: &Path, extra: &[&str]) -> TestCluster {
    let mut extra_args = vec!["--etcd-servers".to_string(), etcd.url()];
    extra_args.extend(extra.iter().map(|s| s.to_string()));
    TestCluster::start_with(StartOptions {
        data_dir: Some(data_dir.to_path_buf()),
        extra_args,
    })
}

/// What `k1s join --control-plane` hands a new server: the cluster's PKI.
fn copy_pki(from: &Path, to: &Path) {
    let (src, dst) = (from.join("pki"), to.join("pki"));
    std::fs::create_dir_all(&dst).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
    }
}

fn lease_holder(c: &TestCluster, name: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "lease",
        "-n",
        "kube-system",
        name,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ])
}

/// The addresses of the `kubernetes` Service's endpoints, sorted.
fn endpoint_ips(c: &TestCluster) -> Vec<String> {
    let out = c.kubectl_ok(&[
        "get",
        "endpoints",
        "kubernetes",
        "-n",
        "default",
        "-o",
        "jsonpath={.subsets[0].addresses[*].ip}",
    ]);
    let mut ips: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    ips.sort();
    ips
}

#[test]
fn kubectl_crud_watch_and_restart_on_etcd() {
    let etcd = EtcdProcess::start();
    let data = tempfile::tempdir().unwrap();
    let mut c = on_etcd(&etcd, data.path(), &["--nodes", "0"]);
    c.kubectl_ok(&["create", "namespace", "etcd-a"]);
    let mut watch = c.kubectl_stream(
        &Kubectl::dispatcher(),
        &[
            "get",
            "configmaps",
            "-n",
            "etcd-a",
            "-w",
            "--output-watch-events",
            "-o",
            "custom-columns=EVENT:.type,NAME:.object.metadata.name,V:.object.data.v",
        ],
    );
    c.kubectl_ok(&[
        "create",
        "configmap",
        "one",
        "-n",
        "etcd-a",
        "--from-literal=v=1",
    ]);
    watch.wait_for_line(Duration::from_secs(30), |l| {
        l.contains("ADDED") && l.contains("one")
    });
    c.kubectl_ok(&[
        "patch",
        "configmap",
        "one",
        "-n",
        "etcd-a",
        "-p",
        r#"{"data":{"v":"2"}}"#,
    ]);
    watch.wait_for_line(Duration::from_secs(30), |l| {
        l.contains("MODIFIED") && l.contains("one") && l.ends_with('2')
    });
    c.kubectl_ok(&[
        "create",
        "configmap",
        "two",
        "-n",
        "etcd-a",
        "--from-literal=v=x",
    ]);
    c.kubectl_ok(&["delete", "configmap", "two", "-n", "etcd-a"]);
    watch.wait_for_line(Duration::from_secs(30), |l| {
        l.contains("DELETED") && l.contains("two")
    });
    // A stale write is a conflict, as on any backend.
    let rv = c.kubectl_ok(&[
        "get",
        "configmap",
        "one",
        "-n",
        "etcd-a",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    c.kubectl_ok(&["label", "configmap", "one", "-n", "etcd-a", "x=y"]);
    let stale = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: etcd-a\n  resourceVersion: \"{rv}\"\ndata:\n  v: \"3\"\n"
    );
    let out = c.kubectl_stdin(&["replace", "-f", "-"], &stale);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the object has been modified"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(watch);

    // k1s snapshots are for the embedded store: etcd users are sent to etcd's own tool.
    let file = data.path().join("snap.db");
    let out = std::process::Command::new(k1s_tests::k1s_bin())
        .args(["snapshot", "save"])
        .arg(&file)
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("etcdctl snapshot save"), "{err}");
    assert!(!file.exists() && !data.path().join("snap.db.part").exists());

    // The data lives in etcd: a server restarted on an empty data dir (only its PKI copied)
    // serves it.
    assert!(c.terminate(Duration::from_secs(20)).is_some());
    drop(c);
    let fresh = tempfile::tempdir().unwrap();
    copy_pki(data.path(), fresh.path());
    assert!(!fresh.path().join("store").exists());
    let c = on_etcd(&etcd, fresh.path(), &["--nodes", "0"]);
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "configmap",
            "one",
            "-n",
            "etcd-a",
            "-o",
            "jsonpath={.data.v}/{.metadata.labels.x}",
        ]),
        "2/y"
    );
    let out = c.kubectl(&["get", "configmap", "two", "-n", "etcd-a"]);
    assert!(!out.status.success());
}

#[test]
fn two_servers_on_a_three_member_etcd_cluster() {
    let mut etcd = EtcdCluster::start_members(3);
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A leads: both leases are A's before B starts. B runs the simulated node, so pods still
    // run once A is gone.
    let a = on_etcd(&etcd, da.path(), &["--nodes", "0"]);
    let cm_holder = wait_until(Duration::from_secs(30), "A to lead the controllers", || {
        Some(lease_holder(&a, "kube-controller-manager")).filter(|h| !h.is_empty())
    });
    let sched_holder = wait_until(Duration::from_secs(30), "A to lead scheduling", || {
        Some(lease_holder(&a, "kube-scheduler")).filter(|h| !h.is_empty())
    });
    copy_pki(da.path(), db.path());
    // B's bootstrap (namespaces, RBAC, PriorityClasses, the kubernetes Service) runs against
    // a store A already filled: it must start cleanly.
    let b = on_etcd(&etcd, db.path(), &["--advertise-address", "127.0.0.2"]);
    // The `kubernetes` Service's endpoints list both servers (upstream's lease reconciler).
    let a_ip = endpoint_ips(&a)
        .into_iter()
        .find(|ip| ip != "127.0.0.2")
        .expect("A's address in the endpoints");
    wait_until(
        Duration::from_secs(30),
        "both servers in the endpoints",
        || {
            let mut want = vec![a_ip.clone(), "127.0.0.2".to_string()];
            want.sort();
            (endpoint_ips(&b) == want).then_some(())
        },
    );

    // Node ports are claimed through the store: B, which loaded its view of the ports in use
    // before A allocated one, does not hand out the same port.
    b.kubectl_ok(&["create", "service", "clusterip", "loads-b", "--tcp=80:80"]);
    let node_port = |c: &TestCluster, name: &str| {
        c.kubectl_ok(&["create", "service", "nodeport", name, "--tcp=80:80"]);
        c.kubectl_ok(&[
            "get",
            "service",
            name,
            "-o",
            "jsonpath={.spec.ports[0].nodePort}",
        ])
    };
    let (via_a, via_b) = (node_port(&a, "np-a"), node_port(&b, "np-b"));
    assert_ne!(via_a, via_b, "both servers handed out node port {via_a}");

    // A write through one server is seen by a watch on the other.
    let mut watch_b = b.kubectl_stream(
        &Kubectl::dispatcher(),
        &["get", "configmaps", "-n", "default", "-w", "-o", "name"],
    );
    a.kubectl_ok(&["create", "configmap", "from-a", "--from-literal=k=v"]);
    watch_b.wait_for_line(Duration::from_secs(30), |l| l.contains("from-a"));
    assert_eq!(
        b.kubectl_ok(&["get", "configmap", "from-a", "-o", "jsonpath={.data.k}"]),
        "v"
    );
    drop(watch_b);
    // resourceVersion conflicts hold across servers.
    let rv = a.kubectl_ok(&[
        "get",
        "configmap",
        "from-a",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    b.kubectl_ok(&["label", "configmap", "from-a", "by=b"]);
    let stale = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-a\n  namespace: default\n  resourceVersion: \"{rv}\"\ndata:\n  k: stale\n"
    );
    let out = a.kubectl_stdin(&["replace", "-f", "-"], &stale);
    assert!(!out.status.success(), "a stale replace through A succeeded");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the object has been modified"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // B's controllers and scheduler wait: the leases are still A's.
    assert_eq!(lease_holder(&b, "kube-controller-manager"), cm_holder);
    assert_eq!(lease_holder(&b, "kube-scheduler"), sched_holder);

    // A writer through each server records every create it got an answer for.
    let writer_a = AckedWriter::start(a.kubeconfig(), "default", "via-a-");
    let writer_b = AckedWriter::start(b.kubeconfig(), "default", "via-b-");
    wait_until(Duration::from_secs(60), "both writers to get going", || {
        (writer_a.acked_count() >= 10 && writer_b.acked_count() >= 10).then_some(())
    });

    // Kill -9 the etcd member that leads raft: the other two elect a leader and both servers
    // go on writing.
    let leader = wait_until(Duration::from_secs(30), "an etcd leader", || etcd.leader());
    etcd.kill_member(leader);
    let (na, nb) = (writer_a.acked_count(), writer_b.acked_count());
    wait_until(
        Duration::from_secs(60),
        "writes through both servers with an etcd member gone",
        || (writer_a.acked_count() >= na + 20 && writer_b.acked_count() >= nb + 20).then_some(()),
    );
    assert!(
        (0..3).filter(|i| *i != leader).all(|i| etcd.healthy(i)),
        "the two remaining etcd members are not healthy"
    );
    // Both servers stopped sending requests to the dead member.
    for (server, name) in [(&a, "A"), (&b, "B")] {
        wait_until(
            Duration::from_secs(30),
            &format!("{name} to route around the dead etcd member"),
            || {
                server
                    .server_stderr()
                    .contains("etcd member does not answer; routing around it")
                    .then_some(())
            },
        );
    }

    // Kill -9 A: its leases run out and B's controllers and scheduler take over; a Deployment
    // created afterwards still becomes Available; A's address leaves the endpoints.
    drop(a);
    let nb = writer_b.acked_count();
    b.kubectl_ok(&[
        "create",
        "deployment",
        "after",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=2",
    ]);
    wait_until(
        Duration::from_secs(90),
        "the Deployment to become Available on the surviving server",
        || {
            let ready = b.kubectl_ok(&[
                "get",
                "deployment",
                "after",
                "-o",
                "jsonpath={.status.availableReplicas}",
            ]);
            (ready == "2").then_some(())
        },
    );
    wait_until(
        Duration::from_secs(60),
        "A's address out of the endpoints",
        || (endpoint_ips(&b) == ["127.0.0.2"]).then_some(()),
    );
    let now = lease_holder(&b, "kube-controller-manager");
    assert!(!now.is_empty() && now != cm_holder, "B leads now: {now}");
    let now = lease_holder(&b, "kube-scheduler");
    assert!(
        !now.is_empty() && now != sched_holder,
        "B schedules now: {now}"
    );
    wait_until(
        Duration::from_secs(60),
        "writes through B after A died",
        || (writer_b.acked_count() >= nb + 10).then_some(()),
    );

    // No acknowledged write is lost: every create either server answered is there, at the
    // resourceVersion it was answered with (including those A acknowledged before it died).
    for (prefix, acked) in [("via-a-", writer_a.finish()), ("via-b-", writer_b.finish())] {
        assert_no_acked_create_lost(b.kubeconfig(), "default", prefix, &acked);
    }
}

#[test]
fn tls_etcd_with_client_certificates() {
    let certs = tempfile::tempdir().unwrap();
    let ca = TinyCa::new("etcd-ca");
    let write = |name: &str, pem: &str| {
        let path = certs.path().join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    let (serving, serving_key) = ca.issue(&["127.0.0.1", "localhost"], None);
    let (client, client_key) = ca.issue(&[], Some(("kube-apiserver-etcd-client", &[])));
    let tls = EtcdTls {
        cert_file: write("server.crt", &serving),
        key_file: write("server.key", &serving_key),
        ca_file: write("ca.crt", &ca.pem),
    };
    let (client_file, client_key_file) = (
        write("client.crt", &client),
        write("client.key", &client_key),
    );
    let etcd = EtcdCluster::start_tls(&tls);
    assert!(etcd.url().starts_with("https://"));

    // Without a client certificate etcd refuses the handshake: the server says so and exits.
    let data = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(k1s_tests::k1s_bin());
    cmd.arg("server")
        .arg("--data-dir")
        .arg(data.path())
        .args(["--secure-port", "0", "--nodes", "0"])
        .args(["--etcd-servers", &etcd.url()])
        .arg("--etcd-cafile")
        .arg(&tls.ca_file);
    let out = k1s_tests::run_with_timeout(cmd, None, Duration::from_secs(60)).unwrap();
    assert!(
        !out.status.success(),
        "a server without a client certificate started"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pass --etcd-certfile and --etcd-keyfile"),
        "{err}"
    );

    // With one, it serves.
    let (cafile, certfile, keyfile) = (
        tls.ca_file.to_str().unwrap(),
        client_file.to_str().unwrap(),
        client_key_file.to_str().unwrap(),
    );
    let c = on_etcd(
        &etcd,
        data.path(),
        &[
            "--nodes",
            "0",
            "--etcd-cafile",
            cafile,
            "--etcd-certfile",
            certfile,
            "--etcd-keyfile",
            keyfile,
        ],
    );
    c.kubectl_ok(&["create", "configmap", "over-tls", "--from-literal=k=v"]);
    assert_eq!(
        c.kubectl_ok(&["get", "configmap", "over-tls", "-o", "jsonpath={.data.k}"]),
        "v"
    );
}

#[test]
fn a_hung_etcd_member_is_routed_around() {
    let etcd = EtcdCluster::start_members(3);
    let dir = tempfile::tempdir().unwrap();
    let k = on_etcd(
        &etcd,
        dir.path(),
        &["--nodes", "0", "--disable-scheduler", "--controllers=-*"],
    );
    let mut watch = k.kubectl_stream(
        &Kubectl::dispatcher(),
        &["get", "configmaps", "-n", "default", "-w", "-o", "name"],
    );
    let writer = AckedWriter::start(k.kubeconfig(), "default", "hung-");
    wait_until(Duration::from_secs(60), "the writer to get going", || {
        (writer.acked_count() >= 10).then_some(())
    });
    watch.wait_for_line(Duration::from_secs(60), |l| l.contains("hung-"));

    // Hang the raft leader (SIGSTOP): its ports still accept connections, so only a request
    // that needs an answer shows it is gone. The other two elect a leader and go on.
    let leader = wait_until(Duration::from_secs(30), "an etcd leader", || etcd.leader());
    etcd.stop_member(leader);
    let n = writer.acked_count();
    wait_until(
        Duration::from_secs(60),
        "writes with an etcd member hung",
        || (writer.acked_count() >= n + 20).then_some(()),
    );
    wait_for_log(&k, "etcd member does not answer; routing around it");
    // A watch opened before the member hung still hears of what is written after.
    k.kubectl_ok(&["create", "configmap", "after-the-hang"]);
    watch.wait_for_line(Duration::from_secs(60), |l| l.contains("after-the-hang"));

    // Resumed, the member catches up and is routed to again.
    etcd.resume_member(leader);
    wait_until(
        Duration::from_secs(60),
        "the resumed member to be healthy",
        || etcd.healthy(leader).then_some(()),
    );
    wait_for_log(&k, "etcd member answers again");
    let n = writer.acked_count();
    wait_until(
        Duration::from_secs(60),
        "writes after the member came back",
        || (writer.acked_count() >= n + 20).then_some(()),
    );
    assert_no_acked_create_lost(k.kubeconfig(), "default", "hung-", &writer.finish());
}

/// Waits up to a minute for `text` in the server's log; on failure the log is shown.
fn wait_for_log(k: &TestCluster, text: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !k.server_stderr().contains(text) {
        assert!(
            std::time::Instant::now() < deadline,
            "no {text:?} in the server's log within 60 s:\n{}",
            k.server_stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `k1s migrate` with `args`.
fn migrate(args: &[&str]) -> std::process::Output {
    std::process::Command::new(k1s_tests::k1s_bin())
        .arg("migrate")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn k1s_migrate_moves_a_cluster_to_etcd_and_back() {
    let (d_sled, d_etcd, d_back) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let sled_dir = d_sled.path().to_str().unwrap().to_string();
    let mut first = TestCluster::start_with(StartOptions {
        data_dir: Some(d_sled.path().to_path_buf()),
        extra_args: vec!["--nodes".into(), "0".into()],
    });
    first.kubectl_ok(&["create", "namespace", "moved"]);
    first.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "moved",
        "--from-literal=colour=green",
    ]);
    first.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "password",
        "-n",
        "moved",
        "--from-literal=p=s3cret",
    ]);
    let uid_of = |c: &TestCluster, kind: &str, name: &str| {
        c.kubectl_ok(&[
            "get",
            kind,
            name,
            "-n",
            "moved",
            "-o",
            "jsonpath={.metadata.uid}",
        ])
    };
    let cm_uid = uid_of(&first, "configmap", "settings");
    let secret_uid = uid_of(&first, "secret", "password");

    // The data dir of a running server is refused: its store is held.
    let out = migrate(&[
        "--from",
        &format!("dir:{sled_dir}"),
        "--to",
        "etcd:http://127.0.0.1:1",
    ]);
    assert!(!out.status.success(), "migrating a live data dir succeeded");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is its server still running?"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(first.terminate(Duration::from_secs(30)).is_some());

    let etcd = EtcdCluster::start();
    let out = migrate(&[
        "--from",
        &format!("sled:{sled_dir}"),
        "--to",
        &format!("etcd:{}", etcd.url()),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("copied "), "{stdout}");
    // A second copy into a target that holds a cluster is refused.
    let again = migrate(&[
        "--from",
        &format!("sled:{sled_dir}"),
        "--to",
        &format!("etcd:{}", etcd.url()),
    ]);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("migrate into an empty store"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    // A server on etcd (with the cluster's PKI) serves the same objects.
    copy_pki(d_sled.path(), d_etcd.path());
    let mut on = on_etcd(&etcd, d_etcd.path(), &["--nodes", "0"]);
    assert_eq!(uid_of(&on, "configmap", "settings"), cm_uid);
    assert_eq!(uid_of(&on, "secret", "password"), secret_uid);
    assert_eq!(
        on.kubectl_ok(&[
            "get",
            "configmap",
            "settings",
            "-n",
            "moved",
            "-o",
            "jsonpath={.data.colour}"
        ]),
        "green"
    );
    on.kubectl_ok(&["create", "configmap", "made-on-etcd", "-n", "moved"]);
    let made_uid = uid_of(&on, "configmap", "made-on-etcd");
    assert!(on.terminate(Duration::from_secs(30)).is_some());

    // And back into a new embedded store.
    let back_dir = d_back.path().to_str().unwrap().to_string();
    let out = migrate(&[
        "--from",
        &format!("etcd:{}", etcd.url()),
        "--to",
        &format!("sled:{back_dir}"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    copy_pki(d_sled.path(), d_back.path());
    let back = TestCluster::start_with(StartOptions {
        data_dir: Some(d_back.path().to_path_buf()),
        extra_args: vec!["--nodes".into(), "0".into()],
    });
    assert_eq!(uid_of(&back, "configmap", "settings"), cm_uid);
    assert_eq!(uid_of(&back, "secret", "password"), secret_uid);
    assert_eq!(uid_of(&back, "configmap", "made-on-etcd"), made_uid);

    // A source that is neither form gets a clear error.
    let out = migrate(&["--from", "nfs:/x", "--to", &format!("sled:{back_dir}")]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("expected dir:DATA_DIR or etcd:URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
