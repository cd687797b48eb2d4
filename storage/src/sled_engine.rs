//! The sled engine (store format 2): one fixed tree, and the write-ahead log for durable commits.
//!
//! A commit appends its batch to the write-ahead log (one `pwrite` + `fdatasync`) and applies it
//! to sled without a flush. The checkpoint thread (`log_files.rs`) switches the log to a new
//! file once the current one is half full; the older files go once sled itself is durable. sled 0.34's `flush()` only calls
//! `sync_file_range`, which neither persists file metadata nor survives power loss, and large
//! pages go to `blobs/` files it never fsyncs; so a checkpoint flushes, then `fdatasync`s the db
//! file and any new blob file (and the blob directory). Opening replays the remaining log files
//! over sled in order: they hold every batch applied since the last completed checkpoint, and
//! replaying a batch sled already has is harmless because the later ones follow it. Closing
//! makes sled durable and deletes the log, so a clean restart replays nothing.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::engine::{BatchOp, Engine};
use crate::format::{self, Format};
use crate::log_files::{Checkpoint, Checkpointer, LogFiles};
use crate::wal::{self, Wal, sync_dir};
use crate::{Error, Result};

pub(crate) struct SledEngine {
    inner: Arc<Inner>,
    checkpointer: Checkpointer,
}

struct Inner {
    db: sled::Db,
    db_file: File,
    blob_dir: PathBuf,
    /// The blobs already fsynced; its lock is held through a whole durability pass.
    synced_blobs: Mutex<HashSet<std::ffi::OsString>>,
    log: LogFiles,
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
        format::check_or_create(dir, Format::Sled)?;
        let sled_dir = dir.join("sled");
        let db = sled_config(&sled_dir, cache_capacity, compress_new)?.open()?;
        let db_file = File::open(sled_dir.join("db"))?;
        // The directory entries of sled's files must be durable too.
        sync_dir(&sled_dir)?;
        sync_dir(dir)?;
        let wal_file_bytes = wal::segment_size(wal_file_bytes);
        let wal = Wal::open(&dir.join("wal"), wal_file_bytes, 1, |batch| {
            apply_to(&db, batch)
        })?;
        let inner = Arc::new(Inner {
            db,
            db_file,
            blob_dir: sled_dir.join("blobs"),
            synced_blobs: Mutex::new(HashSet::new()),
            log: LogFiles::new(wal, wal_file_bytes),
        });
        // What was replayed is durable in sled before the replayed files go.
        inner.make_sled_durable()?;
        {
            let wal = inner.log.wal()?;
            wal::delete_before(wal.dir(), wal.generation())?;
        }
        format::mark(dir, Format::Sled)?;
        let checkpointer = Checkpointer::start(inner.clone())?;
        Ok(SledEngine {
            inner,
            checkpointer,
        })
    }
}

impl Checkpoint for Inner {
    fn log(&self) -> &LogFiles {
        &self.log
    }

    /// Switches the log to a spare, makes sled durable, then recycles the older files.
    fn checkpoint(&self) -> Result<()> {
        let mut spares = self.log.spares()?;
        let Some((switched, ())) = self.log.switch(&mut spares, |_| ())? else {
            return Ok(());
        };
        // Every batch in the older files was applied before the switch, so this covers them.
        self.make_sled_durable()?;
        let recyclable: &[u64] = if switched.recyclable {
            &[switched.old]
        } else {
            &[]
        };
        self.log
            .retire_before(&mut spares, switched.generation, recyclable)
    }
}

impl Inner {
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

/// sled as the store uses it: no flush of its own (checkpoints flush), and, in a store
/// created with `compress_new`, what it logs compressed with zstd, which shrinks the JSON
/// objects it holds to a third or so and its writes to the device with them (at about 40 µs of
/// CPU per small write: sled compresses every fragment it logs, with a fresh zstd context each
/// time). sled refuses to open a database with another compression setting than it was created
/// with, so an existing store keeps its own.
fn sled_config(sled_dir: &Path, cache_capacity: u64, compress_new: bool) -> Result<sled::Config> {
    remove_unfinished_snapshots(sled_dir)?;
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

/// Deletes the snapshot files sled was still writing when the process died.
///
/// sled 0.34 writes a snapshot to `snap.<lsn>.generating`, syncs it, renames it to `snap.<lsn>`
/// and only then removes the older snapshot. But on opening it reads the file whose name sorts
/// last, `.generating` ones included, so a kill -9 during that write leaves a store that
/// refuses to open ("Read corrupted data", sled issue #1527; our crash test found it). Nothing
/// depends on such a file before its rename: without it the store is as if the process had
/// died just before the write began.
fn remove_unfinished_snapshots(sled_dir: &Path) -> Result<()> {
    let entries = match fs::read_dir(sled_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for entry in entries {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("snap.") && name.ends_with(".generating") {
            tracing::info!(file = %name, "removing a snapshot sled did not finish writing");
            fs::remove_file(sled_dir.join(&*name))?;
        }
    }
    Ok(())
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
        let db = &self.inner.db;
        if self.inner.log.commit(batch, |batch| apply_to(db, batch))? {
            self.checkpointer.nudge();
        }
        Ok(())
    }

    fn close(&self) -> Result<()> {
        self.inner.make_sled_durable()?;
        self.inner.log.wal()?.close()
    }

    fn size_bytes(&self) -> Result<u64> {
        // sled's file and blobs, and the log files.
        Ok(self.inner.db.size_on_disk()? + self.inner.log.size_bytes()?)
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
        format::store_format(dir)?;
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
