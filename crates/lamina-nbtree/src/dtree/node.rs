//! The payloads of d-tree nodes (`docs/format/nbtree-dtree.md`): a leaf holds entries, an
//! internal node holds children. Both are borrowed from the node's bytes when decoded, so a
//! lookup scans a leaf without copying it.
//!
//! Leaf entry: key length (varint, `1..=KEY_BYTES_MAX`), key, tag (varint: 0 for a delete,
//! `1 + value length` for a put, the length at most `VALUE_BYTES_MAX`), value.
//!
//! Internal child: first key of the child's subtree (varint length, `1..=KEY_BYTES_MAX`,
//! bytes), the child's first page (varint), its pages (varint, at least 1).

use lamina_core::codec::{DecodeError, Encode, Reader, put_bytes, put_varint, varint_len};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

/// Longest encoded leaf entry (largest key and value, their varints): a leaf holding one is
/// `NODE_HEADER_BYTES` longer and may span several pages.
pub const LEAF_ENTRY_BYTES_MAX: usize = 2 + KEY_BYTES_MAX + 2 + VALUE_BYTES_MAX;

/// An entry of a leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafEntry<'a> {
    /// The key.
    pub key: &'a [u8],
    /// `Some(value)` for a put, `None` for a delete.
    pub value: Option<&'a [u8]>,
}

impl Encode for LeafEntry<'_> {
    fn encoded_len(&self) -> usize {
        let tag = self.value.map_or(0, |v| v.len() as u64 + 1);
        varint_len(self.key.len() as u64)
            + self.key.len()
            + varint_len(tag)
            + self.value.map_or(0, <[u8]>::len)
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.key);
        match self.value {
            Some(v) => {
                put_varint(out, v.len() as u64 + 1);
                out.extend_from_slice(v);
            }
            None => put_varint(out, 0),
        }
    }
}

impl<'a> LeafEntry<'a> {
    /// Reads one entry.
    pub fn decode_from(r: &mut Reader<'a>) -> Result<LeafEntry<'a>, DecodeError> {
        // The empty key is a key (KEY_BYTES_MIN is 0).
        let key = r.bytes_with_len(KEY_BYTES_MAX)?;
        let at = r.position();
        let tag = r.varint()?;
        let value = match tag {
            0 => None,
            tag if tag - 1 <= VALUE_BYTES_MAX as u64 => Some(r.bytes(tag as usize - 1)?),
            tag => {
                return Err(DecodeError::new(at, format!("value of {} bytes", tag - 1)));
            }
        };
        Ok(LeafEntry { key, value })
    }
}

/// A child of an internal node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildRef<'a> {
    /// The first key of the child's subtree.
    pub first_key: &'a [u8],
    /// The child's first page.
    pub page: u64,
    /// The child's pages.
    pub pages: u64,
}

impl Encode for ChildRef<'_> {
    fn encoded_len(&self) -> usize {
        varint_len(self.first_key.len() as u64)
            + self.first_key.len()
            + varint_len(self.page)
            + varint_len(self.pages)
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.first_key);
        put_varint(out, self.page);
        put_varint(out, self.pages);
    }
}

impl<'a> ChildRef<'a> {
    /// Reads one child.
    pub fn decode_from(r: &mut Reader<'a>) -> Result<ChildRef<'a>, DecodeError> {
        // The first child's first key may be the empty key (the smallest key).
        let first_key = r.bytes_with_len(KEY_BYTES_MAX)?;
        let page = r.varint()?;
        let at = r.position();
        let pages = r.varint()?;
        if pages == 0 {
            return Err(DecodeError::new(at, "child of 0 pages"));
        }
        Ok(ChildRef { first_key, page, pages })
    }
}

/// The `count` records of a payload, decoded one at a time; after the last one, bytes left
/// over are an error. Errors are relative to the payload's start.
#[derive(Debug, Clone)]
pub struct Records<'a, T> {
    reader: Reader<'a>,
    left: u32,
    decode: fn(&mut Reader<'a>) -> Result<T, DecodeError>,
    failed: bool,
}

impl<'a, T> Records<'a, T> {
    fn new(
        payload: &'a [u8],
        count: u32,
        decode: fn(&mut Reader<'a>) -> Result<T, DecodeError>,
    ) -> Self {
        Records { reader: Reader::new(payload), left: count, decode, failed: false }
    }

    /// Offset of the next record in the payload.
    pub fn position(&self) -> usize {
        self.reader.position()
    }
}

/// The entries of a leaf's payload holding `entries` of them.
pub fn leaf_entries(payload: &[u8], entries: u32) -> Records<'_, LeafEntry<'_>> {
    Records::new(payload, entries, LeafEntry::decode_from)
}

/// The children of an internal node's payload holding `children` of them.
pub fn children(payload: &[u8], children: u32) -> Records<'_, ChildRef<'_>> {
    Records::new(payload, children, ChildRef::decode_from)
}

impl<T> Iterator for Records<'_, T> {
    type Item = Result<T, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.left == 0 {
            if self.reader.remaining() != 0 {
                self.failed = true;
                return Some(Err(self
                    .reader
                    .error(format!("{} bytes after the last record", self.reader.remaining()))));
            }
            return None;
        }
        self.left -= 1;
        let item = (self.decode)(&mut self.reader);
        self.failed = item.is_err();
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_largest_entry_has_the_documented_length() {
        let key = vec![1u8; KEY_BYTES_MAX];
        let value = vec![2u8; VALUE_BYTES_MAX];
        let e = LeafEntry { key: &key, value: Some(&value) };
        assert_eq!(e.encoded_len(), LEAF_ENTRY_BYTES_MAX);
        assert_eq!(e.encode().len(), LEAF_ENTRY_BYTES_MAX);
    }

    #[test]
    fn bad_records_are_refused() {
        // The empty key is a key (here a delete of it); value over the limit, child of 0
        // pages, trailing bytes are refused.
        let empty = leaf_entries(&[0, 0], 1).next().unwrap().unwrap();
        assert_eq!((empty.key, empty.value), (&b""[..], None));
        let mut big = vec![1, b'k'];
        put_varint(&mut big, VALUE_BYTES_MAX as u64 + 2);
        assert!(leaf_entries(&big, 1).next().unwrap().is_err());
        assert!(children(&[1, b'k', 3, 0], 1).next().unwrap().is_err());
        let mut it = leaf_entries(&[1, b'k', 0, 9], 1);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
        // Fewer bytes than records.
        assert!(leaf_entries(&[1, b'k', 0], 2).nth(1).unwrap().is_err());
    }

    proptest! {
        #[test]
        fn leaf_entries_roundtrip(
            entries in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 1..40),
                 proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300))),
                0..20,
            )
        ) {
            let mut payload = Vec::new();
            for (k, v) in &entries {
                let e = LeafEntry { key: k, value: v.as_deref() };
                let before = payload.len();
                e.encode_to(&mut payload);
                prop_assert_eq!(payload.len() - before, e.encoded_len());
            }
            let back: Vec<_> =
                leaf_entries(&payload, entries.len() as u32).collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(back.len(), entries.len());
            for (b, (k, v)) in back.iter().zip(&entries) {
                prop_assert_eq!(b.key, &k[..]);
                prop_assert_eq!(b.value, v.as_deref());
            }
        }

        #[test]
        fn children_roundtrip(
            kids in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 1..40), any::<u64>(), 1..u64::MAX),
                0..20,
            )
        ) {
            let mut payload = Vec::new();
            for (k, page, pages) in &kids {
                ChildRef { first_key: k, page: *page, pages: *pages }.encode_to(&mut payload);
            }
            let back: Vec<_> =
                children(&payload, kids.len() as u32).collect::<Result<_, _>>().unwrap();
            for (b, (k, page, pages)) in back.iter().zip(&kids) {
                prop_assert_eq!(*b, ChildRef { first_key: k, page: *page, pages: *pages });
            }
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), n in 0u32..50) {
            for item in leaf_entries(&bytes, n) {
                let _ = item;
            }
            for item in children(&bytes, n) {
                let _ = item;
            }
        }
    }
}
