//! A load generator for memcached-protocol servers (`lamina bench --server HOST:PORT`):
//! `lamina serve` over any engine, or memcached itself, driven by the same client.
//!
//! N connections, each a blocking client thread, send classic text-protocol `set` and
//! `get` requests, `pipeline_depth` in flight at a time (1 by default, so a latency is one
//! request's round trip). Phases: `set` stores every record once (the records split
//! between the connections), `get` reads uniformly random records, `mixed` does both
//! (90% gets by default). Every get reply is checked against the record's key, flags and
//! value: a miss of a loaded record or a wrong value is counted and reported, never
//! hidden. A mixed phase's sets store the value the record already has, so gets stay
//! checkable whichever connection wrote last.
//!
//! - [`protocol`]: request encoding and incremental, bounded reply parsing.
//! - [`keys`]: the records: fixed-width keys, values and flags derived from the record.
//! - [`run_load`]: the phases; [`LoadReport`]: their JSON report and printed table.

mod config;
mod connection;
pub mod keys;
pub mod protocol;
mod report;
mod run;

pub use config::{
    CONNECTIONS_MAX, DEFAULT_CONNECTIONS, DEFAULT_KEY_BYTES, DEFAULT_KEY_COUNT,
    DEFAULT_MIXED_GET_PERCENT, DEFAULT_PIPELINE_DEPTH, DEFAULT_REPLY_TIMEOUT, DEFAULT_VALUE_BYTES,
    LoadConfig, PHASE_DURATION_MAX, PIPELINE_DEPTH_MAX, Phase,
};
pub use connection::Connection;
pub use keys::KeySpace;
pub use report::{
    LOAD_SCHEMA_NAME, LOAD_SCHEMA_VERSION, LoadParams, LoadReport, PhaseReport, ReplyErrors,
};
pub use run::{PhaseOutcome, run_load};
