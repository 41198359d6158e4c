//! The conformance kit against the durable `trie` engine: the cyclic log in a faulty
//! in-memory storage (close/reopen and simulated power failures, under `Durability::Sync`),
//! and in real files (close/reopen).

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::sync::Arc;

use lamina_core::testkit::Subject;
use lamina_core::{Durability, Result};
use lamina_storage::log::options::BUFFER_BYTES_MIN;
use lamina_storage::{FaultPlan, FaultyStorage, FileOptions, FileStorage, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

/// Small log buffers and a 4 MiB disk budget, so garbage collection runs in the tests.
fn small_options() -> TrieOptions {
    TrieOptions::default().log_buffer_bytes(BUFFER_BYTES_MIN).disk_budget_bytes(4 << 20)
}

/// A durable trie over a faulty in-memory storage that can simulate a crash.
#[derive(Debug)]
struct CrashSubject {
    storage: Arc<FaultyStorage>,
}

impl CrashSubject {
    fn new() -> Self {
        CrashSubject { storage: Arc::new(FaultyStorage::in_memory(FaultPlan::none())) }
    }
}

impl Subject for CrashSubject {
    type Index = TrieEngine;

    fn open(&mut self) -> Result<TrieEngine> {
        TrieEngine::open(Arc::clone(&self.storage) as Arc<dyn Storage>, small_options())
    }

    fn durable(&self) -> bool {
        true
    }

    fn can_crash(&self) -> bool {
        true
    }

    fn crash(&mut self, index: TrieEngine) {
        self.storage.crash().expect("simulated crash");
        index.abandon();
        drop(index);
        self.storage = Arc::new(self.storage.reopen_after_crash().expect("reopen after crash"));
    }
}

lamina_core::conformance_tests!(super::CrashSubject::new());

mod files {
    use super::*;

    /// A durable trie in a temporary directory of real files. `Durability::None` (writes
    /// survive a clean close, which is all this subject tests): a real `fdatasync` per
    /// acknowledged write would make the kit take half a minute.
    #[derive(Debug)]
    pub struct FileSubject {
        dir: tempfile::TempDir,
    }

    impl Subject for FileSubject {
        type Index = TrieEngine;

        fn open(&mut self) -> Result<TrieEngine> {
            let storage = FileStorage::open_dir(self.dir.path(), FileOptions::default())?;
            TrieEngine::open(Arc::new(storage), small_options().durability(Durability::None))
        }

        fn durable(&self) -> bool {
            true
        }
    }

    lamina_core::conformance_tests!(super::FileSubject { dir: tempfile::tempdir().unwrap() });
}
