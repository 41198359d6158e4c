//! The contract every lamina engine implements, and the tools to check it.
//!
//! - [`limits`]: the key and value size limits of the API (those of the SIGMOD 2011 contest).
//! - [`Error`]: the one error type of the public API, with structured variants.
//! - [`codec`]: the `Encode`/`Decode` traits that every on-disk structure implements.
//! - [`checksum`]: CRC32C, the checksum of every persistent structure.
//! - [`key_order`]: the bytewise key order, fast for short keys.
//! - [`OrderedIndex`]: the trait every engine implements, with its exact semantics.
//! - [`OpenIntent`]: whether a database must already exist when an engine opens it.
//! - `testkit` (feature `testkit`): the conformance kit every engine must pass.

#![forbid(unsafe_code)]

mod batch;
pub mod checksum;
pub mod codec;
mod durability;
mod error;
mod index;
pub mod key_order;
pub mod limits;
mod open;
mod range;
pub mod reverse;
mod stats;

#[cfg(feature = "testkit")]
pub mod testkit;

pub use batch::{BatchOp, WriteBatch};
pub use durability::Durability;
pub use error::{Error, InvalidArgument, Result};
pub use index::{CasOutcome, Entry, OrderedIndex};
pub use open::{DISK_BUDGET_OPTION, MEMORY_LIMIT_OPTION, OpenIntent};
pub use range::{IntoKeyRange, KeyRange};
pub use stats::{IoStats, Stats};
