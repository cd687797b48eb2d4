//! The sled engine: one fixed tree, a write-ahead log for durable commits, and a format marker.
//!
//! A commit appends its batch to the write-ahead log (one `pwrite` + `fdatasync`) and applies it
//! to sled without a flush. A background thread keeps a zero-filled log file ready and, once the
//! current one is half full (or was not zero-filled), switches to it, makes sled itself durable
//! and deletes the older log files: a checkpoint. sled 0.34's `flush()` only calls
//! `sync_file_range`, which neither persists file metadata nor survives power loss, and large
//! pages go to `blobs/` files it never fsyncs; so a checkpoint flushes, then `fdatasync`s the db
//! file and any new blob file (and the blob directory). Opening replays the remaining log files
//! over sled in order: they hold every batch applied since the last completed checkpoint, and
//! replaying a batch sled already has is harmless because the later ones follow it. Closing
//! makes sled durable and deletes the log, so a clean restart replays nothing.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::{BatchOp, Engine};
use crate::wal::{self, Spare, Wal, sync_dir};
use crate::{Error, Result};

/// The on-disk format this build writes (2: sled + write-ahead log).
pub const FORMAT_VERSION: u32 = 2;
/// Formats this build opens; a format-1 store (sled alone) is upgraded in place on open.
const READABLE_FORMATS: [u32; 2] = [1, 2];
const FORMAT_FILE: &str = "FORMAT";
const FORMAT_MAGIC: &str = "k1s-store";
/// How often the checkpoint thread looks at the log without being nudged.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

pub(crate) struct SledEngine {
    inner: Arc<Inner>,
    /// Wakes the checkpoint thread early; dropping it stops the thread.
    nudge: Mutex<Option<std_mpsc::Sender<()>>>,
    checkpointer: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
    db: sled::Db,
    db_file: File,
    blob_dir: PathBuf,
    wal_dir: PathBuf,
    /// The size of a new log file.
    wal_file_bytes: u64,
    /// The blobs already fsynced; its lock is held through a whole durability pass.
    synced_blobs: Mutex<HashSet<std::ffi::OsString>>,
    /// Held across append + apply, so the log's order is sled's order and a checkpoint's switch
    /// to a new file falls between whole commits.
    wal: Mutex<Wal>,
    /// The next log file, zero-filled ahead of time; its lock also keeps checkpoints one at a time.
    spare: Mutex<Option<Spare>>,
    nudged: AtomicBool,
}

impl SledEngine {
    /// Opens (or creates) the store in `dir`. A foreign or newer directory is refused untouched.
    /// `compress_new`: whether sled compresses what it logs, if the store is created now.
    pub(crate) fn open(
        dir: &Path,
        cache_capacity: u64,
        wal_file_bytes: u64,
        compress_new: bool,
    ) -> Result<Self> {
        check_or_create_format(dir)?;
        let sled_dir = dir.join("sled");
        let db = sled_config(&sled_dir, cache_capacity, compress_new)?.open()?;
        let db_file = File::open(sled_dir.join("db"))?;
        // The directory entries of sled's files must be durable too.
        sync_dir(&sled_dir)?;
        sync_dir(dir)?;
        let wal_dir = dir.join("wal");
        let wal_file_bytes = wal_file_bytes
            .max(wal::MIN_SEGMENT_BYTES)
            .next_multiple_of(wal::PAGE);
        let wal = Wal::open(&wal_dir, wal_file_bytes, |batch| apply_to(&db, batch))?;
        let inner = Arc::new(Inner {
            db,
            db_file,
            blob_dir: sled_dir.join("blobs"),
            wal_dir,
            wal_file_bytes,
            synced_blobs: Mutex::new(HashSet::new()),
            wal: Mutex::new(wal),
            spare: Mutex::new(None),
            nudged: AtomicBool::new(false),
        });
        // What was replayed is durable in sled before the replayed files go.
        inner.make_sled_durable()?;
        {
            let wal = inner.wal()?;
            wal::delete_before(wal.dir(), wal.generation())?;
        }
        mark_format_current(dir)?;
        let (nudge, nudges) = std_mpsc::channel();
        let checkpointer = {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name("k1s-store-checkpoint".into())
                .spawn(move || run_checkpoints(&inner, &nudges))?
        };
        Ok(SledEngine {
            inner,
            nudge: Mutex::new(Some(nudge)),
            checkpointer: Mutex::new(Some(checkpointer)),
        })
    }
}

impl Inner {
    fn wal(&self) -> Result<MutexGuard<'_, Wal>> {
        self.wal
            .lock()
            .map_err(|_| Error::Engine("write-ahead log lock poisoned".into()))
    }

    fn spare(&self) -> Result<MutexGuard<'_, Option<Spare>>> {
        self.spare
            .lock()
            .map_err(|_| Error::Engine("write-ahead log spare lock poisoned".into()))
    }

    /// Zero-fills the next log file if none is ready (outside every lock commits take).
    fn ensure_spare(&self) -> Result<()> {
        let mut spare = self.spare()?;
        let next = {
            let wal = self.wal()?;
            if wal.is_closed() {
                return Ok(());
            }
            wal.generation() + 1
        };
        if spare.as_ref().is_none_or(|s| s.generation() != next) {
            *spare = Some(Spare::prepare(&self.wal_dir, next, self.wal_file_bytes)?);
        }
        Ok(())
    }

    /// A checkpoint is due when the log is half full, or when it is not zero-filled and a
    /// zero-filled one is ready.
    fn checkpoint_due(&self) -> Result<bool> {
        let spare_ready = self.spare()?.is_some();
        let wal = self.wal()?;
        Ok(!wal.is_closed()
            && (wal.len() >= checkpoint_bytes(&wal) || (!wal.is_zeroed() && spare_ready)))
    }

    /// Switches the log to the spare file, makes sled durable, then deletes the older files.
    fn checkpoint(&self) -> Result<()> {
        let mut slot = self.spare()?;
        let spare = match slot.take() {
            Some(s) => s,
            None => Spare::prepare(
                &self.wal_dir,
                self.wal()?.generation() + 1,
                self.wal_file_bytes,
            )?,
        };
        let generation = spare.generation();
        let (old, recyclable) = {
            let mut wal = self.wal()?;
            if wal.is_closed() {
                return Ok(());
            }
            wal.switch_to(spare)?
        };
        self.nudged.store(false, Ordering::Release);
        // Every batch in the older files was applied before the switch, so this covers them.
        self.make_sled_durable()?;
        // The file just left becomes the next spare (no zero-filling); older ones go.
        if recyclable {
            *slot = Some(Spare::recycle(&self.wal_dir, old, generation + 1)?);
        }
        wal::delete_before(&self.wal_dir, generation)
    }

    fn make_sled_durable(&self) -> Result<()> {
        // One pass at a time: a checkpoint and a close flushing sled together could race on
        // sled's own files (a restore saw one fail with "No such file or directory").
        let mut synced = self
            .synced_blobs
            .lock()
            .map_err(|_| Error::Engine("blob set lock poisoned".into()))?;
        self.db.flush()?;
        self.db_file.sync_data()?;
        self.sync_new_blobs(&mut synced)
    }

    fn sync_new_blobs(&self, synced: &mut HashSet<std::ffi::OsString>) -> Result<()> {
        let entries = match fs::read_dir(&self.blob_dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut present = HashSet::new();
        let mut any_new = false;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            if !synced.contains(&name) {
                // A blob may be removed by sled's GC between listing and opening: that is fine.
                match File::open(entry.path()) {
                    Ok(f) => f.sync_data()?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e.into()),
                }
                any_new = true;
            }
            present.insert(name);
        }
        if any_new {
            sync_dir(&self.blob_dir)?;
        }
        *synced = present;
        Ok(())
    }
}

/// A checkpoint starts a new log file once the current one holds this much (half a file); it
/// bounds the replay after a crash (a clean close leaves nothing to replay).
fn checkpoint_bytes(wal: &Wal) -> u64 {
    wal.segment_bytes() / 2
}

/// The checkpoint thread: keeps a spare log file ready and checkpoints when one is due, until
/// the engine drops.
fn run_checkpoints(inner: &Inner, nudges: &std_mpsc::Receiver<()>) {
    loop {
        // A failed step deletes nothing: the log keeps every batch until a checkpoint succeeds.
        if let Err(e) = inner.ensure_spare() {
            tracing::warn!(error = %e, "preparing the next write-ahead log file failed; will retry");
        }
        match inner.checkpoint_due() {
            Ok(true) => {
                if let Err(e) = inner.checkpoint() {
                    tracing::warn!(error = %e, "store checkpoint failed; will retry");
                }
                continue;
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "store checkpoint check failed"),
        }
        match nudges.recv_timeout(CHECK_INTERVAL) {
            Ok(()) | Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// sled as the store uses it: no flush of its own (checkpoints flush), and, in a store
/// created with `compress_new`, what it logs compressed with zstd, which shrinks the JSON
/// objects it holds to a third or so and its writes to the device with them (at about 40 µs of
/// CPU per small write: sled compresses every fragment it logs, with a fresh zstd context each
/// time). sled refuses to open a database with another compression setting than it was created
/// with, so an existing store keeps its own.
fn sled_config(sled_dir: &Path, cache_capacity: u64, compress_new: bool) -> Result<sled::Config> {
    let compress = match fs::read(sled_dir.join("conf")) {
        Ok(conf) => conf
            .windows(b"use_compression: true".len())
            .any(|w| w == b"use_compression: true"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => compress_new,
        Err(e) => return Err(e.into()),
    };
    Ok(sled::Config::new()
        .path(sled_dir)
        .cache_capacity(cache_capacity)
        .flush_every_ms(None)
        .use_compression(compress)
        .compression_factor(SLED_COMPRESSION_LEVEL))
}

/// zstd's own default level: a fraction of the cost of sled's default (5) for nearly the ratio.
const SLED_COMPRESSION_LEVEL: i32 = 3;

/// Applies a batch op by op. Not `sled::Batch`: sled writes out and `sync_file_range`s its
/// I/O buffer twice for every batch, which costs more than our whole log append. Atomicity
/// across a crash comes from the log instead: every batch sled may hold partly since the last
/// checkpoint is whole in the log, and replay applies it again.
fn apply_to(db: &sled::Db, batch: Vec<BatchOp>) -> Result<()> {
    for (k, v) in batch {
        match v {
            Some(v) => db.insert(k, v)?,
            None => db.remove(k)?,
        };
    }
    Ok(())
}

/// Reads shared by the engine and its read-only form.
fn db_get(db: &sled::Db, key: &[u8]) -> Result<Option<Vec<u8>>> {
    Ok(db.get(key)?.map(|v| v.to_vec()))
}

fn db_scan(
    db: &sled::Db,
    start: &[u8],
    end: &[u8],
    limit: usize,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    for item in db.range(start..end).take(limit) {
        let (k, v) = item?;
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

fn db_count(db: &sled::Db, start: &[u8], end: &[u8]) -> Result<u64> {
    let mut n = 0;
    for item in db.range(start..end) {
        item?;
        n += 1;
    }
    Ok(n)
}

impl Engine for SledEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        db_get(&self.inner.db, key)
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        db_scan(&self.inner.db, start, end, limit)
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        db_count(&self.inner.db, start, end)
    }

    fn commit(&self, batch: Vec<BatchOp>) -> Result<()> {
        let due = {
            let mut wal = self.inner.wal()?;
            // sled takes the batch while the device writes the log record. Readers cannot see
            // it yet (the store publishes the revision after this returns); should the sync
            // fail, the store stops taking writes.
            wal.write(&batch)?;
            apply_to(&self.inner.db, batch)?;
            wal.sync()?;
            wal.len() >= checkpoint_bytes(&wal)
        };
        if due
            && !self.inner.nudged.swap(true, Ordering::AcqRel)
            && let Some(nudge) = self.nudge.lock().ok().as_ref().and_then(|n| n.as_ref())
        {
            let _ = nudge.send(());
        }
        Ok(())
    }

    fn close(&self) -> Result<()> {
        self.inner.make_sled_durable()?;
        self.inner.wal()?.close()
    }

    fn size_bytes(&self) -> Result<u64> {
        // sled's file and blobs, and the log files (preallocated, so their whole length counts).
        let mut total = self.inner.db.size_on_disk()?;
        for entry in fs::read_dir(&self.inner.wal_dir)? {
            total += entry?.metadata()?.len();
        }
        Ok(total)
    }
}

impl Drop for SledEngine {
    fn drop(&mut self) {
        if let Ok(mut nudge) = self.nudge.lock() {
            nudge.take();
        }
        if let Some(join) = self.checkpointer.lock().ok().and_then(|mut c| c.take()) {
            let _ = join.join();
        }
    }
}

/// Checks the FORMAT marker, or writes it into an empty or missing directory.
fn check_or_create_format(dir: &Path) -> Result<()> {
    let marker = dir.join(FORMAT_FILE);
    match fs::read_to_string(&marker) {
        Ok(text) => parse_format(&marker, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let non_empty = match fs::read_dir(dir) {
                Ok(mut entries) => entries.next().is_some(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => return Err(e.into()),
            };
            if non_empty {
                return Err(Error::Format(format!(
                    "{} is not empty and has no {FORMAT_FILE} file: not a k1s store; refusing to touch it",
                    dir.display()
                )));
            }
            fs::create_dir_all(dir)?;
            write_marker(dir)
        }
        Err(e) => Err(e.into()),
    }
}

fn parse_format(marker: &Path, text: &str) -> Result<()> {
    parse_format_version(marker, text).map(|_| ())
}

/// The format version a marker names, if this build reads it.
fn parse_format_version(marker: &Path, text: &str) -> Result<u32> {
    let mut words = text.split_whitespace();
    let (Some(FORMAT_MAGIC), Some(version), None) = (words.next(), words.next(), words.next())
    else {
        return Err(Error::Format(format!(
            "{} is not a k1s store format marker; refusing to open",
            marker.display()
        )));
    };
    match version.parse::<u32>() {
        Ok(v) if READABLE_FORMATS.contains(&v) => Ok(v),
        Ok(v) if v > FORMAT_VERSION => Err(Error::Format(format!(
            "the store at {} has format {v}, written by a newer k1s; this build reads format {FORMAT_VERSION}",
            marker.parent().unwrap_or(marker).display()
        ))),
        _ => Err(Error::Format(format!(
            "{} names an unknown format version {version:?}",
            marker.display()
        ))),
    }
}

/// The format of the store in `dir`, read from its marker without opening or writing anything.
/// A missing, empty or foreign directory, and a format this build cannot read, are errors.
pub fn store_format(dir: &Path) -> Result<u32> {
    let marker = dir.join(FORMAT_FILE);
    match fs::read_to_string(&marker) {
        Ok(text) => parse_format_version(&marker, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let non_empty = match fs::read_dir(dir) {
                Ok(mut entries) => entries.next().is_some(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => return Err(e.into()),
            };
            Err(Error::Format(if non_empty {
                format!(
                    "{} is not empty and has no {FORMAT_FILE} file: not a k1s store",
                    dir.display()
                )
            } else {
                format!("there is no k1s store at {}", dir.display())
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether a process (a running server) holds the lock sled takes on the store: probed with a
/// non-blocking `flock` on the same file, released at once. A store never opened is not in use.
pub fn store_in_use(dir: &Path) -> Result<bool> {
    let file = match File::open(dir.join("sled").join("db")) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        // Closing the file releases the probe's lock.
        Ok(()) => Ok(false),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(true),
        Err(e) => Err(Error::Engine(format!(
            "probing the lock of {}: {e}",
            dir.display()
        ))),
    }
}

/// sled alone over a store of an older format, for reading it (a backup before an upgrade)
/// without upgrading it: no write-ahead log is created and the marker is left as it is.
pub(crate) struct ReadOnlySled {
    db: sled::Db,
}

impl ReadOnlySled {
    /// Refuses a store with a write-ahead log to replay: only the full engine sees all of it.
    pub(crate) fn open(dir: &Path, cache_capacity: u64) -> Result<Self> {
        store_format(dir)?;
        let has_log = match fs::read_dir(dir.join("wal")) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().ends_with(".log")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(e.into()),
        };
        if has_log {
            return Err(Error::Format(format!(
                "{} has a write-ahead log to replay; it cannot be read without upgrading it",
                dir.display()
            )));
        }
        let db = sled_config(&dir.join("sled"), cache_capacity, false)?.open()?;
        Ok(ReadOnlySled { db })
    }
}

impl Engine for ReadOnlySled {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        db_get(&self.db, key)
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        db_scan(&self.db, start, end, limit)
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        db_count(&self.db, start, end)
    }

    fn commit(&self, _batch: Vec<BatchOp>) -> Result<()> {
        Err(Error::Unsupported(
            "the store is open for reading only".into(),
        ))
    }

    fn close(&self) -> Result<()> {
        Ok(())
    }

    fn size_bytes(&self) -> Result<u64> {
        Ok(self.db.size_on_disk()?)
    }
}

/// Records that the directory now holds this build's format (a format-1 store gains a log).
fn mark_format_current(dir: &Path) -> Result<()> {
    let marker = dir.join(FORMAT_FILE);
    let current = format!("{FORMAT_MAGIC} {FORMAT_VERSION}\n");
    if fs::read_to_string(&marker)? == current {
        return Ok(());
    }
    write_marker(dir)
}

fn write_marker(dir: &Path) -> Result<()> {
    let tmp = dir.join(".FORMAT.tmp");
    let mut f = File::create(&tmp)?;
    writeln!(f, "{FORMAT_MAGIC} {FORMAT_VERSION}")?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join(FORMAT_FILE))?;
    sync_dir(dir)
}
