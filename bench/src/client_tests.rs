//! Tests of the client: server URL parsing, TLS setup from real kubeconfig files, and requests
//! over HTTP/2 against an in-test TLS server that checks the client certificate.
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k1s_kubeadm_lite::{
    Kubeconfig, PkiOptions, ResolvedContext, ensure_pki, write_admin_kubeconfig,
};
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use tokio::net::TcpListener;

use super::*;

#[test]
fn server_urls() {
    let u = ServerUrl::parse("https://127.0.0.1:6443").unwrap();
    assert_eq!(
        u,
        ServerUrl {
            host: "127.0.0.1".into(),
            port: 6443,
            base: "https://127.0.0.1:6443".into()
        }
    );
    let u = ServerUrl::parse("https://[::1]:8443/k8s/clusters/c-1/").unwrap();
    assert_eq!((u.host.as_str(), u.port), ("::1", 8443));
    assert_eq!(u.base, "https://[::1]:8443/k8s/clusters/c-1");
    assert_eq!(ServerUrl::parse("https://example.com").unwrap().port, 443);

    let err = ServerUrl::parse("http://127.0.0.1:8080").unwrap_err();
    assert!(err.to_string().contains("TLS"), "{err}");
    let err = ServerUrl::parse("127.0.0.1:6443").unwrap_err();
    assert!(format!("{err:#}").contains("scheme"), "{err:#}");
}

/// A cluster PKI and an admin kubeconfig for `server`, as `k1s server` writes them.
fn admin_kubeconfig(dir: &Path, server: &str) -> (ResolvedContext, k1s_kubeadm_lite::Pki) {
    let pki = ensure_pki(&dir.join("pki"), &PkiOptions::for_server(&[], None)).unwrap();
    let (cert, key) = pki
        .issue_client_cert(
            "kubernetes-admin",
            &["system:masters"],
            Duration::from_secs(3600),
        )
        .unwrap();
    let path = dir.join("admin.conf");
    write_admin_kubeconfig(&path, server, "k1s", pki.ca_cert_pem(), &cert, &key).unwrap();
    (Kubeconfig::load_context(&path, None).unwrap(), pki)
}

#[test]
fn tls_config_from_an_admin_kubeconfig() {
    let tmp = tempfile::tempdir().unwrap();
    let (ctx, _pki) = admin_kubeconfig(tmp.path(), "https://127.0.0.1:6443");
    let config = tls_config(&ctx).unwrap();
    assert_eq!(config.alpn_protocols[0], b"h2".to_vec());
    assert!(config.client_auth_cert_resolver.has_certs());

    // Missing or broken pieces are reported by name, never silently skipped.
    let err = |ctx: ResolvedContext| format!("{:#}", tls_config(&ctx).unwrap_err());
    let no_ca = ResolvedContext {
        ca_pem: None,
        ..ctx.clone()
    };
    assert!(err(no_ca).contains("certificate-authority"));
    let bad_ca = ResolvedContext {
        ca_pem: Some(b"not a pem".to_vec()),
        ..ctx.clone()
    };
    assert!(err(bad_ca).contains("certificate-authority"));
    let no_key = ResolvedContext {
        client_key_pem: None,
        ..ctx.clone()
    };
    assert!(err(no_key).contains("no client-key"));
    let wrong_key = ResolvedContext {
        // A certificate's PEM is no key at all.
        client_key_pem: ctx.ca_pem.clone(),
        ..ctx.clone()
    };
    assert!(err(wrong_key).contains("client-key"));

    // insecure-skip-tls-verify needs no CA; an anonymous user presents no certificate.
    let insecure_anonymous = ResolvedContext {
        ca_pem: None,
        client_cert_pem: None,
        client_key_pem: None,
        insecure: true,
        ..ctx
    };
    let config = tls_config(&insecure_anonymous).unwrap();
    assert!(!config.client_auth_cert_resolver.has_certs());
}

/// Serves HTTP/2 over TLS with the PKI's serving certificate. Answers `/whoami` with whether a
/// client certificate verified by the cluster CA was presented and the Authorization header,
/// and `/conflict` with a 409 `Status`.
async fn tls_server(pki: &k1s_kubeadm_lite::Pki, alpn: &[&[u8]]) -> std::net::SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    roots.add(pki.ca_cert_der().clone()).unwrap();
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(pki.serving_cert_chain_der(), pki.serving_key_der())
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let has_cert = tls.get_ref().1.peer_certificates().is_some();
                let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let auth = req
                        .headers()
                        .get(http::header::AUTHORIZATION)
                        .map(|v| v.to_str().unwrap_or("").to_string());
                    let resp = match req.uri().path() {
                        "/prefix/whoami" => Response::new(Full::new(Bytes::from(
                            serde_json::json!({"cert": has_cert, "auth": auth}).to_string(),
                        ))),
                        _ => {
                            let mut r = Response::new(Full::new(Bytes::from_static(
                                br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Operation cannot be fulfilled on configmaps \"a\": the object has been modified","reason":"Conflict","code":409}"#,
                            )));
                            *r.status_mut() = StatusCode::CONFLICT;
                            r
                        }
                    };
                    async move { Ok::<_, Infallible>(resp) }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn requests_over_http2_with_the_client_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, pki) = admin_kubeconfig(tmp.path(), "https://unused");
    let addr = tls_server(&pki, &[b"h2"]).await;
    let (ctx, _) = admin_kubeconfig(
        tmp.path(),
        &format!("https://127.0.0.1:{}/prefix/", addr.port()),
    );
    let client = ApiClient::new(&ctx, 2, Duration::from_secs(10)).unwrap();
    assert_eq!(client.connections(), 2);
    client.connect_all().await.unwrap();

    for conn in 0..4 {
        let body = client
            .request(conn, Method::GET, "/whoami", None)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v, serde_json::json!({"cert": true, "auth": null}));
    }
    let err = client
        .request(1, Method::PUT, "/conflict", Some(Bytes::from_static(b"{}")))
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(
        err.to_string(),
        "409 Conflict: Operation cannot be fulfilled on configmaps \"a\": the object has been modified"
    );
    // A streaming request reports a non-2xx answer the same way.
    let err = client.stream(0, "/conflict").await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
}

#[tokio::test]
async fn bearer_token_and_insecure_skip_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, pki) = admin_kubeconfig(tmp.path(), "https://unused");
    let addr = tls_server(&pki, &[b"h2"]).await;
    let path = tmp.path().join("token.conf");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: c\n  cluster:\n    server: https://localhost:{}/prefix\n    insecure-skip-tls-verify: true\ncontexts:\n- name: t\n  context: {{cluster: c, user: u}}\nusers:\n- name: u\n  user: {{token: abc.def}}\n",
            addr.port()
        ),
    )
    .unwrap();
    let ctx = Kubeconfig::load_context(&path, None).unwrap();
    let client = ApiClient::new(&ctx, 1, Duration::from_secs(10)).unwrap();
    let body = client
        .request(0, Method::GET, "/whoami", None)
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"cert": false, "auth": "Bearer abc.def"})
    );
}

#[tokio::test]
async fn a_server_without_http2_or_with_another_ca_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, pki) = admin_kubeconfig(tmp.path(), "https://unused");
    let addr = tls_server(&pki, &[b"http/1.1"]).await;
    let (ctx, _) = admin_kubeconfig(tmp.path(), &format!("https://127.0.0.1:{}", addr.port()));
    let client = ApiClient::new(&ctx, 1, Duration::from_secs(10)).unwrap();
    let err = client
        .request(0, Method::GET, "/whoami", None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP/2"), "{err}");

    // A kubeconfig whose CA did not sign the serving certificate fails the handshake.
    let other = tempfile::tempdir().unwrap();
    let addr = tls_server(&pki, &[b"h2"]).await;
    let (ctx, _) = admin_kubeconfig(other.path(), &format!("https://127.0.0.1:{}", addr.port()));
    let client = ApiClient::new(&ctx, 1, Duration::from_secs(10)).unwrap();
    let err = client.connect_all().await.unwrap_err();
    assert!(format!("{err:#}").contains("TLS handshake"), "{err:#}");
}

#[test]
fn status_errors_from_non_status_bodies() {
    let e = ApiError::from_response(StatusCode::BAD_GATEWAY, b"  upstream down\n");
    assert_eq!(e.to_string(), "502 Bad Gateway: upstream down");
    let e = ApiError::from_response(
        StatusCode::NOT_FOUND,
        br#"{"kind":"Status","message":"configmaps \"x\" not found","reason":"NotFound","code":404}"#,
    );
    assert!(e.is_not_found());
    assert_eq!(e.to_string(), "404 NotFound: configmaps \"x\" not found");
}
