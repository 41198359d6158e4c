//! What every peer wrapper shares: the checked, closable front ([`Peer`]), per-key locks for
//! peers without transactions, the background syncer of `Durability::Buffered`, and error
//! mapping.

mod backend;
mod error;
mod key_locks;
mod peer;
mod syncer;

pub(crate) use backend::Backend;
pub(crate) use error::{c_message, library_error};
pub(crate) use key_locks::KeyLocks;
pub(crate) use peer::Peer;
