//! networking.k8s.io ServiceCIDRs and IPAddresses and the kube-apiserver identity Lease through
//! kubectl: the default ServiceCIDR `kubernetes`, one IPAddress per Service ClusterIP (gone with
//! its Service, refusing a held address), upstream's validation messages, and the identity
//! Lease with its GC of expired ones.

use std::time::Duration;

use k1s_tests::{TestCluster, fails, ok, wait_until};
use serde_json::Value;

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `kubectl <args>` with `body` on stdin, which must succeed.
fn with_stdin(c: &TestCluster, args: &[&str], body: &str) -> String {
    ok(args, c.kubectl_stdin(args, body))
}

#[test]
fn the_default_service_cidr_is_served_and_ready() {
    let c = TestCluster::start();
    let table = c.kubectl_ok(&["get", "servicecidr", "kubernetes"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "CIDRS", "AGE"], "{table}");
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..2], ["kubernetes", "10.96.0.0/12"], "{table}");
    let obj = json(&c.kubectl_ok(&["get", "servicecidrs", "kubernetes", "-o", "json"]));
    assert_eq!(obj["apiVersion"], "networking.k8s.io/v1");
    let ready = &obj["status"]["conditions"][0];
    assert_eq!(ready["type"], "Ready", "{obj}");
    assert_eq!(ready["status"], "True", "{obj}");
    // The API server makes it Ready; the controller-manager's service-cidr-controller then
    // owns the condition and protects it with its finalizer.
    wait_until(
        Duration::from_secs(30),
        "the service-cidr-controller's finalizer and condition",
        || {
            let obj = json(&c.kubectl_ok(&["get", "servicecidrs", "kubernetes", "-o", "json"]));
            (obj["metadata"]["finalizers"]
                == serde_json::json!(["networking.k8s.io/service-cidr-finalizer"])
                && obj["status"]["conditions"][0]["message"] == "Kubernetes Service CIDR is ready")
                .then_some(())
        },
    );
    // Discovery lists both kinds with upstream's scope and short name.
    let resources = c.kubectl_ok(&[
        "api-resources",
        "--api-group=networking.k8s.io",
        "-o",
        "wide",
    ]);
    let ip_row = resources
        .lines()
        .find(|l| l.starts_with("ipaddresses "))
        .unwrap_or_else(|| panic!("no ipaddresses in {resources}"));
    assert!(
        ip_row.split_whitespace().collect::<Vec<_>>()[..5]
            == [
                "ipaddresses",
                "ip",
                "networking.k8s.io/v1",
                "false",
                "IPAddress"
            ],
        "{ip_row}"
    );
    assert!(resources.contains("servicecidrs"), "{resources}");
}

#[test]
fn a_service_cluster_ip_is_held_by_an_ip_address_until_the_service_goes() {
    let c = TestCluster::start();
    // The `kubernetes` Service's address is held from the start.
    let out = c.kubectl_ok(&["get", "ipaddresses"]);
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "PARENTREF"], "{out}");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[..2]
                == ["10.96.0.1", "services/default/kubernetes"]),
        "{out}"
    );
    c.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let ip = c.kubectl_ok(&["get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"]);
    let addr = json(&c.kubectl_ok(&["get", "ip", ip.as_str(), "-o", "json"]));
    assert_eq!(
        addr["spec"]["parentRef"],
        serde_json::json!({ "group": "", "resource": "services", "namespace": "default", "name": "web" })
    );
    assert_eq!(
        addr["metadata"]["labels"],
        serde_json::json!({ "ipaddress.kubernetes.io/ip-family": "IPv4",
            "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io" })
    );
    // A generated Service name is the one the IPAddress names.
    let made = json(&with_stdin(
        &c,
        &["create", "-f", "-", "-o", "json"],
        r#"{"apiVersion":"v1","kind":"Service","metadata":{"generateName":"gen-"},
            "spec":{"ports":[{"port":80}]}}"#,
    ));
    let gen_ip = made["spec"]["clusterIP"].as_str().expect("clusterIP");
    let gen_addr = json(&c.kubectl_ok(&["get", "ip", gen_ip, "-o", "json"]));
    assert_eq!(
        gen_addr["spec"]["parentRef"]["name"],
        made["metadata"]["name"]
    );
    // Deleting the Service releases its address.
    c.kubectl_ok(&["delete", "service", "web"]);
    let err = fails(&["get ip"], c.kubectl(&["get", "ip", ip.as_str()]));
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
    // A dry run holds nothing.
    c.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "dry",
        "--tcp=80:8080",
        "--clusterip=10.96.7.7",
        "--dry-run=server",
    ]);
    fails(&["get ip dry"], c.kubectl(&["get", "ip", "10.96.7.7"]));
}

/// Upstream's Service update: a type change gets what the new type needs (node ports, a
/// ClusterIP) and gives up what it no longer needs, with the IPAddress following the ClusterIP.
#[test]
fn a_service_changing_type_gets_and_gives_up_its_allocations() {
    let c = TestCluster::start();
    let get =
        |path: &str| c.kubectl_ok(&["get", "service", "web", "-o", &format!("jsonpath={path}")]);
    let patch = |body: &str| {
        c.kubectl_ok(&["patch", "service", "web", "-p", body]);
    };
    c.kubectl_ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let first_ip = get("{.spec.clusterIP}");
    // ClusterIP -> NodePort: a node port from the range, the ClusterIP kept.
    patch(r#"{"spec":{"type":"NodePort"}}"#);
    let node_port: i64 = get("{.spec.ports[0].nodePort}")
        .parse()
        .expect("a nodePort");
    assert!((30000..=32767).contains(&node_port), "{node_port}");
    assert_eq!(get("{.spec.clusterIP}"), first_ip);
    // NodePort -> ClusterIP: the node port goes with the type.
    patch(r#"{"spec":{"type":"ClusterIP"}}"#);
    assert_eq!(get("{.spec.ports[0].nodePort}"), "");
    // -> ExternalName: the ClusterIP goes, and its IPAddress with it.
    patch(r#"{"spec":{"type":"ExternalName","externalName":"example.com"}}"#);
    assert_eq!(get("{.spec.clusterIP}"), "");
    fails(&["get ip"], c.kubectl(&["get", "ip", first_ip.as_str()]));
    // ExternalName -> ClusterIP: a new ClusterIP, held by an IPAddress naming the Service.
    patch(r#"{"spec":{"type":"ClusterIP","externalName":null}}"#);
    let second_ip = get("{.spec.clusterIP}");
    assert!(second_ip.starts_with("10.9"), "{second_ip}");
    let addr = json(&c.kubectl_ok(&["get", "ip", second_ip.as_str(), "-o", "json"]));
    assert_eq!(addr["spec"]["parentRef"]["name"], "web", "{addr}");
    // A node port the client asks for is checked: one already held is refused.
    patch(&format!(
        r#"{{"spec":{{"type":"NodePort","ports":[{{"port":80,"targetPort":8080,"nodePort":{node_port}}}]}}}}"#
    ));
    assert_eq!(get("{.spec.ports[0].nodePort}"), node_port.to_string());
    c.kubectl_ok(&["create", "service", "nodeport", "other", "--tcp=81:8080"]);
    let err = fails(
        &["patch other"],
        c.kubectl(&[
            "patch",
            "service",
            "other",
            "--type=json",
            "-p",
            &format!(r#"[{{"op":"replace","path":"/spec/ports/0/nodePort","value":{node_port}}}]"#),
        ]),
    );
    assert!(err.contains("provided port is already allocated"), "{err}");
}

#[test]
fn a_local_load_balancer_holds_a_health_check_node_port() {
    let c = TestCluster::start();
    let get =
        |path: &str| c.kubectl_ok(&["get", "service", "lb", "-o", &format!("jsonpath={path}")]);
    let patch = |body: &str| c.kubectl(&["patch", "service", "lb", "-p", body]);
    c.kubectl_ok(&["create", "service", "loadbalancer", "lb", "--tcp=80:8080"]);
    assert_eq!(
        get("{.spec.healthCheckNodePort}"),
        "",
        "Cluster policy needs none"
    );
    // externalTrafficPolicy: Local gets one from the node port range, besides the port's own.
    ok(
        &["patch"],
        patch(r#"{"spec":{"externalTrafficPolicy":"Local"}}"#),
    );
    let health: i64 = get("{.spec.healthCheckNodePort}")
        .parse()
        .expect("a healthCheckNodePort");
    assert!((30000..=32767).contains(&health), "{health}");
    assert_ne!(get("{.spec.ports[0].nodePort}"), health.to_string());
    // It cannot change, and another Service cannot ask for it while it is held.
    let err = fails(
        &["patch"],
        patch(r#"{"spec":{"healthCheckNodePort":30999}}"#),
    );
    assert!(
        err.contains("spec.healthCheckNodePort: Forbidden: field is immutable"),
        "{err}"
    );
    let other = format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: other\nspec:\n  type: LoadBalancer\n  externalTrafficPolicy: Local\n  healthCheckNodePort: {health}\n  ports:\n  - port: 80\n"
    );
    let err = fails(
        &["create other"],
        c.kubectl_stdin(&["create", "-f", "-"], &other),
    );
    assert!(
        err.contains(&format!(
            "failed to allocate requested HealthCheck NodePort {health}: provided port is already allocated"
        )),
        "{err}"
    );
    // Back to Cluster: the port is given up and can be asked for again.
    ok(
        &["patch"],
        patch(r#"{"spec":{"externalTrafficPolicy":"Cluster"}}"#),
    );
    assert_eq!(get("{.spec.healthCheckNodePort}"), "");
    let created = c.kubectl_stdin(
        &[
            "create",
            "-f",
            "-",
            "-o",
            "jsonpath={.spec.healthCheckNodePort}",
        ],
        &other,
    );
    assert_eq!(ok(&["create other"], created), health.to_string());
}

#[test]
fn an_address_held_by_an_ip_address_is_not_allocated() {
    let c = TestCluster::start();
    with_stdin(
        &c,
        &["create", "-f", "-"],
        r#"{"apiVersion":"networking.k8s.io/v1","kind":"IPAddress",
            "metadata":{"name":"10.96.100.100"},
            "spec":{"parentRef":{"group":"","resource":"services","namespace":"default","name":"other"}}}"#,
    );
    let args = [
        "create",
        "service",
        "clusterip",
        "taken",
        "--tcp=80:8080",
        "--clusterip=10.96.100.100",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains("spec.clusterIPs[0]: Invalid value: \"10.96.100.100\": failed to allocate IP: provided IP is already allocated"),
        "{err}"
    );
    // The held address was not released by the refusal.
    c.kubectl_ok(&["get", "ip", "10.96.100.100"]);
}

#[test]
fn invalid_service_cidrs_and_ip_addresses_get_upstreams_errors() {
    let c = TestCluster::start();
    let cases = [
        (
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"bits"},
                "spec":{"cidrs":["10.0.0.1/24"]}}"#,
            r#"The ServiceCIDR "bits" is invalid: spec.cidrs[0]: Invalid value: "10.0.0.1/24": must not have bits set beyond the prefix length"#,
        ),
        (
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"empty"},
                "spec":{"cidrs":[]}}"#,
            r#"The ServiceCIDR "empty" is invalid: spec.cidrs: Required value: at least one CIDR required"#,
        ),
        (
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"two"},
                "spec":{"cidrs":["10.0.0.0/24","10.1.0.0/24"]}}"#,
            r#"spec.cidrs: Invalid value: networking.ServiceCIDRSpec{CIDRs:[]string{"10.0.0.0/24", "10.1.0.0/24"}}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"#,
        ),
        (
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"IPAddress","metadata":{"name":"not-an-ip"},
                "spec":{"parentRef":{"resource":"services","name":"x"}}}"#,
            r#"metadata.name: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#,
        ),
        (
            r#"{"apiVersion":"networking.k8s.io/v1","kind":"IPAddress","metadata":{"name":"10.1.2.3"},
                "spec":{}}"#,
            r#"The IPAddress "10.1.2.3" is invalid: spec.parentRef: Required value"#,
        ),
    ];
    for (body, want) in cases {
        let err = fails(
            &["create", body],
            c.kubectl_stdin(&["create", "-f", "-"], body),
        );
        assert!(err.contains(want), "{body}\n{err}");
    }
    // A valid one is created; its CIDRs cannot change afterwards.
    with_stdin(
        &c,
        &["create", "-f", "-"],
        r#"{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"extra"},
            "spec":{"cidrs":["10.200.0.0/16"]}}"#,
    );
    let args = [
        "patch",
        "servicecidr",
        "extra",
        "--type=merge",
        "-p",
        r#"{"spec":{"cidrs":["10.201.0.0/16"]}}"#,
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(r#"spec.cidrs: Invalid value: []string{"10.201.0.0/16"}: field is immutable"#),
        "{err}"
    );
}

fn identity_leases(c: &TestCluster) -> Vec<Value> {
    let list = json(&c.kubectl_ok(&[
        "get",
        "lease",
        "-n",
        "kube-system",
        "-l",
        "apiserver.kubernetes.io/identity=kube-apiserver",
        "-o",
        "json",
    ]));
    list["items"].as_array().cloned().unwrap_or_default()
}

#[test]
fn the_apiserver_identity_lease_is_held_and_renewed() {
    let c = TestCluster::start();
    let lease = wait_until(Duration::from_secs(20), "the identity lease", || {
        identity_leases(&c).into_iter().next()
    });
    let name = lease["metadata"]["name"].as_str().expect("name");
    assert!(name.starts_with("apiserver-") && name.len() == 36, "{name}");
    let holder = lease["spec"]["holderIdentity"].as_str().expect("holder");
    assert!(holder.starts_with(&format!("{name}_")), "{holder}");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 3600);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
    assert_eq!(
        lease["metadata"]["labels"]["kubernetes.io/hostname"],
        host.trim(),
        "{lease}"
    );
    // Renewed every 10 s.
    let first = lease["spec"]["renewTime"].clone();
    wait_until(Duration::from_secs(40), "a renewal", || {
        identity_leases(&c)
            .into_iter()
            .find(|l| l["spec"]["renewTime"] != first)
    });
}

#[test]
fn expired_identity_leases_are_collected_at_start() {
    let data = tempfile::tempdir().expect("tempdir");
    let opts = k1s_tests::StartOptions {
        data_dir: Some(data.path().join("d")),
        ..Default::default()
    };
    let mut c = TestCluster::start_with(opts.clone());
    with_stdin(
        &c,
        &["create", "-f", "-"],
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
            "metadata":{"name":"apiserver-gone","namespace":"kube-system",
              "labels":{"apiserver.kubernetes.io/identity":"kube-apiserver"}},
            "spec":{"holderIdentity":"apiserver-gone_1","leaseDurationSeconds":3600,
              "renewTime":"2020-01-01T00:00:00.000000Z"}}"#,
    );
    with_stdin(
        &c,
        &["create", "-f", "-"],
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
            "metadata":{"name":"not-an-identity","namespace":"kube-system"},
            "spec":{"holderIdentity":"x","leaseDurationSeconds":10,
              "renewTime":"2020-01-01T00:00:00.000000Z"}}"#,
    );
    assert!(c.terminate(Duration::from_secs(20)).is_some());
    let c = TestCluster::start_with(opts);
    wait_until(
        Duration::from_secs(20),
        "the GC of the expired lease",
        || {
            let out = c.kubectl(&["get", "lease", "-n", "kube-system", "apiserver-gone"]);
            (!out.status.success()).then_some(())
        },
    );
    // Other Leases are not identity leases and stay.
    c.kubectl_ok(&["get", "lease", "-n", "kube-system", "not-an-identity"]);
    // This server's own lease is there again.
    wait_until(Duration::from_secs(20), "the identity lease", || {
        identity_leases(&c).into_iter().next()
    });
}

#[test]
fn deleting_a_namespace_releases_its_services_addresses() {
    let c = TestCluster::start();
    c.kubectl_ok(&["create", "namespace", "t1"]);
    c.kubectl_ok(&[
        "-n",
        "t1",
        "create",
        "service",
        "clusterip",
        "a",
        "--tcp=80",
    ]);
    c.kubectl_ok(&["-n", "t1", "create", "service", "nodeport", "b", "--tcp=80"]);
    let held = |c: &TestCluster| {
        c.kubectl_ok(&[
            "get",
            "ip",
            "-o",
            "jsonpath={.items[*].spec.parentRef.namespace}",
        ])
    };
    assert_eq!(held(&c), "default t1 t1");
    c.kubectl_ok(&["delete", "namespace", "t1", "--wait=true", "--timeout=60s"]);
    assert_eq!(held(&c), "default");
}

/// Upstream's IPAddress repair: an address left by a half-done create (its Service never
/// written) is deleted after two passes and can be allocated again; held ones stay.
#[test]
fn an_orphaned_ip_address_is_repaired_away() {
    let c = TestCluster::start_with(k1s_tests::StartOptions {
        extra_args: vec!["--service-ip-repair-interval=1s".into()],
        ..Default::default()
    });
    with_stdin(
        &c,
        &["apply", "-f", "-"],
        "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata:\n  name: 10.96.100.100\n  labels: {ipaddress.kubernetes.io/managed-by: ipallocator.k8s.io}\nspec:\n  parentRef: {group: \"\", resource: services, namespace: default, name: ghost}\n",
    );
    let service = "apiVersion: v1\nkind: Service\nmetadata: {name: ghost}\nspec:\n  clusterIP: 10.96.100.100\n  ports: [{port: 80}]\n";
    let args = ["apply", "-f", "-"];
    let err = fails(&args, c.kubectl_stdin(&args, service));
    assert!(err.contains("provided IP is already allocated"), "{err}");
    wait_until(Duration::from_secs(30), "the orphan deleted", || {
        (!c.kubectl(&["get", "ipaddress", "10.96.100.100"])
            .status
            .success())
        .then_some(())
    });
    with_stdin(&c, &args, service);
    let held = c.kubectl_ok(&[
        "get",
        "ipaddress",
        "10.96.100.100",
        "-o",
        "jsonpath={.spec.parentRef.name}",
    ]);
    assert_eq!(held, "ghost");
    // The `kubernetes` Service's address is held, and stays through further passes.
    std::thread::sleep(Duration::from_secs(3));
    c.kubectl_ok(&["get", "ipaddress", "10.96.0.1"]);
    c.kubectl_ok(&["get", "ipaddress", "10.96.100.100"]);
}

#[test]
fn another_service_cidr_serves_services_and_goes_only_when_its_addresses_are_free() {
    let c = TestCluster::start();
    with_stdin(
        &c,
        &["apply", "-f", "-"],
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: extra}\nspec: {cidrs: [10.200.0.0/24]}\n",
    );
    wait_until(Duration::from_secs(30), "the new ServiceCIDR Ready", || {
        let obj = json(&c.kubectl_ok(&["get", "servicecidr", "extra", "-o", "json"]));
        let ready = &obj["status"]["conditions"][0];
        (ready["type"] == "Ready"
            && ready["status"] == "True"
            && ready["message"] == "Kubernetes Service CIDR is ready"
            && obj["metadata"]["finalizers"][0] == "networking.k8s.io/service-cidr-finalizer")
            .then_some(())
    });
    // An address of the new range can be asked for; one outside every range cannot.
    c.kubectl_ok(&[
        "create",
        "service",
        "clusterip",
        "in-extra",
        "--tcp=80",
        "--clusterip=10.200.0.10",
    ]);
    let ip = json(&c.kubectl_ok(&["get", "ipaddress", "10.200.0.10", "-o", "json"]));
    assert_eq!(ip["spec"]["parentRef"]["name"], "in-extra", "{ip}");
    let args = [
        "create",
        "service",
        "clusterip",
        "outside",
        "--tcp=80",
        "--clusterip=10.201.0.1",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains("the provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12, 10.200.0.0/24"),
        "{err}"
    );
    // Deleting the range while a Service holds one of its addresses leaves it Terminating.
    c.kubectl_ok(&["delete", "servicecidr", "extra", "--wait=false"]);
    wait_until(Duration::from_secs(30), "Ready=False, Terminating", || {
        let obj = json(&c.kubectl_ok(&["get", "servicecidr", "extra", "-o", "json"]));
        let ready = &obj["status"]["conditions"][0];
        (ready["status"] == "False" && ready["reason"] == "Terminating").then_some(())
    });
    // A Terminating range hands out nothing new.
    let args = [
        "create",
        "service",
        "clusterip",
        "late",
        "--tcp=80",
        "--clusterip=10.200.0.11",
    ];
    let err = fails(&args, c.kubectl(&args));
    assert!(err.contains("not in the valid range"), "{err}");
    // Once its addresses are free it goes (after upstream's 10 s grace).
    c.kubectl_ok(&["delete", "service", "in-extra"]);
    wait_until(Duration::from_secs(40), "the ServiceCIDR gone", || {
        let out = c.kubectl(&["get", "servicecidr", "extra"]);
        (!out.status.success()).then_some(())
    });
}
