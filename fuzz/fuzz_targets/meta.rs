//! `lamina::Meta` (the database directory's metadata file), raw and with its CRC resealed.
#![no_main]

use lamina::Meta;
use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    if let Ok(meta) = Meta::decode(bytes) {
        assert_eq!(meta.encode(), bytes, "accepted bytes must be the canonical encoding");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    // Reseal: the CRC covers everything before the last 4 bytes.
    if data.len() >= 4 {
        let mut sealed = data[..data.len() - 4].to_vec();
        let crc = masked_crc32c(&sealed);
        sealed.extend_from_slice(&crc.to_le_bytes());
        check(&sealed);
    }
});
