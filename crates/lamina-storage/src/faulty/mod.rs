//! The `faulty` backend: wraps another [`Storage`](crate::Storage) and injects crashes, torn writes, bit flips
//! and I/O errors under a seeded [`FaultPlan`](crate::FaultPlan). The tool every engine's crash tests use.
//!
//! # Crash model (what survives a simulated crash)
//!
//! A crash is the power failing between two operations. After it:
//! - **File contents** are exactly as of each file's last successful `sync_data`: every write
//!   and `set_len` made to that file since then is undone (a file never synced since it was
//!   opened by this storage keeps the contents it had when this storage was created or, if
//!   created since, is empty). Syncing one file makes nothing of another file durable.
//!   With [`FaultPlan::unsynced_survival_percent`](crate::FaultPlan::unsynced_survival_percent) > 0, each unsynced write or `set_len`
//!   independently escapes the undo with that chance (newest first; undoing an older
//!   overlapping operation still restores its older bytes, so every byte ends up holding a
//!   value it held at some point since the last sync).
//! - **Names** are exactly as of the last successful `sync_dir`: files created since then are
//!   gone, files removed since then are back (with their durable contents), renames since
//!   then are reverted, including the file a rename replaced. `sync_data` does not make a new
//!   file's name durable.
//! - **A torn write**: if the crash strikes a write and [`FaultPlan::tear_crashing_write`](crate::FaultPlan::tear_crashing_write) is
//!   set, a seeded prefix of that write's 512-byte sectors (possibly none, never all) reaches
//!   the medium and survives even though it was never synced. Data undo happens first, so the
//!   torn prefix lands on the durable contents; the gap between the durable end of the file
//!   and the prefix, if any, reads as zeros. Single-sector writes are atomic.
//! - **Hole punches** are durable the moment they return, on every crash path: the punched
//!   range reads as zeros after a crash even if older unsynced writes to it are undone (their
//!   saved bytes in the range are zeroed) and even if nothing was synced since. This is the
//!   worst case a real filesystem allows (a punch's metadata may reach the medium before the
//!   engine's next sync), so an engine must punch a block only once nothing durable still
//!   needs it (FD+FC Remark A.5/A.6). The punch covers the part of the range below the
//!   file's current length; bytes past it (e.g. of an unsynced truncation) are not touched.
//!   A crash striking the punch itself happens before it, like for every other operation.
//! - **Bit flips** ([`FaultPlan::flip_bit_at_op`](crate::FaultPlan::flip_bit_at_op), [`FaultyStorage::flip_bit`]) change stored
//!   bytes; a flip in synced data survives crashes.
//!
//! Operations counted (numbered from 1, in the order they take the storage's lock, one at a
//! time): `open`, `remove`, `rename`, `sync_dir` on the storage; `read_exact_at`,
//! `write_all_at`, `set_len`, `punch_hole`, `sync_data` on files (so fault plans inject
//! errors into punches and crash points fall before and after each one). `list`, `exists`,
//! `len`, `allocated_bytes`, `io_stats`, `path_of` and `name` touch no device and are not counted. An operation that fails by
//! argument check (bad name) is counted before the check.
//!
//! After the crash every call on the old storage and on its files returns an error
//! ([`is_simulated_crash`] recognizes it); [`FaultyStorage::reopen_after_crash`] gives a new
//! storage over the surviving state. Names starting with `.faulty-` are reserved (removed files
//! wait there until the next `sync_dir`). Files created in the inner storage behind this
//! wrapper's back are not seen.

mod file;
mod state;
mod storage;

pub use file::FaultyFile;
pub use state::{UNDO_BYTES_MAX, is_simulated_crash};
pub use storage::FaultyStorage;
