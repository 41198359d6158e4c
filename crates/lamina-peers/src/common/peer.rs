//! [`Peer`]: the `OrderedIndex` every peer configuration is opened as. It checks every
//! argument against `lamina_core::limits` before the library sees it (so refused input
//! changes nothing), refuses calls after `close` with `Error::Closed`, counts user bytes and
//! runs the syncer of `Durability::Buffered`. Its I/O bytes are the process's block-layer
//! bytes since it opened (`/proc/self/io`): the libraries keep no such counters.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::limits::{check_cas, check_key, check_scan_limit, check_value};
use lamina_core::{
    CasOutcome, Durability, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};
use parking_lot::{Mutex, RwLock};

use super::Backend;
use super::proc_io::ProcIo;
use super::syncer::Syncer;

/// A peer library behind lamina's API.
pub(crate) struct Peer<B: Backend> {
    name: &'static str,
    dir: PathBuf,
    /// `None` once closed. Operations hold the read side; `close` takes the write side, so
    /// it waits for running operations and no operation sees a freed handle.
    state: Arc<RwLock<Option<B>>>,
    syncer: Mutex<Option<Syncer>>,
    sync_failure: Arc<Mutex<Option<String>>>,
    user_bytes_written: AtomicU64,
    /// The process's I/O counters when the peer opened (`None` without `/proc/self/io`).
    io_at_open: Option<ProcIo>,
}

impl<B: Backend> std::fmt::Debug for Peer<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("name", &self.name)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Peer<B> {
    /// Wraps an opened backend; starts the syncer when `durability` is `Buffered`.
    pub(crate) fn new(
        name: &'static str,
        dir: &Path,
        backend: B,
        durability: Durability,
    ) -> Result<Self> {
        let state = Arc::new(RwLock::new(Some(backend)));
        let sync_failure = Arc::new(Mutex::new(None));
        let syncer = match durability {
            Durability::Buffered { max_delay } => {
                let syncer =
                    Syncer::start(name, Arc::clone(&state), Arc::clone(&sync_failure), max_delay);
                if !syncer.is_running() {
                    return Err(Error::Unsupported {
                        what: format!("{name}: could not start the buffered-durability syncer"),
                    });
                }
                Some(syncer)
            }
            Durability::Sync | Durability::None => None,
        };
        Ok(Peer {
            name,
            dir: dir.to_path_buf(),
            state,
            syncer: Mutex::new(syncer),
            sync_failure,
            user_bytes_written: AtomicU64::new(0),
            io_at_open: ProcIo::now(),
        })
    }

    /// Refuses the empty key where the library cannot store it (see
    /// [`Backend::ACCEPTS_EMPTY_KEY`]).
    fn check_empty_key(key: &[u8]) -> Result<()> {
        if key.is_empty() && !B::ACCEPTS_EMPTY_KEY {
            return Err(lamina_core::Error::InvalidArgument(
                lamina_core::InvalidArgument::KeyEmpty,
            ));
        }
        Ok(())
    }

    fn with<T>(&self, op: impl FnOnce(&B) -> Result<T>) -> Result<T> {
        let guard = self.state.read();
        let backend = guard.as_ref().ok_or(Error::Closed)?;
        op(backend)
    }

    fn count(&self, bytes: usize) {
        self.user_bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn take_sync_failure(&self) -> Result<()> {
        match self.sync_failure.lock().take() {
            Some(message) => Err(Error::Io {
                context: format!("{} background sync in {}", self.name, self.dir.display()),
                source: std::io::Error::other(message),
            }),
            None => Ok(()),
        }
    }

    /// Bytes of the files under the peer's directory (what it holds on the device).
    fn dir_bytes(&self) -> u64 {
        fn walk(dir: &Path, depth: usize) -> u64 {
            let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() && depth < 4 => walk(&e.path(), depth + 1),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        }
        walk(&self.dir, 0)
    }
}

impl<B: Backend> OrderedIndex for Peer<B> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        Self::check_empty_key(key)?;
        self.with(|b| b.get(key))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        Self::check_empty_key(key)?;
        check_value(value)?;
        self.with(|b| b.put(key, value))?;
        self.count(key.len() + value.len());
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        Self::check_empty_key(key)?;
        let existed = self.with(|b| b.delete(key))?;
        self.count(key.len());
        Ok(existed)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        check_cas(key, expected, new)?;
        Self::check_empty_key(key)?;
        let outcome = self.with(|b| b.compare_and_swap(key, expected, new))?;
        if outcome.is_swapped() {
            self.count(key.len() + new.map_or(0, <[u8]>::len));
        }
        Ok(outcome)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        // A store without the empty key: a bound on it (valid for every store) must not reach
        // the library, which refuses zero-length keys even to seek. Starting at or after it
        // is starting at the first key; ending at or before it is ending before every key.
        let on_empty = |bound: &Bound<Vec<u8>>| matches!(bound, Bound::Included(k) | Bound::Excluded(k) if k.is_empty());
        let before_every_key = !B::ACCEPTS_EMPTY_KEY && on_empty(&range.end);
        let stripped;
        let range = if !B::ACCEPTS_EMPTY_KEY && on_empty(&range.start) {
            stripped = KeyRange { start: Bound::Unbounded, end: range.end.clone() };
            &stripped
        } else {
            range
        };
        self.with(|b| {
            if limit == 0 || before_every_key || range.is_empty() {
                return Ok(Vec::new());
            }
            let entries = b.scan(range, limit)?;
            debug_assert!(entries.len() <= limit);
            debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "scan out of order");
            debug_assert!(entries.iter().all(|(k, _)| range.contains(k)), "scan out of range");
            Ok(entries)
        })
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        for op in batch.ops() {
            Self::check_empty_key(op.key())?;
        }
        self.with(|b| if batch.is_empty() { Ok(()) } else { b.write_batch(batch) })?;
        self.count(batch.payload_bytes());
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.with(Backend::sync)?;
        self.take_sync_failure()
    }

    fn stats(&self) -> Stats {
        let mut stats = Stats::new(self.name);
        stats.user_bytes_written = self.user_bytes_written.load(Ordering::Relaxed);
        stats.io.live_bytes = self.dir_bytes();
        if let (Some(open), Some(now)) = (self.io_at_open, ProcIo::now()) {
            // Bytes only: the process's read and write calls and its syncs include other
            // work, so they stay 0 rather than claim a count the peer did not report.
            let io = now.since(&open);
            // Blocks as the storage layer counts them by default (4 KiB).
            let block = 4096;
            stats.io.bytes_read = io.read_bytes;
            stats.io.bytes_written = io.write_bytes;
            stats.io.blocks_read = io.read_bytes.div_ceil(block);
            stats.io.blocks_written = io.write_bytes.div_ceil(block);
        }
        if let Some(backend) = self.state.read().as_ref() {
            backend.fill_stats(&mut stats);
        }
        stats
    }

    fn close(&self) -> Result<()> {
        if let Some(mut syncer) = self.syncer.lock().take() {
            syncer.stop();
        }
        let Some(backend) = self.state.write().take() else { return Ok(()) };
        // Every mode promises that a clean close keeps all writes: sync before releasing.
        let synced = backend.sync();
        let closed = backend.close();
        synced?;
        closed?;
        self.take_sync_failure()
    }
}

impl<B: Backend> Drop for Peer<B> {
    fn drop(&mut self) {
        if let Some(mut syncer) = self.syncer.lock().take() {
            syncer.stop();
        }
    }
}
