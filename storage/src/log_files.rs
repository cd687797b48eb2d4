//! The write-ahead log with its spare files, and the checkpoint thread, shared by the disk engines.
//!
//! Both engines append every batch to the log and apply it in memory or to sled without a flush.
//! A checkpoint switches the log to a spare file once the engine wants it (sled: the current one
//! is half full; or it was not zero-filled and a zero-filled one is ready), makes what the older
//! files hold durable in the engine's own form, and then recycles or deletes them. How and when
//! that is done is the engine's part (`Checkpoint`); the files and the thread are here.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::BatchOp;
use crate::wal::{Spare, Wal};
use crate::{Error, Result};

/// How often the checkpoint thread looks at the log without being nudged.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Redundant log files kept as spares at most; more are deleted. An engine that keeps several
/// files between checkpoints needs as many again next time: zero-filling new ones would write
/// each file's size in zeros.
const MAX_SPARES: usize = 256;

pub(crate) struct LogFiles {
    dir: PathBuf,
    /// The size of a new log file.
    segment_bytes: u64,
    /// Held across append + apply, so the log's order is the engine's order and a switch to a
    /// new file falls between whole commits.
    wal: Mutex<Wal>,
    /// Files ready to become the next generations' logs, oldest first. Its lock also keeps
    /// checkpoints one at a time.
    spares: Mutex<Vec<Spare>>,
    /// How far into the current file the checkpoint thread was woken: 0 not yet, 1 at half,
    /// 2 when nearly full.
    nudged: AtomicU8,
}

/// What a switch to a new log file left behind.
pub(crate) struct Switched {
    /// The file appends went to until now.
    pub old: u64,
    /// Its size on disk.
    pub old_size: u64,
    /// Whether it may become a spare once redundant (a fully written one of the standard size).
    pub recyclable: bool,
    /// The generation appends go to from now on: every batch before it is in older files.
    pub generation: u64,
}

impl LogFiles {
    pub(crate) fn new(mut wal: Wal, segment_bytes: u64) -> Self {
        LogFiles {
            dir: wal.dir().to_path_buf(),
            segment_bytes,
            spares: Mutex::new(wal.take_spares()),
            wal: Mutex::new(wal),
            nudged: AtomicU8::new(0),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn wal(&self) -> Result<MutexGuard<'_, Wal>> {
        self.wal
            .lock()
            .map_err(|_| Error::Engine("write-ahead log lock poisoned".into()))
    }

    pub(crate) fn spares(&self) -> Result<MutexGuard<'_, Vec<Spare>>> {
        self.spares
            .lock()
            .map_err(|_| Error::Engine("write-ahead log spare lock poisoned".into()))
    }

    /// Zero-fills the next log file if none is ready (outside every lock commits take).
    fn ensure_spare(&self) -> Result<()> {
        let mut spares = self.spares()?;
        let next = {
            let wal = self.wal()?;
            if wal.is_closed() {
                return Ok(());
            }
            wal.generation() + 1
        };
        if !spares.iter().any(|s| s.generation() == next) {
            spares.insert(0, Spare::prepare(&self.dir, next, self.segment_bytes)?);
        }
        Ok(())
    }

    /// Whether the engine wants a switch at the current file's length, or the file is not
    /// zero-filled while a zero-filled one waits.
    fn checkpoint_due(&self, engine: &impl Checkpoint) -> Result<bool> {
        let spare_ready = !self.spares()?.is_empty();
        let (len, zeroed) = {
            let wal = self.wal()?;
            if wal.is_closed() {
                return Ok(false);
            }
            (wal.len(), wal.is_zeroed())
        };
        Ok((!zeroed && spare_ready) || engine.switch_due(len, self.segment_bytes)?)
    }

    /// Appends `batch` and hands it to `apply` while the device writes the record; returns once
    /// the batch is durable. Readers may see it applied before that, but the store publishes
    /// the revision only after this returns; should the sync fail, the store stops taking
    /// writes. True when the checkpoint thread should be woken (at half the file and when it
    /// is nearly full, once each).
    pub(crate) fn commit(
        &self,
        batch: Vec<BatchOp>,
        apply: impl FnOnce(Vec<BatchOp>) -> Result<()>,
    ) -> Result<bool> {
        let mut wal = self.wal()?;
        wal.write(&batch)?;
        apply(batch)?;
        wal.sync()?;
        let level = if wal.len() >= late_switch_bytes(wal.segment_bytes()) {
            2
        } else if wal.len() >= wal.segment_bytes() / 2 {
            1
        } else {
            return Ok(false);
        };
        Ok(self.nudged.fetch_max(level, Ordering::AcqRel) < level)
    }

    /// The bytes of the log and spare files (preallocated, so their whole length counts).
    pub(crate) fn size_bytes(&self) -> Result<u64> {
        let mut total = 0;
        for entry in std::fs::read_dir(&self.dir)? {
            total += entry?.metadata()?.len();
        }
        Ok(total)
    }

    /// Switches appends to the next spare (zero-filling one now if none is ready), then, with
    /// the log still locked, runs `at_cut`: the engine then holds exactly the batches of the
    /// older files. `None` once the log is closed.
    pub(crate) fn switch<T>(
        &self,
        spares: &mut Vec<Spare>,
        at_cut: impl FnOnce(&Switched) -> T,
    ) -> Result<Option<(Switched, T)>> {
        let next = self.wal()?.generation() + 1;
        let spare = match spares.iter().position(|s| s.generation() == next) {
            Some(i) => spares.remove(i),
            None => Spare::prepare(&self.dir, next, self.segment_bytes)?,
        };
        let mut wal = self.wal()?;
        if wal.is_closed() {
            return Ok(None);
        }
        let old_size = wal.allocated();
        let (old, recyclable) = wal.switch_to(spare)?;
        self.nudged.store(0, Ordering::Release);
        let switched = Switched {
            old,
            old_size,
            recyclable,
            generation: wal.generation(),
        };
        let cut = at_cut(&switched);
        Ok(Some((switched, cut)))
    }

    /// Makes the redundant log files older than `generation` spares (their blocks are written,
    /// so they are cheaper to append to than a new file) up to `MAX_SPARES`, and deletes the rest.
    pub(crate) fn retire_before(
        &self,
        spares: &mut Vec<Spare>,
        generation: u64,
        recyclable: &[u64],
    ) -> Result<()> {
        for &old in recyclable {
            if old >= generation || spares.len() >= MAX_SPARES {
                continue;
            }
            let after = spares
                .last()
                .map_or(generation, |s| s.generation().max(generation));
            spares.push(Spare::recycle(&self.dir, old, after + 1)?);
        }
        crate::wal::delete_before(&self.dir, generation)
    }
}

/// The latest a switch is due: the last eighth of the file absorbs appends while the switch
/// runs (a burst that outruns it grows the file).
pub(crate) fn late_switch_bytes(segment_bytes: u64) -> u64 {
    segment_bytes - segment_bytes / 8
}

/// An engine's part of a checkpoint.
pub(crate) trait Checkpoint: Send + Sync + 'static {
    fn log(&self) -> &LogFiles;
    /// Whether to switch to a new file once the current one holds `len` bytes. By default at
    /// half the file: the rest absorbs appends while the checkpoint runs, and it bounds the
    /// replay after a crash.
    fn switch_due(&self, len: u64, segment_bytes: u64) -> Result<bool> {
        Ok(len >= segment_bytes / 2)
    }
    /// Switches the log to a new file and makes the older ones redundant.
    fn checkpoint(&self) -> Result<()>;
}

/// The checkpoint thread: keeps a spare log file ready and checkpoints when one is due, until
/// it is dropped.
pub(crate) struct Checkpointer {
    /// Wakes the thread early; dropping it stops the thread.
    nudge: Mutex<Option<std_mpsc::Sender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Checkpointer {
    pub(crate) fn start<E: Checkpoint>(engine: Arc<E>) -> Result<Self> {
        let (nudge, nudges) = std_mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("k1s-store-checkpoint".into())
            .spawn(move || run(engine.as_ref(), &nudges))?;
        Ok(Checkpointer {
            nudge: Mutex::new(Some(nudge)),
            thread: Mutex::new(Some(thread)),
        })
    }

    pub(crate) fn nudge(&self) {
        if let Some(nudge) = self.nudge.lock().ok().as_ref().and_then(|n| n.as_ref()) {
            let _ = nudge.send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        if let Ok(mut nudge) = self.nudge.lock() {
            nudge.take();
        }
        if let Some(join) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = join.join();
        }
    }
}

fn run(engine: &impl Checkpoint, nudges: &std_mpsc::Receiver<()>) {
    loop {
        // A failed step deletes nothing: the log keeps every batch until a checkpoint succeeds.
        if let Err(e) = engine.log().ensure_spare() {
            tracing::warn!(error = %e, "preparing the next write-ahead log file failed; will retry");
        }
        match engine.log().checkpoint_due(engine) {
            Ok(true) => match engine.checkpoint() {
                Ok(()) => continue,
                // Waits for the next look rather than retry at once.
                Err(e) => tracing::warn!(error = %e, "store checkpoint failed; will retry"),
            },
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "store checkpoint check failed"),
        }
        match nudges.recv_timeout(CHECK_INTERVAL) {
            Ok(()) | Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}
