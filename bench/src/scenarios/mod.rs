//! The scenarios and what they share: the run context (client, namespace, sizes, deadline),
//! ConfigMap bodies, error bookkeeping, bulk creation and per-scenario cleanup.

pub(crate) mod create;
pub(crate) mod list;
pub(crate) mod update;
pub(crate) mod watch;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde::Deserialize;
use serde_json::json;
use tokio::time::Instant;

use crate::client::{ApiClient, ApiError};
use crate::report::{Errors, Settings};

/// The label every object of a run carries, with the scenario's name as its value.
pub(crate) const SCENARIO_LABEL: &str = "k1s-bench/scenario";

/// Distinct error messages kept per scenario.
const MAX_ERROR_SAMPLES: usize = 5;

/// Everything a scenario needs.
pub(crate) struct Ctx {
    pub client: Arc<ApiClient>,
    pub ns: String,
    pub settings: Settings,
    /// The whole run's deadline (`--timeout`): every loop stops there.
    pub deadline: Instant,
    /// Raised on Ctrl-C: loops stop as at the deadline.
    cancel: tokio::sync::watch::Receiver<bool>,
    payload: String,
}

impl Ctx {
    pub fn new(
        client: Arc<ApiClient>,
        ns: String,
        settings: Settings,
        deadline: Instant,
        cancel: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        let payload = payload(settings.object_size);
        Ctx {
            client,
            ns,
            settings,
            deadline,
            cancel,
            payload,
        }
    }

    /// The deadline passed or the run was cancelled.
    pub fn past_deadline(&self) -> bool {
        *self.cancel.borrow() || Instant::now() >= self.deadline
    }

    /// A receiver that turns true when the run is cancelled.
    pub fn cancelled(&self) -> tokio::sync::watch::Receiver<bool> {
        self.cancel.clone()
    }

    /// `/api/v1/namespaces/<ns>/configmaps`.
    pub fn configmaps(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.ns)
    }

    /// A ConfigMap of about `--object-size` bytes of data, labelled with its scenario.
    pub fn configmap(&self, name: &str, scenario: &str) -> serde_json::Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": self.ns,
                "labels": {
                    "app.kubernetes.io/managed-by": "k1s-bench",
                    SCENARIO_LABEL: scenario,
                },
            },
            "data": {"payload": self.payload},
        })
    }

    pub fn configmap_bytes(&self, name: &str, scenario: &str) -> Bytes {
        Bytes::from(self.configmap(name, scenario).to_string())
    }

    /// Creates `<prefix>-<i>` for `i` in `0..n` from `--concurrency` workers (setup, not
    /// measured). Returns how many were created.
    pub async fn create_many(
        self: &Arc<Self>,
        scenario: &'static str,
        prefix: &'static str,
        n: usize,
        errors: &Arc<ErrorLog>,
    ) -> u64 {
        let next = Arc::new(AtomicUsize::new(0));
        let created = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for w in 0..self.settings.concurrency.min(n.max(1)) {
            let (ctx, next, created, errors) =
                (self.clone(), next.clone(), created.clone(), errors.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || ctx.past_deadline() {
                        return;
                    }
                    let body = ctx.configmap_bytes(&format!("{prefix}-{i}"), scenario);
                    match ctx
                        .client
                        .request(w, Method::POST, &ctx.configmaps(), Some(body))
                        .await
                    {
                        Ok(_) => {
                            created.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => errors.record("create", &e),
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        created.load(Ordering::Relaxed)
    }

    /// Deletes the scenario's objects (a delete-collection by label, then one by one whatever
    /// is left, e.g. on a server without delete-collection). Returns the time it took.
    pub async fn delete_scenario_objects(
        self: &Arc<Self>,
        scenario: &str,
        errors: &Arc<ErrorLog>,
    ) -> f64 {
        let started = Instant::now();
        let selector = format!(
            "labelSelector={}",
            query_escape(&format!("{SCENARIO_LABEL}={scenario}"))
        );
        let collection = format!("{}?{selector}", self.configmaps());
        // Best effort: a failure here is repaired by the one-by-one pass below.
        let _ = self
            .client
            .request(0, Method::DELETE, &collection, None)
            .await;
        match self.list_names(Some(&selector)).await {
            Ok(left) => {
                self.delete_each(left, errors).await;
            }
            Err(e) => errors.record("cleanup list", &e),
        }
        started.elapsed().as_secs_f64()
    }

    /// Names of the namespace's ConfigMaps (optionally filtered by a query such as a label
    /// selector), following `continue` tokens.
    pub async fn list_names(&self, query: Option<&str>) -> Result<Vec<String>, ApiError> {
        #[derive(Deserialize)]
        struct Meta {
            name: String,
        }
        #[derive(Deserialize)]
        struct Item {
            metadata: Meta,
        }
        #[derive(Deserialize, Default)]
        struct ListMeta {
            #[serde(rename = "continue", default)]
            continue_token: Option<String>,
        }
        #[derive(Deserialize)]
        struct List {
            #[serde(default)]
            items: Vec<Item>,
            #[serde(default)]
            metadata: ListMeta,
        }
        let mut names = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..100_000 {
            let mut path = format!("{}?limit=500", self.configmaps());
            if let Some(q) = query {
                path.push('&');
                path.push_str(q);
            }
            if let Some(t) = &token {
                path.push_str("&continue=");
                path.push_str(&query_escape(t));
            }
            let body = self.client.request(0, Method::GET, &path, None).await?;
            let list: List = serde_json::from_slice(&body)
                .map_err(|e| ApiError::Transport(format!("decoding a ConfigMap list: {e}")))?;
            names.extend(list.items.into_iter().map(|i| i.metadata.name));
            token = list.metadata.continue_token.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
        }
        Ok(names)
    }

    /// Deletes the named ConfigMaps one by one from `--concurrency` workers; a 404 counts as
    /// deleted. Returns how many were deleted.
    pub async fn delete_each(self: &Arc<Self>, names: Vec<String>, errors: &Arc<ErrorLog>) -> u64 {
        let names = Arc::new(names);
        let next = Arc::new(AtomicUsize::new(0));
        let deleted = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for w in 0..self.settings.concurrency.min(names.len()) {
            let (ctx, names, next, deleted, errors) = (
                self.clone(),
                names.clone(),
                next.clone(),
                deleted.clone(),
                errors.clone(),
            );
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(name) = names.get(i) else {
                        return;
                    };
                    let path = format!("{}/{name}", ctx.configmaps());
                    match ctx.client.request(w, Method::DELETE, &path, None).await {
                        Ok(_) => {
                            deleted.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) if e.is_not_found() => {
                            deleted.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => errors.record("delete", &e),
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        deleted.load(Ordering::Relaxed)
    }
}

/// Counts failed requests and keeps the first few distinct messages.
#[derive(Debug, Default)]
pub(crate) struct ErrorLog {
    count: AtomicU64,
    samples: Mutex<Vec<String>>,
}

impl ErrorLog {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn record(&self, what: &str, e: &ApiError) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let msg = format!("{what}: {e}");
        if let Ok(mut samples) = self.samples.lock()
            && samples.len() < MAX_ERROR_SAMPLES
            && !samples.contains(&msg)
        {
            samples.push(msg);
        }
    }

    /// Records a failure that is not a request's (a wrong answer).
    pub fn record_msg(&self, msg: String) {
        self.count.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut samples) = self.samples.lock()
            && samples.len() < MAX_ERROR_SAMPLES
        {
            samples.push(msg);
        }
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> Errors {
        Errors {
            errors: self.count(),
            error_samples: self.samples.lock().map(|s| s.clone()).unwrap_or_default(),
        }
    }
}

/// `~size` bytes of printable, varied text.
fn payload(size: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..size)
        .map(|i| ALPHABET[(i * 7 + i / 36) % ALPHABET.len()] as char)
        .collect()
}

/// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay).
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Seconds since `start`, as a float.
pub(crate) fn secs_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

/// The time left before `deadline` (zero when past).
pub(crate) fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_escaping() {
        assert_eq!(
            query_escape("k1s-bench/scenario=list"),
            "k1s-bench%2Fscenario%3Dlist"
        );
        assert_eq!(query_escape("a b+c~"), "a%20b%2Bc~");
    }

    #[test]
    fn payload_has_the_requested_size() {
        assert_eq!(payload(1024).len(), 1024);
        assert_eq!(payload(0), "");
    }
}
