//! Indexed Jobs with `backoffLimitPerIndex` / `maxFailedIndexes` (and the pod failure policy's
//! `FailIndex`), `podReplacementPolicy: Failed` with `status.terminating`, and the disruption
//! controller's reset of stale `DisruptionTarget` conditions, through kubectl against the real
//! binary with a simulated node. Job pods run until the test annotates each one with
//! `sim.k1s.io/run-seconds` and `sim.k1s.io/exit-code`, so which index fails is decided per pod.

use std::time::Duration;

use k1s_tests::{TestCluster, wait_until};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(90);
const INDEX: &str = "batch.kubernetes.io/job-completion-index";
const FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";

fn get_json(c: &TestCluster, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&c.kubectl_ok(&all)).expect("json")
}

fn job_pods(c: &TestCluster, ns: &str, job: &str) -> Vec<Value> {
    let v = get_json(
        c,
        &["get", "pods", "-n", ns, "-l", &format!("job-name={job}")],
    );
    v["items"].as_array().cloned().unwrap_or_default()
}

fn annotation<'a>(p: &'a Value, key: &str) -> Option<&'a str> {
    p["metadata"]["annotations"][key].as_str()
}

/// Ends every job pod not yet told how to end: exit `code_of(index)` at once.
fn finish_new_pods(c: &TestCluster, ns: &str, job: &str, code_of: impl Fn(&str) -> i32) {
    for p in job_pods(c, ns, job) {
        if annotation(&p, "sim.k1s.io/run-seconds").is_some()
            || !p["metadata"]["deletionTimestamp"].is_null()
        {
            continue;
        }
        let Some(ix) = annotation(&p, INDEX) else {
            continue;
        };
        let name = p["metadata"]["name"].as_str().unwrap_or_default();
        let code = format!("sim.k1s.io/exit-code={}", code_of(ix));
        // The pod may be gone already; the next round sees the rest.
        let _ = c.kubectl(&[
            "annotate",
            "pod",
            name,
            "-n",
            ns,
            "sim.k1s.io/run-seconds=0",
            &code,
        ]);
    }
}

/// Drives the job's pods with `code_of` until its `Complete` or `Failed` condition is true.
fn run_to_end(c: &TestCluster, ns: &str, job: &str, code_of: impl Fn(&str) -> i32) -> Value {
    wait_until(WAIT, &format!("job {job} to finish"), || {
        finish_new_pods(c, ns, job, &code_of);
        let j = get_json(c, &["get", "job", job, "-n", ns]);
        let finished = j["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                matches!(c["type"].as_str(), Some("Complete" | "Failed")) && c["status"] == "True"
            });
        if finished {
            return Some(j);
        }
        std::thread::sleep(Duration::from_millis(300));
        None
    })
}

fn condition<'a>(j: &'a Value, type_: &str) -> &'a Value {
    j["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

fn events(c: &TestCluster, ns: &str, job: &str) -> Vec<(String, String, String)> {
    let v = get_json(
        c,
        &[
            "get",
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("involvedObject.name={job},involvedObject.kind=Job"),
        ],
    );
    v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("type"), s("reason"), s("message"))
        })
        .collect()
}

fn job_yaml(ns: &str, name: &str, spec: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n{spec}  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n"
    )
}

#[test]
fn per_index_backoff_replacement_policy_and_stale_disruptions() {
    let c = TestCluster::start();
    stale_disruption_target_is_reset(&c);
    replacement_waits_for_terminating_pods(&c);
    backoff_limit_per_index(&c);
}

/// A `DisruptionTarget=True` condition (as an eviction sets it) on a pod that was not deleted
/// within two minutes goes back to False, without reason or message (upstream's
/// syncStalePodDisruption). The condition is written as if set ten minutes ago.
fn stale_disruption_target_is_reset(c: &TestCluster) {
    let ns = "default";
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: evicted\n  namespace: {ns}\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
    ));
    wait_until(WAIT, "pod evicted running", || {
        let p = get_json(c, &["get", "pod", "evicted", "-n", ns]);
        (p["status"]["phase"] == "Running").then_some(())
    });
    let long_ago = k8s_openapi::jiff::Timestamp::now()
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_mins(10))
        .expect("time");
    let p = get_json(c, &["get", "pod", "evicted", "-n", ns]);
    let mut conditions = p["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.push(
        serde_json::json!({"type": "DisruptionTarget", "status": "True",
        "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting",
        "lastTransitionTime": long_ago.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}),
    );
    let patch = serde_json::json!({"status": {"conditions": conditions}}).to_string();
    c.kubectl_ok(&[
        "patch",
        "pod",
        "evicted",
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
    let cond = wait_until(WAIT, "DisruptionTarget reset to False", || {
        let p = get_json(c, &["get", "pod", "evicted", "-n", ns]);
        p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "DisruptionTarget" && c["status"] == "False")
            .cloned()
    });
    assert_eq!(cond["reason"], Value::Null, "{cond}");
    assert_eq!(cond["message"], Value::Null, "{cond}");
    assert!(
        cond["lastTransitionTime"]
            .as_str()
            .is_some_and(|t| t > long_ago.to_string().as_str())
    );
    c.kubectl_ok(&["delete", "pod", "evicted", "-n", ns, "--wait=false"]);
}

/// With `podReplacementPolicy: Failed` a deleted pod is counted in `status.terminating` (not
/// `active`) and no replacement starts until it has stopped.
fn replacement_waits_for_terminating_pods(c: &TestCluster) {
    let ns = "default";
    c.apply(&format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: replace\n  namespace: {ns}\nspec:\n  completions: 2\n  parallelism: 1\n  podReplacementPolicy: Failed\n  template:\n    metadata:\n      annotations:\n        sim.k1s.io/termination-seconds: \"20\"\n    spec:\n      restartPolicy: Never\n      terminationGracePeriodSeconds: 60\n      containers:\n      - name: c\n        image: busybox\n"
    ));
    let first = wait_until(WAIT, "the first pod running", || {
        job_pods(c, ns, "replace")
            .into_iter()
            .find(|p| p["status"]["phase"] == "Running")
    });
    let first_name = first["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    c.kubectl_ok(&["delete", "pod", &first_name, "-n", ns, "--wait=false"]);
    let mut saw_terminating = false;
    let second = wait_until(WAIT, "a replacement pod", || {
        let pods = job_pods(c, ns, "replace");
        let old_stopping = pods.iter().any(|p| {
            p["metadata"]["name"] == first_name.as_str()
                && !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
        });
        let j = get_json(c, &["get", "job", "replace", "-n", ns]);
        if old_stopping && j["status"]["terminating"] == 1 {
            assert_eq!(j["status"]["active"], Value::Null, "{j}");
            saw_terminating = true;
        }
        let new = pods
            .into_iter()
            .find(|p| p["metadata"]["name"] != first_name.as_str());
        if let Some(new) = &new {
            assert!(
                !old_stopping,
                "replacement {} while {first_name} still stops",
                new["metadata"]["name"]
            );
        }
        std::thread::sleep(Duration::from_millis(300));
        new
    });
    assert!(
        saw_terminating,
        "status.terminating was never 1 while {first_name} stopped"
    );
    let _ = second;
    let j = get_json(c, &["get", "job", "replace", "-n", ns]);
    assert_eq!(j["status"]["terminating"], 0, "{j}");
    c.kubectl_ok(&["delete", "job", "replace", "-n", ns, "--wait=false"]);
}

fn backoff_limit_per_index(c: &TestCluster) {
    let ns = "default";

    // Validation as upstream: only Indexed jobs take a per-index limit.
    let out = c.kubectl_stdin(
        &["create", "-f", "-"],
        &job_yaml(ns, "bad", "  backoffLimitPerIndex: 1\n"),
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success());
    assert!(
        err.contains(
            "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"
        ),
        "{err}"
    );

    // Index 1 always fails: retried once (backoffLimitPerIndex 1), then failed; 0 and 2
    // succeed and the job fails with FailedIndexes.
    c.apply(&job_yaml(
        ns,
        "per-index",
        "  completions: 3\n  parallelism: 3\n  completionMode: Indexed\n  backoffLimitPerIndex: 1\n",
    ));
    let j = run_to_end(c, ns, "per-index", |ix| if ix == "1" { 3 } else { 0 });
    let failed = condition(&j, "Failed");
    assert_eq!(failed["status"], "True", "{j}");
    assert_eq!(failed["reason"], "FailedIndexes");
    assert_eq!(failed["message"], "Job has failed indexes");
    assert_eq!(condition(&j, "FailureTarget")["reason"], "FailedIndexes");
    assert_eq!(j["status"]["failedIndexes"], "1");
    assert_eq!(j["status"]["completedIndexes"], "0,2");
    assert_eq!(j["status"]["succeeded"], 2);
    assert_eq!(j["status"]["failed"], 2, "index 1 ran twice");
    assert_eq!(j["status"]["active"], Value::Null);
    assert_eq!(
        j["spec"]["backoffLimit"],
        i32::MAX,
        "defaulted with a per-index limit"
    );
    // The retry of index 1 carried the count of its earlier failure.
    let counts: Vec<String> = job_pods(c, ns, "per-index")
        .iter()
        .filter(|p| annotation(p, INDEX) == Some("1"))
        .filter_map(|p| annotation(p, FAILURE_COUNT).map(str::to_string))
        .collect();
    let mut sorted = counts.clone();
    sorted.sort();
    assert_eq!(sorted, ["0", "1"], "{counts:?}");
    assert!(
        events(c, ns, "per-index")
            .iter()
            .any(|(t, r, m)| t == "Warning"
                && r == "FailedIndexes"
                && m == "Job has failed indexes")
    );

    // FailIndex fails an index at its first failure; one failed index is more than
    // maxFailedIndexes 0, so the job fails at once and its running pods go.
    c.apply(&job_yaml(
        ns,
        "max-failed",
        "  completions: 4\n  parallelism: 4\n  completionMode: Indexed\n  backoffLimitPerIndex: 3\n  maxFailedIndexes: 0\n  podFailurePolicy:\n    rules:\n    - action: FailIndex\n      onExitCodes:\n        operator: In\n        values: [42]\n",
    ));
    wait_until(WAIT, "4 pods of max-failed", || {
        (job_pods(c, ns, "max-failed").len() == 4).then_some(())
    });
    // Only index 2 ends; the others keep running until the job deletes them.
    let j = wait_until(WAIT, "max-failed to fail", || {
        for p in job_pods(c, ns, "max-failed") {
            if annotation(&p, INDEX) == Some("2")
                && annotation(&p, "sim.k1s.io/run-seconds").is_none()
            {
                let name = p["metadata"]["name"].as_str().unwrap_or_default();
                let _ = c.kubectl(&[
                    "annotate",
                    "pod",
                    name,
                    "-n",
                    ns,
                    "sim.k1s.io/run-seconds=0",
                    "sim.k1s.io/exit-code=42",
                ]);
            }
        }
        let j = get_json(c, &["get", "job", "max-failed", "-n", ns]);
        (condition(&j, "Failed")["status"] == "True").then_some(j)
    });
    let failed = condition(&j, "Failed");
    assert_eq!(failed["reason"], "MaxFailedIndexesExceeded", "{j}");
    assert_eq!(
        failed["message"],
        "Job has exceeded the specified maximal number of failed indexes"
    );
    assert_eq!(j["status"]["failedIndexes"], "2");
    assert_eq!(j["status"]["terminating"], 0);
    assert_eq!(j["status"]["active"], Value::Null);
    // Every pod is counted once: index 2's failure, and the three the job deleted (the
    // simulated containers stop on SIGTERM, so those may end either way).
    let count = |k: &str| j["status"][k].as_i64().unwrap_or(0);
    assert!(count("failed") >= 1, "{j}");
    assert_eq!(count("failed") + count("succeeded"), 4, "{j}");
    // Index 2 was never retried.
    let index_2 = job_pods(c, ns, "max-failed")
        .iter()
        .filter(|p| annotation(p, INDEX) == Some("2"))
        .count();
    assert!(index_2 <= 1, "{index_2} pods of index 2");
}
