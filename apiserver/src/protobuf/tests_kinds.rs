//! Per-kind round trips JSON -> protobuf -> JSON of the protobuf codec.

use serde_json::{Value, json};

use super::*;

fn round_trip(obj: &Value) -> Result<Value, ProtobufError> {
    let body = encode_object(obj)?;
    assert!(body.starts_with(b"k8s\0"));
    decode_object(&body)
}

fn assert_round_trip(obj: Value) -> Result<(), ProtobufError> {
    let back = round_trip(&obj)?;
    assert_eq!(back, obj, "\n{}\n!=\n{}", back, obj);
    Ok(())
}

/// A Pod with most kinds of field: maps, lists, Quantities, IntOrStrings, inline volume
/// sources, embedded FieldsV1 JSON, times, pointer fields holding zero values.
pub(super) fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "default",
            "uid": "6b7e0a0e-3d0c-4a56-9a0e-1f1f1f1f1f1f",
            "resourceVersion": "42",
            "generation": 1,
            "creationTimestamp": "2026-11-21T09:49:06Z",
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"note": "héllo ✓"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                "uid": "u-1", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["example.com/keep"],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
                "time": "2026-11-21T09:49:06Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]
        },
        "spec": {
            "containers": [{
                "name": "web",
                "image": "nginx:1.27",
                "command": ["nginx"],
                "args": ["-g", "daemon off;"],
                "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"},
                        {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                            "fieldPath": "metadata.name"}}},
                        {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k",
                            "optional": false}}}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                              "requests": {"cpu": "250m", "memory": "64Mi"}},
                "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                    "initialDelaySeconds": 3, "periodSeconds": 10, "timeoutSeconds": 1,
                    "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"tcpSocket": {"port": 80}},
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "securityContext": {"runAsUser": 0, "runAsNonRoot": false,
                    "readOnlyRootFilesystem": false, "capabilities": {"drop": ["ALL"]}}
            }],
            "volumes": [
                {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420,
                    "items": [{"key": "a", "path": "a.txt"}]}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "nodeName": "node-1",
            "serviceAccountName": "default",
            "automountServiceAccountToken": false,
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
            "securityContext": {},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/os",
                    "operator": "In", "values": ["linux"]}]}]}}}
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True",
                "lastTransitionTime": "2026-11-21T09:49:07Z"}],
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.244.0.5",
            "podIPs": [{"ip": "10.244.0.5"}, {"ip": "fd00::5"}],
            "startTime": "2026-11-21T09:49:06Z",
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0,
                "image": "nginx:1.27", "imageID": "docker.io/library/nginx@sha256:abc",
                "containerID": "containerd://abc", "started": true,
                "state": {"running": {"startedAt": "2026-11-21T09:49:07Z"}}, "lastState": {}}],
            "qosClass": "Burstable"
        }
    })
}

/// A CustomResourceDefinition whose schema uses every JSONSchemaProps special form.
pub(super) fn crd() -> Value {
    let spec_properties = json!({
        "size": {"type": "integer", "minimum": 0, "maximum": 10.5, "default": 1},
        "mode": {"type": "string", "enum": ["a", "b", 3, null], "pattern": "^[a-z]+$"},
        "port": {"x-kubernetes-int-or-string": true,
                 "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "closed": {"type": "object", "additionalProperties": false},
        "ref": {"$ref": "#/definitions/thing"},
        "entries": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
    });
    let schema = json!({
        "type": "object",
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "required": ["size"],
                "properties": spec_properties,
                "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}},
                "x-kubernetes-validations": [{"rule": "self.size <= 10", "message": "too big"}]
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    });
    let version = json!({
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
            "statusReplicasPath": ".status.size"}},
        "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList", "shortNames": ["wd"]},
            "scope": "Namespaced",
            "versions": [version],
            "conversion": {"strategy": "None"}
        },
        "status": {
            "conditions": [{"type": "Established", "status": "True",
                "lastTransitionTime": "2026-11-21T09:49:06Z", "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted"}],
            "acceptedNames": {"plural": "widgets", "kind": "Widget"},
            "storedVersions": ["v1"]
        }
    })
}

#[test]
fn pod_round_trips() -> Result<(), ProtobufError> {
    assert_round_trip(pod())
}

#[test]
fn crd_round_trips() -> Result<(), ProtobufError> {
    assert_round_trip(crd())
}

#[test]
fn nulls_and_json_only_keys_are_dropped() -> Result<(), ProtobufError> {
    let mut obj = pod();
    obj["metadata"]["deletionTimestamp"] = Value::Null;
    obj["spec"]["notAField"] = json!("ignored");
    obj["status"]["conditions"][0]["lastProbeTime"] = Value::Null;
    assert_eq!(round_trip(&obj)?, pod());
    Ok(())
}

#[test]
fn service_round_trips_with_int_or_string_ports() -> Result<(), ProtobufError> {
    assert_round_trip(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                      {"name": "https", "protocol": "TCP", "port": 443, "targetPort": "https",
                       "nodePort": 30443}],
            "selector": {"app": "web"},
            "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10", "fd00::a"],
            "type": "NodePort", "externalIPs": ["192.0.2.1"], "sessionAffinity": "None",
            "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "PreferDualStack",
            "internalTrafficPolicy": "Cluster", "externalTrafficPolicy": "Cluster",
            "allocateLoadBalancerNodePorts": true
        },
        "status": {"loadBalancer": {}}
    }))
}

#[test]
fn secret_and_config_map_bytes_are_base64() -> Result<(), ProtobufError> {
    let all_bytes: Vec<u8> = (0..=255).collect();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&all_bytes);
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "s", "namespace": "default"},
        "data": {"hello": "aGVsbG8=", "all": b64, "empty": ""},
        "immutable": false
    });
    assert_round_trip(secret.clone())?;
    // The bytes themselves travel, not the base64 text.
    let body = encode_object(&secret)?;
    assert!(body.windows(5).any(|w| w == b"hello"));
    assert!(body.windows(256).any(|w| w == all_bytes.as_slice()));
    assert_round_trip(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": {"a.txt": "line 1\nline 2\n", "b": ""},
        "binaryData": {"bin": "AAEC/w=="}
    }))
}

#[test]
fn deployment_round_trips_with_percent_surge() -> Result<(), ProtobufError> {
    let mut template = pod();
    let template = template.as_object_mut().map(|t| {
        t.remove("apiVersion");
        t.remove("kind");
        t.remove("status");
        json!({"metadata": {"labels": {"app": "web"}}, "spec": t.get("spec").cloned()})
    });
    assert_round_trip(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 3},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            "template": template,
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {"observedGeneration": 3, "replicas": 2, "readyReplicas": 2,
            "conditions": [{"type": "Available", "status": "True",
                "lastUpdateTime": "2026-11-21T09:49:06Z",
                "lastTransitionTime": "2026-11-21T09:49:06Z"}]}
    }))
}

#[test]
fn namespace_and_lists_round_trip() -> Result<(), ProtobufError> {
    assert_round_trip(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}
    }))?;
    let mut item = pod();
    if let Some(o) = item.as_object_mut() {
        // List items carry no apiVersion/kind in protobuf (nor in upstream's JSON lists).
        o.remove("apiVersion");
        o.remove("kind");
    }
    assert_round_trip(json!({
        "apiVersion": "v1", "kind": "PodList",
        "metadata": {"resourceVersion": "100", "continue": "token", "remainingItemCount": 5},
        "items": [item.clone(), item]
    }))?;
    assert_round_trip(json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}}))
}

#[test]
fn status_and_delete_options_round_trip() -> Result<(), ProtobufError> {
    assert_round_trip(json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {},
        "status": "Failure", "message": "pods \"x\" not found", "reason": "NotFound",
        "details": {"name": "x", "kind": "pods",
                    "causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "spec"}]},
        "code": 404
    }))?;
    // Clients send DeleteOptions under their resource's group version or meta.k8s.io/v1.
    for api_version in ["v1", "apps/v1", "meta.k8s.io/v1"] {
        assert_round_trip(json!({
            "apiVersion": api_version, "kind": "DeleteOptions",
            "gracePeriodSeconds": 0, "propagationPolicy": "Background",
            "preconditions": {"uid": "u-1", "resourceVersion": "7"}, "dryRun": ["All"]
        }))?;
    }
    Ok(())
}

#[test]
fn micro_times_and_string_lists_round_trip() -> Result<(), ProtobufError> {
    assert_round_trip(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
        "spec": {"holderIdentity": "node-1_abc", "leaseDurationSeconds": 15,
                 "acquireTime": "2026-11-21T09:49:06.000000Z",
                 "renewTime": "2026-11-21T09:49:21.123456Z", "leaseTransitions": 0}
    }))?;
    assert_round_trip(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "eventTime": "2026-11-21T09:49:06.500000Z",
        "series": {"count": 2, "lastObservedTime": "2026-11-21T09:50:00.000001Z"},
        "reportingController": "k1s/scheduler", "reportingInstance": "k1s-1",
        "action": "Binding", "reason": "Scheduled", "type": "Normal",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-1"},
        "note": "assigned", "deprecatedFirstTimestamp": "2026-11-21T09:49:06Z"
    }))?;
    assert_round_trip(json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "metadata": {},
        "spec": {"user": "alice", "groups": ["dev"], "uid": "1",
                 "extra": {"scopes": ["a", "b"], "none": []},
                 "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "x"}},
        "status": {"allowed": true, "reason": "RBAC"}
    }))?;
    assert_round_trip(json!({
        "apiVersion": "v1", "kind": "APIResourceList", "groupVersion": "v1",
        "resources": [{"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
            "verbs": ["create", "get", "list"], "shortNames": ["po"], "categories": ["all"]},
            {"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod",
             "verbs": []}]
    }))
}

#[test]
fn micro_time_input_precision_is_normalized() -> Result<(), ProtobufError> {
    // Nanoseconds and offsets are accepted; the JSON form is UTC with six digits, as upstream.
    let lease = |t: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {},
               "spec": {"renewTime": t}})
    };
    let back = round_trip(&lease("2026-11-21T10:49:06.123456789+01:00"))?;
    assert_eq!(back, lease("2026-11-21T09:49:06.123456Z"));
    // meta.v1.Time keeps seconds only.
    let ns = |t: &str| {
        json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "a", "creationTimestamp": t}})
    };
    assert_eq!(
        round_trip(&ns("2026-11-21T09:49:06.9Z"))?,
        ns("2026-11-21T09:49:06Z")
    );
    Ok(())
}

#[test]
fn go_zero_values_follow_go_json_rules() -> Result<(), ProtobufError> {
    // A Go client writes every non-pointer field. Zero `omitempty` ones become absent keys,
    // pointer fields keep their zero, non-`omitempty` fields keep theirs.
    let body = encode_object(&json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "", "generation": 0, "uid": ""},
        "spec": {"replicas": 0, "minReadySeconds": 0, "paused": false,
                 "template": {"spec": {"containers": [{"name": "c", "image": "i", "tty": false,
                     "ports": [{"containerPort": 0, "hostPort": 0}]}]}}}
    }))?;
    let back = decode_object(&body)?;
    assert_eq!(
        back,
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {"replicas": 0,
                     "template": {"spec": {"containers": [{"name": "c", "image": "i",
                         "ports": [{"containerPort": 0}]}]}}}
        })
    );
    Ok(())
}
