//! Upstream behaviours seen through kubectl: one global default PriorityClass (Priority
//! admission), the CSR `/approval` and `/status` rules, and Events expiring `--event-ttl`
//! after their last write.

use std::time::{Duration, Instant};

use base64::Engine as _;
use k1s_tests::{StartOptions, TestCluster, fails, ok, wait_until};

#[test]
fn only_one_priority_class_is_the_global_default() {
    let c = TestCluster::start();
    c.kubectl_ok(&[
        "create",
        "priorityclass",
        "first",
        "--value=10",
        "--global-default",
    ]);
    let args = [
        "create",
        "priorityclass",
        "second",
        "--value=20",
        "--global-default",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(
            "priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is already marked as default. Only one default can exist"
        ),
        "{err}"
    );
    // Marking another class as the default is refused; the default itself may change.
    c.kubectl_ok(&["create", "priorityclass", "other", "--value=30"]);
    let args = [
        "patch",
        "priorityclass",
        "other",
        "-p",
        r#"{"globalDefault":true}"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains("PriorityClass first is already marked as default"),
        "{err}"
    );
    c.kubectl_ok(&[
        "patch",
        "priorityclass",
        "first",
        "-p",
        r#"{"description":"the default"}"#,
    ]);
}

fn csr_yaml(name: &str) -> String {
    let request = base64::engine::general_purpose::STANDARD.encode(k1s_tests::csr_pem(name));
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}}}\n\
         spec: {{request: {request}, signerName: example.com/signer, usages: [client auth]}}\n"
    )
}

fn get_json(c: &TestCluster, args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&c.kubectl_ok(args)).expect("json")
}

#[test]
fn csr_approval_and_status_follow_upstreams_rules() {
    let c = TestCluster::start_with(StartOptions {
        // No controller approves or signs behind the test's back.
        extra_args: vec!["--controllers=-*".into()],
        ..StartOptions::default()
    });
    c.apply(&csr_yaml("req"));
    c.kubectl_ok(&["certificate", "approve", "req"]);
    // Denying an approved request breaks "one of Approved and Denied" (kubectl itself refuses
    // to; a client writing `/approval` meets the server's rule).
    let mut req = get_json(&c, &["get", "csr", "req", "-o", "json"]);
    req["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(serde_json::json!({"type": "Denied", "status": "True"}));
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/req/approval";
    let args = ["replace", "--raw", path, "-f", "-"];
    let err = fails(&args, c.kubectl_stdin(&args, &req.to_string()));
    assert!(
        err.contains("Approved and Denied conditions are mutually exclusive"),
        "{err}"
    );
    // `/status` may not add an approval...
    c.apply(&csr_yaml("other"));
    let mut other = get_json(&c, &["get", "csr", "other", "-o", "json"]);
    other["status"]["conditions"] = serde_json::json!([{"type": "Approved", "status": "True"}]);
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/other/status";
    let args = ["replace", "--raw", path, "-f", "-"];
    let err = fails(&args, c.kubectl_stdin(&args, &other.to_string()));
    assert!(
        err.contains(r#"updates may not add a condition of type \"Approved\""#)
            || err.contains(r#"updates may not add a condition of type "Approved""#),
        "{err}"
    );
    // ...and `/approval` may not set the certificate (it is dropped, as upstream).
    let mut req = get_json(&c, &["get", "csr", "req", "-o", "json"]);
    req["status"]["certificate"] =
        serde_json::json!(base64::engine::general_purpose::STANDARD.encode("not a certificate"));
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests/req/approval";
    let args = ["replace", "--raw", path, "-f", "-"];
    ok(&args, c.kubectl_stdin(&args, &req.to_string()));
    let req = get_json(&c, &["get", "csr", "req", "-o", "json"]);
    assert_eq!(req["status"].get("certificate"), None, "{req}");
    assert_eq!(req["status"]["conditions"][0]["type"], "Approved", "{req}");
}

fn event_yaml(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Event\nmetadata: {{name: {name}, namespace: default}}\n\
         involvedObject: {{kind: ConfigMap, name: x, namespace: default}}\nreason: Test\nmessage: m\ntype: Normal\n"
    )
}

fn event_exists(c: &TestCluster, name: &str) -> bool {
    c.kubectl(&["get", "event", name, "-n", "default"])
        .status
        .success()
}

#[test]
fn events_expire_event_ttl_after_their_last_write() {
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec!["--event-ttl=4s".into(), "--controllers=-*".into()],
        ..StartOptions::default()
    });
    c.apply(&event_yaml("short"));
    c.apply(&event_yaml("kept"));
    let start = Instant::now();
    // "kept" is written every second; "short" is left alone and goes after about 4 s.
    let mut n = 0;
    while event_exists(&c, "short") {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the unwritten Event outlived its TTL"
        );
        n += 1;
        c.kubectl_ok(&[
            "annotate",
            "event",
            "kept",
            "-n",
            "default",
            "--overwrite",
            &format!("n={n}"),
        ]);
        std::thread::sleep(Duration::from_millis(1000));
    }
    assert!(
        start.elapsed() >= Duration::from_secs(3),
        "expired too early: {:?}",
        start.elapsed()
    );
    // Written within the last second: still there, and gone once left alone.
    assert!(event_exists(&c, "kept"));
    let left = Instant::now();
    wait_until(Duration::from_secs(20), "the written Event expired", || {
        (!event_exists(&c, "kept")).then_some(())
    });
    assert!(
        left.elapsed() >= Duration::from_secs(2),
        "{:?}",
        left.elapsed()
    );
}
