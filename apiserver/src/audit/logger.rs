//! The audit log backend: events become JSON lines written by a dedicated thread, so request
//! handling never waits on the disk. The hand-off is a bounded channel; when it is full the
//! event is dropped and counted (upstream's batch mode reports `audit buffer queue blocked`).
//! [`AuditLogger::shutdown`] writes everything still queued and flushes.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::event::Event;
use super::rotate::{MEGABYTE, RotatingFile};

/// Upstream's default batch buffer size.
pub const DEFAULT_BUFFER_SIZE: usize = 10_000;

/// `--audit-log-*` options.
#[derive(Clone, Debug)]
pub struct AuditLogConfig {
    /// `--audit-log-path`; `-` writes to standard output.
    pub path: PathBuf,
    /// `--audit-log-maxsize` in megabytes (0 = 100 MB, as lumberjack).
    pub max_size_mb: u64,
    /// `--audit-log-maxbackup` (0 = keep all).
    pub max_backups: usize,
    /// `--audit-log-maxage` in days (0 = keep regardless of age).
    pub max_age_days: u64,
    /// Events that may wait for the writer before new ones are dropped.
    pub buffer_size: usize,
}

impl Default for AuditLogConfig {
    fn default() -> Self {
        AuditLogConfig {
            path: PathBuf::from("-"),
            max_size_mb: 0,
            max_backups: 0,
            max_age_days: 0,
            buffer_size: DEFAULT_BUFFER_SIZE,
        }
    }
}

enum Msg {
    Line(Vec<u8>),
    Flush(SyncSender<()>),
    Shutdown,
}

#[derive(Debug, Default)]
struct Counters {
    written: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

/// Writes audit events as JSON lines without blocking the caller.
pub struct AuditLogger {
    tx: SyncSender<Msg>,
    counters: Arc<Counters>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for AuditLogger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLogger")
            .field("written", &self.written())
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl AuditLogger {
    /// Opens the log file (rotated by size) or standard output and starts the writer thread.
    pub fn open(config: &AuditLogConfig) -> io::Result<Self> {
        let writer: Box<dyn Write + Send> = if config.path.as_os_str() == "-" {
            Box::new(io::stdout())
        } else {
            let max_age = (config.max_age_days > 0)
                .then(|| Duration::from_secs(config.max_age_days.saturating_mul(86_400)));
            Box::new(RotatingFile::open(
                config.path.clone(),
                config.max_size_mb.saturating_mul(MEGABYTE),
                config.max_backups,
                max_age,
            )?)
        };
        Self::with_writer(writer, config.buffer_size)
    }

    /// Starts a logger over any writer (each event is one `write` of one line).
    pub fn with_writer(writer: Box<dyn Write + Send>, buffer_size: usize) -> io::Result<Self> {
        let (tx, rx) = sync_channel(buffer_size.max(1));
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let handle = std::thread::Builder::new()
            .name("audit-log-writer".into())
            .spawn(move || write_loop(rx, writer, &c))?;
        Ok(AuditLogger {
            tx,
            counters,
            writer: Mutex::new(Some(handle)),
        })
    }

    /// Queues an event; never blocks. Returns false when it was dropped (queue full or the
    /// logger shut down).
    pub fn log(&self, event: &Event) -> bool {
        let mut line = match serde_json::to_vec(event) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!("encoding an audit event: {e}");
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        };
        line.push(b'\n');
        match self.tx.try_send(Msg::Line(line)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                let n = self.counters.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_power_of_two() {
                    tracing::error!(
                        dropped = n,
                        "Error in audit plugin 'log' affecting 1 audit events: audit buffer queue blocked"
                    );
                }
                false
            }
            Err(TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Waits until everything queued so far is written and flushed.
    pub fn flush(&self) {
        let (done_tx, done_rx) = sync_channel(1);
        if self.tx.send(Msg::Flush(done_tx)).is_ok() {
            let _ = done_rx.recv();
        }
    }

    /// Writes what is queued, flushes and stops the writer. Blocks for the drain; from async
    /// code call it inside `spawn_blocking`. Later events are dropped.
    pub fn shutdown(&self) {
        let handle = self.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = self.tx.send(Msg::Shutdown);
            let _ = handle.join();
        }
    }

    /// Events written so far.
    pub fn written(&self) -> u64 {
        self.counters.written.load(Ordering::Relaxed)
    }

    /// Events dropped because the queue was full (or the logger was shut down).
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    /// Events that could not be encoded or written.
    pub fn failed(&self) -> u64 {
        self.counters.failed.load(Ordering::Relaxed)
    }
}

impl Drop for AuditLogger {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn write_loop(rx: Receiver<Msg>, mut writer: Box<dyn Write + Send>, counters: &Counters) {
    let write_line = |writer: &mut Box<dyn Write + Send>, line: &[u8]| match writer.write_all(line)
    {
        Ok(()) => {
            counters.written.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            tracing::error!("writing an audit event: {e}");
        }
    };
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Line(line) => {
                write_line(&mut writer, &line);
                // Write whatever else is waiting before flushing once.
                let mut stop = false;
                while let Ok(next) = rx.try_recv() {
                    match next {
                        Msg::Line(l) => write_line(&mut writer, &l),
                        Msg::Flush(done) => {
                            let _ = writer.flush();
                            let _ = done.send(());
                        }
                        Msg::Shutdown => {
                            stop = true;
                            break;
                        }
                    }
                }
                let _ = writer.flush();
                if stop {
                    break;
                }
            }
            Msg::Flush(done) => {
                let _ = writer.flush();
                let _ = done.send(());
            }
            Msg::Shutdown => break,
        }
    }
    // Anything queued behind the shutdown request is still written.
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Line(l) => write_line(&mut writer, &l),
            Msg::Flush(done) => {
                let _ = done.send(());
            }
            Msg::Shutdown => {}
        }
    }
    let _ = writer.flush();
}
