//! CustomResourceDefinitions through the real server: kubectl (Established, printer columns,
//! short names, categories, `explain`, status and scale subresources, schema errors with
//! upstream's messages, pruning, defaulting, CRD deletion removing its objects), name conflicts,
//! cluster scope, and kube-rs (dynamic round trip, watch, protobuf refused).

use std::time::Duration;

use k1s_tests::{TestCluster, fails, ok, stderr, wait_until};

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Size
      type: string
      jsonPath: .spec.size
      description: how big
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              replicas: {type: integer, minimum: 0, maximum: 10}
              size: {type: string, enum: [small, large], description: the size of the widget}
              mode: {type: string, default: auto}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

fn widget(name: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n  size: small\n  replicas: 2\n{extra_spec}"
    )
}

fn established(c: &TestCluster, crd: &str) {
    c.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{crd}"),
        "--timeout=20s",
    ]);
}

#[test]
fn crd_lifecycle_with_kubectl() {
    let c = TestCluster::start();
    c.apply(WIDGETS);
    established(&c, "widgets.example.com");
    let conditions = c.kubectl_ok(&[
        "get",
        "crd",
        "widgets.example.com",
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}={.status}/{.reason}/{.message};{end}",
    ]);
    assert!(
        conditions.contains("NamesAccepted=True/NoConflicts/no conflicts found;"),
        "{conditions}"
    );
    assert!(
        conditions.contains(
            "Established=True/InitialNamesAccepted/the initial names have been accepted;"
        ),
        "{conditions}"
    );
    let stored = c.kubectl_ok(&[
        "get",
        "crd",
        "widgets.example.com",
        "-o",
        "jsonpath={.status.storedVersions} {.status.acceptedNames.shortNames}",
    ]);
    assert_eq!(stored.trim(), r#"["v1"] ["wd"]"#);

    c.apply(&widget("w1", ""));
    // Printer columns, the short name and -o name.
    let table = c.kubectl_ok(&["get", "wd"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "REPLICAS", "SIZE", "AGE"], "{table}");
    assert!(
        table.lines().nth(1).unwrap_or("").starts_with("w1"),
        "{table}"
    );
    assert!(table.contains(" 2 ") && table.contains("small"), "{table}");
    assert_eq!(
        c.kubectl_ok(&["get", "widgets", "-o", "name"]).trim(),
        "widget.example.com/w1"
    );
    // Defaulting on write.
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "widget",
            "w1",
            "-o",
            "jsonpath={.spec.mode} {.metadata.generation}"
        ]),
        "auto 1"
    );
    // `kubectl get all` expands the category.
    assert!(
        c.kubectl_ok(&["get", "all"])
            .contains("widget.example.com/w1")
    );
    // Served in both versions (conversion None rewrites apiVersion).
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "widgets.v1beta1.example.com",
            "w1",
            "-o",
            "jsonpath={.apiVersion}"
        ]),
        "example.com/v1beta1"
    );

    // explain from the OpenAPI v3 document.
    let explain = c.kubectl_ok(&["explain", "widget.spec"]);
    assert!(explain.contains("KIND:       Widget"), "{explain}");
    assert!(explain.contains("size\t<string> -required-"), "{explain}");
    assert!(explain.contains("the size of the widget"), "{explain}");

    // Status subresource: a status write ignores spec, a main write ignores status.
    c.kubectl_ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3},"spec":{"size":"large"}}"#,
    ]);
    c.kubectl_ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":9}}"#,
    ]);
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "wd",
            "w1",
            "-o",
            "jsonpath={.spec.size} {.status.replicas} {.metadata.generation}"
        ]),
        "small 3 1"
    );
    // Scale subresource and `kubectl scale`; a spec change bumps the generation.
    c.kubectl_ok(&["scale", "widget", "w1", "--replicas=5"]);
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "wd",
            "w1",
            "-o",
            "jsonpath={.spec.replicas} {.metadata.generation}"
        ]),
        "5 2"
    );
    let scale = c.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
    ]);
    assert!(
        scale.contains(r#""kind":"Scale""#) && scale.contains(r#""spec":{"replicas":5}"#),
        "{scale}"
    );
    assert!(scale.contains(r#""status":{"replicas":3}"#), "{scale}");

    // Schema errors with upstream's messages.
    let args = ["apply", "-f", "-"];
    let err = fails(
        &args,
        c.kubectl_stdin(&args, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: bad}\nspec: {size: medium, replicas: \"many\"}\n"),
    );
    assert!(err.contains(r#"The Widget "bad" is invalid"#), "{err}");
    assert!(
        err.contains(r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#),
        "{err}"
    );
    assert!(
        err.contains(
            r#"spec.size: Unsupported value: "medium": supported values: "small", "large""#
        ),
        "{err}"
    );
    let err = fails(
        &args,
        c.kubectl_stdin(
            &args,
            &widget("big", "  replicas: 20\n").replace("  replicas: 2\n", ""),
        ),
    );
    assert!(
        err.contains("spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10"),
        "{err}"
    );
    let err = fails(
        &args,
        c.kubectl_stdin(
            &args,
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: nosize}\nspec: {}\n",
        ),
    );
    assert!(err.contains("spec.size: Required value"), "{err}");

    // Unknown fields: strict refuses (kubectl apply's default), warn and ignore prune.
    let err = fails(&args, c.kubectl_stdin(&args, &widget("w2", "  bogus: 1\n")));
    assert!(
        err.contains(r#"strict decoding error: unknown field "spec.bogus""#),
        "{err}"
    );
    let warn_args = ["apply", "--validate=warn", "-f", "-"];
    let out = c.kubectl_stdin(&warn_args, &widget("w2", "  bogus: 1\n"));
    let warning = stderr(&out);
    ok(&warn_args, out);
    assert!(
        warning.contains(r#"unknown field "spec.bogus""#),
        "{warning}"
    );
    assert_eq!(
        c.kubectl_ok(&["get", "wd", "w2", "-o", "jsonpath={.spec}"]),
        r#"{"mode":"auto","replicas":2,"size":"small"}"#
    );

    // Deleting the CRD deletes its objects, then the resource is no longer served.
    c.kubectl_ok(&["delete", "crd", "widgets.example.com", "--timeout=30s"]);
    wait_until(Duration::from_secs(20), "the CRD to be gone", || {
        (!c.kubectl(&["get", "crd", "widgets.example.com"])
            .status
            .success())
        .then_some(())
    });
    let gone = c.kubectl(&[
        "get",
        "--raw",
        "/apis/example.com/v1/namespaces/default/widgets",
    ]);
    assert!(!gone.status.success());
    assert!(
        stderr(&gone).contains("NotFound") || stderr(&gone).contains("not found"),
        "{}",
        stderr(&gone)
    );
    // Re-created, the old objects do not come back.
    c.apply(WIDGETS);
    established(&c, "widgets.example.com");
    assert_eq!(c.kubectl_ok(&["get", "widgets", "-o", "name"]).trim(), "");
}

#[test]
fn name_conflicts_cluster_scope_and_validation() {
    let c = TestCluster::start();
    c.apply(WIDGETS);
    established(&c, "widgets.example.com");
    // Another CRD of the group asking for the kind Widget is not accepted.
    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\nspec:\n  group: example.com\n  scope: Cluster\n  names: {plural: gadgets, kind: Widget, shortNames: [wd]}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object}}\n",
    );
    let cond =
        wait_until(Duration::from_secs(10), "NamesAccepted=False", || {
            let out = c.kubectl_ok(&[
            "get", "crd", "gadgets.example.com", "-o",
            "jsonpath={range .status.conditions[*]}{.type}={.status}/{.reason}/{.message};{end}",
        ]);
            out.contains("NamesAccepted=False").then_some(out)
        });
    // Every conflicting name is refused; the condition names the last one checked.
    assert!(
        cond.contains("NamesAccepted=False/ListKindConflict/\"WidgetList\" is already in use;"),
        "{cond}"
    );
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "crd",
            "gadgets.example.com",
            "-o",
            "jsonpath={.status.acceptedNames.plural}/{.status.acceptedNames.kind}"
        ]),
        "gadgets/"
    );
    assert!(
        cond.contains("Established=False/NotAccepted/not all names are accepted;"),
        "{cond}"
    );

    // A cluster-scoped kind.
    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: clusterthings.example.org}\nspec:\n  group: example.org\n  scope: Cluster\n  names: {plural: clusterthings, kind: ClusterThing}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n",
    );
    established(&c, "clusterthings.example.org");
    c.apply("apiVersion: example.org/v1\nkind: ClusterThing\nmetadata: {name: t1, labels: {tier: a}}\nspec: {anything: [1, 2]}\n");
    c.apply("apiVersion: example.org/v1\nkind: ClusterThing\nmetadata: {name: t2}\nspec: {}\n");
    assert_eq!(
        c.kubectl_ok(&["get", "clusterthings", "-l", "tier=a", "-o", "name"])
            .trim(),
        "clusterthing.example.org/t1"
    );
    assert_eq!(
        c.kubectl_ok(&[
            "get",
            "clusterthings",
            "--field-selector",
            "metadata.name=t2",
            "-o",
            "name"
        ])
        .trim(),
        "clusterthing.example.org/t2"
    );
    // Table default columns: Name and Age.
    let header = c.kubectl_ok(&["get", "clusterthings"]);
    assert_eq!(
        header
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["NAME", "AGE"]
    );
    // Discovery lists the new group.
    let groups = c.kubectl_ok(&["api-resources", "--api-group=example.org", "-o", "name"]);
    assert_eq!(groups.trim(), "clusterthings.example.org");

    // CRD validation as upstream.
    let args = ["apply", "-f", "-"];
    let err = fails(
        &args,
        c.kubectl_stdin(
            &args,
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: wrong.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: things, kind: Thing}\n  versions:\n  - {name: v1, served: true, storage: false, schema: {openAPIV3Schema: {type: object, properties: {spec: {properties: {a: {type: string}}}}}}}\n",
        ),
    );
    assert!(err.contains(r#"metadata.name: Invalid value: "wrong.example.com": must be spec.names.plural+"."+spec.group"#), "{err}");
    assert!(err.contains("spec.versions: Invalid value:"), "{err}");
    assert!(
        err.contains("must have exactly one version marked as storage version"),
        "{err}"
    );
    assert!(
        err.contains("spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"),
        "{err}"
    );
}

#[test]
fn kube_rs_dynamic_round_trip() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{Api, ApiResource, DynamicObject, PostParams, WatchEvent, WatchParams};
    use kube::core::GroupVersionKind;

    let c = TestCluster::start();
    c.apply(WIDGETS);
    established(&c, "widgets.example.com");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let client = c.client().await;
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
        let mut watch = api
            .watch(&WatchParams::default(), "0")
            .await
            .expect("watch")
            .boxed();
        let mut obj = DynamicObject::new("k1", &ar);
        obj.data = serde_json::json!({"spec": {"size": "large", "replicas": 1}});
        let created = api
            .create(&PostParams::default(), &obj)
            .await
            .expect("create");
        assert_eq!(created.data["spec"]["mode"], "auto");
        assert_eq!(created.metadata.generation, Some(1));
        let got = api.get("k1").await.expect("get");
        assert_eq!(got.data["spec"]["size"], "large");
        let list = api.list(&Default::default()).await.expect("list");
        assert_eq!(list.items.len(), 1);
        let event = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
            .await
            .expect("a watch event in time")
            .expect("watch stream")
            .expect("an event");
        match event {
            WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("k1")),
            other => panic!("unexpected event {other:?}"),
        }
        // A schema error is a 422 with upstream's cause.
        let mut bad = DynamicObject::new("k2", &ar);
        bad.data = serde_json::json!({"spec": {"size": "tiny"}});
        match api.create(&PostParams::default(), &bad).await {
            Err(kube::Error::Api(s)) => {
                assert_eq!(s.code, 422);
                assert!(
                    s.message
                        .contains(r#"spec.size: Unsupported value: "tiny""#),
                    "{}",
                    s.message
                );
            }
            other => panic!("expected 422, got {other:?}"),
        }
        // Custom resources are JSON or YAML only.
        let req = http::Request::get("/apis/example.com/v1/namespaces/default/widgets/k1")
            .header("Accept", "application/vnd.kubernetes.protobuf")
            .body(Vec::new())
            .expect("request");
        match client.request_text(req).await {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 406),
            other => panic!("expected 406, got {other:?}"),
        }
    });
}

/// `selectableFields`: field selectors on custom resources (`kubectl get --field-selector`),
/// and the CRD validation of the paths, with upstream's messages.
#[test]
fn selectable_fields_filter_lists_and_are_validated() {
    let c = TestCluster::start();
    let crd = |name: &str, plural: &str, fields: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.{name}}}\nspec:\n  group: {name}\n  scope: Namespaced\n  names: {{plural: {plural}, singular: {single}, kind: {kind}}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    selectableFields: {fields}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              color: {{type: string, enum: [red, blue]}}\n              size: {{type: integer}}\n              tags: {{type: array, items: {{type: string}}}}\n",
            single = plural.trim_end_matches('s'),
            kind = {
                let s = plural.trim_end_matches('s');
                let mut k = s[..1].to_uppercase();
                k.push_str(&s[1..]);
                k
            },
        )
    };
    let args = ["create", "-f", "-"];
    let bad = fails(
        &args,
        c.kubectl_stdin(
            &args,
            &crd(
                "bad.example.com",
                "blobs",
                "[{jsonPath: .spec.tags}, {jsonPath: .metadata.name}, {jsonPath: .spec.nope}, {jsonPath: .spec.size}, {jsonPath: .spec.size}, {jsonPath: spec.size}]",
            ),
        ),
    );
    for expected in [
        "spec.versions[0].selectableFields[0].jsonPath: Invalid value: \".spec.tags\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
        "spec.versions[0].selectableFields[1].jsonPath: Invalid value: \".metadata.name\": is an invalid path: does not refer to a valid field",
        "spec.versions[0].selectableFields[2].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field",
        "spec.versions[0].selectableFields[4].jsonPath: Duplicate value: \".spec.size\"",
        "spec.versions[0].selectableFields[5].jsonPath: Invalid value: \"spec.size\": is an invalid path",
    ] {
        assert!(bad.contains(expected), "{expected}\n{bad}");
    }
    c.apply(&crd(
        "shop.example.com",
        "gadgets",
        "[{jsonPath: .spec.color}, {jsonPath: .spec.size}]",
    ));
    established(&c, "gadgets.shop.example.com");
    for (name, color, size) in [("a", "red", 1), ("b", "blue", 2), ("c", "red", 3)] {
        c.apply(&format!(
            "apiVersion: shop.example.com/v1\nkind: Gadget\nmetadata: {{name: {name}, namespace: default}}\nspec: {{color: {color}, size: {size}}}\n"
        ));
    }
    let names = |selector: &str| {
        c.kubectl_ok(&["get", "gadgets", "--field-selector", selector, "-o", "name"])
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names("spec.color=red"),
        ["gadget.shop.example.com/a", "gadget.shop.example.com/c"]
    );
    assert_eq!(
        names("spec.color=red,spec.size!=1"),
        ["gadget.shop.example.com/c"]
    );
    assert_eq!(names("spec.size=2"), ["gadget.shop.example.com/b"]);
    let err = fails(
        &["get", "gadgets", "--field-selector", "spec.tags=x"],
        c.kubectl(&["get", "gadgets", "--field-selector", "spec.tags=x"]),
    );
    assert!(
        err.contains("field label not supported: spec.tags"),
        "{err}"
    );
    // The custom resource is in OpenAPI v2 too (protobuf, as kubectl reads it).
    let explain = c.kubectl_ok(&[
        "explain",
        "gadgets.spec.color",
        "--output=plaintext-openapiv2",
    ]);
    assert!(
        explain.contains("Gadget") && explain.contains("color"),
        "{explain}"
    );
    let v2 = c.kubectl_ok(&["get", "--raw", "/openapi/v2"]);
    assert!(
        v2.contains(r#""com.example.shop.v1.Gadget""#)
            && v2.contains("/apis/shop.example.com/v1/namespaces/{namespace}/gadgets/{name}"),
        "no Gadget in /openapi/v2"
    );
    // A schema that preserves unknown fields at its root is a bare object in v2, as upstream
    // publishes it (crd_publish_openapi.go's "CRD without validation schema").
    c.apply(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {name: blobs.shop.example.com}\n\
         spec:\n  group: shop.example.com\n  scope: Namespaced\n\
         \x20 names: {plural: blobs, singular: blob, kind: Blob}\n\
         \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n\
         \x20   schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
    );
    established(&c, "blobs.shop.example.com");
    let v2: serde_json::Value = wait_until(Duration::from_secs(30), "Blob in /openapi/v2", || {
        let doc: serde_json::Value =
            serde_json::from_str(&c.kubectl_ok(&["get", "--raw", "/openapi/v2"])).ok()?;
        Some(doc["definitions"]["com.example.shop.v1.Blob"].clone()).filter(|d| !d.is_null())
    });
    assert_eq!(
        v2,
        serde_json::json!({"type": "object", "x-kubernetes-group-version-kind":
            [{"group": "shop.example.com", "kind": "Blob", "version": "v1"}]})
    );
}
