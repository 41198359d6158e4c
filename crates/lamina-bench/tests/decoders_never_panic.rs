//! The bench trace's decoders ([`TraceRecord`] and the file reader [`TraceReader`]) refuse
//! arbitrary bytes with an error and never panic: arbitrary byte strings, valid encodings with
//! flipped bytes, truncations and extensions, and arbitrary trace files. Whenever a record
//! decodes from mutated bytes (no checksum covers a record's payload: the frame's CRC does),
//! re-encoding it must decode to the same value. The cargo-fuzz target
//! `fuzz/fuzz_targets/bench_trace.rs` runs the same decoder with coverage guidance; this file
//! is what CI runs.

use lamina_bench::Op;
use lamina_bench::Value;
use lamina_bench::workload::{TRACE_MAGIC, TRACE_VERSION, TracePhase, TraceReader, TraceRecord};
use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_core::testkit::mutation::{apply, decode_checked, mutation};
use proptest::prelude::*;

fn value_strategy() -> impl Strategy<Value = Value> {
    (0u32..=4096, any::<u64>()).prop_map(|(len, fill)| Value { len, fill })
}

fn record_strategy() -> impl Strategy<Value = TraceRecord> {
    let key = proptest::collection::vec(any::<u8>(), 1..16);
    let op = prop_oneof![
        key.clone().prop_map(|key| Op::Get { key }),
        (key.clone(), value_strategy()).prop_map(|(key, value)| Op::Put { key, value }),
        key.clone().prop_map(|key| Op::Delete { key }),
        (
            key.clone(),
            proptest::option::of(value_strategy()),
            proptest::option::of(value_strategy())
        )
            .prop_map(|(key, expected, new)| Op::Cas { key, expected, new }),
        (key.clone(), any::<u32>()).prop_map(|(start, limit)| Op::Scan { start, limit }),
        (key, value_strategy()).prop_map(|(key, value)| Op::Rmw { key, value }),
    ];
    (any::<bool>(), op).prop_map(|(run, op)| TraceRecord {
        phase: if run { TracePhase::Run } else { TracePhase::Preload },
        op,
    })
}

/// Reads every record of a trace file holding `bytes`; stops at the first error.
fn read_trace(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace");
    std::fs::write(&path, bytes).unwrap();
    let Ok(mut reader) = TraceReader::open(&path) else { return };
    // Each record takes at least its 8-byte frame, so this bounds a correct reader's loop.
    for _ in 0..=bytes.len() / 8 {
        match reader.read_record() {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
    panic!("the reader returned more records than the file can hold");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn record_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        decode_checked::<TraceRecord>(&bytes);
    }

    #[test]
    fn record_survives_mutations(record in record_strategy(), m in mutation()) {
        prop_assert_eq!(TraceRecord::decode(&record.encode()), Ok(record.clone()));
        decode_checked::<TraceRecord>(&apply(record.encode(), &m));
    }

    #[test]
    fn trace_file_reader_survives_arbitrary_files(
        records in proptest::collection::vec(record_strategy(), 0..4),
        m in mutation(),
        arbitrary in proptest::collection::vec(any::<u8>(), 0..64),
        reseal in any::<bool>(),
    ) {
        let mut file = TRACE_MAGIC.to_vec();
        file.extend_from_slice(&TRACE_VERSION.to_le_bytes());
        file.extend_from_slice(&[0; 4]);
        for r in &records {
            // Mutate each payload and, half the time, frame it with a correct CRC so the
            // record decoder sees the mutation.
            let payload = apply(r.encode(), &m);
            let crc = if reseal { masked_crc32c(&payload) } else { masked_crc32c(&r.encode()) };
            file.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            file.extend_from_slice(&crc.to_le_bytes());
            file.extend_from_slice(&payload);
        }
        read_trace(&file);
        read_trace(&apply(file.clone(), &m));
        read_trace(&arbitrary);
        file.truncate(16);
        file.extend_from_slice(&arbitrary);
        read_trace(&file);
    }
}
