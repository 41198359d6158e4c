//! What every peer wrapper shares: the checked, closable front ([`Peer`]), per-key locks for
//! peers without transactions, the background syncer of `Durability::Buffered`, error
//! mapping, and opaque C handle types.

mod backend;
mod error;
mod key_locks;
mod opaque;
mod peer;
mod proc_io;
mod syncer;

pub(crate) use backend::Backend;
pub(crate) use error::{c_message, library_error, shim_message};
pub(crate) use key_locks::KeyLocks;
pub(crate) use opaque::opaque;
pub(crate) use peer::Peer;
