//! The DRAM inner nodes (FPTree sections 4.1 and 4.4): a B+tree over separator keys whose
//! entries name leaves. The leaves themselves live in persistent memory and are not this
//! module's business: a leaf is an opaque [`LeafId`] here.
//!
//! - [`InnerIndex`]: the contract the leaf layer programs against.
//! - [`ReferenceInner`]: a `BTreeMap` under one reader-writer lock, the model the optimistic
//!   implementation is tested against (and what the leaf layer uses until it lands).

mod contract;
mod reference;

pub use contract::{InnerIndex, LeafId, Visit};
pub use reference::ReferenceInner;
