//! The synced mark: how far a segment's chunks were synced, recorded a second time in the
//! segment's header block, so that recovery can tell a synced chunk that was damaged or cut
//! off from a crash's torn write (`docs/format/log.md`, "Synced mark").
//!
//! Without it the newest chunk of a crashed log is the one place where damage and a torn
//! tail read the same: both fail the chunk's CRC with nothing valid after it, so recovery
//! cut it and the writes it held, acknowledged under `Sync`, were lost without an error (the
//! crash-image damage sweep found a log cut in half and a flipped last record,
//! `docs/results/reliability.md`). RocksDB records synced WAL sizes in its MANIFEST for the
//! same reason (`track_and_verify_wals_in_manifest`).
//!
//! The mark is written (not synced) after each chunk's `fdatasync` returns and before the
//! chunk's writers are told it is durable; the next chunk's sync carries it to the device.
//! Whatever it says was true when it was written, so it never exceeds what is durable: a
//! crash before it reaches the device leaves an older mark (or none), and recovery then
//! treats the newest chunk as it always did. Two slots in two different 512-byte sectors,
//! written alternately, so a torn write of one leaves the other; recovery takes the larger
//! valid one. A slot that fails its CRC is ignored (damage to it weakens the check, never
//! the data).

use lamina_core::checksum::{seal, unseal};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};
use lamina_core::{Error, Result};

use crate::backend::StorageFile;

/// File offsets of the two slots, in the header block after the file header (60 bytes), each
/// in a sector of its own.
pub const SYNCED_MARK_OFFSETS: [u64; 2] = [512, 1024];
/// The slot magic: "LSYN" little-endian.
pub const SYNCED_MARK_MAGIC: u32 = u32::from_le_bytes(*b"LSYN");
/// Bytes of an encoded mark: magic, reserved, log id, end position, CRC.
pub const SYNCED_MARK_BYTES: usize = 28;

/// One slot: the log position through which the segment's chunks were synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncedMark {
    /// The log the segment belongs to (a slot copied from another log's file is not valid).
    pub log_id: u64,
    /// Log position after the last synced chunk of the segment.
    pub end_pos: u64,
}

impl Encode for SyncedMark {
    fn encoded_len(&self) -> usize {
        SYNCED_MARK_BYTES
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        seal(out, |out| {
            out.extend_from_slice(&SYNCED_MARK_MAGIC.to_le_bytes());
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(&self.log_id.to_le_bytes());
            out.extend_from_slice(&self.end_pos.to_le_bytes());
        });
    }
}

impl Decode for SyncedMark {
    fn decode(input: &[u8]) -> std::result::Result<Self, DecodeError> {
        if input.len() != SYNCED_MARK_BYTES {
            return Err(DecodeError::new(0, format!("a synced mark of {} bytes", input.len())));
        }
        let mut reader = Reader::new(unseal(input, "synced mark")?);
        if reader.u32()? != SYNCED_MARK_MAGIC {
            return Err(DecodeError::new(0, "not a synced mark (bad magic)"));
        }
        if reader.array::<4>()? != [0; 4] {
            return Err(DecodeError::new(4, "reserved bytes not zero"));
        }
        Ok(SyncedMark { log_id: reader.u64()?, end_pos: reader.u64()? })
    }
}

/// Writes `mark` into slot `slot % 2` of `file`'s header block (no sync).
pub(crate) fn write(file: &dyn StorageFile, slot: u64, mark: SyncedMark) -> Result<()> {
    let offset = SYNCED_MARK_OFFSETS[usize::from(slot % 2 == 1)];
    file.write_all_at(offset, &mark.encode())
}

/// The largest end position a valid slot of `file` records for log `log_id`, if any. Only
/// I/O errors are errors: a slot that does not decode is ignored (never written, torn, or
/// damaged).
pub(crate) fn read(file: &dyn StorageFile, log_id: u64) -> Result<Option<u64>> {
    let mut best: Option<u64> = None;
    for offset in SYNCED_MARK_OFFSETS {
        let mut bytes = [0u8; SYNCED_MARK_BYTES];
        file.read_exact_at(offset, &mut bytes)?;
        if let Ok(mark) = SyncedMark::decode(&bytes)
            && mark.log_id == log_id
        {
            best = Some(best.map_or(mark.end_pos, |b| b.max(mark.end_pos)));
        }
    }
    Ok(best)
}

/// The error for a segment whose chunks end (at file `offset`, log position `end_pos`)
/// before the position its synced mark records.
pub(crate) fn chunks_lost(
    path: &std::path::Path,
    offset: u64,
    end_pos: u64,
    synced_pos: u64,
) -> Error {
    Error::corruption(
        path,
        offset,
        format!(
            "the log's valid chunks end at position {end_pos}, but it was synced through \
             position {synced_pos} (its synced mark): a synced chunk is damaged or the file \
             was cut short"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARK: SyncedMark = SyncedMark { log_id: 0x0123_4567_89ab_cdef, end_pos: 3 << 20 };

    #[test]
    fn a_mark_roundtrips() {
        let bytes = MARK.encode();
        assert_eq!(bytes.len(), SYNCED_MARK_BYTES);
        assert_eq!(SyncedMark::decode(&bytes).unwrap(), MARK);
    }

    #[test]
    fn every_flipped_byte_and_every_cut_is_refused() {
        let bytes = MARK.encode();
        for i in 0..bytes.len() {
            for bit in [0x01, 0x80] {
                let mut damaged = bytes.clone();
                damaged[i] ^= bit;
                assert!(SyncedMark::decode(&damaged).is_err(), "byte {i} bit {bit:#x}");
            }
        }
        for len in 0..bytes.len() {
            assert!(SyncedMark::decode(&bytes[..len]).is_err(), "cut to {len}");
        }
        assert!(SyncedMark::decode(&[0u8; SYNCED_MARK_BYTES]).is_err(), "a never written slot");
    }

    #[test]
    fn the_larger_valid_slot_of_this_log_is_read() {
        let storage = crate::MemoryStorage::new();
        let file = crate::Storage::open(&storage, "seg", crate::OpenMode::CreateNew).unwrap();
        file.set_len(4096).unwrap();
        assert_eq!(read(file.as_ref(), MARK.log_id).unwrap(), None, "no slot written");
        write(file.as_ref(), 0, MARK).unwrap();
        write(file.as_ref(), 1, SyncedMark { end_pos: MARK.end_pos + 4096, ..MARK }).unwrap();
        assert_eq!(read(file.as_ref(), MARK.log_id).unwrap(), Some(MARK.end_pos + 4096));
        // The newer slot torn: the older one still counts.
        file.write_all_at(SYNCED_MARK_OFFSETS[1] + 9, &[0xff]).unwrap();
        assert_eq!(read(file.as_ref(), MARK.log_id).unwrap(), Some(MARK.end_pos));
        // Another log's mark is not this log's.
        assert_eq!(read(file.as_ref(), MARK.log_id ^ 1).unwrap(), None);
    }
}
