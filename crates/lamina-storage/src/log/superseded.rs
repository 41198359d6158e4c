//! Keys of durable records the engine may not have applied yet, for the cyclic log's
//! read-ahead garbage collection.
//!
//! A `Sync` writer applies its operation after its chunk is durable, when it is next
//! scheduled; the flusher collects old chunks right after that sync, while the writers just
//! woken are still applying. For a key such a record writes, the engine's liveness answer
//! may be stale (a put it calls current may already be deleted or overwritten by a durable
//! record), so collection must not carry puts of these keys: a newer durable record of the
//! key exists, so they are garbage whatever the engine says. Any other key's answer is
//! exact. This replaces waiting for the woken writers before collecting, which held the next
//! flush behind their scheduling (group commit in lockstep rounds).
//!
//! Invariant: every generation at or after the first one with an unfinished append, up to
//! the last one synced, has its write buffer here, unless it is at or below
//! `dropped_through` (then collection waits until those are applied).

use std::collections::{HashSet, VecDeque};

use lamina_core::BatchOp;

use super::record::{RecordOp, decode_records};

/// Most write buffers kept; past this (an engine that stopped applying), the oldest are
/// dropped and read-ahead collection waits for their generations to be applied.
pub(super) const BUFFERS_KEPT_MAX: usize = 64;

/// Most bytes of write buffers kept (buffers are up to 1 MiB by default), with the same
/// consequence as [`BUFFERS_KEPT_MAX`].
pub(super) const BUFFER_BYTES_KEPT_MAX: usize = 8 << 20;

#[derive(Debug, Default)]
pub(super) struct DurableUnapplied {
    /// `(generation, log position where its chunk went, the write buffer synced as that
    /// chunk)`, oldest first.
    buffers: VecDeque<(u64, u64, Vec<u8>)>,
    /// Sum of the lengths of `buffers`.
    bytes: usize,
    /// Generations up to this one may be unapplied and are not in `buffers`.
    dropped_through: u64,
}

impl DurableUnapplied {
    /// Remembers the records of `generation`, just made durable in the chunk(s) written
    /// from log position `position` on, unless every append of it has finished already;
    /// forgets applied generations first (`first_unapplied` as in
    /// [`DurableUnapplied::superseded_keys`]).
    pub(super) fn push(
        &mut self,
        generation: u64,
        position: u64,
        buffer: &[u8],
        first_unapplied: Option<u64>,
    ) {
        assert!(
            self.buffers.back().is_none_or(|(g, p, _)| *g < generation && *p <= position),
            "generations are synced in order"
        );
        self.forget_applied(first_unapplied);
        if first_unapplied.is_none_or(|first| first > generation) {
            return;
        }
        self.buffers.push_back((generation, position, buffer.to_vec()));
        self.bytes += buffer.len();
        while self.buffers.len() > BUFFERS_KEPT_MAX
            || (self.bytes > BUFFER_BYTES_KEPT_MAX && self.buffers.len() > 1)
        {
            let (dropped, _, buffer) = self.buffers.pop_front().expect("the queue is not empty");
            self.bytes -= buffer.len();
            self.dropped_through = self.dropped_through.max(dropped);
        }
    }

    fn forget_applied(&mut self, first_unapplied: Option<u64>) {
        let applied_below = first_unapplied.unwrap_or(u64::MAX);
        while let Some((_, _, buffer)) = self.buffers.pop_front_if(|(g, _, _)| *g < applied_below) {
            self.bytes -= buffer.len();
        }
    }

    /// Forgets every generation before `first_unapplied`, the oldest generation with an
    /// append not yet finished (`None`: every append has finished), and returns the keys
    /// the remaining ones write; `None` if collection must wait (dropped generations are
    /// not all applied yet). An undecodable buffer (never: the writer encoded it) is an
    /// error.
    pub(super) fn superseded_keys(
        &mut self,
        first_unapplied: Option<u64>,
    ) -> Result<Option<HashSet<Vec<u8>>>, String> {
        self.forget_applied(first_unapplied);
        if self.dropped_through >= first_unapplied.unwrap_or(u64::MAX) {
            return Ok(None);
        }
        let mut keys = HashSet::new();
        for (generation, _, buffer) in &self.buffers {
            let records = decode_records(buffer)
                .map_err(|e| format!("write buffer of generation {generation}: {e}"))?;
            for record in records {
                match record.op {
                    RecordOp::Put { key, .. } | RecordOp::Delete { key } => {
                        keys.insert(key);
                    }
                    RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => {
                        keys.extend(ops.into_iter().map(|op| match op {
                            BatchOp::Put { key, .. } | BatchOp::Delete { key } => key,
                        }));
                    }
                }
            }
        }
        Ok(Some(keys))
    }

    /// `(generation, log position)` of the oldest chunk kept: its records (and those after
    /// it) are not all applied yet, so the engine cannot vouch for them and collection must
    /// stop before it. Current as of the last [`DurableUnapplied::superseded_keys`].
    pub(super) fn oldest(&self) -> Option<(u64, u64)> {
        self.buffers.front().map(|(generation, position, _)| (*generation, *position))
    }

    /// Generations up to this one were dropped unapplied (0: none); see
    /// [`DurableUnapplied::superseded_keys`].
    pub(super) fn dropped_through(&self) -> u64 {
        self.dropped_through
    }

    /// Write buffers kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.buffers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::LogOp;

    fn buffer(ops: &[LogOp<'_>], first_seq: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            op.encode_to(first_seq + i as u64, &mut out);
        }
        out
    }

    #[test]
    fn keys_of_unapplied_generations_only() {
        let mut d = DurableUnapplied::default();
        d.push(1, 4096, &buffer(&[LogOp::Put { key: b"a", value: b"1" }], 1), Some(1));
        d.push(2, 2 * 4096, &buffer(&[LogOp::Delete { key: b"b" }], 2), Some(1));
        let batch: lamina_core::WriteBatch = [
            BatchOp::Put { key: b"c".to_vec(), value: vec![] },
            BatchOp::Delete { key: b"d".to_vec() },
        ]
        .into_iter()
        .collect();
        d.push(3, 3 * 4096, &buffer(&[LogOp::Batch(&batch)], 3), Some(1));
        let keys = d.superseded_keys(Some(2)).unwrap().unwrap();
        let expected: HashSet<Vec<u8>> =
            [b"b".to_vec(), b"c".to_vec(), b"d".to_vec()].into_iter().collect();
        assert_eq!(keys, expected);
        assert_eq!(d.len(), 2, "generation 1 is applied and forgotten");
        assert_eq!(d.oldest(), Some((2, 2 * 4096)));
        assert!(d.superseded_keys(None).unwrap().unwrap().is_empty());
        assert_eq!(d.len(), 0);
    }

    #[test]
    fn dropped_generations_pause_collection_until_applied() {
        let mut d = DurableUnapplied::default();
        let one = buffer(&[LogOp::Put { key: b"k", value: b"v" }], 1);
        for generation in 1..=(BUFFERS_KEPT_MAX as u64 + 2) {
            d.push(generation, generation * 4096, &one, Some(1));
        }
        assert_eq!(d.len(), BUFFERS_KEPT_MAX);
        assert_eq!(d.superseded_keys(Some(1)).unwrap(), None);
        assert_eq!(d.superseded_keys(Some(2)).unwrap(), None);
        assert!(d.superseded_keys(Some(3)).unwrap().is_some());
    }

    #[test]
    fn applied_generations_are_not_kept_and_bytes_are_bounded() {
        let mut d = DurableUnapplied::default();
        let one = buffer(&[LogOp::Put { key: b"k", value: b"v" }], 1);
        d.push(1, 4096, &one, None);
        d.push(2, 2 * 4096, &one, Some(3));
        assert_eq!(d.len(), 0, "applied before they were pushed");
        d.push(3, 3 * 4096, &one, Some(3));
        assert_eq!(d.len(), 1);
        d.push(4, 4 * 4096, &one, Some(4));
        assert_eq!(d.len(), 1, "generation 3 was applied meanwhile");
        let big = vec![0u8; BUFFER_BYTES_KEPT_MAX / 2 + 1];
        d.push(5, 5 * 4096, &big, Some(4));
        d.push(6, 6 * 4096, &big, Some(4));
        assert_eq!(d.len(), 1, "the byte bound drops the oldest");
        assert_eq!(d.dropped_through(), 5);
        assert_eq!(d.superseded_keys(Some(4)).unwrap(), None);
    }

    #[test]
    fn a_corrupt_buffer_is_an_error_not_a_panic() {
        let mut d = DurableUnapplied::default();
        d.push(1, 4096, &[0xff; 7], Some(1));
        assert!(d.superseded_keys(Some(1)).unwrap_err().contains("generation 1"));
    }
}
