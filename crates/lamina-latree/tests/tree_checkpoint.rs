//! Checkpoints and reopening: a reopened tree is the checkpointed one (a `BTreeMap` oracle,
//! `verify()`), on `nand-toshiba` (out of place) and `ssd-msp7525` (copy-on-write in place);
//! the checkpoint's encoding roundtrips and refuses every truncation and bit flip; other
//! options are `Incompatible`; damaged or cut files are `Corruption` naming the file or read
//! exactly as written, never a panic; freed node slots are reused after commits, so steady
//! overwrites do not grow the node file. Memory backend.

use std::collections::BTreeMap;

use lamina_core::Error;
use lamina_core::codec::{Decode, Encode};
use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{
    BUFFER_FILE, BUFFER_FILE_1, LaTree, LaTreeOptions, NODE_FILE, NODE_FILE_1, TreeCheckpoint,
};
use lamina_storage::{DeviceProfile, MemoryStorage, OpenMode, Storage};
use proptest::prelude::*;

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(device: DeviceProfile) -> LaTreeOptions {
    let mut options = LaTreeOptions::for_device(device);
    options.node_bytes = NodeLayout::node_bytes_min_for(4, 12).max(96);
    options.key_bytes_max = 4;
    options.value_bytes_max = 12;
    options.buffer_entries_max = 6;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 2048;
    options
}

fn devices() -> [DeviceProfile; 2] {
    [DeviceProfile::nand_toshiba(), DeviceProfile::ssd_msp7525()]
}

fn key(k: u32) -> Vec<u8> {
    format!("{k:04}").into_bytes()
}

/// `count` updates of keys below `keys` from `seed`: mostly puts, every fourth a delete.
fn updates(tree: &mut LaTree, oracle: &mut Oracle, seed: u32, count: u32, keys: u32) {
    for i in 0..count {
        let x = (seed.wrapping_mul(7919).wrapping_add(i.wrapping_mul(104_729))) % keys;
        if i % 4 == 3 {
            tree.delete(&key(x)).unwrap();
            oracle.remove(&key(x));
        } else {
            let value = vec![(i % 251) as u8; (i % 13) as usize];
            tree.put(&key(x), &value).unwrap();
            oracle.insert(key(x), value);
        }
    }
}

fn assert_matches(tree: &LaTree, oracle: &Oracle) {
    tree.verify().unwrap();
    let all = tree.range(b"", None, usize::MAX).unwrap();
    let want: Vec<_> = oracle.clone().into_iter().collect();
    assert_eq!(all, want);
}

/// Checkpoints, "commits" (encodes and decodes, as the engine's superblock would carry it).
fn checkpoint(tree: &mut LaTree) -> TreeCheckpoint {
    let checkpoint = tree.checkpoint().unwrap();
    let bytes = checkpoint.encode();
    let decoded = TreeCheckpoint::decode(&bytes).unwrap();
    // Equal as encoded (ids freed since the last commit decode as free, as they are in the
    // state the checkpoint records).
    assert_eq!(decoded.encode(), bytes);
    tree.checkpoint_committed();
    decoded
}

#[test]
fn a_reopened_tree_is_the_checkpointed_one() {
    for device in devices() {
        let storage = MemoryStorage::new();
        let mut tree = LaTree::create(&storage, options(device)).unwrap();
        let mut oracle = Oracle::new();
        // Empty (a leaf root), then grown with pending buffer entries.
        let empty = checkpoint(&mut tree);
        assert_eq!(empty.root_level, 0);
        updates(&mut tree, &mut oracle, 1, 2000, 700);
        let committed = checkpoint(&mut tree);
        assert!(committed.root_level >= 2 && !committed.buffers.is_empty(), "{device}");
        let stats = tree.verify().unwrap();
        drop(tree);
        let mut tree = LaTree::open(&storage, options(device), &committed).unwrap();
        assert_eq!(tree.verify().unwrap(), stats, "{device}: the same nodes and buffers");
        assert_matches(&tree, &oracle);
        for k in 0..700 {
            assert_eq!(tree.get(&key(k)).unwrap(), oracle.get(&key(k)).cloned());
        }
        // It keeps working: more updates, another checkpoint, another reopen.
        updates(&mut tree, &mut oracle, 2, 1500, 700);
        let next = checkpoint(&mut tree);
        assert!(next.next_seq > committed.next_seq);
        drop(tree);
        let tree = LaTree::open(&storage, options(device), &next).unwrap();
        assert_matches(&tree, &oracle);
    }
}

#[test]
fn a_tree_that_is_not_crash_consistent_reopens_after_a_clean_checkpoint() {
    let storage = MemoryStorage::new();
    let mut volatile = options(DeviceProfile::ssd_msp7525());
    volatile.crash_consistent = false;
    let mut tree = LaTree::create(&storage, volatile.clone()).unwrap();
    let mut oracle = Oracle::new();
    updates(&mut tree, &mut oracle, 8, 1500, 500);
    let committed = checkpoint(&mut tree);
    assert_eq!(tree.node_cache().store().stats().free_slots, 0, "plain in place, no table");
    drop(tree);
    let mut tree = LaTree::open(&storage, volatile.clone(), &committed).unwrap();
    assert_matches(&tree, &oracle);
    updates(&mut tree, &mut oracle, 9, 500, 500);
    let committed = checkpoint(&mut tree);
    drop(tree);
    assert_matches(&LaTree::open(&storage, volatile, &committed).unwrap(), &oracle);
}

#[test]
fn checkpointing_twice_in_a_row_changes_nothing_on_file() {
    for device in devices() {
        let storage = MemoryStorage::new();
        let mut tree = LaTree::create(&storage, options(device)).unwrap();
        let mut oracle = Oracle::new();
        updates(&mut tree, &mut oracle, 3, 1000, 400);
        let first = checkpoint(&mut tree);
        let writes = storage.io_stats().writes();
        let second = checkpoint(&mut tree);
        assert_eq!(storage.io_stats().writes(), writes, "{device}: nothing left to write");
        assert_eq!(first, second);
        drop(tree);
        // The first (superseded) checkpoint still opens: nothing it reaches was rewritten.
        let tree = LaTree::open(&storage, options(device), &first).unwrap();
        assert_matches(&tree, &oracle);
    }
}

#[test]
fn the_encoding_refuses_every_truncation_and_bit_flip() {
    for (device, reclaimed) in devices().into_iter().flat_map(|d| [(d, false), (d, true)]) {
        let storage = MemoryStorage::new();
        let mut tree = LaTree::create(&storage, options(device)).unwrap();
        updates(&mut tree, &mut Oracle::new(), 4, 600, 300);
        if reclaimed {
            assert!(tree.reclaim().unwrap());
            updates(&mut tree, &mut Oracle::new(), 5, 100, 300);
        }
        let checkpoint = tree.checkpoint().unwrap();
        assert_eq!(checkpoint.partition, u8::from(reclaimed));
        let bytes = checkpoint.encode();
        assert_eq!(bytes.len(), checkpoint.encoded_len());
        assert_eq!(TreeCheckpoint::decode(&bytes).unwrap(), checkpoint);
        for len in 0..bytes.len() {
            assert!(TreeCheckpoint::decode(&bytes[..len]).is_err(), "{device}: cut at {len}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(TreeCheckpoint::decode(&bad).is_err(), "{device}: bit {bit}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(TreeCheckpoint::decode(&longer).is_err());
    }
}

/// A version-1 checkpoint (before partitions: no `partition` field) reads as partition 0.
#[test]
fn a_version_1_checkpoint_reads_as_partition_0() {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, options(DeviceProfile::nand_toshiba())).unwrap();
    let mut oracle = Oracle::new();
    updates(&mut tree, &mut oracle, 9, 500, 300);
    let checkpoint = tree.checkpoint().unwrap();
    assert_eq!(checkpoint.partition, 0);
    let v2 = checkpoint.encode();
    // The partition byte follows `buffer_pages` (docs/format/latree-checkpoint.md): rebuild
    // the body without it, as version 1, and reseal it.
    let nodes = checkpoint.nodes.encode().len() as u64;
    let at = 1
        + 4
        + 4
        + 4
        + 1
        + 1
        + 4
        + varint_len(checkpoint.root.0)
        + 1
        + varint_len(checkpoint.next_seq)
        + varint_len(checkpoint.next_buffer)
        + varint_len(nodes)
        + nodes as usize
        + varint_len(checkpoint.buffer_pages);
    let body = &v2[..v2.len() - 4];
    assert_eq!(body[at], 0, "the partition byte");
    let mut v1_body = body.to_vec();
    v1_body[0] = 1;
    v1_body.remove(at);
    let mut v1 = Vec::new();
    lamina_core::checksum::seal(&mut v1, |out| out.extend_from_slice(&v1_body));
    assert_eq!(TreeCheckpoint::decode(&v1).unwrap(), checkpoint);
    // Partitions other than 0 and 1 are refused.
    let mut bad = body.to_vec();
    bad[at] = 2;
    let mut resealed = Vec::new();
    lamina_core::checksum::seal(&mut resealed, |out| out.extend_from_slice(&bad));
    assert!(TreeCheckpoint::decode(&resealed).is_err());
    tree.checkpoint_committed();
    drop(tree);
    let tree = LaTree::open(&storage, options(DeviceProfile::nand_toshiba()), &checkpoint);
    assert_matches(&tree.unwrap(), &oracle);
}

fn varint_len(x: u64) -> usize {
    lamina_core::codec::varint_len(x)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Decoding arbitrary bytes never panics (the checksum refuses nearly all of them).
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = TreeCheckpoint::decode(&bytes);
    }
}

#[test]
fn other_shape_options_are_incompatible() {
    let storage = MemoryStorage::new();
    let device = DeviceProfile::ssd_msp7525();
    let mut tree = LaTree::create(&storage, options(device)).unwrap();
    updates(&mut tree, &mut Oracle::new(), 5, 300, 100);
    let committed = checkpoint(&mut tree);
    drop(tree);
    let changes: [fn(&mut LaTreeOptions); 5] = [
        |o| o.levels_per_buffer = 3,
        |o| o.node_bytes += 16,
        |o| o.value_bytes_max -= 1,
        |o| o.buffer_page_bytes = 1024,
        |o| o.crash_consistent = false,
    ];
    for (i, change) in changes.iter().enumerate() {
        let mut other = options(device);
        change(&mut other);
        let err = LaTree::open(&storage, other, &committed).unwrap_err();
        assert!(matches!(err, Error::Incompatible { .. }), "change {i}: {err}");
    }
    // Memory, the savings rule and U may change.
    let mut other = options(device);
    other.memory_bytes = 1 << 20;
    other.buffer_entries_max = 100;
    LaTree::open(&storage, other, &committed).unwrap();
}

/// Opens `checkpoint` and reads everything: the oracle exactly, or `Corruption` naming
/// `file`.
fn open_and_read(
    storage: &dyn Storage,
    device: &DeviceProfile,
    c: &TreeCheckpoint,
) -> Result<Oracle, Error> {
    let tree = LaTree::open(storage, options(*device), c)?;
    tree.verify()?;
    Ok(tree.range(b"", None, usize::MAX)?.into_iter().collect())
}

fn assert_corruption_of(err: &Error, file: &str, context: &str) {
    let named =
        matches!(err, Error::Corruption { file: f, .. } if f.to_string_lossy().contains(file));
    assert!(named, "{context}: {err}");
}

#[test]
fn damaged_files_are_corruption_naming_the_file_or_read_exactly() {
    for (device, reclaimed) in devices().into_iter().flat_map(|d| [(d, false), (d, true)]) {
        let storage = MemoryStorage::new();
        let mut tree = LaTree::create(&storage, options(device)).unwrap();
        let mut oracle = Oracle::new();
        updates(&mut tree, &mut oracle, 6, 800, 300);
        if reclaimed {
            // The tree moves to partition 1 (both files on NAND, the buffer file on SSDs).
            assert!(tree.reclaim().unwrap());
            updates(&mut tree, &mut oracle, 8, 300, 300);
        }
        let committed = checkpoint(&mut tree);
        drop(tree);
        let expected = match (reclaimed, device.name) {
            (false, _) => [NODE_FILE, BUFFER_FILE],
            (true, "nand-toshiba") => [NODE_FILE_1, BUFFER_FILE_1],
            (true, _) => [NODE_FILE, BUFFER_FILE_1],
        };
        assert_eq!(committed.files(), expected);
        for name in committed.files() {
            let file = storage.open(name, OpenMode::Existing).unwrap();
            let len = file.len().unwrap();
            let mut detected = 0;
            // About 300 bytes spread over the file, one bit each.
            for at in (0..len).step_by((len / 300) as usize | 1) {
                let mut byte = [0u8];
                file.read_exact_at(at, &mut byte).unwrap();
                file.write_all_at(at, &[byte[0] ^ (1 << (at % 8))]).unwrap();
                match open_and_read(&storage, &device, &committed) {
                    Ok(read) => assert_eq!(read, oracle, "{device} {name} byte {at}"),
                    Err(err) => {
                        assert_corruption_of(&err, name, &format!("{device} byte {at}"));
                        detected += 1;
                    }
                }
                file.write_all_at(at, &byte).unwrap();
            }
            assert!(detected > 0, "{device} {name}");
            // Cut short.
            let saved = storage.read_all(name).unwrap();
            file.set_len(len / 2).unwrap();
            let err = open_and_read(&storage, &device, &committed).unwrap_err();
            assert_corruption_of(&err, name, &format!("{device} cut"));
            file.write_all_at(0, &saved).unwrap();
        }
        assert_eq!(open_and_read(&storage, &device, &committed).unwrap(), oracle);
    }
}

#[test]
fn steady_overwrites_reuse_node_slots() {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, options(DeviceProfile::ssd_msp7525())).unwrap();
    let mut oracle = Oracle::new();
    updates(&mut tree, &mut oracle, 7, 2000, 300);
    let mut slots = Vec::new();
    for round in 0..40 {
        // Overwrites only: the key set stays, so the tree's size stays.
        for i in 0..200u32 {
            let k = key((round * 200 + i) * 7 % 300);
            if oracle.contains_key(&k) {
                tree.put(&k, &[round as u8; 5]).unwrap();
                oracle.insert(k, vec![round as u8; 5]);
            }
        }
        checkpoint(&mut tree);
        slots.push(tree.node_cache().store().stats().slots);
    }
    assert_matches(&tree, &oracle);
    eprintln!("node slots after each checkpoint: {slots:?}");
    let (early, late) = (slots[9], slots[39]);
    assert!(late <= early + early / 10, "node slots grew from {early} to {late}: {slots:?}");
    let stats = tree.node_cache().store().stats();
    assert!(stats.live_ids * 3 >= stats.slots, "{stats:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random updates and lookups with a checkpoint, commit and reopen every `period` ops.
    #[test]
    fn checkpoint_reopen_cycles_match_the_oracle(
        ops in prop::collection::vec((0u32..200, 0u8..8, any::<u8>()), 200..1200),
        period in 20usize..300,
        ssd in any::<bool>(),
    ) {
        let device = if ssd { DeviceProfile::ssd_msp7525() } else { DeviceProfile::nand_toshiba() };
        let storage = MemoryStorage::new();
        // Small partitions: reclamations happen between the checkpoints.
        let options = |device| LaTreeOptions { partition_bytes: 4 << 10, ..options(device) };
        let mut tree = LaTree::create(&storage, options(device)).unwrap();
        let mut oracle = Oracle::new();
        for (step, &(k, kind, v)) in ops.iter().enumerate() {
            match kind {
                0 | 1 => {
                    tree.delete(&key(k)).unwrap();
                    oracle.remove(&key(k));
                }
                2 => prop_assert_eq!(tree.get(&key(k)).unwrap(), oracle.get(&key(k)).cloned()),
                _ => {
                    let value = vec![v; usize::from(v % 13)];
                    tree.put(&key(k), &value).unwrap();
                    oracle.insert(key(k), value);
                }
            }
            if step % period == period - 1 {
                let committed = checkpoint(&mut tree);
                drop(tree);
                tree = LaTree::open(&storage, options(device), &committed).unwrap();
                assert_matches(&tree, &oracle);
            }
        }
        assert_matches(&tree, &oracle);
    }
}
