//! The inner nodes' memory: a node is a version lock and a pointer to its current content, an
//! immutable snapshot that writers replace whole (copy-on-write) while they hold the lock.
//!
//! Why copy-on-write: optimistic readers read a node while a writer may be changing it. In
//! Leis et al.'s C++ that is a racy read validated afterwards; in Rust a racy non-atomic read
//! is undefined behaviour even if its result is thrown away. With immutable contents every
//! read is of a finished snapshot, and the version lock only has to say whether the snapshots
//! a traversal read were still current together. The price is a copy of one node (a few KiB
//! at the default fanout) per structural change, which happens once per leaf split or leaf
//! removal, next to a persistent leaf split that flushes a whole leaf.
//!
//! Reclamation: a replaced content is retired to crossbeam-epoch and freed once no reader
//! that could have loaded it is still pinned. Child nodes are reference-counted by the
//! contents that name them, so a node lives as long as any content (current or retired but
//! still readable) names it: a reader never reaches freed memory.

use std::mem::size_of;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned};

use super::contract::LeafId;
use super::version::{VersionLock, VersionWord};

/// Keys of one node, packed in one allocation: `count` key ends (`u32`, little-endian), then
/// the key bytes; key `i` is `bytes[end(i - 1)..end(i)]` (`end(-1)` = 0). One allocation for
/// the offsets and all key bytes keeps a node's binary search in few cache lines (an
/// optimistic descent is bound by cache misses: node header, content, keys, children).
#[derive(Debug, Default)]
pub(crate) struct Keys {
    packed: Box<[u8]>,
    count: usize,
}

/// Bytes of one key end.
const END_BYTES: usize = size_of::<u32>();

impl Keys {
    pub(crate) fn pack<'k>(keys: impl IntoIterator<Item = &'k [u8]> + Clone) -> Self {
        let (count, total) = keys
            .clone()
            .into_iter()
            .fold((0, 0), |(count, total), key| (count + 1, total + key.len()));
        let mut packed = vec![0; count * END_BYTES + total];
        let (ends, bytes) = packed.split_at_mut(count * END_BYTES);
        let mut end = 0;
        for (i, key) in keys.into_iter().enumerate() {
            bytes[end..end + key.len()].copy_from_slice(key);
            end += key.len();
            let end_bytes = u32::try_from(end).expect("a node's keys fit in 4 GiB").to_le_bytes();
            ends[i * END_BYTES..(i + 1) * END_BYTES].copy_from_slice(&end_bytes);
        }
        assert_eq!(end, total);
        Self { packed: packed.into(), count }
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    fn end(&self, index: usize) -> usize {
        let at = index * END_BYTES;
        u32::from_le_bytes(self.packed[at..at + END_BYTES].try_into().expect("4 bytes")) as usize
    }

    pub(crate) fn get(&self, index: usize) -> &[u8] {
        assert!(index < self.count, "key {index} of {}", self.count);
        let base = self.count * END_BYTES;
        let start = if index == 0 { 0 } else { self.end(index - 1) };
        &self.packed[base + start..base + self.end(index)]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + Clone {
        (0..self.len()).map(|i| self.get(i))
    }

    /// How many keys are `<= key`: the index of the child covering `key`.
    pub(crate) fn child_index(&self, key: &[u8]) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            if self.get(middle) <= key {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    fn bytes(&self) -> usize {
        self.packed.len()
    }
}

/// A node's children: leaves at the bottom level, nodes above.
#[derive(Debug)]
pub(crate) enum Children<W> {
    Leaves(Vec<LeafId>),
    Nodes(Vec<Arc<Node<W>>>),
}

/// One child to insert.
#[derive(Debug)]
pub(crate) enum Child<W> {
    Leaf(LeafId),
    Node(Arc<Node<W>>),
}

impl<W> Children<W> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Children::Leaves(leaves) => leaves.len(),
            Children::Nodes(nodes) => nodes.len(),
        }
    }
}

/// The right half of a split node and the key between the halves (its lower bound).
pub(crate) type Split<W> = (Box<[u8]>, Content<W>);

/// An immutable snapshot of a node: `keys.len() + 1` children, child `i` covering the keys
/// from `keys[i - 1]` (the node's lower bound for `i = 0`) up to `keys[i]` (the node's upper
/// bound for the last child).
#[derive(Debug)]
pub(crate) struct Content<W> {
    pub(crate) keys: Keys,
    pub(crate) children: Children<W>,
}

impl<W> Content<W> {
    pub(crate) fn new(keys: Keys, children: Children<W>) -> Self {
        assert_eq!(children.len(), keys.len() + 1, "a node has one child more than keys");
        Self { keys, children }
    }

    /// DRAM this content holds, with the node headers of its child nodes.
    pub(crate) fn bytes(&self) -> u64 {
        let children = match &self.children {
            Children::Leaves(leaves) => leaves.len() * size_of::<LeafId>(),
            Children::Nodes(nodes) => nodes.len() * (size_of::<usize>() + NODE_BYTES),
        };
        (size_of::<Self>() + self.keys.bytes() + children) as u64
    }

    /// This content with `child` inserted right after child `index`, `key` its lower bound;
    /// split in two if that makes more than `fanout_max` children: then also the key that
    /// separates the halves and the right half.
    pub(crate) fn with_inserted(
        &self,
        index: usize,
        key: &[u8],
        child: Child<W>,
        fanout_max: usize,
    ) -> (Self, Option<Split<W>>) {
        let keys: Vec<&[u8]> = {
            let mut keys: Vec<&[u8]> = self.keys.iter().collect();
            keys.insert(index, key);
            keys
        };
        let mut children = match (&self.children, child) {
            (Children::Leaves(leaves), Child::Leaf(leaf)) => {
                let mut leaves = leaves.clone();
                leaves.insert(index + 1, leaf);
                Children::Leaves(leaves)
            }
            (Children::Nodes(nodes), Child::Node(node)) => {
                let mut nodes = nodes.clone();
                nodes.insert(index + 1, node);
                Children::Nodes(nodes)
            }
            _ => panic!("a child of the wrong level"),
        };
        let count = children.len();
        if count <= fanout_max {
            return (Self::new(Keys::pack(keys.iter().copied()), children), None);
        }
        // Split: the left keeps `left_count` children, the key between the halves goes up.
        let left_count = count / 2;
        let right_children = match &mut children {
            Children::Leaves(leaves) => Children::Leaves(leaves.split_off(left_count)),
            Children::Nodes(nodes) => Children::Nodes(nodes.split_off(left_count)),
        };
        let left = Self::new(Keys::pack(keys[..left_count - 1].iter().copied()), children);
        let right = Self::new(Keys::pack(keys[left_count..].iter().copied()), right_children);
        (left, Some((keys[left_count - 1].into(), right)))
    }

    /// This content without child `index` and the key that bounds it (its lower bound, or its
    /// upper bound for child 0), and that key: for child 0 it becomes the node's new lower
    /// bound, to be written into the ancestor that holds the old one.
    pub(crate) fn without(&self, index: usize) -> (Self, Box<[u8]>) {
        assert!(self.children.len() > 1, "a node keeps at least one child");
        let key_index = index.saturating_sub(1);
        let keys = Keys::pack(
            self.keys.iter().enumerate().filter(|&(i, _)| i != key_index).map(|(_, key)| key),
        );
        let children = match &self.children {
            Children::Leaves(leaves) => Children::Leaves(without(leaves, index)),
            Children::Nodes(nodes) => Children::Nodes(without(nodes, index)),
        };
        (Self::new(keys, children), self.keys.get(key_index).into())
    }

    /// This content with key `index` replaced by `key`.
    pub(crate) fn with_key(&self, index: usize, key: &[u8]) -> Self {
        let keys = Keys::pack(
            self.keys.iter().enumerate().map(|(i, old)| if i == index { key } else { old }),
        );
        let children = match &self.children {
            Children::Leaves(leaves) => Children::Leaves(leaves.clone()),
            Children::Nodes(nodes) => Children::Nodes(nodes.clone()),
        };
        Self::new(keys, children)
    }
}

fn without<T: Clone>(items: &[T], index: usize) -> Vec<T> {
    let mut items = items.to_vec();
    items.remove(index);
    items
}

/// A node's own allocation: the `Arc` header and the node.
const NODE_BYTES: usize = 2 * size_of::<usize>() + size_of::<Node<std::sync::atomic::AtomicU64>>();

/// An inner node: a version lock and its current content.
#[derive(Debug)]
pub(crate) struct Node<W> {
    pub(crate) lock: VersionLock<W>,
    content: Atomic<Content<W>>,
}

impl<W: VersionWord> Node<W> {
    pub(crate) fn new(content: Content<W>) -> Self {
        Self { lock: VersionLock::new(), content: Atomic::new(content) }
    }

    /// The current content. Acquire: pairs with the Release of [`Self::replace`], so the
    /// content's fields are visible, and keeps later version checks after this load.
    pub(crate) fn content<'a>(&'a self, guard: &'a Guard) -> &'a Content<W> {
        W::schedule_point();
        let shared = self.content.load(Ordering::Acquire, guard);
        // SAFETY: the pointer is never null (set at construction, only ever swapped for
        // another `Owned`). The content it points to is freed either by `replace`, through
        // `defer_destroy` after it has been unlinked, so not before every guard pinned when
        // it could still be loaded (including `guard`) is dropped; or by `Node::drop`, which
        // runs only when no content names this node any more and no `&self` exists, while
        // the `&'a self` here is alive for all of `'a`.
        unsafe { shared.deref() }
    }

    /// Replaces the content; the caller holds the write lock (one writer at a time).
    pub(crate) fn replace(&self, content: Content<W>, guard: &Guard) {
        debug_assert!(self.lock.is_locked(), "contents change only under the write lock");
        W::schedule_point();
        let old = self.content.swap(Owned::new(content), Ordering::AcqRel, guard);
        // SAFETY: `old` was just unlinked by this swap, and only the lock holder swaps, so no
        // other thread retires it; readers that loaded it before are pinned, and the epoch
        // defers the free until all of them have unpinned. No new reader can load it.
        unsafe { guard.defer_destroy(old) };
    }
}

impl<W> Drop for Node<W> {
    fn drop(&mut self) {
        let content = std::mem::replace(&mut self.content, Atomic::null());
        // SAFETY: `&mut self`: no reader holds this node (readers reach a node only through
        // a pinned content that holds an `Arc` to it, or through the owning tree), so the
        // current content is reachable from here only; it was never retired (only replaced
        // contents are).
        drop(unsafe { content.into_owned() });
    }
}

/// Pins the current thread (readers and writers pin once per attempt).
pub(crate) fn pin() -> Guard {
    epoch::pin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_keys_read_back_and_route_like_a_sorted_list() {
        let list: [&[u8]; 4] = [b"b", b"", b"dd", &[0xff; 1024]];
        let keys = Keys::pack(list);
        assert_eq!(keys.len(), 4);
        assert_eq!(keys.iter().collect::<Vec<_>>(), list);
        let sorted = Keys::pack([&b"b"[..], b"d", b"f"]);
        let routes: Vec<usize> = [&b""[..], b"a", b"b", b"c", b"d", b"e", b"f", b"g"]
            .map(|k| sorted.child_index(k))
            .into();
        assert_eq!(routes, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(Keys::pack([]).child_index(b"x"), 0);
    }
}
