//! Upstream's AvailableConditionController: every remote APIService is checked when
//! APIServices change and every few seconds after. The Service must exist and listen on the
//! port, its endpoints must hold an address, and the backend must answer
//! `GET /apis/<group>/<version>` with a 2xx within 5 s (asked as `system:kube-aggregator` in
//! `system:masters`, TLS not verified, as upstream). The outcome is the `Available` condition,
//! written only when it changes. A passing check also keeps the backend's resources (for
//! discovery) and its OpenAPI v3 document.

use std::sync::Arc;
use std::time::Duration;

use k1s_apimachinery::catalog;
use serde_json::{Value, json};

use super::transport;
use super::{Aggregator, Remote};
use crate::registry::{Target, WriteOptions};

/// How often every remote APIService is checked (upstream requeues on a 30 s resync and on
/// every Service or Endpoints change; k1s checks more often instead of following those).
const CHECK_INTERVAL: Duration = Duration::from_secs(10);

/// Upstream's discovery-check client timeout.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// The `Available` condition's status, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Outcome {
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

pub(super) async fn run(agg: Arc<Aggregator>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let tls = match transport::client_config(None, true, agg.identity.as_ref()) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "aggregator: no TLS for availability checks");
            return;
        }
    };
    loop {
        let remotes = agg.remotes();
        let checks = remotes
            .values()
            .map(|r| check_one(&agg, r.clone(), tls.clone()));
        futures::future::join_all(checks).await;
        tokio::select! {
            _ = shutdown.wait_for(|s| *s) => return,
            _ = agg.changed.notified() => {}
            _ = tokio::time::sleep(CHECK_INTERVAL) => {}
        }
    }
}

async fn check_one(agg: &Aggregator, remote: Arc<Remote>, tls: Arc<rustls::ClientConfig>) {
    let outcome = check(agg, &remote, tls).await;
    if outcome.status != "True" && remote.available {
        tracing::warn!(apiservice = %remote.name, reason = %outcome.reason,
            message = %outcome.message, "aggregated API became unavailable");
    }
    write_condition(agg, &remote.name, &outcome).await;
}

async fn check(agg: &Aggregator, remote: &Remote, tls: Arc<rustls::ClientConfig>) -> Outcome {
    let addr = match transport::resolve(&agg.registry, &remote.service).await {
        Ok(a) => a,
        Err(u) => {
            return Outcome {
                status: "False",
                reason: u.reason.to_string(),
                message: u.message,
            };
        }
    };
    let path = format!("/apis/{}/{}", remote.group, remote.version);
    let url = format!("https://{addr}{path}");
    let server_name = remote.service.server_name();
    let get = |path: String| {
        let tls = tls.clone();
        let server_name = server_name.clone();
        async move {
            tokio::time::timeout(
                CHECK_TIMEOUT,
                transport::get(
                    addr,
                    &server_name,
                    tls,
                    &path,
                    "system:kube-aggregator",
                    &["system:masters"],
                ),
            )
            .await
            .unwrap_or_else(|_| {
                Err(
                    "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                        .into(),
                )
            })
        }
    };
    let failed = |detail: String| Outcome {
        status: "False",
        reason: "FailedDiscoveryCheck".into(),
        message: format!("failing or missing response from {url}: {detail}"),
    };
    let body = match get(path.clone()).await {
        Ok((code, body)) if (200..300).contains(&code) => body,
        Ok((code, _)) => return failed(format!("bad status from {url}: {code}")),
        Err(e) => return failed(format!("Get {url:?}: {e}")),
    };
    let resources = serde_json::from_slice::<Value>(&body)
        .map(|list| super::resources_of(&remote.group, &remote.version, &list))
        .unwrap_or_default();
    // The OpenAPI documents are fetched once, then again when the resources change.
    let openapi = if agg.openapi_current(&remote.name, &resources) {
        None
    } else {
        let v3 = match get(format!("/openapi/v3{path}")).await {
            Ok((200, doc)) if serde_json::from_slice::<Value>(&doc).is_ok() => {
                let hash = crate::apiextensions::openapi::hash_of(&doc);
                Some((doc, hash))
            }
            _ => None,
        };
        let v2 = match get("/openapi/v2".to_string()).await {
            Ok((200, doc)) => serde_json::from_slice::<Value>(&doc)
                .ok()
                .map(|d| v2_part(&d, &path)),
            _ => None,
        };
        Some(super::BackendOpenApi { v3, v2 })
    };
    agg.set_discovered(&remote.name, resources, openapi);
    Outcome {
        status: "True",
        reason: "Passed".into(),
        message: "all checks passed".into(),
    }
}

/// What a backend's Swagger 2.0 document adds: its paths under `prefix` (its group/version)
/// and its definitions (those this server already has are not taken, when merged).
fn v2_part(doc: &Value, prefix: &str) -> Value {
    let paths: serde_json::Map<String, Value> = doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(p, _)| p.as_str() == prefix || p.starts_with(&format!("{prefix}/")))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    json!({ "paths": paths, "definitions": doc["definitions"].clone() })
}

/// Sets the `Available` condition through the status subresource when it differs.
async fn write_condition(agg: &Aggregator, name: &str, outcome: &Outcome) {
    let Some(info) = catalog::find("apiregistration.k8s.io", "v1", "apiservices") else {
        return;
    };
    let t = Target {
        info,
        namespace: None,
    };
    let Ok(current) = agg.registry.get(t, name).await else {
        return;
    };
    if !set_available(&mut current.clone(), outcome) {
        return;
    }
    let strategy = crate::strategies::for_resource(info);
    let result = agg
        .registry
        .update(
            t,
            strategy,
            name,
            Some("status"),
            &WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                set_available(&mut new, outcome);
                Ok(new)
            },
        )
        .await;
    if let Err(e) = result
        && !e.is_not_found()
    {
        tracing::warn!(apiservice = %name, error = %e.message, "aggregator: status update failed");
    }
}

/// Sets the `Available` condition (its lastTransitionTime moves only with its status);
/// returns whether anything changed.
pub(super) fn set_available(obj: &mut Value, outcome: &Outcome) -> bool {
    if !obj["status"].is_object() {
        obj["status"] = json!({});
    }
    if !obj["status"]["conditions"].is_array() {
        obj["status"]["conditions"] = json!([]);
    }
    let Some(list) = obj["status"]["conditions"].as_array_mut() else {
        return false;
    };
    let now = crate::registry::now_rfc3339();
    match list.iter_mut().find(|c| c["type"] == "Available") {
        Some(c) => {
            if c["status"] == outcome.status
                && c["reason"] == outcome.reason.as_str()
                && c["message"] == outcome.message.as_str()
            {
                return false;
            }
            if c["status"] != outcome.status {
                c["lastTransitionTime"] = json!(now);
            }
            c["status"] = json!(outcome.status);
            c["reason"] = json!(outcome.reason);
            c["message"] = json!(outcome.message);
        }
        None => list.push(json!({
            "type": "Available", "status": outcome.status, "lastTransitionTime": now,
            "reason": outcome.reason, "message": outcome.message,
        })),
    }
    true
}
