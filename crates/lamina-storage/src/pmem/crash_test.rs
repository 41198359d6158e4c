//! Exhaustive crash testing of persistent-memory code: run a workload on a copy of a prepared
//! [`SimulatedRegion`] with a crash at persist 1, then 2, 3, ... (each with every requested
//! tearing mode) until the workload completes without reaching the crash point, and check the
//! recovered image after each crash. The counterpart of [`crate::crash_points`] for files.
//!
//! ```
//! use std::sync::Arc;
//! use lamina_storage::pmem::{PmemRegion, crash_test::for_each_persist_point};
//!
//! let runs = for_each_persist_point(
//!     4096,
//!     &[None, Some(7)],
//!     |_setup| Ok(()),
//!     |region| {
//!         region.write_persist(0, &[1u8; 16])?; // payload first ...
//!         region.store_u64(64, 1)?; // ... then a p-atomic flag saying it is complete
//!         region.persist(64, 8)
//!     },
//!     |recovered, _point| {
//!         if recovered.load_u64(64)? == 1 {
//!             let mut payload = [0u8; 16];
//!             recovered.read(0, &mut payload)?;
//!             assert_eq!(payload, [1u8; 16], "flag set only after the payload is durable");
//!         }
//!         Ok(())
//!     },
//! )
//! .unwrap();
//! assert_eq!(runs.ops_to_complete, 2);
//! ```

use std::sync::Arc;

use lamina_core::{Error, Result};

use super::simulated::{CrashPoint, SimulatedOptions, SimulatedRegion};
use crate::crash_points::{CrashRuns, CrashTestFailure};

/// Most persist points tried before giving up on a workload that never completes.
pub const PERSIST_POINTS_MAX: u64 = 100_000;

/// Tries every crash point of `workload`:
/// 1. `setup` runs on a fresh zeroed region of `len_bytes` with no crash; only what it
///    persisted is kept (the base image).
/// 2. For k = 1, 2, ... and each mode in `tears` (`None`: persist k is lost; `Some(seed)`:
///    it is torn, seeded): `workload` runs on a copy of the base image crashing at persist k,
///    then `check(recovered, point)` runs on the durable image. The workload keeps running
///    after the crash point (the volatile image is intact), so it must not fail.
/// 3. The first k the workload does not reach ends the loop; that run is crashed after it
///    completes and checked too (reported with `crash_op = None`).
///
/// The workload must be deterministic: the same persists in the same order on every run.
/// Returns the crash points tried and the persists the workload makes (`ops_to_complete`).
pub fn for_each_persist_point(
    len_bytes: u64,
    tears: &[Option<u64>],
    setup: impl FnOnce(&Arc<SimulatedRegion>) -> Result<()>,
    mut workload: impl FnMut(&Arc<SimulatedRegion>) -> Result<()>,
    mut check: impl FnMut(SimulatedRegion, CrashPoint) -> Result<()>,
) -> Result<CrashRuns, CrashTestFailure> {
    let fail = |crash_op, stage, error| CrashTestFailure { crash_op, stage, error };
    let fresh = SimulatedRegion::new(len_bytes, SimulatedOptions::default())
        .map_err(|e| fail(None, "setup", e))?;
    let fresh = Arc::new(fresh);
    setup(&fresh).map_err(|e| fail(None, "setup", e))?;
    let base = fresh.crash();
    let tears = if tears.is_empty() { &[None][..] } else { tears };
    for k in 1..=PERSIST_POINTS_MAX {
        for &tear_seed in tears {
            let point = CrashPoint { persist_no: k, tear_seed };
            let region = Arc::new(base.crash());
            region.set_crash_point(Some(point));
            let result = workload(&region);
            let crashed = region.crash_point_reached();
            let crash_op = crashed.then_some(k);
            result.map_err(|e| fail(crash_op, "workload", e))?;
            check(region.crash(), point).map_err(|e| fail(crash_op, "check", e))?;
            if !crashed {
                return Ok(CrashRuns {
                    crash_points: k - 1,
                    ops_to_complete: region.persist_count(),
                });
            }
        }
    }
    Err(fail(
        Some(PERSIST_POINTS_MAX),
        "workload",
        Error::Unsupported {
            what: format!("a workload of more than {PERSIST_POINTS_MAX} persists"),
        },
    ))
}
