//! The contract between the inner nodes and the leaf layer.
//!
//! Key ranges: leaf `i` covers the keys `k` with `separator(i) <= k < separator(i + 1)`; the
//! first leaf's separator is the empty key (it covers everything below the second's). A
//! separator never changes while its leaf is in the tree: a split inserts a new separator for
//! the new right leaf, and removing a leaf hands its range to the leaf before it.
//!
//! Concurrency (section 4.4, "selective concurrency", with optimistic lock coupling standing
//! in for the paper's HTM transactions): [`InnerIndex::locate`] traverses without locks and
//! calls the caller's `visit` on the leaf it reached, still inside the optimistic section;
//! `visit` may take leaf locks (the paper's `Leaf.lock = 1` inside the transaction) and may ask
//! for a restart (the paper's `speculative_lock.abort()` when a leaf lock is taken). After
//! `visit` succeeds the traversal is validated; if a concurrent change to the inner nodes
//! invalidated it, `undo` releases what `visit` took and the traversal restarts. The
//! structural changes ([`InnerIndex::insert_separator`], [`InnerIndex::remove_leaf`]) are the
//! paper's second transaction (Algorithm 2 line 17, Algorithm 5's inner update); the caller
//! holds the leaf locks that make them safe (the split leaf; the removed leaf and the one
//! before it).

/// A leaf's identity: its offset in the persistent region. Opaque to the inner nodes.
pub type LeafId = u64;

/// What `visit` decided inside the optimistic section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit<T> {
    /// Done, with what to hand back (after validation) to the caller.
    Done(T),
    /// A leaf lock was busy (or a leaf changed under a reader): release nothing, start over.
    Restart,
}

/// The DRAM inner nodes of an FPTree.
pub trait InnerIndex: Send + Sync + Sized {
    /// Algorithm 9's rebuild: `leaves` in key order, each with its separator (the first one's
    /// is ignored and treated as the empty key). Needs at least one leaf; separators strictly
    /// increasing.
    fn build(leaves: Vec<(Box<[u8]>, LeafId)>) -> Self;

    /// Finds the leaf covering `key` and the leaf before it in key order (`None` for the
    /// first leaf), calls `visit(leaf, prev)` and validates the traversal; on a failed
    /// validation calls `undo` with what `visit` returned and starts over. `visit` may be
    /// called any number of times, each time with a pair that was true at some instant
    /// before the call but may no longer be (the leaf removed, even its memory reused, by
    /// then): what `visit` does must be undoable by `undo` and must not assume the leaf is
    /// still in the tree. The `T` that `locate` returns was produced while the pair held (the
    /// validation after `visit` succeeded).
    fn locate<T>(
        &self,
        key: &[u8],
        visit: impl FnMut(LeafId, Option<LeafId>) -> Visit<T>,
        undo: impl FnMut(T),
    ) -> T;

    /// After a split of the leaf covering `separator`: the new leaf `right` covers the keys
    /// from `separator` up to the old leaf's upper bound. `separator` is not yet a separator.
    fn insert_separator(&self, separator: &[u8], right: LeafId);

    /// Removes `leaf`, the leaf covering `key`; its range goes to the leaf before it. Never the
    /// first leaf (the tree keeps one leaf even when empty).
    fn remove_leaf(&self, key: &[u8], leaf: LeafId);

    /// Leaves in the tree.
    fn leaf_count(&self) -> usize;

    /// Bytes of DRAM the inner nodes hold (the paper's Figure 10 footprint).
    fn dram_bytes(&self) -> u64;
}
