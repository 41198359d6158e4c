//! [`OlcInner`]: the FPTree's DRAM inner nodes as a B+tree under optimistic lock coupling.
//!
//! # Invariants
//!
//! Of the tree (whenever no writer holds a lock):
//! 1. A sentinel node with no keys and one child, the root, sits above the tree, so a root
//!    split or collapse is an ordinary change of a locked node.
//! 2. Every node has `keys.len() + 1` children, at least one and at most `fanout_max`; keys
//!    strictly increase and lie strictly inside the node's range; child `i` covers
//!    `[keys[i - 1], keys[i])` of it. Bottom nodes name leaves, the others nodes, and every
//!    bottom node is at the same depth (balanced). The root is a bottom node or has two
//!    children or more (a root left with one child collapses, with every one-child node
//!    under it). Underfull nodes are allowed below the root: a node leaves the tree when it
//!    loses its last child, but siblings are not merged, so after many removals nodes can be
//!    sparse (down to one child) and the height stays what the most leaves needed, until the
//!    root collapses.
//! 3. Leaf separators are exactly the keys of the bottom nodes plus the lower bounds their
//!    first children inherit from ancestors: each separator is stored once.
//!
//! Of the concurrency protocol (`version.rs`, `node.rs`):
//! 4. A node's content is an immutable snapshot; only the holder of the node's write lock
//!    replaces it, and it releases the lock with a new version.
//! 5. A writer locks every node it changes **and every node whose key range shrinks** (in a
//!    leaf removal, every node from the ancestor whose key changes down to the changed node)
//!    before changing any, and releases them after changing all. A node whose range only grows
//!    (the right edge of the left neighbour when a first child goes) is not locked: every key
//!    it answered for it still answers for correctly.
//! 6. A node that leaves the tree is released obsolete.
//!
//! Hence (the readers' argument): a traversal that read the version of each node before its
//! content and finds every version unchanged afterwards read contents that were all current
//! at one instant, none of them in the middle of a writer's change (5): what it computed from
//! them (the leaf, the leaf before) was true at that instant.
//!
//! # The paper's algorithms (section 5) in this code
//!
//! - Algorithm 1 (ConcurrentFind) and the first transaction of Algorithms 2, 5 and 8:
//!   [`InnerIndex::locate`]. `speculative_lock.acquire()` + `FindLeaf` is the optimistic
//!   descent; the caller's `visit` is the body of the transaction (check and take leaf locks,
//!   or `Visit::Restart` for `speculative_lock.abort()`); `speculative_lock.release()` is the
//!   validation after `visit`, whose failure calls `undo` (an HTM abort would have rolled the
//!   leaf-lock writes back) and starts over.
//! - FindLeafAndPrevLeaf (Algorithm 5 line 5): the same descent also yields the leaf before,
//!   from the bottom node, or from the rightmost path of the subtree left of the deepest
//!   ancestor where the descent did not take the first child; those nodes are validated too.
//! - Algorithm 2 line 17 / Algorithm 8 line 21 (`UpdateParents` in a second transaction):
//!   [`InnerIndex::insert_separator`], re-traversing (the paper's second option), then locking
//!   the bottom node and each full ancestor that splits.
//! - Algorithm 5's inner update (the key and pointer removed from the parent, "possibly
//!   triggering further inner node modifications"): [`InnerIndex::remove_leaf`].
//! - Algorithm 9's `RebuildInnerNodes`: [`InnerIndex::build`], a bottom-up bulk load.
//!
//! Readers take no lock and write no shared memory, except a restart counter on restarts.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_epoch::Guard;

use super::contract::{InnerIndex, LeafId, Visit};
use super::node::{Children, Content, Keys, Node, pin};
use super::version::VersionWord;

/// Children per node at most, by default. Why 64: a structural change copies one node
/// (copy-on-write), so the copy grows with the fanout, while the height shrinks only with
/// its logarithm; at 64, 1M leaves need 4 levels (5 at 16M), a node with 16-byte keys is
/// about 2 KiB, and a reader's binary search is 6 comparisons per level on packed keys.
pub const FANOUT_MAX_DEFAULT: usize = 64;
/// The smallest fanout accepted (tests use small fanouts to get deep trees).
pub const FANOUT_MIN: usize = 3;
/// The longest separator (issue 19: variable-size keys up to 1024 bytes).
pub const KEY_BYTES_MAX: usize = 1024;
/// Levels of nodes at most. A level is added only when the root splits, which takes at least
/// `(FANOUT_MIN + 1) / 2 = 2` times more leaves than the level before needed: 32 levels
/// would need more than 2^31 leaves at the smallest fanout (and 32^31 at the default).
pub const HEIGHT_MAX: usize = 32;
/// Steps of a traversal: the sentinel and one per level.
pub(crate) const PATH_STEPS_MAX: usize = HEIGHT_MAX + 1;

/// How many times operations started over, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restarts {
    /// A node was locked or changed under an optimistic traversal (reader or writer).
    pub conflicts: u64,
    /// `visit` asked for a restart (a leaf lock was busy).
    pub visits: u64,
}

/// The FPTree's DRAM inner nodes: a B+tree of separators under optimistic lock coupling, on
/// `std`'s atomic version words.
pub type OlcInner = OlcInnerOn<AtomicU64>;

/// [`OlcInner`] on any version word `W` (a model checker's atomic in its tests).
pub struct OlcInnerOn<W: VersionWord> {
    pub(super) sentinel: Node<W>,
    pub(super) fanout_max: usize,
    pub(super) leaves: AtomicUsize,
    pub(super) dram_bytes: AtomicU64,
    pub(super) conflicts: AtomicU64,
    pub(super) visit_restarts: AtomicU64,
}

impl<W: VersionWord> fmt::Debug for OlcInnerOn<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OlcInnerOn")
            .field("fanout_max", &self.fanout_max)
            .field("leaves", &self.leaves)
            .field("dram_bytes", &self.dram_bytes)
            .finish_non_exhaustive()
    }
}

/// One node of a traversal: the version read before the content, the content read, and the
/// child taken.
pub(super) struct Step<'a, W> {
    pub(super) node: &'a Node<W>,
    pub(super) version: u64,
    pub(super) content: &'a Content<W>,
    pub(super) index: usize,
}

impl<W> Clone for Step<'_, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W> Copy for Step<'_, W> {}

/// The nodes a traversal read, root first (on the stack: readers do not allocate).
pub(super) struct Path<'a, W> {
    steps: [Option<Step<'a, W>>; PATH_STEPS_MAX],
    len: usize,
}

/// An optimistic traversal met a lock or a change: start over.
#[derive(Debug)]
pub(super) struct Conflict;

impl<'a, W: VersionWord> Path<'a, W> {
    pub(super) fn new() -> Self {
        Self { steps: [None; PATH_STEPS_MAX], len: 0 }
    }

    fn push(&mut self, step: Step<'a, W>) -> Result<(), Conflict> {
        // A stale chain cannot be longer than the tree once validated (levels never change),
        // but a bound costs nothing.
        let slot = self.steps.get_mut(self.len).ok_or(Conflict)?;
        *slot = Some(step);
        self.len += 1;
        Ok(())
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, index: usize) -> Step<'a, W> {
        assert!(index < self.len);
        self.steps[index].expect("steps below len are set")
    }

    pub(super) fn last(&self) -> Step<'a, W> {
        self.get(self.len - 1)
    }

    pub(super) fn steps(&self) -> impl DoubleEndedIterator<Item = Step<'a, W>> + '_ {
        self.steps[..self.len].iter().map(|s| s.expect("steps below len are set"))
    }

    /// Whether every node read is still at the version read.
    pub(super) fn validate(&self) -> bool {
        self.steps().all(|s| s.node.lock.validate(s.version))
    }
}

impl<W: VersionWord> OlcInnerOn<W> {
    /// [`InnerIndex::build`] with a chosen fanout (at least [`FANOUT_MIN`]).
    #[allow(clippy::needless_pass_by_value, reason = "the shape of InnerIndex::build")]
    pub fn build_with_fanout(leaves: Vec<(Box<[u8]>, LeafId)>, fanout_max: usize) -> Self {
        assert!(!leaves.is_empty(), "an FPTree has at least one leaf");
        assert!(fanout_max >= FANOUT_MIN, "fanout {fanout_max} below {FANOUT_MIN}");
        let leaf_count = leaves.len();
        for (i, pair) in leaves.windows(2).enumerate() {
            assert!(i == 0 || pair[0].0 < pair[1].0, "separators must strictly increase");
            assert!(pair[1].0.len() <= KEY_BYTES_MAX, "separator longer than {KEY_BYTES_MAX}");
        }
        // Bottom-up bulk load. Nodes are filled to 3/4 so that the splits after a recovery
        // do not start at once everywhere.
        let fill = (fanout_max * 3 / 4).max(2);
        let mut dram_bytes = 0;
        let mut level: Vec<Bounded<Content<W>>> = group(&leaves, fill, |lower, group| {
            let keys = Keys::pack(group[1..].iter().map(|(k, _)| &**k));
            let children = Children::Leaves(group.iter().map(|&(_, leaf)| leaf).collect());
            (lower, Content::new(keys, children))
        });
        let mut height = 1;
        while level.len() > 1 {
            height += 1;
            assert!(height <= HEIGHT_MAX, "tree higher than {HEIGHT_MAX}");
            let nodes: Vec<Bounded<Arc<Node<W>>>> = level
                .into_iter()
                .map(|(lower, content)| {
                    dram_bytes += content.bytes();
                    (lower, Arc::new(Node::new(content)))
                })
                .collect();
            level = group(&nodes, fill, |lower, group| {
                let keys = Keys::pack(group[1..].iter().map(|(k, _)| &**k));
                let children = Children::Nodes(group.iter().map(|(_, n)| Arc::clone(n)).collect());
                (lower, Content::new(keys, children))
            });
        }
        let (_, root) = level.pop().expect("one root");
        dram_bytes += root.bytes();
        let sentinel =
            Content::new(Keys::default(), Children::Nodes(vec![Arc::new(Node::new(root))]));
        dram_bytes += sentinel.bytes();
        Self {
            sentinel: Node::new(sentinel),
            fanout_max,
            leaves: AtomicUsize::new(leaf_count),
            dram_bytes: AtomicU64::new(dram_bytes),
            conflicts: AtomicU64::new(0),
            visit_restarts: AtomicU64::new(0),
        }
    }

    /// The most children a node holds.
    pub fn fanout_max(&self) -> usize {
        self.fanout_max
    }

    /// How many times operations started over so far.
    pub fn restarts(&self) -> Restarts {
        Restarts {
            conflicts: self.conflicts.load(Ordering::Relaxed),
            visits: self.visit_restarts.load(Ordering::Relaxed),
        }
    }

    pub(super) fn count_conflict(&self) {
        self.conflicts.fetch_add(1, Ordering::Relaxed);
        W::backoff();
    }

    /// Optimistic descent to the bottom node covering `key`, with lock coupling: each child's
    /// version is read before its parent is validated, so every step was linked when taken.
    pub(super) fn descend<'a>(
        &'a self,
        key: &[u8],
        guard: &'a Guard,
        path: &mut Path<'a, W>,
    ) -> Result<(), Conflict> {
        let mut node = &self.sentinel;
        let mut version = node.lock.read().ok_or(Conflict)?;
        loop {
            let content = node.content(guard);
            let index = content.keys.child_index(key);
            path.push(Step { node, version, content, index })?;
            let Children::Nodes(nodes) = &content.children else { return Ok(()) };
            let child = &*nodes[index];
            let child_version = child.lock.read().ok_or(Conflict)?;
            if !node.lock.validate(version) {
                return Err(Conflict);
            }
            (node, version) = (child, child_version);
        }
    }

    /// FindLeafAndPrevLeaf after [`Self::descend`]: the leaf before the one `path` reached,
    /// recording in `prev_path` the nodes read for it outside `path`.
    fn prev_leaf<'a>(
        path: &Path<'a, W>,
        guard: &'a Guard,
        prev_path: &mut Path<'a, W>,
    ) -> Result<Option<LeafId>, Conflict> {
        let bottom = path.last();
        let Children::Leaves(leaves) = &bottom.content.children else {
            unreachable!("a descent ends at a bottom node")
        };
        if bottom.index > 0 {
            return Ok(Some(leaves[bottom.index - 1]));
        }
        // The leaf before is the rightmost of the subtree left of the deepest ancestor where
        // the descent did not go to the first child; none: this is the first leaf.
        let Some(anchor) = path.steps().rev().skip(1).find(|s| s.index > 0) else {
            return Ok(None);
        };
        let Children::Nodes(nodes) = &anchor.content.children else {
            unreachable!("an ancestor is not a bottom node")
        };
        let mut node = &*nodes[anchor.index - 1];
        let mut version = node.lock.read().ok_or(Conflict)?;
        if !anchor.node.lock.validate(anchor.version) {
            return Err(Conflict);
        }
        loop {
            let content = node.content(guard);
            let index = content.children.len() - 1;
            prev_path.push(Step { node, version, content, index })?;
            match &content.children {
                Children::Leaves(leaves) => return Ok(Some(leaves[index])),
                Children::Nodes(nodes) => {
                    let child = &*nodes[index];
                    let child_version = child.lock.read().ok_or(Conflict)?;
                    if !node.lock.validate(version) {
                        return Err(Conflict);
                    }
                    (node, version) = (child, child_version);
                }
            }
        }
    }

    /// The leaf covering `key` and the one before, from a traversal validated as a whole
    /// (so `visit` sees a pair that was true at one instant).
    fn find<'a>(
        &'a self,
        key: &[u8],
        guard: &'a Guard,
        path: &mut Path<'a, W>,
        prev_path: &mut Path<'a, W>,
    ) -> Result<(LeafId, Option<LeafId>), Conflict> {
        self.descend(key, guard, path)?;
        let prev = Self::prev_leaf(path, guard, prev_path)?;
        let bottom = path.last();
        let Children::Leaves(leaves) = &bottom.content.children else {
            unreachable!("a descent ends at a bottom node")
        };
        if !(path.validate() && prev_path.validate()) {
            return Err(Conflict);
        }
        Ok((leaves[bottom.index], prev))
    }
}

/// Something with its lower bound.
type Bounded<T> = (Box<[u8]>, T);

/// Splits `items` (each with its lower bound) into groups of about `fill`, evenly, and makes
/// one parent item of each group: `(lower bound of its first item, made)`.
fn group<T, U>(
    items: &[Bounded<T>],
    fill: usize,
    mut make: impl FnMut(Box<[u8]>, &[(Box<[u8]>, T)]) -> (Box<[u8]>, U),
) -> Vec<(Box<[u8]>, U)> {
    let groups = items.len().div_ceil(fill);
    let (base, extra) = (items.len() / groups, items.len() % groups);
    let mut made = Vec::with_capacity(groups);
    let mut start = 0;
    for g in 0..groups {
        let end = start + base + usize::from(g < extra);
        made.push(make(items[start].0.clone(), &items[start..end]));
        start = end;
    }
    assert_eq!(start, items.len());
    made
}

impl<W: VersionWord> InnerIndex for OlcInnerOn<W> {
    fn build(leaves: Vec<(Box<[u8]>, LeafId)>) -> Self {
        Self::build_with_fanout(leaves, FANOUT_MAX_DEFAULT)
    }

    fn locate<T>(
        &self,
        key: &[u8],
        mut visit: impl FnMut(LeafId, Option<LeafId>) -> Visit<T>,
        mut undo: impl FnMut(T),
    ) -> T {
        loop {
            let guard = pin();
            let mut path = Path::new();
            let mut prev_path = Path::new();
            let Ok((leaf, prev)) = self.find(key, &guard, &mut path, &mut prev_path) else {
                self.count_conflict();
                continue;
            };
            match visit(leaf, prev) {
                Visit::Done(done) if path.validate() && prev_path.validate() => return done,
                Visit::Done(done) => {
                    undo(done);
                    self.count_conflict();
                }
                Visit::Restart => {
                    self.visit_restarts.fetch_add(1, Ordering::Relaxed);
                    W::backoff();
                }
            }
        }
    }

    fn insert_separator(&self, separator: &[u8], right: LeafId) {
        self.insert(separator, right);
    }

    fn remove_leaf(&self, key: &[u8], leaf: LeafId) {
        self.remove(key, leaf);
    }

    fn leaf_count(&self) -> usize {
        self.leaves.load(Ordering::Relaxed)
    }

    fn dram_bytes(&self) -> u64 {
        self.dram_bytes.load(Ordering::Relaxed)
    }
}
