//! The incremental request parser: bytes in, one [`Parsed`] out.
//!
//! TODO(helper): implement; see the contract on [`parse`].

use crate::protocol::Command;

/// Limits the parser enforces (each refusal names its limit in the reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// The longest command line, `\r\n` included. A buffer holding this many bytes with no
    /// `\n` is refused with `CLIENT_ERROR line too long` and the connection is closed (as
    /// memcached does: it cannot find where the next request starts).
    pub line_bytes_max: usize,
    /// The largest data block of a store command (`set`, `ms`...): the engine's value limit
    /// minus the item header. Larger blocks are answered `SERVER_ERROR object too large for
    /// cache` and their bytes are swallowed, and the connection stays open.
    pub item_bytes_max: usize,
}

/// The outcome of parsing the front of a connection's input buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// The buffer does not yet hold a whole request: read more and call again. Nothing is
    /// consumed.
    Incomplete,
    /// A request, which took the first `consumed` bytes (its line and data block).
    Request { command: Command, consumed: usize },
    /// Input refused: send `reply` (a whole line with its `\r\n`: `ERROR\r\n`,
    /// `CLIENT_ERROR ...\r\n` or `SERVER_ERROR ...\r\n`), drop the first `consumed` bytes,
    /// then discard the next `swallow_bytes` bytes as they arrive (the data block of a
    /// refused store command, `\r\n` included), and close the connection if `close`.
    /// `reply` is empty for a refused request that asked for no reply (`noreply`), where
    /// memcached sends nothing either.
    Refused { reply: String, consumed: usize, swallow_bytes: usize, close: bool },
}

/// Parses the request at the front of `input`.
///
/// Contract:
/// - Never panics, for any bytes and any split of them across calls.
/// - `Incomplete` consumes nothing; `Request`/`Refused` consume at least one byte, so a
///   caller looping on `parse` always makes progress.
/// - A command line ends at `\n` (a preceding `\r` is dropped), as memcached accepts both.
pub fn parse(input: &[u8], limits: &ParseLimits) -> Parsed {
    let _ = (input, limits);
    todo!("the helper implements the parser")
}
