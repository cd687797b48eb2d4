//! Indexed Jobs with `backoffLimitPerIndex` / `maxFailedIndexes` (and the pod failure policy's
//! `FailIndex`) through kubectl against the real binary with a simulated node: the pods run
//! until the test annotates each one with `sim.k1s.io/run-seconds` and `sim.k1s.io/exit-code`,
//! so which index fails is decided per pod.

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
fn backoff_limit_per_index() {
    let c = TestCluster::start();
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
    let j = run_to_end(&c, ns, "per-index", |ix| if ix == "1" { 3 } else { 0 });
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
    let counts: Vec<String> = job_pods(&c, ns, "per-index")
        .iter()
        .filter(|p| annotation(p, INDEX) == Some("1"))
        .filter_map(|p| annotation(p, FAILURE_COUNT).map(str::to_string))
        .collect();
    let mut sorted = counts.clone();
    sorted.sort();
    assert_eq!(sorted, ["0", "1"], "{counts:?}");
    assert!(
        events(&c, ns, "per-index")
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
        (job_pods(&c, ns, "max-failed").len() == 4).then_some(())
    });
    // Only index 2 ends; the others keep running until the job deletes them.
    let j = wait_until(WAIT, "max-failed to fail", || {
        for p in job_pods(&c, ns, "max-failed") {
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
        let j = get_json(&c, &["get", "job", "max-failed", "-n", ns]);
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
    let index_2 = job_pods(&c, ns, "max-failed")
        .iter()
        .filter(|p| annotation(p, INDEX) == Some("2"))
        .count();
    assert!(index_2 <= 1, "{index_2} pods of index 2");
}
