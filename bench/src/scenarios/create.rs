//! `create-seq` (one client, one create after another) and `create-par` (`--concurrency`
//! workers over `--connections` HTTP/2 connections): creates/s and per-create latency.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::Method;
use tokio::time::Instant;

use super::{Ctx, ErrorLog, secs_since};
use crate::report::CreateReport;
use crate::stats::{LatencySummary, duration_nanos, rate};

/// Creates `--objects` ConfigMaps from `workers` workers (1 for `create-seq`); worker `w` uses
/// connection `w % connections`. Deletes them afterwards.
pub(crate) async fn run(ctx: &Arc<Ctx>, scenario: &'static str, workers: usize) -> CreateReport {
    let n = ctx.settings.objects;
    let workers = workers.clamp(1, n.max(1));
    let errors = ErrorLog::new();
    let next = Arc::new(AtomicUsize::new(0));
    let io_pid = ctx.settings.server_io_pid;
    let written_before = io_pid.and_then(server_write_bytes);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (ctx, next, errors) = (ctx.clone(), next.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut timed_out = false;
            let path = ctx.configmaps();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                if ctx.past_deadline() {
                    timed_out = true;
                    break;
                }
                let body = ctx.configmap_bytes(&format!("{scenario}-{i}"), scenario);
                let t = Instant::now();
                match ctx.client.request(w, Method::POST, &path, Some(body)).await {
                    Ok(_) => latencies.push(duration_nanos(t.elapsed())),
                    Err(e) => errors.record("create", &e),
                }
            }
            (latencies, timed_out)
        }));
    }
    let mut latencies = Vec::with_capacity(n);
    let mut timed_out = false;
    for t in tasks {
        if let Ok((l, t)) = t.await {
            latencies.extend(l);
            timed_out |= t;
        }
    }
    let seconds = secs_since(started);
    let objects = latencies.len() as u64;
    let server_written = match (io_pid, written_before) {
        (Some(pid), Some(before)) => {
            // Writes the server started for these creates (a log page, sled's buffers) land
            // within moments; background checkpoints are counted when they fall inside.
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            server_write_bytes(pid).map(|after| after.saturating_sub(before))
        }
        _ => None,
    };
    let cleanup_seconds = ctx.delete_scenario_objects(scenario, &errors).await;
    CreateReport {
        workers,
        connections: workers.min(ctx.client.connections()),
        objects,
        seconds,
        objects_per_sec: rate(objects, seconds),
        server_write_bytes: server_written,
        server_write_bytes_per_create: server_written
            .filter(|_| objects > 0)
            .map(|b| b as f64 / objects as f64),
        latency_ms: LatencySummary::from_nanos(&mut latencies),
        cleanup_seconds,
        timed_out,
        errors: errors.snapshot(),
    }
}

/// `write_bytes` of `/proc/<pid>/io`: bytes the process caused to be written to storage.
fn server_write_bytes(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}
