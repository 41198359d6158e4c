//! The conformance kit through the facade, for every engine kind. (Each engine crate runs
//! it too, with `Durability::Sync` and simulated crashes; here it checks the dispatch.)

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

mod mem {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Mem
    });
}

mod fdtree_fc {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Fdtree(lamina::FcMode::Fc)
    });
}

mod fdtree_xm {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Fdtree(lamina::FcMode::Xm)
    });
}

mod fdtree_ds {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Fdtree(lamina::FcMode::Ds)
    });
}

mod trie {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Trie
    });
}

mod nbtree {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Nbtree
    });
}

mod latree {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Latree
    });
}

mod latree_btree {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::LatreeBtree
    });
}

mod fptree {
    lamina_core::conformance_tests!(super::super::DbSubject {
        dir: tempfile::tempdir().unwrap(),
        kind: lamina::EngineKind::Fptree
    });
}
