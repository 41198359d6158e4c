//! The engine: one `RwLock` over a `BTreeMap`.
//!
//! Invariants: every operation checks `closed` under the lock, so no call takes effect after
//! `close` returned; writers hold the write lock for the whole operation (including a whole
//! batch or CAS), which makes single-key operations linearizable and batches atomic; scans
//! hold the read lock, so a scan page is a snapshot (stronger than the API requires).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::codec::{Decode, Encode};
use lamina_core::limits::{check_key, check_scan_limit, check_value};
use lamina_core::{
    BatchOp, CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};
use parking_lot::RwLock;

use crate::snapshot::{SNAPSHOT_FILE_NAME, Snapshot};

#[derive(Debug)]
struct State {
    map: BTreeMap<Vec<u8>, Vec<u8>>,
    closed: bool,
}

/// The `mem` engine.
#[derive(Debug)]
pub struct MemEngine {
    state: RwLock<State>,
    /// Where the snapshot lives; `None` for a purely volatile engine.
    dir: Option<PathBuf>,
    user_bytes_written: AtomicU64,
}

impl MemEngine {
    /// A volatile engine that keeps nothing after `close`.
    pub fn volatile() -> Self {
        MemEngine::with_map(BTreeMap::new(), None)
    }

    /// Opens the engine in `dir`, loading the snapshot a previous clean `close` wrote.
    pub fn open(dir: &Path) -> Result<Self> {
        let path = dir.join(SNAPSHOT_FILE_NAME);
        let map = match fs::read(&path) {
            Ok(bytes) => Snapshot::decode(&bytes).map_err(|e| e.at(&path, 0))?.entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
        };
        Ok(MemEngine::with_map(map, Some(dir.to_path_buf())))
    }

    fn with_map(map: BTreeMap<Vec<u8>, Vec<u8>>, dir: Option<PathBuf>) -> Self {
        MemEngine {
            state: RwLock::new(State { map, closed: false }),
            dir,
            user_bytes_written: AtomicU64::new(0),
        }
    }

    fn count_written(&self, key: &[u8], value: &[u8]) {
        self.user_bytes_written.fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
    }

    /// Writes the snapshot atomically: a temporary file, fsync, rename, fsync of the
    /// directory. A crash at any point leaves the previous or the new snapshot.
    fn write_snapshot(dir: &Path, map: &BTreeMap<Vec<u8>, Vec<u8>>) -> Result<()> {
        let snapshot = Snapshot { entries: map.clone() };
        let bytes = snapshot.encode();
        let tmp = dir.join(format!("{SNAPSHOT_FILE_NAME}.tmp"));
        let path = dir.join(SNAPSHOT_FILE_NAME);
        let io = |what: &str, p: &Path, e| Error::io(format!("{what} {}", p.display()), e);
        let mut file = fs::File::create(&tmp).map_err(|e| io("creating", &tmp, e))?;
        file.write_all(&bytes).map_err(|e| io("writing", &tmp, e))?;
        file.sync_all().map_err(|e| io("syncing", &tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| io("renaming to", &path, e))?;
        fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("syncing", dir, e))?;
        Ok(())
    }
}

fn check_open(state: &State) -> Result<()> {
    if state.closed { Err(Error::Closed) } else { Ok(()) }
}

impl OrderedIndex for MemEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        let state = self.state.read();
        check_open(&state)?;
        Ok(state.map.get(key).cloned())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        let mut state = self.state.write();
        check_open(&state)?;
        state.map.insert(key.to_vec(), value.to_vec());
        self.count_written(key, value);
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        let mut state = self.state.write();
        check_open(&state)?;
        let existed = state.map.remove(key).is_some();
        self.count_written(key, &[]);
        Ok(existed)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        check_key(key)?;
        for value in [expected, new].into_iter().flatten() {
            check_value(value)?;
        }
        let mut state = self.state.write();
        check_open(&state)?;
        let current = state.map.get(key);
        if current.map(Vec::as_slice) != expected {
            return Ok(CasOutcome::Mismatch { current: current.cloned() });
        }
        match new {
            Some(value) => {
                state.map.insert(key.to_vec(), value.to_vec());
                self.count_written(key, value);
            }
            None => {
                state.map.remove(key);
                self.count_written(key, &[]);
            }
        }
        Ok(CasOutcome::Swapped)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        let state = self.state.read();
        check_open(&state)?;
        if range.is_empty() {
            return Ok(Vec::new());
        }
        Ok(state
            .map
            .range::<[u8], _>(range.as_bounds())
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        let mut state = self.state.write();
        check_open(&state)?;
        for op in batch.ops() {
            match op {
                BatchOp::Put { key, value } => {
                    state.map.insert(key.clone(), value.clone());
                    self.count_written(key, value);
                }
                BatchOp::Delete { key } => {
                    state.map.remove(key);
                    self.count_written(key, &[]);
                }
            }
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let state = self.state.read();
        check_open(&state)
    }

    fn stats(&self) -> Stats {
        let state = self.state.read();
        let mut stats = Stats::new("mem");
        stats.keys = Some(state.map.len() as u64);
        stats.user_bytes_written = self.user_bytes_written.load(Ordering::Relaxed);
        stats.memory_bytes = state.map.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        stats
    }

    fn close(&self) -> Result<()> {
        let mut state = self.state.write();
        if state.closed {
            return Ok(());
        }
        if let Some(dir) = &self.dir {
            MemEngine::write_snapshot(dir, &state.map)?;
        }
        state.closed = true;
        state.map = BTreeMap::new();
        Ok(())
    }
}
