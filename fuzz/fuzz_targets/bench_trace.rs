//! `lamina_bench::workload::TraceRecord` (one record of a bench trace; the frame's CRC covers
//! it, so the payload parser must stand on its own).
#![no_main]

use lamina_bench::workload::TraceRecord;
use lamina_core::codec::{Decode, Encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = TraceRecord::decode(data) {
        assert_eq!(record.encode(), data, "accepted bytes must be the canonical encoding");
    }
});
