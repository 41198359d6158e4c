//! `verify()`: every invariant of an NB-tree, checked (issue 16: "4.1, the linkage
//! property, Bloom filters agree with content, page accounting").
//!
//! [`check_structure`] is cheap (no I/O) and runs at every open; [`verify_tree`] reads
//! every d-tree.

use std::collections::BTreeSet;
use std::sync::Arc;

use lamina_core::{Error, Result};
use lamina_storage::Storage;

use crate::dtree;
use crate::entry::entry_bytes;
use crate::stree::{NodeId, STree};

/// The s-tree's shape: every child exists and is reached once, s-keys sorted and within
/// their node's range, fanout bounds (section 3.1.1), all leaves at one depth, the root
/// without an on-disk d-tree, lazy-removal pointers within range.
///
/// `children_slack` children beyond `f`, and as many below `ceil(f / 2)`, are tolerated (1
/// in the middle of a job, and in a committed state a crash left, which opening repairs;
/// 0 otherwise).
pub fn check_structure(
    tree: &STree,
    fanout: usize,
    children_slack: usize,
) -> std::result::Result<(), String> {
    if !tree.nodes.contains_key(&tree.root) {
        return Err(format!("the root s-node {} does not exist", tree.root));
    }
    if tree.root().dtree.is_some() {
        return Err("the root s-node has an on-disk d-tree".into());
    }
    let mut seen = BTreeSet::new();
    let mut leaf_depth = None;
    // (node, depth, low, high)
    let mut stack: Vec<(NodeId, usize, Bound, Bound)> = vec![(tree.root, 0, None, None)];
    while let Some((id, depth, low, high)) = stack.pop() {
        let Some(n) = tree.nodes.get(&id) else {
            return Err(format!("s-node {id} is referenced but does not exist"));
        };
        if !seen.insert(id) {
            return Err(format!("s-node {id} is reached twice"));
        }
        let in_range = |k: &[u8]| {
            low.as_deref().is_none_or(|l| k >= l) && high.as_deref().is_none_or(|h| k < h)
        };
        if n.is_leaf() {
            if !n.keys.is_empty() {
                return Err(format!("leaf s-node {id} has s-keys"));
            }
            if id != tree.root && *leaf_depth.get_or_insert(depth) != depth {
                return Err(format!("leaf s-node {id} is at depth {depth}, others deeper"));
            }
        } else {
            let min = if id == tree.root { 1 } else { fanout.div_ceil(2) - children_slack };
            let max = fanout + children_slack;
            if n.children.len() > max || n.children.len() < min {
                return Err(format!(
                    "s-node {id} has {} children (allowed {min}..={max})",
                    n.children.len()
                ));
            }
            if n.keys.len() + 1 != n.children.len() {
                return Err(format!(
                    "s-node {id} has {} s-keys for {} children",
                    n.keys.len(),
                    n.children.len()
                ));
            }
            if n.keys.windows(2).any(|w| w[0] >= w[1]) || !n.keys.iter().all(|k| in_range(k)) {
                return Err(format!("s-node {id}: s-keys unsorted or outside its range"));
            }
            for (i, &c) in n.children.iter().enumerate() {
                let (l, h) = n.child_range(i);
                let l = l.map(<[u8]>::to_vec).or_else(|| low.clone());
                let h = h.map(<[u8]>::to_vec).or_else(|| high.clone());
                stack.push((c, depth + 1, l, h));
            }
        }
        if n.flushed_through.is_some() && n.dtree.is_none() {
            return Err(format!("s-node {id} has a lazy-removal pointer but no d-tree"));
        }
    }
    if seen.len() != tree.nodes.len() {
        return Err(format!(
            "{} s-nodes are not reachable from the root",
            tree.nodes.len() - seen.len()
        ));
    }
    if tree.nodes.keys().any(|&id| id >= tree.next_node_id) {
        return Err("an s-node id is not below next_node_id".into());
    }
    Ok(())
}

/// A key bound of an s-node's range (`None`: open).
type Bound = Option<Vec<u8>>;

fn broken(reason: String) -> Error {
    Error::Corruption { file: "<nbtree s-tree>".into(), offset: 0, reason }
}

/// Everything [`check_structure`] checks, and by reading every d-tree: its own checks
/// (order, checksums, Bloom filter agrees with its keys), the cross-s-node linkage
/// property for every d-key, and the live sizes the s-nodes record. With `sizes_bounded`,
/// also the size limits of section 5.1 (`f (sigma + e)` per set of siblings, leaves at
/// most that too), which hold between jobs.
pub fn verify_tree(
    tree: &STree,
    fanout: usize,
    sigma_bytes: u64,
    children_slack: usize,
) -> Result<()> {
    check_structure(tree, fanout, children_slack).map_err(broken)?;
    if children_slack == 0 {
        sizes_hold(tree, fanout, sigma_bytes).map_err(broken)?;
    }
    let mut stack = vec![(tree.root, None::<Vec<u8>>, None::<Vec<u8>>)];
    while let Some((id, low, high)) = stack.pop() {
        let n = tree.node(id);
        if let Some(d) = &n.dtree {
            d.verify()?;
            let mut cursor = d.cursor(None)?;
            let (mut bytes, mut entries) = (0u64, 0u64);
            while let Some((key, slot)) = cursor.next_entry()? {
                if !n.is_live(&key) {
                    continue;
                }
                if low.as_deref().is_some_and(|l| key.as_slice() < l)
                    || high.as_deref().is_some_and(|h| key.as_slice() >= h)
                {
                    return Err(broken(format!(
                        "d-tree {} of s-node {id} holds a key outside the s-node's range \
                         (cross-s-node linkage property)",
                        d.id()
                    )));
                }
                if n.is_leaf() && slot.is_none() {
                    return Err(broken(format!("leaf s-node {id} holds a delete")));
                }
                bytes += entry_bytes(key.len(), slot.as_ref().map(Vec::len));
                entries += 1;
            }
            if (bytes, entries) != (n.live_bytes, n.live_entries) {
                return Err(broken(format!(
                    "s-node {id} records {} live bytes in {} entries, its d-tree holds {bytes} \
                     in {entries}",
                    n.live_bytes, n.live_entries
                )));
            }
        } else if n.live_entries != 0 {
            return Err(broken(format!("s-node {id} records entries but has no d-tree")));
        }
        for (i, &c) in n.children.iter().enumerate() {
            let (l, h) = n.child_range(i);
            let l = l.map(<[u8]>::to_vec).or_else(|| low.clone());
            let h = h.map(<[u8]>::to_vec).or_else(|| high.clone());
            stack.push((c, l, h));
        }
    }
    Ok(())
}

/// The size limits of section 5.1 that hold between jobs, from the live sizes the s-nodes
/// record (no d-tree is read): the children of an s-node hold at most `f (sigma + e)` (plus
/// the sigma of a flush in hand), and a leaf beside a sibling is not below `sigma / 4`.
pub fn sizes_hold(tree: &STree, fanout: usize, sigma_bytes: u64) -> Result<(), String> {
    let floor = crate::flush::underflow::leaf_underfull_bytes(sigma_bytes);
    for (&id, n) in &tree.nodes {
        if n.children.len() >= 2 {
            for &c in &n.children {
                let child = tree.node(c);
                if child.is_leaf() && child.live_bytes < floor {
                    return Err(format!(
                        "leaf s-node {c} holds {} bytes, below sigma / 4 = {floor}, beside a \
                         sibling (it should have been merged)",
                        child.live_bytes
                    ));
                }
            }
        }
        if !n.is_leaf() {
            let siblings: u64 = n.children.iter().map(|&c| tree.node(c).live_bytes).sum();
            let limit = siblings_bytes_max(fanout, sigma_bytes);
            if siblings > limit {
                return Err(format!(
                    "the children of s-node {id} hold {siblings} bytes, above f (sigma + e) = \
                     {limit}"
                ));
            }
        }
    }
    Ok(())
}

/// The between-jobs limit on what the children of one s-node hold together: `f (sigma + e)`
/// plus the sigma of a flush in hand (section 5.1).
fn siblings_bytes_max(fanout: usize, sigma_bytes: u64) -> u64 {
    let entry_max =
        entry_bytes(lamina_core::limits::KEY_BYTES_MAX, Some(lamina_core::limits::VALUE_BYTES_MAX));
    fanout as u64 * (sigma_bytes + entry_max) + sigma_bytes
}

/// The path from the root to the deepest s-node whose children hold more than
/// [`siblings_bytes_max`] (what a crash in the middle of a flush job can leave), if any: where
/// [`crate::flush::FlushJob::resume`] takes the job up again.
pub fn oversized_path(tree: &STree, fanout: usize, sigma_bytes: u64) -> Option<Vec<NodeId>> {
    let limit = siblings_bytes_max(fanout, sigma_bytes);
    let mut best: Option<Vec<NodeId>> = None;
    let mut stack = vec![vec![tree.root]];
    while let Some(path) = stack.pop() {
        let n = tree.node(*path.last().expect("a path"));
        if n.is_leaf() {
            continue;
        }
        let siblings: u64 = n.children.iter().map(|&c| tree.node(c).live_bytes).sum();
        if siblings > limit && best.as_ref().is_none_or(|b| b.len() < path.len()) {
            best = Some(path.clone());
        }
        for &c in &n.children {
            let mut longer = path.clone();
            longer.push(c);
            stack.push(longer);
        }
    }
    best
}

/// Page accounting: the storage holds a d-tree file for every d-tree the tree names. (Files
/// it does not name are not an error here: a replaced d-tree waits for its last reader;
/// recovery removes every unnamed one, which `tests/crash.rs` checks.)
pub fn verify_files(storage: &Arc<dyn Storage>, tree: &STree) -> Result<()> {
    let named: BTreeSet<u64> = tree.dtrees().map(|d| d.id()).collect();
    let on_disk: BTreeSet<u64> =
        storage.list()?.iter().filter_map(|n| dtree::parse_file_name(n)).collect();
    if let Some(missing) = named.difference(&on_disk).next() {
        return Err(broken(format!("d-tree {missing} is named but its file is missing")));
    }
    Ok(())
}
