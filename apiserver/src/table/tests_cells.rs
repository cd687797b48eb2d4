//! Tests: exact cells of realistic workload, service, node, event, storage and other objects.

use serde_json::{Value, json};

use super::row_cells;
use super::tests::{ago, now};

fn cells(group: &str, resource: &str, obj: &Value) -> Vec<Value> {
    row_cells(group, resource, obj, now())
}

#[test]
fn deployment_replica_set_stateful_set_daemon_set() {
    let template = json!({"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"},
            {"name": "log", "image": "fluent-bit:3"}]}});
    let deploy = json!({
        "metadata": {"name": "web", "creationTimestamp": ago(600)},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]},
            "template": template},
        "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2},
    });
    assert_eq!(
        cells("apps", "deployments", &deploy),
        [
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("10m"),
            json!("nginx,log"),
            json!("nginx:1.25,fluent-bit:3"),
            json!("app=web,tier in (be,fe)"),
        ]
    );
    let no_status = json!({"metadata": {"name": "w", "creationTimestamp": ago(5)},
        "spec": {"selector": {}, "template": template}});
    let c = cells("apps", "deployments", &no_status);
    assert_eq!(
        (&c[1], &c[2], &c[3], &c[7]),
        (&json!("0/1"), &json!(0), &json!(0), &json!(""))
    );

    let rs = json!({"metadata": {"name": "web-5d4f", "creationTimestamp": ago(600)},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
        "status": {"replicas": 2, "readyReplicas": 1}});
    assert_eq!(
        cells("apps", "replicasets", &rs),
        [
            json!("web-5d4f"),
            json!(2),
            json!(2),
            json!(1),
            json!("10m"),
            json!("nginx,log"),
            json!("nginx:1.25,fluent-bit:3"),
            json!("app=web")
        ]
    );
    let sts = json!({"metadata": {"name": "db", "creationTimestamp": ago(600)},
        "spec": {"replicas": 3, "template": template}, "status": {"readyReplicas": 3}});
    assert_eq!(
        cells("apps", "statefulsets", &sts),
        [
            json!("db"),
            json!("3/3"),
            json!("10m"),
            json!("nginx,log"),
            json!("nginx:1.25,fluent-bit:3")
        ]
    );
    let mut ds_template = template.clone();
    ds_template["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let ds = json!({"metadata": {"name": "proxy", "creationTimestamp": ago(600)},
        "spec": {"selector": {"matchLabels": {"k8s-app": "proxy"}}, "template": ds_template},
        "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
            "updatedNumberScheduled": 3, "numberAvailable": 2}});
    assert_eq!(
        cells("apps", "daemonsets", &ds),
        [
            json!("proxy"),
            json!(3),
            json!(3),
            json!(2),
            json!(3),
            json!(2),
            json!("kubernetes.io/os=linux"),
            json!("10m"),
            json!("nginx,log"),
            json!("nginx:1.25,fluent-bit:3"),
            json!("k8s-app=proxy")
        ]
    );
}

#[test]
fn services_of_each_type() {
    let svc = |spec: Value, status: Value| json!({"metadata": {"name": "web", "creationTimestamp": ago(3600)}, "spec": spec, "status": status});
    let node_port = svc(
        json!({"type": "NodePort", "clusterIP": "10.96.12.7", "clusterIPs": ["10.96.12.7"],
            "selector": {"app": "web", "tier": "fe"},
            "ports": [{"port": 80, "targetPort": 8080, "nodePort": 30080, "protocol": "TCP"},
                {"port": 443, "targetPort": "https", "nodePort": 30443, "protocol": "TCP"}]}),
        json!({}),
    );
    assert_eq!(
        cells("", "services", &node_port),
        [
            json!("web"),
            json!("NodePort"),
            json!("10.96.12.7"),
            json!("<none>"),
            json!("80:30080/TCP,443:30443/TCP"),
            json!("60m"),
            json!("app=web,tier=fe")
        ]
    );
    let cluster = svc(
        json!({"type": "ClusterIP", "clusterIP": "10.96.0.10",
            "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}),
        json!({}),
    );
    let c = cells("", "services", &cluster);
    assert_eq!(
        (&c[3], &c[4], &c[6]),
        (&json!("<none>"), &json!("53/UDP,53/TCP"), &json!("<none>"))
    );
    let pending = svc(
        json!({"type": "LoadBalancer", "clusterIP": "10.96.1.1",
        "ports": [{"port": 80, "nodePort": 31000, "protocol": "TCP"}]}),
        json!({"loadBalancer": {}}),
    );
    assert_eq!(cells("", "services", &pending)[3], "<pending>");
    let lb = svc(
        json!({"type": "LoadBalancer", "clusterIP": "10.96.1.1", "externalIPs": ["1.2.3.4"]}),
        json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "lb.example.com"}]}}),
    );
    let c = cells("", "services", &lb);
    assert_eq!(
        (&c[3], &c[4]),
        (
            &json!("203.0.113.9,lb.example.com,1.2.3.4"),
            &json!("<none>")
        )
    );
    let external = svc(
        json!({"type": "ExternalName", "externalName": "db.example.com"}),
        json!({}),
    );
    let c = cells("", "services", &external);
    assert_eq!((&c[2], &c[3]), (&json!("<none>"), &json!("db.example.com")));
    let headless = svc(
        json!({"clusterIP": "None", "ports": [{"port": 5432}]}),
        json!({}),
    );
    let c = cells("", "services", &headless);
    assert_eq!(
        (&c[1], &c[2], &c[4]),
        (&json!("ClusterIP"), &json!("None"), &json!("5432/TCP"))
    );
}

#[test]
fn secrets_config_maps_service_accounts_namespaces() {
    let secret = json!({"metadata": {"name": "tls", "creationTimestamp": ago(45)},
        "type": "kubernetes.io/tls", "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"}});
    assert_eq!(
        cells("", "secrets", &secret),
        [
            json!("tls"),
            json!("kubernetes.io/tls"),
            json!(2),
            json!("45s")
        ]
    );
    let opaque = json!({"metadata": {"name": "empty", "creationTimestamp": ago(45)}});
    assert_eq!(
        cells("", "secrets", &opaque)[1..3],
        [json!("Opaque"), json!(0)]
    );
    let cm = json!({"metadata": {"name": "cfg", "creationTimestamp": ago(45)},
        "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(
        cells("", "configmaps", &cm),
        [json!("cfg"), json!(3), json!("45s")]
    );
    let sa = json!({"metadata": {"name": "default", "creationTimestamp": ago(45)}});
    assert_eq!(
        cells("", "serviceaccounts", &sa),
        [json!("default"), json!(0), json!("45s")]
    );
    let ns = json!({"metadata": {"name": "dev", "creationTimestamp": ago(45),
        "deletionTimestamp": ago(1)}, "status": {"phase": "Terminating"}});
    assert_eq!(
        cells("", "namespaces", &ns),
        [json!("dev"), json!("Terminating"), json!("45s")]
    );
}

fn node(labels: Value, ready: &str, unschedulable: bool) -> Value {
    json!({
        "metadata": {"name": "cp-1", "creationTimestamp": ago(30 * 24 * 3600), "labels": labels},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}],
            "addresses": [{"type": "Hostname", "address": "cp-1"}, {"type": "InternalIP", "address": "192.168.1.10"}],
            "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "6.1.0-18-amd64", "containerRuntimeVersion": "containerd://1.7.13"},
        },
    })
}

#[test]
fn node_with_roles_from_labels() {
    let labels = json!({"kubernetes.io/hostname": "cp-1", "node-role.kubernetes.io/control-plane": "",
        "node-role.kubernetes.io/worker": "true", "kubernetes.io/role": "master",
        "node-role.kubernetes.io/": ""});
    assert_eq!(
        cells("", "nodes", &node(labels, "True", false)),
        [
            json!("cp-1"),
            json!("Ready"),
            json!("control-plane,master,worker"),
            json!("30d"),
            json!("v1.33.1"),
            json!("192.168.1.10"),
            json!("<none>"),
            json!("Debian GNU/Linux 12 (bookworm)"),
            json!("6.1.0-18-amd64"),
            json!("containerd://1.7.13")
        ]
    );
    let c = cells("", "nodes", &node(json!({}), "False", true));
    assert_eq!(
        (&c[1], &c[2]),
        (&json!("NotReady,SchedulingDisabled"), &json!("<none>"))
    );
    let mut bare = node(json!(null), "Unknown", false);
    bare["status"]["conditions"] = json!([]);
    bare["status"]["nodeInfo"] = json!({});
    let c = cells("", "nodes", &bare);
    assert_eq!(
        (&c[1], &c[4], &c[7]),
        (&json!("Unknown"), &json!(""), &json!("<unknown>"))
    );
}

#[test]
fn jobs_and_cron_jobs() {
    let job = |spec: Value, status: Value| {
        json!({"metadata": {"name": "pi", "creationTimestamp": ago(400)},
            "spec": spec, "status": status})
    };
    let template = json!({"spec": {"containers": [{"name": "pi", "image": "perl:5.34"}]}});
    let done = job(
        json!({"completions": 1, "parallelism": 1, "template": template,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}}}),
        json!({"succeeded": 1, "startTime": ago(390), "completionTime": ago(355),
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
    );
    assert_eq!(
        cells("batch", "jobs", &done),
        [
            json!("pi"),
            json!("Complete"),
            json!("1/1"),
            json!("35s"),
            json!("6m40s"),
            json!("pi"),
            json!("perl:5.34"),
            json!("batch.kubernetes.io/controller-uid=abc")
        ]
    );
    let work_queue = job(
        json!({"parallelism": 3, "template": template}),
        json!({"succeeded": 1, "startTime": ago(130), "active": 2}),
    );
    let c = cells("batch", "jobs", &work_queue);
    assert_eq!(
        (&c[1], &c[2], &c[3], &c[7]),
        (
            &json!("Running"),
            &json!("1/1 of 3"),
            &json!("2m10s"),
            &json!("<none>")
        )
    );
    let failed = job(
        json!({"completions": 5}),
        json!({"conditions": [{"type": "Failed", "status": "True"}]}),
    );
    let c = cells("batch", "jobs", &failed);
    assert_eq!(
        (&c[1], &c[2], &c[3]),
        (&json!("Failed"), &json!("0/5"), &json!(""))
    );

    let cron = json!({"metadata": {"name": "backup", "creationTimestamp": ago(86400 * 3)},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}},
        "status": {"active": [{"name": "backup-1"}], "lastScheduleTime": ago(62)}});
    assert_eq!(
        cells("batch", "cronjobs", &cron),
        [
            json!("backup"),
            json!("*/5 * * * *"),
            json!("<none>"),
            json!("False"),
            json!(1),
            json!("62s"),
            json!("3d"),
            json!("pi"),
            json!("perl:5.34"),
            json!("<none>")
        ]
    );
    let tz = json!({"metadata": {"name": "b"}, "spec": {"schedule": "@daily", "timeZone": "Etc/UTC",
        "suspend": true}});
    let c = cells("batch", "cronjobs", &tz);
    assert_eq!(
        (&c[2], &c[3], &c[5], &c[6]),
        (
            &json!("Etc/UTC"),
            &json!("True"),
            &json!("<none>"),
            &json!("<unknown>")
        )
    );
}

#[test]
fn core_and_new_events() {
    let core = json!({"metadata": {"name": "web-1.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled", "type": "Normal", "message": "Successfully pulled image\n",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ago(600), "lastTimestamp": ago(30), "count": 4});
    assert_eq!(
        cells("", "events", &core),
        [
            json!("30s"),
            json!("Normal"),
            json!("Pulled"),
            json!("pod/web-1"),
            json!("spec.containers{app}"),
            json!("kubelet, node-1"),
            json!("Successfully pulled image"),
            json!("10m"),
            json!(4),
            json!("web-1.17a")
        ]
    );
    let new_api = json!({"metadata": {"name": "e"}, "regarding": {"kind": "Node", "name": "n1"},
        "reason": "Starting", "type": "Normal", "note": "Starting kubelet.",
        "reportingController": "kubelet", "reportingInstance": "n1", "eventTime": "2024-05-01T11:58:59.123456Z"});
    assert_eq!(
        cells("events.k8s.io", "events", &new_api),
        [
            json!("60s"),
            json!("Normal"),
            json!("Starting"),
            json!("node/n1"),
            json!(""),
            json!("kubelet, n1"),
            json!("Starting kubelet."),
            json!("60s"),
            json!(1),
            json!("e")
        ]
    );
    let series = json!({"metadata": {"name": "s"}, "involvedObject": {"kind": "Node"},
        "reportingComponent": "scheduler", "eventTime": ago(3600),
        "series": {"count": 12, "lastObservedTime": ago(5)}});
    let c = cells("", "events", &series);
    assert_eq!(
        (&c[0], &c[3], &c[5], &c[7], &c[8]),
        (
            &json!("5s"),
            &json!("node"),
            &json!("scheduler"),
            &json!("60m"),
            &json!(12)
        )
    );
}

#[test]
fn bindings_leases_and_controller_revisions() {
    let rb = json!({"metadata": {"name": "admins", "creationTimestamp": ago(100)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
            {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}]});
    assert_eq!(
        cells("rbac.authorization.k8s.io", "rolebindings", &rb),
        [
            json!("admins"),
            json!("ClusterRole/admin"),
            json!("100s"),
            json!("alice, bob"),
            json!("devs"),
            json!("tools/ci")
        ]
    );
    let lease = json!({"metadata": {"name": "kube-scheduler", "creationTimestamp": ago(100)},
        "spec": {"holderIdentity": "cp-1_1234", "leaseDurationSeconds": 15}});
    assert_eq!(
        cells("coordination.k8s.io", "leases", &lease),
        [json!("kube-scheduler"), json!("cp-1_1234"), json!("100s")]
    );
    let cr = json!({"metadata": {"name": "web-7f9", "creationTimestamp": ago(100), "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": true}]},
        "revision": 2});
    assert_eq!(
        cells("apps", "controllerrevisions", &cr),
        [
            json!("web-7f9"),
            json!("statefulset.apps/web"),
            json!(2),
            json!("100s")
        ]
    );
}

#[test]
fn volumes_claims_and_storage_classes() {
    let pvc = json!({"metadata": {"name": "data", "creationTimestamp": ago(100)},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "standard", "volumeName": "pvc-123", "volumeMode": "Filesystem"},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany"],
            "capacity": {"storage": "1Gi"}}});
    assert_eq!(
        cells("", "persistentvolumeclaims", &pvc),
        [
            json!("data"),
            json!("Bound"),
            json!("pvc-123"),
            json!("1Gi"),
            json!("RWO,ROX,RWOP"),
            json!("standard"),
            json!("<unset>"),
            json!("100s"),
            json!("Filesystem")
        ]
    );
    let pv = json!({"metadata": {"name": "pvc-123", "creationTimestamp": ago(100),
            "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete", "claimRef": {"namespace": "default", "name": "data"},
            "storageClassName": "standard"},
        "status": {"phase": "Bound"}});
    assert_eq!(
        cells("", "persistentvolumes", &pv),
        [
            json!("pvc-123"),
            json!("1Gi"),
            json!("RWO"),
            json!("Delete"),
            json!("Bound"),
            json!("default/data"),
            json!("legacy"),
            json!("<unset>"),
            json!(""),
            json!("100s"),
            json!("Filesystem")
        ]
    );
    let sc = json!({"metadata": {"name": "standard", "creationTimestamp": ago(100),
        "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
    assert_eq!(
        cells("storage.k8s.io", "storageclasses", &sc),
        [
            json!("standard (default)"),
            json!("rancher.io/local-path"),
            json!("Delete"),
            json!("WaitForFirstConsumer"),
            json!(false),
            json!("100s")
        ]
    );
}

#[test]
fn hpa_pdb_quota_endpoints_ingress_csr_apiservice() {
    let hpa = json!({"metadata": {"name": "web", "creationTimestamp": ago(100)},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
        "status": {"currentReplicas": 3, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "90m"}}}]}});
    assert_eq!(
        cells("autoscaling", "horizontalpodautoscalers", &hpa),
        [
            json!("web"),
            json!("Deployment/web"),
            json!("cpu: 45%/60%, memory: <unknown>/500Mi + 1 more..."),
            json!("2"),
            json!(10),
            json!(3),
            json!("100s")
        ]
    );
    let v1 = json!({"metadata": {"name": "v1"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"},
        "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
    let c = cells("autoscaling", "horizontalpodautoscalers", &v1);
    assert_eq!(
        (&c[2], &c[3]),
        (&json!("cpu: <unknown>/50%"), &json!("<unset>"))
    );

    let pdb = json!({"metadata": {"name": "web", "creationTimestamp": ago(100)},
        "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
    assert_eq!(
        cells("policy", "poddisruptionbudgets", &pdb),
        [
            json!("web"),
            json!("50%"),
            json!("N/A"),
            json!(1),
            json!("100s")
        ]
    );

    let quota = json!({"metadata": {"name": "q", "creationTimestamp": ago(100)},
        "status": {"hard": {"pods": "10", "limits.cpu": "4", "requests.cpu": "2", "limits.memory": "8Gi"},
            "used": {"pods": "3", "requests.cpu": "500m"}}});
    assert_eq!(
        cells("", "resourcequotas", &quota),
        [
            json!("q"),
            json!("pods: 3/10, requests.cpu: 500m/2"),
            json!("limits.cpu: 0/4, limits.memory: 0/8Gi"),
            json!("100s")
        ]
    );

    let ep = json!({"metadata": {"name": "web", "creationTimestamp": ago(100)}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}],
            "ports": [{"port": 8080}, {"port": 9090}]}]});
    assert_eq!(
        cells("", "endpoints", &ep)[1],
        "10.0.0.1:8080,10.0.0.2:8080,[fd00::3]:8080 + 3 more..."
    );
    let empty_ep = json!({"metadata": {"name": "e"}});
    assert_eq!(cells("", "endpoints", &empty_ep)[1], "<none>");
    let slice = json!({"metadata": {"name": "web-abc", "creationTimestamp": ago(100)}, "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080}, {"name": "metrics"}],
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]});
    assert_eq!(
        cells("discovery.k8s.io", "endpointslices", &slice),
        [
            json!("web-abc"),
            json!("IPv4"),
            json!("8080,metrics"),
            json!("10.0.0.1,10.0.0.2"),
            json!("100s")
        ]
    );

    let ing = json!({"metadata": {"name": "web", "creationTimestamp": ago(100)},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}],
            "tls": [{"hosts": ["a.example.com"]}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "192.168.1.240"}]}}});
    assert_eq!(
        cells("networking.k8s.io", "ingresses", &ing),
        [
            json!("web"),
            json!("nginx"),
            json!("a.example.com,b.example.com"),
            json!("192.168.1.240"),
            json!("80, 443"),
            json!("100s")
        ]
    );

    let csr = json!({"metadata": {"name": "csr-x", "creationTimestamp": ago(100)},
        "spec": {"signerName": "kubernetes.io/kube-apiserver-client-kubelet", "username": "system:node:n1",
            "expirationSeconds": 86400},
        "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}});
    assert_eq!(
        cells("certificates.k8s.io", "certificatesigningrequests", &csr),
        [
            json!("csr-x"),
            json!("100s"),
            json!("kubernetes.io/kube-apiserver-client-kubelet"),
            json!("system:node:n1"),
            json!("24h"),
            json!("Approved,Issued")
        ]
    );

    let apisvc = json!({"metadata": {"name": "v1beta1.metrics.k8s.io", "creationTimestamp": ago(100)},
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
    assert_eq!(
        cells("apiregistration.k8s.io", "apiservices", &apisvc),
        [
            json!("v1beta1.metrics.k8s.io"),
            json!("kube-system/metrics-server"),
            json!("False (MissingEndpoints)"),
            json!("100s")
        ]
    );
    let local = json!({"metadata": {"name": "v1.apps"}, "spec": {},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
    assert_eq!(
        cells("apiregistration.k8s.io", "apiservices", &local)[1..3],
        [json!("Local"), json!("True")]
    );
}
