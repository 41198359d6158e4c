//! A buffer entry: one pending update of a subtree (section 2.1: "the new entry for insert or
//! delete is simply appended to the buffer"), with the sequence number (the paper's timestamp)
//! that orders updates of the same key. Layout in `docs/format/latree-buffer.md`.
//!
//! Invariants: the key is `0..=KEY_BYTES_MAX` bytes (the empty key is a key) and a value at most
//! `VALUE_BYTES_MAX` bytes (`lamina_core::limits`); constructors and the decoder refuse
//! anything else, so every entry in memory or on flash is within the limits.

use std::cmp::Ordering;

use lamina_core::Result;
use lamina_core::codec::{
    Decode, DecodeError, Encode, Reader, VARINT_BYTES_MAX, put_bytes, put_varint, varint_len,
};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX, check_key, check_value};

/// Fewest bytes an encoded entry takes: the empty key's length, the tag and the sequence
/// (the empty key is a key; it was 4, a 1-byte key, before it was accepted).
pub const ENTRY_BYTES_MIN: usize = 3;
/// Most bytes an encoded entry takes: the key and value at their limits with their 2-byte
/// varint lengths, and a 10-byte sequence number (5134 bytes).
pub const ENTRY_BYTES_MAX: usize = 2 + KEY_BYTES_MAX + 2 + VALUE_BYTES_MAX + VARINT_BYTES_MAX;

/// What an entry does to its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BufferOp {
    /// Insert or overwrite with this value.
    Put(Vec<u8>),
    /// Delete the key.
    Delete,
}

/// One pending update: key, operation, sequence number (unique per update in a tree, larger
/// is newer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferEntry {
    key: Vec<u8>,
    op: BufferOp,
    seq: u64,
}

impl BufferEntry {
    /// A put; refuses keys and values outside the limits.
    pub fn put(key: &[u8], value: &[u8], seq: u64) -> Result<Self> {
        check_key(key)?;
        check_value(value)?;
        Ok(BufferEntry { key: key.to_vec(), op: BufferOp::Put(value.to_vec()), seq })
    }

    /// A delete; refuses keys outside the limits.
    pub fn delete(key: &[u8], seq: u64) -> Result<Self> {
        check_key(key)?;
        Ok(BufferEntry { key: key.to_vec(), op: BufferOp::Delete, seq })
    }

    /// The key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The operation.
    pub fn op(&self) -> &BufferOp {
        &self.op
    }

    /// The sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The order of sorted buffers (section 2.3): by key, then by sequence number (older
    /// first), so a merge applies the updates of a key in the order they were made.
    pub fn cmp_key_seq(&self, other: &BufferEntry) -> Ordering {
        self.key.cmp(&other.key).then(self.seq.cmp(&other.seq))
    }

    /// The tag byte(s) value: 0 for a delete, `1 + len` for a put.
    fn tag(&self) -> u64 {
        match &self.op {
            BufferOp::Delete => 0,
            BufferOp::Put(value) => 1 + value.len() as u64,
        }
    }

    /// Decodes one entry at the reader's position (entries are self-delimiting).
    pub fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let key = r.bytes_with_len(KEY_BYTES_MAX)?; // the empty key is a key
        let tag_at = r.position();
        let tag = r.varint()?;
        let op = if tag == 0 {
            BufferOp::Delete
        } else {
            let len = tag - 1;
            if len > VALUE_BYTES_MAX as u64 {
                return Err(DecodeError::new(
                    tag_at,
                    format!("value of {len} bytes over the limit of {VALUE_BYTES_MAX}"),
                ));
            }
            BufferOp::Put(r.bytes(len as usize)?.to_vec())
        };
        let seq = r.varint()?;
        Ok(BufferEntry { key: key.to_vec(), op, seq })
    }
}

impl Encode for BufferEntry {
    fn encoded_len(&self) -> usize {
        let value_len = match &self.op {
            BufferOp::Delete => 0,
            BufferOp::Put(value) => value.len(),
        };
        varint_len(self.key.len() as u64)
            + self.key.len()
            + varint_len(self.tag())
            + value_len
            + varint_len(self.seq)
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        put_bytes(out, &self.key);
        put_varint(out, self.tag());
        if let BufferOp::Put(value) = &self.op {
            out.extend_from_slice(value);
        }
        put_varint(out, self.seq);
    }
}

impl Decode for BufferEntry {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let entry = BufferEntry::decode_from(&mut r)?;
        r.finish()?;
        Ok(entry)
    }
}

/// Strategies for property tests of this module and its users.
#[cfg(test)]
pub(crate) mod strategies {
    use proptest::prelude::*;

    use super::BufferEntry;

    /// Entries with keys of up to `key_bytes_max` bytes and values of up to `value_bytes_max`
    /// (short keys repeat), puts or deletes, any sequence number.
    pub fn entry(
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> impl Strategy<Value = BufferEntry> {
        (
            proptest::collection::vec(any::<u8>(), 1..=key_bytes_max),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..=value_bytes_max)),
            any::<u64>(),
        )
            .prop_map(|(key, value, seq)| match value {
                Some(value) => BufferEntry::put(&key, &value, seq).unwrap(),
                None => BufferEntry::delete(&key, seq).unwrap(),
            })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn limits_are_enforced_and_reach_the_bounds() {
        let big = BufferEntry::put(&[7; KEY_BYTES_MAX], &[9; VALUE_BYTES_MAX], u64::MAX).unwrap();
        assert_eq!(big.encoded_len(), ENTRY_BYTES_MAX);
        let small = BufferEntry::delete(&[], 0).unwrap();
        assert_eq!(small.encoded_len(), ENTRY_BYTES_MIN);
        assert_eq!(BufferEntry::decode(&small.encode()).unwrap(), small);
        assert!(BufferEntry::put(&[], b"v", 1).is_ok(), "the empty key is a key");
        assert!(BufferEntry::put(&[1; KEY_BYTES_MAX + 1], b"", 1).is_err());
        assert!(BufferEntry::put(b"k", &[0; VALUE_BYTES_MAX + 1], 1).is_err());
    }

    #[test]
    fn decoder_refuses_out_of_limit_fields() {
        // The empty key is a key (a delete of it, sequence 0); a truncated entry is not.
        assert!(BufferEntry::decode(&[0, 0, 0]).is_ok());
        assert!(BufferEntry::decode(&[0, 0]).is_err());
        // Value length 4097 (tag 4098).
        let mut bad = vec![1, b'k'];
        put_varint(&mut bad, VALUE_BYTES_MAX as u64 + 2);
        bad.extend_from_slice(&[0; VALUE_BYTES_MAX + 1]);
        bad.push(0);
        assert!(BufferEntry::decode(&bad).unwrap_err().reason.contains("over the limit"));
        // Trailing byte.
        let mut good = BufferEntry::delete(b"k", 3).unwrap().encode();
        good.push(0);
        assert!(BufferEntry::decode(&good).is_err());
    }

    #[test]
    fn order_is_key_then_seq() {
        let a1 = BufferEntry::delete(b"a", 1).unwrap();
        let a2 = BufferEntry::put(b"a", b"x", 2).unwrap();
        let b0 = BufferEntry::delete(b"b", 0).unwrap();
        assert_eq!(a1.cmp_key_seq(&a2), Ordering::Less);
        assert_eq!(a2.cmp_key_seq(&b0), Ordering::Less);
        assert_eq!(b0.cmp_key_seq(&b0), Ordering::Equal);
    }

    proptest! {
        #[test]
        fn entries_roundtrip(entry in strategies::entry(KEY_BYTES_MAX, VALUE_BYTES_MAX)) {
            let bytes = entry.encode();
            prop_assert_eq!(bytes.len(), entry.encoded_len());
            prop_assert!(bytes.len() <= ENTRY_BYTES_MAX);
            prop_assert_eq!(BufferEntry::decode(&bytes).unwrap(), entry);
        }

        #[test]
        fn decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = BufferEntry::decode(&bytes);
        }
    }
}
