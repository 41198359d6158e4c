//! The conformance kit against the `mem` engine, volatile and with a snapshot directory.

use lamina_core::Result;
use lamina_core::testkit::Subject;
use lamina_mem::MemEngine;

/// A `mem` engine persisted by snapshot in a temporary directory.
struct SnapshotSubject {
    dir: tempfile::TempDir,
}

impl Subject for SnapshotSubject {
    type Index = MemEngine;

    fn open(&mut self) -> Result<MemEngine> {
        MemEngine::open(self.dir.path())
    }

    fn durable(&self) -> bool {
        true
    }
}

lamina_core::conformance_tests!(super::SnapshotSubject { dir: tempfile::tempdir().unwrap() });

mod volatile {
    use lamina_core::Result;
    use lamina_core::testkit::Subject;
    use lamina_mem::MemEngine;

    struct VolatileSubject;

    impl Subject for VolatileSubject {
        type Index = MemEngine;

        fn open(&mut self) -> Result<MemEngine> {
            Ok(MemEngine::volatile())
        }

        fn durable(&self) -> bool {
            false
        }
    }

    lamina_core::conformance_tests!(super::VolatileSubject);
}
