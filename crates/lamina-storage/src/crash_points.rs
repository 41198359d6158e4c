//! Exhaustive crash testing: run a workload against a fresh [`FaultyStorage`] crashing at
//! operation 1, then 2, 3, ... until the workload completes without reaching the crash, and
//! check the recovered state after each crash.
//!
//! ```
//! use lamina_storage::{FaultPlan, OpenMode, Storage, crash_points::for_each_crash_point};
//!
//! let runs = for_each_crash_point(
//!     &FaultPlan::none(),
//!     |_setup| Ok(()),
//!     |storage| {
//!         let file = storage.open("data", OpenMode::Create)?;
//!         file.write_all_at(0, b"hello")?;
//!         file.sync_data()?;
//!         storage.sync_dir()
//!     },
//!     |recovered, _crash_op| {
//!         // Either nothing survived, or all of it did.
//!         if recovered.exists("data")? {
//!             let data = recovered.read_all("data")?;
//!             assert!(data.is_empty() || data == b"hello");
//!         }
//!         Ok(())
//!     },
//! )
//! .unwrap();
//! assert_eq!(runs.crash_points, 4);
//! ```

use std::sync::Arc;

use lamina_core::Error;

use crate::backend::Storage;
use crate::fault_plan::FaultPlan;
use crate::faulty::FaultyStorage;
use crate::memory::MemoryStorage;

/// Most crash points [`for_each_crash_point`] tries before giving up (a workload that never
/// finishes would otherwise loop forever).
pub const CRASH_POINTS_MAX: u64 = 100_000;

/// What a completed [`for_each_crash_point`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashRuns {
    /// Crashes simulated during the workload (each followed by a check of the recovered
    /// state); one more, after completion, is also checked.
    pub crash_points: u64,
    /// Operations the workload takes when nothing crashes.
    pub ops_to_complete: u64,
}

/// A failure of the workload or of the check, with the crash point it happened at.
#[derive(Debug)]
pub struct CrashTestFailure {
    /// The operation the crash struck (`None`: the final run, which did not crash during the
    /// workload and crashed only after it completed).
    pub crash_op: Option<u64>,
    /// `"setup"`, `"workload"` or `"check"`.
    pub stage: &'static str,
    /// The error returned.
    pub error: Error,
}

impl std::fmt::Display for CrashTestFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.crash_op {
            Some(op) => write!(f, "crash at operation {op}: {} failed: {}", self.stage, self.error),
            None => write!(f, "uncrashed run: {} failed: {}", self.stage, self.error),
        }
    }
}

impl std::error::Error for CrashTestFailure {}

/// For k = 1, 2, ...: builds a fresh [`MemoryStorage`], runs `setup` on it (no faults, all of
/// it durable), wraps it in a [`FaultyStorage`] that crashes at operation k (with `plan`'s
/// other settings: seed, tearing), runs `workload`, then reopens what survived and runs
/// `check(recovered, k)`. Stops after the first k at which `workload` completes without
/// reaching the crash; that run is then crashed *after* completion (dropping anything it left
/// unsynced) and checked too, with `crash_op = None` in a failure.
///
/// The workload may fail only because of the crash: any other error is a failure. The
/// workload's errors after the crash are expected and ignored.
pub fn for_each_crash_point(
    plan: &FaultPlan,
    mut setup: impl FnMut(&Arc<dyn Storage>) -> lamina_core::Result<()>,
    mut workload: impl FnMut(&Arc<dyn Storage>) -> lamina_core::Result<()>,
    mut check: impl FnMut(&Arc<dyn Storage>, u64) -> lamina_core::Result<()>,
) -> Result<CrashRuns, CrashTestFailure> {
    for k in 1..=CRASH_POINTS_MAX {
        let fail = |stage, error| CrashTestFailure { crash_op: Some(k), stage, error };
        let inner: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        setup(&inner).map_err(|e| fail("setup", e))?;
        let faulty =
            FaultyStorage::new(inner, plan.clone().crash_at(k)).map_err(|e| fail("setup", e))?;
        let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
        let result = workload(&storage);
        let crashed = faulty.crashed();
        let crash_op = if crashed { Some(k) } else { None };
        if let (false, Err(error)) = (crashed, result) {
            return Err(CrashTestFailure { crash_op, stage: "workload", error });
        }
        let ops = faulty.ops();
        let recovered = faulty.reopen_after_crash().map_err(|e| fail("check", e))?;
        let recovered: Arc<dyn Storage> = Arc::new(recovered);
        check(&recovered, k).map_err(|error| CrashTestFailure {
            crash_op,
            stage: "check",
            error,
        })?;
        if !crashed {
            return Ok(CrashRuns { crash_points: k - 1, ops_to_complete: ops });
        }
    }
    Err(CrashTestFailure {
        crash_op: Some(CRASH_POINTS_MAX),
        stage: "workload",
        error: Error::Unsupported {
            what: format!("a workload of more than {CRASH_POINTS_MAX} operations"),
        },
    })
}
