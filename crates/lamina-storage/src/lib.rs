//! lamina's storage boundary (issue 3): everything an engine writes or reads goes through the
//! [`Storage`] trait, so the same engine runs over real files, memory, or a fault-injecting
//! wrapper that simulates crashes.
//!
//! - [`backend`]: the [`Storage`] / [`StorageFile`] traits and their shared semantics.
//! - [`memory`], [`file`]: the `memory` and `file` backends.
//! - [`accounting`]: exact I/O counters ([`lamina_core::IoStats`]) kept by every backend.
//! - [`device`]: device profiles turning accesses into modeled time (LA-tree Tables 2 and 5).

pub mod accounting;
pub mod backend;
pub mod device;
pub mod file;
pub mod log;
pub mod memory;

pub use accounting::{AccountingOptions, BLOCK_BYTES_DEFAULT, IoAccounting};
pub use backend::{OpenMode, Storage, StorageFile};
pub use device::{AccessKind, DeviceProfile};
pub use file::{DiskFile, FileOptions, FileStorage};
pub use memory::{MemoryFile, MemoryStorage};
