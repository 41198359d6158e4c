//! Ordered iteration over a key range (the contest API's *iterate*).
//!
//! In-order traversal of the prefix tree: at each inner node first the `end` slot (the key
//! that ends at this level is a prefix of every key below, so it is the smallest), then the
//! buckets in ascending fragment order. Fragments are read most significant bits first, so
//! this is ascending unsigned byte order. The walk descends only into the bucket chain of
//! the range's lower bound and the subtrees after it, and stops at the first key past the
//! upper bound or at the limit. It uses an explicit stack: paths can be 8192 levels deep.
//!
//! Like gets, a scan takes no lock. Each content node it returns was current when its slot
//! was loaded; a key present and unmodified throughout the scan is found because its slot,
//! or an inner node that replaced it by expansion (holding the same content node), is on
//! the walk.

use std::ops::Bound;

use crossbeam_epoch::Guard;
use lamina_core::{Entry, KeyRange};

use crate::fragment;
use crate::node::{Inner, Node};
use crate::tree::Trie;

/// Index of the end slot in a frame's visiting order; bucket `b` is `b + 1`.
const END_SLOT: usize = 0;

struct Frame<'a, const FANOUT: usize> {
    node: &'a Inner<FANOUT>,
    level: usize,
    /// Next slot to visit: [`END_SLOT`], or bucket + 1; `FANOUT + 1` when done.
    next: usize,
    /// Whether the path to this node equals the lower bound's first `level` fragments.
    on_lower_path: bool,
}

impl<const FANOUT: usize> Trie<FANOUT> {
    /// Appends up to `limit - out.len()` pairs of `range` to `out`, in ascending key order.
    pub(crate) fn scan_into(
        &self,
        range: &KeyRange,
        limit: usize,
        guard: &Guard,
        out: &mut Vec<Entry>,
    ) {
        if out.len() >= limit || range.is_empty() {
            return;
        }
        let lower: Option<&[u8]> = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let lower_count = lower.map_or(0, fragment::count::<FANOUT>);
        // Where a frame starts: on the lower bound's path below its last fragment, at the
        // bucket of the bound's fragment (the end slot and smaller buckets hold smaller
        // keys); everywhere else, at the end slot.
        let first_slot = |level: usize, on_lower_path: bool| match lower {
            Some(lower) if on_lower_path && level < lower_count => {
                fragment::at::<FANOUT>(lower, level) + 1
            }
            _ => END_SLOT,
        };
        let mut stack: Vec<Frame<'_, FANOUT>> = vec![Frame {
            node: self.root(),
            level: 0,
            next: first_slot(0, lower.is_some()),
            on_lower_path: lower.is_some(),
        }];
        while let Some(frame) = stack.last_mut() {
            if frame.next > FANOUT {
                stack.pop();
                continue;
            }
            let visiting = frame.next;
            frame.next += 1;
            let slot = if visiting == END_SLOT {
                &frame.node.end
            } else {
                &frame.node.buckets[visiting - 1]
            };
            match slot.load::<FANOUT>(guard) {
                Node::Empty => {}
                Node::Content(content) => {
                    let key = content.key();
                    if range.is_past_end(key) {
                        return;
                    }
                    if range.contains(key) {
                        out.push((key.to_vec(), content.value().to_vec()));
                        if out.len() >= limit {
                            return;
                        }
                    }
                }
                Node::Inner(child) => {
                    let (level, on_path) = (frame.level, frame.on_lower_path);
                    let child_on_lower_path = on_path
                        && visiting != END_SLOT
                        && level < lower_count
                        && lower.is_some_and(|l| fragment::at::<FANOUT>(l, level) == visiting - 1);
                    stack.push(Frame {
                        node: child,
                        level: level + 1,
                        next: first_slot(level + 1, child_on_lower_path),
                        on_lower_path: child_on_lower_path,
                    });
                }
            }
        }
    }
}
