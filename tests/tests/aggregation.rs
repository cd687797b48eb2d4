//! API aggregation through the real server: a small aggregated API server written here
//! (`wardle.example.com/v1alpha1` Flunders, over HTTPS, trusting only the front-proxy CA that
//! `extension-apiserver-authentication` publishes, reading the user from `X-Remote-*`) is
//! registered with a Service, an EndpointSlice and an APIService, then used through kubectl:
//! discovery, tables, create, get, watch, RBAC, the `Available` condition, 503 for its group
//! only while it is down, and APIService validation.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full, StreamBody};
use k1s_tests::tinyca::TinyCa;
use k1s_tests::{TestCluster, fails, wait_until};
use serde_json::{Value, json};

const GROUP_VERSION: &str = "wardle.example.com/v1alpha1";

/// The aggregated API server's state: its Flunders, and whether it answers at all.
#[derive(Default)]
struct Wardle {
    flunders: Mutex<BTreeMap<(String, String), Value>>,
    up: AtomicBool,
    /// Requests that arrived with credentials the aggregator must not forward.
    leaked_credentials: AtomicBool,
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn full(v: Value, code: u16) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(Full::new(Bytes::from(v.to_string())).boxed());
    *r.status_mut() = hyper::StatusCode::from_u16(code).expect("code");
    r.headers_mut()
        .insert("content-type", "application/json".parse().expect("ct"));
    r
}

fn resource_list() -> Value {
    json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
        "resources": [
            { "name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
              "verbs": ["create", "get", "list", "watch"], "shortNames": ["fl"] },
        ]
    })
}

fn openapi() -> Value {
    json!({
        "openapi": "3.0.0", "info": { "title": "wardle", "version": "v1alpha1" },
        "paths": { "/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}": {
            "get": {
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind":
                    { "group": "wardle.example.com", "kind": "Flunder", "version": "v1alpha1" },
                "responses": { "200": { "description": "OK", "content": { "application/json": {
                    "schema": { "$ref": "#/components/schemas/com.example.wardle.v1alpha1.Flunder" }
                } } } }
            }
        } },
        "components": { "schemas": { "com.example.wardle.v1alpha1.Flunder": {
            "type": "object", "description": "A Flunder is a test object of the wardle server.",
            "properties": {
                "apiVersion": { "type": "string" }, "kind": { "type": "string" },
                "metadata": { "type": "object" },
                "spec": { "type": "object", "description": "What the flunder refers to.",
                    "properties": { "reference": { "type": "string" } } }
            },
            "x-kubernetes-group-version-kind": [
                { "group": "wardle.example.com", "kind": "Flunder", "version": "v1alpha1" }
            ]
        } } }
    })
}

/// The same kind in Swagger 2.0, as a k8s.io/apiserver-based server serves it.
fn openapi_v2() -> Value {
    json!({
        "swagger": "2.0", "info": { "title": "wardle", "version": "v1alpha1" },
        "paths": {
            "/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders/{name}": { "get": {
                "responses": { "200": { "description": "OK",
                    "schema": { "$ref": "#/definitions/com.example.wardle.v1alpha1.Flunder" } } },
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind":
                    { "group": "wardle.example.com", "kind": "Flunder", "version": "v1alpha1" }
            } },
            "/apis/other.example.com/v1/things": { "get": { "responses": {} } }
        },
        "definitions": { "com.example.wardle.v1alpha1.Flunder": {
            "type": "object", "description": "A Flunder is a test object of the wardle server.",
            "properties": {
                "apiVersion": { "type": "string" }, "kind": { "type": "string" },
                "metadata": { "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" },
                "spec": { "type": "object", "description": "What the flunder refers to (v2).",
                    "properties": { "reference": { "type": "string" } } }
            },
            "x-kubernetes-group-version-kind": [
                { "group": "wardle.example.com", "kind": "Flunder", "version": "v1alpha1" }
            ]
        } }
    })
}

/// `Name` and `Reference` columns, as an aggregated server's table convertor gives them.
fn table(items: &[Value]) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|f| {
            json!({
                "cells": [f["metadata"]["name"], f["spec"]["reference"]],
                "object": { "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": f["metadata"] }
            })
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": [
            { "name": "Name", "type": "string", "format": "name", "description": "name", "priority": 0 },
            { "name": "Reference", "type": "string", "format": "", "description": "reference", "priority": 0 }
        ],
        "rows": rows
    })
}

async fn handle(
    wardle: Arc<Wardle>,
    mut req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Body> {
    if req.headers().contains_key("authorization") || req.headers().contains_key("impersonate-user")
    {
        wardle.leaked_credentials.store(true, Ordering::SeqCst);
    }
    let header_all = |name: &str| -> Vec<String> {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    let user = header_all("x-remote-user").join(",");
    let groups = header_all("x-remote-group").join(",");
    if user.is_empty() {
        return full(
            json!({"kind": "Status", "code": 401, "message": "no X-Remote-User"}),
            401,
        );
    }
    // `.../flunders/<name>/echo` with `Upgrade: echo`: greets the user, then echoes bytes.
    if req.uri().path().ends_with("/echo") && req.headers().contains_key("upgrade") {
        let upgrade = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let Ok(upgraded) = upgrade.await else { return };
            let mut io = hyper_util::rt::TokioIo::new(upgraded);
            let _ = io.write_all(format!("hello {user}\n").as_bytes()).await;
            let mut buf = [0u8; 1024];
            while let Ok(n) = io.read(&mut buf).await {
                if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        });
        let mut r = hyper::Response::new(Full::new(Bytes::new()).boxed());
        *r.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
        r.headers_mut()
            .insert("connection", "Upgrade".parse().expect("h"));
        r.headers_mut()
            .insert("upgrade", "echo".parse().expect("h"));
        return r;
    }
    let as_table = header_all("accept").join(",").contains("as=Table");
    let watch = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method.as_str(), parts.as_slice()) {
        ("GET", ["apis", "wardle.example.com", "v1alpha1"]) => full(resource_list(), 200),
        ("GET", ["openapi", "v3", "apis", "wardle.example.com", "v1alpha1"]) => {
            full(openapi(), 200)
        }
        ("GET", ["openapi", "v2"]) => full(openapi_v2(), 200),
        (
            "GET",
            [
                "apis",
                "wardle.example.com",
                "v1alpha1",
                "namespaces",
                ns,
                "flunders",
            ],
        ) => {
            let items: Vec<Value> = wardle
                .flunders
                .lock()
                .expect("lock")
                .iter()
                .filter(|((n, _), _)| n == ns)
                .map(|(_, f)| f.clone())
                .collect();
            if watch {
                // The current objects as ADDED events, then the stream stays open.
                let events: Vec<Result<hyper::body::Frame<Bytes>, Infallible>> = items
                    .into_iter()
                    .map(|f| {
                        let line = format!("{}\n", json!({"type": "ADDED", "object": f}));
                        Ok(hyper::body::Frame::data(Bytes::from(line)))
                    })
                    .collect();
                let stream = futures::stream::iter(events).chain(futures::stream::pending());
                let mut r = hyper::Response::new(BodyExt::boxed(StreamBody::new(stream)));
                r.headers_mut()
                    .insert("content-type", "application/json".parse().expect("ct"));
                return r;
            }
            if as_table {
                return full(table(&items), 200);
            }
            full(
                json!({"kind": "FlunderList", "apiVersion": GROUP_VERSION,
                    "metadata": {"resourceVersion": "1"}, "items": items}),
                200,
            )
        }
        (
            "GET",
            [
                "apis",
                "wardle.example.com",
                "v1alpha1",
                "namespaces",
                ns,
                "flunders",
                name,
            ],
        ) => {
            let found = wardle
                .flunders
                .lock()
                .expect("lock")
                .get(&(ns.to_string(), name.to_string()))
                .cloned();
            match found {
                Some(f) if as_table => full(table(&[f]), 200),
                Some(f) => full(f, 200),
                None => full(
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "NotFound", "code": 404,
                        "message": format!("flunders.wardle.example.com \"{name}\" not found")}),
                    404,
                ),
            }
        }
        (
            "POST",
            [
                "apis",
                "wardle.example.com",
                "v1alpha1",
                "namespaces",
                ns,
                "flunders",
            ],
        ) => {
            let ns = ns.to_string();
            let body = req
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let Ok(mut f) = serde_json::from_slice::<Value>(&body) else {
                return full(
                    json!({"kind": "Status", "code": 400, "message": "not JSON"}),
                    400,
                );
            };
            let name = f["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            f["metadata"]["namespace"] = json!(ns);
            f["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
            f["metadata"]["annotations"] = json!({
                "wardle.example.com/created-by": user, "wardle.example.com/groups": groups });
            wardle
                .flunders
                .lock()
                .expect("lock")
                .insert((ns, name), f.clone());
            full(f, 201)
        }
        _ => full(
            json!({"kind": "Status", "code": 404, "message": "not found"}),
            404,
        ),
    }
}

/// Serves Wardle over HTTPS with `serving` (cert, key), requiring a client certificate signed
/// by `client_ca_pem` (the front-proxy CA). While `up` is false, connections are dropped.
async fn start_wardle(
    wardle: Arc<Wardle>,
    serving: (String, String),
    client_ca_pem: &str,
) -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(client_ca_pem.as_bytes()) {
        roots.add(c.expect("front-proxy CA")).expect("root");
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .expect("verifier");
    let chain = rustls::pki_types::CertificateDer::pem_slice_iter(serving.0.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("chain");
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(serving.1.as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .expect("tls");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            if !wardle.up.load(Ordering::SeqCst) {
                drop(tcp);
                continue;
            }
            let acceptor = acceptor.clone();
            let wardle = wardle.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                // Only the aggregator's front-proxy identity is let in.
                let cn = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first().cloned())
                    .and_then(|der| {
                        let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
                        let cn = cert
                            .subject()
                            .iter_common_name()
                            .next()?
                            .as_str()
                            .ok()?
                            .to_string();
                        Some(cn)
                    });
                if cn.as_deref() != Some("front-proxy-client") {
                    return;
                }
                let service = hyper::service::service_fn(move |req| {
                    let wardle = wardle.clone();
                    async move { Ok::<_, Infallible>(handle(wardle, req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    addr
}

/// Opens `.../flunders/first/echo` with `Upgrade: echo` on a raw HTTP/1.1 connection to the
/// server at `url`, then sends `ping\n`: returns what came back after the 101.
fn upgrade_through(url: &str, ca_pem: &[u8], token: &str) -> String {
    use rustls::pki_types::pem::PemObject;
    use std::io::{Read, Write};
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(c.expect("ca")).expect("root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let host_port = url.trim_start_matches("https://").trim_end_matches('/');
    let host = host_port.rsplit_once(':').expect("port").0.to_string();
    let name = rustls::pki_types::ServerName::try_from(host).expect("name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("tls");
    let tcp = std::net::TcpStream::connect(host_port).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let request = format!(
        "GET /apis/wardle.example.com/v1alpha1/namespaces/wardle/flunders/first/echo HTTP/1.1\r\nHost: {host_port}\r\nAuthorization: Bearer {token}\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n"
    );
    tls.write_all(request.as_bytes()).expect("request");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        tls.read_exact(&mut byte).expect("response head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let mut out = Vec::new();
    let mut read_line = |tls: &mut rustls::StreamOwned<_, _>, out: &mut Vec<u8>| loop {
        tls.read_exact(&mut byte).expect("upgraded stream");
        out.push(byte[0]);
        if byte[0] == b'\n' {
            break;
        }
    };
    read_line(&mut tls, &mut out);
    tls.write_all(b"ping\n").expect("ping");
    read_line(&mut tls, &mut out);
    String::from_utf8_lossy(&out).to_string()
}

fn condition(c: &TestCluster, field: &str) -> String {
    c.kubectl_ok(&[
        "get",
        "apiservice",
        "v1alpha1.wardle.example.com",
        "-o",
        &format!("jsonpath={{.status.conditions[?(@.type==\"Available\")].{field}}}"),
    ])
    .trim()
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregated_api_server_is_reached_through_kubectl() {
    let c = tokio::task::spawn_blocking(TestCluster::start)
        .await
        .expect("start");
    let c = Arc::new(c);
    let front_proxy_ca = c.kubectl_ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "-o",
        "jsonpath={.data.requestheader-client-ca-file}",
    ]);
    assert!(
        front_proxy_ca.contains("BEGIN CERTIFICATE"),
        "{front_proxy_ca}"
    );
    let allowed = c.kubectl_ok(&[
        "get",
        "configmap",
        "-n",
        "kube-system",
        "extension-apiserver-authentication",
        "-o",
        "jsonpath={.data.requestheader-allowed-names}",
    ]);
    assert_eq!(allowed.trim(), r#"["front-proxy-client"]"#);

    let ca = TinyCa::new("wardle-ca");
    let wardle = Arc::new(Wardle::default());
    wardle.up.store(true, Ordering::SeqCst);
    let addr = start_wardle(
        wardle.clone(),
        ca.issue(&["api.wardle.svc"], None),
        &front_proxy_ca,
    )
    .await;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&ca.pem);
    let c2 = c.clone();
    let run = move |f: Box<dyn FnOnce(&TestCluster) + Send>| {
        let c = c2.clone();
        tokio::task::spawn_blocking(move || f(&c))
    };

    run(Box::new(move |c| {
        // The built-in group versions have local APIServices, as upstream's autoregister
        // makes them; a CRD's served versions get one while the CRD exists.
        let all = c.kubectl_ok(&["get", "apiservices"]);
        for name in ["v1.", "v1.apps", "v2.autoscaling", "v1.apiextensions.k8s.io"] {
            assert!(
                all.lines().any(|l| l.starts_with(&format!("{name} ")) && l.contains("Local") && l.contains("True")),
                "{name}: {all}"
            );
        }
        let core = c.kubectl_ok(&[
            "get", "apiservice", "v1.", "-o",
            "jsonpath={.spec.groupPriorityMinimum} {.spec.versionPriority} {.metadata.labels.kube-aggregator\\.kubernetes\\.io/automanaged}",
        ]);
        assert_eq!(core.trim(), "18000 1 onstart");
        c.apply("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gizmos.toys.example.com}\nspec:\n  group: toys.example.com\n  scope: Namespaced\n  names: {plural: gizmos, singular: gizmo, kind: Gizmo}\n  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}\n  - {name: v2, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}\n");
        wait_until(Duration::from_secs(10), "the CRD's APIService", || {
            let out = c.kubectl(&["get", "apiservice", "v1.toys.example.com", "-o", "jsonpath={.spec.groupPriorityMinimum} {.spec.versionPriority} {.metadata.labels.kube-aggregator\\.kubernetes\\.io/automanaged}"]);
            (k1s_tests::stdout(&out).trim() == "1000 100 true").then_some(())
        });
        assert!(!c.kubectl(&["get", "apiservice", "v2.toys.example.com"]).status.success());
        c.kubectl_ok(&["delete", "crd", "gizmos.toys.example.com"]);
        wait_until(Duration::from_secs(20), "the CRD's APIService to go", || {
            (!c.kubectl(&["get", "apiservice", "v1.toys.example.com"]).status.success()).then_some(())
        });
        // Validation: a name that is not version.group, and a local service with TLS.
        let bad = "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.wrong.example.com}\nspec: {group: wardle.example.com, version: v1alpha1, groupPriorityMinimum: 1000, versionPriority: 15, insecureSkipTLSVerify: true}\n";
        let args = ["create", "-f", "-"];
        let err = fails(&args, c.kubectl_stdin(&args, bad));
        assert!(
            err.contains(r#"metadata.name: Invalid value: "v1.wrong.example.com": must be `spec.version+"."+spec.group`: "v1alpha1.wardle.example.com""#),
            "{err}"
        );
        assert!(
            err.contains("spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"),
            "{err}"
        );
        // The backend: a Service without selector and its EndpointSlice.
        c.apply(&format!(
            "apiVersion: v1\nkind: Namespace\nmetadata: {{name: wardle}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: api, namespace: wardle}}\nspec:\n  ports: [{{name: https, port: 443, targetPort: {port}}}]\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: api-1, namespace: wardle, labels: {{kubernetes.io/service-name: api}}}}\naddressType: IPv4\nendpoints: [{{addresses: [127.0.0.1], conditions: {{ready: true}}}}]\nports: [{{name: https, port: {port}}}]\n",
            port = addr.port()
        ));
        c.apply(&format!(
            "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: v1alpha1.wardle.example.com}}\nspec:\n  group: wardle.example.com\n  version: v1alpha1\n  groupPriorityMinimum: 2000\n  versionPriority: 15\n  caBundle: {ca_bundle}\n  service: {{name: api, namespace: wardle}}\n"
        ));
        // The port defaults to 443; the availability check passes.
        let port = c.kubectl_ok(&[
            "get",
            "apiservice",
            "v1alpha1.wardle.example.com",
            "-o",
            "jsonpath={.spec.service.port}",
        ]);
        assert_eq!(port.trim(), "443");
        wait_until(Duration::from_secs(30), "the APIService to be Available", || {
            (condition(c, "status") == "True").then_some(())
        });
        assert_eq!(condition(c, "reason"), "Passed");
        let table = c.kubectl_ok(&["get", "apiservice", "v1alpha1.wardle.example.com"]);
        assert!(table.contains("wardle/api") && table.contains("True"), "{table}");

        // Discovery: kubectl finds the kind, its short name, and the group's versions.
        let resources = c.kubectl_ok(&["api-resources", "--api-group=wardle.example.com"]);
        assert!(
            resources.contains("flunders") && resources.contains("fl") && resources.contains("Flunder"),
            "{resources}"
        );
        let versions = c.kubectl_ok(&["api-versions"]);
        assert!(versions.contains(GROUP_VERSION), "{versions}");
        // Groups are ordered by the APIServices' priorities, as upstream's aggregator orders
        // them: wardle (2000) after the built-ins, before custom resources (1000) and
        // metrics.k8s.io (100).
        let apis: Value = serde_json::from_str(&c.kubectl_ok(&["get", "--raw", "/apis"])).expect("json");
        let order: Vec<&str> = apis["groups"].as_array().expect("groups").iter().map(|g| g["name"].as_str().unwrap_or_default()).collect();
        let at = |name: &str| order.iter().position(|g| *g == name).unwrap_or_else(|| panic!("{name} in {order:?}"));
        assert!(at("flowcontrol.apiserver.k8s.io") < at("wardle.example.com") && at("wardle.example.com") < at("metrics.k8s.io"), "{order:?}");
        let group = c.kubectl_ok(&["get", "--raw", "/apis/wardle.example.com"]);
        assert!(group.contains(r#""preferredVersion""#) && group.contains(GROUP_VERSION), "{group}");

        // Create and read through the aggregator, as kubernetes-admin.
        let flunder = "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: first, namespace: wardle}\nspec: {reference: somewhere}\n";
        let out = c.kubectl_stdin(&["create", "-f", "-"], flunder);
        assert!(out.status.success(), "{}", k1s_tests::stderr(&out));
        let created_by = c.kubectl_ok(&[
            "get", "flunder", "first", "-n", "wardle", "-o",
            r#"jsonpath={.metadata.annotations.wardle\.example\.com/created-by} {.metadata.annotations.wardle\.example\.com/groups}"#,
        ]);
        assert!(
            created_by.starts_with("kubernetes-admin ") && created_by.contains("system:masters"),
            "{created_by}"
        );
        // The backend's table columns reach kubectl.
        let listed = c.kubectl_ok(&["get", "fl", "-n", "wardle"]);
        assert!(
            listed.contains("REFERENCE") && listed.contains("first") && listed.contains("somewhere"),
            "{listed}"
        );
        // A watch streams through the proxy.
        let mut watch = c.kubectl_stream(
            &k1s_tests::Kubectl::dispatcher(),
            &["get", "--raw", "/apis/wardle.example.com/v1alpha1/namespaces/wardle/flunders?watch=true"],
        );
        let line = watch.wait_for_line(Duration::from_secs(20), |l| l.contains("ADDED"));
        assert!(line.contains("\"first\""), "{line}");
        watch.kill();
        // A connection upgrade is spliced through, as a service account with a bearer token
        // (which the backend must not see).
        c.kubectl_ok(&["create", "serviceaccount", "up", "-n", "wardle"]);
        c.kubectl_ok(&[
            "create", "clusterrolebinding", "up", "--clusterrole=cluster-admin",
            "--serviceaccount=wardle:up",
        ]);
        let token = c.kubectl_ok(&["create", "token", "up", "-n", "wardle"]);
        let ca = c.kubectl_ok(&[
            "config", "view", "--raw", "-o",
            "jsonpath={.clusters[0].cluster.certificate-authority-data}",
        ]);
        let ca = base64::engine::general_purpose::STANDARD
            .decode(ca.trim())
            .expect("ca");
        let echoed = upgrade_through(c.url(), &ca, token.trim());
        assert_eq!(echoed, "hello system:serviceaccount:wardle:up\nping\n");
        // OpenAPI v3 comes from the backend (kubectl explain).
        let explain = c.kubectl_ok(&["explain", "flunders.spec"]);
        assert!(explain.contains("What the flunder refers to"), "{explain}");
        // And OpenAPI v2 (its paths outside the group/version are not taken).
        let explain = c.kubectl_ok(&["explain", "flunders.spec", "--output=plaintext-openapiv2"]);
        assert!(explain.contains("What the flunder refers to (v2)"), "{explain}");
        let v2 = c.kubectl_ok(&["get", "--raw", "/openapi/v2"]);
        assert!(!v2.contains("/apis/other.example.com/v1/things"));
        // RBAC is this server's: a user without a role never reaches the backend.
        let err = fails(
            &["get", "flunders", "--as=nobody"],
            c.kubectl(&["get", "flunders", "-n", "wardle", "--as=nobody"]),
        );
        assert!(err.contains("Forbidden") || err.contains("forbidden"), "{err}");
    }))
    .await
    .expect("registered and used");
    assert!(
        !wardle.leaked_credentials.load(Ordering::SeqCst),
        "the aggregator forwarded the client's credentials"
    );

    // The backend goes away: the APIService turns unavailable and its group answers 503, while
    // the rest of the API keeps working.
    wardle.up.store(false, Ordering::SeqCst);
    run(Box::new(|c| {
        wait_until(
            Duration::from_secs(40),
            "the APIService to be unavailable",
            || (condition(c, "status") == "False").then_some(()),
        );
        assert_eq!(condition(c, "reason"), "FailedDiscoveryCheck");
        assert!(
            condition(c, "message")
                .starts_with("failing or missing response from https://127.0.0.1:")
        );
        let out = c.kubectl(&["get", "flunders", "-n", "wardle"]);
        let err = fails(&["get", "flunders"], out);
        assert!(
            err.contains("ServiceUnavailable")
                || err.contains("the server is currently unable to handle the request"),
            "{err}"
        );
        c.kubectl_ok(&["get", "configmaps", "-n", "kube-system"]);
    }))
    .await
    .expect("unavailable");

    wardle.up.store(true, Ordering::SeqCst);
    run(Box::new(|c| {
        wait_until(
            Duration::from_secs(40),
            "the APIService to be Available again",
            || (condition(c, "status") == "True").then_some(()),
        );
        let listed = c.kubectl_ok(&["get", "flunders", "-n", "wardle", "-o", "name"]);
        assert_eq!(listed.trim(), "flunder.wardle.example.com/first");
        // A deleted APIService stops routing: the path is this server's again (404).
        c.kubectl_ok(&["delete", "apiservice", "v1alpha1.wardle.example.com"]);
        wait_until(Duration::from_secs(10), "the group to be gone", || {
            let out = c.kubectl(&["get", "--raw", "/apis/wardle.example.com/v1alpha1"]);
            (!out.status.success() && k1s_tests::stderr(&out).contains("NotFound")).then_some(())
        });
    }))
    .await
    .expect("recovered");
}
