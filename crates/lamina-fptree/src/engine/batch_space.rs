//! Room a write batch needs in the persistent heap, checked before anything is written.
//!
//! A batch is logged, committed, then applied (`batch_log.rs`); recovery redoes a committed
//! batch. Had the heap run out half-way through the apply, the store would stay half
//! applied (the handle refuses further use) and every reopen would fail redoing it: a store
//! that no longer opens. So `write_batch` first checks that the heap's free chunks cover the
//! most the batch can take, and otherwise refuses it with `NoSpace`, having changed nothing.
//!
//! The most a batch can take: its log block, and per put a record blob (a new one even for
//! an overwrite, which frees the old blob only after) and one leaf split (the FPTree splits
//! at most one leaf per insert, Algorithm 2); with leaf groups, a group allocation per
//! `group_leaves` splits, plus one. Deletes free space only after the apply, so they count
//! for nothing. The allocator needs contiguous chunks for a block, so a fragmented heap can
//! still fail a batch that passes this check; the check makes that a matter of
//! fragmentation near a full heap, not of any full heap.

use lamina_core::{BatchOp, WriteBatch};

use crate::blob::blob_len;
use crate::groups::GROUP_HEADER_BYTES;
use crate::layout::FpTreeConfig;
use crate::leaf::LEAF_BYTES;

/// Chunks of `chunk_bytes` the batch (logged in `log_bytes`) may allocate at most.
pub(crate) fn batch_chunks_max(
    batch: &WriteBatch,
    log_bytes: usize,
    config: FpTreeConfig,
    chunk_bytes: u64,
) -> u64 {
    assert!(chunk_bytes > 0, "a heap has chunks");
    let chunks = |bytes: u64| bytes.div_ceil(chunk_bytes);
    let mut puts = 0u64;
    let mut blob_chunks = 0u64;
    for op in batch.ops() {
        if let BatchOp::Put { key, value } = op {
            puts += 1;
            blob_chunks += chunks(blob_len(key, value) as u64);
        }
    }
    let leaf_chunks = if config.leaf_groups {
        let group_bytes = GROUP_HEADER_BYTES + u64::from(config.group_leaves) * LEAF_BYTES;
        (puts.div_ceil(u64::from(config.group_leaves.max(1))) + 1) * chunks(group_bytes)
    } else {
        puts * chunks(LEAF_BYTES)
    };
    chunks(log_bytes as u64) + blob_chunks + leaf_chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_counts_log_blobs_and_leaves() {
        let mut batch = WriteBatch::new();
        batch.put(b"k".to_vec(), vec![0u8; 100]).delete(b"gone".to_vec());
        let per_leaf =
            FpTreeConfig { leaf_groups: false, group_leaves: 4, ..FpTreeConfig::default() };
        let blob = blob_len(b"k", &[0u8; 100]) as u64;
        let expected = 2 + blob.div_ceil(64) + LEAF_BYTES.div_ceil(64);
        assert_eq!(batch_chunks_max(&batch, 100, per_leaf, 64), expected);
        let groups = FpTreeConfig { leaf_groups: true, group_leaves: 4, ..FpTreeConfig::default() };
        let group = (GROUP_HEADER_BYTES + 4 * LEAF_BYTES).div_ceil(64);
        assert_eq!(batch_chunks_max(&batch, 100, groups, 64), 2 + blob.div_ceil(64) + 2 * group);
    }
}
