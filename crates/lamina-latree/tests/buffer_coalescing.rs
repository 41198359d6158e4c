//! Scenario: many small appends spread over many buffers (the update stream of section 4.2).
//! The write-coalescing pool packs them into full pages; without it (a budget of 0) every
//! entry costs a page write and every buffer read touches a page per entry. I/O counts are
//! deterministic, so they are asserted exactly.

use lamina_core::codec::Encode;
use lamina_latree::buffer::{
    BufferEntry, BufferId, BufferPool, BufferStore, FRAGMENT_HEADER_BYTES, PAGE_HEADER_BYTES,
};
use lamina_storage::{MemoryStorage, Storage};

const PAGE_BYTES: u32 = 4096;
const BUFFERS: u64 = 64;
const APPENDS: u64 = 2000;
/// 1 + 8 key bytes, 1 tag byte + 12 value bytes, 2 bytes of seq (128..16384).
const ENTRY_BYTES: u64 = 24;

struct Run {
    pages_written: u64,
    storage_writes: u64,
    storage_bytes_written: u64,
    unit_used_bytes: Vec<u64>,
    buffer0_pages_spanned: u64,
    buffer0_pages_read: u64,
}

fn run(budget_bytes: u64) -> Run {
    let storage = MemoryStorage::new();
    let store = BufferStore::create(&storage, "buffers", PAGE_BYTES).unwrap();
    let mut pool = BufferPool::new(store, budget_bytes).unwrap();
    for i in 0..APPENDS {
        let seq = 128 + i;
        let entry = BufferEntry::put(&(i * 7919).to_be_bytes(), &[b'v'; 12], seq).unwrap();
        assert_eq!(entry.encoded_len() as u64, ENTRY_BYTES);
        pool.append(BufferId(i % BUFFERS), entry).unwrap();
    }
    pool.flush_all().unwrap();
    pool.check();
    let io = storage.io_stats();
    let stats = pool.stats().store;
    assert_eq!(stats.units_written, stats.pages_written, "small entries: one-page units");
    let unit_used_bytes = (0..stats.pages)
        .map(|page| {
            let (unit, _) = pool.store().read_unit(page).unwrap();
            unit.encoded_len() as u64
        })
        .collect();
    let before = pool.store().stats().pages_read;
    let entries = pool.read(BufferId(0)).unwrap().newest_first().count() as u64;
    assert_eq!(entries, APPENDS.div_ceil(BUFFERS));
    Run {
        pages_written: stats.pages_written,
        storage_writes: io.writes(),
        storage_bytes_written: io.bytes_written,
        unit_used_bytes,
        buffer0_pages_spanned: pool.buffer_stats(BufferId(0)).pages_spanned,
        buffer0_pages_read: pool.store().stats().pages_read - before,
    }
}

#[test]
fn coalescing_packs_small_appends_into_full_pages() {
    let coalesced = run(16 << 10);
    let uncoalesced = run(0);

    // 2000 entries of 24 bytes are 48 000 bytes: at least 12 pages of 4072 bytes of room.
    // The pool needs 13 (the fragment headers take the rest); without it, 2000.
    assert_eq!(coalesced.pages_written, 13);
    assert_eq!(uncoalesced.pages_written, APPENDS);
    for run in [&coalesced, &uncoalesced] {
        assert_eq!(run.storage_writes, run.pages_written, "one write call per page");
        assert_eq!(run.storage_bytes_written, run.pages_written * u64::from(PAGE_BYTES));
    }

    // Every coalesced page but the last (flush_all's remainder) is full up to less than a
    // fragment header and one entry.
    let room = u64::from(PAGE_BYTES);
    let (last, full) = coalesced.unit_used_bytes.split_last().unwrap();
    for used in full {
        assert!(*used > room - FRAGMENT_HEADER_BYTES as u64 - ENTRY_BYTES, "{used} bytes used");
    }
    assert!(*last >= PAGE_HEADER_BYTES as u64);
    let total: u64 = coalesced.unit_used_bytes.iter().sum();
    assert!(total > APPENDS * ENTRY_BYTES);

    // Reading a buffer of 32 entries touches a few pages, not 32 (the fragmentation
    // overhead f of section 3 that coalescing keeps down).
    assert_eq!(coalesced.buffer0_pages_spanned, coalesced.buffer0_pages_read);
    assert_eq!(coalesced.buffer0_pages_read, 3);
    assert_eq!(uncoalesced.buffer0_pages_read, 32);
}
