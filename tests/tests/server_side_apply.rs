//! Server-side apply and managedFields against the real `k1s` binary: kubectl (`apply
//! --server-side`, conflicts, `--force-conflicts`, `diff --server-side`, `--show-managed-fields`
//! after create / edit / scale) and kube-rs `Patch::Apply`. One cluster for the file.

use k1s_tests::{Kubectl, TestCluster, fails, namespace_yaml, ok, stdout};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const NS: &str = "ssa";

fn get_json(c: &TestCluster, args: &[&str]) -> Value {
    let mut all = vec!["get", "-n", NS, "-o", "json", "--show-managed-fields"];
    all.extend_from_slice(args);
    serde_json::from_str(&c.kubectl_ok(&all)).expect("kubectl get -o json")
}

/// The managedFields entry of `manager` (and `operation`).
fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

fn apply_ss(c: &TestCluster, yaml: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["apply", "--server-side", "-f", "-"];
    args.extend_from_slice(extra);
    c.kubectl_stdin(&args, yaml)
}

fn configmap_yaml(name: &str, data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {NS}\ndata: {{{data}}}\n"
    )
}

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ssa
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx
"#;

#[test]
fn kubectl_managed_fields_apply_conflicts_and_diff() {
    let c = TestCluster::start();
    c.apply(&namespace_yaml(NS));

    // kubectl create: an Update entry of kubectl-create in apps/v1.
    c.kubectl_ok(&["create", "deployment", "web", "-n", NS, "--image=nginx"]);
    let d = get_json(&c, &["deployment", "web"]);
    let created = entry(&d, "kubectl-create", "Update").expect("kubectl-create entry");
    assert_eq!(created["apiVersion"], "apps/v1");
    assert_eq!(created["fieldsType"], "FieldsV1");
    assert!(created["time"].is_string(), "{created}");
    let f = &created["fieldsV1"];
    assert_eq!(
        f["f:metadata"]["f:labels"],
        json!({".": {}, "f:app": {}}),
        "{f}"
    );
    assert_eq!(f["f:spec"]["f:replicas"], json!({}), "{f}");
    assert!(
        f["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"nginx\"}"]["f:image"]
            .is_object(),
        "{f}"
    );
    assert!(
        f.get("f:status").is_none(),
        "status is not the creator's: {f}"
    );
    // Without --show-managed-fields kubectl hides them.
    let plain: Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "deployment", "web", "-n", NS, "-o", "json"]))
            .expect("json");
    assert!(plain["metadata"].get("managedFields").is_none());

    // kubectl scale (1.32 sends no fieldManager: its User-Agent names it "kubectl"): an entry
    // for the scale subresource takes .spec.replicas over.
    c.kubectl_ok(&["scale", "deployment", "web", "-n", NS, "--replicas=3"]);
    let d = get_json(&c, &["deployment", "web"]);
    let scaled = entry(&d, "kubectl", "Update").expect("kubectl scale entry");
    assert_eq!(scaled["subresource"], "scale");
    assert_eq!(scaled["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let created = entry(&d, "kubectl-create", "Update").expect("kubectl-create entry");
    assert!(created["fieldsV1"]["f:spec"].get("f:replicas").is_none());

    // Server-side apply of replicas conflicts with kubectl-scale, named as upstream names it.
    let out = apply_ss(&c, DEPLOYMENT, &[]);
    let err = fails(&["apply", "--server-side"], out);
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\" with subresource \"scale\" using apps/v1: .spec.replicas"
        ),
        "{err}"
    );
    assert_eq!(get_json(&c, &["deployment", "web"])["spec"]["replicas"], 3);
    // --force-conflicts takes it.
    ok(&["apply"], apply_ss(&c, DEPLOYMENT, &["--force-conflicts"]));
    let d = get_json(&c, &["deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 2);
    let applied = entry(&d, "kubectl", "Apply").expect("kubectl Apply entry");
    assert_eq!(applied["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    assert!(
        entry(&d, "kubectl", "Update").is_none(),
        "scale lost its only field"
    );
    // The in-process controllers write as kube-controller-manager, as upstream's do.
    k1s_tests::wait_until(
        std::time::Duration::from_secs(20),
        "controller status entry",
        || {
            let d = get_json(&c, &["deployment", "web"]);
            entry(&d, "kube-controller-manager", "Update")
                .filter(|e| e["subresource"] == "status")
                .map(|_| ())
        },
    );

    // A ConfigMap applied by two managers, then edited with kubectl edit.
    ok(
        &["apply"],
        apply_ss(&c, &configmap_yaml("cm", "a: '1', b: '2'"), &[]),
    );
    let out = apply_ss(
        &c,
        &configmap_yaml("cm", "a: 'changed'"),
        &["--field-manager=other"],
    );
    let err = fails(&["apply", "--field-manager=other"], out);
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .data.a"),
        "{err}"
    );
    ok(
        &["apply"],
        apply_ss(
            &c,
            &configmap_yaml("cm", "a: 'changed'"),
            &["--field-manager=other", "--force-conflicts"],
        ),
    );
    let cm = get_json(&c, &["configmap", "cm"]);
    assert_eq!(cm["data"], json!({"a": "changed", "b": "2"}));
    assert_eq!(
        entry(&cm, "other", "Apply").expect("other")["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
    assert_eq!(
        entry(&cm, "kubectl", "Apply").expect("kubectl")["fieldsV1"],
        json!({"f:data": {"f:b": {}}})
    );

    // kubectl stops applying b: it is removed (nobody else owns it).
    ok(
        &["apply"],
        apply_ss(&c, &configmap_yaml("cm", "c: '3'"), &[]),
    );
    let cm = get_json(&c, &["configmap", "cm"]);
    assert_eq!(cm["data"], json!({"a": "changed", "c": "3"}));

    // kubectl diff --server-side shows the change and changes nothing.
    let out = c.kubectl_stdin(
        &["diff", "--server-side", "-f", "-"],
        &configmap_yaml("cm", "c: '4'"),
    );
    assert_eq!(out.status.code(), Some(1), "diff exit code: {out:?}");
    let diff = stdout(&out);
    assert!(
        diff.contains("-  c: \"3\"") && diff.contains("+  c: \"4\""),
        "{diff}"
    );
    assert_eq!(get_json(&c, &["configmap", "cm"])["data"]["c"], "3");
    // --dry-run=server neither.
    ok(
        &["apply"],
        apply_ss(&c, &configmap_yaml("cm", "c: '5'"), &["--dry-run=server"]),
    );
    assert_eq!(get_json(&c, &["configmap", "cm"])["data"]["c"], "3");

    // kubectl edit: an Update entry of kubectl-edit for the field it changed.
    c.kubectl_ok(&[
        "create",
        "configmap",
        "edited",
        "-n",
        NS,
        "--from-literal=k=old1",
    ]);
    let out = c.run_kubectl(
        &Kubectl::dispatcher(),
        &["edit", "configmap", "edited", "-n", NS],
        None,
        &[("KUBE_EDITOR", "sed -i -e s/old1/new1/")],
    );
    ok(&["edit"], out);
    let cm = get_json(&c, &["configmap", "edited"]);
    assert_eq!(cm["data"]["k"], "new1");
    assert_eq!(
        entry(&cm, "kubectl-edit", "Update").expect("kubectl-edit")["fieldsV1"],
        json!({"f:data": {"f:k": {}}})
    );
    // The creator keeps the data map itself (a member with no children left: `{}`), the edit
    // took its key.
    assert_eq!(
        entry(&cm, "kubectl-create", "Update").expect("kubectl-create")["fieldsV1"],
        json!({"f:data": {}}),
        "{cm}"
    );

    // A fieldManager longer than 128 bytes is refused as upstream refuses it.
    let long = format!("--field-manager={}", "m".repeat(129));
    let err = fails(
        &["create"],
        c.kubectl(&["create", "configmap", "long", "-n", NS, &long]),
    );
    assert!(
        err.contains("fieldManager: Too long: may not be more than 128 bytes"),
        "{err}"
    );
}

fn api_error<T: std::fmt::Debug>(res: kube::Result<T>) -> kube::core::Status {
    match res {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_rs_patch_apply_with_conflicts() {
    let c = TestCluster::start();
    c.apply(&namespace_yaml(NS));
    let client = c.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let cm = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k"}, "data": {"x": v}});
    // Apply creates.
    let made = api
        .patch("k", &PatchParams::apply("mgr-a"), &Patch::Apply(cm("1")))
        .await
        .expect("apply creates");
    let fields = made.metadata.managed_fields.clone().unwrap_or_default();
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0].manager.as_deref(), Some("mgr-a"));
    assert_eq!(fields[0].operation.as_deref(), Some("Apply"));
    // Another manager changing x: 409 with a FieldManagerConflict cause.
    let status = api_error(
        api.patch("k", &PatchParams::apply("mgr-b"), &Patch::Apply(cm("2")))
            .await,
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"mgr-a\": .data.x"
    );
    let causes = status.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".data.x");
    assert_eq!(causes[0].message, "conflict with \"mgr-a\"");
    // Forced, it wins.
    let forced = api
        .patch(
            "k",
            &PatchParams::apply("mgr-b").force(),
            &Patch::Apply(cm("2")),
        )
        .await
        .expect("forced apply");
    assert_eq!(
        forced.data.unwrap_or_default().get("x").map(String::as_str),
        Some("2")
    );
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| e.manager)
        .collect();
    assert_eq!(managers, ["mgr-b"], "mgr-a lost its only field");
    // Apply without a fieldManager is refused as upstream refuses it.
    let req = http::Request::patch(format!("/api/v1/namespaces/{NS}/configmaps/k"))
        .header("content-type", "application/apply-patch+yaml")
        .body(serde_json::to_vec(&cm("3")).expect("body"))
        .expect("request");
    let status = api_error(client.request_text(req).await);
    assert_eq!(status.code, 422, "{status:?}");
    assert_eq!(
        status.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
}

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              tags:
                type: array
                items: {type: string}
"#;

/// A cluster with the namespace and the Gadget CRD, established.
fn gadgets_cluster() -> TestCluster {
    let c = TestCluster::start();
    c.apply(&namespace_yaml(NS));
    c.apply(GADGETS);
    c.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gadgets.example.com",
        "--timeout=30s",
    ]);
    c
}

/// A Gadget with these ports and, when `tags` is not empty, these tags.
fn gadget(ports: &str, tags: &str) -> String {
    let tags = if tags.is_empty() {
        String::new()
    } else {
        format!("  tags: [{tags}]\n")
    };
    format!(
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: {NS}\nspec:\n  ports: [{ports}]\n{tags}"
    )
}

/// A custom resource merges by its CRD's schema: a list-type map keeps every manager's items,
/// an untyped list (atomic) is one manager's, and conflicts name the CR's fields.
#[test]
fn custom_resources_apply_by_their_schema() {
    let c = gadgets_cluster();
    let apply = ["apply", "--server-side"];
    ok(
        &apply,
        apply_ss(
            &c,
            &gadget("{name: a, port: 1}", "x"),
            &["--field-manager=one"],
        ),
    );
    ok(
        &apply,
        apply_ss(
            &c,
            &gadget("{name: b, port: 2}", ""),
            &["--field-manager=two"],
        ),
    );
    let g = get_json(&c, &["gadget", "g"]);
    let names: Vec<&str> = g["spec"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["a", "b"], "both managers' keyed items stay: {g}");
    let two = entry(&g, "two", "Apply").expect("two's entry");
    assert!(
        two["fieldsV1"]["f:spec"]["f:ports"]
            .get(r#"k:{"name":"b"}"#)
            .is_some(),
        "{two}"
    );
    // `tags` has no list type, so it is atomic: another value from two conflicts with one's.
    let out = apply_ss(
        &c,
        &gadget("{name: b, port: 2}", "y"),
        &["--field-manager=two"],
    );
    let err = fails(&apply, out);
    assert!(err.contains(".spec.tags"), "{err}");
    // One's port conflicts for two until forced.
    let out = apply_ss(
        &c,
        &gadget("{name: a, port: 9}", ""),
        &["--field-manager=two"],
    );
    let err = fails(&apply, out);
    assert!(err.contains(r#".spec.ports[name="a"].port"#), "{err}");
    let forced = ["--field-manager=two", "--force-conflicts"];
    ok(
        &apply,
        apply_ss(&c, &gadget("{name: a, port: 9}", ""), &forced),
    );
    let g = get_json(&c, &["gadget", "g"]);
    assert_eq!(g["spec"]["ports"][0]["port"], 9, "{g}");
}

/// What upstream's typed conversion of an applied configuration refuses, whatever the
/// `fieldValidation` mode (field_validation.go and apply.go of upstream's e2e tests): fields the
/// schema does not declare (a 500 without reason), for built-ins and custom resources, the root's
/// and embedded objects' metadata included; a custom resource's `metadata.finalizers` merges as a
/// set; duplicate YAML keys let the last win and are refused only with Strict.
#[tokio::test]
async fn apply_checks_the_configuration_against_the_schema() {
    let c = gadgets_cluster();
    let apply = ["apply", "--server-side"];
    let bogus = format!("{}  bogus: 1\n", gadget("{name: a, port: 1}", ""));
    let err = fails(&apply, apply_ss(&c, &bogus, &["--validate=false"]));
    assert!(
        err.contains(
            "failed to create typed patch object (ssa/g; example.com/v1, Kind=Gadget): \
             .spec.bogus: field not declared in schema"
        ),
        "{err}"
    );
    let meta =
        gadget("{name: a, port: 1}", "").replace("  name: g\n", "  name: g\n  unknownMeta: x\n");
    let err = fails(&apply, apply_ss(&c, &meta, &["--validate=false"]));
    assert!(
        err.contains(".metadata.unknownMeta: field not declared in schema"),
        "{err}"
    );
    let cm = format!("{}extra: 1\n", configmap_yaml("typed", "a: b"));
    let err = fails(&apply, apply_ss(&c, &cm, &["--validate=false"]));
    assert!(
        err.contains(
            "failed to create typed patch object (ssa/typed; /v1, Kind=ConfigMap): \
             .extra: field not declared in schema"
        ),
        "{err}"
    );

    // Finalizers are a set: another manager's finalizer does not conflict with a re-apply.
    let with_finalizer = gadget("{name: a, port: 1}", "").replace(
        "  name: g\n",
        "  name: g\n  finalizers: [example.com/one]\n",
    );
    ok(
        &apply,
        apply_ss(&c, &with_finalizer, &["--field-manager=one"]),
    );
    c.kubectl_ok(&[
        "patch",
        "-n",
        NS,
        "gadget",
        "g",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/one","example.com/two"]}}"#,
    ]);
    ok(
        &apply,
        apply_ss(&c, &with_finalizer, &["--field-manager=one"]),
    );
    let g = get_json(&c, &["gadget", "g"]);
    assert_eq!(
        g["metadata"]["finalizers"],
        json!(["example.com/one", "example.com/two"]),
        "{g}"
    );
    c.kubectl_ok(&[
        "patch",
        "-n",
        NS,
        "gadget",
        "g",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);

    // A plain create drops unknown metadata fields of a custom resource and names them.
    let created =
        gadget("{name: a, port: 1}", "").replace("  name: g\n", "  name: h\n  unknownMeta: x\n");
    let out = c.kubectl_stdin(&["create", "--validate=strict", "-f", "-"], &created);
    let err = fails(&["create"], out);
    assert!(
        err.contains(r#"unknown field "metadata.unknownMeta""#),
        "{err}"
    );
    ok(
        &["create"],
        c.kubectl_stdin(&["create", "--validate=false", "-f", "-"], &created),
    );
    let h = get_json(&c, &["gadget", "h"]);
    assert!(h["metadata"].get("unknownMeta").is_none(), "{h}");

    // Duplicate keys in the YAML body of an apply: Strict refuses them with go-yaml's words.
    let dup = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\n  namespace: ssa\ndata:\n  a: \"1\"\n  a: \"2\"\n";
    let client = c.client().await;
    let request = |validation: &str| {
        http::Request::patch(format!(
            "/api/v1/namespaces/{NS}/configmaps/dup?fieldManager=m&fieldValidation={validation}"
        ))
        .header("content-type", "application/apply-patch+yaml")
        .body(dup.as_bytes().to_vec())
        .expect("request")
    };
    let status = api_error(client.request_text(request("Strict")).await);
    assert_eq!(status.code, 400, "{status:?}");
    assert_eq!(
        status.message,
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  \
         line 8: key \"a\" already set in map"
    );
    let created = client
        .request_text(request("Ignore"))
        .await
        .expect("the last key wins");
    let created: Value = serde_json::from_str(&created).expect("json");
    assert_eq!(created["data"]["a"], "2", "{created}");
}
