//! Encode/Decode of the region header, the log record and persistent pointers: roundtrip and
//! corruption.

use std::sync::Arc;

use lamina_core::Error;
use lamina_core::codec::{Decode, Encode};

use crate::pmem::*;

fn header() -> RegionHeader {
    RegionHeader { file_id: 42, layout: RegionLayout::compute(1 << 20, 256).unwrap() }
}

#[test]
fn layout_is_consistent() {
    for (region, chunk) in
        [(2048, 64), (16384, 64), (1 << 20, 256), (1 << 24, 4096), (1 << 22, 1 << 20)]
    {
        let l = RegionLayout::compute(region, chunk).unwrap();
        assert!(l.alloc_bitmap_offset >= 1024);
        assert_eq!(l.start_bitmap_offset, l.alloc_bitmap_offset + l.bitmap_bytes);
        assert!(l.heap_offset >= l.start_bitmap_offset + l.bitmap_bytes);
        assert_eq!(l.heap_offset % chunk.min(4096), 0);
        assert!(l.heap_offset + l.chunk_count * chunk <= region);
        assert!(l.bitmap_bytes * 8 >= l.chunk_count);
        assert_eq!(l.chunk_at(l.heap_offset), Some(0));
        assert_eq!(l.chunk_at(l.heap_offset + 1), None);
        assert_eq!(l.chunk_containing(l.heap_offset - 1), None);
    }
    for (region, chunk) in [(1024, 64), (4096, 100), (4096, 32), (1 << 20, 1 << 21), (1100, 64)] {
        assert_eq!(RegionLayout::compute(region, chunk), None, "{region} {chunk}");
    }
}

#[test]
fn header_roundtrips() {
    let h = header();
    let bytes = h.encode();
    assert_eq!(bytes.len(), 64);
    assert_eq!(&bytes[..8], b"LAMPMEM\0");
    assert_eq!(RegionHeader::decode(&bytes).unwrap(), h);
}

#[test]
fn every_corrupted_header_byte_is_detected() {
    let bytes = header().encode();
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[i] ^= flip;
            assert!(RegionHeader::decode(&bad).is_err(), "byte {i} flip {flip:#x}");
        }
    }
    assert!(RegionHeader::decode(&bytes[..63]).is_err());
    let mut long = bytes.clone();
    long.push(0);
    assert!(RegionHeader::decode(&long).is_err());
}

#[test]
fn header_with_a_valid_checksum_but_wrong_layout_is_refused() {
    let mut h = header();
    h.layout.heap_offset += 4096;
    assert!(RegionHeader::decode(&h.encode()).unwrap_err().reason.contains("layout"));
}

#[test]
fn log_record_roundtrips_and_corruption_is_detected() {
    for op in [LogOp::Alloc, LogOp::Free] {
        let rec = AllocLogRecord { op, pptr_offset: 128, block_offset: 4096, chunks: 3 };
        let bytes = rec.encode();
        assert_eq!(bytes.len(), 64);
        assert_eq!(AllocLogRecord::decode(&bytes).unwrap(), rec);
        assert_eq!(AllocLogRecord::decode_slot(&bytes).unwrap(), Some(rec));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(AllocLogRecord::decode(&bad).is_err(), "byte {i}");
        }
        assert!(AllocLogRecord::decode(&bytes[..60]).is_err());
    }
    assert_eq!(AllocLogRecord::decode_slot(&[0u8; 64]).unwrap(), None);
    let zero_chunks =
        AllocLogRecord { op: LogOp::Alloc, pptr_offset: 128, block_offset: 0, chunks: 0 };
    assert!(AllocLogRecord::decode(&zero_chunks.encode()).is_err());
}

#[test]
fn pptr_roundtrips() {
    for p in [PPtr::NULL, PPtr::new(1, 4096), PPtr::new(u64::MAX, u64::MAX)] {
        let bytes = p.encode();
        assert_eq!(bytes.len(), 16);
        assert_eq!(PPtr::decode(&bytes).unwrap(), p);
    }
    assert!(PPtr::decode(&[0u8; 15]).is_err());
    assert!(PPtr::decode(&[0u8; 17]).is_err());
    assert!(PPtr::NULL.is_null() && PPtr::new(3, 0).is_null() && !PPtr::new(0, 64).is_null());
    let region = SimulatedRegion::new(256, SimulatedOptions::default()).unwrap();
    PPtr::new(9, 192).write_to(&region, 8).unwrap();
    let mut raw = [0u8; 16];
    region.read(8, &mut raw).unwrap();
    assert_eq!(PPtr::decode(&raw).unwrap(), PPtr::new(9, 192), "stored form is the encoding");
    assert!(PPtr::new(1, 1).write_to(&region, 248).is_err(), "second word out of range");
    assert_eq!(region.load_u64(248).unwrap(), 0, "nothing written when refused");
}

#[test]
fn opening_an_unformatted_or_corrupt_region_fails_cleanly() {
    let region = Arc::new(SimulatedRegion::new(8192, SimulatedOptions::default()).unwrap());
    assert!(matches!(PmemAllocator::open(region.clone()), Err(Error::Incompatible { .. })));
    drop(PmemAllocator::format(region.clone(), 5, 64).unwrap());
    region.write(20, &[0xff]).unwrap(); // inside the header's checksummed bytes
    let err = PmemAllocator::open(region.clone()).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err:?}");
    // A valid header of a region of another size.
    let other = RegionHeader { file_id: 5, layout: RegionLayout::compute(16384, 64).unwrap() };
    region.write(0, &other.encode()).unwrap();
    assert!(matches!(PmemAllocator::open(region.clone()), Err(Error::Corruption { .. })));
    // A corrupt log record (op set, checksum wrong).
    drop(PmemAllocator::format(region.clone(), 5, 64).unwrap());
    region.store_u64(64, 1).unwrap();
    let err = PmemAllocator::open(region.clone()).unwrap_err();
    assert!(
        matches!(err, Error::Corruption { offset, .. } if (64..128).contains(&offset)),
        "{err:?}"
    );
    // An inconsistent bitmap: an allocated chunk without a block start.
    drop(PmemAllocator::format(region.clone(), 5, 64).unwrap());
    let layout = RegionLayout::compute(8192, 64).unwrap();
    region.store_u64(layout.alloc_bitmap_offset, 0b100).unwrap();
    assert!(matches!(PmemAllocator::open(region), Err(Error::Corruption { .. })));
}
