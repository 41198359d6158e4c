//! `lamina_storage::Block` (the checksummed block format), raw and with its CRC resealed.
#![no_main]

use lamina_core::checksum::{crc32c, crc32c_append, mask};
use lamina_core::codec::{Decode, Encode};
use lamina_storage::Block;
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) {
    if let Ok(block) = Block::decode(bytes) {
        // Padding after the payload is covered by the CRC but not decoded: compare values.
        assert_eq!(Block::decode(&block.encode()).as_ref(), Ok(&block));
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    // Pad or cut to a 512-byte block and reseal its CRC (bytes 28..32, over the rest).
    let mut block = data.to_vec();
    block.resize(512, 0);
    let crc = crc32c_append(crc32c(&block[..28]), &block[32..]);
    block[28..32].copy_from_slice(&mask(crc).to_le_bytes());
    check(&block);
});
