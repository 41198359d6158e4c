//! lamina's storage boundary (issue 3): everything an engine writes or reads goes through the
//! [`Storage`] trait, so the same engine runs over real files, memory, or a fault-injecting
//! wrapper that simulates crashes.
//!
//! - [`backend`]: the [`Storage`] / [`StorageFile`] traits and their shared semantics.
//! - [`memory`], [`file`](mod@file): the `memory` and `file` backends.
//! - [`overlay`]: a directory read in place with every change kept in memory (`lamina verify`).
//! - [`accounting`]: exact I/O counters ([`lamina_core::IoStats`]) kept by every backend.
//! - [`device`]: device profiles turning accesses into modeled time (LA-tree Tables 2 and 5).
//! - [`arena`]: the memtable arena of fdtree's and nbtree's in-memory levels.
//! - [`block`]: the checksummed block format (`docs/format/block.md`).
//! - [`bloom`]: the cache-line blocked Bloom filter of fdtree's levels and nbtree's d-trees.
//! - [`superblock`]: crash-atomic commit of an engine's root state (two alternating slots).
//! - [`freelist`]: allocate/free block numbers in a file, reuse after a durable commit.
//! - [`log`]: the group-commit log (coalesced cyclic log of the SIGMOD 2011 contest paper).
//! - [`faulty`], [`fault_plan`], [`crash_points`]: the fault-injecting backend, its seeded
//!   plan, and the crash-at-every-operation test loop.
//! - [`read_map`]: read-only maps of files, for readers that probe them in place.
//! - [`cache`]: the block cache (byte budget, scan-resistant CLOCK, pins, per-block latches).
//! - [`pmem`]: the persistent-memory region (mmap and simulated crash image), persistent
//!   pointers and the leak-free allocator of FPTree section 2.

// The file backend's positional I/O and the overlay use `std::os::unix`; Linux is where
// lamina is developed and tested, other Unix systems build with portable fallbacks
// (`file`'s module docs). There is no Windows port.
#[cfg(not(unix))]
compile_error!(
    "lamina supports Linux (and builds on other Unix systems such as macOS); it has no Windows \
     port: the file backend uses std::os::unix positional I/O (see README.md, \"Platforms\")"
);

pub mod accounting;
pub mod arena;
pub mod backend;
pub mod block;
pub mod bloom;
pub mod cache;
pub mod crash_points;
pub mod device;
pub mod fault_plan;
pub mod faulty;
pub mod file;
pub mod freelist;
pub mod hooked;
pub mod log;
pub mod memory;
pub mod overlay;
pub mod pause;
pub mod pmem;
pub mod prefetch;
pub mod read_map;
pub mod superblock;

pub use accounting::{AccountingOptions, BLOCK_BYTES_DEFAULT, IoAccounting};
pub use backend::{OpenMode, Storage, StorageFile};
pub use block::{Block, BlockType, read_block, write_block};
pub use crash_points::{CrashRuns, CrashTestFailure, for_each_crash_point};
pub use device::{AccessKind, DeviceProfile, NandEnergy};
pub use fault_plan::{FailKind, FaultPlan};
pub use faulty::{FaultyFile, FaultyStorage, is_simulated_crash};
pub use file::{DiskFile, FileOptions, FileStorage};
pub use freelist::FreeList;
pub use hooked::{FileOp, Hook, HookedStorage};
pub use memory::{MemoryFile, MemoryStorage};
pub use overlay::{OverlayFile, OverlayStorage};
pub use read_map::ReadMap;
pub use superblock::{Committed, SlotState, Superblock};
