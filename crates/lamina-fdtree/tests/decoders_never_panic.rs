//! Every decoder of the FD+tree's persistent structures refuses malformed bytes with an
//! error and never panics (or loops, or allocates without bound): arbitrary byte strings,
//! valid encodings with flipped bytes, truncations and extensions, and, for the checksummed
//! structures, arbitrary or mutated contents sealed with a correct checksum (random bytes
//! almost never pass a CRC, which would hide the parser behind it). Valid encodings
//! roundtrip; whatever a decoder accepts re-encodes to the bytes it was decoded from (every
//! encoding is canonical) or, for records checked by `decode_checked`, to the same value.
//! What a decoder accepted is then used the way the engine uses it (entries iterated and
//! searched, a filter probed, an index queried), which must not panic either.
//!
//! Decoders (layouts in `docs/format/fdtree-*.md`):
//! - `format::segment::parse_segment` and the entries of a segment (`EntryRun::iter`,
//!   `EntryRun::find`);
//! - `format::block::BlockEntries` (every entry of a block image, segment by segment);
//! - `format::bloom::Bloom::decode_from`;
//! - `format::index::LevelIndex::decode` (the `.idx` file);
//! - `persist::manifest::Manifest` (the superblock payload);
//! - `persist::fences::decode` (the `.fen` file);
//! - `fc::MergeProgress` (the `.mrg` file).
//!
//! Ported from v1 (whose `Block` payload decoder is gone: blocks are now segments, each with
//! its own checksum, and the manifest no longer carries counters or an `L_0` snapshot). The
//! cargo-fuzz targets in `fuzz/` run the same decoders with coverage guidance; this file is
//! what CI runs.

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, Encode, Reader};
use lamina_core::testkit::mutation::{Mutation, apply, decode_checked, mutation};
use lamina_fdtree::Trigger;
use lamina_fdtree::fc::{MergeProgress, NewLevelProgress};
use lamina_fdtree::format::block::{BlockBuilder, BlockEntries};
use lamina_fdtree::format::bloom::Bloom;
use lamina_fdtree::format::entry::{BlockPtr, Entry, EntryRef};
use lamina_fdtree::format::index::LevelIndex;
use lamina_fdtree::format::segment::{
    DataHit, FLAG_LAST, SEGMENT_HEADER_BYTES, SegmentAddr, SegmentHeader, parse_segment,
};
use lamina_fdtree::format::stats::LevelStats;
use lamina_fdtree::persist::fences;
use lamina_fdtree::persist::manifest::{LevelRecord, Manifest};
use lamina_fdtree::top::Fences;
use proptest::prelude::*;

/// Limits the decoders are given (the tree's key and value limits).
const KEY_MAX: usize = 16;
const VALUE_MAX: usize = 16;
const BLOCK_BYTES: usize = 1024;
const SEGMENT_BYTES: usize = 512;
const FILE: u32 = 7;
const ADDR: SegmentAddr = SegmentAddr { file: FILE, block: 3, offset: 0 };

fn key_strategy(min: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), min..12)
}

fn entry_strategy() -> impl Strategy<Value = Entry> {
    prop_oneof![
        (key_strategy(0), any::<(u32, u32)>())
            .prop_map(|(key, (file, index))| Entry::Fence { key, ptr: BlockPtr { file, index } }),
        (key_strategy(0), any::<u32>())
            .prop_map(|(key, cancelled_len)| Entry::Delete { key, cancelled_len }),
        (key_strategy(0), proptest::collection::vec(any::<u8>(), 0..12))
            .prop_map(|(key, value)| Entry::Insert { key, value }),
    ]
}

/// Entries in level order: by key, fence first, at most one fence and one data entry per key.
fn level_entries(max: usize) -> impl Strategy<Value = Vec<Entry>> {
    proptest::collection::vec(entry_strategy(), 0..max).prop_map(|mut entries| {
        entries.sort_by(|a, b| a.as_ref().order(&b.as_ref()));
        entries.dedup_by(|a, b| a.as_ref().order(&b.as_ref()).is_eq());
        entries
    })
}

/// One segment holding `entries` (all of them: the caller keeps it under 64 KiB).
fn segment(entries: &[Entry], addr: SegmentAddr, flags: u8) -> Vec<u8> {
    let mut out = vec![0u8; SEGMENT_HEADER_BYTES];
    for e in entries {
        e.as_ref().encode_to(&mut out);
    }
    let header = SegmentHeader { addr, flags, count: entries.len() as u16, len: out.len() as u16 };
    header.seal(&mut out);
    out
}

/// Recomputes the checksum of the segment at the start of `bytes` if its length field fits.
fn reseal_segment(bytes: &mut [u8]) -> Option<usize> {
    if bytes.len() < SEGMENT_HEADER_BYTES {
        return None;
    }
    let len = usize::from(u16::from_le_bytes([bytes[22], bytes[23]]));
    if !(SEGMENT_HEADER_BYTES..=bytes.len()).contains(&len) {
        return None;
    }
    let crc = masked_crc32c(&bytes[4..len]);
    bytes[..4].copy_from_slice(&crc.to_le_bytes());
    Some(len)
}

/// Uses a segment the way lookups and cursors do: every entry, and searches.
fn use_segment(bytes: &[u8], addr: SegmentAddr) {
    if let Ok(seg) = parse_segment(bytes, addr) {
        let mut keys = Vec::new();
        for e in seg.entries.iter(KEY_MAX, VALUE_MAX).take(1 << 16) {
            match e {
                Ok(e) => keys.push(e.key().to_vec()),
                Err(_) => break,
            }
        }
        for k in keys.iter().chain([&Vec::new(), &vec![0xff; 3]]) {
            let _ = seg.entries.find(k, KEY_MAX, VALUE_MAX);
        }
    }
}

/// Blocks built the way a merge builds them, with each block's segment directory and
/// fences; the entries that fit.
struct Built {
    blocks: Vec<Vec<u8>>,
    index: LevelIndex,
    stats: LevelStats,
    entries: Vec<Entry>,
}

fn build_level(entries: &[Entry]) -> Built {
    let mut index = LevelIndex::new(entries.len() as u64, 10);
    let mut stats = LevelStats::default();
    let mut blocks = Vec::new();
    let mut kept = Vec::new();
    let mut builder = BlockBuilder::new(BLOCK_BYTES, SEGMENT_BYTES, FILE, 0);
    let mut fences: Vec<(Vec<u8>, BlockPtr)> = Vec::new();
    let mut it = entries.iter().peekable();
    loop {
        let next =
            it.peek().filter(|e| builder.entry_count() == 0 || builder.fits([e.encoded_len()]));
        if let Some(e) = next {
            stats.add(&e.as_ref(), builder.entry_count() == 0);
            builder.push(e.as_ref());
            match e {
                Entry::Fence { key, ptr } => fences.push((key.clone(), *ptr)),
                _ => index.bloom().insert(e.key()),
            }
            kept.push((*e).clone());
            it.next();
            continue;
        }
        // The block is full, or every entry is in: finish it.
        let block = builder.index();
        let (bytes, segments) = builder.finish();
        index.add_block(block, &segments, fences.iter().map(|(k, p)| (k.as_slice(), *p)));
        fences.clear();
        blocks.push(bytes);
        if it.peek().is_none() {
            break;
        }
        builder = BlockBuilder::new(BLOCK_BYTES, SEGMENT_BYTES, FILE, block + 1);
    }
    Built { blocks, index, stats, entries: kept }
}

/// Every entry of a block image (bounded: a decoder that never ends is a bug too).
fn block_entries(bytes: &[u8], block: u32) -> Vec<Result<Entry, String>> {
    let out: Vec<_> = BlockEntries::new(bytes, FILE, block, KEY_MAX, VALUE_MAX)
        .take(1 << 16)
        .map(|e| e.map(|e| e.to_owned_entry()).map_err(|e| e.to_string()))
        .collect();
    assert!(out.len() < 1 << 16, "a block iterator that does not end");
    out
}

/// Uses a decoded index the way lookups, scans and merge-finalize do.
fn use_index(index: &LevelIndex, probes: &[Vec<u8>]) {
    let blocks = index.blocks();
    for b in 0..blocks.saturating_add(2) {
        for k in probes {
            let _ = index.segment_in_block(b, k);
            let _ = index.fence_in_block(b, k);
        }
        let _ = index.block_first_key(b);
        if b < blocks {
            let _ = index.block_fences(b).count();
        }
    }
    for k in probes {
        let _ = index.segment_anywhere(k);
        let _ = index.bloom().may_contain(k);
    }
    let _ = (index.segments(), index.fences(), index.memory_bytes());
}

fn probes() -> Vec<Vec<u8>> {
    vec![vec![], vec![0], b"k".to_vec(), vec![0x80; 5], vec![0xff; 16]]
}

/// The body of a sealed record mutated, then sealed again with a correct checksum.
fn resealed(sealed: &[u8], m: &Mutation) -> Vec<u8> {
    let mut body = apply(sealed[..sealed.len() - 4].to_vec(), m);
    let crc = masked_crc32c(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&masked_crc32c(body).to_le_bytes());
    out
}

fn decode_index(bytes: &[u8]) -> Option<(LevelIndex, LevelStats)> {
    let (index, stats) = LevelIndex::decode(bytes, FILE, KEY_MAX, BLOCK_BYTES as u32).ok()?;
    use_index(&index, &probes());
    // What was accepted re-encodes to the same bytes (the encoding is canonical).
    let again = index.encode(FILE, &stats);
    assert_eq!(again, bytes, "an accepted index does not re-encode to its bytes");
    let (back, back_stats) = LevelIndex::decode(&again, FILE, KEY_MAX, BLOCK_BYTES as u32)
        .unwrap_or_else(|e| panic!("re-encoded index refused: {e}"));
    assert_eq!(back.encode(FILE, &back_stats), again);
    assert_eq!(back_stats, stats);
    Some((index, stats))
}

fn fence_list(f: &Fences) -> Vec<(Vec<u8>, BlockPtr)> {
    f.iter().map(|(k, p)| (k.to_vec(), p)).collect()
}

fn decode_fences(bytes: &[u8]) -> Option<Fences> {
    let f = fences::decode(bytes, KEY_MAX).ok()?;
    assert_eq!(fences::encode(&f), bytes, "accepted fences do not re-encode to their bytes");
    let again = fences::decode(&fences::encode(&f), KEY_MAX)
        .unwrap_or_else(|e| panic!("re-encoded fences refused: {e}"));
    assert_eq!(fence_list(&again), fence_list(&f));
    let _ = f.at_or_before(b"k");
    Some(f)
}

fn decode_bloom(bytes: &[u8]) -> Option<Bloom> {
    let mut reader = Reader::new(bytes);
    let bloom = Bloom::decode_from(&mut reader).ok()?;
    for k in probes() {
        let _ = bloom.may_contain(&k);
    }
    let mut again = Vec::new();
    bloom.encode_to(&mut again);
    assert_eq!(again, bytes[..reader.position()], "an accepted filter re-encodes differently");
    let back = Bloom::decode_from(&mut Reader::new(&again))
        .unwrap_or_else(|e| panic!("re-encoded filter refused: {e}"));
    let mut twice = Vec::new();
    back.encode_to(&mut twice);
    assert_eq!(twice, again);
    Some(bloom)
}

fn record(label: u64, (file_id, blocks): (u32, u32)) -> LevelRecord {
    LevelRecord { label, file_id, blocks }
}

fn manifest_strategy() -> impl Strategy<Value = Manifest> {
    (
        any::<[u32; 8]>(),
        any::<[u64; 2]>(),
        proptest::collection::vec(any::<(u8, (u32, u32))>(), 0..4),
        proptest::collection::vec(any::<(u32, u32)>(), 0..4),
        proptest::collection::vec(any::<(u32, u32)>(), 0..3),
    )
        .prop_map(|(w, d, levels, runs, new_runs)| Manifest {
            block_bytes: w[0],
            segment_bytes: w[1],
            size_ratio: w[2],
            kappa0_blocks: d[0],
            key_bytes_max: w[3],
            value_bytes_max: w[4],
            next_file_id: w[5],
            levels: levels.into_iter().map(|(l, r)| record(u64::from(l), r)).collect(),
            runs: runs.into_iter().map(|r| record(0, r)).collect(),
            new_runs: new_runs.into_iter().map(|r| record(0, r)).collect(),
            fences_file: w[6],
            applied_seq: d[1],
            merge_file: w[7],
        })
}

/// Fences with strictly increasing keys (the first may be `-infinity`).
fn fences_strategy() -> impl Strategy<Value = Fences> {
    proptest::collection::btree_map(key_strategy(0), any::<(u32, u32)>(), 0..8).prop_map(|m| {
        let mut f = Fences::new();
        for (k, (file, index)) in m {
            f.add(&k, BlockPtr { file, index });
        }
        f
    })
}

fn progress_strategy() -> impl Strategy<Value = MergeProgress> {
    (
        any::<(bool, [u8; 2], u64, u64, u64)>(),
        (proptest::option::of(key_strategy(0)), proptest::option::of(key_strategy(0))),
        any::<(Option<(u32, u32)>, Option<(u32, u32)>)>(),
        proptest::collection::vec(any::<(u32, u32)>(), 0..4),
        proptest::collection::vec(
            (any::<(u8, u32, u32)>(), proptest::option::of(level_entries(6))),
            0..3,
        ),
        proptest::collection::btree_map(key_strategy(0), any::<(u32, u32)>(), 0..4),
    )
        .prop_map(|(head, (wavefront_key, processed), ptrs, old_heads, levels, fences)| {
            let ptr = |p: Option<(u32, u32)>| p.map(|(file, index)| BlockPtr { file, index });
            MergeProgress {
                trigger: if head.0 { Trigger::Overflow } else { Trigger::Underflow },
                m: u64::from(head.1[0]) + 1,
                height_before: u64::from(head.1[1]),
                skipped_preemptively: head.2,
                tightened_preemptively: head.3 % 2,
                wavefront_key,
                wavefront_ptr: ptr(ptrs.0),
                processed,
                p_last: ptr(ptrs.1),
                shadowed: head.4,
                old_heads,
                new_levels: levels
                    .into_iter()
                    .map(|((label, file_id, written_blocks), tail)| NewLevelProgress {
                        label: u64::from(label),
                        file_id,
                        written_blocks,
                        tail,
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

    // ---- segments ----

    #[test]
    fn segment_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        use_segment(&bytes, ADDR);
        prop_assert!(parse_segment(&bytes, ADDR).is_err(), "random bytes passed the CRC");
    }

    #[test]
    fn segment_roundtrips_and_survives_mutations(
        entries in level_entries(24),
        m in mutation(),
        last in any::<bool>(),
    ) {
        let flags = if last { FLAG_LAST } else { 0 };
        let bytes = segment(&entries, ADDR, flags);
        let seg = parse_segment(&bytes, ADDR).unwrap();
        prop_assert_eq!(seg.header.is_last(), last);
        let back: Vec<Entry> =
            seg.entries.iter(KEY_MAX, VALUE_MAX).map(|e| e.unwrap().to_owned_entry()).collect();
        prop_assert_eq!(&back, &entries);
        for e in &entries {
            let found = seg.entries.find(e.key(), KEY_MAX, VALUE_MAX).unwrap();
            match e {
                Entry::Insert { value, .. } => prop_assert_eq!(found, DataHit::Insert(value)),
                Entry::Delete { .. } => prop_assert_eq!(found, DataHit::Delete),
                Entry::Fence { .. } => {}
            }
        }
        // Read from another place: refused.
        let elsewhere = SegmentAddr { block: 4, ..ADDR };
        prop_assert!(parse_segment(&bytes, elsewhere).is_err());
        let mutated = apply(bytes.clone(), &m);
        use_segment(&mutated, ADDR);
        if mutated.get(..bytes.len()) == Some(&bytes[..]) {
            // Trailing bytes (the rest of the block) are not part of the segment.
            prop_assert!(parse_segment(&mutated, ADDR).is_ok());
        } else {
            prop_assert!(parse_segment(&mutated, ADDR).is_err(), "a mutated segment passed");
        }
        // Mutated, then sealed again: the entries themselves must be checked.
        let mut resealed = mutated;
        reseal_segment(&mut resealed);
        use_segment(&resealed, ADDR);
    }

    /// A valid header and checksum around arbitrary entry bytes and count.
    #[test]
    fn segment_entries_behind_a_valid_crc(
        body in proptest::collection::vec(any::<u8>(), 0..300),
        count in any::<u16>(),
        flags in any::<u8>(),
    ) {
        let mut bytes = vec![0u8; SEGMENT_HEADER_BYTES];
        bytes.extend_from_slice(&body);
        let header = SegmentHeader { addr: ADDR, flags, count, len: bytes.len() as u16 };
        header.seal(&mut bytes);
        prop_assert!(parse_segment(&bytes, ADDR).is_ok());
        use_segment(&bytes, ADDR);
    }

    // ---- blocks ----

    #[test]
    fn block_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..1100)) {
        let got = block_entries(&bytes, 3);
        prop_assert!(got.iter().all(Result::is_err), "random bytes gave entries: {got:?}");
    }

    #[test]
    fn block_roundtrips_and_survives_mutations(
        entries in level_entries(120),
        m in mutation(),
        reseal in any::<bool>(),
    ) {
        let built = build_level(&entries);
        let mut seen = Vec::new();
        for (b, bytes) in built.blocks.iter().enumerate() {
            prop_assert_eq!(bytes.len(), BLOCK_BYTES);
            for e in block_entries(bytes, b as u32) {
                seen.push(e.unwrap());
            }
            // Another block's place: refused.
            prop_assert!(block_entries(bytes, b as u32 + 1).iter().any(Result::is_err));
        }
        prop_assert_eq!(&seen, &built.entries);
        let mut mutated = apply(built.blocks[0].clone(), &m);
        if reseal {
            // Reseal every segment whose length field still fits, in order.
            let mut at = 0;
            while at < mutated.len() {
                match reseal_segment(&mut mutated[at..]) {
                    Some(len) => at += len,
                    None => break,
                }
            }
        }
        let got = block_entries(&mutated, 0);
        if !reseal {
            // A change to the bytes of the block's segments, or a cut through them, is
            // detected; one in the zero padding after the last segment is not (nothing
            // reads it).
            let used = built.index.segment_in_block(0, &[0xff; KEY_MAX]).map_or(0, |p| {
                p.offset as usize + usize::from(p.len)
            });
            let original = &built.blocks[0][..used];
            if mutated.get(..used) == Some(original) {
                prop_assert!(got.iter().all(Result::is_ok), "{m:?} outside the segments: {got:?}");
            } else {
                prop_assert!(got.iter().any(Result::is_err), "undetected mutation {m:?}");
            }
        }
    }

    // ---- Bloom filters ----

    #[test]
    fn bloom_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        decode_bloom(&bytes);
        // With a valid magic and version, the rest arbitrary.
        let mut framed = b"FDBL\x01".to_vec();
        framed.extend_from_slice(&bytes);
        decode_bloom(&framed);
    }

    #[test]
    fn bloom_roundtrips_and_survives_mutations(
        keys in proptest::collection::vec(key_strategy(1), 0..40),
        bits in 0u32..=64,
        m in mutation(),
    ) {
        let bloom = Bloom::new(keys.len() as u64, bits);
        for k in &keys {
            bloom.insert(k);
        }
        let mut bytes = Vec::new();
        bloom.encode_to(&mut bytes);
        prop_assert_eq!(bytes.len(), bloom.encoded_len());
        let back = decode_bloom(&bytes).unwrap();
        for k in &keys {
            prop_assert!(back.may_contain(k));
        }
        // No checksum of its own (the index's seal covers it): a mutation may decode, and
        // then must re-encode consistently.
        decode_bloom(&apply(bytes, &m));
    }

    // ---- level indexes ----

    #[test]
    fn index_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        prop_assert!(decode_index(&bytes).is_none(), "random bytes passed the seal");
        decode_index(&seal(&bytes));
        let mut framed = b"FDIX\x01\x00\x00\x00".to_vec();
        framed.extend_from_slice(&FILE.to_le_bytes());
        framed.extend_from_slice(&bytes);
        decode_index(&seal(&framed));
    }

    #[test]
    fn index_roundtrips_and_survives_mutations(entries in level_entries(120), m in mutation()) {
        let built = build_level(&entries);
        let bytes = built.index.encode(FILE, &built.stats);
        let (back, stats) = decode_index(&bytes).expect("a valid index decodes");
        prop_assert_eq!(stats, built.stats);
        prop_assert_eq!(back.blocks() as usize, built.blocks.len());
        prop_assert_eq!(back.encode(FILE, &stats), bytes.clone());
        for e in &built.entries {
            if e.as_ref().is_data() {
                prop_assert!(back.bloom().may_contain(e.key()));
            }
        }
        prop_assert!(LevelIndex::decode(&bytes, FILE + 1, KEY_MAX, BLOCK_BYTES as u32).is_err());
        if let Some((mutated, _)) = decode_index(&apply(bytes.clone(), &m)) {
            prop_assert_eq!(mutated.encode(FILE, &stats), bytes.clone(), "a mutation passed");
        }
        decode_index(&resealed(&bytes, &m));
    }

    // ---- manifest ----

    #[test]
    fn manifest_refuses_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        decode_checked::<Manifest>(&bytes);
        decode_checked::<Manifest>(&seal(&bytes));
        let mut framed = b"FDTM\x04\x00\x00\x00".to_vec();
        framed.extend_from_slice(&bytes);
        decode_checked::<Manifest>(&seal(&framed));
    }

    #[test]
    fn manifest_roundtrips_and_survives_mutations(manifest in manifest_strategy(), m in mutation()) {
        let bytes = manifest.encode();
        prop_assert_eq!(bytes.len(), manifest.encoded_len());
        prop_assert_eq!(Manifest::decode(&bytes), Ok(manifest.clone()));
        if let Some(back) = decode_checked::<Manifest>(&apply(bytes.clone(), &m)) {
            prop_assert_eq!(back, manifest, "a mutated manifest passed its CRC");
        }
        decode_checked::<Manifest>(&resealed(&bytes, &m));
    }

    /// A huge record count behind a valid CRC (offset 40: the level count).
    #[test]
    fn manifest_with_huge_counts(manifest in manifest_strategy(), count in any::<u64>()) {
        let bytes = manifest.encode();
        let mut body = bytes[..40].to_vec();
        lamina_core::codec::put_varint(&mut body, count);
        body.extend_from_slice(&bytes[41..bytes.len() - 4]);
        decode_checked::<Manifest>(&seal(&body));
    }

    // ---- fences file ----

    #[test]
    fn fences_refuse_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        prop_assert!(decode_fences(&bytes).is_none(), "random bytes passed the seal");
        decode_fences(&seal(&bytes));
        let mut framed = b"FDFN\x01\x00\x00\x00".to_vec();
        framed.extend_from_slice(&bytes);
        decode_fences(&seal(&framed));
    }

    #[test]
    fn fences_roundtrip_and_survive_mutations(f in fences_strategy(), m in mutation()) {
        let bytes = fences::encode(&f);
        let back = decode_fences(&bytes).expect("valid fences decode");
        prop_assert_eq!(fence_list(&back), fence_list(&f));
        if let Some(mutated) = decode_fences(&apply(bytes.clone(), &m)) {
            prop_assert_eq!(fence_list(&mutated), fence_list(&f), "a mutation passed the seal");
        }
        decode_fences(&resealed(&bytes, &m));
    }

    // ---- merge progress record ----

    #[test]
    fn merge_progress_refuses_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        decode_checked::<MergeProgress>(&bytes);
        decode_checked::<MergeProgress>(&seal(&bytes));
        let mut framed = b"FDMP\x02\x00\x00\x00".to_vec();
        framed.extend_from_slice(&bytes);
        decode_checked::<MergeProgress>(&seal(&framed));
    }

    #[test]
    fn merge_progress_roundtrips_and_survives_mutations(
        progress in progress_strategy(),
        m in mutation(),
    ) {
        let bytes = progress.encode();
        prop_assert_eq!(bytes.len(), progress.encoded_len());
        prop_assert_eq!(MergeProgress::decode(&bytes), Ok(progress.clone()));
        if let Some(back) = decode_checked::<MergeProgress>(&apply(bytes.clone(), &m)) {
            prop_assert_eq!(back, progress, "a mutated progress record passed its CRC");
        }
        decode_checked::<MergeProgress>(&resealed(&bytes, &m));
    }
}

#[test]
fn entry_decoding_takes_the_empty_key_and_refuses_keys_over_the_limit() {
    for entry in [
        Entry::Insert { key: vec![], value: b"v".to_vec() },
        Entry::Delete { key: vec![], cancelled_len: 3 },
        Entry::Fence { key: vec![], ptr: BlockPtr { file: 1, index: 2 } },
    ] {
        let mut out = Vec::new();
        entry.as_ref().encode_to(&mut out);
        let back = EntryRef::decode_from(&mut Reader::new(&out), KEY_MAX, VALUE_MAX).unwrap();
        assert_eq!(back.to_owned_entry(), entry);
    }
    let mut out = Vec::new();
    EntryRef::Insert { key: &[1; 17], value: b"" }.encode_to(&mut out);
    assert!(EntryRef::decode_from(&mut Reader::new(&out), KEY_MAX, VALUE_MAX).is_err());
    let bytes = segment(&[Entry::Insert { key: vec![1; 17], value: vec![] }], ADDR, FLAG_LAST);
    let seg = parse_segment(&bytes, ADDR).unwrap();
    assert!(seg.entries.iter(KEY_MAX, VALUE_MAX).any(|e| e.is_err()));
    assert!(seg.entries.find(&[1; 17], KEY_MAX, VALUE_MAX).is_err());
}
