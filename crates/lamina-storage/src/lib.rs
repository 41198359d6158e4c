//! Storage layer of lamina.

pub mod cache;
pub mod pmem;
