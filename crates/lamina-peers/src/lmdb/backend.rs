//! The LMDB peer. Every write (put, delete, compare-and-swap, batch) is one LMDB write
//! transaction: LMDB runs one writer at a time, so a compare-and-swap's read and write are
//! atomic by LMDB's own transactions, and a batch commits all or nothing. Reads and scans are
//! read-only transactions (MVCC snapshots). Keys over LMDB's limit go through
//! [`super::long_keys`].

use std::ffi::{CString, c_int};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::ptr;

use lamina_core::WriteBatch;
use lamina_core::codec::{Decode, Encode};
use lamina_core::{BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, Result, Stats};

use super::ffi;
use super::long_keys::{Bucket, KeyLayout, Placement};
use crate::common::{Backend, Peer, c_message, library_error};
use crate::{PeerName, PeerOptions};

/// Smallest map: LMDB's map reserves address space, not memory or disk (the file grows with
/// the data), so a generous floor costs nothing and a run of unknown size never fills it.
const MAP_BYTES_MIN: u64 = 32 << 30;
/// Readers: enough for 32 client threads and their scans with room to spare.
const READERS_MAX: u32 = 512;

/// Opens the `lmdb` configuration in `dir`.
pub(crate) fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Peer<Lmdb>> {
    let backend = Lmdb::open(peer, dir, options)?;
    Peer::new(peer.as_str(), dir, backend, options.durability)
}

/// An open LMDB environment and its main database.
pub(crate) struct Lmdb {
    name: &'static str,
    dir: PathBuf,
    env: *mut ffi::MDB_env,
    dbi: ffi::MDB_dbi,
    layout: KeyLayout,
}

// SAFETY: an `MDB_env` opened with `MDB_NOTLS` may be used from any thread; each transaction
// is created, used and ended within one call on one thread, and LMDB serializes writers.
unsafe impl Send for Lmdb {}
// SAFETY: as above.
unsafe impl Sync for Lmdb {}

impl Lmdb {
    fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Self> {
        let path = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::option("dir", "path contains a NUL byte"))?;
        let map_bytes = options.data_bytes_expected.saturating_mul(4).max(MAP_BYTES_MIN);
        let map_bytes = map_bytes.next_multiple_of(1 << 20);
        let mut env = ptr::null_mut();
        let mut this = Lmdb {
            name: peer.as_str(),
            dir: dir.to_path_buf(),
            env: ptr::null_mut(),
            dbi: 0,
            layout: KeyLayout::new(2),
        };
        // SAFETY: `env` receives a fresh handle, owned by `this` (closed in Drop) from here.
        this.check("create", unsafe { ffi::mdb_env_create(&raw mut env) })?;
        this.env = env;
        let mut flags = ffi::MDB_NOTLS;
        if options.durability != Durability::Sync {
            // Commits skip fsync; `sync` (the buffered syncer, close) calls mdb_env_sync.
            flags |= ffi::MDB_NOSYNC;
        }
        // SAFETY: `env` is a created, unopened environment; `path` is NUL-terminated.
        unsafe {
            this.check("set map size", ffi::mdb_env_set_mapsize(env, map_bytes as usize))?;
            this.check("set readers", ffi::mdb_env_set_maxreaders(env, READERS_MAX))?;
            this.check("open", ffi::mdb_env_open(env, path.as_ptr(), flags, 0o644))?;
        }
        // SAFETY: `env` is open.
        let maxkey = unsafe { ffi::mdb_env_get_maxkeysize(env) };
        this.layout = KeyLayout::new(usize::try_from(maxkey).unwrap_or(0).max(2));
        let txn = Txn::begin(&this, false)?;
        let mut dbi = 0;
        // SAFETY: `txn` is a live write transaction; a null name opens the main database.
        this.check("open database", unsafe {
            ffi::mdb_dbi_open(txn.raw, ptr::null(), 0, &raw mut dbi)
        })?;
        txn.commit()?;
        this.dbi = dbi;
        Ok(this)
    }

    fn error_rc(&self, operation: &str, rc: c_int) -> Error {
        // SAFETY: `mdb_strerror` returns a static NUL-terminated message for any code.
        let message = unsafe { c_message(ffi::mdb_strerror(rc)) };
        library_error(self.name, operation, &self.dir, &message)
    }

    fn check(&self, operation: &str, rc: c_int) -> Result<()> {
        if rc == 0 { Ok(()) } else { Err(self.error_rc(operation, rc)) }
    }

    fn corrupt_bucket(&self, reason: &lamina_core::codec::DecodeError) -> Error {
        Error::corruption(self.dir.join("data.mdb"), 0, format!("long-key bucket: {reason}"))
    }
}

/// A transaction, aborted on drop unless committed.
struct Txn<'e> {
    lmdb: &'e Lmdb,
    raw: *mut ffi::MDB_txn,
}

impl<'e> Txn<'e> {
    fn begin(lmdb: &'e Lmdb, read_only: bool) -> Result<Self> {
        let mut raw = ptr::null_mut();
        let flags = if read_only { ffi::MDB_RDONLY } else { 0 };
        // SAFETY: the environment is open; `raw` receives a transaction owned by the result.
        let rc = unsafe { ffi::mdb_txn_begin(lmdb.env, ptr::null_mut(), flags, &raw mut raw) };
        lmdb.check("begin transaction", rc)?;
        Ok(Txn { lmdb, raw })
    }

    fn commit(mut self) -> Result<()> {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        // SAFETY: `raw` is live; commit frees it whatever the outcome.
        let rc = unsafe { ffi::mdb_txn_commit(raw) };
        self.lmdb.check("commit", rc)
    }

    /// The record stored under `record`, copied.
    fn get_record(&self, record: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut key = ffi::MDB_val::of(record);
        let mut data = ffi::MDB_val::empty();
        // SAFETY: the transaction is live; LMDB only reads `key` and fills `data`.
        let rc = unsafe { ffi::mdb_get(self.raw, self.lmdb.dbi, &raw mut key, &raw mut data) };
        match rc {
            0 => Ok(Some(copy(&data))),
            ffi::MDB_NOTFOUND => Ok(None),
            rc => Err(self.lmdb.error_rc("get", rc)),
        }
    }

    fn put_record(&mut self, record: &[u8], value: &[u8]) -> Result<()> {
        let mut key = ffi::MDB_val::of(record);
        let mut data = ffi::MDB_val::of(value);
        // SAFETY: a live write transaction; LMDB copies key and data.
        let rc = unsafe { ffi::mdb_put(self.raw, self.lmdb.dbi, &raw mut key, &raw mut data, 0) };
        self.lmdb.check("put", rc)
    }

    fn del_record(&mut self, record: &[u8]) -> Result<bool> {
        let mut key = ffi::MDB_val::of(record);
        // SAFETY: a live write transaction; a null data deletes the key.
        let rc = unsafe { ffi::mdb_del(self.raw, self.lmdb.dbi, &raw mut key, ptr::null_mut()) };
        match rc {
            0 => Ok(true),
            ffi::MDB_NOTFOUND => Ok(false),
            rc => Err(self.lmdb.error_rc("delete", rc)),
        }
    }

    fn bucket(&self, record: &[u8]) -> Result<Bucket> {
        match self.get_record(record)? {
            Some(bytes) => Bucket::decode(&bytes).map_err(|e| self.lmdb.corrupt_bucket(&e)),
            None => Ok(Bucket::default()),
        }
    }

    /// The value of user key `key`.
    fn read(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.lmdb.layout.place(key) {
            Placement::Inline(k) => self.get_record(k),
            Placement::Bucketed { record, suffix } => {
                Ok(self.bucket(&record)?.get(suffix).map(<[u8]>::to_vec))
            }
        }
    }

    /// Sets (`Some`) or removes (`None`) user key `key`; whether it existed before.
    fn write(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<bool> {
        match (self.lmdb.layout.place(key), value) {
            (Placement::Inline(k), Some(v)) => {
                self.put_record(k, v)?;
                Ok(true)
            }
            (Placement::Inline(k), None) => self.del_record(k),
            (Placement::Bucketed { record, suffix }, value) => {
                let mut bucket = self.bucket(&record)?;
                let existed = match value {
                    Some(v) => {
                        if !bucket.put(suffix, v) {
                            return Err(Error::Unsupported {
                                what: format!(
                                    "lmdb: more than {} keys sharing their first {} bytes",
                                    super::long_keys::BUCKET_ENTRIES_MAX,
                                    self.lmdb.layout.inline_max
                                ),
                            });
                        }
                        true
                    }
                    None => bucket.remove(suffix),
                };
                if bucket.entries.is_empty() {
                    self.del_record(&record)?;
                } else {
                    self.put_record(&record, &bucket.encode())?;
                }
                Ok(existed)
            }
        }
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: a live transaction not committed: aborted once.
            unsafe { ffi::mdb_txn_abort(self.raw) };
        }
    }
}

/// Copies an `MDB_val` LMDB returned.
fn copy(val: &ffi::MDB_val) -> Vec<u8> {
    if val.mv_size == 0 {
        return Vec::new();
    }
    // SAFETY: LMDB returned `mv_size` readable bytes at `mv_data`, valid until the
    // transaction ends, which outlives this call.
    unsafe { std::slice::from_raw_parts(val.mv_data.cast::<u8>(), val.mv_size) }.to_vec()
}

/// A cursor, closed on drop (before its transaction, which it borrows).
struct Cursor<'t> {
    txn: &'t Txn<'t>,
    raw: *mut ffi::MDB_cursor,
}

impl Cursor<'_> {
    /// Moves with `op` (`seek` is the key of `MDB_SET_RANGE`); the record there, if any.
    fn step(&self, op: c_int, seek: Option<&[u8]>) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut key = seek.map_or_else(ffi::MDB_val::empty, ffi::MDB_val::of);
        let mut data = ffi::MDB_val::empty();
        // SAFETY: the cursor and its transaction are live.
        let rc = unsafe { ffi::mdb_cursor_get(self.raw, &raw mut key, &raw mut data, op) };
        match rc {
            0 => Ok(Some((copy(&key), copy(&data)))),
            ffi::MDB_NOTFOUND => Ok(None),
            rc => Err(self.txn.lmdb.error_rc("scan", rc)),
        }
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        // SAFETY: closed once, while its read transaction is still live.
        unsafe { ffi::mdb_cursor_close(self.raw) };
    }
}

impl Backend for Lmdb {
    // mdb_put/mdb_get refuse a zero-length key (MDB_BAD_VALSIZE).
    const ACCEPTS_EMPTY_KEY: bool = false;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Txn::begin(self, true)?.read(key)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut txn = Txn::begin(self, false)?;
        txn.write(key, Some(value))?;
        txn.commit()
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        let mut txn = Txn::begin(self, false)?;
        let existed = txn.write(key, None)?;
        if existed {
            txn.commit()?;
        }
        Ok(existed)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        let mut txn = Txn::begin(self, false)?;
        let current = txn.read(key)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Mismatch { current });
        }
        txn.write(key, new)?;
        txn.commit()?;
        Ok(CasOutcome::Swapped)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        let txn = Txn::begin(self, true)?;
        let mut raw = ptr::null_mut();
        // SAFETY: a live read transaction; the cursor is closed by `Cursor` before it ends.
        self.check("open cursor", unsafe {
            ffi::mdb_cursor_open(txn.raw, self.dbi, &raw mut raw)
        })?;
        let cursor = Cursor { txn: &txn, raw };
        let mut record = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => {
                let seek = match self.layout.place(k) {
                    Placement::Inline(k) => k.to_vec(),
                    Placement::Bucketed { record, .. } => record,
                };
                cursor.step(ffi::MDB_SET_RANGE, Some(&seek))?
            }
            Bound::Unbounded => cursor.step(ffi::MDB_FIRST, None)?,
        };
        let mut out = Vec::new();
        while let Some((key, value)) = record {
            let entries = if self.layout.is_bucket(&key) {
                let bucket = Bucket::decode(&value).map_err(|e| self.corrupt_bucket(&e))?;
                bucket
                    .entries
                    .into_iter()
                    .map(|(s, v)| (self.layout.user_key(&key, &s), v))
                    .collect()
            } else {
                vec![(key, value)]
            };
            for (k, v) in entries {
                if range.is_past_end(&k) || out.len() == limit {
                    return Ok(out);
                }
                if range.contains(&k) {
                    out.push((k, v));
                }
            }
            record = cursor.step(ffi::MDB_NEXT, None)?;
        }
        Ok(out)
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        let mut txn = Txn::begin(self, false)?;
        for op in batch.ops() {
            match op {
                BatchOp::Put { key, value } => txn.write(key, Some(value))?,
                BatchOp::Delete { key } => txn.write(key, None)?,
            };
        }
        txn.commit()
    }

    fn sync(&self) -> Result<()> {
        // SAFETY: the environment is open.
        self.check("sync", unsafe { ffi::mdb_env_sync(self.env, 1) })
    }

    fn fill_stats(&self, stats: &mut Stats) {
        let mut stat = ffi::MDB_stat::default();
        // SAFETY: the environment is open; `stat` is a properly laid out out-parameter.
        if unsafe { ffi::mdb_env_stat(self.env, &raw mut stat) } == 0 {
            stats.extra.push(("records", stat.ms_entries as u64));
            stats.extra.push(("btree_depth", u64::from(stat.ms_depth)));
            let pages = stat.ms_branch_pages + stat.ms_leaf_pages + stat.ms_overflow_pages;
            stats.extra.push(("pages", pages as u64));
        }
    }

    fn close(self) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for Lmdb {
    fn drop(&mut self) {
        if !self.env.is_null() {
            // SAFETY: no transaction is live (each ends within its call); closed once.
            unsafe { ffi::mdb_env_close(self.env) };
        }
    }
}
