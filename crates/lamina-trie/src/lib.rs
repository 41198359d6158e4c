//! `trie`: the generalized prefix tree of the SIGMOD 2011 programming contest's winning
//! solution (Kissinger et al., "A High-Throughput In-Memory Index, Durable on Flash-based
//! SSD"), as a lamina engine. See `README.md` for the map from the paper to the modules.
//!
//! - [`fragment`]: keys split into k'-bit fragments (section 2).
//! - `content`: content nodes, one allocation each (section 2).
//! - `arena`: inner nodes packed in big blocks, never freed one by one (section 2's memory
//!   manager, where it pays).
//! - `huge`: 2 MiB-aligned regions from the OS, advised as transparent huge pages.
//! - `slab`: content blocks in size classes, carved from 2 MiB huge-page chunks (section 2's
//!   memory manager).
//! - `pool`: the slab's per-thread free lists and spans (its fast path).
//! - `node`: inner nodes, tagged slot pointers, epoch reclamation (section 2); `retired`:
//!   the bytes of nodes awaiting it.
//! - `memory`: the memory limit (a cheap check per growing write, an exact one near it).
//! - `lock`: the 4-byte per-node spinlock (section 2).
//! - `tree`: lookups, single-lock writes with re-validation, dynamic expansion (section 2).
//! - `scan`: ordered iteration (the contest API's iterate).
//! - `gate`: atomic write batches without locking readers (lamina's addition).
//! - `any_trie`: one type over every k', and how a write commits (volatile, logged, replayed).
//! - [`TrieEngine`]: the `OrderedIndex` implementation, volatile or durable through the
//!   coalesced cyclic log of `lamina_storage::log` (section 3).

mod any_trie;
mod arena;
mod content;
mod counter;
mod engine;
pub mod fragment;
mod gate;
mod huge;
mod lock;
mod memory;
mod node;
mod options;
mod pool;
mod retired;
mod scan;
mod slab;
mod sync;
mod tree;

pub use engine::TrieEngine;
pub use options::{LOG_FILE_PREFIX, MEMORY_LIMIT_BYTES_MIN, TrieOptions};
