//! Persistent-memory tests.

mod alloc;
mod crash_points;
mod format;
mod mmap;
mod simulated;
