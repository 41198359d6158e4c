//! The two node kinds of the generalized prefix tree (paper section 2) and the tagged slot
//! words that link them.
//!
//! - An [`Inner`] node has `FANOUT = 2^k'` buckets, one per value of the fragment at its
//!   level, plus an `end` slot for the one key that ends exactly at this level (a key that
//!   is a prefix of the keys below it), and the node's write lock.
//! - A content node ([`crate::content`]) holds one key, its value and the sequence number of
//!   the write that produced it. It is immutable once published (read-copy-update): a write
//!   builds a new content node and swaps the slot word.
//!
//! # Tagged pointers
//!
//! A slot is one `AtomicUsize`: `0` is empty, a content node's address has its lowest bit
//! set, an inner node's address has it clear (both are 8-byte aligned). This is the paper's
//! "type of the next node stored inside the pointer", using the low bit instead of the high
//! one so it works for any address-space layout; the reader decides its code path from the
//! word it already loaded.
//!
//! # Reclamation: epochs instead of per-node reader counters
//!
//! The paper gives every content node a counter that readers increment and decrement, and
//! recycles a node once it reads zero. That costs every reader two atomic read-modify-writes
//! on a shared cache line per node, and has a window (between loading the pointer and
//! incrementing the counter) that needs extra care. We use crossbeam-epoch instead: a
//! reader pins the thread's epoch once per operation (no write to any node), and a writer
//! that unlinks a content node hands it to [`retire_content`], which frees it only after
//! every thread pinned at the time has unpinned. The price, measured in
//! `docs/results/trie.md`: freed blocks return to the allocator late (cold, possibly on
//! another thread), where counters would let a block be reused at once when no reader holds
//! it. Inner nodes are never unlinked (the tree
//! never shrinks; see the crate README), so they are freed only when the whole tree is
//! dropped, when no reader can exist.
//!
//! Soundness rests on one rule, checked by construction: a content node is retired only by
//! the writer that swapped it out of its slot, while holding the slot's node lock, so it is
//! retired exactly once and is unreachable from the tree for any reader pinned afterwards.

use crossbeam_epoch::Guard;

use crate::arena::Arena;
use crate::content::{Content, ContentBox, Header};
use crate::lock::NodeLock;
use crate::sync::{AtomicUsize, Ordering};

const CONTENT_TAG: usize = 1;
const EMPTY: usize = 0;

/// An internal node: `FANOUT` buckets, the "key ends here" slot, and the write lock.
#[derive(Debug)]
pub(crate) struct Inner<const FANOUT: usize> {
    pub(crate) lock: NodeLock,
    pub(crate) end: Slot,
    pub(crate) buckets: [Slot; FANOUT],
}

impl<const FANOUT: usize> Inner<FANOUT> {
    #[allow(clippy::unnecessary_box_returns)] // the address is what gets published
    pub(crate) fn new() -> Box<Self> {
        Box::new(Inner {
            lock: NodeLock::new(),
            end: Slot::empty(),
            buckets: std::array::from_fn(|_| Slot::empty()),
        })
    }

    /// A new, empty inner node in `arena` (below the root; the root is a [`Box`]). It stays
    /// allocated until the arena is dropped with the tree.
    pub(crate) fn new_in(arena: &Arena<Self>) -> *mut Self {
        arena
            .alloc(Inner {
                lock: NodeLock::new(),
                end: Slot::empty(),
                buckets: std::array::from_fn(|_| Slot::empty()),
            })
            .as_ptr()
    }

    /// The slot for `fragment` (`None`: the end slot).
    pub(crate) fn slot(&self, fragment: Option<usize>) -> &Slot {
        match fragment {
            Some(f) => &self.buckets[f],
            None => &self.end,
        }
    }

    /// Bytes of memory one inner node holds (the root's box; the others are counted by
    /// their arena's blocks).
    pub(crate) const fn memory_bytes() -> u64 {
        std::mem::size_of::<Self>() as u64
    }
}

/// What a slot word points to, borrowed for as long as both the tree and the epoch guard
/// are borrowed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Node<'a, const FANOUT: usize> {
    Empty,
    Content(Content<'a>),
    Inner(&'a Inner<FANOUT>),
}

/// One tagged pointer word (see the module doc).
#[derive(Debug)]
pub(crate) struct Slot {
    word: AtomicUsize,
}

impl Slot {
    pub(crate) fn empty() -> Self {
        Slot { word: AtomicUsize::new(EMPTY) }
    }

    /// Loads the slot (Acquire: the pointee's contents, written before its publication
    /// with Release, are visible).
    #[inline]
    pub(crate) fn load<'a, const FANOUT: usize>(&'a self, _guard: &'a Guard) -> Node<'a, FANOUT> {
        decode(self.word.load(Ordering::Acquire))
    }

    /// Publishes `content`, returning the content node it replaced, which the caller must
    /// retire. The caller holds the lock of the node owning this slot.
    pub(crate) fn publish_content(&self, content: ContentBox) -> Option<*mut Header> {
        let word = content.into_raw() as usize;
        assert_eq!(word & CONTENT_TAG, 0, "content nodes are at least 2-byte aligned");
        self.swap(word | CONTENT_TAG)
    }

    /// Publishes a new inner node in place of a content node (dynamic expansion). The
    /// replaced content node has been linked into `inner`, so it is returned to nobody.
    /// The caller holds the lock of the node owning this slot.
    pub(crate) fn publish_inner<const FANOUT: usize>(&self, inner: *mut Inner<FANOUT>) {
        let word = inner as usize;
        assert_eq!(word & CONTENT_TAG, 0, "inner nodes are at least 2-byte aligned");
        // The old word is the content node now linked below `inner`: not retired.
        let old = self.word.swap(word, Ordering::AcqRel);
        assert!(old & CONTENT_TAG != 0, "expansion replaces a content node");
    }

    /// Empties the slot, returning the content node it held, which the caller must retire.
    /// The caller holds the lock of the node owning this slot.
    pub(crate) fn clear(&self) -> Option<*mut Header> {
        self.swap(EMPTY)
    }

    /// Links a node into a slot of an inner node that is not yet published (no reader
    /// can see it, so no ordering is needed beyond the later publication).
    pub(crate) fn init_content(&self, content: *const Header) {
        debug_assert_eq!(self.word.load(Ordering::Relaxed), EMPTY);
        self.word.store(content as usize | CONTENT_TAG, Ordering::Relaxed);
    }

    /// Like [`Slot::init_content`], for an inner node.
    pub(crate) fn init_inner<const FANOUT: usize>(&self, inner: *mut Inner<FANOUT>) {
        debug_assert_eq!(self.word.load(Ordering::Relaxed), EMPTY);
        self.word.store(inner as usize, Ordering::Relaxed);
    }

    fn swap(&self, new: usize) -> Option<*mut Header> {
        let old = self.word.swap(new, Ordering::AcqRel);
        match old {
            EMPTY => None,
            w if w & CONTENT_TAG != 0 => Some((w & !CONTENT_TAG) as *mut Header),
            _ => panic!("a slot holding an inner node is never overwritten"),
        }
    }

    /// Takes the word out for teardown (exclusive access).
    pub(crate) fn take_for_drop<const FANOUT: usize>(&mut self) -> Owned<FANOUT> {
        let word = std::mem::replace(self.word.get_mut(), EMPTY);
        match word {
            EMPTY => Owned::Empty,
            w if w & CONTENT_TAG != 0 => {
                // SAFETY: with `&mut` access to the tree no reader exists, and every content
                // pointer linked in the tree came from `ContentBox::into_raw` and is linked
                // exactly once.
                Owned::Content(unsafe { ContentBox::from_raw((w & !CONTENT_TAG) as *mut Header) })
            }
            // An arena node: the caller drops it in place; the arena frees its memory.
            w => Owned::Inner(w as *mut Inner<FANOUT>),
        }
    }
}

/// A node taken out of the tree at teardown.
#[derive(Debug)]
pub(crate) enum Owned<const FANOUT: usize> {
    Empty,
    Content(ContentBox),
    /// An inner node in the tree's arena, linked exactly once, now unlinked.
    Inner(*mut Inner<FANOUT>),
}

#[inline]
fn decode<'a, const FANOUT: usize>(word: usize) -> Node<'a, FANOUT> {
    match word {
        EMPTY => Node::Empty,
        w if w & CONTENT_TAG != 0 => {
            // SAFETY: a non-empty tagged word points to a content node published with
            // Release (visible through our Acquire load). It is freed only after every guard
            // pinned before its retirement is dropped; the caller's guard outlives 'a.
            Node::Content(unsafe { Content::from_ptr((w & !CONTENT_TAG) as *const Header) })
        }
        // SAFETY: inner nodes (the root box, or in the tree's arena) are freed only when the
        // tree is dropped, which needs `&mut` access; 'a is bounded by a shared borrow of
        // the tree.
        w => Node::Inner(unsafe { &*(w as *const Inner<FANOUT>) }),
    }
}

/// Frees an unlinked content node once no pinned reader can still hold it.
///
/// # Safety
///
/// `content` came from [`Slot::publish_content`] or [`Slot::clear`] (so it was swapped out
/// of the tree by the caller, under the slot's node lock), and is retired only once.
pub(crate) unsafe fn retire_content(content: *mut Header, guard: &Guard) {
    // SAFETY: the caller just swapped the node out; it stays allocated and unchanged until
    // the deferred free below runs.
    let bytes = unsafe { Content::from_ptr(content) }.memory_bytes();
    crate::retired::retired(bytes);
    let content = SendPtr(content);
    // SAFETY: the node is unreachable for threads pinned from now on, and the epoch scheme
    // runs the closure only after every thread pinned before this call has unpinned. The
    // caller guarantees single retirement, so the block is freed exactly once.
    unsafe {
        guard.defer_unchecked(move || {
            let content = content;
            drop(ContentBox::from_raw(content.0));
            crate::retired::freed(bytes);
        });
    }
}

/// A raw pointer that may be moved to the thread that runs the deferred free.
struct SendPtr(*mut Header);
// SAFETY: a content node is plain bytes (Send); the pointer is its unique owner once retired.
unsafe impl Send for SendPtr {}
