//! The store directory's `FORMAT` marker, which names the engine that wrote it, and its lock.
//!
//! Format 1 is sled alone (read, and upgraded to 2 on open); 2 is sled with the write-ahead log;
//! 3 is the image engine; 4 the image engine whose log may hold compressed records (a format-3
//! store becomes 4 when opened). A directory without a marker is a new store only when it is empty: a
//! foreign or newer directory is refused untouched.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::wal::sync_dir;
use crate::{Error, Result};

/// The format a new store gets: the image engine.
pub const FORMAT_VERSION: u32 = 4;
const READABLE_FORMATS: [u32; 4] = [1, 2, 3, 4];
const FORMAT_FILE: &str = "FORMAT";
const FORMAT_MAGIC: &str = "k1s-store";
/// The file the image engine holds an exclusive `flock` on while the store is open (sled
/// stores are locked by sled, on `sled/db`).
const LOCK_FILE: &str = "LOCK";

/// The engines behind the formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Formats 1 and 2.
    Sled,
    /// Formats 3 and 4.
    Image,
}

impl Format {
    fn version(self) -> u32 {
        match self {
            Format::Sled => 2,
            Format::Image => 4,
        }
    }

    fn of_version(version: u32) -> Format {
        if version >= 3 {
            Format::Image
        } else {
            Format::Sled
        }
    }
}

/// The engine of the store in `dir`, or `None` where there is no store yet (the directory is
/// missing or empty).
pub(crate) fn existing(dir: &Path) -> Result<Option<Format>> {
    match store_format(dir) {
        Ok(v) => Ok(Some(Format::of_version(v))),
        Err(_) if is_empty(dir)? => Ok(None),
        Err(e) => Err(e),
    }
}

/// Checks that `dir` holds a store of `format`, or creates one in an empty or missing directory.
pub(crate) fn check_or_create(dir: &Path, format: Format) -> Result<()> {
    match existing(dir)? {
        Some(found) if found == format => Ok(()),
        Some(found) => Err(Error::Format(format!(
            "the store at {} was written by the {found:?} engine, not the {format:?} engine",
            dir.display()
        ))),
        None => {
            fs::create_dir_all(dir)?;
            write_marker(dir, format.version())
        }
    }
}

/// Records that the directory holds `format` (a format-1 store that gained a log is format 2).
pub(crate) fn mark(dir: &Path, format: Format) -> Result<()> {
    let current = format!("{FORMAT_MAGIC} {}\n", format.version());
    if fs::read_to_string(dir.join(FORMAT_FILE))? == current {
        return Ok(());
    }
    write_marker(dir, format.version())
}

fn write_marker(dir: &Path, version: u32) -> Result<()> {
    let tmp = dir.join(".FORMAT.tmp");
    let mut f = File::create(&tmp)?;
    writeln!(f, "{FORMAT_MAGIC} {version}")?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join(FORMAT_FILE))?;
    sync_dir(dir)
}

fn is_empty(dir: &Path) -> Result<bool> {
    match fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// The format version a marker names, if this build reads it.
fn parse_version(marker: &Path, text: &str) -> Result<u32> {
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
        Ok(text) => parse_version(&marker, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::Format(if is_empty(dir)? {
                format!("there is no k1s store at {}", dir.display())
            } else {
                format!(
                    "{} is not empty and has no {FORMAT_FILE} file: not a k1s store; refusing to touch it",
                    dir.display()
                )
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// Takes the image engine's exclusive lock on the store; held while the returned file is open.
pub(crate) fn lock(dir: &Path) -> Result<File> {
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(Error::Engine(format!(
            "the store at {} is in use by another process (a running k1s server?)",
            dir.display()
        ))),
        Err(e) => Err(Error::Engine(format!("locking {}: {e}", dir.display()))),
    }
}

/// Whether a process (a running server) holds the store's lock: probed with a non-blocking
/// `flock` on the file its engine locks, released at once. A store never opened is not in use.
pub fn store_in_use(dir: &Path) -> Result<bool> {
    for path in [dir.join(LOCK_FILE), dir.join("sled").join("db")] {
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            // Closing the file releases the probe's lock.
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(true),
            Err(e) => {
                return Err(Error::Engine(format!(
                    "probing the lock of {}: {e}",
                    dir.display()
                )));
            }
        }
    }
    Ok(false)
}
