//! Entries of an FD+tree level (paper section 2.1, Figure 3): data entries (insert or delete)
//! and fence entries pointing to a block of the next materialized level.
//!
//! Within a level entries are sorted by key, and for one key the fence (if any) comes before
//! the data entry. A level holds at most one data entry per key: puts are blind (an insert
//! entry shadows every older entry of its key, Remark A.1's "no lookup on insert"), so the
//! paper's case 4 (a delete followed by an insert in one level) never arises; a lookup
//! stops at the first level with a data entry for its key (cases 2 and 3).
//!
//! A fence with the empty key is the paper's dummy fence at `-infinity` (footnote 3): the
//! empty key sorts before every other key, so "keys at or after the empty key" is every key,
//! and the empty key can also be a user key (a data entry), ordered after its fence like any
//! key. (Until November 2026 user keys were at least one byte long; stores written then
//! hold the empty key only in fences, which read the same.)
//!
//! Encoding (`docs/format/fdtree-block.md`): kind (u8), key (varint length, bytes), then
//! - fence: the block pointer, file (u32 LE) and block index (u32 LE);
//! - delete: `cancelled_len` (varint), the encoded size of the insert entry the delete was
//!   issued to cancel (0 if unknown), which keeps the live-size estimate of merge-prepare an
//!   upper bound (eq. 1, `i = h - 1`);
//! - insert: the value (varint length, bytes).

use std::cmp::Ordering;

use lamina_core::codec::{DecodeError, Reader, put_bytes, put_varint, varint_len};

/// Address of a disk block: the level file and the block's index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct BlockPtr {
    /// Level file id.
    pub file: u32,
    /// Block index within the file.
    pub index: u32,
}

pub(crate) const KIND_FENCE: u8 = 1;
pub(crate) const KIND_DELETE: u8 = 2;
pub(crate) const KIND_INSERT: u8 = 3;

/// Encoded size of a fence with a `key_len`-byte key.
pub fn fence_bytes(key_len: usize) -> usize {
    1 + varint_len(key_len as u64) + key_len + 8
}

/// Encoded size of a delete entry (`cancelled_len` as given).
pub fn delete_bytes(key_len: usize, cancelled_len: u32) -> usize {
    1 + varint_len(key_len as u64) + key_len + varint_len(u64::from(cancelled_len))
}

/// Largest encoded size of a delete entry with a `key_len`-byte key.
pub fn delete_bytes_max(key_len: usize) -> usize {
    delete_bytes(key_len, u32::MAX)
}

/// Encoded size of an insert entry.
pub fn insert_bytes(key_len: usize, value_len: usize) -> usize {
    1 + varint_len(key_len as u64) + key_len + varint_len(value_len as u64) + value_len
}

/// One entry of a level, borrowing its key and value (from a block being read, or from
/// the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryRef<'a> {
    /// Fence: every key in `[key, next fence's key)` of the next materialized level lives in
    /// block `ptr` or after it (section 2.1).
    Fence {
        /// Key (empty: `-infinity`, the start of the key space).
        key: &'a [u8],
        /// Block of the next materialized level.
        ptr: BlockPtr,
    },
    /// Delete entry: the key is absent (it shadows every older entry of the key).
    Delete {
        /// Key.
        key: &'a [u8],
        /// Encoded size of the insert entry the delete cancelled when issued (0: unknown).
        cancelled_len: u32,
    },
    /// Insert entry: the key's value.
    Insert {
        /// Key.
        key: &'a [u8],
        /// Value.
        value: &'a [u8],
    },
}

impl<'a> EntryRef<'a> {
    /// The entry's key.
    pub fn key(&self) -> &'a [u8] {
        match *self {
            EntryRef::Fence { key, .. }
            | EntryRef::Delete { key, .. }
            | EntryRef::Insert { key, .. } => key,
        }
    }

    /// The kind byte; also the order of kinds for one key (fence first).
    pub fn kind(&self) -> u8 {
        match self {
            EntryRef::Fence { .. } => KIND_FENCE,
            EntryRef::Delete { .. } => KIND_DELETE,
            EntryRef::Insert { .. } => KIND_INSERT,
        }
    }

    /// Whether this is a data (insert or delete) entry.
    pub fn is_data(&self) -> bool {
        !matches!(self, EntryRef::Fence { .. })
    }

    /// Order within a level: by key, then fence before data.
    pub fn order(&self, other: &EntryRef<'_>) -> Ordering {
        self.key().cmp(other.key()).then(u8::from(self.is_data()).cmp(&u8::from(other.is_data())))
    }

    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        match *self {
            EntryRef::Fence { key, .. } => fence_bytes(key.len()),
            EntryRef::Delete { key, cancelled_len } => delete_bytes(key.len(), cancelled_len),
            EntryRef::Insert { key, value } => insert_bytes(key.len(), value.len()),
        }
    }

    /// Appends the encoding (module documentation).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(self.kind());
        put_bytes(out, self.key());
        match *self {
            EntryRef::Fence { ptr, .. } => {
                out.extend_from_slice(&ptr.file.to_le_bytes());
                out.extend_from_slice(&ptr.index.to_le_bytes());
            }
            EntryRef::Delete { cancelled_len, .. } => put_varint(out, u64::from(cancelled_len)),
            EntryRef::Insert { value, .. } => {
                put_varint(out, value.len() as u64);
                out.extend_from_slice(value);
            }
        }
    }

    /// Decodes one entry; keys and values are checked against the given maxima. Any entry,
    /// fence or data, may have the empty key (the smallest key, `-infinity` on a fence).
    pub fn decode_from(
        reader: &mut Reader<'a>,
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> Result<EntryRef<'a>, DecodeError> {
        let at = reader.position();
        let kind = reader.u8()?;
        let key = reader.bytes_with_len(key_bytes_max)?;
        let entry = match kind {
            KIND_FENCE => {
                let file = reader.u32()?;
                let index = reader.u32()?;
                EntryRef::Fence { key, ptr: BlockPtr { file, index } }
            }
            KIND_DELETE => {
                let cancelled = reader.varint()?;
                let cancelled_len = u32::try_from(cancelled)
                    .map_err(|_| DecodeError::new(at, "delete entry's cancelled length"))?;
                EntryRef::Delete { key, cancelled_len }
            }
            KIND_INSERT => EntryRef::Insert { key, value: reader.bytes_with_len(value_bytes_max)? },
            other => return Err(DecodeError::new(at, format!("unknown entry kind {other}"))),
        };
        Ok(entry)
    }

    /// An owned copy.
    pub fn to_owned_entry(&self) -> Entry {
        match *self {
            EntryRef::Fence { key, ptr } => Entry::Fence { key: key.to_vec(), ptr },
            EntryRef::Delete { key, cancelled_len } => {
                Entry::Delete { key: key.to_vec(), cancelled_len }
            }
            EntryRef::Insert { key, value } => {
                Entry::Insert { key: key.to_vec(), value: value.to_vec() }
            }
        }
    }
}

/// One entry of a level, owned (tests, progress records, `L_0` fences).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// See [`EntryRef::Fence`].
    Fence {
        /// Key (empty: `-infinity`, the start of the key space).
        key: Vec<u8>,
        /// Block of the next materialized level.
        ptr: BlockPtr,
    },
    /// See [`EntryRef::Delete`].
    Delete {
        /// Key.
        key: Vec<u8>,
        /// Encoded size of the insert entry it cancelled when issued (0: unknown).
        cancelled_len: u32,
    },
    /// See [`EntryRef::Insert`].
    Insert {
        /// Key.
        key: Vec<u8>,
        /// Value.
        value: Vec<u8>,
    },
}

impl Entry {
    /// The borrowed form.
    pub fn as_ref(&self) -> EntryRef<'_> {
        match self {
            Entry::Fence { key, ptr } => EntryRef::Fence { key, ptr: *ptr },
            Entry::Delete { key, cancelled_len } => {
                EntryRef::Delete { key, cancelled_len: *cancelled_len }
            }
            Entry::Insert { key, value } => EntryRef::Insert { key, value },
        }
    }

    /// The entry's key.
    pub fn key(&self) -> &[u8] {
        self.as_ref().key()
    }

    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        self.as_ref().encoded_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Entry> {
        vec![
            Entry::Fence { key: vec![], ptr: BlockPtr { file: 3, index: 9 } },
            Entry::Fence { key: vec![7; 300], ptr: BlockPtr { file: 1, index: 2 } },
            Entry::Delete { key: b"k".to_vec(), cancelled_len: 0 },
            Entry::Delete { key: b"k".to_vec(), cancelled_len: u32::MAX },
            Entry::Insert { key: vec![1; 1024], value: vec![2; 4096] },
            Entry::Insert { key: b"a".to_vec(), value: vec![] },
        ]
    }

    #[test]
    fn sizes_match_encodings_and_roundtrip() {
        for e in &samples() {
            let mut out = Vec::new();
            e.as_ref().encode_to(&mut out);
            assert_eq!(out.len(), e.encoded_len());
            let mut r = Reader::new(&out);
            assert_eq!(EntryRef::decode_from(&mut r, 1024, 4096).unwrap().to_owned_entry(), *e);
            r.finish().unwrap();
        }
        assert_eq!(delete_bytes_max(5), 1 + 1 + 5 + 5);
    }

    #[test]
    fn bad_entries_are_refused() {
        let mut out = Vec::new();
        EntryRef::Insert { key: b"abc", value: &[0; 10] }.encode_to(&mut out);
        assert!(EntryRef::decode_from(&mut Reader::new(&out), 2, 100).is_err());
        assert!(EntryRef::decode_from(&mut Reader::new(&out), 10, 5).is_err());
        for len in 0..out.len() {
            assert!(EntryRef::decode_from(&mut Reader::new(&out[..len]), 10, 100).is_err());
        }
        out[0] = 9;
        assert!(EntryRef::decode_from(&mut Reader::new(&out), 10, 100).is_err());
        // The empty key is a key (a user key, since November 2026), on data entries too.
        let mut out = Vec::new();
        EntryRef::Delete { key: b"", cancelled_len: 0 }.encode_to(&mut out);
        assert!(EntryRef::decode_from(&mut Reader::new(&out), 10, 100).is_ok());
        // A cancelled length beyond u32.
        let mut out = vec![KIND_DELETE, 1, b'k'];
        put_varint(&mut out, u64::from(u32::MAX) + 1);
        assert!(EntryRef::decode_from(&mut Reader::new(&out), 10, 100).is_err());
    }

    #[test]
    fn order_is_key_then_fence_first() {
        let f = EntryRef::Fence { key: b"k", ptr: BlockPtr::default() };
        let d = EntryRef::Delete { key: b"k", cancelled_len: 0 };
        let i = EntryRef::Insert { key: b"k", value: b"" };
        assert_eq!(f.order(&d), Ordering::Less);
        assert_eq!(f.order(&i), Ordering::Less);
        assert_eq!(d.order(&i), Ordering::Equal);
        assert_eq!(i.order(&EntryRef::Delete { key: b"l", cancelled_len: 0 }), Ordering::Less);
    }
}
