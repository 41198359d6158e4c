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

/// The NB-tree. Until its persistent engine lands, `lamina-nbtree` holds a placeholder that
/// keeps nothing across a close and counts no I/O, so the kit's cases are listed here one
/// by one and those it cannot pass yet are ignored. When the engine lands: replace this module by the one-line
/// `conformance_tests!` invocation the other engines use (which also picks up cases added
/// to the kit later).
mod nbtree {
    mod conformance {
        use lamina_core::testkit as kit;

        fn make() -> super::super::DbSubject {
            super::super::DbSubject {
                dir: tempfile::tempdir().unwrap(),
                kind: lamina::EngineKind::Nbtree,
            }
        }

        lamina_core::conformance_tests!(@cases make;
            basic_put_get_overwrite_delete,
            edge_case_keys_and_values,
            prefix_keys_are_distinct,
            refused_input_changes_nothing,
            closed_handle_refuses_calls,
            scan_bounds_and_limits,
            scan_across_overwrites_and_deletes,
            scan_limit_zero_and_over_max,
            cas_semantics,
            cas_concurrent_increment,
            batch_applies_in_order,
            batch_is_all_or_nothing_on_bad_input,
            batch_is_atomic_to_readers,
            concurrent_disjoint_writers,
            concurrent_shared_key_writers,
            scan_during_writes_keeps_its_guarantee,
            crash_keeps_acknowledged_writes,
        );

        #[test]
        #[ignore = "nbtree placeholder: its stats count no user bytes"]
        fn stats_name_the_engine() {
            kit::stats_name_the_engine(&make);
        }

        #[test]
        #[ignore = "nbtree placeholder: persistence lands with the engine (the programs reopen)"]
        fn model_random_sequences() {
            kit::model_random_sequences(&make);
        }

        #[test]
        #[ignore = "nbtree placeholder: persistence lands with the engine"]
        fn reopen_keeps_everything() {
            kit::reopen_keeps_everything(&make);
        }

        #[test]
        #[ignore = "nbtree placeholder: persistence lands with the engine"]
        fn reopen_after_many_overwrites() {
            kit::reopen_after_many_overwrites(&make);
        }
    }
}
