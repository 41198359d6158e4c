//! Deterministic crash simulation of every lamina engine (issue 20).
//!
//! A seed is one store life: [`driver::CYCLES_PER_SEED`] crash cycles over the
//! fault-injecting storage ([`lamina_storage::FaultyStorage`]; fptree: a simulated
//! persistent-memory region). Each cycle arms a seeded fault plan: a crash at a random
//! storage operation (or persist) with the crashing write torn, a random share of unsynced
//! writes surviving, and now and then an injected EIO or ENOSPC (sticky or not) or a bit
//! flip. The engine is reopened over what survived, every key of the model is checked with
//! `get` and a full scan, the engine's `verify` runs, and the workload (puts, deletes,
//! compare-and-swaps, batches, reads, scans, checkpoints) continues until the crash. With
//! `Durability::Sync` every acknowledged write must survive; the operation in flight may go
//! either way (a batch all or nothing); an injected EIO or flip may give a clear
//! `Io`/`Corruption` error, never a panic, a hang or a value nobody wrote. Everything is
//! seeded, so a failing seed replays exactly (`scripts/simulate ENGINE 20 SEED`): the
//! storage asks its users for lockstep ([`lamina_storage::Storage::lockstep`]), so the log's
//! flusher and fdtree's flush and merge threads do their storage operations in an order the
//! driver's calls fix, not the scheduler; [`driver::Tally::ops_digest`] digests them all, and
//! `LAMINA_SIM_TRACE_OPS=1` prints each one with its thread (to find where two runs part).

pub mod driver;
pub mod engines;
pub mod medium;
pub mod model;
pub mod run;
pub mod value;
pub mod workload;

pub use driver::{CYCLES_PER_SEED, Failure, Tally, run_seed};
pub use engines::EngineName;
pub use run::{Outcome, run_seeds};
