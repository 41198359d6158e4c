//! The DRAM inner nodes (FPTree sections 4.1 and 4.4): a B+tree over separator keys whose
//! entries name leaves. The leaves themselves live in persistent memory and are not this
//! module's business: a leaf is an opaque [`LeafId`] here.
//!
//! - [`InnerIndex`]: the contract the leaf layer programs against.
//! - [`OlcInner`]: the B+tree under optimistic lock coupling (invariants and the mapping of
//!   the paper's algorithms in `olc.rs`).
//! - [`ReferenceInner`]: a `BTreeMap` under one reader-writer lock, the model the optimistic
//!   implementation is tested against.

mod contract;
mod node;
mod olc;
mod olc_insert;
mod olc_remove;
mod olc_verify;
mod reference;
mod version;

pub use contract::{InnerIndex, LeafId, Visit};
pub use olc::{
    FANOUT_MAX_DEFAULT, FANOUT_MIN, HEIGHT_MAX, KEY_BYTES_MAX, OlcInner, OlcInnerOn, Restarts,
};
pub use reference::ReferenceInner;
pub use version::VersionWord;
