//! `k1s upgrade plan|apply` on the real binary: format-2 and format-1 (sled) data dirs are planned
//! as upgradable, backed up and upgraded in place to image stores, then served with every object;
//! an up-to-date store is left alone; a store a running server holds, a newer format and a missing or foreign data dir are
//! refused and left as they were.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use k1s_tests::writer::configmap_versions;
use k1s_tests::{StartOptions, TestCluster, k1s_bin, stderr, stdout};

fn k1s(args: &[&str]) -> Output {
    k1s_with_stdin(args, "")
}

fn k1s_with_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(k1s_bin())
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
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

/// Every file under `dir` with its size, and the marker's text: what "left as it was" compares.
fn fingerprint(dir: &Path) -> (Vec<(String, u64)>, String) {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, u64)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(&path, root, out);
            } else {
                let name = path.strip_prefix(root).unwrap().display().to_string();
                out.push((name, entry.metadata().unwrap().len()));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    let marker = std::fs::read_to_string(dir.join("store").join("FORMAT")).unwrap_or_default();
    (files, marker)
}

fn start(data: &Path) -> TestCluster {
    start_with(data, &[])
}

fn start_with(data: &Path, args: &[&str]) -> TestCluster {
    let mut extra_args = vec!["--nodes".to_string(), "0".to_string()];
    extra_args.extend(args.iter().map(|a| a.to_string()));
    TestCluster::start_with(StartOptions {
        data_dir: Some(data.to_path_buf()),
        extra_args,
    })
}

/// Whether `k1s upgrade plan`'s table has the store row going from `from` to this build's format.
fn plans(out: &str, from: u32) -> bool {
    let want = ["store", "format", &from.to_string(), "format", "4"].map(String::from);
    out.lines()
        .any(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>() == want)
}

#[test]
fn format_1_store_is_backed_up_upgraded_and_served() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let data_s = data.to_str().unwrap();
    // A new store is an image store (format 4); a compressed one is a sled store (format 2).
    let mut c = start_with(&data, &["--store-compression"]);
    for i in 0..5 {
        c.kubectl_ok(&[
            "create",
            "configmap",
            &format!("up-{i}"),
            "--from-literal=k=v",
        ]);
    }
    c.kubectl_ok(&["create", "secret", "generic", "up-s", "--from-literal=p=q"]);
    let before = configmap_versions(c.kubeconfig(), "default", "up-");
    assert_eq!(before.len(), 5);

    // A running server holds the store: both commands refuse and write nothing.
    let held = fingerprint(&data);
    let err = k1s_fails(&["upgrade", "plan", "--data-dir", data_s]);
    assert!(
        err.contains("locked") && err.contains("running k1s server"),
        "{err}"
    );
    let err = k1s_fails(&["upgrade", "apply", "--yes", "--data-dir", data_s]);
    assert!(err.contains("locked"), "{err}");
    assert_eq!(fingerprint(&data).1, held.1);
    assert!(
        !held.0.iter().any(|(n, _)| n.starts_with("backup-")),
        "{held:?}"
    );
    assert!(c.terminate(Duration::from_secs(20)).is_some());

    // A sled store with its log (format 2) can be upgraded.
    let store = data.join("store");
    assert_eq!(
        std::fs::read_to_string(store.join("FORMAT")).unwrap(),
        "k1s-store 2\n"
    );
    let out = k1s_ok(&["upgrade", "plan", "--data-dir", data_s]);
    assert!(plans(&out, 2), "{out}");

    // Make it a format-1 store: sled alone (no write-ahead log) under a format-1 marker.
    std::fs::remove_dir_all(store.join("wal")).unwrap();
    std::fs::write(store.join("FORMAT"), "k1s-store 1\n").unwrap();
    let old = fingerprint(&data);

    let out = k1s_ok(&["upgrade", "plan", "--data-dir", data_s]);
    assert!(out.contains("Upgrade available"), "{out}");
    assert!(plans(&out, 1), "{out}");
    assert!(out.contains("k1s upgrade apply --data-dir"), "{out}");
    assert_eq!(fingerprint(&data), old);

    // An existing file is never overwritten by a backup.
    let taken = root.path().join("taken.snap");
    std::fs::write(&taken, "mine").unwrap();
    let err = k1s_fails(&[
        "upgrade",
        "apply",
        "--yes",
        "--data-dir",
        data_s,
        "--backup",
        taken.to_str().unwrap(),
    ]);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "mine");
    assert_eq!(fingerprint(&data), old);

    // Not confirmed: nothing happens.
    let backup = root.path().join("before-upgrade.snap");
    let backup_s = backup.to_str().unwrap();
    let args = [
        "upgrade",
        "apply",
        "--data-dir",
        data_s,
        "--backup",
        backup_s,
    ];
    let out = k1s_with_stdin(&args, "n\n");
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("Are you sure"), "{}", stdout(&out));
    assert!(stderr(&out).contains("aborted"), "{}", stderr(&out));
    assert_eq!(fingerprint(&data), old);
    assert!(!backup.exists());

    let out = k1s_with_stdin(&args, "y\n");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    for want in [
        "[upgrade/backup]",
        "[upgrade/store]",
        "from format 1",
        "[upgrade] SUCCESS!",
    ] {
        assert!(text.contains(want), "no {want:?} in {text}");
    }
    assert_eq!(
        std::fs::read_to_string(store.join("FORMAT")).unwrap(),
        "k1s-store 4\n"
    );
    assert!(!store.join("sled").exists());
    // The backup is a whole snapshot holding as many keys as the upgrade read back.
    let status = k1s_ok(&["snapshot", "status", backup_s]);
    let keys = status
        .split(", ")
        .find_map(|p| p.strip_suffix(" keys"))
        .unwrap_or_else(|| panic!("no key count in {status}"));
    assert!(
        text.contains(&format!("reads back all {keys} keys")),
        "{text} / {status}"
    );
    // The backup is the way back: it restores into a fresh data dir.
    let back = root.path().join("back");
    let restored = k1s_ok(&[
        "snapshot",
        "restore",
        backup_s,
        "--data-dir",
        back.to_str().unwrap(),
    ]);
    assert!(
        restored.starts_with(&format!("Restored {keys} keys")),
        "{restored}"
    );

    // The upgraded store serves every object with its resourceVersion.
    let mut c = start(&data);
    assert_eq!(configmap_versions(c.kubeconfig(), "default", "up-"), before);
    let secret = c.kubectl_ok(&["get", "secret", "up-s", "-o", "jsonpath={.data.p}"]);
    assert_eq!(secret, "cQ==");
    assert!(c.terminate(Duration::from_secs(20)).is_some());

    // Up to date: plan and apply say so and touch nothing (no backup either).
    let current = fingerprint(&data);
    let out = k1s_ok(&["upgrade", "plan", "--data-dir", data_s]);
    assert!(out.contains("up to date"), "{out}");
    let out = k1s_ok(&["upgrade", "apply", "--yes", "--data-dir", data_s]);
    assert!(out.contains("up to date"), "{out}");
    assert_eq!(fingerprint(&data), current);

    // A store written by a newer k1s: refused, unchanged.
    std::fs::write(store.join("FORMAT"), "k1s-store 99\n").unwrap();
    let newer = fingerprint(&data);
    let err = k1s_fails(&["upgrade", "plan", "--data-dir", data_s]);
    assert!(
        err.contains("format 99") && err.contains("newer k1s"),
        "{err}"
    );
    let err = k1s_fails(&["upgrade", "apply", "--yes", "--data-dir", data_s]);
    assert!(err.contains("newer k1s"), "{err}");
    assert_eq!(fingerprint(&data), newer);
}

#[test]
fn missing_or_foreign_data_dirs_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let missing = root.path().join("missing");
    let err = k1s_fails(&["upgrade", "plan", "--data-dir", missing.to_str().unwrap()]);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists());

    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = k1s_fails(&[
        "upgrade",
        "apply",
        "--yes",
        "--data-dir",
        empty.to_str().unwrap(),
    ]);
    assert!(err.contains("no k1s store"), "{err}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);

    let foreign = root.path().join("foreign");
    std::fs::create_dir_all(foreign.join("store")).unwrap();
    std::fs::write(foreign.join("store").join("data.db"), "someone else's").unwrap();
    let err = k1s_fails(&["upgrade", "plan", "--data-dir", foreign.to_str().unwrap()]);
    assert!(err.contains("not a k1s store"), "{err}");
    assert_eq!(std::fs::read_dir(foreign.join("store")).unwrap().count(), 1);
}
