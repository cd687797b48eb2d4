//! k1s on a real etcd (`--etcd-servers`): kubectl CRUD and watch, data surviving a restart, and
//! two servers on a three-member etcd cluster (shared writes, watches and conflicts, one leader
//! for the controllers, an etcd member and then the leading server killed, no acknowledged
//! write lost).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use k1s_tests::etcd::{EtcdCluster, EtcdProcess, EtcdTls};
use k1s_tests::tinyca::TinyCa;
use k1s_tests::writer::{AckedWriter, configmap_versions};
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
    let b = on_etcd(&etcd, db.path(), &[]);

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
                    .contains("etcd member refuses connections; routing around it")
                    .then_some(())
            },
        );
    }

    // Kill -9 A: its leases run out and B's controllers and scheduler take over; a Deployment
    // created afterwards still becomes Available.
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
        let present = configmap_versions(b.kubeconfig(), "default", prefix);
        let missing: Vec<_> = acked
            .iter()
            .filter(|(name, rv)| present.get(*name) != Some(rv))
            .collect();
        assert!(
            missing.is_empty(),
            "{} of {} acknowledged creates through {prefix} are missing or changed: {missing:?}",
            missing.len(),
            acked.len()
        );
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
