//! The job, cronjob and disruption controllers through kubectl against the real binary. With
//! `--nodes 0 --disable-scheduler` nothing runs pods, so the tests play the kubelet: they write
//! pod status through `/status` (as upstream's integration tests do).

use std::time::Duration;

use k1s_tests::{StartOptions, TestCluster, wait_until};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);

fn cluster() -> TestCluster {
    TestCluster::start_with(StartOptions {
        extra_args: vec!["--nodes=0".into(), "--disable-scheduler".into()],
        ..Default::default()
    })
}

fn get_json(c: &TestCluster, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&c.kubectl_ok(&all)).expect("json")
}

/// The job's pods (by the `job-name` label the API server puts on its template).
fn job_pods(c: &TestCluster, ns: &str, job: &str) -> Vec<Value> {
    let v = get_json(
        c,
        &["get", "pods", "-n", ns, "-l", &format!("job-name={job}")],
    );
    v["items"].as_array().cloned().unwrap_or_default()
}

fn live_pods(c: &TestCluster, ns: &str, job: &str) -> Vec<Value> {
    job_pods(c, ns, job)
        .into_iter()
        .filter(|p| {
            p["metadata"]["deletionTimestamp"].is_null()
                && !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))
        })
        .collect()
}

fn wait_live_pods(c: &TestCluster, ns: &str, job: &str, n: usize) -> Vec<Value> {
    wait_until(WAIT, &format!("{n} live pods of {job}"), || {
        let pods = live_pods(c, ns, job);
        (pods.len() == n).then_some(pods)
    })
}

fn name(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Ends a pod as the kubelet would: phase and a terminated container with `exit_code`.
fn finish_pod(c: &TestCluster, ns: &str, pod: &str, exit_code: i32) {
    let phase = if exit_code == 0 {
        "Succeeded"
    } else {
        "Failed"
    };
    let status = serde_json::json!({"status": {
        "phase": phase,
        "containerStatuses": [{
            "name": "c", "image": "busybox", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": exit_code, "reason": if exit_code == 0 {"Completed"} else {"Error"},
                "finishedAt": "2026-01-01T00:00:00Z", "startedAt": "2026-01-01T00:00:00Z"}}
        }]
    }});
    c.kubectl_ok(&[
        "patch",
        "pod",
        pod,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
}

fn job_yaml(ns: &str, name: &str, spec: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n{spec}  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox}}]\n"
    )
}

fn conditions(job: &Value) -> Vec<(String, String, String)> {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or_default().to_string(),
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn wait_condition(c: &TestCluster, ns: &str, job: &str, type_: &str) -> Value {
    wait_until(WAIT, &format!("{job} to be {type_}"), || {
        let j = get_json(c, &["get", "job", job, "-n", ns]);
        conditions(&j)
            .iter()
            .any(|(t, s, _)| t == type_ && s == "True")
            .then_some(j)
    })
}

fn events_for(c: &TestCluster, ns: &str, object: &str) -> Vec<(String, String)> {
    let v = get_json(
        c,
        &[
            "get",
            "events",
            "-n",
            ns,
            "--field-selector",
            &format!("involvedObject.name={object}"),
        ],
    );
    v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or_default().to_string(),
                e["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn jobs_run_pods_to_completion_and_fail_as_upstream() {
    let c = cluster();
    let ns = "jobs";
    c.kubectl_ok(&["create", "namespace", ns]);

    // NonIndexed, completions 2, parallelism 2: two pods with the tracking finalizer.
    c.apply(&job_yaml(ns, "two", "  completions: 2\n  parallelism: 2\n"));
    let pods = wait_live_pods(&c, ns, "two", 2);
    for p in &pods {
        assert!(name(p).starts_with("two-"), "{}", name(p));
        assert_eq!(
            p["metadata"]["finalizers"],
            serde_json::json!(["batch.kubernetes.io/job-tracking"])
        );
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "Job");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
    }
    let j = wait_until(WAIT, "two to count 2 active", || {
        let j = get_json(&c, &["get", "job", "two", "-n", ns]);
        (j["status"]["active"] == 2).then_some(j)
    });
    assert!(j["status"]["startTime"].is_string());
    assert_eq!(j["status"]["ready"], 0);
    finish_pod(&c, ns, &name(&pods[0]), 0);
    wait_until(WAIT, "one success counted", || {
        let j = get_json(&c, &["get", "job", "two", "-n", ns]);
        (j["status"]["succeeded"] == 1 && j["status"]["active"] == 1).then_some(())
    });
    finish_pod(&c, ns, &name(&pods[1]), 0);
    let j = wait_condition(&c, ns, "two", "Complete");
    assert_eq!(
        conditions(&j),
        vec![
            (
                "SuccessCriteriaMet".into(),
                "True".into(),
                "CompletionsReached".into()
            ),
            (
                "Complete".into(),
                "True".into(),
                "CompletionsReached".into()
            ),
        ]
    );
    assert_eq!(j["status"]["succeeded"], 2);
    assert!(j["status"]["completionTime"].is_string());
    assert!(j["status"]["failed"].is_null());
    assert_eq!(
        j["status"]["uncountedTerminatedPods"],
        serde_json::json!({})
    );
    // Counted pods lose their finalizer; no extra pod was made.
    wait_until(WAIT, "finalizers of two's pods to go", || {
        let pods = job_pods(&c, ns, "two");
        let tracked = |p: &Value| {
            p["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        };
        (pods.len() == 2 && !pods.iter().any(tracked)).then_some(())
    });
    c.kubectl_ok(&[
        "wait",
        "-n",
        ns,
        "--for=condition=complete",
        "job/two",
        "--timeout=5s",
    ]);
    let events = events_for(&c, ns, "two");
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "SuccessfulCreate"
                && *m == format!("Created pod: {}", name(&pods[0]))),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "Completed" && m == "Job completed"),
        "{events:?}"
    );

    // backoffLimit 0: the first failure fails the job.
    c.apply(&job_yaml(ns, "fail", "  backoffLimit: 0\n"));
    let pods = wait_live_pods(&c, ns, "fail", 1);
    finish_pod(&c, ns, &name(&pods[0]), 1);
    let j = wait_condition(&c, ns, "fail", "Failed");
    assert_eq!(
        conditions(&j),
        vec![
            (
                "FailureTarget".into(),
                "True".into(),
                "BackoffLimitExceeded".into()
            ),
            (
                "Failed".into(),
                "True".into(),
                "BackoffLimitExceeded".into()
            ),
        ]
    );
    assert_eq!(
        j["status"]["conditions"][1]["message"],
        "Job has reached the specified backoff limit"
    );
    assert_eq!(j["status"]["failed"], 1);
    assert!(j["status"]["completionTime"].is_null());
    assert!(
        events_for(&c, ns, "fail")
            .iter()
            .any(|(r, m)| r == "BackoffLimitExceeded"
                && m == "Job has reached the specified backoff limit")
    );

    // Indexed: one pod per index; completedIndexes in upstream's interval format.
    c.apply(&job_yaml(
        ns,
        "idx",
        "  completions: 3\n  parallelism: 3\n  completionMode: Indexed\n",
    ));
    let pods = wait_live_pods(&c, ns, "idx", 3);
    let mut by_index = std::collections::BTreeMap::new();
    for p in &pods {
        let ix = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            .as_str()
            .expect("index annotation")
            .to_string();
        assert_eq!(
            p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
            ix.as_str()
        );
        assert!(name(p).starts_with(&format!("idx-{ix}-")), "{}", name(p));
        assert_eq!(p["spec"]["hostname"], format!("idx-{ix}"));
        by_index.insert(ix, name(p));
    }
    assert_eq!(
        by_index.keys().cloned().collect::<Vec<_>>(),
        ["0", "1", "2"]
    );
    finish_pod(&c, ns, &by_index["0"], 0);
    finish_pod(&c, ns, &by_index["2"], 0);
    wait_until(WAIT, "completedIndexes 0,2", || {
        let j = get_json(&c, &["get", "job", "idx", "-n", ns]);
        (j["status"]["completedIndexes"] == "0,2" && j["status"]["succeeded"] == 2).then_some(())
    });
    // A failed index is replaced by a pod of the same index (backoffLimit 6 default; the
    // replacement waits out the 10 s pod-failure backoff).
    finish_pod(&c, ns, &by_index["1"], 3);
    let again = wait_until(Duration::from_secs(90), "index 1 to be replaced", || {
        live_pods(&c, ns, "idx").into_iter().next()
    });
    assert_eq!(
        again["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
        "1"
    );
    finish_pod(&c, ns, &name(&again), 0);
    let j = wait_condition(&c, ns, "idx", "Complete");
    assert_eq!(j["status"]["completedIndexes"], "0-2");
    assert_eq!(j["status"]["succeeded"], 3);
    // On failure, show every pod the job had (an intermittent count of 2 was seen once).
    let pods: Vec<String> = job_pods(&c, ns, "idx")
        .iter()
        .map(|p| {
            format!(
                "{} index={} phase={} deleted={}",
                name(p),
                p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
                p["status"]["phase"],
                p["metadata"]["deletionTimestamp"]
            )
        })
        .collect();
    assert_eq!(j["status"]["failed"], 1, "job {j}\npods {pods:#?}");
}

#[test]
fn pod_failure_policy_deadline_and_suspend() {
    let c = cluster();
    let ns = "policy";
    c.kubectl_ok(&["create", "namespace", ns]);

    // podFailurePolicy: exit code 42 fails the job at once, exit code 5 is ignored.
    c.apply(&job_yaml(
        ns,
        "pfp",
        "  backoffLimit: 6\n  podFailurePolicy:\n    rules:\n    - action: Ignore\n      onExitCodes: {operator: In, values: [5]}\n    - action: FailJob\n      onExitCodes: {containerName: c, operator: In, values: [42]}\n",
    ));
    let pods = wait_live_pods(&c, ns, "pfp", 1);
    finish_pod(&c, ns, &name(&pods[0]), 5);
    // Ignored: replaced at once (no backoff), nothing counted.
    let next = wait_until(WAIT, "the ignored failure to be replaced", || {
        live_pods(&c, ns, "pfp")
            .into_iter()
            .find(|p| name(p) != name(&pods[0]))
    });
    let j = get_json(&c, &["get", "job", "pfp", "-n", ns]);
    assert!(j["status"]["failed"].is_null(), "{}", j["status"]);
    finish_pod(&c, ns, &name(&next), 42);
    let j = wait_condition(&c, ns, "pfp", "Failed");
    let failed = &j["status"]["conditions"][1];
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert_eq!(
        failed["message"],
        format!(
            "Container c for pod {ns}/{} failed with exit code 42 matching FailJob rule at index 1",
            name(&next)
        )
    );
    assert_eq!(j["status"]["failed"], 1);

    // activeDeadlineSeconds: the running pod is deleted and the job fails.
    c.apply(&job_yaml(ns, "late", "  activeDeadlineSeconds: 2\n"));
    let j = wait_condition(&c, ns, "late", "Failed");
    assert_eq!(j["status"]["conditions"][0]["type"], "FailureTarget");
    assert_eq!(j["status"]["conditions"][1]["reason"], "DeadlineExceeded");
    assert_eq!(
        j["status"]["conditions"][1]["message"],
        "Job was active longer than specified deadline"
    );
    wait_until(WAIT, "late's pods to go", || {
        live_pods(&c, ns, "late").is_empty().then_some(())
    });

    // A job created suspended makes no pods; resuming starts them and resets startTime.
    c.apply(&job_yaml(ns, "paused", "  suspend: true\n"));
    let j = wait_condition(&c, ns, "paused", "Suspended");
    assert_eq!(j["status"]["conditions"][0]["reason"], "JobSuspended");
    assert!(j["status"]["startTime"].is_null());
    assert!(job_pods(&c, ns, "paused").is_empty());
    c.kubectl_ok(&[
        "patch",
        "job",
        "paused",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":false}}"#,
    ]);
    wait_live_pods(&c, ns, "paused", 1);
    let j = wait_until(WAIT, "paused to be resumed", || {
        let j = get_json(&c, &["get", "job", "paused", "-n", ns]);
        (conditions(&j) == vec![("Suspended".into(), "False".into(), "JobResumed".into())])
            .then_some(j)
    });
    assert!(j["status"]["startTime"].is_string());
    // Suspending again deletes the running pod.
    c.kubectl_ok(&[
        "patch",
        "job",
        "paused",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"suspend":true}}"#,
    ]);
    wait_until(WAIT, "paused's pod to go", || {
        live_pods(&c, ns, "paused").is_empty().then_some(())
    });
    wait_condition(&c, ns, "paused", "Suspended");

    // Another controller's job is left alone.
    c.apply(&format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: theirs, namespace: {ns}}}\nspec:\n  managedBy: example.com/other\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox}}]\n"
    ));
    std::thread::sleep(Duration::from_secs(2));
    assert!(job_pods(&c, ns, "theirs").is_empty());
}

fn cronjob_yaml(ns: &str, name: &str, extra: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  schedule: \"*/1 * * * *\"\n{extra}  jobTemplate:\n    metadata: {{labels: {{from: cron}}}}\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{{name: c, image: busybox}}]\n"
    )
}

/// Makes a schedule due now: the last schedule time moves `minutes` back.
fn backdate(c: &TestCluster, ns: &str, cj: &str, minutes: i64) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let back = i64::try_from(t).expect("time") - minutes * 60;
    let stamp = jiff_like_rfc3339(back);
    c.kubectl_ok(&[
        "patch",
        "cronjob",
        cj,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &format!(r#"{{"status":{{"lastScheduleTime":"{stamp}"}}}}"#),
    ]);
}

/// Seconds since the epoch as RFC 3339 UTC (whole minutes, like a real schedule).
fn jiff_like_rfc3339(secs: i64) -> String {
    let secs = secs - secs.rem_euclid(60);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:00Z",
        rem / 3600,
        (rem % 3600) / 60
    )
}

fn cron_jobs(c: &TestCluster, ns: &str) -> Vec<Value> {
    let v = get_json(c, &["get", "jobs", "-n", ns, "-l", "from=cron"]);
    v["items"].as_array().cloned().unwrap_or_default()
}

fn wait_event(c: &TestCluster, ns: &str, object: &str, reason: &str) -> String {
    wait_until(WAIT, &format!("event {reason} on {object}"), || {
        events_for(c, ns, object)
            .into_iter()
            .find(|(r, _)| r == reason)
            .map(|(_, m)| m)
    })
}

#[test]
fn cronjobs_start_jobs_on_schedule() {
    let c = cluster();
    let ns = "cron";
    c.kubectl_ok(&["create", "namespace", ns]);

    // Due now (its last run was 3 minutes ago): a job named after the scheduled minute.
    c.apply(&cronjob_yaml(
        ns,
        "tick",
        "  successfulJobsHistoryLimit: 0\n",
    ));
    backdate(&c, ns, "tick", 3);
    let job = wait_until(WAIT, "tick's job", || cron_jobs(&c, ns).into_iter().next());
    let jname = name(&job);
    let minutes: i64 = jname
        .strip_prefix("tick-")
        .and_then(|m| m.parse().ok())
        .expect("job name <cronjob>-<minutes>");
    let stamp = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .expect("scheduled timestamp")
        .to_string();
    assert_eq!(stamp, jiff_like_rfc3339(minutes * 60));
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(job["metadata"]["ownerReferences"][0]["controller"], true);
    let cj = wait_until(WAIT, "tick's status", || {
        let cj = get_json(&c, &["get", "cronjob", "tick", "-n", ns]);
        (cj["status"]["active"][0]["name"] == jname.as_str()).then_some(cj)
    });
    assert_eq!(cj["status"]["lastScheduleTime"], stamp.as_str());
    assert_eq!(
        wait_event(&c, ns, "tick", "SuccessfulCreate"),
        format!("Created job {jname}")
    );
    // The job's pod succeeds: the cronjob sees it complete, records the success, and (history
    // limit 0) deletes it.
    let pods = wait_live_pods(&c, ns, &jname, 1);
    finish_pod(&c, ns, &name(&pods[0]), 0);
    assert_eq!(
        wait_event(&c, ns, "tick", "SawCompletedJob"),
        format!("Saw completed job: {jname}, condition: Complete")
    );
    // A minute boundary may pass meanwhile and start tick's next job: only this one is checked.
    wait_until(WAIT, "the finished job to be trimmed", || {
        let cj = get_json(&c, &["get", "cronjob", "tick", "-n", ns]);
        let still_active = cj["status"]["active"]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["name"] == jname.as_str()));
        (!still_active
            && cj["status"]["lastSuccessfulTime"].is_string()
            && !cron_jobs(&c, ns).iter().any(|j| name(j) == jname))
        .then_some(())
    });
    assert_eq!(
        wait_event(&c, ns, "tick", "SuccessfulDelete"),
        format!("Deleted job {jname}")
    );
    // The controller's own jobs are never "unexpected" (it looks at the CronJob itself before
    // trusting a cached status that predates the job).
    assert!(
        !events_for(&c, ns, "tick")
            .iter()
            .any(|(r, _)| r == "UnexpectedJob"),
        "{:?}",
        events_for(&c, ns, "tick")
    );

    // Forbid: a running job blocks the next; Replace: it is replaced.
    c.apply(&cronjob_yaml(ns, "only", "  concurrencyPolicy: Forbid\n"));
    backdate(&c, ns, "only", 2);
    let first = wait_until(WAIT, "only's first job", || {
        cron_jobs(&c, ns)
            .into_iter()
            .find(|j| name(j).starts_with("only-"))
    });
    wait_until(WAIT, "only's active list", || {
        let cj = get_json(&c, &["get", "cronjob", "only", "-n", ns]);
        cj["status"]["active"].is_array().then_some(())
    });
    backdate(&c, ns, "only", 5);
    assert_eq!(
        wait_event(&c, ns, "only", "JobAlreadyActive"),
        "Not starting job because prior execution is running and concurrency policy is Forbid"
    );
    c.kubectl_ok(&[
        "patch",
        "cronjob",
        "only",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"concurrencyPolicy":"Replace"}}"#,
    ]);
    backdate(&c, ns, "only", 5);
    assert_eq!(
        wait_event(&c, ns, "only", "SuccessfulDelete"),
        format!("Deleted job {}", name(&first))
    );

    // Many missed minutes: a warning, and still one job for the latest.
    c.apply(&cronjob_yaml(ns, "late", "  timeZone: Asia/Tokyo\n"));
    backdate(&c, ns, "late", 180);
    let msg = wait_event(&c, ns, "late", "TooManyMissedTimes");
    assert!(msg.starts_with("too many missed start times: 1"), "{msg}");
    let job = wait_until(WAIT, "late's job", || {
        cron_jobs(&c, ns)
            .into_iter()
            .find(|j| name(j).starts_with("late-"))
    });
    let stamp = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .expect("stamp")
        .to_string();
    assert!(stamp.ends_with("+09:00"), "{stamp}");

    // Suspended: nothing starts.
    c.apply(&cronjob_yaml(ns, "asleep", "  suspend: true\n"));
    backdate(&c, ns, "asleep", 3);
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !cron_jobs(&c, ns)
            .iter()
            .any(|j| name(j).starts_with("asleep-")),
        "a suspended cronjob starts nothing"
    );

    // kubectl create job --from=cronjob/… (client side) makes a job from the template.
    c.kubectl_ok(&[
        "create",
        "job",
        "by-hand",
        "-n",
        ns,
        "--from=cronjob/asleep",
    ]);
    let j = get_json(&c, &["get", "job", "by-hand", "-n", ns]);
    assert_eq!(
        j["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"],
        "manual"
    );
    wait_live_pods(&c, ns, "by-hand", 1);
}

fn ready_pod(c: &TestCluster, ns: &str, name: &str, owner: Option<(&str, &str)>, ready: bool) {
    let owner = owner.map_or(String::new(), |(rs, uid)| {
        format!(
            "  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: {rs}, uid: {uid}, controller: true}}]\n"
        )
    });
    c.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{app: web}}\n{owner}spec:\n  containers: [{{name: c, image: nginx}}]\n"
    ));
    let status = if ready { "True" } else { "False" };
    c.kubectl_ok(&[
        "patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge", "-p",
        &format!(r#"{{"status":{{"phase":"Running","conditions":[{{"type":"Ready","status":"{status}"}}]}}}}"#),
    ]);
}

fn pdb_status(c: &TestCluster, ns: &str, name: &str) -> Value {
    get_json(c, &["get", "pdb", name, "-n", ns])["status"].clone()
}

fn wait_pdb(c: &TestCluster, ns: &str, name: &str, want: (i64, i64, i64, i64)) -> Value {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let s = pdb_status(c, ns, name);
        let got = (
            s["currentHealthy"].as_i64().unwrap_or(-1),
            s["desiredHealthy"].as_i64().unwrap_or(-1),
            s["expectedPods"].as_i64().unwrap_or(-1),
            s["disruptionsAllowed"].as_i64().unwrap_or(-1),
        );
        if got == want {
            return s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name}: want (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed) {want:?}, status {s}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn pod_disruption_budgets_track_healthy_pods() {
    // The test plays the ReplicaSet's part (its pods are made by hand): no replicaset controller.
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec![
            "--nodes=0".into(),
            "--disable-scheduler".into(),
            "--controllers=*,-replicaset-controller".into(),
        ],
        ..Default::default()
    });
    let ns = "pdb";
    c.kubectl_ok(&["create", "namespace", ns]);
    for i in 0..3 {
        ready_pod(&c, ns, &format!("naked-{i}"), None, true);
    }
    c.apply(&format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: min2, namespace: {ns}}}\nspec:\n  minAvailable: 2\n  selector: {{matchLabels: {{app: web}}}}\n"
    ));
    let s = wait_pdb(&c, ns, "min2", (3, 2, 3, 1));
    assert_eq!(s["observedGeneration"], 1);
    assert_eq!(s["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(s["conditions"][0]["status"], "True");
    assert_eq!(s["conditions"][0]["reason"], "SufficientPods");
    // One pod not ready: no disruption allowed.
    ready_pod(&c, ns, "naked-0", None, false);
    let s = wait_pdb(&c, ns, "min2", (2, 2, 3, 0));
    assert_eq!(s["conditions"][0]["status"], "False");
    assert_eq!(s["conditions"][0]["reason"], "InsufficientPods");
    ready_pod(&c, ns, "naked-0", None, true);
    wait_pdb(&c, ns, "min2", (3, 2, 3, 1));

    // A recent eviction recorded in disruptedPods keeps that pod out of the healthy count;
    // an old entry is dropped.
    let recent = jiff_like_rfc3339(
        i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs(),
        )
        .expect("time")
            + 60,
    );
    // (A full replace: it carries the resourceVersion PDB updates require.)
    wait_until(WAIT, "disruptedPods to be written", || {
        let mut pdb = get_json(&c, &["get", "pdb", "min2", "-n", ns]);
        pdb["status"]["disruptedPods"] =
            serde_json::json!({"naked-1": recent, "naked-2": "2020-01-01T00:00:00Z"});
        let args = ["replace", "--subresource=status", "-f", "-"];
        c.kubectl_stdin(&args, &pdb.to_string())
            .status
            .success()
            .then_some(())
    });
    let s = wait_pdb(&c, ns, "min2", (2, 2, 3, 0));
    assert_eq!(s["disruptedPods"], serde_json::json!({"naked-1": recent}));

    // maxUnavailable and percentages count the controllers' scale: a ReplicaSet of 4 with
    // two pods made so far.
    c.apply(&format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: rs, namespace: {ns}}}\nspec:\n  replicas: 4\n  selector: {{matchLabels: {{tier: db}}}}\n  template:\n    metadata: {{labels: {{tier: db}}}}\n    spec: {{containers: [{{name: c, image: nginx}}]}}\n"
    ));
    let uid = c.kubectl_ok(&[
        "get",
        "rs",
        "rs",
        "-n",
        ns,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    c.kubectl_ok(&["delete", "pdb", "min2", "-n", ns]);
    for i in 0..3 {
        c.kubectl_ok(&["label", "pod", &format!("naked-{i}"), "-n", ns, "app-"]);
    }
    ready_pod(&c, ns, "db-0", Some(("rs", &uid)), true);
    ready_pod(&c, ns, "db-1", Some(("rs", &uid)), true);
    c.apply(&format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: max1, namespace: {ns}}}\nspec:\n  maxUnavailable: 1\n  selector: {{matchLabels: {{app: web}}}}\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: half, namespace: {ns}}}\nspec:\n  minAvailable: \"50%\"\n  selector: {{matchLabels: {{app: web}}}}\n"
    ));
    wait_pdb(&c, ns, "max1", (2, 3, 4, 0));
    wait_pdb(&c, ns, "half", (2, 2, 4, 0));
    // A naked pod among them: unmanaged, reported.
    c.kubectl_ok(&["label", "pod", "naked-0", "-n", ns, "app=web"]);
    let msg = wait_event(&c, ns, "max1", "UnmanagedPods");
    assert!(msg.contains("were found to be unmanaged"), "{msg}");
}

/// With the defaults (the scheduler and one simulated node) jobs run for real.
#[test]
fn jobs_run_on_simulated_nodes() {
    let c = TestCluster::start();
    let ns = "default";
    let with_sim = |args: &[&str], annotations: Value, backoff: Option<i64>| {
        let mut job: Value = serde_json::from_str(&c.kubectl_ok(args)).expect("json");
        job["spec"]["template"]["metadata"]["annotations"] = annotations;
        if let Some(b) = backoff {
            job["spec"]["backoffLimit"] = b.into();
        }
        c.kubectl_stdin(&["apply", "-f", "-"], &job.to_string());
    };
    with_sim(
        &[
            "create",
            "job",
            "pi",
            "--image=busybox",
            "--dry-run=client",
            "-o",
            "json",
        ],
        serde_json::json!({"sim.k1s.io/run-seconds": "1"}),
        None,
    );
    with_sim(
        &[
            "create",
            "job",
            "boom",
            "--image=busybox",
            "--dry-run=client",
            "-o",
            "json",
        ],
        serde_json::json!({"sim.k1s.io/run-seconds": "1", "sim.k1s.io/exit-code": "1"}),
        Some(1),
    );
    c.kubectl_ok(&[
        "wait",
        "--for=condition=complete",
        "job/pi",
        "--timeout=60s",
    ]);
    let j = get_json(&c, &["get", "job", "pi"]);
    assert_eq!(j["status"]["succeeded"], 1);
    assert!(j["status"]["completionTime"].is_string());
    // One failure, a 10 s backoff, a second failure: over backoffLimit 1.
    c.kubectl_ok(&[
        "wait",
        "--for=condition=failed",
        "job/boom",
        "--timeout=90s",
    ]);
    let j = get_json(&c, &["get", "job", "boom"]);
    assert_eq!(j["status"]["failed"], 2);
    let failed = conditions(&j);
    assert_eq!(
        failed.last(),
        Some(&(
            "Failed".into(),
            "True".into(),
            "BackoffLimitExceeded".into()
        ))
    );

    // A CronJob every minute, due now, starts a job that runs to completion.
    c.apply(&format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: every, namespace: {ns}}}\nspec:\n  schedule: \"*/1 * * * *\"\n  jobTemplate:\n    metadata: {{labels: {{from: cron}}}}\n    spec:\n      template:\n        metadata: {{annotations: {{sim.k1s.io/run-seconds: \"1\"}}}}\n        spec:\n          restartPolicy: Never\n          containers: [{{name: c, image: busybox}}]\n"
    ));
    backdate(&c, ns, "every", 2);
    let job = wait_until(WAIT, "the cronjob's job", || {
        cron_jobs(&c, ns).into_iter().next()
    });
    c.kubectl_ok(&[
        "wait",
        "--for=condition=complete",
        &format!("job/{}", name(&job)),
        "--timeout=60s",
    ]);
    wait_until(WAIT, "lastSuccessfulTime", || {
        let cj = get_json(&c, &["get", "cronjob", "every"]);
        cj["status"]["lastSuccessfulTime"].is_string().then_some(())
    });
}

/// `pods/eviction` honours a PodDisruptionBudget as upstream's EvictionREST: refused with 429
/// and the `DisruptionBudget` cause while no disruption is allowed; once one is, the eviction
/// is charged to the budget (`disruptedPods`) and the pod goes.
#[test]
fn eviction_respects_pod_disruption_budgets() {
    let c = TestCluster::start();
    c.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    c.kubectl_ok(&[
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=2",
    ]);
    c.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let allowed = |c: &TestCluster| {
        c.kubectl_ok(&[
            "get",
            "pdb",
            "web",
            "-o",
            "jsonpath={.status.currentHealthy}/{.status.disruptionsAllowed}",
        ])
    };
    wait_until(Duration::from_secs(30), "PDB sees 2 healthy pods", || {
        (allowed(&c) == "2/0").then_some(())
    });
    let pod = c.kubectl_ok(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let eviction = c.scratch_dir().join("eviction.json");
    std::fs::write(
        &eviction,
        format!(r#"{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{pod}","namespace":"default"}}}}"#),
    )
    .expect("write eviction");
    let path = format!("/api/v1/namespaces/default/pods/{pod}/eviction");
    let args = [
        "create",
        "--raw",
        path.as_str(),
        "-f",
        eviction.to_str().expect("utf-8"),
    ];
    let err = k1s_tests::fails(&args, c.kubectl(&args));
    assert!(
        err.contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{err}"
    );
    // A merge patch of the budget (PDBs refuse unconditional updates; patches still apply).
    c.kubectl_ok(&[
        "patch",
        "pdb",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"minAvailable":1}}"#,
    ]);
    wait_until(Duration::from_secs(30), "PDB allows one disruption", || {
        (allowed(&c) == "2/1").then_some(())
    });
    c.kubectl_ok(&args);
    let disrupted = c.kubectl_ok(&[
        "get",
        "pdb",
        "web",
        "-o",
        "jsonpath={.status.disruptedPods}",
    ]);
    let gone = !c.kubectl(&["get", "pod", &pod]).status.success();
    assert!(gone || disrupted.contains(&pod), "{disrupted}");
    wait_until(Duration::from_secs(30), "evicted pod gone", || {
        (!c.kubectl(&["get", "pod", &pod]).status.success()).then_some(())
    });
}
