//! A buffer fragment: a run of consecutive entries of one buffer written together, with a back
//! pointer to the same buffer's previous fragment (section 4.3: "fragments belonging to the
//! same buffer are reverse linked to enable traversal"). Several fragments share a page
//! ([`super::page`]). Layout in `docs/format/latree-buffer.md`.
//!
//! Invariants: at least one entry and at most [`FRAGMENT_ENTRIES_MAX`]; entries are in append
//! order (oldest first); the back pointer, when present, names an earlier page than the one
//! holding this fragment (checked by the page decoder), so following links always ends.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader};

use super::entry::BufferEntry;

/// Bytes of a fragment header: buffer id (u64), previous fragment's page (u64, [`NO_PAGE`] for
/// none), previous fragment's slot (u16), entries (u16), body bytes (u32).
pub const FRAGMENT_HEADER_BYTES: usize = 24;
/// The previous-page value of a buffer's first (oldest) fragment.
pub const NO_PAGE: u64 = u64::MAX;
/// Most entries in one fragment (the u16 count; a 64 KiB page holds at most 16 378
/// four-byte entries anyway).
pub const FRAGMENT_ENTRIES_MAX: usize = u16::MAX as usize;

/// The id the tree gives a buffer (one per buffer-attached node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufferId(pub u64);

/// Where a fragment is: the first page of the page unit holding it, and its index there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FragmentAddr {
    /// First page of the unit (byte offset `page * page_bytes` in the store's file).
    pub page: u64,
    /// Index of the fragment among the unit's fragments.
    pub slot: u16,
}

/// One fragment, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// The buffer the entries belong to.
    pub buffer: BufferId,
    /// The same buffer's previous (older) fragment; `None` for its first.
    pub prev: Option<FragmentAddr>,
    /// The entries, oldest first.
    pub entries: Vec<BufferEntry>,
}

impl Fragment {
    /// Bytes of the entries (the fragment's body).
    pub fn body_bytes(&self) -> usize {
        self.entries.iter().map(Encode::encoded_len).sum()
    }
}

impl Encode for Fragment {
    fn encoded_len(&self) -> usize {
        FRAGMENT_HEADER_BYTES + self.body_bytes()
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        assert!(
            (1..=FRAGMENT_ENTRIES_MAX).contains(&self.entries.len()),
            "a fragment holds 1..={FRAGMENT_ENTRIES_MAX} entries, not {}",
            self.entries.len()
        );
        let body_bytes = u32::try_from(self.body_bytes()).expect("a fragment fits a page unit");
        let (prev_page, prev_slot) = match self.prev {
            Some(addr) => (addr.page, addr.slot),
            None => (NO_PAGE, 0),
        };
        out.extend_from_slice(&self.buffer.0.to_le_bytes());
        out.extend_from_slice(&prev_page.to_le_bytes());
        out.extend_from_slice(&prev_slot.to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u16).to_le_bytes());
        out.extend_from_slice(&body_bytes.to_le_bytes());
        for entry in &self.entries {
            entry.encode_to(out);
        }
    }
}

impl Fragment {
    /// Decodes one fragment at the reader's position (fragments are self-delimiting).
    pub fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let at = r.position();
        let buffer = BufferId(r.u64()?);
        let prev_page = r.u64()?;
        let prev_slot = r.u16()?;
        let prev = if prev_page == NO_PAGE {
            if prev_slot != 0 {
                return Err(DecodeError::new(at + 16, "slot given without a previous page"));
            }
            None
        } else {
            Some(FragmentAddr { page: prev_page, slot: prev_slot })
        };
        let count = usize::from(r.u16()?);
        if count == 0 {
            return Err(DecodeError::new(at + 18, "fragment without entries"));
        }
        let body_bytes = r.u32()? as usize;
        let body_at = r.position();
        let body = r.bytes(body_bytes)?;
        let mut body_reader = Reader::new(body);
        let mut entries = Vec::with_capacity(count.min(body_bytes));
        for _ in 0..count {
            let entry = BufferEntry::decode_from(&mut body_reader)
                .map_err(|e| DecodeError::new(body_at + e.offset, e.reason))?;
            entries.push(entry);
        }
        if body_reader.remaining() != 0 {
            return Err(DecodeError::new(
                body_at + body_reader.position(),
                format!("{} bytes after the fragment's {count} entries", body_reader.remaining()),
            ));
        }
        Ok(Fragment { buffer, prev, entries })
    }
}

impl Decode for Fragment {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let fragment = Fragment::decode_from(&mut r)?;
        r.finish()?;
        Ok(fragment)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::entry::strategies;
    use super::*;

    fn fragment_strategy() -> impl Strategy<Value = Fragment> {
        (
            any::<u64>(),
            proptest::option::of((0..NO_PAGE, any::<u16>())),
            proptest::collection::vec(strategies::entry(8, 40), 1..20),
        )
            .prop_map(|(buffer, prev, entries)| Fragment {
                buffer: BufferId(buffer),
                prev: prev.map(|(page, slot)| FragmentAddr { page, slot }),
                entries,
            })
    }

    proptest! {
        #[test]
        fn fragments_roundtrip(fragment in fragment_strategy()) {
            let bytes = fragment.encode();
            prop_assert_eq!(bytes.len(), fragment.encoded_len());
            prop_assert_eq!(Fragment::decode(&bytes).unwrap(), fragment);
        }
    }

    #[test]
    fn counts_must_match_the_body() {
        let fragment = Fragment {
            buffer: BufferId(3),
            prev: None,
            entries: vec![BufferEntry::delete(b"a", 1).unwrap(); 2],
        };
        let good = fragment.encode();
        let mut fewer = good.clone();
        fewer[18] = 1; // one entry announced, two in the body
        assert!(Fragment::decode(&fewer).unwrap_err().reason.contains("after the fragment"));
        let mut none = good.clone();
        none[18] = 0;
        assert!(Fragment::decode(&none).is_err());
        let mut slot = good;
        slot[16] = 1; // a slot without a previous page
        assert!(Fragment::decode(&slot).is_err());
    }
}
