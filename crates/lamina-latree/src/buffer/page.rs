//! The byte layout of a buffer page unit (`docs/format/latree-buffer.md`): a page holding
//! fragments of one or more buffers ("several packed per page", section 4.3), sealed by a
//! checksum so that a damaged page is a `Corruption` error, never silently wrong entries.
//!
//! A unit is normally one page. A single entry too large for one page (keys and values go up
//! to 5134 encoded bytes, pages down to 512) gets a unit of several consecutive pages by
//! itself; the unit is addressed by its first page and its length follows from `used_bytes`.
//!
//! Invariants of a unit: 1..=[`PAGE_FRAGMENTS_MAX`] fragments, at most one per buffer; every
//! back pointer names an earlier page; `used_bytes` is the header plus the fragments exactly;
//! the bytes after them, to the end of the unit's last page, are zero.

use std::collections::BTreeSet;

use lamina_core::checksum::{crc32c, mask};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};
use lamina_core::{Error, Result};

use super::entry::{ENTRY_BYTES_MAX, ENTRY_BYTES_MIN};
use super::fragment::{FRAGMENT_HEADER_BYTES, Fragment};

/// Bytes of the page header: masked CRC32C (u32), magic (u32), format version (u16),
/// fragments (u16), used bytes (u32), the unit's own first page (u64).
pub const PAGE_HEADER_BYTES: usize = 24;
/// First byte the checksum covers (everything after the CRC field, up to `used_bytes`).
const PAGE_CRC_START: usize = 4;
/// Page magic, `"LABP"` (u32 LE): LA-tree buffer page.
pub const PAGE_MAGIC: u32 = u32::from_le_bytes(*b"LABP");
/// Version of the buffer page format.
pub const PAGE_FORMAT_VERSION: u16 = 1;
/// Smallest page size (the `nand-toshiba` profile's 512-byte pages).
pub const PAGE_BYTES_MIN: u32 = 512;
/// Largest page size.
pub const PAGE_BYTES_MAX: u32 = 64 << 10;
/// Most fragments in one unit (the u16 count; a 64 KiB page holds at most 2340 fragments of
/// one smallest entry).
pub const PAGE_FRAGMENTS_MAX: usize = u16::MAX as usize;
/// Room for fragments in a one-page unit of `page_bytes`.
pub fn page_room_bytes(page_bytes: u32) -> usize {
    page_bytes as usize - PAGE_HEADER_BYTES
}

/// Most pages of one unit with `page_bytes` pages: a unit of one fragment of one largest
/// entry (11 pages of 512 bytes, 2 of 4096, 1 of 8192 and more).
pub fn unit_pages_max(page_bytes: u32) -> u64 {
    unit_pages(PAGE_HEADER_BYTES + FRAGMENT_HEADER_BYTES + ENTRY_BYTES_MAX, page_bytes)
}

/// Pages of a unit of `used_bytes`.
pub fn unit_pages(used_bytes: usize, page_bytes: u32) -> u64 {
    (used_bytes as u64).div_ceil(u64::from(page_bytes)).max(1)
}

/// Refuses page sizes that are not a power of two in `PAGE_BYTES_MIN..=PAGE_BYTES_MAX`.
pub fn check_page_bytes(page_bytes: u32) -> Result<()> {
    if !page_bytes.is_power_of_two() || !(PAGE_BYTES_MIN..=PAGE_BYTES_MAX).contains(&page_bytes) {
        return Err(Error::option(
            "page_bytes",
            format!(
                "{page_bytes}: buffer pages are a power of two from {PAGE_BYTES_MIN} to \
                 {PAGE_BYTES_MAX} bytes"
            ),
        ));
    }
    Ok(())
}

/// One page unit, decoded: its first page and its fragments in slot order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferPage {
    /// The unit's first page: a unit read from another place is refused by the store.
    pub page: u64,
    /// The fragments; slot `i` is `fragments[i]`.
    pub fragments: Vec<Fragment>,
}

impl BufferPage {
    /// Bytes the header and fragments take (the rest of the unit is zero padding).
    pub fn used_bytes(&self) -> usize {
        PAGE_HEADER_BYTES + self.fragments.iter().map(Encode::encoded_len).sum::<usize>()
    }

    /// The unit padded with zeros to whole pages of `page_bytes`, ready to write.
    pub fn encode_unit(&self, page_bytes: u32) -> Vec<u8> {
        let mut out = self.encode();
        let pages = unit_pages(out.len(), page_bytes);
        assert!(pages <= unit_pages_max(page_bytes), "a unit of {pages} pages is too long");
        out.resize((pages * u64::from(page_bytes)) as usize, 0);
        out
    }

    /// `used_bytes` from a unit's first page, before the checksum can be verified (the store
    /// needs it to know how many pages to read); the magic and version are checked first.
    pub fn peek_used_bytes(first_page: &[u8]) -> Result<usize, DecodeError> {
        let mut r = Reader::new(first_page);
        let _crc = r.u32()?;
        check_magic_and_version(&mut r)?;
        let _fragments = r.u16()?;
        Ok(r.u32()? as usize)
    }
}

fn check_magic_and_version(r: &mut Reader<'_>) -> Result<(), DecodeError> {
    let magic = r.u32()?;
    if magic != PAGE_MAGIC {
        return Err(DecodeError::new(4, format!("not a buffer page (magic {magic:#010x})")));
    }
    let version = r.u16()?;
    if version != PAGE_FORMAT_VERSION {
        return Err(DecodeError::new(8, format!("buffer page format version {version}")));
    }
    Ok(())
}

impl Encode for BufferPage {
    fn encoded_len(&self) -> usize {
        self.used_bytes()
    }

    /// The header (with its checksum) and the fragments, without the padding.
    fn encode_to(&self, out: &mut Vec<u8>) {
        assert!(
            (1..=PAGE_FRAGMENTS_MAX).contains(&self.fragments.len()),
            "a unit holds 1..={PAGE_FRAGMENTS_MAX} fragments"
        );
        let start = out.len();
        let used = u32::try_from(self.used_bytes()).expect("a unit is below 4 GiB");
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&PAGE_MAGIC.to_le_bytes());
        out.extend_from_slice(&PAGE_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(self.fragments.len() as u16).to_le_bytes());
        out.extend_from_slice(&used.to_le_bytes());
        out.extend_from_slice(&self.page.to_le_bytes());
        for fragment in &self.fragments {
            fragment.encode_to(out);
        }
        let crc = mask(crc32c(&out[start + PAGE_CRC_START..]));
        out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
    }
}

impl Decode for BufferPage {
    /// Decodes a whole unit: header and fragments, then zero padding to the end of `input`.
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let crc = r.u32()?;
        check_magic_and_version(&mut r)?;
        let count = usize::from(r.u16()?);
        let used = r.u32()? as usize;
        if used < PAGE_HEADER_BYTES + FRAGMENT_HEADER_BYTES + ENTRY_BYTES_MIN || used > input.len()
        {
            return Err(DecodeError::new(
                12,
                format!("used bytes {used} of a {}-byte unit", input.len()),
            ));
        }
        if mask(crc32c(&input[PAGE_CRC_START..used])) != crc {
            return Err(DecodeError::new(0, "buffer page checksum mismatch"));
        }
        let page = r.u64()?;
        if count == 0 {
            return Err(DecodeError::new(10, "buffer page without fragments"));
        }
        let mut body = Reader::new(&input[..used]);
        body.bytes(PAGE_HEADER_BYTES)?;
        let mut fragments = Vec::with_capacity(count.min(used / FRAGMENT_HEADER_BYTES));
        let mut buffers = BTreeSet::new();
        for _ in 0..count {
            let at = body.position();
            let fragment = Fragment::decode_from(&mut body)?;
            if fragment.prev.is_some_and(|prev| prev.page >= page) {
                return Err(DecodeError::new(
                    at + 8,
                    format!("back pointer does not precede page {page}"),
                ));
            }
            if !buffers.insert(fragment.buffer) {
                return Err(DecodeError::new(
                    at,
                    format!("second fragment of {:?}", fragment.buffer),
                ));
            }
            fragments.push(fragment);
        }
        if body.remaining() != 0 {
            return Err(body.error(format!("{} bytes after the last fragment", body.remaining())));
        }
        if let Some(bad) = input[used..].iter().position(|&b| b != 0) {
            return Err(DecodeError::new(used + bad, "padding after the fragments is not zero"));
        }
        Ok(BufferPage { page, fragments })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::entry::{BufferEntry, strategies};
    use super::super::fragment::{BufferId, FragmentAddr};
    use super::*;

    fn sample(page: u64) -> BufferPage {
        let entries = |n: u64| {
            (0..n).map(|i| BufferEntry::put(&i.to_be_bytes(), b"value", i).unwrap()).collect()
        };
        BufferPage {
            page,
            fragments: vec![
                Fragment { buffer: BufferId(1), prev: None, entries: entries(3) },
                Fragment {
                    buffer: BufferId(2),
                    prev: Some(FragmentAddr { page: page - 1, slot: 4 }),
                    entries: entries(5),
                },
            ],
        }
    }

    fn page_strategy() -> impl Strategy<Value = BufferPage> {
        (
            (1u64 << 17)..(1 << 40),
            proptest::collection::vec(
                (
                    proptest::option::of(any::<u16>()),
                    proptest::collection::vec(strategies::entry(6, 30), 1..8),
                ),
                1..6,
            ),
        )
            .prop_map(|(page, fragments)| BufferPage {
                page,
                fragments: fragments
                    .into_iter()
                    .enumerate()
                    .map(|(i, (slot, entries))| Fragment {
                        buffer: BufferId(i as u64 * 7),
                        prev: slot
                            .map(|slot| FragmentAddr { page: page - 1 - u64::from(slot), slot }),
                        entries,
                    })
                    .collect(),
            })
    }

    proptest! {
        #[test]
        fn units_roundtrip(unit in page_strategy()) {
            let bytes = unit.encode_unit(4096);
            prop_assert_eq!(bytes.len() as u64, 4096 * unit_pages(unit.used_bytes(), 4096));
            prop_assert_eq!(BufferPage::peek_used_bytes(&bytes).unwrap(), unit.used_bytes());
            prop_assert_eq!(BufferPage::decode(&bytes).unwrap(), unit);
        }
    }

    #[test]
    fn every_bit_flip_is_detected() {
        // The checksum covers everything but itself and the padding, which must be zero: no
        // single-bit flip anywhere in the unit decodes.
        let unit = sample(9);
        let bytes = unit.encode_unit(512);
        assert_eq!(BufferPage::decode(&bytes).unwrap(), unit);
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(BufferPage::decode(&bad).is_err(), "flip of bit {bit} of byte {i}");
            }
        }
    }

    #[test]
    fn structural_checks_survive_a_valid_checksum() {
        // A back pointer to the page itself, sealed with a correct checksum: refused.
        let mut unit = sample(9);
        unit.fragments[1].prev = Some(FragmentAddr { page: 9, slot: 0 });
        let err = BufferPage::decode(&unit.encode_unit(512)).unwrap_err();
        assert!(err.reason.contains("back pointer"), "{err}");
        // Two fragments of one buffer in a unit: refused.
        let mut unit = sample(9);
        unit.fragments[1].buffer = BufferId(1);
        let err = BufferPage::decode(&unit.encode_unit(512)).unwrap_err();
        assert!(err.reason.contains("second fragment"), "{err}");
        // A truncated unit: refused.
        let bytes = sample(9).encode_unit(512);
        assert!(BufferPage::decode(&bytes[..100]).is_err());
        assert!(BufferPage::decode(&[0; 512]).is_err());
    }

    #[test]
    fn a_largest_entry_spans_pages_within_the_limit() {
        let entry = BufferEntry::put(&[1; 1024], &[2; 4096], u64::MAX).unwrap();
        let unit = BufferPage {
            page: 0,
            fragments: vec![Fragment { buffer: BufferId(0), prev: None, entries: vec![entry] }],
        };
        for page_bytes in [512, 4096, 8192] {
            let bytes = unit.encode_unit(page_bytes);
            assert_eq!(bytes.len() as u64, unit_pages_max(page_bytes) * u64::from(page_bytes));
            assert_eq!(BufferPage::decode(&bytes).unwrap(), unit);
        }
        assert_eq!(unit_pages_max(512), 11);
        assert_eq!(unit_pages_max(4096), 2);
        assert_eq!(unit_pages_max(8192), 1);
    }

    #[test]
    fn page_sizes_are_checked() {
        for good in [512, 4096, 65536] {
            check_page_bytes(good).unwrap();
        }
        for bad in [0, 256, 1000, 131_072] {
            assert!(check_page_bytes(bad).unwrap_err().is_invalid_argument());
        }
    }
}
