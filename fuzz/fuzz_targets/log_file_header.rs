//! `lamina_storage::log::chunk::FileHeader` (block 0 of a log file), raw and resealed.
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_storage::log::chunk::FileHeader;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    let _ = FileHeader::parse(bytes, std::path::Path::new("log"));
    if let Ok(header) = FileHeader::decode(bytes) {
        // The 3 reserved bytes are covered by the CRC but not decoded: compare values.
        assert_eq!(FileHeader::decode(&header.encode()), Ok(header));
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    // The CRC sits at bytes 56..60, over bytes 0..56.
    if data.len() >= 56 {
        let mut sealed = data[..56].to_vec();
        let crc = masked_crc32c(&sealed);
        sealed.extend_from_slice(&crc.to_le_bytes());
        check(&sealed);
    }
});
