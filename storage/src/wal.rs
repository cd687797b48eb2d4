//! The write-ahead log that makes sled commits durable with one `fdatasync`.
//!
//! sled's own durable flush costs two `pwrite` + `sync_file_range` pairs plus our `fdatasync`
//! and wakes several threads; a commit here is one append to a preallocated file and one
//! `fdatasync`. sled gets the same batch without a flush and is checkpointed (flushed and
//! synced) from time to time, after which older log files are deleted. Opening a store replays
//! every log file in order over sled: batches hold whole values, so replaying one that sled
//! already has is harmless.
//!
//! File `wal/<generation>.log`, preallocated; records: magic u32 | payload len u32 | crc32 of
//! payload u32 | payload, where payload = op count u32, then per op: key len u32 | key |
//! present u8 | value len u32 | value. A zeroed or torn record ends the log.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::engine::BatchOp;
use crate::{Error, Result};

const MAGIC: u32 = 0x6b31_7357; // "k1sW"
const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
const HEADER: usize = 12;

pub(crate) struct Wal {
    dir: PathBuf,
    generation: u64,
    file: File,
    offset: u64,
    allocated: u64,
}

fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation:020}.log"))
}

/// Every log file in the directory, oldest first.
fn generations(dir: &Path) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    match fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let name = entry?.file_name();
                let name = name.to_string_lossy();
                if let Some(g) = name
                    .strip_suffix(".log")
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    out.push(g);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    out.sort_unstable();
    Ok(out)
}

pub(crate) fn encode_batch(batch: &[BatchOp]) -> Vec<u8> {
    let size: usize = batch
        .iter()
        .map(|(k, v)| 9 + k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    let mut payload = Vec::with_capacity(4 + size);
    payload.extend_from_slice(&(batch.len() as u32).to_be_bytes());
    for (k, v) in batch {
        payload.extend_from_slice(&(k.len() as u32).to_be_bytes());
        payload.extend_from_slice(k);
        match v {
            Some(v) => {
                payload.push(1);
                payload.extend_from_slice(&(v.len() as u32).to_be_bytes());
                payload.extend_from_slice(v);
            }
            None => {
                payload.push(0);
                payload.extend_from_slice(&0u32.to_be_bytes());
            }
        }
    }
    let mut record = Vec::with_capacity(HEADER + payload.len());
    record.extend_from_slice(&MAGIC.to_be_bytes());
    record.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    record.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
    record.extend_from_slice(&payload);
    record
}

fn be_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

fn decode_payload(mut p: &[u8]) -> Option<Vec<BatchOp>> {
    let count = be_u32(p)? as usize;
    p = &p[4..];
    let mut ops = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let klen = be_u32(p)? as usize;
        let key = p.get(4..4 + klen)?.to_vec();
        p = &p[4 + klen..];
        let present = *p.first()?;
        let vlen = be_u32(p.get(1..)?)? as usize;
        let value = p.get(5..5 + vlen)?.to_vec();
        p = &p[5 + vlen..];
        ops.push((key, (present == 1).then_some(value)));
    }
    Some(ops)
}

/// Reads the valid prefix of one log file: the batches before the first zeroed or torn record.
fn read_batches(path: &Path) -> Result<Vec<Vec<BatchOp>>> {
    let data = fs::read(path)?;
    let mut batches = Vec::new();
    let mut at = 0usize;
    while at + HEADER <= data.len() {
        let (Some(magic), Some(len), Some(crc)) = (
            be_u32(&data[at..]),
            be_u32(&data[at + 4..]),
            be_u32(&data[at + 8..]),
        ) else {
            break;
        };
        let Some(payload) = data.get(at + HEADER..at + HEADER + len as usize) else {
            break;
        };
        if magic != MAGIC || crc32fast::hash(payload) != crc {
            break;
        }
        match decode_payload(payload) {
            Some(ops) => batches.push(ops),
            None => break,
        }
        at += HEADER + len as usize;
    }
    Ok(batches)
}

impl Wal {
    /// Replays every existing log over `apply`, then starts a fresh log file. The caller makes
    /// the replayed state durable and then calls `drop_older_than_current`.
    pub(crate) fn open(
        dir: &Path,
        mut apply: impl FnMut(Vec<BatchOp>) -> Result<()>,
    ) -> Result<Wal> {
        fs::create_dir_all(dir)?;
        let existing = generations(dir)?;
        for g in &existing {
            for batch in read_batches(&log_path(dir, *g))? {
                apply(batch)?;
            }
        }
        let generation = existing.last().map_or(1, |g| g + 1);
        Wal::create(dir, generation)
    }

    fn create(dir: &Path, generation: u64) -> Result<Wal> {
        let path = log_path(dir, generation);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        preallocate(&file, SEGMENT_BYTES)?;
        file.sync_all()?;
        File::open(dir)?.sync_all()?;
        Ok(Wal {
            dir: dir.to_path_buf(),
            generation,
            file,
            offset: 0,
            allocated: SEGMENT_BYTES,
        })
    }

    /// Appends a batch and returns once it is on disk.
    pub(crate) fn append(&mut self, batch: &[BatchOp]) -> Result<()> {
        let record = encode_batch(batch);
        let end = self.offset + record.len() as u64;
        if end > self.allocated {
            // Grow in whole segments; a checkpoint normally starts a new file long before.
            let grow = (end - self.allocated).div_ceil(SEGMENT_BYTES) * SEGMENT_BYTES;
            preallocate(&self.file, self.allocated + grow)?;
            self.allocated += grow;
        }
        self.file.write_all_at(&record, self.offset)?;
        self.file.sync_data()?;
        self.offset = end;
        Ok(())
    }

    /// Bytes written to the current log file.
    pub(crate) fn len(&self) -> u64 {
        self.offset
    }

    /// Starts a new log file after the engine made everything so far durable, and deletes the
    /// older files (their batches are in the engine now).
    pub(crate) fn rotate(&mut self) -> Result<()> {
        let next = Wal::create(&self.dir, self.generation + 1)?;
        *self = next;
        self.drop_older_than_current()
    }

    pub(crate) fn drop_older_than_current(&self) -> Result<()> {
        for g in generations(&self.dir)? {
            if g < self.generation {
                fs::remove_file(log_path(&self.dir, g))?;
            }
        }
        File::open(&self.dir)?.sync_all()?;
        Ok(())
    }
}

/// Reserves `len` bytes for the file so writes inside it neither change its size nor allocate
/// blocks (a sparse file would), keeping each `fdatasync` cheap.
fn preallocate(file: &File, len: u64) -> Result<()> {
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        // Filesystems without fallocate (tmpfs has it; some FUSE ones do not): a sized file works.
        Err(rustix::io::Errno::OPNOTSUPP) => file.set_len(len).map_err(Error::from),
        Err(e) => Err(Error::Engine(format!(
            "preallocating the write-ahead log: {e}"
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn replays_valid_prefix_and_stops_at_torn_records() {
        let dir = tempfile::tempdir().unwrap();
        let wal_dir = dir.path().join("wal");
        {
            let mut w = Wal::open(&wal_dir, |_| Ok(())).unwrap();
            w.append(&[(b"a".to_vec(), Some(b"1".to_vec()))]).unwrap();
            w.append(&[(b"b".to_vec(), None), (b"c".to_vec(), Some(vec![7; 300]))])
                .unwrap();
            w.append(&[(b"d".to_vec(), Some(b"4".to_vec()))]).unwrap();
        }
        // Tear the last record.
        let path = log_path(&wal_dir, 1);
        let mut data = fs::read(&path).unwrap();
        let third = HEADER + 4 + 4 + 1 + 1 + 4 + 1;
        let second_len =
            encode_batch(&[(b"b".to_vec(), None), (b"c".to_vec(), Some(vec![7; 300]))]).len();
        data[third + second_len + HEADER + 2] ^= 0xff;
        fs::write(&path, &data).unwrap();
        let mut seen = Vec::new();
        let w = Wal::open(&wal_dir, |b| {
            seen.push(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1][0], (b"b".to_vec(), None));
        assert_eq!(seen[1][1].1.as_ref().unwrap().len(), 300);
        // The replayed files stay until the caller has made the state durable.
        assert_eq!(generations(&wal_dir).unwrap(), vec![1, 2]);
        w.drop_older_than_current().unwrap();
        assert_eq!(generations(&wal_dir).unwrap(), vec![2]);
    }

    #[test]
    fn garbage_never_panics() {
        for junk in [
            &b""[..],
            b"\x6b\x31\x73\x57\xff\xff\xff\xff",
            b"\x6b\x31\x73\x57\x00\x00\x00\x04\x00\x00\x00\x00\xff\xff\xff\xff",
        ] {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join(format!("{:020}.log", 1)), junk).unwrap();
            assert!(
                read_batches(&dir.path().join(format!("{:020}.log", 1)))
                    .unwrap()
                    .is_empty()
            );
        }
    }
}
