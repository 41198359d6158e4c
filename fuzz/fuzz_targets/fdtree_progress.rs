//! `lamina_fdtree::fc::MergeProgress` (an FD+FC merge's progress record, the `fd-*.mrg`
//! file), raw and with its CRC resealed (the checksum recomputed over the input and
//! appended). Accepted bytes must be the canonical encoding.
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_fdtree::fc::MergeProgress;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    if let Ok(progress) = MergeProgress::decode(bytes) {
        assert_eq!(progress.encode(), bytes, "accepted bytes must be the canonical encoding");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut sealed = data.to_vec();
    let crc = masked_crc32c(&sealed);
    sealed.extend_from_slice(&crc.to_le_bytes());
    check(&sealed);
});
