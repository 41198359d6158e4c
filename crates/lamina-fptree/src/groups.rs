//! Where leaves come from: one allocation per leaf (the paper's concurrent configuration), or
//! leaf groups (section 4.3, Appendix B: Algorithms 10-13, the single-threaded
//! configuration): blocks of `group_leaves` leaves in a persistent linked list of groups,
//! with a transient vector of free leaves rebuilt at recovery.
//!
//! Group layout: a 64-byte header (next group, a persistent pointer, at 0; magic at 16; leaf
//! count (u32) at 24; the rest 0), then the leaves, `LEAF_BYTES` each.
//!
//! Adaptations: groups are taken and freed under one mutex (the paper's single-threaded
//! version needs none; this keeps the configuration safe under concurrency, at the cost the
//! paper names: a central synchronization point). `FreeLeaf` also moves the list's tail
//! pointer back when it frees the last group (the paper leaves the tail out), and recovery
//! rewrites the tail from the list.

use std::collections::HashMap;

use lamina_core::{Error, Result};
use lamina_storage::pmem::{PPtr, PmemRegion};

use crate::layout::{FREE_LEAF_LOG_OFFSET, GET_LEAF_LOG_OFFSET, GROUP_HEAD_PPTR, GROUP_TAIL_PPTR};
use crate::leaf::LEAF_BYTES;
use crate::microlog::{LOG_A, LOG_B, log_pointer, reset_log, set_log_pointer};
use crate::store::Store;

/// Bytes of a group's header.
pub const GROUP_HEADER_BYTES: u64 = 64;
/// Offset of the magic in a group header.
const GROUP_MAGIC_AT: u64 = 16;
/// Offset of the leaf count in a group header.
const GROUP_LEAVES_AT: u64 = 24;
/// The group magic word (`"FPGROUP"`, format 1).
pub const GROUP_MAGIC: u64 = u64::from_le_bytes(*b"FPGROUP\x01");

/// The transient state of leaf groups.
#[derive(Debug, Default)]
pub struct GroupState {
    /// Groups in list order.
    pub groups: Vec<u64>,
    /// Free leaves (the paper's `FreeLeavesVector`).
    pub free: Vec<u64>,
    /// Free leaves per group.
    pub free_in_group: HashMap<u64, u32>,
}

impl<R: PmemRegion + ?Sized> Store<R> {
    /// Bytes of one group.
    pub(crate) fn group_bytes(&self) -> u64 {
        GROUP_HEADER_BYTES + u64::from(self.config.group_leaves) * LEAF_BYTES
    }

    /// Leaf `i` of the group at `group`.
    #[allow(clippy::unused_self, reason = "a group's geometry is the tree's; kept a method")]
    pub(crate) fn group_leaf(&self, group: u64, i: u32) -> u64 {
        group + GROUP_HEADER_BYTES + u64::from(i) * LEAF_BYTES
    }

    /// A new leaf for a split (Algorithm 3 line 4), recorded in the split log's `PNewLeaf`
    /// at `dest_pptr_at`: allocated there, or taken from a leaf group and written there.
    pub(crate) fn new_leaf(&self, dest_pptr_at: u64) -> Result<u64> {
        if !self.config.leaf_groups {
            return Ok(self.alloc.allocate(dest_pptr_at, LEAF_BYTES)?.offset);
        }
        let at = self.get_leaf()?;
        if let Err(e) = set_log_pointer(self.region(), dest_pptr_at, self.file_id(), at) {
            self.groups.lock().free.push(at);
            return Err(e);
        }
        Ok(at)
    }

    /// Algorithm 10 (`GetLeaf`): a free leaf, allocating and linking a new group when none is
    /// left.
    pub(crate) fn get_leaf(&self) -> Result<u64> {
        let mut state = self.groups.lock();
        if state.free.is_empty() {
            let line = GET_LEAF_LOG_OFFSET;
            let group = self.alloc.allocate(line + LOG_A, self.group_bytes())?.offset; // line 3
            self.link_group(group)?; // lines 4-8
            state.groups.push(group);
            state.free_in_group.insert(group, self.config.group_leaves);
            state
                .free
                .extend((0..self.config.group_leaves).rev().map(|i| self.group_leaf(group, i)));
        }
        let leaf = state.free.pop().expect("a group has leaves");
        let group = self.group_of(&state, leaf)?;
        *state.free_in_group.get_mut(&group).expect("known group") -= 1;
        Ok(leaf)
    }

    /// Algorithm 10 lines 4-8: formats the new group's header, appends it to the list of
    /// groups, moves the tail pointer and resets the get-leaf log. Idempotent (Algorithm 11
    /// redoes it).
    fn link_group(&self, group: u64) -> Result<()> {
        let region = self.region();
        let mut header = [0u8; GROUP_HEADER_BYTES as usize];
        header[GROUP_MAGIC_AT as usize..][..8].copy_from_slice(&GROUP_MAGIC.to_le_bytes());
        header[GROUP_LEAVES_AT as usize..][..4]
            .copy_from_slice(&self.config.group_leaves.to_le_bytes());
        region.write_persist(group, &header)?;
        let tail = log_pointer(region, GROUP_TAIL_PPTR)?.expect("a tree has a group");
        set_log_pointer(region, tail, self.file_id(), group)?; // lines 4-5: Tail.Next
        set_log_pointer(region, GROUP_TAIL_PPTR, self.file_id(), group)?; // lines 6-7
        reset_log(region, GET_LEAF_LOG_OFFSET) // line 8
    }

    /// Algorithm 11 (`RecoverGetLeaf`).
    pub(crate) fn recover_get_leaf(&self) -> Result<bool> {
        let region = self.region();
        let Some(group) = log_pointer(region, GET_LEAF_LOG_OFFSET + LOG_A)? else {
            return Ok(false);
        };
        self.check_group_block(group)?;
        if log_pointer(region, GROUP_TAIL_PPTR)? == Some(group) {
            reset_log(region, GET_LEAF_LOG_OFFSET)?; // everything but the reset was done
        } else {
            self.link_group(group)?; // continue from line 4
        }
        Ok(true)
    }

    /// The group holding `leaf`.
    fn group_of(&self, state: &GroupState, leaf: u64) -> Result<u64> {
        state
            .groups
            .iter()
            .copied()
            .find(|&g| leaf > g && leaf < g + self.group_bytes())
            .ok_or_else(|| Error::corruption(self.path(), leaf, "leaf in no leaf group"))
    }

    /// Algorithm 12 (`FreeLeaf`): returns a removed leaf to the free vector, or frees its
    /// group when that was the group's last used leaf.
    pub(crate) fn free_leaf(&self, leaf: u64) -> Result<()> {
        let mut state = self.groups.lock();
        let group = self.group_of(&state, leaf)?;
        let free = state.free_in_group.get_mut(&group).expect("known group");
        *free += 1;
        if *free == self.config.group_leaves {
            self.release_group(&mut state, group) // lines 4-19
        } else {
            state.free.push(leaf); // line 21
            Ok(())
        }
    }

    /// Algorithm 12 lines 5-19: unlinks the free `group` and deallocates it.
    pub(crate) fn release_group(&self, state: &mut GroupState, group: u64) -> Result<()> {
        let region = self.region();
        let line = FREE_LEAF_LOG_OFFSET;
        let index = state.groups.iter().position(|&g| g == group).expect("known group");
        let end = group + self.group_bytes();
        state.free.retain(|&leaf| leaf < group || leaf >= end); // line 5
        set_log_pointer(region, line + LOG_A, self.file_id(), group)?; // lines 6-7
        let next = PPtr::read_from(region, group)?;
        if index == 0 {
            // Lines 9-11 (never the case here: the first group holds the first leaf).
            next.write_to(region, GROUP_HEAD_PPTR)?;
            region.persist(GROUP_HEAD_PPTR, PPtr::ENCODED_BYTES)?;
        } else {
            let prev = state.groups[index - 1];
            set_log_pointer(region, line + LOG_B, self.file_id(), prev)?; // lines 13-14
            next.write_to(region, prev)?; // line 15
            region.persist(prev, PPtr::ENCODED_BYTES)?; // line 16
            if log_pointer(region, GROUP_TAIL_PPTR)? == Some(group) {
                set_log_pointer(region, GROUP_TAIL_PPTR, self.file_id(), prev)?;
            }
        }
        region.fence();
        self.alloc.deallocate(line + LOG_A)?; // lines 17-18
        reset_log(region, line)?; // line 19
        state.groups.remove(index);
        state.free_in_group.remove(&group);
        Ok(())
    }

    /// Algorithm 13 (`RecoverFreeLeaf`).
    pub(crate) fn recover_free_leaf(&self) -> Result<bool> {
        let region = self.region();
        let line = FREE_LEAF_LOG_OFFSET;
        let current = log_pointer(region, line + LOG_A)?;
        let prev = log_pointer(region, line + LOG_B)?;
        let head = log_pointer(region, GROUP_HEAD_PPTR)?;
        let Some(group) = current else {
            if prev.is_some() {
                reset_log(region, line)?;
                return Ok(true);
            }
            return Ok(false);
        };
        self.check_group_block(group)?;
        let next = PPtr::read_from(region, group)?;
        if let Some(prev) = prev {
            // Crashed between lines 15 and 18: continue from line 15.
            self.check_group_block(prev)?;
            next.write_to(region, prev)?;
            region.persist(prev, PPtr::ENCODED_BYTES)?;
            region.fence();
            self.alloc.deallocate(line + LOG_A)?;
        } else if head == Some(group) {
            // Crashed at line 10: continue from there.
            next.write_to(region, GROUP_HEAD_PPTR)?;
            region.persist(GROUP_HEAD_PPTR, PPtr::ENCODED_BYTES)?;
            region.fence();
            self.alloc.deallocate(line + LOG_A)?;
        } else if (!next.is_null()).then_some(next.offset) == head {
            // Crashed after line 11: continue from line 18.
            self.alloc.deallocate(line + LOG_A)?;
        }
        reset_log(region, line)?;
        Ok(true)
    }

    /// Checks that a group pointer names an allocated block of a group's size.
    pub(crate) fn check_group_block(&self, group: u64) -> Result<()> {
        let (_, bytes) = self.alloc.block_of(self.pptr(group))?;
        if bytes < self.group_bytes() {
            return Err(Error::corruption(
                self.path(),
                group,
                format!("leaf group block of {bytes} bytes, a group needs {}", self.group_bytes()),
            ));
        }
        Ok(())
    }

    /// The list of groups from its head, each checked (block, magic, leaf count); then the
    /// tail pointer is rewritten if it disagrees (it only caches the list's end).
    pub(crate) fn walk_groups(&self) -> Result<Vec<u64>> {
        let region = self.region();
        let mut groups = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut at = log_pointer(region, GROUP_HEAD_PPTR)?;
        let groups_max = self.alloc.header().layout.region_bytes / self.group_bytes();
        while let Some(group) = at {
            self.check_group_block(group)?;
            let magic = region.load_u64(group + GROUP_MAGIC_AT)?;
            let leaves = region.load_u64(group + GROUP_LEAVES_AT)?;
            if magic != GROUP_MAGIC || leaves != u64::from(self.config.group_leaves) {
                return Err(Error::corruption(self.path(), group, "bad leaf group header"));
            }
            if groups.len() as u64 >= groups_max || !seen.insert(group) {
                return Err(Error::corruption(self.path(), group, "the group list has a cycle"));
            }
            groups.push(group);
            let next = PPtr::read_from(region, group)?;
            at = (!next.is_null()).then_some(next.offset);
        }
        let last = *groups.last().ok_or_else(|| {
            Error::corruption(self.path(), GROUP_HEAD_PPTR, "a tree with leaf groups has none")
        })?;
        if log_pointer(region, GROUP_TAIL_PPTR)? != Some(last) {
            set_log_pointer(region, GROUP_TAIL_PPTR, self.file_id(), last)?;
        }
        Ok(groups)
    }
}
