//! Custom resources converted by their CRD's conversion webhook (`spec.conversion.strategy:
//! Webhook`), as upstream's webhook converter: one ConversionReview (v1 or v1beta1, the first
//! the CRD accepts) carries the objects that are not in the wanted version; the answer must
//! match the request (uid, result, count), every converted object keeps its kind, name,
//! namespace and uid, and gets its original metadata back except labels and annotations.
//!
//! The registry converts synchronously (decoding is not async), so a call runs on the current
//! multi-threaded runtime through `block_in_place`.

use std::sync::{Arc, LazyLock, OnceLock, RwLock};
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use serde_json::{Map, Value, json};

use crate::admission::ServiceResolver;
use crate::admission::webhook::client::post_json;
use crate::admission::webhook::config::{ClientTarget, parse_target, tls_config};

/// Upstream sets no timeout of its own on conversion calls; k1s bounds a call at this.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// ConversionReview versions this server speaks, in the order it prefers none over another:
/// the CRD's own list order decides.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// How webhooks are reached: Services through their endpoints, and the roots trusted for a
/// webhook without a caBundle (the cluster CA).
struct Reach {
    resolver: Arc<dyn ServiceResolver>,
    default_roots: Vec<CertificateDer<'static>>,
}

static REACH: LazyLock<RwLock<Option<Arc<Reach>>>> = LazyLock::new(RwLock::default);

/// Sets how conversion webhooks are reached (once, at server start).
pub fn configure(resolver: Arc<dyn ServiceResolver>, default_roots: Vec<CertificateDer<'static>>) {
    *REACH.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(Reach {
        resolver,
        default_roots,
    }));
}

/// One CRD's conversion webhook, parsed from `spec.conversion.webhook`.
#[derive(Debug)]
pub struct ConversionWebhook {
    /// `group/v1, Kind=Kind`-style names of the CRD's kind are built from this.
    group: String,
    kind: String,
    client_config: Value,
    target: Result<ClientTarget, String>,
    /// Built on first use (the default roots are known only once the server runs).
    tls: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
    review_version: Option<&'static str>,
}

impl ConversionWebhook {
    /// The webhook of a CRD whose conversion strategy is `Webhook`.
    pub fn from_crd(crd: &Value) -> Option<Arc<Self>> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion["strategy"] != "Webhook" {
            return None;
        }
        let webhook = &conversion["webhook"];
        let client_config = webhook["clientConfig"].clone();
        let review_version = webhook["conversionReviewVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|v| REVIEW_VERSIONS.into_iter().find(|known| *known == v));
        Some(Arc::new(Self {
            group: crd["spec"]["group"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            kind: crd["spec"]["names"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            target: parse_target(&client_config),
            client_config,
            tls: OnceLock::new(),
            review_version,
        }))
    }

    /// Go's `GroupVersionKind.String()` for an apiVersion of this kind.
    fn gvk(&self, api_version: &str) -> String {
        let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
        format!("{}/{version}, Kind={}", self.group, self.kind)
    }

    /// Converts `objects` to `desired` (`group/version`) in place. Objects already in that
    /// version are not sent. The error is upstream's message.
    pub fn convert(&self, objects: &mut [Value], desired: &str) -> Result<(), String> {
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i]["apiVersion"] != desired)
            .collect();
        let Some(&first) = pending.first() else {
            return Ok(());
        };
        let source = self.gvk(objects[first]["apiVersion"].as_str().unwrap_or_default());
        let sent: Vec<Value> = pending.iter().map(|&i| objects[i].clone()).collect();
        let converted = self.call(&sent, desired).map_err(|e| {
            format!("conversion for {source} failed: conversion webhook for {source} failed: {e}")
        })?;
        if converted.len() != sent.len() {
            return Err(format!(
                "conversion for {source} returned {} objects, expected {}",
                converted.len(),
                sent.len()
            ));
        }
        let wanted_kind = self.kind.as_str();
        for (n, (converted, &i)) in converted.into_iter().zip(&pending).enumerate() {
            // Upstream counts the index from 1 here.
            let index = n + 1;
            let invalid = |e: String| {
                format!(
                    "conversion for {source} returned invalid converted object at index {index}: {e}"
                )
            };
            let mut converted = converted;
            let got_version = converted["apiVersion"].as_str().unwrap_or_default();
            if got_version != desired {
                return Err(invalid(format!(
                    "invalid groupVersion (expected {desired}, received {got_version})"
                )));
            }
            let got_kind = converted["kind"].as_str().unwrap_or_default();
            let original_kind = objects[i]["kind"].as_str().unwrap_or(wanted_kind);
            if got_kind != original_kind {
                return Err(invalid(format!(
                    "invalid kind (expected {original_kind}, received {got_kind})"
                )));
            }
            same_identity(&objects[i], &converted).map_err(invalid)?;
            restore_metadata(&objects[i], &mut converted).map_err(|e| {
                format!(
                    "conversion for {source} returned invalid metadata in object at index {index}: {e}"
                )
            })?;
            objects[i] = converted;
        }
        Ok(())
    }

    /// Sends one ConversionReview and returns the converted objects of a successful answer.
    fn call(&self, objects: &[Value], desired: &str) -> Result<Vec<Value>, String> {
        let Some(review_version) = self.review_version else {
            return Err("no supported conversion review versions".into());
        };
        let target = self.target.as_ref().map_err(Clone::clone)?;
        let reach = REACH
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or("conversion webhooks are not configured")?;
        let tls = self
            .tls
            .get_or_init(|| tls_config(&self.client_config, &reach.default_roots))
            .clone()?;
        let uid = uuid::Uuid::new_v4().to_string();
        let request = json!({
            "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        });
        let body = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
        let answer = block_on(async {
            post_json(
                target,
                tls,
                CALL_TIMEOUT,
                false,
                body,
                reach.resolver.as_ref(),
            )
            .await
        })??;
        let review: Value = serde_json::from_slice(&answer)
            .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
        converted_objects(&review, review_version, &uid)
    }
}

/// The converted objects of a ConversionReview answer, checked as upstream checks them (a
/// v1beta1 answer's kind and uid are not checked, for compatibility).
fn converted_objects(review: &Value, version: &str, uid: &str) -> Result<Vec<Value>, String> {
    if version == "v1" {
        let (api_version, kind) = (
            review["apiVersion"].as_str().unwrap_or_default(),
            review["kind"].as_str().unwrap_or_default(),
        );
        if (api_version, kind) != ("apiextensions.k8s.io/v1", "ConversionReview") {
            let got = match api_version.rsplit_once('/') {
                Some((g, v)) => format!("{g}/{v}, Kind={kind}"),
                None => format!("/{api_version}, Kind={kind}"),
            };
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}"
            ));
        }
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    if version == "v1" {
        let got = response["uid"].as_str().unwrap_or_default();
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let result = &response["result"];
    let status = result["status"].as_str().unwrap_or_default();
    if status != "Success" {
        return match result["message"].as_str().filter(|m| !m.is_empty()) {
            Some(m) => Err(m.to_string()),
            None => Err(format!(
                "response.result.status was '{status}', not 'Success'"
            )),
        };
    }
    match &response["convertedObjects"] {
        Value::Array(items) => Ok(items.clone()),
        Value::Null => Ok(Vec::new()),
        other => Err(format!(
            "convertedObjects: expected an array, got {}",
            go_type(other)
        )),
    }
}

/// Upstream's validateConvertedObject: kind, name, namespace and uid are kept.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    let field = |v: &Value, pointer: &str| {
        v.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    for (what, pointer) in [
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
        ("UID", "/metadata/uid"),
    ] {
        let (e, a) = (field(original, pointer), field(converted, pointer));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

/// Upstream's restoreObjectMeta: the converted object gets the original's metadata, except
/// the labels and annotations the webhook returned (validated when they changed).
fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let converted_meta = match converted.get("metadata") {
        None => {
            return match original.get("metadata") {
                None => Ok(()),
                Some(_) => Err("missing metadata in converted object".into()),
            };
        }
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut result = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        None => Map::new(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in input object",
                go_type(other)
            ));
        }
    };
    for field in ["labels", "annotations"] {
        let Some(returned) = converted_meta.get(field).filter(|v| !v.is_null()) else {
            result.remove(field);
            continue;
        };
        let Value::Object(returned) = returned else {
            return Err(format!(
                "invalid metadata.{field} of type {} in converted object",
                go_type(returned)
            ));
        };
        let empty = Map::new();
        let before = result
            .get(field)
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut changed = before.len() != returned.len();
        let mut pairs = Vec::with_capacity(returned.len());
        for (k, v) in returned {
            let Some(s) = v.as_str() else {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            };
            changed |= before.get(k) != Some(v);
            pairs.push((k.clone(), s.to_string()));
        }
        if changed {
            let errs = if field == "labels" {
                k1s_apimachinery::meta::validate_labels(&pairs, "metadata.labels")
            } else {
                k1s_apimachinery::meta::validate_annotations(&pairs, "metadata.annotation")
            };
            if !errs.is_empty() {
                let texts: Vec<String> = errs.iter().map(ToString::to_string).collect();
                return Err(crate::auth::rbac::aggregate_errors(&texts));
            }
        }
        result.insert(field.to_string(), Value::Object(returned.clone()));
    }
    converted["metadata"] = Value::Object(result);
    Ok(())
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Runs `f` to completion from synchronous code inside the server's runtime.
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, String> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let handle = Handle::try_current().map_err(|_| "no async runtime to call the webhook on")?;
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return Err("conversion webhooks need the multi-threaded runtime".into());
    }
    Ok(tokio::task::block_in_place(|| handle.block_on(f)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_as_upstream() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(converted_objects(&ok, "v1", "u1").unwrap().len(), 1);
        assert_eq!(
            converted_objects(&ok, "v1", "u2").unwrap_err(),
            r#"expected response.uid="u2", got "u1""#
        );
        let wrong_kind = json!({"apiVersion": "v1", "kind": "Status"});
        assert_eq!(
            converted_objects(&wrong_kind, "v1", "u1").unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /v1, Kind=Status"
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {"status": "Failure", "message": "nope"}}});
        assert_eq!(converted_objects(&failed, "v1", "u1").unwrap_err(), "nope");
        let silent = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {}}});
        assert_eq!(
            converted_objects(&silent, "v1", "u1").unwrap_err(),
            "response.result.status was '', not 'Success'"
        );
        // v1beta1 answers are not checked for kind or uid.
        let beta = json!({"response": {"result": {"status": "Success"}, "convertedObjects": []}});
        assert!(
            converted_objects(&beta, "v1beta1", "u1")
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            converted_objects(&json!({}), "v1beta1", "u1").unwrap_err(),
            "no response provided"
        );
    }

    #[test]
    fn metadata_is_restored_but_labels_and_annotations_kept() {
        let original = json!({"kind": "K", "metadata": {"name": "a", "uid": "1", "resourceVersion": "5",
            "labels": {"x": "1"}, "annotations": {"keep": "me"}}});
        let mut converted = json!({"kind": "K", "metadata": {"name": "a", "uid": "1",
            "labels": {"x": "2", "y": "3"}, "generation": 99}});
        same_identity(&original, &converted).unwrap();
        restore_metadata(&original, &mut converted).unwrap();
        assert_eq!(
            converted["metadata"],
            json!({"name": "a", "uid": "1", "resourceVersion": "5", "labels": {"x": "2", "y": "3"}})
        );
        let renamed = json!({"kind": "K", "metadata": {"name": "b", "uid": "1"}});
        assert_eq!(
            same_identity(&original, &renamed).unwrap_err(),
            "must have the same name: a != b"
        );
        let mut bad_label = json!({"metadata": {"labels": {"x": 1}}});
        assert_eq!(
            restore_metadata(&original, &mut bad_label).unwrap_err(),
            "metadata.labels[x] must be a string, but is int64 in converted object"
        );
        let mut invalid_label = json!({"metadata": {"labels": {"x": "a b"}}});
        assert!(
            restore_metadata(&original, &mut invalid_label)
                .unwrap_err()
                .starts_with("metadata.labels: Invalid value: \"a b\"")
        );
        let mut no_meta = json!({"kind": "K"});
        assert_eq!(
            restore_metadata(&original, &mut no_meta).unwrap_err(),
            "missing metadata in converted object"
        );
    }

    #[test]
    fn the_review_version_is_the_first_known_one() {
        let crd = |versions: Value| {
            json!({"spec": {"group": "g.io", "names": {"kind": "K"}, "conversion": {"strategy": "Webhook",
                "webhook": {"conversionReviewVersions": versions, "clientConfig": {"url": "https://h/convert"}}}}})
        };
        let hook = ConversionWebhook::from_crd(&crd(json!(["v2", "v1beta1", "v1"]))).unwrap();
        assert_eq!(hook.review_version, Some("v1beta1"));
        assert_eq!(hook.gvk("g.io/v3"), "g.io/v3, Kind=K");
        let none = json!({"spec": {"conversion": {"strategy": "None"}}});
        assert!(ConversionWebhook::from_crd(&none).is_none());
    }
}
