//! `lamina_fdtree::format::index::LevelIndex::decode` (the `fd-*.idx` file: segment
//! directory, fences, stats and the Bloom filter) and `format::bloom::Bloom::decode_from`,
//! raw and resealed (a valid checksum appended, so the structure behind it is reached). An
//! accepted index is queried as lookups and merges query it, and must re-encode to its bytes.
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::Reader;
use lamina_fdtree::format::bloom::Bloom;
use lamina_fdtree::format::index::LevelIndex;
use libfuzzer_sys::fuzz_target;

const FILE: u32 = 7;
const KEY_MAX: usize = 16;
const BLOCK_BYTES: u32 = 4096;

fn index(bytes: &[u8]) {
    let Ok((ix, stats)) = LevelIndex::decode(bytes, FILE, KEY_MAX, BLOCK_BYTES) else { return };
    assert_eq!(ix.encode(FILE, &stats), bytes, "accepted bytes must be the canonical encoding");
    let probes: [&[u8]; 4] = [b"", b"\x00", b"k", b"\xff\xff\xff\xff"];
    for b in 0..ix.blocks().saturating_add(2) {
        for k in probes {
            let _ = (ix.segment_in_block(b, k), ix.fence_in_block(b, k));
        }
        let _ = ix.block_first_key(b);
        if b < ix.blocks() {
            let _ = ix.block_fences(b).count();
        }
    }
    for k in probes {
        let _ = (ix.segment_anywhere(k), ix.bloom().may_contain(k));
    }
}

fn bloom(bytes: &[u8]) {
    let mut r = Reader::new(bytes);
    let Ok(f) = Bloom::decode_from(&mut r) else { return };
    let _ = f.may_contain(b"k");
    let mut again = Vec::new();
    f.encode_to(&mut again);
    assert_eq!(again, bytes[..r.position()], "accepted bytes must be the canonical encoding");
}

fuzz_target!(|data: &[u8]| {
    index(data);
    bloom(data);
    let mut sealed = data.to_vec();
    let crc = masked_crc32c(&sealed);
    sealed.extend_from_slice(&crc.to_le_bytes());
    index(&sealed);
});
