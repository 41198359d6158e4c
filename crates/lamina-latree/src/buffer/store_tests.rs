//! Tests of the buffer store: units written and read back, chains walked newest first with
//! pages counted, live bytes, damage and I/O failures.

use std::sync::Arc;

use lamina_core::Error;
use lamina_core::codec::Encode;
use lamina_storage::{FailKind, FaultPlan, FaultyStorage, MemoryStorage, Storage};

use super::*;

const NAME: &str = "latree-buffers";

fn entries(buffer: u64, first: u64, n: u64) -> Vec<BufferEntry> {
    (first..first + n)
        .map(|i| BufferEntry::put(&(buffer * 1000 + i).to_be_bytes(), b"value", i).unwrap())
        .collect()
}

fn fragment(buffer: u64, prev: Option<FragmentAddr>, first: u64, n: u64) -> Fragment {
    Fragment { buffer: BufferId(buffer), prev, entries: entries(buffer, first, n) }
}

#[test]
fn chains_are_walked_newest_first_counting_pages() {
    let storage = MemoryStorage::new();
    let mut store = BufferStore::create(&storage, NAME, 512).unwrap();
    // Unit 0: buffers 1 and 2; unit 1: buffer 1; unit 2: buffer 2 then 1.
    let u0 = store.write_unit(vec![fragment(1, None, 0, 2), fragment(2, None, 0, 3)]).unwrap();
    let a1 = FragmentAddr { page: u0.page, slot: 0 };
    let a2 = FragmentAddr { page: u0.page, slot: 1 };
    let u1 = store.write_unit(vec![fragment(1, Some(a1), 2, 4)]).unwrap();
    let b1 = FragmentAddr { page: u1.page, slot: 0 };
    let u2 =
        store.write_unit(vec![fragment(2, Some(a2), 3, 1), fragment(1, Some(b1), 6, 1)]).unwrap();
    assert_eq!((u0.page, u1.page, u2.page), (0, 1, 2));
    assert_eq!(store.stats().pages, 3);

    let before = store.stats();
    let io_before = storage.io_stats();
    let head = FragmentAddr { page: 2, slot: 1 };
    let walked: Vec<_> = store.walk(BufferId(1), Some(head)).map(Result::unwrap).collect();
    let addrs: Vec<_> = walked.iter().map(|(addr, _, _)| *addr).collect();
    assert_eq!(addrs, vec![head, b1, a1]);
    let seqs: Vec<u64> =
        walked.iter().flat_map(|(_, f, _)| f.entries.iter().map(BufferEntry::seq)).collect();
    assert_eq!(seqs, vec![6, 2, 3, 4, 5, 0, 1], "newest fragment first, each oldest first");
    let read = store.stats();
    assert_eq!((read.units_read - before.units_read, read.pages_read - before.pages_read), (3, 3));
    // The storage agrees: three reads of one (4 KiB accounting) block each.
    let io = storage.io_stats().since(&io_before);
    assert_eq!((io.reads(), io.blocks_read, io.bytes_read), (3, 3, 3 * 512));

    // Live bytes: everything is live until released.
    let total: u64 = [&u0, &u1, &u2].iter().flat_map(|u| u.fragment_bytes.iter()).sum();
    assert_eq!(store.stats().live_bytes, total);
    assert_eq!(store.stats().live_pages, 3);
    store.release(1, u1.fragment_bytes[0]);
    assert_eq!(store.unit_live_bytes(1), 0);
    assert_eq!(store.stats().live_pages, 2);
    assert_eq!(store.units_mostly_dead(0), vec![1]);
    store.release(0, u0.fragment_bytes[1]);
    // Unit 0 keeps buffer 1's fragment of 2 entries: 24 + 2 x 16 = 56 of its 512 bytes.
    assert_eq!(store.unit_live_bytes(0), 56);
    assert_eq!(store.units_mostly_dead(10), vec![1]);
    assert_eq!(store.units_mostly_dead(11), vec![0, 1]);
}

#[test]
fn a_largest_entry_takes_a_multi_page_unit() {
    let storage = MemoryStorage::new();
    let mut store = BufferStore::create(&storage, NAME, 512).unwrap();
    let big = BufferEntry::put(&[1; 1024], &[2; 4096], 7).unwrap();
    let unit = Fragment { buffer: BufferId(5), prev: None, entries: vec![big] };
    let written = store.write_unit(vec![unit.clone()]).unwrap();
    assert_eq!(written.pages, 11);
    let next = store.write_unit(vec![fragment(5, Some(FragmentAddr { page: 0, slot: 0 }), 0, 1)]);
    assert_eq!(next.unwrap().page, 11);
    let (read, pages) =
        store.read_fragment(FragmentAddr { page: 0, slot: 0 }, BufferId(5)).unwrap();
    assert_eq!((read, pages), (unit, 11));
    assert_eq!(store.stats().pages_read, 11);
}

#[test]
fn damage_is_corruption_naming_file_and_offset() {
    let storage = FaultyStorage::in_memory(FaultPlan::none());
    let mut store = BufferStore::create(&storage, NAME, 512).unwrap();
    store.write_unit(vec![fragment(1, None, 0, 3)]).unwrap();
    store.write_unit(vec![fragment(1, Some(FragmentAddr { page: 0, slot: 0 }), 3, 3)]).unwrap();
    // A bit of page 1's first entry.
    storage.flip_bit(NAME, (512 + 24 + 24 + 2) * 8).unwrap();
    let head = FragmentAddr { page: 1, slot: 0 };
    let err = store.walk(BufferId(1), Some(head)).find_map(Result::err).unwrap();
    match err {
        Error::Corruption { file, offset, reason } => {
            assert_eq!(file, storage.path_of(NAME));
            assert_eq!(offset, 512, "{reason}");
            assert!(reason.contains("checksum"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Addresses that do not hold the buffer's fragment.
    let err = store.read_fragment(FragmentAddr { page: 0, slot: 1 }, BufferId(1)).unwrap_err();
    assert!(err.to_string().contains("no slot 1"), "{err}");
    let err = store.read_fragment(FragmentAddr { page: 0, slot: 0 }, BufferId(2)).unwrap_err();
    assert!(err.to_string().contains("not BufferId(2)"), "{err}");
    let err = store.read_unit(2).unwrap_err();
    assert!(err.to_string().contains("past the end"), "{err}");
}

#[test]
fn a_unit_copied_to_another_page_is_refused() {
    let storage = MemoryStorage::new();
    let mut store = BufferStore::create(&storage, NAME, 512).unwrap();
    store.write_unit(vec![fragment(1, None, 0, 3)]).unwrap();
    store.write_unit(vec![fragment(2, None, 0, 3)]).unwrap();
    let file = storage.open(NAME, lamina_storage::OpenMode::Existing).unwrap();
    let mut page0 = vec![0; 512];
    file.read_exact_at(0, &mut page0).unwrap();
    file.write_all_at(512, &page0).unwrap();
    let err = store.read_unit(1).unwrap_err();
    assert!(err.to_string().contains("of page 0 found at page 1"), "{err}");
}

#[test]
fn a_failed_write_changes_nothing() {
    // Op 1 opens the file, op 2 is the first write: it fails once.
    let storage = FaultyStorage::in_memory(FaultPlan::none().fail_at(2, FailKind::NoSpace, false));
    let mut store = BufferStore::create(&storage, NAME, 512).unwrap();
    let err = store.write_unit(vec![fragment(1, None, 0, 3)]).unwrap_err();
    assert!(matches!(err, Error::NoSpace { .. }), "{err:?}");
    assert_eq!(store.stats(), StoreStats::default());
    let written = store.write_unit(vec![fragment(1, None, 0, 3)]).unwrap();
    assert_eq!(written.page, 0);
    assert_eq!(store.read_unit(0).unwrap().0.fragments.len(), 1);
}

#[test]
fn reopening_appends_after_the_existing_pages() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut store = BufferStore::create(&*storage, NAME, 4096).unwrap();
    let first = fragment(1, None, 0, 5);
    let bytes = first.encoded_len() as u64;
    store.write_unit(vec![first]).unwrap();
    store.sync().unwrap();
    drop(store);
    assert!(BufferStore::create(&*storage, NAME, 4096).is_err(), "create refuses an existing file");
    let mut store = BufferStore::open(&*storage, NAME, 4096).unwrap();
    assert_eq!(store.stats().pages, 1);
    assert_eq!(store.stats().live_bytes, 0, "nothing is live until claimed");
    store.claim(0, 1, bytes);
    assert_eq!(store.stats().live_bytes, bytes);
    let next = store.write_unit(vec![fragment(1, Some(FragmentAddr { page: 0, slot: 0 }), 5, 1)]);
    assert_eq!(next.unwrap().page, 1);
    assert!(BufferStore::open(&*storage, NAME, 1000).unwrap_err().is_invalid_argument());
}
