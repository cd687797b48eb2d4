//! The image engine (store format 4): every key in memory, durable through the write-ahead log
//! and image files.
//!
//! A commit appends its batch to the write-ahead log (one page write and one `fdatasync`) and
//! applies it to an in-memory ordered map; nothing else is written per commit. An image is
//! written only to drop what the disk holds in vain: once the newest image and the log since
//! hold `IMAGE_RATIO` + 1 times what the store holds now (so at least `IMAGE_RATIO` times it is
//! overwritten or deleted data), the checkpoint thread switches the log to a spare at half a
//! file and writes an image of the map as it was at the switch (`image/<generation>.image`:
//! written to a temporary file, synced, renamed); the older log files become spares. Otherwise
//! it switches only when the file is nearly full. An image of generation G holds every batch of
//! the log files before G. So a write costs its log pages and at most 1/`IMAGE_RATIO` of them
//! again, however many keys the store holds, and a growing store writes no image at all (only
//! its new log files, zero-filled once). sled rewrote whole leaves of up to 16 objects for small
//! writes, several kilobytes each, which wears out flash cards (issue 17). The price is memory:
//! the whole store is in RAM, as etcd keeps its own in memory and page cache.
//!
//! Opening reads the newest image, deletes the log files it covers and replays the rest over it
//! (writing a new image if there were any); closing writes a final image and deletes the log,
//! so a clean restart replays nothing.
//!
//! Image file, integers big-endian:
//!
//! ```text
//! "K1SIMAGE" | format u32 | generation u64 | key count u64
//! per key, in key order: key len u32 | key | value len u32 | value
//! CRC32 of every byte before it, u32
//! ```

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::engine::{self, BatchOp, Engine, Map, MemoryEngine};
use crate::format::{self, Format};
use crate::log_files::{Checkpoint, Checkpointer, LogFiles, late_switch_bytes};
use crate::sled_engine::SledEngine;
use crate::wal::{self, Wal, sync_dir};
use crate::{Error, Result};

const IMAGE_MAGIC: &[u8; 8] = b"K1SIMAGE";
const IMAGE_FORMAT: u32 = 1;
const IMAGE_DIR: &str = "image";
/// An image's bytes besides its keys: magic, format, generation, key count, checksum.
const IMAGE_OVERHEAD: u64 = 8 + 4 + 8 + 8 + 4;
/// An image's bytes per key besides the key and value: their lengths.
const KEY_OVERHEAD: u64 = 4 + 4;
/// A new image is written once the newest one and the log since hold this many times the
/// store's size in data that is overwritten or deleted: images then add at most half again to
/// what the log writes, and the disk holds at most this plus one times the store (and spares).
const IMAGE_RATIO: u64 = 2;

pub(crate) struct ImageEngine {
    inner: Arc<Inner>,
    checkpointer: Checkpointer,
}

struct Inner {
    state: MemoryEngine,
    log: LogFiles,
    image_dir: PathBuf,
    images: Mutex<Images>,
    /// The store's lock, held while this file is open.
    _lock: File,
}

/// What the checkpoints know of the images.
struct Images {
    /// The size of the newest image file.
    bytes: u64,
    /// The size on disk of the log files switched away from since it was written (a file
    /// not yet full, such as the one a store starts with, counts whole: it is kept whole).
    logged: u64,
    /// Those files that may become spares once an image covers them.
    recyclable: Vec<u64>,
}

impl Images {
    /// Whether an image is due with `more` bytes of log in the current file, for a store whose
    /// image would take `store` bytes now.
    fn due(&self, more: u64, store: u64) -> bool {
        self.bytes + self.logged + more >= (IMAGE_RATIO + 1).saturating_mul(store)
    }
}

impl ImageEngine {
    /// Opens (or creates) the store in `dir`. A foreign or newer directory is refused untouched.
    pub(crate) fn open(dir: &Path, wal_file_bytes: u64) -> Result<Self> {
        format::check_or_create(dir, Format::Image)?;
        let lock = format::lock(dir)?;
        // Before the log writes a compressed record, older builds must see a newer format.
        format::mark(dir, Format::Image)?;
        // Left by an upgrade from a sled store that was cut short after the marker changed.
        let sled_dir = dir.join("sled");
        if sled_dir.exists() {
            fs::remove_dir_all(&sled_dir)?;
        }
        let image_dir = dir.join(IMAGE_DIR);
        fs::create_dir_all(&image_dir)?;
        sync_dir(dir)?;
        let (generation, mut map, bytes) = match newest_image(&image_dir)? {
            Some(g) => {
                let (map, bytes) = read_image(&image_path(&image_dir, g), g)?;
                (g, map, bytes)
            }
            None => (1, Map::new(), 0),
        };
        remove_other_images(&image_dir, generation)?;
        let wal_dir = dir.join("wal");
        // A crash after an image was written may have left the log files it covers.
        wal::delete_before(&wal_dir, generation)?;
        let wal_file_bytes = wal::segment_size(wal_file_bytes);
        let mut replayed = 0usize;
        let wal = Wal::open(&wal_dir, wal_file_bytes, generation, |batch| {
            replayed += 1;
            engine::apply(&mut map, batch);
            Ok(())
        })?
        .with_compression();
        let inner = Arc::new(Inner {
            state: MemoryEngine::with(map),
            log: LogFiles::new(wal, wal_file_bytes),
            image_dir,
            images: Mutex::new(Images {
                bytes,
                logged: 0,
                recyclable: Vec::new(),
            }),
            _lock: lock,
        });
        if replayed > 0 {
            // What was replayed is in an image before the replayed files go.
            let at = inner.log.wal()?.generation();
            let bytes = inner.write_image(at, &inner.state.copy()?)?;
            inner.images()?.bytes = bytes;
            wal::delete_before(inner.log.dir(), at)?;
        }
        let checkpointer = Checkpointer::start(inner.clone())?;
        Ok(ImageEngine {
            inner,
            checkpointer,
        })
    }
}

impl Inner {
    fn images(&self) -> Result<MutexGuard<'_, Images>> {
        self.images
            .lock()
            .map_err(|_| Error::Engine("image state lock poisoned".into()))
    }

    /// The size an image of the store would have now.
    fn store_image_bytes(&self) -> Result<u64> {
        let (keys, bytes) = self.state.stored()?;
        Ok(IMAGE_OVERHEAD + keys * KEY_OVERHEAD + bytes)
    }

    /// Writes `map` as the image of `generation`, then deletes the older images. Returns its size.
    fn write_image(&self, generation: u64, map: &Map) -> Result<u64> {
        let bytes = write_image_file(&self.image_dir, generation, map)?;
        remove_other_images(&self.image_dir, generation)?;
        Ok(bytes)
    }
}

impl Checkpoint for Inner {
    fn log(&self) -> &LogFiles {
        &self.log
    }

    /// At half a file when an image would be due, else when the file is nearly full.
    fn switch_due(&self, len: u64, segment_bytes: u64) -> Result<bool> {
        if len >= late_switch_bytes(segment_bytes) {
            return Ok(true);
        }
        Ok(len >= segment_bytes / 2 && self.images()?.due(len, self.store_image_bytes()?))
    }

    /// Switches the log to a spare; writes an image when one is due, and only then lets the
    /// older files go.
    fn checkpoint(&self) -> Result<()> {
        let mut spares = self.log.spares()?;
        let mut images = self.images()?;
        // Between images the log may span several files; they all become spares after the
        // image, so a store of steady size zero-fills no new log file (an image at every switch
        // instead would cost the whole store per half file of log).
        let Some((switched, copy)) =
            self.log
                .switch(&mut spares, |s| match self.store_image_bytes() {
                    Ok(store) => images.due(s.old_size, store).then(|| self.state.copy()),
                    Err(e) => Some(Err(e)),
                })?
        else {
            return Ok(());
        };
        images.logged += switched.old_size;
        if switched.recyclable {
            images.recyclable.push(switched.old);
        }
        let Some(copy) = copy else {
            return Ok(());
        };
        images.bytes = self.write_image(switched.generation, &copy?)?;
        images.logged = 0;
        let recyclable = std::mem::take(&mut images.recyclable);
        self.log
            .retire_before(&mut spares, switched.generation, &recyclable)
    }
}

impl Engine for ImageEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.state.get(key)
    }

    fn scan(&self, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.state.scan(start, end, limit)
    }

    fn count(&self, start: &[u8], end: &[u8]) -> Result<u64> {
        self.inner.state.count(start, end)
    }

    fn commit(&self, batch: Vec<BatchOp>) -> Result<()> {
        let state = &self.inner.state;
        if self.inner.log.commit(batch, |batch| state.commit(batch))? {
            self.checkpointer.nudge();
        }
        Ok(())
    }

    fn close(&self) -> Result<()> {
        // No checkpoint runs meanwhile, and no commit.
        let _spares = self.inner.log.spares()?;
        let mut wal = self.inner.log.wal()?;
        if wal.is_closed() {
            return Ok(());
        }
        let bytes = self
            .inner
            .write_image(wal.generation() + 1, &self.inner.state.copy()?)?;
        self.inner.images()?.bytes = bytes;
        wal.close()
    }

    fn size_bytes(&self) -> Result<u64> {
        Ok(self.inner.images()?.bytes + self.inner.log.size_bytes()?)
    }
}

/// Converts a sled store (formats 1 and 2) in `dir` to the image engine, in place: the image
/// is written first, then the marker changes, then sled's files go. Cut short before the marker
/// changed, the store is still the sled store it was; after, the image engine removes sled's
/// leftovers when it opens.
pub(crate) fn convert_sled_store(
    dir: &Path,
    cache_capacity: u64,
    wal_file_bytes: u64,
) -> Result<()> {
    if format::existing(dir)? != Some(Format::Sled) {
        return Err(Error::Format(format!(
            "there is no sled store to convert at {}",
            dir.display()
        )));
    }
    let map = {
        let sled = SledEngine::open(dir, cache_capacity, wal_file_bytes, false)?;
        let mut map = Map::new();
        for (k, v) in sled.scan(&[], &[0xff], usize::MAX)? {
            map.insert(k, v.into());
        }
        sled.close()?;
        map
    };
    let image_dir = dir.join(IMAGE_DIR);
    fs::create_dir_all(&image_dir)?;
    // Generation 1: the sled store's log is gone after its close.
    write_image_file(&image_dir, 1, &map)?;
    remove_other_images(&image_dir, 1)?;
    format::mark(dir, Format::Image)?;
    fs::remove_dir_all(dir.join("sled"))?;
    sync_dir(dir)
}

fn image_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation:020}.image"))
}

/// The generation of the newest image in `dir`.
fn newest_image(dir: &Path) -> Result<Option<u64>> {
    let mut newest = None;
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        if let Some(g) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".image"))
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<u64>().ok())
        {
            newest = newest.max(Some(g));
        }
    }
    Ok(newest)
}

/// Deletes every file in the image directory but the image of `keep` (older images and
/// unfinished temporary files).
fn remove_other_images(dir: &Path, keep: u64) -> Result<()> {
    let keep = image_path(dir, keep);
    let mut any = false;
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path != keep {
            fs::remove_file(&path)?;
            any = true;
        }
    }
    if any {
        sync_dir(dir)?;
    }
    Ok(())
}

/// A writer that keeps a CRC32 of what passes through it.
struct Checksummed<W> {
    inner: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the image file of `generation` whole and durably; returns its size.
fn write_image_file(dir: &Path, generation: u64, map: &Map) -> Result<u64> {
    let tmp = dir.join(format!("{generation:020}.image.tmp"));
    let file = File::create(&tmp)?;
    let mut out = BufWriter::with_capacity(
        1 << 16,
        Checksummed {
            inner: file,
            crc: crc32fast::Hasher::new(),
            bytes: 0,
        },
    );
    out.write_all(IMAGE_MAGIC)?;
    out.write_all(&IMAGE_FORMAT.to_be_bytes())?;
    out.write_all(&generation.to_be_bytes())?;
    out.write_all(&(map.len() as u64).to_be_bytes())?;
    for (k, v) in map {
        out.write_all(&(k.len() as u32).to_be_bytes())?;
        out.write_all(k)?;
        out.write_all(&(v.len() as u32).to_be_bytes())?;
        out.write_all(v)?;
    }
    let mut sum = out.into_inner().map_err(|e| Error::from(e.into_error()))?;
    let crc = sum.crc.clone().finalize();
    sum.inner.write_all(&crc.to_be_bytes())?;
    sum.inner.sync_all()?;
    // The image is read again only when the store opens: its pages need not stay cached.
    let _ = rustix::fs::fadvise(&sum.inner, 0, None, rustix::fs::Advice::DontNeed);
    fs::rename(&tmp, image_path(dir, generation))?;
    sync_dir(dir)?;
    Ok(sum.bytes + 4)
}

/// Reads and checks a whole image file; returns its keys and its size. Any damage is an
/// error: the log files it covers are gone, so nothing could stand in for it.
fn read_image(path: &Path, generation: u64) -> Result<(Map, u64)> {
    let data = fs::read(path)?;
    let corrupt = |what: &str| Error::Corrupt(format!("image {}: {what}", path.display()));
    let (body, crc) = data
        .split_last_chunk::<4>()
        .ok_or_else(|| corrupt("too short"))?;
    if crc32fast::hash(body) != u32::from_be_bytes(*crc) {
        return Err(corrupt("checksum mismatch"));
    }
    let mut r = body;
    let mut take = |n: usize| -> Result<&[u8]> {
        let (head, rest) = r.split_at_checked(n).ok_or_else(|| corrupt("truncated"))?;
        r = rest;
        Ok(head)
    };
    let be_u32 = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap_or_default()) as usize;
    let be_u64 = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
    if take(8)? != IMAGE_MAGIC {
        return Err(corrupt("not an image file"));
    }
    let format = be_u32(take(4)?);
    if format != IMAGE_FORMAT as usize {
        return Err(corrupt(&format!("unknown image format {format}")));
    }
    if be_u64(take(8)?) != generation {
        return Err(corrupt("generation differs from its name"));
    }
    let count = be_u64(take(8)?);
    let mut map = Map::new();
    for _ in 0..count {
        let klen = be_u32(take(4)?);
        let key = take(klen)?.to_vec();
        let vlen = be_u32(take(4)?);
        let value: Arc<[u8]> = take(vlen)?.into();
        map.insert(key, value);
    }
    if !r.is_empty() || map.len() as u64 != count {
        return Err(corrupt("bad key count"));
    }
    Ok((map, data.len() as u64))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn map_of(pairs: &[(&str, &str)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), Arc::from(v.as_bytes())))
            .collect()
    }

    #[test]
    fn an_image_reads_back_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let map = map_of(&[("a", "1"), ("b", ""), ("c", "three")]);
        let bytes = write_image_file(dir.path(), 7, &map).unwrap();
        let path = image_path(dir.path(), 7);
        let (read, size) = read_image(&path, 7).unwrap();
        assert_eq!((read, size), (map, bytes));
        assert!(read_image(&path, 8).is_err(), "generation checked");
        let data = fs::read(&path).unwrap();
        for cut in [0, 3, 10, data.len() - 1] {
            fs::write(&path, &data[..cut]).unwrap();
            assert!(
                matches!(read_image(&path, 7), Err(Error::Corrupt(_))),
                "{cut}"
            );
        }
        let mut flipped = data.clone();
        flipped[30] ^= 1;
        fs::write(&path, &flipped).unwrap();
        assert!(matches!(read_image(&path, 7), Err(Error::Corrupt(_))));
    }

    #[test]
    fn garbage_with_a_valid_checksum_never_panics() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.image");
        let with_crc = |mut body: Vec<u8>| {
            let crc = crc32fast::hash(&body);
            body.extend_from_slice(&crc.to_be_bytes());
            body
        };
        let mut header = IMAGE_MAGIC.to_vec();
        header.extend_from_slice(&IMAGE_FORMAT.to_be_bytes());
        header.extend_from_slice(&1u64.to_be_bytes());
        for tail in [
            u64::MAX.to_be_bytes().to_vec(),
            [1u64.to_be_bytes().to_vec(), vec![0xff; 4]].concat(),
            [0u64.to_be_bytes().to_vec(), vec![1]].concat(),
        ] {
            fs::write(&path, with_crc([header.clone(), tail].concat())).unwrap();
            assert!(matches!(read_image(&path, 1), Err(Error::Corrupt(_))));
        }
    }

    #[test]
    fn writes_survive_reopening_with_and_without_a_clean_close() {
        let dir = tempfile::tempdir().unwrap();
        let put = |e: &ImageEngine, k: &str, v: &str| {
            e.commit(vec![(k.as_bytes().to_vec(), Some(v.as_bytes().to_vec()))])
                .unwrap();
        };
        {
            let e = ImageEngine::open(dir.path(), wal::MIN_SEGMENT_BYTES).unwrap();
            put(&e, "a", "1");
            put(&e, "b", "2");
            e.commit(vec![(b"a".to_vec(), None)]).unwrap();
            // Dropped without close: as after kill -9, the log has it all.
        }
        {
            let e = ImageEngine::open(dir.path(), wal::MIN_SEGMENT_BYTES).unwrap();
            assert_eq!(e.get(b"a").unwrap(), None);
            assert_eq!(e.get(b"b").unwrap(), Some(b"2".to_vec()));
            // Enough to switch log files several times (a growing store writes no image).
            for i in 0..400 {
                put(&e, &format!("k{i:04}"), &"x".repeat(300));
            }
            e.close().unwrap();
            assert!(e.commit(vec![(b"z".to_vec(), None)]).is_err());
        }
        let e = ImageEngine::open(dir.path(), wal::MIN_SEGMENT_BYTES).unwrap();
        assert_eq!(e.count(b"k", b"l").unwrap(), 400);
        assert_eq!(e.get(b"b").unwrap(), Some(b"2".to_vec()));
        // A clean close left one image and no log to replay.
        assert_eq!(fs::read_dir(dir.path().join(IMAGE_DIR)).unwrap().count(), 1);
    }

    /// Polls `what` for up to 20 seconds: the checkpoint thread works on its own time.
    fn eventually(what: impl Fn() -> bool) -> bool {
        for _ in 0..2000 {
            if what() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn a_growing_store_writes_no_image_and_overwrites_bring_one() {
        let dir = tempfile::tempdir().unwrap();
        let e = ImageEngine::open(dir.path(), wal::MIN_SEGMENT_BYTES).unwrap();
        let files = |sub: &str, suffix: &str| {
            fs::read_dir(dir.path().join(sub))
                .unwrap()
                .filter(|f| {
                    f.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .ends_with(suffix)
                })
                .count()
        };
        let put = |k: String| {
            e.commit(vec![(k.into_bytes(), Some(vec![b'x'; 300]))])
                .unwrap();
        };
        let newest = || newest_image(&dir.path().join(IMAGE_DIR)).unwrap();
        // The file a store starts with is not zero-filled: the store leaves it for a zero-filled
        // spare soon, and as it is empty, an image of it costs next to nothing.
        assert!(
            eventually(|| newest() == Some(2) && files("wal", ".spare") == 1),
            "the first switch"
        );
        // About five log files of creates.
        for i in 0..1000 {
            put(format!("k{i:04}"));
        }
        assert!(eventually(|| files("wal", ".log") >= 4), "the log switched");
        assert_eq!(newest(), Some(2), "growth costs no image");
        // Overwrites: once the disk holds three times the store, an image is written and the
        // log files it covers go.
        for round in 0..5 {
            for i in 0..1000 {
                put(format!("k{i:04}"));
            }
            if round == 0 {
                assert_eq!(newest(), Some(2), "twice the store is not yet due");
            }
        }
        assert!(eventually(|| newest() > Some(2)), "an image");
        // Six times the store was written; the disk holds at most three times it, and the
        // file being written.
        let on_disk = || {
            let mut total = 0;
            for sub in [IMAGE_DIR, "wal"] {
                for f in fs::read_dir(dir.path().join(sub)).unwrap() {
                    let f = f.unwrap();
                    if !f.file_name().to_string_lossy().ends_with(".spare") {
                        total += f.metadata().unwrap().len();
                    }
                }
            }
            total
        };
        let bound = 3 * e.inner.store_image_bytes().unwrap() + 2 * wal::MIN_SEGMENT_BYTES;
        assert!(eventually(|| on_disk() <= bound), "{} > {bound}", on_disk());
        assert_eq!(e.count(b"k", b"l").unwrap(), 1000);
    }

    #[test]
    fn a_second_open_of_the_same_store_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _first = ImageEngine::open(dir.path(), wal::MIN_SEGMENT_BYTES).unwrap();
        let err = ImageEngine::open(dir.path(), wal::MIN_SEGMENT_BYTES)
            .err()
            .unwrap();
        assert!(err.to_string().contains("in use"), "{err}");
        assert!(format::store_in_use(dir.path()).unwrap());
    }
}
