//! Persistent pointers (FPTree section 2): a file id naming the region (the allocator's
//! arena) and a byte offset inside it. They stay valid across restarts, where virtual
//! addresses do not; [`crate::pmem::PmemAllocator::resolve`] turns one into a region offset.

use lamina_core::Result;
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};

use super::region::PmemRegion;

/// A persistent pointer: 16 bytes in a region (file id, then offset, little-endian).
/// Offset 0 is the region header, never an allocation, so offset 0 means null.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PPtr {
    /// The region (arena) the pointer points into.
    pub file_id: u64,
    /// Byte offset within that region.
    pub offset: u64,
}

impl PPtr {
    /// The null pointer.
    pub const NULL: PPtr = PPtr { file_id: 0, offset: 0 };
    /// Size of a stored pointer.
    pub const ENCODED_BYTES: u64 = 16;

    /// A pointer to `offset` in region `file_id`.
    pub const fn new(file_id: u64, offset: u64) -> Self {
        PPtr { file_id, offset }
    }

    /// Whether this is null (offset 0, whatever the file id: a pointer whose offset word was
    /// never written counts as null).
    pub const fn is_null(self) -> bool {
        self.offset == 0
    }

    /// Reads the pointer stored at `at` (8-byte aligned) in `region`.
    pub fn read_from(region: &(impl PmemRegion + ?Sized), at: u64) -> Result<PPtr> {
        Ok(PPtr { file_id: region.load_u64(at)?, offset: region.load_u64(at + 8)? })
    }

    /// Stores the pointer at `at` (8-byte aligned): two p-atomic words, file id first. Not yet
    /// durable, and not p-atomic as a whole: a crash between the two words leaves a pointer
    /// that either is still null or has the new offset with a stale file id.
    pub fn write_to(self, region: &(impl PmemRegion + ?Sized), at: u64) -> Result<()> {
        region.load_u64(at + 8)?; // range check both words before storing either
        region.store_u64(at, self.file_id)?;
        region.store_u64(at + 8, self.offset)
    }
}

impl Encode for PPtr {
    fn encoded_len(&self) -> usize {
        Self::ENCODED_BYTES as usize
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.file_id.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
    }
}

impl Decode for PPtr {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(input);
        let pptr = PPtr { file_id: reader.u64()?, offset: reader.u64()? };
        reader.finish()?;
        Ok(pptr)
    }
}
