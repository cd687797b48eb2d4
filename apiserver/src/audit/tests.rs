//! Audit tests: policy parsing and matching, event contents per level, file rotation and the
//! non-blocking logger.

#![allow(clippy::unwrap_used)]

use std::io::{self, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::auth::{Attributes, UserInfo};

/// Upstream's documented example policy.
const EXAMPLE_POLICY: &str = r#"
apiVersion: audit.k8s.io/v1 # This is required.
kind: Policy
omitStages:
  - "RequestReceived"
rules:
  - level: RequestResponse
    resources:
    - group: ""
      resources: ["pods"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["pods/log", "pods/status"]
  - level: None
    resources:
    - group: ""
      resources: ["configmaps"]
      resourceNames: ["controller-leader"]
  - level: None
    users: ["system:kube-proxy"]
    verbs: ["watch"]
    resources:
    - group: ""
      resources: ["endpoints", "services"]
  - level: None
    userGroups: ["system:authenticated"]
    nonResourceURLs:
    - "/api*"
    - "/version"
  - level: Request
    resources:
    - group: ""
      resources: ["configmaps"]
    namespaces: ["kube-system"]
  - level: Metadata
    resources:
    - group: ""
      resources: ["secrets", "configmaps"]
  - level: Request
    resources:
    - group: ""
    - group: "extensions"
  - level: Metadata
    omitStages:
      - "RequestReceived"
"#;

fn res(
    user: &str,
    verb: &str,
    group: &str,
    resource: &str,
    sub: &str,
    ns: &str,
    name: &str,
) -> Attributes {
    Attributes {
        user: UserInfo::new(user, vec![]),
        verb: verb.into(),
        is_resource_request: true,
        namespace: ns.into(),
        api_group: group.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        subresource: sub.into(),
        name: name.into(),
        path: String::new(),
    }
}

fn non_res(user: &str, groups: Vec<String>, path: &str) -> Attributes {
    Attributes {
        user: UserInfo::new(user, groups),
        verb: "get".into(),
        path: path.into(),
        ..Default::default()
    }
}

#[test]
fn example_policy_table() {
    let p = Policy::parse(EXAMPLE_POLICY).unwrap();
    assert_eq!(p.rules.len(), 9);
    assert_eq!(p.omit_stages, vec![Stage::RequestReceived]);
    let cases = vec![
        (
            res("alice", "create", "", "pods", "", "ns", "p"),
            Level::RequestResponse,
        ),
        (
            res("alice", "get", "", "pods", "log", "ns", "p"),
            Level::Metadata,
        ),
        (
            res("alice", "update", "", "pods", "status", "ns", "p"),
            Level::Metadata,
        ),
        (
            res(
                "alice",
                "update",
                "",
                "configmaps",
                "",
                "ns",
                "controller-leader",
            ),
            Level::None,
        ),
        (
            res("alice", "update", "", "configmaps", "", "ns", "other"),
            Level::Metadata,
        ),
        (
            res("alice", "get", "", "configmaps", "", "kube-system", "x"),
            Level::Request,
        ),
        (
            res("system:kube-proxy", "watch", "", "services", "", "", ""),
            Level::None,
        ),
        (
            res("system:kube-proxy", "list", "", "services", "", "", ""),
            Level::Request,
        ),
        (
            res("alice", "get", "", "secrets", "", "ns", "s"),
            Level::Metadata,
        ),
        (
            res("alice", "get", "extensions", "ingresses", "", "ns", "i"),
            Level::Request,
        ),
        (
            res("alice", "get", "apps", "deployments", "", "ns", "d"),
            Level::Metadata,
        ),
        (non_res("alice", vec![], "/apis/apps"), Level::None),
        (non_res("alice", vec![], "/version"), Level::None),
        (non_res("alice", vec![], "/healthz"), Level::Metadata),
        // Anonymous users are not in system:authenticated.
        (
            non_res(
                "system:anonymous",
                vec!["system:unauthenticated".into()],
                "/api",
            ),
            Level::Metadata,
        ),
    ];
    for (i, (attrs, want)) in cases.iter().enumerate() {
        assert_eq!(p.level_for(attrs), *want, "case {i}: {attrs:?}");
    }
    // Every rule carries the policy's omitted stages.
    let cfg = p.evaluate(&res("alice", "get", "", "pods", "", "ns", "p"));
    assert_eq!(cfg.omit_stages, vec![Stage::RequestReceived]);
}

#[test]
fn resource_wildcards_and_defaults() {
    let p = Policy::parse(
        r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitManagedFields":true,
            "rules":[
              {"level":"Request","resources":[{"group":"","resources":["*/status"]}]},
              {"level":"RequestResponse","resources":[{"group":"apps","resources":["deployments/*"]}],
               "omitManagedFields":false},
              {"level":"Metadata","resources":[{"group":"","resources":["*"]}],"namespaces":["prod"],
               "omitStages":["ResponseStarted"]}
            ]}"#,
    )
    .unwrap();
    let status = p.evaluate(&res("a", "update", "", "pods", "status", "x", "p"));
    assert_eq!(status.level, Level::Request);
    assert!(status.omit_managed_fields);
    let scale = p.evaluate(&res(
        "a",
        "update",
        "apps",
        "deployments",
        "scale",
        "x",
        "d",
    ));
    assert_eq!(scale.level, Level::RequestResponse);
    assert!(!scale.omit_managed_fields);
    assert_eq!(
        p.level_for(&res("a", "get", "apps", "deployments", "", "x", "d")),
        Level::RequestResponse
    );
    assert_eq!(
        p.level_for(&res("a", "get", "", "pods", "log", "prod", "p")),
        Level::Metadata
    );
    assert_eq!(
        p.level_for(&res("a", "get", "", "pods", "log", "dev", "p")),
        Level::None
    );
    // Cluster-scoped resources have the empty namespace.
    assert_eq!(
        p.level_for(&res("a", "get", "", "nodes", "", "", "n")),
        Level::None
    );
    let none = p.evaluate(&res("a", "get", "x", "y", "", "", ""));
    assert_eq!(none.level, Level::None);
    assert_eq!(
        p.evaluate(&res("a", "get", "", "pods", "", "prod", "p"))
            .omit_stages,
        vec![Stage::ResponseStarted]
    );
}

#[test]
fn policy_errors() {
    let cases = [
        (
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n",
            "loaded illegal policy with 0 rules",
        ),
        (
            "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n",
            "no kind \"Policy\" is registered for version \"audit.k8s.io/v1beta1\"",
        ),
        (
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]\n",
            "rules[0].level: Unsupported value: \"Everything\"",
        ),
        (
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{}]\n",
            "rules[0].level: Required value",
        ),
        (
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Never]\nrules: [{level: None}]\n",
            "omitStages[0]: Unsupported value: \"Never\"",
        ),
        (
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/x], resources: [{group: \"\"}]}]\n",
            "rules cannot apply to both regular resources and non-resource URLs",
        ),
        ("{not json", "failed decoding policy"),
        (": : :", "failed decoding policy"),
    ];
    for (text, want) in cases {
        let err = Policy::parse(text).unwrap_err();
        assert!(err.contains(want), "{err:?} should contain {want:?}");
    }
}

fn meta() -> RequestMeta {
    RequestMeta {
        audit_id: "0d2b9b1e-1111-2222-3333-444455556666".into(),
        request_uri: "/api/v1/namespaces/ns/pods".into(),
        verb: "create".into(),
        user: UserInfo::new("alice", vec!["dev".into()]),
        source_ips: vec!["10.0.0.1".into()],
        user_agent: "kubectl/v1.33.0".into(),
        object_ref: Some(ObjectReference {
            resource: "pods".into(),
            namespace: "ns".into(),
            name: "p".into(),
            api_version: "v1".into(),
            ..Default::default()
        }),
    }
}

fn config(level: Level) -> RequestAuditConfig {
    RequestAuditConfig {
        level,
        omit_stages: vec![],
        omit_managed_fields: false,
    }
}

fn pod() -> Value {
    json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u-1",
        "resourceVersion":"7","managedFields":[{"manager":"kubectl"}]}})
}

fn audited(level: Level) -> RequestAudit {
    let mut a = RequestAudit::new_at(
        config(level),
        meta(),
        "2026-11-21T10:00:00.5Z".parse().unwrap(),
    )
    .unwrap();
    a.set_authorization(true, "RBAC: allowed by ClusterRoleBinding \"x\"");
    a.set_request_object(&pod());
    a.set_response(201, Some(&pod()));
    a.complete_object_ref(&pod());
    a
}

#[test]
fn levels_decide_the_event_fields() {
    assert!(RequestAudit::new(config(Level::None), meta()).is_none());
    let now: jiff::Timestamp = "2026-11-21T10:00:01.25Z".parse().unwrap();

    let ev = audited(Level::Metadata)
        .event_at(Stage::ResponseComplete, now)
        .unwrap();
    let v = serde_json::to_value(&ev).unwrap();
    assert_eq!(v["kind"], "Event");
    assert_eq!(v["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(v["level"], "Metadata");
    assert_eq!(v["stage"], "ResponseComplete");
    assert_eq!(v["auditID"], "0d2b9b1e-1111-2222-3333-444455556666");
    assert_eq!(v["requestURI"], "/api/v1/namespaces/ns/pods");
    assert_eq!(
        v["user"],
        json!({"username":"alice","groups":["dev","system:authenticated"]})
    );
    assert_eq!(v["sourceIPs"], json!(["10.0.0.1"]));
    assert_eq!(v["userAgent"], "kubectl/v1.33.0");
    assert_eq!(
        v["objectRef"],
        json!({"resource":"pods","namespace":"ns","name":"p","uid":"u-1","apiVersion":"v1","resourceVersion":"7"})
    );
    assert_eq!(v["responseStatus"], json!({"metadata":{},"code":201}));
    assert!(v.get("requestObject").is_none() && v.get("responseObject").is_none());
    assert_eq!(v["requestReceivedTimestamp"], "2026-11-21T10:00:00.500000Z");
    assert_eq!(v["stageTimestamp"], "2026-11-21T10:00:01.250000Z");
    assert_eq!(v["annotations"]["authorization.k8s.io/decision"], "allow");
    assert_eq!(
        v["annotations"]["authorization.k8s.io/reason"],
        "RBAC: allowed by ClusterRoleBinding \"x\""
    );
    // Upstream's field order.
    let text = serde_json::to_string(&ev).unwrap();
    let order = [
        "\"kind\"",
        "\"apiVersion\"",
        "\"level\"",
        "\"auditID\"",
        "\"stage\"",
        "\"requestURI\"",
        "\"verb\"",
        "\"user\"",
        "\"sourceIPs\"",
        "\"userAgent\"",
        "\"objectRef\"",
        "\"responseStatus\"",
        "\"requestReceivedTimestamp\"",
        "\"stageTimestamp\"",
        "\"annotations\"",
    ];
    let positions: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");

    let v = serde_json::to_value(audited(Level::Request).event_at(Stage::ResponseComplete, now))
        .unwrap();
    assert_eq!(v["requestObject"]["kind"], "Pod");
    assert!(v.get("responseObject").is_none());

    let v = serde_json::to_value(
        audited(Level::RequestResponse).event_at(Stage::ResponseComplete, now),
    )
    .unwrap();
    assert_eq!(v["requestObject"]["kind"], "Pod");
    assert_eq!(v["responseObject"]["metadata"]["uid"], "u-1");
    assert!(v["responseObject"]["metadata"]["managedFields"].is_array());

    // RequestReceived carries no response.
    let v =
        serde_json::to_value(audited(Level::RequestResponse).event_at(Stage::RequestReceived, now))
            .unwrap();
    assert!(v.get("responseStatus").is_none() && v.get("responseObject").is_none());
}

#[test]
fn omitted_stages_managed_fields_and_failures() {
    let cfg = RequestAuditConfig {
        level: Level::RequestResponse,
        omit_stages: vec![Stage::RequestReceived],
        omit_managed_fields: true,
    };
    let mut a = RequestAudit::new(cfg, meta()).unwrap();
    a.set_request_object(&pod());
    let list = json!({"kind":"PodList","items":[pod(), pod()]});
    a.set_response(200, Some(&list));
    assert!(a.event(Stage::RequestReceived).is_none());
    let v = serde_json::to_value(a.event(Stage::ResponseComplete).unwrap()).unwrap();
    assert!(
        v["requestObject"]["metadata"]
            .get("managedFields")
            .is_none()
    );
    assert!(
        v["responseObject"]["items"][1]["metadata"]
            .get("managedFields")
            .is_none()
    );

    let mut a = RequestAudit::new(config(Level::Metadata), meta()).unwrap();
    a.set_authorization(false, "");
    a.set_impersonated_user(&UserInfo::new("bob", vec![]));
    let status = json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
        "message":"pods \"p\" not found","reason":"NotFound","details":{"name":"p","kind":"pods"},"code":404});
    a.set_response(404, Some(&status));
    let v = serde_json::to_value(a.event(Stage::ResponseComplete).unwrap()).unwrap();
    assert_eq!(
        v["responseStatus"],
        json!({"metadata":{},"status":"Failure","message":"pods \"p\" not found","reason":"NotFound",
               "details":{"name":"p","kind":"pods"},"code":404})
    );
    assert_eq!(v["impersonatedUser"]["username"], "bob");
    assert_eq!(v["annotations"]["authorization.k8s.io/decision"], "forbid");
    assert_eq!(v["annotations"]["authorization.k8s.io/reason"], "");
    assert!(v.get("responseObject").is_none());
}

fn backup_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "audit.log")
        .collect();
    names.sort();
    names
}

#[test]
fn rotation_by_size_keeps_max_backups() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs").join("audit.log");
    let mut f = RotatingFile::open(&path, 1000, 3, None).unwrap();
    let line = vec![b'x'; 99];
    for _ in 0..100 {
        f.write_all(&[line.as_slice(), b"\n"].concat()).unwrap();
    }
    f.flush().unwrap();
    let logs = path.parent().unwrap();
    let names = backup_names(logs);
    assert_eq!(names.len(), 3, "{names:?}");
    for n in &names {
        // audit-2026-11-21T10-00-00.000.log
        assert!(
            n.starts_with("audit-")
                && n.ends_with(".log")
                && n.len() == "audit-2026-11-21T10-00-00.000.log".len(),
            "{n}"
        );
        assert_eq!(std::fs::metadata(logs.join(n)).unwrap().len(), 1000);
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 1000);
    assert_eq!(f.backups().len(), 3);
    // Larger than a whole file: refused, as lumberjack.
    let err = f.write(&vec![b'y'; 1001]).unwrap_err();
    assert!(err.to_string().contains("exceeds maximum file size"));
    // Reopening appends to the existing file.
    drop(f);
    let mut f = RotatingFile::open(&path, 1000, 0, None).unwrap();
    f.write_all(b"z\n").unwrap();
    assert_eq!(backup_names(logs).len(), 4);
}

#[test]
fn logger_writes_json_lines_and_flushes_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let logger = AuditLogger::open(&AuditLogConfig {
        path: path.clone(),
        max_size_mb: 1,
        max_backups: 2,
        buffer_size: 1000,
        ..Default::default()
    })
    .unwrap();
    let a = audited(Level::Request);
    for _ in 0..50 {
        a.emit(&logger, Stage::ResponseComplete);
    }
    logger.shutdown();
    assert_eq!(logger.written(), 50);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 50);
    assert_eq!(lines[0]["stage"], "ResponseComplete");
    assert_eq!(lines[0]["requestObject"]["kind"], "Pod");
    // After shutdown events are dropped, never blocking.
    assert!(!logger.log(&a.event(Stage::ResponseComplete).unwrap()));
    assert_eq!(logger.dropped(), 1);
}

/// A writer that blocks until the test lets it go.
struct Gate {
    release: mpsc::Receiver<()>,
    out: Arc<Mutex<Vec<u8>>>,
    opened: bool,
}

impl Write for Gate {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.opened {
            let _ = self.release.recv();
            self.opened = true;
        }
        self.out.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn full_queue_drops_without_blocking() {
    let (release, gate) = mpsc::channel();
    let out = Arc::new(Mutex::new(Vec::new()));
    let logger = AuditLogger::with_writer(
        Box::new(Gate {
            release: gate,
            out: out.clone(),
            opened: false,
        }),
        4,
    )
    .unwrap();
    let ev = audited(Level::Metadata)
        .event(Stage::ResponseComplete)
        .unwrap();
    let start = Instant::now();
    let accepted = (0..100).filter(|_| logger.log(&ev)).count();
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "logging blocked: {:?}",
        start.elapsed()
    );
    // The writer holds one event, the queue at most 4.
    assert!(accepted <= 5, "{accepted}");
    assert_eq!(logger.dropped() as usize, 100 - accepted);
    release.send(()).unwrap();
    logger.flush();
    logger.shutdown();
    assert_eq!(logger.written() as usize, accepted);
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    assert_eq!(text.lines().count(), accepted);
}

#[test]
fn micro_time_format() {
    let t: jiff::Timestamp = "2026-01-02T03:04:05.123456789Z".parse().unwrap();
    assert_eq!(micro_time(t), "2026-01-02T03:04:05.123456Z");
    let t: jiff::Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
    assert_eq!(micro_time(t), "2026-01-02T03:04:05.000000Z");
}
