//! The conformance kit against the `fdtree` engine, per concurrency mode (FD+XM, FD+DS, FD+FC):
//! volatile, and persistent across close/open through the manifest. A one-block `L_0` makes
//! the kit's workloads merge often.

use lamina_fdtree::{FcMode, FdTreeOptions};

fn options(mode: FcMode) -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 32 << 10,
        block_bytes: 32 << 10,
        size_ratio: 4,
        verify_each_merge: true,
        mode,
        ..FdTreeOptions::default()
    }
}

macro_rules! per_mode {
    ($name:ident, $mode:expr) => {
        mod $name {
            use std::sync::Arc;

            use lamina_core::Result;
            use lamina_core::testkit::Subject;
            use lamina_fdtree::FdTree;
            use lamina_storage::MemoryStorage;

            pub struct Persistent {
                pub storage: Arc<MemoryStorage>,
            }

            impl Subject for Persistent {
                type Index = FdTree;

                fn open(&mut self) -> Result<FdTree> {
                    FdTree::open(self.storage.clone(), &super::options($mode))
                }

                fn durable(&self) -> bool {
                    true
                }
            }

            mod persistent {
                lamina_core::conformance_tests!(super::super::Persistent {
                    storage: std::sync::Arc::new(lamina_storage::MemoryStorage::new())
                });
            }

            pub struct Volatile;

            impl Subject for Volatile {
                type Index = FdTree;

                fn open(&mut self) -> Result<FdTree> {
                    FdTree::volatile(&super::options($mode))
                }

                fn durable(&self) -> bool {
                    false
                }
            }

            mod volatile {
                lamina_core::conformance_tests!(super::super::Volatile);
            }
        }
    };
}

per_mode!(xm, lamina_fdtree::FcMode::Xm);
per_mode!(ds, lamina_fdtree::FcMode::Ds);
per_mode!(fc, lamina_fdtree::FcMode::Fc);
