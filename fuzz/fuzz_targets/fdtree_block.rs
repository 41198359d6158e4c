//! `lamina_fdtree::block::Block` (a level block's payload; the storage block's CRC covers it,
//! so the payload parser must stand on its own), with the default and with tiny limits.
#![no_main]

use lamina_core::codec::{Decode, Encode};
use lamina_fdtree::block::Block;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(block) = Block::decode(data) {
        assert_eq!(block.encode(), data, "accepted bytes must be the canonical encoding");
    }
    let _ = Block::decode_payload(data, 4, 4);
});
