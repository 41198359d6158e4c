//! FD+FC, FD+tree with full concurrency (paper section 4).
//!
//! - `state.rs`: the data structure during a merge (section 4.1, Figure 5: `L_0^new`,
//!   `L_0^old` with the wavefront fence, new and old upper levels, below-merge levels) and
//!   merge-prepare with preemptive level skipping (section 4.4.1).
//! - `run.rs`: merge-execute's main loop, m-stage / m-insert / m-delete with block-wise data
//!   movement and block reclamation (section 4.4.2, Remark A.5), and its end (the chain of
//!   last old blocks reclaimed with latch coupling).
//! - `progress.rs`, `commit.rs`, `recover.rs`: crash recovery as in Remark A.6: the merge
//!   start is committed (`L_0^old` snapshot, start of `L_0^new` in the log), then progress
//!   records at stage boundaries; an old block's space is freed only after a record that
//!   covers its entries is committed, and recovery resumes the merge from the last record.
//! - `finalize.rs`: merge-finalize (section 4.4.3: `o_i = 0` only within `kappa_1`, `L_z`'s
//!   content added to `L_0` after its fences are removed, `L_1..L_z` deleted top-down).
//!
//! Lookups (`lookup.rs`) and the latches (`latch.rs`) are shared with the other modes.
//!
//! Locks and why they cannot deadlock (section 4.5). Order: stage gate, then the tree lock
//! (the paper's `L_0` mutex), then block latches top-down.
//! - A lookup takes the tree lock, then the shared latch of the first block, releases the
//!   tree lock, and descends with coupling (holds one latch while taking the next one
//!   below). It only ever waits downward.
//! - m-insert writes new levels bottom-up but holds at most one latch at a time: it takes a
//!   block's exclusive latch, appends, releases it, and only then writes the level above; a
//!   new block needs no latch (no fence points to it yet). Fences for `L_0^new` are published
//!   under the tree lock at m-delete, never while a latch is held. So m-insert never holds a
//!   latch a lookup needs while waiting for one the lookup holds.
//! - m-delete changes `L_0^old` and the wavefront under the tree lock, releases it, then
//!   reclaims old head blocks one at a time (exclusive latch, no coupling: there is a single
//!   writer of the disk levels, the merge, so early release cannot deadlock two writers).
//! - The end of merge-execute and merge-finalize delete old chains and skipped levels
//!   top-down, taking the next level's exclusive latch before releasing the current one:
//!   the same direction as lookups.
//! - Modifications take only the tree lock (exclusive, short) and the latches of a lookup.
//! - Scans (not in the paper) take the stage gate shared: the merge holds it exclusively
//!   for each stage, so a scan sees the tree between stages (wavefront fixed) and blocks
//!   are never reclaimed under it; a scan delays the merge by at most its own length.

mod commit;
mod finalize;
pub mod progress;
mod recover;
mod run;
mod state;
mod verify;

pub use progress::{MergeProgress, NewLevelProgress};
pub(crate) use run::{FcHooks, run_fc_merge};
pub(crate) use state::{FcPending, FcState};
