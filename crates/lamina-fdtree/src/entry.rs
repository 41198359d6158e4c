//! Entries of an FD+tree level (paper section 2.1, Figure 3): data entries (insert or delete)
//! and fence entries pointing to a block of the next materialized level.
//!
//! Within a level, entries are sorted by key, and for one key by kind: fence, then delete,
//! then insert. A level holds at most one entry of each kind per key, which gives the four
//! cases of section 2.2 (none, insert, delete, delete followed by insert). The empty key is
//! the paper's dummy key `-infinity` (footnote 3): user keys are at least one byte long.

use std::cmp::Ordering;

use lamina_core::codec::{DecodeError, Reader, put_bytes, put_varint, varint_len};

/// Address of a disk block: the level file and the block's index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockPtr {
    /// Level file id.
    pub file: u32,
    /// Block index within the file.
    pub index: u32,
}

/// One entry of a level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Fence: every key in `[key, next fence's key)` of the next materialized level lives in
    /// block `ptr` (the property lookups rely on; see `verify`).
    Fence {
        /// Key (empty: `-infinity`).
        key: Vec<u8>,
        /// Block of the next materialized level.
        ptr: BlockPtr,
    },
    /// Delete entry: cancels one insert entry with the same key in a lower level.
    Delete {
        /// Key.
        key: Vec<u8>,
    },
    /// Insert entry: the key's value.
    Insert {
        /// Key.
        key: Vec<u8>,
        /// Value.
        value: Vec<u8>,
    },
}

pub(crate) const KIND_FENCE: u8 = 1;
pub(crate) const KIND_DELETE: u8 = 2;
pub(crate) const KIND_INSERT: u8 = 3;

/// Encoded size of a fence with a `key_len`-byte key.
pub fn fence_bytes(key_len: usize) -> usize {
    1 + varint_len(key_len as u64) + key_len + 8
}

/// Encoded size of a delete entry.
pub fn delete_bytes(key_len: usize) -> usize {
    1 + varint_len(key_len as u64) + key_len
}

/// Encoded size of an insert entry.
pub fn insert_bytes(key_len: usize, value_len: usize) -> usize {
    1 + varint_len(key_len as u64) + key_len + varint_len(value_len as u64) + value_len
}

impl Entry {
    /// The entry's key.
    pub fn key(&self) -> &[u8] {
        match self {
            Entry::Fence { key, .. } | Entry::Delete { key } | Entry::Insert { key, .. } => key,
        }
    }

    /// Order of kinds for equal keys: fence, delete, insert.
    pub fn rank(&self) -> u8 {
        match self {
            Entry::Fence { .. } => KIND_FENCE,
            Entry::Delete { .. } => KIND_DELETE,
            Entry::Insert { .. } => KIND_INSERT,
        }
    }

    /// Whether this is a data (insert or delete) entry.
    pub fn is_data(&self) -> bool {
        !matches!(self, Entry::Fence { .. })
    }

    /// Order within a level.
    pub fn order(&self, other: &Entry) -> Ordering {
        self.key().cmp(other.key()).then(self.rank().cmp(&other.rank()))
    }

    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        match self {
            Entry::Fence { key, .. } => fence_bytes(key.len()),
            Entry::Delete { key } => delete_bytes(key.len()),
            Entry::Insert { key, value } => insert_bytes(key.len(), value.len()),
        }
    }

    /// Appends the encoding: kind byte, key (varint length + bytes), then the fence's block
    /// pointer (file u32 LE, index u32 LE) or the insert's value (varint length + bytes).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(self.rank());
        put_bytes(out, self.key());
        match self {
            Entry::Fence { ptr, .. } => {
                out.extend_from_slice(&ptr.file.to_le_bytes());
                out.extend_from_slice(&ptr.index.to_le_bytes());
            }
            Entry::Delete { .. } => {}
            Entry::Insert { value, .. } => {
                put_varint(out, value.len() as u64);
                out.extend_from_slice(value);
            }
        }
    }

    /// Decodes one entry; keys and values are checked against the given maxima, and only
    /// fences may have the empty (`-infinity`) key.
    pub fn decode_from(
        reader: &mut Reader<'_>,
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> Result<Entry, DecodeError> {
        let at = reader.position();
        let kind = reader.u8()?;
        let key = reader.bytes_with_len(key_bytes_max)?.to_vec();
        let entry = match kind {
            KIND_FENCE => {
                let file = reader.u32()?;
                let index = reader.u32()?;
                Entry::Fence { key, ptr: BlockPtr { file, index } }
            }
            KIND_DELETE => Entry::Delete { key },
            KIND_INSERT => {
                let value = reader.bytes_with_len(value_bytes_max)?.to_vec();
                Entry::Insert { key, value }
            }
            other => return Err(DecodeError::new(at, format!("unknown entry kind {other}"))),
        };
        if entry.is_data() && entry.key().is_empty() {
            return Err(DecodeError::new(at, "data entry with the empty key"));
        }
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_encodings() {
        let entries = [
            Entry::Fence { key: vec![], ptr: BlockPtr { file: 3, index: 9 } },
            Entry::Fence { key: vec![7; 300], ptr: BlockPtr { file: 1, index: 2 } },
            Entry::Delete { key: b"k".to_vec() },
            Entry::Insert { key: vec![1; 1024], value: vec![2; 4096] },
            Entry::Insert { key: b"a".to_vec(), value: vec![] },
        ];
        for e in &entries {
            let mut out = Vec::new();
            e.encode_to(&mut out);
            assert_eq!(out.len(), e.encoded_len());
            let mut r = Reader::new(&out);
            assert_eq!(&Entry::decode_from(&mut r, 1024, 4096).unwrap(), e);
            r.finish().unwrap();
        }
    }

    #[test]
    fn bad_entries_are_refused() {
        let mut out = Vec::new();
        Entry::Insert { key: b"abc".to_vec(), value: vec![0; 10] }.encode_to(&mut out);
        assert!(Entry::decode_from(&mut Reader::new(&out), 2, 100).is_err());
        assert!(Entry::decode_from(&mut Reader::new(&out), 10, 5).is_err());
        out[0] = 9;
        assert!(Entry::decode_from(&mut Reader::new(&out), 10, 100).is_err());
        let mut out = Vec::new();
        Entry::Delete { key: vec![] }.encode_to(&mut out);
        assert!(Entry::decode_from(&mut Reader::new(&out), 10, 100).is_err());
    }

    #[test]
    fn kinds_order_fence_delete_insert() {
        let f = Entry::Fence { key: b"k".to_vec(), ptr: BlockPtr { file: 0, index: 0 } };
        let d = Entry::Delete { key: b"k".to_vec() };
        let i = Entry::Insert { key: b"k".to_vec(), value: vec![] };
        assert_eq!(f.order(&d), Ordering::Less);
        assert_eq!(d.order(&i), Ordering::Less);
        assert_eq!(i.order(&Entry::Delete { key: b"l".to_vec() }), Ordering::Less);
    }
}
