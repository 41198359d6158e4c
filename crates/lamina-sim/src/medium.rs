//! Where a simulated store lives and how it crashes: the fault-injecting storage (every
//! engine but fptree) or a simulated persistent-memory region (fptree). One crash cycle arms
//! a seeded fault plan on a medium reopened over what the previous crash left.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lamina_core::{OpenIntent, Result};
use lamina_storage::pmem::{CrashPoint, PmemRegion, SimulatedOptions, SimulatedRegion};
use lamina_storage::{FailKind, FaultPlan, FaultyStorage, MemoryStorage};

use crate::engines::{Engine, EngineName, open_on_region, open_on_storage};

/// Size of fptree's simulated region: room for the key space many times over.
pub const REGION_BYTES: u64 = 512 << 10;

/// The extra fault of one cycle, besides its crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Only the crash.
    None,
    /// Storage operation `at` fails with `kind` (and every later one if `sticky`).
    Fail {
        /// Operation number (1-based, counted from the cycle's reopen).
        at: u64,
        /// EIO or ENOSPC.
        kind: FailKind,
        /// Whether the device keeps failing.
        sticky: bool,
    },
    /// A bit of what storage operation `at` writes is flipped (storage engines), or a bit of
    /// a used word of the region is flipped before recovery (fptree; `at` picks the word).
    Flip {
        /// Operation number, or the word's seed for a region.
        at: u64,
    },
}

/// The faults of one crash cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CyclePlan {
    /// Seed of the medium's own random choices (torn prefixes, surviving unsynced writes).
    pub seed: u64,
    /// The crash strikes at this storage operation or persist (1-based, from the reopen).
    pub crash_at: u64,
    /// Percent of unsynced writes that reach the medium anyway.
    pub unsynced_survival_percent: u8,
    /// The extra fault.
    pub fault: Fault,
}

/// A store's medium across its crashes.
#[derive(Debug)]
pub enum Medium {
    /// A fault-injecting storage over memory (`None` before the first cycle).
    Files(Option<FaultyStorage>),
    /// A simulated persistent-memory region (`None` before the first cycle).
    Region(Option<Arc<SimulatedRegion>>),
}

impl Medium {
    /// A new, empty medium for `engine`.
    pub fn new(engine: EngineName) -> Medium {
        if engine.on_storage() { Medium::Files(None) } else { Medium::Region(None) }
    }

    /// Crashes what is running (if not yet crashed) and arms `plan` on what survived.
    pub fn begin_cycle(&mut self, plan: &CyclePlan) -> Result<()> {
        match self {
            Medium::Files(storage) => {
                let mut faults = FaultPlan::none()
                    .with_seed(plan.seed)
                    .crash_at(plan.crash_at)
                    .unsynced_survival(plan.unsynced_survival_percent);
                match plan.fault {
                    Fault::None => {}
                    Fault::Fail { at, kind, sticky } => faults = faults.fail_at(at, kind, sticky),
                    Fault::Flip { at } => faults = faults.flip_bit_at(at),
                }
                let next = match storage.take() {
                    None => {
                        let fresh = FaultyStorage::new(Arc::new(MemoryStorage::new()), faults)?;
                        // Background work in lockstep with the driver's calls: a seed
                        // replays exactly (kept across crashes).
                        fresh.set_lockstep(true);
                        fresh
                    }
                    Some(old) => old.reopen_after_crash_with(faults)?,
                };
                if crate::driver::trace_ops() {
                    next.trace_ops();
                }
                *storage = Some(next);
            }
            Medium::Region(region) => {
                let next = match region.take() {
                    None => SimulatedRegion::new(REGION_BYTES, SimulatedOptions::default())?,
                    Some(old) => old.crash(),
                };
                if let Fault::Flip { at } = plan.fault {
                    flip_used_bit(&next, at)?;
                }
                let tear_seed = plan.seed.is_multiple_of(2).then_some(plan.seed);
                let persist_no = next.persist_count() + plan.crash_at;
                next.set_crash_point(Some(CrashPoint { persist_no, tear_seed }));
                *region = Some(Arc::new(next));
            }
        }
        Ok(())
    }

    /// Opens `engine` on the medium; `fresh`: the store is new (fptree formats its region).
    pub fn open(&self, engine: EngineName, fresh: bool) -> Result<Engine> {
        match self {
            Medium::Files(storage) => {
                let storage = storage.clone().expect("a cycle began");
                open_on_storage(engine, Arc::new(storage))
            }
            Medium::Region(region) => {
                let intent =
                    if fresh { OpenIntent::CreateIfMissing } else { OpenIntent::MustExist };
                open_on_region(region.clone().expect("a cycle began"), intent)
            }
        }
    }

    /// Whether the cycle's crash has struck.
    pub fn crashed(&self) -> bool {
        match self {
            Medium::Files(storage) => storage.as_ref().is_some_and(FaultyStorage::crashed),
            Medium::Region(region) => region.as_ref().is_some_and(|r| r.crash_point_reached()),
        }
    }

    /// Whether an operation acknowledged after the crash struck was acknowledged by a
    /// durable write: true for storage (every later storage call fails, so a write that
    /// returns `Ok` synced before the crash); false for a region, where the code keeps
    /// running on the volatile image past the crash point.
    pub fn acks_after_crash_count(&self) -> bool {
        matches!(self, Medium::Files(_))
    }

    /// Crashes now if the planned crash has not struck (the cycle's workload ended first).
    pub fn crash(&self) -> Result<()> {
        match self {
            Medium::Files(Some(storage)) => storage.crash(),
            Medium::Region(Some(region)) if !region.crash_point_reached() => {
                region.set_crash_point(Some(CrashPoint {
                    persist_no: region.persist_count() + 1,
                    tear_seed: None,
                }));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Operations (storage) or persists (region) since the cycle began.
    pub fn ops(&self) -> u64 {
        match self {
            Medium::Files(storage) => storage.as_ref().map_or(0, FaultyStorage::ops),
            Medium::Region(region) => region.as_ref().map_or(0, |r| r.persist_count()),
        }
    }

    /// A digest of the cycle's storage operations so far, in order (a region: its persists'
    /// count).
    pub fn ops_digest(&self) -> u64 {
        match self {
            Medium::Files(storage) => storage.as_ref().map_or(0, FaultyStorage::ops_digest),
            Medium::Region(region) => region.as_ref().map_or(0, |r| r.persist_count()),
        }
    }

    /// The cycle's storage operations, if `LAMINA_SIM_TRACE_OPS` asked for them.
    pub fn take_ops_trace(&self) -> Option<Vec<String>> {
        match self {
            Medium::Files(Some(storage)) if crate::driver::trace_ops() => {
                Some(storage.take_ops_trace())
            }
            _ => None,
        }
    }

    /// The full device got space back (the plan's failures end).
    pub fn stop_failing(&self) {
        if let Medium::Files(Some(storage)) = self {
            storage.stop_failing();
        }
    }
}

/// Flips a seeded bit of a seeded non-zero word of `region`, durably: media corruption of
/// something the store wrote.
fn flip_used_bit(region: &SimulatedRegion, seed: u64) -> Result<()> {
    let used: Vec<usize> = region
        .words()
        .iter()
        .enumerate()
        .filter(|(_, w)| w.load(Ordering::Relaxed) != 0)
        .map(|(i, _)| i)
        .collect();
    if used.is_empty() {
        return Ok(());
    }
    let word = used[(seed % used.len() as u64) as usize];
    let offset = word as u64 * 8;
    let bit = (seed >> 32) % 64;
    region.store_u64(offset, region.load_u64(offset)? ^ (1 << bit))?;
    region.persist(offset, 8)
}
