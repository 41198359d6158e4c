//! Cyclic retention: the ring of the contest paper (section 3), overwritten in a circle with
//! on-the-fly garbage collection, made of segments so that it can grow with its live
//! records and shrink after deletes.
//!
//! - `layout`: segments and visits, where the next chunk goes, when to grow or shrink.
//! - `writer`: the ring file, writing chunks, growing and retiring segments.
//! - `collect`: read-ahead garbage collection (asks the engine's `LiveRecords`).

mod collect;
mod layout;
#[cfg(test)]
mod tests;
mod writer;

pub(crate) use layout::{Layout, SegmentSlot};
pub(crate) use writer::{Ring, RingParts, Span};
