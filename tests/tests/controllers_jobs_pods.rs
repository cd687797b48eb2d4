//! The ttl-after-finished controller and the pod garbage collector through kubectl (Job and pod
//! status are set through `/status`, as nothing runs them here).

use std::time::Duration;

use k1s_tests::{StartOptions, TestCluster, wait_until};

fn gone(c: &TestCluster, kind: &str, name: &str) -> bool {
    !c.kubectl(&["get", kind, name]).status.success()
}

#[test]
fn a_finished_job_is_deleted_after_its_ttl() {
    let c = TestCluster::start();
    for (name, ttl) in [("quick", 0), ("later", 3), ("kept", -1)] {
        let ttl_line = if ttl >= 0 {
            format!("  ttlSecondsAfterFinished: {ttl}\n")
        } else {
            String::new()
        };
        c.apply(&format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: default}}\nspec:\n{ttl_line}  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox}}]\n"
        ));
        // Finished as upstream's status rules allow: no active pod, and the start time the job
        // controller may have set kept (it may set it between the read and the patch: retried).
        let finish = || {
            let times = c.kubectl_ok(&[
                "get",
                "job",
                name,
                "-o",
                "jsonpath={.metadata.creationTimestamp} {.status.startTime}",
            ]);
            let mut times = times.split_whitespace();
            let created = times.next().unwrap_or_default().to_string();
            let now = times.next().map_or(created, str::to_string);
            let status = format!(
                r#"{{"status":{{"startTime":"{now}","completionTime":"{now}","active":0,"ready":0,"succeeded":1,"conditions":[{{"type":"SuccessCriteriaMet","status":"True","lastTransitionTime":"{now}"}},{{"type":"Complete","status":"True","lastTransitionTime":"{now}"}}]}}}}"#
            );
            let out = c.kubectl(&[
                "patch",
                "job",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                &status,
            ]);
            out.status.success().then_some(())
        };
        wait_until(Duration::from_secs(20), "the job marked finished", finish);
    }
    wait_until(Duration::from_secs(120), "the ttl=0 job to go", || {
        gone(&c, "job", "quick").then_some(())
    });
    assert!(!gone(&c, "job", "later") || !gone(&c, "job", "kept"));
    wait_until(Duration::from_secs(120), "the ttl=3 job to go", || {
        gone(&c, "job", "later").then_some(())
    });
    assert!(
        !gone(&c, "job", "kept"),
        "a job without ttlSecondsAfterFinished stays"
    );
}

#[test]
fn terminated_pods_beyond_the_threshold_are_collected_oldest_first() {
    let c = TestCluster::start_with(StartOptions {
        extra_args: vec!["--terminated-pod-gc-threshold=2".into()],
        ..Default::default()
    });
    c.apply("apiVersion: v1\nkind: Node\nmetadata: {name: node-a}\n");
    for i in 0..4 {
        let name = format!("done-{i}");
        c.apply(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  nodeName: node-a\n  restartPolicy: Never\n  containers: [{{name: c, image: busybox}}]\n"
        ));
        c.kubectl_ok(&[
            "patch",
            "pod",
            &name,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Succeeded"}}"#,
        ]);
        // Distinct creation times order the pods.
        std::thread::sleep(Duration::from_millis(1100));
    }
    wait_until(
        Duration::from_secs(45),
        "two terminated pods to be collected",
        || {
            let left = c.kubectl_ok(&["get", "pods", "-o", "name"]);
            (left.lines().count() == 2).then_some(())
        },
    );
    let left = c.kubectl_ok(&["get", "pods", "-o", "name"]);
    assert_eq!(left.trim(), "pod/done-2\npod/done-3", "the oldest go first");
}
