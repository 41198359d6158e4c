//! The durable progress of an FD+FC merge (Remark A.6), so that a crash in the middle of a
//! merge resumes it instead of needing the old levels whole: old blocks are freed only once
//! a progress record covering their entries is committed.
//!
//! A record describes the merge at a stage boundary: the wavefront (key and pointer), the
//! last key processed, the first block still needed of each old source (`L_0^old`'s runs,
//! then the old merged levels; blocks before it are reclaimed and may be punched), for each
//! new level the blocks written and synced and the entries of the block being filled, the
//! fences the merge has put into `L_0^new`, and `p_last`. The levels, runs and fences as the
//! merge began are the ones the manifest names; the runs written since are its `new_runs`;
//! the memtable's records are in the log after `applied_seq`.
//! Byte layout: `docs/format/fdtree-merge-progress.md`.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

use crate::format::entry::{BlockPtr, Entry, EntryRef};
use crate::format::sealed;
use crate::merge::Trigger;
use crate::persist::manifest::{LEVELS_MAX, RUNS_MAX};

const MAGIC: u32 = u32::from_le_bytes(*b"FDMP");
/// Version 3 encodes the wavefront as a flag and a key (version 2 had only the key, empty for
/// `-infinity`, when the empty key was no user key; it is still read).
const VERSION: u32 = 3;
const VERSION_EMPTY_KEY_IS_NEG_INFINITY: u32 = 2;
/// Most entries of one tail block or of `L_0^new`'s fences.
const ENTRIES_MAX: u64 = 1 << 24;

/// One new level as far as the merge has written it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLevelProgress {
    /// Level number.
    pub label: u64,
    /// Level file id.
    pub file_id: u32,
    /// Blocks written and synced (the block being filled is block `written_blocks`).
    pub written_blocks: u32,
    /// The block being filled, if one was started: its entries.
    pub tail: Option<Vec<Entry>>,
}

/// The progress record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeProgress {
    /// Why the merge runs.
    pub trigger: Trigger,
    /// Levels `L_0..L_m` are merged.
    pub m: u64,
    /// Height when the merge started.
    pub height_before: u64,
    /// Levels skipped by merge-prepare (stats).
    pub skipped_preemptively: u64,
    /// Whether merge-prepare tightened the data level (stats).
    pub tightened_preemptively: u64,
    /// (I7) wavefront key (`None`: `-infinity`).
    pub wavefront_key: Option<Vec<u8>>,
    /// The wavefront fence's pointer.
    pub wavefront_ptr: Option<BlockPtr>,
    /// The last key merge-execute processed (`None`: none yet).
    pub processed: Option<Vec<u8>>,
    /// `p_last` of merge-execute.
    pub p_last: Option<BlockPtr>,
    /// Entries dropped so far because newer ones shadowed them.
    pub shadowed: u64,
    /// `(file id, first block still needed)` of each old source.
    pub old_heads: Vec<(u32, u32)>,
    /// The new levels, labels increasing (the last one receives the data).
    pub new_levels: Vec<NewLevelProgress>,
    /// Fences the merge has put into `L_0^new`.
    pub top_fences: Vec<(Vec<u8>, BlockPtr)>,
}

fn put_ptr(out: &mut Vec<u8>, ptr: Option<BlockPtr>) {
    match ptr {
        None => out.push(0),
        Some(p) => {
            out.push(1);
            out.extend_from_slice(&p.file.to_le_bytes());
            out.extend_from_slice(&p.index.to_le_bytes());
        }
    }
}

fn get_ptr(r: &mut Reader<'_>) -> Result<Option<BlockPtr>, DecodeError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(BlockPtr { file: r.u32()?, index: r.u32()? })),
        other => Err(r.error(format!("pointer flag {other}"))),
    }
}

fn count(r: &mut Reader<'_>, max: u64, what: &str) -> Result<usize, DecodeError> {
    let n = r.varint()?;
    if n > max || n > r.remaining() as u64 {
        return Err(r.error(format!("{n} {what}")));
    }
    Ok(n as usize)
}

impl MergeProgress {
    fn encode_body(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.push(match self.trigger {
            Trigger::Overflow => 0,
            Trigger::Underflow => 1,
        });
        for v in
            [self.m, self.height_before, self.skipped_preemptively, self.tightened_preemptively]
        {
            put_varint(out, v);
        }
        match &self.wavefront_key {
            None => out.push(0),
            Some(k) => {
                out.push(1);
                put_bytes(out, k);
            }
        }
        put_ptr(out, self.wavefront_ptr);
        match &self.processed {
            None => out.push(0),
            Some(k) => {
                out.push(1);
                put_bytes(out, k);
            }
        }
        put_ptr(out, self.p_last);
        out.extend_from_slice(&self.shadowed.to_le_bytes());
        put_varint(out, self.old_heads.len() as u64);
        for (file, head) in &self.old_heads {
            out.extend_from_slice(&file.to_le_bytes());
            out.extend_from_slice(&head.to_le_bytes());
        }
        put_varint(out, self.new_levels.len() as u64);
        for l in &self.new_levels {
            put_varint(out, l.label);
            out.extend_from_slice(&l.file_id.to_le_bytes());
            out.extend_from_slice(&l.written_blocks.to_le_bytes());
            match &l.tail {
                None => out.push(0),
                Some(entries) => {
                    out.push(1);
                    put_varint(out, entries.len() as u64);
                    for e in entries {
                        e.as_ref().encode_to(out);
                    }
                }
            }
        }
        put_varint(out, self.top_fences.len() as u64);
        for (key, ptr) in &self.top_fences {
            put_bytes(out, key);
            put_ptr(out, Some(*ptr));
        }
    }
}

impl Encode for MergeProgress {
    fn encoded_len(&self) -> usize {
        sealed::sealed_len(|out| self.encode_body(out))
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        sealed::seal(out, |out| self.encode_body(out));
    }
}

impl Decode for MergeProgress {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let body = sealed::unseal(input, "merge progress")?;
        let mut r = Reader::new(body);
        if r.u32()? != MAGIC {
            return Err(DecodeError::new(0, "not an fdtree merge progress record"));
        }
        let version = r.u32()?;
        if version != VERSION && version != VERSION_EMPTY_KEY_IS_NEG_INFINITY {
            return Err(DecodeError::new(4, format!("merge progress version {version}")));
        }
        let trigger = match r.u8()? {
            0 => Trigger::Overflow,
            1 => Trigger::Underflow,
            other => return Err(r.error(format!("trigger {other}"))),
        };
        let m = r.varint()?;
        let height_before = r.varint()?;
        let skipped_preemptively = r.varint()?;
        let tightened_preemptively = r.varint()?;
        if m == 0 || m > LEVELS_MAX || height_before > LEVELS_MAX {
            return Err(r.error(format!("m {m}, height {height_before}")));
        }
        let wavefront_key = if version == VERSION_EMPTY_KEY_IS_NEG_INFINITY {
            Some(r.bytes_with_len(KEY_BYTES_MAX)?.to_vec()).filter(|k| !k.is_empty())
        } else {
            match r.u8()? {
                0 => None,
                1 => Some(r.bytes_with_len(KEY_BYTES_MAX)?.to_vec()),
                other => return Err(r.error(format!("wavefront flag {other}"))),
            }
        };
        let wavefront_ptr = get_ptr(&mut r)?;
        let processed = match r.u8()? {
            0 => None,
            1 => Some(r.bytes_with_len(KEY_BYTES_MAX)?.to_vec()),
            other => return Err(r.error(format!("processed flag {other}"))),
        };
        let p_last = get_ptr(&mut r)?;
        let shadowed = r.u64()?;
        let n = count(&mut r, LEVELS_MAX + RUNS_MAX, "old sources")?;
        let mut old_heads = Vec::with_capacity(n);
        for _ in 0..n {
            old_heads.push((r.u32()?, r.u32()?));
        }
        let n = count(&mut r, LEVELS_MAX, "new levels")?;
        let mut new_levels = Vec::with_capacity(n);
        for _ in 0..n {
            let label = r.varint()?;
            let file_id = r.u32()?;
            let written_blocks = r.u32()?;
            let tail = match r.u8()? {
                0 => None,
                1 => {
                    let n = count(&mut r, ENTRIES_MAX, "tail entries")?;
                    let mut entries: Vec<Entry> = Vec::with_capacity(n.min(4096));
                    for _ in 0..n {
                        let at = r.position();
                        let e = EntryRef::decode_from(&mut r, KEY_BYTES_MAX, VALUE_BYTES_MAX)?;
                        if entries.last().is_some_and(|p| p.as_ref().order(&e).is_ge()) {
                            return Err(DecodeError::new(at, "tail entries out of order"));
                        }
                        entries.push(e.to_owned_entry());
                    }
                    Some(entries)
                }
                other => return Err(r.error(format!("tail flag {other}"))),
            };
            new_levels.push(NewLevelProgress { label, file_id, written_blocks, tail });
        }
        let n = count(&mut r, ENTRIES_MAX, "L_0^new fences")?;
        let mut top_fences: Vec<(Vec<u8>, BlockPtr)> = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            let key = r.bytes_with_len(KEY_BYTES_MAX)?.to_vec();
            let ptr = get_ptr(&mut r)?.ok_or_else(|| r.error("fence without pointer"))?;
            if top_fences.last().is_some_and(|(k, _)| *k >= key) {
                return Err(r.error("L_0^new fences out of order"));
            }
            top_fences.push((key, ptr));
        }
        r.finish()?;
        Ok(MergeProgress {
            trigger,
            m,
            height_before,
            skipped_preemptively,
            tightened_preemptively,
            wavefront_key,
            wavefront_ptr,
            processed,
            p_last,
            shadowed,
            old_heads,
            new_levels,
            top_fences,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MergeProgress {
        MergeProgress {
            trigger: Trigger::Underflow,
            m: 3,
            height_before: 4,
            skipped_preemptively: 1,
            tightened_preemptively: 0,
            wavefront_key: Some(b"key-17".to_vec()),
            wavefront_ptr: Some(BlockPtr { file: 4, index: 9 }),
            processed: Some(b"key-19".to_vec()),
            p_last: None,
            shadowed: 12,
            old_heads: vec![(3, 2), (4, 9), (6, 31)],
            new_levels: vec![
                NewLevelProgress { label: 2, file_id: 10, written_blocks: 1, tail: None },
                NewLevelProgress {
                    label: 3,
                    file_id: 11,
                    written_blocks: 7,
                    tail: Some(vec![
                        Entry::Fence { key: b"a".to_vec(), ptr: BlockPtr { file: 6, index: 3 } },
                        Entry::Delete { key: b"a".to_vec(), cancelled_len: 9 },
                        Entry::Insert { key: b"b".to_vec(), value: vec![] },
                    ]),
                },
            ],
            top_fences: vec![(vec![], BlockPtr { file: 10, index: 0 })],
        }
    }

    #[test]
    fn roundtrip() {
        let p = sample();
        let bytes = p.encode();
        assert_eq!(bytes.len(), p.encoded_len());
        assert_eq!(MergeProgress::decode(&bytes).unwrap(), p);
    }

    /// The same record as version 2 wrote it: no wavefront flag (empty key = `-infinity`).
    fn as_version_2(p: &MergeProgress) -> Vec<u8> {
        let mut body = Vec::new();
        p.encode_body(&mut body);
        body[4..8].copy_from_slice(&VERSION_EMPTY_KEY_IS_NEG_INFINITY.to_le_bytes());
        // magic, version, trigger and four one-byte varints, then the wavefront flag.
        let flag = body.remove(13);
        assert_eq!(flag, u8::from(p.wavefront_key.is_some()));
        if p.wavefront_key.is_none() {
            body.insert(13, 0); // the empty key's length
        }
        let mut out = Vec::new();
        sealed::seal(&mut out, |out| out.extend_from_slice(&body));
        out
    }

    #[test]
    fn version_2_records_still_decode() {
        for wavefront_key in [None, Some(b"key-17".to_vec())] {
            let p = MergeProgress { wavefront_key, ..sample() };
            assert_eq!(MergeProgress::decode(&as_version_2(&p)).unwrap(), p);
        }
    }

    #[test]
    fn the_empty_key_as_wavefront_is_not_neg_infinity() {
        for wavefront_key in [None, Some(Vec::new())] {
            let p = MergeProgress { wavefront_key, ..sample() };
            assert_eq!(MergeProgress::decode(&p.encode()).unwrap(), p);
        }
    }

    #[test]
    fn corruption_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x08;
            assert!(MergeProgress::decode(&bad).is_err(), "flip at {i} undetected");
        }
        for len in 0..bytes.len() {
            assert!(MergeProgress::decode(&bytes[..len]).is_err(), "truncation to {len}");
        }
    }
}
