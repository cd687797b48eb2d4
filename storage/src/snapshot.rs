//! Snapshots of the embedded store: one file holding every key at one revision, checksummed.
//!
//! File layout (integers big-endian):
//!
//! ```text
//! header   "K1SSNAP\0" | format u32 | revision u64
//! record   0x01 | key_len u32 | key | create_rev u64 | mod_rev u64 | value_len u32 | value
//! trailer  0x00 | record count u64 | SHA-256 of every byte before it
//! ```
//!
//! Records come in strictly increasing key order. A running server streams a snapshot (it holds
//! the lock on the data directory); `restore` builds a new store directory from a file,
//! checking the whole file before it creates anything and building in a temporary directory that
//! is renamed into place only when complete.

use std::fs::{self, File};
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures::Stream;
use ring::digest;

use crate::codec;
use crate::engine::BatchOp;
use crate::local::{META_COMPACTED, META_REVISION, data_key, open_disk_engine};
use crate::wal::sync_dir;
use crate::{BackendKind, Error, KeyValue, ListOptions, Result, Revision, Store};

const MAGIC: &[u8; 8] = b"K1SSNAP\0";
/// The snapshot format this build writes and reads.
pub const SNAPSHOT_FORMAT: u32 = 1;
const TAG_RECORD: u8 = 1;
const TAG_END: u8 = 0;
/// Keys read per page while saving; also records per engine batch while restoring.
const PAGE: usize = 500;
/// Bounds on what a record may claim, so a damaged length cannot ask for gigabytes.
const MAX_KEY: u32 = 64 * 1024;
const MAX_VALUE: u32 = 256 * 1024 * 1024;

/// What a snapshot file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The store revision the snapshot was taken at.
    pub revision: Revision,
    pub keys: u64,
    /// SHA-256 of the file's content (before the digest), lowercase hex.
    pub sha256: String,
}

/// Refuses a store that keeps its data elsewhere: etcd has its own snapshot tool.
pub fn check_supported(store: &dyn Store) -> Result<()> {
    match store.backend_kind() {
        BackendKind::Local => Ok(()),
        BackendKind::Etcd => Err(Error::Unsupported(
            "this server keeps its data in etcd (--etcd-servers): take snapshots with etcd's own \
             `etcdctl snapshot save FILE` and restore them with `etcdutl snapshot restore`"
                .into(),
        )),
    }
}

/// Streams a snapshot of every key of `store` at its newest revision, as file bytes.
///
/// The revision is fixed and the first page read before this returns, so an unsupported or
/// failing store is reported before any byte is sent. A failure later ends the stream with an
/// error; the receiver's check of the trailer then refuses the incomplete file.
pub async fn save_stream(
    store: Arc<dyn Store>,
) -> Result<impl Stream<Item = Result<Bytes>> + Send + 'static> {
    check_supported(store.as_ref())?;
    let revision = store.fresh_revision().await?;
    let first = store
        .list(
            "/",
            ListOptions {
                limit: PAGE,
                revision: Some(revision),
                ..Default::default()
            },
        )
        .await?;
    let mut encoder = Encoder::new();
    let header = encoder.header(revision);
    let state = SaveState {
        store,
        encoder,
        header: Some(header),
        page: Some(first.items),
        next: first.continue_token,
        done: false,
    };
    Ok(futures::stream::try_unfold(state, save_step))
}

struct SaveState {
    store: Arc<dyn Store>,
    encoder: Encoder,
    header: Option<Bytes>,
    /// A page read but not yet encoded.
    page: Option<Vec<KeyValue>>,
    next: Option<String>,
    done: bool,
}

async fn save_step(mut s: SaveState) -> Result<Option<(Bytes, SaveState)>> {
    if let Some(header) = s.header.take() {
        return Ok(Some((header, s)));
    }
    if s.done {
        return Ok(None);
    }
    let items = match s.page.take() {
        Some(items) => items,
        None => match s.next.take() {
            Some(token) => {
                let page = s
                    .store
                    .list(
                        "/",
                        ListOptions {
                            limit: PAGE,
                            continue_token: Some(token),
                            revision: None,
                        },
                    )
                    .await?;
                s.next = page.continue_token;
                page.items
            }
            None => {
                s.done = true;
                return Ok(Some((s.encoder.trailer(), s)));
            }
        },
    };
    let chunk = s.encoder.records(&items);
    Ok(Some((chunk, s)))
}

/// Writes the snapshot format, hashing as it goes.
struct Encoder {
    hash: digest::Context,
    count: u64,
}

impl Encoder {
    fn new() -> Self {
        Encoder {
            hash: digest::Context::new(&digest::SHA256),
            count: 0,
        }
    }

    fn header(&mut self, revision: Revision) -> Bytes {
        let mut out = BytesMut::with_capacity(20);
        out.put_slice(MAGIC);
        out.put_u32(SNAPSHOT_FORMAT);
        out.put_u64(revision.0);
        self.hash.update(&out);
        out.freeze()
    }

    fn records(&mut self, items: &[KeyValue]) -> Bytes {
        let size: usize = items
            .iter()
            .map(|kv| 29 + kv.key.len() + kv.value.len())
            .sum();
        let mut out = BytesMut::with_capacity(size);
        for kv in items {
            out.put_u8(TAG_RECORD);
            out.put_u32(kv.key.len() as u32);
            out.put_slice(kv.key.as_bytes());
            out.put_u64(kv.create_revision.0);
            out.put_u64(kv.mod_revision.0);
            out.put_u32(kv.value.len() as u32);
            out.put_slice(&kv.value);
        }
        self.count += items.len() as u64;
        self.hash.update(&out);
        out.freeze()
    }

    fn trailer(&mut self) -> Bytes {
        let mut out = BytesMut::with_capacity(41);
        out.put_u8(TAG_END);
        out.put_u64(self.count);
        self.hash.update(&out);
        out.put_slice(self.hash.clone().finish().as_ref());
        out.freeze()
    }
}

/// Reads a snapshot record by record, checking everything it can as it goes and the digest at
/// the end. Only once `next` has returned `Ok(None)` is the file known to be whole and intact.
pub struct SnapshotReader<R: Read> {
    inner: R,
    hash: digest::Context,
    revision: Revision,
    count: u64,
    last_key: Option<String>,
    finished: Option<String>,
}

impl SnapshotReader<BufReader<File>> {
    /// Opens a snapshot file and reads its header.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path)
            .map_err(|e| Error::Format(format!("cannot open {}: {e}", path.display())))?;
        SnapshotReader::new(BufReader::with_capacity(256 * 1024, file))
    }
}

impl<R: Read> SnapshotReader<R> {
    pub fn new(inner: R) -> Result<Self> {
        let mut r = SnapshotReader {
            inner,
            hash: digest::Context::new(&digest::SHA256),
            revision: Revision(0),
            count: 0,
            last_key: None,
            finished: None,
        };
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic).map_err(|_| {
            Error::Format("not a k1s snapshot: the file is shorter than its header".into())
        })?;
        if &magic != MAGIC {
            return Err(Error::Format(
                "not a k1s snapshot (the file does not start with the k1s snapshot header)".into(),
            ));
        }
        let format = r.u32()?;
        if format != SNAPSHOT_FORMAT {
            return Err(Error::Format(format!(
                "snapshot format {format} is not one this build reads (format {SNAPSHOT_FORMAT})"
            )));
        }
        r.revision = Revision(r.u64()?);
        Ok(r)
    }

    /// The revision the snapshot was taken at.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The next key, or `None` at the verified end of the file.
    pub fn next_record(&mut self) -> Result<Option<KeyValue>> {
        if self.finished.is_some() {
            return Ok(None);
        }
        match self.u8()? {
            TAG_RECORD => self.record().map(Some),
            TAG_END => {
                self.end()?;
                Ok(None)
            }
            other => Err(Error::Corrupt(format!(
                "snapshot damaged: unknown record tag {other} after {} records",
                self.count
            ))),
        }
    }

    /// Reads the rest of the file; its summary if whole and intact.
    pub fn verify_to_end(mut self) -> Result<SnapshotInfo> {
        while self.next_record()?.is_some() {}
        self.info()
    }

    fn info(&self) -> Result<SnapshotInfo> {
        match &self.finished {
            Some(sha256) => Ok(SnapshotInfo {
                revision: self.revision,
                keys: self.count,
                sha256: sha256.clone(),
            }),
            None => Err(Error::Corrupt("snapshot not read to its end".into())),
        }
    }

    fn record(&mut self) -> Result<KeyValue> {
        let key_len = self.u32()?;
        if key_len == 0 || key_len > MAX_KEY {
            return Err(self.damaged(format!("a key length of {key_len}")));
        }
        let key = String::from_utf8(self.bytes(key_len)?)
            .map_err(|_| self.damaged("a key that is not UTF-8".into()))?;
        if !key.starts_with('/') || self.last_key.as_ref().is_some_and(|last| *last >= key) {
            return Err(self.damaged(format!("key {key:?} out of place")));
        }
        let create = Revision(self.u64()?);
        let modified = Revision(self.u64()?);
        if create.0 == 0 || create > modified || modified > self.revision {
            return Err(self.damaged(format!(
                "key {key:?} with revisions {create}/{modified} (snapshot revision {})",
                self.revision
            )));
        }
        let value_len = self.u32()?;
        if value_len > MAX_VALUE {
            return Err(self.damaged(format!("a value length of {value_len}")));
        }
        let value = Bytes::from(self.bytes(value_len)?);
        self.count += 1;
        self.last_key = Some(key.clone());
        Ok(KeyValue {
            key,
            value,
            create_revision: create,
            mod_revision: modified,
        })
    }

    fn end(&mut self) -> Result<()> {
        let count = self.u64()?;
        let computed = self.hash.clone().finish();
        let mut stored = [0u8; 32];
        self.inner
            .read_exact(&mut stored)
            .map_err(|e| truncated_or(e, self.count))?;
        if stored != computed.as_ref() {
            return Err(Error::Corrupt(
                "snapshot checksum mismatch: the file is damaged".into(),
            ));
        }
        if count != self.count {
            return Err(self.damaged(format!(
                "a trailer counting {count} records, but {} were read",
                self.count
            )));
        }
        let mut extra = [0u8; 1];
        if self.inner.read(&mut extra)? != 0 {
            return Err(Error::Corrupt(
                "snapshot damaged: bytes follow its checksum".into(),
            ));
        }
        self.finished = Some(hex(stored.as_ref()));
        Ok(())
    }

    fn damaged(&self, what: String) -> Error {
        Error::Corrupt(format!(
            "snapshot damaged: {what} after {} records",
            self.count
        ))
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        self.inner
            .read_exact(buf)
            .map_err(|e| truncated_or(e, self.count))?;
        self.hash.update(buf);
        Ok(())
    }

    fn bytes(&mut self, len: u32) -> Result<Vec<u8>> {
        let mut buf = vec![0; len as usize];
        self.read_exact(&mut buf)?;
        Ok(buf)
    }

    fn u8(&mut self) -> Result<u8> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b)?;
        Ok(b[0])
    }

    fn u32(&mut self) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b)?;
        Ok(u32::from_be_bytes(b))
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b)?;
        Ok(u64::from_be_bytes(b))
    }
}

fn truncated_or(e: std::io::Error, records: u64) -> Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        Error::Corrupt(format!(
            "snapshot truncated: the file ends after {records} records, before its checksum"
        ))
    } else {
        Error::Engine(format!("reading the snapshot: {e}"))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a snapshot file from end to end.
pub fn verify(path: &Path) -> Result<SnapshotInfo> {
    SnapshotReader::open(path)?.verify_to_end()
}

/// Builds `data_dir/store` from a snapshot, with every key at its snapshot revisions and the
/// store's revision at the snapshot's (later writes get higher ones; history before it is gone).
///
/// A damaged or foreign file, or a data directory that already holds a store, is refused before
/// anything is created. The store is built in `data_dir/.store.restoring` and renamed into place
/// only when complete and durable.
pub fn restore(file: &Path, data_dir: &Path) -> Result<SnapshotInfo> {
    let target = data_dir.join("store");
    let non_empty = match fs::read_dir(&target) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e.into()),
    };
    if non_empty {
        return Err(Error::Format(format!(
            "{} already holds a store; restore into a new data directory",
            target.display()
        )));
    }
    let info = verify(file)?;
    let staging = data_dir.join(".store.restoring");
    // Left over from an interrupted restore: only restore ever writes there.
    if staging.exists() {
        fs::remove_dir_all(&staging)?;
    }
    fs::create_dir_all(data_dir)?;
    match build(file, &staging, &info) {
        Ok(()) => {
            if target.exists() {
                fs::remove_dir(&target)?;
            }
            fs::rename(&staging, &target)?;
            sync_dir(data_dir)?;
            Ok(info)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

fn build(file: &Path, dir: &Path, info: &SnapshotInfo) -> Result<()> {
    let defaults = crate::StoreConfig::new(crate::Backend::Disk(dir.to_path_buf()));
    let engine = open_disk_engine(dir, &defaults)?;
    let mut reader = SnapshotReader::open(file)?;
    let mut batch: Vec<BatchOp> = Vec::with_capacity(PAGE);
    while let Some(kv) = reader.next_record()? {
        let record = codec::encode_data(kv.create_revision, kv.mod_revision, &kv.value);
        batch.push((data_key(kv.key.as_bytes()), Some(record)));
        if batch.len() == PAGE {
            engine.commit(std::mem::take(&mut batch))?;
        }
    }
    // The file was read a second time: it must still be the one verified.
    if reader.info()? != *info {
        return Err(Error::Corrupt(
            "the snapshot file changed while it was restored".into(),
        ));
    }
    let revision = info.revision.0.to_be_bytes().to_vec();
    batch.push((META_REVISION.to_vec(), Some(revision.clone())));
    batch.push((META_COMPACTED.to_vec(), Some(revision)));
    engine.commit(batch)?;
    engine.close()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "snapshot_tests.rs"]
mod tests;
