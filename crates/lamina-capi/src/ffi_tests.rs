//! End-to-end tests of the exported functions, called from Rust the way C calls them, and a
//! check that `include/lamina.h` states the same constants as the code.

use std::ffi::{CStr, c_int, c_void};
use std::ptr::{null, null_mut};

use lamina_facade::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

use crate::db::{
    DbHandle, lamina_close, lamina_compare_and_swap, lamina_delete, lamina_get, lamina_open,
    lamina_put, lamina_verify,
};
use crate::iter::{
    IterHandle, PAGE_ENTRIES, fetched, lamina_iter_close, lamina_iter_next, lamina_iter_open,
    lamina_iter_open_hinted,
};
use crate::last_error::lamina_last_error_message;
use crate::options::{LAMINA_DURABILITY_NONE, LaminaOptions};
use crate::status::{
    LAMINA_COMPARE_FAILED, LAMINA_ERROR, LAMINA_INVALID_ARGUMENT, LAMINA_IO_ERROR,
    LAMINA_KEY_BUFFER_TOO_SMALL, LAMINA_NOT_FOUND, LAMINA_OK, LAMINA_VALUE_BUFFER_TOO_SMALL,
};

/// An open database in a temporary directory; closed on drop.
struct TestDb {
    db: *mut DbHandle,
    dir: tempfile::TempDir,
}

/// The raw handle, movable to other threads (the C API promises handles are thread-safe).
#[derive(Clone, Copy)]
struct SharedDb(*mut DbHandle);
// SAFETY: `DbHandle` wraps `Arc<Db>` and `Db` is `Send + Sync`; the C API is thread-safe.
unsafe impl Send for SharedDb {}

fn mem_options() -> LaminaOptions {
    LaminaOptions {
        engine: c"mem".as_ptr(),
        durability: LAMINA_DURABILITY_NONE,
        ..LaminaOptions::defaults()
    }
}

fn open_at(dir: &std::path::Path) -> Result<*mut DbHandle, c_int> {
    let path = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    let mut db = null_mut();
    let opts = mem_options();
    // SAFETY: a C string, a valid options struct and a writable out pointer.
    let status = unsafe { lamina_open(path.as_ptr(), &raw const opts, &raw mut db) };
    if status == LAMINA_OK { Ok(db) } else { Err(status) }
}

impl TestDb {
    fn new() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let db = open_at(dir.path()).unwrap();
        TestDb { db, dir }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> c_int {
        // SAFETY: live handle; slices readable for their lengths.
        unsafe {
            lamina_put(self.db, key.as_ptr().cast(), key.len(), value.as_ptr().cast(), value.len())
        }
    }

    /// get with a buffer of `capacity` bytes: (status, reported length, bytes copied).
    fn get(&self, key: &[u8], capacity: usize) -> (c_int, usize, Vec<u8>) {
        let mut buf = vec![0xaa_u8; capacity];
        let mut len = capacity;
        // SAFETY: live handle; `buf` has `len` writable bytes.
        let status = unsafe {
            lamina_get(
                self.db,
                key.as_ptr().cast(),
                key.len(),
                buf.as_mut_ptr().cast(),
                &raw mut len,
            )
        };
        (status, len, buf)
    }

    fn message(&self) -> String {
        // SAFETY: a NUL-terminated string of this thread, copied at once.
        unsafe { CStr::from_ptr(lamina_last_error_message(self.db)) }.to_string_lossy().into_owned()
    }

    fn open_iter(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> *mut IterHandle {
        let raw =
            |b: Option<&[u8]>| b.map_or((null(), 0), |b| (b.as_ptr().cast::<c_void>(), b.len()));
        let ((s, sl), (e, el)) = (raw(start), raw(end));
        let mut it = null_mut();
        // SAFETY: live handle; bounds readable for their lengths; `it` writable.
        assert_eq!(unsafe { lamina_iter_open(self.db, s, sl, e, el, &raw mut it) }, LAMINA_OK);
        it
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // SAFETY: the handle is NULL (closed by the test) or live and not used after this.
        assert_eq!(unsafe { lamina_close(self.db) }, LAMINA_OK);
    }
}

/// `lamina_iter_next` with capacities `(key, value)`: (status, key_len, value_len, pair).
fn next(
    it: *mut IterHandle,
    key_cap: usize,
    value_cap: usize,
) -> (c_int, usize, usize, Vec<u8>, Vec<u8>) {
    let (mut key, mut value) = (vec![0u8; key_cap], vec![0u8; value_cap]);
    let (mut key_len, mut value_len) = (key_cap, value_cap);
    // SAFETY: live iterator; buffers writable for the capacities given.
    let status = unsafe {
        lamina_iter_next(
            it,
            key.as_mut_ptr().cast(),
            &raw mut key_len,
            value.as_mut_ptr().cast(),
            &raw mut value_len,
        )
    };
    key.truncate(key_len.min(key_cap));
    value.truncate(value_len.min(value_cap));
    (status, key_len, value_len, key, value)
}

#[test]
fn get_copies_only_into_a_buffer_that_is_large_enough() {
    let db = TestDb::new();
    assert_eq!(db.put(b"k", b"hello"), LAMINA_OK);
    let (status, len, buf) = db.get(b"k", 4);
    assert_eq!((status, len), (LAMINA_VALUE_BUFFER_TOO_SMALL, 5));
    assert!(buf.iter().all(|&b| b == 0xaa), "nothing copied");
    let (status, len, buf) = db.get(b"k", 5);
    assert_eq!((status, len, &buf[..]), (LAMINA_OK, 5, &b"hello"[..]));
    assert_eq!(db.get(b"nope", 8).0, LAMINA_NOT_FOUND);
    // SAFETY: live handle; key readable.
    unsafe {
        assert_eq!(lamina_delete(db.db, b"k".as_ptr().cast(), 1), LAMINA_OK);
        assert_eq!(lamina_delete(db.db, b"k".as_ptr().cast(), 1), LAMINA_NOT_FOUND);
    }
}

#[test]
fn oversized_input_is_refused_with_the_limit_named() {
    let db = TestDb::new();
    let key = vec![b'k'; KEY_BYTES_MAX + 1];
    assert_eq!(db.put(&key, b"v"), LAMINA_INVALID_ARGUMENT);
    assert!(db.message().contains("1024-byte"), "{}", db.message());
    assert_eq!(db.put(b"k", &vec![0; VALUE_BYTES_MAX + 1]), LAMINA_INVALID_ARGUMENT);
    assert!(db.message().contains("4096-byte"), "{}", db.message());
    assert_eq!(db.get(b"k", 0).0, LAMINA_NOT_FOUND, "nothing was written");
}

#[test]
fn compare_and_swap_distinguishes_absent_from_empty() {
    let db = TestDb::new();
    let cas = |expected: Option<&[u8]>, new: Option<&[u8]>| {
        let raw =
            |b: Option<&[u8]>| b.map_or((null(), 0), |b| (b.as_ptr().cast::<c_void>(), b.len()));
        let ((e, el), (n, nl)) = (raw(expected), raw(new));
        // SAFETY: live handle; buffers readable for their lengths.
        unsafe { lamina_compare_and_swap(db.db, b"k".as_ptr().cast(), 1, e, el, n, nl) }
    };
    assert_eq!(cas(None, Some(b"")), LAMINA_OK);
    assert_eq!(cas(None, Some(b"x")), LAMINA_COMPARE_FAILED);
    assert_eq!(cas(Some(b""), Some(b"x")), LAMINA_OK);
    assert_eq!(cas(Some(b"x"), None), LAMINA_OK);
    assert_eq!(db.get(b"k", 8).0, LAMINA_NOT_FOUND);
    // A failed swap of an absent key is NOT_FOUND; of another value, COMPARE_FAILED.
    assert_eq!(cas(Some(b"x"), Some(b"y")), LAMINA_NOT_FOUND);
    assert_eq!(cas(Some(b""), None), LAMINA_NOT_FOUND);
    assert_eq!(db.get(b"k", 8).0, LAMINA_NOT_FOUND);
    assert_eq!(cas(None, Some(b"z")), LAMINA_OK);
    assert_eq!(cas(Some(b"x"), Some(b"y")), LAMINA_COMPARE_FAILED);
}

#[test]
fn iteration_crosses_pages_and_is_not_advanced_by_small_buffers() {
    let db = TestDb::new();
    let keys = 2 * PAGE_ENTRIES + 5;
    for i in 0..keys {
        assert_eq!(db.put(format!("key{i:05}").as_bytes(), &vec![b'v'; i % 7]), LAMINA_OK);
    }
    let it = db.open_iter(None, None);
    let mut seen = 0;
    loop {
        // First ask with no room at all: both lengths come back, nothing moves.
        let (status, key_len, value_len, ..) = next(it, 0, 0);
        if status == LAMINA_NOT_FOUND {
            break;
        }
        assert_eq!(status, LAMINA_KEY_BUFFER_TOO_SMALL);
        assert_eq!((key_len, value_len), (8, seen % 7));
        if value_len > 0 {
            assert_eq!(next(it, key_len, value_len - 1).0, LAMINA_VALUE_BUFFER_TOO_SMALL);
        }
        let (status, _, _, key, value) = next(it, key_len, value_len);
        assert_eq!(status, LAMINA_OK);
        assert_eq!(key, format!("key{seen:05}").as_bytes());
        assert_eq!(value.len(), seen % 7);
        seen += 1;
    }
    assert_eq!(seen, keys);
    assert_eq!(next(it, 16, 16).0, LAMINA_NOT_FOUND, "the end is sticky");
    // SAFETY: live iterator, not used after.
    unsafe { lamina_iter_close(it) };

    let it = db.open_iter(Some(b"key00010"), Some(b"key00013"));
    let got: Vec<Vec<u8>> = std::iter::from_fn(|| {
        let (status, _, _, key, _) = next(it, 16, 16);
        (status == LAMINA_OK).then_some(key)
    })
    .collect();
    assert_eq!(got, [&b"key00010"[..], b"key00011", b"key00012"]);
    // SAFETY: live iterator, not used after.
    unsafe { lamina_iter_close(it) };
}

#[test]
fn the_entries_hint_sizes_the_first_page_and_pages_double() {
    let db = TestDb::new();
    let keys = 3 * PAGE_ENTRIES;
    for i in 0..keys {
        assert_eq!(db.put(format!("key{i:05}").as_bytes(), b"v"), LAMINA_OK);
    }
    let open = |hint: usize| {
        let mut it = null_mut();
        // SAFETY: live handle; unbounded range; `it` writable.
        let status =
            unsafe { lamina_iter_open_hinted(db.db, null(), 0, null(), 0, hint, &raw mut it) };
        assert_eq!(status, LAMINA_OK);
        it
    };
    // SAFETY: called only on live iterators (before their `lamina_iter_close`).
    let count = |it: *mut IterHandle| fetched(unsafe { &*it });
    // A 1-row scan reads one entry (no hint: a whole page).
    for (hint, first_page) in [(1, 1), (10, 10), (0, PAGE_ENTRIES), (100_000, PAGE_ENTRIES)] {
        let it = open(hint);
        assert_eq!(next(it, 16, 16).3, b"key00000");
        assert_eq!(count(it), first_page as u64, "hint {hint}");
        // SAFETY: live iterator, not used after.
        unsafe { lamina_iter_close(it) };
    }
    // Pages double from the hint (1, 2, 4, ...) up to PAGE_ENTRIES, and nothing is lost.
    let it = open(1);
    let mut fetched_after = Vec::new();
    for i in 0..keys {
        assert_eq!(next(it, 16, 16).3, format!("key{i:05}").as_bytes());
        fetched_after.push(count(it));
    }
    assert_eq!(next(it, 16, 16).0, LAMINA_NOT_FOUND);
    assert_eq!(&fetched_after[..8], [1, 3, 3, 7, 7, 7, 7, 15]);
    assert_eq!(count(it), keys as u64);
    // SAFETY: live iterator, not used after.
    unsafe { lamina_iter_close(it) };
}

#[test]
fn concurrent_cas_increments_are_not_lost() {
    const THREADS: usize = 4;
    const INCREMENTS: u64 = 200;
    let db = TestDb::new();
    assert_eq!(db.put(b"n", &0u64.to_le_bytes()), LAMINA_OK);
    let shared = SharedDb(db.db);
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            std::thread::spawn(move || {
                let db = shared;
                for _ in 0..INCREMENTS {
                    loop {
                        let mut current = [0u8; 8];
                        let mut len = 8;
                        // SAFETY: the handle outlives the threads (joined below); buffers valid.
                        let status = unsafe {
                            lamina_get(
                                db.0,
                                b"n".as_ptr().cast(),
                                1,
                                current.as_mut_ptr().cast(),
                                &raw mut len,
                            )
                        };
                        assert_eq!((status, len), (LAMINA_OK, 8));
                        let new = (u64::from_le_bytes(current) + 1).to_le_bytes();
                        // SAFETY: as above.
                        let status = unsafe {
                            lamina_compare_and_swap(
                                db.0,
                                b"n".as_ptr().cast(),
                                1,
                                current.as_ptr().cast(),
                                8,
                                new.as_ptr().cast(),
                                8,
                            )
                        };
                        if status == LAMINA_OK {
                            break;
                        }
                        assert_eq!(status, LAMINA_COMPARE_FAILED);
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let (status, _, buf) = db.get(b"n", 8);
    assert_eq!(status, LAMINA_OK);
    assert_eq!(u64::from_le_bytes(buf.try_into().unwrap()), THREADS as u64 * INCREMENTS);
}

#[test]
fn an_iterator_outliving_its_handle_fails_cleanly_and_holds_the_lock() {
    let mut db = TestDb::new();
    assert_eq!(db.put(b"k", b"v"), LAMINA_OK);
    let it = db.open_iter(None, None);
    let handle = std::mem::replace(&mut db.db, null_mut());
    let dir = db.dir.path().to_path_buf();
    // SAFETY: the handle is live and not used after.
    assert_eq!(unsafe { lamina_close(handle) }, LAMINA_OK);
    assert_eq!(next(it, 8, 8).0, LAMINA_ERROR);
    // SAFETY: a NUL-terminated string of this thread, copied at once.
    let message = unsafe { CStr::from_ptr(lamina_last_error_message(handle)) };
    assert!(message.to_string_lossy().contains("closed"), "{message:?}");
    assert_eq!(open_at(&dir).unwrap_err(), LAMINA_IO_ERROR, "still locked");
    // SAFETY: live iterator, not used after.
    unsafe { lamina_iter_close(it) };
    let reopened = open_at(&dir).unwrap();
    // SAFETY: live handle, not used after.
    assert_eq!(unsafe { lamina_close(reopened) }, LAMINA_OK);
}

#[test]
fn verify_counts_the_entries_of_a_closed_database_and_refuses_an_open_one() {
    let mut db = TestDb::new();
    assert_eq!(db.put(b"a", b"1"), LAMINA_OK);
    assert_eq!(db.put(b"b", b"2"), LAMINA_OK);
    let path = std::ffi::CString::new(db.dir.path().to_str().unwrap()).unwrap();
    let opts = mem_options();
    let mut entries = u64::MAX;
    // SAFETY: a C string, a valid options struct and a writable out pointer.
    let open = unsafe { lamina_verify(path.as_ptr(), &raw const opts, &raw mut entries) };
    assert_eq!(open, LAMINA_IO_ERROR, "the database is open");
    let handle = std::mem::replace(&mut db.db, null_mut());
    // SAFETY: the handle is live and not used after.
    assert_eq!(unsafe { lamina_close(handle) }, LAMINA_OK);
    // SAFETY: as above.
    let status = unsafe { lamina_verify(path.as_ptr(), &raw const opts, &raw mut entries) };
    assert_eq!(status, LAMINA_OK);
    assert_eq!(entries, 2);
    // SAFETY: NULL dir is refused without being read.
    assert_eq!(unsafe { lamina_verify(null(), null(), null_mut()) }, LAMINA_INVALID_ARGUMENT);
}

/// `LAMINA_MEM_LOG_RING_BYTES_MIN` and `LAMINA_TRIE_LOG_RING_BYTES_MIN` (4 KiB + 12 chunks of
/// 2 x the log buffer + 4 KiB): checked against the engines by
/// `the_smallest_log_ring_is_the_one_the_header_states`.
const LOG_RING_BYTES_MIN: [(&std::ffi::CStr, u64); 2] =
    [(c"mem", 6_344_704), (c"trie", 25_219_072)];

#[test]
fn the_smallest_log_ring_is_the_one_the_header_states() {
    for (engine, min) in LOG_RING_BYTES_MIN {
        let open = |budget: u64| {
            let dir = tempfile::tempdir().unwrap();
            let path = std::ffi::CString::new(dir.path().to_str().unwrap()).unwrap();
            let opts = LaminaOptions {
                engine: engine.as_ptr(),
                disk_budget_bytes: budget,
                ..LaminaOptions::defaults()
            };
            let mut db = null_mut();
            // SAFETY: a C string, a valid options struct and a writable out pointer.
            let status = unsafe { lamina_open(path.as_ptr(), &raw const opts, &raw mut db) };
            // SAFETY: NULL or a live handle, not used after.
            assert_eq!(unsafe { lamina_close(db) }, LAMINA_OK);
            status
        };
        assert_eq!(open(min), LAMINA_OK, "{engine:?}");
        assert_eq!(open(min - 1), LAMINA_INVALID_ARGUMENT, "{engine:?}");
    }
}

/// The `NAME = value` and `#define NAME value` constants of the header.
fn header_constants() -> Vec<(String, i64)> {
    let header = include_str!("../include/lamina.h");
    header
        .lines()
        .filter_map(|line| {
            let line = line.trim().trim_end_matches(',');
            let (name, value) = if let Some(rest) = line.strip_prefix("#define ") {
                rest.split_once(' ')?
            } else {
                line.split_once(" = ")?
            };
            Some((name.trim().to_owned(), value.trim().parse().ok()?))
        })
        .filter(|(name, _)| name.starts_with("LAMINA_"))
        .collect()
}

#[test]
fn the_header_states_the_same_constants_as_the_code() {
    use crate::options::{LAMINA_DURABILITY_BUFFERED, LAMINA_DURABILITY_SYNC};
    use crate::status::{LAMINA_CORRUPTION, LAMINA_NO_SPACE, LAMINA_UNSUPPORTED};
    let expected: &[(&str, i64)] = &[
        ("LAMINA_KEY_BYTES_MAX", KEY_BYTES_MAX as i64),
        ("LAMINA_VALUE_BYTES_MAX", VALUE_BYTES_MAX as i64),
        ("LAMINA_OK", LAMINA_OK.into()),
        ("LAMINA_NOT_FOUND", LAMINA_NOT_FOUND.into()),
        ("LAMINA_KEY_BUFFER_TOO_SMALL", LAMINA_KEY_BUFFER_TOO_SMALL.into()),
        ("LAMINA_VALUE_BUFFER_TOO_SMALL", LAMINA_VALUE_BUFFER_TOO_SMALL.into()),
        ("LAMINA_COMPARE_FAILED", LAMINA_COMPARE_FAILED.into()),
        ("LAMINA_INVALID_ARGUMENT", LAMINA_INVALID_ARGUMENT.into()),
        ("LAMINA_NO_SPACE", LAMINA_NO_SPACE.into()),
        ("LAMINA_CORRUPTION", LAMINA_CORRUPTION.into()),
        ("LAMINA_IO_ERROR", LAMINA_IO_ERROR.into()),
        ("LAMINA_ERROR", LAMINA_ERROR.into()),
        ("LAMINA_UNSUPPORTED", LAMINA_UNSUPPORTED.into()),
        ("LAMINA_DURABILITY_SYNC", LAMINA_DURABILITY_SYNC.into()),
        ("LAMINA_DURABILITY_BUFFERED", LAMINA_DURABILITY_BUFFERED.into()),
        ("LAMINA_DURABILITY_NONE", LAMINA_DURABILITY_NONE.into()),
        ("LAMINA_MEM_LOG_RING_BYTES_MIN", LOG_RING_BYTES_MIN[0].1.try_into().unwrap()),
        ("LAMINA_TRIE_LOG_RING_BYTES_MIN", LOG_RING_BYTES_MIN[1].1.try_into().unwrap()),
        ("LAMINA_ITER_PAGE_ENTRIES_MAX", PAGE_ENTRIES.try_into().unwrap()),
    ];
    let mut found = header_constants();
    found.sort();
    let mut want: Vec<(String, i64)> =
        expected.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    want.sort();
    assert_eq!(found, want);
}

#[test]
fn the_options_struct_has_the_c_layout_the_header_describes() {
    // const char*, int, then four uint64_t, then int, then two uint64_t: on LP64,
    // 8 + 4(+4) + 32 + 4(+4) + 16 = 72.
    assert_eq!(std::mem::offset_of!(LaminaOptions, durability), std::mem::size_of::<usize>());
    assert_eq!(std::mem::offset_of!(LaminaOptions, durability_max_delay_us) % 8, 0);
    assert_eq!(
        std::mem::offset_of!(LaminaOptions, create_if_missing),
        std::mem::offset_of!(LaminaOptions, disk_budget_bytes) + 8
    );
    assert_eq!(
        std::mem::offset_of!(LaminaOptions, memory_limit_bytes),
        std::mem::offset_of!(LaminaOptions, create_if_missing) + 8
    );
    assert_eq!(
        std::mem::offset_of!(LaminaOptions, log_buffer_bytes),
        std::mem::offset_of!(LaminaOptions, memory_limit_bytes) + 8
    );
    assert_eq!(std::mem::size_of::<LaminaOptions>(), 72);
}
