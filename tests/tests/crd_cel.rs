//! CEL validation rules of CustomResourceDefinitions (`x-kubernetes-validations`) through the real
//! server with kubectl: rules with messages, messageExpression, reason and fieldPath; a
//! transition rule refusing a decrease; status rules on the status subresource; rules using
//! Kubernetes' quantity, regex, sets, URL, CIDR and format libraries; and bad rules
//! refused at CRD creation with nothing stored, all with upstream's messages.

use k1s_tests::{TestCluster, fails, stderr};

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.cel.example.com
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "self.metadata.name.startsWith('w')"
          message: "name must start with w"
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.replicas <= self.maxReplicas"
              message: "replicas must be <= maxReplicas"
            - rule: "self.replicas >= oldSelf.replicas"
              message: "replicas may not decrease"
            - rule: "!has(self.tier) || self.tier in ['gold', 'silver']"
              messageExpression: "'tier ' + self.tier + ' is not offered'"
            - rule: "self.tags.all(t, t.lowerAscii() == t)"
              reason: FieldValueForbidden
              fieldPath: ".tags"
              message: "tags must be lower case"
            properties:
              replicas: {type: integer}
              maxReplicas: {type: integer}
              tier: {type: string, maxLength: 16}
              tags:
                type: array
                maxItems: 8
                default: []
                items: {type: string, maxLength: 32}
          status:
            type: object
            x-kubernetes-validations:
            - rule: "self.health == 'ok' || self.health == 'unhealthy'"
            properties:
              health: {type: string, maxLength: 16}
"#;

fn widget(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: cel.example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}"
    )
}

fn refused(c: &TestCluster, args: &[&str], stdin: &str) -> String {
    let out = c.kubectl_stdin(args, stdin);
    fails(args, out)
}

#[test]
fn validation_rules_with_kubectl() {
    let c = TestCluster::start();
    c.apply(WIDGETS);
    c.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.cel.example.com",
        "--timeout=20s",
    ]);

    // A valid object passes every rule.
    c.apply(&widget(
        "w1",
        "  replicas: 2\n  maxReplicas: 5\n  tier: gold\n  tags: [a, b]\n",
    ));

    // The message of a failing rule, with the node's path and type.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &widget("w2", "  replicas: 9\n  maxReplicas: 5\n"),
    );
    assert!(
        err.contains(r#"The Widget "w2" is invalid: spec: Invalid value: "object": replicas must be <= maxReplicas"#),
        "{err}"
    );
    // messageExpression.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &widget("w3", "  replicas: 1\n  maxReplicas: 5\n  tier: bronze\n"),
    );
    assert!(
        err.contains(r#"spec: Invalid value: "object": tier bronze is not offered"#),
        "{err}"
    );
    // reason and fieldPath.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &widget("w4", "  replicas: 1\n  maxReplicas: 5\n  tags: [Upper]\n"),
    );
    assert!(
        err.contains("spec.tags: Forbidden: tags must be lower case"),
        "{err}"
    );
    // A rule at the root sees metadata.name.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &widget("x1", "  replicas: 1\n  maxReplicas: 5\n"),
    );
    assert!(
        err.contains(
            r#"The Widget "x1" is invalid: <nil>: Invalid value: "object": name must start with w"#
        ),
        "{err}"
    );
    // Nothing of the refused objects was stored.
    let names = c.kubectl_ok(&["get", "widgets", "-o", "name"]);
    assert_eq!(names.trim(), "widget.cel.example.com/w1");

    // The transition rule: an increase is fine, a decrease is refused on update, patch included.
    c.kubectl_ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    let args = [
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":1}}"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(r#"spec: Invalid value: "object": replicas may not decrease"#),
        "{err}"
    );
    assert_eq!(
        c.kubectl_ok(&["get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"]),
        "3"
    );
    // Server-side apply goes through the same rules.
    let err = refused(
        &c,
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        &widget(
            "w1",
            "  replicas: 2\n  maxReplicas: 5\n  tier: gold\n  tags: [a, b]\n",
        ),
    );
    assert!(err.contains("replicas may not decrease"), "{err}");

    // The status subresource runs the rules of status (upstream's e2e case).
    let args = [
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"health":"bad"}}"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(r#"status: Invalid value: "object": failed rule: self.health == 'ok' || self.health == 'unhealthy'"#),
        "{err}"
    );
    c.kubectl_ok(&[
        "patch",
        "widget",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"health":"ok"}}"#,
    ]);
}

#[test]
fn bad_rules_are_refused_at_crd_creation() {
    let c = TestCluster::start();
    let crd = |name: &str, rule: &str, extra: &str| {
        format!(
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {name}s.bad.example.com
spec:
  group: bad.example.com
  scope: Namespaced
  names: {{plural: {name}s, singular: {name}, kind: K{name}}}
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
            x-kubernetes-validations:
            - rule: "{rule}"
{extra}
            properties:
              x: {{type: integer}}
              list: {{type: array, items: {{type: string}}}}
"#
        )
    };
    // upstream's e2e: a rule on a field that does not exist.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &crd("missing", "self.z == 100", ""),
    );
    assert!(
        err.contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"self.z == 100\": compilation failed: ERROR: <input>:1:5: undefined field 'z'"),
        "{err}"
    );
    // A syntax error.
    let err = refused(&c, &["apply", "-f", "-"], &crd("syntax", "self.x >", ""));
    assert!(err.contains("x-kubernetes-validations[0].rule: Invalid value: \"self.x >\": compilation failed: ERROR: <input>:1:"), "{err}");
    // An unsupported reason.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &crd("reason", "self.x > 0", "              reason: Sometimes"),
    );
    assert!(
        err.contains("x-kubernetes-validations[0].reason: Unsupported value: \"Sometimes\""),
        "{err}"
    );
    // A messageExpression that does not compile.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &crd(
            "msgexpr",
            "self.x > 0",
            "              messageExpression: \"self.nope\"",
        ),
    );
    assert!(
        err.contains("x-kubernetes-validations[0].messageExpression: Invalid value: \"self.nope\": messageExpression compilation failed"),
        "{err}"
    );
    // Nested iteration over unbounded lists exceeds the estimated cost budget.
    let err = refused(
        &c,
        &["apply", "-f", "-"],
        &crd(
            "costly",
            "self.list.all(a, self.list.all(b, a != b || true))",
            "",
        ),
    );
    assert!(
        err.contains("x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of"),
        "{err}"
    );
    // Nothing was stored.
    let out = c.kubectl(&["get", "crd", "-o", "name"]);
    assert!(!stderr(&out).contains("panic"));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("bad.example.com"),
        "{out:?}"
    );
}

/// Rules using Kubernetes' CEL libraries: quantity, regex, sets, URL, IP and CIDR.
const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.cel.example.com
spec:
  group: cel.example.com
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
            x-kubernetes-validations:
            - rule: "quantity(self.memory).isLessThan(quantity('1Gi'))"
              message: "memory must be below 1Gi"
            - rule: "self.image.find('[0-9]+$') != ''"
              message: "image must end in a version"
            - rule: "sets.contains(['a', 'b', 'c'], self.tags)"
              message: "unknown tag"
            - rule: "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'"
              message: "endpoint must be an https URL"
            - rule: "cidr(self.net).containsIP(self.addr)"
              message: "addr must be in net"
            - rule: "!format.dns1123Label().validate(self.host).hasValue()"
              messageExpression: "format.dns1123Label().validate(self.host).value().join(', ')"
            properties:
              memory: {type: string, maxLength: 32}
              image: {type: string, maxLength: 128}
              tags: {type: array, maxItems: 8, items: {type: string, maxLength: 16}}
              endpoint: {type: string, maxLength: 256}
              net: {type: string, maxLength: 64}
              addr: {type: string, maxLength: 64}
              host: {type: string, maxLength: 63}
"#;

fn gadget(name: &str, change: (&str, &str)) -> String {
    let mut fields = vec![
        ("memory", "512Mi"),
        ("image", "app-12"),
        ("tags", "[a, c]"),
        ("endpoint", "https://example.com:8443/hook"),
        ("net", "10.0.0.0/8"),
        ("addr", "10.1.2.3"),
        ("host", "web-1"),
    ];
    for f in &mut fields {
        if f.0 == change.0 {
            f.1 = change.1;
        }
    }
    let spec: String = fields
        .iter()
        // Lists are flow YAML, scalars quoted strings.
        .map(|(k, v)| {
            if v.starts_with('[') {
                format!("  {k}: {v}\n")
            } else {
                format!("  {k}: {v:?}\n")
            }
        })
        .collect();
    format!(
        "apiVersion: cel.example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\nspec:\n{spec}"
    )
}

#[test]
fn kubernetes_cel_libraries_with_kubectl() {
    let c = TestCluster::start();
    c.apply(GADGETS);
    c.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gadgets.cel.example.com",
        "--timeout=20s",
    ]);
    // Accepted: every library's rule holds.
    c.apply(&gadget("g1", ("", "")));
    c.apply(&gadget("g2", ("memory", "0.5Gi")));

    let cases = [
        ("memory", "2Gi", "memory must be below 1Gi"),
        (
            "memory",
            "lots",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: memory must be below 1Gi",
        ),
        ("image", "app-latest", "image must end in a version"),
        ("tags", "[a, z]", "unknown tag"),
        (
            "endpoint",
            "http://example.com",
            "endpoint must be an https URL",
        ),
        ("endpoint", "example.com", "endpoint must be an https URL"),
        ("addr", "192.168.1.1", "addr must be in net"),
        (
            "host",
            "Web_1",
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        (
            "net",
            "10.0.0.0",
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/' evaluating rule: addr must be in net",
        ),
    ];
    for (i, (field, value, message)) in cases.iter().enumerate() {
        let name = format!("bad{i}");
        let err = refused(&c, &["apply", "-f", "-"], &gadget(&name, (field, value)));
        assert!(
            err.contains(&format!(
                r#"The Gadget "{name}" is invalid: spec: Invalid value: "object": {message}"#
            )),
            "{field}={value}: {err}"
        );
    }
    let names = c.kubectl_ok(&["get", "gadgets", "-o", "name"]);
    assert_eq!(
        names.trim(),
        "gadget.cel.example.com/g1\ngadget.cel.example.com/g2"
    );
}
