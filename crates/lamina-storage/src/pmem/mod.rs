//! Persistent-memory region.
