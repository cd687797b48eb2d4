//! CRD conversion webhooks through the real server: a conversion webhook written here (HTTPS,
//! ConversionReview v1, upstream e2e's converter: v1 `spec.hostPort: "h:p"` <-> v2 `spec.host`
//! and `spec.port`) serves a CRD with two versions. kubectl reads and writes through both,
//! watches through the one not stored, lists a mix of storage versions after the storage
//! version changes, and sees upstream's errors when the webhook fails or answers badly.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use k1s_tests::{Kubectl, TestCluster, fails, wait_until};
use serde_json::{Value, json};

/// How the webhook answers.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Convert,
    /// Converts and adds the label `converted: "yes"` (labels may change).
    Label,
    /// `result.status: Failure` with a message.
    Fail,
    /// Converts but renames the objects (upstream refuses this).
    Rename,
}

struct Hook {
    mode: Mutex<Mode>,
    /// Each review received: its apiVersion, desiredAPIVersion and object count.
    seen: Mutex<Vec<(String, String, usize)>>,
}

fn convert(mut obj: Value, desired: &str, mode: Mode) -> Value {
    let from = obj["apiVersion"].as_str().unwrap_or_default().to_string();
    if from.ends_with("/v1") && desired.ends_with("/v2") {
        let host_port = obj["spec"]["hostPort"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (host, port) = host_port.split_once(':').unwrap_or((&host_port, ""));
        obj["spec"] = json!({"host": host, "port": port});
    } else if from.ends_with("/v2") && desired.ends_with("/v1") {
        let host = obj["spec"]["host"].as_str().unwrap_or_default();
        let port = obj["spec"]["port"].as_str().unwrap_or_default();
        obj["spec"] = json!({"hostPort": format!("{host}:{port}")});
    }
    obj["apiVersion"] = json!(desired);
    match mode {
        Mode::Label => obj["metadata"]["labels"]["converted"] = json!("yes"),
        Mode::Rename => obj["metadata"]["name"] = json!("someone-else"),
        _ => {}
    }
    obj
}

fn answer(hook: &Hook, review: &Value) -> Value {
    let request = &review["request"];
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    hook.seen.lock().expect("lock").push((
        review["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        desired.to_string(),
        objects.len(),
    ));
    let mode = *hook.mode.lock().expect("lock");
    let response = if mode == Mode::Fail {
        json!({"uid": request["uid"], "result": {"status": "Failure", "message": "the converter is broken"}})
    } else {
        let converted: Vec<Value> = objects
            .into_iter()
            .map(|o| convert(o, desired, mode))
            .collect();
        json!({"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": converted})
    };
    json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": response})
}

/// Serves the webhook over HTTPS for `127.0.0.1`; returns its address and caBundle (base64).
async fn start_hook(hook: Arc<Hook>) -> (SocketAddr, String) {
    let ca = k1s_tests::tinyca::TinyCa::new("conversion-ca");
    let (cert, key) = ca.issue(&["127.0.0.1"], None);
    use rustls::pki_types::pem::PemObject;
    let chain = rustls::pki_types::CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("chain");
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("tls");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, hook) = (acceptor.clone(), hook.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let hook = hook.clone();
                        async move {
                            use http_body_util::BodyExt;
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                            let out = answer(&hook, &review);
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(
                                http_body_util::Full::new(bytes::Bytes::from(out.to_string())),
                            ))
                        }
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    (
        addr,
        base64::engine::general_purpose::STANDARD.encode(&ca.pem),
    )
}

/// Each version has its own schema (v2 requires host and port): objects are defaulted, pruned
/// and validated in the version of the request, and converted only to be stored.
fn crd(url: &str, ca: &str, storage: &str) -> String {
    let v1 = "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {hostPort: {type: string}}}}}}";
    let v2 = "schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, required: [host, port], properties: {host: {type: string}, port: {type: string}}}}}}";
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: convs.stable.example.com}}\nspec:\n  group: stable.example.com\n  scope: Namespaced\n  names: {{plural: convs, singular: conv, kind: Conv}}\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v2beta9, v1]\n      clientConfig: {{url: \"{url}\", caBundle: \"{ca}\"}}\n  versions:\n  - {{name: v1, served: true, storage: {}, {v1}}}\n  - {{name: v2, served: true, storage: {}, {v2}}}\n",
        storage == "v1",
        storage == "v2"
    )
}

fn get_json(c: &TestCluster, resource: &str, name: &str) -> Value {
    let out = c.kubectl_ok(&["get", resource, name, "-o", "json"]);
    serde_json::from_str(&out).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversion_webhook_serves_both_versions() {
    let c = tokio::task::spawn_blocking(TestCluster::start)
        .await
        .expect("start");
    let hook = Arc::new(Hook {
        mode: Mutex::new(Mode::Convert),
        seen: Mutex::new(Vec::new()),
    });
    let (addr, ca) = start_hook(hook.clone()).await;
    let url = format!("https://{addr}/convert");
    let c = Arc::new(c);
    let c2 = c.clone();
    let h = hook.clone();
    tokio::task::spawn_blocking(move || scenario(&c2, &h, &url, &ca))
        .await
        .expect("scenario");
}

/// The object counts of the calls that converted to v1 (other calls come from watchers of v2,
/// such as the garbage collector's, at their own pace).
fn to_v1_calls(hook: &Hook) -> Vec<usize> {
    hook.seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|(_, desired, _)| desired == "stable.example.com/v1")
        .map(|(_, _, n)| *n)
        .collect()
}

fn set_mode(hook: &Hook, mode: Mode) {
    *hook.mode.lock().expect("lock") = mode;
}

fn scenario(c: &TestCluster, hook: &Hook, url: &str, ca: &str) {
    // Upstream's validation of the conversion settings (paths of the internal type).
    let bad = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: bads.stable.example.com}\nspec:\n  group: stable.example.com\n  scope: Namespaced\n  names: {plural: bads, singular: bad, kind: Bad}\n  conversion: {strategy: Webhook}\n  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}\n";
    let err = fails(&["apply"], c.kubectl_stdin(&["apply", "-f", "-"], bad));
    assert!(
        err.contains("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook")
            && err.contains("spec.conversion.conversionReviewVersions: Required value"),
        "{err}"
    );
    let http = crd("http://127.0.0.1:1/convert", ca, "v1")
        .replace("[v2beta9, v1]", "[v2beta9]")
        .replace("convs", "bads")
        .replace("conv,", "bad,")
        .replace("Conv}", "Bad}");
    let err = fails(&["apply"], c.kubectl_stdin(&["apply", "-f", "-"], &http));
    assert!(
        err.contains("spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme")
            && err.contains("spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2beta9\"}: must include at least one of v1, v1beta1"),
        "{err}"
    );

    c.apply(&crd(url, ca, "v1"));
    c.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/convs.stable.example.com",
        "--timeout=20s",
    ]);
    // Discovery may lag the condition by a moment.
    wait_until(Duration::from_secs(10), "convs discovered", || {
        c.kubectl(&["get", "convs.v2.stable.example.com"])
            .status
            .success()
            .then_some(())
    });

    // Written in v1 (the storage version): read through v2 by the webhook.
    c.apply("apiVersion: stable.example.com/v1\nkind: Conv\nmetadata: {name: first, namespace: default, labels: {app: demo}}\nspec: {hostPort: \"localhost:8080\"}\n");
    let v2 = get_json(c, "convs.v2.stable.example.com", "first");
    assert_eq!(v2["apiVersion"], "stable.example.com/v2");
    assert_eq!(v2["spec"], json!({"host": "localhost", "port": "8080"}));
    assert_eq!(v2["metadata"]["labels"], json!({"app": "demo"}));
    assert!(
        v2["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty()),
        "{v2}"
    );
    {
        let seen = hook.seen.lock().expect("lock");
        // The first version of conversionReviewVersions this server speaks is used.
        assert!(
            !seen.is_empty() && seen.iter().all(|(v, _, _)| v == "apiextensions.k8s.io/v1"),
            "{seen:?}"
        );
    }

    // Written in v2: converted to v1 before it is stored, so reading v1 needs no call.
    c.apply("apiVersion: stable.example.com/v2\nkind: Conv\nmetadata: {name: second, namespace: default}\nspec: {host: example.com, port: \"443\"}\n");
    assert_eq!(to_v1_calls(hook), [1], "the v2 create stored in v1");
    // v2's own schema applies to a v2 write.
    let err = fails(
        &["apply"],
        c.kubectl_stdin(&["apply", "-f", "-"], "apiVersion: stable.example.com/v2\nkind: Conv\nmetadata: {name: partial, namespace: default}\nspec: {host: example.com}\n"),
    );
    assert!(err.contains("spec.port: Required value"), "{err}");
    let v1 = get_json(c, "convs.v1.stable.example.com", "second");
    assert_eq!(v1["spec"], json!({"hostPort": "example.com:443"}));
    assert_eq!(
        to_v1_calls(hook),
        [1],
        "no call for a v1 read of a v1-stored object"
    );

    // A watch through v2 sees changes made through v1, converted.
    let mut watch = c.kubectl_stream(
        &Kubectl::dispatcher(),
        &[
            "get",
            "convs.v2.stable.example.com",
            "--watch",
            "-o",
            "jsonpath={.metadata.name} {.spec.host} {.spec.port}{\"\\n\"}",
        ],
    );
    watch.wait_for_line(Duration::from_secs(20), |l| l == "first localhost 8080");
    c.apply("apiVersion: stable.example.com/v1\nkind: Conv\nmetadata: {name: first, namespace: default, labels: {app: demo}}\nspec: {hostPort: \"127.0.0.1:9090\"}\n");
    watch.wait_for_line(Duration::from_secs(20), |l| l == "first 127.0.0.1 9090");
    watch.kill();

    // The webhook may change labels; they are kept.
    set_mode(hook, Mode::Label);
    let labelled = get_json(c, "convs.v2.stable.example.com", "second");
    assert_eq!(
        labelled["metadata"]["labels"]["converted"], "yes",
        "{labelled}"
    );

    // A failing webhook: reads through v2 fail with upstream's message, writes change nothing.
    set_mode(hook, Mode::Fail);
    let err = fails(
        &["get"],
        c.kubectl(&["get", "convs.v2.stable.example.com", "first"]),
    );
    assert!(
        err.contains("conversion webhook for stable.example.com/v1, Kind=Conv failed: the converter is broken"),
        "{err}"
    );
    let err = fails(
        &["apply"],
        c.kubectl_stdin(&["apply", "-f", "-"], "apiVersion: stable.example.com/v2\nkind: Conv\nmetadata: {name: third, namespace: default}\nspec: {host: a, port: \"1\"}\n"),
    );
    assert!(err.contains("the converter is broken"), "{err}");
    assert!(
        !c.kubectl(&["get", "convs.v1.stable.example.com", "third"])
            .status
            .success()
    );
    // v1 reads of v1-stored objects do not need the webhook.
    c.kubectl_ok(&["get", "convs.v1.stable.example.com", "first"]);

    // A webhook that renames objects is refused, as upstream.
    set_mode(hook, Mode::Rename);
    let err = fails(
        &["get"],
        c.kubectl(&["get", "convs.v2.stable.example.com", "first", "-o", "json"]),
    );
    assert!(
        err.contains("returned invalid converted object at index 1: must have the same name: first != someone-else"),
        "{err}"
    );

    // The storage version moves to v2: objects of both storage versions list in either version,
    // and a list is converted in one call.
    set_mode(hook, Mode::Convert);
    c.apply(&crd(url, ca, "v2"));
    wait_until(Duration::from_secs(10), "v2 stored", || {
        let out = c.kubectl(&[
            "get",
            "crd",
            "convs.stable.example.com",
            "-o",
            "jsonpath={.status.storedVersions}",
        ]);
        (k1s_tests::stdout(&out).trim() == r#"["v1","v2"]"#).then_some(())
    });
    c.apply("apiVersion: stable.example.com/v1\nkind: Conv\nmetadata: {name: third, namespace: default}\nspec: {hostPort: \"third.example:7\"}\n");
    hook.seen.lock().expect("lock").clear();
    let list: Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "convs.v1.stable.example.com", "-o", "json"]))
            .expect("json");
    let host_ports: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["spec"]["hostPort"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        host_ports,
        ["127.0.0.1:9090", "example.com:443", "third.example:7"]
    );
    // Only the v2-stored object (third) needed converting for the v1 list.
    assert_eq!(to_v1_calls(hook), [1]);
    let list: Value =
        serde_json::from_str(&c.kubectl_ok(&["get", "convs.v2.stable.example.com", "-o", "json"]))
            .expect("json");
    let hosts: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["spec"]["host"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(hosts, ["127.0.0.1", "example.com", "third.example"]);
    c.kubectl_ok(&["delete", "crd", "convs.stable.example.com"]);
}
