//! The conformance kit against the `fdtree` engine (FD+XM): volatile, and persistent across
//! close/open through the manifest. A one-block `L_0` makes the kit's workloads merge often.

use std::sync::Arc;

use lamina_core::Result;
use lamina_core::testkit::Subject;
use lamina_fdtree::{FdTree, FdTreeOptions};
use lamina_storage::MemoryStorage;

fn options() -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 32 << 10,
        block_bytes: 32 << 10,
        size_ratio: 4,
        verify_each_merge: true,
        ..FdTreeOptions::default()
    }
}

struct Persistent {
    storage: Arc<MemoryStorage>,
}

impl Subject for Persistent {
    type Index = FdTree;

    fn open(&mut self) -> Result<FdTree> {
        FdTree::open(self.storage.clone(), &options())
    }

    fn durable(&self) -> bool {
        true
    }
}

lamina_core::conformance_tests!(super::Persistent { storage: Arc::new(MemoryStorage::new()) });

mod volatile {
    use lamina_core::Result;
    use lamina_core::testkit::Subject;
    use lamina_fdtree::FdTree;

    struct Volatile;

    impl Subject for Volatile {
        type Index = FdTree;

        fn open(&mut self) -> Result<FdTree> {
            FdTree::volatile(&super::options())
        }

        fn durable(&self) -> bool {
            false
        }
    }

    lamina_core::conformance_tests!(super::Volatile);
}
