//! The node table's encoding: roundtrips, every damaged byte and every truncation detected,
//! malformed tables with valid checksums refused; its bookkeeping of live and dead slots.

use lamina_core::checksum::seal;
use lamina_core::codec::{Decode, Encode, put_varint};
use lamina_latree::node::{NodeId, NodeTable};
use proptest::prelude::*;

/// A table after writing `writes` (ids, in order) and freeing `frees`.
fn table_of(writes: &[u64], frees: &[u64]) -> NodeTable {
    let mut table = NodeTable::new(1 << 20);
    for &id in writes {
        let slot = table.next_slot().unwrap();
        table.place(NodeId(id), slot);
    }
    for &id in frees {
        table.remove(NodeId(id));
    }
    table
}

proptest! {
    #[test]
    fn tables_roundtrip(
        writes in proptest::collection::vec(0u64..5000, 0..200),
        frees in proptest::collection::vec(0u64..5000, 0..20),
    ) {
        let table = table_of(&writes, &frees);
        let bytes = table.encode();
        prop_assert_eq!(bytes.len(), table.encoded_len());
        prop_assert_eq!(NodeTable::decode(&bytes).unwrap(), table.clone());
        prop_assert_eq!(table.dead_slots(), table.head() - table.live_nodes());
    }
}

#[test]
fn live_and_dead_slots_are_counted() {
    let table = table_of(&[3, 4, 3, 9, 3], &[9]);
    assert_eq!(table.head(), 5);
    assert_eq!(table.live_nodes(), 2);
    assert_eq!(table.dead_slots(), 3);
    assert_eq!(table.slot(NodeId(3)), Some(4));
    assert_eq!(table.slot(NodeId(9)), None);
    assert_eq!(table.ids(), [NodeId(3), NodeId(4)]);
    let mut full = NodeTable::new(2);
    for id in 0..2 {
        let slot = full.next_slot().unwrap();
        assert_eq!(full.place(NodeId(id), slot), None);
    }
    assert!(full.next_slot().is_err());
}

#[test]
fn every_damaged_byte_and_truncation_is_detected() {
    let bytes = table_of(&[3, 4, 3, 9, 3, 700], &[9]).encode();
    for at in 0..bytes.len() {
        for flip in [0x01u8, 0x80] {
            let mut bad = bytes.clone();
            bad[at] ^= flip;
            assert!(NodeTable::decode(&bad).is_err(), "byte {at}");
        }
    }
    for len in 0..bytes.len() {
        assert!(NodeTable::decode(&bytes[..len]).is_err(), "{len} bytes");
    }
}

#[test]
fn malformed_tables_with_valid_checksums_are_refused() {
    // version, slots_max, head, count, then (id gap, slot) pairs.
    let sealed = |fields: &[u64]| {
        let mut out = Vec::new();
        seal(&mut out, |out| {
            out.push(fields[0] as u8);
            for &f in &fields[1..] {
                put_varint(out, f);
            }
        });
        out
    };
    assert!(NodeTable::decode(&sealed(&[1, 10, 2, 2, 0, 0, 0, 1])).is_ok());
    let cases: [(&str, &[u64]); 6] = [
        ("version", &[2, 10, 2, 2, 0, 0, 0, 1]),
        ("head past the partition", &[1, 10, 11, 0]),
        ("more ids than slots written", &[1, 10, 1, 2, 0, 0, 0, 1]),
        ("slot past the head", &[1, 10, 2, 1, 0, 2]),
        ("slot used twice", &[1, 10, 2, 2, 0, 0, 0, 0]),
        ("trailing bytes", &[1, 10, 2, 1, 0, 0, 5]),
    ];
    for (what, fields) in cases {
        assert!(NodeTable::decode(&sealed(fields)).is_err(), "{what} accepted");
    }
}
