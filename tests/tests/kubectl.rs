//! Stock kubectl against the real `k1s` binary. Every test starts its own ephemeral cluster
//! (they start in milliseconds), so tests are independent and run in parallel.

use std::time::Duration;

use k1s_tests::{Kubectl, TestCluster, fails, namespace_yaml, ok, stderr, stdout};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(20);

/// A cluster with namespace `ns` created (with `kubectl apply`, which sends JSON).
fn cluster_with_ns(ns: &str) -> TestCluster {
    let c = TestCluster::start();
    c.apply(&namespace_yaml(ns));
    c
}

fn configmap_yaml(ns: &str, name: &str, labels: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n  labels: {{{labels}}}\ndata: {{{data}}}\n"
    )
}

fn deployment_yaml(ns: &str, name: &str, replicas: u32, image: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: {name}}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: main
        image: {image}
"#
    )
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}):\n{s}"))
}

/// `kubectl get` of one object as JSON, or `None` if it is NotFound.
fn get_json(c: &TestCluster, k: &Kubectl, args: &[&str]) -> Option<Value> {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "json"]);
    let out = c.run_kubectl(k, &full, None, &[]);
    if out.status.success() {
        return Some(json(&stdout(&out)));
    }
    let err = stderr(&out);
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "kubectl {full:?} failed with something other than NotFound:\n{err}"
    );
    None
}

fn names(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------------
// The core workflow, run with every kubectl minor that is installed.
// ---------------------------------------------------------------------------------------------

fn core_workflow(k: &Kubectl) {
    eprintln!("core workflow with {} ({})", k.label, k.path.display());
    let c = TestCluster::start();
    let run = |args: &[&str]| c.run_kubectl(k, args, None, &[]);
    let run_ok = |args: &[&str]| ok(args, run(args));
    let run_in = |args: &[&str], input: &str| ok(args, c.run_kubectl(k, args, Some(input), &[]));
    let ns = "core";

    // apply a namespace, create -f - a ConfigMap
    let out = run_in(&["apply", "-f", "-"], &namespace_yaml(ns));
    assert!(out.contains("namespace/core created"), "{out}");
    let out = run_in(
        &["create", "-f", "-"],
        &configmap_yaml(ns, "settings", "tier: a", "k: v1"),
    );
    assert!(out.contains("configmap/settings created"), "{out}");
    // creating it again is AlreadyExists
    let args = ["create", "-f", "-"];
    let err = fails(
        &args,
        c.run_kubectl(k, &args, Some(&configmap_yaml(ns, "settings", "", "")), &[]),
    );
    assert!(
        err.contains("AlreadyExists") && err.contains("\"settings\" already exists"),
        "{err}"
    );

    // watch configmaps; the pre-existing one arrives as ADDED once the list is done, so every
    // later change is observed by the watch that follows.
    let mut watch = c.kubectl_stream(
        k,
        &[
            "get",
            "configmaps",
            "-n",
            ns,
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ],
    );
    let event = |line: &str| -> Option<(String, String)> {
        let v: Value = serde_json::from_str(line).ok()?;
        Some((
            v["type"].as_str()?.to_string(),
            v["object"]["metadata"]["name"].as_str()?.to_string(),
        ))
    };
    let is = |ty: &'static str, name: &'static str| {
        move |l: &str| event(l) == Some((ty.to_string(), name.to_string()))
    };
    watch.wait_for_line(WAIT, is("ADDED", "settings"));

    // get in several formats
    let v = json(&run_ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        ns,
        "-o",
        "json",
    ]));
    assert_eq!(v["kind"], "ConfigMap");
    assert_eq!(v["data"]["k"], "v1");
    assert!(
        v["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()),
        "{v}"
    );
    let y = run_ok(&["get", "configmap", "settings", "-n", ns, "-o", "yaml"]);
    assert!(
        y.contains("kind: ConfigMap") && y.contains("name: settings") && y.contains("k: v1"),
        "{y}"
    );
    let listed: Vec<String> = names(&run_ok(&["get", "cm", "-n", ns, "-o", "name"]))
        .into_iter()
        .filter(|n| n != "configmap/kube-root-ca.crt")
        .collect();
    assert_eq!(listed, ["configmap/settings"]);
    let table = run_ok(&["get", "cm", "-n", ns]);
    assert!(table.lines().any(|l| l.starts_with("settings ")), "{table}");

    // changes the watch must see
    run_in(&["apply", "-f", "-"], &configmap_yaml(ns, "w", "", "a: b"));
    run_ok(&["label", "configmap", "w", "-n", ns, "seen=yes"]);
    run_ok(&["delete", "configmap", "w", "-n", ns]);
    watch.wait_for_line(WAIT, is("ADDED", "w"));
    let modified = watch.wait_for_line(WAIT, is("MODIFIED", "w"));
    assert_eq!(
        json(&modified)["object"]["metadata"]["labels"]["seen"],
        "yes",
        "{modified}"
    );
    watch.wait_for_line(WAIT, is("DELETED", "w"));
    drop(watch);

    // apply / re-apply unchanged / re-apply with a changed field
    let out = run_in(
        &["apply", "-f", "-"],
        &deployment_yaml(ns, "web", 1, "nginx:1.25"),
    );
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let out = run_in(
        &["apply", "-f", "-"],
        &deployment_yaml(ns, "web", 1, "nginx:1.25"),
    );
    assert!(out.contains("deployment.apps/web unchanged"), "{out}");
    let out = run_in(
        &["apply", "-f", "-"],
        &deployment_yaml(ns, "web", 3, "nginx:1.25"),
    );
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    assert_eq!(
        run_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            ns,
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "3"
    );
    let v = json(&run_ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        ns,
        "-o",
        "json",
    ]));
    assert!(
        v["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .is_some_and(|a| a.contains("\"replicas\":3")),
        "{v}"
    );
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );

    // strategic merge patch: containers merge by name, so a new name is added
    let out = run_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        ns,
        "--type=strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.36"}]}}}}"#,
    ]);
    assert!(out.contains("deployment.apps/web patched"), "{out}");
    let v = json(&run_ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        ns,
        "-o",
        "json",
    ]));
    let containers: Vec<&str> = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    // upstream (mergeSortedSlice): items new in the patch come before server-only items
    assert_eq!(
        containers,
        ["sidecar", "main"],
        "strategic merge must merge containers by name"
    );

    // merge patch: lists are replaced wholesale; maps are merged, null deletes
    run_ok(&["label", "deployment", "web", "-n", ns, "drop=me"]);
    let out = run_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        ns,
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"drop":null,"team":"blue"}},"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx:1.26"}]}}}}"#,
    ]);
    assert!(out.contains("deployment.apps/web patched"), "{out}");
    let v = json(&run_ok(&[
        "get",
        "deployment",
        "web",
        "-n",
        ns,
        "-o",
        "json",
    ]));
    let containers = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1, "merge patch replaces lists: {v}");
    assert_eq!(containers[0]["image"], "nginx:1.26");
    assert_eq!(v["metadata"]["labels"]["team"], "blue");
    assert!(
        v["metadata"]["labels"].get("drop").is_none(),
        "null must delete the label: {v}"
    );
    assert_eq!(v["metadata"]["labels"]["app"], "web");

    // JSON patch, including a failing `test` op
    let out = run_ok(&[
        "patch",
        "deployment",
        "web",
        "-n",
        ns,
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":3},{"op":"replace","path":"/spec/replicas","value":4}]"#,
    ]);
    assert!(out.contains("deployment.apps/web patched"), "{out}");
    assert_eq!(
        run_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            ns,
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "4"
    );
    let args = [
        "patch",
        "deployment",
        "web",
        "-n",
        ns,
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":99},{"op":"replace","path":"/spec/replicas","value":5}]"#,
    ];
    fails(&args, run(&args));
    assert_eq!(
        run_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            ns,
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "4"
    );

    // delete
    let out = run_ok(&["delete", "deployment", "web", "-n", ns]);
    assert!(out.contains("\"web\" deleted"), "{out}");
    let args = ["get", "deployment", "web", "-n", ns];
    let err = fails(&args, run(&args));
    assert!(
        err.contains("NotFound") && err.contains("deployments.apps \"web\" not found"),
        "{err}"
    );
}

#[test]
fn core_workflow_kubectl_dispatcher() {
    core_workflow(&Kubectl::dispatcher());
}

#[test]
fn core_workflow_kubectl_1_28() {
    match Kubectl::minor(28) {
        Some(k) => core_workflow(&k),
        None => eprintln!("SKIPPED: kubectl.1.28 is not installed next to kubectl"),
    }
}

// ---------------------------------------------------------------------------------------------
// Editing verbs
// ---------------------------------------------------------------------------------------------

#[test]
fn edit_with_kube_editor_script() {
    use std::os::unix::fs::PermissionsExt;
    let c = cluster_with_ns("ed");
    c.apply(&deployment_yaml("ed", "web", 1, "nginx:1.25"));
    let script = c.scratch_dir().join("editor.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nsed -i 's/image: nginx:1.25/image: nginx:1.27/' \"$1\"\n",
    )
    .expect("write editor");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let editor = script.to_str().expect("utf-8 path");
    let args = ["edit", "deployment", "web", "-n", "ed"];
    let out = ok(
        &args,
        c.run_kubectl(
            &Kubectl::dispatcher(),
            &args,
            None,
            &[("KUBE_EDITOR", editor)],
        ),
    );
    assert!(out.contains("deployment.apps/web edited"), "{out}");
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "ed",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}"
        ]),
        "nginx:1.27"
    );
    // an editor that changes nothing: kubectl reports it and the object keeps its version
    let rv = c.kubectl_ok(&[
        "get",
        "deploy",
        "web",
        "-n",
        "ed",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    let out = c.run_kubectl(
        &Kubectl::dispatcher(),
        &args,
        None,
        &[("KUBE_EDITOR", "true")],
    );
    assert!(
        format!("{}{}", stdout(&out), stderr(&out)).contains("Edit cancelled, no changes made."),
        "{out:?}"
    );
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "ed",
            "-o",
            "jsonpath={.metadata.resourceVersion}"
        ]),
        rv
    );
}

#[test]
fn label_and_annotate() {
    let c = cluster_with_ns("la");
    c.apply(&configmap_yaml("la", "cfg", "", "a: b"));
    let out = c.kubectl_ok(&[
        "label",
        "configmap",
        "cfg",
        "-n",
        "la",
        "env=prod",
        "tier=web",
    ]);
    assert!(out.contains("configmap/cfg labeled"), "{out}");
    // changing an existing label needs --overwrite
    let args = ["label", "configmap", "cfg", "-n", "la", "env=dev"];
    let err = fails(&args, c.kubectl(&args));
    assert!(err.contains("already has a value"), "{err}");
    c.kubectl_ok(&[
        "label",
        "configmap",
        "cfg",
        "-n",
        "la",
        "env=dev",
        "--overwrite",
    ]);
    c.kubectl_ok(&["label", "configmap", "cfg", "-n", "la", "tier-"]);
    let v = json(&c.kubectl_ok(&["get", "cm", "cfg", "-n", "la", "-o", "json"]));
    assert_eq!(v["metadata"]["labels"], serde_json::json!({"env": "dev"}));

    let out = c.kubectl_ok(&[
        "annotate",
        "configmap",
        "cfg",
        "-n",
        "la",
        "owner=team-a",
        "note=hello world",
    ]);
    assert!(out.contains("configmap/cfg annotated"), "{out}");
    let args = ["annotate", "configmap", "cfg", "-n", "la", "owner=team-b"];
    let err = fails(&args, c.kubectl(&args));
    assert!(err.contains("already has a value"), "{err}");
    c.kubectl_ok(&[
        "annotate",
        "configmap",
        "cfg",
        "-n",
        "la",
        "owner=team-b",
        "--overwrite",
    ]);
    c.kubectl_ok(&["annotate", "configmap", "cfg", "-n", "la", "note-"]);
    let v = json(&c.kubectl_ok(&["get", "cm", "cfg", "-n", "la", "-o", "json"]));
    assert_eq!(v["metadata"]["annotations"]["owner"], "team-b");
    assert!(v["metadata"]["annotations"].get("note").is_none(), "{v}");
    // label by selector over several objects
    c.apply(&configmap_yaml("la", "other", "env: dev", ""));
    let out = c.kubectl_ok(&["label", "configmap", "-n", "la", "-l", "env=dev", "batch=1"]);
    assert!(
        out.contains("configmap/cfg labeled") && out.contains("configmap/other labeled"),
        "{out}"
    );
}

#[test]
fn scale_deployment() {
    let c = cluster_with_ns("sc");
    c.apply(&deployment_yaml("sc", "web", 1, "nginx:1.25"));
    let out = c.kubectl_ok(&["scale", "deployment", "web", "-n", "sc", "--replicas=5"]);
    assert!(out.contains("deployment.apps/web scaled"), "{out}");
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "sc",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "5"
    );
    let scale = json(&c.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/sc/deployments/web/scale",
    ]));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 5);
    // --current-replicas is a precondition
    let args = [
        "scale",
        "deployment",
        "web",
        "-n",
        "sc",
        "--current-replicas=2",
        "--replicas=3",
    ];
    fails(&args, c.kubectl(&args));
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "sc",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "5"
    );
}

#[test]
fn replace_and_stale_replace_conflict() {
    let c = cluster_with_ns("rp");
    c.apply(&configmap_yaml("rp", "cfg", "", "a: '1'"));
    let stale = c.kubectl_ok(&["get", "configmap", "cfg", "-n", "rp", "-o", "json"]);
    let mut v = json(&stale);
    v["data"]["a"] = "2".into();
    let args = ["replace", "-f", "-"];
    let out = ok(&args, c.kubectl_stdin(&args, &v.to_string()));
    assert!(out.contains("configmap/cfg replaced"), "{out}");
    assert_eq!(
        c.kubectl_ok(&["get", "cm", "cfg", "-n", "rp", "-o", "jsonpath={.data.a}"]),
        "2"
    );
    // the stale copy carries the old resourceVersion: Conflict, nothing changes
    let mut old = json(&stale);
    old["data"]["a"] = "3".into();
    let err = fails(&args, c.kubectl_stdin(&args, &old.to_string()));
    assert!(err.contains("Conflict"), "{err}");
    assert!(
        err.contains("the object has been modified; please apply your changes to the latest version and try again"),
        "{err}"
    );
    assert_eq!(
        c.kubectl_ok(&["get", "cm", "cfg", "-n", "rp", "-o", "jsonpath={.data.a}"]),
        "2"
    );
    // replace of an object that does not exist is NotFound
    let mut missing = json(&stale);
    missing["metadata"]["name"] = "missing".into();
    let err = fails(&args, c.kubectl_stdin(&args, &missing.to_string()));
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Deletion: cascade policies and finalizers
// ---------------------------------------------------------------------------------------------

/// A Deployment `web` and a ConfigMap `dep` owned by it (blockOwnerDeletion), optionally with
/// a finalizer on the dependent.
fn owner_and_dependent(c: &TestCluster, ns: &str, dependent_finalizer: bool) -> String {
    c.apply(&deployment_yaml(ns, "web", 1, "nginx:1.25"));
    let uid = c.kubectl_ok(&[
        "get",
        "deploy",
        "web",
        "-n",
        ns,
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert!(!uid.is_empty());
    let finalizers = if dependent_finalizer {
        "\n  finalizers: [example.com/hold]"
    } else {
        ""
    };
    c.apply(&format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: dep
  namespace: {ns}{finalizers}
  ownerReferences:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
    uid: {uid}
    controller: true
    blockOwnerDeletion: true
data: {{a: b}}
"#
    ));
    uid
}

// The API server records the propagation policy exactly as upstream's does: Background deletes
// the owner at once; Foreground and Orphan mark it with the `foregroundDeletion` / `orphan`
// finalizer for the garbage collector. These tests pin the API server's part on a bare API server
// (`--controllers=-*`, no garbage collector) and play the collector's last step (removing the
// finalizer) by hand; `controllers_gc.rs` tests the whole cascade with the collector.

/// A bare API server (no controllers) with namespace `ns`.
fn bare_cluster_with_ns(ns: &str) -> TestCluster {
    let c = TestCluster::start_with(k1s_tests::StartOptions {
        extra_args: vec!["--controllers=-*".into()],
        ..Default::default()
    });
    c.apply(&namespace_yaml(ns));
    c
}

#[test]
fn delete_cascade_background() {
    let c = bare_cluster_with_ns("bg");
    owner_and_dependent(&c, "bg", false);
    let out = c.kubectl_ok(&[
        "delete",
        "deployment",
        "web",
        "-n",
        "bg",
        "--cascade=background",
    ]);
    assert!(out.contains("\"web\" deleted"), "{out}");
    assert!(get_json(&c, &Kubectl::dispatcher(), &["deploy", "web", "-n", "bg"]).is_none());
}

/// Deletes `web` with a policy and returns the owner as it stays, marked for deletion.
fn delete_with_policy(
    c: &TestCluster,
    ns: &str,
    cascade: &str,
    finalizer: &str,
) -> serde_json::Value {
    c.kubectl_ok(&[
        "delete",
        "deployment",
        "web",
        "-n",
        ns,
        &format!("--cascade={cascade}"),
        "--wait=false",
    ]);
    let owner = get_json(c, &Kubectl::dispatcher(), &["deploy", "web", "-n", ns])
        .expect("the owner stays until the garbage collector is done");
    assert!(
        owner["metadata"]["deletionTimestamp"].is_string(),
        "{owner}"
    );
    assert!(
        owner["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == finalizer)),
        "the policy is recorded as the {finalizer} finalizer: {owner}"
    );
    owner
}

#[test]
fn delete_cascade_foreground() {
    let c = bare_cluster_with_ns("fg");
    owner_and_dependent(&c, "fg", true);
    delete_with_policy(&c, "fg", "foreground", "foregroundDeletion");
    // The collector's last step: drop the finalizer; the owner then goes.
    c.kubectl_ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        "fg",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    assert!(get_json(&c, &Kubectl::dispatcher(), &["deploy", "web", "-n", "fg"]).is_none());
}

#[test]
fn delete_cascade_orphan() {
    let c = bare_cluster_with_ns("or");
    let uid = owner_and_dependent(&c, "or", false);
    delete_with_policy(&c, "or", "orphan", "orphan");
    // The dependent is untouched by the API server.
    let dep = get_json(&c, &Kubectl::dispatcher(), &["cm", "dep", "-n", "or"]).expect("dependent");
    assert_eq!(dep["metadata"]["ownerReferences"][0]["uid"], uid.as_str());
}

#[test]
fn finalizer_blocks_deletion_until_removed() {
    let c = cluster_with_ns("fin");
    c.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: fin\n  finalizers: [example.com/block]\ndata: {a: b}\n",
    );
    let k = Kubectl::dispatcher();
    let out = c.kubectl_ok(&["delete", "configmap", "held", "-n", "fin", "--wait=false"]);
    assert!(out.contains("\"held\" deleted"), "{out}");
    let v = get_json(&c, &k, &["cm", "held", "-n", "fin"])
        .expect("an object with a finalizer stays after delete");
    assert!(v["metadata"]["deletionTimestamp"].is_string(), "{v}");
    assert_eq!(
        v["metadata"]["finalizers"],
        serde_json::json!(["example.com/block"])
    );
    // while terminating, spec-like changes are still allowed but new finalizers are not
    let args = [
        "patch",
        "cm",
        "held",
        "-n",
        "fin",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/block","example.com/other"]}}"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains("Forbidden") || err.contains("forbidden") || err.contains("Invalid"),
        "{err}"
    );
    // deleting again keeps it
    c.kubectl_ok(&["delete", "configmap", "held", "-n", "fin", "--wait=false"]);
    assert!(get_json(&c, &k, &["cm", "held", "-n", "fin"]).is_some());
    // removing the finalizer finishes the deletion; the patch returns the object without it
    let out = c.kubectl_ok(&[
        "patch",
        "cm",
        "held",
        "-n",
        "fin",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        "-o",
        "json",
    ]);
    let patched = json(&out);
    assert!(
        patched["metadata"].get("finalizers").is_none(),
        "PATCH must return the object without finalizers: {patched}"
    );
    assert!(
        get_json(&c, &k, &["cm", "held", "-n", "fin"]).is_none(),
        "object must be gone once its finalizers are removed"
    );
}

// ---------------------------------------------------------------------------------------------
// get: output formats, selectors, pagination
// ---------------------------------------------------------------------------------------------

#[test]
fn get_output_formats() {
    let c = cluster_with_ns("out");
    c.apply(&deployment_yaml("out", "web", 2, "nginx:1.25"));
    c.apply(&configmap_yaml("out", "cfg", "", "a: '1', b: '2'"));
    let v = json(&c.kubectl_ok(&["get", "deploy", "web", "-n", "out", "-o", "json"]));
    assert_eq!(v["apiVersion"], "apps/v1");
    assert_eq!(v["kind"], "Deployment");
    // defaulting happened
    assert_eq!(v["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    let list = json(&c.kubectl_ok(&["get", "deploy", "-n", "out", "-o", "json"]));
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "web");
    let y = c.kubectl_ok(&["get", "deploy", "web", "-n", "out", "-o", "yaml"]);
    assert!(y.starts_with("apiVersion: apps/v1\n"), "{y}");
    assert!(
        y.contains("\nkind: Deployment\n") && y.contains("replicas: 2"),
        "{y}"
    );
    assert_eq!(
        c.kubectl_ok(&["get", "deploy", "-n", "out", "-o", "name"])
            .trim(),
        "deployment.apps/web"
    );
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "out",
            "-o",
            "jsonpath={.metadata.name}:{.spec.template.spec.containers[*].image}"
        ]),
        "web:nginx:1.25"
    );
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "deploy",
            "-n",
            "out",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas}{\"\\n\"}{end}"
        ]),
        "web=2\n"
    );
    let cc = c.kubectl_ok(&["get", "deploy", "-n", "out", "-o", "custom-columns=NAME:.metadata.name,IMAGE:.spec.template.spec.containers[0].image,REPLICAS:.spec.replicas"]);
    let rows: Vec<Vec<&str>> = cc.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows,
        vec![
            vec!["NAME", "IMAGE", "REPLICAS"],
            vec!["web", "nginx:1.25", "2"]
        ],
        "{cc}"
    );
    // server-side tables: the kind's own columns
    let wide = c.kubectl_ok(&["get", "deploy", "-n", "out", "-o", "wide"]);
    let header: Vec<&str> = wide
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{wide}"
    );
    let row: Vec<&str> = wide
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row.first(), Some(&"web"), "{wide}");
    assert!(
        row.contains(&"main") && row.contains(&"nginx:1.25") && row.contains(&"app=web"),
        "{wide}"
    );
    let table = c.kubectl_ok(&["get", "cm", "cfg", "-n", "out"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "DATA", "AGE"], "{table}");
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..2], ["cfg", "2"], "{table}");
    let ns_table = c.kubectl_ok(&["get", "ns", "out"]);
    let header: Vec<&str> = ns_table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "STATUS", "AGE"], "{ns_table}");
    assert!(
        ns_table
            .lines()
            .nth(1)
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("Active")),
        "{ns_table}"
    );
}

#[test]
fn get_with_label_and_field_selectors() {
    let c = cluster_with_ns("sel");
    let mut yaml = String::new();
    for (name, labels) in [
        ("a1", "env: a"),
        ("a2", "env: a, tier: web"),
        ("b1", "env: b"),
        ("c1", "env: c"),
        ("none", "tier: web"),
    ] {
        yaml.push_str(&configmap_yaml("sel", name, labels, ""));
        yaml.push_str("---\n");
    }
    c.apply(&yaml);
    let get = |sel: &[&str]| {
        let mut args = vec!["get", "configmaps", "-n", "sel", "-o", "name"];
        args.extend_from_slice(sel);
        names(&c.kubectl_ok(&args))
            .into_iter()
            .filter(|n| !n.ends_with("kube-root-ca.crt"))
            .map(|n| n.trim_start_matches("configmap/").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(get(&["-l", "env=a"]), ["a1", "a2"]);
    assert_eq!(get(&["-l", "env!=a"]), ["b1", "c1", "none"]);
    assert_eq!(get(&["-l", "env in (a,b)"]), ["a1", "a2", "b1"]);
    assert_eq!(get(&["-l", "env notin (a,b)"]), ["c1", "none"]);
    assert_eq!(get(&["-l", "!env"]), ["none"]);
    assert_eq!(get(&["-l", "env"]), ["a1", "a2", "b1", "c1"]);
    assert_eq!(get(&["-l", "env=a,tier=web"]), ["a2"]);
    assert_eq!(get(&["--field-selector", "metadata.name=b1"]), ["b1"]);
    assert_eq!(
        get(&["--field-selector", "metadata.name!=b1", "-l", "env"]),
        ["a1", "a2", "c1"]
    );
    // an unknown field is rejected by the server
    let args = [
        "get",
        "configmaps",
        "-n",
        "sel",
        "--field-selector",
        "data.x=y",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains("BadRequest") || err.contains("field label not supported"),
        "{err}"
    );
    // a malformed label selector is rejected
    let args = ["get", "configmaps", "-n", "sel", "-l", "env in (a"];
    fails(&args, c.kubectl(&args));

    // pods: spec.nodeName field selector (the unbound pod names a scheduler that does not exist,
    // so no scheduler binds it)
    c.apply(
        r#"apiVersion: v1
kind: Pod
metadata: {name: bound, namespace: sel}
spec:
  nodeName: node-a
  containers: [{name: c, image: nginx:1.25}]
---
apiVersion: v1
kind: Pod
metadata: {name: unbound, namespace: sel}
spec:
  schedulerName: no-such-scheduler
  containers: [{name: c, image: nginx:1.25}]
"#,
    );
    let pods = |sel: &str| {
        names(&c.kubectl_ok(&[
            "get",
            "pods",
            "-n",
            "sel",
            "-o",
            "name",
            "--field-selector",
            sel,
        ]))
    };
    assert_eq!(pods("spec.nodeName="), ["pod/unbound"]);
    assert_eq!(pods("spec.nodeName=node-a"), ["pod/bound"]);
    assert_eq!(pods("spec.nodeName!=node-a"), ["pod/unbound"]);
    assert_eq!(pods("status.phase=Pending,spec.nodeName="), ["pod/unbound"]);
}

#[test]
fn get_chunked_list() {
    let c = cluster_with_ns("chunk");
    let mut yaml = String::new();
    for i in 1..=5 {
        yaml.push_str(&configmap_yaml("chunk", &format!("chunk-{i}"), "", ""));
        yaml.push_str("---\n");
    }
    c.apply(&yaml);
    let out = c.kubectl(&[
        "get",
        "configmaps",
        "-n",
        "chunk",
        "--chunk-size=2",
        "-o",
        "name",
        "-v=6",
    ]);
    let listed: Vec<String> = names(&ok(&["get --chunk-size=2"], out.clone()))
        .into_iter()
        .filter(|n| n.starts_with("configmap/chunk-"))
        .collect();
    assert_eq!(
        listed,
        (1..=5)
            .map(|i| format!("configmap/chunk-{i}"))
            .collect::<Vec<_>>()
    );
    let log = stderr(&out);
    let requests: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("/namespaces/chunk/configmaps?") && l.contains("limit=2"))
        .collect();
    assert!(
        requests.len() >= 3,
        "5 objects in pages of 2 need at least 3 requests:\n{log}"
    );
    assert!(
        requests.iter().filter(|l| l.contains("continue=")).count() >= 2,
        "{log}"
    );
    // the raw API: the first page has 2 items and a continue token, a bad token is rejected
    let page = json(&c.kubectl_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/chunk/configmaps?limit=2",
    ]));
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2), "{page}");
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("continue token");
    assert!(!token.is_empty());
    let page_names = |p: &Value| -> Vec<String> {
        p["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                    .filter(|n| n.starts_with("chunk-"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let second = json(&c.kubectl_ok(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/chunk/configmaps?limit=2&continue={token}"),
    ]));
    let mut seen = page_names(&page);
    seen.extend(page_names(&second));
    assert_eq!(seen.len(), 4, "two pages of two: {page}\n{second}");
    seen.dedup();
    assert_eq!(seen.len(), 4, "pages must not overlap: {page}\n{second}");
    let args = [
        "get",
        "--raw",
        "/api/v1/namespaces/chunk/configmaps?limit=2&continue=not-a-token",
    ];
    fails(&args, c.kubectl(&args));
}

// ---------------------------------------------------------------------------------------------
// Discovery and schema
// ---------------------------------------------------------------------------------------------

#[test]
fn explain_api_resources_and_api_versions() {
    let c = TestCluster::start();
    let explain = c.kubectl_ok(&["explain", "deployment.spec.strategy"]);
    assert!(explain.contains("Deployment"), "{explain}");
    assert!(
        explain.contains("rollingUpdate") && explain.contains("type"),
        "{explain}"
    );
    let explain = c.kubectl_ok(&["explain", "pods.spec.containers.image"]);
    assert!(
        explain.contains("image") && explain.contains("<string>"),
        "{explain}"
    );
    let args = ["explain", "deployment.spec.nosuchfield"];
    fails(&args, c.kubectl(&args));

    let res = c.kubectl_ok(&["api-resources"]);
    let row = |name: &str| -> Vec<String> {
        res.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing from api-resources:\n{res}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(row("pods"), ["pods", "po", "v1", "true", "Pod"]);
    assert_eq!(
        row("deployments"),
        ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    );
    assert_eq!(
        row("namespaces"),
        ["namespaces", "ns", "v1", "false", "Namespace"]
    );
    let namespaced = c.kubectl_ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(
        namespaced.lines().any(|l| l == "namespaces") && !namespaced.lines().any(|l| l == "pods"),
        "{namespaced}"
    );

    let versions = c.kubectl_ok(&["api-versions"]);
    let versions: Vec<&str> = versions.lines().collect();
    for v in [
        "v1",
        "apps/v1",
        "batch/v1",
        "rbac.authorization.k8s.io/v1",
        "coordination.k8s.io/v1",
    ] {
        assert!(
            versions.contains(&v),
            "{v} missing from api-versions: {versions:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// diff and dry-run
// ---------------------------------------------------------------------------------------------

#[test]
fn diff_against_live_objects() {
    let c = cluster_with_ns("df");
    let file = c.scratch_dir().join("web.yaml");
    let file_s = file.to_str().expect("utf-8 path");
    std::fs::write(&file, deployment_yaml("df", "web", 1, "nginx:1.25")).expect("write");
    // not yet created: a diff (exit 1) that adds the object, and nothing is created
    let out = c.kubectl(&["diff", "-f", file_s]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stdout(&out).contains("+  name: web"), "{}", stdout(&out));
    assert!(get_json(&c, &Kubectl::dispatcher(), &["deploy", "web", "-n", "df"]).is_none());

    c.kubectl_ok(&["apply", "-f", file_s]);
    let out = c.kubectl(&["diff", "-f", file_s]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "no diff expected: {}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");

    std::fs::write(&file, deployment_yaml("df", "web", 4, "nginx:1.25")).expect("write");
    let out = c.kubectl(&["diff", "-f", file_s]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let diff = stdout(&out);
    assert!(
        diff.lines().any(|l| l == "-  replicas: 1") && diff.lines().any(|l| l == "+  replicas: 4"),
        "{diff}"
    );
    // diff is a dry run: the live object is unchanged
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "deploy",
            "web",
            "-n",
            "df",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "1"
    );
}

#[test]
fn dry_run_server_creates_nothing() {
    let c = cluster_with_ns("dry");
    let k = Kubectl::dispatcher();
    let args = ["apply", "--dry-run=server", "-f", "-"];
    let out = ok(
        &args,
        c.kubectl_stdin(&args, &configmap_yaml("dry", "ghost", "", "a: b")),
    );
    assert!(
        out.contains("configmap/ghost created (server dry run)"),
        "{out}"
    );
    let args = ["create", "--dry-run=server", "-f", "-", "-o", "json"];
    let out = ok(
        &args,
        c.kubectl_stdin(&args, &deployment_yaml("dry", "ghost", 1, "nginx:1.25")),
    );
    let v = json(&out);
    // the server ran defaulting, but did not persist
    assert_eq!(v["spec"]["strategy"]["type"], "RollingUpdate", "{v}");
    assert!(get_json(&c, &k, &["cm", "ghost", "-n", "dry"]).is_none());
    assert!(get_json(&c, &k, &["deploy", "ghost", "-n", "dry"]).is_none());

    // dry-run update and delete of an existing object change nothing
    c.apply(&configmap_yaml("dry", "real", "", "a: b"));
    let rv = c.kubectl_ok(&[
        "get",
        "cm",
        "real",
        "-n",
        "dry",
        "-o",
        "jsonpath={.metadata.resourceVersion}",
    ]);
    c.kubectl_ok(&[
        "label",
        "cm",
        "real",
        "-n",
        "dry",
        "x=y",
        "--dry-run=server",
    ]);
    let out = c.kubectl_ok(&["delete", "cm", "real", "-n", "dry", "--dry-run=server"]);
    assert!(out.contains("(server dry run)"), "{out}");
    let v = get_json(&c, &k, &["cm", "real", "-n", "dry"]).expect("dry-run delete must not delete");
    assert_eq!(v["metadata"]["resourceVersion"], rv.as_str());
    assert!(v["metadata"]["labels"].get("x").is_none(), "{v}");
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

#[test]
fn create_in_missing_namespace_is_not_found() {
    let c = TestCluster::start();
    let args = ["apply", "-f", "-"];
    let err = fails(
        &args,
        c.kubectl_stdin(&args, &configmap_yaml("nope", "cfg", "", "")),
    );
    assert!(
        err.contains("NotFound") && err.contains("namespaces \"nope\" not found"),
        "{err}"
    );
    let args = ["create", "-f", "-"];
    let err = fails(
        &args,
        c.kubectl_stdin(&args, &configmap_yaml("nope", "cfg", "", "")),
    );
    assert!(err.contains("namespaces \"nope\" not found"), "{err}");
}

#[test]
fn deployment_without_selector_is_invalid() {
    let c = cluster_with_ns("inv");
    let yaml = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: nosel, namespace: inv}
spec:
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: c, image: nginx:1.25}]
"#;
    let args = ["apply", "-f", "-"];
    let err = fails(&args, c.kubectl_stdin(&args, yaml));
    assert!(
        err.contains("is invalid") && err.contains("spec.selector: Required value"),
        "{err}"
    );
    assert!(
        get_json(
            &c,
            &Kubectl::dispatcher(),
            &["deploy", "nosel", "-n", "inv"]
        )
        .is_none()
    );
    // a selector that does not match the template labels is Invalid too
    let yaml = yaml.replace(
        "spec:\n  template:",
        "spec:\n  selector: {matchLabels: {app: other}}\n  template:",
    );
    let err = fails(&args, c.kubectl_stdin(&args, &yaml));
    assert!(
        err.contains(
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"x\"}: \
             `selector` does not match template `labels`"
        ),
        "{err}"
    );
}

#[test]
fn yaml_garbage_is_rejected_and_creates_nothing() {
    let c = cluster_with_ns("bad");
    let args = ["apply", "-f", "-"];
    let out = c.kubectl_stdin(
        &args,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: junk\n  namespace: bad\ndata:\n  a: [unclosed\n",
    );
    let err = fails(&args, out);
    assert!(err.contains("error") && err.contains("yaml"), "{err}");
    assert!(get_json(&c, &Kubectl::dispatcher(), &["cm", "junk", "-n", "bad"]).is_none());
    // well-formed YAML whose field has the wrong type: the server cannot decode it (400)
    let err = fails(&args, c.kubectl_stdin(&args, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: junk\n  namespace: bad\ndata: 42\n"));
    assert!(err.contains("BadRequest"), "{err}");
    assert!(get_json(&c, &Kubectl::dispatcher(), &["cm", "junk", "-n", "bad"]).is_none());
}

// ---------------------------------------------------------------------------------------------
// Typed `kubectl create` subcommands. kubectl 1.32+ sends these as protobuf.
// ---------------------------------------------------------------------------------------------

#[test]
fn typed_create_namespace() {
    let c = TestCluster::start();
    let out = c.kubectl_ok(&["create", "namespace", "typed"]);
    assert!(out.contains("namespace/typed created"), "{out}");
    assert_eq!(
        c.kubectl_ok(&["get", "ns", "typed", "-o", "jsonpath={.status.phase}"]),
        "Active"
    );
}

#[test]
fn typed_create_configmap() {
    let c = cluster_with_ns("typed");
    let out = c.kubectl_ok(&[
        "create",
        "configmap",
        "cfg",
        "-n",
        "typed",
        "--from-literal=a=1",
        "--from-literal=b=two",
    ]);
    assert!(out.contains("configmap/cfg created"), "{out}");
    let v = json(&c.kubectl_ok(&["get", "cm", "cfg", "-n", "typed", "-o", "json"]));
    assert_eq!(v["data"], serde_json::json!({"a": "1", "b": "two"}));
}

#[test]
fn typed_create_secret_generic() {
    let c = cluster_with_ns("typed");
    let out = c.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "sec",
        "-n",
        "typed",
        "--from-literal=user=admin",
    ]);
    assert!(out.contains("secret/sec created"), "{out}");
    let v = json(&c.kubectl_ok(&["get", "secret", "sec", "-n", "typed", "-o", "json"]));
    assert_eq!(v["type"], "Opaque");
    assert_eq!(v["data"]["user"], "YWRtaW4=");
}

#[test]
fn typed_create_deployment() {
    let c = cluster_with_ns("typed");
    let out = c.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "typed",
        "--image=nginx:1.25",
        "--replicas=2",
    ]);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let v = json(&c.kubectl_ok(&["get", "deploy", "web", "-n", "typed", "-o", "json"]));
    assert_eq!(v["spec"]["replicas"], 2);
    assert_eq!(v["spec"]["selector"]["matchLabels"]["app"], "web");
    assert_eq!(
        v["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
}
