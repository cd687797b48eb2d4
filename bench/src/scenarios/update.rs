//! `update-conflict`: `--concurrency` workers do read-modify-write updates of a few shared
//! ConfigMaps (the resourceVersion read is the precondition), re-reading and retrying on 409.
//! Each update increments a counter in the object, so lost updates show in the final counters.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use http::Method;
use serde_json::Value;
use tokio::time::Instant;

use super::{Ctx, ErrorLog, secs_since};
use crate::client::ApiError;
use crate::report::UpdateReport;
use crate::stats::{LatencySummary, duration_nanos, rate};

const SCENARIO: &str = "update-conflict";

fn counter(obj: &Value) -> u64 {
    obj.pointer("/data/counter")
        .and_then(Value::as_str)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn decode(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::Transport(format!("decoding a ConfigMap: {e}")))
}

pub(crate) async fn run(ctx: &Arc<Ctx>) -> UpdateReport {
    let shared = ctx.settings.shared_objects.max(1);
    let updates = ctx.settings.updates;
    let workers = ctx.settings.concurrency.max(1);
    let errors = ErrorLog::new();
    let path = ctx.configmaps();
    let name = |j: usize| format!("shared-{j}");

    for j in 0..shared {
        let mut obj = ctx.configmap(&name(j), SCENARIO);
        obj["data"]["counter"] = Value::String("0".into());
        if let Err(e) = ctx
            .client
            .request(0, Method::POST, &path, Some(Bytes::from(obj.to_string())))
            .await
        {
            errors.record("create", &e);
        }
    }

    let tickets = Arc::new(AtomicUsize::new(0));
    let successes: Arc<Vec<AtomicU64>> = Arc::new((0..shared).map(|_| AtomicU64::new(0)).collect());
    let conflicts = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (ctx, tickets, successes, conflicts, errors) = (
            ctx.clone(),
            tickets.clone(),
            successes.clone(),
            conflicts.clone(),
            errors.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut timed_out = false;
            'tickets: loop {
                let t = tickets.fetch_add(1, Ordering::Relaxed);
                if t >= updates {
                    break;
                }
                let j = t % shared;
                let obj_path = format!("{}/shared-{j}", ctx.configmaps());
                let first_read = Instant::now();
                loop {
                    if ctx.past_deadline() {
                        timed_out = true;
                        break 'tickets;
                    }
                    let read = ctx
                        .client
                        .request(w, Method::GET, &obj_path, None)
                        .await
                        .and_then(|b| decode(&b));
                    let mut obj = match read {
                        Ok(obj) => obj,
                        Err(e) => {
                            errors.record("get", &e);
                            break;
                        }
                    };
                    // The object as read keeps its metadata.resourceVersion: the precondition.
                    obj["data"]["counter"] = Value::String((counter(&obj) + 1).to_string());
                    let body = Bytes::from(obj.to_string());
                    match ctx
                        .client
                        .request(w, Method::PUT, &obj_path, Some(body))
                        .await
                    {
                        Ok(_) => {
                            successes[j].fetch_add(1, Ordering::Relaxed);
                            latencies.push(duration_nanos(first_read.elapsed()));
                            break;
                        }
                        Err(e) if e.is_conflict() => {
                            conflicts.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            errors.record("update", &e);
                            break;
                        }
                    }
                }
            }
            (latencies, timed_out)
        }));
    }
    let mut latencies = Vec::with_capacity(updates);
    let mut timed_out = false;
    for t in tasks {
        if let Ok((l, t)) = t.await {
            latencies.extend(l);
            timed_out |= t;
        }
    }
    let seconds = secs_since(started);

    // Every acknowledged update must show in the final counter.
    let mut lost_updates = 0;
    for (j, done) in successes.iter().enumerate() {
        let obj_path = format!("{path}/{}", name(j));
        match ctx
            .client
            .request(0, Method::GET, &obj_path, None)
            .await
            .and_then(|b| decode(&b))
        {
            Ok(obj) => lost_updates += done.load(Ordering::Relaxed).saturating_sub(counter(&obj)),
            Err(e) => errors.record("final get", &e),
        }
    }

    let cleanup_seconds = ctx.delete_scenario_objects(SCENARIO, &errors).await;
    let done = latencies.len() as u64;
    let conflicts = conflicts.load(Ordering::Relaxed);
    UpdateReport {
        workers,
        connections: workers.min(ctx.client.connections()),
        shared_objects: shared,
        updates: done,
        conflicts,
        seconds,
        updates_per_sec: rate(done, seconds),
        conflicts_per_sec: rate(conflicts, seconds),
        lost_updates,
        latency_ms: LatencySummary::from_nanos(&mut latencies),
        cleanup_seconds,
        timed_out,
        errors: errors.snapshot(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_read_from_configmap_data() {
        assert_eq!(counter(&serde_json::json!({"data": {"counter": "41"}})), 41);
        assert_eq!(counter(&serde_json::json!({"data": {}})), 0);
        assert_eq!(counter(&serde_json::json!({"data": {"counter": "x"}})), 0);
    }
}
