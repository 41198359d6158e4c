//! The group-commit logs: the coalesced cyclic log of the SIGMOD 2011 contest paper
//! (section 3) and a segmented log with truncation, sharing one group-commit writer.
//!
//! - [`RingLog`] (`ring_log.rs`, `ring/`, `ring_recovery.rs`): the ring, for engines whose
//!   state lives in memory (`trie`, `mem`); it collects its own garbage by asking the
//!   engine's [`LiveRecords`] oracle, and grows and shrinks with the live records.
//! - [`SegmentLog`] (`segment_log.rs`, `segments.rs`, `segment_recovery.rs`): segment files
//!   the engine truncates once their records are persisted elsewhere (`fdtree`).
//! - [`record`]: log records (sequence number, put / delete / batch).
//! - [`chunk`]: file header and 4 KiB-aligned, CRC32C-protected chunks.
//! - [`options`]: [`LogOptions`], [`RingLogOptions`], [`SegmentLogOptions`], [`LiveRecords`].
//! - `writer`, `flusher`, `shared`: the group-commit writer and its background flusher;
//!   `superseded`: what read-ahead collection must not carry while woken writers are still
//!   applying; `split_append`: batches larger than a write buffer, logged in parts;
//!   `recovery`: what opening both logs shares; `synced_mark`: how far a segment was synced,
//!   recorded a second time, so that damage to its newest chunk is not read as a torn tail.
//!
//! Byte layout: `docs/format/log.md`.

pub mod chunk;
mod flusher;
pub mod options;
pub mod record;
mod recovery;
mod ring;
mod ring_log;
mod ring_recovery;
mod segment_log;
mod segment_recovery;
mod segments;
mod shared;
mod split_append;
mod stats;
mod superseded;
pub mod synced_mark;
mod writer;

pub use options::{LiveRecords, LogOptions, RingLogOptions, SegmentLogOptions};
pub use record::{LogOp, Record, RecordOp, SeqNo, put_record_bytes};
pub use ring_log::RingLog;
pub use segment_log::SegmentLog;
pub use stats::LogStats;
pub use writer::QUEUED_BUFFERS_MAX;
