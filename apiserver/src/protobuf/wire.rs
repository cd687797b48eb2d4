//! The protobuf wire format: varints, field keys, length-delimited reads and writes.

use super::ProtobufError;

/// Wire type of a varint field (int32, int64, bool, enum).
pub(crate) const VARINT: u8 = 0;
/// Wire type of a 64-bit little-endian field (double).
pub(crate) const FIXED64: u8 = 1;
/// Wire type of a length-delimited field (string, bytes, message, packed repeated).
pub(crate) const LEN: u8 = 2;
/// Wire type of a 32-bit little-endian field (float; unused by Kubernetes, skipped).
pub(crate) const FIXED32: u8 = 5;

/// One field as it sits on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    /// A 32-bit value (its bytes are skipped: no Kubernetes field has this wire type).
    Fixed32,
}

impl Value<'_> {
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => VARINT,
            Value::Fixed64(_) => FIXED64,
            Value::Len(_) => LEN,
            Value::Fixed32 => FIXED32,
        }
    }
}

/// Reads the fields of one message, in wire order.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Reads a base-128 varint (at most 10 bytes).
    pub(crate) fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let byte = *self.buf.get(self.pos).ok_or(ProtobufError::Truncated)?;
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err(ProtobufError::Malformed("varint overflows 64 bits".into()));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::Malformed(
            "varint longer than 10 bytes".into(),
        ))
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Reads a little-endian 64-bit value (a packed double).
    pub(crate) fn fixed64(&mut self) -> Result<u64, ProtobufError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        let end = self.pos.checked_add(n).ok_or(ProtobufError::Truncated)?;
        let slice = self
            .buf
            .get(self.pos..end)
            .ok_or(ProtobufError::Truncated)?;
        self.pos = end;
        Ok(slice)
    }

    /// The next field as (field number, value), or `None` at the end of the message.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>, ProtobufError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let tag = key >> 3;
        if tag == 0 || tag > u64::from(u32::MAX >> 3) {
            return Err(ProtobufError::Malformed(format!(
                "invalid field number {tag}"
            )));
        }
        let tag = tag as u32;
        let value = match (key & 7) as u8 {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => Value::Fixed64(self.fixed64()?),
            LEN => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| ProtobufError::Truncated)?;
                Value::Len(self.take(len)?)
            }
            FIXED32 => {
                self.take(4)?;
                Value::Fixed32
            }
            other => {
                return Err(ProtobufError::Malformed(format!(
                    "field {tag} has unsupported wire type {other}"
                )));
            }
        };
        Ok(Some((tag, value)))
    }
}

/// Appends a varint.
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Bytes a varint of `v` takes.
pub(crate) fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends a field key.
pub(crate) fn put_key(buf: &mut Vec<u8>, tag: u32, wire_type: u8) {
    put_varint(buf, (u64::from(tag) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(buf: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(buf, tag, LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Appends a varint field.
pub(crate) fn put_varint_field(buf: &mut Vec<u8>, tag: u32, v: u64) {
    put_key(buf, tag, VARINT);
    put_varint(buf, v);
}

/// Starts a length-delimited field whose length is not known yet; finish with [`end_len`].
pub(crate) fn begin_len(buf: &mut Vec<u8>, tag: u32) -> usize {
    put_key(buf, tag, LEN);
    buf.push(0);
    buf.len()
}

/// Writes the length of the field started at `start` (the value [`begin_len`] returned), moving
/// the content when the length needs more than the one byte reserved for it.
pub(crate) fn end_len(buf: &mut Vec<u8>, start: usize) {
    let len = buf.len() - start;
    let n = varint_len(len as u64);
    if n > 1 {
        let extra = n - 1;
        buf.splice(start..start, std::iter::repeat_n(0u8, extra));
    }
    let mut v = len as u64;
    let mut i = start - 1;
    while v >= 0x80 {
        buf[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    buf[i] = v as u8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_lengths() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v), "{v}");
            assert_eq!(Reader::new(&buf).varint().ok(), Some(v));
        }
        // A negative int32 is sign-extended to ten bytes, as Go's encoder does.
        let mut buf = Vec::new();
        put_varint(&mut buf, -1i32 as i64 as u64);
        assert_eq!(buf.len(), 10);
    }

    #[test]
    fn length_placeholder_grows_for_long_content() {
        for len in [0usize, 1, 127, 128, 200, 20_000] {
            let mut buf = vec![0xaa];
            let start = begin_len(&mut buf, 3);
            buf.extend(std::iter::repeat_n(7u8, len));
            end_len(&mut buf, start);
            let mut r = Reader::new(&buf[1..]);
            match r.next_field() {
                Ok(Some((3, Value::Len(b)))) => assert_eq!(b.len(), len),
                other => panic!("{other:?}"),
            }
            assert!(matches!(r.next_field(), Ok(None)));
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Reader::new(&[0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        assert!(Reader::new(&[0x0a, 0x05, 1]).next_field().is_err());
        assert!(Reader::new(&[0x00, 0x01]).next_field().is_err());
        assert!(Reader::new(&[0x0b]).next_field().is_err());
        assert!(Reader::new(&[0x09, 1, 2]).next_field().is_err());
    }
}
