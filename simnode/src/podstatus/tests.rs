//! Unit tests of the simulated pod status: first start, init containers and sidecars,
//! readiness gates, run-seconds with exit codes and restart policies, deletion, QoS.

use super::*;
use k8s_openapi::api::core::v1::{PodReadinessGate, PodSpec, ResourceRequirements};

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).expect("test value")
}

fn env() -> PodEnv {
    PodEnv {
        host_ip: "172.18.0.2".into(),
        pod_ip: "10.244.0.2".into(),
        missing: Missing::default(),
    }
}

fn container(name: &str) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox".into()),
        ..Default::default()
    }
}

fn pod(policy: &str, annotations: &[(&str, &str)]) -> Pod {
    let mut p = Pod {
        spec: Some(PodSpec {
            restart_policy: Some(policy.into()),
            containers: vec![container("c")],
            ..Default::default()
        }),
        ..Default::default()
    };
    p.metadata.name = Some("p".into());
    p.metadata.namespace = Some("ns".into());
    p.metadata.uid = Some("u-1".into());
    p.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    p
}

/// Applies the desired status at `now` as the API would store it.
fn advance(p: &mut Pod, now: Timestamp) -> Desired {
    let d = desired(p, &env(), now);
    p.status = Some(d.status.clone());
    d
}

fn cond<'a>(s: &'a PodStatus, type_: &str) -> &'a PodCondition {
    s.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_}"))
}

fn state(s: &PodStatus) -> &ContainerState {
    s.container_statuses.as_ref().expect("test value")[0]
        .state
        .as_ref()
        .expect("test value")
}

#[test]
fn a_new_pod_runs_with_upstream_shape() {
    let mut p = pod("Always", &[]);
    p.spec.as_mut().expect("test value").init_containers = Some(vec![container("init")]);
    let d = advance(&mut p, t(0));
    let s = &d.status;
    assert_eq!(d.wake, None, "runs until deleted");
    assert_eq!(s.phase.as_deref(), Some("Running"));
    assert_eq!(s.pod_ip.as_deref(), Some("10.244.0.2"));
    assert_eq!(s.host_ips.as_ref().expect("test value")[0].ip, "172.18.0.2");
    assert_eq!(s.qos_class.as_deref(), Some("BestEffort"));
    let types: Vec<&str> = s
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled"
        ]
    );
    assert!(s.conditions.iter().flatten().all(|c| c.status == "True"));
    let init = &s.init_container_statuses.as_ref().expect("test value")[0];
    let term = init
        .state
        .as_ref()
        .expect("test value")
        .terminated
        .as_ref()
        .expect("test value");
    assert_eq!(
        (term.exit_code, term.reason.as_deref()),
        (0, Some("Completed"))
    );
    assert!(!init.ready);
    let c = &s.container_statuses.as_ref().expect("test value")[0];
    assert!(c.ready && c.started == Some(true));
    assert_eq!(c.image, "docker.io/library/busybox:latest");
    assert!(c.image_id.starts_with("docker.io/library/busybox@sha256:"));
    assert!(
        c.container_id
            .as_deref()
            .expect("test value")
            .starts_with("sim://")
    );
    assert_eq!(
        state(s).running.as_ref().expect("test value").started_at,
        Some(Time(t(0)))
    );
    // Seen again later: nothing changes (no write), transition times kept.
    let again = desired(&p, &env(), t(50)).status;
    assert_eq!(
        serde_json::to_value(&again).expect("test value"),
        serde_json::to_value(p.status.as_ref().expect("test value")).expect("test value")
    );
}

#[test]
fn sidecars_keep_running_and_others_conditions_are_kept() {
    let mut p = pod("Always", &[]);
    let mut sidecar = container("proxy");
    sidecar.restart_policy = Some("Always".into());
    p.spec.as_mut().expect("test value").init_containers = Some(vec![sidecar]);
    p.status = Some(PodStatus {
        conditions: Some(vec![PodCondition {
            type_: "example.com/other".into(),
            status: "True".into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let s = advance(&mut p, t(0)).status;
    let side = &s.init_container_statuses.as_ref().expect("test value")[0];
    assert!(side.ready && side.state.as_ref().expect("test value").running.is_some());
    assert_eq!(
        s.conditions.as_ref().expect("test value")[0].type_,
        "example.com/other"
    );
    assert_eq!(cond(&s, "Ready").status, "True");
}

#[test]
fn readiness_gates_hold_ready() {
    let mut p = pod("Always", &[]);
    p.spec.as_mut().expect("test value").readiness_gates = Some(vec![
        PodReadinessGate {
            condition_type: "example.com/a".into(),
        },
        PodReadinessGate {
            condition_type: "example.com/b".into(),
        },
    ]);
    let s = advance(&mut p, t(0)).status;
    let ready = cond(&s, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("ReadinessGatesNotReady"))
    );
    assert_eq!(
        ready.message.as_deref(),
        Some(
            "corresponding condition of pod readiness gate \"example.com/a\" does not exist., corresponding condition of pod readiness gate \"example.com/b\" does not exist."
        )
    );
    assert_eq!(cond(&s, "ContainersReady").status, "True");
    let gate = |t: &str, v: &str| PodCondition {
        type_: t.into(),
        status: v.into(),
        ..Default::default()
    };
    p.status
        .as_mut()
        .expect("test value")
        .conditions
        .as_mut()
        .expect("test value")
        .extend([
            gate("example.com/a", "True"),
            gate("example.com/b", "False"),
        ]);
    let s = advance(&mut p, t(1)).status;
    assert_eq!(
        cond(&s, "Ready").message.as_deref(),
        Some("the status of pod readiness gate \"example.com/b\" is not \"True\", but False")
    );
    for c in p
        .status
        .as_mut()
        .expect("test value")
        .conditions
        .as_mut()
        .expect("test value")
    {
        if c.type_ == "example.com/b" {
            c.status = "True".into();
        }
    }
    let s = advance(&mut p, t(2)).status;
    let ready = cond(&s, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("True", None)
    );
    assert_eq!(ready.last_transition_time, Some(Time(t(2))));
    assert_eq!(
        cond(&s, "ContainersReady").last_transition_time,
        Some(Time(t(0)))
    );
}

#[test]
fn run_seconds_end_the_pod_by_exit_code() {
    for (code, phase, reason, ready_reason) in [
        ("0", "Succeeded", "Completed", "PodCompleted"),
        ("3", "Failed", "Error", "PodFailed"),
    ] {
        let mut p = pod("Never", &[(RUN_SECONDS, "5"), (EXIT_CODE, code)]);
        let d = advance(&mut p, t(0));
        assert_eq!(d.wake, Some(t(5)));
        let d = advance(&mut p, t(3));
        assert_eq!(d.status.phase.as_deref(), Some("Running"));
        assert_eq!(d.wake, Some(t(5)));
        let d = advance(&mut p, t(6));
        let s = &d.status;
        assert_eq!(d.wake, None);
        assert_eq!(s.phase.as_deref(), Some(phase), "exit {code}");
        let term = state(s).terminated.as_ref().expect("test value");
        assert_eq!(term.exit_code, code.parse::<i32>().expect("test value"));
        assert_eq!(term.reason.as_deref(), Some(reason));
        assert_eq!(term.started_at, Some(Time(t(0))));
        assert_eq!(
            term.finished_at,
            Some(Time(t(5))),
            "finished when the run ended"
        );
        for c in ["Ready", "ContainersReady"] {
            let c = cond(s, c);
            assert_eq!(
                (c.status.as_str(), c.reason.as_deref()),
                ("False", Some(ready_reason))
            );
        }
        assert_eq!(cond(s, "PodReadyToStartContainers").status, "False");
        assert_eq!(cond(s, "Initialized").status, "True");
    }
    // OnFailure finishes on success.
    let mut p = pod("OnFailure", &[(RUN_SECONDS, "1")]);
    advance(&mut p, t(0));
    assert_eq!(
        advance(&mut p, t(1)).status.phase.as_deref(),
        Some("Succeeded")
    );
}

#[test]
fn restarts_follow_the_policy_with_back_off() {
    for policy in ["Always", "OnFailure"] {
        let mut p = pod(policy, &[(RUN_SECONDS, "2"), (EXIT_CODE, "1")]);
        advance(&mut p, t(0));
        // First exit: restarted at once.
        let d = advance(&mut p, t(2));
        let c = &d.status.container_statuses.as_ref().expect("test value")[0];
        assert_eq!(d.status.phase.as_deref(), Some("Running"), "{policy}");
        assert_eq!(c.restart_count, 1);
        assert!(c.state.as_ref().expect("test value").running.is_some());
        let last = c
            .last_state
            .as_ref()
            .expect("test value")
            .terminated
            .as_ref()
            .expect("test value");
        assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
        assert_eq!(d.wake, Some(t(4)));
        // Second exit: back-off 10 s in CrashLoopBackOff.
        let d = advance(&mut p, t(4));
        let c = &d.status.container_statuses.as_ref().expect("test value")[0];
        let waiting = c
            .state
            .as_ref()
            .expect("test value")
            .waiting
            .as_ref()
            .expect("test value");
        assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
        assert!(
            waiting
                .message
                .as_deref()
                .expect("test value")
                .starts_with("back-off 10s restarting failed container=c pod=p_ns(u-1)")
        );
        assert!(!c.ready);
        assert_eq!(
            cond(&d.status, "Ready").reason.as_deref(),
            Some("ContainersNotReady")
        );
        assert_eq!(
            cond(&d.status, "Ready").message.as_deref(),
            Some("containers with unready status: [c]")
        );
        assert_eq!(d.wake, Some(t(14)));
        let d = advance(&mut p, t(14));
        let c = &d.status.container_statuses.as_ref().expect("test value")[0];
        assert_eq!(c.restart_count, 2);
        assert!(c.ready);
        assert_ne!(c.container_id, None);
    }
    // Always restarts even after success.
    let mut p = pod("Always", &[(RUN_SECONDS, "1")]);
    advance(&mut p, t(0));
    let s = advance(&mut p, t(1)).status;
    assert_eq!(
        s.container_statuses.as_ref().expect("test value")[0].restart_count,
        1
    );
    assert_eq!(s.phase.as_deref(), Some("Running"));
}

fn started(container: &str, init: bool) -> Happening {
    Happening::Started {
        container: container.into(),
        init,
        image: "busybox".into(),
        pull_policy: None,
    }
}

#[test]
fn happenings_follow_starts_and_back_off() {
    let mut p = pod("Always", &[(RUN_SECONDS, "2"), (EXIT_CODE, "1")]);
    p.spec.as_mut().expect("test value").init_containers = Some(vec![container("init")]);
    assert_eq!(
        advance(&mut p, t(0)).happenings,
        [started("init", true), started("c", false)],
        "init containers first"
    );
    assert_eq!(advance(&mut p, t(1)).happenings, [], "nothing new");
    assert_eq!(advance(&mut p, t(2)).happenings, [started("c", false)]);
    assert_eq!(
        advance(&mut p, t(4)).happenings,
        [Happening::BackOff {
            container: "c".into(),
            init: false
        }]
    );
    assert_eq!(advance(&mut p, t(14)).happenings, [started("c", false)]);
}

#[test]
fn probes_delay_ready_and_started() {
    let mut p = pod("Always", &[]);
    let c = &mut p.spec.as_mut().expect("test value").containers[0];
    c.readiness_probe = Some(k8s_openapi::api::core::v1::Probe {
        initial_delay_seconds: Some(3),
        period_seconds: Some(2),
        ..Default::default()
    });
    c.startup_probe = Some(k8s_openapi::api::core::v1::Probe {
        period_seconds: Some(1),
        initial_delay_seconds: Some(1),
        ..Default::default()
    });
    let d = advance(&mut p, t(0));
    let c = &d.status.container_statuses.as_ref().expect("test value")[0];
    assert_eq!((c.started, c.ready), (Some(false), false));
    assert!(state(&d.status).running.is_some());
    assert_eq!(d.wake, Some(t(1)), "the startup probe passes first");
    assert_eq!(cond(&d.status, "Ready").status, "False");
    let d = advance(&mut p, t(1));
    let c = &d.status.container_statuses.as_ref().expect("test value")[0];
    assert_eq!((c.started, c.ready), (Some(true), false));
    assert_eq!(d.wake, Some(t(4)), "readiness at the first tick after 3 s");
    let d = advance(&mut p, t(4));
    let c = &d.status.container_statuses.as_ref().expect("test value")[0];
    assert_eq!((c.started, c.ready), (Some(true), true));
    assert_eq!(cond(&d.status, "Ready").status, "True");
    assert_eq!(d.wake, None);
}

#[test]
fn a_failing_liveness_probe_restarts_the_container() {
    let mut p = pod("Always", &[(probes::LIVENESS_FAIL_AFTER, "1")]);
    p.spec.as_mut().expect("test value").containers[0].liveness_probe =
        Some(k8s_openapi::api::core::v1::Probe {
            period_seconds: Some(1),
            failure_threshold: Some(2),
            ..Default::default()
        });
    advance(&mut p, t(0));
    // Probes fail at 1 and 2: killed at 2 and restarted at once (no back-off yet).
    let d = advance(&mut p, t(2));
    assert_eq!(
        d.happenings,
        [
            Happening::LivenessFailed {
                container: "c".into(),
                failures: 2,
                output: String::new(),
                restart: true,
            },
            started("c", false)
        ]
    );
    let c = &d.status.container_statuses.as_ref().expect("test value")[0];
    assert_eq!(c.restart_count, 1);
    let last = c
        .last_state
        .as_ref()
        .and_then(|l| l.terminated.as_ref())
        .expect("test value");
    assert_eq!(
        (last.exit_code, last.reason.as_deref()),
        (137, Some("Error"))
    );
    // Killed again at 4: back-off 10 s.
    let d = advance(&mut p, t(4));
    let waiting = state(&d.status).waiting.as_ref().expect("test value");
    assert_eq!(waiting.reason.as_deref(), Some("CrashLoopBackOff"));
    assert_eq!(d.wake, Some(t(14)));
    let d = advance(&mut p, t(14));
    let c = &d.status.container_statuses.as_ref().expect("test value")[0];
    assert_eq!(c.restart_count, 2);
    // Never: the pod fails.
    let mut p = pod("Never", &[(probes::LIVENESS_FAIL_AFTER, "0")]);
    p.spec.as_mut().expect("test value").containers[0].liveness_probe =
        Some(k8s_openapi::api::core::v1::Probe::default());
    advance(&mut p, t(0));
    let d = advance(&mut p, t(20));
    assert_eq!(d.status.phase.as_deref(), Some("Failed"));
    assert!(matches!(
        &d.happenings[0],
        Happening::LivenessFailed { restart: false, .. }
    ));
}

#[test]
fn stopping_a_deleted_pod_ends_it() {
    let mut p = pod("Always", &[]);
    advance(&mut p, t(0));
    let s = stopped(&p, &env(), t(9));
    assert_eq!(s.phase.as_deref(), Some("Succeeded"));
    let term = state(&s).terminated.as_ref().expect("test value");
    assert_eq!(
        (term.exit_code, term.finished_at.clone()),
        (0, Some(Time(t(9))))
    );
    assert_eq!(cond(&s, "Ready").reason.as_deref(), Some("PodCompleted"));
    assert_eq!(cond(&s, "Ready").last_transition_time, Some(Time(t(9))));
}

#[test]
fn qos_classes() {
    let with = |req: &[(&str, &str)], lim: &[(&str, &str)]| {
        let mut p = pod("Always", &[]);
        let q = |v: &[(&str, &str)]| {
            (!v.is_empty()).then(|| {
                v.iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect()
            })
        };
        p.spec.as_mut().expect("test value").containers[0].resources = Some(ResourceRequirements {
            requests: q(req),
            limits: q(lim),
            ..Default::default()
        });
        qos_class(&p)
    };
    assert_eq!(with(&[], &[]), "BestEffort");
    assert_eq!(with(&[("cpu", "100m")], &[]), "Burstable");
    assert_eq!(
        with(
            &[("cpu", "1"), ("memory", "1Gi")],
            &[("cpu", "1"), ("memory", "1Gi")]
        ),
        "Guaranteed"
    );
    assert_eq!(
        with(&[("cpu", "1")], &[("cpu", "1")]),
        "Burstable",
        "memory limit missing"
    );
    assert_eq!(with(&[("cpu", "0")], &[]), "BestEffort");
}

#[test]
fn images_normalize_as_the_runtime_reports_them() {
    for (given, want) in [
        ("nginx", "docker.io/library/nginx:latest"),
        ("nginx:1.25", "docker.io/library/nginx:1.25"),
        ("bitnami/redis", "docker.io/bitnami/redis:latest"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
        ("localhost:5000/x", "localhost:5000/x:latest"),
        ("busybox@sha256:abc", "docker.io/library/busybox@sha256:abc"),
    ] {
        assert_eq!(normalize_image(given), want);
    }
    assert_eq!(run_seconds(&pod("Never", &[(RUN_SECONDS, "x")])), None);
    assert_eq!(run_seconds(&pod("Never", &[(RUN_SECONDS, "-1")])), None);
    assert_eq!(run_seconds(&pod("Never", &[(RUN_SECONDS, "1.5")])), Some(2));
}

fn with_command<'a>(p: &'a mut Pod, script: &str) -> &'a mut Container {
    let c = &mut p.spec.as_mut().expect("test value").containers[0];
    c.command = Some(vec!["/bin/sh".into(), "-c".into()]);
    c.args = Some(vec![script.into()]);
    c
}

fn terminated_message(s: &PodStatus) -> Option<String> {
    state(s)
        .terminated
        .as_ref()
        .expect("terminated")
        .message
        .clone()
}

#[test]
fn termination_messages_come_from_the_file_or_the_log() {
    // runtime.go's blackbox tests.
    let mut p = pod("Never", &[]);
    with_command(
        &mut p,
        "/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true",
    );
    advance(&mut p, t(0));
    let d = advance(&mut p, t(1));
    assert_eq!(d.status.phase.as_deref(), Some("Succeeded"));
    assert_eq!(terminated_message(&d.status).as_deref(), Some("OK"));

    let mut p = pod("Never", &[]);
    let c = with_command(&mut p, "/bin/echo -n DONE > /dev/termination-custom-log");
    c.termination_message_path = Some("/dev/termination-custom-log".into());
    advance(&mut p, t(0));
    assert_eq!(
        terminated_message(&advance(&mut p, t(1)).status).as_deref(),
        Some("DONE")
    );

    let mut p = pod("Never", &[]);
    let c = with_command(&mut p, "/bin/echo -n DONE; /bin/false");
    c.termination_message_policy = Some("FallbackToLogsOnError".into());
    advance(&mut p, t(0));
    let d = advance(&mut p, t(1));
    assert_eq!(d.status.phase.as_deref(), Some("Failed"));
    assert_eq!(terminated_message(&d.status).as_deref(), Some("DONE"));

    // A success does not fall back to the log.
    let mut p = pod("Never", &[]);
    let c = with_command(&mut p, "/bin/echo -n DONE; /bin/true");
    c.termination_message_policy = Some("FallbackToLogsOnError".into());
    advance(&mut p, t(0));
    assert_eq!(terminated_message(&advance(&mut p, t(1)).status), None);
}

#[test]
fn a_subpath_expression_without_a_value_holds_the_container() {
    use k8s_openapi::api::core::v1::{
        EnvVar, EnvVarSource, ObjectFieldSelector, Volume, VolumeMount,
    };
    // expansion.go: a failing subpath expansion can be modified during the container's life.
    let mut p = pod("Always", &[("notmysubpath", "mypath")]);
    let spec = p.spec.as_mut().expect("test value");
    spec.volumes = Some(vec![Volume {
        name: "workdir1".into(),
        empty_dir: Some(Default::default()),
        ..Default::default()
    }]);
    let c = &mut spec.containers[0];
    c.env = Some(vec![
        EnvVar {
            name: "POD_NAME".into(),
            value: Some("foo".into()),
            ..Default::default()
        },
        EnvVar {
            name: "ANNOTATION".into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.annotations['mysubpath']".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    ]);
    c.volume_mounts = Some(vec![VolumeMount {
        name: "workdir1".into(),
        mount_path: "/subpath_mount".into(),
        sub_path_expr: Some("$(ANNOTATION)/$(POD_NAME)".into()),
        ..Default::default()
    }]);
    let d = advance(&mut p, t(0));
    assert_eq!(d.status.phase.as_deref(), Some("Pending"));
    let waiting = state(&d.status).waiting.as_ref().expect("waiting");
    assert_eq!(
        waiting.reason.as_deref(),
        Some("CreateContainerConfigError")
    );
    assert_eq!(
        waiting.message.as_deref(),
        Some("missing value for ANNOTATION")
    );
    assert_eq!(
        d.happenings,
        [Happening::ConfigError {
            container: "c".into(),
            message: "missing value for ANNOTATION".into()
        }]
    );
    assert!(advance(&mut p, t(5)).happenings.is_empty(), "reported once");
    p.metadata
        .annotations
        .as_mut()
        .expect("test value")
        .insert("mysubpath".into(), "mypath".into());
    let d = advance(&mut p, t(10));
    assert_eq!(d.status.phase.as_deref(), Some("Running"));
    // An absolute or backstepping subPath is refused.
    let mount = &mut p.spec.as_mut().expect("test value").containers[0]
        .volume_mounts
        .as_mut()
        .expect("test value")[0];
    mount.sub_path_expr = Some("$(POD_NAME)".into());
    p.spec.as_mut().expect("test value").containers[0]
        .env
        .as_mut()
        .expect("test value")[0]
        .value = Some("..".into());
    p.status = None;
    let d = advance(&mut p, t(20));
    assert_eq!(
        state(&d.status)
            .waiting
            .as_ref()
            .and_then(|w| w.message.as_deref()),
        Some("unable to provision SubPath `..`: must not contain '..'")
    );
}

#[test]
fn missing_sources_hold_the_pod_until_they_appear() {
    // configmap_volume.go's non-optional volume, and a missing env source.
    let mut p = pod("Always", &[]);
    let mut blocked = env();
    blocked.missing.volume = Some((
        "createcm-volume".into(),
        "configmap \"cm\" not found".into(),
    ));
    let d = desired(&p, &blocked, t(0));
    p.status = Some(d.status.clone());
    assert_eq!(d.status.phase.as_deref(), Some("Pending"));
    let waiting = state(&d.status).waiting.as_ref().expect("waiting");
    assert_eq!(waiting.reason.as_deref(), Some("ContainerCreating"));
    assert_eq!(cond(&d.status, "PodReadyToStartContainers").status, "False");
    assert_eq!(
        d.happenings,
        [Happening::FailedMount {
            volume: "createcm-volume".into(),
            message: "configmap \"cm\" not found".into()
        }]
    );
    assert_eq!(d.wake, Some(t(MISSING_RETRY_SECONDS)), "looked for again");
    let mut env_missing = env();
    env_missing
        .missing
        .env
        .insert("c".into(), "couldn't find key k in ConfigMap ns/cm".into());
    let d = desired(&p, &env_missing, t(2));
    p.status = Some(d.status.clone());
    assert_eq!(d.status.phase.as_deref(), Some("Pending"));
    let waiting = state(&d.status).waiting.as_ref().expect("waiting");
    assert_eq!(
        (waiting.reason.as_deref(), waiting.message.as_deref()),
        (
            Some("CreateContainerConfigError"),
            Some("couldn't find key k in ConfigMap ns/cm")
        )
    );
    let d = desired(&p, &env(), t(4));
    assert_eq!(d.status.phase.as_deref(), Some("Running"));
    assert_eq!(d.wake, None);
}
