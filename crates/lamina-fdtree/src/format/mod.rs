//! Everything an FD+tree writes, as bytes: entries, segments, blocks, Bloom filters and
//! level indexes, each with its encoder and checked decoder. Layouts are documented in
//! `docs/format/fdtree-block.md` and `docs/format/fdtree-index.md`.

pub mod block;
/// The Bloom filter, shared with other engines: it lives in `lamina_storage::bloom`.
pub use lamina_storage::bloom;
pub mod entry;
pub mod index;
pub(crate) mod sealed;
pub mod segment;
pub mod stats;
