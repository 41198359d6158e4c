//! `lamina_storage::pmem::PPtr` (a persistent pointer: exactly 16 bytes).
#![no_main]

use lamina_core::codec::{Decode, Encode};
use lamina_storage::pmem::PPtr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match PPtr::decode(data) {
        Ok(p) => assert_eq!(p.encode(), data),
        Err(_) => assert_ne!(data.len(), 16),
    }
});
