//! The group-commit log: the coalesced cyclic log of the SIGMOD 2011 contest paper
//! (section 3), shared by every engine that logs (issue 4).
//!
//! - [`record`]: log records (sequence number, put / delete / batch).
//! - [`chunk`]: file header and 4 KiB-aligned, CRC32C-protected chunks.
//! - [`options`]: [`LogOptions`], [`Retention`], and the [`LiveRecords`] oracle.
//! - `writer`, `flusher`: [`Log`], the group-commit writer, and its background flusher.
//! - `ring`, `segments`: cyclic and truncate retention; `superseded`: what read-ahead
//!   collection must not carry while woken writers are still applying.
//! - `recovery`: opening, checksum verification, torn-tail handling, replay.
//!
//! Byte layout: `docs/format/log.md`.

pub mod chunk;
mod flusher;
pub mod options;
pub mod record;
mod recovery;
mod ring;
mod segments;
mod stats;
mod superseded;
mod writer;

pub use options::{LiveRecords, LogOptions, Retention};
pub use record::{LogOp, Record, RecordOp, SeqNo};
pub use stats::LogStats;
pub use writer::Log;
