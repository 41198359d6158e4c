//! The Berkeley DB peer (`bdb`): one B-tree database in a transactional environment
//! (locking, logging, buffer pool, recovery at open). Single puts and deletes are
//! auto-commit transactions (`DB_AUTO_COMMIT`); `DB->del` reports a missing key, so
//! delete-with-existence is one atomic call. Compare-and-swap and batches are explicit BDB
//! transactions: the CAS reads with `DB_RMW` (a write lock taken at the read), compares and
//! writes before committing. Deadlocks between transactions are broken by BDB's detector and
//! the losing operation retries from scratch.

use std::ffi::{CString, c_int, c_void};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::ptr;

use lamina_core::WriteBatch;
use lamina_core::{BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, Result, Stats};

use super::ffi;
use crate::common::{Backend, Peer, library_error, shim_message};
use crate::{PeerName, PeerOptions};

/// Attempts of one operation that keeps losing deadlocks before it gives up.
const ATTEMPTS_MAX: u32 = 10_000;

/// Opens the `bdb` configuration in `dir`.
pub(crate) fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Peer<Bdb>> {
    let backend = Bdb::open(peer, dir, options)?;
    Peer::new(peer.as_str(), dir, backend, options.durability)
}

/// An open environment and its B-tree database.
pub(crate) struct Bdb {
    name: &'static str,
    dir: PathBuf,
    env: *mut ffi::DbEnv,
    db: *mut ffi::Db,
}

// SAFETY: both handles are opened with `DB_THREAD`, which makes them usable from any number
// of threads at once (BDB's documented free-threading); transactions and cursors are created
// and ended within one call.
unsafe impl Send for Bdb {}
// SAFETY: as above.
unsafe impl Sync for Bdb {}

/// Whether `rc` means "lost a deadlock; retry".
fn is_deadlock(rc: c_int) -> bool {
    rc == ffi::DB_LOCK_DEADLOCK || rc == ffi::DB_LOCK_NOTGRANTED
}

/// Copies and frees a buffer BDB `malloc`ed.
fn take(buf: *mut c_void, len: usize) -> Vec<u8> {
    if buf.is_null() {
        return Vec::new();
    }
    // SAFETY: BDB returned `len` readable bytes at `buf` (DB_DBT_MALLOC), ours to free.
    let copy = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }.to_vec();
    // SAFETY: allocated with the C allocator by BDB; freed once.
    unsafe { libc::free(buf) };
    copy
}

/// A transaction, aborted on drop unless committed.
struct Txn(*mut ffi::DbTxn);

impl Txn {
    fn begin(env: *mut ffi::DbEnv) -> std::result::Result<Txn, c_int> {
        let mut raw = ptr::null_mut();
        // SAFETY: the environment is open; `raw` receives a transaction owned by `Txn`.
        let rc = unsafe { ffi::lp_bdb_txn_begin(env, &raw mut raw) };
        if rc == 0 { Ok(Txn(raw)) } else { Err(rc) }
    }

    fn commit(mut self) -> std::result::Result<(), c_int> {
        let raw = std::mem::replace(&mut self.0, ptr::null_mut());
        // SAFETY: live transaction; commit frees it whatever the outcome.
        let rc = unsafe { ffi::lp_bdb_txn_commit(raw) };
        if rc == 0 { Ok(()) } else { Err(rc) }
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: live, uncommitted transaction, aborted once.
            unsafe { ffi::lp_bdb_txn_abort(self.0) };
        }
    }
}

impl Bdb {
    fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Self> {
        let path = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::option("dir", "path contains a NUL byte"))?;
        let nosync = c_int::from(options.durability != Durability::Sync);
        let (mut env, mut db) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: `path` is NUL-terminated; on success both handles are owned by `Bdb`.
        let rc = unsafe {
            ffi::lp_bdb_open(
                path.as_ptr(),
                options.btree_cache_bytes(),
                nosync,
                &raw mut env,
                &raw mut db,
            )
        };
        let this = Bdb { name: peer.as_str(), dir: dir.to_path_buf(), env, db };
        if rc != 0 {
            return Err(this.error_rc("open", rc));
        }
        Ok(this)
    }

    fn error_rc(&self, operation: &str, rc: c_int) -> Error {
        // SAFETY: the shim's `strerror` (`db_strerror`) returns a NUL-terminated message
        // for any code, and its `take_error` NUL-terminates within the length it is given.
        let message = unsafe { shim_message(ffi::lp_bdb_strerror, ffi::lp_bdb_take_error, rc) };
        library_error(self.name, operation, &self.dir, &message)
    }

    /// Runs `attempt` until it does not lose a deadlock.
    fn retrying<T>(
        &self,
        operation: &str,
        mut attempt: impl FnMut() -> std::result::Result<T, c_int>,
    ) -> Result<T> {
        for tries in 0..ATTEMPTS_MAX {
            match attempt() {
                Ok(value) => return Ok(value),
                Err(rc) if is_deadlock(rc) => {
                    if tries > 4 {
                        std::thread::yield_now();
                    }
                }
                Err(rc) => return Err(self.error_rc(operation, rc)),
            }
        }
        Err(self.error_rc(operation, ffi::DB_LOCK_DEADLOCK))
    }

    fn raw_get(
        &self,
        txn: *mut ffi::DbTxn,
        key: &[u8],
        flags: u32,
    ) -> std::result::Result<Option<Vec<u8>>, c_int> {
        let (mut v, mut vlen) = (ptr::null_mut(), 0usize);
        // SAFETY: the database is open; `txn` is null or live; key valid for its length.
        let rc = unsafe {
            ffi::lp_bdb_get(
                self.db,
                txn,
                key.as_ptr().cast(),
                key.len(),
                &raw mut v,
                &raw mut vlen,
                flags,
            )
        };
        match rc {
            0 => Ok(Some(take(v, vlen))),
            ffi::DB_NOTFOUND => Ok(None),
            rc => Err(rc),
        }
    }

    fn raw_put(
        &self,
        txn: *mut ffi::DbTxn,
        key: &[u8],
        value: &[u8],
    ) -> std::result::Result<(), c_int> {
        // SAFETY: the database is open; `txn` is null (auto-commit) or live.
        let rc = unsafe {
            ffi::lp_bdb_put(
                self.db,
                txn,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        };
        if rc == 0 { Ok(()) } else { Err(rc) }
    }

    fn raw_del(&self, txn: *mut ffi::DbTxn, key: &[u8]) -> std::result::Result<bool, c_int> {
        // SAFETY: the database is open; `txn` is null (auto-commit) or live.
        let rc = unsafe { ffi::lp_bdb_del(self.db, txn, key.as_ptr().cast(), key.len()) };
        match rc {
            0 => Ok(true),
            ffi::DB_NOTFOUND => Ok(false),
            rc => Err(rc),
        }
    }

    /// Appends to `out` up to `limit` pairs of `range`, with a read-committed cursor.
    fn scan_once(
        &self,
        range: &KeyRange,
        limit: usize,
        out: &mut Vec<Entry>,
    ) -> std::result::Result<(), c_int> {
        let mut cursor = ptr::null_mut();
        // SAFETY: the database is open; the cursor is closed below on every path.
        let rc = unsafe {
            ffi::lp_bdb_cursor_open(
                self.db,
                ptr::null_mut(),
                &raw mut cursor,
                ffi::DB_READ_COMMITTED,
            )
        };
        if rc != 0 {
            return Err(rc);
        }
        let result = Self::walk(cursor, range, limit, out);
        // SAFETY: opened above, closed once.
        let rc = unsafe { ffi::lp_bdb_cursor_close(cursor) };
        result?;
        if rc == 0 { Ok(()) } else { Err(rc) }
    }

    fn walk(
        cursor: *mut ffi::Dbc,
        range: &KeyRange,
        limit: usize,
        out: &mut Vec<Entry>,
    ) -> std::result::Result<(), c_int> {
        let (mut op, seek): (u32, &[u8]) = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => (ffi::DB_SET_RANGE, k),
            Bound::Unbounded => (ffi::DB_FIRST, &[]),
        };
        let start_len = out.len();
        while out.len() - start_len < limit {
            let (mut k, mut klen, mut v, mut vlen) = (ptr::null_mut(), 0, ptr::null_mut(), 0);
            // SAFETY: the cursor is open; `seek` is read only for DB_SET_RANGE.
            let rc = unsafe {
                ffi::lp_bdb_cursor_get(
                    cursor,
                    seek.as_ptr().cast(),
                    seek.len(),
                    &raw mut k,
                    &raw mut klen,
                    &raw mut v,
                    &raw mut vlen,
                    op,
                )
            };
            match rc {
                0 => {}
                ffi::DB_NOTFOUND => return Ok(()),
                rc => return Err(rc),
            }
            let (key, value) = (take(k, klen), take(v, vlen));
            if range.is_past_end(&key) {
                return Ok(());
            }
            if range.contains(&key) {
                out.push((key, value));
            }
            op = ffi::DB_NEXT;
        }
        Ok(())
    }
}

impl Backend for Bdb {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.retrying("get", || self.raw_get(ptr::null_mut(), key, 0))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.retrying("put", || self.raw_put(ptr::null_mut(), key, value))
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.retrying("delete", || self.raw_del(ptr::null_mut(), key))
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.retrying("compare-and-swap", || {
            let txn = Txn::begin(self.env)?;
            let current = self.raw_get(txn.0, key, ffi::DB_RMW)?;
            if current.as_deref() != expected {
                return Ok(CasOutcome::Mismatch { current });
            }
            match new {
                Some(value) => self.raw_put(txn.0, key, value)?,
                None => {
                    self.raw_del(txn.0, key)?;
                }
            }
            txn.commit()?;
            Ok(CasOutcome::Swapped)
        })
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut rest = range.clone();
        for tries in 0..ATTEMPTS_MAX {
            match self.scan_once(&rest, limit - out.len(), &mut out) {
                Ok(()) => return Ok(out),
                // A scan is not a snapshot: resume after the last pair already returned.
                Err(rc) if is_deadlock(rc) => {
                    if let Some((last, _)) = out.last() {
                        rest = range.resume_after(last);
                    }
                    if tries > 4 {
                        std::thread::yield_now();
                    }
                }
                Err(rc) => return Err(self.error_rc("scan", rc)),
            }
        }
        Err(self.error_rc("scan", ffi::DB_LOCK_DEADLOCK))
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.retrying("write batch", || {
            let txn = Txn::begin(self.env)?;
            for op in batch.ops() {
                match op {
                    BatchOp::Put { key, value } => self.raw_put(txn.0, key, value)?,
                    BatchOp::Delete { key } => {
                        self.raw_del(txn.0, key)?;
                    }
                }
            }
            txn.commit()
        })
    }

    fn sync(&self) -> Result<()> {
        // SAFETY: the environment is open.
        let rc = unsafe { ffi::lp_bdb_log_flush(self.env) };
        if rc == 0 { Ok(()) } else { Err(self.error_rc("sync", rc)) }
    }

    fn fill_stats(&self, stats: &mut Stats) {
        let mut out = [0u64; 4];
        // SAFETY: both handles are open; `out` has the 4 slots the shim fills.
        if unsafe { ffi::lp_bdb_stats(self.env, self.db, out.as_mut_ptr()) } == 0 {
            stats.extra.push(("btree_keys", out[0]));
            stats.extra.push(("cache_hits", out[1]));
            stats.extra.push(("cache_misses", out[2]));
            stats.memory_bytes = out[3];
        }
    }

    fn close(mut self) -> Result<()> {
        let (env, db) = (
            std::mem::replace(&mut self.env, ptr::null_mut()),
            std::mem::replace(&mut self.db, ptr::null_mut()),
        );
        // SAFETY: both handles are open and no operation runs (close holds the state lock);
        // the shim checkpoints and frees both.
        let rc = unsafe { ffi::lp_bdb_close(env, db) };
        if rc == 0 { Ok(()) } else { Err(self.error_rc("close", rc)) }
    }
}

impl Drop for Bdb {
    fn drop(&mut self) {
        if !self.env.is_null() {
            // SAFETY: handles still owned (not closed by `close`); freed once.
            unsafe { ffi::lp_bdb_close(self.env, self.db) };
        }
    }
}
