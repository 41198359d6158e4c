//! The conformance kit: a generic suite every engine runs with one macro call.
//!
//! ```ignore
//! // in an engine's tests/conformance.rs
//! lamina_core::conformance_tests!(my_engine::testing::Subject::new());
//! ```
//!
//! Each case is its own `#[test]`, so a failure names the case. Cases check the API contract
//! of [`crate::OrderedIndex`] against an in-memory oracle (a `BTreeMap`): basic operations and
//! edge-case keys (the empty key among them), refused input that must change nothing, ordered scans, compare-and-swap
//! (including the SIGMOD 2011 contest's concurrent increment test), atomic batches,
//! model-based random sequences (with close/reopen and crash steps where the subject
//! supports them), and concurrent readers, writers and scans.

mod basic;
mod batch;
mod cas;
mod concurrency;
mod durable;
mod empty_key;
mod limits;
mod macros;
mod model;
pub mod mutation;
mod scan;
mod subject;

pub use basic::*;
pub use batch::*;
pub use cas::*;
pub use concurrency::*;
pub use durable::*;
pub use empty_key::*;
pub use limits::*;
pub use model::*;
pub use scan::*;
pub use subject::{Subject, dump, fill_oracle, key, value};
