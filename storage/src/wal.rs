//! The write-ahead log that makes a sled commit durable with one `pwrite` + `fdatasync`.
//!
//! sled's own durable flush writes whole rewritten pages (tens of KB per small write), issues
//! several `pwrite` + `sync_file_range` calls from its thread pool and wakes threads to do so.
//! Here a commit is one append to a prepared file and one `fdatasync`; sled receives the same
//! batch without a flush and is checkpointed in the background (see `sled_engine.rs`).
//!
//! Log files are `wal/<generation>.log`. The one appended to is best fully written once ahead
//! of time: then an append changes no file metadata (neither size nor block allocation, nor
//! ext4's "unwritten extent" flags that `fallocate` leaves), so its `fdatasync` is one data
//! write and one cache flush, without a journal commit. Such files wait as
//! `<generation>.spare` and are renamed to `.log` when taken into use: a log file a checkpoint
//! has made redundant is recycled as the next spare, and only when there is none (the first
//! start) is one zero-filled; a log merely `fallocate`d is used only until a spare is ready.
//!
//! Bytes reach the disk in whole 4 KiB pages, as the device writes them anyway: an append writes
//! the log's partial last page (kept in memory) followed by the new record, zero-padded to the
//! page's end, with `O_DIRECT` where the filesystem allows it. Buffered writes of small records
//! would each dirty (and have the kernel count and write back) a whole page-cache folio, which on
//! recent kernels is up to 64 KiB or more. A record that fits in one page but not in what is left
//! of the current one starts on the next page, so a lone small commit writes exactly one page;
//! the reader skips the zero padding before a page boundary.
//!
//! Records: magic u32 | generation u64 | payload len u32 | crc32 of payload u32 | payload,
//! where payload = op count u32, then per op: key len u32 | key | present u8 | value len u32 |
//! value (all big-endian). A log that compresses (the image engine's, store format 4) writes a
//! batch that shrinks by it as a record of magic `MAGIC_ZSTD` whose payload is the plain
//! payload's length u32 | its zstd frame: a group commit of similar objects (JSON with the same
//! field names, metadata and labels) takes a fraction of the pages, and of the log files that
//! must be zero-filled ahead of it. A zeroed or torn record, or one left from the file's earlier life
//! (another generation), ends a file: records are synced in order, so everything after the
//! first bad one was never acknowledged.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::engine::BatchOp;
use crate::{Error, Result};

const MAGIC: u32 = 0x6b31_7357; // "k1sW"
/// A record whose payload is zstd-compressed.
const MAGIC_ZSTD: u32 = 0x6b31_735a; // "k1sZ"
/// Payloads shorter than this are written plain: they would not leave a page sooner.
const COMPRESS_MIN: usize = 512;
/// zstd's fastest standard level: a commit's CPU cost stays small beside its sync.
const COMPRESS_LEVEL: i32 = 1;
const HEADER: usize = 20;
/// The default size of a log file; a checkpoint normally starts a new one when half of it is
/// used. A data directory holds two (the current one and a spare).
pub const DEFAULT_SEGMENT_BYTES: u64 = 4 * 1024 * 1024;
/// The unit of every log write, and the alignment `O_DIRECT` asks of offsets and buffers.
pub(crate) const PAGE: u64 = 4096;
/// The smallest log file size accepted.
pub const MIN_SEGMENT_BYTES: u64 = 64 * 1024;

/// The log file size used for a requested one: at least the minimum, in whole pages.
pub(crate) fn segment_size(requested: u64) -> u64 {
    requested.max(MIN_SEGMENT_BYTES).next_multiple_of(PAGE)
}
static ZEROS: [u8; 1 << 16] = [0; 1 << 16];

/// A log file taken into use.
struct Segment {
    generation: u64,
    file: File,
    /// The same file opened with `O_DIRECT` (`None` where the filesystem refuses it).
    direct: Option<File>,
    allocated: u64,
    /// Zero-filled ahead of time (cheap appends), rather than only `fallocate`d.
    zeroed: bool,
}

/// A zero-filled file waiting to become the next log file.
pub(crate) struct Spare {
    generation: u64,
    file: File,
}

impl Spare {
    /// Writes `<dir>/<generation>.spare`: zeros, synced, then renamed into place, so a spare
    /// file that exists is whole.
    pub(crate) fn prepare(dir: &Path, generation: u64, size: u64) -> Result<Spare> {
        let tmp = dir.join(format!("{generation:020}.spare.tmp"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        let mut at = 0;
        while at < size {
            let n = (size - at).min(ZEROS.len() as u64) as usize;
            file.write_all_at(&ZEROS[..n], at)?;
            at += n as u64;
        }
        file.sync_all()?;
        // The zeros are on disk: drop their (large) page-cache folios, so that a buffered
        // append later dirties a small page rather than one of them.
        drop_cache(&file, 0, size);
        fs::rename(&tmp, spare_path(dir, generation))?;
        sync_dir(dir)?;
        Ok(Spare { generation, file })
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Renames the redundant log file `old` to `<generation>.spare`. Its blocks are all
    /// written, so appends over its stale records (another generation) stay cheap.
    pub(crate) fn recycle(dir: &Path, old: u64, generation: u64) -> Result<Spare> {
        fs::rename(log_path(dir, old), spare_path(dir, generation))?;
        sync_dir(dir)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(spare_path(dir, generation))?;
        Ok(Spare { generation, file })
    }

    /// Renames the spare to `<generation>.log`, ready for appends.
    fn activate(self, dir: &Path) -> Result<Segment> {
        let path = log_path(dir, self.generation);
        fs::rename(spare_path(dir, self.generation), &path)?;
        sync_dir(dir)?;
        let allocated = self.file.metadata()?.len();
        Ok(Segment {
            generation: self.generation,
            direct: open_direct(&path),
            file: self.file,
            allocated,
            zeroed: true,
        })
    }
}

impl Segment {
    /// Creates `<dir>/<generation>.log` preallocated with `fallocate` (fast, but each first
    /// write into a block then also updates metadata).
    fn preallocated(dir: &Path, generation: u64, size: u64) -> Result<Segment> {
        let path = log_path(dir, generation);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        preallocate(&file, size)?;
        file.sync_all()?;
        sync_dir(dir)?;
        Ok(Segment {
            generation,
            direct: open_direct(&path),
            file,
            allocated: size,
            zeroed: false,
        })
    }

    /// Writes whole pages at `at` (page-aligned; `image` a whole number of pages), directly
    /// when the file allows it, else through the page cache.
    fn write_pages(&mut self, image: &[u8], at: u64) -> Result<()> {
        if let Some(direct) = &self.direct {
            match direct.write_all_at(image, at) {
                Ok(()) => return Ok(()),
                // Some filesystems accept O_DIRECT at open but not the write itself.
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
                    tracing::debug!("O_DIRECT refused by the write-ahead log's filesystem");
                    self.direct = None;
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.file.write_all_at(image, at)?;
        // Starts writeback of the new bytes now (DONTNEED writes dirty pages back without
        // waiting, then drops the clean ones: the log is only read again on replay).
        drop_cache(&self.file, at, image.len() as u64);
        Ok(())
    }
}

/// The log being appended to.
pub(crate) struct Wal {
    dir: PathBuf,
    /// The size of a new log file.
    segment_bytes: u64,
    current: Segment,
    offset: u64,
    /// The bytes of the current file's partial last page (`offset % PAGE` of them): the next
    /// write rewrites that page whole.
    tail: Vec<u8>,
    /// Scratch for page images, over-allocated so an aligned window fits (`O_DIRECT`).
    scratch: Vec<u8>,
    /// Set once the log files are gone at close: later appends fail rather than vanish.
    closed: bool,
    /// Spare files found at open beyond the one taken into use, oldest first.
    spares: Vec<Spare>,
    /// Compresses the records that shrink by it (`with_compression`).
    compressor: Option<zstd::block::Compressor>,
}

impl Wal {
    /// Replays every existing log file, oldest first, through `apply`, then starts a new log
    /// file (the first spare left by the previous run if there is one; the others are kept for
    /// `take_spares`) of generation `min_generation` or later. The replayed files stay until the caller has made their effect durable and
    /// calls `delete_before(generation())`.
    pub(crate) fn open(
        dir: &Path,
        segment_bytes: u64,
        min_generation: u64,
        mut apply: impl FnMut(Vec<BatchOp>) -> Result<()>,
    ) -> Result<Wal> {
        fs::create_dir_all(dir)?;
        let logs = generations(dir, ".log")?;
        for g in &logs {
            for batch in read_batches(&log_path(dir, *g), *g)? {
                apply(batch)?;
            }
        }
        let newest = logs
            .last()
            .copied()
            .unwrap_or(0)
            .max(min_generation.saturating_sub(1));
        // Leftovers: half-written spares, and spares that would not sort after the logs.
        for g in generations(dir, ".spare.tmp")? {
            fs::remove_file(dir.join(format!("{g:020}.spare.tmp")))?;
        }
        let mut spares = Vec::new();
        for g in generations(dir, ".spare")? {
            let path = spare_path(dir, g);
            let whole = fs::metadata(&path).is_ok_and(|m| m.len() == segment_bytes);
            if g > newest && whole {
                let file = OpenOptions::new().read(true).write(true).open(&path)?;
                spares.push(Spare {
                    generation: g,
                    file,
                });
            } else {
                fs::remove_file(&path)?;
            }
        }
        let current = if spares.is_empty() {
            Segment::preallocated(dir, newest + 1, segment_bytes)?
        } else {
            spares.remove(0).activate(dir)?
        };
        Ok(Wal {
            dir: dir.to_path_buf(),
            segment_bytes,
            current,
            offset: 0,
            tail: Vec::new(),
            scratch: Vec::new(),
            closed: false,
            spares,
            compressor: None,
        })
    }

    /// Appends compressed records from now on where that makes them shorter (replay reads
    /// both kinds always; the store's format must say that older builds cannot read it).
    pub(crate) fn with_compression(mut self) -> Wal {
        self.compressor = Some(zstd::block::Compressor::new());
        self
    }

    /// The further spare files found at open (for generations after the current one).
    pub(crate) fn take_spares(&mut self) -> Vec<Spare> {
        std::mem::take(&mut self.spares)
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn generation(&self) -> u64 {
        self.current.generation
    }

    /// Bytes appended to the current file.
    pub(crate) fn len(&self) -> u64 {
        self.offset
    }

    /// The current file's size on disk (appends beyond a segment grow it).
    pub(crate) fn allocated(&self) -> u64 {
        self.current.allocated
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether the current file was zero-filled ahead of time.
    pub(crate) fn is_zeroed(&self) -> bool {
        self.current.zeroed
    }

    /// Appends a batch and returns once it is on disk.
    #[cfg(test)]
    pub(crate) fn append(&mut self, batch: &[BatchOp]) -> Result<()> {
        self.write(batch)?;
        self.sync()
    }

    /// Appends a batch; `sync` makes it durable. Buffered, the device writes while the caller
    /// does other work (applies the batch to sled); with `O_DIRECT` the write has reached the
    /// device (not necessarily its stable storage) when this returns.
    pub(crate) fn write(&mut self, batch: &[BatchOp]) -> Result<()> {
        if self.closed {
            return Err(Error::Closed);
        }
        let record = encode_batch(self.current.generation, batch, self.compressor.as_mut());
        let len = record.len() as u64;
        let mut start = self.offset;
        let used = start % PAGE;
        if used != 0 && len <= PAGE && used + len > PAGE {
            // One page can hold it: start on the next one (the rest of this one is zeros on
            // disk already) rather than write two.
            start += PAGE - used;
            self.tail.clear();
        }
        let end = start + len;
        if end.next_multiple_of(PAGE) > self.current.allocated {
            // A burst outran the checkpoints: grow in whole segments rather than fail.
            let grow = (end.next_multiple_of(PAGE) - self.current.allocated)
                .div_ceil(self.segment_bytes)
                * self.segment_bytes;
            preallocate(&self.current.file, self.current.allocated + grow)?;
            self.current.file.sync_all()?;
            self.current.allocated += grow;
        }
        // The page image: the partial page's old bytes, the record, zeros to the page's end.
        let first = start - start % PAGE;
        let image_len = (end - first).next_multiple_of(PAGE) as usize;
        if self.scratch.len() < image_len + PAGE as usize {
            self.scratch = vec![0; image_len + PAGE as usize];
        }
        let align = self.scratch.as_ptr().align_offset(PAGE as usize);
        let image = &mut self.scratch[align..align + image_len];
        let head = self.tail.len();
        image[..head].copy_from_slice(&self.tail);
        image[head..head + record.len()].copy_from_slice(&record);
        image[head + record.len()..].fill(0);
        self.current
            .write_pages(&self.scratch[align..align + image_len], first)?;
        let last = align + (end - end % PAGE - first) as usize;
        self.tail.clear();
        self.tail
            .extend_from_slice(&self.scratch[last..align + (end - first) as usize]);
        self.offset = end;
        Ok(())
    }

    /// Returns once everything written so far is on disk (with `O_DIRECT` the data is
    /// already written: this flushes the device's cache).
    pub(crate) fn sync(&mut self) -> Result<()> {
        self.current.file.sync_data()?;
        Ok(())
    }

    /// The size of a new log file.
    pub(crate) fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    /// Appends go to `spare` (which must be the next generation) from now on. Returns the
    /// file appends went to before, and whether it may be recycled once redundant (it was a
    /// fully written one of the standard size).
    pub(crate) fn switch_to(&mut self, spare: Spare) -> Result<(u64, bool)> {
        if spare.generation != self.current.generation + 1 {
            return Err(Error::Engine(format!(
                "write-ahead log file {} is not the successor of {}",
                spare.generation, self.current.generation
            )));
        }
        let old = std::mem::replace(&mut self.current, spare.activate(&self.dir)?);
        self.offset = 0;
        self.tail.clear();
        Ok((
            old.generation,
            old.zeroed && old.allocated == self.segment_bytes,
        ))
    }

    /// Deletes every log file once their batches are durable elsewhere; the log takes no
    /// more appends (the store is closing).
    pub(crate) fn close(&mut self) -> Result<()> {
        self.closed = true;
        delete_before(&self.dir, u64::MAX)
    }
}

/// Deletes every log file older than `generation` (their batches are durable elsewhere now).
pub(crate) fn delete_before(dir: &Path, generation: u64) -> Result<()> {
    let mut any = false;
    for g in generations(dir, ".log")? {
        if g < generation {
            fs::remove_file(log_path(dir, g))?;
            any = true;
        }
    }
    if any {
        sync_dir(dir)?;
    }
    Ok(())
}

fn log_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation:020}.log"))
}

fn spare_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation:020}.spare"))
}

/// The generations of the files named `<generation><suffix>`, oldest first.
fn generations(dir: &Path, suffix: &str) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    match fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                let name = entry?.file_name();
                let name = name.to_string_lossy();
                if let Some(g) = name
                    .strip_suffix(suffix)
                    .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
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

/// One record of `batch`; compressed where `compressor` is given and that shortens it.
fn encode_batch(
    generation: u64,
    batch: &[BatchOp],
    compressor: Option<&mut zstd::block::Compressor>,
) -> Vec<u8> {
    let size: usize = batch
        .iter()
        .map(|(k, v)| 9 + k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    let mut record = Vec::with_capacity(HEADER + 4 + size);
    record.extend_from_slice(&MAGIC.to_be_bytes());
    record.extend_from_slice(&generation.to_be_bytes());
    record.extend_from_slice(&[0; 8]); // length and crc, filled in below
    record.extend_from_slice(&(batch.len() as u32).to_be_bytes());
    for (k, v) in batch {
        record.extend_from_slice(&(k.len() as u32).to_be_bytes());
        record.extend_from_slice(k);
        match v {
            Some(v) => {
                record.push(1);
                record.extend_from_slice(&(v.len() as u32).to_be_bytes());
                record.extend_from_slice(v);
            }
            None => {
                record.push(0);
                record.extend_from_slice(&0u32.to_be_bytes());
            }
        }
    }
    let plain_len = record.len() - HEADER;
    if let Some(compressor) = compressor.filter(|_| plain_len >= COMPRESS_MIN)
        && let Ok(frame) = compressor.compress(&record[HEADER..], COMPRESS_LEVEL)
        && frame.len() + 4 < plain_len
    {
        record.truncate(HEADER);
        record[..4].copy_from_slice(&MAGIC_ZSTD.to_be_bytes());
        record.extend_from_slice(&(plain_len as u32).to_be_bytes());
        record.extend_from_slice(&frame);
    }
    let payload_len = (record.len() - HEADER) as u32;
    let crc = crc32fast::hash(&record[HEADER..]);
    record[12..16].copy_from_slice(&payload_len.to_be_bytes());
    record[16..20].copy_from_slice(&crc.to_be_bytes());
    record
}

fn be_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(..4)?.try_into().ok()?))
}

fn be_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

fn decode_payload(mut p: &[u8]) -> Option<Vec<BatchOp>> {
    let count = be_u32(p)? as usize;
    p = p.get(4..)?;
    let mut ops = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let klen = be_u32(p)? as usize;
        let key = p.get(4..4 + klen)?.to_vec();
        p = p.get(4 + klen..)?;
        let present = *p.first()?;
        let vlen = be_u32(p.get(1..)?)? as usize;
        let value = p.get(5..5 + vlen)?.to_vec();
        p = p.get(5 + vlen..)?;
        ops.push((key, (present == 1).then_some(value)));
    }
    p.is_empty().then_some(ops)
}

/// Reads the valid prefix of one log file: the batches before the first zeroed, torn or
/// stale (other generation) record.
fn read_batches(path: &Path, generation: u64) -> Result<Vec<Vec<BatchOp>>> {
    let data = fs::read(path)?;
    let mut batches = Vec::new();
    let mut at = 0usize;
    while let (Some(magic), Some(written_by), Some(len), Some(crc)) = (
        data.get(at..).and_then(be_u32),
        data.get(at + 4..).and_then(be_u64),
        data.get(at + 12..).and_then(be_u32),
        data.get(at + 16..).and_then(be_u32),
    ) {
        if (magic != MAGIC && magic != MAGIC_ZSTD) || written_by != generation {
            // Zeros to the end of a page are padding before a record that starts on the next.
            let next = (at as u64 + 1).next_multiple_of(PAGE) as usize;
            if !at.is_multiple_of(PAGE as usize)
                && data
                    .get(at..next)
                    .is_some_and(|rest| rest.iter().all(|b| *b == 0))
            {
                at = next;
                continue;
            }
            break;
        }
        let Some(payload) = data.get(at + HEADER..at + HEADER + len as usize) else {
            break;
        };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let plain;
        let payload = if magic == MAGIC_ZSTD {
            // The checksum held, so a frame that does not decode is damage, not a torn write.
            let damaged = || {
                Error::Corrupt(format!(
                    "{}: a compressed record at byte {at} does not decode",
                    path.display()
                ))
            };
            let plain_len = be_u32(payload).ok_or_else(damaged)? as usize;
            plain = zstd::block::decompress(&payload[4..], plain_len).map_err(|_| damaged())?;
            &plain[..]
        } else {
            payload
        };
        match decode_payload(payload) {
            Some(ops) => batches.push(ops),
            None => break,
        }
        at += HEADER + len as usize;
    }
    Ok(batches)
}

/// Reserves `len` bytes so writes inside the file neither change its size nor allocate blocks
/// (a sparse file would), which keeps each `fdatasync` to the data and a cache flush.
fn preallocate(file: &File, len: u64) -> Result<()> {
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        // Filesystems without fallocate: a sized (sparse) file still works, only slower.
        Err(rustix::io::Errno::OPNOTSUPP) => file.set_len(len).map_err(Error::from),
        Err(e) => Err(Error::Engine(format!(
            "preallocating the write-ahead log: {e}"
        ))),
    }
}

/// Opens `path` for `O_DIRECT` writes, or `None` where the filesystem does not support them.
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
        .open(path)
        .ok()
}

/// Asks the kernel to write back and drop the cached pages of a range (best effort).
fn drop_cache(file: &File, at: u64, len: u64) {
    let _ = rustix::fs::fadvise(
        file,
        at,
        std::num::NonZeroU64::new(len),
        rustix::fs::Advice::DontNeed,
    );
}

pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const SEG: u64 = 256 * 1024;

    fn replay(dir: &Path) -> (Wal, Vec<Vec<BatchOp>>) {
        let mut seen = Vec::new();
        let wal = Wal::open(dir, SEG, 1, |b| {
            seen.push(b);
            Ok(())
        })
        .unwrap();
        (wal, seen)
    }

    #[test]
    fn compressed_records_are_smaller_and_replay_beside_plain_ones() {
        let dir = tempfile::tempdir().unwrap();
        // Objects alike but for their names, as a group commit of creates is.
        let batch: Vec<BatchOp> = (0..20)
            .map(|i| {
                let value = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"default"}},"data":{{"k":"{}"}}}}"#,
                    "v".repeat(200)
                );
                (format!("d/cm-{i}").into_bytes(), Some(value.into_bytes()))
            })
            .collect();
        let plain = encode_batch(1, &batch, None).len();
        let mut compressor = zstd::block::Compressor::new();
        let packed = encode_batch(1, &batch, Some(&mut compressor)).len();
        assert!(packed * 4 < plain, "{packed} bytes compressed of {plain}");
        // Small or incompressible batches stay plain.
        let small = vec![(b"k".to_vec(), Some(b"v".to_vec()))];
        assert_eq!(
            encode_batch(1, &small, Some(&mut compressor)),
            encode_batch(1, &small, None)
        );
        {
            let (w, _) = replay(dir.path());
            let mut w = w.with_compression();
            w.append(&small).unwrap();
            w.append(&batch).unwrap();
            w.append(&small).unwrap();
            assert!(w.len() < plain as u64, "{} bytes logged", w.len());
        }
        let (_, seen) = replay(dir.path());
        assert_eq!(seen, vec![small.clone(), batch.clone(), small.clone()]);
        // A damaged compressed record ends the log like any other.
        let path = log_path(dir.path(), 1);
        let mut data = fs::read(&path).unwrap();
        let second = encode_batch(1, &small, None).len() + HEADER + 10;
        data[second] ^= 0xff;
        fs::write(&path, &data).unwrap();
        let (_, seen) = replay(dir.path());
        assert_eq!(seen, vec![small]);
    }

    #[test]
    fn replays_in_order_across_files_and_stops_at_a_torn_record() {
        let dir = tempfile::tempdir().unwrap();
        let wal_dir = dir.path().join("wal");
        {
            let (mut w, seen) = replay(&wal_dir);
            assert!(seen.is_empty());
            assert!(!w.is_zeroed());
            w.append(&[(b"a".to_vec(), Some(b"1".to_vec()))]).unwrap();
            let spare = Spare::prepare(&wal_dir, w.generation() + 1, SEG).unwrap();
            w.switch_to(spare).unwrap();
            assert!(w.is_zeroed());
            w.append(&[(b"b".to_vec(), None), (b"c".to_vec(), Some(vec![7; 300]))])
                .unwrap();
            w.append(&[(b"d".to_vec(), Some(b"4".to_vec()))]).unwrap();
        }
        // Tear the last record of the second file.
        let path = log_path(&wal_dir, 2);
        let mut data = fs::read(&path).unwrap();
        let second_len = encode_batch(
            2,
            &[(b"b".to_vec(), None), (b"c".to_vec(), Some(vec![7; 300]))],
            None,
        )
        .len();
        data[second_len + HEADER + 2] ^= 0xff;
        fs::write(&path, &data).unwrap();

        let (w, seen) = replay(&wal_dir);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], vec![(b"a".to_vec(), Some(b"1".to_vec()))]);
        assert_eq!(seen[1][0], (b"b".to_vec(), None));
        assert_eq!(seen[1][1].1.as_ref().unwrap().len(), 300);
        // The replayed files stay until the caller has made the state durable.
        assert_eq!(generations(&wal_dir, ".log").unwrap(), vec![1, 2, 3]);
        delete_before(w.dir(), w.generation()).unwrap();
        assert_eq!(generations(&wal_dir, ".log").unwrap(), vec![3]);
    }

    #[test]
    fn a_spare_left_at_close_is_the_next_log_and_stale_spares_go() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut w, _) = replay(dir.path());
            w.append(&[(b"a".to_vec(), Some(b"1".to_vec()))]).unwrap();
            Spare::prepare(dir.path(), w.generation() + 1, SEG).unwrap();
            w.close().unwrap();
            assert!(w.append(&[(b"x".to_vec(), None)]).is_err());
        }
        fs::write(dir.path().join(format!("{:020}.spare.tmp", 9)), b"half").unwrap();
        let (w, seen) = replay(dir.path());
        assert!(seen.is_empty());
        assert!(w.is_zeroed());
        assert_eq!(w.generation(), 2);
        assert_eq!(generations(dir.path(), ".log").unwrap(), vec![2]);
        assert!(generations(dir.path(), ".spare").unwrap().is_empty());
        assert!(generations(dir.path(), ".spare.tmp").unwrap().is_empty());
        // A spare that does not sort after the logs is not used.
        drop(w);
        Spare::prepare(dir.path(), 1, SEG).unwrap();
        let (w, _) = replay(dir.path());
        assert!(!w.is_zeroed());
        assert_eq!(w.generation(), 3);
        assert!(generations(dir.path(), ".spare").unwrap().is_empty());
    }

    #[test]
    fn further_spares_left_at_close_are_kept_for_later_switches() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut w, _) = replay(dir.path());
            Spare::prepare(dir.path(), 2, SEG).unwrap();
            Spare::prepare(dir.path(), 4, SEG).unwrap();
            w.close().unwrap();
        }
        let (mut w, _) = replay(dir.path());
        assert_eq!(w.generation(), 2);
        let kept: Vec<u64> = w.take_spares().iter().map(Spare::generation).collect();
        assert_eq!(kept, vec![4]);
    }

    #[test]
    fn a_full_segment_grows_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = replay(dir.path());
        w.offset = SEG - 10;
        w.append(&[(b"k".to_vec(), Some(vec![1; 100]))]).unwrap();
        assert_eq!(w.current.allocated, 2 * SEG);
    }

    #[test]
    fn a_small_record_starts_on_the_next_page_rather_than_straddle_two() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = replay(dir.path());
        let op = |i: u8, n: usize| vec![(vec![i], Some(vec![i; n]))];
        // 3 records of ~1.5 KiB: the third does not fit in the first page's rest.
        for i in 0..3 {
            w.append(&op(i, 1500)).unwrap();
        }
        let one = encode_batch(w.generation(), &op(0, 1500), None).len() as u64;
        assert_eq!(w.len(), PAGE + one);
        // A record larger than a page starts right where the log ends.
        w.append(&op(3, 6000)).unwrap();
        let big = encode_batch(w.generation(), &op(3, 6000), None).len() as u64;
        assert_eq!(w.len(), PAGE + one + big);
        // Appends rewrite the partial last page whole, keeping what it held.
        w.append(&op(4, 10)).unwrap();
        drop(w);
        let (_, seen) = replay(dir.path());
        assert_eq!(seen.len(), 5);
        for (i, batch) in seen.iter().enumerate() {
            assert_eq!(batch[0].0, vec![i as u8]);
        }
    }

    #[test]
    fn garbage_never_panics() {
        // Headers of generation 1 with absurd lengths, and payloads whose CRC matches but
        // whose contents are truncated or overlong.
        let header = |len: u32, payload: &[u8]| {
            let mut r = MAGIC.to_be_bytes().to_vec();
            r.extend_from_slice(&1u64.to_be_bytes());
            r.extend_from_slice(&len.to_be_bytes());
            r.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
            r.extend_from_slice(payload);
            r
        };
        for junk in [
            Vec::new(),
            MAGIC.to_be_bytes().to_vec(),
            header(u32::MAX, b""),
            header(8, &[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]),
            header(4, &[0xff, 0xff, 0xff, 0xff]),
            header(10, &[0, 0, 0, 0, 1, 2, 3, 4, 5, 6]),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = log_path(dir.path(), 1);
            fs::write(&path, junk).unwrap();
            assert!(read_batches(&path, 1).unwrap().is_empty());
        }
    }

    #[test]
    fn a_recycled_file_replays_only_its_new_generation() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = replay(dir.path());
        let long = vec![9; 5000];
        for _ in 0..3 {
            w.append(&[(b"old".to_vec(), Some(long.clone()))]).unwrap();
        }
        // Generation 2 takes over; the first file, now redundant, becomes the spare for 3.
        w.switch_to(Spare::prepare(dir.path(), 2, SEG).unwrap())
            .unwrap();
        let (old, recyclable) = w
            .switch_to(Spare::recycle(dir.path(), 1, 3).unwrap())
            .unwrap();
        assert_eq!((old, recyclable), (2, true));
        // The stale generation-1 records are still in the file, after a shorter new one.
        w.append(&[(b"new".to_vec(), Some(b"v".to_vec()))]).unwrap();
        drop(w);
        let (w, seen) = replay(dir.path());
        assert_eq!(seen, vec![vec![(b"new".to_vec(), Some(b"v".to_vec()))]]);
        assert_eq!(w.generation(), 4);
    }
}
