//! Known commands and their outcomes; agnhost's outputs are the strings upstream's e2e tests
//! expect (test/e2e/common/storage/empty_dir.go, common/node/containers.go).

use super::*;

fn of(command: &[&str], args: &[&str]) -> Option<(Option<f64>, i32)> {
    outcome(command.iter().chain(args).copied(), &EmptySandbox).map(|o| (o.ends_after, o.code))
}

fn ends(seconds: f64, code: i32) -> Option<(Option<f64>, i32)> {
    Some((Some(seconds), code))
}

fn text(o: &Outcome) -> Vec<String> {
    o.output
        .iter()
        .map(|l| match &l.line {
            Line::Text(t) => t.clone(),
            Line::Date => "<date>".into(),
            Line::Klog(m) => format!("<klog> {m}"),
        })
        .collect()
}

/// A container with an environment, a few files and a user.
struct Fixture {
    env: Vec<(String, String)>,
    files: Vec<(String, File)>,
    user: Process,
}

impl Sandbox for Fixture {
    fn env(&self) -> Vec<(String, String)> {
        self.env.clone()
    }
    fn file(&self, path: &str) -> Option<File> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, f)| f.clone())
    }
    fn process(&self) -> Process {
        self.user.clone()
    }
    fn writable(&self, path: &str) -> Result<(), &'static str> {
        if path.starts_with("/etc/") {
            Err("Read-only file system")
        } else {
            Ok(())
        }
    }
}

fn fixture() -> Fixture {
    let dir = |mode, fs_type, gid| File {
        content: None,
        mode,
        fs_type,
        uid: 0,
        gid,
    };
    Fixture {
        env: vec![
            ("HOSTNAME".into(), "pod-1".into()),
            ("CONFIG_DATA_1".into(), "value-1".into()),
            ("GREETING".into(), "hello  there".into()),
        ],
        files: vec![
            ("/test-volume".into(), dir(0o3777, TMPFS_MAGIC, 123)),
            ("/disk".into(), dir(0o1777, EXT4_MAGIC, 0)),
            (
                "/etc/configmap-volume/data-1".into(),
                File {
                    content: Some("value-1".into()),
                    mode: 0o644,
                    fs_type: TMPFS_MAGIC,
                    uid: 0,
                    gid: 0,
                },
            ),
        ],
        user: Process {
            uid: 1000,
            gid: 3000,
            supplemental: vec![123, 3000],
            ..Default::default()
        },
    }
}

#[test]
fn echo_and_date_write_lines() {
    // The CronJob docs' example.
    let o = outcome(
        [
            "/bin/sh",
            "-c",
            "date; echo Hello from the Kubernetes cluster",
        ],
        &EmptySandbox,
    )
    .expect("a known script");
    assert_eq!(text(&o), ["<date>", "Hello from the Kubernetes cluster"]);
    let o = outcome(
        ["sh", "-c", "echo -n 'a  b'; sleep 2; echo c"],
        &EmptySandbox,
    )
    .expect("a known script");
    assert_eq!(text(&o), ["a  bc"], "-n leaves the line open");
    assert_eq!(o.output[0].after_seconds, 2.0);
    assert_eq!(
        outcome(["date", "+%s"], &EmptySandbox),
        None,
        "a format is beyond this module"
    );
    let o = outcome(["sh", "-c", "printf '%s=%d\\n' a 7"], &EmptySandbox).expect("printf");
    assert_eq!(text(&o), ["a=7"]);
}

#[test]
fn known_commands_end_as_they_would() {
    // The e2e Job fixtures' "succeed" and "fail", and everyday one-liners.
    assert_eq!(of(&["/bin/sh", "-c", "exit 0"], &[]), ends(0.0, 0));
    assert_eq!(of(&["/bin/sh", "-c", "exit 1"], &[]), ends(0.0, 1));
    assert_eq!(of(&["sh", "-c"], &["sleep 2; exit 3"]), ends(2.0, 3));
    assert_eq!(of(&["echo", "Hello World"], &[]), ends(0.0, 0));
    assert_eq!(of(&["/bin/false"], &[]), ends(0.0, 1));
    assert_eq!(of(&["sleep", "1.5"], &[]), ends(1.5, 0));
    assert_eq!(of(&["sleep"], &["1m"]), ends(60.0, 0));
    assert_eq!(
        of(&["sh", "-c", "echo 'a; b' && sleep 1"], &[]),
        ends(1.0, 0)
    );
    assert_eq!(
        of(&["sh", "-c", "false && sleep 5; echo done"], &[]),
        ends(0.0, 0)
    );
    assert_eq!(of(&["sh", "-c", "false && sleep 5"], &[]), ends(0.0, 1));
    assert_eq!(of(&["sh", "-c", "false || exit 4"], &[]), ends(0.0, 4));
    assert_eq!(of(&["sh", "-c", "true || exit 4"], &[]), ends(0.0, 0));
    assert_eq!(of(&["bash", "-c", "exit 300"], &[]), ends(0.0, 44));
    assert_eq!(of(&["sh", "-c", "exit 2; sleep 100"], &[]), ends(0.0, 2));
    assert_eq!(
        of(&["sh", "-c", "# comment\nsleep 1\nexit 0"], &[]),
        ends(1.0, 0)
    );
    assert_eq!(of(&["sh", "-c", "exec sleep 3"], &[]), ends(3.0, 0));
}

#[test]
fn some_commands_run_until_stopped_with_output() {
    let o = outcome(["sh", "-c", "echo started; sleep infinity"], &EmptySandbox).expect("known");
    assert_eq!(o.ends_after, None);
    assert_eq!(text(&o), ["started"]);
    let o = outcome(["/agnhost", "pause"], &EmptySandbox).expect("agnhost pause");
    assert_eq!((o.ends_after, text(&o)), (None, vec!["Paused".to_string()]));
}

#[test]
fn anything_else_runs_until_stopped() {
    assert_eq!(of(&[], &[]), None, "the image's entrypoint");
    assert_eq!(of(&["nginx"], &[]), None);
    assert_eq!(of(&["sh", "-c", "while true; do sleep 1; done"], &[]), None);
    assert_eq!(of(&["sh", "-c", "exit $(( $RANDOM / 16384 ))"], &[]), None);
    assert_eq!(
        of(&["sh", "-c", "if [ -r /data/foo ]; then exit 0; fi"], &[]),
        None
    );
    assert_eq!(of(&["sh", "-c", "cat /etc/hosts | wc -l"], &[]), None);
    assert_eq!(of(&["sh"], &[]), None, "a shell without -c reads stdin");
    assert_eq!(of(&["/agnhost", "netexec", "--http-port=8080"], &[]), None);
    assert_eq!(
        of(&["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"], &[]),
        None
    );
}

#[test]
fn the_image_entrypoint_and_cmd_apply_without_a_command() {
    let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.53";
    assert_eq!(container_argv(agnhost, &[], &[]), v(&["/agnhost", "pause"]));
    assert_eq!(
        container_argv(agnhost, &[], &v(&["mounttest", "--fs_type=/v"])),
        v(&["/agnhost", "mounttest", "--fs_type=/v"])
    );
    assert_eq!(
        container_argv(agnhost, &v(&["/agnhost-2"]), &v(&["entrypoint-tester"])),
        v(&["/agnhost-2", "entrypoint-tester"])
    );
    assert_eq!(container_argv("busybox:1.36", &[], &[]), v(&["sh"]));
    assert_eq!(
        container_argv("busybox", &[], &v(&["echo", "hi"])),
        v(&["echo", "hi"])
    );
    // containers.go: the argv entrypoint-tester prints.
    let o = outcome(
        container_argv(
            agnhost,
            &[],
            &v(&["entrypoint-tester", "override", "arguments"]),
        )
        .iter()
        .map(String::as_str),
        &EmptySandbox,
    )
    .expect("entrypoint-tester");
    assert_eq!(
        text(&o),
        ["[/agnhost entrypoint-tester override arguments]"]
    );
    assert_eq!(o.ends_after, Some(0.0));
}

#[test]
fn env_cat_test_and_id_see_the_sandbox() {
    let f = fixture();
    let run = |script: &str| outcome(["sh", "-c", script], &f).expect("known script");
    let o = run("env");
    assert_eq!(
        text(&o),
        [
            "HOSTNAME=pod-1",
            "CONFIG_DATA_1=value-1",
            "GREETING=hello  there"
        ]
    );
    assert_eq!(
        text(&run("echo $CONFIG_DATA_1 ${HOSTNAME}")),
        ["value-1 pod-1"]
    );
    assert_eq!(
        text(&run("echo \"<$GREETING>\" x${GREETING}x")),
        ["<hello  there> xhello therex"]
    );
    assert_eq!(text(&run("printenv HOSTNAME")), ["pod-1"]);
    assert_eq!(text(&run("hostname")), ["pod-1"]);
    let o = run("cat /etc/configmap-volume/data-1; echo");
    assert_eq!((text(&o), o.code), (vec!["value-1".to_string()], 0));
    let o = run("cat /etc/configmap-volume/missing");
    assert_eq!(
        (text(&o), o.code),
        (
            vec![
                "cat: can't open '/etc/configmap-volume/missing': No such file or directory"
                    .to_string()
            ],
            1
        )
    );
    assert_eq!(run("test -d /test-volume").code, 0);
    assert_eq!(run("test -f /test-volume").code, 1);
    assert_eq!(run("test -f /etc/configmap-volume//data-1").code, 0);
    assert_eq!(run("test ! -e /nope").code, 0);
    assert_eq!(
        text(&run("id -u; id -g; id -G")),
        ["1000", "3000", "3000 123"]
    );
}

#[test]
fn the_shell_expands_substitutes_and_redirects() {
    let f = fixture();
    let run = |script: &str| outcome(["sh", "-c", script], &f).expect("known script");
    // expansion.go: the kubelet expanded `$(TEST_VAR)` already; the prefix assignment only
    // reaches echo's environment.
    assert_eq!(
        text(&run("TEST_VAR=wrong echo \"test-value\"")),
        ["test-value"]
    );
    assert_eq!(text(&run("A=1; B=\"$A two\"; echo $B")), ["1 two"]);
    assert_eq!(text(&run("test -d /test-volume;echo $?")), ["0"]);
    assert_eq!(text(&run("test -d /nope; echo $?")), ["1"]);
    // security_context.go: `test $(id -u) -eq 65534`.
    assert_eq!(run("test $(id -u) -eq 1000").code, 0);
    assert_eq!(run("test $(id -u) -eq 0").code, 1);
    assert_eq!(text(&run("echo \"[$(hostname)]\"")), ["[pod-1]"]);
    assert_eq!(run("[ -f /etc/configmap-volume/data-1 ]").code, 0);
    assert_eq!(run("[[ \"$HOSTNAME\" == pod-1 ]] && echo OK").code, 0);
    // runtime.go: a termination message written to its file.
    let o = run("/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true");
    assert_eq!(text(&o), ["DONE"]);
    assert_eq!(
        o.written,
        [("/dev/termination-log".to_string(), "OK".to_string())]
    );
    let o = run("/bin/echo -n DONE; /bin/false");
    assert_eq!(
        (text(&o), o.open_last_line, o.code),
        (vec!["DONE".to_string()], true, 1)
    );
    let o = run("echo a > /tmp/x; echo b >> /tmp/x; cat /tmp/x");
    assert_eq!(text(&o), ["a", "b"]);
    // kubelet.go: a read-only filesystem refuses the file and the command does not run.
    let o = run("echo test > /etc/file; echo after");
    assert_eq!(
        text(&o),
        [
            "/bin/sh: can't create /etc/file: Read-only file system",
            "after"
        ]
    );
    assert_eq!(run("touch /etc/checkfile").code, 1);
    assert_eq!(
        run("touch /tmp/checkfile && test -f /tmp/checkfile").code,
        0
    );
    assert_eq!(
        text(&run("echo hidden > /dev/null 2>&1; echo shown")),
        ["shown"]
    );
    assert_eq!(text(&run("id")), ["uid=1000 gid=3000 groups=3000,123"]);
    assert_eq!(
        text(&run("ip link add dummy0 type dummy || true")),
        ["ip: RTNETLINK answers: Operation not permitted"]
    );
    assert_eq!(outcome(["sh", "-c", "echo $((1+2))"], &f), None);
    let deep = format!("echo {}x{}", "$(echo ".repeat(10_000), ")".repeat(10_000));
    assert_eq!(
        outcome(["sh", "-c", deep.as_str()], &f),
        None,
        "too deep to follow"
    );
    assert_eq!(outcome(["sh", "-c", "ls | wc -l"], &f), None);
}

#[test]
fn logs_generator_spreads_its_lines_over_the_run() {
    // kubectl/logs.go: `logs-generator --log-lines-total 100 --run-duration 20s`.
    let argv = [
        "/agnhost",
        "logs-generator",
        "--log-lines-total",
        "100",
        "--run-duration",
        "20s",
    ];
    let o = outcome(argv, &EmptySandbox).expect("logs-generator");
    assert_eq!((o.ends_after, o.code, o.output.len()), (Some(20.0), 0, 100));
    assert_eq!(o.output[99].after_seconds, 19.8);
    let lines = text(&o);
    assert!(lines[0].starts_with("<klog> 0 "), "{}", lines[0]);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" /api/v1/namespaces/kube-system/pods/"))
    );
    assert_eq!(
        lines,
        text(&outcome(argv, &EmptySandbox).expect("again")),
        "the same twice"
    );
    let at: jiff::Timestamp = "2026-11-30T04:07:20Z".parse().expect("time");
    assert_eq!(
        line_text(&Line::Klog("0 GET /x 200".into()), at, 0.5),
        "I1130 04:07:20.500000       1 logs_generator.go:76] 0 GET /x 200"
    );
    let o = outcome(
        ["/agnhost", "logs-generator", "-t", "10", "-d", "5s"],
        &EmptySandbox,
    )
    .expect("short flags");
    assert_eq!((o.ends_after, o.output.len()), (Some(5.0), 10));
}

#[test]
fn mounttest_prints_what_agnhost_prints() {
    let f = fixture();
    let run = |args: &[&str]| {
        let argv = container_argv(
            "agnhost",
            &[],
            &args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        );
        outcome(argv.iter().map(String::as_str), &f).expect("mounttest")
    };
    // empty_dir.go's doTestSetgidFSGroup on tmpfs.
    let o = run(&[
        "mounttest",
        "--fs_type=/test-volume",
        "--new_file_0660=/test-volume/test-file",
        "--file_perm=/test-volume/test-file",
        "--file_owner=/test-volume/test-file",
    ]);
    assert_eq!(
        text(&o),
        [
            "mount type of \"/test-volume\": tmpfs",
            "content of file \"/test-volume/test-file\": mount-tester new file",
            "",
            "perms of file \"/test-volume/test-file\": -rw-rw----",
            "owner UID of \"/test-volume/test-file\": 1000",
            "owner GID of \"/test-volume/test-file\": 123",
        ]
    );
    assert_eq!(o.code, 0);
    // doTestSubPathFSGroup's directory.
    let o = run(&[
        "mounttest",
        "--file_mode=/test-volume",
        "--file_perm",
        "/test-volume",
    ]);
    assert_eq!(
        text(&o),
        [
            "mode of file \"/test-volume\": dgtrwxrwxrwx",
            "perms of file \"/test-volume\": -rwxrwxrwx",
        ]
    );
    let o = run(&["mounttest", "--fs_type=/disk"]);
    assert_eq!(text(&o), ["mount type of \"/disk\": 61267"]);
    let o = run(&[
        "mounttest",
        "--file_content=/etc/configmap-volume/data-1",
        "--file_mode=/etc/configmap-volume/data-1",
    ]);
    assert_eq!(
        text(&o),
        [
            "mode of file \"/etc/configmap-volume/data-1\": -rw-r--r--",
            "content of file \"/etc/configmap-volume/data-1\": value-1",
        ]
    );
    let o = run(&["mounttest", "--file_content=/etc/nope"]);
    assert_eq!(o.code, 1);
    // The loop reads every 2 s until the retry time is up.
    let o = run(&[
        "mounttest",
        "--break_on_expected_content=false",
        "--retry_time=6",
        "--file_content_in_loop=/etc/configmap-volume/data-1",
    ]);
    assert_eq!((o.ends_after, o.code, o.output.len()), (Some(6.0), 0, 3));
    assert_eq!(o.output[2].after_seconds, 4.0);
    assert_eq!(
        outcome(["/agnhost", "mounttest", "--bogus=1"], &f),
        None,
        "a flag mounttest does not have"
    );
}

mod pod_sandbox {
    use super::super::pod::*;
    use super::super::*;
    use crate::quantity::Quantity;
    use serde_json::json;

    fn facts() -> PodFacts {
        let mut objects = Objects::default();
        objects.config_maps.insert(
            "cm".into(),
            [("data-1", "value-1"), ("data-2", "value-2")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        PodFacts {
            objects: Some(objects),
            services: vec![
                ServiceLink {
                    namespace: "default".into(),
                    name: "kubernetes".into(),
                    cluster_ip: "10.96.0.1".into(),
                    ports: vec![("https".into(), 443, "TCP".into())],
                },
                ServiceLink {
                    namespace: "ns".into(),
                    name: "fooservice".into(),
                    cluster_ip: "10.96.0.9".into(),
                    ports: vec![("".into(), 8765, "TCP".into())],
                },
            ],
            allocatable: [("cpu", "3900m"), ("memory", "7Gi")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Quantity::parse(v).expect("quantity")))
                .collect(),
        }
    }

    fn pod() -> serde_json::Value {
        json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-1",
                         "labels": {"key1": "value1", "key2": "value2"},
                         "annotations": {"builder": "bar"},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {
                "nodeName": "n1",
                "securityContext": {"fsGroup": 1001, "runAsUser": 1000},
                "containers": [{
                    "name": "c", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                    "args": ["mounttest", "--file_content=/etc/cm/data-1"],
                    "resources": {"requests": {"memory": "32Mi"}},
                    "env": [
                        {"name": "FOO", "value": "foo-value"},
                        {"name": "FOOBAR", "value": "$(FOO);;$(BAR)"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                        {"name": "MEMORY_REQUEST", "valueFrom": {"resourceFieldRef": {"resource": "requests.memory", "divisor": "1Mi"}}},
                        {"name": "CONFIG_DATA_1", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "data-1"}}}
                    ],
                    "envFrom": [{"prefix": "p-", "configMapRef": {"name": "cm"}}],
                    "volumeMounts": [
                        {"name": "cm", "mountPath": "/etc/cm"},
                        {"name": "items", "mountPath": "/etc/items"},
                        {"name": "podinfo", "mountPath": "/etc/podinfo"},
                        {"name": "scratch", "mountPath": "/scratch"}
                    ]
                }],
                "volumes": [
                    {"name": "cm", "configMap": {"name": "cm", "defaultMode": 0o400}},
                    {"name": "items", "configMap": {"name": "cm", "items": [{"key": "data-2", "path": "path/to/data-2", "mode": 0o600}]}},
                    {"name": "podinfo", "downwardAPI": {"items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {"path": "podname", "fieldRef": {"fieldPath": "metadata.name"}},
                        {"path": "cpu_limit", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu", "divisor": "1m"}}
                    ]}},
                    {"name": "scratch", "emptyDir": {}}
                ]
            }
        })
    }

    #[test]
    fn the_environment_is_the_kubelets() {
        let (pod, facts) = (pod(), facts());
        let sandbox = PodSandbox::new(&pod, "c", &facts).expect("container");
        let env = sandbox.env();
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or("<unset>")
        };
        assert_eq!(get("HOSTNAME"), "p");
        // expansion.go: a reference to an undefined variable stays as written.
        assert_eq!(get("FOOBAR"), "foo-value;;$(BAR)");
        assert_eq!(get("POD_NAME"), "p");
        // An unset limit is the node's allocatable, rounded up to whole cores.
        assert_eq!(get("CPU_LIMIT"), "4");
        assert_eq!(get("MEMORY_REQUEST"), "32");
        assert_eq!(get("CONFIG_DATA_1"), "value-1");
        assert_eq!(get("p-data-2"), "value-2");
        assert_eq!(get("HOME"), "/");
        // pods.go's service environment variables.
        assert_eq!(get("FOOSERVICE_SERVICE_HOST"), "10.96.0.9");
        assert_eq!(get("FOOSERVICE_SERVICE_PORT"), "8765");
        assert_eq!(get("FOOSERVICE_PORT"), "tcp://10.96.0.9:8765");
        assert_eq!(get("FOOSERVICE_PORT_8765_TCP_PROTO"), "tcp");
        assert_eq!(get("FOOSERVICE_PORT_8765_TCP_ADDR"), "10.96.0.9");
        assert_eq!(get("KUBERNETES_SERVICE_PORT_HTTPS"), "443");
        assert_eq!(get("KUBERNETES_PORT_443_TCP"), "tcp://10.96.0.1:443");
        assert_eq!(
            sandbox.argv(),
            ["/agnhost", "mounttest", "--file_content=/etc/cm/data-1"]
        );
        let mut no_links = pod.clone();
        no_links["spec"]["enableServiceLinks"] = json!(false);
        let sandbox = PodSandbox::new(&no_links, "c", &facts).expect("container");
        let env = sandbox.env();
        assert!(env.iter().any(|(k, _)| k == "KUBERNETES_SERVICE_HOST"));
        assert!(!env.iter().any(|(k, _)| k == "FOOSERVICE_SERVICE_HOST"));
    }

    #[test]
    fn volumes_hold_what_the_kubelet_writes() {
        let (pod, facts) = (pod(), facts());
        let sandbox = PodSandbox::new(&pod, "c", &facts).expect("container");
        let file = |p: &str| sandbox.file(p);
        let data = file("/etc/cm/data-1").expect("a key is a file");
        assert_eq!(data.content.as_deref(), Some("value-1"));
        // defaultMode 0400 with an fsGroup: group-readable, owned by the group.
        assert_eq!(
            (go_file_mode(data.mode, false), data.gid),
            ("-r--r-----".into(), 1001)
        );
        assert_eq!(file("/etc/cm/nope"), None);
        let item = file("/etc/items/path/to/data-2").expect("an item");
        assert_eq!(
            (item.content.as_deref(), item.mode),
            (Some("value-2"), 0o640)
        );
        assert!(
            file("/etc/items/path/to")
                .expect("a directory")
                .content
                .is_none()
        );
        assert_eq!(file("/etc/items/data-2"), None, "items rename keys");
        assert_eq!(
            file("/etc/podinfo/labels")
                .and_then(|f| f.content)
                .as_deref(),
            Some("key1=\"value1\"\nkey2=\"value2\"")
        );
        assert_eq!(
            file("/etc/podinfo/cpu_limit")
                .and_then(|f| f.content)
                .as_deref(),
            Some("3900")
        );
        assert_eq!(
            file("/etc/podinfo/podname").expect("file").fs_type,
            TMPFS_MAGIC
        );
        let scratch = file("/scratch").expect("the emptyDir");
        assert_eq!(
            (go_file_mode(scratch.mode, true), scratch.fs_type),
            ("dgtrwxrwxrwx".into(), EXT4_MAGIC)
        );
        assert_eq!(file("/elsewhere"), None);
        assert_eq!(
            sandbox.process(),
            Process {
                uid: 1000,
                gid: 0,
                supplemental: vec![1001],
                ..Default::default()
            }
        );
        // The simulated node looks nothing up: referenced keys are taken to exist.
        let unknown = PodFacts::default();
        let sandbox = PodSandbox::new(&pod, "c", &unknown).expect("container");
        assert!(sandbox.file("/etc/cm/anything").is_some());
        let argv = sandbox.argv();
        let run = outcome(argv.iter().map(String::as_str), &sandbox).expect("mounttest");
        assert_eq!((run.ends_after, run.code), (Some(0.0), 0));
    }

    #[test]
    fn references_expand_as_the_kubelet_expands_them() {
        let env: Vec<(String, String)> =
            [("GREETING", "Warm greetings to"), ("NAME", "Kubernetes")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(
            expand("$(GREETING) The Most Honorable $(NAME)", &env),
            "Warm greetings to The Most Honorable Kubernetes"
        );
        assert_eq!(
            expand("$(MISSING) $$(NAME) $5 $(", &env),
            "$(MISSING) $(NAME) $5 $("
        );
    }
}
