//! HandleFullSNode (paper sections 3.2.1, 4.1 and 5.1) as a resumable job: what a full root
//! d-tree sets off, done a few pages at a time so that the work is spread over the inserts
//! that fill the next root d-tree (deamortization, section 5.1).
//!
//! The job, on the s-tree it is given (the engine's working copy, published after each
//! event):
//! 1. `flush(root)`: the frozen memtable (the root's full d-tree) is merged into each child
//!    it has entries for, one child at a time, each child's d-tree rewritten sequentially
//!    (section 4.1). A fresh tree whose root has no child gets one empty leaf first.
//! 2. Single recursive call (section 5.1): the largest child, if it holds more than sigma
//!    bytes, is handled: a leaf is split at its median d-key (SNodeSplit); an internal
//!    s-node is flushed, moving only the first sigma bytes of its live part to its children,
//!    and the lazily removed prefix is remembered by its last key (lazy removal), then the
//!    recursion continues on its largest child.
//! 3. Unwinding, every s-node on the path with more than `f` children is split at its median
//!    s-key (its d-tree's live part split with it), the median going up; a split root makes a
//!    new root (the tree grows by one level).
//!
//! At most one HandleFullSNode per level, each writing O(f sigma) bytes, so the work of one
//! job is bounded by [`work_bound_pages`].

use std::sync::Arc;

use lamina_core::Result;
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

use super::rewrite::{Rewrite, Split, WriterContext};
use super::source::{DTreePart, Source};
use super::underflow;
use crate::dtree::DTree;
use crate::entry::entry_bytes;
use crate::memtable::Memtable;
use crate::stree::{NodeId, SNode, STree};

/// What a step changed, for the engine to publish and commit before the next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Nothing visible yet.
    None,
    /// The s-tree changed.
    TreeChanged,
    /// The frozen memtable is now wholly in the root's children (and the s-tree changed).
    RootFlushed,
}

/// The result of one step.
#[derive(Debug)]
pub struct Stepped {
    /// D-tree pages written.
    pub pages: u64,
    /// What changed.
    pub event: Event,
    /// D-trees no longer in the s-tree (to remove once the change is committed).
    pub obsolete: Vec<Arc<DTree>>,
}

#[derive(Debug)]
enum Stage {
    Start,
    Flush { node: NodeId, child: usize, moved_bytes: u64, task: Option<Rewrite> },
    Choose,
    SplitLeaf { leaf: NodeId, task: Rewrite },
    Unwind,
    SplitInternal { node: NodeId, task: Option<Rewrite> },
    MergeSiblings { underflow: underflow::Underflow, task: Rewrite },
    Done,
}

/// One HandleFullSNode cascade, from a frozen root d-tree down to the leaves and back up.
#[derive(Debug)]
pub struct FlushJob {
    /// The root's full d-tree (`None`: a repair job, which only splits overfull s-nodes).
    frozen: Option<Arc<Memtable>>,
    sigma_bytes: u64,
    fanout: usize,
    context: WriterContext,
    path: Vec<NodeId>,
    stage: Stage,
    /// An s-node flushed whole (no sigma limit): the root's single internal child, so that
    /// it owns no d-tree and can become the root.
    flush_all: Option<NodeId>,
}

/// An upper bound on the d-tree pages one job writes, for a tree of `levels` s-node levels
/// (the root's included) that may grow by one.
///
/// Per level at most one HandleFullSNode: a flush writes the moved bytes (at most
/// `sigma + e`, `e` the largest entry) and the children it rewrites (siblings hold at most
/// `f (sigma + e)` together, section 5.1), a split rewrites at most that again: `(2f + 1)
/// (sigma + e)` bytes. Leaves are at least half full and internal nodes take at most as many
/// pages as leaves (a factor 4), the Bloom filter takes `bits / 8` bytes per entry of at
/// least 9 bytes, and each output's last pages (spine, footer) a few pages.
pub fn work_bound_pages(
    levels: u64,
    fanout: u64,
    sigma_bytes: u64,
    page_bytes: u64,
    bloom_bits_per_key: u64,
) -> u64 {
    let entry_max = entry_bytes(KEY_BYTES_MAX, Some(VALUE_BYTES_MAX));
    let levels = levels + 1;
    let bytes = levels * (2 * fanout + 1) * (sigma_bytes + entry_max);
    let node_pages = 4 * bytes.div_ceil(page_bytes);
    let bloom_pages = (bytes / 9 * bloom_bits_per_key / 8).div_ceil(page_bytes);
    let tail_pages = levels * (fanout + 2) * 8;
    node_pages + bloom_pages + tail_pages
}

fn part(node: &SNode) -> Vec<DTreePart> {
    DTreePart::of(node).into_iter().collect()
}

impl FlushJob {
    /// The job for `frozen`, the root's full d-tree.
    pub fn new(
        frozen: Arc<Memtable>,
        sigma_bytes: u64,
        fanout: usize,
        context: WriterContext,
    ) -> FlushJob {
        assert!(fanout >= 3 && sigma_bytes > 0);
        FlushJob {
            frozen: Some(frozen),
            sigma_bytes,
            fanout,
            context,
            path: Vec::new(),
            stage: Stage::Start,
            flush_all: None,
        }
    }

    /// A job that only splits overfull s-nodes and merges underfull ones: what a crash
    /// between a split (or merge) and its parent's leaves, repaired at open.
    pub fn repair(sigma_bytes: u64, fanout: usize, context: WriterContext) -> FlushJob {
        FlushJob {
            frozen: None,
            sigma_bytes,
            fanout,
            context,
            path: Vec::new(),
            stage: Stage::Unwind,
            flush_all: None,
        }
    }

    /// A job that resumes the cascade a crash interrupted (the state committed between two
    /// of its steps): `path` leads from the root to an s-node whose children hold more than
    /// the between-jobs limit `f (sigma + e) + sigma` (`verify::sizes_hold`), so its largest
    /// child holds more than sigma. The job goes on from there as the interrupted one
    /// would have: HandleFullSNode on that child (a flush of sigma bytes or a split), the
    /// single recursive call below it, then unwinding (splits, merges).
    pub fn resume(
        path: Vec<NodeId>,
        sigma_bytes: u64,
        fanout: usize,
        context: WriterContext,
    ) -> FlushJob {
        assert!(!path.is_empty(), "a path to the oversized s-node");
        FlushJob {
            frozen: None,
            sigma_bytes,
            fanout,
            context,
            path,
            stage: Stage::Choose,
            flush_all: None,
        }
    }

    /// The frozen memtable it flushes (`None`: a repair job).
    pub fn frozen(&self) -> Option<&Arc<Memtable>> {
        self.frozen.as_ref()
    }

    /// Whether the cascade is over.
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }

    /// Removes the files of the work in progress (closing, or after a failure).
    pub fn abandon(self) {
        match self.stage {
            Stage::Flush { task: Some(t), .. }
            | Stage::SplitLeaf { task: t, .. }
            | Stage::SplitInternal { task: Some(t), .. }
            | Stage::MergeSiblings { task: t, .. } => t.abandon(),
            _ => {}
        }
    }

    /// Whether the next step may sync or commit (a d-tree's tail, or a change of the
    /// s-tree): a helping writer leaves those steps to the background thread.
    pub fn may_sync(&self) -> bool {
        match &self.stage {
            Stage::Flush { task: Some(t), .. }
            | Stage::SplitLeaf { task: t, .. }
            | Stage::SplitInternal { task: Some(t), .. }
            | Stage::MergeSiblings { task: t, .. } => t.is_merged(),
            _ => true,
        }
    }

    /// Does at most about `pages_max` pages of work on `tree`; returns at the first event.
    pub fn step(&mut self, tree: &mut STree, pages_max: u64) -> Result<Stepped> {
        self.step_as(tree, pages_max, false)
    }

    /// [`FlushJob::step`]; a `helper` only writes entries of a rewrite in progress and
    /// stops before anything that syncs or commits ([`FlushJob::may_sync`]).
    pub fn step_as(&mut self, tree: &mut STree, pages_max: u64, helper: bool) -> Result<Stepped> {
        assert!(pages_max > 0);
        let finish = !helper;
        let mut stepped = Stepped { pages: 0, event: Event::None, obsolete: Vec::new() };
        while stepped.event == Event::None
            && stepped.pages < pages_max
            && !self.is_done()
            && !(helper && self.may_sync())
        {
            let budget = pages_max - stepped.pages;
            let stage = std::mem::replace(&mut self.stage, Stage::Done);
            self.stage = match stage {
                Stage::Start => self.start(tree, &mut stepped),
                Stage::Flush { node, child, moved_bytes, task } => self.flush(
                    tree,
                    &mut stepped,
                    (budget, finish),
                    (node, child, moved_bytes, task),
                )?,
                Stage::Choose => self.choose(tree),
                Stage::SplitLeaf { leaf, mut task } => {
                    stepped.pages += task.step_until(budget, finish)?;
                    if task.is_done() {
                        self.split_leaf(tree, &mut stepped, leaf, task);
                        Stage::Unwind
                    } else {
                        Stage::SplitLeaf { leaf, task }
                    }
                }
                Stage::Unwind => {
                    if let Some(child) = underflow::collapsible_root(tree) {
                        // The root's single internal child becomes the root (section 3.2.2,
                        // B-tree deletes).
                        let old = tree.root;
                        tree.root = child;
                        tree.nodes.remove(&old);
                        stepped.event = Event::TreeChanged;
                        Stage::Unwind
                    } else {
                        self.unwind(tree)
                    }
                }
                Stage::SplitInternal { node, mut task } => {
                    if let Some(t) = &mut task {
                        stepped.pages += t.step_until(budget, finish)?;
                    }
                    if task.as_ref().is_none_or(Rewrite::is_done) {
                        Self::split_internal(tree, &mut stepped, node, task);
                        Stage::Unwind
                    } else {
                        Stage::SplitInternal { node, task }
                    }
                }
                Stage::MergeSiblings { underflow, mut task } => {
                    stepped.pages += task.step_until(budget, finish)?;
                    if task.is_done() {
                        let obsolete = underflow::apply(tree, underflow, task.into_outputs());
                        stepped.obsolete.extend(obsolete);
                        stepped.event = Event::TreeChanged;
                        Stage::Unwind
                    } else {
                        Stage::MergeSiblings { underflow, task }
                    }
                }
                Stage::Done => Stage::Done,
            };
        }
        Ok(stepped)
    }

    fn start(&mut self, tree: &mut STree, stepped: &mut Stepped) -> Stage {
        let root = tree.root;
        if tree.node(root).is_leaf() {
            let leaf = tree.add_node();
            tree.node_mut(root).children.push(leaf);
            stepped.event = Event::TreeChanged;
        }
        self.path = vec![root];
        Stage::Flush { node: root, child: 0, moved_bytes: 0, task: None }
    }

    /// `flush(node)`: one child's merge at a time (section 4.1).
    fn flush(
        &mut self,
        tree: &mut STree,
        stepped: &mut Stepped,
        (budget, finish): (u64, bool),
        (node_id, mut child, moved_bytes, task): (NodeId, usize, u64, Option<Rewrite>),
    ) -> Result<Stage> {
        let is_root = node_id == tree.root;
        let mut task = match task {
            Some(t) => t,
            None => loop {
                let node = tree.node(node_id);
                let limit =
                    if self.flush_all == Some(node_id) { u64::MAX } else { self.sigma_bytes };
                let budget_left = limit.saturating_sub(moved_bytes);
                if child >= node.children.len() || (!is_root && budget_left == 0) {
                    if is_root {
                        stepped.event = Event::RootFlushed;
                    }
                    return Ok(Stage::Choose);
                }
                let (low, high) = node.child_range(child);
                let (mut newer, newer_entries_max) = if is_root {
                    let frozen = self.frozen.clone().expect("a flush job has a frozen memtable");
                    let entries = frozen.len() as u64;
                    (Source::memtable(frozen, low, high), entries)
                } else {
                    let source = Source::dtrees(part(node), low, high, Some(budget_left));
                    (source, node.live_entries)
                };
                if newer.peek()?.is_none() {
                    child += 1;
                    continue;
                }
                let c = tree.node(node.children[child]);
                let older = Source::dtrees(part(c), None, None, None);
                let keys_max = newer_entries_max + c.live_entries;
                break Rewrite::new(
                    Some(newer),
                    older,
                    c.is_leaf(),
                    Split::None,
                    self.context.clone(),
                    keys_max,
                );
            },
        };
        stepped.pages += task.step_until(budget, finish)?;
        if !task.is_done() {
            return Ok(Stage::Flush { node: node_id, child, moved_bytes, task: Some(task) });
        }
        let newer = task.newer().expect("a flush has a newer stream");
        let (yielded_bytes, yielded_entries) = (newer.yielded_bytes, newer.yielded_entries);
        let last_key = newer.last_key.clone();
        let [out] = <[_; 1]>::try_from(task.into_outputs()).expect("one output");
        let child_id = tree.node(node_id).children[child];
        let c = tree.node_mut(child_id);
        stepped.obsolete.extend(c.dtree.take());
        c.set_dtree(out.dtree, out.bytes, out.entries);
        if !is_root {
            // Lazy removal (section 5.1): remember the last key moved; the parent's d-tree
            // is not rewritten.
            let n = tree.node_mut(node_id);
            n.flushed_through = last_key;
            n.live_bytes = n.live_bytes.saturating_sub(yielded_bytes);
            n.live_entries -= yielded_entries;
            if n.live_entries == 0 {
                stepped.obsolete.extend(n.dtree.take());
                n.set_dtree(None, 0, 0);
            }
        }
        stepped.event = Event::TreeChanged;
        Ok(Stage::Flush {
            node: node_id,
            child: child + 1,
            moved_bytes: moved_bytes + yielded_bytes,
            task: None,
        })
    }

    /// Single recursive call (section 5.1): on the largest child only, if oversized.
    fn choose(&mut self, tree: &STree) -> Stage {
        let node = tree.node(*self.path.last().expect("a path"));
        let largest = node.children.iter().map(|&c| tree.node(c)).max_by_key(|c| c.live_bytes);
        match largest {
            Some(c) if c.live_bytes > self.sigma_bytes => {
                if c.is_leaf() {
                    let task = Rewrite::new(
                        None,
                        Source::dtrees(part(c), None, None, None),
                        true,
                        Split::AtHalf { total_bytes: c.live_bytes },
                        self.context.clone(),
                        c.live_entries,
                    );
                    Stage::SplitLeaf { leaf: c.id, task }
                } else {
                    self.path.push(c.id);
                    Stage::Flush { node: c.id, child: 0, moved_bytes: 0, task: None }
                }
            }
            _ => Stage::Unwind,
        }
    }

    /// SNodeSplit of a leaf at its median d-key; the median goes up as an s-key.
    fn split_leaf(&mut self, tree: &mut STree, stepped: &mut Stepped, leaf: NodeId, task: Rewrite) {
        let [left, right] = <[_; 2]>::try_from(task.into_outputs()).expect("two outputs");
        stepped.event = Event::TreeChanged;
        let old = tree.node_mut(leaf).dtree.take();
        stepped.obsolete.extend(old);
        tree.node_mut(leaf).set_dtree(left.dtree, left.bytes, left.entries);
        let Some(median) = right.first_key else {
            return; // one entry, or none: nothing to split, the d-tree was only rewritten
        };
        let sibling = tree.add_node();
        tree.node_mut(sibling).set_dtree(right.dtree, right.bytes, right.entries);
        let parent = *self.path.last().expect("a leaf's parent is on the path");
        let p = tree.node_mut(parent);
        let i = p.children.iter().position(|&c| c == leaf).expect("a child of its parent");
        p.keys.insert(i, median);
        p.children.insert(i + 1, sibling);
    }

    /// Bottom-up: split the deepest s-node with more than `f` children (after a leaf split
    /// only the path can be overfull; after a crash, any node, so the whole s-tree is
    /// searched: it is small).
    fn unwind(&mut self, tree: &STree) -> Stage {
        let mut overfull: Option<(usize, NodeId)> = None;
        let mut level = vec![tree.root];
        let mut depth = 0;
        while !level.is_empty() {
            let mut next = Vec::new();
            for &id in &level {
                let n = tree.node(id);
                if n.children.len() > self.fanout {
                    overfull = Some((depth, id));
                }
                next.extend_from_slice(&n.children);
            }
            level = next;
            depth += 1;
        }
        let Some((_, node)) = overfull else {
            if let Some(u) = underflow::find(tree, self.fanout, self.sigma_bytes) {
                let task =
                    underflow::task(tree, u, self.fanout, self.sigma_bytes, self.context.clone());
                return Stage::MergeSiblings { underflow: u, task };
            }
            if let Some(child) = underflow::root_child_to_empty(tree)
                && self.flush_all != Some(child)
            {
                // The root's single internal child owns a d-tree: flush it whole to its
                // children, then it can become the root.
                self.flush_all = Some(child);
                self.path = vec![tree.root, child];
                return Stage::Flush { node: child, child: 0, moved_bytes: 0, task: None };
            }
            return Stage::Done;
        };
        let n = tree.node(node);
        let median = n.keys[n.keys.len() / 2].clone();
        let task = n.dtree.as_ref().map(|_| {
            Rewrite::new(
                None,
                Source::dtrees(part(n), None, None, None),
                false,
                Split::AtKey(median),
                self.context.clone(),
                n.live_entries,
            )
        });
        Stage::SplitInternal { node, task }
    }

    /// SNodeSplit of an internal s-node at its median s-key.
    fn split_internal(
        tree: &mut STree,
        stepped: &mut Stepped,
        node: NodeId,
        task: Option<Rewrite>,
    ) {
        stepped.event = Event::TreeChanged;
        let sibling = tree.add_node();
        let n = tree.node_mut(node);
        let m = n.keys.len() / 2;
        let median = n.keys[m].clone();
        let right_keys = n.keys.split_off(m + 1);
        n.keys.truncate(m);
        let right_children = n.children.split_off(m + 1);
        let outputs = task.map(Rewrite::into_outputs);
        let old = n.dtree.take();
        stepped.obsolete.extend(old);
        let (left, right) = match outputs {
            Some(outs) => {
                let [l, r] = <[_; 2]>::try_from(outs).expect("two outputs");
                (l, r)
            }
            None => Default::default(),
        };
        n.set_dtree(left.dtree, left.bytes, left.entries);
        let s = tree.node_mut(sibling);
        s.keys = right_keys;
        s.children = right_children;
        s.set_dtree(right.dtree, right.bytes, right.entries);
        match tree.parent_of(node) {
            Some((parent, _)) => {
                let p = tree.node_mut(parent);
                let i = p.children.iter().position(|&c| c == node).expect("a child");
                p.keys.insert(i, median);
                p.children.insert(i + 1, sibling);
            }
            None => {
                assert_eq!(node, tree.root, "only the root has no parent");
                let root = tree.add_node();
                let r = tree.node_mut(root);
                r.keys = vec![median];
                r.children = vec![node, sibling];
                tree.root = root;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_bound_grows_with_levels_fanout_and_sigma() {
        let base = work_bound_pages(3, 3, 1 << 20, 4096, 10);
        assert!(work_bound_pages(4, 3, 1 << 20, 4096, 10) > base);
        assert!(work_bound_pages(3, 4, 1 << 20, 4096, 10) > base);
        assert!(work_bound_pages(3, 3, 2 << 20, 4096, 10) > base);
        // About 4 * 4 * 7 * 256 pages for 1 MiB sigma, 4 KiB pages.
        assert!(base > 4 * 4 * 7 * 256 && base < 2 * 4 * 4 * 7 * 260, "{base}");
    }
}
