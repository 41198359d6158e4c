//! The conformance kit against the `mem` engine: volatile, durable over memory storage
//! (close/reopen), and durable over the fault-injecting backend (simulated crashes).

use std::sync::Arc;

use lamina_core::testkit::Subject;
use lamina_core::{Durability, Result};
use lamina_mem::{MemEngine, MemOptions};
use lamina_storage::{FaultyStorage, Storage};

/// Small log segments so that tests exercise ring wrap-around, growth and garbage
/// collection.
fn small_log(durability: Durability) -> MemOptions {
    MemOptions {
        durability,
        log_segment_bytes: Some(1 << 20),
        log_buffer_bytes: 16 << 10,
        ..MemOptions::default()
    }
}

struct Volatile;

impl Subject for Volatile {
    type Index = MemEngine;
    fn open(&mut self) -> Result<MemEngine> {
        Ok(MemEngine::volatile())
    }
    fn durable(&self) -> bool {
        false
    }
}

struct Durable {
    storage: Arc<dyn Storage>,
}

impl Subject for Durable {
    type Index = MemEngine;
    fn open(&mut self) -> Result<MemEngine> {
        MemEngine::open(self.storage.clone(), &small_log(Durability::None))
    }
    fn durable(&self) -> bool {
        true
    }
}

struct Crashing {
    storage: FaultyStorage,
}

impl Subject for Crashing {
    type Index = MemEngine;
    fn open(&mut self) -> Result<MemEngine> {
        MemEngine::open(Arc::new(self.storage.clone()), &small_log(Durability::Sync))
    }
    fn durable(&self) -> bool {
        true
    }
    fn can_crash(&self) -> bool {
        true
    }
    fn crash(&mut self, index: MemEngine) {
        self.storage.crash().unwrap();
        drop(index);
        self.storage = self.storage.reopen_after_crash().unwrap();
    }
}

mod volatile {
    lamina_core::conformance_tests!(super::super::Volatile);
}

mod durable {
    lamina_core::conformance_tests!(super::super::Durable {
        storage: std::sync::Arc::new(lamina_storage::MemoryStorage::new())
    });
}

mod crashing {
    lamina_core::conformance_tests!(super::super::Crashing {
        storage: lamina_storage::FaultyStorage::in_memory(lamina_storage::FaultPlan::none())
    });
}
