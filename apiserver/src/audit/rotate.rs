//! A size-rotated log file with lumberjack's behaviour (what upstream uses for
//! `--audit-log-path`): when a write would push the file past `max_size`, the file is renamed to
//! `<name>-<UTC time as 2006-01-02T15-04-05.000><ext>` (e.g. `audit-2026-11-21T10-00-00.000.log`)
//! and a new one is started; backups beyond `max_backups` (0 = keep all) or older than `max_age`
//! are deleted. A size of 0 means lumberjack's default of 100 MB.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const MEGABYTE: u64 = 1024 * 1024;
const DEFAULT_MAX_SIZE: u64 = 100 * MEGABYTE;
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    max_size: u64,
    max_backups: usize,
    max_age: Option<Duration>,
    file: Option<File>,
    size: u64,
}

impl RotatingFile {
    /// Opens (appending to) `path`, creating its directory as needed.
    pub fn open(
        path: impl Into<PathBuf>,
        max_size: u64,
        max_backups: usize,
        max_age: Option<Duration>,
    ) -> io::Result<Self> {
        let mut f = RotatingFile {
            path: path.into(),
            max_size: if max_size == 0 {
                DEFAULT_MAX_SIZE
            } else {
                max_size
            },
            max_backups,
            max_age,
            file: None,
            size: 0,
        };
        f.open_existing_or_new()?;
        Ok(f)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open_options() -> OpenOptions {
        let mut o = OpenOptions::new();
        o.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        o
    }

    fn open_existing_or_new(&mut self) -> io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = Self::open_options().open(&self.path)?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    /// The name stem and extension lumberjack splits the file name into.
    fn prefix_and_ext(&self) -> (String, String) {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.rfind('.') {
            Some(i) => (name[..i].to_string(), name[i..].to_string()),
            None => (name, String::new()),
        }
    }

    fn backup_path(&self, at: jiff::Timestamp) -> PathBuf {
        let (prefix, ext) = self.prefix_and_ext();
        let dir = self.path.parent().unwrap_or_else(|| Path::new(""));
        // Two rotations within one millisecond would collide; move to the next free name.
        let mut t = at;
        for _ in 0..1000 {
            let candidate = dir.join(format!("{prefix}-{}{ext}", t.strftime(BACKUP_TIME_FORMAT)));
            if !candidate.exists() {
                return candidate;
            }
            t = t
                .checked_add(jiff::SignedDuration::from_millis(1))
                .unwrap_or(t);
        }
        dir.join(format!("{prefix}-{}{ext}", t.strftime(BACKUP_TIME_FORMAT)))
    }

    /// Moves the current file to a backup and starts a new one.
    pub fn rotate(&mut self) -> io::Result<()> {
        if let Some(mut f) = self.file.take() {
            f.flush()?;
        }
        if self.path.exists() {
            fs::rename(&self.path, self.backup_path(jiff::Timestamp::now()))?;
        }
        self.open_existing_or_new()?;
        self.remove_old_backups();
        Ok(())
    }

    /// The backups of this file, newest first.
    pub fn backups(&self) -> Vec<(jiff::Timestamp, PathBuf)> {
        let (prefix, ext) = self.prefix_and_ext();
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Ok(entries) = fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut found: Vec<(jiff::Timestamp, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let stamp = name
                    .strip_prefix(&format!("{prefix}-"))?
                    .strip_suffix(ext.as_str())?;
                let t = jiff::civil::DateTime::strptime(BACKUP_TIME_FORMAT, stamp)
                    .ok()?
                    .to_zoned(jiff::tz::TimeZone::UTC)
                    .ok()?
                    .timestamp();
                Some((t, e.path()))
            })
            .collect();
        found.sort_by_key(|b| std::cmp::Reverse(b.0));
        found
    }

    fn remove_old_backups(&self) {
        let backups = self.backups();
        let cutoff = self.max_age.and_then(|age| {
            jiff::Timestamp::now()
                .checked_sub(jiff::SignedDuration::try_from(age).ok()?)
                .ok()
        });
        for (i, (t, path)) in backups.iter().enumerate() {
            let too_many = self.max_backups > 0 && i >= self.max_backups;
            let too_old = cutoff.is_some_and(|c| *t < c);
            if (too_many || too_old)
                && let Err(e) = fs::remove_file(path)
            {
                tracing::warn!(path = %path.display(), "removing an old audit log backup: {e}");
            }
        }
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len() as u64;
        if len > self.max_size {
            return Err(io::Error::other(format!(
                "write length {len} exceeds maximum file size {}",
                self.max_size
            )));
        }
        if self.file.is_none() {
            self.open_existing_or_new()?;
        }
        if self.size + len > self.max_size {
            self.rotate()?;
        }
        let Some(file) = self.file.as_mut() else {
            return Err(io::Error::other("audit log file is not open"));
        };
        file.write_all(buf)?;
        self.size += len;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}
