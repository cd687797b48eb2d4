//! `k1s snapshot save|restore|status` on the real binary: a snapshot taken while a writer goes
//! on is exactly the store at its revision, a server on the restored data dir serves it with
//! the same resourceVersions, damaged files and occupied data dirs are refused untouched, and
//! only system:masters may take a snapshot.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::Duration;

use k1s_tests::writer::{AckedWriter, configmap_versions};
use k1s_tests::{StartOptions, TestCluster, k1s_bin, stderr, stdout, wait_until};

fn k1s(args: &[&str]) -> Output {
    Command::new(k1s_bin()).args(args).output().unwrap()
}

fn k1s_ok(args: &[&str]) -> String {
    let out = k1s(args);
    assert!(
        out.status.success(),
        "k1s {args:?} failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

fn k1s_fails(args: &[&str]) -> String {
    let out = k1s(args);
    assert!(
        !out.status.success(),
        "k1s {args:?} succeeded: {}",
        stdout(&out)
    );
    stderr(&out)
}

/// The number after `revision ` in a `k1s snapshot` line.
fn revision_in(line: &str) -> u64 {
    line.split("revision ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no revision in {line:?}"))
}

#[test]
fn save_while_writing_restore_and_serve() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let mut c = TestCluster::start_with(StartOptions {
        data_dir: Some(data.clone()),
        extra_args: vec!["--nodes".into(), "0".into()],
    });
    let kubeconfig = c.kubeconfig().to_str().unwrap().to_string();
    let writer = AckedWriter::start(c.kubeconfig(), "default", "w-");
    wait_until(Duration::from_secs(60), "the writer to get going", || {
        (writer.acked_count() >= 20).then_some(())
    });

    let file = root.path().join("snap.db");
    let file_s = file.to_str().unwrap();
    let saved = k1s_ok(&["snapshot", "save", file_s, "--kubeconfig", &kubeconfig]);
    let revision = revision_in(&saved);
    let after_save = writer.acked_count();
    wait_until(
        Duration::from_secs(60),
        "more writes after the snapshot",
        || (writer.acked_count() >= after_save + 20).then_some(()),
    );
    let acked = writer.finish();
    assert!(
        acked.values().any(|rv| *rv > revision),
        "no write acknowledged after the snapshot's revision {revision}"
    );
    assert!(!root.path().join("snap.db.part").exists());
    assert_eq!(
        revision_in(&k1s_ok(&["snapshot", "status", file_s])),
        revision
    );

    // Only system:masters: a service account granted the path by RBAC is still refused.
    c.kubectl_ok(&["create", "serviceaccount", "snapper"]);
    c.kubectl_ok(&[
        "create",
        "clusterrole",
        "snapper",
        "--verb=get",
        "--non-resource-url=/k1s/snapshot",
    ]);
    c.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "snapper",
        "--clusterrole=snapper",
        "--serviceaccount=default:snapper",
    ]);
    let token = c.kubectl_ok(&["create", "token", "snapper"]);
    let sa_kubeconfig = c.token_kubeconfig(token.trim(), "snapper");
    let other = root.path().join("other.db");
    let err = k1s_fails(&[
        "snapshot",
        "save",
        other.to_str().unwrap(),
        "--kubeconfig",
        sa_kubeconfig.to_str().unwrap(),
    ]);
    assert!(err.contains("system:masters"), "{err}");
    assert!(!other.exists());
    // A snapshot is only read.
    let out = c.kubectl_stdin(&["create", "--raw", "/k1s/snapshot", "-f", "-"], "{}");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("POST is not supported on /k1s/snapshot"),
        "{err}"
    );
    assert!(c.terminate(Duration::from_secs(20)).is_some());

    // With no server on it, the data dir is read directly: everything acknowledged is in.
    let offline = root.path().join("offline.db");
    let data_s = data.to_str().unwrap();
    let out = k1s_ok(&[
        "snapshot",
        "save",
        offline.to_str().unwrap(),
        "--data-dir",
        data_s,
    ]);
    assert!(out.contains("directly"), "{out}");
    let newest = *acked.values().max().unwrap();
    assert!(revision_in(&out) >= newest, "{out} (newest write {newest})");

    // The new data dir keeps the cluster's PKI (copied by hand: it is not in the snapshot).
    // Damaged files are refused and nothing is created in it.
    let good = std::fs::read(&file).unwrap();
    let bad = root.path().join("bad.db");
    let target = root.path().join("restored");
    let target_s = target.to_str().unwrap();
    std::fs::create_dir_all(target.join("pki")).unwrap();
    for entry in std::fs::read_dir(data.join("pki")).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), target.join("pki").join(entry.file_name())).unwrap();
        }
    }
    let untouched = |what: &str| {
        let names: Vec<_> = std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["pki"], "{what} left {names:?} in {target_s}");
    };
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("a damaged file", flipped, "snapshot"),
        (
            "a truncated file",
            good[..good.len() - 100].to_vec(),
            "truncated",
        ),
        (
            "a foreign file",
            b"not a snapshot at all, just some text\n".to_vec(),
            "not a k1s snapshot",
        ),
    ];
    for (what, content, says) in cases {
        std::fs::write(&bad, &content).unwrap();
        let err = k1s_fails(&[
            "snapshot",
            "restore",
            bad.to_str().unwrap(),
            "--data-dir",
            target_s,
        ]);
        assert!(err.contains(says), "{what}: {err}");
        untouched(what);
    }
    let err = k1s_fails(&[
        "snapshot",
        "save",
        "x.db",
        "--etcd-servers",
        "http://127.0.0.1:2379",
    ]);
    assert!(err.contains("etcdctl snapshot save"), "{err}");

    let restored = k1s_ok(&["snapshot", "restore", file_s, "--data-dir", target_s]);
    assert_eq!(revision_in(&restored), revision);
    // The live data dir is occupied: refused, and left as it was.
    let before = std::fs::read_dir(data.join("store")).unwrap().count();
    let err = k1s_fails(&[
        "snapshot",
        "restore",
        file_s,
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    assert!(err.contains("already holds a store"), "{err}");
    assert_eq!(
        std::fs::read_dir(data.join("store")).unwrap().count(),
        before
    );

    // A server on the restored dir has every acknowledged object up to the snapshot's
    // revision, with its resourceVersion, and nothing written after it.
    let r = TestCluster::start_with(StartOptions {
        data_dir: Some(target.clone()),
        extra_args: vec!["--nodes".into(), "0".into()],
    });
    let want: BTreeMap<String, u64> = acked
        .iter()
        .filter(|(_, rv)| **rv <= revision)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    assert!(want.len() >= 20, "{want:?}");
    assert_eq!(configmap_versions(r.kubeconfig(), "default", "w-"), want);
    let rv: u64 = r
        .kubectl_ok(&[
            "create",
            "configmap",
            "later",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .parse()
        .unwrap();
    assert!(
        rv > revision,
        "a write after the restore got {rv} <= {revision}"
    );
}
