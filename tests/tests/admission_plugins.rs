//! The admission plugins kube-apiserver enables by default, through kubectl: DefaultStorageClass,
//! StorageObjectInUseProtection (with the pv- and pvc-protection controllers),
//! PersistentVolumeClaimResize, DefaultIngressClass, TaintNodesByCondition, RuntimeClass and the
//! CertificateSigningRequest plugins.

use std::time::Duration;

use base64::Engine as _;
use k1s_tests::{TestCluster, csr_pem, fails, wait_until};

fn get(c: &TestCluster, args: &[&str]) -> String {
    c.kubectl_ok(args).trim().to_string()
}

#[test]
fn claims_get_the_default_class_and_stay_while_a_pod_uses_them() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: older\n  \
         annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}\n\
         provisioner: example.com/none\n",
    );
    std::thread::sleep(Duration::from_millis(1100));
    // Of two defaults the newest wins (upstream's GetDefaultClass).
    c.apply(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: newer\n  \
         annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}\n\
         provisioner: example.com/none\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  \
         accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: classless}\nspec:\n  \
         storageClassName: \"\"\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n---\n\
         apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: vol}\nspec:\n  \
         storageClassName: unclaimed\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  \
         hostPath: {path: /tmp/vol}\n",
    );
    let class = |name: &str| {
        get(
            &c,
            &[
                "get",
                "pvc",
                name,
                "-o",
                "jsonpath={.spec.storageClassName}",
            ],
        )
    };
    assert_eq!(class("data"), "newer");
    assert_eq!(class("classless"), "", "an explicit empty class is kept");
    assert_eq!(
        get(
            &c,
            &[
                "get",
                "pvc",
                "data",
                "-o",
                "jsonpath={.metadata.finalizers}"
            ]
        ),
        r#"["kubernetes.io/pvc-protection"]"#
    );
    assert_eq!(
        get(
            &c,
            &["get", "pv", "vol", "-o", "jsonpath={.metadata.finalizers}"]
        ),
        r#"["kubernetes.io/pv-protection"]"#
    );
    // An unbound volume (no claim asks for its class) goes at once.
    c.kubectl_ok(&["delete", "pv", "vol", "--timeout=30s"]);
    // A claim a scheduled pod uses stays Terminating until the pod is gone.
    c.apply(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: user}\nspec:\n  nodeName: k1s-node-0\n  \
         containers: [{name: c, image: nginx}]\n  \
         volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]\n",
    );
    c.kubectl_ok(&["delete", "pvc", "data", "--wait=false"]);
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        get(
            &c,
            &[
                "get",
                "pvc",
                "data",
                "-o",
                "jsonpath={.metadata.deletionTimestamp}"
            ]
        )
        .starts_with("20"),
        "the claim is kept while the pod uses it"
    );
    c.kubectl_ok(&["delete", "pod", "user", "--grace-period=0", "--force"]);
    wait_until(Duration::from_secs(30), "the claim to go", || {
        let out = c.kubectl(&["get", "pvc", "data"]);
        (!out.status.success()).then_some(())
    });
}

#[test]
fn a_claim_grows_only_when_bound_and_its_class_allows_it() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fixed}\n\
         provisioner: example.com/none\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  \
         storageClassName: fixed\n  accessModes: [ReadWriteOnce]\n  \
         resources: {requests: {storage: 1Gi}}\n",
    );
    c.kubectl_ok(&[
        "patch",
        "pvc",
        "data",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Bound"}}"#,
    ]);
    let grow = ["patch", "pvc", "data", "--type=merge", "-p"];
    let body = r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#;
    let args: Vec<&str> = grow.iter().copied().chain([body]).collect();
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(
            "persistentvolumeclaims \"data\" is forbidden: only dynamically provisioned pvc can \
             be resized and the storageclass that provisions the pvc must support resize"
        ),
        "{err}"
    );
    c.kubectl_ok(&[
        "patch",
        "storageclass",
        "fixed",
        "--type=merge",
        "-p",
        r#"{"allowVolumeExpansion":true}"#,
    ]);
    c.kubectl_ok(&args);
    assert_eq!(
        get(
            &c,
            &[
                "get",
                "pvc",
                "data",
                "-o",
                "jsonpath={.spec.resources.requests.storage}"
            ]
        ),
        "2Gi"
    );
}

#[test]
fn ingresses_get_the_default_ingress_class() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: main\n  \
         annotations: {ingressclass.kubernetes.io/is-default-class: \"true\"}\n\
         spec: {controller: example.com/ingress}\n",
    );
    c.kubectl_ok(&["create", "ingress", "web", "--rule=example.com/=web:80"]);
    assert_eq!(
        get(
            &c,
            &[
                "get",
                "ingress",
                "web",
                "-o",
                "jsonpath={.spec.ingressClassName}"
            ]
        ),
        "main"
    );
    c.apply(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: second\n  \
         annotations: {ingressclass.kubernetes.io/is-default-class: \"true\"}\n\
         spec: {controller: example.com/ingress}\n",
    );
    let args = ["create", "ingress", "api", "--rule=example.com/api=api:80"];
    let err = fails(&args, c.kubectl(&args));
    assert!(
        err.contains(
            "ingresses.networking.k8s.io \"api\" is forbidden: Internal error occurred: 2 default \
             IngressClasses were found, only 1 allowed"
        ),
        "{err}"
    );
}

#[test]
fn a_new_node_starts_tainted_not_ready() {
    let c = TestCluster::start();
    let out = c.kubectl_stdin(
        &["create", "-f", "-", "-o", "jsonpath={.spec.taints}"],
        "apiVersion: v1\nkind: Node\nmetadata: {name: fresh}\n",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        r#"[{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"}]"#
    );
}

#[test]
fn pods_get_their_runtime_class_overhead_and_scheduling() {
    let c = TestCluster::start();
    c.apply(
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: sandboxed}\nhandler: runsc\n\
         overhead: {podFixed: {cpu: 250m, memory: 120Mi}}\nscheduling:\n  \
         nodeSelector: {sandbox: \"true\"}\n  \
         tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]\n",
    );
    let pod = |name: &str, extra: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  \
             containers: [{{name: c, image: nginx}}]\n{extra}"
        )
    };
    c.apply(&pod("sandboxed", "  runtimeClassName: sandboxed\n"));
    let field = |path: &str| {
        get(
            &c,
            &["get", "pod", "sandboxed", "-o", &format!("jsonpath={path}")],
        )
    };
    assert_eq!(
        field("{.spec.overhead}"),
        r#"{"cpu":"250m","memory":"120Mi"}"#
    );
    assert_eq!(field("{.spec.nodeSelector}"), r#"{"sandbox":"true"}"#);
    assert!(
        field("{.spec.tolerations}")
            .contains(r#"{"effect":"NoSchedule","key":"sandbox","operator":"Exists"}"#)
    );
    let args = ["apply", "-f", "-"];
    let missing = fails(
        &args,
        c.kubectl_stdin(&args, &pod("lost", "  runtimeClassName: gone\n")),
    );
    assert!(
        missing
            .contains("pods \"lost\" is forbidden: pod rejected: RuntimeClass \"gone\" not found"),
        "{missing}"
    );
    let overhead = fails(
        &args,
        c.kubectl_stdin(&args, &pod("heavy", "  overhead: {cpu: 1}\n")),
    );
    assert!(
        overhead.contains(
            "pods \"heavy\" is forbidden: pod rejected: Pod Overhead set without corresponding \
             RuntimeClass defined Overhead"
        ),
        "{overhead}"
    );
    let conflict = fails(
        &args,
        c.kubectl_stdin(
            &args,
            &pod(
                "torn",
                "  runtimeClassName: sandboxed\n  nodeSelector: {sandbox: \"no\"}\n",
            ),
        ),
    );
    assert!(
        conflict.contains(
            "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; \
             pod.spec.nodeSelector[sandbox] = no"
        ),
        "{conflict}"
    );
}

fn csr_yaml(name: &str, pem: &str, signer: &str) -> String {
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}}}\n\
         spec:\n  request: {request}\n  signerName: {signer}\n  usages: [client auth]\n"
    )
}

#[test]
fn signing_requests_need_signer_permissions_and_no_masters() {
    let c = TestCluster::start();
    // CertificateSubjectRestriction.
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "root");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:masters");
    let masters = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    let args = ["create", "-f", "-"];
    let err = fails(
        &args,
        c.kubectl_stdin(
            &args,
            &csr_yaml("masters", &masters, "kubernetes.io/kube-apiserver-client"),
        ),
    );
    assert!(
        err.contains(
            "certificatesigningrequests.certificates.k8s.io \"masters\" is forbidden: use of \
             kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
        ),
        "{err}"
    );
    // CertificateApproval: jane may update approvals but approve for no signer.
    c.apply(&csr_yaml(
        "jane-csr",
        &csr_pem("jane"),
        "kubernetes.io/kube-apiserver-client",
    ));
    c.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: approver}\n\
         rules:\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests]\n  \
         verbs: [get, list]\n- apiGroups: [certificates.k8s.io]\n  \
         resources: [certificatesigningrequests/approval]\n  verbs: [update]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: approver}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: approver}\n\
         subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]\n",
    );
    let approve = ["certificate", "approve", "jane-csr", "--as=jane"];
    let err = fails(&approve, c.kubectl(&approve));
    assert!(
        err.contains(
            "certificatesigningrequests.certificates.k8s.io \"jane-csr\" is forbidden: user not \
             permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""
        ),
        "{err}"
    );
    // `approve` on `<domain>/*` is enough.
    c.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: signers}\n\
         rules:\n- apiGroups: [certificates.k8s.io]\n  resources: [signers]\n  \
         resourceNames: [\"kubernetes.io/*\"]\n  verbs: [approve]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: signers}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: signers}\n\
         subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]\n",
    );
    c.kubectl_ok(&approve);
}
