//! `lamina_storage::log::Record` and a chunk payload of records (no checksum of their own).
#![no_main]

use lamina_core::codec::{Decode, Encode};
use lamina_storage::log::Record;
use lamina_storage::log::record::decode_records;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = Record::decode(data) {
        assert_eq!(record.encode(), data, "accepted bytes must be the canonical encoding");
    }
    if let Ok(records) = decode_records(data) {
        let mut again = Vec::new();
        for r in &records {
            r.encode_to(&mut again);
        }
        assert_eq!(again, data);
    }
});
