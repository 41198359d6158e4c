//! The conformance kit against the `fptree` engine: volatile (a fresh simulated region per
//! open), durable over a simulated region (each reopen reads only the durable image), crashing
//! (the durable image at an arbitrary instant), and durable over a region file, in both leaf
//! configurations.

use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::testkit::Subject;
use lamina_core::{Durability, OpenIntent, Result};
use lamina_fptree::{FpTreeConfig, FpTreeEngine, FpTreeEngineOptions};
use lamina_storage::pmem::{MmapRegion, SimulatedOptions, SimulatedRegion};

// 16 MiB: the kit writes a batch of 700 values of 4 KiB (one blob each).
const REGION_BYTES: u64 = 16 << 20;

fn fresh() -> Arc<SimulatedRegion> {
    Arc::new(SimulatedRegion::new(REGION_BYTES, SimulatedOptions::default()).unwrap())
}

macro_rules! per_config {
    ($name:ident, $config:expr) => {
        mod $name {
            use super::*;

            pub struct Volatile;

            impl Subject for Volatile {
                type Index = FpTreeEngine<SimulatedRegion>;
                fn open(&mut self) -> Result<Self::Index> {
                    FpTreeEngine::open_region(fresh(), $config, OpenIntent::CreateIfMissing)
                }
                fn durable(&self) -> bool {
                    false
                }
            }

            /// Reopens from the durable image only, so a write that returned without being
            /// persisted would be lost.
            pub struct Durable {
                pub region: Option<Arc<SimulatedRegion>>,
            }

            impl Subject for Durable {
                type Index = FpTreeEngine<SimulatedRegion>;
                fn open(&mut self) -> Result<Self::Index> {
                    let region = match &self.region {
                        Some(region) => Arc::new(region.crash()),
                        None => fresh(),
                    };
                    self.region = Some(region.clone());
                    FpTreeEngine::open_region(region, $config, OpenIntent::CreateIfMissing)
                }
                fn durable(&self) -> bool {
                    true
                }
                fn can_crash(&self) -> bool {
                    true
                }
                fn crash(&mut self, index: Self::Index) {
                    drop(index); // abandoned; the next open reads the durable image
                }
            }

            lamina_core::conformance_tests!(Durable { region: None });

            mod volatile {
                use super::*;
                lamina_core::conformance_tests!(Volatile);
            }
        }
    };
}

per_config!(per_leaf, FpTreeConfig::default());
per_config!(
    leaf_groups,
    FpTreeConfig { leaf_groups: true, group_leaves: 4, ..FpTreeConfig::default() }
);

mod file {
    use super::*;

    pub struct File {
        dir: tempfile::TempDir,
    }

    impl File {
        fn path(&self) -> PathBuf {
            self.dir.path().join("fptree.pmem")
        }
    }

    impl Subject for File {
        type Index = FpTreeEngine<MmapRegion>;
        fn open(&mut self) -> Result<Self::Index> {
            let options = FpTreeEngineOptions {
                region_bytes: REGION_BYTES,
                durability: Durability::None,
                ..FpTreeEngineOptions::default()
            };
            FpTreeEngine::open_file(&self.path(), &options)
        }
        fn durable(&self) -> bool {
            true
        }
    }

    lamina_core::conformance_tests!(File { dir: tempfile::tempdir().unwrap() });
}
