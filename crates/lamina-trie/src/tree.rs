//! The generalized prefix tree (paper section 2): lookups, single-lock writes with
//! re-validation, and dynamic expansion. Ordered iteration is in [`crate::scan`].
//!
//! # Invariants
//!
//! 1. The *home* of a key is the one slot that may hold its content node: walking from the
//!    root along the key's fragments, the first slot that is not an inner node (or the
//!    `end` slot of the node at level `fragment count`, for a key that ends there). A content
//!    node hangs as high as its unique prefix allows (dynamic expansion): it is pushed one
//!    or more levels down only when a second key needs the same slot.
//! 2. A slot changes only under the lock of the inner node that owns it, and a slot that
//!    holds an inner node never changes again (inner nodes are never removed). So a key's
//!    home only ever moves down, and only under the lock of its old home's node.
//! 3. Content nodes are immutable after publication (read-copy-update).
//!
//! From 2, a writer that locked a node and re-read the key's slot there has exclusive
//! access to the key: if the slot still holds content (or nothing), it is the key's home,
//! and every other writer of the key must take the same lock to change it. If the slot now
//! holds an inner node, someone expanded it meanwhile: the writer unlocks and continues the
//! walk from there (paper, Example 1: "it locks the internal node and checks whether the
//! situation is still the same, otherwise it has to retry"). Compare-and-swap is therefore
//! atomic with respect to every other writer of the key.
//!
//! Readers take no lock. A reader that loaded a content node before a writer swapped it
//! out still reads a complete, immutable version (linearized before the swap); the epoch
//! guard keeps it allocated.

use crossbeam_epoch::Guard;

use crate::arena::Arena;
use crate::content::{Content, ContentBox};
use crate::counter::StripedCounter;
use crate::fragment;
use crate::memory::MemoryGate;
use crate::node::{Inner, Node, Owned, retire_content};
use crate::sync::{AtomicU64, Ordering};

/// Bytes a content node's record takes in the log (`LiveRecords::live_bytes`).
fn log_bytes(content: Content<'_>) -> u64 {
    lamina_storage::log::put_record_bytes(content.key().len(), content.value().len())
}

/// What a writer decided to do with a key, given its current content.
#[derive(Debug)]
pub(crate) enum Change {
    /// Leave the key as it is.
    Keep,
    /// Store this content node (its key must be the key written).
    Put(ContentBox),
    /// Remove the key if present.
    Delete,
}

/// The write [`Trie::modify`] is about to publish, shown to its `commit` callback (under
/// the node lock, so a key's writes are committed in the order they are applied).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Applied<'a> {
    /// The key.
    pub(crate) key: &'a [u8],
    /// Whether the write deletes the key (otherwise it stores the decided content).
    pub(crate) deleted: bool,
    /// Bytes the write adds to the live records as the log counts them (negative: frees).
    pub(crate) log_delta: i64,
    /// Bytes of memory the new content node takes beyond the one it replaces (0 if none).
    pub(crate) memory_growth: u64,
}

/// What [`Trie::modify`] did.
#[derive(Debug)]
pub(crate) struct Modified<R> {
    /// What `decide` returned.
    pub(crate) result: R,
    /// Whether the key existed before.
    pub(crate) existed: bool,
}

/// The generalized prefix tree with `FANOUT = 2^k'` buckets per inner node.
#[derive(Debug)]
pub(crate) struct Trie<const FANOUT: usize> {
    root: Box<Inner<FANOUT>>,
    /// Every inner node below the root (packed; freed with the tree).
    arena: Arena<Inner<FANOUT>>,
    /// Last sequence number assigned to a write.
    seq_last: AtomicU64,
    keys: StripedCounter,
    content_bytes: StripedCounter,
    /// Bytes the live records take in the log ([`log_bytes`] of every content node).
    log_bytes: StripedCounter,
    inner_nodes: StripedCounter,
    memory_gate: MemoryGate,
}

/// Counters of a tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TreeCounters {
    pub(crate) keys: u64,
    pub(crate) memory_bytes: u64,
    pub(crate) inner_nodes: u64,
    pub(crate) seq_last: u64,
    /// Content nodes unlinked and not yet freed, process-wide (in `memory_bytes`).
    pub(crate) retired_bytes: u64,
}

/// The slot selector for level `level` of `key`: its fragment, or `None` (the end slot) if
/// the key has exactly `level` fragments.
#[inline]
fn selector<const FANOUT: usize>(key: &[u8], level: usize) -> Option<usize> {
    let count = fragment::count::<FANOUT>(key);
    debug_assert!(level <= count, "walked past the end of the key");
    (level < count).then(|| fragment::at::<FANOUT>(key, level))
}

impl<const FANOUT: usize> Trie<FANOUT> {
    pub(crate) fn new(memory_limit_bytes: Option<u64>) -> Self {
        assert!(FANOUT.is_power_of_two() && (2..=256).contains(&FANOUT), "fanout {FANOUT}");
        Trie {
            root: Inner::new(),
            arena: Arena::default(),
            seq_last: AtomicU64::new(0),
            keys: StripedCounter::default(),
            content_bytes: StripedCounter::default(),
            log_bytes: StripedCounter::default(),
            memory_gate: MemoryGate::new(memory_limit_bytes),
            inner_nodes: {
                let root = StripedCounter::default();
                root.add(1);
                root
            },
        }
    }

    pub(crate) fn root(&self) -> &Inner<FANOUT> {
        &self.root
    }

    /// The content node of `key`, if present. Lock-free: one Acquire load per level.
    pub(crate) fn get<'a>(&'a self, key: &[u8], guard: &'a Guard) -> Option<Content<'a>> {
        let mut node: &Inner<FANOUT> = &self.root;
        let mut level = 0;
        loop {
            match node.slot(selector::<FANOUT>(key, level)).load::<FANOUT>(guard) {
                Node::Empty => return None,
                Node::Content(content) => return (content.key() == key).then_some(content),
                Node::Inner(child) => {
                    node = child;
                    level += 1;
                }
            }
        }
    }

    /// Makes sure later writes get sequence numbers above `seq` (after recovery).
    pub(crate) fn advance_seq(&self, seq: u64) {
        self.seq_last.fetch_max(seq, Ordering::Relaxed);
    }

    /// Changes `key` atomically: walks to the key's home, locks its node, re-validates, and
    /// calls `decide` with the current content (under the lock). A `Put`, or a `Delete` of
    /// a present key, is then handed to `commit` (still under the lock) with a `publish`
    /// callback that `commit` must call exactly once, with the write's sequence number, if
    /// it succeeds: that is where the durable engine logs the write and applies it inside
    /// the log's apply hook. If `commit` fails, nothing changes and its error is returned.
    pub(crate) fn modify<R, E>(
        &self,
        key: &[u8],
        guard: &Guard,
        decide: impl FnOnce(Option<Content<'_>>) -> (Change, R),
        commit: impl FnOnce(&Applied<'_>, &mut dyn FnMut(u64)) -> Result<(), E>,
    ) -> Result<Modified<R>, E> {
        let mut node: &Inner<FANOUT> = &self.root;
        let mut level = 0;
        loop {
            let select = selector::<FANOUT>(key, level);
            let slot = node.slot(select);
            // Descend without locking while the path is made of inner nodes.
            if let Node::Inner(child) = slot.load::<FANOUT>(guard) {
                node = child;
                level += 1;
                continue;
            }
            let held = node.lock.lock();
            // Re-validate: an expansion may have replaced the slot since we looked.
            let current = match slot.load::<FANOUT>(guard) {
                Node::Inner(child) => {
                    drop(held);
                    node = child;
                    level += 1;
                    continue;
                }
                Node::Empty => None,
                Node::Content(content) => Some(content),
            };
            let mine = current.filter(|c| c.key() == key);
            debug_assert!(
                select.is_some() || current.is_none() || mine.is_some(),
                "only the key itself can end at this level"
            );
            let (change, result) = decide(mine);
            let existed = mine.is_some();
            let mut published = false;
            let old_log_bytes = mine.map_or(0, log_bytes);
            match change {
                Change::Keep => published = true,
                Change::Put(content) => {
                    let new_log_bytes = log_bytes(content.as_content());
                    let new_memory = content.as_content().memory_bytes();
                    assert_eq!(
                        content.as_content().key(),
                        key,
                        "a write stores the key it was given"
                    );
                    let mut pending = Some(content);
                    let mut publish = |seq: u64| {
                        let mut content = pending.take().expect("a write is published once");
                        content.set_seq(seq);
                        let removed = mine.map_or(0, Content::memory_bytes);
                        self.add_memory(content.as_content().memory_bytes(), removed);
                        self.add_log_bytes(new_log_bytes, old_log_bytes);
                        match current {
                            Some(other) if mine.is_none() => {
                                self.expand(slot, level + 1, other, content);
                            }
                            _ => {
                                if let Some(old) = slot.publish_content(content) {
                                    // SAFETY: `old` was just swapped out under the node lock.
                                    unsafe { retire_content(old, guard) };
                                }
                            }
                        }
                        if !existed {
                            self.keys.add(1);
                        }
                        published = true;
                    };
                    let applied = Applied {
                        key,
                        deleted: false,
                        log_delta: new_log_bytes as i64 - old_log_bytes as i64,
                        memory_growth: new_memory
                            .saturating_sub(mine.map_or(0, Content::memory_bytes)),
                    };
                    commit(&applied, &mut publish)?;
                }
                Change::Delete => match mine {
                    None => published = true,
                    Some(old_content) => {
                        let mut publish = |_seq: u64| {
                            assert!(!published, "a write is published once");
                            self.add_memory(0, old_content.memory_bytes());
                            self.add_log_bytes(0, old_log_bytes);
                            let old = slot.clear().expect("the slot held the key's content");
                            // SAFETY: `old` was just swapped out under the node lock.
                            unsafe { retire_content(old, guard) };
                            self.keys.sub(1);
                            published = true;
                        };
                        let applied = Applied {
                            key,
                            deleted: true,
                            log_delta: -(old_log_bytes as i64),
                            memory_growth: 0,
                        };
                        commit(&applied, &mut publish)?;
                    }
                },
            }
            assert!(published, "a successful commit publishes its write");
            drop(held);
            return Ok(Modified { result, existed });
        }
    }

    /// Dynamic expansion (paper section 2, Figure 3): `slot` holds `other`, a different key
    /// sharing the path so far; builds the chain of new inner nodes from `level` down to
    /// where the two keys diverge, hangs both content nodes there, and publishes the chain
    /// with one pointer swap. `other` moves down as it is: it holds its whole key, so no
    /// copy is needed (the paper copies because it stores key tails).
    fn expand(
        &self,
        slot: &crate::node::Slot,
        level: usize,
        other: Content<'_>,
        content: ContentBox,
    ) {
        let (key, other_key) = (content.as_content().key(), other.key());
        let mut diverge = level;
        while selector::<FANOUT>(key, diverge) == selector::<FANOUT>(other_key, diverge) {
            assert!(
                selector::<FANOUT>(key, diverge).is_some(),
                "two distinct keys cannot end at the same level of the same path"
            );
            diverge += 1;
        }
        // The new nodes are ours alone until `publish_inner` (no reader can reach them).
        let bottom = Inner::<FANOUT>::new_in(&self.arena);
        let (select, other_select) =
            (selector::<FANOUT>(key, diverge), selector::<FANOUT>(other_key, diverge));
        // SAFETY: `bottom` is a live arena node, unpublished; slots take `&self`.
        let bottom_ref = unsafe { &*bottom };
        bottom_ref.slot(other_select).init_content(other.as_ptr());
        bottom_ref.slot(select).init_content(content.into_raw());
        let mut chain = bottom;
        for up in (level..diverge).rev() {
            let parent = Inner::<FANOUT>::new_in(&self.arena);
            // SAFETY: as for `bottom`.
            unsafe { &*parent }.slot(selector::<FANOUT>(other_key, up)).init_inner(chain);
            chain = parent;
        }
        let created = (diverge - level + 1) as u64;
        self.inner_nodes.add(created);
        slot.publish_inner(chain);
    }

    fn add_log_bytes(&self, added: u64, removed: u64) {
        if added > removed {
            self.log_bytes.add(added - removed);
        } else if removed > added {
            self.log_bytes.sub(removed - added);
        }
    }

    /// Bytes the live records take in the log.
    pub(crate) fn live_log_bytes(&self) -> u64 {
        self.log_bytes.get()
    }

    /// Admits (or refuses, past the memory limit) a write that adds `growth` bytes. The
    /// limit is on `memory_bytes` less what the content allocator holds idle: a new content
    /// node takes idle blocks first (freed ones stay with the process, see crate::slab).
    pub(crate) fn admit_memory(&self, growth: u64) -> lamina_core::Result<()> {
        self.memory_gate.admit(growth, || {
            self.counters().memory_bytes.saturating_sub(crate::pool::idle_bytes() as u64)
        })
    }

    fn add_memory(&self, added: u64, removed: u64) {
        if added > removed {
            self.content_bytes.add(added - removed);
        } else if removed > added {
            self.content_bytes.sub(removed - added);
        }
    }

    pub(crate) fn counters(&self) -> TreeCounters {
        let inner_nodes = self.inner_nodes.get();
        let retired_bytes = crate::retired::bytes();
        TreeCounters {
            keys: self.keys.get(),
            // Live content blocks, the root, the arena's blocks (the nodes and the unused
            // end of the last block), content nodes unlinked but not yet freed by the epoch
            // collector, and what the process-wide content allocator holds idle (the last
            // two shared with any other tree in the process; see crate::retired and
            // crate::slab).
            memory_bytes: self.content_bytes.get()
                + Inner::<FANOUT>::memory_bytes()
                + self.arena.reserved_bytes() as u64
                + retired_bytes
                + crate::pool::idle_bytes() as u64,
            inner_nodes,
            seq_last: self.seq_last.load(Ordering::Relaxed),
            retired_bytes,
        }
    }
}

impl<const FANOUT: usize> Drop for Trie<FANOUT> {
    /// Frees every node iteratively (the tree may be up to 8192 levels deep).
    /// Content nodes are freed one by one, arena nodes dropped in place (the arena frees
    /// their memory afterwards), the root box as usual.
    fn drop(&mut self) {
        let root: *mut Inner<FANOUT> = &raw mut *self.root;
        let mut stack = vec![root];
        while let Some(ptr) = stack.pop() {
            // SAFETY: `ptr` is the root or an arena node linked exactly once and unlinked by
            // `take_for_drop`; `&mut self` excludes every other access.
            let Inner { end, buckets, .. } = unsafe { &mut *ptr };
            for slot in std::iter::once(end).chain(buckets.iter_mut()) {
                match slot.take_for_drop::<FANOUT>() {
                    Owned::Inner(child) => stack.push(child),
                    Owned::Content(content) => drop(content),
                    Owned::Empty => {}
                }
            }
            if ptr != root {
                // SAFETY: an arena node, visited once; the arena never drops values itself.
                unsafe { std::ptr::drop_in_place(ptr) };
            }
        }
    }
}
