//! The conformance kit against the `nbtree` engine: volatile, durable over memory storage
//! (close/reopen), and durable over the fault-injecting backend (simulated crashes), each
//! with both deamortization modes. The smallest sigma and small pages make the kit's
//! workloads flush, split leaves and grow the s-tree constantly; every flush step verifies
//! the tree.

use std::sync::Arc;

use lamina_core::testkit::Subject;
use lamina_core::{Durability, Result};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};
use lamina_storage::{FaultyStorage, Storage};

fn options(durability: Durability, deamortization: Deamortization) -> NbTreeOptions {
    NbTreeOptions {
        sigma_bytes: SIGMA_BYTES_MIN,
        page_bytes: 512,
        durability,
        deamortization,
        verify_each_flush: true,
        ..NbTreeOptions::default()
    }
}

macro_rules! per_mode {
    ($name:ident, $mode:expr) => {
        mod $name {
            use super::*;

            pub struct Volatile;

            impl Subject for Volatile {
                type Index = NbTree;
                fn open(&mut self) -> Result<NbTree> {
                    NbTree::volatile(&options(Durability::None, $mode))
                }
                fn durable(&self) -> bool {
                    false
                }
            }

            pub struct Durable {
                pub storage: Arc<dyn Storage>,
            }

            impl Subject for Durable {
                type Index = NbTree;
                fn open(&mut self) -> Result<NbTree> {
                    NbTree::open(self.storage.clone(), &options(Durability::None, $mode))
                }
                fn durable(&self) -> bool {
                    true
                }
            }

            pub struct Crashing {
                pub storage: FaultyStorage,
            }

            impl Subject for Crashing {
                type Index = NbTree;
                fn open(&mut self) -> Result<NbTree> {
                    NbTree::open(Arc::new(self.storage.clone()), &options(Durability::Sync, $mode))
                }
                fn durable(&self) -> bool {
                    true
                }
                fn can_crash(&self) -> bool {
                    true
                }
                fn crash(&mut self, index: NbTree) {
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

per_mode!(background, Deamortization::Background);
per_mode!(foreground, Deamortization::Foreground);
