//! The conformance kit against the `latree` and `latree-btree` engines: volatile, persistent
//! over memory storage (close/reopen), and persistent over the fault-injecting backend
//! (simulated crashes). Small memory and a small `U` make the kit's workloads empty buffers,
//! split and merge nodes constantly; small `checkpoint_log_bytes` makes them checkpoint and
//! truncate the log often, and every checkpoint verifies the tree. `latree_reclaiming` runs
//! the kit on raw NAND (nodes out of place) with the smallest partition floor, so section
//! 4.3's reclamation runs whenever garbage exceeds live data, crashes included.

use std::sync::Arc;

use lamina_core::testkit::Subject;
use lamina_core::{Durability, Result};
use lamina_latree::engine::CHECKPOINT_LOG_BYTES_MIN;
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{DeviceProfile, FaultyStorage, Storage};

/// `buffered`: 0 the B+tree baseline, 1 the LA-tree, 2 the LA-tree on NAND reclaiming often.
fn options(buffered: u8, durability: Durability) -> LaTreeEngineOptions {
    let device =
        if buffered == 2 { DeviceProfile::nand_toshiba() } else { DeviceProfile::ssd_msp7525() };
    let mut options = LaTreeEngineOptions::for_device(device);
    options.tree.buffered = buffered > 0;
    if buffered == 2 {
        options.tree.partition_bytes = lamina_latree::tree::PARTITION_BYTES_MIN;
    }
    options.tree.buffer_entries_max = 64;
    options.tree.memory_bytes = 1 << 20;
    options.durability = durability;
    options.checkpoint_log_bytes = CHECKPOINT_LOG_BYTES_MIN * 16;
    options.verify_each_checkpoint = true;
    options
}

macro_rules! per_engine {
    ($name:ident, $buffered:expr) => {
        mod $name {
            use super::*;

            pub struct Volatile;

            impl Subject for Volatile {
                type Index = LaTreeEngine;
                fn open(&mut self) -> Result<LaTreeEngine> {
                    LaTreeEngine::volatile(&options($buffered, Durability::None))
                }
                fn durable(&self) -> bool {
                    false
                }
            }

            pub struct Durable {
                pub storage: Arc<dyn Storage>,
            }

            impl Subject for Durable {
                type Index = LaTreeEngine;
                fn open(&mut self) -> Result<LaTreeEngine> {
                    LaTreeEngine::open(self.storage.clone(), &options($buffered, Durability::None))
                }
                fn durable(&self) -> bool {
                    true
                }
            }

            pub struct Crashing {
                pub storage: FaultyStorage,
            }

            impl Subject for Crashing {
                type Index = LaTreeEngine;
                fn open(&mut self) -> Result<LaTreeEngine> {
                    let storage = Arc::new(self.storage.clone());
                    LaTreeEngine::open(storage, &options($buffered, Durability::Sync))
                }
                fn durable(&self) -> bool {
                    true
                }
                fn can_crash(&self) -> bool {
                    true
                }
                fn crash(&mut self, index: LaTreeEngine) {
                    self.storage.crash().unwrap();
                    index.crash();
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
                    storage: lamina_storage::FaultyStorage::in_memory(
                        lamina_storage::FaultPlan::none()
                    ),
                });
            }
        }
    };
}

per_engine!(latree, 1);
per_engine!(latree_btree, 0);
per_engine!(latree_reclaiming, 2);
