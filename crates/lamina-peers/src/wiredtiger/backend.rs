//! The WiredTiger peer: `wiredtiger-btree` (row-store B-tree table) and `wiredtiger-lsm`
//! (LSM table), write-ahead log enabled. WiredTiger sessions are single-threaded, so the
//! wrapper keeps a pool of (session, cursor) pairs and lends one to each call. Compare-and-
//! swap, delete-with-existence and batches are snapshot-isolation transactions: a concurrent
//! write to the same key makes one of them fail with `WT_ROLLBACK` (write-write conflict),
//! which rolls back and retries, so the read and the write of a CAS are atomic by
//! WiredTiger's own concurrency control. Single puts are auto-commit transactions.

use std::ffi::{CString, c_int, c_void};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::ptr;

use lamina_core::WriteBatch;
use lamina_core::{BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, Result, Stats};
use parking_lot::Mutex;

use super::ffi;
use crate::common::{Backend, Peer, library_error, shim_message};
use crate::{PeerName, PeerOptions};

/// Attempts of one operation that keeps losing write-write conflicts before it gives up.
const ATTEMPTS_MAX: u32 = 100_000;
/// LSM chunk size: WiredTiger's default, and the floor for small caches.
const LSM_CHUNK_BYTES_MAX: u64 = 10 << 20;
const LSM_CHUNK_BYTES_MIN: u64 = 512 << 10;
/// Log file size. WiredTiger's default (100 MiB, preallocated) makes every open scan up to
/// two whole preallocated files during recovery (0.2-0.5 s here); 16 MiB keeps an open
/// under 0.1 s and still switches files rarely (preallocation stays on).
const LOG_FILE_BYTES: u64 = 16 << 20;
/// Sessions the connection allows (client threads plus the syncer, with room).
const SESSIONS_MAX: u32 = 1024;

/// Opens a WiredTiger configuration in `dir`.
pub(crate) fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Peer<WiredTiger>> {
    let backend = WiredTiger::open(peer, dir, options)?;
    Peer::new(peer.as_str(), dir, backend, options.durability)
}

/// One session and its cursor on the table; used by one thread at a time.
struct Slot {
    session: *mut ffi::WtSession,
    cursor: *mut ffi::WtCursor,
}

/// An open connection, its table and the pool of idle sessions.
pub(crate) struct WiredTiger {
    name: &'static str,
    dir: PathBuf,
    conn: *mut ffi::WtConnection,
    uri: CString,
    idle: Mutex<Vec<Slot>>,
}

// SAFETY: a `WT_CONNECTION` is thread-safe (WiredTiger's documented guarantee). Sessions and
// cursors are not, so each `Slot` is used by one thread at a time: it is taken out of the
// pool for the duration of one call and returned after.
unsafe impl Send for WiredTiger {}
// SAFETY: as above.
unsafe impl Sync for WiredTiger {}

/// A slot lent to one call, returned to the pool (reset) on drop.
struct Lent<'w> {
    wt: &'w WiredTiger,
    slot: Option<Slot>,
}

impl Lent<'_> {
    fn session(&self) -> *mut ffi::WtSession {
        self.slot.as_ref().expect("lent slot").session
    }

    fn cursor(&self) -> *mut ffi::WtCursor {
        self.slot.as_ref().expect("lent slot").cursor
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            // SAFETY: the cursor is live; resetting releases its position before it idles.
            unsafe { ffi::lp_wt_reset(slot.cursor) };
            self.wt.idle.lock().push(slot);
        }
    }
}

/// A running transaction on a lent session, rolled back on drop unless committed.
struct Txn<'l> {
    session: *mut ffi::WtSession,
    open: bool,
    _lent: std::marker::PhantomData<&'l ()>,
}

impl Txn<'_> {
    fn begin(lent: &Lent<'_>) -> std::result::Result<Self, c_int> {
        let session = lent.session();
        // SAFETY: the session is live and used by this thread only.
        let rc = unsafe { ffi::lp_wt_begin(session, c"isolation=snapshot".as_ptr()) };
        if rc != 0 {
            return Err(rc);
        }
        Ok(Txn { session, open: true, _lent: std::marker::PhantomData })
    }

    fn commit(mut self) -> std::result::Result<(), c_int> {
        self.open = false;
        // SAFETY: the transaction is running; a failed commit rolls it back itself.
        let rc = unsafe { ffi::lp_wt_commit(self.session, ptr::null()) };
        if rc == 0 { Ok(()) } else { Err(rc) }
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if self.open {
            // SAFETY: the transaction is running on this thread's session.
            unsafe { ffi::lp_wt_rollback(self.session) };
        }
    }
}

fn is_conflict(rc: c_int) -> bool {
    rc == ffi::WT_ROLLBACK || rc == ffi::WT_PREPARE_CONFLICT
}

/// Copies `len` bytes WiredTiger returned (valid until the cursor moves).
fn copy(data: *const c_void, len: usize) -> Vec<u8> {
    if len == 0 {
        return Vec::new();
    }
    // SAFETY: WiredTiger returned `len` readable bytes at `data`; the cursor has not moved.
    unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec()
}

fn ok(rc: c_int) -> std::result::Result<(), c_int> {
    if rc == 0 { Ok(()) } else { Err(rc) }
}

impl WiredTiger {
    fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Self> {
        let home = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::option("dir", "path contains a NUL byte"))?;
        let sync = options.durability == Durability::Sync;
        let config = CString::new(format!(
            "create,cache_size={},session_max={SESSIONS_MAX},log=(enabled=true,file_max={LOG_FILE_BYTES}),\
             transaction_sync=(enabled={sync},method=fsync),checkpoint=(wait=60)",
            options.btree_cache_bytes()
        ))
        .expect("no NUL in the config");
        let mut conn = ptr::null_mut();
        let mut this = WiredTiger {
            name: peer.as_str(),
            dir: dir.to_path_buf(),
            conn: ptr::null_mut(),
            uri: CString::new("table:lamina").expect("no NUL"),
            idle: Mutex::new(Vec::new()),
        };
        // SAFETY: `home` and `config` are NUL-terminated; the connection is owned by `this`.
        let rc = unsafe { ffi::lp_wt_open(home.as_ptr(), config.as_ptr(), &raw mut conn) };
        if rc != 0 {
            return Err(this.error_rc("open", rc));
        }
        this.conn = conn;
        let table = match peer {
            // WiredTiger requires the cache to hold a few LSM chunks; the default 10 MiB
            // chunk is kept when the budget allows and shrunk for small caches.
            PeerName::WiredTigerLsm => {
                let chunk = (options.btree_cache_bytes() / 5)
                    .clamp(LSM_CHUNK_BYTES_MIN, LSM_CHUNK_BYTES_MAX);
                CString::new(format!(
                    "key_format=u,value_format=u,type=lsm,lsm=(chunk_size={chunk})"
                ))
            }
            _ => CString::new("key_format=u,value_format=u"),
        }
        .expect("no NUL in the table config");
        let mut session = ptr::null_mut();
        // SAFETY: the connection is open; the session is closed once right after the create
        // (creating an existing table with the same configuration succeeds).
        let rc = unsafe {
            let rc = ffi::lp_wt_open_session(conn, &raw mut session);
            if rc == 0 {
                let rc = ffi::lp_wt_create(session, this.uri.as_ptr(), table.as_ptr());
                ffi::lp_wt_session_close(session);
                rc
            } else {
                rc
            }
        };
        if rc != 0 {
            return Err(this.error_rc("create table", rc));
        }
        Ok(this)
    }

    fn error_rc(&self, operation: &str, rc: c_int) -> Error {
        // SAFETY: the shim's `strerror` (`wiredtiger_strerror`) returns a NUL-terminated message
        // for any code, and its `take_error` NUL-terminates within the length it is given.
        let message = unsafe { shim_message(ffi::lp_wt_strerror, ffi::lp_wt_take_error, rc) };
        library_error(self.name, operation, &self.dir, &message)
    }

    /// An idle slot, or a new session with a cursor on the table.
    fn lend(&self) -> Result<Lent<'_>> {
        if let Some(slot) = self.idle.lock().pop() {
            return Ok(Lent { wt: self, slot: Some(slot) });
        }
        let (mut session, mut cursor) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: the connection is open; the session is owned by the slot (closed with the
        // connection, or explicitly below when the cursor cannot be opened).
        let rc = unsafe { ffi::lp_wt_open_session(self.conn, &raw mut session) };
        if rc != 0 {
            return Err(self.error_rc("open session", rc));
        }
        // SAFETY: the session is live; the cursor belongs to it.
        let rc = unsafe {
            ffi::lp_wt_open_cursor(session, self.uri.as_ptr(), ptr::null(), &raw mut cursor)
        };
        if rc != 0 {
            // SAFETY: the session was opened above and is closed once.
            unsafe { ffi::lp_wt_session_close(session) };
            return Err(self.error_rc("open cursor", rc));
        }
        Ok(Lent { wt: self, slot: Some(Slot { session, cursor }) })
    }

    /// Runs `attempt` on a lent slot until it does not lose a write-write conflict.
    fn retrying<T>(
        &self,
        operation: &str,
        mut attempt: impl FnMut(&Lent<'_>) -> std::result::Result<T, c_int>,
    ) -> Result<T> {
        let lent = self.lend()?;
        for tries in 0..ATTEMPTS_MAX {
            match attempt(&lent) {
                Ok(value) => return Ok(value),
                Err(rc) if is_conflict(rc) => {
                    // SAFETY: the cursor is live; a retry starts unpositioned.
                    unsafe { ffi::lp_wt_reset(lent.cursor()) };
                    if tries > 4 {
                        std::thread::yield_now();
                    }
                }
                Err(rc) => return Err(self.error_rc(operation, rc)),
            }
        }
        Err(self.error_rc(operation, ffi::WT_ROLLBACK))
    }
}

/// The value under `key`, copied (the cursor is left positioned).
fn search(cursor: *mut ffi::WtCursor, key: &[u8]) -> std::result::Result<Option<Vec<u8>>, c_int> {
    let (mut v, mut vlen) = (ptr::null(), 0usize);
    // SAFETY: the cursor is live and used by this thread only; key valid for its length.
    let rc = unsafe {
        ffi::lp_wt_search(cursor, key.as_ptr().cast(), key.len(), &raw mut v, &raw mut vlen)
    };
    match rc {
        0 => Ok(Some(copy(v, vlen))),
        ffi::WT_NOTFOUND => Ok(None),
        rc => Err(rc),
    }
}

fn insert(cursor: *mut ffi::WtCursor, key: &[u8], value: &[u8]) -> std::result::Result<(), c_int> {
    // SAFETY: the cursor is live; WiredTiger copies key and value.
    ok(unsafe {
        ffi::lp_wt_insert(
            cursor,
            key.as_ptr().cast(),
            key.len(),
            value.as_ptr().cast(),
            value.len(),
        )
    })
}

fn remove(cursor: *mut ffi::WtCursor, key: &[u8]) -> std::result::Result<(), c_int> {
    // SAFETY: the cursor is live; key valid for its length.
    match unsafe { ffi::lp_wt_remove(cursor, key.as_ptr().cast(), key.len()) } {
        0 | ffi::WT_NOTFOUND => Ok(()),
        rc => Err(rc),
    }
}

/// The pair under the cursor, copied.
fn current(cursor: *mut ffi::WtCursor) -> std::result::Result<Entry, c_int> {
    let (mut k, mut klen, mut v, mut vlen) = (ptr::null(), 0usize, ptr::null(), 0usize);
    // SAFETY: the cursor is live and positioned.
    ok(unsafe {
        ffi::lp_wt_current(cursor, &raw mut k, &raw mut klen, &raw mut v, &raw mut vlen)
    })?;
    Ok((copy(k, klen), copy(v, vlen)))
}

/// Appends up to `limit` pairs of `range` from a cursor in a snapshot transaction.
fn walk(
    cursor: *mut ffi::WtCursor,
    range: &KeyRange,
    limit: usize,
) -> std::result::Result<Vec<Entry>, c_int> {
    let mut out = Vec::new();
    // Position at the first key >= start: search_near lands on a neighbour, which may be
    // below the start, so step forward while it is.
    let mut rc = match &range.start {
        Bound::Included(k) | Bound::Excluded(k) => {
            let mut exact: c_int = 0;
            // SAFETY: the cursor is live; key valid for its length.
            let rc = unsafe {
                ffi::lp_wt_search_near(cursor, k.as_ptr().cast(), k.len(), &raw mut exact)
            };
            if rc == 0 && exact < 0 {
                // SAFETY: the cursor is positioned.
                unsafe { ffi::lp_wt_next(cursor) }
            } else {
                rc
            }
        }
        // SAFETY: an unpositioned cursor's `next` moves to the first record.
        Bound::Unbounded => unsafe { ffi::lp_wt_next(cursor) },
    };
    while rc == 0 && out.len() < limit {
        let (k, v) = current(cursor)?;
        if range.is_past_end(&k) {
            return Ok(out);
        }
        if range.contains(&k) {
            out.push((k, v));
        }
        // SAFETY: the cursor is positioned.
        rc = unsafe { ffi::lp_wt_next(cursor) };
    }
    match rc {
        0 | ffi::WT_NOTFOUND => Ok(out),
        rc => Err(rc),
    }
}

impl Backend for WiredTiger {
    // A zero-length key item is "no key set" to WT_CURSOR (search fails with EINVAL).
    const ACCEPTS_EMPTY_KEY: bool = false;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.retrying("get", |lent| search(lent.cursor(), key))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.retrying("put", |lent| insert(lent.cursor(), key, value))
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.retrying("delete", |lent| {
            let txn = Txn::begin(lent)?;
            if search(lent.cursor(), key)?.is_none() {
                return Ok(false);
            }
            remove(lent.cursor(), key)?;
            txn.commit()?;
            Ok(true)
        })
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.retrying("compare-and-swap", |lent| {
            let txn = Txn::begin(lent)?;
            let current = search(lent.cursor(), key)?;
            if current.as_deref() != expected {
                return Ok(CasOutcome::Mismatch { current });
            }
            match new {
                Some(value) => insert(lent.cursor(), key, value)?,
                None if current.is_some() => remove(lent.cursor(), key)?,
                None => {}
            }
            txn.commit()?;
            Ok(CasOutcome::Swapped)
        })
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        self.retrying("scan", |lent| {
            let _txn = Txn::begin(lent)?;
            walk(lent.cursor(), range, limit)
        })
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.retrying("write batch", |lent| {
            let txn = Txn::begin(lent)?;
            for op in batch.ops() {
                match op {
                    BatchOp::Put { key, value } => insert(lent.cursor(), key, value)?,
                    BatchOp::Delete { key } => remove(lent.cursor(), key)?,
                }
            }
            txn.commit()
        })
    }

    fn sync(&self) -> Result<()> {
        let lent = self.lend()?;
        // SAFETY: the session is live and used by this thread only.
        let rc = unsafe { ffi::lp_wt_log_flush(lent.session(), c"sync=on".as_ptr()) };
        if rc == 0 { Ok(()) } else { Err(self.error_rc("sync", rc)) }
    }

    fn fill_stats(&self, stats: &mut Stats) {
        stats.extra.push(("sessions_idle", self.idle.lock().len() as u64));
    }

    fn close(mut self) -> Result<()> {
        self.idle.lock().clear();
        let conn = std::mem::replace(&mut self.conn, ptr::null_mut());
        // SAFETY: no call is running (close holds the state lock); closing the connection
        // closes every session and cursor and takes a final checkpoint.
        let rc = unsafe { ffi::lp_wt_conn_close(conn, ptr::null()) };
        if rc == 0 { Ok(()) } else { Err(self.error_rc("close", rc)) }
    }
}

impl Drop for WiredTiger {
    fn drop(&mut self) {
        self.idle.lock().clear();
        if !self.conn.is_null() {
            // SAFETY: the connection is still owned (not closed by `close`); closed once,
            // which frees its sessions and cursors.
            unsafe { ffi::lp_wt_conn_close(self.conn, ptr::null()) };
        }
    }
}
