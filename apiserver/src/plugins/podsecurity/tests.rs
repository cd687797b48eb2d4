//! Tests of PodSecurity: each check on upstream's own cases (inputs and expected reason and
//! detail taken as facts from pod-security-admission's check tests), the registry's levels and
//! versions, namespace labels, and the admission flow on a memory-store registry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::checks::{self, Level, LevelVersion, PodView, Version, check_at, check_ids};
use super::{Policy, policy_from_labels};
use crate::plugins::tests::{namespace, put, registry, request, user};
use crate::plugins::{Operation, RequestNotes};

/// Runs one check at policy version v1.`minor` on a pod given as `{metadata, spec}`.
fn run(id: &str, minor: u64, pod: Value) -> Option<(String, String)> {
    let view = PodView {
        metadata: pod.get("metadata").unwrap_or(&Value::Null),
        spec: pod.get("spec").unwrap_or(&Value::Null),
    };
    check_at(id, minor)(view).map(|v| (v.reason.to_string(), v.detail))
}

fn denied(reason: &str, detail: &str) -> Option<(String, String)> {
    Some((reason.to_string(), detail.to_string()))
}

fn spec(spec: Value) -> Value {
    json!({ "spec": spec })
}

#[test]
fn podsecurity_allow_privilege_escalation() {
    let pod = spec(json!({"containers": [
        {"name": "a"},
        {"name": "b", "securityContext": {"allowPrivilegeEscalation": null}},
        {"name": "c", "securityContext": {"allowPrivilegeEscalation": true}},
        {"name": "d", "securityContext": {"allowPrivilegeEscalation": false}},
    ]}));
    let want = denied(
        "allowPrivilegeEscalation != false",
        r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#,
    );
    assert_eq!(run("allowPrivilegeEscalation", 8, pod.clone()), want);
    assert_eq!(run("allowPrivilegeEscalation", 25, pod), want);
    // From 1.25 on, Windows pods are not checked.
    let windows = spec(json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]}));
    assert_eq!(run("allowPrivilegeEscalation", 25, windows.clone()), None);
    assert!(run("allowPrivilegeEscalation", 24, windows).is_some());
    let linux = spec(json!({"os": {"name": "linux"}, "containers": [{"name": "a"}]}));
    assert_eq!(
        run("allowPrivilegeEscalation", 25, linux),
        denied(
            "allowPrivilegeEscalation != false",
            r#"container "a" must set securityContext.allowPrivilegeEscalation=false"#
        )
    );
}

#[test]
fn podsecurity_app_armor_profile() {
    let allowed = [
        json!({"metadata": {"annotations": {
            "container.apparmor.security.beta.kubernetes.io/test": "runtime/default", "env": "prod"}}}),
        json!({"metadata": {"annotations": {
            "container.apparmor.security.beta.kubernetes.io/test": "localhost/sec-profile01", "env": "dev"}}}),
        json!({"metadata": {"annotations": {"env": "dev"}}}),
        json!({"metadata": {}}),
        spec(json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}})),
        spec(json!({"containers": [{"name": "foo",
            "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}]})),
    ];
    for pod in allowed {
        assert_eq!(run("appArmorProfile", 0, pod.clone()), None, "{pod}");
    }
    let unconfined = json!({"type": "Unconfined"});
    assert_eq!(
        run(
            "appArmorProfile",
            0,
            spec(json!({"securityContext": {"appArmorProfile": unconfined}}))
        ),
        denied(
            "forbidden AppArmor profile",
            r#"pod must not set AppArmor profile type to "Unconfined""#
        )
    );
    let runtime_default = json!({"appArmorProfile": {"type": "RuntimeDefault"}});
    assert_eq!(
        run(
            "appArmorProfile",
            0,
            spec(json!({"securityContext": runtime_default,
                "containers": [{"name": "foo", "securityContext": {"appArmorProfile": unconfined}}]}))
        ),
        denied(
            "forbidden AppArmor profile",
            r#"container "foo" must not set AppArmor profile type to "Unconfined""#
        )
    );
    assert_eq!(
        run(
            "appArmorProfile",
            0,
            spec(json!({"securityContext": runtime_default,
                "containers": [{"name": "foo"}],
                "initContainers": [{"name": "bar", "securityContext": {"appArmorProfile": unconfined}}]}))
        ),
        denied(
            "forbidden AppArmor profile",
            r#"container "bar" must not set AppArmor profile type to "Unconfined""#
        )
    );
    let annotations = json!({"metadata": {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/": "bogus",
        "container.apparmor.security.beta.kubernetes.io/a": "",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
        "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
        "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/f": "unknown",
    }}});
    assert_eq!(
        run("appArmorProfile", 0, annotations),
        denied(
            "forbidden AppArmor profiles",
            concat!(
                r#"annotations must not set AppArmor profile type to "#,
                r#""container.apparmor.security.beta.kubernetes.io/="bogus"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/e="unconfined"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/f="unknown"""#
            )
        )
    );
}

#[test]
fn podsecurity_capabilities_baseline() {
    let pod = spec(json!({"containers": [
        {"name": "a", "securityContext": {"capabilities": {"add": ["FOO", "BAR"]}}},
        {"name": "b", "securityContext": {"capabilities": {"add": ["BAR", "BAZ"]}}},
    ]}));
    assert_eq!(
        run("capabilities_baseline", 0, pod),
        denied(
            "non-default capabilities",
            r#"containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add"#
        )
    );
    let defaults = spec(json!({"containers": [
        {"name": "a", "securityContext": {"capabilities": {"add": ["CHOWN", "NET_BIND_SERVICE"]}}},
    ]}));
    assert_eq!(run("capabilities_baseline", 0, defaults), None);
}

#[test]
fn podsecurity_capabilities_restricted() {
    let pod = spec(json!({"containers": [
        {"name": "a", "securityContext": {"capabilities": {"add": ["FOO", "BAR"]}}},
        {"name": "b", "securityContext": {"capabilities": {"add": ["BAR", "BAZ"]}}},
        {"name": "c", "securityContext": {"capabilities": {
            "add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]}}},
    ]}));
    let want = denied(
        "unrestricted capabilities",
        r#"containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "a", "b", "c" must not include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add"#,
    );
    assert_eq!(run("capabilities_restricted", 22, pod.clone()), want);
    assert_eq!(run("capabilities_restricted", 25, pod), want);
    let windows = spec(json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]}));
    assert_eq!(run("capabilities_restricted", 25, windows), None);
    let linux = spec(json!({"os": {"name": "linux"}, "containers": [{"name": "a"}]}));
    assert_eq!(
        run("capabilities_restricted", 25, linux),
        denied(
            "unrestricted capabilities",
            r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#
        )
    );
}

#[test]
fn podsecurity_host_namespaces() {
    let pod = spec(json!({"hostNetwork": true, "hostIPC": true, "hostPID": true}));
    assert_eq!(
        run("hostNamespaces", 0, pod),
        denied(
            "host namespaces",
            "hostNetwork=true, hostPID=true, hostIPC=true"
        )
    );
    let off = spec(json!({"hostNetwork": false}));
    assert_eq!(run("hostNamespaces", 0, off), None);
}

#[test]
fn podsecurity_host_path_volumes() {
    let pod = spec(json!({"volumes": [
        {"name": "a", "hostPath": {}},
        {"name": "b", "hostPath": {}},
        {"name": "c", "emptyDir": {}},
    ]}));
    assert_eq!(
        run("hostPathVolumes", 0, pod),
        denied("hostPath volumes", r#"volumes "a", "b""#)
    );
}

#[test]
fn podsecurity_host_ports() {
    let one = spec(json!({"containers": [
        {"name": "a", "ports": [{"hostPort": 0}]},
        {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 20}]},
    ]}));
    assert_eq!(
        run("hostPorts", 0, one),
        denied("hostPort", r#"container "b" uses hostPort 20"#)
    );
    let many = spec(json!({"containers": [
        {"name": "a", "ports": [{"hostPort": 0}]},
        {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 20}]},
        {"name": "c", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 30}]},
    ]}));
    assert_eq!(
        run("hostPorts", 0, many),
        denied(
            "hostPort",
            r#"containers "b", "c" use hostPorts 10, 20, 30"#
        )
    );
}

#[test]
fn podsecurity_privileged() {
    let pod = spec(json!({"containers": [
        {"name": "a"},
        {"name": "b", "securityContext": {}},
        {"name": "c", "securityContext": {"privileged": false}},
        {"name": "d", "securityContext": {"privileged": true}},
        {"name": "e", "securityContext": {"privileged": true}},
    ]}));
    assert_eq!(
        run("privileged", 0, pod),
        denied(
            "privileged",
            r#"containers "d", "e" must not set securityContext.privileged=true"#
        )
    );
}

#[test]
fn podsecurity_proc_mount() {
    // hostUsers=false relaxes nothing: that needs an alpha feature gate, off in 1.33.
    let pod = spec(json!({"hostUsers": false, "containers": [
        {"name": "a"},
        {"name": "b", "securityContext": {}},
        {"name": "c", "securityContext": {"procMount": "Default"}},
        {"name": "d", "securityContext": {"procMount": "Unmasked"}},
        {"name": "e", "securityContext": {"procMount": "other"}},
    ]}));
    assert_eq!(
        run("procMount", 0, pod),
        denied(
            "procMount",
            r#"containers "d", "e" must not set securityContext.procMount to "Unmasked", "other""#
        )
    );
}

#[test]
fn podsecurity_restricted_volumes() {
    let mut volumes: Vec<Value> = [
        "emptyDir",
        "secret",
        "persistentVolumeClaim",
        "downwardAPI",
        "configMap",
        "projected",
        "csi",
        "ephemeral",
        "image",
    ]
    .iter()
    .enumerate()
    .map(|(i, s)| json!({"name": format!("a{}", i + 1), *s: {}}))
    .collect();
    let restricted = [
        "hostPath",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "nfs",
        "iscsi",
        "glusterfs",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "fc",
        "azureFile",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "portworxVolume",
        "scaleIO",
        "storageos",
    ];
    volumes.extend(
        restricted
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"name": format!("b{}", i + 1), *s: {}})),
    );
    volumes.push(json!({"name": "c1"}));
    let pod = spec(json!({ "volumes": volumes }));
    assert_eq!(
        run("restrictedVolumes", 0, pod),
        denied(
            "restricted volume types",
            concat!(
                r#"volumes "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "#,
                r#""b12", "b13", "b14", "b15", "b16", "b17", "b18", "b19", "b20", "b21", "c1""#,
                r#" use restricted volume types "#,
                r#""awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "#,
                r#""flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "#,
                r#""hostPath", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "#,
                r#""quobyte", "rbd", "scaleIO", "storageos", "unknown", "vsphereVolume""#
            )
        )
    );
    let one = spec(json!({"volumes": [{"name": "x", "hostPath": {"path": "/"}}]}));
    assert_eq!(
        run("restrictedVolumes", 0, one),
        denied(
            "restricted volume types",
            r#"volume "x" uses restricted volume type "hostPath""#
        )
    );
}

#[test]
fn podsecurity_run_as_non_root() {
    let reason = "runAsNonRoot != true";
    assert_eq!(
        run(
            "runAsNonRoot",
            0,
            spec(json!({"containers": [{"name": "a"}]}))
        ),
        denied(
            reason,
            r#"pod or container "a" must set securityContext.runAsNonRoot=true"#
        )
    );
    assert_eq!(
        run(
            "runAsNonRoot",
            0,
            spec(json!({"securityContext": {"runAsNonRoot": false},
                "containers": [{"name": "a"}]}))
        ),
        denied(
            reason,
            "pod must not set securityContext.runAsNonRoot=false"
        )
    );
    let pod = spec(
        json!({"securityContext": {"runAsNonRoot": true}, "containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"runAsNonRoot": false}},
            {"name": "d", "securityContext": {"runAsNonRoot": false}},
            {"name": "e", "securityContext": {"runAsNonRoot": true}},
            {"name": "f", "securityContext": {"runAsNonRoot": true}},
        ]}),
    );
    assert_eq!(
        run("runAsNonRoot", 0, pod),
        denied(
            reason,
            r#"containers "c", "d" must not set securityContext.runAsNonRoot=false"#
        )
    );
    let fallthrough = spec(json!({"containers": [
        {"name": "a"},
        {"name": "b", "securityContext": {}},
        {"name": "d", "securityContext": {"runAsNonRoot": true}},
        {"name": "e", "securityContext": {"runAsNonRoot": true}},
    ]}));
    assert_eq!(
        run("runAsNonRoot", 0, fallthrough),
        denied(
            reason,
            r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#
        )
    );
    // No relaxation for user namespaces (the gate is off).
    let host_users = spec(json!({"hostUsers": false, "containers": [{"name": "a"}]}));
    assert!(run("runAsNonRoot", 0, host_users).is_some());
}

#[test]
fn podsecurity_run_as_user() {
    let one = json!([{"name": "a"}]);
    assert_eq!(
        run(
            "runAsUser",
            23,
            spec(json!({"securityContext": {"runAsUser": 0}, "containers": one}))
        ),
        denied("runAsUser=0", "pod must not set runAsUser=0")
    );
    assert_eq!(
        run(
            "runAsUser",
            23,
            spec(json!({"securityContext": {"runAsUser": 1000}, "containers": one}))
        ),
        None
    );
    assert_eq!(run("runAsUser", 23, spec(json!({"containers": one}))), None);
    let pod = spec(
        json!({"securityContext": {"runAsUser": 1000}, "containers": [
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": {"runAsUser": 0}},
            {"name": "d", "securityContext": {"runAsUser": 0}},
            {"name": "e", "securityContext": {"runAsUser": 1}},
            {"name": "f", "securityContext": {"runAsUser": 1}},
        ]}),
    );
    assert_eq!(
        run("runAsUser", 23, pod),
        denied(
            "runAsUser=0",
            r#"containers "c", "d" must not set runAsUser=0"#
        )
    );
    // The check exists from policy version 1.23 on.
    assert_eq!(
        run(
            "runAsUser",
            22,
            spec(json!({"securityContext": {"runAsUser": 0}}))
        ),
        None
    );
}

#[test]
fn podsecurity_se_linux_options() {
    let opts = |t: &str| json!({"seLinuxOptions": {"type": t}});
    let good_containers = [
        json!({"name": "a", "securityContext": opts("container_t")}),
        json!({"name": "b", "securityContext": opts("container_init_t")}),
        json!({"name": "c", "securityContext": opts("container_kvm_t")}),
        json!({"name": "d", "securityContext": opts("container_engine_t")}),
    ];
    let bad_containers = [
        json!({"name": "e", "securityContext": opts("bar")}),
        json!({"name": "f", "securityContext": {"seLinuxOptions": {"user": "bar"}}}),
        json!({"name": "g", "securityContext": {"seLinuxOptions": {"role": "baz"}}}),
    ];
    let bad_pod = json!({"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}});
    let all: Vec<Value> = good_containers
        .iter()
        .chain(&bad_containers)
        .cloned()
        .collect();
    assert_eq!(
        run(
            "seLinuxOptions",
            31,
            spec(json!({"securityContext": bad_pod, "containers": all}))
        ),
        denied(
            "seLinuxOptions",
            r#"pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#
        )
    );
    assert_eq!(
        run(
            "seLinuxOptions",
            31,
            spec(json!({"securityContext": bad_pod, "containers": good_containers}))
        ),
        denied(
            "seLinuxOptions",
            r#"pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set"#
        )
    );
    let all: Vec<Value> = good_containers
        .iter()
        .chain(&bad_containers)
        .cloned()
        .collect();
    assert_eq!(
        run("seLinuxOptions", 31, spec(json!({"containers": all}))),
        denied(
            "seLinuxOptions",
            r#"containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set; role may not be set"#
        )
    );
    for (options, detail) in [
        (json!({"type": "bad"}), r#"type "bad""#),
        (json!({"user": "bad"}), "user may not be set"),
        (json!({"role": "bad"}), "role may not be set"),
    ] {
        assert_eq!(
            run(
                "seLinuxOptions",
                31,
                spec(json!({"securityContext": {"seLinuxOptions": options}}))
            ),
            denied(
                "seLinuxOptions",
                &format!("pod set forbidden securityContext.seLinuxOptions: {detail}")
            )
        );
    }
    // container_engine_t is allowed from 1.31 on.
    let engine = spec(json!({"containers": [good_containers[3].clone()]}));
    assert_eq!(run("seLinuxOptions", 31, engine.clone()), None);
    assert_eq!(
        run("seLinuxOptions", 30, engine),
        denied(
            "seLinuxOptions",
            r#"container "d" set forbidden securityContext.seLinuxOptions: type "container_engine_t""#
        )
    );
}

#[test]
fn podsecurity_seccomp_profile_baseline() {
    let annotated = |a: Value| {
        json!({"metadata": {"annotations": a},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}})
    };
    assert_eq!(
        run(
            "seccompProfile_baseline",
            0,
            annotated(json!({"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}))
        ),
        denied(
            "seccompProfile",
            r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined""#
        )
    );
    assert_eq!(
        run(
            "seccompProfile_baseline",
            0,
            annotated(json!({
                "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
                "container.seccomp.security.alpha.kubernetes.io/b": "unknown"}))
        ),
        denied(
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown""#
        )
    );
    assert_eq!(
        run(
            "seccompProfile_baseline",
            0,
            annotated(json!({
                "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
                "container.seccomp.security.alpha.kubernetes.io/b": "unknown"}))
        ),
        denied(
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown", seccomp.security.alpha.kubernetes.io/pod="unconfined""#
        )
    );
    // From 1.19 on the fields count, not the annotations.
    let profile = |t: &str| json!({"seccompProfile": {"type": t}});
    assert_eq!(
        run(
            "seccompProfile_baseline",
            19,
            spec(json!({"securityContext": profile("Unconfined"), "containers": [{"name": "a"}]}))
        ),
        denied(
            "seccompProfile",
            r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    let containers = json!([
        {"name": "a"},
        {"name": "b", "securityContext": {}},
        {"name": "c", "securityContext": profile("Unconfined")},
        {"name": "d", "securityContext": profile("Unconfined")},
        {"name": "e", "securityContext": profile("RuntimeDefault")},
        {"name": "f", "securityContext": profile("RuntimeDefault")},
    ]);
    assert_eq!(
        run(
            "seccompProfile_baseline",
            19,
            spec(json!({"securityContext": profile("RuntimeDefault"), "containers": containers}))
        ),
        denied(
            "seccompProfile",
            r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    assert_eq!(
        run(
            "seccompProfile_baseline",
            19,
            spec(json!({"securityContext": profile("Unconfined"), "containers": containers}))
        ),
        denied(
            "seccompProfile",
            r#"pod and containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
}

#[test]
fn podsecurity_seccomp_profile_restricted() {
    let profile = |t: &str| json!({"seccompProfile": {"type": t}});
    let must_set = |who: &str| {
        denied(
            "seccompProfile",
            &format!(
                r#"pod or {who} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#
            ),
        )
    };
    for minor in [19, 25] {
        assert_eq!(
            run(
                "seccompProfile_restricted",
                minor,
                spec(json!({"containers": [{"name": "a"}]}))
            ),
            must_set(r#"container "a""#)
        );
        assert_eq!(
            run(
                "seccompProfile_restricted",
                minor,
                spec(
                    json!({"securityContext": profile("Unconfined"), "containers": [{"name": "a"}]})
                )
            ),
            denied(
                "seccompProfile",
                r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#
            )
        );
        let containers = json!([
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "c", "securityContext": profile("Unconfined")},
            {"name": "d", "securityContext": profile("Unconfined")},
            {"name": "e", "securityContext": profile("RuntimeDefault")},
            {"name": "f", "securityContext": profile("RuntimeDefault")},
        ]);
        assert_eq!(
            run(
                "seccompProfile_restricted",
                minor,
                spec(
                    json!({"securityContext": profile("RuntimeDefault"), "containers": containers})
                )
            ),
            denied(
                "seccompProfile",
                r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
            )
        );
        let fallthrough = json!([
            {"name": "a"},
            {"name": "b", "securityContext": {}},
            {"name": "d", "securityContext": profile("RuntimeDefault")},
            {"name": "e", "securityContext": profile("RuntimeDefault")},
        ]);
        assert_eq!(
            run(
                "seccompProfile_restricted",
                minor,
                spec(json!({ "containers": fallthrough }))
            ),
            must_set(r#"containers "a", "b""#)
        );
    }
    let windows = spec(json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]}));
    assert_eq!(run("seccompProfile_restricted", 25, windows), None);
    let linux = spec(json!({"os": {"name": "linux"}, "containers": [{"name": "a"}]}));
    assert_eq!(
        run("seccompProfile_restricted", 25, linux),
        must_set(r#"container "a""#)
    );
}

#[test]
fn podsecurity_sysctls() {
    let pod = |names: &[&str]| {
        let sysctls: Vec<Value> = names
            .iter()
            .map(|n| json!({"name": n, "value": "1"}))
            .collect();
        spec(json!({"securityContext": {"sysctls": sysctls}}))
    };
    for minor in [0, 27, 29, 32] {
        assert_eq!(
            run("sysctls", minor, pod(&["a", "b"])),
            denied("forbidden sysctls", "a, b")
        );
        assert_eq!(
            run("sysctls", minor, pod(&["kernel.shm_rmid_forced"])),
            None
        );
    }
    // Each later version allows more.
    for (name, since) in [
        ("net.ipv4.ip_local_reserved_ports", 27),
        ("net.ipv4.tcp_keepalive_time", 29),
        ("net.ipv4.tcp_fin_timeout", 29),
        ("net.ipv4.tcp_keepalive_intvl", 29),
        ("net.ipv4.tcp_keepalive_probes", 29),
        ("net.ipv4.tcp_rmem", 32),
        ("net.ipv4.tcp_wmem", 32),
    ] {
        assert_eq!(
            run("sysctls", since - 1, pod(&[name])),
            denied("forbidden sysctls", name)
        );
        assert_eq!(run("sysctls", since, pod(&[name])), None, "{name}");
    }
}

#[test]
fn podsecurity_windows_host_process() {
    let pod = spec(json!({
    "securityContext": {"windowsOptions": {"hostProcess": true}},
    "containers": [
        {"name": "a"},
        {"name": "b", "securityContext": {}},
        {"name": "c", "securityContext": {"windowsOptions": {}}},
        {"name": "d", "securityContext": {"windowsOptions": {"hostProcess": false}}},
        {"name": "e", "securityContext": {"windowsOptions": {"hostProcess": true}}},
        {"name": "f", "securityContext": {"windowsOptions": {"hostProcess": true}}},
    ]}));
    assert_eq!(
        run("windowsHostProcess", 0, pod),
        denied(
            "hostProcess",
            r#"pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true"#
        )
    );
}

#[test]
fn podsecurity_checks_are_in_upstreams_order() {
    let ids = check_ids();
    let baseline: Vec<&str> = ids
        .iter()
        .filter(|(_, l)| *l == Level::Baseline)
        .map(|(id, _)| *id)
        .collect();
    let restricted: Vec<&str> = ids
        .iter()
        .filter(|(_, l)| *l == Level::Restricted)
        .map(|(id, _)| *id)
        .collect();
    let mut sorted = baseline.clone();
    sorted.sort_unstable();
    assert_eq!(baseline, sorted);
    let mut sorted = restricted.clone();
    sorted.sort_unstable();
    assert_eq!(restricted, sorted);
    assert_eq!(baseline.len() + restricted.len(), 17);
    // Baseline first.
    assert_eq!(ids[baseline.len()].1, Level::Restricted);
}

/// A plain container, as `kubectl run nginx --image=nginx` makes it.
fn nginx() -> Value {
    json!({"metadata": {"name": "nginx"}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}})
}

fn lv(level: Level, version: Version) -> LevelVersion {
    LevelVersion { level, version }
}

fn evaluate(level: Level, version: Version, pod: &Value) -> checks::Outcome {
    let view = PodView {
        metadata: &pod["metadata"],
        spec: &pod["spec"],
    };
    checks::evaluate(lv(level, version), view)
}

#[test]
fn podsecurity_levels_and_versions() {
    let pod = nginx();
    assert!(evaluate(Level::Privileged, Version::Latest, &pod).allowed());
    assert!(evaluate(Level::Baseline, Version::Latest, &pod).allowed());
    let restricted = evaluate(Level::Restricted, Version::Latest, &pod);
    assert_eq!(
        restricted.details(),
        concat!(
            r#"allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
        )
    );
    assert_eq!(
        restricted.reasons(),
        "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
    );
    // Versions past the newest check evaluate as the newest.
    assert_eq!(
        evaluate(Level::Restricted, Version::V1(99), &pod),
        restricted
    );
    // Before 1.8 only runAsNonRoot of these existed; before 1.22 capabilities were baseline's.
    assert_eq!(
        evaluate(Level::Restricted, Version::V1(0), &pod).reasons(),
        "runAsNonRoot != true"
    );
    assert_eq!(
        evaluate(Level::Restricted, Version::V1(21), &pod).reasons(),
        "allowPrivilegeEscalation != false, runAsNonRoot != true, seccompProfile"
    );
    // The restricted level replaces hostPathVolumes with restrictedVolumes, and
    // capabilities_baseline with capabilities_restricted from 1.22 on.
    let host = json!({"metadata": {}, "spec": {
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        "containers": [{"name": "c", "securityContext": {
            "capabilities": {"add": ["SYS_ADMIN"]}}}]}});
    assert_eq!(
        evaluate(Level::Baseline, Version::Latest, &host).reasons(),
        "non-default capabilities, hostPath volumes"
    );
    assert_eq!(
        evaluate(Level::Restricted, Version::Latest, &host).reasons(),
        "allowPrivilegeEscalation != false, unrestricted capabilities, restricted volume types, runAsNonRoot != true, seccompProfile"
    );
    assert_eq!(
        evaluate(Level::Restricted, Version::V1(21), &host).reasons(),
        "non-default capabilities, allowPrivilegeEscalation != false, restricted volume types, runAsNonRoot != true, seccompProfile"
    );
    // A pod meeting the restricted level.
    assert!(evaluate(Level::Restricted, Version::Latest, &restricted_pod("ok")).allowed());
}

#[test]
fn podsecurity_version_parsing() {
    assert_eq!(Version::parse("latest"), Some(Version::Latest));
    assert_eq!(Version::parse("v1.0"), Some(Version::V1(0)));
    assert_eq!(Version::parse("v1.25"), Some(Version::V1(25)));
    assert_eq!(Version::parse("v1.999"), Some(Version::V1(999)));
    for bad in [
        "", "v1", "v1.", "v1.01", "1.25", "v2.0", "v1.x", "Latest", "v1.-1",
    ] {
        assert_eq!(Version::parse(bad), None, "{bad}");
    }
    assert_eq!(Version::V1(25).to_string(), "v1.25");
    assert_eq!(
        lv(Level::Baseline, Version::V1(25)).to_string(),
        "baseline:v1.25"
    );
    assert!(Version::V1(1000) < Version::Latest);
}

fn labels(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (format!("pod-security.kubernetes.io/{k}"), json!(v)))
            .collect(),
    )
}

#[test]
fn podsecurity_policy_from_labels() {
    let latest = |l| lv(l, Version::Latest);
    let (p, errs) = policy_from_labels(None);
    assert_eq!(p, Policy::DEFAULT);
    assert!(errs.is_empty());
    // Warn follows a stricter enforce level, with its version.
    let (p, _) = policy_from_labels(Some(&labels(&[
        ("enforce", "baseline"),
        ("enforce-version", "v1.24"),
    ])));
    assert_eq!(p.enforce, lv(Level::Baseline, Version::V1(24)));
    assert_eq!(p.warn, lv(Level::Baseline, Version::V1(24)));
    assert_eq!(p.audit, latest(Level::Privileged));
    // ... but not over an explicit warn label or version.
    let (p, _) = policy_from_labels(Some(&labels(&[
        ("enforce", "restricted"),
        ("warn-version", "v1.20"),
    ])));
    assert_eq!(p.warn, lv(Level::Restricted, Version::V1(20)));
    let (p, _) = policy_from_labels(Some(&labels(&[
        ("enforce", "restricted"),
        ("warn", "baseline"),
    ])));
    assert_eq!(p.warn, latest(Level::Baseline));
    // Bad values: enforce fails closed, audit and warn open, versions to latest.
    let (p, errs) = policy_from_labels(Some(&labels(&[
        ("enforce", "bogus"),
        ("enforce-version", "v2"),
        ("audit", "bogus"),
        ("warn", "bogus"),
    ])));
    assert_eq!(p.enforce, latest(Level::Restricted));
    assert_eq!(p.audit, latest(Level::Privileged));
    assert_eq!(p.warn, latest(Level::Privileged));
    let messages: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": must be one of privileged, baseline, restricted"#,
            r#"metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "v2": must be "latest" or "v1.x""#,
            r#"metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "bogus": must be one of privileged, baseline, restricted"#,
            r#"metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "bogus": must be one of privileged, baseline, restricted"#,
        ]
    );
}

/// A pod meeting the restricted level.
fn restricted_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "busybox", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

async fn labelled_namespace(r: &crate::registry::Registry, name: &str, l: Value) {
    put(
        r,
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": name, "labels": l}}),
    )
    .await;
}

#[tokio::test]
async fn podsecurity_enforce_refuses_with_upstreams_message() {
    let r = registry();
    let u = user();
    labelled_namespace(&r, "strict", labels(&[("enforce", "restricted")])).await;
    let notes = RequestNotes::default();
    let mut req = request(&r, &u, Operation::Create, "pods", Some("strict"), "");
    req.notes = &notes;
    let err = super::validate(&req, &nginx(), None).await.unwrap_err();
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        concat!(
            r#"pods "nginx" is forbidden: violates PodSecurity "restricted:latest": "#,
            r#"allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
        )
    );
    // Refused: no warning on top; the enforced policy is in the audit annotations.
    assert!(notes.take_warnings().is_empty());
    let annotations = notes.take_audit_annotations();
    assert_eq!(
        annotations.get("pod-security.kubernetes.io/enforce-policy"),
        Some(&"restricted:latest".to_string())
    );
    // A compliant pod passes.
    super::validate(&req, &restricted_pod("ok"), None)
        .await
        .unwrap();
    // Deletes are not checked.
    let del = request(&r, &u, Operation::Delete, "pods", Some("strict"), "nginx");
    super::validate(&del, &nginx(), None).await.unwrap();
}

#[tokio::test]
async fn podsecurity_warn_and_audit() {
    let r = registry();
    let u = user();
    labelled_namespace(
        &r,
        "watched",
        labels(&[("warn", "baseline"), ("audit", "restricted")]),
    )
    .await;
    let notes = RequestNotes::default();
    let mut req = request(
        &r,
        &u,
        Operation::Create,
        "deployments.apps",
        Some("watched"),
        "",
    );
    req.notes = &notes;
    let deploy = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]}}}});
    super::validate(&req, &deploy, None).await.unwrap();
    assert_eq!(
        notes.take_warnings(),
        [
            r#"would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#
        ]
    );
    let annotations = notes.take_audit_annotations();
    let audit = annotations
        .get("pod-security.kubernetes.io/audit-violations")
        .unwrap();
    assert!(
        audit.starts_with(r#"would violate PodSecurity "restricted:latest": privileged ("#),
        "{audit}"
    );
    // Pod controllers never enforce, so there is no enforce-policy annotation.
    assert!(!annotations.contains_key("pod-security.kubernetes.io/enforce-policy"));
    // A privileged namespace: nothing is evaluated, the pod is admitted.
    namespace(&r, "open").await;
    // Notes are one request's: they hold its namespace.
    let notes = RequestNotes::default();
    let mut req = request(&r, &u, Operation::Create, "pods", Some("open"), "");
    req.notes = &notes;
    let privileged = json!({"metadata": {"name": "p"}, "spec": {"hostNetwork": true,
        "containers": [{"name": "c", "image": "x"}]}});
    super::validate(&req, &privileged, None).await.unwrap();
    assert!(notes.take_warnings().is_empty());
    assert_eq!(
        notes
            .take_audit_annotations()
            .get("pod-security.kubernetes.io/enforce-policy"),
        Some(&"privileged:latest".to_string())
    );
}

#[tokio::test]
async fn podsecurity_pod_updates_only_when_significant() {
    let r = registry();
    let u = user();
    labelled_namespace(&r, "strict", labels(&[("enforce", "baseline")])).await;
    let notes = RequestNotes::default();
    let mut req = request(&r, &u, Operation::Update, "pods", Some("strict"), "p");
    req.notes = &notes;
    let old = json!({"metadata": {"name": "p"}, "spec": {"hostPID": true,
        "containers": [{"name": "c", "image": "a"}]}});
    // A label change is not checked, even of a violating pod.
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"x": "y"});
    super::validate(&req, &relabelled, Some(&old))
        .await
        .unwrap();
    // A new image is.
    let mut new_image = old.clone();
    new_image["spec"]["containers"][0]["image"] = json!("b");
    let err = super::validate(&req, &new_image, Some(&old))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostPID=true)"#
    );
    // So is a new ephemeral container.
    let mut debugged = old.clone();
    debugged["spec"]["ephemeralContainers"] = json!([{"name": "dbg", "image": "a"}]);
    let mut sub = request(&r, &u, Operation::Update, "pods", Some("strict"), "p");
    sub.notes = &notes;
    sub.subresource = Some("ephemeralcontainers");
    assert!(super::validate(&sub, &debugged, Some(&old)).await.is_err());
    // Status writes never are.
    sub.subresource = Some("status");
    super::validate(&sub, &new_image, Some(&old)).await.unwrap();
}

#[tokio::test]
async fn podsecurity_namespace_labels_are_validated() {
    let r = registry();
    let u = user();
    let req = request(&r, &u, Operation::Create, "namespaces", None, "");
    let ns = json!({"metadata": {"name": "bad", "labels": {
        "pod-security.kubernetes.io/enforce": "strict"}}});
    let err = super::validate(&req, &ns, None).await.unwrap_err();
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        r#"Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#
    );
    let two = json!({"metadata": {"name": "bad", "labels": {
        "pod-security.kubernetes.io/enforce": "strict",
        "pod-security.kubernetes.io/warn-version": "1.25"}}});
    let err = super::validate(&req, &two, None).await.unwrap_err();
    assert_eq!(
        err.message,
        r#"Namespace "bad" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.25": must be "latest" or "v1.x"]"#
    );
    // An update keeping the same invalid labels is let through; a new invalid value is not.
    let upd = request(&r, &u, Operation::Update, "namespaces", None, "bad");
    let mut relabelled = ns.clone();
    relabelled["metadata"]["labels"]["team"] = json!("a");
    super::validate(&upd, &relabelled, Some(&ns)).await.unwrap();
    let mut worse = ns.clone();
    worse["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = json!("stricter");
    assert_eq!(
        super::validate(&upd, &worse, Some(&ns))
            .await
            .unwrap_err()
            .code,
        422
    );
}

#[tokio::test]
async fn podsecurity_stricter_enforce_level_warns_about_existing_pods() {
    let r = registry();
    let u = user();
    namespace(&r, "apps").await;
    let owned = |name: &str, uid: &str| {
        json!({"metadata": {"name": name, "ownerReferences": [{"apiVersion": "apps/v1",
            "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    };
    for pod in [
        owned("web-b", "u1"),
        owned("web-a", "u1"),
        owned("web-c", "u1"),
        json!({"metadata": {"name": "host"}, "spec": {"hostNetwork": true,
            "containers": [{"name": "c", "image": "nginx"}]}}),
        restricted_pod("fine"),
    ] {
        put(&r, "", "pods", Some("apps"), pod).await;
    }
    let notes = RequestNotes::default();
    let mut req = request(&r, &u, Operation::Update, "namespaces", None, "apps");
    req.notes = &notes;
    let old = json!({"metadata": {"name": "apps"}});
    let new = json!({"metadata": {"name": "apps", "labels": {
        "pod-security.kubernetes.io/enforce": "restricted"}}});
    super::validate(&req, &new, Some(&old)).await.unwrap();
    let restricted_reasons = "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile";
    assert_eq!(
        notes.take_warnings(),
        [
            r#"existing pods in namespace "apps" violate the new PodSecurity enforce level "restricted:latest""#
                .to_string(),
            format!("host: host namespaces, {restricted_reasons}"),
            format!("web-a (and 2 other pods): {restricted_reasons}"),
        ]
    );
    // Relaxing the level, or leaving it, checks nothing.
    let mut req = request(&r, &u, Operation::Update, "namespaces", None, "apps");
    req.notes = &notes;
    let baseline = json!({"metadata": {"name": "apps", "labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}});
    super::validate(&req, &baseline, Some(&new)).await.unwrap();
    super::validate(&req, &new, Some(&new)).await.unwrap();
    assert!(notes.take_warnings().is_empty());
    // A new version at the same level is checked again.
    let versioned = json!({"metadata": {"name": "apps", "labels": {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.30"}}});
    super::validate(&req, &versioned, Some(&baseline))
        .await
        .unwrap();
    assert_eq!(
        notes.take_warnings(),
        [
            r#"existing pods in namespace "apps" violate the new PodSecurity enforce level "baseline:v1.30""#,
            "host: host namespaces",
        ]
    );
}

#[tokio::test]
async fn podsecurity_every_pod_controller_is_warned_never_refused() {
    let r = registry();
    let u = user();
    labelled_namespace(&r, "strict", labels(&[("enforce", "baseline")])).await;
    let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"hostIPC": true,
        "containers": [{"name": "c", "image": "x"}]}});
    let cases = [
        ("podtemplates", json!({"template": template})),
        (
            "replicationcontrollers",
            json!({"spec": {"template": template}}),
        ),
        ("replicasets.apps", json!({"spec": {"template": template}})),
        ("deployments.apps", json!({"spec": {"template": template}})),
        ("statefulsets.apps", json!({"spec": {"template": template}})),
        ("daemonsets.apps", json!({"spec": {"template": template}})),
        ("jobs.batch", json!({"spec": {"template": template}})),
        (
            "cronjobs.batch",
            json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
        ),
    ];
    for (resource, mut obj) in cases {
        obj["metadata"] = json!({"name": "w"});
        for op in [Operation::Create, Operation::Update] {
            let notes = RequestNotes::default();
            let mut req = request(&r, &u, op, resource, Some("strict"), "w");
            req.notes = &notes;
            super::validate(&req, &obj, Some(&obj)).await.unwrap();
            // Warn follows the stricter enforce level.
            assert_eq!(
                notes.take_warnings(),
                [r#"would violate PodSecurity "baseline:latest": host namespaces (hostIPC=true)"#],
                "{resource}"
            );
        }
        // Subresources (scale, status) are not checked.
        let notes = RequestNotes::default();
        let mut req = request(&r, &u, Operation::Update, resource, Some("strict"), "w");
        req.notes = &notes;
        req.subresource = Some("status");
        super::validate(&req, &obj, Some(&obj)).await.unwrap();
        assert!(notes.take_warnings().is_empty(), "{resource}");
    }
    // A ReplicationController without a template has nothing to check.
    let notes = RequestNotes::default();
    let mut req = request(
        &r,
        &u,
        Operation::Create,
        "replicationcontrollers",
        Some("strict"),
        "w",
    );
    req.notes = &notes;
    super::validate(&req, &json!({"metadata": {"name": "w"}, "spec": {}}), None)
        .await
        .unwrap();
    assert!(notes.take_warnings().is_empty());
}
