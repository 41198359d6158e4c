//! The write-coalescing buffer pool of section 4.2: entries appended to a buffer stay in
//! memory (the buffer's tail) until the pool's byte budget is exceeded; then the
//! "highest-packed buffer fragment" is written, packed with others into full pages
//! ([`super::packing`]). Reads return a buffer's tail and its fragments on flash, newest
//! first; [`BufferPool::sorted_entries`] streams it in (key, seq) order for an emptying.
//!
//! Invariants: the in-memory bytes (`tail_bytes`, the sum of the buffers' tails) stay within
//! the budget after every call that returns `Ok`, except that one entry larger than the whole
//! budget may sit alone in memory; `ranked` holds exactly the buffers with a non-empty tail,
//! keyed by (tail length descending, id); at most [`POOL_BUFFERS_MAX`] buffers are known.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use lamina_core::codec::Encode;
use lamina_core::{Error, Result};

use super::entry::BufferEntry;
use super::fragment::{BufferId, Fragment, FragmentAddr};
use super::packing::{Candidate, plan_unit};
use super::page::page_room_bytes;
use super::sorted::SortedEntries;
use super::state::{BufferState, BufferStats};
use super::store::{BufferStore, StoreStats};

/// Largest memory budget of a pool (4 GiB).
pub const POOL_BYTES_MAX: u64 = 4 << 30;
/// Most buffers one pool keeps track of (a tree of fanout 8 and K = 2 with 2^20 buffers has
/// some 2^26 leaves).
pub const POOL_BUFFERS_MAX: usize = 1 << 20;

/// A buffer as read: its in-memory tail and its fragments on flash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferContents {
    /// The newest entries, still in memory, oldest first.
    pub tail: Vec<BufferEntry>,
    /// The fragments on flash, newest first (each one's entries oldest first).
    pub fragments: Vec<Fragment>,
}

impl BufferContents {
    /// Every entry, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &BufferEntry> {
        self.tail.iter().rev().chain(self.fragments.iter().flat_map(|f| f.entries.iter().rev()))
    }
}

/// What a checkpoint records of a buffer whose entries are all on flash, and what
/// [`BufferPool::attach`] takes back after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferRoot {
    /// The newest fragment.
    pub head: FragmentAddr,
    /// Entries in the chain.
    pub entries: u64,
    /// Positions of the Y batch (section 2.3).
    pub y: Range<u64>,
}

/// Counters of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes of entries in memory.
    pub bytes_in_memory: u64,
    /// The budget.
    pub budget_bytes: u64,
    /// Buffers known.
    pub buffers: u64,
    /// The store's counters.
    pub store: StoreStats,
}

/// The write-coalescing pool over a [`BufferStore`].
#[derive(Debug)]
pub struct BufferPool {
    store: BufferStore,
    budget_bytes: u64,
    tail_bytes: u64,
    buffers: BTreeMap<BufferId, BufferState>,
    ranked: BTreeSet<(Reverse<usize>, BufferId)>,
}

impl BufferPool {
    /// A pool of `budget_bytes` of entries over `store`. A budget of a few pages lets the pool
    /// fill pages; a budget of 0 writes every entry as soon as another one arrives.
    pub fn new(store: BufferStore, budget_bytes: u64) -> Result<Self> {
        if budget_bytes > POOL_BYTES_MAX {
            let reason = format!("{budget_bytes} bytes, over the limit of {POOL_BYTES_MAX}");
            return Err(Error::option("buffer_pool_bytes", reason));
        }
        Ok(BufferPool {
            store,
            budget_bytes,
            tail_bytes: 0,
            buffers: BTreeMap::new(),
            ranked: BTreeSet::new(),
        })
    }

    /// The store.
    pub fn store(&self) -> &BufferStore {
        &self.store
    }

    /// Replaces the store by `store` (section 4.3's reclamation: the other partition) and
    /// returns the old one. Every buffer must have been emptied (forgotten) first.
    pub fn replace_store(&mut self, store: BufferStore) -> BufferStore {
        assert!(self.buffers.is_empty() && self.tail_bytes == 0, "every buffer was emptied");
        assert_eq!(self.store.page_bytes(), store.page_bytes(), "the partitions share a page size");
        let mut store = store;
        store.continue_counters(&self.store);
        std::mem::replace(&mut self.store, store)
    }

    /// Appends `entry` (an X entry) to `buffer`, creating the buffer if new. Writes page units
    /// first if the entry would take the pool over its budget; on error the entry was not
    /// appended.
    pub fn append(&mut self, buffer: BufferId, entry: BufferEntry) -> Result<()> {
        self.check_room_for(buffer)?;
        self.make_room(entry.encoded_len() as u64)?;
        self.push(buffer, entry);
        Ok(())
    }

    /// Appends the batch an emptying of the parent distributed to `buffer`, sorted by
    /// (key, seq): it becomes the buffer's Y (section 2.3), and the previous Y joins X. On
    /// error a prefix of the batch was appended (and is the Y).
    pub fn append_sorted_batch(&mut self, buffer: BufferId, batch: Vec<BufferEntry>) -> Result<()> {
        assert!(batch.is_sorted_by(|a, b| a.cmp_key_seq(b).is_le()), "a Y batch is sorted");
        if batch.is_empty() {
            return Ok(());
        }
        self.check_room_for(buffer)?;
        let start = self.buffers.get(&buffer).map_or(0, BufferState::entries);
        self.state_mut(buffer).y = start..start;
        for entry in batch {
            self.make_room(entry.encoded_len() as u64)?;
            self.push(buffer, entry);
            self.state_mut(buffer).y.end += 1;
        }
        Ok(())
    }

    /// Writes every tail to flash and syncs the store (a checkpoint's first step).
    pub fn flush_all(&mut self) -> Result<()> {
        self.write_tails()?;
        self.store.sync()
    }

    /// Writes every tail to flash without syncing (the caller syncs the store's file,
    /// [`BufferStore::sync_handle`]).
    pub fn write_tails(&mut self) -> Result<()> {
        while self.tail_bytes > 0 {
            self.write_unit()?;
        }
        Ok(())
    }

    /// Reads `buffer`: its tail and its fragments, newest first, following the back pointers
    /// on flash (each checked against the chain the pool remembers).
    pub fn read(&self, buffer: BufferId) -> Result<BufferContents> {
        let Some(state) = self.buffers.get(&buffer) else {
            return Ok(BufferContents { tail: Vec::new(), fragments: Vec::new() });
        };
        Ok(BufferContents { tail: state.tail.clone(), fragments: self.read_chain(buffer, state)? })
    }

    /// The fragments of `buffer` on flash, newest first (each checked against the chain).
    fn read_chain(&self, buffer: BufferId, state: &BufferState) -> Result<Vec<Fragment>> {
        let mut fragments = Vec::with_capacity(state.chain.len());
        let mut expected = state.chain.iter().rev();
        for item in self.store.walk(buffer, state.head()) {
            let (addr, fragment, _pages) = item?;
            let link = expected.next().expect("the walk follows the chain");
            if link.addr != addr || link.entries != fragment.entries.len() as u64 {
                return Err(self.chain_mismatch(addr));
            }
            fragments.push(fragment);
        }
        if expected.next().is_some() {
            return Err(self.chain_mismatch(state.chain[0].addr));
        }
        Ok(fragments)
    }

    fn chain_mismatch(&self, addr: FragmentAddr) -> Error {
        let offset = addr.page * u64::from(self.store.page_bytes());
        Error::corruption(
            self.store_path(),
            offset,
            format!("fragment {addr:?} is not the one the buffer's chain names"),
        )
    }

    fn store_path(&self) -> std::path::PathBuf {
        self.store.path().to_path_buf()
    }

    /// The newest entry of `key` in `buffer` (largest seq), if any: what a lookup passing
    /// this buffer finds (section 2.1, "immediate lookups").
    ///
    /// A key's entries in one buffer are in sequence order by position (a buffer receives
    /// single updates in order, or batches sorted by (key, seq) each newer than everything
    /// it holds; merged buffers hold disjoint keys), and the tail holds the newest
    /// positions: a match in the tail is the answer without reading flash or copying the
    /// tail.
    pub fn find(&self, buffer: BufferId, key: &[u8]) -> Result<Option<BufferEntry>> {
        let Some(state) = self.buffers.get(&buffer) else { return Ok(None) };
        if let Some(found) = state.find_in_tail(key) {
            return Ok(Some(found.clone()));
        }
        let fragments = self.read_chain(buffer, state)?;
        let found = fragments
            .iter()
            .flat_map(|f| f.entries.iter())
            .filter(|e| e.key() == key)
            .max_by_key(|e| e.seq());
        Ok(found.cloned())
    }

    /// The buffer's entries in (key, seq) order, reading X, sorting it in memory and merging
    /// it with the already sorted Y in one pass over the fragments (section 2.3).
    pub fn sorted_entries(&self, buffer: BufferId) -> Result<SortedEntries<'_>> {
        match self.buffers.get(&buffer) {
            Some(state) => SortedEntries::new(&self.store, buffer, state),
            None => SortedEntries::new(&self.store, buffer, &BufferState::default()),
        }
    }

    /// Forgets `buffer` after an emptying: its tail is dropped and its fragments become dead
    /// bytes of their units. Returns its last statistics.
    pub fn forget(&mut self, buffer: BufferId) -> BufferStats {
        let Some(state) = self.buffers.remove(&buffer) else {
            return BufferStats::default();
        };
        self.ranked.remove(&(Reverse(state.tail.len()), buffer));
        self.tail_bytes -= state.tail_bytes;
        for link in &state.chain {
            self.store.release(link.addr.page, link.bytes);
        }
        state.stats()
    }

    /// The persistent description of `buffer`, or `None` if it has no fragments. The tail
    /// must be empty (call [`BufferPool::flush_all`] first).
    pub fn root(&self, buffer: BufferId) -> Option<BufferRoot> {
        let state = self.buffers.get(&buffer)?;
        assert!(state.tail.is_empty(), "a root is taken after flush_all");
        Some(BufferRoot { head: state.head()?, entries: state.flash_entries, y: state.y.clone() })
    }

    /// Adopts a buffer written before a restart: walks its chain from `root.head` (reading
    /// each unit once), checks the entry count and marks its fragments live in the store.
    pub fn attach(&mut self, buffer: BufferId, root: &BufferRoot) -> Result<()> {
        assert!(!self.buffers.contains_key(&buffer), "attach a buffer once");
        self.check_room_for(buffer)?;
        let mut links = Vec::new();
        for item in self.store.walk(buffer, Some(root.head)) {
            let (addr, fragment, pages) = item?;
            let entries = fragment.entries.len() as u64;
            links.push((addr, entries, fragment.encoded_len() as u64, pages));
        }
        let entries: u64 = links.iter().map(|l| l.1).sum();
        if entries != root.entries || root.y.start > root.y.end || root.y.end > entries {
            let offset = root.head.page * u64::from(self.store.page_bytes());
            let reason = format!(
                "buffer {buffer:?} has {entries} entries on flash, its root says {} (Y {:?})",
                root.entries, root.y
            );
            return Err(Error::corruption(self.store_path(), offset, reason));
        }
        let mut state = BufferState { y: root.y.clone(), ..BufferState::default() };
        for &(addr, entries, bytes, pages) in links.iter().rev() {
            self.store.claim(addr.page, pages, bytes);
            state.flash_entries += entries;
            state.pages_spanned += pages;
            state.chain.push(super::state::ChainLink { addr, entries, bytes, pages });
        }
        state.check();
        self.buffers.insert(buffer, state);
        Ok(())
    }

    /// The buffers the pool holds entries of, in id order.
    pub fn buffer_ids(&self) -> impl Iterator<Item = BufferId> + '_ {
        self.buffers.keys().copied()
    }

    /// Statistics of `buffer` (zeros for an unknown buffer).
    pub fn buffer_stats(&self, buffer: BufferId) -> BufferStats {
        self.buffers.get(&buffer).map(BufferState::stats).unwrap_or_default()
    }

    /// Statistics of the pool.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            bytes_in_memory: self.tail_bytes,
            budget_bytes: self.budget_bytes,
            buffers: self.buffers.len() as u64,
            store: self.store.stats(),
        }
    }

    /// Checks every invariant (expensive).
    pub fn check(&self) {
        let mut tail_bytes = 0;
        for (id, state) in &self.buffers {
            state.check();
            tail_bytes += state.tail_bytes;
            let ranked = self.ranked.contains(&(Reverse(state.tail.len()), *id));
            assert_eq!(ranked, !state.tail.is_empty(), "{id:?} is ranked iff it has a tail");
        }
        assert_eq!(tail_bytes, self.tail_bytes);
        assert_eq!(self.ranked.len(), self.buffers.values().filter(|s| !s.tail.is_empty()).count());
        assert!(self.tail_bytes <= self.budget_bytes || self.ranked.len() <= 1);
    }

    fn check_room_for(&self, buffer: BufferId) -> Result<()> {
        if self.buffers.len() >= POOL_BUFFERS_MAX && !self.buffers.contains_key(&buffer) {
            return Err(Error::NoSpace {
                context: format!(
                    "the buffer pool tracks {POOL_BUFFERS_MAX} buffers (POOL_BUFFERS_MAX)"
                ),
            });
        }
        Ok(())
    }

    fn state_mut(&mut self, buffer: BufferId) -> &mut BufferState {
        self.buffers.entry(buffer).or_default()
    }

    /// Writes units until `incoming` more bytes fit the budget (or memory is empty).
    fn make_room(&mut self, incoming: u64) -> Result<()> {
        while self.tail_bytes > 0 && self.tail_bytes + incoming > self.budget_bytes {
            self.write_unit()?;
        }
        Ok(())
    }

    fn push(&mut self, buffer: BufferId, entry: BufferEntry) {
        self.tail_bytes += entry.encoded_len() as u64;
        let state = self.buffers.entry(buffer).or_default();
        let len = state.tail.len();
        state.push(entry);
        self.ranked.remove(&(Reverse(len), buffer));
        self.ranked.insert((Reverse(len + 1), buffer));
    }

    /// Writes one unit planned by [`plan_unit`]; on error nothing changed.
    fn write_unit(&mut self) -> Result<()> {
        let candidates: Vec<Candidate<'_>> = self
            .ranked
            .iter()
            .map(|&(_, buffer)| {
                let state = &self.buffers[&buffer];
                Candidate { buffer, tail: &state.tail, tail_bytes: state.tail_bytes }
            })
            .collect();
        let plan = plan_unit(&candidates, page_room_bytes(self.store.page_bytes()));
        let fragments = plan
            .iter()
            .map(|&(buffer, count)| {
                let state = &self.buffers[&buffer];
                Fragment { buffer, prev: state.head(), entries: state.tail[..count].to_vec() }
            })
            .collect();
        let written = self.store.write_unit(fragments)?;
        for (slot, &(buffer, count)) in plan.iter().enumerate() {
            let addr = FragmentAddr { page: written.page, slot: slot as u16 };
            let state = self.buffers.get_mut(&buffer).expect("planned buffers exist");
            let (len, bytes_before) = (state.tail.len(), state.tail_bytes);
            state.move_to_flash(count, addr, written.fragment_bytes[slot], written.pages);
            self.tail_bytes -= bytes_before - state.tail_bytes;
            self.ranked.remove(&(Reverse(len), buffer));
            if !state.tail.is_empty() {
                self.ranked.insert((Reverse(state.tail.len()), buffer));
            }
        }
        Ok(())
    }
}
