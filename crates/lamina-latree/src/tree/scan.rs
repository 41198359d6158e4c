//! Range scans (section 2.1): the leaves holding the range, in key order, and the entries of
//! every buffer above them (each buffer read once), resolved per key by sequence number:
//! the newest buffer entry wins over older ones and over the leaf, deletes shadow. The tree
//! is walked depth first in key order rather than along the sibling links, so that each
//! buffer is met exactly when its subtree's leaves are (see the README's adaptations).

use std::collections::BTreeMap;
use std::ops::Bound;

use lamina_core::Result;

use super::core::{LaTree, pool_id};
use crate::buffer::{BufferEntry, BufferOp};
use crate::node::{Node, NodeId};

/// Most entries one scan returns.
pub const SCAN_LIMIT_MAX: usize = 1 << 20;

/// Newest known state of a key met so far: (seq, value or `None` for deleted); leaves are
/// seq 0.
type Resolved = BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)>;

/// The prefix of the resolved keys no later buffer can change: keys up to `upto`, of which
/// `live` are not deleted.
#[derive(Default)]
struct Final {
    upto: Option<Vec<u8>>,
    live: usize,
}

impl LaTree {
    /// Up to `limit` (at most [`SCAN_LIMIT_MAX`]) live pairs with `start <= key < end`
    /// (`end` `None`: to the last key), in key order.
    pub fn range(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let limit = limit.min(SCAN_LIMIT_MAX);
        let mut resolved = Resolved::new();
        let mut final_ = Final::default();
        self.scan_node(self.root, start, end, limit, &mut resolved, &mut final_)?;
        Ok(resolved
            .into_iter()
            .filter_map(|(key, (_, value))| value.map(|v| (key, v)))
            .take(limit)
            .collect())
    }

    /// Scans `id` (whose range meets `[start, end)`); returns true once `limit` live pairs
    /// below the node's high end are final.
    fn scan_node(
        &self,
        id: NodeId,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        resolved: &mut Resolved,
        final_: &mut Final,
    ) -> Result<bool> {
        let in_range = |key: &[u8]| key >= start && end.is_none_or(|end| key < end);
        match &*self.peek(id)? {
            Node::Leaf(leaf) => {
                for (key, value) in leaf.iter().filter(|(k, _)| in_range(k)) {
                    resolved.entry(key.to_vec()).or_insert((0, Some(value.to_vec())));
                }
                // Every buffer above this leaf has been read: keys up to its last are final
                // (buffers of later subtrees hold only larger keys).
                let Some(high) = leaf.last_key() else { return Ok(false) };
                let low = final_.upto.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                final_.live += resolved
                    .range::<[u8], _>((low, Bound::Included(high)))
                    .filter(|(_, (_, value))| value.is_some())
                    .count();
                final_.upto = Some(high.to_vec());
                Ok(final_.live >= limit)
            }
            Node::Inner(inner) => {
                if id == self.root
                    && let Some(draining) = &self.draining
                {
                    // The root's draining batch (`drain.rs`), resolved by seq like a buffer.
                    for entry in draining.left().iter().filter(|e| in_range(e.key())) {
                        resolve(resolved, entry);
                    }
                }
                if let Some(buffer) = inner.buffer {
                    for entry in self.pool.read(pool_id(buffer))?.newest_first() {
                        if in_range(entry.key()) {
                            resolve(resolved, entry);
                        }
                    }
                }
                let first = inner.child_index(start);
                for index in first..inner.children.len() {
                    let (low, _) = inner.child_bounds(index);
                    if index > first && end.is_some_and(|end| low.is_some_and(|low| low >= end)) {
                        break;
                    }
                    if self.scan_node(inner.children[index], start, end, limit, resolved, final_)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }
}

/// Records `entry` for its key unless a newer one was met.
fn resolve(resolved: &mut Resolved, entry: &BufferEntry) {
    let value = match entry.op() {
        BufferOp::Put(value) => Some(value.clone()),
        BufferOp::Delete => None,
    };
    let slot = resolved.entry(entry.key().to_vec()).or_insert((0, None));
    if entry.seq() > slot.0 {
        *slot = (entry.seq(), value);
    }
}
