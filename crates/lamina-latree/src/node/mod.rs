//! The B+tree nodes of the LA-tree, their store and their cache (LA-tree sections 2.1, 3,
//! 4.1-4.3; byte layout in `docs/format/latree-node.md`).
//!
//! - [`layout`]: node and buffer ids, the fixed node size and the entry limits it must hold.
//! - [`leaf`], [`inner`]: decoded leaves and inner nodes and their operations (search,
//!   insert, delete, child bookkeeping).
//! - [`format`], [`page`]: the node header and checksum, and a node's encoding in one page.
//! - [`rebalance`]: splits of overfull nodes, borrow and merge of underfull ones (the
//!   quarter-full a-b tree rule of section 3, in bytes).
//! - [`verify`](mod@verify): every invariant of one node.
//! - [`table`], [`store`]: the file of node pages, written in place (SSD profiles, `host`)
//!   or out of place through the node table (raw NAND, section 4.3), and free node ids;
//!   [`snapshot`]: the store's state for a checkpoint; [`relocate`]: copying an out-of-place
//!   store's live nodes to the other partition (section 4.3's reclamation).
//! - [`cache`]: the LRU node cache with a byte budget and write-back (section 4.2).

pub mod cache;
pub mod format;
pub mod inner;
pub mod layout;
pub mod leaf;
pub mod page;
pub mod rebalance;
pub mod relocate;
pub mod snapshot;
pub mod store;
pub mod table;
pub mod verify;

#[cfg(test)]
mod page_tests;
#[cfg(test)]
mod rebalance_tests;
#[cfg(test)]
mod test_support;

pub use cache::{NodeCache, NodeCacheOptions, NodeCacheStats};
pub use format::NodeKind;
pub use inner::InnerNode;
pub use layout::{BufferId, NodeId, NodeLayout};
pub use leaf::{LeafEntry, LeafNode};
pub use page::{DecodedNode, Node, decode_node, encode_node};
pub use rebalance::{Rebalanced, Split, rebalance, split};
pub use snapshot::StoreSnapshot;
pub use store::{NodeStore, NodeStoreOptions, NodeStoreStats, Placement};
pub use table::NodeTable;
pub use verify::{NodeContext, verify_node};
