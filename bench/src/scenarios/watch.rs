//! `watch`: `--watchers` watches on the namespace's ConfigMaps from the resourceVersion of a
//! list, then `--watch-writes` creates; per (watcher, event) delivery latency from the moment
//! the write was sent, and a check that every watcher received every event exactly once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::Method;
use http_body_util::BodyExt;
use serde::Deserialize;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{Ctx, ErrorLog, remaining};
use crate::client::{ApiClient, ApiError};
use crate::report::WatchReport;
use crate::stats::{LatencySummary, duration_nanos, rate};

const SCENARIO: &str = "watch";
/// How long watchers may take, after the last write was answered, to receive every event.
const DELIVERY_GRACE: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "resourceVersion", default)]
    resource_version: String,
}

#[derive(Deserialize)]
struct List {
    metadata: ListMeta,
}

#[derive(Deserialize, Default)]
struct EventMeta {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize, Default)]
struct EventObject {
    #[serde(default)]
    metadata: Option<EventMeta>,
    /// Set on `ERROR` events (a `Status`).
    #[serde(default)]
    message: Option<String>,
}

/// One line of a watch stream.
#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    object: EventObject,
}

/// What one watcher saw.
#[derive(Default)]
struct Seen {
    /// `seen[i]`: the ADDED event of `watch-<i>` arrived.
    seen: Vec<bool>,
    received: usize,
    duplicates: u64,
    /// Delivery latencies in nanoseconds.
    latencies: Vec<u64>,
    /// When the last expected event arrived, in nanoseconds since the scenario's base.
    last_event: u64,
    error: Option<String>,
}

impl Seen {
    fn new(writes: usize) -> Self {
        Seen {
            seen: vec![false; writes],
            ..Seen::default()
        }
    }

    /// Takes in one event line received at `now` (nanoseconds since base); `sent[i]` holds
    /// 1 + the nanoseconds since base at which `watch-<i>` was sent (0: not sent yet).
    /// Returns false when the stream must end (an ERROR event).
    fn line(&mut self, line: &[u8], now: u64, sent: &[AtomicU64]) -> bool {
        let line = line.trim_ascii();
        if line.is_empty() {
            return true;
        }
        let event: Event = match serde_json::from_slice(line) {
            Ok(e) => e,
            Err(e) => {
                self.error = Some(format!("undecodable watch event: {e}"));
                return false;
            }
        };
        match event.kind.as_str() {
            "ADDED" => {}
            "ERROR" => {
                self.error = Some(format!(
                    "watch ERROR event: {}",
                    event.object.message.unwrap_or_default()
                ));
                return false;
            }
            _ => return true,
        }
        let index = event.object.metadata.and_then(|m| m.name).and_then(|n| {
            n.strip_prefix("watch-")
                .and_then(|i| i.parse::<usize>().ok())
        });
        let Some(i) = index.filter(|&i| i < self.seen.len()) else {
            return true;
        };
        if self.seen[i] {
            self.duplicates += 1;
            return true;
        }
        self.seen[i] = true;
        self.received += 1;
        self.last_event = now;
        let sent_at = sent[i].load(Ordering::Acquire);
        if sent_at > 0 {
            self.latencies.push(now.saturating_sub(sent_at - 1));
        }
        true
    }
}

fn nanos_since(base: Instant) -> u64 {
    duration_nanos(base.elapsed())
}

async fn list_resource_version(ctx: &Ctx) -> Result<String, ApiError> {
    let body = ctx
        .client
        .request(
            0,
            Method::GET,
            &format!("{}?limit=1", ctx.configmaps()),
            None,
        )
        .await?;
    let list: List = serde_json::from_slice(&body)
        .map_err(|e| ApiError::Transport(format!("decoding a ConfigMap list: {e}")))?;
    if list.metadata.resource_version.is_empty() {
        return Err(ApiError::Transport(
            "the list carried no resourceVersion".into(),
        ));
    }
    Ok(list.metadata.resource_version)
}

/// One watcher: opens the watch, reports when it is established, then reads events until it
/// saw every write, the stream ends, or `stop` is raised.
#[allow(clippy::too_many_arguments)]
async fn watcher(
    ctx: Arc<Ctx>,
    client: Arc<ApiClient>,
    index: usize,
    rv: String,
    base: Instant,
    sent: Arc<Vec<AtomicU64>>,
    ready: mpsc::Sender<bool>,
    mut stop: watch::Receiver<bool>,
    errors: Arc<ErrorLog>,
) -> Seen {
    let writes = sent.len();
    let mut seen = Seen::new(writes);
    let timeout = remaining(ctx.deadline).as_secs() + 60;
    let path = format!(
        "{}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds={timeout}",
        ctx.configmaps()
    );
    let mut body = match client.stream(index, &path).await {
        Ok(body) => {
            let _ = ready.send(true).await;
            body
        }
        Err(ApiError::Timeout) => {
            errors.record_msg(
                "watch: no answer within the request timeout (more watchers per connection \
                 than the server allows concurrent streams? raise --connections)"
                    .into(),
            );
            let _ = ready.send(false).await;
            return seen;
        }
        Err(e) => {
            errors.record("watch", &e);
            let _ = ready.send(false).await;
            return seen;
        }
    };
    drop(ready);
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    while seen.received < writes {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            _ = stop.wait_for(|s| *s) => break,
        };
        let data = match frame {
            None => {
                seen.error = Some("the server ended the watch before every event arrived".into());
                break;
            }
            Some(Err(e)) => {
                seen.error = Some(format!("reading the watch: {e}"));
                break;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue, // trailers
            },
        };
        let now = nanos_since(base);
        buf.extend_from_slice(&data);
        let mut consumed = 0;
        let mut keep_going = true;
        while let Some(nl) = buf[consumed..].iter().position(|&b| b == b'\n') {
            keep_going = seen.line(&buf[consumed..consumed + nl], now, &sent);
            consumed += nl + 1;
            if !keep_going {
                break;
            }
        }
        buf.drain(..consumed);
        if !keep_going {
            break;
        }
    }
    if seen.received < writes
        && let Some(e) = &seen.error
    {
        errors.record_msg(format!("watcher {index}: {e}"));
    }
    seen
}

pub(crate) async fn run(ctx: &Arc<Ctx>) -> WatchReport {
    let errors = ErrorLog::new();
    let watchers = ctx.settings.watchers;
    let writes = ctx.settings.watch_writes;
    let writers = ctx.settings.watch_writers.clamp(1, writes.max(1));
    let mut report = WatchReport {
        watchers,
        watchers_started: 0,
        writes: 0,
        writers,
        events_expected: 0,
        events_received: 0,
        missed_events: 0,
        duplicate_events: 0,
        incomplete_watchers: 0,
        establish_ms: 0.0,
        seconds: 0.0,
        writes_per_sec: 0.0,
        events_per_sec: 0.0,
        drain_ms: 0.0,
        latency_ms: None,
        write_latency_ms: None,
        cleanup_seconds: 0.0,
        timed_out: false,
        errors: Default::default(),
    };

    let rv = match list_resource_version(ctx).await {
        Ok(rv) => rv,
        Err(e) => {
            errors.record("list", &e);
            report.errors = errors.snapshot();
            return report;
        }
    };

    // The watches get connections of their own: each holds an HTTP/2 stream for its whole
    // life, and the writes must not queue behind the server's per-connection stream limit.
    let watch_client = Arc::new(ctx.client.with_own_connections(ctx.settings.connections));
    match tokio::time::timeout_at(ctx.deadline, watch_client.connect_all()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            errors.record_msg(format!("{e:#}"));
            report.errors = errors.snapshot();
            return report;
        }
        Err(_) => {
            report.timed_out = true;
            report.errors = errors.snapshot();
            return report;
        }
    }

    // Watchers first; writes start only once every watch is established.
    let base = Instant::now();
    let sent: Arc<Vec<AtomicU64>> = Arc::new((0..writes).map(|_| AtomicU64::new(0)).collect());
    let (stop_tx, stop_rx) = watch::channel(false);
    let (ready_tx, mut ready_rx) = mpsc::channel(watchers.max(1));
    let mut tasks = Vec::with_capacity(watchers);
    for w in 0..watchers {
        tasks.push(tokio::spawn(watcher(
            ctx.clone(),
            watch_client.clone(),
            w,
            rv.clone(),
            base,
            sent.clone(),
            ready_tx.clone(),
            stop_rx.clone(),
            errors.clone(),
        )));
    }
    drop(ready_tx);
    for _ in 0..watchers {
        match tokio::time::timeout_at(ctx.deadline, ready_rx.recv()).await {
            Ok(Some(true)) => report.watchers_started += 1,
            Ok(Some(false)) => {}
            Ok(None) => break,
            Err(_) => {
                report.timed_out = true;
                break;
            }
        }
    }
    report.establish_ms = base.elapsed().as_secs_f64() * 1e3;

    // The writes: writer `k` creates watch-<i> for i = k, k + writers, ...
    let write_start = nanos_since(base);
    let mut writer_tasks = Vec::with_capacity(writers);
    for k in 0..writers {
        let (ctx, sent, errors) = (ctx.clone(), sent.clone(), errors.clone());
        writer_tasks.push(tokio::spawn(async move {
            let mut ok = Vec::new();
            let mut latencies = Vec::new();
            let mut timed_out = false;
            let path = ctx.configmaps();
            for i in (k..writes).step_by(writers) {
                if ctx.past_deadline() {
                    timed_out = true;
                    break;
                }
                let body = ctx.configmap_bytes(&format!("watch-{i}"), SCENARIO);
                let t = Instant::now();
                sent[i].store(nanos_since(base) + 1, Ordering::Release);
                match ctx.client.request(k, Method::POST, &path, Some(body)).await {
                    Ok(_) => {
                        latencies.push(duration_nanos(t.elapsed()));
                        ok.push(i);
                    }
                    Err(e) => errors.record("create", &e),
                }
            }
            (ok, latencies, timed_out)
        }));
    }
    let mut written = vec![false; writes];
    let mut write_latencies = Vec::with_capacity(writes);
    for t in writer_tasks {
        if let Ok((ok, latencies, timed_out)) = t.await {
            for i in ok {
                written[i] = true;
            }
            write_latencies.extend(latencies);
            report.timed_out |= timed_out;
        }
    }
    let writes_done = nanos_since(base);
    report.writes = write_latencies.len() as u64;
    report.seconds = (writes_done - write_start) as f64 / 1e9;
    report.writes_per_sec = rate(report.writes, report.seconds);
    report.write_latency_ms = LatencySummary::from_nanos(&mut write_latencies);

    // Watchers that have every event end by themselves; the rest are stopped after the grace.
    let grace_end = (Instant::now() + DELIVERY_GRACE).min(ctx.deadline);
    let mut cancelled = ctx.cancelled();
    let stopper = tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep_until(grace_end) => {}
            _ = cancelled.wait_for(|c| *c) => {}
        }
        let _ = stop_tx.send(true);
    });
    let mut latencies = Vec::with_capacity(watchers * writes);
    let mut last_event = 0;
    for t in tasks {
        let Ok(seen) = t.await else { continue };
        let missed = written
            .iter()
            .zip(&seen.seen)
            .filter(|(w, s)| **w && !**s)
            .count() as u64;
        report.missed_events += missed;
        report.incomplete_watchers += usize::from(missed > 0);
        report.events_received += seen.received as u64;
        report.duplicate_events += seen.duplicates;
        last_event = last_event.max(seen.last_event);
        latencies.extend(seen.latencies);
    }
    stopper.abort();
    report.events_expected = report.writes * watchers as u64;
    report.drain_ms = last_event.saturating_sub(writes_done) as f64 / 1e6;
    report.events_per_sec = rate(
        report.events_received,
        last_event.saturating_sub(write_start) as f64 / 1e9,
    );
    report.latency_ms = LatencySummary::from_nanos(&mut latencies);
    report.cleanup_seconds = ctx.delete_scenario_objects(SCENARIO, &errors).await;
    report.errors = errors.snapshot();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_are_counted_once_with_their_latency() {
        let sent: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        sent[0].store(1_000 + 1, Ordering::Relaxed);
        sent[2].store(2_000 + 1, Ordering::Relaxed);
        let mut seen = Seen::new(3);
        let added = |name: &str| {
            format!(
                r#"{{"type":"ADDED","object":{{"kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"payload":"x"}}}}}}"#
            )
        };
        assert!(seen.line(added("watch-0").as_bytes(), 5_000, &sent));
        assert!(seen.line(added("watch-0").as_bytes(), 6_000, &sent));
        assert!(seen.line(added("other").as_bytes(), 6_000, &sent));
        assert!(seen.line(added("watch-7").as_bytes(), 6_000, &sent));
        assert!(seen.line(
            br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#,
            6_000,
            &sent
        ));
        assert!(seen.line(b"  \r", 6_000, &sent));
        assert!(seen.line(added("watch-2").as_bytes(), 9_000, &sent));
        assert_eq!(seen.seen, vec![true, false, true]);
        assert_eq!((seen.received, seen.duplicates), (2, 1));
        assert_eq!(seen.latencies, vec![4_000, 7_000]);
        assert_eq!(seen.last_event, 9_000);

        let gone = br#"{"type":"ERROR","object":{"kind":"Status","message":"too old resource version: 1 (5)","code":410}}"#;
        assert!(!seen.line(gone, 10_000, &sent));
        assert!(seen.error.as_deref().is_some_and(|e| e.contains("too old")));
    }
}
