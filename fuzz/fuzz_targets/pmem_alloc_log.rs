//! `lamina_storage::pmem::AllocLogRecord` (the allocator's micro-log), raw and resealed.
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_storage::pmem::AllocLogRecord;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    let _ = AllocLogRecord::decode_slot(bytes);
    if let Ok(record) = AllocLogRecord::decode(bytes) {
        assert_eq!(record.encode(), bytes, "accepted bytes must be the canonical encoding");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    // The CRC sits at bytes 56..60, over bytes 0..56; bytes 60..64 are reserved zeros.
    if data.len() >= 56 {
        let mut sealed = data[..56].to_vec();
        let crc = masked_crc32c(&sealed);
        sealed.extend_from_slice(&crc.to_le_bytes());
        sealed.extend_from_slice(&[0; 4]);
        check(&sealed);
    }
});
