//! What a bench run measured: the report types (serialized for `--json`) and the readable table.

use std::fmt::Write as _;

use serde::Serialize;

use crate::stats::LatencySummary;

/// The effective sizes of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub objects: usize,
    pub concurrency: usize,
    pub connections: usize,
    pub shared_objects: usize,
    pub updates: usize,
    pub watchers: usize,
    pub watch_writes: usize,
    pub watch_writers: usize,
    pub object_size: usize,
    pub page_size: usize,
    pub list_repeats: usize,
    pub timeout_seconds: u64,
    pub request_timeout_seconds: u64,
    /// `--report-server-io`.
    pub server_io_pid: Option<u32>,
}

/// A whole run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub server: String,
    pub namespace: String,
    pub settings: Settings,
    pub scenarios: Vec<ScenarioReport>,
    pub cleanup: CleanupReport,
    pub total_seconds: f64,
    /// The run's deadline (`--timeout`) passed or Ctrl-C was pressed before the selected
    /// scenarios finished.
    pub interrupted: bool,
}

/// Failed requests of a scenario: how many, and the first few distinct messages.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Errors {
    pub errors: u64,
    pub error_samples: Vec<String>,
}

/// `create-seq` and `create-par`.
#[derive(Clone, Debug, Serialize)]
pub struct CreateReport {
    pub workers: usize,
    pub connections: usize,
    /// Successful creates.
    pub objects: u64,
    pub seconds: f64,
    pub objects_per_sec: f64,
    /// Bytes the server wrote to storage during the creates (`--report-server-io`), counted
    /// after a short pause for background writes to settle.
    pub server_write_bytes: Option<u64>,
    pub server_write_bytes_per_create: Option<f64>,
    /// Per-create latency of the successful creates.
    pub latency_ms: Option<LatencySummary>,
    /// Time to delete the scenario's objects afterwards (not measured load).
    pub cleanup_seconds: f64,
    pub timed_out: bool,
    #[serde(flatten)]
    pub errors: Errors,
}

/// `update-conflict`.
#[derive(Clone, Debug, Serialize)]
pub struct UpdateReport {
    pub workers: usize,
    pub connections: usize,
    pub shared_objects: usize,
    /// Successful read-modify-write updates.
    pub updates: u64,
    /// Updates refused with 409 Conflict (each followed by a fresh read and a retry).
    pub conflicts: u64,
    pub seconds: f64,
    pub updates_per_sec: f64,
    pub conflicts_per_sec: f64,
    /// Successful updates missing from the objects' final counters (must be 0).
    pub lost_updates: u64,
    /// From the first read to the successful write, retries included.
    pub latency_ms: Option<LatencySummary>,
    pub cleanup_seconds: f64,
    pub timed_out: bool,
    #[serde(flatten)]
    pub errors: Errors,
}

/// One way of listing everything (one call, or pages).
#[derive(Clone, Debug, Serialize)]
pub struct ListTiming {
    /// `limit` per call; `None` for a single unpaged call.
    pub page_size: Option<usize>,
    pub lists: usize,
    pub pages_per_list: usize,
    pub items_per_list: u64,
    pub bytes_per_list: u64,
    /// Items listed per second, from the mean time per full list.
    pub items_per_sec: f64,
    /// Time per full list (all pages), body received and decoded.
    pub latency_ms: Option<LatencySummary>,
}

/// `list`.
#[derive(Clone, Debug, Serialize)]
pub struct ListReport {
    /// Objects created for the scenario (the namespace may hold a few more).
    pub objects: u64,
    pub setup_seconds: f64,
    pub unpaged: ListTiming,
    pub paged: ListTiming,
    pub cleanup_seconds: f64,
    pub timed_out: bool,
    #[serde(flatten)]
    pub errors: Errors,
}

/// `watch`.
#[derive(Clone, Debug, Serialize)]
pub struct WatchReport {
    pub watchers: usize,
    /// Watchers that were established (answered 200).
    pub watchers_started: usize,
    pub writes: u64,
    pub writers: usize,
    pub events_expected: u64,
    pub events_received: u64,
    /// Expected events that some watcher never received (must be 0).
    pub missed_events: u64,
    pub duplicate_events: u64,
    /// Watchers that did not receive every event.
    pub incomplete_watchers: usize,
    /// Time to start every watcher.
    pub establish_ms: f64,
    /// Write phase, first write sent to last write answered.
    pub seconds: f64,
    pub writes_per_sec: f64,
    /// Events delivered per second, from the first write to the last event received.
    pub events_per_sec: f64,
    /// From the last write's answer to the last event received at any watcher.
    pub drain_ms: f64,
    /// Write sent -> event received, over every (watcher, event) pair.
    pub latency_ms: Option<LatencySummary>,
    pub write_latency_ms: Option<LatencySummary>,
    pub cleanup_seconds: f64,
    pub timed_out: bool,
    #[serde(flatten)]
    pub errors: Errors,
}

/// One scenario's result, tagged with its name (`"scenario": "create-seq"`).
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "scenario", rename_all = "kebab-case")]
pub enum ScenarioReport {
    CreateSeq(CreateReport),
    CreatePar(CreateReport),
    UpdateConflict(UpdateReport),
    List(ListReport),
    Watch(WatchReport),
}

/// The end of a run: the namespace's deletion.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CleanupReport {
    /// The namespace is gone (404) at the end.
    pub namespace_deleted: bool,
    /// Its phase when it did not go away (`Terminating` on a server without a namespace
    /// controller).
    pub namespace_phase: Option<String>,
    /// Objects deleted one by one because the namespace deletion did not complete.
    pub objects_deleted_individually: u64,
    /// Objects still in the namespace at the end.
    pub objects_left: u64,
    pub seconds: f64,
    #[serde(flatten)]
    pub errors: Errors,
}

impl ScenarioReport {
    pub fn name(&self) -> &'static str {
        match self {
            ScenarioReport::CreateSeq(_) => "create-seq",
            ScenarioReport::CreatePar(_) => "create-par",
            ScenarioReport::UpdateConflict(_) => "update-conflict",
            ScenarioReport::List(_) => "list",
            ScenarioReport::Watch(_) => "watch",
        }
    }

    pub fn errors(&self) -> &Errors {
        match self {
            ScenarioReport::CreateSeq(r) | ScenarioReport::CreatePar(r) => &r.errors,
            ScenarioReport::UpdateConflict(r) => &r.errors,
            ScenarioReport::List(r) => &r.errors,
            ScenarioReport::Watch(r) => &r.errors,
        }
    }

    /// Why this scenario's figures cannot be trusted; empty when they can.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let errors = self.errors().errors;
        if errors > 0 {
            out.push(format!("{errors} failed requests"));
        }
        let timed_out = match self {
            ScenarioReport::CreateSeq(r) | ScenarioReport::CreatePar(r) => r.timed_out,
            ScenarioReport::UpdateConflict(r) => {
                if r.lost_updates > 0 {
                    out.push(format!("{} lost updates", r.lost_updates));
                }
                r.timed_out
            }
            ScenarioReport::List(r) => r.timed_out,
            ScenarioReport::Watch(r) => {
                if r.missed_events > 0 {
                    out.push(format!(
                        "{} missed watch events ({} of {} watchers incomplete)",
                        r.missed_events, r.incomplete_watchers, r.watchers
                    ));
                }
                r.timed_out
            }
        };
        if timed_out {
            out.push("stopped before finishing (--timeout or Ctrl-C)".into());
        }
        out.into_iter()
            .map(|f| format!("{}: {f}", self.name()))
            .collect()
    }
}

impl BenchReport {
    /// Every reason the run failed; empty when it succeeded.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self.scenarios.iter().flat_map(|s| s.failures()).collect();
        if self.interrupted {
            out.push("the run was cut short (--timeout or Ctrl-C)".into());
        }
        out
    }

    /// The readable table.
    pub fn table(&self) -> String {
        let mut rows: Vec<Row> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        for s in &self.scenarios {
            match s {
                ScenarioReport::CreateSeq(r) | ScenarioReport::CreatePar(r) => {
                    rows.push(Row::new(
                        s.name(),
                        r.objects.to_string(),
                        r.errors.errors,
                        r.seconds,
                        r.objects_per_sec,
                        "creates/s",
                        r.latency_ms.as_ref(),
                    ));
                    notes.push(format!(
                        "{}: {} worker(s) over {} connection(s)",
                        s.name(),
                        r.workers,
                        r.connections
                    ));
                    if let (Some(total), Some(per)) =
                        (r.server_write_bytes, r.server_write_bytes_per_create)
                    {
                        notes.push(format!(
                            "{}: the server wrote {total} bytes to storage, {per:.0} per create",
                            s.name()
                        ));
                    }
                }
                ScenarioReport::UpdateConflict(r) => {
                    rows.push(Row::new(
                        s.name(),
                        r.updates.to_string(),
                        r.errors.errors,
                        r.seconds,
                        r.updates_per_sec,
                        "updates/s",
                        r.latency_ms.as_ref(),
                    ));
                    notes.push(format!(
                        "update-conflict: {} workers on {} objects; {} conflicts ({:.0}/s, {:.2} per update); lost updates {}; latency = read to successful write, retries included",
                        r.workers,
                        r.shared_objects,
                        r.conflicts,
                        r.conflicts_per_sec,
                        if r.updates > 0 { r.conflicts as f64 / r.updates as f64 } else { 0.0 },
                        r.lost_updates
                    ));
                }
                ScenarioReport::List(r) => {
                    for (label, t) in [("list", &r.unpaged), ("list (paged)", &r.paged)] {
                        let mean_s = t.latency_ms.as_ref().map_or(0.0, |l| l.mean / 1e3);
                        rows.push(Row::new(
                            label,
                            format!("{}x{}", t.lists, t.items_per_list),
                            r.errors.errors,
                            mean_s,
                            t.items_per_sec,
                            "items/s",
                            t.latency_ms.as_ref(),
                        ));
                    }
                    notes.push(format!(
                        "list: {} objects; secs = mean time per full list; unpaged {} KiB per list; paged limit={} -> {} pages per list",
                        r.objects,
                        r.unpaged.bytes_per_list / 1024,
                        r.paged.page_size.unwrap_or(0),
                        r.paged.pages_per_list
                    ));
                }
                ScenarioReport::Watch(r) => {
                    rows.push(Row::new(
                        "watch",
                        format!("{}x{}", r.watchers, r.writes),
                        r.errors.errors,
                        r.seconds,
                        r.events_per_sec,
                        "events/s",
                        r.latency_ms.as_ref(),
                    ));
                    notes.push(format!(
                        "watch: {} watchers, {} writes by {} writer(s) at {:.0}/s; {} of {} events received, missed {}, duplicates {}; last event {:.1} ms after the last write; latency = write sent -> event received",
                        r.watchers_started,
                        r.writes,
                        r.writers,
                        r.writes_per_sec,
                        r.events_received,
                        r.events_expected,
                        r.missed_events,
                        r.duplicate_events,
                        r.drain_ms
                    ));
                }
            }
        }

        let mut out = String::new();
        let _ = writeln!(
            out,
            "k1s bench: {}, namespace {}, {} connection(s)\n",
            self.server, self.namespace, self.settings.connections
        );
        let _ = writeln!(
            out,
            "{:<16} {:>10} {:>7} {:>9} {:>12} {:<10} {:>8} {:>8} {:>8} {:>8}",
            "scenario",
            "count",
            "errors",
            "secs",
            "rate",
            "",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms"
        );
        for r in &rows {
            let _ = writeln!(out, "{}", r.render());
        }
        out.push('\n');
        for n in &notes {
            let _ = writeln!(out, "{n}");
        }
        for s in &self.scenarios {
            for e in &s.errors().error_samples {
                let _ = writeln!(out, "{} error: {e}", s.name());
            }
        }
        let c = &self.cleanup;
        let _ = writeln!(
            out,
            "cleanup: namespace {} in {:.2} s{}",
            if c.namespace_deleted {
                "deleted".to_string()
            } else {
                format!(
                    "left {} ({} objects deleted one by one, {} left)",
                    c.namespace_phase.as_deref().unwrap_or("in place"),
                    c.objects_deleted_individually,
                    c.objects_left
                )
            },
            c.seconds,
            if c.errors.errors > 0 {
                format!(", {} errors", c.errors.errors)
            } else {
                String::new()
            }
        );
        for e in &c.errors.error_samples {
            let _ = writeln!(out, "cleanup error: {e}");
        }
        let _ = writeln!(out, "total {:.2} s", self.total_seconds);
        out
    }
}

struct Row {
    name: String,
    count: String,
    errors: u64,
    seconds: f64,
    rate: f64,
    unit: &'static str,
    latency: Option<LatencySummary>,
}

impl Row {
    fn new(
        name: &str,
        count: String,
        errors: u64,
        seconds: f64,
        rate: f64,
        unit: &'static str,
        latency: Option<&LatencySummary>,
    ) -> Self {
        Row {
            name: name.to_string(),
            count,
            errors,
            seconds,
            rate,
            unit,
            latency: latency.cloned(),
        }
    }

    fn render(&self) -> String {
        let lat = match &self.latency {
            Some(l) => format!(
                "{:>8.2} {:>8.2} {:>8.2} {:>8.2}",
                l.p50, l.p90, l.p99, l.max
            ),
            None => format!("{:>8} {:>8} {:>8} {:>8}", "-", "-", "-", "-"),
        };
        format!(
            "{:<16} {:>10} {:>7} {:>9.3} {:>12.1} {:<10} {lat}",
            self.name, self.count, self.errors, self.seconds, self.rate, self.unit
        )
    }
}
