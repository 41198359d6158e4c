//! `lamina_storage::pmem::RegionHeader` (and the layout it recomputes), raw and resealed.
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_storage::pmem::RegionHeader;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    if let Ok(header) = RegionHeader::decode(bytes) {
        assert_eq!(header.encode(), bytes, "accepted bytes must be the canonical encoding");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    // The CRC sits at bytes 48..52, over bytes 0..48; bytes 52..64 are reserved zeros.
    if data.len() >= 48 {
        let mut sealed = data[..48].to_vec();
        let crc = masked_crc32c(&sealed);
        sealed.extend_from_slice(&crc.to_le_bytes());
        sealed.extend_from_slice(&[0; 4]);
        check(&sealed);
    }
});
