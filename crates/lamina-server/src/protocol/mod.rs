//! The memcached text protocol: requests ([`Command`]) and their incremental parser.

mod classic;
mod command;
mod meta;
mod parse;
mod tokens;

pub use command::{ArithDirection, Command, ExpTime, Key, MetaFlag, MetaFlags, StoreMode};
pub use parse::{ParseLimits, Parsed, parse};

/// memcached's key limit (`KEY_MAX_LENGTH`): keys are 1 to 250 bytes.
pub const KEY_BYTES_MAX: usize = 250;
/// The longest `O` (opaque) token of a meta command, as memcached (32 bytes).
pub const OPAQUE_BYTES_MAX: usize = 32;
/// The most keys a `lscan` returns.
pub const SCAN_LIMIT_MAX: u32 = 10_000;
/// The most keys of one `get`/`gets`/`gat`/`gats` (a bound on one reply's work).
pub const GET_KEYS_MAX: usize = 1024;
/// The most tokens of one meta command (memcached's `MAX_TOKENS` is 24).
pub const META_TOKENS_MAX: usize = 24;
