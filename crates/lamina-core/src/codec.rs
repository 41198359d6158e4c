//! `Encode`/`Decode`: the pair every persistent structure implements. All integers are
//! little-endian; variable-length integers are LEB128 (7 bits a byte, high bit = more), at
//! most 10 bytes for a `u64`.
//!
//! Decoders never panic on bad input: any malformed byte string yields a [`DecodeError`]
//! naming the offset within the buffer, which the caller turns into [`Error::Corruption`]
//! with the file and the buffer's position in it ([`DecodeError::at`]).

use std::path::Path;

use crate::Error;

/// A structure with a byte encoding.
pub trait Encode {
    /// Exact number of bytes [`Encode::encode_to`] appends.
    fn encoded_len(&self) -> usize;
    /// Appends the encoding to `out`.
    fn encode_to(&self, out: &mut Vec<u8>);
    /// The encoding as a new vector.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_to(&mut out);
        debug_assert_eq!(out.len(), self.encoded_len(), "encoded_len disagrees with encode_to");
        out
    }
}

/// A structure that can be read back from its encoding.
pub trait Decode: Sized {
    /// Decodes exactly `input`; trailing bytes are an error unless the format allows them.
    fn decode(input: &[u8]) -> Result<Self, DecodeError>;
}

/// Malformed input: where in the buffer and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {reason}")]
pub struct DecodeError {
    /// Offset within the decoded buffer.
    pub offset: usize,
    /// What was wrong.
    pub reason: String,
}

impl DecodeError {
    /// A decode error at `offset`.
    pub fn new(offset: usize, reason: impl Into<String>) -> Self {
        DecodeError { offset, reason: reason.into() }
    }

    /// The [`Error::Corruption`] for this error in `file`, whose buffer started at
    /// `buffer_offset` within the file.
    pub fn at(self, file: &Path, buffer_offset: u64) -> Error {
        Error::corruption(file, buffer_offset + self.offset as u64, self.reason)
    }
}

/// Longest LEB128 encoding of a `u64`.
pub const VARINT_BYTES_MAX: usize = 10;

/// Appends `value` as LEB128.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Bytes [`put_varint`] uses for `value`.
pub fn varint_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends a varint length followed by the bytes.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A bounds-checked cursor over an encoded buffer.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Current offset.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// An error at the current offset.
    pub fn error(&self, reason: impl Into<String>) -> DecodeError {
        DecodeError::new(self.pos, reason)
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.error(format!("need {n} bytes, {} left", self.remaining())));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let bytes = self.bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A LEB128 `u64`; overlong or overflowing encodings are errors.
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..VARINT_BYTES_MAX {
            let byte = self.u8()?;
            let payload = u64::from(byte & 0x7f);
            if i == VARINT_BYTES_MAX - 1 && payload > 1 {
                return Err(DecodeError::new(start, "varint overflows u64"));
            }
            value |= payload << (7 * i);
            if byte & 0x80 == 0 {
                // A zero last byte after the first adds nothing: an overlong encoding. Refusing
                // it makes every value's encoding unique (the one `put_varint` writes).
                if i > 0 && byte == 0 {
                    return Err(DecodeError::new(start, "overlong varint"));
                }
                return Ok(value);
            }
        }
        Err(DecodeError::new(start, "varint longer than 10 bytes"))
    }

    /// A varint length, checked against `max`, followed by that many bytes.
    pub fn bytes_with_len(&mut self, max: usize) -> Result<&'a [u8], DecodeError> {
        let at = self.pos;
        let len = self.varint()?;
        if len > max as u64 {
            return Err(DecodeError::new(at, format!("length {len} over the limit of {max}")));
        }
        self.bytes(len as usize)
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return Err(self.error(format!("{} trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn varint_roundtrips(value: u64) {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            prop_assert_eq!(out.len(), varint_len(value));
            let mut reader = Reader::new(&out);
            prop_assert_eq!(reader.varint().unwrap(), value);
            reader.finish().unwrap();
        }

        #[test]
        fn reader_never_panics_on_garbage(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut reader = Reader::new(&bytes);
            while reader.varint().is_ok() {}
            let mut reader = Reader::new(&bytes);
            let _ = reader.bytes_with_len(16);
        }
    }

    #[test]
    fn overlong_varint_is_refused() {
        let bytes = [0xffu8; 11];
        assert!(Reader::new(&bytes).varint().is_err());
        let mut max = Vec::new();
        put_varint(&mut max, u64::MAX);
        let mut bad = max.clone();
        *bad.last_mut().unwrap() = 0x02; // 2 << 63 overflows
        assert!(Reader::new(&bad).varint().is_err());
    }

    #[test]
    fn truncated_input_names_the_offset() {
        let mut reader = Reader::new(&[1, 2, 3]);
        reader.u16().unwrap();
        let err = reader.u32().unwrap_err();
        assert_eq!(err.offset, 2);
        let err = err.at(Path::new("x.log"), 4096);
        assert!(matches!(err, Error::Corruption { offset: 4098, .. }));
    }
}
