//! `lamina_storage::log::chunk::ChunkHeader`, raw and with its header CRC resealed.
#![no_main]

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_storage::log::chunk::{CHUNK_HEADER_BYTES, ChunkHeader};
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    if let Ok(header) = ChunkHeader::decode(bytes) {
        assert_eq!(ChunkHeader::decode(&header.encode()), Ok(header));
        let _ = (header.chunk_len(), header.end());
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    // The header CRC sits at bytes 4..8, over bytes 8..64.
    if data.len() >= CHUNK_HEADER_BYTES {
        let mut sealed = data[..CHUNK_HEADER_BYTES].to_vec();
        let crc = masked_crc32c(&sealed[8..]);
        sealed[4..8].copy_from_slice(&crc.to_le_bytes());
        check(&sealed);
    }
});
