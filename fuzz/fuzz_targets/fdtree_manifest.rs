//! `lamina_fdtree::persist::manifest::Manifest` (the superblock payload) and
//! `persist::fences::decode` (the `fd-*.fen` file), raw and with their CRC resealed (the
//! checksum recomputed over the input and appended). Accepted bytes must be the canonical
//! encoding.
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_fdtree::persist::fences;
use lamina_fdtree::persist::manifest::Manifest;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    if let Ok(manifest) = Manifest::decode(bytes) {
        assert_eq!(manifest.encode(), bytes, "accepted bytes must be the canonical encoding");
    }
    if let Ok(f) = fences::decode(bytes, 16) {
        assert_eq!(fences::encode(&f), bytes, "accepted bytes must be the canonical encoding");
        let _ = f.at_or_before(b"k");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut sealed = data.to_vec();
    let crc = masked_crc32c(&sealed);
    sealed.extend_from_slice(&crc.to_le_bytes());
    check(&sealed);
});
