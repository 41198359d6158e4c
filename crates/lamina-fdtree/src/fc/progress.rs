//! The durable progress of an FD+FC merge (Remark A.6), so that a crash in the middle of a
//! merge resumes it instead of needing the old levels whole: old blocks are freed only once
//! a progress record covering their entries is committed.
//!
//! A record describes the merge at a stage boundary: the wavefront (key and pointer), the
//! first block of each old merged level still needed (blocks before it are reclaimed and may
//! be punched), for each new level the blocks already written and synced, its sizes, and the
//! entries of its tail (the block m-insert is filling, in memory), the fences the merge has
//! put into `L_0^new`, `p_last` and the cancellation counts. `L_0^old` is the snapshot the
//! manifest names (written when the merge started, `applied_seq` = the start of the merge),
//! minus the entries up to the wavefront; `L_0^new`'s modifications are the log records after
//! `applied_seq`. Byte layout: `docs/format/fdtree-merge-progress.md`.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

use crate::entry::{BlockPtr, Entry};
use crate::level::LevelStats;
use crate::merge::Trigger;

const MAGIC: u32 = u32::from_le_bytes(*b"FDMP");
const VERSION: u32 = 1;
/// Most levels a record may describe (as the manifest).
const LEVELS_MAX: u64 = 256;
/// Most entries of one tail block or of `L_0^new`'s fences.
const ENTRIES_MAX: u64 = 1 << 24;

/// One new level as far as the merge has written it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLevelProgress {
    /// Level number.
    pub label: u64,
    /// Level file id.
    pub file_id: u32,
    /// Blocks written and synced (the tail is block `flushed_blocks`).
    pub flushed_blocks: u32,
    /// Sizes of everything written, tail included.
    pub stats: LevelStats,
    /// The tail's entries, if a tail was started.
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
    /// Whether merge-execute has processed any key group (the `-infinity` group first).
    pub started: bool,
    /// (I7) wavefront key (empty: `-infinity`).
    pub wavefront_key: Vec<u8>,
    /// The wavefront fence's pointer.
    pub wavefront_ptr: Option<BlockPtr>,
    /// `p_last` of merge-execute.
    pub p_last: Option<BlockPtr>,
    /// Insert/delete pairs cancelled so far.
    pub cancellations: u64,
    /// Their insert bytes.
    pub cancelled_bytes: u64,
    /// `(file id, first block still needed)` of each old merged level, top-down.
    pub old_heads: Vec<(u32, u32)>,
    /// The new levels, labels increasing.
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
    if n > max {
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
        for v in [self.m, self.height_before, self.skipped_preemptively] {
            put_varint(out, v);
        }
        put_varint(out, self.tightened_preemptively);
        out.push(u8::from(self.started));
        put_bytes(out, &self.wavefront_key);
        put_ptr(out, self.wavefront_ptr);
        put_ptr(out, self.p_last);
        out.extend_from_slice(&self.cancellations.to_le_bytes());
        out.extend_from_slice(&self.cancelled_bytes.to_le_bytes());
        put_varint(out, self.old_heads.len() as u64);
        for (file, head) in &self.old_heads {
            out.extend_from_slice(&file.to_le_bytes());
            out.extend_from_slice(&head.to_le_bytes());
        }
        put_varint(out, self.new_levels.len() as u64);
        for l in &self.new_levels {
            put_varint(out, l.label);
            out.extend_from_slice(&l.file_id.to_le_bytes());
            out.extend_from_slice(&l.flushed_blocks.to_le_bytes());
            l.stats.encode_to(out);
            match &l.tail {
                None => out.push(0),
                Some(entries) => {
                    out.push(1);
                    put_varint(out, entries.len() as u64);
                    for e in entries {
                        e.encode_to(out);
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
        crate::sealed::sealed_len(|out| self.encode_body(out))
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        crate::sealed::seal(out, |out| self.encode_body(out));
    }
}

impl Decode for MergeProgress {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let body = crate::sealed::unseal(input, "merge progress")?;
        let mut r = Reader::new(body);
        if r.u32()? != MAGIC {
            return Err(DecodeError::new(0, "not an fdtree merge progress record"));
        }
        let version = r.u32()?;
        if version != VERSION {
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
        let started = match r.u8()? {
            0 => false,
            1 => true,
            other => return Err(r.error(format!("started flag {other}"))),
        };
        let wavefront_key = r.bytes_with_len(KEY_BYTES_MAX)?.to_vec();
        let wavefront_ptr = get_ptr(&mut r)?;
        let p_last = get_ptr(&mut r)?;
        let cancellations = r.u64()?;
        let cancelled_bytes = r.u64()?;
        let n = count(&mut r, LEVELS_MAX, "old levels")?;
        let mut old_heads = Vec::with_capacity(n);
        for _ in 0..n {
            old_heads.push((r.u32()?, r.u32()?));
        }
        let n = count(&mut r, LEVELS_MAX, "new levels")?;
        let mut new_levels = Vec::with_capacity(n);
        for _ in 0..n {
            let label = r.varint()?;
            let file_id = r.u32()?;
            let flushed_blocks = r.u32()?;
            let stats = LevelStats::decode_from(&mut r)?;
            let tail = match r.u8()? {
                0 => None,
                1 => {
                    let n = count(&mut r, ENTRIES_MAX, "tail entries")?;
                    let mut entries = Vec::with_capacity(n.min(4096));
                    for _ in 0..n {
                        let at = r.position();
                        let e = Entry::decode_from(&mut r, KEY_BYTES_MAX, VALUE_BYTES_MAX)?;
                        if entries.last().is_some_and(|p: &Entry| p.order(&e).is_ge()) {
                            return Err(DecodeError::new(at, "tail entries out of order"));
                        }
                        entries.push(e);
                    }
                    Some(entries)
                }
                other => return Err(r.error(format!("tail flag {other}"))),
            };
            new_levels.push(NewLevelProgress { label, file_id, flushed_blocks, stats, tail });
        }
        let n = count(&mut r, ENTRIES_MAX, "L_0^new fences")?;
        let mut top_fences = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            let key = r.bytes_with_len(KEY_BYTES_MAX)?.to_vec();
            let ptr = get_ptr(&mut r)?.ok_or_else(|| r.error("fence without pointer"))?;
            top_fences.push((key, ptr));
        }
        r.finish()?;
        Ok(MergeProgress {
            trigger,
            m,
            height_before,
            skipped_preemptively,
            tightened_preemptively,
            started,
            wavefront_key,
            wavefront_ptr,
            p_last,
            cancellations,
            cancelled_bytes,
            old_heads,
            new_levels,
            top_fences,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> MergeProgress {
        MergeProgress {
            trigger: Trigger::Underflow,
            m: 3,
            height_before: 4,
            skipped_preemptively: 1,
            tightened_preemptively: 0,
            started: true,
            wavefront_key: b"key-17".to_vec(),
            wavefront_ptr: Some(BlockPtr { file: 4, index: 9 }),
            p_last: None,
            cancellations: 12,
            cancelled_bytes: 340,
            old_heads: vec![(4, 9), (6, 31)],
            new_levels: vec![
                NewLevelProgress {
                    label: 2,
                    file_id: 10,
                    flushed_blocks: 1,
                    stats: LevelStats { fence_bytes: 40, ..LevelStats::default() },
                    tail: None,
                },
                NewLevelProgress {
                    label: 3,
                    file_id: 11,
                    flushed_blocks: 7,
                    stats: LevelStats { data_bytes: 900, inserts: 30, ..LevelStats::default() },
                    tail: Some(vec![
                        Entry::Delete { key: b"a".to_vec() },
                        Entry::Insert { key: b"a".to_vec(), value: b"v".to_vec() },
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
