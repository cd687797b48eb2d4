//! Binary encodings of stored records, each guarded by a CRC32 so corruption is reported, not trusted.
//!
//! Data record:  crc32 | create_rev u64 | mod_rev u64 | value
//! Log record:   crc32 | unix_millis u64 | kind u8 | key_len u32 | key | current? | prev?
//!               where current/prev are: flag u8 (0 absent, 1 present) [create u64 | mod u64 | len u32 | bytes]
//! All integers are big-endian. The CRC covers everything after it.

use bytes::Bytes;

use crate::{Error, EventKind, KeyValue, Result, Revision};

/// A decoded data record: a key's current value and its revisions.
pub(crate) struct DataRecord {
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub value: Bytes,
}

pub(crate) fn encode_data(create: Revision, modified: Revision, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 16 + value.len());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&create.0.to_be_bytes());
    out.extend_from_slice(&modified.0.to_be_bytes());
    out.extend_from_slice(value);
    seal(out)
}

/// Decodes a data record, taking ownership of the buffer so the value is not copied.
pub(crate) fn decode_data(key: &str, raw: Vec<u8>) -> Result<DataRecord> {
    let body = unseal(&raw).map_err(|e| Error::Corrupt(format!("value of {key:?}: {e}")))?;
    let mut r = Reader {
        buf: body,
        what: key,
    };
    let create = r.u64()?;
    let modified = r.u64()?;
    let header = raw.len() - r.rest().len();
    Ok(DataRecord {
        create_revision: Revision(create),
        mod_revision: Revision(modified),
        value: Bytes::from(raw).slice(header..),
    })
}

/// One entry of the revision log: what a write at `revision` did to `key`.
///
/// Stored entries keep only the state before the write (`prev`): the state after it is the
/// next entry's `prev`, or the key's data record for its latest write, so storing it again
/// would double what every create writes. `current` is filled in when entries are read for a
/// watch (entries written by format 1 still carry it).
#[derive(Debug, Clone)]
pub(crate) struct LogRecord {
    pub revision: Revision,
    pub unix_millis: u64,
    pub kind: EventKind,
    pub key: String,
    pub current: Option<KeyValue>,
    pub prev: Option<KeyValue>,
}

pub(crate) fn encode_log(rec: &LogRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + rec.key.len() * 3);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&rec.unix_millis.to_be_bytes());
    out.push(match rec.kind {
        EventKind::Created => 0,
        EventKind::Modified => 1,
        EventKind::Deleted => 2,
    });
    out.extend_from_slice(&(rec.key.len() as u32).to_be_bytes());
    out.extend_from_slice(rec.key.as_bytes());
    for kv in [&None, &rec.prev] {
        match kv {
            None => out.push(0),
            Some(kv) => {
                out.push(1);
                out.extend_from_slice(&kv.create_revision.0.to_be_bytes());
                out.extend_from_slice(&kv.mod_revision.0.to_be_bytes());
                out.extend_from_slice(&(kv.value.len() as u32).to_be_bytes());
                out.extend_from_slice(&kv.value);
            }
        }
    }
    seal(out)
}

pub(crate) fn decode_log(revision: Revision, raw: &[u8]) -> Result<LogRecord> {
    let what = format!("log entry {revision}");
    let body = unseal(raw).map_err(|e| Error::Corrupt(format!("{what}: {e}")))?;
    let mut r = Reader {
        buf: body,
        what: &what,
    };
    let unix_millis = r.u64()?;
    let kind = match r.u8()? {
        0 => EventKind::Created,
        1 => EventKind::Modified,
        2 => EventKind::Deleted,
        k => return Err(Error::Corrupt(format!("{what}: unknown event kind {k}"))),
    };
    let key_len = r.u32()? as usize;
    let key = String::from_utf8(r.take(key_len)?.to_vec())
        .map_err(|_| Error::Corrupt(format!("{what}: key is not UTF-8")))?;
    let read_kv = |r: &mut Reader| -> Result<Option<KeyValue>> {
        if r.u8()? == 0 {
            return Ok(None);
        }
        let create = r.u64()?;
        let modified = r.u64()?;
        let len = r.u32()? as usize;
        Ok(Some(KeyValue {
            key: key.clone(),
            value: Bytes::copy_from_slice(r.take(len)?),
            create_revision: Revision(create),
            mod_revision: Revision(modified),
        }))
    };
    let current = read_kv(&mut r)?;
    let prev = read_kv(&mut r)?;
    Ok(LogRecord {
        revision,
        unix_millis,
        kind,
        key,
        current,
        prev,
    })
}

/// Writes the CRC of everything after the first four bytes into them.
fn seal(mut out: Vec<u8>) -> Vec<u8> {
    let crc = crc32fast::hash(&out[4..]);
    out[..4].copy_from_slice(&crc.to_be_bytes());
    out
}

fn unseal(raw: &[u8]) -> std::result::Result<&[u8], String> {
    if raw.len() < 4 {
        return Err(format!("record of {} bytes is truncated", raw.len()));
    }
    let (crc, body) = raw.split_at(4);
    let expected = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
    if crc32fast::hash(body) != expected {
        return Err("checksum mismatch".to_string());
    }
    Ok(body)
}

struct Reader<'a> {
    buf: &'a [u8],
    what: &'a str,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(Error::Corrupt(format!(
                "{}: record is truncated",
                self.what
            )));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn data_round_trip_and_corruption() {
        let raw = encode_data(Revision(3), Revision(9), b"hello");
        let rec = decode_data("/k", raw.clone()).unwrap();
        assert_eq!(
            (rec.create_revision, rec.mod_revision),
            (Revision(3), Revision(9))
        );
        assert_eq!(&rec.value[..], b"hello");
        let mut bad = raw.clone();
        bad[10] ^= 1;
        assert!(matches!(decode_data("/k", bad), Err(Error::Corrupt(_))));
        for cut in 0..raw.len() {
            assert!(
                decode_data("/k", raw[..cut].to_vec()).is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn log_round_trip_and_truncation() {
        let kv = |v: &'static [u8], c, m| KeyValue {
            key: "/a/b".into(),
            value: Bytes::from_static(v),
            create_revision: Revision(c),
            mod_revision: Revision(m),
        };
        let rec = LogRecord {
            revision: Revision(7),
            unix_millis: 42,
            kind: EventKind::Modified,
            key: "/a/b".into(),
            current: Some(kv(b"new", 2, 7)),
            prev: Some(kv(b"old", 2, 5)),
        };
        let raw = encode_log(&rec);
        let back = decode_log(Revision(7), &raw).unwrap();
        assert_eq!(back.key, "/a/b");
        assert_eq!(back.kind, EventKind::Modified);
        // The state after a write is not stored (see `LogRecord`).
        assert!(back.current.is_none());
        assert_eq!(back.prev.unwrap().mod_revision, Revision(5));
        for cut in 0..raw.len() {
            assert!(
                decode_log(Revision(7), &raw[..cut]).is_err(),
                "cut at {cut}"
            );
        }
    }
}
