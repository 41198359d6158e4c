//! `lamina-peers`' LMDB long-key bucket, raw and with its CRC resealed. The bucket lives in a
//! private, feature-gated module; its file is pure Rust over `lamina-core`, so it is compiled
//! here directly (no LMDB needed).
#![no_main]

use lamina_core::checksum::{crc32c, mask};
use lamina_core::codec::{Decode, Encode};
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)] // only `Bucket` is used here
#[path = "../../crates/lamina-peers/src/lmdb/long_keys.rs"]
mod long_keys;

use long_keys::Bucket;

fn check(bytes: &[u8]) {
    if let Ok(bucket) = Bucket::decode(bytes) {
        assert_eq!(bucket.encode(), bytes, "accepted bytes must be the canonical encoding");
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut sealed = data.to_vec();
    let crc = mask(crc32c(&sealed));
    sealed.extend_from_slice(&crc.to_le_bytes());
    check(&sealed);
});
