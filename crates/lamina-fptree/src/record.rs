//! A slot's record, in one of two layouts fixed when the tree is created:
//!
//! - **Blobs** (the default; Appendix C's variable-size case): the slot is a persistent
//!   pointer to a checksummed record blob (`crate::blob`) allocated through the logged
//!   persistent allocator. Keys of 1 to 1024 bytes, values up to 4096.
//! - **Inline** (`FpTreeConfig::inline_records`; section 4's fixed-size case, which Figure 7
//!   measures): the slot's two words are the key and the value, 8 bytes each. A write stores
//!   the slot, persists it, then the fingerprint and the bitmap: no allocation, no blob, and
//!   an update or a delete frees nothing (Algorithms 2, 5 and 8 as printed). Recovery reads
//!   the keys from the leaves alone. The paper's layout has no checksum, so a damaged inline
//!   value is not detected (a damaged key is, through its fingerprint, unless the damage
//!   keeps the fingerprint: 1 in 256).
//!
//! Everything that reads, writes or frees a record goes through these methods.

use lamina_core::{Error, Result};
use lamina_storage::pmem::PmemRegion;

use crate::blob::BLOB_HEADER_BYTES;
use crate::leaf::Leaf;
use crate::store::Store;

/// Key bytes of an inline record.
pub const INLINE_KEY_BYTES: usize = 8;
/// Value bytes of an inline record.
pub const INLINE_VALUE_BYTES: usize = 8;

/// The slot words of an inline record.
pub(crate) fn inline_words(key: &[u8], value: &[u8]) -> [u64; 2] {
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("checked 8 bytes"));
    [word(key), word(value)]
}

impl<R: PmemRegion + ?Sized> Store<R> {
    /// Refuses a record this tree cannot hold (inline records: exactly 8 + 8 bytes).
    pub(crate) fn check_record_size(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.config.inline_records
            && (key.len() != INLINE_KEY_BYTES || value.len() != INLINE_VALUE_BYTES)
        {
            return Err(Error::option(
                "inline_records",
                format!(
                    "this tree holds {INLINE_KEY_BYTES}-byte keys and {INLINE_VALUE_BYTES}-byte \
                     values in its leaves; got a {}-byte key and a {}-byte value",
                    key.len(),
                    value.len()
                ),
            ));
        }
        Ok(())
    }

    /// Whether the valid `slot` of `leaf` holds `key` (one key probe). `buf` is scratch for
    /// blobs.
    pub(crate) fn probe_slot(
        &self,
        leaf: Leaf<'_, R>,
        slot: usize,
        key: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<bool> {
        if self.config.inline_records {
            let [stored, _] = leaf.slot_words(slot);
            return Ok(key.len() == INLINE_KEY_BYTES && stored.to_le_bytes() == key);
        }
        buf.resize(BLOB_HEADER_BYTES + key.len(), 0);
        self.probe(leaf.slot(slot), key, buf)
    }

    /// The (key, value) of the valid `slot` of `leaf`, checked.
    pub(crate) fn record_in(&self, leaf: Leaf<'_, R>, slot: usize) -> Result<(Vec<u8>, Vec<u8>)> {
        if self.config.inline_records {
            let [key, value] = leaf.slot_words(slot);
            return Ok((key.to_le_bytes().to_vec(), value.to_le_bytes().to_vec()));
        }
        self.read_record(leaf.slot(slot))
    }

    /// The key of the valid `slot` of `leaf`, checked.
    pub(crate) fn key_in(&self, leaf: Leaf<'_, R>, slot: usize) -> Result<Vec<u8>> {
        if self.config.inline_records {
            return Ok(leaf.slot_words(slot)[0].to_le_bytes().to_vec());
        }
        Ok(self.read_record(leaf.slot(slot))?.0)
    }

    /// Writes `key` = `value` durably into the free `slot` of the locked `leaf` (Algorithm 2
    /// lines 12-13; blobs: Algorithm 14 lines 13-15). The slot is not valid yet.
    pub(crate) fn write_record(
        &self,
        leaf: Leaf<'_, R>,
        slot: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        if self.config.inline_records {
            leaf.set_slot_words(slot, inline_words(key, value));
            self.region().persist(leaf.slot_at(slot), 16)?;
            self.region().fence();
            return Ok(());
        }
        self.write_blob(leaf.slot_at(slot), key, value).map(|_| ())
    }

    /// Frees what the now invalid `slot` of `leaf` holds: its blob, which nulls the slot
    /// (Algorithm 15 line 18, 16 line 16); nothing for an inline record.
    pub(crate) fn release_record(&self, leaf: Leaf<'_, R>, slot: usize) -> Result<()> {
        if self.config.inline_records {
            return Ok(());
        }
        self.alloc.deallocate(leaf.slot_at(slot))
    }

    /// Heap chunks the valid `slot` of `leaf` holds (its blob's; none inline).
    pub(crate) fn record_chunks(&self, leaf: Leaf<'_, R>, slot: usize) -> Result<u64> {
        if self.config.inline_records {
            return Ok(0);
        }
        let chunk_bytes = self.alloc.header().layout.chunk_bytes;
        Ok(self.alloc.block_of(leaf.slot(slot))?.1 / chunk_bytes)
    }
}
