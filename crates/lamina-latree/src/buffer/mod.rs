//! The flash-resident buffers (sections 2.1, 2.3, 3, 4.2, 4.3): entries, fragments packed
//! several per page and reverse-linked, the append-only store of page units, the
//! write-coalescing pool with "highest-packed fragment" eviction, and the single-pass sort of
//! a buffer for an emptying (X sorted in memory, merged with the sorted Y). Byte layout:
//! `docs/format/latree-buffer.md`.

mod entry;
mod fragment;
mod packing;
mod page;
mod pool;
mod sorted;
mod state;
mod store;

#[cfg(test)]
mod pool_tests;
#[cfg(test)]
mod store_tests;

pub use entry::{BufferEntry, BufferOp, ENTRY_BYTES_MAX, ENTRY_BYTES_MIN};
pub use fragment::{
    BufferId, FRAGMENT_ENTRIES_MAX, FRAGMENT_HEADER_BYTES, Fragment, FragmentAddr, NO_PAGE,
};
pub use page::{
    BufferPage, PAGE_BYTES_MAX, PAGE_BYTES_MIN, PAGE_FORMAT_VERSION, PAGE_FRAGMENTS_MAX,
    PAGE_HEADER_BYTES, PAGE_MAGIC, check_page_bytes, page_room_bytes, unit_pages, unit_pages_max,
};
pub use pool::{
    BufferContents, BufferPool, BufferRoot, POOL_BUFFERS_MAX, POOL_BYTES_MAX, PoolStats,
};
pub use sorted::SortedEntries;
pub use state::BufferStats;
pub use store::{BufferStore, ChainWalk, STORE_PAGES_MAX, StoreStats, WrittenUnit};
