//! The sled engine: one fixed tree, explicit fdatasync for real durability, and a format marker.
//!
//! sled 0.34's `flush()` only calls `sync_file_range`, which does not persist file metadata or
//! survive power loss, and large pages go to `blobs/` files it never fsyncs. So `sync()` flushes,
//! then `fdatasync`s the db file and any new blob file (and the blob directory).

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::engine::{BatchOp, Engine};
use crate::{Error, Result};

/// The on-disk format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
const FORMAT_FILE: &str = "FORMAT";
const FORMAT_MAGIC: &str = "k1s-store";

pub(crate) struct SledEngine {
    db: sled::Db,
    db_file: File,
    blob_dir: PathBuf,
    synced_blobs: Mutex<HashSet<std::ffi::OsString>>,
}

impl SledEngine {
    /// Opens (or creates) the store in `dir`. A foreign or newer directory is refused untouched.
    pub(crate) fn open(dir: &Path, cache_capacity: u64) -> Result<Self> {
        check_or_create_format(dir)?;
        let sled_dir = dir.join("sled");
        let db = sled::Config::new()
            .path(&sled_dir)
            .cache_capacity(cache_capacity)
            .flush_every_ms(None)
            .open()?;
        let db_file = File::open(sled_dir.join("db"))?;
        // The directory entries of sled's files must be durable too.
        sync_dir(&sled_dir)?;
        sync_dir(dir)?;
        let blob_dir = sled_dir.join("blobs");
        let engine = SledEngine {
            db,
            db_file,
            blob_dir,
            synced_blobs: Mutex::new(HashSet::new()),
        };
        engine.sync()?;
        Ok(engine)
    }

    fn sync_new_blobs(&self) -> Result<()> {
        let entries = match fs::read_dir(&self.blob_dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut synced = self
            .synced_blobs
            .lock()
            .map_err(|_| Error::Engine("blob set lock poisoned".into()))?;
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

impl Engine for SledEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?.map(|v| v.to_vec()))
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        for item in self.db.range(start..end).take(limit) {
            let (k, v) = item?;
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        let mut n = 0;
        for item in self.db.range(start..end) {
            item?;
            n += 1;
        }
        Ok(n)
    }

    fn apply(&self, batch: Vec<BatchOp>) -> Result<()> {
        let mut b = sled::Batch::default();
        for (k, v) in batch {
            match v {
                Some(v) => b.insert(k, v),
                None => b.remove(k),
            }
        }
        self.db.apply_batch(b)?;
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.db.flush()?;
        self.db_file.sync_data()?;
        self.sync_new_blobs()
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
            let tmp = dir.join(".FORMAT.tmp");
            let mut f = File::create(&tmp)?;
            writeln!(f, "{FORMAT_MAGIC} {FORMAT_VERSION}")?;
            f.sync_all()?;
            fs::rename(&tmp, &marker)?;
            sync_dir(dir)?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

fn parse_format(marker: &Path, text: &str) -> Result<()> {
    let mut words = text.split_whitespace();
    let (Some(FORMAT_MAGIC), Some(version), None) = (words.next(), words.next(), words.next())
    else {
        return Err(Error::Format(format!(
            "{} is not a k1s store format marker; refusing to open",
            marker.display()
        )));
    };
    match version.parse::<u32>() {
        Ok(FORMAT_VERSION) => Ok(()),
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

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}
