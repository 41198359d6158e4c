//! `lamina_fdtree::format::segment::parse_segment` and `format::block::BlockEntries` (the
//! segments of a level block and the entries in them), raw and resealed: the segment at the
//! start of the input gets a valid header (magic, version, the expected place, a length that
//! fits) and checksum, so the fuzzer reaches the entry decoder behind the CRC. With the tree's
//! limits (16-byte keys, 64-byte values) and tiny ones (4 and 4).
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_fdtree::format::block::BlockEntries;
use lamina_fdtree::format::segment::{SEGMENT_HEADER_BYTES, SegmentAddr, parse_segment};
use libfuzzer_sys::fuzz_target;

const ADDR: SegmentAddr = SegmentAddr { file: 7, block: 3, offset: 0 };
const LIMITS: [(usize, usize); 2] = [(16, 64), (4, 4)];

/// Every entry of the segment at the start of `bytes`, and a search for each of their keys.
fn segment(bytes: &[u8]) {
    let Ok(seg) = parse_segment(bytes, ADDR) else { return };
    assert!(usize::from(seg.header.len) <= bytes.len());
    for (kmax, vmax) in LIMITS {
        let mut keys = Vec::new();
        for e in seg.entries.iter(kmax, vmax) {
            match e {
                Ok(e) => keys.push(e.key().to_vec()),
                Err(_) => break,
            }
        }
        assert!(keys.len() <= usize::from(seg.header.count));
        for k in keys.iter().chain([&Vec::new()]) {
            let _ = seg.entries.find(k, kmax, vmax);
        }
    }
}

/// Every entry of `bytes` as block 3 of file 7; the iterator must end.
fn block(bytes: &[u8]) {
    for (kmax, vmax) in LIMITS {
        let n = BlockEntries::new(bytes, ADDR.file, ADDR.block, kmax, vmax).take(1 << 20).count();
        assert!(n < 1 << 20, "a block iterator that does not end");
    }
}

/// `bytes` with a valid segment header and checksum at `at` (length clamped to what is
/// left); returns the segment's length.
fn reseal(bytes: &mut [u8], at: usize) -> Option<usize> {
    let rest = bytes.len().checked_sub(at)?;
    if rest < SEGMENT_HEADER_BYTES {
        return None;
    }
    let seg = &mut bytes[at..];
    let len = usize::from(u16::from_le_bytes([seg[22], seg[23]])).clamp(SEGMENT_HEADER_BYTES, rest);
    let len = len.min(usize::from(u16::MAX));
    seg[4..6].copy_from_slice(b"FS");
    seg[7] = 1;
    seg[8..12].copy_from_slice(&ADDR.file.to_le_bytes());
    seg[12..16].copy_from_slice(&ADDR.block.to_le_bytes());
    seg[16..20].copy_from_slice(&(at as u32).to_le_bytes());
    seg[22..24].copy_from_slice(&(len as u16).to_le_bytes());
    let crc = masked_crc32c(&seg[4..len]);
    seg[..4].copy_from_slice(&crc.to_le_bytes());
    Some(len)
}

fuzz_target!(|data: &[u8]| {
    segment(data);
    block(data);
    let mut sealed = data.to_vec();
    if reseal(&mut sealed, 0).is_some() {
        segment(&sealed);
    }
    // Every segment of a block resealed in turn (at most a block's worth).
    let mut at = 0;
    let mut segments = 0;
    while segments < 256 {
        match reseal(&mut sealed, at) {
            Some(len) => at += len,
            None => break,
        }
        segments += 1;
    }
    block(&sealed);
});
