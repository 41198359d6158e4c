//! Every decoder of a persistent structure of this crate refuses arbitrary bytes with an error
//! and never panics: arbitrary byte strings, valid encodings with flipped bytes, truncations
//! and extensions, and (for checksummed structures) arbitrary bodies sealed with a correct
//! checksum, so the parser behind the checksum is exercised too. Whenever a decoder accepts
//! mutated input, re-encoding the decoded value must decode to the same value.
//!
//! The cargo-fuzz targets in `fuzz/` run the same decoders with coverage guidance; this file
//! is what CI runs (stable toolchain).

use std::sync::Arc;

use lamina_core::BatchOp;
use lamina_core::checksum::{crc32c, crc32c_append, mask, masked_crc32c};
use lamina_core::codec::{Decode, Encode};
use lamina_core::testkit::mutation::{apply, decode_checked, mutation};
use lamina_storage::block::{BLOCK_FORMAT_VERSION, BLOCK_MAGIC};
use lamina_storage::log::chunk::{
    CHUNK_FLAG_CLEAN_CLOSE, CHUNK_HEADER_BYTES, CHUNK_MAGIC, ChunkHeader, FILE_MAGIC,
    FORMAT_VERSION, FileHeader, FileKind, RING_FORMAT_VERSION, RING_SEGMENTS_MAX,
};
use lamina_storage::log::record::decode_records;
use lamina_storage::log::synced_mark::SyncedMark;
use lamina_storage::log::{Record, RecordOp};
use lamina_storage::pmem::{AllocLogRecord, LogOp, PPtr, RegionHeader, RegionLayout};
use lamina_storage::{Block, BlockType, FreeList, MemoryStorage, OpenMode, Storage, Superblock};
use proptest::prelude::*;

/// `lamina_storage::pmem`'s region magic and format version (the layout module is private).
const PMEM_MAGIC: [u8; 8] = *b"LAMPMEM\0";
const PMEM_VERSION: u32 = 1;

fn block_strategy() -> impl Strategy<Value = Block> {
    (prop_oneof![Just(512usize), Just(1024)], any::<u8>(), any::<u64>(), any::<u64>())
        .prop_flat_map(|(size, kind, owner, no)| {
            proptest::collection::vec(any::<u8>(), 0..=size - 32).prop_map(move |payload| {
                Block::new(size, BlockType(kind), owner, no, payload).unwrap()
            })
        })
}

/// A block-sized buffer with a lamina header of arbitrary fields and a correct CRC.
fn sealed_block(size: usize, header_tail: &[u8; 24], rest: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; size];
    b[..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
    b[4] = BLOCK_FORMAT_VERSION;
    b[5..8].copy_from_slice(&[header_tail[0], 0, 0]);
    b[8..28].copy_from_slice(&header_tail[4..24]);
    let n = rest.len().min(size - 32);
    b[32..32 + n].copy_from_slice(&rest[..n]);
    let crc = crc32c_append(crc32c(&b[..28]), &b[32..]);
    b[28..32].copy_from_slice(&mask(crc).to_le_bytes());
    b
}

fn freelist_strategy() -> impl Strategy<Value = FreeList> {
    (0u64..1000, 0u64..64, proptest::collection::vec(any::<bool>(), 0..64)).prop_map(
        |(first, extra, frees)| {
            let mut list = FreeList::new(first, first + frees.len() as u64 + extra).unwrap();
            let blocks: Vec<u64> = frees.iter().map(|_| list.allocate().unwrap()).collect();
            for (block, free) in blocks.iter().zip(&frees) {
                if *free {
                    list.free(*block).unwrap();
                }
            }
            list
        },
    )
}

fn batch_op() -> impl Strategy<Value = BatchOp> {
    let key = proptest::collection::vec(any::<u8>(), 1..20);
    let value = proptest::collection::vec(any::<u8>(), 0..20);
    prop_oneof![
        (key.clone(), value).prop_map(|(key, value)| BatchOp::Put { key, value }),
        key.prop_map(|key| BatchOp::Delete { key }),
    ]
}

fn record_strategy() -> impl Strategy<Value = Record> {
    let op = prop_oneof![
        batch_op().prop_map(|op| match op {
            BatchOp::Put { key, value } => RecordOp::Put { key, value },
            BatchOp::Delete { key } => RecordOp::Delete { key },
        }),
        proptest::collection::vec(batch_op(), 0..5).prop_map(RecordOp::Batch),
        proptest::collection::vec(batch_op(), 0..5).prop_map(RecordOp::BatchPart),
    ];
    (1u64.., op).prop_map(|(seq, op)| Record { seq, op })
}

fn file_header_strategy() -> impl Strategy<Value = FileHeader> {
    (any::<bool>(), any::<[u64; 4]>(), 1u64..1 << 40).prop_map(|(ring, f, blocks)| FileHeader {
        kind: if ring { FileKind::Ring } else { FileKind::Segment },
        version: if ring { RING_FORMAT_VERSION } else { FORMAT_VERSION },
        log_id: f[0],
        file_index: f[1],
        base_pos: f[2],
        capacity_bytes: blocks * 4096,
        seq_floor: f[3],
    })
}

fn chunk_header_strategy() -> impl Strategy<Value = ChunkHeader> {
    (any::<[u64; 4]>(), 0u64..1 << 40, any::<[u32; 4]>(), any::<bool>()).prop_map(
        |(f, pos, g, clean)| ChunkHeader {
            log_id: f[0],
            pos: pos * 4096,
            prev_end: f[1],
            tail: f[2],
            seq_hi: f[3],
            payload_len: g[0],
            record_count: g[1],
            payload_crc: g[2],
            ring_segments: g[3] & RING_SEGMENTS_MAX,
            flags: if clean { CHUNK_FLAG_CLEAN_CLOSE } else { 0 },
        },
    )
}

fn region_header_strategy() -> impl Strategy<Value = RegionHeader> {
    (6u32..=20, 1u64..1 << 20, any::<u64>()).prop_filter_map(
        "region too small",
        |(chunk_log2, lines, file_id)| {
            let layout = RegionLayout::compute(lines * 64 + 1024, 1 << chunk_log2)?;
            Some(RegionHeader { file_id, layout })
        },
    )
}

fn alloc_log_strategy() -> impl Strategy<Value = AllocLogRecord> {
    (any::<bool>(), any::<u64>(), any::<u64>(), 1u64..).prop_map(|(alloc, pptr, block, chunks)| {
        AllocLogRecord {
            op: if alloc { LogOp::Alloc } else { LogOp::Free },
            pptr_offset: pptr,
            block_offset: block,
            chunks,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn block_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2100)) {
        decode_checked::<Block>(&bytes);
    }

    #[test]
    fn block_survives_mutations(block in block_strategy(), m in mutation()) {
        let bytes = apply(block.encode(), &m);
        if let Some(back) = decode_checked::<Block>(&bytes) {
            prop_assert_eq!(back, block, "a mutated block passed its CRC");
        }
    }

    #[test]
    fn block_behind_a_valid_crc(
        size in prop_oneof![Just(512usize), Just(1024)],
        header in any::<[u8; 24]>(),
        rest in proptest::collection::vec(any::<u8>(), 0..1024),
        small_len in any::<bool>(),
    ) {
        let mut header = header;
        if small_len {
            let len = u32::from(header[20]) * 4;
            header[20..24].copy_from_slice(&len.to_le_bytes());
        }
        decode_checked::<Block>(&sealed_block(size, &header, &rest));
    }

    #[test]
    fn freelist_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        decode_checked::<FreeList>(&bytes);
    }

    #[test]
    fn freelist_survives_mutations(list in freelist_strategy(), m in mutation()) {
        decode_checked::<FreeList>(&apply(list.encode(), &m));
    }

    #[test]
    fn freelist_behind_a_valid_crc(
        body in proptest::collection::vec(any::<u8>(), 0..100),
        list in freelist_strategy(),
        m in mutation(),
        mutate_valid in any::<bool>(),
    ) {
        let mut body = if mutate_valid {
            let bytes = list.encode();
            apply(bytes[..bytes.len() - 4].to_vec(), &m)
        } else {
            let mut b = vec![1u8];
            b.extend_from_slice(&body);
            b
        };
        let crc = masked_crc32c(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        decode_checked::<FreeList>(&body);
    }

    #[test]
    fn record_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        decode_checked::<Record>(&bytes);
        let _ = decode_records(&bytes);
    }

    #[test]
    fn records_survive_mutations(
        records in proptest::collection::vec(record_strategy(), 1..4),
        m in mutation(),
    ) {
        let mut payload = Vec::new();
        for r in &records {
            r.encode_to(&mut payload);
        }
        prop_assert_eq!(decode_records(&payload).unwrap(), records.clone());
        let payload = apply(payload, &m);
        if let Ok(back) = decode_records(&payload) {
            let mut again = Vec::new();
            for r in &back {
                r.encode_to(&mut again);
            }
            prop_assert_eq!(decode_records(&again).unwrap(), back);
        }
        decode_checked::<Record>(&apply(records[0].encode(), &m));
    }

    #[test]
    fn file_header_refuses_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..130),
        body in any::<[u8; 44]>(),
    ) {
        let _ = FileHeader::decode(&bytes);
        let _ = FileHeader::parse(&bytes, std::path::Path::new("log"));
        let mut sealed = FILE_MAGIC.to_vec();
        sealed.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        sealed.extend_from_slice(&body);
        let crc = masked_crc32c(&sealed);
        sealed.extend_from_slice(&crc.to_le_bytes());
        if let Ok(h) = FileHeader::decode(&sealed) {
            prop_assert_eq!(FileHeader::decode(&h.encode()), Ok(h));
        }
    }

    #[test]
    fn file_header_survives_mutations(h in file_header_strategy(), m in mutation()) {
        let bytes = apply(h.to_block(), &m);
        let _ = FileHeader::parse(&bytes, std::path::Path::new("log"));
        if let Ok(back) = FileHeader::decode(&bytes) {
            prop_assert_eq!(back, h, "a mutated file header passed its CRC");
        }
    }

    #[test]
    fn synced_mark_refuses_arbitrary_and_mutated_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        log_id in any::<u64>(),
        end_pos in any::<u64>(),
        m in mutation(),
    ) {
        decode_checked::<SyncedMark>(&bytes);
        let mark = SyncedMark { log_id, end_pos };
        if let Some(back) = decode_checked::<SyncedMark>(&apply(mark.encode(), &m)) {
            prop_assert_eq!(back, mark, "a mutated synced mark passed its CRC");
        }
    }

    #[test]
    fn chunk_header_refuses_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..130),
        body in proptest::collection::vec(any::<u8>(), CHUNK_HEADER_BYTES - 8),
    ) {
        let _ = ChunkHeader::decode(&bytes);
        let mut sealed = CHUNK_MAGIC.to_le_bytes().to_vec();
        sealed.extend_from_slice(&masked_crc32c(&body).to_le_bytes());
        sealed.extend_from_slice(&body);
        if let Ok(h) = ChunkHeader::decode(&sealed) {
            prop_assert_eq!(ChunkHeader::decode(&h.encode()), Ok(h));
            let _ = (h.chunk_len(), h.end());
        }
    }

    #[test]
    fn chunk_header_survives_mutations(h in chunk_header_strategy(), m in mutation()) {
        if let Ok(back) = ChunkHeader::decode(&apply(h.encode(), &m)) {
            prop_assert_eq!(back, h, "a mutated chunk header passed its CRC");
        }
    }

    #[test]
    fn region_header_refuses_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..130),
        fields in any::<[u64; 5]>(),
        chunk_bytes in any::<u32>(),
    ) {
        decode_checked::<RegionHeader>(&bytes);
        let mut sealed = PMEM_MAGIC.to_vec();
        sealed.extend_from_slice(&PMEM_VERSION.to_le_bytes());
        sealed.extend_from_slice(&chunk_bytes.to_le_bytes());
        for f in fields {
            sealed.extend_from_slice(&f.to_le_bytes());
        }
        let crc = masked_crc32c(&sealed);
        sealed.extend_from_slice(&crc.to_le_bytes());
        sealed.extend_from_slice(&[0; 4]);
        decode_checked::<RegionHeader>(&sealed);
        let _ = RegionLayout::compute(fields[1], u64::from(chunk_bytes));
        let _ = RegionLayout::compute(fields[1], fields[2]);
    }

    #[test]
    fn region_header_survives_mutations(h in region_header_strategy(), m in mutation()) {
        if let Some(back) = decode_checked::<RegionHeader>(&apply(h.encode(), &m)) {
            prop_assert_eq!(back, h, "a mutated region header passed its CRC");
        }
    }

    #[test]
    fn alloc_log_refuses_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..130),
        words in any::<[u64; 4]>(),
    ) {
        decode_checked::<AllocLogRecord>(&bytes);
        let _ = AllocLogRecord::decode_slot(&bytes);
        let mut sealed = Vec::new();
        for w in words {
            sealed.extend_from_slice(&(w % 4).to_le_bytes());
        }
        sealed.resize(56, 0);
        let crc = masked_crc32c(&sealed);
        sealed.extend_from_slice(&crc.to_le_bytes());
        sealed.extend_from_slice(&[0; 4]);
        decode_checked::<AllocLogRecord>(&sealed);
        let _ = AllocLogRecord::decode_slot(&sealed);
    }

    #[test]
    fn alloc_log_survives_mutations(r in alloc_log_strategy(), m in mutation()) {
        let bytes = apply(r.encode(), &m);
        let _ = AllocLogRecord::decode_slot(&bytes);
        if let Some(back) = decode_checked::<AllocLogRecord>(&bytes) {
            prop_assert_eq!(back, r, "a mutated log record passed its CRC");
        }
    }

    #[test]
    fn pptr_decodes_exactly_16_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        let decoded = decode_checked::<PPtr>(&bytes);
        prop_assert_eq!(decoded.is_some(), bytes.len() == 16);
        if let Some(p) = decoded {
            prop_assert_eq!(p.encode(), bytes);
        }
    }

    /// The superblock decodes its slots from whatever the file holds.
    #[test]
    fn superblock_opens_arbitrary_files(
        bytes in proptest::collection::vec(any::<u8>(), 0..1200),
        slot in proptest::collection::vec(any::<u8>(), 0..600),
        header in any::<[u8; 24]>(),
    ) {
        for content in [bytes, sealed_block(512, &header, &slot)] {
            let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
            let file = storage.open("sb", OpenMode::Create).unwrap();
            file.write_all_at(0, &content).unwrap();
            drop(file);
            let owner = u64::from_le_bytes(header[4..12].try_into().unwrap());
            if let Ok(sb) = Superblock::open(storage, "sb", owner, 512) {
                let _ = (sb.current(), sb.slots());
            }
        }
    }
}

/// Regression (found by the `log_chunk_header` fuzz target): a CRC-valid chunk header whose
/// 4 KiB-aligned position is so high that `pos + chunk_len` overflows decoded, and
/// `ChunkHeader::end` (which recovery calls) then panicked with an arithmetic overflow.
#[test]
fn chunk_header_whose_end_overflows_is_refused() {
    let header = ChunkHeader {
        log_id: 1,
        pos: !4095_u64, // the highest 4 KiB-aligned position
        prev_end: 0,
        tail: 0,
        seq_hi: 1,
        payload_len: 0,
        record_count: 0,
        payload_crc: 0,
        ring_segments: 0,
        flags: 0,
    };
    let err = ChunkHeader::decode(&header.encode()).unwrap_err();
    assert!(err.reason.contains("largest log position"), "{err}");
    // The last chunk that fits still decodes.
    let last = ChunkHeader { pos: (!4095_u64) - 4096, ..header };
    assert_eq!(ChunkHeader::decode(&last.encode()), Ok(last));
    assert_eq!(last.end(), !4095_u64);
}
