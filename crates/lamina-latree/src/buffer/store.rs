//! The buffer store: page units appended sequentially to one file (section 4.3: "pages are
//! written sequentially within a partition"), read back by address, and walked along a
//! buffer's back pointers newest fragment first. It counts the pages it touches (the input of
//! the fragmentation overhead f of section 3) and the live bytes of every unit, so a later
//! reclamation can find units that are mostly dead after their buffers were emptied.
//!
//! Invariants: units are written at `next_page` and never rewritten; `next_page` only grows
//! and stays at most [`STORE_PAGES_MAX`]; a unit's live bytes are the encoded bytes of its
//! fragments still in some buffer's chain, never more than it holds. The two-partition
//! reclamation of 4.3 is the tree's (`tree/reclaim.rs`): it empties every buffer, then
//! swaps the pool onto a store over the other, erased partition ([`BufferStore::on_erased`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::codec::{Decode, Encode};
use lamina_core::{Error, Result};
use lamina_storage::{OpenMode, Storage, StorageFile};

use super::fragment::{BufferId, Fragment, FragmentAddr};
use super::page::{BufferPage, PAGE_HEADER_BYTES, check_page_bytes, unit_pages, unit_pages_max};

/// Most pages a store file may hold (2^28: 128 GiB of 512-byte pages, 1 TiB of 4 KiB ones).
/// Appending past it is [`Error::NoSpace`]: reclamation must free space first.
pub const STORE_PAGES_MAX: u64 = 1 << 28;

/// Counters of a store since it was opened. Exact and deterministic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Pages in the file (the next unit goes there).
    pub pages: u64,
    /// Units written (this and the following counters continue across reclamations).
    pub units_written: u64,
    /// Pages written (units times their length).
    pub pages_written: u64,
    /// Units read.
    pub units_read: u64,
    /// Pages read: what a read of a buffer touched, the measure of its fragmentation.
    pub pages_read: u64,
    /// Encoded fragment bytes still in some buffer's chain.
    pub live_bytes: u64,
    /// Pages of units holding at least one live fragment.
    pub live_pages: u64,
}

/// Liveness of one unit.
#[derive(Debug, Clone, Copy)]
struct UnitLive {
    pages: u64,
    live_bytes: u64,
}

/// What [`BufferStore::write_unit`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenUnit {
    /// The unit's first page; fragment `i` is at slot `i`.
    pub page: u64,
    /// Pages it occupies.
    pub pages: u64,
    /// Encoded bytes of each fragment (header included), by slot.
    pub fragment_bytes: Vec<u64>,
}

/// A file of buffer page units.
#[derive(Debug)]
pub struct BufferStore {
    file: Arc<dyn StorageFile>,
    path: PathBuf,
    page_bytes: u32,
    next_page: u64,
    units: BTreeMap<u64, UnitLive>,
    live_bytes: u64,
    live_pages: u64,
    units_written: u64,
    pages_written: u64,
    units_read: AtomicU64,
    pages_read: AtomicU64,
}

impl BufferStore {
    /// Creates the store file `name`, which must not exist.
    pub fn create(storage: &dyn Storage, name: &str, page_bytes: u32) -> Result<Self> {
        check_page_bytes(page_bytes)?;
        let file = storage.open(name, OpenMode::CreateNew)?;
        Ok(Self::with_file(file, storage.path_of(name), page_bytes, 0))
    }

    /// Opens an existing store file. Every unit starts dead; [`BufferStore::claim`] marks the
    /// fragments of the buffers the tree still references (the pool's `attach` does so). New
    /// units go after the last (possibly partial) page, so nothing on file is overwritten.
    pub fn open(storage: &dyn Storage, name: &str, page_bytes: u32) -> Result<Self> {
        check_page_bytes(page_bytes)?;
        let file = storage.open(name, OpenMode::Existing)?;
        let path = storage.path_of(name);
        let pages = file.len()?.div_ceil(u64::from(page_bytes));
        if pages > STORE_PAGES_MAX {
            return Err(Error::corruption(
                path,
                0,
                format!("{pages} pages, over the limit of {STORE_PAGES_MAX}"),
            ));
        }
        Ok(Self::with_file(file, path, page_bytes, pages))
    }

    /// Opens an existing store file as a checkpoint left it: units were written up to (not
    /// including) `next_page` and synced, and new units go there. Pages past it were written
    /// after the checkpoint (a crash left them) and nothing reaches them: they are
    /// overwritten. A file shorter than `next_page` pages is [`Error::Corruption`] (cut).
    /// Every unit starts dead, as in [`BufferStore::open`].
    pub fn open_at(
        storage: &dyn Storage,
        name: &str,
        page_bytes: u32,
        next_page: u64,
    ) -> Result<Self> {
        check_page_bytes(page_bytes)?;
        let path = storage.path_of(name);
        if next_page > STORE_PAGES_MAX {
            let reason = format!("next page {next_page}, over the limit of {STORE_PAGES_MAX}");
            return Err(Error::corruption(path, 0, reason));
        }
        let file = storage.open(name, OpenMode::Existing)?;
        let len = file.len()?;
        if len < next_page * u64::from(page_bytes) {
            let reason = format!("the file ends before the {next_page} pages its checkpoint names");
            return Err(Error::corruption(path, len, reason));
        }
        Ok(Self::with_file(file, path, page_bytes, next_page))
    }

    /// A store over `file` (named `path`), which must be empty (an erased partition, section
    /// 4.3): new units go from page 0.
    pub fn on_erased(file: Arc<dyn StorageFile>, path: PathBuf, page_bytes: u32) -> Result<Self> {
        check_page_bytes(page_bytes)?;
        let len = file.len()?;
        if len != 0 {
            let reason = format!("the buffer partition holds {len} bytes, not erased");
            return Err(Error::corruption(path, 0, reason));
        }
        Ok(Self::with_file(file, path, page_bytes, 0))
    }

    /// Continues the I/O counters of `old` (the partition this store replaces), so they
    /// count since the tree was opened.
    pub fn continue_counters(&mut self, old: &BufferStore) {
        self.units_written += old.units_written;
        self.pages_written += old.pages_written;
        self.units_read.fetch_add(old.units_read.load(Ordering::Relaxed), Ordering::Relaxed);
        self.pages_read.fetch_add(old.pages_read.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The file (a reclamation erases it once nothing durable reaches it).
    pub fn file(&self) -> &Arc<dyn StorageFile> {
        &self.file
    }

    fn with_file(file: Arc<dyn StorageFile>, path: PathBuf, page_bytes: u32, pages: u64) -> Self {
        BufferStore {
            file,
            path,
            page_bytes,
            next_page: pages,
            units: BTreeMap::new(),
            live_bytes: 0,
            live_pages: 0,
            units_written: 0,
            pages_written: 0,
            units_read: AtomicU64::new(0),
            pages_read: AtomicU64::new(0),
        }
    }

    /// The file's path (for error messages).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The page size.
    pub fn page_bytes(&self) -> u32 {
        self.page_bytes
    }

    /// Appends a unit of `fragments` at the next page. On error nothing changed (the next
    /// unit goes to the same place). Every back pointer must name an earlier page.
    pub fn write_unit(&mut self, fragments: Vec<Fragment>) -> Result<WrittenUnit> {
        let page = self.next_page;
        assert!(
            fragments.iter().all(|f| f.prev.is_none_or(|prev| prev.page < page)),
            "back pointers name earlier pages"
        );
        let fragment_bytes: Vec<u64> = fragments.iter().map(|f| f.encoded_len() as u64).collect();
        let unit = BufferPage { page, fragments };
        let bytes = unit.encode_unit(self.page_bytes);
        let pages = bytes.len() as u64 / u64::from(self.page_bytes);
        if page + pages > STORE_PAGES_MAX {
            return Err(Error::NoSpace {
                context: format!(
                    "buffer store {} is full ({STORE_PAGES_MAX} pages, STORE_PAGES_MAX)",
                    self.path.display()
                ),
            });
        }
        self.file.write_all_at(page * u64::from(self.page_bytes), &bytes)?;
        let live: u64 = fragment_bytes.iter().sum();
        self.units.insert(page, UnitLive { pages, live_bytes: live });
        self.next_page += pages;
        self.live_bytes += live;
        self.live_pages += pages;
        self.units_written += 1;
        self.pages_written += pages;
        Ok(WrittenUnit { page, pages, fragment_bytes })
    }

    /// Reads and checks the unit at `page`: a damaged or misplaced unit is
    /// [`Error::Corruption`] naming the file and the offset. Returns it and its length.
    pub fn read_unit(&self, page: u64) -> Result<(BufferPage, u64)> {
        let page_bytes = u64::from(self.page_bytes);
        let offset = page.checked_mul(page_bytes).filter(|_| page < self.next_page);
        let Some(offset) = offset else {
            let reason = format!("buffer page {page} is past the end ({} pages)", self.next_page);
            return Err(Error::corruption(&self.path, self.next_page * page_bytes, reason));
        };
        let mut bytes = vec![0u8; self.page_bytes as usize];
        self.file.read_exact_at(offset, &mut bytes)?;
        let used = BufferPage::peek_used_bytes(&bytes).map_err(|e| e.at(&self.path, offset))?;
        let pages = unit_pages(used.max(PAGE_HEADER_BYTES), self.page_bytes);
        if pages > unit_pages_max(self.page_bytes) || page + pages > self.next_page {
            let reason = format!("buffer unit of {used} bytes at page {page} is too long");
            return Err(Error::corruption(&self.path, offset + 12, reason));
        }
        if pages > 1 {
            bytes.resize((pages * page_bytes) as usize, 0);
            self.file.read_exact_at(offset + page_bytes, &mut bytes[self.page_bytes as usize..])?;
        }
        self.units_read.fetch_add(1, Ordering::Relaxed);
        self.pages_read.fetch_add(pages, Ordering::Relaxed);
        let unit = BufferPage::decode(&bytes).map_err(|e| e.at(&self.path, offset))?;
        if unit.page != page {
            let reason = format!("buffer unit of page {} found at page {page}", unit.page);
            return Err(Error::corruption(&self.path, offset + 16, reason));
        }
        Ok((unit, pages))
    }

    /// Reads the fragment at `addr`, which must belong to `buffer`. Returns it and the length
    /// of its unit in pages.
    pub fn read_fragment(&self, addr: FragmentAddr, buffer: BufferId) -> Result<(Fragment, u64)> {
        let (mut unit, pages) = self.read_unit(addr.page)?;
        let offset = addr.page * u64::from(self.page_bytes);
        let slot = usize::from(addr.slot);
        if slot >= unit.fragments.len() {
            let reason = format!("no slot {slot} in a unit of {} fragments", unit.fragments.len());
            return Err(Error::corruption(&self.path, offset, reason));
        }
        let fragment = unit.fragments.swap_remove(slot);
        if fragment.buffer != buffer {
            let reason = format!("fragment {addr:?} is of {:?}, not {buffer:?}", fragment.buffer);
            return Err(Error::corruption(&self.path, offset, reason));
        }
        Ok((fragment, pages))
    }

    /// The fragments of `buffer` from `head` back to its first, newest first, following the
    /// back pointers (one unit read each). Ends because every pointer names an earlier page.
    pub fn walk(&self, buffer: BufferId, head: Option<FragmentAddr>) -> ChainWalk<'_> {
        ChainWalk { store: self, buffer, next: head }
    }

    /// Marks `bytes` of the unit at `page` dead (its buffer was emptied).
    pub fn release(&mut self, page: u64, bytes: u64) {
        let unit = self.units.get_mut(&page).expect("released fragments are in a known unit");
        assert!(unit.live_bytes >= bytes, "releasing more than a unit's live bytes");
        unit.live_bytes -= bytes;
        self.live_bytes -= bytes;
        if unit.live_bytes == 0 {
            self.live_pages -= unit.pages;
        }
    }

    /// Marks `bytes` of the unit at `page` (of `pages` pages) live again, after [`open`]:
    /// the fragment was found in a buffer's chain.
    ///
    /// [`open`]: BufferStore::open
    pub fn claim(&mut self, page: u64, pages: u64, bytes: u64) {
        let unit = self.units.entry(page).or_insert(UnitLive { pages, live_bytes: 0 });
        assert_eq!(unit.pages, pages, "a unit keeps its length");
        assert!(unit.live_bytes + bytes <= pages * u64::from(self.page_bytes));
        if unit.live_bytes == 0 {
            self.live_pages += pages;
        }
        unit.live_bytes += bytes;
        self.live_bytes += bytes;
    }

    /// First pages of the units written or claimed by this handle whose live bytes are at
    /// most `live_percent_max` percent of their size, oldest first: the candidates of a
    /// reclamation (units holding nothing live are included, pages never written or claimed
    /// by this handle are dead and not listed).
    pub fn units_mostly_dead(&self, live_percent_max: u8) -> Vec<u64> {
        assert!(live_percent_max <= 100);
        let page_bytes = u64::from(self.page_bytes);
        let max = |pages: u64| pages * page_bytes * u64::from(live_percent_max) / 100;
        self.units.iter().filter(|(_, u)| u.live_bytes <= max(u.pages)).map(|(&p, _)| p).collect()
    }

    /// Live bytes of the unit at `page` (0 if unknown).
    pub fn unit_live_bytes(&self, page: u64) -> u64 {
        self.units.get(&page).map_or(0, |u| u.live_bytes)
    }

    /// Makes every unit written so far durable.
    pub fn sync(&self) -> Result<()> {
        self.file.sync_data()
    }

    /// The file, to sync without holding the store (a checkpoint syncs after releasing the
    /// tree lock; writes completed before the sync starts are made durable).
    pub fn sync_handle(&self) -> Arc<dyn StorageFile> {
        Arc::clone(&self.file)
    }

    /// The counters.
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            pages: self.next_page,
            units_written: self.units_written,
            pages_written: self.pages_written,
            units_read: self.units_read.load(Ordering::Relaxed),
            pages_read: self.pages_read.load(Ordering::Relaxed),
            live_bytes: self.live_bytes,
            live_pages: self.live_pages,
        }
    }
}

/// The fragments of one buffer, newest first ([`BufferStore::walk`]); each item is the
/// fragment's address, the fragment, and its unit's length in pages.
#[derive(Debug)]
pub struct ChainWalk<'a> {
    store: &'a BufferStore,
    buffer: BufferId,
    next: Option<FragmentAddr>,
}

impl Iterator for ChainWalk<'_> {
    type Item = Result<(FragmentAddr, Fragment, u64)>;

    fn next(&mut self) -> Option<Self::Item> {
        let addr = self.next.take()?;
        match self.store.read_fragment(addr, self.buffer) {
            Ok((fragment, pages)) => {
                // The page decoder refused pointers that do not go back, so this ends.
                debug_assert!(fragment.prev.is_none_or(|prev| prev.page < addr.page));
                self.next = fragment.prev;
                Some(Ok((addr, fragment, pages)))
            }
            Err(err) => Some(Err(err)),
        }
    }
}
