//! `lamina-torture`: kill -9 from outside the process, for every engine (issue 20).
//!
//! A child process (`child.rs`) writes through `lamina::Db` with `Durability::Sync` from 8
//! threads (puts, deletes, compare-and-swaps, batches; values of 0 to 4096 bytes with a
//! checkable pattern, `value.rs`) while a scanner checks what it reads, and prints a ledger of
//! every operation begun and acknowledged (`ledger.rs`). The parent (`parent.rs`) kills it
//! with SIGKILL at a random moment, verifies the crash image read-only, reopens the store and
//! checks every key and a full scan against the ledger; then the next cycle.
//!
//! `cargo run --release -p lamina-torture -- --engine fdtree --cycles 100` (or
//! `scripts/torture ENGINE CYCLES`) runs the long version; `tests/every_engine.rs` a short
//! one for every engine in CI.
//!
//! The same machinery damages stores: `tests/crash_image_damage_sweep.rs` damages every file
//! of a crash image (`parent::crash_image`, `damage.rs`) and checks the result against the
//! ledger; `tests/recovery_never_panics.rs` mutates files of a store made by a deterministic
//! script with known prefix states (`scripted.rs`, `lamina-torture scripted`) in property
//! tests.

// Unsafe code: three libc calls (statvfs, lseek for sparse copies, kill of the process
// itself), each with its SAFETY comment; nothing else.

pub mod child;
pub mod damage;
pub mod ledger;
pub mod parent;
pub mod scripted;
pub mod settings;
pub mod value;
