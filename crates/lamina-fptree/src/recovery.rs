//! Opening a tree: initialization or recovery (Algorithm 9): the micro-logs are replayed
//! (Algorithms 4, 7, 11, 13), the leaf list is walked and checked, blobs leaked by an
//! interrupted insert, update or delete are freed (Algorithm 17), empty leaves left by an
//! interrupted delete are removed, the leaf-group state is rebuilt, leaf locks are reset, and
//! the inner nodes are rebuilt from the leaves (`InnerIndex::build`). The list is followed
//! here; each leaf's records are checked on several threads (`crate::recovery_records`).
//!
//! Corruption detection: every leaf on the list must be a leaf (magic, a block or a group slot
//! of the right size, no cycle), every valid slot must name an allocated record blob whose
//! checksum holds and whose fingerprint matches, a blob is named by one valid slot, and keys
//! are unique and ordered across the list. Anything else is `Corruption`.

use std::collections::{HashMap, HashSet};

use lamina_core::codec::{Decode, Encode};
use lamina_core::{Error, Result};
use lamina_storage::pmem::{PPtr, PmemAllocator, PmemRegion};

use crate::groups::{GROUP_HEADER_BYTES, GroupState};
use crate::inner::{InnerIndex, LeafId};
use crate::layout::{
    DELETE_LOGS, DELETE_LOGS_OFFSET, FpTreeConfig, GROUP_HEAD_PPTR, GROUP_LEAVES_MAX,
    GROUP_TAIL_PPTR, HEAD_LEAF_PPTR, LINE_BYTES, SPLIT_LOGS, SPLIT_LOGS_OFFSET, TREE_HEADER_OFFSET,
    TREE_MAGIC, TreeHeader,
};
use crate::leaf::{FULL_BITMAP, LEAF_BYTES, LEAF_MAGIC, LEAF_SLOTS, Pending};
use crate::microlog::{log_pointer, set_log_pointer};
use crate::recovery_records::{ChunkMarks, WalkedAndChecked};
use crate::store::Store;

/// What opening a tree did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The region held no tree (Algorithm 9 line 2): one was initialized.
    pub initialized: bool,
    /// Micro-logs found in use and replayed or reset.
    pub logs_replayed: u32,
    /// Leaves in the list after recovery.
    pub leaves: usize,
    /// Records in the tree.
    pub records: usize,
    /// Blobs that only an invalid slot named, freed (Algorithm 17 line 15).
    pub stray_blobs_freed: u32,
    /// Invalid slots naming a blob a valid slot also names, reset (Algorithm 17 line 13).
    pub stray_pointers_reset: u32,
    /// Empty leaves other than the first, removed (an interrupted delete's leaf removal).
    pub empty_leaves_removed: u32,
    /// Leaf groups with no leaf in use, freed.
    pub groups_released: u32,
}

/// One leaf found on the list.
struct Walked {
    at: u64,
    bitmap: u64,
    min_key: Option<Vec<u8>>,
}

/// Opens the tree in `alloc`'s region (initializing it if it holds none, with `config`).
pub(crate) fn open<R: PmemRegion + ?Sized, I: InnerIndex>(
    alloc: PmemAllocator<R>,
    config: FpTreeConfig,
) -> Result<(Store<R>, I, RecoveryReport)> {
    if !(1..=GROUP_LEAVES_MAX).contains(&config.group_leaves) {
        return Err(Error::option(
            "group_leaves",
            format!("{} is not in 1..={GROUP_LEAVES_MAX}", config.group_leaves),
        ));
    }
    let mut report = RecoveryReport::default();
    let mut header_bytes = [0u8; LINE_BYTES as usize];
    alloc.region().read(TREE_HEADER_OFFSET, &mut header_bytes)?;
    let mut store;
    if header_bytes[..8] == TREE_MAGIC {
        let path = alloc.region().path();
        let header =
            TreeHeader::decode(&header_bytes).map_err(|e| e.at(&path, TREE_HEADER_OFFSET))?;
        if header.leaf_slots as usize != LEAF_SLOTS || u64::from(header.leaf_bytes) != LEAF_BYTES {
            return Err(Error::Incompatible {
                reason: format!(
                    "the tree has leaves of {} slots and {} bytes, this build {LEAF_SLOTS} and \
                     {LEAF_BYTES}",
                    header.leaf_slots, header.leaf_bytes
                ),
            });
        }
        let head = log_pointer(&**alloc.region(), HEAD_LEAF_PPTR)?.ok_or_else(|| {
            Error::corruption(&path, HEAD_LEAF_PPTR, "the tree has no first leaf")
        })?;
        store = Store::new(alloc, header.config, head);
        store.pending_slots = header.pending_slots;
    } else {
        store = Store::new(alloc, config, 0);
        store.initialize()?;
        report.initialized = true;
    }
    // Algorithm 9 lines 4-7, then Appendix B's group logs.
    for i in 0..SPLIT_LOGS as u64 {
        report.logs_replayed += u32::from(store.recover_split(SPLIT_LOGS_OFFSET + i * LINE_BYTES)?);
    }
    for i in 0..DELETE_LOGS as u64 {
        report.logs_replayed +=
            u32::from(store.recover_delete(DELETE_LOGS_OFFSET + i * LINE_BYTES)?);
    }
    let groups = if store.config.leaf_groups {
        report.logs_replayed += u32::from(store.recover_get_leaf()?);
        report.logs_replayed += u32::from(store.recover_free_leaf()?);
        store.walk_groups()?
    } else {
        Vec::new()
    };
    let walked = store.walk_leaves(&groups, &mut report)?;
    let kept = store.remove_empty_leaves(walked, &mut report)?;
    if store.config.leaf_groups {
        store.rebuild_groups(groups, &kept, &mut report)?;
    }
    report.leaves = kept.len();
    let leaves: Vec<(Box<[u8]>, LeafId)> = kept
        .into_iter()
        .map(|w| (w.min_key.unwrap_or_default().into_boxed_slice(), w.at))
        .collect();
    let inner = I::build(leaves); // Algorithm 9 line 8
    Ok((store, inner, report))
}

impl<R: PmemRegion + ?Sized> Store<R> {
    /// Algorithm 9 line 2 (`Tree.init`): the first leaf (and group), then the header, last.
    /// Idempotent: a crash during it leaves no header, and it runs again.
    fn initialize(&mut self) -> Result<()> {
        let region = self.alloc.region().clone();
        let path = self.path();
        let existing = log_pointer(&*region, HEAD_LEAF_PPTR)?;
        if let Some(head) = existing {
            // Only a crashed initialization leaves a first leaf without a header; refuse a
            // region whose leaves hold data (its header was damaged).
            let leaf = self.leaf_at(self.pptr(head))?;
            if leaf.magic() == LEAF_MAGIC && (leaf.bitmap() != 0 || !leaf.next().is_null()) {
                return Err(Error::corruption(
                    &path,
                    TREE_HEADER_OFFSET,
                    "the tree header is missing but the leaves hold data",
                ));
            }
        }
        if self.config.leaf_groups {
            let group = match log_pointer(&*region, GROUP_HEAD_PPTR)? {
                Some(group) => group,
                None => self.alloc.allocate(GROUP_HEAD_PPTR, self.group_bytes())?.offset,
            };
            let mut header = [0u8; GROUP_HEADER_BYTES as usize];
            header[16..24].copy_from_slice(&crate::groups::GROUP_MAGIC.to_le_bytes());
            header[24..28].copy_from_slice(&self.config.group_leaves.to_le_bytes());
            region.write_persist(group, &header)?;
            set_log_pointer(&*region, GROUP_TAIL_PPTR, self.file_id(), group)?;
            self.head = self.group_leaf(group, 0);
            set_log_pointer(&*region, HEAD_LEAF_PPTR, self.file_id(), self.head)?;
        } else {
            self.head = match existing {
                Some(head) => head,
                None => self.alloc.allocate(HEAD_LEAF_PPTR, LEAF_BYTES)?.offset,
            };
        }
        self.leaf(self.head).format(0)?;
        let header = TreeHeader {
            leaf_slots: LEAF_SLOTS as u32,
            leaf_bytes: LEAF_BYTES as u32,
            config: self.config,
            pending_slots: self.pending_slots,
        };
        // The magic last, in its own 8-byte (p-atomic) store: a crash tearing the header's
        // write leaves the magic zero and the next open initializes again, never a
        // half-written header with the magic (unopenable).
        let encoded = header.encode();
        let magic_bytes = TREE_MAGIC.len();
        region.write_persist(TREE_HEADER_OFFSET + magic_bytes as u64, &encoded[magic_bytes..])?;
        region.fence();
        region.write_persist(TREE_HEADER_OFFSET, &encoded[..magic_bytes])
    }

    /// Walks and checks the leaf list (Algorithm 9 line 8's traversal, Algorithm 17's loop):
    /// resets every leaf lock, and frees or resets the blobs invalid slots still name. The
    /// list is followed on this thread (each leaf's place, magic and bitmap); the records are
    /// checked on several (`recovery_records`).
    fn walk_leaves(&self, groups: &[u64], report: &mut RecoveryReport) -> Result<Vec<Walked>> {
        let path = self.path();
        let corrupt = |at: u64, why: String| Error::corruption(&path, at, why);
        let layout = self.alloc.header().layout;
        let leaves_max = layout.region_bytes / LEAF_BYTES;
        let mut visited = ChunkMarks::new(layout.chunk_count);
        let mut groups_sorted = groups.to_vec();
        groups_sorted.sort_unstable();
        let WalkedAndChecked { leaves, checked, named } = self.walk_and_check(|emit| {
            let mut count = 0u64;
            let mut next = Some(self.pptr(self.head));
            while let Some(pptr) = next {
                let leaf = self.leaf_at(pptr)?;
                let chunk = layout.chunk_containing(leaf.at);
                if count >= leaves_max || !chunk.is_some_and(|c| visited.mark(c)) {
                    return Err(corrupt(leaf.at, "the leaf list has a cycle".into()));
                }
                self.check_leaf_home(leaf.at, &groups_sorted)?;
                if leaf.magic() != LEAF_MAGIC {
                    return Err(corrupt(leaf.at, "not a leaf (bad magic)".into()));
                }
                let word = leaf.bitmap_word();
                let pending_ok = if self.pending_slots {
                    Pending::decode(word).is_some()
                } else {
                    word & !FULL_BITMAP == 0
                };
                if !pending_ok {
                    return Err(corrupt(
                        leaf.at,
                        format!("bitmap word {word:#x} has bits past the slots"),
                    ));
                }
                emit(leaf.at, word);
                count += 1;
                let n = leaf.next();
                next = (!n.is_null()).then_some(n);
            }
            Ok(())
        })?;
        let mut walked: Vec<Walked> = Vec::with_capacity(leaves.len());
        let mut strays = Vec::new();
        let mut prev_max: Option<Vec<u8>> = None;
        for (&(at, word), leaf) in leaves.iter().zip(checked) {
            let bitmap = word & FULL_BITMAP;
            if let (Some(max), Some(min)) = (&prev_max, &leaf.min_key)
                && max >= min
            {
                return Err(corrupt(at, "leaves out of key order".into()));
            }
            report.records += leaf.records;
            if leaf.max_key.is_some() {
                prev_max = leaf.max_key;
            }
            strays.extend(leaf.strays);
            walked.push(Walked { at, bitmap, min_key: leaf.min_key });
        }
        self.free_strays(strays, &named, report)?;
        Ok(walked)
    }

    /// Where a leaf may live: its own block (per-leaf allocation) or a leaf position of a
    /// group on the group list (`groups_sorted`: the groups' offsets, ascending; the group a
    /// leaf may be in is the last one starting below it, found by binary search).
    fn check_leaf_home(&self, at: u64, groups_sorted: &[u64]) -> Result<()> {
        let ok = if self.config.leaf_groups {
            let below = groups_sorted.partition_point(|&g| g < at);
            below.checked_sub(1).map(|i| groups_sorted[i]).is_some_and(|g| {
                at < g + self.group_bytes()
                    && (at - g)
                        .checked_sub(GROUP_HEADER_BYTES)
                        .is_some_and(|into| into.is_multiple_of(LEAF_BYTES))
            })
        } else {
            self.alloc
                .block_of(self.pptr(at))
                .is_ok_and(|(o, bytes)| o == at && bytes >= LEAF_BYTES)
        };
        if ok {
            Ok(())
        } else {
            Err(Error::corruption(self.path(), at, "a leaf outside any leaf block or group"))
        }
    }

    /// Algorithm 17 lines 10-15, generalized: an invalid slot naming a blob that a valid slot
    /// names (an update, or the two leaves of a split) is reset; one naming a blob no valid
    /// slot names (an interrupted insert, update or delete) frees it.
    fn free_strays(
        &self,
        strays: Vec<(u64, PPtr, bool)>,
        named: &ChunkMarks,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        let mut freed = HashSet::new();
        for (slot_at, p, pending) in strays {
            let chunk = self.alloc.header().layout.chunk_at(p.offset);
            if chunk.is_some_and(|c| named.contains(c)) || freed.contains(&p.offset) {
                PPtr::NULL.write_to(self.region(), slot_at)?;
                self.region().persist(slot_at, PPtr::ENCODED_BYTES)?;
                self.region().fence();
                report.stray_pointers_reset += 1;
            } else if self.pending_slots && !pending {
                // No write in progress left this slot invalid: its bit was cleared by
                // damage, and freeing the blob would lose the record silently.
                return Err(Error::corruption(
                    self.path(),
                    slot_at,
                    "an invalid slot names a blob no write in progress explains (a valid \
                     bit cleared?)",
                ));
            } else {
                self.alloc.deallocate(slot_at).map_err(|e| {
                    Error::corruption(self.path(), slot_at, format!("an invalid slot: {e}"))
                })?;
                freed.insert(p.offset);
                report.stray_blobs_freed += 1;
            }
        }
        Ok(())
    }

    /// Removes the empty leaves other than the first (a crash between a delete's bitmap write
    /// and its leaf removal leaves one), through Algorithm 6.
    fn remove_empty_leaves(
        &self,
        walked: Vec<Walked>,
        report: &mut RecoveryReport,
    ) -> Result<Vec<Walked>> {
        let mut kept: Vec<Walked> = Vec::with_capacity(walked.len());
        for w in walked {
            match kept.last() {
                Some(prev) if w.bitmap == 0 => {
                    self.delete_leaf(self.leaf(w.at), self.leaf(prev.at), true, || {})?;
                    report.empty_leaves_removed += 1;
                }
                _ => kept.push(w),
            }
        }
        Ok(kept)
    }

    /// Appendix B "Recovery": the free-leaf vector is every group leaf not on the leaf list;
    /// groups with no leaf in use are freed (Algorithm 12 lines 5-19).
    fn rebuild_groups(
        &self,
        groups: Vec<u64>,
        kept: &[Walked],
        report: &mut RecoveryReport,
    ) -> Result<()> {
        let in_use: HashSet<u64> = kept.iter().map(|w| w.at).collect();
        let mut state =
            GroupState { groups: groups.clone(), free: Vec::new(), free_in_group: HashMap::new() };
        for &group in &groups {
            let mut free = 0;
            for i in 0..self.config.group_leaves {
                let leaf = self.group_leaf(group, i);
                if !in_use.contains(&leaf) {
                    state.free.push(leaf);
                    free += 1;
                }
            }
            state.free_in_group.insert(group, free);
        }
        for group in groups {
            if state.free_in_group[&group] == self.config.group_leaves {
                self.release_group(&mut state, group)?;
                report.groups_released += 1;
            }
        }
        *self.groups.lock() = state;
        Ok(())
    }
}
