//! The FD+tree's decoders (level block payload [`Block`], [`Manifest`], FD+FC's
//! [`MergeProgress`]) refuse arbitrary bytes
//! with an error and never panic: arbitrary byte strings, valid encodings with flipped bytes,
//! truncations and extensions, and (for the checksummed manifest) arbitrary bodies sealed with
//! a correct checksum. Whenever a decoder accepts mutated input, re-encoding the decoded value
//! must decode to the same value. The cargo-fuzz targets in `fuzz/` run the same decoders
//! with coverage guidance; this file is what CI runs.

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode};
use lamina_core::testkit::mutation::{Mutation, apply, decode_checked, mutation};
use lamina_fdtree::Counters;
use lamina_fdtree::Trigger;
use lamina_fdtree::block::Block;
use lamina_fdtree::entry::{BlockPtr, Entry};
use lamina_fdtree::fc::{MergeProgress, NewLevelProgress};
use lamina_fdtree::level::LevelStats;
use lamina_fdtree::manifest::{LevelRecord, Manifest};
use proptest::prelude::*;

fn entry_strategy() -> impl Strategy<Value = Entry> {
    let key = proptest::collection::vec(any::<u8>(), 1..12);
    let value = proptest::collection::vec(any::<u8>(), 0..12);
    prop_oneof![
        (proptest::collection::vec(any::<u8>(), 0..12), any::<(u32, u32)>())
            .prop_map(|(key, (file, index))| Entry::Fence { key, ptr: BlockPtr { file, index } }),
        key.clone().prop_map(|key| Entry::Delete { key }),
        (key, value).prop_map(|(key, value)| Entry::Insert { key, value }),
    ]
}

fn block_strategy() -> impl Strategy<Value = Block> {
    proptest::collection::vec(entry_strategy(), 0..8).prop_map(|mut entries| {
        entries.sort_by(Entry::order);
        entries.dedup_by(|a, b| a.order(b).is_eq());
        Block { entries }
    })
}

fn stats(s: [u64; 5]) -> LevelStats {
    LevelStats {
        data_bytes: s[0],
        fence_bytes: s[1],
        leading_fence_bytes: s[2],
        inserts: s[3],
        deletes: s[4],
    }
}

fn manifest_strategy() -> impl Strategy<Value = Manifest> {
    (
        any::<[u32; 7]>(),
        any::<[u64; 6]>(),
        proptest::collection::vec(any::<(u64, u32, u32, [u64; 5])>(), 0..4),
    )
        .prop_map(|(w, d, levels)| Manifest {
            block_bytes: w[0],
            size_ratio: w[1],
            kappa0_blocks: d[0],
            key_bytes_max: w[2],
            value_bytes_max: w[3],
            next_file_id: w[4],
            counters: Counters {
                inserts: d[1],
                deletes: d[2],
                insert_bytes: d[3],
                cancelled_bytes: d[4],
            },
            levels: levels
                .into_iter()
                .map(|(label, file_id, blocks, s)| LevelRecord {
                    label,
                    file_id,
                    blocks,
                    stats: stats(s),
                })
                .collect(),
            top_file: w[5],
            top_blocks: w[6],
            applied_seq: d[5],
            merge_file: w[6] ^ w[0],
        })
}

fn progress_strategy() -> impl Strategy<Value = MergeProgress> {
    (
        any::<(bool, [u8; 2], u64, u64)>(),
        proptest::collection::vec(any::<u8>(), 0..10),
        any::<(Option<(u32, u32)>, Option<(u32, u32)>)>(),
        proptest::collection::vec(any::<(u32, u32)>(), 0..3),
        proptest::collection::vec(
            (any::<(u8, u32, u32, [u64; 5])>(), proptest::option::of(block_strategy())),
            0..3,
        ),
        proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..6), any::<(u32, u32)>()),
            0..3,
        ),
    )
        .prop_map(|(head, wavefront_key, ptrs, old_heads, levels, fences)| {
            let ptr = |p: Option<(u32, u32)>| p.map(|(file, index)| BlockPtr { file, index });
            MergeProgress {
                trigger: if head.0 { Trigger::Overflow } else { Trigger::Underflow },
                m: u64::from(head.1[0]) + 1,
                height_before: u64::from(head.1[1]),
                skipped_preemptively: head.2,
                tightened_preemptively: head.3,
                started: head.3 % 2 == 0,
                wavefront_key,
                wavefront_ptr: ptr(ptrs.0),
                p_last: ptr(ptrs.1),
                cancellations: head.2 ^ head.3,
                cancelled_bytes: head.3,
                old_heads,
                new_levels: levels
                    .into_iter()
                    .map(|((label, file_id, flushed_blocks, s), tail)| NewLevelProgress {
                        label: u64::from(label),
                        file_id,
                        flushed_blocks,
                        stats: stats(s),
                        tail: tail.map(|b| b.entries),
                    })
                    .collect(),
                top_fences: fences
                    .into_iter()
                    .map(|(k, (file, index))| (k, BlockPtr { file, index }))
                    .collect(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn block_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        decode_checked::<Block>(&bytes);
        let _ = Block::decode_payload(&bytes, 4, 4);
    }

    /// No checksum covers a payload (the storage block's CRC does), so mutations may decode:
    /// whatever decodes must re-encode to the same bytes.
    #[test]
    fn block_survives_mutations(block in block_strategy(), m in mutation()) {
        prop_assert_eq!(Block::decode(&block.encode()), Ok(block.clone()));
        let bytes = apply(block.encode(), &m);
        let _ = Block::decode_payload(&bytes, 4, 4);
        decode_checked::<Block>(&bytes);
    }

    #[test]
    fn manifest_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        decode_checked::<Manifest>(&bytes);
    }

    #[test]
    fn manifest_survives_mutations(manifest in manifest_strategy(), m in mutation()) {
        let bytes = apply(manifest.encode(), &m);
        if let Some(back) = decode_checked::<Manifest>(&bytes) {
            prop_assert_eq!(back, manifest, "a mutated manifest passed its CRC");
        }
    }

    #[test]
    fn manifest_behind_a_valid_crc(
        manifest in manifest_strategy(),
        m in mutation(),
        count in any::<u64>(),
    ) {
        let bytes = manifest.encode();
        let mut body = apply(bytes[..bytes.len() - 4].to_vec(), &m);
        if let Mutation::Extend(_) = m {
            // Also try a huge level count in place of the real one (offset 56).
            if body.len() > 56 {
                body[56] = (count as u8) | 0x80;
            }
        }
        let crc = masked_crc32c(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        decode_checked::<Manifest>(&body);
    }

    #[test]
    fn merge_progress_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        decode_checked::<MergeProgress>(&bytes);
    }

    #[test]
    fn merge_progress_survives_mutations(progress in progress_strategy(), m in mutation()) {
        let bytes = progress.encode();
        prop_assert_eq!(MergeProgress::decode(&bytes), Ok(progress.clone()));
        if let Some(back) = decode_checked::<MergeProgress>(&apply(bytes, &m)) {
            prop_assert_eq!(back, progress, "a mutated progress record passed its CRC");
        }
    }

    #[test]
    fn merge_progress_behind_a_valid_crc(progress in progress_strategy(), m in mutation()) {
        let bytes = progress.encode();
        let mut body = apply(bytes[..bytes.len() - 4].to_vec(), &m);
        let crc = masked_crc32c(&body);
        body.extend_from_slice(&crc.to_le_bytes());
        decode_checked::<MergeProgress>(&body);
    }
}
