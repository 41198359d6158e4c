//! The conformance kit through the facade, for every engine kind.

use lamina::{Db, Durability, EngineKind, Options, Result};
use lamina_core::testkit::Subject;

struct DbSubject {
    dir: tempfile::TempDir,
    kind: EngineKind,
}

impl Subject for DbSubject {
    type Index = Db;

    fn open(&mut self) -> Result<Db> {
        Db::open(
            self.dir.path(),
            Options { engine: self.kind, durability: Durability::None, ..Options::default() },
        )
    }

    fn durable(&self) -> bool {
        true
    }
}

lamina_core::conformance_tests!(super::DbSubject {
    dir: tempfile::tempdir().unwrap(),
    kind: EngineKind::Mem
});
